"""Capture of builtins and containers: len, range, enumerate, zip,
isinstance, getattr, hasattr, min, max, abs, sum, round, list/tuple/dict
constructors and methods, unpacking (starred too), slicing of lists and
tuples, membership tests, string formatting, and containers passed in and
returned."""
import math

import pytest

from capture_util import fresh_caches  # noqa: F401  (autouse: empty caches per test)
from capture_util import (check_case, close, counting_backend, registry, requires_capture, tensor,
                          x1)

import ignis

pytestmark = requires_capture
CASES, case = registry()


def list_in(T):
    return ([tensor(T, 3, seed=i) for i in range(3)],)


def dict_in(T):
    return ({"a": tensor(T, 3, seed=0), "b": tensor(T, 3, seed=1)},)


def tuple_in(T):
    return ((tensor(T, 3, seed=0), 2.0, "mul"),)


# --- builtins on Python values and tensors --------------------------------------------------------
@case(inputs=list_in)
def case_len_of_list_arg(T):
    def f(xs):
        return xs[0] * len(xs)
    return f


@case(inputs=x1)
def case_len_of_tensor(T):
    def f(x):
        return x + len(x)
    return f


@case()
def case_isinstance_checks(T):
    def f(x, y):
        a = 1 if isinstance(x, T.Tensor) else 0
        b = 1 if isinstance(3, (int, float)) else 0
        c = 1 if isinstance(y, list) else 0
        return x + a + b + c
    return f


@case()
def case_getattr_hasattr(T):
    def f(x, y):
        fn = getattr(T, "sin")
        if hasattr(x, "shape") and not hasattr(x, "no_such_attribute"):
            return fn(x)
        return x
    return f


@case()
def case_getattr_default(T):
    def f(x, y):
        k = getattr(x, "no_such_attribute", 3)
        return x * k
    return f


@case()
def case_min_max_of_ints(T):
    def f(x, y):
        return x * max(2, 5, 3) + min(4, 1)
    return f


@case()
def case_min_max_of_list(T):
    def f(x, y):
        vals = [3, 1, 2]
        return x * max(vals) - min(vals)
    return f


@case()
def case_abs_of_python_and_tensor(T):
    def f(x, y):
        return abs(x) * abs(-3)
    return f


@case(inputs=list_in)
def case_sum_over_list_of_tensors(T):
    def f(xs):
        return sum(xs)
    return f


@case()
def case_sum_of_ints_with_start(T):
    def f(x, y):
        return x + sum([1, 2, 3], 10)
    return f


@case()
def case_round_int_float_bool(T):
    def f(x, y):
        return x * round(2.7) + int(3.9) + float(2) + bool(1)
    return f


@case()
def case_math_module_constants(T):
    def f(x, y):
        return x * math.sqrt(4.0) + math.pi + math.floor(2.5)
    return f


@case()
def case_range_len_and_index(T):
    def f(x, y):
        r = range(2, 10, 2)
        return x * len(r) + r[1]
    return f


@case()
def case_enumerate_with_start(T):
    def f(x, y):
        out = x
        for i, t in enumerate((x, y), start=1):
            out = out + t * i
        return out
    return f


@case()
def case_zip_three(T):
    def f(x, y):
        out = []
        for a, b, c in zip([x, y], [1, 2], ["p", "q"]):
            out.append(a * b if c == "p" else a - b)
        return out
    return f


@case()
def case_all_any(T):
    def f(x, y):
        if all([True, 1, 3 > 2]) and not any([False, 0]):
            return x + y
        return x - y
    return f


@case()
def case_sorted_reversed_python_lists(T):
    def f(x, y):
        vals = sorted([3, 1, 2])
        rev = list(reversed(vals))
        return x * vals[0] + rev[0]
    return f


@case()
def case_str_formatting(T):
    def f(x, y):
        key = f"layer_{2}"
        d = {"layer_2": 5}
        return x * d[key] + len("abc".upper())
    return f


@case()
def case_type_checks(T):
    def f(x, y):
        if type(3) is int and type(x) is T.Tensor:
            return x + 1
        return x
    return f


@case()
def case_divmod_and_pow_builtins(T):
    def f(x, y):
        q, r = divmod(17, 5)
        return x * q + pow(2, r)
    return f


# --- lists ----------------------------------------------------------------------------------------
@case()
def case_list_build_and_index(T):
    def f(x, y):
        xs = [x, y, x + y]
        return xs[-1] * xs[0]
    return f


@case()
def case_list_methods(T):
    def f(x, y):
        xs = [x]
        xs.append(y)
        xs.extend([x * 2, y * 2])
        xs.insert(0, x - y)
        last = xs.pop()
        xs.reverse()
        return xs, last
    return f


@case()
def case_list_slicing(T):
    def f(x, y):
        xs = [x, y, x * y, x - y]
        return xs[1:3], xs[::2], xs[::-1]
    return f


@case()
def case_list_concat_and_repeat(T):
    def f(x, y):
        xs = [x] + [y] * 2
        return T.stack(xs)
    return f


@case()
def case_list_constructor_from_tuple(T):
    def f(x, y):
        xs = list((x, y))
        xs[1] = xs[1] * 3
        return xs
    return f


@case()
def case_list_membership(T):
    def f(x, y):
        names = ["a", "b"]
        return x + (1 if "a" in names else 0) + (1 if "c" not in names else 0)
    return f


@case(inputs=list_in)
def case_list_argument_unpack(T):
    def f(xs):
        a, b, c = xs
        return a * b - c
    return f


@case(inputs=list_in)
def case_list_argument_mutated(T):
    def f(xs):
        xs.append(xs[0] * 2)
        return len(xs), xs[-1]
    return f


@case()
def case_list_index_and_count(T):
    def f(x, y):
        vals = [1, 2, 2, 3]
        return x * vals.index(3) + vals.count(2)
    return f


# --- tuples ---------------------------------------------------------------------------------------
@case(inputs=tuple_in)
def case_tuple_argument(T):
    def f(t):
        x, k, op = t
        return x * k if op == "mul" else x + k
    return f


@case()
def case_tuple_return_nested(T):
    def f(x, y):
        return (x, (y, x + y)), [x * 2]
    return f


@case()
def case_tuple_constructor_and_slice(T):
    def f(x, y):
        t = tuple([x, y, x * y])
        return t[1:], t[0]
    return f


@case()
def case_starred_unpacking(T):
    def f(x, y):
        first, *rest = [x, y, x + y, x - y]
        return first, T.stack(rest)
    return f


@case()
def case_swap_unpacking(T):
    def f(x, y):
        x, y = y, x
        return x - y
    return f


@case()
def case_star_args_call(T):
    def f(x, y):
        args = (x, y)
        return T.add(*args)
    return f


@case()
def case_tensor_size_tuple_ops(T):
    def f(x, y):
        shape = tuple(x.shape) + (1,)
        return x.reshape(shape), len(shape)
    return f


# --- dicts ----------------------------------------------------------------------------------------
@case(inputs=dict_in)
def case_dict_argument(T):
    def f(d):
        return d["a"] + d["b"]
    return f


@case(inputs=dict_in)
def case_dict_get_and_in(T):
    def f(d):
        c = d.get("c", None)
        out = d["a"] if c is None else c
        return out * (2 if "b" in d else 3)
    return f


@case()
def case_dict_build_update_pop(T):
    def f(x, y):
        d = {"x": x}
        d["y"] = y
        d.update({"z": x * y})
        z = d.pop("z")
        return d, z
    return f


@case()
def case_dict_constructor_kwargs(T):
    def f(x, y):
        d = dict(a=x, b=y)
        return d["a"] * d["b"], len(d)
    return f


@case()
def case_dict_items_sorted_keys(T):
    def f(x, y):
        d = {"b": y, "a": x}
        return [d[k] for k in sorted(d.keys())]
    return f


@case()
def case_dict_setdefault_and_copy(T):
    def f(x, y):
        d = {}
        d.setdefault("a", x)
        e = dict(d)
        e["b"] = y
        return list(e.values())
    return f


@case()
def case_kwargs_dict_splat(T):
    def f(x, y):
        kw = {"dim": 0}
        return T.cat([x, y], **kw)
    return f


@case(inputs=dict_in)
def case_dict_argument_mutated(T):
    def f(d):
        d["c"] = d["a"] * 2
        return len(d)
    return f


# --- sets and misc --------------------------------------------------------------------------------
@case()
def case_set_of_constants(T):
    def f(x, y):
        s = {1, 2, 3}
        s.add(4)
        return x * len(s) + (1 if 2 in s else 0)
    return f


@case()
def case_slice_objects(T):
    def f(x, y):
        s = slice(1, 3)
        return x[s], y[slice(None, None, 2)]
    return f


@case()
def case_none_return_and_constants(T):
    def f(x, y):
        return None, 3, "s", x + y
    return f


# Dynamo's counts (torch 2.13, a counting backend, dynamic=False): (graphs, graph breaks).
EXPECTED = {
    "len_of_list_arg": (1, 0),
    "len_of_tensor": (1, 0),
    "isinstance_checks": (1, 0),
    "getattr_hasattr": (1, 0),
    "getattr_default": (1, 0),
    "min_max_of_ints": (1, 0),
    "min_max_of_list": (1, 0),
    "abs_of_python_and_tensor": (1, 0),
    "sum_over_list_of_tensors": (1, 0),
    "sum_of_ints_with_start": (1, 0),
    "round_int_float_bool": (1, 0),
    "math_module_constants": (1, 0),
    "range_len_and_index": (1, 0),
    "enumerate_with_start": (1, 0),
    "zip_three": (1, 0),
    "all_any": (1, 0),
    "sorted_reversed_python_lists": (1, 0),
    "str_formatting": (1, 0),
    "type_checks": (1, 0),
    "divmod_and_pow_builtins": (1, 0),
    "list_build_and_index": (1, 0),
    "list_methods": (1, 0),
    "list_slicing": (1, 0),
    "list_concat_and_repeat": (1, 0),
    "list_constructor_from_tuple": (1, 0),
    "list_membership": (1, 0),
    "list_argument_unpack": (1, 0),
    "list_argument_mutated": (1, 0),
    "list_index_and_count": (1, 0),
    "tuple_argument": (1, 0),
    "tuple_return_nested": (1, 0),
    "tuple_constructor_and_slice": (1, 0),
    "starred_unpacking": (1, 0),
    "swap_unpacking": (1, 0),
    "star_args_call": (1, 0),
    "tensor_size_tuple_ops": (1, 0),
    "dict_argument": (1, 0),
    "dict_get_and_in": (1, 0),
    "dict_build_update_pop": (1, 0),
    "dict_constructor_kwargs": (1, 0),
    "dict_items_sorted_keys": (0, 0),
    "dict_setdefault_and_copy": (0, 0),
    "kwargs_dict_splat": (1, 0),
    "dict_argument_mutated": (1, 0),
    "set_of_constants": (1, 0),
    "slice_objects": (1, 0),
    "none_return_and_constants": (1, 0),
}


@pytest.mark.parametrize("c", CASES, ids=repr)
def test_case(c):
    check_case(c, EXPECTED)


def test_objects_made_inside_keep_their_identity():
    # A list, dict or object made by the compiled function and returned in
    # several places is one object, as in eager Python.
    class Box:
        def __init__(self, t):
            self.t = t

    def f(x):
        a = [x * 2]
        b = Box(x + 1)
        d = {"b": b, "a": a}
        return a, a, b, d

    got = ignis.compile(f)(tensor(ignis, 4))
    assert got[0] is got[1] and got[3]["a"] is got[0] and got[3]["b"] is got[2]
    assert type(got[2]) is Box and close(got[2].t, tensor(ignis, 4) + 1)
    ignis.compiler.reset()


def test_returning_an_object_made_inside():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    def f(x, y):
        return Pair(x + y, x - y)

    graphs = []
    x, y = tensor(ignis, 4), tensor(ignis, 4, seed=1)
    p = ignis.compile(f, backend=counting_backend(graphs))(x, y)
    assert isinstance(p, Pair) and close(p.a, x + y) and close(p.b, x - y)
    assert len(graphs) == 1
    ignis.compiler.reset()

"""Factories (empty, zeros, ones, full, arange, linspace, eye, the random
ones, *_like) and the Python-level constructors (ignis.tensor, from_numpy).
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ignis
from conftest import (
    DTYPES, FLOAT_DTYPES, assert_same, compare_call, ig_dtype, make_pair, requires_torch,
    th_dtype, to_np, torch,
)

SIZES = [(), (0,), (3,), (2, 3), (2, 0, 4), (1, 1, 5)]


def _size_forms(size):
    """The ways to pass a size: varargs (when not empty), one tuple, one list."""
    forms = [lambda lib, **kw: lib(tuple(size), **kw), lambda lib, **kw: lib(list(size), **kw)]
    if size:
        forms.append(lambda lib, **kw: lib(*size, **kw))
    return forms


@requires_torch
@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("dtype", [None] + DTYPES)
def test_sized_factories(name, dtype):
    for size in SIZES:
        for form in _size_forms(size):
            kw = {} if dtype is None else {"dtype": ig_dtype(dtype)}
            kwt = {} if dtype is None else {"dtype": th_dtype(dtype)}
            out = form(getattr(ignis, name), **kw)
            ref = form(getattr(torch, name), **kwt)
            assert tuple(out.shape) == tuple(ref.shape)
            assert out.stride() == ref.stride()
            assert str(out.dtype).split(".")[1] == str(ref.dtype).split(".")[1]
            assert out.is_contiguous()
            if name != "empty":
                assert_same(out, ref)


@requires_torch
def test_sized_factory_errors():
    for name in ["zeros", "ones", "empty", "rand", "randn"]:
        for bad in [(-1,), (2, -3)]:
            compare_call(lambda: getattr(ignis, name)(*bad), lambda: getattr(torch, name)(*bad))
        with pytest.raises(TypeError):
            getattr(ignis, name)(2.5)
        with pytest.raises(TypeError):
            getattr(ignis, name)("3")
        with pytest.raises(RuntimeError):
            getattr(ignis, name)(2 ** 40, 2 ** 40)  # numel overflows int64


@requires_torch
@pytest.mark.parametrize("value", [0, 1, -7, 2.5, -0.0, True, False, math.inf, math.nan, 1e300])
@pytest.mark.parametrize("dtype", [None] + DTYPES)
def test_full(value, dtype):
    kw = {} if dtype is None else {"dtype": ig_dtype(dtype)}
    kwt = {} if dtype is None else {"dtype": th_dtype(dtype)}
    compare_call(lambda: ignis.full((2, 3), value, **kw), lambda: torch.full((2, 3), value, **kwt),
                 msg=f"full({value!r}, {dtype})")
    x, xt = make_pair((3, 2), dtype or "float32", "transposed")
    compare_call(lambda: ignis.full_like(x, value, **kw), lambda: torch.full_like(xt, value, **kwt),
                 check_strides=True, msg=f"full_like({value!r}, {dtype})")


@requires_torch
@pytest.mark.parametrize("value", [127, 128, -129, 255, 256, -255, -256, 65504, 70000, 1e39])
@pytest.mark.parametrize("dtype", DTYPES)
def test_full_overflow(value, dtype):
    """A fill value outside the dtype's range is an error, as in PyTorch."""
    compare_call(lambda: ignis.full((2,), value, dtype=ig_dtype(dtype)),
                 lambda: torch.full((2,), value, dtype=th_dtype(dtype)), msg=f"{value} {dtype}")
    x = ignis.zeros(2, dtype=ig_dtype(dtype))
    xt = torch.zeros(2, dtype=th_dtype(dtype))
    compare_call(lambda: x.fill_(value), lambda: xt.fill_(value), msg=f"fill_ {value} {dtype}")


ARANGE_ARGS = [(5,), (0,), (2.5,), (1, 4), (-3, 3, 2), (0, 1, 0.1), (1, 0, -0.25), (0.5, 5, 1.5),
               (-1.5, 3.7, 0.9), (0, 5.5), (10, 0, -3), (0, 5, 0.5), (3, 3), (0, -1e-9, -1e-10)]


@requires_torch
@pytest.mark.parametrize("args", ARANGE_ARGS, ids=str)
@pytest.mark.parametrize("dtype", [None] + DTYPES)
def test_arange(args, dtype):
    if (dtype == "int64" and len(args) == 3 and 0 < abs(args[2]) < 1
            and tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 13)):
        # torch < 2.13 divides by the truncated step and dies of SIGFPE here;
        # 2.13 raises "step must be nonzero", as ignis does.
        with pytest.raises(ValueError, match="step must be nonzero"):
            ignis.arange(*args, dtype=ignis.int64)
        return
    kw = {} if dtype is None else {"dtype": ig_dtype(dtype)}
    kwt = {} if dtype is None else {"dtype": th_dtype(dtype)}
    compare_call(lambda: ignis.arange(*args, **kw), lambda: torch.arange(*args, **kwt),
                 msg=f"arange{args} {dtype}")


@requires_torch
def test_arange_errors_and_keywords():
    for args in [(0, 5, 0), (5, 0, 1), (0, -3), (0, math.inf), (math.nan,)]:
        compare_call(lambda: ignis.arange(*args), lambda: torch.arange(*args), msg=str(args))
    compare_call(lambda: ignis.arange(start=1, end=7, step=2),
                 lambda: torch.arange(start=1, end=7, step=2))
    compare_call(lambda: ignis.arange(6, dtype=ignis.float64),
                 lambda: torch.arange(6, dtype=torch.float64))


LINSPACE_ARGS = [(0, 1, 5), (-3, 7, 6), (0, 1, 1), (0, 1, 0), (1, 0, 7), (0.5, 9.7, 5),
                 (-2.5, 5, 4), (2, 2, 3), (0, 1e-3, 11), (-1e4, 1e4, 9)]


@requires_torch
@pytest.mark.parametrize("args", LINSPACE_ARGS, ids=str)
@pytest.mark.parametrize("dtype", [None] + DTYPES)
def test_linspace(args, dtype):
    kw = {} if dtype is None else {"dtype": ig_dtype(dtype)}
    kwt = {} if dtype is None else {"dtype": th_dtype(dtype)}
    compare_call(lambda: ignis.linspace(*args, **kw), lambda: torch.linspace(*args, **kwt),
                 msg=f"linspace{args} {dtype}")
    out = ignis.linspace(*args) if dtype is None else None
    if out is not None:
        np.testing.assert_allclose(to_np(out), np.linspace(*args, dtype=np.float32), rtol=1e-6,
                                   atol=1e-6)


@requires_torch
def test_linspace_errors():
    compare_call(lambda: ignis.linspace(0, 1, -1), lambda: torch.linspace(0, 1, -1))
    with pytest.raises(TypeError):
        ignis.linspace(0, 1, 2.5)


@requires_torch
@pytest.mark.parametrize("dtype", [None] + DTYPES)
def test_eye(dtype):
    kw = {} if dtype is None else {"dtype": ig_dtype(dtype)}
    kwt = {} if dtype is None else {"dtype": th_dtype(dtype)}
    for args in [(0,), (1,), (3,), (2, 4), (4, 2), (3, 0), (0, 3)]:
        compare_call(lambda: ignis.eye(*args, **kw), lambda: torch.eye(*args, **kwt),
                     msg=f"eye{args}")
    for args in [(-1,), (2, -1)]:
        compare_call(lambda: ignis.eye(*args, **kw), lambda: torch.eye(*args, **kwt))


# --------------------------------------------------------------------------------
# *_like
# --------------------------------------------------------------------------------
LIKE_LAYOUTS = ["contiguous", "transposed", "strided", "expanded"]


def _same_metadata(ig_fn, th_fn, msg):
    """Same dtype, shape and strides, or the same exception type (for results
    whose values are random or uninitialised)."""
    from conftest import assert_same_error, run
    ig, e = run(ig_fn)
    th, et = run(th_fn)
    if et is not None:
        assert_same_error(e, et, msg)
        return
    assert e is None, f"{msg}: {e!r}"
    assert str(ig.dtype).split(".")[1] == str(th.dtype).split(".")[1], msg
    assert tuple(ig.shape) == tuple(th.shape) and ig.stride() == th.stride(), msg


@requires_torch
@pytest.mark.parametrize("layout", LIKE_LAYOUTS)
@pytest.mark.parametrize("name", ["empty_like", "zeros_like", "ones_like", "rand_like",
                                  "randn_like"])
def test_like_factories(name, layout):
    for dtype in DTYPES:
        x, xt = make_pair((2, 3, 4), dtype, layout)
        for out_dtype in [None, "float64", "int32"]:
            kw = {} if out_dtype is None else {"dtype": ig_dtype(out_dtype)}
            kwt = {} if out_dtype is None else {"dtype": th_dtype(out_dtype)}
            msg = f"{name}({dtype} {layout}, {out_dtype})"
            ig_fn = lambda: getattr(ignis, name)(x, **kw)  # noqa: E731
            th_fn = lambda: getattr(torch, name)(xt, **kwt)  # noqa: E731
            if name in ("zeros_like", "ones_like"):
                compare_call(ig_fn, th_fn, check_strides=True, msg=msg)
            else:
                _same_metadata(ig_fn, th_fn, msg)


@requires_torch
def test_randint_like():
    x, xt = make_pair((3, 4), "int16", "transposed")
    out = ignis.randint_like(x, 10)
    assert out.dtype is ignis.int16 and out.stride() == torch.randint_like(xt, 10).stride()
    vals = to_np(out)
    assert vals.min() >= 0 and vals.max() < 10
    out = ignis.randint_like(x, -5, 5, dtype=ignis.float32)
    assert out.dtype is ignis.float32
    assert to_np(out).min() >= -5 and to_np(out).max() < 5
    compare_call(lambda: ignis.randint_like(ignis.zeros(2, dtype=ignis.int8), 1000),
                 lambda: torch.randint_like(torch.zeros(2, dtype=torch.int8), 1000))


# --------------------------------------------------------------------------------
# Random numbers
# --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rand_range_and_moments(dtype):
    ignis.manual_seed(0)
    a = to_np(ignis.rand(20000, dtype=ig_dtype(dtype))).astype(np.float64)
    assert a.min() >= 0 and a.max() < 1, "rand must be in [0, 1)"
    assert abs(a.mean() - 0.5) < 0.02 and abs(a.std() - math.sqrt(1 / 12)) < 0.02
    b = to_np(ignis.randn(20000, dtype=ig_dtype(dtype))).astype(np.float64)
    assert abs(b.mean()) < 0.05 and abs(b.std() - 1) < 0.05
    assert np.isfinite(b).all()


def test_uniform_and_normal_inplace():
    ignis.manual_seed(1)
    x = ignis.empty(5000)
    v = x._version
    assert x.uniform_(-2, 3) is x and x._version > v
    a = to_np(x)
    assert a.min() >= -2 and a.max() < 3 and abs(a.mean() - 0.5) < 0.1
    assert x.normal_(10, 0.5) is x
    a = to_np(x)
    assert abs(a.mean() - 10) < 0.05 and abs(a.std() - 0.5) < 0.05
    assert x.normal_(3, 0) is x and (to_np(x) == 3).all()
    y = ignis.empty(4000, dtype=ignis.int64)
    assert y.bernoulli_(0.25) is y
    assert set(np.unique(to_np(y))) <= {0, 1} and abs(to_np(y).mean() - 0.25) < 0.05
    assert y.random_(3, 9) is y and to_np(y).min() >= 3 and to_np(y).max() < 9


@requires_torch
def test_random_errors():
    calls = [
        lambda lib: lib.rand(3, dtype=lib.int64), lambda lib: lib.randn(2, dtype=lib.bool),
        lambda lib: lib.rand_like(lib.zeros(3, dtype=lib.int32)),
        lambda lib: lib.zeros(2).uniform_(1, 0), lambda lib: lib.zeros(2).normal_(0, -1),
        lambda lib: lib.zeros(2, dtype=lib.int64).uniform_(),
        lambda lib: lib.zeros(2, dtype=lib.int64).normal_(),
        lambda lib: lib.zeros(2).bernoulli_(1.5), lambda lib: lib.zeros(2).random_(5, 0),
        lambda lib: lib.randint(5, 5, (3,)), lambda lib: lib.randint(0, 1000, (3,), dtype=lib.int8),
        lambda lib: lib.randint(-1, 2, (2,), dtype=lib.uint8),
        lambda lib: lib.randint(3, (2,), dtype=lib.bool),
    ]
    for i, f in enumerate(calls):
        compare_call(lambda: f(ignis), lambda: f(torch), rtol=math.inf, atol=math.inf,
                     msg=f"call {i}")


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8", "bool", "float32", "float16"])
def test_randint(dtype):
    ignis.manual_seed(2)
    hi = 2 if dtype == "bool" else 7
    out = ignis.randint(0, hi, (4000,), dtype=ig_dtype(dtype))
    assert out.dtype is ig_dtype(dtype)
    vals = to_np(out).astype(np.int64)
    assert set(np.unique(vals)) == set(range(hi))
    out = ignis.randint(hi, (3, 5))
    assert out.dtype is ignis.int64 and tuple(out.shape) == (3, 5)
    big = to_np(ignis.randint(-2 ** 62, 2 ** 62, (1000,)))
    assert big.min() < -2 ** 60 and big.max() > 2 ** 60


def _draw_all():
    return [to_np(f()) for f in (lambda: ignis.rand(70000), lambda: ignis.randn(300, 300),
                                 lambda: ignis.randint(0, 100, (50000,)),
                                 lambda: ignis.rand(5, dtype=ignis.float64),
                                 lambda: ignis.empty(200, 200).t().uniform_(),
                                 lambda: ignis.rand_like(ignis.empty(300, 200).t()),
                                 lambda: ignis.empty(40000).bernoulli_(0.3))]


def test_manual_seed_determinism_across_thread_counts():
    """The same seed gives the same numbers with 1 or 2 threads (large draws
    take the parallel path), and a different seed gives different ones."""
    old = ignis.get_num_threads()
    try:
        ignis.set_num_threads(1)
        ignis.manual_seed(42)
        one = _draw_all()
        ignis.set_num_threads(2)
        ignis.manual_seed(42)
        two = _draw_all()
        ignis.manual_seed(43)
        other = _draw_all()
    finally:
        ignis.set_num_threads(old)
    for a, b, c in zip(one, two, other):
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)
    assert ignis.initial_seed() == 43


def test_rng_state_roundtrip_and_sequence():
    ignis.manual_seed(7)
    a1 = to_np(ignis.rand(10))
    a2 = to_np(ignis.rand(10))
    assert not np.array_equal(a1, a2)
    ignis.manual_seed(7)
    state = ignis.get_rng_state()
    np.testing.assert_array_equal(to_np(ignis.rand(10)), a1)
    ignis.set_rng_state(state)
    np.testing.assert_array_equal(to_np(ignis.rand(10)), a1)
    np.testing.assert_array_equal(to_np(ignis.rand(10)), a2)


def test_set_num_threads_rejects_nonpositive():
    with pytest.raises(ValueError):
        ignis.set_num_threads(0)


def test_meta_factories():
    for f in [lambda d: ignis.zeros(2, 3, device=d), lambda d: ignis.full((4,), 2, device=d),
              lambda d: ignis.arange(1, 9, 2, device=d), lambda d: ignis.eye(3, 2, device=d),
              lambda d: ignis.linspace(0, 1, 5, device=d, dtype=ignis.float64),
              lambda d: ignis.rand(3, 1, device=d), lambda d: ignis.randint(0, 5, (2, 2), device=d),
              lambda d: ignis.empty_strided((2, 3), (1, 2), device=d)]:
        cpu, meta = f("cpu"), f("meta")
        assert meta.device.type == "meta"
        assert tuple(meta.shape) == tuple(cpu.shape) and meta.dtype is cpu.dtype
        assert meta.stride() == cpu.stride()


@requires_torch
def test_empty_strided():
    for size, stride in [((2, 3), (3, 1)), ((2, 3), (1, 2)), ((2, 3), (0, 1)), ((0, 3), (3, 1)),
                         ((), ())]:
        out = ignis.empty_strided(size, stride)
        ref = torch.empty_strided(size, stride)
        assert tuple(out.shape) == tuple(ref.shape) and out.stride() == ref.stride()
    for size, stride in [((2, 3), (3,)), ((2, 3), (-1, 1)), ((-2, 3), (3, 1))]:
        compare_call(lambda: ignis.empty_strided(size, stride),
                     lambda: torch.empty_strided(size, stride), msg=f"{size} {stride}")


# --------------------------------------------------------------------------------
# ignis.tensor and NumPy interop
# --------------------------------------------------------------------------------
TENSOR_DATA = [
    1, 2.5, True, [], [1, 2, 3], [1.0, 2], [True, False], [True, 2], [True, 2.5],
    [[1, 2], [3, 4]], [[1, 2.5], [3, 4]], [[[1]], [[2]]], (1, 2), [(1, 2), (3, 4)],
    [np.int32(3), 4], [np.float32(1.5)], np.float64(2.5), np.int8(3), [np.bool_(True)],
    [[], []], -0.0, [math.inf, -math.inf, math.nan], 2 ** 62,
]


@requires_torch
@pytest.mark.parametrize("data", TENSOR_DATA, ids=repr)
def test_tensor_inference(data):
    compare_call(lambda: ignis.tensor(data), lambda: torch.tensor(data), msg=repr(data))
    if "np." in repr(data):
        return  # torch refuses NumPy floats for integer dtypes; ignis converts them
    for dt in ["float64", "int32", "uint8", "bool", "float16"]:
        compare_call(lambda: ignis.tensor(data, dtype=ig_dtype(dt)),
                     lambda: torch.tensor(data, dtype=th_dtype(dt)), msg=f"{data!r} {dt}")


@requires_torch
def test_tensor_from_tensors_and_arrays():
    x, xt = make_pair((2, 3), "int16", "transposed")
    compare_call(lambda: ignis.tensor(x), lambda: torch.tensor(xt))
    y = ignis.tensor(x)
    assert y.data_ptr() != x.data_ptr()
    # (a list of tensors with dims is an ignis extension: torch refuses it)
    compare_call(lambda: ignis.tensor([x, x]), lambda: torch.stack([xt, xt]))
    compare_call(lambda: ignis.tensor([ignis.tensor(1, dtype=ignis.uint8), ignis.tensor(1, dtype=ignis.int8)]),
                 lambda: torch.tensor([torch.tensor(1, dtype=torch.uint8), torch.tensor(1, dtype=torch.int8)]))
    compare_call(lambda: ignis.tensor([np.zeros(2), np.ones(2)]),
                 lambda: torch.tensor([np.zeros(2), np.ones(2)]))
    compare_call(lambda: ignis.tensor([ignis.tensor(1.5), 2]),
                 lambda: torch.tensor([torch.tensor(1.5), 2]))
    for a in [np.arange(6).reshape(2, 3), np.arange(6.0).reshape(2, 3).T, np.array(3.5),
              np.zeros((0, 2), dtype=np.int8), np.array([True, False])]:
        compare_call(lambda: ignis.tensor(a), lambda: torch.tensor(a), msg=repr(a))
        t = ignis.tensor(a)
        a_copy = a.copy()
        if a.size:
            a.flat[0] = 1 - a.flat[0]
            np.testing.assert_array_equal(to_np(t), a_copy)  # a copy, not a view


@requires_torch
def test_tensor_bad_data():
    for data in [[1, [2]], [[1, 2], [3]], ["a"], [None], [1, "x"], object(), [[1], 2], None,
                 [2 ** 64], [2 ** 63], [-2 ** 63 - 1], [[1, 2], [[3], 4]]]:
        compare_call(lambda: ignis.tensor(data), lambda: torch.tensor(data), msg=repr(data))
    for data, dt in [([300], "uint8"), ([-3], "uint8"), ([-300], "uint8"), ([1e10], "int32"),
                     ([math.nan], "int64"), ([2.5], "int8"), ([1e5], "float16"),
                     ([1e40], "float32"), ([0.5, 0], "bool")]:
        compare_call(lambda: ignis.tensor(data, dtype=ig_dtype(dt)),
                     lambda: torch.tensor(data, dtype=th_dtype(dt)), msg=f"{data} {dt}")


@requires_torch
def test_legacy_constructors_and_types_match_torch():
    # ignis.Tensor(data), ignis.FloatTensor(...) and kin, isinstance by dtype,
    # and Tensor.type() with a type or its name, as torch's legacy API.
    calls = [
        lambda L: L.Tensor([1, 2]), lambda L: L.Tensor((1.5, 2)), lambda L: L.Tensor(),
        lambda L: L.Tensor([]), lambda L: L.Tensor([[1, 2], [3, 4]]),
        lambda L: L.Tensor(np.array([1, 2])), lambda L: L.Tensor(L.tensor([1, 2])),
        lambda L: L.Tensor(2, 3).shape, lambda L: L.Tensor(L.Size([2])).shape,
        lambda L: L.FloatTensor([1, 2]), lambda L: L.LongTensor([1, 2]),
        lambda L: L.DoubleTensor(2).shape, lambda L: L.BoolTensor([True, False]),
        lambda L: L.ByteTensor([1]), lambda L: L.HalfTensor([1]), lambda L: L.IntTensor([[1]]),
        lambda L: L.FloatTensor(), lambda L: L.LongTensor(L.tensor([3, 4])),
        lambda L: L.ones(2).type(L.LongTensor), lambda L: L.ones(2).type("torch.IntTensor"),
        lambda L: L.ones(2).type(L.float64), lambda L: L.ones(2, dtype=L.int8).type(),
        lambda L: isinstance(L.ones(2), L.FloatTensor),
        lambda L: isinstance(L.ones(2), L.LongTensor), lambda L: L.FloatTensor.dtype,
        lambda L: repr(L.LongTensor),
        lambda L: issubclass(L.FloatTensor, L.Tensor),
    ]
    for i, call in enumerate(calls):
        got, want = call(ignis), call(torch)
        if isinstance(want, torch.Tensor):
            assert_same(got, want, msg=f"call {i}")
        elif isinstance(want, torch.dtype):
            assert str(got).split(".")[-1] == str(want).split(".")[-1], f"call {i}"
        elif isinstance(want, str):
            assert got.replace("ignis.", "torch.") == want, f"call {i}"
        else:
            assert got == want, f"call {i}: {got} != {want}"
    for bad in (lambda L: L.Tensor(3.5), lambda L: L.LongTensor(L.tensor([1.5])),
                lambda L: L.FloatTensor(True)):
        with pytest.raises(TypeError):
            bad(torch)
        with pytest.raises(TypeError):
            bad(ignis)
    with pytest.raises(ValueError, match="invalid type"):
        ignis.ones(2).type("torch.FooTensor")


def test_requires_grad_and_device_arguments():
    t = ignis.tensor([1.0, 2.0], device="cpu")
    assert t.device.type == "cpu"
    m = ignis.tensor([1.0, 2.0], device="meta")
    assert m.device.type == "meta" and tuple(m.shape) == (2,)


@pytest.mark.parametrize("np_dtype", ["bool", "uint8", "int8", "int16", "int32", "int64",
                                      "float16", "float32", "float64"])
def test_from_numpy_shares_memory(np_dtype):
    a = np.arange(12).reshape(3, 4).astype(np_dtype)
    t = ignis.from_numpy(a)
    assert str(t.dtype) == "ignis." + np_dtype
    assert tuple(t.shape) == a.shape and t.stride() == tuple(s // a.itemsize for s in a.strides)
    assert t.data_ptr() == a.__array_interface__["data"][0]
    a[1, 2] = 1
    assert to_np(t)[1, 2] == 1
    t.zero_()
    assert not a.any()
    # Non-contiguous arrays are viewed with their strides.
    b = a[:, ::2]
    tb = ignis.from_numpy(b)
    assert tb.stride() == (4, 2) and not tb.is_contiguous()
    assert tb.data_ptr() == b.__array_interface__["data"][0]
    # The tensor keeps the array's memory alive.
    del a, b
    assert to_np(tb).shape == (3, 2)


@requires_torch
def test_from_numpy_errors():
    for a in [np.zeros(3, dtype="U3"), np.arange(4)[::-1], np.zeros(3, dtype=">f4")]:
        ig_exc = torch_exc = None
        try:
            ignis.from_numpy(a)
        except Exception as e:  # noqa: BLE001
            ig_exc = e
        try:
            torch.from_numpy(a)
        except Exception as e:  # noqa: BLE001
            torch_exc = e
        assert torch_exc is not None and type(ig_exc) is type(torch_exc), (a.dtype, ig_exc,
                                                                          torch_exc)
    with pytest.raises(TypeError):
        ignis.from_numpy([1, 2, 3])
    for dt in [np.uint16, np.float128]:  # no ignis dtype for these
        with pytest.raises(TypeError):
            ignis.from_numpy(np.zeros(3, dtype=dt))


def test_numpy_and_array_protocol():
    t = ignis.arange(12, dtype=ignis.float32).view(3, 4)
    a = t.numpy()
    assert a.dtype == np.float32 and a.shape == (3, 4)
    assert a.__array_interface__["data"][0] == t.data_ptr()
    a[0, 0] = 100
    assert t.tolist()[0][0] == 100
    v = t.t()
    av = v.numpy()
    assert av.strides == (4, 16)
    np.testing.assert_array_equal(np.asarray(t), a)
    assert np.array(t, dtype=np.float64).dtype == np.float64
    assert np.add(t, 1).shape == (3, 4)
    assert ignis.zeros(0, 3).numpy().shape == (0, 3)
    assert ignis.tensor(2.5).numpy().shape == ()
    with pytest.raises(TypeError):
        ignis.zeros(2, dtype=ignis.bfloat16).numpy()
    with pytest.raises(TypeError):
        ignis.zeros(2, device="meta").numpy()


def test_as_tensor_and_asarray():
    a = np.arange(4.0)
    t = ignis.as_tensor(a)
    assert t.data_ptr() == a.__array_interface__["data"][0]
    assert ignis.as_tensor(t) is t
    assert ignis.as_tensor(t, dtype=ignis.float64) is t
    assert ignis.as_tensor(t, dtype=ignis.int32).dtype is ignis.int32
    assert ignis.asarray([1, 2]).dtype is ignis.int64
    assert ignis.scalar_tensor(3).dtype is ignis.float32


@settings(max_examples=30, deadline=None)
@given(st.recursive(st.one_of(st.integers(-2 ** 31, 2 ** 31), st.floats(-1e6, 1e6),
                              st.booleans()),
                    lambda inner: st.lists(inner, min_size=1, max_size=3), max_leaves=8))
def test_tensor_property(data):
    """Any nested data: ignis.tensor agrees with torch.tensor (or both refuse)."""
    if torch is None:
        return
    compare_call(lambda: ignis.tensor(data), lambda: torch.tensor(data), msg=repr(data))

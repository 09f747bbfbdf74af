"""Copies and conversions: to, clone, contiguous, copy_, fill_, zero_, the
dtype shortcuts (float(), half(), long(), bool(), ...), item(), tolist(),
type(), and the Python number protocol.
"""
import math

import numpy as np
import pytest

import ignis
from conftest import (
    DTYPES, FLOAT_DTYPES, LAYOUTS, assert_same, assert_same_error, compare_call, dtype_name,
    ig_dtype, make_pair, requires_torch, run, th_dtype, to_np, torch,
)


def _convertible(src, dst):
    """Data kind whose conversion from src to dst is defined in C++ and torch
    (float -> int of out-of-range values is undefined, so stay small/positive
    for unsigned)."""
    return "small" if dst in ("uint8", "bool") or src in ("uint8",) else "any"


@requires_torch
@pytest.mark.parametrize("src", DTYPES)
def test_to_dtype_matrix(src):
    for dst in DTYPES:
        for layout in LAYOUTS:
            x, xt = make_pair((3, 4), src, layout, kind=_convertible(src, dst))
            msg = f"{src} {layout} -> {dst}"
            y = compare_call(lambda: x.to(ig_dtype(dst)), lambda: xt.to(th_dtype(dst)),
                             check_strides=True, msg=msg)
            if src == dst:
                assert y is x, msg  # no copy when nothing changes
            else:
                assert y.data_ptr() != x.data_ptr(), msg
            compare_call(lambda: x.to(dtype=ig_dtype(dst)), lambda: xt.to(dtype=th_dtype(dst)),
                         msg=msg)
            z = x.to(ig_dtype(dst), copy=True)
            assert z is not x and z.data_ptr() != x.data_ptr()
            if "bfloat16" not in (src, dst):  # NumPy's own cast agrees
                np.testing.assert_array_equal(to_np(y), to_np(x).astype(dst), err_msg=msg)


@requires_torch
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_to_int_rounding_and_specials(dtype):
    a = np.array([0.4, 0.5, 0.6, 1.5, 2.5, -0.4, -0.5, -1.5, -2.7, 127.0, -128.0, 100.9])
    x, xt = ignis.from_numpy(a).to(ig_dtype(dtype)), torch.from_numpy(a).to(th_dtype(dtype))
    for dst in ["int8", "int16", "int32", "int64", "bool"]:
        compare_call(lambda: x.to(ig_dtype(dst)), lambda: xt.to(th_dtype(dst)), msg=dst)
    s = np.array([math.inf, -math.inf, math.nan, -0.0, 1e-40, 70000.0, 3.4e38, 1e300])
    x, xt = ignis.from_numpy(s), torch.from_numpy(s)
    for dst in FLOAT_DTYPES + ["bool"]:
        compare_call(lambda: x.to(ig_dtype(dst)), lambda: xt.to(th_dtype(dst)), msg=dst)


@requires_torch
def test_int_narrowing_wraps():
    a = np.array([300, -129, 65537, 2 ** 40 + 5, -1], dtype=np.int64)
    x, xt = ignis.from_numpy(a), torch.from_numpy(a)
    for dst in ["uint8", "int8", "int16", "int32", "bool", "float16", "bfloat16"]:
        compare_call(lambda: x.to(ig_dtype(dst)), lambda: xt.to(th_dtype(dst)), msg=dst)


@requires_torch
@pytest.mark.parametrize("name,dtype", [("float", "float32"), ("double", "float64"),
                                        ("half", "float16"), ("bfloat16", "bfloat16"),
                                        ("long", "int64"), ("int", "int32"), ("short", "int16"),
                                        ("char", "int8"), ("byte", "uint8"), ("bool", "bool")])
def test_dtype_shortcuts(name, dtype):
    for src in DTYPES:
        x, xt = make_pair((2, 3), src, "transposed", kind="small")
        y = compare_call(lambda: getattr(x, name)(), lambda: getattr(xt, name)(),
                         check_strides=True, msg=f"{src}.{name}()")
        assert y.dtype is ig_dtype(dtype)
        if src == dtype:
            assert y is x


@requires_torch
def test_to_other_and_type_as_and_device():
    x, xt = make_pair((2, 3), "int32")
    o, ot = make_pair((1,), "float64")
    compare_call(lambda: x.to(o), lambda: xt.to(ot))
    compare_call(lambda: x.type_as(o), lambda: xt.type_as(ot))
    assert x.to("cpu") is x and x.cpu() is x
    compare_call(lambda: x.to("cpu", ignis.float16), lambda: xt.to("cpu", torch.float16))
    compare_call(lambda: x.to(device="cpu", dtype=ignis.int8),
                 lambda: xt.to(device="cpu", dtype=torch.int8))
    m = x.to("meta")
    assert m.device.type == "meta" and m.dtype is ignis.int32 and tuple(m.shape) == (2, 3)
    assert x.type() == xt.type().replace("torch.", "ignis.")
    assert x.type(ignis.float64).dtype is ignis.float64
    for f in [lambda t: t.to("nonsense"), lambda t: t.to(float), lambda t: t.to(dtype="float"),
              lambda t: t.to(int), lambda t: t.to(bool)]:
        compare_call(lambda: f(x), lambda: f(xt))


@requires_torch
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_clone(dtype, layout):
    for shape in [(3, 4), (1, 5), (4, 1), (0, 3), ()]:
        lay = layout if shape else "contiguous"
        x, xt = make_pair(shape, dtype, lay)
        y = compare_call(lambda: x.clone(), lambda: xt.clone(), check_strides=True,
                         msg=f"clone {dtype} {shape} {lay}")
        assert y is not x and (y.data_ptr() != x.data_ptr() or x.numel() == 0)
        v = x._version
        y.zero_()
        assert x._version == v  # independent storage and version counter
        compare_call(lambda: ignis.clone(x), lambda: torch.clone(xt), check_strides=True)


@requires_torch
@pytest.mark.parametrize("layout", LAYOUTS)
def test_contiguous(layout):
    for dtype in ["float32", "int8", "bool", "bfloat16"]:
        x, xt = make_pair((3, 4), dtype, layout)
        y = compare_call(lambda: x.contiguous(), lambda: xt.contiguous(), check_strides=True)
        assert y.is_contiguous()
        assert (y is x) == xt.is_contiguous()
        assert x.is_contiguous() == xt.is_contiguous()


@requires_torch
@pytest.mark.parametrize("dst_dtype", DTYPES)
def test_copy_(dst_dtype):
    for src_dtype in DTYPES:
        for src_shape in [(3, 4), (4,), (1, 4), (), (3, 1)]:
            for layout in ["contiguous", "transposed", "strided"]:
                d, dt_ = make_pair((3, 4), dst_dtype, layout, seed=1)
                s, st_ = make_pair(src_shape, src_dtype, seed=2, kind="small")
                v = d._version
                r, e = run(lambda: d.copy_(s))
                rt, et = run(lambda: dt_.copy_(st_))
                msg = f"copy_ {src_dtype}{src_shape} -> {dst_dtype} {layout}"
                if et is not None:
                    assert_same_error(e, et, msg)
                    continue
                assert e is None, f"{msg}: {e!r}"
                assert r is d and d._version == v + 1, msg
                assert_same(d, dt_, msg=msg)
                assert d.stride() == dt_.stride()


@requires_torch
def test_copy_errors_and_aliasing():
    d, dt_ = make_pair((3, 4), "float32")
    for src_shape in [(5,), (2, 4), (3, 4, 1), (2, 3, 4)]:
        s, st_ = make_pair(src_shape, "float32")
        compare_call(lambda: d.copy_(s), lambda: dt_.copy_(st_), msg=str(src_shape))
    # A view copied into its own base (overlapping memory) still gives torch's result for
    # this non-overlapping-region case.
    x, xt = make_pair((4, 4), "float32")
    x.narrow(0, 0, 2).copy_(x.narrow(0, 2, 2))
    xt.narrow(0, 0, 2).copy_(xt.narrow(0, 2, 2))
    assert_same(x, xt)
    # A Python number is accepted where torch needs a tensor: it copies like a 0-dim one.
    assert_same(d.copy_(3), dt_.copy_(torch.tensor(3)))


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_and_zero(dtype):
    for layout in LAYOUTS[:3]:
        for value in [0, 1, -3, 2.5, True, math.inf, math.nan]:
            x, xt = make_pair((3, 4), dtype, layout)
            v = x._version
            r, e = run(lambda: x.fill_(value))
            rt, et = run(lambda: xt.fill_(value))
            msg = f"fill_({value!r}) {dtype} {layout}"
            if et is not None:
                assert_same_error(e, et, msg)
                continue
            assert r is x and x._version == v + 1, msg
            assert_same(x, xt, msg=msg)
        x, xt = make_pair((3, 4), dtype, layout)
        for val in [ignis.tensor(7), ignis.tensor(1.5, dtype=ignis.float64), ignis.tensor(True)]:
            valt = torch.tensor(val.item())
            compare_call(lambda: x.fill_(val), lambda: xt.fill_(valt), msg=f"0-dim {val}")
        compare_call(lambda: ignis.fill_(x, 2), lambda: torch.fill_(xt, 2))
        compare_call(lambda: x.fill_(ignis.ones(2)), lambda: xt.fill_(torch.ones(2)))
        v = x._version
        assert x.zero_() is x and x._version == v + 1
        assert_same(x, xt.zero_())
        compare_call(lambda: ignis.zero_(x), lambda: torch.zero_(xt))


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_item_and_tolist(dtype):
    for shape in [(), (1,), (1, 1), (3,), (2, 3), (0,), (2, 0), (1, 2, 2)]:
        x, xt = make_pair(shape, dtype, kind="any")
        got, want = run(x.item), run(xt.item)
        if want[1] is not None:
            assert_same_error(got[1], want[1], f"item {shape}")
        else:
            assert type(got[0]) is type(want[0]), (type(got[0]), type(want[0]))
            assert got[0] == want[0] or (math.isnan(got[0]) and math.isnan(want[0]))
        lst, lst_t = x.tolist(), xt.tolist()
        assert lst == lst_t, (shape, lst, lst_t)
        assert _types(lst) == _types(lst_t)
    for v, dt in [(2 ** 62, "int64"), (-0.0, "float32"), (math.inf, "float16"),
                  (1e-30, "float64"), (1 / 3, "bfloat16")]:
        t, tt = ignis.tensor(v, dtype=ig_dtype(dt)), torch.tensor(v, dtype=th_dtype(dt))
        assert t.item() == tt.item() and type(t.item()) is type(tt.item())
        assert math.copysign(1, t.item()) == math.copysign(1, tt.item())


def _types(x):
    return [_types(v) for v in x] if isinstance(x, list) else type(x).__name__


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_python_number_protocol(dtype):
    x, xt = make_pair((), dtype, kind="small")
    for f in [float, int, bool, complex, lambda t: f"{t:.3f}" if t.is_floating_point() else
              f"{t:d}" if t.dtype not in (ignis.bool, torch.bool) else f"{t}"]:
        got, want = run(f, x), run(f, xt)
        if want[1] is not None:
            assert_same_error(got[1], want[1])
        else:
            assert got[0] == want[0]
    idx, idx_t = run(lambda: [10, 20, 30][x]), run(lambda: [10, 20, 30][xt])
    if idx_t[1] is not None:
        assert_same_error(idx[1], idx_t[1])
    else:
        assert idx[0] == idx_t[0]
    y, yt = make_pair((2,), dtype)
    for f in [bool, float, int, len, lambda t: list(t)]:
        got, want = run(f, y), run(f, yt)
        if want[1] is not None:
            assert_same_error(got[1], want[1], str(f))
        elif f is len:
            assert got[0] == want[0]
    for f in [bool, len]:
        e = run(f, ignis.zeros(0))[1]
        et = run(f, torch.zeros(0))[1]
        if et is not None:
            assert_same_error(e, et)


@requires_torch
def test_size_concatenation_and_repetition_are_sizes_as_torchs():
    for lib in (ignis, torch):
        s = lib.Size([2, 3])
        for r, want in ((s * 2, (2, 3, 2, 3)), (2 * s, (2, 3, 2, 3)), (s + (1,), (2, 3, 1)),
                        ((1,) + s, (1, 2, 3)), (s + s, (2, 3, 2, 3)), (s * 0, ()),
                        (s[1:], (3,))):
            assert type(r) is lib.Size and r == want, (lib.__name__, r)
        with pytest.raises(TypeError):
            s + [1]  # noqa: B018  (a list is not concatenated, as tuple's + refuses it)
        with pytest.raises(TypeError):
            [1] + s  # noqa: B018


def test_tensor_attributes():
    x = ignis.zeros(2, 3, dtype=ignis.float16)
    assert x.dim() == x.ndim == x.ndimension() == 2
    assert x.numel() == x.nelement() == 6
    assert x.element_size() == x.itemsize == 2
    assert x.size() == (2, 3) and x.size(1) == 3 and x.size(-2) == 2 and x.shape == (2, 3)
    assert repr(x.shape) == "ignis.Size([2, 3])" and x.shape.numel() == 6
    assert x.stride() == (3, 1) and x.stride(0) == 3
    assert x.is_floating_point() and not ignis.ones(1, dtype=ignis.int8).is_floating_point()
    assert x.device.type == "cpu" and x.is_cpu and not x.is_cuda and not x.is_meta
    with pytest.raises(IndexError):
        x.size(2)
    with pytest.raises(IndexError):
        x.stride(-3)
    assert ignis.is_tensor(x) and not ignis.is_tensor([1])
    assert ignis.numel(x) == 6 and ignis.is_floating_point(x)

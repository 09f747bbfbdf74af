"""repr(tensor) must read exactly like torch's, with 'torch.' spelled 'ignis.'."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ignis
from conftest import DTYPES, ig_dtype, make_pair, requires_torch, th_dtype, torch

pytestmark = requires_torch


def _check(data, dtype=None, **kw):
    ig = ignis.tensor(data, dtype=None if dtype is None else ig_dtype(dtype), **kw)
    th = torch.tensor(data, dtype=None if dtype is None else th_dtype(dtype), **kw)
    _check_pair(ig, th)


def _check_pair(ig, th):
    want = repr(th).replace("torch.", "ignis.")
    got = repr(ig)
    assert got == want, f"\nignis: {got}\ntorch: {want}"
    assert str(ig) == got


VALUES = [
    0, 1, -1, 7, 2.5, -0.0, 0.0, 1e-5, 1e8, 1e9, 123456789.0, 1 / 3, -2.75, 100.0, 1000.5,
    [1, 2, 3], [1.0, 2.0, 3.0], [1.5, -2.25], [0.1, 100.0], [1e-4, 1.0], [1e-5, 1.0], [0.001, 1.0],
    [1.0, 1000.0], [1.0, 1001.0], [1.0, 1e8], [1.0, 1e9], [12345.678, 0.5], [-1e-3, 5.0],
    [math.inf, 1.0], [math.nan, 1.5], [math.inf, -math.inf, math.nan], [math.nan], [math.inf],
    [0.0, -0.0], [1e20, 1.0], [1e-20, 1.0], [3.14159265, 2.71828], [1, -1000000],
    [True, False], [[1, 2], [3, 4]], [[1.5, 2.0], [-3.25, 4.0]], [[[1, 2]], [[3, 4]]],
    [[True], [False]], [[1e-6, 1.0], [2.0, 3.0]], [[0.0, 0.0], [0.0, 0.0]], [-5, 123456],
    [0.5, math.nan, math.inf], [2 ** 40, -3], [1e300, 1.0], [65504.0, 0.1],
]


@pytest.mark.parametrize("data", VALUES, ids=repr)
def test_repr_values(data):
    _check(data)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("data", [[0, 1, 2], [1.5, -2.0, 0.0], [[1, 0], [0, 1]], 3, 0.25, [],
                                  [[]], [-1.0, 100.0, 0.001]], ids=repr)
def test_repr_dtypes(data, dtype):
    if dtype in ("uint8", "bool") or "int" in dtype:
        data = np.abs(np.asarray(data, dtype=np.float64)).astype(np.int64).tolist()
    _check(data, dtype)


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0), (3, 0, 2), (1, 1, 1), (2, 3, 4),
                                   (2, 2, 2, 2), (1, 0)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16", "int8"])
def test_repr_shapes(shape, dtype):
    ig, th = make_pair(shape, dtype, kind="small")
    _check_pair(ig, th)


@pytest.mark.parametrize("n", [1000, 1001, 2000])
@pytest.mark.parametrize("dtype", ["float32", "int64", "float64"])
def test_repr_summarised(n, dtype):
    """More than 1000 elements: torch prints the three first and last per dim."""
    a = np.arange(n).astype(dtype) / (3 if "float" in dtype else 1)
    _check_pair(ignis.from_numpy(a), torch.from_numpy(a))
    a = np.arange(n * 3).reshape(n, 3).astype(dtype)
    _check_pair(ignis.from_numpy(a), torch.from_numpy(a))
    a = np.arange(40 * 50).reshape(40, 50).astype(dtype)
    _check_pair(ignis.from_numpy(a), torch.from_numpy(a))


def test_repr_long_rows_wrap():
    for a in [np.arange(30) * 1.5, np.arange(40), np.linspace(-1, 1, 25) * 1e5,
              np.arange(60).reshape(2, 30) * 0.25]:
        _check_pair(ignis.from_numpy(a.copy()), torch.from_numpy(a.copy()))


def test_repr_views_and_noncontiguous():
    ig, th = make_pair((3, 4), "float32", "transposed")
    _check_pair(ig, th)
    ig, th = make_pair((3, 4), "int32", "strided")
    _check_pair(ig, th)
    ig, th = make_pair((3, 4), "float64", "expanded")
    _check_pair(ig, th)


def test_repr_meta():
    for shape, dtype in [((2, 3), "float32"), ((4,), "int64"), ((), "float16"), ((0,), "bool")]:
        ig = ignis.empty(shape, dtype=ig_dtype(dtype), device="meta")
        th = torch.empty(shape, dtype=th_dtype(dtype), device="meta")
        _check_pair(ig, th)


def test_repr_default_dtype_float64():
    try:
        ignis.set_default_dtype(ignis.float64)
        torch.set_default_dtype(torch.float64)
        for data in [[1.5, 2.0], [1, 2], 2.5, []]:
            _check(data)
        _check([1.5], "float32")
    finally:
        ignis.set_default_dtype(ignis.float32)
        torch.set_default_dtype(torch.float32)


def test_size_and_dtype_repr():
    assert repr(ignis.zeros(2, 3).shape) == "ignis.Size([2, 3])"
    assert repr(ignis.zeros(()).shape) == "ignis.Size([])"
    for d in DTYPES:
        assert repr(ig_dtype(d)) == repr(th_dtype(d)).replace("torch.", "ignis.")
    assert repr(ignis.device("cpu")) == repr(torch.device("cpu"))
    assert str(ignis.device("meta")) == "meta"


def test_format():
    assert f"{ignis.tensor(2.5):.2f}" == f"{torch.tensor(2.5):.2f}"
    assert f"{ignis.tensor(7)}" == "7" or f"{ignis.tensor(7)}" == f"{torch.tensor(7)}"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32),
                          st.floats(-1e4, 1e4, width=32), st.integers(-1000, 1000)),
                min_size=1, max_size=12),
       st.sampled_from(["float32", "float64", "float16", "bfloat16"]))
def test_repr_property(values, dtype):
    """Random values, including the sci-mode/int-mode boundaries."""
    a = np.array(values, dtype=np.float64)
    if dtype == "float16":
        a = np.where(np.abs(a) > 6e4, np.sign(a) * 6e4, a)
    ig = ignis.from_numpy(a).to(ig_dtype(dtype))
    th = torch.from_numpy(a).to(th_dtype(dtype))
    _check_pair(ig, th)

"""Indexing and data-movement ops, and t[idx] / t[idx] = v, against NumPy and PyTorch."""
import warnings

import numpy as np
import pytest

import ignis

try:
    import torch
except ImportError:  # the NumPy comparisons still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]
RNG = np.random.default_rng(0)


# ---- helpers ------------------------------------------------------------------------------
def np_data(shape, dtype="float32", lo=-5, hi=6):
    """Small integers (exact in every dtype), as float32 for bfloat16."""
    a = RNG.integers(lo, hi, size=shape)
    if dtype == "bool":
        return a > 0
    if dtype == "uint8":
        return np.abs(a).astype(np.uint8)
    return a.astype(np.float32 if dtype == "bfloat16" else dtype)


def ig(a, dtype=None):
    t = ignis.from_numpy(np.ascontiguousarray(a).copy())
    return t.to(getattr(ignis, dtype)) if dtype == "bfloat16" else t


def th(a, dtype=None):
    t = torch.from_numpy(np.ascontiguousarray(a).copy())
    return t.to(torch.bfloat16) if dtype == "bfloat16" else t


def dname(t):
    return str(t.dtype).split(".")[-1]


def to_np(t):
    if dname(t) == "bfloat16":
        t = t.float()
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


def same(a, b):
    """Exact equality of value, shape and dtype (data movement must not round)."""
    if torch is not None and isinstance(b, torch.Tensor) or isinstance(b, ignis.Tensor):
        assert dname(a) == dname(b), f"dtype {dname(a)} != {dname(b)}"
    x, y = to_np(a), to_np(b)
    assert x.shape == tuple(y.shape), f"shape {x.shape} != {y.shape}"
    np.testing.assert_array_equal(x, y)


def raises_like(exc, f_ig, f_th=None):
    """ignis raises `exc`, and so does torch for the same call."""
    with pytest.raises(exc):
        f_ig()
    if torch is not None and f_th is not None:
        with pytest.raises(exc):
            f_th()


def meta(*shape, dtype=None):
    return ignis.empty(*shape, dtype=dtype or ignis.float32, device="meta")


# ---- t[idx] ---------------------------------------------------------------------------------
# Each entry builds an index from a module namespace M (ignis, torch or NumPy)
# and `arr` (that module's array constructor), for x of shape (4, 5, 6).
GET_CASES = {
    "int": lambda M, arr: 1,
    "neg_int": lambda M, arr: -1,
    "slice": lambda M, arr: slice(1, 3),
    "slice_step": lambda M, arr: slice(None, None, 2),
    "slice_clamped": lambda M, arr: slice(-100, 100, 3),
    "empty_slice": lambda M, arr: slice(3, 1),
    "tuple_ints": lambda M, arr: (1, 2, 3),
    "tuple_mixed": lambda M, arr: (1, slice(None), -2),
    "ellipsis": lambda M, arr: Ellipsis,
    "ellipsis_last": lambda M, arr: (Ellipsis, 2),
    "ellipsis_mid": lambda M, arr: (0, Ellipsis, slice(1, 4)),
    "none": lambda M, arr: None,
    "ellipsis_none": lambda M, arr: (Ellipsis, None),
    "none_mid": lambda M, arr: (slice(None), None, 1),
    "empty_tuple": lambda M, arr: (),
    "list": lambda M, arr: [0, 2, 3],
    "list_neg_dup": lambda M, arr: [-1, 0, 0],
    "tensor_1d": lambda M, arr: arr([3, 1]),
    "tensor_2d": lambda M, arr: arr([[0, 1], [2, 3]]),
    "second_dim": lambda M, arr: (slice(None), [0, 2]),
    "slice_then_adv": lambda M, arr: (slice(1, 3), arr([4, 0])),
    "adjacent": lambda M, arr: (slice(None), arr([[0], [1]]), arr([1, 2, 3])),
    "non_adjacent": lambda M, arr: (arr([[0], [1]]), slice(None), arr([0, 5])),
    "non_adjacent_int": lambda M, arr: (arr([0, 3]), 1, arr([2, 4])),
    "adv_none_adv": lambda M, arr: (Ellipsis, arr([1, 2]), None, arr([0, 5])),
    "mask_1d": lambda M, arr: arr([True, False, True, True]),
    "mask_list": lambda M, arr: [True, False, False, True],
    "mask_2d": lambda M, arr: arr(np.arange(20).reshape(4, 5) % 3 == 0),
    "mask_then_int": lambda M, arr: (arr(np.arange(20).reshape(4, 5) % 2 == 0), 1),
    "int_then_mask": lambda M, arr: (1, slice(None), arr(np.arange(6) > 2)),
    "mask_and_index": lambda M, arr: (arr([True, False, True, False]), slice(None), arr([0, 5])),
    "empty_list": lambda M, arr: [],
    "all_false": lambda M, arr: arr([False] * 4),
}


# NumPy counts an int next to advanced indices as advanced (moving the result
# dims); PyTorch applies it first as a select. ignis follows PyTorch.
NUMPY_DIFFERS = {"int_then_mask"}


def _arr_for(module):
    if module is np:
        return np.array
    return lambda data: module.tensor(np.asarray(data)) if isinstance(data, np.ndarray) \
        else module.tensor(data)


@pytest.mark.parametrize("case", list(GET_CASES))
def test_getitem_matches_numpy_and_torch(case):
    a = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    x = ig(a)
    r = x[GET_CASES[case](ignis, _arr_for(ignis))]
    if case not in NUMPY_DIFFERS:
        np.testing.assert_array_equal(to_np(r), a[GET_CASES[case](np, np.array)])
    assert dname(r) == "float32"
    if torch is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            same(r, th(a)[GET_CASES[case](torch, _arr_for(torch))])


@needs_torch
@pytest.mark.parametrize("case", ["list_of_list_legacy", "bool_true", "bool_false", "zero_dim_int",
                                  "zero_dim_bool", "numpy_int", "numpy_array", "int32_index",
                                  "uint8_mask", "double_ellipsis", "float_list"])
def test_getitem_torch_only_forms(case):
    a = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    forms = {
        "list_of_list_legacy": lambda M: [0, [1, 2]],  # a short list read as a tuple
        "bool_true": lambda M: True,
        "bool_false": lambda M: (slice(None), False),
        "zero_dim_int": lambda M: M.tensor(2),
        "zero_dim_bool": lambda M: (M.tensor(True), 1),
        "numpy_int": lambda M: (np.int64(1), np.int32(-1)),
        "numpy_array": lambda M: np.array([[1, 0], [3, 3]]),
        "int32_index": lambda M: M.tensor([1, 3], dtype=M.int32),
        "uint8_mask": lambda M: M.tensor([1, 0, 1, 1], dtype=M.uint8),
        "double_ellipsis": lambda M: (Ellipsis, 1, Ellipsis),
        "float_list": lambda M: [0.0, 2.9],  # lists convert to int64 indices
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(ig(a)[forms[case](ignis)], th(a)[forms[case](torch)])


def test_basic_indexing_returns_views():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = ig(a)
    for v in (x[1], x[:, 1:3], x[..., None], x[None, 0, ::2], x[...], x[:, -1, 2]):
        v.fill_(-1.0) if v.dim() else v.fill_(-1.0)
        assert (to_np(x) == -1).any()
        x.copy_(ig(a))
    r = x[...]
    assert r is not x and r.shape == x.shape
    # Advanced indexing copies.
    c = x[[0, 1]]
    c.fill_(7.0)
    np.testing.assert_array_equal(to_np(x), a)


def test_zero_dim_results_and_sources():
    x = ig(np.arange(6, dtype=np.int64).reshape(2, 3))
    r = x[1, 2]
    assert r.dim() == 0 and r.item() == 5
    s = ignis.tensor(3.5)
    assert s[...].item() == 3.5 and s[None].shape == (1,) and s[()].dim() == 0
    assert s[True].shape == (1,) and s[False].shape == (0,)
    if torch is not None:
        same(s[None, ..., None], torch.tensor(3.5)[None, ..., None])


@pytest.mark.parametrize("dtype", DTYPES)
def test_getitem_every_dtype_non_contiguous(dtype):
    a = np_data((5, 4, 3), dtype)
    x = ig(a, dtype).transpose(0, 2)[:, ::2]  # (3, 2, 5), strided
    an = a.transpose(2, 1, 0)[:, ::2]
    idx = (slice(None), [1, 0, 1], np.array([4, 0, 2]))
    expected = an[idx]
    r = x[slice(None), [1, 0, 1], ignis.tensor([4, 0, 2])]
    np.testing.assert_array_equal(to_np(r).astype(np.float64), expected.astype(np.float64))
    assert dname(r) == dtype
    mask = an > 0 if dtype != "bool" else an
    np.testing.assert_array_equal(to_np(x[ig(mask)]).astype(np.float64),
                                  an[mask].astype(np.float64))


def test_getitem_zero_size():
    x = ig(np.zeros((0, 3), dtype=np.float32))
    assert x[:, [0, 2]].shape == (0, 2)
    assert x[ignis.tensor([], dtype=ignis.int64)].shape == (0, 3)
    y = ig(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert y[ignis.zeros(2, 3, dtype=ignis.bool)].shape == (0,)
    assert y[[], 1].shape == (0,)
    assert y[1:1].shape == (0, 3)


@pytest.mark.parametrize("make,exc", [
    (lambda M, x: x[3], IndexError),
    (lambda M, x: x[-4], IndexError),
    (lambda M, x: x[0, 7], IndexError),
    (lambda M, x: x[0, 0, 0, 0], IndexError),
    (lambda M, x: x[M.tensor([5])], IndexError),
    (lambda M, x: x[M.tensor([-4])], IndexError),
    (lambda M, x: x[:, M.tensor([0, 4])], IndexError),
    (lambda M, x: x[M.tensor([0.0])], IndexError),
    (lambda M, x: x[M.tensor([1], dtype=M.int16)], IndexError),
    (lambda M, x: x[M.tensor([True, False])], IndexError),
    (lambda M, x: x[M.tensor([0, 1]), M.tensor([0, 1, 2])], IndexError),
    (lambda M, x: x[::-1], ValueError),
    (lambda M, x: x[:, ::-2], ValueError),
    (lambda M, x: x[1.5], IndexError),
    (lambda M, x: x[("a",)], TypeError),
    (lambda M, x: x[np.bool_(True)], IndexError),
    (lambda M, x: M.tensor(5)[0], IndexError),
    (lambda M, x: M.tensor(5)[:], IndexError),
])
def test_getitem_errors(make, exc):
    a = np.arange(36, dtype=np.float32).reshape(3, 3, 4)
    raises_like(exc, lambda: make(ignis, ig(a)), lambda: make(torch, th(a)))


def test_getitem_error_messages():
    x = ig(np.zeros((3, 4), dtype=np.float32))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[5]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[ignis.tensor([0, 5])]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]


# ---- t[idx] = value ----------------------------------------------------------------------------
SET_CASES = [
    (lambda M: 1, lambda M: 9.5),
    (lambda M: (slice(None), 2), lambda M: M.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])),
    (lambda M: (Ellipsis, None), lambda M: M.tensor([[[1.0]]])),
    (lambda M: slice(1, 3), lambda M: M.tensor([[[1.0] * 6] * 5])),  # leading 1 dims dropped
    (lambda M: (slice(None), [0, 2]), lambda M: -1),
    (lambda M: M.tensor([3, 1]), lambda M: M.ones(6)),
    (lambda M: (M.tensor([0, 0, 0]), 1, M.tensor([1, 1, 1])), lambda M: M.tensor([1.0, 2.0, 3.0])),
    (lambda M: (M.tensor([[0], [1]]), slice(None), M.tensor([0, 5])), lambda M: 3),
    (lambda M: M.tensor(np.arange(120).reshape(4, 5, 6) % 7 == 0), lambda M: 0.25),
    (lambda M: (M.tensor([True, False, True, False]), 2), lambda M: M.tensor([[5.0] * 6])),
    (lambda M: (1, Ellipsis, slice(None, None, 2)), lambda M: M.tensor(7.0, dtype=M.float64)),
    (lambda M: True, lambda M: 4),
    (lambda M: ([0, 1], [2, 3]), lambda M: M.tensor([[8.0], [9.0]])),
]


@needs_torch
@pytest.mark.parametrize("i", range(len(SET_CASES)))
def test_setitem_matches_torch(i):
    idx, val = SET_CASES[i]
    a = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    x, t = ig(a), th(a)
    x[idx(ignis)] = val(ignis)
    t[idx(torch)] = val(torch)
    same(x, t)


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_number_conversion(dtype):
    a = np_data((3, 4), dtype)
    for idx, v in [(0, 2.7), ((slice(None), 1), -1), ([0, 2], True), ((1, [3]), 0.0)]:
        if dtype in ("uint8", "bool") and v == -1:
            continue  # PyTorch rejects the overflow
        x, t = ig(a, dtype), th(a, dtype)
        x[idx] = v
        t[idx] = v
        same(x, t)


def test_setitem_through_views():
    a = np.zeros((3, 4), dtype=np.float32)
    x = ig(a)
    v = x[1]
    v[2] = 5.0
    col = x[:, 3]
    col[[0, 2]] = ignis.tensor([7.0, 8.0])
    x.t()[0, 1:] = 1.0
    b = a.copy()
    b[1, 2] = 5
    b[[0, 2], 3] = [7, 8]
    b.T[0, 1:] = 1
    np.testing.assert_array_equal(to_np(x), b)


@needs_torch
def test_setitem_aliasing_source():
    # PyTorch refuses sources that overlap the destination unless they are
    # the same elements or not dense.
    cases = [
        (lambda x: x.__setitem__(slice(1, None), x[:-1]), RuntimeError),
        (lambda x: x.__setitem__([1, 2, 3, 4], x[:-1]), RuntimeError),
        (lambda x: x.__setitem__([0, 1, 2, 3, 4], x), RuntimeError),
        (lambda x: x.__setitem__(Ellipsis, x), None),
        (lambda x: x.__setitem__(slice(None, 4, 2), x[1::2]), None),
        (lambda x: x.__setitem__(slice(0, 2), x[3:]), None),
        (lambda x: x.__setitem__(Ellipsis, x.flip(0)[None]), None),
    ]
    for f, exc in cases:
        x, t = ignis.arange(5.0), torch.arange(5.0)
        if exc is None:
            f(x)
            f(t)
            same(x, t)
        else:
            raises_like(exc, lambda: f(x), lambda: f(t))


def test_setitem_errors():
    x = ig(np.zeros((2, 3), dtype=np.float32))
    raises_like(RuntimeError, lambda: x.__setitem__(slice(None), ignis.ones(4)),
                lambda: torch.zeros(2, 3).__setitem__(slice(None), torch.ones(4)))
    raises_like(RuntimeError, lambda: x.__setitem__([0], ignis.ones(2, 3, dtype=ignis.float64)),
                lambda: torch.zeros(2, 3).__setitem__([0], torch.ones(2, 3, dtype=torch.float64)))
    raises_like(RuntimeError, lambda: x.__setitem__([0, 1], ignis.ones(3, 3)),
                lambda: torch.zeros(2, 3).__setitem__([0, 1], torch.ones(3, 3)))
    raises_like(TypeError, lambda: x.__setitem__(0, "a"),
                lambda: torch.zeros(2, 3).__setitem__(0, "a"))
    raises_like(IndexError, lambda: x.__setitem__(2, 1.0),
                lambda: torch.zeros(2, 3).__setitem__(2, 1.0))
    raises_like(IndexError, lambda: x.__setitem__(ignis.tensor([0, 3]), 1.0),
                lambda: torch.zeros(2, 3).__setitem__(torch.tensor([0, 3]), 1.0))
    np.testing.assert_array_equal(to_np(x), np.zeros((2, 3)))  # nothing written


# ---- cat / stack ----------------------------------------------------------------------------------
@needs_torch
def test_cat_promotion_and_layouts():
    a = np_data((2, 3), "float32")
    b = np_data((3, 2), "int32")
    c = np_data((2, 1), "float64")
    for dim in (1, -1):
        same(ignis.cat([ig(a), ig(b).t(), ig(c)], dim), torch.cat([th(a), th(b).t(), th(c)], dim))
    same(ignis.cat([ig(a), ig(a)[::-1 + 2]]), torch.cat([th(a), th(a)[::1]]))
    same(ignis.cat((ig(a), ignis.zeros(0, 3))), torch.cat((th(a), torch.zeros(0, 3))))
    # Empty 1-D tensors are skipped but still take part in promotion.
    e = np.zeros(0, dtype=np.float64)
    same(ignis.cat([ig(e), ig(a)], 1), torch.cat([th(e), th(a)], 1))
    same(ignis.cat([ig(e), ig(e)]), torch.cat([th(e), th(e)]))
    same(ignis.concat([ig(a), ig(a)]), torch.concat([th(a), th(a)]))
    assert ignis.cat([meta(2, 3), meta(2, 5)], 1).shape == (2, 8)


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_stack_every_dtype(dtype):
    a, b = np_data((2, 3), dtype), np_data((2, 3), dtype)
    same(ignis.cat([ig(a, dtype), ig(b, dtype)]), torch.cat([th(a, dtype), th(b, dtype)]))
    same(ignis.stack([ig(a, dtype), ig(b, dtype)], 2), torch.stack([th(a, dtype), th(b, dtype)], 2))


@needs_torch
def test_cat_stack_errors():
    raises_like(RuntimeError, lambda: ignis.cat([ignis.ones(2, 3), ignis.ones(3, 4)], 1),
                lambda: torch.cat([torch.ones(2, 3), torch.ones(3, 4)], 1))
    raises_like(RuntimeError, lambda: ignis.cat([ignis.ones(2, 3), ignis.ones(3)], 1),
                lambda: torch.cat([torch.ones(2, 3), torch.ones(3)], 1))
    raises_like(RuntimeError, lambda: ignis.cat([ignis.tensor(1.0)]),
                lambda: torch.cat([torch.tensor(1.0)]))
    raises_like(ValueError, lambda: ignis.cat([]), lambda: torch.cat([]))
    raises_like(IndexError, lambda: ignis.cat([ignis.ones(2)], 1), lambda: torch.cat([torch.ones(2)], 1))
    raises_like(RuntimeError, lambda: ignis.stack([ignis.ones(2, 3), ignis.ones(2, 4)]),
                lambda: torch.stack([torch.ones(2, 3), torch.ones(2, 4)]))
    raises_like(RuntimeError, lambda: ignis.stack([]), lambda: torch.stack([]))
    with pytest.raises(RuntimeError, match="Expected size 2 but got size 3 for tensor number 1"):
        ignis.cat([ignis.ones(2, 3), ignis.ones(3, 4)], 1)


@needs_torch
@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack"])
def test_hvd_stack(name):
    for shapes in ([(3,), (2,)] if name == "hstack" else [(3,), (3,)], [(2, 3), (2, 3)], [(), ()]):
        arrs = [np_data(s) for s in shapes]
        same(getattr(ignis, name)([ig(a) for a in arrs]), getattr(torch, name)([th(a) for a in arrs]))


# ---- repeat / tile / flip / roll -------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("dtype", ["bool", "int16", "bfloat16", "float64"])
def test_repeat_tile(dtype):
    a = np_data((2, 3), dtype)
    for reps in ((2, 1), (1, 3), (2, 2, 3), (0, 2)):
        same(ig(a, dtype).repeat(*reps), th(a, dtype).repeat(*reps))
        same(ig(a, dtype).t().repeat(reps), th(a, dtype).t().repeat(reps))
    same(ignis.tensor(3.0).repeat(2, 2), torch.tensor(3.0).repeat(2, 2))
    same(ignis.tensor(3.0).repeat([]), torch.tensor(3.0).repeat([]))
    same(ignis.tile(ig(a, dtype), (2,)), torch.tile(th(a, dtype), (2,)))
    raises_like(RuntimeError, lambda: ig(a).repeat(2), lambda: th(a).repeat(2))
    raises_like(RuntimeError, lambda: ig(a).repeat(2, -1), lambda: th(a).repeat(2, -1))
    assert meta(2, 3).repeat(2, 1, 2).shape == (2, 2, 6)


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_every_dtype(dtype):
    a = np_data((3, 4, 5), dtype)
    for dims in ((0,), (2,), (0, 2), (-1, 1), (), (0, 1, 2)):
        same(ignis.flip(ig(a, dtype), dims), torch.flip(th(a, dtype), dims))
        np.testing.assert_array_equal(to_np(ignis.flip(ig(a), dims)), np.flip(a, dims))
    same(ig(a, dtype).transpose(0, 2)[::2].flip(1), th(a, dtype).transpose(0, 2)[::2].flip(1))


@needs_torch
def test_flip_variants_and_errors():
    a = np_data((3, 4))
    same(ignis.fliplr(ig(a)), torch.fliplr(th(a)))
    same(ignis.flipud(ig(a)), torch.flipud(th(a)))
    same(ignis.flip(ignis.tensor(2.0), (0,)), torch.flip(torch.tensor(2.0), (0,)))
    raises_like(RuntimeError, lambda: ig(a).flip((0, 0)), lambda: th(a).flip((0, 0)))
    raises_like(IndexError, lambda: ig(a).flip((2,)), lambda: th(a).flip((2,)))
    assert meta(2, 3).flip(0).shape == (2, 3)


@needs_torch
def test_roll():
    a = np_data((3, 4, 2))
    for shifts, dims in ((1, None), (-5, None), ((1, 2), (0, 1)), (7, 2), ((1, 1), (0, 0)),
                         ((2,), (-1,))):
        r = ignis.roll(ig(a), shifts, dims) if dims is not None else ignis.roll(ig(a), shifts)
        e = torch.roll(th(a), shifts, dims) if dims is not None else torch.roll(th(a), shifts)
        same(r, e)
        np.testing.assert_array_equal(to_np(r), np.roll(a, shifts, dims))
    same(ignis.roll(ig(a).transpose(0, 2), 3), torch.roll(th(a).transpose(0, 2), 3))
    same(ignis.roll(ignis.zeros(0, 3), 1, 0), torch.roll(torch.zeros(0, 3), 1, 0))
    raises_like(RuntimeError, lambda: ignis.roll(ig(a), (1, 2), (0,)),
                lambda: torch.roll(th(a), (1, 2), (0,)))
    raises_like(IndexError, lambda: ignis.roll(ig(a), 1, 3), lambda: torch.roll(th(a), 1, 3))


# ---- index_select / gather / scatter ---------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select_every_dtype(dtype):
    a = np_data((4, 5), dtype)
    for dim, idx in ((0, [3, 0, 3]), (1, [4, 1]), (-1, []), (0, 2)):
        for itype in (np.int64, np.int32):
            i = np.array(idx, dtype=itype)
            same(ignis.index_select(ig(a, dtype), dim, ig(i)),
                 torch.index_select(th(a, dtype), dim, th(i)))
    same(ig(a, dtype).t().index_select(0, ignis.tensor([1, 1])),
         th(a, dtype).t().index_select(0, torch.tensor([1, 1])))


@needs_torch
def test_index_select_errors_and_scalar():
    a = np_data((2, 3))
    same(ignis.tensor(5.0).index_select(0, ignis.tensor([0])),
         torch.tensor(5.0).index_select(0, torch.tensor([0])))
    for bad, exc in (([5], IndexError), ([-1], IndexError), ([[1]], IndexError)):
        raises_like(exc, lambda: ig(a).index_select(0, ignis.tensor(bad)),
                    lambda: th(a).index_select(0, torch.tensor(bad)))
    raises_like(RuntimeError, lambda: ig(a).index_select(0, ignis.tensor([1.0])),
                lambda: th(a).index_select(0, torch.tensor([1.0])))
    assert ignis.index_select(meta(4, 5), 1, ignis.empty(3, dtype=ignis.int64, device="meta")).shape \
        == (4, 3)


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_every_dtype(dtype):
    a = np_data((3, 4), dtype)
    idx = RNG.integers(0, 3, size=(2, 4))
    for dim, i in ((0, idx), (1, idx % 4), (1, idx[:, :2]), (-1, np.zeros((3, 0), np.int64))):
        same(ignis.gather(ig(a, dtype), dim, ig(i)), torch.gather(th(a, dtype), dim, th(i)))
        # NumPy's take_along_axis needs the other dims to match exactly.
        part = a[tuple(slice(None) if d == dim % 2 else slice(0, i.shape[d]) for d in range(2))]
        np.testing.assert_array_equal(
            to_np(ignis.gather(ig(a, dtype), dim, ig(i))).astype(np.float64),
            np.take_along_axis(part, i, dim).astype(np.float64))
    same(ig(a, dtype).t().gather(0, ig(idx % 3).t()), th(a, dtype).t().gather(0, th(idx % 3).t()))


@needs_torch
def test_gather_errors():
    a = np_data((2, 3))
    raises_like(RuntimeError, lambda: ig(a).gather(0, ignis.tensor([[5]])),
                lambda: th(a).gather(0, torch.tensor([[5]])))
    raises_like(RuntimeError, lambda: ig(a).gather(0, ignis.tensor([[-1]])),
                lambda: th(a).gather(0, torch.tensor([[-1]])))
    raises_like(RuntimeError, lambda: ig(a).gather(0, ignis.tensor([1])),
                lambda: th(a).gather(0, torch.tensor([1])))
    raises_like(RuntimeError, lambda: ig(a).gather(0, ignis.zeros(1, 4, dtype=ignis.int64)),
                lambda: th(a).gather(0, torch.zeros(1, 4, dtype=torch.int64)))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 2"):
        ig(a).gather(0, ignis.tensor([[5]]))
    assert meta(2, 3).gather(1, ignis.empty(2, 5, dtype=ignis.int64, device="meta")).shape == (2, 5)


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_every_dtype(dtype):
    a = np_data((3, 5), dtype)
    src = np_data((2, 5), dtype)
    idx = np.array([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])
    x, t = ig(a, dtype), th(a, dtype)
    same(x.scatter(0, ig(idx), ig(src, dtype)), t.scatter(0, th(idx), th(src, dtype)))
    same(x.scatter(1, ig(idx[:, :3]), ig(src, dtype)), t.scatter(1, th(idx[:, :3]), th(src, dtype)))
    same(x.scatter(0, ig(idx), 1), t.scatter(0, th(idx), 1))
    if dtype != "bool":
        same(x.scatter_add(0, ig(idx), ig(src, dtype)), t.scatter_add(0, th(idx), th(src, dtype)))
    x2, t2 = ig(a, dtype), th(a, dtype)
    assert x2.scatter_(1, ig(idx % 3), ig(src, dtype)) is x2
    t2.scatter_(1, th(idx % 3), th(src, dtype))
    same(x2, t2)


@needs_torch
def test_scatter_value_and_inplace_forms():
    a = np_data((3, 4))
    idx = np.array([[2, 0], [1, 1]])
    same(ig(a).scatter(1, ig(idx), 2.5), th(a).scatter(1, th(idx), 2.5))
    same(ig(a).int().scatter(1, ig(idx), 2.7), th(a).int().scatter(1, th(idx), 2.7))
    x, t = ig(a), th(a)
    x.scatter_(0, ig(idx), -1.0)
    t.scatter_(0, th(idx), -1.0)
    same(x, t)
    x.scatter_add_(1, ig(idx), ig(np.ones((2, 2), np.float32)))
    t.scatter_add_(1, th(idx), torch.ones(2, 2))
    same(x, t)
    # Non-contiguous self, index and src.
    big = np_data((4, 6))
    s = np_data((6, 4))
    i = RNG.integers(0, 4, size=(3, 4))
    same(ig(big).t().scatter(1, ig(i)[:, ::1], ig(s)[::2]),
         th(big).t().scatter(1, th(i)[:, ::1], th(s)[::2]))


@needs_torch
def test_scatter_errors():
    a = np_data((2, 3))
    raises_like(RuntimeError, lambda: ig(a).scatter(0, ignis.tensor([[5]]), 1.0),
                lambda: th(a).scatter(0, torch.tensor([[5]]), 1.0))
    raises_like(RuntimeError, lambda: ig(a).scatter(0, ignis.tensor([[1]]), ignis.tensor([[2]])),
                lambda: th(a).scatter(0, torch.tensor([[1]]), torch.tensor([[2]])))
    raises_like(RuntimeError, lambda: ig(a).scatter(0, ignis.tensor([[1]]), ignis.tensor(2.0)),
                lambda: th(a).scatter(0, torch.tensor([[1]]), torch.tensor(2.0)))
    raises_like(RuntimeError, lambda: ig(a).scatter(0, ignis.tensor([[1, 1]]), ignis.tensor([[2.0]])),
                lambda: th(a).scatter(0, torch.tensor([[1, 1]]), torch.tensor([[2.0]])))
    raises_like(RuntimeError, lambda: ig(a).scatter(0, ignis.tensor([[1.0]]), 1.0),
                lambda: th(a).scatter(0, torch.tensor([[1.0]]), 1.0))
    same(ig(a).scatter(0, ignis.tensor([[1]], dtype=ignis.int32), 1.0),
         th(a).scatter(0, torch.tensor([[1]], dtype=torch.int32), 1.0))
    assert meta(2, 3).scatter(0, ignis.empty(1, 3, dtype=ignis.int64, device="meta"), 1.0).shape \
        == (2, 3)


# ---- tril / triu ------------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_tril_triu_every_dtype(dtype):
    a = np_data((2, 4, 5), dtype)
    for k in (0, 1, -2, 7, -7):
        same(ignis.tril(ig(a, dtype), k), torch.tril(th(a, dtype), k))
        same(ignis.triu(ig(a, dtype), k), torch.triu(th(a, dtype), k))
        np.testing.assert_array_equal(to_np(ignis.tril(ig(a), k)), np.tril(a, k))
    x, t = ig(a, dtype).transpose(1, 2), th(a, dtype).transpose(1, 2)
    assert x.tril_(1) is x
    t.tril_(1)
    same(x, t)
    x.triu_(-1)
    t.triu_(-1)
    same(x, t)


@needs_torch
def test_tril_errors_and_meta():
    raises_like(RuntimeError, lambda: ignis.tril(ignis.ones(3)), lambda: torch.tril(torch.ones(3)))
    raises_like(RuntimeError, lambda: ignis.triu(ignis.ones(3)), lambda: torch.triu(torch.ones(3)))
    assert ignis.tril(meta(2, 3, 4)).shape == (2, 3, 4)
    same(ignis.triu(ignis.ones(0, 3)), torch.triu(torch.ones(0, 3)))


# ---- pad --------------------------------------------------------------------------------------------
PAD_CASES = [
    ((2, 3), (1, 2), "constant", None),
    ((2, 3), (1, 1, 2, 0), "constant", 2.5),
    ((2, 3, 4), (-1, 2), "constant", 1.0),
    ((2, 3), (-1, -1), "constant", None),
    ((2, 3), (1, 1, 1, 1), "constant", None),
    ((2, 5), (2, 3), "reflect", None),
    ((1, 2, 3, 4), (1, 2, 2, 1), "reflect", None),
    ((2, 3), (-1, 2), "reflect", None),
    ((2, 3), (2, 3), "replicate", None),
    ((1, 2, 3, 4), (1, 2, 3, 0), "replicate", None),
    ((1, 1, 2, 2, 3), (1, 1, 1, 1, 1, 1), "replicate", None),
    ((1, 2, 3), (1, 3), "circular", None),
    ((1, 2, 3, 3), (3, 1, 2, 0), "circular", None),
    ((1, 2, 3), (-1, 1), "circular", None),
    ((1, 1, 5), (-1, 2), "circular", None),
    ((1, 1, 5), (3, -1), "circular", None),
    ((1, 5), (2, -1), "reflect", None),
]


@needs_torch
@pytest.mark.parametrize("shape,pad,mode,value", PAD_CASES)
def test_pad_matches_torch(shape, pad, mode, value):
    F = torch.nn.functional
    a = np_data(shape)
    kw = {} if value is None else {"value": value}
    same(ignis.nn.functional.pad(ig(a), pad, mode=mode, **kw), F.pad(th(a), pad, mode=mode, **kw))
    # Non-contiguous input.
    at = np.ascontiguousarray(np.swapaxes(a, 0, -1))
    same(ignis.nn.functional.pad(ig(at).transpose(0, -1), pad, mode=mode, **kw),
         F.pad(th(at).transpose(0, -1), pad, mode=mode, **kw))
    assert ignis.nn.functional.pad(meta(*shape), pad, mode=mode, **kw).shape == \
        F.pad(th(a), pad, mode=mode, **kw).shape


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_dtypes(dtype):
    F = torch.nn.functional
    a = np_data((2, 3), dtype)
    same(ignis.nn.functional.pad(ig(a, dtype), (1, 2), value=2.7),
         F.pad(th(a, dtype), (1, 2), value=2.7))
    if dtype != "bool":
        same(ignis.nn.functional.pad(ig(a, dtype), (2, 1), mode="reflect"),
             F.pad(th(a, dtype), (2, 1), mode="reflect"))


@needs_torch
def test_pad_errors():
    F = torch.nn.functional
    cases = [
        (((2, 3), (1,)), {}, RuntimeError),
        (((2, 3), (1, 1, 1, 1, 1, 1)), {}, RuntimeError),
        (((2, 3), (3, 3)), {"mode": "reflect"}, RuntimeError),
        (((3,), (1, 1)), {"mode": "reflect"}, NotImplementedError),
        (((2, 3), (1, 1, 1, 1)), {"mode": "replicate"}, NotImplementedError),
        (((2, 3), (1, 1)), {"mode": "foo"}, NotImplementedError),
        (((2, 3), (1, 1)), {"mode": "reflect", "value": 1.0}, RuntimeError),
        (((2, 0), (1, 1)), {"mode": "replicate"}, RuntimeError),
        (((1, 2, 3), (4, 1)), {"mode": "circular"}, RuntimeError),
        (((2, 3), (-2, -2)), {}, RuntimeError),
    ]
    for (shape, pad), kw, exc in cases:
        raises_like(exc, lambda: ignis.nn.functional.pad(ignis.ones(*shape), pad, **kw),
                    lambda: F.pad(torch.ones(*shape), pad, **kw))


# ---- index / index_put_ ---------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_index_put_every_dtype(dtype):
    a = np_data((4, 3), dtype)
    v = np_data((3,), dtype)
    idx = np.array([2, 0, 2])
    for acc in (False, True):
        x, t = ig(a, dtype), th(a, dtype)
        x.index_put_((ig(idx),), ig(v, dtype)[:, None].expand(3, 3) if acc else ig(v, dtype),
                     accumulate=acc)
        t.index_put_((th(idx),), th(v, dtype)[:, None].expand(3, 3) if acc else th(v, dtype),
                     accumulate=acc)
        same(x, t)


@needs_torch
def test_index_put_forms():
    a = np_data((3, 4, 5))
    i, j = np.array([[0], [2]]), np.array([1, 3, 3])
    for acc in (False, True):
        x = ig(a)
        x.index_put_((ig(i), None, ig(j)), ignis.tensor(1.5), accumulate=acc)
        b = a.copy()
        if acc:
            np.add.at(b, (i, slice(None), j), np.float32(1.5))
        else:
            b[i, :, j] = 1.5
        np.testing.assert_array_equal(to_np(x), b)
    # Masks, 0-dim values of another dtype, out-of-place form.
    m = np.arange(60).reshape(3, 4, 5) % 4 == 0
    same(ignis.index_put(ig(a), (ig(m),), ignis.tensor(2.0, dtype=ignis.float64)),
         torch.index_put(th(a), (th(m),), torch.tensor(2.0, dtype=torch.float64)))
    same(ig(a).index_put((ig(np.array([1, 1])),), ignis.ones(2, 4, 5), accumulate=True),
         th(a).index_put((th(np.array([1, 1])),), torch.ones(2, 4, 5), accumulate=True))


@needs_torch
def test_index_put_errors():
    raises_like(RuntimeError,
                lambda: ignis.zeros(3).index_put_((ignis.tensor([0]),), ignis.tensor([1.0, 2.0])),
                lambda: torch.zeros(3).index_put_((torch.tensor([0]),), torch.tensor([1.0, 2.0])))
    raises_like(RuntimeError,
                lambda: ignis.zeros(3).index_put_((ignis.tensor([0]),),
                                                  ignis.tensor([1.0], dtype=ignis.float64)),
                lambda: torch.zeros(3).index_put_((torch.tensor([0]),),
                                                  torch.tensor([1.0], dtype=torch.float64)))
    raises_like(IndexError, lambda: ignis.zeros(3).index_put_((ignis.tensor([3]),), ignis.tensor(1.0)),
                lambda: torch.zeros(3).index_put_((torch.tensor([3]),), torch.tensor(1.0)))
    x = ignis.zeros(3, device="meta")
    assert x.index_put_((ignis.tensor([0]),), ignis.tensor(1.0)) is x


def test_index_op_direct_and_meta():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    r = ignis.index(ig(a), [None, ignis.tensor([2, 0])])
    np.testing.assert_array_equal(to_np(r), a[:, [2, 0]])
    with pytest.raises(IndexError):
        ignis.index(ig(a), [])
    with pytest.raises(IndexError):
        ignis.index(ig(a), [None, None, None, ignis.tensor([0])])
    m = meta(2, 3, 4)
    assert m[:, [0, 2]].shape == (2, 2, 4)
    assert m[ignis.tensor([[0, 1]]), :, ignis.tensor([1])].shape == (1, 2, 3)
    with pytest.raises(NotImplementedError):
        m[ignis.ones(2, 3, dtype=ignis.bool)]


# ---- nonzero / masked_select / where / take ---------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_every_dtype(dtype):
    a = np_data((3, 4, 2), dtype, lo=-1, hi=2)
    same(ignis.nonzero(ig(a, dtype)), torch.nonzero(th(a, dtype)))
    same(ig(a, dtype).transpose(0, 2).nonzero(), th(a, dtype).transpose(0, 2).nonzero())
    np.testing.assert_array_equal(to_np(ignis.nonzero(ig(a, dtype))), np.argwhere(a))


@needs_torch
def test_nonzero_special_values_and_shapes():
    a = np.array([0.0, -0.0, np.nan, 1.0, np.inf], dtype=np.float32)
    same(ignis.nonzero(ig(a)), torch.nonzero(th(a)))
    same(ignis.nonzero(ignis.tensor(1.0)), torch.nonzero(torch.tensor(1.0)))
    same(ignis.nonzero(ignis.tensor(0)), torch.nonzero(torch.tensor(0)))
    same(ignis.nonzero(ignis.zeros(0, 3)), torch.nonzero(torch.zeros(0, 3)))
    with pytest.raises(NotImplementedError):
        ignis.nonzero(meta(2, 3))


@needs_torch
def test_masked_select_where_take():
    a = np_data((3, 4))
    m = np.array([True, False, True, True])
    same(ignis.masked_select(ig(a), ig(m)), torch.masked_select(th(a), th(m)))
    same(ignis.masked_select(ignis.tensor(2.0), ignis.ones(2, 2, dtype=ignis.bool)),
         torch.masked_select(torch.tensor(2.0), torch.ones(2, 2, dtype=torch.bool)))
    raises_like(RuntimeError, lambda: ignis.masked_select(ig(a), ig(m.astype(np.int64))),
                lambda: torch.masked_select(th(a), th(m.astype(np.int64))))
    with pytest.raises(NotImplementedError):
        ignis.masked_select(meta(2, 3), ignis.empty(2, 3, dtype=ignis.bool, device="meta"))
    for c in (a > 0, np.array(1.0), np.zeros((2, 0))):
        r, e = ignis.where(ig(c)), torch.where(th(c))
        assert len(r) == len(e)
        for x, y in zip(r, e):
            same(x, y)
    i = np.array([[5, -12], [0, 11]])
    same(ignis.take(ig(a), ig(i)), torch.take(th(a), th(i)))
    same(ig(a).t().take(ig(i)), th(a).t().take(th(i)))
    raises_like(IndexError, lambda: ignis.take(ig(a), ignis.tensor([12])),
                lambda: torch.take(th(a), torch.tensor([12])))
    raises_like(RuntimeError, lambda: ignis.take(ig(a), ignis.tensor([1], dtype=ignis.int32)),
                lambda: torch.take(th(a), torch.tensor([1], dtype=torch.int32)))


# ---- large inputs (the threaded paths) --------------------------------------------------------------
@needs_torch
def test_large_inputs_threaded_paths():
    a = np_data((300, 400))
    x, t = ig(a), th(a)
    idx = RNG.integers(0, 300, size=(300, 400))
    same(x.gather(0, ig(idx)), t.gather(0, th(idx)))
    same(x.scatter_add(0, ig(idx), x), t.scatter_add(0, th(idx), t))
    same(x[x > 0], t[t > 0])
    same(x.nonzero(), t.nonzero())
    same(x.flip(0, 1), t.flip(0, 1))
    same(x.t()[[5, 1, 299]], t.t()[[5, 1, 299]])
    same(x[:, [3, 7]], t[:, [3, 7]])
    same(ignis.roll(x, 1234), torch.roll(t, 1234))
    same(ignis.tril(x, 3), torch.tril(t, 3))
    same(ignis.cat([x, x.t()[:300]], 1), torch.cat([t, t.t()[:300]], 1))
    same(ignis.nn.functional.pad(x[None], (5, 5), mode="reflect"),
         torch.nn.functional.pad(t[None], (5, 5), mode="reflect"))
    # Threads split the leading dim; repeated columns add up in order.
    cols = RNG.integers(0, 400, size=500)
    z = x.clone()
    z.index_put_((None, ig(cols)), ignis.ones(300, 500), accumulate=True)
    b = a.copy()
    np.add.at(b, (slice(None), cols), np.float32(1))
    np.testing.assert_array_equal(to_np(z), b)
    y, u = x.clone(), t.clone()
    rows = RNG.integers(0, 300, size=50000)
    y.index_put_((ig(rows), ig(rows % 400)), ignis.ones(50000), accumulate=True)
    u.index_put_((th(rows), th(rows % 400)), torch.ones(50000), accumulate=True)
    same(y, u)


# ---- index_add / index_copy / index_fill / take_along_dim / scatter_reduce ---------------------
@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_index_add_copy_fill_every_dtype(dtype):
    a = np_data((4, 3), dtype)
    src = np_data((3, 3), dtype)
    idx = np.array([2, 0, 2])
    x, t = ig(a, dtype), th(a, dtype)
    if dtype != "bool":
        same(x.index_add(0, ig(idx), ig(src, dtype)), t.index_add(0, th(idx), th(src, dtype)))
        src4 = np_data((4, 3), dtype)
        same(x.index_add(1, ig(idx % 3).int(), ig(src4, dtype), alpha=2),
             t.index_add(1, th(idx % 3).int(), th(src4, dtype), alpha=2))
    same(x.index_copy(0, ig(np.array([3, 1, 0])), ig(src, dtype)),
         t.index_copy(0, th(np.array([3, 1, 0])), th(src, dtype)))
    same(x.index_fill(1, ig(np.array([0, -1])), 1), t.index_fill(1, th(np.array([0, -1])), 1))
    same(x.t().index_fill(0, ignis.tensor(1), ignis.tensor(0)),
         t.t().index_fill(0, torch.tensor(1), torch.tensor(0)))


@needs_torch
def test_index_add_copy_fill_inplace_and_errors():
    a = np_data((3, 4))
    x, t = ig(a), th(a)
    assert x.index_add_(1, ignis.tensor([0, 0]), ignis.ones(3, 2), alpha=0.5) is x
    t.index_add_(1, torch.tensor([0, 0]), torch.ones(3, 2), alpha=0.5)
    x.index_copy_(0, ignis.tensor([2]), ignis.zeros(1, 4))
    t.index_copy_(0, torch.tensor([2]), torch.zeros(1, 4))
    x.index_fill_(1, ignis.tensor([3]), -2.0)
    t.index_fill_(1, torch.tensor([3]), -2.0)
    same(x, t)
    cases = [
        (lambda M, x: x.index_add(0, M.tensor([0, 5]), M.ones(2, 4)), RuntimeError),
        (lambda M, x: x.index_add(0, M.tensor([0, -1]), M.ones(2, 4)), RuntimeError),
        (lambda M, x: x.index_add(0, M.tensor([0, 1]), M.ones(2, 3)), RuntimeError),
        (lambda M, x: x.index_add(0, M.tensor([0, 1]), M.ones(2, 4, dtype=M.float64)), RuntimeError),
        (lambda M, x: x.index_add(0, M.tensor([[0]]), M.ones(1, 4)), IndexError),
        (lambda M, x: x.index_copy(0, M.tensor([3]), M.ones(1, 4)), IndexError),
        (lambda M, x: x.index_copy(0, M.tensor([0], dtype=M.int32), M.ones(1, 4)), RuntimeError),
        (lambda M, x: x.index_fill(1, M.tensor([4]), 1.0), IndexError),
        (lambda M, x: x.index_fill(1, M.tensor([0], dtype=M.int32), 1.0), IndexError),
        (lambda M, x: x.index_fill(1, M.tensor([0]), M.tensor([1.0])), RuntimeError),
    ]
    for f, exc in cases:
        raises_like(exc, lambda: f(ignis, ig(a)), lambda: f(torch, th(a)))
    assert meta(3, 4).index_add(0, ignis.empty(2, dtype=ignis.int64, device="meta"),
                                meta(2, 4)).shape == (3, 4)


@needs_torch
def test_take_along_dim():
    a = np_data((3, 4))
    for idx, dim in (([[0], [1], [2]], 1), ([[2], [0]], 0), ([[3, 1, 0]], 1), ([5, 1, 11], None)):
        i = np.array(idx)
        same(ignis.take_along_dim(ig(a), ig(i), dim), torch.take_along_dim(th(a), th(i), dim))
        if dim is not None and i.shape[0] == a.shape[0]:
            np.testing.assert_array_equal(to_np(ignis.take_along_dim(ig(a), ig(i), dim)),
                                          np.take_along_axis(a, i, dim))
    raises_like(RuntimeError, lambda: ignis.take_along_dim(ig(a), ignis.tensor([[1]], dtype=ignis.int32), 1),
                lambda: torch.take_along_dim(th(a), torch.tensor([[1]], dtype=torch.int32), 1))
    with pytest.raises(RuntimeError):  # PyTorch reads out of bounds here; ignis checks
        ignis.take_along_dim(ig(a), ignis.tensor([[5]]), 1)


def _nan_same(a, b):
    assert dname(a) == dname(b)
    np.testing.assert_array_equal(to_np(a), to_np(b))  # NaNs compare equal here


@needs_torch
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", ["int8", "int64", "bfloat16", "float32"])
def test_scatter_reduce(reduce, dtype):
    a = np_data((4, 3), dtype)
    src = np_data((5, 3), dtype)
    if dtype == "float32":
        src[1, 1] = np.nan
    idx = np.array([[0, 1, 3], [3, 3, 3], [0, 2, 1], [1, 1, 1], [0, 0, 2]])
    for inc in (True, False):
        _nan_same(ig(a, dtype).scatter_reduce(0, ig(idx), ig(src, dtype), reduce, include_self=inc),
                  th(a, dtype).scatter_reduce(0, th(idx), th(src, dtype), reduce, include_self=inc))
    x, t = ig(a, dtype).t(), th(a, dtype).t()
    x.scatter_reduce_(1, ig(idx[:3] % 4).t(), ig(src, dtype)[:3].t(), reduce)
    t.scatter_reduce_(1, th(idx[:3] % 4).t(), th(src, dtype)[:3].t(), reduce)
    _nan_same(x, t)


@needs_torch
def test_scatter_reduce_errors():
    a = np_data((3,))
    raises_like(RuntimeError, lambda: ig(a).scatter_reduce(0, ignis.tensor([0]), ignis.ones(1), "foo"),
                lambda: th(a).scatter_reduce(0, torch.tensor([0]), torch.ones(1), "foo"))
    raises_like(RuntimeError, lambda: ig(a).scatter_reduce(0, ignis.tensor([3]), ignis.ones(1), "sum"),
                lambda: th(a).scatter_reduce(0, torch.tensor([3]), torch.ones(1), "sum"))


# ---- random index expressions ------------------------------------------------------------------
def _random_index(rng, shape):
    """A random tuple of index items for a tensor of `shape`, as (ignis, torch) pairs."""
    items, dim = [], 0
    adv_shapes = [(2,), (1,), (2, 1), (3,)]
    for _ in range(rng.integers(1, 5)):
        kind = rng.choice(["int", "slice", "none", "ellipsis", "list", "tensor", "mask"])
        n = shape[dim] if dim < len(shape) else None
        if kind == "none":
            items.append((None, None))
        elif kind == "ellipsis":
            items.append((Ellipsis, Ellipsis))
            break
        elif n is None:
            break
        elif kind == "int":
            v = int(rng.integers(-n, n))
            items.append((v, v))
            dim += 1
        elif kind == "slice":
            s = slice(int(rng.integers(-n - 1, n + 1)), int(rng.integers(-n - 1, n + 2)),
                      int(rng.integers(1, 3)))
            items.append((s, s))
            dim += 1
        elif kind == "list":
            v = [int(x) for x in rng.integers(-n, n, size=rng.integers(0, 3))]
            items.append((v, v))
            dim += 1
        elif kind == "tensor":
            a = rng.integers(-n, n, size=adv_shapes[rng.integers(0, 4)])
            items.append((ignis.tensor(a), torch.tensor(a)))
            dim += 1
        else:
            m = rng.integers(0, 2, size=n).astype(bool)
            items.append((ignis.tensor(m), torch.tensor(m)))
            dim += 1
    return tuple(i for i, _ in items), tuple(t for _, t in items)


@needs_torch
def test_random_index_expressions_match_torch():
    rng = np.random.default_rng(1234)
    a = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    for _ in range(300):
        ii, ti = _random_index(rng, a.shape)
        x, t = ig(a), th(a)
        try:
            expected = t[ti]
        except Exception as e:  # noqa: BLE001 - the same exception type is expected
            with pytest.raises(type(e)):
                x[ii]
            continue
        same(x[ii], expected)
        # Assignment through the same index, of a broadcastable value.
        t[ti] = -1.0
        x[ii] = -1.0
        same(x, t)


# ---- the layouts index's kernel takes apart ------------------------------------------------
@pytest.mark.parametrize("idx_dtype", ["int64", "int32"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "expanded"])
def test_row_gathers_and_accumulating_puts_in_every_index_layout(idx_dtype, layout):
    # Contiguous index tensors take a typed pass (and a branch-free range
    # check); transposed and expanded ones walk their strides. Negative
    # values count from the end in both.
    w = np_data((7, 5)).astype(np.float32)
    raw = RNG.integers(-7, 7, size=(4, 6)).astype(idx_dtype)
    idx = {"contiguous": raw, "transposed": raw.T, "expanded": np.broadcast_to(raw[:1], (4, 6))}
    i_np = idx[layout]
    i_ig = ignis.from_numpy(np.ascontiguousarray(raw))
    i_ig = {"contiguous": i_ig, "transposed": i_ig.t(), "expanded": i_ig[:1].expand(4, 6)}[layout]
    assert i_ig.is_contiguous() == (layout == "contiguous")
    np.testing.assert_array_equal(ig(w)[i_ig].numpy(), w[i_np])
    np.testing.assert_array_equal(ig(w)[:, i_ig % 5].numpy(), w[:, i_np % 5])
    # Values broadcast along B (one row per index row: B's strides do not
    # merge) and along everything (stride 0): accumulate matches np.add.at.
    for vals in (np_data(i_np.shape[:1] + (1, 5)).astype(np.float32),
                 np_data((5,)).astype(np.float32)):
        out = ig(w).index_put_((i_ig,), ig(vals), accumulate=True)
        ref = w.copy()
        np.add.at(ref, i_np, np.broadcast_to(vals, i_np.shape + (5,)))
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)
    bad = raw.copy()
    bad.flat[13] = 9
    bad.flat[17] = -11
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 7"):
        ig(w)[ignis.from_numpy(bad)]

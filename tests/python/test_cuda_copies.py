"""Strided copies on CUDA (kernels/cuda/copy.cpp): the row copy (Note [Row
copies]) that moves rows of bytes (one dtype) or converts rows of units
(between floating dtypes) when both layouts keep the innermost dim
contiguous, and the element kernel for everything else, against the CPU's
copies of the same layouts, in dtypes of every width.

Runs on a GPU and against the fake driver (tests/cuda_fake/run.sh), which
also names the kernel each copy launches.
"""
import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn.functional as F
from _fake_launches import launched, require_fake_gpu

AVAILABLE = ignis.cuda.is_available()
REASON = ignis._C._cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(not AVAILABLE, reason=f"no usable CUDA GPU here: {REASON}")
DTYPES = ["bool", "int8", "float16", "bfloat16", "float32", "int64", "float64"]


def _sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-50, 50, size=shape)
    t = ignis.from_numpy(a)
    return t.to(getattr(ignis, dtype))


def _same(got, want):
    assert got.device.type == "cuda" and got.dtype == want.dtype
    assert tuple(got.shape) == tuple(want.shape)
    g, w = got.cpu(), want
    if w.dtype in (ignis.bfloat16, ignis.float16):
        g, w = g.float(), w.float()
    np.testing.assert_array_equal(g.numpy(), w.numpy())


# Each case: a function of a tensor that makes a copy through some layout.
CASES = {
    # [B, H, T, D] -> [B, T, H, D]: the attention output's way back.
    "transpose_keeps_last": lambda x: x.permute(0, 2, 1, 3).contiguous(),
    "slice_of_rows": lambda x: x[:, 1:3].contiguous(),
    "slice_at_odd_offset": lambda x: x[..., 1:].contiguous(),  # narrower units
    "broadcast": lambda x: x[None].expand(3, *x.shape).contiguous(),
    "cat_last_dim": lambda x: ignis.cat([x, x[..., :3], x], -1),
    "cat_dim_1": lambda x: ignis.cat([x, x[:, :1]], 1),
    "into_a_transposed_dst": lambda x: ignis.empty(
        (x.shape[0], x.shape[2], x.shape[1], x.shape[3]), dtype=x.dtype,
        device=x.device).transpose(1, 2).copy_(x),
    # Converting: between floating dtypes as rows, from others by elements.
    "into_a_transposed_float32_dst": lambda x: ignis.empty(
        (x.shape[0], x.shape[2], x.shape[1], x.shape[3]), dtype=ignis.float32,
        device=x.device).transpose(1, 2).copy_(x),
    "into_a_sliced_bfloat16_dst": lambda x: ignis.zeros(
        (*x.shape[:-1], x.shape[-1] + 4), dtype=ignis.bfloat16,
        device=x.device)[..., 2:-2].copy_(x),
    # No unit-stride innermost dim: the element kernel.
    "full_transpose": lambda x: x.transpose(-1, -2).contiguous(),
    "every_other_column": lambda x: x[..., ::2].contiguous(),
}


@needs_gpu
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_copies_match_cpu(dtype, case):
    for shape in [(2, 3, 5, 8), (2, 4, 3, 7), (1, 2, 65, 64)]:
        x = _sample(shape, dtype)
        _same(CASES[case](x.cuda()), CASES[case](x))


@needs_gpu
def test_a_copy_of_many_merged_dims_and_an_empty_one():
    x = _sample((2, 1, 3, 1, 4, 5, 6), "float32")
    y = x.permute(0, 1, 2, 3, 5, 4, 6)  # the last dim stays innermost
    _same(y.cuda().contiguous(), y.contiguous())
    e = _sample((0, 4, 8), "float32")
    _same(e.cuda().transpose(0, 1).contiguous(), e.transpose(0, 1).contiguous())


@needs_gpu
def test_the_kernel_each_layout_runs(capfd):
    require_fake_gpu()
    x = _sample((2, 3, 4, 64), "bfloat16").cuda()
    f32 = ignis.empty((2, 4, 3, 64), dtype=ignis.float32, device="cuda").transpose(1, 2)
    xt = x.transpose(-1, -2)
    cases = [
        # One dtype: bytes, 16 a unit where everything divides by 16.
        (lambda: x.permute(0, 2, 1, 3).contiguous(), "copy_rows_uint8_uint8_v16_i32"),
        (lambda: x[..., 1:].contiguous(), "copy_rows_uint8_uint8_v2_i32"),  # 126-byte rows
        (lambda: x[..., 4:8].contiguous(), "copy_rows_uint8_uint8_v8_i32"),  # 8 bytes in
        # Between floating dtypes: 16 bytes of the wider side a unit.
        (lambda: f32.copy_(x), "copy_rows_float32_bfloat16_v4_i32"),
        (lambda: x.copy_(f32), "copy_rows_bfloat16_float32_v4_i32"),
        # No contiguous innermost dim, or an integer dtype: an element a thread.
        (lambda: xt.contiguous(), "copy_strided_bfloat16_bfloat16"),
        (lambda: ignis.empty(xt.shape, device="cuda").copy_(xt), "copy_strided_float32_bfloat16"),
        (lambda: f32.copy_(x.to(ignis.int32)), "copy_strided_float32_int32"),
    ]
    for run, name in cases:
        assert name in launched(capfd, run), name


# Gathers of rows (Note [Mapped copies in units], kernels/cuda/index_kernels.cpp):
# a row's bytes move 16, 8 or 4 at a time where the base pointers and every
# offset divide by the unit, else an element at a time.
GATHERS = {
    "getitem": lambda w, i: w[i],
    "getitem_negative": lambda w, i: w[-i - 1],
    "index_select": lambda w, i: ignis.index_select(w, 0, i.flatten()),
    "embedding": lambda w, i: F.embedding(i, w) if w.is_floating_point() else w[i],
    "column_slice_at_offset_1": lambda w, i: w[:, 1:][i],
    "rows_of_a_3d_weight": lambda w, i: w.view(w.shape[0], 1, -1)[i],
    "two_index_tensors": lambda w, i: w.view(w.shape[0], 1, -1)[i, ignis.zeros_like(i)],
}


@needs_gpu
@pytest.mark.parametrize("case", list(GATHERS))
@pytest.mark.parametrize("cols", [768, 12, 6, 5])
@pytest.mark.parametrize("dtype", DTYPES)
def test_row_gathers_match_cpu(dtype, cols, case):
    w = _sample((40, cols), dtype, seed=cols)
    i = ignis.tensor([[3, 0, 39], [38, 7, 3]])
    _same(GATHERS[case](w.cuda(), i.cuda()), GATHERS[case](w, i))


@needs_gpu
def test_the_unit_each_gather_moves(capfd):
    require_fake_gpu()
    w = _sample((40, 768), "bfloat16").cuda()
    i = ignis.tensor([[3, 0], [39, -2]]).cuda()
    cases = [
        (lambda: w[i], "map_copy_16"),                # 1536-byte rows
        (lambda: F.embedding(i, w), "map_copy_16"),
        (lambda: w[:, 4:8][i], "map_copy_8"),         # 8 bytes, 8 bytes in
        (lambda: w[:, 1:][i], "map_copy_2"),          # the base 2 bytes off: by elements
        (lambda: w.float()[:, :3][i], "map_copy_4"),  # 12-byte rows: no unit wider than a float
        (lambda: w.t()[i[:, :1].clamp(0, 767)], "map_copy_2"),  # no unit-stride innermost dim
    ]
    for run, name in cases:
        assert name in launched(capfd, run), name
    # an out-of-range row is still found, raised at the next synchronization
    bad = ignis.tensor([1, 40]).cuda()
    with pytest.raises(IndexError, match="index 40 is out of bounds"):
        w[bad]
        ignis.cuda.synchronize()

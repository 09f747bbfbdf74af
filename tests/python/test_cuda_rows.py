"""The vectorised row kernels on CUDA (kernels/cuda/row_kernels.cpp, Note [Row
kernels keep the row in registers]): softmax, log_softmax, safe softmax and
their backward, layer norm and its backward, against the CPU kernels.

Every variant the launcher picks is reached by the row lengths below: a warp
a row (up to 32 x 32 elements, several rows a block), several warps a row
(4096), a row too long for the registers (20000: read again by each pass),
vectors of 16 bytes and narrower ones (lengths that are not a multiple of
the vector, inputs sliced at odd offsets: scalar loads), and rows that are
not contiguous (copied first). The no-GPU part checks that every (V, NV)
variant is in the NVRTC catalog (test_cuda_ops.py compiles the catalog).

The GPU part skips without a GPU. Against the fake driver
(tests/cuda_fake/run.sh) the kernels run one thread a block; with
FAKE_CUDA_BLOCK_THREADS=1 they run with real threads per block, so the warp
shuffles and the shared-memory merge across warps are exercised too:

    FAKE_CUDA_TESTS=test_cuda_rows.py FAKE_CUDA_BLOCK_THREADS=1 \\
      IGNIS_NVRTC_LIBRARY=... bash tests/cuda_fake/run.sh build-wt
"""

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
from _fake_launches import launched, require_fake_gpu

AVAILABLE = ignis.cuda.is_available()
REASON = ignis._C._cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(not AVAILABLE, reason=f"no usable CUDA GPU here: {REASON}")

FLOATS = ["float16", "bfloat16", "float32", "float64"]
LENGTHS = [1, 7, 31, 32, 33, 1000, 4096, 20000]
_TOL = {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (2e-5, 1e-6),
        "float64": (1e-10, 1e-10)}
_rng = np.random.default_rng(7)


def _rows(D):
    # Short rows share blocks (8 warps a block): 9 rows leave the second
    # block partly empty.
    return 9 if D <= 1024 else 3


def _sample(shape, dtype):
    return ignis.tensor(_rng.random(shape) * 4 - 2).to(getattr(ignis, dtype))


def _np(t):
    t = t.detach().cpu()
    if t.dtype in (ignis.bfloat16, ignis.float16):
        t = t.float()
    return t.numpy()


def _close(got, want, dtype, scale=1.0, cancels=False, terms=0.0):
    """Within the dtype's tolerance times `scale`; `cancels`: a gradient whose
    terms cancel (layer norm's), whose absolute error scales with the
    largest element (or with `terms`, the size of the terms that cancel)
    rather than with each one."""
    assert got.device.type == "cuda"
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    rtol, atol = _TOL[dtype]
    a, b = _np(got), _np(want)
    if cancels and b.size:
        atol = max(atol, rtol * float(np.nanmax(np.abs(b))), rtol * terms)
    np.testing.assert_allclose(a, b, rtol=rtol * scale, atol=atol * scale, equal_nan=True)


def _misaligned(cpu, offset):
    """`cpu`'s values on CUDA as a contiguous view `offset` elements into a
    larger buffer (so its data pointer is not 16-byte aligned)."""
    flat = ignis.zeros(cpu.numel() + offset, dtype=cpu.dtype).cuda()
    view = flat[offset:].view(tuple(cpu.shape))
    view.copy_(cpu.cuda())
    assert view.is_contiguous()
    return view


SOFTMAXES = {"softmax": lambda a: ignis.softmax(a, -1),
             "log_softmax": lambda a: ignis.log_softmax(a, -1),
             "safe_softmax": lambda a: ignis.ops._safe_softmax(a, -1)}


def _check_softmax(fn, x_cpu, x_cuda, g_cpu, g_cuda, dtype):
    """Forward and backward (y.backward(g): the fused backward kernel, grad
    mode off) of fn on both devices."""
    xc = x_cpu.clone().requires_grad_()
    xg = x_cuda.detach().requires_grad_()
    yc, yg = fn(xc), fn(xg)
    _close(yg, yc, dtype)
    yc.backward(g_cpu)
    yg.backward(g_cuda)
    # The CPU rounds each op of the derivative to the dtype; the kernel
    # rounds once: allow a few roundings of the 16-bit intermediates.
    _close(xg.grad, xc.grad, dtype, scale=4 if dtype in ("float16", "bfloat16") else 10)


# ---- everywhere -----------------------------------------------------------------------------

def test_every_row_variant_is_in_the_nvrtc_catalog():
    units = {u[0]: u[1] for u in ignis._C._cuda_eager_kernel_units()}
    for dtype, widths in [("float16", (1, 2, 4, 8)), ("bfloat16", (1, 2, 4, 8)),
                          ("float32", (1, 2, 4)), ("float64", (1, 2))]:
        src = units[f"rows_{dtype}.cu"]
        for k in ("softmax_rows", "softmax_bwd_rows", "layer_norm", "layer_norm_bwd_rows"):
            for v in widths:
                for nv in (1, 2, 4, 8):
                    name = f"{k}_{dtype}_v{v}_n{nv}("
                    assert (name in src) == (nv * v <= 32), name


# ---- on a GPU -------------------------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("D", LENGTHS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_rows_and_their_backward(dtype, D):
    x = _sample((_rows(D), D), dtype)
    g = _sample((_rows(D), D), dtype)
    for name, fn in SOFTMAXES.items():
        _check_softmax(fn, x, x.cuda(), g, g.cuda(), dtype)


@needs_gpu
@pytest.mark.parametrize("D", LENGTHS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm_rows_and_their_backward(dtype, D):
    shape = (_rows(D), D)
    x, g = _sample(shape, dtype), _sample(shape, dtype)
    acc = ignis.float64 if dtype == "float64" else ignis.float32
    for affine in (True, False):
        w = _sample((D,), dtype) if affine else None
        b = _sample((D,), dtype) if affine else None

        def fwd(xx, ww, bb):
            return ignis.ops.native_layer_norm(xx, [D], ww, bb, 1e-5)

        want = fwd(x, w, b)
        got = fwd(x.cuda(), w.cuda() if affine else None, b.cuda() if affine else None)
        mean, rstd = want[1].to(acc), want[2].to(acc)
        # x - mean cancels; its rounding is scaled by rstd (~316 for a row of
        # one element, whose exact output is 0 or the bias).
        terms = 4 * float(rstd.abs().max()) * (2 if affine else 1)
        for a, e in zip(got, want):
            _close(a, e, dtype, scale=10, cancels=True, terms=terms)

        def bwd(gg, xx, ww, bb, m, r):
            return ignis.ops.native_layer_norm_backward(gg, xx, [D], m, r, ww, bb)

        want = bwd(g, x, w, b, mean, rstd)
        cu = [t.cuda() if t is not None else None for t in (g, x, w, b, mean, rstd)]
        got = bwd(*cu)
        for a, e in zip(got, want):
            if e is None:
                assert a is None
                continue
            _close(a, e, dtype, scale=10 if D < 4096 else 40, cancels=True, terms=terms)


@needs_gpu
@pytest.mark.parametrize("offset", [1, 2, 3])
@pytest.mark.parametrize("dtype", FLOATS)
def test_rows_at_misaligned_starts(dtype, offset):
    """Inputs sliced at an odd offset: the vector halves until every pointer
    is aligned to it (down to scalar loads)."""
    for D in (32, 1000, 4096):
        shape = (_rows(D), D)
        x, g = _sample(shape, dtype), _sample(shape, dtype)
        xm, gm = _misaligned(x, offset), _misaligned(g, offset)
        for fn in SOFTMAXES.values():
            _check_softmax(fn, x, xm, g, gm, dtype)
        w, b = _sample((D,), dtype), _sample((D,), dtype)
        want = ignis.ops.native_layer_norm(x, [D], w, b, 1e-5)
        got = ignis.ops.native_layer_norm(xm, [D], _misaligned(w, offset),
                                          _misaligned(b, offset), 1e-5)
        for a, e in zip(got, want):
            _close(a, e, dtype, scale=10)
        xc, xg = x.clone().requires_grad_(), xm.detach().requires_grad_()
        ignis.layer_norm(xc, [D], w, b).backward(g)
        ignis.layer_norm(xg, [D], w.cuda(), b.cuda()).backward(gm)
        _close(xg.grad, xc.grad, dtype, scale=10, cancels=True)


@needs_gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_rows_that_are_not_contiguous(dtype):
    x = _sample((40, 6), dtype)
    g = _sample((6, 40), dtype)
    for fn in SOFTMAXES.values():
        _check_softmax(lambda a: fn(a.t()), x, x.cuda(), g, g.cuda(), dtype)
    xs = _sample((5, 64), dtype)
    for a, e in zip(ignis.ops.native_layer_norm(xs.cuda()[:, ::2], [32], None, None, 1e-5),
                    ignis.ops.native_layer_norm(xs[:, ::2], [32], None, None, 1e-5)):
        _close(a, e, dtype, scale=10)


@needs_gpu
def test_softmax_backward_of_masked_rows():
    """Rows of -inf entries: the fused backward gives the CPU's values (NaN
    for a row of nothing but -inf under softmax, 0 under safe softmax)."""
    inf = float("-inf")
    x = ignis.tensor([[inf] * 40, [0.0, inf, 1.0, 2.0] * 10, [inf, 3.0] * 20])
    g = _sample((3, 40), "float32")
    for fn in SOFTMAXES.values():
        _check_softmax(fn, x, x.cuda(), g, g.cuda(), "float32")


def _layer_norm_backward(shape, dtype):
    x, g = _sample(shape, dtype).cuda(), _sample(shape, dtype).cuda()
    w, b = _sample(shape[-1:], dtype).cuda(), _sample(shape[-1:], dtype).cuda()
    _, mean, rstd = ignis.ops.native_layer_norm(x, [shape[-1]], w, b, 1e-5)
    return ignis.ops.native_layer_norm_backward(g, x, [shape[-1]], mean, rstd, w, b)


@needs_gpu
def test_the_variant_the_launcher_picks(capfd):
    """Which kernel runs (the fake driver's launch log names it): 16-byte
    vectors where the row and pointers allow, as many per thread as the row
    needs, narrower vectors otherwise."""
    require_fake_gpu()
    cases = [
        (lambda: ignis.softmax(_sample((3, 8192), "bfloat16").cuda(), -1),
         "softmax_rows_bfloat16_v8_n4"),  # 256 threads x 4 vectors of 8
        (lambda: ignis.softmax(_sample((3, 4096), "float32").cuda(), -1),
         "softmax_rows_float32_v4_n8"),  # 128 threads x 8 vectors of 4
        (lambda: ignis.softmax(_sample((3, 100), "float32").cuda(), -1),
         "softmax_rows_float32_v4_n1"),  # a warp
        (lambda: ignis.softmax(_sample((3, 7), "float16").cuda(), -1),
         "softmax_rows_float16_v1_n1"),
        (lambda: ignis.softmax(_misaligned(_sample((3, 64), "float32"), 2), -1),
         "softmax_rows_float32_v2_n1"),
        (lambda: ignis.layer_norm(_sample((2, 20000), "bfloat16").cuda(), [20000]),
         "layer_norm_bfloat16_v8_n4"),  # 512 threads, read again per pass
        # Note [Layer norm's backward in one pass]: the weight's and bias's
        # gradients in the row kernel, its slices' partials added after; a
        # row for 512 threads keeps the column kernel.
        (lambda: _layer_norm_backward((300, 4096), "bfloat16"), "layer_norm_bwd_fold_bfloat16_v8_n4_pT"),
        (lambda: _layer_norm_backward((300, 4096), "bfloat16"), "layer_norm_bwd_cols_sum_bfloat16"),
        (lambda: _layer_norm_backward((4, 20000), "bfloat16"), "layer_norm_bwd_cols_bfloat16_v8"),
    ]
    for run, name in cases:
        assert name in launched(capfd, run), name


@needs_gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_layer_norm_weight_and_bias_grads_over_many_rows(dtype):
    """grad_weight and grad_bias sum over the rows in slices (so that the grid
    fills the GPU) whose partial sums a second kernel adds: 3000 rows."""
    shape = (3000, 24)
    x, g = _sample(shape, dtype), _sample(shape, dtype)
    w, b = _sample((24,), dtype), _sample((24,), dtype)
    acc = ignis.float32
    _, mean, rstd = ignis.ops.native_layer_norm(x, [24], w, b, 1e-5)
    args = [g, x, mean.to(acc), rstd.to(acc), w, b]
    want = ignis.ops.native_layer_norm_backward(*args[:2], [24], *args[2:])
    cu = [a.cuda() for a in args]
    got = ignis.ops.native_layer_norm_backward(*cu[:2], [24], *cu[2:])
    for a, e in zip(got, want):
        _close(a, e, dtype, scale=40, cancels=True)


@needs_gpu
@pytest.mark.parametrize("D", [24, 1024])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_layer_norm_parameters_and_statistics_in_either_dtype(dtype, D):
    """16-bit weight, bias, mean and rstd are read as they are (widened in the
    kernel: no conversion launch) and float32 ones as before: the same
    values as the CPU's either way, forward and backward."""
    shape = (300, D)
    x, g = _sample(shape, dtype), _sample(shape, dtype)
    w16, b16 = _sample((D,), dtype), _sample((D,), dtype)
    w32, b32 = w16.float(), b16.float()
    for w, b in ((w16, b16), (w32, b32), (w16, None), (None, b32)):
        want = ignis.ops.native_layer_norm(x, [D], w, b, 1e-5)
        got = ignis.ops.native_layer_norm(x.cuda(), [D], *(t.cuda() if t is not None else None
                                                           for t in (w, b)), 1e-5)
        for a, e in zip(got, want):
            _close(a, e, dtype, scale=10, cancels=True)
    _, mean, rstd = ignis.ops.native_layer_norm(x, [D], w16, b16, 1e-5)
    assert mean.dtype == getattr(ignis, dtype)
    for m, r in ((mean, rstd), (mean.float(), rstd.float())):
        for w in (w16, w32):
            args = [g, x, m, r, w, b16]
            want = ignis.ops.native_layer_norm_backward(*args[:2], [D], *args[2:])
            cu = [a.cuda() for a in args]
            got = ignis.ops.native_layer_norm_backward(*cu[:2], [D], *cu[2:])
            for a, e in zip(got, want):
                _close(a, e, dtype, scale=40, cancels=True)

"""The compiler on the GPU (compiler/codegen_cuda): graphs of CUDA tensors
lowered to the same loop IR as the CPU's, printed as CUDA C++ (one NVRTC unit
per graph), launched by the compiled graph on the current stream; GEMMs,
attention, indexing and random numbers run as externs on eager's kernels.

Everywhere (no GPU needed): the generated kernels run as host C++ with real
threads per block (1 to 256; tests/cuda_fake/block_threads_host.h) and equal
eager; the CUDA source of the canonical graphs (traced
with fake CUDA tensors) and of an MLP's and the example GPT's training graphs
(captured on the CPU, generated for CUDA) compiles with NVRTC for sm_90;
skipped, saying why, when NVRTC cannot be loaded.
On a GPU, or the fake driver (tests/cuda_fake/run.sh), skipped with the reason
elsewhere: compiled equals eager on CUDA for pointwise chains (broadcast,
strided and transposed inputs, every kernel dtype), reductions over last,
first and middle dims, softmax, log_softmax, layer_norm, RMSNorm, linear +
GELU, and forward and backward of an MLP and of the example GPT; the
canonical fusions are one kernel each.
"""
import pathlib
import re
import sys
import warnings

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn as nn
import ignis.nn.functional as F
from _fake_launches import launched_grids, memsets, require_fake_gpu
from ignis import _inductor
from ignis._inductor import metrics
from conftest import kernel_arg, kernel_args

AVAILABLE = ignis.cuda.is_available()
REASON = ignis._C._cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(not AVAILABLE, reason=f"no usable CUDA GPU here: {REASON}")

DTYPES = ["float32", "float64", "float16", "bfloat16",
          "int64", "int32", "int16", "int8", "uint8", "bool"]


def _np(t):
    t = t.detach().cpu()
    if t.dtype in (ignis.bfloat16, ignis.float16):
        t = t.float()
    return t.numpy()


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)


def compile_and_count(fn, *args):
    """Runs fn through backend="inductor" and returns (result, kernels
    generated); fails when a graph fell back to eager."""
    ignis.compiler.reset()
    metrics.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = ignis.compile(fn, backend="inductor")(*args)
    eager = [str(w.message) for w in caught if "runs eagerly" in str(w.message)]
    assert not eager, eager
    return out, metrics.generated_kernel_count


def _program(fn, *args):
    from ignis._functorch.aot_autograd import trace_joint
    gm, _ = trace_joint(ignis.fx.symbolic_trace(fn), list(args))
    return _inductor.compile_fx(gm, None)


def _randn(*shape, dtype=ignis.float32):
    return ignis.randn(*shape).to(dtype).cuda()


# (x * x rather than x.pow(2): eager's pow backward on CUDA raises "invalid
# device ordinal -1" today, a where() with the CPU exponent's mask; that is
# eager's bug, not the compiler's.)
def _rms_norm(x, w):
    return x * ignis.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w


# ---- pointwise ----

@needs_gpu
def test_a_pointwise_chain_is_one_kernel_of_cuda_code():
    def f(x, y):
        return ignis.relu(x + y) * 2
    x, y = _randn(8, 16), _randn(8, 16)
    out, kernels = compile_and_count(f, x, y)
    assert kernels == 1
    assert out.device.type == "cuda"
    close(out, f(x, y))
    compiled = _program(f, x, y)
    assert compiled.program.startswith("device cuda:0\n")
    assert re.search(r'extern "C" __global__ void __launch_bounds__\(\d+\) kernel_0_',
                     compiled.generated_code)
    assert "ignis::scalar_ops::Relu{}" in compiled.generated_code


@needs_gpu
@pytest.mark.parametrize("n,threads,width,blocks", [(1024, 64, 1, 16), (1 << 16, 64, 4, 256),
                                                    (1 << 20, 256, 4, 1024)])
def test_small_pointwise_kernels_spread_over_the_multiprocessors(capfd, n, threads, width, blocks):
    """Note [Small pointwise kernels]: 50 ops on 1024 floats run as 16 blocks
    of 64 threads, an element a thread, not one block of 4-wide vectors; a
    kernel of many blocks keeps 256 threads and 16-byte vectors."""
    from ignis._inductor import config

    def fifty(x):
        for _ in range(10):
            x = ignis.relu(ignis.cos(ignis.sin(x) * 0.9) + 0.1)
        return x
    x = _randn(n)
    with config.patch(size_generic=False):
        compiled = _program(fifty, x)
    code = compiled.generated_code
    assert compiled.kernel_count == 1
    assert f"__launch_bounds__({threads}) kernel_0_" in code, code
    assert ("IgVec<float, 4>" in code) == (width == 4), code
    out = []
    if n == 1024 and ignis.cuda.get_device_name(0) == "Fake GPU":  # its launch log, uncapped
        grids = launched_grids(capfd, lambda: out.append(compiled(x)[0]))
        assert [g for _, g in grids] == [blocks], grids
    else:
        out.append(compiled(x)[0])
    close(out[0], fifty(x), rtol=1e-5, atol=1e-5)


@needs_gpu
def test_a_large_pointwise_kernel_launches_a_block_for_each_blocks_work(capfd):
    """Note [A block for each block's work]: 2^20 floats in 16-byte vectors
    launch 1024 blocks of 256 threads (the fake GPU's 4 multiprocessors
    capped it at 128 before: threads looped over vectors, one load in
    flight), and the results are eager's."""
    require_fake_gpu()
    from ignis._inductor import config

    def f(x):
        return (ignis.relu(x) * 0.5 + ignis.tanh(x)).sigmoid()
    x = _randn(1 << 20)
    with config.patch(size_generic=False):
        compiled = _program(f, x)
    out = []
    grids = launched_grids(capfd, lambda: out.append(compiled(x)[0]))
    assert [g for _, g in grids] == [(1 << 20) // 4 // 256], grids
    close(out[0], f(x), rtol=1e-6, atol=1e-6)


@needs_gpu
@pytest.mark.parametrize("shape", [(2048, 1024), (2000, 1028), (5, 1 << 18)])
def test_pointwise_threads_take_several_vectors_with_the_knob(shape):
    """config.cuda.pointwise_vectors_per_thread=2: a thread of a large
    pointwise kernel takes two 16-byte vectors a step, a block's width
    apart, guarded only where the steps do not divide the vectors (2000 x
    1028); the results are the one-vector kernel's and eager's. Out of range
    is an error naming the knob."""
    from ignis._inductor import config

    def f(x, b):
        return (ignis.relu(x + b) * 0.5 + ignis.tanh(x)).sigmoid()
    x, b = _randn(*shape), _randn(shape[-1])
    with config.patch(size_generic=False):
        one = _program(f, x, b)
        with config.patch(**{"cuda.pointwise_vectors_per_thread": 2}):
            two = _program(f, x, b)
    assert "ig_u" not in one.generated_code
    assert "for (int ig_u = 0; ig_u < 2; ++ig_u)" in two.generated_code
    assert ("break;" in two.generated_code) == (shape == (2000, 1028))
    got = two(x, b)[0]
    close(got, one(x, b)[0], rtol=0, atol=0)
    close(got, f(x, b), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="pointwise_vectors_per_thread must be 1 to 8"):
        with config.patch(**{"cuda.pointwise_vectors_per_thread": 9}):
            _program(f, x, b)


@needs_gpu
def test_positions_from_arange_are_computed_in_the_kernel():
    # ScalarKind::Index: arange's values come from the coordinates (no
    # extern), in a kernel that also reads and writes memory; the vector
    # paths step aside for such kernels
    def f(x):
        t = x.shape[-1]
        i = ignis.arange(t, device="cuda")
        causal = i[None, :] > i[:, None]
        return ignis.where(causal, float("-inf"), x) + ignis.arange(3, 3 + 2 * t, 2,
                                                                   device="cuda").float()
    x = _randn(64, 64)
    compiled = _program(f, x)
    assert "extern arange" not in compiled.program, compiled.program
    np.testing.assert_array_equal(_np(compiled(x)[0]), _np(f(x)))


@needs_gpu
def test_constant_pads_are_selects_in_their_readers():
    def f(a, b):
        return F.pad(a, (0, 0, 0, 8)) + F.pad(b, (0, 0, 8, 0)), F.pad(a, (2, -1, 1, 3), value=1.5)
    a, b = _randn(1024, 64), _randn(1024, 64)  # enough blocks to keep vectors
    compiled = _program(f, a, b)
    assert "extern pad" not in compiled.program, compiled.program
    assert "ig_aligned" in compiled.generated_code  # index values keep the vector path
    for got, want in zip(compiled(a, b), f(a, b)):
        np.testing.assert_array_equal(_np(got), _np(want))


@needs_gpu
def test_fifty_pointwise_ops_are_one_kernel():
    def f(x):
        for i in range(50):
            x = ignis.tanh(x) * 1.01 + 0.01 * i if i % 2 else ignis.sigmoid(x) - 0.5
        return x
    x = _randn(33, 17)
    out, kernels = compile_and_count(f, x)
    assert kernels == 1
    close(out, f(x), rtol=1e-5, atol=1e-5)


@needs_gpu
def test_broadcasting_scalars_and_strided_inputs():
    def f(x, row, col):
        return (x * row - col) / 3.0 + ignis.exp(-row) * 2
    x, row, col = _randn(5, 7), _randn(7), _randn(5, 1)
    out, kernels = compile_and_count(f, x, row, col)
    assert kernels == 1
    close(out, f(x, row, col))

    def g(a, b):
        return ignis.sin(a.t()) + b[1:, ::2] * b[:-1, 1::2]
    a = _randn(5, 5)
    b = _randn(6, 12)[:, 1:11]
    out, _ = compile_and_count(g, a, b)
    close(out, g(a, b))
    a2 = _randn(5, 5).t()  # an input that is itself a transposed view
    out, _ = compile_and_count(g, a2, b)
    close(out, g(a2, b))


@needs_gpu
def test_a_transposed_output_layout():
    def f(x):
        return (ignis.exp(x) + 1).t().contiguous() * 3
    x = _randn(7, 13)
    out, kernels = compile_and_count(f, x)
    assert kernels == 1
    close(out, f(x), rtol=1e-6)


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_kernel_dtype(dtype):
    dt = getattr(ignis, dtype)
    rng = np.random.default_rng(0)
    if dtype == "bool":
        x, y = (ignis.from_numpy(rng.integers(0, 2, (6, 9)).astype(bool)).cuda() for _ in "xy")

        def f(x, y):
            return ignis.logical_xor(x, y) | (x & ~y)
    elif dt.is_floating_point:
        x, y = _randn(6, 9, dtype=dt), _randn(6, 9, dtype=dt)

        def f(x, y):
            return ignis.sigmoid(x * y + x) - ignis.maximum(x, y) * 0.5
    else:
        lo = 0 if dtype == "uint8" else -5
        x, y = (ignis.from_numpy(rng.integers(lo, 6, (6, 9))).to(dt).cuda() for _ in "xy")

        def f(x, y):
            return ignis.where(x > y, x * y, ignis.maximum(x + 3, y) - y)
    out, kernels = compile_and_count(f, x, y)
    assert kernels == 1
    assert out.dtype == dt and out.device.type == "cuda"
    want = f(x, y)
    if dtype in ("float16", "bfloat16"):
        # Computed in float and rounded once, where eager rounds every op.
        close(out, want, rtol=2e-2, atol=2e-2)
    elif dt.is_floating_point:
        close(out, want, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(_np(out), _np(want))


@needs_gpu
def test_casts_between_dtypes_fuse():
    def f(x):
        h = (x * 3).to(ignis.bfloat16)
        return (h.float() + 1).to(ignis.int32), x > 0
    x = _randn(4, 33)
    (a, b), kernels = compile_and_count(f, x)
    assert kernels == 1
    wa, wb = f(x)
    np.testing.assert_array_equal(_np(a), _np(wa))
    np.testing.assert_array_equal(_np(b), _np(wb))


@needs_gpu
def test_a_cpu_scalar_tensor_beside_cuda_ones_stays_with_eager():
    def f(x, s):
        return ignis.relu(x) * s + 1
    x, s = _randn(4, 5), ignis.tensor(3.0)
    out, _ = compile_and_count(f, x, s)
    close(out, f(x, s))


@needs_gpu
def test_cpu_work_in_a_cuda_graph_runs_through_the_dispatcher():
    def f(x, y):
        h = ignis.tanh(x) + 1
        return h.cpu() * y, h * 3
    x, y = _randn(4, 6), ignis.randn(4, 6)
    (a, b), kernels = compile_and_count(f, x, y)
    # tanh + 1 and * 3 on the GPU (two kernels: the copy to the CPU between
    # them closes the first, as any extern does); the CPU product is eager's.
    assert kernels == 2
    assert a.device.type == "cpu" and b.device.type == "cuda"
    wa, wb = f(x, y)
    close(a, wa)
    close(b, wb)


# ---- reductions ----

REDUCTIONS = {
    "sum": lambda x, d, k: x.sum(d, keepdim=k),
    "mean": lambda x, d, k: (x * 2).mean(d, keepdim=k),
    "amax": lambda x, d, k: ignis.exp(x).amax(d, keepdim=k),
    "amin": lambda x, d, k: x.amin(d, keepdim=k),
    "var": lambda x, d, k: x.var(d, keepdim=k),
}


@needs_gpu
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [-1, 0, 1, (0, 2)], ids=["last", "first", "middle", "outer"])
@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_reductions_match_eager(op, dim, keepdim):
    x = _randn(6, 7, 37)
    fn = REDUCTIONS[op]
    out, kernels = compile_and_count(lambda x: fn(x, dim, keepdim), x)
    assert kernels == 1, op
    close(out, fn(x, dim, keepdim), rtol=1e-5, atol=1e-5)


@needs_gpu
def test_a_full_reduction_and_a_long_row():
    x = _randn(3, 5000)
    out, kernels = compile_and_count(lambda x: (ignis.exp(x) * 0.5).sum(), x)
    assert kernels == 1
    close(out, (ignis.exp(x) * 0.5).sum(), rtol=1e-5)
    out, _ = compile_and_count(lambda x: x.sum(-1), x)
    close(out, x.sum(-1), rtol=1e-5, atol=1e-4)


@needs_gpu
def test_nan_propagates_through_max_and_min():
    def f(x):
        return x.amax(1), x.amin(1)
    x = ignis.randn(4, 40)
    x[1, 17] = float("nan")
    x[3, 39] = float("nan")
    x[2, 5] = float("inf")
    x[2, 6] = float("-inf")
    x = x.cuda()
    (mx, mn), _ = compile_and_count(f, x)
    want_mx, want_mn = f(x)
    np.testing.assert_array_equal(_np(mx), _np(want_mx))
    np.testing.assert_array_equal(_np(mn), _np(want_mn))
    assert np.isnan(_np(mx)).tolist() == [False, True, False, True]


@needs_gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_rows_accumulate_in_float(dtype):
    dt = getattr(ignis, dtype)
    x, w, b = _randn(9, 300, dtype=dt), _randn(300, dtype=dt), _randn(300, dtype=dt)

    def f(x, w, b):
        return F.layer_norm(x, (300,), w, b), x.sum(-1), ignis.softmax(x, -1)
    outs, kernels = compile_and_count(f, x, w, b)
    assert kernels == 1  # three row computations over x: passes of one kernel
    for got, want in zip(outs, f(x.float(), w.float(), b.float())):
        assert got.dtype == dt
        close(got, want, rtol=2e-2, atol=5e-2)


# ---- the canonical fusions, forward and backward ----

CANONICAL = [
    ("softmax", lambda x: ignis.softmax(x, -1), [(37, 129)]),
    ("log_softmax", lambda x: ignis.log_softmax(x, -1), [(37, 129)]),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (129,), w, b), [(37, 129), (129,), (129,)]),
    ("rms_norm", _rms_norm, [(37, 129), (129,)]),
]


@needs_gpu
@pytest.mark.parametrize("name,fn,shapes", CANONICAL, ids=[c[0] for c in CANONICAL])
def test_canonical_fusions_are_one_kernel_forward_and_backward(name, fn, shapes):
    ins = [_randn(*s) for s in shapes]
    out, kernels = compile_and_count(fn, *ins)
    assert kernels == 1, name
    close(out, fn(*ins), rtol=1e-5, atol=1e-5)
    ref = [t.clone().requires_grad_(True) for t in ins]
    got = [t.clone().requires_grad_(True) for t in ins]
    gout = _randn(*tuple(out.shape))
    (fn(*ref) * gout).sum().backward()
    ignis.compiler.reset()
    metrics.reset()
    (ignis.compile(fn, backend="inductor")(*got) * gout).sum().backward()
    assert metrics.generated_kernel_count >= 2  # the forward and the backward graph
    for r, g in zip(ref, got):
        close(g.grad, r.grad, rtol=1e-4, atol=1e-5)


@needs_gpu
def test_a_per_thread_scratch_row_is_recomputed_on_the_gpu():
    # The CPU spills x + a + b to a per-thread row for layer_norm's later
    # passes; the GPU recomputes it (Note [Scratch rows on the GPU]).
    xs = [_randn(8, 64) for _ in range(3)]
    fn = lambda x, a, b: F.layer_norm(x + a + b, (64,))  # noqa: E731
    compiled = _program(fn, *xs)
    assert compiled.kernel_count == 1
    assert "scratch0[inner] = " in compiled.program and "scratch0 in" not in compiled.program
    assert "const float re" in compiled.generated_code
    assert "scratch0" not in compiled.generated_code
    close(compiled(*xs)[0], fn(*xs), atol=1e-5)


@needs_gpu
def test_softmax_is_one_block_per_row_with_block_reductions():
    from ignis._inductor import config
    with config.patch(size_generic=False):  # the static text (IGNIS_SIZE_GENERIC may be set)
        compiled = _program(lambda x: ignis.softmax(x, -1), _randn(64, 100))
    code = compiled.generated_code
    assert compiled.kernel_count == 1
    assert "for (int32_t ig_row = blockIdx.x; ig_row < 64; ig_row += gridDim.x)" in code
    # The row (25 float4 vectors) is held in registers: x loaded once as vectors
    # for both passes that read it, the exps kept for the last pass.
    assert "if (ig_resident)" in code
    x = kernel_arg(code, compiled.program.splitlines()[1].split(":")[0])
    assert code.count(f"*reinterpret_cast<const IgVec<float, 4>*>({x} ") == 1
    assert "ig_rc0[ig_k][ig_j]" in code and "ig_sp0[ig_k][ig_j]" in code
    assert "ig_block_reduce(acc0, IgMax())" in code
    assert "ig_block_reduce(acc1, IgSum())" in code


@needs_gpu
@pytest.mark.parametrize("fn", ["log_softmax", "cross_entropy", "softmax"])
def test_long_rows_fold_max_and_sum_of_exps_in_one_pass(fn):
    """Note [Online max and sum of exps]: rows that hold a multiprocessor
    alone (16384 floats: 1024 threads) over many rounds of blocks stream in
    vectors, the max and the sum of exps folded in one pass; edge rows (NaN,
    +inf, -inf among finite values, all -inf) give what eager gives."""
    from ignis._inductor import config
    rows, cols = 600, 16384
    x = ignis.randn(rows, cols) * 4
    x[1, 100] = float("nan")
    x[2, 7] = float("inf")
    x[3, :5000] = float("-inf")
    x[4] = float("-inf")
    x[5, 16383] = 50.0  # the max arrives last: every earlier term rescaled
    t = ignis.randint(0, cols, (rows,))
    t[6] = -100
    if fn == "log_softmax":
        f = lambda x, t: F.log_softmax(x, -1)  # noqa: E731
    elif fn == "softmax":  # the exps the sum pass keeps are recomputed by the last pass
        f = lambda x, t: F.softmax(x, -1)  # noqa: E731
    else:
        f = lambda x, t: F.cross_entropy(x[5:], t[5:])  # noqa: E731  (finite rows)
    xc, tc = x.cuda(), t.cuda()
    with config.patch(size_generic=False):
        compiled = _program(f, xc, tc)
        with config.patch(**{"cuda.online_softmax": False}):
            two_pass = _program(f, xc, tc)
    assert "ig_online_add(acc" in compiled.generated_code
    assert "ig_block_reduce_online(acc" in compiled.generated_code
    assert "ig_online_add(acc" not in two_pass.generated_code
    want = f(x, t)
    for c in (compiled, two_pass):
        got = c(xc, tc)[0]
        np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-5, atol=1e-4, equal_nan=True)
    if fn != "cross_entropy":
        got = _np(compiled(xc, tc)[0])
        assert np.isnan(got[1]).all() and np.isnan(got[2]).all() and np.isnan(got[4]).all()
        masked = np.isneginf(got[3, :5000]) if fn == "log_softmax" else got[3, :5000] == 0
        assert masked.all() and np.isfinite(got[3, 5000:]).all()


@needs_gpu
@pytest.mark.parametrize("fn", ["layer_norm", "rms_norm", "sum_of_squares"])
def test_rows_too_long_for_registers_stream_in_vectors(fn):
    """Rows longer than a block's registers hold (40000 floats: 10 vectors a
    thread at 1024 threads) stream, each pass reading the row again in
    16-byte vectors when the pointers turn out aligned at the launch, element
    by element when not (the same kernel, a view one float in), and element
    by element throughout when a row's stride is no multiple of a vector."""
    from ignis._inductor import config
    w = _randn(40000)
    f = {"layer_norm": lambda x: F.layer_norm(x, (40000,), w, None),
         "rms_norm": lambda x: _rms_norm(x, w),
         "sum_of_squares": lambda x: (x * x + 1).sum(-1)}[fn]
    flat = _randn(6 * 40000 + 1)
    cases = [(flat[:-1].view(6, 40000), True), (flat[1:].view(6, 40000), True),
             (_randn(6, 40001)[:, 1:], False)]
    for x, vectors in cases:
        # (six rows of one pass would split among blocks: Note [Split row reductions])
        with config.patch(size_generic=False, **{"cuda.split_rows": False}):
            compiled = _program(f, x)
        code = compiled.generated_code
        assert "if (ig_resident)" not in code, code
        assert ("for (int32_t ig_c = threadIdx.x;" in code) == vectors, code
        assert ("*reinterpret_cast<const IgVec<float, 4>*>(" in code) == vectors, code
        close(compiled(x)[0], f(x), rtol=1e-4, atol=1e-4)


@needs_gpu
def test_column_sums_read_rows_of_neighbouring_columns():
    """A sum over rows (layer_norm's weight and bias gradients) is a column
    kernel: each thread a column, a warp a stretch of one row, the row lanes
    folded by ig_column_reduce_n; not a block per column reading a stride."""
    from ignis._inductor import config
    x, g = _randn(300, 70), _randn(300, 70)
    with config.patch(size_generic=False):
        compiled = _program(lambda x, g: ((x * g).sum(0), g.sum(0)), x, g)
    code = compiled.generated_code
    assert compiled.kernel_count == 1
    assert re.search(r"ig_column_reduce_n<\d+>\(&?acc0, ", code)
    assert re.search(r"ig_column_reduce_n<\d+>\(&?acc1, ", code)
    a, b = compiled(x, g)
    close(a, (x * g).sum(0), rtol=1e-5, atol=1e-4)
    close(b, g.sum(0), rtol=1e-5, atol=1e-4)


@needs_gpu
def test_few_long_columns_split_their_rows_over_blocks():
    """40 columns of 5000 rows would be 2 blocks: the rows split into ranges,
    one block each; the last block of a column group folds the partials in
    range order, so repeated runs give the same bits (Note [Split column
    reductions]). Per-row values every column reads (layer_norm's mean and
    rstd in its weight gradient) are broadcasts, not a reason to leave the
    column kernel."""
    from ignis._inductor import config
    x, g = _randn(5000, 40), _randn(5000, 40)
    m, r = _randn(5000, 1), _randn(5000, 1)

    def weight_and_bias_grads(x, g, m, r):
        return ((x - m) * r * g).sum(0), g.sum(0), x.amax(0)
    with config.patch(size_generic=False):
        compiled = _program(weight_and_bias_grads, x, g, m, r)
    code = compiled.generated_code
    assert compiled.kernel_count == 1
    assert re.search(r"ig_column_reduce_n<\d+>\(&?acc0, ", code)
    assert "atomicAdd(&ig_count[" in code and "ig_part2" in code
    first = compiled(x, g, m, r)
    for got, want in zip(first, weight_and_bias_grads(x, g, m, r)):
        close(got, want, rtol=1e-4, atol=1e-3)
    for _ in range(3):
        for a, b in zip(compiled(x, g, m, r), first):
            assert np.array_equal(a.cpu().numpy(), b.cpu().numpy())


@needs_gpu
@pytest.mark.parametrize("rows", [4096, 4100])
def test_a_bias_gradient_splits_into_short_whole_ranges(capfd, rows):
    """A bias gradient over 4096 rows of 768 columns (GPT-2's): 3 groups of
    256 columns, each split into 64 ranges of 64 rows (4 a thread, config.
    cuda.column_split_rows_per_thread; 16 gave 48 blocks), whole ranges a
    literal count of rows a thread (Note [Whole ranges the compiler can
    hoist]); 4100 rows leave a remainder row for 4 lanes of each range and a
    last range of the general loop. The last block's lanes share the fold
    of the partials. Sums are NumPy's, and the same bits on every run."""
    from ignis._inductor import config
    x = _randn(rows, 768, dtype=ignis.bfloat16)

    def bias_grad(g):
        return g.sum(0)
    with config.patch(size_generic=False):
        compiled = _program(bias_grad, x)
        with config.patch(**{"cuda.column_split_rows_per_thread": 16}):
            sixteen = _program(bias_grad, x)
    code = compiled.generated_code
    assert re.search(r"ig_item < ig_groups \* 64;", code), code
    assert re.search(r"ig_item < ig_groups \* 16;", sixteen.generated_code)
    assert "for (int ig_k = 0; ig_k < 4; ++ig_k)" in code
    assert ("if (ig_ty < 1) {" in code) == (rows == 4100)
    assert "for (int ig_s = ig_ty; ig_s < 64; ig_s += ig_lanes)" in code
    out = []
    if ignis.cuda.get_device_name(0) == "Fake GPU":
        grids = launched_grids(capfd, lambda: out.append(compiled(x)[0]))
        assert [g for _, g in grids] == [3 * 64], grids
    else:
        out.append(compiled(x)[0])
    want = _np(x.float()).astype(np.float64).sum(0)
    np.testing.assert_allclose(_np(out[0].float()), want, rtol=1e-2, atol=0.5)  # a bfloat16 result
    assert np.array_equal(_np(compiled(x)[0].float()), _np(out[0].float()))
    close(sixteen(x)[0].float(), out[0].float(), rtol=1e-2, atol=0.5)
    with pytest.raises(ValueError, match="column_split_rows_per_thread must be at least 1"):
        with config.patch(**{"cuda.column_split_rows_per_thread": 0}):
            _program(bias_grad, x)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_column_kernels_read_vectors_of_neighbouring_columns(dtype):
    """Note [Vectors of columns]: a thread takes a 16-byte vector of
    neighbouring columns (one load a row, an accumulator a column), a
    misaligned view takes the same columns element by element, a column
    count that no vector divides keeps a column a thread; every form sums
    as NumPy does, and config.cuda.column_vectors=False prints none."""
    from ignis._inductor import config
    dt = getattr(ignis, dtype)
    width = 4 if dtype == "float32" else 8

    def grads(x, g, m, r):  # layer_norm's weight and bias gradients
        return ((x - m) * r * g).sum(0), g.sum(0), x.amax(0)
    rows, cols = 3000, 96
    flat = _randn(rows * cols + 1).to(dt)
    aligned, shifted = flat[:-1].view(rows, cols), flat[1:].view(rows, cols)
    g = _randn(rows, cols).to(dt)
    m, r = _randn(rows, 1).to(dt), _randn(rows, 1).to(dt)
    odd = _randn(rows, 37).to(dt)
    with config.patch(size_generic=False):
        vec = _program(grads, aligned, g, m, r)
        scalar_odd = _program(lambda x: x.sum(0), odd)
        with config.patch(**{"cuda.column_vectors": False}):
            off = _program(grads, aligned, g, m, r)
    code = vec.generated_code
    assert vec.kernel_count == 1
    assert f"IgVec<{'float' if dtype == 'float32' else 'ig_bf16'}, {width}>" in code, code
    # all of a thread's columns folded over the lanes in one round
    assert f"acc0[{width}]" in code and f"ig_column_reduce_n<{width}>(acc0, " in code
    assert f"ig_column_reduce_n<{width}>(acc0, " not in off.generated_code
    assert "ig_column_reduce_n<1>(&acc0, " in scalar_odd.generated_code
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == "float32" else dict(rtol=2e-2, atol=0.5)
    for x in (aligned, shifted):  # the vectors, then the element-by-element fallback
        want = [t.float().cpu().numpy() for t in grads(x.float(), g.float(), m.float(), r.float())]
        for got in (vec(x, g, m, r), off(x, g, m, r)):
            for a, b in zip(got, want):
                np.testing.assert_allclose(a.float().cpu().numpy(), b, **tol)
    np.testing.assert_allclose(scalar_odd(odd)[0].float().cpu().numpy(),
                               odd.float().cpu().numpy().sum(0), **tol)


def _compiled_layer_norm_grads(shape, dt, around=None):
    """A layer norm over the last dim of `shape` compiled on CUDA, its
    gradients (got) beside the CPU's eager ones (want), with the function,
    the CUDA inputs and the output gradient; `around(backward)` runs the
    compiled backward (a launch log's reader)."""
    from ignis._inductor import config
    n = shape[-1]
    ignis.manual_seed(0)
    xc = ignis.randn(*shape).to(dt)
    wc, bc = (1 + 0.1 * ignis.randn(n)).to(dt), ignis.randn(n).to(dt)
    gc = ignis.randn(*shape).to(dt)

    def f(x, w, b):
        return F.layer_norm(x, (n,), w, b)
    want = ignis.autograd.grad(f(*(t.requires_grad_() for t in (xc, wc, bc))), (xc, wc, bc), gc)
    x, w, b = (t.detach().cuda().requires_grad_() for t in (xc, wc, bc))
    ignis.compiler.reset()
    got = []
    with config.patch(size_generic=False):
        y = ignis.compile(f, backend="inductor")(x, w, b)
        (around or (lambda backward: backward()))(
            lambda: got.extend(ignis.autograd.grad(y, (x, w, b), gc.cuda())))
    return got, want, f, (x, w, b), gc


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", [(300, 4096), (8192, 4096), (130, 4100), (70, 40000), (300, 96)],
                         ids=["resident", "round", "odd", "streaming", "narrow"])
def test_layer_norm_backward_folds_its_column_sums_in_the_row_kernel(dtype, shape):
    """Note [Column sums in a row kernel]: the weight and bias gradients
    join the input gradient's row kernel, a block a range of rows folding
    its partials (held rows and streaming rows alike), and a column kernel
    folds those; rows under 4096 elements keep the two kernels on the GPU.
    Every gradient matches the CPU's."""
    from ignis._inductor import config
    got, want, f, (x, w, b), gc = _compiled_layer_norm_grads(shape, getattr(ignis, dtype))
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == "float32" else dict(rtol=3e-2, atol=0.3)
    for a, e in zip(got, want):
        np.testing.assert_allclose(a.float().cpu().numpy(), e.float().numpy(), **tol)
    from ignis._functorch.aot_autograd import aot_autograd
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm
    ignis.compiler.reset()
    ignis.compile(f, backend=aot_autograd(fw_compiler=keep, bw_compiler=keep))(x, w, b).backward(gc.cuda())
    with config.patch(size_generic=False):
        code = ignis._C._generate_graph_code(graphs[1].graph, "cuda", config.compiler_options())[1]
    folds = shape[-1] >= 4096
    assert ("int32_t ig_w = blockIdx.x;  // a range of rows" in code) == folds, code
    assert ("ig_fold0[" in code) == (folds and shape[-1] < 40000), code  # held rows: registers
    assert ("partials' rows past the grid" in code) == folds, code


def test_a_folding_row_kernel_splits_its_rows_among_the_grid():
    """Note [Column sums in a row kernel]: layer norm's backward over 16384
    x 4096 bfloat16 has 528 workers of partials; the kernel splits its rows
    among the blocks it is launched with (the launch runs one round of them,
    by the driver's occupancy: test_a_folding_row_kernel_launches_one_round)
    and sets the partials' rows past its grid to zero. (No GPU needed: the
    CUDA text of a graph traced on the CPU; the results:
    test_layer_norm_backward_folds_its_column_sums_in_the_row_kernel.)"""
    from ignis._functorch.aot_autograd import aot_autograd
    from ignis._inductor import config
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm
    x, w, b = (ignis.zeros(*s, dtype=ignis.bfloat16).requires_grad_()
               for s in ((16384, 4096), (4096,), (4096,)))
    ignis.compiler.reset()
    y = ignis.compile(lambda x, w, b: F.layer_norm(x, (4096,), w, b),
                      backend=aot_autograd(fw_compiler=keep, bw_compiler=keep))(x, w, b)
    y.backward(ignis.zeros_like(y))
    with config.patch(size_generic=False):
        code = ignis._C._generate_graph_code(graphs[1].graph, "cuda", config.compiler_options())[1]
    assert "ig_per = (16384 + int32_t(gridDim.x) - 1) / int32_t(gridDim.x);" in code
    assert "ig_v = ig_w + int32_t(gridDim.x); ig_v < 528;" in code
    assert "ig_row = ig_w * ig_per; ig_row < 16384 && ig_row < (ig_w + 1) * ig_per;" in code


def test_the_gpu_folds_minimum_row_is_a_knob():
    """config.cuda.column_sums_min_row (4096): a 24-wide layer norm's
    backward keeps its two kernels on the GPU by default and folds its
    column sums into the row kernel with the knob at 1 (as the fuzzer sets
    it, with column_sums_min_rows=2, to reach those kernels with small
    shapes); 0 is an error naming the knob. (No GPU needed: the CUDA text.)"""
    from ignis._functorch.aot_autograd import aot_autograd
    from ignis._inductor import config
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm
    x, w, b = (ignis.randn(*s).requires_grad_() for s in ((40, 24), (24,), (24,)))
    ignis.compiler.reset()
    y = ignis.compile(lambda x, w, b: F.layer_norm(x, (24,), w, b),
                      backend=aot_autograd(fw_compiler=keep, bw_compiler=keep))(x, w, b)
    y.backward(ignis.ones_like(y))

    def source(**knobs):
        with config.patch(size_generic=False, **knobs):
            return ignis._C._generate_graph_code(graphs[1].graph, "cuda", config.compiler_options())[1]
    assert "ig_per" not in source()
    assert "ig_per" in source(column_sums_min_rows=2, **{"cuda.column_sums_min_row": 1})
    with pytest.raises(ValueError, match="column_sums_min_row must be at least 1"):
        source(**{"cuda.column_sums_min_row": 0})


@needs_gpu
def test_a_folding_row_kernel_launches_one_round(capfd):
    """The folding row kernel runs as many blocks as the GPU holds at once
    (the fake driver's occupancy: 2048 / 128 threads = 16 blocks on each of
    its 4 multiprocessors), fewer than its 512 workers, and the gradients
    are still the CPU's."""
    require_fake_gpu()
    grids = []
    got, want, *_ = _compiled_layer_norm_grads(
        (8192, 4096), ignis.bfloat16, lambda backward: grids.extend(launched_grids(capfd, backward)))
    assert ("kernel_0", 64) in [(k.rsplit("_", 1)[0], g) for k, g in grids], grids
    for a, e in zip(got, want):
        np.testing.assert_allclose(a.float().cpu().numpy(), e.float().numpy(), rtol=3e-2, atol=0.3)


@needs_gpu
@pytest.mark.parametrize("case", ["sum", "ragged_sum", "mean_of_squares", "amax_of_four_rows",
                                  "float64_sum"])
def test_few_long_rows_split_among_blocks(capfd, case):
    """Note [Split row reductions]: a full sum (one row) or a few long rows
    run as (row, range) blocks, each reading its range in 16-byte vectors,
    whose partials the row's last block folds in range order, not a block a
    row; every form gives NumPy's results, and config.cuda.split_rows=False
    keeps a block a row."""
    from ignis._inductor import config
    fn, shape, rows, splits = {
        "sum": (lambda x: x.sum(), (1 << 18,), 1, 64),
        # ranges of 1029 vectors: four whole steps of 256 and 5 threads'
        # remainder a range, and a last range of 1009 (the general loop)
        "ragged_sum": (lambda x: x.sum(), ((1 << 18) + 4 * 300,), 1, 64),
        "mean_of_squares": (lambda x: (x * x).mean() + 1, (512, 512), 1, 64),
        "amax_of_four_rows": (lambda x: x.amax(-1), (4, 1 << 16), 4, 16),
        "float64_sum": (lambda x: x.double().sum(), (1 << 17,), 1, 32),
    }[case]
    x = _randn(*shape)
    with config.patch(size_generic=False):
        split = _program(fn, x)
        with config.patch(**{"cuda.split_rows": False}):
            whole = _program(fn, x)
    assert split.kernel_count == 1
    assert "ig_last = atomicAdd(&ig_count[ig_row], 1u)" in split.generated_code
    assert "*reinterpret_cast<const IgVec<float, 4>*>(" in split.generated_code  # ranges of vectors
    assert "ig_count" not in whole.generated_code
    # Note [Whole ranges the compiler can hoist]: full ranges run a literal count of steps
    assert re.search(r"for \(int ig_k = 0; ig_k < \d+; \+\+ig_k\)", split.generated_code)
    if case == "ragged_sum":
        assert "ig_split < 63)" in split.generated_code and "threadIdx.x < 5u" in split.generated_code
    out = []
    if ignis.cuda.get_device_name(0) == "Fake GPU":
        grids = launched_grids(capfd, lambda: out.append(split(x)[0]))
        assert [g for _, g in grids] == [rows * splits], grids
    else:
        out.append(split(x)[0])
    xn = x.cpu().numpy().astype(np.float64)
    want = {"sum": xn.sum(), "ragged_sum": xn.sum(), "mean_of_squares": (xn * xn).mean() + 1,
            "amax_of_four_rows": xn.max(-1), "float64_sum": xn.sum()}[case]
    np.testing.assert_allclose(_np(out[0]), want, rtol=1e-12 if case == "float64_sum" else 2e-5,
                               atol=1e-9 if case == "float64_sum" else 1e-3)
    # two float32 orders of a sum of ~2^18 normal values: ~sqrt(n) * eps * |partial sums| apart
    close(whole(x)[0], out[0], rtol=2e-5, atol=2e-2)
    if case == "sum":  # ranges of at least cuda.split_rows_min_elements elements
        with config.patch(size_generic=False, **{"cuda.split_rows_min_elements": 1 << 17}):
            assert re.search(r"ig_item < 2;", _program(fn, x).generated_code)
        with pytest.raises(ValueError, match="split_rows_min_elements must be at least 1"):
            with config.patch(**{"cuda.split_rows_min_elements": 0}):
                _program(fn, x)
        with config.patch(size_generic=False, **{"cuda.split_rows_blocks": 16}):  # ~16 blocks
            assert re.search(r"ig_item < 16;", _program(fn, x).generated_code)
        with pytest.raises(ValueError, match="split_rows_blocks must be at least 1"):
            with config.patch(**{"cuda.split_rows_blocks": 0}):
                _program(fn, x)


@needs_gpu
def test_a_run_zeroes_one_workspace_for_all_its_split_kernels(capfd):
    """Note [One workspace a run]: three split reductions (a full sum, a
    bias gradient's column sums, an amax over four long rows) share one
    workspace, zeroed by one memset at the start of the run, not one each;
    the results are NumPy's on every call."""
    require_fake_gpu()
    from ignis._inductor import config
    x, g = _randn(1 << 16), _randn(4096, 768)

    def three(x, g):
        return x.sum(), g.sum(0), x.reshape(4, -1).amax(-1) * 2
    with config.patch(size_generic=False):
        compiled = _program(three, x, g)
    assert compiled.generated_code.count("atomicAdd(&ig_count[") == 3
    for _ in range(2):
        out = []
        sets = memsets(capfd, lambda: out.extend(compiled(x, g)))
        assert len(sets) == 1, sets
        xn, gn = _np(x).astype(np.float64), _np(g).astype(np.float64)
        np.testing.assert_allclose(_np(out[0]), xn.sum(), rtol=1e-4, atol=1e-2)
        np.testing.assert_allclose(_np(out[1]), gn.sum(0), rtol=1e-4, atol=1e-2)
        np.testing.assert_allclose(_np(out[2]), xn.reshape(4, -1).max(-1) * 2, rtol=1e-6)


@needs_gpu
def test_a_long_row_with_a_second_pass_does_not_split():
    """A variance over one long row reads it twice (the mean, then the squared
    deviations): its second pass needs the whole row's mean, so no split."""
    from ignis._inductor import config
    x = _randn(1 << 16)
    fn = lambda a: ((a - a.mean()) ** 2).mean()  # noqa: E731
    with config.patch(size_generic=False):
        compiled = _program(fn, x)
    assert "ig_count" not in compiled.generated_code
    xn = x.cpu().numpy().astype(np.float64)
    np.testing.assert_allclose(_np(compiled(x)[0]), ((xn - xn.mean()) ** 2).mean(), rtol=1e-4)


@needs_gpu
def test_split_column_sums_in_float64_and_a_second_pass_does_not_split():
    """float64 partials (a double workspace) fold to NumPy's sums; a kernel
    with two passes over the rows (a column variance) keeps a block per
    column group."""
    from ignis._inductor import config
    x = _randn(3000, 24)
    xd = x.double()
    with config.patch(size_generic=False):
        doubles = _program(lambda a: (a * a).sum(0), xd)
        var = _program(lambda a: ((a - a.mean(0)) ** 2).sum(0), x)
    assert "double* const ig_part0" in doubles.generated_code
    xn = x.cpu().numpy().astype(np.float64)
    np.testing.assert_allclose(doubles(xd)[0].cpu().numpy(), (xn * xn).sum(0), rtol=1e-12)
    assert "ig_part0" not in var.generated_code and "ig_column_reduce_n<" in var.generated_code
    close(var(x)[0], ignis.from_numpy(((xn - xn.mean(0)) ** 2).sum(0)).float(), rtol=1e-4,
          atol=1e-3)


@needs_gpu
def test_linear_gelu_is_a_gemm_extern_and_one_fused_kernel():
    ignis.manual_seed(0)
    lin = nn.Linear(48, 80).cuda()
    x = _randn(37, 48)
    with ignis.no_grad():
        compiled = _program(lambda x: F.gelu(lin(x)), x)
        assert compiled.kernel_count == 1
        assert "extern addmm" in compiled.program
        close(compiled(x)[0], F.gelu(lin(x)), rtol=1e-5, atol=1e-5)


def _fake_cuda_program(fn, shapes, dtype=ignis.float32, grad=False, **knobs):
    """The CUDA program of fn's joint graph traced with fake CUDA tensors (no
    GPU needed)."""
    from ignis._functorch.aot_autograd import trace_joint
    from ignis._subclasses.fake_tensor import FakeTensorMode
    from ignis._inductor import config
    with FakeTensorMode():
        args = [ignis.empty(*s, device="cuda", dtype=dtype).requires_grad_(grad) for s in shapes]
        gm, _ = trace_joint(ignis.fx.symbolic_trace(fn), args)
    with config.patch(**knobs):
        return ignis._C._generate_graph_code(gm.graph, None, config.compiler_options())[0]


ACTIVATIONS = {
    "relu": F.relu,
    "gelu_tanh": lambda h: F.gelu(h, approximate="tanh"),
    "gelu": F.gelu,  # the erf form: no cuBLASLt epilogue
}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("act", list(ACTIVATIONS))
def test_relu_and_tanh_gelu_fold_into_the_products_epilogue(act, dtype):
    """graph/passes/gemm_activation.h: relu(linear) and gelu(linear,
    approximate='tanh') of float32/bfloat16/float16 CUDA tensors are one
    `_addmm_act` extern (cuBLASLt's RELU / GELU epilogue) and no kernel; the
    erf GELU and float64 keep the addmm and a pointwise kernel, and so does
    config.cuda.activation_epilogues=False."""
    f = ACTIVATIONS[act]
    shapes = [(16, 32), (64, 32), (64,)]
    program = _fake_cuda_program(lambda x, w, b: f(F.linear(x, w, b)), shapes,
                                 getattr(ignis, dtype))
    folds = act != "gelu" and dtype != "float64"
    assert ("extern _addmm_act" in program) == folds, program
    assert ("extern addmm" in program) == (not folds), program
    assert program.count("\nkernel_") == (0 if folds else 1), program
    if folds:
        assert f"extern _addmm_act(arg2_1, arg0_1, buf3, activation='{act}')" in program, program
        off = _fake_cuda_program(lambda x, w, b: f(F.linear(x, w, b)), shapes,
                                 getattr(ignis, dtype), **{"cuda.activation_epilogues": False})
        assert "_addmm_act" not in off and off.count("\nkernel_") == 1


def _hf_new_gelu(h):  # GPT-2's GELU as Hugging Face writes it
    return 0.5 * h * (1.0 + ignis.tanh(0.7978845608028654 * (h + 0.044715 * ignis.pow(h, 3.0))))


SPELLINGS = {
    # Note [Activations recognised by their values]: other spellings of the two functions ...
    # (the function, what folds, the kernels left)
    "hf_new_gelu": (_hf_new_gelu, "gelu_tanh", 0),
    "clamp_min": (lambda h: ignis.clamp_min(h, 0.0), "relu", 0),
    "where": (lambda h: ignis.where(h > 0, h, 0.0), "relu", 0),
    "relu_of_relu": (lambda h: F.relu(F.relu(h)), "relu", 0),
    "scaled_relu": (lambda h: F.relu(h) * 2.0, "relu", 1),  # the relu folds, the scale stays
    # ... and near misses, which must not fold: a rounded constant, the erf
    # GELU, a leaky relu, a relu of the scaled product.
    "rounded_constant": (lambda h: 0.5 * h * (1.0 + ignis.tanh(0.79788 * (h + 0.044715 * h ** 3))),
                         None, 1),
    "erf_gelu": (lambda h: 0.5 * h * (1.0 + ignis.erf(h * 0.7071067811865476)), None, 1),
    "leaky": (lambda h: F.leaky_relu(h, 0.01), None, 1),
    "relu_of_scaled": (lambda h: F.relu(h * 2.0), None, 1),
}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", list(SPELLINGS))
def test_activations_fold_by_their_values_not_their_spelling(name, dtype):
    f, act, kernels = SPELLINGS[name]
    program = _fake_cuda_program(lambda x, w, b: f(F.linear(x, w, b)),
                                 [(16, 32), (64, 32), (64,)], getattr(ignis, dtype))
    if act:
        assert f"extern _addmm_act(arg2_1, arg0_1, buf3, activation='{act}')" in program, program
    else:
        assert "_addmm_act" not in program and "extern addmm" in program, program
    assert program.count("\nkernel_") == kernels, program
    # The values, on the CPU, through _addmm_act's decomposition: the same function.
    x, w, b = ignis.randn(16, 32), ignis.randn(64, 32), ignis.randn(64)
    if act and not kernels:
        close(ignis.ops._addmm_act(b, x, w.t(), activation=act), f(F.linear(x, w, b)),
              rtol=1e-5, atol=1e-5)


def test_folds_in_training_only_where_the_product_has_no_other_reader():
    """In a joint graph relu's backward reads relu's output (the product has
    one reader: it folds); the tanh GELU's backward reads the product (it
    does not); a product that is also returned does not fold either."""
    shapes = [(16, 32), (64, 32), (64,)]
    relu = _fake_cuda_program(lambda x, w, b: F.relu(F.linear(x, w, b)).sum(), shapes,
                              grad=True)
    assert "extern _addmm_act" in relu
    gelu = _fake_cuda_program(lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh").sum(),
                              shapes, grad=True)
    assert "_addmm_act" not in gelu and "extern addmm" in gelu

    def both(x, w, b):
        h = F.linear(x, w, b)
        return F.relu(h), h
    assert "_addmm_act" not in _fake_cuda_program(both, shapes)


def test_addmm_act_names_a_bad_activation():
    x, w, b = ignis.randn(3, 4), ignis.randn(4, 5), ignis.randn(5)
    with pytest.raises(ValueError, match="activation must be 'relu' or 'gelu_tanh', got 'gelu'"):
        ignis.ops._addmm_act(b, x, w, activation="gelu")
    close(ignis.ops._addmm_act(b, x, w, activation="relu"), F.relu(ignis.addmm(b, x, w)))


@needs_gpu
@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-5), ("bfloat16", 2e-2), ("float16", 2e-3)])
@pytest.mark.parametrize("act", ["relu", "gelu_tanh"])
def test_activation_epilogues_match_eager(act, dtype, rtol):
    """Compiled (one cuBLASLt call with the epilogue) against eager's addmm
    and activation: float32 to float rounding (cuBLASLt's GELU is the tanh
    form; were it the erf form, float32 would differ by up to 5e-4), 16-bit
    types within a rounding of the output. The eager op itself on CUDA takes
    the epilogue too (the cuBLASLt counter), with a bias and without."""
    ignis.manual_seed(0)
    dt = getattr(ignis, dtype)
    f = ACTIVATIONS[act]
    lin = nn.Linear(96, 160).cuda().to(dt)
    x = (_randn(75, 96) * 2).to(dt)
    with ignis.no_grad():
        before = ignis._C._cuda_blas_stats()["activation_epilogues"]
        got, kernels = compile_and_count(lambda x: f(lin(x)), x)
        assert kernels == 0
        assert ignis._C._cuda_blas_stats()["activation_epilogues"] == before + 1
        close(got, f(lin(x)), rtol=rtol, atol=rtol)
        for bias, beta in ((lin.bias, 1.0), (None, 0.0)):
            pre = ignis.addmm(lin.bias, x, lin.weight.t(), beta=beta)
            one = ignis.ops._addmm_act(lin.bias if bias is not None else pre, x, lin.weight.t(),
                                       beta=beta, activation=act)
            close(one, f(pre), rtol=rtol, atol=rtol)


@needs_gpu
def test_a_relu_mlp_trains_like_eager_through_the_epilogue():
    def make():
        ignis.manual_seed(0)
        return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4)).cuda()
    x, target = _randn(10, 8), _randn(10, 4)

    def loss_fn(model, x):
        d = model(x) - target
        return (d * d).mean()

    eager_model, comp_model = make(), make()
    le = loss_fn(eager_model, x)
    le.backward()
    before = ignis._C._cuda_blas_stats()["activation_epilogues"]
    loss, _ = compile_and_count(loss_fn, comp_model, x)
    loss.backward()
    assert ignis._C._cuda_blas_stats()["activation_epilogues"] == before + 1
    close(loss, le, rtol=1e-5)
    for p, q in zip(eager_model.parameters(), comp_model.parameters()):
        close(q.grad, p.grad, rtol=1e-5, atol=1e-6)


def _run_script(script, cache_dir, **env):
    """Runs `script` in a new Python process (this ignis, the same driver)
    with cache_dir as IGNIS_CACHE_DIR; returns its stderr (it must exit 0)."""
    import os
    import subprocess
    env = dict(os.environ, IGNIS_CACHE_DIR=str(cache_dir),
               PYTHONPATH=str(pathlib.Path(ignis.__file__).parents[1]), **env)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stderr


@needs_gpu
def test_max_autotune_measures_row_kernels_on_the_gpu_once(tmp_path):
    """compiler/autotune_cuda.h: a row kernel's variants (vectors a thread,
    prefetch, one wave) are timed on the GPU and the winner kept on disk; a
    new process finds the tuned graph in the graph cache, or, lowering
    again, the winner; a corrupt winner is measured again; a winner on disk
    is what the code is printed with (vectors=1: 96-thread blocks for rows
    of 768); the values are eager's."""
    script = (
        "import ignis\n"
        "import ignis.nn.functional as F\n"
        "ignis.manual_seed(0)\n"
        "x, r = (ignis.randn(512, 768).cuda().bfloat16() for _ in range(2))\n"
        "w, b = ignis.randn(768).cuda().bfloat16(), ignis.randn(768).cuda().bfloat16()\n"
        "f = lambda x, r, w, b: F.layer_norm(x + r, (768,), w, b)\n"
        "got = ignis.compile(f, mode='max-autotune')(x, r, w, b)\n"
        "assert (got.float() - f(x, r, w, b).float()).abs().max().item() < 0.1\n")
    first = _run_script(script, tmp_path)
    assert "[autotune] kernel_0: vectors=" in first and "variants)" in first, first
    assert "[autotune]" not in _run_script(script, tmp_path)
    assert "[autotune]" not in _run_script(script, tmp_path, IGNIS_FX_GRAPH_CACHE="0")
    winners = [e for e in (tmp_path / "autotune").rglob("*") if e.is_file()]
    assert winners
    for entry in winners:
        entry.write_text("garbage")
    assert "[autotune] kernel_0: vectors=" in _run_script(script, tmp_path,
                                                          IGNIS_FX_GRAPH_CACHE="0")
    for entry in winners:
        entry.write_text("cuda 1 1 0\n")
    code = _run_script(script, tmp_path, IGNIS_FX_GRAPH_CACHE="0", IGNIS_LOGS="output_code")
    assert "__launch_bounds__(96) " in code


@needs_gpu
def test_max_autotune_times_the_products_cublaslt_algorithms_once(tmp_path):
    """Note [GEMM algorithms timed] (cuda/blas.cpp): under max-autotune a
    product's first call times the heuristic's candidates and keeps the
    choice on disk; a new process takes it from there without timing; the
    default mode times nothing; the values are eager's."""
    def script(mode):
        return (
            "import ignis\n"
            "import ignis.nn as nn\n"
            "ignis.manual_seed(0)\n"
            "m = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 32)).cuda()\n"
            "x = ignis.randn(48, 64).cuda()\n"
            "with ignis.no_grad():\n"
            f"    got = ignis.compile(m, mode={mode!r})(x)\n"
            "    assert (got - m(x)).abs().max().item() < 1e-4\n"
            "s = ignis._C._cuda_blas_stats()\n"
            "import sys\n"
            "sys.stderr.write(f\"timed={s['algorithms_timed']} cached={s['algorithms_cached']}\\n\")\n")
    assert "timed=0 cached=0" in _run_script(script("default"), tmp_path / "a")
    first = _run_script(script("max-autotune"), tmp_path / "b")
    assert "timed=2 cached=0" in first, first
    again = _run_script(script("max-autotune"), tmp_path / "b", IGNIS_FX_GRAPH_CACHE="0")
    assert "timed=0 cached=2" in again, again
    stored = [e.read_text() for e in (tmp_path / "b" / "autotune").rglob("*") if e.is_file()]
    assert sum(t.startswith("gemm ") for t in stored) == 2, stored


@needs_gpu
def test_random_ops_run_as_externs_with_eagers_numbers():
    def f(x):
        return F.dropout(ignis.exp(x) * 2, 0.5, training=True) + 1
    # The compiled dropout draws its mask through the decomposition's random
    # op, which gives eager dropout's numbers (Note [Uniform floats are
    # dropout's numbers], kernels/cpu/fill.cpp); CUDA's random kernels give
    # the CPU's numbers, so the graph compiled for the GPU equals the one
    # compiled for the CPU, and both equal eager.
    x = _randn(16, 40)
    ignis.manual_seed(5)
    want, _ = compile_and_count(f, x.cpu())
    ignis.manual_seed(5)
    eager = f(x)
    ignis.manual_seed(5)
    got, kernels = compile_and_count(f, x)
    assert kernels >= 1 and got.device.type == "cuda"
    close(got, want, rtol=1e-6)
    close(got, eager, rtol=1e-6)
    kept = _np(got) != 1
    assert 0.35 < kept.mean() < 0.65


# ---- training ----

@needs_gpu
def test_mlp_forward_and_backward_match_eager():
    def make():
        ignis.manual_seed(0)
        return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).cuda()
    x, target = _randn(10, 8), _randn(10, 4)

    def loss_fn(model, x):
        d = ignis.sigmoid(model(x)) - target
        return (d * d).mean()

    eager_model, comp_model = make(), make()
    le = loss_fn(eager_model, x)
    le.backward()
    loss, kernels = compile_and_count(loss_fn, comp_model, x)
    loss.backward()
    assert kernels >= 2
    close(loss, le, rtol=1e-5)
    for p, q in zip(eager_model.parameters(), comp_model.parameters()):
        close(q.grad, p.grad, rtol=1e-5, atol=1e-6)


@needs_gpu
def test_gpt_trains_through_the_cuda_compiler_like_eager():
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
    from gpt import GPTConfig, build_gpt, configure_optimizer
    cfg = GPTConfig(vocab_size=32, block_size=16, n_layer=2, n_head=2, n_embd=32)
    ignis.manual_seed(0)
    eager = build_gpt(ignis)(cfg).cuda()
    comp = build_gpt(ignis)(cfg).cuda()
    comp.load_state_dict(eager.state_dict())
    opt_e, opt_c = configure_optimizer(ignis, eager), configure_optimizer(ignis, comp)
    ignis.compiler.reset()
    metrics.reset()
    step = ignis.compile(comp, backend="inductor")
    idx = ignis.randint(0, 32, (4, 16)).cuda()
    tgt = ignis.randint(0, 32, (4, 16)).cuda()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            le = eager(idx, tgt)[1]
            lc = step(idx, tgt)[1]
            assert abs(le.item() - lc.item()) < 1e-5
            le.backward()
            lc.backward()
            for (n, pe), pc in zip(eager.named_parameters(), comp.parameters()):
                close(pc.grad, pe.grad, rtol=1e-4, atol=1e-5)
            opt_e.step(), opt_c.step()
            opt_e.zero_grad(), opt_c.zero_grad()
    assert not [w for w in caught if "runs eagerly" in str(w.message)]
    assert metrics.generated_kernel_count > 4


# ---- caches and logs ----

@needs_gpu
def test_the_graph_cache_gives_back_a_working_cuda_program():
    def f(x):
        return ignis.softmax(x * 2, -1)
    x = _randn(9, 50)
    first, _ = compile_and_count(f, x)
    hits = metrics.fxgraph_cache_hit
    again, kernels = compile_and_count(f, x)
    assert kernels == 1
    assert metrics.fxgraph_cache_hit == hits + 1
    close(again, first, rtol=0, atol=0)


@needs_gpu
def test_profile_bandwidth_times_every_gpu_step():
    from ignis._inductor import step_profile
    step_profile.reset()
    x, w = _randn(64, 32), _randn(32, 16)
    with _inductor.config.patch(profile_bandwidth=True):
        compiled = _program(lambda x, w: (x @ w).relu().sum(-1) + x.sum(-1)[:1], x, w)
    for _ in range(3):
        compiled(x, w)
    rows = step_profile.rows()
    assert rows and all(calls == 3 for _, _, _, calls, _, _ in rows)
    assert any("extern mm" in r[1] for r in rows)
    kernels = [r for r in rows if "kernel_" in r[1]]
    assert kernels and all(nbytes > 0 and seconds > 0 for _, _, nbytes, _, seconds, _ in kernels)
    step_profile.reset()


@needs_gpu
def test_output_code_prints_the_cuda_source(capfd):
    from ignis import _logging
    _logging.set_logs(output_code=True)
    try:
        compile_and_count(lambda x: ignis.exp(x) + 1, _randn(3, 4))
    finally:
        _logging.set_logs()
    err = capfd.readouterr().err
    assert "device cuda:0" in err
    assert re.search(r"__global__ void __launch_bounds__\(\d+\) kernel_0_", err)


# ---- no GPU needed: NVRTC compiles every generated kernel ----

def _nvrtc():
    try:
        return ignis._C._cuda_nvrtc_version()
    except RuntimeError:
        return None


def _fake_cuda_graphs():
    """The joint graphs of the canonical patterns, traced with fake CUDA
    tensors (no GPU needed)."""
    from ignis._functorch.aot_autograd import trace_joint
    from ignis._subclasses.fake_tensor import FakeTensorMode
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
    cases = {
        "pointwise": (lambda x, y: ignis.relu(x + y) * 2, [(8, 16), (16,)]),
        "reductions": (lambda x: (x.sum(0), x.amax(-1), x.var(1, keepdim=True)), [(6, 7, 9)]),
        "layer_norm": (lambda x, w, b: F.layer_norm(x, (33,), w, b), [(5, 33), (33,), (33,)]),
        "softmax": (lambda x: ignis.log_softmax(x, -1) + ignis.softmax(x, -1), [(5, 33)]),
        "rms_norm": (_rms_norm, [(5, 33), (33,)]),
        # full and few-row reductions split among blocks (Note [Split row reductions])
        "split_rows": (lambda x: (x.sum() * 2, x.abs().amax(-1)), [(4, 1 << 16)]),
        # pow's shortcuts (BodyBuilder) and the device shims of vec_math.h's
        # float functions (device_scalar_ops.cpp), forward and backward
        "math": (lambda x, y: (ignis.pow(x, 3.0) + x ** -0.5 + ignis.pow(x.abs() + 1, y)
                               + ignis.expm1(x) + ignis.exp2(y) + ignis.sinh(x) * ignis.cosh(y)
                               + ignis.tan(x) + ignis.atan(y) + ignis.asin(x * 0.1)
                               + ignis.acos(y * 0.1) + ignis.atan2(x, y) + ignis.hypot(x, y)
                               + ignis.erfc(y) + F.elu(x)), [(7, 9), (7, 9)]),
    }
    # ... and in 16-bit types, whose graphs read float accumulators as the
    # 16-bit results eager rounds to (softmax's backward in bfloat16 failed
    # NVRTC and ran eagerly, 2.1x torch.compile's time on the H100).
    low = {"bfloat16": ["pointwise", "reductions", "layer_norm", "softmax", "rms_norm", "split_rows"],
           "float16": ["layer_norm", "softmax"]}
    out = {}
    with FakeTensorMode():
        for dtype in ["float32", *low]:
            for name, (fn, shapes) in cases.items():
                if dtype != "float32" and name not in low[dtype]:
                    continue
                args = [ignis.empty(*s, device="cuda", dtype=getattr(ignis, dtype))
                        .requires_grad_() for s in shapes]
                gm, _ = trace_joint(ignis.fx.symbolic_trace(fn), args)
                out[name if dtype == "float32" else f"{name}_{dtype}"] = gm
    return out


def _training_graphs():
    """The forward and backward graphs the compiler gets for an MLP's and the
    example GPT's training step, captured on the CPU (the same graphs as on a
    GPU but for the tensors' device, which _generate_graph_code retargets)."""
    from ignis._functorch.aot_autograd import aot_autograd
    from ignis.compiler import min_cut_rematerialization_partition
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
    from gpt import GPTConfig, build_gpt
    graphs = {}

    def backend_for(name):
        def keep(gm, example_inputs):
            graphs[f"{name}_{len([k for k in graphs if k.startswith(name)])}"] = gm
            return gm
        return aot_autograd(fw_compiler=keep, bw_compiler=keep,
                            partition_fn=min_cut_rematerialization_partition)

    ignis.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    x = ignis.randn(10, 8)
    ignis.compiler.reset()
    ignis.compile(lambda x: (ignis.sigmoid(mlp(x)) ** 2).mean(), backend=backend_for("mlp"))(
        x).backward()
    gpt = build_gpt(ignis)(GPTConfig(vocab_size=32, block_size=16, n_layer=2, n_head=2,
                                     n_embd=32))
    idx = ignis.randint(0, 32, (4, 16))
    ignis.compiler.reset()
    ignis.compile(gpt, backend=backend_for("gpt"))(idx, idx)[1].backward()
    ignis.compiler.reset()
    return graphs


def test_every_generated_kernel_compiles_with_nvrtc():
    version = _nvrtc()
    if version is None:
        pytest.skip("NVRTC cannot be loaded here: set IGNIS_NVRTC_LIBRARY, install the toolkit "
                    "or install the nvidia-cuda-nvrtc wheel")
    options = ["-default-device", "-w"]
    compiled = 0
    cases = [(name, gm, None) for name, gm in _fake_cuda_graphs().items()]
    cases += [(name, gm, "cuda") for name, gm in _training_graphs().items()]
    assert {"mlp_0", "mlp_1", "gpt_0", "gpt_1"} <= {c[0] for c in cases}
    for name, gm, device in cases:
        program, source, symbols = ignis._C._generate_graph_code(gm.graph, device)
        assert program.startswith("device cuda"), name
        assert symbols, name
        for s in symbols:
            assert re.search(r'extern "C" __global__ void __launch_bounds__\(\d+\) ' + s + r"\(",
                             source)
        assert ignis._C._cuda_nvrtc_compile(source, f"{name}.cu", 90, options) > 0
        compiled += len(symbols)
        if name.startswith("split_rows"):
            assert "ig_count[ig_row]" in source, source
    assert compiled >= 40


def test_kernels_of_one_structure_are_compiled_once():
    """Note [Kernels of one text]: three residual blocks of one shape (their
    own weights) lower to three kernels of each kind that differ only in
    their buffers; each kind is defined once, the others run its symbol with
    their own buffers (each kernel's parameters list other buffers), the
    source says so in a comment, and NVRTC compiles the whole."""
    from ignis._functorch.aot_autograd import trace_joint
    from ignis._subclasses.fake_tensor import FakeTensorMode

    def blocks(x, m0, w0, b0, m1, w1, b1, m2, w2, b2):
        for m, w, b in ((m0, w0, b0), (m1, w1, b1), (m2, w2, b2)):
            x = x + F.gelu(F.layer_norm(x @ m, (64,), w, b))  # the product ends a kernel
        return x
    with FakeTensorMode():
        args = [ignis.empty(32, 64, device="cuda")]
        for _ in range(3):
            args += [ignis.empty(64, 64, device="cuda"), ignis.empty(64, device="cuda"),
                     ignis.empty(64, device="cuda")]
        gm, _ = trace_joint(ignis.fx.symbolic_trace(blocks), args)
    program, source, symbols = ignis._C._generate_graph_code(gm.graph, None)
    assert len(symbols) == 3 and len(set(symbols)) == 1, (symbols, program)
    assert len(re.findall(r'extern "C" __global__', source)) == 1
    assert source.count(f"// runs {symbols[0]} (the same code)") == 2
    # kernel_1 reads the second block's weight where kernel_0 reads the first's
    assert kernel_arg(source, "arg2_1", 0) == kernel_arg(source, "arg5_1", 1)
    if _nvrtc() is not None:
        assert ignis._C._cuda_nvrtc_compile(source, "blocks.cu", 90,
                                            ["-default-device", "-w"]) > 0


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cross_entropy_gathers_the_logits_at_the_targets(dtype):
    # The gather sinks through log_softmax (graph/passes/sink_gather.h): the
    # forward keeps per-row max and sum, no float32 [N, V] log_softmax.
    n, v = 48, 777
    x0 = ignis.randn(n, v) * 3
    t = ignis.randint(0, v, (n,))
    t[::5] = -100
    dt = getattr(ignis, dtype)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=2e-2, atol=2e-2)
    for reduction in ("mean", "none"):
        def f(x, t):
            return F.cross_entropy(x, t, reduction=reduction)
        xc = x0.to(dt).cuda().requires_grad_()
        xe = x0.to(dt).cuda().requires_grad_()
        got, _ = compile_and_count(f, xc, t.cuda())
        want = f(xe, t.cuda())
        close(got, want, **tol)
        got.sum().backward()
        want.sum().backward()
        close(xc.grad, xe.grad, **tol)
    with ignis.no_grad():
        compiled = _program(lambda x, t: F.cross_entropy(x, t), x0.to(dt).cuda(), t.cuda())
    assert not re.search(rf"buf\d+: float32\[{n}, {v}\]", compiled.program), compiled.program
    assert "extern gather(" in compiled.program
    close(compiled(x0.to(dt).cuda(), t.cuda())[0], F.cross_entropy(x0.to(dt).cuda(), t.cuda()),
          **tol)


def test_cross_entropy_cuda_program_has_no_vocabulary_sized_float32_buffer():
    from ignis._functorch.aot_autograd import trace_joint
    from ignis._subclasses.fake_tensor import FakeTensorMode
    n, v = 64, 50304
    with FakeTensorMode():
        x = ignis.empty(n, v, dtype=ignis.bfloat16, device="cuda")
        t = ignis.empty(n, dtype=ignis.int64, device="cuda")
        gm, _ = trace_joint(ignis.fx.symbolic_trace(lambda x, t: F.cross_entropy(x, t)), [x, t])
    program, source, symbols = ignis._C._generate_graph_code(gm.graph, None)
    assert program.startswith("device cuda")
    assert not re.search(rf"buf\d+: float32\[{n}, {v}\]", program), program
    assert re.search(r"extern gather\((arg0_1|buf\d+), 1, buf\d+\)", program), program
    if _nvrtc() is not None:
        assert ignis._C._cuda_nvrtc_compile(source, "cross_entropy.cu", 90,
                                            ["-default-device", "-w"]) > 0


# ---- no GPU needed: the kernels with real threads per block on the host ----

HOST_THREADS_HEADER = pathlib.Path(__file__).resolve().parents[1] / "cuda_fake" / \
    "block_threads_host.h"
_BUFFER_LINE = re.compile(r"^(\w+): (\w+)\[([\d, ]*)\] strides \[([\d, ]*)\] (?:input (\d+)|computed)")


def _host_threads_kernel(fn, inputs, tmp_path, **knobs):
    """The one CUDA kernel the compiler generates for fn(*inputs) (under
    config `knobs`), compiled as host C++ with block_threads_host.h; returns
    run(grid, threads) -> the output as a NumPy array."""
    import ctypes
    import shutil
    import subprocess
    from ignis._functorch.aot_autograd import trace_joint
    if shutil.which("g++") is None:
        pytest.skip("no g++ here to build the host emulation")
    from ignis._inductor import config
    gm, _ = trace_joint(ignis.fx.symbolic_trace(fn), inputs)
    with config.patch(size_generic=False, **knobs):
        program, source, symbols = ignis._C._generate_graph_code(gm.graph, "cuda",
                                                                 config.compiler_options())
    assert len(symbols) == 1 and "extern " not in program, program
    sig = re.search(r'extern "C" __global__ void __launch_bounds__\(\d+\) ' + symbols[0] +
                    r"\((.*?)\) \{", source)
    params = [p.strip() for p in sig.group(1).split(",")]
    casts = ", ".join(f"({p.rsplit(' ', 1)[0].replace('__restrict__', '')})p[{i}]"
                      for i, p in enumerate(params))
    driver = (f'\nextern "C" void ig_run(void** p, unsigned grid, unsigned threads) '
              f"{{ ig_launch({symbols[0]}, grid, threads, {casts}); }}\n")
    src, lib = tmp_path / "kernel.cpp", tmp_path / "kernel.so"
    src.write_text(source + driver)
    subprocess.run(["g++", "-std=c++20", "-O1", "-w", "-shared", "-fPIC", "-pthread", "-include",
                    str(HOST_THREADS_HEADER), "-x", "c++", str(src), "-o", str(lib)], check=True)
    run_lib = ctypes.CDLL(str(lib))
    buffers = {}
    for line in program.splitlines():
        m = _BUFFER_LINE.match(line)
        if m:
            buffers[m.group(1)] = (m.group(2), [int(s) for s in m.group(3).split(",") if s.strip()],
                                   m.group(5))
    output = re.search(r"return \((\w+)", program).group(1)
    names = kernel_args(source)  # argN -> the graph's buffer

    def run(grid, threads):
        arrays = []
        for p in params:
            name = names[p.split()[-1]]
            dtype, sizes, input_index = buffers[name]
            if input_index is not None:
                a = np.ascontiguousarray(inputs[int(input_index)].numpy())
            else:
                a = np.full(sizes, np.nan, dtype=dtype)
            arrays.append((name, a))
        ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for _, a in arrays])
        run_lib.ig_run(ptrs, grid, threads)
        return dict(arrays)[output]
    return run


HOST_CASES = {
    "softmax": (lambda x: ignis.softmax(x, -1), [(7, 129)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (129,), w, b), [(7, 129), (129,), (129,)]),
    "rms_norm": (_rms_norm, [(7, 129), (129,)]),
    "var_middle": (lambda x: x.var(1), [(3, 45, 5)]),
    "column_sum": (lambda x: (x * 2).sum(0), [(70, 6)]),
    # Note [Vectors of columns]: 4 columns a thread
    "column_sum_vectors": (lambda x: (x * 2).sum(0), [(70, 24)]),
    "amax_nan": (lambda x: x.amax(-1), [(5, 100)]),
    "pointwise": (lambda x, y: ignis.relu(x * y) + ignis.exp(-y), [(9, 31), (31,)]),
    # a per-thread scratch row on the CPU, recomputed on the GPU
    "residual_layer_norm": (lambda x, a, b: F.layer_norm(x + a + b, (64,)), [(8, 64)] * 3),
}


def test_a_long_resident_row_recomputes_its_spills_on_host_threads(tmp_path):
    """Softmax over 32768 floats runs 1024 threads a row, each holding 8
    vectors of 4 of x; its exps too would take 64 more registers a thread,
    past what a thread of a 1024-thread block has, so the normalising pass
    recomputes exp from the held x instead (no ig_sp array). Both the
    resident path (1024 threads) and the streaming one (256) are right."""
    from ignis._functorch.aot_autograd import trace_joint

    def fn(x):
        return ignis.softmax(x, -1)
    ignis.manual_seed(0)
    x = ignis.randn(2, 32768) * 3
    gm, _ = trace_joint(ignis.fx.symbolic_trace(fn), [x])
    _, source, _ = ignis._C._generate_graph_code(gm.graph, "cuda")
    assert "__launch_bounds__(1024)" in source
    assert "ig_rc0[8][4]" in source and "ig_sp" not in source
    assert re.search(r"const float re\d+ = ignis::scalar_ops::Exp", source)
    want = fn(x).numpy()
    run = _host_threads_kernel(fn, [x], tmp_path)
    for threads in (1024, 256):
        got = run(2, threads).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-8,
                                   err_msg=f"{threads} threads a block")


def test_row_occupancy_recomputes_what_passes_share_in_kernels_of_many_rounds():
    """config.cuda.row_occupancy (Note [Occupancy before kept values]): a
    softmax over 8192 x 8192 bfloat16 (256 threads a row, 31 rounds of
    blocks with its exps kept) recomputes the exps from the held row in its
    last pass instead of keeping them in an ig_sp array; 64 rows of the
    same width (under a round) keep them; off, both keep them. (The
    recomputing path's results: test_a_long_resident_row_recomputes_its_spills_on_host_threads,
    and on the GPU bench/gpu_rows.py's check against eager.)"""
    from ignis._functorch.aot_autograd import trace_joint
    from ignis._inductor import config

    def source(rows, **knobs):
        x = ignis.empty(rows, 8192, dtype=ignis.bfloat16)
        gm, _ = trace_joint(ignis.fx.symbolic_trace(lambda x: ignis.softmax(x, -1)), [x])
        with config.patch(size_generic=False, **knobs):
            return ignis._C._generate_graph_code(gm.graph, "cuda", config.compiler_options())[1]

    many = source(8192, **{"cuda.row_occupancy": True})
    assert "ig_rc0[4][8]" in many and "ig_sp" not in many
    assert re.search(r"const float re\d+ = ignis::scalar_ops::Exp", many)
    assert "ig_sp0[4][8]" in source(64, **{"cuda.row_occupancy": True})
    assert "ig_sp0[4][8]" in source(8192, **{"cuda.row_occupancy": False})


@pytest.mark.parametrize("hoist", [False, True], ids=["guarded", "hoisted"])
@pytest.mark.parametrize("case", sorted(HOST_CASES))
def test_kernels_are_right_for_any_block_size_on_host_threads(case, hoist, tmp_path):
    fn, shapes = HOST_CASES[case]
    ignis.manual_seed(0)
    inputs = [ignis.randn(*s) for s in shapes]
    if case == "amax_nan":
        inputs[0][1, 40] = float("nan")
        inputs[0][3, 99] = float("nan")
    want = fn(*inputs).numpy()
    # config.cuda.row_hoist_chunks: Note [Chunks the compiler can hoist]
    run = _host_threads_kernel(fn, inputs, tmp_path, **{"cuda.row_hoist_chunks": hoist})
    # 1 thread (the fake driver's), part of a warp, a warp and one lane, a
    # few warps, the compiler's 256; 3 blocks stride over the rows (32 and 64
    # are these rows' planned blocks).
    for threads in (1, 5, 32, 33, 64, 256):
        got = run(3, threads).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5,
                                   err_msg=f"{case} with {threads} threads a block")


def test_row_kernels_follow_the_cuda_knobs():
    """config.cuda (no GPU needed: the CUDA text of graphs traced on the CPU).
    A layer_norm of few rounds of blocks (GPT-2's 4096 rows of 768) loads its
    weight and bias before the first pass, beside x; one of many rounds
    (16384 rows of 4096) does not (their registers would lower its
    occupancy); row_prefetch=False turns it off; row_vectors_per_thread
    sizes the block; the host-thread cases' layer_norm prefetches too, so
    test_kernels_are_right_for_any_block_size_on_host_threads runs that
    path; a bad value is an error naming the knob."""
    from ignis._functorch.aot_autograd import trace_joint
    from ignis._inductor import config

    def source(rows, cols, **knobs):
        x = ignis.empty(rows, cols, dtype=ignis.bfloat16)
        w, b = ignis.empty(cols, dtype=ignis.bfloat16), ignis.empty(cols, dtype=ignis.bfloat16)
        gm, _ = trace_joint(ignis.fx.symbolic_trace(
            lambda x, w, b: F.layer_norm(x, (cols,), w, b)), [x, w, b])
        with config.patch(size_generic=False, **knobs):
            return ignis._C._generate_graph_code(gm.graph, "cuda", config.compiler_options())[1]

    short = source(4096, 768)
    first_pass = short.index("acc0 = ig_block_reduce(acc0")
    weight, bias = kernel_arg(short, "arg1_1"), kernel_arg(short, "arg2_1")
    assert short.count(f"ig_pf = *reinterpret_cast<const IgVec<ig_bf16, 8>*>({weight} ") == 1
    assert short.index(f"ig_pf = *reinterpret_cast<const IgVec<ig_bf16, 8>*>({bias} ") < first_pass
    assert "__launch_bounds__(32) " in short
    # Note [One wave of short rows]: 4096 one-warp rows ask for 32 blocks a
    # multiprocessor (one round on 132); 16384 rows of 4096 could never run
    # in one round, and 96-thread blocks cannot be 32 a multiprocessor.
    one_wave = {"cuda.row_one_wave": True}
    assert "__launch_bounds__(32, 32) " in source(4096, 768, **one_wave)
    assert "__launch_bounds__(128) " in source(16384, 4096, **one_wave)
    assert "__launch_bounds__(96) " in source(
        4096, 768, **one_wave, **{"cuda.row_vectors_per_thread": 1})
    assert "ig_pf" not in source(16384, 4096)
    assert "ig_pf" not in source(4096, 768, **{"cuda.row_prefetch": False})
    assert "__launch_bounds__(96) " in source(4096, 768, **{"cuda.row_vectors_per_thread": 1})
    fn, shapes = HOST_CASES["layer_norm"]
    gm, _ = trace_joint(ignis.fx.symbolic_trace(fn), [ignis.randn(*s) for s in shapes])
    with config.patch(size_generic=False):
        assert "ig_pf" in ignis._C._generate_graph_code(gm.graph, "cuda",
                                                        config.compiler_options())[1]
    with pytest.raises(ValueError, match="row_vectors_per_thread"):
        source(64, 768, **{"cuda.row_vectors_per_thread": 0})

"""Matrix products on CUDA through cuBLASLt (src/ignis/cuda/cublaslt.h, cuda/blas.h,
kernels/cuda/gemm.h, ops/matrix_cuda.h).

The first part runs everywhere: the loader's symbol table against a real libcublasLt when
one is found (the toolkit's or a pip wheel's; dlopen needs no GPU), the reason it gives
when the library is missing, and the TF32 settings. The second part needs a GPU (skipped
with the reason elsewhere) and compares every product with the CPU's on the same rounded
inputs: mm, bmm, addmm, baddbmm, mv, dot, matmul's rank cases, linear; float32 (with and
without TF32), float16, bfloat16 and float64; contiguous, transposed, strided (a copy) and
padded (a leading dimension larger than the row) operands; broadcast batches; beta/alpha;
empty and k = 0 products; the error messages.
"""
import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis

AVAILABLE = ignis.cuda.is_available()
REASON = ignis._C._cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(not AVAILABLE, reason=f"no usable CUDA GPU here: {REASON}")

FLOAT_DTYPES = ["float32", "float16", "bfloat16", "float64"]
# Largest |gpu - cpu| / max(1, max|cpu|) accepted, per dtype. The CPU reference is computed
# in float64 from the same rounded inputs, so what remains is the GPU's accumulation order
# and the rounding of the result (bf16: 2^-8, fp16: 2^-11), or TF32's 10-bit inputs.
TOL = {"float32": 2e-5, "tf32": 6e-3, "float16": 4e-3, "bfloat16": 2e-2, "float64": 1e-12}


def _library_candidates():
    """libcublasLt files on this machine: $IGNIS_CUBLASLT_LIBRARY, the toolkit's, pip wheels'."""
    c = []
    if os.environ.get("IGNIS_CUBLASLT_LIBRARY"):
        c.append(os.environ["IGNIS_CUBLASLT_LIBRARY"])
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            c += sorted(glob.glob(os.path.join(root, "lib64", "libcublasLt.so.*")))
    for p in sys.path:
        c += sorted(glob.glob(os.path.join(p or ".", "nvidia", "*", "lib", "libcublasLt.so.*")))
    return [x for x in c if os.path.exists(x)]


# ---- everywhere ---------------------------------------------------------------------------

def test_loader_resolves_every_symbol_of_a_real_cublaslt():
    libs = _library_candidates()
    if not libs:
        pytest.skip("no libcublasLt here (no toolkit under $CUDA_HOME or /usr/local/cuda, no "
                    "nvidia-cublas wheel on sys.path, IGNIS_CUBLASLT_LIBRARY unset)")
    loaded, reason, version = ignis._C._cublaslt_probe(libs[0])
    assert loaded, reason
    assert reason == ""
    assert version >= 120000, version  # cuBLASLt 12.0 or later (major * 10000 + ...)


def test_loader_names_a_missing_library():
    loaded, reason, version = ignis._C._cublaslt_probe("/nonexistent/libcublasLt.so.13")
    assert not loaded and version == 0
    assert "could not load /nonexistent/libcublasLt.so.13" in reason


def test_loader_names_a_library_without_cublaslt_symbols():
    # Any shared library lacking cublasLtCreate: the loader names the first missing symbol.
    libm = next((p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib64/libm.so.6",
                             "/lib64/libm.so.6") if os.path.exists(p)), None)
    if libm is None:
        pytest.skip("no libm.so.6 at the usual paths")
    loaded, reason, _ = ignis._C._cublaslt_probe(libm)
    assert not loaded
    assert "has no symbol cublasLtCreate" in reason


def test_process_loader_reports_what_it_tried(tmp_path):
    # A fresh process whose search finds nothing reports every path it tried and how to
    # fix it; where a libcublasLt is on the loader's path anyway, it names the one it used.
    env = dict(os.environ, IGNIS_CUBLASLT_LIBRARY=str(tmp_path / "missing.so"),
               CUDA_HOME=str(tmp_path), CUDA_PATH=str(tmp_path))
    code = ("import _checkout, ignis; print(repr(ignis._C._cublaslt_status()))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(__file__), timeout=120)
    assert out.returncode == 0, out.stderr
    loaded, path, reason = eval(out.stdout.strip())
    if loaded:
        assert path and "missing.so" not in path
        return
    assert str(tmp_path / "missing.so") in reason
    assert "libcublasLt.so.13" in reason and "libcublasLt.so.12" in reason
    assert "IGNIS_CUBLASLT_LIBRARY" in reason and "nvidia-cublas" in reason


def test_tf32_settings_follow_torch():
    m = ignis.backends.cuda.matmul
    assert ignis.get_float32_matmul_precision() == "highest"
    assert m.allow_tf32 is False and ignis._C._cuda_blas_allow_tf32() is False
    try:
        m.allow_tf32 = True
        assert ignis.get_float32_matmul_precision() == "high"
        assert ignis._C._cuda_blas_allow_tf32() is True
        ignis.set_float32_matmul_precision("highest")
        assert m.allow_tf32 is False and ignis._C._cuda_blas_allow_tf32() is False
        ignis.set_float32_matmul_precision("medium")
        assert m.allow_tf32 is True and ignis._C._cuda_blas_allow_tf32() is True
        assert ignis.get_float32_matmul_precision() == "medium"
        with pytest.raises(RuntimeError, match="Invalid precision"):
            ignis.set_float32_matmul_precision("low")
    finally:
        ignis.set_float32_matmul_precision("highest")


# ---- on a GPU -----------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _highest_precision():
    ignis.set_float32_matmul_precision("highest")
    yield
    ignis.set_float32_matmul_precision("highest")


def rand(shape, dtype, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ignis.from_numpy(a).to(getattr(ignis, dtype))


def on_gpu(t):
    return t.to("cuda")


def check(gpu, cpu_ref, dtype):
    """gpu (any layout) against the CPU reference computed in float64."""
    assert gpu.device.type == "cuda"
    g = gpu.cpu().double().numpy()
    r = cpu_ref.double().numpy() if isinstance(cpu_ref, ignis.Tensor) else cpu_ref
    assert g.shape == r.shape, (g.shape, r.shape)
    if g.size == 0:
        return
    err = np.max(np.abs(g - r)) / max(1.0, np.max(np.abs(r)))
    assert err <= TOL[dtype], f"{dtype}: relative error {err:.3g} > {TOL[dtype]}"


def d(t):
    """The CPU reference's operand: the same rounded values in float64."""
    return t.double()


def needs_cuda_add():
    """Skips unless `add` has a CUDA kernel (the pointwise CUDA ops come separately)."""
    try:
        ignis.ones(1, device="cuda") + ignis.ones(1, device="cuda")
    except NotImplementedError as e:
        pytest.skip(f"needs add on CUDA: {e}")


# Operand layouts for an [r, c] matrix: contiguous, a transposed view (a transpose flag),
# a strided view (copied), a column slice of a wider matrix (leading dimension > c).
def layout(kind, r, c, dtype, seed):
    if kind == "contiguous":
        return rand((r, c), dtype, seed)
    if kind == "transposed":
        return rand((c, r), dtype, seed).t()
    if kind == "strided":
        return rand((r, 2 * c), dtype, seed)[:, ::2]
    if kind == "padded":
        return rand((r, c + 3), dtype, seed)[:, 1:c + 1]
    raise ValueError(kind)


LAYOUTS = ["contiguous", "transposed", "strided", "padded"]
SHAPES = [(1, 1, 1), (7, 13, 5), (64, 32, 48), (128, 256, 64), (33, 65, 17)]


@needs_gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_mm_layouts(dtype, la, lb):
    for i, (m, k, n) in enumerate(SHAPES):
        a, b = layout(la, m, k, dtype, i), layout(lb, k, n, dtype, 100 + i)
        out = ignis.mm(on_gpu(a), on_gpu(b))
        assert out.dtype == a.dtype and out.shape == (m, n) and out.is_contiguous()
        check(out, ignis.mm(d(a), d(b)), dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_mm_of_views_at_odd_offsets(dtype):
    # Operands whose data pointer is only element-aligned: the heuristic is told.
    base = rand((70, 70), dtype, 0)
    a, b = base[1:34, 3:20], base[5:22, 7:40].t().contiguous().t()
    check(ignis.mm(on_gpu(base)[1:34, 3:20], on_gpu(b)), ignis.mm(d(a), d(b)), dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_empty_and_k_zero_products(dtype):
    assert ignis.mm(on_gpu(rand((0, 5), dtype, 0)), on_gpu(rand((5, 3), dtype, 1))).shape == (0, 3)
    z = ignis.mm(on_gpu(rand((4, 0), dtype, 0)), on_gpu(rand((0, 3), dtype, 1)))
    assert z.shape == (4, 3) and np.all(z.cpu().double().numpy() == 0)
    self = rand((4, 3), dtype, 2)
    out = ignis.addmm(on_gpu(self), on_gpu(rand((4, 0), dtype, 0)), on_gpu(rand((0, 3), dtype, 1)),
                      beta=0.5)
    check(out, d(self) * 0.5, dtype)


# bmm operands: the stored tensor's shape and the view taken of it (the same on both devices).
BMM_CASES = {
    "contiguous": (lambda B, r, c: (B, r, c), lambda t: t),
    "transposed": (lambda B, r, c: (B, c, r), lambda t: t.transpose(1, 2)),
    # the batch is not the outermost dimension in memory
    "permuted": (lambda B, r, c: (r, B, c), lambda t: t.permute(1, 0, 2)),
    # a batch stride of 0
    "broadcast": (lambda B, r, c: (1, r, c), lambda t: t.expand(5, t.shape[1], t.shape[2])),
}


@needs_gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("ca", list(BMM_CASES))
@pytest.mark.parametrize("cb", ["contiguous", "transposed", "permuted"])
def test_bmm(dtype, ca, cb):
    B, m, k, n = 5, 17, 24, 9
    (sa, fa), (sb, fb) = BMM_CASES[ca], BMM_CASES[cb]
    a0, b0 = rand(sa(B, m, k), dtype, 0), rand(sb(B, k, n), dtype, 1)
    out = ignis.bmm(fa(on_gpu(a0)), fb(on_gpu(b0)))
    assert out.shape == (B, m, n)
    check(out, ignis.bmm(fa(d(a0)), fb(d(b0))), dtype)


MATMUL_SHAPES = [
    ((13,), (13,)), ((7, 13), (13,)), ((13,), (13, 5)), ((7, 13), (13, 5)),
    ((3, 7, 13), (13, 5)), ((3, 7, 13), (13,)), ((13,), (3, 13, 5)), ((3, 7, 13), (3, 13, 5)),
    ((2, 1, 7, 13), (4, 13, 5)), ((4, 7, 13), (2, 1, 13, 5)), ((2, 3, 4, 7, 13), (13, 5)),
]


@needs_gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_rank_cases(dtype, sa, sb):
    a, b = rand(sa, dtype, 0), rand(sb, dtype, 1)
    out = ignis.matmul(on_gpu(a), on_gpu(b))
    ref = ignis.matmul(d(a), d(b))
    assert tuple(out.shape) == tuple(ref.shape)
    check(out, ref, dtype)
    check(on_gpu(a) @ on_gpu(b), ref, dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("self_shape", [(5,), (1, 5), (7, 1), (7, 5), ()])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1), (1, -0.5)])
def test_addmm(dtype, self_shape, beta, alpha):
    s, a, b = rand(self_shape, dtype, 0), rand((7, 11), dtype, 1), rand((11, 5), dtype, 2)
    gs = on_gpu(s)
    if beta == 0:  # beta = 0 ignores self, NaN included
        gs = on_gpu(ignis.full(self_shape, float("nan"), dtype=s.dtype))
    out = ignis.addmm(gs, on_gpu(a), on_gpu(b), beta=beta, alpha=alpha)
    ref = ignis.addmm(d(s), d(a), d(b), beta=beta, alpha=alpha)
    check(out, ref, dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_addmm_with_a_transposed_operand_and_bias(dtype):
    bias, a, w = rand((48,), dtype, 0), rand((64, 32), dtype, 1), rand((48, 32), dtype, 2)
    out = ignis.addmm(on_gpu(bias), on_gpu(a), on_gpu(w).t())
    check(out, ignis.addmm(d(bias), d(a), d(w).t()), dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("self_shape", [(9,), (5, 7, 9), (1, 7, 1)])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.25, 3.0), (0, 1)])
def test_baddbmm(dtype, self_shape, beta, alpha):
    s, a, b = rand(self_shape, dtype, 0), rand((5, 7, 11), dtype, 1), rand((5, 11, 9), dtype, 2)
    out = ignis.baddbmm(on_gpu(s), on_gpu(a), on_gpu(b), beta=beta, alpha=alpha)
    check(out, ignis.baddbmm(d(s), d(a), d(b), beta=beta, alpha=alpha), dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("x_shape", [(16, 32), (2, 8, 32), (32,), (3, 4, 5, 32)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear(dtype, x_shape, with_bias):
    if with_bias and len(x_shape) == 1:
        needs_cuda_add()  # linear adds the bias to a 1-D input's product with `add`
    x, w = rand(x_shape, dtype, 0), rand((24, 32), dtype, 1)
    bias = rand((24,), dtype, 2) if with_bias else None
    out = ignis.nn.functional.linear(on_gpu(x), on_gpu(w), None if bias is None else on_gpu(bias))
    ref = ignis.nn.functional.linear(d(x), d(w), None if bias is None else d(bias))
    check(out, ref, dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_linear_bias_rides_the_epilogue(dtype):
    # linear(x, w, b) for a 2-D x is addmm(b, x, w.t()): one matmul with the BIAS epilogue,
    # on aligned contiguous operands without a fallback.
    x, w, b = (on_gpu(rand(s, dtype, i)) for i, s in enumerate([(64, 32), (48, 32), (48,)]))
    before = ignis._C._cuda_blas_stats()
    out = ignis.nn.functional.linear(x, w, b)
    after = ignis._C._cuda_blas_stats()
    assert after["matmuls"] == before["matmuls"] + 1
    assert after["bias_epilogues"] == before["bias_epilogues"] + 1
    assert after["no_algorithm"] == before["no_algorithm"]
    check(out, ignis.nn.functional.linear(d(x.cpu()), d(w.cpu()), d(b.cpu())), dtype)


@needs_gpu
def test_linear_module_on_cuda():
    lin = ignis.nn.Linear(32, 24)
    x = rand((8, 32), "float32", 0)
    ref = lin(x)
    lin = lin.to("cuda")
    check(lin(on_gpu(x)), ref.detach(), "float32")


@needs_gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_mv_and_dot_with_strides(dtype):
    m, v = rand((9, 14), dtype, 0), rand((28,), dtype, 1)[::2]
    gm, gv = on_gpu(rand((9, 14), dtype, 0)), on_gpu(rand((28,), dtype, 1))[::2]
    check(ignis.mv(gm, gv), ignis.mv(d(m), d(v)), dtype)
    check(ignis.mv(gm.t().contiguous().t(), gv), ignis.mv(d(m), d(v)), dtype)
    check(ignis.dot(gv, gv), ignis.dot(d(v), d(v)), dtype)


@needs_gpu
def test_tf32_changes_float32_precision_only_when_allowed():
    a, b = rand((512, 512), "float32", 0), rand((512, 512), "float32", 1)
    ga, gb = on_gpu(a), on_gpu(b)
    ref = ignis.mm(d(a), d(b))
    exact = ignis.mm(ga, gb)
    check(exact, ref, "float32")
    ignis.backends.cuda.matmul.allow_tf32 = True
    fast = ignis.mm(ga, gb)
    check(fast, ref, "tf32")
    if ignis.cuda.get_device_capability()[0] >= 8:  # TF32 tensor cores (Ampere and later)
        err = np.max(np.abs(fast.cpu().double().numpy() - ref.numpy()))
        assert err > 1e-4, "allow_tf32 = True should round inputs to TF32 on this GPU"
    ignis.backends.cuda.matmul.allow_tf32 = False
    check(ignis.mm(ga, gb), ref, "float32")


@needs_gpu
def test_plans_are_cached():
    a, b = on_gpu(rand((40, 24), "float32", 0)), on_gpu(rand((24, 56), "float32", 1))
    ignis.mm(a, b)
    before = ignis._C._cuda_blas_stats()
    for _ in range(3):
        ignis.mm(a, b)
    after = ignis._C._cuda_blas_stats()
    assert after["plans"] == before["plans"]
    assert after["plan_hits"] == before["plan_hits"] + 3
    assert after["matmuls"] == before["matmuls"] + 3
    ignis.mm(b.t(), a.t())  # a new layout: one new plan
    assert ignis._C._cuda_blas_stats()["plans"] == after["plans"] + 1


@needs_gpu
def test_products_on_a_side_stream():
    s = ignis.cuda.Stream()
    a, b = rand((64, 64), "float32", 0), rand((64, 64), "float32", 1)
    with ignis.cuda.stream(s):
        out = ignis.mm(on_gpu(a), on_gpu(b))
    s.synchronize()
    check(out, ignis.mm(d(a), d(b)), "float32")


@needs_gpu
def test_errors():
    a = on_gpu(rand((4, 5), "float32", 0))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ignis.mm(a, rand((5, 3), "float32", 1))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        ignis.mm(a, on_gpu(rand((5, 3), "bfloat16", 1)))
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        ignis.mm(a, on_gpu(rand((4, 3), "float32", 1)))
    ints = on_gpu(ignis.ones((4, 4), dtype=ignis.int64))
    with pytest.raises(NotImplementedError, match="\"addmm_cuda\" not implemented for 'Long'"):
        ignis.mm(ints, ints)
    with pytest.raises(NotImplementedError, match="\"bmm_cuda\" not implemented for 'Int'"):
        i3 = on_gpu(ignis.ones((2, 4, 4), dtype=ignis.int32))
        ignis.bmm(i3, i3)


@needs_gpu
def test_mm_backward_on_cuda():
    # mm's derivative is device-neutral (mm of transposed views): it runs on cuBLASLt too.
    a, b, g = rand((6, 5), "float32", 0), rand((5, 4), "float32", 1), rand((6, 4), "float32", 2)
    ga = on_gpu(a).requires_grad_()
    gb = on_gpu(b).requires_grad_()
    ignis.mm(ga, gb).backward(on_gpu(g))
    check(ga.grad, ignis.mm(d(g), d(b).t()), "float32")
    check(gb.grad, ignis.mm(d(a).t(), d(g)), "float32")


# ---- cuBLASLt warmed up in the background (Note [cuBLASLt warmed in the background]) ----
_PREWARM_PROGRAM = """
import _checkout, ignis, numpy as np
x = ignis.ones(4, device="cuda")
state = ignis._C._cuda_gemm_prewarm_state(0, True)
stats = ignis._C._cuda_blas_stats()
a = np.arange(12, dtype=np.float32).reshape(3, 4)
y = (ignis.from_numpy(a).cuda() @ ignis.from_numpy(a.T.copy()).cuda()).cpu().numpy()
print(repr((state, stats["plans"], stats["matmuls"], float(abs(y - a @ a.T).max()))))
"""


def _run_program(code, **env):
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env),
                         capture_output=True, text=True, cwd=os.path.dirname(__file__),
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@needs_gpu
def test_first_context_warms_cublaslt_up_in_the_background():
    # The thread loads cuBLASLt and runs its small products outside the plan cache and the
    # counters: a program's own first product still builds its plan and counts one matmul.
    state, plans, matmuls, err = eval(_run_program(_PREWARM_PROGRAM))
    assert state == "done"
    assert (plans, matmuls) == (0, 0)
    assert err == 0.0
    state, plans, matmuls, err = eval(_run_program(_PREWARM_PROGRAM, IGNIS_CUDA_PREWARM="0"))
    assert state == "off" and err == 0.0


@needs_gpu
def test_a_program_that_exits_while_the_warm_up_runs_exits_cleanly():
    # Exit right after the context is made: the thread is joined at exit, not torn down
    # inside cuBLASLt (a crash or a hang here would fail the run or time out).
    for _ in range(3):
        assert _run_program("import _checkout, ignis; ignis.ones(1, device='cuda'); "
                            "print('ok')") == "ok"

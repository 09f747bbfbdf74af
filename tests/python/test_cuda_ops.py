"""Eager CUDA kernels of the pointwise ops, reductions, softmax and layer norm
(src/ignis/kernels/cuda: pointwise, reduce, row_kernels).

The first part runs everywhere, with no GPU:
  * every generated kernel (each pointwise op's scalar function x each dtype
    it declares, in each layout; every reduction x dtype; softmax and layer
    norm x floating dtype) is compiled by NVRTC to PTX for compute_90
    (unoptimized; one unit of each family also optimized on to an sm_90
    cubin), so that an error in
    generated source fails here rather than on the first GPU call. It
    skips, saying so, when NVRTC cannot be loaded;
  * the op registry: every pointwise op with a scalar function has a CUDA
    kernel, and every reduction in the registry either has one or is listed
    below as CPU-only.
The second part needs a GPU and is skipped with the reason elsewhere. It is
driven by the registry: every pointwise op is called on CUDA with inputs
generated from its schema and compared with the same call on the CPU
(values, dtypes, a CPU error must be a CUDA error too), for every dtype,
broadcast, non-contiguous, with a Python-number operand and in place; each
reduction over inner, outer, several and all dims, keepdim, long rows (the
split path) and 16-bit floats; softmax, log_softmax and layer norm (and its
backward); autograd through CUDA tensors.
"""
import math
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
from _fake_launches import launched, require_fake_gpu

AVAILABLE = ignis.cuda.is_available()
REASON = ignis._C._cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(not AVAILABLE, reason=f"no usable CUDA GPU here: {REASON}")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]

# Reductions that have no CUDA kernel yet (they raise NotImplementedError on
# CUDA tensors): none since the scans have theirs.
CPU_ONLY_REDUCTIONS = set()


@pytest.fixture(scope="session", autouse=True)
def _warm_kernel_cache():
    """On a GPU, first compile every generated kernel into the disk cache on
    all cores (cuda::precompile), so that the tests load them rather than
    compile some 1900 kernels one at a time (minutes of NVRTC). The fake
    driver's runs skip it: they compile each kernel for the host anyway."""
    if AVAILABLE and ignis.cuda.get_device_name(0) != "Fake GPU":
        t0 = time.time()
        n = ignis._C._cuda_precompile_eager_kernels(0, os.cpu_count() or 1)
        print(f"\nprecompiled {n} kernels into the disk cache in {time.time() - t0:.1f} s")
    yield


def _nvrtc():
    try:
        return ignis._C._cuda_nvrtc_version()
    except RuntimeError as e:
        return str(e)


# ---- everywhere --------------------------------------------------------------------------

def test_every_generated_kernel_compiles_with_nvrtc():
    version = _nvrtc()
    if isinstance(version, str):
        pytest.skip(f"NVRTC cannot be loaded here ({version[:200]}); set IGNIS_NVRTC_LIBRARY "
                    "or install the nvidia-cuda-nvrtc wheel")
    units = ignis._C._cuda_eager_kernel_units()
    kernels = sum(u[3] for u in units)
    assert kernels > 1000, kernels
    labels = [u[0] for u in units]
    # One unit per pointwise scalar function, per reduction and per dtype of
    # the row kernels.
    assert any(l.startswith("pw_add") for l in labels)
    assert any(l.startswith("red_var") for l in labels)
    assert "rows_float16.cu" in labels

    # Every unit to PTX without device optimization (-G): NVRTC's front end,
    # where an error in generated source shows, and code generation, at a
    # fifth of the time. The smallest unit of each family (pw_, red_, rows_,
    # flash_, ...) also goes the production way, optimized through ptxas to a
    # cubin, which keeps that path checked without paying for it 144 times
    # (the GPU tests run every kernel the production way).
    smallest = {}
    for u in units:
        family = u[0].split("_")[0]
        if family not in smallest or len(u[1]) < len(smallest[family][1]):
            smallest[family] = u
    jobs = [(u, True) for u in units] + [(u, False) for u in smallest.values()]

    def compile_one(job):
        (label, source, options, _), ptx = job
        return ignis._C._cuda_nvrtc_compile(source, label, 90,
                                            list(options) + ["-G"] if ptx else options, ptx)

    t0 = time.time()
    workers = max(1, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as pool:
        sizes = list(pool.map(compile_one, jobs))
    assert all(s > 0 for s in sizes)
    print(f"\n{len(units)} NVRTC units ({len(smallest)} also to cubin), {kernels} kernels, "
          f"NVRTC {version[0]}: {time.time() - t0:.1f} s")


def test_generated_kernels_call_the_shared_scalar_functions():
    units = {u[0]: u[1] for u in ignis._C._cuda_eager_kernel_units()}
    src = units["pw_exp.cu"]
    # The CPU's own definition, not a second CUDA table.
    assert "IGNIS_UNARY_OP(Exp, \"exp\", cpu::vexp(x))" in src
    assert "ignis::scalar_ops::Exp()(x[0])" in src
    assert "ignis::scalar_ops::Add()(x[0], x[1], ig_scalar<C>(s, 0))" in units["pw_add.cu"]


def _ops(category):
    names = sorted(n for n in dir(ignis.ops) if not n.startswith("_"))
    out = []
    for n in names:
        op = getattr(ignis.ops, n)
        if getattr(op, "category", None) == category and op.alias_of is None:
            out.append((n, op))
    return out


def test_every_pointwise_op_with_a_scalar_function_has_a_cuda_kernel():
    missing = [n for n, op in _ops("pointwise")
               if op.scalar_name is not None and not op.has_cuda_kernel]
    assert not missing, missing


def test_every_reduction_has_a_cuda_kernel_or_is_listed_cpu_only():
    missing = [n for n, op in _ops("reduction")
               if not op.has_cuda_kernel and n not in CPU_ONLY_REDUCTIONS]
    assert not missing, missing


def test_softmax_and_layer_norm_have_cuda_kernels():
    for n in ["softmax", "log_softmax", "_safe_softmax", "native_layer_norm",
              "native_layer_norm_backward"]:
        assert getattr(ignis.ops, n).has_cuda_kernel, n


# ---- on a GPU: the registry's pointwise ops against the CPU --------------------------------

def _tol(dtype):
    return {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (2e-5, 1e-6),
            "float64": (1e-10, 1e-10)}.get(dtype, (0, 0))


def _to_numpy(t):
    t = t.cpu()
    if t.dtype in (ignis.bfloat16, ignis.float16):
        t = t.float()
    return t.numpy()


def assert_same(cuda_result, cpu_result, dtype=None, what="", scale=1.0, atol_extra=0.0):
    """Same dtype and shape; values equal for integers and bool, else within
    the dtype's tolerance times `scale` (sums whose terms cancel, gradients)."""
    if isinstance(cpu_result, (tuple, list)):
        assert len(cuda_result) == len(cpu_result)
        for a, b in zip(cuda_result, cpu_result):
            if a is None or b is None:
                assert a is None and b is None, what
                continue
            assert_same(a, b, dtype, what, scale, atol_extra)
        return
    assert cuda_result.device.type == "cuda", what
    assert cuda_result.dtype == cpu_result.dtype, (what, cuda_result.dtype, cpu_result.dtype)
    assert tuple(cuda_result.shape) == tuple(cpu_result.shape), what
    rtol, atol = _tol(str(cpu_result.dtype).replace("ignis.", ""))
    rtol, atol = rtol * scale, atol * scale + atol_extra
    a, b = _to_numpy(cuda_result), _to_numpy(cpu_result)
    if rtol == 0:
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        # Transcendental functions near their poles (tan, lgamma-like
        # growth) differ by ulps scaled by the value: compare relatively.
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


_rng = np.random.default_rng(0)


def _sample(shape, dtype, role=""):
    """Inputs that keep every op in its domain on both devices: integers are
    non-zero (divisors), small (powers), bool random."""
    if dtype == "bool":
        a = _rng.random(shape) < 0.5
    elif dtype == "uint8":
        a = _rng.integers(1, 8, shape).astype(np.uint8)
    elif dtype.startswith("int"):
        a = _rng.integers(1, 6, shape) * _rng.choice([-1, 1], shape)
        a = a.astype(dtype)
    else:
        a = (_rng.random(shape) * 4 - 2).astype(np.float64)
        if role in ("weight", "end"):
            a = _rng.random(shape).astype(np.float64)
    t = ignis.tensor(a)
    return t.to(getattr(ignis, dtype))


_ARG = re.compile(r"(\w[\w?\[\]()!a-z]*)\s+(\w+)(=([^,)]*))?")


def _schema_args(schema):
    inner = schema[schema.index("(") + 1:schema.rindex(") ->")]
    args = []
    for part in inner.split(","):
        part = part.strip()
        if part == "*" or not part:
            continue
        m = _ARG.match(part)
        typ, name, default = m.group(1), m.group(2), m.group(4)
        args.append((typ, name, default))
    return args


def _call_args(schema, dtype, shape, make):
    """Positional tensors for every Tensor argument, defaults for the rest."""
    args = []
    for typ, name, default in _schema_args(schema):
        if typ.startswith("Tensor"):
            if name in ("condition", "mask"):
                args.append(make(shape, "bool", name))
            elif name == "value" and "masked_fill" in schema:
                args.append(ignis.tensor(1.5 if dtype in FLOATS else 3).to(getattr(ignis, dtype)))
            else:
                args.append(make(shape, dtype, name))
        elif default is not None:
            break  # the rest keep their defaults
        else:
            return None  # a required non-tensor argument: not generic
    return args


def _pointwise_cases():
    cases = []
    for name, op in _ops("pointwise"):
        if op.scalar_name is None:
            continue
        for schema in op.schemas:
            base = schema.split("(")[0]
            if "." in base or base.endswith("_") or not schema.endswith("-> Tensor"):
                continue
            for dtype in DTYPES:
                cases.append(pytest.param(name, schema, dtype, id=f"{name}-{dtype}"))
    return cases


def _run_both(fn, cpu_args):
    """fn on the CPU arguments and on their CUDA copies; the CPU's error, if
    any, must be the CUDA call's too."""
    cuda_args = [a.cuda() if isinstance(a, ignis.Tensor) and a.dim() > 0 else a for a in cpu_args]
    try:
        expected = fn(*cpu_args)
    except (RuntimeError, NotImplementedError, TypeError, ValueError, IndexError) as e:
        with pytest.raises(type(e)):
            fn(*cuda_args)
        return None, None
    return fn(*cuda_args), expected


@needs_gpu
@pytest.mark.parametrize("name,schema,dtype", _pointwise_cases())
def test_pointwise_op_matches_cpu(name, schema, dtype):
    fn = getattr(ignis.ops, name)
    shape = (33, 65)
    args = _call_args(schema, dtype, shape, _sample)
    if args is None:
        pytest.skip("needs a non-tensor argument")
    got, want = _run_both(fn, args)
    if want is not None:
        assert_same(got, want, what=f"{name} {dtype}")
    # Broadcast (a row against a matrix) and non-contiguous (a transpose).
    if len(args) >= 2 and isinstance(args[1], ignis.Tensor) and args[1].dim() == 2:
        b = list(args)
        b[1] = b[1][:1]
        got, want = _run_both(fn, b)
        if want is not None:
            assert_same(got, want, what=f"{name} {dtype} broadcast")
    t = [a.t() if isinstance(a, ignis.Tensor) and a.dim() == 2 else a for a in args]
    got, want = _run_both(fn, t)
    if want is not None:
        assert_same(got, want, what=f"{name} {dtype} transposed")


@needs_gpu
@pytest.mark.parametrize("name,schema,dtype", _pointwise_cases())
def test_pointwise_inplace_matches_cpu(name, schema, dtype):
    inplace = getattr(ignis.ops, name + "_", None)
    if inplace is None:
        pytest.skip("no in-place form")
    args = _call_args(schema, dtype, (17, 40), _sample)
    if args is None:
        pytest.skip("needs a non-tensor argument")
    cpu_self = args[0].clone()
    cuda_self = args[0].cuda()
    rest_cuda = [a.cuda() if isinstance(a, ignis.Tensor) and a.dim() > 0 else a for a in args[1:]]
    try:
        inplace(cpu_self, *args[1:])
    except (RuntimeError, NotImplementedError, TypeError) as e:
        with pytest.raises(type(e)):
            inplace(cuda_self, *rest_cuda)
        return
    r = inplace(cuda_self, *rest_cuda)
    assert r is cuda_self or r.data_ptr() == cuda_self.data_ptr()
    assert_same(cuda_self, cpu_self, what=f"{name}_ {dtype}")


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow", "maximum", "eq", "lt",
                                "remainder", "bitwise_and", "fmod"])
def test_binary_with_python_number_and_promotion(op, dtype):
    x = _sample((5, 7), dtype)
    for other in (2, 1.5, True, -3):
        got, want = _run_both(lambda a, o=other: getattr(ignis.ops, op)(a, o), [x])
        if want is not None:
            assert_same(got, want, what=f"{op} {dtype} {other!r}")
    # Mixed tensor dtypes: promotion exactly as on the CPU.
    for odt in ("int32", "float32", "float16", "bool"):
        y = _sample((5, 7), odt)
        got, want = _run_both(getattr(ignis.ops, op), [x, y])
        if want is not None:
            assert_same(got, want, what=f"{op} {dtype} {odt}")
    # A 0-dim CUDA tensor and a 0-dim CPU tensor as the other operand.
    s = _sample((), dtype)
    want = None
    try:
        want = getattr(ignis.ops, op)(x, s)
    except Exception:  # noqa: BLE001
        return
    assert_same(getattr(ignis.ops, op)(x.cuda(), s), want, what="cpu scalar")
    assert_same(getattr(ignis.ops, op)(x.cuda(), s.cuda()), want, what="cuda scalar")


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_pow_to_the_known_exponents_matches_the_cpu(dtype):
    # Note [pow's shortcuts]: CUDA takes x * x, sqrt, rsqrt, reciprocal and
    # a copy for 2, 0.5, -0.5, -1 and 1; 3 and -2 stay pow (the CPU's x * x *
    # x and 1 / (x * x), within the dtype's tolerance); as a Python number
    # and as a 0-dim CPU tensor
    x = (ignis.rand(5, 7) * 3 + 0.25).to(getattr(ignis, dtype))
    for e in (1.0, 2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 2, -1):
        for other in (e, ignis.tensor(float(e))):
            got, want = _run_both(lambda a, o=other: ignis.pow(a, o), [x])
            assert_same(got, want, what=f"pow {dtype} {e!r}")


@needs_gpu
@pytest.mark.parametrize("n", [1, 3, 4, 127, 1024, 1 << 20, (1 << 20) + 3])
def test_contiguous_vectorized_path_and_its_tail(n):
    for dtype in ("float32", "float16", "int8", "float64", "bool"):
        x = _sample((n,), dtype)
        y = _sample((n,), dtype)
        for fn in (ignis.add, ignis.mul, ignis.maximum, ignis.eq):
            got, want = _run_both(fn, [x, y])
            if want is not None:
                assert_same(got, want, what=f"{fn.__name__} {dtype} n={n}")
    # Misaligned starts (a slice one element in) fall back to narrower vectors.
    x = _sample((n + 1,), "float32")
    got, want = _run_both(lambda a: ignis.exp(a[1:]), [x])
    assert_same(got, want, what="misaligned")


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "float64", "bool"])
def test_rows_of_vectors_path(dtype):
    """A fastest dim contiguous in every operand or broadcast along it (a row
    or a column operand, x + b): the vrows layout's vectors, their tails by
    falling back, misaligned operands and outer strides."""
    x = _sample((33, 64), dtype)
    row, col = _sample((64,), dtype), _sample((33, 1), dtype)
    wide = _sample((33, 128), dtype)
    cases = {
        "row": (lambda a, r, c, w: a + r),
        "column": (lambda a, r, c, w: a * c),
        "both": (lambda a, r, c, w: ignis.maximum(a - r, c)),
        "compare": (lambda a, r, c, w: a > r),
        "outer stride": (lambda a, r, c, w: w[:, :64] + r),
        "odd row length": (lambda a, r, c, w: w[:, :63] + r[:63]),
        "misaligned row": (lambda a, r, c, w: w[:, 1:65] + r),
        "mixed dtypes": (lambda a, r, c, w: a + r.float()),
        "three inputs": (lambda a, r, c, w: ignis.where(a > r, a, c)),
    }
    for what, fn in cases.items():
        got, want = _run_both(fn, [x, row, col, wide])
        if want is not None:
            assert_same(got, want, what=f"{what} {dtype}")
    if dtype == "bool":
        return
    # In place, through the same layout.
    xc = x.cuda()
    xc += row.cuda()
    want = x.clone()
    want += row
    assert_same(xc, want, what=f"in place {dtype}")


@needs_gpu
def test_rows_of_vectors_kernel_is_chosen(capfd):
    require_fake_gpu()
    x, b = _sample((8, 64), "float32").cuda(), _sample((64,), "float32").cuda()
    # Rows 4 bytes in: no aligned vectors, the strided kernel.
    names = launched(capfd, lambda: (x + b, x[:, 1:63] + b[1:63]))
    assert "pw_add_float32_float32_float32_float32_n1_vrows4" in names, names
    assert "pw_add_float32_float32_float32_float32_n1_vrows2" not in names, names
    assert any(n.endswith("_s32") for n in names), names


@needs_gpu
def test_strided_paths_high_rank_and_64_bit_offsets():
    x = _sample((3, 4, 5, 6, 7), "float32")
    got, want = _run_both(lambda a: (a.permute(4, 2, 0, 3, 1) * 2).sin(), [x])
    assert_same(got, want)
    # An expanded operand broadcasts by stride 0.
    got, want = _run_both(lambda a: a + a[:, :1].expand(3, 4, 5, 6, 7), [x])
    assert_same(got, want)
    # Offsets past 2^31 bytes take the 64-bit kernels: a strided view of a
    # 3 GiB tensor (every other column) reaches 3 * 2^30 bytes.
    try:
        big = ignis.full((3, 1 << 28), 1.5, dtype=ignis.float32, device="cuda")
    except ignis.OutOfMemoryError:
        pytest.skip("not enough GPU memory for the 64-bit indexing check")
    r = big[:, ::2] * 2
    assert tuple(r.shape) == (3, 1 << 27)
    assert r.amax().item() == 3.0 and r.amin().item() == 3.0
    assert _to_numpy(r[2, -3:]).tolist() == [3.0, 3.0, 3.0]
    del big, r


@needs_gpu
def test_kernels_are_compiled_once_per_process_and_reused():
    x = ignis.randn(1000).cuda()
    ignis.exp(x)
    before = ignis._C._cuda_kernel_cache_stats()
    for _ in range(3):
        ignis.exp(x + 1.25)
        ignis.exp(x + 7.5)  # another scalar value: the same kernel
    after = ignis._C._cuda_kernel_cache_stats()
    assert after["compiles"] - before["compiles"] <= 1  # add's kernel at most


# ---- on a GPU: reductions ----------------------------------------------------------------

REDUCTION_CALLS = {
    # The scans accumulate in the CPU's order and types: the same bits.
    "cumsum": [lambda x: ignis.cumsum(x, 1), lambda x: x.cumsum(-1), lambda x: x.cumsum(0),
               lambda x: x.cumsum(1, dtype=ignis.float64), lambda x: x[0, 0, 0].cumsum(0)],
    "cumprod": [lambda x: ignis.cumprod(x, 2), lambda x: x.cumprod(0)],
    "cumsum_": [lambda x: x.clone().to(ignis.int64 if not x.is_floating_point() else x.dtype).cumsum_(1)],
    "cumprod_": [lambda x: x.clone().to(ignis.int64 if not x.is_floating_point() else x.dtype).cumprod_(0)],
    "sum": [lambda x: x.sum(), lambda x: x.sum(1), lambda x: x.sum(0), lambda x: x.sum((0, 2)),
            lambda x: x.sum(-1, keepdim=True), lambda x: x.sum(dtype=ignis.float64)],
    "nansum": [lambda x: ignis.nansum(x), lambda x: ignis.nansum(x, 1)],
    "prod": [lambda x: x.prod(), lambda x: x.prod(1), lambda x: x.prod(0, keepdim=True)],
    "mean": [lambda x: x.mean(), lambda x: x.mean(1), lambda x: x.mean((0, 2), keepdim=True)],
    "amax": [lambda x: x.amax(), lambda x: x.amax(1), lambda x: x.amax((0, 2))],
    "amin": [lambda x: x.amin(), lambda x: x.amin(0)],
    "max": [lambda x: x.max(), lambda x: x.max(1), lambda x: x.max(0, keepdim=True)],
    "min": [lambda x: x.min(), lambda x: x.min(2)],
    "argmax": [lambda x: x.argmax(), lambda x: x.argmax(1), lambda x: x.argmax(0, keepdim=True)],
    "argmin": [lambda x: x.argmin(), lambda x: x.argmin(2)],
    "var": [lambda x: x.var(), lambda x: x.var(1), lambda x: ignis.var(x, 0, correction=0),
            lambda x: ignis.var(x, (0, 2), keepdim=True)],
    "std": [lambda x: x.std(), lambda x: x.std(1, keepdim=True)],
    "var_mean": [lambda x: ignis.var_mean(x, 1)],
    "std_mean": [lambda x: ignis.std_mean(x, 0)],
    "logsumexp": [lambda x: ignis.logsumexp(x, 1), lambda x: ignis.logsumexp(x, (0, 2))],
    "all": [lambda x: x.all(), lambda x: x.all(1), lambda x: ignis.all(x, 0, keepdim=True)],
    "any": [lambda x: x.any(), lambda x: x.any(2)],
    "norm": [lambda x: x.norm(), lambda x: x.norm(1, 1), lambda x: x.norm(float("inf"), 0),
             lambda x: x.norm(0, 2), lambda x: x.norm(3.0, 1), lambda x: x.norm(float("-inf"))],
    "count_nonzero": [lambda x: ignis.count_nonzero(x), lambda x: ignis.count_nonzero(x, 1)],
}
FLOAT_ONLY = {"mean", "var", "std", "var_mean", "std_mean", "norm"}
# Reductions that add floats: the order of addition differs (a tree on the
# GPU, lanes on the CPU), so results that cancel are compared against the
# size of the terms.
SUMS = {"sum", "nansum", "mean", "var_mean", "std_mean"}
EPS = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 1e-6, "float64": 1e-14}


def test_every_cuda_reduction_has_calls_here():
    have = set(REDUCTION_CALLS)
    missing = [n for n, op in _ops("reduction")
               if op.has_cuda_kernel and n not in have and n not in CPU_ONLY_REDUCTIONS]
    assert not missing, missing


def _reduction_cases():
    return [pytest.param(n, d, id=f"{n}-{d}") for n in sorted(REDUCTION_CALLS) for d in DTYPES
            if not (n in FLOAT_ONLY and d not in FLOATS)]


@needs_gpu
@pytest.mark.parametrize("name,dtype", _reduction_cases())
def test_reduction_matches_cpu(name, dtype):
    shapes = [(6, 300, 5), (3, 4, 2), (2, 5000, 3)]
    if name == "prod" and dtype in FLOATS:
        # 5000 factors over- or underflow part way in an order-dependent way.
        shapes = shapes[:2]
    for shape in shapes:
        x = _sample(shape, dtype)
        extra = 0.0
        if name in SUMS and dtype in FLOATS:
            # sums: errors grow with the count; means (and *_mean) divide it out
            count = max(shape) if name in ("sum", "nansum") else 1
            extra = EPS[dtype] * float(np.abs(_to_numpy(x)).max()) * count * 4
        for i, call in enumerate(REDUCTION_CALLS[name]):
            for variant in (x, x.transpose(0, 2)):
                got, want = _run_both(call, [variant])
                if want is not None:
                    assert_same(got, want, what=f"{name} call {i} {shape}", atol_extra=extra)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "float64"])
def test_long_reductions_take_the_split_path(dtype):
    # One output over 2^22 elements, and a few over long rows: split across
    # blocks and finished by the second kernel.
    x = _sample((1 << 22,), dtype)
    for call in (lambda a: a.sum(), lambda a: a.amax(), lambda a: a.argmax(),
                 lambda a: a.reshape(4, -1).sum(1), lambda a: a.reshape(-1, 4).sum(0)):
        got, want = _run_both(call, [x])
        # Sums of 2^20 terms in float32 differ with the order of addition:
        # compare against the size of the terms, not of the (cancelling) result.
        a, b = _to_numpy(got), _to_numpy(want)
        mag = float(np.abs(_to_numpy(x)).sum()) if dtype in FLOATS else 0.0
        atol = {"float32": 1e-6, "float16": 1e-3, "float64": 1e-12}.get(dtype, 0.0) * mag
        np.testing.assert_allclose(a, b, rtol=1e-6 if dtype != "float16" else 1e-2, atol=atol)
    if dtype in FLOATS:
        got, want = _run_both(lambda a: ignis.var_mean(a.reshape(2, -1), 1), [x])
        for a, b in zip(got, want):
            np.testing.assert_allclose(_to_numpy(a), _to_numpy(b), rtol=1e-3)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int32", "uint8", "bool"])
def test_contiguous_reductions_read_vectors_where_rows_start_aligned(dtype):
    # Note [Vectors of a contiguous reduction]: rows whose every start is on
    # 16 bytes are read as vectors (a tail past the last whole span element
    # by element); an odd row length or an offset view reads elements; a
    # long row splits into ranges of whole vectors. The CPU's values.
    x = _sample((8, 4096), dtype)
    long = _sample(((1 << 20) + 5,), dtype)
    calls = [(lambda a: a.sum(1), x), (lambda a: a.amax(1), x), (lambda a: a.argmax(1), x),
             (lambda a: a[:, 1:].sum(1), x), (lambda a: a[:, :4093].amax(1), x),
             (lambda a: a.sum(), long), (lambda a: a.argmin(), long), (lambda a: a[3:].amax(), long)]
    if dtype == "bool":
        calls = [(lambda a: a.any(1), x), (lambda a: a.all(1), x), (lambda a: a.sum(), long)]
    for call, arg in calls:
        got, want = _run_both(call, [arg])
        a, b = _to_numpy(got), _to_numpy(want)
        mag = float(np.abs(_to_numpy(arg).astype(np.float64)).sum()) if dtype in FLOATS else 0.0
        atol = {"float32": 1e-6, "bfloat16": 1e-2, "float64": 1e-12}.get(dtype, 0.0) * mag
        np.testing.assert_allclose(a, b, rtol=1e-6 if dtype != "bfloat16" else 1e-2, atol=atol)


@needs_gpu
def test_reductions_of_nan_inf_and_empty():
    x = ignis.tensor([[1.0, float("nan"), 3.0], [float("-inf"), -1.0, float("inf")]])
    for call in (lambda a: a.amax(1), lambda a: a.argmax(1), lambda a: a.max(1),
                 lambda a: a.argmin(1), lambda a: ignis.logsumexp(a, 1), lambda a: a.sum(1),
                 lambda a: a.norm(float("inf"), 1), lambda a: a.any(1)):
        got, want = _run_both(call, [x])
        assert_same(got, want)
    e = ignis.zeros((0, 3))
    for call in (lambda a: a.sum(0), lambda a: a.prod(0), lambda a: a.mean(0),
                 lambda a: a.all(0), lambda a: a.any(0), lambda a: ignis.logsumexp(a, 0)):
        assert_same(call(e.cuda()), call(e))


# ---- on a GPU: softmax, layer norm ----------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dim", [((7, 10), 1), ((3, 5000), -1), ((4, 33, 6), 1),
                                       ((2, 3, 4), 0), ((1, 1), 0), ((9, 2048), 1)])
def test_softmax_log_softmax_match_cpu(dtype, shape, dim):
    x = _sample(shape, dtype)
    for fn in (lambda a: ignis.softmax(a, dim), lambda a: ignis.log_softmax(a, dim),
               lambda a: ignis.ops._safe_softmax(a, dim)):
        got, want = _run_both(fn, [x])
        assert_same(got, want)


@needs_gpu
def test_softmax_of_masked_rows():
    x = ignis.tensor([[float("-inf")] * 4, [0.0, float("-inf"), 1.0, 2.0]])
    for fn in (lambda a: ignis.softmax(a, 1), lambda a: ignis.ops._safe_softmax(a, 1),
               lambda a: ignis.log_softmax(a, 1)):
        got, want = _run_both(fn, [x])
        assert_same(got, want)


@needs_gpu
@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax_of_rows_with_several_masked_entries(dim):
    """Partial statistics of two -inf entries meet before any finite one
    (consecutive -inf in a row, several per lane in long rows, a causal
    mask): merging them must not make the row's sum NaN. The attention with
    dropout on an H200 got NaN gradients from this."""
    inf = float("-inf")
    rows = [[inf, inf, 1.0, 2.0], [1.0, inf, inf, inf], [inf, 0.5, inf, inf]]
    causal = ignis.randn(8, 8).masked_fill(ignis.ones(8, 8).triu(1).bool(), inf)
    long = ignis.randn(3, 1000)
    long[:, ::3] = inf
    long[1, :500] = inf
    for x in (ignis.tensor(rows), causal, long):
        x = x if dim == -1 else x.t().contiguous()
        for fn in (lambda a: ignis.softmax(a, dim), lambda a: ignis.ops._safe_softmax(a, dim),
                   lambda a: ignis.log_softmax(a, dim)):
            got, want = _run_both(fn, [x])
            assert_same(got, want)


@needs_gpu
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,ns", [((4, 10), (10,)), ((3, 7, 1000), (1000,)),
                                      ((2, 3, 4, 5), (4, 5)), ((5, 4096), (4096,))])
def test_layer_norm_and_its_backward_match_cpu(dtype, shape, ns):
    x = _sample(shape, dtype)
    w = _sample(ns, dtype)
    b = _sample(ns, dtype)
    got, want = _run_both(lambda a, ww, bb: ignis.ops.native_layer_norm(a, list(ns), ww, bb, 1e-5),
                          [x, w, b])
    assert_same(got, want, scale=10)
    g = _sample(shape, dtype)
    mean, rstd = want[1], want[2]
    acc = ignis.float64 if dtype == "float64" else ignis.float32
    args = [g, x, mean.to(acc), rstd.to(acc), w, b]
    got, want = _run_both(
        lambda gg, xx, m, r, ww, bb: ignis.ops.native_layer_norm_backward(gg, xx, list(ns), m, r,
                                                                          ww, bb), args)
    assert_same(got, want, scale=10)


# ---- on a GPU: autograd and errors ---------------------------------------------------------

def _sort_input(dtype, shape):
    """Values with ties, and for floats NaN, infinities and both zeros."""
    g = ignis.Generator().manual_seed(7)
    if dtype == "bool":
        return ignis.randint(0, 2, shape, generator=g).bool()
    if dtype in FLOATS:
        x = (ignis.randn(shape, generator=g) * 4).round()
        flat = x.view(-1)
        for i, v in zip(range(0, flat.numel(), 7), [float("nan"), float("inf"), -0.0,
                                                    float("-inf"), 0.0, float("nan")]):
            flat[i] = v
        return x.to(getattr(ignis, dtype))
    return ignis.randint(-9 if dtype not in ("bool", "uint8") else 0, 9, shape,
                         generator=g).to(getattr(ignis, dtype))


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(
        _to_numpy(a).reshape(-1).view(np.uint8), _to_numpy(b).reshape(-1).view(np.uint8))


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((7, 10), 1), ((3, 300), -1), ((2, 5000), 1),
                                       ((9000,), 0), ((5, 33, 4), 1), ((6, 1), 1), ((0, 4), 1),
                                       ((), 0)])
def test_sort_topk_argsort_match_cpu(dtype, shape, dim):
    # The order is total on (value, position): NaN above every number, ties
    # by position (a stable sort), so the GPU returns the CPU's elements in
    # the CPU's order, bit for bit, through every path: a block's chunk
    # (slices of 256 or fewer, of 4096 or fewer) and the global passes after
    # it (5000, 9000).
    x = _sort_input(dtype, shape)
    g = x.cuda()
    for desc in (False, True):
        for fn in (lambda t: t.sort(dim=dim, descending=desc),
                   lambda t: ignis.sort(t, stable=True, dim=dim, descending=desc),
                   lambda t: (t.argsort(dim=dim, descending=desc),)):
            for a, b in zip(fn(x), fn(g)):
                assert b.device.type == "cuda"
                assert _same(a, b.cpu()), (dtype, shape, dim, desc)
        n = x.shape[dim] if x.dim() else 1
        for k in {0, 1, min(3, n), n} if dtype != "bool" else ():  # no bool topk, as torch
            a, b = x.topk(k, dim=dim, largest=desc), g.topk(k, dim=dim, largest=desc)
            assert _same(a[0], b[0].cpu()) and _same(a[1], b[1].cpu()), (dtype, shape, k)


@needs_gpu
def test_sort_of_strided_input_into_strided_outputs_and_its_gradient():
    x = ignis.randn(40, 6).t()  # sorted along a dim of stride 6
    xg = x.cuda()
    vals, idx = ignis.empty(40, 6).t(), ignis.empty(40, 6, dtype=ignis.int64).t()
    vals_g, idx_g = vals.cuda(), idx.cuda()
    ignis.sort(x, 1, out=(vals, idx))
    ignis.sort(xg, 1, out=(vals_g, idx_g))
    assert vals_g.stride() == vals.stride() and _same(vals, vals_g.cpu()) and _same(idx, idx_g.cpu())
    # Gradients go back to where the values came from, on either device.
    a = ignis.randn(4, 700, requires_grad=True)
    b = a.detach().cuda().requires_grad_()
    w = ignis.randn(4, 5)
    (a.topk(5, dim=1)[0] * w).sum().backward()
    (b.topk(5, dim=1)[0] * w.cuda()).sum().backward()
    assert b.grad.device.type == "cuda" and _same(a.grad, b.grad.cpu())


@needs_gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_multinomial_draws_the_cpus_numbers(dtype):
    # The same generator counters and, with replacement, the same running
    # sums in the same order: the same indices on both devices. Zero weights
    # are never drawn with replacement and come last, by index, without.
    g = ignis.Generator().manual_seed(11)
    w = ignis.rand(6, 300, generator=g)
    w[:, ::7] = 0
    w[2] = 0
    w[2, 5] = 1.0
    w = w.to(getattr(ignis, dtype))
    cases = [(w, 50, True), (w, 40, False), (w, 300, False), (w[0], 9, True), (w[1], 9, False),
             (w.t().contiguous().t(), 20, True), (w[:, 1::2], 30, False)]
    for probs, k, replacement in cases:
        ignis.manual_seed(5)
        a = ignis.multinomial(probs, k, replacement)
        ignis.manual_seed(5)
        b = ignis.multinomial(probs.cuda(), k, replacement)
        assert b.device.type == "cuda" and b.dtype == ignis.int64
        assert ignis.equal(a, b.cpu()), (k, replacement)
    full = ignis.multinomial(w.cuda(), 300, False).cpu()
    zeros = [j for j in range(300) if j % 7 == 0]
    assert full[0, -len(zeros):].tolist() == zeros
    assert ignis.multinomial(w.cuda(), 100, True)[2].cpu().tolist() == [5] * 100


@needs_gpu
def test_multinomial_errors_on_cuda_are_the_cpus_and_draw_nothing():
    for bad, match in ((ignis.tensor([[1.0, -1.0]]), "probability tensor contains"),
                       (ignis.tensor([[1.0, float("nan")]]), "probability tensor contains"),
                       (ignis.tensor([[1.0, 1.0], [0.0, 0.0]]), "invalid multinomial"),
                       (ignis.tensor([1.0, float("inf")]), "probability tensor contains")):
        for dev in ("cpu", "cuda"):
            ignis.manual_seed(3)
            with pytest.raises(RuntimeError, match=match):
                ignis.multinomial(bad.to(dev), 1, True)
            after = ignis.rand(4, device=dev).cpu()
            ignis.manual_seed(3)
            assert ignis.equal(after, ignis.rand(4, device=dev).cpu()), (dev, match)


@needs_gpu
@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "float16"])
def test_randperm_on_cuda_is_the_cpus_permutation(dtype):
    for n in (0, 1, 7, 5000):
        ignis.manual_seed(9)
        a = ignis.randperm(n, dtype=getattr(ignis, dtype))
        ignis.manual_seed(9)
        b = ignis.randperm(n, dtype=getattr(ignis, dtype), device="cuda")
        assert b.device.type == "cuda" and b.dtype == a.dtype and ignis.equal(a, b.cpu())
    g1, g2 = ignis.Generator().manual_seed(4), ignis.Generator().manual_seed(4)
    assert ignis.equal(ignis.randperm(100, generator=g1),
                       ignis.randperm(100, generator=g2, device="cuda").cpu())


@needs_gpu
def test_autograd_through_cuda_tensors():
    x = ignis.randn(8, 16, dtype=ignis.float32)
    w = ignis.randn(16)

    def f(a, ww):
        y = ignis.layer_norm(a, [16], ww) * a.sigmoid()
        return (ignis.softmax(y, 1) * 3 + y.exp()).sum()

    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    f(xc, wc).backward()
    xg, wg = x.cuda().requires_grad_(), w.cuda().requires_grad_()
    f(xg, wg).backward()
    assert xg.grad.device.type == "cuda"
    np.testing.assert_allclose(_to_numpy(xg.grad), xc.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_to_numpy(wg.grad), wc.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_every_op_has_a_cuda_kernel():
    # Every structured op runs on CUDA tensors: its own kernel or its
    # decomposition (the CUDA slot of an op declared without either would
    # raise NotImplementedError naming the op and the CUDA backend).
    missing = [n for n in dir(ignis.ops)
               if getattr(getattr(ignis.ops, n), "has_cuda_kernel", True) is False]
    assert not missing, missing


@needs_gpu
def test_mixing_devices_raises_torchs_error():
    a = ignis.ones(3, 3, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ignis.add(a, ignis.ones(3, 3))


@needs_gpu
def test_integer_division_by_zero_raises_as_on_cpu():
    a = ignis.tensor([4, 5, 6]).cuda()
    b = ignis.tensor([1, 0, 2]).cuda()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ignis.div(a, b, rounding_mode="floor")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ignis.remainder(a, b)

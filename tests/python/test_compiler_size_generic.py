"""Size-generic code (docs/compiler.md, "Size-generic code"; Note
[Size-generic code] in src/ignis/compiler/size_params.h): in this mode the
compiler prints kernels that read their sizes from a parameter array P, so
the text T of a graph's code is the same for many sizes and every size after
the first loads the library compiled for the first (no C++ compile), while
each size keeps its own program (lowering, buffers, launch configuration).

Soundness is by construction: T with each P[k] replaced by the value B[k] is
the source printed with the values in place (tested directly below, CPU and
CUDA); the rest checks that sizes share T, that results equal eager (and
torch when installed) at every size, forward and backward, and that later
sizes compile nothing.
"""
import contextlib
import io
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn.functional as F
from ignis import _inductor
from ignis._inductor import config, metrics


@pytest.fixture(autouse=True)
def _compile_every_size(monkeypatch):
    """These tests are about what a size's compile reuses: every size
    compiles at its first call (not its second, ignis's default: Note
    [Compiling a size on its second call] in ignis/_compile.py)."""
    import ignis._compile as comp
    monkeypatch.setattr(comp, "PER_SIZE_COMPILE_AFTER", 1)

try:
    import torch
except ImportError:  # the oracle is optional
    torch = None

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _gm(fn, *args):
    from ignis._functorch.aot_autograd import trace_joint
    gm, _ = trace_joint(ignis.fx.symbolic_trace(fn), list(args))
    return gm


_KERNEL = re.compile(r"^// kernel_\d+", re.M)


def substitute(source, params):
    """T with B substituted: in kernel i's part of the source (from its
    `// kernel_i` comment to the next one), P[k] -> params[i][k]."""
    starts = [m.start() for m in _KERNEL.finditer(source)]
    assert len(starts) == len(params)
    parts = [source[:starts[0]] if starts else source]
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(source)
        parts.append(re.sub(r"P\[(\d+)\]", lambda m: str(params[i][int(m.group(1))]),
                            source[start:end]))
    return "".join(parts)


def generic_code(gm, device=None, lift=True):
    return ignis._C._generate_size_generic_code(gm.graph, device, lift)


# Graphs whose code is checked: (function, shapes of its inputs, requires grad).
def _layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def _pointwise_broadcast(x, b, s):
    return (ignis.relu(x + b) * s + ignis.tanh(x)).sigmoid()


def _linear_gelu(x, w, b):
    return F.gelu(F.linear(x, w, b))


CASES = {
    "softmax": (lambda x: ignis.softmax(x, -1), [(37, 53)], False),
    "layer_norm": (_layer_norm, [(37, 53), (53,), (53,)], False),
    "layer_norm_joint": (_layer_norm, [(37, 53), (53,), (53,)], True),
    "pointwise_broadcast": (_pointwise_broadcast, [(37, 53), (53,), (37, 1)], False),
    "linear_gelu": (_linear_gelu, [(37, 24), (40, 24), (40,)], False),
    "sum_dim0": (lambda x: x.sum(0), [(37, 53)], False),
    "sum_middle": (lambda x: (x * 2).sum(1), [(5, 37, 53)], False),
    # reductions the GPU splits over several blocks (Note [Split row
    # reductions], Note [Split column reductions]): a mean of 20467 elements,
    # a sum over 4099 rows of 33 columns
    "mean_split": (lambda x: (x * x).mean(), [(97, 211)], False),
    "sum_columns_split": (lambda x: x.sum(0), [(4099, 33)], False),
    # a pointwise kernel over 4 dims read through a permutation: CUDA code
    # unravels its flat index with strides that are products of sizes
    "permute_4d": (lambda x: (x.permute(0, 2, 1, 3) * 0.25).reshape(x.shape[0] * x.shape[2], -1),
                   [(3, 5, 7, 11)], False),
}


def _case_gm(name, scale=0):
    fn, shapes, grad = CASES[name]
    # `scale` grows every dim but the size-1 ones (another size, same text)
    args = [ignis.randn(*[d if d == 1 else d + scale for d in s]).requires_grad_(grad)
            for s in shapes]
    return _gm(fn, *args)


@pytest.mark.parametrize("device", [None, "cuda"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_text_with_values_substituted_is_the_source_with_values_in_place(name, device):
    gm = _case_gm(name)
    text, values = generic_code(gm, device)
    in_place, same_values = generic_code(gm, device, lift=False)
    assert "P[" in text and "P[" not in in_place
    assert values == same_values
    assert substitute(text, values) == in_place
    # a parameter per occurrence, never for 0, 1 or -1 -- but in a split
    # reduction's counts, which may be 1 (SizeParams::count)
    starts = [m.start() for m in _KERNEL.finditer(text)] + [len(text)]
    for i, v in enumerate(values):
        if "ig_last" not in text[starts[i]:starts[i + 1]]:
            assert not set(v) & {0, 1, -1}


@pytest.mark.parametrize("device", [None, "cuda"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_another_size_prints_the_same_text_with_other_values(name, device):
    text, values = generic_code(_case_gm(name), device)
    # (+8: the sizes divide alike, so CUDA text keeps its vector widths)
    text2, values2 = generic_code(_case_gm(name, scale=8), device)
    assert text2 == text
    assert values2 != values


_UNRAVEL = re.compile(r"const int(?:32|64)_t (x\d+) = (.+);")


def _unravelled(source):
    """The CUDA grid-stride loop's index variables as functions of ig_i,
    evaluated with C's integer semantics (non-negative operands: `/` is
    Python's `//`, and both languages give * / % one precedence, left to
    right)."""
    exprs = _UNRAVEL.findall(source)
    assert exprs, source
    return [(v, compile(e.replace("/", "//"), v, "eval")) for v, e in exprs]


def test_generic_cuda_indices_equal_the_static_codes_at_every_element():
    """Substituted back, the size-generic CUDA code must index as the static
    code does. (A quotient by a product of sizes once printed unparenthesised,
    `ig_i / P[7]*P[8]`, dividing by one size and multiplying by the next:
    textually the same as the lift=False print, so only evaluation shows it.)"""
    gm = _case_gm("permute_4d")
    text, values = generic_code(gm, "cuda")
    generic = _unravelled(substitute(text, values))
    static = _unravelled(ignis._C._generate_graph_code(gm.graph, "cuda")[1])
    assert [v for v, _ in generic] == [v for v, _ in static]
    assert len(generic) == 4
    for ig_i in range(3 * 5 * 7 * 11):
        env = {"ig_i": ig_i}
        assert [eval(c, env) for _, c in generic] == [eval(c, env) for _, c in static], ig_i


def test_static_code_reads_no_parameters():
    gm = _case_gm("softmax")
    _, source, _ = ignis._C._generate_graph_code(gm.graph)
    assert "P[" not in source and "ignis_threads_for" not in source
    assert "2492" not in generic_code(gm)[0]  # 37 * 53 * 2 loops nowhere as a literal


# ---- compiled at several sizes: one library, right answers ----

def _np(t):
    return t.detach().numpy()


def _block(x, w1, b1, w2, b2, g, beta):
    """A transformer-ish block over rows: GEMM + GELU epilogue, a GEMM, a
    residual layer_norm, a softmax over the last dim, a column sum."""
    h = F.gelu(F.linear(x, w1, b1))
    y = F.layer_norm(x + F.linear(h, w2, b2), (x.shape[-1],), g, beta)
    return ignis.softmax(y, -1) * y, y.sum(0)


def _torch_block(x, w1, b1, w2, b2, g, beta):
    tf = torch.nn.functional
    h = tf.gelu(tf.linear(x, w1, b1))
    y = tf.layer_norm(x + tf.linear(h, w2, b2), (x.shape[-1],), g, beta)
    return torch.softmax(y, -1) * y, y.sum(0)


def _params(width=24, hidden=40):
    ignis.manual_seed(0)
    shapes = [(hidden, width), (hidden,), (width, hidden), (width,), (width,), (width,)]
    return [(ignis.randn(*s) * 0.3).requires_grad_() for s in shapes]


def _inputs(rows, kind, width=24):
    """Rows of the block's input: contiguous, transposed (a column-major
    view) or sliced (every other column of a wider tensor)."""
    if kind == "transposed":
        return ignis.randn(width, rows).t()
    if kind == "sliced":
        return ignis.randn(rows, 2 * width + 3)[:, 3::2]
    return ignis.randn(rows, width)


def _check_against_eager_and_torch(fn, params, x):
    """Compiled forward and backward of fn at x equal eager's (and torch's)."""
    out = fn(x, *params)
    loss = (out[0] * out[0]).sum() + out[1].sum()
    grads = ignis.autograd.grad(loss, params)
    eager = _block(x, *params)
    eager_loss = (eager[0] * eager[0]).sum() + eager[1].sum()
    eager_grads = ignis.autograd.grad(eager_loss, params)
    for a, b in zip(out, eager):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=1e-5)
    for a, b in zip(grads, eager_grads):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=1e-4)
    if torch is not None:
        tp = [torch.tensor(_np(p), requires_grad=True) for p in params]
        tout = _torch_block(torch.tensor(_np(x)), *tp)
        tloss = (tout[0] * tout[0]).sum() + tout[1].sum()
        tgrads = torch.autograd.grad(tloss, tp)
        for a, b in zip(out, tout):
            np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=1e-4, atol=1e-5)
        for a, b in zip(grads, tgrads):
            np.testing.assert_allclose(_np(a), b.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ["contiguous", "transposed", "sliced"])
def test_a_block_at_many_sizes_compiles_once_forward_and_backward(kind):
    params = _params()
    ignis.compiler.reset()
    with config.patch(size_generic=True):
        fn = ignis.compile(_block, backend="inductor")
        # 37 rows: not a multiple of the vector width
        for i, rows in enumerate([19, 37, 130, 64]):
            metrics.reset()
            _check_against_eager_and_torch(fn, params, _inputs(rows, kind))
            assert metrics.library_compiled + metrics.library_reused == 2  # forward, backward
            # The first size is a static capture (every integer lifted); the
            # second the dynamic graph, whose parameters that do not vary
            # print as literals (Note [Parameters that vary with the sizes]):
            # its libraries serve every later size.
            if i > 1:
                assert metrics.library_compiled == 0, rows
    ignis.compiler.reset()


def test_a_size_with_other_decisions_prints_other_text_and_is_right():
    # One row: a size-1 dim is a different loop nest (1 is never a parameter).
    params = _params()
    gm_rows = _gm(_block, _inputs(37, "contiguous"), *params)
    gm_one = _gm(_block, _inputs(1, "contiguous"), *params)
    assert generic_code(gm_rows)[0] != generic_code(gm_one)[0]
    ignis.compiler.reset()
    with config.patch(size_generic=True):
        fn = ignis.compile(_block, backend="inductor")
        for rows in [37, 1]:
            _check_against_eager_and_torch(fn, params, _inputs(rows, "contiguous"))
    ignis.compiler.reset()


def test_the_graph_cache_keeps_each_sizes_parameters():
    # A graph cache hit deserializes the program with its kernels' values.
    params = _params()
    with config.patch(size_generic=True, fx_graph_cache=True):
        for rows in [19, 45]:
            x = _inputs(rows, "contiguous")
            gm = _gm(_block, x, *[p.detach() for p in params])
            first = _inductor.compile_fx(gm, None)
            again = _inductor.compile_fx(gm, None)
            assert first.size_generic and again.from_graph_cache and not again.compiled_code
            args = [x] + [p.detach() for p in params]
            want = _block(*args)
            for got in (first(*args), again(*args)):
                for a, b in zip(got, want):
                    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=1e-5)


def test_a_new_process_compiles_the_first_size_only(tmp_path):
    # A fresh code cache: the static first size and the dynamic graph's first
    # run g++ once each (the dynamic graph prints its parameters that do not
    # vary as literals: Note [Parameters that vary with the sizes]), the
    # other sizes never.
    script = """
import _checkout
import ignis, ignis.nn.functional as F
from ignis._inductor import config, metrics
import ignis._compile
ignis._compile.PER_SIZE_COMPILE_AFTER = 1
def f(x, w):
    return F.layer_norm(F.gelu(x @ w), (w.shape[1],)).softmax(-1).sum(0)
w = ignis.randn(16, 24)
counts = []
with config.patch(size_generic=True):
    fn = ignis.compile(f, backend="inductor")
    for rows in (8, 29, 64, 100):
        metrics.reset()
        x = ignis.randn(rows, 16)
        assert (fn(x, w) - f(x, w)).abs().max().item() < 1e-4
        counts.append((metrics.library_compiled, metrics.library_reused))
print(counts)
"""
    env = dict(os.environ, IGNIS_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(ROOT / "python"))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300, cwd=pathlib.Path(__file__).parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[(1, 0), (1, 0), (0, 1), (0, 1)]"


def test_auto_is_generic_for_symbolic_inputs_only():
    class SymInt:  # what a symbolic int looks like to the check: its type's name
        pass

    gm = _case_gm("softmax")
    assert config.size_generic == "auto"
    assert not config.resolve_size_generic(gm, [ignis.randn(37, 53)])
    assert config.resolve_size_generic(gm, [SymInt()])
    placeholder = next(n for n in gm.graph.nodes if n.op == "placeholder")
    placeholder.meta["val"] = SymInt()
    assert config.resolve_size_generic(gm)
    with config.patch(size_generic=False):
        assert not config.resolve_size_generic(gm)
    with config.patch(size_generic="sometimes"):
        with pytest.raises(ValueError, match="size_generic"):
            config.resolve_size_generic(gm)
    with config.patch(size_generic=True):
        assert _inductor.compile_fx(_case_gm("softmax"), None).size_generic


# ---- CUDA: NVRTC without a GPU; the fake driver or a GPU for running ----

def _nvrtc():
    try:
        return ignis._C._cuda_nvrtc_version()
    except RuntimeError:
        return None


def test_generic_cuda_rows_too_long_to_hold_stream_in_vectors():
    """A row too long for registers (a loss over 50304 logits: the online
    max and sum of exps) streams in 16-byte vectors in size-generic code as
    in static code, its vector count a parameter; both texts agree once the
    values are in place, and another length of the same width shares it."""
    def loss(x):
        return ignis.log_softmax(x, -1)[:, 0].sum()
    text, values = generic_code(_gm(loss, ignis.randn(8, 50304)), "cuda")
    static = generic_code(_gm(loss, ignis.randn(8, 50304)), "cuda", lift=False)[0]
    assert "IgVec<float, 4>" in text and "ig_c < P[" in text, text
    assert substitute(text, values) == static
    assert generic_code(_gm(loss, ignis.randn(8, 50000)), "cuda")[0] == text


def test_generic_cuda_code_compiles_with_nvrtc():
    if _nvrtc() is None:
        pytest.skip("NVRTC cannot be loaded here: set IGNIS_NVRTC_LIBRARY, install the toolkit "
                    "or install the nvidia-cuda-nvrtc wheel")
    for name in sorted(CASES):
        source, values = generic_code(_case_gm(name), "cuda")
        assert any(values), name
        assert "const IgParams<" in source
        assert ignis._C._cuda_nvrtc_compile(source, f"{name}.cu", 90,
                                            ["-default-device", "-w"]) > 0, name


needs_gpu = pytest.mark.skipif(not ignis.cuda.is_available(),
                               reason="no usable CUDA GPU here (tests/cuda_fake/run.sh fakes one)")


@needs_gpu
def test_cuda_block_at_many_sizes_compiles_once_forward_and_backward():
    params = [p.detach().cuda().requires_grad_() for p in _params()]
    ignis.compiler.reset()
    with config.patch(size_generic=True):
        fn = ignis.compile(_block, backend="inductor")
        for i, rows in enumerate([19, 37, 130, 64]):
            metrics.reset()
            x = ignis.randn(rows, 24).cuda()
            out = fn(x, *params)
            loss = (out[0] * out[0]).sum() + out[1].sum()
            grads = ignis.autograd.grad(loss, params)
            eager = _block(x, *params)
            eager_loss = (eager[0] * eager[0]).sum() + eager[1].sum()
            eager_grads = ignis.autograd.grad(eager_loss, params)
            for a, b in zip(list(out) + list(grads), list(eager) + list(eager_grads)):
                np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(),
                                           rtol=1e-4, atol=1e-4)
            assert metrics.library_compiled + metrics.library_reused == 2
            # The static first size, then the dynamic graph's own text (its
            # parameters that do not vary as literals), then nothing new.
            if i > 1:
                assert metrics.library_compiled == 0, rows
    ignis.compiler.reset()


@needs_gpu
@pytest.mark.parametrize("op", ["mean", "sum0"])
def test_cuda_split_reductions_share_their_text_across_sizes(op):
    """A full mean of a large tensor and a sum over many rows of few columns
    split over several blocks in size-generic code too (the split count, its
    ranges and the workspace's offsets are parameters), share one text
    across sizes whose split counts differ, and give eager's values."""
    def f(x):
        return (x * x).mean() if op == "mean" else (x * 2).sum(0)
    ignis.compiler.reset()
    shapes = [(97, 211), (105, 219), (301, 77)] if op == "mean" else \
        [(4099, 33), (4107, 41), (2113, 65)]
    compiled = []
    with config.patch(size_generic=True):
        fn = ignis.compile(f, backend="inductor", dynamic=False)
        for shape in shapes:
            x = ignis.randn(*shape).cuda()
            metrics.reset()
            with contextlib.redirect_stderr(io.StringIO()) as err:
                ignis._logging.set_logs(output_code=True)
                got = fn(x)
                ignis._logging.set_logs()
            assert "ig_last" in err.getvalue(), shape  # split over blocks
            np.testing.assert_allclose(got.cpu().numpy(), f(x).cpu().numpy(), rtol=1e-5,
                                       atol=1e-4)
            compiled.append(metrics.library_compiled)
    assert compiled[1:] == [0, 0], compiled
    ignis.compiler.reset()


@needs_gpu
@pytest.mark.parametrize("op", ["softmax", "layer_norm"])
def test_cuda_rows_of_one_bucket_share_their_resident_text(op):
    """Rows of 600 to 1000 floats (150 to 250 four-wide vectors: one
    power-of-two bucket) print one text, held in registers with the chunks
    past half the bucket guarded by the row's count (Note [Resident rows in
    size-generic code]); 1024, which fills the bucket, prints its chunks
    unguarded (config.cuda.generic_exact_rows); every length gives eager's
    values, and 1028 (the next bucket) prints another text."""
    def f(x):
        if op == "softmax":
            return ignis.nn.functional.softmax(x * 2, -1)
        return ignis.nn.functional.layer_norm(x, (x.shape[-1],)) + 1
    ignis.compiler.reset()
    texts = set()
    with config.patch(size_generic=True):
        for n in (600, 700, 1000, 1024, 1028):
            g = ignis.compile(f, backend="inductor", dynamic=False)
            x = ignis.randn(37, n).cuda()
            metrics.reset()
            with contextlib.redirect_stderr(io.StringIO()) as err:
                ignis._logging.set_logs(output_code=True)
                got = g(x)
                ignis._logging.set_logs()
            np.testing.assert_allclose(got.cpu().numpy(), f(x).cpu().numpy(), rtol=1e-5,
                                       atol=1e-5)
            code = err.getvalue()
            text = code[code.index("__global__"):]
            text = text[:text.index("\n}\n")]
            texts.add(re.sub(r"kernel_\d+_[0-9a-f]+", "kernel", text))
            if n == 1000:
                assert "if (ig_k < 2 || ig_c < P[" in text, text
            if n == 1024:
                assert "if (ig_k" not in text, text
    assert len(texts) == 3, texts
    ignis.compiler.reset()


def test_a_dynamic_capture_compiles_size_generic_code_on_the_cpu():
    """Automatic dynamic (capture) + per-size AOT + size-generic kernels: the
    sizes after the recompile that made the batch symbolic load the library
    the first of them compiled."""
    def f(x, w):
        return (x @ w).relu().softmax(-1).sum(0) * 2.0

    g = ignis.compile(f)
    w = ignis.randn(16, 8)
    metrics.reset()
    for n in (5, 7, 9, 11, 13):
        x = ignis.randn(n, 16)
        np.testing.assert_allclose(g(x, w).numpy(), f(x, w).numpy(), rtol=1e-5, atol=1e-5)
    # 5: static; 7: the dynamic graph's first size (its generic library);
    # 9, 11, 13: that library again.
    assert metrics.library_reused >= 3, (metrics.library_compiled, metrics.library_reused)
    assert config.size_generic == "auto" and not config.compiling_symbolic_capture()


def test_a_symbolic_compile_on_another_thread_leaves_this_threads_static():
    # Whether a compile is a size of a symbolic capture is per thread: a
    # compile racing on another thread (a program compiling from several)
    # once made this thread's static graph size-generic.
    import threading
    inside, leave = threading.Event(), threading.Event()

    def other():
        with config.symbolic_capture_compile():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    t.start()
    try:
        assert inside.wait(10)
        assert not config.compiling_symbolic_capture()
        assert config.resolve_size_generic() is False
        with config.symbolic_capture_compile():
            assert config.resolve_size_generic() is True
        assert config.resolve_size_generic() is False
    finally:
        leave.set()
        t.join()


# ---- Note [Parameters that vary with the sizes] (size_params.h) ----

@pytest.fixture
def compiles(monkeypatch):
    """(graph, CompiledGraph) of every compile_fx call, in order, with the
    graph cache off (a hit would skip the lowering, and the probes with it)."""
    recorded = []
    real = _inductor.compile_fx

    def recording(gm, example_inputs):
        compiled = real(gm, example_inputs)
        recorded.append((gm, compiled))
        return compiled
    monkeypatch.setattr(_inductor, "compile_fx", recording)
    monkeypatch.setattr(config, "fx_graph_cache", False)
    return recorded


def test_a_dynamic_graph_prints_its_parameters_that_do_not_vary_as_literals(compiles):
    """The dynamic graph's first compile lowers it at its AOT hints too; the
    parameters that took one value at every size (the width 24, the hidden
    40) print as literals, the rows stay P[k]. Every later size shares the
    text, T with B substituted is still the source with the values in place,
    and the results equal eager's."""
    recorded = compiles
    params = [p.detach() for p in _params()]
    ignis.compiler.reset()
    fn = ignis.compile(_block, backend="inductor")  # automatic dynamic, size_generic "auto"
    sources = []
    for rows in (19, 37, 130, 64):
        recorded.clear()
        x = _inputs(rows, "contiguous")
        for a, b in zip(fn(x, *params), _block(x, *params)):
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=1e-5)
        assert len(recorded) == 1, rows  # no grad: one inference graph a size
        sources.append(recorded[0][1].generated_code)
    assert "P[" not in sources[0]  # 19: the static capture's code
    assert sources[1] == sources[2] == sources[3]
    gm = recorded[0][0]
    masked, values = generic_code(gm)
    assert masked == sources[3]
    literal, _ = generic_code(gm, lift=False)
    assert substitute(masked, values) == literal
    assert re.search(r"< 24;", masked)
    ignis.compiler.reset()  # forgets what the probes taught: every integer lifted
    all_lifted, _ = generic_code(gm)
    assert not re.search(r"< 24;", all_lifted)
    assert masked.count("P[") < all_lifted.count("P[")


def _two_blocks(x, w1, b1, w2, b2, g, beta):
    y = _block(x, w1, b1, w2, b2, g, beta)[0]
    return _block(y, w1, b1, w2, b2, g, beta)


def test_layers_of_one_text_keep_sharing_it_with_literals(compiles):
    """Each kernel keeps its own record (its text and the nodes fused into
    it), and each layer's kernels record every size: the second block's
    kernels print the first's masked text and run its function."""
    recorded = compiles
    params = [p.detach() for p in _params()]
    ignis.compiler.reset()
    fn = ignis.compile(_two_blocks, backend="inductor")
    for rows in (19, 37, 64):
        recorded.clear()
        x = _inputs(rows, "contiguous")
        for a, b in zip(fn(x, *params), _two_blocks(x, *params)):
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=1e-5)
    masked = recorded[-1][1].generated_code
    gm = recorded[-1][0]
    ignis.compiler.reset()
    all_lifted, _ = generic_code(gm)
    assert re.search(r"< 24;", masked) and masked.count("P[") < all_lifted.count("P[")
    shared = masked.count("(the same code)")
    assert shared >= 2 and shared == all_lifted.count("(the same code)")


def test_a_probe_that_cannot_be_made_leaves_the_compile_as_it_was():
    """A probes callable that raises teaches nothing: the graph compiles with
    every integer lifted and runs correctly."""
    x = ignis.randn(37, 24)
    params = [p.detach() for p in _params()]
    gm = _gm(_block, x, *params)

    def broken():
        raise RuntimeError("no probe")
    ignis.compiler.reset()
    options = dict(config.compiler_options(True), fx_graph_cache=0)
    compiled = ignis._C._compile_graph(gm.graph, {}, options, broken)
    assert not compiled.from_graph_cache
    assert compiled.generated_code == generic_code(gm)[0]
    assert compiled.generated_code.count("P[") > 0
    for a, b in zip(compiled(x, *params), _block(x, *params)):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="probes"):
        ignis._C._compile_graph(gm.graph, {}, options, 3)


# ---- Note [Inner dims split at their divisions] (loop_ir.h) ----

def _merge_heads(q):
    """[B, H, T, D] -> [B, T, H * D] (attention's heads merged), doubled."""
    return q.transpose(1, 2).reshape(q.shape[0], q.shape[2], -1) * 2.0


@pytest.mark.parametrize("generic", [False, True])
def test_merged_heads_are_read_in_whole_runs_not_divided(generic):
    q = ignis.randn(2, 4, 9, 16)
    gm = _gm(_merge_heads, q)
    source = generic_code(gm)[0] if generic else ignis._C._generate_graph_code(gm.graph)[1]
    kernel = source[source.index("// kernel_0"):]
    # the inner loop runs over one head's 16 elements, contiguous in both
    assert re.search(r"#pragma omp simd\n\s*for \(int64_t x2_i = 0; x2_i < (16|P\[\d+\]);", kernel)
    assert "/ 16" not in kernel and "% 16" not in kernel and not re.search(r"[/%] P\[", kernel)
    with config.patch(size_generic=generic):
        compiled = _inductor.compile_fx(gm, None)
    got = compiled(q)[0]
    np.testing.assert_array_equal(_np(got), _np(_merge_heads(q)))
    if torch is not None:
        t = torch.tensor(_np(q))
        np.testing.assert_array_equal(_np(got), (t.transpose(1, 2).reshape(2, 9, -1) * 2.0).numpy())


@pytest.mark.parametrize("shape", [(2, 4, 9, 16), (3, 2, 5, 12), (1, 3, 7, 8)])
def test_a_dynamic_merge_of_heads_equals_eager_at_every_size(shape):
    """Heads of 16, 12 and 8 (split: c >= 8 divides the extent) at several
    sequence lengths, compiled dynamic."""
    b, h, _, d = shape
    fn = ignis.compile(_merge_heads, backend="inductor")
    for t in (shape[2], shape[2] + 4, 2 * shape[2] + 1, 33):
        q = ignis.randn(b, h, t, d)
        np.testing.assert_array_equal(_np(fn(q)), _np(_merge_heads(q)))

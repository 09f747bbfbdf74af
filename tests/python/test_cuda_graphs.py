"""CUDA graphs: ignis.cuda.CUDAGraph / graph / graph_pool_handle (torch.cuda's
API, src/ignis/cuda/graph.h) and ignis.compile(mode="reduce-overhead")
(src/ignis/compiler/cudagraph_runner.h).

Everywhere (no GPU needed): the API's checks and errors without a GPU, the
mode's knob, and reduce-overhead on the CPU compiling as the default mode.
On a GPU, or the fake driver (tests/cuda_fake/run.sh, which records a
capturing stream's launches, copies and cuBLASLt products and replays them;
skipped with the reason elsewhere): eager work captured and replayed after
its inputs were mutated in place, GEMMs in a graph, pools shared between
graphs, reset, a capture that fails; compiled graphs replayed with inputs
that change value or address, outputs kept across calls, an MLP trained
step by step with eager's losses and gradients, and the fallbacks (random
ops, a capture that fails) staying correct with a warning and a log line.
Each result is compared with eager ignis (eager's own CUDA kernels are
checked against the CPU and torch in test_cuda_ops.py)."""
import warnings

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn as nn
import ignis.nn.functional as F
from ignis import _logging
from ignis._inductor import config
from ignis._inductor.compile_fx import recent_cudagraph_graphs

AVAILABLE = ignis.cuda.is_available()
REASON = ignis._C._cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(not AVAILABLE, reason=f"no usable CUDA GPU here: {REASON}")
no_gpu = pytest.mark.skipif(AVAILABLE, reason="checks the behaviour without a GPU")


def _np(t):
    return t.detach().cpu().numpy()


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)


def _randn(*shape):
    return ignis.randn(*shape).cuda()


def _stats():
    """cudagraph_stats of the graphs compiled by the last compile."""
    return [g.cudagraph_stats for g in recent_cudagraph_graphs]


def _compile(fn):
    ignis.compiler.reset()
    recent_cudagraph_graphs.clear()
    return ignis.compile(fn, mode="reduce-overhead")


# ---- everywhere ---------------------------------------------------------------

def test_reduce_overhead_sets_the_cudagraphs_knob():
    assert config.overrides("reduce-overhead") == {"triton.cudagraphs": True}
    assert config.overrides("default") == {}
    assert "triton.cudagraphs" in config.list_options()
    assert config.triton.cudagraphs is False
    with config.patch(**{"triton.cudagraphs": True}):
        assert config.triton.cudagraphs is True
    assert config.triton.cudagraphs is False
    assert "cudagraphs" in _logging.ARTIFACTS


def test_pool_handles_are_distinct_and_checked():
    a, b = ignis.cuda.graph_pool_handle(), ignis.cuda.graph_pool_handle()
    assert a[0] == 0 and b[0] == 0 and a[1] > 0 and a != b
    g = ignis.cuda.CUDAGraph()
    with pytest.raises(TypeError, match="graph_pool_handle"):
        g.capture_begin(pool="nope")
    with pytest.raises(ValueError, match="capture_error_mode"):
        g.capture_begin(capture_error_mode="loose")
    with pytest.raises(TypeError, match="CUDAGraph"):
        ignis.cuda.graph(object())
    with pytest.raises(NotImplementedError):
        ignis.cuda.make_graphed_callables(None, None)


@no_gpu
def test_without_a_gpu_capture_raises_and_nothing_captures():
    assert ignis.cuda.is_current_stream_capturing() is False
    g = ignis.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        g.capture_begin()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    assert "empty" in repr(g)


def test_reduce_overhead_on_the_cpu_compiles_as_the_default_mode(capfd):
    def f(x, w):
        return ignis.tanh(x @ w) * 2 + 1
    x, w = ignis.randn(5, 7), ignis.randn(7, 3)
    cf = _compile(f)
    _logging.set_logs(cudagraphs=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning: the CPU is no fallback
            for _ in range(3):
                x = ignis.randn(5, 7)
                close(cf(x, w), f(x, w))
    finally:
        _logging.set_logs()
    (stats,) = _stats()
    assert stats["records"] == 0 and stats["plain_runs"] == 3
    assert "CPU" in stats["fallback"]
    assert "[cudagraphs]" in capfd.readouterr().err


# ---- ignis.cuda.CUDAGraph on eager work ----------------------------------------

@needs_gpu
def test_a_captured_graph_replays_after_its_input_is_mutated():
    x = ignis.zeros(300, device="cuda")
    w = _randn(300)
    side = ignis.cuda.Stream()
    with ignis.cuda.stream(side):  # warm-up, as torch asks
        (x * w + 1).relu().sum()
    ignis.cuda.current_stream().wait_stream(side)
    g = ignis.cuda.CUDAGraph()
    with ignis.cuda.graph(g):
        assert ignis.cuda.is_current_stream_capturing()
        y = (x * w + 1).relu()
        total = y.sum()
    assert not ignis.cuda.is_current_stream_capturing()
    assert "captured" in repr(g)
    for step in range(3):
        new = _randn(300)
        x.copy_(new)
        g.replay()
        want = (new * w + 1).relu()
        close(y, want)
        close(total, want.sum(), rtol=1e-4)


@needs_gpu
def test_a_product_in_a_graph_reads_its_operands_at_replay():
    a, b = _randn(16, 32), _randn(32, 8)
    a @ b  # warm-up: cuBLASLt's plan
    g = ignis.cuda.CUDAGraph()
    with ignis.cuda.graph(g):
        out = ignis.tanh(a @ b)
    for _ in range(2):
        na, nb = _randn(16, 32), _randn(32, 8)
        a.copy_(na)
        b.copy_(nb)
        g.replay()
        close(out, ignis.tanh(na @ nb), rtol=1e-4, atol=1e-5)


@needs_gpu
def test_graphs_share_a_pool_and_reset_gives_it_back():
    x = _randn(1000)
    (x * 2).exp() + 1  # warm-up: every kernel the captures below use
    pool = ignis.cuda.graph_pool_handle()
    g1, g2 = ignis.cuda.CUDAGraph(), ignis.cuda.CUDAGraph()
    with ignis.cuda.graph(g1, pool=pool):
        y1 = x * 2
    with ignis.cuda.graph(g2, pool=g1.pool()):
        y2 = ignis.exp(y1)
    assert g1.pool() == g2.pool() == pool
    uses, segments, reserved, allocated = ignis._C._cuda_pool_stats(0, pool[1])
    assert uses == 2 and segments >= 1 and allocated >= 2 * 1000 * 4
    new = _randn(1000)
    x.copy_(new)
    g1.replay()
    g2.replay()  # in capture order: g2 reads g1's output
    close(y2, ignis.exp(new * 2), rtol=1e-5)
    g1.reset()
    assert ignis._C._cuda_pool_stats(0, pool[1])[0] == 1
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g1.replay()
    g2.reset()
    del y1, y2
    # Nothing holds the pool now: its segments went back to the device.
    assert ignis._C._cuda_pool_stats(0, pool[1])[1] == 0
    # A reset graph captures again.
    with ignis.cuda.graph(g1):
        y = x + 1
    g1.replay()
    close(y, new + 1)


@needs_gpu
def test_a_capture_that_reads_to_the_host_fails_cleanly():
    x = _randn(64)
    (x * 3).sum().item()
    g = ignis.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="CAPTURE"):
        with ignis.cuda.graph(g):
            (x * 3).sum().item()
    assert not ignis.cuda.is_current_stream_capturing()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    # The device and the allocator are usable, and the graph can capture again.
    close((x * 3).sum(), (x.cpu() * 3).sum(), rtol=1e-5)
    with ignis.cuda.graph(g):
        y = x * 3
    g.replay()
    close(y, x * 3)


@needs_gpu
def test_capture_needs_a_side_stream():
    g = ignis.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="non-default stream"):
        g.capture_begin()


# ---- mode="reduce-overhead" ----------------------------------------------------

@needs_gpu
def test_compiled_graph_replays_with_inputs_mutated_in_place():
    w = _randn(24, 12)

    def f(x):
        return F.gelu(x @ w) * 2 + x.sum(-1, keepdim=True)
    x = _randn(10, 24)
    cf = _compile(f)
    for step in range(5):
        x.copy_(_randn(10, 24))
        close(cf(x), f(x), rtol=1e-4, atol=1e-5)
    (stats,) = _stats()
    assert stats["fallback"] is None
    assert stats["records"] == 1 and stats["replays"] == 4 and stats["plain_runs"] == 1
    assert stats["input_copies"] == 0  # x never moved: read in place


@needs_gpu
def test_inputs_at_new_addresses_are_copied_after_one_rerecording():
    def f(x, y):
        return ignis.tanh(x) * y + 1
    y = _randn(7, 33)
    cf = _compile(f)
    keep = []
    for step in range(6):
        x = _randn(7, 33)
        keep.append(x)  # so that no step's x reuses the last one's block
        close(cf(x, y), f(x, y))
    (stats,) = _stats()
    assert stats["fallback"] is None
    assert stats["records"] == 2  # then x is copied, y stays in place
    assert stats["copied_inputs"] == 1
    assert stats["input_copies"] == 4


@needs_gpu
def test_an_output_kept_across_calls_keeps_its_value():
    def f(x):
        return ignis.exp(x) - 1, (x * x).sum()
    xs = [_randn(50) for _ in range(5)]
    cf = _compile(f)
    outs = [cf(x) for x in xs]
    for x, (a, s) in zip(xs, outs):
        close(a, ignis.exp(x) - 1)
        close(s, (x * x).sum(), rtol=1e-5)
    (stats,) = _stats()
    assert stats["replays"] >= 3 and stats["outputs_moved"] >= 4
    # An output nobody keeps costs no copy (the first call below moves the
    # last kept ones).
    cf(xs[0])
    moved = _stats()[0]["outputs_moved"]
    for x in xs:
        close(cf(x)[0], ignis.exp(x) - 1)
    assert _stats()[0]["outputs_moved"] == moved


@needs_gpu
def test_an_output_fed_back_as_input():
    def f(h, x):
        return ignis.tanh(h * 0.5 + x)
    x = _randn(20)
    h_eager = h = ignis.zeros(20, device="cuda")
    cf = _compile(f)
    for _ in range(6):
        h = cf(h, x)
        h_eager = f(h_eager, x)
        close(h, h_eager)


@needs_gpu
def test_an_mlp_trains_like_eager_step_after_step():
    def make():
        ignis.manual_seed(0)
        return nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 3)).cuda()
    eager, comp = make(), make()
    opt_e = ignis.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    opt_c = ignis.optim.SGD(comp.parameters(), lr=0.1, momentum=0.9)
    ignis.compiler.reset()
    recent_cudagraph_graphs.clear()
    step_c = ignis.compile(comp, mode="reduce-overhead")
    losses = []
    for step in range(6):
        x, t = _randn(16, 12), _randn(16, 3)
        opt_e.zero_grad()
        le = F.mse_loss(eager(x), t)
        le.backward()
        opt_e.step()
        opt_c.zero_grad()
        lc = F.mse_loss(step_c(x), t)
        lc.backward()
        for p, q in zip(eager.parameters(), comp.parameters()):
            close(q.grad, p.grad, rtol=1e-4, atol=1e-6)
        opt_c.step()
        losses.append((lc, le))
    for lc, le in losses:  # each step's loss kept its value
        close(lc, le, rtol=1e-4, atol=1e-6)
    stats = _stats()
    assert len(stats) == 2  # the forward and the backward graph
    for s in stats:
        assert s["fallback"] is None, s
        assert s["replays"] >= 4, s


@needs_gpu
def test_an_embedding_model_is_recorded_and_trains_like_eager():
    # Note [Index errors on the GPU]: the embedding's index, the
    # cross-entropy's gather and the embedding backward's index_put read
    # their indices on the device, so nothing reads to the host and both
    # graphs are recorded (they fell back before: the capture failed).
    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 16)
            self.out = nn.Linear(16, 50)

        def forward(self, idx, tgt):
            return F.cross_entropy(self.out(ignis.tanh(self.emb(idx))).view(-1, 50), tgt.view(-1))

    def make():
        ignis.manual_seed(0)
        return Tiny().cuda()
    eager, comp = make(), make()
    opt_e = ignis.optim.SGD(eager.parameters(), lr=0.1)
    opt_c = ignis.optim.SGD(comp.parameters(), lr=0.1)
    ignis.compiler.reset()
    recent_cudagraph_graphs.clear()
    step_c = ignis.compile(comp, mode="reduce-overhead")
    for step in range(5):
        idx = ignis.randint(0, 50, (4, 8)).cuda()
        tgt = ignis.randint(0, 50, (4, 8)).cuda()
        opt_e.zero_grad()
        le = eager(idx, tgt)
        le.backward()
        opt_e.step()
        opt_c.zero_grad()
        lc = step_c(idx, tgt)
        lc.backward()
        close(lc, le, rtol=1e-5, atol=1e-6)
        for p, q in zip(eager.parameters(), comp.parameters()):
            close(q.grad, p.grad, rtol=1e-4, atol=1e-6)
        opt_c.step()
    stats = _stats()
    assert len(stats) == 2
    for s in stats:
        assert s["fallback"] is None, s
        assert s["replays"] >= 3, s


@needs_gpu
def test_random_ops_fall_back_with_a_warning_and_a_log_line(capfd):
    def f(x):
        return F.dropout(ignis.exp(x) * 2, 0.5, training=True) + 1
    x = _randn(16, 40)
    cf = _compile(f)
    _logging.set_logs(cudagraphs=True)
    try:
        with pytest.warns(UserWarning, match="random op"):
            ignis.manual_seed(3)
            got = [cf(x) for _ in range(3)]
    finally:
        _logging.set_logs()
    ignis.manual_seed(3)
    want = [f(x) for _ in range(3)]
    for a, b in zip(got, want):
        close(a, b, rtol=1e-6)
    assert not np.array_equal(_np(got[0]), _np(got[1]))  # fresh numbers each call
    (stats,) = _stats()
    assert stats["records"] == 0 and "random op" in stats["fallback"]
    assert "[cudagraphs]" in capfd.readouterr().err


@needs_gpu
def test_a_graph_that_cannot_be_captured_falls_back():
    def f(x, y):
        h = ignis.tanh(x) + 1
        return h.cpu() * y, h * 3  # a copy to pageable host memory: not capturable
    y = ignis.randn(4, 6)
    cf = _compile(f)
    with pytest.warns(UserWarning, match="recording failed"):
        outs = [cf(x, y) for x in [_randn(4, 6) for _ in range(3)]]
    for (a, b), x in zip(outs, [None] * 3):
        assert a.device.type == "cpu" and b.device.type == "cuda"
    x = _randn(4, 6)
    a, b = cf(x, y)
    wa, wb = f(x, y)
    close(a, wa)
    close(b, wb)
    (stats,) = _stats()
    assert stats["records"] == 0 and "recording failed" in stats["fallback"]
    assert not ignis.cuda.is_current_stream_capturing()

"""The compiler's gather sinking (graph/passes/sink_gather.h): a gather of an
elementwise value reads the value's operands at the gathered elements, so
cross_entropy keeps no [N, V] log_softmax. Compiled results equal eager and
torch; the programs show what was (and was not) stored."""
import re

import numpy as np
import pytest
import torch

import _checkout  # noqa: F401
import ignis
import ignis.nn.functional as F


def stored(program):
    """(dtype, sizes) of each buffer a kernel or an extern writes to memory
    (fused-away buffers and views of inputs aside)."""
    out = []
    for line in program.splitlines():
        m = re.match(r"(buf\d+): (\w+)\[([\d, ]*)\] strides \[[^]]*\] (computed|extern)(.*)", line)
        if not m or "fused away" in m.group(5):
            continue
        name = m.group(1)
        if re.search(rf"^view \w+\(\w+.*\) -> {name}$", program, re.M):
            continue
        sizes = tuple(int(s) for s in m.group(3).split(",") if s.strip())
        out.append((m.group(2), sizes))
    return out


def close(a, b, rtol, atol):
    a = a.detach().float().numpy() if isinstance(a, ignis.Tensor) else a
    b = b.detach().float().numpy() if isinstance(b, ignis.Tensor) else b
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


N, V = 64, 1000


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cross_entropy_equals_eager_and_torch(programs, reduction, label_smoothing, dtype):
    g = ignis.Generator().manual_seed(0)
    x0 = ignis.randn(N, V, generator=g) * 3
    t = ignis.randint(0, V, (N,), generator=g)
    t[::7] = -100  # ignore_index
    dt = getattr(ignis, dtype)

    def f(x, t):
        return F.cross_entropy(x.view(-1, V), t.view(-1), reduction=reduction,
                               label_smoothing=label_smoothing)
    xc = x0.to(dt).clone().requires_grad_()
    xe = x0.to(dt).clone().requires_grad_()
    got = ignis.compile(f, backend="inductor")(xc, t)
    want = f(xe, t)
    tx = torch.tensor(x0.numpy()).to(getattr(torch, dtype)).requires_grad_()
    ref = torch.nn.functional.cross_entropy(tx, torch.tensor(t.numpy()), reduction=reduction,
                                            label_smoothing=label_smoothing)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=2e-2, atol=2e-2)
    close(got, want, **tol)
    close(got, ref.detach().float().numpy(), **tol)
    seed = ignis.randn(tuple(got.shape), generator=g).to(dt)
    got.backward(seed)
    want.backward(seed)
    ref.backward(torch.tensor(seed.float().numpy()).to(getattr(torch, dtype)))
    close(xc.grad, xe.grad, **tol)
    close(xc.grad, tx.grad.float().numpy(), **tol)
    forward = programs[0]
    assert "extern gather(" in forward, forward
    # The forward stores per-row values and, of [N, V], at most the softmax
    # the partitioner may save for backward (in the logits' dtype), never
    # the float32 log_softmax the gather used to read.
    full = [d for d, s in stored(forward) if s == (N, V)]
    assert full in ([], [dtype]), forward


def test_inference_cross_entropy_stores_nothing_of_the_vocabulary_size(programs):
    x = ignis.randn(N, V).to(ignis.bfloat16)
    t = ignis.randint(0, V, (N,))
    with ignis.no_grad():
        got = ignis.compile(lambda x, t: F.cross_entropy(x, t), backend="inductor")(x, t)
    close(got, F.cross_entropy(x, t), rtol=2e-2, atol=2e-2)
    (program,) = programs
    assert all(V not in sizes for _, sizes in stored(program)), program
    # The gather reads the logits themselves (bfloat16, one element a row).
    assert re.search(r"extern gather\((arg0_1|buf\d+), 1, buf\d+\) -> buf\d+", program), program
    kernel = program[program.index("kernel_0"):program.index("extern gather")]
    assert not re.search(r"store buf\d+\[r0 \+", kernel), kernel  # per-row stores only


def _run(fn, *args):
    with ignis.no_grad():
        return ignis.compile(fn, backend="inductor")(*args)


def _p_stored(program, shape):
    return any(s == tuple(shape) for _, s in stored(program))


# (name, fn(x, b, idx) -> gathered, b's shape, idx's shape, dim, sinks)
def _cases():
    n, v = 6, 10
    return [
        ("log_softmax", lambda x, b, i: ignis.gather(ignis.log_softmax(x, 1), 1, i),
         (n, 1), (n, 1), 1, True),
        ("per_row_operand", lambda x, b, i: ignis.gather(ignis.exp(x - b) * 2, 1, i),
         (n, 1), (n, 3), 1, True),
        ("dim0", lambda x, b, i: ignis.gather(ignis.sigmoid(x) + b, 0, i),
         (1, v), (2, v), 0, True),
        ("negative_dim_where", lambda x, b, i: ignis.gather(
            ignis.where(x > 0, x, b * 3), -1, i), (n, 1), (n, 2), 1, True),
        ("scalar_tensor_and_cast", lambda x, b, i: ignis.gather(
            (x * b.sum()).to(ignis.float64), 1, i), (n, 1), (n, 1), 1, True),
        # refused: b is full along dim 1 but broadcast along dim 0
        ("partially_broadcast", lambda x, b, i: ignis.gather(ignis.exp(x) + b, 1, i),
         (1, v), (n, 1), 1, False),
        # refused: idx covers fewer rows than the value has
        ("idx_fewer_rows", lambda x, b, i: ignis.gather(ignis.exp(x) * b, 1, i),
         (n, 1), (n - 2, 1), 1, False),
        # refused: a GEMM's output is no elementwise value
        ("gemm", lambda x, b, i: ignis.gather(x @ ignis.ones(v, v), 1, i),
         (n, 1), (n, 1), 1, False),
        # refused: a reduction's output (cumsum) is no elementwise value
        ("cumsum", lambda x, b, i: ignis.gather(ignis.cumsum(x, 1) + 1, 1, i),
         (n, 1), (n, 1), 1, False),
    ]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
def test_gather_of_an_elementwise_value_equals_eager(programs, case):
    name, fn, b_shape, i_shape, dim, sinks = case
    n, v = 6, 10
    g = ignis.Generator().manual_seed(1)
    x = ignis.randn(n, v, generator=g)
    b = ignis.randn(*b_shape, generator=g)
    i = ignis.randint(0, x.shape[dim], i_shape, generator=g)
    got = _run(fn, x, b, i)
    close(got, fn(x, b, i), rtol=1e-5, atol=1e-5)
    program = programs[-1]
    assert "gather" in program, program
    assert _p_stored(program, (n, v)) != sinks, program


def test_a_value_with_other_users_is_recomputed_at_the_gathered_elements(programs):
    def f(x, i):
        y = ignis.exp(x) * 2
        return ignis.gather(y, 1, i), y.sum(1)
    x = ignis.randn(8, 50)
    i = ignis.randint(0, 50, (8, 1))
    got = _run(f, x, i)
    for a, b in zip(got, f(x, i)):
        close(a, b, rtol=1e-5, atol=1e-5)
    assert not _p_stored(programs[-1], (8, 50)), programs[-1]


def test_a_gather_of_a_view_of_an_elementwise_value_is_left_alone(programs):
    # Gathering exp(x) through its view would store it in full: the pass
    # refuses rather than trade one stored [N, V] value for another.
    def f(x, i):
        return ignis.gather(ignis.exp(x).view(8, 50) - 1, 1, i)
    x = ignis.randn(400)
    i = ignis.randint(0, 50, (8, 1))
    close(_run(f, x, i), f(x, i), rtol=1e-5, atol=1e-5)
    assert "gather(" in programs[-1]


def test_an_out_of_range_index_still_raises(programs):
    x = ignis.randn(4, 10)
    i = ignis.tensor([[0], [3], [10], [1]])
    with pytest.raises(Exception, match="out of bounds"):
        _run(lambda x, i: ignis.gather(ignis.exp(x) + 1, 1, i), x, i)


def test_random_elementwise_chains_then_gather_equal_eager(programs):
    rng = np.random.default_rng(3)
    unary = [ignis.exp, ignis.tanh, ignis.sigmoid, ignis.neg, lambda t: t * 0.5 + 1,
             lambda t: t.to(ignis.float64), lambda t: ignis.where(t > 0, t, 0.1 * t)]
    binary = [ignis.add, ignis.sub, ignis.mul, ignis.maximum]
    for trial in range(12):
        rank = int(rng.integers(1, 4))
        shape = [int(s) for s in rng.integers(2, 6, rank)]
        dim = int(rng.integers(0, rank))
        steps = [(int(rng.integers(0, len(unary))), int(rng.integers(0, len(binary))),
                  int(rng.integers(0, 3))) for _ in range(int(rng.integers(1, 5)))]
        # operand shapes: full, per row along dim, or broadcast elsewhere
        operands = []
        for _, _, kind in steps:
            s = list(shape)
            if kind == 1:
                s[dim] = 1
            elif kind == 2 and rank > 1:
                s[(dim + 1) % rank] = 1
            operands.append(ignis.randn(*s))
        idx_shape = list(shape)
        idx_shape[dim] = int(rng.integers(1, shape[dim] + 1))
        idx = ignis.randint(0, shape[dim], idx_shape)
        x = ignis.randn(*shape)

        def f(x, idx, *ops):
            y = x
            for (u, b, _), o in zip(steps, ops):
                y = binary[b](unary[u](y), o.to(y.dtype))
            return ignis.gather(y, dim, idx)
        got = _run(f, x, idx, *operands)
        close(got, f(x, idx, *operands), rtol=1e-5, atol=1e-5)
        ignis.compiler.reset()

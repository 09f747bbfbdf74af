"""The compiler (backend "inductor"): fused pointwise kernels plus extern
calls, against eager."""

import re

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn as nn
import ignis.nn.functional as F
from ignis import _inductor
from ignis._inductor import metrics
from conftest import kernel_arg


def compile_and_count(fn, *args):
    """Runs fn through backend="inductor"; returns (result, kernels generated)."""
    ignis.compiler.reset()
    metrics.reset()
    out = ignis.compile(fn, backend="inductor")(*args)
    return out, metrics.generated_kernel_count


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=atol)


def test_seed_relu_add_mul_is_one_kernel():
    def f(x, y):
        return ignis.relu(x + y) * 2
    x, y = ignis.randn(8, 16), ignis.randn(8, 16)
    out, kernels = compile_and_count(f, x, y)
    assert kernels == 1
    close(out, f(x, y))


def test_long_pointwise_chain_is_one_kernel():
    def f(x):
        for i in range(50):
            x = ignis.tanh(x) * 1.01 + 0.01 * i if i % 2 else ignis.sigmoid(x) - 0.5
        return x
    x = ignis.randn(33, 17)
    out, kernels = compile_and_count(f, x)
    assert kernels == 1
    close(out, f(x))


def test_broadcasting_and_scalars():
    def f(x, row, col):
        return (x * row - col) / 3.0 + ignis.exp(-row) * 2
    x, row, col = ignis.randn(5, 7), ignis.randn(7), ignis.randn(5, 1)
    out, kernels = compile_and_count(f, x, row, col)
    assert kernels == 1
    close(out, f(x, row, col))


def test_transposed_and_sliced_inputs():
    def f(a, b):
        return ignis.sin(a.t()) + b[1:, ::2] * b[:-1, 1::2]
    a = ignis.randn(5, 5)
    b = ignis.randn(6, 12)[:, 1:11]
    out, _ = compile_and_count(f, a, b)
    close(out, f(a, b))
    # inputs that are themselves non-contiguous views
    a2 = ignis.randn(5, 5).t()
    out, _ = compile_and_count(f, a2, b)
    close(out, f(a2, b))


def test_views_inside_a_fused_kernel():
    def f(x):
        y = (x + 1).view(4, 6).permute(1, 0).unsqueeze(0)
        return ignis.relu(y.squeeze(0)[2:5] * 3)
    x = ignis.randn(2, 12)
    out, kernels = compile_and_count(f, x)
    assert kernels == 1
    close(out, f(x))


def test_float64():
    def f(x, y):
        return ignis.sqrt(ignis.abs(x)) * y - ignis.log1p(y * y)
    x = ignis.randn(9, 4, dtype=ignis.float64)
    y = ignis.randn(9, 4, dtype=ignis.float64)
    out, kernels = compile_and_count(f, x, y)
    assert kernels == 1
    assert out.dtype == ignis.float64
    close(out, f(x, y), rtol=1e-12, atol=1e-12)


def test_comparisons_where_and_casts_fuse():
    def f(x, y):
        m = x > 0.25
        z = ignis.where(m, x * y, -y)
        return ignis.where(z < y, z, 0.5).double() + 1, (x == y).clone()
    x, y = ignis.randn(6, 7), ignis.randn(7)
    y[2] = x[1, 2]
    (out, eq), kernels = compile_and_count(f, x, y)
    want, want_eq = f(x, y)
    assert out.dtype == ignis.float64 and eq.dtype == ignis.bool
    # z (two users, cheap) is recomputed rather than stored; both outputs
    # iterate the same [6, 7] space: one kernel storing two buffers.
    assert kernels == 1
    close(out, want)
    assert (eq.numpy() == want_eq.numpy()).all()


def test_integer_division_stays_an_extern_but_integer_math_fuses():
    # Integer division traps on zero in C++: eager's kernel raises, so it
    # stays an extern; the multiply-add around it fuses.
    def f(x):
        return (x * 3 + 1) // 2
    x = ignis.arange(24).reshape(4, 6)
    out, kernels = compile_and_count(f, x)
    assert kernels == 1
    assert (out.numpy() == f(x).numpy()).all()

    def g(i):
        return (i * 3 - 7).abs().clamp(0, 9) * (i > 2)
    i = ignis.randint(-5, 5, (7, 5))
    out, kernels = compile_and_count(g, i)
    assert kernels == 1 and out.dtype == ignis.int64
    assert (out.numpy() == g(i).numpy()).all()


def test_numbers_on_the_left_and_0_dim_operands_fuse():
    """`1 - x` and `2 ** x` trace as sub(1, x) and pow(2, x), whose self is a
    number made a 0-dim int64 tensor; a 0-dim float64 input meets float32
    ones; a bool tensor is added to a float one: each operand converts to
    the common dtype inside the kernel (Note [Operands of another dtype],
    lower.cpp), where each was an extern and a buffer. The values and dtypes
    are eager's; float16 keeps its extern (eager rounds the number to
    float16 first)."""
    def f(x, s, i):
        return ((1 - x).sin() * 2 ** x + x * s + (x > s), (3 - i) * i.new_tensor(2) + (i == 1))

    x = ignis.randn(5, 6)
    s = ignis.tensor(0.25, dtype=ignis.float64)
    i = ignis.randint(-4, 4, (5, 6), dtype=ignis.int32)
    with ignis.no_grad():
        c = _program(f, x, s, i)
        assert "extern" not in c.program and c.kernel_count == 1, c.program
        got, want = c(x, s, i), f(x, s, i)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6)
        h = ignis.randn(5, 6).half()
        c16 = _program(lambda h: 1 - h, h)
        assert "extern sub" in c16.program, c16.program
        np.testing.assert_array_equal(c16(h)[0].float().numpy(), (1 - h).float().numpy())
    torch = pytest.importorskip("torch")  # the oracle's dtypes and values as well
    t = f(*(torch.from_numpy(a.numpy()) for a in (x, s, i)))
    for g, w in zip(got, t):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_16_bit_operands_of_float32_ops_fuse_rounded_as_eager_stored_them(dtype):
    """A 16-bit float operand of a float32 op (layer_norm's bfloat16 x less
    its float32 mean) converts inside the kernel instead of running as an
    extern (Note [Operands of another dtype]); a fused 16-bit value, which
    the kernel computes in float32, rounds to its dtype first, as eager's
    stored tensor was: the results equal eager's bit for bit (a * b, exact
    in float32, is where the rounding shows: unrounded, most elements
    differ)."""
    dt = getattr(ignis, dtype)

    def f(a, b, m, r):
        return ((a * b) - m) * r, (a - m).sum(0)
    a, b = ignis.randn(33, 40).to(dt), ignis.randn(33, 40).to(dt)
    m, r = ignis.randn(33, 1), ignis.randn(33, 1)
    with ignis.no_grad():
        c = _program(f, a, b, m, r)
        assert "extern" not in c.program, c.program
        for got, want in zip(c(a, b, m, r), f(a, b, m, r)):
            assert got.dtype == want.dtype == ignis.float32
            if got.dim() == 2:
                np.testing.assert_array_equal(got.numpy(), want.numpy())
            else:  # a sum: another order of the same float32 terms
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_comparisons_of_mixed_dtypes_compare_in_the_promoted_dtype():
    """A comparison's operands with dims promote as eager's do (bfloat16
    against float32 compares in float32, bfloat16 against float16 in
    float32, int32 against int64 in int64, an integer against a float in
    the float): each converts in the kernel (Note [Operands of another
    dtype]), where the comparison was an extern whenever its first operand
    was the narrower. Masks equal eager's and torch's."""
    bf, h = ignis.bfloat16, ignis.float16
    ignis.manual_seed(0)
    x, y = ignis.randn(64, 33).to(bf), ignis.randn(64, 33)
    z = ignis.randn(64, 33).to(h)
    i32 = ignis.randint(-3, 3, (64, 33), dtype=ignis.int32)
    i64 = ignis.randint(-3, 3, (64, 33))

    def f(x, y, z, i32, i64):
        return ((x < y) & (x * 2 > y), y >= x, x < z, i32 == i64, i32 < y)
    args = (x, y, z, i32, i64)
    with ignis.no_grad():
        c = _program(f, *args)
        assert "extern" not in c.program, c.program
        got, want = c(*args), f(*args)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype == ignis.bool
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    torch = pytest.importorskip("torch")
    t = f(*(torch.from_numpy(a.float().numpy()).to(getattr(torch, str(a.dtype).split(".")[-1]))
            for a in args))
    for g, w in zip(got, t):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


# ulp: a relative unit in the last place; tiny: the spacing of the
# smallest (subnormal) values, float16's 2^-24.
@pytest.mark.parametrize("dtype,ulp,tiny", [("bfloat16", 2.0 ** -8, 1e-30),
                                            ("float16", 2.0 ** -11, 2.0 ** -24)])
def test_16_bit_floats_compute_in_float_and_round_once(dtype, ulp, tiny):
    dt = getattr(ignis, dtype)

    def f(x, w):
        y = ignis.relu(x * 2 + 1) * w
        return ignis.softmax(y, -1), y.sum(0)
    x, w = ignis.randn(9, 40).to(dt), ignis.randn(40).to(dt)
    (sm, s), kernels = compile_and_count(f, x, w)
    assert sm.dtype == dt and s.dtype == dt
    # Two kernels: the row softmax and the column sum iterate differently.
    assert kernels == 2
    # The kernel computes in float and rounds once: within an ulp of the
    # exact values (float64 from the same 16-bit inputs). (Eager rounds y
    # too, which moves a softmax of |y| ~ 20 by 6% in bfloat16: eager is not
    # the reference here.)
    want_sm, want_s = f(x.double(), w.double())
    close(sm.double(), want_sm, rtol=ulp, atol=tiny)
    close(s.double(), want_s, rtol=ulp, atol=ulp * float((x.double() * 2 + 1).relu().abs().max()))


def test_casts_predicates_and_bool_logic_fuse():
    def f(x, i):
        bad = ignis.isnan(x / x) | (x > 1)
        return ignis.where(bad, i.to(ignis.float32), x * 2).to(ignis.int32), ~bad
    x, i = ignis.randn(6, 8), ignis.randint(-3, 3, (6, 8))
    x[0, 0] = 0.0
    (a, b), kernels = compile_and_count(f, x, i)
    want_a, want_b = f(x, i)
    assert kernels == 1 and a.dtype == ignis.int32 and b.dtype == ignis.bool
    assert (a.numpy() == want_a.numpy()).all() and (b.numpy() == want_b.numpy()).all()


def test_reductions_fuse_with_producers_after_a_gemm():
    def f(x, w):
        h = ignis.relu(x @ w + 1)
        return (h * h).sum(1), h.softmax(-1)
    x, w = ignis.randn(6, 5), ignis.randn(5, 4)
    out, kernels = compile_and_count(f, x, w)
    # The GEMM with relu(. + 1) in its epilogue; then both row reductions
    # over h in one kernel.
    assert kernels == 2
    for a, b in zip(out, f(x, w)):
        close(a, b)


def _rms_norm(x, w):
    return x * ignis.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


@pytest.mark.parametrize("name,fn,shapes", [
    ("softmax", lambda x: ignis.softmax(x, -1), [(37, 129)]),
    ("log_softmax", lambda x: ignis.log_softmax(x, -1), [(37, 129)]),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (129,), w, b), [(37, 129), (129,), (129,)]),
    ("rms_norm", _rms_norm, [(37, 129), (129,)]),
    ("softmax_dim0", lambda x: ignis.softmax(x, 0), [(37, 129)]),
    ("column_sum", lambda x: (x * 2).sum(0), [(37, 129)]),
    ("full_sum", lambda x: ignis.exp(x).sum(), [(37, 129)]),
    ("amax_amin_3d", lambda x: x.amax((0, 2)) - (x * 2).amin((0, 2)), [(5, 7, 9)]),
    ("prod", lambda x: (x * 0.5 + 1).prod(1), [(5, 7, 9)]),
])
def test_canonical_reductions_are_one_kernel_forward_and_backward(name, fn, shapes):
    ins = [ignis.randn(*s) for s in shapes]
    out, kernels = compile_and_count(fn, *ins)
    assert kernels == 1, name
    close(out, fn(*ins), rtol=1e-5, atol=1e-5)
    # Gradients: compiled forward and backward against eager's.
    ref = [t.clone().requires_grad_(True) for t in ins]
    got = [t.clone().requires_grad_(True) for t in ins]
    gout = ignis.randn(tuple(out.shape))
    (fn(*ref) * gout).sum().backward()
    ignis.compiler.reset()
    metrics.reset()
    (ignis.compile(fn, backend="inductor")(*got) * gout).sum().backward()
    for r, g in zip(ref, got):
        close(g.grad, r.grad, rtol=1e-4, atol=1e-5)


def test_fifty_tiny_pointwise_ops_are_one_kernel():
    def f(x):
        for i in range(50):
            x = x * 1.01 + 0.001 if i % 3 else ignis.sin(x)
        return x
    x = ignis.randn(1024)
    out, kernels = compile_and_count(f, x)
    assert kernels == 1
    close(out, f(x))


def test_reductions_match_eager_on_random_shapes():
    rng = np.random.default_rng(0)
    ops = [lambda t, d, k: t.sum(d, keepdim=k), lambda t, d, k: t.amax(d, keepdim=k),
           lambda t, d, k: t.amin(d, keepdim=k), lambda t, d, k: t.mean(d, keepdim=k)]
    for trial in range(12):
        rank = int(rng.integers(1, 4))
        shape = tuple(int(s) for s in rng.integers(1, 40, size=rank))
        dims = tuple(sorted(set(int(d) for d in rng.integers(0, rank, size=rng.integers(1, rank + 1)))))
        keep = bool(rng.integers(0, 2))
        op = ops[trial % len(ops)]
        x = ignis.randn(*shape)
        if trial % 3 == 0:
            x = x.transpose(0, -1)  # a non-contiguous input

        def f(x):
            return ignis.tanh(op(ignis.exp(x) - 1, dims, keep)) * 2
        out, kernels = compile_and_count(f, x)
        assert kernels == 1, (shape, dims, keep)
        close(out, f(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [ignis.float32, ignis.float64])
def test_nan_propagates_through_max_and_min(dtype):
    # Row 1's NaN falls in a lane of the blocked loop (Note [NaN lanes]),
    # row 3's in the tail; row 2 holds infinities, which are not NaN.
    def f(x):
        return x.amax(1), x.amin(1)
    x = ignis.randn(4, 40, dtype=dtype)
    x[1, 17] = float("nan")
    x[3, 39] = float("nan")
    x[2, 5] = float("inf")
    x[2, 6] = float("-inf")
    (mx, mn), kernels = compile_and_count(f, x)
    want_mx, want_mn = f(x)
    np.testing.assert_array_equal(mx.numpy(), want_mx.numpy())
    np.testing.assert_array_equal(mn.numpy(), want_mn.numpy())
    assert np.isnan(mx.numpy()).tolist() == [False, True, False, True]


@pytest.mark.skipif(getattr(ignis._C, "_sanitized", False),
                    reason="a sanitized build compiles eager kernels at -O1 (ASan + UBSan), where "
                           "their sums and the generated kernel's round differently")
def test_softmax_rounds_as_eager():
    # The decomposition multiplies by the sum's reciprocal, as the eager
    # kernel does, so the compiled softmax gives eager's bits (at the
    # release build's flags, which the generated kernels copy).
    x = ignis.randn(8, 300)
    x[2, 7] = float("nan")
    x[5] = float("-inf")
    out, kernels = compile_and_count(lambda x: ignis.softmax(x, -1), x)
    assert kernels == 1
    np.testing.assert_array_equal(out.numpy(), ignis.softmax(x, -1).numpy())


def _chain(t):
    for _ in range(5):
        t = ignis.sin(t) * 1.1 + 0.1
    return t


def test_memory_plan_reuses_dead_intermediates_and_never_outputs():
    def f(x):
        y = _chain(x)          # kernel 0 stores y (and its column sums)
        a, b = y.sum(0), y.sum(1)  # kernel 1 reads y: y dies there
        z = _chain(x + b[None, :])  # b read across its rows: kernel 2, after y died
        return a, z.sum(0), z.sum(1)
    from ignis._functorch.aot_autograd import trace_joint
    x = ignis.randn(32, 32)
    gm, _ = trace_joint(ignis.fx.symbolic_trace(f), [x])
    compiled = _inductor.compile_fx(gm, None)
    plan = compiled.memory_plan
    slots = [line.split(":")[1].split() for line in plan.splitlines() if line.startswith("slot ")]
    assert ["buf1", "buf4"] in slots, plan  # y's and z's storage is one
    outputs = compiled.program.splitlines()[-1]
    for name in sum(slots, []):
        assert name not in outputs
    for _ in range(2):  # the slot is reused across calls too
        for got, want in zip(compiled(x), f(x)):
            # sums of 32 terms of magnitude ~1 in another order (and FMAs)
            close(got, want, rtol=1e-5, atol=1e-4)


def _gemm_kernel_lines(program):
    """(the buffer each GEMM writes, the buffers its kernel outputs) per GEMM kernel."""
    out, lines = [], program.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("kernel_") and i + 2 < len(lines) and "gemm " in lines[i + 2]:
            outputs = line.split("->")[1].split()
            out.append((lines[i + 2].split("gemm ")[1].split()[0], outputs))
    return out


def test_a_gemm_epilogue_writes_over_the_product():
    # Note [Results written in place] (memory_plan.h): linear's bias add and
    # ReLU transform the product where the GEMM wrote it; no second buffer
    from ignis._functorch.aot_autograd import trace_joint
    x, w, b = ignis.randn(48, 40), ignis.randn(24, 40), ignis.randn(24)

    def f(x, w, b):
        return ignis.nn.functional.linear(x, w, b).relu()
    gm, _ = trace_joint(ignis.fx.symbolic_trace(f), [x, w, b])
    compiled = _inductor.compile_fx(gm, None)
    gemms = _gemm_kernel_lines(compiled.program)
    assert len(gemms) == 1, compiled.program
    c, outputs = gemms[0]
    assert outputs == [c], compiled.program
    close(compiled(x, w, b)[0], f(x, w, b), rtol=1e-5, atol=1e-5)


def test_a_product_the_program_returns_is_not_written_over():
    from ignis._functorch.aot_autograd import trace_joint
    x, w, b = ignis.randn(48, 40), ignis.randn(40, 24), ignis.randn(24)

    def f(x, w, b):
        h = x @ w
        return h, (h + b).relu(), h * 2  # h is an output: its epilogues write elsewhere
    gm, _ = trace_joint(ignis.fx.symbolic_trace(f), [x, w, b])
    compiled = _inductor.compile_fx(gm, None)
    for c, outputs in _gemm_kernel_lines(compiled.program):
        assert c not in outputs[1:], compiled.program
    for got, want in zip(compiled(x, w, b), f(x, w, b)):
        close(got, want, rtol=1e-5, atol=1e-5)


def test_in_place_results_keep_training_equal_to_eager():
    # a GEMM epilogue written over its product inside forward and backward
    # graphs, gradients included
    ignis.manual_seed(0)
    model = ignis.nn.Sequential(ignis.nn.Linear(16, 32), ignis.nn.GELU(),
                                ignis.nn.Linear(32, 8), ignis.nn.Tanh())
    x = ignis.randn(20, 16)
    compiled = ignis.compile(model)
    for m in (model, compiled):
        m.zero_grad()
    want = model(x).square().sum()
    want.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    got = compiled(x).square().sum()
    got.backward()
    close(got, want, rtol=1e-5, atol=1e-5)
    for p, g in zip(model.parameters(), grads):
        close(p.grad, g, rtol=1e-4, atol=1e-5)


def _as_tuple(v):
    return v if isinstance(v, tuple) else (v,)


def test_an_index_put_into_a_dead_buffer_writes_in_place():
    # reinplace_extern (memory_plan.cpp): index_put's copy of its first
    # argument is skipped when nothing reads that buffer afterwards
    from ignis._functorch.aot_autograd import trace_joint
    x, v = ignis.randn(10, 4), ignis.randn(6, 4)
    idx = ignis.from_numpy(np.array([1, 3, 3, 0, 9, 1]))

    def dead(x, idx, v):
        return (x * 2).index_put((idx,), v, accumulate=True)

    def alive(x, idx, v):
        z = x * 2
        return z.index_put((idx,), v, accumulate=True), z  # z returned: never written
    # (alive's and of_input's index_put write into a copy of z or x that a
    # kernel stores beside it: in place into that copy or not, z and x must
    # come back unchanged)

    def of_input(x, idx, v):
        return x.index_put((idx,), v, accumulate=True)
    for f, in_place in ((dead, True), (alive, None), (of_input, None)):
        x0 = x.clone()
        gm, _ = trace_joint(ignis.fx.symbolic_trace(f), [x, idx, v])
        compiled = _inductor.compile_fx(gm, None)
        if in_place is not None:
            assert ("index_put_(" in compiled.program) == in_place, compiled.program
        for got, want in zip(compiled(x, idx, v), _as_tuple(f(x, idx, v))):
            close(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(x.numpy(), x0.numpy())  # the input is never written


def test_an_embedding_gradient_matches_eager_when_accumulated_in_place():
    ignis.manual_seed(0)
    emb = nn.Embedding(50, 8)
    idx = ignis.randint(0, 50, (4, 7))
    f = lambda i: (emb(i) * ignis.arange(8.0)).square().sum()  # noqa: E731
    grads = []
    for fn in (f, ignis.compile(f)):
        emb.zero_grad()
        fn(idx).backward()
        grads.append(emb.weight.grad.clone())
    close(grads[1], grads[0], rtol=1e-5, atol=1e-6)


def test_output_aliasing_an_input_stays_a_view():
    def f(x):
        return x.t(), x + 1
    x = ignis.randn(3, 4)
    (v, y), _ = compile_and_count(f, x)
    close(v, x.t())
    x.add_(1)
    close(v, x.t())


def test_generated_code_is_readable(capfd):
    from ignis import _C
    from ignis._functorch.aot_autograd import trace_joint

    def f(x, y):
        return ignis.relu(x + y) * 2
    gm, _ = trace_joint(ignis.fx.symbolic_trace(f), [ignis.randn(4, 4), ignis.randn(4, 4)])
    from ignis._inductor import config
    with config.patch(size_generic=False):  # the static text (IGNIS_SIZE_GENERIC may be set)
        compiled = _inductor.compile_fx(gm, None)
    code = compiled.generated_code
    assert 'extern "C" void kernel_0(char* const* bufs, const ignis::cpu::KernelRuntime*)' in code
    assert "ignis::scalar_ops::Relu{}" in code
    # [4, 4] contiguous: one loop over the 16 elements, too few for threads.
    assert "for (int64_t x0 = 0; x0 < 16; ++x0)" in code
    assert "#pragma omp parallel" not in code
    assert "kernel_0 (add, relu, mul) -> buf2" in compiled.program
    assert compiled.kernel_count == 1
    del _C


def test_bool_elements_are_bytes_in_generated_code():
    # element_ctype (codegen_cpp.cpp): a loop loading `bool` elements is not
    # vectorized by GCC, so masks are read as bytes compared with 0 and
    # stored as bytes; the values are eager's
    from ignis._functorch.aot_autograd import trace_joint

    def f(x, m):
        p = (x - x.amax(-1, keepdim=True)).exp()
        return ignis.where(m, p * 1.25, 0.0), p > 0.5
    x, m = ignis.randn(6, 35), ignis.rand(6, 35) < 0.8
    gm, _ = trace_joint(ignis.fx.symbolic_trace(f), [x, m])
    compiled = _inductor.compile_fx(gm, None)
    code = compiled.generated_code
    mask = kernel_arg(code, "arg1_1")
    assert f"const uint8_t* __restrict__ {mask} " in code, code
    assert f"{mask}[" in code and "] != 0)" in code, code
    assert "bool*" not in code, code
    for got, want in zip(compiled(x, m), f(x, m)):
        assert got.dtype == want.dtype
        close(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "bfloat16", "float64"])
def test_arange_is_computed_where_it_is_read(dtype):
    # ScalarKind::Index (loop_ir.h): arange's element i is start + step * i,
    # fused into its readers (a causal mask, positions), equal to eager's
    from ignis._functorch.aot_autograd import trace_joint
    dt = getattr(ignis, dtype)

    def f(x):
        t = x.shape[-1]
        i = ignis.arange(t)
        causal = i[None, :] > i[:, None]
        pos = ignis.arange(5, 5 - 3 * t, -3, dtype=dt)
        return ignis.where(causal, 0.0, x) * 2, pos, ignis.arange(t, dtype=dt) + 1
    x = ignis.randn(37, 37)
    gm, _ = trace_joint(ignis.fx.symbolic_trace(f), [x])
    compiled = _inductor.compile_fx(gm, None)
    assert "extern arange" not in compiled.program, compiled.program
    assert "= index " in compiled.program, compiled.program
    for got, want in zip(compiled(x), f(x)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_an_arange_with_a_fractional_step_stays_with_eager():
    # (eager's start + step * double(i) may round apart from a compiled one)
    from ignis._functorch.aot_autograd import trace_joint

    def f(x):
        return x + ignis.arange(0.1, 0.1 + 0.3 * x.shape[0], 0.3)[: x.shape[0]]
    x = ignis.randn(9)
    gm, _ = trace_joint(ignis.fx.symbolic_trace(f), [x])
    compiled = _inductor.compile_fx(gm, None)
    assert "extern arange" in compiled.program, compiled.program
    np.testing.assert_array_equal(compiled(x)[0].numpy(), f(x).numpy())


@pytest.mark.parametrize("dtype", ["float32", "int64", "bfloat16"])
def test_constant_pads_are_selects_in_their_readers(dtype):
    # pad_call (lower.cpp): a slice's gradient padded back and added to its
    # siblings' is one kernel; pads that grow, crop, or both; gradients too
    from ignis._functorch.aot_autograd import trace_joint
    F = nn.functional
    dt = getattr(ignis, dtype)

    def f(a, b, c):
        whole = F.pad(a, (0, 0, 0, 8)) + F.pad(b, (0, 0, 4, 4)) + F.pad(c, (0, 0, 8, 0))
        return whole, F.pad(a, (2, -1, 1, 3), value=3), F.pad(a, (-1, -2))
    a, b, c = (ignis.randn(4, 6).mul(10).to(dt) for _ in range(3))
    gm, _ = trace_joint(ignis.fx.symbolic_trace(f), [a, b, c])
    compiled = _inductor.compile_fx(gm, None)
    # (an integer tensor padded with the float value 3.0 stays with eager)
    assert compiled.program.count("extern pad") == (dtype == "int64"), compiled.program
    assert "kernel_0 (pad, pad_1, add, pad_2, add_1)" in compiled.program, compiled.program
    for got, want in zip(compiled(a, b, c), f(a, b, c)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    if dtype == "float32":
        args = [t.clone().requires_grad_() for t in (a, b, c)]
        grads = []
        for fn in (f, ignis.compile(f)):
            for t in args:
                t.grad = None
            outs = fn(*args)
            (outs[0] * 2 + outs[1].sum() + outs[2].square().sum()).sum().backward()
            grads.append([t.grad.clone() for t in args])
        for g, w in zip(*grads):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6)


def test_mlp_training_matches_eager_gradients():
    def make():
        ignis.manual_seed(0)
        return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    x, target = ignis.randn(10, 8), ignis.randn(10, 4)

    def loss_fn(model, x):
        out = model(x)
        return ((ignis.sigmoid(out) - target) ** 2).mean()

    eager_model, comp_model = make(), make()
    loss_fn(eager_model, x).backward()
    ignis.compiler.reset()
    metrics.reset()
    compiled = ignis.compile(loss_fn, backend="inductor")
    loss = compiled(comp_model, x)
    loss.backward()
    close(loss, loss_fn(eager_model, x))
    assert metrics.generated_kernel_count >= 2  # forward and backward graphs
    for p, q in zip(eager_model.parameters(), comp_model.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_the_compiler_is_the_default_backend():
    import inspect
    assert "inductor" in ignis.compiler.list_backends()
    assert inspect.signature(ignis.compile).parameters["backend"].default == "inductor"
    ignis.compiler.reset()
    metrics.reset()
    x = ignis.randn(4, 4)
    out = ignis.compile(lambda x: ignis.relu(x) * 2)(x)
    assert metrics.generated_kernel_count == 1
    close(out, ignis.relu(x) * 2)


def test_gpt_trains_through_the_compiler_like_eager():
    # Attention's fused backward returns a None beside its tensors: the
    # compiled program reads the elements by position.
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
    from gpt import GPTConfig, build_gpt, configure_optimizer
    cfg = GPTConfig(vocab_size=32, block_size=16, n_layer=2, n_head=2, n_embd=32)
    ignis.manual_seed(0)
    eager, comp = build_gpt(ignis)(cfg), build_gpt(ignis)(cfg)
    comp.load_state_dict(eager.state_dict())
    opt_e, opt_c = configure_optimizer(ignis, eager), configure_optimizer(ignis, comp)
    step = ignis.compile(comp, backend="inductor")
    idx = ignis.randint(0, 32, (4, 16))
    tgt = ignis.randint(0, 32, (4, 16))
    for _ in range(3):
        le = eager(idx, tgt)[1]
        lc = step(idx, tgt)[1]
        assert abs(le.item() - lc.item()) < 1e-5
        le.backward()
        lc.backward()
        for pe, pc in zip(eager.parameters(), comp.parameters()):
            np.testing.assert_allclose(pc.grad.numpy(), pe.grad.numpy(), rtol=1e-4, atol=1e-5)
        opt_e.step(), opt_c.step()
        opt_e.zero_grad(), opt_c.zero_grad()


def test_config_knobs_reach_the_generated_code():
    from ignis._inductor import config

    def f(x):
        return tuple(x * i for i in range(12))  # 12 outputs over one space
    x = ignis.randn(256, 256)
    with config.patch(max_fusion_size=4, **{"cpp.threads": 1}):
        out, kernels = compile_and_count(f, x)
    assert kernels == 3
    for a, b in zip(out, f(x)):
        close(a, b)
    with config.patch(size_generic=False, **{"cpp.threads": 1}):  # the static text
        from ignis._functorch.aot_autograd import trace_joint
        gm, _ = trace_joint(ignis.fx.symbolic_trace(lambda x: ignis.exp(x) * 2), [x])
        assert "num_threads(1)" in _inductor.compile_fx(gm, None).generated_code
    assert config.max_fusion_size == 64 and config.cpp.threads == -1  # restored
    with pytest.raises(AttributeError, match="no knob"):
        with config.patch(no_such_knob=1):
            pass


def test_schedule_log_names_every_fusion_decision(capfd):
    def f(x):
        y = ignis.softmax(x, -1)
        return y, (x * 2).sum(0)
    ignis._logging.set_logs(schedule=True)
    try:
        out, kernels = compile_and_count(f, ignis.randn(8, 16))
    finally:
        ignis._logging.set_logs()
    err = capfd.readouterr().err
    assert "[schedule] kernel_0 starts with amax over [8, 16 (reduced)]" in err
    assert "[schedule] mul joins kernel_0 (per element)" in err
    assert "not fused into kernel_0: its iteration space [8 (reduced), 16]" in err
    assert "stays inside kernel_0" in err
    assert kernels == 2


def _run_script(script, cache_dir, **env):
    """Runs `script` in a new Python process with this ignis and cache_dir as
    IGNIS_CACHE_DIR; returns its stderr (it must exit 0)."""
    import os
    import pathlib
    import subprocess
    import sys
    env = dict(os.environ, IGNIS_CACHE_DIR=str(cache_dir),
               PYTHONPATH=str(pathlib.Path(ignis.__file__).parents[1]), **env)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stderr


def test_max_autotune_measures_once_and_caches_the_winners(tmp_path, capfd, monkeypatch):
    script = (
        "import ignis\n"
        "x = ignis.randn(256, 512)\n"
        "f = ignis.compile(lambda x: (ignis.softmax(x, -1), (x * 2).sum(0)), mode='max-autotune')\n"
        "a, b = f(x)\n"
        "assert (a - ignis.softmax(x, -1)).abs().max().item() < 1e-6\n"
        "assert (b - (x * 2).sum(0)).abs().max().item() < 1e-3\n")
    def run(graph_cache="1"):
        return _run_script(script, tmp_path, IGNIS_FX_GRAPH_CACHE=graph_cache)
    first = run()
    assert "[autotune] kernel_0: threads=" in first and "variants)" in first
    assert "[autotune]" not in run()  # a new process finds the tuned graph
    assert "[autotune]" not in run("0")  # ... or, lowering again, the winners
    # A corrupt winner is measured again, not trusted.
    for entry in (tmp_path / "autotune").rglob("*"):
        if entry.is_file():
            entry.write_text("garbage")
    assert "[autotune] kernel_0" in run("0")


def test_max_autotune_measures_a_kernel_of_one_text_once(tmp_path):
    """Three residual blocks of one shape (their own weights, a product
    between them) lower to three kernels of one text: autotuning measures
    the first and gives the others its winner (Note [Kernels of one text]),
    and the values are eager's."""
    script = (
        "import ignis\n"
        "import ignis.nn.functional as F\n"
        "ignis.manual_seed(0)\n"
        "x = ignis.randn(256, 128)\n"
        "ps = [(ignis.randn(128, 128) / 12, ignis.randn(128), ignis.randn(128)) for _ in range(3)]\n"
        "def f(x):\n"
        "    for m, w, b in ps:\n"
        "        x = x + F.gelu(F.layer_norm(x @ m, (128,), w, b))\n"
        "    return x\n"
        "got = ignis.compile(f, mode='max-autotune')(x)\n"
        "assert (got - f(x)).abs().max().item() < 1e-4\n")
    lines = [ln for ln in _run_script(script, tmp_path).splitlines()
             if ln.startswith("[autotune]")]
    measured = [ln for ln in lines if "variants)" in ln]
    shared = [ln for ln in lines if "(as kernel_" in ln]
    assert measured and len(shared) >= 2 * len(measured) - 2, lines
    assert len(measured) + len(shared) == len(lines), lines


def test_mode_and_options_set_the_compiler_config():
    from ignis._inductor import config
    x = ignis.randn(64, 64)
    out, kernels = compile_and_count(lambda x: tuple(x * i for i in range(6)), x)
    assert kernels == 1
    ignis.compiler.reset()
    metrics.reset()
    f = ignis.compile(lambda x: tuple(x * i for i in range(6)), options={"max_fusion_size": 2})
    for i, o in enumerate(f(x)):
        close(o, x * i)
    assert metrics.generated_kernel_count == 3
    assert config.max_fusion_size == 64  # only for that compilation
    with pytest.raises(RuntimeError, match="Unexpected optimization option no_such"):
        ignis.compile(lambda x: x + 1, options={"no_such": 1})(x)


def test_softmax_computes_each_exp_once():
    # The sum pass writes exp(x - max) to a per-thread row; the quotient pass
    # reads it back instead of computing it again.
    from ignis._functorch.aot_autograd import trace_joint
    ignis.compiler.reset()  # no earlier graph of this structure: the static kernel
    x = ignis.randn(16, 300)
    gm, _ = trace_joint(ignis.fx.symbolic_trace(lambda x: ignis.softmax(x, -1)), [x])
    compiled = _inductor.compile_fx(gm, None)
    code = compiled.generated_code
    assert code.count("ignis::scalar_ops::Exp{}") == 2  # the lanes loop and its tail
    assert "scratch0[r0] = " in code and "= scratch0[r0];" in code
    close(compiled(x)[0], ignis.softmax(x, -1))


def _linear_gelu_program(x, lin):
    from ignis._functorch.aot_autograd import trace_joint
    gm, _ = trace_joint(ignis.fx.symbolic_trace(lambda x: F.gelu(lin(x))), [x])
    return _inductor.compile_fx(gm, None)


def test_linear_bias_gelu_is_one_gemm_with_its_epilogue():
    ignis.manual_seed(0)
    lin = nn.Linear(48, 80)
    x = ignis.randn(37, 48)
    with ignis.no_grad():
        compiled = _linear_gelu_program(x, lin)
        assert compiled.kernel_count == 1
        assert "rt->gemm(&call)" in compiled.generated_code
        assert "kernel_0_epilogue" in compiled.generated_code
        assert "gemm " in compiled.program and "then per finished block" in compiled.program
        assert "extern addmm" not in compiled.program
        close(compiled(x)[0], F.gelu(lin(x)), rtol=1e-5, atol=1e-5)


GEMM_LOG_SCRIPT = """
import glob, os, sys
# The parent's ignis (as _checkout.py picks it): this package when it holds a
# built _C, else the editable install's.
if glob.glob(os.path.join(sys.argv[1], "ignis", "_C*.so")):
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not type(f).__name__.startswith("ScikitBuild")]
    sys.path.insert(0, sys.argv[1])
import math
import numpy as np
import ignis
ignis._logging.set_logs(schedule=True)
lin = ignis.nn.Linear(48, 80)
x = ignis.randn(37, 48)
with ignis.no_grad():
    y = ignis.compile(lambda x: ignis.nn.functional.gelu(lin(x)))(x).numpy()
# NumPy's x @ W^T + b, then the exact GELU: the GEMM (W transposed) and its epilogue.
pre = x.numpy().astype(np.float64) @ lin.weight.numpy().T.astype(np.float64) + lin.bias.numpy()
want = 0.5 * pre * (1 + np.vectorize(math.erf)(pre / math.sqrt(2)))
print(float(np.abs(y - want).max()))
print(ignis._C._gemm_choice())
"""


@pytest.mark.parametrize("gemm", ["builtin", "blas"])
def test_schedule_log_says_which_gemm_the_templates_call(gemm, tmp_path):
    # IGNIS_GEMM is read once per process: one child per choice, each also
    # checking linear + GELU (x @ W^T and its epilogue) against NumPy.
    import os
    import subprocess
    import sys
    pkg_parent = os.path.dirname(os.path.dirname(ignis.__file__))
    env = dict(os.environ, IGNIS_GEMM=gemm, IGNIS_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", GEMM_LOG_SCRIPT, pkg_parent], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    err, choice = r.stdout.strip().splitlines()[-2:]
    assert float(err) < 1e-5
    assert "[schedule] kernel_0 starts with addmm over [37, 80] (a GEMM template)" in r.stderr
    assert f"[schedule] GEMM templates call {choice}\n" in r.stderr
    if gemm == "blas" and "the build has no OpenBLAS" not in choice:
        assert choice.startswith("OpenBLAS (core ") and "IGNIS_GEMM=blas" in choice
    else:
        assert choice.startswith("the built-in GEMM (") and "float32 register tile" in choice


def _program(fn, *args):
    from ignis._functorch.aot_autograd import trace_joint
    gm, _ = trace_joint(ignis.fx.symbolic_trace(fn), list(args))
    return _inductor.compile_fx(gm, None)


def test_gemm_epilogue_fuses_through_a_reshape_of_its_output():
    # A linear over [B, T, C] is a GEMM over [B*T, C] whose result is viewed
    # back as [B, T, N]: the GELU over the 3-D view runs in the GEMM's
    # epilogue all the same.
    ignis.manual_seed(0)
    lin = nn.Linear(24, 40)
    x = ignis.randn(3, 7, 24)
    with ignis.no_grad():
        compiled = _program(lambda x: F.gelu(lin(x)), x)
        assert compiled.kernel_count == 1, compiled.program
        assert "kernel_0_epilogue" in compiled.generated_code
        close(compiled(x)[0], F.gelu(lin(x)), rtol=1e-5, atol=1e-5)


def test_pointwise_chains_fuse_across_aligned_reshapes_only():
    # y is an output (stored), and a reshape of it feeds more pointwise work.
    x = ignis.randn(6, 8)

    def f(shape):
        def g(x):
            y = x.relu() * 2
            return y, y.reshape(shape).exp() + 1
        return g

    # [6, 8] -> [3, 2, 8]: rows split, the inner dim untouched: one kernel.
    c = _program(f((3, 2, 8)), x)
    assert c.kernel_count == 1, c.program
    for got, want in zip(c(x), f((3, 2, 8))(x)):
        close(got, want)
    # [6, 8] -> [8, 6] would divide the inner loop variable: two kernels.
    c = _program(f((8, 6)), x)
    assert c.kernel_count == 2, c.program
    for got, want in zip(c(x), f((8, 6))(x)):
        close(got, want)


def test_a_value_reading_many_buffers_is_stored_once():
    # A residual stream x + a + b + c + d feeds a layer_norm and a column sum
    # (two kernels): stored once by the first (it reads 5 buffers, more than
    # realize_reads_threshold) rather than re-read from all five by each.
    xs = [ignis.randn(4, 32) for _ in range(5)]

    def f(x, a, b, c, d):
        h = x + a + b + c + d
        return F.layer_norm(h, (32,)), h.sum(0)

    def loads(c):
        return c.program.count("= load ")

    compiled = _program(f, *xs)
    assert compiled.kernel_count == 2, compiled.program
    out = compiled(*xs)
    h = xs[0] + xs[1] + xs[2] + xs[3] + xs[4]
    close(out[0], F.layer_norm(h, (32,)), atol=1e-5)
    close(out[1], h.sum(0), atol=1e-5)
    with _inductor.config.patch(realize_reads_threshold=100, realize_across_kernels=False):
        inlined = _program(f, *xs)
    assert loads(compiled) < loads(inlined), (compiled.program, inlined.program)
    # Note [Values recomputed across kernels]: with the threshold out of the
    # way, the two kernels' recomputations of h are found after scheduling
    # and h is stored once all the same.
    with _inductor.config.patch(realize_reads_threshold=100):
        found = _program(f, *xs)
    assert loads(found) == loads(compiled), (found.program, compiled.program)
    close(found(*xs)[0], F.layer_norm(h, (32,)), atol=1e-5)


def test_a_residual_stream_is_stored_by_each_norm_that_computes_it():
    """Note [Values recomputed across kernels]: h = h + delta_k read by the
    next norm and by the next sum is stored by the norm kernel that computes
    it and read back by the next (2 tensors read a norm), where the reads
    threshold alone let each norm recompute the stream from up to four
    tensors; the results equal eager's."""
    ignis.manual_seed(0)
    n = 6
    xs = [ignis.randn(16, 32)] + [ignis.randn(32, 32) * 0.2 for _ in range(n)]

    def f(x, w1, w2, w3, w4, w5, w6):  # a block: h + norm(h) @ w (the product ends a kernel)
        h, outs = x, []
        for w in (w1, w2, w3, w4, w5, w6):
            y = F.layer_norm(h, (32,))
            outs.append(y)
            h = h + y @ w
        return tuple(outs) + (h,)

    def most_loads(c):  # the most tensor loads of one kernel
        blocks = re.split(r"\nkernel_", c.program)[1:]
        return max(len(set(re.findall(r"= load (\w+)\[", b))) for b in blocks)

    compiled = _program(f, *xs)
    with _inductor.config.patch(realize_across_kernels=False):
        threshold_only = _program(f, *xs)
    assert compiled.kernel_count == threshold_only.kernel_count
    assert most_loads(compiled) == 2, compiled.program
    assert most_loads(threshold_only) > 2, threshold_only.program
    # IGNIS_LOGS=schedule says what was realized and why
    realized = [ln for ln in compiled.schedule.splitlines() if ln.startswith("realized ")]
    assert realized and all("tensors by kernel_" in ln for ln in realized), compiled.schedule
    assert not any(ln.startswith("realized ") for ln in threshold_only.schedule.splitlines())
    for got, want in zip(compiled(*xs), f(*xs)):
        close(got, want, atol=1e-5)


def test_another_size_of_a_graph_starts_from_the_values_it_realized():
    """Note [Realize decisions shared across sizes]: the residual stream's
    graph at another batch (the same graph but for its numbers) realizes the
    same values, the log repeating the first lowering's lines, and computes
    eager's values; another graph does not take them."""
    ignis.manual_seed(0)
    ws = [ignis.randn(32, 32) * 0.2 for _ in range(4)]

    def f(x, w1, w2, w3, w4):
        h, outs = x, []
        for w in (w1, w2, w3, w4):
            y = F.layer_norm(h, (32,))
            outs.append(y)
            h = h + y @ w
        return tuple(outs) + (h,)

    def realized(c):
        return [ln for ln in c.schedule.splitlines() if ln.startswith("realized ")]

    first = _program(f, ignis.randn(16, 32), *ws)
    lines = realized(first)
    assert lines and not any("[as lowered before" in ln for ln in lines), first.schedule
    for rows in (24, 40):
        x = ignis.randn(rows, 32)
        again = _program(f, x, *ws)
        assert [ln.split(" [as lowered before")[0] for ln in realized(again)] == lines
        assert all("[as lowered before: Note [Realize decisions shared across sizes]]" in ln
                   for ln in realized(again)), again.schedule
        assert again.kernel_count == first.kernel_count
        for got, want in zip(again(x, *ws), f(x, *ws)):
            close(got, want, atol=1e-5)
    other = _program(lambda x, w1, w2, w3, w4: f(x * 2, w1, w2, w3, w4), ignis.randn(16, 32), *ws)
    assert not any("[as lowered before" in ln for ln in realized(other)), other.schedule


def test_layer_norm_of_a_residual_sum_reads_it_back_from_the_row_scratch():
    # The sum's three passes each need x + a + b: the first pass spills it,
    # the later ones read it back.
    xs = [ignis.randn(8, 64) for _ in range(3)]
    c = _program(lambda x, a, b: F.layer_norm(x + a + b, (64,)), *xs)
    assert c.kernel_count == 1
    assert "scratch0[inner] = " in c.program and "= scratch0[inner]" in c.program
    close(c(*xs)[0], F.layer_norm(xs[0] + xs[1] + xs[2], (64,)), atol=1e-5)


def test_a_realized_value_read_by_later_passes_of_its_kernel_is_never_stored():
    # layer_norm of x + a + b + c: x - mean reads four buffers, more than
    # realize_reads_threshold, so lowering realizes it; its readers (the
    # variance's pass and the normalising one) are in its own kernel, which
    # spills it to the row scratch instead of writing a float32 buffer of the
    # whole input and reading it back.
    xs = [ignis.randn(8, 64) for _ in range(4)]
    w, b = ignis.randn(64), ignis.randn(64)

    def f(x, a, c, d, w, b):
        return F.layer_norm(x + a + c + d, (64,), w, b)
    compiled = _program(f, *xs, w, b)
    assert compiled.kernel_count == 1, compiled.program
    computed = [line for line in compiled.program.splitlines()
                if re.match(r"buf\d+: .* computed$", line)]
    assert len(computed) == 1, compiled.program  # the output alone
    assert "= scratch" in compiled.program, compiled.program
    close(compiled(*xs, w, b)[0], f(*xs, w, b), atol=1e-5)


def test_layer_norm_backward_recomputes_x_hat_for_the_weight_gradient():
    """The realize policy counts arithmetic (calls and selects of a value's
    body), not graph nodes: layer_norm backward's x_hat = (x - mean) * rstd is
    nine nodes, five of them casts and views of the saved statistics, and two
    ops; its readers (the input gradient's row kernel and the weight
    gradient's column kernel) each recompute it from the bfloat16 x rather
    than one storing it in float32 for the other to read back (twice x's
    bytes, written and read)."""
    from ignis._functorch.aot_autograd import aot_autograd
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm
    n = 64
    x = ignis.randn(48, n, dtype=ignis.bfloat16).requires_grad_()
    w = ignis.randn(n, dtype=ignis.bfloat16).requires_grad_()
    b = ignis.randn(n, dtype=ignis.bfloat16).requires_grad_()
    y = ignis.compile(lambda x, w, b: F.layer_norm(x, (n,), w, b),
                      backend=aot_autograd(fw_compiler=keep, bw_compiler=keep))(x, w, b)
    y.backward(ignis.randn(48, n, dtype=ignis.bfloat16))
    program = ignis._C._generate_graph_code(graphs[1].graph, "cuda",
                                            _inductor.config.compiler_options())[0]
    computed = [ln for ln in program.splitlines() if re.match(r"buf\d+: .* computed$", ln)]
    assert computed and not any(ln.startswith(("buf", )) and "float32[48, 64]" in ln
                                for ln in computed), program
    assert program.count("kernel_") == 2, program


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("shape", [(300, 40), (1000, 7), (4, 50, 24)])
def test_column_sums_fold_per_range_of_rows_in_the_row_kernel(dtype, shape):
    """Note [Column sums in a row kernel]: layer_norm backward's weight and
    bias gradients (sums over rows) join the input gradient's row kernel,
    which folds them per range of rows into partials; a small column kernel
    folds those. The rows are read once, the results are eager's (NumPy's
    float64 for the sums), and config.column_sums_in_rows=False gives the
    two kernels that read the rows twice, with the same results."""
    from ignis._functorch.aot_autograd import aot_autograd
    dt = getattr(ignis, dtype)
    n = shape[-1]
    ignis.manual_seed(0)
    x = ignis.randn(*shape).to(dt).requires_grad_()
    w = (1 + 0.1 * ignis.randn(n)).to(dt).requires_grad_()
    b = ignis.randn(n).to(dt).requires_grad_()
    g = ignis.randn(*shape).to(dt)

    def f(x, w, b):
        return F.layer_norm(x, (n,), w, b)
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm
    ignis.compiler.reset()
    ignis.compile(f, backend=aot_autograd(fw_compiler=keep, bw_compiler=keep))(x, w, b).backward(g)
    bw = graphs[1]
    args = [x, w, b]
    want = ignis.autograd.grad(f(*args), args, g)
    programs = {}
    for on in (True, False):
        with _inductor.config.patch(column_sums_in_rows=on):
            programs[on] = _inductor.compile_fx(bw, None).program
    assert "fold buf" in programs[True] and "ranges ig_w" in programs[True], programs[True]
    assert "fold buf" not in programs[False]
    for on in (True, False):
        ignis.compiler.reset()
        with _inductor.config.patch(column_sums_in_rows=on):
            y = ignis.compile(f, backend="inductor")(*args)
            got = ignis.autograd.grad(y, args, g)
        tol = dict(rtol=1e-5, atol=1e-4) if dtype != "bfloat16" else dict(rtol=2e-2, atol=2e-2)
        for a, e in zip(got, want):
            np.testing.assert_allclose(a.float().numpy(), e.float().numpy(), **tol)
    # the sums against float64
    xs = x.detach().double().numpy().reshape(-1, n)
    gs = g.double().numpy().reshape(-1, n)
    mu, var = xs.mean(1, keepdims=True), xs.var(1, keepdims=True)
    xhat = (xs - mu) / np.sqrt(var + 1e-5)
    for a, e in zip(got[1:], ((gs * xhat).sum(0), gs.sum(0))):
        np.testing.assert_allclose(a.double().numpy(), e, rtol=1e-4 if dtype != "bfloat16" else 2e-2,
                                   atol=1e-3 if dtype != "bfloat16" else 0.5)


@pytest.mark.parametrize("rows", [3, 5, 70])
def test_column_sums_in_short_row_kernels_keep_their_partials_apart(rows):
    """With config.column_sums_min_rows=2 a float64 layer_norm's backward
    (the weights of a loss as its output gradient) folds its column sums
    even over a few rows. A row scratch that one pass reads once chose the
    partials buffer as its home (its row looks like an output's): the
    partials were overwritten and the weight gradient wrong. Gradients equal
    eager's."""
    dt = ignis.float64
    x = ignis.randn(rows, 4, dtype=dt).requires_grad_()
    w = ignis.randn(4, dtype=dt).requires_grad_()
    b = ignis.randn(4, dtype=dt).requires_grad_()
    wts = ignis.randn(rows, 4, dtype=dt)

    def f(x, w, b):
        return F.layer_norm(x, (4,), w, b)
    ignis.compiler.reset()
    with _inductor.config.patch(column_sums_min_rows=2):
        got = ignis.autograd.grad((ignis.compile(f, backend="inductor")(x, w, b) * wts).sum(),
                                  (x, w, b))
    want = ignis.autograd.grad((f(x, w, b) * wts).sum(), (x, w, b))
    for a, e in zip(got, want):
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rms_norm_backward_turns_its_column_kernel_into_a_row_kernel_that_folds_it(dtype, capfd):
    """RMSNorm written by hand: its backward sums the weight's gradient over
    rows (keepdim, then a view: an output that is a view no longer ends the
    open kernel) before the input gradient's row sum. The open column kernel
    becomes a row kernel folding that column sum per range of rows, the
    sum's cast waiting for the fold's kernel; the gradients are eager's."""
    dt = getattr(ignis, dtype)

    def rms(x, w):
        return x * ignis.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
    x = ignis.randn(256, 48).to(dt).requires_grad_()
    w = ignis.randn(48).to(dt).requires_grad_()
    g = ignis.randn(256, 48).to(dt)
    ignis.compiler.reset()
    ignis._logging.set_logs(schedule=True)
    try:
        got = ignis.autograd.grad(ignis.compile(rms, backend="inductor")(x, w), (x, w), g)
    finally:
        ignis._logging.set_logs()
    err = capfd.readouterr().err
    want = ignis.autograd.grad(rms(x, w), (x, w), g)
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == "float32" else dict(rtol=2e-2, atol=0.25)
    for a, e in zip(got, want):
        np.testing.assert_allclose(a.float().numpy(), e.float().numpy(), **tol)
    assert "which now folds its column sums per range of rows" in err, err
    assert "goes on past the view" in err, err


def test_a_view_of_a_held_view_follows_it():
    """Views held past an open kernel are emitted in order, and a view of a
    view still waiting for a fold's kernel waits too (cross_entropy's
    backward with the folds allowed over two rows: the second view ran
    first and read a buffer not yet made)."""
    x = ignis.randn(4, 5, dtype=ignis.float64).requires_grad_()
    t = ignis.randn(4, 5, dtype=ignis.float64).softmax(-1)
    w = ignis.rand(5, dtype=ignis.float64).requires_grad_()

    def f(x, w):
        return F.cross_entropy(x, t, weight=w)
    ignis.compiler.reset()
    with _inductor.config.patch(column_sums_min_rows=2):
        got = ignis.autograd.grad(ignis.compile(f, backend="inductor")(x, w), (x, w))
    want = ignis.autograd.grad(f(x, w), (x, w))
    for a, e in zip(got, want):
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-10, atol=1e-12)


def test_a_column_sum_beside_a_softmax_folds_in_its_row_kernel():
    """A sibling column sum over a softmax's input folds into the softmax's
    row kernel; a column sum of a value the row kernel computes only after
    its row reduction (x - max) folds in the later pass; what reads a sum
    being folded (here its square) waits for the fold's kernel."""
    x = ignis.randn(200, 48)

    def f(x):
        s = (x - x.amax(-1, keepdim=True)).sum(0)
        return ignis.softmax(x, -1), x.sum(0), s * s
    c = _program(f, x)
    assert c.program.count("fold buf") == 2 and "ranges ig_w" in c.program, c.program
    for got, want in zip(c(x), f(x)):
        close(got, want, rtol=1e-5, atol=1e-4)


def test_a_scratch_read_by_one_pass_lives_in_the_output_row():
    # softmax's exp row is read back only by the quotient pass, which
    # overwrites the output at the same elements: the output's row holds it
    # (no per-thread row).
    x = ignis.randn(16, 300)
    c = _program(lambda x: ignis.softmax(x, -1), x)
    assert "scratch0 in buf" in c.program and "[300*x0 + inner]" in c.program, c.program
    assert "ignis_scratch<float, 0>(" not in c.generated_code
    close(c(x)[0], ignis.softmax(x, -1))
    # Stored transposed, the output's row is not the scratch's: per thread.
    c = _program(lambda x: ignis.softmax(x, -1).t().contiguous(), x)
    assert "scratch0 in" not in c.program, c.program
    close(c(x)[0], ignis.softmax(x, -1).t().contiguous())
    # Read by two passes (layer_norm of a residual sum), it stays per thread.
    xs = [ignis.randn(8, 64) for _ in range(3)]
    c = _program(lambda x, a, b: F.layer_norm(x + a + b, (64,)), *xs)
    assert "scratch0 in" not in c.program and "ignis_scratch<float, 0>(" in c.generated_code
    close(c(*xs)[0], F.layer_norm(xs[0] + xs[1] + xs[2], (64,)), atol=1e-5)
    # An output of another dtype than the scratch cannot hold it.
    c = _program(lambda x: ignis.softmax(x, -1).to(ignis.float64), x)
    assert "scratch0 in" not in c.program, c.program
    close(c(x)[0], ignis.softmax(x, -1).to(ignis.float64))


def test_wide_rows_prefetch_the_next_row():
    """Note [Next-row prefetch]: a row kernel over rows of 16 to 64 KiB
    prefetches the next row's first-pass loads from its first later
    reducing pass, into L2; narrower or wider rows, and row_prefetch=False,
    do not; the values are eager's in every case (tails, the last row,
    several outer dims, 16-bit floats, size-generic code)."""
    from ignis._inductor import config

    def code(fn, *args, atol=2e-6, **knobs):
        knobs.setdefault("size_generic", False)  # the static text (IGNIS_SIZE_GENERIC may be set)
        with config.patch(**knobs):
            c = _program(fn, *args)
            close(c(*args)[0].float(), fn(*args).float(), atol=atol)
            return c.generated_code

    softmax = lambda x: ignis.softmax(x, -1)  # noqa: E731
    src = code(softmax, ignis.randn(4, 4096))
    pf = f"__builtin_prefetch({kernel_arg(src, 'arg0_1')} + (r0 + 4096*x0 + 4096), 0, 1);"
    assert src.count("__builtin_prefetch") == 1 and pf in src, src
    # in the exp-and-sum pass: after the max's fold, before the sum's
    assert src.index("nan0 |=") < src.index(pf) < src.index("float acc1 = acc1_lanes[0]"), src
    assert "if (x0 + 1 < 4)" in src, src
    assert "__builtin_prefetch" not in code(softmax, ignis.randn(4, 1024))
    assert "__builtin_prefetch" not in code(softmax, ignis.randn(2, 32768))
    assert "__builtin_prefetch" not in code(softmax, ignis.randn(4, 4096),
                                            **{"cpp.row_prefetch": False})
    # no later pass that reduces: the storing pass alone (where it gained nothing)
    assert "__builtin_prefetch" not in code(lambda x: x / x.sum(-1, keepdim=True),
                                            ignis.rand(3, 6000) + 0.5)
    for fn, args, atol in [
        (softmax, (ignis.randn(7, 5000),), 2e-6),  # a tail block
        (lambda x, w, b: F.layer_norm(x, (4100,), w, b),
         (ignis.randn(3, 5, 4100), ignis.randn(4100), ignis.randn(4100)), 2e-5),  # two outer dims
        # 18 KiB of bfloat16 (one rounding of the float result: 2^-5 at 8-16)
        (lambda x: ignis.log_softmax(x, -1), (ignis.randn(5, 9000).to(ignis.bfloat16),), 0.07),
    ]:
        assert "__builtin_prefetch" in code(fn, *args, atol=atol), fn
    # size-generic code prefetches through the parameters, for any size
    with config.patch(size_generic=True):
        for rows in (3, 6):
            x = ignis.randn(rows, 4096)
            c = _program(softmax, x)
            assert "__builtin_prefetch" in c.generated_code
            close(c(x)[0], softmax(x))


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_pow_to_a_known_exponent_is_arithmetic_in_eager_and_compiled(dtype):
    """Note [pow's shortcuts]: pow(x, e) for e in {1, 2, 3, 0.5, -0.5, -1,
    -2} is x, x*x, x*x*x, sqrt, 1/sqrt, 1/x, 1/(x*x) -- in eager (a 0-dim
    CPU exponent) and in compiled code (a constant one), so the two agree
    bit for bit, with torch's eager too, and the fused loop has no pow call
    (nanoGPT's new_gelu: 0.5 * x * (1 + tanh(c * (x + 0.044715 * pow(x, 3.0)))))."""
    import math
    dt = getattr(ignis, dtype)
    ignis.manual_seed(0)
    x = (ignis.rand(37, 129) * 4 + 0.25).to(dt)
    x[0, :3] = ignis.tensor([0.0, float("inf"), float("nan")]).to(dt)
    for e in (1.0, 2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 2, 3, -1, -2):
        c = _program(lambda x: ignis.pow(x, e) * 1.5, x)
        assert "Pow{}" not in c.generated_code, (e, c.generated_code)
        want = ignis.pow(x, e) * 1.5
        if dtype == "bfloat16":  # (fused: pow's value is not rounded to bfloat16 before * 1.5)
            close(c(x)[0].float(), want.float(), rtol=1e-2)
        else:
            np.testing.assert_array_equal(c(x)[0].numpy(), want.numpy(), err_msg=str(e))
        try:
            import torch
        except ImportError:
            continue
        # (torch's float32 sqrt is not correctly rounded (Sleef's), numpy's
        # is; torch rounds a bfloat16 x * x * x to bfloat16 twice, ignis once)
        tx = torch.from_numpy(x.float().numpy()).to(getattr(torch, dtype))
        got, ref = ignis.pow(x, e).float().numpy(), torch.pow(tx, e).float().numpy()
        if dtype == "bfloat16":
            np.testing.assert_allclose(got, ref, rtol=1e-2, err_msg=str(e))
        elif e == 0.5:
            np.testing.assert_array_equal(got, np.sqrt(x.numpy()).astype(np.float32))
            np.testing.assert_allclose(got, ref, rtol=2e-7)
        else:
            np.testing.assert_array_equal(got, ref, err_msg=str(e))
    # other exponents stay pow (libm), still eager's values
    c = _program(lambda x: ignis.pow(x, 2.5), x)
    assert "Pow{}" in c.generated_code
    close(c(x)[0].float(), ignis.pow(x, 2.5).float(), rtol=1e-6 if dtype != "bfloat16" else 1e-2)

    def new_gelu(x):
        return 0.5 * x * (1.0 + ignis.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * ignis.pow(x, 3.0))))
    c = _program(new_gelu, x)
    assert c.kernel_count == 1 and "Pow{}" not in c.generated_code
    close(c(x)[0].float(), new_gelu(x).float(), rtol=1e-6 if dtype != "bfloat16" else 1e-2,
          atol=1e-6 if dtype != "bfloat16" else 1e-2)


def test_contiguous_after_a_transpose_allocates_no_dead_empty():
    x = ignis.randn(2, 3, 4, 5)
    c = _program(lambda x: x.transpose(1, 2).contiguous() * 2, x)
    assert "extern empty" not in c.program, c.program
    close(c(x)[0], x.transpose(1, 2).contiguous() * 2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemm_templates_train_like_eager(dtype):
    dt = getattr(ignis, dtype)

    def make():
        ignis.manual_seed(0)
        return nn.Sequential(nn.Linear(24, 40), nn.GELU(), nn.Linear(40, 8)).to(dt)
    x = ignis.randn(16, 24, dtype=dt)
    eager, comp = make(), make()

    def loss_fn(m, x):
        return (m(x).tanh() ** 2).mean()
    le = loss_fn(eager, x)
    le.backward()
    ignis.compiler.reset()
    metrics.reset()
    lc = ignis.compile(loss_fn)(comp, x)
    lc.backward()
    tol = 1e-5 if dtype == "float32" else 1e-12
    close(lc, le, rtol=tol, atol=tol)
    for p, q in zip(eager.parameters(), comp.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=tol * 10, atol=tol)


def test_mm_variants_match_eager():
    cases = [
        (lambda a, b: a @ b, [(7, 5), (5, 3)]),
        (lambda a, b: (a.t() @ b).relu(), [(5, 7), (5, 3)]),            # transposed operand
        (lambda a, b: ignis.addmm(b[0], a, b, beta=0.5, alpha=2.0), [(3, 3), (3, 3)]),
        (lambda a, b: ignis.addmm(b, a, b, beta=0), [(3, 3), (3, 3)]),  # beta 0 ignores NaN
        (lambda a, b: a[:, ::2] @ b[1:, :], [(4, 6), (4, 5)]),         # strided views
        (lambda a, b: (a @ b).sum(1), [(1, 9), (9, 1)]),                # 1x1 output
    ]
    for fn, shapes in cases:
        a, b = (ignis.randn(*s) for s in shapes)
        if shapes == [(3, 3), (3, 3)]:
            b = b.clone()
        out, kernels = compile_and_count(fn, a, b)
        close(out, fn(a, b), rtol=1e-5, atol=1e-5)
    a, b = ignis.randn(3, 3), ignis.randn(3, 3)
    b[0, 0] = float("nan")
    out, _ = compile_and_count(lambda a, b: ignis.addmm(b, a, ignis.eye(3), beta=0), a, b)
    assert not bool(ignis.isnan(out).any())


def test_bool_tensor_against_a_python_int_compares_as_eager():
    # Eager promotes to int64 (True < 3); converting 3 to bool would be wrong.
    t = ignis.tensor([True, False])
    for op in (ignis.eq, ignis.ne, ignis.lt, ignis.le, ignis.gt, ignis.ge):
        out, _ = compile_and_count(lambda t: op(t, 3), t)
        assert out.tolist() == op(t, 3).tolist(), op


def test_views_of_zero_size_tensors_lower():
    a, b = ignis.randn(3, 0), ignis.randn(0, 3)
    out, _ = compile_and_count(lambda a, b: a.view(0, 3) + b, a, b)
    assert out.shape == (0, 3)


def test_profile_bandwidth_times_every_step():
    from ignis._inductor import step_profile
    step_profile.reset()
    x = ignis.randn(64, 32)
    w = ignis.randn(32, 16)
    with _inductor.config.patch(profile_bandwidth=True):
        compiled = _program(lambda x, w: (x @ w).relu().sum(-1) + x.sum(-1)[:1], x, w)
    for _ in range(3):
        compiled(x, w)
    rows = step_profile.rows()
    assert rows and all(calls == 3 for _, _, _, calls, _, _ in rows)
    kernels = [r for r in rows if "kernel_" in r[1]]
    assert kernels and all(nbytes > 0 and seconds > 0 and cpu >= 0
                           for _, _, nbytes, _, seconds, cpu in kernels)
    assert sum(r[5] for r in rows) > 0  # the steps used CPU time
    text = step_profile.report()
    assert "kernel_0" in text and "GB/s" in text and "cpu us" in text
    step_profile.reset()
    assert "no compiled graph" in step_profile.report()


def test_a_number_copied_into_an_empty_is_a_constant_in_the_kernel():
    # cross_entropy's backward fills with zeros through empty + copy(0): no
    # extern runs for either, and the value fuses into the where after it.
    x = ignis.randn(8, 5, requires_grad=True)
    t = ignis.tensor([0, 1, 2, 3, 4, -100, 1, 2])
    from ignis._functorch.aot_autograd import trace_joint

    def f(x, t, g):
        return ignis.where(t != -100, g, ignis.zeros_like(g)) * 2

    g = ignis.randn(8)
    c = _program(f, x, t, g)
    assert "extern copy" not in c.program and "extern empty" not in c.program, c.program
    close(c(x, t, g)[0], f(x, t, g))
    loss = ignis.compile(lambda x, t: F.cross_entropy(x, t))(x, t)
    loss.backward()
    x2 = x.detach().clone().requires_grad_(True)
    F.cross_entropy(x2, t).backward()
    close(x.grad, x2.grad)


GRAPH_CACHE_SCRIPT = """
import sys
import ignis, ignis.nn as nn
from ignis._inductor import metrics
ignis.manual_seed(0)
m = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8))
x = ignis.randn(16, 32, requires_grad=True)
y = ignis.compile(m)(x)
y.sum().backward()
print(metrics.fxgraph_cache_hit, metrics.fxgraph_cache_miss, metrics.generated_kernel_count)
print(repr(y.detach().numpy().tobytes().hex()), repr(x.grad.numpy().tobytes().hex()))
"""


def _run_graph_cache_script(cache_dir):
    import os
    import subprocess
    import sys
    env = dict(os.environ, IGNIS_CACHE_DIR=str(cache_dir))
    env["PYTHONPATH"] = str(__import__("pathlib").Path(ignis.__file__).parents[1])
    r = subprocess.run([sys.executable, "-c", GRAPH_CACHE_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    counts, values = r.stdout.strip().splitlines()
    return [int(c) for c in counts.split()], values


def test_a_new_process_loads_compiled_graphs_from_the_graph_cache(tmp_path):
    (hit, miss, kernels), values = _run_graph_cache_script(tmp_path)
    assert (hit, miss) == (0, 2) and kernels > 0  # forward and backward compiled
    (hit2, miss2, kernels2), values2 = _run_graph_cache_script(tmp_path)
    assert (hit2, miss2) == (2, 0) and kernels2 == kernels
    assert values2 == values  # the same program: bit-identical outputs and gradients


def test_a_corrupt_graph_cache_entry_is_compiled_again(tmp_path):
    _, values = _run_graph_cache_script(tmp_path)
    entries = [p for p in (tmp_path / "graphs").rglob("*.graph")]
    assert len(entries) == 2
    entries[0].write_bytes(entries[0].read_bytes()[:-7] + b"garbage")  # the checksum fails
    data = bytearray(entries[1].read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped byte inside the program
    entries[1].write_bytes(bytes(data))
    (hit, miss, _), values2 = _run_graph_cache_script(tmp_path)
    assert (hit, miss) == (0, 2) and values2 == values
    (hit, miss, _), _ = _run_graph_cache_script(tmp_path)  # rewritten, valid again
    assert (hit, miss) == (2, 0)


def _graph_cache_process(cache_dir):
    import os
    import subprocess
    import sys
    env = dict(os.environ, IGNIS_CACHE_DIR=str(cache_dir))
    env["PYTHONPATH"] = str(__import__("pathlib").Path(ignis.__file__).parents[1])
    return subprocess.Popen([sys.executable, "-c", GRAPH_CACHE_SCRIPT], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_processes_compiling_the_same_graph_at_once_both_get_it_right(tmp_path):
    # Both miss, compile and write the same entries (kernels and graphs) at
    # the same moment: writes go to private temporary names and are renamed
    # into place, so neither reads the other's half-written file.
    _, expected = _run_graph_cache_script(tmp_path / "reference")
    procs = [_graph_cache_process(tmp_path / "shared") for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert out.strip().splitlines()[1] == expected
    (hit, miss, _), values = _run_graph_cache_script(tmp_path / "shared")
    assert (hit, miss) == (2, 0) and values == expected
    # A precompiled header is built in the background and may outlive the
    # process that started it (its shell renames the finished .gch into
    # place); give such a build time to end before looking for leftovers.
    import time
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and [
            f for f in (tmp_path / "shared").rglob("*.gch.tmp-*")]:
        time.sleep(0.5)
    assert not [f for f in (tmp_path / "shared").rglob("*") if ".tmp-" in f.name]


WAIT_PCH_SCRIPT = """
import pathlib, sys
import ignis, ignis._inductor
f = ignis.compile(lambda x: (x * 2).relu(), backend="inductor")
f(ignis.randn(8, 8))
ignis._inductor.wait_for_background_compiles()
root = pathlib.Path(sys.argv[1])
print(len(list(root.rglob("*.gch"))), len(list(root.rglob("*.gch.tmp-*"))))
"""


def test_waiting_for_background_compiles_sees_the_precompiled_header_published(tmp_path):
    # A cold cache's first compile starts building the precompiled header in
    # the background (docs/code_cache.md); wait_for_background_compiles()
    # returns once it is published (GCC; none under IGNIS_PCH=0).
    import os
    import subprocess
    import sys
    env = dict(os.environ, IGNIS_CACHE_DIR=str(tmp_path), IGNIS_FX_GRAPH_CACHE="0")
    env["PYTHONPATH"] = str(__import__("pathlib").Path(ignis.__file__).parents[1])
    env.pop("IGNIS_PCH", None)
    r = subprocess.run([sys.executable, "-c", WAIT_PCH_SCRIPT, str(tmp_path)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    published, partial = map(int, r.stdout.split())
    if published == 0 and partial == 0:
        pytest.skip("no precompiled header with this compiler")
    assert (published, partial) == (1, 0), r.stdout


def test_a_process_killed_while_compiling_leaves_nothing_trusted(tmp_path):
    # Killed at several moments of its compile (SIGKILL: no cleanup runs),
    # a process leaves at most temporary files; the next process compiles
    # what is missing and gets the right values.
    import signal
    import time
    _, expected = _run_graph_cache_script(tmp_path / "reference")
    shared = tmp_path / "shared"
    for delay in (0.3, 0.8, 1.5):
        p = _graph_cache_process(shared)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
    # What a writer killed in the middle of each write leaves: the first
    # half of every entry (graphs and kernel libraries) under its temporary
    # name, beside where the entry goes.
    reference = tmp_path / "reference"
    for f in reference.rglob("*"):
        if f.is_file() and f.suffix in (".graph", ".so"):
            stray = shared / f.relative_to(reference)
            stray = stray.with_name(stray.name + ".tmp-1-1-00000000")
            stray.parent.mkdir(parents=True, exist_ok=True)
            data = f.read_bytes()
            stray.write_bytes(data[:len(data) // 2])
    _, values = _run_graph_cache_script(shared)
    assert values == expected
    (hit, miss, _), values = _run_graph_cache_script(shared)
    assert (hit, miss) == (2, 0) and values == expected


CAT_CASES = {
    # name: (inputs as (shape, dtype, layout), dim)
    "rows": ([((2, 3), "float32", "c"), ((4, 3), "float32", "c")], 0),
    "last_dim": ([((2, 3, 4), "float32", "c"), ((2, 3, 1), "float32", "t"),
                  ((2, 3, 5), "float32", "c")], -1),
    "middle_transposed": ([((3, 2, 4), "float64", "t"), ((3, 5, 4), "float64", "c")], 1),
    "promotes": ([((2, 3), "float32", "c"), ((2, 3), "int64", "c"), ((2, 3), "bool", "c")], 0),
    "bfloat16": ([((4, 8), "bfloat16", "c"), ((4, 8), "bfloat16", "t")], 1),
    "legacy_empty": ([((0,), "float32", "c"), ((2, 3), "float32", "c")], 0),
    "zero_size": ([((0, 3), "float32", "c"), ((2, 3), "float32", "c")], 0),
    "same_input_twice": ([((2, 5), "float32", "c")] * 2, 0),
}


def _cat_inputs(spec, seed):
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype, layout in spec:
        if layout == "t" and len(shape) >= 2:  # a transposed view of the same shape
            full = shape[:-2] + (shape[-1], shape[-2])
            x = ignis.from_numpy(rng.standard_normal(full).astype(np.float64)).transpose(-2, -1)
        else:
            x = ignis.from_numpy(rng.standard_normal(shape).astype(np.float64))
        out.append(x.to(getattr(ignis, dtype)))
    return out


@pytest.mark.parametrize("case", sorted(CAT_CASES))
def test_cat_writes_each_input_into_its_slice(case):
    spec, dim = CAT_CASES[case]
    xs = _cat_inputs(spec, 0)
    if case == "same_input_twice":
        xs = [xs[0], xs[0]]

    floats = [x.dtype.is_floating_point for x in xs]

    def body(xs):
        return ignis.cat([x * 1 if fl else x for x, fl in zip(xs, floats)], dim) + 0

    f = {2: lambda a, b: body([a, b]), 3: lambda a, b, c: body([a, b, c])}[len(xs)]
    c = _program(f, *xs)
    assert "extern cat" not in c.program, c.program
    got, want = c(*xs)[0], f(*xs)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_cat_feeding_more_work_and_its_gradients_match_eager():
    # the gradient of a cat is slices of the upstream gradient; q, k, v
    # projections of attention cat in the backward of a fused qkv linear.
    ignis.manual_seed(0)
    xs = [ignis.randn(4, 3, 8, dtype=ignis.float64, requires_grad=True) for _ in range(3)]

    def f(a, b, c):
        y = ignis.cat([a.transpose(1, 2), b.transpose(1, 2).relu(), c.transpose(1, 2) * 2], 2)
        return (y.tanh() * y).sum(-1)

    cf = ignis.compile(f)
    out = cf(*xs)
    g = ignis.randn(out.shape, dtype=ignis.float64)
    out.backward(g)
    got = [x.grad.clone() for x in xs]
    for x in xs:
        x.grad = None
    want = f(*xs)
    want.backward(g)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    for a, b in zip(got, xs):
        np.testing.assert_allclose(a.numpy(), b.grad.numpy(), rtol=1e-12)


def test_a_long_compile_prints_a_progress_line(tmp_path):
    import os
    import subprocess
    import sys
    script = ("import ignis\n"
              "from ignis._inductor import config\n"
              "config.compile_progress_after = float(__import__('sys').argv[1])\n"
              "f = ignis.compile(lambda x: (x.relu() * 3).exp())\n"
              "x = ignis.randn(8)\n"
              "assert (f(x) - (x.relu() * 3).exp()).abs().max().item() < 1e-6\n")
    env = dict(os.environ, PYTHONPATH=str(__import__("pathlib").Path(ignis.__file__).parents[1]))

    def run(after, cache):
        r = subprocess.run([sys.executable, "-c", script, str(after)], capture_output=True,
                           text=True, env=dict(env, IGNIS_CACHE_DIR=str(tmp_path / cache)))
        assert r.returncode == 0, r.stderr
        return r.stderr
    err = run(0.0, "a")  # every compile counts as long
    assert "[inductor] compiling 1 kernels (" in err and "lines of C++) ..." in err
    assert "lines of C++): done in " in err
    assert "[inductor]" not in run(600.0, "b")  # a quick compile says nothing


def test_full_is_a_constant_read_where_it_is_used():
    """full (zeros, ones and the *_like factories decompose to it) lowers as
    a constant per element, fused into its readers, not an extern filling
    a buffer; a value eager's fill would round or refuse stays an extern."""
    def f(x):
        return x * ignis.full((4, 6), 3.0) + ignis.zeros_like(x) - ignis.ones(6)

    programs = []

    def keep(gm, example_inputs):
        programs.append(_inductor.compile_fx(gm, example_inputs))
        return programs[-1]
    backend = ignis.compiler.aot_autograd(fw_compiler=keep)
    x = ignis.randn(4, 6)
    with ignis.no_grad():
        got = ignis.compile(f, backend=backend)(x)
        np.testing.assert_allclose(got.numpy(), f(x).numpy(), rtol=1e-6)
        c = programs[-1]
        assert "extern" not in c.program and c.kernel_count == 1, c.program
        ignis.compile(lambda x: x + ignis.full((4, 6), 1e-30), backend=backend)(x)
        assert "extern full" in programs[-1].program, programs[-1].program
        # a mask's -inf
        got = ignis.compile(lambda x: ignis.maximum(x, ignis.full((4, 6), float("-inf"))) +
                            ignis.full((6,), float("inf")).isinf(), backend=backend)(x)
        assert "extern" not in programs[-1].program, programs[-1].program
        np.testing.assert_array_equal(got.numpy(), (x + 1).numpy())


def test_tangents_that_do_not_arrive_are_zeros_inside_the_backward(monkeypatch):
    """A model returning its logits beside its loss, trained on the loss:
    the logits' tangent never arrives. The backward compiles when it first
    runs, with that tangent a `full(shape, 0)` fused into its readers
    instead of a zero buffer the size of the logits (Note [Tangents that do
    not arrive], aot_autograd.py); a later call whose backward gets both
    tangents compiles the full graph once. Gradients are eager's each time."""
    from ignis._functorch import aot_autograd as aot
    ignis.manual_seed(0)
    lin = nn.Linear(8, 40)
    made = []
    real = aot._without_tangents

    def spy(bw, num_saved, missing):
        made.append(missing)
        out = real(bw, num_saved, missing)
        made.append(out)
        return out
    monkeypatch.setattr(aot, "_without_tangents", spy)

    def f(x, t):
        logits = lin(x)
        return logits, F.cross_entropy(logits, t)

    x, t = ignis.randn(6, 8), ignis.randint(0, 40, (6,))
    compiled = ignis.compile(f)
    for use_logits in (False, False, True):
        grads = []
        for fn in (f, compiled):
            lin.zero_grad()
            logits, loss = fn(x, t)
            (loss + logits.square().mean() if use_logits else loss).backward()
            grads.append([lin.weight.grad.clone(), lin.bias.grad.clone()])
        for a, b in zip(*grads):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
    # one variant without the logits' tangent, made once; the full graph needs none
    assert made[0] == (0,) and len(made) == 2, made
    graph = made[1].graph
    places = [n.name for n in graph.nodes if n.op == "placeholder"]
    assert "tangents_1" not in places and "tangents_2" in places, places
    with ignis.no_grad():
        program = _inductor.compile_fx(made[1], None).program
    assert "extern full" not in program and "tangents_1" not in program, program


@pytest.mark.parametrize("case", ["infinite", "changed_in_place"])
def test_what_only_absent_tangents_reach_is_zero_not_nan(case):
    """The backward is linear in its tangents: a value computed from absent
    tangents alone is zero, whatever it multiplies, as eager's engine, which
    never runs those nodes, leaves it. Fed a zero tangent instead, log's
    backward gave 0 / 0 at x = 0, and amax's 0 / 0 where its input was
    changed in place after the forward (fuzz seed 3200129). Both gradients
    are eager's zeros and twos, not NaN."""
    if case == "infinite":
        def f(x):
            return x * 2, x.log().sum()  # the backward reaches only the first

        def use(out):
            return out[0].sum()
        x = ignis.from_numpy(np.array([0.0, 1.0, 2.0, 0.0], dtype=np.float32))
    else:
        def f(x):
            t = x[1:].sum(0, keepdim=True)
            s = t.amax().item()  # amax's result gets no gradient
            t.sub_(t)            # ... and its saved input changes
            return t * 2 + s

        def use(out):
            return out.sum()
        x = ignis.randn(4, 5)
    grads = []
    for fn in (f, ignis.compile(f)):
        xi = x.clone().requires_grad_()
        use(fn(xi)).backward()
        grads.append(xi.grad.numpy())
    assert not np.isnan(grads[1]).any(), grads[1]
    np.testing.assert_array_equal(grads[1], grads[0])


def test_a_loss_beside_its_logits_holds_no_more_memory_than_eager():
    """Cross-entropy's backward needs the softmax of the logits. The
    forward returns the logits, so the program holds them: saving them
    costs nothing (partition.cpp, held outputs), and the backward computes
    the softmax from them again, where the forward used to save a softmax
    the size of the logits. With the logits' tangent absent from the
    backward (Note [Tangents that do not arrive]), the compiled step holds
    what eager's holds after the forward and peaks no higher in the
    backward."""
    ignis.manual_seed(0)
    lin = nn.Linear(32, 4096)
    x, t = ignis.randn(64, 32), ignis.randint(0, 4096, (64,))

    def f(x, t):
        logits = lin(x)
        return logits, F.cross_entropy(logits, t)

    compiled = ignis.compile(f)
    compiled(x, t)[1].backward()  # compiles both graphs

    def measure(fn):
        lin.zero_grad(set_to_none=True)
        base = ignis.cpu.memory_allocated()
        ignis.cpu.reset_peak_memory_stats()
        logits, loss = fn(x, t)
        held = ignis.cpu.memory_allocated() - base
        loss.backward()
        peak = ignis.cpu.max_memory_allocated() - base
        return held, peak, lin.weight.grad.clone()

    eager_held, eager_peak, want = measure(f)
    held, peak, got = measure(compiled)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    slack = 64 * 4096 * 4 // 8  # an eighth of the logits
    assert held <= eager_held + slack and peak <= eager_peak + slack, \
        (held, eager_held, peak, eager_peak)


def test_a_backward_compiled_at_its_first_run_keeps_the_compile_calls_options():
    """The backward compiles when it first runs (Note [Tangents that do not
    arrive]), after ignis.compile's options= and mode have been undone: it
    compiles under the knobs of the compile call all the same."""
    from ignis._inductor import metrics

    def kernels_in_backward(options):
        def f(x):
            return ((x.sin() * 2 + 1).tanh() * x).sum()
        x = ignis.randn(64, requires_grad=True)
        out = ignis.compile(f, options=options)(x)
        before = metrics.generated_kernel_count
        out.backward()
        np.testing.assert_allclose(x.grad.numpy(), (
            (2 * x.cos() * (1 - (x.sin() * 2 + 1).tanh() ** 2)) * x
            + (x.sin() * 2 + 1).tanh()).detach().numpy(), rtol=1e-5, atol=1e-6)
        return metrics.generated_kernel_count - before

    unfused = {"max_fusion_size": 1, "realize_opcount_threshold": 0}
    assert kernels_in_backward(unfused) > kernels_in_backward(None)


def test_an_explicit_cast_to_bfloat16_rounds_inside_a_fused_chain():
    # Note [Copies to a 16-bit float] (lower.cpp): the copy rounds where it
    # is, not only where the chain is stored
    def f(x):
        return ((x * 3).to(ignis.bfloat16).float() + 1).to(ignis.int32)
    x = ignis.from_numpy(np.array([-4.99 / 3, 1.0039 / 3], dtype=np.float32))
    np.testing.assert_array_equal(ignis.compile(f)(x).numpy(), f(x).numpy())


@pytest.mark.parametrize("src,mid", [("float32", "bfloat16"), ("float32", "float16"),
                                     ("float64", "bfloat16"), ("int32", "bfloat16"),
                                     ("int16", "float16"), ("bfloat16", "float16"),
                                     ("float16", "bfloat16")])
def test_a_copy_to_a_16_bit_float_rounds_what_reads_it_in_the_kernel(src, mid):
    rng = np.random.default_rng(7)
    if src.startswith("int"):
        a = rng.integers(-30000, 30000, 4096).astype(src)
    else:
        a = (rng.standard_normal(4096) * 300).astype(np.float32)
    x = ignis.from_numpy(a.astype(np.float64) if src == "float64" else a)
    if src in ("bfloat16", "float16", "int16"):
        x = x.to(getattr(ignis, src))
    m = getattr(ignis, mid)

    def f(x):
        y = x.to(m)                   # rounds
        return y.float() * 0.5 + 1, y  # read in the kernel, and stored
    got, want = ignis.compile(f)(x), f(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.float().numpy(), w.float().numpy())


def _split_reductions(x, f, size_generic=False):
    """f's joint graph for x compiled; its values checked against eager's, and
    the bits of a second call against the first's (the split's partials fold
    in thread order). Returns the compiled graph."""
    from ignis._functorch.aot_autograd import trace_joint
    from ignis._inductor import config
    gm, _ = trace_joint(ignis.fx.symbolic_trace(f), [x])
    with config.patch(size_generic=size_generic):
        compiled = _inductor.compile_fx(gm, None)
    got = compiled(x)
    for g, w in zip(got, f(x)):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-9)
    again = compiled(x)
    assert all(a.numpy().tobytes() == b.numpy().tobytes() for a, b in zip(got, again))
    return compiled


@pytest.mark.parametrize("n", [70001, 1 << 20])
@pytest.mark.parametrize("size_generic", [False, True])
def test_full_reductions_split_across_threads(n, size_generic):
    # Note [Full reductions across threads] (codegen_cpp.cpp): a reduction with
    # no outer loop over more than a grain runs its blocks on the whole team,
    # partials folded in thread order then the tail; the values are eager's
    # (to rounding), a NaN anywhere propagates through max/min, and a team of
    # one size always gives the same bits.
    def f(x):
        return x.sum(), x.amax(), x.amin(), (x * x).mean(), (x * 1e-6 + 1).prod()
    x = ignis.randn(n, dtype=ignis.float64)
    compiled = _split_reductions(x, f, size_generic)
    assert "split across threads" in compiled.generated_code
    assert "#pragma omp for schedule(static)" in compiled.generated_code
    y = x.clone()
    y[n // 3] = float("nan")
    s, mx, mn, _, _ = compiled(y)
    assert np.isnan(s.item()) and np.isnan(mx.item()) and np.isnan(mn.item())


@pytest.mark.parametrize("rows", [1, 3, 15])
def test_few_long_rows_split_each_row_across_threads(rows):
    # Note [Full reductions across threads], split_rows_: under 16 rows whose
    # inner loops all reduce, each row's reduction runs on the whole team
    # (not one thread a row); values are eager's, a NaN in one row stays in
    # that row's max, min and sum, and the bits repeat. 16 rows split by row.
    def f(x):
        return x.sum(1), x.amax(1), x.amin(1), (x * x).mean(1), (x * 1e-6 + 1).prod(1)
    x = ignis.randn(rows, 70001, dtype=ignis.float64)
    compiled = _split_reductions(x, f)
    assert "split across threads" in compiled.generated_code
    assert "#pragma omp parallel for" not in compiled.generated_code
    y = x.clone()
    y[rows // 2, 4321] = float("nan")
    for out in compiled(y)[:3]:
        assert np.isnan(out.numpy()).tolist() == [r == rows // 2 for r in range(rows)]
    wide = _split_reductions(ignis.randn(16, 70001, dtype=ignis.float64), f)
    assert "split across threads" not in wide.generated_code


@pytest.mark.parametrize("cols", [3, 16, 100])
def test_few_columns_split_their_rows_across_threads(cols):
    # The column kernel's split (splits_columns): under 16 chunks of 64
    # columns over two blocks of rows or more, the row blocks are shared by
    # the team, each thread's partials folded in thread order. Values are
    # eager's, a NaN stays in its column, the bits repeat; 1024 columns (16
    # chunks) split by chunk as before.
    def f(x):
        return x.sum(0), x.amax(0), x.amin(0), (x * x).mean(0)
    x = ignis.randn(40009, cols, dtype=ignis.float64)
    compiled = _split_reductions(x, f)
    assert "column reduction" in compiled.generated_code
    assert "split across threads" in compiled.generated_code
    y = x.clone()
    y[12345, cols // 2] = float("nan")
    for out in compiled(y)[:3]:
        assert np.isnan(out.numpy()).tolist() == [c == cols // 2 for c in range(cols)]
    wide = _split_reductions(ignis.randn(9000, 1024, dtype=ignis.float64), f)
    assert "split across threads" not in wide.generated_code


def test_a_standardization_over_few_columns_runs_every_pass_across_threads():
    # Column statistics then a pass that only stores ((x - mean) / std over
    # the rows, a BatchNorm1d's forward): the reductions split their row
    # blocks, the storing pass its rows; one kernel, eager's values.
    def f(x):
        m = x.mean(0, keepdim=True)
        return ((x - m) / ((x - m) ** 2).mean(0, keepdim=True).add(1e-5).sqrt(),)
    compiled = _split_reductions(ignis.randn(30011, 16, dtype=ignis.float64) * 3 + 1, f)
    code = compiled.generated_code
    assert code.count("split across threads") == 2 and "rows across threads" in code, code
    assert code.count('extern "C" void kernel_') == 1


def test_integer_sums_fuse_with_float_reductions_on_the_cpu():
    # A masked mean's count and an accuracy's (pred == y).sum() are int64 sums
    # of bools: lowered as reductions (not externs), so siblings over the
    # same elements share one kernel's pass. Values and dtypes are eager's.
    from ignis._functorch.aot_autograd import trace_joint

    def f(x, y, m):
        return ((x - y) * m).sum() / m.sum(), (x.round() == y.round()).sum(), (x > 0).int().sum(1)
    args = [ignis.randn(256, 300), ignis.randn(256, 300), ignis.rand(256, 300) < 0.4]
    gm, _ = trace_joint(ignis.fx.symbolic_trace(f), args)
    compiled = _inductor.compile_fx(gm, None)
    assert "extern sum" not in compiled.program, compiled.program
    for g, w in zip(compiled(*args), f(*args)):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5)


@pytest.mark.parametrize("n,narrow", [(1 << 20, True), (9_000_000, False)])
def test_byte_sums_count_in_32_bit_lanes_only_where_none_can_wrap(n, narrow):
    # Note [Counting in 32-bit lanes] (codegen_cpp.cpp): a sum of bytes into
    # int64 counts in int32 lanes while extent * 255 < 2^31; 9M bytes of 255
    # (a sum over 2^31) keep int64 lanes, and both give eager's sum.
    from ignis._functorch.aot_autograd import trace_joint

    def f(x, m):
        return x.sum(), m.sum(), m.float().sum()
    x = ignis.full((n,), 255, dtype=ignis.uint8)
    m = ignis.rand(n) < 0.5
    gm, _ = trace_joint(ignis.fx.symbolic_trace(f), [x, m])
    with _inductor.config.patch(size_generic=False):
        compiled = _inductor.compile_fx(gm, None)
    code = compiled.generated_code
    assert ("int32_t acc0_lanes" in code) == narrow, code
    assert "int32_t acc1_lanes" in code  # the bool count fits either way
    got, want = compiled(x, m), f(x, m)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    assert got[0].item() == 255 * n


def test_long_float_sums_are_as_accurate_as_eagers():
    # Note [Float sums in chunks]: a compiled float32 sum of 9M values in
    # [0, 255] was off by 7.6e-6 (each lane adding 280k values one by one);
    # in chunks it is within eager's order (6e-8), well under 1e-6.
    x = ignis.rand(9_000_000) * 255
    exact = x.double().sum().item()
    got = ignis.compile(lambda x: x.sum(), backend="inductor")(x).item()
    assert abs(got - exact) / exact < 1e-6, abs(got - exact) / exact
    ignis.compiler.reset()


@pytest.mark.parametrize("generic", [False, True], ids=["static", "size_generic"])
@pytest.mark.parametrize("shape,dim", [((3, 1 << 20), 1), ((3, (1 << 20) + 4101), 1),
                                       (((1 << 20) + 37, 3), 0), ((5, 300001, 2), 1)],
                         ids=["rows", "rows_with_rest", "columns", "middle"])
def test_long_row_and_column_sums_are_as_accurate_as_eagers(shape, dim, generic, monkeypatch):
    # Note [Float sums in chunks] for reductions with an outer loop: rows of
    # 1M floats summed one lane after another were off by 1.3e-6 to 3e-5
    # (eager and torch.compile: 1e-7); in chunks, compensated, and with the
    # last rows a chunk of their own, within eager's order.
    monkeypatch.setattr(_inductor.config, "size_generic", generic)
    x = ignis.rand(*shape) * 255
    exact = x.double().sum(dim)
    got = ignis.compile(lambda x: (x + 1).sum(dim), backend="inductor")(x)
    assert got.dtype == ignis.float32
    ref = exact + shape[dim]
    err = ((got.double() - ref).abs() / ref).max().item()
    assert err < 4e-7, err
    np.testing.assert_allclose(got.numpy(), (x + 1).sum(dim).numpy(), rtol=1e-6)
    ignis.compiler.reset()


@pytest.mark.parametrize("generic", [False, True], ids=["static", "size_generic"])
@pytest.mark.parametrize("shape,dim", [((4, 10000), 1), ((10000, 4), 0), ((3, 5, 4), (0, 2))],
                         ids=["rows", "columns", "small"])
def test_float_sums_keep_infinities_and_nans(shape, dim, generic, monkeypatch):
    # The chunks' compensation (Kahan) of an infinite total is (inf - x) - inf,
    # NaN: a row of 10000 floats holding one inf summed to NaN compiled, inf
    # in eager; size-generic code compensates small extents too (a [3, 5, 4]
    # sum over (0, 2)). The compensation is dropped where it is not finite.
    monkeypatch.setattr(_inductor.config, "size_generic", generic)
    x = ignis.randn(*shape)
    flat = x.view(-1)
    for i, v in zip((1, 17, 30, 43), (float("inf"), float("-inf"), float("nan"), float("inf"))):
        flat[i * 7 % flat.numel()] = v
    got = ignis.compile(lambda x: x.sum(dim), backend="inductor")(x)
    want = x.sum(dim)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-4, equal_nan=True)
    assert not np.isfinite(want.numpy()).all()  # the specials reached the sums
    ignis.compiler.reset()


def test_reductions_that_load_bytes_take_four_times_the_lanes():
    # Note [Lanes for byte loads] (codegen_cpp.cpp): a reduction loading a bool
    # mask beside floats takes 4x the lanes, so GCC vectorises the bytes at
    # full width; the values stay eager's.
    import re
    from ignis._functorch.aot_autograd import trace_joint

    def lanes_of(f, args):
        gm, _ = trace_joint(ignis.fx.symbolic_trace(f), args)
        compiled = _inductor.compile_fx(gm, None)
        n = {int(m) for m in re.findall(r"(?:float|double|int32_t|int64_t) acc\d+_lanes\[(\d+)\];",
                                           compiled.generated_code)}
        assert len(n) == 1, n
        return n.pop(), compiled
    p, m = ignis.randn(300, 700), ignis.rand(300, 700) < 0.5
    plain, _ = lanes_of(lambda p: p.abs().sum(1), [p])
    wide, compiled = lanes_of(lambda p, m: (p * m).sum(1) + m.float().sum(1), [p, m])
    assert wide == 4 * plain
    np.testing.assert_allclose(compiled(p, m)[0].numpy(), ((p * m).sum(1) + m.float().sum(1)).numpy(),
                               rtol=1e-5)

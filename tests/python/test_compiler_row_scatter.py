"""Scatters of one element a row as selects (graph/passes/row_scatter.h):
scatter_add / scatter.src with an index of size 1 along the scattered dim
become `self + where(arange == idx, src, -0.0)` / `where(hit, src, self)`,
fused with the kernels around them. Compiled results equal eager bit for
bit; a bad index still raises; the programs show the scatter gone."""
import numpy as np
import pytest
import torch

import _checkout  # noqa: F401
import ignis
import ignis.nn.functional as F


def _rows(n, v, dim, seed=0):
    rng = np.random.default_rng(seed)
    shape = (n, v) if dim in (1, -1) else (v, n)
    self_ = rng.standard_normal(shape).astype(np.float32)
    self_[0, 0] = -0.0  # must stay -0.0 where nothing is added
    self_[1, 1] = np.inf
    ishape = (n, 1) if dim in (1, -1) else (1, n)
    idx = rng.integers(0, v, size=ishape)
    src = rng.standard_normal(ishape).astype(np.float32)
    src.flat[2] = np.nan
    return (ignis.from_numpy(self_), ignis.from_numpy(idx), ignis.from_numpy(src))


@pytest.mark.parametrize("dim", [1, -1, 0])
@pytest.mark.parametrize("op", ["scatter_add", "scatter"])
def test_one_index_a_row_is_a_select_fused_with_its_neighbours(programs, op, dim):
    s, idx, src = _rows(6, 37, dim)

    def f(s, idx, src):
        return getattr(ignis, op)(s * 2, dim, idx, src).exp()
    want = f(s, idx, src)
    got = ignis.compile(f)(s, idx, src)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    # bits, zero signs included (exp(-0.0) is 1 either way: check before exp too)
    g = ignis.compile(lambda s, idx, src: getattr(ignis, op)(s * 2, dim, idx, src))
    a, b = g(s, idx, src).numpy(), getattr(ignis, op)(s * 2, dim, idx, src).numpy()
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
    text = "\n".join(programs)
    assert f"extern {op}" not in text and "extern gather" in text
    # the hit test's positions come from the fused kernel's coordinates, not
    # a load of the arange the bounds check stores (int64 loads narrowed the
    # GPU kernel's vectors)
    fused = [k for k in text.split("\nkernel_") if " = eq(" in k]
    assert fused and all(": int64 = index " in k for k in fused), text
    t = getattr(torch, op)(torch.from_numpy(s.numpy()) * 2, dim, torch.from_numpy(idx.numpy()),
                           torch.from_numpy(src.numpy())).exp()
    np.testing.assert_allclose(got.numpy(), t.numpy(), rtol=1e-6, atol=0)


def test_an_index_out_of_range_still_raises(programs):
    s, idx, src = _rows(4, 9, 1)
    idx[2, 0] = 9
    f = ignis.compile(lambda s, idx, src: ignis.scatter_add(s + 1, 1, idx, src))
    with pytest.raises(RuntimeError, match="out of bounds|out of range"):
        f(s, idx, src)
    with pytest.raises(RuntimeError, match="out of bounds|out of range"):
        ignis.scatter_add(s + 1, 1, idx, src)


@pytest.mark.parametrize("case", ["two_per_row", "src_wider", "index_narrower", "dtypes"])
def test_other_scatters_keep_their_extern_and_eagers_values(programs, case):
    rng = np.random.default_rng(1)
    s = ignis.from_numpy(rng.standard_normal((5, 8)).astype(np.float32))
    if case == "two_per_row":
        idx = ignis.from_numpy(rng.integers(0, 8, size=(5, 2)))
        src = ignis.from_numpy(rng.standard_normal((5, 2)).astype(np.float32))
    elif case == "src_wider":
        idx = ignis.from_numpy(rng.integers(0, 8, size=(5, 1)))
        src = ignis.from_numpy(rng.standard_normal((5, 3)).astype(np.float32))
    elif case == "index_narrower":  # fewer rows than self: not one index for every row
        idx = ignis.from_numpy(rng.integers(0, 8, size=(3, 1)))
        src = ignis.from_numpy(rng.standard_normal((3, 1)).astype(np.float32))
    else:
        s = s.double()
        idx = ignis.from_numpy(rng.integers(0, 8, size=(5, 1)))
        src = ignis.from_numpy(rng.standard_normal((5, 1)))  # float64 into float64: rewritten
    f = lambda s, idx, src: ignis.scatter_add(s * 3, 1, idx, src)  # noqa: E731
    got = ignis.compile(f)(s, idx, src)
    np.testing.assert_array_equal(got.numpy(), f(s, idx, src).numpy())
    text = "\n".join(programs)
    assert ("extern scatter_add" in text) == (case != "dtypes")


def test_cross_entropys_backward_is_one_kernel_over_the_logits(programs):
    """The gradient of cross_entropy's gather is a one-a-row scatter_add: with
    the softmax term and the logits' own gradient it makes one kernel, and no
    [N, V] buffer is copied for a scatter."""
    rng = np.random.default_rng(2)
    n, v = 32, 500
    x = ignis.from_numpy(rng.standard_normal((n, v)).astype(np.float32)).requires_grad_()
    y = ignis.from_numpy(rng.integers(0, v, size=n))

    def f(x, y):
        logits = x * 1.5
        return logits, F.cross_entropy(logits, y)
    logits, loss = ignis.compile(f)(x, y)
    (loss + logits.sum() * 0.01).backward()
    got = x.grad.clone()
    x.grad = None
    logits, loss = f(x, y)
    (loss + logits.sum() * 0.01).backward()
    np.testing.assert_allclose(got.numpy(), x.grad.numpy(), rtol=1e-6, atol=1e-7)
    backward = programs[-1]
    assert "scatter" not in backward
    big = [line for line in backward.splitlines()
           if f"float32[{n}, {v}]" in line and ("computed" in line or "extern" in line)
           and "fused away" not in line]
    assert len(big) == 1, backward  # the gradient itself

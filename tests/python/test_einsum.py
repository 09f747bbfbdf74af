"""einsum (src/ignis/ops/einsum.cpp): values against NumPy, gradients and
errors against torch, the operand-list and sublist forms, and compiled."""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

RNG = np.random.default_rng(0)

# (equation, operand shapes)
CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 6, 4)]),
    ("bhqk,bhkd->bqhd", [(2, 3, 5, 6), (2, 3, 6, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j", [(3,), (4,)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("b...,b...->b", [(3, 2, 4), (3, 2, 4)]),  # ellipsis dims summed (torch; NumPy refuses)
    ("...i,...i->...", [(2, 1, 3), (4, 3)]),
    ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),
    ("i,i,i->", [(4,), (4,), (4,)]),
    ("a,b,c->abc", [(2,), (3,), (4,)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("Ab,bC->AC", [(3, 4), (4, 2)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("i j , j k -> i k", [(2, 3), (3, 2)]),
    ("ij,jk->ik", [(0, 4), (4, 5)]),
    ("ij,jk->ik", [(3, 0), (0, 5)]),
]


def _arrays(shapes, dtype=np.float64):
    return [RNG.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0].replace(" ", "") + str(i) for i, c in enumerate(CASES)])
def test_einsum_matches_numpy(eq, shapes):
    arrs = _arrays(shapes)
    got = ignis.einsum(eq, *[ignis.tensor(a) for a in arrs])
    # NumPy wants the summed ellipsis dims named
    want = np.einsum(eq.replace(" ", "").replace("b...,b...->b", "bxy,bxy->b"), *arrs)
    assert tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    # the operands as one list
    got2 = ignis.einsum(eq, [ignis.tensor(a) for a in arrs])
    np.testing.assert_allclose(got2.numpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("eq,shapes", CASES[:24], ids=[c[0] for c in CASES[:24]])
def test_einsum_gradients_match_torch(eq, shapes):
    torch = pytest.importorskip("torch")
    arrs = _arrays(shapes)
    xs = [ignis.tensor(a, requires_grad=True) for a in arrs]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    g = RNG.standard_normal(tuple(torch.einsum(eq, *ts).shape))
    (ignis.einsum(eq, *xs) * ignis.tensor(g)).sum().backward()
    (torch.einsum(eq, *ts) * torch.tensor(g)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_einsum_sublist_form_and_float32():
    a, b = _arrays([(2, 3), (3, 4)], np.float32)
    got = ignis.einsum(ignis.tensor(a), [0, 1], ignis.tensor(b), [1, 2], [0, 2])
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-5)
    assert got.dtype == ignis.float32
    got = ignis.einsum(ignis.tensor(a), [Ellipsis, 1], ignis.tensor(b), [1, 2])
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-5)


@pytest.mark.parametrize("call,match", [
    (lambda x: ignis.einsum("ij,jk->ik", x), "2 operands in the subscript string, but 1"),
    (lambda x: ignis.einsum("i1->i", x), "invalid subscript '1'"),
    (lambda x: ignis.einsum("ijk->i", x), "does not match the number of dimensions"),
    (lambda x: ignis.einsum("ij->ii", x), "appears more than once in the output"),
    (lambda x: ignis.einsum("ij->k", x), "output subscript k does not appear"),
    (lambda x: ignis.einsum("ij,jk->ik", x, ignis.ones(4, 2)), "do not broadcast"),
    (lambda x: ignis.einsum("ii->i", x), "repeated for operand 0 but the sizes don't match"),
])
def test_einsum_errors_name_the_problem(call, match):
    with pytest.raises((ValueError, RuntimeError), match=match):
        call(ignis.ones(2, 3))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_einsum_compiles_in_one_graph(backend):
    def attn(q, k, v):
        s = ignis.einsum("bhqd,bhkd->bhqk", q, k) * 0.5
        return ignis.einsum("bhqk,bhkd->bqhd", s.softmax(-1), v)
    q, k, v = (ignis.randn(2, 3, 5, 4, requires_grad=True) for _ in range(3))
    ignis.compiler.reset()
    cf = ignis.compile(attn, backend=backend)
    got = cf(q, k, v)
    got.sum().backward()
    grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    want = attn(q, k, v)
    want.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    for g, t in zip(grads, (q, k, v)):
        np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    ex = ignis.compiler.explain(attn)(q, k, v)
    assert ex.graph_count == 1 and ex.graph_break_count == 0
    ignis.compiler.reset()

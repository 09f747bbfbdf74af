"""ignis.linalg's factorizations and solvers (src/ignis/ops/linalg.cpp, Note
[Linear algebra ops]) against PyTorch and NumPy: values, batched and
broadcast shapes, gradients (torch's, through the same losses), torch's
errors (LinAlgError for a singular or indefinite matrix), the top-level and
Tensor-method spellings, and the compiled path (extern kernels)."""
import numpy as np
import pytest

import ignis

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(20261207)


def arr(*shape):
    return RNG.standard_normal(shape)


def spd(*batch, n=4):
    a = arr(*batch, n, n)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def both(x, grad=False, dtype="float64"):
    """The same array as an ignis and a torch tensor."""
    x = np.asarray(x, dtype=dtype)
    a = ignis.tensor(x, requires_grad=grad)
    b = torch.tensor(x, requires_grad=grad)
    return a, b


def close(a, b, tol=1e-9):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol,
                               atol=tol)


def grads_match(fn_ig, fn_t, *arrays, tol=1e-7):
    """fn of each library on the same float64 inputs: values and the inputs'
    gradients of their sum agree."""
    ins = [both(a, grad=True) for a in arrays]
    out_i = fn_ig(*[p[0] for p in ins])
    out_t = fn_t(*[p[1] for p in ins])
    close(out_i, out_t, tol)
    out_i.sum().backward()
    out_t.sum().backward()
    for (a, b) in ins:
        close(a.grad, b.grad, tol)


# ---- values ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_factorizations_match_torch(dtype, batch):
    tol = 1e-4 if dtype == "float32" else 1e-10
    A, At = both(arr(*batch, 4, 4), dtype=dtype)
    S, St = both(spd(*batch), dtype=dtype)
    B, Bt = both(arr(*batch, 4, 3), dtype=dtype)
    close(ignis.linalg.cholesky(S), torch.linalg.cholesky(St), tol)
    close(ignis.linalg.cholesky(S, upper=True), torch.linalg.cholesky(St, upper=True), tol)
    close(ignis.linalg.solve(A, B), torch.linalg.solve(At, Bt), tol * 10)
    close(ignis.linalg.inv(A), torch.linalg.inv(At), tol * 10)
    close(ignis.linalg.det(A), torch.linalg.det(At), tol * 10)
    for x, y in zip(ignis.linalg.slogdet(A), torch.linalg.slogdet(At)):
        close(x, y, tol * 10)
    w, v = ignis.linalg.eigh(S)
    tw, tv = torch.linalg.eigh(St)
    close(w, tw, tol * 10)
    close(v.abs(), tv.abs(), tol * 100)  # columns up to sign
    close(ignis.linalg.eigvalsh(S, UPLO="U"), torch.linalg.eigvalsh(St, UPLO="U"), tol * 10)
    for full in (False, True):
        M, Mt = both(arr(*batch, 5, 3), dtype=dtype)
        U, s, Vh = ignis.linalg.svd(M, full_matrices=full)
        tU, ts, tVh = torch.linalg.svd(Mt, full_matrices=full)
        assert U.shape == tU.shape and Vh.shape == tVh.shape
        close(s, ts, tol * 10)
        k = s.shape[-1]
        close((U[..., :k] * s.unsqueeze(-2)) @ Vh[..., :k, :], Mt, tol * 10)
    for shape in ((5, 3), (3, 5), (4, 4)):
        M, Mt = both(arr(*batch, *shape), dtype=dtype)
        for mode in ("reduced", "complete", "r"):
            Q, R = ignis.linalg.qr(M, mode)
            tQ, tR = torch.linalg.qr(Mt, mode)
            assert Q.shape == tQ.shape and R.shape == tR.shape, (mode, shape)
            close(R, tR, tol * 10)
            if mode != "r":
                close(Q, tQ, tol * 10)
    L, Lt = both(np.tril(arr(*batch, 4, 4)) + 4 * np.eye(4), dtype=dtype)
    close(ignis.linalg.solve_triangular(L, B, upper=False),
          torch.linalg.solve_triangular(Lt, Bt, upper=False), tol)
    close(ignis.linalg.solve_triangular(L.mT, B.mT, upper=True, left=False),
          torch.linalg.solve_triangular(Lt.mT, Bt.mT, upper=True, left=False), tol)
    close(ignis.linalg.solve_triangular(L, B, upper=False, unitriangular=True),
          torch.linalg.solve_triangular(Lt, Bt, upper=False, unitriangular=True), tol * 10)


def test_solve_broadcasts_and_takes_vectors_as_torch():
    A, At = both(arr(2, 1, 3, 3))
    B, Bt = both(arr(4, 3, 2))
    assert ignis.linalg.solve(A, B).shape == torch.linalg.solve(At, Bt).shape == (2, 4, 3, 2)
    close(ignis.linalg.solve(A, B), torch.linalg.solve(At, Bt))
    A, At = both(arr(5, 3, 3))
    for b in (arr(3), arr(5, 3)):  # one vector, and a batch of vectors
        B, Bt = both(b)
        x, tx = ignis.linalg.solve(A, B), torch.linalg.solve(At, Bt)
        assert x.shape == tx.shape
        close(x, tx)
    B, Bt = both(arr(5, 2, 3))
    close(ignis.linalg.solve(A, B, left=False), torch.linalg.solve(At, Bt, left=False))


def test_ex_variants_report_info_instead_of_raising():
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    A, At = both(np.stack([np.eye(2), sing]))
    inv, info = ignis.linalg.inv_ex(A)
    assert info.tolist() == torch.linalg.inv_ex(At).info.tolist() == [0, 2]
    L, info = ignis.linalg.cholesky_ex(A)
    assert info.tolist() == torch.linalg.cholesky_ex(At).info.tolist()
    res = ignis.linalg.lu_factor_ex(A)
    tres = torch.linalg.lu_factor_ex(At)
    close(res.LU, tres.LU)
    assert res.pivots.tolist() == tres.pivots.tolist() and res.pivots.dtype == ignis.int32
    assert res.info.tolist() == tres.info.tolist()
    assert type(res).__name__ == "linalg_lu_factor_ex"


def test_lu_and_lu_solve_match_torch():
    for shape in ((4, 4), (2, 5, 3), (3, 3, 5)):
        A, At = both(arr(*shape))
        for x, y in zip(ignis.linalg.lu(A), torch.linalg.lu(At)):
            close(x, y)
        LU, piv = ignis.linalg.lu_factor(A)
        tLU, tpiv = torch.linalg.lu_factor(At)
        for x, y in zip(ignis.lu_unpack(LU, piv), torch.lu_unpack(tLU, tpiv)):
            close(x, y)
    A, At = both(arr(2, 4, 4))
    LU, piv = ignis.linalg.lu_factor(A)
    tLU, tpiv = torch.linalg.lu_factor(At)
    for left in (True, False):
        for adjoint in (False, True):
            B, Bt = both(arr(2, 4, 3) if left else arr(2, 3, 4))
            close(ignis.linalg.lu_solve(LU, piv, B, left=left, adjoint=adjoint),
                  torch.linalg.lu_solve(tLU, tpiv, Bt, left=left, adjoint=adjoint))
    B, Bt = both(arr(2, 4, 3))
    close(ignis.lu_solve(B, LU, piv), torch.lu_solve(Bt, tLU, tpiv))


def test_determinants_of_singular_and_permuted_matrices():
    cases = [np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]),
             np.array([[2.0, 0, 0], [0, -3.0, 0], [0, 0, 0.5]]), np.zeros((3, 3))]
    for c in cases:
        A, At = both(c)
        close(ignis.linalg.det(A), torch.linalg.det(At))
        s, l = ignis.linalg.slogdet(A)
        ts, tl = torch.linalg.slogdet(At)
        close(s, ts)
        assert np.isneginf(l.item()) == np.isneginf(tl.item())
        if np.isfinite(tl.item()):
            close(l, tl)
        close(ignis.logdet(A), torch.logdet(At))


def test_derived_functions_match_torch():
    A, At = both(arr(2, 5, 3))
    close(ignis.linalg.pinv(A), torch.linalg.pinv(At))
    S, St = both(spd(2))
    close(ignis.linalg.pinv(S, hermitian=True), torch.linalg.pinv(St, hermitian=True))
    low = arr(4, 2) @ arr(2, 5)  # rank 2
    L, Lt = both(low)
    assert ignis.linalg.matrix_rank(L).item() == torch.linalg.matrix_rank(Lt).item() == 2
    assert ignis.linalg.matrix_rank(L, atol=1e3).item() == torch.linalg.matrix_rank(Lt, atol=1e3).item()
    M, Mt = both(arr(3, 4, 4))
    for p in (None, 2, -2, "fro", "nuc", 1, -1, float("inf")):
        close(ignis.linalg.cond(M, p), torch.linalg.cond(Mt, p), 1e-8)
    for ord in ("nuc", 2, -2):
        close(ignis.linalg.matrix_norm(M, ord), torch.linalg.matrix_norm(Mt, ord))
        close(ignis.linalg.norm(M, ord, dim=(0, 2), keepdim=True),
              torch.linalg.norm(Mt, ord, dim=(0, 2), keepdim=True))
    B, Bt = both(arr(5, 2))
    A, At = both(arr(5, 3))
    close(ignis.linalg.lstsq(A, B).solution, torch.linalg.lstsq(At, Bt).solution)
    T, Tt = both(arr(4, 6, 8, 3))
    close(ignis.linalg.tensorinv(T, ind=2), torch.linalg.tensorinv(Tt, ind=2))
    T, Tt = both(arr(2, 3, 6))
    R, Rt = both(arr(2, 3))
    close(ignis.linalg.tensorsolve(T, R), torch.linalg.tensorsolve(Tt, Rt))
    for scale in (0.1, 3.0, 40.0):
        E, Et = both(arr(2, 4, 4) * scale)
        close(ignis.linalg.matrix_exp(E), torch.linalg.matrix_exp(Et), 1e-9 * max(1, scale ** 4))
    P, Pt = both(arr(3, 3))
    close(ignis.linalg.matrix_power(P, -3), torch.linalg.matrix_power(Pt, -3), 1e-8)


def test_top_level_and_method_spellings():
    A, At = both(arr(3, 3))
    S, St = both(spd())
    B, Bt = both(arr(3, 2))
    close(A.det(), At.det())
    close(ignis.inverse(A), torch.inverse(At))
    close(A.inverse(), At.inverse())
    r, tr = ignis.slogdet(A), torch.slogdet(At)
    assert type(r).__name__ == "slogdet" and r._fields == ("sign", "logabsdet")
    close(r.logabsdet, tr.logabsdet)
    close(ignis.cholesky(S), torch.linalg.cholesky(St))
    L = ignis.linalg.cholesky(S)
    Lt = torch.linalg.cholesky(St)
    B3, B3t = both(arr(4, 2))
    close(ignis.cholesky_solve(B3, L), torch.cholesky_solve(B3t, Lt))
    close(ignis.cholesky_solve(B3, L.mT, upper=True), torch.cholesky_solve(B3t, Lt.mT, upper=True))
    close(ignis.cholesky_inverse(L), torch.cholesky_inverse(Lt))
    M, Mt = both(arr(5, 3))
    U, s, V = ignis.svd(M)
    tU, ts, tV = torch.svd(Mt)
    close(s, ts)
    close((U * s) @ V.mT, Mt)
    assert ignis.svd(M, some=False).U.shape == torch.svd(Mt, some=False).U.shape
    Q, R = M.qr()
    tQ, tR = Mt.qr()
    close(Q, tQ)
    close(R, tR)
    close(ignis.pinverse(M), torch.pinverse(Mt))
    U3 = np.triu(arr(3, 3)) + 3 * np.eye(3)
    Ui, Ut = both(U3)
    x, cloned = ignis.triangular_solve(B, Ui)
    tx, tcloned = torch.triangular_solve(Bt, Ut)
    close(x, tx)
    close(cloned, tcloned)
    close(ignis.triangular_solve(B, Ui, transpose=True).solution,
          torch.triangular_solve(Bt, Ut, transpose=True).solution)
    close(ignis.matrix_exp(A), torch.matrix_exp(At))


# ---- gradients ---------------------------------------------------------------------

def test_gradients_of_solvers_match_torch():
    W = arr(2, 4, 3)
    grads_match(lambda a, b: ignis.linalg.solve(a, b) * ignis.tensor(W),
                lambda a, b: torch.linalg.solve(a, b) * torch.tensor(W), arr(2, 4, 4), arr(2, 4, 3))
    grads_match(lambda a, b: ignis.linalg.solve(a, b, left=False),
                lambda a, b: torch.linalg.solve(a, b, left=False), arr(3, 3), arr(2, 3))
    grads_match(lambda a, b: ignis.linalg.solve(a, b) ** 2,
                lambda a, b: torch.linalg.solve(a, b) ** 2, arr(2, 3, 3), arr(2, 3))
    grads_match(lambda a: ignis.linalg.inv(a) * ignis.tensor(W[0, :3, :3]),
                lambda a: torch.linalg.inv(a) * torch.tensor(W[0, :3, :3]), arr(3, 3))
    for upper in (False, True):
        for left in (True, False):
            for unit in (False, True):
                T = (np.triu if upper else np.tril)(arr(3, 3)) + 3 * np.eye(3)
                Bm = arr(3, 2) if left else arr(2, 3)
                grads_match(
                    lambda a, b: ignis.linalg.solve_triangular(a, b, upper=upper, left=left,
                                                               unitriangular=unit) ** 2,
                    lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper, left=left,
                                                               unitriangular=unit) ** 2, T, Bm)


def test_gradients_of_determinants_match_torch():
    grads_match(ignis.linalg.det, torch.linalg.det, arr(3, 4, 4))
    grads_match(lambda a: ignis.linalg.slogdet(a)[1], lambda a: torch.linalg.slogdet(a)[1],
                arr(2, 3, 3))
    grads_match(ignis.logdet, torch.logdet, spd())
    # A singular matrix still has det's gradient, its cofactor matrix (torch
    # gives zeros where LAPACK's pivot is exactly zero: d det / d a_00 of
    # [[1, 2, 3], [2, 4, 6], [1, 0, 1]] is 4, not 0).
    m = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(m, i, 0), j, 1))
                     for j in range(3)] for i in range(3)])
    A = ignis.tensor(m, requires_grad=True)
    ignis.linalg.det(A).backward()
    np.testing.assert_allclose(A.grad.numpy(), cof, atol=1e-12)
    assert cof[0, 0] == pytest.approx(4.0)


def test_gradients_of_factorizations_match_torch():
    W = arr(2, 4, 4)
    Wi, Wt = ignis.tensor(W), torch.tensor(W)
    for upper in (False, True):
        grads_match(lambda a: ignis.linalg.cholesky(a @ a.mT + 4 * ignis.eye(4, dtype=a.dtype),
                                                    upper=upper) * Wi,
                    lambda a: torch.linalg.cholesky(a @ a.mT + 4 * torch.eye(4, dtype=a.dtype),
                                                    upper=upper) * Wt, arr(2, 4, 4))

    def eig_loss(lib, Wl):
        def f(a):
            w, v = lib.linalg.eigh(a + a.mT)
            return w * w[..., :1] + (v * v * Wl).sum(-1)  # sign-free in the vectors
        return f
    grads_match(eig_loss(ignis, Wi), eig_loss(torch, Wt), arr(2, 4, 4))
    grads_match(lambda a: ignis.linalg.eigvalsh(a + a.mT), lambda a: torch.linalg.eigvalsh(a + a.mT),
                arr(3, 3))

    for shape in ((5, 3), (3, 5), (4, 4)):
        W1, W2 = arr(shape[0], shape[0]), arr(shape[1], shape[1])

        def svd_loss(lib, full):
            def f(a):
                U, s, Vh = lib.linalg.svd(a, full_matrices=full)
                k = s.shape[-1]
                U, Vh = U[..., :k], Vh[..., :k, :]
                w1 = lib.tensor(W1[:, :k], dtype=a.dtype)
                w2 = lib.tensor(W2[:k, :], dtype=a.dtype)
                return (s ** 2).sum() + (U * U * w1).sum() + (Vh * Vh * w2).sum()
            return f
        for full in (False, True):
            grads_match(svd_loss(ignis, full), svd_loss(torch, full), arr(*shape), tol=1e-6)
        grads_match(ignis.linalg.svdvals, torch.linalg.svdvals, arr(2, *shape))

        Wq, Wr = arr(*shape), arr(*shape)

        def qr_loss(lib):
            def f(a):
                Q, R = lib.linalg.qr(a)
                wq = lib.tensor(Wq[:, :Q.shape[-1]], dtype=a.dtype)
                wr = lib.tensor(Wr[:R.shape[-2], :], dtype=a.dtype)
                return (Q * wq).sum() + (R * wr).sum()
            return f
        grads_match(qr_loss(ignis), qr_loss(torch), arr(*shape))
    grads_match(lambda a: ignis.linalg.pinv(a) ** 2, lambda a: torch.linalg.pinv(a) ** 2, arr(4, 3))
    grads_match(lambda a: ignis.linalg.matrix_norm(a, "nuc"),
                lambda a: torch.linalg.matrix_norm(a, "nuc"), arr(2, 3, 4))


def test_second_derivatives_through_a_solve():
    # the formulas are ignis ops, so they differentiate again
    A, At = both(arr(3, 3) + 3 * np.eye(3), grad=True)
    b, bt = both(arr(3))
    g = ignis.autograd.grad(ignis.linalg.solve(A, b).sum(), A, create_graph=True)[0]
    tg = torch.autograd.grad(torch.linalg.solve(At, bt).sum(), At, create_graph=True)[0]
    close(g, tg)
    close(ignis.autograd.grad((g ** 2).sum(), A)[0], torch.autograd.grad((tg ** 2).sum(), At)[0])


# ---- errors ------------------------------------------------------------------------

def test_errors_name_the_problem_as_torch():
    with pytest.raises(ignis.linalg.LinAlgError, match="leading minor of order 1 is not "
                                                       "positive-definite"):
        ignis.linalg.cholesky(-ignis.eye(3))
    with pytest.raises(ignis.linalg.LinAlgError, match=r"\(Batch element 1\)"):
        ignis.linalg.cholesky(ignis.stack([ignis.eye(2), -ignis.eye(2)]))
    with pytest.raises(ignis.linalg.LinAlgError, match="input matrix is singular"):
        ignis.linalg.solve(ignis.zeros(2, 2), ignis.ones(2))
    with pytest.raises(ignis.linalg.LinAlgError, match="The diagonal element 2 is zero"):
        ignis.linalg.inv(ignis.tensor([[1.0, 2.0], [2.0, 4.0]]))
    assert issubclass(ignis.linalg.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match="must be batches of square matrices, but they are 3 by 4"):
        ignis.linalg.inv(ignis.randn(3, 4))
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        ignis.linalg.det(ignis.randn(3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. "
                                           "Got Long"):
        ignis.linalg.svd(ignis.ones(3, 3, dtype=ignis.long))
    with pytest.raises(RuntimeError, match="not implemented for 'Half'"):
        ignis.linalg.qr(ignis.ones(3, 3, dtype=ignis.float16))
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
        ignis.linalg.solve(ignis.randn(3, 3), ignis.randn(4, 2))
    with pytest.raises(RuntimeError, match="Expected A and B to have the same dtype"):
        ignis.linalg.solve(ignis.randn(3, 3), ignis.randn(3, 2, dtype=ignis.float64))
    with pytest.raises(RuntimeError, match="unrecognized mode 'full'"):
        ignis.linalg.qr(ignis.randn(3, 3), mode="full")
    with pytest.raises(RuntimeError, match="mode='r'"):
        Q, R = ignis.linalg.qr(ignis.randn(3, 3, requires_grad=True), mode="r")
        R.sum().backward()


def test_empty_matrices():
    for n in (0,):
        A, At = both(np.zeros((2, n, n)))
        assert ignis.linalg.det(A).tolist() == torch.linalg.det(At).tolist()
        assert ignis.linalg.inv(A).shape == torch.linalg.inv(At).shape
        assert ignis.linalg.cholesky(A).shape == (2, 0, 0)
    M, Mt = both(np.zeros((0, 3)))
    U, s, Vh = ignis.linalg.svd(M)
    tU, ts, tVh = torch.linalg.svd(Mt)
    assert U.shape == tU.shape and s.shape == ts.shape and Vh.shape == tVh.shape
    close(Vh, tVh)


# ---- compiled ------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_compiled_linear_algebra_matches_eager(backend):
    # core ops: AOT keeps them whole, the compiler runs them as extern kernels
    # between its fused kernels, gradients included.
    def f(a, b):
        s = a @ a.mT + 3 * ignis.eye(3, dtype=a.dtype)
        L = ignis.linalg.cholesky(s)
        x = ignis.linalg.solve(s, b)
        w, v = ignis.linalg.eigh(s)
        return (L.sum(-1) + x.sum(-1) + w).relu() + ignis.linalg.det(s).log().unsqueeze(-1)

    cf = ignis.compile(f, backend=backend)
    a_np, b_np = arr(2, 3, 3), arr(2, 3, 2)
    a1 = ignis.tensor(a_np, requires_grad=True)
    a2 = ignis.tensor(a_np, requires_grad=True)
    b = ignis.tensor(b_np)
    out, ref = cf(a1, b), f(a2, b)
    close(out, ref, 1e-10)
    out.sum().backward()
    ref.sum().backward()
    close(a1.grad, a2.grad, 1e-9)


@pytest.mark.skipif(not ignis.cuda.is_available(), reason="needs a CUDA device (or the fake "
                    "CUDA driver of tests/cuda_fake)")
def test_on_cuda_the_results_and_gradients_are_the_cpus():
    # the CUDA kernels run LAPACK on host copies (Note [Linear algebra ops])
    a_np, b_np = spd(2), arr(2, 4, 3)
    outs = {}
    for dev in ("cpu", "cuda"):
        a = ignis.tensor(a_np, device=dev, requires_grad=True)
        b = ignis.tensor(b_np, device=dev)
        U, s, Vh = ignis.linalg.svd(a)
        Q, R = ignis.linalg.qr(a)
        w, v = ignis.linalg.eigh(a)
        y = (ignis.linalg.solve(a, b).sum() + ignis.linalg.cholesky(a).sum() + s.sum() +
             ignis.linalg.det(a).sum() + ignis.linalg.inv(a).sum() + R.sum() + w.sum() +
             ignis.linalg.slogdet(a)[1].sum() + ignis.linalg.solve_triangular(R, b, upper=True).sum())
        y.backward()
        assert y.device.type == dev and a.grad.device.type == dev
        outs[dev] = (y.item(), a.grad.cpu().numpy(), ignis.linalg.lu_factor(a)[0].cpu().numpy())
    assert outs["cpu"][0] == pytest.approx(outs["cuda"][0], rel=1e-12)
    np.testing.assert_allclose(outs["cpu"][1], outs["cuda"][1], rtol=1e-10)
    np.testing.assert_allclose(outs["cpu"][2], outs["cuda"][2], rtol=1e-12)

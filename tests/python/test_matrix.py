"""Matrix products (mm, bmm, matmul, addmm, baddbmm, dot, mv, outer) against
NumPy and torch: values, dtypes, shapes (1-D and batch broadcasting rules),
strided operands, zero sizes, error types, the meta device, and the
built-in GEMM used when BLAS is absent."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ignis

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _fresh_rng():
    """Each test draws the same numbers however the suite is filtered or ordered."""
    global RNG
    RNG = np.random.default_rng(0)

FLOAT_TYPES = ["float32", "float64", "float16", "bfloat16"]
INT_TYPES = ["int8", "uint8", "int16", "int32", "int64"]
TOL = {"float32": (2e-5, 2e-5), "float64": (1e-12, 1e-12), "float16": (5e-3, 5e-3),
       "bfloat16": (3e-2, 3e-2)}


def rand(shape, dtype="float32"):
    """A NumPy array of `dtype` ('bfloat16' arrays are float32 holding bf16 values)."""
    if dtype in INT_TYPES:
        lo = 0 if dtype == "uint8" else -4
        return RNG.integers(lo, 5, size=shape).astype(dtype)
    a = RNG.standard_normal(shape).astype(np.float32 if dtype == "bfloat16" else dtype)
    if dtype == "bfloat16":
        a = torch.from_numpy(a).bfloat16().float().numpy()
    return a


def both(a, dtype):
    """The same values as an ignis and a torch tensor of `dtype` (strides kept)."""
    ta = torch.from_numpy(a if a.flags.writeable else a.copy())
    if dtype == "bfloat16":
        return ignis.from_numpy(a).to(ignis.bfloat16), ta.to(torch.bfloat16)
    return ignis.from_numpy(a), ta


def as_np(t):
    if str(t.dtype).endswith("bfloat16"):
        t = t.float()
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


def check(got, want, dtype=None):
    """ignis result `got` equals torch result `want`: shape, dtype and values."""
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    name = str(want.dtype).split(".")[-1]
    g, w = as_np(got).astype(np.float64), as_np(want.detach()).astype(np.float64)
    if name in TOL:
        rtol, atol = TOL[name]
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * max(1.0, np.abs(w).max(initial=0)))
    else:
        np.testing.assert_array_equal(g, w)


# ---- mm -----------------------------------------------------------------------------------
MM_SHAPES = [(3, 4, 5), (1, 1, 1), (1, 7, 1), (5, 1, 3), (0, 3, 2), (2, 0, 3), (3, 2, 0),
             (97, 130, 61), (70, 300, 50), (200, 40, 300)]


@pytest.mark.parametrize("m,k,n", MM_SHAPES)
def test_mm_shapes_float32(m, k, n):
    a, b = rand((m, k)), rand((k, n))
    (ia, ta), (ib, tb) = both(a, "float32"), both(b, "float32")
    got = ignis.mm(ia, ib)
    check(got, torch.mm(ta, tb))
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=2e-5, atol=2e-5 * max(1, k ** 0.5))


@pytest.mark.parametrize("dtype", FLOAT_TYPES + INT_TYPES)
def test_mm_dtypes(dtype):
    a, b = rand((6, 9), dtype), rand((9, 7), dtype)
    (ia, ta), (ib, tb) = both(a, dtype), both(b, dtype)
    check(ignis.mm(ia, ib), torch.mm(ta, tb))
    check(ia.mm(ib), ta.mm(tb))


@pytest.mark.parametrize("layout", ["t_a", "t_b", "t_both", "sliced", "broadcast_col"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16"])
def test_mm_strided(layout, dtype):
    if layout == "t_a":
        a, b = rand((9, 6), dtype).T, rand((9, 7), dtype)
    elif layout == "t_b":
        a, b = rand((6, 9), dtype), rand((7, 9), dtype).T
    elif layout == "t_both":
        a, b = rand((9, 6), dtype).T, rand((7, 9), dtype).T
    elif layout == "sliced":
        a, b = rand((12, 18), dtype)[::2, 1::2], rand((9, 21), dtype)[:, ::3]
    else:
        a, b = np.broadcast_to(rand((6, 1), dtype), (6, 9)), rand((9, 7), dtype)
    (ia, ta), (ib, tb) = both(a, dtype), both(b, dtype)
    check(ignis.mm(ia, ib), torch.mm(ta, tb))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m", [1, 11, 20, 24, 25, 40])
@pytest.mark.parametrize("k,n,pad", [(128, 512, 16), (300, 64, 0), (7, 96, 3), (1, 32, 48)])
def test_mm_row_major_b_read_in_place(dtype, m, k, n, pad):
    """Few rows of A against a row-major B whose strips are all whole: the
    built-in GEMM reads B in place rather than packing it (a recurrent
    step's h @ W_hh^T), across depth panels (k > 256), with alpha/beta."""
    a = rand((m, k), dtype)
    b = rand((k, n + pad), dtype)[:, :n]  # rows n + pad apart
    c = rand((m, n), dtype)
    (ia, ta), (ib, tb), (ic, tc) = both(a, dtype), both(b, dtype), both(c, dtype)
    check(ignis.mm(ia, ib), torch.mm(ta, tb))
    check(ignis.addmm(ic, ia, ib, beta=0.5, alpha=-2.0),
          torch.addmm(tc, ta, tb, beta=0.5, alpha=-2.0))


def test_mm_transposed_views_of_ignis_tensors():
    a, b = rand((8, 5)), rand((6, 8))
    (ia, ta), (ib, tb) = both(a, "float32"), both(b, "float32")
    check(ia.t() @ ib.t(), ta.t() @ tb.t())
    check(ia.transpose(0, 1).mm(ia), ta.transpose(0, 1).mm(ta))


def test_mm_errors():
    a, b = ignis.ones(2, 3), ignis.ones(4, 5)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        ignis.mm(a, b)
    with pytest.raises(RuntimeError):
        torch.mm(torch.ones(2, 3), torch.ones(4, 5))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        ignis.mm(ignis.ones(2, 3), ignis.ones(3, 2, dtype=ignis.float64))
    with pytest.raises(RuntimeError, match="must be a matrix"):
        ignis.mm(ignis.ones(2, 3), ignis.ones(3))
    with pytest.raises(NotImplementedError, match="Bool"):
        ignis.mm(ignis.ones(2, 3, dtype=ignis.bool), ignis.ones(3, 2, dtype=ignis.bool))
    with pytest.raises(NotImplementedError):
        torch.mm(torch.ones(2, 3, dtype=torch.bool), torch.ones(3, 2, dtype=torch.bool))


def test_mm_meta():
    r = ignis.mm(ignis.empty(5, 3, device="meta"), ignis.empty(3, 2, device="meta"))
    assert r.device.type == "meta" and tuple(r.shape) == (5, 2) and r.dtype == ignis.float32
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ignis.mm(ignis.empty(5, 3, device="meta"), ignis.empty(4, 2, device="meta"))


# ---- bmm / baddbmm ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "int64"])
@pytest.mark.parametrize("shape", [(4, 3, 5, 2), (1, 1, 1, 1), (0, 2, 3, 4), (3, 0, 2, 2),
                                   (3, 2, 0, 4), (50, 8, 8, 8)])
def test_bmm(dtype, shape):
    bsz, m, k, n = shape
    a, b = rand((bsz, m, k), dtype), rand((bsz, k, n), dtype)
    (ia, ta), (ib, tb) = both(a, dtype), both(b, dtype)
    check(ignis.bmm(ia, ib), torch.bmm(ta, tb))


def test_bmm_strided_batches():
    # transposed matrices inside the batch, and one matrix broadcast over it (stride 0)
    a = rand((3, 6, 5)).transpose(0, 2, 1)
    b = np.broadcast_to(rand((1, 6, 4)), (3, 6, 4))
    (ia, ta), (ib, tb) = both(a, "float32"), both(b, "float32")
    check(ignis.bmm(ia, ib), torch.bmm(ta, tb))
    np.testing.assert_allclose(ignis.bmm(ia, ib).numpy(), a @ b, rtol=1e-5, atol=1e-5)


def test_bmm_errors():
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        ignis.bmm(ignis.ones(2, 3), ignis.ones(2, 3, 2))
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 tensor to be: \[2, 3\] but got: \[3, 3\]"):
        ignis.bmm(ignis.ones(2, 2, 3), ignis.ones(3, 3, 2))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ignis.bmm(ignis.ones(1, 2, 3), ignis.ones(1, 3, 2, dtype=ignis.float64))


@pytest.mark.parametrize("self_shape", [(4, 2, 5), (2, 5), (5,), (), (4, 1, 1)])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 1.5)])
def test_baddbmm(self_shape, beta, alpha):
    s, a, b = rand(self_shape), rand((4, 2, 3)), rand((4, 3, 5))
    (is_, ts), (ia, ta), (ib, tb) = both(s, "float32"), both(a, "float32"), both(b, "float32")
    check(ignis.baddbmm(is_, ia, ib, beta=beta, alpha=alpha),
          torch.baddbmm(ts, ta, tb, beta=beta, alpha=alpha))


# ---- addmm --------------------------------------------------------------------------------
@pytest.mark.parametrize("self_shape", [(2, 3), (3,), (2, 1), (), (1, 3)])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (-1, 0.25)])
def test_addmm(self_shape, beta, alpha):
    s, a, b = rand(self_shape), rand((2, 4)), rand((4, 3))
    (is_, ts), (ia, ta), (ib, tb) = both(s, "float32"), both(a, "float32"), both(b, "float32")
    got = ignis.addmm(is_, ia, ib, beta=beta, alpha=alpha)
    check(got, torch.addmm(ts, ta, tb, beta=beta, alpha=alpha))
    np.testing.assert_allclose(got.numpy(), beta * s + alpha * (a @ b), rtol=1e-5, atol=1e-5)


def test_addmm_beta_zero_ignores_nan():
    s = np.full((2, 2), np.nan, np.float32)
    a, b = rand((2, 3)), rand((3, 2))
    got = ignis.addmm(ignis.from_numpy(s), ignis.from_numpy(a), ignis.from_numpy(b), beta=0)
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-5, atol=1e-6)
    # k == 0: the product is zero
    got = ignis.addmm(ignis.from_numpy(s), ignis.ones(2, 0), ignis.ones(0, 2), beta=0)
    np.testing.assert_array_equal(got.numpy(), np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16", "int32"])
def test_addmm_dtypes(dtype):
    s, a, b = rand((3,), dtype), rand((2, 4), dtype), rand((4, 3), dtype)
    (is_, ts), (ia, ta), (ib, tb) = both(s, dtype), both(a, dtype), both(b, dtype)
    check(ignis.addmm(is_, ia, ib, beta=2, alpha=3), torch.addmm(ts, ta, tb, beta=2, alpha=3))


def test_addmm_errors():
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        ignis.addmm(ignis.ones(4), ignis.ones(2, 3), ignis.ones(3, 3))
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype"):
        ignis.addmm(ignis.ones(3, dtype=ignis.float64), ignis.ones(2, 3), ignis.ones(3, 3))
    with pytest.raises(RuntimeError, match="mat1 must be a matrix"):
        ignis.addmm(ignis.ones(3), ignis.ones(3), ignis.ones(3, 3))


# ---- dot / mv / outer ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOAT_TYPES + ["int64", "int32"])
@pytest.mark.parametrize("n", [0, 1, 7, 300])
def test_dot(dtype, n):
    a, b = rand((n,), dtype), rand((n,), dtype)
    (ia, ta), (ib, tb) = both(a, dtype), both(b, dtype)
    check(ignis.dot(ia, ib), torch.dot(ta, tb))


def test_dot_strided_and_errors():
    a, b = rand((20,))[::2], rand((30,))[::3]
    (ia, ta), (ib, tb) = both(a, "float64"), both(b, "float64")
    check(ia.dot(ib), ta.dot(tb))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        ignis.dot(ignis.ones(3, 1), ignis.ones(3))
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        ignis.dot(ignis.ones(3), ignis.ones(4))
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype"):
        ignis.dot(ignis.ones(3), ignis.ones(3, dtype=ignis.float64))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64"])
def test_mv(dtype):
    m, v = rand((5, 4), dtype), rand((4,), dtype)
    (im, tm), (iv, tv) = both(m, dtype), both(v, dtype)
    check(ignis.mv(im, iv), torch.mv(tm, tv))
    mt, vs = rand((4, 5), dtype).T, rand((8,), dtype)[::2]
    (im, tm), (iv, tv) = both(mt, dtype), both(vs, dtype)
    check(im.mv(iv), tm.mv(tv))


def test_mv_errors():
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(3\), mat \(3x2\), vec \(3\)"):
        ignis.mv(ignis.ones(3, 2), ignis.ones(3))
    with pytest.raises(RuntimeError):
        ignis.mv(ignis.ones(3, 2), ignis.ones(2, dtype=ignis.float64))


def test_outer():
    a, b = rand((3,)), rand((4,), "int64")
    (ia, ta), (ib, tb) = both(a, "float32"), both(b, "int64")
    check(ignis.outer(ia, ib), torch.outer(ta, tb))
    check(ignis.ger(ia, ia), torch.outer(ta, ta))
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        ignis.outer(ignis.ones(3, 1), ignis.ones(2))


# ---- matmul -------------------------------------------------------------------------------
MATMUL_SHAPES = [
    ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)),
    ((2, 3, 4), (4,)), ((2, 3, 4), (4, 5)), ((4,), (2, 4, 5)), ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (6, 4, 2)),
    ((2, 2, 3, 4), (4,)), ((4,), (3, 2, 4, 5)), ((0, 3, 4), (4, 2)), ((2, 3, 0), (0, 5)),
    ((2, 0, 4), (3, 1, 4, 5)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_shapes(sa, sb):
    a, b = rand(sa), rand(sb)
    (ia, ta), (ib, tb) = both(a, "float32"), both(b, "float32")
    got = ignis.matmul(ia, ib)
    check(got, torch.matmul(ta, tb))
    np.testing.assert_allclose(as_np(got), np.matmul(a, b), rtol=2e-5, atol=2e-5)
    check(ia @ ib, ta @ tb)


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16", "int64", "int16"])
def test_matmul_dtypes(dtype):
    for sa, sb in [((3,), (3,)), ((2, 3), (3,)), ((2, 2, 3), (3, 4)), ((2, 1, 3), (2, 3, 2))]:
        a, b = rand(sa, dtype), rand(sb, dtype)
        (ia, ta), (ib, tb) = both(a, dtype), both(b, dtype)
        check(ia.matmul(ib), ta.matmul(tb))


def test_matmul_noncontiguous_batched():
    a = rand((4, 3, 2, 5)).transpose(1, 0, 3, 2)   # [3, 4, 5, 2], permuted strides
    b = rand((2, 6))[:, ::2]                     # [2, 3], column stride 2
    (ia, ta), (ib, tb) = both(a, "float32"), both(b, "float32")
    check(ia @ ib, ta @ tb)
    c = np.broadcast_to(rand((1, 2, 3)), (3, 2, 3))
    (ic, tc) = both(c, "float32")
    check(ic @ ib.t(), tc @ tb.t())


def test_matmul_errors():
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D"):
        ignis.matmul(ignis.ones(()), ignis.ones(4))
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        ignis.matmul(ignis.ones(2, 3), ignis.ones(4, 2))
    with pytest.raises(RuntimeError):
        ignis.matmul(ignis.ones(3), ignis.ones(4))
    with pytest.raises(RuntimeError, match="must match"):
        ignis.matmul(ignis.ones(5, 2, 3), ignis.ones(2, 3, 2))
    with pytest.raises(RuntimeError, match="same dtype"):
        ignis.matmul(ignis.ones(2, 3), ignis.ones(3, 2, dtype=ignis.float64))


def test_matmul_meta():
    r = ignis.matmul(ignis.empty(7, 1, 3, 4, device="meta"), ignis.empty(5, 4, 2, device="meta"))
    assert r.device.type == "meta" and tuple(r.shape) == (7, 5, 3, 2)


# ---- the built-in GEMM (used when the build has no BLAS) -----------------------------------------
BUILTIN_SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    import ignis
    if os.path.dirname(ignis.__file__) != sys.argv[1]:
        sys.exit(3)  # a different ignis package was imported
    rng = np.random.default_rng(1)
    for dt in ("float32", "float64"):
        tol = 1e-4 if dt == "float32" else 1e-10
        # (61, 1030, 1600) and (3, 600, 1100): at 2 threads more column blocks
        # than threads, so A is packed once for all tasks, with short last
        # strips and depth panels. (30, 1024, 50): A's rows 4 KiB apart read
        # in place, as B has two strips (the second short). (200, 700, 1000):
        # B packed depth by depth across 31 whole strips and a short one, in
        # groups of 16 strips when packed once for all tasks (2 threads).
        # (128, 2048, 128) and (40, 1024, 64): a small C with a long depth, cut
        # over the depth at 2 threads (Note [Products split over their depth]).
        for m, k, n in [(1, 1, 1), (7, 5, 3), (97, 300, 61), (130, 257, 270), (6, 0, 4),
                        (29, 1024, 97), (37, 513, 64), (61, 1030, 1600), (3, 600, 1100),
                        (30, 1024, 50), (200, 700, 1000), (128, 2048, 128), (40, 1024, 64)]:
            a = rng.standard_normal((m, k)).astype(dt)
            b = rng.standard_normal((k, n)).astype(dt)
            # x @ W^T (B column-major) with A row-major: at k = 513 or 1024 the
            # built-in GEMM packs both by transposing register blocks.
            for x, y in [(a, b), (np.asfortranarray(a), b), (a, np.asfortranarray(b))]:
                got = (ignis.from_numpy(x) @ ignis.from_numpy(y)).numpy()
                np.testing.assert_allclose(got, a @ b, rtol=tol, atol=tol * max(1, k))
            # A read in place with a row stride wider than k (a column slice)
            wide = rng.standard_normal((m, k + 5)).astype(dt)
            sliced = ignis.from_numpy(wide)[:, 2:k + 2]
            got = (sliced @ ignis.from_numpy(b)).numpy()
            np.testing.assert_allclose(got, wide[:, 2:k + 2] @ b, rtol=tol, atol=tol * max(1, k))
            # A column-major with a column stride wider than m (read in place)
            tall = rng.standard_normal((k, m + 5)).astype(dt)
            cols = ignis.from_numpy(tall)[:, 1:m + 1].t()
            got = (cols @ ignis.from_numpy(b)).numpy()
            np.testing.assert_allclose(got, tall[:, 1:m + 1].T @ b, rtol=tol, atol=tol * max(1, k))
            # beta != 0 over several depth panels (C read back after the first)
            c = rng.standard_normal((m, n)).astype(dt)
            got = ignis.addmm(ignis.from_numpy(c), ignis.from_numpy(a), ignis.from_numpy(b),
                              beta=0.5, alpha=2).numpy()
            np.testing.assert_allclose(got, 0.5 * c + 2 * (a @ b), rtol=tol, atol=tol * max(1, k))
        s = rng.standard_normal((3,)).astype(dt)
        a = rng.standard_normal((4, 2, 9)).astype(dt)
        b = rng.standard_normal((4, 9, 3)).astype(dt)
        got = ignis.baddbmm(ignis.from_numpy(s), ignis.from_numpy(a), ignis.from_numpy(b),
                            beta=0.5, alpha=2).numpy()
        np.testing.assert_allclose(got, 0.5 * s + 2 * (a @ b), rtol=tol, atol=tol * 10)
    print("ok")
""")


@pytest.mark.parametrize("gemm", ["builtin", "blas"])
@pytest.mark.parametrize("threads", ["1", "2"])
def test_builtin_gemm_matches_numpy(threads, gemm):
    # Both GEMMs, whichever the default is on this machine (IGNIS_GEMM=blas is
    # the built-in one too when ignis was built without OpenBLAS).
    pkg = os.path.dirname(ignis.__file__)
    env = dict(os.environ, IGNIS_GEMM=gemm, OMP_NUM_THREADS=threads)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(pkg), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", BUILTIN_SCRIPT, pkg], env=env, capture_output=True,
                       text=True, timeout=120)
    if r.returncode == 3:
        pytest.skip("the subprocess imports a different ignis package")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"

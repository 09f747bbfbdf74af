"""torch's top-level functions that ignis composes from ops (ignis/_functions.py,
ignis/functional.py, ignis/_dtype_info.py): values, dtypes, gradients and
errors against torch, the Tensor-method forms, and one compiled check."""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
NAN, INF = float("nan"), float("inf")


def f64(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape)


def ints(hi, *shape, lo=0):
    return RNG.integers(lo, hi, shape)


SPECIAL = np.array([[1.0, NAN, -INF, 2.0], [INF, 0.0, -1.5, NAN], [3.0, 3.0, -0.0, 0.5]])
SORTED = np.sort(f64(7))
TWO_NANS = np.array([[1.0, NAN, 3.0, NAN, 0.5], [2.0, 1.0, NAN, 4.0, NAN], [1.0, 2.0, 3.0, 4.0, 5.0]])

# name: [(args, kwargs, grad)]; numpy arrays become tensors (float64 ones may
# require grad), other values pass as they are.
CASES = {
    "repeat_interleave": [((f64(3, 2), 2), {"dim": 0}, True), ((f64(3, 2), 3), {}, True),
                          ((f64(3, 2), np.array([1, 0, 2])), {"dim": 0}, True),
                          ((np.array([2, 0, 1]),), {}, False),
                          ((f64(2, 3), np.array([2, 1, 0])), {"dim": 1, "output_size": 3}, True)],
    "argwhere": [((ints(3, 3, 4),), {}, False)],
    "diff": [((f64(5),), {}, True), ((f64(3, 4),), {"n": 2, "dim": 1}, True),
             ((f64(3, 4),), {"dim": 0, "prepend": f64(1, 4), "append": f64(2, 4)}, True),
             ((np.array([True, False, False, True]),), {}, False)],
    "isin": [((ints(6, 3, 4), np.array([1, 3, 5])), {}, False),
             ((ints(6, 5), np.array([2, 4])), {"invert": True}, False)],
    "nan_to_num": [((SPECIAL,), {}, False), ((SPECIAL,), {"nan": 1.0, "posinf": 9.0, "neginf": -9.0}, False)],
    "logaddexp": [((f64(3, 4), f64(4)), {}, True), ((np.array([INF, -INF, 1.0]), np.array([INF, -INF, -INF])), {}, False)],
    "logaddexp2": [((f64(3, 4), f64(3, 4)), {}, True)],
    "xlogy": [((np.array([0.0, 1.0, 2.0, 0.0]), np.array([0.0, 3.0, 0.5, NAN])), {}, False),
              ((f64(3, 4), f64(3, 4, lo=0.1)), {}, True)],
    "diag": [((f64(4),), {}, True), ((f64(4),), {"diagonal": -1}, True), ((f64(3, 5),), {"diagonal": 1}, True)],
    "diag_embed": [((f64(2, 3),), {}, True), ((f64(2, 3),), {"offset": 1, "dim1": 0, "dim2": 2}, True)],
    "diagflat": [((f64(2, 2),), {"offset": -1}, True)],
    "trace": [((f64(4, 3),), {}, True)],
    "kron": [((f64(2, 3), f64(3, 2)), {}, True), ((f64(2), f64(2, 3)), {}, True)],
    "cross": [((f64(4, 3), f64(4, 3)), {"dim": 1}, True), ((f64(3, 2), f64(3, 2)), {"dim": 0}, True)],
    "tensor_split": [((f64(7, 2), 3), {}, True), ((f64(2, 7), [1, 5]), {"dim": 1}, True)],
    "ravel": [((f64(2, 3),), {}, True)],
    "rot90": [((f64(2, 3),), {}, True), ((f64(2, 3, 4),), {"k": 3, "dims": (1, 2)}, True),
              ((f64(2, 3),), {"k": -2}, True)],
    "median": [((f64(7),), {}, True), ((f64(4, 6),), {"dim": 1}, True),
               ((f64(4, 5),), {"dim": 0, "keepdim": True}, True), ((SPECIAL,), {"dim": 1}, False),
               ((TWO_NANS,), {"dim": 1}, False)],  # the index of the first NaN
    "nanmedian": [((SPECIAL,), {"dim": 1}, False), ((SPECIAL,), {}, False)],
    "nanmean": [((SPECIAL,), {"dim": 1}, False), ((f64(3, 4),), {}, True)],
    "quantile": [((f64(9), 0.3), {}, True), ((f64(4, 6), np.array([0.1, 0.5, 0.9])), {"dim": 1}, True),
                 ((f64(4, 5), 0.25), {"dim": 0, "keepdim": True, "interpolation": "midpoint"}, True),
                 ((f64(6), 0.4), {"interpolation": "lower"}, False),
                 ((f64(6), 0.4), {"interpolation": "higher"}, False),
                 ((f64(6), 0.5), {"interpolation": "nearest"}, False),
                 ((SPECIAL, 0.5), {"dim": 1}, False)],
    "nanquantile": [((SPECIAL, 0.5), {"dim": 1}, False), ((SPECIAL, np.array([0.2, 0.7])), {}, False)],
    "kthvalue": [((f64(6), 2), {}, True), ((f64(3, 5), 4), {"dim": 1, "keepdim": True}, True)],
    "bincount": [((ints(5, 20),), {}, False), ((ints(4, 10),), {"weights": f64(10), "minlength": 7}, False),
                 ((np.zeros(0, dtype=np.int64),), {}, False)],
    "searchsorted": [((SORTED, f64(3, 4)), {}, False), ((SORTED, SORTED), {"right": True}, False),
                     ((np.sort(f64(2, 5), axis=1), f64(2, 3)), {"side": "right"}, False)],
    "bucketize": [((f64(3, 4), SORTED), {}, False), ((f64(5), SORTED), {"right": True, "out_int32": True}, False)],
    "tril_indices": [((4, 5), {}, False), ((4, 3, 1), {}, False), ((3, 4, -1), {}, False)],
    "triu_indices": [((4, 5), {}, False), ((4, 3, 1), {}, False), ((3, 4, -1), {}, False)],
    "combinations": [((f64(4),), {}, True), ((f64(4), 3), {"with_replacement": True}, True)],
    "inner": [((f64(2, 3), f64(4, 3)), {}, True), ((f64(3), f64(3)), {}, True)],
    "vdot": [((f64(5), f64(5)), {}, True)],
    "dist": [((f64(3, 4), f64(4)), {}, True), ((f64(3, 4), f64(3, 4), 1), {}, True),
             ((f64(3, 4), f64(3, 4), INF), {}, False), ((f64(3, 4), f64(3, 4), 3), {}, True)],
    "addmv": [((f64(3), f64(3, 4), f64(4)), {"beta": 0.5, "alpha": 2}, True)],
    "addr": [((f64(3, 4), f64(3), f64(4)), {}, True)],
    "addbmm": [((f64(3, 5), f64(2, 3, 4), f64(2, 4, 5)), {"alpha": 0.5}, True)],
    "sinc": [((np.array([0.0, 0.5, -1.5, 2.0, 1e-9]),), {}, False), ((f64(3, 4),), {}, True)],
    "logit": [((f64(3, 4, lo=0.05, hi=0.95),), {}, True), ((f64(5, lo=0.0, hi=1.0),), {"eps": 0.1}, False)],
    "deg2rad": [((f64(3, 4),), {}, True)],
    "rad2deg": [((f64(3, 4),), {}, True)],
    "heaviside": [((np.array([-1.0, 0.0, 2.0, 0.0]), np.array([0.5, 0.5, 0.5, 7.0])), {}, False)],
    "fmax": [((np.array([1.0, NAN, NAN, -2.0]), np.array([NAN, 2.0, NAN, 3.0])), {}, False)],
    "fmin": [((np.array([1.0, NAN, NAN, -2.0]), np.array([NAN, 2.0, NAN, 3.0])), {}, False)],
    "float_power": [((f64(3, lo=0.5), 2.5), {}, False), ((ints(4, 5), 2), {}, False)],
    "positive": [((f64(3),), {}, True)],
    "sgn": [((f64(3, 4),), {}, False)],
    "msort": [((f64(4, 3),), {}, True)],
    "meshgrid": [((f64(3), f64(4)), {"indexing": "ij"}, True), ((f64(3), f64(4), f64(2)), {"indexing": "xy"}, True)],
    "tensordot": [((f64(2, 3, 4), f64(3, 4, 5)), {"dims": 2}, True),
                  ((f64(2, 3, 4), f64(4, 2, 5)), {"dims": ([0, 2], [1, 0])}, True)],
    "cdist": [((f64(4, 3), f64(5, 3)), {}, True), ((f64(2, 30, 3), f64(2, 26, 3)), {}, True),
              ((f64(4, 3), f64(5, 3)), {"p": 1.0}, True), ((f64(4, 3), f64(5, 3)), {"p": INF}, False),
              ((f64(4, 3), f64(5, 3)), {"p": 3.0}, True)],
    "atleast_1d": [((np.array(3.0),), {}, False)],
    "atleast_2d": [((f64(3),), {}, False)],
    "atleast_3d": [((f64(3, 2),), {}, False)],
    "block_diag": [((f64(2, 2), f64(3), np.array(5.0)), {}, True)],
    "cartesian_prod": [((f64(2), f64(3)), {}, True)],
    "chain_matmul": [((f64(2, 3), f64(3, 4), f64(4, 2)), {}, True)],
    "unravel_index": [((np.array([0, 5, 11, -1]), (3, 4)), {}, False)],
    # torch.linalg's norms and products
    "linalg.vector_norm": [((f64(3, 4),), {}, True), ((f64(3, 4),), {"ord": 1, "dim": 1}, True),
                           ((f64(3, 4),), {"ord": INF, "dim": 0, "keepdim": True}, False),
                           ((f64(3, 4),), {"ord": 3.5, "dim": (0, 1)}, True),
                           ((f64(3, 4),), {"ord": 0}, False), ((f64(3, 4),), {"ord": -INF}, False)],
    "linalg.matrix_norm": [((f64(2, 3, 4),), {}, True), ((f64(3, 4),), {"ord": 1}, False),
                           ((f64(3, 4),), {"ord": -INF, "keepdim": True}, False),
                           ((f64(4, 3, 2),), {"ord": INF, "dim": (0, 2)}, False)],
    "linalg.norm": [((f64(3, 4),), {}, True), ((f64(5),), {"ord": 3}, True),
                    ((f64(3, 4),), {"ord": 1, "dim": 1}, True), ((f64(3, 4),), {"ord": "fro"}, True)],
    "linalg.vecdot": [((f64(3, 4), f64(4)), {}, True)],
    "linalg.multi_dot": [(([f64(2, 30), f64(30, 3), f64(3, 20), f64(20)],), {}, False)],
    "linalg.vander": [((f64(4),), {}, True), ((f64(2, 3),), {"N": 5}, True)],
    "linalg.cross": [((f64(4, 3), f64(4, 3)), {}, True)],
    # torch.special's elementary functions
    "special.expit": [((f64(3, 4),), {}, True)],
    "special.xlog1py": [((np.array([0.0, 1.0, 2.0, 0.0]), np.array([-1.0, 3.0, 0.5, NAN])), {}, False)],
    "special.entr": [((np.array([-1.0, 0.0, 0.5, 2.0]),), {}, False), ((f64(3, lo=0.1),), {}, True)],
    "special.ndtr": [((f64(3, 4, lo=-4, hi=4),), {}, True)],
    "special.log_ndtr": [((np.array([-40.0, -10.0, -5.5, -4.9, -1.0, 0.0, 3.0, 9.0]),), {}, False),
                         ((f64(3, 4),), {}, True)],
    "special.logsumexp": [((f64(3, 4), 1), {}, True)],
    "special.round": [((f64(5) * 100,), {"decimals": 1}, False)],
    "round": [((f64(6) * 100,), {"decimals": 2}, False), ((f64(6) * 1000,), {"decimals": -2}, False)],
}


def _get(lib, name):
    obj = lib
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _to(lib, v, grad):
    if isinstance(v, list):
        return [_to(lib, x, grad) for x in v]
    if isinstance(v, np.ndarray):
        t = lib.tensor(v)
        if grad and v.dtype == np.float64:
            t.requires_grad_(True)
        return t
    if isinstance(v, dict):
        return {k: _to(lib, x, False) for k, x in v.items()}
    return v


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out]


def _cmp(got, want, name):
    g, w = _flat(got), _flat(want)
    assert len(g) == len(w), f"{name}: {len(g)} outputs, torch {len(w)}"
    for a, b in zip(g, w):
        if isinstance(b, torch.Tensor):
            assert tuple(a.shape) == tuple(b.shape), f"{name}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
            assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1], \
                f"{name}: dtype {a.dtype} vs {b.dtype}"
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-12,
                                       equal_nan=True, err_msg=name)
        else:
            assert a == b, name


ALL = [(name, i) for name, cases in CASES.items() for i in range(len(cases))]


@pytest.mark.parametrize("name,i", ALL, ids=[f"{n}-{i}" for n, i in ALL])
def test_matches_torch(name, i):
    args, kwargs, grad = CASES[name][i]
    ia = [_to(ignis, a, grad) for a in args]
    ta = [_to(torch, a, grad) for a in args]
    ik, tk = _to(ignis, kwargs, False), _to(torch, kwargs, False)
    got = _get(ignis, name)(*ia, **ik)
    want = _get(torch, name)(*ta, **tk)
    _cmp(got, want, name)
    if type(want).__module__ == "torch.return_types":
        assert type(got).__name__ == type(want).__name__ and got._fields[:2] == ("values", "indices")
    # the Tensor method, where torch has one (repeat_interleave(repeats)
    # alone is no method call)
    if isinstance(args[0], np.ndarray) and hasattr(torch.Tensor, name) and \
            not (name == "repeat_interleave" and len(args) == 1):
        _cmp(getattr(ia[0], name)(*ia[1:], **ik), getattr(ta[0], name)(*ta[1:], **tk), name + " method")
    if not grad:
        return
    outs_i = [o for o in _flat(got) if isinstance(o, ignis.Tensor) and o.requires_grad]
    outs_t = [o for o in _flat(want) if isinstance(o, torch.Tensor) and o.requires_grad]
    assert len(outs_i) == len(outs_t) and outs_t, name
    ws = [RNG.standard_normal(tuple(o.shape)) for o in outs_t]
    sum((o * ignis.tensor(w)).sum() for o, w in zip(outs_i, ws)).backward()
    sum((o * torch.tensor(w)).sum() for o, w in zip(outs_t, ws)).backward()
    for a, b in zip(ia, ta):
        if isinstance(b, torch.Tensor) and b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=f"{name} gradient")


@pytest.mark.parametrize("call,match", [
    (lambda L: L.repeat_interleave(L.ones(3), L.tensor([1, 2])), "repeats must have the same size"),
    (lambda L: L.repeat_interleave(L.ones(3), -1), "Repeats must be non-negative"),
    (lambda L: L.diff(L.tensor(1.0)), "diff expects input to be at least one-dimensional"),
    (lambda L: L.trace(L.ones(3)), "trace"),
    (lambda L: L.cross(L.ones(2, 4), L.ones(2, 4), dim=1), "must have length 3"),
    (lambda L: L.kthvalue(L.ones(3), 4), "out of range"),
    (lambda L: L.bincount(L.tensor([-1, 2])), "non-negative"),
    (lambda L: L.quantile(L.ones(3), 1.5), r"q must be in the range \[0, 1\] but got 1.5"),
    (lambda L: L.rot90(L.ones(3, 3), 1, (0, 0)), "rotation dims to be different"),
    (lambda L: L.tensor_split(L.ones(3), 0), "number of sections must be larger than 0"),
    (lambda L: L.searchsorted(L.ones(2, 3), L.ones(3, 2)), "boundaries tensor"),
    (lambda L: L.cdist(L.ones(3, 2), L.ones(3, 4)), "same number of columns"),
    (lambda L: L.meshgrid(L.ones(2, 2), indexing="ij"), "Expected 0D or 1D tensor"),
    (lambda L: L.meshgrid(L.arange(2), L.ones(3), indexing="ij"), "same dtype"),
    (lambda L: L.cartesian_prod(L.arange(2), L.ones(3)), "same dtype"),
])
def test_errors_match_torch(call, match):
    with pytest.raises(Exception, match=match) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value), match=match):
        call(ignis)


@pytest.mark.parametrize("shape,wrap,transposed", [
    ((7, 3), True, False), ((7, 3), False, False), ((3, 5), False, False), ((8, 3), True, False),
    ((5, 2), True, True), ((2, 2, 2), False, False), ((3, 3, 3), False, True), ((0, 3), False, False),
], ids=str)
def test_fill_diagonal_matches_torch(shape, wrap, transposed):
    results = []
    for lib in (ignis, torch):
        a = lib.arange(float(np.prod(shape))).reshape(shape)
        if transposed:
            a = a.transpose(0, -1)
        assert a.fill_diagonal_(-1.0, wrap=wrap) is a
        results.append(a.numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("shape", [(3,), (2, 3, 2)], ids=str)
def test_fill_diagonal_bad_shapes_raise_like_torch(shape):
    with pytest.raises(RuntimeError) as et:
        torch.zeros(shape).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match=str(et.value)):
        ignis.zeros(shape).fill_diagonal_(1)


def test_finfo_and_iinfo_match_torch():
    for d in ("float16", "bfloat16", "float32", "float64"):
        a, b = ignis.finfo(getattr(ignis, d)), torch.finfo(getattr(torch, d))
        for f in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
            assert getattr(a, f) == getattr(b, f), (d, f)
    assert ignis.finfo().eps == torch.finfo().eps
    for d in ("uint8", "int8", "int16", "int32", "int64"):
        a, b = ignis.iinfo(getattr(ignis, d)), torch.iinfo(getattr(torch, d))
        assert (a.bits, a.min, a.max) == (b.bits, b.min, b.max), d
    for d in ("float16", "bfloat16", "float32", "float64"):
        assert repr(ignis.finfo(getattr(ignis, d))) == repr(torch.finfo(getattr(torch, d)))
    for d in ("uint8", "int8", "int16", "int32", "int64"):  # torch prints them with %g
        assert repr(ignis.iinfo(getattr(ignis, d))) == repr(torch.iinfo(getattr(torch, d)))
    with pytest.raises(TypeError):
        ignis.finfo(ignis.int32)
    with pytest.raises(TypeError):
        ignis.iinfo(ignis.float32)


def test_nan_to_num_in_place():
    x = ignis.tensor(SPECIAL)
    assert x.nan_to_num_(nan=2.0) is x
    np.testing.assert_array_equal(x.numpy(), torch.tensor(SPECIAL).nan_to_num_(nan=2.0).numpy())


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_gqa_style_code_compiles(backend):
    # Llama-style grouped-query attention: keys repeated per head group, an
    # additive mask from finfo.min, a median over the logits: one graph.
    def f(q, k):
        k = k.repeat_interleave(2, dim=1)
        s = ignis.einsum("bhqd,bhkd->bhqk", q, k)
        mask = ignis.full((4, 4), ignis.finfo(s.dtype).min).triu(1)
        return (s + mask).softmax(-1).median(dim=-1).values
    q = ignis.randn(2, 4, 4, 8, requires_grad=True)
    k = ignis.randn(2, 2, 4, 8, requires_grad=True)
    ignis.compiler.reset()
    got = ignis.compile(f, backend=backend)(q, k)
    got.sum().backward()
    gq, gk = q.grad.clone(), k.grad.clone()
    q.grad = k.grad = None
    want = f(q, k)
    want.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gq.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(gk.numpy(), k.grad.numpy(), rtol=1e-4, atol=1e-6)
    assert ignis.compiler.explain(f)(q, k).graph_break_count == 0
    ignis.compiler.reset()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_linalg_and_special_calls_stay_in_the_graph(backend):
    def f(x):
        n = ignis.linalg.vector_norm(x, dim=-1, keepdim=True)
        return ignis.special.expit(x / n) + ignis.linalg.matrix_norm(x)
    x = ignis.randn(3, 4, requires_grad=True)
    ignis.compiler.reset()
    got = ignis.compile(f, backend=backend)(x)
    got.sum().backward()
    g = x.grad.clone()
    x.grad = None
    want = f(x)
    want.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-7)
    ex = ignis.compiler.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0
    ignis.compiler.reset()

"""torch.nn.functional / torch.nn / torch.special additions against torch:
multi_head_attention_forward, fractional max pooling, the in-place
activations celu_ / selu_, NLLLoss2d, and the special functions added to
ignis.special (values, gradients and bad-input errors)."""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(3)


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _close(a, b, tol=1e-6):
    if a is None or b is None:
        assert a is None and b is None
        return
    assert tuple(a.shape) == tuple(b.shape), (tuple(a.shape), tuple(b.shape))
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def _pair(a, grad=False):
    """The same float64 array as an ignis and a torch tensor."""
    ti = ignis.tensor(a, dtype=ignis.float64)
    tt = torch.tensor(a, dtype=torch.float64)
    if grad:
        ti.requires_grad_(True)
        tt.requires_grad_(True)
    return ti, tt


# --- multi_head_attention_forward --------------------------------------------------

E, H, L, S, N = 8, 2, 3, 5, 2


def _mha_params(separate, bias, bias_kv):
    p = {"in_proj_weight": RNG.standard_normal((3 * E, E)) * 0.3,
         "in_proj_bias": RNG.standard_normal(3 * E) * 0.1 if bias else None,
         "out_proj_weight": RNG.standard_normal((E, E)) * 0.3,
         "out_proj_bias": RNG.standard_normal(E) * 0.1 if bias else None,
         "bias_k": RNG.standard_normal((1, 1, E)) if bias_kv else None,
         "bias_v": RNG.standard_normal((1, 1, E)) if bias_kv else None}
    if separate:
        p.update(q_proj_weight=RNG.standard_normal((E, E)) * 0.3,
                 k_proj_weight=RNG.standard_normal((E, 6)) * 0.3,
                 v_proj_weight=RNG.standard_normal((E, 4)) * 0.3)
        p["in_proj_weight"] = None
    return p


@pytest.mark.parametrize("separate", [False, True])
@pytest.mark.parametrize("bias_kv,zero_attn", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("masks", ["none", "bool", "float3d", "padding", "both"])
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_multi_head_attention_forward_matches_torch(separate, bias_kv, zero_attn, masks,
                                                   need_weights, average):
    params = _mha_params(separate, True, bias_kv)
    q = RNG.standard_normal((L, N, E))
    k = RNG.standard_normal((S, N, 6 if separate else E))
    v = RNG.standard_normal((S, N, 4 if separate else E))
    attn_mask = kpm = None
    if masks in ("bool", "both"):
        attn_mask = RNG.uniform(size=(L, S)) < 0.3
        attn_mask[:, 0] = False  # every row attends somewhere
    if masks == "float3d":
        attn_mask = RNG.standard_normal((N * H, L, S))
    if masks in ("padding", "both"):
        kpm = np.zeros((N, S), dtype=bool)
        kpm[0, -2:] = True
    results, grads = [], []
    for lib in (ignis, torch):
        leaves = {}

        def T(a, name=None):
            if a is None:
                return None
            if a.dtype == bool:
                return lib.tensor(a)
            t = lib.tensor(a, dtype=lib.float64)
            if name is not None:
                t.requires_grad_(True)
                leaves[name] = t
            return t

        P = {name: T(a, name) for name, a in params.items()}
        out, w = lib.nn.functional.multi_head_attention_forward(
            T(q, "q"), T(k, "k"), T(v, "v"), E, H, P["in_proj_weight"], P["in_proj_bias"],
            P["bias_k"], P["bias_v"], zero_attn, 0.0, P["out_proj_weight"], P["out_proj_bias"],
            training=True, key_padding_mask=T(kpm), need_weights=need_weights,
            attn_mask=T(attn_mask), use_separate_proj_weight=separate,
            q_proj_weight=P.get("q_proj_weight"), k_proj_weight=P.get("k_proj_weight"),
            v_proj_weight=P.get("v_proj_weight"), average_attn_weights=average)
        results.append((out, w))
        (out.sum() + (0 if w is None else (w * w).sum())).backward()
        grads.append({n: t.grad for n, t in leaves.items()})
    (oi, wi), (ot, wt) = results
    _close(oi, ot, 1e-10)
    _close(wi, wt, 1e-10)
    assert grads[0].keys() == grads[1].keys()
    for name in grads[1]:
        _close(grads[0][name], grads[1][name], 1e-9)


def test_multi_head_attention_forward_self_attention_unbatched_static_kv_and_causal():
    params = _mha_params(False, True, False)
    x = RNG.standard_normal((L, E))
    static = RNG.standard_normal((H, 4, E // H))
    causal = np.triu(np.ones((L, L), dtype=bool), 1)
    outs = []
    for lib in (ignis, torch):
        P = {n: (None if a is None else lib.tensor(a, dtype=lib.float64))
             for n, a in params.items()}
        xt = lib.tensor(x, dtype=lib.float64)
        args = (E, H, P["in_proj_weight"], P["in_proj_bias"], None, None, False, 0.0,
                P["out_proj_weight"], P["out_proj_bias"])
        self_attn = lib.nn.functional.multi_head_attention_forward(xt, xt, xt, *args)
        st = lib.tensor(static, dtype=lib.float64)
        with_static = lib.nn.functional.multi_head_attention_forward(
            xt, xt, xt, *args, static_k=st, static_v=st * 2)
        mask = lib.tensor(causal)
        causal_nw = lib.nn.functional.multi_head_attention_forward(
            xt, xt, xt, *args, attn_mask=mask, is_causal=True, need_weights=False)
        causal_w = lib.nn.functional.multi_head_attention_forward(
            xt, xt, xt, *args, attn_mask=mask, is_causal=True, need_weights=True)
        outs.append([self_attn, with_static, causal_nw, causal_w])
    for (oi, wi), (ot, wt) in zip(*outs):
        _close(oi, ot, 1e-10)
        _close(wi, wt, 1e-10)


def test_multi_head_attention_forward_bad_input():
    params = _mha_params(False, True, False)
    for lib in (ignis, torch):
        P = {n: (None if a is None else lib.tensor(a, dtype=lib.float64))
             for n, a in params.items()}
        args = (H, P["in_proj_weight"], P["in_proj_bias"], None, None, False, 0.0,
                P["out_proj_weight"], P["out_proj_bias"])
        q = lib.zeros((L, N, E), dtype=lib.float64)
        k = lib.zeros((S, N, E), dtype=lib.float64)
        F_ = lib.nn.functional
        with pytest.raises(AssertionError, match="was expecting embedding dimension of 6"):
            F_.multi_head_attention_forward(q, k, k, 6, *args)
        with pytest.raises(AssertionError):
            F_.multi_head_attention_forward(q, k[:, :, :4], k, E, *args)
        with pytest.raises(AssertionError):
            F_.multi_head_attention_forward(q[0], k, k, E, *args)  # 2-D query, 3-D key
        with pytest.raises(RuntimeError, match="Need attn_mask"):
            F_.multi_head_attention_forward(q, k, k, E, *args, is_causal=True)
        with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask"):
            F_.multi_head_attention_forward(q, k, k, E, *args,
                                            attn_mask=lib.zeros((L, L), dtype=lib.bool))
        with pytest.raises(AssertionError, match="only bool and floating types"):
            F_.multi_head_attention_forward(q, k, k, E, *args,
                                            attn_mask=lib.zeros((L, S), dtype=lib.int64))
        with pytest.raises(AssertionError):
            F_.multi_head_attention_forward(q, k, k, E, *args,
                                            key_padding_mask=lib.zeros((N, L), dtype=lib.bool))


def test_multihead_attention_module_is_the_functional():
    """nn.MultiheadAttention (batch_first, kdim/vdim) and the functional on
    its parameters give the same result."""
    ignis.manual_seed(0)
    m = ignis.nn.MultiheadAttention(E, H, batch_first=True, kdim=6, vdim=4).double()
    q = ignis.tensor(RNG.standard_normal((N, L, E)))
    k = ignis.tensor(RNG.standard_normal((N, S, 6)))
    v = ignis.tensor(RNG.standard_normal((N, S, 4)))
    out, w = m(q, k, v)
    out_f, w_f = F.multi_head_attention_forward(
        q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), E, H, None, m.in_proj_bias,
        None, None, False, 0.0, m.out_proj.weight, m.out_proj.bias,
        use_separate_proj_weight=True, q_proj_weight=m.q_proj_weight,
        k_proj_weight=m.k_proj_weight, v_proj_weight=m.v_proj_weight)
    _close(out, out_f.transpose(0, 1), 1e-12)
    _close(w, w_f, 1e-12)


# --- fractional max pooling ---------------------------------------------------------

@pytest.mark.parametrize("nd,shape,kernel,out", [
    (2, (2, 3, 9, 11), 2, (4, 5)), (2, (2, 3, 9, 11), (3, 2), (5, 9)),
    (2, (3, 7, 8), 3, 1), (2, (1, 2, 6, 6), 1, (6, 6)),
    (3, (2, 2, 7, 8, 9), 2, (3, 4, 5)), (3, (2, 6, 7, 5), (2, 3, 1), (4, 2, 4))])
def test_fractional_max_pool_matches_torch(nd, shape, kernel, out):
    x = RNG.standard_normal(shape)
    batched = len(shape) == nd + 2
    samples = RNG.uniform(size=((shape[0] if batched else 1), shape[-nd - 1], nd))
    results = []
    for lib in (ignis, torch):
        xi = lib.tensor(x, dtype=lib.float64, requires_grad=True)
        fn = getattr(lib.nn.functional, f"fractional_max_pool{nd}d")
        y, idx = fn(xi, kernel, output_size=out, return_indices=True,
                    _random_samples=lib.tensor(samples, dtype=lib.float64))
        (y * lib.arange(y.numel(), dtype=lib.float64).reshape(y.shape)).sum().backward()
        results.append((y, idx, xi.grad))
    (yi, ii, gi), (yt, it, gt) = results
    _close(yi, yt, 0)
    assert ii.dtype == ignis.int64
    np.testing.assert_array_equal(_np(ii), it.numpy())
    _close(gi, gt, 0)


def test_fractional_max_pool_output_ratio_random_samples_and_modules():
    x = RNG.standard_normal((2, 3, 10, 12))
    xi = ignis.tensor(x)
    # output_ratio sizes the output as int(size * ratio)
    y = F.fractional_max_pool2d(xi, 2, output_ratio=(0.5, 0.75))
    assert tuple(y.shape) == (2, 3, 5, 9)
    # drawn windows: every output is the max of some 2x2 window of its plane
    ignis.manual_seed(0)
    y, idx = F.fractional_max_pool2d(xi, 2, output_size=4, return_indices=True)
    flat = xi.reshape(2, 3, -1)
    _close(flat.gather(2, idx.reshape(2, 3, -1)).reshape(y.shape), y, 0)
    m = ignis.nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)
    assert m.output_ratio == (0.5, 0.5) and m.kernel_size == (3, 3)
    out, ind = m(xi)
    assert tuple(out.shape) == (2, 3, 5, 6) and tuple(ind.shape) == (2, 3, 5, 6)
    samples = RNG.uniform(size=(1, 2, 3))
    m3i = ignis.nn.FractionalMaxPool3d(2, output_size=(2, 3, 3),
                                       _random_samples=ignis.tensor(samples))
    m3t = torch.nn.FractionalMaxPool3d(2, output_size=(2, 3, 3),
                                       _random_samples=torch.tensor(samples))
    x3 = RNG.standard_normal((1, 2, 5, 6, 7))
    _close(m3i(ignis.tensor(x3)), m3t(torch.tensor(x3)), 0)
    assert repr(m3i) == repr(m3t)


def test_fractional_max_pool_bad_input():
    for lib in (ignis, torch):
        x = lib.zeros((2, 3, 7, 9))
        F_ = lib.nn.functional
        with pytest.raises(ValueError, match="requires specifying either an output_size"):
            F_.fractional_max_pool2d(x, 2)
        with pytest.raises(RuntimeError, match="pool height 5 too large relative to input "
                                               "height 7"):
            F_.fractional_max_pool2d(x, 5, output_size=4)
        with pytest.raises(RuntimeError, match="too large relative to input"):
            F_.fractional_max_pool2d(x, 2, output_size=(8, 3))
        with pytest.raises(RuntimeError, match=r"_random_samples.size\(2\) equals to 2"):
            F_.fractional_max_pool2d(x, 2, output_size=3, _random_samples=lib.rand(2, 3, 3))
        with pytest.raises(ValueError, match="requires specifying either an output size"):
            lib.nn.FractionalMaxPool2d(2)
        with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
            lib.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)
        with pytest.raises(ValueError, match=r"output_ratio must be between 0 and 1 \(got 1.5\)"):
            lib.nn.FractionalMaxPool3d(2, output_ratio=1.5)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        F.fractional_max_pool2d(ignis.zeros(7, 9), 2, output_size=3)
    with pytest.raises(RuntimeError, match="kernel_size must be greater than zero"):
        F.fractional_max_pool2d(ignis.zeros(1, 7, 9), 0, output_size=3)


# --- in-place activations, NLLLoss2d -------------------------------------------------

def test_celu_and_selu_in_place():
    x = RNG.standard_normal((4, 5)) * 3
    for name, args in (("celu_", (0.7,)), ("selu_", ())):
        xi, xt = _pair(x)
        ri = getattr(F, name)(xi, *args)
        rt = getattr(TF, name)(xt, *args)
        assert ri is xi
        _close(xi, xt, 1e-12)
        _close(ri, rt, 1e-12)
    # through autograd: the in-place form on a non-leaf
    ai, at = _pair(x, grad=True)
    F.celu_(ai * 1.0, 0.5).sum().backward()
    TF.celu_(at * 1.0, 0.5).sum().backward()
    _close(ai.grad, at.grad, 1e-12)


def test_nll_loss2d_is_nll_loss():
    x = RNG.standard_normal((2, 4, 3, 3))
    target = RNG.integers(0, 4, (2, 3, 3))
    weight = RNG.uniform(0.5, 2, 4)
    with pytest.warns(FutureWarning):
        li = ignis.nn.NLLLoss2d(weight=ignis.tensor(weight), ignore_index=1)
    with pytest.warns(FutureWarning):
        lt = torch.nn.NLLLoss2d(weight=torch.tensor(weight), ignore_index=1)
    assert isinstance(li, ignis.nn.NLLLoss)
    _close(li(ignis.tensor(x), ignis.tensor(target)), lt(torch.tensor(x), torch.tensor(target)),
           1e-12)


# --- torch.special additions ----------------------------------------------------------

def test_gammainc_gammaincc_match_torch_including_edges():
    a = np.array([0.0, 0.0, 1.0, -1.0, 2.0, 2.0, np.inf, 2.0, np.nan, 0.5, 30.0, 3.0, 0.05,
                  7.0, 300.0, 2.5])
    x = np.array([1.0, 0.0, 0.0, 1.0, -1.0, np.inf, 3.0, np.nan, 1.0, 0.2, 31.0, 40.0, 1e-4,
                  12.0, 330.0, 2.5])
    for name in ("gammainc", "gammaincc"):
        got = getattr(ignis.special, name)(*_pair(a)[:1], _pair(x)[0])
        want = getattr(torch.special, name)(torch.tensor(a), torch.tensor(x))
        # torch's series is good to ~1e-9 in the hard cases; ours to ~1e-14
        _close(got, want, 1e-8)
    # torch.igamma / igammac and the Tensor methods, in float32 broadcast
    ai, at = _pair(RNG.uniform(0.5, 5, (3, 1)))
    xi, xt = _pair(RNG.uniform(0.1, 6, (4,)))
    _close(ignis.igamma(ai, xi), torch.igamma(at, xt), 1e-10)
    _close(ai.igammac(xi), at.igammac(xt), 1e-10)
    ci, ct = ai.expand(3, 4).clone(), at.expand(3, 4).clone()
    assert ci.igamma_(xi) is ci
    ct.igamma_(xt)
    _close(ci, ct, 1e-10)
    # Q is computed directly: P = 1 - 1e-30 leaves Q's digits
    q = ignis.special.gammaincc(ignis.tensor([2.0], dtype=ignis.float64),
                                ignis.tensor([80.0], dtype=ignis.float64)).item()
    assert abs(q / (81 * np.exp(-80.0)) - 1) < 1e-12


def test_gammainc_gradients():
    ai, at = _pair(RNG.uniform(0.5, 5, 6), grad=True)
    xi, xt = _pair(RNG.uniform(0.1, 6, 6), grad=True)
    for name, sign in (("gammainc", 1), ("gammaincc", -1)):
        ai.grad = xi.grad = None
        xt.grad = None
        getattr(ignis.special, name)(ai, xi).sum().backward()
        getattr(torch.special, name)(at.detach(), xt).sum().backward()
        _close(xi.grad, xt.grad, 1e-9)
        # in a (torch has no derivative): against a central difference
        h = 1e-6
        plus = getattr(ignis.special, name)(ai.detach() + h, xi.detach())
        minus = getattr(ignis.special, name)(ai.detach() - h, xi.detach())
        _close(ai.grad, (plus - minus) / (2 * h), 1e-6)


def test_ndtri_matches_torch_with_accurate_tails_and_gradient():
    p = np.array([0.0, 1e-300, 1e-100, 1e-20, 1e-5, 0.3, 0.5, 0.7, 1 - 1e-10, 1.0, 1.5, -0.1,
                  np.nan])
    got, want = ignis.special.ndtri(_pair(p)[0]), torch.special.ndtri(torch.tensor(p))
    _close(got, want, 1e-12)
    # ndtr(ndtri(p)) = p, relatively, far into the lower tail
    back = ignis.special.ndtr(got[1:5])
    np.testing.assert_allclose(_np(back), p[1:5], rtol=1e-12)
    pi, pt = _pair(np.array([0.01, 0.3, 0.5, 0.9]), grad=True)
    ignis.special.ndtri(pi).sum().backward()
    torch.special.ndtri(pt).sum().backward()
    _close(pi.grad, pt.grad, 1e-10)
    assert ignis.special.ndtri(ignis.tensor([0.25])).dtype == ignis.float32


def test_erfcx_matches_torch_everywhere_and_gradient():
    x = np.array([-30.0, -5.0, -1.0, 0.0, 1.0, 5.0, 9.99, 10.0, 12.0, 30.0, 1e10, np.inf, -np.inf,
                  np.nan])
    got, want = ignis.special.erfcx(_pair(x)[0]), torch.special.erfcx(torch.tensor(x))
    np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-13, atol=0)
    xi, xt = _pair(np.array([-2.0, 0.3, 4.0, 9.0, 11.0, 50.0]), grad=True)
    ignis.special.erfcx(xi).sum().backward()
    torch.special.erfcx(xt).sum().backward()
    _close(xi.grad, xt.grad, 1e-10)


def test_zeta_matches_torch_and_q_gradient():
    x = np.array([2.0, 1.0, 0.5, 3.0, 3.0, 3.0, 1.5, 20.0, 4.5, 2.0, 1.0001, 60.0])
    q = np.array([1.0, 1.0, 1.0, -2.0, -1.5, 0.0, 0.3, 2.0, 10.0, -7.25, 1.0, 1.5])
    got = ignis.special.zeta(_pair(x)[0], _pair(q)[0])
    want = torch.special.zeta(torch.tensor(x), torch.tensor(q))
    _close(got, want, 1e-12)
    # numbers as either argument, broadcasting
    _close(ignis.special.zeta(2.0, _pair(np.array([[1.0], [2.0]]))[0]),
           torch.special.zeta(2.0, torch.tensor([[1.0], [2.0]], dtype=torch.float64)), 1e-13)
    qi = ignis.tensor([0.5, 2.0, 7.0], dtype=ignis.float64, requires_grad=True)
    ignis.special.zeta(ignis.tensor(3.0, dtype=ignis.float64), qi).sum().backward()
    want_grad = -3 * torch.special.zeta(torch.tensor(4.0, dtype=torch.float64),
                                        torch.tensor([0.5, 2.0, 7.0], dtype=torch.float64))
    _close(qi.grad, want_grad, 1e-12)
    xi = ignis.tensor(3.0, requires_grad=True)
    with pytest.raises(NotImplementedError):
        ignis.special.zeta(xi, 2.0).backward()


POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_orthogonal_polynomials_match_torch(name):
    x = np.concatenate([np.linspace(-1.5, 1.5, 13), [0.0, 1.0, -1.0, 2.5]])
    fi, ft = getattr(ignis.special, name), getattr(torch.special, name)
    for n in (-1, 0, 1, 2, 3, 5, 8, 12, 25):
        got, want = fi(_pair(x)[0], n), ft(torch.tensor(x), n)
        scale = np.maximum(1.0, np.abs(want.numpy()))
        np.testing.assert_allclose(_np(got) / scale, want.numpy() / scale, atol=1e-13)
    # n as a tensor, elementwise and broadcast; a float n is truncated
    n = np.array([[0.0], [2.5], [4.0], [-3.0]])
    _close(fi(_pair(x[:5])[0], ignis.tensor(n)), ft(torch.tensor(x[:5]), torch.tensor(n)), 1e-12)
    # integer input computes in the default dtype
    assert str(fi(ignis.tensor([1, 2]), 3).dtype).split(".")[-1] == \
        str(ft(torch.tensor([1, 2]), 3).dtype).split(".")[-1]
    with pytest.raises(TypeError):
        fi(0.5, 3)


def test_polynomial_gradient_is_the_derivative():
    # d/dx T_n(x) = n U_(n-1)(x); d/dx He_n = n He_(n-1)
    xi = ignis.tensor(np.linspace(-0.9, 0.9, 7), requires_grad=True)
    ignis.special.chebyshev_polynomial_t(xi, 5).sum().backward()
    _close(xi.grad, 5 * torch.special.chebyshev_polynomial_u(torch.tensor(_np(xi)), 4), 1e-12)
    xi.grad = None
    ignis.special.hermite_polynomial_he(xi, 4).sum().backward()
    _close(xi.grad, 4 * torch.special.hermite_polynomial_he(torch.tensor(_np(xi)), 3), 1e-12)


def test_spherical_and_modified_bessel():
    x = np.array([0.0, 1e-7, 1e-3, 0.5, 3.0, -2.0, 100.0, 1e-4])
    for name in ("spherical_bessel_j0", "modified_bessel_i0", "modified_bessel_i1"):
        got = getattr(ignis.special, name)(_pair(x)[0])
        want = getattr(torch.special, name)(torch.tensor(x))
        np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-14, atol=1e-300)
    xi, xt = _pair(np.array([1e-4, 0.5, 3.0]), grad=True)
    ignis.special.spherical_bessel_j0(xi).sum().backward()
    # d/dx sin(x)/x = cos(x)/x - sin(x)/x^2
    xs = xt.detach()
    _close(xi.grad, (xs.cos() / xs - xs.sin() / xs ** 2), 1e-9)


def test_top_level_in_place_and_fill():
    for name, args in (("sinc_", ()), ("logit_", (1e-3,)), ("deg2rad_", ()), ("rad2deg_", ()),
                       ("nan_to_num_", (0.0, 5.0, -5.0)), ("xlogy_", (2.0,)), ("ldexp_", None)):
        x = np.array([0.2, 0.5, np.nan, np.inf, 0.9])
        xi, xt = _pair(x)
        if args is None:
            args_i, args_t = (ignis.tensor([1, 2, 0, 1, 3]),), (torch.tensor([1, 2, 0, 1, 3]),)
        else:
            args_i = args_t = args
        ri, rt = getattr(ignis, name)(xi, *args_i), getattr(torch, name)(xt, *args_t)
        assert ri is xi
        np.testing.assert_allclose(_np(xi), xt.numpy(), rtol=1e-12, equal_nan=True)
    a = ignis.ones(3, requires_grad=True) * 2
    ignis.detach_(a)
    assert not a.requires_grad and a.grad_fn is None
    xi, xt = ignis.tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    _close(ignis.fill(xi, 2.5), torch.fill(xt, 2.5), 0)
    vi = ignis.tensor(4.0, requires_grad=True)
    ignis.fill(ignis.zeros(3), vi).sum().backward()
    assert vi.grad.item() == 3.0
    for lib in (ignis, torch):
        with pytest.raises(RuntimeError, match="0-dimension value tensor"):
            lib.fill(lib.zeros(3), lib.ones(2))


# --- linalg.householder_product / orgqr ------------------------------------------------

@pytest.mark.parametrize("shape,k", [((5, 3), 3), ((4, 4), 2), ((2, 6, 4), 4), ((3, 1), 1),
                                     ((2, 3, 5, 2), 0)])
def test_householder_product_matches_torch(shape, k):
    a = RNG.standard_normal(shape)
    reflectors, tau = torch.geqrf(torch.tensor(a))
    tau = tau[..., :k].contiguous()
    Ai, At = _pair(reflectors.numpy(), grad=True)
    ti, tt = _pair(tau.numpy(), grad=True)
    qi, qt = ignis.linalg.householder_product(Ai, ti), torch.linalg.householder_product(At, tt)
    _close(qi, qt, 1e-12)
    w = RNG.standard_normal(tuple(qt.shape))
    (qi * ignis.tensor(w)).sum().backward()
    (qt * torch.tensor(w)).sum().backward()
    _close(Ai.grad, At.grad, 1e-10)
    if k:  # (no reflectors: torch leaves the empty tau's grad None, ignis an empty one)
        _close(ti.grad, tt.grad, 1e-10)
    _close(ignis.orgqr(Ai.detach(), ti.detach()), qt, 1e-12)
    _close(Ai.detach().orgqr(ti.detach()), qt, 1e-12)


def test_householder_product_gives_qr_q_and_rejects_bad_input():
    a = RNG.standard_normal((6, 4))
    reflectors, tau = torch.geqrf(torch.tensor(a))
    q = ignis.linalg.householder_product(ignis.tensor(reflectors.numpy()),
                                         ignis.tensor(tau.numpy()))
    _close(q.mT @ q, ignis.eye(4, dtype=ignis.float64), 1e-12)
    _close(q @ ignis.tensor(np.triu(reflectors.numpy()[:4])), ignis.tensor(a), 1e-12)
    bad = [((3,), (1,)), ((2, 3), (1,)), ((3, 2), (3,)), ((3, 2), (2, 1)), ((2, 3, 2), (3, 2))]
    for lib in (ignis, torch):
        for a_shape, t_shape in bad:
            with pytest.raises(RuntimeError, match="householder_product"):
                lib.linalg.householder_product(lib.zeros(a_shape), lib.zeros(t_shape))
        with pytest.raises(RuntimeError, match="tau dtype Double does not match input dtype "
                                               "Float"):
            lib.linalg.householder_product(lib.zeros(3, 2), lib.zeros(2, dtype=lib.float64))


# --- AdaptiveLogSoftmaxWithLoss -------------------------------------------------------

def _adaptive_pair(head_bias):
    torch.manual_seed(0)
    mt = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0,
                                             head_bias=head_bias).double()
    mi = ignis.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0,
                                             head_bias=head_bias).double()
    mi.load_state_dict({k: ignis.tensor(v.numpy()) for k, v in mt.state_dict().items()})
    return mi, mt


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_matches_torch(head_bias):
    mi, mt = _adaptive_pair(head_bias)
    assert sorted(mi.state_dict()) == sorted(mt.state_dict())
    assert all(tuple(mi.state_dict()[k].shape) == tuple(v.shape)
               for k, v in mt.state_dict().items())
    x = RNG.standard_normal((7, 16))
    target = np.array([0, 3, 4, 8, 9, 14, 19])
    xi, xt = _pair(x, grad=True)
    oi, ot = mi(xi, ignis.tensor(target)), mt(xt, torch.tensor(target))
    _close(oi.output, ot.output, 1e-12)
    _close(oi.loss, ot.loss, 1e-12)
    oi.loss.backward()
    ot.loss.backward()
    _close(xi.grad, xt.grad, 1e-12)
    for (name, p), (_, q) in zip(mi.named_parameters(), mt.named_parameters()):
        _close(p.grad, q.grad, 1e-12)
    _close(mi.log_prob(xi.detach()), mt.log_prob(xt.detach()), 1e-12)
    np.testing.assert_array_equal(_np(mi.predict(xi.detach())), mt.predict(xt.detach()).numpy())
    # unbatched
    ui, ut = mi(xi.detach()[2], ignis.tensor(target[2])), mt(xt.detach()[2],
                                                             torch.tensor(target[2]))
    _close(ui.output, ut.output, 1e-12)
    # (torch's log_prob fails on one unbatched example; ignis's gives its row)
    _close(mi.log_prob(xi.detach()[0]), mt.log_prob(xt.detach()[:1])[0], 1e-12)


def test_adaptive_log_softmax_bad_input():
    for lib in (ignis, torch):
        for cutoffs in ([5, 3], [0, 4], [4, 20], [4, 4], []):
            with pytest.raises(ValueError):
                lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs)
        m = lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 10])
        with pytest.raises(RuntimeError, match="Target values should be in"):
            m(lib.zeros(2, 8), lib.tensor([1, 20]))
        with pytest.raises(RuntimeError, match="same size in the batch dimension"):
            m(lib.zeros(3, 8), lib.tensor([1, 2]))
        with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
            m(lib.zeros(2, 8), lib.zeros(2, 1, dtype=lib.int64))
        with pytest.raises(RuntimeError, match="0D target tensor expects 1D input"):
            m(lib.zeros(2, 8), lib.tensor(1))


# --- small top-level / Tensor / nn.utils additions ------------------------------------

def test_binomial_sampling_statistics_edges_and_errors():
    ignis.manual_seed(0)
    count = ignis.tensor([[5.0], [40.0]]).expand(2, 20000)
    prob = ignis.tensor([[0.3], [0.75]]).expand(2, 20000)
    draws = _np(ignis.binomial(count, prob))
    assert draws.dtype == np.float32 and np.all(draws == np.floor(draws))
    mean, var = np.array([1.5, 30.0]), np.array([1.05, 7.5])
    assert np.all(np.abs(draws.mean(1) - mean) < 5 * np.sqrt(var / 20000))
    assert np.all((draws >= 0).all(1)) and draws[0].max() <= 5 and draws[1].max() <= 40
    # as torch: count <= 0 gives 0, prob > 1 every trial, broadcasting
    edge = ignis.binomial(ignis.tensor([-1.0, 3.0, 0.0], dtype=ignis.float64),
                          ignis.tensor([0.5, 1.5, 0.5], dtype=ignis.float64))
    want = torch.binomial(torch.tensor([-1.0, 3.0, 0.0], dtype=torch.float64),
                          torch.tensor([0.5, 1.5, 0.5], dtype=torch.float64))
    _close(edge, want, 0)
    assert tuple(ignis.binomial(ignis.tensor([5.0, 3.0]), ignis.tensor([0.5])).shape) == (2,)
    ignis.manual_seed(3)
    a = ignis.binomial(ignis.full((50,), 10.0), ignis.full((50,), 0.5))
    ignis.manual_seed(3)
    _close(a, ignis.binomial(ignis.full((50,), 10.0), ignis.full((50,), 0.5)), 0)
    for lib in (ignis, torch):
        with pytest.raises(ValueError, match="binomial only supports floating-point dtypes "
                                             "for count, got: Long"):
            lib.binomial(lib.tensor([5]), lib.tensor([0.5]))


def test_new_empty_strided_and_resize_as():
    for lib in (ignis, torch):
        x = lib.ones(2, dtype=lib.float64)
        y = x.new_empty_strided((2, 3), (1, 2))
        assert tuple(y.shape) == (2, 3) and tuple(y.stride()) == (1, 2)
        assert str(y.dtype).endswith("float64")
        z = x.new_empty_strided((4,), (1,), dtype=lib.int32, requires_grad=False)
        assert str(z.dtype).endswith("int32")
        w = lib.zeros(5)
        assert w.resize_as_(lib.ones(2, 2)) is w
        assert tuple(w.shape) == (2, 2)


def test_skip_init_to_empty_and_clip_grad_norm_alias():
    m = ignis.nn.utils.skip_init(ignis.nn.Linear, 3, 4, bias=True)
    assert isinstance(m, ignis.nn.Linear)
    assert tuple(m.weight.shape) == (4, 3) and str(m.weight.device) == "cpu"
    assert isinstance(m.weight, ignis.nn.Parameter) and m.weight.requires_grad
    meta = ignis.nn.Linear(2, 2, device="meta")
    assert meta.to_empty(device="cpu") is meta and str(meta.bias.device) == "cpu"
    for lib in (ignis, torch):
        with pytest.raises(RuntimeError, match="Expected a Module"):
            lib.nn.utils.skip_init(int)

        class NoDevice(lib.nn.Module):
            def __init__(self, n):
                super().__init__()

        with pytest.raises(RuntimeError, match="must support a 'device' arg"):
            lib.nn.utils.skip_init(NoDevice, 3)
    p = ignis.nn.Parameter(ignis.ones(4))
    p.grad = ignis.full((4,), 3.0)
    with pytest.warns(FutureWarning):
        norm = ignis.nn.utils.clip_grad_norm([p], 1.0)
    assert abs(norm.item() - 6.0) < 1e-6
    assert abs(p.grad.norm().item() - 1.0) < 1e-5

"""F.interpolate / nn.Upsample and pixel (un)shuffle (nn/_upsampling.py)
against torch: nearest, nearest-exact, linear, bilinear and bicubic
(align_corners both ways), trilinear and area, by size and by scale_factor,
values and input gradients; PixelShuffle/PixelUnshuffle round trips; bad arguments
raise torch's exception type.
"""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn.functional as IF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402


def _compare(fn, shape, kw, dtype="float64", tol=1e-10):
    a = np.random.default_rng(0).standard_normal(shape)
    xi = ignis.from_numpy(a.copy()).to(getattr(ignis, dtype)).requires_grad_()
    xt = torch.from_numpy(a.copy()).to(getattr(torch, dtype)).requires_grad_()
    yi, yt = getattr(IF, fn)(xi, **kw), getattr(TF, fn)(xt, **kw)
    assert tuple(yi.shape) == tuple(yt.shape)
    np.testing.assert_allclose(yi.detach().to(ignis.float64).numpy(),
                               yt.detach().double().numpy(), rtol=tol, atol=tol)
    g = np.random.default_rng(1).standard_normal(tuple(yt.shape))
    yi.backward(ignis.from_numpy(g.copy()).to(yi.dtype))
    yt.backward(torch.from_numpy(g.copy()).to(yt.dtype))
    np.testing.assert_allclose(xi.grad.to(ignis.float64).numpy(), xt.grad.double().numpy(),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("kw,shape", [
    ({"scale_factor": 2}, (2, 3, 4, 5)),
    ({"scale_factor": 3, "mode": "nearest"}, (2, 3, 7)),
    ({"size": (7, 9)}, (2, 3, 4, 5)),
    ({"size": (3, 2)}, (2, 3, 7, 5)),
    ({"scale_factor": 1.7}, (1, 2, 5, 6)),
    ({"size": (7, 9), "mode": "nearest-exact"}, (2, 3, 4, 5)),
    ({"scale_factor": 2, "mode": "bilinear"}, (2, 3, 4, 5)),
    ({"scale_factor": 2, "mode": "bilinear", "align_corners": True}, (2, 3, 4, 5)),
    ({"size": (3, 11), "mode": "bilinear"}, (2, 3, 6, 5)),
    ({"size": (3, 11), "mode": "bilinear", "align_corners": True}, (2, 3, 6, 5)),
    ({"scale_factor": 1.5, "mode": "linear"}, (2, 3, 7)),
    ({"size": 4, "mode": "linear", "align_corners": True}, (2, 3, 7)),
    ({"scale_factor": 2, "mode": "trilinear"}, (1, 2, 3, 4, 3)),
    ({"size": (2, 3), "mode": "area"}, (2, 3, 6, 7)),
    ({"scale_factor": 2, "mode": "bicubic"}, (2, 3, 4, 5)),
    ({"scale_factor": 2, "mode": "bicubic", "align_corners": True}, (2, 3, 4, 5)),
    ({"size": (3, 11), "mode": "bicubic"}, (2, 3, 6, 5)),
    ({"size": (2, 1), "mode": "bicubic", "align_corners": True}, (1, 2, 9, 3)),
    ({"scale_factor": (0.3, 1.7), "mode": "bicubic"}, (1, 2, 9, 4)),
], ids=str)
def test_interpolate_matches_torch(kw, shape):
    _compare("interpolate", shape, kw)


def test_interpolate_float32():
    _compare("interpolate", (2, 3, 5, 6), {"scale_factor": 2, "mode": "bilinear"}, "float32",
             1e-5)
    _compare("interpolate", (2, 3, 5, 6), {"size": (11, 13)}, "float32", 1e-6)


@pytest.mark.parametrize("kw", [
    {"scale_factor": 2, "size": 4}, {}, {"size": 4, "mode": "nearest", "align_corners": True},
    {"size": 4, "mode": "linear"}, {"size": (4, 4, 4)},
], ids=str)
def test_interpolate_bad_arguments_raise_like_torch(kw):
    _raises_like_torch((1, 2, 4, 4), kw)


@pytest.mark.parametrize("shape", [(1, 2, 4), (1, 2, 4, 4, 4)], ids=str)
def test_interpolate_bicubic_needs_4d_input_like_torch(shape):
    _raises_like_torch(shape, {"scale_factor": 2, "mode": "bicubic"})


def _raises_like_torch(shape, kw):
    a = np.zeros(shape)
    with pytest.raises(Exception) as et:
        TF.interpolate(torch.from_numpy(a), **kw)
    with pytest.raises(Exception) as ei:
        IF.interpolate(ignis.from_numpy(a), **kw)
    assert type(ei.value).__name__ == type(et.value).__name__, (ei.value, et.value)


def test_upsample_modules():
    a = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    for args, kw in [((), {"scale_factor": 2}), ((), {"size": (6, 7), "mode": "bilinear"})]:
        mi, mt = ignis.nn.Upsample(*args, **kw), torch.nn.Upsample(*args, **kw)
        assert repr(mi) == repr(mt)
        np.testing.assert_allclose(mi(ignis.from_numpy(a)).numpy(),
                                   mt(torch.from_numpy(a)).numpy(), rtol=1e-12)
    for name in ("UpsamplingNearest2d", "UpsamplingBilinear2d"):
        mi, mt = getattr(ignis.nn, name)(scale_factor=2), getattr(torch.nn, name)(scale_factor=2)
        np.testing.assert_allclose(mi(ignis.from_numpy(a)).numpy(),
                                   mt(torch.from_numpy(a)).numpy(), rtol=1e-12)


@pytest.mark.parametrize("name,kw", [("upsample_nearest", {"scale_factor": 2}),
                                     ("upsample_bilinear", {"size": (5, 7)}),
                                     ("upsample_bilinear", {"scale_factor": 1.5})], ids=str)
def test_deprecated_upsample_spellings_match_torch(name, kw):
    # F.upsample_nearest / F.upsample_bilinear (align_corners=True), with torch's warning.
    a = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    with pytest.warns(UserWarning, match="deprecated"):
        yi = getattr(IF, name)(ignis.from_numpy(a), **kw)
    with pytest.warns(UserWarning, match="deprecated"):
        yt = getattr(TF, name)(torch.from_numpy(a), **kw)
    np.testing.assert_allclose(yi.numpy(), yt.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape,r", [((2, 8, 3, 4), 2), ((18, 2, 3), 3), ((2, 2, 4, 3, 5), 2)],
                         ids=str)
def test_pixel_shuffle(shape, r):
    _compare("pixel_shuffle", shape, {"upscale_factor": r})
    out = shape[:-3] + (shape[-3] // (r * r), shape[-2] * r, shape[-1] * r)
    _compare("pixel_unshuffle", out, {"downscale_factor": r})
    mi, mt = ignis.nn.PixelShuffle(r), torch.nn.PixelShuffle(r)
    assert repr(mi) == repr(mt)


@pytest.mark.parametrize("fn,shape,r", [("pixel_shuffle", (1, 6, 2, 2), 2),
                                        ("pixel_unshuffle", (1, 2, 3, 4), 2),
                                        ("pixel_shuffle", (4, 4), 2)], ids=str)
def test_pixel_shuffle_bad_input_raises_like_torch(fn, shape, r):
    with pytest.raises(Exception) as et:
        getattr(TF, fn)(torch.zeros(shape), r)
    with pytest.raises(Exception) as ei:
        getattr(IF, fn)(ignis.zeros(shape), r)
    assert type(ei.value).__name__ == type(et.value).__name__

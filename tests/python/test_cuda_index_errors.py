"""Index errors found on the GPU (Note [Index errors on the GPU],
src/ignis/cuda/kernel_errors.h).

CUDA indices are read and range-checked by the index kernels themselves
(index_select, embedding, x[idx] and index_put_ with one to four index
tensors, take, index_add_/copy_/fill_, gather, scatter, scatter_add; and the
fused cross-entropy's targets), with no
synchronizing copy to the host: an out-of-range value moves nothing and is
raised, in the op's words, at the next synchronization (ignis.cuda.
synchronize, a stream's or event's, any copy to the host); the process
stays usable. IGNIS_CUDA_SYNC_INDEX_CHECKS=1 raises at the call instead.
On a GPU, or the fake driver (tests/cuda_fake/run.sh); skipped with the
reason elsewhere.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn.functional as F

AVAILABLE = ignis.cuda.is_available()
REASON = ignis._C._cuda_unavailable_reason()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"no usable CUDA GPU here: {REASON}")

LATER = "found on cuda:0 by a kernel launched before this synchronization"


def _x():
    return ignis.arange(60, dtype=ignis.float32).view(6, 10)


def _i(*v, dtype=ignis.int64):
    return ignis.tensor(list(v), dtype=dtype).cuda()


# (op on the CUDA tensor x, the exception, the words)
BAD = {
    "index_select": (lambda x: ignis.index_select(x, 1, _i(2, 10)), IndexError,
                     "index out of range in self: index 10 for a dim of size 10"),
    "index_select_negative": (lambda x: ignis.index_select(x, 0, _i(-1)), IndexError,
                              "index out of range in self: index -1"),
    "embedding": (lambda x: F.embedding(_i(0, 7, 1), x), IndexError, "index 7"),
    "getitem": (lambda x: x[_i(1, -7)], IndexError,
                "index -7 is out of bounds for dimension 0 with size 6"),
    "getitem_two": (lambda x: x[_i(1, 2), _i(3, 12)], IndexError,
                    "index 12 is out of bounds for dimension 1 with size 10"),
    "index_put": (lambda x: x.index_put_((_i(6),), ignis.ones(1, 10).cuda(), accumulate=True),
                  IndexError, "index 6 is out of bounds for dimension 0 with size 6"),
    "index_add": (lambda x: x.index_add_(0, _i(0, 9), ignis.ones(2, 10).cuda()), RuntimeError,
                  "index 9 is out of bounds for dimension 0 with size 6"),
    "index_fill": (lambda x: x.index_fill_(1, _i(-11), 0.0), IndexError,
                   "index -11 is out of bounds for dimension 1 with size 10"),
    "gather": (lambda x: ignis.gather(x, 1, _i(1, 2, 30).view(1, 3)), RuntimeError,
               "index 30 is out of bounds for dimension 1 with size 10"),
    "scatter_add": (lambda x: x.scatter_add_(0, _i(8).view(1, 1), ignis.ones(1, 1).cuda()),
                    RuntimeError, "index 8 is out of bounds for dimension 0 with size 6"),
    "int32": (lambda x: x[_i(6, dtype=ignis.int32)], IndexError, "index 6 is out of bounds"),
    # three index tensors (up to four are read on the device)
    "getitem_three": (lambda x: x.view(3, 2, 10)[_i(0, 2), _i(1, 1), _i(9, -11)], IndexError,
                      "index -11 is out of bounds for dimension 2 with size 10"),
    # take is x.flatten()[index]: the index kernel's check, in its words
    "take": (lambda x: ignis.take(x, _i(3, -61)), IndexError,
             "index -61 is out of bounds for dimension 0 with size 60"),
    # the fused cross-entropy kernel checks its class indices the same way
    "cross_entropy": (lambda x: F.cross_entropy(x, _i(3, 10, 0, 1, -100, 2)), IndexError,
                      "Target 10 is out of bounds."),
}


@pytest.mark.parametrize("name", list(BAD))
def test_an_index_out_of_range_is_raised_at_the_next_synchronization(name):
    op, exc, words = BAD[name]
    x = _x().cuda()
    with pytest.raises(exc) as info:
        op(x)
        ignis.cuda.synchronize()
    assert words in str(info.value), str(info.value)
    assert LATER in str(info.value)
    # Raised once; the device and the process stay usable.
    ignis.cuda.synchronize()
    y = _x().cuda()
    np.testing.assert_array_equal(y[_i(5, 0)].cpu().numpy(), _x()[ignis.tensor([5, 0])].numpy())


def test_a_copy_to_the_host_raises_it_too():
    x = _x().cuda()
    r = ignis.index_select(x, 0, _i(0, 99))
    with pytest.raises(IndexError, match="index 99"):
        r.cpu()
    assert (ignis.index_select(x, 0, _i(0, 5)).cpu() == _x()[[0, 5]]).all()


def test_in_range_indices_match_the_cpu():
    x = ignis.randn(6, 10)
    xc = x.cuda()
    for key in [(ignis.tensor([5, -1, 0]),), (ignis.tensor([[1, -6], [2, 2]]), ignis.tensor([9, -10])),
                (slice(None), ignis.tensor([0, 9, 4]))]:
        kc = tuple(k.cuda() if isinstance(k, ignis.Tensor) else k for k in key)
        np.testing.assert_array_equal(xc[kc].cpu().numpy(), x[key].numpy())
    # three and four index tensors (read on the device), put with accumulation
    y = ignis.randn(3, 2, 5, 2)
    yc = y.cuda()
    for key in [(ignis.tensor([0, 2, -1]), ignis.tensor([1, 0, 1]), ignis.tensor([4, -5, 2])),
                (ignis.tensor([[2], [0]]), ignis.tensor([1, 0]), ignis.tensor([3, 3]),
                 ignis.tensor([1, -2]))]:
        kc = tuple(k.cuda() for k in key)
        np.testing.assert_array_equal(yc[kc].cpu().numpy(), y[key].numpy())
        b, bc = y.clone(), yc.clone()
        v = ignis.randn(*y[key].shape)
        b.index_put_(key, v, accumulate=True)
        bc.index_put_(kc, v.cuda(), accumulate=True)
        np.testing.assert_allclose(bc.cpu().numpy(), b.numpy(), rtol=1e-6, atol=1e-6)
    i = ignis.tensor([3, 0, 3])
    np.testing.assert_array_equal(ignis.index_select(xc, 0, i.int().cuda()).cpu().numpy(),
                                  ignis.index_select(x, 0, i).numpy())
    g = ignis.randint(0, 10, (6, 4))
    np.testing.assert_array_equal(ignis.gather(xc, 1, g.cuda()).cpu().numpy(),
                                  ignis.gather(x, 1, g).numpy())
    a, ac = x.clone(), xc.clone()
    a.index_put_((i,), ignis.ones(3, 10), accumulate=True)
    ac.index_put_((i.cuda(),), ignis.ones(3, 10).cuda(), accumulate=True)
    np.testing.assert_array_equal(ac.cpu().numpy(), a.numpy())
    a.index_fill_(1, ignis.tensor([-1, 2]), 7.0)
    ac.index_fill_(1, ignis.tensor([-1, 2]).cuda(), 7.0)
    np.testing.assert_array_equal(ac.cpu().numpy(), a.numpy())
    ignis.cuda.synchronize()


def test_sync_index_checks_raise_at_the_call():
    code = ("import ignis\n"
            "x = ignis.zeros(4, 3).cuda()\n"
            "try:\n"
            "    x[ignis.tensor([4]).cuda()]\n"
            "except IndexError as e:\n"
            "    print('RAISED AT THE CALL', e)\n")
    env = dict(os.environ, IGNIS_CUDA_SYNC_INDEX_CHECKS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert "RAISED AT THE CALL index 4 is out of bounds for dimension 0 with size 4" in out.stdout, \
        out.stdout + out.stderr

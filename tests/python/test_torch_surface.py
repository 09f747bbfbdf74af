"""The module surface PyTorch scripts touch: copying and pickling tensors,
state_dicts and modules (also modules holding ops), ignis.backends and
ignis.accelerator answering truthfully, Tensor.is_xpu, ignis.tensor of any
sequence, ignis.multiprocessing, ignis.onnx, nn.DataParallel,
DistributedSampler and the rest of nn.init."""
import collections
import copy
import math
import pickle

import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn as nn

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


# ---- copying and pickling ----------------------------------------------------------------
def test_deepcopy_of_a_tensor_shares_nothing_and_keeps_requires_grad():
    t = ignis.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = copy.deepcopy(t)
    assert c.requires_grad and c.is_leaf and c.tolist() == t.tolist()
    assert c._storage_ptr() != t._storage_ptr()
    with ignis.no_grad():
        c.add_(1)
    assert t.tolist() == [1.0, 2.0, 3.0]


def test_deepcopy_keeps_views_of_one_base_views_of_one_copy():
    b = ignis.arange(12.0).reshape(3, 4)
    row, col, strided = b[1], b[:, 2], b.t()[::2]
    cb, crow, ccol, cstr = copy.deepcopy([b, row, col, strided])
    assert crow._storage_ptr() == ccol._storage_ptr() == cb._storage_ptr() != b._storage_ptr()
    assert (crow.stride(), crow.storage_offset()) == (row.stride(), row.storage_offset())
    assert (cstr.stride(), tuple(cstr.shape)) == (strided.stride(), tuple(strided.shape))
    cb[1, 2] = 100.0
    assert crow[2].item() == 100.0 and ccol[1].item() == 100.0
    assert b[1, 2].item() == 6.0
    # A view copied alone still copies its values.
    assert copy.deepcopy(col).tolist() == col.tolist()


def test_pickle_round_trips_tensors():
    for t in (ignis.randn(3, 4), ignis.arange(6).reshape(2, 3).t(), ignis.tensor(True),
              ignis.ones(2, dtype=ignis.bfloat16), ignis.tensor([1.0, 2.0], requires_grad=True)):
        r = pickle.loads(pickle.dumps(t))
        assert r.dtype == t.dtype and r.shape == t.shape and r.tolist() == t.tolist()
        assert r.requires_grad == t.requires_grad


class _WithOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.act = ignis.relu
        self.other = ignis.nn.functional.gelu
        self.alias = ignis.multiply

    def forward(self, x):
        return self.alias(self.act(self.lin(x)), 2)


def test_deepcopy_and_pickle_of_modules_holding_ops():
    m = _WithOps()
    c = copy.deepcopy(m)
    assert c.act is ignis.relu and c.alias is ignis.multiply and c.other is m.other
    assert c.lin.weight._storage_ptr() != m.lin.weight._storage_ptr()
    x = ignis.randn(4, 3)
    assert c(x).tolist() == m(x).tolist()
    p = pickle.loads(pickle.dumps(m))
    assert p(x).tolist() == m(x).tolist()
    for op in (ignis.relu, ignis.ops.sort, ignis.multiply, ignis.Tensor.add):
        assert pickle.loads(pickle.dumps(op)) is op


def test_deepcopy_of_a_state_dict_and_an_encoder_stack():
    sd = nn.Linear(3, 2).state_dict()
    c = copy.deepcopy(sd)
    assert list(c) == list(sd)
    c["weight"].zero_()
    assert bool(sd["weight"].abs().sum() > 0)
    layer = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.LayerNorm(4))
    stack = nn.ModuleList([copy.deepcopy(layer) for _ in range(3)])
    ptrs = {p._storage_ptr() for p in stack.parameters()}
    assert len(ptrs) == len(list(stack.parameters()))


# ---- what the machine has ---------------------------------------------------------------
def test_backends_and_accelerator_answer_truthfully():
    assert ignis.backends.cudnn.is_available() is False
    assert ignis.backends.mkldnn.is_available() is False
    assert ignis.backends.mps.is_available() is False
    assert ignis.backends.openmp.is_available() is True
    assert ignis.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
    ignis.backends.cudnn.benchmark = True  # scripts set these; nothing breaks
    ignis.backends.cuda.matmul.allow_tf32 = True
    gpu = ignis.accelerator.is_available()
    if not gpu:
        assert ignis.accelerator.current_accelerator() is None
        assert ignis.accelerator.device_count() == 0
        with pytest.raises(RuntimeError):
            ignis.accelerator.current_device_index()
    t = ignis.ones(2)
    assert (t.is_xpu, t.is_mps, t.is_sparse, t.is_quantized) == (False,) * 4


def test_tensor_from_any_sequence():
    assert ignis.tensor(collections.deque([1, 2, 3])).tolist() == [1, 2, 3]
    assert ignis.tensor(collections.deque([[1.0], [2.0]])).shape == (2, 1)
    assert ignis.tensor(range(4)).tolist() == [0, 1, 2, 3]
    assert ignis.tensor([collections.deque([1, 2]), (3, 4)]).tolist() == [[1, 2], [3, 4]]
    with pytest.raises(ValueError):
        ignis.tensor(["ab"])


def _double_into(i, q):
    q.put(i * 2)


def test_multiprocessing_onnx_and_data_parallel():
    mp = ignis.multiprocessing
    assert mp.Process is __import__("multiprocessing").Process
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    # fork: a spawned child would import ignis afresh, which in a checkout
    # with an editable install elsewhere may be the other tree.
    q = mp.get_context("fork").SimpleQueue()
    mp.spawn(_double_into, args=(q,), nprocs=2, start_method="fork")
    assert sorted([q.get(), q.get()]) == [0, 2]
    with pytest.raises(NotImplementedError, match="ONNX"):
        ignis.onnx.export(nn.Linear(2, 2), ignis.ones(1, 2), "m.onnx")
    assert ignis.onnx.is_in_onnx_export() is False
    inner = nn.Linear(3, 2)
    dp = nn.DataParallel(inner)
    x = ignis.randn(4, 3)
    assert dp(x).tolist() == inner(x).tolist() and dp.module is inner
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    with pytest.raises(NotImplementedError):
        nn.DataParallel(inner, device_ids=[0, 1])


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("n,replicas,drop_last", [(10, 1, False), (10, 3, False), (10, 3, True),
                                                  (2, 4, False)])
def test_distributed_sampler_splits_as_torch(n, replicas, drop_last):
    from ignis.utils.data.distributed import DistributedSampler
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    for rank in range(replicas):
        a = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        b = TorchSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(a) == list(b) and len(a) == len(b)
    s = DistributedSampler(range(n))  # one replica: every index, shuffled by seed + epoch
    first = list(s)
    assert sorted(first) == list(range(n)) and list(s) == first
    s.set_epoch(1)
    assert sorted(list(s)) == list(range(n))


# ---- nn.init ----------------------------------------------------------------------------
def test_init_orthogonal_dirac_eye_sparse():
    w = nn.init.orthogonal_(ignis.empty(4, 6), gain=2.0)
    np.testing.assert_allclose((w @ w.t()).numpy(), 4 * np.eye(4), atol=1e-5)
    w = nn.init.orthogonal_(ignis.empty(6, 2, 2))
    f = w.reshape(6, 4)
    np.testing.assert_allclose((f.t() @ f).numpy(), np.eye(4), atol=1e-5)
    assert nn.init.eye_(ignis.empty(3, 5)).tolist() == np.eye(3, 5).tolist()
    d = nn.init.dirac_(ignis.empty(4, 2, 3, 3), groups=2)
    x = ignis.randn(1, 4, 5, 5)
    if torch is not None:
        td = torch.nn.init.dirac_(torch.empty(4, 2, 3, 3), groups=2)
        assert d.tolist() == td.tolist()
    s = nn.init.sparse_(ignis.empty(10, 4), 0.3, std=0.5)
    assert all(int((s[:, j] == 0).sum()) >= 3 for j in range(4))
    with pytest.raises(ValueError):
        nn.init.eye_(ignis.empty(2, 2, 2))
    with pytest.raises(ValueError):
        nn.init.orthogonal_(ignis.empty(3))
    with pytest.warns(FutureWarning):
        nn.init.normal(ignis.empty(2))
    assert x.shape == (1, 4, 5, 5)


def test_calculate_gain_and_kaiming_variants():
    assert nn.init.calculate_gain("relu") == math.sqrt(2.0)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    ignis.manual_seed(0)
    w = nn.init.kaiming_normal_(ignis.empty(400, 300), mode="fan_out", nonlinearity="relu")
    assert abs(w.std().item() - math.sqrt(2.0 / 400)) < 0.003
    w = nn.init.trunc_normal_(ignis.empty(1000), std=2.0, a=-1.0, b=1.0)
    assert bool((w >= -1).all()) and bool((w <= 1).all())

"""ignis.utils.data against torch.utils.data: the same dataset and sampler
order give the same batches (sequential, drop_last, batch_sampler, custom
collate, nested structures); shuffling is reproducible within ignis under a
seed; worker processes give the batches of one process; worker_info and
iterable datasets split across workers; len(); argument errors. torch is
only the oracle: without it the ignis-only tests still run."""
import collections
import pickle

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
from ignis.utils import data as D

try:
    import torch
    import torch.utils.data as TD
except ImportError:  # pragma: no cover
    torch = TD = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is the oracle for these tests")

Point = collections.namedtuple("Point", ["x", "y"])


def plain(b):
    """A batch as nested Python data: tensors -> (dtype name, nested lists)."""
    if isinstance(b, (ignis.Tensor,)) or (torch is not None and isinstance(b, torch.Tensor)):
        return (str(b.dtype).split(".")[-1], tuple(b.shape), b.tolist())
    if isinstance(b, dict):
        return {k: plain(v) for k, v in b.items()}
    if isinstance(b, tuple) and hasattr(b, "_fields"):
        return (type(b).__name__,) + tuple(plain(v) for v in b)
    if isinstance(b, (list, tuple)):
        return type(b)(plain(v) for v in b)
    return b


def both(make_dataset, **kwargs):
    """Batches of ignis's and torch's DataLoader over the same data."""
    ig = [plain(b) for b in D.DataLoader(make_dataset(ignis, D), **kwargs)]
    th = [plain(b) for b in TD.DataLoader(make_dataset(torch, TD), **kwargs)]
    return ig, th


def tensor_ds(lib, mod, n=10):
    return mod.TensorDataset(lib.arange(n * 3).reshape(n, 3).float(), lib.arange(n))


class Nested:
    """Samples with every kind of leaf default_collate handles."""

    def __init__(self, lib, n=7):
        self.lib, self.n = lib, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        lib = self.lib
        return {"img": lib.full((2, 2), float(i)), "label": i, "w": i * 0.5, "flag": i % 2 == 0,
                "name": f"s{i}", "arr": np.arange(3, dtype=np.int32) + i,
                "np_scalar": np.float32(i), "pt": Point(lib.tensor([i, -i]), i),
                "pair": (i, lib.tensor(float(i))), "lst": [i, i + 1]}


# --- batches against torch -------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (4, True),
                                                  (10, False), (20, False), (20, True)])
def test_sequential_batches_match_torch(batch_size, drop_last):
    ig, th = both(tensor_ds, batch_size=batch_size, drop_last=drop_last)
    assert ig == th
    assert len(D.DataLoader(tensor_ds(ignis, D), batch_size=batch_size, drop_last=drop_last)) \
        == len(TD.DataLoader(tensor_ds(torch, TD), batch_size=batch_size, drop_last=drop_last))


@needs_torch
def test_nested_collate_matches_torch():
    ig, th = both(lambda lib, mod: Nested(lib), batch_size=3)
    assert ig == th
    b = next(iter(D.DataLoader(Nested(ignis), batch_size=3)))
    assert isinstance(b["pt"], Point) and isinstance(b["pair"], list)
    assert b["name"] == ["s0", "s1", "s2"]


@needs_torch
def test_default_collate_and_convert_match_torch():
    cases = [[1, 2, 3], [1.5, 2.0], [True, False], ["a", "b"], [(1, "a"), (2, "b")],
             [np.array([1.0, 2.0]), np.array([3.0, 4.0])], [np.int64(3), np.int64(4)],
             [{"a": [1, 2]}, {"a": [3, 4]}], [Point(1, 2.0), Point(3, 4.0)]]
    for batch in cases:
        assert plain(D.default_collate(batch)) == plain(TD.default_collate(batch)), batch
    for sample in [np.arange(3), {"a": np.ones(2), "b": "s"}, (np.zeros(1), 1), [1, 2]]:
        assert plain(D.default_convert(sample)) == plain(TD.default_convert(sample))


@needs_torch
def test_batch_size_none_and_custom_collate_match_torch():
    ig, th = both(tensor_ds, batch_size=None)
    assert ig == th
    ig, th = both(tensor_ds, batch_size=4, collate_fn=lambda b: len(b))
    assert ig == th == [4, 4, 2]


@needs_torch
def test_given_sampler_and_batch_sampler_match_torch():
    order = [5, 1, 8, 0, 3, 9, 2]
    ig, th = both(tensor_ds, batch_size=3, sampler=order)
    assert ig == th
    batches = [[0, 1], [7], [4, 5, 6]]
    ig, th = both(tensor_ds, batch_sampler=batches)
    assert ig == th
    ig_bs = list(D.BatchSampler(D.SequentialSampler(range(10)), 4, False))
    th_bs = list(TD.BatchSampler(TD.SequentialSampler(range(10)), 4, False))
    assert ig_bs == th_bs
    assert len(D.BatchSampler(range(10), 4, True)) == len(TD.BatchSampler(range(10), 4, True))


@needs_torch
def test_dataset_combinators_match_torch():
    a, b = tensor_ds(ignis, D, 4), tensor_ds(ignis, D, 3)
    ta, tb = tensor_ds(torch, TD, 4), tensor_ds(torch, TD, 3)
    c, tc = a + b, ta + tb
    assert len(c) == len(tc) == 7
    assert [plain(c[i]) for i in range(-7, 7)] == [plain(tc[i]) for i in range(-7, 7)]
    with pytest.raises(ValueError):
        c[-8]
    s, ts = D.Subset(c, [6, 0, 2]), TD.Subset(tc, [6, 0, 2])
    assert [plain(s[i]) for i in range(3)] == [plain(ts[i]) for i in range(3)]
    assert [plain(x) for x in D.DataLoader(s, batch_size=2)] == \
        [plain(x) for x in TD.DataLoader(ts, batch_size=2)]


@needs_torch
def test_stack_dataset_and_top_level_distributed_sampler_match_torch():
    for args, kwargs in (((0, 1), {}), ((), {"x": 0, "y": 1})):
        def make(lib, mod, args=args, kwargs=kwargs):
            parts = [tensor_ds(lib, mod, 5), list(range(5))]
            return mod.StackDataset(*[parts[i] for i in args],
                                    **{k: parts[i] for k, i in kwargs.items()})
        ig, th = both(make, batch_size=2)
        assert ig == th
        assert plain(make(ignis, D)[3]) == plain(make(torch, TD)[3])
    with pytest.raises(ValueError, match="Size mismatch"):
        D.StackDataset(tensor_ds(ignis, D, 3), [1, 2])
    with pytest.raises(ValueError, match="At least one dataset"):
        D.StackDataset()
    assert D.DistributedSampler is D.distributed.DistributedSampler
    assert list(D.DistributedSampler(range(7), num_replicas=2, rank=1, shuffle=False)) == \
        list(TD.DistributedSampler(range(7), num_replicas=2, rank=1, shuffle=False))


def test_random_split():
    parts = D.random_split(range(10), [3, 7], generator=ignis.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    again = D.random_split(range(10), [3, 7], generator=ignis.Generator().manual_seed(1))
    assert list(again[0]) == list(parts[0])
    parts = D.random_split(range(11), [0.5, 0.3, 0.2])
    assert [len(p) for p in parts] == [6, 3, 2]  # torch's rounding: remainder round-robin
    with pytest.raises(ValueError, match="Sum of input lengths"):
        D.random_split(range(10), [3, 3])


# --- shuffling and random samplers -----------------------------------------------------

def epoch(loader):
    return [b[1].tolist() for b in loader]


def test_shuffle_is_a_permutation_and_reproducible():
    ds = tensor_ds(ignis, D, 20)
    ignis.manual_seed(0)
    first = epoch(D.DataLoader(ds, batch_size=6, shuffle=True))
    assert sorted(sum(first, [])) == list(range(20))
    assert [len(b) for b in first] == [6, 6, 6, 2]
    ignis.manual_seed(0)
    assert epoch(D.DataLoader(ds, batch_size=6, shuffle=True)) == first
    loader = D.DataLoader(ds, batch_size=6, shuffle=True)
    assert epoch(loader) != epoch(loader)  # a new order each epoch
    g1, g2 = ignis.Generator().manual_seed(5), ignis.Generator().manual_seed(5)
    assert epoch(D.DataLoader(ds, batch_size=6, shuffle=True, generator=g1)) == \
        epoch(D.DataLoader(ds, batch_size=6, shuffle=True, generator=g2))


def test_generator_state_round_trip():
    g = ignis.Generator().manual_seed(3)
    assert g.initial_seed() == 3
    state = g.get_state()
    a = list(D.RandomSampler(range(10), generator=g))
    g.set_state(state)
    assert list(D.RandomSampler(range(10), generator=g)) == a


def test_random_samplers():
    g = ignis.Generator().manual_seed(0)
    s = D.RandomSampler(range(5), replacement=True, num_samples=12, generator=g)
    drawn = list(s)
    assert len(s) == len(drawn) == 12 and all(0 <= i < 5 for i in drawn)
    s = D.RandomSampler(range(5), num_samples=12, generator=g)
    drawn = list(s)
    assert len(drawn) == 12 and sorted(drawn[:5]) == list(range(5))
    assert sorted(D.SubsetRandomSampler([10, 20, 30], generator=g)) == [10, 20, 30]
    w = D.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200, generator=g)
    counts = collections.Counter(w)
    assert set(counts) <= {1, 3} and counts[3] > counts[1]
    w = D.WeightedRandomSampler(ignis.tensor([1.0, 1.0, 1.0]), 3, replacement=False, generator=g)
    assert sorted(w) == [0, 1, 2]
    with pytest.raises(RuntimeError, match="without replacement"):
        list(D.WeightedRandomSampler([1.0, 0.0], 2, replacement=False))


@needs_torch
def test_argument_errors_match_torch():
    def err(fn):
        try:
            fn()
        except Exception as e:
            return type(e), str(e)
        return None

    ds, tds = tensor_ds(ignis, D), tensor_ds(torch, TD)
    cases = [dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
             dict(persistent_workers=True), dict(sampler=[0], shuffle=True),
             dict(batch_sampler=[[0]], batch_size=2), dict(batch_size=None, drop_last=True)]
    for kw in cases:
        assert err(lambda: D.DataLoader(ds, **kw)) == err(lambda: TD.DataLoader(tds, **kw)), kw
    for kw in [dict(batch_size=0, drop_last=False), dict(batch_size=2, drop_last=1)]:
        assert err(lambda: D.BatchSampler(range(3), **kw)) == \
            err(lambda: TD.BatchSampler(range(3), **kw))
    assert err(lambda: D.RandomSampler(range(3), num_samples=0)) == \
        err(lambda: TD.RandomSampler(range(3), num_samples=0))
    loader = D.DataLoader(ds)
    with pytest.raises(ValueError, match="should not be set"):
        loader.batch_size = 3


# --- worker processes ------------------------------------------------------------------

def test_workers_give_the_batches_of_one_process():
    ds = tensor_ds(ignis, D, 23)
    one = [plain(b) for b in D.DataLoader(ds, batch_size=4)]
    two = [plain(b) for b in D.DataLoader(ds, batch_size=4, num_workers=2)]
    assert two == one  # same batches, same order
    nested = D.DataLoader(Nested(ignis), batch_size=3, num_workers=2, prefetch_factor=1,
                          pin_memory=True)
    assert [plain(b) for b in nested] == [plain(b) for b in D.DataLoader(Nested(ignis),
                                                                          batch_size=3)]


def test_workers_with_shuffle_cover_the_dataset():
    ds = tensor_ds(ignis, D, 17)
    g = ignis.Generator().manual_seed(7)
    got = epoch(D.DataLoader(ds, batch_size=5, shuffle=True, num_workers=2, generator=g))
    assert sorted(sum(got, [])) == list(range(17))
    g = ignis.Generator().manual_seed(7)
    assert epoch(D.DataLoader(ds, batch_size=5, shuffle=True, generator=g)) == got


class WhoLoads(D.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = D.get_worker_info()
        return (i, -1 if info is None else info.id, -1 if info is None else info.num_workers,
                -1 if info is None else info.seed, ignis.rand(1).item())


def _init_fn(worker_id):
    ignis.manual_seed(1000 + worker_id)


def test_worker_info_and_seeds():
    assert D.get_worker_info() is None
    rows = [r for b in D.DataLoader(WhoLoads(), batch_size=2, num_workers=2,
                                    generator=ignis.Generator().manual_seed(4))
            for r in zip(*[x.tolist() for x in b])]
    assert [r[0] for r in rows] == list(range(8))
    assert {r[1] for r in rows} == {0, 1} and {r[2] for r in rows} == {2}
    seeds = {r[1]: r[3] for r in rows}
    assert seeds[1] == seeds[0] + 1  # base_seed + worker_id
    # The same generator seed gives the same worker seeds and random streams.
    again = [r for b in D.DataLoader(WhoLoads(), batch_size=2, num_workers=2,
                                     generator=ignis.Generator().manual_seed(4))
             for r in zip(*[x.tolist() for x in b])]
    assert again == rows
    # worker_init_fn runs in each worker before it loads.
    with_init = [r for b in D.DataLoader(WhoLoads(), batch_size=2, num_workers=2,
                                         worker_init_fn=_init_fn)
                 for r in zip(*[x.tolist() for x in b])]
    ignis.manual_seed(1000)
    first = ignis.rand(1).item()
    assert abs(with_init[0][4] - first) < 1e-6


class RangeIterable(D.IterableDataset):
    """Splits range(start, end) between workers, as torch's docs show."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = D.get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = -(-(self.end - self.start) // info.num_workers)
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))

    def __len__(self):
        return self.end - self.start


@pytest.mark.parametrize("num_workers", [0, 2, 3])
def test_iterable_dataset_split_by_workers(num_workers):
    loader = D.DataLoader(RangeIterable(3, 20), batch_size=4, num_workers=num_workers)
    got = [b.tolist() for b in loader]
    assert sorted(sum(got, [])) == list(range(3, 20))
    assert all(len(b) <= 4 for b in got)
    assert len(loader) == 5
    dropped = [b.tolist() for b in D.DataLoader(RangeIterable(3, 20), batch_size=4,
                                                 drop_last=True, num_workers=num_workers)]
    assert all(len(b) == 4 for b in dropped)


@needs_torch
def test_iterable_dataset_matches_torch_with_workers():
    class TorchRange(TD.IterableDataset):
        def __iter__(self):
            info = TD.get_worker_info()
            per = -(-17 // info.num_workers)
            lo = 3 + info.id * per
            return iter(range(lo, min(lo + per, 20)))

    ig = [b.tolist() for b in D.DataLoader(RangeIterable(3, 20), batch_size=4, num_workers=2)]
    th = [b.tolist() for b in TD.DataLoader(TorchRange(), batch_size=4, num_workers=2)]
    assert ig == th  # the same interleaving of the workers' batches


def test_iterable_dataset_rejects_sampler_and_shuffle():
    with pytest.raises(ValueError, match="shuffle"):
        D.DataLoader(RangeIterable(0, 3), shuffle=True)
    with pytest.raises(ValueError, match="sampler"):
        D.DataLoader(RangeIterable(0, 3), sampler=[0])


def test_persistent_workers_serve_several_epochs():
    ds = tensor_ds(ignis, D, 9)
    loader = D.DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True)
    expected = epoch(D.DataLoader(ds, batch_size=2))
    assert epoch(loader) == expected
    it = iter(loader)
    next(it)  # an epoch left unfinished
    assert epoch(loader) == expected
    pids = [w.pid for w in loader._iterator._workers]
    assert epoch(loader) == expected
    assert [w.pid for w in loader._iterator._workers] == pids  # the same processes
    it_loader = D.DataLoader(RangeIterable(0, 7), batch_size=3, num_workers=2,
                             persistent_workers=True)
    for _ in range(2):
        assert sorted(sum([b.tolist() for b in it_loader], [])) == list(range(7))


class Failing(D.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("no item two")
        return i


class Slow(D.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        import time
        time.sleep(3)
        return i


def test_worker_errors_reach_the_main_process():
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(D.DataLoader(Failing(), batch_size=1, num_workers=2))
    with pytest.raises(KeyError):
        list(D.DataLoader(Failing(), batch_size=1))
    with pytest.raises(RuntimeError, match="timed out after 1 seconds"):
        list(D.DataLoader(Slow(), num_workers=1, timeout=1))


def test_tensors_pickle_by_value():
    for name in ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                 "float32", "float64"]:
        t = ignis.arange(12).reshape(3, 4).to(getattr(ignis, name))[:, 1:3]
        u = pickle.loads(pickle.dumps(t))
        assert u.dtype == t.dtype and u.shape == t.shape and u.tolist() == t.tolist()
    p = pickle.loads(pickle.dumps(ignis.nn.Parameter(ignis.ones(2))))
    assert isinstance(p, ignis.nn.Parameter) and p.requires_grad

"""ignis.save / ignis.load: round trips in ignis (every dtype, views sharing
a storage, Parameters, state_dicts, optimizer state, paths, file objects,
BytesIO, map_location), checkpoints written by torch.save loaded by ignis
and ignis.save's checkpoints loaded by torch.load(weights_only=True), an
nn model's outputs after a round trip, and clear errors for bad input."""
import collections
import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is needed to write or read the "
                                 "other side of the checkpoint")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]


def sample(name, shape=(3, 4)):
    n = int(np.prod(shape))
    t = ignis.arange(n).reshape(*shape)
    if name == "bool":
        return (t % 3) == 0
    if name in ("float16", "bfloat16", "float32", "float64"):
        return ((t - 5).to(ignis.float64) * 0.37).to(getattr(ignis, name))
    return (t * 7 - 20).to(getattr(ignis, name))


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    ignis.save(obj, buf)
    buf.seek(0)
    return ignis.load(buf, **load_kwargs)


def same(a, b):
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
    assert tuple(a.shape) == tuple(b.shape)
    assert a.tolist() == b.tolist()


def th_dtype(name):
    return getattr(torch, name)


def ig_to_torch(t):
    if t.dtype is ignis.bfloat16:
        return torch.tensor(t.float().tolist()).to(torch.bfloat16)
    return torch.from_numpy(t.numpy().copy())


# --- ignis round trips -------------------------------------------------------------------

@pytest.mark.parametrize("name", DTYPES)
def test_round_trip_every_dtype(name):
    t = sample(name)
    out = roundtrip({"t": t, "col": t[:, 1], "scalar": t[1, 2]})
    same(out["t"], t)
    same(out["col"], t[:, 1])
    same(out["scalar"], t[1, 2])


def test_views_share_one_storage():
    base = ignis.arange(24.).reshape(4, 6)
    views = {"base": base, "row": base[2], "block": base[1:3, 2:5], "t": base.t(),
             "flat": base.view(-1)}
    out = roundtrip(views)
    for k, v in views.items():
        same(out[k], v)
        assert out[k].stride() == v.stride() and out[k].storage_offset() == v.storage_offset()
    ptrs = {v._storage_ptr() for v in out.values()}
    assert len(ptrs) == 1
    out["base"][2, 3] = 100.0  # writes show through every view, as they did when saved
    assert out["row"][3].item() == 100.0 and out["t"][3, 2].item() == 100.0
    # A view alone is saved with the part of its storage it needs.
    alone = roundtrip(base[3, 1:])
    same(alone, base[3, 1:])
    assert alone.storage_offset() == 19


def test_containers_and_python_values():
    obj = {"list": [1, 2.5, "s", None, True, b"raw", (1, (2, 3))], "set": {1, 2},
           "od": collections.OrderedDict(a=ignis.ones(2), b=ignis.zeros(1)),
           "dtype": ignis.bfloat16, "size": ignis.Size([2, 3]), "device": ignis.device("cpu"),
           "empty": ignis.empty(0, 3), "complex": 1 + 2j}
    out = roundtrip(obj)
    assert out["list"] == obj["list"] and out["set"] == {1, 2} and out["complex"] == 1 + 2j
    assert isinstance(out["od"], collections.OrderedDict) and list(out["od"]) == ["a", "b"]
    assert out["dtype"] is ignis.bfloat16 and out["size"] == ignis.Size([2, 3])
    assert isinstance(out["size"], ignis.Size) and str(out["device"]) == "cpu"
    assert tuple(out["empty"].shape) == (0, 3)


def test_requires_grad_and_parameters():
    p = ignis.nn.Parameter(ignis.randn(2, 3))
    frozen = ignis.nn.Parameter(ignis.randn(2), requires_grad=False)
    leaf = ignis.ones(3, requires_grad=True)
    out = roundtrip([p, frozen, leaf, ignis.ones(1)])
    assert isinstance(out[0], ignis.nn.Parameter) and out[0].requires_grad
    assert isinstance(out[1], ignis.nn.Parameter) and not out[1].requires_grad
    assert type(out[2]) is ignis.Tensor and out[2].requires_grad and out[2].is_leaf
    assert not out[3].requires_grad
    same(out[0].detach(), p.detach())


def test_module_state_dict_round_trip_gives_identical_outputs(tmp_path):
    def model():
        return ignis.nn.Sequential(ignis.nn.Linear(5, 8), ignis.nn.ReLU(), ignis.nn.LayerNorm(8),
                                   ignis.nn.Linear(8, 3))
    a, b = model(), model()
    x = ignis.randn(4, 5)
    path = tmp_path / "model.pt"
    ignis.save(a.state_dict(), path)
    sd = ignis.load(path)
    assert isinstance(sd, collections.OrderedDict) and list(sd) == list(a.state_dict())
    b.load_state_dict(sd)
    assert a(x).tolist() == b(x).tolist()
    ignis.save(a.state_dict(), str(path))  # str paths too
    b.load_state_dict(ignis.load(str(path)))


def test_optimizer_state_dict_round_trip():
    model = ignis.nn.Linear(3, 2)
    opt = ignis.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        model(ignis.randn(4, 3)).sum().backward()
        opt.step()
    state = opt.state_dict()
    out = roundtrip(state)
    assert out["param_groups"] == state["param_groups"]
    for k, v in state["state"].items():
        for name, value in v.items():
            if isinstance(value, ignis.Tensor):
                same(out["state"][k][name], value)
            else:
                assert out["state"][k][name] == value
    opt2 = ignis.optim.Adam(ignis.nn.Linear(3, 2).parameters(), lr=0.5)
    opt2.load_state_dict(out)
    assert opt2.param_groups[0]["lr"] == 0.01


def test_file_objects_and_map_location(tmp_path):
    t = sample("float32")
    path = tmp_path / "t.pt"
    with open(path, "wb") as f:
        ignis.save({"t": t}, f)
    with open(path, "rb") as f:
        same(ignis.load(f)["t"], t)
    for loc in ["cpu", ignis.device("cpu"), {"cpu": "cpu"}, lambda storage, location: storage,
                lambda storage, location: None]:
        same(ignis.load(path, map_location=loc)["t"], t)
    seen = []
    ignis.load(path, map_location=lambda s, loc: seen.append((loc, s.dtype)) or s.cpu())
    assert seen == [("cpu", ignis.float32)]

    class Unseekable(io.RawIOBase):
        def __init__(self, data):
            self._b = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, buf):
            return self._b.readinto(buf)

    same(ignis.load(Unseekable(path.read_bytes()))["t"], t)
    buf = io.BytesIO(b"prefix")  # saving into a stream at an offset
    buf.seek(6)
    ignis.save(t, buf)
    same(ignis.load(io.BytesIO(buf.getvalue()[6:])), t)


def test_weights_only_refuses_arbitrary_objects():
    buf = io.BytesIO()
    ignis.save({"fn": os.getcwd}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        ignis.load(buf)
    buf.seek(0)
    assert ignis.load(buf, weights_only=False)["fn"] is os.getcwd


def test_bad_input_raises_clear_errors(tmp_path):
    good = io.BytesIO()
    ignis.save({"t": ignis.arange(100.)}, good)
    data = good.getvalue()
    cases = {"not_zip": b"this is not a checkpoint", "empty": b"",
             "truncated": data[: len(data) // 2], "cut_end": data[:-10]}
    for name, content in cases.items():
        p = tmp_path / name
        p.write_bytes(content)
        with pytest.raises(RuntimeError, match="ignis.load: .*(not a PyTorch checkpoint|"
                                               "truncated or corrupt)"):
            ignis.load(p)
    other = io.BytesIO()
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("x/readme.txt", "hi")
    other.seek(0)
    with pytest.raises(RuntimeError, match="without x/data.pkl"):
        ignis.load(other)
    legacy = io.BytesIO()
    pickle.dump(0x1950a86a20f9469cfc6c, legacy, protocol=2)
    legacy.seek(0)
    with pytest.raises(RuntimeError, match="legacy"):
        ignis.load(legacy)
    with pytest.raises(FileNotFoundError):
        ignis.load(tmp_path / "missing.pt")


def test_records_are_aligned_for_mmap():
    buf = io.BytesIO()
    ignis.save([sample(d) for d in DTYPES], buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        for info in z.infolist():
            start = info.header_offset + 30 + len(info.filename) + len(info.extra)
            assert start % 64 == 0, info.filename


# --- torch.save -> ignis.load ------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("name", DTYPES)
def test_torch_checkpoint_loads_in_ignis(name):
    base = torch.arange(24).reshape(4, 6)
    t = (base % 3 == 0) if name == "bool" else (base * 0.75 - 4).to(th_dtype(name))
    obj = {"t": t, "view": t[1:3, 2:], "tt": t.t(), "scalar": t[0, 0]}
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    out = ignis.load(buf)
    for k, v in obj.items():
        assert str(out[k].dtype).split(".")[-1] == name
        assert tuple(out[k].shape) == tuple(v.shape) and out[k].stride() == v.stride()
        assert out[k].tolist() == v.tolist()
    assert len({v._storage_ptr() for v in out.values()}) == 1


@needs_torch
def test_torch_model_state_dict_loads_in_ignis(tmp_path):
    tm = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    im = ignis.nn.Sequential(ignis.nn.Linear(5, 8), ignis.nn.Tanh(), ignis.nn.Linear(8, 3))
    path = tmp_path / "torch_model.pt"
    torch.save(tm.state_dict(), path)
    im.load_state_dict(ignis.load(path, map_location="cpu"))
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(im(ignis.from_numpy(x)).detach().numpy(),
                               tm(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    # Parameters, requires_grad, torch's Python values and dtype/Size/device globals.
    obj = {"p": torch.nn.Parameter(torch.ones(2)), "g": torch.ones(2, requires_grad=True),
           "dtype": torch.float16, "size": torch.Size([3]), "device": torch.device("cpu"),
           "meta": {"epoch": 3, "name": "run", "bytes": b"\x00\x01"}}
    torch.save(obj, path)
    out = ignis.load(path)
    assert isinstance(out["p"], ignis.nn.Parameter) and out["p"].requires_grad
    assert out["g"].requires_grad and out["g"].is_leaf
    assert out["dtype"] is ignis.float16 and out["size"] == ignis.Size([3])
    assert out["meta"] == obj["meta"]


@needs_torch
def test_torch_optimizer_state_loads_in_ignis():
    m = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(m.parameters())
    m(torch.randn(4, 3)).sum().backward()
    opt.step()
    buf = io.BytesIO()
    torch.save(opt.state_dict(), buf)
    buf.seek(0)
    out = ignis.load(buf)
    exp = opt.state_dict()
    assert out["param_groups"] == exp["param_groups"]
    assert out["state"][0]["exp_avg"].tolist() == exp["state"][0]["exp_avg"].tolist()
    assert out["state"][0]["step"].item() == exp["state"][0]["step"].item()


# --- ignis.save -> torch.load ------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("name", DTYPES)
def test_ignis_checkpoint_loads_in_torch(name):
    t = sample(name, (4, 6))
    obj = {"t": t, "view": t[1:3, 2:], "tt": t.t(), "scalar": t[0, 0]}
    buf = io.BytesIO()
    ignis.save(obj, buf)
    buf.seek(0)
    out = torch.load(buf, weights_only=True)
    for k, v in obj.items():
        assert out[k].dtype == th_dtype(name)
        assert tuple(out[k].shape) == tuple(v.shape) and out[k].stride() == v.stride()
        assert out[k].tolist() == ig_to_torch(v).tolist()
    assert len({v.untyped_storage().data_ptr() for v in out.values()}) == 1
    buf.seek(0)
    out = torch.load(buf, weights_only=True, mmap=False, map_location="cpu")
    assert out["t"].tolist() == ig_to_torch(t).tolist()


@needs_torch
def test_ignis_model_and_values_load_in_torch(tmp_path):
    im = ignis.nn.Sequential(ignis.nn.Linear(5, 8), ignis.nn.GELU(), ignis.nn.Linear(8, 3))
    tm = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.GELU(), torch.nn.Linear(8, 3))
    path = tmp_path / "ignis_model.pt"
    ignis.save(im.state_dict(), path)
    tm.load_state_dict(torch.load(path, weights_only=True))
    x = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(tm(torch.from_numpy(x)).detach().numpy(),
                               im(ignis.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    obj = {"p": ignis.nn.Parameter(ignis.ones(2)), "g": ignis.ones(2, requires_grad=True),
           "dtype": ignis.bfloat16, "size": ignis.Size([3]), "device": ignis.device("cpu"),
           "meta": {"epoch": 3, "bytes": b"\x00\x01", "od": collections.OrderedDict(a=1)}}
    ignis.save(obj, path)
    out = torch.load(path, weights_only=True)
    assert isinstance(out["p"], torch.nn.Parameter) and out["p"].requires_grad
    assert out["g"].requires_grad and out["g"].is_leaf
    assert out["dtype"] is torch.bfloat16 and out["size"] == torch.Size([3])
    assert out["device"] == torch.device("cpu") and out["meta"] == obj["meta"]
    out = torch.load(path, weights_only=True, mmap=True)  # records are aligned
    assert out["p"].tolist() == [1.0, 1.0]


@needs_torch
def test_ignis_optimizer_state_loads_in_torch():
    im = ignis.nn.Linear(3, 2)
    opt = ignis.optim.Adam(im.parameters())
    im(ignis.randn(4, 3)).sum().backward()
    opt.step()
    buf = io.BytesIO()
    ignis.save(opt.state_dict(), buf)
    buf.seek(0)
    tm = torch.nn.Linear(3, 2)
    topt = torch.optim.Adam(tm.parameters())
    topt.load_state_dict(torch.load(buf, weights_only=True))
    st = topt.state_dict()["state"][0]
    assert st["exp_avg"].tolist() == ig_to_torch(opt.state_dict()["state"][0]["exp_avg"]).tolist()

"""DLPack interop (src/ignis/python/py_dlpack.cpp, python/ignis/utils/dlpack.py).

CPU round trips with NumPy and torch run everywhere: memory is shared both ways (a write
on one side is seen on the other), dtypes, strides, 0-dim and empty tensors survive, the
producer stays alive as long as a consumer's tensor does, capsules (legacy "dltensor" and
DLPack 1.0 "dltensor_versioned") are consumed once. CUDA round trips with torch and CuPy
need a GPU and those libraries' CUDA builds, and are skipped with the reason elsewhere.
"""
import ctypes
import gc
import sys

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
from ignis.utils import dlpack as idl

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None
try:
    import cupy
except ImportError:
    cupy = None

AVAILABLE = ignis.cuda.is_available()
REASON = ignis._C._cuda_unavailable_reason()
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
needs_gpu = pytest.mark.skipif(not AVAILABLE, reason=f"no usable CUDA GPU here: {REASON}")
TORCH_CUDA = torch is not None and torch.cuda.is_available()
needs_torch_cuda = pytest.mark.skipif(not (AVAILABLE and TORCH_CUDA),
                                      reason="needs a GPU and torch with CUDA")
CUPY_CUDA = False
if cupy is not None:
    try:
        CUPY_CUDA = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # CuPy without a driver
        CUPY_CUDA = False
needs_cupy = pytest.mark.skipif(not (AVAILABLE and CUPY_CUDA), reason="needs a GPU and CuPy")

NP_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
TORCH_DTYPES = NP_DTYPES + ["bfloat16"]


def capsule_name(c):
    f = ctypes.pythonapi.PyCapsule_GetName
    f.restype, f.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return f(c).decode()


def sample(shape, dtype, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape) * 10
    return a.astype(dtype)


# ---- CPU, NumPy ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_numpy_to_ignis_shares_memory(dtype):
    a = sample((3, 4), dtype)
    t = ignis.from_dlpack(a)
    assert t.dtype == getattr(ignis, dtype) and t.shape == (3, 4) and t.device.type == "cpu"
    np.testing.assert_array_equal(t.numpy(), a)
    a[1, 2] = a[0, 0]
    assert t[1, 2].item() == t[0, 0].item()
    assert t.data_ptr() == a.ctypes.data


@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_ignis_to_numpy_shares_memory(dtype):
    t = ignis.from_numpy(sample((2, 5), dtype)).clone()
    a = np.from_dlpack(t)
    assert a.dtype == np.dtype(dtype) and a.shape == (2, 5)
    np.testing.assert_array_equal(a, t.numpy())
    assert a.ctypes.data == t.data_ptr()


def test_numpy_strided_views_keep_their_strides():
    base = sample((6, 8), "float32")
    for a in (base.T, base[::2, 1::3], base[:, 3], base[2:3, :]):
        t = ignis.from_dlpack(a)
        np.testing.assert_array_equal(t.numpy(), a)
        assert tuple(s * 4 for s in t.stride()) == a.strides or a.shape[0] == 1


def test_zero_dim_and_empty():
    t = ignis.from_dlpack(np.array(3.5, dtype=np.float32))
    assert t.shape == () and t.item() == 3.5
    e = ignis.from_dlpack(np.zeros((0, 3), dtype=np.int64))
    assert e.shape == (0, 3)
    assert np.from_dlpack(ignis.zeros(0, 4)).shape == (0, 4)
    assert np.from_dlpack(ignis.tensor(2.0)).shape == ()


def test_producer_outlives_its_python_object():
    a = sample((1000,), "float64")
    expect = a.copy()
    base_refs = sys.getrefcount(a)
    t = ignis.from_dlpack(a)
    assert sys.getrefcount(a) > base_refs  # the capsule's deleter holds the array
    del a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), expect)


def test_consumer_releases_the_producer():
    a = sample((10,), "float32")
    before = sys.getrefcount(a)
    t = ignis.from_dlpack(a)
    del t
    gc.collect()
    assert sys.getrefcount(a) == before


def test_export_keeps_the_ignis_storage_alive():
    t = ignis.arange(12, dtype=ignis.float32).reshape(3, 4)
    a = np.from_dlpack(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(a, np.arange(12, dtype=np.float32).reshape(3, 4))


# ---- capsules -----------------------------------------------------------------------------

def test_legacy_capsule_round_trip_and_single_use():
    t = ignis.arange(6, dtype=ignis.int32)
    c = idl.to_dlpack(t)
    assert capsule_name(c) == "dltensor"
    u = idl.from_dlpack(c)
    assert capsule_name(c) == "used_dltensor"
    assert u.tolist() == list(range(6)) and u.data_ptr() == t.data_ptr()
    with pytest.raises(TypeError, match="consumed only once"):
        ignis.from_dlpack(c)


def test_versioned_capsule():
    t = ignis.ones(2, 3)
    c = t.__dlpack__(max_version=(1, 0))
    assert capsule_name(c) == "dltensor_versioned"
    u = ignis.from_dlpack(c)
    assert capsule_name(c) == "used_dltensor_versioned"
    assert u.data_ptr() == t.data_ptr() and u.shape == (2, 3)
    assert capsule_name(t.__dlpack__()) == "dltensor"
    assert capsule_name(t.__dlpack__(max_version=(0, 8))) == "dltensor"


def test_unconsumed_capsules_are_freed():
    t = ignis.ones(4)
    for _ in range(100):
        t.__dlpack__()
        t.__dlpack__(max_version=(1, 0))
    gc.collect()
    assert t.sum().item() == 4


def test_dlpack_device_and_arguments():
    t = ignis.ones(3)
    assert t.__dlpack_device__() == (1, 0)
    assert t.__dlpack_device__()[0] == idl.DLDeviceType.kDLCPU
    with pytest.raises(RuntimeError, match="require gradient"):
        ignis.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(TypeError, match="stream must be"):
        t.__dlpack__(stream="s")
    copied = ignis.from_dlpack(t.__dlpack__(copy=True))
    assert copied.data_ptr() != t.data_ptr() and copied.tolist() == [1.0, 1.0, 1.0]
    same = ignis.from_dlpack(t.__dlpack__(dl_device=(1, 0), copy=False))
    assert same.data_ptr() == t.data_ptr()


def test_from_dlpack_copy_and_device_arguments():
    a = sample((3,), "float32")
    c = ignis.from_dlpack(a, copy=True)
    assert c.data_ptr() != a.ctypes.data and c.tolist() == a.tolist()
    assert ignis.from_dlpack(a, copy=False).data_ptr() == a.ctypes.data
    assert ignis.from_dlpack(a, device="cpu").data_ptr() == a.ctypes.data
    cap = ignis.from_dlpack(idl.to_dlpack(ignis.ones(2)), copy=True)
    assert cap.tolist() == [1.0, 1.0]


def test_unsupported_dtype_is_named():
    with pytest.raises((TypeError, BufferError), match="complex|dtype|DLPack"):
        ignis.from_dlpack(np.zeros(3, dtype=np.complex64))


def test_an_ignis_tensor_round_trips_through_itself():
    t = ignis.arange(5, dtype=ignis.float64)
    u = ignis.from_dlpack(t)
    assert u.data_ptr() == t.data_ptr() and u.tolist() == t.tolist()


# ---- CPU, torch ---------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_torch_round_trip_cpu(dtype):
    src = torch.from_numpy(sample((4, 6), "float32")).to(getattr(torch, dtype))
    t = ignis.from_dlpack(src)
    assert t.dtype == getattr(ignis, dtype) and t.data_ptr() == src.data_ptr()
    back = torch.from_dlpack(t)
    assert back.dtype == src.dtype and back.data_ptr() == src.data_ptr()
    assert torch.equal(back, src)
    # shared: a write in torch is seen by ignis
    src[0, 0] = src[1, 1]
    assert t[0, 0].item() == t[1, 1].item()


@needs_torch
def test_torch_strided_and_capsule_apis():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    view = base.t()[1:, ::2]
    t = ignis.from_dlpack(view)
    assert t.tolist() == view.tolist() and tuple(t.stride()) == view.stride()
    u = torch.utils.dlpack.from_dlpack(idl.to_dlpack(ignis.arange(4)))
    assert u.tolist() == [0, 1, 2, 3]
    v = idl.from_dlpack(torch.utils.dlpack.to_dlpack(torch.ones(2, 2)))
    assert v.tolist() == [[1, 1], [1, 1]]
    it = ignis.arange(6, dtype=ignis.float32).reshape(2, 3).t()
    tt = torch.from_dlpack(it)
    assert tt.stride() == tuple(it.stride()) and tt.tolist() == it.tolist()


# ---- CUDA ---------------------------------------------------------------------------------

@needs_gpu
def test_cuda_dlpack_device():
    assert ignis.ones(2, device="cuda").__dlpack_device__() == (2, 0)


@needs_gpu
def test_cuda_round_trip_through_ignis_itself():
    t = ignis.arange(10, dtype=ignis.float32).to("cuda")
    u = ignis.from_dlpack(t)
    assert u.device.type == "cuda" and u.data_ptr() == t.data_ptr()
    assert u.cpu().tolist() == list(range(10))
    with pytest.raises(ValueError, match="stream 0 is ambiguous"):
        t.__dlpack__(stream=0)
    g = ignis.from_dlpack(np.arange(3, dtype=np.float32), device="cuda")
    assert g.device.type == "cuda" and g.cpu().tolist() == [0.0, 1.0, 2.0]
    h = ignis.from_dlpack(t, device="cpu")
    assert h.device.type == "cpu" and h.tolist() == list(range(10))
    with pytest.raises(ValueError, match="without copying"):
        ignis.from_dlpack(t, device="cpu", copy=False)
    # a consumer asking for host memory gets a copy (NumPy's dl_device)
    c = ignis.from_dlpack(t.__dlpack__(dl_device=(1, 0)))
    assert c.device.type == "cpu" and c.tolist() == list(range(10))


@needs_torch_cuda
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "int64", "bool"])
def test_torch_cuda_round_trip(dtype):
    src = torch.arange(12, device="cuda").reshape(3, 4).to(getattr(torch, dtype))
    t = ignis.from_dlpack(src)
    assert t.device.type == "cuda" and t.data_ptr() == src.data_ptr()
    assert t.cpu().tolist() == src.cpu().tolist()
    back = torch.from_dlpack(t)
    assert back.device.type == "cuda" and back.data_ptr() == src.data_ptr()
    src.fill_(1)
    torch.cuda.synchronize()
    assert t.cpu().tolist() == [[True if dtype == "bool" else 1] * 4] * 3


@needs_torch_cuda
def test_torch_cuda_consumer_waits_for_ignis_stream():
    # ignis fills a large tensor on a side stream; torch reads it on its own current stream
    # straight away: the handshake makes torch's stream wait for ignis's event.
    s = ignis.cuda.Stream()
    with ignis.cuda.stream(s):
        t = ignis.full((4096, 4096), 3.0, device="cuda")
        a = ignis.mm(t, t)  # long enough to still be running when torch reads
        out = torch.from_dlpack(a)
    assert float(out[0, 0].item()) == 3.0 * 3.0 * 4096


@needs_torch_cuda
def test_ignis_consumer_waits_for_torch_stream():
    # torch produces on its current stream s; ignis consumes on its own current stream (the
    # default one), which torch's __dlpack__ makes wait on an event recorded on s.
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.full((4096, 4096), 2.0, device="cuda")
        y = x @ x
        t = ignis.from_dlpack(y)
    assert t[0, 0].item() == 2.0 * 2.0 * 4096


@needs_torch_cuda
def test_torch_cuda_producer_kept_alive():
    src = torch.full((1000,), 7.0, device="cuda")
    t = ignis.from_dlpack(src)
    del src
    gc.collect()
    torch.cuda.empty_cache()
    _ = torch.zeros(10 ** 6, device="cuda")  # would reuse the freed block
    assert t.cpu().tolist() == [7.0] * 1000


@needs_cupy
def test_cupy_round_trip():
    c = cupy.arange(20, dtype=cupy.float32).reshape(4, 5)
    t = ignis.from_dlpack(c)
    assert t.device.type == "cuda" and t.data_ptr() == c.data.ptr
    assert t.cpu().tolist() == c.get().tolist()
    back = cupy.from_dlpack(t)
    assert back.data.ptr == c.data.ptr
    c[0, 0] = 42
    cupy.cuda.runtime.deviceSynchronize()
    assert t[0, 0].item() == 42

"""ignis.cuda and CUDA tensors (src/ignis/cuda, src/ignis/kernels/cuda).

The first part runs everywhere and checks what a machine with no GPU (or no
driver, or a build with IGNIS_CUDA=OFF) sees: import works, is_available() is
False without raising, and anything that needs a GPU raises a RuntimeError
saying why. The second part needs a GPU and is skipped, with the reason,
elsewhere; README.md says how to run it on the GPU machine. Values are checked
against the same work on the CPU (bit for bit: copies and fills compute no
arithmetic) and device facts against torch.cuda when torch sees the GPU.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

AVAILABLE = ignis.cuda.is_available()
REASON = ignis._C._cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(not AVAILABLE, reason=f"no usable CUDA GPU here: {REASON}")
no_gpu = pytest.mark.skipif(AVAILABLE, reason="checks the behaviour on machines without a GPU")
MiB = 1 << 20
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64"]
NO_GPU_MESSAGE = r"no CUDA GPUs are available|ignis was built without CUDA"


# ---- everywhere ------------------------------------------------------------------------

def test_is_available_is_a_bool_and_agrees_with_device_count():
    assert isinstance(AVAILABLE, bool)
    assert (ignis.cuda.device_count() > 0) == AVAILABLE
    assert ignis.cuda.is_initialized() == AVAILABLE


def test_out_of_memory_error_is_a_runtime_error():
    assert issubclass(ignis.OutOfMemoryError, RuntimeError)
    assert ignis.cuda.OutOfMemoryError is ignis.OutOfMemoryError


def test_seeds_work_without_a_gpu():
    ignis.cuda.manual_seed(123)
    assert ignis.cuda.initial_seed() == 123
    ignis.cuda.manual_seed_all(7)
    assert ignis.cuda.initial_seed() == 7


@no_gpu
def test_no_gpu_reason_is_stated():
    assert REASON
    assert ignis.cuda.device_count() == 0


@no_gpu
@pytest.mark.parametrize("make", [
    lambda: ignis.zeros(3, device="cuda"),
    lambda: ignis.empty(2, 2, device="cuda:0"),
    lambda: ignis.full((2,), 1.5, device="cuda"),
    lambda: ignis.ones(3).cuda(),
    lambda: ignis.ones(3).to("cuda"),
    lambda: ignis.ones(3).to("cuda", non_blocking=True),
    lambda: ignis.ones(3).pin_memory(),
    lambda: ignis.cuda.current_device(),
    lambda: ignis.cuda.synchronize(),
    lambda: ignis.cuda.Stream(),
    lambda: ignis.cuda.current_stream(),
    lambda: ignis.cuda.get_device_properties(0),
    lambda: ignis.cuda.set_device(0),
    lambda: ignis.cuda.init(),
], ids=["zeros", "empty", "full", "cuda()", "to", "to_non_blocking", "pin_memory",
        "current_device", "synchronize", "Stream", "current_stream", "properties",
        "set_device", "init"])
def test_gpu_requests_raise_runtime_error_without_a_gpu(make):
    with pytest.raises(RuntimeError, match=NO_GPU_MESSAGE):
        make()


@no_gpu
def test_memory_functions_read_zero_without_a_gpu():
    assert ignis.cuda.memory_allocated() == 0
    assert ignis.cuda.max_memory_allocated() == 0
    assert ignis.cuda.memory_reserved() == 0
    assert ignis.cuda.memory_stats() == {}
    ignis.cuda.empty_cache()
    ignis.cuda.reset_peak_memory_stats()
    assert not ignis.ones(3).is_pinned()


@no_gpu
def test_cpu_work_is_unaffected():
    x = ignis.arange(6.0).reshape(2, 3)
    assert x.to("cpu") is x
    assert (x.cpu() + 1).sum().item() == 21.0


def test_import_with_cuda_disabled_by_environment(tmp_path):
    """A process whose loader cannot find libcuda still imports and reports False."""
    code = ("import _checkout, ignis; assert ignis.cuda.is_available() is False; "
            "print(ignis._C._cuda_unavailable_reason())")
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path))
    if AVAILABLE:
        pytest.skip("the driver is installed system-wide here; hiding it needs a machine without it")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=Path(__file__).parent)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip()


# ---- on a GPU ---------------------------------------------------------------------------

def cpu_values(t):
    """A CPU tensor's values as a NumPy array of their bits (floats as unsigned integers;
    bfloat16 through float32, which holds it exactly)."""
    a = np.asarray(t.float() if t.dtype is ignis.bfloat16 else t)
    return a.view(f"u{a.itemsize}") if a.dtype.kind == "f" else a


def same(a, b):
    assert a.dtype is b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(cpu_values(a), cpu_values(b))


@needs_gpu
def test_device_facts_match_torch():
    p = ignis.cuda.get_device_properties(0)
    assert p.name and p.total_memory > 0 and p.multi_processor_count > 0 and p.major >= 3
    assert ignis.cuda.get_device_name() == p.name
    assert ignis.cuda.current_device() == 0
    if torch is None or not torch.cuda.is_available():
        pytest.skip("torch does not see the GPU: only ignis's own facts were checked")
    tp = torch.cuda.get_device_properties(0)
    assert (p.name, p.total_memory, p.multi_processor_count, p.major, p.minor) == \
        (tp.name, tp.total_memory, tp.multi_processor_count, tp.major, tp.minor)
    assert ignis.cuda.device_count() == torch.cuda.device_count()


@needs_gpu
def test_set_device_and_device_context():
    ignis.cuda.set_device(0)
    with ignis.cuda.device(0):
        assert ignis.cuda.current_device() == 0
    with ignis.cuda.device("cuda:0"):
        assert ignis.cuda.current_device() == 0
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ignis.cuda.set_device(ignis.cuda.device_count())


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [0, 1, -3, 2.5, 1e30, float("nan"), True])
def test_full_matches_the_cpu(dtype, value):
    dt = getattr(ignis, dtype)
    try:
        ref = ignis.full((5, 7), value, dtype=dt)
    except RuntimeError as e:  # the value does not fit the dtype: the same error on the GPU
        with pytest.raises(RuntimeError) as got:
            ignis.full((5, 7), value, dtype=dt, device="cuda")
        assert str(got.value) == str(e)
        return
    got = ignis.full((5, 7), value, dtype=dt, device="cuda")
    assert got.device == ignis.device("cuda:0") and got.is_cuda
    same(got.cpu(), ref)


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_factories(dtype):
    dt = getattr(ignis, dtype)
    same(ignis.zeros(3, 4, dtype=dt, device="cuda").cpu(), ignis.zeros(3, 4, dtype=dt))
    same(ignis.ones(1000, dtype=dt, device="cuda").cpu(), ignis.ones(1000, dtype=dt))
    e = ignis.empty(2, 3, dtype=dt, device="cuda")
    assert e.shape == (2, 3) and e.dtype is dt and e.is_cuda
    same(ignis.zeros_like(e).cpu(), ignis.zeros(2, 3, dtype=dt))
    assert ignis.empty(0, device="cuda").cpu().shape == (0,)


@needs_gpu
def test_fill_of_a_strided_view_leaves_the_rest():
    x = ignis.zeros(4, 6, device="cuda")
    x[:, 1::2].fill_(7.0)
    ref = ignis.zeros(4, 6)
    ref[:, 1::2].fill_(7.0)
    same(x.cpu(), ref)
    x.zero_()
    same(x.cpu(), ignis.zeros(4, 6))


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip(dtype):
    dt = getattr(ignis, dtype)
    rng = np.random.default_rng(0)
    x = ignis.tensor(rng.standard_normal((33, 65)) * 50).to(dt)
    y = x.to("cuda")
    assert y.is_cuda and y.dtype is dt and y.shape == x.shape
    same(y.cpu(), x)
    same(x.cuda().cpu(), x)
    same(x.cuda(0).to("cpu"), x)


@needs_gpu
@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", ["bool", "int32", "float16", "bfloat16", "float32", "float64"])
def test_conversions_on_the_gpu_match_the_cpu(src, dst):
    rng = np.random.default_rng(1)
    x = ignis.tensor(rng.standard_normal(257) * 300).to(getattr(ignis, src))
    want = x.to(getattr(ignis, dst))
    same(x.cuda().to(getattr(ignis, dst)).cpu(), want)          # on the GPU
    same(x.to("cuda", dtype=getattr(ignis, dst)).cpu(), want)   # on the way up
    same(x.cuda().to("cpu", dtype=getattr(ignis, dst)), want)   # on the way down


@needs_gpu
def test_strided_copies():
    x = ignis.arange(24.0).reshape(2, 3, 4)
    g = x.cuda()
    same(g.transpose(0, 2).cpu(), x.transpose(0, 2).contiguous())        # D2H of a view
    same(g.transpose(0, 2).contiguous().cpu(), x.transpose(0, 2).contiguous())  # D2D kernel
    same(x.transpose(0, 2).cuda().cpu(), x.transpose(0, 2).contiguous())        # H2D of a view
    assert g.transpose(0, 2).contiguous().is_contiguous()
    same(g[:, 1:, ::2].clone().cpu(), x[:, 1:, ::2].clone())


@needs_gpu
def test_copy_between_devices_broadcasts_and_converts():
    dst = ignis.zeros(3, 4, device="cuda")
    dst.copy_(ignis.arange(4, dtype=ignis.int64))           # cpu -> cuda, broadcast
    same(dst.cpu(), ignis.arange(4.0).expand(3, 4).contiguous())
    dst[1].copy_(ignis.full((4,), 9.0, device="cuda"))     # cuda -> strided cuda view
    host = ignis.zeros(3, 4, dtype=ignis.float64)
    host.copy_(dst)                                          # cuda -> cpu, converted
    ref = ignis.arange(4.0).expand(3, 4).contiguous()
    ref[1] = 9.0
    same(host, ref.double())
    t = ignis.empty(4, 3)
    t.t().copy_(dst)                                         # cuda -> strided cpu view
    same(t.t().contiguous(), ref)


@needs_gpu
def test_pinned_memory_and_non_blocking_copies():
    x = ignis.arange(1 << 20, dtype=ignis.float32)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and not p.is_cuda and p.pin_memory() is p
    same(p, x)
    g = p.to("cuda", non_blocking=True)
    out = ignis.empty(1 << 20).pin_memory()
    out.copy_(g, non_blocking=True)
    ignis.cuda.synchronize()
    same(out, x)
    same(p.cuda(non_blocking=True).cpu(), x)


@needs_gpu
def test_item_repr_and_numpy():
    g = ignis.full((), 2.5, device="cuda")
    assert g.item() == 2.5 and float(g) == 2.5
    assert "device='cuda:0'" in repr(ignis.ones(2, device="cuda"))
    with pytest.raises(TypeError, match="cuda:0 device type tensor to numpy"):
        ignis.ones(2, device="cuda").numpy()


@needs_gpu
def test_mixing_devices_raises_torchs_message():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ignis.ones(2) + ignis.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ignis.ones(2, device="cuda").mul(ignis.ones(2))
    # A 0-dim CPU tensor may join, as in torch (its value becomes a kernel
    # argument).
    r = ignis.ones(2, device="cuda") + ignis.tensor(1.0)
    assert r.device.type == "cuda" and r.cpu().tolist() == [2.0, 2.0]


@needs_gpu
def test_memory_counters():
    ignis.cuda.synchronize()
    ignis.cuda.empty_cache()
    base = ignis.cuda.memory_allocated()
    ignis.cuda.reset_peak_memory_stats()
    x = ignis.empty(1000, dtype=ignis.uint8, device="cuda")          # rounded to 1024
    assert ignis.cuda.memory_allocated() == base + 1024
    y = ignis.empty(3 * MiB, dtype=ignis.uint8, device="cuda")
    assert ignis.cuda.memory_allocated() == base + 1024 + 3 * MiB
    assert ignis.cuda.memory_reserved() >= ignis.cuda.memory_allocated()
    del y
    assert ignis.cuda.memory_allocated() == base + 1024
    assert ignis.cuda.max_memory_allocated() == base + 1024 + 3 * MiB
    ignis.cuda.reset_peak_memory_stats()
    assert ignis.cuda.max_memory_allocated() == base + 1024
    stats = ignis.cuda.memory_stats()
    assert stats["requested_bytes.all.current"] >= 1000
    del x
    ignis.cuda.empty_cache()
    if base == 0:
        assert ignis.cuda.memory_reserved() == 0


@needs_gpu
def test_freed_memory_is_reused():
    ignis.cuda.empty_cache()  # no other cached block can serve the request
    x = ignis.empty(4 * MiB, dtype=ignis.uint8, device="cuda")
    ptr = x.data_ptr()
    allocs = ignis.cuda.memory_stats()["num_device_alloc"]
    del x
    y = ignis.empty(4 * MiB, dtype=ignis.uint8, device="cuda")
    assert y.data_ptr() == ptr
    assert ignis.cuda.memory_stats()["num_device_alloc"] == allocs


@needs_gpu
def test_out_of_memory_raises_with_numbers_and_recovers():
    ooms = ignis.cuda.memory_stats()["num_ooms"]
    with pytest.raises(ignis.OutOfMemoryError, match=r"CUDA out of memory. Tried to allocate .* "
                       r"GPU 0 has a total capacity of"):
        ignis.empty(1 << 50, dtype=ignis.uint8, device="cuda")
    assert ignis.cuda.memory_stats()["num_ooms"] == ooms + 1
    same(ignis.ones(10, device="cuda").cpu(), ignis.ones(10))


@needs_gpu
def test_streams():
    default = ignis.cuda.default_stream()
    assert default.cuda_stream == 0
    assert ignis.cuda.current_stream() == default
    s = ignis.cuda.Stream()
    assert s != default and s.device == ignis.device("cuda:0")
    with ignis.cuda.stream(s):
        assert ignis.cuda.current_stream() == s
        x = ignis.full((1 << 20,), 3.0, device="cuda")
        x.record_stream(default)
    assert ignis.cuda.current_stream() == default
    s.synchronize()
    assert s.query()
    default.wait_stream(s)
    same(x.cpu(), ignis.full((1 << 20,), 3.0))


@needs_gpu
def test_events_time_work():
    start = ignis.cuda.Event(enable_timing=True)
    end = ignis.cuda.Event(enable_timing=True)
    assert start.query()
    start.record()
    for _ in range(10):
        ignis.full((1 << 24,), 1.0, device="cuda")
    end.record()
    end.synchronize()
    assert end.query()
    assert end.elapsed_time(start) <= 0 < start.elapsed_time(end)
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        e = ignis.cuda.Event()
        e.record()
        e.elapsed_time(end)


@needs_gpu
def test_kernels_are_cached_on_disk(tmp_path):
    code = ("import _checkout, ignis, json; ignis.full((4,), 3, dtype=ignis.int16, device='cuda').cpu(); "
            "print(json.dumps(ignis._C._cuda_kernel_cache_stats()))")
    env = dict(os.environ, IGNIS_CACHE_DIR=str(tmp_path))
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           cwd=Path(__file__).parent)
        assert r.returncode == 0, r.stderr
        import json
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert runs[0]["compiles"] >= 1 and runs[0]["disk_hits"] == 0
    assert runs[1]["compiles"] == 0 and runs[1]["disk_hits"] == runs[0]["compiles"]
    assert list(tmp_path.glob("cuda/*/*.cubin"))


@needs_gpu
def test_gradient_through_a_device_copy_reaches_the_source_device():
    # The gradient of x.cuda() / x.to("cuda", float64) / copy_ from a CPU
    # source comes back on the CPU, where it accumulates into x.grad.
    x = ignis.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    (x.cuda() * 3).sum().backward()
    (x.to("cuda", ignis.float64) * 4).sum().backward()
    dst = ignis.zeros(3, device="cuda")
    dst.copy_(x)
    (dst * 5).sum().backward()
    assert x.grad.device.type == "cpu" and x.grad.dtype == ignis.float32
    np.testing.assert_array_equal(x.grad.numpy(), [14.0, 14.0, 14.0])
    y = ignis.ones(2, device="cuda", requires_grad=True)
    (y.cpu() * 2).sum().backward()
    assert y.grad.device.type == "cuda"
    np.testing.assert_array_equal(y.grad.cpu().numpy(), [2.0, 2.0])

"""bench/gpu.py's GPU timeline (--profile): busy and idle time, gaps and the
host's synchronizing calls, read from a Chrome trace as torch.profiler
writes it. Synthetic traces: no GPU and no torch needed."""
import json
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import gpu  # noqa: E402


def _trace(tmp_path, events):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return str(path)


def _kernel(name, ts, dur, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur}


def test_busy_idle_and_the_largest_gaps(tmp_path):
    events = [
        _kernel("a", 0, 10), _kernel("b", 12, 5),          # gap 2 after a
        _kernel("c", 14, 4),                                 # overlaps b: no gap, 1 more busy
        _kernel("Memset (Device)", 30, 1, "gpu_memset"),    # gap 12 after c... b ends 17, c 18
        _kernel("d", 31, 9),
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "ts": 40, "dur": 6},
        {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "ts": 1, "dur": 3},
        {"ph": "i", "cat": "kernel", "name": "not a span", "ts": 5},
    ]
    tl = gpu.gpu_timeline(_trace(tmp_path, events), n=2)
    assert tl["span_us"] == pytest.approx(40 / 2)
    assert tl["busy_us"] == pytest.approx((10 + 5 + 1 + 1 + 9) / 2)
    assert tl["idle_us"] == pytest.approx((40 - 26) / 2)
    assert [g[:3] for g in tl["gaps"]] == [[12.0, "c", "Memset (Device)"], [2.0, "a", "b"]]
    assert tl["syncs"] == {"cudaDeviceSynchronize": [0.5, 3.0]}


def test_no_kernels_gives_an_empty_timeline(tmp_path):
    assert gpu.gpu_timeline(_trace(tmp_path, []), n=1) == {}


def test_launch_shapes_give_blocks_a_multiprocessor_and_waves(tmp_path):
    def k(name, regs, threads, blocks, smem=0):
        return {"ph": "X", "cat": "kernel", "name": name, "ts": 0, "dur": 1,
                "args": {"registers per thread": regs, "grid": [blocks, 1, 1],
                         "block": [threads, 1, 1], "shared memory": smem}}
    events = [k("norm", 96, 32, 4096), k("norm", 10, 32, 1),  # the first launch counts
              k("lean", 61, 32, 4096), k("attn", 128, 256, 384, smem=99328),
              k("wide", 32, 1024, 10)]
    sh = gpu.launch_shapes(_trace(tmp_path, events), sms=132)
    # 96 registers x 32 threads: 21 blocks (65536 / 3072); 4096 / (132 * 21) waves
    assert sh["norm"][:4] == [96, 32, 4096, 21]
    assert sh["norm"][4] == pytest.approx(4096 / (132 * 21))
    assert sh["lean"][3] == 32  # 64 registers allocated: the 32-block limit
    assert sh["attn"][3] == 2   # shared memory: two blocks of 97 KiB
    assert sh["wide"][3] == 2   # threads: 2048 / 1024


def test_print_profile_shows_the_timeline_and_the_kernels(capsys):
    prof = {"timeline": {"span_us": 20.0, "busy_us": 13.0, "idle_us": 7.0,
                         "gaps": [[12.0, "c", "d"]], "syncs": {"cudaDeviceSynchronize": [1, 2.0]}},
            "kernels": [["k1", 2, 10.0], ["k2", 1, 3.0]],
            "shapes": {"k1": [96, 32, 4096, 21, 1.4776]}}
    gpu.print_profile("row", "ignis.compile", prof)
    out = capsys.readouterr().out
    assert "span 20.0 µs, GPU busy 13.0, idle 7.0" in out
    assert "gap 12.0 µs after c before d" in out
    assert "host cudaDeviceSynchronize: 1 a call, 2.0 µs" in out
    assert "| 10.0 | 76.9% | 2 | 96, 32 x 4096: 21, 1.48 | k1 |" in out
    assert "| 3.0 | 23.1% | 1 |  | k2 |" in out
    gpu.print_profile("row", "x", {"timeline": {"error": "ValueError: bad"}, "kernels": []})
    assert "not read (ValueError: bad)" in capsys.readouterr().out

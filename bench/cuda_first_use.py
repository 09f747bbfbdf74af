"""First-use latency of ignis's eager CUDA kernels (docs/cuda.md).

Eager kernels are CUDA C++ compiled by NVRTC for the running GPU the first
time a (kernel, dtypes) pair is used, then kept in the on-disk cache. This
prints, in fresh processes: CUDA start-up (driver, primary context), the first
call of a kernel with an empty cache (NVRTC + load), the same call in a new
process with a warm disk cache (read + cuModuleLoadData), and a later call in
the same process; with torch's first call of the same work for scale.

    PYTHONPATH=python python3 bench/cuda_first_use.py
"""
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
# The ignis on PYTHONPATH, not an editable install's (as tests/python/_checkout.py does).
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__name__.startswith("ScikitBuild")]
t0 = time.perf_counter()
import ignis
ignis.cuda.synchronize()
t1 = time.perf_counter()
def run(dt):
    ignis.full((1 << 20,), 1.5, dtype=dt, device="cuda")
    ignis.cuda.synchronize()
out = {"start_s": t1 - t0}
for name, dt in [("float32", ignis.float32), ("bfloat16", ignis.bfloat16)]:
    a = time.perf_counter(); run(dt); b = time.perf_counter(); run(dt); c = time.perf_counter()
    out[name + "_first_s"] = b - a
    out[name + "_again_s"] = c - b
x = ignis.ones(64, 64, device="cuda")
a = time.perf_counter(); x.t().contiguous(); ignis.cuda.synchronize(); b = time.perf_counter()
out["strided_copy_first_s"] = b - a
out["cache"] = ignis._C._cuda_kernel_cache_stats()
out["nvrtc"] = ignis._C._cuda_nvrtc_version()
print(json.dumps(out))
"""

TORCH = r"""
import json, time
import torch
t0 = time.perf_counter(); torch.cuda.synchronize(); t1 = time.perf_counter()
a = time.perf_counter(); torch.full((1 << 20,), 1.5, device="cuda"); torch.cuda.synchronize()
b = time.perf_counter()
print(json.dumps({"start_s": t1 - t0, "float32_first_s": b - a}))
"""


def child(code, env):
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, IGNIS_CACHE_DIR=d)
        cold = child(CHILD, env)
        warm = child(CHILD, env)
    try:
        torch = child(TORCH, dict(os.environ))
    except SystemExit as e:
        torch = {"error": str(e)[-200:]}
    print("nvrtc:", cold["nvrtc"])
    print(f"{'':34s} {'cold cache':>12s} {'warm cache':>12s}")
    for k in ["start_s", "float32_first_s", "float32_again_s", "bfloat16_first_s",
              "bfloat16_again_s", "strided_copy_first_s"]:
        print(f"{k:34s} {cold[k] * 1e3:10.1f}ms {warm[k] * 1e3:10.1f}ms")
    print("cold cache stats:", cold["cache"])
    print("warm cache stats:", warm["cache"])
    print("torch:", torch)


if __name__ == "__main__":
    main()

"""The CPU caching allocator on and off, one process each
(IGNIS_CPU_ALLOCATOR=caching | malloc; the switch is read at the first allocation).

Rows: ops writing a fresh float32 output in a loop, as a training step does
(clone: read + write; add: 2 reads + write), at sizes around the caching
threshold (1 MiB) up to 64 MiB, as GB/s of bytes moved; the same copy into an
existing buffer (copy_, no allocation) as the roof; and the 1-element add
(us per call) for the per-op overhead of small tensors, which never touch the cache.

    python bench/allocator.py [--threads N] [--quick] [--rounds 3]

Each round runs both processes; per row the best round is kept (the median
time within a round), which filters out other processes on a shared machine.
"roof" divides a row by the copy_ row of the same size measured in the same
process, so that load from other processes cancels out of it.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
import _checkout  # noqa: E402,F401  (this checkout's ignis, ahead of an editable install)

SIZES = [256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def bench(fn, min_time):
    for _ in range(3):
        fn()
    times = []
    while sum(times) < min_time or len(times) < 5:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def child(threads, min_time):
    import ignis
    if threads:
        ignis.set_num_threads(threads)
    rows = {}
    a1, b1 = ignis.ones(1), ignis.ones(1)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(20000):
            a1 + b1
        best = min(best, (time.perf_counter() - t0) / 20000)
    rows["add 1-element"] = best * 1e6
    for n in SIZES:
        x = ignis.rand(n // 4)
        y = ignis.rand(n // 4)
        out = ignis.empty_like(x)
        label = f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"
        rows[f"clone {label}"] = 2 * n / bench(lambda: x.clone(), min_time) / 1e9
        rows[f"add {label}"] = 3 * n / bench(lambda: x + y, min_time) / 1e9
        rows[f"copy_ (no alloc) {label}"] = 2 * n / bench(lambda: out.copy_(x), min_time) / 1e9
    stats = ignis.cpu.memory_stats()
    return {"rows": rows, "threads": ignis.get_num_threads(), "ignis": ignis.__file__,
            "hits": stats["num_cache_hits"], "misses": stats["num_cache_misses"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    min_time = 0.1 if args.quick else 0.3
    if args.child:
        print(json.dumps(child(args.threads, min_time)))
        return
    best = {}  # mode -> row -> best value over rounds
    roof = {}  # mode -> row -> best fraction of the same process's copy_ bandwidth
    info = {}
    for _ in range(args.rounds):
        for mode in ("malloc", "caching"):
            env = dict(os.environ, IGNIS_CPU_ALLOCATOR=mode)
            cmd = [sys.executable, __file__, "--child"] + (["--quick"] if args.quick else [])
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            info.setdefault(mode, r)
            rows, b, f = r["rows"], best.setdefault(mode, {}), roof.setdefault(mode, {})
            for name, v in rows.items():
                keep = min if name == "add 1-element" else max
                b[name] = keep(b.get(name, v), v)
                size = name.split(" ", 1)[1]
                ref = rows.get(f"copy_ (no alloc) {size}")
                if ref and not name.startswith("copy_"):
                    f[name] = max(f.get(name, 0.0), v / ref)
    on = info["caching"]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"threads {on['threads']}, ignis {on['ignis']}")
    print(f"cache hits/misses in the first caching run: {on['hits']}/{on['misses']}")
    print("roof: GB/s over the copy_ (no alloc) GB/s of the same size in the same process")
    print()
    print(f"| {'case':<26} | {'malloc':>8} | {'caching':>8} | unit | speedup "
          f"| malloc roof | caching roof |")
    print(f"| {'-' * 26} | {'-' * 8} | {'-' * 8} | ---- | ------- | ----------- | ------------ |")
    for name, v_off in best["malloc"].items():
        v_on = best["caching"][name]
        unit, speedup = ("us", v_off / v_on) if name == "add 1-element" else ("GB/s", v_on / v_off)
        r_off, r_on = roof["malloc"].get(name), roof["caching"].get(name)
        roofs = f"{r_off:>11.0%} | {r_on:>12.0%}" if r_off else f"{'':>11} | {'':>12}"
        print(f"| {name:<26} | {v_off:>8.2f} | {v_on:>8.2f} | {unit:<4} | {speedup:>7.2f} "
              f"| {roofs} |")

if __name__ == "__main__":
    main()

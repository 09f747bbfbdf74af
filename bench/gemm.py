"""float32 GEMM: ignis's built-in GEMM, ignis through OpenBLAS, and PyTorch
(MKL / oneDNN), side by side in one run, each in its own process.

Shapes: a GPT block's linears at the example's sizes (bench/train.py's
"small" config: 1024 tokens, d=64), an MLP's up and down projections
(1024x1024 @ 1024x4096, 1024x4096 @ 4096x1024), and the same with B
transposed (x @ W^T, as nn.Linear multiplies). Prints GFLOP/s of the best
and median run and each ignis variant's time as a ratio of torch's.

    python bench/gemm.py [--threads N] [--rounds R] [--cpu-time] [--set default|medium]
                         [--impls builtin,openblas,torch] [--variant ENV=VALUE ...]

--variant runs the built-in GEMM once more with ENV=VALUE set (say
IGNIS_GEMM_DEPTH_SLICES=0), in the same run as the others.

--set medium: the products of bench/train.py's "medium" GPT training step
(2048 tokens, d=128, MLP 512, vocab 256): the forward's x @ W^T, the
backward's dY @ W and the weight gradients dY^T @ X (A transposed, a long
depth of 2048 and a small result).

--cpu-time measures the process's CPU time instead of wall time: on a
machine shared with other work it moves far less (a descheduled thread
stops counting), at the price of hiding idle threads.
"""
import argparse
import json
import os
import subprocess
import sys
import time

SHAPES = [  # (m, k, n, b transposed)
    (1024, 64, 192, True), (1024, 64, 256, True), (1024, 256, 64, True),
    (1024, 64, 64, True), (64, 1024, 256, False), (256, 1024, 64, False),
    (1024, 1024, 4096, True), (1024, 4096, 1024, True), (1024, 1024, 4096, False),
    (1024, 1024, 1024, False),
]
# (m, k, n, b transposed, a transposed)
MEDIUM = ([(2048, 128, n, True, False) for n in (384, 128, 512, 256)] + [(2048, 512, 128, True, False)]
          + [(2048, k, 128, False, False) for k in (384, 128, 512, 256)]
          + [(2048, 128, 512, False, False)]
          + [(m, 2048, 128, False, True) for m in (384, 128, 512, 256)]
          + [(128, 2048, 512, False, True)])
SETS = {"default": [s + (False,) for s in SHAPES], "medium": MEDIUM}
IMPLS = {"builtin": ("ignis builtin", "ignis", "builtin"),
         "openblas": ("ignis openblas", "ignis", "blas"), "torch": ("torch", "torch", None)}


def child(lib, threads, rounds, cpu_time, shapes):
    import numpy as np
    if lib == "ignis":
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.join(here, "..", "tests", "python"))
        import _checkout  # noqa: F401  (this checkout's build, when it has one)
    mod = __import__(lib)
    mod.set_num_threads(threads)
    clock = time.process_time if cpu_time else time.perf_counter
    rng = np.random.default_rng(0)
    out = []
    for m, k, n, bt, at in shapes:
        a = mod.from_numpy(rng.standard_normal((k, m) if at else (m, k)).astype(np.float32))
        a = a.t() if at else a
        w = mod.from_numpy(rng.standard_normal((n, k) if bt else (k, n)).astype(np.float32))
        b = w.t() if bt else w
        reps = max(3, min(rounds, int(2e9 / (2 * m * k * n))))
        for _ in range(2):
            mod.mm(a, b)
        ts = []
        for _ in range(reps):
            t = clock()
            mod.mm(a, b)
            ts.append(clock() - t)
        ts.sort()
        out.append({"best": ts[0], "median": ts[len(ts) // 2]})
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--cpu-time", action="store_true")
    ap.add_argument("--set", choices=sorted(SETS), default="default")
    ap.add_argument("--impls", default="builtin,openblas,torch")
    ap.add_argument("--variant", action="append", default=[],
                    help="ENV=VALUE: the built-in GEMM again with it set")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    shapes = SETS[args.set]
    if args.child:
        return child(args.child[0], args.threads, args.rounds, args.cpu_time, shapes)
    runs = [IMPLS[i] + ({},) for i in args.impls.split(",")]
    for v in args.variant:
        key, _, value = v.partition("=")
        variant = (f"builtin {v}", "ignis", "builtin", {key: value})
        runs.insert(len(runs) - ("torch" in args.impls), variant)  # torch stays last
    results = {}
    for name, lib, gemm, extra in runs:
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), **extra)
        if gemm:
            env["IGNIS_GEMM"] = gemm
        cmd = [sys.executable, __file__, "--child", lib, "x", "--threads", str(args.threads),
               "--rounds", str(args.rounds), "--set", args.set] + (["--cpu-time"] if args.cpu_time else [])
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name}: failed\n{r.stderr[-2000:]}", file=sys.stderr)
            continue
        results[name] = json.loads(r.stdout.strip().splitlines()[-1])
    clock = "process CPU time" if args.cpu_time else "wall time"
    print(f"float32 GEMM, {args.threads} threads, {clock}: GFLOP/s of the best (median) run; "
          f"time / torch's (best)")
    head = f"{'m x k @ k x n':<26}" + "".join(f"{n[:23]:>24}" for n in results)
    print(head + "".join(f"{'/torch ' + n.split(' ', 1)[-1][:8]:>16}" for n in results
                         if n != "torch" and "torch" in results))
    for i, (m, k, n, bt, at) in enumerate(shapes):
        flop = 2 * m * k * n
        tag = " (A^T)" if at else " (B^T)" if bt else ""
        row = f"{m}x{k} @ {k}x{n}{tag:<7}".ljust(26)
        for name, res in results.items():
            row += f"{flop / res[i]['best'] / 1e9:>14.1f} ({flop / res[i]['median'] / 1e9:6.1f})"
        if "torch" in results:
            for name, res in results.items():
                if name != "torch":
                    row += f"{res[i]['best'] / results['torch'][i]['best']:>16.2f}"
        print(row)


if __name__ == "__main__":
    main()

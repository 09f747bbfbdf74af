"""What a new size of a dynamic graph costs: the example GPT's training step
compiled at one sequence length after another, each new length compiled at
its first call, against the same step at a length compiled before.

    python3 bench/size_compile.py [--sizes 12] [--rounds 2] [--other DIR]

Each measurement runs in its own process with a fresh IGNIS_CACHE_DIR (so
every size is lowered: no graph cache hits) and OMP_NUM_THREADS=1. After
three warm-up lengths (the static graph, the recompile that makes the length
symbolic, and its C++ compile), it steps at `--sizes` new lengths (the
compile included) and then at the same lengths again (compiled already);
the difference of the medians is the new size's compile. `--other DIR` runs
the same in another checkout's `python/` directory (a build of its own, e.g.
an older commit's) in the same command, the two alternating `--rounds`
times, for a before/after figure.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from children import child_result  # noqa: E402


def child(args):
    if any((pathlib.Path(args.python) / "ignis").glob("_C*.so")):
        # that checkout's own build, ahead of the editable install's hook
        sys.meta_path[:] = [f for f in sys.meta_path
                            if not type(f).__name__.startswith("ScikitBuild")]
        sys.path.insert(0, args.python)
    sys.path.insert(0, str(ROOT / "examples"))
    import numpy as np
    import ignis
    import ignis._compile as comp
    from gpt import GPTConfig, build_gpt
    comp.PER_SIZE_COMPILE_AFTER = 1
    comp.PER_SIZE_CHURN_COMPILES = 1 << 30
    cfg = GPTConfig(vocab_size=96, block_size=64, n_layer=2, n_head=4, n_embd=64)
    ignis.manual_seed(0)
    fn = ignis.compile(build_gpt(ignis)(cfg))
    rng = np.random.default_rng(0)

    def step(t):
        idx = ignis.from_numpy(rng.integers(0, 96, size=(16, t)))
        t0 = time.perf_counter()
        _, loss = fn(idx, idx)
        loss.backward()
        return time.perf_counter() - t0
    for t in (64, 60, 59):
        step(t)
    lengths = list(range(58, 58 - args.sizes, -1))
    first = [step(t) for t in lengths]
    again = [step(t) for t in lengths]
    out = {"python": args.python, "ignis": ignis._C.__file__,
           "new_ms": statistics.median(first) * 1e3, "seen_ms": statistics.median(again) * 1e3}
    print("RESULT " + json.dumps(out), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, default=12)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--other", default=None, help="another checkout (its python/ is used)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--python", default=str(ROOT / "python"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    pythons = [str(ROOT / "python")]
    if args.other:
        pythons.append(str(pathlib.Path(args.other).resolve() / "python"))
    rows = {py: [] for py in pythons}
    for _ in range(args.rounds):
        for py in pythons:
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, OMP_NUM_THREADS="1", IGNIS_CACHE_DIR=cache)
                cmd = [sys.executable, __file__, "--child", "--python", py,
                       "--sizes", str(args.sizes)]
                r = child_result(cmd, py, 900, env)
            if r is not None:
                rows[py].append(r)
    print(f"GPT training step (small config, batch 16), {args.sizes} new lengths, one thread")
    print(f"{'checkout':40s} {'new size (ms)':>14s} {'seen size (ms)':>15s} {'compile (ms)':>13s}")
    for py, rs in rows.items():
        for r in rs:
            print(f"{str(pathlib.Path(py).parent)[-40:]:40s} {r['new_ms']:14.1f} "
                  f"{r['seen_ms']:15.1f} {r['new_ms'] - r['seen_ms']:13.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

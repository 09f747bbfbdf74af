"""Dynamic shapes in training: the example GPT's training step at many
sequence lengths, compiled, ignis beside torch.compile (and both eager).

    python3 bench/train_lengths.py [--lengths 24] [--passes 3] [--threads 2]
                                   [--impls ignis.compile,torch.compile,ignis,torch]

One step = forward with the loss, zero_grad, backward, AdamW step (the
optimizer eager), on examples/gpt.py's small config (bench/train.py), batch
16. Each implementation runs in its own process with fresh compile caches
(IGNIS_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR in a new temporary directory)
and calls the step at each length in turn, `--passes` times over the
lengths. Both compilers start static and make the length symbolic when it
changes (automatic dynamic); torch then compiles one graph for every length,
ignis instantiates its symbolic AOT graphs and lowers each length once
(size-generic C++: one C++ compile) on the length's second call (Note
[Compiling a size on its second call]): pass 1 and 2 hold the compiles, the
last pass runs what was compiled. Prints each pass's wall time, the mean per
step, and the largest difference of the last pass's losses from the first
implementation's (the same weights, drawn by NumPy).
"""
import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "bench"))
from children import child_result  # noqa: E402

IMPLS = ("ignis.compile", "torch.compile", "ignis", "torch")


def lengths(n):
    """n distinct lengths from 64 down to 16, interleaved (not monotone)."""
    pool = list(range(64, 15, -1))
    picked = [pool[(i * 17) % len(pool)] for i in range(len(pool))]
    out = []
    for v in picked:
        if v not in out:
            out.append(v)
    return out[:n]


def child(args):
    from compiled import load_lib, set_params
    from gpt import build_gpt, configure_optimizer
    from train import SIZES
    lib = load_lib(args.child)
    lib.set_num_threads(args.threads)
    cfg, batch = SIZES["small"]
    lib.manual_seed(0)
    model = build_gpt(lib)(cfg)
    set_params(lib, model)
    opt = configure_optimizer(lib, model)
    fn = lib.compile(model) if args.child.endswith(".compile") else model
    lens = lengths(args.lengths)
    rng = np.random.default_rng(0)
    data = rng.integers(0, cfg.vocab_size, size=(batch, cfg.block_size + 1))
    calls = [(lib.from_numpy(data[:, :n].copy()), lib.from_numpy(data[:, 1:n + 1].copy()))
             for n in lens]
    passes, losses = [], []
    for _ in range(args.passes):
        losses = []
        t0 = time.perf_counter()
        for x, y in calls:
            _, loss = fn(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.item()))
        passes.append(time.perf_counter() - t0)
    out = {"impl": args.child, "lengths": lens, "passes": passes, "losses": losses}
    if args.child.endswith(".compile"):
        mod = "ignis._dynamo.utils" if args.child.startswith("ignis") else "torch._dynamo.utils"
        out["graphs"] = __import__(mod, fromlist=["counters"]).counters["stats"]["unique_graphs"]
    print("RESULT " + json.dumps(out), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lengths", type=int, default=24, help="how many lengths (<= 49)")
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--impls", default=",".join(IMPLS))
    p.add_argument("--timeout", type=int, default=1800)
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    results = []
    for impl in args.impls.split(","):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS=str(args.threads),
                       IGNIS_CACHE_DIR=os.path.join(cache, "ignis"),
                       TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "torch"))
            cmd = [sys.executable, __file__, "--child", impl, "--lengths", str(args.lengths),
                   "--passes", str(args.passes), "--threads", str(args.threads)]
            r = child_result(cmd, impl, args.timeout, env)
        if r is not None:
            results.append(r)
    if not results:
        return 1
    lens = results[0]["lengths"]
    print(f"GPT training step (small config, batch 16), {len(lens)} lengths {min(lens)}-"
          f"{max(lens)}, {args.passes} passes, {args.threads} threads")
    head = " ".join(f"{'pass ' + str(i + 1) + ' (s)':>11s}" for i in range(args.passes))
    print(f"{'impl':15s} {head} {'last, ms/step':>14s} {'graphs':>7s} {'max |loss diff|':>16s}")
    base = results[0]["losses"]
    for r in results:
        diff = max(abs(a - b) for a, b in zip(r["losses"], base))
        cells = " ".join(f"{t:11.2f}" for t in r["passes"])
        print(f"{r['impl']:15s} {cells} {r['passes'][-1] / len(lens) * 1e3:14.1f} "
              f"{r.get('graphs', '-')!s:>7s} {diff:16.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Size-generic kernels against their static twins: the example GPT's training
step compiled three ways, each in its own process, timed kernel by kernel.

    python3 bench/generic_kernels.py [--length 64] [--steps 200] [--threads 2] [--top 8]

Modes: `static` (dynamic=False: every size a literal), `lifted`
(size_generic=True on the same static capture: every integer a parameter,
as a graph with no probes prints it) and `dynamic` (automatic dynamic: the
length made symbolic by two other lengths first, then compiled at
--length; its parameters that do not vary print as literals, Note
[Parameters that vary with the sizes] in src/ignis/compiler/size_params.h).
The model is bench/train.py's small config, batch 16; each step is forward
with the loss, zero_grad, backward and the AdamW step. Per-kernel times come
from ignis._inductor.config.profile_bandwidth over --steps steps at
--length. Prints each mode's time in the compiled graphs per step, as a
ratio of static's, and the kernels whose time differs most from static's
(matched by their graph and name: the three programs fuse alike).
"""
import argparse
import json
import os
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from children import child_result  # noqa: E402

MODES = ("static", "lifted", "dynamic")


def child(args):
    sys.path.insert(0, str(ROOT / "examples"))
    import numpy as np
    from compiled import load_lib, set_params
    from gpt import build_gpt, configure_optimizer
    from train import SIZES
    ignis = load_lib("ignis")
    from ignis._inductor import config, step_profile
    ignis.set_num_threads(args.threads)
    cfg, batch = SIZES["small"]
    data = np.random.default_rng(0).integers(0, cfg.vocab_size, size=(batch, cfg.block_size + 1))

    def batch_at(n):
        return (ignis.from_numpy(data[:, :n].copy()), ignis.from_numpy(data[:, 1:n + 1].copy()))
    ignis.manual_seed(0)
    model = build_gpt(ignis)(cfg)
    set_params(ignis, model)
    opt = configure_optimizer(ignis, model)
    config.size_generic = {"static": False, "lifted": True, "dynamic": "auto"}[args.child]
    config.profile_bandwidth = True  # every graph compiled from here on times its steps
    fn = ignis.compile(model, dynamic=None if args.child == "dynamic" else False)
    if args.child == "dynamic":  # a static graph, then the length made symbolic
        for n in (args.length - 7, args.length - 5, args.length - 5):
            _, loss = fn(*batch_at(n))
            loss.backward()
    x, y = batch_at(args.length)

    def step():
        _, loss = fn(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    for _ in range(3):  # the compiles (the dynamic graph's: at the length's second call)
        step()
    for _ in range(args.steps):
        step()
    kernels = {}
    for graph, label, _nbytes, calls, seconds, _cpu in step_profile.rows():
        if calls >= args.steps:
            kernels[f"{graph} / {label}"] = seconds / calls * 1e6
    print("RESULT " + json.dumps({"mode": args.child, "kernels": kernels}), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--length", type=int, default=64)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--top", type=int, default=8)
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    results = {}
    for mode in MODES:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), IGNIS_CACHE_DIR=cache)
            cmd = [sys.executable, __file__, "--child", mode, "--length", str(args.length),
                   "--steps", str(args.steps), "--threads", str(args.threads)]
            r = child_result(cmd, mode, args.timeout, env)
        if r is not None:
            results[mode] = r["kernels"]
    if "static" not in results:
        return 1
    base = results["static"]
    print(f"GPT training step (small config, batch 16, length {args.length}), {args.threads} "
          f"threads: time in compiled kernels and externs per step")
    for mode, kernels in results.items():
        total = sum(kernels.values())
        print(f"  {mode:8s} {total / 1e3:8.3f} ms  ({total / sum(base.values()):.2f}x static)")
    for mode in ("lifted", "dynamic"):
        if mode not in results:
            continue
        print(f"kernels of {mode} furthest from static (us per call):")
        # (graph numbers differ with the compiles before: match by the step's name)
        other = {k.split(" / ", 1)[1]: v for k, v in results[mode].items()}
        mine = {k.split(" / ", 1)[1]: v for k, v in base.items()}
        diffs = sorted(((other[k] - v, k, v, other[k]) for k, v in mine.items() if k in other),
                       key=lambda d: -abs(d[0]))
        for d, name, s, g in diffs[:args.top]:
            print(f"  {name[:70]:70s} {s:8.1f} -> {g:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Time per training step of the example GPT, ignis eager vs PyTorch eager.

One step = forward, cross-entropy loss, zero_grad, backward, AdamW step, on
the same model code (examples/gpt.py), shapes and thread count for both
libraries. Prints the median step time of each and the ignis/torch ratio
(< 1 means ignis is faster).

Each library runs in its own child process (two OpenMP runtimes in one
process make each other's worker threads spin and distort the timings);
the rounds alternate between the libraries and the best median is kept, so
load from other processes on the machine affects both alike.

    python bench/train.py [--threads N] [--steps 30] [--rounds 2] [--size small|medium]
                          [--profile 5] [--compile]

--compile: the model compiled in both libraries (ignis.compile / torch.compile,
backend "inductor"); the optimizer step stays eager. The first steps (the
compile) are in the warm-up.

--profile N: after timing, each library profiles N more steps with its own
profiler (torch.profiler / ignis.profiler, the same API) and the two tables
of ops by self CPU time are printed, top 25 rows each.
"""
import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from gpt import GPTConfig, build_gpt, configure_optimizer  # noqa: E402

SIZES = {
    "small": (GPTConfig(vocab_size=96, block_size=64, n_layer=2, n_head=4, n_embd=64), 16),
    "medium": (GPTConfig(vocab_size=256, block_size=128, n_layer=4, n_head=4, n_embd=128), 16),
}


def step_times(lib, cfg, batch, steps, warmup, profile_steps=0, compile=False):
    lib.manual_seed(0)
    model = build_gpt(lib)(cfg)
    opt = configure_optimizer(lib, model)
    if compile:
        model = lib.compile(model, backend="inductor")
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.integers(0, cfg.vocab_size, size=(batch, cfg.block_size)))
    y = lib.from_numpy(rng.integers(0, cfg.vocab_size, size=(batch, cfg.block_size)))
    times, phases = [], []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        _, loss = model(x, y)
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if i >= warmup:
            times.append(t3 - t0)
            phases.append((t1 - t0, t2 - t1, t3 - t2))
    med = np.median(np.array(phases), axis=0)
    table = None
    if profile_steps:
        with lib.profiler.profile() as prof:
            for _ in range(profile_steps):
                _, loss = model(x, y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25)
    return float(np.median(times)), med, loss.item(), table


def run_one(args):
    """Child process: time one library, print one JSON line."""
    import importlib
    lib = importlib.import_module(args.only)
    if args.threads:
        lib.set_num_threads(args.threads)
    cfg, batch = SIZES[args.size]
    t, phases, loss, table = step_times(lib, cfg, batch, args.steps, args.warmup, args.profile,
                                        args.compile)
    print(json.dumps({"step": t, "phases": [float(p) for p in phases], "loss": loss,
                      "threads": lib.get_num_threads(), "version": lib.__version__,
                      "profile": table}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="profile N more steps per library and print the op tables")
    ap.add_argument("--compile", action="store_true",
                    help="compile the model (ignis.compile / torch.compile) in both libraries")
    ap.add_argument("--only", choices=["ignis", "torch"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.only:
        return run_one(args)

    cfg, batch = SIZES[args.size]
    best = {}
    for _ in range(args.rounds):
        for name in ("torch", "ignis"):
            cmd = [sys.executable, __file__, "--only", name, "--size", args.size,
                   "--steps", str(args.steps), "--warmup", str(args.warmup)]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            if args.profile:
                cmd += ["--profile", str(args.profile)]
            if args.compile:
                cmd.append("--compile")
            out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                                 env=os.environ).stdout
            r = json.loads(out.strip().splitlines()[-1])
            if name not in best or r["step"] < best[name]["step"]:
                best[name] = r
    print(f"GPT {args.size}: {cfg.n_layer} layers, d={cfg.n_embd}, {cfg.n_head} heads, "
          f"vocab {cfg.vocab_size}, batch {batch}x{cfg.block_size}; threads "
          f"ignis={best['ignis']['threads']} torch={best['torch']['threads']}; "
          f"{platform.processor() or platform.machine()}, torch {best['torch']['version']}")
    for name in ("torch", "ignis"):
        r = best[name]
        t, (fwd, bwd, opt) = r["step"], r["phases"]
        print(f"{name:6s} {t * 1e3:8.2f} ms/step  (forward {fwd * 1e3:.2f}, backward "
              f"{bwd * 1e3:.2f}, AdamW {opt * 1e3:.2f})  "
              f"{batch * cfg.block_size / t:9.0f} tokens/s  final loss {r['loss']:.4f}")
    print(f"ratio ignis/torch: {best['ignis']['step'] / best['torch']['step']:.2f}x "
          "(< 1 means ignis is faster)")
    for name in ("torch", "ignis"):
        if best[name].get("profile"):
            print(f"\n{name}: {args.profile} steps, ops by self CPU time")
            print(best[name]["profile"])


if __name__ == "__main__":
    main()

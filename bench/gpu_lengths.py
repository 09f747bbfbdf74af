"""Dynamic shapes on the GPU: a GPT forward (with its loss, under no_grad) or a
training step called at 20 sequence lengths, compiled, beside torch.compile.

    python3 bench/gpu_lengths.py [--gpt LAYERS,BATCH] [--impls ...] [--lengths 16] [--train]

--train times training steps instead of forwards: zero_grad, the compiled model's
forward and loss, backward, an eager AdamW step (examples/gpt.py's
configure_optimizer); the forward and backward graphs are both dynamic.

Implementations, each in its own process: `ignis` (ignis.compile, its
defaults: the dynamic graph's CUDA code size-generic, its parameters that do
not vary printed as literals), `ignis.generic` (size_generic=True: every
graph's code generic, the first, static capture's too), `torch` (torch.compile, its defaults: automatic
dynamic), `ignis.eager` (not compiled: the losses' reference). Each process calls
the model at the lengths in order three times:
pass 1 and 2 hold the compiles (ignis compiles a size on its second call:
Note [Compiling a size on its second call]; torch on its first), pass 3 runs
compiled code only. It prints the passes' times, the graphs compiled and the
losses of pass 3; the losses
are compared across implementations (the same weights, drawn by NumPy). The
model is examples/gpt.py at GPT-2-small's width and vocabulary (768, 12
heads, 50304), LAYERS deep, over a batch of BATCH sequences.
"""
import argparse
import json
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "bench"))
from children import child_result  # noqa: E402

LENGTHS = [1024, 896, 768, 640, 512, 384, 256, 128, 960, 832, 704, 576, 448, 320, 192, 1000,
           800, 600, 400, 200]
IMPLS = ("ignis", "ignis.generic", "torch")  # and "ignis.eager": the model uncompiled


def child(args):
    from compiled import load_lib, set_params
    from gpt import GPTConfig, build_gpt, configure_optimizer
    lib = load_lib(args.child)
    layers, batch = (int(v) for v in args.gpt.split(","))
    cfg = GPTConfig(vocab_size=50304, block_size=1024, n_layer=layers, n_head=12, n_embd=768)
    lib.manual_seed(0)
    model = build_gpt(lib)(cfg).to(args.device)
    set_params(lib, model)
    model = model.to(args.device)
    lengths = LENGTHS[:args.lengths]
    rng = np.random.default_rng(0)
    idx = rng.integers(0, cfg.vocab_size, size=(batch, cfg.block_size))
    calls = [(lib.from_numpy(idx[:, :n].copy()).to(args.device),
              lib.from_numpy(idx[:, 1:n + 1].copy() if n < cfg.block_size
                             else np.roll(idx, -1, 1)[:, :n].copy()).to(args.device))
             for n in lengths]
    if args.child == "ignis.generic":
        from ignis._inductor import config
        config.size_generic = True
    if args.child.startswith("ignis"):
        counters = __import__("ignis._dynamo.utils", fromlist=["counters"]).counters
    else:
        counters = __import__("torch._dynamo.utils", fromlist=["counters"]).counters
    fn = model if args.child == "ignis.eager" else lib.compile(model)

    def sync():
        if args.device == "cuda":
            lib.cuda.synchronize()
    out = {"impl": args.child, "lengths": lengths}
    if args.train:
        opt = configure_optimizer(lib, model)

        def call(x, y):
            opt.zero_grad(set_to_none=True)
            loss = fn(x, y)[1]
            loss.backward()
            opt.step()
            return loss
        grad = lib.enable_grad
    else:
        def call(x, y):
            return fn(x, y)[1]
        grad = lib.no_grad
    with grad():
        for name in ("pass1_s", "pass2_s", "pass3_s"):
            losses = []
            sync()
            t0 = time.perf_counter()
            for x, y in calls:
                losses.append(call(x, y))
            sync()
            out[name] = time.perf_counter() - t0
    out["losses"] = [float(v) for v in losses]
    if args.device == "cuda":
        out["peak_mb"] = lib.cuda.max_memory_allocated() / 2**20
    out["graphs"] = counters["stats"]["unique_graphs"]
    print("RESULT " + json.dumps(out), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gpt", default="2,8", help="LAYERS,BATCH (default 2,8)")
    p.add_argument("--impls", default=",".join(IMPLS))
    p.add_argument("--lengths", type=int, default=len(LENGTHS), help="how many lengths (<= 20)")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--train", action="store_true", help="training steps instead of forwards")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    results = []
    for impl in args.impls.split(","):
        cmd = [sys.executable, __file__, "--child", impl, "--gpt", args.gpt,
               "--lengths", str(args.lengths), "--device", args.device] + \
            (["--train"] if args.train else [])
        r = child_result(cmd, impl, args.timeout)
        if r is not None:
            results.append(r)
    what = "GPT training step (AdamW)" if args.train else "GPT forward with loss"
    print(f"{what}, GPT-2-small width, --gpt {args.gpt}, "
          f"{args.lengths} lengths from {LENGTHS[0]} down")
    print(f"{'impl':16s} {'pass 1 (s)':>11s} {'pass 2 (s)':>11s} {'passes 1+2 (s)':>15s} "
          f"{'pass 3 (ms)':>12s} {'graphs':>7s} {'peak MiB':>9s} {'max |loss - first impl|':>24s}")
    base = results[0]["losses"] if results else None
    for r in results:
        diff = max(abs(a - b) for a, b in zip(r["losses"], base))
        print(f"{r['impl']:16s} {r['pass1_s']:11.2f} {r['pass2_s']:11.2f} "
              f"{r['pass1_s'] + r['pass2_s']:15.2f} {r['pass3_s'] * 1e3:12.2f} "
              f"{r['graphs']:7d} {r.get('peak_mb', float('nan')):9.0f} {diff:24.2e}")


if __name__ == "__main__":
    main()

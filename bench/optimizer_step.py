"""The optimizer step of the example GPT's parameters, by implementation.

    python bench/optimizer_step.py [--threads N] [--lib ignis|torch] [--reps 200]

AdamW (nanoGPT's groups: weight decay on matrices only) over the parameters of
bench/train.py's "small" GPT with random gradients, for-loop, foreach and
fused, interleaved twice; prints the median ms per step of each.
"""
import argparse
import importlib
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gpt import build_gpt  # noqa: E402
from train import SIZES  # noqa: E402

IMPLS = {"for-loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--lib", choices=["ignis", "torch"], default="ignis")
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    lib = importlib.import_module(args.lib)
    if args.threads:
        lib.set_num_threads(args.threads)
    model = build_gpt(lib)(SIZES["small"][0])
    params = list(model.parameters())
    for p in params:
        p.grad = lib.randn(p.shape)
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    best = {}
    for _ in range(2):
        for name, kw in IMPLS.items():
            groups = [{"params": decay, "weight_decay": 0.1},  # fresh: the optimizer fills
                      {"params": no_decay, "weight_decay": 0.0}]  # in its defaults
            opt = lib.optim.AdamW(groups, lr=3e-3, betas=(0.9, 0.95), **kw)
            for _ in range(5):
                opt.step()
            ts = []
            for _ in range(args.reps):
                t = time.perf_counter()
                opt.step()
                ts.append(time.perf_counter() - t)
            ts.sort()
            best[name] = min(best.get(name, 1e9), ts[len(ts) // 2] * 1e3)
    print(f"{args.lib} AdamW step, {len(params)} parameters "
          f"({sum(p.numel() for p in params)} elements), threads {lib.get_num_threads()}: "
          + ", ".join(f"{k} {v:.3f} ms" for k, v in best.items()))


if __name__ == "__main__":
    main()

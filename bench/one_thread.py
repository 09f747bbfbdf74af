"""One OpenMP thread, timed by the calling thread's CPU time: ignis beside
PyTorch on a machine other processes load.

Wall times on a busy 2-core machine swing by 2x; the CPU time one thread
spends (time.thread_time) holds within a few percent, so at one thread it
measures what a step costs. Rows, each implementation in its own child
process (medians of 40 calls after 5 warm-ups):

  gpt_fwd     the example GPT's forward with loss (bench/train.py's "small"
              config: 2 layers, d=64, batch 16x64), no_grad
  gpt_train   its forward, loss and backward
  attn_fwd    causal scaled_dot_product_attention, q, k, v sliced from one
              [B, T, 3, H, E] projection (rows read in place), no_grad
  attn_train  the same, forward and backward
  mlp         bench/compiled.py's MLP row: Linear(1024,4096) + GELU +
              Linear(4096,1024) on [1024, 1024] float32, no_grad (median of
              15 calls: each is two 8.6 GFLOP products)

for ignis compiled, ignis eager, torch eager and torch.compile (the attention
rows: eager only). Attention shapes: B16 H4 T64 E16 (the GPT's) and B4 H8
T256 E64.

    python bench/one_thread.py [--rows gpt_fwd,attn_fwd,...] [--impls ignis_eager,...]
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROWS = ["gpt_fwd", "gpt_train", "attn_fwd", "attn_train", "mlp"]
IMPLS = ["ignis_compiled", "ignis_eager", "torch_eager", "torch_compile"]
ATTN_SHAPES = [(16, 4, 64, 16), (4, 8, 256, 64)]


def cpu_ms(fn, warm=5, n=40):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(n):
        t = time.thread_time()
        fn()
        ts.append(time.thread_time() - t)
    ts.sort()
    return 1e3 * ts[len(ts) // 2]


def child(row, impl):
    if impl.startswith("torch"):
        import torch as lib
        lib.set_num_threads(1)
    else:
        import ignis as lib
    compiled = impl in ("ignis_compiled", "torch_compile")
    if row == "mlp":
        import numpy as np
        lib.manual_seed(0)
        nn = lib.nn
        model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
        x = lib.from_numpy(np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32))
        f = lib.compile(model) if compiled else model

        def step():
            with lib.no_grad():
                f(x)
        return {"ms": [cpu_ms(step, warm=3, n=15)]}
    if row.startswith("gpt"):
        sys.path.insert(0, str(HERE.parent / "examples"))
        import numpy as np
        from gpt import GPTConfig, build_gpt
        lib.manual_seed(0)
        cfg = GPTConfig(vocab_size=96, block_size=64, n_layer=2, n_head=4, n_embd=64)
        model = build_gpt(lib)(cfg)
        rng = np.random.default_rng(0)
        x = lib.from_numpy(rng.integers(0, 96, size=(16, 64)))
        y = lib.from_numpy(rng.integers(0, 96, size=(16, 64)))
        f = lib.compile(model) if compiled else model

        def step():
            if row == "gpt_train":
                f(x, y)[1].backward()
            else:
                with lib.no_grad():
                    f(x, y)
        return {"ms": [cpu_ms(step)]}
    out = []
    for B, H, T, E in ATTN_SHAPES:
        qkv = lib.randn(B, T, 3, H, E, requires_grad=row == "attn_train")
        q, k, v = [qkv[:, :, i].transpose(1, 2) for i in range(3)]
        g = lib.randn(B, H, T, E)
        sdpa = lib.nn.functional.scaled_dot_product_attention

        def step():
            if row == "attn_train":
                sdpa(q, k, v, is_causal=True).backward(g)
            else:
                with lib.no_grad():
                    sdpa(q, k, v, is_causal=True)
        out.append(cpu_ms(step))
    return {"ms": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    env = dict(os.environ, OMP_NUM_THREADS="1")
    print("CPU ms of the calling thread, one OpenMP thread, median of 40 calls (mlp: 15)")
    print("| row | shape | " + " | ".join(args.impls.split(",")) + " |")
    print("|---" * (2 + len(args.impls.split(","))) + "|")
    for row in args.rows.split(","):
        cells = []
        for impl in args.impls.split(","):
            if row.startswith("attn") and impl in ("ignis_compiled", "torch_compile"):
                cells.append(None)
                continue
            r = subprocess.run([sys.executable, __file__, "--child", row, impl], env=env,
                               capture_output=True, text=True, timeout=900)
            lines = r.stdout.strip().splitlines()
            cells.append(json.loads(lines[-1])["ms"] if r.returncode == 0 and lines
                         else "ERROR: " + r.stderr.strip()[-300:])
        shapes = ["B%d H%d T%d E%d" % s for s in ATTN_SHAPES] if row.startswith("attn") \
            else ["1024x1024, 4096 hidden"] if row == "mlp" else ["small GPT"]
        for i, shape in enumerate(shapes):
            vals = []
            for c in cells:
                vals.append("-" if c is None else (c if isinstance(c, str) else f"{c[i]:.3f}"))
            print(f"| {row} | {shape} | " + " | ".join(vals) + " |")


if __name__ == "__main__":
    main()

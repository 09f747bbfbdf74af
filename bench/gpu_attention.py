"""Attention on the GPU: ignis's flash kernels against torch's SDPA (cuDNN / flash on CUDA).

`scaled_dot_product_attention` of q, k, v [B, H, T, D] (bf16, B=8, H=12; D=64 unless told)
causal, unmasked, with a key-padding bool mask [B, 1, 1, T], a [B, 1, T, T] bool mask and
a [B, 1, T, T] mask of the input's dtype; forward alone and forward + backward, at each
sequence length. Each library runs in a child process on the same inputs (drawn by NumPy
from one seed), timed by CUDA events (best of 5 rounds of `iters` calls after a warm-up).
Prints us per call, TFLOP/s (4 B H T^2 D flops forward, 3.5x that forward + backward;
half with causal), the fraction of the bf16 dense spec peak (989.5 TFLOP/s) and ignis /
torch. Skips (exit 0) without a GPU.

    PYTHONPATH=python python3 bench/gpu_attention.py [--lengths 512,2048] [--head-dim 64]
        [--dtype bfloat16] [--variant IGNIS_CUDA_FLASH_SM90=0 [--variant ...]]
"""
import argparse
import json
import os
import subprocess
import sys

SPEC_PEAK = 989.5
CASES = ["causal", "nomask", "kpad_bool", "full_bool", "full_float"]


def child(lib_name, T, dtype, iters, D):
    import numpy as np
    if lib_name == "ignis":
        sys.meta_path[:] = [f for f in sys.meta_path
                            if not type(f).__name__.startswith("ScikitBuild")]
        import ignis as lib
    else:
        import torch as lib
    F = lib.nn.functional
    dt = getattr(lib, dtype)
    B, H = 8, 12
    rng = np.random.default_rng(0)

    def dev(a, to=dt):
        return lib.from_numpy(np.ascontiguousarray(a)).to("cuda").to(to)
    q, k, v, g = (dev(rng.standard_normal((B, H, T, D), dtype=np.float32)) for _ in range(4))
    lengths = rng.integers(T // 2, T + 1, B)
    kpad = dev(np.arange(T)[None, None, None, :] < lengths[:, None, None, None], lib.bool)
    full = dev(rng.random((B, 1, T, T)) < 0.9, lib.bool)
    fl = dev(np.where(rng.random((B, 1, T, T)) < 0.9, 0.0, -1e4).astype(np.float32))
    kwargs = {"causal": dict(is_causal=True), "nomask": {}, "kpad_bool": dict(attn_mask=kpad),
              "full_bool": dict(attn_mask=full), "full_float": dict(attn_mask=fl)}

    def timed(f):
        for _ in range(3):
            f()
        lib.cuda.synchronize()
        s, e = lib.cuda.Event(enable_timing=True), lib.cuda.Event(enable_timing=True)
        best = float("inf")
        for _ in range(5):
            s.record()
            for _ in range(iters):
                f()
            e.record()
            e.synchronize()
            best = min(best, s.elapsed_time(e) / iters)
        return best * 1e3  # us

    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    out = {}
    for name in CASES:
        kw = kwargs[name]

        def train():
            for x in leaves:
                x.grad = None
            F.scaled_dot_product_attention(*leaves, **kw).backward(g)
        ref = F.scaled_dot_product_attention(q, k, v, **kw).float().cpu().numpy()
        out[name] = {"fwd": timed(lambda: F.scaled_dot_product_attention(q, k, v, **kw)),
                     "train": timed(train), "check": float(np.abs(ref).sum())}
    print(json.dumps(out))


def run_child(lib_name, T, dtype, iters, D, extra_env=None):
    env = dict(os.environ, **(extra_env or {}))
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"),
         os.environ.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, __file__, "--child", lib_name, "--lengths", str(T),
                        "--dtype", dtype, "--iters", str(iters), "--head-dim", str(D)],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print(f"{lib_name} T={T} failed:\n{r.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", default="512,2048")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    ap.add_argument("--iters", type=int, default=0, help="calls a round (default by length)")
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=VALUE",
                    help="also run ignis with this environment variable set (e.g. "
                         "IGNIS_CUDA_FLASH_SM90=0) and print its times beside the default's; "
                         "repeat for several variants, each in a process of its own")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    for spec in args.variant:
        if "=" not in spec:
            ap.error(f"--variant {spec!r}: expected NAME=VALUE")
    if args.child:
        T = int(args.lengths)
        child(args.child, T, args.dtype, args.iters or (50 if T <= 1024 else 10), args.head_dim)
        return
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__name__.startswith("ScikitBuild")]
    import ignis
    if not ignis.cuda.is_available():
        print("no CUDA GPU here: skipped")
        return
    print(f"B=8, H=12, D={args.head_dim}, {args.dtype}")
    print("| T | case | ignis fwd us (TFLOP/s, of peak) | torch fwd us | ratio | "
          "ignis fwd+bwd us (TFLOP/s) | torch fwd+bwd us | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for T in (int(t) for t in args.lengths.split(",")):
        res = {lib: run_child(lib, T, args.dtype, args.iters, args.head_dim)
               for lib in ("ignis", "torch")}
        for spec in args.variant:
            v = run_child("ignis", T, args.dtype, args.iters, args.head_dim,
                          dict([spec.split("=", 1)]))
            for name in CASES:
                if v and res["ignis"]:
                    a, b = v[name], res["ignis"][name]
                    print(f"| {T} | {name} | {spec}: fwd {a['fwd']:.1f} us "
                          f"({a['fwd'] / b['fwd']:.2f} of the default), fwd+bwd {a['train']:.1f} us "
                          f"({a['train'] / b['train']:.2f}) |")
                    if abs(a["check"] - b["check"]) > 2e-2 * abs(b["check"]):
                        print(f"MISMATCH T={T} {name} under {spec}")
        for name in CASES:
            flops = 4.0 * 8 * 12 * T * T * args.head_dim * (0.5 if name == "causal" else 1.0)
            row = [str(T), name]
            for kind, mult in (("fwd", 1.0), ("train", 3.5)):
                i = res["ignis"] and res["ignis"][name][kind]
                t = res["torch"] and res["torch"][name][kind]
                if i:
                    tf = flops * mult / (i * 1e-6) / 1e12
                    row.append(f"{i:.1f} ({tf:.0f}, {tf / SPEC_PEAK:.2f})")
                else:
                    row.append("-")
                row.append(f"{t:.1f}" if t else "-")
                row.append(f"{i / t:.2f}" if i and t else "-")
            print("| " + " | ".join(row) + " |")
            if res["ignis"] and res["torch"]:
                a, b = res["ignis"][name]["check"], res["torch"][name]["check"]
                if abs(a - b) > 2e-2 * abs(b):
                    print(f"MISMATCH T={T} {name}: sum |out| {a:.6g} vs {b:.6g}")


if __name__ == "__main__":
    main()

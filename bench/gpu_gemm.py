"""GEMM throughput on the GPU: ignis (cuBLASLt, src/ignis/cuda/blas.h) against torch.

For each case, the same operands (made by torch on the GPU and shared with ignis through
DLPack, or copied from the host when torch has no CUDA) are multiplied `iters` times
between two CUDA events on each library's current stream, after a warm-up that also
builds ignis's cached plan. Prints ms per product, TFLOP/s, the fraction of the H100/H200
SXM spec peak (bf16/fp16 dense 989.5, TF32 494.7, FP32 66.9 TFLOP/s; about 790 bf16 is what
large GEMMs reach in practice) and ignis / torch. Skips (exit 0) without a GPU.

    PYTHONPATH=python python3 bench/gpu_gemm.py [--iters N] [--json] [--scale S]
"""
import argparse
import json
import sys

import numpy as np

sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__name__.startswith("ScikitBuild")]
import ignis  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

SPEC_PEAK = {"bf16": 989.5, "fp16": 989.5, "tf32": 494.7, "fp32": 66.9}
MEASURED_BF16_PEAK = 790.0

# (name, m, k, n, dtype, tf32, op): op "mm" is a @ b, "linear" is F.linear(a, w, bias)
# with w [n, k] (the cuBLASLt BIAS epilogue).
CASES = [
    ("bf16 4096^3", 4096, 4096, 4096, "bfloat16", False, "mm"),
    ("bf16 8192^3", 8192, 8192, 8192, "bfloat16", False, "mm"),
    ("fp16 4096^3", 4096, 4096, 4096, "float16", False, "mm"),
    ("fp32 4096^3", 4096, 4096, 4096, "float32", False, "mm"),
    ("fp32+tf32 4096^3", 4096, 4096, 4096, "float32", True, "mm"),
    ("fp32+tf32 8192^3", 8192, 8192, 8192, "float32", True, "mm"),
    ("bf16 GPT-2 MLP 4096x768 @ 768x3072", 4096, 768, 3072, "bfloat16", False, "mm"),
    ("bf16 GPT-2 MLP linear+bias", 4096, 768, 3072, "bfloat16", False, "linear"),
    ("bf16 GPT-2 MLP down 4096x3072 @ 3072x768", 4096, 3072, 768, "bfloat16", False, "mm"),
]


def peak_key(dtype, tf32):
    return {"bfloat16": "bf16", "float16": "fp16"}.get(dtype, "tf32" if tf32 else "fp32")


def operands(m, k, n, dtype, op, torch_cuda):
    """(ignis operands, torch operands or None): the same memory when torch has CUDA."""
    shapes = [(m, k), (n, k) if op == "linear" else (k, n)] + ([(n,)] if op == "linear" else [])
    if torch_cuda:
        g = torch.Generator(device="cuda").manual_seed(0)
        dt = getattr(torch, dtype)
        tt = [torch.randn(s, device="cuda", dtype=dt, generator=g) for s in shapes]
        return [ignis.from_dlpack(t) for t in tt], tt
    rng = np.random.default_rng(0)
    it = [ignis.from_numpy(rng.standard_normal(s).astype(np.float32)).to(getattr(ignis, dtype))
          .to("cuda") for s in shapes]
    return it, None


def time_ms(fn, event_cls, sync, iters):
    for _ in range(3):
        fn()
    sync()
    start, end = event_cls(enable_timing=True), event_cls(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json", action="store_true", help="one JSON object per case")
    ap.add_argument("--scale", type=int, default=1,
                    help="divide every dimension by this (a smoke test, e.g. on the fake driver)")
    args = ap.parse_args()
    if not ignis.cuda.is_available():
        print(f"skipped: no usable CUDA GPU ({ignis._C._cuda_unavailable_reason()})")
        return 0
    torch_cuda = torch is not None and torch.cuda.is_available()
    tv = f"{torch.__version__} ({'CUDA' if torch_cuda else 'no CUDA'})" if torch else "absent"
    print(f"GPU: {ignis.cuda.get_device_name()}; torch: {tv}")
    loaded, path, reason = ignis._C._cublaslt_status()
    print(f"cuBLASLt: {path if loaded else reason}")
    header = f"{'case':42s} {'ignis ms':>9s} {'TFLOP/s':>8s} {'%spec':>6s} {'torch ms':>9s} " \
             f"{'TFLOP/s':>8s} {'ignis/torch':>11s}"
    if args.scale != 1:
        print(f"(every dimension divided by {args.scale}: a smoke test, not a measurement)")
    print(header)
    for name, m, k, n, dtype, tf32, op in CASES:
        m, k, n = (max(1, v // args.scale) for v in (m, k, n))
        ignis.backends.cuda.matmul.allow_tf32 = tf32
        try:
            (ia, ib, *ibias), tt = operands(m, k, n, dtype, op, torch_cuda)
        except Exception as e:  # out of memory on a smaller GPU, ...
            print(f"{name:42s} skipped: {type(e).__name__}: {e}")
            continue
        if op == "linear":
            f_ignis = lambda: ignis.nn.functional.linear(ia, ib, ibias[0])  # noqa: E731
        else:
            f_ignis = lambda: ignis.mm(ia, ib)  # noqa: E731
        ms = time_ms(f_ignis, ignis.cuda.Event, ignis.cuda.synchronize, args.iters)
        flops = 2.0 * m * n * k
        tflops = flops / ms / 1e9
        row = {"case": name, "ignis_ms": ms, "ignis_tflops": tflops,
               "fraction_of_spec_peak": tflops / SPEC_PEAK[peak_key(dtype, tf32)]}
        if dtype == "bfloat16":
            row["fraction_of_measured_bf16_peak"] = tflops / MEASURED_BF16_PEAK
        if torch_cuda:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            ta, tb, *tbias = tt
            if op == "linear":
                f_torch = lambda: torch.nn.functional.linear(ta, tb, tbias[0])  # noqa: E731
            else:
                f_torch = lambda: ta @ tb  # noqa: E731
            tms = time_ms(f_torch, torch.cuda.Event, torch.cuda.synchronize, args.iters)
            row.update(torch_ms=tms, torch_tflops=flops / tms / 1e9, ratio=tms / ms)
            # Same inputs: the results should agree to the dtype's precision.
            ours = torch.from_dlpack(f_ignis()).float()
            ref = f_torch().float()
            row["max_rel_diff_vs_torch"] = float((ours - ref).abs().max() / ref.abs().max())
        if args.json:
            print(json.dumps(row))
        else:
            t = (f"{row['torch_ms']:9.3f} {row['torch_tflops']:8.1f} {row['ratio']:11.3f}"
                 if "torch_ms" in row else f"{'-':>9s} {'-':>8s} {'-':>11s}")
            pct = 100 * row["fraction_of_spec_peak"]
            print(f"{name:42s} {ms:9.3f} {tflops:8.1f} {pct:5.1f}% {t}")
        del ia, ib, ibias, tt
    ignis.backends.cuda.matmul.allow_tf32 = False
    return 0


if __name__ == "__main__":
    sys.exit(main())

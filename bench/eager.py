"""ignis vs PyTorch eager, side by side in one run (CPU).

Rows: Python-to-kernel overhead of a 1-element add (us per call), then
throughput of large-input ops. Prints times, the ignis/torch time ratio
(< 1 means ignis is faster) and the fraction of the machine's measured memory
bandwidth (for memory-bound ops) or GEMM FLOP rate reached.

    python bench/eager.py [--threads N] [--quick]
"""
import argparse
import platform
import time

import numpy as np

import ignis

try:
    import torch
except ImportError:  # the peer is optional; ignis rows still print
    torch = None


def bench(fn, min_time=0.3, warmup=3):
    for _ in range(warmup):
        fn()
    n, total = 0, 0.0
    times = []
    while total < min_time or n < 5:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        times.append(dt)
        total += dt
        n += 1
    return float(np.median(times))


def bench_calls(fn, calls=20000):
    fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def copy_bandwidth():
    """Bytes/s of a large copy (read + write) into an existing buffer: the
    roof. The faster of NumPy's single-threaded copy and ignis's threaded
    copy_, so that a many-core machine is not under-counted."""
    a = np.ones(64 * 1024 * 1024 // 4, dtype=np.float32)
    b = np.empty_like(a)
    t_np = bench(lambda: np.copyto(b, a), 0.5)
    ai, bi = ignis.from_numpy(a), ignis.from_numpy(b)
    t_ig = bench(lambda: bi.copy_(ai), 0.5)
    return 2 * a.nbytes / min(t_np, t_ig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.threads:
        ignis.set_num_threads(args.threads)
        if torch:
            torch.set_num_threads(args.threads)
    mt = 0.1 if args.quick else 0.3
    bw = copy_bandwidth()
    print(f"machine: {platform.processor() or platform.machine()}, threads ignis="
          f"{ignis.get_num_threads()} torch={torch.get_num_threads() if torch else '-'}, "
          f"copy bandwidth {bw / 1e9:.1f} GB/s, torch {torch.__version__ if torch else 'absent'}")

    rows = []
    # 1. per-op overhead
    a1, b1 = ignis.ones(1), ignis.ones(1)
    ti = bench_calls(lambda: a1 + b1)
    tt = None
    if torch:
        x1, y1 = torch.ones(1), torch.ones(1)
        tt = bench_calls(lambda: x1 + y1)
    rows.append(("add 1-element (overhead)", ti * 1e6, tt * 1e6 if tt else None, "us", None))

    N = 4096
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((N, N)).astype(np.float32)
    yn = rng.standard_normal((N, N)).astype(np.float32)
    xi, yi = ignis.from_numpy(xn), ignis.from_numpy(yn)
    xt, yt = (torch.from_numpy(xn), torch.from_numpy(yn)) if torch else (None, None)
    nbytes = xn.nbytes
    w = ignis.ones(N)
    b = ignis.zeros(N)
    wt = torch.ones(N) if torch else None
    bt = torch.zeros(N) if torch else None

    cases = [
        ("add 4096x4096 f32", lambda: xi + yi, (lambda: xt + yt) if torch else None, 3 * nbytes),
        ("exp 4096x4096 f32", lambda: xi.exp(), (lambda: xt.exp()) if torch else None, 2 * nbytes),
        ("sum(-1) 4096x4096 f32", lambda: xi.sum(-1), (lambda: xt.sum(-1)) if torch else None, nbytes),
        ("softmax(-1) 4096x4096 f32", lambda: ignis.softmax(xi, -1),
         (lambda: torch.softmax(xt, -1)) if torch else None, 2 * nbytes),
        # one row of 2^22: a thread a row would leave the other threads idle
        # (Note [Softmax over few long rows], kernels/cpu/softmax.cpp)
        ("softmax(-1) 1x4194304 f32", lambda: ignis.softmax(xi[:1024].view(1, -1), -1),
         (lambda: torch.softmax(xt[:1024].view(1, -1), -1)) if torch else None, nbytes // 2),
        ("log_softmax(-1) 1x4194304 f32", lambda: ignis.log_softmax(xi[:1024].view(1, -1), -1),
         (lambda: torch.log_softmax(xt[:1024].view(1, -1), -1)) if torch else None, nbytes // 2),
        ("layer_norm 1x4194304 f32",
         lambda: ignis.nn.functional.layer_norm(xi[:1024].view(1, -1), (N * 1024,)),
         (lambda: torch.nn.functional.layer_norm(xt[:1024].view(1, -1), (N * 1024,)))
         if torch else None, nbytes // 2),
        ("layer_norm 4096x4096 f32", lambda: ignis.nn.functional.layer_norm(xi, (N,), w, b),
         (lambda: torch.nn.functional.layer_norm(xt, (N,), wt, bt)) if torch else None, 2 * nbytes),
        # random numbers: written once (ignis: Philox in SIMD batches; torch: mt19937)
        ("rand 4096x4096 f32", lambda: ignis.rand(N, N), (lambda: torch.rand(N, N)) if torch else None,
         nbytes),
        ("randn 4096x4096 f32", lambda: ignis.randn(N, N), (lambda: torch.randn(N, N)) if torch else None,
         nbytes),
        ("dropout(0.2) 4096x4096 f32", lambda: ignis.nn.functional.dropout(xi, 0.2),
         (lambda: torch.nn.functional.dropout(xt, 0.2)) if torch else None, 2 * nbytes),
    ]
    for name, fi, ft, moved in cases:
        try:
            t_i = bench(fi, mt)
        except Exception as e:  # an op not available yet
            print(f"  {name}: ignis failed: {e}")
            continue
        t_t = bench(ft, mt) if ft else None
        rows.append((name, t_i * 1e3, t_t * 1e3 if t_t else None, "ms", moved / t_i / bw))

    M = 1024
    mn = rng.standard_normal((M, M)).astype(np.float32)
    mi = ignis.from_numpy(mn)
    mtt = torch.from_numpy(mn) if torch else None
    try:
        t_i = bench(lambda: mi @ mi, mt)
        t_t = bench(lambda: mtt @ mtt, mt) if torch else None
        flops = 2 * M ** 3
        rows.append(("matmul 1024^3 f32", t_i * 1e3, t_t * 1e3 if t_t else None, "ms",
                     f"{flops / t_i / 1e9:.0f} GFLOP/s"))
    except Exception as e:
        print(f"  matmul: ignis failed: {e}")

    # Causal attention at GPT-block sizes: the fused flash-style kernels.
    # Flops count the products a dense kernel does (causal halves them).
    B, H, L, E = 8, 8, 512, 64
    qkv = [rng.standard_normal((B, H, L, E)).astype(np.float32) for _ in range(3)]
    ai = [ignis.from_numpy(a) for a in qkv]
    at = [torch.from_numpy(a) for a in qkv] if torch else None
    sdpa_i = ignis.nn.functional.scaled_dot_product_attention
    sdpa_t = torch.nn.functional.scaled_dot_product_attention if torch else None
    att_flops = 2 * 2 * B * H * L * L * E // 2

    def fwd_bwd(sdpa, xs):
        leaves = [x.detach().requires_grad_() for x in xs]
        sdpa(*leaves, is_causal=True).sum().backward()

    try:
        t_i = bench(lambda: sdpa_i(*ai, is_causal=True), mt)
        t_t = bench(lambda: sdpa_t(*at, is_causal=True), mt) if torch else None
        rows.append(("sdpa causal 8x8x512x64 fwd", t_i * 1e3, t_t * 1e3 if t_t else None, "ms",
                     f"{att_flops / t_i / 1e9:.0f} GFLOP/s"))
        t_i = bench(lambda: fwd_bwd(sdpa_i, ai), mt)
        t_t = bench(lambda: fwd_bwd(sdpa_t, at), mt) if torch else None
        rows.append(("sdpa causal ... fwd+bwd", t_i * 1e3, t_t * 1e3 if t_t else None, "ms",
                     f"{3.5 * att_flops / t_i / 1e9:.0f} GFLOP/s"))
    except Exception as e:
        print(f"  attention: ignis failed: {e}")

    print()
    print(f"{'case':<28} {'ignis':>10} {'torch':>10} {'unit':>5} {'ignis/torch':>12} {'roof':>16}")
    for name, ti, tt, unit, roof in rows:
        ratio = f"{ti / tt:.2f}" if tt else "-"
        tts = f"{tt:.3f}" if tt else "-"
        roofs = roof if isinstance(roof, str) else (f"{roof * 100:.0f}% of copy BW" if roof else "")
        print(f"{name:<28} {ti:>10.3f} {tts:>10} {unit:>5} {ratio:>12} {roofs:>16}")


if __name__ == "__main__":
    main()

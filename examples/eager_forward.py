"""Main demo: an eager forward pass of a small GPT-style decoder, written as
ordinary PyTorch code against `import ignis as torch`, with timings (and the
same model in PyTorch, when installed, to compare numbers and speed)."""
import time

import numpy as np

import ignis


def init_params(torch, cfg, seed=0):
    rng = np.random.default_rng(seed)
    d, v, t, f = cfg["d"], cfg["vocab"], cfg["ctx"], 4 * cfg["d"]

    def p(*shape, scale=0.02):
        return torch.from_numpy((rng.standard_normal(shape) * scale).astype(np.float32))

    params = {"wte": p(v, d), "wpe": p(t, d), "lnf_w": torch.ones(d), "lnf_b": torch.zeros(d)}
    for i in range(cfg["layers"]):
        params.update({
            f"h{i}.ln1_w": torch.ones(d), f"h{i}.ln1_b": torch.zeros(d),
            f"h{i}.qkv_w": p(3 * d, d), f"h{i}.qkv_b": torch.zeros(3 * d),
            f"h{i}.proj_w": p(d, d), f"h{i}.proj_b": torch.zeros(d),
            f"h{i}.ln2_w": torch.ones(d), f"h{i}.ln2_b": torch.zeros(d),
            f"h{i}.fc_w": p(f, d), f"h{i}.fc_b": torch.zeros(f),
            f"h{i}.out_w": p(d, f), f"h{i}.out_b": torch.zeros(d),
        })
    return params


def forward(torch, P, idx, cfg):
    F = torch.nn.functional
    B, T = idx.shape
    d, H = cfg["d"], cfg["heads"]
    x = F.embedding(idx, P["wte"]) + F.embedding(torch.arange(T), P["wpe"])
    for i in range(cfg["layers"]):
        h = F.layer_norm(x, (d,), P[f"h{i}.ln1_w"], P[f"h{i}.ln1_b"])
        q, k, v = F.linear(h, P[f"h{i}.qkv_w"], P[f"h{i}.qkv_b"]).split(d, dim=-1)
        q, k, v = (t.view(B, T, H, d // H).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.transpose(1, 2).reshape(B, T, d)
        x = x + F.linear(a, P[f"h{i}.proj_w"], P[f"h{i}.proj_b"])
        h = F.layer_norm(x, (d,), P[f"h{i}.ln2_w"], P[f"h{i}.ln2_b"])
        x = x + F.linear(F.gelu(F.linear(h, P[f"h{i}.fc_w"], P[f"h{i}.fc_b"])),
                         P[f"h{i}.out_w"], P[f"h{i}.out_b"])
    x = F.layer_norm(x, (d,), P["lnf_w"], P["lnf_b"])
    return F.linear(x, P["wte"])  # tied output head


def timed(fn, reps):
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    cfg = dict(vocab=512, ctx=128, d=256, heads=8, layers=4)
    idx_np = np.random.default_rng(1).integers(0, cfg["vocab"], size=(8, cfg["ctx"]))
    P = init_params(ignis, cfg)
    idx = ignis.from_numpy(idx_np)
    logits = forward(ignis, P, idx, cfg)
    probs = ignis.softmax(logits, -1)
    print(f"ignis: logits {tuple(logits.shape)} {logits.dtype}, "
          f"row sums of softmax ~ {float(probs.sum(-1).mean()):.6f}")
    t_ignis = timed(lambda: forward(ignis, P, idx, cfg), 5)
    print(f"ignis eager forward: {t_ignis * 1e3:.2f} ms "
          f"(batch 8 x {cfg['ctx']} tokens, {cfg['layers']} layers, d={cfg['d']})")
    try:
        import torch
    except ImportError:
        print("PyTorch not installed: skipping the side-by-side comparison")
        return
    Pt = {k: torch.from_numpy(v.numpy().copy()) for k, v in P.items()}
    with torch.no_grad():
        ref = forward(torch, Pt, torch.from_numpy(idx_np), cfg)
        t_torch = timed(lambda: forward(torch, Pt, torch.from_numpy(idx_np), cfg), 5)
    err = np.abs(logits.numpy() - ref.numpy()).max()
    print(f"torch eager forward: {t_torch * 1e3:.2f} ms   "
          f"ignis/torch time ratio: {t_ignis / t_torch:.2f}   max |diff| = {err:.2e}")


if __name__ == "__main__":
    main()

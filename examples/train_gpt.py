"""Train a small character-level GPT with ignis on the CPU.

The model (examples/gpt.py) is built from ignis.nn and trained with
ignis.optim.AdamW on the text bundled with this repository (its Markdown and
Python sources), or on synthetic text with --synthetic. Prints the training
loss, the validation loss and tokens/s, then samples a few characters.

    python examples/train_gpt.py [--steps 400] [--synthetic] [--torch] [--threads N]

--torch runs the same script on PyTorch, for comparison. About 20-60 s on two
cores.
"""
import argparse
import math
import pathlib
import random
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gpt import GPTConfig, build_gpt, configure_optimizer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def bundled_text():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "python" / "ignis").rglob("*.py"))]
    return "\n".join(f.read_text(encoding="utf-8", errors="ignore") for f in files if f.exists())


def synthetic_text(n_chars=200_000, seed=0):
    """Sentences from a tiny grammar: learnable structure, no files needed."""
    rng = random.Random(seed)
    subjects = ["the cat", "a dog", "my tensor", "the model", "an engineer", "the kernel"]
    verbs = ["sees", "computes", "likes", "trains", "reads", "fuses"]
    objects = ["the graph", "a gradient", "the loss", "some data", "an optimizer", "the weights"]
    out, size = [], 0
    while size < n_chars:
        s = f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}.\n"
        out.append(s)
        size += len(s)
    return "".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--embd", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--synthetic", action="store_true", help="train on generated sentences")
    ap.add_argument("--torch", action="store_true", help="run on PyTorch instead of ignis")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compile", action="store_true",
                    help="train through ignis.compile / torch.compile (see --backend)")
    ap.add_argument("--backend", default="eager",
                    help="the compile backend: 'eager' (the captured graph as it is) or "
                         "'aot_eager' (AOT's forward and backward graphs)")
    ap.add_argument("--threads", type=int, default=None,
                    help="intra-op threads (on a busy shared machine 1 can be steadier)")
    args = ap.parse_args()

    if args.torch:
        import torch as lib
    else:
        import ignis as lib
    lib.manual_seed(args.seed)
    if args.threads:
        lib.set_num_threads(args.threads)

    text = synthetic_text() if args.synthetic else bundled_text()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.array([stoi[c] for c in text], dtype=np.int64)
    n_val = len(data) // 10
    train, val = data[:-n_val], data[-n_val:]
    rng = np.random.default_rng(args.seed)

    def batch(split):
        src = train if split == "train" else val
        ix = rng.integers(0, len(src) - args.block - 1, size=args.batch)
        x = np.stack([src[i:i + args.block] for i in ix])
        y = np.stack([src[i + 1:i + 1 + args.block] for i in ix])
        return lib.from_numpy(x), lib.from_numpy(y)

    cfg = GPTConfig(vocab_size=len(chars), block_size=args.block, n_layer=args.layers,
                    n_head=args.heads, n_embd=args.embd)
    model = build_gpt(lib)(cfg)
    # The compiled module shares the model's parameters; sampling below keeps
    # the eager model (its context grows every step: a new shape each time).
    fwd = lib.compile(model, backend=args.backend) if args.compile else model
    n_params = sum(p.numel() for p in model.parameters())
    opt = configure_optimizer(lib, model, lr=args.lr)
    warmup = max(1, args.steps // 20)
    sched = lib.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s / args.steps)))
    print(f"{lib.__name__}: {len(text)} chars, vocab {len(chars)}, {n_params} parameters, "
          f"{args.steps} steps of {args.batch}x{args.block} tokens")

    def evaluate():
        model.eval()
        with lib.no_grad():
            losses = [fwd(*batch("val"))[1].item() for _ in range(4)]
        model.train()
        return sum(losses) / len(losses)

    t0 = time.perf_counter()
    tokens = 0
    first = None
    for step in range(args.steps):
        x, y = batch("train")
        _, loss = fwd(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        tokens += x.numel()
        if first is None:
            first = loss.item()
        if step % 50 == 0 or step == args.steps - 1:
            dt = time.perf_counter() - t0
            print(f"step {step:4d}  loss {loss.item():.4f}  lr {sched.get_last_lr()[0]:.2e}  "
                  f"{tokens / dt:8.0f} tokens/s")
    dt = time.perf_counter() - t0
    val_loss = evaluate()
    print(f"done in {dt:.1f}s: train loss {first:.3f} -> {loss.item():.3f}, val loss "
          f"{val_loss:.3f} (uniform would be {math.log(len(chars)):.3f}), "
          f"{tokens / dt:.0f} tokens/s")

    # Greedy-free sampling of a short continuation.
    model.eval()
    idx = [stoi[c] for c in "the "] if all(c in stoi for c in "the ") else [0]
    with lib.no_grad():
        for _ in range(80):
            ctx = lib.tensor([idx[-args.block:]], dtype=lib.long)
            logits, _ = model(ctx)
            probs = lib.nn.functional.softmax(logits[0, -1], dim=-1).numpy().astype(np.float64)
            idx.append(int(rng.choice(len(probs), p=probs / probs.sum())))
    print("sample:", repr("".join(chars[i] for i in idx)))


if __name__ == "__main__":
    main()

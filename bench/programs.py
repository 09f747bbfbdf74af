"""Time per training step of small classic programs, ignis eager vs PyTorch eager.

Programs (--program):
  cnn: an MNIST-style CNN, two blocks of conv 3x3 (padding 1) + batch norm +
       ReLU + max pool 2, then a linear layer; batch 64 of 1x28x28 (or
       3x32x32 with --image 32); SGD with momentum, cross-entropy loss.
  lstm: the word language model of pytorch/examples, small: embedding 128,
       a 2-layer LSTM of 128 (dropout 0.2), a decoder over 1000 words;
       35 steps x batch 20 (--batch sets it); SGD, clip_grad_norm_ 0.25.
  transformer: the same model with a 2-layer TransformerEncoder (d_model
       128, 4 heads, feed-forward 256, causal mask) in place of the LSTM.

One step = forward, loss, zero_grad, backward, optimizer step, on the same
model code for both libraries. torch runs twice: as installed (its
convolutions go to oneDNN) and with torch.backends.mkldnn disabled (its
own im2col + GEMM path), because on some machines (this VM among them)
oneDNN's convolutions are an order of magnitude slower than torch's own.
Each library runs in its own child process (two OpenMP runtimes in one
process distort each other's timings); the
rounds alternate between the libraries and the best median is kept, so
load from other processes on the machine affects both alike. Prints the
median step time of each, its phases, and the ignis/torch ratio (< 1 means
ignis is faster).

    python bench/programs.py [--program cnn|lstm|transformer] [--threads N] [--steps 20]
                             [--rounds 2] [--cpu-time]
                             [--image 28|32] [--batch 64] [--device cpu|cuda] [--compile]

--compile wraps each model's forward in the library's compile (ignis.compile,
torch.compile with default settings); the forward phase then includes the
loss's eager call, and "first" is the first step's time, compile included
(a fresh process: ignis's disk cache may be warm from an earlier run, use
IGNIS_CACHE_DIR to time a cold one).

--device cuda runs both libraries' models on the GPU (torch's convolutions on
cuDNN, ignis's through im2col + cuBLASLt), synchronizing before each clock
reading; torch runs once there (oneDNN is a CPU library).
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

ROOT = pathlib.Path(__file__).resolve().parents[1]


def clock(args, lib=None):
    """Wall time, or with --cpu-time the CPU time of this process (of the
    calling thread at one thread): steadier when other work loads the machine.
    On a GPU, the clock first waits for the device's queued work."""
    if args.device == "cuda":
        def read():
            lib.cuda.synchronize()
            return time.perf_counter()
        return read
    if not args.cpu_time:
        return time.perf_counter
    return time.thread_time if args.threads == 1 else time.process_time


def build_cnn(lib, in_ch, image):
    nn = lib.nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(in_ch, 16, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(16)
            self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
            self.bn2 = nn.BatchNorm2d(32)
            self.fc = nn.Linear(32 * (image // 4) ** 2, 10)

        def forward(self, x):
            F = lib.nn.functional
            x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
            x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
            return self.fc(x.flatten(1))

    return CNN()


def maybe_compile(lib, args, model):
    if args.compile:
        model.forward = lib.compile(model.forward)
    return model


def cnn_step_times(lib, args):
    lib.manual_seed(0)
    in_ch = 1 if args.image == 28 else 3
    model = maybe_compile(lib, args, build_cnn(lib, in_ch, args.image).to(args.device))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    batch = args.batch or 64
    x = lib.from_numpy(rng.standard_normal((batch, in_ch, args.image, args.image))
                       .astype(np.float32)).to(args.device)
    y = lib.from_numpy(rng.integers(0, 10, batch)).to(args.device)
    times, phases = [], []
    now = clock(args, lib)
    for i in range(args.warmup + args.steps):
        t0 = now()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        t1 = now()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t2 = now()
        opt.step()
        t3 = now()
        if i == 0:
            first = t3 - t0
        if i >= args.warmup:
            times.append(t3 - t0)
            phases.append((t1 - t0, t2 - t1, t3 - t2))
    return float(np.median(times)), np.median(np.array(phases), axis=0), loss.item(), first


def build_language_model(lib, kind, ntoken=1000, ninp=128):
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.2)
            self.encoder = nn.Embedding(ntoken, ninp)
            if kind == "lstm":
                self.rnn = nn.LSTM(ninp, ninp, 2, dropout=0.2)
            else:
                layer = nn.TransformerEncoderLayer(ninp, 4, 256, 0.2)
                self.rnn = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.decoder = nn.Linear(ninp, ntoken)

        def forward(self, src, mask=None):
            emb = self.drop(self.encoder(src))
            if kind == "lstm":
                out, _ = self.rnn(emb)
            else:
                out = self.rnn(emb, mask=mask, is_causal=True)
            return self.decoder(self.drop(out))

    return LM()


def lm_step_times(lib, args, kind):
    lib.manual_seed(0)
    model = maybe_compile(lib, args, build_language_model(lib, kind).to(args.device))
    opt = lib.optim.SGD(model.parameters(), lr=0.5)
    rng = np.random.default_rng(0)
    seq, batch = 35, args.batch or 20
    data = lib.from_numpy(rng.integers(0, 1000, (seq + 1, batch))).to(args.device)
    x, y = data[:-1], data[1:].reshape(-1)
    mask = (lib.nn.Transformer.generate_square_subsequent_mask(seq).to(args.device)
            if kind != "lstm" else None)
    times, phases = [], []
    now = clock(args, lib)
    for i in range(args.warmup + args.steps):
        t0 = now()
        loss = lib.nn.functional.cross_entropy(model(x, mask).reshape(-1, 1000), y)
        t1 = now()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        t2 = now()
        opt.step()
        t3 = now()
        if i == 0:
            first = t3 - t0
        if i >= args.warmup:
            times.append(t3 - t0)
            phases.append((t1 - t0, t2 - t1, t3 - t2))
    return float(np.median(times)), np.median(np.array(phases), axis=0), loss.item(), first


PROGRAMS = {
    "cnn": cnn_step_times,
    "lstm": lambda lib, args: lm_step_times(lib, args, "lstm"),
    "transformer": lambda lib, args: lm_step_times(lib, args, "transformer"),
}
PEERS = ["torch", "torch-nomkldnn", "ignis"]


def run_one(args):
    """Child process: time one library, print one JSON line."""
    import importlib
    if args.only == "torch-nomkldnn":
        import torch
        torch.backends.mkldnn.enabled = False
        args.only = "torch"
    if args.only == "ignis":
        sys.path.insert(0, str(ROOT / "tests" / "python"))
        import _checkout  # noqa: F401  (this checkout's build, when it has one)
    lib = importlib.import_module(args.only)
    if args.threads:
        lib.set_num_threads(args.threads)
    t, phases, loss, first = PROGRAMS[args.program](lib, args)
    print(json.dumps({"step": t, "phases": [float(p) for p in phases], "loss": loss,
                      "first": first,
                      "threads": lib.get_num_threads(), "version": lib.__version__}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--program", choices=sorted(PROGRAMS), default="cnn")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cpu-time", action="store_true",
                    help="time steps by CPU time (the thread's at --threads 1), not wall time")
    ap.add_argument("--image", type=int, choices=[28, 32], default=28)
    ap.add_argument("--batch", type=int, default=None, help="64 for cnn, 20 for the LMs")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--compile", action="store_true",
                    help="compile each model's forward (ignis.compile / torch.compile)")
    ap.add_argument("--only", choices=PEERS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.only:
        return run_one(args)

    peers = PEERS if args.device == "cpu" and not args.compile else ["torch", "ignis"]
    best = {}
    for _ in range(args.rounds):
        for name in peers:
            cmd = [sys.executable, __file__, "--only", name, "--program", args.program,
                   "--steps", str(args.steps), "--warmup", str(args.warmup),
                   "--image", str(args.image), "--device", args.device]
            if args.batch:
                cmd += ["--batch", str(args.batch)]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            if args.cpu_time:
                cmd += ["--cpu-time"]
            if args.compile:
                cmd += ["--compile"]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                                 env=os.environ).stdout
            r = json.loads(out.strip().splitlines()[-1])
            if name not in best or r["step"] < best[name]["step"]:
                best[name] = r
    what = (f"batch {args.batch or 64}, {args.image}x{args.image} images"
            if args.program == "cnn" else f"35 steps x batch {args.batch or 20}")
    print(f"{args.program}: {what}; threads "
          f"ignis={best['ignis']['threads']} torch={best['torch']['threads']}; "
          f"{platform.processor() or platform.machine()}, torch {best['torch']['version']}; "
          f"{'CPU' if args.cpu_time else 'wall'} time; device {args.device}"
          f"{'; compiled forward' if args.compile else ''}")
    for name in peers:
        r = best[name]
        t, (fwd, bwd, opt) = r["step"], r["phases"]
        print(f"{name:15s} {t * 1e3:8.2f} ms/step  (forward {fwd * 1e3:.2f}, backward "
              f"{bwd * 1e3:.2f}, optimizer {opt * 1e3:.2f})  final loss {r['loss']:.4f}  "
              f"first step {r['first']:.2f} s")
    for peer in peers[:-1]:
        print(f"ratio ignis/{peer}: {best['ignis']['step'] / best[peer]['step']:.2f}x "
              "(< 1 means ignis is faster)")


if __name__ == "__main__":
    main()

"""The GPU benchmark: ignis eager beside torch eager on one GPU, each in its own
child process, the same model code written once against a `torch`-like module
object (`lib` is `ignis` or `torch`). Rows:

  pointwise   (relu(x + b) * s + tanh(x)).sigmoid(), x 8192x8192 (2^26) float32,
              b and s broadcast row vectors
  mse         ((a - b) ** 2).mean(), a and b 8192x8192 float32: a full reduction
  softmax     softmax(x, -1), 8192x8192 bfloat16
  layer_norm  layer_norm(x, (4096,), weight, bias), 16384x4096 bfloat16
  softmax_bwd the backward of softmax(x, -1) (autograd.grad of y with a given
              gradient), 8192x8192 bfloat16: reads y and the gradient, writes dx
  layer_norm_bwd the backward of layer_norm(x, (4096,), weight, bias) for x, weight
              and bias, 16384x4096 bfloat16 (reads the gradient and x, writes dx)
  mlp         Linear(4096, 16384) + GELU + Linear(16384, 4096) on 8192x4096
              bfloat16, no_grad
  mlp_relu    the same with ReLU (what ignis folds into cuBLASLt's epilogue:
              docs/compiler.md, "Activation epilogues on the GPU")
  gpt_fwd     a GPT-2-small-sized model (examples/gpt.py: 12 layers, d=768, 12 heads,
              vocab 50304) on batch 8 x sequence 512, bfloat16 parameters
              (`.to(dtype)`, no autocast), forward with loss, no_grad
  gpt_train   one training step of it: zero_grad, forward, loss, backward, AdamW step
              (fused when the library has it, else foreach), with the peak memory
  attn_fwd    scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v
              [8, 12, 512, 64] bfloat16 (GPT-2 small's attention), no_grad
  attn_train  the same forward and its backward (dq, dk, dv from a fixed dout)
  attn_mask_fwd, attn_mask_train
              the same shapes with a key-padding attn_mask instead of is_causal: bool
              [8, 1, 1, 512], each batch element's keys valid up to a length drawn in
              [256, 512]
  tiny        50 small pointwise ops (adds, multiplies, sin, cos, relu) on 1024
              float32 elements, microseconds per call: launch and call overhead
  compile     the gpt_train model compiled (default mode): seconds from a fresh cache
              to the end of the first training step (cold), and from a new process
              on that warm cache (warm); in the .compile columns only

Columns (--impls): ignis and torch eager; ignis.compile and torch.compile
(`lib.compile` with its default mode: the model, or the row's function, is
compiled; the bwd rows compile the forward and time its compiled backward;
gpt_train's optimizer step stays eager); and the same with
mode="reduce-overhead" (CUDA graphs): ignis.cg and torch.cg; ignis.at is ignis
with mode="max-autotune" (row kernels' knobs and cuBLASLt's algorithms timed on
the GPU: docs/compiler.md), its ratio taken over torch.compile.

Timing: CUDA events on the current stream around `iters` calls, after warm-up;
the median of several such rounds, in ms per call. Each run also measures, in a
child of its own (torch when it has CUDA, else ignis), the copy bandwidth (a
device-to-device copy of a 1 GiB buffer: 2 bytes moved per byte copied) and the
bf16 matmul peak (an 8192^3 bf16 GEMM). Memory-bound rows print the bytes they
must move (inputs read once, output written once) per second as a fraction of
that copy bandwidth; the GEMM rows (mlp, gpt_*) their FLOP/s (model FLOPs: the
matrix products, attention counted in full; the attn rows count the causal
half, 4 B H L^2 D / 2 forward and 2.5 times that backward, the attn_mask rows
every score) as a fraction of that bf16 peak.
The ratio columns are ignis / torch (below 1: ignis faster): eager over eager,
ignis.compile over torch.compile, and ignis.cg over torch.cg.

The first outputs of each row (the result; for gpt_fwd the loss and a corner of
the logits; for gpt_train the first step's loss and a corner of two gradients)
are saved by every child and compared with torch eager's, with bf16 tolerances (element by
element for pointwise, softmax, layer_norm and softmax_bwd; the relative
error of each output as a whole for the GEMM rows and layer_norm_bwd); a difference prints a loud MISMATCH and
the run exits 1.

    python bench/gpu.py [--rows a,b] [--impls a,b] [--quick] [--json PATH]
                        [--device cuda|cpu] [--profile N]

--profile N also records N calls of each cell under torch.profiler's CUDA
activity (which sees ignis's driver-API launches as well as torch's kernels)
and prints each cell's kernels by GPU time per call as the cell finishes (a run
cut short keeps the cells it measured): where a row's time goes, for both
libraries. With it goes the cell's GPU timeline: busy and idle time per call,
the largest idle gaps with the kernels around them, and the host's
synchronizing CUDA calls (CUPTI's API records), and each kernel's launch
(registers a thread, threads x blocks, the blocks a multiprocessor holds at once
by Hopper's limits, and the waves of blocks the grid takes); `--trace DIR` keeps
each cell's Chrome trace (chrome://tracing, Perfetto).

--config NAME=VALUE (repeatable) sets a knob of ignis._inductor.config in
ignis's children, for A/B runs of one compiler decision:
`--config realize_across_kernels=False`, `--config cuda.online_softmax=False`.

--device cpu --quick runs everything on small sizes on the CPU (the
benchmark's own test, where there is no GPU). Without CUDA in torch, torch's
side is skipped with the reason; without a GPU at all, `--device cuda` says so.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

ROWS = ["pointwise", "mse", "softmax", "layer_norm", "softmax_bwd", "layer_norm_bwd", "mlp", "mlp_relu",
        "gpt_fwd",
        "gpt_train", "attn_fwd", "attn_train", "attn_mask_fwd", "attn_mask_train", "tiny",
        "compile"]
# library[.how]: eager, compiled with the default mode, compiled with CUDA graphs.
IMPLS = ["ignis", "torch", "ignis.compile", "torch.compile", "ignis.cg", "torch.cg", "ignis.at"]
COMPILE_MODES = {"compile": "default", "cg": "reduce-overhead", "at": "max-autotune"}
# Each ignis column's peer in the ratio columns (ignis.at, max-autotune, has
# none of its own: torch's max-autotune autotunes Triton for minutes).
PEERS = {"ignis": "torch", "ignis.compile": "torch.compile", "ignis.cg": "torch.cg",
         "ignis.at": "torch.compile"}
MEMORY_BOUND = {"pointwise", "mse", "softmax", "layer_norm", "softmax_bwd", "layer_norm_bwd"}
# The ignis-vs-torch check of each row's first outputs: element by element
# (rtol, atol) for the rows that compute each element the same way; for the
# rows whose products and attention sum in other orders (in bfloat16, over
# thousands of terms), the relative error of each output as a whole,
# |x - y| / |y| (Frobenius norms), at most this.
TOL = {"pointwise": (1e-5, 1e-6), "mse": (1e-4, 1e-6), "softmax": (2e-2, 1e-3), "layer_norm": (2e-2, 2e-2),
       "softmax_bwd": (2e-2, 1e-3), "tiny": (1e-4, 1e-5)}
# layer_norm_bwd's weight and bias gradients are sums over all rows, in
# other orders (torch's CPU kernel sums them in bfloat16: 2% off a float64
# reference at --quick sizes, where ignis is 0.25% off).
NORM_TOL = {"mlp": 2e-2, "mlp_relu": 2e-2, "gpt_fwd": 5e-2, "gpt_train": 5e-2, "layer_norm_bwd": 3e-2,
            "attn_fwd": 2e-2, "attn_train": 2e-2, "attn_mask_fwd": 2e-2, "attn_mask_train": 2e-2}


# --gpt LAYERS,BATCH: the GPT rows' depth and batch (GPT-2-small's width, heads,
# vocabulary and length kept): a step small enough for the CPU with the
# vocabulary's memory effects intact.
GPT_OVERRIDE = None


def sizes(quick):
    S = _sizes(quick)
    if GPT_OVERRIDE:
        S["gpt"]["n_layer"], S["batch"] = GPT_OVERRIDE
    return S


def _sizes(quick):
    if quick:
        return dict(pw=(256, 256), sm=(256, 512), ln=(512, 256), mlp=(256, 256, 1024),
                    gpt=dict(n_layer=2, n_head=4, n_embd=64, vocab_size=512, block_size=64),
                    batch=2, attn=(2, 2, 64, 32))
    return dict(pw=(8192, 8192), sm=(8192, 8192), ln=(16384, 4096), mlp=(8192, 4096, 16384),
                gpt=dict(n_layer=12, n_head=12, n_embd=768, vocab_size=50304, block_size=512),
                batch=8, attn=(8, 12, 512, 64))


# ---------------------------------------------------------------- child side

CONFIG = []  # --config NAME=VALUE: ignis compiler knobs the children set


def load_lib(impl):
    if impl.split(".")[0] == "ignis":
        sys.path.insert(0, str(ROOT / "tests" / "python"))
        import _checkout  # noqa: F401  (this checkout's build, when it has one)
        import ignis as lib
        from ignis._inductor import config
        for item in CONFIG:
            name, _, value = item.partition("=")
            knob = config._knob(name)
            if knob is None:
                raise SystemExit(f"--config: ignis._inductor.config has no knob {name!r}")
            setattr(*knob, eval(value, {}))  # a Python literal: False, 4, "auto"
    else:
        import torch as lib
    return lib


def set_params(lib, model, seed=1):
    """The same weights in both libraries: drawn by NumPy in named_parameters order."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for name, p in model.named_parameters():
            shape = tuple(p.shape)
            if len(shape) >= 2:
                a = rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(shape[-1]))
            elif name.endswith("weight"):
                a = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
            else:
                a = 0.1 * rng.standard_normal(shape, dtype=np.float32)
            p.copy_(lib.from_numpy(a))


def gpt_model(lib, S, device, dtype):
    from gpt import GPTConfig, build_gpt
    cfg = GPTConfig(**S["gpt"])
    lib.manual_seed(0)
    model = build_gpt(lib)(cfg)
    set_params(lib, model)
    return model.to(device=device, dtype=dtype), cfg


def adamw(lib, model):
    """AdamW, fused when the library has it for these parameters, else foreach."""
    params = list(model.parameters())
    try:
        return lib.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1,
                               fused=True), "fused"
    except (RuntimeError, TypeError):
        return lib.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1,
                               foreach=True), "foreach"


def make_case(row, lib, quick, device, wrap=lambda f: f):
    """(call, first, flops, bytes, info): call() runs the row once; first()
    runs it once and returns the tensors to compare. `wrap` turns the row's
    function or model into what is timed (lib.compile for the compiled
    columns; the identity for eager)."""
    S = sizes(quick)
    rng = np.random.default_rng(0)
    bf16 = lib.bfloat16

    def t(a, dtype=None):
        x = lib.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(device)
        return x.to(dtype) if dtype is not None else x
    F = lib.nn.functional
    if row == "pointwise":
        m, n = S["pw"]
        x, b, s = t(rng.standard_normal((m, n))), t(rng.standard_normal(n)), \
            t(rng.standard_normal(n))
        f = wrap(lambda x, b, s: (lib.relu(x + b) * s + lib.tanh(x)).sigmoid())

        def call():
            return f(x, b, s)
        return call, call, None, 4 * (2 * m * n + 2 * n), {}
    if row == "mse":
        # A full reduction: one row of m * n elements (Note [Split row reductions]).
        m, n = S["pw"]
        a, b = t(rng.standard_normal((m, n))), t(rng.standard_normal((m, n)))
        f = wrap(lambda a, b: ((a - b) ** 2).mean())

        def call():
            return f(a, b)
        return call, call, None, 4 * 2 * m * n, {}
    if row == "softmax":
        m, n = S["sm"]
        x = t(rng.standard_normal((m, n)), bf16)
        f = wrap(lambda x: lib.softmax(x, -1))

        def call():
            return f(x)
        return call, call, None, 2 * 2 * m * n, {}
    if row == "layer_norm":
        m, n = S["ln"]
        x = t(rng.standard_normal((m, n)), bf16)
        w, b = t(1 + 0.1 * rng.standard_normal(n), bf16), t(0.1 * rng.standard_normal(n), bf16)
        f = wrap(lambda x, w, b: F.layer_norm(x, (n,), w, b))

        def call():
            return f(x, w, b)
        return call, call, None, 2 * (2 * m * n + 2 * n), {}
    if row == "softmax_bwd":
        m, n = S["sm"]
        x = t(rng.standard_normal((m, n)), bf16).requires_grad_()
        g = t(rng.standard_normal((m, n)), bf16)
        y = wrap(lambda x: lib.softmax(x, -1))(x)

        def call():
            return lib.autograd.grad(y, x, g, retain_graph=True)[0]
        return call, call, None, 3 * 2 * m * n, {}
    if row == "layer_norm_bwd":
        m, n = S["ln"]
        x = t(rng.standard_normal((m, n)), bf16).requires_grad_()
        w = t(1 + 0.1 * rng.standard_normal(n), bf16).requires_grad_()
        b = t(0.1 * rng.standard_normal(n), bf16).requires_grad_()
        g = t(rng.standard_normal((m, n)), bf16)
        y = wrap(lambda x, w, b: F.layer_norm(x, (n,), w, b))(x, w, b)

        def call():
            return lib.autograd.grad(y, (x, w, b), g, retain_graph=True)
        return call, call, None, 2 * (3 * m * n + 4 * n), {}
    if row in ("mlp", "mlp_relu"):
        m, d, h = S["mlp"]
        nn = lib.nn
        model = nn.Sequential(nn.Linear(d, h), nn.GELU() if row == "mlp" else nn.ReLU(),
                              nn.Linear(h, d))
        set_params(lib, model)
        model = wrap(model.to(device=device, dtype=bf16))
        x = t(rng.standard_normal((m, d)), bf16)

        def call():
            return model(x)
        return call, call, 2 * m * d * h * 2, None, {}
    if row in ("gpt_fwd", "gpt_train"):
        model, cfg = gpt_model(lib, S, device, bf16)
        B, T = S["batch"], cfg.block_size
        idx = lib.from_numpy(rng.integers(0, cfg.vocab_size, size=(B, T))).to(device)
        tgt = lib.from_numpy(rng.integers(0, cfg.vocab_size, size=(B, T))).to(device)
        d, L, V = cfg.n_embd, cfg.n_layer, cfg.vocab_size
        fwd_flops = 2 * B * T * (12 * L * d * d + d * V) + 2 * 2 * B * T * T * d * L
        run = wrap(model)
        if row == "gpt_fwd":
            def call():
                return run(idx, tgt)

            def first():  # the loss and a corner of the logits (all of them: 0.8 GB)
                logits, loss = call()
                return loss, logits[:, :16, :512]
            return call, first, fwd_flops, None, {}
        opt, how = adamw(lib, model)
        named = dict(model.named_parameters())
        probes = [named["transformer.h.0.attn.c_attn.weight"], named["transformer.wte.weight"]]

        def call():
            opt.zero_grad(set_to_none=True)
            _, loss = run(idx, tgt)
            loss.backward()
            opt.step()
            return loss

        def first():
            opt.zero_grad(set_to_none=True)
            _, loss = run(idx, tgt)
            loss.backward()
            grads = [p.grad[:256, :256].clone() for p in probes]
            opt.step()
            return (loss.detach().clone(), *grads)
        return call, first, 3 * fwd_flops, None, {"optimizer": how}
    if row in ("attn_fwd", "attn_train", "attn_mask_fwd", "attn_mask_train"):
        B, H, T, D = S["attn"]
        q, k, v, g = (t(rng.standard_normal((B, H, T, D)), bf16) for _ in range(4))
        if row.startswith("attn_mask"):
            # key padding: batch element b attends to its first lengths[b] keys
            lengths = rng.integers(T // 2, T + 1, B)
            m = lib.from_numpy(np.arange(T)[None, None, None, :] < lengths[:, None, None, None])
            m = m.to(device)
            flops = 4 * B * H * T * T * D  # every score computed
            attn = wrap(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=m))
        else:
            flops = 4 * B * H * T * T * D // 2  # causal: half the scores
            attn = wrap(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True))
        if row in ("attn_fwd", "attn_mask_fwd"):
            def call():
                return attn(q, k, v)
            return call, call, flops, None, {}
        ins = [x.clone().requires_grad_() for x in (q, k, v)]

        def call():
            for x in ins:
                x.grad = None
            out = attn(*ins)
            out.backward(g)
            return out

        def first():
            return (call().detach().clone(), *[x.grad for x in ins])
        return call, first, 3.5 * flops, None, {}
    if row == "tiny":
        x = t(rng.standard_normal(1024))

        def fifty(x):
            for _ in range(10):  # 5 ops a round
                x = lib.relu(lib.cos(lib.sin(x) * 0.9) + 0.1)
            return x
        f = wrap(fifty)

        def call():
            return f(x)
        return call, call, None, None, {}
    raise ValueError(row)


class Timer:
    """Times calls with CUDA events on the current stream (wall clock on the CPU)."""

    def __init__(self, lib, device):
        self.lib, self.cuda = lib, device.startswith("cuda")

    def sync(self):
        if self.cuda:
            self.lib.cuda.synchronize()

    def per_call(self, fn, iters):
        if not self.cuda:
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            return (time.perf_counter() - t0) / iters
        start = self.lib.cuda.Event(enable_timing=True)
        end = self.lib.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / iters

    def median(self, fn, min_time, rounds=7, warmup=3):
        for _ in range(warmup):
            fn()
        self.sync()
        one = max(self.per_call(fn, 1), 1e-6)
        iters = max(1, min(100, int(min_time / rounds / one)))
        times = [self.per_call(fn, iters) for _ in range(rounds)]
        return float(np.median(times)), iters * rounds


def to_numpy(x):
    if isinstance(x, (tuple, list)):
        return [a for v in x if v is not None for a in to_numpy(v)]
    x = x.detach()
    if str(x.dtype).split(".")[-1] in ("bfloat16", "float16"):
        x = x.float()
    return [x.cpu().numpy().copy()]


def cuda_missing(lib, device):
    if not device.startswith("cuda"):
        return None
    if not lib.cuda.is_available():
        return f"{lib.__name__} has no usable CUDA GPU here"
    return None


def wrapper(lib, impl):
    """What make_case applies to a row's function or model for this column."""
    how = impl.partition(".")[2]
    if not how:
        return lambda f: f
    mode = COMPILE_MODES[how]
    return lambda f: lib.compile(f, mode=mode)


def compile_child(args):
    """The compile row: seconds from compiling the gpt_train model to the end
    of its first training step (the cache directory is the parent's choice:
    fresh for cold, the cold run's for warm)."""
    t0 = time.perf_counter()
    lib = load_lib(args.impl)
    out = {"row": "compile", "impl": args.impl, "version": lib.__version__}
    why = cuda_missing(lib, args.device)
    if why:
        out["skipped"] = why
        print("RESULT " + json.dumps(out))
        return
    t_import = time.perf_counter() - t0
    # The model and inputs are built (and moved to the device) before the clock starts.
    call, _, _, _, _ = make_case("gpt_train", lib, args.quick, args.device,
                                 wrapper(lib, args.impl))
    timer = Timer(lib, args.device)
    timer.sync()
    t1 = time.perf_counter()
    call()
    timer.sync()
    out["time_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    call()
    timer.sync()
    out["step_s"] = time.perf_counter() - t2  # a second step: what is not compile time
    out["import_s"] = t_import
    print("RESULT " + json.dumps(out))


def run_child(args):
    if args.child == "compile":
        return compile_child(args)
    lib = load_lib(args.impl)
    out = {"row": args.child, "impl": args.impl, "version": lib.__version__}
    why = cuda_missing(lib, args.device)
    if why:
        out["skipped"] = why
        print("RESULT " + json.dumps(out))
        return
    call, first, fl, nbytes, info = make_case(args.child, lib, args.quick, args.device,
                                              wrapper(lib, args.impl))
    out.update(info)
    timer = Timer(lib, args.device)
    train = args.child in ("gpt_train", "attn_train", "attn_mask_train")
    with lib.set_grad_enabled(train):
        res = first()
        np.savez(args.save, *to_numpy(res))
        # Peak memory: the CUDA allocator's, or on the CPU ignis's own
        # (torch keeps no CPU counters).
        mem = lib.cuda if timer.cuda else getattr(lib, "cpu", None)
        if mem is not None and not hasattr(mem, "max_memory_allocated"):
            mem = None
        if mem is not None:
            timer.sync()
            mem.reset_peak_memory_stats()
        out["time_s"], out["reps"] = timer.median(call, 0.05 if args.quick else 1.0)
        if mem is not None:
            out["peak_mib"] = mem.max_memory_allocated() / 2 ** 20
        if args.profile and timer.cuda:
            trace = f"{args.trace}/{args.child}-{args.impl}.json" if args.trace else None
            out["profile"] = kernel_profile(call, args.profile, timer, trace)
    out["flops"], out["bytes"] = fl, nbytes
    print("RESULT " + json.dumps(out))


def kernel_profile(call, n, timer, trace=None):
    """[(kernel, launches per call, µs per call)] for n calls, by GPU time, and the
    timeline of those calls: torch.profiler's CUDA activity records every kernel
    of the process, ignis's (launched through the driver API) as well as torch's,
    and the host's CUDA API calls."""
    import tempfile
    import torch  # noqa: F401  (the profiler needs it loaded)
    from torch.profiler import ProfilerActivity, profile
    timer.sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            call()
        timer.sync()
    rows = {}
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", None)
        if us is None:
            us = e.self_cuda_time_total
        if us > 0:
            calls, total = rows.get(e.key, (0, 0.0))
            rows[e.key] = (calls + e.count, total + us)
    kernels = sorted(([k, c / n, us / n] for k, (c, us) in rows.items()), key=lambda r: -r[2])
    path = trace or tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(path)
    try:
        timeline = gpu_timeline(path, n)
        shapes = launch_shapes(path, torch.cuda.get_device_properties(0).multi_processor_count)
    except Exception as e:  # the kernel list stands without it
        timeline, shapes = {"error": f"{type(e).__name__}: {e}"}, {}
    if trace is None:
        os.unlink(path)
    return {"kernels": kernels, "timeline": timeline, "shapes": shapes}


def launch_shapes(path, sms):
    """Each kernel's launch as the trace records it (its first launch): registers a
    thread, threads a block, blocks, and what that gives on `sms` multiprocessors of
    Hopper's limits -- the blocks one holds at once (by threads, registers allocated
    8 at a time, shared memory, and 32 blocks) and the waves of blocks the grid
    takes. A kernel of 1.4 waves idles most of the GPU through its second."""
    events = trace_events(path)
    out = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "kernel" or e.get("name") in out:
            continue
        a = e.get("args", {})
        grid, block = a.get("grid"), a.get("block")
        regs = int(a.get("registers per thread", 0) or 0)
        if not grid or not block:
            continue
        threads = block[0] * block[1] * block[2]
        blocks = grid[0] * grid[1] * grid[2]
        smem = int(a.get("shared memory", 0) or 0)
        fit = [32, 2048 // max(threads, 1)]
        if regs:
            fit.append(65536 // (((regs + 7) // 8 * 8) * threads))
        if smem:
            fit.append(233472 // smem)
        resident = max(min(fit), 1)
        out[e["name"]] = [regs, threads, blocks, resident, blocks / (sms * resident)]
    return out


def trace_events(path):
    """The events of a Chrome trace as torch.profiler exports it."""
    with open(path) as f:
        events = json.load(f)
    return events.get("traceEvents", events) if isinstance(events, dict) else events


def gpu_timeline(path, n):
    """Where the wall time of n profiled calls goes on the GPU: the span from the
    first kernel's start to the last one's end, the time some kernel, copy or
    memset ran (busy), the idle gaps (the largest, with the kernels around
    them), and the host's synchronizing CUDA calls (syncs and device-to-host
    copies), per call."""
    events = trace_events(path)
    gpu = sorted(((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), e.get("name", ""))
                  for e in events if e.get("ph") == "X" and
                  e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")), key=lambda g: g[0])
    if not gpu:
        return {}
    busy, gaps, end, prev = 0.0, [], gpu[0][0], ""
    for s, e, name in gpu:
        if s > end:
            gaps.append((s - end, prev, name))
        busy += max(0.0, e - max(s, end))
        if e > end:
            end, prev = e, name
    span = end - gpu[0][0]
    sync_words = ("Synchronize", "MemcpyDtoH", "cudaMemcpy", "EventSynchronize", "cuMemcpy")
    syncs = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and \
                any(w in e.get("name", "") for w in sync_words):
            k = e["name"]
            c, t = syncs.get(k, (0, 0.0))
            syncs[k] = (c + 1, t + float(e.get("dur", 0)))
    gaps.sort(key=lambda g: -g[0])
    return {"span_us": span / n, "busy_us": busy / n, "idle_us": (span - busy) / n,
            "gaps": [[round(g, 1), a[:60], b[:60]] for g, a, b in gaps[:8]],
            "syncs": {k: [c / n, t / n] for k, (c, t) in syncs.items()}}


def peaks_child(args):
    """The copy bandwidth and the bf16 matmul peak, by torch when it has CUDA
    (or on the CPU), else by ignis."""
    try:
        import torch as lib
        if args.device.startswith("cuda") and not lib.cuda.is_available():
            raise ImportError
    except ImportError:
        lib = load_lib("ignis")
    why = cuda_missing(lib, args.device)
    if why:
        print("RESULT " + json.dumps({"error": why}))
        return
    timer = Timer(lib, args.device)
    n = (16 if args.quick else 1024) * 2 ** 20  # bytes copied
    src = lib.ones(n // 4, device=args.device)
    dst = lib.empty_like(src)
    t_copy, _ = timer.median(lambda: dst.copy_(src), 0.05 if args.quick else 1.0)
    k = 512 if args.quick else 8192
    a = lib.ones(k, k, device=args.device, dtype=lib.bfloat16)
    b = lib.ones(k, k, device=args.device, dtype=lib.bfloat16)
    t_mm, _ = timer.median(lambda: a @ b, 0.05 if args.quick else 1.0)
    print("RESULT " + json.dumps({"copy_bw": 2 * n / t_copy, "bf16_flops": 2 * k ** 3 / t_mm,
                                  "by": f"{lib.__name__} {lib.__version__}",
                                  "copy_mib": n / 2 ** 20, "gemm": k}))


# --------------------------------------------------------------- parent side

def log(msg):
    print(f"[gpu.py {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def spawn(extra, args, timeout, env=None):
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve())] + extra + \
        ["--device", args.device] + (["--quick"] if args.quick else []) + \
        (["--gpt", args.gpt] if args.gpt else []) + \
        (["--profile", str(args.profile)] if args.profile else []) + \
        (["--trace", args.trace] if args.trace else []) + \
        [f"--config={c}" for c in args.config]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        tail = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        return {"error": tail[-1] if tail else f"exit code {r.returncode}",
                "stderr": "\n".join(tail[-25:])}
    return json.loads(lines[-1][len("RESULT "):])


def check(row, a_path, b_path):
    """(ok, detail): the row's outputs agree by TOL or NORM_TOL."""
    a, b = np.load(a_path), np.load(b_path)
    if len(a.files) != len(b.files):
        return False, f"{len(a.files)} vs {len(b.files)} outputs"
    ok, worst, worst_rel = True, 0.0, 0.0
    for k in a.files:
        x, y = a[k].astype(np.float64), b[k].astype(np.float64)
        if x.shape != y.shape:
            return False, f"shape {x.shape} vs {y.shape}"
        if not x.size:
            continue
        worst = max(worst, float(np.max(np.abs(x - y))))
        rel = float(np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-30))
        worst_rel = max(worst_rel, rel)
        if row in NORM_TOL:
            ok = ok and bool(np.isfinite(x).all()) and rel <= NORM_TOL[row]
        else:
            ok = ok and bool(np.allclose(x, y, rtol=TOL[row][0], atol=TOL[row][1]))
    return ok, f"max |diff| {worst:.2e}, relative error {worst_rel:.2e}"


def run_compile_row(args, impls):
    """The compile row's cells: for each compiled column, a cold run on a fresh
    cache directory and a warm run (a new process) on the same directory."""
    cells = {}
    for impl in impls:
        if impl.partition(".")[2] != "compile":  # the default mode's compile
            continue
        cache = tempfile.mkdtemp(prefix="ignis_bench_cache_")
        env = {"IGNIS_CACHE_DIR": cache, "TORCHINDUCTOR_CACHE_DIR": cache,
               "TRITON_CACHE_DIR": os.path.join(cache, "triton")}
        cell = {}
        try:
            for phase in ("cold", "warm"):
                log(f"compile: {impl} {phase}")
                res = spawn(["--child", "compile", "--impl", impl], args, args.timeout, env)
                if "time_s" in res:
                    log(f"compile: {impl} {phase}: {res['time_s']:.2f} s")
                    cell[phase + "_s"] = res["time_s"]
                    cell["step_s"] = res["step_s"]
                    cell["version"] = res["version"]
                else:
                    cell.update({k: v for k, v in res.items() if k in ("error", "stderr",
                                                                          "skipped")})
                    log(f"compile: {impl} {phase}: {res.get('error') or res.get('skipped')}")
                    break
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        cells[impl] = cell
    return {"cells": cells, "checks": {}}


def run_all(args, rows, impls, work):
    log("peaks (copy bandwidth, bf16 GEMM)")
    results = {"device": args.device, "quick": args.quick, "impls": impls, "rows": {},
               "peaks": spawn(["--child", "peaks"], args, args.timeout)}
    for row in rows:
        if row == "compile":
            results["rows"][row] = run_compile_row(args, impls)
            continue
        cells = {}
        for impl in impls:
            save = work / f"{row}-{impl}.npz"
            log(f"{row}: {impl}")
            res = spawn(["--child", row, "--impl", impl, "--save", str(save)], args, args.timeout)
            if "time_s" in res:
                log(f"{row}: {impl}: {res['time_s'] * 1e3:.3f} ms")
                res["saved"] = str(save)
                if "profile" in res:
                    # As the cell finishes, so a run cut short keeps what it measured.
                    print_profile(row, impl, res["profile"])
            elif "error" in res:
                log(f"{row}: {impl} FAILED: {res['error']}")
            cells[impl] = res
        # Every column against torch eager (else the first column that ran,
        # torch's before ignis's).
        order = ["torch", "ignis"] + sorted(cells, key=lambda i: not i.startswith("torch"))
        ref = next((i for i in order if "saved" in cells.get(i, {})), None)
        checks = {}
        for impl, c in cells.items():
            if impl == ref or "saved" not in c:
                continue
            try:
                ok, detail = check(row, c["saved"], cells[ref]["saved"])
            except Exception as e:  # noqa: BLE001
                ok, detail = False, f"check failed: {e}"
            checks[impl] = {"ok": ok, "detail": detail, "against": ref}
            if not ok:
                log(f"!!! MISMATCH {row}: {impl} vs {ref}: {detail}")
        for c in cells.values():
            c.pop("saved", None)
        results["rows"][row] = {"cells": cells, "checks": checks}
        if args.json:  # rows done so far survive a run that is cut short
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    return results


def report(results):
    pk = results["peaks"]
    bw, peak = pk.get("copy_bw"), pk.get("bf16_flops")
    impls = results["impls"]
    versions = {i.split(".")[0]: c["version"] for r in results["rows"].values()
                for i, c in r["cells"].items() if "version" in c}
    print(f"device: {results['device']}{', QUICK sizes' if results['quick'] else ''}; "
          f"ignis {versions.get('ignis', '?')}, torch {versions.get('torch', 'absent')}")
    if bw:
        print(f"copy bandwidth {bw / 1e9:.3g} GB/s ({pk['copy_mib']:.0f} MiB device copy), "
              f"bf16 GEMM {peak / 1e12:.3g} TFLOP/s ({pk['gemm']}^3), measured by {pk['by']}")
    else:
        print(f"peaks not measured: {pk.get('error')}")
    print()
    print("ms per call (tiny: µs; median of rounds timed by CUDA events, by the wall clock on "
          "the CPU, after warm-up), with the fraction of the roof in brackets: memory-bound "
          "rows of the copy bandwidth, GEMM rows of the bf16 GEMM peak. Ratios: ignis / torch "
          "in the same column kind (below 1: ignis faster). compile: seconds to the end of "
          "the first training step, cold / warm cache.")
    pairs = [(i, PEERS[i]) for i in impls if i in PEERS and PEERS[i] in impls]
    head = [*impls, *[f"{a} / {b}" for a, b in pairs]]
    print("| row | " + " | ".join(head) + " | peak MiB (gpt_train) | notes |")
    print("|" + " --- |" * (len(head) + 3))
    problems = []

    def cell_text(row, c):
        if row == "compile":
            if "cold_s" in c:
                return f"{c['cold_s']:.1f} / {c.get('warm_s', float('nan')):.2f} s"
        elif "time_s" in c:
            if row == "tiny":
                return f"{c['time_s'] * 1e6:.1f} µs"
            text = f"{c['time_s'] * 1e3:.3f}"
            if c.get("bytes") and bw:
                text += f" ({c['bytes'] / c['time_s'] / bw:.2f})"
            elif c.get("flops") and peak:
                text += f" ({c['flops'] / c['time_s'] / peak:.2f})"
            return text
        if "skipped" in c:
            return "skipped"
        return "ERROR" if "error" in c else "-"

    def ratio(row, a, b):
        key = "cold_s" if row == "compile" else "time_s"
        if key in a and key in b:
            text = f"{a[key] / b[key]:.2f}"
            if row == "compile" and "warm_s" in a and "warm_s" in b:
                text += f" / {a['warm_s'] / b['warm_s']:.2f}"
            return text
        return "-"
    for row, r in results["rows"].items():
        cells = r["cells"]
        texts = [cell_text(row, cells.get(i, {})) for i in impls]
        texts += [ratio(row, cells.get(a, {}), cells.get(b, {})) for a, b in pairs]
        mem = " / ".join(f"{c['peak_mib']:.0f}" if "peak_mib" in c else "-"
                         for c in (cells.get(i, {}) for i in impls)) if row == "gpt_train" else ""
        notes = ", ".join(f"{i} AdamW {c['optimizer']}" for i, c in cells.items()
                          if "optimizer" in c and i in ("ignis", "torch"))
        print(f"| {row} | " + " | ".join(texts) + f" | {mem} | {notes} |")
        for impl, c in cells.items():
            if "error" in c:
                problems.append(f"ERROR {row} / {impl}: {c['error']}\n    " +
                                c.get("stderr", "").replace("\n", "\n    "))
            elif "skipped" in c:
                problems.append(f"skipped {row} / {impl}: {c['skipped']}")
    print()
    for row, r in results["rows"].items():
        for impl, ch in r["checks"].items():
            print(f"check {row} {impl} vs {ch['against']}: "
                  f"{'ok' if ch['ok'] else 'MISMATCH'} ({ch['detail']})")
    bad = [(row, impl, ch) for row, r in results["rows"].items()
           for impl, ch in r["checks"].items() if not ch["ok"]]
    if bad:
        print("\n" + "!" * 72)
        for row, impl, ch in bad:
            print(f"!!! MISMATCH in {row}: {impl} vs {ch['against']}: {ch['detail']}")
        print("!" * 72)
    for p in problems:
        print("\n" + p)


def print_profile(row, impl, prof):
    """A cell's kernels by GPU time per call (kernel_profile's list), the 25 largest,
    and its GPU timeline: busy and idle time per call, the largest gaps, the host's
    synchronizing calls."""
    tl, shapes, prof = prof["timeline"], prof.get("shapes", {}), prof["kernels"]
    if "error" in tl:
        print(f"\ntimeline of {row} / {impl}: not read ({tl['error']})")
    elif tl:
        print(f"\ntimeline of {row} / {impl}, per call: span {tl['span_us']:.1f} µs, GPU busy "
              f"{tl['busy_us']:.1f}, idle {tl['idle_us']:.1f}")
        for gap, before, after in tl["gaps"]:
            print(f"  gap {gap:.1f} µs after {before} before {after}")
        for name, (calls, us) in tl["syncs"].items():
            print(f"  host {name}: {calls:g} a call, {us:.1f} µs")
    total = sum(k[2] for k in prof)
    print(f"\nkernels of {row} / {impl}: {total:.1f} µs of GPU time per call, "
          f"{sum(k[1] for k in prof):.0f} launches")
    print("| µs per call | share | launches | registers, threads x blocks: blocks an SM, waves "
          "| kernel |\n| --- | --- | --- | --- | --- |")
    for name, calls, us in prof[:25]:
        sh = shapes.get(name)
        launch = f"{sh[0]}, {sh[1]} x {sh[2]}: {sh[3]}, {sh[4]:.2f}" if sh else ""
        print(f"| {us:.1f} | {us / total:.1%} | {calls:g} | {launch} | {name[:110]} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated: " + ",".join(ROWS))
    # ignis.at (max-autotune) is opt-in: it times every row kernel's variants.
    ap.add_argument("--impls", default=",".join(i for i in IMPLS if i != "ignis.at"),
                    help="comma-separated: " + ",".join(IMPLS))
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--json", default=None, help="write the results to this file")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    ap.add_argument("--gpt", default=None, metavar="LAYERS,BATCH",
                    help="the GPT rows' depth and batch (GPT-2-small's width and vocabulary)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per child process")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="profile N calls of each cell by kernel (needs torch with CUDA)")
    ap.add_argument("--config", action="append", default=[], metavar="NAME=VALUE",
                    help="set an ignis._inductor.config knob in ignis's children "
                         "(repeatable; e.g. cuda.online_softmax=False): A/B runs of one knob")
    ap.add_argument("--trace", default=None, metavar="DIR",
                    help="with --profile: keep each cell's Chrome trace in DIR")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--impl", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--save", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    CONFIG.extend(args.config)
    if args.gpt:
        global GPT_OVERRIDE
        GPT_OVERRIDE = tuple(int(v) for v in args.gpt.split(","))
    if args.child == "peaks":
        return peaks_child(args)
    if args.child:
        return run_child(args)
    rows = [r for r in args.rows.split(",") if r]
    bad = [r for r in rows if r not in ROWS]
    if bad:
        ap.error(f"unknown rows {bad}; choose from {ROWS}")
    impls = [i for i in args.impls.split(",") if i]
    bad = [i for i in impls if i not in IMPLS]
    if bad:
        ap.error(f"unknown impls {bad}; choose from {IMPLS}")
    work = pathlib.Path(tempfile.mkdtemp(prefix="ignis_bench_gpu_"))
    t0 = time.time()
    try:
        results = run_all(args, rows, impls, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["wall_s"] = time.time() - t0
    log(f"done in {results['wall_s']:.0f} s")
    report(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
        log(f"wrote {args.json}")
    if any(not ch["ok"] for r in results["rows"].values() for ch in r["checks"].values()):
        sys.exit(1)


if __name__ == "__main__":
    main()

"""The compiler benchmark: ignis.compile(backend="inductor") beside ignis eager,
PyTorch eager and torch.compile (Inductor, C++ backend, default mode), side by
side in one run (CPU).

Every implementation of every row runs in its own child process, so that code
caches, compiled-graph caches and thread pools never carry over. Rows:

  pointwise   (relu(x + b) * s + tanh(x)).sigmoid(), x 4096x4096 float32,
              b and s broadcast row vectors of 4096
  softmax     softmax(x, -1), 4096x4096 float32
  layer_norm  layer_norm(x, (1024,), weight, bias), 8192x1024 float32
  mlp         Linear(1024,4096) + GELU + Linear(4096,1024) on 1024x1024, no_grad
  tiny        50 pointwise ops on 1024 elements (us per call: overhead)
  gpt_fwd     the example GPT's forward with loss (examples/gpt.py, bench/train.py's
              "small" config), no_grad
  gpt_train   one training step of it: zero_grad, forward, loss, backward, AdamW
              step (the model compiled, the optimizer eager)
  masked      a masked loss, (d[keep] ** 2).mean() + pred.abs().mean() with d = pred - tgt,
              8192x1024 float32, keep a random half: torch's Dynamo breaks the graph at
              the boolean index (two graphs); ignis keeps one graph with an unbacked
              size (docs/dynamic_shapes.md "Data-dependent sizes"). The mask is the
              same every call (its count recurs); graphs compiled are printed
  gpt_lengths 20 calls of gpt_fwd's forward, each with another sequence length
              (LENGTHS): the total ms of the 20, compiles included (each in a fresh
              process: cold and warm are the same 20 calls on a fresh / warm cache),
              and the graphs each compiler made (torch._dynamo.utils.counters'
              unique_graphs, in both libraries); default settings (automatic dynamic)
  gpt_generate greedy generation of GENERATE tokens from a one-token prompt, nanoGPT's
              loop: each step runs the forward on idx[:, -block_size:] of the growing
              sequence (lengths 1..64, then [1, 64] views with a growing stride) and
              appends the argmax of the last position; the total ms, compiles included,
              and the graphs compiled; the check compares the last step's logits

Times are medians after warm-up. A triad (a = b + s*c on 512 MiB arrays, torch
eager) gives the machine's memory bandwidth; memory-bound rows print the bytes
they must move (inputs read once, outputs written once) per second and as a
fraction of it (above 1 means the data stayed in a cache). Compiling
implementations also run cold (a fresh IGNIS_CACHE_DIR / TORCHINDUCTOR_CACHE_DIR
in a fresh process) and warm (a new process on that now-warm directory); the
compile column is the first call's time, start to end, which includes
compilation. Outputs are checked once: ignis compiled against ignis eager,
torch.compile against torch eager, ignis eager against torch eager (the same
inputs and weights, from NumPy). Children run with ignis's own default OpenMP
spin for both libraries: GOMP_SPINCOUNT=1000 on a machine of at most 4 CPUs,
libgomp's default on more, unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set.

    python bench/compiled.py [--threads N] [--rows a,b] [--quick] [--json PATH] [--size-generic]

--size-generic adds ignis_compiled_generic: ignis.compile with size-generic code
(IGNIS_SIZE_GENERIC=1: kernels read their sizes from a parameter array; docs/compiler.md,
"Size-generic code"), printed beside ignis_compiled (the static code) with their ratio.

Progress goes to stderr; torch.compile's cold compiles take a while.
"""
import argparse
import importlib
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time

T_START = time.time()  # the child's process start, as near as Python gets

import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "bench"))

ROWS = ["pointwise", "softmax", "layer_norm", "mlp", "tiny", "gpt_fwd", "gpt_train", "masked",
        "gpt_lengths", "gpt_generate", "standardize"]
# gpt_lengths: sequence lengths of its 20 calls (distinct, up to the block size 64)
LENGTHS = [64, 56, 48, 40, 32, 24, 16, 8, 60, 52, 44, 36, 28, 20, 12, 62, 50, 38, 26, 14]
GENERATE = 150  # gpt_generate: tokens generated
IMPLS = ["ignis_compiled", "ignis_eager", "torch_eager", "torch_compile"]
GENERIC = "ignis_compiled_generic"  # --size-generic: IGNIS_SIZE_GENERIC=1
COMPILING = {"ignis_compiled", GENERIC, "torch_compile"}
# reference to check each implementation against (the first call's outputs)
CHECKS = [("ignis_compiled", "ignis_eager"), (GENERIC, "ignis_eager"),
          ("torch_compile", "torch_eager"),
          ("ignis_eager", "torch_eager")]
TOL = {"gpt_train": (1e-3, 1e-4), "gpt_fwd": (1e-4, 1e-5), "gpt_lengths": (1e-4, 1e-5),
       "gpt_generate": (1e-4, 1e-5),
       "mlp": (1e-4, 1e-4)}


# ---------------------------------------------------------------- child side

def load_lib(impl):
    if impl.startswith("ignis"):
        sys.path.insert(0, str(ROOT / "tests" / "python"))
        import _checkout  # noqa: F401  (this checkout's build, when it has one)
        import ignis as lib
    else:
        import torch as lib
    return lib


def sizes(quick):
    if quick:
        return dict(pw=1024, sm=1024, ln=(2048, 1024), mlp=(256, 1024, 4096), st=(1 << 16, 16))
    return dict(pw=4096, sm=4096, ln=(8192, 1024), mlp=(1024, 1024, 4096), st=(1 << 20, 16))


def set_params(lib, model, seed=1):
    """The same weights in both libraries: drawn by NumPy, in named_parameters order."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for name, p in model.named_parameters():
            shape = tuple(p.shape)
            if len(shape) >= 2:
                a = rng.standard_normal(shape) / np.sqrt(shape[-1])
            elif name.endswith("weight"):
                a = 1.0 + 0.1 * rng.standard_normal(shape)
            else:
                a = 0.1 * rng.standard_normal(shape)
            p.copy_(lib.from_numpy(a.astype(np.float32)))


def make_case(row, lib, quick):
    """Returns (fn, args, grad_mode): fn(*args) is one call of the row; it
    returns a tensor or a tuple of tensors (what is checked)."""
    S = sizes(quick)
    rng = np.random.default_rng(0)
    t = lambda a: lib.from_numpy(np.ascontiguousarray(a, dtype=np.float32))  # noqa: E731
    F = lib.nn.functional
    if row == "pointwise":
        n = S["pw"]
        args = (t(rng.standard_normal((n, n))), t(rng.standard_normal(n)),
                t(rng.standard_normal(n)))
        return (lambda x, b, s: (lib.relu(x + b) * s + lib.tanh(x)).sigmoid()), args, False
    if row == "softmax":
        n = S["sm"]
        return (lambda x: lib.softmax(x, -1)), (t(rng.standard_normal((n, n))),), False
    if row == "layer_norm":
        m, n = S["ln"]
        args = (t(rng.standard_normal((m, n))), t(1 + 0.1 * rng.standard_normal(n)),
                t(0.1 * rng.standard_normal(n)))
        return (lambda x, w, b: F.layer_norm(x, (n,), w, b)), args, False
    if row == "mlp":
        m, d, h = S["mlp"]
        nn = lib.nn
        model = nn.Sequential(nn.Linear(d, h), nn.GELU(), nn.Linear(h, d))
        set_params(lib, model)
        return model, (t(rng.standard_normal((m, d))),), False
    if row == "tiny":
        ops = [lambda x: x + 0.5, lambda x: x * 0.9, lib.tanh, lib.sigmoid, lambda x: x - 0.25]

        def tiny(x):
            for i in range(50):
                x = ops[i % 5](x)
            return x
        return tiny, (t(rng.standard_normal(1024)),), False
    if row == "standardize":
        # a feature standardization over few columns (BatchNorm1d's
        # forward statistics): column reductions over many rows, then a pass
        m, n = S["st"]

        def standardize(x):
            mean = x.mean(0, keepdim=True)
            return (x - mean) / ((x - mean) ** 2).mean(0, keepdim=True).add(1e-5).sqrt()
        return standardize, (t(3 * rng.standard_normal((m, n)) + 1),), False
    if row == "masked":
        m, n = S["ln"]
        args = (t(rng.standard_normal((m, n))), t(rng.standard_normal((m, n))),
                lib.from_numpy(rng.random((m, n)) < 0.5))

        def masked(pred, tgt, keep):
            d = (pred - tgt)[keep]
            return (d * d).mean() + pred.abs().mean()
        return masked, args, False
    if row in ("gpt_fwd", "gpt_train"):
        from gpt import build_gpt, configure_optimizer
        from train import SIZES
        cfg, batch = SIZES["small"]
        if quick:
            batch = 4
        lib.manual_seed(0)
        model = build_gpt(lib)(cfg)
        set_params(lib, model)
        idx = lib.from_numpy(rng.integers(0, cfg.vocab_size, size=(batch, cfg.block_size)))
        tgt = lib.from_numpy(rng.integers(0, cfg.vocab_size, size=(batch, cfg.block_size)))
        if row == "gpt_fwd":
            return model, (idx, tgt), False
        return model, (idx, tgt, configure_optimizer(lib, model)), True
    raise ValueError(row)


def bench(fn, min_time, warmup=3, min_reps=5):
    for _ in range(warmup):
        fn()
    times, total = [], 0.0
    while total < min_time or len(times) < min_reps:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        times.append(dt)
        total += dt
    return float(np.median(times)), len(times)


def bench_calls(fn, calls=2000, rounds=7):
    """Per-call time of a cheap call: median over rounds of batched calls."""
    for _ in range(100):
        fn()
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter() - t0) / calls)
    return float(np.median(per)), rounds * calls


def to_numpy(x):
    if isinstance(x, (tuple, list)):
        return [to_numpy(v) for v in x if v is not None]
    x = x.detach()
    return x.numpy().copy()


def run_child(args):
    out = {"row": args.child, "impl": args.impl, "t_start": T_START}
    t_imp = time.perf_counter()
    lib = load_lib(args.impl)
    out["import_s"] = time.perf_counter() - t_imp
    if args.threads:
        lib.set_num_threads(args.threads)
    out["threads"] = lib.get_num_threads()
    out["version"] = lib.__version__
    if args.child == "gpt_lengths":
        return lengths_child(args, lib, out)
    if args.child == "gpt_generate":
        return generate_child(args, lib, out)
    fn, fargs, train = make_case(args.child, lib, args.quick)
    compiling = "compiled" in args.impl or args.impl.endswith("compile")
    if compiling:
        fn = lib.compile(fn, backend="inductor")
        counters = importlib.import_module(lib.__name__ + "._dynamo.utils").counters
        graphs_before = counters["stats"]["unique_graphs"]
    if train:
        model, idx, tgt, opt = fn, fargs[0], fargs[1], fargs[2]
        named = dict(getattr(model, "_orig_mod", model).named_parameters())
        probes = [named["transformer.wte.weight"], named["transformer.h.0.attn.c_attn.weight"]]

        def call():
            opt.zero_grad(set_to_none=True)
            _, loss = model(idx, tgt)
            loss.backward()
            opt.step()
            return loss

        def first():
            loss = call()
            return (loss, *[p.grad for p in probes])
    else:
        def call():
            return fn(*fargs)
        first = call
    with lib.set_grad_enabled(train):
        t0 = time.perf_counter()
        res = first()
        out["first_call_s"] = time.perf_counter() - t0
        out["t_first_done"] = time.time()
        np.savez(args.save, *(to_numpy(res) if isinstance(res, (tuple, list))
                              else [to_numpy(res)]))
        if not args.first_only:
            if args.impl.startswith("ignis"):
                # a cold cache builds a precompiled header in the background
                # after the first compile: time the calls without it
                # (on 2 cores it doubled the compiled layer_norm's time)
                import ignis._inductor
                ignis._inductor.wait_for_background_compiles()
            if args.child == "tiny":
                out["time_s"], out["reps"] = bench_calls(call, 200 if args.quick else 2000)
            else:
                out["time_s"], out["reps"] = bench(call, 0.1 if args.quick else 0.6)
    if args.impl in ("ignis_compiled", GENERIC):
        from ignis._inductor import metrics
        out["kernels"] = metrics.generated_kernel_count
    if compiling:
        out["graphs"] = counters["stats"]["unique_graphs"] - graphs_before
    print("RESULT " + json.dumps(out))


def lengths_child(args, lib, out):
    """gpt_lengths: the 20 calls, timed together from the first (compiles
    included); saves the 20 losses for the check."""
    from gpt import build_gpt
    from train import SIZES
    cfg, batch = SIZES["small"]
    if args.quick:
        batch = 4
    lib.manual_seed(0)
    model = build_gpt(lib)(cfg)
    set_params(lib, model)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, cfg.vocab_size, size=(batch, cfg.block_size))
    tgt = rng.integers(0, cfg.vocab_size, size=(batch, cfg.block_size))
    calls = [(lib.from_numpy(idx[:, :n].copy()), lib.from_numpy(tgt[:, :n].copy()))
             for n in LENGTHS]
    compiling = args.impl in COMPILING
    fn = lib.compile(model, backend="inductor") if compiling else model
    if compiling:
        counters = importlib.import_module(lib.__name__ + "._dynamo.utils").counters
        graphs_before = counters["stats"]["unique_graphs"]
    losses = []
    with lib.no_grad():
        t0 = time.perf_counter()
        for x, y in calls:
            losses.append(fn(x, y)[1].item())
        total = time.perf_counter() - t0
    out["t_first_done"] = time.time()
    out["first_call_s"] = total
    if not args.first_only:
        out["time_s"], out["reps"] = total, len(LENGTHS)
    if compiling:
        out["graphs"] = counters["stats"]["unique_graphs"] - graphs_before
    np.savez(args.save, np.array(losses))
    print("RESULT " + json.dumps(out), flush=True)


def generate_child(args, lib, out):
    """gpt_generate: GENERATE greedy steps timed together from the first
    (compiles included); saves the last step's logits for the check."""
    from gpt import build_gpt
    from train import SIZES
    cfg, _ = SIZES["small"]
    lib.manual_seed(0)
    model = build_gpt(lib)(cfg).eval()
    set_params(lib, model)
    compiling = args.impl in COMPILING
    fn = lib.compile(model, backend="inductor") if compiling else model
    if compiling:
        counters = importlib.import_module(lib.__name__ + "._dynamo.utils").counters
        graphs_before = counters["stats"]["unique_graphs"]
    idx = lib.zeros(1, 1, dtype=lib.long)
    steps = 20 if args.quick else GENERATE
    with lib.no_grad():
        t0 = time.perf_counter()
        for _ in range(steps):
            logits, _ = fn(idx[:, -cfg.block_size:])
            idx = lib.cat([idx, logits[:, -1, :].argmax(-1, keepdim=True)], 1)
        total = time.perf_counter() - t0
    out["t_first_done"] = time.time()
    out["first_call_s"] = total
    if not args.first_only:
        out["time_s"], out["reps"] = total, steps
    if compiling:
        out["graphs"] = counters["stats"]["unique_graphs"] - graphs_before
    np.savez(args.save, to_numpy(logits[:, -1, :]))
    print("RESULT " + json.dumps(out), flush=True)


def triad_child(args):
    """a = b + s*c over arrays well past the caches; GB/s = 3 arrays / time."""
    n = (32 if args.quick else 128) * 1024 * 1024  # floats per array
    try:
        import torch
        if args.threads:
            torch.set_num_threads(args.threads)
        b, c, a = torch.ones(n), torch.full((n,), 2.0), torch.empty(n)
        fn, how, passes = (lambda: torch.add(b, c, alpha=3.0, out=a)), "torch.add(out=)", 3
    except ImportError:
        b, c, a = np.ones(n, np.float32), np.full(n, 2.0, np.float32), np.empty(n, np.float32)
        fn, how, passes = (lambda: (np.multiply(c, 3.0, out=a), np.add(a, b, out=a))), \
            "numpy (two passes)", 5
    t, _ = bench(fn, 1.0, warmup=2)
    print("RESULT " + json.dumps({"bw": passes * 4 * n / t, "how": how,
                                  "array_mib": 4 * n / 2 ** 20}))


# --------------------------------------------------------------- parent side

def log(msg):
    print(f"[compiled.py {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def short_spin_wanted(env):
    """ignis/__init__.py's rule (without importing ignis in the parent)."""
    if "OMP_WAIT_POLICY" in env or "GOMP_SPINCOUNT" in env:
        return False
    try:
        return len(os.sched_getaffinity(0)) <= 4
    except (AttributeError, OSError):
        return (os.cpu_count() or 1) <= 4


def spawn(extra, args, env_extra, timeout):
    env = dict(os.environ)
    env.update(env_extra)
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
    if short_spin_wanted(env):
        # ignis/__init__.py's default (docs/benchmarks.md, "Threads under load"), for both
        # libraries: on a few cores with libgomp's default spin, torch's children slow down
        # up to 20x whenever other processes compete for the cores. On more cores both run
        # with libgomp's default.
        env["GOMP_SPINCOUNT"] = "1000"
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve())] + extra
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if args.quick:
        cmd.append("--quick")
    t_spawn = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        tail = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        err = tail[-1] if tail else f"exit code {r.returncode}"
        return {"error": err, "stderr": "\n".join(tail[-25:])}
    res = json.loads(lines[-1][len("RESULT "):])
    res["t_spawn"] = t_spawn
    if "t_first_done" in res:
        res["to_first_call_s"] = res["t_first_done"] - t_spawn
    return res


def moved_bytes(row, quick):
    S = sizes(quick)
    if row == "pointwise":
        return 4 * (2 * S["pw"] ** 2 + 2 * S["pw"])
    if row == "softmax":
        return 4 * 2 * S["sm"] ** 2
    if row == "layer_norm":
        m, n = S["ln"]
        return 4 * (2 * m * n + 2 * n)
    if row == "masked":
        m, n = S["ln"]
        return 4 * 2 * m * n + m * n  # pred, tgt and the bool mask, read once
    if row == "standardize":
        m, n = S["st"]
        return 4 * 2 * m * n
    return None


def flops(row, quick):
    if row == "mlp":
        m, d, h = sizes(quick)["mlp"]
        return 2 * m * d * h * 2
    return None


def check(row, a_path, b_path):
    rtol, atol = TOL.get(row, (1e-4, 1e-5))
    a, b = np.load(a_path), np.load(b_path)
    if len(a.files) != len(b.files):
        return False, f"{len(a.files)} vs {len(b.files)} outputs"
    worst = 0.0
    ok = True
    for k in a.files:
        x, y = a[k], b[k]
        if x.shape != y.shape:
            return False, f"shape {x.shape} vs {y.shape}"
        worst = max(worst, float(np.max(np.abs(x.astype(np.float64) - y))) if x.size else 0.0)
        ok = ok and np.allclose(x, y, rtol=rtol, atol=atol)
    return ok, f"max |diff| {worst:.2e}"


def fmt_t(res, row):
    if res is None:
        return "-"
    if "error" in res:
        return "ERROR"
    t = res["time_s"]
    return f"{t * 1e6:.2f}" if row == "tiny" else f"{t * 1e3:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated: " + ",".join(ROWS))
    ap.add_argument("--impls", default=",".join(IMPLS), help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--size-generic", action="store_true",
                    help="also run ignis.compile with size-generic code (IGNIS_SIZE_GENERIC=1)")
    ap.add_argument("--json", default=None, help="write the results to this file")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per child process")
    ap.add_argument("--no-warm", action="store_true",
                    help="skip the warm-compile runs (torch.compile's take a minute a row)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--impl", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--save", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--first-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "triad":
        return triad_child(args)
    if args.child:
        return run_child(args)

    rows = [r for r in args.rows.split(",") if r]
    bad = [r for r in rows if r not in ROWS]
    if bad:
        ap.error(f"unknown rows {bad}; choose from {ROWS}")
    impls = [i for i in args.impls.split(",") if i]
    if args.size_generic and GENERIC not in impls:
        impls.insert(impls.index("ignis_compiled") + 1 if "ignis_compiled" in impls else 0,
                     GENERIC)
    work = pathlib.Path(tempfile.mkdtemp(prefix="ignis_bench_compiled_"))
    t_run = time.time()
    try:
        results = run_all(args, rows, impls, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["wall_s"] = time.time() - t_run
    results["loadavg_end"] = os.getloadavg()
    log(f"done in {results['wall_s']:.0f} s")
    report(results, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
        log(f"wrote {args.json}")


def run_all(args, rows, impls, work):
    log("triad (memory bandwidth)")
    triad = spawn(["--child", "triad"], args, {}, args.timeout)
    results = {"machine": machine(), "threads": args.threads, "quick": args.quick,
               "triad": triad, "rows": {}, "loadavg_start": os.getloadavg()}
    for row in rows:
        cells, checks = {}, []
        for impl in impls:
            cache = work / f"{row}-{impl}-cache"
            cache.mkdir()
            env = {"IGNIS_CACHE_DIR": str(cache / "ignis"),
                   "TORCHINDUCTOR_CACHE_DIR": str(cache / "torch"),
                   "IGNIS_SIZE_GENERIC": "1" if impl == GENERIC else "0"}
            if row in ("gpt_lengths", "gpt_generate") and impl != GENERIC:
                env.pop("IGNIS_SIZE_GENERIC")  # the default ("auto"), as users run it
            save = work / f"{row}-{impl}.npz"
            base = ["--child", row, "--impl", impl, "--save", str(save)]
            log(f"{row}: {impl}" + (" (cold compile)" if impl in COMPILING else ""))
            res = spawn(base, args, env, args.timeout)
            if "time_s" in res:
                log(f"{row}: {impl}: {res['time_s'] * 1e3:.3f} ms")
            if impl in COMPILING and "error" not in res:
                res["cold_s"] = res["first_call_s"]
            if impl in COMPILING and "error" not in res and not args.no_warm:
                log(f"{row}: {impl} (warm compile)")
                warm = spawn(base[:-1] + [str(work / "warm.npz"), "--first-only"], args, env,
                             args.timeout)
                if "error" in warm:
                    res["warm_error"] = warm["error"]
                else:
                    res["warm_s"] = warm["first_call_s"]
                    res["warm_to_first_call_s"] = warm["to_first_call_s"]
            if "error" in res:
                log(f"{row}: {impl} FAILED: {res['error']}")
            else:
                res["saved"] = str(save)
            cells[impl] = res
        for a, b in CHECKS:
            if a in cells and b in cells and "saved" in cells[a] and "saved" in cells[b]:
                try:
                    ok, detail = check(row, cells[a]["saved"], cells[b]["saved"])
                except Exception as e:  # noqa: BLE001
                    ok, detail = False, f"check failed: {e}"
                checks.append({"impl": a, "ref": b, "ok": bool(ok), "detail": detail})
                if not ok:
                    log(f"!!! MISMATCH {row}: {a} vs {b}: {detail}")
        for c in cells.values():
            c.pop("saved", None)
        results["rows"][row] = {"cells": cells, "checks": checks,
                                "bytes": moved_bytes(row, args.quick),
                                "flops": flops(row, args.quick)}
        if args.json:  # rows done so far survive a run that is cut short
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    return results


def machine():
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version()}


def ratio(a, b):
    if not a or not b or "time_s" not in a or "time_s" not in b:
        return "-"
    return f"{a['time_s'] / b['time_s']:.2f}"


def report(results, args):
    tri = results["triad"]
    bw = tri.get("bw")
    m = results["machine"]
    versions = {}
    for r in results["rows"].values():
        for impl, c in r["cells"].items():
            if "version" in c:
                versions[impl.split("_")[0]] = c["version"]
    print(f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, "
          f"ignis {versions.get('ignis', '?')}, torch {versions.get('torch', 'absent')}, "
          f"threads {args.threads or 'default'}{', QUICK sizes' if args.quick else ''}")
    print("load average (1 min) at start %.2f, at end %.2f (other processes on the machine "
          "distort the timings)" % (results["loadavg_start"][0], results["loadavg_end"][0]))
    if bw:
        print(f"triad bandwidth: {bw / 1e9:.1f} GB/s ({tri['how']}, "
              f"{tri['array_mib']:.0f} MiB arrays)")
    else:
        print(f"triad failed: {tri.get('error')}")
    print()
    print("times: ms (tiny: us per call), median after warm-up; ratios < 1: ignis compiled faster;"
          " compile: first call's seconds, cold / warm cache")
    print("| row | ignis compiled | ignis eager | torch eager | torch.compile | ig.c/t.c | "
          "ig.c/ig.e | ignis compiled GB/s (of triad) | compile ignis | compile torch |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    errors = []
    for row, r in results["rows"].items():
        c = r["cells"]
        ic, ie = c.get("ignis_compiled"), c.get("ignis_eager")
        te, tc = c.get("torch_eager"), c.get("torch_compile")
        roof = ""
        if ic and "time_s" in ic:
            if r["bytes"]:
                gbs = r["bytes"] / ic["time_s"]
                roof = f"{gbs / 1e9:.1f}" + (f" ({gbs / bw:.2f})" if bw else "")
            elif r["flops"]:
                roof = f"{r['flops'] / ic['time_s'] / 1e9:.0f} GFLOP/s"

        def comp(x):
            if not x or "cold_s" not in x:
                return "-"
            if "warm_s" not in x:   # --no-warm, or the warm child failed (printed below)
                return f"{x['cold_s']:.2f} / {'skipped' if args.no_warm else 'ERR'}"
            return f"{x['cold_s']:.2f} / {x['warm_s']:.2f}"
        print(f"| {row} | {fmt_t(ic, row)} | {fmt_t(ie, row)} | {fmt_t(te, row)} | "
              f"{fmt_t(tc, row)} | {ratio(ic, tc)} | {ratio(ic, ie)} | {roof} | {comp(ic)} | "
              f"{comp(tc)} |")
        for impl, x in c.items():
            if "error" in x:
                errors.append((row, impl, x))
            elif "warm_error" in x:
                errors.append((row, impl + " (warm)", {"error": x["warm_error"]}))
    print()
    if any(r["bytes"] for r in results["rows"].values()):
        print("bandwidth of every implementation on the memory-bound rows (GB/s, fraction of "
              "triad):")
    for row, r in results["rows"].items():
        if not r["bytes"]:
            continue
        parts = []
        for impl in IMPLS + [GENERIC]:
            x = r["cells"].get(impl)
            if x and "time_s" in x:
                g = r["bytes"] / x["time_s"]
                parts.append(f"{impl} {g / 1e9:.1f}" + (f" ({g / bw:.2f})" if bw else ""))
        print(f"  {row} ({r['bytes'] / 2 ** 20:.0f} MiB moved): " + ", ".join(parts))
    mlp = results["rows"].get("mlp", {}).get("cells", {})
    ttf = [f"{impl} cold {x['to_first_call_s']:.2f} s, warm {x['warm_to_first_call_s']:.2f} s"
           for impl, x in mlp.items() if "to_first_call_s" in x and "warm_to_first_call_s" in x]
    if ttf:
        print("mlp, process start to end of the first compiled call (imports, inputs, compile): "
              + "; ".join(ttf))
    gen = [f"{row} {fmt_t(r['cells'][GENERIC], row)} vs {fmt_t(r['cells']['ignis_compiled'], row)}"
           f" ({ratio(r['cells'][GENERIC], r['cells']['ignis_compiled'])})"
           for row, r in results["rows"].items()
           if GENERIC in r["cells"] and "ignis_compiled" in r["cells"]]
    if gen:
        print("size-generic code against static code (ignis compiled), ratio > 1: generic "
              "slower: " + "; ".join(gen))
    kern = [f"{row} {r['cells']['ignis_compiled']['kernels']}" for row, r in results["rows"].items()
            if "kernels" in r["cells"].get("ignis_compiled", {})]
    if kern:
        print("ignis generated kernels per row: " + ", ".join(kern))
    mk = results["rows"].get("masked")
    if mk:
        graphs = ", ".join(f"{impl} {c['graphs']}" for impl, c in mk["cells"].items()
                           if "graphs" in c)
        print(f"masked: graphs compiled: {graphs or '-'}")
    lens = results["rows"].get("gpt_lengths")
    if lens:
        graphs = ", ".join(f"{impl} {c['graphs']}" for impl, c in lens["cells"].items()
                           if "graphs" in c)
        print(f"gpt_lengths: {len(LENGTHS)} calls, sequence lengths {min(LENGTHS)}-"
              f"{max(LENGTHS)}; times are the 20 calls' total, compiles included; graphs "
              f"compiled: {graphs or '-'}")
    gen = results["rows"].get("gpt_generate")
    if gen:
        graphs = ", ".join(f"{impl} {c['graphs']}" for impl, c in gen["cells"].items()
                           if "graphs" in c)
        print(f"gpt_generate: {GENERATE} greedy steps; times are the steps' total, compiles "
              f"included; graphs compiled: {graphs or '-'}")
    print()
    bad = [(row, ch) for row, r in results["rows"].items() for ch in r["checks"] if not ch["ok"]]
    for row, r in results["rows"].items():
        line = ", ".join(f"{ch['impl']} vs {ch['ref']}: {'ok' if ch['ok'] else 'MISMATCH'} "
                         f"({ch['detail']})" for ch in r["checks"])
        print(f"check {row}: {line or 'nothing to compare'}")
    if bad:
        print("\n" + "!" * 72)
        for row, ch in bad:
            print(f"!!! MISMATCH in {row}: {ch['impl']} vs {ch['ref']}: {ch['detail']}")
        print("!" * 72)
    for row, impl, x in errors:
        print(f"\nERROR {row} / {impl}: {x['error']}")
        if x.get("stderr"):
            print("    " + x["stderr"].replace("\n", "\n    "))


if __name__ == "__main__":
    main()

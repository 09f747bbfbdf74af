"""Capture overheads, ignis.compile beside torch.compile (backend "eager" for both).

(a) per-call overhead on a cache hit: a compiled `f(x, y) = x * y + x` with two
    small tensors, minus calling `f` eagerly; the median over many timed
    batches of calls, in microseconds. This is the guard check plus dispatch
    plus running the backend's callable (the FX-generated forward).
(b) tracing time: the first call of a 12-layer GPT-style model's forward
    (examples/gpt.py, the same model code for both libraries) after
    ignis.compiler.reset() / torch._dynamo.reset(), minus one eager forward.

Each library runs in its own child process (two OpenMP runtimes in one
process distort each other's timings); without torch only ignis's columns
are printed.

    python bench/capture.py [--calls 2000] [--samples 31] [--trace-rounds 3] [--layers 12]
"""
import argparse
import json
import pathlib
import platform
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))


# Graphs the backend received in the last traced run: (graph count, nodes).
CAPTURED = []


def counting_eager(gm, example_inputs):
    """The "eager" backend, counting what it is given."""
    CAPTURED.append(len(list(gm.graph.nodes)))
    return gm.forward


def load(lib_name):
    if lib_name == "ignis":
        sys.path.insert(0, str(ROOT / "tests" / "python"))
        import _checkout  # noqa: F401  (this checkout's build, when it has one)
        import ignis as lib

        def compile_fn(fn):
            return lib.compile(fn, backend=counting_eager)
        reset = lib.compiler.reset
    else:
        import torch as lib

        def compile_fn(fn):
            return lib.compile(fn, backend=counting_eager, dynamic=False)
        reset = lib._dynamo.reset
    return lib, compile_fn, reset


def per_call_us(fn, args, calls, samples):
    """Median over `samples` batches of the time per call, in microseconds."""
    for _ in range(max(10, calls // 10)):
        fn(*args)
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


def call_overhead(lib, compile_fn, reset, calls, samples):
    def f(x, y):
        return x * y + x

    x, y = lib.ones(4), lib.ones(4)
    reset()
    cf = compile_fn(f)
    cf(x, y)  # compile
    # Interleave the two measurements so that drift affects both alike.
    eager, compiled = [], []
    for _ in range(3):
        eager.append(per_call_us(f, (x, y), calls, samples))
        compiled.append(per_call_us(cf, (x, y), calls, samples))
    e, c = min(eager), min(compiled)
    reset()
    return {"eager_us": e, "compiled_us": c, "overhead_us": c - e}


def trace_time(lib, compile_fn, reset, n_layer, rounds):
    from gpt import GPTConfig, build_gpt
    cfg = GPTConfig(vocab_size=96, block_size=32, n_layer=n_layer, n_head=4, n_embd=64)
    lib.manual_seed(0)
    model = build_gpt(lib)(cfg).eval()
    idx = lib.zeros(1, 16, dtype=lib.long)
    with lib.no_grad():
        for _ in range(2):
            model(idx)
        t0 = time.perf_counter()
        model(idx)
        eager_s = time.perf_counter() - t0
        firsts = []
        for _ in range(rounds):
            reset()
            CAPTURED.clear()
            cm = compile_fn(model)
            t0 = time.perf_counter()
            cm(idx)
            firsts.append(time.perf_counter() - t0)
            hits = []
            for _ in range(5):
                t0 = time.perf_counter()
                cm(idx)
                hits.append(time.perf_counter() - t0)
            hit_s = statistics.median(hits)
    reset()
    first = min(firsts)
    return {"first_call_s": first, "eager_forward_s": eager_s, "trace_s": first - eager_s,
            "cache_hit_forward_s": hit_s, "graphs": len(CAPTURED), "nodes": sum(CAPTURED)}


def run_one(args):
    lib, compile_fn, reset = load(args.child)
    out = {"lib": args.child,
           "call": call_overhead(lib, compile_fn, reset, args.calls, args.samples),
           "trace": trace_time(lib, compile_fn, reset, args.layers, args.trace_rounds)}
    print(json.dumps(out))


def child(lib_name, args):
    cmd = [sys.executable, __file__, "--child", lib_name, "--calls", str(args.calls),
           "--samples", str(args.samples), "--trace-rounds", str(args.trace_rounds),
           "--layers", str(args.layers)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{lib_name} run failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def have_torch():
    r = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)
    return r.returncode == 0


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "n":
        return v
    return f"{v:.3f}" if unit == "us" else f"{v * 1e3:.1f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--samples", type=int, default=31)
    p.add_argument("--trace-rounds", type=int, default=3)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--child", choices=["ignis", "torch"])
    args = p.parse_args()
    if args.child:
        return run_one(args)

    ig = child("ignis", args)
    th = child("torch", args) if have_torch() else None
    print(f"# capture benchmark: Python {platform.python_version()}, {platform.machine()}, "
          f"{args.layers}-layer GPT, backend='eager'")
    rows = [
        ("eager call f(x, y)", "us", ig["call"]["eager_us"], th and th["call"]["eager_us"]),
        ("compiled call, cache hit", "us", ig["call"]["compiled_us"],
         th and th["call"]["compiled_us"]),
        ("per-call overhead (compiled - eager)", "us", ig["call"]["overhead_us"],
         th and th["call"]["overhead_us"]),
        (f"{args.layers}-layer GPT first call", "ms", ig["trace"]["first_call_s"],
         th and th["trace"]["first_call_s"]),
        (f"{args.layers}-layer GPT eager forward", "ms", ig["trace"]["eager_forward_s"],
         th and th["trace"]["eager_forward_s"]),
        (f"{args.layers}-layer GPT tracing (first call - eager)", "ms", ig["trace"]["trace_s"],
         th and th["trace"]["trace_s"]),
        (f"{args.layers}-layer GPT compiled forward, cache hit", "ms",
         ig["trace"]["cache_hit_forward_s"], th and th["trace"]["cache_hit_forward_s"]),
    ]
    rows.append((f"{args.layers}-layer GPT graphs / nodes captured", "n",
                 f"{ig['trace']['graphs']} / {ig['trace']['nodes']}",
                 th and f"{th['trace']['graphs']} / {th['trace']['nodes']}"))
    print("| measure | unit | ignis | torch | ignis/torch |")
    print("| --- | --- | --- | --- | --- |")
    for name, unit, a, b in rows:
        ratio = f"{a / b:.2f}" if b and unit != "n" else "-"
        print(f"| {name} | {unit} | {fmt(a, unit)} | {fmt(b, unit)} | {ratio} |")
    if th:
        speedup = th["trace"]["trace_s"] / ig["trace"]["trace_s"] if ig["trace"]["trace_s"] > 0 \
            else float("inf")
        print(f"\ntracing speed-up over Dynamo: {speedup:.1f}x (goal: >= 5x); "
              f"ignis per-call overhead {ig['call']['overhead_us']:.3f} us (goal: < 1 us)")


if __name__ == "__main__":
    main()

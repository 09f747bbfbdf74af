"""The float math functions (kernels/cpu/vec_math.h) side by side: ignis eager,
ignis compiled (the function times 2, one fused kernel) and torch eager, on
the same 4M float32 values, each function timed in turn in one process.

    python bench/vec_math.py [--threads N] [--n ELEMENTS] [--only exp,pow,...]

Prints milliseconds (median of 9 calls after 3 of warm-up), ignis / torch,
and the bytes each call must move (one float read and one written per
element; two read for the binary functions) over its time, as a fraction of
a copy's (ignis's `copy_` into an existing buffer, measured first)."""
import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import _checkout  # noqa: E402,F401  (this checkout's build)
import compiled as C  # noqa: E402
import ignis  # noqa: E402
import ignis._inductor  # noqa: E402
import ignis.nn.functional as F  # noqa: E402

UNARY = ["exp", "expm1", "exp2", "log", "log1p", "sin", "cos", "tan", "sinh", "cosh", "tanh",
         "atan", "asin", "acos", "erf", "erfc", "sigmoid", "elu", "gelu"]
BINARY = ["pow", "atan2", "hypot"]


def fn_of(lib, name):
    if name in ("elu", "gelu"):
        return getattr(lib.nn.functional, name)
    return getattr(lib, name)


def inputs(lib, name, n):
    g = lib.Generator().manual_seed(0) if hasattr(lib, "Generator") else None
    x = lib.rand(n, generator=g) * 1.8 - 0.9  # inside asin's and acos's domain
    if name == "pow":
        return (x.abs() + 0.5, x * 4)
    if name in BINARY:
        return (x, lib.rand(n, generator=g) + 0.5)
    return (x * 3 if name not in ("asin", "acos") else x,)


def timed(call):
    """compiled.py's timer: the median of at least 9 calls after 3 of warm-up."""
    return C.bench(call, min_time=0.0, warmup=3, min_reps=9)[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    names = UNARY + BINARY
    if args.only:
        names = [s for s in args.only.split(",") if s]
    try:
        import torch
    except ImportError:
        torch = None
    if args.threads:
        ignis.set_num_threads(args.threads)
        if torch is not None:
            torch.set_num_threads(args.threads)
    src, dst = ignis.rand(args.n), ignis.empty(args.n)
    copy_s = timed(lambda: dst.copy_(src))
    copy_bw = 8 * args.n / copy_s
    print(f"{args.n} float32 elements, {ignis.get_num_threads()} threads; copy "
          f"{copy_bw / 1e9:.1f} GB/s; ms (fraction of the copy's bandwidth)")
    print("| function | ignis eager | ignis compiled (f(x) * 2) | torch eager | ignis / torch |")
    print("| --- | --- | --- | --- | --- |")
    for name in names:
        args_ig = inputs(ignis, name, args.n)
        f = fn_of(ignis, name)
        eager = timed(lambda: f(*args_ig))
        ignis.compiler.reset()  # (one code object for every function: its cache)
        cf = ignis.compile(lambda *a: f(*a) * 2, backend="inductor")
        cf(*args_ig)
        ignis._inductor.wait_for_background_compiles()
        comp = timed(lambda: cf(*args_ig))
        moved = 4 * args.n * (len(args_ig) + 1)
        frac = lambda s: f"{moved / s / copy_bw:.2f}"  # noqa: E731
        row = [f"{eager * 1e3:.2f} ({frac(eager)})", f"{comp * 1e3:.2f} ({frac(comp)})"]
        if torch is not None:
            args_t = tuple(torch.from_numpy(a.numpy()) for a in args_ig)
            tf = fn_of(torch, name)
            t = timed(lambda: tf(*args_t))
            row += [f"{t * 1e3:.2f}", f"{eager / t:.2f}"]
        else:
            row += ["-", "-"]
        print(f"| {name} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()

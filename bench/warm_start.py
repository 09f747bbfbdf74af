"""Where the first compiled training step of the GPT-2-sized model goes: a cProfile of that
step (bench/gpu.py's gpt_train case under ignis.compile), by cumulative and by own time.

    IGNIS_CACHE_DIR=$(mktemp -d) PYTHONPATH=python python3 bench/warm_start.py   # cold
    IGNIS_CACHE_DIR=<the same> PYTHONPATH=python python3 bench/warm_start.py    # warm
    PYTHONPATH=python python3 bench/warm_start.py --device cpu --gpt 12,1        # on the CPU
    ... bench/warm_start.py --warm-runtime   # an eager step first: the compiled graphs' part alone

Run it twice on one cache directory: the first process compiles (cold), the second finds the
graph cache and the kernels on disk (warm); the figures behind docs/benchmarks.md's warm-start
breakdown (run 8).
"""
import argparse
import cProfile
import io
import pathlib
import pstats
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gpu as G  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--gpt", default=None, metavar="LAYERS,BATCH",
                    help="the model's depth and batch (bench/gpu.py's --gpt)")
    ap.add_argument("--lines", type=int, default=40, help="rows of each table")
    ap.add_argument("--warm-runtime", action="store_true",
                    help="run one eager training step of the same model first (cuBLASLt's "
                         "first GEMMs, the allocator's first segments, the eager kernels), so "
                         "that the compiled first step's excess is the compiled graphs' own")
    args = ap.parse_args()
    if args.gpt:
        G.GPT_OVERRIDE = tuple(int(v) for v in args.gpt.split(","))
    lib = G.load_lib("ignis.compile")
    if args.warm_runtime:
        eager, _, _, _, _ = G.make_case("gpt_train", lib, False, args.device, lambda f: f)
        t0 = time.perf_counter()
        eager()
        G.Timer(lib, args.device).sync()
        print(f"eager step first (the runtime's warm-up) {time.perf_counter() - t0:.3f} s")
        del eager
    call, _, _, _, _ = G.make_case("gpt_train", lib, False, args.device,
                                   G.wrapper(lib, "ignis.compile"))
    timer = G.Timer(lib, args.device)
    timer.sync()
    profile = cProfile.Profile()
    t0 = time.perf_counter()
    profile.enable()
    call()
    timer.sync()
    profile.disable()
    t1 = time.perf_counter()
    call()
    timer.sync()
    t2 = time.perf_counter()
    print(f"first compiled step {t1 - t0:.3f} s, second {t2 - t1:.3f} s")
    if args.device == "cuda":
        # Modules loaded and their cuModuleLoadData time (the graphs' and eager kernels').
        print("kernel cache:", lib._C._cuda_kernel_cache_stats())
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(order).print_stats(args.lines)
        print(out.getvalue())


if __name__ == "__main__":
    main()

"""The host side of a CUDA call, without a GPU: bench/gpu.py's rows (default gpt_fwd, the
GPT-2-small forward in bfloat16 at 8x512) on tests/cuda_fake's driver with FAKE_CUDA_NO_WORK,
where no kernel and no GEMM does any work, so each call's time is what ignis spends on the
host: Python, guards, the compiled graph's steps, allocations, launches. On a GPU, a forward
whose host side takes longer than its kernels leaves the GPU waiting; this measures that side
where no GPU is at hand. Prints ms per call, launches (kernels and GEMMs) per call and us per
launch, then ignis.profiler's table of one call's host events and a cProfile of Python's part.

    FAKE_CUDA_NO_WORK=1 bash tests/cuda_fake/run.sh BUILD --python bench/host_overhead.py \\
        [--rows gpt_fwd] [--impl ignis.compile|ignis] [--calls 50]

(On a real GPU it runs too: then each call's time is the larger of the host's and the GPU's.)
"""
import argparse
import cProfile
import io
import os
import pathlib
import pstats
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gpu as G  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default="gpt_fwd")
    ap.add_argument("--impl", default="ignis.compile", choices=["ignis.compile", "ignis"])
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--lines", type=int, default=25, help="rows of each table")
    args = ap.parse_args()
    if not os.environ.get("FAKE_CUDA_NO_WORK"):
        print("note: FAKE_CUDA_NO_WORK is not set: kernels run, so times include them")
    lib = G.load_lib(args.impl)
    why = G.cuda_missing(lib, "cuda")
    if why:
        print("skipped:", why)
        return
    from ignis.profiler import ProfilerActivity, profile
    for row in args.rows.split(","):
        call, _, _, _, _ = G.make_case(row, lib, False, "cuda", G.wrapper(lib, args.impl))
        train = row.endswith("_train")
        with lib.set_grad_enabled(train):
            t0 = time.perf_counter()
            call()
            first = time.perf_counter() - t0
            for _ in range(3):
                call()
            times = []
            for _ in range(args.calls):
                t0 = time.perf_counter()
                call()
                times.append(time.perf_counter() - t0)
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                call()
            events = prof.key_averages()
            launches = sum(e.count for e in events if e.key.startswith("kernel_"))
            gemms = sum(e.count for e in events if e.key in ("aten::mm", "aten::addmm", "aten::bmm"))
            ms = statistics.median(times) * 1e3
            print(f"{row} ({args.impl}): {ms:.3f} ms a call on the host (first call {first:.2f} s); "
                  f"{launches} generated kernels, {gemms} GEMM calls: "
                  f"{ms * 1e3 / max(launches + gemms, 1):.1f} us per launch")
            print(events.table(sort_by="self_cpu_time_total", row_limit=args.lines))
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(10):
                call()
            pr.disable()
            out = io.StringIO()
            pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(args.lines)
            print(out.getvalue())


if __name__ == "__main__":
    main()

"""Phase times of the example GPT's training step, one implementation per process.

    python bench/step_phases.py IMPL THREADS [--profile]

IMPL: ignis_compiled, ignis_eager, torch_eager or torch_compile; the model, data and
optimizer are bench/compiled.py's gpt_train row. Times zero_grad(set_to_none=True),
the forward with its loss, the backward and the AdamW step separately over 60 steps
after 5 of warm-up (the compile), and prints each phase's median in ms with the
number and time of Python's garbage collections. --profile (ignis): a profiler
table of 10 more steps, ops and generated kernels by self CPU time. The OpenMP
spin is the library's default unless GOMP_SPINCOUNT or OMP_WAIT_POLICY is set.
"""
import gc
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import compiled as C  # noqa: E402

PHASES = ("zero", "fwd", "bwd", "step", "total")


def main():
    impl, threads = sys.argv[1], int(sys.argv[2])
    profile = "--profile" in sys.argv[3:]
    lib = C.load_lib(impl)
    lib.set_num_threads(threads)
    model, (idx, tgt, opt), _ = C.make_case("gpt_train", lib, False)
    if impl in ("ignis_compiled", "torch_compile"):
        model = lib.compile(model, backend="inductor")
    times = {k: [] for k in PHASES}
    gc_stats = {"n": 0, "s": 0.0, "t0": 0.0}

    def on_gc(phase, info):
        if phase == "start":
            gc_stats["t0"] = time.perf_counter()
        else:
            gc_stats["n"] += 1
            gc_stats["s"] += time.perf_counter() - gc_stats["t0"]

    def step(record=True):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        t1 = time.perf_counter()
        _, loss = model(idx, tgt)
        t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter()
        opt.step()
        t4 = time.perf_counter()
        if record:
            for k, a, b in zip(PHASES, (t0, t1, t2, t3, t0), (t1, t2, t3, t4, t4)):
                times[k].append((b - a) * 1e3)

    for _ in range(5):
        step(False)
    gc.callbacks.append(on_gc)
    for _ in range(60):
        step()
    gc.callbacks.remove(on_gc)
    print(impl, threads, " ".join(f"{k}={np.median(v):.3f}" for k, v in times.items()),
          f"ms (median of 60); gc: {gc_stats['n']} collections, "
          f"{gc_stats['s'] * 1e3 / 60:.3f} ms/step")
    if profile and impl.startswith("ignis"):
        from ignis.profiler import ProfilerActivity, profile as prof
        with prof(activities=[ProfilerActivity.CPU]) as p:
            for _ in range(10):
                step(False)
        print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=45))


if __name__ == "__main__":
    main()

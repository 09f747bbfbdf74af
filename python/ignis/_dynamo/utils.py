"""torch._dynamo.utils's counters and compile times.

`counters["stats"]["unique_graphs"]` counts the graphs capture has handed to
a backend (one per trace that produced a graph: a recompile adds one, a call
that hits a cached graph does not), so code that reads torch's counter to
count graphs runs unchanged.

`compile_times()` says where compiling went, as torch's does: each phase
with the seconds of each time it ran (or their sum, `aggregate=True`). The
phases are ignis's own: the backend's whole compile of a graph, AOT's trace
and partition, symbolic AOT graphs made and instantiated, a size compiled
for a dynamic graph, and the compiler's (inductor's) lowering, memory plan,
code generation, C++ compile or library load and graph cache, timed in C++
(`CompiledGraph.compile_phases`).
"""
import collections
import contextlib
import time

counters = collections.defaultdict(collections.Counter)

# phase -> [seconds, one entry each time it ran], in the order phases first ran
compilation_time_metrics = {}


def record_time(phase, seconds):
    compilation_time_metrics.setdefault(phase, []).append(seconds)


@contextlib.contextmanager
def dynamo_timed(phase):
    """Times the block as one run of `phase` (torch's name for its timer)."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        record_time(phase, time.perf_counter() - t0)


def compile_times(repr="str", aggregate=False):  # noqa: A002 - torch's argument name
    """The compile phases and their times: with repr="str" a table (each run's
    seconds, or their sum with aggregate=True); with repr="csv" a pair
    (phase names, their times as strings), as torch returns them."""
    def fmt(values, item):
        return item(sum(values)) if aggregate else ", ".join(item(v) for v in values)
    if repr == "str":
        rows = [(k, fmt(v, lambda x: f"{x:.4f}")) for k, v in compilation_time_metrics.items()]
        width = max([len("Function")] + [len(k) for k, _ in rows])
        lines = ["TorchDynamo compilation metrics:",
                 f"{'Function':<{width}}  Runtimes (s)",
                 f"{'-' * width}  {'-' * 14}"]
        lines += [f"{k:<{width}}  {v}" for k, v in rows]
        return "\n".join(lines)
    if repr == "csv":
        return (list(compilation_time_metrics),
                [fmt(v, lambda x: f"{x:.6f}") for v in compilation_time_metrics.values()])
    raise ValueError(f"compile_times: repr must be 'str' or 'csv', got {repr!r}")


def reset_compile_times():
    compilation_time_metrics.clear()

"""Per-step timing of compiled graphs (config.profile_bandwidth, torch's name).

With ``ignis._inductor.config.profile_bandwidth = True`` (or
``IGNIS_PROFILE_BANDWIDTH=1`` in the environment) every graph compiled from
then on times each of its steps (a generated kernel, an extern call) on every
call. ``report()`` gives the table, slowest steps first, with the bytes each
kernel must move and the bandwidth that reaches, and the process CPU time each
step used; it is printed to stderr when the process exits. The CPU column is
exact on one thread, where it is the step's cost even while other processes
load the machine; with several threads Linux adds the workers' time to the
process clock only at scheduler ticks, so short parallel steps under-count it.
"""
import atexit
import sys

_graphs = []  # (name, CompiledGraph)


def register(compiled, name):
    compiled.enable_profile(True)
    if not _graphs:
        atexit.register(_print_at_exit)
    _graphs.append((name, compiled))


def rows():
    """(graph, step, bytes, calls, seconds, cpu_seconds) for every profiled step."""
    out = []
    for name, compiled in _graphs:
        for label, nbytes, calls, seconds, cpu_seconds in compiled.profile():
            out.append((name, label, nbytes, calls, seconds, cpu_seconds))
    return out


def report(top=40):
    """The profile as a table: each step's share of the total time, its mean
    time per call and, for kernels, GB/s moved."""
    data = [r for r in rows() if r[3] > 0]
    if not data:
        return "profile_bandwidth: no compiled graph has run with profiling on\n"
    total = sum(r[4] for r in data)
    data.sort(key=lambda r: -r[4])
    lines = [f"profile_bandwidth: {len(_graphs)} graph(s), {total * 1e3:.3f} ms in steps",
             f"{'share':>6} {'us/call':>10} {'cpu us':>10} {'calls':>6} {'GB/s':>7}  "
             "graph / step"]
    for name, label, nbytes, calls, seconds, cpu_seconds in data[:top]:
        per = seconds / calls
        gbs = f"{nbytes / per / 1e9:7.1f}" if nbytes and per > 0 else f"{'':>7}"
        lines.append(f"{100 * seconds / total:5.1f}% {per * 1e6:10.1f} "
                     f"{cpu_seconds / calls * 1e6:10.1f} {calls:6d} {gbs}  {name} / {label}")
    if len(data) > top:
        rest = sum(r[4] for r in data[top:])
        lines.append(f"{100 * rest / total:5.1f}%  ... {len(data) - top} more steps")
    return "\n".join(lines) + "\n"


def reset():
    _graphs.clear()


def _print_at_exit():
    if _graphs:
        sys.stderr.write(report())

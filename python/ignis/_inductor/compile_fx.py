"""compile_fx: one AOT graph (inference, forward or backward) to a callable."""
import collections
import sys

from .. import _C
from .._dynamo.utils import record_time
from .._logging import _enabled
from . import config, metrics, step_profile

_cudagraph_count = 0
# The latest graphs compiled with CUDA graphs on, for tests and debugging
# (each one's .cudagraph_stats: records, replays, copies, fallback reason).
recent_cudagraph_graphs = collections.deque(maxlen=16)


def _enable_cudagraphs(compiled, gm):
    """mode="reduce-overhead": the compiled graph's later calls record and
    replay a CUDA graph (in C++: compiler/cudagraph_runner.h). A graph on
    the CPU, or one that cannot be recorded, runs plainly; the reason is
    logged under IGNIS_LOGS=cudagraphs (and warned once when it is not
    the CPU)."""
    global _cudagraph_count
    _cudagraph_count += 1
    backward = any(n.op == "placeholder" and n.name.startswith("tangents")
                   for n in gm.graph.nodes)
    compiled._enable_cudagraphs(f"{'backward ' if backward else ''}graph {_cudagraph_count}")
    recent_cudagraph_graphs.append(compiled)


class _InputFacts:
    """What compile_fx reads of an example input (its device and sizes),
    without holding the tensor."""

    def __init__(self, x):
        self.device = x.device
        self.shape = tuple(x.shape)


def compile_fx_later(example_inputs):
    """A function compiling a graph later as compile_fx would compile it
    now: under this moment's knobs (a mode or options= patch them only for
    the compile call) and size-generic state, with the example inputs'
    devices and sizes. aot_autograd compiles a backward graph with it when
    the first backward runs, once it knows which tangents arrive (Note
    [Tangents that do not arrive] in _functorch/aot_autograd.py)."""
    knobs = config.snapshot()
    symbolic = config.compiling_symbolic_capture()
    facts = [_InputFacts(x) if hasattr(x, "device") and hasattr(x, "shape") else x
             for x in example_inputs]

    def compile_later(gm):
        with config.symbolic_capture_compile(symbolic), config.patch(**knobs):
            return compile_fx(gm, facts)
    return compile_later


def compile_fx(gm, example_inputs):
    """Lowers gm's graph, generates and compiles its kernels (cached on disk)
    and returns a callable taking the graph's inputs and returning a tuple of
    its outputs. Ops the compiler does not lower run through the dispatcher."""
    constants = getattr(gm, "_aot_constants", None) or {}
    generic = config.resolve_size_generic(gm, example_inputs)
    # A dynamic graph's other sizes (AOT's traces at its hints): what its
    # size-generic kernels' parameters that never vary are learnt from (Note
    # [Parameters that vary with the sizes], src/ignis/compiler/size_params.h).
    others = getattr(gm, "_ignis_probes", None) if generic else None
    probes = (lambda: [m.graph for m in others()]) if others is not None else None
    compiled = _C._compile_graph(gm.graph, dict(constants), config.compiler_options(generic),
                                 probes)
    for phase, seconds in compiled.compile_phases:
        record_time("inductor " + phase, seconds)
    metrics.generated_kernel_count += compiled.kernel_count
    if compiled.kernel_count:
        if compiled.compiled_code:
            metrics.library_compiled += 1
        else:
            metrics.library_reused += 1
    if config.fx_graph_cache:
        if compiled.from_graph_cache:
            metrics.fxgraph_cache_hit += 1
        else:
            metrics.fxgraph_cache_miss += 1
    if config.triton.cudagraphs:
        _enable_cudagraphs(compiled, gm)
    if config.profile_bandwidth:
        step_profile.register(compiled, f"graph_{len(step_profile._graphs)}")
    report, measured = compiled.autotune
    if measured:  # a progress report, as torch's AUTOTUNE lines
        sys.stderr.write("".join(f"[autotune] {line}\n" for line in report.splitlines()))
    if _enabled("schedule"):
        sys.stderr.write("".join(f"[schedule] {line}\n" for line in
                                 compiled.schedule.splitlines()))
        if "(a GEMM template)" in compiled.schedule:
            # The GEMM is picked when the kernels run, in this process (IGNIS_GEMM), not
            # when they were compiled (the schedule may come from the graph cache).
            sys.stderr.write(f"[schedule] GEMM templates call {_C._gemm_choice()}\n")
    if _enabled("output_code"):
        sys.stderr.write(f"[output_code] ====== program ======\n{compiled.program}\n"
                         f"[output_code] ====== generated code ======\n"
                         f"{compiled.generated_code}\n")
    return compiled

"""The compiler's knobs (torch._inductor.config's names where they mean the
same thing). Set them before compiling: a graph is compiled with the values
of the moment, e.g.

    import ignis._inductor.config as config
    config.max_fusion_size = 16
    config.cpp.threads = 4
"""
import contextlib
import os
import sys
import threading

# A value with several users is recomputed in each when it has at most this
# many arithmetic ops (casts and views are free); a costlier one is stored
# once and read back.
realize_opcount_threshold = 8
# ... or when it reads more than this many distinct elements of memory.
realize_reads_threshold = 4
# ... and once scheduled, a value that several kernels would each recompute
# from two or more tensors is stored by the first and read by the others
# (docs/compiler.md, "Values recomputed across kernels").
realize_across_kernels = True
# A row kernel that reads what a sum over its rows reads (layer_norm's
# backward: the input gradient's row sums, the weight's column sums) folds
# the column sums too, per range of rows, into partials a small kernel then
# folds: the rows are read once (docs/compiler.md, "Column sums in a row
# kernel").
column_sums_in_rows = True
# ... in row kernels of this many rows or more (fewer: the column kernel's
# second read of the rows is cheap, and a range of rows is worth a partial).
column_sums_min_rows = 64
# Graph nodes one kernel may fuse.
max_fusion_size = 64
# mode="max-autotune" sets this: each kernel's variants (threads, reduction
# lanes) are timed on this machine once and the fastest kept (cached on disk).
max_autotune = False
# A new process that compiles a graph compiled before (same ignis build,
# toolchain and knobs) loads its program and kernels from the on-disk cache
# and skips lowering and code generation (IGNIS_FX_GRAPH_CACHE=0 turns it off).
fx_graph_cache = os.environ.get("IGNIS_FX_GRAPH_CACHE", "1") != "0"
# A C++ compile still running after this many seconds prints a progress line
# on stderr, and its time when it ends; None: never.
compile_progress_after = 2.0
# Time every step (kernel or extern call) of graphs compiled from now on, and
# print the slowest with their bandwidth when the process exits
# (ignis._inductor.step_profile.report()). Costs a clock read per step.
profile_bandwidth = os.environ.get("IGNIS_PROFILE_BANDWIDTH", "0") not in ("", "0")


def _size_generic_from_env():
    value = os.environ.get("IGNIS_SIZE_GENERIC", "auto").strip().lower()
    if value in ("", "auto"):
        return "auto"
    if value in ("1", "true", "on"):
        return True
    if value in ("0", "false", "off"):
        return False
    raise ValueError(f"IGNIS_SIZE_GENERIC={value!r}: expected auto, 1 or 0")


# Size-generic code: kernels read their sizes (extents, strides, numels) from
# a parameter array instead of literals, so that the C++ text of a graph is
# the same for many sizes and every size after the first loads the library
# compiled for the first (no C++ compile); each size keeps its own program.
# "auto": for graphs with symbolic inputs (a placeholder whose "val" is a
# symbolic int, or a tensor with symbolic sizes); True: always; False: never
# (docs/compiler.md, "Size-generic code"). IGNIS_SIZE_GENERIC=auto|1|0.
size_generic = _size_generic_from_env()


class cpp:  # noqa: N801  (torch's spelling: config.cpp.threads)
    """Knobs of the C++ code generator."""
    # Threads each kernel uses; -1: the runtime's (ignis.get_num_threads()).
    threads = -1
    # Elements of work below which a kernel runs on one thread.
    min_parallel_elements = 32768
    # Independent accumulators each row reduction folds into; 0: the CPU's
    # float vector width (16 with AVX-512, 8 with AVX2), the lanes eager's
    # vectorised reductions keep, so that compiled and eager round alike.
    reduction_lanes = 0
    # Row kernels (softmax, layer_norm): a later pass over the row, while it
    # computes, prefetches the next row's first-pass loads from memory
    # (docs/compiler.md, "Next-row prefetch").
    row_prefetch = True


class triton:  # noqa: N801  (torch's spelling: config.triton.cudagraphs)
    """Knobs of the GPU side (torch keeps them under config.triton)."""
    # mode="reduce-overhead" sets this: each compiled CUDA graph is recorded
    # into a CUDA graph on its second call and replayed from then on
    # (compiler/cudagraph_runner.h; docs/compiler.md "reduce-overhead").
    cudagraphs = False


class cuda:  # noqa: N801
    """Knobs of ignis's CUDA code generator that torch has no name for."""
    # A row kernel whose row fits in registers (softmax, layer_norm): the
    # vectors of 16 bytes each thread aims to hold; the block is the row's
    # vectors over this, rounded up to a warp (1024 threads at most).
    row_vectors_per_thread = 4
    # ... and whether the loads only a later pass reads (layer_norm's weight
    # and bias) are issued with the first pass's, so that their latency
    # overlaps the row's instead of following the reductions.
    row_prefetch = True
    # ... and whether a row kernel of many rounds of blocks (softmax over
    # 8192 x 8192) recomputes what its passes share (the exps) instead of
    # keeping it in registers, when that lets a multiprocessor run more rows
    # at once (docs/compiler.md, "Occupancy before kept values").
    row_occupancy = True
    # ... and whether a max pass and the sum-of-exps pass after it
    # (log_softmax, cross-entropy) fold into one streaming pass over rows too
    # long for a multiprocessor to hold more than one of (the loss over
    # GPT-2's 50304-wide logits; docs/compiler.md, "Online max and sum of
    # exps").
    online_softmax = True
    # ... and whether size-generic CUDA code holds a row in registers too,
    # planned for its power-of-two bucket (docs/compiler.md, "Size-generic
    # code"); off, generic rows stream.
    generic_rows = True
    # ... and whether such a row whose vectors fill its bucket exactly (a
    # power of two: 4096 floats) prints its chunks without the guards the
    # other rows of the bucket need -- another text for those lengths, at
    # static code's speed (the guards cost softmax and layer_norm 12% on the
    # H100: docs/benchmarks.md run 18).
    generic_exact_rows = True
    # ... and whether a row kernel whose grid fits one round of blocks asks
    # ptxas (__launch_bounds__'s minimum blocks) for the registers that let
    # every row run at once (docs/compiler.md, "One wave of short rows"; off
    # until a GPU run measures it against the spills it costs).
    row_one_wave = False
    # Products: relu(linear(...)) and gelu(linear(...), approximate='tanh')
    # run as one cuBLASLt call with its RELU / GELU epilogue instead of a
    # product and a pointwise kernel (docs/compiler.md, "Activation
    # epilogues"; the erf GELU has no such epilogue).
    activation_epilogues = True
    # ... and whether a resident row's chunk loops use the planned block size
    # as a literal with no guard on whole chunks, so that the compiler issues
    # a thread's loads together (docs/compiler.md, "Chunks the compiler can
    # hoist": softmax 0.72 -> 0.93 and layer_norm 0.88 -> 0.93 of the copy
    # bandwidth on the H100, docs/benchmarks.md run 12).
    row_hoist_chunks = True
    # ... and whether a column kernel (sums over rows: a bias's or a norm
    # weight's gradient) gives a thread a 16-byte vector of neighbouring
    # columns, one load a row, instead of one column (docs/compiler.md,
    # "Vectors of columns").
    column_vectors = True
    # ... and whether a pointwise kernel too small to give every
    # multiprocessor a block takes smaller blocks and narrower vectors until
    # it does (docs/compiler.md, "Small pointwise kernels": 50 ops on 1024
    # floats ran on one multiprocessor).
    spread_small = True
    # ... and whether a reduction of few long rows (a full sum or mean of a
    # large tensor) splits each row among blocks and folds their partials
    # (docs/compiler.md, "Split row reductions").
    split_rows = True
    # ... into ranges of at least this many elements (the fuzzer lowers it
    # so that its small random programs reach split kernels).
    split_rows_min_elements = 4096
    # ... and about how many blocks a split kernel launches in all.
    split_rows_blocks = 1024
    # 16-byte vectors a thread of a large pointwise kernel takes a step,
    # each a block's width from the last (1: one; more in flight a thread).
    pointwise_vectors_per_thread = 1
    # ... and whether pointwise and split row kernels load their vectors as
    # read once (ld.global.cs, evicted first from the caches).
    streaming_loads = False
    # ... and the fewest rows of its range a thread of a split column
    # kernel (a bias gradient) folds: fewer make more blocks of the few
    # columns' work (docs/compiler.md, "Split column reductions").
    column_split_rows_per_thread = 4
    # ... and the fewest elements a row needs for a row kernel to fold
    # column sums on the GPU (column_sums_in_rows): a block runs its range of
    # rows in turn, so a narrow row's one-warp block would leave the GPU
    # nearly idle. The fuzzer lowers it to reach those kernels.
    column_sums_min_row = 4096


def _is_symbolic(value):
    """Whether a placeholder's value (or example input) is symbolic: a
    symbolic int, or a tensor with a symbolic size."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return False
    if type(value).__name__ in ("SymInt", "SymFloat", "SymBool"):
        return True
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, type):
        try:
            return any(not isinstance(s, int) for s in shape)
        except TypeError:
            return False
    return False


def graph_is_symbolic(gm, example_inputs=None):
    """Whether a graph has symbolic inputs (size_generic="auto" generates
    size-generic code for it)."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        # The stored value only: reading meta["val"] would make fakes from
        # the concrete metadata.
        val = node._pymeta.get("val") if hasattr(node, "_pymeta") else None
        if isinstance(val, (tuple, list)):
            if any(_is_symbolic(v) for v in val):
                return True
        elif _is_symbolic(val):
            return True
    return any(_is_symbolic(v) for v in (example_inputs or ()))


# Set while a backend compiles one size of a graph that capture made with
# symbolic sizes (ignis._compile's per-size specialization: the graphs
# compile_fx sees have concrete sizes -- instantiated from symbolic AOT graphs
# or traced at this size -- but more sizes will come). Per thread: a
# compile running on another thread at the same moment (a program compiling
# from several threads) keeps its own answer.
_symbolic_capture = threading.local()


def compiling_symbolic_capture():
    """Whether this thread is compiling a size of a symbolic capture."""
    return getattr(_symbolic_capture, "on", False)


@contextlib.contextmanager
def symbolic_capture_compile(on=True):
    """Marks this thread's compiles inside the block as sizes of a symbolic
    capture (on=True) or not."""
    prev = compiling_symbolic_capture()
    _symbolic_capture.on = on
    try:
        yield
    finally:
        _symbolic_capture.on = prev


def resolve_size_generic(gm=None, example_inputs=None):
    """size_generic's answer for one graph: True or False. "auto": a graph
    with symbolic inputs, or a size of a graph capture made symbolic, on the
    CPU and on CUDA alike. (CUDA graphs stayed static until their generic
    code, with the parameters that do not vary printed as literals, ran a GPT
    forward at 20 lengths as fast as static code per length, H100: 249.35
    against 249.05 ms a pass, compiling in 6.4 s against 14.5: docs/
    benchmarks.md run 19.)"""
    value = size_generic
    if isinstance(value, str) and value.lower() == "auto":
        if gm is not None and graph_is_symbolic(gm, example_inputs):
            return True
        return compiling_symbolic_capture()
    if value in (True, False, 0, 1):
        return bool(value)
    raise ValueError(f"ignis._inductor.config.size_generic must be 'auto', True or False, "
                     f"got {value!r}")


def compiler_options(size_generic_graph=None):
    """The knobs the C++ compiler reads, as _C._compile_graph's options
    (size_generic as resolved for the graph, else the knob's own value
    with "auto" meaning no)."""
    if size_generic_graph is None:
        size_generic_graph = resolve_size_generic()
    return {
        "realize_opcount_threshold": int(realize_opcount_threshold),
        "realize_reads_threshold": int(realize_reads_threshold),
        "realize_across_kernels": int(bool(realize_across_kernels)),
        "column_sums_in_rows": int(bool(column_sums_in_rows)),
        "column_sums_min_rows": int(column_sums_min_rows),
        "max_fusion_size": int(max_fusion_size),
        "min_parallel_elements": int(cpp.min_parallel_elements),
        "threads": max(int(cpp.threads), 0),
        "reduction_lanes": int(cpp.reduction_lanes),
        "cuda_row_vectors": int(cuda.row_vectors_per_thread),
        "cuda_row_prefetch": int(bool(cuda.row_prefetch)),
        "cuda_row_occupancy": int(bool(cuda.row_occupancy)),
        "cuda_online_softmax": int(bool(cuda.online_softmax)),
        "cuda_generic_rows": int(bool(cuda.generic_rows)),
        "cuda_generic_exact_rows": int(bool(cuda.generic_exact_rows)),
        "cuda_row_one_wave": int(bool(cuda.row_one_wave)),
        "cuda_activation_epilogues": int(bool(cuda.activation_epilogues)),
        "cuda_row_hoist_chunks": int(bool(cuda.row_hoist_chunks)),
        "cuda_column_vectors": int(bool(cuda.column_vectors)),
        "cuda_spread_small": int(bool(cuda.spread_small)),
        "cuda_split_rows": int(bool(cuda.split_rows)),
        "cuda_column_sums_min_row": int(cuda.column_sums_min_row),
        "cuda_split_rows_min_elements": int(cuda.split_rows_min_elements),
        "cuda_split_rows_blocks": int(cuda.split_rows_blocks),
        "cuda_pointwise_vectors": int(cuda.pointwise_vectors_per_thread),
        "cuda_streaming_loads": int(bool(cuda.streaming_loads)),
        "cuda_column_split_rows": int(cuda.column_split_rows_per_thread),
        "cpu_row_prefetch": int(bool(cpp.row_prefetch)),
        "size_generic": int(bool(size_generic_graph)),
        "max_autotune": int(bool(max_autotune)),
        "fx_graph_cache": int(bool(fx_graph_cache)),
        "compile_progress_ms": -1 if compile_progress_after is None
        else int(compile_progress_after * 1000),
    }


# What each of torch.compile's modes sets (torch._inductor.list_mode_options).
# CUDA graphs (reduce-overhead) are the GPU compiler's; on the CPU the mode
# compiles as the default does.
_MODE_OPTIONS = {
    None: {},
    "default": {},
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune": {"max_autotune": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True},
}


# The knob groups, by the prefix their names take ("cpp.threads").
_GROUPS = {"cpp": cpp, "triton": triton, "cuda": cuda}


def _knob(name):
    """(owner, attribute) of a knob name ("max_fusion_size", "cpp.threads"), or
    None when there is no such knob."""
    group, dot, attr = name.partition(".")
    if dot and group in _GROUPS:
        owner = _GROUPS[group]
    else:
        owner, attr = sys.modules[__name__], name
    if attr.startswith("_") or not hasattr(owner, attr) or callable(getattr(owner, attr)) \
            or isinstance(getattr(owner, attr), type(sys)):
        return None
    return owner, attr


def overrides(mode=None, options=None):
    """The knobs torch.compile's `mode` or `options` ask for, checked."""
    if mode not in _MODE_OPTIONS:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(m for m in _MODE_OPTIONS if m)}")
    out = dict(_MODE_OPTIONS[mode])
    for name, value in (options or {}).items():
        if _knob(name) is None:
            raise RuntimeError(f"Unexpected optimization option {name}, known options are "
                               f"{', '.join(list_options())}")
        out[name] = value
    return out


def list_options():
    """The knob names options= accepts."""
    names = list(vars(sys.modules[__name__])) + [f"{g}.{n}" for g, owner in _GROUPS.items()
                                                 for n in vars(owner)]
    return sorted(n for n in names if _knob(n) is not None)


def snapshot():
    """Every knob's value now, by name: ``patch(**snapshot())`` brings them
    back (a compile deferred to later sees the settings of the call that
    asked for it, not those of the moment it runs)."""
    return {name: getattr(*_knob(name)) for name in list_options()}


def patch(**changes):
    """A context manager setting knobs for its body (torch's config.patch):
    ``with config.patch(max_fusion_size=4, **{"cpp.threads": 1}):``."""
    import contextlib

    @contextlib.contextmanager
    def _patch():
        saved = []
        try:
            for name, value in changes.items():
                knob = _knob(name)
                if knob is None:
                    raise AttributeError(f"ignis._inductor.config has no knob {name!r}")
                owner, attr = knob
                saved.append((owner, attr, getattr(owner, attr)))
                setattr(owner, attr, value)
            yield
        finally:
            for owner, attr, value in reversed(saved):
                setattr(owner, attr, value)
    return _patch()

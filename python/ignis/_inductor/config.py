"""The compiler's knobs (torch._inductor.config's names where they mean the
same thing). Set them before compiling: a graph is compiled with the values
of the moment, e.g.

    import ignis._inductor.config as config
    config.max_fusion_size = 16
    config.cpp.threads = 4
"""
import os
import sys

# A value with several users is recomputed in each when it has at most this
# many ops; a costlier one is stored once and read back.
realize_opcount_threshold = 8
# ... or when it reads more than this many distinct elements of memory.
realize_reads_threshold = 4
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


class cpp:  # noqa: N801  (torch's spelling: config.cpp.threads)
    """Knobs of the C++ code generator."""
    # Threads each kernel uses; -1: the runtime's (ignis.get_num_threads()).
    threads = -1
    # Elements of work below which a kernel runs on one thread.
    min_parallel_elements = 32768
    # Independent accumulators each row reduction folds into.
    reduction_lanes = 16


def compiler_options():
    """The knobs the C++ compiler reads, as _C._compile_graph's options."""
    return {
        "realize_opcount_threshold": int(realize_opcount_threshold),
        "realize_reads_threshold": int(realize_reads_threshold),
        "max_fusion_size": int(max_fusion_size),
        "min_parallel_elements": int(cpp.min_parallel_elements),
        "threads": max(int(cpp.threads), 0),
        "reduction_lanes": int(cpp.reduction_lanes),
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
    "reduce-overhead": {},
    "max-autotune": {"max_autotune": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True},
}


def _knob(name):
    """(owner, attribute) of a knob name ("max_fusion_size", "cpp.threads"), or
    None when there is no such knob."""
    owner, attr = (cpp, name[4:]) if name.startswith("cpp.") else (sys.modules[__name__], name)
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
    names = list(vars(sys.modules[__name__])) + [f"cpp.{n}" for n in vars(cpp)]
    return sorted(n for n in names if _knob(n) is not None)


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

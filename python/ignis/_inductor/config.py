"""The compiler's knobs (torch._inductor.config's names where they mean the
same thing). Set them before compiling: a graph is compiled with the values
of the moment, e.g.

    import ignis._inductor.config as config
    config.max_fusion_size = 16
    config.cpp.threads = 4
"""
import sys

# A value with several users is recomputed in each when it has at most this
# many ops; a costlier one is stored once and read back.
realize_opcount_threshold = 8
# Graph nodes one kernel may fuse.
max_fusion_size = 64


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
        "max_fusion_size": int(max_fusion_size),
        "min_parallel_elements": int(cpp.min_parallel_elements),
        "threads": max(int(cpp.threads), 0),
        "reduction_lanes": int(cpp.reduction_lanes),
    }


def patch(**changes):
    """A context manager setting knobs for its body (torch's config.patch):
    ``with config.patch(max_fusion_size=4, **{"cpp.threads": 1}):``."""
    import contextlib

    @contextlib.contextmanager
    def _patch():
        module = sys.modules[__name__]
        saved = []
        try:
            for name, value in changes.items():
                owner, attr = (cpp, name[4:]) if name.startswith("cpp.") else (module, name)
                if not hasattr(owner, attr):
                    raise AttributeError(f"ignis._inductor.config has no knob {name!r}")
                saved.append((owner, attr, getattr(owner, attr)))
                setattr(owner, attr, value)
            yield
        finally:
            for owner, attr, value in reversed(saved):
                setattr(owner, attr, value)
    return _patch()


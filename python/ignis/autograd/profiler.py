"""torch.autograd.profiler's surface: the legacy `profile` context manager
and `record_function`. Both sit on the C++ profiler (src/ignis/profiler,
Note [Profiling through the dispatcher]); ignis.profiler.profile is the
newer API over the same events."""

import functools
import threading
import time
import warnings

from .. import _C
from .profiler_util import EventList, FunctionEvent, FunctionEventAvg, _events_from_records

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]


def _warn_unrecorded(**options):
    """A warning naming the options given that record nothing here."""
    asked = sorted(k for k, v in options.items() if v)
    if asked:
        warnings.warn(f"ignis's profiler records CPU time per call only; {', '.join(asked)} "
                      "add nothing to the profile", stacklevel=3)


# Sessions running in this process: Python wrappers that only name ranges
# (optimizer steps) read this plain counter instead of calling into C++.
sessions = 0


class _Session:
    """One run of the C++ profiler on the calling thread."""

    def __init__(self, record_shapes):
        global sessions
        self.thread = threading.get_ident()
        self.start_us = time.time_ns() / 1e3
        _C._profiler_start(bool(record_shapes))
        sessions += 1

    def finish(self):
        global sessions
        sessions -= 1
        return EventList(_events_from_records(_C._profiler_stop(), self.thread),
                         trace_start_us=self.start_us)


class profile:  # noqa: N801  (torch's name)
    """with ignis.autograd.profiler.profile() as prof: ...; then
    prof.key_averages().table(sort_by="self_cpu_time_total").

    Profiles the thread that enters it: every op call, backward node,
    record_function range and compiled graph, with CPU time. use_cuda /
    use_device are accepted; CUDA work is timed on the CPU side."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.function_events = None
        self._session = None
        if enabled:
            _warn_unrecorded(with_flops=with_flops, profile_memory=profile_memory,
                             with_stack=with_stack, with_modules=with_modules)

    def __enter__(self):
        if self.enabled:
            if self._session is not None:
                raise RuntimeError("profiler context manager is not reentrant")
            self._session = _Session(self.record_shapes)
        return self

    def __exit__(self, *exc):
        if self._session is not None:
            self.function_events = self._session.finish()
            self._session = None
        return False

    def _check_finished(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        self._check_finished()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by=None, row_limit=100, **kwargs):
        self._check_finished()
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path):
        self._check_finished()
        return self.function_events.export_chrome_trace(path)

    def total_average(self):
        self._check_finished()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        self._check_finished()
        return self.function_events.self_cpu_time_total

    def __str__(self):
        self._check_finished()
        return str(self.function_events)


class record_function:  # noqa: N801  (torch's name)
    """A named range in the profile: `with record_function("attention"): ...`
    or as a decorator. Ops inside it nest under it. Does nothing (and costs
    one call) when no profiler runs on the thread."""

    def __init__(self, name, args=None):
        if not isinstance(name, str):
            raise TypeError(f"record_function expects a str name, got {type(name).__name__}")
        self.name = name
        self.args = args
        self._handle = -1

    def __enter__(self):
        self._handle = _C._profiler_begin_range(self.name)
        return self

    def __exit__(self, *exc):
        _C._profiler_end_range(self._handle)
        self._handle = -1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper

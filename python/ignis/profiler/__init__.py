"""torch.profiler's surface: `profile` (with schedule, on_trace_ready and
step()), `record_function`, `ProfilerActivity`, `ProfilerAction`, `schedule`
and `tensorboard_trace_handler`. Events come from the C++ profiler
(src/ignis/profiler; docs/profiler.md): CPU time of every op call, backward
node, record_function range and compiled graph/kernel, on the thread that
profiles."""

import enum
import os
import socket
import time

from ..autograd.profiler import _Session, _warn_unrecorded, record_function

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    PrivateUse1 = 4


def supported_activities():
    """CPU only: CUDA work is timed on the CPU side, as its launches."""
    return {ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """torch.profiler.schedule: after skip_first steps, cycles of `wait`
    idle steps, `warmup` steps and `active` recorded steps (the last one
    RECORD_AND_SAVE, which hands the profile to on_trace_ready), `repeat`
    cycles (0: forever)."""
    for name, v in (("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat),
                    ("skip_first", skip_first)):
        if not isinstance(v, int) or v < 0:
            raise ValueError(f"schedule({name}={v!r}): expected a non-negative int")
    if active < 1:
        raise ValueError("schedule(active=0): at least one step must be recorded")

    cycle = wait + warmup + active

    def action(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait  # the first cycle starts at its warmup
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


def _default_schedule(_step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False,
                              use_python_export=False):
    """on_trace_ready that writes each saved profile as a Chrome trace file
    `<worker>.<ms>.pt.trace.json` into dir_name (what TensorBoard's profiler
    plugin and Perfetto read)."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        path = os.path.join(dir_name, name)
        prof.export_chrome_trace(path)
        if use_gzip:
            import gzip
            import shutil
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)
    return handler


class profile:  # noqa: N801  (torch's name)
    """with ignis.profiler.profile(...) as prof: ...; or start()/stop(), and
    step() once per iteration when a schedule is given. Profiles the thread
    that starts it."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,  # noqa: A002
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None,
                 post_processing_timeout_s=None):
        acts = set(activities) if activities is not None else supported_activities()
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile(activities=...): expected ProfilerActivity values, "
                                f"got {a!r}")
        self.activities = acts
        self.schedule = schedule or _default_schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.step_num = 0
        self.current_action = None
        self.profiler = None  # the last finished profile (torch.autograd.profiler.profile-like)
        self._session = None
        self._events = None
        _warn_unrecorded(profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._enter(self.current_action)

    def stop(self):
        self._leave(self.current_action, stopping=True)
        self.current_action = None

    def step(self):
        """Marks the end of an iteration: moves to the schedule's next action."""
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if prev == ProfilerAction.RECORD_AND_SAVE or (prev in recording and
                                                      self.current_action not in recording):
            self._leave(prev, stopping=False)
        self._enter(self.current_action)

    def _enter(self, action):
        recording = action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if recording and self._session is None:
            self._session = _Session(self.record_shapes)

    def _leave(self, action, stopping):
        if self._session is None:
            return
        self._events = self._session.finish()
        self._session = None
        self.profiler = self
        if self.on_trace_ready is not None and (
                action == ProfilerAction.RECORD_AND_SAVE or stopping):
            self.on_trace_ready(self)

    def _finished(self):
        if self._events is None:
            raise RuntimeError("the profiler has recorded nothing yet (is it still running, "
                               "or did its schedule record no step?)")
        return self._events

    def events(self):
        return self._finished()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        return self._finished().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        return self._finished().export_chrome_trace(path)

    @property
    def function_events(self):
        return self._finished()

"""ignis.multiprocessing: Python's multiprocessing, as torch.multiprocessing
re-exports it. Tensors cross processes by pickling (by value: elements,
dtype, shape), not through shared memory, so the sharing strategy is a
name only."""
import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403

__all__ = list(getattr(_mp, "__all__", [])) + [
    "get_sharing_strategy", "set_sharing_strategy", "get_all_sharing_strategies", "spawn",
    "start_processes", "ProcessRaisedException"]

_STRATEGIES = {"file_system", "file_descriptor"}
_strategy = "file_descriptor"


def get_all_sharing_strategies():
    return set(_STRATEGIES)


def get_sharing_strategy():
    return _strategy


def set_sharing_strategy(new_strategy):
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}")
    _strategy = new_strategy


class ProcessRaisedException(Exception):
    """A spawned process exited with an exception (its traceback is the message)."""


def _wrap(fn, i, args, errors):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        import traceback
        errors.put((i, traceback.format_exc()))
        raise SystemExit(1)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Runs fn(i, *args) for i in range(nprocs), each in its own process; with
    join, waits and raises ProcessRaisedException if one of them failed."""
    ctx = _mp.get_context(start_method)
    errors = ctx.SimpleQueue()
    procs = [ctx.Process(target=_wrap, args=(fn, i, args, errors), daemon=daemon)
             for i in range(nprocs)]
    for p in procs:
        p.start()
    if not join:
        return procs
    for p in procs:
        p.join()
    if not errors.empty():
        i, tb = errors.get()
        raise ProcessRaisedException(f"\n\n-- Process {i} terminated with the following error:\n"
                                     f"{tb}")
    for i, p in enumerate(procs):
        if p.exitcode != 0:
            raise ProcessRaisedException(f"process {i} terminated with exit code {p.exitcode}")
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    return start_processes(fn, args, nprocs, join, daemon, start_method)

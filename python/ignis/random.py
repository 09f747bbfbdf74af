"""ignis.random: the global generator's functions under torch.random's names,
and fork_rng."""
import contextlib

from . import _C
from ._functions import get_rng_state, manual_seed, seed, set_rng_state  # noqa: F401

default_generator = _C.default_generator

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng",
           "default_generator"]


def initial_seed():
    return _C.initial_seed()


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Restores the global generator's state on exit (the CPU one; ignis's
    CUDA ops draw no random numbers of their own)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)

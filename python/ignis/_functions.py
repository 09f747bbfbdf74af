"""Python-level functions that are not operators of their own."""
from . import _C

__all__ = ["get_rng_state", "set_rng_state", "seed"]


def get_rng_state():
    return _C.get_rng_state()


def set_rng_state(state):
    _C.set_rng_state(*state)


def seed():
    import random
    s = random.getrandbits(63)
    _C.manual_seed(s)
    return s

"""Python-level functions that are not operators of their own."""
from . import _C

__all__ = ["manual_seed", "get_rng_state", "set_rng_state", "seed", "isclose", "allclose", "equal",
           "broadcast_tensors", "broadcast_shapes"]


def manual_seed(seed):
    """Seeds the global generator; returns it (ignis.default_generator)."""
    _C.manual_seed(seed)
    return _C.default_generator


def get_rng_state():
    """The global generator's state, a uint8 tensor (default_generator.get_state())."""
    return _C.default_generator.get_state()


def set_rng_state(state):
    """Restores get_rng_state()'s tensor (or the older (seed, offset) pair)."""
    if isinstance(state, tuple):
        _C.set_rng_state(*state)
    else:
        _C.default_generator.set_state(state)


def seed():
    import random
    s = random.getrandbits(63)
    _C.manual_seed(s)
    return s


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise |input - other| <= atol + rtol * |other| (torch.isclose)."""
    from . import _C as C  # noqa: F401
    import ignis
    if input.dtype != other.dtype:
        raise TypeError(f"isclose: input dtype {input.dtype} and other dtype {other.dtype} differ")
    if input.dtype == ignis.bool or not input.is_floating_point():
        return input == other
    a, b = input, other
    close = (a == b) | ((a - b).abs() <= atol + rtol * b.abs())
    if equal_nan:
        close = close | (a.isnan() & b.isnan())
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element is close (torch.allclose)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):
    """True when both tensors have the same size and elements (torch.equal)."""
    if input.shape != other.shape:
        return False
    return bool((input == other).all())


def broadcast_tensors(*tensors):
    """The tensors expanded to their common shape, as views (the op
    broadcast_tensors takes them as one list; torch's function takes them
    one by one)."""
    from . import _ops
    return tuple(_ops.get("broadcast_tensors")(list(tensors)))


def broadcast_shapes(*shapes):
    """The shape that tensors of these shapes broadcast to."""
    from . import _ops, empty
    views = [empty([s] if isinstance(s, int) else list(s), device="meta") for s in shapes]
    out = _ops.get("broadcast_tensors")(views)
    from ._size import Size
    return Size(out[0].shape) if out else Size([])

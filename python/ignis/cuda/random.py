"""Seeds of the CUDA generators (torch.cuda.manual_seed and friends).

The seeds are kept per device even with no GPU (as torch does, lazily), so
seeding code runs anywhere. GPU random kernels are not built yet: they will
draw from these seeds with the CPU's counter-based Philox.
"""
import random as _random

_seeds = {}
_DEFAULT_SEED = 67280421310721  # torch's default_rng_seed_val


def _current():
    from . import is_available, current_device
    return current_device() if is_available() else 0


def manual_seed(seed):
    """Seeds the current device's generator."""
    _seeds[_current()] = int(seed) % 2 ** 64


def manual_seed_all(seed):
    """Seeds every device's generator."""
    from . import device_count
    for i in range(max(device_count(), 1)):
        _seeds[i] = int(seed) % 2 ** 64


def seed():
    s = _random.getrandbits(63)
    manual_seed(s)


def seed_all():
    manual_seed_all(_random.getrandbits(63))


def initial_seed():
    """The current device's seed."""
    return _seeds.get(_current(), _DEFAULT_SEED)

"""ignis.Generator: a seedable random stream for the data utilities.

Samplers, random_split and DataLoader take `generator=` as in PyTorch. This
Generator is NumPy's PCG64 behind torch.Generator's methods; ignis's random
operators (rand, randn, ...) draw from the global generator only and do not
take `generator=` yet (that needs the C++ generator). Streams differ from
PyTorch's: the same seed gives a reproducible order in ignis, not torch's order.
"""
import json

import numpy as np

_DEFAULT_SEED = 67280421310721  # torch.Generator's initial seed


class Generator:
    def __init__(self, device="cpu"):
        from . import _C
        self.device = _C.device(device) if isinstance(device, str) else device
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed):
        seed = int(seed)
        if not -2 ** 63 <= seed < 2 ** 64:
            raise RuntimeError(f"Overflow when unpacking long long: seed {seed}")
        self._seed = seed % 2 ** 64
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        """Seeds from a non-deterministic source; returns the seed."""
        s = int(np.random.SeedSequence().generate_state(1, np.uint64)[0]) & (2 ** 63 - 1)
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """The state as a uint8 tensor (opaque; for set_state)."""
        from ._creation import tensor
        from . import _C
        blob = json.dumps([self._seed, self._rng.bit_generator.state]).encode()
        return tensor(list(blob), dtype=_C.uint8)

    def set_state(self, state):
        blob = bytes(state.tolist())
        seed, st = json.loads(blob.decode())
        self._seed = seed
        self._rng = np.random.Generator(np.random.PCG64())
        self._rng.bit_generator.state = st
        return self

    def __repr__(self):
        return f"<ignis.Generator object (seed {self._seed})>"


def numpy_rng(generator):
    """The NumPy Generator that draws for `generator`; for None, a fresh one
    seeded from ignis's global generator (so ignis.manual_seed makes it
    reproducible, as torch's samplers do with the global seed)."""
    if generator is None:
        from . import _C, empty
        seed = empty((), dtype=_C.int64).random_(0, 2 ** 62).item()
        return np.random.Generator(np.random.PCG64(seed))
    if isinstance(generator, Generator):
        return generator._rng
    raise TypeError(f"expected an ignis.Generator, got {type(generator).__name__}")

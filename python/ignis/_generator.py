"""ignis.Generator: a seedable random stream, as torch.Generator.

The generator is the C++ Philox generator (ignis._C.Generator, see
src/ignis/python/py_generator.cpp): random ops (rand, randn, randint,
randperm, multinomial, the *_like forms, Tensor.uniform_/normal_/random_/
bernoulli_ and the samplers written here over them) take it as `generator=`.
A generator seeded with s gives the same stream as the global generator after
ignis.manual_seed(s); `ignis.default_generator` is the global generator.
Streams differ from PyTorch's (Philox counters, not mt19937).

The data utilities (samplers, random_split, DataLoader) draw their NumPy
permutations from a NumPy generator seeded by one draw from the ignis
generator (numpy_rng), so a seeded generator gives a reproducible order.
"""
import copyreg

import numpy as np

from . import _C

Generator = _C.Generator
default_generator = _C.default_generator


def _rebuild_generator(device, state):
    return Generator(device).set_state(state)


def _reduce_generator(g):
    return _rebuild_generator, (str(g.device), g.get_state())


# pickle and copy.deepcopy: a new generator in the same state.
copyreg.pickle(Generator, _reduce_generator)


def numpy_rng(generator):
    """A NumPy Generator seeded by one draw from `generator` (the global
    generator when None), so ignis.manual_seed or a seeded ignis.Generator
    makes it reproducible and each call continues the stream."""
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"expected an ignis.Generator, got {type(generator).__name__}")
    from . import empty
    seed = empty((), dtype=_C.int64).random_(0, 2 ** 62, generator=generator).item()
    return np.random.Generator(np.random.PCG64(seed))

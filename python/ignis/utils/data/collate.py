"""default_collate (a list of samples -> one batch) and default_convert
(one sample's NumPy arrays -> tensors), as torch.utils.data's."""
import collections.abc
import copy
import re

import numpy as np

_NP_STR = re.compile("[SaUO]")
_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _same_sequence(template, values):
    """`values` as a sequence of `template`'s type (a copy of it, for mutable
    ones, so that subclasses keep their state), or a list when that type
    cannot be built from one; torch's collate rule."""
    try:
        if isinstance(template, collections.abc.MutableSequence):
            clone = copy.copy(template)
            for i, v in enumerate(values):
                clone[i] = v
            return clone
        return type(template)(values)
    except TypeError:
        return values


def default_convert(data):
    """NumPy arrays and scalars -> tensors, through containers; the rest kept."""
    from ... import as_tensor
    from ..._tensor import Tensor
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _NP_STR.search(data.dtype.str) else as_tensor(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return as_tensor(data)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: default_convert(v) for k, v in data.items()})
                return clone
            return type(data)({k: default_convert(v) for k, v in data.items()})
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        return _same_sequence(data, [default_convert(d) for d in data])
    return data


def default_collate(batch):
    """Stacks tensors (and NumPy arrays) along a new dim 0, makes numbers a
    tensor (float64 for floats, int64 for ints, bool for bools), keeps strings
    as a list, and recurses into dicts, namedtuples and sequences (a batch of
    tuples gives a list, as in PyTorch)."""
    from ... import as_tensor, stack, tensor, float64
    from ..._tensor import Tensor
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray) and not isinstance(elem, np.generic):
        if _NP_STR.search(elem.dtype.str):
            raise TypeError(_ERR.format(elem.dtype))
        return default_collate([as_tensor(b) for b in batch])
    if isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_)):
        return as_tensor(np.array(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):  # bool included: a bool tensor
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({k: default_collate([d[k] for d in batch]) for k in elem})
                return clone
            return type(elem)({k: default_collate([d[k] for d in batch]) for k in elem})
        except TypeError:
            return {k: default_collate([d[k] for d in batch]) for k in elem}
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]
        return _same_sequence(elem, [default_collate(s) for s in transposed])
    raise TypeError(_ERR.format(type(elem)))

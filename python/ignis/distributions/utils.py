"""Helpers the distributions share: broadcasting parameters, conversions
between probabilities and logits, and dtype limits."""
import numbers

import ignis

# (smallest normal positive difference from 1, most negative finite value)
_FINFO = {
    "float64": (2.220446049250313e-16, -1.7976931348623157e308),
    "float32": (1.1920928955078125e-07, -3.4028234663852886e38),
    "bfloat16": (0.0078125, -3.3895313892515355e38),
    "float16": (0.0009765625, -65504.0),
}


def eps(dtype):
    return _FINFO[str(dtype).split(".")[-1]][0]


def finfo_min(dtype):
    return _FINFO[str(dtype).split(".")[-1]][1]


def tiny(dtype):
    """The smallest positive normal number of the dtype (finfo.tiny)."""
    return ignis.finfo(dtype).tiny


def clamp_probs(probs):
    """Probabilities kept inside (0, 1) by the dtype's eps, as torch's
    clamp_probs (logs of them stay finite)."""
    e = eps(probs.dtype)
    return probs.clamp(min=e, max=1 - e)


def sum_rightmost(value, dim):
    """Sums the rightmost `dim` dims (none for dim <= 0; a number stays one)."""
    if dim <= 0 or not isinstance(value, ignis.Tensor):
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def broadcast_all(*values):
    """The values (tensors or numbers) as tensors of one broadcast shape;
    numbers take the dtype of the tensors among them, else the default."""
    if not all(isinstance(v, (ignis.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "ignis.Tensor or objects implementing __torch_function__.")
    tensors = [v for v in values if isinstance(v, ignis.Tensor)]
    dtype = tensors[0].dtype if tensors else ignis.get_default_dtype()
    as_tensors = [v if isinstance(v, ignis.Tensor) else ignis.tensor(float(v), dtype=dtype)
                  for v in values]
    return ignis.broadcast_tensors(*as_tensors)


def probs_to_logits(probs, is_binary=False):
    p = probs.clamp(eps(probs.dtype), 1 - eps(probs.dtype))
    return p.log() - (-p).log1p() if is_binary else p.log()


def logits_to_probs(logits, is_binary=False):
    return logits.sigmoid() if is_binary else logits.softmax(-1)


class lazy_property:
    """Computed on first read, then stored on the instance (probs from
    logits and back)."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with ignis.enable_grad():
            value = self.fn(instance)
        setattr(instance, self.fn.__name__, value)
        return value


def bce_with_logits(logits, target):
    """Elementwise binary cross-entropy of probabilities sigmoid(logits)
    against target: softplus(logits) - target * logits.

    Not F.binary_cross_entropy_with_logits: that one's gradient is wrong at
    logits == 0 (its decomposition's max(-x, 0) and |x| take zero
    subgradients there), which is where probs = 1/2."""
    import ignis.nn.functional as F
    return F.softplus(logits) - target * logits

"""F.embedding_bag: sums, means or maxima of bags of embedding rows.

The rows are looked up with the `embedding` op, then reduced into their bags
with index_add (sum, mean) or scatter_reduce "amax" (max): each looked-up
row carries its bag's number. Bags are the fixed-length rows of a 2-D input,
or the runs of a 1-D input that `offsets` start, numbered by a cumulative
sum of marks at the offsets (no host read of the offsets, so capture traces
it). Entries equal to padding_idx, and those after the last offset with
include_last_offset, go to one extra bag that is dropped: they add nothing,
count for nothing in a mean, and an empty bag is 0 in every mode, as torch.
"""
import warnings

from .. import _ops
from .._functions import _holds_data

_embedding = _ops.get("embedding")


def _check_indices(input, offsets):
    import ignis
    for name, t in (("indices", input), ("offsets", offsets)):
        if t is not None and t.dtype not in (ignis.int64, ignis.int32):
            raise RuntimeError(f"Expected tensor for argument #{1 if name == 'indices' else 2} "
                               f"'{name}' to have one of the following scalar types: Long, Int; "
                               f"but got {t.dtype} instead (while checking arguments for "
                               "embedding_bag)")


def _padding_idx(padding_idx, n):
    if padding_idx is None:
        return None
    if not -n <= padding_idx < n:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, {-n} through "
                           f"{n - 1}, but got {padding_idx}")
    return padding_idx % n


def _bags_of(input, offsets, include_last_offset):
    """(the bag number of each of input's n entries, the number of bags);
    entries after the last offset (include_last_offset) get bag `bags`."""
    import ignis
    n = input.shape[0]
    starts = offsets.to(ignis.int64)
    bags = starts.shape[0] - 1 if include_last_offset else starts.shape[0]
    if include_last_offset:
        if bags < 0:
            raise RuntimeError("include_last_offset: number of offset should be at least 1")
        ends = starts.narrow(0, bags, 1)
        starts = starts.narrow(0, 0, bags)
    if _holds_data(offsets) and starts.shape[0]:
        first = int(starts[0].item())
        if first != 0:
            raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the "
                               "mini-batch has to start from position 0. However, got "
                               f"{first}")
        last = int(offsets[-1].item())
        if last > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                               f"offsets[-1] of {last}")
    # a mark at each bag's start; entry i is in bag (marks up to i) - 1
    marks = ignis.zeros(n + 1, dtype=ignis.int64, device=input.device)
    marks = marks.index_add(0, starts.clamp(0, n), ignis.ones_like(starts))
    bag = marks[:n].cumsum(0) - 1
    if include_last_offset:
        after = ignis.arange(n, device=input.device) >= ends
        bag = ignis.where(after, ignis.full_like(bag, bags), bag)
    return bag, bags


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """The sum, mean or max of each bag of `weight`'s rows at `input`
    (torch.nn.functional.embedding_bag): a 2-D input is one bag per row; a
    1-D input is cut into bags where `offsets` say (with include_last_offset
    the last offset ends the last bag). per_sample_weights (mode "sum")
    scales each row; rows at padding_idx are left out."""
    import ignis
    if weight.dtype == ignis.int64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    _check_indices(input, offsets)
    if max_norm is not None:
        from .modules.sparse import _renorm_rows
        _renorm_rows(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on GitHub.")
    pad = _padding_idx(padding_idx, weight.shape[0])

    if input.dim() == 2:
        bags, length = input.shape
        idx = input.reshape(-1)
        bag = ignis.arange(idx.shape[0], device=input.device) // max(length, 1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    else:
        idx = input
        bag, bags = _bags_of(input, offsets, include_last_offset)
    idx = idx.to(ignis.int64)
    if pad is not None:
        bag = ignis.where(idx == pad, ignis.full_like(bag, bags), bag)
    rows = _embedding(weight, idx, -1 if pad is None else pad, scale_grad_by_freq, sparse)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1).to(rows.dtype)
    dim = weight.shape[1]
    out = ignis.zeros(bags + 1, dim, dtype=weight.dtype, device=weight.device)
    if mode == "max":
        out = out.scatter_reduce(0, bag.unsqueeze(1).expand(-1, dim), rows, "amax",
                                 include_self=False)
    else:
        out = out.index_add(0, bag, rows)
    out = out[:bags]
    if mode == "mean":
        ones = ignis.ones(bag.shape[0], dtype=weight.dtype, device=weight.device)
        count = ignis.zeros(bags + 1, dtype=weight.dtype, device=weight.device).index_add(
            0, bag, ones)[:bags]
        out = out / count.clamp(min=1).unsqueeze(1)
    return out

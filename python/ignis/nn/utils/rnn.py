"""ignis.nn.utils.rnn: packed and padded sequences, as in torch.nn.utils.rnn.

A PackedSequence holds the steps of a batch of sequences sorted by length
(longest first), step after step: `data` is (sum of batch_sizes, *), and
`batch_sizes[t]` says how many sequences have a step t. Everything here is
made of ordinary ops (index_select, narrow, cat, pad, stack), so gradients
flow through packing and unpacking.
"""
from collections import namedtuple

import ignis
from .. import functional as F

__all__ = [
    "PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
    "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence",
]

_PackedSequenceBase = namedtuple(
    "PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def invert_permutation(permutation):
    """The permutation that undoes `permutation` (None stays None)."""
    if permutation is None:
        return None
    n = permutation.numel()
    inv = ignis.empty(n, dtype=ignis.int64)
    inv.scatter_(0, permutation, ignis.arange(0, n, dtype=ignis.int64))
    return inv


class PackedSequence(_PackedSequenceBase):
    """torch.nn.utils.rnn.PackedSequence: build it with pack_padded_sequence
    or pack_sequence rather than by hand."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes, ...)) form
            if isinstance(data, (list, tuple)) and len(data) == 2:
                data, batch_sizes = data
            else:
                raise TypeError("PackedSequence needs data and batch_sizes")
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never "
                "be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    # Tensor-like conveniences (batch_sizes and the indices stay int64 on the CPU).
    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self, *args, **kwargs):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=ignis.float64)

    def float(self):
        return self.to(dtype=ignis.float32)

    def half(self):
        return self.to(dtype=ignis.float16)

    def bfloat16(self):
        return self.to(dtype=ignis.bfloat16)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _batch_sizes_list(batch_sizes):
    return [int(b) for b in batch_sizes.tolist()]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch (T, B, *) (or (B, T, *) with batch_first) of
    sequences of the given lengths."""
    if isinstance(lengths, ignis.Tensor):
        lengths_list = [int(v) for v in lengths.tolist()]
    else:
        lengths_list = [int(v) for v in lengths]
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths_list, lengths_list[1:])):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability.")
        sorted_indices = None
    else:
        order = sorted(range(len(lengths_list)), key=lambda i: -lengths_list[i])
        sorted_indices = ignis.tensor(order, dtype=ignis.int64)
        lengths_list = [lengths_list[i] for i in order]
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    if len(lengths_list) != input.shape[1]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lengths_list)} (batch_size={input.shape[1]})")
    if lengths_list and lengths_list[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    T = lengths_list[0] if lengths_list else 0
    if T > input.shape[0]:
        raise RuntimeError(f"Expected sequence length to be at most {input.shape[0]}, but got "
                           f"{T}")
    batch_sizes = [sum(1 for n in lengths_list if n > t) for t in range(T)]
    data = ignis.cat([input[t].narrow(0, 0, b) for t, b in enumerate(batch_sizes)], 0)
    return PackedSequence(data, ignis.tensor(batch_sizes, dtype=ignis.int64), sorted_indices,
                          None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded, lengths), lengths an
    int64 tensor in the original batch order."""
    data, batch_sizes = sequence.data, _batch_sizes_list(sequence.batch_sizes)
    T = len(batch_sizes)
    B = batch_sizes[0] if T else 0
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {T}")
    else:
        total_length = T
    tail = [0, 0] * (data.dim() - 1)
    steps, off = [], 0
    for b in batch_sizes:
        step = data.narrow(0, off, b)
        if b < B:
            step = F.pad(step, tail + [0, B - b], value=padding_value)
        steps.append(step)
        off += b
    if total_length > T:
        steps.extend([data.new_full((B,) + tuple(data.shape[1:]), padding_value)]
                     * (total_length - T))
    padded = ignis.stack(steps, 0) if steps else data.new_zeros((0, 0) + tuple(data.shape[1:]))
    lengths = [sum(1 for b in batch_sizes if b > i) for i in range(B)]
    lengths = ignis.tensor(lengths, dtype=ignis.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices)
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks tensors of shape (L_i, *) into (max L, B, *) (or (B, max L, *)),
    filling with padding_value."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if isinstance(sequences, ignis.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    T = max(s.shape[0] for s in sequences)
    out = []
    for s in sequences:
        n = T - s.shape[0]
        if n:
            pad = [0, 0] * (s.dim() - 1) + ([0, n] if padding_side == "right" else [n, 0])
            s = F.pad(s, pad, value=padding_value)
        out.append(s)
    return ignis.stack(out, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of unpadded sequences of a padded batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lengths = lengths.tolist() if isinstance(lengths, ignis.Tensor) else lengths
    return [seq[:int(n)] for seq, n in zip(padded_sequences, lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of tensors of shape (L_i, *)."""
    lengths = ignis.tensor([s.shape[0] for s in sequences], dtype=ignis.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences in a PackedSequence, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)

"""AdaptiveLogSoftmaxWithLoss (Grave et al., 2016, "Efficient softmax
approximation for GPUs"): the classes are split by `cutoffs` into a
frequent shortlist, scored by the head together with one logit per
cluster of rarer classes, and clusters, each scored by its own low-rank
tail (2 linear layers, the hidden size shrinking by div_value per cluster).
log p(class in cluster c) = log p_head(c) + log p_tail_c(class).
Parameters and their layout are torch's, so state_dicts load."""
from collections import namedtuple

import ignis
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs)
                or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, size, bias=False, **factory)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def forward(self, input, target):
        target_dim = target.dim()
        if target_dim == 1:
            if input.size(0) != target.size(0):
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input.size()}")
        elif target_dim == 0:
            if input.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_dim > 0
        input = input if batched else input.unsqueeze(0)
        target = target if batched else target.unsqueeze(0)
        batch = target.size(0)

        output = ignis.zeros(batch, dtype=input.dtype, device=input.device)
        # The head's column each example reads: its class (shortlist) or its cluster.
        head_column = ignis.zeros(batch, dtype=ignis.int64, device=input.device)
        used = 0
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            low, high = bounds[i], bounds[i + 1]
            in_range = (target >= low).logical_and(target < high)
            rows = in_range.nonzero().squeeze(-1)
            if rows.numel() == 0:
                continue
            if i == 0:
                head_column = head_column.index_copy(0, rows, target[in_range])
            else:
                relative = target[in_range] - low
                cluster_logits = self.tail[i - 1](input.index_select(0, rows))
                head_column = head_column.index_fill(0, rows, self.shortlist_size + i - 1)
                log_probs = F.log_softmax(cluster_logits, dim=1)
                output = output.index_copy(0, rows,
                                           log_probs.gather(1, relative.unsqueeze(1)).squeeze(1))
            used += rows.numel()
        if used != batch:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")
        head_log_probs = F.log_softmax(self.head(input), dim=1)
        output = output + head_log_probs.gather(1, head_column.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _full_log_prob(self, input, head_output):
        head_log_probs = F.log_softmax(head_output, dim=1)
        pieces = [head_log_probs[:, :self.shortlist_size]]
        for i, projection in enumerate(self.tail):
            cluster = F.log_softmax(projection(input), dim=1)
            pieces.append(cluster + head_log_probs[:, self.shortlist_size + i].unsqueeze(1))
        return ignis.cat(pieces, dim=1)

    def log_prob(self, input):
        """Log probabilities of every class, (N, n_classes) (or (n_classes,))."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        out = self._full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each example."""
        return self.log_prob(input).argmax(dim=-1)

"""The losses torch computes with kernels of their own and ignis writes over
other ops: the margin and embedding losses, soft margins, triplets, the
Gaussian and Poisson negative log-likelihoods and CTC (torch.nn.functional's
signatures, values and gradients).

Each is a formula over declared ops, so autograd, capture and the compiler
see those ops; nn/functional.py makes them its functions (capture records a
call of one as one graph call). Shape and argument checks raise torch's
exceptions with torch's messages; an index out of range (a class target) is
reported by the `gather` that reads it.
"""
import math

from .. import _ops

_logsigmoid = _ops.get("logsigmoid")

_REDUCTIONS = ("none", "mean", "sum")
_COSINE_EPS = 1e-12  # added to the squared norms in cosine_embedding_loss (ATen's EPSILON)


def _ig():
    import ignis
    return ignis


def _legacy_reduction(size_average, reduce):
    """PyTorch's mapping of the deprecated size_average / reduce flags."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _reduction(reduction, size_average=None, reduce=None):
    """The reduction to apply: the deprecated flags override `reduction`
    when either is given, as in torch; anything else than none/mean/sum is a
    ValueError."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_long(target, name):
    if target.dtype != _ig().int64:
        raise RuntimeError(f"{name}: expected target of scalar type Long but found "
                           f"{str(target.dtype).split('.')[-1]}")


# ---- margins on pairs ----------------------------------------------------------------------
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), target +1 or -1."""
    reduction = _reduction(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {list(input1.shape)}, input2: {list(input2.shape)}, "
            f"target: {list(target.shape)}")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """input where target == 1, max(0, margin - input) where target == -1
    (ATen's form: both terms where target is neither)."""
    reduction = _reduction(reduction, size_average, reduce)
    ig = _ig()
    zeros = ig.zeros_like(input)
    output_margin = ig.where(target != 1, (margin - input).clamp_min(0), zeros)
    output_self = ig.where(target != -1, input, zeros)
    return _reduce(output_margin + output_self, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), target +1 or -1."""
    reduction = _reduction(reduction, size_average, reduce)
    return _reduce((-input * target).exp().log1p(), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(input1, input2) where target == 1, max(0, cos - margin) where
    target == -1, over the last dim of (N, D) inputs with an (N) target or
    (D) inputs with a 0-d target."""
    reduction = _reduction(reduction, size_average, reduce)
    ig = _ig()
    tdim = target.dim()
    if tdim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if tdim == 1 and (input1.dim() != 2 or input2.dim() != 2):
        raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    if tdim == 0 and (input1.dim() != 1 or input2.dim() != 1):
        raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    prod_sum = (input1 * input2).sum(tdim)
    mag_square1 = (input1 * input1).sum(tdim) + _COSINE_EPS
    mag_square2 = (input2 * input2).sum(tdim) + _COSINE_EPS
    cos = prod_sum / (mag_square1 * mag_square2).sqrt()
    zeros = ig.zeros_like(cos)
    pos = ig.where(target == 1, 1 - cos, zeros)
    neg = ig.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _reduce(pos + neg, reduction)


# ---- multi-class and multi-label margins ---------------------------------------------------
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """The mean over classes (the last dim) of each class's logistic loss,
    target 0 or 1 per class; weight per class."""
    reduction = _reduction(reduction, size_average, reduce)
    loss = -(target * _logsigmoid(input) + (1 - target) * _logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    return _reduce(loss.sum(class_dim) / input.size(class_dim), reduction)


def _class_scores(input, target, name):
    """input as (N, C) and target as (N, 1), after torch's checks of a (C) or
    (N, C) input (a 0-d one: one class) with a target of one class per sample."""
    nd = input.dim()
    if not (nd == 0 or (nd == 1 and input.size(0) != 0) or (nd == 2 and input.size(1) != 0)):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    nframe = input.size(0) if nd == 2 else 1
    if target.dim() > 1 or target.numel() != nframe:
        raise RuntimeError(
            f"{name}: target tensor should be 1-D with size equal to the number of input "
            f"samples (batch size). Expected target size [{nframe}], but got "
            f"{list(target.shape)}. Input has shape {list(input.shape)}.")
    _check_long(target, name)
    classes = input.size(-1) if nd else 1
    return input.reshape(nframe, classes), target.reshape(nframe, 1)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum over classes i != y of max(0, margin - x[y] + x[i]) ** p * weight[y],
    divided by the number of classes; y = target, p 1 or 2."""
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    reduction = _reduction(reduction, size_average, reduce)
    ig = _ig()
    x, y = _class_scores(input, target, "multi_margin_loss")
    classes = x.size(1)
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(f"inconsistent weight size, expected {classes} but got "
                           f"{list(weight.shape)}")
    z = (margin - x.gather(1, y) + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.gather(0, y.reshape(-1)).unsqueeze(1)
    not_target = ig.arange(classes, device=x.device) != y
    loss = ig.where(not_target, z, ig.zeros_like(z)).sum(1) / classes
    if reduction == "none" and target.dim() == 0:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """For each sample, sum over its target classes j and its other classes i
    of max(0, 1 - (x[j] - x[i])), divided by the number of classes. A
    sample's target classes are the leading entries of its target row, up to
    the first -1."""
    reduction = _reduction(reduction, size_average, reduce)
    ig = _ig()
    nd = input.dim()
    if not ((nd <= 2 and input.numel() > 0) or (nd == 2 and input.size(1) > 0)):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    if nd == 2:
        nframe, classes = input.size(0), input.size(1)
        bad_target = tuple(target.shape) != (nframe, classes)
    else:
        nframe, classes = 1, input.numel()
        bad_target = target.dim() > 1 or target.numel() != classes
    if bad_target:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    _check_long(target, "multilabel_margin_loss")
    x, t = input.reshape(nframe, classes), target.reshape(nframe, classes)
    listed = (t == -1).cumsum(1) == 0                         # before the row's first -1
    idx = t.masked_fill(t == -1, 0)
    x_target = x.gather(1, idx)                               # (N, K): x[j] per listed j
    cls = ig.arange(classes, device=x.device)
    is_target = ((idx.unsqueeze(2) == cls) & listed.unsqueeze(2)).any(1)   # (N, C)
    z = (1 - x_target.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)         # (N, K, C)
    keep = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = ig.where(keep, z, ig.zeros_like(z)).sum((1, 2)) / classes
    if reduction == "none" and target.dim() <= 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


# ---- triplets ----------------------------------------------------------------------------------
def _triplet(anchor, positive, negative, distance, margin, swap, reduction):
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not a == p == n:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:  # the positive as the anchor where it is closer to the negative
        dist_neg = _ig().minimum(dist_neg, distance(positive, negative))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, d(a, p) - d(a, n) + margin), d the p-norm pairwise distance."""
    reduction = _reduction(reduction, size_average, reduce)
    from .functional import pairwise_distance
    return _triplet(anchor, positive, negative,
                    lambda x1, x2: pairwise_distance(x1, x2, p, eps), margin, swap, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with any distance (default: pairwise_distance)."""
    reduction = _reduction(reduction)
    if distance_function is None:
        from .functional import pairwise_distance as distance_function
    return _triplet(anchor, positive, negative, distance_function, margin, swap, reduction)


# ---- likelihoods ---------------------------------------------------------------------------
def gaussian_nll_loss(input, target, var, full=False, eps=1e-06, reduction="mean"):
    """0.5 * (log(var) + (input - target) ** 2 / var) (+ 0.5 * log(2 pi) when
    full), var clamped below at eps without blocking its gradient. var has
    input's shape, or one dim fewer, or one dim of size 1 (one variance
    shared along it), or is a number."""
    ig = _ig()
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ig.ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)  # one variance per sample, shared by its last dim
        elif not (input.dim() == var.dim() and
                  sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    reduction = _reduction(reduction)
    # torch clamps a clone in place under no_grad: the value is clamped, the
    # gradient flows to var as if it were not.
    var = var + (var.clamp(min=eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-08,
                     reduce=None, reduction="mean"):
    """exp(input) - target * input (log_input), else input - target *
    log(input + eps); full adds Stirling's approximation of log(target!)
    where target > 1."""
    reduction = _reduction(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


# ---- connectionist temporal classification -------------------------------------------------
def _lse3(a, b, c):
    """log(exp(a) + exp(b) + exp(c)) elementwise, -inf where all three are,
    with finite gradients there (a plain logsumexp's are NaN: exp(-inf - -inf))."""
    ig = _ig()
    m = ig.maximum(ig.maximum(a, b), c)
    none = m == -math.inf
    m = m.masked_fill(none, 0).detach()
    s = (a - m).exp() + (b - m).exp() + (c - m).exp()
    return (m + s.clamp(min=1e-38).log()).masked_fill(none, -math.inf)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The negative log-likelihood of each target under the alignments of
    log_probs (T, N, C) (or (T, C) unbatched), summed over alignments with
    the forward (alpha) recursion over the blank-extended target, all batch
    elements at once; targets are padded (N, S) or concatenated (sum of
    target_lengths). reduction="mean" divides each loss by its target length
    before the batch mean, as torch's. Gradients are autograd's through the
    recursion: for log_softmax outputs, those of the logits are torch's
    (torch's own gradient with respect to log_probs differs from the true one
    by a term log_softmax's backward removes). A target no alignment reaches
    has an infinite loss and zero gradients (torch's are NaN there;
    zero_infinity=True makes both the loss and the gradients zero)."""
    ig = _ig()
    reduction = _reduction(reduction)
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        if targets.dim() == 1:
            targets = targets.unsqueeze(0)
    if log_probs.dim() != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D or 3-D, got "
                           f"{log_probs.dim()}-D")
    T, N, C = log_probs.shape
    in_len = [int(v) for v in (input_lengths.reshape(-1).tolist()
                               if isinstance(input_lengths, ig.Tensor) else
                               ([input_lengths] if isinstance(input_lengths, int) else
                                input_lengths))]
    tg_len = [int(v) for v in (target_lengths.reshape(-1).tolist()
                               if isinstance(target_lengths, ig.Tensor) else
                               ([target_lengths] if isinstance(target_lengths, int) else
                                target_lengths))]
    if len(in_len) != N:
        raise RuntimeError(f"input_lengths must be of size batch_size ({N}), got {len(in_len)}")
    if len(tg_len) != N:
        raise RuntimeError(f"target_lengths must be of size batch_size ({N}), got {len(tg_len)}")
    if any(v > T for v in in_len):
        raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                           f"{max(in_len)}")
    S = max(tg_len + [0])
    rows = []
    if targets.dim() == 1:  # concatenated
        flat, start = targets.tolist(), 0
        for n in tg_len:
            rows.append(flat[start:start + n] + [blank] * (S - n))
            start += n
    else:
        tl = targets.tolist()
        for b, n in enumerate(tg_len):
            if n > len(tl[b]):
                raise RuntimeError(f"Expected tensor to have size at least {n} at dimension 1, "
                                   f"but got size {len(tl[b])} for argument #2 'targets'")
            rows.append(tl[b][:n] + [blank] * (S - n))
    L = 2 * S + 1
    ext = [[blank if s % 2 == 0 else row[s // 2] for s in range(L)] for row in rows]
    # a skip from s - 2 is allowed onto a label that differs from the label before it
    skip = [[s % 2 == 1 and s >= 2 and e[s] != e[s - 2] for s in range(L)] for e in ext]
    dev = log_probs.device
    ext_t = ig.tensor(ext, dtype=ig.int64, device=dev)  # (N, L)
    skip_t = ig.tensor(skip, dtype=ig.bool, device=dev)
    lp = log_probs.gather(2, ext_t.unsqueeze(0).expand(T, N, L))  # (T, N, L)
    neg = ig.full((N, 1), -math.inf, dtype=lp.dtype, device=dev)
    neg2 = ig.full((N, 2), -math.inf, dtype=lp.dtype, device=dev)
    first = ig.tensor([[s == 0 or (s == 1 and S > 0) for s in range(L)]] * N, dtype=ig.bool,
                      device=dev)
    alpha = lp[0].masked_fill(~first, -math.inf)
    in_len_t = ig.tensor(in_len, dtype=ig.int64, device=dev).unsqueeze(1)
    for t in range(1, T):
        a1 = ig.cat([neg, alpha[:, :-1]], 1)
        a2 = ig.cat([neg2, alpha[:, :-2]], 1).masked_fill(~skip_t, -math.inf) if L > 2 else \
            ig.full_like(alpha, -math.inf)
        step = _lse3(alpha, a1, a2) + lp[t]
        alpha = ig.where(in_len_t > t, step, alpha)  # a sequence that ended keeps its alpha
    end = ig.tensor([[2 * n, max(2 * n - 1, 0)] for n in tg_len], dtype=ig.int64, device=dev)
    last = alpha.gather(1, end)
    same = ig.tensor([[False, n == 0] for n in tg_len], dtype=ig.bool, device=dev)
    last = last.masked_fill(same, -math.inf)  # an empty target ends at blank 0 alone
    loss = -_lse3(last[:, 0], last[:, 1], ig.full_like(last[:, 0], -math.inf))
    if zero_infinity:
        loss = loss.masked_fill(loss == math.inf, 0)
    if reduction == "mean":
        lengths = ig.tensor(tg_len, dtype=loss.dtype, device=dev).clamp(min=1)
        return (loss / lengths).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0, options=None):
    """torch.nn.functional.linear_cross_entropy: cross_entropy of the logits
    linear(input, linear_weight, linear_bias), linear_weight of shape
    (C, *out_features, in_features) giving logits (..., C, *out_features).
    ignore_index None means -100. torch's `options` (a LinearCrossEntropyOptions)
    selects a batch-chunked implementation that never holds the whole logits
    tensor; ignis always computes the reference form, whose values are the
    same, so options is accepted and only checked."""
    import ignis
    from .modules.loss import LinearCrossEntropyOptions
    if options is not None and not isinstance(options, LinearCrossEntropyOptions):
        raise TypeError(f"options must be a LinearCrossEntropyOptions or None, got "
                        f"{type(options).__name__}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight to have at least 2 dims "
                           f"(num_classes, ..., in_features), got {linear_weight.dim()}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(f"input's last dim ({input.shape[-1]}) must equal linear_weight's "
                           f"in_features ({linear_weight.shape[-1]})")
    logits = ignis.tensordot(input, linear_weight, dims=([input.dim() - 1],
                                                          [linear_weight.dim() - 1]))
    if linear_bias is not None:
        logits = logits + linear_bias
    from . import functional as F
    return F.cross_entropy(logits, target, weight=weight,
                           ignore_index=-100 if ignore_index is None else ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)

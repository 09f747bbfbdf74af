"""clip_grad_norm_ (get_total_norm, clip_grads_with_norm_) and clip_grad_value_
with PyTorch's formulas."""
import ignis
from ..modules._grad import no_grad


def _grads(parameters):
    if isinstance(parameters, ignis.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (as if concatenated), as
    clip_grad_norm_ computes it."""
    tensors = [tensors] if isinstance(tensors, ignis.Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return ignis.tensor(0.0)
    with no_grad():
        if norm_type == float("inf"):
            total = ignis.stack([t.detach().abs().amax() for t in tensors]).amax()
        else:
            total = ignis.stack([t.detach().norm(norm_type) for t in tensors]).norm(norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scales the gradients in place by max_norm / (total_norm + 1e-6), at most 1."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        clip_coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(clip_coef)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scales all gradients in place so that their joint norm is at most
    max_norm; returns the joint norm before clipping."""
    parameters = [parameters] if isinstance(parameters, ignis.Tensor) else list(parameters)
    grads = _grads(parameters)
    if not grads:
        return ignis.tensor(0.0)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient in place to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)

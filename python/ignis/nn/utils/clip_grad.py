"""clip_grad_norm_ and clip_grad_value_ with PyTorch's formulas."""
import ignis
from ..modules._grad import no_grad


def _grads(parameters):
    if isinstance(parameters, ignis.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scales all gradients in place so that their joint norm is at most
    max_norm; returns the joint norm before clipping."""
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return ignis.tensor(0.0)
    with no_grad():
        if norm_type == float("inf"):
            total = ignis.stack([g.detach().abs().amax() for g in grads]).amax()
        else:
            total = ignis.stack([g.detach().norm(norm_type) for g in grads]).norm(norm_type)
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                               "`parameters` is non-finite, so it cannot be clipped. To disable "
                               "this error and scale the gradients by the non-finite norm "
                               "anyway, set `error_if_nonfinite=False`")
        clip_coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(clip_coef)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient in place to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)

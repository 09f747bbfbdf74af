"""ignis.cuda.amp: torch.cuda.amp's deprecated names; use ignis.amp."""
from ...amp.autocast_mode import custom_fwd as _custom_fwd, custom_bwd as _custom_bwd
from ..._amp_aliases import _deprecated, autocast_for, grad_scaler_for

autocast = autocast_for("cuda", "float16")
GradScaler = grad_scaler_for("cuda")


def custom_fwd(fwd=None, *, cast_inputs=None):
    _deprecated("ignis.cuda.amp.custom_fwd", "ignis.amp.custom_fwd(", ", device_type='cuda')")
    return _custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    _deprecated("ignis.cuda.amp.custom_bwd", "ignis.amp.custom_bwd(", ", device_type='cuda')")
    return _custom_bwd(bwd, device_type="cuda")


__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]

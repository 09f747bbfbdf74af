"""ignis.cpu.amp: torch.cpu.amp's deprecated names; use ignis.amp."""
from ..._amp_aliases import autocast_for, grad_scaler_for

autocast = autocast_for("cpu", "bfloat16")
GradScaler = grad_scaler_for("cpu")

__all__ = ["autocast", "GradScaler"]

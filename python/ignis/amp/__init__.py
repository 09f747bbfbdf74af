"""ignis.amp: automatic mixed precision, torch.amp's names.

``autocast`` (autocast_mode.py) runs regions in lower precision through the
C++ autocast dispatch layer; ``GradScaler`` (grad_scaler.py) scales losses
so float16 gradients do not underflow. See docs/autocast.md.
"""
from .autocast_mode import (  # noqa: F401
    autocast, custom_fwd, custom_bwd, is_autocast_available, _enter_autocast, _exit_autocast,
)
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "GradScaler"]

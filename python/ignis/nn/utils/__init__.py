"""ignis.nn.utils: gradient clipping."""
from .clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401

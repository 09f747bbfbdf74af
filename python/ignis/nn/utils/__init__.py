"""ignis.nn.utils: gradient clipping, packed sequences (rnn)."""
from .clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
from . import rnn  # noqa: F401

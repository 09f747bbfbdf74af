"""ignis.utils: activation checkpointing (ignis.utils.checkpoint), data loading
(ignis.utils.data) and DLPack (ignis.utils.dlpack), as torch.utils."""
from . import checkpoint, data, dlpack  # noqa: F401

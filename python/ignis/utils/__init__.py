"""ignis.utils: data loading (ignis.utils.data), as torch.utils."""
from . import data  # noqa: F401

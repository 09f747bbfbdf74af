"""ignis.utils: data loading (ignis.utils.data) and DLPack (ignis.utils.dlpack), as torch.utils."""
from . import data, dlpack  # noqa: F401

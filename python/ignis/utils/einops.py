"""einops's layers for ignis models (needs einops): `Rearrange` and `Reduce`,
as `einops.layers.torch` has them for torch. Defined in
ignis.nn.modules.einops; importing this also makes einops accept ignis
tensors (ignis._einops)."""
from ..nn.modules.einops import Rearrange, Reduce  # noqa: F401

__all__ = ["Rearrange", "Reduce"]

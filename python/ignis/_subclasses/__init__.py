"""ignis._subclasses: fake tensors (torch._subclasses' names)."""
from .fake_tensor import FakeTensorMode, is_fake

__all__ = ["FakeTensorMode", "is_fake"]

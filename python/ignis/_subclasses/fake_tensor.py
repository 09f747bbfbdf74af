"""FakeTensorMode: tensors with full metadata and no data.

    with FakeTensorMode() as mode:
        x = mode.from_tensor(real)      # same shape, dtype, strides, device
        y = x @ x.T                     # metadata computed by meta rules
        z = ignis.zeros(3)              # factories make fakes inside the mode

A fake tensor reports the device it stands for (x.device is cpu or cuda);
reading its data (item(), numpy(), printing values) raises. See Note [Fake
tensors] in src/ignis/aot/fake.h.
"""
from .. import _C

__all__ = ["FakeTensorMode", "is_fake"]


class FakeTensorMode(_C.FakeTensorMode):
    def __init__(self, *, allow_non_fake_inputs=True, **_kwargs):
        super().__init__()
        self.allow_non_fake_inputs = allow_non_fake_inputs


def is_fake(t):
    """True for a fake tensor."""
    return bool(getattr(t, "_is_fake", False))

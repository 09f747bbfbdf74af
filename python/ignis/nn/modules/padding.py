"""Padding modules over F.pad: constant (and zero), reflection, replication
and circular, for 1, 2 and 3 spatial dims, as torch.nn's."""
from .. import functional as F
from .module import Module


def _padding(padding, n, name):
    """An int pads every side; else a tuple of 2n (left, right, top, ...)."""
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(padding)
    if len(padding) != 2 * n:
        raise ValueError(f"{name}: padding must be an int or a tuple of {2 * n} ints, "
                         f"got {padding!r}")
    return padding


class _PadNd(Module):
    mode = "constant"
    dims = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _padding(padding, self.dims, type(self).__name__)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


def _make(base, name, mode, dims, doc):
    return type(name, (base,), {"mode": mode, "dims": dims, "__doc__": doc,
                                "__module__": __name__})


ConstantPad1d = _make(_ConstantPadNd, "ConstantPad1d", "constant", 1, "Pads with a constant.")
ConstantPad2d = _make(_ConstantPadNd, "ConstantPad2d", "constant", 2, "Pads with a constant.")
ConstantPad3d = _make(_ConstantPadNd, "ConstantPad3d", "constant", 3, "Pads with a constant.")
ZeroPad1d = _make(_ZeroPadNd, "ZeroPad1d", "constant", 1, "Pads with zeros.")
ZeroPad2d = _make(_ZeroPadNd, "ZeroPad2d", "constant", 2, "Pads with zeros.")
ZeroPad3d = _make(_ZeroPadNd, "ZeroPad3d", "constant", 3, "Pads with zeros.")
ReflectionPad1d = _make(_PadNd, "ReflectionPad1d", "reflect", 1, "Pads by reflection.")
ReflectionPad2d = _make(_PadNd, "ReflectionPad2d", "reflect", 2, "Pads by reflection.")
ReflectionPad3d = _make(_PadNd, "ReflectionPad3d", "reflect", 3, "Pads by reflection.")
ReplicationPad1d = _make(_PadNd, "ReplicationPad1d", "replicate", 1, "Pads with the edge.")
ReplicationPad2d = _make(_PadNd, "ReplicationPad2d", "replicate", 2, "Pads with the edge.")
ReplicationPad3d = _make(_PadNd, "ReplicationPad3d", "replicate", 3, "Pads with the edge.")
CircularPad1d = _make(_PadNd, "CircularPad1d", "circular", 1, "Pads circularly.")
CircularPad2d = _make(_PadNd, "CircularPad2d", "circular", 2, "Pads circularly.")
CircularPad3d = _make(_PadNd, "CircularPad3d", "circular", 3, "Pads circularly.")

from . import _C


class Size(tuple):
    """The shape of a tensor: a tuple of ints, printed as ignis.Size([...])."""

    def __repr__(self):
        return "ignis.Size([" + ", ".join(str(s) for s in self) + "])"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    # As torch.Size's: concatenation with a tuple (either side) and repetition
    # give a Size; a list is refused as tuple's + refuses it.
    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        r = tuple.__mul__(self, n)
        return r if r is NotImplemented else Size(r)

    __rmul__ = __mul__


_C._set_size_class(Size)


class SymInt:
    """The annotation of a captured graph's symbolic-size inputs (torch.SymInt):
    a placeholder `s77 : ignis.SymInt` receives the size as a plain int."""
    __module__ = "ignis"  # printed in graph code as ignis.SymInt

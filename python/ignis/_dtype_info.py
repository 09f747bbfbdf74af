"""finfo and iinfo: the numeric limits of ignis's dtypes (torch.finfo, torch.iinfo)."""

# name: (bits, eps, max, tiny (smallest normal), resolution)
_FLOATS = {
    "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001),
    "bfloat16": (16, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38, 0.01),
    "float32": (32, 1.1920928955078125e-07, 3.4028234663852886e+38, 1.1754943508222875e-38, 1e-06),
    "float64": (64, 2.220446049250313e-16, 1.7976931348623157e+308, 2.2250738585072014e-308, 1e-15),
}
# name: (bits, min, max)
_INTS = {
    "uint8": (8, 0, 255), "int8": (8, -128, 127), "int16": (16, -32768, 32767),
    "int32": (32, -2147483648, 2147483647), "int64": (64, -9223372036854775808, 9223372036854775807),
}


def _name(dtype):
    import ignis
    if dtype is None:
        dtype = ignis.get_default_dtype()
    return str(dtype).split(".")[-1]


class _Frozen:
    """Read-only once made: capture takes these records as constants."""
    __slots__ = ()

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is read-only")

    def _set(self, **fields):
        for k, v in fields.items():
            object.__setattr__(self, k, v)


class finfo(_Frozen):
    """The limits of a floating dtype (torch.finfo): bits, eps, max, min, tiny
    (= smallest_normal), resolution, dtype. finfo() is the default dtype's."""
    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type=None):
        name = _name(type)
        if name not in _FLOATS:
            raise TypeError(f"finfo(): argument 'type' must be a floating point dtype, not {name}")
        bits, eps, mx, tiny, resolution = _FLOATS[name]
        self._set(bits=bits, eps=eps, max=mx, min=-mx, tiny=tiny, smallest_normal=tiny,
                  resolution=resolution, dtype=name)

    def __repr__(self):
        # Six significant digits, as torch prints them (C++ stream defaults).
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo(_Frozen):
    """The limits of an integer dtype (torch.iinfo): bits, min, max, dtype."""
    __slots__ = ("bits", "min", "max", "dtype")

    def __init__(self, type):
        name = _name(type)
        if name not in _INTS:
            raise TypeError(f"iinfo(): argument 'type' must be an integer dtype, not {name}")
        bits, mn, mx = _INTS[name]
        self._set(bits=bits, min=mn, max=mx, dtype=name)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"  # as torch's

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


class finfo:
    """The limits of a floating dtype (torch.finfo): bits, eps, max, min, tiny
    (= smallest_normal), resolution, dtype. finfo() is the default dtype's."""

    def __init__(self, type=None):
        name = _name(type)
        if name not in _FLOATS:
            raise TypeError(f"finfo(): argument 'type' must be a floating point dtype, not {name}")
        self.bits, self.eps, self.max, self.tiny, self.resolution = _FLOATS[name]
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:.6e}, max={self.max:.6e}, "
                f"eps={self.eps:.6e}, smallest_normal={self.tiny:.6e}, tiny={self.tiny:.6e}, "
                f"dtype={self.dtype})")


class iinfo:
    """The limits of an integer dtype (torch.iinfo): bits, min, max, dtype."""

    def __init__(self, type):
        name = _name(type)
        if name not in _INTS:
            raise TypeError(f"iinfo(): argument 'type' must be an integer dtype, not {name}")
        self.bits, self.min, self.max = _INTS[name]
        self.dtype = name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"

"""repr(tensor) in PyTorch's format: tensor([...], dtype=..., device=...).

The rules follow torch/_tensor_str.py (PyTorch's default print options) so
that the text is the same as torch's with "torch." spelled "ignis.". The
values are read through NumPy.
"""
import math

import numpy as np

from . import _C

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE = None  # None: chosen from the values; True/False: forced (set_printoptions)

# set_printoptions' profiles: (precision, threshold, edgeitems, linewidth).
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Options of tensor printing (torch.set_printoptions): a profile's
    settings first ("default", "short" or "full"), then the options given;
    sci_mode is always set (None: chosen from the values printed)."""
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH, SCI_MODE
    if profile is not None:
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = _PROFILES[profile]
    if precision is not None:
        PRECISION = precision
    if threshold is not None:
        THRESHOLD = threshold
    if edgeitems is not None:
        EDGEITEMS = edgeitems
    if linewidth is not None:
        LINEWIDTH = linewidth
    SCI_MODE = sci_mode


class _Formatter:
    """Chooses one element format (int, fixed or scientific) and one width for
    all the elements that are printed."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not floating:
            for v in values.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        # Zeros and non-finite values do not take part in choosing the format.
        vals = values[np.isfinite(values) & (values != 0)]
        if vals.size == 0:
            return
        absvals = np.abs(vals).astype(np.float64)
        lo, hi = absvals.min(), absvals.max()
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        wide = hi / lo > 1000.0 or hi > 1.0e8
        if self.int_mode:
            self.sci_mode = wide if SCI_MODE is None else SCI_MODE
            fmt = f"{{:.{PRECISION}e}}" if self.sci_mode else "{:.0f}"
            extra = 0 if self.sci_mode else 1  # the "." appended to integral floats
        else:
            self.sci_mode = (wide or lo < 1.0e-4) if SCI_MODE is None else SCI_MODE
            fmt = f"{{:.{PRECISION}e}}" if self.sci_mode else f"{{:.{PRECISION}f}}"
            extra = 0
        for v in vals.tolist():
            self.max_width = max(self.max_width, len(fmt.format(v)) + extra)

    def format(self, v):
        if self.floating:
            if self.sci_mode:
                s = f"{{:{self.max_width}.{PRECISION}e}}".format(v)
            elif self.int_mode:
                s = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    s += "."
            else:
                s = f"{{:.{PRECISION}f}}".format(v)
        else:
            s = f"{v}"
        return (self.max_width - len(s)) * " " + s


class _ComplexFormatter:
    """torch's complex elements: the real parts' format, then the imaginary parts' with
    their sign and a "j" ("1.+2.j", "0.5000-1.2500j"), each part its own width."""

    def __init__(self, values):
        self.re = _Formatter(values.real, True)
        self.im = _Formatter(values.imag, True)
        self.max_width = self.re.max_width + self.im.max_width + 1

    def format(self, v):
        v = complex(v)
        imag = (self.im.format(v.imag) + "j").lstrip()
        sign = "" if imag[0] in "+-" else "+"
        return self.re.format(v.real) + sign + imag


def _summarized_data(a):
    """The elements that are printed when the tensor is summarised."""
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        if a.shape[0] > 2 * EDGEITEMS:
            return np.concatenate((a[:EDGEITEMS], a[-EDGEITEMS:]))
        return a
    rows = range(a.shape[0])
    if a.shape[0] > 2 * EDGEITEMS:
        rows = list(range(EDGEITEMS)) + list(range(a.shape[0] - EDGEITEMS, a.shape[0]))
    return np.stack([_summarized_data(a[i]) for i in rows])


def _vector_str(a, indent, summarize, fmt):
    per_line = max(1, int(math.floor((LINEWIDTH - indent) / (fmt.max_width + 2))))
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        data = ([fmt.format(v) for v in a[:EDGEITEMS].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[-EDGEITEMS:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    n = a.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        rows = ([_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)]
                + ["..."]
                + [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(n - EDGEITEMS, n)])
    else:
        rows = [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t):
    default = _C.get_default_dtype()
    if t._is_fake:  # metadata only (torch prints FakeTensor(..., size=..., dtype=...))
        extra = f", dtype={t.dtype}" if t.dtype is not default else ""
        return f"FakeTensor(..., device='{t.device}', size={tuple(t.shape)}{extra})"
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if t.device.type == "meta":
        suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not default:
            suffixes.append(f"dtype={t.dtype}")
        body = "..."
    elif t.numel() == 0:
        if t.dim() != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not default:
            suffixes.append(f"dtype={t.dtype}")
        body = "[]"
    else:
        if t.dtype not in (default, default.to_complex(), _C.int64, _C.bool):
            suffixes.append(f"dtype={t.dtype}")
        src = t if t.device.type == "cpu" else t.cpu()
        # 16-bit floats print as their float32 values, as in PyTorch.
        if t.dtype is _C.float16 or t.dtype is _C.bfloat16:
            src = src.float()
        a = np.asarray(src)
        summarize = t.numel() > THRESHOLD
        shown = (_summarized_data(a) if summarize else a).reshape(-1)
        fmt = (_ComplexFormatter(shown) if t.dtype.is_complex
               else _Formatter(shown, t.dtype.is_floating_point))
        body = _tensor_str(a, indent, summarize, fmt)
    grad_fn = getattr(t, "grad_fn", None)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(grad_fn).__name__}>")
    elif getattr(t, "requires_grad", False):
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)

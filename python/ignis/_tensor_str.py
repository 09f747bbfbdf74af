"""repr(tensor) in PyTorch's format: tensor([...], dtype=..., device=...)."""
import math

import numpy as np

from . import _C

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
_DEFAULT_INT = _C.int64


class _Formatter:
    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        vals = values[np.isfinite(values)] if floating else values
        if not floating:
            self.max_width = max((len(str(int(v))) for v in values), default=1)
            return
        if vals.size == 0:
            for v in values:
                self.max_width = max(self.max_width, len(_special(v)))
            return
        nonzero = np.abs(vals[vals != 0])
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        if self.int_mode:
            if nonzero.size and (nonzero.max() / nonzero.min() > 1000.0 or nonzero.max() > 1e8):
                self.sci_mode = True
                strs = [f"{v:.{PRECISION}e}" for v in vals]
            else:
                strs = [f"{v:.0f}." for v in vals]
        else:
            if nonzero.size and (nonzero.max() / nonzero.min() > 1000.0 or nonzero.max() > 1e8
                                 or nonzero.min() < 1e-4):
                self.sci_mode = True
                strs = [f"{v:.{PRECISION}e}" for v in vals]
            else:
                strs = [f"{v:.{PRECISION}f}" for v in vals]
        self.max_width = max(len(s) for s in strs)
        for v in values:
            if not np.isfinite(v):
                self.max_width = max(self.max_width, len(_special(v)))

    def format(self, v):
        if self.floating:
            if not np.isfinite(v):
                s = _special(v)
            elif self.sci_mode:
                s = f"{v:.{PRECISION}e}"
            elif self.int_mode:
                s = f"{v:.0f}."
            else:
                s = f"{v:.{PRECISION}f}"
        elif isinstance(v, (bool, np.bool_)):
            s = "True" if v else "False"
        else:
            s = str(int(v))
        return " " * (self.max_width - len(s)) + s


def _special(v):
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def _summarized(a, summarize):
    if not summarize or a.ndim == 0:
        return a.reshape(-1)
    parts = []

    def walk(x):
        if x.ndim == 1:
            if x.shape[0] > 2 * EDGEITEMS:
                parts.append(x[:EDGEITEMS])
                parts.append(x[-EDGEITEMS:])
            else:
                parts.append(x)
            return
        idx = range(x.shape[0])
        if x.shape[0] > 2 * EDGEITEMS:
            idx = list(range(EDGEITEMS)) + list(range(x.shape[0] - EDGEITEMS, x.shape[0]))
        for i in idx:
            walk(x[i])

    walk(a)
    return np.concatenate(parts) if parts else a.reshape(-1)


def _fmt(a, fmt, indent, summarize):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        items = [fmt.format(v) for v in a.tolist()]
        if summarize and a.shape[0] > 2 * EDGEITEMS:
            items = items[:EDGEITEMS] + ["..."] + items[-EDGEITEMS:]
        per_line = max(1, (LINEWIDTH - indent) // (fmt.max_width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = list(range(a.shape[0]))
    ellipsis_at = None
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        rows = rows[:EDGEITEMS] + rows[-EDGEITEMS:]
        ellipsis_at = EDGEITEMS
    subs = [_fmt(a[i], fmt, indent + 1, summarize) for i in rows]
    if ellipsis_at is not None:
        subs = subs[:ellipsis_at] + ["..."] + subs[ellipsis_at:]
    sep = "," + "\n" * (a.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(subs) + "]"


def tensor_repr(t):
    prefix = "tensor("
    suffixes = []
    dev = t.device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    if dev.type == "meta":
        body = "..."
        suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not _C.get_default_dtype():
            suffixes.append(f"dtype={t.dtype}")
        return prefix + body + ", " + ", ".join(suffixes) + ")"
    src = t if dev.type == "cpu" else t.cpu()
    a = np.asarray(src.float() if t.dtype is _C.bfloat16 else src)
    floating = t.dtype.is_floating_point
    if t.numel() == 0 and t.dim() != 1:
        body = "[]"
        suffixes.append(f"size={tuple(t.shape)}")
    elif t.numel() == 0:
        body = "[]"
    else:
        summarize = t.numel() > THRESHOLD
        vals = _summarized(a.astype(np.float64) if floating else a, summarize)
        fmt = _Formatter(vals, floating)
        body = _fmt(a.astype(np.float64) if floating else a, fmt, len(prefix), summarize)
    show_dtype = not (t.dtype is _C.get_default_dtype() or t.dtype is _DEFAULT_INT or t.dtype is _C.bool)
    if t.numel() == 0 and t.dtype is not _C.get_default_dtype():
        show_dtype = True
    if show_dtype:
        suffixes.append(f"dtype={t.dtype}")
    if getattr(t, "requires_grad", False):
        suffixes.append("requires_grad=True")
    gf = getattr(t, "grad_fn", None)
    if gf is not None:
        suffixes.append(f"grad_fn=<{type(gf).__name__}>")
    out = prefix + body
    for s in suffixes:
        out += ", " + s
    return out + ")"

"""no_grad for code that must also run before eager autograd exists: the
real ignis.no_grad when present, otherwise a context that does nothing (with
no autograd there is no graph to keep out of)."""
import contextlib

import ignis


def no_grad():
    ctx = getattr(ignis, "no_grad", None)
    return ctx() if ctx is not None else contextlib.nullcontext()

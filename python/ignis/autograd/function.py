"""autograd.Function: ops with a forward and backward written in Python.

    class Exp(ignis.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    Exp.apply(t)

forward runs without recording; a node calling backward becomes the grad_fn
of the outputs. Saved tensors are not checked against in-place changes.
"""
from .. import _C
from .anomaly_mode import check_function_outputs
from .grad_mode import no_grad

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    def save_for_backward(self, *tensors):
        self._saved = tensors

    @property
    def saved_tensors(self):
        return getattr(self, "_saved", ())

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def mark_dirty(self, *tensors):
        raise NotImplementedError("autograd.Function: mark_dirty (in-place functions) is not "
                                  "supported by ignis")

    def set_materialize_grads(self, value):
        self._materialize = bool(value)


class Function:
    """Base class of custom differentiable operations (see the module doc)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("autograd.Function subclasses must implement forward")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("autograd.Function subclasses must implement backward")

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        if not (_C.is_grad_enabled() and any(ctx.needs_input_grad)):
            return out
        # An output that is an input gets its own tensor object (sharing data),
        # so the input keeps its history; marked non-differentiable, the
        # mark goes with it.
        fresh = tuple(o.detach() if isinstance(o, Tensor) and any(o is a for a in args) else o
                      for o in outs)
        non_differentiable = [next((f for o, f in zip(outs, fresh) if o is t), t)
                              for t in getattr(ctx, "_non_differentiable", ())]
        outs = fresh
        # Saved outputs are kept without history: keeping them with it would make
        # a cycle (output -> node -> ctx -> output) that nothing frees.
        saved = getattr(ctx, "_saved", ())
        ctx._saved = tuple(s.detach() if isinstance(s, Tensor) and any(s is o for o in outs)
                           else s for s in saved)
        tensor_outs = [o if isinstance(o, Tensor) else None for o in outs]
        inputs = [a if isinstance(a, Tensor) else None for a in args]
        materialize = getattr(ctx, "_materialize", True)
        # For the zeros of missing gradients: the outputs' geometry, not the
        # outputs (the node would hold them, and they hold the node).
        out_geometry = [None if o is None else (tuple(o.shape), o.dtype, o.device)
                        for o in tensor_outs]
        n_args = len(args)

        def run_backward(*grads):
            if materialize:
                from .. import zeros
                grads = tuple(zeros(m[0], dtype=m[1], device=m[2])
                              if g is None and m is not None else g
                              for g, m in zip(grads, out_geometry))
            res = cls.backward(ctx, *grads)
            res = res if isinstance(res, tuple) else (res,)
            if len(res) > n_args:
                extra = res[n_args:]
                if any(r is not None for r in extra):
                    raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect "
                                       f"number of gradients (expected {n_args}, got "
                                       f"{len(res)})")
                res = res[:n_args]
            check_function_outputs(cls.__name__ + "Backward", res)  # anomaly detection
            return res

        once = getattr(cls.backward, "_ignis_once_differentiable", False)
        _C._record_function(cls.__name__ + "Backward", run_backward, inputs, tensor_outs,
                            non_differentiable, _ONCE_MESSAGE if once else "")
        return outs[0] if single else outs


_ONCE_MESSAGE = "trying to differentiate twice a function that was marked with @once_differentiable"


def once_differentiable(fn):
    """Marks a backward as not differentiable again: it runs without recording
    its ops, and under create_graph=True the gradients it returns raise if a
    later backward reaches them (torch's message), rather than passing for
    constants."""
    fn._ignis_once_differentiable = True  # the node runs it with grad mode off
    return fn

"""make_fx: a function traced through the dispatcher into a graph of ops
(torch.fx.experimental.proxy_tensor.make_fx).

    gm = make_fx(f, tracing_mode="fake")(x, y)
    print(gm.code)

tracing_mode "real" runs on the given tensors (values are computed), "fake"
on fake tensors (metadata only: nothing is computed). The graph holds the
ops that reach the tracing key: composite ops have decomposed, and ops in
`decomposition_table` (a dict or iterable of ops or names) are replaced by
their declared decompositions. In-place ops stay in place unless the
function is wrapped in ignis.func.functionalize.
"""
from ... import _C
from ..graph_module import GraphModule

__all__ = ["make_fx"]


def make_fx(f, decomposition_table=None, tracing_mode="real", _allow_non_fake_inputs=False,
            *, pre_dispatch=False, record_module_stack=False, **_kwargs):
    if tracing_mode not in ("real", "fake", "symbolic"):
        raise ValueError(f"make_fx: unknown tracing_mode {tracing_mode!r}; expected 'real', "
                         "'fake' or 'symbolic'")
    if tracing_mode == "symbolic":
        raise NotImplementedError("make_fx: tracing_mode='symbolic' needs dynamic shapes, which "
                                  "ignis does not have yet; use 'real' or 'fake'")
    from ..._functorch.aot_autograd import _module, _op_names
    functional = getattr(f, "_ignis_functionalize", False)
    inner = getattr(f, "__wrapped__", f) if functional else f

    def wrapped(*args):
        kw = dict(fake=tracing_mode == "fake", functionalize=functional, as_is=True)
        kw["only"] = _op_names(decomposition_table) if decomposition_table else []
        graph, info = _C._aot_trace_fn(inner, list(args), **kw)
        return _module(graph, info["constants"])

    return wrapped

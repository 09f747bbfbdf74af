"""symbolic_trace: records a function (or an object with `forward`) into a
Graph by running it on Proxy objects.

Recorded: calls of ignis functions (ignis.relu, ignis.nn.functional.*),
Tensor methods (x.sum()), operators (x + y, x[0]) and attribute reads
(x.shape). Tensors stored on the traced object become get_attr nodes; other
tensors met during tracing become `_tensor_constantN` attributes. Calls of
ignis functions are intercepted by patching them for the duration of the
trace (ignis ops have no __torch_function__), both in the ignis namespaces
and in the traced function's globals.
"""
import builtins
import functools
import inspect
import operator
import sys

from .. import _C
from .graph import Graph
from .graph_module import GraphModule, _fetch


class TraceError(ValueError):
    pass


class Proxy:
    """Stands for the value of `node` while tracing."""

    def __init__(self, node, tracer):
        self.node = node
        self.tracer = tracer

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __getitem__(self, idx):
        return self.tracer.create_proxy("call_function", operator.getitem, (self, idx), {})

    def __iter__(self):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy "
                         "is used in a loop or as a *args or **kwargs function argument.")

    def __bool__(self):
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call ignis.fx.wrap('len') at module "
                           "scope")

    def __index__(self):
        raise TraceError("Proxy cannot be used as an index")

    def __hash__(self):
        return id(self)


class Attribute(Proxy):
    """`proxy.attr`: a call_method when called, else a getattr node (made lazily)."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy(
                "call_function", builtins.getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


_BINARY = ["add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift",
           "and_", "or_", "xor", "matmul", "eq", "ne", "lt", "gt", "le", "ge"]
_REFLECTABLE = ["add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift",
                "and_", "or_", "xor", "matmul"]
_UNARY = ["neg", "pos", "invert", "abs"]


def _dunder(name):
    return f"__{name.rstrip('_')}__"


def _install_operators():
    for name in _BINARY + _UNARY:
        fn = getattr(operator, name)

        def impl(*args, _fn=fn):
            tracer = args[0].tracer
            return tracer.create_proxy("call_function", _fn, args, {})
        setattr(Proxy, _dunder(name), impl)
    for name in _REFLECTABLE:
        fn = getattr(operator, name)

        def rimpl(self, other, _fn=fn):
            return self.tracer.create_proxy("call_function", _fn, (other, self), {})
        setattr(Proxy, f"__r{name.rstrip('_')}__", rimpl)


_install_operators()

# Functions wrapped by ignis.fx.wrap(): recorded as leaves, never traced into.
_wrapped = set()


def wrap(fn_or_name):
    """Marks a global function to be recorded as a call instead of traced through."""
    _wrapped.add(fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__)
    return fn_or_name


class _RootProxy:
    """The `self` of a traced object: tensor attributes read become get_attr
    nodes, sub-objects with `forward` are called as call_module."""

    def __init__(self, obj, tracer, path=""):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_tracer", tracer)
        object.__setattr__(self, "_path", path)

    def __getattr__(self, name):
        from .._tensor import Tensor
        value = getattr(self._obj, name)
        path = f"{self._path}.{name}" if self._path else name
        if isinstance(value, Tensor):
            return self._tracer.attr_proxy(path, value)
        if inspect.ismethod(value) and value.__self__ is self._obj:
            return value.__func__.__get__(self)
        if hasattr(value, "forward") and not isinstance(value, type):
            return _RootProxy(value, self._tracer, path)
        return value

    def __setattr__(self, name, value):
        raise TraceError(f"cannot set attribute '{name}' on the traced object while tracing")

    def __call__(self, *args, **kwargs):
        return self._tracer.create_proxy("call_module", self._path, args, kwargs)


def _is_ignis_callable(v):
    return isinstance(v, _C.Op) or (
        inspect.isfunction(v) and (v.__module__ or "").split(".")[0] == "ignis"
        and not (v.__module__ or "").startswith("ignis.fx"))


class Tracer:
    """Builds a Graph from Python code run on Proxies (torch.fx.Tracer)."""

    def __init__(self):
        self.graph = None
        self.root = None
        self.attrs = {}

    # --- recording ----------------------------------------------------------------------
    def create_arg(self, a):
        from .._tensor import Tensor
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, _RootProxy):
            raise TraceError(f"the traced object (or its attribute '{a._path}') cannot be used "
                             "as a value")
        if isinstance(a, tuple):
            t = tuple(self.create_arg(e) for e in a)
            return type(a)(*t) if hasattr(a, "_fields") else t
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            return {k: self.create_arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, Tensor):
            for path, t in self.attrs.items():
                if t is a:
                    return self.graph.get_attr(path)
            path = f"_tensor_constant{sum(p.startswith('_tensor_constant') for p in self.attrs)}"
            self.attrs[path] = a
            return self.graph.get_attr(path)
        return a

    def create_proxy(self, kind, target, args, kwargs, name=None):
        node = self.graph.create_node(kind, target, self.create_arg(tuple(args)),
                                      self.create_arg(dict(kwargs)), name)
        loc = _user_location()
        if loc:
            node.meta["source_loc"] = loc
        return Proxy(node, self)

    def attr_proxy(self, path, value):
        self.attrs.setdefault(path, value)
        if path not in self._attr_nodes:
            self._attr_nodes[path] = self.graph.get_attr(path)
        return Proxy(self._attr_nodes[path], self)

    # --- patching -------------------------------------------------------------------------
    def _patched(self, fn):
        tracer = self

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if _has_proxy(args) or _has_proxy(kwargs):
                return tracer.create_proxy("call_function", fn, args, kwargs)
            return fn(*args, **kwargs)
        return wrapper

    def _patch(self, namespace, patches):
        for k, v in list(namespace.items()):
            if _is_ignis_callable(v) or (k in _wrapped and callable(v)):
                patches.append((namespace, k, v))
                namespace[k] = self._patched(v)

    # --- entry point -------------------------------------------------------------------------
    def trace(self, root):
        """Returns the Graph of `root` (a function, or an object with forward)."""
        import ignis
        self.graph = Graph()
        self.attrs = {}
        self._attr_nodes = {}
        if inspect.isfunction(root) or inspect.ismethod(root) or isinstance(root, _C.Op):
            fn, self_arg = root, None
        else:
            fn = type(root).forward
            self_arg = _RootProxy(root, self)
        self.root = root
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        if self_arg is not None:
            params = params[1:]
        proxies = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TraceError(f"symbolic_trace: *args/**kwargs parameter '{p.name}' is not "
                                 "supported")
            ann = None if p.annotation is inspect.Parameter.empty else p.annotation
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            node = self.graph.create_node("placeholder", p.name, default, None, None, ann)
            proxies.append(Proxy(node, self))
        patches = []
        import ignis.nn.functional as F
        for ns in (vars(ignis), vars(F), getattr(fn, "__globals__", {})):
            self._patch(ns, patches)
        try:
            out = fn(self_arg, *proxies) if self_arg is not None else fn(*proxies)
        finally:
            for ns, k, v in reversed(patches):
                ns[k] = v
        ret = sig.return_annotation
        self.graph.output(self.create_arg(out),
                          None if ret is inspect.Signature.empty else ret)
        return self.graph


_FX_DIR = __file__.rsplit("/", 1)[0]


def _user_location():
    """file:line of the innermost frame outside ignis.fx (the traced code)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_FX_DIR):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else None


def _has_proxy(a):
    if isinstance(a, Proxy):
        return True
    if isinstance(a, (tuple, list)):
        return any(_has_proxy(e) for e in a)
    if isinstance(a, dict):
        return any(_has_proxy(e) for e in a.values())
    return False


def symbolic_trace(root):
    """Traces a function or an object with a `forward` method into a GraphModule."""
    tracer = Tracer()
    graph = tracer.trace(root)
    name = root.__name__ if inspect.isfunction(root) else type(root).__name__
    # The submodules that call_module nodes name come from the root, ahead of
    # the tensors read off it (which may be their attributes: "l.weight").
    attrs = {}
    for n in graph.nodes:
        if n.op == "call_module" and n.target not in attrs:
            attrs[n.target] = _fetch(root, n.target)
    attrs.update(tracer.attrs)
    return GraphModule(attrs, graph, name)

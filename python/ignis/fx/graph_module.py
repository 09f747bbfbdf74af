"""GraphModule: a Graph plus the attributes it reads, callable through code
generated from the graph (exec'd, as torch.fx does)."""
import itertools
import linecache
import weakref
import math
import types

from .graph import Graph

_counter = itertools.count()


class _Namespace:
    """Holder for nested attributes copied from a root ("layer.0.weight")."""


def _fetch(obj, path):
    for part in path.split("."):
        obj = obj[part] if isinstance(obj, dict) else getattr(obj, part)
    return obj


def _assign(obj, path, value):
    *parents, last = path.split(".")
    for part in parents:
        nxt = getattr(obj, part, None)
        if nxt is None:
            nxt = _Namespace()
            setattr(obj, part, nxt)
        obj = nxt
    setattr(obj, last, value)


class GraphModule:
    """torch.fx.GraphModule: `.graph`, `.code`, `.forward`, callable.

    `root` supplies the attributes that get_attr / call_module nodes name:
    an object (its attributes are copied by path) or a dict path -> value.
    """

    def __init__(self, root, graph, class_name="GraphModule"):
        self._class_name = class_name
        self._root_type = type(root).__name__
        targets = [n.target for n in graph.nodes if n.op in ("get_attr", "call_module")]
        if isinstance(root, dict):
            for path, value in root.items():
                _assign(self, path, value)
        elif root is not None:
            for path in targets:
                _assign(self, path, _fetch(root, path))
        for path in targets:
            try:
                _fetch(self, path)
            except (AttributeError, KeyError):
                raise RuntimeError(f"Node target '{path}' was not found on the root "
                                   f"{type(root).__name__}") from None
        self.graph = graph

    @property
    def graph(self):
        return self._graph

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise TypeError(f"GraphModule.graph must be an ignis.fx.Graph, got {type(g).__name__}")
        self._graph = g
        g.owning_module = self
        self._invalidate()

    @property
    def code(self):
        return self._pc().src

    def _invalidate(self):
        # The code is generated when first read and compiled when `forward` is
        # first used: AOT builds graphs (the joint one) that are split, never run.
        self.__dict__.pop("_python_code", None)
        self.__dict__.pop("forward", None)

    def _pc(self):
        pc = self.__dict__.get("_python_code")
        if pc is None:
            pc = self._python_code = self._graph.python_code("self")
        return pc

    def recompile(self):
        """Regenerates `code` from the graph (returned); `forward` is compiled
        from it on first use."""
        self._invalidate()
        return self._pc()

    def _compile_forward(self):
        import ignis
        pc = self._pc()
        globals_ = {"ignis": ignis, "inf": math.inf, "nan": math.nan,
                    "NoneType": type(None), "device": ignis.device}
        globals_.update(pc.globals)
        # A fake file name registered with linecache: tracebacks show the code.
        filename = f"<eval_with_key>.{next(_counter)}"
        linecache.cache[filename] = (len(pc.src), None, pc.src.splitlines(True), filename)
        # The entry lives as long as this module's code can be in a traceback.
        old = getattr(self, "_linecache_finalizer", None)
        if old is not None:
            old()
        self._linecache_finalizer = weakref.finalize(self, linecache.cache.pop, filename, None)
        exec(compile(pc.src, filename, "exec"), globals_)
        forward = types.MethodType(globals_["forward"], self)
        self.__dict__["forward"] = forward
        return forward

    def __getattr__(self, name):
        # Only reached when normal lookup fails: `forward` before its first use.
        if name == "forward" and "_graph" in self.__dict__:
            return self._compile_forward()
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def print_readable(self, print_output=True):
        # torch's form: every value annotated with its type string ("f32[s77, 3]", "Sym(s77)").
        code = self.graph.python_code("self", verbose=True).src
        text = f"class {self._class_name}:\n" + "\n".join(
            "    " + line if line else line for line in code.strip("\n").splitlines())
        if print_output:
            print(text)
        return text

    def __repr__(self):
        return f"{self._class_name}()\n{self.code}"

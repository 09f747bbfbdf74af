"""Graph and Node: thin Python faces of the C++ IR (ignis._C.GraphBase/NodeBase)."""
import builtins
import contextlib
import keyword
from collections import namedtuple
from collections.abc import MutableMapping

from .. import _C

# What torch.fx's passes.shape_prop.TensorMetadata holds, minus what ignis
# does not track (requires_grad, memory format, quantisation).
TensorMetadata = namedtuple("TensorMetadata", ["shape", "dtype", "stride", "device"])

# Generated code may not shadow these (node names get a "_1" suffix instead).
_C._graph_add_reserved_names(
    list(keyword.kwlist) + list(builtins.__dict__)
    + ["inf", "nan", "NoneType", "torch", "ignis", "device"])


class PythonCode:
    """Source of a generated `forward` and the globals it needs."""

    def __init__(self, src, globals):
        self.src = src
        self.globals = globals


_FAKE_MODE = None


def _fake_values(tensor_meta):
    """Fake tensors with the recorded shapes, strides, dtypes and devices."""
    global _FAKE_MODE
    import ignis
    from .._subclasses import FakeTensorMode
    if _FAKE_MODE is None:
        _FAKE_MODE = FakeTensorMode()
    metas, is_tuple = tensor_meta
    with _FAKE_MODE:
        vals = [ignis.empty_strided(tuple(shape), tuple(stride), dtype=dtype, device=device)
                for shape, dtype, stride, device in metas]
    return tuple(vals) if is_tuple else vals[0]


class NodeMeta(MutableMapping):
    """node.meta: a dict view over the C++ node metadata.

    "tensor_meta" (a TensorMetadata, or a tuple of them for tuple outputs)
    and "source_loc" ("file:line") are typed fields of the C++ node; "val"
    (torch's fake tensor per node) is made from tensor_meta when read; other
    str -> str entries live in its string map (visible to C++ passes);
    anything else stays a Python object. Setting "val" to a tensor (or a
    tuple/list of tensors) also records its tensor_meta.
    """

    __slots__ = ("_node",)

    def __init__(self, node):
        self._node = node

    def __getitem__(self, key):
        n = self._node
        if key == "tensor_meta":
            tm = n._tensor_meta
            if tm is None:
                raise KeyError(key)
            metas = [TensorMetadata(*e) for e in tm[0]]
            return tuple(metas) if tm[1] else metas[0]
        if key == "source_loc":
            loc = n._source_loc
            if loc is None:
                raise KeyError(key)
            return loc
        extra = n._meta_extra
        if key in extra:
            return extra[key]
        pymeta = n._pymeta
        if key == "val" and "val" not in pymeta and n._tensor_meta is not None:
            # torch's graphs carry a fake tensor per node: made from the typed
            # metadata on first use, then kept.
            pymeta["val"] = _fake_values(n._tensor_meta)
        return pymeta[key]

    def __setitem__(self, key, value):
        n = self._node
        if key == "tensor_meta":
            n._tensor_meta = value
            return
        if key == "source_loc":
            n._source_loc = value
            return
        if isinstance(key, str) and isinstance(value, str):
            n._pymeta.pop(key, None)
            n._set_meta_extra(key, value)
            return
        if isinstance(key, str):
            n._set_meta_extra(key, None)
        n._pymeta[key] = value
        if key == "val":
            from .._tensor import Tensor
            if isinstance(value, Tensor):
                n._tensor_meta = value
            elif isinstance(value, (tuple, list)) and value and all(
                    isinstance(v, Tensor) for v in value):
                n._tensor_meta = tuple(value)

    def __delitem__(self, key):
        n = self._node
        if key not in self:
            raise KeyError(key)
        if key == "tensor_meta":
            n._tensor_meta = None
        elif key == "source_loc":
            n._source_loc = None
        elif isinstance(key, str) and n._set_meta_extra(key, None):
            pass
        else:
            del n._pymeta[key]

    def _keys(self):
        n = self._node
        keys = []
        if n._tensor_meta is not None:
            keys.append("tensor_meta")
        if n._source_loc is not None:
            keys.append("source_loc")
        keys.extend(n._meta_extra)
        keys.extend(n._pymeta)
        return keys

    def __iter__(self):
        return iter(self._keys())

    def __len__(self):
        return len(self._keys())

    def __contains__(self, key):
        try:
            self[key]
            return True
        except KeyError:
            return False

    def __repr__(self):
        return repr(dict(self.items()))


class Node(_C.NodeBase):
    """One operation of a Graph (see torch.fx.Node). Created by Graph only."""

    @property
    def meta(self):
        return NodeMeta(self)

    @property
    def stack_trace(self):
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, value):
        self.meta["stack_trace"] = value

    def update_kwarg(self, key, arg):
        kwargs = dict(self.kwargs)
        kwargs[key] = arg
        self.kwargs = kwargs


_C._set_node_class(Node)


def map_arg(a, fn):
    """Applies fn to each Node in a nested structure of args (torch.fx.map_arg)."""
    if isinstance(a, _C.NodeBase):
        return fn(a)
    if isinstance(a, tuple):
        t = tuple(map_arg(e, fn) for e in a)
        return type(a)(*t) if hasattr(a, "_fields") else t
    if isinstance(a, list):
        return [map_arg(e, fn) for e in a]
    if isinstance(a, dict):
        return {k: map_arg(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_arg(a.start, fn), map_arg(a.stop, fn), map_arg(a.step, fn))
    return a


_EMPTY = object()


class Graph(_C.GraphBase):
    """A torch.fx-style graph. Structure, printing, passes and hashing run in C++."""

    def __init__(self, owning_module=None):
        super().__init__()
        self.owning_module = owning_module

    # --- building (torch.fx names) -------------------------------------------------------
    def placeholder(self, name, type_expr=None, default_value=_EMPTY):
        args = () if default_value is _EMPTY else (default_value,)
        return self.create_node("placeholder", name, args, None, None, type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, None, None, None, type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs, None, type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, None, type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, None, type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), None, None, type_expr)

    @contextlib.contextmanager
    def inserting_before(self, n=None):
        prev = self._set_insert_point(n)
        try:
            yield
        finally:
            self._set_insert_point(prev)

    @contextlib.contextmanager
    def inserting_after(self, n=None):
        if n is None:  # torch.fx: at the beginning
            nodes = self.nodes
            target = nodes[0] if nodes else None
        else:
            target = n.next
        prev = self._set_insert_point(target)
        try:
            yield
        finally:
            self._set_insert_point(prev)

    def node_copy(self, node, arg_transform=lambda x: x):
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        n = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        # The C++ metadata whole (tensor_meta would lose its symbolic sizes and
        # a Sym placeholder its symbol through meta[...]), then the Python entries
        # as they are ("val" set through meta would overwrite tensor_meta).
        n._copy_meta_from(node)
        n._pymeta.update(node._pymeta)
        return n

    def graph_copy(self, g, val_map=None):
        """Copies g's nodes (not its output) into self; returns g's output value.

        val_map maps nodes of g to values in self; it is filled as nodes are
        copied, and nodes already in it are not copied (torch.fx semantics).
        """
        val_map = {} if val_map is None else val_map
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                return map_arg(node.args[0], lambda n: val_map[n])
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def find_nodes(self, *, op, target=None):
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # --- printing ------------------------------------------------------------------------
    def print_tabular(self):
        """Prints opcode/name/target/args/kwargs as torch.fx does (tabulate "simple")."""
        print(self._tabular())

    def python_code(self, root_module="self", *, module_alias="ignis", verbose=False):
        src, globals_ = self._python_code(root_module, module_alias, verbose)
        return PythonCode(src, globals_)

    def __repr__(self):
        return str(self)

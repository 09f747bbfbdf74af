"""Data-dependent sizes (docs/dynamic_shapes.md "Data-dependent sizes").

Capture records x[mask], masked_select, nonzero, where(cond), unique and
unique_consecutive with an
unbacked size u0 (src/ignis/capture/tracer_unbacked.cpp) instead of
breaking the graph. Two Python pieces of that live here:

- the fakes the tracer makes for such results (`fake_*`, called under its
  fake mode with `n`, the placeholder count);
- StagedGraph: how a backend whose stages are concrete (AOT, the compiler)
  runs a graph holding such ops.
"""
import operator

from . import fx
from .fx.graph import map_arg


# --- fakes -----------------------------------------------------------------------------------
def _fake_rows(n, device):
    from . import empty, int64
    return empty(n, dtype=int64, device=device)


def fake_masked_rows(x, mask, n, lead=0):
    """x[mask] (x[:, mask] with lead 1, ...): x's first `lead` dims, n rows,
    x's dims after the mask's; through index_select so that the fake carries
    x's autograd history (requires_grad, grad_fn)."""
    shape = tuple(x.shape)
    flat = x.reshape(shape[:lead] + (-1,) + shape[lead + mask.dim():])
    return flat.index_select(lead, _fake_rows(n, x.device))


def fake_masked_select(x, mask, n):
    from . import broadcast_shapes
    shape = broadcast_shapes(x.shape, mask.shape)
    return x.expand(shape).reshape(-1).index_select(0, _fake_rows(n, x.device))


def fake_nonzero(x, n, as_tuple):
    """nonzero(x): [n, x.dim()] int64; as_tuple: its columns, as eager gives them."""
    from . import empty, int64
    idx = empty((n, x.dim()), dtype=int64, device=x.device)
    return tuple(idx.unbind(1)) if as_tuple else idx


def fake_unique(x, n, return_inverse, return_counts, dim=None):
    """unique(x) / unique_consecutive(x): n values (through index_select, as
    eager's composite gives them x's history), x-shaped inverse, n counts;
    with `dim`, n slices along it and an inverse of x.shape[dim]."""
    from . import empty, int64
    from .functional import _unique_result
    if dim is None:
        values = x.reshape(-1).index_select(0, _fake_rows(n, x.device))
        inverse = empty(tuple(x.shape), dtype=int64, device=x.device)
    else:
        values = x.index_select(dim, _fake_rows(n, x.device))
        inverse = empty(x.shape[dim], dtype=int64, device=x.device)
    counts = empty(n, dtype=int64, device=x.device)
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


# --- masked reductions: no count needed ------------------------------------------------------
# Note [Masked reductions without a count]
# The commonest data-dependent size in training code is a masked loss:
# (d[keep] ** 2).mean(), x[x > 0].sum(); and masked mean pooling,
# h[mask].mean(0) over the valid rows. When the selected elements only pass
# through elementwise ops of themselves (and Python numbers) into a full sum
# or mean (over the rows, for a row mask), the count never matters: the sum
# over the selected elements is the sum over all of
# where(keep, f(where(keep, x, 0)), 0) (over the mask's dims, the mask
# broadcast over the rest), and the mean that sum over keep.sum(). So the concrete backends get that graph instead: no
# data-dependent op left, one compiled graph, fused, and no host read of the
# count. The inner where keeps gradients exact: at unselected positions f
# sees 0, and whatever f'(0) is (inf for sqrt or log), the inner where's
# backward drops it, as eager's index backward never reaches them. The
# results differ from eager's only in summation order.
_ARITH = {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.neg,
          operator.abs, operator.pos}


def _elementwise_of(node, cur):
    """Whether `node` is an elementwise op whose only tensor operand is `cur`."""
    if node.kwargs or any(isinstance(a, fx.Node) and a is not cur for a in node.args):
        return False
    if not node.args or node.args[0] is not cur and not (node.target in _ARITH and cur in node.args):
        return False
    if node.op == "call_function":
        target = node.target
    elif node.op == "call_method":
        from . import ops
        target = getattr(ops, node.target, None)
    else:
        return False
    if target in _ARITH:
        return True
    name = getattr(target, "__name__", "")
    return bool(getattr(target, "scalar_name", None)) and not name.endswith("_") and \
        getattr(target, "determinism", "deterministic") == "deterministic"


def _reduction(node, cur, rows):
    """"sum" or "mean" when `node` reduces `cur` as the fold can: all of it
    (a selection of elements), or its first dim (a selection of rows:
    x[mask].sum(0), masked mean pooling); else None."""
    import ignis
    if node.args[:1] != (cur,):
        return None
    if node.op == "call_method" and node.target in ("sum", "mean"):
        kind = node.target
    elif node.op == "call_function" and node.target in (ignis.sum, ignis.mean):
        kind = node.target.__name__
    else:
        return None
    rest, kw = node.args[1:], dict(node.kwargs)
    if kw.pop("keepdim", False) is not False:
        return None
    dim = kw.pop("dim", rest[0] if rest else None)
    if kw or len(rest) > 1 or (rest and "dim" in node.kwargs):
        return None
    if not rows:
        return kind if dim is None else None
    if dim in (0, (0,), [0]) or (dim is None and kind == "sum"):
        return kind
    return None


def _masked_selection(node):
    """(x, mask, rows) of x[mask] / masked_select(x, mask) where the mask is
    x's shape (rows False) or the shape of x's first dims (x[mask] only,
    rows True), else None."""
    if len(node.args) != 2 or node.kwargs:
        return None
    x, mask = node.args
    if not isinstance(x, fx.Node) or not isinstance(mask, fx.Node):
        return None
    is_index = node.op == "call_function" and node.target is operator.getitem
    is_select = getattr(node.target, "__name__", node.target) == "masked_select"
    if not (is_index or is_select):
        return None
    try:
        xm, mm = x.meta["tensor_meta"], mask.meta["tensor_meta"]
    except KeyError:
        return None
    xs, ms = tuple(xm.shape), tuple(mm.shape)
    if str(mm.dtype).split(".")[-1] != "bool" or not ms:
        return None
    if xs == ms:
        return x, mask, False
    if is_index and len(ms) < len(xs) and xs[:len(ms)] == ms:
        return x, mask, True
    return None


def fold_masked_reductions(gm):
    """gm with each masked reduction of Note [Masked reductions without a
    count] written without its data-dependent op; gm itself when none is."""
    import ignis
    plans = {}  # the data-dependent node -> (x, mask, rows, chain, terminal, kind)
    for n in gm.graph.nodes:
        if "unbacked" not in n.meta:
            continue
        sel = _masked_selection(n)
        if sel is None:
            continue
        chain, cur = [], n
        while len(cur.users) == 1:
            u = next(iter(cur.users))
            kind = _reduction(u, cur, sel[2])
            if kind:
                dtype = str(cur.meta["tensor_meta"].dtype) if "tensor_meta" in cur.meta else ""
                if kind == "mean" and not any(f in dtype for f in ("float", "half")):
                    break  # mean of integers raises in eager: left to do so
                plans[n] = (*sel, chain, u, kind)
                break
            if not _elementwise_of(u, cur):
                break
            chain.append(u)
            cur = u
    if not plans:
        return gm
    from ._compile import _dynamic_log
    g = fx.Graph()
    val_map = {}
    replaced = {}
    for n in gm.graph.nodes:
        if n in plans:
            x, mask, rows, chain, terminal, kind = plans[n]
            # a row mask broadcast over x's other dims
            m = val_map[mask]
            extra = len(x.meta["tensor_meta"].shape) - len(mask.meta["tensor_meta"].shape)
            for _ in range(extra):
                m = g.call_method("unsqueeze", (m, -1))
            val_map[n] = g.call_function(ignis.where, (m, val_map[x], 0))
            replaced[terminal] = (m, val_map[mask], len(mask.meta["tensor_meta"].shape),
                                  chain[-1] if chain else n, kind, rows and
                                  (terminal.args[1:] or "dim" in terminal.kwargs))
            _dynamic_log(f"{n.name}: a masked {kind} without its count (Note [Masked reductions "
                         "without a count])")
            continue
        if n in replaced:
            m, mask, k, last, kind, over_rows = replaced[n]
            kept = g.call_function(ignis.where, (m, val_map[last], 0))
            total = g.call_method("sum", (kept, tuple(range(k)))) if over_rows \
                else g.call_method("sum", (kept,))
            if kind == "mean":
                total = g.call_function(operator.truediv, (total, g.call_method("sum", (mask,))))
            val_map[n] = total
            continue
        if n.op == "output":
            g.output(fx.graph.map_arg(n.args[0], lambda a: val_map[a]))
            continue
        val_map[n] = g.node_copy(n, lambda a: val_map[a])
        if n.op != "placeholder" and "tensor_meta" in val_map[n].meta:
            del val_map[n].meta["tensor_meta"]  # the shapes after the mask changed
    return fx.GraphModule(gm, g)


# --- an int item as a tensor operand ---------------------------------------------------------
# Note [An item as a tensor operand]
# `n = mask.sum().item(); y = x * n` captures n as an unbacked int u0 (Note
# [Tensor.item() as an unbacked int]). A concrete backend splits the graph
# at the item (Note [Splitting at data-dependent sizes]) and compiles the
# stage after it per value of u0, as it would a size: a count that changes
# every call never runs compiled. Where u0 is only an operand of tensor
# arithmetic, the one-element tensor it came from serves as well: `x * n`
# and `x * t` give the same values and, with t a 0-dim int64 tensor and x a
# tensor with dims, the same dtype (a Python int and a 0-dim integer tensor
# rank alike in type promotion: x's dtype within its category, int64 for a
# bool x, the default float for true division of integers). So such uses
# read `t` -- copied where the item was taken, so that a later in-place
# write to the source does not reach them -- and an item left with no use
# goes, with it the stage boundary: the graph compiles once for every count.
# A 0-dim operand of a narrower integer dtype is the exception (two 0-dim
# tensors promote by dtype: int32 with int64 gives int64, while int32 with a
# Python int stays int32): that use keeps the int.
_ITEM_OPERAND_OPS = {operator.add, operator.sub, operator.mul, operator.truediv,
                     operator.floordiv}
_NARROW_INTS = ("int8", "int16", "int32", "uint8")


def _operand_takes_tensor(use, item):
    """Whether `use` (a user of `item`) is tensor arithmetic that gives the
    same result with a 0-dim int64 tensor in item's place."""
    if use.op != "call_function" or use.target not in _ITEM_OPERAND_OPS or use.kwargs or \
            len(use.args) != 2:
        return False
    other = use.args[1] if use.args[0] is item else use.args[0]
    if other is item or not isinstance(other, fx.Node) or "tensor_meta" not in other.meta:
        return False
    meta = other.meta["tensor_meta"]
    return len(meta.shape) > 0 or not str(meta.dtype).endswith(_NARROW_INTS)


def items_as_tensors(gm):
    """gm with each int item used as a tensor operand read as a 0-dim int64
    tensor instead (Note [An item as a tensor operand]); gm itself when
    there is none."""
    import ignis
    plans = {}
    for n in gm.graph.nodes:
        if n.op == "call_method" and n.target == "item" and "unbacked" in n.meta and \
                len(n.args) == 1 and isinstance(n.args[0], fx.Node) and \
                "tensor_meta" in n.args[0].meta:
            uses = [u for u in n.users if _operand_takes_tensor(u, n)]
            if uses:
                plans[n] = uses
    if not plans:
        return gm
    from ._compile import _dynamic_log
    g = fx.Graph()
    val_map = {}
    tensors = {}  # item node -> its 0-dim int64 copy
    for n in gm.graph.nodes:
        if n.op == "output":
            g.output(map_arg(n.args[0], lambda a: val_map[a]))
            continue
        val_map[n] = g.node_copy(n, lambda a: val_map[a])
        if n in plans:
            src = val_map[n.args[0]]
            meta = n.args[0].meta["tensor_meta"]
            if len(meta.shape) > 0:
                src = g.call_method("reshape", (src, ()))
            tensors[n] = g.call_method("to", (src, ignis.int64), {"copy": True})
            keep = len(n.users) - len(plans[n])
            _dynamic_log(f"{n.name}: {len(plans[n])} use(s) as a tensor operand read a 0-dim "
                         f"tensor (Note [An item as a tensor operand])"
                         + ("" if keep else "; the item goes"))
    # the uses read the tensor
    for item, uses in plans.items():
        t = tensors[item]
        for u in uses:
            val_map[u].replace_input_with(val_map[item], t)
    for item in plans:
        if not val_map[item].users:
            g.erase_node(val_map[item])
    return fx.GraphModule(gm, g)


# --- running a graph with data-dependent ops on a concrete backend ---------------------------
def _data_dependent(node, dd):
    """Whether `node` makes a data-dependent size (or reads a tuple that one
    made), or checks one (a runtime check of ignis._check): such nodes run
    eagerly between the compiled stages."""
    if node.op not in ("call_function", "call_method"):
        return False
    if "unbacked" in node.meta or "runtime_check" in node.meta:
        return True
    ins = node.all_input_nodes
    return node.target is operator.getitem and bool(ins) and ins[0] in dd


def has_unbacked(gm):
    return any("unbacked" in n.meta for n in gm.graph.nodes)


# Global state the graph switches (grad mode, autocast): a stage boundary
# inside such a region would hand the next stage a mode it does not set.
_MODE_SWITCHES = ("_set_grad_enabled", "_enter_autocast", "_exit_autocast")


def _switches_modes(gm):
    return any(n.op == "call_function" and getattr(n.target, "__name__", "") in _MODE_SWITCHES
               for n in gm.graph.nodes)


def _key_of(v):
    """What a stage's compiled form depends on in one input: a tensor's sizes
    and strides, an int's value."""
    from ._tensor import Tensor
    if isinstance(v, Tensor):
        return (tuple(v.shape), v.stride())
    if v is None or type(v) in (int, float, bool):
        return v
    raise TypeError(type(v).__name__)


class _Stage:
    """Nodes of the captured graph that run together: `gm` takes the values
    named `inputs` and returns those named `outputs`. A compiled stage
    (`cache` set) compiles per key of its inputs' sizes; the other kind runs
    its nodes as they are (the data-dependent ops, eagerly)."""

    def __init__(self, gm, inputs, outputs, cache=None):
        self.gm = gm
        self.inputs = inputs
        self.outputs = outputs
        self.cache = cache


class StagedGraph:
    """A captured graph holding data-dependent ops, for a concrete backend.

    Note [Splitting at data-dependent sizes]
    AOT and the compiler need every size when they trace; u0 is known only
    once the op that makes it has run. So the graph is cut, in its own
    order, into stages: the runs of nodes between data-dependent ops are
    compiled, each per key of its inputs' sizes and strides (a SizeCache,
    under Note [Compiling a size on its second call]: a count that never
    comes back runs that stage eagerly), and the data-dependent ops run
    eagerly between them, as the graph's own code. Program order is kept, so
    in-place writes and reads stay in their order; autograd flows through
    the stages as through graph breaks, but capture made one graph: one
    guard check, no resume functions, no break to report. A graph that
    switches grad mode or autocast runs as captured (eagerly) instead.
    """

    def __init__(self, gm, example_inputs, backend, kwargs):
        from ._compile import _dynamic_log
        self._gm = gm
        self._stages = None
        if _switches_modes(gm):
            _dynamic_log("a graph with data-dependent sizes that switches grad mode or "
                         "autocast runs as captured (its ops eagerly)")
            return
        self._backend = backend
        self._kwargs = kwargs
        self._stages = self._split(gm)
        self._placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
        out = [n for n in gm.graph.nodes if n.op == "output"][0]
        self._output = out.args[0]
        _dynamic_log(f"data-dependent sizes: the graph runs in {len(self._stages)} stages, "
                     f"{sum(s.cache is not None for s in self._stages)} of them compiled")

    def _split(self, gm):
        nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]
        dd = set()
        runs = []  # [(is_data_dependent, [nodes])], in program order
        for n in nodes:
            d = _data_dependent(n, dd)
            if d:
                dd.add(n)
            if runs and runs[-1][0] == d:
                runs[-1][1].append(n)
            else:
                runs.append((d, [n]))
        # Where each value is used: by a later run, or by the graph's output.
        run_of = {n: i for i, (_, ns) in enumerate(runs) for n in ns}
        out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
        stages = []
        for i, (is_dd, ns) in enumerate(runs):
            mine = set(ns)
            inputs = []
            for n in ns:
                for a in n.all_input_nodes:
                    if a not in mine and a not in inputs:
                        inputs.append(a)
            outputs = [n for n in ns if any(
                u is out_node or run_of.get(u, i) > i for u in n.users)]
            sub = self._subgraph(gm, ns, inputs, outputs)
            cache = None if is_dd else self._cache_for(sub, [a.name for a in inputs], i)
            stages.append(_Stage(sub, [a.name for a in inputs], [n.name for n in outputs], cache))
        return stages

    @staticmethod
    def _subgraph(gm, ns, inputs, outputs):
        g = fx.Graph()
        val_map = {}
        for a in inputs:
            val_map[a] = g.placeholder(a.name, type_expr=a.type)
        for n in ns:
            val_map[n] = g.node_copy(n, lambda x: val_map[x])
        g.output(tuple(val_map[n] for n in outputs))
        return fx.GraphModule(gm, g)

    def _cache_for(self, sub, names, index):
        from ._compile import SizeCache, _with_sizes
        backend, kwargs = self._backend, self._kwargs

        def compile(key, args):
            int_at = [i for i, a in enumerate(args) if type(a) is int]
            tensor_at = [i for i in range(len(args)) if type(args[i]) is not int]
            concrete = _with_sizes(sub, int_at, [args[i] for i in int_at])
            fn = backend(concrete, [args[i] for i in tensor_at], **kwargs)
            return lambda *a: fn(*[a[i] for i in tensor_at])

        def describe(key):
            return f"stage {index}: " + ", ".join(f"{n}={k}" for n, k in zip(names, key))
        return SizeCache(compile, describe)

    def __call__(self, *args):
        if self._stages is None:
            return self._gm(*args)
        env = dict(zip(self._placeholders, args))
        for st in self._stages:
            vals = [env[n] for n in st.inputs]
            fn = None
            if st.cache is not None:
                try:
                    key = tuple(_key_of(v) for v in vals)
                except TypeError:
                    key = None
                if key is not None:
                    fn = st.cache.lookup(key, vals)
            outs = fn(*vals) if fn is not None else st.gm(*vals)
            for name, v in zip(st.outputs, outs):
                env[name] = v
        return map_arg(self._output, lambda n: env[n.name])

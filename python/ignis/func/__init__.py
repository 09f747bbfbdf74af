"""ignis.func: function transforms (torch.func's names).

grad, vjp, jacrev, jacfwd, hessian and jvp are written over ignis's reverse-
mode autograd (ignis.autograd.grad with create_graph=True, so that the
transforms nest: the gradient of a gradient is a Hessian). vmap calls the
function once per batch element and stacks the results (ignis has no
batching rules): torch's results, not its speed.
"""
import functools

__all__ = ["functionalize", "functional_call", "grad", "grad_and_value", "vjp", "jvp", "jacrev",
           "jacfwd", "hessian", "vmap"]


def _ig():
    import ignis
    return ignis


def functionalize(func, *, remove="mutations"):
    """A function that computes what `func` computes, whose traces hold no
    mutations (torch.func.functionalize).

    Traced by make_fx (or AOT), in-place ops become functional ops, mutations
    through views are replayed on their base, and mutated inputs are written
    back once at the end (one copy_ each). Called eagerly it runs `func` as
    it is: the values and the inputs' mutations are the same.
    """
    if remove not in ("mutations", "mutations_and_views"):
        raise ValueError(f"functionalize: remove must be 'mutations' or 'mutations_and_views', "
                         f"got {remove!r}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    wrapper._ignis_functionalize = True
    return wrapper


# ---- pytrees: nested tuples, lists and dicts of leaves ---------------------------------------
def _flatten(tree):
    """(leaves, spec): the leaves in order and what rebuilds the tree from them."""
    if isinstance(tree, (tuple, list)) and not _is_namedtuple(tree):
        parts = [_flatten(x) for x in tree]
        leaves = [leaf for p in parts for leaf in p[0]]
        return leaves, (type(tree), None, [p[1] for p in parts])
    if _is_namedtuple(tree):
        parts = [_flatten(x) for x in tree]
        leaves = [leaf for p in parts for leaf in p[0]]
        return leaves, (type(tree), "namedtuple", [p[1] for p in parts])
    if isinstance(tree, dict):
        keys = list(tree.keys())
        parts = [_flatten(tree[k]) for k in keys]
        leaves = [leaf for p in parts for leaf in p[0]]
        return leaves, (dict, keys, [p[1] for p in parts])
    return [tree], None


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _unflatten(leaves, spec):
    tree, _ = _build(list(leaves), spec)
    return tree


def _build(leaves, spec):
    if spec is None:
        return leaves[0], leaves[1:]
    kind, meta, children = spec
    items = []
    for child in children:
        item, leaves = _build(leaves, child)
        items.append(item)
    if kind is dict:
        return dict(zip(meta, items)), leaves
    if meta == "namedtuple":
        return kind(*items), leaves
    return kind(items), leaves


def _broadcast_prefix(prefix, tree, what):
    """The leaves of `prefix` (in_dims, out_dims) spread over `tree`'s leaves:
    a leaf of prefix applies to the whole subtree under it."""
    if isinstance(prefix, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(prefix) != len(tree):
            raise ValueError(f"{what} is not compatible with the structure of the inputs")
        return [d for p, t in zip(prefix, tree) for d in _broadcast_prefix(p, t, what)]
    if isinstance(prefix, dict) and isinstance(tree, dict):
        if set(prefix) != set(tree):
            raise ValueError(f"{what} is not compatible with the structure of the inputs")
        return [d for k in tree for d in _broadcast_prefix(prefix[k], tree[k], what)]
    if isinstance(prefix, (tuple, list, dict)):
        raise ValueError(f"{what} is not compatible with the structure of the inputs")
    return [prefix] * len(_flatten(tree)[0])


# ---- functional_call ------------------------------------------------------------------------
def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """module(*args, **kwargs) with the named parameters and buffers replaced
    by the given tensors for this one call (torch.func.functional_call);
    the module's own are back in place afterwards, also when the call raises.

    parameter_and_buffer_dicts: a dict of name -> tensor, or several dicts
    (a name in more than one is an error). tie_weights: a tensor given for
    one of several names that share a parameter (tied weights) replaces it
    under all of them. strict: the names given must be exactly the module's
    parameters and buffers."""
    if isinstance(parameter_and_buffer_dicts, dict):
        given = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        given = {}
        for d in parameter_and_buffer_dicts:
            repeated = set(given) & set(d)
            if repeated:
                raise ValueError(f"{sorted(repeated)} appeared in multiple dictionaries; "
                                 "behavior of functional call is ambiguous")
            given.update(d)
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    kwargs = {} if kwargs is None else kwargs

    own = list(module.named_parameters(remove_duplicate=False)) + \
        list(module.named_buffers(remove_duplicate=False))
    if strict:
        missing = sorted(n for n, _ in own if n not in given)
        unexpected = sorted(n for n in given if n not in dict(own))
        if missing or unexpected:
            msgs = []
            if unexpected:
                msgs.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
            if missing:
                msgs.append("Missing key(s): " + ", ".join(repr(k) for k in missing) + ".")
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               + "\n\t".join(msgs))
    if tie_weights:
        # Names sharing one tensor: a value given for one of them stands for all.
        by_tensor = {}
        for name, t in own:
            by_tensor.setdefault(id(t), []).append(name)
        for names in by_tensor.values():
            values = [given[n] for n in names if n in given]
            if len(names) > 1 and values:
                if any(v is not values[0] for v in values[1:]):
                    raise ValueError(f"functional_call got multiple values for keys "
                                     f"{[n for n in names if n in given]}, which are tied. "
                                     "Consider using tie_weights=False")
                for n in names:
                    given.setdefault(n, values[0])

    swapped = []  # (owner, name, where it was: "_parameters" / "_buffers" / None, old value)
    try:
        for name, value in given.items():
            owner, _, attr = _owner_of(module, name)
            if attr in owner._parameters:
                swapped.append((owner, attr, "_parameters", owner._parameters[attr]))
                owner._parameters[attr] = value
            elif attr in owner._buffers:
                swapped.append((owner, attr, "_buffers", owner._buffers[attr]))
                owner._buffers[attr] = value
            else:
                had = attr in owner.__dict__
                swapped.append((owner, attr, None, owner.__dict__.get(attr) if had else _MISSING))
                object.__setattr__(owner, attr, value)
        return module(*args, **kwargs)
    finally:
        for owner, attr, where, old in reversed(swapped):
            if where is not None:
                getattr(owner, where)[attr] = old
            elif old is _MISSING:
                object.__delattr__(owner, attr)
            else:
                object.__setattr__(owner, attr, old)


_MISSING = object()


def _owner_of(module, name):
    """(the submodule holding `name`'s last part, its path, that part)."""
    path, _, attr = name.rpartition(".")
    owner = module.get_submodule(path) if path else module
    return owner, path, attr


# ---- reverse-mode transforms --------------------------------------------------------------
# How many transforms are running: the outermost returns its results cut
# from the graph (unless the caller's inputs require grad), inner ones keep
# them differentiable for the transform around them.
_DEPTH = [0]


class _Level:
    def __enter__(self):
        _DEPTH[0] += 1

    def __exit__(self, *exc):
        _DEPTH[0] -= 1


def _trackable(x):
    """x as an input to differentiate with respect to: a fresh leaf when x is
    not part of a graph; otherwise an alias of x (so a transform around this
    one still sees the dependence on x)."""
    ig = _ig()
    if not isinstance(x, ig.Tensor):
        raise ValueError(f"Expected the arguments to differentiate to be Tensors, got "
                         f"{type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True)


def _finish(tree, keep_graph):
    if keep_graph:
        return tree
    ig = _ig()
    leaves, spec = _flatten(tree)
    return _unflatten([x.detach() if isinstance(x, ig.Tensor) else x for x in leaves], spec)


def _argnums_tuple(argnums, nargs, name):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not isinstance(argnums, int) and (not isinstance(argnums, tuple) or len(nums) == 0):
        raise RuntimeError(f"{name}: argnums must be int or Tuple[int, ...], got: "
                           f"{type(argnums)}")
    for a in nums:
        if not isinstance(a, int) or not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
    return tuple(a % nargs for a in nums)


def _prepare(args, argnums, name):
    """args with the differentiated ones replaced by trackable tensors;
    (new args, those pytrees' leaves per argnum, their specs, whether an
    input was already part of a graph)."""
    nums = _argnums_tuple(argnums, len(args), name)
    args = list(args)
    leaves_per, specs, tracked = [], [], False
    for a in nums:
        leaves, spec = _flatten(args[a])
        tracked = tracked or any(getattr(x, "requires_grad", False) for x in leaves)
        new = [_trackable(x) for x in leaves]
        args[a] = _unflatten(new, spec)
        leaves_per.append(new)
        specs.append(spec)
    return tuple(args), nums, leaves_per, specs, tracked


def _grads(outputs, inputs, grad_outputs=None):
    """d outputs / d inputs (grad_outputs-weighted), zeros for inputs the
    outputs do not depend on; differentiable again."""
    ig = _ig()
    outs = [o for o in outputs]
    if grad_outputs is not None:
        pairs = [(o, g) for o, g in zip(outs, grad_outputs) if o.requires_grad]
        outs, grad_outputs = [p[0] for p in pairs], [p[1] for p in pairs]
    else:
        outs = [o for o in outs if o.requires_grad]
    if not outs:
        return [ig.zeros_like(x) for x in inputs]
    gs = ig.autograd.grad(outs, inputs, grad_outputs=grad_outputs, retain_graph=True,
                          create_graph=True, allow_unused=True)
    return [ig.zeros_like(x) if g is None else g for x, g in zip(inputs, gs)]


def _split_aux(out, has_aux, name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{name}(f, ...)(*args): output of function f should be a tuple: "
                           "(output, aux) if has_aux is True")
    return out


def grad_and_value(func, argnums=0, has_aux=False):
    """torch.func.grad_and_value: a function returning (gradient of func's
    scalar output with respect to the `argnums` arguments, the output); with
    has_aux, func returns (output, aux) and the result is (grad, (output, aux))."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        ig = _ig()
        with _Level(), ig.enable_grad():
            new_args, nums, leaves_per, specs, tracked = _prepare(args, argnums,
                                                                  "grad_and_value")
            out, aux = _split_aux(func(*new_args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(out, ig.Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {out.dim()} dims. Maybe you "
                                   "wanted to use the vjp or jacrev APIs instead?")
            flat = [x for leaves in leaves_per for x in leaves]
            gs = _grads([out], flat)
        keep = tracked or _DEPTH[0] > 0
        per_arg, i = [], 0
        for leaves, spec in zip(leaves_per, specs):
            per_arg.append(_unflatten(gs[i:i + len(leaves)], spec))
            i += len(leaves)
        g = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        g, out = _finish(g, keep), _finish(out, keep)
        if has_aux:
            return g, (out, _finish(aux, keep))
        return g, out
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """torch.func.grad: a function returning the gradient of func's scalar
    output with respect to the `argnums` arguments (a pytree of them, or a
    tuple for a tuple argnums); with has_aux, (gradient, aux)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """torch.func.vjp: (func(*primals), vjp_fn[, aux]); vjp_fn(cotangents),
    cotangents shaped as the output, gives the vector-Jacobian products with
    respect to each primal, a tuple."""
    ig = _ig()
    with _Level(), ig.enable_grad():
        new_args, _, leaves_per, specs, tracked = _prepare(
            primals, tuple(range(len(primals))), "vjp") if primals else ((), (), [], [], False)
        out, aux = _split_aux(func(*new_args), has_aux, "vjp")
    out_leaves, out_spec = _flatten(out)
    for o in out_leaves:
        if not isinstance(o, ig.Tensor):
            raise RuntimeError(f"vjp(f, *primals): Expected f(*primals) to return only tensors, "
                               f"got unsupported type {type(o)}")
    depth_at_call = _DEPTH[0]

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        ct_leaves, ct_spec = _flatten(cotangents)
        if ct_spec != out_spec and not (out_spec is None and len(ct_leaves) == 1):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree "
                               "structure of outputs to the function")
        for o, c in zip(out_leaves, ct_leaves):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of "
                                   f"{tuple(c.shape)} and output[0] has a shape of "
                                   f"{tuple(o.shape)}.")
        with _Level(), ig.enable_grad():
            flat = [x for leaves in leaves_per for x in leaves]
            gs = _grads(out_leaves, flat, ct_leaves)
        keep = tracked or _DEPTH[0] > 0 or depth_at_call > 0 or any(
            getattr(c, "requires_grad", False) for c in ct_leaves)
        per_arg, i = [], 0
        for leaves, spec in zip(leaves_per, specs):
            per_arg.append(_finish(_unflatten(gs[i:i + len(leaves)], spec), keep))
            i += len(leaves)
        return tuple(per_arg)

    keep = tracked or _DEPTH[0] > 0
    out = _finish(out, keep)
    if has_aux:
        return out, vjp_fn, _finish(aux, keep)
    return out, vjp_fn


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """torch.func.jacrev: the Jacobian of func with respect to the `argnums`
    arguments, one row (one output element) at a time by reverse mode. For
    an output of shape O and an input of shape I, a tensor of shape O + I;
    pytrees of outputs and inputs give the same nesting as torch."""
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(func, argnums, has_aux, "jacrev")


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """torch.func.jacfwd: the same Jacobian as jacrev. ignis has no forward-
    mode autograd, so it is computed the same way (reverse mode, row by
    row): the values are forward mode's, the cost is per output element."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    return _jacobian(func, argnums, has_aux, "jacfwd")


def _jacobian(func, argnums, has_aux, name):
    @functools.wraps(func)
    def wrapper(*args):
        ig = _ig()
        with _Level(), ig.enable_grad():
            new_args, nums, leaves_per, specs, tracked = _prepare(args, argnums, name)
            out, aux = _split_aux(func(*new_args), has_aux, name)
            out_leaves, out_spec = _flatten(out)
            for o in out_leaves:
                if not isinstance(o, ig.Tensor):
                    raise RuntimeError(f"{name}(f, ...)(*args): Expected f(*args) to return only "
                                       f"tensors, got unsupported type {type(o)}")
            flat_in = [x for leaves in leaves_per for x in leaves]
            per_out = []
            for o in out_leaves:
                rows = []
                flat_o = o.reshape(-1)
                for k in range(flat_o.numel()):
                    rows.append(_grads([flat_o[k]], flat_in))
                blocks = []
                for j, x in enumerate(flat_in):
                    shape = tuple(o.shape) + tuple(x.shape)
                    if rows:
                        blocks.append(ig.stack([r[j] for r in rows]).reshape(shape))
                    else:
                        blocks.append(ig.zeros(shape, dtype=x.dtype, device=x.device))
                per_out.append(blocks)
        keep = tracked or _DEPTH[0] > 0
        results = []
        for blocks in per_out:
            per_arg, i = [], 0
            for leaves, spec in zip(leaves_per, specs):
                per_arg.append(_unflatten(blocks[i:i + len(leaves)], spec))
                i += len(leaves)
            results.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = _finish(_unflatten(results, out_spec), keep)
        if has_aux:
            return jac, _finish(aux, keep)
        return jac
    return wrapper


def hessian(func, argnums=0):
    """torch.func.hessian: jacfwd(jacrev(func, argnums), argnums)."""
    return jacfwd(jacrev(func, argnums), argnums)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """torch.func.jvp: (func(*primals), the Jacobian-vector product with
    `tangents`). ignis has no forward mode: J v is computed by the double-vjp
    trick, g(u) = J^T u for a dummy cotangent u, then J v = d(g . v)/du."""
    ig = _ig()
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    if not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected tangents to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    p_leaves, p_spec = _flatten(primals)
    t_leaves, t_spec = _flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the "
                           "same python structure.")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have "
                               f"the same shape, got {tuple(p.shape)} and {tuple(t.shape)}")
    with _Level(), ig.enable_grad():
        new_args, _, leaves_per, specs, tracked = _prepare(
            primals, tuple(range(len(primals))), "jvp")
        out, aux = _split_aux(func(*new_args), has_aux, "jvp")
        out_leaves, out_spec = _flatten(out)
        flat_in = [x for leaves in leaves_per for x in leaves]
        dummies = [ig.zeros_like(o).requires_grad_(True) for o in out_leaves]
        g = _grads(out_leaves, flat_in, dummies)
        pairs = [(gi, ti) for gi, ti in zip(g, t_leaves) if gi.requires_grad]
        if pairs:
            jv = ig.autograd.grad([p[0] for p in pairs], dummies,
                                  grad_outputs=[p[1] for p in pairs], retain_graph=True,
                                  create_graph=True, allow_unused=True)
        else:
            jv = [None] * len(dummies)
        jv = [ig.zeros_like(o) if j is None else j for o, j in zip(out_leaves, jv)]
    keep = tracked or _DEPTH[0] > 0 or any(getattr(t, "requires_grad", False) for t in t_leaves)
    out_t, jv_t = _finish(out, keep), _finish(_unflatten(jv, out_spec), keep)
    if has_aux:
        return out_t, jv_t, _finish(aux, keep)
    return out_t, jv_t


# ---- vmap ------------------------------------------------------------------------------------
def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.vmap / torch.func.vmap: func mapped over a dimension of its
    inputs. ignis has no batching rules: the returned function calls func
    once per batch element, with each mapped input (a pytree leaf whose
    in_dims entry is not None) sliced at that index along its dim, and stacks
    the outputs along out_dims. The results (and the errors for inputs whose
    mapped sizes differ) are torch's; the speed is that of a Python loop.
    Random ops therefore draw differently per element (randomness="different";
    "error" is not enforced and "same" is not supported)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. "
                         f"(got {chunk_size})")
    if not callable(func):
        raise RuntimeError(f"vmap: Expected `func` to be a callable, got {type(func)}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        ig = _ig()
        name = getattr(func, "__name__", repr(func))
        if not isinstance(in_dims, (int, tuple)) and in_dims is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` "
                             f"to be int or a (potentially nested) tuple matching the structure "
                             f"of inputs, got: {type(in_dims)}.")
        if isinstance(in_dims, tuple) and len(in_dims) != len(args):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                             f"compatible with the structure of `inputs`. in_dims has structure "
                             f"{in_dims} but inputs has {len(args)} elements.")
        leaves, spec = _flatten(args)
        dims = _broadcast_prefix(in_dims, args, f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): "
                                                "in_dims")
        sizes, mapped = [], []
        for leaf, d in zip(leaves, dims):
            if d is None:
                mapped.append(None)
                continue
            if not isinstance(d, int):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims must "
                                 f"be int or None, got {d!r}")
            if not isinstance(leaf, ig.Tensor):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                                 f"for an input but the input is of type {type(leaf)}. We cannot "
                                 "vmap over non-Tensor arguments, please use None as the "
                                 "respective in_dim")
            if not -leaf.dim() <= d < leaf.dim():
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                                 f"for some input, but that input is a Tensor of dimensionality "
                                 f"{leaf.dim()} so expected in_dim to satisfy "
                                 f"-{leaf.dim()} <= in_dim < {leaf.dim()}.")
            d = d % leaf.dim()
            mapped.append(d)
            sizes.append(leaf.shape[d])
        if not sizes:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one "
                             "input must be a Tensor batched along a dim (in_dims not None)")
        if any(s != sizes[0] for s in sizes):
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        batch = sizes[0]
        results = []
        for b in range(batch):
            sliced = [leaf if d is None else leaf.select(d, b) for leaf, d in zip(leaves, mapped)]
            results.append(func(*_unflatten(sliced, spec), **kwargs))
        if batch == 0:
            raise ValueError(f"vmap({name}, ...): ignis's vmap calls the function once per batch "
                             "element and cannot map over a dimension of size 0")
        return _stack_outputs(results, out_dims, name)
    return wrapper


def _stack_outputs(results, out_dims, name):
    ig = _ig()
    flat = [_flatten(r) for r in results]
    spec = flat[0][1]
    for leaves, s in flat:
        if s != spec:
            raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of different "
                             "structures for different batch elements")
    dims = _broadcast_prefix(out_dims, results[0],
                             f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims")
    stacked = []
    for i, d in enumerate(dims):
        column = [leaves[i] for leaves, _ in flat]
        if d is None:  # an unbatched output: the first element's
            stacked.append(column[0])
            continue
        if not all(isinstance(c, ig.Tensor) for c in column):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(next(c for c in column if not isinstance(c, ig.Tensor)))}. "
                             "Did you mean to set out_dims= to None for output?")
        nd = column[0].dim() + 1
        if not -nd <= d < nd:
            raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): Dimension out of range "
                             f"(expected to be in range of [{-nd}, {nd - 1}], but got {d})")
        stacked.append(ig.stack(column, d % nd))
    return _unflatten(stacked, spec)

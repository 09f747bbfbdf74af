"""ignis.compile: torch.compile's entry point over the capture front end.

Functions become `_C._capture.CompiledFunction` objects (a C callable that
switches the frame hook on for the call; see src/ignis/capture/eval_frame.h);
modules become an OptimizedModule wrapper, as torch._dynamo does.
"""
import builtins
import collections
import functools

from . import compiler as _compiler
from .nn import Module

# torch.compile's mode names (torch._inductor.list_mode_options). The
# compiler will read the mode once it lands; capture itself ignores it.
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def _capture():
    from ._C import _capture
    return _capture


# Module.__call__ and nn layers' forward live in ignis, whose frames the hook
# never captures. As torch._dynamo.external_utils.wrap_inline does, a compiled
# module is entered through a one-line function whose code lies outside ignis
# (a file name of its own), so the hook captures it and the tracer inlines
# the module call. Built once, from source, so that no ignis file owns it.
_WRAP_INLINE_SRC = """\
def wrap_inline(fn):
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)
    return inner
"""
_wrap_globals = {"__name__": "<ignis.compile wrap_inline>"}
exec(builtins.compile(_WRAP_INLINE_SRC, "<ignis.compile wrap_inline>", "exec"), _wrap_globals)
_wrap_inline_impl = _wrap_globals["wrap_inline"]


def wrap_inline(fn):
    """A function calling fn(*args, **kwargs), from code the hook captures."""
    inner = _wrap_inline_impl(fn)
    functools.update_wrapper(inner, fn, updated=())
    return inner


def _dynamic_log(text):
    from . import _C
    if _C._capture.log_mask() & _C._capture.LOG_DYNAMIC:
        import sys
        sys.stderr.write(f"[dynamic] {text}\n")


def _with_sizes(gm, sym_at, values):
    """gm with its symbolic-size inputs (placeholders at `sym_at`) replaced by
    the ints `values`: a graph of static shapes."""
    from . import fx
    g = fx.Graph()
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    val_map = {phs[i]: v for i, v in zip(sym_at, values)}
    g.output(g.graph_copy(gm.graph, val_map))
    for n in g.nodes:
        # Recorded at the trace's sizes: stale for these.
        if "tensor_meta" in n.meta:
            del n.meta["tensor_meta"]
    return fx.GraphModule({}, g)


# Sizes of one dynamic graph whose compiled forms _per_size keeps; the least
# recently used goes past this (a generation loop over thousands of lengths
# must not keep thousands of programs; recompiling an evicted size costs its
# lowering, its size-generic library stays loaded).
PER_SIZE_CACHE_LIMIT = 64
# Note [Compiling a size on its second call]
# A dynamic graph's new size costs its lowering (and its AOT trace where the
# graph does not symbolize: Note [Symbolic AOT graphs]) -- 0.5 ms for a
# five-op graph, 10-50 ms for the example GPT -- even when its C++ is shared;
# a size that never comes back (the count of a boolean mask's elements, a
# generation loop's lengths) then costs more to compile than to run eagerly
# (a masked sum's suffix graph: 0.58 ms a call compiled anew against 0.04
# eagerly). So a size compiles on its PER_SIZE_COMPILE_AFTER-th call; the
# calls before run the captured graph eagerly (its own code, through the
# eager kernels and autograd: eager's results). The sizes the capture itself
# traced compile at once. 1 compiles every size at first sight. And a graph
# whose compiled sizes are seldom called again (after PER_SIZE_CHURN_COMPILES
# compiles, fewer hits than twice the compiles: its sizes churn) compiles a
# new size only on its PER_SIZE_CHURN_COMPILE_AFTER-th call (one that does
# recur, a bucket of a bucketed loader, still gets compiled); the compiled
# ones stay in use.
PER_SIZE_COMPILE_AFTER = 2
PER_SIZE_CHURN_COMPILES = 16
PER_SIZE_CHURN_COMPILE_AFTER = 8


class SizeCache:
    """The compiled forms of one graph, one per key of sizes, under the policy
    of Note [Compiling a size on its second call]: `compile(key, args)` makes
    a key's callable from the call's arguments `args`; the
    PER_SIZE_CACHE_LIMIT most recently used keys are kept. `describe(key)`
    names a key in the dynamic log."""

    def __init__(self, compile, describe):
        self._compile = compile
        self._describe = describe
        self.compiled = collections.OrderedDict()
        self._calls = collections.OrderedDict()  # keys not compiled yet: their calls so far
        self.stats = {"compiles": 0, "hits": 0, "churn": False}

    def compile(self, key, args):
        _dynamic_log("specializing the graph for " + self._describe(key))
        from ._dynamo.utils import dynamo_timed
        from ._inductor import config as inductor_config
        # size-generic code (compiler.md)
        with inductor_config.symbolic_capture_compile(), \
                dynamo_timed("a size of a dynamic graph compiled"):
            fn = self._compile(key, args)
        self.compiled[key] = fn
        while len(self.compiled) > PER_SIZE_CACHE_LIMIT:
            self.compiled.popitem(last=False)
        return fn

    def seen(self, key):
        """Counts one call of `key` before any: sizes known to recur (the
        static graph's this one replaced) compile on their next call."""
        self._calls[key] = max(self._calls.get(key, 0), 1)

    def lookup(self, key, args):
        """The compiled callable for `key`, compiling it when its turn has
        come; None when this call runs eagerly."""
        fn = self.compiled.get(key)
        if fn is not None:
            self.stats["hits"] += 1
            self.compiled.move_to_end(key)
            return fn
        stats = self.stats
        seen = self._calls.pop(key, 0) + 1
        if not stats["churn"] and stats["compiles"] >= PER_SIZE_CHURN_COMPILES and \
                stats["hits"] < 2 * stats["compiles"]:
            stats["churn"] = True
            _dynamic_log(f"{stats['compiles']} sizes compiled, {stats['hits']} calls "
                         "reused one: a new size of this graph compiles on its call "
                         f"{PER_SIZE_CHURN_COMPILE_AFTER} from now on, runs eagerly before")
        after = PER_SIZE_CHURN_COMPILE_AFTER if stats["churn"] else PER_SIZE_COMPILE_AFTER
        if seen < after:
            self._calls[key] = seen
            while len(self._calls) > 4 * PER_SIZE_CACHE_LIMIT:
                self._calls.popitem(last=False)
            _dynamic_log(f"running the graph eagerly for {self._describe(key)} "
                         f"(call {seen} of this size)")
            return None
        stats["compiles"] += 1
        return self.compile(key, args)


def _symbolic_entry(backend):
    """The backend's entry for graphs with symbolic sizes, (gm, example
    inputs, Sym positions) -> compile(sizes, tensors); None when it has none
    (each size is then compiled from the graph made static)."""
    if isinstance(backend, functools.partial):
        entry = getattr(backend.func, "_ignis_symbolic", None)
        return entry and functools.partial(entry, **backend.keywords)
    return getattr(backend, "_ignis_symbolic", None)


def _per_size(backend):
    """A backend whose stages are concrete (AOT, the compiler), made to take
    graphs with symbolic sizes: their Sym inputs (ints among the example
    inputs) are made constants, and each distinct tuple of sizes compiles
    the graph once (a SizeCache). A graph holding data-dependent sizes is
    split at the ops that make them (ignis/_unbacked.py)."""
    def compile_dynamic(gm, example_inputs, **kwargs):
        from . import _unbacked
        if _unbacked.has_unbacked(gm):
            gm = _unbacked.items_as_tensors(_unbacked.fold_masked_reductions(gm))
        if _unbacked.has_unbacked(gm):
            return _unbacked.StagedGraph(gm, example_inputs, backend, kwargs)
        sym_at = [i for i, x in enumerate(example_inputs) if type(x) is int]
        if not sym_at:
            return backend(gm, example_inputs, **kwargs)
        sym_set = set(sym_at)
        tensor_at = [i for i in range(len(example_inputs)) if i not in sym_set]
        names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
        symbolic = _symbolic_entry(backend) if _compiler.config.symbolic_aot else None
        compile_at = None
        if symbolic is not None and not kwargs:
            # One AOT trace for every size (Note [Symbolic AOT graphs]).
            try:
                compile_at = symbolic(gm, example_inputs, sym_at)
            except Exception as e:  # noqa: BLE001 - AOT fails here too: the backend says so
                _dynamic_log(f"AOT traces each size of this graph: {type(e).__name__}: {e}")
        if compile_at is not None:
            def compile_key(key, args):
                return compile_at(key, [args[i] for i in tensor_at])
        else:
            def compile_key(key, args):
                return backend(_with_sizes(gm, sym_at, key), [args[i] for i in tensor_at],
                               **kwargs)
        cache = SizeCache(
            compile_key, lambda key: ", ".join(f"{names[i]}={v}" for i, v in zip(sym_at, key)))
        first = tuple(example_inputs[i] for i in sym_at)
        # the sizes of the static graph this one replaces (Note [The sizes
        # before a graph went dynamic], src/ignis/capture/tracer_output.cpp)
        for key in getattr(gm, "_ignis_prior_sizes", ()):
            if len(key) == len(first) and key != first:
                cache.seen(key)
        cache.compile(first, example_inputs)

        def run(*args):
            fn = cache.lookup(tuple(args[i] for i in sym_at), args)
            if fn is None:
                return gm(*args)
            return fn(*[args[i] for i in tensor_at])
        run._ignis_per_size = cache.compiled  # for tests
        run._ignis_per_size_stats = cache.stats
        return run
    return compile_dynamic


def _make_backend(backend, options, mode=None):
    be = _compiler.lookup_backend(backend)
    concrete = be in (_compiler.inductor, _compiler.lookup_backend("aot_eager"),
                      _compiler.lookup_backend("aot_eager_decomp_partition"))
    if be is _compiler.inductor:
        # torch's rule: mode and options are the compiler's config.
        be = functools.partial(be, mode=mode, options=options)
    elif options:
        # torch passes options through to non-inductor backends as a keyword.
        be = functools.partial(be, options=dict(options))
    return _counted(_per_size(be) if concrete else be)


def _counted(backend):
    """The backend, counting each graph it is given in torch's counter
    (ignis._dynamo.utils.counters["stats"]["unique_graphs"]). One shim per
    backend object, kept on the backend: capture keeps a code's cache entries
    per backend, so compiling again with the same backend must hand capture
    the same object (a map beside it would keep every backend alive; the
    attribute's cycle is collected with the backend)."""
    shim = getattr(backend, "_ignis_counting_shim", None)
    if shim is not None:
        return shim
    from ._dynamo.utils import counters, dynamo_timed

    def compile_graph(gm, example_inputs, **kwargs):
        counters["stats"]["unique_graphs"] += 1
        with dynamo_timed("backend compile of a captured graph"):
            return backend(gm, example_inputs, **kwargs)
    try:
        backend._ignis_counting_shim = compile_graph
    except (AttributeError, TypeError):  # no attributes (a bound method): a shim per compile
        pass
    return compile_graph


def _compile_callable(fn, *, fullgraph, dynamic, backend, mode, options):
    """A CompiledFunction for `fn`, carrying `fn`'s name, docs and __wrapped__."""
    cfg = _compiler.config
    cf = _capture().CompiledFunction(fn, _make_backend(backend, options, mode), bool(fullgraph),
                                     dynamic, int(cfg.cache_size_limit),
                                     bool(cfg.capture_dynamic_output_shape_ops),
                                     bool(cfg.capture_scalar_outputs))
    try:
        # A callable object's __dict__ is its state: do not copy it over.
        updated = functools.WRAPPER_UPDATES if hasattr(fn, "__code__") else ()
        functools.update_wrapper(cf, fn, updated=updated)
    except AttributeError:  # fn without a __dict__ (a builtin, a functools.partial)
        cf.__wrapped__ = fn
    cf._ignis_compile_mode = mode
    return cf


def _check_args(model, fullgraph, dynamic, backend, mode, options):
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"ignis.compile: options must be a dict, got {type(options).__name__}")
    if dynamic not in (None, True, False):
        raise TypeError(f"ignis.compile: dynamic must be None, True or False, got {dynamic!r}")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"ignis.compile: fullgraph must be a bool, got {fullgraph!r}")
    _compiler.lookup_backend(backend)  # unknown names raise InvalidBackend now
    if model is not None and not callable(model):
        raise RuntimeError(f"A callable function is expected, but {type(model)} is provided.")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,  # noqa: A001
            options=None, disable=False):
    """Optimizes a function or nn.Module by capturing its Python bytecode into graphs
    (torch.compile).

    Usable as `ignis.compile(fn)`, `@ignis.compile` and `@ignis.compile(...)`, on
    functions, methods and modules (`module.compile()` compiles in place).

    Args:
        model: the function or nn.Module (None: returns a decorator).
        fullgraph: raise at the first graph break instead of splitting the graph.
        dynamic: None (default): automatic dynamic, the first call specializes
            every size and a size that changes makes that dim symbolic; True:
            every size symbolic from the first call (sizes 0 and 1 specialize);
            False: never symbolic (each new shape recompiles).
        backend: a registered name or a callable `backend(gm, example_inputs)`.
            The default is "inductor", the compiler (as torch's): AOT autograd,
            then fused C++ kernels. "eager" runs the captured graph as it is.
        mode: one of None, "default", "reduce-overhead", "max-autotune",
            "max-autotune-no-cudagraphs" (kept for the compiler).
        options: a dict passed to the backend as `options=` (not with `mode`).
        disable: return `model` unchanged.
    """
    _check_args(model, fullgraph, dynamic, backend, mode, options)
    if model is None:
        def decorate(model):
            if model is None:
                raise RuntimeError("Model can't be None")
            return compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                           mode=mode, options=options, disable=disable)
        return decorate
    if mode is None and options is None:
        mode = "default"
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, functools.partial(
            _compile_callable, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
            options=options))
    return _compile_callable(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                             mode=mode, options=options)


def _is_ignis_layer(mod):
    return type(mod).__module__.startswith("ignis.")


def compiled_call_of(mod, compile_fn):
    """The compiled callable that runs `mod(*args)`: for ignis's own layers, a
    wrap_inline entry (their frames are never captured); for user modules,
    `mod.__call__` itself (hooks run eagerly, the forward frame is captured),
    as torch._dynamo.OptimizedModule does."""
    if _is_ignis_layer(mod):
        return compile_fn(wrap_inline(mod))
    return compile_fn(mod.__call__)


class OptimizedModule(Module):
    """A module compiled by ignis.compile (torch._dynamo.OptimizedModule).

    Holds the original as the submodule `_orig_mod` (so state_dict keys carry
    the "_orig_mod." prefix and parameters() yields the original's, as in
    torch); other attribute reads and writes (training included) go to the
    original; `forward` is the compiled call.
    """

    _opt_mod_attributes = {"_orig_mod", "_compile_fn", "forward", "__dict__"}

    def __init__(self, mod, compile_fn):
        object.__setattr__(self, "_orig_mod", mod)
        super().__init__()
        del self.__dict__["training"]  # read through to the original
        del self.__dict__["_orig_mod"]
        self._modules["_orig_mod"] = mod
        object.__setattr__(self, "_compile_fn", compile_fn)
        object.__setattr__(self, "forward", compiled_call_of(mod, compile_fn))

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self.__dict__["_modules"]["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name, value):
        if name in OptimizedModule._opt_mod_attributes:
            return object.__setattr__(self, name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if name in OptimizedModule._opt_mod_attributes:
            return object.__delattr__(self, name)
        return delattr(self._orig_mod, name)

    def __len__(self):
        try:
            return len(self._orig_mod)
        except TypeError:
            raise TypeError(f"{type(self._orig_mod).__name__} does not support len()") from None

    def __dir__(self):
        orig = self._orig_mod.__dir__()
        return orig + [a for a in super().__dir__() if a not in orig]

    def __reduce__(self):
        return (self.__class__, (self._orig_mod, self._compile_fn))

"""ignis.compiler: the backend interface and the capture controls.

A backend is any callable `backend(graph_module, example_inputs)` returning
a callable that computes the graph's outputs from its inputs. Named
backends live in a registry (`register_backend`, `lookup_backend`,
`list_backends`, as torch._dynamo names them); "eager" runs the
GraphModule's generated forward unchanged.

Capture controls (torch._dynamo's / torch.compiler's names): `reset()`,
`disable`, `config.cache_size_limit`, `explain`, `is_compiling`.
"""
import time
import traceback

_BACKENDS = {}
_TAGS = {}


class Unsupported(RuntimeError):
    """A graph break where none is allowed (`fullgraph=True`): the message
    names the reason and the user code's file:line (torch._dynamo.exc.Unsupported)."""


class InvalidBackend(RuntimeError):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `ignis.compiler.list_backends()` for "
                         "available backends.")


def register_backend(compiler_fn=None, name=None, tags=()):
    """Registers a backend under `name` (default: the function's name).

    Usable as @register_backend, @register_backend(name="x") or
    register_backend(fn, name="x"). Re-registering a name raises.
    """
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    if not callable(compiler_fn):
        raise TypeError(f"register_backend expects a callable, got {type(compiler_fn).__name__}")
    name = name or compiler_fn.__name__
    if name in _BACKENDS and _BACKENDS[name] is not compiler_fn:
        raise RuntimeError(f"duplicate name: {name}")
    _BACKENDS[name] = compiler_fn
    _TAGS[name] = tuple(tags)
    return compiler_fn


def lookup_backend(compiler_fn):
    """A backend by name, or the callable itself."""
    if isinstance(compiler_fn, str):
        if compiler_fn not in _BACKENDS:
            raise InvalidBackend(compiler_fn)
        return _BACKENDS[compiler_fn]
    if not callable(compiler_fn):
        raise InvalidBackend(compiler_fn)
    return compiler_fn


def list_backends(exclude_tags=("debug", "experimental")):
    """Sorted names of the registered backends, minus those with excluded tags."""
    excluded = set(exclude_tags or ())
    return sorted(n for n in _BACKENDS if not excluded & set(_TAGS[n]))


@register_backend(name="eager")
def eager(gm, example_inputs, **kwargs):
    """Runs the graph as captured: the GraphModule's generated forward."""
    if kwargs:
        raise TypeError(f"eager backend takes no options, got {sorted(kwargs)}")
    return gm.forward


def aot_autograd(**kwargs):
    """A backend that runs AOT (fake tensors, functionalization, decompositions,
    joint graph, partition) and hands the graphs to the given compilers
    (torch._dynamo.backends.common.aot_autograd)."""
    from .._functorch.aot_autograd import aot_autograd as make
    return make(**kwargs)


def default_partition(joint_module, joint_inputs=None, *, num_fwd_outputs):
    from .._functorch.aot_autograd import default_partition as part
    return part(joint_module, joint_inputs, num_fwd_outputs=num_fwd_outputs)


def min_cut_rematerialization_partition(joint_module, joint_inputs=None, *, num_fwd_outputs,
                                        **kwargs):
    from .._functorch.aot_autograd import min_cut_rematerialization_partition as part
    return part(joint_module, joint_inputs, num_fwd_outputs=num_fwd_outputs, **kwargs)


def _aot_eager_backend(decompose):
    from .._functorch.aot_autograd import aot_autograd as make
    # decompositions=(): every op is kept whole; None: all down to core ops.
    return make(partition_fn=min_cut_rematerialization_partition,
                decompositions=None if decompose else ())


@register_backend(name="aot_eager")
def aot_eager(gm, example_inputs, **kwargs):
    """AOT, then the forward and backward graphs run as they are (torch's
    aot_eager): shows what AOT does without a compiler. As torch's, it
    applies no decompositions (composites still run as their parts), so the
    graphs run eager's kernels and train exactly as eager does."""
    if kwargs:
        raise TypeError(f"aot_eager backend takes no options, got {sorted(kwargs)}")
    return _aot_eager_backend(False)(gm, example_inputs)


@register_backend(name="aot_eager_decomp_partition")
def aot_eager_decomp_partition(gm, example_inputs, **kwargs):
    """aot_eager with every decomposition applied (torch's backend of that
    name): the graphs hold core ops only (docs/core_ops.md), as a compiler
    receives them, run as they are. Results differ from eager's fused
    kernels by rounding."""
    if kwargs:
        raise TypeError(f"aot_eager_decomp_partition backend takes no options, got "
                        f"{sorted(kwargs)}")
    return _aot_eager_backend(True)(gm, example_inputs)


@register_backend(name="inductor")
def inductor(gm, example_inputs, mode=None, options=None):
    """The compiler (the default backend, as torch's): AOT with
    decompositions and the min-cut partitioner, each graph compiled by
    ignis._inductor.compile_fx into fused C++ kernels plus extern calls.
    `mode` ("max-autotune", ...) and `options` ({knob: value}) set
    ignis._inductor.config for this compilation, as torch.compile's do."""
    from .._inductor import config
    with config.patch(**config.overrides(mode, options)):
        return _inductor_aot()(gm, example_inputs)


def _inductor_aot():
    from .._functorch.aot_autograd import aot_autograd as make
    from .._inductor import compile_fx
    return make(fw_compiler=compile_fx, bw_compiler=compile_fx,
                partition_fn=min_cut_rematerialization_partition)


def _inductor_symbolic(gm, example_inputs, sym_at, mode=None, options=None):
    """inductor's entry for graphs with symbolic sizes (Note [Symbolic AOT
    graphs]): compile(sizes, tensors), each size compiled under this
    call's mode and options."""
    from .._inductor import config
    knobs = config.overrides(mode, options)
    with config.patch(**knobs):
        compile_at = _inductor_aot()._ignis_symbolic(gm, example_inputs, sym_at)

    def compile_size(sizes, tensors):
        with config.patch(**knobs):
            return compile_at(sizes, tensors)
    return compile_size


inductor._ignis_symbolic = _inductor_symbolic
aot_eager._ignis_symbolic = (
    lambda gm, example_inputs, sym_at: _aot_eager_backend(False)._ignis_symbolic(
        gm, example_inputs, sym_at))
aot_eager_decomp_partition._ignis_symbolic = (
    lambda gm, example_inputs, sym_at: _aot_eager_backend(True)._ignis_symbolic(
        gm, example_inputs, sym_at))


@register_backend(name="eager_interpreter", tags=("debug",))
def eager_interpreter(gm, example_inputs):
    """Runs the graph node by node through ignis.fx.Interpreter (debugging)."""
    from ..fx import Interpreter

    def run(*args):
        return Interpreter(gm).run(*args)
    return run


# --- capture controls ---------------------------------------------------------------

def _capture():
    from .._C import _capture
    return _capture


class _Config:
    """Capture settings read when ignis.compile(...) is called.

    cache_size_limit: cache entries per code object (per compiled variant of a
    frame) before capture gives up on that code, warns once naming the guard
    that kept failing, and runs it eagerly (torch._dynamo.config's
    cache_size_limit / recompile_limit, default 8).

    capture_dynamic_output_shape_ops: ops whose output size depends on the
    data (nonzero, argwhere, masked_select, unique, x[mask]) join the graph
    with an unbacked size (u0) instead of breaking it (docs/dynamic_shapes.md
    "Data-dependent sizes"). torch's setting of that name, which torch leaves
    False; ignis's default is True.

    capture_scalar_outputs: Tensor.item() of an integer tensor joins the graph
    as an unbacked int (u0) instead of breaking it; a decision on its value
    breaks the graph there. torch's setting of that name (False in torch);
    ignis's default is True. A float's item() still breaks.

    symbolic_aot: the AOT backends (aot_eager, inductor) trace a graph with
    symbolic sizes at three sizes and make every later size's graphs from
    those traces, without tracing (docs/dynamic_shapes.md, "Symbolic AOT
    graphs"); False traces each size. IGNIS_SYMBOLIC_AOT=0 sets it False.
    ignis's own (torch's AOT traces symbolically).
    """

    def __init__(self):
        import os
        self.cache_size_limit = 8
        self.capture_dynamic_output_shape_ops = True
        self.capture_scalar_outputs = True
        self.symbolic_aot = os.environ.get("IGNIS_SYMBOLIC_AOT", "1").strip() not in ("0", "")

    @property
    def recompile_limit(self):
        return self.cache_size_limit

    @recompile_limit.setter
    def recompile_limit(self, value):
        self.cache_size_limit = value

    def patch(self, arg1=None, arg2=None, **changes):
        """Settings for a block or a function (torch._dynamo.config.patch): as
        patch(name=value, ...), patch({name: value}) or patch(name, value);
        usable as a context manager and as a decorator."""
        import contextlib
        if isinstance(arg1, dict):
            changes = {**arg1, **changes}
        elif arg1 is not None:
            changes = {arg1: arg2, **changes}
        config = self

        class _Patch(contextlib.ContextDecorator):
            def __enter__(self):
                self.saved = {name: getattr(config, name) for name in changes}
                for name, value in changes.items():
                    setattr(config, name, value)

            def __exit__(self, *exc):
                for name, value in self.saved.items():
                    setattr(config, name, value)
                return False

        for name in changes:  # unknown names fail here, as setting them does
            if not hasattr(self, name):
                raise AttributeError(f"ignis.compiler.config has no setting {name!r}")
        return _Patch()

    def __setattr__(self, name, value):
        if name == "cache_size_limit":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"cache_size_limit must be a non-negative int, got {value!r}")
        elif name in ("capture_dynamic_output_shape_ops", "capture_scalar_outputs",
                      "symbolic_aot"):
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be a bool, got {value!r}")
        elif name != "recompile_limit":
            raise AttributeError(f"ignis.compiler.config has no setting {name!r}")
        object.__setattr__(self, name, value)


config = _Config()


def reset():
    """Drops every capture cache entry and skip mark (torch._dynamo.reset()),
    and what the compiler learnt of dynamic graphs' sizes (Note [Parameters
    that vary with the sizes])."""
    _capture().reset()
    from .. import _C
    _C._forget_probed_sizes()


def disable(fn=None, recursive=True):
    """Runs `fn` without capture, and never captures its code
    (torch.compiler.disable). Usable as @disable and @disable(recursive=...).

    recursive=True: frames that `fn` calls are not captured either. recursive=
    False: only `fn`'s own frame is skipped; the frames it calls are still
    captured while a compiled function is running.
    """
    if fn is None:
        return lambda f: disable(f, recursive=recursive)
    if not callable(fn):
        raise TypeError(f"disable expects a callable, got {type(fn).__name__}")
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is not None:
        _capture().mark_skip(code)
    if not recursive:
        return fn
    import functools
    wrapped = _capture().DisabledFunction(fn)
    try:
        functools.update_wrapper(wrapped, fn)
    except AttributeError:
        pass
    return wrapped


def is_compiling():
    """True while a frame is being traced. Tracing never runs the user's Python
    for real, so real code never observes True."""
    return False


class BreakReason:
    """One graph break: the reason, where it happened, and its user stack
    (torch._dynamo's GraphCompileReason)."""

    def __init__(self, reason, filename, lineno, compile_id=None, name="<unknown>"):
        self.reason = reason
        self.filename = filename
        self.lineno = lineno
        self.compile_id = compile_id
        self.user_stack = [traceback.FrameSummary(filename, lineno, name, lookup_line=False)]

    def __repr__(self):
        return f"BreakReason(reason={self.reason!r}, at {self.filename}:{self.lineno})"


class ExplainOutput:
    """What ignis.compiler.explain(fn)(*args) saw (torch._dynamo's ExplainOutput)."""

    def __init__(self, graphs, break_reasons, ops_per_graph, out_guards, compile_times):
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.graph_break_count = len(break_reasons)
        self.break_reasons = break_reasons
        self.ops_per_graph = ops_per_graph
        self.op_count = sum(len(ops) for ops in ops_per_graph)
        self.out_guards = out_guards
        self.compile_times = compile_times

    def __str__(self):
        out = f"Graph Count: {self.graph_count}\n"
        out += f"Graph Break Count: {self.graph_break_count}\n"
        out += f"Op Count: {self.op_count}\n"
        out += "Break Reasons:\n"
        for idx, br in enumerate(self.break_reasons):
            out += f"  Break Reason {idx + 1}:\n"
            out += f"    Reason: {br.reason}\n"
            out += "    User Stack:\n"
            for frame in br.user_stack:
                out += f"      {frame}\n"
        out += "Ops per Graph:\n"
        for idx, ops in enumerate(self.ops_per_graph):
            out += f"  Ops {idx + 1}:\n"
            for op in ops:
                out += f"    {op}\n"
        if self.out_guards:
            out += "Out Guards:\n"
            for i, guard in enumerate(self.out_guards):
                out += f"  Guard {i + 1}:\n"
                out += f"    {guard}\n"
        if self.compile_times is not None:
            out += f"Compile Times: {self.compile_times}\n"
        return out

    __repr__ = __str__


def _codes_reachable(fn, depth=2):
    """Code objects of `fn`, its nested functions and (to `depth`) the user
    functions it names as globals: where break locations get their names."""
    import types
    seen, out = set(), []

    def add_code(code):
        if id(code) in seen:
            return
        seen.add(id(code))
        out.append(code)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                add_code(c)

    def add_fn(f, d):
        f = getattr(f, "__func__", f)
        f = getattr(f, "__wrapped__", f)
        code = getattr(f, "__code__", None)
        if code is None or id(code) in seen:
            return
        add_code(code)
        if d > 0:
            g = getattr(f, "__globals__", {})
            for name in code.co_names:
                v = g.get(name)
                if isinstance(v, types.FunctionType):
                    add_fn(v, d - 1)
            for cell in getattr(f, "__closure__", None) or ():
                try:
                    v = cell.cell_contents
                except ValueError:
                    continue
                if isinstance(v, types.FunctionType):
                    add_fn(v, d - 1)

    if hasattr(fn, "forward") and not isinstance(fn, types.FunctionType):
        add_fn(type(fn).forward, depth)
    add_fn(fn, depth)
    return out


def _function_at(codes, filename, lineno):
    """Name of the innermost code in `codes` from `filename` spanning `lineno`."""
    best = None
    for code in codes:
        if code.co_filename != filename:
            continue
        lines = [ln for _, _, ln in code.co_lines() if ln is not None]
        if lines and min(lines) <= lineno <= max(lines):
            if best is None or code.co_firstlineno > best.co_firstlineno:
                best = code
    return best.co_name if best is not None else "<unknown>"


def _ops_of(gm):
    # As torch._dynamo's explain: call_function targets only (methods such as
    # the seed's `sum` are not counted).
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def explain(fn, *extra_args, **extra_kwargs):
    """explain(fn)(*args, **kwargs): compiles `fn` with the "eager" backend, runs it
    once on the arguments with an event sink installed, and returns an
    ExplainOutput (graphs, graph and break counts, break reasons with file and
    line, ops per graph, guards, compile time). Caches are reset before the run,
    so what was compiled earlier does not hide graphs.
    """
    def inner(*args, **kwargs):
        from .._compile import compile as _compile
        cap = _capture()
        reset()
        events = []
        graph_fns = []

        def recording_backend(gm, example_inputs):
            graph_fns.append(gm)
            return gm.forward

        compiled = _compile(fn, backend=recording_backend)
        cap.set_event_sink(events)
        t0 = time.perf_counter()
        try:
            compiled(*args, **kwargs)
        finally:
            cap.set_event_sink(None)
            elapsed = time.perf_counter() - t0
            reset()
        graphs = [e[1] for e in events if e[0] == "graph"] or graph_fns
        codes = _codes_reachable(fn)
        breaks = [BreakReason(e[1], e[2], e[3], e[4], _function_at(codes, e[2], e[3]))
                  for e in events if e[0] == "break"]
        guards = [line for e in events if e[0] == "guards" for line in e[1]]
        return ExplainOutput(graphs, breaks, [_ops_of(g) for g in graphs], guards,
                             f"total: {elapsed:.4f}s (capture and one run)")

    if extra_args or extra_kwargs:
        # torch's deprecated explain(fn, *args) form.
        return inner(*extra_args, **extra_kwargs)
    return inner


__all__ = ["register_backend", "lookup_backend", "list_backends", "InvalidBackend", "Unsupported",
           "config",
           "reset", "disable", "explain", "is_compiling", "ExplainOutput", "BreakReason"]

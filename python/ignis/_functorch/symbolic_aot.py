"""Symbolic AOT graphs: one trace serving every size of a dynamic capture.

Note [Symbolic AOT graphs]
A graph that capture made with symbolic sizes (Sym inputs s0..sn) used to
be traced by AOT at each size it was called with: its trace, partition and
the Python analyses of the partitioned graphs cost 10-30 ms a size for the
example GPT's training step, more than its size-generic compile. Now the
first compile traces it at the call's sizes and at two more hints, each
through the same pipeline (trace, decompositions, partition), with fake
inputs at the hints' sizes (`_C._aot_inputs_at`), and lines the traces up
(`_C._aot_symbolize`, Note [Symbolizing traced graphs] in
src/ignis/aot/symbolize.h): every number that changes with the sizes must
be one k * monomial + d of them. A later size is then the first trace's
graphs with those numbers evaluated (`_C._aot_instantiate`, C++, well under
a millisecond), handed to the same compilers; the structure-only analyses
(which saved values and gradients depend on which tangents) are the first
trace's. When the traces do not line up (a partition that differs with the
sizes, a number that fits no form), or the capture's own size arithmetic
goes beyond sums and products (`t // 16` is a step function: 0 at all three
hints, 2 at 40), each size is traced as before, and IGNIS_LOGS=dynamic says
why. Three traces leave each form one check, which a number can pass by
chance, so the first size compiled after them is traced too and the forms
must fit all four (Note [A fourth trace checks the fit], SymbolicAot._verify).
IGNIS_LOGS=aot_graphs prints the symbolic forward and backward
("f32[8*s0, 64]"), once.
"""
from .. import _C
from .._logging import _aot_graphs_enabled

# The symbols' values at the hints after the first: symbol i moves by i + 1,
# then by (i + 1) ** 2 more, so that no two symbols (nor a symbol and its
# square) move in proportion across the three traces, which would let two
# monomials fit one number.
def _hints(first):
    second = [v + i + 1 for i, v in enumerate(first)]
    third = [v + (i + 1) ** 2 for i, v in enumerate(second)]
    return [list(first), second, third]


def _log(text):
    from .._compile import _dynamic_log
    _dynamic_log(text)


def _same_constants(a, b):
    if a.keys() != b.keys():
        return False
    for name, x in a.items():
        y = b[name]
        if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
            return False
        if x.numel() and not bool((x == y).all()):
            return False
    return True


def _same_info(a, b):
    return {k: v for k, v in a.items() if k != "constants"} == \
        {k: v for k, v in b.items() if k != "constants"} and \
        _same_constants(a["constants"], b["constants"])


def _traces_differ(first, others):
    """Why the traces `others` cannot be lined up with `first` ("" when they can
    be tried): their inputs, outputs, constants, grad modes or graph count."""
    for other in others:
        if not _same_info(first.info, other.info) or other.grad_modes != first.grad_modes:
            return "the traces' inputs, outputs or constants differ with the sizes"
        if len(other.graphs) != len(first.graphs):
            return "the traces differ with the sizes"
    return ""


def _template(gms, names, sizes):
    """(the symbolic template of one graph traced at each of `sizes`, its
    GraphModules `gms`; or None and why)."""
    return _C._aot_symbolize([g.graph for g in gms], list(names), [list(s) for s in sizes])


def _templates(traces, names, sizes):
    """_template of each graph of the traced parts `traces`: (templates, "")
    or (None, why)."""
    templates = []
    for j in range(len(traces[0].graphs)):
        t, why = _template([p.graphs[j] for p in traces], names, sizes)
        if t is None:
            return None, why
        templates.append(t)
    return templates, ""


class SymbolicAot:
    """The AOT graphs of one dynamic captured graph, for every size:
    `compile(sizes, tensors)` compiles them at `sizes` (the Sym inputs'
    values, in order) for the call's tensors."""

    def __init__(self, gm, example_inputs, sym_at, trace, compile_parts):
        from .._compile import _with_sizes
        from .aot_autograd import _module
        self._gm, self._sym_at, self._trace, self._compile_parts = gm, sym_at, trace, compile_parts
        self._with_sizes, self._module = _with_sizes, _module
        sym_set = set(sym_at)
        self._tensor_at = [i for i in range(len(example_inputs)) if i not in sym_set]
        first = tuple(example_inputs[i] for i in sym_at)
        self._first = first
        self._first_parts = trace(_with_sizes(gm, sym_at, first),
                                  [example_inputs[i] for i in self._tensor_at])
        self.templates = None  # one symbolic graph per graph to compile, when symbolized
        self.symbols = ()
        # (graph index, key) -> (template, the traces' rewritten graphs, the rewrite)
        self._variants = {}
        from .._dynamo.utils import dynamo_timed
        with dynamo_timed("AOT symbolic graphs (traces at two more sizes, lined up)"):
            self.why = self._symbolize(example_inputs)
        if self.templates is None:
            _log(f"AOT traces each size of this graph: {self.why}")
            if _aot_graphs_enabled():
                self._first_parts.log()
        else:
            titles = ("forward", "backward") if len(self.templates) == 2 else ("inference",)
            _log(f"one AOT trace for every size of {', '.join(self.symbols)}: " +
                 ", ".join(f"{title} graph {_C._aot_symbolic_leaves(t)} numbers of the sizes"
                           for title, t in zip(titles, self.templates)))
            if _aot_graphs_enabled():
                self._log_symbolic()

    def _symbolize(self, example_inputs):
        """Sets self.templates; returns the reason when it cannot."""
        hints = _hints(self._first)
        traces = [self._first_parts]
        names = None
        for hint in hints[1:]:
            ints = [None] * len(example_inputs)
            for pos, v in zip(self._sym_at, hint):
                ints[pos] = v
            inputs, names, why = _C._aot_inputs_at(self._gm.graph, list(example_inputs), ints)
            if inputs is None:
                return why
            try:
                traces.append(self._trace(self._with_sizes(self._gm, self._sym_at, hint),
                                          [inputs[i] for i in self._tensor_at]))
            except Exception as e:  # noqa: BLE001 - a size the hint broke: trace each size
                return f"tracing at {dict(zip(names, hint))} raised {type(e).__name__}: {e}"
        first = traces[0]
        why = _traces_differ(first, traces[1:])
        if why:
            return why
        templates, why = _templates(traces, names, hints)
        if templates is None:
            return why
        self.templates, self.symbols = templates, tuple(names)
        self._traces, self._trace_sizes = traces, [tuple(h) for h in hints]
        self._hint_parts = traces[1:]
        self._verified = False
        self._with_probes(first, self._first)
        return ""

    def _verify(self, sizes, parts):
        """Note [A fourth trace checks the fit]: `parts`, this graph traced at
        `sizes` (the first size after the hints to be compiled), lined up
        with the three traces. Three traces leave a form k * monomial + d one
        check, and a number can pass it by coincidence: a slice's offset
        (R - 1) * C at (R, C) = (8, 6), (9, 8), (10, 12) is 42, 64, 108, which
        11 * C - 24 also gives, and at (5, 5) 31, not 20 (fuzz seed 4529646:
        as_strided_scatter out of bounds). So the first later size is traced
        (as before symbolic graphs, once) and every number must fit all four;
        the templates become the four traces' (the variants' too), or, when
        they do not line up, each size is traced from then on. The fourth
        size may repeat a hint's value of a symbol ((2, 8) after (5, 8): fuzz
        seed 4530720): the forms are solved from the first two traces and
        only checked by the others. Whatever goes wrong here leaves the graph
        traced per size: no template is used unchecked. True when the
        templates stand."""
        self._verified = True
        traces, trace_sizes = self._traces + [parts], self._trace_sizes + [tuple(sizes)]
        templates, why = None, _traces_differ(traces[0], [parts])
        if not why:
            try:
                templates, why = _templates(traces, self.symbols, trace_sizes)
            except Exception as e:  # noqa: BLE001 - unchecked templates are never used
                why = f"{type(e).__name__}: {e}"
        if templates is None:
            self.templates = None
            self.why = (f"the trace at {dict(zip(self.symbols, sizes))} does not fit the "
                        f"three before it: {why}")
            _log(f"AOT traces each size of this graph: {self.why}")
            return False
        self.templates, self._traces, self._trace_sizes = templates, traces, trace_sizes
        try:  # the variants made from three traces, checked by the fourth too
            for key, (_, graphs, fn) in list(self._variants.items()):
                self._variants[key] = self._variant(graphs + [fn(parts.graphs[key[0]])], fn)
        except Exception:  # noqa: BLE001 - remade from the four traces when next asked for
            self._variants.clear()
        _log(f"one AOT trace for every size of {', '.join(self.symbols)}: checked by a "
             f"fourth trace at {dict(zip(self.symbols, sizes))}")
        return True

    def _with_probes(self, parts, sizes):
        """parts, its graphs knowing the same graphs at the hints' sizes (Note
        [Parameters that vary with the sizes], src/ignis/compiler/size_params.h:
        what the compiler learns which kernel parameters vary from), and
        where they came from (for `transformed`)."""
        hint_parts = self._hint_parts
        for j, gm in enumerate(parts.graphs):
            gm._ignis_probes = lambda j=j: [p.graphs[j] for p in hint_parts]
            gm._ignis_symbolic = (self, j, tuple(sizes))
        return parts

    def transformed(self, j, key, fn, sizes):
        """Graph j at `sizes` after `fn` (a rewrite that depends on the sizes
        only through the numbers in the graph, as _without_tangents does),
        from a template of fn applied once to the traces' graph j (three, or
        four once checked) and lined up as they were; its probes are fn's
        graphs at the hints. The template is made on the first call for
        `key`; None when fn's graphs do not line up or the graph is traced
        per size (the caller applies fn at this size)."""
        if self.templates is None:
            return None
        entry = self._variants.get((j, key))
        if entry is None:
            entry = self._variants[(j, key)] = self._variant(
                [fn(p.graphs[j]) for p in self._traces], fn)
        t, graphs, _ = entry
        if t is None:
            return None
        if tuple(sizes) in self._trace_sizes:
            gm = graphs[self._trace_sizes.index(tuple(sizes))]
        else:
            gm = self._module(_C._aot_instantiate(t, list(sizes)),
                              self._first_parts.info["constants"])
        gm._ignis_probes = lambda: graphs[1:3]
        return gm

    def _variant(self, graphs, fn):
        """(template or None, graphs, fn) for fn's graphs at the traces' sizes."""
        return _template(graphs, self.symbols, self._trace_sizes)[0], graphs, fn

    def _log_symbolic(self):
        from .aot_autograd import AotParts
        first = self._first_parts
        graphs = [self._module(_C._aot_symbolic_printable(t), first.info["constants"])
                  for t in self.templates]
        AotParts(first.info, first.grad_modes, None, graphs).log(
            f" (symbolic in {', '.join(self.symbols)})")

    def parts_at(self, sizes):
        """The AOT graphs at `sizes`: instantiated (no trace) when symbolic."""
        from .aot_autograd import AotParts
        first = self._first_parts
        if tuple(sizes) == self._first:
            return first
        if self.templates is None:
            return None
        constants = first.info["constants"]
        from .._dynamo.utils import dynamo_timed
        with dynamo_timed("AOT graphs instantiated at a size"):
            graphs = [self._module(_C._aot_instantiate(t, list(sizes)), constants)
                      for t in self.templates]
        return self._with_probes(AotParts(first.info, first.grad_modes, None, graphs,
                                          first.analysis() if first.info["joint"] else None),
                                 sizes)

    def compile(self, sizes, tensors):
        try:
            return self._compile(sizes, tensors)
        except Exception as e:  # noqa: BLE001 - whatever AOT cannot do runs eagerly
            from .aot_autograd import _fallback_warning
            _fallback_warning(self._gm, e)
            return self._fallback(sizes)

    def _fallback(self, sizes):
        """The captured graph at `sizes`, run as captured, taking the tensors."""
        gm, sym_at, tensor_at = self._gm, self._sym_at, self._tensor_at
        n = len(sym_at) + len(tensor_at)

        def run(*args):
            full = [None] * n
            for pos, v in zip(sym_at, sizes):
                full[pos] = v
            for pos, t in zip(tensor_at, args):
                full[pos] = t
            return gm(*full)
        return run

    def _compile(self, sizes, tensors):
        gm, sym_at = self._gm, self._sym_at
        # the first size after the hints checks the templates with its own trace
        check = self.templates is not None and not self._verified and \
            tuple(sizes) not in self._trace_sizes
        parts = None if check else self.parts_at(sizes)
        if parts is None:  # this size's own trace: not symbolic, or checking
            concrete = self._with_sizes(gm, sym_at, sizes)
            parts = self._trace(concrete, tensors)
            if check and self._verify(sizes, parts):
                return self._compile_parts(self._with_probes(parts, sizes), tensors,
                                           self._fallback(sizes))
            if _aot_graphs_enabled():
                parts.log()
            return self._compile_parts(parts, tensors, concrete)
        return self._compile_parts(parts, tensors, self._fallback(sizes))


def symbolize(gm, example_inputs, sym_at, trace, compile_parts):
    """compile(sizes, tensors) for a dynamic captured graph (a SymbolicAot's)."""
    return SymbolicAot(gm, example_inputs, sym_at, trace, compile_parts).compile

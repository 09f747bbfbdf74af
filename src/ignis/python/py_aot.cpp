// Bindings of the AOT stage (aot/): argument conversion only.
//   _aot_trace_graph(graph, inputs, root, **options) -> (Graph, info)
//   _aot_trace_fn(fn, inputs, **options)             -> (Graph, info)
//   _aot_partition(graph, num_fwd_outputs, min_cut)  -> (fw, bw, saved, saved_bytes, recomputed)
//   _aot_inputs_at(graph, inputs, [new int or None...]) -> (inputs or None, [symbol...], why)
//   _aot_symbolize([graph...], [symbol...], [[value...] per graph]) -> (SymbolicGraph or None, why)
//   _aot_instantiate(symbolic, [value...]) -> Graph
//   _aot_symbolic_printable(symbolic) -> Graph;  _aot_symbolic_leaves(symbolic) -> int
//   FakeTensorMode: from_tensor(t), a context manager
// options: fake, functionalize, decompose, inference, enables_grad, as_is (bools); keep, only
// (op names).
// info: {"joint": bool, "inputs": [(requires_grad, mutated, duplicate_of)],
//        "outputs": [(requires_grad, aliased_input, alias_kind, mutated_input)],
//        "output_views": [(output, the output it views, alias_kind)],
//        "eager_saved": [(input or output position, [tangent positions])],
//        "views_made_before_writes": [(output, sizes, strides, storage offset)],
//        "no_grad_view_outputs": [output], "stale_no_grad_view_outputs": [output],
//        "intermediate_bases": [output] (returned for the runtime, not the user's),
//        (alias_kind: aot::AliasKind as an int: 0 none, 1 view, 2 no-grad view, 3 the input)
//        "output_kind": str}.
#include "ignis/aot/aot.h"
#include "ignis/aot/fake.h"
#include "ignis/aot/partition.h"
#include "ignis/aot/symbolize.h"
#include "ignis/aot/trace.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

namespace {

PyObject* graph_class() {
  PyRef mod(PyImport_ImportModule("ignis.fx.graph"));
  return PyObject_GetAttrString(mod.p, "Graph");
}

PyObject* wrap_graph(std::unique_ptr<graph::Graph> g) {
  PyRef cls(graph_class());
  return adopt_graph(cls.p, std::move(g));
}

graph::Graph& expect_graph(PyObject* o, const char* what) {
  graph::Graph* g = graph_ptr(o);
  IGNIS_CHECK_TYPE(g != nullptr, what, ": expected an ignis.fx.Graph, got ", Py_TYPE(o)->tp_name);
  return *g;
}

bool flag(PyObject* kw, const char* name, bool dflt) {
  if (!kw) return dflt;
  PyObject* v = PyDict_GetItemString(kw, name);  // borrowed
  if (!v) return dflt;
  int r = PyObject_IsTrue(v);
  if (r < 0) throw PythonErrorAlreadySet{};
  return r != 0;
}

// Reads an iterable of op names; false when the option is absent or None.
bool read_names(PyObject* kw, const char* key, std::unordered_set<std::string>* out) {
  PyObject* names = kw ? PyDict_GetItemString(kw, key) : nullptr;
  if (!names || names == Py_None) return false;
  PyRef it(PyObject_GetIter(names));
  while (PyObject* item = PyIter_Next(it.p)) {
    PyRef hold(item);
    const char* s = PyUnicode_AsUTF8(item);
    if (!s) throw PythonErrorAlreadySet{};
    out->insert(s);
  }
  if (PyErr_Occurred()) throw PythonErrorAlreadySet{};
  return true;
}

aot::AotOptions options_from(PyObject* kw) {
  aot::AotOptions o;
  o.fake = flag(kw, "fake", true);
  o.functionalize = flag(kw, "functionalize", true);
  o.decompose = flag(kw, "decompose", true);
  o.inference = flag(kw, "inference", false);
  o.enables_grad = flag(kw, "enables_grad", false);
  o.as_is = flag(kw, "as_is", false);
  read_names(kw, "keep", &o.keep);
  o.only_listed = read_names(kw, "only", &o.only);
  return o;
}

std::vector<graph::Value> values_of(PyObject* seq) {
  PyRef fast(PySequence_Fast(seq, "AOT: inputs must be a sequence"));
  std::vector<graph::Value> out;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.p);
  for (Py_ssize_t i = 0; i < n; ++i) out.push_back(py_to_value(PySequence_Fast_GET_ITEM(fast.p, i)));
  return out;
}

PyObject* info_of(const aot::TracedGraph& t) {
  PyRef ins(PyList_New(0));
  for (const aot::InputInfo& i : t.inputs) {
    PyRef e(Py_BuildValue("(OOi)", i.requires_grad ? Py_True : Py_False,
                          i.mutated ? Py_True : Py_False, i.duplicate_of));
    if (PyList_Append(ins.p, e.p) < 0) throw PythonErrorAlreadySet{};
  }
  PyRef outs(PyList_New(0));
  for (const aot::OutputInfo& o : t.outputs) {
    PyRef e(Py_BuildValue("(Oiii)", o.requires_grad ? Py_True : Py_False, o.aliased_input,
                          static_cast<int>(o.alias_kind), o.mutated_input));
    if (PyList_Append(outs.p, e.p) < 0) throw PythonErrorAlreadySet{};
  }
  PyRef consts(PyDict_New());
  for (const auto& [name, tensor] : t.constants) {
    PyRef v(wrap(tensor));
    if (PyDict_SetItemString(consts.p, name.c_str(), v.p) < 0) throw PythonErrorAlreadySet{};
  }
  const char* kind = t.output_kind == aot::OutputKind::Single ? "single"
                     : t.output_kind == aot::OutputKind::List ? "list"
                     : t.output_kind == aot::OutputKind::Nested ? "nested" : "tuple";
  PyRef out_views(PyList_New(0));  // (output, output it views, alias kind)
  for (size_t k = 0; k < t.outputs.size(); ++k) {
    const aot::OutputInfo& o = t.outputs[k];
    if (o.aliased_output < 0) continue;
    PyRef e(Py_BuildValue("(nii)", static_cast<Py_ssize_t>(k), o.aliased_output,
                          static_cast<int>(o.alias_kind)));
    if (!e.p || PyList_Append(out_views.p, e.p) < 0) throw PythonErrorAlreadySet{};
  }
  PyRef stale(PyList_New(0));  // (output, sizes, strides, offset)
  for (size_t k = 0; k < t.outputs.size(); ++k) {
    const aot::OutputInfo& o = t.outputs[k];
    if (!o.made_before_write) continue;
    PyRef sizes(PyList_New(0)), strides(PyList_New(0));
    for (int64_t v : o.view_sizes) {
      PyRef n(PyLong_FromLongLong(v));
      if (!n.p || PyList_Append(sizes.p, n.p) < 0) throw PythonErrorAlreadySet{};
    }
    for (int64_t v : o.view_strides) {
      PyRef n(PyLong_FromLongLong(v));
      if (!n.p || PyList_Append(strides.p, n.p) < 0) throw PythonErrorAlreadySet{};
    }
    PyRef e(Py_BuildValue("(nOOL)", static_cast<Py_ssize_t>(k), sizes.p, strides.p,
                          static_cast<long long>(o.view_offset)));
    if (!e.p || PyList_Append(stale.p, e.p) < 0) throw PythonErrorAlreadySet{};
  }
  PyRef no_grad_views(PyList_New(0)), bases(PyList_New(0)), stale_views(PyList_New(0));
  for (size_t k = 0; k < t.outputs.size(); ++k) {
    if (t.outputs[k].stale_no_grad_view) {
      PyRef n(PyLong_FromSsize_t(static_cast<Py_ssize_t>(k)));
      if (!n.p || PyList_Append(stale_views.p, n.p) < 0) throw PythonErrorAlreadySet{};
    }
    if (!t.outputs[k].no_grad_view && !t.outputs[k].intermediate_base) continue;
    PyRef n(PyLong_FromSsize_t(static_cast<Py_ssize_t>(k)));
    PyObject* list = t.outputs[k].no_grad_view ? no_grad_views.p : bases.p;
    if (!n.p || PyList_Append(list, n.p) < 0) throw PythonErrorAlreadySet{};
  }
  PyRef saved(PyList_New(0));
  for (const aot::EagerSaved& e : t.eager_saved) {
    PyRef tangents(PyList_New(0));
    for (int k : e.tangents) {
      PyRef u(PyLong_FromLong(k));
      if (!u.p || PyList_Append(tangents.p, u.p) < 0) throw PythonErrorAlreadySet{};
    }
    PyRef item(Py_BuildValue("(iO)", e.index, tangents.p));
    if (!item.p || PyList_Append(saved.p, item.p) < 0) throw PythonErrorAlreadySet{};
  }
  return Py_BuildValue("{s:O,s:O,s:O,s:s,s:O,s:O,s:O,s:O,s:O,s:O,s:O}", "joint",
                       t.joint ? Py_True : Py_False, "inputs", ins.p, "outputs", outs.p,
                       "output_kind", kind, "constants", consts.p, "eager_saved", saved.p,
                       "output_views", out_views.p, "views_made_before_writes", stale.p,
                       "no_grad_view_outputs", no_grad_views.p, "stale_no_grad_view_outputs",
                       stale_views.p, "intermediate_bases", bases.p);
}

PyObject* traced_result(aot::TracedGraph t) {
  PyRef info(info_of(t));
  PyRef g(wrap_graph(std::move(t.graph)));
  return PyTuple_Pack(2, g.p, info.p);
}

PyObject* f_aot_trace_graph(PyObject*, PyObject* args, PyObject* kw) {
  IGNIS_PY_BEGIN
  PyObject *graph, *inputs, *root;
  if (!PyArg_ParseTuple(args, "OOO", &graph, &inputs, &root)) return nullptr;
  graph::Graph& g = expect_graph(graph, "_aot_trace_graph");
  graph::Value r = root == Py_None ? graph::Value() : py_to_value(root);
  return traced_result(aot::trace_graph(g, values_of(inputs), r, options_from(kw)));
  IGNIS_PY_END(nullptr)
}

PyObject* f_aot_trace_fn(PyObject*, PyObject* args, PyObject* kw) {
  IGNIS_PY_BEGIN
  PyObject *fn, *inputs;
  if (!PyArg_ParseTuple(args, "OO", &fn, &inputs)) return nullptr;
  aot::TraceFn call = [fn](const std::vector<graph::Value>& in) {
    PyRef a(PyTuple_New(static_cast<Py_ssize_t>(in.size())));
    for (size_t i = 0; i < in.size(); ++i)
      PyTuple_SET_ITEM(a.p, static_cast<Py_ssize_t>(i), py_from_value(in[i]));
    PyRef r(PyObject_Call(fn, a.p, nullptr));
    return py_to_value(r.p);
  };
  return traced_result(aot::trace(call, values_of(inputs), options_from(kw)));
  IGNIS_PY_END(nullptr)
}

PyObject* names_list(const std::vector<std::string>& names) {
  PyRef l(PyList_New(0));
  for (const std::string& n : names) {
    PyRef s(PyUnicode_FromString(n.c_str()));
    if (PyList_Append(l.p, s.p) < 0) throw PythonErrorAlreadySet{};
  }
  return l.release();
}

PyObject* f_aot_partition(PyObject*, PyObject* args) {
  IGNIS_PY_BEGIN
  PyObject* graph;
  Py_ssize_t k;
  int min_cut;
  if (!PyArg_ParseTuple(args, "Onp", &graph, &k, &min_cut)) return nullptr;
  graph::Graph& g = expect_graph(graph, "_aot_partition");
  IGNIS_CHECK_VALUE(k >= 0, "num_fwd_outputs must be non-negative, got ", k);
  aot::Partition p = min_cut ? aot::min_cut_rematerialization_partition(g, static_cast<size_t>(k))
                             : aot::default_partition(g, static_cast<size_t>(k));
  aot::verify_partition(p);
  PyRef fw(wrap_graph(std::move(p.forward)));
  PyRef bw(wrap_graph(std::move(p.backward)));
  PyRef saved(names_list(p.saved));
  PyRef rec(names_list(p.recomputed));
  return Py_BuildValue("(OOOLO)", fw.p, bw.p, saved.p, static_cast<long long>(p.saved_bytes),
                       rec.p);
  IGNIS_PY_END(nullptr)
}

// --- Symbolic graphs (aot/symbolize.h) ---------------------------------------------
constexpr const char* kSymbolicCapsule = "ignis.aot.SymbolicGraph";

void free_symbolic(PyObject* capsule) {
  delete static_cast<aot::SymbolicGraph*>(PyCapsule_GetPointer(capsule, kSymbolicCapsule));
}

const aot::SymbolicGraph& expect_symbolic(PyObject* o) {
  void* p = PyCapsule_IsValid(o, kSymbolicCapsule) ? PyCapsule_GetPointer(o, kSymbolicCapsule)
                                                   : nullptr;
  IGNIS_CHECK_TYPE(p != nullptr, "expected a symbolic AOT graph, got ", Py_TYPE(o)->tp_name);
  return *static_cast<const aot::SymbolicGraph*>(p);
}

std::vector<int64_t> ints_of(PyObject* seq, const char* what) {
  PyRef fast(PySequence_Fast(seq, what));
  std::vector<int64_t> out;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast.p); ++i) {
    long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast.p, i));
    if (v == -1 && PyErr_Occurred()) throw PythonErrorAlreadySet{};
    out.push_back(v);
  }
  return out;
}

PyObject* f_aot_inputs_at(PyObject*, PyObject* args) {
  IGNIS_PY_BEGIN
  PyObject *graph, *inputs, *ints;
  if (!PyArg_ParseTuple(args, "OOO", &graph, &inputs, &ints)) return nullptr;
  std::vector<std::optional<int64_t>> at;
  PyRef fast(PySequence_Fast(ints, "_aot_inputs_at: ints must be a sequence"));
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast.p); ++i) {
    PyObject* v = PySequence_Fast_GET_ITEM(fast.p, i);
    if (v == Py_None) {
      at.emplace_back();
      continue;
    }
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) throw PythonErrorAlreadySet{};
    at.emplace_back(x);
  }
  std::string why;
  std::vector<sym::Expr> symbols;
  std::optional<std::vector<graph::Value>> r = aot::inputs_at(
      expect_graph(graph, "_aot_inputs_at"), values_of(inputs), at, &symbols, &why);
  if (!r) return Py_BuildValue("(OOs)", Py_None, Py_None, why.c_str());
  PyRef l(PyList_New(0)), names(PyList_New(0));
  for (const graph::Value& x : *r) {
    PyRef o(py_from_value(x));
    if (PyList_Append(l.p, o.p) < 0) throw PythonErrorAlreadySet{};
  }
  for (sym::Expr x : symbols) {
    PyRef o(PyUnicode_FromString(sym::symbol_name(x).c_str()));
    if (!o.p || PyList_Append(names.p, o.p) < 0) throw PythonErrorAlreadySet{};
  }
  return Py_BuildValue("(OOs)", l.p, names.p, "");
  IGNIS_PY_END(nullptr)
}

PyObject* f_aot_symbolize(PyObject*, PyObject* args) {
  IGNIS_PY_BEGIN
  PyObject *graphs, *symbols, *hints;
  if (!PyArg_ParseTuple(args, "OOO", &graphs, &symbols, &hints)) return nullptr;
  std::vector<const graph::Graph*> gs;
  PyRef gl(PySequence_Fast(graphs, "_aot_symbolize: graphs must be a sequence"));
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(gl.p); ++i)
    gs.push_back(&expect_graph(PySequence_Fast_GET_ITEM(gl.p, i), "_aot_symbolize"));
  std::vector<sym::Expr> syms;
  PyRef sl(PySequence_Fast(symbols, "_aot_symbolize: symbols must be a sequence"));
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(sl.p); ++i) {
    const char* name = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(sl.p, i));
    if (!name) throw PythonErrorAlreadySet{};
    syms.push_back(sym::size_var(name, {2, sym::kPosInf}));
  }
  std::vector<std::vector<int64_t>> hs;
  PyRef hl(PySequence_Fast(hints, "_aot_symbolize: hints must be a sequence"));
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(hl.p); ++i)
    hs.push_back(ints_of(PySequence_Fast_GET_ITEM(hl.p, i), "_aot_symbolize: a hint"));
  std::string why;
  std::optional<aot::SymbolicGraph> s = aot::symbolize(gs, syms, hs, &why);
  if (!s) return Py_BuildValue("(Os)", Py_None, why.c_str());
  PyRef cap(PyCapsule_New(new aot::SymbolicGraph(std::move(*s)), kSymbolicCapsule,
                          free_symbolic));
  return Py_BuildValue("(Os)", cap.p, "");
  IGNIS_PY_END(nullptr)
}

PyObject* f_aot_instantiate(PyObject*, PyObject* args) {
  IGNIS_PY_BEGIN
  PyObject *symbolic, *values;
  if (!PyArg_ParseTuple(args, "OO", &symbolic, &values)) return nullptr;
  return wrap_graph(aot::instantiate(expect_symbolic(symbolic),
                                     ints_of(values, "_aot_instantiate: values")));
  IGNIS_PY_END(nullptr)
}

PyObject* f_aot_symbolic_printable(PyObject*, PyObject* symbolic) {
  IGNIS_PY_BEGIN
  return wrap_graph(aot::printable(expect_symbolic(symbolic)));
  IGNIS_PY_END(nullptr)
}

PyObject* f_aot_symbolic_leaves(PyObject*, PyObject* symbolic) {
  IGNIS_PY_BEGIN
  return PyLong_FromSize_t(expect_symbolic(symbolic).leaves.size());
  IGNIS_PY_END(nullptr)
}

// --- FakeTensorMode ----------------------------------------------------------------
struct PyFakeMode {
  PyObject_HEAD
  aot::FakeTensorMode* mode;
  std::vector<aot::FakeModeGuard*>* guards;  // entered, innermost last
};

PyObject* fake_new(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* o = type->tp_alloc(type, 0);
  if (!o) return nullptr;
  auto* f = reinterpret_cast<PyFakeMode*>(o);
  f->mode = new aot::FakeTensorMode();
  f->guards = new std::vector<aot::FakeModeGuard*>();
  return o;
}

void fake_dealloc(PyObject* self) {
  auto* f = reinterpret_cast<PyFakeMode*>(self);
  for (auto it = f->guards->rbegin(); it != f->guards->rend(); ++it) delete *it;
  delete f->guards;
  delete f->mode;
  Py_TYPE(self)->tp_free(self);
}

PyObject* fake_from_tensor(PyObject* self, PyObject* t) {
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(is_tensor(t), "from_tensor expects a tensor, got ", Py_TYPE(t)->tp_name);
  return wrap(reinterpret_cast<PyFakeMode*>(self)->mode->from_tensor(unwrap(t)));
  IGNIS_PY_END(nullptr)
}

PyObject* fake_enter(PyObject* self, PyObject*) {
  auto* f = reinterpret_cast<PyFakeMode*>(self);
  f->guards->push_back(new aot::FakeModeGuard(*f->mode));
  Py_INCREF(self);
  return self;
}

PyObject* fake_exit(PyObject* self, PyObject*) {
  auto* f = reinterpret_cast<PyFakeMode*>(self);
  if (!f->guards->empty()) {
    delete f->guards->back();
    f->guards->pop_back();
  }
  Py_RETURN_FALSE;
}

PyMethodDef fake_methods[] = {
    {"from_tensor", fake_from_tensor, METH_O,
     "A fake tensor with t's metadata (memoized; views stay views)."},
    {"__enter__", fake_enter, METH_NOARGS, nullptr},
    {"__exit__", fake_exit, METH_VARARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyMethodDef functions[] = {
    {"_aot_trace_graph", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(
                             f_aot_trace_graph)), METH_VARARGS | METH_KEYWORDS, nullptr},
    {"_aot_trace_fn", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f_aot_trace_fn)),
     METH_VARARGS | METH_KEYWORDS, nullptr},
    {"_aot_partition", f_aot_partition, METH_VARARGS, nullptr},
    {"_aot_inputs_at", f_aot_inputs_at, METH_VARARGS, nullptr},
    {"_aot_symbolize", f_aot_symbolize, METH_VARARGS, nullptr},
    {"_aot_instantiate", f_aot_instantiate, METH_VARARGS, nullptr},
    {"_aot_symbolic_printable", f_aot_symbolic_printable, METH_O, nullptr},
    {"_aot_symbolic_leaves", f_aot_symbolic_leaves, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_aot(PyObject* module) {
  try {
    aot::register_tracing_kernels();
  } catch (...) {
    set_python_error();
    return false;
  }
  static PyType_Slot slots[] = {
      {Py_tp_new, reinterpret_cast<void*>(fake_new)},
      {Py_tp_dealloc, reinterpret_cast<void*>(fake_dealloc)},
      {Py_tp_methods, fake_methods},
      {0, nullptr},
  };
  static PyType_Spec spec = {"ignis._C.FakeTensorMode", sizeof(PyFakeMode), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
  PyObject* t = PyType_FromSpec(&spec);
  if (!t || PyModule_AddObject(module, "FakeTensorMode", t) < 0) {
    Py_XDECREF(t);
    return false;
  }
  return PyModule_AddFunctions(module, functions) == 0;
}

}  // namespace ignis::py

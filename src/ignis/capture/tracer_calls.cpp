// The tracer's operations on variable trackers: reading values from the
// frame (with guards), tensor operations as graph nodes computed on fake
// tensors, attribute access, calls (ops, builtins, inlined user functions,
// nn.Module forward), containers and iteration.
#include <algorithm>
#include <cstring>

#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/capture/eval_frame.h"
#include "ignis/capture/tracer_impl.h"
#include "ignis/ops/sym_shape.h"
#include "ignis/core/str.h"
#include "ignis/ops/op_def.h"
#include "ignis/python/py_common.h"
#include "ignis/sym/eval.h"
#include "ignis/sym/print.h"

namespace ignis::capture {

namespace {


PyObject* ig(const char* name) { return py_import_attr("ignis", name); }


// The Python class of the value a tracker stands for (what type() gives),
// or nullptr for trackers with no Python counterpart (NULL, cells).
PyTypeObject* python_type(const VTP& v) {
  switch (v->kind) {
    case VK::Tensor:
      return v->value ? Py_TYPE(v->value.get()) : reinterpret_cast<PyTypeObject*>(py::TensorClass);
    case VK::List: return &PyList_Type;
    case VK::Tuple: return v->pytype ? reinterpret_cast<PyTypeObject*>(v->pytype.get()) : &PyTuple_Type;
    case VK::Dict: return v->pytype ? reinterpret_cast<PyTypeObject*>(v->pytype.get()) : &PyDict_Type;
    case VK::LocalObject: return reinterpret_cast<PyTypeObject*>(v->pytype.get());
    case VK::SymInt: return &PyLong_Type;  // an int at run time, whatever its value
    case VK::Slice: return &PySlice_Type;
    default: return v->value ? Py_TYPE(v->value.get()) : nullptr;
  }
}

PyTypeObject* op_type() {
  static PyTypeObject* t = Py_TYPE(ig("relu"));
  return t;
}
bool is_op(PyObject* o) { return PyObject_TypeCheck(o, op_type()); }


// functools.partial(ignis.autograd.grad_mode._grad_exit, prev)
bool is_grad_exit(PyObject* o) {
  static PyObject* partial = py_import_attr("functools", "partial");
  static PyObject* exit_fn = py_import_attr("ignis.autograd.grad_mode", "_grad_exit");
  if (Py_TYPE(o) != reinterpret_cast<PyTypeObject*>(partial)) return false;
  Obj func = Obj::steal(PyObject_GetAttrString(o, "func"));
  Obj args = Obj::steal(PyObject_GetAttrString(o, "args"));
  if (!func || !args) {
    PyErr_Clear();
    return false;
  }
  return func.get() == exit_fn && PyTuple_Check(args.get()) && PyTuple_GET_SIZE(args.get()) == 1 &&
         PyBool_Check(PyTuple_GET_ITEM(args.get(), 0));
}

bool is_nn_module_type(PyObject* t) {
  static PyObject* cls = py_import_attr("ignis.nn", "Module");
  int r = PyObject_IsSubclass(t, cls);
  if (r < 0) throw PyErrorSet{};
  return r;
}

bool is_nn_module(PyObject* o) { return is_nn_module_type(reinterpret_cast<PyObject*>(Py_TYPE(o))); }

bool type_named(PyObject* o, const char* name) {
  return std::strcmp(Py_TYPE(o)->tp_name, name) == 0 ||
         std::strcmp(Py_TYPE(o)->tp_name, (std::string("ignis._C._capture.") + name).c_str()) == 0;
}

bool set_of_constants(PyObject* o);

// Values that cannot change and compare by value.
bool is_immutable(PyObject* o) {
  if (o == Py_None || o == Py_Ellipsis || o == Py_NotImplemented || PyBool_Check(o) ||
      PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyComplex_CheckExact(o) ||
      PyUnicode_CheckExact(o) || PyBytes_CheckExact(o) || PyRange_Check(o) || PySlice_Check(o))
    return true;
  if (py::is_dtype(o) || py::is_device(o) || py::is_memory_format(o)) return true;
  // ignis.finfo / ignis.iinfo: frozen records of a dtype's limits.
  static PyObject* finfo_t = py_import_attr("ignis._dtype_info", "finfo");
  static PyObject* iinfo_t = py_import_attr("ignis._dtype_info", "iinfo");
  if (reinterpret_cast<PyObject*>(Py_TYPE(o)) == finfo_t || reinterpret_cast<PyObject*>(Py_TYPE(o)) == iinfo_t)
    return true;
  if (PyTuple_Check(o)) {
    if (!PyTuple_CheckExact(o) && !(py::SizeClass && PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(py::SizeClass))))
      return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); ++i)
      if (!is_immutable(PyTuple_GET_ITEM(o, i))) return false;
    return true;
  }
  if (PyFrozenSet_CheckExact(o)) return set_of_constants(o);
  return false;
}

// A set or frozenset whose items are all immutable (the items of a set are
// hashable, but a hashable object may still change).
bool set_of_constants(PyObject* o) {
  Py_ssize_t pos = 0;
  PyObject* key;
  Py_hash_t hash;
  while (_PySet_NextEntry(o, &pos, &key, &hash))
    if (!is_immutable(key)) return false;
  return true;
}

// Objects used by identity: calling or reading them does not depend on
// mutable state capture must track.
bool is_identity_object(PyObject* o) {
  return PyModule_Check(o) || PyType_Check(o) || PyCFunction_Check(o) || PyFunction_Check(o) ||
         PyMethod_Check(o) || is_op(o) || type_named(o, "CompiledFunction") ||
         type_named(o, "DisabledFunction") || Py_TYPE(o) == &PyMethodDescr_Type ||
         Py_TYPE(o) == &PyWrapperDescr_Type || Py_TYPE(o) == &_PyMethodWrapper_Type ||
         PyObject_TypeCheck(o, &PyProperty_Type) ||
         Py_TYPE(o) == reinterpret_cast<PyTypeObject*>(py_import_attr("functools", "_lru_cache_wrapper"));
}

std::string sanitize(const std::string& s) {
  std::string out;
  bool under = false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok) {
      out += c;
      under = false;
    } else if (!under) {
      out += '_';
      under = true;
    }
  }
  return out;
}

const char* kind_name(VK k) {
  switch (k) {
    case VK::Const: return "constant";
    case VK::Tensor: return "tensor";
    case VK::List: return "list";
    case VK::Tuple: return "tuple";
    case VK::Dict: return "dict";
    case VK::Iter: return "iterator";
    case VK::Func: return "function";
    case VK::Module: return "nn.Module";
    case VK::Object: return "object";
    case VK::Method: return "method";
    case VK::TensorAttr: return "tensor method";
    case VK::Cell: return "cell";
    case VK::Null: return "NULL";
    case VK::GradMode: return "grad-mode context";
    case VK::GradExit: return "grad-mode exit";
    case VK::Set: return "set";
    case VK::Partial: return "functools.partial";
    case VK::LocalObject: return "object";
    case VK::Super: return "super()";
    case VK::Autocast: return "ignis.autocast";
    case VK::AutocastExit: return "ignis.autocast exit";
    case VK::SymInt: return "symbolic int";
    case VK::Slice: return "slice";
  }
  return "value";
}

std::string describe(const VTP& v) {
  if (v->kind == VK::Const || v->kind == VK::Object) {
    Obj r = Obj::steal(PyObject_Repr(v->value.get()));
    if (!r) {
      PyErr_Clear();
      return kind_name(v->kind);
    }
    std::string s = utf8(r.get());
    if (s.size() > 80) s = s.substr(0, 77) + "...";
    return s;
  }
  return kind_name(v->kind);
}

std::string frame_line(const TFrame& f) {
  return str("    File \"", f.ci->filename, "\", line ", f.line, ", in ", f.ci->name, "\n");
}

std::string callable_name(PyObject* fn) {
  Obj q = Obj::steal(PyObject_GetAttrString(fn, "__qualname__"));
  if (!q) {
    PyErr_Clear();
    q = Obj::steal(PyObject_GetAttrString(fn, "__name__"));
  }
  if (!q) {
    PyErr_Clear();
    Obj r = Obj::steal(PyObject_Repr(fn));
    if (!r) {
      PyErr_Clear();
      return "?";
    }
    return utf8(r.get());
  }
  Obj m = Obj::steal(PyObject_GetAttrString(fn, "__module__"));
  if (!m) PyErr_Clear();
  std::string mod = m && PyUnicode_Check(m.get()) ? utf8(m.get()) : "";
  if (mod == "builtins" || mod.empty()) return utf8(q.get());
  return mod + "." + utf8(q.get());
}

// Why a call of `name` cannot join a graph: its result depends on tensor data
// (or, for a few Tensor methods, it leaves ignis or changes autograd state).
// Ignis ops declare it (OpDef::data_dependent; a name counts when each of its
// overloads does). Ops whose meta rule refuses need no declaration: the
// refusal breaks the graph too.
const char* data_dependent_reason(const std::string& name) {
  const std::vector<OpHandle*>& ops = Dispatcher::get().overloads(name);
  if (!ops.empty()) {
    for (const OpHandle* h : ops)
      if (!h->def() || h->def()->data_dependent.empty()) return nullptr;
    return ops[0]->def()->data_dependent.c_str();
  }
  // Tensor methods that are no ops.
  static const std::pair<const char*, const char*> table[] = {
      {"item", "Tensor.item() reads a tensor's value into Python (data-dependent)"},
      {"tolist", "Tensor.tolist() reads a tensor's values into Python (data-dependent)"},
      {"numpy", "Tensor.numpy() leaves ignis"},
      {"__bool__", "bool() of a tensor reads its value (data-dependent)"},
      {"__int__", "int() of a tensor reads its value (data-dependent)"},
      {"__float__", "float() of a tensor reads its value (data-dependent)"},
      {"__index__", "using a tensor as an index reads its value (data-dependent)"},
      {"data_ptr", "Tensor.data_ptr() reads an address"},
      {"backward", "Tensor.backward() inside a captured function"},
      {"register_hook", "Tensor.register_hook() inside a captured function"},
      {"retain_grad", "Tensor.retain_grad() inside a captured function"},
      {"requires_grad_", "Tensor.requires_grad_() inside a captured function"},
  };
  for (auto& [n, r] : table)
    if (name == n) return r;
  return nullptr;
}

}  // namespace

// --- reading the frame ----------------------------------------------------------------------
Obj Tracer::const_value(const VTP& v) {
  switch (v->kind) {
    case VK::Const: return v->value;
    case VK::SymInt:  // a use that needs a real int: the size is pinned (guarded)
      return check(PyLong_FromLongLong(specialize(v, "used as a Python int")));
    case VK::Slice: {
      Obj p[3];
      for (size_t i = 0; i < 3; ++i) p[i] = const_value(v->items[i]);
      return check(PySlice_New(p[0].get(), p[1].get(), p[2].get()));
    }
    case VK::Set: return v->value;  // a private set of constants
    case VK::List:
    case VK::Tuple: {
      Obj l = check(PyList_New(0));
      for (auto& e : v->items) {
        Obj ev = const_value(e);
        if (!ev) return Obj();
        PyList_Append(l.get(), ev.get());
      }
      if (v->kind == VK::List) return l;
      Obj t = check(PyList_AsTuple(l.get()));
      if (v->pytype) {
        if (PyObject_HasAttrString(v->pytype.get(), "_make"))
          return check(PyObject_CallMethod(v->pytype.get(), "_make", "O", t.get()));
        return check(PyObject_CallOneArg(v->pytype.get(), t.get()));
      }
      return t;
    }
    case VK::Dict: {
      Obj d = check(PyDict_New());
      for (size_t i = 0; i < v->keys.size(); ++i) {
        Obj ev = const_value(v->items[i]);
        if (!ev) return Obj();
        PyDict_SetItem(d.get(), v->keys[i].get(), ev.get());
      }
      return d;
    }
    default: return Obj();
  }
}

void Tracer::mark_mutated(const VTP& v, const char* what) {
  if (v->local) return;
  if (v->reg < 0)
    throw Unsupported{str(what, " on a ", kind_name(v->kind), " capture cannot write back")};
  if (!v->mutated) {
    v->mutated = true;
    mutated.push_back(v);
  }
}

VTP Tracer::wrap_input(PyObject* value, int reg) {
  if (reg >= 0) {
    auto found = reg_vt.find(reg);
    if (found != reg_vt.end()) return found->second;
  }
  GuardProgram& g = guards();
  VTP v;
  if (py::is_tensor(value)) {
    if (reg < 0) throw Unsupported{"a tensor capture cannot read back at run time (no source)"};
    v = std::make_shared<VT>(VK::Tensor);
    v->value = Obj::borrow(value);
    v->fake = fake_of(value);
    v->local = false;
    const Tensor& t = py::unwrap(value);
    TensorGuardSpec spec;
    spec.type = Py_TYPE(value);
    spec.dtype = static_cast<int>(t.dtype());
    spec.device_type = static_cast<int>(t.device().type);
    spec.device_index = t.device().index;
    Obj rg = check(PyObject_GetAttrString(value, "requires_grad"));
    spec.requires_grad = rg.get() == Py_True;
    spec.sizes.assign(t.sizes().begin(), t.sizes().end());
    spec.strides.assign(t.strides().begin(), t.strides().end());
    make_dynamic(v, value, reg, spec);
    g.check_tensor(reg, std::move(spec));
    bind_sizes(reg);
    for (size_t d = 0; d < t.sizes().size(); ++d)
      if (t.sizes()[d] == 1)
        unit_strides.push_back({reg, static_cast<int>(d), t.strides()[d],
                                str(g.source_name(reg), ".stride()[", d, "]")});
    if (!lazy_regs.count(reg)) {
      v->reg = reg;
      reg_vt[reg] = v;
      node_of(v);
      return v;
    }
  } else if (is_immutable(value)) {
    if (reg >= 0) {
      if (VTP s = dynamic_int(value, reg)) {  // an int argument that varies: a symbol
        reg_vt[reg] = s;
        return s;
      }
      if (value == Py_None)
        g.check_none(reg, true);
      else if (value == Py_Ellipsis || value == Py_NotImplemented || PySlice_Check(value))
        g.check_id(reg, value);
      else
        g.check_equals(reg, value);  // pins the type too (a set never equals a frozenset here)
    }
    v = make_const(value);
  } else if (is_grad_exit(value)) {
    // The __exit__ of a grad-mode block a break interrupted (tracer_output.cpp).
    if (reg < 0) throw Unsupported{"a grad-mode exit capture cannot guard"};
    g.check_type(reg, Py_TYPE(value));
    Obj args = check(PyObject_GetAttrString(value, "args"));
    g.check_equals(g.attr(reg, PyUnicode_InternFromString("args")), args.get());
    v = std::make_shared<VT>(VK::GradExit);
    v->grad_prev = PyTuple_GET_ITEM(args.get(), 0) == Py_True;
  } else if (is_identity_object(value)) {
    if (reg >= 0) g.check_id(reg, value);
    v = make_const(value);
  } else if (is_nn_module(value)) {
    if (reg < 0) throw Unsupported{"an nn.Module capture cannot guard (no source)"};
    // By type, not identity (as Dynamo with inlined nn modules): everything
    // the trace reads from the module (attributes, submodules, parameters,
    // its length) is loaded and guarded through its source, so instances of
    // one class (a model's 12 blocks) share a cache entry.
    g.check_type(reg, Py_TYPE(value));
    v = std::make_shared<VT>(VK::Module);
    v->value = Obj::borrow(value);
    v->local = false;
  } else if (PyList_CheckExact(value) || PyTuple_Check(value)) {
    if (reg < 0) throw Unsupported{"a container capture cannot guard (no source)"};
    bool is_list = PyList_CheckExact(value);
    g.check_type(reg, Py_TYPE(value));
    Py_ssize_t n = PySequence_Size(value);
    g.check_len(reg, n);
    v = std::make_shared<VT>(is_list ? VK::List : VK::Tuple);
    v->local = false;
    v->reg = reg;
    reg_vt[reg] = v;  // before the items: a list may contain itself
    if (!is_list && !PyTuple_CheckExact(value)) v->pytype = Obj::borrow(reinterpret_cast<PyObject*>(Py_TYPE(value)));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = is_list ? PyList_GET_ITEM(value, i) : PyTuple_GET_ITEM(value, i);
      int ireg = g.item(reg, i);
      lazy_regs.insert(ireg);  // container items are lazy, as in Dynamo
      v->items.push_back(wrap_input(item, ireg));
    }
    return v;
  } else if (PyDict_Check(value)) {
    if (reg < 0) throw Unsupported{"a dict capture cannot guard (no source)"};
    g.check_type(reg, Py_TYPE(value));
    g.check_len(reg, PyDict_Size(value));
    v = std::make_shared<VT>(VK::Dict);
    v->local = false;
    v->reg = reg;
    if (!PyDict_CheckExact(value)) v->pytype = Obj::borrow(reinterpret_cast<PyObject*>(Py_TYPE(value)));
    reg_vt[reg] = v;
    PyObject *k, *x;
    Py_ssize_t pos = 0;
    std::vector<std::pair<PyObject*, PyObject*>> kvs;
    while (PyDict_Next(value, &pos, &k, &x)) kvs.emplace_back(k, x);
    for (auto& [key, val] : kvs) {
      // Constants, or objects hashed by identity (a table keyed by type).
      if (!is_immutable(key) && !is_identity_object(key))
        throw Unsupported{"a dict with keys that are not constants"};
      v->keys.push_back(Obj::borrow(key));
      int ireg = g.dict_item(reg, key);
      lazy_regs.insert(ireg);
      v->items.push_back(wrap_input(val, ireg));
    }
    return v;
  } else if (PySet_CheckExact(value) && set_of_constants(value)) {
    // A set of constants from the frame (a module's table of names): traced
    // on a private copy, guarded equal to it. Its mutating methods break the
    // graph (call_method): capture does not write sets back.
    if (reg < 0) throw Unsupported{"a set capture cannot guard (no source)"};
    v = std::make_shared<VT>(VK::Set);
    v->value = check(PySet_New(value));
    v->local = false;
    g.check_equals(reg, v->value.get());  // type and items
  } else if (Py_IS_TYPE(value, &PyRangeIter_Type) || Py_IS_TYPE(value, &PyListIter_Type) ||
             Py_IS_TYPE(value, &PyTupleIter_Type)) {
    // An iterator a resume function received mid-loop: read its sequence and
    // position through __reduce__ -> (iter, (seq,), index).
    if (reg < 0) throw Unsupported{"an iterator capture cannot guard (no source)"};
    g.check_type(reg, Py_TYPE(value));
    Obj red = check(PyObject_CallMethod(value, "__reduce__", nullptr));
    int rr = g.call_method0(reg, "__reduce__");
    Py_ssize_t n = PyTuple_Size(red.get());
    g.check_len(rr, n);
    if (n == 3) {
      PyObject* seq = PyTuple_GET_ITEM(PyTuple_GET_ITEM(red.get(), 1), 0);
      PyObject* index = PyTuple_GET_ITEM(red.get(), 2);
      g.check_equals(g.item(rr, 2), index);
      VTP s = wrap_input(seq, g.item(g.item(rr, 1), 0));
      v = get_iter(s);
      if (v == s) throw Unsupported{"internal: iterator over an iterator"};
      // 3.12 reduces a range iterator to the remaining range and index None.
      v->index = index == Py_None ? 0 : static_cast<size_t>(PyLong_AsSsize_t(index));
      if (PyErr_Occurred()) throw PyErrorSet{};
    } else {
      v = get_iter(make_list({}));  // exhausted
    }
    v->local = false;
  } else {
    if (reg < 0) {
      v = std::make_shared<VT>(VK::Object);
      v->value = Obj::borrow(value);
      return v;
    }
    g.check_type(reg, Py_TYPE(value));
    v = std::make_shared<VT>(VK::Object);
    v->value = Obj::borrow(value);
    v->local = false;
  }
  v->reg = reg;
  if (reg >= 0) reg_vt[reg] = v;
  return v;
}

VTP Tracer::root_arg(int i) {
  int reg = guards().local(i, root->ci->slot_names[i]);
  lazy_regs.insert(reg);
  return wrap_input(fv.args[i], reg);
}

void Tracer::realize(const VTP& v) {
  if (v && v->kind == VK::Tensor && !v->node) node_of(v);
}

VTP Tracer::load_global(TFrame& f, PyObject* name) {
  for (auto& w : global_writes)  // written earlier in this trace
    if (w.globals.get() == f.globals.get() && PyUnicode_Compare(w.name.get(), name) == 0)
      return w.value;
  PyObject* value = PyDict_GetItemWithError(f.globals.get(), name);
  if (!value && PyErr_Occurred()) throw PyErrorSet{};
  bool in_globals = value != nullptr;
  if (!value) {
    value = PyDict_GetItemWithError(f.builtins.get(), name);
    if (!value && PyErr_Occurred()) throw PyErrorSet{};
  }
  if (!value) throw Unsupported{str("name '", utf8(name), "' is not defined")};
  if (f.globals.get() == fv.globals) return wrap_input(value, guards().global(name));
  if (!in_globals) {
    // A builtin seen from another module's code: read through that module's
    // globals' builtins (normally the interpreter's own).
    return wrap_input(value, guards().dict_item(guards().object(f.builtins.get(), "__builtins__"), name));
  }
  // Another module's global (a layer's `F`, a model file's constants):
  // loaded from that module's globals dict, and guarded as any value.
  PyObject* modname = PyDict_GetItemString(f.globals.get(), "__name__");
  std::string root = str("G['", modname && PyUnicode_Check(modname) ? utf8(modname) : "?", "']");
  return wrap_input(value, guards().dict_item(guards().object(f.globals.get(), root), name));
}

VTP Tracer::cell_contents(TFrame&, const VTP& cell) {
  if (cell->local && !cell->value) return cell->items.empty() ? nullptr : cell->items[0];
  PyObject* contents = PyCell_GET(cell->value.get());
  if (!contents) return nullptr;
  return wrap_input(contents, cell->reg);
}

// --- graph building ----------------------------------------------------------------------------
namespace {

// Runs a conversion of the binding layer (py_graph.cpp), which reports
// errors as C++ exceptions, where the tracer expects a Python error: a value
// the graph cannot hold breaks the graph like any failing step.
template <typename F>
auto binding(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    py::set_python_error();
    throw PyErrorSet{};
  }
}

void set_tensor_meta(graph::Node* n, PyObject* fake) {
  n->meta().tensors = {graph::TensorMeta::of(py::unwrap(fake))};
  n->meta().tuple_output = false;
}

}  // namespace

// A no-grad view read from the frame (made under no_grad, perhaps by an
// earlier graph's runtime) stays one on its fake: a view of its base's fake,
// sharing its version counter, and stale when the real one is. So what eager
// refuses on it (an in-place op with grad mode on, a use with grad after its
// base was written while requiring grad) raises on the fakes too, and the
// graph breaks before that op, after the side effects traced before it
// (fuzz seed 80029: a global increment lost when the graph raised instead).
static void mirror_no_grad_view(aot::FakeTensorMode& mode, const Tensor& real, const Tensor& fake) {
  const autograd::AutogradMeta* m = autograd::get_meta(real);
  if (!m || !m->is_view_ || !m->no_grad_view_ || !m->base_.defined() || real.is_same(m->base_))
    return;
  if (const autograd::AutogradMeta* fm = autograd::get_meta(fake); fm && fm->is_view_) return;
  Tensor base = mode.from_tensor(m->base_);  // shares the fake's version counter
  autograd::set_view_of(fake, base, /*no_grad=*/true);
  // The real view's version against the fake counter, which started at the
  // real one's value: stale when the real is, or when a write to the base
  // was traced before this fake was made (Note [Fake version counters]).
  autograd::get_meta(fake)->view_version_ = m->view_version_;
}

Obj Tracer::fake_of(PyObject* real) {
  const Tensor& r = py::unwrap(real);
  Tensor f = fake_mode.from_tensor(r);
  mirror_no_grad_view(fake_mode, r, f);
  return check(py::wrap(f));
}

const graph::Target& Tracer::target_of(PyObject* fn) {
  auto it = targets.find(fn);
  if (it == targets.end()) {
    graph::Target t = binding([&] { return py::py_to_target(fn, graph::OpKind::CallFunction); });
    it = targets.emplace(fn, std::make_pair(Obj::borrow(fn), std::move(t))).first;
  }
  return it->second.second;
}

graph::Node* Tracer::node_of(const VTP& t) {
  if (t->node) return t->node.get();
  if (t->reg < 0) throw Unsupported{"internal: tensor without node or source"};
  if (!t->sym_sizes.empty()) lift_symbols(t);
  std::string target = sanitize(guards().source_name(t->reg));
  PyObject* type = t->value ? reinterpret_cast<PyObject*>(Py_TYPE(t->value.get()))
                            : reinterpret_cast<PyObject*>(py::TensorClass);
  graph::Node* ph = ir->placeholder(target);
  binding([&] { py::py_set_node_type(ph, type); });
  std::string lower = target;
  for (char& c : lower) c = static_cast<char>(std::tolower(c));
  ph->rename(lower);
  // Placeholders go before every other node.
  for (graph::Node* n : ir->nodes()) {
    if (n->op() != graph::OpKind::Placeholder) {
      n->prepend(ph);
      break;
    }
  }
  set_tensor_meta(ph, t->fake.get());
  if (!t->sym_sizes.empty()) {
    graph::TensorMeta& m = ph->meta().tensors[0];
    m.sym_sizes = sizes_of(t);
    const Tensor& f = py::unwrap(t->fake.get());
    if (!t->sym_strides.empty()) {
      for (const sym::Expr& e : t->sym_strides) m.sym_strides.push_back(shape_env.replace(e));
    } else if (f.is_contiguous()) {
      m.sym_strides = sym_shape::contiguous_strides(m.sym_sizes);
    }
  }
  t->node = graph::NodePtr(ph);
  t->name_set = true;
  inputs.push_back(t);
  example_inputs.push_back(t->value);
  return ph;
}

namespace {
// An argument a graph cannot hold: a graph break, the call running eagerly.
[[noreturn]] void unsupported_arg(const VTP& v) {
  if (v->value && py::is_generator(v->value.get()))
    throw Unsupported{"a random op called with generator= (it runs eagerly, drawing from that "
                      "generator)"};
  throw Unsupported{str("passing a ", kind_name(v->kind), " to a tensor operation")};
}
}  // namespace

graph::Value Tracer::graph_arg(const VTP& v) {
  switch (v->kind) {
    case VK::Tensor: return graph::Value(node_of(v));
    case VK::SymInt:
      // An undecided comparison has no node: the use decides it (a data-dependent break).
      if (sym::is_comparison(v->sym.kind())) shape_env.evaluate(v->sym);
      return graph::Value(v->node ? v->node.get() : lift_int(v));
    case VK::Slice:
      return graph::Value::slice(graph_arg(v->items[0]), graph_arg(v->items[1]), graph_arg(v->items[2]));
    case VK::Const: return binding([&] { return py::py_to_value(v->value.get()); });
    case VK::List:
    case VK::Tuple: {
      graph::Value::Items items;
      items.reserve(v->items.size());
      for (auto& e : v->items) items.push_back(graph_arg(e));
      return v->kind == VK::List ? graph::Value::list(std::move(items))
                                 : graph::Value::tuple(std::move(items));
    }
    case VK::Dict: {
      graph::Value::Items kv;
      for (size_t i = 0; i < v->keys.size(); ++i) {
        kv.push_back(binding([&] { return py::py_to_value(v->keys[i].get()); }));
        kv.push_back(graph_arg(v->items[i]));
      }
      return graph::Value::dict(std::move(kv));
    }
    default:
      unsupported_arg(v);
  }
}

Obj Tracer::fake_arg(const VTP& v) {
  switch (v->kind) {
    case VK::Tensor: return v->fake;
    case VK::SymInt: return check(PyLong_FromLongLong(v->hint));  // fakes run at the hints
    case VK::Slice: {
      Obj p[3];
      for (size_t i = 0; i < 3; ++i) p[i] = fake_arg(v->items[i]);
      return check(PySlice_New(p[0].get(), p[1].get(), p[2].get()));
    }
    case VK::Const: return v->value;
    case VK::List:
    case VK::Tuple: {
      Py_ssize_t n = static_cast<Py_ssize_t>(v->items.size());
      Obj l = check(v->kind == VK::List ? PyList_New(n) : PyTuple_New(n));
      for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* a = fake_arg(v->items[i]).release();
        if (v->kind == VK::List) PyList_SET_ITEM(l.get(), i, a);
        else PyTuple_SET_ITEM(l.get(), i, a);
      }
      return l;
    }
    case VK::Dict: {
      Obj d = check(PyDict_New());
      for (size_t i = 0; i < v->keys.size(); ++i) {
        Obj a = fake_arg(v->items[i]);
        if (PyDict_SetItem(d.get(), v->keys[i].get(), a.get()) < 0) throw PyErrorSet{};
      }
      return d;
    }
    default:
      unsupported_arg(v);
  }
}

void Tracer::rename_node(const VTP& t, const std::string& name) {
  if (t->name_set || !t->node) return;
  t->node->rename(name);
  t->name_set = true;
}

namespace {
// An index (a tensor, or a tuple holding some) with a boolean tensor in it.
bool bool_mask_index(PyObject* index) {
  auto is_mask = [](PyObject* o) {
    return py::is_tensor(o) && py::unwrap(o).dtype() == ScalarType::Bool;
  };
  if (!PyTuple_Check(index)) return is_mask(index);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(index); ++i)
    if (is_mask(PyTuple_GET_ITEM(index, i))) return true;
  return false;
}

// Eager's index_put_ records itself when grad mode is on and the target or
// the value requires grad, and autograd refuses the write there (a leaf that
// requires grad, a view of one, a no-grad view): the same check, on the fakes.
void check_masked_assignment(PyObject* target, PyObject* value) {
  if (!py::is_tensor(target) || !autograd::grad_enabled()) return;
  const Tensor& t = py::unwrap(target);
  const bool value_requires_grad = py::is_tensor(value) && autograd::requires_grad(py::unwrap(value));
  if (!autograd::requires_grad(t) && !value_requires_grad) return;
  try {
    autograd::check_inplace(t);
  } catch (const std::exception& e) {
    throw Unsupported{str("an assignment through a boolean mask fails on the traced values: ",
                          e.what())};
  }
}
}  // namespace

Obj Tracer::run_on_fakes(PyObject* fn, const std::string& method, const std::vector<VTP>& args,
                         const std::vector<std::pair<std::string, VTP>>& kwargs) {
  Obj result;
  {
    size_t first = method.empty() ? 0 : 1;  // a method's self is what it is looked up on
    Obj fargs = check(PyTuple_New(static_cast<Py_ssize_t>(args.size() - first)));
    for (size_t i = first; i < args.size(); ++i)
      PyTuple_SET_ITEM(fargs.get(), i - first, fake_arg(args[i]).release());
    Obj fkw = check(PyDict_New());
    for (auto& [k, v] : kwargs) {
      Obj f = fake_arg(v);
      if (PyDict_SetItemString(fkw.get(), k.c_str(), f.get()) < 0) throw PyErrorSet{};
    }
    Obj callable = method.empty()
                       ? Obj::borrow(fn)
                       : check(PyObject_GetAttrString(fake_arg(args.at(0)).get(), method.c_str()));
    {
      // Factories called here make fakes too, and a device argument (.to,
      // .cuda, device=) gives fakes standing for that device.
      aot::FakeModeGuard mode(fake_mode);
      result = Obj::steal(PyObject_Call(callable.get(), fargs.get(), fkw.get()));
    }
    if (!result) {
      std::string what = method.empty() ? callable_name(fn) : "Tensor." + method;
      PyObject *t, *v, *tb;
      PyErr_Fetch(&t, &v, &tb);
      std::string msg = "?";
      if (v) {
        Obj s = Obj::steal(PyObject_Str(v));
        if (s) msg = utf8(s.get());
      }
      Py_XDECREF(t);
      Py_XDECREF(v);
      Py_XDECREF(tb);
      PyErr_Clear();
      throw Unsupported{str(what, " failed on the traced values: ", msg)};
    }
  }
  return result;
}

// `out=`: recorded as user code would write it, r = op(...) then
// out.copy_(r), so the write reaches the graph as a copy_ that
// functionalization sees (a node with an `out` keyword would be dead code).
// An `out` of another shape (eager resizes it, with a warning) and results
// that require grad (an error in eager) run eagerly after a break; both are
// checked on the fakes before anything is recorded.
VTP Tracer::call_graph_out(PyObject* fn, const std::string& method, const std::vector<VTP>& args,
                           const std::vector<std::pair<std::string, VTP>>& kwargs, size_t at) {
  VTP out = kwargs[at].second;
  std::vector<std::pair<std::string, VTP>> rest = kwargs;
  rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(at));
  if (out->kind == VK::Const && out->value.get() == Py_None) return call_graph(fn, method, args, rest);
  std::vector<VTP> outs;
  if (out->kind == VK::Tensor) outs.push_back(out);
  else if (out->kind == VK::Tuple || out->kind == VK::List) outs = out->items;
  for (const VTP& o : outs)
    if (o->kind != VK::Tensor) outs.clear();
  if (outs.empty()) throw Unsupported{"out= with a value that is not a tensor or a tuple of them"};
  Obj fr = run_on_fakes(fn, method, args, rest);
  std::vector<PyObject*> fakes;
  if (py::is_tensor(fr.get())) {
    fakes.push_back(fr.get());
  } else if (PyTuple_Check(fr.get())) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fr.get()); ++i)
      fakes.push_back(PyTuple_GET_ITEM(fr.get(), i));
  }
  if (fakes.size() != outs.size())
    throw Unsupported{"out= whose tensors do not match the operation's results one to one"};
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!py::is_tensor(fakes[i])) throw Unsupported{"out= for a result that is not a tensor"};
    const Tensor& r = py::unwrap(fakes[i]);
    const Tensor& o = py::unwrap(outs[i]->fake.get());
    if (r.sizes() != o.sizes())
      throw Unsupported{str("out= with a tensor of shape ", o.shape_str(), " for a result of shape ",
                            r.shape_str(), " (eager resizes it)")};
    if (autograd::grad_enabled() && (autograd::requires_grad(r) || autograd::requires_grad(o)))
      throw Unsupported{"out= on values that require grad (an error when run eagerly)"};
  }
  VTP r = call_graph(fn, method, args, rest);
  std::vector<VTP> results = r->kind == VK::Tensor ? std::vector<VTP>{r} : r->items;
  for (size_t i = 0; i < outs.size(); ++i) {
    std::vector<VTP> a{results.at(i)};
    std::vector<std::pair<std::string, VTP>> kw;
    call_tensor_method(outs[i], "copy_", a, kw);
  }
  return out;
}

VTP Tracer::call_graph(PyObject* fn, const std::string& method, const std::vector<VTP>& args,
                       const std::vector<std::pair<std::string, VTP>>& kwargs) {
  for (size_t i = 0; i < kwargs.size(); ++i)
    if (kwargs[i].first == "out") return call_graph_out(fn, method, args, kwargs, i);
  // --- metadata: the operation runs on the fakes ---
  // The version of each tensor argument's fake, before the call: a call that
  // bumps one writes that argument (F.relu(x, inplace=True), an op's
  // inplace= overload), which neither its target nor its name says.
  std::vector<std::pair<intrusive_ptr<VersionCounter>, uint64_t>> versions;
  auto note_version = [&](const VTP& v) {
    if (v && v->kind == VK::Tensor && v->fake && py::is_tensor(v->fake.get())) {
      const intrusive_ptr<VersionCounter>& c =
          py::unwrap(v->fake.get()).impl()->shared_version_counter();
      versions.emplace_back(c, c->value());
    }
  };
  for (const VTP& a : args) note_version(a);
  for (const auto& kv : kwargs) note_version(kv.second);
  Obj result;
  if (fn == operator_fn("setitem") && bool_mask_index(fake_arg(args.at(1)).get())) {
    // An in-place assignment keeps the target's metadata; a boolean mask's
    // count is unknown to fakes, so that assignment is not run on them.
    // Others are: autograd's checks (a leaf that requires grad) raise here,
    // so the assignment runs eagerly after a break, and the target's fake
    // takes its history (it may come to require grad). The masked one gets
    // the same checks without running: else the graph would raise at run
    // time, after the side effects traced before it and before the plan
    // replays them (fuzz seed 92969).
    check_masked_assignment(fake_arg(args.at(0)).get(), fake_arg(args.at(2)).get());
    result = Obj::borrow(Py_None);
  } else {
    result = run_on_fakes(fn, method, args, kwargs);
  }
  // --- the node ---
  std::vector<graph::Value> gargs;
  gargs.reserve(args.size());
  for (auto& a : args) gargs.push_back(graph_arg(a));
  graph::Kwargs gkw;
  for (auto& [k, v] : kwargs) gkw.emplace_back(k, graph_arg(v));
  graph::Node* node = method.empty()
                          ? ir->call_function(target_of(fn), std::move(gargs), std::move(gkw))
                          : ir->call_method(method, std::move(gargs), std::move(gkw));
  for (const auto& [counter, before] : versions)
    node->meta().writes_argument |= counter->value() != before;
  ++call_nodes;
  VTP r = wrap_result(result.get(), node);
  if (has_symbols()) propagate_shapes(fn, method, args, kwargs, r);
  return r;
}

VTP Tracer::tensor_result(PyObject* fake, graph::Node* node) {
  auto v = std::make_shared<VT>(VK::Tensor);
  v->node = graph::NodePtr(node);
  // A tensor that did not come from the fakes (a real one a function kept)
  // is made fake, so that every tracker's tensor is.
  v->fake = py::unwrap(fake).is_fake() ? Obj::borrow(fake) : fake_of(fake);
  set_tensor_meta(node, v->fake.get());
  return v;
}

VTP Tracer::wrap_result(PyObject* res, graph::Node* node) {
  if (py::is_tensor(res)) return tensor_result(res, node);
  if ((PyTuple_Check(res) || PyList_Check(res)) && PySequence_Size(res) > 0) {
    // Tensors, and None where an op leaves an output out (a backward's
    // output mask, batch norm without running statistics): a None gets no
    // getitem node, and the node's metadata lists the tensors only.
    Py_ssize_t n = PySequence_Size(res);
    bool tensors_or_none = true, any_tensor = false;
    for (Py_ssize_t i = 0; i < n; ++i) {
      Obj e = check(PySequence_GetItem(res, i));
      const bool t = py::is_tensor(e.get());
      tensors_or_none &= t || e.get() == Py_None;
      any_tensor |= t;
    }
    if (tensors_or_none && any_tensor) {
      auto out = std::make_shared<VT>(PyList_Check(res) ? VK::List : VK::Tuple);
      if (PyTuple_Check(res) && !PyTuple_CheckExact(res))
        out->pytype = Obj::borrow(reinterpret_cast<PyObject*>(Py_TYPE(res)));
      const graph::Target& getitem = target_of(operator_fn("getitem"));
      std::vector<graph::TensorMeta> metas;
      for (Py_ssize_t i = 0; i < n; ++i) {
        Obj e = check(PySequence_GetItem(res, i));
        if (e.get() == Py_None) {
          out->items.push_back(make_const(Py_None));
          continue;
        }
        graph::Node* gi =
            ir->call_function(getitem, {graph::Value(node), graph::Value(int64_t(i))});
        VTP v = tensor_result(e.get(), gi);
        metas.push_back(gi->meta().tensors[0]);
        out->items.push_back(std::move(v));
      }
      node->meta().tensors = std::move(metas);
      node->meta().tuple_output = true;
      return out;
    }
  }
  if (res == Py_None) return make_const(res);  // an in-place op: keep the node
  if (is_immutable(res)) {
    ir->erase_node(node);
    --call_nodes;
    return make_const(res);
  }
  throw Unsupported{str("a tensor operation returned a ", Py_TYPE(res)->tp_name)};
}

// --- calls ----------------------------------------------------------------------------------------
VTP Tracer::call(const VTP& fn, std::vector<VTP> args,
                 std::vector<std::pair<std::string, VTP>> kwargs) {
  switch (fn->kind) {
    case VK::Const: return call_function_obj(fn->value.get(), fn, args, kwargs);
    case VK::Func: return inline_function(fn->code.get(), fn->globals.get(), fn, std::move(args), std::move(kwargs));
    case VK::Method:
      if (fn->func) {
        args.insert(args.begin(), fn->self);
        return call(fn->func, std::move(args), std::move(kwargs));
      }
      return call_method(fn->self, fn->attr, args, kwargs);
    case VK::TensorAttr: return call_tensor_method(fn->self, fn->attr, args, kwargs);
    case VK::Module: return call_module(fn, args, kwargs);
    case VK::GradExit:
      set_grad_mode(fn->grad_prev);
      return make_const(Py_None);
    case VK::AutocastExit:
      exit_autocast();
      return make_const(Py_None);
    case VK::Partial: {
      std::vector<VTP> all = fn->items;
      for (auto& a : args) all.push_back(a);
      auto kw = fn->kw;
      for (auto& [k, v] : kwargs) {
        bool replaced = false;
        for (auto& [k2, v2] : kw)
          if (k2 == k) {
            v2 = v;
            replaced = true;
          }
        if (!replaced) kw.emplace_back(k, v);
      }
      return call(fn->func, std::move(all), std::move(kw));
    }
    case VK::LocalObject:
    case VK::Object: {  // an instance with a Python __call__
      PyObject* call_attr = _PyType_Lookup(python_type(fn), PyUnicode_InternFromString("__call__"));
      if (call_attr && PyFunction_Check(call_attr)) {
        args.insert(args.begin(), fn);
        return inline_function(PyFunction_GET_CODE(call_attr), PyFunction_GET_GLOBALS(call_attr),
                               make_const(call_attr), std::move(args), std::move(kwargs));
      }
      throw Unsupported{str("call to ", describe(fn))};
    }
    default: throw Unsupported{str("call to a ", kind_name(fn->kind))};
  }
}

VTP Tracer::call_function_obj(PyObject* fn, const VTP& fnvt, std::vector<VTP>& args,
                              std::vector<std::pair<std::string, VTP>>& kwargs) {
  if (is_op(fn)) {
    Obj name = check(PyObject_GetAttrString(fn, "__name__"));
    const std::string op_name = utf8(name.get());
    if (VTP r = call_unbacked(fn, op_name, false, args, kwargs)) return r;
    if (const char* why = data_dependent_reason(op_name)) throw Unsupported{why};
    return call_graph(fn, "", args, kwargs);
  }
  bool handled = false;
  VTP r = call_builtin(fn, args, kwargs, &handled);
  if (handled) return r;
  if (type_named(fn, "CompiledFunction")) {
    Obj inner = check(PyObject_GetAttrString(fn, "_fn"));
    return call_function_obj(inner.get(), make_const(inner.get()), args, kwargs);
  }
  if (type_named(fn, "DisabledFunction"))
    throw Unsupported{"call to a function marked ignis.compiler.disable"};
  // Traced code sees itself being compiled (torch.compiler.is_compiling()
  // under Dynamo): library code picks its traceable form by it.
  static PyObject* is_compiling = py_import_attr("ignis.compiler", "is_compiling");
  if (fn == is_compiling) {
    if (!args.empty() || !kwargs.empty())
      throw Unsupported{"ignis.compiler.is_compiling() takes no arguments"};
    return make_const(Py_True);
  }
  if (PyMethod_Check(fn)) {
    PyObject* self = PyMethod_GET_SELF(fn);
    PyObject* func = PyMethod_GET_FUNCTION(fn);
    int reg = fnvt && fnvt->reg >= 0 ? guards().attr(fnvt->reg, PyUnicode_InternFromString("__self__")) : -1;
    VTP selfvt = wrap_input(self, reg);
    args.insert(args.begin(), selfvt);
    return call_function_obj(func, make_const(func), args, kwargs);
  }
  if (PyFunction_Check(fn)) {
    PyCodeObject* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(fn));
    if (is_skipped(code) && type_named(fn, "function")) {
      // Marked by ignis.compiler.disable (or rejected before): run it eagerly.
      Obj m = Obj::steal(PyObject_GetAttrString(fn, "__module__"));
      PyErr_Clear();
      std::string mod = m && PyUnicode_Check(m.get()) ? utf8(m.get()) : "";
      if (mod.rfind("ignis", 0) != 0)
        throw Unsupported{str("call to ", callable_name(fn), ", which capture skips")};
    }
    Obj m = Obj::steal(PyObject_GetAttrString(fn, "__module__"));
    if (!m) PyErr_Clear();
    std::string mod = m && PyUnicode_Check(m.get()) ? utf8(m.get()) : "";
    // torch's top-level functions written in Python (no global state, no
    // Python value read from a tensor): one graph call each.
    static const char* not_graph_calls[] = {
        "set_printoptions", "use_deterministic_algorithms", "set_default_device",
        "set_flush_denormal", "is_nonzero", "frombuffer", "range"};
    bool graph_call = mod == "ignis" || mod == "ignis._creation" || mod == "ignis.nn.functional" ||
                      mod == "ignis._functions" || mod == "ignis.functional" ||
                      mod == "ignis.linalg" || mod == "ignis.special" ||
                      mod == "ignis.fft" || mod == "ignis._spectral" ||
                      mod == "ignis._nn_top_level";
    if (mod == "ignis._more_functions") {
      Obj name = check(PyObject_GetAttrString(fn, "__name__"));
      const std::string n = utf8(name.get());
      graph_call = std::none_of(std::begin(not_graph_calls), std::end(not_graph_calls),
                                [&](const char* x) { return n == x; });
    }
    if (graph_call) {
      if (mod == "ignis" || mod == "ignis.functional" || mod == "ignis._functions") {
        // ignis.nonzero(x, as_tuple=...), ignis.unique(...), ignis.argwhere(x)
        Obj name = check(PyObject_GetAttrString(fn, "__name__"));
        if (VTP r = call_unbacked(fn, utf8(name.get()), false, args, kwargs)) return r;
      }
      return call_graph(fn, "", args, kwargs);
    }
    if (mod == "ignis._checks") {
      Obj name = check(PyObject_GetAttrString(fn, "__name__"));
      if (VTP r = call_check(utf8(name.get()), args, kwargs)) return r;
    }
    if (mod == "ignis.utils.checkpoint") {
      Obj name = check(PyObject_GetAttrString(fn, "__name__"));
      if (utf8(name.get()) == "checkpoint") return call_checkpointed(args, kwargs);
    }
    // Layers' own methods are model code (as torch.nn is to Dynamo): inline them.
    if (mod.rfind("ignis", 0) == 0 && mod.rfind("ignis.nn.modules", 0) != 0)
      throw Unsupported{str("call to ", callable_name(fn), " (ignis internals are not traced)")};
    return inline_function(PyFunction_GET_CODE(fn), PyFunction_GET_GLOBALS(fn), fnvt,
                           std::move(args), std::move(kwargs));
  }
  if (fn == py_import_attr("functools", "reduce")) {
    if (args.size() < 2) throw Unsupported{"functools.reduce with wrong arguments"};
    auto items = unpack(args[1]);
    size_t i = 0;
    VTP acc;
    if (args.size() > 2) acc = args[2];
    else if (!items.empty()) acc = items[i++];
    else throw Unsupported{"functools.reduce of an empty sequence"};
    for (; i < items.size(); ++i) acc = call(args[0], {acc, items[i]}, {});
    return acc;
  }
  if (fn == py_import_attr("functools", "partial")) {
    if (args.empty()) throw Unsupported{"functools.partial without a function"};
    auto p = std::make_shared<VT>(VK::Partial);
    p->func = args[0];
    p->items.assign(args.begin() + 1, args.end());
    p->kw = kwargs;
    return p;
  }
  if (PyType_Check(fn)) {
    if (fn == ig("no_grad") || fn == ig("enable_grad")) {
      if (!args.empty() || !kwargs.empty()) throw Unsupported{"grad-mode context with arguments"};
      auto g = std::make_shared<VT>(VK::GradMode);
      g->grad_enabled = fn == ig("enable_grad");
      g->value = Obj::borrow(fn);
      return g;
    }
    if (fn == ig("set_grad_enabled")) {
      if (args.size() != 1 || args[0]->kind != VK::Const)
        throw Unsupported{"set_grad_enabled with a non-constant argument"};
      auto g = std::make_shared<VT>(VK::GradMode);
      g->grad_enabled = PyObject_IsTrue(args[0]->value.get());
      g->grad_prev = grad_enabled;
      g->grad_applied = true;
      set_grad_mode(g->grad_enabled);
      return g;
    }
    if (fn == ig("Size")) {
      // ignis.Size(ints): a tuple tracker of Size's type (x.shape's kind of
      // value), its items ints or symbolic sizes.
      if (args.size() > 1 || !kwargs.empty()) throw Unsupported{"ignis.Size() with wrong arguments"};
      std::vector<VTP> items = args.empty() ? std::vector<VTP>{} : unpack(args[0]);
      bool constant = true;
      for (const VTP& e : items) {
        if (e->kind != VK::SymInt && !(e->kind == VK::Const && PyLong_Check(e->value.get())))
          throw Unsupported{str("ignis.Size() of a ", kind_name(e->kind))};
        constant &= e->kind == VK::Const;
      }
      if (constant) {  // the Size itself, a constant
        Obj t = check(PyTuple_New(static_cast<Py_ssize_t>(items.size())));
        for (size_t i = 0; i < items.size(); ++i) {
          Py_INCREF(items[i]->value.get());
          PyTuple_SET_ITEM(t.get(), static_cast<Py_ssize_t>(i), items[i]->value.get());
        }
        return make_const(check(PyObject_CallOneArg(fn, t.get())).get());
      }
      VTP out = make_tuple(std::move(items));
      out->pytype = Obj::borrow(fn);
      return out;
    }
    PyTypeObject* tp = reinterpret_cast<PyTypeObject*>(fn);
    static PyObject* autocast_cls = py_import_attr("ignis.amp.autocast_mode", "autocast");
    if (PyType_IsSubtype(tp, reinterpret_cast<PyTypeObject*>(autocast_cls))) {
      // Made for real now (its checks and warnings are the constructor's);
      // `with` on it is traced (Note [Autocast blocks in captured graphs]).
      Obj pos = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
      for (size_t i = 0; i < args.size(); ++i) {
        if (args[i]->kind != VK::Const)
          throw Unsupported{"ignis.autocast(...) with an argument that is not a constant"};
        Py_INCREF(args[i]->value.get());
        PyTuple_SET_ITEM(pos.get(), static_cast<Py_ssize_t>(i), args[i]->value.get());
      }
      Obj kw = check(PyDict_New());
      for (auto& [k, v] : kwargs) {
        if (v->kind != VK::Const)
          throw Unsupported{"ignis.autocast(...) with an argument that is not a constant"};
        if (PyDict_SetItemString(kw.get(), k.c_str(), v->value.get()) < 0) throw PyErrorSet{};
      }
      auto a = std::make_shared<VT>(VK::Autocast);
      a->value = check(PyObject_Call(fn, pos.get(), kw.get()));
      return a;
    }
    if (PyType_IsSubtype(tp, &PyTuple_Type) && PyObject_HasAttrString(fn, "_fields")) {
      // A namedtuple: a tuple tracker that knows its type.
      // Keywords go to their fields' places, as the class's __new__ puts them.
      Obj fields = check(PyObject_GetAttrString(fn, "_fields"));
      const Py_ssize_t nf = PyTuple_Size(fields.get());
      if (static_cast<Py_ssize_t>(args.size()) > nf)
        throw Unsupported{"namedtuple built with more arguments than fields"};
      std::vector<VTP> items(static_cast<size_t>(nf));
      std::copy(args.begin(), args.end(), items.begin());
      for (auto& [k, v] : kwargs) {
        Py_ssize_t at = -1;
        for (Py_ssize_t f = 0; f < nf; ++f)
          if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(fields.get(), f), k.c_str()) == 0)
            at = f;
        if (at < 0 || items[size_t(at)])
          throw Unsupported{"namedtuple built with an unknown or repeated keyword"};
        items[size_t(at)] = v;
      }
      for (const VTP& item : items)
        if (!item) throw Unsupported{"namedtuple built with field defaults"};
      auto t = std::make_shared<VT>(VK::Tuple);
      t->items = std::move(items);
      t->pytype = Obj::borrow(fn);
      return t;
    }
    // A user class with a Python __init__ and object's __new__: an object
    // tracked attribute by attribute, its __init__ inlined.
    PyObject* init = _PyType_Lookup(tp, PyUnicode_InternFromString("__init__"));
    PyObject* new_ = _PyType_Lookup(tp, PyUnicode_InternFromString("__new__"));
    PyObject* object_new = _PyType_Lookup(&PyBaseObject_Type, PyUnicode_InternFromString("__new__"));
    bool plain = tp->tp_new == PyBaseObject_Type.tp_new && new_ == object_new &&
                 !PyType_IsSubtype(tp, reinterpret_cast<PyTypeObject*>(py::TensorBaseType)) &&
                 tp->tp_dictoffset != 0 && !is_nn_module_type(fn);
    PyObject* object_init = _PyType_Lookup(&PyBaseObject_Type, PyUnicode_InternFromString("__init__"));
    if (plain && init == object_init && args.empty() && kwargs.empty()) {  // no __init__ of its own
      auto o = std::make_shared<VT>(VK::LocalObject);
      o->pytype = Obj::borrow(fn);
      return o;
    }
    if (plain && init && PyFunction_Check(init)) {
      auto o = std::make_shared<VT>(VK::LocalObject);
      o->pytype = Obj::borrow(fn);
      args.insert(args.begin(), o);
      inline_function(PyFunction_GET_CODE(init), PyFunction_GET_GLOBALS(init), make_const(init),
                      std::move(args), std::move(kwargs));
      return o;
    }
  }
  if (fn == py_import_attr("collections", "OrderedDict")) {
    // A dict that remembers its class (type(), isinstance and the rebuilt value).
    bool dict_handled = false;
    VTP d = call_builtin(PyDict_GetItemString(builtins_dict(), "dict"), args, kwargs, &dict_handled);
    d->pytype = Obj::borrow(fn);
    return d;
  }
  if (fn == py_import_attr("itertools", "chain")) {
    if (!kwargs.empty()) throw Unsupported{"itertools.chain() with keyword arguments"};
    std::vector<VTP> all;
    for (auto& a : args)
      for (auto& e : unpack(a)) all.push_back(e);
    return get_iter(make_list(all));
  }
  if (fn && Py_TYPE(fn) == reinterpret_cast<PyTypeObject*>(py_import_attr("functools", "_lru_cache_wrapper"))) {
    // Note [lru_cache while tracing]
    // A functools.lru_cache wrapper (einops caches its parsed patterns this
    // way) is traced through: the wrapped function is inlined on every trace
    // and the cache is neither read nor filled, as Dynamo does. Its result is
    // then whatever the function computes from the traced arguments, guarded
    // as they are, so a cache hit or miss cannot change the graph; only a
    // function whose result depends on the cache's own history (not a pure
    // helper) would trace differently from eager.
    Obj wrapped = check(PyObject_GetAttrString(fn, "__wrapped__"));
    return call_function_obj(wrapped.get(), make_const(wrapped.get()), args, kwargs);
  }
  // Anything else with constant arguments that is known to be pure: fold.
  throw Unsupported{str("call to ", callable_name(fn), " is not supported by capture")};
}

// Note [Checkpoints traced as their function]
// ignis.utils.checkpoint(fn, *args, **kwargs) computes fn(*args, **kwargs);
// it only changes what the backward keeps. In a captured graph that is the
// partitioner's choice (it saves or recomputes by cost), so the call is
// traced as fn's, as Dynamo's checkpoint wrapper leaves the values alone.
// Its own keywords are dropped; a context_fn (a custom recompute context)
// or keywords that the reentrant form refuses run eagerly.
VTP Tracer::call_checkpointed(std::vector<VTP>& args, std::vector<std::pair<std::string, VTP>>& kwargs) {
  if (args.empty()) throw Unsupported{"ignis.utils.checkpoint.checkpoint() without a function"};
  std::vector<VTP> rest(args.begin() + 1, args.end());
  std::vector<std::pair<std::string, VTP>> fkwargs;
  bool reentrant = true;  // torch's default when use_reentrant is not given
  for (auto& [k, v] : kwargs) {
    if (k == "use_reentrant") {
      if (v->kind != VK::Const) throw Unsupported{"checkpoint(use_reentrant=...) not a constant"};
      reentrant = v->value.get() == Py_None || PyObject_IsTrue(v->value.get()) == 1;
    } else if (k == "context_fn") {
      static PyObject* noop = py_import_attr("ignis.utils.checkpoint", "noop_context_fn");
      if (v->kind != VK::Const || v->value.get() != noop)
        throw Unsupported{"checkpoint() with a context_fn (its recompute contexts are not traced)"};
    } else if (k != "preserve_rng_state" && k != "determinism_check" && k != "debug") {
      fkwargs.emplace_back(k, v);
    }
  }
  if (reentrant && !fkwargs.empty())
    throw Unsupported{"checkpoint(use_reentrant=True) with keyword arguments for the function"};
  if (reentrant && autograd::grad_enabled()) {
    // The reentrant form records nothing when no input requires grad: the
    // parameters inside get no gradient, which fn's own trace would give.
    bool any = false;
    for (const VTP& a : rest)
      any |= a->kind == VK::Tensor && a->fake && autograd::requires_grad(py::unwrap(a->fake.get()));
    if (!any) throw Unsupported{"checkpoint(use_reentrant=True) of inputs that do not require grad"};
  }
  return call(args[0], std::move(rest), std::move(fkwargs));
}

VTP Tracer::inline_function(PyObject* code_obj, PyObject* globals, const VTP& fnvt,
                            std::vector<VTP> args,
                            std::vector<std::pair<std::string, VTP>> kwargs) {
  auto* co = reinterpret_cast<PyCodeObject*>(code_obj);
  // A generator (a generator expression or a generator function) runs to
  // completion here and becomes an iterator over what it yielded: the ops are
  // the same as when it is consumed lazily, since tracing has no other side
  // effects (a print or the like breaks the graph at the call instead); an
  // endless generator hits the step limit and runs eagerly. Coroutines are
  // not traced.
  bool genexpr = co->co_flags & CO_GENERATOR;
  if (co->co_flags & (CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE))
    throw Unsupported{str("call to the coroutine function ", utf8(co->co_name))};
  if (inline_depth >= 32) throw Unsupported{"calls nest too deeply to inline"};
  const CodeInfo& ci = code_info(co);
  TFrame nf;
  nf.ci = &ci;
  nf.parent = cur;
  nf.locals.assign(ci.nlocalsplus, nullptr);
  nf.globals = Obj::borrow(globals);
  PyObject* b = PyDict_GetItemString(globals, "__builtins__");
  if (b && PyModule_Check(b)) b = PyModule_GetDict(b);
  nf.builtins = Obj::borrow(b && PyDict_Check(b) ? b : builtins_dict());

  // Closure cells and defaults: of a function made while tracing, or of a
  // real function object (read through its source when it has one).
  VTP func = fnvt;
  if (fnvt && fnvt->kind == VK::Const && PyFunction_Check(fnvt->value.get())) {
    PyObject* f = fnvt->value.get();
    func = std::make_shared<VT>(VK::Func);
    func->value = fnvt->value;
    func->reg = fnvt->reg;
    PyObject* closure = PyFunction_GET_CLOSURE(f);
    int creg = fnvt->reg >= 0 && closure
                   ? guards().attr(fnvt->reg, PyUnicode_InternFromString("__closure__")) : -1;
    if (closure) {
      for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(closure); ++k) {
        auto cell = std::make_shared<VT>(VK::Cell);
        cell->value = Obj::borrow(PyTuple_GET_ITEM(closure, k));
        cell->local = false;
        cell->reg = creg >= 0 ? guards().attr(guards().item(creg, k),
                                              PyUnicode_InternFromString("cell_contents"))
                              : -1;
        func->closure.push_back(cell);
      }
    }
    PyObject* defaults = PyFunction_GET_DEFAULTS(f);
    if (defaults) {
      int dreg = fnvt->reg >= 0 ? guards().attr(fnvt->reg, PyUnicode_InternFromString("__defaults__")) : -1;
      auto d = std::make_shared<VT>(VK::Tuple);
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(defaults); ++i)
        d->items.push_back(wrap_input(PyTuple_GET_ITEM(defaults, i), dreg >= 0 ? guards().item(dreg, i) : -1));
      func->defaults = d;
    }
    PyObject* kwdefaults = PyFunction_GET_KW_DEFAULTS(f);
    if (kwdefaults && PyDict_Size(kwdefaults) > 0) {
      auto d = std::make_shared<VT>(VK::Dict);
      PyObject *k, *v;
      Py_ssize_t pos = 0;
      while (PyDict_Next(kwdefaults, &pos, &k, &v)) {
        d->keys.push_back(Obj::borrow(k));
        d->items.push_back(wrap_input(v, -1));
      }
      func->kwdefaults = d;
    }
  }
  nf.func = func;

  // Bind arguments as CPython does.
  int argcount = co->co_argcount, kwonly = co->co_kwonlyargcount;
  int posonly = co->co_posonlyargcount;
  bool varargs = co->co_flags & CO_VARARGS, varkw = co->co_flags & CO_VARKEYWORDS;
  std::string fname = utf8(co->co_name);
  size_t npos = std::min(args.size(), static_cast<size_t>(argcount));
  for (size_t i = 0; i < npos; ++i) nf.locals[i] = args[i];
  if (args.size() > static_cast<size_t>(argcount)) {
    if (!varargs) throw Unsupported{str(fname, "() takes ", argcount, " positional arguments but ", args.size(), " were given")};
  }
  if (varargs) {
    std::vector<VTP> extra;
    for (size_t i = argcount; i < args.size(); ++i) extra.push_back(args[i]);
    nf.locals[argcount + kwonly] = make_tuple(extra);
  }
  std::shared_ptr<VT> kwdict;
  if (varkw) {
    kwdict = std::make_shared<VT>(VK::Dict);
    nf.locals[argcount + kwonly + (varargs ? 1 : 0)] = kwdict;
  }
  for (auto& [k, v] : kwargs) {
    int slot = -1;
    for (int i = posonly; i < argcount + kwonly; ++i)
      if (ci.slot_names[i] == k) slot = i;
    if (slot < 0) {
      if (!kwdict) throw Unsupported{str(fname, "() got an unexpected keyword argument '", k, "'")};
      Obj key = check(PyUnicode_FromString(k.c_str()));
      kwdict->keys.push_back(key);
      kwdict->items.push_back(v);
      continue;
    }
    if (nf.locals[slot]) throw Unsupported{str(fname, "() got multiple values for argument '", k, "'")};
    nf.locals[slot] = v;
  }
  if (func && func->defaults) {
    std::vector<VTP> d = unpack(func->defaults);
    int first = argcount - static_cast<int>(d.size());
    for (int i = std::max(first, 0); i < argcount; ++i)
      if (!nf.locals[i]) nf.locals[i] = d[i - first];
  }
  if (func && func->kwdefaults) {
    for (int i = argcount; i < argcount + kwonly; ++i) {
      if (nf.locals[i]) continue;
      for (size_t k = 0; k < func->kwdefaults->keys.size(); ++k)
        if (utf8(func->kwdefaults->keys[k].get()) == ci.slot_names[i]) nf.locals[i] = func->kwdefaults->items[k];
    }
  }
  for (int i = 0; i < argcount + kwonly; ++i)
    if (!nf.locals[i]) throw Unsupported{str(fname, "() missing argument '", ci.slot_names[i], "'")};

  std::vector<VTP> yielded;
  if (genexpr) nf.yields = &yielded;
  TFrame* saved = cur;
  cur = &nf;
  ++inline_depth;
  try {
    VTP r = run_frame(nf);
    cur = saved;
    --inline_depth;
    if (genexpr) return get_iter(make_list(yielded));
    return r;
  } catch (Unsupported& u) {
    cur = saved;
    --inline_depth;
    const Instr& at = root->ci->ins[root->pc];
    throw RestartAt{at.offset, u.reason, ci.filename, nf.line,
                    frame_line(*saved) + frame_line(nf)};
  } catch (RestartAt& r) {
    cur = saved;
    --inline_depth;
    if (saved != root) r.traceback = frame_line(*saved) + r.traceback;
    throw;
  } catch (...) {
    cur = saved;
    --inline_depth;
    throw;
  }
}

// Note [Module hooks inlined]
// A module's forward pre-hooks and forward hooks are traced into the graph,
// run as Module._call_impl runs them: each pre-hook gets (module, args) --
// or (module, args, kwargs) when registered with_kwargs -- and a result that
// is not None replaces the arguments (a non-tuple becomes a one-tuple; a
// with_kwargs hook must give (args, kwargs)); each forward hook gets
// (module, args, output), or (module, args, kwargs, output), and a result
// that is not None replaces the output. A feature extractor's hook that
// appends to a list, or a pre-hook that rescales the input, so stays in one
// graph (torch.compile inlines them too). The hook dicts are guarded (their
// lengths, ids and hooks), so adding or removing a hook recompiles.
// always_call hooks matter only when forward raises, which ends the trace;
// backward hooks (torch's register_full_backward_hook) break the graph.
// A hook's tensor result is named as torch's _call_impl stores it
// (args_result, hook_result), so graphs print as Dynamo's do.
VTP Tracer::call_module(const VTP& mod, std::vector<VTP>& args,
                        std::vector<std::pair<std::string, VTP>>& kwargs) {
  PyObject* m = mod->value.get();
  // The hooks of `name`, in the OrderedDict's order (a prepended hook is
  // moved to the front, which PyDict_Next does not see), each with its id.
  auto hooks_of = [&](const char* name) {
    std::vector<std::pair<Obj, VTP>> hooks;
    Obj d = Obj::steal(PyObject_GetAttrString(m, name));
    if (!d || !PyDict_Check(d.get())) {
      PyErr_Clear();
      return hooks;
    }
    if (PyDict_Size(d.get()) == 0) {
      if (mod->reg >= 0) guards().check_len(guards().attr(mod->reg, PyUnicode_InternFromString(name)), 0);
      return hooks;
    }
    if (mod->reg < 0) throw Unsupported{str("call of a module with ", name + 1, " and no source to guard them")};
    // The dict's tracker guards its type, length, each id and hook; its
    // items are taken from it in the OrderedDict's order.
    VTP table = wrap_input(d.get(), guards().attr(mod->reg, PyUnicode_InternFromString(name)));
    Obj keys = check(PySequence_List(d.get()));
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys.get()); ++i) {
      PyObject* key = PyList_GET_ITEM(keys.get(), i);
      for (size_t j = 0; j < table->keys.size(); ++j)
        if (table->keys[j].get() == key) hooks.emplace_back(Obj::borrow(key), table->items[j]);
    }
    return hooks;
  };
  auto ids_of = [&](const char* name) {  // a with_kwargs table: which ids it holds
    std::vector<Obj> ids;
    for (auto& [id, flag] : hooks_of(name)) ids.push_back(id);
    return ids;
  };
  auto holds = [](const std::vector<Obj>& ids, const Obj& id) {
    for (const Obj& i : ids)
      if (PyObject_RichCompareBool(i.get(), id.get(), Py_EQ) == 1) return true;
    return false;
  };
  for (const char* h : {"_backward_hooks", "_backward_pre_hooks"})
    if (!hooks_of(h).empty()) throw Unsupported{str("call of a module with ", h + 1)};
  auto pre_hooks = hooks_of("_forward_pre_hooks");
  auto pre_with_kwargs = pre_hooks.empty() ? std::vector<Obj>{} : ids_of("_forward_pre_hooks_with_kwargs");
  auto post_hooks = hooks_of("_forward_hooks");
  auto post_with_kwargs = post_hooks.empty() ? std::vector<Obj>{} : ids_of("_forward_hooks_with_kwargs");

  // The class's forward, unless the instance shadows it (guarded).
  PyObject* fwd_name = PyUnicode_InternFromString("forward");
  PyObject** dp = _PyObject_GetDictPtr(m);
  if (dp && *dp && PyDict_GetItemWithError(*dp, fwd_name))
    throw Unsupported{"a module whose forward was replaced on the instance"};
  if (PyErr_Occurred()) throw PyErrorSet{};
  if (mod->reg >= 0 && dp && *dp)
    guards().check_no_key(guards().attr(mod->reg, PyUnicode_InternFromString("__dict__")), fwd_name);
  PyObject* fwd = _PyType_Lookup(Py_TYPE(m), fwd_name);
  if (!fwd || !PyFunction_Check(fwd)) throw Unsupported{str("module ", Py_TYPE(m)->tp_name, " has no Python forward")};
  auto run_forward = [&](std::vector<VTP> fargs, std::vector<std::pair<std::string, VTP>> fkwargs) {
    fargs.insert(fargs.begin(), mod);
    return inline_function(PyFunction_GET_CODE(fwd), PyFunction_GET_GLOBALS(fwd), make_const(fwd),
                           std::move(fargs), std::move(fkwargs));
  };
  if (pre_hooks.empty() && post_hooks.empty()) return run_forward(std::move(args), std::move(kwargs));

  auto is_none = [](const VTP& v) { return v->kind == VK::Const && v->value.get() == Py_None; };
  auto kwargs_dict = [&] {
    auto d = std::make_shared<VT>(VK::Dict);
    for (auto& [k, v] : kwargs) {
      d->keys.push_back(check(PyUnicode_FromString(k.c_str())));
      d->items.push_back(v);
    }
    return d;
  };
  VTP args_t = make_tuple(args);
  VTP kw = kwargs_dict();
  for (auto& [id, hook] : pre_hooks) {
    if (holds(pre_with_kwargs, id)) {
      VTP r = call(hook, {mod, args_t, kw}, {});
      if (is_none(r)) continue;
      if (r->kind != VK::Tuple || r->items.size() != 2 || r->items[0]->kind != VK::Tuple ||
          r->items[1]->kind != VK::Dict)
        throw Unsupported{"a forward pre-hook with kwargs that returned something other than (args, kwargs)"};
      args_t = r->items[0];
      kw = r->items[1];
    } else {
      VTP r = call(hook, {mod, args_t}, {});
      if (r->kind == VK::Tensor) rename_node(r, "args_result");
      if (!is_none(r)) args_t = r->kind == VK::Tuple ? r : make_tuple({r});
    }
  }
  std::vector<std::pair<std::string, VTP>> fkwargs;
  for (size_t i = 0; i < kw->keys.size(); ++i) {
    if (!PyUnicode_Check(kw->keys[i].get())) throw Unsupported{"a forward pre-hook's kwargs with a key that is not a str"};
    fkwargs.emplace_back(utf8(kw->keys[i].get()), kw->items[i]);
  }
  VTP out = run_forward(unpack(args_t), std::move(fkwargs));
  for (auto& [id, hook] : post_hooks) {
    VTP r = holds(post_with_kwargs, id) ? call(hook, {mod, args_t, kw, out}, {})
                                         : call(hook, {mod, args_t, out}, {});
    if (r->kind == VK::Tensor) rename_node(r, "hook_result");
    if (!is_none(r)) out = r;
  }
  return out;
}

VTP Tracer::call_tensor_method(const VTP& self, const std::string& name, std::vector<VTP>& args,
                               std::vector<std::pair<std::string, VTP>>& kwargs) {
  if (makes_unbacked_size(name)) {
    std::vector<VTP> all{self};
    all.insert(all.end(), args.begin(), args.end());
    if (VTP r = call_unbacked(nullptr, name, true, all, kwargs)) return r;
  }
  if (name == "item" && args.empty() && kwargs.empty())
    if (VTP r = item_unbacked(self)) return r;
  if (const char* why = data_dependent_reason(name)) throw Unsupported{why};
  if (self->kind == VK::Tensor) pin_layout(name);
  if (self->kind == VK::Tensor && is_symbolic(self) && kwargs.empty()) {
    // Sizes of a tensor with symbolic dims are symbolic ints.
    if ((name == "size" || name == "shape") && args.empty()) return shape_of(self);
    if (name == "size" && args.size() == 1) {
      sym::Expr d = args[0]->kind == VK::Const && PyLong_Check(args[0]->value.get())
                        ? sym::Expr(static_cast<int64_t>(PyLong_AsLongLong(args[0]->value.get())))
                        : sym::Expr();
      if (d.defined()) return size_of(self, d.value());
    }
    if ((name == "numel" || name == "nelement") && args.empty()) return numel_of(self);
    if (name == "stride" || name == "storage_offset") {
      // Python ints of the layout at the hints: the sizes they depend on are pinned.
      shape_env.set_location(user_location());
      for (const sym::Expr& e : sizes_of(self))
        if (!e.is_const()) shape_env.specialize(e, "Tensor." + name);
    }
    if (name == "__len__" && args.empty()) return size_of(self, 0);
  }
  std::vector<VTP> all;
  all.push_back(self);
  for (auto& a : args) all.push_back(a);
  return call_graph(nullptr, name, all, kwargs);
}

VTP Tracer::call_method(const VTP& self, const std::string& name, std::vector<VTP>& args,
                        std::vector<std::pair<std::string, VTP>>& kwargs) {
  auto need_local = [&] { mark_mutated(self, (kind_name(self->kind) + std::string(".") + name).c_str()); };
  auto const_arg = [&](size_t i) {
    Obj c = i < args.size() ? const_value(args[i]) : Obj();
    if (!c) throw Unsupported{str(kind_name(self->kind), ".", name, " with a non-constant argument")};
    return c;
  };
  if (!kwargs.empty() && name != "update" && name != "get")
    throw Unsupported{str(kind_name(self->kind), ".", name, " with keyword arguments")};
  if (self->kind == VK::Const && name == "__subclasses__" && args.empty()) {
    // cls.__subclasses__() (a registry of backends found by subclass): the
    // classes it gives now, as constants. The guard calls it again and checks
    // the same classes come back, so a class defined later retraces.
    PyObject* cls = self->value.get();
    Obj subs = check(PyObject_CallMethod(cls, "__subclasses__", nullptr));
    int base = self->reg >= 0 ? self->reg : guards().object(cls, str("<class ", reinterpret_cast<PyTypeObject*>(cls)->tp_name, ">"));
    int r = guards().call_method0(base, "__subclasses__");
    guards().check_len(r, PyList_GET_SIZE(subs.get()));
    std::vector<VTP> items;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(subs.get()); ++i)
      items.push_back(wrap_input(PyList_GET_ITEM(subs.get(), i), guards().item(r, i)));
    return make_list(items);
  }
  if (self->kind == VK::Set) {
    // A private set of constants: run the method on it. A set read from the
    // frame is a copy here, so what would change it breaks the graph.
    static const char* mutators[] = {"add", "update", "discard", "remove", "pop", "clear",
                                     "difference_update", "intersection_update",
                                     "symmetric_difference_update"};
    if (!self->local)
      for (const char* m : mutators)
        if (name == m) throw Unsupported{str("set.", name, "() on a set from outside the captured function")};
    Obj a = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
    for (size_t i = 0; i < args.size(); ++i) PyTuple_SET_ITEM(a.get(), i, const_arg(i).release());
    Obj m = check(PyObject_GetAttrString(self->value.get(), name.c_str()));
    Obj r = check(PyObject_Call(m.get(), a.get(), nullptr));
    if (PyAnySet_Check(r.get())) {
      auto out = std::make_shared<VT>(VK::Set);
      out->value = r;
      return out;
    }
    if (!is_immutable(r.get())) throw Unsupported{str("set.", name, " gave a ", Py_TYPE(r.get())->tp_name)};
    return make_const(r.get());
  }
  if (self->kind == VK::Dict && name == "setdefault") {
    Obj k = const_arg(0);
    for (size_t i = 0; i < self->keys.size(); ++i)
      if (PyObject_RichCompareBool(self->keys[i].get(), k.get(), Py_EQ) == 1) return self->items[i];
    need_local();
    VTP v = args.size() > 1 ? args[1] : make_const(Py_None);
    self->keys.push_back(k);
    self->items.push_back(v);
    return v;
  }
  if (self->kind == VK::List) {
    if (name == "append") { need_local(); self->items.push_back(args.at(0)); return make_const(Py_None); }
    if (name == "extend") { need_local(); for (auto& e : unpack(args.at(0))) self->items.push_back(e); return make_const(Py_None); }
    if (name == "insert") {
      need_local();
      Py_ssize_t i = PyLong_AsSsize_t(const_arg(0).get());
      Py_ssize_t n = static_cast<Py_ssize_t>(self->items.size());
      if (i < 0) i = std::max<Py_ssize_t>(0, i + n);
      i = std::min(i, n);
      self->items.insert(self->items.begin() + i, args.at(1));
      return make_const(Py_None);
    }
    if (name == "pop") {
      need_local();
      if (self->items.empty()) throw Unsupported{"pop from empty list"};
      Py_ssize_t n = static_cast<Py_ssize_t>(self->items.size());
      Py_ssize_t i = args.empty() ? n - 1 : PyLong_AsSsize_t(const_arg(0).get());
      if (i < 0) i += n;
      if (i < 0 || i >= n) throw Unsupported{"pop index out of range"};
      VTP v = self->items[i];
      self->items.erase(self->items.begin() + i);
      return v;
    }
    if (name == "reverse") { need_local(); std::reverse(self->items.begin(), self->items.end()); return make_const(Py_None); }
    if (name == "clear") { need_local(); self->items.clear(); return make_const(Py_None); }
    if (name == "copy") return make_list(self->items);
  }
  if (self->kind == VK::Dict) {
    auto find = [&](PyObject* key) -> int {
      for (size_t i = 0; i < self->keys.size(); ++i) {
        int r = PyObject_RichCompareBool(self->keys[i].get(), key, Py_EQ);
        if (r < 0) throw PyErrorSet{};
        if (r) return static_cast<int>(i);
      }
      return -1;
    };
    if (name == "keys") {
      std::vector<VTP> ks;
      for (auto& k : self->keys) ks.push_back(make_const(k.get()));
      return make_list(ks);
    }
    if (name == "values") return make_list(self->items);
    if (name == "items") {
      std::vector<VTP> kvs;
      for (size_t i = 0; i < self->keys.size(); ++i) kvs.push_back(make_tuple({make_const(self->keys[i].get()), self->items[i]}));
      return make_list(kvs);
    }
    if (name == "get") {
      int i = find(const_arg(0).get());
      if (i >= 0) return self->items[i];
      return args.size() > 1 ? args[1] : make_const(Py_None);
    }
    if (name == "update") {
      need_local();
      auto put = [&](PyObject* k, const VTP& v) {
        int i = find(k);
        if (i >= 0) self->items[i] = v;
        else {
          self->keys.push_back(Obj::borrow(k));
          self->items.push_back(v);
        }
      };
      if (!args.empty()) {
        VTP o = args[0];
        if (o->kind != VK::Dict) throw Unsupported{"dict.update with a non-dict"};
        for (size_t i = 0; i < o->keys.size(); ++i) put(o->keys[i].get(), o->items[i]);
      }
      for (auto& [k, v] : kwargs) {
        Obj key = check(PyUnicode_FromString(k.c_str()));
        put(key.get(), v);
      }
      return make_const(Py_None);
    }
    if (name == "pop") {
      need_local();
      int i = find(const_arg(0).get());
      if (i < 0) {
        if (args.size() > 1) return args[1];
        throw Unsupported{"KeyError in dict.pop"};
      }
      VTP v = self->items[i];
      self->items.erase(self->items.begin() + i);
      self->keys.erase(self->keys.begin() + i);
      return v;
    }
    if (name == "copy") {
      auto d = std::make_shared<VT>(VK::Dict);
      d->keys = self->keys;
      d->items = self->items;
      return d;
    }
    if (name == "__contains__") return make_const(find(const_arg(0).get()) >= 0 ? Py_True : Py_False);
  }
  if (self->kind == VK::List || self->kind == VK::Tuple) {
    if (name == "index" || name == "count") {
      Obj needle = const_arg(0);
      Py_ssize_t count = 0, first = -1;
      for (size_t i = 0; i < self->items.size(); ++i) {
        Obj e = const_value(self->items[i]);
        if (!e) throw Unsupported{str(kind_name(self->kind), ".", name, " over tensors")};
        int r = PyObject_RichCompareBool(e.get(), needle.get(), Py_EQ);
        if (r < 0) throw PyErrorSet{};
        if (r) {
          ++count;
          if (first < 0) first = static_cast<Py_ssize_t>(i);
        }
      }
      if (name == "index" && first < 0) throw Unsupported{"ValueError in index()"};
      Obj out = check(PyLong_FromSsize_t(name == "index" ? first : count));
      return make_const(out.get());
    }
  }
  throw Unsupported{str(kind_name(self->kind), ".", name, "() is not supported by capture")};
}

// --- builtins -------------------------------------------------------------------------------------
VTP Tracer::call_builtin(PyObject* fn, std::vector<VTP>& args,
                         std::vector<std::pair<std::string, VTP>>& kwargs, bool* handled) {
  *handled = true;
  auto is_builtin = [&](const char* name) {
    PyObject* b = PyDict_GetItemString(builtins_dict(), name);
    return b && b == fn;
  };
  auto all_const = [&](Obj* out_args, Obj* out_kw) {
    Obj l = check(PyList_New(0));
    for (auto& a : args) {
      Obj c = const_value(a);
      if (!c) return false;
      PyList_Append(l.get(), c.get());
    }
    Obj kw = check(PyDict_New());
    for (auto& [k, v] : kwargs) {
      Obj c = const_value(v);
      if (!c) return false;
      PyDict_SetItemString(kw.get(), k.c_str(), c.get());
    }
    *out_args = check(PyList_AsTuple(l.get()));
    *out_kw = kw;
    return true;
  };
  auto wrap_folded = [&](PyObject* r) -> VTP {
    if (is_immutable(r) || is_identity_object(r)) return make_const(r);
    if (PySet_CheckExact(r) && set_of_constants(r)) {  // set.union(a, b) and friends: a new set
      for (auto& a : args)
        if (a->value.get() == r) throw Unsupported{"a set method returned its argument"};
      auto out = std::make_shared<VT>(VK::Set);
      out->value = Obj::borrow(r);
      return out;
    }
    if (PyList_CheckExact(r) || PyTuple_CheckExact(r)) {
      std::vector<VTP> items;
      for (Py_ssize_t i = 0; i < PySequence_Size(r); ++i) {
        Obj e = check(PySequence_GetItem(r, i));
        if (!is_immutable(e.get())) throw Unsupported{"folded a call into unsupported values"};
        items.push_back(make_const(e.get()));
      }
      return PyList_CheckExact(r) ? make_list(items) : make_tuple(items);
    }
    throw Unsupported{str("folded a call into a ", Py_TYPE(r)->tp_name)};
  };
  auto fold = [&]() -> VTP {
    Obj a, k;
    if (!all_const(&a, &k)) return nullptr;
    Obj r = check(PyObject_Call(fn, a.get(), k.get()));
    return wrap_folded(r.get());
  };

  if (is_builtin("print")) throw Unsupported{"call to print()"};
  if ((is_builtin("locals") || is_builtin("vars") || is_builtin("dir")) && args.empty())
    throw Unsupported{str(callable_name(fn), "() reads the running frame"), true};
  if ((is_builtin("eval") || is_builtin("exec")) && args.size() < 2)
    throw Unsupported{str(callable_name(fn), "() without globals reads the running frame"), true};
  if (fn == py_import_attr("sys", "_getframe") || fn == py_import_attr("inspect", "currentframe"))
    throw Unsupported{str(callable_name(fn), "() reads the running frame"), true};
  if (is_builtin("super")) {
    if (!kwargs.empty() || (args.size() != 0 && args.size() != 2))
      throw Unsupported{"super() with unusual arguments"};
    return args.empty() ? make_super(*cur, nullptr, nullptr) : make_super(*cur, args[0], args[1]);
  }
  if (is_builtin("len")) {
    if (args.size() != 1) throw Unsupported{"len() with wrong arguments"};
    VTP a = args[0];
    Py_ssize_t n = -1;
    if (a->kind == VK::List || a->kind == VK::Tuple) n = static_cast<Py_ssize_t>(a->items.size());
    else if (a->kind == VK::Dict) n = static_cast<Py_ssize_t>(a->keys.size());
    else if (a->kind == VK::Tensor && is_symbolic(a)) {
      if (sizes_of(a).empty()) throw Unsupported{"len() of a 0-d tensor"};
      return size_of(a, 0);
    } else if (a->kind == VK::Tensor) {
      Obj shape = check(PyObject_GetAttrString(a->fake.get(), "shape"));
      if (PyTuple_Size(shape.get()) == 0) throw Unsupported{"len() of a 0-d tensor"};
      n = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape.get(), 0));
    } else if (a->kind == VK::Module) {
      n = module_length(a);
    } else if (a->kind == VK::Const || a->kind == VK::Set) {
      n = PyObject_Length(a->value.get());
      if (n < 0) throw PyErrorSet{};
    } else if (a->kind == VK::Object || a->kind == VK::LocalObject) {
      // A user class's __len__, inlined; len() checks what it returns as Python does.
      PyObject* len_fn = _PyType_Lookup(python_type(a), PyUnicode_InternFromString("__len__"));
      if (!len_fn || !PyFunction_Check(len_fn)) throw Unsupported{str("len() of a ", describe(a))};
      VTP r = inline_function(PyFunction_GET_CODE(len_fn), PyFunction_GET_GLOBALS(len_fn),
                              make_const(len_fn), {a}, {});
      Obj c = const_value(r);
      if (!c || !PyLong_Check(c.get())) throw Unsupported{"__len__ gave a value that is not a constant int"};
      n = PyLong_AsSsize_t(c.get());
      if (n < 0) throw Unsupported{"__len__ gave a negative length (ValueError)"};
    } else {
      throw Unsupported{str("len() of a ", kind_name(a->kind))};
    }
    return make_const(Obj::steal(PyLong_FromSsize_t(n)).get());
  }
  if (is_builtin("id") && args.size() == 1 && kwargs.empty()) {
    // The identity of an object that exists outside the trace (a module, a
    // parameter, a constant), as a constant. Modules and objects are guarded
    // by type only, so the identity is guarded too: another instance of the
    // class (with other parameters, or weights tied differently, which the
    // memo sets of Module.parameters() would see) gets its own trace.
    VTP a = args[0];
    PyObject* o = a->value.get();
    bool is_sourced = a->reg >= 0 && o;
    if (!(a->kind == VK::Const && o) && !is_sourced)
      throw Unsupported{str("id() of a ", kind_name(a->kind), " made while tracing")};
    if (a->reg >= 0) guards().check_id(a->reg, o);
    return make_const(Obj::steal(PyLong_FromVoidPtr(o)).get());
  }
  if (is_builtin("isinstance") || is_builtin("issubclass")) {
    if (args.size() != 2) throw Unsupported{"isinstance() with wrong arguments"};
    Obj cls = const_value(args[1]);
    if (!cls) throw Unsupported{"isinstance() against a non-constant class"};
    VTP a = args[0];
    PyObject* tp;
    if (is_builtin("issubclass")) {
      if (a->kind != VK::Const) throw Unsupported{"issubclass() of a non-constant"};
      tp = a->value.get();
    } else {
      // A class whose metaclass decides (ignis.FloatTensor checks a tensor's
      // dtype and device): asked about the traced tensor's example, whose
      // dtype and device its guards (or the graph) fix.
      PyObject* example = a->kind == VK::Tensor ? (a->value ? a->value.get() : a->fake.get()) : nullptr;
      if (example && PyType_Check(cls.get()) && Py_TYPE(cls.get()) != &PyType_Type &&
          PyObject_HasAttrString(reinterpret_cast<PyObject*>(Py_TYPE(cls.get())), "__instancecheck__")) {
        int r = PyObject_IsInstance(example, cls.get());
        if (r < 0) throw PyErrorSet{};
        return make_const(r ? Py_True : Py_False);
      }
      tp = reinterpret_cast<PyObject*>(python_type(a));
      if (!tp) throw Unsupported{str("isinstance() of a ", kind_name(a->kind))};
    }
    int r = PyObject_IsSubclass(tp, cls.get());
    if (r < 0) throw PyErrorSet{};
    return make_const(r ? Py_True : Py_False);
  }
  if (is_builtin("type") && args.size() == 1) {
    PyTypeObject* tp = python_type(args[0]);
    if (!tp) throw Unsupported{str("type() of a ", kind_name(args[0]->kind))};
    return make_const(reinterpret_cast<PyObject*>(tp));
  }
  if (is_builtin("getattr") || is_builtin("hasattr")) {
    if (args.size() < 2) throw Unsupported{"getattr() with wrong arguments"};
    Obj name = const_value(args[1]);
    if (!name || !PyUnicode_Check(name.get())) throw Unsupported{"getattr() with a non-constant name"};
    try {
      VTP r = getattr(args[0], name.get());
      return is_builtin("hasattr") ? make_const(Py_True) : r;
    } catch (Unsupported& u) {
      // Only a plain missing attribute makes hasattr False / getattr's default.
      if (u.reason.find("has no attribute") == std::string::npos) throw;
      if (is_builtin("hasattr")) return make_const(Py_False);
      if (args.size() > 2) return args[2];
      throw;
    }
  }
  if (is_builtin("range")) {
    VTP r = fold();
    if (!r) throw Unsupported{"range() over non-constant bounds"};
    return r;
  }
  if (is_builtin("enumerate")) {
    if (args.empty()) throw Unsupported{"enumerate() without arguments"};
    long start = 0;
    if (args.size() > 1) start = PyLong_AsLong(const_value(args[1]).get());
    for (auto& [k, v] : kwargs)
      if (k == "start") start = PyLong_AsLong(const_value(v).get());
    std::vector<VTP> out;
    long i = start;
    for (auto& e : unpack(args[0])) out.push_back(make_tuple({make_const(Obj::steal(PyLong_FromLong(i++)).get()), e}));
    return get_iter(make_list(out));
  }
  if (is_builtin("zip")) {
    std::vector<std::vector<VTP>> seqs;
    size_t n = SIZE_MAX;
    for (auto& a : args) {
      seqs.push_back(unpack(a));
      n = std::min(n, seqs.back().size());
    }
    if (seqs.empty()) n = 0;
    std::vector<VTP> out;
    for (size_t i = 0; i < n; ++i) {
      std::vector<VTP> t;
      for (auto& s : seqs) t.push_back(s[i]);
      out.push_back(make_tuple(t));
    }
    return get_iter(make_list(out));
  }
  if (is_builtin("reversed")) {
    auto items = unpack(args.at(0));
    std::reverse(items.begin(), items.end());
    return get_iter(make_list(items));
  }
  if (is_builtin("iter")) return get_iter(args.at(0));
  if (is_builtin("next")) {
    VTP it = args.at(0);
    if (it->kind != VK::Iter) throw Unsupported{"next() of a non-iterator"};
    VTP v = iter_next(it);
    if (!v) {
      if (args.size() > 1) return args[1];
      throw Unsupported{"StopIteration from next()"};
    }
    return v;
  }
  if (is_builtin("list")) {
    if (args.empty()) return make_list({});
    return make_list(unpack(args[0]));
  }
  if (is_builtin("tuple")) {
    if (args.empty()) return make_tuple({});
    return make_tuple(unpack(args[0]));
  }
  if (is_builtin("set") || is_builtin("frozenset")) {
    // Of constants only: a set is traced as its Python value (VK::Set, or a
    // frozenset constant), which holds no tensors.
    if (args.size() > 1 || !kwargs.empty()) throw Unsupported{str(callable_name(fn), "() with wrong arguments")};
    Obj out = check(is_builtin("set") ? PySet_New(nullptr) : PyFrozenSet_New(nullptr));
    if (!args.empty())
      for (auto& e : unpack(args[0])) {
        Obj c = const_value(e);
        if (!c) throw Unsupported{str(callable_name(fn), "() of a ", kind_name(e->kind), " (capture's sets hold constants only)")};
        if (PySet_Add(out.get(), c.get()) < 0) throw PyErrorSet{};
      }
    if (is_builtin("frozenset")) return make_const(out.get());
    auto v = std::make_shared<VT>(VK::Set);
    v->value = out;
    return v;
  }
  if (is_builtin("dict")) {
    auto d = std::make_shared<VT>(VK::Dict);
    if (!args.empty()) {
      VTP src = args[0];
      if (src->kind == VK::Dict) {
        d->keys = src->keys;
        d->items = src->items;
      } else {
        for (auto& kv : unpack(src)) {
          auto pair = unpack(kv);
          Obj k = pair.size() == 2 ? const_value(pair[0]) : Obj();
          if (!k) throw Unsupported{"dict() from pairs with non-constant keys"};
          d->keys.push_back(k);
          d->items.push_back(pair[1]);
        }
      }
    }
    for (auto& [k, v] : kwargs) {
      d->keys.push_back(check(PyUnicode_FromString(k.c_str())));
      d->items.push_back(v);
    }
    return d;
  }
  if (is_builtin("sum")) {
    if (args.empty()) throw Unsupported{"sum() without arguments"};
    VTP r = fold();
    if (r) return r;
    auto items = unpack(args[0]);
    VTP acc = args.size() > 1 ? args[1] : make_const(Obj::steal(PyLong_FromLong(0)).get());
    for (auto& [k, v] : kwargs)
      if (k == "start") acc = v;
    for (auto& e : items) acc = binary("add", acc, e);
    return acc;
  }
  if (is_builtin("min") || is_builtin("max") || is_builtin("abs")) {
    // min/max over sizes stay symbolic (sym::min / sym::max) instead of pinning them.
    if (!is_builtin("abs") && kwargs.empty())
      if (VTP m = sym_minmax(is_builtin("max"), args)) return m;
    VTP r = fold();
    if (r) return r;
    if (is_builtin("abs") && args.size() == 1 && args[0]->kind == VK::Tensor) return unary("abs", args[0]);
    if (args.size() == 1) {  // max(iterator) over constants
      args = unpack(args[0]);
      r = fold();
      if (r) return r;
    }
    throw Unsupported{"min()/max() over tensors (use ignis.minimum / ignis.maximum)"};
  }
  if (is_builtin("all") || is_builtin("any")) {
    bool want_all = is_builtin("all");
    for (auto& e : unpack(args.at(0))) {
      bool t = truth(e);
      if (want_all && !t) return make_const(Py_False);
      if (!want_all && t) return make_const(Py_True);
    }
    return make_const(want_all ? Py_True : Py_False);
  }
  if (is_builtin("map")) {
    if (args.size() < 2) throw Unsupported{"map() with wrong arguments"};
    std::vector<std::vector<VTP>> seqs;
    size_t n = SIZE_MAX;
    for (size_t i = 1; i < args.size(); ++i) {
      seqs.push_back(unpack(args[i]));
      n = std::min(n, seqs.back().size());
    }
    std::vector<VTP> out;
    for (size_t i = 0; i < n; ++i) {
      std::vector<VTP> a;
      for (auto& s : seqs) a.push_back(s[i]);
      out.push_back(call(args[0], a, {}));
    }
    return get_iter(make_list(out));
  }
  if (is_builtin("int") || is_builtin("float") || is_builtin("bool") || is_builtin("str") ||
      is_builtin("repr") || is_builtin("round") || is_builtin("divmod") || is_builtin("pow") ||
      is_builtin("sorted") || is_builtin("callable") || is_builtin("chr") || is_builtin("ord") ||
      is_builtin("hash") || is_builtin("slice") || is_builtin("format")) {
    for (auto& a : args)
      if (a->kind == VK::Tensor)
        throw Unsupported{str(callable_name(fn), "() of a tensor reads its value (data-dependent)")};
    if (is_builtin("callable") && args.size() == 1 && !args[0]->value) {
      VK k = args[0]->kind;
      return make_const(k == VK::Func || k == VK::Method || k == VK::TensorAttr || k == VK::Module ? Py_True : Py_False);
    }
    VTP r = fold();
    if (r) return r;
    throw Unsupported{str(callable_name(fn), "() of values capture cannot fold")};
  }
  // math.* and operator.*: fold over constants; operator.* over tensors is a graph op.
  if (PyCFunction_Check(fn)) {
    PyObject* self = PyCFunction_GET_SELF(fn);
    std::string mod;
    if (self && PyModule_Check(self)) mod = PyModule_GetName(self) ? PyModule_GetName(self) : "";
    if (mod == "math" || mod == "_operator" || mod == "operator" || mod == "cmath") {
      VTP r = fold();
      if (r) return r;
      if (mod != "math" && mod != "cmath") {
        bool any_tensor = false;
        for (auto& a : args) any_tensor |= a->kind == VK::Tensor;
        if (any_tensor) return call_graph(fn, "", args, kwargs);
      }
      throw Unsupported{str(callable_name(fn), "() over tensors")};
    }
    if (self && !PyModule_Check(self) && is_immutable(self)) {
      VTP r = fold();  // a method of a constant: "a,b".split(",")
      if (r) return r;
    }
    if (fn == ig("is_grad_enabled")) return make_const(grad_enabled ? Py_True : Py_False);
    if (fn == ig("get_default_dtype")) {  // guarded at the start of every trace
      Obj d = check(PyObject_CallNoArgs(fn));
      return make_const(d.get());
    }
  }
  if (Py_TYPE(fn) == &PyMethodDescr_Type || Py_TYPE(fn) == &PyWrapperDescr_Type) {
    VTP r = fold();  // str.join(",", parts) and friends over constants
    if (r) return r;
  }
  // ignis.finfo(dtype) / iinfo(dtype): constants of the dtype (torch.finfo under Dynamo).
  if (fn == py_import_attr("ignis._dtype_info", "finfo") || fn == py_import_attr("ignis._dtype_info", "iinfo")) {
    VTP r = fold();
    if (r) return r;
    throw Unsupported{str(callable_name(fn), "() of a dtype capture cannot read")};
  }
  *handled = false;
  return nullptr;
}

// --- imports ---------------------------------------------------------------------------------------
// Note [Imports while tracing]
// An `import` inside a function (`import torch` in a backend's __init__,
// `from . import helpers`) runs Python's import machinery: finders, loaders,
// import hooks and, the first time, the module's own code. Capture does not
// trace that. A module already in sys.modules is only looked up, so the
// trace takes it as a constant (as Dynamo does) and the guard checks that
// sys.modules still holds that very module; an import of a module not yet
// loaded is a graph break, and Python imports it at the break.
namespace {
PyObject* sys_modules() { return PyImport_GetModuleDict(); }  // borrowed
}  // namespace

VTP Tracer::import_name(TFrame& f, PyObject* name, const VTP& fromlist_vt, const VTP& level_vt) {
  Obj fromlist = const_value(fromlist_vt), level = const_value(level_vt);
  if (!fromlist || !level || !PyLong_Check(level.get()))
    throw Unsupported{"import with arguments capture cannot read"};
  std::string absolute = utf8(name);
  long lv = PyLong_AsLong(level.get());
  if (lv > 0) {  // relative: against the importing module's package
    PyObject* pkg = PyDict_GetItemString(f.globals.get(), "__package__");
    if (!pkg || !PyUnicode_Check(pkg)) throw Unsupported{"relative import in a module without __package__"};
    std::string base = utf8(pkg);
    for (long i = 1; i < lv; ++i) {
      size_t dot = base.rfind('.');
      if (dot == std::string::npos) throw Unsupported{"relative import beyond the top-level package"};
      base.resize(dot);
    }
    absolute = absolute.empty() ? base : base + "." + absolute;
  }
  bool has_fromlist = fromlist.get() != Py_None && PyObject_IsTrue(fromlist.get());
  // Without a fromlist, `import a.b` binds the top-level package `a`.
  std::string bound = has_fromlist ? absolute : absolute.substr(0, absolute.find('.'));
  auto guarded = [&](const std::string& modname) -> VTP {
    Obj key = check(PyUnicode_FromString(modname.c_str()));
    PyObject* m = PyDict_GetItemWithError(sys_modules(), key.get());
    if (!m && PyErr_Occurred()) throw PyErrorSet{};
    if (!m || m == Py_None)
      throw Unsupported{str("import of '", modname, "', which is not imported yet (Python's import machinery runs it)")};
    int reg = guards().dict_item(guards().object(sys_modules(), "sys.modules"), key.get());
    guards().check_id(reg, m);
    return make_const(m);
  };
  if (bound != absolute) guarded(absolute);  // `import a.b` needs a.b loaded too
  return guarded(bound);
}

VTP Tracer::import_from(const VTP& module, PyObject* name) {
  if (module->kind != VK::Const || !PyModule_Check(module->value.get()))
    throw Unsupported{"from-import out of a value that is not a module"};
  PyObject* m = module->value.get();
  PyObject* d = PyModule_GetDict(m);
  PyObject* v = PyDict_GetItemWithError(d, name);
  if (!v && PyErr_Occurred()) throw PyErrorSet{};
  if (v) {  // read through the module's dict, guarded as any global of it
    int reg = guards().dict_item(guards().object(d, str("G['", PyModule_GetName(m), "']")), name);
    return wrap_input(v, reg);
  }
  // A submodule not (yet) an attribute: Python looks it up in sys.modules.
  const char* mname = PyModule_GetName(m);
  if (!mname) throw PyErrorSet{};
  Obj key = check(PyUnicode_FromFormat("%s.%U", mname, name));
  PyObject* sub = PyDict_GetItemWithError(sys_modules(), key.get());
  if (!sub && PyErr_Occurred()) throw PyErrorSet{};
  if (!sub) throw Unsupported{str("from-import of '", utf8(key.get()), "', which is not imported yet")};
  guards().check_id(guards().dict_item(guards().object(sys_modules(), "sys.modules"), key.get()), sub);
  return make_const(sub);
}

// --- attributes ------------------------------------------------------------------------------------
VTP Tracer::make_super(TFrame& f, const VTP& cls_in, const VTP& self_in) {
  VTP cls = cls_in, self = self_in;
  if (!cls) {
    // Zero-argument super(): the __class__ cell and the first argument.
    for (int i = 0; i < f.ci->nlocalsplus; ++i) {
      if (f.ci->slot_names[i] != "__class__" || !f.locals[i]) continue;
      cls = f.locals[i]->kind == VK::Cell ? cell_contents(f, f.locals[i]) : f.locals[i];
    }
    if (f.ci->code->co_argcount > 0) {
      if (!f.locals[0] && &f == root && fv.nargs > 0)  // arguments load lazily
        f.locals[0] = root_arg(0);
      if (f.locals[0])
        self = f.locals[0]->kind == VK::Cell ? cell_contents(f, f.locals[0]) : f.locals[0];
    }
    if (!cls || !self) throw Unsupported{"super() without __class__ or self", true};
  }
  if (cls->kind == VK::Cell) cls = cell_contents(f, cls);
  if (!cls || cls->kind != VK::Const || !PyType_Check(cls->value.get()))
    throw Unsupported{"super() of something that is not a class"};
  auto s = std::make_shared<VT>(VK::Super);
  s->self = self;
  s->pytype = cls->value;
  return s;
}

// What reading `name` (found on a class as `attr`) through `self` gives:
// functions bind, properties run, static/class methods unwrap.
VTP Tracer::class_attribute(const VTP& self, PyObject* attr, PyObject* name) {
  if (PyFunction_Check(attr)) {
    auto m = std::make_shared<VT>(VK::Method);
    m->self = self;
    m->func = make_const(attr);
    return m;
  }
  if (PyObject_TypeCheck(attr, &PyProperty_Type)) {
    Obj fget = check(PyObject_GetAttrString(attr, "fget"));
    if (!PyFunction_Check(fget.get()))
      throw Unsupported{str("property ", utf8(name), " without a Python getter")};
    return inline_function(PyFunction_GET_CODE(fget.get()), PyFunction_GET_GLOBALS(fget.get()),
                           make_const(fget.get()), {self}, {});
  }
  if (Py_TYPE(attr) == &PyStaticMethod_Type || Py_TYPE(attr) == &PyClassMethod_Type) {
    Obj fn = check(PyObject_GetAttrString(attr, "__func__"));
    if (Py_TYPE(attr) == &PyStaticMethod_Type) return make_const(fn.get());
    auto m = std::make_shared<VT>(VK::Method);  // bound to the class
    m->self = make_const(reinterpret_cast<PyObject*>(python_type(self)));
    m->func = make_const(fn.get());
    return m;
  }
  if (is_immutable(attr) || is_identity_object(attr)) return make_const(attr);
  throw Unsupported{str("class attribute '", utf8(name), "' of type ", Py_TYPE(attr)->tp_name)};
}

void Tracer::guard_not_shadowed(const VTP& obj, PyObject* name) {
  // Instances of one class share entries (type guards): that this one has no
  // instance attribute `name` (for a module: no parameter, buffer or
  // submodule either) must hold for the next one too.
  if (obj->reg < 0 || !obj->value) return;
  PyObject** dp = _PyObject_GetDictPtr(obj->value.get());
  if (!dp || !*dp) return;
  guards().check_no_key(guards().attr(obj->reg, PyUnicode_InternFromString("__dict__")), name);
  if (obj->kind != VK::Module) return;
  for (const char* store : {"_parameters", "_buffers", "_modules"})
    if (PyDict_GetItemString(*dp, store))
      guards().check_no_key(guards().attr(obj->reg, PyUnicode_InternFromString(store)), name);
}

VTP Tracer::getattr(const VTP& obj, PyObject* name) {
  std::string n = utf8(name);
  switch (obj->kind) {
    case VK::Super: {
      PyTypeObject* self_type = python_type(obj->self);
      if (!self_type) throw Unsupported{"super() of a value capture cannot type"};
      PyObject* mro = self_type->tp_mro;
      Py_ssize_t i = 0, n_mro = PyTuple_GET_SIZE(mro);
      while (i < n_mro && PyTuple_GET_ITEM(mro, i) != obj->pytype.get()) ++i;
      for (++i; i < n_mro; ++i) {
        PyObject* d = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i))->tp_dict;
        PyObject* attr = d ? PyDict_GetItemWithError(d, name) : nullptr;
        if (attr) return class_attribute(obj->self, attr, name);
        if (PyErr_Occurred()) throw PyErrorSet{};
      }
      throw Unsupported{str("'super' object has no attribute '", n, "'")};
    }
    case VK::Tensor: {
      for (auto& [k, v] : obj->attrs)  // written earlier in this trace
        if (k == n) return v;
      if (n == "grad" && obj->value && obj->reg >= 0) {
        // A frame tensor's gradient: read through its source (a graph input,
        // or None, guarded either way).
        int r = guards().attr(obj->reg, name);
        Obj g = check(PyObject_GetAttr(obj->value.get(), name));
        if (g.get() == Py_None) {
          guards().check_none(r, true);
          return make_const(Py_None);
        }
        if (py::is_tensor(g.get())) return wrap_input(g.get(), r);
      }
      realize(obj);
      if (n == "shape" && is_symbolic(obj)) return shape_of(obj);
      if (n == "data" || n == "grad" || n == "grad_fn" || n == "_version" || n == "_base")
        throw Unsupported{str("Tensor.", n, " inside a captured function")};
      // Read from the fake: its device (is_cuda, ...) is the real tensor's.
      Obj v;
      {
        aot::FakeModeGuard mode(fake_mode);
        v = Obj::steal(PyObject_GetAttr(obj->fake.get(), name));
      }
      if (!v) {
        PyErr_Clear();
        throw Unsupported{str("'Tensor' object has no attribute '", n, "'")};
      }
      if (PyCallable_Check(v.get())) {
        auto m = std::make_shared<VT>(VK::TensorAttr);
        m->self = obj;
        m->attr = n;
        return m;
      }
      if (py::is_tensor(v.get())) {
        // A tensor property (T, mT, real, ...): a getattr node.
        PyObject* getattr_fn = PyDict_GetItemString(builtins_dict(), "getattr");
        graph::Node* node =
            ir->call_function(target_of(getattr_fn), {graph::Value(node_of(obj)), graph::Value(n)});
        ++call_nodes;
        VTP r = tensor_result(v.get(), node);
        if (has_symbols()) propagate_shapes(nullptr, n, {obj}, {}, r);  // T, mT, ...: by name
        return r;
      }
      if (is_immutable(v.get())) {  // shape, dtype, ndim, requires_grad
        if (PyLong_CheckExact(v.get()) && n != "ndim" && n != "itemsize" && is_symbolic(obj)) {
          shape_env.set_location(user_location());  // nbytes, ...: pinned sizes
          for (const sym::Expr& e : sizes_of(obj))
            if (!e.is_const()) shape_env.specialize(e, "Tensor." + n);
        }
        return make_const(v.get());
      }
      throw Unsupported{str("Tensor.", n, " of type ", Py_TYPE(v.get())->tp_name)};
    }
    case VK::Const: {
      if (n == "__subclasses__" && PyType_Check(obj->value.get())) {
        auto m = std::make_shared<VT>(VK::Method);  // call_method lists them, guarded
        m->self = obj;
        m->attr = n;
        return m;
      }
      Obj v = Obj::steal(PyObject_GetAttr(obj->value.get(), name));
      if (!v) {
        PyErr_Clear();
        throw Unsupported{str(describe(obj), " has no attribute '", n, "'")};
      }
      if (py::is_tensor(v.get())) {
        // e.g. a tensor held by a module-level object: read it through a source.
        if (obj->reg < 0) throw Unsupported{str("a tensor attribute '", n, "' capture cannot guard")};
        return wrap_input(v.get(), guards().attr(obj->reg, name));
      }
      if (is_immutable(v.get()) || is_identity_object(v.get())) return make_const(v.get());
      return wrap_input(v.get(), obj->reg >= 0 ? guards().attr(obj->reg, name) : -1);
    }
    case VK::LocalObject: {
      for (auto& [k, v] : obj->attrs)
        if (k == n) return v;
      PyObject* ca = _PyType_Lookup(python_type(obj), name);
      if (!ca) throw Unsupported{str("'", python_type(obj)->tp_name, "' object has no attribute '", n, "'")};
      return class_attribute(obj, ca, name);
    }
    case VK::Module:
    case VK::Object: {
      for (auto& [k, v] : obj->attrs)  // written earlier in this trace
        if (k == n) return v;
      PyObject* o = obj->value.get();
      PyObject** dictptr = _PyObject_GetDictPtr(o);
      PyObject* d = dictptr ? *dictptr : nullptr;
      // A data descriptor on the class wins over the instance dict.
      PyObject* ca = _PyType_Lookup(Py_TYPE(o), name);
      if (ca && PyObject_TypeCheck(ca, &PyProperty_Type)) return class_attribute(obj, ca, name);
      if (obj->kind == VK::Module && d) {
        static const char* stores[] = {"_parameters", "_buffers", "_modules"};
        for (const char* s : stores) {
          PyObject* sd = PyDict_GetItemString(d, s);
          if (!sd || !PyDict_Check(sd)) continue;
          PyObject* v = PyDict_GetItemWithError(sd, name);
          if (!v) {
            if (PyErr_Occurred()) throw PyErrorSet{};
            continue;
          }
          int r = guards().dict_item(guards().attr(obj->reg, PyUnicode_InternFromString(s)), name);
          return wrap_input(v, r);
        }
      }
      if (d) {
        PyObject* v = PyDict_GetItemWithError(d, name);
        if (v) return wrap_input(v, obj->reg >= 0 ? guards().attr(obj->reg, name) : -1);
        if (PyErr_Occurred()) throw PyErrorSet{};
      }
      if (ca) {
        if (PyFunction_Check(ca)) {
          guard_not_shadowed(obj, name);
          return class_attribute(obj, ca, name);
        }
        if (Py_TYPE(ca) == &PyStaticMethod_Type || Py_TYPE(ca) == &PyClassMethod_Type)
          return class_attribute(obj, ca, name);
        // Anything else on the class (C method descriptors, constants): what
        // attribute lookup gives, bound.
        if (PyType_Check(ca) || is_immutable(ca) || Py_TYPE(ca)->tp_descr_get) {
          Obj v = check(PyObject_GetAttr(o, name));
          // A method bound to this object (an ndarray's astype) is read from
          // the object's source at run time: as a constant it was bound to
          // the first call's object (its results came back for every later
          // array of the same type).
          // A Python method (a decorated one: its descriptor made the bound
          // method) is the method of its function and this object, as a plain
          // function's is (class_attribute).
          if (PyMethod_Check(v.get()) && PyMethod_GET_SELF(v.get()) == o) {
            auto m = std::make_shared<VT>(VK::Method);
            m->self = obj;
            m->func = make_const(PyMethod_GET_FUNCTION(v.get()));
            return m;
          }
          if (PyCFunction_Check(v.get()) && PyCFunction_GET_SELF(v.get()) == o &&
              obj->kind == VK::Object && obj->reg >= 0)
            return wrap_input(v.get(), guards().attr(obj->reg, name));
          if (is_identity_object(v.get())) return make_const(v.get());
          // A class-level value read through the instance: guarded, an
          // instance attribute may shadow it later.
          if (is_immutable(v.get()))
            return wrap_input(v.get(), obj->reg >= 0 ? guards().attr(obj->reg, name) : -1);
        }
      }
      if (obj->kind == VK::Module) {
        // nn.Module.__getattr__ would raise for anything not found above
        // (guarded: hasattr() is False only while it stays absent).
        guard_not_shadowed(obj, name);
        throw Unsupported{str("'", Py_TYPE(o)->tp_name, "' object has no attribute '", n, "'")};
      }
      Obj v = Obj::steal(PyObject_GetAttr(o, name));
      if (!v) {
        PyErr_Clear();
        guard_not_shadowed(obj, name);
        throw Unsupported{str("'", Py_TYPE(o)->tp_name, "' object has no attribute '", n, "'")};
      }
      return wrap_input(v.get(), obj->reg >= 0 ? guards().attr(obj->reg, name) : -1);
    }
    case VK::Tuple:
      if (obj->pytype) {
        Obj fields = Obj::steal(PyObject_GetAttrString(obj->pytype.get(), "_fields"));
        if (!fields) PyErr_Clear();
        if (fields && PyTuple_Check(fields.get())) {
          for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields.get()); ++i)
            if (utf8(PyTuple_GET_ITEM(fields.get(), i)) == n && static_cast<size_t>(i) < obj->items.size())
              return obj->items[i];
        }
      }
      [[fallthrough]];
    case VK::List:
    case VK::Set:
    case VK::Dict: {
      auto m = std::make_shared<VT>(VK::Method);
      m->self = obj;
      m->attr = n;
      return m;
    }
    case VK::Func:
      if (obj->value) return make_const(check(PyObject_GetAttr(obj->value.get(), name)).get());
      if (n == "__name__" || n == "__qualname__") return make_const(obj->name.get());
      break;
    case VK::GradMode:
      break;
    default: break;
  }
  throw Unsupported{str("attribute '", n, "' of a ", kind_name(obj->kind))};
}

// --- operators --------------------------------------------------------------------------------------
VTP Tracer::binary(const char* name, const VTP& a, const VTP& b) {
  if (a->kind == VK::Tensor || b->kind == VK::Tensor) return call_graph(operator_fn(name), "", {a, b}, {});
  if (a->kind == VK::SymInt || b->kind == VK::SymInt) {
    if (VTP r = sym_binary(name, a, b)) return r;
    // Not an int operation (x / 2, ...): on the specialized value.
    VTP ca = a->kind == VK::SymInt ? make_const(const_value(a).get()) : a;
    VTP cb = b->kind == VK::SymInt ? make_const(const_value(b).get()) : b;
    return binary(name, ca, cb);
  }
  std::string op = name;
  if (a->kind == VK::List && (op == "iadd")) {
    mark_mutated(a, "+= on a list");
    for (auto& e : unpack(b)) a->items.push_back(e);
    return a;
  }
  if ((a->kind == VK::List || a->kind == VK::Tuple) && (op == "add" || op == "iadd") &&
      (b->kind == a->kind || (b->kind == VK::Const && (a->kind == VK::List ? PyList_Check(b->value.get()) : PyTuple_Check(b->value.get()))))) {
    std::vector<VTP> items = a->items;
    for (auto& e : unpack(b)) items.push_back(e);
    return a->kind == VK::List ? make_list(items) : make_tuple(items);
  }
  if ((a->kind == VK::List || a->kind == VK::Tuple) && (op == "mul" || op == "imul") && b->kind == VK::Const &&
      PyLong_Check(b->value.get())) {
    long times = PyLong_AsLong(b->value.get());
    std::vector<VTP> items;
    for (long t = 0; t < times; ++t)
      for (auto& e : a->items) items.push_back(e);
    if (op == "imul" && a->kind == VK::List) {
      mark_mutated(a, "*= on a list");
      a->items = items;
      return a;
    }
    return a->kind == VK::List ? make_list(items) : make_tuple(items);
  }
  if (b->kind == VK::Tuple && a->kind == VK::Const && PyTuple_Check(a->value.get()) && op == "add") {
    std::vector<VTP> items = unpack(a);
    for (auto& e : b->items) items.push_back(e);
    return make_tuple(items);
  }
  Obj av = const_value(a), bv = const_value(b);
  if (av && bv && a->kind == VK::Set && op[0] == 'i') {
    // s |= t (and -=, &=, ^=) changes s: only a set made here may change.
    if (!a->local) throw Unsupported{str("operator ", name, " on a set from outside the captured function")};
    check(PyObject_CallFunctionObjArgs(operator_fn(name), av.get(), bv.get(), nullptr));
    return a;
  }
  if (av && bv && a->kind != VK::List && b->kind != VK::List) {
    Obj r = check(PyObject_CallFunctionObjArgs(operator_fn(name), av.get(), bv.get(), nullptr));
    if (is_immutable(r.get())) return make_const(r.get());
    if (PySet_CheckExact(r.get()) && r.get() != av.get() && r.get() != bv.get()) {  // s | t: a new set
      auto out = std::make_shared<VT>(VK::Set);
      out->value = r;
      return out;
    }
    throw Unsupported{str("operator ", name, " made a ", Py_TYPE(r.get())->tp_name)};
  }
  throw Unsupported{str("operator ", name, " on a ", kind_name(a->kind), " and a ", kind_name(b->kind))};
}

VTP Tracer::unary(const char* name, const VTP& a) {
  if (a->kind == VK::Tensor) return call_graph(operator_fn(name), "", {a}, {});
  if (a->kind == VK::SymInt) {
    if (VTP r = sym_binary(name, a, nullptr)) return r;
    return unary(name, make_const(const_value(a).get()));
  }
  Obj av = const_value(a);
  if (av && a->kind == VK::Const) {
    Obj r = check(PyObject_CallFunctionObjArgs(operator_fn(name), av.get(), nullptr));
    return make_const(r.get());
  }
  throw Unsupported{str("operator ", name, " on a ", kind_name(a->kind))};
}

VTP Tracer::compare(const char* op, const VTP& a, const VTP& b) {
  static const std::pair<const char*, const char*> table[] = {
      {"<", "lt"}, {"<=", "le"}, {"==", "eq"}, {"!=", "ne"}, {">", "gt"}, {">=", "ge"}};
  const char* name = nullptr;
  for (auto& [s, n] : table)
    if (std::strcmp(op, s) == 0) name = n;
  if (!name) throw Unsupported{str("comparison ", op)};
  if (a->kind == VK::Tensor || b->kind == VK::Tensor) return call_graph(operator_fn(name), "", {a, b}, {});
  if (a->kind == VK::SymInt || b->kind == VK::SymInt) {
    if (VTP r = sym_compare(name, a, b)) return r;
  }
  Obj av = const_value(a), bv = const_value(b);
  if (!av && a->value) av = a->value;
  if (!bv && b->value) bv = b->value;
  if (av && bv) {
    Obj r = check(PyObject_CallFunctionObjArgs(operator_fn(name), av.get(), bv.get(), nullptr));
    if (is_immutable(r.get())) return make_const(r.get());
  }
  throw Unsupported{str("comparison ", op, " between a ", kind_name(a->kind), " and a ", kind_name(b->kind))};
}

namespace {
bool has_bool_tensor(const VTP& k) {
  if (k->kind == VK::Tensor) {
    Obj dt = Obj::steal(PyObject_GetAttrString(k->fake.get(), "dtype"));
    if (!dt) {
      PyErr_Clear();
      return false;
    }
    Obj s = Obj::steal(PyObject_Str(dt.get()));
    std::string name = s ? utf8(s.get()) : "";
    return name.find("bool") != std::string::npos || name.find("uint8") != std::string::npos;
  }
  if (k->kind == VK::Tuple || k->kind == VK::List)
    for (auto& e : k->items)
      if (has_bool_tensor(e)) return true;
  return false;
}
}  // namespace

VTP Tracer::subscr(const VTP& obj, const VTP& key) {
  if (obj->kind == VK::Tensor) {
    if (has_bool_tensor(key)) {
      if (VTP r = call_unbacked(operator_fn("getitem"), "getitem", false, {obj, key}, {})) return r;
      if (cfg->capture_dynamic_output_shape_ops)
        if (VTP r = subscr_mask_among_basic(obj, key)) return r;
      throw Unsupported{"indexing with a boolean mask has a data-dependent shape", false, true};
    }
    return call_graph(operator_fn("getitem"), "", {obj, key}, {});
  }
  Obj k = const_value(key);
  if (obj->kind == VK::List || obj->kind == VK::Tuple) {
    if (!k) throw Unsupported{"indexing a list with a non-constant index"};
    Py_ssize_t n = static_cast<Py_ssize_t>(obj->items.size());
    if (PyLong_Check(k.get())) {
      Py_ssize_t i = PyLong_AsSsize_t(k.get());
      if (i < 0) i += n;
      if (i < 0 || i >= n) throw Unsupported{"IndexError: index out of range"};
      return obj->items[i];
    }
    if (PySlice_Check(k.get())) {
      Py_ssize_t start, stop, step, len;
      if (PySlice_GetIndicesEx(k.get(), n, &start, &stop, &step, &len) < 0) throw PyErrorSet{};
      std::vector<VTP> items;
      for (Py_ssize_t i = 0, j = start; i < len; ++i, j += step) items.push_back(obj->items[j]);
      return obj->kind == VK::List ? make_list(items) : make_tuple(items);
    }
    throw Unsupported{"indexing a list with an unsupported index"};
  }
  if (obj->kind == VK::Dict) {
    if (!k) throw Unsupported{"dict lookup with a non-constant key"};
    for (size_t i = 0; i < obj->keys.size(); ++i) {
      int r = PyObject_RichCompareBool(obj->keys[i].get(), k.get(), Py_EQ);
      if (r < 0) throw PyErrorSet{};
      if (r) return obj->items[i];
    }
    throw Unsupported{"KeyError in a dict lookup"};
  }
  if (obj->kind == VK::Const && k) {
    Obj r = check(PyObject_GetItem(obj->value.get(), k.get()));
    if (is_immutable(r.get()) || is_identity_object(r.get())) return make_const(r.get());
    throw Unsupported{str("indexing a constant gave a ", Py_TYPE(r.get())->tp_name)};
  }
  if (obj->kind == VK::Module && k) {
    PyObject* m = obj->value.get();
    PyObject** dp = _PyObject_GetDictPtr(m);
    PyObject* mods = dp && *dp ? PyDict_GetItemString(*dp, "_modules") : nullptr;
    if (!mods) throw Unsupported{"indexing a module without submodules"};
    Obj keyname;
    if (PyLong_Check(k.get())) {
      // Which key an index names depends on the length (negative indices)
      // and the order: guard the length; the key itself is loaded below.
      Py_ssize_t i = PyLong_AsSsize_t(k.get()), n = module_length(obj);
      if (i < 0) i += n;
      if (i < 0 || i >= n) throw Unsupported{"IndexError: module index out of range"};
      Obj keys = check(PyDict_Keys(mods));
      keyname = Obj::borrow(PyList_GET_ITEM(keys.get(), i));
    } else if (PyUnicode_Check(k.get())) {
      keyname = k;
    } else {
      throw Unsupported{"indexing a module with a slice"};
    }
    PyObject* child = PyDict_GetItemWithError(mods, keyname.get());
    if (!child) throw Unsupported{"KeyError indexing a module"};
    int r = guards().dict_item(guards().attr(obj->reg, PyUnicode_InternFromString("_modules")), keyname.get());
    return wrap_input(child, r);
  }
  throw Unsupported{str("indexing a ", kind_name(obj->kind))};
}

void Tracer::store_subscr(const VTP& obj, const VTP& key, const VTP& value) {
  if (obj->kind == VK::Tensor) {
    if (has_bool_tensor(key)) {
      // x[mask] = v keeps the shape: an in-place masked fill, fine to trace.
    }
    call_graph(operator_fn("setitem"), "", {obj, key, value}, {});
    return;
  }
  Obj k = const_value(key);
  if ((obj->kind == VK::List || obj->kind == VK::Dict) && k) mark_mutated(obj, "item assignment");
  if (obj->kind == VK::List && k && PyLong_Check(k.get())) {
    Py_ssize_t n = static_cast<Py_ssize_t>(obj->items.size());
    Py_ssize_t i = PyLong_AsSsize_t(k.get());
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw Unsupported{"IndexError: list assignment index out of range"};
    obj->items[i] = value;
    return;
  }
  if (obj->kind == VK::Dict && k) {
    for (size_t i = 0; i < obj->keys.size(); ++i) {
      if (PyObject_RichCompareBool(obj->keys[i].get(), k.get(), Py_EQ) == 1) {
        obj->items[i] = value;
        return;
      }
    }
    obj->keys.push_back(k);
    obj->items.push_back(value);
    return;
  }
  throw Unsupported{str("item assignment on a ", kind_name(obj->kind),
                        obj->local ? "" : " that came from outside the compiled function")};
}

Py_ssize_t Tracer::module_length(const VTP& m) {
  // Containers (Sequential, ModuleList, ModuleDict) are as long as their
  // submodule dict: guard that length.
  Py_ssize_t n = PyObject_Length(m->value.get());
  if (n < 0) throw PyErrorSet{};
  PyObject** dp = _PyObject_GetDictPtr(m->value.get());
  PyObject* mods = dp && *dp ? PyDict_GetItemString(*dp, "_modules") : nullptr;
  if (!mods || PyDict_Size(mods) != n)
    throw Unsupported{str("len() of a ", Py_TYPE(m->value.get())->tp_name, " capture cannot guard")};
  guards().check_len(guards().attr(m->reg, PyUnicode_InternFromString("_modules")), n);
  return n;
}

// torch's _check family (ignis/_checks.py): the condition is a branch like
// any other -- on sizes a guard (`x.size(0) > 2` under automatic dynamic:
// `3 <= L['x'].size()[0]`), on constants decided now -- and a check that
// holds leaves nothing in the graph, its message never built. One that
// fails, or one capture cannot decide (a count only the data give), breaks
// the graph at its line: the check then runs eagerly and raises its own
// error. A condition that is not a bool (eager's TypeError) breaks too.
VTP Tracer::call_check(const std::string& name, const std::vector<VTP>& args,
                       const std::vector<std::pair<std::string, VTP>>& kwargs) {
  // The checks and their exceptions: ignis/_checks.py's _ERRORS, plus
  // _check_with (its own error_type) and _check_is_size (a _check).
  static PyObject* errors = py_import_attr("ignis._checks", "_ERRORS");
  const bool is_size = name == "_check_is_size";
  if (!is_size && name != "_check_with" && !PyDict_GetItemString(errors, name.c_str()))
    return nullptr;
  // The argument that is the condition (or, for _check_is_size, the size).
  const size_t at = name == "_check_with" ? 1 : 0;
  const char* key = is_size ? "i" : "cond";
  VTP cond = at < args.size() ? args[at] : nullptr;
  VTP max;
  for (const auto& [k, v] : kwargs) {
    if (k == key) cond = v;
    else if (is_size && k == "max") max = v;
    else if (k != "message" && k != "error_type") return nullptr;
  }
  if (!cond) return nullptr;
  std::vector<VTP> conds;
  if (is_size) {
    if (!(cond->kind == VK::SymInt ||
          (cond->kind == VK::Const && PyLong_Check(cond->value.get()) &&
           !PyBool_Check(cond->value.get()))))
      throw Unsupported{str("ignis._check_is_size() of a ", kind_name(cond->kind),
                            ", not an int: the check runs eagerly")};
    Obj zero = check(PyLong_FromLong(0));
    conds.push_back(compare(">=", cond, make_const(zero.get())));
    if (max && !(max->kind == VK::Const && max->value.get() == Py_None))
      conds.push_back(compare("<=", cond, max));
  } else {
    const bool is_bool = (cond->kind == VK::Const && PyBool_Check(cond->value.get())) ||
                         (cond->kind == VK::SymInt && sym::is_comparison(cond->sym.kind()));
    if (!is_bool)
      throw Unsupported{str("ignis.", name, "() of a ", kind_name(cond->kind),
                            ", not a bool: the check runs eagerly")};
    conds.push_back(cond);
  }
  for (const VTP& c : conds) {
    if (c->kind == VK::SymInt && shape_env.has_unbacked(c->sym) &&
        shape_env.decided(c->sym) < 0) {
      runtime_check(name, args, c);
      continue;
    }
    if (!truth(c))
      throw Unsupported{str("ignis.", name, "() fails on the traced values; the check runs eagerly")};
  }
  return make_const(Py_None);
}

// Note [Runtime checks of data-dependent counts]
// ignis._check(y.shape[0] > 0) where y = x[mask]: the count u0 is known
// only when the graph runs. As torch records a runtime assert, the check
// becomes a node of the graph -- ignis._checks._runtime_check(y, 0, lo, hi,
// error, text), impure so that nothing removes it -- and the relation
// narrows u0's range ([0, n] -> [1, n]), so later decisions on it (a
// division by the count, `if y.shape[0] == 0`) are settled without a break.
// The concrete backends run the node eagerly between their compiled stages
// (ignis/_unbacked.py), the eager backend as part of the graph. Only a
// relation of one count against constants (u0 > 0, u0 <= 64) is recorded;
// others break the graph as before. The message is the check's own, naming
// the relation (torch's runtime asserts do not call the user's message
// either: it is a callable of the trace).
void Tracer::runtime_check(const std::string& name, const std::vector<VTP>& args,
                           const VTP& cond) {
  // The exception: the check's (ignis/_checks.py's _ERRORS; _check_is_size
  // is a _check), or _check_with's error_type (a builtin one).
  std::string error;
  if (name != "_check_with") {
    static PyObject* errors = py_import_attr("ignis._checks", "_ERRORS");
    PyObject* type = PyDict_GetItemString(errors, name == "_check_is_size" ? "_check" : name.c_str());
    IGNIS_INTERNAL_ASSERT(type, "ignis._checks._ERRORS has no ", name);
    error = utf8(check(PyObject_GetAttrString(type, "__name__")).get());
  } else {
    const VTP& type = args.empty() ? nullptr : args[0];
    PyObject* t = type && type->kind == VK::Const ? type->value.get() : nullptr;
    Obj builtin = t && PyType_Check(t) ? Obj::steal(PyObject_GetAttrString(t, "__name__")) : Obj();
    if (!builtin) PyErr_Clear();
    PyObject* same = builtin ? PyDict_GetItemWithError(PyEval_GetBuiltins(), builtin.get()) : nullptr;
    if (!same || same != t)
      throw Unsupported{str("ignis._check_with() of an error type that is not a builtin exception "
                            "on a data-dependent count; the check runs eagerly")};
    error = utf8(builtin.get());
  }
  shape_env.set_location(user_location());
  sym::Expr u;
  int64_t lo = 0, hi = 0;
  const sym::Expr rel = shape_env.replace(cond->sym);
  const std::string relation = shape_env.source_str(rel);
  const std::string where = cur && cur->ci ? str(cur->ci->filename, ":", cur->line) : "?";
  auto src = unbacked_source.end();
  if (!shape_env.assume(cond->sym, &u, &lo, &hi) ||
      (src = unbacked_source.find(u)) == unbacked_source.end())
    return runtime_check_relation(name, rel, relation, error, where);
  const graph::Value low = lo == sym::ShapeEnv::kNoLower ? graph::Value() : graph::Value(lo);
  const graph::Value high = hi >= sym::ShapeEnv::kNoUpper ? graph::Value() : graph::Value(hi);
  const std::string text =
      str("ignis.", name, "() at ", where, ": expected ", relation, ", where ", count_meaning(u));
  static PyObject* fn = py_import_attr("ignis._checks", "_runtime_check");
  auto [x, dim] = unbacked_read(u);
  graph::Node* node = ir->call_function(
      target_of(fn), {x, dim, low, high, graph::Value(error), graph::Value(text)}, {});
  node->meta().set_extra("runtime_check", sym::symbol_name(u));
  ++call_nodes;
}

// "u0 is <what made it>", for a runtime check's message.
std::string Tracer::count_meaning(const sym::Expr& u) const {
  const sym::ShapeEnv::Symbol* info = shape_env.symbol_info(u);
  return str(sym::symbol_name(u), " is ",
             info ? info->source : std::string("a data-dependent count"));
}

// Another relation of data-dependent counts (u0 != 2, u0 <= u1, u0 != s0: no
// bound of one count, so nothing to narrow): a node ignis._checks.
// _runtime_check_relation(xs, dims, names, relation, error, text) that reads
// each count from the tensor it is a size of, and an input's symbolic size
// from the graph's int for it (dim None), and evaluates the relation as
// sym::str spells it. A symbol with neither (not yet lifted into the graph)
// is not recorded: the check runs eagerly.
void Tracer::runtime_check_relation(const std::string& name, const sym::Expr& rel,
                                    const std::string& relation, const std::string& error,
                                    const std::string& where) {
  std::vector<graph::Value> xs, dims;
  std::string names, meaning;
  for (const sym::Expr& s : sym::free_symbols(rel)) {
    auto src = unbacked_source.find(s);
    auto input = symbol_vt.find(s);
    if (src != unbacked_source.end()) {
      auto [x, dim] = unbacked_read(s);
      xs.push_back(x);
      dims.push_back(dim);
      meaning += str(meaning.empty() ? ", where " : "; ", count_meaning(s));
    } else if (input != symbol_vt.end()) {
      xs.push_back(graph_arg(input->second));
      dims.push_back(graph::Value());
    } else {
      throw Unsupported{str("ignis.", name, "() on ", relation,
                            ", a relation of a data-dependent count and a size the graph does "
                            "not hold; the check runs eagerly")};
    }
    names += (names.empty() ? "" : ",") + sym::symbol_name(s);
  }
  IGNIS_INTERNAL_ASSERT(!xs.empty(), "a runtime check of ", relation, " with no count");
  const std::string text = str("ignis.", name, "() at ", where, ": expected ", relation, meaning);
  static PyObject* fn = py_import_attr("ignis._checks", "_runtime_check_relation");
  graph::Node* node = ir->call_function(
      target_of(fn),
      {graph::Value::list(std::move(xs)), graph::Value::list(std::move(dims)),
       graph::Value(names), graph::Value(sym::str(rel)), graph::Value(error), graph::Value(text)},
      {});
  node->meta().set_extra("runtime_check", names);
  ++call_nodes;
}

bool Tracer::truth(const VTP& v) {
  switch (v->kind) {
    case VK::Set:
    case VK::Const: {
      int r = PyObject_IsTrue(v->value.get());
      if (r < 0) throw PyErrorSet{};
      return r;
    }
    case VK::List:
    case VK::Tuple: return !v->items.empty();
    case VK::Dict: return !v->keys.empty();
    case VK::Tensor:
      throw Unsupported{"data-dependent control flow: a branch on a tensor's value"};
    case VK::SymInt:  // `if n:` on a size: a guard on n != 0 (on a comparison: itself)
      shape_env.set_location(user_location());
      if (sym::is_comparison(v->sym.kind())) return shape_env.evaluate(v->sym);
      return shape_env.evaluate(sym::ne(v->sym, sym::Expr(0)));
    case VK::Module: {
      PyTypeObject* tp = Py_TYPE(v->value.get());
      if (tp->tp_as_sequence && tp->tp_as_sequence->sq_length) return module_length(v) > 0;
      if (tp->tp_as_mapping && tp->tp_as_mapping->mp_length) return module_length(v) > 0;
      return true;
    }
    case VK::Object: {
      PyTypeObject* tp = Py_TYPE(v->value.get());
      if ((tp->tp_as_number && tp->tp_as_number->nb_bool) ||
          (tp->tp_as_mapping && tp->tp_as_mapping->mp_length) ||
          (tp->tp_as_sequence && tp->tp_as_sequence->sq_length))
        throw Unsupported{str("truth value of a ", tp->tp_name)};
      return true;
    }
    default: return true;
  }
}

VTP Tracer::get_iter(const VTP& v) {
  if (v->kind == VK::Iter) return v;
  auto it = std::make_shared<VT>(VK::Iter);
  if (v->kind == VK::Const && PyRange_Check(v->value.get())) {
    it->value = v->value;
    it->length = static_cast<size_t>(PyObject_Length(v->value.get()));
    return it;
  }
  if (v->kind == VK::Tensor) {
    if (is_symbolic(v)) {  // the loop unrolls to the first dim's size: pin it
      std::vector<sym::Expr> s = sizes_of(v);
      if (!s.empty() && !s[0].is_const()) {
        shape_env.set_location(user_location());
        shape_env.specialize(s[0], "iteration over a tensor");
      }
    }
    Obj shape = check(PyObject_GetAttrString(v->fake.get(), "shape"));
    if (PyTuple_Size(shape.get()) == 0) throw Unsupported{"iteration over a 0-d tensor"};
    it->self = v;
    it->length = static_cast<size_t>(PyLong_AsSsize_t(PyTuple_GET_ITEM(shape.get(), 0)));
    return it;
  }
  it->items = unpack(v);
  it->length = it->items.size();
  return it;
}

VTP Tracer::iter_next(const VTP& it) {
  if (it->kind != VK::Iter) throw Unsupported{"internal: FOR_ITER over a non-iterator"};
  if (it->index >= it->length) return nullptr;
  size_t i = it->index++;
  if (it->value) {
    Obj r = check(PySequence_GetItem(it->value.get(), static_cast<Py_ssize_t>(i)));
    return make_const(r.get());
  }
  if (it->self) return subscr(it->self, make_const(Obj::steal(PyLong_FromSize_t(i)).get()));
  return it->items[i];
}

std::vector<VTP> Tracer::unpack(const VTP& v) {
  switch (v->kind) {
    case VK::List:
    case VK::Tuple: return v->items;
    case VK::Dict: {
      std::vector<VTP> ks;
      for (auto& k : v->keys) ks.push_back(make_const(k.get()));
      return ks;
    }
    case VK::Iter: {
      std::vector<VTP> out;
      while (VTP e = iter_next(v)) out.push_back(e);
      return out;
    }
    case VK::Tensor: {
      VTP it = get_iter(v);
      return unpack(it);
    }
    case VK::Set:
    case VK::Const: {
      PyObject* o = v->value.get();
      if (PyDict_Check(o) || PyTuple_Check(o) || PyList_Check(o) || PyUnicode_Check(o) ||
          PyRange_Check(o) || PyAnySet_Check(o)) {
        Obj seq = check(PySequence_List(o));
        std::vector<VTP> out;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seq.get()); ++i) out.push_back(make_const(PyList_GET_ITEM(seq.get(), i)));
        return out;
      }
      break;
    }
    case VK::Module: {
      PyObject* m = v->value.get();
      PyObject** dp = _PyObject_GetDictPtr(m);
      PyObject* mods = dp && *dp ? PyDict_GetItemString(*dp, "_modules") : nullptr;
      if (!mods) break;
      static PyObject* md_cls = nullptr;
      if (!md_cls) {
        Obj nn = check(PyImport_ImportModule("ignis.nn"));
        md_cls = PyObject_GetAttrString(nn.get(), "ModuleDict");
        if (!md_cls) PyErr_Clear();
      }
      bool is_dict = md_cls && PyObject_IsInstance(m, md_cls) == 1;
      int mreg = guards().attr(v->reg, PyUnicode_InternFromString("_modules"));
      std::vector<VTP> out;
      PyObject *k, *child;
      Py_ssize_t pos = 0;
      std::vector<std::pair<PyObject*, PyObject*>> kvs;
      while (PyDict_Next(mods, &pos, &k, &child)) kvs.emplace_back(k, child);
      guards().check_len(mreg, static_cast<Py_ssize_t>(kvs.size()));
      for (auto& [key, c] : kvs) {
        if (is_dict) out.push_back(make_const(key));
        else out.push_back(wrap_input(c, guards().dict_item(mreg, key)));
      }
      return out;
    }
    default: break;
  }
  throw Unsupported{str("iteration over a ", kind_name(v->kind), " ", describe(v))};
}

}  // namespace ignis::capture

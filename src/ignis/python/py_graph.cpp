// Python views of the graph IR (src/ignis/graph): _C.GraphBase, _C.NodeBase
// and _C.OpOverload. ignis.fx subclasses the first two (Graph, Node) with
// Python-only glue; all structure, printing, passes and hashing stay in C++.
//
// Python objects inside a graph (callable targets, odd constants, type
// annotations, node.meta's free-form dict) are held through PyOpaque. Each
// C++ node caches its wrapper in Node::pyobj, so `node.args[0] is x` holds
// while anyone keeps the wrapper alive.
#include <cstring>

#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/interpreter.h"
#include "ignis/graph/passes/cse.h"
#include "ignis/graph/passes/dce.h"
#include "ignis/graph/passes/hash.h"
#include "ignis/graph/passes/lint.h"
#include "ignis/graph/printer.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

using namespace ignis::graph;

namespace {

// --- handles on Python objects ------------------------------------------------------
struct PyOpaque : Opaque {
  PyObject* obj;
  explicit PyOpaque(PyObject* o) : obj(o) { Py_INCREF(o); }
  ~PyOpaque() override {
    if (!Py_IsInitialized()) return;
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF(obj);
    PyGILState_Release(g);
  }
  bool same(const Opaque& o) const override {
    auto* p = dynamic_cast<const PyOpaque*>(&o);
    return p && p->obj == obj;
  }
};

PyObject* opaque_object(const std::shared_ptr<const Opaque>& h) {
  auto* p = dynamic_cast<const PyOpaque*>(h.get());
  return p ? p->obj : Py_None;
}

using Ref = PyRef;

std::string py_str(PyObject* o) {
  Ref s(PyObject_Str(o));
  const char* c = PyUnicode_AsUTF8(s.p);
  if (!c) throw PythonErrorAlreadySet{};
  return c;
}
std::string py_repr(PyObject* o) {
  Ref s(PyObject_Repr(o));
  const char* c = PyUnicode_AsUTF8(s.p);
  if (!c) throw PythonErrorAlreadySet{};
  return c;
}
std::string str_attr(PyObject* o, const char* name) {
  PyObject* a = PyObject_GetAttrString(o, name);
  if (!a) {
    PyErr_Clear();
    return "";
  }
  std::string s = PyUnicode_Check(a) ? PyUnicode_AsUTF8(a) : "";
  Py_DECREF(a);
  return s;
}

// --- types ----------------------------------------------------------------------------
struct PyGraph {
  PyObject_HEAD
  Graph* g;
};
struct PyNode {
  PyObject_HEAD
  NodePtr node;
  PyObject* graph;  // the graph wrapper (strong)
};
struct PyOpOverload {
  PyObject_HEAD
  const OpHandle* op;
};

PyTypeObject* GraphBaseType = nullptr;
PyTypeObject* NodeBaseType = nullptr;
PyTypeObject* NodeClass = nullptr;  // ignis.fx.Node once registered
PyTypeObject* OpOverloadType = nullptr;
PyObject* IgnisOpType = nullptr;    // ignis._C.Op

bool is_node(PyObject* o) { return NodeBaseType && PyObject_TypeCheck(o, NodeBaseType); }
bool is_graph(PyObject* o) { return PyObject_TypeCheck(o, GraphBaseType); }
Node* node_of(PyObject* o) { return reinterpret_cast<PyNode*>(o)->node.get(); }
Graph& graph_of(PyObject* o) { return *reinterpret_cast<PyGraph*>(o)->g; }

PyObject* wrap_node(Node* n) {
  if (n->pyobj) {
    PyObject* o = static_cast<PyObject*>(n->pyobj);
    Py_INCREF(o);
    return o;
  }
  PyTypeObject* cls = NodeClass ? NodeClass : NodeBaseType;
  PyObject* o = cls->tp_alloc(cls, 0);
  if (!o) throw PythonErrorAlreadySet{};
  auto* pn = reinterpret_cast<PyNode*>(o);
  new (&pn->node) NodePtr(n);
  pn->graph = n->graph() && n->graph()->pyobj ? static_cast<PyObject*>(n->graph()->pyobj) : Py_None;
  Py_INCREF(pn->graph);
  n->pyobj = o;
  return o;
}

PyObject* make_op_overload(const OpHandle* op) {
  PyObject* o = OpOverloadType->tp_alloc(OpOverloadType, 0);
  if (!o) throw PythonErrorAlreadySet{};
  reinterpret_cast<PyOpOverload*>(o)->op = op;
  return o;
}

// --- Python <-> Value ------------------------------------------------------------------
// The package's attribute `name` (a new reference; null, with no error set, when absent).
PyObject* ignis_attr(const std::string& name) {
  PyObject* pkg_name = PyUnicode_FromString("ignis");
  PyObject* pkg = pkg_name ? PyImport_GetModule(pkg_name) : nullptr;
  Py_XDECREF(pkg_name);
  PyObject* attr = pkg && !name.empty() ? PyObject_GetAttrString(pkg, name.c_str()) : nullptr;
  if (!attr) PyErr_Clear();
  Py_XDECREF(pkg);
  return attr;
}
bool ignis_has(const std::string& name) {
  PyObject* attr = ignis_attr(name);
  Py_XDECREF(attr);
  return attr != nullptr;
}
// Whether `ignis.<name>` is the object o.
bool exported_by_ignis(PyObject* o, const std::string& name) {
  PyObject* attr = ignis_attr(name);
  Py_XDECREF(attr);
  return attr == o;
}

ForeignPtr make_foreign(PyObject* o, bool callable) {
  auto f = std::make_shared<Foreign>();
  f->handle = std::make_shared<PyOpaque>(o);
  if (IgnisOpType && PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(IgnisOpType))) {
    // An ignis op object prints like the torch function it stands for:
    // ignis.<name>, or ignis.ops.<name> for an op that the package has no
    // function of that name for (private ones: ignis.ops._thnn_fused_lstm_cell).
    f->name = str_attr(o, "__name__");
    f->module = ignis_has(f->name) ? "ignis" : "ignis.ops";
    char buf[160];
    std::snprintf(buf, sizeof buf, "<built-in method %s of type object at %p>", f->name.c_str(),
                  static_cast<void*>(IgnisOpType));
    f->repr = buf;
    f->identity = f->module + "." + f->name;
    f->impure = !f->name.empty() && f->name.back() == '_';
    f->nondeterministic = nondeterministic_by_name(f->name);
    return f;
  }
  if (callable) {
    f->module = str_attr(o, "__module__");
    f->name = str_attr(o, "__name__");
    if (f->module.rfind("ignis.", 0) == 0 && !f->name.empty()) {
      // A function of a private module that ignis exports (ignis._creation.tensor)
      // prints as users call it: ignis.tensor.
      if (exported_by_ignis(o, f->name)) f->module = "ignis";
    }
    std::string qual = str_attr(o, "__qualname__");
    f->repr = py_str(o);
    f->identity = (f->module.empty() ? "" : f->module + ".") + (qual.empty() ? f->name : qual);
    if (PyFunction_Check(o)) {
      // Python functions also by their code: two lambdas share a qualname,
      // and the structural hash keys compiled code. (Closure cell values
      // are not part of it.)
      PyObject* code = PyFunction_GET_CODE(o);
      Ref bytes(PyObject_GetAttrString(code, "co_code"));
      Ref consts(PyObject_GetAttrString(code, "co_consts"));
      Ref names(PyObject_GetAttrString(code, "co_names"));
      f->identity += "#" + py_repr(bytes.p) + py_repr(consts.p) + py_repr(names.p);
    }
    static const char* inplace[] = {"iadd", "iand", "ifloordiv", "ilshift", "imod", "imul",
                                    "imatmul", "ior", "ipow", "irshift", "isub", "itruediv",
                                    "ixor", "setitem", "delitem"};
    if (f->module == "_operator")
      for (const char* n : inplace) f->impure |= f->name == n;
    if (PyObject_HasAttrString(o, "_ignis_impure")) f->impure = true;
    if (f->module == "ignis" || f->module.rfind("ignis.", 0) == 0)
      f->nondeterministic = nondeterministic_by_name(f->name);
    return f;
  }
  f->repr = py_repr(o);
  f->str = py_str(o);
  // Classes and functions used as values: by qualified name, not address.
  std::string qual = str_attr(o, "__qualname__");
  f->identity = qual.empty() ? f->repr : str_attr(o, "__module__") + "." + qual;
  return f;
}

Value to_value(PyObject* o);

Value::Items to_items(PyObject* seq) {
  Ref fast(PySequence_Fast(seq, "expected a sequence"));
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.p);
  Value::Items items;
  items.reserve(n);
  for (Py_ssize_t i = 0; i < n; ++i) items.push_back(to_value(PySequence_Fast_GET_ITEM(fast.p, i)));
  return items;
}

Value to_value(PyObject* o) {
  if (o == Py_None) return Value();
  if (is_node(o)) return Value(node_of(o));
  if (PyBool_Check(o)) return Value(o == Py_True);
  if (PyLong_CheckExact(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (!overflow) return Value(static_cast<int64_t>(v));
  }
  if (PyFloat_CheckExact(o)) return Value(PyFloat_AS_DOUBLE(o));
  if (PyUnicode_CheckExact(o)) return Value(std::string(PyUnicode_AsUTF8(o)));
  if (is_tensor(o)) return Value(unwrap(o));
  if (is_dtype(o)) return Value(dtype_of(o));
  if (is_memory_format(o)) return Value(memory_format_of(o));
  if (is_device(o)) return Value(device_of(o));
  if (o == Py_Ellipsis) return Value::ellipsis();
  if (PySlice_Check(o)) {
    auto* s = reinterpret_cast<PySliceObject*>(o);
    return Value::slice(to_value(s->start), to_value(s->stop), to_value(s->step));
  }
  if (PyList_CheckExact(o)) return Value::list(to_items(o));
  // Tuples, including ignis.Size; named tuples other than Size stay foreign
  // so that they keep their type.
  if (PyTuple_Check(o) && (PyTuple_CheckExact(o) || (SizeClass && PyObject_TypeCheck(
                               o, reinterpret_cast<PyTypeObject*>(SizeClass)))))
    return Value::tuple(to_items(o));
  if (PyDict_CheckExact(o)) {
    Value::Items kv;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &k, &v)) {
      kv.push_back(to_value(k));
      kv.push_back(to_value(v));
    }
    return Value::dict(std::move(kv));
  }
  return Value(make_foreign(o, false));
}

PyObject* from_value(const Value& v);

PyObject* items_tuple(const Value::Items& items) {
  Ref t(PyTuple_New(static_cast<Py_ssize_t>(items.size())));
  for (size_t i = 0; i < items.size(); ++i) PyTuple_SET_ITEM(t.p, i, from_value(items[i]));
  return t.release();
}

PyObject* from_value(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None: Py_RETURN_NONE;
    case Value::Kind::Ellipsis: Py_INCREF(Py_Ellipsis); return Py_Ellipsis;
    case Value::Kind::Bool: return PyBool_FromLong(v.to_bool());
    case Value::Kind::Int: return PyLong_FromLongLong(v.to_int());
    case Value::Kind::Double: return PyFloat_FromDouble(v.to_double());
    case Value::Kind::Str: return PyUnicode_FromString(v.to_str().c_str());
    case Value::Kind::Dtype: {
      PyObject* d = dtype_object(v.to_dtype());
      Py_INCREF(d);
      return d;
    }
    case Value::Kind::Device: return make_device(v.to_device());
    case Value::Kind::MemoryFormat: {
      PyObject* f = memory_format_object(v.to_memory_format());
      Py_INCREF(f);
      return f;
    }
    case Value::Kind::Tensor: return wrap(v.to_tensor());
    case Value::Kind::Node: return wrap_node(v.to_node());
    case Value::Kind::Foreign: {
      PyObject* o = opaque_object(v.to_foreign().handle);
      Py_INCREF(o);
      return o;
    }
    case Value::Kind::Tuple: return items_tuple(v.items());
    case Value::Kind::List: {
      Ref t(items_tuple(v.items()));
      return PySequence_List(t.p);
    }
    case Value::Kind::Slice: {
      const auto& it = v.items();
      Ref a(from_value(it[0])), b(from_value(it[1])), c(from_value(it[2]));
      return PySlice_New(a.p, b.p, c.p);
    }
    case Value::Kind::Dict: {
      Ref d(PyDict_New());
      const auto& it = v.items();
      for (size_t i = 0; i + 1 < it.size(); i += 2) {
        Ref k(from_value(it[i])), x(from_value(it[i + 1]));
        if (PyDict_SetItem(d.p, k.p, x.p) < 0) throw PythonErrorAlreadySet{};
      }
      return d.release();
    }
  }
  Py_RETURN_NONE;
}

std::vector<Value> to_args(PyObject* args) {
  if (!args || args == Py_None) return {};
  if (!PyTuple_Check(args) && !PyList_Check(args))
    IGNIS_FAIL_KIND(Type, "args must be a tuple, got ", Py_TYPE(args)->tp_name);
  return to_items(args);
}

Kwargs to_kwargs(PyObject* kwargs) {
  Kwargs out;
  if (!kwargs || kwargs == Py_None) return out;
  IGNIS_CHECK_TYPE(PyDict_Check(kwargs), "kwargs must be a dict, got ", Py_TYPE(kwargs)->tp_name);
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(kwargs, &pos, &k, &v)) {
    IGNIS_CHECK_TYPE(PyUnicode_Check(k), "kwargs keys must be strings");
    out.emplace_back(PyUnicode_AsUTF8(k), to_value(v));
  }
  return out;
}

PyObject* kwargs_dict(const Kwargs& kw) {
  Ref d(PyDict_New());
  for (const auto& [k, v] : kw) {
    Ref x(from_value(v));
    if (PyDict_SetItemString(d.p, k.c_str(), x.p) < 0) throw PythonErrorAlreadySet{};
  }
  return d.release();
}

Target to_target(PyObject* o, OpKind op) {
  if (PyUnicode_Check(o)) return Target(std::string(PyUnicode_AsUTF8(o)));
  if (PyObject_TypeCheck(o, OpOverloadType)) return Target(*reinterpret_cast<PyOpOverload*>(o)->op);
  IGNIS_CHECK_TYPE(op == OpKind::CallFunction, "the target of a ", op_kind_name(op),
                   " node must be a string, got ", Py_TYPE(o)->tp_name);
  IGNIS_CHECK_TYPE(PyCallable_Check(o), "the target of a call_function node must be callable, got ",
                   Py_TYPE(o)->tp_name);
  return Target(make_foreign(o, true));
}

PyObject* target_object(const Target& t) {
  switch (t.kind) {
    case Target::Kind::Name: return PyUnicode_FromString(t.name.c_str());
    case Target::Kind::Op: return make_op_overload(t.op);
    case Target::Kind::Callable: {
      if (!t.callable->handle) {
        // Built in C++ (graph::getitem_target): the function of that name.
        Ref mod(PyImport_ImportModule(t.callable->module.c_str()));
        return PyObject_GetAttrString(mod.p, t.callable->name.c_str());
      }
      PyObject* o = opaque_object(t.callable->handle);
      Py_INCREF(o);
      return o;
    }
  }
  Py_RETURN_NONE;
}

// The type annotation text for a Python type (ignis.Tensor, int, mod.Cls).
std::string type_repr_of(PyObject* t) {
  if (t == Py_None) return "";
  if (PyType_Check(t) &&
      (t == reinterpret_cast<PyObject*>(TensorClass) ||
       t == reinterpret_cast<PyObject*>(TensorBaseType)))
    return "ignis.Tensor";
  std::string mod = str_attr(t, "__module__");
  std::string qual = str_attr(t, "__qualname__");
  if (qual.empty()) return py_repr(t);
  return mod == "builtins" || mod.empty() ? qual : mod + "." + qual;
}

void set_type(Node* n, PyObject* t) {
  if (!t || t == Py_None) {
    n->type_repr.clear();
    n->type_object.reset();
    return;
  }
  n->type_repr = type_repr_of(t);
  n->type_object = std::make_shared<PyOpaque>(t);
}

// --- the foreign hook: runs Python parts of a graph ------------------------------------------
PyObject* resolve_path(PyObject* root, const std::string& path) {
  Py_INCREF(root);
  Ref cur(root);
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    size_t len = dot == std::string::npos ? std::string::npos : dot - start;
    std::string part = path.substr(start, len);
    PyObject* next = PyObject_GetAttrString(cur.p, part.c_str());
    if (!next) throw PythonErrorAlreadySet{};
    Py_DECREF(cur.p);
    cur.p = next;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur.release();
}

struct GilGuard {
  PyGILState_STATE s = PyGILState_Ensure();
  ~GilGuard() { PyGILState_Release(s); }
};

Value foreign_call(const Node& n, const std::vector<Value>& args, const Kwargs& kwargs,
                   const Value& root) {
  GilGuard gil;  // the C++ interpreter may run outside a Python thread
  PyObject* root_obj =
      root.kind() == Value::Kind::Foreign ? opaque_object(root.foreign_ptr()->handle) : Py_None;
  if (n.op() == OpKind::GetAttr) {
    Ref r(resolve_path(root_obj, n.target().name));
    return to_value(r.p);
  }
  Ref pargs(items_tuple(args));
  Ref pkw(kwargs_dict(kwargs));
  switch (n.op()) {
    case OpKind::CallFunction: {
      Ref fn(target_object(n.target()));
      Ref r(PyObject_Call(fn.p, pargs.p, pkw.p));
      return to_value(r.p);
    }
    case OpKind::CallMethod: {
      IGNIS_CHECK(!args.empty(), "call_method node '", n.name(), "' has no self argument");
      Ref self(PyTuple_GetItem(pargs.p, 0));
      Py_INCREF(self.p);
      Ref m(PyObject_GetAttrString(self.p, n.target().name.c_str()));
      Ref rest(PyTuple_GetSlice(pargs.p, 1, PyTuple_GET_SIZE(pargs.p)));
      Ref r(PyObject_Call(m.p, rest.p, pkw.p));
      return to_value(r.p);
    }
    case OpKind::CallModule: {
      Ref mod(resolve_path(root_obj, n.target().name));
      Ref r(PyObject_Call(mod.p, pargs.p, pkw.p));
      return to_value(r.p);
    }
    default: IGNIS_FAIL("foreign_call: unexpected node '", n.name(), "'");
  }
}

// --- NodeBase ----------------------------------------------------------------------------
void node_dealloc(PyObject* self) {
  auto* pn = reinterpret_cast<PyNode*>(self);
  if (pn->node && pn->node->pyobj == self) pn->node->pyobj = nullptr;
  pn->node.~NodePtr();
  Py_XDECREF(pn->graph);
  Py_TYPE(self)->tp_free(self);
}

Node* live(PyObject* self) { return node_of(self); }

PyObject* node_get_op(PyObject* self, void*) {
  return PyUnicode_FromString(op_kind_name(live(self)->op()));
}
PyObject* node_get_name(PyObject* self, void*) {
  return PyUnicode_FromString(live(self)->name().c_str());
}
int node_set_name(PyObject* self, PyObject* v, void*) {
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(v && PyUnicode_Check(v), "Node.name must be a str");
  live(self)->rename(PyUnicode_AsUTF8(v));
  return 0;
  IGNIS_PY_END(-1)
}
PyObject* node_get_target(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  return target_object(live(self)->target());
  IGNIS_PY_END(nullptr)
}
int node_set_target(PyObject* self, PyObject* v, void*) {
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(v, "cannot delete Node.target");
  live(self)->set_target(to_target(v, live(self)->op()));
  return 0;
  IGNIS_PY_END(-1)
}
PyObject* node_get_args(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  return items_tuple(live(self)->args());
  IGNIS_PY_END(nullptr)
}
int node_set_args(PyObject* self, PyObject* v, void*) {
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(v, "cannot delete Node.args");
  live(self)->set_args(to_args(v));
  return 0;
  IGNIS_PY_END(-1)
}
PyObject* node_get_kwargs(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  return kwargs_dict(live(self)->kwargs());
  IGNIS_PY_END(nullptr)
}
int node_set_kwargs(PyObject* self, PyObject* v, void*) {
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(v, "cannot delete Node.kwargs");
  live(self)->set_kwargs(to_kwargs(v));
  return 0;
  IGNIS_PY_END(-1)
}
PyObject* node_list(const std::vector<Node*>& nodes, bool as_dict) {
  Ref out(as_dict ? PyDict_New() : PyList_New(0));
  for (Node* n : nodes) {
    Ref w(wrap_node(n));
    int rc = as_dict ? PyDict_SetItem(out.p, w.p, Py_None) : PyList_Append(out.p, w.p);
    if (rc < 0) throw PythonErrorAlreadySet{};
  }
  return out.release();
}
PyObject* node_get_users(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  return node_list(live(self)->users(), true);
  IGNIS_PY_END(nullptr)
}
PyObject* node_get_inputs(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  return node_list(live(self)->input_nodes(), false);
  IGNIS_PY_END(nullptr)
}
PyObject* node_get_graph(PyObject* self, void*) {
  PyObject* g = reinterpret_cast<PyNode*>(self)->graph;
  Py_INCREF(g);
  return g;
}
PyObject* neighbour(Node* n) {
  if (!n || n->op() == OpKind::Root) Py_RETURN_NONE;
  return wrap_node(n);
}
PyObject* node_get_next(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  return neighbour(live(self)->next());
  IGNIS_PY_END(nullptr)
}
PyObject* node_get_prev(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  return neighbour(live(self)->prev());
  IGNIS_PY_END(nullptr)
}
PyObject* node_get_type(PyObject* self, void*) {
  Node* n = live(self);
  PyObject* t = n->type_object ? opaque_object(n->type_object) : Py_None;
  Py_INCREF(t);
  return t;
}
int node_set_type(PyObject* self, PyObject* v, void*) {
  IGNIS_PY_BEGIN
  set_type(live(self), v);
  return 0;
  IGNIS_PY_END(-1)
}

// meta primitives (ignis.fx.Node.meta composes them into a mapping)
PyObject* node_get_tensor_meta(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  const NodeMeta& m = live(self)->meta();
  if (m.tensors.empty()) Py_RETURN_NONE;
  Ref l(PyList_New(0));
  for (const TensorMeta& t : m.tensors) {
    DimVector sz(std::vector<int64_t>(t.sizes.begin(), t.sizes.end()));
    Ref shape(make_size(sz));
    Ref stride(PyTuple_New(static_cast<Py_ssize_t>(t.strides.size())));
    for (size_t i = 0; i < t.strides.size(); ++i)
      PyTuple_SET_ITEM(stride.p, i, PyLong_FromLongLong(t.strides[i]));
    Ref dev(make_device(t.device));
    Ref e(Py_BuildValue("(OOOO)", shape.p, dtype_object(t.dtype), stride.p, dev.p));
    if (PyList_Append(l.p, e.p) < 0) return nullptr;
  }
  return Py_BuildValue("(OO)", l.p, m.tuple_output ? Py_True : Py_False);
  IGNIS_PY_END(nullptr)
}

TensorMeta tensor_meta_from(PyObject* o) {
  if (is_tensor(o)) return TensorMeta::of(unwrap(o));
  TensorMeta m;
  Ref shape(PyObject_GetAttrString(o, "shape"));
  Ref dtype(PyObject_GetAttrString(o, "dtype"));
  for (const Value& v : to_items(shape.p)) m.sizes.push_back(v.to_int());
  IGNIS_CHECK_TYPE(to_dtype(dtype.p, &m.dtype), "tensor_meta: bad dtype");
  PyObject* stride = PyObject_GetAttrString(o, "stride");
  if (stride && PyCallable_Check(stride)) {
    PyObject* s = PyObject_CallNoArgs(stride);
    Py_DECREF(stride);
    stride = s;
  }
  if (!stride) throw PythonErrorAlreadySet{};
  Ref st(stride);
  for (const Value& v : to_items(st.p)) m.strides.push_back(v.to_int());
  PyObject* dev = PyObject_GetAttrString(o, "device");
  if (dev) {
    Ref d(dev);
    if (!to_device(d.p, &m.device)) throw PythonErrorAlreadySet{};
  } else {
    PyErr_Clear();
  }
  return m;
}

int node_set_tensor_meta(PyObject* self, PyObject* v, void*) {
  IGNIS_PY_BEGIN
  NodeMeta& m = live(self)->meta();
  m.tensors.clear();
  m.tuple_output = false;
  if (!v || v == Py_None) return 0;
  if (PyTuple_CheckExact(v) || PyList_Check(v)) {
    m.tuple_output = true;
    Ref fast(PySequence_Fast(v, "tensor_meta"));
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast.p); ++i)
      m.tensors.push_back(tensor_meta_from(PySequence_Fast_GET_ITEM(fast.p, i)));
  } else {
    m.tensors.push_back(tensor_meta_from(v));
  }
  return 0;
  IGNIS_PY_END(-1)
}

PyObject* node_get_source_loc(PyObject* self, void*) {
  const SourceLoc& l = live(self)->meta().loc;
  if (l.empty()) Py_RETURN_NONE;
  return PyUnicode_FromString(l.str().c_str());
}
int node_set_source_loc(PyObject* self, PyObject* v, void*) {
  IGNIS_PY_BEGIN
  SourceLoc& l = live(self)->meta().loc;
  l = SourceLoc();
  if (!v || v == Py_None) return 0;
  IGNIS_CHECK_TYPE(PyUnicode_Check(v), "source_loc must be a 'file:line' string");
  std::string s = PyUnicode_AsUTF8(v);
  size_t colon = s.rfind(':');
  IGNIS_CHECK_VALUE(colon != std::string::npos && colon + 1 < s.size(),
                    "source_loc must look like 'file:line', got '", s, "'");
  l.file = s.substr(0, colon);
  l.line = std::stoll(s.substr(colon + 1));
  return 0;
  IGNIS_PY_END(-1)
}

PyObject* node_get_meta_extra(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  Ref d(PyDict_New());
  for (const auto& [k, v] : live(self)->meta().extra) {
    Ref s(PyUnicode_FromString(v.c_str()));
    if (PyDict_SetItemString(d.p, k.c_str(), s.p) < 0) return nullptr;
  }
  return d.release();
  IGNIS_PY_END(nullptr)
}

PyObject* node_set_meta_extra(PyObject* self, PyObject* args) {
  PyObject *k, *v;
  if (!PyArg_ParseTuple(args, "UO", &k, &v)) return nullptr;
  IGNIS_PY_BEGIN
  NodeMeta& m = live(self)->meta();
  if (v == Py_None) return PyBool_FromLong(m.erase_extra(PyUnicode_AsUTF8(k)));
  IGNIS_CHECK_TYPE(PyUnicode_Check(v), "meta extra values must be strings");
  m.set_extra(PyUnicode_AsUTF8(k), PyUnicode_AsUTF8(v));
  Py_RETURN_TRUE;
  IGNIS_PY_END(nullptr)
}

// n._copy_meta_from(other): other's C++ metadata (tensor metadata with its
// symbolic sizes, a Sym value, the source line, the string entries), as
// Graph::copy_from copies it; the Python entries are the caller's.
PyObject* node_copy_meta_from(PyObject* self, PyObject* other) {
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(is_node(other), "_copy_meta_from expects a graph node, got ",
                   Py_TYPE(other)->tp_name);
  Node* from = node_of(other);
  live(self)->meta() = from->meta();
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* node_get_pymeta(PyObject* self, void*) {
  Node* n = live(self);
  if (!n->pymeta) {
    PyObject* d = PyDict_New();
    if (!d) return nullptr;
    n->pymeta = std::make_shared<PyOpaque>(d);
    Py_DECREF(d);
  }
  PyObject* d = static_cast<PyOpaque*>(n->pymeta.get())->obj;
  Py_INCREF(d);
  return d;
}

PyObject* node_repr(PyObject* self) { return node_get_name(self, nullptr); }

PyObject* node_prepend(PyObject* self, PyObject* x) {
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(is_node(x), "prepend expects a Node");
  live(self)->prepend(node_of(x));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}
PyObject* node_append(PyObject* self, PyObject* x) {
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(is_node(x), "append expects a Node");
  live(self)->append(node_of(x));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}
PyObject* node_replace_all_uses_with(PyObject* self, PyObject* x) {
  IGNIS_PY_BEGIN
  return node_list(live(self)->replace_all_uses_with(to_value(x)), false);
  IGNIS_PY_END(nullptr)
}
PyObject* node_replace_input_with(PyObject* self, PyObject* args) {
  PyObject *old, *with;
  if (!PyArg_ParseTuple(args, "OO", &old, &with)) return nullptr;
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(is_node(old), "replace_input_with expects a Node to replace");
  live(self)->replace_input_with(node_of(old), to_value(with));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}
PyObject* node_update_arg(PyObject* self, PyObject* args) {
  Py_ssize_t i;
  PyObject* v;
  if (!PyArg_ParseTuple(args, "nO", &i, &v)) return nullptr;
  IGNIS_PY_BEGIN
  live(self)->set_arg(static_cast<size_t>(i), to_value(v));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}
PyObject* node_format(PyObject* self, PyObject*) {
  IGNIS_PY_BEGIN
  return PyUnicode_FromString(format_node(*live(self)).c_str());
  IGNIS_PY_END(nullptr)
}
PyObject* node_is_impure(PyObject* self, PyObject*) {
  return PyBool_FromLong(has_side_effects(*live(self)));
}

PyGetSetDef node_getset[] = {
    {"op", node_get_op, nullptr, "The opcode: placeholder, call_function, ...", nullptr},
    {"name", node_get_name, node_set_name, "Unique name in the graph.", nullptr},
    {"target", node_get_target, node_set_target, nullptr, nullptr},
    {"args", node_get_args, node_set_args, nullptr, nullptr},
    {"kwargs", node_get_kwargs, node_set_kwargs, nullptr, nullptr},
    {"users", node_get_users, nullptr, "Dict of the nodes using this one.", nullptr},
    {"all_input_nodes", node_get_inputs, nullptr, nullptr, nullptr},
    {"graph", node_get_graph, nullptr, nullptr, nullptr},
    {"next", node_get_next, nullptr, nullptr, nullptr},
    {"prev", node_get_prev, nullptr, nullptr, nullptr},
    {"type", node_get_type, node_set_type, "Type annotation printed in code.", nullptr},
    {"_tensor_meta", node_get_tensor_meta, node_set_tensor_meta, nullptr, nullptr},
    {"_source_loc", node_get_source_loc, node_set_source_loc, nullptr, nullptr},
    {"_meta_extra", node_get_meta_extra, nullptr, nullptr, nullptr},
    {"_pymeta", node_get_pymeta, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef node_methods[] = {
    {"prepend", node_prepend, METH_O, "Moves x to just before this node."},
    {"append", node_append, METH_O, "Moves x to just after this node."},
    {"replace_all_uses_with", node_replace_all_uses_with, METH_O, nullptr},
    {"replace_input_with", node_replace_input_with, METH_VARARGS, nullptr},
    {"update_arg", node_update_arg, METH_VARARGS, nullptr},
    {"is_impure", node_is_impure, METH_NOARGS, nullptr},
    {"format_node", node_format, METH_NOARGS, "This node's line of str(graph)."},
    {"_set_meta_extra", node_set_meta_extra, METH_VARARGS, nullptr},
    {"_copy_meta_from", node_copy_meta_from, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

// --- GraphBase ----------------------------------------------------------------------------
PyObject* graph_new(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* o = type->tp_alloc(type, 0);
  if (!o) return nullptr;
  auto* pg = reinterpret_cast<PyGraph*>(o);
  pg->g = new Graph();
  pg->g->pyobj = o;
  return o;
}

void graph_dealloc(PyObject* self) {
  auto* pg = reinterpret_cast<PyGraph*>(self);
  if (pg->g) {
    pg->g->pyobj = nullptr;
    delete pg->g;
  }
  Py_TYPE(self)->tp_free(self);
}

PyObject* graph_create_node(PyObject* self, PyObject* args, PyObject* kw) {
  static const char* kwlist[] = {"op", "target", "args", "kwargs", "name", "type_expr", nullptr};
  const char* op;
  PyObject *target, *a = Py_None, *k = Py_None, *name = Py_None, *type_expr = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|OOOO:create_node", const_cast<char**>(kwlist), &op,
                                   &target, &a, &k, &name, &type_expr))
    return nullptr;
  IGNIS_PY_BEGIN
  OpKind kind;
  IGNIS_CHECK_VALUE(parse_op_kind(op, &kind), "create_node: unknown opcode '", op, "'");
  IGNIS_CHECK_TYPE(name == Py_None || PyUnicode_Check(name), "create_node: name must be a str");
  std::string nm = name == Py_None ? "" : PyUnicode_AsUTF8(name);
  Node* n = graph_of(self).create_node(kind, to_target(target, kind), to_args(a), to_kwargs(k), nm);
  set_type(n, type_expr);
  return wrap_node(n);
  IGNIS_PY_END(nullptr)
}

PyObject* graph_erase_node(PyObject* self, PyObject* x) {
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(is_node(x), "erase_node expects a Node");
  graph_of(self).erase_node(node_of(x));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* graph_set_insert_point(PyObject* self, PyObject* x) {
  IGNIS_PY_BEGIN
  Graph& g = graph_of(self);
  PyObject* prev = g.insert_point() ? wrap_node(g.insert_point()) : (Py_INCREF(Py_None), Py_None);
  if (x == Py_None) {
    g.set_insert_point(nullptr);
  } else {
    IGNIS_CHECK_TYPE(is_node(x) && node_of(x)->graph() == &g,
                     "the insert point must be a node of this graph");
    g.set_insert_point(node_of(x));
  }
  return prev;
  IGNIS_PY_END(nullptr)
}

PyObject* graph_get_nodes(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  Ref l(node_list(graph_of(self).node_list(), false));
  return PyList_AsTuple(l.p);
  IGNIS_PY_END(nullptr)
}

PyObject* graph_tabular(PyObject* self, PyObject*) {
  IGNIS_PY_BEGIN
  return PyUnicode_FromString(tabular(graph_of(self)).c_str());
  IGNIS_PY_END(nullptr)
}

PyObject* graph_str(PyObject* self) {
  IGNIS_PY_BEGIN
  return PyUnicode_FromString(graph::graph_str(graph_of(self)).c_str());
  IGNIS_PY_END(nullptr)
}

PyObject* graph_python_code(PyObject* self, PyObject* args, PyObject* kw) {
  static const char* kwlist[] = {"root_module", "module_alias", "verbose", nullptr};
  const char* root = "self";
  const char* alias = "ignis";
  int verbose = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|ssp:_python_code", const_cast<char**>(kwlist), &root,
                                   &alias, &verbose))
    return nullptr;
  IGNIS_PY_BEGIN
  CodeOptions o;
  o.root_module = root;
  o.module_alias = alias;
  o.verbose = verbose != 0;
  PythonCode pc = python_code(graph_of(self), o);
  Ref globals(PyDict_New());
  for (const CodeGlobal& g : pc.globals) {
    Ref t(target_object(g.target));
    if (PyDict_SetItemString(globals.p, g.name.c_str(), t.p) < 0) return nullptr;
  }
  return Py_BuildValue("(sO)", pc.src.c_str(), globals.p);
  IGNIS_PY_END(nullptr)
}

PyObject* graph_lint(PyObject* self, PyObject*) {
  IGNIS_PY_BEGIN
  lint(graph_of(self));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* graph_dce(PyObject* self, PyObject*) {
  IGNIS_PY_BEGIN
  return PyBool_FromLong(eliminate_dead_code(graph_of(self)));
  IGNIS_PY_END(nullptr)
}

PyObject* graph_cse(PyObject* self, PyObject*) {
  IGNIS_PY_BEGIN
  return PyLong_FromSize_t(eliminate_common_subexpressions(graph_of(self)));
  IGNIS_PY_END(nullptr)
}

PyObject* graph_hash(PyObject* self, PyObject*) {
  IGNIS_PY_BEGIN
  return PyUnicode_FromString(structural_hash(graph_of(self)).c_str());
  IGNIS_PY_END(nullptr)
}

// _interpret(inputs, root=None, record_meta=False): the C++ interpreter;
// record_meta also stores each node's tensor metadata (ShapeProp).
PyObject* graph_interpret(PyObject* self, PyObject* args) {
  PyObject *inputs, *root = Py_None;
  int record = 0;
  if (!PyArg_ParseTuple(args, "O|Op:_interpret", &inputs, &root, &record)) return nullptr;
  IGNIS_PY_BEGIN
  std::vector<Value> in = to_args(inputs);
  Value r = root == Py_None ? Value() : Value(make_foreign(root, false));
  if (record) return from_value(record_tensor_meta(graph_of(self), in, r));
  return from_value(interpret(graph_of(self), in, r));
  IGNIS_PY_END(nullptr)
}

PyObject* graph_copy_from(PyObject* self, PyObject* args) {
  PyObject *other, *inputs = Py_None;
  if (!PyArg_ParseTuple(args, "O|O:_copy_from", &other, &inputs)) return nullptr;
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(is_graph(other), "_copy_from expects a Graph");
  IGNIS_CHECK(other != self, "_copy_from: cannot copy a graph into itself");
  if (inputs == Py_None) return from_value(graph_of(self).copy_from(graph_of(other)));
  std::vector<Value> in = to_args(inputs);
  return from_value(graph_of(self).copy_from(graph_of(other), &in));
  IGNIS_PY_END(nullptr)
}

PyGetSetDef graph_getset[] = {
    {"nodes", graph_get_nodes, nullptr, "The nodes in execution order (a snapshot).", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef graph_methods[] = {
    {"create_node", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(graph_create_node)),
     METH_VARARGS | METH_KEYWORDS, "create_node(op, target, args=None, kwargs=None, name=None, "
     "type_expr=None)"},
    {"erase_node", graph_erase_node, METH_O, "Removes a node that has no users."},
    {"_set_insert_point", graph_set_insert_point, METH_O, nullptr},
    {"_tabular", graph_tabular, METH_NOARGS, nullptr},
    {"_python_code",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(graph_python_code)),
     METH_VARARGS | METH_KEYWORDS, nullptr},
    {"lint", graph_lint, METH_NOARGS, "Checks the graph's structure; raises naming a bad node."},
    {"eliminate_dead_code", graph_dce, METH_NOARGS, "Dead-code elimination; True if changed."},
    {"eliminate_common_subexpressions", graph_cse, METH_NOARGS,
     "Common-subexpression elimination; returns the number of nodes removed."},
    {"structural_hash", graph_hash, METH_NOARGS, "Stable 128-bit hash of the graph (hex)."},
    {"_interpret", graph_interpret, METH_VARARGS, nullptr},
    {"_copy_from", graph_copy_from, METH_VARARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

// --- OpOverload ----------------------------------------------------------------------------
PyObject* overload_call(PyObject* self, PyObject* args, PyObject* kw) {
  IGNIS_PY_BEGIN
  const OpHandle* op = reinterpret_cast<PyOpOverload*>(self)->op;
  return from_value(call_op(*op, to_args(args), to_kwargs(kw)));
  IGNIS_PY_END(nullptr)
}
PyObject* overload_repr(PyObject* self) {
  const OpHandle* op = reinterpret_cast<PyOpOverload*>(self)->op;
  return PyUnicode_FromString(("ignis.ops." + op->name()).c_str());
}
PyObject* overload_name(PyObject* self, void*) {
  return PyUnicode_FromString(reinterpret_cast<PyOpOverload*>(self)->op->name().c_str());
}
PyObject* overload_module(PyObject*, void*) { return PyUnicode_FromString("ignis.ops"); }
PyObject* overload_schema(PyObject* self, void*) {
  return PyUnicode_FromString(reinterpret_cast<PyOpOverload*>(self)->op->schema().str().c_str());
}
PyObject* overload_richcompare(PyObject* a, PyObject* b, int op) {
  if (!PyObject_TypeCheck(b, OpOverloadType) || (op != Py_EQ && op != Py_NE))
    Py_RETURN_NOTIMPLEMENTED;
  bool eq = reinterpret_cast<PyOpOverload*>(a)->op == reinterpret_cast<PyOpOverload*>(b)->op;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}
Py_hash_t overload_hash(PyObject* self) {
  auto addr = reinterpret_cast<uintptr_t>(reinterpret_cast<PyOpOverload*>(self)->op);
  return static_cast<Py_hash_t>(addr >> 4);
}

PyGetSetDef overload_getset[] = {
    {"__name__", overload_name, nullptr, nullptr, nullptr},
    {"__module__", overload_module, nullptr, nullptr, nullptr},
    {"schema", overload_schema, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// --- module functions ------------------------------------------------------------------------
PyObject* f_set_node_class(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls) ||
      !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), NodeBaseType)) {
    PyErr_SetString(PyExc_TypeError, "_set_node_class expects a subclass of NodeBase");
    return nullptr;
  }
  Py_INCREF(cls);
  NodeClass = reinterpret_cast<PyTypeObject*>(cls);
  Py_RETURN_NONE;
}

PyObject* f_add_reserved_names(PyObject*, PyObject* names) {
  IGNIS_PY_BEGIN
  for (const Value& v : to_items(names)) Graph::reserved_names().insert(v.to_str());
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_op_overload(PyObject*, PyObject* name) {
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(PyUnicode_Check(name), "_op_overload expects a name such as 'add.Tensor'");
  const OpHandle* h = Dispatcher::get().find(PyUnicode_AsUTF8(name));
  IGNIS_CHECK_VALUE(h, "no ignis op overload named '", PyUnicode_AsUTF8(name), "'");
  return make_op_overload(h);
  IGNIS_PY_END(nullptr)
}

PyMethodDef functions[] = {
    {"_set_node_class", f_set_node_class, METH_O, nullptr},
    {"_graph_add_reserved_names", f_add_reserved_names, METH_O, nullptr},
    {"_op_overload", f_op_overload, METH_O, "The dispatcher op of one overload ('add.Tensor')."},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject* make_type(PyType_Spec* spec, PyObject* module, const char* name) {
  PyObject* t = PyType_FromSpec(spec);
  if (!t) return nullptr;
  Py_INCREF(t);
  if (PyModule_AddObject(module, name, t) < 0) {
    Py_DECREF(t);
    return nullptr;
  }
  return reinterpret_cast<PyTypeObject*>(t);
}

}  // namespace

PyObject* op_overload_object(const OpHandle* op) {
  IGNIS_PY_BEGIN
  return make_op_overload(op);
  IGNIS_PY_END(nullptr)
}

graph::Graph* graph_ptr(PyObject* o) {
  return GraphBaseType && PyObject_TypeCheck(o, GraphBaseType) ? &graph_of(o) : nullptr;
}

PyObject* adopt_graph(PyObject* graph_cls, std::unique_ptr<graph::Graph> g) {
  PyObject* o = PyObject_CallNoArgs(graph_cls);
  if (!o) throw PythonErrorAlreadySet{};
  if (!graph_ptr(o)) {
    Py_DECREF(o);
    IGNIS_FAIL_KIND(Type, "adopt_graph: ", Py_TYPE(o)->tp_name, " is not a graph class");
  }
  auto* pg = reinterpret_cast<PyGraph*>(o);
  pg->g->pyobj = nullptr;
  delete pg->g;
  pg->g = g.release();
  pg->g->pyobj = o;
  return o;
}

graph::Value py_to_value(PyObject* o) { return to_value(o); }
PyObject* py_from_value(const graph::Value& v) { return from_value(v); }
graph::Target py_to_target(PyObject* o, graph::OpKind op) { return to_target(o, op); }
void py_set_node_type(graph::Node* n, PyObject* type) { set_type(n, type); }

bool init_graph(PyObject* module) {
  static PyType_Slot node_slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(node_dealloc)},
      {Py_tp_repr, reinterpret_cast<void*>(node_repr)},
      {Py_tp_getset, node_getset},
      {Py_tp_methods, node_methods},
      {0, nullptr},
  };
  static PyType_Spec node_spec = {"ignis._C.NodeBase", sizeof(PyNode), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, node_slots};
  static PyType_Slot graph_slots[] = {
      {Py_tp_new, reinterpret_cast<void*>(graph_new)},
      {Py_tp_dealloc, reinterpret_cast<void*>(graph_dealloc)},
      {Py_tp_str, reinterpret_cast<void*>(graph_str)},
      {Py_tp_getset, graph_getset},
      {Py_tp_methods, graph_methods},
      {0, nullptr},
  };
  static PyType_Spec graph_spec = {"ignis._C.GraphBase", sizeof(PyGraph), 0,
                                   Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, graph_slots};
  static PyType_Slot overload_slots[] = {
      {Py_tp_call, reinterpret_cast<void*>(overload_call)},
      {Py_tp_repr, reinterpret_cast<void*>(overload_repr)},
      {Py_tp_getset, overload_getset},
      {Py_tp_richcompare, reinterpret_cast<void*>(overload_richcompare)},
      {Py_tp_hash, reinterpret_cast<void*>(overload_hash)},
      {0, nullptr},
  };
  static PyType_Spec overload_spec = {"ignis._C.OpOverload", sizeof(PyOpOverload), 0,
                                      Py_TPFLAGS_DEFAULT, overload_slots};
  NodeBaseType = make_type(&node_spec, module, "NodeBase");
  GraphBaseType = NodeBaseType ? make_type(&graph_spec, module, "GraphBase") : nullptr;
  OpOverloadType = GraphBaseType ? make_type(&overload_spec, module, "OpOverload") : nullptr;
  if (!OpOverloadType) return false;
  IgnisOpType = PyObject_GetAttrString(module, "Op");  // registered by init_op_type
  if (!IgnisOpType) return false;
  if (PyModule_AddFunctions(module, functions) < 0) return false;
  foreign_hook() = foreign_call;
  return true;
}

}  // namespace ignis::py

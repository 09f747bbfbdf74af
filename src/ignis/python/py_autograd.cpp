// Python bindings of autograd: Tensor.requires_grad / grad / grad_fn /
// is_leaf / retain_grad / detach, the grad_fn node objects, grad mode, and
// the engine entry points used by python/ignis/autograd.
#include <memory>

#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/engine.h"
#include "ignis/autograd/functions.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

namespace {

using autograd::Node;

// --- grad_fn objects -----------------------------------------------------------
// One Python class per node name (MulBackward0, ...), all subclasses of
// _C._FunctionBase, so that type(t.grad_fn).__name__ reads as in PyTorch.
struct PyNode {
  PyObject_HEAD
  std::shared_ptr<Node> node;
};
PyTypeObject* NodeBaseType = nullptr;
PyObject* node_classes = nullptr;  // dict name -> class

void node_dealloc(PyObject* self) {
  reinterpret_cast<PyNode*>(self)->node.~shared_ptr<Node>();
  PyTypeObject* tp = Py_TYPE(self);
  tp->tp_free(self);
  Py_DECREF(tp);
}

PyObject* wrap_node(const std::shared_ptr<Node>& n) {
  if (!n) Py_RETURN_NONE;
  std::string name = n->name();
  PyObject* cls = PyDict_GetItemString(node_classes, name.c_str());  // borrowed
  if (!cls) {
    PyObject* dict = PyDict_New();
    if (!dict) return nullptr;
    PyObject* mod = PyUnicode_FromString("ignis.autograd");
    PyDict_SetItemString(dict, "__module__", mod);
    Py_XDECREF(mod);
    cls = PyObject_CallFunction(reinterpret_cast<PyObject*>(&PyType_Type), "s(O)O",
                                name.c_str(), reinterpret_cast<PyObject*>(NodeBaseType), dict);
    Py_DECREF(dict);
    if (!cls) return nullptr;
    PyDict_SetItemString(node_classes, name.c_str(), cls);
    Py_DECREF(cls);
  }
  auto* tp = reinterpret_cast<PyTypeObject*>(cls);
  PyObject* o = tp->tp_alloc(tp, 0);
  if (!o) return nullptr;
  new (&reinterpret_cast<PyNode*>(o)->node) std::shared_ptr<Node>(n);
  return o;
}

PyObject* node_name(PyObject* self, PyObject*) {
  return PyUnicode_FromString(reinterpret_cast<PyNode*>(self)->node->name().c_str());
}

PyObject* node_next_functions(PyObject* self, void*) {
  const auto& edges = reinterpret_cast<PyNode*>(self)->node->next_edges();
  PyObject* tup = PyTuple_New(static_cast<Py_ssize_t>(edges.size()));
  if (!tup) return nullptr;
  for (size_t i = 0; i < edges.size(); ++i) {
    PyObject* fn = wrap_node(edges[i].fn);
    if (!fn) {
      Py_DECREF(tup);
      return nullptr;
    }
    PyObject* pair = Py_BuildValue("(NI)", fn, edges[i].input_nr);
    if (!pair) {
      Py_DECREF(tup);
      return nullptr;
    }
    PyTuple_SET_ITEM(tup, i, pair);
  }
  return tup;
}

PyObject* node_variable(PyObject* self, void*) {
  auto* acc = dynamic_cast<autograd::AccumulateGrad*>(reinterpret_cast<PyNode*>(self)->node.get());
  if (!acc) {
    PyErr_SetString(PyExc_AttributeError, "only AccumulateGrad nodes have a variable");
    return nullptr;
  }
  return wrap(acc->variable());
}

PyObject* node_richcompare(PyObject* a, PyObject* b, int op) {
  if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(b, NodeBaseType))
    Py_RETURN_NOTIMPLEMENTED;
  bool same = reinterpret_cast<PyNode*>(a)->node == reinterpret_cast<PyNode*>(b)->node;
  return PyBool_FromLong(op == Py_EQ ? same : !same);
}

Py_hash_t node_hash(PyObject* self) {
  auto addr = reinterpret_cast<uintptr_t>(reinterpret_cast<PyNode*>(self)->node.get());
  return static_cast<Py_hash_t>(addr >> 4);
}

PyObject* node_repr(PyObject* self) {
  return PyUnicode_FromFormat("<%s object at %p>", Py_TYPE(self)->tp_name, self);
}

PyMethodDef node_methods[] = {
    {"name", node_name, METH_NOARGS, "The node's name, e.g. 'MulBackward0'."},
    {nullptr, nullptr, 0, nullptr}};
PyGetSetDef node_getset[] = {
    {"next_functions", node_next_functions, nullptr,
     "(node, input_nr) for each input of the forward op; node None when no gradient flows.",
     nullptr},
    {"variable", node_variable, nullptr, "The leaf of an AccumulateGrad node.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// --- Tensor attributes -----------------------------------------------------------
const Tensor& self_tensor(PyObject* self) { return unwrap(self); }

PyObject* get_requires_grad(PyObject* self, void*) {
  return PyBool_FromLong(autograd::requires_grad(self_tensor(self)));
}
int set_requires_grad(PyObject* self, PyObject* v, void*) {
  IGNIS_PY_BEGIN
  if (!v || !PyBool_Check(v)) {
    PyErr_SetString(PyExc_TypeError, "requires_grad must be a bool");
    return -1;
  }
  autograd::set_requires_grad(self_tensor(self), v == Py_True);
  return 0;
  IGNIS_PY_END(-1)
}
PyObject* get_grad(PyObject* self, void*) {
  autograd::AutogradMeta* m = autograd::get_meta(self_tensor(self));
  if (!m) Py_RETURN_NONE;
  return wrap(m->grad_);
}
int set_grad(PyObject* self, PyObject* v, void*) {
  IGNIS_PY_BEGIN
  const Tensor& t = self_tensor(self);
  if (!v || v == Py_None) {
    if (auto* m = autograd::get_meta(t)) m->grad_ = Tensor();
    return 0;
  }
  if (!is_tensor(v)) {
    PyErr_SetString(PyExc_TypeError, "assigned grad expected to be a Tensor or None");
    return -1;
  }
  const Tensor& g = unwrap(v);
  IGNIS_CHECK(g.dtype() == t.dtype(), "assigned grad has data of a different type");
  IGNIS_CHECK(g.sizes() == t.sizes(), "assigned grad has data of a different size");
  autograd::materialize_meta(t).grad_ = g;
  return 0;
  IGNIS_PY_END(-1)
}
PyObject* get_grad_fn(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  autograd::AutogradMeta* m = autograd::get_meta(self_tensor(self));
  // Refreshes a stale view (raises for a no-grad view whose base was written).
  if (m && m->is_view_) autograd::gradient_edge(self_tensor(self));
  if (!m || !m->grad_fn_) Py_RETURN_NONE;
  return wrap_node(m->grad_fn_);
  IGNIS_PY_END(nullptr)
}
PyObject* get_is_leaf(PyObject* self, void*) {
  return PyBool_FromLong(autograd::is_leaf(self_tensor(self)));
}
PyObject* get_retains_grad(PyObject* self, void*) {
  autograd::AutogradMeta* m = autograd::get_meta(self_tensor(self));
  return PyBool_FromLong(m && m->retains_grad_);
}
PyObject* get_output_nr(PyObject* self, void*) {
  autograd::AutogradMeta* m = autograd::get_meta(self_tensor(self));
  return PyLong_FromLong(m ? m->output_nr_ : 0);
}
PyObject* get_is_view(PyObject* self, void*) {
  autograd::AutogradMeta* m = autograd::get_meta(self_tensor(self));
  return PyBool_FromLong(m && m->is_view_);
}

PyObject* m_requires_grad_(PyObject* self, PyObject* args, PyObject* kw) {
  static const char* kwlist[] = {"requires_grad", nullptr};
  int on = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", const_cast<char**>(kwlist), &on)) return nullptr;
  IGNIS_PY_BEGIN
  autograd::set_requires_grad(self_tensor(self), on != 0);
  Py_INCREF(self);
  return self;
  IGNIS_PY_END(nullptr)
}
PyObject* m_retain_grad(PyObject* self, PyObject*) {
  IGNIS_PY_BEGIN
  autograd::retain_grad(self_tensor(self));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}
PyObject* m_detach(PyObject* self, PyObject*) {
  IGNIS_PY_BEGIN
  return wrap(autograd::detach(self_tensor(self)));
  IGNIS_PY_END(nullptr)
}
PyObject* m_detach_(PyObject* self, PyObject*) {
  IGNIS_PY_BEGIN
  const Tensor& t = self_tensor(self);
  if (auto* m = autograd::get_meta(t)) {
    IGNIS_CHECK(!m->is_view_, "Can't detach views in-place. Use detach() instead.");
    m->grad_fn_.reset();
    m->requires_grad_ = false;
    m->output_nr_ = 0;
  }
  Py_INCREF(self);
  return self;
  IGNIS_PY_END(nullptr)
}

// _register_hook(fn) -> id: fn(grad) runs when this tensor's gradient is
// computed (during backward, with the GIL held); a Tensor result replaces it.
PyObject* m_register_hook(PyObject* self, PyObject* fn) {
  if (!PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "hook must be callable");
    return nullptr;
  }
  IGNIS_PY_BEGIN
  Py_INCREF(fn);
  std::shared_ptr<PyObject> keep(fn, [](PyObject* o) {
    PyGILState_STATE st = PyGILState_Ensure();
    Py_DECREF(o);
    PyGILState_Release(st);
  });
  auto call = [keep](const Tensor& g) -> Tensor {
    PyObject* arg = wrap(g);
    if (!arg) throw PythonErrorAlreadySet();
    PyObject* r = PyObject_CallOneArg(keep.get(), arg);
    Py_DECREF(arg);
    if (!r) throw PythonErrorAlreadySet();
    Tensor out;
    if (r != Py_None) {
      if (!is_tensor(r)) {
        Py_DECREF(r);
        IGNIS_FAIL_KIND(Type, "hook returned an object that is not a Tensor or None");
      }
      out = unwrap(r);
    }
    Py_DECREF(r);
    return out;
  };
  return PyLong_FromLongLong(autograd::register_hook(self_tensor(self), std::move(call)));
  IGNIS_PY_END(nullptr)
}
// _register_post_accumulate_grad_hook(fn) -> id: fn(tensor) runs after a
// gradient was accumulated into this leaf's .grad (during backward, with the
// GIL held); it must return None.
PyObject* m_register_post_accumulate_grad_hook(PyObject* self, PyObject* fn) {
  if (!PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "hook must be callable");
    return nullptr;
  }
  IGNIS_PY_BEGIN
  Py_INCREF(fn);
  std::shared_ptr<PyObject> keep(fn, [](PyObject* o) {
    PyGILState_STATE st = PyGILState_Ensure();
    Py_DECREF(o);
    PyGILState_Release(st);
  });
  auto call = [keep](const Tensor& t) {
    PyObject* arg = wrap(t);
    if (!arg) throw PythonErrorAlreadySet();
    PyObject* r = PyObject_CallOneArg(keep.get(), arg);
    Py_DECREF(arg);
    if (!r) throw PythonErrorAlreadySet();
    const bool none = r == Py_None;
    Py_DECREF(r);
    IGNIS_CHECK(none, "post accumulate grad hooks must return None");
  };
  return PyLong_FromLongLong(
      autograd::register_post_accumulate_hook(self_tensor(self), std::move(call)));
  IGNIS_PY_END(nullptr)
}
PyObject* m_remove_hook(PyObject* self, PyObject* id) {
  IGNIS_PY_BEGIN
  autograd::remove_hook(self_tensor(self), PyLong_AsLongLong(id));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

bool tensors_from(PyObject* seq, std::vector<Tensor>& out, bool allow_none);

// The backward node of a Python autograd.Function: calls its backward.
// A node with a `once_message` has a backward whose ops are not recorded
// (the compiled backward of an AOT graph runs its kernels directly; a
// backward marked @once_differentiable). Under create_graph it first asks
// `double_backward` (when given) for gradients with a history of their own
// (Note [Double backward through a compiled graph] in aot_autograd.py); when
// there is none, or it returns None, the backward runs with grad mode off and
// its gradients get a DelayedErrorNode as their history, with this node's
// edges and those of the incoming gradients, so that differentiating them
// again fails with the message instead of treating them as constants (or
// following the part of a history that its ops happened to record).
class PyFunctionNode : public Node {
 public:
  PyFunctionNode(std::string name, PyObject* backward, std::string once_message,
                 PyObject* double_backward)
      : name_(std::move(name)), once_message_(std::move(once_message)) {
    Py_INCREF(backward);
    backward_ = backward;
    if (double_backward && double_backward != Py_None) {
      Py_INCREF(double_backward);
      double_backward_ = double_backward;
    }
  }
  ~PyFunctionNode() override { release_variables(); }
  std::string name() const override { return name_; }
  void release_variables() override {
    if (!backward_) return;
    PyGILState_STATE st = PyGILState_Ensure();
    Py_CLEAR(backward_);
    Py_CLEAR(double_backward_);
    PyGILState_Release(st);
  }
  autograd::tensor_list apply(autograd::tensor_list&& grads) override {
    IGNIS_CHECK(backward_ != nullptr, autograd::kFreedGraphMessage);
    PyGILState_STATE st = PyGILState_Ensure();
    struct Release {
      PyGILState_STATE st;
      ~Release() { PyGILState_Release(st); }
    } release{st};
    if (once_message_.empty() || !autograd::grad_enabled())
      return gradients(call(backward_, grads));
    if (double_backward_) {
      PyObject* r = call(double_backward_, grads);
      if (r != Py_None) return gradients(r);
      Py_DECREF(r);
    }
    autograd::tensor_list out;
    {
      autograd::GradModeGuard off(false);
      out = gradients(call(backward_, grads));
    }
    refuse_double_backward(grads, out);
    return out;
  }

 private:
  // fn(*grads): a new reference (never null: a Python error is thrown).
  PyObject* call(PyObject* fn, const autograd::tensor_list& grads) {
    PyObject* args = PyTuple_New(static_cast<Py_ssize_t>(grads.size()));
    if (!args) throw PythonErrorAlreadySet();
    for (size_t i = 0; i < grads.size(); ++i) {
      PyObject* g = wrap(grads[i]);
      if (!g) {
        Py_DECREF(args);
        throw PythonErrorAlreadySet();
      }
      PyTuple_SET_ITEM(args, i, g);
    }
    PyObject* r = PyObject_Call(fn, args, nullptr);
    Py_DECREF(args);
    if (!r) throw PythonErrorAlreadySet();
    return r;
  }
  // A backward's result `r` (a reference this takes) as one gradient per next edge.
  autograd::tensor_list gradients(PyObject* r) {
    autograd::tensor_list out(next_edges_.size());
    PyObject* seq = PySequence_Fast(r, "backward must return a tuple of gradients");
    Py_DECREF(r);
    if (!seq) throw PythonErrorAlreadySet();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n != static_cast<Py_ssize_t>(out.size())) {
      Py_DECREF(seq);
      IGNIS_FAIL("function ", name_, " returned an incorrect number of gradients (expected ",
                 out.size(), ", got ", n, ")");
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* o = PySequence_Fast_GET_ITEM(seq, i);
      if (is_tensor(o)) out[static_cast<size_t>(i)] = unwrap(o);
    }
    Py_DECREF(seq);
    return out;
  }

  void refuse_double_backward(const autograd::tensor_list& grads, autograd::tensor_list& out) {
    auto node = std::make_shared<autograd::DelayedErrorNode>(name_ + "Backward", once_message_);
    bool reaches = false;
    for (const autograd::Edge& e : next_edges_) {
      node->mutable_next_edges().push_back(e);
      reaches |= e.valid();
    }
    for (const Tensor& g : grads) {
      if (!g.defined() || !autograd::requires_grad(g)) continue;
      node->mutable_next_edges().push_back(autograd::gradient_edge(g));
      reaches = true;
    }
    if (!reaches) return;
    for (size_t j = 0; j < out.size(); ++j) {
      if (!out[j].defined() || !autograd::is_differentiable_type(out[j].dtype())) continue;
      out[j] = autograd::detach(out[j]);  // its own tensor: an input gradient keeps its history
      autograd::set_history(out[j], node, node->add_input_geom(out[j]));
    }
  }

  std::string name_, once_message_;
  PyObject* backward_ = nullptr;
  PyObject* double_backward_ = nullptr;
};

// _record_function(name, backward, inputs, outputs, non_differentiable,
// once_message="", double_backward=None): records a PyFunctionNode whose next
// edges are `inputs` (None for non-tensor arguments) and makes it the grad_fn
// of the floating `outputs`; a once_message makes its gradients refuse a
// second derivative unless double_backward(*grads) gives differentiable ones.
PyObject* f_record_function(PyObject*, PyObject* args) {
  const char* name;
  const char* once = "";
  PyObject *backward, *ins, *outs, *nondiff, *double_backward = nullptr;
  if (!PyArg_ParseTuple(args, "sOOOO|sO", &name, &backward, &ins, &outs, &nondiff, &once,
                        &double_backward))
    return nullptr;
  std::vector<Tensor> inputs, outputs, skip;
  if (!tensors_from(ins, inputs, true) || !tensors_from(outs, outputs, true) ||
      !tensors_from(nondiff, skip, false))
    return nullptr;
  IGNIS_PY_BEGIN
  auto node = std::make_shared<PyFunctionNode>(name, backward, once, double_backward);
  for (const Tensor& t : inputs)
    node->mutable_next_edges().push_back(t.defined() ? autograd::gradient_edge(t)
                                                      : autograd::Edge{});
  for (size_t j = 0; j < outputs.size(); ++j) {
    const Tensor& t = outputs[j];
    if (!t.defined()) {
      node->add_input_geom(Tensor());
      continue;
    }
    node->add_input_geom(t);
    bool nd = !autograd::is_differentiable_type(t.dtype());  // floating or complex
    for (const Tensor& k : skip) nd |= k.is_same(t);
    if (!nd) autograd::set_history(t, node, static_cast<uint32_t>(j));
  }
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

// Tensor._base: the tensor a view was made from (None for a tensor that is no view).
PyObject* get_base(PyObject* self, void*) {
  const intrusive_ptr<TensorImpl>& b = self_tensor(self).impl()->view_base();
  if (!b) Py_RETURN_NONE;
  return wrap(Tensor(b));
}

PyGetSetDef tensor_autograd_getset[] = {
    {"_base", get_base, nullptr, "The tensor this view was made from (None if no view).",
     nullptr},
    {"requires_grad", get_requires_grad, set_requires_grad,
     "Whether gradients are computed for this tensor.", nullptr},
    {"grad", get_grad, set_grad, "The accumulated gradient (None until backward).", nullptr},
    {"grad_fn", get_grad_fn, nullptr, "The backward node that produced this tensor.", nullptr},
    {"is_leaf", get_is_leaf, nullptr, "True unless the tensor was produced by a recorded op.",
     nullptr},
    {"retains_grad", get_retains_grad, nullptr, nullptr, nullptr},
    {"output_nr", get_output_nr, nullptr, nullptr, nullptr},
    {"_is_view", get_is_view, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMethodDef tensor_autograd_methods[] = {
    {"requires_grad_",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(m_requires_grad_)),
     METH_VARARGS | METH_KEYWORDS, "Sets requires_grad in place; returns self."},
    {"retain_grad", m_retain_grad, METH_NOARGS, "Keep .grad for this non-leaf tensor."},
    {"detach", m_detach, METH_NOARGS, "A tensor sharing data, without history."},
    {"detach_", m_detach_, METH_NOARGS, "Drops this tensor's history in place."},
    {"_register_hook", m_register_hook, METH_O, nullptr},
    {"_register_post_accumulate_grad_hook", m_register_post_accumulate_grad_hook, METH_O, nullptr},
    {"_remove_hook", m_remove_hook, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr}};

// --- module functions ---------------------------------------------------------------
bool tensors_from(PyObject* seq, std::vector<Tensor>& out, bool allow_none) {
  PyObject* fast = PySequence_Fast(seq, "expected a sequence of tensors");
  if (!fast) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* o = PySequence_Fast_GET_ITEM(fast, i);
    if (o == Py_None && allow_none) {
      out.emplace_back();
    } else if (is_tensor(o)) {
      out.push_back(unwrap(o));
    } else {
      Py_DECREF(fast);
      PyErr_Format(PyExc_TypeError, "expected a Tensor, got %s", Py_TYPE(o)->tp_name);
      return false;
    }
  }
  Py_DECREF(fast);
  return true;
}

// _run_backward(tensors, grads, retain_graph, create_graph)
PyObject* f_run_backward(PyObject*, PyObject* args) {
  PyObject *ts, *gs;
  int keep, create;
  if (!PyArg_ParseTuple(args, "OOpp", &ts, &gs, &keep, &create)) return nullptr;
  std::vector<Tensor> outs, grads;
  if (!tensors_from(ts, outs, false) || !tensors_from(gs, grads, true)) return nullptr;
  IGNIS_PY_BEGIN
  autograd::BackwardOptions opt;
  opt.keep_graph = keep;
  opt.create_graph = create;
  autograd::backward(outs, grads, opt);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

// _run_grad(outputs, grads, inputs, retain_graph, create_graph, allow_unused)
PyObject* f_run_grad(PyObject*, PyObject* args) {
  PyObject *os, *gs, *is;
  int keep, create, unused;
  if (!PyArg_ParseTuple(args, "OOOppp", &os, &gs, &is, &keep, &create, &unused)) return nullptr;
  std::vector<Tensor> outs, grads, inputs;
  if (!tensors_from(os, outs, false) || !tensors_from(gs, grads, true) ||
      !tensors_from(is, inputs, false))
    return nullptr;
  IGNIS_PY_BEGIN
  autograd::BackwardOptions opt;
  opt.keep_graph = keep;
  opt.create_graph = create;
  opt.allow_unused = unused;
  std::vector<Tensor> res = autograd::grad(outs, grads, inputs, opt);
  PyObject* tup = PyTuple_New(static_cast<Py_ssize_t>(res.size()));
  if (!tup) return nullptr;
  for (size_t i = 0; i < res.size(); ++i) {
    PyObject* o = wrap(res[i]);
    if (!o) {
      Py_DECREF(tup);
      return nullptr;
    }
    PyTuple_SET_ITEM(tup, i, o);
  }
  return tup;
  IGNIS_PY_END(nullptr)
}

PyObject* f_is_grad_enabled(PyObject*, PyObject*) {
  return PyBool_FromLong(autograd::grad_enabled());
}
PyObject* f_set_grad_enabled(PyObject*, PyObject* v) {
  autograd::set_grad_enabled(PyObject_IsTrue(v));
  Py_RETURN_NONE;
}
PyObject* f_is_inference_mode_enabled(PyObject*, PyObject*) {
  return PyBool_FromLong(inference_mode_enabled());
}
// _set_inference_mode(on): sets inference mode (and grad mode off when on).
PyObject* f_set_inference_mode(PyObject*, PyObject* v) {
  set_inference_mode_enabled(PyObject_IsTrue(v));
  Py_RETURN_NONE;
}

// _mark_stale_view(t): t (a view) reads as if its base was written since its
// history was set (autograd::mark_stale_view).
PyObject* f_mark_stale_view(PyObject*, PyObject* t) {
  IGNIS_PY_BEGIN
  if (!is_tensor(t)) return PyErr_Format(PyExc_TypeError, "_mark_stale_view: expected a Tensor");
  autograd::mark_stale_view(unwrap(t));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

// --- saved-tensor hooks (Note [Saved-tensor hooks], autograd/node.h) --------------
// Python's pack and unpack, called with the GIL taken (the engine may run a
// backward without it). The packed object is held by a shared_ptr whose
// deleter takes the GIL too.
class PySavedTensorHooks final : public autograd::SavedTensorHooks {
 public:
  PySavedTensorHooks(PyObject* pack, PyObject* unpack) : pack_(hold(pack)), unpack_(hold(unpack)) {}

  std::shared_ptr<void> pack(const Tensor& t) override {
    PyGILState_STATE st = PyGILState_Ensure();
    PyObject* r = nullptr;
    if (PyObject* arg = wrap(t)) {
      r = PyObject_CallOneArg(static_cast<PyObject*>(pack_.get()), arg);
      Py_DECREF(arg);
    }
    PyGILState_Release(st);
    if (!r) throw PythonErrorAlreadySet();
    return hold_owned(r);
  }

  Tensor unpack(const std::shared_ptr<void>& packed) override {
    PyGILState_STATE st = PyGILState_Ensure();
    PyObject* r = PyObject_CallOneArg(static_cast<PyObject*>(unpack_.get()), static_cast<PyObject*>(packed.get()));
    Tensor out;
    bool is_t = r && is_tensor(r);
    if (is_t) out = unwrap(r);
    std::string type_name = r && !is_t ? Py_TYPE(r)->tp_name : "";
    Py_XDECREF(r);
    PyGILState_Release(st);
    if (!r) throw PythonErrorAlreadySet();
    if (!is_t)
      IGNIS_FAIL_KIND(Type, "saved_tensors_hooks: the unpack hook must return a Tensor, got ",
                      type_name);
    return out;
  }

 private:
  static std::shared_ptr<void> hold_owned(PyObject* o) {
    return std::shared_ptr<void>(o, [](void* p) {
      PyGILState_STATE st = PyGILState_Ensure();
      Py_DECREF(static_cast<PyObject*>(p));
      PyGILState_Release(st);
    });
  }
  static std::shared_ptr<void> hold(PyObject* o) {
    Py_INCREF(o);
    return hold_owned(o);
  }
  std::shared_ptr<void> pack_, unpack_;
};

// The guards of _push_saved_tensors_hooks, innermost last (context managers
// nest, so pushes and pops pair up).
thread_local std::vector<std::unique_ptr<autograd::SavedTensorHooksGuard>> t_saved_hook_guards;

// _push_saved_tensors_hooks(pack, unpack): installs the pair on this thread.
// pack(None) and unpack(None) install none (disable_saved_tensors_hooks).
PyObject* f_push_saved_tensors_hooks(PyObject*, PyObject* args) {
  PyObject *pack, *unpack;
  if (!PyArg_ParseTuple(args, "OO", &pack, &unpack)) return nullptr;
  const bool none = pack == Py_None && unpack == Py_None;
  if (!none && (!PyCallable_Check(pack) || !PyCallable_Check(unpack))) {
    PyErr_SetString(PyExc_TypeError, "saved_tensors_hooks: pack_hook and unpack_hook must be callable");
    return nullptr;
  }
  IGNIS_PY_BEGIN
  std::shared_ptr<autograd::SavedTensorHooks> hooks;
  if (!none) hooks = std::make_shared<PySavedTensorHooks>(pack, unpack);
  t_saved_hook_guards.push_back(std::make_unique<autograd::SavedTensorHooksGuard>(std::move(hooks)));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_pop_saved_tensors_hooks(PyObject*, PyObject*) {
  if (t_saved_hook_guards.empty()) {
    PyErr_SetString(PyExc_RuntimeError, "saved_tensors_hooks: no hooks to pop");
    return nullptr;
  }
  t_saved_hook_guards.pop_back();
  Py_RETURN_NONE;
}

PyMethodDef autograd_functions[] = {
    {"_push_saved_tensors_hooks", f_push_saved_tensors_hooks, METH_VARARGS, nullptr},
    {"_pop_saved_tensors_hooks", f_pop_saved_tensors_hooks, METH_NOARGS, nullptr},
    {"_run_backward", f_run_backward, METH_VARARGS, nullptr},
    {"_run_grad", f_run_grad, METH_VARARGS, nullptr},
    {"_record_function", f_record_function, METH_VARARGS, nullptr},
    {"is_grad_enabled", f_is_grad_enabled, METH_NOARGS, "True when ops record history."},
    {"_set_grad_enabled", f_set_grad_enabled, METH_O, nullptr},
    {"is_inference_mode_enabled", f_is_inference_mode_enabled, METH_NOARGS, nullptr},
    {"_set_inference_mode", f_set_inference_mode, METH_O, nullptr},
    {"_mark_stale_view", f_mark_stale_view, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

bool init_autograd(PyObject* module) {
  static PyType_Slot slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(node_dealloc)},
      {Py_tp_methods, node_methods},
      {Py_tp_getset, node_getset},
      {Py_tp_richcompare, reinterpret_cast<void*>(node_richcompare)},
      {Py_tp_hash, reinterpret_cast<void*>(node_hash)},
      {Py_tp_repr, reinterpret_cast<void*>(node_repr)},
      {0, nullptr}};
  static PyType_Spec spec = {"ignis._C._FunctionBase", sizeof(PyNode), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
  PyObject* type = PyType_FromSpec(&spec);
  if (!type) return false;
  NodeBaseType = reinterpret_cast<PyTypeObject*>(type);
  node_classes = PyDict_New();
  if (!node_classes || PyModule_AddObjectRef(module, "_FunctionBase", type) < 0) return false;

  // Tensor attributes live with autograd; attach them to TensorBase.
  PyObject* dict = TensorBaseType->tp_dict;
  for (PyGetSetDef* g = tensor_autograd_getset; g->name; ++g) {
    PyObject* d = PyDescr_NewGetSet(TensorBaseType, g);
    if (!d || PyDict_SetItemString(dict, g->name, d) < 0) return false;
    Py_DECREF(d);
  }
  for (PyMethodDef* m = tensor_autograd_methods; m->ml_name; ++m) {
    PyObject* d = PyDescr_NewMethod(TensorBaseType, m);
    if (!d || PyDict_SetItemString(dict, m->ml_name, d) < 0) return false;
    Py_DECREF(d);
  }
  PyType_Modified(TensorBaseType);
  return PyModule_AddFunctions(module, autograd_functions) == 0;
}

}  // namespace ignis::py

// Testing hooks for the decompositions (ops/decompositions.h); argument
// conversion only.
//   _C._decompose(name, *args, **kwargs): runs the decomposition of the
//     overload `name` ("softmax.int") once, on arguments parsed as
//     ignis.<op> parses them; the ops it calls run as usual (under autograd
//     when the inputs require grad).
//   _C._decompose_trace(fn): runs fn() with every op that declares a
//     decomposition decomposed, recursively, as AOT's tracer applies them,
//     and returns the names of the ops that remain (what a traced graph
//     holds before functionalization).
//   _C._decompositions(), _C._core_ops(): full names of the ops that declare
//     a decomposition, and of the core ops.
#include <memory>

#include "ignis/ops/decompositions.h"
#include "ignis/ops/op_def.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

namespace {

PyObject* names_list(const std::vector<std::string>& names) {
  PyObject* l = PyList_New(0);
  if (!l) return nullptr;
  for (const auto& n : names) {
    PyObject* s = PyUnicode_FromString(n.c_str());
    if (!s || PyList_Append(l, s) < 0) {
      Py_XDECREF(s);
      Py_DECREF(l);
      return nullptr;
    }
    Py_DECREF(s);
  }
  return l;
}

PyObject* f_decompose(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  IGNIS_PY_BEGIN
  if (nargs < 1 || !PyUnicode_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "_decompose expects an op name such as 'softmax.int'");
    return nullptr;
  }
  const OpHandle& op = Dispatcher::get().find_or_throw(PyUnicode_AsUTF8(args[0]));
  IGNIS_CHECK_TYPE(op.def() && op.def()->decomposition, op.name(), " has no decomposition");
  Stack stack;
  std::string why;
  if (!parse_op_args(op.schema(), args + 1, nargs - 1, kwnames, stack, &why)) {
    PyErr_Format(PyExc_TypeError, "%s: %s", op.name().c_str(), why.c_str());
    return nullptr;
  }
  op.def()->decomposition(op, stack);
  return op_results(op, stack);
  IGNIS_PY_END(nullptr)
}

PyObject* f_decompose_trace(PyObject*, PyObject* fn) {
  IGNIS_PY_BEGIN
  auto seen = std::make_shared<std::vector<std::string>>();
  constexpr DispatchKey kKey = DispatchKey::TestLayer1;
  Dispatcher::get().register_fallback(kKey, decomp::decompose_or_record(kKey, seen));
  PyObject* r;
  {
    IncludeDispatchKeyGuard on(kKey);
    r = PyObject_CallNoArgs(fn);
  }
  Dispatcher::get().register_fallback(kKey, nullptr);
  if (!r) return nullptr;
  Py_DECREF(r);
  return names_list(*seen);
  IGNIS_PY_END(nullptr)
}

template <bool Core>
PyObject* f_ops_with(PyObject*, PyObject*) {
  std::vector<std::string> names;
  for (const auto& h : Dispatcher::get().ops()) {
    const OpDef* d = h->def();
    if (d && (Core ? d->core : d->decomposition != nullptr)) names.push_back(h->name());
  }
  return names_list(names);
}

PyMethodDef functions[] = {
    {"_decompose", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f_decompose)),
     METH_FASTCALL | METH_KEYWORDS, "Runs one op's decomposition (testing)."},
    {"_decompose_trace", f_decompose_trace, METH_O,
     "Runs fn() decomposing every op; returns the ops that remain (testing)."},
    {"_decompositions", f_ops_with<false>, METH_NOARGS, "Ops that declare a decomposition."},
    {"_core_ops", f_ops_with<true>, METH_NOARGS, "The core ops."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_decompose(PyObject* module) { return PyModule_AddFunctions(module, functions) == 0; }

}  // namespace ignis::py

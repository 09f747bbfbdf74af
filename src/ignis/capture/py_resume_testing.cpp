// Test-only Python binding of resume.h, so tests can build resume functions
// for hand-picked offsets and stack layouts without going through capture.
#include "ignis/capture/resume.h"

#include <string>
#include <vector>

namespace ignis::capture {
namespace {

bool as_code(PyObject* o, PyCodeObject** out) {
  if (!PyCode_Check(o)) {
    PyErr_SetString(PyExc_TypeError, "expected a code object");
    return false;
  }
  *out = reinterpret_cast<PyCodeObject*>(o);
  return true;
}

// _make_resume_function(code, target_offset, stack_null, live_locals, globals, closure)
// stack_null: sequence of bools, bottom first; live_locals: sequence of co_varnames indices.
PyObject* py_make_resume_function(PyObject*, PyObject* args) {
  PyObject *code, *stack_null, *live, *globals, *closure;
  int offset;
  if (!PyArg_ParseTuple(args, "OiOOOO", &code, &offset, &stack_null, &live, &globals, &closure)) return nullptr;
  ResumeSpec spec;
  if (!as_code(code, &spec.code)) return nullptr;
  spec.target_offset = offset;
  PyObject* nulls = PySequence_Fast(stack_null, "stack_null must be a sequence");
  if (!nulls) return nullptr;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(nulls); ++i) {
    int b = PyObject_IsTrue(PySequence_Fast_GET_ITEM(nulls, i));
    if (b < 0) {
      Py_DECREF(nulls);
      return nullptr;
    }
    spec.stack_null.push_back(b != 0);
  }
  Py_DECREF(nulls);
  PyObject* locals = PySequence_Fast(live, "live_locals must be a sequence");
  if (!locals) return nullptr;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(locals); ++i) {
    long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(locals, i));
    if (v == -1 && PyErr_Occurred()) {
      Py_DECREF(locals);
      return nullptr;
    }
    spec.live_locals.push_back(static_cast<int>(v));
  }
  Py_DECREF(locals);
  return make_resume_function(spec, globals, closure);
}

PyObject* py_live_locals_at(PyObject*, PyObject* args) {
  PyObject* code;
  int offset;
  if (!PyArg_ParseTuple(args, "Oi", &code, &offset)) return nullptr;
  PyCodeObject* c;
  if (!as_code(code, &c)) return nullptr;
  std::vector<int> live = live_locals_at(c, offset);
  PyObject* out = PyList_New(static_cast<Py_ssize_t>(live.size()));
  if (!out) return nullptr;
  for (size_t i = 0; i < live.size(); ++i) {
    PyObject* v = PyLong_FromLong(live[i]);
    if (!v) {
      Py_DECREF(out);
      return nullptr;
    }
    PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), v);
  }
  return out;
}

PyObject* py_can_resume_at(PyObject*, PyObject* args) {
  PyObject* code;
  int offset;
  if (!PyArg_ParseTuple(args, "Oi", &code, &offset)) return nullptr;
  PyCodeObject* c;
  if (!as_code(code, &c)) return nullptr;
  std::string why;
  bool ok = can_resume_at(c, offset, &why);
  return Py_BuildValue("(Os)", ok ? Py_True : Py_False, why.c_str());
}

PyObject* py_clear_resume_caches(PyObject*, PyObject*) {
  clear_resume_caches();
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"_make_resume_function", py_make_resume_function, METH_VARARGS,
     "_make_resume_function(code, target_offset, stack_null, live_locals, globals, closure)"},
    {"_live_locals_at", py_live_locals_at, METH_VARARGS, "_live_locals_at(code, offset) -> list of varnames indices"},
    {"_can_resume_at", py_can_resume_at, METH_VARARGS, "_can_resume_at(code, offset) -> (bool, reason)"},
    {"_clear_resume_caches", py_clear_resume_caches, METH_NOARGS, "drop cached resume code objects"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

bool init_resume_testing(PyObject* capture_module) {
  PyObject* name = PyModule_GetNameObject(capture_module);
  if (!name) return false;
  for (PyMethodDef* m = methods; m->ml_name; ++m) {
    PyObject* fn = PyCFunction_NewEx(m, nullptr, name);
    if (!fn || PyModule_AddObject(capture_module, m->ml_name, fn) < 0) {
      Py_XDECREF(fn);
      Py_DECREF(name);
      return false;
    }
  }
  Py_DECREF(name);
  return true;
}

}  // namespace ignis::capture

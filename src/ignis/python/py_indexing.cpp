// Tensor indexing from Python: t[idx] and t[idx] = value.
#include "ignis/python/py_common.h"

namespace ignis::py {

namespace {

PyObject* f_getitem(PyObject*, PyObject* args) {
  (void)args;
  PyErr_SetString(PyExc_NotImplementedError, "tensor indexing is not implemented yet");
  return nullptr;
}

PyObject* f_setitem(PyObject*, PyObject* args) {
  (void)args;
  PyErr_SetString(PyExc_NotImplementedError, "tensor index assignment is not implemented yet");
  return nullptr;
}

PyMethodDef methods[] = {
    {"_getitem", f_getitem, METH_VARARGS, nullptr},
    {"_setitem", f_setitem, METH_VARARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_indexing(PyObject* module) { return PyModule_AddFunctions(module, methods) == 0; }

}  // namespace ignis::py

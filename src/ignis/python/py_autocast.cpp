// ignis._C's autocast functions (torch's names): the thread's autocast state
// per device type (autocast/autocast_mode.h), which `ignis.autocast`
// (python/ignis/amp/autocast_mode.py) switches.
#include "ignis/autocast/autocast_mode.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

namespace {

// A device type named by a string ("cpu", "cuda"); Device::parse raises
// torch's message for names that are no device type.
bool device_type_arg(PyObject* o, DeviceType* out) {
  if (!PyUnicode_Check(o)) {
    PyErr_Format(PyExc_TypeError, "device_type must be a str, not %s", Py_TYPE(o)->tp_name);
    return false;
  }
  *out = Device::parse(PyUnicode_AsUTF8(o)).type;
  return true;
}

PyObject* f_is_autocast_available(PyObject*, PyObject* o) {
  IGNIS_PY_BEGIN
  DeviceType t;
  if (!device_type_arg(o, &t)) return nullptr;
  return PyBool_FromLong(autocast::autocast_key(t) != DispatchKey::Undefined);
  IGNIS_PY_END(nullptr)
}

PyObject* f_is_autocast_enabled(PyObject*, PyObject* o) {
  IGNIS_PY_BEGIN
  DeviceType t;
  if (!device_type_arg(o, &t)) return nullptr;
  return PyBool_FromLong(autocast::is_enabled(t));
  IGNIS_PY_END(nullptr)
}

PyObject* f_set_autocast_enabled(PyObject*, PyObject* args) {
  IGNIS_PY_BEGIN
  PyObject *dev, *on;
  if (!PyArg_ParseTuple(args, "OO", &dev, &on)) return nullptr;
  DeviceType t;
  if (!device_type_arg(dev, &t)) return nullptr;
  autocast::set_enabled(t, PyObject_IsTrue(on));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_get_autocast_dtype(PyObject*, PyObject* o) {
  IGNIS_PY_BEGIN
  DeviceType t;
  if (!device_type_arg(o, &t)) return nullptr;
  PyObject* d = dtype_object(autocast::get_dtype(t));
  Py_INCREF(d);
  return d;
  IGNIS_PY_END(nullptr)
}

PyObject* f_set_autocast_dtype(PyObject*, PyObject* args) {
  IGNIS_PY_BEGIN
  PyObject *dev, *dt;
  if (!PyArg_ParseTuple(args, "OO", &dev, &dt)) return nullptr;
  DeviceType t;
  if (!device_type_arg(dev, &t)) return nullptr;
  if (!is_dtype(dt)) {
    PyErr_Format(PyExc_TypeError, "dtype must be an ignis.dtype, not %s", Py_TYPE(dt)->tp_name);
    return nullptr;
  }
  autocast::set_dtype(t, dtype_of(dt));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_is_autocast_cache_enabled(PyObject*, PyObject*) {
  return PyBool_FromLong(autocast::is_cache_enabled());
}
PyObject* f_set_autocast_cache_enabled(PyObject*, PyObject* on) {
  autocast::set_cache_enabled(PyObject_IsTrue(on));
  Py_RETURN_NONE;
}
PyObject* f_autocast_increment_nesting(PyObject*, PyObject*) {
  return PyLong_FromLong(autocast::increment_nesting());
}
PyObject* f_autocast_decrement_nesting(PyObject*, PyObject*) {
  return PyLong_FromLong(autocast::decrement_nesting());
}
PyObject* f_clear_autocast_cache(PyObject*, PyObject*) {
  autocast::clear_cache();
  Py_RETURN_NONE;
}
PyObject* f_autocast_cache_size(PyObject*, PyObject*) {
  return PyLong_FromSize_t(autocast::cache_size());
}

PyMethodDef autocast_functions[] = {
    {"is_autocast_available", f_is_autocast_available, METH_O, nullptr},
    {"is_autocast_enabled", f_is_autocast_enabled, METH_O, nullptr},
    {"set_autocast_enabled", f_set_autocast_enabled, METH_VARARGS, nullptr},
    {"get_autocast_dtype", f_get_autocast_dtype, METH_O, nullptr},
    {"set_autocast_dtype", f_set_autocast_dtype, METH_VARARGS, nullptr},
    {"is_autocast_cache_enabled", f_is_autocast_cache_enabled, METH_NOARGS, nullptr},
    {"set_autocast_cache_enabled", f_set_autocast_cache_enabled, METH_O, nullptr},
    {"autocast_increment_nesting", f_autocast_increment_nesting, METH_NOARGS, nullptr},
    {"autocast_decrement_nesting", f_autocast_decrement_nesting, METH_NOARGS, nullptr},
    {"clear_autocast_cache", f_clear_autocast_cache, METH_NOARGS, nullptr},
    {"_autocast_cache_size", f_autocast_cache_size, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

bool init_autocast(PyObject* module) {
  return PyModule_AddFunctions(module, autocast_functions) == 0;
}

}  // namespace ignis::py

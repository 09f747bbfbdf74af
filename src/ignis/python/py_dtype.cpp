// ignis.dtype and ignis.device Python types.
#include "ignis/python/py_common.h"

namespace ignis::py {

namespace {

struct PyDtype {
  PyObject_HEAD
  ScalarType st;
};
struct PyDevice {
  PyObject_HEAD
  Device dev;
};

struct PyMemoryFormat {
  PyObject_HEAD
  MemoryFormat f;
};

PyTypeObject* DtypeType = nullptr;
PyTypeObject* DeviceType_ = nullptr;
PyTypeObject* MemoryFormatType = nullptr;
PyObject* g_dtypes[kNumScalarTypes] = {};
constexpr int kNumMemoryFormats = 4;
PyObject* g_memory_formats[kNumMemoryFormats] = {};

PyObject* memory_format_repr(PyObject* self) {
  return PyUnicode_FromFormat("ignis.%s",
                              memory_format_name(reinterpret_cast<PyMemoryFormat*>(self)->f));
}
// Pickled by name: the module attribute of the same name.
PyObject* memory_format_reduce(PyObject* self, PyObject*) {
  return PyUnicode_FromString(memory_format_name(reinterpret_cast<PyMemoryFormat*>(self)->f));
}
// ignis.layout: strided is the only layout ignis stores; the sparse ones
// exist so that code comparing a tensor's layout with them runs.
struct PyLayout {
  PyObject_HEAD
  int index;
};
const char* const kLayoutNames[] = {"strided", "sparse_coo", "sparse_csr", "sparse_csc",
                                    "sparse_bsr", "sparse_bsc"};
constexpr int kNumLayouts = 6;
PyTypeObject* LayoutType = nullptr;
PyObject* g_layouts[kNumLayouts] = {};
PyObject* layout_repr(PyObject* self) {
  return PyUnicode_FromFormat("ignis.%s", kLayoutNames[reinterpret_cast<PyLayout*>(self)->index]);
}
PyObject* layout_reduce(PyObject* self, PyObject*) {
  return PyUnicode_FromString(kLayoutNames[reinterpret_cast<PyLayout*>(self)->index]);
}
PyMethodDef layout_methods[] = {
    {"__reduce__", layout_reduce, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyMethodDef memory_format_methods[] = {
    {"__reduce__", memory_format_reduce, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyObject* dtype_repr(PyObject* self) {
  return PyUnicode_FromString(to_string(reinterpret_cast<PyDtype*>(self)->st).c_str());
}
PyObject* dtype_is_floating(PyObject* self, void*) {
  return PyBool_FromLong(is_floating(reinterpret_cast<PyDtype*>(self)->st));
}
PyObject* dtype_is_signed(PyObject* self, void*) {
  return PyBool_FromLong(is_signed(reinterpret_cast<PyDtype*>(self)->st));
}
PyObject* dtype_is_complex(PyObject* self, void*) {
  return PyBool_FromLong(is_complex(reinterpret_cast<PyDtype*>(self)->st));
}
PyObject* dtype_to_real(PyObject* self, PyObject*) {
  PyObject* d = dtype_object(to_real_type(reinterpret_cast<PyDtype*>(self)->st));
  Py_INCREF(d);
  return d;
}
PyObject* dtype_to_complex(PyObject* self, PyObject*) {
  ScalarType t = reinterpret_cast<PyDtype*>(self)->st;
  if (!is_floating(t) && !is_complex(t)) {
    PyErr_Format(PyExc_RuntimeError, "Unknown Complex ScalarType for %s", scalar_type_name(t));
    return nullptr;
  }
  PyObject* d = dtype_object(to_complex_type(t));
  Py_INCREF(d);
  return d;
}
PyObject* dtype_itemsize(PyObject* self, void*) {
  return PyLong_FromSize_t(element_size(reinterpret_cast<PyDtype*>(self)->st));
}
PyObject* dtype_reduce(PyObject* self, PyObject*) {
  return PyUnicode_FromString(dtype_name(reinterpret_cast<PyDtype*>(self)->st));
}

PyGetSetDef dtype_getset[] = {
    {"is_floating_point", dtype_is_floating, nullptr, nullptr, nullptr},
    {"is_signed", dtype_is_signed, nullptr, nullptr, nullptr},
    {"is_complex", dtype_is_complex, nullptr, nullptr, nullptr},
    {"itemsize", dtype_itemsize, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};
PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, nullptr},
    {"to_real", dtype_to_real, METH_NOARGS, nullptr},
    {"to_complex", dtype_to_complex, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

// ignis.device("cuda:0"), ignis.device("cuda", 0), ignis.device(other_device)
PyObject* device_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  IGNIS_PY_BEGIN
  static const char* kwlist[] = {"type", "index", nullptr};
  PyObject* t = nullptr;
  PyObject* idx = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:device", const_cast<char**>(kwlist), &t, &idx))
    return nullptr;
  Device d;
  if (!to_device(t, &d)) return nullptr;
  if (idx != Py_None) {
    if (!PyLong_Check(idx)) {
      PyErr_SetString(PyExc_TypeError, "device(): index must be an int");
      return nullptr;
    }
    d.index = static_cast<int8_t>(PyLong_AsLong(idx));
  }
  PyObject* o = type->tp_alloc(type, 0);
  if (o) reinterpret_cast<PyDevice*>(o)->dev = d;
  return o;
  IGNIS_PY_END(nullptr)
}

PyObject* device_repr(PyObject* self) {
  const Device& d = reinterpret_cast<PyDevice*>(self)->dev;
  std::string s = "device(type='" + std::string(device_type_name(d.type)) + "'";
  if (d.index >= 0) s += ", index=" + std::to_string(d.index);
  return PyUnicode_FromString((s + ")").c_str());
}
PyObject* device_str(PyObject* self) {
  return PyUnicode_FromString(reinterpret_cast<PyDevice*>(self)->dev.str().c_str());
}
PyObject* device_type_get(PyObject* self, void*) {
  return PyUnicode_FromString(device_type_name(reinterpret_cast<PyDevice*>(self)->dev.type));
}
PyObject* device_index_get(PyObject* self, void*) {
  int i = reinterpret_cast<PyDevice*>(self)->dev.index;
  if (i < 0) Py_RETURN_NONE;
  return PyLong_FromLong(i);
}
PyObject* device_richcompare(PyObject* a, PyObject* b, int op) {
  if ((op != Py_EQ && op != Py_NE) || !is_device(b)) Py_RETURN_NOTIMPLEMENTED;
  const Device& x = reinterpret_cast<PyDevice*>(a)->dev;
  const Device& y = reinterpret_cast<PyDevice*>(b)->dev;
  bool eq = x.type == y.type && x.index == y.index;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}
Py_hash_t device_hash(PyObject* self) {
  const Device& d = reinterpret_cast<PyDevice*>(self)->dev;
  return static_cast<Py_hash_t>(static_cast<int>(d.type) * 131 + d.index + 7);
}

PyGetSetDef device_getset[] = {
    {"type", device_type_get, nullptr, nullptr, nullptr},
    {"index", device_index_get, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

bool is_dtype(PyObject* o) { return Py_TYPE(o) == DtypeType; }
ScalarType dtype_of(PyObject* o) { return reinterpret_cast<PyDtype*>(o)->st; }
PyObject* dtype_object(ScalarType t) { return g_dtypes[static_cast<int>(t)]; }

bool to_dtype(PyObject* o, ScalarType* out) {
  if (is_dtype(o)) {
    *out = dtype_of(o);
    return true;
  }
  if (o == reinterpret_cast<PyObject*>(&PyFloat_Type)) { *out = ScalarType::Float64; return true; }
  if (o == reinterpret_cast<PyObject*>(&PyLong_Type)) { *out = ScalarType::Int64; return true; }
  if (o == reinterpret_cast<PyObject*>(&PyBool_Type)) { *out = ScalarType::Bool; return true; }
  // NumPy dtypes and scalar types: go by their name.
  PyObject* name = nullptr;
  if (PyObject_HasAttrString(o, "name") && PyObject_HasAttrString(o, "kind")) {
    name = PyObject_GetAttrString(o, "name");
  }
  if (name && PyUnicode_Check(name)) {
    std::string s = PyUnicode_AsUTF8(name);
    Py_DECREF(name);
    return parse_dtype_name(s, out);
  }
  Py_XDECREF(name);
  PyErr_Clear();
  return false;
}

bool is_memory_format(PyObject* o) { return Py_TYPE(o) == MemoryFormatType; }
MemoryFormat memory_format_of(PyObject* o) { return reinterpret_cast<PyMemoryFormat*>(o)->f; }
PyObject* memory_format_object(MemoryFormat f) { return g_memory_formats[static_cast<int>(f)]; }

bool is_layout(PyObject* o) { return Py_TYPE(o) == LayoutType; }
PyObject* strided_layout() { return g_layouts[0]; }

bool is_device(PyObject* o) { return Py_TYPE(o) == DeviceType_; }
Device device_of(PyObject* o) { return reinterpret_cast<PyDevice*>(o)->dev; }

PyObject* make_device(Device d) {
  PyObject* o = DeviceType_->tp_alloc(DeviceType_, 0);
  if (o) reinterpret_cast<PyDevice*>(o)->dev = d;
  return o;
}

bool to_device(PyObject* o, Device* out) {
  if (is_device(o)) {
    *out = device_of(o);
    return true;
  }
  try {
    if (PyUnicode_Check(o)) {
      *out = Device::parse(PyUnicode_AsUTF8(o));
      return true;
    }
    if (PyLong_Check(o)) {
      long i = PyLong_AsLong(o);
      IGNIS_CHECK(i >= 0, "Device index must not be negative");
      *out = Device(DeviceType::CUDA, static_cast<int>(i));
      return true;
    }
  } catch (...) {
    set_python_error();
    return false;
  }
  PyErr_Format(PyExc_TypeError, "expected a device (str, ignis.device or int), got %s",
               Py_TYPE(o)->tp_name);
  return false;
}

bool init_dtype_types(PyObject* module) {
  static PyType_Slot dtype_slots[] = {
      {Py_tp_repr, reinterpret_cast<void*>(dtype_repr)},
      {Py_tp_getset, dtype_getset},
      {Py_tp_methods, dtype_methods},
      {0, nullptr},
  };
  static PyType_Spec dtype_spec = {"ignis.dtype", sizeof(PyDtype), 0,
                                   Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                   dtype_slots};
  PyObject* dt = PyType_FromSpec(&dtype_spec);
  if (!dt) return false;
  DtypeType = reinterpret_cast<PyTypeObject*>(dt);
  Py_INCREF(dt);
  if (PyModule_AddObject(module, "dtype", dt) < 0) return false;
  for (int i = 0; i < kNumScalarTypes; ++i) {
    // tp_alloc: the type has no tp_new, so instances exist only here.
    PyObject* o = DtypeType->tp_alloc(DtypeType, 0);
    if (!o) return false;
    reinterpret_cast<PyDtype*>(o)->st = static_cast<ScalarType>(i);
    g_dtypes[i] = o;
    Py_INCREF(o);
    if (PyModule_AddObject(module, dtype_name(static_cast<ScalarType>(i)), o) < 0) return false;
  }

  // ignis.memory_format: its four instances, as torch's, made here only.
  static PyType_Slot mf_slots[] = {
      {Py_tp_repr, reinterpret_cast<void*>(memory_format_repr)},
      {Py_tp_methods, memory_format_methods},
      {0, nullptr},
  };
  static PyType_Spec mf_spec = {"ignis.memory_format", sizeof(PyMemoryFormat), 0,
                                Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, mf_slots};
  PyObject* mf = PyType_FromSpec(&mf_spec);
  if (!mf) return false;
  MemoryFormatType = reinterpret_cast<PyTypeObject*>(mf);
  Py_INCREF(mf);
  if (PyModule_AddObject(module, "memory_format", mf) < 0) return false;
  for (int i = 0; i < kNumMemoryFormats; ++i) {
    PyObject* o = MemoryFormatType->tp_alloc(MemoryFormatType, 0);
    if (!o) return false;
    reinterpret_cast<PyMemoryFormat*>(o)->f = static_cast<MemoryFormat>(i);
    g_memory_formats[i] = o;
    Py_INCREF(o);
    if (PyModule_AddObject(module, memory_format_name(static_cast<MemoryFormat>(i)), o) < 0)
      return false;
  }

  static PyType_Slot layout_slots[] = {
      {Py_tp_repr, reinterpret_cast<void*>(layout_repr)},
      {Py_tp_methods, layout_methods},
      {0, nullptr},
  };
  static PyType_Spec layout_spec = {"ignis.layout", sizeof(PyLayout), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                    layout_slots};
  PyObject* lt = PyType_FromSpec(&layout_spec);
  if (!lt) return false;
  LayoutType = reinterpret_cast<PyTypeObject*>(lt);
  Py_INCREF(lt);
  if (PyModule_AddObject(module, "layout", lt) < 0) return false;
  for (int i = 0; i < kNumLayouts; ++i) {
    PyObject* o = LayoutType->tp_alloc(LayoutType, 0);
    if (!o) return false;
    reinterpret_cast<PyLayout*>(o)->index = i;
    g_layouts[i] = o;
    Py_INCREF(o);
    if (PyModule_AddObject(module, kLayoutNames[i], o) < 0) return false;
  }

  static PyType_Slot dev_slots[] = {
      {Py_tp_new, reinterpret_cast<void*>(device_new)},
      {Py_tp_repr, reinterpret_cast<void*>(device_repr)},
      {Py_tp_str, reinterpret_cast<void*>(device_str)},
      {Py_tp_getset, device_getset},
      {Py_tp_richcompare, reinterpret_cast<void*>(device_richcompare)},
      {Py_tp_hash, reinterpret_cast<void*>(device_hash)},
      {0, nullptr},
  };
  static PyType_Spec dev_spec = {"ignis.device", sizeof(PyDevice), 0, Py_TPFLAGS_DEFAULT,
                                 dev_slots};
  PyObject* dv = PyType_FromSpec(&dev_spec);
  if (!dv) return false;
  DeviceType_ = reinterpret_cast<PyTypeObject*>(dv);
  Py_INCREF(dv);
  return PyModule_AddObject(module, "device", dv) == 0;
}

}  // namespace ignis::py

// ignis._C.TensorBase: the Python type behind ignis.Tensor.
//
// Only what is not an operator lives here (geometry getters, item, the
// buffer protocol hooks); every operator method is an op object attached to
// ignis.Tensor from the op declarations (see py_op.cpp).

#include "ignis/autograd/autograd_meta.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/python/py_common.h"

#include <structmember.h>

namespace ignis::py {

PyTypeObject* TensorBaseType = nullptr;
PyTypeObject* TensorClass = nullptr;
PyObject* SizeClass = nullptr;

bool is_tensor(PyObject* o) { return PyObject_TypeCheck(o, TensorBaseType); }

PyObject* wrap_as(PyTypeObject* cls, Tensor t) {
  PyObject* o = cls->tp_alloc(cls, 0);
  if (!o) return nullptr;
  auto* pt = reinterpret_cast<PyTensor*>(o);
  new (&pt->tensor) Tensor(std::move(t));
  if (!pt->tensor.impl()->pyobj()) pt->tensor.impl()->set_pyobj(o);
  return o;
}

PyObject* wrap(Tensor t) {
  if (!t.defined()) Py_RETURN_NONE;
  if (void* existing = t.impl()->pyobj()) {
    PyObject* o = static_cast<PyObject*>(existing);
    Py_INCREF(o);
    return o;
  }
  return wrap_as(TensorClass, std::move(t));
}

PyObject* make_size(const DimVector& v) {
  PyObject* tup = PyTuple_New(static_cast<Py_ssize_t>(v.size()));
  if (!tup) return nullptr;
  for (size_t i = 0; i < v.size(); ++i) PyTuple_SET_ITEM(tup, i, PyLong_FromLongLong(v[i]));
  if (!SizeClass) return tup;
  PyObject* s = PyObject_CallOneArg(SizeClass, tup);
  Py_DECREF(tup);
  return s;
}

namespace {

void tensor_dealloc(PyObject* self) {
  auto* pt = reinterpret_cast<PyTensor*>(self);
  if (pt->tensor.defined() && pt->tensor.impl()->pyobj() == self)
    pt->tensor.impl()->set_pyobj(nullptr);
  pt->tensor.~Tensor();
  Py_TYPE(self)->tp_free(self);
}

// Tensor(*sizes) -> uninitialised float tensor; Tensor(t) -> alias of t.
PyObject* tensor_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  IGNIS_PY_BEGIN
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n == 1 && is_tensor(PyTuple_GET_ITEM(args, 0))) {
    const Tensor& src = unwrap(PyTuple_GET_ITEM(args, 0));
    return wrap_as(type, make_view(src, src.sizes(), src.strides(), src.storage_offset()));
  }
  DimVector sizes;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* a = PyTuple_GET_ITEM(args, i);
    if (!PyLong_Check(a)) {
      PyErr_Format(PyExc_TypeError,
                   "Tensor(): expected sizes as ints, got %s; use ignis.tensor(data) to build a "
                   "tensor from data",
                   Py_TYPE(a)->tp_name);
      return nullptr;
    }
    sizes.push_back(PyLong_AsLongLong(a));
  }
  (void)kwargs;
  Tensor t = empty_tensor(sizes, default_dtype(), Device(DeviceType::CPU));
  PyObject* o = type->tp_alloc(type, 0);
  if (!o) return nullptr;
  new (&reinterpret_cast<PyTensor*>(o)->tensor) Tensor(std::move(t));
  unwrap(o).impl()->set_pyobj(o);
  return o;
  IGNIS_PY_END(nullptr)
}

// --- getters -------------------------------------------------------------------
PyObject* get_shape(PyObject* self, void*) { return make_size(unwrap(self).sizes()); }
PyObject* get_dtype(PyObject* self, void*) {
  PyObject* d = dtype_object(unwrap(self).dtype());
  Py_INCREF(d);
  return d;
}
PyObject* get_device(PyObject* self, void*) { return make_device(unwrap(self).user_device()); }
PyObject* get_ndim(PyObject* self, void*) { return PyLong_FromLongLong(unwrap(self).dim()); }
// A fake tensor reports the device it stands for (aot/fake.h).
PyObject* get_is_cuda(PyObject* self, void*) {
  return PyBool_FromLong(unwrap(self).user_device().is_cuda());
}
PyObject* get_is_cpu(PyObject* self, void*) {
  return PyBool_FromLong(unwrap(self).user_device().is_cpu());
}
PyObject* get_is_meta(PyObject* self, void*) {
  return PyBool_FromLong(unwrap(self).user_device().is_meta());
}
PyObject* get_is_fake(PyObject* self, void*) { return PyBool_FromLong(unwrap(self).is_fake()); }
PyObject* get_version(PyObject* self, void*) {
  return PyLong_FromUnsignedLongLong(unwrap(self).impl()->version_counter().value());
}
PyObject* get_itemsize(PyObject* self, void*) { return PyLong_FromSize_t(unwrap(self).itemsize()); }

// __array_interface__ (NumPy's protocol): lets np.asarray share the memory.
PyObject* get_array_interface(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  const Tensor& t = unwrap(self);
  IGNIS_CHECK_TYPE(t.device().is_cpu(), "can't convert ", t.device().str(),
                   " tensor to numpy. Copy the tensor to host memory first with .cpu()");
  const char* typestr = nullptr;
  switch (t.dtype()) {
    case ScalarType::Bool: typestr = "|b1"; break;
    case ScalarType::UInt8: typestr = "|u1"; break;
    case ScalarType::Int8: typestr = "|i1"; break;
    case ScalarType::Int16: typestr = "<i2"; break;
    case ScalarType::Int32: typestr = "<i4"; break;
    case ScalarType::Int64: typestr = "<i8"; break;
    case ScalarType::Float16: typestr = "<f2"; break;
    case ScalarType::Float32: typestr = "<f4"; break;
    case ScalarType::Float64: typestr = "<f8"; break;
    case ScalarType::ComplexFloat: typestr = "<c8"; break;
    case ScalarType::ComplexDouble: typestr = "<c16"; break;
    default:
      IGNIS_FAIL_KIND(Type, "Got unsupported ScalarType ", dtype_name(t.dtype()),
                      " (NumPy has no such dtype)");
  }
  PyObject* shape = PyTuple_New(t.dim());
  PyObject* strides = PyTuple_New(t.dim());
  for (int64_t i = 0; i < t.dim(); ++i) {
    PyTuple_SET_ITEM(shape, i, PyLong_FromLongLong(t.sizes()[i]));
    PyTuple_SET_ITEM(strides, i,
                     PyLong_FromLongLong(t.strides()[i] * static_cast<int64_t>(t.itemsize())));
  }
  uintptr_t ptr = reinterpret_cast<uintptr_t>(t.data_ptr());
  if (t.numel() == 0 && ptr == 0) ptr = 64;  // NumPy rejects a null pointer
  return Py_BuildValue("{s:N,s:s,s:(KO),s:N,s:i}", "shape", shape, "typestr", typestr, "data",
                       static_cast<unsigned long long>(ptr), Py_False, "strides", strides,
                       "version", 3);
  IGNIS_PY_END(nullptr)
}

// --- methods -------------------------------------------------------------------
PyObject* m_dim(PyObject* self, PyObject*) { return PyLong_FromLongLong(unwrap(self).dim()); }
PyObject* m_numel(PyObject* self, PyObject*) { return PyLong_FromLongLong(unwrap(self).numel()); }
PyObject* m_element_size(PyObject* self, PyObject*) {
  return PyLong_FromSize_t(unwrap(self).itemsize());
}
PyObject* m_storage_offset(PyObject* self, PyObject*) {
  return PyLong_FromLongLong(unwrap(self).storage_offset());
}
PyObject* m_data_ptr(PyObject* self, PyObject*) {
  return PyLong_FromVoidPtr(unwrap(self).data_ptr());
}
// is_contiguous(memory_format=ignis.contiguous_format): whether the strides
// are those of that format (size-1 dims aside).
PyObject* m_is_contiguous(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"memory_format", nullptr};
  PyObject* fmt = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:is_contiguous", const_cast<char**>(kwlist),
                                   &fmt))
    return nullptr;
  const Tensor& t = unwrap(self);
  if (!fmt) return PyBool_FromLong(t.is_contiguous());
  if (!is_memory_format(fmt))
    return PyErr_Format(PyExc_TypeError, "is_contiguous(): argument 'memory_format' must be "
                        "ignis.memory_format, not %s", Py_TYPE(fmt)->tp_name);
  const MemoryFormat f = memory_format_of(fmt);
  if (f == MemoryFormat::Contiguous || f == MemoryFormat::Preserve)
    return PyBool_FromLong(t.is_contiguous());
  return PyBool_FromLong(has_format(t.sizes(), t.strides(), f));
}
PyObject* m_is_inference(PyObject* self, PyObject*) {
  return PyBool_FromLong(unwrap(self).impl()->is_inference());
}
PyObject* m_is_floating_point(PyObject* self, PyObject*) {
  return PyBool_FromLong(is_floating(unwrap(self).dtype()));
}
PyObject* m_untyped_storage_ptr(PyObject* self, PyObject*) {
  return PyLong_FromVoidPtr(unwrap(self).impl()->storage()->data());
}
PyObject* m_storage_nbytes(PyObject* self, PyObject*) {
  return PyLong_FromSize_t(unwrap(self).impl()->storage()->nbytes());
}

// resize_(*sizes) / resize_(sizes): PyTorch's in-place resize (see
// resize_tensor); refused on tensors that require grad, as in PyTorch.
PyObject* m_resize(PyObject* self, PyObject* args) {
  IGNIS_PY_BEGIN
  const Tensor& t = unwrap(self);
  PyObject* seq = args;
  if (PyTuple_GET_SIZE(args) == 1 && !PyLong_Check(PyTuple_GET_ITEM(args, 0)))
    seq = PyTuple_GET_ITEM(args, 0);
  PyObject* fast = PySequence_Fast(seq, "resize_(): sizes must be a sequence of ints");
  if (!fast) return nullptr;
  DimVector sizes;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i) {
    PyObject* v = PySequence_Fast_GET_ITEM(fast, i);
    long long x = PyLong_Check(v) ? PyLong_AsLongLong(v) : -1;
    if (!PyLong_Check(v) || (x == -1 && PyErr_Occurred())) {
      Py_DECREF(fast);
      PyErr_Clear();
      return PyErr_Format(PyExc_TypeError, "resize_(): sizes must be ints, not %s",
                          Py_TYPE(v)->tp_name);
    }
    sizes.push_back(x);
  }
  Py_DECREF(fast);
  IGNIS_CHECK(!autograd::requires_grad(t), "cannot resize variables that require grad");
  resize_tensor(t, sizes);
  t.impl()->version_counter().bump();
  Py_INCREF(self);
  return self;
  IGNIS_PY_END(nullptr)
}

// size(dim=None) / stride(dim=None)
PyObject* size_or_stride(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                         bool stride) {
  IGNIS_PY_BEGIN
  const Tensor& t = unwrap(self);
  PyObject* dim = nargs > 0 ? args[0] : nullptr;
  if (kwnames && PyTuple_GET_SIZE(kwnames) == 1) dim = args[nargs];
  if (!dim || dim == Py_None) {
    if (!stride) return make_size(t.sizes());
    PyObject* tup = PyTuple_New(t.dim());
    for (int64_t i = 0; i < t.dim(); ++i) PyTuple_SET_ITEM(tup, i, PyLong_FromLongLong(t.strides()[i]));
    return tup;
  }
  if (!PyLong_Check(dim)) {
    PyErr_Format(PyExc_TypeError, "%s(): argument 'dim' must be int, not %s",
                 stride ? "stride" : "size", Py_TYPE(dim)->tp_name);
    return nullptr;
  }
  int64_t d = wrap_dim(PyLong_AsLongLong(dim), t.dim());
  return PyLong_FromLongLong(stride ? t.strides()[d] : t.sizes()[d]);
  IGNIS_PY_END(nullptr)
}
PyObject* m_size(PyObject* self, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  return size_or_stride(self, a, n, kw, false);
}
PyObject* m_stride(PyObject* self, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  return size_or_stride(self, a, n, kw, true);
}

// item(): a Python number of the tensor's kind.
PyObject* m_item(PyObject* self, PyObject*) {
  IGNIS_PY_BEGIN
  const Tensor& t = unwrap(self);
  if (is_complex(t.dtype())) {  // a Python complex from the real and imaginary parts
    IGNIS_CHECK(t.numel() == 1, "a Tensor with ", t.numel(),
                " elements cannot be converted to Scalar");
    Tensor re = complex_part(t, 0), im = complex_part(t, 1);
    if (t.device().is_cuda())  // (each part copied to the host)
      return PyComplex_FromDoubles(tensor_to_scalar(re).to_double(),
                                   tensor_to_scalar(im).to_double());
    return PyComplex_FromDoubles(re.item_double(), im.item_double());
  }
  if (t.device().is_cuda()) {  // copied to the host (and waited for), as torch does
    IGNIS_CHECK(t.numel() == 1, "a Tensor with ", t.numel(),
                " elements cannot be converted to Scalar");
    Scalar v = tensor_to_scalar(t);
    if (v.is_bool()) return PyBool_FromLong(v.to_bool());
    if (v.is_float()) return PyFloat_FromDouble(v.to_double());
    return PyLong_FromLongLong(v.to_int());
  }
  if (t.dtype() == ScalarType::Bool) return PyBool_FromLong(t.item_int());
  if (is_floating(t.dtype())) return PyFloat_FromDouble(t.item_double());
  return PyLong_FromLongLong(t.item_int());
  IGNIS_PY_END(nullptr)
}

PyObject* m_is_wrapped_number(PyObject* self, PyObject*) {
  return PyBool_FromLong(unwrap(self).impl()->is_wrapped_number());
}

PyObject* m_key_set(PyObject* self, PyObject*) {
  return PyUnicode_FromString(unwrap(self).key_set().str().c_str());
}

Py_hash_t tensor_hash(PyObject* self) { return _Py_HashPointer(self); }

PyGetSetDef tensor_getset[] = {
    {"shape", get_shape, nullptr, "The size of each dimension (ignis.Size).", nullptr},
    {"dtype", get_dtype, nullptr, "The element type.", nullptr},
    {"device", get_device, nullptr, "The device holding the data.", nullptr},
    {"ndim", get_ndim, nullptr, "Number of dimensions.", nullptr},
    {"is_cuda", get_is_cuda, nullptr, nullptr, nullptr},
    {"is_cpu", get_is_cpu, nullptr, nullptr, nullptr},
    {"is_meta", get_is_meta, nullptr, nullptr, nullptr},
    {"_is_fake", get_is_fake, nullptr, nullptr, nullptr},
    {"itemsize", get_itemsize, nullptr, nullptr, nullptr},
    {"_version", get_version, nullptr, "In-place write counter shared with views.", nullptr},
    {"__array_interface__", get_array_interface, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef tensor_methods[] = {
    {"dim", m_dim, METH_NOARGS, nullptr},
    {"ndimension", m_dim, METH_NOARGS, nullptr},
    {"numel", m_numel, METH_NOARGS, nullptr},
    {"nelement", m_numel, METH_NOARGS, nullptr},
    {"element_size", m_element_size, METH_NOARGS, nullptr},
    {"storage_offset", m_storage_offset, METH_NOARGS, nullptr},
    {"data_ptr", m_data_ptr, METH_NOARGS, nullptr},
    {"_storage_ptr", m_untyped_storage_ptr, METH_NOARGS, nullptr},
    {"_storage_nbytes", m_storage_nbytes, METH_NOARGS, nullptr},
    {"resize_", m_resize, METH_VARARGS, "Resizes the tensor in place (contiguous strides)."},
    {"is_contiguous", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(m_is_contiguous)),
     METH_VARARGS | METH_KEYWORDS, nullptr},
    {"is_floating_point", m_is_floating_point, METH_NOARGS, nullptr},
    {"is_inference", m_is_inference, METH_NOARGS, nullptr},
    {"size", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(m_size)),
     METH_FASTCALL | METH_KEYWORDS, nullptr},
    {"stride", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(m_stride)),
     METH_FASTCALL | METH_KEYWORDS, nullptr},
    {"item", m_item, METH_NOARGS, nullptr},
    {"_is_wrapped_number", m_is_wrapped_number, METH_NOARGS, nullptr},
    {"_dispatch_keys", m_key_set, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_tensor_type(PyObject* module) {
  static PyType_Slot slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(tensor_dealloc)},
      {Py_tp_new, reinterpret_cast<void*>(tensor_new)},
      {Py_tp_getset, tensor_getset},
      {Py_tp_methods, tensor_methods},
      {Py_tp_hash, reinterpret_cast<void*>(tensor_hash)},
      {Py_tp_doc, const_cast<char*>("Base of ignis.Tensor (implemented in C++).")},
      {0, nullptr},
  };
  static PyType_Spec spec = {"ignis._C.TensorBase", sizeof(PyTensor), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
  PyObject* type = PyType_FromSpec(&spec);
  if (!type) return false;
  TensorBaseType = reinterpret_cast<PyTypeObject*>(type);
  TensorClass = TensorBaseType;
  Py_INCREF(type);
  return PyModule_AddObject(module, "TensorBase", type) == 0;
}

}  // namespace ignis::py

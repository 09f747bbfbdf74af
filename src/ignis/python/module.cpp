// PyInit__C: the ignis._C extension module.
#include "ignis/capture/resume.h"
#include "ignis/core/out_of_memory.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/gemm.h"
#include "ignis/kernels/cpu/random.h"
#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/ops/op_def.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

void set_python_error() {
  try {
    throw;
  } catch (const PythonErrorAlreadySet&) {
  } catch (const OutOfMemoryError& e) {
    PyErr_SetString(OutOfMemoryErrorType, e.what());
  } catch (const Error& e) {
    PyObject* type = PyExc_RuntimeError;
    switch (e.kind()) {
      case ErrorKind::Value: type = PyExc_ValueError; break;
      case ErrorKind::Index: type = PyExc_IndexError; break;
      case ErrorKind::Type: type = PyExc_TypeError; break;
      case ErrorKind::NotImplemented: type = PyExc_NotImplementedError; break;
      case ErrorKind::LinAlg: type = LinAlgErrorType; break;
      default: break;
    }
    PyErr_SetString(type, e.what());
  } catch (const std::bad_alloc&) {
    PyErr_SetString(PyExc_MemoryError, "out of memory");
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
}

PyObject* LinAlgErrorType = nullptr;

namespace {

// _C.LinAlgError (torch.linalg.LinAlgError): what a factorization that
// cannot be completed raises.
bool init_linalg_error(PyObject* module) {
  LinAlgErrorType = PyErr_NewExceptionWithDoc(
      "ignis.linalg.LinAlgError",
      "A linear-algebra routine could not be completed: a singular or non-positive-definite "
      "input, or an iteration that did not converge (torch.linalg.LinAlgError).",
      PyExc_RuntimeError, nullptr);
  return LinAlgErrorType && PyModule_AddObjectRef(module, "LinAlgError", LinAlgErrorType) == 0;
}

PyObject* f_set_tensor_class(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), TensorBaseType)) {
    PyErr_SetString(PyExc_TypeError, "_set_tensor_class expects a subclass of TensorBase");
    return nullptr;
  }
  Py_INCREF(cls);
  TensorClass = reinterpret_cast<PyTypeObject*>(cls);
  Py_RETURN_NONE;
}

PyObject* f_set_size_class(PyObject*, PyObject* cls) {
  Py_INCREF(cls);
  SizeClass = cls;
  Py_RETURN_NONE;
}

// _make_subclass(cls, tensor): an instance of `cls` sharing tensor's data
// (how Parameter wraps a tensor).
PyObject* f_make_subclass(PyObject*, PyObject* args) {
  PyObject* cls;
  PyObject* t;
  if (!PyArg_ParseTuple(args, "OO", &cls, &t)) return nullptr;
  if (!PyType_Check(cls) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), TensorBaseType) ||
      !is_tensor(t)) {
    PyErr_SetString(PyExc_TypeError, "_make_subclass(cls, tensor): bad arguments");
    return nullptr;
  }
  IGNIS_PY_BEGIN
  const Tensor& src = unwrap(t);
  Tensor alias = make_view(src, src.sizes(), src.strides(), src.storage_offset());
  return wrap_as(reinterpret_cast<PyTypeObject*>(cls), std::move(alias));
  IGNIS_PY_END(nullptr)
}

// _set_data(t, other): t takes other's storage, geometry and dtype, keeping its
// autograd meta and version counter (Tensor.data's setter, torch's set_data).
PyObject* f_set_data(PyObject*, PyObject* args) {
  PyObject *t, *other;
  if (!PyArg_ParseTuple(args, "OO", &t, &other)) return nullptr;
  if (!is_tensor(t) || !is_tensor(other)) {
    PyErr_SetString(PyExc_TypeError, "Tensor.data must be set to a Tensor");
    return nullptr;
  }
  IGNIS_PY_BEGIN
  unwrap(t).impl()->set_data_from(*unwrap(other).impl());
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

// _bump_version(t): counts an in-place change of t made outside the ops
// (Tensor.set_ swapping its storage), so that autograd refuses a saved copy
// of the old values as it refuses one written in place.
PyObject* f_bump_version(PyObject*, PyObject* t) {
  if (!is_tensor(t)) {
    PyErr_SetString(PyExc_TypeError, "_bump_version: expected a Tensor");
    return nullptr;
  }
  unwrap(t).impl()->version_counter().bump();
  Py_RETURN_NONE;
}

// _from_buffer(owner, address, shape, byte_strides, dtype): a tensor over
// memory owned by `owner` (a NumPy array), which it keeps alive.
PyObject* f_from_buffer(PyObject*, PyObject* args) {
  PyObject *owner, *shape, *strides, *dtype;
  unsigned long long addr;
  if (!PyArg_ParseTuple(args, "OKOOO", &owner, &addr, &shape, &strides, &dtype)) return nullptr;
  IGNIS_PY_BEGIN
  ScalarType st;
  IGNIS_CHECK_TYPE(to_dtype(dtype, &st), "_from_buffer: bad dtype");
  int64_t isz = static_cast<int64_t>(element_size(st));
  Py_ssize_t nd = PySequence_Size(shape);
  DimVector sz(nd), sd(nd);
  int64_t extent = 1;
  bool empty = false;
  for (Py_ssize_t i = 0; i < nd; ++i) {
    PyObject* a = PySequence_GetItem(shape, i);
    PyObject* b = PySequence_GetItem(strides, i);
    sz[i] = PyLong_AsLongLong(a);
    int64_t bs = PyLong_AsLongLong(b);
    Py_DECREF(a);
    Py_DECREF(b);
    IGNIS_CHECK_VALUE(bs % isz == 0, "from_numpy: strides must be a multiple of the element size");
    IGNIS_CHECK_VALUE(bs >= 0, "At least one stride in the given numpy array is negative, and "
                      "tensors with negative strides are not currently supported. (You can "
                      "probably work around this by making a copy of your array with array.copy().)");
    sd[i] = bs / isz;
    if (sz[i] == 0) empty = true;
    extent += (sz[i] - 1) * sd[i];
  }
  if (empty) extent = 0;
  Py_INCREF(owner);
  auto deleter = [owner](void*) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF(owner);
    PyGILState_Release(g);
  };
  Storage storage = make_intrusive<StorageImpl>(reinterpret_cast<void*>(addr),
                                                static_cast<size_t>(extent) * isz,
                                                Device(DeviceType::CPU), deleter);
  storage->set_resizable(false);
  Tensor t(make_intrusive<TensorImpl>(std::move(storage), st, sz, sd, 0));
  return wrap(std::move(t));
  IGNIS_PY_END(nullptr)
}

PyObject* f_manual_seed(PyObject*, PyObject* seed) {
  IGNIS_PY_BEGIN
  int overflow = 0;
  long long s = PyLong_AsLongLongAndOverflow(seed, &overflow);
  if (PyErr_Occurred()) return nullptr;
  if (overflow) {
    unsigned long long u = PyLong_AsUnsignedLongLongMask(seed);
    s = static_cast<long long>(u);
  }
  default_generator().manual_seed(static_cast<uint64_t>(s));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_initial_seed(PyObject*, PyObject*) {
  return PyLong_FromUnsignedLongLong(default_generator().seed());
}

PyObject* f_get_rng_state(PyObject*, PyObject*) {
  auto st = default_generator().state();
  return Py_BuildValue("(KK)", static_cast<unsigned long long>(st.first),
                       static_cast<unsigned long long>(st.second));
}

PyObject* f_set_rng_state(PyObject*, PyObject* args) {
  unsigned long long seed, offset;
  if (!PyArg_ParseTuple(args, "KK", &seed, &offset)) return nullptr;
  default_generator().set_state(seed, offset);
  Py_RETURN_NONE;
}

PyObject* f_set_default_dtype(PyObject*, PyObject* d) {
  IGNIS_PY_BEGIN
  ScalarType st;
  IGNIS_CHECK_TYPE(to_dtype(d, &st), "set_default_dtype expects an ignis dtype");
  set_default_dtype(st);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_get_default_dtype(PyObject*, PyObject*) {
  PyObject* d = dtype_object(default_dtype());
  Py_INCREF(d);
  return d;
}

PyObject* f_promote_types(PyObject*, PyObject* args) {
  PyObject *a, *b;
  if (!PyArg_ParseTuple(args, "OO", &a, &b)) return nullptr;
  ScalarType x, y;
  if (!to_dtype(a, &x) || !to_dtype(b, &y)) {
    PyErr_SetString(PyExc_TypeError, "promote_types expects two dtypes");
    return nullptr;
  }
  PyObject* d = dtype_object(promote_types(x, y));
  Py_INCREF(d);
  return d;
}

PyObject* f_can_cast(PyObject*, PyObject* args) {
  PyObject *a, *b;
  if (!PyArg_ParseTuple(args, "OO", &a, &b)) return nullptr;
  ScalarType x, y;
  if (!to_dtype(a, &x) || !to_dtype(b, &y)) {
    PyErr_SetString(PyExc_TypeError, "can_cast expects two dtypes");
    return nullptr;
  }
  return PyBool_FromLong(can_cast(x, y));
}

PyObject* f_get_num_threads(PyObject*, PyObject*) { return PyLong_FromLong(get_num_threads()); }
PyObject* f_set_num_threads(PyObject*, PyObject* n) {
  IGNIS_PY_BEGIN
  long v = PyLong_AsLong(n);
  if (PyErr_Occurred()) return nullptr;
  set_num_threads(static_cast<int>(v));
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_gemm_choice(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  return PyUnicode_FromString(cpu::gemm_choice().c_str());
  IGNIS_PY_END(nullptr)
}

PyObject* f_op_table(PyObject*, PyObject*) { return build_op_table(); }

// _wrap_number(x): a Python number as a 0-dim "wrapped number" tensor (for
// reflected operators such as 2 / t, which promote like t / 2).
PyObject* f_wrap_number(PyObject*, PyObject* o) {
  IGNIS_PY_BEGIN
  if (is_tensor(o)) {
    Py_INCREF(o);
    return o;
  }
  if (!is_number(o)) {
    PyErr_Format(PyExc_TypeError, "unsupported operand type: %s", Py_TYPE(o)->tp_name);
    return nullptr;
  }
  Scalar s = to_scalar(o);
  Tensor t = s.is_float() ? scalar_to_tensor(s.to_double(), ScalarType::Float64, true)
                          : scalar_to_tensor_int(s.to_int(), s.natural_dtype(), true);
  return wrap(std::move(t));
  IGNIS_PY_END(nullptr)
}

// _dispatch_trace(fn): runs fn() with a recording boxed fallback on the
// TestLayer0 key included, returning the names of the ops that ran. Shows
// that a boxed fallback sees every op (tests and debugging).
PyObject* f_dispatch_trace(PyObject*, PyObject* fn) {
  IGNIS_PY_BEGIN
  auto names = std::make_shared<std::vector<std::string>>();
  Dispatcher::get().register_fallback(
      DispatchKey::TestLayer0, [names](const OpHandle& op, DispatchKeySet ks, Stack& s) {
        names->push_back(op.name());
        op.redispatch(ks.below(DispatchKey::TestLayer0), s);
      });
  PyObject* r;
  {
    IncludeDispatchKeyGuard g(DispatchKey::TestLayer0);
    r = PyObject_CallNoArgs(fn);
  }
  Dispatcher::get().register_fallback(DispatchKey::TestLayer0, nullptr);
  if (!r) return nullptr;
  Py_DECREF(r);
  PyObject* l = PyList_New(0);
  for (auto& n : *names) {
    PyObject* s = PyUnicode_FromString(n.c_str());
    PyList_Append(l, s);
    Py_DECREF(s);
  }
  return l;
  IGNIS_PY_END(nullptr)
}

PyMethodDef module_methods[] = {
    {"_set_tensor_class", f_set_tensor_class, METH_O, nullptr},
    {"_set_size_class", f_set_size_class, METH_O, nullptr},
    {"_make_subclass", f_make_subclass, METH_VARARGS, nullptr},
    {"_from_buffer", f_from_buffer, METH_VARARGS, nullptr},
    {"manual_seed", f_manual_seed, METH_O, "Seeds the default random generator."},
    {"initial_seed", f_initial_seed, METH_NOARGS, nullptr},
    {"get_rng_state", f_get_rng_state, METH_NOARGS, nullptr},
    {"set_rng_state", f_set_rng_state, METH_VARARGS, nullptr},
    {"set_default_dtype", f_set_default_dtype, METH_O, nullptr},
    {"get_default_dtype", f_get_default_dtype, METH_NOARGS, nullptr},
    {"promote_types", f_promote_types, METH_VARARGS, nullptr},
    {"can_cast", f_can_cast, METH_VARARGS, nullptr},
    {"get_num_threads", f_get_num_threads, METH_NOARGS, nullptr},
    {"set_num_threads", f_set_num_threads, METH_O, nullptr},
    {"_gemm_choice", f_gemm_choice, METH_NOARGS, nullptr},
    {"_op_table", f_op_table, METH_NOARGS, nullptr},
    {"_set_data", f_set_data, METH_VARARGS, nullptr},
    {"_bump_version", f_bump_version, METH_O, nullptr},
    {"_wrap_number", f_wrap_number, METH_O, nullptr},
    {"_dispatch_trace", f_dispatch_trace, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "ignis._C", "ignis C++ core", -1,
                          module_methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace
}  // namespace ignis::py

namespace ignis::py {
// py_autocast.cpp (declared here, its only caller, rather than in py_common.h).
bool init_autocast(PyObject* module);
}  // namespace ignis::py

PyMODINIT_FUNC PyInit__C() {
  using namespace ignis::py;
  try {
    ignis::register_all_ops();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return nullptr;
  if (!init_tensor_type(m) || !init_dtype_types(m) || !init_op_type(m) || !init_indexing(m) ||
      !init_graph(m) || !init_autograd(m) || !init_capture(m) || !init_decompose(m) ||
      !init_aot(m) || !init_compiler(m) || !init_memory(m) || !init_cuda(m) ||
      !init_cuda_blas(m) || !init_dlpack(m) || !init_autocast(m) || !init_profiler(m) ||
      !init_linalg_error(m)) {
    Py_DECREF(m);
    return nullptr;
  }
  if (!init_generator(m)) {  // _C.Generator, _C.default_generator
    Py_DECREF(m);
    return nullptr;
  }
  // _C._sanitized: built with ASan + UBSan at -O1 (./dev test --sanitize),
  // where a few tests' bitwise comparisons of eager and generated kernels
  // do not hold (their flags differ there).
#ifdef IGNIS_SANITIZED
  PyObject* sanitized = Py_True;
#else
  PyObject* sanitized = Py_False;
#endif
  if (PyModule_AddObjectRef(m, "_sanitized", sanitized) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  // _C._capture (temporary home of the resume-function test binding).
  PyObject* capture = PyObject_GetAttrString(m, "_capture");
  if (!capture) {
    PyErr_Clear();
    capture = PyModule_New("ignis._C._capture");
    if (!capture || PyModule_AddObjectRef(m, "_capture", capture) < 0) {
      Py_XDECREF(capture);
      Py_DECREF(m);
      return nullptr;
    }
  }
  bool ok = ignis::capture::init_resume_testing(capture);
  Py_DECREF(capture);
  if (!ok) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}

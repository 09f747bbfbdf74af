// Bindings of the CUDA runtime (src/ignis/cuda); argument conversion only.
// ignis.cuda wraps them. Streams cross as (device, handle) pairs of ints;
// events as capsules that own a cuda::Event.
//   _cuda_is_available(), _cuda_unavailable_reason(), _cuda_device_count()
//   _cuda_current_device(), _cuda_set_device(i), _cuda_synchronize(i)
//   _cuda_device_properties(i) -> (name, total_memory, multi_processor_count, major, minor)
//   _cuda_current_stream(i), _cuda_default_stream(i), _cuda_pool_stream(i) -> (device, handle)
//   _cuda_set_stream(device, handle), _cuda_stream_synchronize/_query(device, handle)
//   _cuda_event_new(enable_timing) -> capsule; _cuda_event_record/_wait(ev, device, handle)
//   _cuda_event_query/_synchronize(ev), _cuda_event_elapsed(start, end) -> ms
//   _cuda_memory_stats(i) -> dict, _cuda_empty_cache(), _cuda_reset_peak_memory_stats(i)
//   _cuda_record_stream(tensor, device, handle), _cuda_pin_memory(tensor), _cuda_is_pinned(t)
//   _cuda_kernel_cache_stats() -> dict, _cuda_nvrtc_version()
//   _cuda_eager_kernel_units() -> [(label, source, options, kernels)]
//   _cuda_nvrtc_compile(source, label, arch, options, ptx=False) -> cubin (or PTX) size
//   _cuda_precompile_eager_kernels(device, threads) -> kernels compiled into the disk cache
//   _cuda_flash_attention_unsupported(q, k, v, mask) -> None when SDPA on these
//     tensors runs the flash kernels, else why not (a str)
//   OutOfMemoryError (the exception type)
#include "ignis/cuda/device.h"
#include "ignis/cuda/graph.h"
#include "ignis/cuda/kernel_cache.h"
#include "ignis/cuda/memory.h"
#include "ignis/cuda/nvrtc.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cuda/flash_attention.h"
#include "ignis/kernels/cuda/kernel_catalog.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

PyObject* OutOfMemoryErrorType = nullptr;

namespace {

using cuda::Stream;

bool set_item(PyObject* d, const char* key, PyObject* v) {
  if (!v) return false;
  int rc = PyDict_SetItemString(d, key, v);
  Py_DECREF(v);
  return rc == 0;
}

PyObject* stream_tuple(const Stream& s) {
  return Py_BuildValue("(iK)", s.device, static_cast<unsigned long long>(s.id()));
}

bool parse_stream(PyObject* args, Stream* s, int first = 0) {
  int device;
  unsigned long long handle;
  PyObject* rest = PyTuple_GetSlice(args, first, first + 2);
  if (!rest) return false;
  bool ok = PyArg_ParseTuple(rest, "iK", &device, &handle);
  Py_DECREF(rest);
  if (!ok) return false;
  s->device = device;
  s->handle = reinterpret_cast<cuda::CUstream>(static_cast<uintptr_t>(handle));
  return true;
}

int int_arg(PyObject* o, bool* ok) {
  long v = PyLong_AsLong(o);
  *ok = !(v == -1 && PyErr_Occurred());
  return static_cast<int>(v);
}

PyObject* f_is_available(PyObject*, PyObject*) { return PyBool_FromLong(cuda::is_available()); }

PyObject* f_unavailable_reason(PyObject*, PyObject*) {
  return PyUnicode_FromString(cuda::unavailable_reason().c_str());
}

PyObject* f_device_count(PyObject*, PyObject*) { return PyLong_FromLong(cuda::device_count()); }

PyObject* f_current_device(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  cuda::check_device(cuda::current_device());
  return PyLong_FromLong(cuda::current_device());
  IGNIS_PY_END(nullptr)
}

PyObject* f_set_device(PyObject*, PyObject* o) {
  bool ok;
  int i = int_arg(o, &ok);
  if (!ok) return nullptr;
  IGNIS_PY_BEGIN
  cuda::set_device(i);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_synchronize(PyObject*, PyObject* o) {
  bool ok;
  int i = int_arg(o, &ok);
  if (!ok) return nullptr;
  IGNIS_PY_BEGIN
  cuda::synchronize(i);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_device_properties(PyObject*, PyObject* o) {
  bool ok;
  int i = int_arg(o, &ok);
  if (!ok) return nullptr;
  IGNIS_PY_BEGIN
  const cuda::DeviceProperties& p = cuda::device_properties(i);
  return Py_BuildValue("(sKiii)", p.name.c_str(), static_cast<unsigned long long>(p.total_memory),
                       p.multi_processor_count, p.major, p.minor);
  IGNIS_PY_END(nullptr)
}

template <Stream (*Fn)(int)>
PyObject* f_stream_of(PyObject*, PyObject* o) {
  bool ok;
  int i = int_arg(o, &ok);
  if (!ok) return nullptr;
  IGNIS_PY_BEGIN
  return stream_tuple(Fn(i));
  IGNIS_PY_END(nullptr)
}
Stream current_stream_of(int i) { return cuda::current_stream(i); }

PyObject* f_set_stream(PyObject*, PyObject* args) {
  Stream s;
  if (!parse_stream(args, &s)) return nullptr;
  IGNIS_PY_BEGIN
  cuda::set_current_stream(s);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_stream_synchronize(PyObject*, PyObject* args) {
  Stream s;
  if (!parse_stream(args, &s)) return nullptr;
  IGNIS_PY_BEGIN
  cuda::synchronize_stream(s);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_stream_query(PyObject*, PyObject* args) {
  Stream s;
  if (!parse_stream(args, &s)) return nullptr;
  IGNIS_PY_BEGIN
  return PyBool_FromLong(cuda::query_stream(s));
  IGNIS_PY_END(nullptr)
}

// ---- events ---------------------------------------------------------------------
const char* kEventCapsule = "ignis.cuda.Event";

void event_capsule_free(PyObject* cap) {
  delete static_cast<cuda::Event*>(PyCapsule_GetPointer(cap, kEventCapsule));
}

cuda::Event* event_of(PyObject* cap) {
  return static_cast<cuda::Event*>(PyCapsule_GetPointer(cap, kEventCapsule));
}

PyObject* f_event_new(PyObject*, PyObject* o) {
  int timing = PyObject_IsTrue(o);
  if (timing < 0) return nullptr;
  IGNIS_PY_BEGIN
  auto* e = new cuda::Event(timing != 0);
  PyObject* cap = PyCapsule_New(e, kEventCapsule, event_capsule_free);
  if (!cap) delete e;
  return cap;
  IGNIS_PY_END(nullptr)
}

PyObject* f_event_record(PyObject*, PyObject* args) {
  Stream s;
  if (PyTuple_Size(args) != 3 || !parse_stream(args, &s, 1)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "_cuda_event_record(ev, device, handle)");
    return nullptr;
  }
  cuda::Event* e = event_of(PyTuple_GET_ITEM(args, 0));
  if (!e) return nullptr;
  IGNIS_PY_BEGIN
  e->record(s);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_event_wait(PyObject*, PyObject* args) {
  Stream s;
  if (PyTuple_Size(args) != 3 || !parse_stream(args, &s, 1)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "_cuda_event_wait(ev, device, handle)");
    return nullptr;
  }
  cuda::Event* e = event_of(PyTuple_GET_ITEM(args, 0));
  if (!e) return nullptr;
  IGNIS_PY_BEGIN
  e->block(s);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_event_query(PyObject*, PyObject* cap) {
  cuda::Event* e = event_of(cap);
  if (!e) return nullptr;
  IGNIS_PY_BEGIN
  return PyBool_FromLong(e->query());
  IGNIS_PY_END(nullptr)
}

PyObject* f_event_synchronize(PyObject*, PyObject* cap) {
  cuda::Event* e = event_of(cap);
  if (!e) return nullptr;
  IGNIS_PY_BEGIN
  e->synchronize();
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_event_elapsed(PyObject*, PyObject* args) {
  PyObject *a, *b;
  if (!PyArg_ParseTuple(args, "OO", &a, &b)) return nullptr;
  cuda::Event* ea = event_of(a);
  cuda::Event* eb = ea ? event_of(b) : nullptr;
  if (!eb) return nullptr;
  IGNIS_PY_BEGIN
  return PyFloat_FromDouble(ea->elapsed_ms(*eb));
  IGNIS_PY_END(nullptr)
}

// ---- memory ---------------------------------------------------------------------
PyObject* f_memory_stats(PyObject*, PyObject* o) {
  bool ok;
  int i = int_arg(o, &ok);
  if (!ok) return nullptr;
  IGNIS_PY_BEGIN
  cuda::CachingAllocatorStats s = cuda::device_allocator(i).stats();
  const std::pair<const char*, int64_t> items[] = {
      {"allocated_bytes.all.current", s.allocated_bytes},
      {"allocated_bytes.all.peak", s.allocated_bytes_peak},
      {"requested_bytes.all.current", s.requested_bytes},
      {"requested_bytes.all.peak", s.requested_bytes_peak},
      {"reserved_bytes.all.current", s.reserved_bytes},
      {"reserved_bytes.all.peak", s.reserved_bytes_peak},
      {"active.all.current", s.active_blocks},
      {"segment.all.current", s.segments},
      {"inactive_split_bytes.all.current", s.inactive_split_bytes},
      {"num_device_alloc", s.device_allocs},
      {"num_device_free", s.device_frees},
      {"num_alloc_retries", s.alloc_retries},
      {"num_ooms", s.ooms},
      {"num_stream_migrations", s.stream_migrations},
  };
  PyObject* d = PyDict_New();
  if (!d) return nullptr;
  for (const auto& [k, v] : items) {
    if (!set_item(d, k, PyLong_FromLongLong(v))) {
      Py_DECREF(d);
      return nullptr;
    }
  }
  return d;
  IGNIS_PY_END(nullptr)
}

// ---- CUDA graphs (ignis.cuda.CUDAGraph, python/ignis/cuda/graphs.py) -------------

const char* kGraphCapsule = "ignis.cuda.CUDAGraph";

void graph_capsule_free(PyObject* cap) {
  delete static_cast<cuda::CudaGraph*>(PyCapsule_GetPointer(cap, kGraphCapsule));
}

cuda::CudaGraph* graph_of(PyObject* cap) {
  return static_cast<cuda::CudaGraph*>(PyCapsule_GetPointer(cap, kGraphCapsule));
}

PyObject* f_graph_new(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  auto* g = new cuda::CudaGraph();
  PyObject* cap = PyCapsule_New(g, kGraphCapsule, graph_capsule_free);
  if (!cap) delete g;
  return cap;
  IGNIS_PY_END(nullptr)
}

// _cuda_graph_capture_begin(graph, pool id (0: new), capture mode)
PyObject* f_graph_capture_begin(PyObject*, PyObject* args) {
  PyObject* cap;
  unsigned long long pool;
  int mode;
  if (!PyArg_ParseTuple(args, "OKi", &cap, &pool, &mode)) return nullptr;
  cuda::CudaGraph* g = graph_of(cap);
  if (!g) return nullptr;
  IGNIS_PY_BEGIN
  g->capture_begin(pool, mode);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

template <void (cuda::CudaGraph::*Method)()>
PyObject* f_graph_call(PyObject*, PyObject* cap) {
  cuda::CudaGraph* g = graph_of(cap);
  if (!g) return nullptr;
  IGNIS_PY_BEGIN
  (g->*Method)();
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_graph_abort(PyObject*, PyObject* cap) {
  cuda::CudaGraph* g = graph_of(cap);
  if (!g) return nullptr;
  g->abort_capture();
  Py_RETURN_NONE;
}

// (pool id, captured, capturing, replays)
PyObject* f_graph_state(PyObject*, PyObject* cap) {
  cuda::CudaGraph* g = graph_of(cap);
  if (!g) return nullptr;
  return Py_BuildValue("(KOOL)", static_cast<unsigned long long>(g->pool()),
                       g->captured() ? Py_True : Py_False, g->capturing() ? Py_True : Py_False,
                       static_cast<long long>(g->replays()));
}

PyObject* f_graph_pool_handle(PyObject*, PyObject*) {
  return PyLong_FromUnsignedLongLong(cuda::CachingAllocator::new_pool_id());
}

PyObject* f_stream_is_capturing(PyObject*, PyObject* args) {
  Stream s;
  if (!parse_stream(args, &s)) return nullptr;
  IGNIS_PY_BEGIN
  return PyBool_FromLong(cuda::stream_is_capturing(s));
  IGNIS_PY_END(nullptr)
}

// _cuda_pool_stats(device, pool) -> (uses, segments, reserved bytes, allocated bytes)
PyObject* f_pool_stats(PyObject*, PyObject* args) {
  int device;
  unsigned long long pool;
  if (!PyArg_ParseTuple(args, "iK", &device, &pool)) return nullptr;
  IGNIS_PY_BEGIN
  auto st = cuda::device_allocator(device).pool_stats(pool);
  return Py_BuildValue("(iLLL)", st.uses, static_cast<long long>(st.segments),
                       static_cast<long long>(st.reserved_bytes),
                       static_cast<long long>(st.allocated_bytes));
  IGNIS_PY_END(nullptr)
}

PyObject* f_empty_cache(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  for (int i = 0; i < cuda::device_count(); ++i) cuda::device_allocator(i).empty_cache();
  if (cuda::is_available()) cuda::empty_pinned_cache();
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_reset_peak(PyObject*, PyObject* o) {
  bool ok;
  int i = int_arg(o, &ok);
  if (!ok) return nullptr;
  IGNIS_PY_BEGIN
  cuda::device_allocator(i).reset_peak_stats();
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_record_stream(PyObject*, PyObject* args) {
  Stream s;
  if (PyTuple_Size(args) != 3 || !is_tensor(PyTuple_GET_ITEM(args, 0)) ||
      !parse_stream(args, &s, 1)) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_TypeError, "_cuda_record_stream(tensor, device, handle)");
    return nullptr;
  }
  IGNIS_PY_BEGIN
  cuda::record_stream(unwrap(PyTuple_GET_ITEM(args, 0)).impl()->storage(), s);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

// pin_memory(): a copy in page-locked host memory (the tensor itself when
// it already is pinned), laid out contiguously.
PyObject* f_pin_memory(PyObject*, PyObject* o) {
  if (!is_tensor(o)) {
    PyErr_SetString(PyExc_TypeError, "_cuda_pin_memory expects a tensor");
    return nullptr;
  }
  IGNIS_PY_BEGIN
  const Tensor& t = unwrap(o);
  IGNIS_CHECK(t.device().is_cpu(), "cannot pin '", t.device().str(),
              "' memory: only dense CPU tensors can be pinned");
  if (cuda::is_pinned(t.impl()->storage()->data())) {
    Py_INCREF(o);
    return o;
  }
  cuda::require_driver();
  IGNIS_CHECK(cuda::is_available(), "cannot pin memory: ", cuda::unavailable_reason());
  size_t n = static_cast<size_t>(t.numel()) * t.itemsize();
  Storage st = cuda::allocate_pinned_storage(n);
  auto impl = make_intrusive<TensorImpl>(st, t.dtype(), t.sizes(), contiguous_strides(t.sizes()), 0);
  Tensor out(std::move(impl));
  copy_tensor(out, t);
  return wrap(std::move(out));
  IGNIS_PY_END(nullptr)
}

PyObject* f_is_pinned(PyObject*, PyObject* o) {
  if (!is_tensor(o)) {
    PyErr_SetString(PyExc_TypeError, "_cuda_is_pinned expects a tensor");
    return nullptr;
  }
  const Tensor& t = unwrap(o);
  return PyBool_FromLong(t.device().is_cpu() && cuda::is_pinned(t.impl()->storage()->data()));
}

PyObject* f_kernel_cache_stats(PyObject*, PyObject*) {
  cuda::KernelCacheStats s = cuda::kernel_cache_stats();
  return Py_BuildValue("{s:K,s:K,s:K,s:K,s:d,s:d}", "memory_hits", s.memory_hits, "disk_hits",
                       s.disk_hits, "compiles", s.compiles, "rejected", s.rejected,
                       "compile_seconds", s.compile_seconds, "load_seconds", s.load_seconds);
}

PyObject* f_nvrtc_version(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  return Py_BuildValue("(is)", cuda::nvrtc_version(), cuda::nvrtc_library().c_str());
  IGNIS_PY_END(nullptr)
}

// Every eager kernel's source, grouped into NVRTC units (kernel_catalog.h).
PyObject* f_eager_kernel_units(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  std::vector<cuda::KernelUnit> units = cuda::eager_kernel_units();
  PyObject* list = PyList_New(0);
  for (const cuda::KernelUnit& u : units) {
    PyObject* opts = PyList_New(0);
    for (const std::string& o : u.request.options) {
      PyObject* s = PyUnicode_FromString(o.c_str());
      PyList_Append(opts, s);
      Py_DECREF(s);
    }
    PyObject* item = Py_BuildValue("(ss#Ni)", u.request.label.c_str(), u.request.source.data(),
                                   static_cast<Py_ssize_t>(u.request.source.size()), opts,
                                   u.kernels);
    PyList_Append(list, item);
    Py_DECREF(item);
  }
  return list;
  IGNIS_PY_END(nullptr)
}

// NVRTC alone (no GPU): compiles `source` for sm_<arch>; a compile error
// raises with NVRTC's log.
PyObject* f_flash_attention_unsupported(PyObject*, PyObject* args) {
  IGNIS_PY_BEGIN
  PyObject *q, *k, *v, *mask;
  if (!PyArg_ParseTuple(args, "OOOO", &q, &k, &v, &mask)) return nullptr;
  const char* why = cuda::flash_attention_unsupported(
      unwrap(q), unwrap(k), unwrap(v), mask == Py_None ? Tensor() : unwrap(mask));
  if (!why) Py_RETURN_NONE;
  return PyUnicode_FromString(why);
  IGNIS_PY_END(nullptr)
}

PyObject* f_nvrtc_compile(PyObject*, PyObject* args) {
  IGNIS_PY_BEGIN
  const char *source, *label;
  int arch;
  PyObject* opts;
  int ptx = 0;
  if (!PyArg_ParseTuple(args, "ssiO|p", &source, &label, &arch, &opts, &ptx)) return nullptr;
  std::vector<std::string> options;
  PyObject* it = PyObject_GetIter(opts);
  if (!it) return nullptr;
  while (PyObject* o = PyIter_Next(it)) {
    options.emplace_back(PyUnicode_AsUTF8(o));
    Py_DECREF(o);
  }
  Py_DECREF(it);
  std::string cubin;
  {
    PyThreadState* ts = PyEval_SaveThread();  // let tests compile units in parallel
    try {
      cubin = cuda::nvrtc_compile(source, label, arch, options,
                                  ptx ? cuda::NvrtcOutput::kPtx : cuda::NvrtcOutput::kCubin);
    } catch (...) {
      PyEval_RestoreThread(ts);
      throw;
    }
    PyEval_RestoreThread(ts);
  }
  return PyLong_FromSize_t(cubin.size());
  IGNIS_PY_END(nullptr)
}

// Compiles every eager kernel for device i into the disk cache, `threads`
// at a time (a warm-up before the GPU tests); returns how many compiled.
PyObject* f_precompile_eager_kernels(PyObject*, PyObject* args) {
  IGNIS_PY_BEGIN
  int device, threads;
  if (!PyArg_ParseTuple(args, "ii", &device, &threads)) return nullptr;
  std::vector<cuda::KernelRequest> requests;
  for (auto& [group, r] : cuda::eager_kernel_variants()) requests.push_back(std::move(r));
  int n;
  {
    PyThreadState* ts = PyEval_SaveThread();
    try {
      n = cuda::precompile(device, requests, threads);
    } catch (...) {
      PyEval_RestoreThread(ts);
      throw;
    }
    PyEval_RestoreThread(ts);
  }
  return PyLong_FromLong(n);
  IGNIS_PY_END(nullptr)
}

PyMethodDef functions[] = {
    {"_cuda_is_available", f_is_available, METH_NOARGS, nullptr},
    {"_cuda_unavailable_reason", f_unavailable_reason, METH_NOARGS, nullptr},
    {"_cuda_device_count", f_device_count, METH_NOARGS, nullptr},
    {"_cuda_current_device", f_current_device, METH_NOARGS, nullptr},
    {"_cuda_set_device", f_set_device, METH_O, nullptr},
    {"_cuda_synchronize", f_synchronize, METH_O, nullptr},
    {"_cuda_device_properties", f_device_properties, METH_O, nullptr},
    {"_cuda_current_stream", f_stream_of<current_stream_of>, METH_O, nullptr},
    {"_cuda_default_stream", f_stream_of<cuda::default_stream>, METH_O, nullptr},
    {"_cuda_pool_stream", f_stream_of<cuda::pool_stream>, METH_O, nullptr},
    {"_cuda_set_stream", f_set_stream, METH_VARARGS, nullptr},
    {"_cuda_stream_synchronize", f_stream_synchronize, METH_VARARGS, nullptr},
    {"_cuda_stream_query", f_stream_query, METH_VARARGS, nullptr},
    {"_cuda_event_new", f_event_new, METH_O, nullptr},
    {"_cuda_event_record", f_event_record, METH_VARARGS, nullptr},
    {"_cuda_event_wait", f_event_wait, METH_VARARGS, nullptr},
    {"_cuda_event_query", f_event_query, METH_O, nullptr},
    {"_cuda_event_synchronize", f_event_synchronize, METH_O, nullptr},
    {"_cuda_event_elapsed", f_event_elapsed, METH_VARARGS, nullptr},
    {"_cuda_memory_stats", f_memory_stats, METH_O, nullptr},
    {"_cuda_empty_cache", f_empty_cache, METH_NOARGS, nullptr},
    {"_cuda_graph_new", f_graph_new, METH_NOARGS, nullptr},
    {"_cuda_graph_capture_begin", f_graph_capture_begin, METH_VARARGS, nullptr},
    {"_cuda_graph_capture_end", f_graph_call<&cuda::CudaGraph::capture_end>, METH_O, nullptr},
    {"_cuda_graph_abort", f_graph_abort, METH_O, nullptr},
    {"_cuda_graph_replay", f_graph_call<&cuda::CudaGraph::replay>, METH_O, nullptr},
    {"_cuda_graph_reset", f_graph_call<&cuda::CudaGraph::reset>, METH_O, nullptr},
    {"_cuda_graph_state", f_graph_state, METH_O, nullptr},
    {"_cuda_graph_pool_handle", f_graph_pool_handle, METH_NOARGS, nullptr},
    {"_cuda_stream_is_capturing", f_stream_is_capturing, METH_VARARGS, nullptr},
    {"_cuda_pool_stats", f_pool_stats, METH_VARARGS, nullptr},
    {"_cuda_reset_peak_memory_stats", f_reset_peak, METH_O, nullptr},
    {"_cuda_record_stream", f_record_stream, METH_VARARGS, nullptr},
    {"_cuda_pin_memory", f_pin_memory, METH_O, nullptr},
    {"_cuda_is_pinned", f_is_pinned, METH_O, nullptr},
    {"_cuda_kernel_cache_stats", f_kernel_cache_stats, METH_NOARGS, nullptr},
    {"_cuda_nvrtc_version", f_nvrtc_version, METH_NOARGS, nullptr},
    {"_cuda_eager_kernel_units", f_eager_kernel_units, METH_NOARGS, nullptr},
    {"_cuda_nvrtc_compile", f_nvrtc_compile, METH_VARARGS, nullptr},
    {"_cuda_flash_attention_unsupported", f_flash_attention_unsupported, METH_VARARGS, nullptr},
    {"_cuda_precompile_eager_kernels", f_precompile_eager_kernels, METH_VARARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_cuda(PyObject* module) {
  if (PyModule_AddFunctions(module, functions) != 0) return false;
  OutOfMemoryErrorType = PyErr_NewExceptionWithDoc(
      "ignis.OutOfMemoryError",
      "A device allocation failed after the allocator released its cache and retried "
      "(torch.OutOfMemoryError). The message carries the allocator's numbers.",
      PyExc_RuntimeError, nullptr);
  if (!OutOfMemoryErrorType) return false;
  return PyModule_AddObjectRef(module, "OutOfMemoryError", OutOfMemoryErrorType) == 0;
}

}  // namespace ignis::py

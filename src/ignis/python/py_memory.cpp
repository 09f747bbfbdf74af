// Bindings of the CPU caching allocator (core/cpu_allocator.h); argument
// conversion only. ignis.cpu wraps them.
//   _C._cpu_memory_stats() -> dict of counters (torch.cuda.memory_stats' names)
//   _C._cpu_allocator_config() -> {"caching", "cache_limit", "min_cached_size", "malloc_tuned"}
//   _C._cpu_empty_cache(), _C._cpu_reset_peak_memory_stats()
//   _C._cpu_set_cache_limit(bytes) -> the previous limit
#include "ignis/core/cpu_allocator.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

namespace {

bool set_item(PyObject* d, const char* key, int64_t v) {
  PyObject* o = PyLong_FromLongLong(v);
  if (!o) return false;
  int rc = PyDict_SetItemString(d, key, o);
  Py_DECREF(o);
  return rc == 0;
}

PyObject* f_memory_stats(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  CpuAllocatorStats s = cpu_allocator().stats();
  const std::pair<const char*, int64_t> items[] = {
      {"allocated_bytes.all.current", s.allocated_bytes},
      {"allocated_bytes.all.peak", s.allocated_bytes_peak},
      {"reserved_bytes.all.current", s.reserved_bytes},
      {"reserved_bytes.all.peak", s.reserved_bytes_peak},
      {"cached_bytes.all.current", s.cached_bytes},
      {"cached_blocks.all.current", s.cached_blocks},
      {"num_cache_hits", s.cache_hits},
      {"num_cache_misses", s.cache_misses},
      {"num_cache_evictions", s.cache_evictions},
      {"num_alloc_retries", s.alloc_retries},
      {"num_ooms", s.ooms},
  };
  PyObject* d = PyDict_New();
  if (!d) return nullptr;
  for (const auto& [k, v] : items) {
    if (!set_item(d, k, v)) {
      Py_DECREF(d);
      return nullptr;
    }
  }
  return d;
  IGNIS_PY_END(nullptr)
}

PyObject* f_allocator_config(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  CpuAllocatorOptions o = cpu_allocator().options();
  return Py_BuildValue("{s:O,s:n,s:n,s:O}", "caching", o.caching ? Py_True : Py_False,
                       "cache_limit", static_cast<Py_ssize_t>(o.cache_limit), "min_cached_size",
                       static_cast<Py_ssize_t>(o.min_cached_size), "malloc_tuned",
                       o.malloc_tuned ? Py_True : Py_False);
  IGNIS_PY_END(nullptr)
}

PyObject* f_empty_cache(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  cpu_allocator().empty_cache();
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_reset_peak(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  cpu_allocator().reset_peak_stats();
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* f_set_cache_limit(PyObject*, PyObject* n) {
  IGNIS_PY_BEGIN
  long long v = PyLong_AsLongLong(n);
  if (v == -1 && PyErr_Occurred()) return nullptr;
  IGNIS_CHECK_VALUE(v >= 0, "the CPU cache limit must be >= 0 bytes, got ", v);
  return PyLong_FromSize_t(cpu_allocator().set_cache_limit(static_cast<size_t>(v)));
  IGNIS_PY_END(nullptr)
}

PyMethodDef functions[] = {
    {"_cpu_memory_stats", f_memory_stats, METH_NOARGS, nullptr},
    {"_cpu_allocator_config", f_allocator_config, METH_NOARGS, nullptr},
    {"_cpu_empty_cache", f_empty_cache, METH_NOARGS, nullptr},
    {"_cpu_reset_peak_memory_stats", f_reset_peak, METH_NOARGS, nullptr},
    {"_cpu_set_cache_limit", f_set_cache_limit, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_memory(PyObject* module) { return PyModule_AddFunctions(module, functions) == 0; }

}  // namespace ignis::py

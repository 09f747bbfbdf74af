// Bindings of the cuBLASLt loader and GEMM settings (cuda/cublaslt.h,
// cuda/blas.h); argument conversion only. ignis.backends.cuda.matmul and
// ignis.set_float32_matmul_precision wrap the TF32 switch.
//   _cuda_blas_allow_tf32() -> bool, _cuda_blas_set_allow_tf32(bool)
//   _cuda_blas_stats() -> {"plans", "plan_hits", "matmuls", "bias_epilogues", "no_algorithm",
//                          "activation_epilogues", "algorithms_timed", "algorithms_cached"}
//   _cublaslt_status() -> (loaded, path, reason): the process-wide loader,
//       which this call loads if it has not yet (never raises)
//   _cublaslt_probe(path) -> (loaded, reason, version): loads the library at
//       `path` alone and resolves the whole table (tests of the loader)
//   _cuda_gemm_prewarm_state(device, wait) -> "off" | "running" | "done" | "failed: ..."
//   _cuda_gemm_prewarm_join(): waits for every warm-up thread (Python's atexit)
#include "ignis/cuda/blas.h"
#include "ignis/cuda/cublaslt.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

namespace {

PyObject* f_allow_tf32(PyObject*, PyObject*) { return PyBool_FromLong(cuda::allow_tf32()); }

PyObject* f_set_allow_tf32(PyObject*, PyObject* o) {
  int on = PyObject_IsTrue(o);
  if (on < 0) return nullptr;
  cuda::set_allow_tf32(on != 0);
  Py_RETURN_NONE;
}

PyObject* f_stats(PyObject*, PyObject*) {
  cuda::BlasStats s = cuda::blas_stats();
  return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "plans", static_cast<long long>(s.plans),
                       "plan_hits", static_cast<long long>(s.plan_hits), "matmuls",
                       static_cast<long long>(s.matmuls), "bias_epilogues",
                       static_cast<long long>(s.bias_epilogues), "no_algorithm",
                       static_cast<long long>(s.no_algorithm), "activation_epilogues",
                       static_cast<long long>(s.activation_epilogues), "algorithms_timed",
                       static_cast<long long>(s.algorithms_timed), "algorithms_cached",
                       static_cast<long long>(s.algorithms_cached));
}

PyObject* f_status(PyObject*, PyObject*) {
  const cuda::CublasLtApi& api = cuda::cublaslt();
  return Py_BuildValue("(Nss)", PyBool_FromLong(api.is_loaded()), api.path.c_str(),
                       api.unavailable.c_str());
}

PyObject* f_probe(PyObject*, PyObject* path) {
  const char* p = PyUnicode_AsUTF8(path);
  if (!p) return nullptr;
  cuda::CublasLtApi api = cuda::load_cublaslt_from(p);
  unsigned long long version = api.is_loaded() ? api.cublasLtGetVersion() : 0;
  return Py_BuildValue("(NsK)", PyBool_FromLong(api.is_loaded()), api.unavailable.c_str(),
                       version);
}

PyObject* f_prewarm_state(PyObject*, PyObject* args) {
  int device = 0, wait = 0;
  if (!PyArg_ParseTuple(args, "ip", &device, &wait)) return nullptr;
  std::string state;
  Py_BEGIN_ALLOW_THREADS
  state = cuda::gemm_prewarm_state(device, wait != 0);
  Py_END_ALLOW_THREADS
  return PyUnicode_FromString(state.c_str());
}

PyObject* f_prewarm_join(PyObject*, PyObject*) {
  Py_BEGIN_ALLOW_THREADS
  cuda::join_gemm_prewarm();
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

PyMethodDef functions[] = {
    {"_cuda_blas_allow_tf32", f_allow_tf32, METH_NOARGS, "TF32 for float32 GEMMs on CUDA"},
    {"_cuda_blas_set_allow_tf32", f_set_allow_tf32, METH_O, "set TF32 for float32 GEMMs"},
    {"_cuda_blas_stats", f_stats, METH_NOARGS, "cuBLASLt plan cache counters"},
    {"_cublaslt_status", f_status, METH_NOARGS, "(loaded, path, reason)"},
    {"_cublaslt_probe", f_probe, METH_O, "(loaded, reason, version) for one library path"},
    {"_cuda_gemm_prewarm_state", f_prewarm_state, METH_VARARGS,
     "the background cuBLASLt warm-up's state for a device"},
    {"_cuda_gemm_prewarm_join", f_prewarm_join, METH_NOARGS, "waits for the warm-up threads"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

bool init_cuda_blas(PyObject* module) { return PyModule_AddFunctions(module, functions) == 0; }

}  // namespace ignis::py

#include "ignis/cuda/cublaslt.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "ignis/core/error.h"
#include "ignis/cuda/driver.h"

namespace ignis::cuda {

namespace {

std::vector<std::string> candidates() {
  return toolkit_library_candidates("IGNIS_CUBLASLT_LIBRARY", {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"});
}

// Resolves every entry point of an opened library into `api`.
void resolve(void* lib, CublasLtApi& api) {
#define IGNIS_CUBLASLT_RESOLVE(name, sig)                                                    \
  api.name = reinterpret_cast<std::add_pointer_t<sig>>(::dlsym(lib, #name));                 \
  if (!api.name) {                                                                           \
    api.unavailable = str(api.path, " has no symbol " #name " (cuBLASLt is older than ignis " \
                          "needs: 12.0 or later)");                                          \
    return;                                                                                  \
  }
  IGNIS_CUBLASLT_FUNCTIONS(IGNIS_CUBLASLT_RESOLVE)
#undef IGNIS_CUBLASLT_RESOLVE
}

// Opened once and never closed: the table's pointers live as long as the
// process. RTLD_LOCAL keeps cuBLASLt's symbols out of the global namespace
// (torch or CuPy may load another copy in the same process).
void* open(const std::string& path) { return ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL); }

CublasLtApi load() {
  CublasLtApi api;
#ifdef IGNIS_CUDA_DISABLED
  api.unavailable = "ignis was built without CUDA (IGNIS_CUDA=OFF)";
  return api;
#else
  std::string tried;
  for (const std::string& c : candidates()) {
    if (void* lib = open(c)) {
      api.path = c;
      resolve(lib, api);
      return api;
    }
    tried += (tried.empty() ? "" : ", ") + c;
  }
  api.unavailable = str("the cuBLASLt library (which ignis's GPU matrix products call) could "
                        "not be loaded; tried ", tried, ". Install the CUDA toolkit or the "
                        "nvidia-cublas package, or set IGNIS_CUBLASLT_LIBRARY to "
                        "libcublasLt.so's path");
  return api;
#endif
}

}  // namespace

CublasLtApi load_cublaslt_from(const std::string& path) {
  CublasLtApi api;
  api.path = path;
  void* lib = open(path);
  if (!lib) {
    const char* err = ::dlerror();
    api.unavailable = str("could not load ", path, " (", err ? err : "unknown error", ")");
    return api;
  }
  resolve(lib, api);
  return api;
}

const CublasLtApi& cublaslt() {
  // Never destroyed: a background thread may still use it while the
  // process exits (Note [cuBLASLt warmed in the background], blas.cpp).
  static const CublasLtApi* api = new CublasLtApi(load());
  return *api;
}

const CublasLtApi& require_cublaslt() {
  const CublasLtApi& api = cublaslt();
  IGNIS_CHECK(api.is_loaded(), "cuBLASLt is not available: ", api.unavailable);
  return api;
}

void throw_cublas_error(cublasStatus_t s, const char* what) {
  const CublasLtApi& api = cublaslt();
  const char* name = api.cublasLtGetStatusName ? api.cublasLtGetStatusName(s) : nullptr;
  const char* text = api.cublasLtGetStatusString ? api.cublasLtGetStatusString(s) : nullptr;
  IGNIS_FAIL("cuBLASLt error: ", name ? name : "CUBLAS_STATUS_UNKNOWN", " (",
             text ? text : "unrecognized status", ", code ", s, ") in ", what);
}

}  // namespace ignis::cuda

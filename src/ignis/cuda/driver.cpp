#include "ignis/cuda/driver.h"

#include <dlfcn.h>

#include <cstdlib>

#include "ignis/core/out_of_memory.h"

namespace ignis::cuda {

namespace {

DriverApi load() {
  DriverApi api;
#ifdef IGNIS_CUDA_DISABLED
  api.unavailable = "ignis was built without CUDA (IGNIS_CUDA=OFF)";
  return api;
#else
  // Opened once and never closed: the table's pointers live as long as the
  // process. RTLD_LOCAL keeps libcuda's symbols out of the global namespace.
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    api.unavailable = str("no CUDA GPUs are available: the NVIDIA driver library libcuda.so.1 "
                          "could not be loaded (", err ? err : "unknown error", ")");
    return api;
  }
#define IGNIS_CUDA_RESOLVE(name, symbol, sig)                                         \
  api.name = reinterpret_cast<std::add_pointer_t<sig>>(::dlsym(lib, symbol));                         \
  if (!api.name) {                                                                    \
    api.unavailable = str("the CUDA driver libcuda.so.1 has no symbol ", symbol,      \
                          " (the driver is older than ignis needs)");                \
    return api;                                                                       \
  }
  IGNIS_CUDA_DRIVER_FUNCTIONS(IGNIS_CUDA_RESOLVE)
#undef IGNIS_CUDA_RESOLVE
  api.init_result = api.cuInit(0);
  return api;
#endif
}

std::string error_text(const DriverApi& api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(r, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(r, &text);
  return str(name ? name : "CUDA_ERROR_UNKNOWN", " (", text ? text : "unrecognized error code",
             ", code ", r, ")");
}

}  // namespace

const DriverApi& driver() {
  static const DriverApi api = load();
  return api;
}

const DriverApi& require_driver() {
  const DriverApi& api = driver();
  IGNIS_CHECK(api.is_loaded(), "CUDA is not available: ", api.unavailable);
  if (api.init_result == CUDA_ERROR_NO_DEVICE)
    IGNIS_FAIL("CUDA is not available: no CUDA GPUs are available (cuInit: ",
               error_text(api, api.init_result), ")");
  if (api.init_result != CUDA_SUCCESS)
    IGNIS_FAIL("CUDA is not available: cuInit failed with ", error_text(api, api.init_result));
  return api;
}

void throw_driver_error(CUresult r, const char* what) {
  std::string msg = str("CUDA error: ", error_text(driver(), r), " in ", what);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) throw OutOfMemoryError(std::move(msg));
  throw Error(ErrorKind::Runtime, std::move(msg));
}

std::vector<std::string> toolkit_library_candidates(const char* env_var,
                                                    const std::vector<const char*>& names) {
  std::vector<std::string> c;
  if (const char* p = std::getenv(env_var)) c.emplace_back(p);
  for (const char* n : names) c.emplace_back(n);
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* p = std::getenv(var)) roots.emplace_back(p);
  roots.emplace_back("/usr/local/cuda");
  for (const auto& r : roots)
    for (const char* n : names) c.push_back(r + "/lib64/" + n);
  return c;
}

}  // namespace ignis::cuda

#include "ignis/cuda/nvrtc.h"

#include <algorithm>
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

#include "ignis/core/error.h"
#include "ignis/cuda/driver.h"

namespace ignis::cuda {

namespace {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

struct NvrtcApi {
  nvrtcResult (*version)(int*, int*) = nullptr;
  const char* (*error_string)(nvrtcResult) = nullptr;
  nvrtcResult (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                        const char* const*) = nullptr;
  nvrtcResult (*compile)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*log_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*log)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*cubin_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*cubin)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*ptx_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*ptx)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*destroy)(nvrtcProgram*) = nullptr;
  std::string path;
  std::string error;  // why it did not load
  int version_code = 0;
};

std::vector<std::string> candidates() {
  return toolkit_library_candidates("IGNIS_NVRTC_LIBRARY", {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"});
}

NvrtcApi load() {
  NvrtcApi api;
  void* lib = nullptr;
  std::string tried;
  for (const std::string& c : candidates()) {
    lib = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      api.path = c;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + c;
  }
  if (!lib) {
    api.error = str("NVRTC (the CUDA runtime compiler, which builds ignis's GPU kernels) could not "
                    "be loaded; tried ", tried, ". Install the CUDA toolkit or the "
                    "nvidia-cuda-nvrtc package, or set IGNIS_NVRTC_LIBRARY to libnvrtc.so's path");
    return api;
  }
  // NVRTC dlopens libnvrtc-builtins by name; a library outside the loader's
  // path (a pip wheel, $IGNIS_NVRTC_LIBRARY) would not find its neighbour, so
  // it is opened first from the same folder (a loaded soname satisfies the
  // later dlopen).
  std::filesystem::path dir = std::filesystem::path(api.path).parent_path();
  std::error_code ec;
  if (!dir.empty() && std::filesystem::is_directory(dir, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      std::string n = e.path().filename().string();
      if (n.rfind("libnvrtc-builtins.so", 0) == 0) ::dlopen(e.path().c_str(), RTLD_NOW | RTLD_LOCAL);
    }
  }
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
    if (!fn && api.error.empty()) api.error = str(api.path, " has no symbol ", name);
  };
  sym(api.version, "nvrtcVersion");
  sym(api.error_string, "nvrtcGetErrorString");
  sym(api.create, "nvrtcCreateProgram");
  sym(api.compile, "nvrtcCompileProgram");
  sym(api.log_size, "nvrtcGetProgramLogSize");
  sym(api.log, "nvrtcGetProgramLog");
  sym(api.cubin_size, "nvrtcGetCUBINSize");
  sym(api.cubin, "nvrtcGetCUBIN");
  sym(api.ptx_size, "nvrtcGetPTXSize");
  sym(api.ptx, "nvrtcGetPTX");
  sym(api.destroy, "nvrtcDestroyProgram");
  if (api.error.empty()) {
    int major = 0, minor = 0;
    api.version(&major, &minor);
    api.version_code = major * 1000 + minor * 10;
  }
  return api;
}

const NvrtcApi& api() {
  static const NvrtcApi a = load();
  IGNIS_CHECK(a.error.empty(), a.error);
  return a;
}

}  // namespace

int nvrtc_version() { return api().version_code; }
std::string nvrtc_library() { return api().path; }

std::string nvrtc_compile(const std::string& source, const std::string& name, int arch,
                          const std::vector<std::string>& options, NvrtcOutput output) {
  const NvrtcApi& a = api();
  const bool ptx = output == NvrtcOutput::kPtx;
  auto check = [&](nvrtcResult r, const char* what) {
    IGNIS_CHECK(r == 0, "NVRTC: ", what, " failed for ", name, ": ", a.error_string(r));
  };
  nvrtcProgram prog = nullptr;
  check(a.create(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  struct Destroy {
    const NvrtcApi& a;
    nvrtcProgram* p;
    ~Destroy() { a.destroy(p); }
  } destroy{a, &prog};
  // A request may name its own target (sm_90a for wgmma); else the device's.
  const bool own_target = std::any_of(options.begin(), options.end(), [](const std::string& o) {
    return o.rfind("--gpu-architecture=", 0) == 0;
  });
  std::vector<std::string> opts = {"--std=c++17"};
  if (!own_target) opts.push_back(str("--gpu-architecture=", ptx ? "compute_" : "sm_", arch));
  opts.insert(opts.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  nvrtcResult r = a.compile(prog, static_cast<int>(argv.size()), argv.data());
  if (r != 0) {
    size_t n = 0;
    a.log_size(prog, &n);
    std::string log(n, '\0');
    if (n) a.log(prog, log.data());
    IGNIS_FAIL("NVRTC could not compile ", name, " for ", ptx ? "compute_" : "sm_", arch, ": ", a.error_string(r), "\n",
               log);
  }
  size_t n = 0;
  check((ptx ? a.ptx_size : a.cubin_size)(prog, &n), ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize");
  std::string code(n, '\0');
  check((ptx ? a.ptx : a.cubin)(prog, code.data()), ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN");
  return code;
}

}  // namespace ignis::cuda

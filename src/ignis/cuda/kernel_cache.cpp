#include "ignis/cuda/kernel_cache.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <tuple>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/nvrtc.h"
#include "ignis/runtime/cache_dir.h"
#include "ignis/runtime/sha256.h"

namespace ignis::cuda {

namespace {

namespace fs = std::filesystem;

struct Cache {
  std::mutex mu;
  std::map<std::pair<std::string, int>, CUmodule> modules;  // (key, device)
  std::map<std::tuple<CUmodule, std::string>, CUfunction> functions;
  KernelCacheStats stats;
  fs::path dir;
};

Cache& cache() {
  static auto* c = new Cache();  // never destroyed: modules live with the process
  return *c;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string meta_text(const std::string& cubin) {
  return str(cubin.size(), " ", runtime::sha256_hex(cubin), "\n");
}

// The cubin of `key`: a valid disk entry, else compiled now and published.
std::string cubin_for(Cache& c, const std::string& key, const KernelRequest& r, int arch) {
  if (c.dir.empty()) c.dir = runtime::open_private_dir(runtime::default_cache_dir() / "cuda");
  fs::path sub = c.dir / key.substr(0, 2);
  fs::path cubin_path = sub / (key + ".cubin"), meta_path = sub / (key + ".meta");
  auto cubin = runtime::read_file(cubin_path);
  auto meta = runtime::read_file(meta_path);
  if (cubin && meta && *meta == meta_text(*cubin)) {
    ++c.stats.disk_hits;
    return *cubin;
  }
  if (cubin || meta) ++c.stats.rejected;
  auto t0 = std::chrono::steady_clock::now();
  std::string bin = nvrtc_compile(r.source, r.label, arch, r.options);
  c.stats.compile_seconds += seconds_since(t0);
  ++c.stats.compiles;
  runtime::make_dirs(sub);
  runtime::remove_stale_temps(sub);
  runtime::write_file_atomic(cubin_path, bin);
  runtime::write_file_atomic(meta_path, meta_text(bin));
  return bin;
}

// $IGNIS_CUDA_DUMP_SOURCES: a directory that receives each kernel's source
// as <symbol>.cu the first time it is requested in a process, replacing an
// older text of that name (for reading generated code,
// and for tests/cuda_fake, which compiles them as host C++).
void dump_source(const KernelRequest& r) {
  static const char* dir = std::getenv("IGNIS_CUDA_DUMP_SOURCES");
  if (!dir || !*dir) return;
  fs::path path = fs::path(dir) / (r.symbol + ".cu");
  if (auto old = runtime::read_file(path); old && *old == r.source) return;
  runtime::make_dirs(path.parent_path());
  runtime::write_file_atomic(path, r.source);
}

}  // namespace

CUfunction get_kernel(int device, const KernelRequest& r) {
  dump_source(r);
  const DeviceProperties& props = device_properties(device);
  int arch = props.major * 10 + props.minor;
  runtime::Sha256 h;
  h.update_field("ignis-cuda-kernel").update_field(std::to_string(kKernelCacheFormatVersion));
  h.update_field(std::to_string(nvrtc_version())).update_field(std::to_string(arch));
  for (const auto& o : r.options) h.update_field(o);
  h.update_field(r.source);
  std::string key = h.hex_digest();

  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  CUmodule& mod = c.modules[{key, device}];
  if (mod) {
    ++c.stats.memory_hits;
  } else {
    std::string bin = cubin_for(c, key, r, arch);
    DeviceGuard guard(device);
    auto t0 = std::chrono::steady_clock::now();
    IGNIS_CU(cuModuleLoadData(&mod, bin.data()));
    c.stats.load_seconds += seconds_since(t0);
  }
  CUfunction& f = c.functions[{mod, r.symbol}];
  if (!f) IGNIS_CU(cuModuleGetFunction(&f, mod, r.symbol.c_str()));
  return f;
}

KernelCacheStats kernel_cache_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.stats;
}

void launch_grid_stride(CUfunction f, int64_t n, void** args, const Stream& stream) {
  constexpr int64_t kBlock = 256;
  int64_t cap = int64_t(device_properties(stream.device).multi_processor_count) * 32;
  auto grid = static_cast<unsigned>(std::max<int64_t>(1, std::min(cap, (n + kBlock - 1) / kBlock)));
  IGNIS_CU(cuLaunchKernel(f, grid, 1, 1, unsigned(kBlock), 1, 1, 0, stream.handle, args, nullptr));
}

}  // namespace ignis::cuda

#include "ignis/cuda/kernel_cache.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
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
// Called without c.mu held (it takes it for the counters), so that threads
// compile different kernels at once; two threads compiling one key publish
// the same bytes, each by rename.
std::string cubin_for(Cache& c, const std::string& key, const KernelRequest& r, int arch) {
  fs::path dir;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.dir.empty()) c.dir = runtime::open_private_dir(runtime::default_cache_dir() / "cuda");
    dir = c.dir;
  }
  fs::path sub = dir / key.substr(0, 2);
  fs::path cubin_path = sub / (key + ".cubin"), meta_path = sub / (key + ".meta");
  auto cubin = runtime::read_file(cubin_path);
  auto meta = runtime::read_file(meta_path);
  if (cubin && meta && *meta == meta_text(*cubin)) {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.stats.disk_hits;
    return *cubin;
  }
  auto t0 = std::chrono::steady_clock::now();
  std::string bin = nvrtc_compile(r.source, r.label, arch, r.options);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (cubin || meta) ++c.stats.rejected;
    c.stats.compile_seconds += seconds_since(t0);
    ++c.stats.compiles;
  }
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
void dump_source(const std::string& source, const std::string& symbol) {
  static const char* dir = std::getenv("IGNIS_CUDA_DUMP_SOURCES");
  if (!dir || !*dir) return;
  fs::path path = fs::path(dir) / (symbol + ".cu");
  if (auto old = runtime::read_file(path); old && *old == source) return;
  runtime::make_dirs(path.parent_path());
  runtime::write_file_atomic(path, source);
}

int arch_of(int device) {
  const DeviceProperties& props = device_properties(device);
  return props.major * 10 + props.minor;
}

std::string key_of(const KernelRequest& r, int arch) {
  runtime::Sha256 h;
  h.update_field("ignis-cuda-kernel").update_field(std::to_string(kKernelCacheFormatVersion));
  h.update_field(std::to_string(nvrtc_version())).update_field(std::to_string(arch));
  for (const auto& o : r.options) h.update_field(o);
  h.update_field(r.source);
  return h.hex_digest();
}

// Function `symbol` of a loaded module, with the request's dynamic shared
// memory allowed when it needs over 48 KiB; c.mu held.
CUfunction function_locked(Cache& c, CUmodule mod, const std::string& symbol,
                           const KernelRequest& r) {
  CUfunction& f = c.functions[{mod, symbol}];
  if (!f) {
    IGNIS_CU(cuModuleGetFunction(&f, mod, symbol.c_str()));
    if (r.dynamic_shared_bytes > 48 * 1024)
      IGNIS_CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  r.dynamic_shared_bytes));
  }
  return f;
}

// Runs work(i) for i in [0, n) on up to `threads` threads (this one among
// them); the first exception is rethrown here once all have stopped.
void parallel_for(size_t n, int threads, const std::function<void(size_t)>& work) {
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto run = [&] {
    for (size_t i; (i = next++) < n;) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(std::max(1, threads), int(n)); ++t) pool.emplace_back(run);
  run();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

CUfunction get_kernel(int device, const KernelRequest& r) {
  return get_kernels(device, {r}, {{r.symbol}}, 1).front().front();
}

std::vector<std::vector<CUfunction>> get_kernels(
    int device, const std::vector<KernelRequest>& units,
    const std::vector<std::vector<std::string>>& symbols, int threads) {
  IGNIS_INTERNAL_ASSERT(units.size() == symbols.size(), "get_kernels: ", units.size(),
                        " units, ", symbols.size(), " symbol lists");
  const int arch = arch_of(device);
  Cache& c = cache();
  std::vector<std::string> keys;
  for (size_t i = 0; i < units.size(); ++i) {
    for (const std::string& symbol : symbols[i]) dump_source(units[i].source, symbol);
    keys.push_back(key_of(units[i], arch));
  }
  std::vector<size_t> missing;  // the units this process has not loaded
  {
    std::lock_guard<std::mutex> lock(c.mu);
    for (size_t i = 0; i < units.size(); ++i) {
      if (c.modules.count({keys[i], device}))
        ++c.stats.memory_hits;
      else
        missing.push_back(i);
    }
  }
  // Their cubins, from disk or NVRTC, several at once (unlocked: see
  // cubin_for); then loaded in order.
  std::vector<std::string> bins(units.size());
  parallel_for(missing.size(), threads, [&](size_t j) {
    bins[missing[j]] = cubin_for(c, keys[missing[j]], units[missing[j]], arch);
  });
  std::lock_guard<std::mutex> lock(c.mu);
  std::vector<std::vector<CUfunction>> out(units.size());
  for (size_t i = 0; i < units.size(); ++i) {
    CUmodule& mod = c.modules[{keys[i], device}];
    if (!mod) {  // (else loaded before, or by another thread meanwhile)
      DeviceGuard guard(device);
      auto t0 = std::chrono::steady_clock::now();
      IGNIS_CU(cuModuleLoadData(&mod, bins[i].data()));
      c.stats.load_seconds += seconds_since(t0);
    }
    for (const std::string& symbol : symbols[i])
      out[i].push_back(function_locked(c, mod, symbol, units[i]));
  }
  return out;
}

CUfunction get_named_kernel(int device, const std::string& name,
                            const std::function<KernelRequest()>& make) {
  using Key = std::pair<int, std::string>;
  static std::mutex mu;
  static auto* functions = new std::map<Key, CUfunction>();  // never destroyed
  Key key{device, name};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = functions->find(key);
    if (it != functions->end()) return it->second;
  }
  CUfunction f = get_kernel(device, make());  // unlocked: it may compile
  std::lock_guard<std::mutex> lock(mu);
  functions->emplace(std::move(key), f);
  return f;
}

int precompile(int device, const std::vector<KernelRequest>& requests, int threads) {
  const int arch = arch_of(device);
  nvrtc_version();  // loads NVRTC (or raises) before the threads start
  Cache& c = cache();
  const uint64_t before = kernel_cache_stats().compiles;
  parallel_for(requests.size(), threads,
               [&](size_t i) { cubin_for(c, key_of(requests[i], arch), requests[i], arch); });
  return static_cast<int>(kernel_cache_stats().compiles - before);
}

KernelCacheStats kernel_cache_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.stats;
}

void launch_strided(CUfunction f, int64_t blocks, int threads, void** args, const Stream& stream) {
  if (blocks <= 0) return;
  // Note [A block for each block's work]: every block the work asks for, up
  // to the grid's limit. Capping grid-stride kernels at 32 blocks a
  // multiprocessor (4224 on the H100) left a 2^26-element pointwise kernel
  // four rounds of blocks that each looped over 16 vectors, one load in
  // flight a thread: 190 us, 178 us with a block for each 256 vectors
  // (Triton's 177.9; eager's add 274.7 -> 262.0 us; docs/benchmarks.md run
  // 15). IGNIS_CUDA_GRID_CAP_PER_SM restores a cap, for A/B runs.
  static const int64_t per_sm = [] {
    const char* e = std::getenv("IGNIS_CUDA_GRID_CAP_PER_SM");
    return e ? std::max<int64_t>(1, std::atoll(e)) : int64_t(0);
  }();
  int64_t cap = (int64_t(1) << 31) - 1;
  if (per_sm > 0) cap = int64_t(device_properties(stream.device).multi_processor_count) * per_sm;
  auto grid = static_cast<unsigned>(std::min(cap, blocks));
  IGNIS_CU(cuLaunchKernel(f, grid, 1, 1, unsigned(threads), 1, 1, 0, stream.handle, args, nullptr));
}

int64_t one_round_blocks(CUfunction f, int threads, int device) {
  // Asked on eager calls (reductions, layer norm's backward): the driver's
  // answer for a loaded function is fixed, so it is asked once.
  static std::mutex mu;
  static std::map<std::tuple<CUfunction, int, int>, int64_t> known;
  const auto key = std::make_tuple(f, threads, device);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  int resident = 0;
  IGNIS_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&resident, f, threads, 0));
  const int64_t blocks =
      int64_t(device_properties(device).multi_processor_count) * std::max(resident, 1);
  std::lock_guard<std::mutex> lock(mu);
  known.emplace(key, blocks);
  return blocks;
}

void launch_grid_stride(CUfunction f, int64_t n, void** args, const Stream& stream) {
  constexpr int64_t kBlock = 256;
  launch_strided(f, std::max<int64_t>(1, (n + kBlock - 1) / kBlock), int(kBlock), args, stream);
}

}  // namespace ignis::cuda

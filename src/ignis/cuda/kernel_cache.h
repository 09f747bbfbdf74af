// GPU kernels from CUDA C++ source: compiled by NVRTC for the running GPU on
// first use, kept on disk, loaded with cuModuleLoadData.
//
// A request is keyed by the SHA-256 of the source, the NVRTC options, the
// NVRTC version, the GPU architecture and kKernelCacheFormatVersion. Look-up:
// this process's map of loaded modules; then the disk entry
//
//   <cache dir>/cuda/<key[0:2]>/<key>.cubin   the cubin
//   <cache dir>/cuda/<key[0:2]>/<key>.meta    its size and SHA-256, written last
//
// used only when the cubin matches its .meta; then NVRTC. Files are
// published by rename (runtime/cache_dir.h, Note [Cache files are published
// by rename]), so concurrent processes are safe and a torn entry is rebuilt.
// The cache directory is runtime/'s ($IGNIS_CACHE_DIR, else ~/.cache/ignis).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ignis/cuda/driver.h"
#include "ignis/cuda/stream.h"

namespace ignis::cuda {

inline constexpr int kKernelCacheFormatVersion = 1;

struct KernelRequest {
  std::string source;                // a whole translation unit
  std::string symbol;                // the extern "C" __global__ function to return
  std::string label;                 // names the kernel in errors
  std::vector<std::string> options;  // extra NVRTC options
  // Dynamic shared memory the kernel's launches use: over 48 KiB it must be
  // allowed on the function, which the cache does once as it loads it.
  int dynamic_shared_bytes = 0;
};

// The kernel on `device` (compiled or loaded once per process and device).
CUfunction get_kernel(int device, const KernelRequest& request);

// The kernels `symbols[i]` of translation unit `units[i]` (`symbol`
// unused), each unit's key hashed and its module looked up once: the units
// this process has not loaded are read from disk or compiled by up to
// `threads` threads at once, then loaded. A compiled graph's kernels come in
// a few such units (Note [A graph's CUDA in parts], compiled_graph.cpp).
std::vector<std::vector<CUfunction>> get_kernels(
    int device, const std::vector<KernelRequest>& units,
    const std::vector<std::vector<std::string>>& symbols, int threads);

// The kernel `name` stands for on `device`: `name` says everything its
// source depends on (the kernel's symbol, or more where one symbol has
// several sources), and `make` builds its request on the first call only,
// so a launch looks the function up by name without generating and hashing
// the source again. The one memo of every eager kernel family.
CUfunction get_named_kernel(int device, const std::string& name,
                            const std::function<KernelRequest()>& make);

// Compiles `requests` for `device`'s architecture into the disk cache
// without loading them, `threads` at a time: a warm-up, so that each one's
// first use is a disk hit. Returns how many were compiled (the rest were on
// disk already).
int precompile(int device, const std::vector<KernelRequest>& requests, int threads);

struct KernelCacheStats {
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;
  uint64_t compiles = 0;
  uint64_t rejected = 0;         // disk entries found invalid and rebuilt
  double compile_seconds = 0;    // in NVRTC
  double load_seconds = 0;       // in cuModuleLoadData
};
KernelCacheStats kernel_cache_stats();

// Launches a grid-stride kernel over `n` elements on `stream`: 256 threads a
// block, a block for each 256 elements. `args` points at each argument.
void launch_grid_stride(CUfunction f, int64_t n, void** args, const Stream& stream);

// Launches a kernel that strides over its work (so any grid is correct) with
// `threads` a block and `blocks` blocks (at most the grid's limit, 2^31 - 1;
// Note [A block for each block's work]); nothing when `blocks` is 0.
void launch_strided(CUfunction f, int64_t blocks, int threads, void** args, const Stream& stream);

// The blocks of f, `threads` each, that `device` runs at once: the driver's
// occupancy of the compiled kernel (its registers and shared memory) times
// the multiprocessors, at least one a multiprocessor. A kernel whose blocks
// each run a range of work in turn takes one such round.
int64_t one_round_blocks(CUfunction f, int threads, int device);

}  // namespace ignis::cuda

// Autotuning (mode="max-autotune"): for each kernel of a Program, the fastest
// of a few variants of the code generator's options, measured on buffers of
// the program's shapes on this machine.
//
// Variants differ in the thread count (all, half, one: small kernels often
// lose more to the fork than they gain) and, for row reductions, the number
// of accumulator lanes. Variants that print the same source are measured
// once. Every variant of the program compiles as one translation unit, the
// variants in parallel (CodeCache::compile_many). Each kernel then runs on
// freshly allocated buffers (random floats, zero integers: kernels never
// index by data, so any values are safe) until ~20 ms have passed; the
// fastest mean wins. Winners are kept on disk under the cache directory,
// keyed by the kernel's default source and the thread count, so a later
// process (or graph) with the same kernel skips the measurement.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ignis/compiler/loop_ir.h"
#include "ignis/runtime/code_cache.h"

namespace ignis::compiler {

struct AutotuneResult {
  std::vector<CompilerOptions> per_kernel;  // the winner of each kernel
  std::vector<std::string> report;          // one line per kernel
  bool measured = false;                    // false: every winner came from the disk cache
};

AutotuneResult autotune(const Program& p, const CompilerOptions& base, runtime::CodeCache& cache);

// Where a winner is kept: <cache_dir>/autotune/<key[:2]>/<key> (both
// autotuners' entries; their keys differ).
std::filesystem::path autotune_entry(const std::filesystem::path& cache_dir,
                                     const std::string& key);

// Buffers of the program's shapes on `device`, to time its kernels on: a
// tensor for each buffer the program allocates (undefined for eliminated
// ones), unfilled, and every buffer's data pointer (a buffer written in
// another's place has that one's). Both autotuners' (autotune_cuda.h).
struct ProgramBuffers {
  std::vector<Tensor> tensors;
  std::vector<char*> ptrs;
};
ProgramBuffers allocate_program_buffers(const Program& p, Device device);

}  // namespace ignis::compiler

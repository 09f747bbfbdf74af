// The C++ toolchain that builds generated kernels: which compiler, its
// version, the CPU it targets and the flags.
//
// Everything here that can change the machine code of a kernel is part of
// fingerprint(), which the code cache hashes into every key: a cache entry
// built by another compiler, for another CPU, or with other flags is never
// found, so it is never loaded.
#pragma once

#include <string>
#include <vector>

#include "ignis/runtime/cpu_info.h"

namespace ignis::runtime {

struct Toolchain {
  // The compiler command, possibly with a launcher in front ({"g++"},
  // {"ccache", "g++"}): $CXX split on blanks, else the first of c++, g++,
  // clang++ on PATH. Empty when there is none; compiling then throws.
  std::vector<std::string> compiler;
  // The first line of `<compiler> --version` ("g++ (Debian 12.2.0-14) 12.2.0").
  std::string version;
  bool is_clang = false;
  // Optimisation, numerics and target flags for every kernel (see
  // default_kernel_flags() and docs/code_cache.md for how they were chosen).
  std::vector<std::string> flags;
  // Turns on OpenMP ("-fopenmp"); added when a compile asks for OpenMP.
  std::string openmp_flag;
  // Build a loadable shared object.
  std::vector<std::string> shared_flags;
  // Where the ignis headers that generated code includes live (the source
  // tree's src/, so that `#include "ignis/kernels/scalar_ops.h"` resolves):
  // $IGNIS_INCLUDE_DIR, else the src/ of the tree this library was built from.
  std::vector<std::string> include_dirs;
  CpuInfo cpu;

  // The compiler, its version, the CPU and the flags, as one string: two
  // toolchains with equal fingerprints build the same machine code.
  std::string fingerprint() const;
};

// The flags that generated kernels are built with: the eager kernels' own
// (CMake's IGNIS_KERNEL_FLAGS: -O3 -fno-math-errno -fno-trapping-math
// -march=native) in the same language mode (-std=gnu++20), so that a
// scalar_ops.h formula compiles to the same instructions in both and gives
// the same bits. bench/compile_flags.cpp measured the alternatives (-O2,
// -O1, no -march, -ffp-contract=off); docs/code_cache.md has the table.
std::vector<std::string> default_kernel_flags();

// Detects the toolchain from the environment now ($CXX, $PATH,
// $IGNIS_INCLUDE_DIR). Runs `<compiler> --version` at most once per process
// per compiler command.
Toolchain detect_toolchain();

// The toolchain detected at first use; later changes to the environment are
// not seen.
const Toolchain& default_toolchain();

}  // namespace ignis::runtime

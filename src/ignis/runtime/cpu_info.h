// What the CPU running this process can execute: the vector ISA extensions
// that generated kernels may use (they pick their vector width from these)
// and that the code cache's key must cover (a kernel built with
// -march=native on one CPU may not run on another).
#pragma once

#include <string>
#include <vector>

namespace ignis::runtime {

struct CpuInfo {
  // "x86_64", "aarch64", ...
  std::string arch;
  // The vendor's model name ("Intel(R) Xeon(R) Platinum 8481C"), "" when unknown.
  // -march=native also tunes for the model, so the cache key includes it.
  std::string model;
  // Extensions the CPU and the OS both support, in a fixed order, spelt as
  // /proc/cpuinfo spells them: sse4_2 avx avx2 fma f16c avx512f avx512dq
  // avx512bw avx512vl avx512_bf16 avx512_fp16 amx_tile (x86); asimd sve (arm).
  std::vector<std::string> features;
  // The widest SIMD register usable for float math, in bits (128 baseline).
  int vector_bits = 128;
  // Everything -march=native reads, raw: on x86 the cpuid feature words
  // (leaves 1, 7, 7.1, 0x80000001), family/model/stepping and XCR0; elsewhere
  // /proc/cpuinfo's feature line and part number. Two CPUs with equal
  // `features` may still differ here (avx512vbmi, gfni, ...), and code built
  // with -march=native on one may then not run on the other.
  std::string signature;

  bool has(const std::string& feature) const;
  // "x86_64 <model> sse4_2 avx ... [<signature>]": the form the cache key hashes.
  std::string describe() const;
};

// Detected once per process (cpuid on x86, /proc/cpuinfo elsewhere).
const CpuInfo& cpu_info();

}  // namespace ignis::runtime

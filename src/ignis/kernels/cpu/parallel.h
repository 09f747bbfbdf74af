// How many threads a piece of CPU work gets.
//
// Every parallel region costs a wake-up of its workers (microseconds each,
// more when they sleep), so a region gets one thread per `grain` units of
// work, up to the thread count, as PyTorch's parallel_for does; small work
// runs on the calling thread. Nested regions run serially.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace ignis::cpu {

// Elements of elementwise work worth one thread (PyTorch's GRAIN_SIZE).
constexpr int64_t kGrain = 32768;

inline int threads_for(int64_t work, int64_t grain = kGrain) {
  if (work < grain || omp_in_parallel()) return 1;
  const int64_t max_threads = omp_get_max_threads();
  return static_cast<int>(std::min(max_threads, (work + grain - 1) / grain));
}

}  // namespace ignis::cpu

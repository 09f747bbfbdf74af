// How many threads a piece of CPU work gets.
//
// Work smaller than a `grain` runs on the calling thread, with no parallel
// region; larger work gets a team of every thread. Nothing in between: libgomp
// keeps one pool of workers sized by the last team, and a team smaller than
// the one before makes the surplus workers exit, so that the next full team
// creates them again -- a pthread_create each, serially on the calling thread
// (about 300 us for 15 workers on a 16-core host, more than most kernels
// take: every step of a small GPT's compiled forward cost that at 16 threads
// while eager ops, GEMMs and generated kernels alternated between 2-, 4- and
// 16-thread teams). Work that has fewer pieces than threads leaves the rest
// idle in its loop. Nested regions run serially.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace ignis::cpu {

// Elements of elementwise work worth one thread (PyTorch's GRAIN_SIZE).
constexpr int64_t kGrain = 32768;

// The team for work that has `useful` threads' worth of pieces: 1, or all.
inline int team_threads(int64_t useful) {
  return useful > 1 && !omp_in_parallel() ? omp_get_max_threads() : 1;
}

inline int threads_for(int64_t work, int64_t grain = kGrain) {
  return work < grain ? 1 : team_threads((work + grain - 1) / grain);
}

}  // namespace ignis::cpu

// The CPU caching allocator: host memory behind allocate_storage for cpu.
//
// A freshly mapped block costs a page fault per 4 KiB page on its first
// write, so an op writing a new 64 MiB output ran at 13-25% of copy
// bandwidth. This allocator keeps freed blocks in a cache keyed by size class
// and hands them to later requests of the same class, whose pages are already
// resident. See Note [CPU caching allocator] in cpu_allocator.cpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ignis {

struct CpuAllocatorOptions {
  // False: every block comes from aligned_alloc and goes back to free (for
  // sanitizers and debugging); the counters still run.
  bool caching = true;
  // Most bytes kept in cached (free) blocks; the oldest go first.
  size_t cache_limit = size_t(1) << 30;
  // Requests below this go straight to aligned_alloc/free.
  size_t min_cached_size = size_t(1) << 20;
  // Whether glibc's heap was told to keep freed memory (Note [Keeping
  // malloc's heap]): set when the process allocator is made.
  bool malloc_tuned = false;
};

// Counters, named after torch.cuda.memory_stats where one exists.
struct CpuAllocatorStats {
  int64_t allocated_bytes = 0;  // bytes of blocks held by live storages
  int64_t allocated_bytes_peak = 0;
  int64_t reserved_bytes = 0;  // allocated + cached: bytes taken from the system
  int64_t reserved_bytes_peak = 0;
  int64_t cached_bytes = 0;
  int64_t cached_blocks = 0;
  int64_t cache_hits = 0;       // cacheable requests served from the cache
  int64_t cache_misses = 0;     // cacheable requests that took fresh memory
  int64_t cache_evictions = 0;  // freed blocks released to respect the limit
  int64_t alloc_retries = 0;    // failed system allocations retried after emptying the cache
  int64_t ooms = 0;             // allocations that failed after any retry
};

class CpuCachingAllocator {
 public:
  explicit CpuCachingAllocator(CpuAllocatorOptions options);
  ~CpuCachingAllocator();  // releases the cache; blocks still live must not be freed later
  CpuCachingAllocator(const CpuCachingAllocator&) = delete;
  CpuCachingAllocator& operator=(const CpuCachingAllocator&) = delete;

  // A 64-byte aligned block of at least `nbytes` (> 0). `*block_size` gets its
  // size, which free() needs. Raises a RuntimeError when the system has no memory
  // left even after the cache was emptied.
  void* allocate(size_t nbytes, size_t* block_size);
  // Returns a block from allocate() with its block size. Thread-safe, as is
  // everything here.
  void free(void* p, size_t block_size);

  // Releases every cached block to the system.
  void empty_cache();
  // Sets the cache limit, evicting what no longer fits; returns the old one.
  size_t set_cache_limit(size_t bytes);

  CpuAllocatorStats stats() const;
  // Peaks restart from the current values.
  void reset_peak_stats();
  CpuAllocatorOptions options() const;

  // The size class of a request: the block size allocate() returns for it.
  size_t block_size_for(size_t nbytes) const;

 private:
  friend CpuCachingAllocator& cpu_allocator();  // holds mutex_ across fork()

  struct Cached {
    void* ptr;
    size_t size;
  };
  using Lru = std::list<Cached>;

  void* system_alloc(size_t size, bool cached_class);
  void system_free(void* p, size_t size, bool cached_class);
  // Releases the oldest cached blocks until cached bytes + `room` fit the limit.
  void evict_locked(size_t room);
  // Takes every block out of the cache, for release() after unlocking.
  std::vector<Cached> take_all_locked();
  void release(const std::vector<Cached>& blocks);
  void note_alloc(size_t size, bool fresh);
  void add_cached_locked(int64_t delta);

  CpuAllocatorOptions options_;
  mutable std::mutex mutex_;
  Lru lru_;  // cached blocks, oldest first
  // Per size class, that class's entries of lru_, oldest first.
  std::unordered_map<size_t, std::deque<Lru::iterator>> by_class_;
  // Written under mutex_, read without it.
  std::atomic<int64_t> cached_bytes_{0};

  // Counters change outside the mutex too (requests below min_cached_size
  // touch only allocated_ and the peaks). Reserved bytes are allocated +
  // cached: every change of one that is not a move to or from the other is a
  // system allocation or release.
  std::atomic<int64_t> allocated_{0}, allocated_peak_{0}, reserved_peak_{0};
  std::atomic<int64_t> hits_{0}, misses_{0}, evictions_{0}, retries_{0}, ooms_{0};
};

// The process-wide allocator used by allocate_storage. Its options come from
// the environment when it is first used:
//   IGNIS_CPU_ALLOCATOR=malloc      no caching (sanitizers, debugging)
//   IGNIS_CPU_CACHE_LIMIT_MB=N      cache limit in MiB (default: 1/8 of RAM)
// and, unless malloc is not cached or the user tuned glibc's malloc, it sets
// glibc's thresholds (Note [Keeping malloc's heap]).
// It is never destroyed, so storages freed during exit stay valid.
CpuCachingAllocator& cpu_allocator();

}  // namespace ignis

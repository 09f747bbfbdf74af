#include "ignis/core/cpu_allocator.h"

#include <pthread.h>
#include <sys/mman.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "ignis/core/error.h"

namespace ignis {

// Note [CPU caching allocator]
//
// Size classes. A request of at least `min_cached_size` bytes is rounded up
// to one of four classes per power of two (2^k, 1.25 * 2^k, 1.5 * 2^k,
// 1.75 * 2^k), so a block is at most 25% larger than asked for, and sizes
// that differ a little (a batch of 500 rows after batches of 512) share a
// class. Part of the waste is only address space: pages of a block that no
// tensor has written are never faulted in. The step of a class is at least
// a page, so every cached block is a whole number of pages, taken with mmap
// (page aligned, above the 64 bytes allocate_storage promises) and returned
// with munmap, never through malloc's heap.
//
// Small requests. Below `min_cached_size` (1 MiB) requests go straight to
// aligned_alloc/free, with no mutex: about 15 ns more than aligned_alloc for
// the counters. glibc's heap serves them without new page faults (measured:
// allocate + write + free of 4 KiB .. 1 MiB runs as fast as writing a
// reused buffer). glibc reuses larger blocks too, up to 32 MiB, but only
// once a block of that size has been freed (its dynamic mmap threshold), and
// always maps blocks above 32 MiB afresh: a 64 MiB allocate + write + free
// ran at 1/8 of the speed of the write alone. From 1 MiB the mutex costs
// under 0.1% of writing the block, so the cache takes every such request
// and its reuse does not depend on glibc's history.
//
// Reuse. A class keeps its free blocks oldest first; a request takes the
// newest one (its pages are the likeliest to be warm in the CPU caches).
// Only the exact class is reused: no splitting or merging of blocks, so no
// fragmentation bookkeeping and a hit costs a hash lookup under the mutex.
//
// Limit. Cached bytes never exceed `cache_limit`: a freed block that would
// overflow it first evicts the oldest cached blocks of any class (those that
// the running program has stopped asking for); a block larger than the
// limit is released at once. empty_cache() releases everything. When the
// system refuses a fresh block, the cache is released and the request
// retried once (num_alloc_retries) before raising.
//
// Threads. Tensors are freed by autograd's engine and inside OpenMP regions,
// so all cache state is under one mutex, held for list and map updates; a
// miss maps its block outside it, evictions unmap theirs under it (they need
// no memory then, and free() must not fail). Counters are relaxed atomics, since
// requests below the threshold never take the mutex; those cost one atomic
// add on allocation and one on free beyond aligned_alloc/free. The process
// allocator's mutex is held across fork() (pthread_atfork), as malloc's are.

namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kPage = 4096;
// Larger requests cannot be rounded to a class without overflow, nor be met.
constexpr size_t kMaxRequest = size_t(1) << 62;

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

void bump_peak(std::atomic<int64_t>& peak, int64_t value) {
  int64_t p = peak.load(std::memory_order_relaxed);
  while (value > p && !peak.compare_exchange_weak(p, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

CpuCachingAllocator::CpuCachingAllocator(CpuAllocatorOptions options) : options_(options) {}

CpuCachingAllocator::~CpuCachingAllocator() { empty_cache(); }

size_t CpuCachingAllocator::block_size_for(size_t nbytes) const {
  if (!options_.caching || nbytes < options_.min_cached_size) return round_up(nbytes, kAlignment);
  int log2 = 63 - __builtin_clzll(static_cast<unsigned long long>(nbytes));
  size_t step = (size_t(1) << log2) / 4;
  return round_up(nbytes, step < kPage ? kPage : step);
}

void* CpuCachingAllocator::system_alloc(size_t size, bool cached_class) {
  if (!cached_class) return std::aligned_alloc(kAlignment, size);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void CpuCachingAllocator::system_free(void* p, size_t size, bool cached_class) {
  if (cached_class)
    munmap(p, size);
  else
    std::free(p);
}

void CpuCachingAllocator::note_alloc(size_t size, bool fresh) {
  auto n = static_cast<int64_t>(size);
  int64_t allocated = allocated_.fetch_add(n, std::memory_order_relaxed) + n;
  bump_peak(allocated_peak_, allocated);
  // A hit moves bytes from cached to allocated: reserved stays.
  if (fresh) bump_peak(reserved_peak_, allocated + cached_bytes_.load(std::memory_order_relaxed));
}

void CpuCachingAllocator::add_cached_locked(int64_t delta) {
  cached_bytes_.store(cached_bytes_.load(std::memory_order_relaxed) + delta,
                      std::memory_order_relaxed);
}

void* CpuCachingAllocator::allocate(size_t nbytes, size_t* block_size) {
  IGNIS_INTERNAL_ASSERT(nbytes > 0);
  IGNIS_CHECK(nbytes <= kMaxRequest, "CPU out of memory: tried to allocate ", nbytes, " bytes");
  size_t size = block_size_for(nbytes);
  bool cached_class = options_.caching && size >= options_.min_cached_size;
  *block_size = size;
  if (cached_class) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_class_.find(size);
    if (it != by_class_.end() && !it->second.empty()) {
      Lru::iterator entry = it->second.back();
      it->second.pop_back();
      void* p = entry->ptr;
      lru_.erase(entry);
      add_cached_locked(-static_cast<int64_t>(size));
      hits_.fetch_add(1, std::memory_order_relaxed);
      note_alloc(size, false);
      return p;
    }
    misses_.fetch_add(1, std::memory_order_relaxed);
  }
  void* p = system_alloc(size, cached_class);
  if (!p) {
    std::vector<Cached> all;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      all = take_all_locked();
    }
    release(all);
    bool retry = !all.empty();
    if (retry) {
      retries_.fetch_add(1, std::memory_order_relaxed);
      p = system_alloc(size, cached_class);
    }
    if (!p) {
      ooms_.fetch_add(1, std::memory_order_relaxed);
      IGNIS_FAIL("CPU out of memory: tried to allocate ", nbytes, " bytes (",
                 allocated_.load(std::memory_order_relaxed), " bytes allocated by ignis",
                 retry ? "; its cache was emptied and the allocation retried)" : ")");
    }
  }
  note_alloc(size, true);
  return p;
}

void CpuCachingAllocator::free(void* p, size_t size) {
  if (!p) return;
  allocated_.fetch_sub(static_cast<int64_t>(size), std::memory_order_relaxed);
  bool cached_class = options_.caching && size >= options_.min_cached_size;
  if (!cached_class) {
    system_free(p, size, false);
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (size > options_.cache_limit) {
    system_free(p, size, true);  // never cached; counted as an eviction
    evictions_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  evict_locked(size);
  // free() runs in storage destructors: when there is no memory to record
  // the block (a list node), it is released instead of throwing.
  try {
    auto& q = by_class_[size];
    lru_.push_back({p, size});
    try {
      q.push_back(std::prev(lru_.end()));
    } catch (...) {
      lru_.pop_back();
      throw;
    }
  } catch (...) {
    system_free(p, size, true);
    return;
  }
  add_cached_locked(static_cast<int64_t>(size));
}

void CpuCachingAllocator::evict_locked(size_t room) {
  auto cached = [this] {
    return static_cast<size_t>(cached_bytes_.load(std::memory_order_relaxed));
  };
  while (!lru_.empty() && cached() + room > options_.cache_limit) {
    // The oldest block overall is the oldest of its class.
    Cached oldest = lru_.front();
    by_class_[oldest.size].pop_front();
    lru_.pop_front();
    add_cached_locked(-static_cast<int64_t>(oldest.size));
    system_free(oldest.ptr, oldest.size, true);
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::vector<CpuCachingAllocator::Cached> CpuCachingAllocator::take_all_locked() {
  std::vector<Cached> all(lru_.begin(), lru_.end());
  lru_.clear();
  by_class_.clear();
  cached_bytes_.store(0, std::memory_order_relaxed);
  return all;
}

void CpuCachingAllocator::release(const std::vector<Cached>& blocks) {
  for (const Cached& b : blocks) system_free(b.ptr, b.size, true);
}

void CpuCachingAllocator::empty_cache() {
  std::vector<Cached> all;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    all = take_all_locked();
  }
  release(all);
}

size_t CpuCachingAllocator::set_cache_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t old = options_.cache_limit;
  options_.cache_limit = bytes;
  evict_locked(0);
  return old;
}

CpuAllocatorOptions CpuCachingAllocator::options() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return options_;
}

CpuAllocatorStats CpuCachingAllocator::stats() const {
  CpuAllocatorStats s;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    s.cached_bytes = cached_bytes_.load(std::memory_order_relaxed);
    s.cached_blocks = static_cast<int64_t>(lru_.size());
  }
  auto get = [](const std::atomic<int64_t>& a) { return a.load(std::memory_order_relaxed); };
  s.allocated_bytes = get(allocated_);
  s.allocated_bytes_peak = get(allocated_peak_);
  s.reserved_bytes = s.allocated_bytes + s.cached_bytes;
  s.reserved_bytes_peak = std::max(get(reserved_peak_), s.reserved_bytes);
  s.cache_hits = get(hits_);
  s.cache_misses = get(misses_);
  s.cache_evictions = get(evictions_);
  s.alloc_retries = get(retries_);
  s.ooms = get(ooms_);
  return s;
}

void CpuCachingAllocator::reset_peak_stats() {
  allocated_peak_.store(allocated_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  reserved_peak_.store(allocated_.load(std::memory_order_relaxed) +
                           cached_bytes_.load(std::memory_order_relaxed),
                       std::memory_order_relaxed);
}

namespace {

CpuAllocatorOptions options_from_env() {
  CpuAllocatorOptions o;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) o.cache_limit = static_cast<size_t>(pages) * page / 8;
  if (const char* a = std::getenv("IGNIS_CPU_ALLOCATOR"); a && *a) {
    std::string v(a);
    IGNIS_CHECK_VALUE(v == "malloc" || v == "caching", "IGNIS_CPU_ALLOCATOR must be 'caching' ",
                      "(the default) or 'malloc' (no cache), not '", v, "'");
    o.caching = v == "caching";
  }
  if (const char* l = std::getenv("IGNIS_CPU_CACHE_LIMIT_MB"); l && *l) {
    char* end = nullptr;
    errno = 0;
    unsigned long long mb = std::strtoull(l, &end, 10);
    IGNIS_CHECK_VALUE(*end == '\0' && errno == 0 && l[0] != '-' && mb < (1ull << 40),
                      "IGNIS_CPU_CACHE_LIMIT_MB must be a number of MiB, not '", l, "'");
    o.cache_limit = static_cast<size_t>(mb) << 20;
  }
  return o;
}

}  // namespace

// Note [Keeping malloc's heap]
//
// Requests under min_cached_size come from glibc's heap, whose memory is
// only warm while glibc keeps it. By default it does not: a free that leaves
// more than M_TRIM_THRESHOLD bytes free at the top of a heap gives them back
// to the kernel (sbrk or madvise), and the next allocations fault the pages
// in again, zeroed. The threshold starts at 128 KiB and grows only to twice
// the largest mmapped chunk freed so far, which stays under 2 MiB here since
// the cache takes every larger request. A compiled training step frees its
// temporaries at once, so every step trimmed and refaulted them: measured
// (the example GPT, `bench/compiled.py`'s gpt_train, 2 threads on the
// 2-core VM), dropping one 64 KiB gradient in zero_grad took 0.25 to 4 ms,
// the munmap's TLB shootdown across the OpenMP threads included, and 7 to
// 30 us with the thresholds below; on the 16-core host the zero_grad phase
// took 0.34 to 0.56 ms against eager's 0.03.
//
// So the process allocator fixes the thresholds where glibc's own dynamic
// rule ends up after a 32 MiB chunk is freed, from the start: chunks under
// 32 MiB (glibc's cap for this threshold) come from the heap, and up to 64
// MiB free at a heap's top stays there. The cost is that memory, at most 64
// MiB per heap, not returned while the process runs. Setting a threshold
// turns glibc's dynamic rule off, so both are set or neither. Nothing is
// changed when the user tuned malloc (MALLOC_*_ environment variables or
// glibc.malloc tunables), when caching is off (IGNIS_CPU_ALLOCATOR=malloc:
// sanitizers replace malloc), or with another C library.
namespace {

bool user_tuned_malloc() {
  for (const char* v : {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
                        "MALLOC_MMAP_MAX_", "MALLOC_ARENA_MAX"})
    if (std::getenv(v)) return true;
  const char* t = std::getenv("GLIBC_TUNABLES");
  return t && std::string(t).find("glibc.malloc.") != std::string::npos;
}

bool keep_malloc_heap() {
#if defined(__GLIBC__)
  if (user_tuned_malloc()) return false;
  constexpr int kMmapThreshold = 32 << 20;
  return mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 &&
         mallopt(M_TRIM_THRESHOLD, 2 * kMmapThreshold) == 1;
#else
  return false;
#endif
}

}  // namespace

CpuCachingAllocator& cpu_allocator() {
  static CpuCachingAllocator* a = [] {
    CpuAllocatorOptions o = options_from_env();
    if (o.caching) o.malloc_tuned = keep_malloc_heap();
    auto* p = new CpuCachingAllocator(o);
    // A fork while another thread holds the mutex would leave it locked
    // forever in the child: hold it across fork() instead, as malloc does.
    pthread_atfork([] { cpu_allocator().mutex_.lock(); },
                   [] { cpu_allocator().mutex_.unlock(); },
                   [] { cpu_allocator().mutex_.unlock(); });
    return p;
  }();
  return *a;
}

}  // namespace ignis

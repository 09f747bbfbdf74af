// The CPU caching allocator (core/cpu_allocator.h). Each test owns its
// allocator, so the process-wide one behind tensors does not disturb counts.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "ignis/core/cpu_allocator.h"
#include "ignis/core/error.h"
#include "ignis/core/tensor.h"

using namespace ignis;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

CpuAllocatorOptions small_options(size_t limit = 64 * kMiB) {
  CpuAllocatorOptions o;
  o.cache_limit = limit;
  o.min_cached_size = 64 * 1024;
  return o;
}

bool aligned64(void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

}  // namespace

TEST(CpuAllocator, SizeClassesAreFourPerPowerOfTwo) {
  CpuCachingAllocator a(small_options());
  EXPECT_EQ(a.block_size_for(100), 128u);  // below the threshold: 64-byte rounding
  EXPECT_EQ(a.block_size_for(kMiB), kMiB);
  EXPECT_EQ(a.block_size_for(kMiB + 1), kMiB + kMiB / 4);
  EXPECT_EQ(a.block_size_for(kMiB + kMiB / 4 + 1), kMiB + kMiB / 2);
  EXPECT_EQ(a.block_size_for(2 * kMiB - 1), 2 * kMiB);
  EXPECT_EQ(a.block_size_for(64 * 1024 + 1) % 4096, 0u);  // whole pages
  CpuAllocatorOptions off = small_options();
  off.caching = false;
  EXPECT_EQ(CpuCachingAllocator(off).block_size_for(kMiB + 1), kMiB + 64);
}

TEST(CpuAllocator, FreedBlockOfTheSameClassIsReused) {
  CpuCachingAllocator a(small_options());
  size_t b1 = 0, b2 = 0, b3 = 0;
  void* p = a.allocate(3 * kMiB, &b1);
  ASSERT_TRUE(aligned64(p));
  std::memset(p, 1, 3 * kMiB);
  a.free(p, b1);
  void* q = a.allocate(3 * kMiB - 1000, &b2);  // same class
  EXPECT_EQ(q, p);
  EXPECT_EQ(b2, b1);
  void* r = a.allocate(5 * kMiB, &b3);  // another class: fresh memory
  EXPECT_NE(r, p);
  auto s = a.stats();
  EXPECT_EQ(s.cache_hits, 1);
  EXPECT_EQ(s.cache_misses, 2);
  EXPECT_EQ(s.allocated_bytes, int64_t(b2 + b3));
  a.free(q, b2);
  a.free(r, b3);
}

TEST(CpuAllocator, CountersFollowAllocationsAndFrees) {
  CpuCachingAllocator a(small_options());
  size_t bs = 0, bb = 0;
  void* small = a.allocate(1000, &bs);  // malloc path
  ASSERT_TRUE(aligned64(small));
  void* big = a.allocate(2 * kMiB, &bb);
  auto s = a.stats();
  EXPECT_EQ(bs, 1024u);
  EXPECT_EQ(s.allocated_bytes, int64_t(bs + bb));
  EXPECT_EQ(s.reserved_bytes, int64_t(bs + bb));
  EXPECT_EQ(s.cached_bytes, 0);
  a.free(big, bb);
  a.free(small, bs);
  s = a.stats();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.allocated_bytes_peak, int64_t(bs + bb));
  EXPECT_EQ(s.reserved_bytes, int64_t(bb));  // the big block is cached, the small one freed
  EXPECT_EQ(s.cached_bytes, int64_t(bb));
  EXPECT_EQ(s.cached_blocks, 1);
  EXPECT_EQ(s.cache_hits, 0);
  EXPECT_EQ(s.cache_misses, 1);  // small requests are neither hits nor misses
  a.reset_peak_stats();
  s = a.stats();
  EXPECT_EQ(s.allocated_bytes_peak, 0);
  EXPECT_EQ(s.reserved_bytes_peak, int64_t(bb));
  a.empty_cache();
  s = a.stats();
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.cached_blocks, 0);
}

TEST(CpuAllocator, CacheLimitIsRespected) {
  const size_t limit = 16 * kMiB;
  CpuCachingAllocator a(small_options(limit));
  std::mt19937 rng(0);
  std::uniform_int_distribution<size_t> dist(64 * 1024, 6 * kMiB);
  std::vector<std::pair<void*, size_t>> live;
  int64_t live_bytes = 0;
  for (int i = 0; i < 2000; ++i) {
    if (live.size() < 3 || (live.size() < 8 && rng() % 2)) {
      size_t b = 0;
      void* p = a.allocate(dist(rng), &b);
      live.push_back({p, b});
      live_bytes += int64_t(b);
    } else {
      size_t k = rng() % live.size();
      a.free(live[k].first, live[k].second);
      live_bytes -= int64_t(live[k].second);
      live.erase(live.begin() + k);
    }
    auto s = a.stats();
    ASSERT_LE(s.cached_bytes, int64_t(limit));
    ASSERT_EQ(s.allocated_bytes, live_bytes);
    ASSERT_EQ(s.reserved_bytes, live_bytes + s.cached_bytes);
  }
  EXPECT_GT(a.stats().cache_evictions, 0);
  EXPECT_GT(a.stats().cache_hits, 0);
  for (auto& [p, b] : live) a.free(p, b);
  EXPECT_LE(a.stats().reserved_bytes, int64_t(limit));
  // A block larger than the limit is never cached; lowering the limit evicts.
  size_t b = 0;
  void* p = a.allocate(limit + 1, &b);
  a.free(p, b);
  EXPECT_LE(a.stats().cached_bytes, int64_t(limit));
  a.set_cache_limit(0);
  EXPECT_EQ(a.stats().cached_bytes, 0);
  EXPECT_EQ(a.stats().reserved_bytes, 0);
}

TEST(CpuAllocator, EmptyCacheReleasesEverything) {
  CpuCachingAllocator a(small_options());
  std::vector<std::pair<void*, size_t>> blocks;
  for (size_t mb = 1; mb <= 6; ++mb) {
    size_t b = 0;
    blocks.push_back({a.allocate(mb * kMiB, &b), b});
  }
  for (auto& [p, b] : blocks) a.free(p, b);
  EXPECT_EQ(a.stats().cached_blocks, 6);
  a.empty_cache();
  auto s = a.stats();
  EXPECT_EQ(s.cached_blocks, 0);
  EXPECT_EQ(s.cached_bytes, 0);
  EXPECT_EQ(s.reserved_bytes, 0);
}

TEST(CpuAllocator, FailedAllocationEmptiesTheCacheRetriesAndRaises) {
  CpuCachingAllocator a(small_options());
  size_t b = 0;
  void* p = a.allocate(2 * kMiB, &b);
  a.free(p, b);
  ASSERT_EQ(a.stats().cached_blocks, 1);
  try {
    a.allocate(size_t(1) << 60, &b);  // no system can map an exabyte
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CPU out of memory"), std::string::npos) << e.what();
  }
  auto s = a.stats();
  EXPECT_EQ(s.alloc_retries, 1);
  EXPECT_EQ(s.ooms, 1);
  EXPECT_EQ(s.cached_blocks, 0);
}

TEST(CpuAllocator, MallocModeCachesNothing) {
  CpuAllocatorOptions o = small_options();
  o.caching = false;
  CpuCachingAllocator a(o);
  size_t b = 0;
  void* p = a.allocate(4 * kMiB, &b);
  ASSERT_TRUE(aligned64(p));
  a.free(p, b);
  auto s = a.stats();
  EXPECT_EQ(s.cached_blocks, 0);
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.allocated_bytes_peak, int64_t(4 * kMiB));
}

TEST(CpuAllocator, ThreadsAllocateAndFreeConcurrently) {
  const size_t limit = 32 * kMiB;
  CpuCachingAllocator a(small_options(limit));
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  // Some blocks are freed by another thread than the one that allocated them,
  // as autograd's engine and OpenMP workers do.
  std::mutex pool_mutex;
  std::vector<std::pair<void*, size_t>> pool;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<void*, size_t>> mine;
      for (int i = 0; i < 3000; ++i) {
        unsigned r = rng() % 8;
        if (r < 4 && mine.size() < 4) {
          size_t n = rng() % 2 ? 200 + rng() % 4000 : 64 * 1024 + rng() % (2 * kMiB);
          size_t b = 0;
          auto* p = static_cast<unsigned char*>(a.allocate(n, &b));
          p[0] = p[n - 1] = static_cast<unsigned char>(t);
          mine.push_back({p, b});
        } else if (r == 4 && !mine.empty()) {
          std::lock_guard<std::mutex> g(pool_mutex);
          pool.push_back(mine.back());
          mine.pop_back();
        } else if (r == 5) {
          std::pair<void*, size_t> blk{nullptr, 0};
          {
            std::lock_guard<std::mutex> g(pool_mutex);
            if (!pool.empty()) {
              blk = pool.back();
              pool.pop_back();
            }
          }
          a.free(blk.first, blk.second);
        } else if (!mine.empty()) {
          auto [p, b] = mine.back();
          mine.pop_back();
          EXPECT_EQ(static_cast<unsigned char*>(p)[0], static_cast<unsigned char>(t));
          a.free(p, b);
        }
      }
      for (auto& [p, b] : mine) a.free(p, b);
    });
  }
  for (auto& th : threads) th.join();
  for (auto& [p, b] : pool) a.free(p, b);
  auto s = a.stats();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.reserved_bytes, s.cached_bytes);
  EXPECT_LE(s.cached_bytes, int64_t(limit));
  EXPECT_GT(s.cache_hits, 0);
}

TEST(CpuAllocator, TensorsUseTheProcessAllocator) {
  CpuCachingAllocator& a = cpu_allocator();
  int64_t before = a.stats().allocated_bytes;
  void* first;
  {
    Tensor t = empty_tensor({4, 1024, 1024}, ScalarType::Float32, Device(DeviceType::CPU));
    first = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    EXPECT_EQ(a.stats().allocated_bytes, before + int64_t(16 * kMiB));
  }
  EXPECT_EQ(a.stats().allocated_bytes, before);
  if (a.options().caching && a.options().cache_limit >= 16 * kMiB) {
    Tensor t = empty_tensor({16 * 1024 * 1024}, ScalarType::UInt8, Device(DeviceType::CPU));
    EXPECT_EQ(t.data_ptr(), first);
  }
}

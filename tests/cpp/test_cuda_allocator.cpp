// The CUDA caching allocator's bookkeeping (cuda/caching_allocator.h),
// driven by a fake device: addresses from a counter, a capacity, and events
// the test completes by hand. Runs on machines with no GPU.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "ignis/core/out_of_memory.h"
#include "ignis/cuda/caching_allocator.h"

using namespace ignis;
using namespace ignis::cuda;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

// A device with `capacity` bytes. Segments never overlap; events complete
// when the test calls finish(stream) or when the allocator waits on them.
struct FakeDevice {
  size_t capacity;
  size_t used = 0;
  uintptr_t next_address = 0x10000000;
  std::map<uintptr_t, size_t> live;  // segment address -> bytes
  struct Ev {
    StreamId stream;
    bool done;
  };
  std::map<EventId, Ev> events;
  EventId next_event = 1;
  int waits = 0;
  // Set while a capture runs: a real capture forbids every call but
  // cuMemAlloc (Note [Private pools for CUDA graphs]).
  bool only_alloc_allowed = false;
  void check_allowed(const char* what) const {
    if (only_alloc_allowed) ADD_FAILURE() << what << " during a capture";
  }

  void finish(StreamId s) {
    for (auto& [id, e] : events)
      if (e.stream == s) e.done = true;
  }
};

class FakeBackend : public DeviceMemoryBackend {
 public:
  explicit FakeBackend(FakeDevice* d) : d_(d) {}
  void* allocate(size_t bytes) override {
    if (d_->used + bytes > d_->capacity) return nullptr;
    d_->used += bytes;
    uintptr_t a = d_->next_address;
    d_->next_address += bytes + 4096;  // a gap: segments are never neighbours
    d_->live[a] = bytes;
    return reinterpret_cast<void*>(a);
  }
  void release(void* p, size_t bytes) override {
    d_->check_allowed("release");
    auto it = d_->live.find(reinterpret_cast<uintptr_t>(p));
    ASSERT_NE(it, d_->live.end());
    ASSERT_EQ(it->second, bytes);
    d_->used -= bytes;
    d_->live.erase(it);
  }
  EventId record_event(StreamId s) override {
    d_->check_allowed("record_event");
    EventId id = d_->next_event++;
    d_->events[id] = {s, false};
    return id;
  }
  bool event_done(EventId e) override {
    d_->check_allowed("event_done");
    return d_->events.at(e).done;
  }
  void wait_event(EventId e) override {
    d_->check_allowed("wait_event");
    ++d_->waits;
    d_->events.at(e).done = true;
  }
  void destroy_event(EventId e) override {
    d_->check_allowed("destroy_event");
    ASSERT_EQ(d_->events.erase(e), 1u); }
  std::pair<size_t, size_t> memory_info() override {
    return {d_->capacity - d_->used, d_->capacity};
  }

 private:
  FakeDevice* d_;
};

struct Fixture {
  FakeDevice dev;
  CachingAllocator alloc;
  explicit Fixture(size_t capacity = 1024 * kMiB)
      : dev{capacity}, alloc(std::make_unique<FakeBackend>(&dev), 0) {}
};

constexpr StreamId kS0 = 0, kS1 = 0x100, kS2 = 0x200;

char* at(void* p, size_t off) { return static_cast<char*>(p) + off; }

}  // namespace

TEST(CudaAllocator, RoundsToBlocksAndSegments) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::segment_size(512), 2 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(kMiB), 2 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * kMiB + 512), 12 * kMiB);
}

TEST(CudaAllocator, SmallBlocksSplitOneSegment) {
  Fixture f;
  void* a = f.alloc.allocate(1000, kS0);
  void* b = f.alloc.allocate(100, kS0);
  EXPECT_EQ(b, at(a, 1024));  // the remainder of a's segment
  auto s = f.alloc.stats();
  EXPECT_EQ(s.segments, 1);
  EXPECT_EQ(s.reserved_bytes, int64_t(2 * kMiB));
  EXPECT_EQ(s.allocated_bytes, 1024 + 512);
  EXPECT_EQ(s.requested_bytes, 1100);
  EXPECT_EQ(s.inactive_split_bytes, int64_t(2 * kMiB) - 1536);
  EXPECT_EQ(s.device_allocs, 1);
  f.alloc.free(a);
  f.alloc.free(b);
}

TEST(CudaAllocator, FreedBlockIsReusedOnItsStream) {
  Fixture f;
  void* a = f.alloc.allocate(4096, kS0);
  f.alloc.free(a);
  void* b = f.alloc.allocate(4000, kS0);
  EXPECT_EQ(a, b);
  EXPECT_EQ(f.alloc.stats().device_allocs, 1);
  f.alloc.free(b);
}

TEST(CudaAllocator, NeighboursCoalesceAndEmptyCacheReleases) {
  Fixture f;
  void* a = f.alloc.allocate(512, kS0);
  void* b = f.alloc.allocate(512, kS0);
  void* c = f.alloc.allocate(512, kS0);
  f.alloc.free(a);
  f.alloc.free(c);
  f.alloc.empty_cache();  // the segment is still partly in use
  EXPECT_EQ(f.alloc.stats().segments, 1);
  f.alloc.free(b);  // merges with both neighbours: one free segment
  auto s = f.alloc.stats();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.inactive_split_bytes, 0);
  // The whole segment is one block again: a 1 MiB request takes it from its start.
  void* d = f.alloc.allocate(kMiB, kS0);
  EXPECT_EQ(d, a);
  f.alloc.free(d);
  f.alloc.empty_cache();
  s = f.alloc.stats();
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.segments, 0);
  EXPECT_EQ(s.device_frees, 1);
  EXPECT_TRUE(f.dev.live.empty());
}

TEST(CudaAllocator, LargePoolSplitsOnlyBigRemainders) {
  Fixture f;
  void* a = f.alloc.allocate(5 * kMiB, kS0);  // a 20 MiB segment, 15 MiB left free
  auto s = f.alloc.stats();
  EXPECT_EQ(s.reserved_bytes, int64_t(20 * kMiB));
  EXPECT_EQ(s.allocated_bytes, int64_t(5 * kMiB));
  void* b = f.alloc.allocate(14 * kMiB + kMiB / 2, kS0);  // leaves 0.5 MiB: not split
  EXPECT_EQ(b, at(a, 5 * kMiB));
  EXPECT_EQ(f.alloc.stats().allocated_bytes, int64_t(20 * kMiB));
  EXPECT_EQ(f.alloc.stats().inactive_split_bytes, 0);
  // Small and large requests never share a segment.
  void* c = f.alloc.allocate(512, kS0);
  EXPECT_EQ(f.alloc.stats().segments, 2);
  for (void* p : {a, b, c}) f.alloc.free(p);
}

TEST(CudaAllocator, OtherStreamWaitsForTheOwnersEvent) {
  Fixture f;
  const size_t n = 12 * kMiB;  // a whole segment each
  void* a = f.alloc.allocate(n, kS1);
  f.alloc.free(a);
  // s1's work may still use a: s2 gets a new segment.
  void* b = f.alloc.allocate(n, kS2);
  EXPECT_NE(b, a);
  EXPECT_EQ(f.alloc.stats().segments, 2);
  // Once s1's work (recorded after the free) is done, the segment moves to s2.
  f.dev.finish(kS1);
  void* c = f.alloc.allocate(n, kS2);
  EXPECT_EQ(c, a);
  auto s = f.alloc.stats();
  EXPECT_EQ(s.segments, 2);
  EXPECT_EQ(s.stream_migrations, 1);
  // ... and now belongs to s2: freed there it is reused there at once.
  f.alloc.free(c);
  void* d = f.alloc.allocate(n, kS2);
  EXPECT_EQ(d, a);
  f.alloc.free(d);
  f.alloc.free(b);
}

TEST(CudaAllocator, RecordStreamDelaysReuseUntilItsEvent) {
  Fixture f;
  void* a = f.alloc.allocate(8192, kS1);
  f.alloc.record_stream(a, kS2);
  f.alloc.free(a);
  // Not reusable, even on s1, while s2's work may read it.
  void* b = f.alloc.allocate(8192, kS1);
  EXPECT_NE(b, a);
  f.dev.finish(kS2);
  void* c = f.alloc.allocate(8192, kS1);
  EXPECT_EQ(c, a);
  for (void* p : {b, c}) f.alloc.free(p);
  EXPECT_TRUE(f.dev.events.empty());  // every event was destroyed
}

TEST(CudaAllocator, EmptyCacheWaitsForPendingBlocks) {
  Fixture f;
  void* a = f.alloc.allocate(kMiB, kS1);
  f.alloc.record_stream(a, kS2);
  f.alloc.free(a);
  f.alloc.empty_cache();
  EXPECT_EQ(f.dev.waits, 1);
  EXPECT_EQ(f.alloc.stats().reserved_bytes, 0);
}

TEST(CudaAllocator, OutOfMemoryReleasesTheCacheRetriesThenRaises) {
  Fixture f(64 * kMiB);
  void* a = f.alloc.allocate(30 * kMiB, kS0);
  f.alloc.free(a);  // cached
  void* b = f.alloc.allocate(40 * kMiB, kS0);  // refused, cache released, retried
  auto s = f.alloc.stats();
  EXPECT_EQ(s.alloc_retries, 1);
  EXPECT_EQ(s.reserved_bytes, int64_t(40 * kMiB));
  EXPECT_EQ(s.ooms, 0);
  try {
    f.alloc.allocate(40 * kMiB, kS0);
    FAIL() << "expected an out-of-memory error";
  } catch (const OutOfMemoryError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("CUDA out of memory. Tried to allocate 40.00 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("total capacity of 64.00 MiB of which 24.00 MiB is free"), std::string::npos) << m;
    EXPECT_NE(m.find("40.00 MiB is allocated by tensors"), std::string::npos) << m;
  }
  EXPECT_EQ(f.alloc.stats().ooms, 1);
  // Still usable.
  f.alloc.free(b);
  void* c = f.alloc.allocate(40 * kMiB, kS0);
  EXPECT_EQ(c, b);
  f.alloc.free(c);
}

TEST(CudaAllocator, FormatsSizesAsTorchDoes) {
  EXPECT_EQ(CachingAllocator::format_bytes(20 * kMiB), "20.00 MiB");
  EXPECT_EQ(CachingAllocator::format_bytes(kMiB / 2), "0.50 MiB");
  EXPECT_EQ(CachingAllocator::format_bytes(size_t(3) << 29), "1.50 GiB");
  EXPECT_EQ(CachingAllocator::format_bytes(size_t(1) << 50), "1024.00 TiB");
}

TEST(CudaAllocator, PeaksAndReset) {
  Fixture f;
  void* a = f.alloc.allocate(3 * kMiB, kS0);
  void* b = f.alloc.allocate(2 * kMiB, kS0);
  f.alloc.free(a);
  auto s = f.alloc.stats();
  EXPECT_EQ(s.allocated_bytes, int64_t(2 * kMiB));
  EXPECT_EQ(s.allocated_bytes_peak, int64_t(5 * kMiB));
  f.alloc.reset_peak_stats();
  s = f.alloc.stats();
  EXPECT_EQ(s.allocated_bytes_peak, int64_t(2 * kMiB));
  EXPECT_EQ(s.reserved_bytes_peak, s.reserved_bytes);
  f.alloc.free(b);
}

// Random allocations and frees on three streams, with events finishing at
// random: live blocks never overlap, counters match a recount, and after
// everything is freed and the cache emptied no device memory is left.
TEST(CudaAllocator, RandomWorkloadKeepsInvariants) {
  Fixture f(512 * kMiB);
  std::mt19937 rng(7);
  struct Live {
    char* p;
    size_t n;
  };
  std::vector<Live> live;
  const StreamId streams[] = {kS0, kS1, kS2};
  for (int step = 0; step < 4000; ++step) {
    int op = rng() % 10;
    if (op < 4 || live.empty()) {
      size_t n = rng() % 3 == 0 ? 1 + rng() % (16 * kMiB) : 1 + rng() % (64 * 1024);
      StreamId s = streams[rng() % 3];
      char* p;
      try {
        p = static_cast<char*>(f.alloc.allocate(n, s));
      } catch (const OutOfMemoryError&) {
        continue;  // the fake device is full; the allocator must stay consistent
      }
      for (const Live& l : live)
        ASSERT_TRUE(p + n <= l.p || l.p + l.n <= p) << "overlapping blocks at step " << step;
      if (rng() % 4 == 0) f.alloc.record_stream(p, streams[rng() % 3]);
      live.push_back({p, n});
    } else if (op < 9) {
      size_t i = rng() % live.size();
      f.alloc.free(live[i].p);
      live.erase(live.begin() + static_cast<long>(i));
    } else {
      f.dev.finish(streams[rng() % 3]);
    }
    int64_t requested = 0;
    for (const Live& l : live) requested += static_cast<int64_t>(l.n);
    ASSERT_EQ(f.alloc.stats().requested_bytes, requested);
    ASSERT_EQ(f.alloc.stats().active_blocks, static_cast<int64_t>(live.size()));
  }
  for (const Live& l : live) f.alloc.free(l.p);
  f.alloc.empty_cache();
  auto s = f.alloc.stats();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.inactive_split_bytes, 0);
  EXPECT_TRUE(f.dev.live.empty());
  EXPECT_TRUE(f.dev.events.empty());
}

// ---- private pools (CUDA graphs) --------------------------------------------------

TEST(CudaAllocator, CaptureAllocatesFromAPrivatePoolReusedOnlyThere) {
  Fixture f;
  void* general = f.alloc.allocate(4096, kS1);
  f.alloc.free(general);  // cached on s1
  const PoolId pool = CachingAllocator::new_pool_id();
  f.alloc.begin_allocate_to_pool(pool);
  EXPECT_EQ(f.alloc.current_pool(), pool);
  EXPECT_TRUE(f.alloc.capture_underway());
  void* a = f.alloc.allocate(4096, kS1);
  EXPECT_NE(a, general);  // not the stream's cached block: a segment of the pool
  f.alloc.free(a);
  void* b = f.alloc.allocate(4096, kS1);
  EXPECT_EQ(b, a);  // freed inside the pool, reused inside it
  f.alloc.end_allocate_to_pool(pool);
  EXPECT_EQ(f.alloc.current_pool(), 0u);
  EXPECT_FALSE(f.alloc.capture_underway());
  auto ps = f.alloc.pool_stats(pool);
  EXPECT_EQ(ps.uses, 1);
  EXPECT_EQ(ps.segments, 1);
  EXPECT_EQ(ps.reserved_bytes, int64_t(2 * kMiB));
  EXPECT_EQ(ps.allocated_bytes, 4096);
  f.alloc.free(b);
  EXPECT_EQ(f.alloc.pool_stats(pool).allocated_bytes, 0);
  // Outside the capture, s1 gets its own block again, never the pool's.
  void* c = f.alloc.allocate(4096, kS1);
  EXPECT_EQ(c, general);
  void* d = f.alloc.allocate(4096, kS1);
  EXPECT_NE(d, a);
  f.alloc.free(c);
  f.alloc.free(d);
  // Another stream never takes the pool's free segment, however long it waits.
  f.dev.finish(kS1);
  void* e = f.alloc.allocate(4096, kS2);
  EXPECT_NE(e, a);
  f.alloc.free(e);
  // empty_cache leaves a held pool alone; the last release gives it back.
  f.alloc.empty_cache();
  EXPECT_EQ(f.alloc.pool_stats(pool).segments, 1);
  EXPECT_EQ(f.alloc.stats().segments, 1);
  f.alloc.release_pool(pool);
  EXPECT_EQ(f.alloc.pool_stats(pool).segments, 0);
  EXPECT_EQ(f.alloc.stats().reserved_bytes, 0);
  EXPECT_TRUE(f.dev.live.empty());
}

TEST(CudaAllocator, NoDriverCallButAllocDuringACapture) {
  Fixture f;
  const size_t n = 12 * kMiB;
  // A block used on s2 too, and a whole free segment of s1 another stream
  // would normally take after querying s1's event.
  void* shared = f.alloc.allocate(8192, kS1);
  f.alloc.record_stream(shared, kS2);
  void* seg = f.alloc.allocate(n, kS1);
  f.alloc.free(seg);
  const PoolId pool = CachingAllocator::new_pool_id();
  f.alloc.begin_allocate_to_pool(pool);
  f.dev.only_alloc_allowed = true;
  void* p = f.alloc.allocate(n, kS1);   // a new segment (cuMemAlloc is allowed)
  f.alloc.free(shared);                 // its event waits for the capture's end
  void* q = f.alloc.allocate(100, kS2);  // no migration: that would query events
  f.alloc.empty_cache();                // releases nothing now
  EXPECT_EQ(f.alloc.stats().device_frees, 0);
  f.alloc.free(q);
  f.dev.only_alloc_allowed = false;
  f.alloc.end_allocate_to_pool(pool);
  // The deferred free recorded its event on s2 now: the block waits for it.
  EXPECT_EQ(f.dev.events.size(), 1u);
  f.dev.finish(kS2);
  void* again = f.alloc.allocate(8192, kS1);
  EXPECT_EQ(again, shared);
  f.alloc.free(again);
  f.alloc.free(p);
  f.alloc.release_pool(pool);
  f.alloc.empty_cache();
  EXPECT_EQ(f.alloc.stats().reserved_bytes, 0);
  EXPECT_TRUE(f.dev.events.empty());
}

TEST(CudaAllocator, GraphsSharingAPoolReuseEachOthersBlocks) {
  Fixture f;
  const PoolId pool = CachingAllocator::new_pool_id();
  f.alloc.begin_allocate_to_pool(pool);  // graph 1
  void* x = f.alloc.allocate(1 << 16, kS1);
  f.alloc.free(x);
  f.alloc.end_allocate_to_pool(pool);
  f.alloc.begin_allocate_to_pool(pool);  // graph 2, same pool
  void* y = f.alloc.allocate(1 << 16, kS1);
  EXPECT_EQ(y, x);
  f.alloc.end_allocate_to_pool(pool);
  EXPECT_EQ(f.alloc.pool_stats(pool).uses, 2);
  f.alloc.free(y);
  f.alloc.release_pool(pool);  // graph 1 gone: graph 2 still holds the pool
  EXPECT_EQ(f.alloc.pool_stats(pool).segments, 1);
  f.alloc.release_pool(pool);
  EXPECT_EQ(f.alloc.stats().segments, 0);
  // A second pool is another pool: it does not see the first's blocks.
  const PoolId other = CachingAllocator::new_pool_id();
  EXPECT_NE(other, pool);
  EXPECT_THROW(f.alloc.release_pool(other), Error);
}

TEST(CudaAllocator, PoolOutputsOutliveTheGraph) {
  Fixture f;
  const PoolId pool = CachingAllocator::new_pool_id();
  f.alloc.begin_allocate_to_pool(pool);
  void* out = f.alloc.allocate(1000, kS1);
  f.alloc.end_allocate_to_pool(pool);
  f.alloc.release_pool(pool);  // the graph is gone, its output is not
  EXPECT_EQ(f.alloc.stats().segments, 1);
  f.alloc.free(out);  // the segment is wholly free now: it goes at once
  EXPECT_EQ(f.alloc.stats().segments, 0);
  EXPECT_TRUE(f.dev.live.empty());
  // One capture per thread at a time.
  f.alloc.begin_allocate_to_pool(pool);
  EXPECT_THROW(f.alloc.begin_allocate_to_pool(CachingAllocator::new_pool_id()), Error);
  f.alloc.end_allocate_to_pool(pool);
  f.alloc.release_pool(pool);
}

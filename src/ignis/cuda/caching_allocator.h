// The CUDA caching allocator: device memory behind allocate_storage for
// cuda tensors, stream-ordered.
//
// cuMemAlloc/cuMemFree synchronize the device and cost tens of microseconds,
// so freed blocks are kept and handed to later requests. A block belongs to
// the stream it was allocated on: work on one stream runs in order, so a
// block freed on stream S may be reused on S at once, even while kernels
// that used it are still queued. See Note [CUDA caching allocator] in the
// .cpp for sizes, splitting, streams and out-of-memory.
//
// The allocator talks to the device only through DeviceMemoryBackend, so
// tests/cpp drive its bookkeeping with a fake backend on machines with no
// GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ignis::cuda {

// A CUstream / CUevent as an integer (0: the default stream).
using StreamId = uintptr_t;
using EventId = uintptr_t;
// A private memory pool of CUDA graphs (> 0; torch's MempoolId_t), see
// Note [Private pools for CUDA graphs] in the .cpp.
using PoolId = uint64_t;

// What the allocator needs from a device.
class DeviceMemoryBackend {
 public:
  virtual ~DeviceMemoryBackend() = default;
  // `bytes` of device memory, or nullptr when the device has none left
  // (other failures throw).
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* ptr, size_t bytes) = 0;
  // An event recorded on `stream` now; done once the stream's work queued
  // before it has finished.
  virtual EventId record_event(StreamId stream) = 0;
  virtual bool event_done(EventId e) = 0;
  virtual void wait_event(EventId e) = 0;  // blocks the host until done
  virtual void destroy_event(EventId e) = 0;
  // The device's free and total memory (for out-of-memory messages).
  virtual std::pair<size_t, size_t> memory_info() = 0;
};

// Counters, named after torch.cuda.memory_stats' keys (docs/cuda.md).
struct CachingAllocatorStats {
  int64_t allocated_bytes = 0, allocated_bytes_peak = 0;  // blocks held by tensors
  int64_t requested_bytes = 0, requested_bytes_peak = 0;  // what they asked for
  int64_t reserved_bytes = 0, reserved_bytes_peak = 0;    // segments taken from the device
  int64_t active_blocks = 0, segments = 0;
  int64_t inactive_split_bytes = 0;  // free pieces of segments that are partly in use
  int64_t device_allocs = 0, device_frees = 0;  // cuMemAlloc / cuMemFree calls
  int64_t alloc_retries = 0;  // device allocations retried after emptying the cache
  int64_t ooms = 0;           // requests that failed after the retry
  int64_t stream_migrations = 0;  // free segments handed to another stream
};

class CachingAllocator {
 public:
  // Sizes (see the Note).
  static constexpr size_t kMinBlock = 512;              // every block is a multiple
  static constexpr size_t kSmallSize = size_t(1) << 20;  // small pool: requests up to 1 MiB
  static constexpr size_t kSmallSegment = size_t(2) << 20;
  static constexpr size_t kLargeSegment = size_t(20) << 20;
  static constexpr size_t kMinLargeAlloc = size_t(10) << 20;
  static constexpr size_t kRoundLarge = size_t(2) << 20;

  CachingAllocator(std::unique_ptr<DeviceMemoryBackend> backend, int device);
  ~CachingAllocator();  // releases cached segments; live blocks are leaked
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `nbytes` (> 0) for use on `stream`. Throws
  // OutOfMemoryError (with the allocator's numbers) when the device has no
  // memory left after the cache was released.
  void* allocate(size_t nbytes, StreamId stream);
  // Returns a block from allocate(). Its memory is reused by its stream at
  // once, by other streams (record_stream) only after their work is done.
  void free(void* ptr);
  // torch's Tensor.record_stream: the block is also used on `stream`, so
  // when freed it waits for the work queued there until then.
  void record_stream(void* ptr, StreamId stream);
  // Releases every cached segment that is wholly free (after waiting for
  // the events of blocks freed across streams).
  void empty_cache();

  // CUDA graphs (Note [Private pools for CUDA graphs]). From
  // begin_allocate_to_pool until end_allocate_to_pool, the calling thread's
  // requests take their blocks from private pool `pool`, whose blocks only
  // its own requests reuse; begin also holds the pool (one use, given back
  // by release_pool). While any thread allocates to a pool (a capture is
  // underway) the allocator makes no driver call but cuMemAlloc: no event
  // is recorded, queried or destroyed and nothing is released.
  void begin_allocate_to_pool(PoolId pool);
  void end_allocate_to_pool(PoolId pool);
  // Gives back one use of `pool`; at the last, its segments return to the
  // device as soon as they are wholly free.
  void release_pool(PoolId pool);
  bool capture_underway() const;
  // A new pool id, unique in the process (graph_pool_handle()).
  static PoolId new_pool_id();
  // The pool the calling thread allocates to (0: none).
  PoolId current_pool() const;
  // The private pool of the live block at `ptr` (as allocate returned it);
  // 0 for a stream's block or an unknown pointer.
  PoolId block_pool(const void* ptr) const;
  struct PoolStats {
    int uses = 0;             // graphs holding it
    int64_t segments = 0;     // segments it holds
    int64_t reserved_bytes = 0;
    int64_t allocated_bytes = 0;  // of its blocks held by tensors
  };
  PoolStats pool_stats(PoolId pool) const;

  CachingAllocatorStats stats() const;
  void reset_peak_stats();
  int device() const { return device_; }
  // Bytes a request is rounded up to.
  static size_t round_size(size_t nbytes);
  // Bytes of the segment taken from the device for a rounded request.
  static size_t segment_size(size_t rounded);
  // A byte count as an out-of-memory message prints it ("20.00 MiB").
  static std::string format_bytes(size_t bytes);

 private:
  struct Block;
  struct BlockLess {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BlockLess>;

  Pool& pool_for(size_t size) { return size <= kSmallSize ? small_ : large_; }
  Block* find_free(Pool& pool, size_t size, StreamId stream);
  Block* migrate_free_segment(Pool& pool, size_t size, StreamId stream);
  Block* new_segment(size_t size, StreamId stream, size_t requested);
  bool should_split(const Block* b, size_t size) const;
  Block* free_block(Block* b);  // into its pool, merged with free neighbours
  void process_events();
  void release_cached(bool wait_events);
  void release_segment(Pool& pool, Block* b);  // a wholly free segment, to the device
  void forget_reuse_event(Block* b);
  void drop_event(EventId e);  // destroyed now, or after the capture
  void record_pending_events(Block* b);
  bool live_pool_block(const Block* b) const;
  void add(int64_t& cur, int64_t& peak, int64_t delta);

  std::unique_ptr<DeviceMemoryBackend> backend_;
  int device_;
  mutable std::mutex mu_;
  Pool small_, large_;
  std::unordered_map<void*, Block*> active_;
  // Blocks freed while in use on other streams, waiting for those events.
  std::vector<std::pair<EventId, Block*>> pending_;
  CachingAllocatorStats stats_;
  // Threads allocating to a private pool (captures underway), and per pool
  // its uses and reserved bytes and segments.
  std::vector<std::pair<std::thread::id, PoolId>> capturing_;
  struct PoolInfo {
    int uses = 0;
    int64_t segments = 0, reserved_bytes = 0, allocated_bytes = 0;
  };
  std::unordered_map<PoolId, PoolInfo> pools_;
  // Work deferred while a capture is underway: blocks freed with uses on
  // other streams (their events are recorded after it), events to destroy.
  std::vector<Block*> deferred_frees_;
  std::vector<EventId> deferred_event_drops_;
};

}  // namespace ignis::cuda

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
#include <unordered_map>
#include <utility>
#include <vector>

namespace ignis::cuda {

// A CUstream / CUevent as an integer (0: the default stream).
using StreamId = uintptr_t;
using EventId = uintptr_t;

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
  void free_block(Block* b);  // into its pool, merged with free neighbours
  void process_events();
  void release_cached(bool wait_events);
  void forget_reuse_event(Block* b);
  void add(int64_t& cur, int64_t& peak, int64_t delta);

  std::unique_ptr<DeviceMemoryBackend> backend_;
  int device_;
  mutable std::mutex mu_;
  Pool small_, large_;
  std::unordered_map<void*, Block*> active_;
  // Blocks freed while in use on other streams, waiting for those events.
  std::vector<std::pair<EventId, Block*>> pending_;
  CachingAllocatorStats stats_;
};

}  // namespace ignis::cuda

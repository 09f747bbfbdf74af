#include "ignis/cuda/caching_allocator.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <tuple>

#include "ignis/core/out_of_memory.h"

namespace ignis::cuda {

// Note [CUDA caching allocator]
//
// Sizes. A request is rounded up to a multiple of 512 bytes (kMinBlock), so
// that every block is aligned for any vector load. Requests up to 1 MiB use
// the small pool, whose segments (one cuMemAlloc each) are 2 MiB; larger
// requests use the large pool, whose segments are 20 MiB for requests under
// 10 MiB and the request rounded up to 2 MiB otherwise. Keeping the two
// apart stops small, long-lived tensors from pinning large segments.
//
// Splitting and coalescing. A free block larger than the request is split,
// and the remainder stays free, when what is left is worth keeping: at least
// 512 bytes in the small pool, more than 1 MiB in the large pool (smaller
// remainders would fragment it and are handed out with the block). Blocks of
// one segment form a list by address; a freed block merges with free
// neighbours, so a segment whose blocks are all free is one block again, and
// empty_cache can return it.
//
// Streams. A block belongs to the stream it was allocated on, and every block
// of a segment shares it: work on a stream runs in order, so the stream may
// reuse a freed block at once. Another stream may take a free block only
// when it is a whole segment and an event recorded on the owning stream
// after the free has completed (the event is recorded lazily, on the first
// request that wants the segment; recording later than the free is only more
// conservative). A block also used on other streams (record_stream) is not
// returned to its pool when freed: an event is recorded on each of those
// streams and the block waits in pending_ until all have completed.
//
// Out of memory. When the device refuses a segment, every cached segment
// that is wholly free is released (after waiting for pending events) and the
// allocation retried once; a second refusal raises OutOfMemoryError with the
// request, the device's free and total memory and the allocator's counters.
// The allocator's state is unchanged by the failure, so the process stays
// usable.

// Note [Private pools for CUDA graphs]
//
// A CUDA graph replays its kernels on the addresses they had when it was
// captured, so the memory a capture allocates must stay the graph's while it
// lives, and nothing outside the graph may be handed those addresses. While a
// thread captures (begin_allocate_to_pool .. end_allocate_to_pool) its
// requests are filed under a pseudo-stream of the graph's pool (the pool id
// with the top bit set; real streams are user-space pointers), so the
// per-stream bookkeeping above keeps them apart: a block freed there (a
// temporary of the captured work) returns to the pool and is reused only by
// later requests of a capture into the same pool -- which is also how graphs
// sharing a pool (graph_pool_handle) reuse each other's memory. Pool segments
// never migrate to a stream, nor a stream's to a pool, and empty_cache and
// the out-of-memory retry leave them alone while a graph holds the pool. The
// last release_pool lets them go back to the device once wholly free (the
// tensors a graph returned may outlive it).
//
// A real capture forbids calls that could synchronize (cuEventQuery,
// cuEventSynchronize, cuMemFree, ...) while any global-mode capture runs, so
// while one is underway the allocator records, queries and destroys no event
// and releases no memory: events of blocks freed with record_stream uses
// are recorded, and events dropped are destroyed, when the last capture
// ends. cuMemAlloc is allowed (the driver backend calls it in the thread's
// relaxed capture mode, as torch does): a capture may take new segments.
namespace {
constexpr StreamId kPoolStreamBit = StreamId(1) << 63;
StreamId pool_stream_id(PoolId pool) { return kPoolStreamBit | StreamId(pool); }
bool is_pool_stream(StreamId s) { return (s & kPoolStreamBit) != 0; }
PoolId pool_of(StreamId s) { return PoolId(s & ~kPoolStreamBit); }
}  // namespace

struct CachingAllocator::Block {
  void* ptr;
  size_t size;
  StreamId stream;
  bool small;
  // Free blocks are in their pool; pending ones wait for record_stream events.
  enum class State { Free, Allocated, Pending } state = State::Free;
  int pending_events = 0;
  size_t requested = 0;
  Block* prev = nullptr;  // neighbours in the segment, by address
  Block* next = nullptr;
  std::vector<StreamId> uses;  // other streams it was used on (record_stream)
  EventId reuse_event = 0;     // see "Streams" in the Note
  bool whole_segment() const { return prev == nullptr && next == nullptr; }
};

bool CachingAllocator::BlockLess::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->ptr) < std::tie(b->stream, b->size, b->ptr);
}

size_t CachingAllocator::round_size(size_t nbytes) {
  if (nbytes < kMinBlock) return kMinBlock;
  return (nbytes + kMinBlock - 1) / kMinBlock * kMinBlock;
}

size_t CachingAllocator::segment_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallSegment;
  if (rounded < kMinLargeAlloc) return kLargeSegment;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

CachingAllocator::CachingAllocator(std::unique_ptr<DeviceMemoryBackend> backend, int device)
    : backend_(std::move(backend)), device_(device) {}

CachingAllocator::~CachingAllocator() {
  try {
    empty_cache();
  } catch (...) {
    // The device may be gone at exit; the memory goes with the process.
  }
}

// "20.00 MiB", "1.50 GiB", as torch's messages print sizes.
std::string CachingAllocator::format_bytes(size_t bytes) {
  double b = static_cast<double>(bytes);
  const char* unit = "MiB";
  double v = b / (1024.0 * 1024.0);
  if (v >= 1024.0) {
    v /= 1024.0;
    unit = "GiB";
  }
  if (v >= 1024.0) {
    v /= 1024.0;
    unit = "TiB";
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f %s", v, unit);
  return buf;
}

void CachingAllocator::add(int64_t& cur, int64_t& peak, int64_t delta) {
  cur += delta;
  peak = std::max(peak, cur);
}

CachingAllocator::Block* CachingAllocator::find_free(Pool& pool, size_t size, StreamId stream) {
  Block key{nullptr, size, stream, false};
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

CachingAllocator::Block* CachingAllocator::migrate_free_segment(Pool& pool, size_t size,
                                                                StreamId stream) {
  // The smallest whole free segment of another stream that fits and whose
  // owner has finished with it.
  Block* best = nullptr;
  for (Block* b : pool) {
    if (b->stream == stream || b->size < size || !b->whole_segment()) continue;
    if (is_pool_stream(b->stream)) continue;  // a graph's (see the Note)
    if (best && best->size <= b->size) continue;
    if (!b->reuse_event) b->reuse_event = backend_->record_event(b->stream);
    if (backend_->event_done(b->reuse_event)) best = b;
  }
  if (!best) return nullptr;
  pool.erase(best);
  forget_reuse_event(best);
  best->stream = stream;
  ++stats_.stream_migrations;
  return best;
}

void CachingAllocator::forget_reuse_event(Block* b) {
  if (b->reuse_event) drop_event(b->reuse_event);
  b->reuse_event = 0;
}

void CachingAllocator::drop_event(EventId e) {
  if (!capturing_.empty()) {
    deferred_event_drops_.push_back(e);
    return;
  }
  backend_->destroy_event(e);
}

bool CachingAllocator::live_pool_block(const Block* b) const {
  if (!is_pool_stream(b->stream)) return false;
  auto it = pools_.find(pool_of(b->stream));
  return it != pools_.end() && it->second.uses > 0;
}

CachingAllocator::Block* CachingAllocator::new_segment(size_t size, StreamId stream,
                                                       size_t requested) {
  size_t seg = segment_size(size);
  void* p = backend_->allocate(seg);
  // During a capture nothing can be released (see the Note): no retry.
  if (!p && capturing_.empty()) {
    ++stats_.alloc_retries;
    release_cached(/*wait_events=*/true);
    p = backend_->allocate(seg);
  }
  if (!p) {
    ++stats_.ooms;
    auto [free_b, total_b] = backend_->memory_info();
    throw OutOfMemoryError(str(
        "CUDA out of memory. Tried to allocate ", format_bytes(requested), " (a segment of ",
        format_bytes(seg), "). GPU ", device_, " has a total capacity of ", format_bytes(total_b),
        " of which ", format_bytes(free_b), " is free. Of the memory ignis reserved (",
        format_bytes(size_t(stats_.reserved_bytes)), "), ",
        format_bytes(size_t(stats_.allocated_bytes)), " is allocated by tensors and ",
        format_bytes(size_t(stats_.reserved_bytes - stats_.allocated_bytes)),
        " is reserved but unallocated (the cache was released and the allocation retried once)."));
  }
  ++stats_.device_allocs;
  ++stats_.segments;
  add(stats_.reserved_bytes, stats_.reserved_bytes_peak, static_cast<int64_t>(seg));
  if (is_pool_stream(stream)) {
    PoolInfo& info = pools_[pool_of(stream)];
    ++info.segments;
    info.reserved_bytes += static_cast<int64_t>(seg);
  }
  return new Block{p, seg, stream, size <= kSmallSize};
}

bool CachingAllocator::should_split(const Block* b, size_t size) const {
  size_t rest = b->size - size;
  return b->small ? rest >= kMinBlock : rest > kSmallSize;
}

void* CachingAllocator::allocate(size_t nbytes, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool capture = !capturing_.empty();
  if (!capture) process_events();
  const auto self = std::this_thread::get_id();
  for (const auto& [thread, graph_pool] : capturing_)
    if (thread == self) stream = pool_stream_id(graph_pool);
  size_t size = round_size(nbytes);
  Pool& pool = pool_for(size);
  Block* b = find_free(pool, size, stream);
  // Migration records and queries events: not during a capture.
  if (!b && !capture && !is_pool_stream(stream)) b = migrate_free_segment(pool, size, stream);
  if (b) {
    forget_reuse_event(b);
    // A free piece of a partly used segment is counted in inactive_split_bytes.
    if (!b->whole_segment()) stats_.inactive_split_bytes -= static_cast<int64_t>(b->size);
  } else {
    b = new_segment(size, stream, nbytes);
  }
  if (should_split(b, size)) {
    // The remainder keeps the stream and pool and goes back free.
    auto* rest = new Block{static_cast<char*>(b->ptr) + size, b->size - size, stream, b->small};
    rest->prev = b;
    rest->next = b->next;
    if (b->next) b->next->prev = rest;
    b->next = rest;
    b->size = size;
    pool.insert(rest);
    stats_.inactive_split_bytes += static_cast<int64_t>(rest->size);
  }
  b->state = Block::State::Allocated;
  b->requested = nbytes;
  active_.emplace(b->ptr, b);
  ++stats_.active_blocks;
  add(stats_.allocated_bytes, stats_.allocated_bytes_peak, static_cast<int64_t>(b->size));
  add(stats_.requested_bytes, stats_.requested_bytes_peak, static_cast<int64_t>(nbytes));
  if (is_pool_stream(stream)) pools_[pool_of(stream)].allocated_bytes += int64_t(b->size);
  return b->ptr;
}

void CachingAllocator::free(void* ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find(ptr);
  if (it == active_.end())
    throw Error(ErrorKind::Internal, "CUDA allocator: free of an unknown pointer");
  Block* b = it->second;
  active_.erase(it);
  --stats_.active_blocks;
  stats_.allocated_bytes -= static_cast<int64_t>(b->size);
  stats_.requested_bytes -= static_cast<int64_t>(b->requested);
  if (is_pool_stream(b->stream)) pools_[pool_of(b->stream)].allocated_bytes -= int64_t(b->size);
  if (b->uses.empty()) {
    Block* merged = free_block(b);
    // A block of a pool no graph holds: its segment goes once wholly free.
    if (is_pool_stream(merged->stream) && !live_pool_block(merged) &&
        merged->whole_segment() && capturing_.empty())
      release_segment(merged->small ? small_ : large_, merged);
    return;
  }
  b->state = Block::State::Pending;
  if (!capturing_.empty()) {
    deferred_frees_.push_back(b);  // its events are recorded after the capture
    return;
  }
  record_pending_events(b);
}

void CachingAllocator::record_pending_events(Block* b) {
  b->pending_events = static_cast<int>(b->uses.size());
  for (StreamId s : b->uses) pending_.emplace_back(backend_->record_event(s), b);
  b->uses.clear();
}

void CachingAllocator::record_stream(void* ptr, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find(ptr);
  if (it == active_.end()) throw Error(ErrorKind::Internal, "record_stream: unknown CUDA block");
  Block* b = it->second;
  if (stream == b->stream) return;
  if (std::find(b->uses.begin(), b->uses.end(), stream) == b->uses.end())
    b->uses.push_back(stream);
}

CachingAllocator::Block* CachingAllocator::free_block(Block* b) {
  Pool& pool = b->small ? small_ : large_;
  // Merging a free neighbour: it leaves the pool and its bytes stop being an
  // inactive split; the merged block counts again below if still partial.
  auto absorb = [&](Block* n) {
    pool.erase(n);
    forget_reuse_event(n);
    stats_.inactive_split_bytes -= static_cast<int64_t>(n->size);
  };
  b->state = Block::State::Free;
  if (b->prev && b->prev->state == Block::State::Free) {
    Block* p = b->prev;
    absorb(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next) b->next->prev = p;
    delete b;
    b = p;
  }
  if (b->next && b->next->state == Block::State::Free) {
    Block* n = b->next;
    absorb(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    delete n;
  }
  if (!b->whole_segment()) stats_.inactive_split_bytes += static_cast<int64_t>(b->size);
  pool.insert(b);
  return b;
}

void CachingAllocator::process_events() {
  // A block leaves pending_ when the last of its events has completed.
  // Blocks stay Pending until their own free_block, so one freed first never
  // merges a neighbour that is about to be freed too.
  std::vector<std::pair<EventId, Block*>> still;
  std::vector<Block*> done;
  for (auto& [e, b] : pending_) {
    if (!backend_->event_done(e)) {
      still.emplace_back(e, b);
      continue;
    }
    backend_->destroy_event(e);
    if (--b->pending_events == 0) done.push_back(b);
  }
  pending_ = std::move(still);
  for (Block* b : done) free_block(b);
}

void CachingAllocator::release_cached(bool wait_events) {
  if (!capturing_.empty()) return;  // no cuMemFree or event wait during a capture
  if (wait_events) {
    for (auto& [e, b] : pending_) backend_->wait_event(e);
    process_events();
  }
  for (Pool* pool : {&small_, &large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      ++it;
      if (!b->whole_segment() || live_pool_block(b)) continue;
      release_segment(*pool, b);
    }
  }
}

void CachingAllocator::release_segment(Pool& pool, Block* b) {
  pool.erase(b);
  forget_reuse_event(b);
  backend_->release(b->ptr, b->size);
  ++stats_.device_frees;
  --stats_.segments;
  stats_.reserved_bytes -= static_cast<int64_t>(b->size);
  if (is_pool_stream(b->stream)) {
    auto it = pools_.find(pool_of(b->stream));
    if (it != pools_.end()) {
      --it->second.segments;
      it->second.reserved_bytes -= static_cast<int64_t>(b->size);
      if (it->second.uses == 0 && it->second.segments == 0) pools_.erase(it);
    }
  }
  delete b;
}

PoolId CachingAllocator::new_pool_id() {
  static std::atomic<PoolId> next{1};
  return next.fetch_add(1);
}

void CachingAllocator::begin_allocate_to_pool(PoolId pool) {
  IGNIS_CHECK(pool > 0, "CUDA allocator: a private pool id must be positive");
  std::lock_guard<std::mutex> lock(mu_);
  const auto self = std::this_thread::get_id();
  for (const auto& [thread, p] : capturing_)
    IGNIS_CHECK(thread != self, "CUDA allocator: this thread already allocates to private pool ",
                p, " (one capture at a time per thread)");
  capturing_.emplace_back(self, pool);
  ++pools_[pool].uses;
}

void CachingAllocator::end_allocate_to_pool(PoolId pool) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto self = std::this_thread::get_id();
  auto it = std::find(capturing_.begin(), capturing_.end(), std::make_pair(self, pool));
  IGNIS_CHECK(it != capturing_.end(), "CUDA allocator: this thread does not allocate to pool ",
              pool);
  capturing_.erase(it);
  if (!capturing_.empty()) return;
  // The work the capture deferred (see the Note).
  for (EventId e : deferred_event_drops_) backend_->destroy_event(e);
  deferred_event_drops_.clear();
  for (Block* b : deferred_frees_) record_pending_events(b);
  deferred_frees_.clear();
}

void CachingAllocator::release_pool(PoolId pool) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pools_.find(pool);
  IGNIS_CHECK(it != pools_.end() && it->second.uses > 0, "CUDA allocator: pool ", pool,
              " is not held");
  if (--it->second.uses > 0) return;
  if (it->second.segments == 0) {
    pools_.erase(it);
    return;
  }
  if (!capturing_.empty()) return;  // released by a later empty_cache
  const StreamId s = pool_stream_id(pool);
  for (Pool* p : {&small_, &large_}) {
    std::vector<Block*> whole;
    for (Block* b : *p)
      if (b->stream == s && b->whole_segment()) whole.push_back(b);
    for (Block* b : whole) release_segment(*p, b);
  }
}

bool CachingAllocator::capture_underway() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !capturing_.empty();
}

PoolId CachingAllocator::current_pool() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto self = std::this_thread::get_id();
  for (const auto& [thread, p] : capturing_)
    if (thread == self) return p;
  return 0;
}

PoolId CachingAllocator::block_pool(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find(const_cast<void*>(ptr));
  if (it == active_.end() || !is_pool_stream(it->second->stream)) return 0;
  return pool_of(it->second->stream);
}

CachingAllocator::PoolStats CachingAllocator::pool_stats(PoolId pool) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pools_.find(pool);
  if (it == pools_.end()) return {};
  return {it->second.uses, it->second.segments, it->second.reserved_bytes,
          it->second.allocated_bytes};
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cached(/*wait_events=*/true);
}

CachingAllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.allocated_bytes_peak = stats_.allocated_bytes;
  stats_.requested_bytes_peak = stats_.requested_bytes;
  stats_.reserved_bytes_peak = stats_.reserved_bytes;
}

}  // namespace ignis::cuda

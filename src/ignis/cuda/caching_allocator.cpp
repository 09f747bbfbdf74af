#include "ignis/cuda/caching_allocator.h"

#include <algorithm>
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
  if (b->reuse_event) backend_->destroy_event(b->reuse_event);
  b->reuse_event = 0;
}

CachingAllocator::Block* CachingAllocator::new_segment(size_t size, StreamId stream,
                                                       size_t requested) {
  size_t seg = segment_size(size);
  void* p = backend_->allocate(seg);
  if (!p) {
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
  return new Block{p, seg, stream, size <= kSmallSize};
}

bool CachingAllocator::should_split(const Block* b, size_t size) const {
  size_t rest = b->size - size;
  return b->small ? rest >= kMinBlock : rest > kSmallSize;
}

void* CachingAllocator::allocate(size_t nbytes, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  process_events();
  size_t size = round_size(nbytes);
  Pool& pool = pool_for(size);
  Block* b = find_free(pool, size, stream);
  if (!b) b = migrate_free_segment(pool, size, stream);
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
  if (b->uses.empty()) {
    free_block(b);
    return;
  }
  b->state = Block::State::Pending;
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

void CachingAllocator::free_block(Block* b) {
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
  if (wait_events) {
    for (auto& [e, b] : pending_) backend_->wait_event(e);
    process_events();
  }
  for (Pool* pool : {&small_, &large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (!b->whole_segment()) {
        ++it;
        continue;
      }
      it = pool->erase(it);
      forget_reuse_event(b);
      backend_->release(b->ptr, b->size);
      ++stats_.device_frees;
      --stats_.segments;
      stats_.reserved_bytes -= static_cast<int64_t>(b->size);
      delete b;
    }
  }
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

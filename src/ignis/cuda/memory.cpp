#include "ignis/cuda/memory.h"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ignis/core/out_of_memory.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/driver.h"

namespace ignis::cuda {

namespace {

// The allocator's device, through the driver. Each call makes the device's
// context current (the allocator may be called from any thread).
class DriverBackend : public DeviceMemoryBackend {
 public:
  explicit DriverBackend(int device) : device_(device) {}
  void* allocate(size_t bytes) override {
    ensure_context(device_);
    CUdeviceptr p = 0;
    // While this thread captures a CUDA graph, the global capture mode
    // forbids cuMemAlloc as "potentially unsafe"; the allocator gives the
    // memory to the graph's private pool, never frees it during the capture,
    // so the call is safe and the thread relaxes its mode for it (as torch
    // does). Outside a capture the exchange changes nothing.
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    driver().cuThreadExchangeStreamCaptureMode(&mode);
    CUresult r = driver().cuMemAlloc(&p, bytes);
    driver().cuThreadExchangeStreamCaptureMode(&mode);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    if (r != CUDA_SUCCESS) throw_driver_error(r, "cuMemAlloc");
    return reinterpret_cast<void*>(p);
  }
  void release(void* ptr, size_t) override {
    ensure_context(device_);
    IGNIS_CU(cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)));
  }
  EventId record_event(StreamId stream) override {
    ensure_context(device_);
    CUevent e = nullptr;
    IGNIS_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    IGNIS_CU(cuEventRecord(e, reinterpret_cast<CUstream>(stream)));
    return reinterpret_cast<EventId>(e);
  }
  bool event_done(EventId e) override {
    ensure_context(device_);
    CUresult r = driver().cuEventQuery(reinterpret_cast<CUevent>(e));
    if (r == CUDA_ERROR_NOT_READY) return false;
    if (r != CUDA_SUCCESS) throw_driver_error(r, "cuEventQuery");
    return true;
  }
  void wait_event(EventId e) override {
    ensure_context(device_);
    IGNIS_CU(cuEventSynchronize(reinterpret_cast<CUevent>(e)));
  }
  void destroy_event(EventId e) override {
    // Errors are ignored: the event is gone either way.
    driver().cuEventDestroy(reinterpret_cast<CUevent>(e));
  }
  std::pair<size_t, size_t> memory_info() override {
    ensure_context(device_);
    size_t free_b = 0, total_b = 0;
    driver().cuMemGetInfo(&free_b, &total_b);
    return {free_b, total_b};
  }

 private:
  int device_;
};

Storage cuda_storage_hook(size_t nbytes, Device device) {
  return allocate_device_storage(nbytes, device);
}

}  // namespace

void install_allocator() { register_device_allocator(DeviceType::CUDA, cuda_storage_hook); }

CachingAllocator& device_allocator(int device) {
  check_device(device);
  static std::mutex mu;
  // Never destroyed: storages may be freed during exit.
  static auto* allocators = new std::vector<std::unique_ptr<CachingAllocator>>();
  std::lock_guard<std::mutex> lock(mu);
  if (allocators->empty()) allocators->resize(static_cast<size_t>(device_count()));
  auto& a = (*allocators)[static_cast<size_t>(device)];
  if (!a) a = std::make_unique<CachingAllocator>(std::make_unique<DriverBackend>(device), device);
  return *a;
}

Storage allocate_device_storage(size_t nbytes, Device device) {
  int index = device_index(device);
  Device where(DeviceType::CUDA, index);
  if (nbytes == 0) return make_intrusive<StorageImpl>(nullptr, 0, where, StorageImpl::Deleter());
  CachingAllocator& a = device_allocator(index);
  void* p = a.allocate(nbytes, current_stream(index).id());
  // Runs in a destructor: a driver error here (a device torn down at exit, a
  // sticky error after an illegal access) cannot be reported, and the block
  // is left out of circulation rather than the process terminated.
  return make_intrusive<StorageImpl>(p, nbytes, where, [&a](void* q) {
    try {
      a.free(q);
    } catch (...) {
    }
  });
}

void record_stream(const Storage& s, const Stream& stream) {
  IGNIS_CHECK(s->device().is_cuda(), "record_stream: the tensor is not on a CUDA device");
  if (!s->data()) return;
  device_allocator(s->device().index).record_stream(s->data(), stream.id());
}

// ---- pinned host memory ---------------------------------------------------------

namespace {

// Blocks of power-of-two sizes, kept when freed. A block used by an
// asynchronous copy waits for that copy's event before it is handed out
// again (the copy may still be reading or writing it).
class PinnedAllocator {
 public:
  void* allocate(size_t nbytes) {
    size_t size = 1;
    while (size < nbytes) size <<= 1;
    std::lock_guard<std::mutex> lock(mu_);
    reclaim_locked();
    auto& list = free_[size];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      live_[p].in_use = true;
      return p;
    }
    require_driver();
    ensure_context(current_device());
    void* p = nullptr;
    CUresult r = driver().cuMemHostAlloc(&p, size, CU_MEMHOSTALLOC_PORTABLE);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      release_locked();
      r = driver().cuMemHostAlloc(&p, size, CU_MEMHOSTALLOC_PORTABLE);
    }
    if (r != CUDA_SUCCESS) throw_driver_error(r, "cuMemHostAlloc (pinned host memory)");
    live_[p] = Block{size, true, {}};
    return p;
  }

  void free(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    Block& b = live_.at(p);
    b.in_use = false;
    if (b.events.empty()) free_[b.size].push_back(p);
  }

  bool contains(const void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.count(const_cast<void*>(p)) != 0;
  }

  void record(const void* p, const Stream& s) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(const_cast<void*>(p));
    if (it == live_.end()) return;
    DeviceGuard guard(s.device);
    CUevent e = nullptr;
    IGNIS_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    IGNIS_CU(cuEventRecord(e, s.handle));
    it->second.events.push_back(e);
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    release_locked();
  }

 private:
  struct Block {
    size_t size;
    bool in_use;
    std::vector<CUevent> events;
  };

  // Blocks freed while copies were pending return to the free lists once
  // their events have completed.
  void reclaim_locked() {
    for (auto& [p, b] : live_) {
      if (b.events.empty()) continue;
      std::vector<CUevent> left;
      for (CUevent e : b.events) {
        if (driver().cuEventQuery(e) == CUDA_ERROR_NOT_READY) left.push_back(e);
        else driver().cuEventDestroy(e);
      }
      b.events = std::move(left);
      if (b.events.empty() && !b.in_use) free_[b.size].push_back(p);
    }
  }

  void release_locked() {
    reclaim_locked();
    for (auto& [size, list] : free_) {
      for (void* p : list) {
        driver().cuMemFreeHost(p);
        live_.erase(p);
      }
      list.clear();
    }
  }

  std::mutex mu_;
  std::map<void*, Block> live_;
  std::map<size_t, std::vector<void*>> free_;
};

PinnedAllocator& pinned() {
  static auto* a = new PinnedAllocator();  // never destroyed (exit-time frees)
  return *a;
}

}  // namespace

Storage allocate_pinned_storage(size_t nbytes) {
  void* p = pinned().allocate(nbytes == 0 ? 1 : nbytes);
  return make_intrusive<StorageImpl>(p, nbytes, Device(DeviceType::CPU),
                                     [](void* q) { pinned().free(q); });
}

bool is_pinned(const void* ptr) {
  if (!ptr || !driver().is_loaded()) return false;
  return pinned().contains(ptr);
}

void record_pinned_use(const void* ptr, const Stream& stream) { pinned().record(ptr, stream); }

void empty_pinned_cache() { pinned().empty_cache(); }

}  // namespace ignis::cuda

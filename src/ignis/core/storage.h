// Storage: a block of device memory shared by a tensor and all of its views.
#pragma once

#include <cstddef>
#include <functional>
#include <utility>

#include "ignis/core/device.h"
#include "ignis/core/intrusive_ptr.h"

namespace ignis {

class StorageImpl : public RefCounted {
 public:
  using Deleter = std::function<void(void*)>;

  StorageImpl(void* data, size_t nbytes, Device device, Deleter deleter)
      : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}
  ~StorageImpl() override {
    if (deleter_) deleter_(data_);
  }

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  // False for storage that wraps memory owned elsewhere (e.g. a NumPy array).
  bool resizable() const { return resizable_; }
  void set_resizable(bool r) { resizable_ = r; }

  // Exchanges the memory (data pointer and deleter) of two storages of one
  // size and device, each keeping its identity. The one use: a CUDA graph's
  // output that someone still holds moves out of the graph's memory pool
  // into a copy before a replay overwrites it
  // (compiler/cudagraph_runner.h, Note [Outputs of a replayed graph]).
  void swap_memory(StorageImpl& other) {
    std::swap(data_, other.data_);
    std::swap(deleter_, other.deleter_);
  }

  // Fake storage (aot/fake.h): meta storage that stands for memory on
  // another device. Kernels see a meta tensor; the user sees this device.
  // Views share the storage, so they stand for the same device.
  bool is_fake() const { return fake_; }
  Device fake_device() const { return fake_device_; }
  void set_fake_device(Device d) {
    fake_ = true;
    fake_device_ = d;
  }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter deleter_;
  bool resizable_ = true;
  bool fake_ = false;
  Device fake_device_;
};

using Storage = intrusive_ptr<StorageImpl>;

// Allocates `nbytes` on `device`: 64-byte aligned host memory for cpu (from
// the caching allocator, core/cpu_allocator.h), no memory at all for meta. CUDA memory comes from the CUDA backend when one is
// built in; otherwise this raises a RuntimeError saying so.
Storage allocate_storage(size_t nbytes, Device device);

// Hook through which a CUDA backend installs its allocator.
using DeviceAllocatorFn = Storage (*)(size_t nbytes, Device device);
void register_device_allocator(DeviceType type, DeviceAllocatorFn fn);

}  // namespace ignis

// Fake tensors: full metadata, no data.
//
// Note [Fake tensors]
// A fake tensor is a meta tensor whose storage stands for memory on another
// device (StorageImpl::fake_device). Kernels see a meta tensor, so every op
// runs on it through its meta rule (the Meta kernel) and no kernel can touch
// data; the user, graph metadata and Python see the stood-for device
// (Tensor::user_device). Views share the fake storage, so aliasing between
// fakes is exactly the aliasing between the real tensors they stand for,
// which functionalization and autograd's view tracking rely on.
//
// A fake tensor carries the FakeTensor key. Its fallback converts real
// tensor arguments to fakes (through the active FakeTensorMode), runs the
// Meta kernel, and marks the outputs fake with the device the op's outputs
// would live on. While a FakeTensorMode is active, the FakeTensor key is in
// the thread's included keys, so factories (zeros, randn) make fakes too.
// Capture and AOT share this one implementation.
#pragma once

#include <unordered_map>

#include "ignis/core/tensor.h"

namespace ignis::aot {

class FakeTensorMode {
 public:
  FakeTensorMode() = default;
  FakeTensorMode(const FakeTensorMode&) = delete;
  FakeTensorMode& operator=(const FakeTensorMode&) = delete;

  // A fake with t's sizes, strides, offset, dtype and device (and
  // requires_grad). Memoized: one real tensor gives one fake, tensors
  // sharing a storage give fakes sharing one fake storage, and tensors
  // sharing a version counter (a view and its base) give fakes sharing one,
  // which starts at the real one's value: a write traced on any of them
  // moves it for all, and a view's fake made after that write compares its
  // real view version against it (Note [Fake version counters], fake.cpp).
  Tensor from_tensor(const Tensor& t);

  // The device the mode's fakes stand for (the first non-meta device a fake
  // was made for), or meta when none was yet.
  Device device() const { return device_; }
  void note_device(Device d) {
    if (device_.is_meta() && !d.is_meta()) device_ = d;
  }

 private:
  Device device_{DeviceType::Meta};
  std::unordered_map<const TensorImpl*, std::pair<Tensor, Tensor>> tensors_;  // real -> (real, fake)
  std::unordered_map<const StorageImpl*, std::pair<Storage, Storage>> storages_;
  // real -> (real, fake); the real is held so that its address is not reused
  std::unordered_map<const VersionCounter*,
                     std::pair<intrusive_ptr<VersionCounter>, intrusive_ptr<VersionCounter>>>
      counters_;
};

// A new fake tensor standing for `device`.
Tensor make_fake(const DimVector& sizes, const DimVector& strides, ScalarType dtype,
                 Device device, int64_t offset = 0);

// While alive: `mode` is the thread's active mode and factories make fakes.
class FakeModeGuard {
 public:
  explicit FakeModeGuard(FakeTensorMode& mode);
  ~FakeModeGuard();
  FakeModeGuard(const FakeModeGuard&) = delete;
  FakeModeGuard& operator=(const FakeModeGuard&) = delete;

 private:
  FakeTensorMode* prev_;
  DispatchKeySet prev_included_;
};

// The thread's active mode, or null.
FakeTensorMode* active_fake_mode();

// C++ code that builds tensors "on x's device" (derivative formulas, kernels
// of composite ops) passes meta when x is fake. While a mode is active such a
// meta device argument means the device the fakes stand for: the tracer
// records it and the fake layer allocates for it.
Device stood_for(Device d);

// Registers the FakeTensor fallback; idempotent.
void register_fake_kernel();

}  // namespace ignis::aot

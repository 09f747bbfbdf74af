// CUDA devices: enumeration, properties, the current device of each thread
// and the primary contexts.
//
// ignis uses each device's primary context (the one the runtime API and
// other frameworks share), retained on first use and never released. As in
// PyTorch, the current device is per thread and starts at 0.
#pragma once

#include <cstddef>
#include <string>

#include "ignis/core/device.h"

namespace ignis::cuda {

// The number of GPUs the driver sees; 0 when there is no driver or GPU (or
// ignis was built without CUDA). Never throws.
int device_count();
// device_count() > 0. Never throws.
bool is_available();
// Why is_available() is false (empty when it is true).
std::string unavailable_reason();

// Raises a RuntimeError unless CUDA is usable and `index` names a device.
void check_device(int index);

int current_device();
// Sets this thread's current device and makes its primary context current.
void set_device(int index);
// The device index of `d` (a cuda device; index -1: the current device).
int device_index(Device d);
// Makes `index`'s primary context current on this thread (retaining it once
// per process); every driver call on a device's memory or streams needs it.
void ensure_context(int index);
// Called once per device, right after its primary context is first retained
// (on the retaining thread). Set by blas.cpp at load time (Note [cuBLASLt
// warmed in the background]); a hook keeps this layer below the libraries.
void set_context_created_hook(void (*hook)(int index));

struct DeviceProperties {
  std::string name;
  size_t total_memory = 0;
  int multi_processor_count = 0;
  int major = 0, minor = 0;
};
const DeviceProperties& device_properties(int index);

// Waits for all work on the device.
void synchronize(int index);

// Makes a device current for a scope and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
};

}  // namespace ignis::cuda

#include "ignis/cuda/stream.h"

#include <array>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/kernel_errors.h"

namespace ignis::cuda {

namespace {

constexpr int kPoolSize = 32;

struct DevicePool {
  std::once_flag once;
  std::array<CUstream, kPoolSize> streams{};
  std::atomic<unsigned> next{0};
};

DevicePool& pool(int device) {
  static auto* pools = new std::vector<DevicePool>(static_cast<size_t>(device_count()));
  return (*pools)[static_cast<size_t>(device)];
}

// This thread's current stream per device (absent: the default stream).
thread_local std::unordered_map<int, CUstream> t_current;

}  // namespace

Stream default_stream(int device) {
  check_device(device);
  return Stream{device, nullptr};
}

Stream current_stream(int device) {
  if (device < 0) device = current_device();
  check_device(device);
  auto it = t_current.find(device);
  return Stream{device, it == t_current.end() ? nullptr : it->second};
}

void set_current_stream(const Stream& s) {
  check_device(s.device);
  t_current[s.device] = s.handle;
}

Stream pool_stream(int device) {
  check_device(device);
  DevicePool& p = pool(device);
  std::call_once(p.once, [&] {
    DeviceGuard guard(device);
    for (CUstream& s : p.streams) IGNIS_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  });
  return Stream{device, p.streams[p.next++ % kPoolSize]};
}

void synchronize_stream(const Stream& s) {
  DeviceGuard guard(s.device);
  IGNIS_CU(cuStreamSynchronize(s.handle));
  raise_kernel_errors(s.device);  // Note [Index errors on the GPU]
}

bool query_stream(const Stream& s) {
  DeviceGuard guard(s.device);
  CUresult r = driver().cuStreamQuery(s.handle);
  if (r == CUDA_ERROR_NOT_READY) return false;
  if (r != CUDA_SUCCESS) throw_driver_error(r, "cuStreamQuery");
  return true;
}

Event::Event(bool enable_timing) : timing_(enable_timing) {}

Event::~Event() {
  if (handle_) driver().cuEventDestroy(handle_);
}

void Event::record(const Stream& s) {
  DeviceGuard guard(s.device);
  if (!handle_) {
    IGNIS_CU(cuEventCreate(&handle_, timing_ ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING));
    device_ = s.device;
  }
  IGNIS_CHECK(device_ == s.device, "Event device ", device_,
              " does not match the recording stream's device ", s.device, ".");
  IGNIS_CU(cuEventRecord(handle_, s.handle));
}

void Event::block(const Stream& s) const {
  if (!handle_) return;
  DeviceGuard guard(s.device);
  IGNIS_CU(cuStreamWaitEvent(s.handle, handle_, 0));
}

bool Event::query() const {
  if (!handle_) return true;
  DeviceGuard guard(device_);
  CUresult r = driver().cuEventQuery(handle_);
  if (r == CUDA_ERROR_NOT_READY) return false;
  if (r != CUDA_SUCCESS) throw_driver_error(r, "cuEventQuery");
  return true;
}

void Event::synchronize() const {
  if (!handle_) return;
  DeviceGuard guard(device_);
  IGNIS_CU(cuEventSynchronize(handle_));
  raise_kernel_errors(device_);  // Note [Index errors on the GPU]
}

float Event::elapsed_ms(const Event& end) const {
  IGNIS_CHECK(timing_ && end.timing_,
              "Both events must be created with argument 'enable_timing=True'.");
  IGNIS_CHECK(handle_ && end.handle_, "Both events must be recorded before calculating elapsed time.");
  DeviceGuard guard(device_);
  float ms = 0;
  IGNIS_CU(cuEventElapsedTime(&ms, handle_, end.handle_));
  return ms;
}

}  // namespace ignis::cuda

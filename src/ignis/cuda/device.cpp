#include "ignis/cuda/device.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "ignis/core/error.h"
#include "ignis/cuda/driver.h"
#include "ignis/cuda/kernel_errors.h"

namespace ignis::cuda {

namespace {

thread_local int t_current_device = 0;
std::atomic<void (*)(int)> g_context_created_hook{nullptr};

struct Devices {
  std::once_flag once;
  int count = 0;
  std::string reason;
  std::vector<std::once_flag> ctx_once;
  std::vector<CUcontext> contexts;
  std::vector<std::unique_ptr<DeviceProperties>> props;
  std::mutex props_mu;
};

Devices& devices() {
  static auto* d = new Devices();  // never destroyed: used during exit
  std::call_once(d->once, [] {
    try {
      const DriverApi& api = require_driver();
      int n = 0;
      CUresult r = api.cuDeviceGetCount(&n);
      if (r != CUDA_SUCCESS) throw_driver_error(r, "cuDeviceGetCount");
      d->count = n;
      if (n == 0) d->reason = "no CUDA GPUs are available";
    } catch (const Error& e) {
      d->count = 0;
      d->reason = e.what();
    }
    d->ctx_once = std::vector<std::once_flag>(static_cast<size_t>(d->count));
    d->contexts.assign(static_cast<size_t>(d->count), nullptr);
    d->props.resize(static_cast<size_t>(d->count));
  });
  return *d;
}

}  // namespace

int device_count() { return devices().count; }
bool is_available() { return device_count() > 0; }
std::string unavailable_reason() { return devices().reason; }

void check_device(int index) {
  Devices& d = devices();
  IGNIS_CHECK(d.count > 0, d.reason);
  IGNIS_CHECK(index >= 0 && index < d.count, "CUDA error: invalid device ordinal ", index,
              " (there ", d.count == 1 ? "is 1 CUDA device" : str("are ", d.count, " CUDA devices"),
              ")");
}

int current_device() { return t_current_device; }

void ensure_context(int index) {
  check_device(index);
  Devices& d = devices();
  const DriverApi& api = driver();
  std::call_once(d.ctx_once[static_cast<size_t>(index)], [&] {
    CUdevice dev = 0;
    IGNIS_CU(cuDeviceGet(&dev, index));
    CUcontext ctx = nullptr;
    IGNIS_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    d.contexts[static_cast<size_t>(index)] = ctx;
    if (auto hook = g_context_created_hook.load()) hook(index);
  });
  CUcontext want = d.contexts[static_cast<size_t>(index)];
  CUcontext cur = nullptr;
  if (api.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != want) IGNIS_CU(cuCtxSetCurrent(want));
}

void set_context_created_hook(void (*hook)(int)) { g_context_created_hook.store(hook); }

void set_device(int index) {
  ensure_context(index);
  t_current_device = index;
}

int device_index(Device dev) {
  IGNIS_INTERNAL_ASSERT(dev.is_cuda());
  int index = dev.index < 0 ? current_device() : dev.index;
  check_device(index);
  return index;
}

const DeviceProperties& device_properties(int index) {
  check_device(index);
  Devices& d = devices();
  std::lock_guard<std::mutex> lock(d.props_mu);
  auto& slot = d.props[static_cast<size_t>(index)];
  if (!slot) {
    auto p = std::make_unique<DeviceProperties>();
    CUdevice dev = 0;
    IGNIS_CU(cuDeviceGet(&dev, index));
    char name[256] = {0};
    IGNIS_CU(cuDeviceGetName(name, sizeof(name) - 1, dev));
    p->name = name;
    IGNIS_CU(cuDeviceTotalMem(&p->total_memory, dev));
    IGNIS_CU(cuDeviceGetAttribute(&p->multi_processor_count,
                                  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    IGNIS_CU(cuDeviceGetAttribute(&p->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    IGNIS_CU(cuDeviceGetAttribute(&p->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    slot = std::move(p);
  }
  return *slot;
}

void synchronize(int index) {
  DeviceGuard guard(index);
  IGNIS_CU(cuCtxSynchronize());
  raise_kernel_errors(index);  // Note [Index errors on the GPU]
}

DeviceGuard::DeviceGuard(int index) : previous_(t_current_device) {
  set_device(index);
}

DeviceGuard::~DeviceGuard() {
  if (previous_ == t_current_device) return;
  try {
    set_device(previous_);
  } catch (...) {
    t_current_device = previous_;
  }
}

}  // namespace ignis::cuda

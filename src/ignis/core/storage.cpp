#include "ignis/core/storage.h"

#include <cstdlib>
#include <new>

#include "ignis/core/error.h"

namespace ignis {

namespace {
constexpr size_t kAlignment = 64;
DeviceAllocatorFn g_cuda_allocator = nullptr;

void cpu_free(void* p) { std::free(p); }
}  // namespace

void register_device_allocator(DeviceType type, DeviceAllocatorFn fn) {
  IGNIS_INTERNAL_ASSERT(type == DeviceType::CUDA);
  g_cuda_allocator = fn;
}

Storage allocate_storage(size_t nbytes, Device device) {
  switch (device.type) {
    case DeviceType::CPU: {
      size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
      void* p = nullptr;
      if (rounded > 0) {
        p = std::aligned_alloc(kAlignment, rounded);
        IGNIS_CHECK(p != nullptr, "CPU out of memory: tried to allocate ", nbytes, " bytes");
      }
      return make_intrusive<StorageImpl>(p, nbytes, Device(DeviceType::CPU),
                                         StorageImpl::Deleter(cpu_free));
    }
    case DeviceType::Meta:
      return make_intrusive<StorageImpl>(nullptr, nbytes, Device(DeviceType::Meta),
                                         StorageImpl::Deleter());
    case DeviceType::CUDA:
      IGNIS_CHECK(g_cuda_allocator != nullptr,
                  "ignis was built without CUDA support; cannot allocate on ", device.str());
      return g_cuda_allocator(nbytes, device);
  }
  IGNIS_INTERNAL_ASSERT(false);
}

}  // namespace ignis

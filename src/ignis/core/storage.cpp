#include "ignis/core/storage.h"

#include "ignis/core/cpu_allocator.h"
#include "ignis/core/error.h"

namespace ignis {

namespace {
DeviceAllocatorFn g_cuda_allocator = nullptr;
}  // namespace

void register_device_allocator(DeviceType type, DeviceAllocatorFn fn) {
  IGNIS_INTERNAL_ASSERT(type == DeviceType::CUDA);
  g_cuda_allocator = fn;
}

Storage allocate_storage(size_t nbytes, Device device) {
  switch (device.type) {
    case DeviceType::CPU: {
      if (nbytes == 0)
        return make_intrusive<StorageImpl>(nullptr, 0, Device(DeviceType::CPU),
                                           StorageImpl::Deleter());
      size_t block = 0;
      void* p = cpu_allocator().allocate(nbytes, &block);
      // The deleter carries the block size (stored inline in the std::function).
      return make_intrusive<StorageImpl>(p, nbytes, Device(DeviceType::CPU),
                                         [block](void* q) { cpu_allocator().free(q, block); });
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

#include "ignis/kernels/cuda/fill.h"

#include <cstring>

#include "ignis/cuda/device.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cpu/fill.h"
#include "ignis/kernels/cuda/copy.h"
#include "ignis/kernels/cuda/source.h"

namespace ignis::cuda {

void fill(const Tensor& t, const Scalar& v) {
  int64_t n = t.numel();
  if (n == 0) return;
  int device = t.device().index;
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  // The value's bytes in t's dtype, converted by the CPU's fill so that both
  // devices store the same bits.
  Tensor one = empty_tensor(DimVector{}, t.dtype(), Device(DeviceType::CPU));
  cpu::fill(one, v);
  uint64_t bits = 0;
  std::memcpy(&bits, one.data_ptr(), one.itemsize());
  void* p = t.data_ptr();
  if (t.is_contiguous() && bits == 0) {
    IGNIS_CU(cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(p), 0, size_t(n) * t.itemsize(),
                             stream.handle));
    return;
  }
  if (t.is_contiguous()) {
    CUfunction f = eager_function(device, "fill_contiguous", {t.dtype()});
    void* args[] = {&p, &bits, &n};
    launch_grid_stride(f, n, args, stream);
    return;
  }
  KernelGeometry g = geometry_for(t, nullptr);
  CUfunction f = eager_function(device, "fill_strided", {t.dtype()});
  void* args[] = {&p, &bits, &n, &g};
  launch_grid_stride(f, n, args, stream);
}

}  // namespace ignis::cuda

#include "ignis/kernels/device_kernels.h"

#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/fill.h"
#include "ignis/kernels/cuda/copy.h"
#include "ignis/kernels/cuda/fill.h"

namespace ignis {

void copy_tensor(const Tensor& dst, const Tensor& src, bool non_blocking) {
  if (dst.device().is_cuda() || src.device().is_cuda()) cuda::copy(dst, src, non_blocking);
  else copy_into(dst, src);
}

void fill_tensor(const Tensor& t, const Scalar& v) {
  if (t.device().is_cuda()) cuda::fill(t, v);
  else cpu::fill(t, v);
}

Scalar tensor_to_scalar(const Tensor& v) {
  Tensor h = v;
  if (v.device().is_cuda()) {
    h = empty_tensor(v.sizes(), v.dtype(), Device(DeviceType::CPU));
    cuda::copy(h, v);
  }
  return h.dtype() == ScalarType::Bool ? Scalar(h.item_int() != 0)
         : is_floating(h.dtype())      ? Scalar(h.item_double())
                                       : Scalar(h.item_int());
}

}  // namespace ignis

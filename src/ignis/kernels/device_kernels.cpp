#include "ignis/kernels/device_kernels.h"

#include "ignis/core/error.h"

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
  if (is_complex(t.dtype())) {  // a real value: the real parts, zero imaginary parts
    fill_tensor(complex_part(t, 0), v);
    fill_tensor(complex_part(t, 1), Scalar(int64_t(0)));
    return;
  }
  if (t.device().is_cuda()) cuda::fill(t, v);
  else cpu::fill(t, v);
}

Scalar tensor_to_scalar(const Tensor& v) {
  Tensor h = v;
  if (v.device().is_cuda()) {
    h = empty_tensor(v.sizes(), v.dtype(), Device(DeviceType::CPU));
    cuda::copy(h, v);
  }
  IGNIS_CHECK(!is_complex(h.dtype()), "a complex value where a real number is expected");
  return h.dtype() == ScalarType::Bool ? Scalar(h.item_int() != 0)
         : is_floating(h.dtype())      ? Scalar(h.item_double())
                                       : Scalar(h.item_int());
}

void resize_tensor(const Tensor& t, const DimVector& sizes) {
  if (t.sizes() == sizes && t.is_contiguous()) return;
  IGNIS_CHECK(!t.is_fake(), "cannot resize a fake tensor");
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) {
    IGNIS_CHECK_VALUE(s >= 0, "Trying to create tensor with negative dimension ", s, ": ",
                      shape_str(sizes));
    overflow |= __builtin_mul_overflow(n, s, &n);
  }
  int64_t need = 0;
  overflow |= __builtin_mul_overflow(n, static_cast<int64_t>(t.itemsize()), &need);
  IGNIS_CHECK(!overflow, "resize_(): ", shape_str(sizes), " has too many bytes");
  TensorImpl* impl = t.impl();
  const int64_t offset_bytes = t.storage_offset() * static_cast<int64_t>(t.itemsize());
  const Storage& old = impl->storage();
  if (static_cast<int64_t>(old->nbytes()) < offset_bytes + need) {
    IGNIS_CHECK(old->resizable(), "Trying to resize storage that is not resizable (memory "
                "shared with NumPy or another library cannot grow from ", t.shape_str(), " to ",
                shape_str(sizes), ")");
    // The storage grows as PyTorch's does: its old bytes move with it.
    Storage grown = allocate_storage(static_cast<size_t>(offset_bytes + need), t.device());
    const int64_t keep = static_cast<int64_t>(old->nbytes());
    if (keep > 0) {
      auto bytes = [keep](const Storage& st) {
        return Tensor(make_intrusive<TensorImpl>(st, ScalarType::UInt8, DimVector{keep},
                                                 DimVector{1}, 0));
      };
      copy_tensor(bytes(grown), bytes(old));
    }
    impl->set_storage(std::move(grown));
  }
  impl->set_geometry(sizes, contiguous_strides(sizes), t.storage_offset());
}

}  // namespace ignis

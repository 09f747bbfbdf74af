#include "ignis/kernels/cuda/copy.h"

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/memory.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cuda/source.h"

namespace ignis::cuda {

namespace {

CUdeviceptr dptr(const Tensor& t) { return reinterpret_cast<CUdeviceptr>(t.data_ptr()); }
size_t nbytes(const Tensor& t) { return static_cast<size_t>(t.numel()) * t.itemsize(); }
// The start of t's storage: what the pinned allocator knows a block by.
const void* block_of(const Tensor& t) { return t.impl()->storage()->data(); }

// Same dtype, same shape, both contiguous: bytes can move as they are.
bool plain_bytes(const Tensor& dst, const Tensor& src) {
  return dst.dtype() == src.dtype() && dst.sizes() == src.sizes() && dst.is_contiguous() &&
         src.is_contiguous();
}

// Same-device copy by a kernel: contiguous or strided, converting.
void copy_kernel(const Tensor& dst, const Tensor& src, int device, const Stream& stream) {
  int64_t n = dst.numel();
  void* d = dst.data_ptr();
  const void* s = src.data_ptr();
  if (dst.is_contiguous() && src.is_contiguous() && dst.sizes() == src.sizes()) {
    CUfunction f = eager_function(device, "copy_contiguous", {dst.dtype(), src.dtype()});
    void* args[] = {&d, &s, &n};
    launch_grid_stride(f, n, args, stream);
    return;
  }
  KernelGeometry g = geometry_for(dst, &src);
  CUfunction f = eager_function(device, "copy_strided", {dst.dtype(), src.dtype()});
  void* args[] = {&d, &s, &n, &g};
  launch_grid_stride(f, n, args, stream);
}

void device_to_device(const Tensor& dst, const Tensor& src) {
  int device = dst.device().index;
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  if (src.device().index != device) {
    // Across GPUs: contiguous bytes by the driver (peer or staged), then here.
    Tensor s = src;
    if (!s.is_contiguous()) {
      s = empty_tensor(src.sizes(), src.dtype(), src.device());
      copy(s, src);
    }
    Tensor local = empty_tensor(src.sizes(), src.dtype(), dst.device());
    // The source's stream must be done writing it.
    synchronize_stream(current_stream(src.device().index));
    IGNIS_CU(cuMemcpyDtoDAsync(dptr(local), dptr(s), nbytes(s), stream.handle));
    copy(dst, local);
    return;
  }
  if (plain_bytes(dst, src)) {
    IGNIS_CU(cuMemcpyDtoDAsync(dptr(dst), dptr(src), nbytes(dst), stream.handle));
    return;
  }
  copy_kernel(dst, src, device, stream);
}

void host_to_device(const Tensor& dst, const Tensor& src, bool non_blocking) {
  int device = dst.device().index;
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  // The host side in dst's shape and dtype, contiguous (the CPU converts).
  Tensor host = src;
  if (!(src.dtype() == dst.dtype() && src.sizes() == dst.sizes() && src.is_contiguous())) {
    host = empty_tensor(dst.sizes(), dst.dtype(), Device(DeviceType::CPU));
    copy_into(host, src);
  }
  Tensor target = dst.is_contiguous() ? dst : empty_tensor(dst.sizes(), dst.dtype(), dst.device());
  IGNIS_CU(cuMemcpyHtoDAsync(dptr(target), host.data_ptr(), nbytes(target), stream.handle));
  if (!target.is_same(dst)) copy_kernel(dst, target, device, stream);
  bool pinned = is_pinned(block_of(host));
  if (non_blocking && pinned) {
    record_pinned_use(block_of(host), stream);
    return;
  }
  // Pageable memory has been staged by the time the call returns; the copy
  // is still waited for unless non_blocking, as torch does.
  if (!non_blocking) synchronize_stream(stream);
}

void device_to_host(const Tensor& dst, const Tensor& src, bool non_blocking) {
  int device = src.device().index;
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  Tensor dev = src;
  if (!src.is_contiguous()) {
    dev = empty_tensor(src.sizes(), src.dtype(), src.device());
    copy_kernel(dev, src, device, stream);
  }
  if (plain_bytes(dst, dev)) {
    IGNIS_CU(cuMemcpyDtoHAsync(dst.data_ptr(), dptr(dev), nbytes(dev), stream.handle));
    if (non_blocking && is_pinned(block_of(dst))) {
      record_pinned_use(block_of(dst), stream);
      return;
    }
    synchronize_stream(stream);
    return;
  }
  Tensor host = empty_tensor(src.sizes(), src.dtype(), Device(DeviceType::CPU));
  IGNIS_CU(cuMemcpyDtoHAsync(host.data_ptr(), dptr(dev), nbytes(dev), stream.handle));
  synchronize_stream(stream);
  copy_into(dst, host);
}

}  // namespace

KernelGeometry geometry_for(const Tensor& dst, const Tensor* src) {
  int64_t nd = dst.dim();
  IGNIS_CHECK(nd <= kMaxKernelDims, "CUDA kernels handle at most ", kMaxKernelDims,
              " dims, got a tensor of ", nd);
  KernelGeometry g{};
  g.ndim = static_cast<int32_t>(nd);
  int64_t off = src ? nd - src->dim() : 0;  // src's dims align to dst's last ones
  for (int64_t d = 0; d < nd; ++d) {
    g.sizes[d] = dst.size(d);
    g.dst_strides[d] = dst.stride(d);
    if (src && d >= off) {
      int64_t sd = d - off;
      g.src_strides[d] = src->size(sd) == 1 && dst.size(d) != 1 ? 0 : src->stride(sd);
    }
  }
  return g;
}

void copy(const Tensor& dst, const Tensor& src, bool non_blocking) {
  if (dst.numel() == 0) return;
  bool to_gpu = dst.device().is_cuda(), from_gpu = src.device().is_cuda();
  IGNIS_INTERNAL_ASSERT(to_gpu || from_gpu);
  if (to_gpu && from_gpu) device_to_device(dst, src);
  else if (to_gpu) host_to_device(dst, src, non_blocking);
  else device_to_host(dst, src, non_blocking);
}

}  // namespace ignis::cuda

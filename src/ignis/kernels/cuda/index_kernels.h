// The indexing family's data movement on CUDA tensors, with
// kernels/cpu/index_kernels.h's signatures so that ops/index.cpp keeps one
// implementation per op and routes only the primitive by device.
//
// mapped_copy is the CPU's pattern as one kernel: a thread per position of
// the dims, each dim mapping its position to a byte offset in dst and in src
// by a stride or through a table (the index offsets, computed on the host by
// the same cpu::index_offsets and uploaded). MapOp::Add adds atomically
// (float, double, int32 and int64 natively; 8- and 16-bit types by a
// compare-and-swap on their aligned 32-bit word), so repeated indices sum in
// an unspecified order (torch's CUDA index_put_ and index_add_ do the same);
// a plain copy to a repeated position keeps one of the writes, not
// necessarily the last as the CPU does.
#pragma once

#include <vector>

#include "ignis/core/scalar.h"
#include "ignis/core/tensor.h"
#include "ignis/cuda/kernel_cache.h"
#include "ignis/cuda/kernel_errors.h"
#include "ignis/kernels/cpu/index_kernels.h"

namespace ignis::cuda {

// An index tensor the kernel reads on the device (Note [Index errors on the
// GPU], cuda/kernel_errors.h), instead of a table of offsets built on the
// host from a synchronizing copy: at each position of the mapped copy's
// dims, the value at sum_d position[d] * strides[d] elements from `data`
// (int64, or int32) times `scale` bytes is added to dst's offset
// (`into_dst`) or src's. A value outside [0, bound) -- [-bound, bound),
// counted from the end, when `wrap` -- moves nothing; the kernel records
// `kind` with the value, `bound` and `dim`, and the host raises it at its
// next synchronization.
inline constexpr int kMaxDeviceIndices = 4;  // IG_MAX_DEVICE_INDICES in the kernels (index_kernels.cpp)
struct DeviceIndex {
  const void* data = nullptr;
  bool int32 = false;
  std::vector<int64_t> strides;  // elements, one per dim of the mapped copy
  int64_t scale = 0, bound = 0, dim = 0;
  bool wrap = false, into_dst = false;
  KernelErrorKind kind = KernelErrorKind::IndexOutOfBounds;
};

// cpu::mapped_copy on `device`: dst and src point into that device's memory,
// tables hold byte offsets, and up to kMaxDeviceIndices `indices` add their
// offsets. At most 16 dims after dropping size-1 ones.
void mapped_copy(int device, char* dst, const char* src, std::vector<cpu::MapDim> dims,
                 ScalarType dtype, cpu::MapOp op, const Scalar& alpha = Scalar(int64_t(1)),
                 std::vector<DeviceIndex> indices = {});

// cpu::scatter_reduce's reduction on `device`, planned on the host: group g
// reduces the src elements at byte offsets src_off[starts[g] .. starts[g +
// 1]) (in the CPU's order: the index's row-major order) into the out element
// at byte offset dst_off[g], from its value when `include_self`. A thread per
// group folds them one by one, rounding to the dtype after each step as the
// CPU does, so both devices return the same bits; mean divides by the count
// (floor division for integers).
void scatter_reduce_grouped(int device, char* out, const char* src,
                            const std::vector<int64_t>& dst_off,
                            const std::vector<int64_t>& starts,
                            const std::vector<int64_t>& src_off, ScalarType dtype, cpu::Reduce r,
                            bool include_self);

// cpu::zero_triangle on a CUDA tensor (any strides).
void zero_triangle(const Tensor& t, int64_t k, bool lower);

// The kernels above for dtype `t`, for tests that compile them without a GPU.
std::vector<KernelRequest> index_kernel_requests(ScalarType t);
// The mapped copy of 16-byte units (Note [Mapped copies in units]), likewise.
std::vector<KernelRequest> copy_unit_kernel_requests();

}  // namespace ignis::cuda

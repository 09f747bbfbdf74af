#include "ignis/kernels/cuda/copy.h"

#include <algorithm>
#include <vector>

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

// Note [Row copies]
// A strided copy whose innermost dim (after dropping dims of one and
// merging neighbours that both layouts keep adjacent) has unit stride on
// both sides is a copy of rows: cat into a slice, a transpose that keeps
// the last dim ([B, H, T, D] -> [B, T, H, D]), contiguous() of a sliced or
// broadcast tensor, a float32 workspace rounded into a strided bfloat16
// result. A thread moves a unit of V elements, finding its row's offsets
// from the few merged dims with 32-bit arithmetic where every offset fits.
// One dtype moves as bytes (V bytes a unit, 16 halved until the row
// length, both pointers and every row stride divide by it: ten
// dtype-blind kernels); between floating dtypes each unit converts V
// elements (16 bytes of the wider side, halved likewise). The element
// kernel (copy_strided) takes the rest, paying a 64-bit division per dim
// for every element; on the H200 it moved 0.4-0.5 TB/s on the GPT's
// attention layouts.
struct RowCopyParams {  // must match IgRowCopy
  void* dst = nullptr;
  const void* src = nullptr;
  int64_t rows = 0, units = 0;
  int64_t sizes[kMaxKernelDims - 1] = {};
  int64_t dst_strides[kMaxKernelDims - 1] = {};  // in units
  int64_t src_strides[kMaxKernelDims - 1] = {};
  int32_t ndim = 0;
};

const char* kRowCopyTemplate = R"CUDA(
// ---- row copies (kernels/cuda/copy.cpp, Note [Row copies]) ----
template <class T, int V> struct alignas(sizeof(T) * V) IgCopyVec { T v[V]; };
struct IgRowCopy {
  char* dst; const char* src;
  int64_t rows, units;
  int64_t sizes[15], dst_strides[15], src_strides[15];
  int32_t ndim;
};
template <class D, class S, int V, class I> __device__ __forceinline__ void ig_copy_rows(const IgRowCopy& p) {
  IgCopyVec<D, V>* dst = reinterpret_cast<IgCopyVec<D, V>*>(p.dst);
  const IgCopyVec<S, V>* src = reinterpret_cast<const IgCopyVec<S, V>*>(p.src);
  const I units = I(p.units), n = I(p.rows) * units;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    I row = i / units;
    I od = i - row * units, os = od;
    for (int d = p.ndim - 1; d >= 0; --d) {
      const I size = I(p.sizes[d]), k = row % size;
      row /= size;
      od += k * I(p.dst_strides[d]);
      os += k * I(p.src_strides[d]);
    }
    const IgCopyVec<S, V> a = src[os];
    IgCopyVec<D, V> b;
#pragma unroll
    for (int e = 0; e < V; ++e) b.v[e] = ig_convert<D>(a.v[e]);
    dst[od] = b;
  }
}
)CUDA";

// The kernel moving units of `vec` elements from dtype s to d (UInt8 both
// for a same-dtype copy, which moves bytes).
std::string row_copy_symbol(ScalarType d, ScalarType s, int vec, bool narrow) {
  return str("copy_rows_", dtype_name(d), "_", dtype_name(s), "_v", vec, narrow ? "_i32" : "_i64");
}

KernelRequest row_copy_request(ScalarType d, ScalarType s, int vec, bool narrow) {
  KernelRequest r;
  r.symbol = row_copy_symbol(d, s, vec, narrow);
  r.label = r.symbol + ".cu";
  r.source = str(eager_prelude(), kRowCopyTemplate, kKernelBodyMarker,
                 "extern \"C\" __global__ void ", r.symbol, "(IgRowCopy p) { ig_copy_rows<",
                 device_type_name(d), ", ", device_type_name(s), ", ", vec, ", ",
                 narrow ? "uint32_t" : "int64_t", ">(p); }\n");
  r.options = {"-default-device", "-w"};
  return r;
}

// The widest unit (elements) the converting row kernels take for d <- s:
// 16 bytes of the wider dtype.
int widest_unit(ScalarType d, ScalarType s) {
  return static_cast<int>(16 / std::max(element_size(d), element_size(s)));
}

// Copies dst = src (src broadcast to dst) as rows when the layouts and
// dtypes allow (Note [Row copies]); false when they do not.
bool copy_rows(const Tensor& dst, const Tensor& src, int device, const Stream& stream) {
  const bool same = dst.dtype() == src.dtype();
  if (!same && !(is_floating(dst.dtype()) && is_floating(src.dtype()))) return false;
  const KernelGeometry g = geometry_for(dst, &src);
  struct Dim {
    int64_t size, ds, ss;
  };
  std::vector<Dim> dims;  // outermost first; a dim merges into the one before it
  for (int d = 0; d < g.ndim; ++d) {
    const Dim x{g.sizes[d], g.dst_strides[d], g.src_strides[d]};
    if (x.size == 1) continue;
    if (!dims.empty() && dims.back().ds == x.ds * x.size && dims.back().ss == x.ss * x.size)
      dims.back() = {dims.back().size * x.size, x.ds, x.ss};
    else
      dims.push_back(x);
  }
  if (dims.empty() || dims.back().ds != 1 || dims.back().ss != 1) return false;
  // Elements: bytes for a same-dtype copy, else the dtypes' own.
  const ScalarType dt = same ? ScalarType::UInt8 : dst.dtype();
  const ScalarType st = same ? ScalarType::UInt8 : src.dtype();
  const int64_t scale = same ? static_cast<int64_t>(dst.itemsize()) : 1;  // elements an element
  const auto dsize = static_cast<int64_t>(element_size(dt));
  const auto ssize = static_cast<int64_t>(element_size(st));
  const int64_t row = dims.back().size * scale;
  dims.pop_back();
  if (dims.size() > kMaxKernelDims - 1) return false;
  auto fits = [&](int64_t v) {
    if (row % v != 0 || reinterpret_cast<uintptr_t>(dst.data_ptr()) % (v * dsize) != 0 ||
        reinterpret_cast<uintptr_t>(src.data_ptr()) % (v * ssize) != 0)
      return false;
    for (const Dim& x : dims)
      if ((x.ds * scale) % v != 0 || (x.ss * scale) % v != 0) return false;
    return true;
  };
  int vec = widest_unit(dt, st);
  while (vec > 1 && !fits(vec)) vec /= 2;
  RowCopyParams p;
  p.dst = dst.data_ptr();
  p.src = src.data_ptr();
  p.units = row / vec;
  p.rows = 1;
  p.ndim = static_cast<int32_t>(dims.size());
  int64_t dst_end = p.units, src_end = p.units;  // one past the last unit each side reaches
  for (size_t d = 0; d < dims.size(); ++d) {
    p.sizes[d] = dims[d].size;
    p.dst_strides[d] = dims[d].ds * scale / vec;
    p.src_strides[d] = dims[d].ss * scale / vec;
    p.rows *= dims[d].size;
    dst_end += (dims[d].size - 1) * p.dst_strides[d];
    src_end += (dims[d].size - 1) * p.src_strides[d];
  }
  const int64_t n = p.rows * p.units;
  const int64_t limit = int64_t(1) << 31;  // i plus a grid's step stays below 2^32
  const bool narrow = n < limit && dst_end < limit && src_end < limit;
  CUfunction f = get_named_kernel(device, row_copy_symbol(dt, st, vec, narrow),
                                  [&] { return row_copy_request(dt, st, vec, narrow); });
  void* args[] = {&p};
  launch_grid_stride(f, n, args, stream);
  return true;
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
  if (copy_rows(dst, src, device, stream)) return;
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

std::vector<KernelRequest> row_copy_kernel_requests() {
  std::vector<KernelRequest> v;
  const ScalarType floats[] = {ScalarType::Float16, ScalarType::BFloat16, ScalarType::Float32,
                               ScalarType::Float64};
  for (bool narrow : {false, true}) {
    for (int vec = 1; vec <= 16; vec *= 2)
      v.push_back(row_copy_request(ScalarType::UInt8, ScalarType::UInt8, vec, narrow));
    for (ScalarType d : floats)
      for (ScalarType s : floats)
        if (d != s)
          for (int vec = 1; vec <= widest_unit(d, s); vec *= 2)
            v.push_back(row_copy_request(d, s, vec, narrow));
  }
  return v;
}

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

#include "ignis/kernels/cuda/index_kernels.h"

#include <algorithm>


#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/kernel_errors.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cuda/copy.h"
#include "ignis/kernels/cuda/device_scalar_ops.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis::cuda {

namespace {

// Must match IgMapDim / IgDeviceIndex / IgMapParams in kTemplates.
struct MapDimArg {
  int64_t size, dst_stride, src_stride;
  const int64_t* dst_table;
  const int64_t* src_table;
};
struct DeviceIndexArg {
  const void* data;
  int64_t strides[kMaxKernelDims];
  int64_t scale, bound, dim;
  int32_t int32, wrap, into_dst, kind;
};
struct MapParams {
  char* dst;
  const char* src;
  int64_t total;
  double alpha_f;
  int64_t alpha_i;
  int32_t ndim, nindex;
  MapDimArg dims[kMaxKernelDims];
  DeviceIndexArg index[kMaxDeviceIndices];
  KernelErrorRecord* error;
};

// Must match IgScatterReduceParams in kTemplates.
struct ScatterReduceParams {
  char* out;
  const char* src;
  const int64_t *dst_off, *starts, *src_off;
  int64_t groups;
  int32_t reduce, include_self;
};
static_assert(static_cast<int>(cpu::Reduce::Sum) == 0 && static_cast<int>(cpu::Reduce::Prod) == 1 &&
              static_cast<int>(cpu::Reduce::Mean) == 2 && static_cast<int>(cpu::Reduce::Max) == 3 &&
              static_cast<int>(cpu::Reduce::Min) == 4, "the kernel's reduce codes");

const char* kTemplates = R"CUDA(
// ---- indexing (kernels/cuda/index_kernels.cpp) ----
#define IG_MAX_DEVICE_INDICES 4  // kMaxDeviceIndices (index_kernels.h)
struct IgMapDim {
  int64_t size, dst_stride, src_stride;
  const int64_t* dst_table;  // byte offsets, or null: the stride
  const int64_t* src_table;
};
// An index read on the device (Note [Index errors on the GPU], cuda/
// kernel_errors.h): at position p its value sits at sum_d p[d] * strides[d]
// elements of data; scale bytes per unit are added to dst's offset
// (into_dst) or src's. A value outside [0, bound) -- [-bound, bound), from
// the end, when wrap -- moves nothing and is recorded for the host.
struct IgDeviceIndex {
  const void* data;
  int64_t strides[IG_MAX_DIMS];
  int64_t scale, bound, dim;
  int32_t int32, wrap, into_dst, kind;
};
struct IgMapParams {
  char* dst; const char* src;
  int64_t total;
  double alpha_f; int64_t alpha_i;  // MapOp::Add's alpha, for float and integer C
  int32_t ndim, nindex;
  IgMapDim dims[IG_MAX_DIMS];
  IgDeviceIndex index[IG_MAX_DEVICE_INDICES];
  IgKernelError* error;
};
// Byte offsets of position i (dims[0] outermost) in dst and src; false when
// one of its device indices is out of range (recorded, nothing to move).
__forceinline__ bool ig_map_offsets(const IgMapParams& p, int64_t i, int64_t& od, int64_t& os) {
  int64_t rem = i;
  int64_t io[IG_MAX_DEVICE_INDICES] = {};
  od = 0;
  os = 0;
  for (int d = p.ndim - 1; d >= 0; --d) {
    const IgMapDim& m = p.dims[d];
    const int64_t k = rem % m.size;
    rem /= m.size;
    od += m.dst_table ? m.dst_table[k] : k * m.dst_stride;
    os += m.src_table ? m.src_table[k] : k * m.src_stride;
    for (int j = 0; j < p.nindex; ++j) io[j] += k * p.index[j].strides[d];
  }
  for (int j = 0; j < p.nindex; ++j) {
    const IgDeviceIndex& x = p.index[j];
    int64_t v = x.int32 ? int64_t(static_cast<const int32_t*>(x.data)[io[j]])
                        : static_cast<const int64_t*>(x.data)[io[j]];
    const int64_t given = v;
    if (v < 0 && x.wrap) v += x.bound;
    if (v < 0 || v >= x.bound) {
      ig_record_error(p.error, x.kind, given, x.bound, x.dim);
      return false;
    }
    if (x.into_dst) od += v * x.scale;
    else os += v * x.scale;
  }
  return true;
}
// Atomic *p += v: the hardware's for 32- and 64-bit types, a compare-and-swap
// of the aligned 32-bit word holding *p for 8- and 16-bit ones (v already in
// op-math; the sum rounds to T as the CPU's store does).
__forceinline__ void ig_atomic_add(float* p, float v) { atomicAdd(p, v); }
__forceinline__ void ig_atomic_add(double* p, double v) { atomicAdd(p, v); }
__forceinline__ void ig_atomic_add(int32_t* p, int32_t v) {
  atomicAdd(reinterpret_cast<int*>(p), int(v));
}
__forceinline__ void ig_atomic_add(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)(v));
}
template <class T, class C> __forceinline__ void ig_atomic_add_narrow(T* p, C v) {
  const unsigned long long addr = reinterpret_cast<unsigned long long>(p);
  unsigned int* w = reinterpret_cast<unsigned int*>(addr & ~3ull);
  const unsigned int shift = unsigned(addr & 3ull) * 8u;
  const unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
  unsigned int old = *w, assumed;
  do {
    assumed = old;
    union { T t; uint8_t u8; uint16_t u16; } cur, next;
    if (sizeof(T) == 1) cur.u8 = uint8_t((assumed & mask) >> shift);
    else cur.u16 = uint16_t((assumed & mask) >> shift);
    next.t = ig_convert<T>(ig_convert<C>(cur.t) + v);
    const unsigned int nb = sizeof(T) == 1 ? unsigned(next.u8) : unsigned(next.u16);
    old = atomicCAS(w, assumed, (assumed & ~mask) | ((nb << shift) & mask));
  } while (old != assumed);
}
template <class T, class C> __forceinline__ void ig_atomic_add_any(T* p, C v) {
  if constexpr (sizeof(T) >= 4) ig_atomic_add(p, T(v));
  else ig_atomic_add_narrow<T, C>(p, v);
}
// A 16-byte unit of a mapped copy (Note [Mapped copies in units]).
struct alignas(16) IgU128 { unsigned long long lo, hi; };
// dst[od] = src[os], moving U (an unsigned type of the item's or unit's size).
template <class U> __forceinline__ void ig_map_copy(const IgMapParams& p) {
  IG_GRID_STRIDE_LOOP(i, p.total) {
    int64_t od, os;
    if (!ig_map_offsets(p, i, od, os)) continue;
    *reinterpret_cast<U*>(p.dst + od) = *reinterpret_cast<const U*>(p.src + os);
  }
}
// dst[od] += alpha * src[os] in op-math C, atomically.
template <class T, class C> __forceinline__ void ig_map_add(const IgMapParams& p) {
  const C a = C(0.5) != C(0) ? C(p.alpha_f) : C(p.alpha_i);
  IG_GRID_STRIDE_LOOP(i, p.total) {
    int64_t od, os;
    if (!ig_map_offsets(p, i, od, os)) continue;
    const C v = a * ig_convert<C>(*reinterpret_cast<const T*>(p.src + os));
    ig_atomic_add_any<T, C>(reinterpret_cast<T*>(p.dst + od), v);
  }
}
// Must match ScatterReduceParams (index_kernels.cpp). reduce: cpu::Reduce's
// values (Sum, Prod, Mean, Max, Min).
struct IgScatterReduceParams {
  char* out; const char* src;
  const int64_t *dst_off, *starts, *src_off;
  int64_t groups;
  int32_t reduce, include_self;
};
template <class T, class C> __forceinline__ T ig_scatter_step(T a, T b, int32_t reduce) {
  const C x = ig_convert<C>(a), y = ig_convert<C>(b);
  switch (reduce) {
    case 1: return ig_convert<T>(x * y);
    case 3: return y != y || y > x ? b : a;  // NaN wins
    case 4: return y != y || y < x ? b : a;
    default: return ig_convert<T>(x + y);
  }
}
// Without include_self the fold starts from the first element -- the CPU
// starts from the reduction's identity, and identity op x == x exactly,
// except that 0 + -0.0 is +0.0: a sum starts from 0 + x.
template <class T, class C> __forceinline__ void ig_scatter_reduce(const IgScatterReduceParams& p) {
  IG_GRID_STRIDE_LOOP(g, p.groups) {
    T* o = reinterpret_cast<T*>(p.out + p.dst_off[g]);
    int64_t s = p.starts[g];
    const int64_t e = p.starts[g + 1];
    T acc;
    if (p.include_self) {
      acc = *o;
    } else {
      acc = *reinterpret_cast<const T*>(p.src + p.src_off[s++]);
      if (p.reduce == 0 || p.reduce == 2) acc = ig_convert<T>(ig_convert<C>(0) + ig_convert<C>(acc));
    }
    for (; s < e; ++s)
      acc = ig_scatter_step<T, C>(acc, *reinterpret_cast<const T*>(p.src + p.src_off[s]),
                                  p.reduce);
    if (p.reduce == 2) {
      const int64_t n = e - p.starts[g] + (p.include_self ? 1 : 0);
      if constexpr (C(0.5) != C(0)) {
        acc = ig_convert<T>(ig_convert<C>(acc) / C(n));
      } else if constexpr (C(2) != C(1)) {  // integers; bool keeps its value
        const int64_t v = int64_t(acc);
        int64_t q = v / n;
        if (v % n != 0 && v < 0) --q;  // floor division, as PyTorch
        acc = T(q);
      }
    }
    *o = acc;
  }
}
// Zeroes the elements of t (any strides, g.dst_strides) outside the lower
// (col - row <= k) or upper (col - row >= k) triangle of its last two dims.
template <class T> __forceinline__ void ig_tri_zero(T* t, int64_t n, int64_t k, int32_t lower,
                                                    const Geometry& g) {
  const T z = ig_convert<T>(0.0f);
  IG_GRID_STRIDE_LOOP(i, n) {
    int64_t rem = i, off = 0, r = 0, c = 0;
    for (int d = g.ndim - 1; d >= 0; --d) {
      const int64_t q = rem % g.sizes[d];
      rem /= g.sizes[d];
      off += q * g.dst_strides[d];
      if (d == g.ndim - 1) c = q;
      else if (d == g.ndim - 2) r = q;
    }
    if (lower ? c - r > k : c - r < k) t[off] = z;
  }
}
)CUDA";

const char* copy_type(size_t itemsize) {
  switch (itemsize) {
    case 1: return "uint8_t";
    case 2: return "uint16_t";
    case 4: return "uint32_t";
    case 8: return "uint64_t";
    case 16: return "IgU128";
    default: break;
  }
  IGNIS_FAIL("no CUDA mapped copy for items of ", itemsize, " bytes");
}

std::string prefix() { return str(eager_prelude(), device_scalar_ops_source(), kTemplates); }

KernelRequest make_request(std::string symbol, const std::string& body) {
  KernelRequest r;
  r.label = symbol + ".cu";
  r.symbol = std::move(symbol);
  r.source = str(prefix(), kKernelBodyMarker, body);
  r.options = {"-default-device", "-w"};
  return r;
}

// The kernels, by name: map_copy_<bytes>, map_add_<dtype>, tri_zero_<dtype>.
KernelRequest map_copy_request(size_t itemsize) {
  const std::string sym = str("map_copy_", itemsize);
  return make_request(sym, str("extern \"C\" __global__ void ", sym,
                               "(IgMapParams p) { ig_map_copy<", copy_type(itemsize), ">(p); }\n"));
}
KernelRequest map_add_request(ScalarType t) {
  const std::string sym = str("map_add_", dtype_name(t));
  return make_request(sym, str("extern \"C\" __global__ void ", sym,
                               "(IgMapParams p) { ig_map_add<", device_type_name(t), ", ",
                               device_opmath_name(t), ">(p); }\n"));
}
KernelRequest scatter_reduce_request(ScalarType t) {
  const std::string sym = str("scatter_reduce_", dtype_name(t));
  return make_request(sym, str("extern \"C\" __global__ void ", sym,
                               "(IgScatterReduceParams p) { ig_scatter_reduce<",
                               device_type_name(t), ", ", device_opmath_name(t), ">(p); }\n"));
}
KernelRequest tri_zero_request(ScalarType t) {
  const std::string sym = str("tri_zero_", dtype_name(t));
  return make_request(sym, str("extern \"C\" __global__ void ", sym, "(", device_type_name(t),
                               "* t, int64_t n, int64_t k, int32_t lower, Geometry g) "
                               "{ ig_tri_zero(t, n, k, lower, g); }\n"));
}


// Note [Mapped copies in units]
// A gather moves whole rows: embedding lookups, index_select, x[idx] over a
// leading dim, whose innermost dim is contiguous on both sides with no
// table or device index varying along it. Such a dim moves in units of up
// to 16 bytes, a thread a unit instead of an element (the offsets' 64-bit
// divisions and the index read paid once a unit), when both base pointers
// and every offset of the other dims -- strides, table entries, device
// indices' scales -- divide by the unit. GPT-2's token embedding (8 x 512
// rows of 768 bfloat16) took 44 us on the H100 an element a thread.
// Returns the unit in bytes (the item's size when no wider one fits) and
// rewrites the innermost dim to count units.
int64_t copy_unit(std::vector<cpu::MapDim>& dims, const std::vector<DeviceIndex>& indices,
                  const std::vector<std::vector<int64_t>>& index_strides, const char* dst,
                  const char* src, int64_t itemsize) {
  if (dims.empty()) return itemsize;
  cpu::MapDim& last = dims.back();
  if (!last.dst_table.empty() || !last.src_table.empty() || last.dst_stride != itemsize ||
      last.src_stride != itemsize)
    return itemsize;
  for (const std::vector<int64_t>& st : index_strides)
    if (st.back() != 0) return itemsize;
  auto divides = [](int64_t unit, int64_t v) { return v % unit == 0; };
  auto fits = [&](int64_t unit) {
    if (!divides(unit, last.size * itemsize) ||
        !divides(unit, static_cast<int64_t>(reinterpret_cast<uintptr_t>(dst))) ||
        !divides(unit, static_cast<int64_t>(reinterpret_cast<uintptr_t>(src))))
      return false;
    for (size_t d = 0; d + 1 < dims.size(); ++d) {
      const cpu::MapDim& m = dims[d];
      if (m.dst_table.empty() ? !divides(unit, m.dst_stride)
                              : !std::all_of(m.dst_table.begin(), m.dst_table.end(),
                                             [&](int64_t v) { return divides(unit, v); }))
        return false;
      if (m.src_table.empty() ? !divides(unit, m.src_stride)
                              : !std::all_of(m.src_table.begin(), m.src_table.end(),
                                             [&](int64_t v) { return divides(unit, v); }))
        return false;
    }
    for (const DeviceIndex& x : indices)
      if (!divides(unit, x.scale)) return false;
    return true;
  };
  for (int64_t unit : {16, 8, 4}) {
    if (unit <= itemsize) break;
    if (!fits(unit)) continue;
    last.size = last.size * itemsize / unit;
    last.dst_stride = last.src_stride = unit;
    return unit;
  }
  return itemsize;
}

}  // namespace

std::vector<KernelRequest> index_kernel_requests(ScalarType t) {
  return {map_copy_request(element_size(t)), map_add_request(t), tri_zero_request(t),
          scatter_reduce_request(t)};
}

std::vector<KernelRequest> copy_unit_kernel_requests() { return {map_copy_request(16)}; }

void mapped_copy(int device, char* dst, const char* src, std::vector<cpu::MapDim> dims,
                 ScalarType dtype, cpu::MapOp op, const Scalar& alpha,
                 std::vector<DeviceIndex> indices) {
  int64_t total = 1;
  for (const cpu::MapDim& m : dims) total *= m.size;
  if (total == 0) return;
  IGNIS_INTERNAL_ASSERT(indices.size() <= size_t(kMaxDeviceIndices), "mapped_copy: ",
                        indices.size(), " device indices");
  // Dims of size 1 only move the base pointers (their position is 0), and
  // drop out of the device indices' strides.
  std::vector<cpu::MapDim> kept;
  std::vector<std::vector<int64_t>> index_strides(indices.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    cpu::MapDim& m = dims[d];
    if (m.size != 1) {
      kept.push_back(std::move(m));
      for (size_t j = 0; j < indices.size(); ++j)
        index_strides[j].push_back(indices[j].strides.at(d));
      continue;
    }
    dst += m.dst_table.empty() ? 0 : m.dst_table[0];
    src += m.src_table.empty() ? 0 : m.src_table[0];
  }
  IGNIS_CHECK(kept.size() <= static_cast<size_t>(kMaxKernelDims), "CUDA indexing kernels handle "
              "at most ", kMaxKernelDims, " dims, got ", kept.size());
  const auto itemsize = static_cast<int64_t>(element_size(dtype));
  const int64_t unit = op == cpu::MapOp::Copy
                           ? copy_unit(kept, indices, index_strides, dst, src, itemsize)
                           : itemsize;
  total = total / (unit / itemsize);  // the innermost dim counts units now
  DeviceGuard guard(device);
  // Every table in one host buffer, uploaded once; the kernel reads them
  // from a device block that lives (stream-ordered) until the launch is done.
  std::vector<int64_t> host;
  for (const cpu::MapDim& m : kept) {
    host.insert(host.end(), m.dst_table.begin(), m.dst_table.end());
    host.insert(host.end(), m.src_table.begin(), m.src_table.end());
  }
  Tensor tables;
  if (!host.empty()) {
    Tensor h = empty_tensor({static_cast<int64_t>(host.size())}, ScalarType::Int64,
                            Device(DeviceType::CPU));
    std::copy(host.begin(), host.end(), h.data<int64_t>());
    tables = empty_tensor(h.sizes(), ScalarType::Int64, Device(DeviceType::CUDA, device));
    copy_tensor(tables, h);
  }
  MapParams p{};
  p.dst = dst;
  p.src = src;
  p.total = total;
  p.alpha_f = alpha.to<double>();
  p.alpha_i = alpha.to<int64_t>();
  p.ndim = static_cast<int32_t>(kept.size());
  const int64_t* at = tables.defined() ? static_cast<const int64_t*>(tables.data_ptr()) : nullptr;
  for (size_t d = 0; d < kept.size(); ++d) {
    const cpu::MapDim& m = kept[d];
    MapDimArg& a = p.dims[d];
    a.size = m.size;
    a.dst_stride = m.dst_stride;
    a.src_stride = m.src_stride;
    if (!m.dst_table.empty()) {
      a.dst_table = at;
      at += m.dst_table.size();
    }
    if (!m.src_table.empty()) {
      a.src_table = at;
      at += m.src_table.size();
    }
  }
  p.nindex = static_cast<int32_t>(indices.size());
  for (size_t j = 0; j < indices.size(); ++j) {
    const DeviceIndex& x = indices[j];
    DeviceIndexArg& a = p.index[j];
    a.data = x.data;
    for (size_t d = 0; d < index_strides[j].size(); ++d) a.strides[d] = index_strides[j][d];
    a.scale = x.scale;
    a.bound = x.bound;
    a.dim = x.dim;
    a.int32 = x.int32 ? 1 : 0;
    a.wrap = x.wrap ? 1 : 0;
    a.into_dst = x.into_dst ? 1 : 0;
    a.kind = static_cast<int32_t>(x.kind);
  }
  if (!indices.empty()) p.error = kernel_error_record(device);
  CUfunction f;
  if (op == cpu::MapOp::Copy) {
    const auto isz = static_cast<size_t>(unit);
    f = get_named_kernel(device, str("map_copy_", isz), [&] { return map_copy_request(isz); });
  } else {
    f = get_named_kernel(device, str("map_add_", dtype_name(dtype)),
                     [&] { return map_add_request(dtype); });
  }
  void* args[] = {&p};
  launch_grid_stride(f, total, args, current_stream(device));
  if (!indices.empty()) check_after_launch(device);
}

void scatter_reduce_grouped(int device, char* out, const char* src,
                            const std::vector<int64_t>& dst_off,
                            const std::vector<int64_t>& starts,
                            const std::vector<int64_t>& src_off, ScalarType dtype, cpu::Reduce r,
                            bool include_self) {
  const int64_t groups = static_cast<int64_t>(dst_off.size());
  if (groups == 0) return;
  DeviceGuard guard(device);
  // The three tables in one upload (see mapped_copy).
  std::vector<int64_t> host(dst_off);
  host.insert(host.end(), starts.begin(), starts.end());
  host.insert(host.end(), src_off.begin(), src_off.end());
  Tensor h = empty_tensor({static_cast<int64_t>(host.size())}, ScalarType::Int64,
                          Device(DeviceType::CPU));
  std::copy(host.begin(), host.end(), h.data<int64_t>());
  Tensor tables = empty_tensor(h.sizes(), ScalarType::Int64, Device(DeviceType::CUDA, device));
  copy_tensor(tables, h);
  const int64_t* at = static_cast<const int64_t*>(tables.data_ptr());
  ScatterReduceParams p{out, src, at, at + groups, at + groups + starts.size(), groups,
                        static_cast<int32_t>(r), include_self ? 1 : 0};
  CUfunction f = get_named_kernel(device, str("scatter_reduce_", dtype_name(dtype)),
                                  [&] { return scatter_reduce_request(dtype); });
  void* args[] = {&p};
  launch_grid_stride(f, groups, args, current_stream(device));
}

void zero_triangle(const Tensor& t, int64_t k, bool lower) {
  int64_t n = t.numel();
  if (n == 0) return;
  const int device = t.device().index;
  DeviceGuard guard(device);
  KernelGeometry g = geometry_for(t, nullptr);
  void* data = t.data_ptr();
  int32_t low = lower ? 1 : 0;
  CUfunction f = get_named_kernel(device, str("tri_zero_", dtype_name(t.dtype())),
                              [&] { return tri_zero_request(t.dtype()); });
  void* args[] = {&data, &n, &k, &low, &g};
  launch_grid_stride(f, n, args, current_stream(device));
}

}  // namespace ignis::cuda

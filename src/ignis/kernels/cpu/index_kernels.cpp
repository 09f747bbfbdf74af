#include "ignis/kernels/cpu/index_kernels.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "ignis/kernels/cpu/parallel.h"

namespace ignis::cpu {

namespace {

// Runs f(begin, end) over [0, n) in one contiguous chunk per thread when the
// elements touched (`work`) make threads worth starting.
template <typename F>
void parallel_chunks(int64_t n, int64_t work, F f) {
  int64_t threads = omp_get_max_threads();
  if (n <= 1 || work < kGrain || threads <= 1 || omp_in_parallel()) {
    f(int64_t(0), n);
    return;
  }
  int64_t chunks = std::min({n, threads, std::max<int64_t>(1, work / kGrain)});
#pragma omp parallel num_threads(team_threads(chunks))
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t per = (n + nt - 1) / nt;
    int64_t b = std::min(n, t * per), e = std::min(n, b + per);
    if (b < e) f(b, e);
  }
}

// Walks the positions of `sizes` in row-major order from a starting linear
// position, keeping each operand's offset (in the units of its strides).
class Walker {
 public:
  Walker(const DimVector& sizes, std::vector<DimVector> strides, int64_t begin)
      : sizes_(sizes), strides_(std::move(strides)), idx_(sizes.size()),
        off_(strides_.size(), 0) {
    for (int64_t d = static_cast<int64_t>(sizes_.size()) - 1; d >= 0; --d) {
      idx_[d] = sizes_[d] ? begin % sizes_[d] : 0;
      begin = sizes_[d] ? begin / sizes_[d] : 0;
      for (size_t k = 0; k < strides_.size(); ++k) off_[k] += idx_[d] * strides_[k][d];
    }
  }
  int64_t off(size_t k) const { return off_[k]; }
  const DimVector& idx() const { return idx_; }
  void next() {
    for (int64_t d = static_cast<int64_t>(sizes_.size()) - 1; d >= 0; --d) {
      if (++idx_[d] < sizes_[d]) {
        for (size_t k = 0; k < strides_.size(); ++k) off_[k] += strides_[k][d];
        return;
      }
      for (size_t k = 0; k < strides_.size(); ++k) off_[k] -= (sizes_[d] - 1) * strides_[k][d];
      idx_[d] = 0;
    }
  }

 private:
  const DimVector& sizes_;
  std::vector<DimVector> strides_;
  DimVector idx_;
  std::vector<int64_t> off_;
};

DimVector byte_strides(const Tensor& t) {
  DimVector s = t.strides();
  for (auto& v : s) v *= static_cast<int64_t>(t.itemsize());
  return s;
}

// ---- mapped_copy --------------------------------------------------------------------
template <typename T>
struct CopyOp {
  void operator()(char* d, const char* s) const {
    *reinterpret_cast<T*>(d) = *reinterpret_cast<const T*>(s);
  }
};
// d += alpha * s, in op-math precision.
template <typename T>
struct AddOp {
  opmath_t<T> alpha;
  void operator()(char* d, const char* s) const {
    T* dp = reinterpret_cast<T*>(d);
    *dp = static_cast<T>(static_cast<opmath_t<T>>(*dp) +
                         alpha * static_cast<opmath_t<T>>(*reinterpret_cast<const T*>(s)));
  }
};
template <>
struct AddOp<bool> {
  bool alpha;
  void operator()(char* d, const char* s) const {
    bool* dp = reinterpret_cast<bool*>(d);
    *dp = *dp || (alpha && *reinterpret_cast<const bool*>(s));
  }
};

struct Affine {
  int64_t s;
  int64_t operator()(int64_t i) const { return s * i; }
};
struct Table {
  const int64_t* t;
  int64_t operator()(int64_t i) const { return t[i]; }
};

template <typename Op, typename DO, typename SO>
void inner(const Op& op, char* __restrict d, const char* __restrict s, int64_t n, DO doff,
           SO soff) {
  for (int64_t i = 0; i < n; ++i) op(d + doff(i), s + soff(i));
}

template <typename T, typename Op>
void inner_dispatch(const Op& op, char* d, const char* s, const MapDim& m) {
  const int64_t n = m.size;
  const bool dt = !m.dst_table.empty(), st = !m.src_table.empty();
  if (!dt && !st) {
    if (m.dst_stride == sizeof(T) && m.src_stride == sizeof(T)) {
      if constexpr (std::is_same_v<Op, CopyOp<T>>) {
        std::memcpy(d, s, n * sizeof(T));
      } else {
        // Plain indexed loop so that the compiler vectorises the sum.
        T* __restrict dp = reinterpret_cast<T*>(d);
        const T* __restrict sp = reinterpret_cast<const T*>(s);
        for (int64_t i = 0; i < n; ++i)
          op(reinterpret_cast<char*>(dp + i), reinterpret_cast<const char*>(sp + i));
      }
      return;
    }
    inner(op, d, s, n, Affine{m.dst_stride}, Affine{m.src_stride});
  } else if (!dt) {
    inner(op, d, s, n, Affine{m.dst_stride}, Table{m.src_table.data()});
  } else if (!st) {
    inner(op, d, s, n, Table{m.dst_table.data()}, Affine{m.src_stride});
  } else {
    inner(op, d, s, n, Table{m.dst_table.data()}, Table{m.src_table.data()});
  }
}

int64_t dst_off(const MapDim& m, int64_t i) {
  return m.dst_table.empty() ? m.dst_stride * i : m.dst_table[i];
}
int64_t src_off(const MapDim& m, int64_t i) {
  return m.src_table.empty() ? m.src_stride * i : m.src_table[i];
}

// Rows [row_b, row_e) of the dims before the last, each a run of the last dim.
template <typename T, typename Op>
void run_rows(const Op& op, char* dst, const char* src, const std::vector<MapDim>& dims,
              int64_t row_b, int64_t row_e) {
  const size_t nd = dims.size();
  if (nd == 2) {  // rows of one dim (a gather of rows): no position vector
    const MapDim& r = dims[0];
    for (int64_t row = row_b; row < row_e; ++row)
      inner_dispatch<T>(op, dst + dst_off(r, row), src + src_off(r, row), dims[1]);
    return;
  }
  std::vector<int64_t> idx(nd, 0);
  int64_t r = row_b;
  for (int64_t d = static_cast<int64_t>(nd) - 2; d >= 0; --d) {
    idx[d] = r % dims[d].size;
    r /= dims[d].size;
  }
  for (int64_t row = row_b; row < row_e; ++row) {
    int64_t doff = 0, soff = 0;
    for (size_t d = 0; d + 1 < nd; ++d) {
      doff += dst_off(dims[d], idx[d]);
      soff += src_off(dims[d], idx[d]);
    }
    inner_dispatch<T>(op, dst + doff, src + soff, dims[nd - 1]);
    for (int64_t d = static_cast<int64_t>(nd) - 2; d >= 0; --d) {
      if (++idx[d] < dims[d].size) break;
      idx[d] = 0;
    }
  }
}

template <typename T, typename Op>
void run_mapped(const Op& op, char* dst, const char* src, const std::vector<MapDim>& dims,
                int pd) {
  const int nd = static_cast<int>(dims.size());
  int64_t outer = 1, rows_per = 1;
  for (int d = 0; d < pd; ++d) outer *= dims[d].size;
  for (int d = pd; d < nd - 1; ++d) rows_per *= dims[d].size;
  int64_t numel = outer * rows_per * dims[nd - 1].size;
  parallel_chunks(outer, numel, [&](int64_t b, int64_t e) {
    run_rows<T>(op, dst, src, dims, b * rows_per, e * rows_per);
  });
}

}  // namespace

void mapped_copy(char* dst, const char* src, std::vector<MapDim> dims, ScalarType dtype,
                 MapOp op, int parallel_dims, const Scalar& alpha) {
  for (const MapDim& m : dims)
    if (m.size == 0) return;
  // Drop dims of size 1 (their offset moves the base pointers) and merge
  // neighbouring affine dims that step as one, within each parallel class.
  std::vector<MapDim> kept;
  int pd = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    MapDim& m = dims[d];
    bool par = static_cast<int>(d) < parallel_dims;
    if (m.size == 1) {
      dst += dst_off(m, 0);
      src += src_off(m, 0);
      continue;
    }
    if (!kept.empty() && (static_cast<int>(kept.size()) <= pd) == par) {
      MapDim& p = kept.back();
      bool affine = p.dst_table.empty() && p.src_table.empty() && m.dst_table.empty() &&
                    m.src_table.empty();
      if (affine && p.dst_stride == m.dst_stride * m.size &&
          p.src_stride == m.src_stride * m.size) {
        p.size *= m.size;
        p.dst_stride = m.dst_stride;
        p.src_stride = m.src_stride;
        continue;
      }
    }
    kept.push_back(std::move(m));
    if (par) pd = static_cast<int>(kept.size());
  }
  if (kept.empty()) kept.push_back(MapDim{});
  pd = std::min(pd, static_cast<int>(kept.size()) - 1);
  if (op == MapOp::Copy) {
    switch (element_size(dtype)) {
      case 1: run_mapped<uint8_t>(CopyOp<uint8_t>{}, dst, src, kept, pd); break;
      case 2: run_mapped<uint16_t>(CopyOp<uint16_t>{}, dst, src, kept, pd); break;
      case 4: run_mapped<uint32_t>(CopyOp<uint32_t>{}, dst, src, kept, pd); break;
      case 8: run_mapped<uint64_t>(CopyOp<uint64_t>{}, dst, src, kept, pd); break;
      default: IGNIS_INTERNAL_ASSERT(false, "unexpected item size");
    }
    return;
  }
  IGNIS_DISPATCH_ALL(dtype, "mapped_copy", [&] {
    AddOp<scalar_t> add{alpha.to<opmath_t<scalar_t>>()};
    run_mapped<scalar_t>(add, dst, src, kept, pd);
  });
}

// ---- offsets and range checks ---------------------------------------------------------
namespace {
template <typename I>
int64_t load_index(const char* p) {
  return static_cast<int64_t>(*reinterpret_cast<const I*>(p));
}
using IndexLoad = int64_t (*)(const char*);
IndexLoad index_loader(ScalarType t) {
  IGNIS_INTERNAL_ASSERT(t == ScalarType::Int64 || t == ScalarType::Int32);
  return t == ScalarType::Int64 ? &load_index<int64_t> : &load_index<int32_t>;
}
}  // namespace

void index_offsets(const std::vector<Tensor>& indices, const std::vector<int64_t>& sizes,
                   const std::vector<int64_t>& byte_strides_k, int64_t* out) {
  IGNIS_INTERNAL_ASSERT(!indices.empty());
  const DimVector& shape = indices[0].sizes();
  int64_t n = indices[0].numel();
  const size_t nk = indices.size();
  // Index tensors laid out as their broadcast shape (not expanded views):
  // one typed pass each, with no walker and no call per element (an
  // embedding-style lookup spent most of its time here).
  bool linear = true;
  for (const Tensor& t : indices) linear = linear && t.sizes() == shape && t.is_contiguous();
  if (linear) {
    parallel_chunks(n, n * static_cast<int64_t>(nk), [&](int64_t b, int64_t e) {
      for (size_t k = 0; k < nk; ++k) {
        const int64_t size = sizes[k], stride = byte_strides_k[k];
        auto pass = [&](const auto* p) {
          for (int64_t i = b; i < e; ++i) {
            int64_t v = static_cast<int64_t>(p[i]);
            v += v < 0 ? size : 0;
            out[i] = (k ? out[i] : 0) + v * stride;
          }
        };
        if (indices[k].dtype() == ScalarType::Int64) pass(indices[k].data<int64_t>());
        else pass(indices[k].data<int32_t>());
      }
    });
    return;
  }
  std::vector<DimVector> strides;
  std::vector<IndexLoad> loads;
  std::vector<const char*> bases;
  for (const Tensor& t : indices) {
    strides.push_back(byte_strides(t));
    loads.push_back(index_loader(t.dtype()));
    bases.push_back(static_cast<const char*>(t.data_ptr()));
  }
  parallel_chunks(n, n * static_cast<int64_t>(nk), [&](int64_t b, int64_t e) {
    Walker w(shape, strides, b);
    for (int64_t i = b; i < e; ++i, w.next()) {
      int64_t off = 0;
      for (size_t k = 0; k < nk; ++k) {
        int64_t v = loads[k](bases[k] + w.off(k));
        if (v < 0) v += sizes[k];
        off += v * byte_strides_k[k];
      }
      out[i] = off;
    }
  });
}

std::optional<int64_t> collapsed_stride(const DimVector& sizes, const DimVector& strides) {
  int64_t inner = 0, expected = -1;  // the innermost stride; the next dim's, if affine
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (expected < 0) inner = strides[d];
    else if (strides[d] != expected) return std::nullopt;
    expected = strides[d] * sizes[d];
  }
  return inner;
}

void strided_offsets(const Tensor& t, int64_t* out) {
  Walker w(t.sizes(), {byte_strides(t)}, 0);
  for (int64_t i = 0, n = t.numel(); i < n; ++i, w.next()) out[i] = w.off(0);
}

namespace {
// Non-overlapping and dense: the elements fill [0, numel) in some dim order.
bool dense(const Tensor& t) {
  std::vector<int64_t> order;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes()[d] != 1) order.push_back(d);
  std::sort(order.begin(), order.end(),
            [&](int64_t x, int64_t y) { return t.strides()[x] < t.strides()[y]; });
  int64_t expected = 1;
  for (int64_t d : order) {
    if (t.strides()[d] != expected) return false;
    expected *= t.sizes()[d];
  }
  return true;
}
}  // namespace

MemOverlap mem_overlap(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0 ||
      a.impl()->storage().get() != b.impl()->storage().get())
    return MemOverlap::No;
  if (!dense(a) || !dense(b)) return MemOverlap::TooHard;
  const char* pa = static_cast<const char*>(a.data_ptr());
  const char* pb = static_cast<const char*>(b.data_ptr());
  if (pa == pb && a.sizes() == b.sizes() && a.strides() == b.strides() && a.dtype() == b.dtype())
    return MemOverlap::Full;
  const char* ea = pa + a.numel() * static_cast<int64_t>(a.itemsize());
  const char* eb = pb + b.numel() * static_cast<int64_t>(b.itemsize());
  return pa < eb && pb < ea ? MemOverlap::Partial : MemOverlap::No;
}

std::optional<int64_t> find_out_of_range(const Tensor& index, int64_t lo, int64_t hi) {
  if (index.is_contiguous()) {  // one branch-free pass, then the first culprit
    IGNIS_INTERNAL_ASSERT(index.dtype() == ScalarType::Int64 || index.dtype() == ScalarType::Int32);
    auto first_bad = [&](const auto* p) -> std::optional<int64_t> {
      const int64_t n = index.numel();
      bool bad = false;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = static_cast<int64_t>(p[i]);
        bad |= (v < lo) | (v >= hi);
      }
      if (!bad) return std::nullopt;
      for (int64_t i = 0;; ++i)
        if (int64_t v = static_cast<int64_t>(p[i]); v < lo || v >= hi) return v;
    };
    return index.dtype() == ScalarType::Int64 ? first_bad(index.data<int64_t>())
                                              : first_bad(index.data<int32_t>());
  }
  IndexLoad load = index_loader(index.dtype());
  const char* base = static_cast<const char*>(index.data_ptr());
  Walker w(index.sizes(), {byte_strides(index)}, 0);
  for (int64_t i = 0, n = index.numel(); i < n; ++i, w.next()) {
    int64_t v = load(base + w.off(0));
    if (v < lo || v >= hi) return v;
  }
  return std::nullopt;
}

// ---- gather / scatter along one dim -------------------------------------------------
namespace {

struct FiberGeom {
  DimVector outer_sizes;
  std::vector<DimVector> outer_strides;  // bytes: self, index, other
  int64_t len = 1;                       // index.size(dim)
  int64_t self_dim = 0, index_dim = 0, other_dim = 0;  // byte strides along dim
};

FiberGeom fiber_geom(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& other) {
  FiberGeom g;
  DimVector ss = byte_strides(self), is = byte_strides(index);
  DimVector os = other.defined() ? byte_strides(other) : DimVector(index.dim(), 0);
  g.outer_strides.resize(3);
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (d == dim) continue;
    g.outer_sizes.push_back(index.sizes()[d]);
    g.outer_strides[0].push_back(ss[d]);
    g.outer_strides[1].push_back(is[d]);
    g.outer_strides[2].push_back(os[d]);
  }
  if (index.dim() > 0) {
    g.len = index.sizes()[dim];
    g.self_dim = ss[dim];
    g.index_dim = is[dim];
    g.other_dim = os[dim];
  }
  return g;
}

template <typename I, typename F>
void run_fibers(const FiberGeom& g, char* self, const char* index, char* other, F f) {
  int64_t outer = compute_numel(g.outer_sizes);
  auto body = [&](int64_t b, int64_t e) {
    Walker w(g.outer_sizes, g.outer_strides, b);
    for (int64_t o = b; o < e; ++o, w.next()) {
      char* s = self + w.off(0);
      const char* ip = index + w.off(1);
      char* op = other + w.off(2);
      for (int64_t j = 0; j < g.len; ++j) {
        int64_t v = static_cast<int64_t>(*reinterpret_cast<const I*>(ip + j * g.index_dim));
        f(s + v * g.self_dim, op + j * g.other_dim);
      }
    }
  };
  // Each outer position owns one fiber of `dim` in self: threads never meet.
  parallel_chunks(outer, outer * g.len, body);
}

template <typename T, typename I>
void fiber_dispatch(FiberOp op, const FiberGeom& g, char* self, const char* index, char* other,
                    T value) {
  switch (op) {
    case FiberOp::Gather:
      run_fibers<I>(g, self, index, other,
                    [](char* s, char* o) { CopyOp<T>{}(o, s); });
      break;
    case FiberOp::Scatter:
      run_fibers<I>(g, self, index, other,
                    [](char* s, char* o) { CopyOp<T>{}(s, o); });
      break;
    case FiberOp::ScatterAdd:
      run_fibers<I>(g, self, index, other,
                    [](char* s, char* o) { AddOp<T>{1}(s, o); });
      break;
    case FiberOp::ScatterFill:
      run_fibers<I>(g, self, index, other,
                    [value](char* s, char*) { *reinterpret_cast<T*>(s) = value; });
      break;
  }
}

template <typename T>
void fiber_index_dispatch(FiberOp op, const FiberGeom& g, char* self, const Tensor& index,
                          char* other, T value) {
  const char* ip = static_cast<const char*>(index.data_ptr());
  if (index.dtype() == ScalarType::Int64) fiber_dispatch<T, int64_t>(op, g, self, ip, other, value);
  else fiber_dispatch<T, int32_t>(op, g, self, ip, other, value);
}

}  // namespace

void gather_scatter(FiberOp op, const Tensor& self, int64_t dim, const Tensor& index,
                    const Tensor& other, const Scalar& value) {
  if (index.numel() == 0) return;
  FiberGeom g = fiber_geom(self, dim, index, other);
  char* sp = static_cast<char*>(self.data_ptr());
  char* op_ = other.defined() ? static_cast<char*>(other.data_ptr()) : nullptr;
  if (op == FiberOp::Gather || op == FiberOp::Scatter) {
    switch (self.itemsize()) {
      case 1: fiber_index_dispatch<uint8_t>(op, g, sp, index, op_, 0); break;
      case 2: fiber_index_dispatch<uint16_t>(op, g, sp, index, op_, 0); break;
      case 4: fiber_index_dispatch<uint32_t>(op, g, sp, index, op_, 0); break;
      case 8: fiber_index_dispatch<uint64_t>(op, g, sp, index, op_, 0); break;
      default: IGNIS_INTERNAL_ASSERT(false, "unexpected item size");
    }
    return;
  }
  IGNIS_DISPATCH_ALL(self.dtype(), op == FiberOp::ScatterAdd ? "scatter_add" : "scatter", [&] {
    scalar_t v = static_cast<scalar_t>(value.to<opmath_t<scalar_t>>());
    fiber_index_dispatch<scalar_t>(op, g, sp, index, op_, v);
  });
}

// ---- scatter_reduce ------------------------------------------------------------------------
namespace {

template <typename T>
T reduce_identity(Reduce r) {
  using O = opmath_t<T>;
  constexpr bool fp = std::is_floating_point_v<O>;
  switch (r) {
    case Reduce::Prod: return static_cast<T>(O(1));
    case Reduce::Max:
      if constexpr (fp) return static_cast<T>(-std::numeric_limits<O>::infinity());
      else return std::numeric_limits<T>::lowest();
    case Reduce::Min:
      if constexpr (fp) return static_cast<T>(std::numeric_limits<O>::infinity());
      else return std::numeric_limits<T>::max();
    default: return static_cast<T>(O(0));
  }
}

template <typename T>
struct Reducer {
  Reduce r;
  void operator()(char* s, char* o) const {
    using O = opmath_t<T>;
    T* a = reinterpret_cast<T*>(s);
    O x = static_cast<O>(*a), y = static_cast<O>(*reinterpret_cast<const T*>(o));
    switch (r) {
      case Reduce::Sum: case Reduce::Mean: x = x + y; break;
      case Reduce::Prod:
        if constexpr (std::is_same_v<O, bool>) x = x && y;
        else x = x * y;
        break;
      case Reduce::Max: if (y != y || y > x) x = y; break;  // NaN wins
      case Reduce::Min: if (y != y || y < x) x = y; break;
    }
    *a = static_cast<T>(x);
  }
};

template <typename T>
T mean_of(T sum, int64_t n) {
  using O = opmath_t<T>;
  if constexpr (std::is_same_v<T, bool>) {
    return sum;
  } else if constexpr (std::is_floating_point_v<O>) {
    return static_cast<T>(static_cast<O>(sum) / static_cast<O>(n));
  } else {
    int64_t v = static_cast<int64_t>(sum), q = v / n;
    if (v % n != 0 && v < 0) --q;  // floor division, as PyTorch
    return static_cast<T>(q);
  }
}

template <typename T>
void scatter_reduce_impl(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                         Reduce r, bool include_self) {
  FiberGeom g = fiber_geom(out, dim, index, src);
  char* op = static_cast<char*>(out.data_ptr());
  const char* ip = static_cast<const char*>(index.data_ptr());
  char* sp = static_cast<char*>(src.data_ptr());
  if (!include_self) {
    T id = reduce_identity<T>(r);
    run_fibers<int64_t>(g, op, ip, sp, [id](char* s, char*) { *reinterpret_cast<T*>(s) = id; });
  }
  run_fibers<int64_t>(g, op, ip, sp, Reducer<T>{r});
  if (r != Reduce::Mean) return;
  // Count the values reduced into each element, then divide.
  Tensor counts = empty_strided_tensor(out.sizes(), out.strides(), ScalarType::Int64,
                                       out.device());
  std::memset(counts.data_ptr(), 0, counts.impl()->storage()->nbytes());
  FiberGeom cg = fiber_geom(counts, dim, index, src);
  run_fibers<int64_t>(cg, static_cast<char*>(counts.data_ptr()), ip, sp,
                      [](char* s, char*) { ++*reinterpret_cast<int64_t*>(s); });
  const int64_t* cp = counts.data<int64_t>();
  Walker w(out.sizes(), {out.strides(), counts.strides()}, 0);
  T* o = out.data<T>();
  for (int64_t i = 0, n = out.numel(); i < n; ++i, w.next()) {
    int64_t k = cp[w.off(1)] + (include_self ? 1 : 0);
    if (k > 0) o[w.off(0)] = mean_of<T>(o[w.off(0)], k);
  }
}

}  // namespace

void scatter_reduce(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                    Reduce r, bool include_self) {
  if (index.numel() == 0) return;
  IGNIS_INTERNAL_ASSERT(index.dtype() == ScalarType::Int64);
  IGNIS_DISPATCH_ALL(out.dtype(), "scatter_reduce", [&] {
    scatter_reduce_impl<scalar_t>(out, dim, index, src, r, include_self);
  });
}

// ---- triangles -------------------------------------------------------------------------
void zero_triangle(const Tensor& t, int64_t k, bool lower) {
  const int64_t nd = t.dim();
  const int64_t m = t.sizes()[nd - 2], n = t.sizes()[nd - 1];
  if (t.numel() == 0) return;
  DimVector batch_sizes(t.sizes().begin(), t.sizes().end() - 2);
  DimVector st = byte_strides(t);
  DimVector batch_strides(st.begin(), st.end() - 2);
  const int64_t row_stride = st[nd - 2], col_stride = st[nd - 1];
  const int64_t isz = static_cast<int64_t>(t.itemsize());
  char* base = static_cast<char*>(t.data_ptr());
  const int64_t rows = compute_numel(batch_sizes) * m;
  parallel_chunks(rows, rows * n, [&](int64_t b, int64_t e) {
    Walker w(batch_sizes, {batch_strides}, b / m);
    int64_t i = b % m;
    for (int64_t r = b; r < e; ++r) {
      // Columns to zero in row i: j > i + k (tril) or j < i + k (triu).
      int64_t lo = lower ? std::clamp<int64_t>(i + k + 1, 0, n) : 0;
      int64_t hi = lower ? n : std::clamp<int64_t>(i + k, 0, n);
      char* row = base + w.off(0) + i * row_stride;
      if (col_stride == isz) {
        if (hi > lo) std::memset(row + lo * isz, 0, (hi - lo) * isz);
      } else {
        for (int64_t j = lo; j < hi; ++j) std::memset(row + j * col_stride, 0, isz);
      }
      if (++i == m) {
        i = 0;
        w.next();
      }
    }
  });
}

// ---- nonzero ---------------------------------------------------------------------------
namespace {

template <typename T>
bool truth(const char* p) {
  return static_cast<opmath_t<T>>(*reinterpret_cast<const T*>(p)) != opmath_t<T>(0);
}

// Counts per chunk, then each chunk writes from its prefix sum: the result is
// in row-major order whatever the number of threads.
template <typename T>
Tensor nonzero_impl(const Tensor& self) {
  const int64_t nd = self.dim(), numel = self.numel();
  const char* base = static_cast<const char*>(self.data_ptr());
  const bool contig = self.is_contiguous();
  std::vector<DimVector> strides{byte_strides(self)};
  int64_t chunks = numel >= kGrain ? std::min<int64_t>(omp_get_max_threads(), numel) : 1;
  int64_t per = (numel + chunks - 1) / chunks;
  std::vector<int64_t> counts(chunks + 1, 0);
  parallel_chunks(chunks, numel, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t b = std::min(numel, c * per), e = std::min(numel, b + per);
      int64_t cnt = 0;
      if (contig) {
        const T* p = reinterpret_cast<const T*>(base);
        for (int64_t i = b; i < e; ++i) cnt += truth<T>(reinterpret_cast<const char*>(p + i));
      } else {
        Walker w(self.sizes(), strides, b);
        for (int64_t i = b; i < e; ++i, w.next()) cnt += truth<T>(base + w.off(0));
      }
      counts[c + 1] = cnt;
    }
  });
  for (int64_t c = 0; c < chunks; ++c) counts[c + 1] += counts[c];
  Tensor out = empty_tensor({counts[chunks], nd}, ScalarType::Int64, self.device());
  int64_t* o = out.data<int64_t>();
  parallel_chunks(chunks, numel, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t b = std::min(numel, c * per), e = std::min(numel, b + per);
      if (counts[c + 1] == counts[c]) continue;
      Walker w(self.sizes(), strides, b);
      int64_t* dst = o + counts[c] * nd;
      for (int64_t i = b; i < e; ++i, w.next()) {
        if (!truth<T>(base + w.off(0))) continue;
        for (int64_t d = 0; d < nd; ++d) dst[d] = w.idx()[d];
        dst += nd;
      }
    }
  });
  return out;
}

}  // namespace

Tensor nonzero(const Tensor& self) {
  return IGNIS_DISPATCH_ALL(self.dtype(), "nonzero", [&] { return nonzero_impl<scalar_t>(self); });
}

// ---- masks ---------------------------------------------------------------------------------
namespace {

// Splits the positions of `mask` into chunks and runs f(begin, end, walker)
// for each, where the walker tracks the mask's and self's byte offsets.
template <typename F>
void for_mask_chunks(const Tensor& mask, const DimVector& self_lead, int64_t chunks, F f) {
  const int64_t n = mask.numel();
  const int64_t per = (n + chunks - 1) / chunks;
  std::vector<DimVector> strides{byte_strides(mask), self_lead};
  parallel_chunks(chunks, n, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t b = std::min(n, c * per), e = std::min(n, b + per);
      Walker w(mask.sizes(), strides, b);
      f(c, b, e, w);
    }
  });
}

// Branch-free compress of [b, e) into `count` slots at out: every element is
// stored and the cursor advances only past kept ones, so a mask of random
// bits costs no mispredictions. Stores stay inside the chunk's own slots.
template <typename T>
void compress_linear(const char* m, const char* src, char* out, int64_t b, int64_t e,
                     int64_t count) {
  const T* s = reinterpret_cast<const T*>(src);
  T* o = reinterpret_cast<T*>(out);
  T* end = o + count;
  for (int64_t i = b; i < e && o < end; ++i) {
    *o = s[i];
    o += m[i] != 0;
  }
}

}  // namespace

int64_t count_true(const Tensor& mask) {
  const char* m = static_cast<const char*>(mask.data_ptr());
  const int64_t n = mask.numel();
  if (mask.is_contiguous()) {
    int64_t cnt = 0;
    for (int64_t i = 0; i < n; ++i) cnt += m[i] != 0;
    return cnt;
  }
  Walker w(mask.sizes(), {byte_strides(mask)}, 0);
  int64_t cnt = 0;
  for (int64_t i = 0; i < n; ++i, w.next()) cnt += m[w.off(0)] != 0;
  return cnt;
}

void masked_gather(const Tensor& out, const Tensor& self, const Tensor& mask) {
  const int64_t k = mask.dim(), n = mask.numel();
  if (out.numel() == 0) return;
  DimVector st = byte_strides(self);
  DimVector lead(st.begin(), st.begin() + k);
  int64_t block = static_cast<int64_t>(self.itemsize());
  for (int64_t d = k; d < self.dim(); ++d) block *= self.sizes()[d];
  const char* m = static_cast<const char*>(mask.data_ptr());
  const char* src = static_cast<const char*>(self.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  // Both dense in row-major order: plain linear loops.
  bool linear = mask.is_contiguous() && self.is_contiguous();
  int64_t chunks = n >= kGrain ? std::min<int64_t>(omp_get_max_threads(), n) : 1;
  std::vector<int64_t> counts(chunks + 1, 0);
  for_mask_chunks(mask, lead, chunks, [&](int64_t c, int64_t b, int64_t e, Walker& w) {
    int64_t cnt = 0;
    if (linear) {
      for (int64_t i = b; i < e; ++i) cnt += m[i] != 0;
    } else {
      for (int64_t i = b; i < e; ++i, w.next()) cnt += m[w.off(0)] != 0;
    }
    counts[c + 1] = cnt;
  });
  for (int64_t c = 0; c < chunks; ++c) counts[c + 1] += counts[c];
  IGNIS_INTERNAL_ASSERT(
      counts[chunks] * block == out.numel() * static_cast<int64_t>(out.itemsize()),
      "mask changed between shape and copy");
  for_mask_chunks(mask, lead, chunks, [&](int64_t c, int64_t b, int64_t e, Walker& w) {
    char* o = dst + counts[c] * block;
    const int64_t cnt = counts[c + 1] - counts[c];
    if (!linear) {
      for (int64_t i = b; i < e; ++i, w.next()) {
        if (!m[w.off(0)]) continue;
        std::memcpy(o, src + w.off(1), block);
        o += block;
      }
      return;
    }
    switch (block) {  // one element per mask position: typed copies
      case 1: compress_linear<uint8_t>(m, src, o, b, e, cnt); break;
      case 2: compress_linear<uint16_t>(m, src, o, b, e, cnt); break;
      case 4: compress_linear<uint32_t>(m, src, o, b, e, cnt); break;
      case 8: compress_linear<uint64_t>(m, src, o, b, e, cnt); break;
      default:
        for (int64_t i = b; i < e; ++i) {
          if (!m[i]) continue;
          std::memcpy(o, src + i * block, block);
          o += block;
        }
    }
  });
}

}  // namespace ignis::cpu

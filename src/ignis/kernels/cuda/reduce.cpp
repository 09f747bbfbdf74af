#include "ignis/kernels/cuda/reduce.h"

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <limits>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/kernel_cache.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cpu/reduce.h"
#include "ignis/kernels/cuda/device_scalar_ops.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis::cuda {

namespace {

constexpr int kBlockThreads = 256;
constexpr int kAccBytes = 32;  // a workspace slot: the largest accumulator (Welford's) fits

// Must match IgRedArgs / IgRedParams in kTemplates.
struct RedArgs {
  double n = 0;        // reduced elements per output (mean)
  double divisor = 1;  // var: max(0, n - correction)
  double p = 2, inv_p = 0.5;
  int32_t take_sqrt = 0;
};
struct RedParams {
  const void* in;
  void* out;
  void* out2;
  void* ws;
  int64_t out_sizes[kMaxKernelDims], out_in[kMaxKernelDims], out_out[kMaxKernelDims];
  int64_t red_sizes[kMaxKernelDims], red_in[kMaxKernelDims];
  int32_t out_ndim, red_ndim;
  int64_t M, K, k_per_split;
  int32_t outer, splits;
  int32_t vectors;       // 1: Note [Vectors of a contiguous reduction]
  int32_t finish_lanes;  // threads an output of the finishing pass: 32 or 1
  RedArgs a;
};

const char* kTemplates = R"CUDA(
// ---- reductions (kernels/cuda/reduce.cpp) ----
struct IgRedArgs { double n, divisor, p, inv_p; int32_t take_sqrt; };
struct IgRedParams {
  const char* in; char* out; char* out2; char* ws;
  int64_t out_sizes[IG_MAX_DIMS], out_in[IG_MAX_DIMS], out_out[IG_MAX_DIMS];
  int64_t red_sizes[IG_MAX_DIMS], red_in[IG_MAX_DIMS];
  int32_t out_ndim, red_ndim;
  int64_t M, K, k_per_split;
  int32_t outer, splits;
  int32_t vectors, finish_lanes;
  IgRedArgs a;
};
#define IG_ACC_BYTES 32
// 16 bytes of In, read by one load (Note [Vectors of a contiguous reduction]).
template <class T> struct IgRedVecWidth { static constexpr int value = sizeof(T) <= 16 ? 16 / sizeof(T) : 1; };
template <class T, int V> struct alignas(sizeof(T) * V) IgRedVec { T v[V]; };

// An input of dtype In as the CPU sees it: cast to Common (the reduction's
// dtype) first, then widened to the accumulator C.
template <class C, class Common, class In> __forceinline__ C ig_rload(In v) {
  if constexpr (std::is_same_v<Common, In>) return ig_convert<C>(v);
  else return ig_convert<C>(ig_convert<Common>(v));
}
template <class T> __forceinline__ T ig_lowest() {
  if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}
template <class T> __forceinline__ T ig_highest() {
  if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::max();
}
template <class T> __forceinline__ T ig_max_nan(T a, T b) {
  return a != a ? a : (b != b ? b : (a > b ? a : b));
}
template <class T> __forceinline__ T ig_min_nan(T a, T b) {
  return a != a ? a : (b != b ? b : (a < b ? a : b));
}

// Any trivially copyable value, shuffled a 32-bit word at a time.
template <class T> __forceinline__ T ig_shfl_down(const T& v, int o) {
  constexpr int W = (sizeof(T) + 3) / 4;
  union U { T t; uint32_t w[W]; } a, r;
  a.t = v;
#pragma unroll
  for (int i = 0; i < W; ++i) r.w[i] = __shfl_down_sync(0xffffffffu, a.w[i], o);
  return r.t;
}
template <class Op>
__forceinline__ typename Op::acc_t ig_warp_reduce(const Op& op, typename Op::acc_t v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op.combine(v, ig_shfl_down(v, o));
  return v;
}

// ---- the reductions: identity, map (element k of the reduced range),
// combine (associative, commutative), project (write the result) ----
template <class In, class Out, class Acc> struct IgSum {
  typedef Acc acc_t; IgRedArgs a;
  Acc identity() const { return Acc(0); }
  Acc map(In x, int64_t) const { return ig_rload<Acc, Out, In>(x); }
  Acc combine(Acc x, Acc y) const { return x + y; }
  void project(Acc v, char* o, char*, int64_t off) const {
    reinterpret_cast<Out*>(o)[off] = ig_convert<Out>(v);
  }
};
template <class In, class Out, class Acc> struct IgNanSum : IgSum<In, Out, Acc> {
  Acc map(In x, int64_t) const { Acc v = ig_rload<Acc, Out, In>(x); return v != v ? Acc(0) : v; }
};
template <class In, class Out, class Acc> struct IgProd : IgSum<In, Out, Acc> {
  Acc identity() const { return Acc(1); }
  Acc combine(Acc x, Acc y) const { return x * y; }
};
template <class In, class Out, class Acc> struct IgMean : IgSum<In, Out, Acc> {
  void project(Acc v, char* o, char*, int64_t off) const {
    reinterpret_cast<Out*>(o)[off] = ig_convert<Out>(v / Acc(this->a.n));
  }
};
template <class In, class Out, class Acc, bool IsMax> struct IgExtreme {
  typedef Acc acc_t; IgRedArgs a;
  Acc identity() const { return IsMax ? ig_lowest<Acc>() : ig_highest<Acc>(); }
  Acc map(In x, int64_t) const { return ig_widen<In>::get(x); }
  Acc combine(Acc x, Acc y) const { return IsMax ? ig_max_nan(x, y) : ig_min_nan(x, y); }
  void project(Acc v, char* o, char*, int64_t off) const {
    reinterpret_cast<Out*>(o)[off] = ig_convert<Out>(v);
  }
};
template <class In, class Out, bool IsAll> struct IgLogical {
  typedef bool acc_t; IgRedArgs a;
  bool identity() const { return IsAll; }
  bool map(In x, int64_t) const { return ig_widen<In>::get(x) != 0; }
  bool combine(bool x, bool y) const { return IsAll ? (x && y) : (x || y); }
  void project(bool v, char* o, char*, int64_t off) const {
    reinterpret_cast<Out*>(o)[off] = ig_convert<Out>(v);
  }
};
template <class In, class Out> struct IgCountNonzero {
  typedef int64_t acc_t; IgRedArgs a;
  int64_t identity() const { return 0; }
  int64_t map(In x, int64_t) const { return ig_widen<In>::get(x) != 0 ? 1 : 0; }
  int64_t combine(int64_t x, int64_t y) const { return x + y; }
  void project(int64_t v, char* o, char*, int64_t off) const {
    reinterpret_cast<Out*>(o)[off] = ig_convert<Out>(v);
  }
};
// Vector norms, as the CPU's NormOp: K 2 (L2), 1, 0, 3 (inf), 4 (-inf), 5 (any p).
template <class In, class Out, class C, int K> struct IgNorm {
  typedef C acc_t; IgRedArgs a;
  C identity() const { return K == 4 ? ig_highest<C>() : C(0); }
  C map(In x, int64_t) const {
    C v = ig_rload<C, Out, In>(x);
    if constexpr (K == 0) return v != C(0) ? C(1) : C(0);
    else if constexpr (K == 2) return v * v;
    else if constexpr (K == 5) return std::pow(std::abs(v), C(a.p));
    else return std::abs(v);
  }
  C combine(C x, C y) const {
    if constexpr (K == 3) return ig_max_nan(x, y);
    else if constexpr (K == 4) return ig_min_nan(x, y);
    else return x + y;
  }
  void project(C v, char* o, char*, int64_t off) const {
    if constexpr (K == 2) v = std::sqrt(v);
    else if constexpr (K == 5) v = std::pow(v, C(a.inv_p));
    reinterpret_cast<Out*>(o)[off] = ig_convert<Out>(v);
  }
};
// Welford's running (mean, sum of squared deviations, count); Chan's
// formula merges two.
template <class C> struct IgWelfordAcc { C mean, m2; int64_t n; };
template <class In, class Out, class C> struct IgVar {
  typedef IgWelfordAcc<C> acc_t; IgRedArgs a;
  acc_t identity() const { return acc_t{C(0), C(0), 0}; }
  acc_t map(In x, int64_t) const { return acc_t{ig_rload<C, Out, In>(x), C(0), 1}; }
  acc_t combine(acc_t x, acc_t y) const {
    if (x.n == 0) return y;
    if (y.n == 0) return x;
    const int64_t n = x.n + y.n;
    const C delta = y.mean - x.mean, w = C(y.n) / C(n);
    return acc_t{x.mean + delta * w, x.m2 + y.m2 + delta * delta * C(x.n) * w, n};
  }
  void project(acc_t v, char* o, char* o2, int64_t off) const {
    C var = v.m2 / C(a.divisor);
    if (a.take_sqrt) var = std::sqrt(var);
    reinterpret_cast<Out*>(o)[off] = ig_convert<Out>(var);
    if (o2) reinterpret_cast<Out*>(o2)[off] = ig_convert<Out>(v.mean);
  }
};
// log(sum(exp(x))) online: (max so far, sum of exp(x - max)).
template <class C> struct IgLseAcc { C m, s; };
template <class In, class Out, class C> struct IgLogSumExp {
  typedef IgLseAcc<C> acc_t; IgRedArgs a;
  acc_t identity() const { return acc_t{-std::numeric_limits<C>::infinity(), C(0)}; }
  acc_t map(In x, int64_t) const { return acc_t{ig_rload<C, Out, In>(x), C(1)}; }
  acc_t combine(acc_t x, acc_t y) const {
    const C m = ig_max_nan(x.m, y.m);
    if (m != m || m == std::numeric_limits<C>::infinity()) return acc_t{m, C(1)};
    if (m == -std::numeric_limits<C>::infinity()) return acc_t{m, C(0)};
    return acc_t{m, x.s * std::exp(x.m - m) + y.s * std::exp(y.m - m)};
  }
  void project(acc_t v, char* o, char*, int64_t off) const {
    reinterpret_cast<Out*>(o)[off] = ig_convert<Out>(v.m + std::log(v.s));
  }
};
// (value, index) of the first extreme; NaN is the extreme.
template <class C> struct IgArgAcc { C v; int64_t i; };
template <class In, class Out, class C, bool IsMax> struct IgArg {
  typedef IgArgAcc<C> acc_t; IgRedArgs a;
  acc_t identity() const {
    return acc_t{IsMax ? ig_lowest<C>() : ig_highest<C>(), 0x7fffffffffffffffll};
  }
  acc_t map(In x, int64_t k) const { return acc_t{ig_widen<In>::get(x), k}; }
  acc_t combine(acc_t x, acc_t y) const {
    const bool xn = x.v != x.v, yn = y.v != y.v;
    if (xn || yn) return (xn && (!yn || x.i < y.i)) ? x : y;
    if (x.v == y.v) return x.i < y.i ? x : y;
    return (IsMax ? x.v > y.v : x.v < y.v) ? x : y;
  }
  void project(acc_t v, char* o, char* o2, int64_t off) const {
    if (o) reinterpret_cast<Out*>(o)[off] = ig_convert<Out>(v.v);
    reinterpret_cast<int64_t*>(o2)[off] = v.i;
  }
};

// ---- the kernels ----
__forceinline__ void ig_red_out_offsets(const IgRedParams& p, int64_t m, int64_t& in_off,
                                        int64_t& out_off) {
  in_off = 0;
  out_off = 0;
  for (int d = 0; d < p.out_ndim; ++d) {
    const int64_t q = m / p.out_sizes[d], k = m - q * p.out_sizes[d];
    m = q;
    in_off += k * p.out_in[d];
    out_off += k * p.out_out[d];
  }
}
__forceinline__ int64_t ig_red_offset(const IgRedParams& p, int64_t k) {
  if (p.red_ndim == 1) return k * p.red_in[0];
  int64_t off = 0;
  for (int d = 0; d < p.red_ndim; ++d) {
    const int64_t q = k / p.red_sizes[d];
    off += (k - q * p.red_sizes[d]) * p.red_in[d];
    k = q;
  }
  return off;
}
// The workspace slot of split s's partial result for output m.
template <class Acc> __forceinline__ Acc* ig_slot(const IgRedParams& p, int64_t s, int64_t m) {
  return reinterpret_cast<Acc*>(p.ws + (s * p.M + m) * IG_ACC_BYTES);
}
template <class Op>
__forceinline__ void ig_emit(const Op& op, const IgRedParams& p, int64_t m, int64_t out_off,
                             const typename Op::acc_t& acc) {
  if (p.splits > 1)
    *ig_slot<typename Op::acc_t>(p, blockIdx.y, m) = acc;
  else
    op.project(acc, p.out, p.out2, out_off);
}
// Block (x, y): inner layout, x threads share an output's reduced range and
// y rows are separate outputs; outer layout, x threads are separate outputs
// and y rows share the range. blockIdx.y picks a split of the range.
template <class Op, class In>
__forceinline__ void ig_reduce(const Op& op, const IgRedParams& p) {
  typedef typename Op::acc_t Acc;
  __shared__ __align__(16) char smem_raw[256 * IG_ACC_BYTES];
  Acc* smem = reinterpret_cast<Acc*>(smem_raw);
  const int tx = threadIdx.x, ty = threadIdx.y, bx = blockDim.x, by = blockDim.y;
  const int64_t k0 = int64_t(blockIdx.y) * p.k_per_split;
  const int64_t k1 = p.K < k0 + p.k_per_split ? p.K : k0 + p.k_per_split;
  const int64_t per_block = p.outer ? bx : by;
  const int64_t mstep = int64_t(gridDim.x) * per_block;
  for (int64_t mb = int64_t(blockIdx.x) * per_block; mb < p.M; mb += mstep) {
    const int64_t m = mb + (p.outer ? tx : ty);
    const int64_t kstep = p.outer ? by : bx;
    Acc acc = op.identity();
    int64_t in_off = 0, out_off = 0;
    if (m < p.M) {
      ig_red_out_offsets(p, m, in_off, out_off);
      const In* base = reinterpret_cast<const In*>(p.in) + in_off;
      int64_t k = k0 + (p.outer ? ty : tx);
      if (p.vectors) {
        // Note [Vectors of a contiguous reduction]: thread tx reads vectors
        // tx, tx + bx, ... of its range, four at a time while four fit (their
        // loads issued together), then one at a time; the elements past the
        // last whole span one at a time.
        constexpr int V = IgRedVecWidth<In>::value;
        typedef IgRedVec<In, V> Vec;
        const int64_t span = kstep * V, full = k0 + (k1 - k0) / span * span;
        int64_t kv = k0 + int64_t(tx) * V;
        for (; kv + 3 * span < full; kv += 4 * span) {
          Vec v[4];
#pragma unroll
          for (int u = 0; u < 4; ++u) v[u] = *reinterpret_cast<const Vec*>(base + kv + u * span);
#pragma unroll
          for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int j = 0; j < V; ++j)
              acc = op.combine(acc, op.map(v[u].v[j], kv + u * span + j));
        }
        for (; kv < full; kv += span) {
          const Vec v = *reinterpret_cast<const Vec*>(base + kv);
#pragma unroll
          for (int j = 0; j < V; ++j) acc = op.combine(acc, op.map(v.v[j], kv + j));
        }
        k = full + tx;
      }
      for (; k < k1; k += kstep)
        acc = op.combine(acc, op.map(base[ig_red_offset(p, k)], k));
    }
    if (!p.outer) {
      if (bx >= 32) acc = ig_warp_reduce(op, acc);
      if (bx > 32) {
        const int warps = bx / 32;
        if ((tx & 31) == 0) smem[ty * warps + tx / 32] = acc;
        __syncthreads();
        if (tx < 32) {
          acc = tx < warps ? smem[ty * warps + tx] : op.identity();
          acc = ig_warp_reduce(op, acc);
        }
        __syncthreads();
      }
      if (tx == 0 && m < p.M) ig_emit(op, p, m, out_off, acc);
    } else {
      if (by > 1) {
        smem[ty * bx + tx] = acc;
        __syncthreads();
        if (ty == 0)
          for (int r = 1; r < by; ++r) acc = op.combine(acc, smem[r * bx + tx]);
        __syncthreads();
      }
      if (ty == 0 && m < p.M) ig_emit(op, p, m, out_off, acc);
    }
  }
}
// Second pass of a split reduction: each output combines its partials, in
// p.finish_lanes threads (the host's choice): with 32, a warp takes an output
// (lane l folds partials l, l + 32, ... in order, then the warp's fixed-order
// fold), else a thread does; one thread's chain over the 396 partials of a
// full mean took 13 us on the H100. Blocks of fewer than 32 threads (a host
// emulation's) fold an output a thread.
template <class Op>
__forceinline__ void ig_reduce_finish(const Op& op, const IgRedParams& p) {
  typedef typename Op::acc_t Acc;
  const int lanes = p.finish_lanes == 32 && blockDim.x >= 32 ? 32 : 1;
  const int lane = int(threadIdx.x) % lanes;
  const int64_t step = int64_t(gridDim.x) * (blockDim.x / lanes);
  for (int64_t m = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / lanes; m < p.M; m += step) {
    Acc acc = op.identity();
    for (int s = lane; s < p.splits; s += lanes) acc = op.combine(acc, *ig_slot<Acc>(p, s, m));
    if (lanes == 32) acc = ig_warp_reduce(op, acc);
    if (lane == 0) {
      int64_t in_off, out_off;
      ig_red_out_offsets(p, m, in_off, out_off);
      op.project(acc, p.out, p.out2, out_off);
    }
  }
}
)CUDA";

// The reductions: each kind's op template and its accumulator type.
enum class AccFrom : uint8_t { SumOf, OpmathIn, OpmathOut, Bool, Int64 };
struct Kind {
  const char* name;
  const char* op;  // In, Out, Acc substituted
  AccFrom acc;
};
const Kind kReductions[] = {
    {"sum", "IgSum<In, Out, Acc>", AccFrom::SumOf},
    {"nansum", "IgNanSum<In, Out, Acc>", AccFrom::SumOf},
    {"prod", "IgProd<In, Out, Acc>", AccFrom::SumOf},
    {"mean", "IgMean<In, Out, Acc>", AccFrom::OpmathOut},
    {"amax", "IgExtreme<In, Out, Acc, true>", AccFrom::OpmathIn},
    {"amin", "IgExtreme<In, Out, Acc, false>", AccFrom::OpmathIn},
    {"all", "IgLogical<In, Out, true>", AccFrom::Bool},
    {"any", "IgLogical<In, Out, false>", AccFrom::Bool},
    {"count_nonzero", "IgCountNonzero<In, Out>", AccFrom::Int64},
    {"norm_2", "IgNorm<In, Out, Acc, 2>", AccFrom::OpmathOut},
    {"norm_1", "IgNorm<In, Out, Acc, 1>", AccFrom::OpmathOut},
    {"norm_0", "IgNorm<In, Out, Acc, 0>", AccFrom::OpmathOut},
    {"norm_inf", "IgNorm<In, Out, Acc, 3>", AccFrom::OpmathOut},
    {"norm_ninf", "IgNorm<In, Out, Acc, 4>", AccFrom::OpmathOut},
    {"norm_p", "IgNorm<In, Out, Acc, 5>", AccFrom::OpmathOut},
    {"var", "IgVar<In, Out, Acc>", AccFrom::OpmathOut},
    {"logsumexp", "IgLogSumExp<In, Out, Acc>", AccFrom::OpmathOut},
    {"argmax", "IgArg<In, Out, Acc, true>", AccFrom::OpmathIn},
    {"argmin", "IgArg<In, Out, Acc, false>", AccFrom::OpmathIn},
};

const Kind& kind_of(const std::string& name) {
  for (const Kind& k : kReductions)
    if (name == k.name) return k;
  IGNIS_INTERNAL_ASSERT(false, "unknown CUDA reduction ", name);
  return kReductions[0];
}

const char* acc_type(const Kind& k, ScalarType in, ScalarType out) {
  switch (k.acc) {
    case AccFrom::SumOf: return is_floating(out) ? device_opmath_name(out) : "int64_t";
    case AccFrom::OpmathIn: return device_opmath_name(in);
    case AccFrom::OpmathOut: return device_opmath_name(out);
    case AccFrom::Bool: return "bool";
    case AccFrom::Int64: return "int64_t";
  }
  return "?";
}

std::string symbol_of(const std::string& kind, ScalarType in, ScalarType out) {
  return str("red_", kind, "_", dtype_name(in), "_", dtype_name(out));
}

CUfunction function_for(int device, const std::string& kind, ScalarType in, ScalarType out,
                        bool finish) {
  // One symbol, two sources: the split path's finishing pass is the other.
  return get_named_kernel(device, str(symbol_of(kind, in, out), finish ? "/finish" : ""),
                          [&] { return reduce_kernel(kind, in, out, finish); });
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int next_pow2(int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p <<= 1;
  return p;
}

// Runs reduction `kind` of `in` over `mask` into `out` (and `out2`, laid out
// like out: var's mean, arg reductions' indices). `in` must not be empty.
void run(const std::string& kind, const Tensor& out, const Tensor& out2, const Tensor& in,
         DimMask mask, RedArgs args) {
  const Tensor& shape_of = out.defined() ? out : out2;
  if (shape_of.numel() == 0) return;
  IGNIS_INTERNAL_ASSERT(in.numel() > 0);
  IGNIS_INTERNAL_ASSERT(!out.defined() || !out2.defined() || out.strides() == out2.strides());
  cpu::ReducePlan pl = cpu::make_reduce_plan(in, shape_of, mask);
  RedParams p{};
  p.in = in.data_ptr();
  p.out = out.defined() ? out.data_ptr() : nullptr;
  p.out2 = out2.defined() ? out2.data_ptr() : nullptr;
  // Fastest dim first: the vector dim (outer layout), then the kept dims
  // innermost first; the reduced dims innermost first.
  int nd = 0;
  auto push_out = [&](int64_t size, int64_t s_in, int64_t s_out) {
    IGNIS_CHECK(nd < kMaxKernelDims, "CUDA reductions handle at most ", kMaxKernelDims,
                " kept dims");
    p.out_sizes[nd] = size;
    p.out_in[nd] = s_in;
    p.out_out[nd] = s_out;
    ++nd;
  };
  if (pl.vec_mode) push_out(pl.vec_size, pl.vec_in, pl.vec_out);
  for (int i = static_cast<int>(pl.keep_sizes.size()) - 1; i >= 0; --i)
    push_out(pl.keep_sizes[i], pl.keep_in[i], pl.keep_out[i]);
  p.out_ndim = nd;
  const int nr = static_cast<int>(pl.red_sizes.size());
  IGNIS_CHECK(nr <= kMaxKernelDims, "CUDA reductions handle at most ", kMaxKernelDims,
              " reduced dims");
  for (int i = 0; i < nr; ++i) {
    p.red_sizes[i] = pl.red_sizes[nr - 1 - i];
    p.red_in[i] = pl.red_in[nr - 1 - i];
  }
  p.red_ndim = nr;
  p.M = pl.num_outputs * pl.vec_size;
  p.K = pl.reduce_numel;
  // Outer layout when a kept dim is the fastest and there are outputs enough
  // to fill a warp's lanes, or when rows are too short to share among a
  // warp's lanes (x.sum(-1) of 4-element rows); inner layout otherwise, also
  // for x.sum(0) of a few columns, whose reduced dim is then walked by a
  // warp with a small stride.
  p.outer = (pl.vec_mode && p.M >= 32) || p.K <= 16 ? 1 : 0;
  p.a = args;

  const int device = in.device().index;
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  const int sms = device_properties(device).multi_processor_count;
  // Block shape: inner, x along the reduced range (a warp for short rows, up
  // to the whole block for long ones); outer, x along the outputs.
  int bx = p.outer ? std::clamp(next_pow2(p.M), 32, kBlockThreads)
                   : std::clamp(next_pow2(ceil_div(p.K, 8)), 32, kBlockThreads);
  int by = kBlockThreads / bx;
  const int64_t per_block = p.outer ? bx : by;
  const int64_t k_threads = p.outer ? by : bx;
  int64_t gx = std::min<int64_t>(ceil_div(p.M, per_block), int64_t(sms) * 32);
  ScalarType in_t = in.dtype(), out_t = out.defined() ? out.dtype() : in.dtype();
  CUfunction f = function_for(device, kind, in_t, out_t, false);
  // Split the reduced range when the outputs cannot fill the GPU and each
  // thread would otherwise walk a long range: into one round of blocks, as
  // many as the multiprocessors run at once by the kernel's occupancy (four
  // a multiprocessor, where registers allowed three, left the mean of 2^26
  // floats 1.33 rounds: 149.9 us against torch's 100.4 on the H100).
  int64_t splits = 1;
  const int64_t target = one_round_blocks(f, bx * by, device);
  if (gx < target && p.K >= k_threads * 64)
    splits = std::min({ceil_div(target, gx), ceil_div(p.K, k_threads * 64), int64_t(65535)});
  p.k_per_split = ceil_div(p.K, splits);
  // Note [Vectors of a contiguous reduction]
  // A reduction over one contiguous dim read an element a thread a step,
  // one 4-byte load in flight: the mean of 2^26 floats took 126 us on the
  // H100 against torch's 100 (docs/benchmarks.md run 15). Where every
  // output's range starts on 16 bytes (the input aligned, the kept dims'
  // strides and each split's length whole vectors), the inner layout reads
  // 16-byte vectors, four a thread in flight. IGNIS_CUDA_REDUCE_VECTORS=0
  // turns it off, for A/B runs.
  static const bool vectors_on = [] {
    const char* e = std::getenv("IGNIS_CUDA_REDUCE_VECTORS");
    return !(e && std::string(e) == "0");
  }();
  const int64_t item = int64_t(element_size(in.dtype()));
  const int64_t width = item <= 16 ? 16 / item : 1;
  bool vectors = vectors_on && !p.outer && width > 1 && p.red_ndim == 1 && p.red_in[0] == 1 &&
                 reinterpret_cast<uintptr_t>(p.in) % 16 == 0 && p.K >= int64_t(bx) * width;
  for (int d = 0; vectors && d < p.out_ndim; ++d) vectors = (p.out_in[d] * item) % 16 == 0;
  if (vectors && splits > 1) p.k_per_split = ceil_div(p.k_per_split, width) * width;
  p.vectors = vectors ? 1 : 0;
  splits = ceil_div(p.K, p.k_per_split);
  p.splits = static_cast<int32_t>(splits);
  // The finishing pass folds an output in a warp from 32 splits on (ig_reduce_finish).
  p.finish_lanes = splits >= 32 ? 32 : 1;
  Tensor ws;
  if (splits > 1) {
    ws = empty_tensor(DimVector{splits * p.M * kAccBytes}, ScalarType::UInt8, in.device());
    p.ws = ws.data_ptr();
  }
  void* a[] = {&p};
  IGNIS_CU(cuLaunchKernel(f, unsigned(gx), unsigned(splits), 1, unsigned(bx), unsigned(by), 1, 0,
                          stream.handle, a, nullptr));
  if (splits > 1) {
    CUfunction g = function_for(device, kind, in_t, out_t, true);
    auto grid = static_cast<unsigned>(ceil_div(p.M * p.finish_lanes, kBlockThreads));
    IGNIS_CU(cuLaunchKernel(g, grid, 1, 1, kBlockThreads, 1, 1, 0, stream.handle, a, nullptr));
  }
  // ws goes back to the caching allocator now: its stream reuses it only in
  // stream order, after these kernels.
}

int64_t reduced_count(const Tensor& in, DimMask mask) {
  int64_t n = 1;
  for (int64_t d = 0; d < in.dim(); ++d)
    if ((mask >> d) & 1) n *= in.sizes()[d];
  return n;
}

// Runs `kind`, or fills the value of an empty reduction.
void reduce_or_fill(const std::string& kind, const Tensor& out, const Tensor& in, DimMask mask,
                    const Scalar& empty_value, RedArgs args = {}) {
  if (out.numel() == 0) return;
  if (in.numel() == 0) return fill_tensor(out, empty_value);
  run(kind, out, Tensor(), in, mask, args);
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

KernelRequest reduce_kernel(const std::string& kind, ScalarType in, ScalarType out, bool finish) {
  const Kind& k = kind_of(kind);
  const std::string sym = symbol_of(kind, in, out);
  std::string body = str("typedef ", device_type_name(in), " In;\ntypedef ", device_type_name(out),
                         " Out;\ntypedef ", acc_type(k, in, out), " Acc;\ntypedef ", k.op,
                         " IgOp;\n");
  body += str("extern \"C\" __global__ void ", sym, "(IgRedParams p) {\n",
              "  IgOp op;\n  op.a = p.a;\n  ig_reduce<IgOp, In>(op, p);\n}\n");
  body += str("extern \"C\" __global__ void ", sym, "_finish(IgRedParams p) {\n",
              "  IgOp op;\n  op.a = p.a;\n  ig_reduce_finish(op, p);\n}\n");
  KernelRequest r;
  r.symbol = finish ? sym + "_finish" : sym;
  r.label = sym + ".cu";
  r.source = str(eager_prelude(), device_scalar_ops_source(), kTemplates, kKernelBodyMarker, body);
  r.options = {"-default-device", "-w"};
  return r;
}

std::vector<ReduceVariant> reduce_variants() {
  std::vector<ReduceVariant> v;
  auto all = [](auto f) {  // the real types: complex tensors reduce through real views
    for (int i = 0; i < kNumScalarTypes; ++i)
      if (!is_complex(static_cast<ScalarType>(i))) f(static_cast<ScalarType>(i));
  };
  all([&](ScalarType t) {
    const ScalarType sum_t = is_floating(t) ? t : ScalarType::Int64;
    for (const char* k : {"sum", "nansum", "prod"}) v.push_back({k, t, sum_t});
    v.push_back({"sum", t, ScalarType::Float32});  // an explicit dtype
    for (const char* k : {"amax", "amin"}) v.push_back({k, t, t});
    v.push_back({"all", t, t == ScalarType::UInt8 ? t : ScalarType::Bool});
    v.push_back({"any", t, t == ScalarType::UInt8 ? t : ScalarType::Bool});
    v.push_back({"count_nonzero", t, ScalarType::Int64});
    v.push_back({"logsumexp", t, is_floating(t) ? t : ScalarType::Float32});
    if (t != ScalarType::Bool)
      for (const char* k : {"argmax", "argmin"}) v.push_back({k, t, t});
    if (is_floating(t)) {
      v.push_back({"mean", t, t});
      v.push_back({"var", t, t});
      for (const char* k : {"norm_2", "norm_1", "norm_0", "norm_inf", "norm_ninf", "norm_p"})
        v.push_back({k, t, t});
    }
  });
  return v;
}

void sum_out(const Tensor& out, const Tensor& in, DimMask mask) {
  reduce_or_fill("sum", out, in, mask, Scalar(int64_t(0)));
}
void nansum_out(const Tensor& out, const Tensor& in, DimMask mask) {
  reduce_or_fill("nansum", out, in, mask, Scalar(int64_t(0)));
}
void prod_out(const Tensor& out, const Tensor& in, DimMask mask) {
  reduce_or_fill("prod", out, in, mask, Scalar(int64_t(1)));
}
void mean_out(const Tensor& out, const Tensor& in, DimMask mask) {
  RedArgs a;
  a.n = static_cast<double>(reduced_count(in, mask));
  reduce_or_fill("mean", out, in, mask, Scalar(kNaN), a);
}
void amax_out(const Tensor& out, const Tensor& in, DimMask mask) {
  reduce_or_fill("amax", out, in, mask, Scalar(int64_t(0)));  // empty: refused by the meta rule
}
void amin_out(const Tensor& out, const Tensor& in, DimMask mask) {
  reduce_or_fill("amin", out, in, mask, Scalar(int64_t(0)));
}
void all_out(const Tensor& out, const Tensor& in, DimMask mask) {
  reduce_or_fill("all", out, in, mask, Scalar(true));
}
void any_out(const Tensor& out, const Tensor& in, DimMask mask) {
  reduce_or_fill("any", out, in, mask, Scalar(false));
}
void count_nonzero_out(const Tensor& out, const Tensor& in, DimMask mask) {
  reduce_or_fill("count_nonzero", out, in, mask, Scalar(int64_t(0)));
}
void norm_out(const Tensor& out, const Tensor& in, DimMask mask, double p) {
  RedArgs a;
  a.p = p;
  a.inv_p = 1.0 / p;
  const char* kind = p == 2 ? "norm_2" : p == 1 ? "norm_1" : p == 0 ? "norm_0"
                     : std::isinf(p) ? (p > 0 ? "norm_inf" : "norm_ninf") : "norm_p";
  reduce_or_fill(kind, out, in, mask, Scalar(int64_t(0)), a);
}
void var_mean_out(const Tensor& var, const Tensor& mean, const Tensor& in, DimMask mask,
                  double correction, bool take_sqrt) {
  if (var.numel() == 0) return;
  if (in.numel() == 0) {
    fill_tensor(var, Scalar(kNaN));
    if (mean.defined()) fill_tensor(mean, Scalar(kNaN));
    return;
  }
  RedArgs a;
  a.divisor = std::max(0.0, static_cast<double>(reduced_count(in, mask)) - correction);
  a.take_sqrt = take_sqrt ? 1 : 0;
  run("var", var, mean, in, mask, a);
}
void logsumexp_out(const Tensor& out, const Tensor& in, DimMask mask) {
  reduce_or_fill("logsumexp", out, in, mask, Scalar(-std::numeric_limits<double>::infinity()));
}
void arg_reduce_out(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                    bool is_max) {
  if (indices.numel() == 0) return;
  if (in.dim() == 0) {  // one element: itself, at index 0
    if (values.defined()) copy_tensor(values, in);
    return fill_tensor(indices, Scalar(int64_t(0)));
  }
  Tensor src = in;
  DimMask mask = DimMask(1) << (dim < 0 ? 0 : dim);
  if (dim < 0) {
    // Over the flattened input: indices count in row-major order, which the
    // plan follows only for a contiguous input.
    if (!in.is_contiguous()) {
      src = empty_tensor(in.sizes(), in.dtype(), in.device());
      copy_tensor(src, in);
    }
    mask = in.dim() >= 64 ? ~DimMask(0) : (DimMask(1) << in.dim()) - 1;
  }
  run(is_max ? "argmax" : "argmin", values, indices, src, mask, RedArgs{});
}

}  // namespace ignis::cuda

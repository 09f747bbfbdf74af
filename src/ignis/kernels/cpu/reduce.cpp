#include "ignis/kernels/cpu/reduce.h"

#include "ignis/kernels/cpu/parallel.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/loops.h"
#include "ignis/kernels/cpu/vec_math.h"

namespace ignis::cpu {

// ---------------------------------------------------------------------------
// Planning
// ---------------------------------------------------------------------------
ReducePlan make_reduce_plan(const Tensor& in, const Tensor& out, DimMask mask) {
  struct Dim {
    int64_t size, in, out;
    bool red;
  };
  const int64_t nd = in.dim();
  const bool keepdim = out.dim() == nd;
  std::vector<Dim> dims;
  for (int64_t d = 0, od = 0; d < nd; ++d) {
    const bool red = (mask >> d) & 1;
    int64_t os = 0;
    if (!red) os = out.strides()[od];
    if (!red || keepdim) ++od;
    if (in.sizes()[d] != 1) dims.push_back({in.sizes()[d], in.strides()[d], os, red});
  }
  // Outermost first by input stride; broadcast (stride-0) dims go outermost
  // so that the inner loops walk real memory.
  auto key = [](const Dim& d) {
    return d.in == 0 ? std::numeric_limits<int64_t>::max() : d.in;
  };
  std::stable_sort(dims.begin(), dims.end(),
                   [&](const Dim& a, const Dim& b) { return key(a) > key(b); });
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (!merged.empty()) {
      Dim& m = merged.back();
      if (m.red == d.red && m.in == d.size * d.in && (m.red || m.out == d.size * d.out)) {
        m = {m.size * d.size, d.in, d.out, m.red};
        continue;
      }
    }
    merged.push_back(d);
  }
  ReducePlan p;
  if (!merged.empty() && !merged.back().red) {
    p.vec_mode = true;
    p.vec_size = merged.back().size;
    p.vec_in = merged.back().in;
    p.vec_out = merged.back().out;
    merged.pop_back();
  }
  for (const Dim& d : merged) {
    if (d.red) {
      p.red_sizes.push_back(d.size);
      p.red_in.push_back(d.in);
      p.reduce_numel *= d.size;
    } else {
      p.keep_sizes.push_back(d.size);
      p.keep_in.push_back(d.in);
      p.keep_out.push_back(d.out);
      p.num_outputs *= d.size;
    }
  }
  if (p.red_sizes.empty()) {
    p.red_sizes.push_back(1);
    p.red_in.push_back(0);
  }
  return p;
}

int reduce_threads(int64_t work) { return threads_for(work, kReduceGrain); }

namespace {

// ---------------------------------------------------------------------------
// Ops
// ---------------------------------------------------------------------------
template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                            std::is_same_v<T, BFloat16>;

// Sums and products accumulate floats in their op-math type, everything
// else in int64.
template <typename T>
using sum_acc_t = std::conditional_t<is_float_v<T>, opmath_t<T>, int64_t>;
template <typename T>
using sum_out_t = std::conditional_t<is_float_v<T>, T, int64_t>;

// Integer overflow wraps (as in PyTorch) instead of being undefined.
template <typename A>
inline A add(A a, A b) {
  if constexpr (std::is_integral_v<A>) return static_cast<A>(uint64_t(a) + uint64_t(b));
  else return a + b;
}
template <typename A>
inline A mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) return static_cast<A>(uint64_t(a) * uint64_t(b));
  else return a * b;
}

// NaN-propagating max and min; ties keep the first operand.
template <typename A>
inline A max_nan(A a, A b) { return (a != a || a >= b) ? a : b; }
template <typename A>
inline A min_nan(A a, A b) { return (a != a || a <= b) ? a : b; }

template <typename A>
constexpr A lowest() {
  if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
  else return std::numeric_limits<A>::lowest();
}
template <typename A>
constexpr A highest() {
  if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
  else return std::numeric_limits<A>::max();
}

template <typename T>
struct SumOp {
  using in_t = T;
  using acc_t = sum_acc_t<T>;
  using out_t = sum_out_t<T>;
  static constexpr bool kCascade = is_float_v<T>;
  acc_t identity() const { return acc_t(0); }
  acc_t map(T x) const { return static_cast<acc_t>(widen(x)); }
  acc_t combine(acc_t a, acc_t b) const { return add(a, b); }
  out_t project(acc_t a) const { return static_cast<out_t>(a); }
};

template <typename T>
struct NanSumOp : SumOp<T> {
  using acc_t = sum_acc_t<T>;
  acc_t map(T x) const {
    acc_t v = static_cast<acc_t>(widen(x));
    return v != v ? acc_t(0) : v;
  }
};

template <typename T>
struct ProdOp {
  using in_t = T;
  using acc_t = sum_acc_t<T>;
  using out_t = sum_out_t<T>;
  static constexpr bool kCascade = false;
  acc_t identity() const { return acc_t(1); }
  acc_t map(T x) const { return static_cast<acc_t>(widen(x)); }
  acc_t combine(acc_t a, acc_t b) const { return mul(a, b); }
  out_t project(acc_t a) const { return static_cast<out_t>(a); }
};

// Mean of a floating input, written as O (the input type, or its op-math
// type for var's intermediate mean).
template <typename T, typename O = T>
struct MeanOp {
  using in_t = T;
  using acc_t = opmath_t<T>;
  using out_t = O;
  static constexpr bool kCascade = true;
  acc_t n;
  acc_t identity() const { return acc_t(0); }
  acc_t map(T x) const { return widen(x); }
  acc_t combine(acc_t a, acc_t b) const { return a + b; }
  out_t project(acc_t a) const { return static_cast<out_t>(a / n); }
};

template <typename T, bool IsMax, typename O = T>
struct ExtremeOp {
  using in_t = T;
  using acc_t = opmath_t<T>;
  using out_t = O;
  static constexpr bool kCascade = false;
  acc_t identity() const { return IsMax ? lowest<acc_t>() : highest<acc_t>(); }
  acc_t map(T x) const { return widen(x); }
  acc_t combine(acc_t a, acc_t b) const { return IsMax ? max_nan(a, b) : min_nan(a, b); }
  out_t project(acc_t a) const { return static_cast<out_t>(a); }
};

// all / any: truth values as bytes, AND- or OR-ed.
template <typename T, typename O, bool IsAll>
struct LogicalOp {
  using in_t = T;
  using acc_t = uint8_t;
  using out_t = O;
  static constexpr bool kCascade = false;
  acc_t identity() const { return IsAll ? 1 : 0; }
  acc_t map(T x) const { return widen(x) != opmath_t<T>(0); }
  acc_t combine(acc_t a, acc_t b) const { return IsAll ? (a & b) : (a | b); }
  out_t project(acc_t a) const { return static_cast<out_t>(a); }
};

template <typename T>
struct CountNonzeroOp {
  using in_t = T;
  using acc_t = int64_t;
  using out_t = int64_t;
  static constexpr bool kCascade = false;
  acc_t identity() const { return 0; }
  acc_t map(T x) const { return widen(x) != opmath_t<T>(0); }
  acc_t combine(acc_t a, acc_t b) const { return a + b; }
  out_t project(acc_t a) const { return a; }
};

enum class NormKind { L0, L1, L2, Inf, NegInf, P };

template <typename T, NormKind K>
struct NormOp {
  using in_t = T;
  using acc_t = opmath_t<T>;
  using out_t = T;
  static constexpr bool kCascade = K != NormKind::Inf && K != NormKind::NegInf;
  acc_t p = 2, inv_p = 0.5;
  acc_t identity() const { return K == NormKind::NegInf ? highest<acc_t>() : acc_t(0); }
  acc_t map(T x) const {
    acc_t v = widen(x);
    if constexpr (K == NormKind::L0) return v != acc_t(0) ? acc_t(1) : acc_t(0);
    else if constexpr (K == NormKind::L2) return v * v;
    else if constexpr (K == NormKind::P) return std::pow(std::abs(v), p);
    else return std::abs(v);
  }
  acc_t combine(acc_t a, acc_t b) const {
    if constexpr (K == NormKind::Inf) return max_nan(a, b);
    else if constexpr (K == NormKind::NegInf) return min_nan(a, b);
    else return a + b;
  }
  out_t project(acc_t a) const {
    if constexpr (K == NormKind::L2) return static_cast<out_t>(std::sqrt(a));
    else if constexpr (K == NormKind::P) return static_cast<out_t>(std::pow(a, inv_p));
    else return static_cast<out_t>(a);
  }
};

// Second pass of var/std: sums squared deviations (already in A) and
// scales by 1 / max(0, n - correction).
template <typename A, typename O>
struct VarFinishOp {
  using in_t = A;
  using acc_t = A;
  using out_t = O;
  static constexpr bool kCascade = true;
  A divisor;
  bool take_sqrt;
  A identity() const { return A(0); }
  A map(A x) const { return x; }
  A combine(A a, A b) const { return a + b; }
  O project(A a) const {
    A v = a / divisor;
    return static_cast<O>(take_sqrt ? std::sqrt(v) : v);
  }
};

// ---------------------------------------------------------------------------
// Dtype adaptation
// ---------------------------------------------------------------------------
ScalarType sum_natural(ScalarType t) { return is_floating(t) ? t : ScalarType::Int64; }

// Calls k(dst, src) where src is `in`, cast to out's dtype when the op's
// natural result for `in` is not out's dtype (sum(x, dtype=float64) sums in
// float64, as PyTorch does), and dst has the natural result dtype for src: out
// itself, or a temporary copied into out (sum(int32, dtype=int32) sums in
// int64 and narrows).
template <class K>
void adapt(const Tensor& out, const Tensor& in, ScalarType (*natural)(ScalarType), K k) {
  Tensor src = in;
  if (natural(in.dtype()) != out.dtype() && in.dtype() != out.dtype())
    src = to_dtype_copy(in, out.dtype());
  if (natural(src.dtype()) == out.dtype()) {
    k(out, src);
    return;
  }
  Tensor tmp = empty_tensor(out.sizes(), natural(src.dtype()), out.device());
  k(tmp, src);
  copy_into(out, tmp);
}

ScalarType same_dtype(ScalarType t) { return t; }

// in's shape with the reduced dims kept as size 1.
DimVector keep_shape(const Tensor& in, DimMask mask) {
  DimVector s = in.sizes();
  for (int64_t d = 0; d < in.dim(); ++d)
    if ((mask >> d) & 1) s[d] = 1;
  return s;
}
int64_t reduced_count(const Tensor& in, DimMask mask) {
  int64_t n = 1;
  for (int64_t d = 0; d < in.dim(); ++d)
    if ((mask >> d) & 1) n *= in.sizes()[d];
  return n;
}
// A contiguous tensor viewed with another shape of the same numel.
Tensor reshaped(const Tensor& t, const DimVector& sizes) {
  return make_view(t, sizes, contiguous_strides(sizes), t.storage_offset());
}
Tensor contiguous_copy(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor c = empty_tensor(t.sizes(), t.dtype(), t.device());
  copy_into(c, t);
  return c;
}

}  // namespace

// ---------------------------------------------------------------------------
// Simple reductions
// ---------------------------------------------------------------------------
void sum_out(const Tensor& out, const Tensor& in, DimMask mask) {
  adapt(out, in, sum_natural, [&](const Tensor& dst, const Tensor& src) {
    IGNIS_DISPATCH_ALL(src.dtype(), "sum", [&] { reduce(dst, src, mask, SumOp<scalar_t>{}); });
  });
}

void nansum_out(const Tensor& out, const Tensor& in, DimMask mask) {
  adapt(out, in, sum_natural, [&](const Tensor& dst, const Tensor& src) {
    IGNIS_DISPATCH_ALL(src.dtype(), "nansum",
                       [&] { reduce(dst, src, mask, NanSumOp<scalar_t>{}); });
  });
}

void prod_out(const Tensor& out, const Tensor& in, DimMask mask) {
  adapt(out, in, sum_natural, [&](const Tensor& dst, const Tensor& src) {
    IGNIS_DISPATCH_ALL(src.dtype(), "prod", [&] { reduce(dst, src, mask, ProdOp<scalar_t>{}); });
  });
}

void mean_out(const Tensor& out, const Tensor& in, DimMask mask) {
  const int64_t n = reduced_count(in, mask);
  adapt(out, in, same_dtype, [&](const Tensor& dst, const Tensor& src) {
    IGNIS_DISPATCH_FLOAT(src.dtype(), "mean", [&] {
      using A = opmath_t<scalar_t>;
      reduce(dst, src, mask, MeanOp<scalar_t>{static_cast<A>(n)});
    });
  });
}

void amax_out(const Tensor& out, const Tensor& in, DimMask mask) {
  IGNIS_DISPATCH_ALL(in.dtype(), "amax",
                     [&] { reduce(out, in, mask, ExtremeOp<scalar_t, true>{}); });
}

void amin_out(const Tensor& out, const Tensor& in, DimMask mask) {
  IGNIS_DISPATCH_ALL(in.dtype(), "amin",
                     [&] { reduce(out, in, mask, ExtremeOp<scalar_t, false>{}); });
}

namespace {
template <bool IsAll>
void logical_out(const Tensor& out, const Tensor& in, DimMask mask, const char* name) {
  IGNIS_DISPATCH_ALL(in.dtype(), name, [&] {
    if (out.dtype() == ScalarType::UInt8)
      reduce(out, in, mask, LogicalOp<scalar_t, uint8_t, IsAll>{});
    else
      reduce(out, in, mask, LogicalOp<scalar_t, bool, IsAll>{});
  });
}
}  // namespace

void all_out(const Tensor& out, const Tensor& in, DimMask mask) {
  logical_out<true>(out, in, mask, "all");
}
void any_out(const Tensor& out, const Tensor& in, DimMask mask) {
  logical_out<false>(out, in, mask, "any");
}

void count_nonzero_out(const Tensor& out, const Tensor& in, DimMask mask) {
  IGNIS_DISPATCH_ALL(in.dtype(), "count_nonzero",
                     [&] { reduce(out, in, mask, CountNonzeroOp<scalar_t>{}); });
}

namespace {
template <typename T>
void norm_typed(const Tensor& out, const Tensor& in, DimMask mask, double p) {
  using A = opmath_t<T>;
  if (p == 2) reduce(out, in, mask, NormOp<T, NormKind::L2>{});
  else if (p == 1) reduce(out, in, mask, NormOp<T, NormKind::L1>{});
  else if (p == 0) reduce(out, in, mask, NormOp<T, NormKind::L0>{});
  else if (std::isinf(p) && p > 0) reduce(out, in, mask, NormOp<T, NormKind::Inf>{});
  else if (std::isinf(p)) reduce(out, in, mask, NormOp<T, NormKind::NegInf>{});
  else reduce(out, in, mask, NormOp<T, NormKind::P>{static_cast<A>(p), static_cast<A>(1.0 / p)});
}
}  // namespace

void norm_out(const Tensor& out, const Tensor& in, DimMask mask, double p) {
  adapt(out, in, same_dtype, [&](const Tensor& dst, const Tensor& src) {
    IGNIS_DISPATCH_FLOAT(src.dtype(), "norm", [&] { norm_typed<scalar_t>(dst, src, mask, p); });
  });
}

// ---------------------------------------------------------------------------
// var / std (two passes: the mean, then the squared deviations from it)
// ---------------------------------------------------------------------------
namespace {

// Sum of (x - mean)^2.
template <typename T>
struct SqDevOp {
  using in_t = T;
  using acc_t = opmath_t<T>;
  using out_t = acc_t;
  static constexpr bool kCascade = true;
  acc_t mean;
  acc_t identity() const { return acc_t(0); }
  acc_t map(T x) const {
    acc_t d = widen(x) - mean;
    return d * d;
  }
  acc_t combine(acc_t a, acc_t b) const { return a + b; }
  out_t project(acc_t a) const { return a; }
};

// Sum of (x - mean[j])^2 over a vector-mode tile (mean per lane).
template <typename T>
struct SqDevLaneOp {
  using in_t = T;
  using acc_t = opmath_t<T>;
  using out_t = acc_t;
  static constexpr bool kCascade = true;
  const acc_t* mean;
  acc_t identity() const { return acc_t(0); }
  acc_t map(T x, int64_t j) const {
    acc_t d = widen(x) - mean[j];
    return d * d;
  }
  acc_t combine(acc_t a, acc_t b) const { return a + b; }
  out_t project(acc_t a) const { return a; }
};

// Two passes over the input per output (or per vector-mode tile): the mean,
// then the squared deviations from it; no temporaries. Returns false when
// the outputs are too few to keep the threads busy (the caller then splits
// the reduced dims instead).
template <typename T>
bool var_fused(const Tensor& var, const Tensor& mean, const Tensor& in, DimMask mask,
               double divisor, bool take_sqrt) {
  using A = opmath_t<T>;
  if (in.numel() == 0) return false;
  const ReducePlan p = make_reduce_plan(in, var, mask);
  const int nt = reduce_threads(in.numel());
  const T* ip = in.data<T>();
  T* vp = var.data<T>();
  T* mp = mean.defined() ? mean.data<T>() : nullptr;
  const A n = static_cast<A>(p.reduce_numel), div = static_cast<A>(divisor);
  const int64_t R0 = p.red_sizes[0];
  auto finish = [&](A mu, A ss, int64_t out_off) {
    const A v = ss / div;
    vp[out_off] = static_cast<T>(take_sqrt ? std::sqrt(v) : v);
    if (mp) mp[out_off] = static_cast<T>(mu);
  };
  if (!p.vec_mode) {
    if (p.num_outputs < nt) return false;
    for_each_output(p, nt, [&](int64_t in_off, int64_t out_off) {
      const T* base = ip + in_off;
      const A mu = detail::reduce_inner(SumOp<T>{}, base, p, 0, R0) / n;
      finish(mu, detail::reduce_inner(SqDevOp<T>{mu}, base, p, 0, R0), out_off);
    });
    return true;
  }
  constexpr int64_t TW = detail::kTileBytes / static_cast<int64_t>(sizeof(A));
  const int64_t tw = tile_width(p, nt, TW);
  if (p.num_outputs * ((p.vec_size + tw - 1) / tw) < nt) return false;
  for_each_tile(p, nt, tw, [&](int64_t in_off, int64_t out_off, int64_t w) {
    alignas(64) A mu[TW];
    alignas(64) A ss[TW];
    detail::reduce_tile(SumOp<T>{}, ip + in_off, w, p, 0, R0, mu);
    for (int64_t j = 0; j < w; ++j) mu[j] /= n;
    detail::reduce_tile(SqDevLaneOp<T>{mu}, ip + in_off, w, p, 0, R0, ss);
    for (int64_t j = 0; j < w; ++j) finish(mu[j], ss[j], out_off + j * p.vec_out);
  });
  return true;
}

}  // namespace

void var_mean_out(const Tensor& var, const Tensor& mean, const Tensor& in, DimMask mask,
                  double correction, bool take_sqrt) {
  const int64_t n = reduced_count(in, mask);
  const double divisor = std::max(0.0, static_cast<double>(n) - correction);
  bool done = false;
  IGNIS_DISPATCH_FLOAT(in.dtype(), "var", [&] {
    done = var_fused<scalar_t>(var, mean, in, mask, divisor, take_sqrt);
  });
  if (done) return;
  // Otherwise (few outputs, or empty): the mean into a temporary, the
  // squared deviations into another (laid out like `in`), their scaled sum.
  const ScalarType acc = in.dtype() == ScalarType::Float64 ? ScalarType::Float64
                                                           : ScalarType::Float32;
  Tensor m = empty_tensor(keep_shape(in, mask), acc, in.device());
  IGNIS_DISPATCH_FLOAT(in.dtype(), "var", [&] {
    using A = opmath_t<scalar_t>;
    reduce(m, in, mask, MeanOp<scalar_t, A>{static_cast<A>(n)});
  });
  TensorIterator it;
  it.add_output(Tensor());
  it.add_input(in);
  it.add_input(m);
  IterConfig cfg;
  cfg.op_name = "var";
  cfg.common_dtype = acc;
  it.build(cfg, in.device());
  IGNIS_DISPATCH_SWITCH(acc, "var",
                        IGNIS_DTYPE_CASE(float, Float32, [&] {
                          using A = scalar_t;
                          cpu_kernel<A, A>(it, [](A x, A mu) { A d = x - mu; return d * d; });
                          IGNIS_DISPATCH_FLOAT(var.dtype(), "var", [&] {
                            reduce(var, it.output(), mask,
                                   VarFinishOp<A, scalar_t>{A(divisor), take_sqrt});
                          });
                        })
                        IGNIS_DTYPE_CASE(double, Float64, [&] {
                          using A = scalar_t;
                          cpu_kernel<A, A>(it, [](A x, A mu) { A d = x - mu; return d * d; });
                          reduce(var, it.output(), mask, VarFinishOp<A, A>{divisor, take_sqrt});
                        }));
  if (mean.defined()) copy_into(mean, reshaped(m, mean.sizes()));
}

// ---------------------------------------------------------------------------
// logsumexp
// ---------------------------------------------------------------------------
namespace {
template <typename A>
inline A finite_or_zero(A m) { return std::isinf(m) ? A(0) : m; }
template <typename A>
inline A exp_fast(A x) { return vexp(x); }

// Sum of exp(x - shift).
template <typename T>
struct ExpSumOp {
  using in_t = T;
  using acc_t = opmath_t<T>;
  using out_t = acc_t;
  static constexpr bool kCascade = true;
  acc_t shift;
  acc_t identity() const { return acc_t(0); }
  acc_t map(T x) const { return exp_fast(widen(x) - shift); }
  acc_t combine(acc_t a, acc_t b) const { return a + b; }
  out_t project(acc_t a) const { return a; }
};

// Sum of exp(x - shift[j]) over a vector-mode tile.
template <typename T>
struct ExpSumLaneOp {
  using in_t = T;
  using acc_t = opmath_t<T>;
  using out_t = acc_t;
  static constexpr bool kCascade = true;
  const acc_t* shift;
  acc_t identity() const { return acc_t(0); }
  acc_t map(T x, int64_t j) const { return exp_fast(widen(x) - shift[j]); }
  acc_t combine(acc_t a, acc_t b) const { return a + b; }
  out_t project(acc_t a) const { return a; }
};

// Two passes over the input per output (or vector-mode tile): the max, then
// the shifted exp-sum; no temporaries. Returns false when the outputs are
// too few to keep the threads busy.
template <typename T>
bool logsumexp_fused(const Tensor& out, const Tensor& in, DimMask mask) {
  using A = opmath_t<T>;
  const ReducePlan p = make_reduce_plan(in, out, mask);
  const int nt = reduce_threads(in.numel());
  const T* ip = in.data<T>();
  T* op = out.data<T>();
  const int64_t R0 = p.red_sizes[0];
  if (!p.vec_mode) {
    if (p.num_outputs < nt) return false;
    for_each_output(p, nt, [&](int64_t in_off, int64_t out_off) {
      const T* base = ip + in_off;
      const A shift = finite_or_zero(detail::reduce_inner(ExtremeOp<T, true>{}, base, p, 0, R0));
      const A s = detail::reduce_inner(ExpSumOp<T>{shift}, base, p, 0, R0);
      op[out_off] = static_cast<T>(std::log(s) + shift);
    });
    return true;
  }
  constexpr int64_t TW = detail::kTileBytes / static_cast<int64_t>(sizeof(A));
  const int64_t tw = tile_width(p, nt, TW);
  if (p.num_outputs * ((p.vec_size + tw - 1) / tw) < nt) return false;
  for_each_tile(p, nt, tw, [&](int64_t in_off, int64_t out_off, int64_t w) {
    alignas(64) A shift[TW];
    alignas(64) A s[TW];
    detail::reduce_tile(ExtremeOp<T, true>{}, ip + in_off, w, p, 0, R0, shift);
    for (int64_t j = 0; j < w; ++j) shift[j] = finite_or_zero(shift[j]);
    detail::reduce_tile(ExpSumLaneOp<T>{shift}, ip + in_off, w, p, 0, R0, s);
    for (int64_t j = 0; j < w; ++j)
      op[out_off + j * p.vec_out] = static_cast<T>(std::log(s[j]) + shift[j]);
  });
  return true;
}
}  // namespace

void logsumexp_out(const Tensor& out, const Tensor& in_any, DimMask mask) {
  if (out.numel() == 0) return;
  if (reduced_count(in_any, mask) == 0) {
    IGNIS_DISPATCH_FLOAT(out.dtype(), "logsumexp", [&] {
      fill_value<scalar_t>(out, static_cast<scalar_t>(-std::numeric_limits<float>::infinity()));
    });
    return;
  }
  const Tensor in = in_any.dtype() == out.dtype() ? in_any : to_dtype_copy(in_any, out.dtype());
  bool done = false;
  IGNIS_DISPATCH_FLOAT(in.dtype(), "logsumexp",
                       [&] { done = logsumexp_fused<scalar_t>(out, in, mask); });
  if (done) return;
  // Otherwise (few outputs) three passes over temporaries: m, exp(x - m),
  // their sums, each split over the threads.
  const ScalarType acc = in.dtype() == ScalarType::Float64 ? ScalarType::Float64
                                                           : ScalarType::Float32;
  const DimVector ks = keep_shape(in, mask);
  Tensor m = empty_tensor(ks, acc, in.device());
  Tensor s = empty_tensor(ks, acc, in.device());
  IGNIS_DISPATCH_FLOAT(in.dtype(), "logsumexp", [&] {
    reduce(m, in, mask, ExtremeOp<scalar_t, true, opmath_t<scalar_t>>{});
  });
  // e = exp(x - m'), m' = m where finite else 0 (all -inf rows give log(0)).
  TensorIterator ex;
  ex.add_output(Tensor());
  ex.add_input(in);
  ex.add_input(m);
  IterConfig cfg;
  cfg.op_name = "logsumexp";
  cfg.common_dtype = acc;
  ex.build(cfg, in.device());
  TensorIterator fin;
  fin.add_output(reshaped(out, ks));
  fin.add_input(s);
  fin.add_input(m);
  IterConfig fcfg = cfg;
  fcfg.output_dtype = out.dtype();
  fin.build(fcfg, in.device());
  IGNIS_DISPATCH_SWITCH(acc, "logsumexp",
                        IGNIS_DTYPE_CASE(float, Float32, [&] {
                          using A = scalar_t;
                          cpu_kernel<A, A>(ex, [](A x, A mu) {
                            return exp_fast(x - finite_or_zero(mu));
                          });
                          reduce(s, ex.output(), mask, SumOp<A>{});
                          IGNIS_DISPATCH_FLOAT(out.dtype(), "logsumexp", [&] {
                            cpu_kernel<scalar_t, A>(fin, [](A sum, A mu) {
                              return std::log(sum) + finite_or_zero(mu);
                            });
                          });
                        })
                        IGNIS_DTYPE_CASE(double, Float64, [&] {
                          using A = scalar_t;
                          cpu_kernel<A, A>(ex, [](A x, A mu) {
                            return std::exp(x - finite_or_zero(mu));
                          });
                          reduce(s, ex.output(), mask, SumOp<A>{});
                          cpu_kernel<A, A>(fin, [](A sum, A mu) {
                            return std::log(sum) + finite_or_zero(mu);
                          });
                        }));
}

// ---------------------------------------------------------------------------
// argmax / argmin / max.dim / min.dim
// ---------------------------------------------------------------------------
namespace {

// `cand` replaces `best` (found earlier): strictly more extreme, or the
// first NaN.
template <bool IsMax, typename A>
inline bool better(A cand, A best) {
  return (IsMax ? cand > best : cand < best) || (cand != cand && best == best);
}

// First index of the extreme of n elements at stride s: one vectorised pass
// for the extreme value, then a scan for its first occurrence.
template <typename T, bool IsMax>
int64_t arg_run(const T* p, int64_t n, int64_t s, opmath_t<T>* best) {
  using A = opmath_t<T>;
  const A m = detail::reduce_run(ExtremeOp<T, IsMax>{}, p, n, s);
  int64_t i = 0;
  if (m != m) {
    while (i < n - 1 && widen(p[i * s]) == widen(p[i * s])) ++i;
  } else {
    while (i < n - 1 && widen(p[i * s]) != m) ++i;
  }
  *best = m;
  return i;
}

template <typename T, bool IsMax>
void arg_reduce_typed(const Tensor& values, const Tensor& indices, const Tensor& in,
                      int64_t dim) {
  using A = opmath_t<T>;
  Tensor src = in, idx = indices, val = values;
  DimMask mask;
  if (dim < 0) {  // over the flattened input, in row-major order
    src = contiguous_copy(in);
    src = make_view(src, {src.numel()}, {1}, src.storage_offset());
    idx = make_view(indices, {}, {}, indices.storage_offset());
    mask = 1;
  } else {
    mask = DimMask(1) << dim;
  }
  if (idx.numel() == 0 || src.numel() == 0) return;
  const ReducePlan p = make_reduce_plan(src, idx, mask);
  const T* ip = src.data<T>();
  int64_t* xp = idx.data<int64_t>();
  T* vp = val.defined() ? val.data<T>() : nullptr;
  const int nt = reduce_threads(src.numel());
  const int64_t n = p.red_sizes[0], s = p.red_in[0], O = p.num_outputs;

  if (!p.vec_mode) {
    if (nt > 1 && O < 4 * nt && n >= 4 * nt) {
      // Few long rows: threads scan slices; the first slice wins ties.
      std::unique_ptr<A[]> pb(new A[nt * O]);
      std::unique_ptr<int64_t[]> pi(new int64_t[nt * O]);
#pragma omp parallel num_threads(nt)
      {
        int t = omp_get_thread_num();
        int64_t b, e;
        detail::split_range(n, nt, t, &b, &e);
        NdCounter c(p.keep_sizes, p.keep_in);
        for (int64_t o = 0; o < O; ++o, c.next())
          pi[t * O + o] = b + arg_run<T, IsMax>(ip + c.off0 + b * s, e - b, s, &pb[t * O + o]);
      }
      NdCounter c(p.keep_sizes, p.keep_in, &p.keep_out);
      for (int64_t o = 0; o < O; ++o, c.next()) {
        int64_t bi = pi[o];
        A bv = pb[o];
        for (int t = 1; t < nt; ++t) {
          if (better<IsMax>(pb[t * O + o], bv)) {
            bv = pb[t * O + o];
            bi = pi[t * O + o];
          }
        }
        xp[c.off1] = bi;
        if (vp) vp[c.off1] = ip[c.off0 + bi * s];
      }
      return;
    }
    for_each_output(p, nt, [&](int64_t in_off, int64_t out_off) {
      A bv;
      int64_t i = arg_run<T, IsMax>(ip + in_off, n, s, &bv);
      xp[out_off] = i;
      if (vp) vp[out_off] = ip[in_off + i * s];
    });
    return;
  }

  // Vector mode: whole row segments compared against running extremes.
  constexpr int64_t TW = 1024;
  const int64_t vs = p.vec_in;
  for_each_tile(p, nt, tile_width(p, nt, TW), [&](int64_t in_off, int64_t out_off, int64_t w) {
    alignas(64) A best[TW];
    alignas(64) int64_t bidx[TW];
    const T* base = ip + in_off;
    for (int64_t j = 0; j < w; ++j) {
      best[j] = widen(base[j * vs]);
      bidx[j] = 0;
    }
    for (int64_t r = 1; r < n; ++r) {
      const T* row = base + r * s;
      for (int64_t j = 0; j < w; ++j) {
        A v = widen(row[j * vs]);
        bool take = better<IsMax>(v, best[j]);
        best[j] = take ? v : best[j];
        bidx[j] = take ? r : bidx[j];
      }
    }
    for (int64_t j = 0; j < w; ++j) {
      xp[out_off + j * p.vec_out] = bidx[j];
      if (vp) vp[out_off + j * p.vec_out] = static_cast<T>(best[j]);
    }
  });
}

}  // namespace

void arg_reduce_out(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                    bool is_max) {
  IGNIS_DISPATCH_ALL(in.dtype(), is_max ? "argmax" : "argmin", [&] {
    if (is_max) arg_reduce_typed<scalar_t, true>(values, indices, in, dim);
    else arg_reduce_typed<scalar_t, false>(values, indices, in, dim);
  });
}

// ---------------------------------------------------------------------------
// Scans
// ---------------------------------------------------------------------------
namespace {

// Scans accumulate like PyTorch's CPU scans: float in double, 16-bit
// floats in float, integers and bool in int64.
template <typename T>
using scan_acc_t = std::conditional_t<std::is_same_v<T, float>, double, sum_acc_t<T>>;

template <typename T, bool IsProd>
void scan_typed(const Tensor& out, const Tensor& in, int64_t dim) {
  using A = scan_acc_t<T>;
  using O = sum_out_t<T>;
  const Tensor src = contiguous_copy(in);
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < src.dim(); ++d) {
    if (d < dim) outer *= src.sizes()[d];
    else if (d == dim) n = src.sizes()[d];
    else inner *= src.sizes()[d];
  }
  if (src.numel() == 0) return;
  const T* ip = src.data<T>();
  O* op = out.data<O>();
  const int nt = reduce_threads(src.numel());
  auto f = [](A a, A b) { return IsProd ? mul(a, b) : add(a, b); };
  const A init = IsProd ? A(1) : A(0);
  if (inner == 1) {
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      const T* x = ip + o * n;
      O* y = op + o * n;
      A acc = init;
      for (int64_t i = 0; i < n; ++i) {
        acc = f(acc, static_cast<A>(widen(x[i])));
        y[i] = narrow<O>(acc);
      }
    }
    return;
  }
  constexpr int64_t TW = 1024;
  const int64_t tiles = (inner + TW - 1) / TW;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t it = 0; it < outer * tiles; ++it) {
    alignas(64) A acc[TW];
    const int64_t o = it / tiles, j0 = (it % tiles) * TW, w = std::min(TW, inner - j0);
    for (int64_t j = 0; j < w; ++j) acc[j] = init;
    for (int64_t r = 0; r < n; ++r) {
      const T* __restrict x = ip + (o * n + r) * inner + j0;
      O* __restrict y = op + (o * n + r) * inner + j0;
      for (int64_t j = 0; j < w; ++j) {
        acc[j] = f(acc[j], static_cast<A>(widen(x[j])));
        y[j] = narrow<O>(acc[j]);
      }
    }
  }
}

template <bool IsProd>
void scan_out(const Tensor& out, const Tensor& in, int64_t dim, const char* name) {
  adapt(out, in, sum_natural, [&](const Tensor& dst, const Tensor& src) {
    IGNIS_INTERNAL_ASSERT(dst.is_contiguous());
    IGNIS_DISPATCH_ALL(src.dtype(), name, [&] { scan_typed<scalar_t, IsProd>(dst, src, dim); });
  });
}

}  // namespace

void cumsum_out(const Tensor& out, const Tensor& in, int64_t dim) {
  scan_out<false>(out, in, dim, "cumsum");
}
void cumprod_out(const Tensor& out, const Tensor& in, int64_t dim) {
  scan_out<true>(out, in, dim, "cumprod");
}

}  // namespace ignis::cpu

#include "ignis/kernels/cpu/loss.h"

#include <omp.h>

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ignis/kernels/cpu/nn_util.h"
#include "ignis/kernels/cpu/vec_math.h"

namespace ignis::cpu {

namespace {

// Per-thread partial sums, added in thread order so that a result only
// depends on the thread count.
struct Partials {
  static constexpr int kSlots = 3;
  std::vector<double> v;
  explicit Partials(int threads) : v(static_cast<size_t>(threads) * kSlots, 0.0) {}
  // The calling thread's slots (parallel_rows gives each thread one range).
  double* slot() {
    size_t t = omp_in_parallel() ? static_cast<size_t>(omp_get_thread_num()) : 0;
    if ((t + 1) * kSlots > v.size()) t = 0;
    return v.data() + t * kSlots;
  }
  double total(int s) const {
    double acc = 0;
    for (size_t i = s; i < v.size(); i += kSlots) acc += v[i];
    return acc;
  }
};

// log(sum_c exp(x_c)) over C values at stride st, stably.
template <typename T>
opmath_t<T> logsumexp(const T* x, int64_t C, int64_t st) {
  using A = opmath_t<T>;
  A m = -std::numeric_limits<A>::infinity();
  if (st == 1) {  // vectorised, as the sum below (NaN is skipped either way)
#pragma omp simd reduction(max : m)
    for (int64_t c = 0; c < C; ++c) {
      A v = static_cast<A>(x[c]);
      m = v > m ? v : m;
    }
  } else {
    for (int64_t c = 0; c < C; ++c) {
      A v = static_cast<A>(x[c * st]);
      m = v > m ? v : m;
    }
  }
  if (std::isinf(m)) return m;
  A s = A(0);
  if (st == 1) {
#pragma omp simd reduction(+ : s)
    for (int64_t c = 0; c < C; ++c) s += vexp(static_cast<A>(x[c]) - m);
  } else {
    for (int64_t c = 0; c < C; ++c) s += vexp(static_cast<A>(x[c * st]) - m);
  }
  return m + std::log(s);
}

template <typename T, typename I>
void class_loss_typed(const Tensor& out, const Tensor& input, const Tensor& target,
                      const Tensor& weight, Reduction red, int64_t ignore_index, bool logits,
                      double eps, int64_t N, int64_t C, int64_t inner) {
  using A = opmath_t<T>;
  const T* x = input.data<T>();
  const I* tg = target.data<I>();
  const T* w = weight.defined() ? weight.data<T>() : nullptr;
  T* o = out.data<T>();
  const int64_t positions = N * inner;
  double wsum_all = 0;  // sum of all class weights, for label smoothing
  if (w) for (int64_t c = 0; c < C; ++c) wsum_all += static_cast<double>(static_cast<A>(w[c]));
  Partials part(omp_get_max_threads());
  parallel_rows(positions, C, [&](int64_t p0, int64_t p1) {
    double* acc = part.slot();
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / inner, j = p % inner;
      const int64_t t = static_cast<int64_t>(tg[p]);
      if (t == ignore_index) {
        if (red == Reduction::None) o[p] = T(0);
        continue;
      }
      const T* xp = x + n * C * inner + j;
      const double lse = logits ? static_cast<double>(logsumexp(xp, C, inner)) : 0.0;
      const double wt = w ? static_cast<double>(static_cast<A>(w[t])) : 1.0;
      const double nll = -wt * (static_cast<double>(static_cast<A>(xp[t * inner])) - lse);
      double smooth = 0;
      if (eps > 0) {
        // -sum_c w_c * (x_c - lse)
        double sx = 0;
        for (int64_t c = 0; c < C; ++c)
          sx += (w ? static_cast<double>(static_cast<A>(w[c])) : 1.0) *
                static_cast<double>(static_cast<A>(xp[c * inner]));
        smooth = -(sx - lse * (w ? wsum_all : static_cast<double>(C)));
      }
      if (red == Reduction::None) {
        o[p] = static_cast<T>((1 - eps) * nll + eps / C * smooth);
      } else {
        acc[0] += nll;
        acc[1] += smooth;
        acc[2] += wt;
      }
    }
  });
  if (red == Reduction::None) return;
  double nll = part.total(0), smooth = part.total(1), wsum = part.total(2);
  double r = (1 - eps) * nll + (eps > 0 ? eps / C * smooth : 0.0);
  if (red == Reduction::Mean) r /= wsum;
  *o = static_cast<T>(r);
}

template <typename T>
void prob_ce_typed(const Tensor& out, const Tensor& input, const Tensor& target,
                   const Tensor& weight, Reduction red, double eps, int64_t N, int64_t C,
                   int64_t inner) {
  using A = opmath_t<T>;
  const T* x = input.data<T>();
  const T* tg = target.data<T>();
  const T* w = weight.defined() ? weight.data<T>() : nullptr;
  T* o = out.data<T>();
  const int64_t positions = N * inner;
  Partials part(omp_get_max_threads());
  parallel_rows(positions, C, [&](int64_t p0, int64_t p1) {
    double* acc = part.slot();
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / inner, j = p % inner;
      const int64_t base = n * C * inner + j;
      const double lse = static_cast<double>(logsumexp(x + base, C, inner));
      double l = 0;
      for (int64_t c = 0; c < C; ++c) {
        const int64_t i = base + c * inner;
        double q = static_cast<double>(static_cast<A>(tg[i])) * (1 - eps) + eps / C;
        double wc = w ? static_cast<double>(static_cast<A>(w[c])) : 1.0;
        l -= wc * q * (static_cast<double>(static_cast<A>(x[i])) - lse);
      }
      if (red == Reduction::None) o[p] = static_cast<T>(l);
      else acc[0] += l;
    }
  });
  if (red == Reduction::None) return;
  double r = part.total(0);
  if (red == Reduction::Mean)
    r = positions == 0 ? std::numeric_limits<double>::quiet_NaN() : r / positions;
  *o = static_cast<T>(r);
}

// The loss of one element (x: input, y: target, pw: pos_weight).
template <PointLoss K>
inline double point_loss(double x, double y, double param, double pw) {
  const double d = x - y, a = std::abs(d);
  if constexpr (K == PointLoss::MSE) {
    return d * d;
  } else if constexpr (K == PointLoss::L1) {
    return a;
  } else if constexpr (K == PointLoss::SmoothL1) {
    return param == 0 ? a : (a < param ? 0.5 * d * d / param : a - 0.5 * param);
  } else if constexpr (K == PointLoss::Huber) {
    return a < param ? 0.5 * d * d : param * (a - 0.5 * param);
  } else if constexpr (K == PointLoss::BCE) {
    return -(y * std::max(std::log(x), -100.0) + (1 - y) * std::max(std::log1p(-x), -100.0));
  } else if constexpr (K == PointLoss::BCEWithLogits) {
    // (1 - y) x + (1 + (pw - 1) y) * log(1 + exp(-x)), without overflow
    const double sp = std::log1p(std::exp(-std::abs(x))) + std::max(-x, 0.0);
    return (1 - y) * x + (1 + (pw - 1) * y) * sp;
  } else if constexpr (K == PointLoss::KLDiv) {
    return (y == 0 ? 0.0 : y * std::log(y)) - y * x;
  } else {
    return std::exp(y) * (y - x);
  }
}

template <typename T, PointLoss K>
void pointwise_typed(const Tensor& out, const Tensor& input, const Tensor& target,
                     const Tensor& weight, const Tensor& pos_weight, double param, Reduction red,
                     double mean_count) {
  using A = opmath_t<T>;
  const T* x = input.data<T>();
  const T* y = target.data<T>();
  const T* w = weight.defined() ? weight.data<T>() : nullptr;
  const T* pw = pos_weight.defined() ? pos_weight.data<T>() : nullptr;
  T* o = out.data<T>();
  const int64_t n = input.numel();
  auto loss = [&](int64_t i) {
    const double l = point_loss<K>(static_cast<double>(static_cast<A>(x[i])),
                                   static_cast<double>(static_cast<A>(y[i])), param,
                                   pw ? static_cast<double>(static_cast<A>(pw[i])) : 1.0);
    return w ? l * static_cast<double>(static_cast<A>(w[i])) : l;
  };
  if (red == Reduction::None) {
    parallel_rows(n, 4, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) o[i] = static_cast<T>(loss(i));
    });
    return;
  }
  Partials part(omp_get_max_threads());
  parallel_rows(n, 4, [&](int64_t i0, int64_t i1) {
    double* acc = part.slot();
    double s = 0, ws = 0;
    for (int64_t i = i0; i < i1; ++i) {
      s += loss(i);
      if (w) ws += static_cast<double>(static_cast<A>(w[i]));
    }
    acc[0] += s;
    acc[1] += ws;
  });
  double r = part.total(0);
  if (red == Reduction::Mean) r /= mean_count < 0 ? part.total(1) / -mean_count : mean_count;
  *o = static_cast<T>(r);
}

}  // namespace

void class_loss_into(const Tensor& out, const Tensor& input, const Tensor& target,
                     const Tensor& weight, Reduction red, int64_t ignore_index, bool logits,
                     double label_smoothing, int64_t N, int64_t C, int64_t inner) {
  if (out.device().is_meta()) return;
  IGNIS_DISPATCH_FLOAT(input.dtype(), logits ? "cross_entropy" : "nll_loss", [&] {
    if (target.dtype() == ScalarType::UInt8)
      class_loss_typed<scalar_t, uint8_t>(out, input, target, weight, red, ignore_index, logits,
                                          label_smoothing, N, C, inner);
    else
      class_loss_typed<scalar_t, int64_t>(out, input, target, weight, red, ignore_index, logits,
                                          label_smoothing, N, C, inner);
  });
}

void prob_cross_entropy_into(const Tensor& out, const Tensor& input, const Tensor& target,
                             const Tensor& weight, Reduction red, double label_smoothing,
                             int64_t N, int64_t C, int64_t inner) {
  if (out.device().is_meta()) return;
  IGNIS_DISPATCH_FLOAT(input.dtype(), "cross_entropy", [&] {
    prob_ce_typed<scalar_t>(out, input, target, weight, red, label_smoothing, N, C, inner);
  });
}

void pointwise_loss_into(const Tensor& out, const Tensor& input, const Tensor& target,
                         const Tensor& weight, const Tensor& pos_weight, PointLoss kind,
                         double param, Reduction red, double mean_count) {
  if (out.device().is_meta()) return;
  IGNIS_DISPATCH_FLOAT(input.dtype(), "loss", [&] {
    auto run = [&](auto k) {
      pointwise_typed<scalar_t, decltype(k)::value>(out, input, target, weight, pos_weight, param,
                                                    red, mean_count);
    };
    using P = PointLoss;
    switch (kind) {
      case P::MSE: run(std::integral_constant<P, P::MSE>()); break;
      case P::L1: run(std::integral_constant<P, P::L1>()); break;
      case P::SmoothL1: run(std::integral_constant<P, P::SmoothL1>()); break;
      case P::Huber: run(std::integral_constant<P, P::Huber>()); break;
      case P::BCE: run(std::integral_constant<P, P::BCE>()); break;
      case P::BCEWithLogits: run(std::integral_constant<P, P::BCEWithLogits>()); break;
      case P::KLDiv: run(std::integral_constant<P, P::KLDiv>()); break;
      case P::KLDivLogTarget: run(std::integral_constant<P, P::KLDivLogTarget>()); break;
    }
  });
}

}  // namespace ignis::cpu

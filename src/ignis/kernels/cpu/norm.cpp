#include "ignis/kernels/cpu/norm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ignis/kernels/cpu/nn_util.h"

namespace ignis::cpu {

namespace {

// y = (x * scale + shift) * w + b over one row; w and b may be null.
template <typename A>
inline void affine_row(const A* __restrict x, A* __restrict y, int64_t n, A scale, A shift,
                       const A* __restrict w, const A* __restrict b) {
  if (w && b) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale + shift) * w[i] + b[i];
  } else if (w) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale + shift) * w[i];
  } else if (b) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale + shift) + b[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale + shift;
  }
}

template <typename T>
const opmath_t<T>* opt_data(const Tensor& t) {
  return t.defined() ? t.data<opmath_t<T>>() : nullptr;
}

// layer_norm (centre: the mean, then the centred variance) or rms_norm over
// rows split by RowChunks (Note [Few long rows], nn_util.h); mean_p and
// rstd_p may be null.
template <typename T>
void norm_few_rows(const T* src, T* dst, const RowChunks& rc, bool centre, double eps,
                   const opmath_t<T>* w, const opmath_t<T>* b, T* mean_p, T* rstd_p) {
  using A = opmath_t<T>;
  const int64_t n = rc.n;
  std::vector<A> part(size_t(rc.items)), mu(size_t(rc.rows), A(0)), rs(size_t(rc.rows));
  const auto add = [](A a, A v) { return a + v; };
#pragma omp parallel num_threads(rc.threads())
  {
    std::vector<A> ibuf, obuf;
    if (centre) {
#pragma omp for schedule(static)
      for (int64_t it = 0; it < rc.items; ++it) {
        const int64_t len = rc.length(it);
        const A* x = RowIn<T>::get(src + rc.row(it) * n + rc.begin(it), len, ibuf);
        A s = A(0);
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < len; ++i) s += x[i];
        part[it] = s;
      }
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rc.rows; ++r) mu[r] = rc.fold(part, r, A(0), add) / A(n);
    }
#pragma omp for schedule(static)
    for (int64_t it = 0; it < rc.items; ++it) {
      const int64_t r = rc.row(it), len = rc.length(it);
      const A* x = RowIn<T>::get(src + r * n + rc.begin(it), len, ibuf);
      const A m = mu[r];
      A v = A(0);
#pragma omp simd reduction(+ : v)
      for (int64_t i = 0; i < len; ++i) v += (x[i] - m) * (x[i] - m);
      part[it] = v;
    }
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rc.rows; ++r) {
      rs[r] = A(1) / std::sqrt(rc.fold(part, r, A(0), add) / A(n) + A(eps));
      if (mean_p) mean_p[r] = static_cast<T>(mu[r]);
      if (rstd_p) rstd_p[r] = static_cast<T>(rs[r]);
    }
#pragma omp for schedule(static)
    for (int64_t it = 0; it < rc.items; ++it) {
      const int64_t r = rc.row(it), c0 = rc.begin(it), len = rc.length(it);
      const A* x = RowIn<T>::get(src + r * n + c0, len, ibuf);
      RowOut<T> y(dst + r * n + c0, len, obuf);
      affine_row<A>(x, y.p, len, rs[r], -mu[r] * rs[r], w ? w + c0 : nullptr,
                    b ? b + c0 : nullptr);
      y.flush();
    }
  }
}

template <typename T>
void layer_norm_typed(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& in,
                      const Tensor& weight, const Tensor& bias, int64_t n, double eps) {
  using A = opmath_t<T>;
  const int64_t rows = n == 0 ? 0 : in.numel() / n;
  const A* w = opt_data<T>(weight);
  const A* b = opt_data<T>(bias);
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  T* mean_p = mean.data<T>();
  T* rstd_p = rstd.data<T>();
  if (RowChunks::apply(rows, n))
    return norm_few_rows<T>(src, dst, RowChunks(rows, n), true, eps, w, b, mean_p, rstd_p);
  parallel_rows(rows, n, [&](int64_t r0, int64_t r1) {
    std::vector<A> ibuf, obuf;
    for (int64_t r = r0; r < r1; ++r) {
      const A* x = RowIn<T>::get(src + r * n, n, ibuf);
      A s = A(0);
#pragma omp simd reduction(+ : s)
      for (int64_t i = 0; i < n; ++i) s += x[i];
      const A mu = s / A(n);
      A v = A(0);
#pragma omp simd reduction(+ : v)
      for (int64_t i = 0; i < n; ++i) v += (x[i] - mu) * (x[i] - mu);
      const A rs = A(1) / std::sqrt(v / A(n) + A(eps));
      RowOut<T> y(dst + r * n, n, obuf);
      affine_row<A>(x, y.p, n, rs, -mu * rs, w, b);
      y.flush();
      mean_p[r] = static_cast<T>(mu);
      rstd_p[r] = static_cast<T>(rs);
    }
  });
}

template <typename T>
void rms_norm_typed(const Tensor& out, const Tensor& in, const Tensor& weight, int64_t n,
                    double eps) {
  using A = opmath_t<T>;
  const int64_t rows = n == 0 ? 0 : in.numel() / n;
  const A* w = opt_data<T>(weight);
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  if (RowChunks::apply(rows, n))
    return norm_few_rows<T>(src, dst, RowChunks(rows, n), false, eps, w, nullptr, nullptr, nullptr);
  parallel_rows(rows, n, [&](int64_t r0, int64_t r1) {
    std::vector<A> ibuf, obuf;
    for (int64_t r = r0; r < r1; ++r) {
      const A* x = RowIn<T>::get(src + r * n, n, ibuf);
      A ss = A(0);
#pragma omp simd reduction(+ : ss)
      for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
      const A rs = A(1) / std::sqrt(ss / A(n) + A(eps));
      RowOut<T> y(dst + r * n, n, obuf);
      affine_row<A>(x, y.p, n, rs, A(0), w, nullptr);
      y.flush();
    }
  });
}

// ||x||_p of n values at stride `st`, in double.
template <typename T>
double pnorm(const T* x, int64_t n, int64_t st, double p) {
  double acc = 0;
  if (p == 2) {
    for (int64_t i = 0; i < n; ++i) {
      double v = static_cast<double>(static_cast<opmath_t<T>>(x[i * st]));
      acc += v * v;
    }
    return std::sqrt(acc);
  }
  if (std::isinf(p)) {
    acc = p > 0 ? 0.0 : std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      double v = std::abs(static_cast<double>(static_cast<opmath_t<T>>(x[i * st])));
      acc = p > 0 ? std::max(acc, v) : std::min(acc, v);
    }
    return n == 0 && p < 0 ? 0.0 : acc;
  }
  for (int64_t i = 0; i < n; ++i) {
    double v = std::abs(static_cast<double>(static_cast<opmath_t<T>>(x[i * st])));
    acc += p == 0 ? (v != 0) : p == 1 ? v : std::pow(v, p);
  }
  return p == 0 || p == 1 ? acc : std::pow(acc, 1.0 / p);
}

template <typename T>
void normalize_typed(const Tensor& out, const Tensor& in, double p, int64_t dim, double eps) {
  using A = opmath_t<T>;
  const DimVector& sz = in.sizes();
  int64_t outer = 1, inner = 1, n = in.dim() == 0 ? 1 : sz[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= sz[d];
  for (int64_t d = dim + 1; d < in.dim(); ++d) inner *= sz[d];
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  parallel_rows(outer * inner, n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t base = (t / inner) * n * inner + t % inner;
      const A inv = A(1) / static_cast<A>(std::max(pnorm(src + base, n, inner, p), eps));
      for (int64_t i = 0; i < n; ++i)
        dst[base + i * inner] = static_cast<T>(static_cast<A>(src[base + i * inner]) * inv);
    }
  });
}

template <typename T>
void cosine_typed(const Tensor& out, const Tensor& a, const Tensor& b, int64_t dim, double eps) {
  using A = opmath_t<T>;
  const DimVector& sz = a.sizes();
  int64_t inner = 1, n = a.dim() == 0 ? 1 : sz[dim];
  for (int64_t d = dim + 1; d < a.dim(); ++d) inner *= sz[d];
  const T* x = a.data<T>();
  const T* y = b.data<T>();
  T* o = out.data<T>();
  parallel_rows(out.numel(), n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t base = (t / inner) * n * inner + t % inner;
      double sxy = 0, sxx = 0, syy = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double u = static_cast<double>(static_cast<A>(x[base + i * inner]));
        const double v = static_cast<double>(static_cast<A>(y[base + i * inner]));
        sxy += u * v;
        sxx += u * u;
        syy += v * v;
      }
      o[t] = static_cast<T>(sxy / (std::max(std::sqrt(sxx), eps) * std::max(std::sqrt(syy), eps)));
    }
  });
}

}  // namespace

void layer_norm_into(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& in,
                     const Tensor& weight, const Tensor& bias, int64_t n, double eps) {
  if (in.numel() == 0 || out.device().is_meta()) return;
  IGNIS_DISPATCH_FLOAT(in.dtype(), "LayerNormKernelImpl", [&] {
    layer_norm_typed<scalar_t>(out, mean, rstd, in, weight, bias, n, eps);
  });
}

void rms_norm_into(const Tensor& out, const Tensor& in, const Tensor& weight, int64_t n,
                   double eps) {
  if (in.numel() == 0 || out.device().is_meta()) return;
  IGNIS_DISPATCH_FLOAT(in.dtype(), "rms_norm", [&] {
    rms_norm_typed<scalar_t>(out, in, weight, n, eps);
  });
}

void normalize_into(const Tensor& out, const Tensor& in, double p, int64_t dim, double eps) {
  if (in.numel() == 0 || out.device().is_meta()) return;
  IGNIS_DISPATCH_FLOAT(in.dtype(), "normalize", [&] {
    normalize_typed<scalar_t>(out, in, p, dim, eps);
  });
}

void cosine_similarity_into(const Tensor& out, const Tensor& a, const Tensor& b, int64_t dim,
                            double eps) {
  if (out.numel() == 0 || out.device().is_meta()) return;
  IGNIS_DISPATCH_FLOAT(a.dtype(), "cosine_similarity", [&] {
    cosine_typed<scalar_t>(out, a, b, dim, eps);
  });
}

}  // namespace ignis::cpu

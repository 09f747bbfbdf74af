#include "ignis/kernels/cpu/batch_norm.h"

#include <cmath>

#include "ignis/core/error.h"
#include "ignis/kernels/cpu/nn_util.h"

namespace ignis::cpu {

namespace {

template <typename Fn>
void float_or_double(ScalarType t, const char* name, Fn f) {
  if (t == ScalarType::Float32) return f(float());
  if (t == ScalarType::Float64) return f(double());
  IGNIS_FAIL_KIND(NotImplemented, "\"", name, "\" not implemented for '", scalar_type_name(t),
                  "'");
}

template <typename T>
const T* ptr(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// Note [Batch norm's sums in lanes]
// A channel's statistics sum N * L values in double. One running sum is a
// chain of dependent additions (4 cycles each: 3 ms for a [64, 16, 28, 28]
// batch's two passes); kLanes independent sums, combined at the end, let
// the compiler vectorise the loop. The order of the additions changes, not
// their precision: the sums stay double, so the float statistics round the
// same but for ties at the last double bit.
constexpr int kLanes = 8;

// sum over the rows of channel c of f(i) (i indexes x's storage), in lanes.
template <typename F>
double lane_sum(int64_t n, int64_t c, int64_t C, int64_t L, F f) {
  double acc[kLanes] = {};
  for (int64_t b = 0; b < n; ++b) {
    const int64_t base = (b * C + c) * L;
    int64_t l = 0;
    for (; l + kLanes <= L; l += kLanes)
      for (int k = 0; k < kLanes; ++k) acc[k] += f(base + l + k);
    for (; l < L; ++l) acc[l % kLanes] += f(base + l);
  }
  double s = 0;
  for (double a : acc) s += a;
  return s;
}

// N, C and L (the product of the spatial sizes) of a [N, C, *] tensor.
struct NCL {
  int64_t n, c, l;
  explicit NCL(const Tensor& t)
      : n(t.size(0)), c(t.size(1)),
        l(t.size(0) * t.size(1) ? t.numel() / (t.size(0) * t.size(1)) : 0) {}
};

template <typename T>
void forward(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd,
             const Tensor& new_mean, const Tensor& new_var, const Tensor& in, const Tensor& weight,
             const Tensor& bias, const Tensor& rm, const Tensor& rv, bool training,
             double momentum, double eps) {
  const NCL s(in);
  const T* x = in.data<T>();
  T* y = out.data<T>();
  const T *w = ptr<T>(weight), *b = ptr<T>(bias), *rmp = ptr<T>(rm), *rvp = ptr<T>(rv);
  T* sm = save_mean.data<T>();
  T* si = save_invstd.data<T>();
  T* nm = new_mean.defined() ? new_mean.data<T>() : nullptr;
  T* nv = new_var.defined() ? new_var.data<T>() : nullptr;
  const int64_t M = s.n * s.l;
  parallel_rows(s.c, 3 * M, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double mean, invstd;
      if (training) {
        const double sum = lane_sum(s.n, c, s.c, s.l, [x](int64_t i) { return double(x[i]); });
        mean = M ? sum / double(M) : 0.0;
        const double sq = lane_sum(s.n, c, s.c, s.l, [x, mean](int64_t i) {
          const double d = double(x[i]) - mean;
          return d * d;
        });
        const double var = M ? sq / double(M) : 0.0;
        invstd = 1.0 / std::sqrt(var + eps);
        if (nm) nm[c] = static_cast<T>((1 - momentum) * double(rmp[c]) + momentum * mean);
        if (nv) {
          const double unbiased = M > 1 ? sq / double(M - 1) : var;
          nv[c] = static_cast<T>((1 - momentum) * double(rvp[c]) + momentum * unbiased);
        }
      } else {
        mean = double(rmp[c]);
        invstd = 1.0 / std::sqrt(double(rvp[c]) + eps);
      }
      sm[c] = static_cast<T>(mean);
      si[c] = static_cast<T>(invstd);
      // y = x * scale + shift
      const T scale = static_cast<T>(invstd * (w ? double(w[c]) : 1.0));
      const T shift = static_cast<T>((b ? double(b[c]) : 0.0) - mean * double(scale));
      for (int64_t n = 0; n < s.n; ++n) {
        const T* r = x + (n * s.c + c) * s.l;
        T* o = y + (n * s.c + c) * s.l;
        for (int64_t l = 0; l < s.l; ++l) o[l] = r[l] * scale + shift;
      }
    }
  });
}

template <typename T>
void backward(const Tensor& gi, const Tensor& gw, const Tensor& gb, const Tensor& go,
              const Tensor& in, const Tensor& weight, const Tensor& rm, const Tensor& rv,
              const Tensor& save_mean, const Tensor& save_invstd, bool training, double eps) {
  const NCL s(in);
  const T* x = in.data<T>();
  const T* g = go.data<T>();
  const T* w = ptr<T>(weight);
  T* dx = gi.defined() ? gi.data<T>() : nullptr;
  T* dw = gw.defined() ? gw.data<T>() : nullptr;
  T* db = gb.defined() ? gb.data<T>() : nullptr;
  const int64_t M = s.n * s.l;
  parallel_rows(s.c, 3 * M, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const bool saved = save_mean.defined();
      const double mean = saved ? double(save_mean.data<T>()[c]) : double(rm.data<T>()[c]);
      const double invstd = saved ? double(save_invstd.data<T>()[c])
                                  : 1.0 / std::sqrt(double(rv.data<T>()[c]) + eps);
      // sum(g), sum(g * (x - mean))
      const double sum_g = lane_sum(s.n, c, s.c, s.l, [g](int64_t i) { return double(g[i]); });
      const double sum_gx = lane_sum(s.n, c, s.c, s.l, [g, x, mean](int64_t i) {
        return double(g[i]) * (double(x[i]) - mean);
      });
      if (db) db[c] = static_cast<T>(sum_g);
      if (dw) dw[c] = static_cast<T>(sum_gx * invstd);
      if (!dx) continue;
      const double wc = w ? double(w[c]) : 1.0;
      if (training) {
        // dx = w * invstd * (g - mean(g) - xhat * mean(g * xhat))
        const double mg = M ? sum_g / double(M) : 0.0;
        const double k = M ? sum_gx * invstd * invstd / double(M) : 0.0;
        const T a = static_cast<T>(wc * invstd);
        for (int64_t n = 0; n < s.n; ++n) {
          const T* xr = x + (n * s.c + c) * s.l;
          const T* gr = g + (n * s.c + c) * s.l;
          T* o = dx + (n * s.c + c) * s.l;
          for (int64_t l = 0; l < s.l; ++l)
            o[l] = a * static_cast<T>(double(gr[l]) - mg - (double(xr[l]) - mean) * k);
        }
      } else {
        const T a = static_cast<T>(wc * invstd);
        for (int64_t n = 0; n < s.n; ++n) {
          const T* gr = g + (n * s.c + c) * s.l;
          T* o = dx + (n * s.c + c) * s.l;
          for (int64_t l = 0; l < s.l; ++l) o[l] = gr[l] * a;
        }
      }
    }
  });
}

}  // namespace

void batch_norm_into(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd,
                     const Tensor& new_mean, const Tensor& new_var, const Tensor& in,
                     const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                     const Tensor& running_var, bool training, double momentum, double eps) {
  float_or_double(in.dtype(), "batch_norm", [&](auto tag) {
    forward<decltype(tag)>(out, save_mean, save_invstd, new_mean, new_var, in, weight, bias,
                           running_mean, running_var, training, momentum, eps);
  });
}

void batch_norm_backward_into(const Tensor& grad_in, const Tensor& grad_weight,
                              const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                              const Tensor& weight, const Tensor& running_mean,
                              const Tensor& running_var, const Tensor& save_mean,
                              const Tensor& save_invstd, bool training, double eps) {
  float_or_double(in.dtype(), "batch_norm_backward", [&](auto tag) {
    backward<decltype(tag)>(grad_in, grad_weight, grad_bias, grad_out, in, weight, running_mean,
                            running_var, save_mean, save_invstd, training, eps);
  });
}

}  // namespace ignis::cpu

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
        double sum = 0;
        for (int64_t n = 0; n < s.n; ++n) {
          const T* r = x + (n * s.c + c) * s.l;
          for (int64_t l = 0; l < s.l; ++l) sum += r[l];
        }
        mean = M ? sum / double(M) : 0.0;
        double sq = 0;
        for (int64_t n = 0; n < s.n; ++n) {
          const T* r = x + (n * s.c + c) * s.l;
          for (int64_t l = 0; l < s.l; ++l) {
            const double d = double(r[l]) - mean;
            sq += d * d;
          }
        }
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
      double sum_g = 0, sum_gx = 0;  // sum(g), sum(g * (x - mean))
      for (int64_t n = 0; n < s.n; ++n) {
        const T* xr = x + (n * s.c + c) * s.l;
        const T* gr = g + (n * s.c + c) * s.l;
        for (int64_t l = 0; l < s.l; ++l) {
          sum_g += gr[l];
          sum_gx += double(gr[l]) * (double(xr[l]) - mean);
        }
      }
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

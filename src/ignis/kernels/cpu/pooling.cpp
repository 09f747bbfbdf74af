#include "ignis/kernels/cpu/pooling.h"

#include <cmath>
#include <limits>

#include "ignis/core/error.h"
#include "ignis/kernels/cpu/nn_util.h"

namespace ignis::cpu {

PoolAxis fixed_axis(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad,
                    int64_t dilation) {
  PoolAxis a;
  a.in = in;
  a.kernel = kernel;
  a.stride = stride;
  a.pad = pad;
  a.dilation = dilation;
  a.taps.resize(static_cast<size_t>(out));
  a.span.resize(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * stride - pad;
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t i = start + k * dilation;
      if (i >= 0 && i < in) a.taps[o].push_back(i);
    }
    // The padded extent the window covers (avg_pool has no dilation).
    a.span[o] = std::min(start + kernel, in + pad) - start;
  }
  return a;
}

PoolAxis adaptive_axis(int64_t in, int64_t out) {
  PoolAxis a;
  a.in = in;
  a.taps.resize(static_cast<size_t>(out));
  a.span.resize(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
    for (int64_t i = start; i < end; ++i) a.taps[o].push_back(i);
    a.span[o] = end - start;
  }
  return a;
}

namespace {

template <typename Fn>
void float_or_double(ScalarType t, const char* name, Fn f) {
  if (t == ScalarType::Float32) return f(float());
  if (t == ScalarType::Float64) return f(double());
  IGNIS_FAIL_KIND(NotImplemented, "\"", name, "\" not implemented for '", scalar_type_name(t),
                  "'");
}

int64_t planes_of(const Tensor& t) {
  return t.dim() == 3 ? t.size(0) : t.size(0) * t.size(1);
}

int64_t divisor(const PoolAxis& h, const PoolAxis& w, int64_t oh, int64_t ow,
                bool count_include_pad, int64_t divisor_override) {
  if (divisor_override > 0) return divisor_override;
  if (count_include_pad) return h.span[oh] * w.span[ow];
  return static_cast<int64_t>(h.taps[oh].size() * w.taps[ow].size());
}

}  // namespace

// One output position's window max, read through the tap lists: NaN wins
// (a later NaN moves the position), ties keep the first in (row, column)
// order.
template <typename T>
inline void window_max(const T* xp, int64_t W, const std::vector<int64_t>& rows,
                       const std::vector<int64_t>& cols, T* y, int64_t* ix) {
  T best = -std::numeric_limits<T>::infinity();
  int64_t at = rows.empty() || cols.empty() ? 0 : rows[0] * W + cols[0];
  for (int64_t r : rows)
    for (int64_t c : cols) {
      const T v = xp[r * W + c];
      if (v > best || v != v) {
        best = v;
        at = r * W + c;
      }
    }
  *y = best;
  *ix = at;
}

void max_pool2d_into(const Tensor& out, const Tensor& indices, const Tensor& in,
                     const PoolAxis& h, const PoolAxis& w) {
  const int64_t planes = planes_of(in), W = w.in, HW = h.in * w.in;
  const int64_t OH = static_cast<int64_t>(h.taps.size()), OW = static_cast<int64_t>(w.taps.size());
  // With a fixed window along W, the output columns whose windows lie inside
  // the row, [lo, hi), read column ow * s - pad + k * d for every k: there the
  // taps are visited tap by tap across a run of outputs (the same (row,
  // column) order per output as window_max, so the same results), a loop
  // without the tap lists that the compiler vectorises.
  int64_t lo = OW, hi = OW;
  if (w.kernel > 0) {
    const int64_t s = w.stride, reach = (w.kernel - 1) * w.dilation;
    lo = std::min<int64_t>(OW, (w.pad + s - 1) / s);
    hi = W - 1 - reach + w.pad < 0 ? 0 : std::min<int64_t>(OW, (W - 1 - reach + w.pad) / s + 1);
    if (hi <= lo) lo = hi = OW;  // no interior (and no skip in the loop below)
  }
  float_or_double(in.dtype(), "max_pool2d", [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.data<T>();
    T* y = out.data<T>();
    int64_t* ix = indices.data<int64_t>();
    parallel_rows(planes, OH * OW * 4, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* xp = x + p * HW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const auto& rows = h.taps[oh];
          T* yr = y + (p * OH + oh) * OW;
          int64_t* ir = ix + (p * OH + oh) * OW;
          for (int64_t ow = 0; ow < OW; ++ow) {
            if (ow == lo && !rows.empty()) {
              ow = hi - 1;
              continue;
            }
            window_max(xp, W, rows, w.taps[ow], yr + ow, ir + ow);
          }
          if (lo >= hi || rows.empty()) continue;
          const int64_t s = w.stride;
          for (int64_t ow = lo; ow < hi; ++ow) {
            yr[ow] = -std::numeric_limits<T>::infinity();
            ir[ow] = rows[0] * W + ow * s - w.pad;
          }
          for (int64_t r : rows)
            for (int64_t k = 0; k < w.kernel; ++k) {
              const int64_t off = r * W - w.pad + k * w.dilation;
              for (int64_t ow = lo; ow < hi; ++ow) {
                const T v = xp[ow * s + off];
                const bool take = v > yr[ow] || v != v;
                yr[ow] = take ? v : yr[ow];
                ir[ow] = take ? ow * s + off : ir[ow];
              }
            }
        }
      }
    });
  });
}

void max_pool2d_backward_into(const Tensor& grad_in, const Tensor& grad_out,
                              const Tensor& indices) {
  const int64_t planes = planes_of(grad_in);
  const int64_t HW = planes ? grad_in.numel() / planes : 0;
  const int64_t L = planes ? grad_out.numel() / planes : 0;
  float_or_double(grad_in.dtype(), "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* g = grad_out.data<T>();
    const int64_t* ix = indices.data<int64_t>();
    T* gi = grad_in.data<T>();
    parallel_rows(planes, HW + L, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        T* dst = gi + p * HW;
        std::fill(dst, dst + HW, T(0));
        for (int64_t l = 0; l < L; ++l) dst[ix[p * L + l]] += g[p * L + l];
      }
    });
  });
}

void avg_pool2d_into(const Tensor& out, const Tensor& in, const PoolAxis& h, const PoolAxis& w,
                     bool count_include_pad, int64_t divisor_override) {
  const int64_t planes = planes_of(in), W = w.in, HW = h.in * w.in;
  const int64_t OH = static_cast<int64_t>(h.taps.size()), OW = static_cast<int64_t>(w.taps.size());
  float_or_double(in.dtype(), "avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.data<T>();
    T* y = out.data<T>();
    parallel_rows(planes, OH * OW * 4, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* xp = x + p * HW;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            T sum = 0;
            for (int64_t r : h.taps[oh])
              for (int64_t c : w.taps[ow]) sum += xp[r * W + c];
            const int64_t d = divisor(h, w, oh, ow, count_include_pad, divisor_override);
            y[(p * OH + oh) * OW + ow] = sum / static_cast<T>(d);
          }
      }
    });
  });
}

void avg_pool2d_backward_into(const Tensor& grad_in, const Tensor& grad_out, const PoolAxis& h,
                              const PoolAxis& w, bool count_include_pad,
                              int64_t divisor_override) {
  const int64_t planes = planes_of(grad_in), W = w.in, HW = h.in * w.in;
  const int64_t OH = static_cast<int64_t>(h.taps.size()), OW = static_cast<int64_t>(w.taps.size());
  float_or_double(grad_in.dtype(), "avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* g = grad_out.data<T>();
    T* gi = grad_in.data<T>();
    parallel_rows(planes, HW + OH * OW * 4, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        T* dst = gi + p * HW;
        std::fill(dst, dst + HW, T(0));
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t d = divisor(h, w, oh, ow, count_include_pad, divisor_override);
            const T v = g[(p * OH + oh) * OW + ow] / static_cast<T>(d);
            for (int64_t r : h.taps[oh])
              for (int64_t c : w.taps[ow]) dst[r * W + c] += v;
          }
      }
    });
  });
}

}  // namespace ignis::cpu

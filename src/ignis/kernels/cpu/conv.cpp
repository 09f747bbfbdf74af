#include "ignis/kernels/cpu/conv.h"

#include <array>
#include <cstring>
#include <type_traits>

#include "ignis/core/error.h"
#include "ignis/kernels/cpu/gemm.h"
#include "ignis/kernels/cpu/parallel.h"

namespace ignis::cpu {

ConvGeom conv_geom(const Tensor& image, const Tensor& cols, const Tensor& weight,
                   const ConvParams& p) {
  ConvGeom g;
  const int64_t nd = image.dim() - 2, off = 3 - nd;
  g.batch = image.size(0);
  g.groups = p.groups;
  g.img_ch = image.size(1) / p.groups;
  g.col_ch = cols.size(1) / p.groups;
  for (int64_t i = 0; i < nd; ++i) {
    g.img[off + i] = image.size(2 + i);
    g.col[off + i] = cols.size(2 + i);
    g.k[off + i] = weight.size(2 + i);
    g.s[off + i] = p.stride[i];
    g.p[off + i] = p.padding[i];
    g.d[off + i] = p.dilation[i];
  }
  return g;
}

namespace {

// The window positions o in [0, n) whose tap o * s + off lands inside [0, size).
inline void valid_range(int64_t n, int64_t s, int64_t off, int64_t size, int64_t& lo,
                        int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + s - 1) / s;
  hi = size - 1 - off < 0 ? 0 : std::min(n, (size - 1 - off) / s + 1);
  if (lo > hi) lo = hi;
}

// For each (channel, tap) row and each window position of the columns side,
// calls f(col_row_ptr, img_row_ptr, lo, hi) for the innermost run: window
// positions [lo, hi) of one output row read image elements
// img_row[ow * s + off] (the rest of the row lies in the padding).
template <typename T, typename Fn>
void for_each_run(const ConvGeom& g, T* col, T* img, Fn f) {
  const int64_t L = g.col_len();
  for (int64_t c = 0; c < g.img_ch; ++c) {
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          T* row = col + ((c * g.k[0] + kd) * g.k[1] * g.k[2] + kh * g.k[2] + kw) * L;
          const int64_t off_w = kw * g.d[2] - g.p[2];
          int64_t wlo, whi;
          valid_range(g.col[2], g.s[2], off_w, g.img[2], wlo, whi);
          for (int64_t od = 0; od < g.col[0]; ++od) {
            const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
            for (int64_t oh = 0; oh < g.col[1]; ++oh) {
              const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
              T* out_row = row + (od * g.col[1] + oh) * g.col[2];
              const bool inside = id >= 0 && id < g.img[0] && ih >= 0 && ih < g.img[1];
              T* img_row = inside ? img + ((c * g.img[0] + id) * g.img[1] + ih) * g.img[2] + off_w
                                  : nullptr;
              f(out_row, img_row, inside ? wlo : 0, inside ? whi : 0);
            }
          }
        }
  }
}

// col [img_ch * K, L] = the image's window taps (0 in the padding).
template <typename T>
void im2col(const ConvGeom& g, const T* img, T* col) {
  const int64_t W = g.col[2], sw = g.s[2];
  for_each_run(g, col, const_cast<T*>(img), [W, sw](T* out, const T* in, int64_t lo, int64_t hi) {
    std::fill(out, out + lo, T(0));
    if (sw == 1) {
      // (a row wholly in the padding has no source: in is null, lo == hi)
      if (hi > lo) std::memcpy(out + lo, in + lo, sizeof(T) * static_cast<size_t>(hi - lo));
    } else {
      for (int64_t o = lo; o < hi; ++o) out[o] = in[o * sw];
    }
    std::fill(out + hi, out + W, T(0));
  });
}

// image += the column matrix's taps summed back into their image positions
// (the adjoint of im2col).
template <typename T>
void col2im(const ConvGeom& g, const T* col, T* img) {
  const int64_t sw = g.s[2];
  for_each_run(g, const_cast<T*>(col), img, [sw](T* in, T* out, int64_t lo, int64_t hi) {
    if (sw == 1) {
      for (int64_t o = lo; o < hi; ++o) out[o] += in[o];
    } else {
      for (int64_t o = lo; o < hi; ++o) out[o * sw] += in[o];
    }
  });
}

// c = beta * c + a @ b on row-major operands (a_t / b_t: the operand is
// stored transposed), threaded when `threaded` (outside a parallel region).
template <typename T>
void gemm(bool threaded, int64_t m, int64_t n, int64_t k, const T* a, bool a_t, int64_t lda,
          const T* b, bool b_t, int64_t ldb, T beta, T* c, int64_t ldc) {
  const int64_t a_rs = a_t ? 1 : lda, a_cs = a_t ? lda : 1;
  const int64_t b_rs = b_t ? 1 : ldb, b_cs = b_t ? ldb : 1;
  if (!threaded) {
    gemm_serial<T>(m, n, k, T(1), a, a_rs, a_cs, b, b_rs, b_cs, beta, c, ldc);
    return;
  }
  GemmCall call{m, n, k, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, 1.0, double(beta),
                std::is_same_v<T, float> ? 0 : 1, nullptr, nullptr};
  gemm_with_epilogue(call);
}

// Runs body(item, threaded) for each (sample, group) item: items spread over
// threads with serial GEMMs when there are enough of them, else one after
// the other with threaded GEMMs (batch 1, deep layers).
template <typename Body>
void for_each_item(const ConvGeom& g, int64_t work_per_item, Body body) {
  const int64_t items = g.batch * g.groups;
  const int nt = threads_for(items * work_per_item);
  if (nt > 1 && items >= nt) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t i = 0; i < items; ++i) body(i, false);
  } else {
    const bool threaded = !omp_in_parallel();
    for (int64_t i = 0; i < items; ++i) body(i, threaded);
  }
}

// cols side [n, g] = W_g @ im2col(image [n, g]), plus bias when given.
template <typename T>
void gather(const ConvGeom& g, const T* image, const T* w, const T* bias, T* cols) {
  const int64_t K = g.img_ch * g.k_len(), L = g.col_len(), Li = g.img_len();
  const bool ident = g.identity();
  for_each_item(g, g.col_ch * K * L, [&](int64_t item, bool threaded) {
    thread_local std::vector<T> buf;
    const int64_t n = item / g.groups, gi = item % g.groups;
    const T* img = image + (n * g.groups + gi) * g.img_ch * Li;
    const T* col = img;
    if (!ident) {
      buf.resize(static_cast<size_t>(K * L));
      im2col(g, img, buf.data());
      col = buf.data();
    }
    T* out = cols + (n * g.groups + gi) * g.col_ch * L;
    gemm<T>(threaded, g.col_ch, L, K, w + gi * g.col_ch * K, false, K, col, false, L, T(0), out,
            L);
    if (bias) {
      for (int64_t o = 0; o < g.col_ch; ++o) {
        const T b = bias[gi * g.col_ch + o];
        for (int64_t l = 0; l < L; ++l) out[o * L + l] += b;
      }
    }
  });
}

// image [n, g] = col2im(W_g^T @ cols [n, g]), plus bias when given.
template <typename T>
void scatter(const ConvGeom& g, const T* cols, const T* w, const T* bias, T* image) {
  const int64_t K = g.img_ch * g.k_len(), L = g.col_len(), Li = g.img_len();
  const bool ident = g.identity();
  for_each_item(g, g.col_ch * K * L, [&](int64_t item, bool threaded) {
    thread_local std::vector<T> buf;
    const int64_t n = item / g.groups, gi = item % g.groups;
    T* img = image + (n * g.groups + gi) * g.img_ch * Li;
    const T* src = cols + (n * g.groups + gi) * g.col_ch * L;
    const T* wg = w + gi * g.col_ch * K;
    if (ident) {
      gemm<T>(threaded, K, L, g.col_ch, wg, true, K, src, false, L, T(0), img, L);
    } else {
      buf.resize(static_cast<size_t>(K * L));
      gemm<T>(threaded, K, L, g.col_ch, wg, true, K, src, false, L, T(0), buf.data(), L);
      std::fill(img, img + g.img_ch * Li, T(0));
      col2im(g, buf.data(), img);
    }
    if (bias) {
      for (int64_t c = 0; c < g.img_ch; ++c) {
        const T b = bias[gi * g.img_ch + c];
        for (int64_t l = 0; l < Li; ++l) img[c * Li + l] += b;
      }
    }
  });
}

// dW = sum over samples of cols [n, g] @ im2col(image [n, g])^T. Threads
// split the batch and sum their partial products at the end.
template <typename T>
void weight_grad(const ConvGeom& g, const T* image, const T* cols, T* dw) {
  const int64_t K = g.img_ch * g.k_len(), L = g.col_len(), Li = g.img_len();
  const int64_t per_group = g.col_ch * K;
  const bool ident = g.identity();
  const int64_t items = g.batch * g.groups;
  const int nt = threads_for(items * per_group * L);
  const int parts = nt > 1 && g.batch >= nt ? nt : 1;
  std::vector<T> partial(static_cast<size_t>((parts - 1) * g.groups * per_group), T(0));
  std::fill(dw, dw + g.groups * per_group, T(0));
  auto one = [&](int64_t n, int64_t gi, T* acc, bool threaded, std::vector<T>& buf) {
    const T* img = image + (n * g.groups + gi) * g.img_ch * Li;
    const T* col = img;
    if (!ident) {
      buf.resize(static_cast<size_t>(K * L));
      im2col(g, img, buf.data());
      col = buf.data();
    }
    const T* src = cols + (n * g.groups + gi) * g.col_ch * L;
    gemm<T>(threaded, g.col_ch, K, L, src, false, L, col, true, L, T(1), acc + gi * per_group, K);
  };
  if (parts > 1) {
#pragma omp parallel num_threads(parts)
    {
      const int t = omp_get_thread_num();
      T* acc = t == 0 ? dw : partial.data() + (t - 1) * g.groups * per_group;
      std::vector<T> buf;
      for (int64_t n = t; n < g.batch; n += parts)
        for (int64_t gi = 0; gi < g.groups; ++gi) one(n, gi, acc, false, buf);
    }
    for (int t = 1; t < parts; ++t) {
      const T* src = partial.data() + (t - 1) * g.groups * per_group;
      for (int64_t i = 0; i < g.groups * per_group; ++i) dw[i] += src[i];
    }
  } else {
    std::vector<T> buf;
    const bool threaded = !omp_in_parallel();
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t gi = 0; gi < g.groups; ++gi) one(n, gi, dw, threaded, buf);
  }
}

// db[c] = sum of t over the batch and spatial positions of channel c.
template <typename T>
void channel_sums(const Tensor& t, T* db) {
  const int64_t N = t.size(0), C = t.size(1), L = t.numel() / std::max<int64_t>(N * C, 1);
  const T* p = t.data<T>();
#pragma omp parallel for if (t.numel() >= kGrain)
  for (int64_t c = 0; c < C; ++c) {
    T acc = 0;
    for (int64_t n = 0; n < N; ++n) {
      const T* r = p + (n * C + c) * L;
      for (int64_t l = 0; l < L; ++l) acc += r[l];
    }
    db[c] = acc;
  }
}

template <typename T>
const T* opt_data(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// float32 or float64: the op converts other dtypes before it gets here.
template <typename Fn>
void float_or_double(ScalarType t, const char* name, Fn f) {
  if (t == ScalarType::Float32) return f(float());
  if (t == ScalarType::Float64) return f(double());
  IGNIS_FAIL_KIND(NotImplemented, "\"", name, "\" not implemented for '", scalar_type_name(t), "'");
}

}  // namespace

void convolution_into(const Tensor& out, const Tensor& input, const Tensor& weight,
                      const Tensor& bias, const ConvParams& p) {
  if (out.numel() == 0) return;
  float_or_double(out.dtype(), "convolution", [&](auto tag) {
    using T = decltype(tag);
    if (p.transposed) {
      scatter<T>(conv_geom(out, input, weight, p), input.data<T>(), weight.data<T>(),
                 opt_data<T>(bias), out.data<T>());
    } else {
      gather<T>(conv_geom(input, out, weight, p), input.data<T>(), weight.data<T>(),
                opt_data<T>(bias), out.data<T>());
    }
  });
}

namespace {
template <typename T>
void backward(const Tensor& gi, const Tensor& gw, const Tensor& gb, const Tensor& go,
              const Tensor& input, const Tensor& weight, const ConvParams& p) {
  // The image side is the input of a convolution, grad_out of a transposed one.
  const Tensor& image = p.transposed ? go : input;
  const Tensor& cols = p.transposed ? input : go;
  const ConvGeom g = conv_geom(image, cols, weight, p);
  const T* w = weight.data<T>();
  if (gi.defined() && gi.numel() > 0) {
    if (p.transposed)
      gather<T>(g, go.data<T>(), w, nullptr, gi.data<T>());
    else
      scatter<T>(g, go.data<T>(), w, nullptr, gi.data<T>());
  }
  if (gw.defined() && gw.numel() > 0) {
    if (image.numel() == 0 || cols.numel() == 0)
      std::fill(gw.data<T>(), gw.data<T>() + gw.numel(), T(0));
    else
      weight_grad<T>(g, image.data<T>(), cols.data<T>(), gw.data<T>());
  }
  if (gb.defined() && gb.numel() > 0) channel_sums<T>(go, gb.data<T>());
}
}  // namespace

void convolution_backward_into(const Tensor& grad_input, const Tensor& grad_weight,
                               const Tensor& grad_bias, const Tensor& grad_out,
                               const Tensor& input, const Tensor& weight, const ConvParams& p) {
  float_or_double(grad_out.dtype(), "convolution_backward", [&](auto tag) {
    backward<decltype(tag)>(grad_input, grad_weight, grad_bias, grad_out, input, weight, p);
  });
}

}  // namespace ignis::cpu

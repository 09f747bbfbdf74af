#include "ignis/kernels/cpu/rnn_cell.h"

#include <vector>

#include "ignis/core/error.h"
#include "ignis/kernels/cpu/nn_util.h"
#include "ignis/kernels/cpu/vec_math.h"

namespace ignis::cpu {

namespace {

// Note [Fused cell activations]
// The gates use the same sigmoid and tanh as the eager sigmoid/tanh ops
// (vec_math.h), so a fused step agrees with the unfused ops to the rounding
// of the gate sums, and the loops below vectorise (branch-free functions).

template <typename T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// ib + hb as one [n] vector (zeros without biases): one add per gate in the
// row loops, and no branch.
template <typename T>
std::vector<T> summed_bias(const Tensor& ib, const Tensor& hb, int64_t n) {
  std::vector<T> b(static_cast<size_t>(n), T(0));
  if (ib.defined())
    for (int64_t j = 0; j < n; ++j) b[j] = ib.data<T>()[j] + hb.data<T>()[j];
  return b;
}

// out[j] = sum over the rows of g[r, j]: a bias's gradient.
template <typename T>
void column_sums(const Tensor& out, const T* g, int64_t rows, int64_t n) {
  T* o = out.data<T>();
  for (int64_t j = 0; j < n; ++j) o[j] = T(0);
  for (int64_t r = 0; r < rows; ++r) {
    const T* gr = g + r * n;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) o[j] += gr[j];
  }
}

template <typename T>
void lstm_forward(const Tensor& hy, const Tensor& cy, const Tensor& ws, const Tensor& ig,
                  const Tensor& hg, const Tensor& cx, const Tensor& ib, const Tensor& hb) {
  const int64_t B = cx.size(0), H = cx.size(1);
  const std::vector<T> bias = summed_bias<T>(ib, hb, 4 * H);
  const T* igp = ig.data<T>();
  const T* hgp = hg.data<T>();
  const T* cxp = cx.data<T>();
  T* hyp = hy.data<T>();
  T* cyp = cy.data<T>();
  T* wsp = ws.data<T>();
  parallel_rows(B, 4 * H, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* __restrict a = igp + r * 4 * H;
      const T* __restrict h = hgp + r * 4 * H;
      const T* __restrict b = bias.data();
      const T* __restrict c = cxp + r * H;
      T* __restrict w = wsp + r * 4 * H;
      T* __restrict ho = hyp + r * H;
      T* __restrict co = cyp + r * H;
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        const T i = sigmoid(a[j] + h[j] + b[j]);
        const T f = sigmoid(a[H + j] + h[H + j] + b[H + j]);
        const T g = vtanh(a[2 * H + j] + h[2 * H + j] + b[2 * H + j]);
        const T o = sigmoid(a[3 * H + j] + h[3 * H + j] + b[3 * H + j]);
        const T cn = f * c[j] + i * g;
        w[j] = i;
        w[H + j] = f;
        w[2 * H + j] = g;
        w[3 * H + j] = o;
        co[j] = cn;
        ho[j] = o * vtanh(cn);
      }
    }
  });
}

template <typename T>
void lstm_backward(const Tensor& gg_out, const Tensor& gcx_out, const Tensor& gb_out,
                   const Tensor& ghy, const Tensor& gcy, const Tensor& cx, const Tensor& cy,
                   const Tensor& ws) {
  const int64_t B = cx.size(0), H = cx.size(1);
  // A missing gradient is zero: a zero row keeps the loop branch-free.
  const std::vector<T> zero(static_cast<size_t>(H), T(0));
  const T* ghp = data_or_null<T>(ghy);
  const T* gcp = data_or_null<T>(gcy);
  const T* cxp = cx.data<T>();
  const T* cyp = cy.data<T>();
  const T* wsp = ws.data<T>();
  T* ggp = gg_out.data<T>();
  T* gcxp = gcx_out.data<T>();
  parallel_rows(B, 4 * H, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* __restrict dh = ghp ? ghp + r * H : zero.data();
      const T* __restrict dc = gcp ? gcp + r * H : zero.data();
      const T* __restrict c = cxp + r * H;
      const T* __restrict cn = cyp + r * H;
      const T* __restrict w = wsp + r * 4 * H;
      T* __restrict dg = ggp + r * 4 * H;
      T* __restrict dcx = gcxp + r * H;
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        const T i = w[j], f = w[H + j], g = w[2 * H + j], o = w[3 * H + j];
        const T tc = vtanh(cn[j]);
        const T dcn = dh[j] * o * (T(1) - tc * tc) + dc[j];
        dg[j] = dcn * g * i * (T(1) - i);
        dg[H + j] = dcn * c[j] * f * (T(1) - f);
        dg[2 * H + j] = dcn * i * (T(1) - g * g);
        dg[3 * H + j] = dh[j] * tc * o * (T(1) - o);
        dcx[j] = dcn * f;
      }
    }
  });
  if (gb_out.defined()) column_sums<T>(gb_out, ggp, B, 4 * H);
}

template <typename T>
void gru_forward(const Tensor& hy, const Tensor& ws, const Tensor& ig, const Tensor& hg,
                 const Tensor& hx, const Tensor& ib, const Tensor& hb) {
  const int64_t B = hx.size(0), H = hx.size(1);
  // r and z add both biases; n keeps them apart (b_hn is inside r * (.)).
  std::vector<T> bi(static_cast<size_t>(3 * H), T(0)), bh(static_cast<size_t>(3 * H), T(0));
  if (ib.defined())
    for (int64_t j = 0; j < 3 * H; ++j) {
      bi[j] = ib.data<T>()[j];
      bh[j] = hb.data<T>()[j];
    }
  const T* igp = ig.data<T>();
  const T* hgp = hg.data<T>();
  const T* hxp = hx.data<T>();
  T* hyp = hy.data<T>();
  T* wsp = ws.data<T>();
  parallel_rows(B, 3 * H, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* __restrict a = igp + r * 3 * H;
      const T* __restrict h = hgp + r * 3 * H;
      const T* __restrict x = hxp + r * H;
      const T* __restrict pi = bi.data();
      const T* __restrict ph = bh.data();
      T* __restrict w = wsp + r * 5 * H;
      T* __restrict out = hyp + r * H;
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        const T rg = sigmoid(a[j] + pi[j] + h[j] + ph[j]);
        const T zg = sigmoid(a[H + j] + pi[H + j] + h[H + j] + ph[H + j]);
        const T hn = h[2 * H + j] + ph[2 * H + j];
        const T ng = vtanh(a[2 * H + j] + pi[2 * H + j] + rg * hn);
        w[j] = rg;
        w[H + j] = zg;
        w[2 * H + j] = ng;
        w[3 * H + j] = x[j];
        w[4 * H + j] = hn;
        out[j] = ng + zg * (x[j] - ng);
      }
    }
  });
}

template <typename T>
void gru_backward(const Tensor& gig_out, const Tensor& ghg_out, const Tensor& ghx_out,
                  const Tensor& gib_out, const Tensor& ghb_out, const Tensor& ghy,
                  const Tensor& ws) {
  const int64_t B = ghy.size(0), H = ghy.size(1);
  const T* gp = ghy.data<T>();
  const T* wsp = ws.data<T>();
  T* gip = gig_out.data<T>();
  T* ghp = ghg_out.data<T>();
  T* gxp = ghx_out.data<T>();
  parallel_rows(B, 3 * H, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* __restrict dh = gp + r * H;
      const T* __restrict w = wsp + r * 5 * H;
      T* __restrict di = gip + r * 3 * H;
      T* __restrict dhg = ghp + r * 3 * H;
      T* __restrict dx = gxp + r * H;
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        const T rg = w[j], zg = w[H + j], ng = w[2 * H + j], x = w[3 * H + j],
                hn = w[4 * H + j];
        const T dn = dh[j] * (T(1) - zg) * (T(1) - ng * ng);
        const T dz = dh[j] * (x - ng) * zg * (T(1) - zg);
        const T dr = dn * hn * rg * (T(1) - rg);
        di[j] = dr;
        di[H + j] = dz;
        di[2 * H + j] = dn;
        dhg[j] = dr;
        dhg[H + j] = dz;
        dhg[2 * H + j] = dn * rg;
        dx[j] = dh[j] * zg;
      }
    }
  });
  if (gib_out.defined()) column_sums<T>(gib_out, gip, B, 3 * H);
  if (ghb_out.defined()) column_sums<T>(ghb_out, ghp, B, 3 * H);
}

// Runs f<float> or f<double> by `t`'s dtype (the only two the ops pass).
template <typename F>
void by_dtype(ScalarType t, F f) {
  if (t == ScalarType::Float32) f(float{});
  else if (t == ScalarType::Float64) f(double{});
  else IGNIS_INTERNAL_ASSERT(false, "fused recurrent cell kernel got ", scalar_type_name(t));
}

}  // namespace

void lstm_cell_into(const Tensor& hy, const Tensor& cy, const Tensor& workspace,
                    const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx,
                    const Tensor& input_bias, const Tensor& hidden_bias) {
  by_dtype(cx.dtype(), [&](auto t) {
    lstm_forward<decltype(t)>(hy, cy, workspace, input_gates, hidden_gates, cx, input_bias,
                              hidden_bias);
  });
}

void lstm_cell_backward_into(const Tensor& grad_gates, const Tensor& grad_cx,
                             const Tensor& grad_bias, const Tensor& grad_hy,
                             const Tensor& grad_cy, const Tensor& cx, const Tensor& cy,
                             const Tensor& workspace) {
  by_dtype(cx.dtype(), [&](auto t) {
    lstm_backward<decltype(t)>(grad_gates, grad_cx, grad_bias, grad_hy, grad_cy, cx, cy,
                               workspace);
  });
}

void gru_cell_into(const Tensor& hy, const Tensor& workspace, const Tensor& input_gates,
                   const Tensor& hidden_gates, const Tensor& hx, const Tensor& input_bias,
                   const Tensor& hidden_bias) {
  by_dtype(hx.dtype(), [&](auto t) {
    gru_forward<decltype(t)>(hy, workspace, input_gates, hidden_gates, hx, input_bias,
                             hidden_bias);
  });
}

void gru_cell_backward_into(const Tensor& grad_input_gates, const Tensor& grad_hidden_gates,
                            const Tensor& grad_hx, const Tensor& grad_input_bias,
                            const Tensor& grad_hidden_bias, const Tensor& grad_hy,
                            const Tensor& workspace) {
  by_dtype(grad_hy.dtype(), [&](auto t) {
    gru_backward<decltype(t)>(grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias,
                              grad_hidden_bias, grad_hy, workspace);
  });
}

}  // namespace ignis::cpu

#include "ignis/kernels/cpu/fused_optimizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "ignis/core/dtype.h"
#include "ignis/kernels/cpu/parallel.h"
#include "ignis/kernels/scalar_ops.h"

namespace ignis::cpu {

namespace {

float one_value(const Tensor& t) { return *static_cast<const float*>(t.data_ptr()); }

// Note [Fused Adam step]
// torch's fused Adam, element by element: the gradient is unscaled by
// grad_scale (and stored back so, as torch's kernel stores it), negated for
// maximize, and then scalar_ops::AdamElement does the rest. The bias
// corrections depend only on the tensor's step, so they are computed once
// per tensor (in double, then rounded to the compute type). A found_inf
// that is not 0 skips the whole step (the optimizer's step counts are the
// caller's business, as in torch).

// update(k, gradient) for k in [b, e). Without a gradient scaler (the usual
// case) in an `omp simd` loop, so that with the caller's flags as constants
// it vectorises; with one, the gradient is unscaled and stored back first.
template <class C, class T, class F>
IGNIS_ALWAYS_INLINE void each_element(T* g, int64_t b, int64_t e, bool unscale, double inv_scale,
                                      const F& update) {
  if (!unscale) {
#pragma omp simd
    for (int64_t k = b; k < e; ++k) update(k, C(g[k]));
    return;
  }
  for (int64_t k = b; k < e; ++k) {
    const C gk = C(C(g[k]) * C(inv_scale));
    g[k] = T(gk);
    update(k, gk);
  }
}

// Elements [b, e) of tensor i (the flags as template constants).
template <class T, bool kAmsgrad, bool kDecoupled>
void adam_range(const AdamLists& t, size_t i, int64_t b, int64_t e, const AdamStep& h, double lr,
                double inv_scale) {
  using C = opmath_t<T>;
  T* __restrict p = static_cast<T*>(t.params[i].data_ptr());
  T* __restrict g = static_cast<T*>(t.grads[i].data_ptr());
  T* __restrict m = static_cast<T*>(t.exp_avgs[i].data_ptr());
  T* __restrict v = static_cast<T*>(t.exp_avg_sqs[i].data_ptr());
  T* __restrict vmax = kAmsgrad ? static_cast<T*>(t.max_exp_avg_sqs[i].data_ptr()) : nullptr;
  const double step = one_value(t.steps[i]);
  const C bc1 = C(1 - std::pow(h.beta1, step));
  const C bc2_sqrt = C(std::sqrt(1 - std::pow(h.beta2, step)));
  const C clr = C(lr), b1 = C(h.beta1), b2 = C(h.beta2), wd = C(h.weight_decay), eps = C(h.eps);
  const C sign = h.maximize ? C(-1) : C(1);
  auto update = [&](int64_t k, C gk) {
    C pk = C(p[k]), mk = C(m[k]), vk = C(v[k]), vmk = kAmsgrad ? C(vmax[k]) : C(0);
    scalar_ops::AdamElement()(pk, gk * sign, mk, vk, vmk, kAmsgrad, kDecoupled, clr, b1, b2, wd,
                              eps, bc1, bc2_sqrt);
    p[k] = T(pk);
    m[k] = T(mk);
    v[k] = T(vk);
    if constexpr (kAmsgrad) vmax[k] = T(vmk);
  };
  each_element<C>(g, b, e, h.grad_scale.defined(), inv_scale, update);
}

// Note [One parallel region per fused step]
// A model's parameters are many small tensors (the example GPT: 28, from 64
// to 16K elements). A region per tensor paid a team's start and join 28
// times a step, and a tensor under the grain ran on one thread; instead
// every tensor is cut into pieces of at most kPiece elements, and the
// pieces of all tensors share one region (or run serially when all of
// them together are under the grain). Each element is still computed by
// the same formula, so the results do not depend on the cut.
constexpr int64_t kPiece = 8192;

template <class F>
void for_each_piece(const std::vector<Tensor>& params, F&& f) {
  std::vector<std::array<int64_t, 3>> pieces;  // tensor, begin, end
  int64_t total = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const int64_t n = params[i].numel();
    total += n;
    for (int64_t b = 0; b < n; b += kPiece)
      pieces.push_back({int64_t(i), b, std::min(n, b + kPiece)});
  }
  const int64_t np = int64_t(pieces.size());
#pragma omp parallel for num_threads(threads_for(total)) schedule(static)
  for (int64_t q = 0; q < np; ++q) f(size_t(pieces[size_t(q)][0]), pieces[size_t(q)][1],
                                     pieces[size_t(q)][2]);
}

// Elements [b, e) of tensor i (the flags as template constants).
template <class T, bool kBuffer, bool kFirst, bool kNesterov>
void sgd_range(const SgdLists& t, size_t i, int64_t b, int64_t e, const SgdStep& h, double lr,
               double inv_scale) {
  using C = opmath_t<T>;
  T* __restrict p = static_cast<T*>(t.params[i].data_ptr());
  T* __restrict g = static_cast<T*>(t.grads[i].data_ptr());
  T* __restrict buf = kBuffer ? static_cast<T*>(t.momentum_buffers[i].data_ptr()) : nullptr;
  const C clr = C(lr), wd = C(h.weight_decay), mom = C(h.momentum), damp = C(h.dampening);
  const C sign = h.maximize ? C(-1) : C(1);
  auto update = [&](int64_t k, C gk) {
    C pk = C(p[k]), bk = kBuffer ? C(buf[k]) : C(0);
    scalar_ops::SgdElement()(pk, gk * sign, bk, kBuffer, kFirst, kNesterov, clr, wd, mom, damp);
    p[k] = T(pk);
    if constexpr (kBuffer) buf[k] = T(bk);
  };
  each_element<C>(g, b, e, h.grad_scale.defined(), inv_scale, update);
}

template <class T>
void sgd_range_for(const SgdLists& t, size_t i, int64_t b, int64_t e, const SgdStep& h,
                   double lr, double inv_scale) {
  if (t.momentum_buffers.empty()) return sgd_range<T, false, false, false>(t, i, b, e, h, lr,
                                                                          inv_scale);
  if (h.first_step) {
    if (h.nesterov) return sgd_range<T, true, true, true>(t, i, b, e, h, lr, inv_scale);
    return sgd_range<T, true, true, false>(t, i, b, e, h, lr, inv_scale);
  }
  if (h.nesterov) return sgd_range<T, true, false, true>(t, i, b, e, h, lr, inv_scale);
  return sgd_range<T, true, false, false>(t, i, b, e, h, lr, inv_scale);
}

// 1 / grad_scale, or 0 when found_inf says to skip the step.
bool skip_step(const Tensor& found_inf) {
  return found_inf.defined() && one_value(found_inf) != 0.0f;
}
double inverse_scale(const Tensor& grad_scale) {
  return grad_scale.defined() ? 1.0 / double(one_value(grad_scale)) : 1.0;
}

}  // namespace

void fused_adam(const AdamLists& t, const AdamStep& h) {
  if (skip_step(h.found_inf)) return;
  const double lr = h.lr_tensor.defined() ? double(one_value(h.lr_tensor)) : h.lr;
  const double inv_scale = inverse_scale(h.grad_scale);
  // An unsupported dtype raises here, not inside the parallel region.
  for (const Tensor& p : t.params)
    IGNIS_DISPATCH_FLOAT(p.dtype(), "_fused_adam_", [] { static_assert(sizeof(scalar_t) > 0); });
  for_each_piece(t.params, [&](size_t i, int64_t b, int64_t e) {
    IGNIS_DISPATCH_FLOAT(t.params[i].dtype(), "_fused_adam_", [&] {
      if (h.amsgrad) {
        if (h.decoupled) adam_range<scalar_t, true, true>(t, i, b, e, h, lr, inv_scale);
        else adam_range<scalar_t, true, false>(t, i, b, e, h, lr, inv_scale);
      } else {
        if (h.decoupled) adam_range<scalar_t, false, true>(t, i, b, e, h, lr, inv_scale);
        else adam_range<scalar_t, false, false>(t, i, b, e, h, lr, inv_scale);
      }
    });
  });
}

void fused_sgd(const SgdLists& t, const SgdStep& h) {
  if (skip_step(h.found_inf)) return;
  const double lr = h.lr_tensor.defined() ? double(one_value(h.lr_tensor)) : h.lr;
  const double inv_scale = inverse_scale(h.grad_scale);
  for (const Tensor& p : t.params)
    IGNIS_DISPATCH_FLOAT(p.dtype(), "_fused_sgd_", [] { static_assert(sizeof(scalar_t) > 0); });
  for_each_piece(t.params, [&](size_t i, int64_t b, int64_t e) {
    IGNIS_DISPATCH_FLOAT(t.params[i].dtype(), "_fused_sgd_", [&] {
      sgd_range_for<scalar_t>(t, i, b, e, h, lr, inv_scale);
    });
  });
}

}  // namespace ignis::cpu

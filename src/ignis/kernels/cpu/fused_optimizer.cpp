#include "ignis/kernels/cpu/fused_optimizer.h"

#include <cmath>

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
template <class T>
void adam_tensor(const AdamLists& t, size_t i, const AdamStep& h, double lr, double inv_scale) {
  using C = opmath_t<T>;
  T* p = static_cast<T*>(t.params[i].data_ptr());
  T* g = static_cast<T*>(t.grads[i].data_ptr());
  T* m = static_cast<T*>(t.exp_avgs[i].data_ptr());
  T* v = static_cast<T*>(t.exp_avg_sqs[i].data_ptr());
  T* vmax = h.amsgrad ? static_cast<T*>(t.max_exp_avg_sqs[i].data_ptr()) : nullptr;
  const double step = one_value(t.steps[i]);
  const C bc1 = C(1 - std::pow(h.beta1, step));
  const C bc2_sqrt = C(std::sqrt(1 - std::pow(h.beta2, step)));
  const bool unscale = h.grad_scale.defined();
  const int64_t n = t.params[i].numel();
#pragma omp parallel for num_threads(threads_for(n)) schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    C gk = C(g[k]);
    if (unscale) {
      gk = C(gk * C(inv_scale));
      g[k] = T(gk);
    }
    if (h.maximize) gk = -gk;
    C pk = C(p[k]), mk = C(m[k]), vk = C(v[k]), vmk = vmax ? C(vmax[k]) : C(0);
    scalar_ops::AdamElement()(pk, gk, mk, vk, vmk, h.amsgrad, h.decoupled, C(lr), C(h.beta1),
                              C(h.beta2), C(h.weight_decay), C(h.eps), bc1, bc2_sqrt);
    p[k] = T(pk);
    m[k] = T(mk);
    v[k] = T(vk);
    if (vmax) vmax[k] = T(vmk);
  }
}

template <class T>
void sgd_tensor(const SgdLists& t, size_t i, const SgdStep& h, double lr, double inv_scale) {
  using C = opmath_t<T>;
  T* p = static_cast<T*>(t.params[i].data_ptr());
  T* g = static_cast<T*>(t.grads[i].data_ptr());
  const bool has_buffer = !t.momentum_buffers.empty();
  T* b = has_buffer ? static_cast<T*>(t.momentum_buffers[i].data_ptr()) : nullptr;
  const bool unscale = h.grad_scale.defined();
  const int64_t n = t.params[i].numel();
#pragma omp parallel for num_threads(threads_for(n)) schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    C gk = C(g[k]);
    if (unscale) {
      gk = C(gk * C(inv_scale));
      g[k] = T(gk);
    }
    if (h.maximize) gk = -gk;
    C pk = C(p[k]), bk = b ? C(b[k]) : C(0);
    scalar_ops::SgdElement()(pk, gk, bk, has_buffer, h.first_step, h.nesterov, C(lr),
                             C(h.weight_decay), C(h.momentum), C(h.dampening));
    p[k] = T(pk);
    if (b) b[k] = T(bk);
  }
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
  for (size_t i = 0; i < t.params.size(); ++i)
    IGNIS_DISPATCH_FLOAT(t.params[i].dtype(), "_fused_adam_", [&] {
      adam_tensor<scalar_t>(t, i, h, lr, inv_scale);
    });
}

void fused_sgd(const SgdLists& t, const SgdStep& h) {
  if (skip_step(h.found_inf)) return;
  const double lr = h.lr_tensor.defined() ? double(one_value(h.lr_tensor)) : h.lr;
  const double inv_scale = inverse_scale(h.grad_scale);
  for (size_t i = 0; i < t.params.size(); ++i)
    IGNIS_DISPATCH_FLOAT(t.params[i].dtype(), "_fused_sgd_", [&] {
      sgd_tensor<scalar_t>(t, i, h, lr, inv_scale);
    });
}

}  // namespace ignis::cpu

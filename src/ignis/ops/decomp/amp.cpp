// GradScaler's ops (ops/amp.cpp) over other ops: the CUDA kernels of both,
// and what AOT's tracer records for them. The state stays in the tensors
// (no .item()), so the device is never waited on.
#include "ignis/ops/decomp/common.h"

namespace ignis::decomp {

using namespace grad_ops;  // NOLINT

void amp_foreach_non_finite_check_and_unscale(const OpHandle& self_op, Stack& s) {
  Args a(self_op, s);
  const std::vector<Tensor> grads = a[0].to_tensor_list();
  const Tensor found_inf = a.tensor(1), inv_scale = a.tensor(2);
  // Per gradient: one isfinite, one reduction and the in-place scaling; the
  // flags are combined and written once at the end.
  std::vector<Tensor> finite;
  for (const Tensor& g : grads) {
    if (g.numel() == 0) continue;
    finite.push_back(op("all", op("isfinite", g)));
    op("mul_", g, inv_scale);
  }
  if (!finite.empty()) {
    static const OpRef stack_op("stack");
    Tensor all_finite = op("all", stack_op.tensor(finite, int64_t(0)));
    Tensor bad = to_dtype(op("logical_not", all_finite), ScalarType::Float32);
    op("copy_", found_inf, op("maximum", found_inf, bad));
  }
  a.ret(std::vector<Tensor>{});
}

void amp_update_scale(const OpHandle& self_op, Stack& s) {
  Args a(self_op, s);
  const Tensor scale = a.tensor(0), tracker = a.tensor(1), found_inf = a.tensor(2);
  const double growth = a.double_arg(3), backoff = a.double_arg(4);
  const int64_t interval = a.int_arg(5);
  Tensor skipped = op("gt", found_inf, wrapped(Scalar(0.0)));
  Tensor successful = op("add", tracker, wrapped(Scalar(int64_t(1))));
  Tensor grow = op("logical_and", op("eq", successful, wrapped(Scalar(interval))),
                   op("logical_not", skipped));
  Tensor grown = mul(scale, growth);
  grown = where(op("isfinite", grown), grown, scale);
  Tensor new_scale = where(skipped, mul(scale, backoff), where(grow, grown, scale));
  Tensor new_tracker = where(op("logical_or", skipped, grow), zeros_like(tracker), successful);
  op("copy_", scale, new_scale);
  op("copy_", tracker, new_tracker);
  // In place: the result is `self` itself (Args::ret refuses aliases of inputs).
  s.clear();
  s.emplace_back(scale);
}

}  // namespace ignis::decomp

// Loss decompositions: the per-element loss as pointwise ops, then the
// reduction. Arguments follow the ops' schemas (ops/nn.cpp), including the
// legacy size_average/reduce flags, which win over `reduction` when given,
// as in torch.nn.functional. The fused kernels accumulate in double; these
// compute in the op-math type of the result (float32 for float16/bfloat16,
// rounded once), as torch's decompositions do.
#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/ops/decomp/common.h"

namespace ignis::decomp {

using namespace grad_ops;  // NOLINT

namespace {

enum class Red { None, Mean, Sum, BatchMean };

// The reduction from the argument positions of size_average, reduce and
// reduction (-1 where the op has none).
Red reduction_of(const Args& a, int size_average, int reduce, int reduction) {
  const bool legacy = size_average >= 0 && (!a[size_average].is_none() || !a[reduce].is_none());
  if (legacy) {
    const bool avg = a[size_average].is_none() || a.bool_arg(size_average);
    if (!a[reduce].is_none() && !a.bool_arg(reduce)) return Red::None;
    return avg ? Red::Mean : Red::Sum;
  }
  const std::string& r = a.str(reduction);
  return r == "none" ? Red::None : r == "sum" ? Red::Sum : r == "batchmean" ? Red::BatchMean
                                                                           : Red::Mean;
}

// Reduces a per-element loss l: Mean divides by its element count, or by
// the sum of `weights` when given (weighted mse/l1: the weight as passed,
// not broadcast to l's shape, as torch.nn.functional sums it).
Tensor reduce_loss(const Tensor& l, Red r, const Tensor& weights = Tensor()) {
  if (r == Red::None) return l;
  Tensor total = reduce_sum(l, {}, false);
  if (r == Red::Sum) return total;
  if (weights.defined()) return div(total, reduce_sum(weights, {}, false));
  return div(total, wrapped(l.numel()));
}

// The operands of an elementwise loss, broadcast to one shape, in the
// compute type of the result dtype.
struct Operands {
  Tensor x, t, w, pw;
};
Operands operands(const Args& a, int weight, int pos_weight) {
  const ScalarType dt = a.dtype();
  Operands o;
  DimVector shape = broadcast_shapes(a.tensor(0).sizes(), a.tensor(1).sizes());
  if (weight >= 0 && a.opt(weight).defined())
    shape = broadcast_shapes(shape, a.tensor(weight).sizes());
  if (pos_weight >= 0 && a.opt(pos_weight).defined())
    shape = broadcast_shapes(shape, a.tensor(pos_weight).sizes());
  auto in = [&](const Tensor& t) { return t.defined() ? expand(up(t, dt), shape) : t; };
  o.x = in(a.tensor(0));
  o.t = in(a.tensor(1));
  if (weight >= 0) o.w = in(a.opt(weight));
  if (pos_weight >= 0) o.pw = in(a.opt(pos_weight));
  return o;
}

Tensor weighted(const Tensor& l, const Tensor& w) { return w.defined() ? mul(l, w) : l; }

}  // namespace

// mse_loss(input, target, size_average, reduce, reduction, weight):
// (input - target)^2; a weighted mean divides by the weights' sum.
void mse_loss(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Operands v = operands(a, 5, -1);
  Tensor d = sub(v.x, v.t);
  Tensor w = up(a.opt(5), a.dtype());
  a.ret(reduce_loss(weighted(mul(d, d), v.w), reduction_of(a, 2, 3, 4), w));
}

void l1_loss(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Operands v = operands(a, 5, -1);
  Tensor l = op("abs", sub(v.x, v.t));
  a.ret(reduce_loss(weighted(l, v.w), reduction_of(a, 2, 3, 4), up(a.opt(5), a.dtype())));
}

// smooth_l1_loss(..., beta): 0.5 d^2 / beta where |d| < beta, else
// |d| - 0.5 beta (|d| for beta = 0).
void smooth_l1_loss(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Operands v = operands(a, -1, -1);
  const double beta = a.double_arg(5);
  Tensor d = sub(v.x, v.t), ad = op("abs", d);
  Tensor l = ad;
  if (beta != 0) {
    Tensor quad = mul(mul(d, d), 0.5 / beta);
    l = where(cmp("lt", ad, scalar(beta)), quad, sub(ad, scalar(0.5 * beta)));
  }
  a.ret(reduce_loss(l, reduction_of(a, 2, 3, 4)));
}

// huber_loss(input, target, reduction, delta, weight): 0.5 d^2 where
// |d| < delta, else delta (|d| - 0.5 delta); the mean is over elements.
void huber_loss(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Operands v = operands(a, 4, -1);
  const double delta = a.double_arg(3);
  Tensor d = sub(v.x, v.t), ad = op("abs", d);
  Tensor l = where(cmp("lt", ad, scalar(delta)), mul(mul(d, d), 0.5),
                   mul(sub(ad, scalar(0.5 * delta)), delta));
  a.ret(reduce_loss(weighted(l, v.w), reduction_of(a, -1, -1, 2)));
}

// binary_cross_entropy(input, target, weight, ...): -(t log(x) +
// (1 - t) log(1 - x)), each log clamped at -100 as PyTorch does.
void binary_cross_entropy(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Operands v = operands(a, 2, -1);
  Tensor floor = scalar(-100.0);
  Tensor log_x = clamp(op("log", v.x), floor, Tensor());
  Tensor log_1mx = clamp(op("log1p", neg(v.x)), floor, Tensor());
  Tensor l = neg(add(mul(v.t, log_x), mul(sub(scalar(1.0), v.t), log_1mx)));
  a.ret(reduce_loss(weighted(l, v.w), reduction_of(a, 3, 4, 5)));
}

// binary_cross_entropy_with_logits(input, target, weight, ..., pos_weight):
// (1 - t) x + (1 + (pw - 1) t) softplus(-x), with softplus(-x) written
// -logsigmoid(x): it never overflows, and its derivative is -sigmoid(-x)
// everywhere. (Spelt log(1 + exp(-|x|)) + relu(-x), its gradient at x = 0
// was 0 instead of -1/2: relu's and abs's slopes at 0 are 0, so a logit
// that is exactly 0 -- a zero-initialised output layer -- got a wrong
// gradient.) The result has target's dtype (PyTorch computes into a tensor
// of that dtype).
void binary_cross_entropy_with_logits(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Operands v = operands(a, 2, 6);
  Tensor sp = neg(op("logsigmoid", v.x));
  Tensor lw = v.pw.defined() ? add(mul(sub(v.pw, scalar(1.0)), v.t), scalar(1.0)) : Tensor();
  Tensor l = add(mul(sub(scalar(1.0), v.t), v.x), lw.defined() ? mul(lw, sp) : sp);
  a.ret(reduce_loss(weighted(l, v.w), reduction_of(a, 3, 4, 5)));
}

// kl_div(input, target, ..., log_target): t (log t - x), 0 where t == 0;
// with log_target, exp(t) (t - x). 'batchmean' divides by the batch size.
void kl_div(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Operands v = operands(a, -1, -1);
  Tensor l;
  if (a.bool_arg(5)) {
    l = mul(op("exp", v.t), sub(v.t, v.x));
  } else {
    Tensor tlogt = mul(v.t, op("log", v.t));
    Tensor zero = wrapped_as(0, tlogt.dtype());
    l = sub(where(cmp("eq", v.t, scalar(0.0)), zero, tlogt), mul(v.t, v.x));
  }
  const Red r = reduction_of(a, 2, 3, 4);
  if (r != Red::BatchMean) return a.ret(reduce_loss(l, r));
  const Tensor& x = a.tensor(0);  // the batch is input's first dim
  a.ret(div(reduce_sum(l, {}, false), wrapped(x.dim() == 0 ? 1 : x.size(0))));
}

namespace {

// What nll_loss and cross_entropy with class indices share: for input
// log-probabilities lp [N, C, d...] (or [C]) and targets [N, d...],
//   picked = lp at each target's class, weight = w[target] (1 without w),
// both 0 where target == ignore_index.
struct Picked {
  Tensor picked, weight, valid;
  int64_t cdim;
};
Picked pick(const Tensor& lp, const Tensor& target, const Tensor& w, int64_t ignore) {
  Picked p;
  p.cdim = lp.dim() == 1 ? 0 : 1;
  Tensor t = convert(target, ScalarType::Int64);
  p.valid = cmp("ne", t, wrapped(ignore));
  Tensor safe = where(p.valid, t, wrapped_as(0, ScalarType::Int64));
  // A [C] input has one target ([] or [1]): gather one entry.
  Tensor idx = lp.dim() == 1 ? reshape(safe, DimVector{1}) : unsqueeze(safe, 1);
  Tensor g = OpRef("gather").tensor(lp, p.cdim, idx);
  p.picked = lp.dim() == 1 ? reshape(g, t.sizes()) : squeeze_dims(g, {1});
  Tensor mask = convert(p.valid, lp.dtype());
  if (w.defined()) {
    std::vector<Tensor> at{safe};
    p.weight = mul(OpRef("index.Tensor").tensor(w, IValue::OptTensors{std::move(at)}), mask);
  } else {
    p.weight = mask;
  }
  return p;
}

}  // namespace

// nll_loss(input, target, weight, size_average, ignore_index, reduce,
// reduction): -w[t] input[t]; the mean divides by the sum of w[t] over the
// targets that are not ignored.
void nll_loss(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const ScalarType dt = a.dtype();
  Tensor w = up(a.opt(2), dt);
  Picked p = pick(up(a.tensor(0), dt), a.tensor(1), w, a.int_arg(4));
  Tensor l = neg(mul(p.picked, p.weight));
  const Red r = reduction_of(a, 3, 5, 6);
  a.ret(r == Red::Mean ? div(reduce_sum(l, {}, false), reduce_sum(p.weight, {}, false))
                       : reduce_loss(l, r));
}

// cross_entropy(input, target, weight, size_average, ignore_index, reduce,
// reduction, label_smoothing), computed from lp = log_softmax(input) along
// the class dim. Class indices: (1 - eps) nll + eps / C * smooth, where
// smooth = -sum_c w_c lp_c (0 at ignored targets) and the mean divides both
// by the sum of w[t]. Class probabilities q = t (1 - eps) + eps / C:
// -sum_c w_c q_c lp_c, the mean over the N * d... positions.
void cross_entropy(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const ScalarType dt = a.dtype();
  const Tensor& input = a.tensor(0);
  const Tensor& target = a.tensor(1);
  const double eps = a.double_arg(7);
  const Red r = reduction_of(a, 3, 5, 6);
  const int64_t cdim = input.dim() == 1 ? 0 : 1;
  const int64_t C = input.size(cdim);
  Tensor lp = OpRef("log_softmax.int").tensor(up(input, dt), cdim);
  Tensor w = up(a.opt(2), dt);
  Tensor wb;  // the weight broadcast along the class dim
  if (w.defined()) {
    DimVector shape(static_cast<size_t>(input.dim() - cdim), 1);
    shape[0] = C;
    wb = reshape(w, shape);
  }
  if (input.sizes() == target.sizes()) {
    Tensor q = up(target, dt);
    if (eps > 0) q = add(mul(q, 1.0 - eps), scalar(eps / static_cast<double>(C)));
    Tensor l = neg(reduce_sum(weighted(mul(lp, q), wb), {cdim}, false));
    if (r != Red::Mean) return a.ret(reduce_loss(l, r));
    return a.ret(div(reduce_sum(l, {}, false), wrapped(input.numel() / std::max<int64_t>(C, 1))));
  }
  Picked p = pick(lp, target, w, a.int_arg(4));
  Tensor l = neg(mul(p.picked, p.weight));
  if (eps > 0) {
    Tensor smooth = neg(reduce_sum(weighted(lp, wb), {cdim}, false));
    smooth = mul(smooth, convert(p.valid, smooth.dtype()));
    l = add(mul(l, 1.0 - eps), mul(smooth, eps / static_cast<double>(C)));
  }
  if (r == Red::Mean) return a.ret(div(reduce_sum(l, {}, false), reduce_sum(p.weight, {}, false)));
  a.ret(reduce_loss(l, r));
}

}  // namespace ignis::decomp

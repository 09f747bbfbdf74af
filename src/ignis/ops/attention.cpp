// _scaled_dot_product_attention: attention as one op, so that autograd saves
// what a flash-style backward needs -- query, key, value, the output and the
// row log-sum-exp -- instead of the probability matrix the composite's parts
// would keep, and so that AOT and the compiler see attention whole (a
// template). scaled_dot_product_attention (ops/composite.cpp) calls it when
// there is no dropout.
//
// Forward: scores = q @ k^T * scale, masked (is_causal keeps j <= i; a bool
// mask keeps its True positions, a float mask is added); lse = logsumexp of
// each row; out = exp(scores - lse) @ v. A fully masked row has lse = -inf:
// its probabilities and output are zeros, as PyTorch's math kernel gives.
// Backward (the flash-attention identities): with p recomputed from lse,
//   dv = p^T @ dout          dp = dout @ v^T       D = rowsum(dout * out)
//   ds = p * (dp - D)        dq = ds @ k * scale   dk = ds^T @ q * scale
// and a float mask gets ds.
#include <limits>

#include "ignis/autograd/formula.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

using namespace grad_ops;  // NOLINT

OpRef matmul("matmul"), masked_fill("masked_fill"), logical_not("logical_not"),
    gt("gt"), arange("arange"), logsumexp("logsumexp"), eq("eq"), exp_op("exp"),
    transpose("transpose.int"), sum_dim("sum.dim_IntList");

const double kNegInf = -std::numeric_limits<double>::infinity();

Tensor last_two_swapped(const Tensor& t) { return transpose.tensor(t, int64_t(-2), int64_t(-1)); }

// q @ k^T * scale with the causal and explicit masks applied.
Tensor masked_scores(const Tensor& q, const Tensor& k, const Tensor& mask, bool causal,
                     double scale) {
  Tensor scores = matmul.tensor(mul(q, scale), last_two_swapped(k));
  if (causal) {
    const int64_t L = q.sizes()[q.dim() - 2], S = k.sizes()[k.dim() - 2];
    Tensor i = arange.tensor(L, IValue(), IValue(q.device()));
    Tensor j = arange.tensor(S, IValue(), IValue(q.device()));
    scores = masked_fill.tensor(scores, gt.tensor(unsqueeze(j, 0), unsqueeze(i, 1)), scalar(kNegInf));
  }
  if (mask.defined()) {
    if (mask.dtype() == ScalarType::Bool)
      scores = masked_fill.tensor(scores, logical_not.tensor(mask), scalar(kNegInf));
    else
      scores = add(scores, mask);
  }
  return scores;
}

// exp(scores - lse) with fully masked rows (lse = -inf) giving zeros.
Tensor probabilities(const Tensor& scores, const Tensor& lse) {
  Tensor safe = masked_fill.tensor(lse, eq.tensor(lse, scalar(kNegInf)), scalar(0.0));
  return exp_op.tensor(sub(scores, unsqueeze(safe, -1)));
}

void sdpa_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor q = s[0].to_tensor(), k = s[1].to_tensor(), v = s[2].to_tensor();
  Tensor mask = s[3].to_opt_tensor();
  bool causal = s[4].to_bool();
  double scale = s[5].to_double();
  Tensor scores = masked_scores(q, k, mask, causal, scale);
  Tensor lse = logsumexp.tensor(scores, std::vector<int64_t>{-1}, false);
  Tensor out = matmul.tensor(probabilities(scores, lse), v);
  s.clear();
  s.emplace_back(std::move(out));
  s.emplace_back(std::move(lse));
}

void sdpa_bw(GradCtx& c) {
  const Tensor &q = c.in(0), &k = c.in(1), &v = c.in(2);
  Tensor mask = c.opt_in(3);
  bool causal = c.bool_arg(4);
  double scale = c.double_arg(5);
  const Tensor& out = c.result(0);
  const Tensor& lse = c.result(1);
  const Tensor& g = c.grad(0);
  Tensor p = probabilities(masked_scores(q, k, mask, causal, scale), lse);
  c.set(2, matmul.tensor(last_two_swapped(p), g));
  Tensor dp = matmul.tensor(g, last_two_swapped(v));
  Tensor d = sum_dim.tensor(mul(g, out), std::vector<int64_t>{-1}, true);
  Tensor ds = mul(p, sub(dp, d));
  c.set(0, mul(matmul.tensor(ds, k), scale));
  c.set(1, mul(matmul.tensor(last_two_swapped(ds), q), scale));
  if (mask.defined() && is_floating(mask.dtype())) c.set(3, ds);
}

}  // namespace

void register_attention_ops() {
  def("_scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
      "Tensor? attn_mask=None, bool is_causal=False, float scale=1.0) "
      "-> (Tensor output, Tensor logsumexp)")
      .category(OpCategory::Template)
      .core()  // a template: kept whole, the compiler fills an attention kernel
      .kernel(sdpa_kernel)
      .derivative(sdpa_bw, "query, key, value, attn_mask, result, result1")
      .doc("attention with its row log-sum-exp; the backward recomputes the probabilities");
}

}  // namespace ignis

// Ops written only in terms of other ops: linear and
// scaled_dot_product_attention. Being composites, they are also registered
// at the autograd keys, so autograd records their parts.
#include <cmath>
#include <limits>

#include "ignis/kernels/cpu/nn_util.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

using cpu::cpp_type_name;

OpRef addmm_op("addmm"), matmul_op("matmul"), add_op("add"), t_op("t"), view_op("view"),
    mul_op("mul"), transpose_op("transpose.int"), masked_fill_op("masked_fill"),
    logical_not_op("logical_not"), gt_op("gt"), arange_op("arange"), unsqueeze_op("unsqueeze"),
    expand_op("expand"), reshape_op("reshape"), safe_softmax_op("_safe_softmax"),
    dropout_op("dropout");

void ret(Stack& s, Tensor t) {
  s.clear();
  s.emplace_back(std::move(t));
}

Tensor wrapped(double v) { return scalar_to_tensor(v, ScalarType::Float64, true); }

// linear(input, weight, bias=None) = input @ weight.T + bias. A 2-D input,
// or a contiguous batched one folded to 2-D, takes one addmm (the bias add
// fused into the product).
void linear_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor input = s[0].to_tensor(), weight = s[1].to_tensor();
  Tensor bias = s[2].to_opt_tensor();
  IGNIS_CHECK(input.dim() > 0 && weight.dim() > 0, "both arguments to linear need to be at "
              "least 1D, but they are ", input.dim(), "D and ", weight.dim(), "D");
  Tensor wt = t_op.tensor(weight);
  if (bias.defined() && input.dim() == 2) return ret(s, addmm_op.tensor(bias, input, wt));
  if (bias.defined() && input.dim() > 2 && input.is_contiguous() && weight.dim() == 2) {
    std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end() - 1);
    int64_t rows = 1;
    for (int64_t v : shape) rows *= v;
    Tensor flat = view_op.tensor(input, std::vector<int64_t>{rows, input.sizes().back()});
    shape.push_back(weight.sizes()[0]);
    return ret(s, view_op.tensor(addmm_op.tensor(bias, flat, wt), shape));
  }
  Tensor out = matmul_op.tensor(input, wt);
  if (bias.defined()) out = add_op.tensor(out, bias);
  ret(s, out);
}

// [..., H, S, E] -> [..., H * r, S, E], each head repeated r times in a row
// (repeat_interleave along dim -3), for grouped-query attention.
Tensor repeat_heads(const Tensor& x, int64_t r) {
  if (r == 1) return x;
  const int64_t nd = x.dim();
  Tensor u = unsqueeze_op.tensor(x, nd - 2);
  std::vector<int64_t> shape(u.sizes().begin(), u.sizes().end());
  shape[nd - 2] = r;
  Tensor e = expand_op.tensor(u, shape);
  std::vector<int64_t> out(x.sizes().begin(), x.sizes().end());
  out[nd - 3] *= r;
  return reshape_op.tensor(e, out);
}

// scaled_dot_product_attention(query, key, value, attn_mask=None,
//   dropout_p=0., is_causal=False, *, scale=None, enable_gqa=False):
// softmax(q @ k^T * scale + mask) @ v over [..., L, E] x [..., S, E]. A bool
// mask keeps the True positions, a float mask is added; is_causal keeps
// j <= i (top-left aligned, like torch's tril), combined with any mask.
// Fully masked rows give zeros, as PyTorch's math kernel does.
void sdpa_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor q = s[0].to_tensor(), k = s[1].to_tensor(), v = s[2].to_tensor();
  Tensor mask = s[3].to_opt_tensor();
  const double dropout_p = s[4].to_double();
  const bool causal = s[5].to_bool();
  const bool gqa = s[7].to_bool();
  IGNIS_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, "Expected query, key, and value to "
              "all be  at least 2 dimensional, but got query.dim: ", q.dim(), " key.dim: ",
              k.dim(), " and value.dim: ", v.dim(), " instead.");
  IGNIS_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), "Expected query, key, and value "
              "to have the same dtype, but got query.dtype: ", cpp_type_name(q.dtype()),
              " key.dtype: ", cpp_type_name(k.dtype()), " and value.dtype: ",
              cpp_type_name(v.dtype()), " instead.");
  IGNIS_CHECK(is_floating(q.dtype()), "scaled_dot_product_attention: expected a floating point "
              "query, key and value, but got ", dtype_name(q.dtype()));
  IGNIS_CHECK(!mask.defined() || mask.dtype() == ScalarType::Bool || mask.dtype() == q.dtype(),
              "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
              "attn_mask.dtype: ", cpp_type_name(mask.defined() ? mask.dtype() : q.dtype()),
              " and  query.dtype: ", cpp_type_name(q.dtype()), " instead.");
  IGNIS_CHECK_VALUE(dropout_p >= 0 && dropout_p <= 1, "dropout probability has to be between 0 "
                    "and 1, but got ", dropout_p);
  if (gqa && q.dim() >= 3 && k.dim() >= 3 && v.dim() >= 3) {
    const int64_t hq = q.sizes()[q.dim() - 3], hk = k.sizes()[k.dim() - 3],
                  hv = v.sizes()[v.dim() - 3];
    IGNIS_CHECK(hk > 0 && hv > 0 && hq % hk == 0 && hq % hv == 0, "Number of heads in key and "
                "value must divide the number of heads in query");
    k = repeat_heads(k, hq / hk);
    v = repeat_heads(v, hq / hv);
  }
  const int64_t L = q.sizes()[q.dim() - 2], S = k.sizes()[k.dim() - 2];
  const int64_t E = q.sizes()[q.dim() - 1];
  const double scale = s[6].is_none() ? 1.0 / std::sqrt(static_cast<double>(E)) : s[6].to_double();
  if (dropout_p == 0) {
    // One op: autograd saves q, k, v, out and lse, not the probabilities.
    static OpRef fused("_scaled_dot_product_attention");
    Stack r = fused.call(q, k, v, mask, causal, scale);
    return ret(s, r.at(0).to_tensor());
  }
  Tensor scores = matmul_op.tensor(mul_op.tensor(q, wrapped(scale)),
                                   transpose_op.tensor(k, int64_t(-2), int64_t(-1)));
  const Tensor ninf = wrapped(-std::numeric_limits<double>::infinity());
  if (causal) {
    Tensor i = arange_op.tensor(L, IValue(), q.user_device());
    Tensor j = arange_op.tensor(S, IValue(), q.user_device());
    Tensor above =
        gt_op.tensor(unsqueeze_op.tensor(j, int64_t(0)), unsqueeze_op.tensor(i, int64_t(1)));
    scores = masked_fill_op.tensor(scores, above, ninf);
  }
  if (mask.defined()) {
    if (mask.dtype() == ScalarType::Bool)
      scores = masked_fill_op.tensor(scores, logical_not_op.tensor(mask), ninf);
    else
      scores = add_op.tensor(scores, mask);
  }
  Tensor attn = safe_softmax_op.tensor(scores, int64_t(-1));
  if (dropout_p > 0) attn = dropout_op.tensor(attn, dropout_p, true);
  ret(s, matmul_op.tensor(attn, v));
}


// round(self, decimals=d): as torch's kernel, x * 10^d rounded half to even,
// then / 10^d (for d < 0: x / 10^-d rounded, then * 10^-d).
void round_decimals_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  static OpRef round_op("round"), div_op("div");
  Tensor self = s[0].to_tensor();
  const int64_t d = s[1].to_int();
  if (d == 0 || !is_floating(self.dtype())) return ret(s, round_op.tensor(self));
  Tensor scale = wrapped(std::pow(10.0, static_cast<double>(d < 0 ? -d : d)));
  if (d > 0) return ret(s, div_op.tensor(round_op.tensor(mul_op.tensor(self, scale)), scale));
  ret(s, mul_op.tensor(round_op.tensor(div_op.tensor(self, scale)), scale));
}

}  // namespace

void register_composite_ops() {
  def("round.decimals(Tensor self, *, int decimals) -> Tensor")
      .category(OpCategory::Composite).composite(round_decimals_kernel)
      .doc("round half to even at `decimals` decimal places");
  def("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor")
      .category(OpCategory::Composite).composite(linear_kernel)
      .doc("input @ weight.T + bias (weight is [out_features, in_features])");
  def("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor")
      .category(OpCategory::Composite).composite(sdpa_kernel)
      .random()  // dropout_p > 0 draws a dropout mask
      .doc("softmax(query @ key^T * scale + mask) @ value");
}

}  // namespace ignis

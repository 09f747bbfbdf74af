// nn decompositions: the softmax family, layer/RMS normalisation (and
// layer norm's backward), normalize, cosine_similarity, dropout,
// embedding and one_hot. Float16/bfloat16 inputs are computed in float32 and
// rounded once, as the fused kernels (kernels/cpu/softmax, norm) do;
// weights are converted to float32 directly, as the kernels read them.
#include <limits>

#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/ops/decomp/common.h"

namespace ignis::decomp {

using namespace grad_ops;  // NOLINT

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// finfo(t).eps: rms_norm's default eps.
double finfo_eps(ScalarType t) {
  switch (t) {
    case ScalarType::Float16: return 0.0009765625;
    case ScalarType::BFloat16: return 0.0078125;
    case ScalarType::Float32: return 1.1920928955078125e-07;
    default: return 2.220446049250313e-16;
  }
}

// x's sizes with the normalized (last k) dims set to 1: the shape of
// layer norm's mean and rstd.
DimVector stat_shape(const Tensor& x, size_t k) {
  DimVector s = x.sizes();
  for (size_t i = s.size() - k; i < s.size(); ++i) s[i] = 1;
  return s;
}
}  // namespace

// softmax.int, log_softmax.int and _safe_softmax (self, dim, dtype): with
// m the max along dim, exp(x - m) / sum(exp(x - m)), or
// (x - m) - log(sum(exp(x - m))). _safe_softmax gives 0 for slices whose
// max is -inf (fully masked), where softmax gives NaN.
void softmax(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  Tensor xf = up(x, a.dtype());  // `dtype` converts the input first
  if (x.numel() == 0) return a.ret(op("exp", xf));
  const std::vector<int64_t> dim{wrap_dim(a.int_arg(1), x.dim())};
  Tensor m = reduce_amax(xf, dim, true);
  Tensor shifted = sub(xf, m);
  if (a.name() == "log_softmax")
    return a.ret(sub(shifted, op("log", reduce_sum(op("exp", shifted), dim, true))));
  // Times the sum's reciprocal, as the eager kernel computes it: one
  // division per slice rather than per element (a vector division costs
  // several multiplies), and the compiled softmax rounds as eager's does.
  Tensor e = op("exp", shifted);
  Tensor out = mul(e, op("reciprocal", reduce_sum(e, dim, true)));
  if (a.name() == "_safe_softmax") {
    Tensor masked = cmp("eq", m, scalar(-kInf));
    out = where(masked, wrapped_as(0, out.dtype()), out);
  }
  a.ret(out);
}

// native_layer_norm(input, normalized_shape, weight, bias, eps) ->
// (out, mean, rstd) over the last len(normalized_shape) dims; mean and rstd
// keep those dims as 1 and have the input's dtype.
void native_layer_norm(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const ScalarType acc = opmath(x.dtype());
  const std::vector<int64_t> dims = last_dims(x.dim(), a.ints(1).size());
  Tensor xf = up(x, x.dtype());
  Tensor mu = reduce_mean(xf, dims, true);
  Tensor xc = sub(xf, mu);
  Tensor rstd = op("rsqrt", add(reduce_mean(mul(xc, xc), dims, true), scalar(a.double_arg(4))));
  Tensor y = mul(xc, rstd);
  if (a.opt(2).defined()) y = mul(y, convert(a.tensor(2), acc));
  if (a.opt(3).defined()) y = add(y, convert(a.tensor(3), acc));
  a.ret({y, mu, rstd});
}

// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd,
// weight, bias) -> (grad_input, grad_weight, grad_bias), the closed form the
// fused kernel computes: with xhat = (x - mean) rstd and gw = grad * weight,
//   grad_input = rstd (gw - mean(gw) - xhat mean(gw xhat))
//   grad_weight = sum over rows of grad xhat, grad_bias = sum of grad
// (None where weight / bias is None).
void native_layer_norm_backward(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(1);
  const ScalarType dt = x.dtype(), acc = opmath(dt);
  const size_t k = a.ints(2).size();
  const std::vector<int64_t> dims = last_dims(x.dim(), k);
  std::vector<int64_t> rows;  // the leading, not normalized, dims
  for (int64_t d = 0; d < x.dim() - static_cast<int64_t>(k); ++d) rows.push_back(d);
  auto sum_rows = [&](const Tensor& t) { return rows.empty() ? t : reduce_sum(t, rows, false); };

  Tensor g = up(a.tensor(0), dt), xf = up(x, dt);
  Tensor mu = reshape(convert(a.tensor(3), acc), stat_shape(x, k));
  Tensor rs = reshape(convert(a.tensor(4), acc), stat_shape(x, k));
  Tensor w = a.opt(5);
  Tensor xhat = mul(sub(xf, mu), rs);
  Tensor gw = w.defined() ? mul(g, convert(w, acc)) : g;
  Tensor mean_gw = reduce_mean(gw, dims, true);
  Tensor mean_gwx = reduce_mean(mul(gw, xhat), dims, true);
  Tensor dx = mul(rs, sub(sub(gw, mean_gw), mul(xhat, mean_gwx)));
  Tensor dw = w.defined() ? sum_rows(mul(g, xhat)) : Tensor();
  Tensor db = a.opt(6).defined() ? sum_rows(g) : Tensor();
  a.ret({dx, dw, db});
}

// rms_norm(input, normalized_shape, weight, eps): x / sqrt(mean(x^2) + eps)
// * weight; eps defaults to finfo(input.dtype).eps.
void rms_norm(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const double eps = a[3].is_none() ? finfo_eps(x.dtype()) : a.double_arg(3);
  const std::vector<int64_t> dims = last_dims(x.dim(), a.ints(1).size());
  Tensor xf = up(x, x.dtype());
  Tensor r = op("rsqrt", add(reduce_mean(mul(xf, xf), dims, true), scalar(eps)));
  Tensor y = mul(xf, r);
  if (a.opt(2).defined()) y = mul(y, convert(a.tensor(2), opmath(x.dtype())));
  a.ret(y);
}

// normalize(input, p, dim, eps) = input / max(||input||_p, eps) along dim.
void normalize(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  Tensor xf = up(x, a.dtype());
  const std::vector<int64_t> dim{wrap_dim(a.int_arg(2), x.dim())};
  Tensor n = vector_norm(xf, a.double_arg(1), dim, true);
  a.ret(div(xf, clamp(n, wrapped(a.double_arg(3)), Tensor())));
}

// cosine_similarity(x1, x2, dim, eps) = sum(x1 x2) / (max(||x1||, eps)
// max(||x2||, eps)) along dim, x1 and x2 broadcast against each other.
void cosine_similarity(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const ScalarType dt = a.dtype();
  const DimVector shape = broadcast_shapes(a.tensor(0).sizes(), a.tensor(1).sizes());
  Tensor x1 = expand(up(a.tensor(0), dt), shape), x2 = expand(up(a.tensor(1), dt), shape);
  const std::vector<int64_t> dim{wrap_dim(a.int_arg(2), static_cast<int64_t>(shape.size()))};
  Tensor eps = wrapped(a.double_arg(3));
  Tensor n1 = clamp(vector_norm(x1, 2.0, dim, false), eps, Tensor());
  Tensor n2 = clamp(vector_norm(x2, 2.0, dim, false), eps, Tensor());
  a.ret(div(reduce_sum(mul(x1, x2), dim, false), mul(n1, n2)));
}

// native_dropout(input, p, train) -> (input * mask / (1 - p), mask) with
// mask = rand < 1 - p: the generator op (rand) is core and random. It draws
// the fused kernel's numbers (Note [Uniform floats are dropout's numbers],
// kernels/cpu/fill.cpp), so a traced dropout repeats eager's mask and values
// for the same seed (torch.compile's does not).
void native_dropout(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const Device dev = x.device();
  const bool train = a[2].is_none() || a.bool_arg(2);
  if (!train) {
    Tensor all = OpRef("full").tensor(x.sizes().vec(), Scalar(true), ScalarType::Bool, dev);
    return a.ret({OpRef("clone").tensor(x), all});
  }
  const double p = a.double_arg(1);
  Tensor u = OpRef("rand").tensor(x.sizes().vec(), ScalarType::Float32, dev);
  Tensor mask = cmp("lt", u, scalar(1.0 - p));
  Tensor kept = mul(up(x, x.dtype()), scalar(p < 1 ? 1.0 / (1.0 - p) : 0.0));
  a.ret({where(mask, kept, wrapped_as(0, kept.dtype())), mask});
}

// embedding(weight, indices, ...) = weight[indices]: padding_idx and
// scale_grad_by_freq only change the derivative, which autograd has taken
// from embedding's own formula before AOT decomposes.
void embedding(const OpHandle& o, Stack& s) {
  Args a(o, s);
  std::vector<Tensor> idx{convert(a.tensor(1), ScalarType::Int64)};
  a.ret(OpRef("index.Tensor").tensor(a.tensor(0), IValue::OptTensors{std::move(idx)}));
}

// one_hot(self, num_classes) = (self[..., None] == arange(num_classes)) as
// int64. Like torch's decomposition it does not check that the classes are
// in range (that needs the data); num_classes=-1 needs the data to infer
// the count, so it only decomposes on real tensors.
void one_hot(const OpHandle& o, Stack& s) {
  const bool inferred = s[1].to_int() < 0;
  Args a(o, s, !inferred);
  const Tensor& x = a.tensor(0);
  int64_t classes = a.int_arg(1);
  if (inferred) {
    IGNIS_CHECK(x.dtype() == ScalarType::Int64,
                "one_hot is only applicable to index tensor of type LongTensor.");
    IGNIS_CHECK(!x.device().is_meta() && x.numel() > 0, "one_hot: num_classes=-1 needs the "
                "data of a non-empty tensor; pass num_classes");
    classes = reduce_amax(x, {}, false).item_int() + 1;
  }
  Tensor hit = cmp("eq", unsqueeze(x, -1), iota(classes, x.device()));
  a.ret(convert(hit, ScalarType::Int64));
}

}  // namespace ignis::decomp

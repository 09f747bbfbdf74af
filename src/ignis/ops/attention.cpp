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
//
// Kernels: on the CPU both directions are fused, flash-style kernels
// (kernels/cpu/attention.h) that never hold the L x S scores. On CUDA,
// float16/bfloat16 with head dims up to 128 (is_causal and a bool or float
// attn_mask are fine; a float mask's gradient is not) run the flash kernels (kernels/cuda/flash_attention.h, tensor
// cores); everything else runs the formulas above written with ops (matmul
// on cuBLASLt, the masks, logsumexp and exp as pointwise and reduction
// kernels), which hold the scores. The backward is its own op,
// _scaled_dot_product_attention_backward, which autograd calls when grad
// mode is off inside backward (the usual case) on the CPU, and on CUDA when
// the flash kernels apply. With create_graph the derivative differentiates a
// recomputation of the forward from differentiable ops (so that double
// backward is right); on CUDA without the flash kernels it is the formula
// above, written with ops. float16/bfloat16 compute in float32 and
// round once; their lse stays float32 (it is only read back by the
// backward, where a 16-bit lse would put a relative error of about 2^-8 *
// |lse| on every probability).
#include <limits>

#include "ignis/autograd/formula.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/kernels/cpu/attention.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/nn_util.h"
#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/kernels/cuda/flash_attention.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

using namespace grad_ops;  // NOLINT

OpRef matmul("matmul"), logsumexp("logsumexp"), masked_fill("masked_fill"),
    logical_not("logical_not"),
    gt("gt"), arange("arange"), eq("eq"), exp_op("exp"),
    transpose("transpose.int"), sum_dim("sum.dim_IntList"), safe_softmax("_safe_softmax");

const double kNegInf = -std::numeric_limits<double>::infinity();

Tensor last_two_swapped(const Tensor& t) { return transpose.tensor(t, int64_t(-2), int64_t(-1)); }

// q @ k^T * scale with the causal and explicit masks applied.
Tensor masked_scores(const Tensor& q, const Tensor& k, const Tensor& mask, bool causal,
                     double scale) {
  Tensor scores = matmul.tensor(mul(q, scale), last_two_swapped(k));
  if (causal) {
    const int64_t L = q.sizes()[q.dim() - 2], S = k.sizes()[k.dim() - 2];
    Tensor i = arange.tensor(L, IValue(), IValue(q.user_device()));
    Tensor j = arange.tensor(S, IValue(), IValue(q.user_device()));
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

// float32 for float16/bfloat16 (what the kernels compute in), else dt.
ScalarType compute_dtype(ScalarType dt) {
  return dt == ScalarType::Float16 || dt == ScalarType::BFloat16 ? ScalarType::Float32 : dt;
}

DimVector leading(const Tensor& t) { return DimVector(t.sizes().begin(), t.sizes().end() - 2); }
DimVector with_last(DimVector batch, std::initializer_list<int64_t> last) {
  for (int64_t d : last) batch.push_back(d);
  return batch;
}

// The shapes of one attention call, checked: batch dims are the broadcast of
// those of q, k, v (and of the mask's, beyond its last two).
struct Shapes {
  DimVector batch;
  int64_t L, S, E, Ev;
};

Shapes check_shapes(const char* name, const Tensor& q, const Tensor& k, const Tensor& v,
                    const Tensor& mask) {
  for (const Tensor* t : {&q, &k, &v})
    IGNIS_CHECK(t->dim() >= 2, name, ": query, key and value must have at least 2 dims, got ",
                t->shape_str());
  IGNIS_CHECK(is_floating(q.dtype()), name, ": expected a floating query, got ",
              dtype_name(q.dtype()));
  IGNIS_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype(), name,
              ": expected query, key and value of one dtype, got ", dtype_name(q.dtype()), ", ",
              dtype_name(k.dtype()), " and ", dtype_name(v.dtype()));
  Shapes sh;
  sh.L = q.sizes()[q.dim() - 2];
  sh.E = q.sizes()[q.dim() - 1];
  sh.S = k.sizes()[k.dim() - 2];
  sh.Ev = v.sizes()[v.dim() - 1];
  IGNIS_CHECK(k.sizes()[k.dim() - 1] == sh.E, name, ": query ", q.shape_str(), " and key ",
              k.shape_str(), " differ in the last dim");
  IGNIS_CHECK(v.sizes()[v.dim() - 2] == sh.S, name, ": key ", k.shape_str(), " and value ",
              v.shape_str(), " differ in sequence length");
  sh.batch = broadcast_shapes(broadcast_shapes(leading(q), leading(k)), leading(v));
  if (mask.defined()) {
    IGNIS_CHECK(mask.dtype() == ScalarType::Bool || is_floating(mask.dtype()), name,
                ": attn_mask must be bool or floating, got ", dtype_name(mask.dtype()));
    DimVector full = broadcast_shapes(with_last(sh.batch, {sh.L, sh.S}), mask.sizes());
    IGNIS_CHECK(full[full.size() - 2] == sh.L && full[full.size() - 1] == sh.S, name,
                ": attn_mask ", mask.shape_str(), " does not broadcast to the scores' [",
                sh.L, ", ", sh.S, "]");
    sh.batch = DimVector(full.begin(), full.end() - 2);
  }
  return sh;
}

// t as the kernels read it: dtype dt with contiguous rows (a copy only when
// needed; rows may lie any distance apart, so q, k and v sliced out of one
// fused projection and transposed to [B, H, L, E] are read in place), its
// batch dims broadcast to `batch` as a view.
Tensor rows_as(const Tensor& t, ScalarType dt, const DimVector& batch) {
  const int64_t n = t.dim();
  const auto& sz = t.sizes();
  const auto& st = t.strides();
  bool dense = t.dtype() == dt && (sz[n - 1] <= 1 || st[n - 1] == 1);
  Tensor x = t;
  if (!dense) {
    x = empty_tensor(t.sizes(), dt, t.device());
    copy_into(x, t);
  }
  return cpu::broadcast_view(x, with_last(batch, {sz[n - 2], sz[n - 1]}));
}

// The mask as the kernels read it: bool, or a float mask in dt; any strides.
Tensor mask_as(const Tensor& mask, ScalarType dt, const Shapes& sh) {
  if (!mask.defined()) return mask;
  Tensor m = mask;
  if (m.dtype() != ScalarType::Bool && m.dtype() != dt) {
    m = empty_tensor(mask.sizes(), dt, mask.device());
    copy_into(m, mask);
  }
  return cpu::broadcast_view(m, with_last(sh.batch, {sh.L, sh.S}));
}

// A kernel output in dt: `out` itself, or a temporary rounded into it later.
Tensor out_as(const Tensor& out, ScalarType dt) {
  return out.dtype() == dt ? out : empty_tensor(out.sizes(), dt, out.device());
}
void round_into(const Tensor& out, const Tensor& tmp) {
  if (tmp.defined() && !tmp.is_same(out)) copy_into(out, tmp);
}

// An attention output of `sizes` laid out as `like` is on CUDA, as torch's
// fused CUDA attention allocates them (empty_like of the query for the
// output, of q, k and v for their gradients): for the usual q =
// x.view(B, T, H, E).transpose(1, 2) the output's transpose(1, 2) back to
// [B, T, H, E] is then a view, not a copy, and so are the gradients' on
// their way back to x. Contiguous elsewhere.
void alloc_like_input(OpCall& c, const Tensor& like, const DimVector& sizes, ScalarType dt) {
  if (like.user_device().is_cuda() && like.sizes() == sizes)
    c.alloc_strided(sizes, like_strides(like), dt);
  else
    c.alloc(sizes, dt);
}

// output [B..., L, Ev] of the input dtype; logsumexp [B..., L], float32 for
// 16-bit inputs (see the top of the file).
void sdpa_meta(OpCall& c) {
  const Tensor &q = c.tensor(0), &k = c.tensor(1), &v = c.tensor(2);
  Shapes sh = check_shapes("scaled_dot_product_attention", q, k, v, c.opt_tensor(3));
  alloc_like_input(c, q, with_last(sh.batch, {sh.L, sh.Ev}), q.dtype());
  c.alloc(with_last(sh.batch, {sh.L}), compute_dtype(q.dtype()));
}

void sdpa_cpu(OpCall& c) {
  const Tensor &q = c.tensor(0), &k = c.tensor(1), &v = c.tensor(2);
  const Tensor mask = c.opt_tensor(3);
  Shapes sh = check_shapes("scaled_dot_product_attention", q, k, v, mask);
  const ScalarType dt = compute_dtype(q.dtype());
  Tensor out = out_as(c.outputs[0], dt);
  cpu::attention_forward_into(out, c.outputs[1], rows_as(q, dt, sh.batch),
                              rows_as(k, dt, sh.batch), rows_as(v, dt, sh.batch),
                              mask_as(mask, dt, sh), c.bool_arg(4), c.double_arg(5));
  round_into(c.outputs[0], out);
}

// _scaled_dot_product_attention_backward -> (grad_query, grad_key,
// grad_value, grad_attn_mask), over the full broadcast batch (autograd sums
// broadcast dims); grad_attn_mask is only computed when mask_grad is set
// (a float mask that needs a gradient), else None.
void sdpa_backward_meta(OpCall& c) {
  const Tensor &g = c.tensor(0), &q = c.tensor(1), &k = c.tensor(2), &v = c.tensor(3);
  const Tensor mask = c.opt_tensor(4);
  const char* name = "_scaled_dot_product_attention_backward";
  Shapes sh = check_shapes(name, q, k, v, mask);
  const DimVector osz = with_last(sh.batch, {sh.L, sh.Ev});
  IGNIS_CHECK(g.sizes() == osz && c.tensor(5).sizes() == osz, name, ": grad_out ",
              g.shape_str(), " and out ", c.tensor(5).shape_str(), " must be ", shape_str(osz));
  IGNIS_CHECK(c.tensor(6).sizes() == with_last(sh.batch, {sh.L}), name, ": logsumexp ",
              c.tensor(6).shape_str(), " does not match the output");
  const bool mask_grad = c.bool_arg(9);
  IGNIS_CHECK(!mask_grad || (mask.defined() && is_floating(mask.dtype())), name,
              ": mask_grad needs a floating attn_mask");
  alloc_like_input(c, q, with_last(sh.batch, {sh.L, sh.E}), q.dtype());
  alloc_like_input(c, k, with_last(sh.batch, {sh.S, sh.E}), q.dtype());
  alloc_like_input(c, v, with_last(sh.batch, {sh.S, sh.Ev}), q.dtype());
  if (mask_grad) c.alloc(with_last(sh.batch, {sh.L, sh.S}), mask.dtype());
  else c.outputs.emplace_back();
}

void sdpa_backward_cpu(OpCall& c) {
  const Tensor &q = c.tensor(1), &k = c.tensor(2), &v = c.tensor(3);
  const Tensor mask = c.opt_tensor(4);
  Shapes sh = check_shapes("_scaled_dot_product_attention_backward", q, k, v, mask);
  const ScalarType dt = compute_dtype(q.dtype());
  Tensor dq = out_as(c.outputs[0], dt), dk = out_as(c.outputs[1], dt),
         dv = out_as(c.outputs[2], dt);
  Tensor dm = c.outputs[3].defined() ? out_as(c.outputs[3], dt) : Tensor();
  Tensor lse = rows_as(unsqueeze(c.tensor(6), -1), dt, sh.batch);
  cpu::attention_backward_into(
      dq, dk, dv, dm, rows_as(c.tensor(0), dt, sh.batch), rows_as(q, dt, sh.batch),
      rows_as(k, dt, sh.batch), rows_as(v, dt, sh.batch), mask_as(mask, dt, sh),
      rows_as(c.tensor(5), dt, sh.batch), lse, c.bool_arg(7), c.double_arg(8));
  round_into(c.outputs[0], dq);
  round_into(c.outputs[1], dk);
  round_into(c.outputs[2], dv);
  if (dm.defined()) round_into(c.outputs[3], dm);
}

// The backward formula of the file comment, from ops: dq, dk, dv and ds
// (which is a float mask's gradient), over the broadcast batch.
struct AttentionGrads {
  Tensor dq, dk, dv, ds;
};
AttentionGrads backward_by_ops(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& mask, const Tensor& out, const Tensor& lse,
                               bool causal, double scale) {
  AttentionGrads r;
  Tensor p = probabilities(masked_scores(q, k, mask, causal, scale), lse);
  r.dv = matmul.tensor(last_two_swapped(p), g);
  Tensor dp = matmul.tensor(g, last_two_swapped(v));
  Tensor d = sum_dim.tensor(mul(g, out), std::vector<int64_t>{-1}, true);
  r.ds = mul(p, sub(dp, d));
  r.dq = mul(matmul.tensor(r.ds, k), scale);
  r.dk = mul(matmul.tensor(last_two_swapped(r.ds), q), scale);
  return r;
}

// The CUDA kernels: the formulas through ops, in the compute dtype (float32
// for 16-bit inputs), rounded into the outputs. Autograd is excluded: these
// are one op's kernel, whose parts are not recorded.
Tensor in_dtype(const Tensor& t, ScalarType dt) {
  return t.defined() && t.dtype() != dt && is_floating(t.dtype()) ? to_dtype(t, dt) : t;
}

// lse as the flash backward reads it: float32, contiguous.
Tensor contiguous_float(const Tensor& t) {
  if (t.dtype() == ScalarType::Float32 && t.is_contiguous()) return t;
  Tensor x = empty_tensor(t.sizes(), ScalarType::Float32, t.device());
  copy_into(x, t);
  return x;
}

void sdpa_cuda(OpCall& c) {
  ExcludeDispatchKeyGuard no_autograd(kAutogradKeys);
  {
    const Tensor &q = c.tensor(0), &k = c.tensor(1), &v = c.tensor(2);
    const Tensor mask = c.opt_tensor(3);
    if (!cuda::flash_attention_unsupported(q, k, v, mask)) {
      Shapes sh = check_shapes("scaled_dot_product_attention", q, k, v, mask);
      const ScalarType dt = q.dtype();
      cuda::flash_attention_forward(c.outputs[0], c.outputs[1], rows_as(q, dt, sh.batch),
                                    rows_as(k, dt, sh.batch), rows_as(v, dt, sh.batch),
                                    mask_as(mask, dt, sh), c.bool_arg(4), c.double_arg(5));
      return;
    }
  }
  const ScalarType dt = compute_dtype(c.tensor(0).dtype());
  Tensor q = in_dtype(c.tensor(0), dt), k = in_dtype(c.tensor(1), dt);
  Tensor v = in_dtype(c.tensor(2), dt);
  Tensor scores =
      masked_scores(q, k, in_dtype(c.opt_tensor(3), dt), c.bool_arg(4), c.double_arg(5));
  Tensor lse = logsumexp.tensor(scores, std::vector<int64_t>{-1}, false);
  copy_into(c.outputs[0], matmul.tensor(probabilities(scores, lse), v));
  copy_into(c.outputs[1], lse);
}

void sdpa_backward_cuda(OpCall& c) {
  ExcludeDispatchKeyGuard no_autograd(kAutogradKeys);
  {
    const Tensor &q = c.tensor(1), &k = c.tensor(2), &v = c.tensor(3);
    const Tensor mask = c.opt_tensor(4);
    if (!c.outputs[3].defined() && !cuda::flash_attention_unsupported(q, k, v, mask)) {
      Shapes sh = check_shapes("_scaled_dot_product_attention_backward", q, k, v, mask);
      const ScalarType dt = q.dtype();
      cuda::flash_attention_backward(
          c.outputs[0], c.outputs[1], c.outputs[2], rows_as(c.tensor(0), dt, sh.batch),
          rows_as(q, dt, sh.batch), rows_as(k, dt, sh.batch), rows_as(v, dt, sh.batch),
          rows_as(c.tensor(5), dt, sh.batch), contiguous_float(c.tensor(6)),
          mask_as(mask, dt, sh), c.bool_arg(7), c.double_arg(8));
      return;
    }
  }
  const ScalarType dt = compute_dtype(c.tensor(1).dtype());
  AttentionGrads r = backward_by_ops(
      in_dtype(c.tensor(0), dt), in_dtype(c.tensor(1), dt), in_dtype(c.tensor(2), dt),
      in_dtype(c.tensor(3), dt), in_dtype(c.opt_tensor(4), dt), in_dtype(c.tensor(5), dt),
      in_dtype(c.tensor(6), dt), c.bool_arg(7), c.double_arg(8));
  copy_into(c.outputs[0], r.dq);
  copy_into(c.outputs[1], r.dk);
  copy_into(c.outputs[2], r.dv);
  if (c.outputs[3].defined()) copy_into(c.outputs[3], r.ds);
}

void sdpa_bw(GradCtx& c) {
  const Tensor &q = c.in(0), &k = c.in(1), &v = c.in(2);
  Tensor mask = c.opt_in(3);
  bool causal = c.bool_arg(4);
  double scale = c.double_arg(5);
  const Tensor& out = c.result(0);
  const Tensor& lse = c.result(1);
  const Tensor& g = c.grad(0);
  // user_device: a fake (AOT) tensor of a CPU tensor records the CPU op. On
  // CUDA the fused op when the flash kernels apply (its kernel checks the
  // GPU's capability and falls back to ops itself).
  const Device dev = q.user_device();
  const bool fused =
      dev.is_cpu() || (dev.is_cuda() && !cuda::flash_attention_unsupported(q, k, v, mask, false));
  if (!autograd::grad_enabled() && fused) {
    const bool mask_grad = mask.defined() && is_floating(mask.dtype()) && c.needs_grad(3);
    static OpRef fused("_scaled_dot_product_attention_backward");
    Stack r = fused.call(g, q, k, v, mask, out, lse, causal, scale, mask_grad);
    for (int i = 0; i < 3; ++i) {
      const Tensor& in = c.in(i);
      c.set(i, sum_to(r[i].to_tensor(), in.sizes()));
    }
    if (mask_grad) c.set(3, sum_to(r[3].to_tensor(), mask.sizes()));
    return;
  }
  if (autograd::grad_enabled()) {
    // create_graph: the formula below reads the saved out and lse, and a
    // gradient reaching lse through them would be dropped (this derivative
    // ignores lse's grad), so differentiate a recomputation instead.
    vjp_decomposition(c, {0, 1, 2, 3}, [&](const std::vector<Tensor>& in) {
      Tensor m = in[3].defined() ? in[3] : mask;
      Tensor scores = masked_scores(in[0], in[1], m, causal, scale);
      return matmul.tensor(safe_softmax.tensor(scores, int64_t(-1)), in[2]);
    });
    return;
  }
  // Off the CPU: the formula. lse is float32 for 16-bit inputs: back to the
  // scores' dtype here.
  AttentionGrads r =
      backward_by_ops(g, q, k, v, mask, out, to_dtype(lse, q.dtype()), causal, scale);
  c.set(2, r.dv);
  c.set(0, r.dq);
  c.set(1, r.dk);
  if (mask.defined() && is_floating(mask.dtype())) c.set(3, r.ds);
}

}  // namespace

void register_attention_ops() {
  def("_scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
      "Tensor? attn_mask=None, bool is_causal=False, float scale=1.0) "
      "-> (Tensor output, Tensor logsumexp)")
      .category(OpCategory::Template)
      .core()  // a template: kept whole, the compiler fills an attention kernel
      .meta(sdpa_meta)
      .cpu(sdpa_cpu)
      .cuda(sdpa_cuda)
      .derivative(sdpa_bw, "query, key, value, attn_mask, result, result1")
      .doc("attention with its row log-sum-exp (float32 for 16-bit inputs); the backward "
           "recomputes the probabilities");
  def("_scaled_dot_product_attention_backward(Tensor grad_out, Tensor query, Tensor key, "
      "Tensor value, Tensor? attn_mask, Tensor out, Tensor logsumexp, bool is_causal, "
      "float scale, bool mask_grad=False) -> (Tensor grad_query, Tensor grad_key, "
      "Tensor grad_value, Tensor grad_attn_mask)")
      .category(OpCategory::Template)
      .core()  // a template too: AOT records the fused backward whole
      .meta(sdpa_backward_meta)
      .cpu(sdpa_backward_cpu)
      .cuda(sdpa_backward_cuda)
      .doc("the gradients of _scaled_dot_product_attention (autograd's fused derivative; "
           "grad_attn_mask only with mask_grad, over the full broadcast batch)");
}

}  // namespace ignis

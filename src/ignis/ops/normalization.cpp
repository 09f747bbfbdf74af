// Batch normalisation: one fused forward op and its fused backward.
//
// The forward is functional, as ATen's _native_batch_norm_legit_functional:
// it does not write the running statistics but returns their updated
// values, which F.batch_norm copies into the module's buffers (a copy_
// that functionalization and capture handle as any other). Unlike ATen's,
// the running statistics may be None (track_running_stats=False), and so
// are then the updated ones. F.group_norm and F.instance_norm are Python
// over layer_norm and this op (ignis/nn/_normalization.py).
// Kernels: kernels/cpu/batch_norm and kernels/cuda/batch_norm.
//
// Both ops are core for now: the compiler runs them as extern kernels.
#include <string>

#include "ignis/autograd/formula.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/kernels/cpu/batch_norm.h"
#include "ignis/kernels/cuda/batch_norm.h"
#include "ignis/ops/families.h"
#include "ignis/ops/float_compute.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

void check_channel_param(const Tensor& t, const char* name, int64_t C) {
  if (!t.defined()) return;
  IGNIS_CHECK(t.numel() == C, name, " should contain ", C, " elements not ", t.numel());
}

// `eval_needs_stats`: evaluation must be given the running statistics (the
// forward's rule; backward may get the saved ones instead).
void check_batch_norm_args(const Tensor& in, const Tensor& w, const Tensor& b, const Tensor& rm,
                           const Tensor& rv, bool eval_needs_stats, const char* op) {
  IGNIS_CHECK(in.dim() >= 2, op, ": expected an input of at least 2 dimensions [N, C, *], "
              "got one of size ", in.shape_str());
  if (!is_floating(in.dtype()))
    IGNIS_FAIL_KIND(NotImplemented, "\"", op, "\" not implemented for '",
                    scalar_type_name(in.dtype()), "'");
  const int64_t C = in.size(1);
  check_channel_param(w, "weight", C);
  check_channel_param(b, "bias", C);
  check_channel_param(rm, "running_mean", C);
  check_channel_param(rv, "running_var", C);
  IGNIS_CHECK(rm.defined() == rv.defined(), op, ": running_mean and running_var must both be "
              "given or both be None");
  IGNIS_CHECK(!eval_needs_stats || rm.defined(),
              "running_mean must be defined in evaluation mode");
}

// _native_batch_norm_legit_functional(input, weight, bias, running_mean,
// running_var, training, momentum, eps) -> (out, save_mean, save_invstd,
// running_mean_out, running_var_out)
void batch_norm_meta(OpCall& c) {
  const Tensor& in = c.tensor(0);
  Tensor rm = c.opt_tensor(3), rv = c.opt_tensor(4);
  const bool training = c.bool_arg(5);
  check_batch_norm_args(in, c.opt_tensor(1), c.opt_tensor(2), rm, rv, !training, "batch_norm");
  const int64_t C = in.size(1);
  c.alloc(in.sizes(), in.dtype());
  // The statistics that normalised: the batch's in training, the running
  // ones in evaluation (ATen leaves them empty there; returning them means
  // backward never reads the running statistics, which training updates
  // in place before backward runs).
  const ScalarType acc = compute_dtype(in.dtype());
  c.alloc(DimVector{C}, acc);
  c.alloc(DimVector{C}, acc);
  if (rm.defined()) {
    c.alloc(rm.sizes(), rm.dtype());
    c.alloc(rv.sizes(), rv.dtype());
  } else {
    c.outputs.emplace_back();
    c.outputs.emplace_back();
  }
}
void batch_norm_impl(OpCall& c) {
  const Tensor& in = c.tensor(0);
  const ScalarType dt = compute_dtype(in.dtype());
  const bool training = c.bool_arg(5);
  Tensor rm = dense(c.opt_tensor(3), dt), rv = dense(c.opt_tensor(4), dt);
  std::vector<Tensor> res;
  for (const Tensor& o : c.outputs) res.push_back(scratch_for(o, dt));
  const Tensor new_mean = training ? res[3] : Tensor(), new_var = training ? res[4] : Tensor();
  auto kernel = c.device.is_cuda() ? cuda::batch_norm_into : cpu::batch_norm_into;
  kernel(res[0], res[1], res[2], new_mean, new_var, dense(in, dt), dense(c.opt_tensor(1), dt),
         dense(c.opt_tensor(2), dt), rm, rv, training, c.double_arg(6), c.double_arg(7));
  for (size_t i = 0; i < 3; ++i) finish(c.outputs[i], res[i]);
  if (!c.outputs[3].defined()) return;
  if (training) {
    finish(c.outputs[3], res[3]);
    finish(c.outputs[4], res[4]);
  } else {  // evaluation leaves them as they are
    copy_into(c.outputs[3], c.tensor(3));
    copy_into(c.outputs[4], c.tensor(4));
  }
}

// native_batch_norm_backward(grad_out, input, weight, running_mean,
// running_var, save_mean, save_invstd, train, eps, output_mask) ->
// (grad_input, grad_weight, grad_bias); output_mask: three 0/1 flags.
void batch_norm_backward_meta(OpCall& c) {
  const Tensor& g = c.tensor(0);
  const Tensor& in = c.tensor(1);
  Tensor w = c.opt_tensor(2);
  const bool training = c.bool_arg(7);
  check_batch_norm_args(in, w, Tensor(), c.opt_tensor(3), c.opt_tensor(4), false,
                        "batch_norm_backward");
  IGNIS_CHECK(g.sizes() == in.sizes(), "batch_norm_backward: grad_out of size ", g.shape_str(),
              " does not match input of size ", in.shape_str());
  check_channel_param(c.opt_tensor(5), "save_mean", in.size(1));
  check_channel_param(c.opt_tensor(6), "save_invstd", in.size(1));
  IGNIS_CHECK(c.opt_tensor(5).defined() == c.opt_tensor(6).defined(),
              "batch_norm_backward: save_mean and save_invstd must both be given or both be None");
  IGNIS_CHECK(training ? c.opt_tensor(5).defined()
                       : c.opt_tensor(5).defined() || c.opt_tensor(3).defined(),
              "batch_norm_backward: needs save_mean and save_invstd (training) or the running "
              "statistics");
  const auto& mask = c.int_list(9);
  IGNIS_CHECK(mask.size() == 3, "batch_norm_backward: output_mask must hold 3 flags, got ",
              mask.size());
  const DimVector channels{in.size(1)};
  if (mask[0]) c.alloc(in.sizes(), in.dtype());
  else c.outputs.emplace_back();
  if (mask[1]) c.alloc(channels, w.defined() ? w.dtype() : in.dtype());
  else c.outputs.emplace_back();
  if (mask[2]) c.alloc(channels, w.defined() ? w.dtype() : in.dtype());
  else c.outputs.emplace_back();
}
void batch_norm_backward_impl(OpCall& c) {
  const ScalarType dt = compute_dtype(c.tensor(1).dtype());
  std::vector<Tensor> res;
  for (const Tensor& o : c.outputs) res.push_back(scratch_for(o, dt));
  auto kernel = c.device.is_cuda() ? cuda::batch_norm_backward_into
                                   : cpu::batch_norm_backward_into;
  kernel(res[0], res[1], res[2], dense(c.tensor(0), dt), dense(c.tensor(1), dt),
         dense(c.opt_tensor(2), dt), dense(c.opt_tensor(3), dt), dense(c.opt_tensor(4), dt),
         dense(c.opt_tensor(5), dt), dense(c.opt_tensor(6), dt), c.bool_arg(7),
         c.double_arg(8));
  for (size_t i = 0; i < 3; ++i) finish(c.outputs[i], res[i]);
}

using namespace grad_ops;  // NOLINT

void batch_norm_bw(GradCtx& c) {
  const Tensor& x = c.in(0);
  const bool training = c.bool_arg(5);
  const double eps = c.double_arg(7);
  if (autograd::grad_enabled()) {
    // create_graph: differentiate the formula (the fused backward has no
    // derivative of its own).
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
    DimVector shape(static_cast<size_t>(x.dim()), 1);
    shape[1] = x.size(1);
    const Tensor& mean = c.result(1);
    const Tensor& invstd = c.result(2);
    vjp_decomposition(c, {0, 1, 2}, [&](const std::vector<Tensor>& in) {
      Tensor y;
      if (training) {
        Tensor xc = sub(in[0], op("mean.dim", in[0], dims, true));
        Tensor var = op("mean.dim", mul(xc, xc), dims, true);
        y = mul(xc, op("rsqrt", add(var, scalar(eps))));
      } else {
        y = mul(sub(in[0], reshape(mean, shape)), reshape(invstd, shape));
      }
      if (in[1].defined()) y = mul(y, reshape(in[1], shape));
      return in[2].defined() ? add(y, reshape(in[2], shape)) : y;
    });
    return;
  }
  std::vector<int64_t> mask{int64_t(c.needs_grad(0)), int64_t(c.needs_grad(1)),
                            int64_t(c.needs_grad(2))};
  Stack r = OpRef("native_batch_norm_backward")
                .call(c.grad(0), x, c.opt_in(1), None{}, None{}, c.result(1), c.result(2),
                      training, eps, mask);
  for (int i = 0; i < 3; ++i) c.set(i, r[static_cast<size_t>(i)].to_opt_tensor());
}

}  // namespace

void register_normalization_ops() {
  def("_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, "
      "Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> "
      "(Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)")
      .category(OpCategory::Other).meta(batch_norm_meta).cpu(batch_norm_impl)
      .cuda(batch_norm_impl)
      .doc("batch normalisation; also the batch mean and 1/std (training) and the updated "
           "running statistics, without writing the old ones")
      .derivative(batch_norm_bw, "input, weight, bias, result1, result2")
      .not_differentiable("running_mean, running_var").core();
  def("native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, "
      "Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, "
      "bool train, float eps, int[] output_mask) -> (Tensor, Tensor, Tensor)")
      .category(OpCategory::Other).meta(batch_norm_backward_meta)
      .cpu(batch_norm_backward_impl).cuda(batch_norm_backward_impl)
      .doc("the gradients of batch norm's input, weight and bias (those output_mask asks for)")
      .core();
}

}  // namespace ignis

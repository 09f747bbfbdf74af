// 2-D pooling: max (with indices), average, adaptive average and adaptive
// max, each with its backward, as ATen declares them. The 1-D forms and
// F.max_pool2d's return_indices are Python over these (ignis/nn/_pooling.py).
// Kernels: kernels/cpu/pooling and kernels/cuda/pooling (the same windows and
// results on both devices).
//
// Core (docs/core_ops.md): a window reduction with argmax indices is data
// movement the compiler calls as an extern kernel, as Inductor lowers
// pooling itself rather than through loops of max.
#include <array>
#include <string>

#include "ignis/autograd/formula.h"
#include "ignis/kernels/cpu/pooling.h"
#include "ignis/kernels/cuda/pooling.h"
#include "ignis/ops/families.h"
#include "ignis/ops/float_compute.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

// A 2-D parameter given as one int or two (`empty_ok`: [] means "as kernel").
std::array<int64_t, 2> pair_arg(const std::vector<int64_t>& v, const char* op, const char* name,
                                const char* forms) {
  IGNIS_CHECK(v.size() == 1 || v.size() == 2, op, ": ", name, " must ", forms);
  return {v[0], v.size() == 2 ? v[1] : v[0]};
}

// `integers`: the op also takes integer dtypes (max pooling does, as torch's).
void check_input(const Tensor& in, const char* op, bool integers = false) {
  const bool ok = (in.dim() == 3 && in.size(1) != 0 && in.size(2) != 0) ||
                  (in.dim() == 4 && in.size(1) != 0 && in.size(2) != 0 && in.size(3) != 0);
  IGNIS_CHECK(ok, op, ": Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
              "for input, but got: ", in.shape_str());
  if (!is_floating(in.dtype()) && !(integers && is_integral(in.dtype(), false)))
    IGNIS_FAIL_KIND(NotImplemented, "\"", op, "\" not implemented for '",
                    scalar_type_name(in.dtype()), "'");
}

// The call's device's kernels.
void max_pool_into(const OpCall& c, const Tensor& out, const Tensor& idx, const Tensor& in,
                   const cpu::PoolAxis& h, const cpu::PoolAxis& w) {
  (c.device.is_cuda() ? cuda::max_pool2d_into : cpu::max_pool2d_into)(out, idx, in, h, w);
}
void avg_pool_into(const OpCall& c, const Tensor& out, const Tensor& in, const cpu::PoolAxis& h,
                   const cpu::PoolAxis& w, bool count_include_pad, int64_t divisor_override) {
  (c.device.is_cuda() ? cuda::avg_pool2d_into : cpu::avg_pool2d_into)(
      out, in, h, w, count_include_pad, divisor_override);
}
void avg_pool_backward_into(const OpCall& c, const Tensor& grad_in, const Tensor& grad_out,
                            const cpu::PoolAxis& h, const cpu::PoolAxis& w,
                            bool count_include_pad, int64_t divisor_override) {
  (c.device.is_cuda() ? cuda::avg_pool2d_backward_into : cpu::avg_pool2d_backward_into)(
      grad_in, grad_out, h, w, count_include_pad, divisor_override);
}

struct Window {
  std::array<int64_t, 2> k, s, p, d;
  bool ceil = false;
};

int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil,
                    bool ceil) {
  IGNIS_CHECK(pad >= 0, "pad must be non-negative, but got pad: ", pad);
  IGNIS_CHECK(pad <= ((k - 1) * dil + 1) / 2, "pad should be at most half of effective kernel "
              "size, but got pad=", pad, ", kernel_size=", k, " and dilation=", dil);
  const int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0);
  // num / stride rounded toward -inf (num may be negative).
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Reads kernel_size, stride, padding, (dilation) and ceil_mode starting at
// argument `first`; checks them as torch's pool2d_shape_check does and
// returns the output size.
DimVector pool_window(const Stack& a, size_t first, bool has_dilation, const Tensor& in,
                      const char* op, Window& w) {
  const bool integers = has_dilation;  // max pooling, not average
  w.k = pair_arg(a[first].to_int_list(), op, "kernel_size",
                 "either be a single int, or a tuple of two ints");
  const auto& st = a[first + 1].to_int_list();
  w.s = st.empty() ? w.k : pair_arg(st, op, "stride",
                                    "either be omitted, a single int, or a tuple of two ints");
  w.p = pair_arg(a[first + 2].to_int_list(), op, "padding",
                 "either be a single int, or a tuple of two ints");
  w.d = has_dilation ? pair_arg(a[first + 3].to_int_list(), op, "dilation",
                                "be either a single int, or a tuple of two ints")
                     : std::array<int64_t, 2>{1, 1};
  w.ceil = a[first + (has_dilation ? 4 : 3)].to_bool();
  IGNIS_CHECK(w.k[0] > 0 && w.k[1] > 0, "kernel size should be greater than zero, but got kH: ",
              w.k[0], " kW: ", w.k[1]);
  IGNIS_CHECK(w.s[0] > 0 && w.s[1] > 0, "stride should be greater than zero, but got dH: ",
              w.s[0], " dW: ", w.s[1]);
  IGNIS_CHECK(w.d[0] > 0 && w.d[1] > 0, "dilation should be greater than zero, but got "
              "dilationH: ", w.d[0], " dilationW: ", w.d[1]);
  check_input(in, op, integers);
  const int64_t H = in.size(-2), W = in.size(-1);
  const int64_t oh = pooled_size(H, w.k[0], w.p[0], w.s[0], w.d[0], w.ceil);
  const int64_t ow = pooled_size(W, w.k[1], w.p[1], w.s[1], w.d[1], w.ceil);
  IGNIS_CHECK(w.k[1] / 2 >= w.p[1] && w.k[0] / 2 >= w.p[0], "pad should be smaller than or "
              "equal to half of kernel size, but got padW = ", w.p[1], ", padH = ", w.p[0],
              ", kW = ", w.k[1], ", kH = ", w.k[0]);
  const int64_t C = in.size(-3);
  IGNIS_CHECK(oh >= 1 && ow >= 1, "Given input size: (", C, "x", H, "x", W,
              "). Calculated output size: (", C, "x", oh, "x", ow, "). Output size is too small");
  DimVector out = in.sizes();
  out[out.size() - 2] = oh;
  out[out.size() - 1] = ow;
  return out;
}

cpu::PoolAxis axis(const Window& w, int i, int64_t in, int64_t out) {
  return cpu::fixed_axis(in, out, w.k[i], w.s[i], w.p[i], w.d[i]);
}

// ---- max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
void max_pool_meta(OpCall& c) {
  Window w;
  DimVector out = pool_window(c.args, 1, true, c.tensor(0), "max_pool2d", w);
  c.alloc(out, c.tensor(0).dtype());
  c.alloc(out, ScalarType::Int64);
}
void max_pool_impl(OpCall& c) {
  Window w;
  const Tensor& in = c.tensor(0);
  DimVector out = pool_window(c.args, 1, true, in, "max_pool2d", w);
  const ScalarType dt = compute_dtype(in.dtype());
  Tensor res = scratch_for(c.outputs[0], dt);
  const int64_t n = static_cast<int64_t>(out.size());
  max_pool_into(c, res, c.outputs[1], dense(in, dt), axis(w, 0, in.size(-2), out[n - 2]),
                axis(w, 1, in.size(-1), out[n - 1]));
  finish(c.outputs[0], res);
}

// ---- max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride,
// padding, dilation, ceil_mode, indices) and adaptive_max_pool2d_backward(
// grad_output, self, indices): grad_output summed into the argmax positions.
void check_pool_grad(const Tensor& g, const Tensor& idx, const DimVector& out, const char* op) {
  IGNIS_CHECK(g.sizes() == out, op, ": grad_output of size ", g.shape_str(),
              " does not match the pooled size ", shape_str(out));
  IGNIS_CHECK(idx.sizes() == out && idx.dtype() == ScalarType::Int64, op,
              ": indices must be an int64 tensor of size ", shape_str(out), ", got ",
              idx.shape_str());
}
void max_pool_backward_meta(OpCall& c) {
  Window w;
  const Tensor& in = c.tensor(1);
  DimVector out = pool_window(c.args, 2, true, in, "max_pool2d_with_indices_backward", w);
  check_pool_grad(c.tensor(0), c.tensor(7), out, "max_pool2d_with_indices_backward");
  c.alloc(in.sizes(), in.dtype());
}
void adaptive_max_backward_meta(OpCall& c) {
  const Tensor& in = c.tensor(1);
  check_input(in, "adaptive_max_pool2d_backward");
  check_pool_grad(c.tensor(0), c.tensor(2), c.tensor(2).sizes(), "adaptive_max_pool2d_backward");
  c.alloc(in.sizes(), in.dtype());
}
template <int kIndices>
void by_indices_backward_cpu(OpCall& c) {
  const ScalarType dt = compute_dtype(c.tensor(1).dtype());
  Tensor res = scratch_for(c.outputs[0], dt);
  cpu::max_pool2d_backward_into(res, dense(c.tensor(0), dt), dense(c.tensor(kIndices),
                                                                  ScalarType::Int64));
  finish(c.outputs[0], res);
}
// On CUDA the backward gathers over the forward's windows (kernels/cuda/
// pooling.h), so it rebuilds them: from the arguments, or adaptive ones
// from the sizes.
void by_indices_backward_cuda(OpCall& c, const Tensor& indices, const cpu::PoolAxis& h,
                              const cpu::PoolAxis& w) {
  const ScalarType dt = compute_dtype(c.tensor(1).dtype());
  Tensor res = scratch_for(c.outputs[0], dt);
  cuda::max_pool2d_backward_into(res, dense(c.tensor(0), dt), dense(indices, ScalarType::Int64),
                                 h, w);
  finish(c.outputs[0], res);
}
void max_pool_backward_cuda(OpCall& c) {
  Window w;
  const Tensor& in = c.tensor(1);
  DimVector out = pool_window(c.args, 2, true, in, "max_pool2d_with_indices_backward", w);
  const int64_t n = static_cast<int64_t>(out.size());
  by_indices_backward_cuda(c, c.tensor(7), axis(w, 0, in.size(-2), out[n - 2]),
                           axis(w, 1, in.size(-1), out[n - 1]));
}
void adaptive_max_backward_cuda(OpCall& c) {
  const Tensor& in = c.tensor(1);
  const Tensor& g = c.tensor(0);
  by_indices_backward_cuda(c, c.tensor(2), cpu::adaptive_axis(in.size(-2), g.size(-2)),
                           cpu::adaptive_axis(in.size(-1), g.size(-1)));
}

// ---- avg_pool2d(self, kernel_size, stride, padding, ceil_mode,
// count_include_pad, divisor_override)
int64_t divisor_of(const Stack& a, size_t i) {
  if (a[i].is_none()) return 0;
  IGNIS_CHECK(a[i].to_int() != 0, "divisor must be not zero");
  return a[i].to_int();
}
void avg_pool_meta(OpCall& c) {
  Window w;
  DimVector out = pool_window(c.args, 1, false, c.tensor(0), "avg_pool2d", w);
  divisor_of(c.args, 6);
  c.alloc(out, c.tensor(0).dtype());
}
void avg_pool_impl(OpCall& c) {
  Window w;
  const Tensor& in = c.tensor(0);
  DimVector out = pool_window(c.args, 1, false, in, "avg_pool2d", w);
  const ScalarType dt = compute_dtype(in.dtype());
  Tensor res = scratch_for(c.outputs[0], dt);
  const int64_t n = static_cast<int64_t>(out.size());
  avg_pool_into(c, res, dense(in, dt), axis(w, 0, in.size(-2), out[n - 2]),
                axis(w, 1, in.size(-1), out[n - 1]), c.bool_arg(5), divisor_of(c.args, 6));
  finish(c.outputs[0], res);
}
// avg_pool2d_backward(grad_output, self, kernel_size, stride, padding,
// ceil_mode, count_include_pad, divisor_override)
void avg_pool_backward_meta(OpCall& c) {
  Window w;
  const Tensor& in = c.tensor(1);
  DimVector out = pool_window(c.args, 2, false, in, "avg_pool2d_backward", w);
  divisor_of(c.args, 7);
  IGNIS_CHECK(c.tensor(0).sizes() == out, "avg_pool2d_backward: grad_output of size ",
              c.tensor(0).shape_str(), " does not match the pooled size ", shape_str(out));
  c.alloc(in.sizes(), in.dtype());
}
void avg_pool_backward_impl(OpCall& c) {
  Window w;
  const Tensor& in = c.tensor(1);
  DimVector out = pool_window(c.args, 2, false, in, "avg_pool2d_backward", w);
  const ScalarType dt = compute_dtype(in.dtype());
  Tensor res = scratch_for(c.outputs[0], dt);
  const int64_t n = static_cast<int64_t>(out.size());
  avg_pool_backward_into(c, res, dense(c.tensor(0), dt), axis(w, 0, in.size(-2), out[n - 2]),
                         axis(w, 1, in.size(-1), out[n - 1]), c.bool_arg(6),
                         divisor_of(c.args, 7));
  finish(c.outputs[0], res);
}

// ---- adaptive pooling (self, output_size)
DimVector adaptive_out(const Tensor& in, const std::vector<int64_t>& size, const char* op,
                       bool integers) {
  IGNIS_CHECK(size.size() == 2 || size.size() == 1, op, ": output_size must be 2");
  const int64_t oh = size[0], ow = size.size() == 2 ? size[1] : size[0];
  IGNIS_CHECK(oh >= 0 && ow >= 0, op, ": elements of output_size must be greater than or "
              "equal to 0 but received {", oh, ", ", ow, "}");
  IGNIS_CHECK(in.dim() == 3 || in.dim() == 4, op, "(): Expected 3D or 4D tensor, but got ",
              in.shape_str());
  for (int64_t i = 1; i < in.dim(); ++i)
    IGNIS_CHECK(in.size(i) > 0, op, "(): Expected input to have non-zero size for non-batch "
                "dimensions, but input has sizes ", in.shape_str(), " with dimension ", i,
                " being empty");
  if (!is_floating(in.dtype()) && !(integers && is_integral(in.dtype(), false)))
    IGNIS_FAIL_KIND(NotImplemented, "\"", op, "\" not implemented for '",
                    scalar_type_name(in.dtype()), "'");
  DimVector out = in.sizes();
  out[out.size() - 2] = oh;
  out[out.size() - 1] = ow;
  return out;
}
void adaptive_avg_meta(OpCall& c) {
  c.alloc(adaptive_out(c.tensor(0), c.int_list(1), "adaptive_avg_pool2d", false),
          c.tensor(0).dtype());
}
void adaptive_avg_impl(OpCall& c) {
  const Tensor& in = c.tensor(0);
  const Tensor& out = c.outputs[0];
  if (out.numel() == 0) return;
  const ScalarType dt = compute_dtype(in.dtype());
  Tensor res = scratch_for(out, dt);
  avg_pool_into(c, res, dense(in, dt), cpu::adaptive_axis(in.size(-2), out.size(-2)),
                cpu::adaptive_axis(in.size(-1), out.size(-1)), true, 0);
  finish(out, res);
}
// _adaptive_avg_pool2d_backward(grad_output, self)
void adaptive_avg_backward_meta(OpCall& c) {
  const Tensor& in = c.tensor(1);
  check_input(in, "adaptive_avg_pool2d_backward");
  IGNIS_CHECK(c.tensor(0).dim() == in.dim(), "adaptive_avg_pool2d_backward: grad_output of "
              "size ", c.tensor(0).shape_str(), " for input of size ", in.shape_str());
  c.alloc(in.sizes(), in.dtype());
}
void adaptive_avg_backward_impl(OpCall& c) {
  const Tensor& in = c.tensor(1);
  const Tensor& g = c.tensor(0);
  const ScalarType dt = compute_dtype(in.dtype());
  Tensor res = scratch_for(c.outputs[0], dt);
  avg_pool_backward_into(c, res, dense(g, dt), cpu::adaptive_axis(in.size(-2), g.size(-2)),
                         cpu::adaptive_axis(in.size(-1), g.size(-1)), true, 0);
  finish(c.outputs[0], res);
}
void adaptive_max_meta(OpCall& c) {
  DimVector out = adaptive_out(c.tensor(0), c.int_list(1), "adaptive_max_pool2d", false);
  c.alloc(out, c.tensor(0).dtype());
  c.alloc(out, ScalarType::Int64);
}
void adaptive_max_impl(OpCall& c) {
  const Tensor& in = c.tensor(0);
  const Tensor& out = c.outputs[0];
  if (out.numel() == 0) return;
  const ScalarType dt = compute_dtype(in.dtype());
  Tensor res = scratch_for(out, dt);
  max_pool_into(c, res, c.outputs[1], dense(in, dt),
                cpu::adaptive_axis(in.size(-2), out.size(-2)),
                cpu::adaptive_axis(in.size(-1), out.size(-1)));
  finish(out, res);
}

// ---- derivatives
using namespace grad_ops;  // NOLINT

void max_pool_bw(GradCtx& c) {
  c.set(0, op("max_pool2d_with_indices_backward", c.grad(0), c.in(0), c.int_list(1),
              c.int_list(2), c.int_list(3), c.int_list(4), c.bool_arg(5), c.result(1)));
}
void avg_pool_bw(GradCtx& c) {
  c.set(0, op("avg_pool2d_backward", c.grad(0), c.in(0), c.int_list(1), c.int_list(2),
              c.int_list(3), c.bool_arg(4), c.bool_arg(5), c.args[6]));
}
void adaptive_avg_bw(GradCtx& c) {
  c.set(0, op("_adaptive_avg_pool2d_backward", c.grad(0), c.in(0)));
}
void adaptive_max_bw(GradCtx& c) {
  c.set(0, op("adaptive_max_pool2d_backward", c.grad(0), c.in(0), c.result(1)));
}

// The backward ops are linear in grad_output (their `self` only gives a
// shape): their own derivative (double backward) is the forward pooling
// of the incoming gradient, or for max pooling its values at the indices.
Tensor gather_at(const Tensor& gg, const Tensor& idx) {
  DimVector flat = gg.sizes(), flat_idx = idx.sizes();
  flat.pop_back();
  flat.back() = gg.size(-2) * gg.size(-1);
  flat_idx.pop_back();
  flat_idx.back() = idx.size(-2) * idx.size(-1);
  Tensor r = op("gather", reshape(gg, flat), int64_t(-1), reshape(idx, flat_idx));
  return reshape(r, idx.sizes());
}
void max_pool_backward_bw(GradCtx& c) { c.set(0, gather_at(c.grad(0), c.in(7))); }
void adaptive_max_backward_bw(GradCtx& c) { c.set(0, gather_at(c.grad(0), c.in(2))); }
void avg_pool_backward_bw(GradCtx& c) {
  c.set(0, op("avg_pool2d", c.grad(0), c.int_list(2), c.int_list(3), c.int_list(4),
              c.bool_arg(5), c.bool_arg(6), c.args[7]));
}
void adaptive_avg_backward_bw(GradCtx& c) {
  const DimVector& out = c.sizes(0);
  std::vector<int64_t> size{out[out.size() - 2], out[out.size() - 1]};
  c.set(0, op("_adaptive_avg_pool2d", c.grad(0), size));
}

}  // namespace

void register_pooling_ops() {
  def("max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], "
      "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)")
      .category(OpCategory::Other).meta(max_pool_meta).cpu(max_pool_impl).cuda(max_pool_impl)
      .doc("2-D max pooling, and the flat position of each max in its plane")
      .derivative(max_pool_bw, "self, result1").core();
  def("max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, "
      "int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor")
      .category(OpCategory::Other).meta(max_pool_backward_meta)
      .cpu(by_indices_backward_cpu<7>).cuda(max_pool_backward_cuda)
      .doc("grad_output summed into the input positions max pooling picked")
      .derivative(max_pool_backward_bw, "indices").core();
  def("avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
      "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor")
      .category(OpCategory::Other).meta(avg_pool_meta).cpu(avg_pool_impl).cuda(avg_pool_impl)
      .doc("2-D average pooling").derivative(avg_pool_bw, "self").core();
  def("avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, "
      "int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor")
      .category(OpCategory::Other).meta(avg_pool_backward_meta).cpu(avg_pool_backward_impl)
      .cuda(avg_pool_backward_impl)
      .doc("the gradient of avg_pool2d's input").derivative(avg_pool_backward_bw).core();
  def("_adaptive_avg_pool2d(Tensor self, int[2] output_size) -> Tensor")
      .category(OpCategory::Other).meta(adaptive_avg_meta).cpu(adaptive_avg_impl)
      .cuda(adaptive_avg_impl)
      .doc("2-D average pooling to a given output size").derivative(adaptive_avg_bw, "self")
      .core();
  def("_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor")
      .category(OpCategory::Other).meta(adaptive_avg_backward_meta)
      .cpu(adaptive_avg_backward_impl).cuda(adaptive_avg_backward_impl)
      .doc("the gradient of _adaptive_avg_pool2d's input")
      .derivative(adaptive_avg_backward_bw).core();
  def("adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)")
      .category(OpCategory::Other).meta(adaptive_max_meta).cpu(adaptive_max_impl)
      .cuda(adaptive_max_impl)
      .doc("2-D max pooling to a given output size, with the argmax positions")
      .derivative(adaptive_max_bw, "self, result1").core();
  def("adaptive_max_pool2d_backward(Tensor grad_output, Tensor self, Tensor indices) -> Tensor")
      .category(OpCategory::Other).meta(adaptive_max_backward_meta)
      .cpu(by_indices_backward_cpu<2>).cuda(adaptive_max_backward_cuda)
      .doc("grad_output summed into the input positions adaptive max pooling picked")
      .derivative(adaptive_max_backward_bw, "indices").core();
}

}  // namespace ignis

// Convolution: one core op for every kind (1-, 2- and 3-D, plain and
// transposed, grouped), as ATen's `convolution`, and its fused backward
// `convolution_backward` with an output mask. F.conv1d ... conv_transpose2d
// and the nn.Conv* modules are Python over these (ignis/nn/_conv.py): they
// batch unbatched inputs, resolve padding="same"/"valid" and padding modes,
// then call `convolution`. Kernels: kernels/cpu/conv (im2col + GEMM) and
// kernels/cuda/conv (im2col + cuBLASLt).
//
// Both are core and Template (docs/core_ops.md): a convolution is a GEMM's
// cost, not a loop nest to fuse, so the compiler calls the kernel (extern)
// and the partitioner saves its result rather than recompute it.
#include <string>

#include "ignis/autograd/formula.h"
#include "ignis/kernels/cpu/conv.h"
#include "ignis/kernels/cuda/conv.h"
#include "ignis/ops/families.h"
#include "ignis/ops/float_compute.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

std::string join(const std::vector<int64_t>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}

// A per-dimension parameter given once or once per spatial dim (torch's
// expand_param_if_needed).
std::vector<int64_t> expand_param(const std::vector<int64_t>& v, const char* name, int64_t nd) {
  if (static_cast<int64_t>(v.size()) == nd) return v;
  IGNIS_CHECK(v.size() == 1, "expected ", name, " to be a single integer value or a list of ", nd,
              " values to match the convolution dimensions, but got ", name, "=",
              shape_str(v));
  return std::vector<int64_t>(static_cast<size_t>(nd), v[0]);
}

// The parameters of a call, starting at argument `first` (stride).
cpu::ConvParams conv_params(const Stack& a, size_t first, int64_t nd) {
  cpu::ConvParams p;
  p.stride = expand_param(a[first].to_int_list(), "stride", nd);
  p.padding = expand_param(a[first + 1].to_int_list(), "padding", nd);
  p.dilation = expand_param(a[first + 2].to_int_list(), "dilation", nd);
  p.transposed = a[first + 3].to_bool();
  p.output_padding = expand_param(a[first + 4].to_int_list(), "output_padding", nd);
  p.groups = a[first + 5].to_int();
  return p;
}

bool any_of(const std::vector<int64_t>& v, bool (*pred)(int64_t)) {
  for (int64_t x : v)
    if (pred(x)) return true;
  return false;
}

// Checks a call as torch's check_shape_forward does (same messages) and
// returns the output's size. `bias_elems` is -1 without a bias.
DimVector conv_output_size(const Tensor& in, const Tensor& w, int64_t bias_elems,
                           const DimVector& bias_shape, const cpu::ConvParams& p) {
  const DimVector& ws = w.sizes();
  const int64_t k = in.dim(), wd = w.dim();
  IGNIS_CHECK(wd >= 3 && wd <= 5, "weight should have at least three dimensions (and at most "
              "five: 1-, 2- and 3-D convolutions), but got weight of size ", w.shape_str());
  IGNIS_CHECK(p.groups > 0, "non-positive groups is not supported");
  IGNIS_CHECK(!any_of(p.padding, [](int64_t x) { return x < 0; }),
              "negative padding is not supported");
  IGNIS_CHECK(!any_of(p.output_padding, [](int64_t x) { return x < 0; }),
              "negative output_padding is not supported");
  IGNIS_CHECK(!any_of(p.stride, [](int64_t x) { return x <= 0; }),
              "non-positive stride is not supported");
  IGNIS_CHECK(!any_of(p.dilation, [](int64_t x) { return x <= 0; }),
              "dilation should be greater than zero");
  IGNIS_CHECK(wd == k, "Expected ", wd, "-dimensional input for ", wd, "-dimensional weight ",
              w.shape_str(), ", but got ", k, "-dimensional input of size ", in.shape_str(),
              " instead");
  IGNIS_CHECK(ws[0] >= p.groups, "Given groups=", p.groups, ", expected weight to be at least ",
              p.groups, " at dimension 0, but got weight of size ", w.shape_str(), " instead");
  IGNIS_CHECK(ws[0] % p.groups == 0, "Given groups=", p.groups,
              ", expected weight to be divisible by ", p.groups,
              " at dimension 0, but got weight of size ", w.shape_str(), " instead");
  IGNIS_CHECK(in.dtype() == w.dtype(), "Input type (", scalar_type_name(in.dtype()),
              ") and weight type (", scalar_type_name(w.dtype()), ") should be the same");
  const int64_t nd = k - 2;
  DimVector out(static_cast<size_t>(k));
  out[0] = in.size(0);
  const int64_t out_ch = p.transposed ? ws[1] * p.groups : ws[0];
  if (!p.transposed) {
    IGNIS_CHECK(in.size(1) == ws[1] * p.groups, "Given groups=", p.groups, ", weight of size ",
                w.shape_str(), ", expected input", in.shape_str(), " to have ", ws[1] * p.groups,
                " channels, but got ", in.size(1), " channels instead");
  } else {
    IGNIS_CHECK(in.size(1) == ws[0], "Given transposed=1, weight of size ", w.shape_str(),
                ", expected input", in.shape_str(), " to have ", ws[0],
                " channels, but got ", in.size(1), " channels instead");
  }
  IGNIS_CHECK(bias_elems < 0 || (bias_shape.size() == 1 && bias_elems == out_ch),
              "Given weight of size ", w.shape_str(), ", expected bias to be 1-dimensional with ",
              out_ch, " elements, but got bias of size ", shape_str(bias_shape), " instead");
  out[1] = out_ch;
  std::vector<int64_t> padded, kernel, in_sz, out_sz;
  bool fits = true, positive = true;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t span = p.dilation[i] * (ws[2 + i] - 1) + 1;
    const int64_t n = in.size(2 + i);
    padded.push_back(n + 2 * p.padding[i]);
    kernel.push_back(span);
    in_sz.push_back(n);
    if (p.transposed) {
      IGNIS_CHECK(p.output_padding[i] < p.stride[i] || p.output_padding[i] < p.dilation[i],
                  "output padding must be smaller than either stride or dilation, but got "
                  "output_padding=", shape_str(p.output_padding), ", stride=",
                  shape_str(p.stride), ", dilation=", shape_str(p.dilation));
      out[2 + i] = (n - 1) * p.stride[i] - 2 * p.padding[i] + span + p.output_padding[i];
    } else {
      fits = fits && padded.back() >= span;
      out[2 + i] = (padded.back() - span) / p.stride[i] + 1;
    }
    out_sz.push_back(out[2 + i]);
    positive = positive && out[2 + i] > 0;
  }
  IGNIS_CHECK(fits, "Calculated padded input size per channel: (", join(padded, " x "),
              "). Kernel size: (", join(kernel, " x "),
              "). Kernel size can't be greater than actual input size");
  IGNIS_CHECK(positive, "Given input size per channel: (", join(in_sz, " x "),
              "). Calculated output size per channel: (", join(out_sz, " x "),
              "). Output size is too small");
  return out;
}

// Floating and integer dtypes, as torch's CPU convolution (not bool; its
// transposed convolution takes int64 only of the integers).
void check_dtype(const Tensor& t, bool transposed, const char* op) {
  const ScalarType d = t.dtype();
  if (d == ScalarType::Bool || (transposed && is_integral(d, false) && d != ScalarType::Int64))
    IGNIS_FAIL_KIND(NotImplemented, "\"", op, "\" not implemented for '",
                    scalar_type_name(t.dtype()), "'");
}

// The layout of a convolution's output, as torch's CPU and cuDNN paths pick
// it: channels-last (NHWC strides; NDHWC for 3-D) when the input or the
// weight is laid out so, else contiguous. A channels-last model keeps its
// activations channels-last from layer to layer, as under torch. (The
// kernels themselves work on contiguous copies and the result is laid out
// on the way back: the layout is for parity, not yet for speed.)
MemoryFormat conv_format(const Tensor& in, const Tensor& w) {
  const MemoryFormat cl = in.dim() == 4   ? MemoryFormat::ChannelsLast
                          : in.dim() == 5 ? MemoryFormat::ChannelsLast3d
                                          : MemoryFormat::Contiguous;
  if (cl == MemoryFormat::Contiguous || w.dim() != in.dim()) return MemoryFormat::Contiguous;
  return suggest_memory_format(in.sizes(), in.strides()) == cl ||
                 suggest_memory_format(w.sizes(), w.strides()) == cl
             ? cl
             : MemoryFormat::Contiguous;
}

// convolution(input, weight, bias, stride, padding, dilation, transposed,
// output_padding, groups)
void convolution_meta(OpCall& c) {
  const Tensor& in = c.tensor(0);
  const Tensor& w = c.tensor(1);
  Tensor b = c.opt_tensor(2);
  IGNIS_CHECK(w.dim() >= 3, "weight should have at least three dimensions");
  const cpu::ConvParams p = conv_params(c.args, 3, w.dim() - 2);
  check_dtype(in, p.transposed, "convolution");
  if (b.defined())
    IGNIS_CHECK(b.dtype() == in.dtype(), "Input type (", scalar_type_name(in.dtype()),
                ") and bias type (", scalar_type_name(b.dtype()), ") should be the same");
  c.alloc_in_format(conv_output_size(in, w, b.defined() ? b.numel() : -1,
                                    b.defined() ? b.sizes() : DimVector{}, p),
                    in.dtype(), conv_format(in, w));
}
void convolution_impl(OpCall& c) {
  const Tensor& out = c.outputs[0];
  const ScalarType dt = compute_dtype(out.dtype());
  const cpu::ConvParams p = conv_params(c.args, 3, c.tensor(1).dim() - 2);
  Tensor res = contiguous_scratch_for(out, dt);
  auto kernel = c.device.is_cuda() ? cuda::convolution_into : cpu::convolution_into;
  kernel(res, dense(c.tensor(0), dt), dense(c.tensor(1), dt), dense(c.opt_tensor(2), dt), p);
  finish(out, res);
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride,
// padding, dilation, transposed, output_padding, groups, output_mask) ->
// (grad_input, grad_weight, grad_bias); output_mask holds three 0/1 flags
// (torch's bool[3]: ignis's schema language has no bool lists), and an
// output whose flag is 0 is None.
void convolution_backward_meta(OpCall& c) {
  const Tensor& g = c.tensor(0);
  const Tensor& in = c.tensor(1);
  const Tensor& w = c.tensor(2);
  IGNIS_CHECK(w.dim() >= 3, "weight should have at least three dimensions");
  const cpu::ConvParams p = conv_params(c.args, 4, w.dim() - 2);
  check_dtype(in, p.transposed, "convolution_backward");
  const auto& mask = c.int_list(10);
  IGNIS_CHECK(mask.size() == 3, "convolution_backward: output_mask must hold 3 flags, got ",
              mask.size());
  DimVector bias_shape;
  if (!c.args[3].is_none()) bias_shape = DimVector(c.int_list(3));
  const DimVector out = conv_output_size(in, w, c.args[3].is_none() ? -1 :
                                         compute_numel(bias_shape), bias_shape, p);
  IGNIS_CHECK(g.sizes() == out, "convolution_backward: grad_output of size ", g.shape_str(),
              " does not match the convolution's output size ", shape_str(out));
  IGNIS_CHECK(g.dtype() == in.dtype(), "convolution_backward: grad_output of type ",
              scalar_type_name(g.dtype()), " for input of type ", scalar_type_name(in.dtype()));
  // The input's and the weight's gradients are laid out as the forward's
  // output was (torch's rule; a leaf's .grad then follows its parameter's
  // layout, AccumulateGrad's contract).
  const MemoryFormat f = conv_format(in, w);
  if (mask[0]) c.alloc_in_format(in.sizes(), in.dtype(), f);
  else c.outputs.emplace_back();
  if (mask[1]) c.alloc_in_format(w.sizes(), w.dtype(), f);
  else c.outputs.emplace_back();
  if (mask[2]) c.alloc(DimVector{out[1]}, in.dtype());
  else c.outputs.emplace_back();
}
void convolution_backward_impl(OpCall& c) {
  const ScalarType dt = compute_dtype(c.tensor(1).dtype());
  const cpu::ConvParams p = conv_params(c.args, 4, c.tensor(2).dim() - 2);
  Tensor gi = contiguous_scratch_for(c.outputs[0], dt),
         gw = contiguous_scratch_for(c.outputs[1], dt), gb = scratch_for(c.outputs[2], dt);
  auto kernel =
      c.device.is_cuda() ? cuda::convolution_backward_into : cpu::convolution_backward_into;
  kernel(gi, gw, gb, dense(c.tensor(0), dt), dense(c.tensor(1), dt), dense(c.tensor(2), dt), p);
  finish(c.outputs[0], gi);
  finish(c.outputs[1], gw);
  finish(c.outputs[2], gb);
}

// The fused backward; with create_graph it is recorded as one op, whose own
// derivative is convolution_backward_bw below.
void convolution_bw(GradCtx& c) {
  std::vector<int64_t> mask{int64_t(c.needs_grad(0)), int64_t(c.needs_grad(1)),
                            int64_t(c.needs_grad(2))};
  IValue bias_sizes;
  if (c.needs_grad(2)) bias_sizes = IValue(c.sizes(2));
  Stack r = OpRef("convolution_backward")
                .call(c.grad(), c.in(0), c.in(1), bias_sizes, c.int_list(3), c.int_list(4),
                      c.int_list(5), c.bool_arg(6), c.int_list(7), c.int_arg(8), mask);
  for (int i = 0; i < 3; ++i) c.set(i, r[static_cast<size_t>(i)].to_opt_tensor());
}

// Note [The convolution's double backward]
// A convolution is bilinear: out = F(x, w) (+ bias). Its backward computes,
// for L = <gO, F(x, w)>, gI = dL/dx, gW = dL/dw and gB = gO summed to the
// bias. Given the gradients ggI, ggW, ggB of those three, the scalar being
// differentiated is S = <ggI, gI> + <ggW, gW> + <ggB, gB>, and since
// <ggI, dL/dx> = <gO, F(ggI, w)> and <ggW, dL/dw> = <gO, F(x, ggW)>:
//   dS/dgO = F(ggI, w) + F(x, ggW) + ggB (broadcast over the output)
//   dS/dw  = the weight gradient of F(ggI, w) at gO
//   dS/dx  = the input gradient of F(x, ggW) at gO
// each one more convolution or convolution_backward with the call's own
// parameters (any dimension, stride, dilation, groups, transposed), so a
// third derivative goes through the same formulas. torch's
// _convolution_double_backward computes the same terms.
void convolution_backward_bw(GradCtx& c) {
  const auto& mask = c.int_list(10);
  auto given = [&](int j) {
    return mask[static_cast<size_t>(j)] && j < static_cast<int>(c.grads.size()) &&
           c.grads[static_cast<size_t>(j)].defined();
  };
  auto conv = [&](const Tensor& x, const Tensor& w) {
    return grad_ops::op("convolution", x, w, IValue(), c.int_list(4), c.int_list(5),
                        c.int_list(6), c.bool_arg(7), c.int_list(8), c.int_arg(9));
  };
  auto conv_backward = [&](const Tensor& g, const Tensor& x, const Tensor& w, int which) {
    std::vector<int64_t> m{which == 0, which == 1, 0};
    Stack r = OpRef("convolution_backward")
                  .call(g, x, w, IValue(), c.int_list(4), c.int_list(5), c.int_list(6),
                        c.bool_arg(7), c.int_list(8), c.int_arg(9), m);
    return r[static_cast<size_t>(which)].to_tensor();
  };
  if (c.needs_grad(0)) {
    Tensor gg;
    auto add = [&](Tensor t) { gg = gg.defined() ? grad_ops::add(gg, t) : std::move(t); };
    if (given(0)) add(conv(c.grad(0), c.in(2)));
    if (given(1)) add(conv(c.in(1), c.grad(1)));
    if (given(2)) {
      // ggB along the output's channel dim, broadcast over the rest
      const DimVector& out = c.sizes(0);
      DimVector shape(out.size(), 1);
      shape[1] = out[1];
      add(grad_ops::expand(grad_ops::reshape(c.grad(2), shape), out));
    }
    if (gg.defined()) c.set(0, gg);
  }
  if (c.needs_grad(1) && given(1)) c.set(1, conv_backward(c.in(0), c.in(1), c.grad(1), 0));
  if (c.needs_grad(2) && given(0)) c.set(2, conv_backward(c.in(0), c.grad(0), c.in(2), 1));
}

}  // namespace

void register_conv_ops() {
  def("convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
      "int[] dilation, bool transposed, int[] output_padding, int groups) -> Tensor")
      .category(OpCategory::Template).meta(convolution_meta).cpu(convolution_impl)
      .cuda(convolution_impl)
      .doc("1-, 2- or 3-D convolution or transposed convolution of a batched input "
           "(grouped, strided, dilated)")
      .derivative(convolution_bw, "input, weight").core();
  def("convolution_backward(Tensor grad_output, Tensor input, Tensor weight, int[]? bias_sizes, "
      "int[] stride, int[] padding, int[] dilation, bool transposed, int[] output_padding, "
      "int groups, int[] output_mask) -> (Tensor, Tensor, Tensor)")
      .category(OpCategory::Template).meta(convolution_backward_meta)
      .cpu(convolution_backward_impl).cuda(convolution_backward_impl)
      .doc("the gradients of convolution's input, weight and bias (those output_mask asks for)")
      .derivative(convolution_backward_bw, "grad_output, input, weight").core();
}

}  // namespace ignis

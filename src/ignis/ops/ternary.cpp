// Pointwise ops of three operands (where, clamp, lerp, addcmul, addcdiv)
// and masked_fill.
#include <cmath>

#include "ignis/autograd/formula.h"
#include "ignis/kernels/cpu/fill.h"
#include "ignis/kernels/cpu/loops.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/kernels/cuda/pointwise.h"
#include "ignis/kernels/scalar_ops.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/families.h"
#include "ignis/ops/pointwise.h"

namespace ignis {

namespace {

using cpu::cpu_kernel;

// ---- where(condition, self, other) --------------------------------------------
void where_meta(OpCall& c) {
  const Tensor& cond = c.tensor(0);
  IGNIS_CHECK(cond.dtype() == ScalarType::Bool || cond.dtype() == ScalarType::UInt8,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              scalar_type_name(cond.dtype()));
  auto it = std::make_shared<TensorIterator>();
  it->add_output(Tensor());
  it->add_input(cond);
  it->add_input(c.tensor(1));
  it->add_input(c.tensor(2));
  IterConfig cfg;
  cfg.op_name = "where";
  cfg.common_dtype = result_type({&c.tensor(1), &c.tensor(2)});
  it->build(cfg, c.device);
  c.outputs.push_back(it->output(0));
  c.iter = std::move(it);
}

void where_cpu(OpCall& c) {
  IGNIS_DISPATCH_ALL(c.iter->common_dtype(), "where", [&] {
    using T = opmath_t<scalar_t>;
    cpu_kernel<scalar_t, scalar_t>(
        *c.iter, [](T cond, T a, T b) -> T { return scalar_ops::Where()(cond, a, b); });
  });
}

void where_cuda(OpCall& c) {
  cuda_pointwise(c, scalar_ops::Where::name, c.iter->common_dtype(), cuda::kAllDtypes);
}

// ---- clamp(self, min=None, max=None) ----------------------------------------------
// As in PyTorch, bool clamps only against one tensor bound (the clamp_min /
// clamp_max tensor kernels); two bounds or a Python-number bound are refused.
void check_bool_clamp(const TensorIterator& it, const Tensor& lo, const Tensor& hi,
                      const char* name) {
  if (it.common_dtype() != ScalarType::Bool) return;
  bool scalar = (lo.defined() && lo.impl()->is_wrapped_number()) ||
                (hi.defined() && hi.impl()->is_wrapped_number());
  if (scalar || (lo.defined() && hi.defined()))
    IGNIS_NOT_IMPLEMENTED("\"", name, "\" not implemented for 'Bool'");
}

template <bool Inplace>
void clamp_meta(OpCall& c) {
  Tensor lo = c.opt_tensor(1), hi = c.opt_tensor(2);
  IGNIS_CHECK(lo.defined() || hi.defined(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  if (Inplace) {
    check_no_internal_overlap(c.tensor(0));
    for (const Tensor* t : {&lo, &hi})
      if (t->defined()) check_no_partial_overlap(c.tensor(0), *t);
  }
  auto it = std::make_shared<TensorIterator>();
  it->add_output(Inplace ? c.tensor(0) : Tensor());
  it->add_input(c.tensor(0));
  if (lo.defined()) it->add_input(lo);
  if (hi.defined()) it->add_input(hi);
  IterConfig cfg;
  cfg.op_name = "clamp";
  it->build(cfg, c.device);
  check_bool_clamp(*it, lo, hi, "clamp");
  c.outputs.push_back(Inplace ? c.tensor(0) : it->output(0));
  if (Inplace && !c.device.is_meta()) c.tensor(0).impl()->version_counter().bump();
  c.iter = std::move(it);
}

void clamp_cpu(OpCall& c) {
  bool has_lo = !c.args[1].is_none(), has_hi = !c.args[2].is_none();
  IGNIS_DISPATCH_ALL(c.iter->common_dtype(), "clamp", [&] {
    using T = opmath_t<scalar_t>;
    if (has_lo && has_hi)
      cpu_kernel<scalar_t, scalar_t>(
          *c.iter, [](T x, T lo, T hi) -> T { return scalar_ops::Clamp()(x, lo, hi); });
    else if (has_lo)
      cpu_kernel<scalar_t, scalar_t>(*c.iter,
                                     [](T x, T lo) -> T { return scalar_ops::ClampMin()(x, lo); });
    else
      cpu_kernel<scalar_t, scalar_t>(*c.iter,
                                     [](T x, T hi) -> T { return scalar_ops::ClampMax()(x, hi); });
  });
}

void clamp_cuda(OpCall& c) {
  bool has_lo = !c.args[1].is_none(), has_hi = !c.args[2].is_none();
  const char* fn = has_lo && has_hi ? scalar_ops::Clamp::name
                   : has_lo         ? scalar_ops::ClampMin::name
                                    : scalar_ops::ClampMax::name;
  cuda_pointwise(c, fn, c.iter->common_dtype(), cuda::kAllDtypes);
}

// clamp_min(self, min) / clamp_max(self, max): clamp with one bound.
template <bool Hi, bool Inplace>
void clamp_one_meta(OpCall& c) {
  pointwise_meta(c, {0, 1}, DtypeRule::Promote, Inplace);
  check_bool_clamp(*c.iter, c.tensor(1), Tensor(), Hi ? "clamp_max" : "clamp_min");
}
template <bool Hi>
void clamp_one_cpu(OpCall& c) {
  IGNIS_DISPATCH_ALL(c.iter->common_dtype(), Hi ? "clamp_max" : "clamp_min", [&] {
    using T = opmath_t<scalar_t>;
    if (Hi)
      cpu_kernel<scalar_t, scalar_t>(*c.iter,
                                     [](T x, T b) -> T { return scalar_ops::ClampMax()(x, b); });
    else
      cpu_kernel<scalar_t, scalar_t>(*c.iter,
                                     [](T x, T b) -> T { return scalar_ops::ClampMin()(x, b); });
  });
}

template <bool Hi>
void clamp_one_cuda(OpCall& c) {
  cuda_pointwise(c, Hi ? scalar_ops::ClampMax::name : scalar_ops::ClampMin::name,
                 c.iter->common_dtype(), cuda::kAllDtypes);
}

// ---- lerp, addcmul, addcdiv -------------------------------------------------------
// PyTorch's lerp needs end (and a dimensioned weight) of self's dtype; a
// scalar weight does not take part in type promotion.
template <bool Inplace>
void lerp_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const Tensor& end = c.tensor(1);
  const Tensor& weight = c.tensor(2);
  IGNIS_CHECK(end.dtype() == self.dtype(), "expected dtype ", dtype_name(self.dtype()),
              " for `end` but got dtype ", dtype_name(end.dtype()));
  IGNIS_CHECK(weight.dim() == 0 || weight.dtype() == self.dtype(), "expected dtype ",
              dtype_name(self.dtype()), " for `weight` but got dtype ", dtype_name(weight.dtype()));
  if (!is_floating(self.dtype()))
    IGNIS_NOT_IMPLEMENTED("\"lerp\" not implemented for '", scalar_type_name(self.dtype()), "'");
  pointwise_meta(c, {0, 1, 2}, DtypeRule::Promote, Inplace);
}
void lerp_cpu(OpCall& c) {
  IGNIS_DISPATCH_FLOAT(c.iter->common_dtype(), "lerp", [&] {
    using T = opmath_t<scalar_t>;
    cpu_kernel<scalar_t, scalar_t>(*c.iter,
                                   [](T a, T b, T w) -> T { return scalar_ops::Lerp()(a, b, w); });
  });
}

void lerp_cuda(OpCall& c) {
  cuda_pointwise(c, scalar_ops::Lerp::name, c.iter->common_dtype(), cuda::kFloatDtypes);
}

template <bool Inplace>
void addc_meta(OpCall& c) {
  pointwise_meta(c, {0, 1, 2}, DtypeRule::Promote, Inplace);
  cpu::check_scalar_fits(c.scalar(3), cpu::opmath_type(c.iter->common_dtype()));
}
template <bool Inplace>
void addcdiv_meta(OpCall& c) {
  IGNIS_CHECK(!is_integral(c.tensor(1).dtype(), true) || !is_integral(c.tensor(2).dtype(), true),
              "Integer division with addcdiv is no longer supported, and in a future  release "
              "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
              "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
              ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
              "float inputs. The future addcdiv behavior is just the latter implementation: "
              "(input + value * tensor1 / tensor2), for all dtypes.");
  addc_meta<Inplace>(c);
}
void addcmul_cpu(OpCall& c) {
  Scalar value = c.scalar(3);
  IGNIS_DISPATCH_NUMERIC(c.iter->common_dtype(), "addcmul", [&] {
    using T = opmath_t<scalar_t>;
    T v = value.to<T>();
    cpu_kernel<scalar_t, scalar_t>(
        *c.iter, [v](T a, T b, T d) -> T { return scalar_ops::Addcmul()(a, b, d, v); });
  });
}
void addcdiv_cpu(OpCall& c) {
  Scalar value = c.scalar(3);
  IGNIS_DISPATCH_FLOAT(c.iter->common_dtype(), "addcdiv", [&] {
    using T = opmath_t<scalar_t>;
    T v = value.to<T>();
    cpu_kernel<scalar_t, scalar_t>(
        *c.iter, [v](T a, T b, T d) -> T { return scalar_ops::Addcdiv()(a, b, d, v); });
  });
}

void addcmul_cuda(OpCall& c) {
  cuda_pointwise(c, scalar_ops::Addcmul::name, c.iter->common_dtype(), cuda::kNumericDtypes,
                 {c.scalar(3)});
}
void addcdiv_cuda(OpCall& c) {
  cuda_pointwise(c, scalar_ops::Addcdiv::name, c.iter->common_dtype(), cuda::kFloatDtypes,
                 {c.scalar(3)});
}

// ---- masked_fill(self, mask, value) -------------------------------------------------
Scalar value_scalar(const Tensor& v) {
  if (v.dtype() == ScalarType::Bool) return Scalar(v.item_int() != 0);
  if (is_floating(v.dtype())) return Scalar(v.item_double());
  return Scalar(v.item_int());
}

template <bool Inplace>
void masked_fill_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const Tensor& mask = c.tensor(1);
  IGNIS_CHECK(mask.dtype() == ScalarType::Bool,
              "masked_fill_ only supports boolean masks, but got mask with dtype ",
              dtype_name(mask.dtype()));
  const Tensor& value = c.tensor(2);
  IGNIS_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got "
              "tensor with ", value.dim(), " dimension(s).");
  if (value.device().is_cpu()) cpu::check_scalar_fits(value_scalar(value), self.dtype());
  auto it = std::make_shared<TensorIterator>();
  it->add_output(Inplace ? self : Tensor());
  it->add_input(self);
  it->add_input(mask);
  IterConfig cfg;
  cfg.op_name = "masked_fill";
  cfg.common_dtype = self.dtype();
  it->build(cfg, c.device);
  if (Inplace) {
    IGNIS_CHECK(it->shape() == self.sizes(), "masked_fill_: mask of shape ", mask.shape_str(),
                " is not broadcastable to self of shape ", self.shape_str());
    if (!c.device.is_meta()) self.impl()->version_counter().bump();
  }
  c.outputs.push_back(Inplace ? self : it->output(0));
  c.iter = std::move(it);
}
void masked_fill_cpu(OpCall& c) {
  Scalar value = value_scalar(c.tensor(2));
  IGNIS_DISPATCH_ALL(c.iter->common_dtype(), "masked_fill", [&] {
    using T = opmath_t<scalar_t>;
    T v = value.to<T>();
    cpu_kernel<scalar_t, scalar_t>(
        *c.iter, [v](T x, T m) -> T { return scalar_ops::MaskedFill()(x, m, v); });
  });
}

// The value is a kernel argument (read from the GPU when it lives there).
void masked_fill_cuda(OpCall& c) {
  cuda_pointwise(c, scalar_ops::MaskedFill::name, c.iter->common_dtype(), cuda::kAllDtypes,
                 {tensor_to_scalar(c.tensor(2))});
}

// ---- derivatives ------------------------------------------------------------------
using namespace grad_ops;  // NOLINT

void where_bw(GradCtx& c) {
  const Tensor& cond = c.in(0);
  Tensor z = zeros_like(c.grad());
  c.set(1, where(cond, c.grad(), z));
  c.set(2, where(cond, z, c.grad()));
}
// The gradient flows to self where it was not clamped, else to the bound
// that won (PyTorch's rule; ties go to self).
void clamp_bw(GradCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor& g = c.grad();
  Tensor lo = c.opt_in(1), hi = c.opt_in(2);
  Tensor z = zeros_like(g);
  Tensor keep;
  if (lo.defined()) keep = op("ge", x, lo);
  if (hi.defined()) {
    Tensor k2 = op("le", x, hi);
    keep = keep.defined() ? op("logical_and", keep, k2) : k2;
  }
  c.set(0, keep.defined() ? where(keep, g, z) : g);
  if (lo.defined() && c.needs_grad(1)) {
    Tensor m = op("lt", x, lo);
    if (hi.defined()) m = op("logical_and", m, op("le", lo, hi));
    c.set(1, where(m, g, z));
  }
  if (hi.defined() && c.needs_grad(2)) c.set(2, where(op("gt", x, hi), g, z));
}
template <bool IsMax>
void clamp_one_bw(GradCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor& b = c.in(1);
  Tensor z = zeros_like(c.grad());
  Tensor keep = op(IsMax ? "le" : "ge", x, b);
  c.set(0, where(keep, c.grad(), z));
  c.set(1, where(keep, z, c.grad()));
}
void lerp_bw(GradCtx& c) {
  const Tensor& w = c.in(2);
  c.set(0, mul(c.grad(), sub(scalar(1.0), w)));
  c.set(1, mul(c.grad(), w));
  if (c.needs_grad(2)) c.set(2, mul(c.grad(), sub(c.in(1), c.in(0))));
}
void addcmul_bw(GradCtx& c) {
  double v = c.scalar(3).to_double();
  c.set(0, c.grad());
  if (c.needs_grad(1)) c.set(1, mul(mul(c.grad(), c.in(2)), v));
  if (c.needs_grad(2)) c.set(2, mul(mul(c.grad(), c.in(1)), v));
}
void addcdiv_bw(GradCtx& c) {
  double v = c.scalar(3).to_double();
  const Tensor& t2 = c.in(2);
  c.set(0, c.grad());
  if (c.needs_grad(1)) c.set(1, div(mul(c.grad(), v), t2));
  if (c.needs_grad(2)) c.set(2, neg(div(mul(mul(c.grad(), c.in(1)), v), mul(t2, t2))));
}
void masked_fill_bw(GradCtx& c) {
  const Tensor& m = c.in(1);
  Tensor z = zeros_like(c.grad());
  c.set(0, where(m, z, c.grad()));
  if (c.needs_grad(2)) c.set(2, where(m, c.grad(), z));
}

}  // namespace

void register_ternary_ops() {
  using namespace scalar_ops;  // NOLINT: the declarations name the functions
  using cuda::kAllDtypes, cuda::kFloatDtypes, cuda::kNumericDtypes;
  declare_cuda_pointwise("where", Where::name, 3, 0, kAllDtypes);
  declare_cuda_pointwise("clamp", Clamp::name, 3, 0, kAllDtypes);
  declare_cuda_pointwise("clamp_min", ClampMin::name, 2, 0, kAllDtypes);
  declare_cuda_pointwise("clamp_max", ClampMax::name, 2, 0, kAllDtypes);
  declare_cuda_pointwise("lerp", Lerp::name, 3, 0, kFloatDtypes);
  declare_cuda_pointwise("addcmul", Addcmul::name, 3, 1, kNumericDtypes);
  declare_cuda_pointwise("addcdiv", Addcdiv::name, 3, 1, kFloatDtypes);
  declare_cuda_pointwise("masked_fill", MaskedFill::name, 2, 1, kAllDtypes);
  def("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor")
      .category(OpCategory::Pointwise).both().scalar(Where::name).meta(where_meta).cpu(where_cpu)
      .cuda(where_cuda)
      .doc("self where condition holds, other elsewhere")
      .derivative(where_bw, "condition").core();
  // With one bound, clamp computes clamp_min or clamp_max.
  def("clamp(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor")
      .category(OpCategory::Pointwise).both().scalar(Clamp::name)
      .meta(clamp_meta<false>).cpu(clamp_cpu).cuda(clamp_cuda)
      .doc("min(max(self, min), max); NaN propagates")
      .derivative(clamp_bw, "self, min, max").core();
  def("clamp_(Tensor(a!) self, Tensor? min=None, Tensor? max=None) -> Tensor(a!)")
      .category(OpCategory::Pointwise).both().scalar(Clamp::name)
      .meta(clamp_meta<true>).cpu(clamp_cpu).cuda(clamp_cuda)
      .derivative(clamp_bw, "self, min, max");
  def("clamp_min(Tensor self, Tensor min) -> Tensor")
      .category(OpCategory::Pointwise).both().scalar(ClampMin::name)
      .meta(clamp_one_meta<false, false>).cpu(clamp_one_cpu<false>)
      .cuda(clamp_one_cuda<false>)
      .derivative(clamp_one_bw<false>, "self, min").decomposition(decomp::clamp_min);
  def("clamp_min_(Tensor(a!) self, Tensor min) -> Tensor(a!)")
      .category(OpCategory::Pointwise).both().scalar(ClampMin::name)
      .meta(clamp_one_meta<false, true>).cpu(clamp_one_cpu<false>)
      .cuda(clamp_one_cuda<false>)
      .derivative(clamp_one_bw<false>, "self, min");
  def("clamp_max(Tensor self, Tensor max) -> Tensor")
      .category(OpCategory::Pointwise).both().scalar(ClampMax::name)
      .meta(clamp_one_meta<true, false>).cpu(clamp_one_cpu<true>)
      .cuda(clamp_one_cuda<true>)
      .derivative(clamp_one_bw<true>, "self, max").decomposition(decomp::clamp_max);
  def("clamp_max_(Tensor(a!) self, Tensor max) -> Tensor(a!)")
      .category(OpCategory::Pointwise).both().scalar(ClampMax::name)
      .meta(clamp_one_meta<true, true>).cpu(clamp_one_cpu<true>)
      .cuda(clamp_one_cuda<true>)
      .derivative(clamp_one_bw<true>, "self, max");
  def("lerp(Tensor self, Tensor end, Tensor weight) -> Tensor")
      .category(OpCategory::Pointwise).both().scalar(Lerp::name)
      .meta(lerp_meta<false>).cpu(lerp_cpu).cuda(lerp_cuda)
      .doc("self + weight * (end - self)")
      .derivative(lerp_bw, "self, end, weight").decomposition(decomp::lerp);
  def("lerp_(Tensor(a!) self, Tensor end, Tensor weight) -> Tensor(a!)")
      .category(OpCategory::Pointwise).both().scalar(Lerp::name)
      .meta(lerp_meta<true>).cpu(lerp_cpu).cuda(lerp_cuda)
      .derivative(lerp_bw, "self, end, weight");
  def("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor")
      .category(OpCategory::Pointwise).both().scalar(Addcmul::name)
      .meta(addc_meta<false>).cpu(addcmul_cpu).cuda(addcmul_cuda)
      .doc("self + value * tensor1 * tensor2")
      .derivative(addcmul_bw, "tensor1, tensor2").decomposition(decomp::addcmul);
  def("addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)")
      .category(OpCategory::Pointwise).both().scalar(Addcmul::name)
      .meta(addc_meta<true>).cpu(addcmul_cpu).cuda(addcmul_cuda)
      .derivative(addcmul_bw, "tensor1, tensor2");
  def("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor")
      .category(OpCategory::Pointwise).both().scalar(Addcdiv::name)
      .meta(addcdiv_meta<false>).cpu(addcdiv_cpu).cuda(addcdiv_cuda)
      .doc("self + value * tensor1 / tensor2")
      .derivative(addcdiv_bw, "tensor1, tensor2").decomposition(decomp::addcdiv);
  def("addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)")
      .category(OpCategory::Pointwise).both().scalar(Addcdiv::name)
      .meta(addcdiv_meta<true>).cpu(addcdiv_cpu).cuda(addcdiv_cuda)
      .derivative(addcdiv_bw, "tensor1, tensor2");
  def("masked_fill(Tensor self, Tensor mask, Tensor value) -> Tensor")
      .category(OpCategory::Pointwise).both().scalar(MaskedFill::name)
      .meta(masked_fill_meta<false>).cpu(masked_fill_cpu)
      .cuda(masked_fill_cuda)
      .doc("value where mask is True, self elsewhere")
      .derivative(masked_fill_bw, "mask").decomposition(decomp::masked_fill);
  def("masked_fill_(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)")
      .category(OpCategory::Pointwise).both().scalar(MaskedFill::name)
      .meta(masked_fill_meta<true>).cpu(masked_fill_cpu)
      .cuda(masked_fill_cuda)
      .derivative(masked_fill_bw, "mask");
  alias("clip", "clamp");  // and clip_ for clamp_
}

}  // namespace ignis

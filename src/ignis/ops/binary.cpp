// Binary pointwise ops: arithmetic, comparison, logical and bitwise.
// Python numbers are accepted wherever `other` is a Tensor (they arrive as
// wrapped-number tensors and promote as scalars).
#include <cmath>

#include "ignis/autograd/formula.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/fill.h"
#include "ignis/kernels/cpu/loops.h"
#include "ignis/kernels/cuda/pointwise.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/kernels/scalar_ops.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/families.h"
#include "ignis/ops/pointwise.h"

namespace ignis {

namespace {

using cpu::cpu_kernel;
using R = DtypeRule;
enum class Types : uint8_t { Float, Numeric, All, IntBool };

template <typename scalar_t, typename F>
void run_same(TensorIterator& it, F f) {
  cpu_kernel<scalar_t, scalar_t>(it, f);
}

// The loop bodies: make<S>() returns the lambda the loop runs on elements of
// type S, calling the scalar function F (kernels/scalar_ops.h) on op-math
// values. Add and sub also read alpha (argument 2).
template <typename F>
struct Plain {
  template <typename S>
  static auto make(OpCall&) {
    using T = opmath_t<S>;
    return [](T a, T b) -> T { return F()(a, b); };
  }
};
template <typename F>
struct WithAlpha {
  template <typename S>
  static auto make(OpCall& c) {
    using T = opmath_t<S>;
    T alpha = c.scalar(2).to<T>();
    return [alpha](T a, T b) -> T { return F()(a, b, alpha); };
  }
};

// Dispatches Body over the iterator's common dtype, within the type set T.
template <typename Body, Types T>
void binary_cpu_impl(OpCall& c, const char* name) {
  TensorIterator& it = *c.iter;
  ScalarType dt = it.common_dtype();
  if constexpr (T == Types::Float) {
    IGNIS_DISPATCH_FLOAT(dt, name,
                         [&] { run_same<scalar_t>(it, Body::template make<scalar_t>(c)); });
  } else if constexpr (T == Types::Numeric) {
    IGNIS_DISPATCH_NUMERIC(dt, name,
                           [&] { run_same<scalar_t>(it, Body::template make<scalar_t>(c)); });
  } else if constexpr (T == Types::IntBool) {
    IGNIS_DISPATCH_INT_AND_BOOL(dt, name,
                                [&] { run_same<scalar_t>(it, Body::template make<scalar_t>(c)); });
  } else {
    IGNIS_DISPATCH_ALL(dt, name,
                       [&] { run_same<scalar_t>(it, Body::template make<scalar_t>(c)); });
  }
}

// Comparisons write bool from inputs of the common dtype.
template <typename F>
void compare_cpu(OpCall& c) {
  TensorIterator& it = *c.iter;
  IGNIS_DISPATCH_ALL(it.common_dtype(), c.op.schema().name.c_str(), [&] {
    using T = opmath_t<scalar_t>;
    cpu_kernel<bool, scalar_t>(it, [](T a, T b) { return F()(a, b); });
  });
}

template <typename F, Types T>
void binary_cpu(OpCall& c) { binary_cpu_impl<Plain<F>, T>(c, c.op.schema().name.c_str()); }
template <typename F, Types T>
void alpha_cpu(OpCall& c) { binary_cpu_impl<WithAlpha<F>, T>(c, c.op.schema().name.c_str()); }

// The CUDA kernels: the same scalar function, dtype and type set.
constexpr uint32_t dtypes_of(Types t) {
  return t == Types::Float     ? cuda::kFloatDtypes
         : t == Types::Numeric ? cuda::kNumericDtypes
         : t == Types::IntBool ? cuda::kIntBoolDtypes
                               : cuda::kAllDtypes;
}
template <typename F, Types T>
void binary_cuda(OpCall& c) { cuda_pointwise(c, F::name, c.iter->common_dtype(), dtypes_of(T)); }
template <typename F, Types T>
void alpha_cuda(OpCall& c) {
  cuda_pointwise(c, F::name, c.iter->common_dtype(), dtypes_of(T), {c.scalar(2)});
}
template <typename F>
void compare_cuda(OpCall& c) { cuda_pointwise(c, F::name, c.iter->common_dtype(), cuda::kAllDtypes); }

// Integer division (and modulo) by zero raises instead of trapping.
// Bool has no integer division kernel: the caller's dispatch reports it.
void check_no_int_zero(OpCall& c) {
  const TensorIterator& it = *c.iter;
  ScalarType dt = it.common_dtype();
  if (is_floating(dt) || dt == ScalarType::Bool || c.device.is_meta()) return;
  // A GPU divisor is scanned on the host: one synchronising copy, the price
  // of raising as the CPU does rather than returning garbage as torch's
  // CUDA kernels do.
  Tensor b = it.input(1);
  if (b.device().is_cuda()) {
    Tensor host = empty_tensor(b.sizes(), b.dtype(), Device(DeviceType::CPU));
    copy_tensor(host, b);
    b = host;
  }
  bool zero = false;
  IGNIS_DISPATCH_ALL(b.dtype(), "div", [&] {
    // b may be broadcast/strided: walk it through a copy-free iteration.
    TensorIterator scan;
    scan.add_output(Tensor());
    scan.add_input(b);
    IterConfig cfg;
    cfg.op_name = "div";
    cfg.output_dtype = ScalarType::Bool;
    cfg.keep_input_dtypes = true;
    scan.build(cfg, Device(DeviceType::CPU));
    struct Ctx { bool zero; } ctx{false};
    scan.serial_for_each(
        [](char** data, const int64_t* strides, int64_t n, void* p) {
          auto* cx = static_cast<Ctx*>(p);
          for (int64_t i = 0; i < n; ++i)
            if (*reinterpret_cast<const scalar_t*>(data[1] + i * strides[1]) == scalar_t(0)) cx->zero = true;
        },
        &ctx, 0, scan.numel());
    zero = ctx.zero;
  });
  IGNIS_CHECK(!zero, "ZeroDivisionError: integer division by zero in ", c.op.schema().name);
}

enum class Rounding { None, Trunc, Floor };
Rounding rounding_of(const IValue& v) {
  if (v.is_none()) return Rounding::None;
  const std::string& s = v.to_string();
  if (s == "trunc") return Rounding::Trunc;
  if (s == "floor") return Rounding::Floor;
  IGNIS_FAIL_KIND(Value, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
                  s, "'");
}

template <bool Inplace>
void div_meta(OpCall& c) {
  Rounding r = rounding_of(c.args[2]);
  pointwise_meta(c, {0, 1}, r == Rounding::None ? R::PromoteToFloat : R::Promote, Inplace);
}

void div_cpu(OpCall& c) {
  Rounding r = rounding_of(c.args[2]);
  TensorIterator& it = *c.iter;
  if (r != Rounding::None) check_no_int_zero(c);
  IGNIS_DISPATCH_NUMERIC(it.common_dtype(), "div", [&] {
    using T = opmath_t<scalar_t>;
    if (r == Rounding::None) {
      cpu_kernel<scalar_t, scalar_t>(it, [](T a, T b) -> T { return scalar_ops::Div()(a, b); });
    } else if (r == Rounding::Trunc) {
      cpu_kernel<scalar_t, scalar_t>(it,
                                     [](T a, T b) -> T { return scalar_ops::DivTrunc()(a, b); });
    } else {
      cpu_kernel<scalar_t, scalar_t>(it,
                                     [](T a, T b) -> T { return scalar_ops::DivFloor()(a, b); });
    }
  });
}

const char* div_function(Rounding r) {
  return r == Rounding::None    ? scalar_ops::Div::name
         : r == Rounding::Trunc ? scalar_ops::DivTrunc::name
                                : scalar_ops::DivFloor::name;
}
void div_cuda(OpCall& c) {
  Rounding r = rounding_of(c.args[2]);
  if (r != Rounding::None) check_no_int_zero(c);
  cuda_pointwise(c, div_function(r), c.iter->common_dtype(), cuda::kNumericDtypes);
}
// floor_divide, fmod, remainder: integer operands must not divide by zero.
template <typename F>
void checked_div_cuda(OpCall& c) {
  check_no_int_zero(c);
  cuda_pointwise(c, F::name, c.iter->common_dtype(), cuda::kNumericDtypes);
}

void floor_divide_cpu(OpCall& c) {
  TensorIterator& it = *c.iter;
  check_no_int_zero(c);
  IGNIS_DISPATCH_NUMERIC(it.common_dtype(), "floor_divide", [&] {
    using T = opmath_t<scalar_t>;
    cpu_kernel<scalar_t, scalar_t>(it, [](T a, T b) -> T { return scalar_ops::DivFloor()(a, b); });
  });
}

void fmod_cpu(OpCall& c) {
  TensorIterator& it = *c.iter;
  check_no_int_zero(c);
  IGNIS_DISPATCH_NUMERIC(it.common_dtype(), "fmod", [&] {
    using T = opmath_t<scalar_t>;
    cpu_kernel<scalar_t, scalar_t>(it, [](T a, T b) -> T { return scalar_ops::Fmod()(a, b); });
  });
}

void remainder_cpu(OpCall& c) {
  TensorIterator& it = *c.iter;
  check_no_int_zero(c);
  IGNIS_DISPATCH_NUMERIC(it.common_dtype(), "remainder", [&] {
    using T = opmath_t<scalar_t>;
    cpu_kernel<scalar_t, scalar_t>(it,
                                   [](T a, T b) -> T { return scalar_ops::Remainder()(a, b); });
  });
}

template <typename scalar_t>
void pow_loop(TensorIterator& it) {
    using T = opmath_t<scalar_t>;
    if constexpr (std::is_integral_v<T>) {
      cpu_kernel<scalar_t, scalar_t>(it, [](T a, T b) -> T { return scalar_ops::Pow()(a, b); });
    } else {
      // Known exponents: Note [pow's shortcuts] (scalar_ops.h).
      const Tensor& e = it.input(1);
      using scalar_ops::PowShortcut;
      const PowShortcut s = e.dim() == 0 && e.device().is_cpu()
                                ? scalar_ops::pow_shortcut(e.item_double())
                                : PowShortcut::None;
      auto run = [&](auto f) { cpu_kernel<scalar_t, scalar_t>(it, f); };
      switch (s) {
        case PowShortcut::Identity: return run([](T a, T) -> T { return a; });
        case PowShortcut::Square: return run([](T a, T) -> T { return a * a; });
        case PowShortcut::Cube: return run([](T a, T) -> T { return a * a * a; });
        case PowShortcut::Sqrt: return run([](T a, T) -> T { return std::sqrt(a); });
        case PowShortcut::Rsqrt: return run([](T a, T) -> T { return T(1) / std::sqrt(a); });
        case PowShortcut::Reciprocal: return run([](T a, T) -> T { return T(1) / a; });
        case PowShortcut::InverseSquare: return run([](T a, T) -> T { return T(1) / (a * a); });
        case PowShortcut::None: break;
      }
      run([](T a, T b) -> T { return scalar_ops::Pow()(a, b); });
    }
}

void pow_cpu(OpCall& c) {
  TensorIterator& it = *c.iter;
  // A Python-number exponent of 0 or 1 needs no arithmetic (PyTorch fills
  // ones or copies), so it works for every dtype, bool included.
  const Tensor& e = c.tensor(1);
  if (e.impl()->is_wrapped_number()) {
    double ev = e.item_double();
    if (ev == 0.0) return cpu::fill(c.outputs[0], Scalar(int64_t(1)));
    if (ev == 1.0) return copy_into(c.outputs[0], c.tensor(0));
  }
  IGNIS_DISPATCH_NUMERIC(it.common_dtype(), "pow", [&] { pow_loop<scalar_t>(it); });
}

// As pow_cpu, with the same shortcuts (a CPU 0-dim exponent of 2, 0.5 or 1
// is x * x, sqrt(x) or x, which pow need not compute exactly).
void pow_cuda(OpCall& c) {
  TensorIterator& it = *c.iter;
  const Tensor& e = c.tensor(1);
  if (e.impl()->is_wrapped_number()) {
    double ev = e.item_double();
    if (ev == 0.0) return fill_tensor(c.outputs[0], Scalar(int64_t(1)));
    if (ev == 1.0) return copy_tensor(c.outputs[0], c.tensor(0));
  }
  const ScalarType dt = it.common_dtype();
  cuda::check_dtype(cuda::kNumericDtypes, dt, "pow");
  if (is_floating(dt) && e.dim() == 0 && e.device().is_cpu()) {
    // Note [pow's shortcuts]: those with a scalar op of their own; x * x * x
    // and 1 / (x * x) stay pow's, which the GPU computes at full speed.
    using scalar_ops::PowShortcut;
    auto unary = [&](const char* fn) {
      cuda_pointwise(c, fn, dt, cuda::kFloatDtypes, {}, 1);
    };
    switch (scalar_ops::pow_shortcut(e.item_double())) {
      case PowShortcut::Identity:
        copy_tensor(it.output(0), it.input(0));
        return it.finish();
      case PowShortcut::Square: return unary(scalar_ops::Square::name);
      case PowShortcut::Sqrt: return unary(scalar_ops::Sqrt::name);
      case PowShortcut::Rsqrt: return unary(scalar_ops::Rsqrt::name);
      case PowShortcut::Reciprocal: return unary(scalar_ops::Reciprocal::name);
      case PowShortcut::Cube: case PowShortcut::InverseSquare: case PowShortcut::None: break;
    }
  }
  cuda_pointwise(c, scalar_ops::Pow::name, dt, cuda::kNumericDtypes);
}

void pow_meta_check(OpCall& c, bool inplace) {
  pointwise_meta(c, {0, 1}, R::Promote, inplace);
  const Tensor& e = c.tensor(1);
  if (!is_floating(c.iter->common_dtype()) && e.impl()->is_wrapped_number() &&
      !is_floating(e.dtype()) && e.item_int() < 0)
    IGNIS_FAIL("Integers to negative integer powers are not allowed.");
}
void pow_meta(OpCall& c) { pow_meta_check(c, false); }
void pow_meta_(OpCall& c) { pow_meta_check(c, true); }

// Shifts take integers only (bool and floats raise, naming torch's kernel).
template <typename F>
void shift_cpu(OpCall& c) {
  TensorIterator& it = *c.iter;
  constexpr bool left = std::is_same_v<F, scalar_ops::BitwiseLeftShift>;
  IGNIS_DISPATCH_INT(it.common_dtype(), left ? "lshift_cpu" : "rshift_cpu", [&] {
    cpu_kernel<scalar_t, scalar_t>(it, [](scalar_t a, scalar_t b) { return F()(a, b); });
  });
}

template <typename F>
void shift_cuda(OpCall& c) {
  constexpr bool left = std::is_same_v<F, scalar_ops::BitwiseLeftShift>;
  cuda::check_dtype(cuda::kIntDtypes, c.iter->common_dtype(), left ? "lshift_cuda" : "rshift_cuda");
  cuda_pointwise(c, F::name, c.iter->common_dtype(), cuda::kIntDtypes);
}

// pow.Scalar(self, exponent): a number to tensor powers; the number joins
// as a wrapped scalar, so it promotes as one (2 ** int tensor is int).
void pow_scalar_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  static OpRef pow_op("pow");
  const Scalar base = s[0].to_scalar();
  Tensor b = base.is_float() ? scalar_to_tensor(base.to_double(), ScalarType::Float64, true)
                             : scalar_to_tensor_int(base.to_int(), base.natural_dtype(), true);
  Tensor r = pow_op.tensor(b, s[1].to_tensor());
  s.clear();
  s.emplace_back(std::move(r));
}

// Declares name(self, other) and name_(self, other) with one meta rule and kernel.
// (Derivatives are declared with each op: `d` and the names it saves.)
// `scalar` names the kernel's scalar function (kernels/scalar_ops.h). The
// functional form is core unless it declares a decomposition.
// `gpu` is the CUDA kernel; `dtypes` (with `nscalars`, `bool_out`) what it
// runs, recorded for the no-GPU compile test (declare_cuda_pointwise).
struct CudaSpec {
  ImplFn kernel;
  uint32_t dtypes;
  int nscalars = 0;
  bool bool_out = false;
};
void pair(const std::string& name, const std::string& extra, MetaFn meta, MetaFn meta_inplace,
          ImplFn cpu, CudaSpec gpu, const char* scalar, const char* doc,
          DerivativeFn d = nullptr, const char* saves = "", DecompFn decomp = nullptr) {
  declare_cuda_pointwise(name, scalar, 2, gpu.nscalars, gpu.dtypes, gpu.bool_out);
  def(name + "(Tensor self, Tensor other" + extra + ") -> Tensor")
      .category(OpCategory::Pointwise).both().scalar(scalar).meta(meta).cpu(cpu)
      .cuda(gpu.kernel).doc(doc).derivative(d, saves).decomposition(decomp).core(!decomp);
  def(name + "_(Tensor(a!) self, Tensor other" + extra + ") -> Tensor(a!)")
      .category(OpCategory::Pointwise).both().scalar(scalar).meta(meta_inplace).cpu(cpu)
      .cuda(gpu.kernel).doc(doc).derivative(d, saves);
}

template <typename F, Types T, R Rule>
void arith(const std::string& name, const char* doc, const std::string& extra = "",
           DerivativeFn d = nullptr, const char* saves = "", DecompFn decomp = nullptr) {
  pair(name, extra, binary_meta<Rule, false>, binary_meta<Rule, true>, binary_cpu<F, T>,
       {binary_cuda<F, T>, dtypes_of(T)}, F::name, doc, d, saves, decomp);
}

template <typename F>
void compare(const std::string& name, const char* doc, DecompFn decomp = nullptr) {
  pair(name, "", binary_meta<R::BoolOut, false>, binary_meta<R::BoolOut, true>, compare_cpu<F>,
       {compare_cuda<F>, cuda::kAllDtypes, 0, true}, F::name, doc, nullptr, "", decomp);
}

void rsub_cpu(OpCall& c) {
  // The iterator's inputs are (other, self): other - alpha * self.
  TensorIterator& it = *c.iter;
  Scalar alpha = c.scalar(2);
  IGNIS_DISPATCH_NUMERIC(it.common_dtype(), "rsub", [&] {
    using T = opmath_t<scalar_t>;
    T al = alpha.to<T>();
    // a is other, b is self.
    cpu_kernel<scalar_t, scalar_t>(it,
                                   [al](T a, T b) -> T { return scalar_ops::Rsub()(b, a, al); });
  });
}

// The iterator holds (other, self): rsub(self, other, alpha) is sub of its
// inputs in order, other - alpha * self, which Rsub computes bit for bit.
void rsub_cuda(OpCall& c) {
  cuda_pointwise(c, scalar_ops::Sub::name, c.iter->common_dtype(), cuda::kNumericDtypes,
                 {c.scalar(2)});
}

void sub_check(OpCall& c) {
  bool a = c.tensor(0).dtype() == ScalarType::Bool, b = c.tensor(1).dtype() == ScalarType::Bool;
  IGNIS_CHECK(!(a && b), "Subtraction, the `-` operator, with two bool tensors is not supported. "
              "Use the `^` or `logical_xor()` operator instead.");
  IGNIS_CHECK(!(a || b), "Subtraction, the `-` operator, with a bool tensor is not supported. "
              "If you are trying to invert a mask, use the `~` or `logical_not()` operator "
              "instead.");
}

// alpha must be representable in the result type (PyTorch's alpha_check).
void alpha_check(OpCall& c) {
  Scalar alpha = c.scalar(2);
  ScalarType dt = c.iter->common_dtype();
  IGNIS_CHECK(!alpha.is_bool() || dt == ScalarType::Bool,
              "Boolean alpha only supported for Boolean results.");
  IGNIS_CHECK(is_floating(dt) || !alpha.is_float(),
              "For integral input tensors, argument alpha must not be a floating point number.");
  cpu::check_scalar_fits(alpha, cpu::opmath_type(dt));
}

template <bool Sub, bool Inplace>
void add_meta(OpCall& c) {
  if (Sub) sub_check(c);
  pointwise_meta(c, {0, 1}, R::Promote, Inplace);
  alpha_check(c);
}
// rsub(self, other) is sub(other, self): `other` leads, also for the layout
// of the result.
void rsub_meta(OpCall& c) {
  sub_check(c);
  pointwise_meta(c, {1, 0}, R::Promote, false);
  alpha_check(c);
}

// ---- derivatives (formulas through the dispatcher, so they differentiate again) ----
using namespace grad_ops;  // NOLINT

double alpha_of(const GradCtx& c) { return c.scalar(2).to_double(); }
void add_bw(GradCtx& c) {
  c.set(0, c.grad());
  double a = alpha_of(c);
  c.set(1, a == 1.0 ? c.grad() : mul(c.grad(), a));
}
void sub_bw(GradCtx& c) {
  c.set(0, c.grad());
  c.set(1, mul(c.grad(), -alpha_of(c)));
}
void rsub_bw(GradCtx& c) {  // other - alpha * self
  c.set(0, mul(c.grad(), -alpha_of(c)));
  c.set(1, c.grad());
}
void mul_bw(GradCtx& c) {
  if (c.needs_grad(0)) c.set(0, mul(c.grad(), c.in(1)));
  if (c.needs_grad(1)) c.set(1, mul(c.grad(), c.in(0)));
}
void div_bw(GradCtx& c) {
  if (!c.args[2].is_none()) {  // rounded quotients are piecewise constant
    c.set(0, zeros_like(c.grad()));
    c.set(1, zeros_like(c.grad()));
    return;
  }
  const Tensor& b = c.in(1);
  if (c.needs_grad(0)) c.set(0, div(c.grad(), b));
  if (c.needs_grad(1)) c.set(1, neg(div(mul(c.grad(), c.in(0)), mul(b, b))));
}
void pow_bw(GradCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor& e = c.in(1);
  const Tensor& g = c.grad();
  if (c.needs_grad(0)) {
    // e * x^(e-1), and 0 where e == 0 (so that 0^-1 does not poison it).
    // A Python-number exponent's e - 1 is taken in double here: two wrapped
    // numbers would promote to the default dtype (x.pow(1/3) in float64
    // had its gradient off by 5e-8).
    Tensor em1 = e.impl()->is_wrapped_number()
                     ? scalar_to_tensor(e.item_double() - 1.0, ScalarType::Float64, true)
                     : sub(e, scalar(1.0));
    Tensor d = mul(mul(g, e), pow(x, em1));
    c.set(0, where(op("eq", e, scalar(0.0)), zeros_like(d), d));
  }
  if (c.needs_grad(1)) {
    // x^e * log(x), and 0 where x == 0 and e >= 0.
    Tensor d = mul(mul(g, c.result()), op("log", x));
    Tensor mask = op("logical_and", op("eq", x, scalar(0.0)), op("ge", e, scalar(0.0)));
    c.set(1, where(mask, zeros_like(d), d));
  }
}
void fmod_bw(GradCtx& c) {
  c.set(0, c.grad());
  if (c.needs_grad(1))
    c.set(1, neg(mul(c.grad(), op("trunc", div(c.in(0), c.in(1))))));
}
void remainder_bw(GradCtx& c) {
  c.set(0, c.grad());
  if (c.needs_grad(1))
    c.set(1, neg(mul(c.grad(), op("floor", div(c.in(0), c.in(1))))));
}
}  // namespace

// max/min of two tensors: the gradient goes to the larger (smaller) one,
// split evenly on ties, as in PyTorch.
static void minmax_bw(GradCtx& c, bool is_max) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  const Tensor& g = c.grad();
  Tensor half = mul(g, 0.5);
  Tensor z = zeros_like(g);
  Tensor eq = op("eq", a, b);
  Tensor a_wins = op(is_max ? "gt" : "lt", a, b);
  Tensor b_wins = op(is_max ? "lt" : "gt", a, b);
  c.set(0, where(eq, half, where(a_wins, g, z)));
  c.set(1, where(eq, half, where(b_wins, g, z)));
}
void maximum_bw(GradCtx& c) { minmax_bw(c, true); }
void minimum_bw(GradCtx& c) { minmax_bw(c, false); }

namespace {
void atan2_bw(GradCtx& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  Tensor den = add(mul(a, a), mul(b, b));
  c.set(0, div(mul(c.grad(), b), den));
  c.set(1, div(mul(neg(c.grad()), a), den));
}
void hypot_bw(GradCtx& c) {
  if (c.needs_grad(0)) c.set(0, div(mul(c.grad(), c.in(0)), c.result()));
  if (c.needs_grad(1)) c.set(1, div(mul(c.grad(), c.in(1)), c.result()));
}
void copysign_bw(GradCtx& c) {
  // d|a|*sign(b)/da = sign(a)*sign(b) = result / a (0 where a == 0).
  const Tensor& a = c.in(0);
  Tensor d = mul(c.grad(), div(c.result(), a));
  c.set(0, where(op("eq", a, scalar(0.0)), zeros_like(d), d));
  c.set(1, zeros_like(c.grad()));
}

}  // namespace

void register_binary_ops() {
  using namespace scalar_ops;  // NOLINT: the table names the functions
  const std::string alpha = ", *, Scalar alpha=1";
  pair("add", alpha, add_meta<false, false>, add_meta<false, true>, alpha_cpu<Add, Types::All>,
       {alpha_cuda<Add, Types::All>, cuda::kAllDtypes, 1}, Add::name, "self + alpha * other",
       add_bw);
  pair("sub", alpha, add_meta<true, false>, add_meta<true, true>, alpha_cpu<Sub, Types::Numeric>,
       {alpha_cuda<Sub, Types::Numeric>, cuda::kNumericDtypes, 1}, Sub::name,
       "self - alpha * other", sub_bw);
  def("rsub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
      .category(OpCategory::Pointwise).scalar(Rsub::name).meta(rsub_meta).cpu(rsub_cpu)
      .cuda(rsub_cuda)
      .doc("other - alpha * self").derivative(rsub_bw).decomposition(decomp::rsub);
  arith<Mul, Types::All, R::Promote>("mul", "self * other", "", mul_bw, "self, other");
  declare_cuda_pointwise("div", DivTrunc::name, 2, 0, cuda::kNumericDtypes);
  declare_cuda_pointwise("div", DivFloor::name, 2, 0, cuda::kNumericDtypes);
  pair("div", ", *, str? rounding_mode=None", div_meta<false>, div_meta<true>, div_cpu,
       {div_cuda, cuda::kNumericDtypes}, Div::name,
       "self / other; rounding_mode 'trunc' or 'floor' rounds the quotient", div_bw, "self, other");
  pair("floor_divide", "", binary_meta<R::Promote, false>, binary_meta<R::Promote, true>,
       floor_divide_cpu, {checked_div_cuda<DivFloor>, cuda::kNumericDtypes}, DivFloor::name,
       "floor(self / other)", nullptr, "", decomp::floor_divide);
  pair("pow", "", pow_meta, pow_meta_, pow_cpu, {pow_cuda, cuda::kNumericDtypes}, Pow::name,
       "self ** other", pow_bw, "self, other, result");
  pair("fmod", "", binary_meta<R::Promote, false>, binary_meta<R::Promote, true>, fmod_cpu,
       {checked_div_cuda<Fmod>, cuda::kNumericDtypes}, Fmod::name,
       "C-style remainder (sign of self)", fmod_bw, "self, other");
  pair("remainder", "", binary_meta<R::Promote, false>, binary_meta<R::Promote, true>,
       remainder_cpu, {checked_div_cuda<Remainder>, cuda::kNumericDtypes}, Remainder::name,
       "Python-style remainder (sign of other)", remainder_bw, "self, other");
  arith<Maximum, Types::All, R::Promote>("maximum", "elementwise max, propagating NaN", "",
                                         maximum_bw, "self, other");
  arith<Minimum, Types::All, R::Promote>("minimum", "elementwise min, propagating NaN", "",
                                         minimum_bw, "self, other");
  arith<BitwiseAnd, Types::IntBool, R::Promote>("bitwise_and", "self & other");
  arith<BitwiseOr, Types::IntBool, R::Promote>("bitwise_or", "self | other");
  arith<BitwiseXor, Types::IntBool, R::Promote>("bitwise_xor", "self ^ other");
  pair("bitwise_left_shift", "", binary_meta<R::Promote, false>, binary_meta<R::Promote, true>,
       shift_cpu<BitwiseLeftShift>, {shift_cuda<BitwiseLeftShift>, cuda::kIntDtypes},
       BitwiseLeftShift::name,
       "self << other (integers; 0 when other is out of range)", nullptr, "",
       decomp::bitwise_shift);
  pair("bitwise_right_shift", "", binary_meta<R::Promote, false>, binary_meta<R::Promote, true>,
       shift_cpu<BitwiseRightShift>, {shift_cuda<BitwiseRightShift>, cuda::kIntDtypes},
       BitwiseRightShift::name,
       "self >> other (integers, arithmetic; the sign when other is out of range)", nullptr, "",
       decomp::bitwise_shift);
  def("pow.Scalar(Scalar self, Tensor exponent) -> Tensor").category(OpCategory::Composite)
      .composite(pow_scalar_kernel).doc("self ** exponent for a number self");
  arith<Atan2, Types::Float, R::PromoteToFloat>("atan2", "atan(self / other) by quadrant", "",
                                                atan2_bw, "self, other");
  arith<Hypot, Types::Float, R::Promote>("hypot", "sqrt(self^2 + other^2)", "", hypot_bw,
                                         "self, other, result");
  arith<Copysign, Types::Float, R::PromoteToFloat>("copysign", "|self| with the sign of other", "",
                                                   copysign_bw, "self, result");
  compare<Eq>("eq", "self == other");
  compare<Ne>("ne", "self != other");
  compare<Lt>("lt", "self < other");
  compare<Le>("le", "self <= other");
  compare<Gt>("gt", "self > other");
  compare<Ge>("ge", "self >= other");
  compare<LogicalAnd>("logical_and", "self and other, as bool");
  compare<LogicalOr>("logical_or", "self or other, as bool");
  compare<LogicalXor>("logical_xor", "self xor other, as bool");

  // PyTorch's other names of the ops above (and of their in-place forms).
  alias("subtract", "sub");
  alias("multiply", "mul");
  alias("divide", "div");
  alias("true_divide", "div");
  alias("less", "lt");
  alias("less_equal", "le");
  alias("greater", "gt");
  alias("greater_equal", "ge");
  alias("not_equal", "ne");
  alias("arctan2", "atan2");
}

}  // namespace ignis

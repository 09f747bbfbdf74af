// Unary pointwise ops. Each op is one line in the table at the bottom: its
// name, dtype rule, and its scalar function (kernels/scalar_ops.h, on the
// op-math type).
#include <cmath>

#include "ignis/autograd/formula.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/kernels/cpu/loops.h"
#include "ignis/kernels/cuda/pointwise.h"
#include "ignis/kernels/scalar_ops.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/families.h"
#include "ignis/ops/pointwise.h"

namespace ignis {

namespace {

using cpu::cpu_kernel;

// Which dtypes a kernel is instantiated for.
enum class Types : uint8_t { Float, Numeric, NumericBool, IntBool };

template <typename F, Types T, DtypeRule R>
void unary_cpu(OpCall& c) {
  TensorIterator& it = *c.iter;
  const char* name = c.op.schema().name.c_str();
  ScalarType dt = it.common_dtype();
  if constexpr (R == DtypeRule::BoolOut || R == DtypeRule::LogicalOut) {
    dt = it.input(0).dtype();
    IGNIS_DISPATCH_ALL(dt, name, [&] {
      cpu_kernel<bool, scalar_t>(it, [](opmath_t<scalar_t> x) { return F()(x); });
    });
  } else if constexpr (T == Types::Float) {
    IGNIS_DISPATCH_FLOAT(dt, name, [&] {
      cpu_kernel<scalar_t, scalar_t>(it, [](opmath_t<scalar_t> x) { return F()(x); });
    });
  } else if constexpr (T == Types::Numeric) {
    IGNIS_DISPATCH_NUMERIC(dt, name, [&] {
      cpu_kernel<scalar_t, scalar_t>(it, [](opmath_t<scalar_t> x) { return F()(x); });
    });
  } else if constexpr (T == Types::IntBool) {
    IGNIS_DISPATCH_INT_AND_BOOL(dt, name, [&] {
      cpu_kernel<scalar_t, scalar_t>(it, [](opmath_t<scalar_t> x) { return F()(x); });
    });
  } else {
    IGNIS_DISPATCH_ALL(dt, name, [&] {
      cpu_kernel<scalar_t, scalar_t>(it, [](opmath_t<scalar_t> x) { return F()(x); });
    });
  }
}

// The dtypes each Types value admits (the CPU dispatch macros' sets).
constexpr uint32_t dtypes_of(Types t) {
  return t == Types::Float     ? cuda::kFloatDtypes
         : t == Types::Numeric ? cuda::kNumericDtypes
         : t == Types::IntBool ? cuda::kIntBoolDtypes
                               : cuda::kAllDtypes;
}
constexpr bool bool_out(DtypeRule r) {
  return r == DtypeRule::BoolOut || r == DtypeRule::LogicalOut;
}

// The CUDA kernel: the same function, dtype and type set as unary_cpu.
template <typename F, Types T, DtypeRule R>
void unary_cuda(OpCall& c) {
  if constexpr (bool_out(R)) cuda_pointwise(c, F::name, c.iter->input(0).dtype(), cuda::kAllDtypes);
  else cuda_pointwise(c, F::name, c.iter->common_dtype(), dtypes_of(T));
}

// Input checks that run before the meta rule (PyTorch's op-specific errors).
struct NoCheck {
  static void check(const Tensor&) {}
};
struct NegCheck {
  static void check(const Tensor& t) {
    IGNIS_CHECK(t.dtype() != ScalarType::Bool,
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                "to invert a mask, use the `~` or `logical_not()` operator instead.");
  }
};
struct ReluCheck {
  static void check(const Tensor& t) {
    IGNIS_CHECK(t.dtype() != ScalarType::Bool, "Boolean inputs not supported for relu");
  }
};

template <DtypeRule R, bool Inplace, typename Check>
void checked_unary_meta(OpCall& c) {
  Check::check(c.tensor(0));
  pointwise_meta(c, {0}, R, Inplace);
}

// The derivative of a unary op: its formula and what it saves ("self",
// "result"); {} for ops whose outputs are not differentiable (bool results).
struct Deriv {
  DerivativeFn fn = nullptr;
  const char* saves = "";
};

// Registers `name` (function and method) and `name_` (in-place method),
// computing F. The functional form is core unless it declares a
// decomposition.
template <typename F, Types T, DtypeRule R, typename Check = NoCheck>
void unary(const char* name, const char* doc, Deriv d = {}, bool with_inplace = true,
           DecompFn decomp = nullptr) {
  std::string n(name);
  declare_cuda_pointwise(n, F::name, 1, 0, bool_out(R) ? cuda::kAllDtypes : dtypes_of(T),
                         bool_out(R));
  def(n + "(Tensor self) -> Tensor")
      .category(OpCategory::Pointwise).both().scalar(F::name)
      .meta(checked_unary_meta<R, false, Check>).cpu(unary_cpu<F, T, R>)
      .cuda(unary_cuda<F, T, R>).doc(doc)
      .derivative(d.fn, d.saves).decomposition(decomp).core(!decomp);
  if (with_inplace) {
    def(n + "_(Tensor(a!) self) -> Tensor(a!)")
        .category(OpCategory::Pointwise).both().scalar(F::name)
        .meta(checked_unary_meta<R, true, Check>).cpu(unary_cpu<F, T, R>)
        .cuda(unary_cuda<F, T, R>).doc(doc)
        .derivative(d.fn, d.saves);
  }
}

// abs, floor, ... on bool are errors in PyTorch; the Numeric type set rejects
// bool with a NotImplementedError naming the op. sign accepts bool.
using R = DtypeRule;

// gelu(approximate='none'|'tanh'): one op with a string argument, as in
// PyTorch; the kernel picks the formula once per call.
template <bool Inplace>
void gelu_cpu(OpCall& c) {
  const std::string& approx = c.args[1].to_string();
  if (approx == "tanh") unary_cpu<scalar_ops::GeluTanh, Types::Float, R::Promote>(c);
  else unary_cpu<scalar_ops::Gelu, Types::Float, R::Promote>(c);
}
void gelu_cuda(OpCall& c) {
  const bool tanh = c.args[1].to_string() == "tanh";
  cuda_pointwise(c, tanh ? scalar_ops::GeluTanh::name : scalar_ops::Gelu::name,
                 c.iter->common_dtype(), cuda::kFloatDtypes);
}
template <bool Inplace>
void gelu_meta(OpCall& c) {
  const std::string& approx = c.args[1].to_string();
  IGNIS_CHECK_VALUE(approx == "none" || approx == "tanh",
                    "gelu: approximate must be 'none' or 'tanh', got '", approx, "'");
  pointwise_meta(c, {0}, R::Promote, Inplace);
}

// ---- derivatives ------------------------------------------------------------------
using namespace grad_ops;  // NOLINT
constexpr double kLn2 = 0.69314718055994530942, kLn10 = 2.30258509299404568402;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

#define DERIV(Name, ...)                                     \
  void Name(GradCtx& c) {                                    \
    [[maybe_unused]] const Tensor& g = c.grad();             \
    c.set(0, __VA_ARGS__);                                   \
  }
#define X c.in(0)
#define Y c.result()
DERIV(neg_bw, neg(g))
DERIV(abs_bw, mul(g, op("sign", X)))
DERIV(exp_bw, mul(g, Y))
DERIV(exp2_bw, mul(mul(g, Y), kLn2))
DERIV(log_bw, div(g, X))
DERIV(log2_bw, div(g, mul(X, kLn2)))
DERIV(log10_bw, div(g, mul(X, kLn10)))
DERIV(log1p_bw, div(g, add(X, scalar(1.0))))
DERIV(expm1_bw, mul(g, add(Y, scalar(1.0))))
DERIV(sqrt_bw, div(g, mul(Y, 2.0)))
DERIV(rsqrt_bw, mul(mul(g, pow(Y, 3.0)), -0.5))
DERIV(sin_bw, mul(g, op("cos", X)))
DERIV(cos_bw, neg(mul(g, op("sin", X))))
DERIV(tan_bw, mul(g, add(sq(Y), scalar(1.0))))
DERIV(asin_bw, div(g, op("sqrt", sub(scalar(1.0), sq(X)))))
DERIV(acos_bw, neg(div(g, op("sqrt", sub(scalar(1.0), sq(X))))))
DERIV(atan_bw, div(g, add(sq(X), scalar(1.0))))
DERIV(sinh_bw, mul(g, op("cosh", X)))
DERIV(cosh_bw, mul(g, op("sinh", X)))
DERIV(tanh_bw, mul(g, sub(scalar(1.0), sq(Y))))
DERIV(asinh_bw, div(g, op("sqrt", add(sq(X), scalar(1.0)))))
DERIV(acosh_bw, div(g, op("sqrt", sub(sq(X), scalar(1.0)))))
DERIV(atanh_bw, div(g, sub(scalar(1.0), sq(X))))
DERIV(sigmoid_bw, mul(g, mul(Y, sub(scalar(1.0), Y))))
DERIV(relu_bw, mul(g, op("gt", Y, scalar(0.0))))
DERIV(erf_bw, mul(mul(g, op("exp", neg(sq(X)))), kTwoOverSqrtPi))
DERIV(erfc_bw, mul(mul(g, op("exp", neg(sq(X)))), -kTwoOverSqrtPi))
DERIV(lgamma_bw, mul(g, op("digamma", X)))
DERIV(digamma_bw, mul(g, op("polygamma", X, int64_t(1))))
DERIV(erfinv_bw, mul(mul(g, op("exp", sq(Y))), 0.88622692545275801365))  // sqrt(pi) / 2
DERIV(zero_bw, zeros_like(g))
DERIV(identity_bw, g)
DERIV(reciprocal_bw, neg(mul(g, sq(Y))))
DERIV(square_bw, mul(mul(g, X), 2.0))
#undef X
#undef Y

// polygamma(self, n): d/dx polygamma(n, x) = polygamma(n + 1, x).
void polygamma_bw(GradCtx& c) {
  c.set(0, mul(c.grad(), op("polygamma", c.in(0), c.args[1].to_int() + 1)));
}

// polygamma(self, n) -- torch's polygamma(n, input), whose function form
// python/ignis/_functions.py gives -- and its in-place method. n is the
// scalar function's argument after the tensor (scalar_ops::Polygamma).
template <bool Inplace>
void polygamma_meta(OpCall& c) {
  IGNIS_CHECK(c.args[1].to_int() >= 0, "polygamma(n, x) does not support negative n.");
  pointwise_meta(c, {0}, R::PromoteToFloat, Inplace);
}
void polygamma_cpu(OpCall& c) {
  const int64_t n = c.args[1].to_int();
  IGNIS_DISPATCH_FLOAT(c.iter->common_dtype(), "polygamma", [&] {
    using T = opmath_t<scalar_t>;
    const T order = T(n);
    cpu_kernel<scalar_t, scalar_t>(*c.iter,
                                   [order](T x) { return scalar_ops::Polygamma()(x, order); });
  });
}
void polygamma_cuda(OpCall& c) {
  cuda_pointwise(c, scalar_ops::Polygamma::name, c.iter->common_dtype(), cuda::kFloatDtypes,
                 {Scalar(c.args[1].to_int())});
}

void silu_bw(GradCtx& c) {
  Tensor s = op("sigmoid", c.in(0));
  // s * (1 + x * (1 - s))
  Tensor d = mul(s, add(scalar(1.0), mul(c.in(0), sub(scalar(1.0), s))));
  c.set(0, mul(c.grad(), d));
}
void mish_bw(GradCtx& c) {
  const Tensor& x = c.in(0);
  Tensor t = op("tanh", op("log1p", op("exp", x)));
  Tensor d = add(t, mul(mul(x, op("sigmoid", x)), sub(scalar(1.0), sq(t))));
  c.set(0, mul(c.grad(), d));
}
// gelu_backward(grad, self): the fused first derivative (one pass instead of
// a dozen). Under create_graph the formula below runs instead, so that it can
// be differentiated again.
void gelu_backward_meta(OpCall& c) {
  const std::string& approx = c.args[2].to_string();
  IGNIS_CHECK_VALUE(approx == "none" || approx == "tanh",
                    "gelu_backward: approximate must be 'none' or 'tanh', got '", approx, "'");
  pointwise_meta(c, {0, 1}, R::Promote, false);
}
// Contiguous operands (the usual case in backward): a plain loop the compiler
// vectorises, with the vector math inlined (inside cpu_kernel's four loop
// variants it declines to inline vtanh/verf and the loop stays scalar).
template <typename scalar_t, typename F>
void gelu_backward_contiguous(const scalar_t* __restrict g, const scalar_t* __restrict x,
                              scalar_t* __restrict o, int64_t n) {
  using T = opmath_t<scalar_t>;
  constexpr int64_t kBlock = 4096;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for if (n >= 32768)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t lo = b * kBlock, hi = std::min(n, lo + kBlock);
    for (int64_t i = lo; i < hi; ++i) {
      T gi = static_cast<T>(g[i]), xi = static_cast<T>(x[i]);
      o[i] = static_cast<scalar_t>(F()(gi, xi));
    }
  }
}
void gelu_backward_cpu(OpCall& c) {
  bool tanh = c.args[2].to_string() == "tanh";
  const Tensor &g = c.tensor(0), &x = c.tensor(1), &out = c.outputs[0];
  bool flat = g.is_contiguous() && x.is_contiguous() && out.is_contiguous() &&
              g.sizes() == out.sizes() && x.sizes() == out.sizes() && g.dtype() == out.dtype() &&
              x.dtype() == out.dtype();
  IGNIS_DISPATCH_FLOAT(c.iter->common_dtype(), "gelu_backward", [&] {
    using T = opmath_t<scalar_t>;
    if (flat) {
      auto run = tanh ? gelu_backward_contiguous<scalar_t, scalar_ops::GeluBackwardTanh>
                      : gelu_backward_contiguous<scalar_t, scalar_ops::GeluBackward>;
      run(g.data<scalar_t>(), x.data<scalar_t>(), out.data<scalar_t>(), out.numel());
    } else if (tanh) {
      cpu_kernel<scalar_t, scalar_t>(*c.iter,
                                     [](T g, T x) { return scalar_ops::GeluBackwardTanh()(g, x); });
    } else {
      cpu_kernel<scalar_t, scalar_t>(*c.iter,
                                     [](T g, T x) { return scalar_ops::GeluBackward()(g, x); });
    }
  });
}

void gelu_backward_cuda(OpCall& c) {
  const bool tanh = c.args[2].to_string() == "tanh";
  cuda_pointwise(c, tanh ? scalar_ops::GeluBackwardTanh::name : scalar_ops::GeluBackward::name,
                 c.iter->common_dtype(), cuda::kFloatDtypes);
}

void gelu_bw(GradCtx& c) {
  const Tensor& x = c.in(0);
  if (!autograd::grad_enabled()) {
    c.set(0, op("gelu_backward", c.grad(), x, c.args[1].to_string()));
    return;
  }
  if (c.args[1].to_string() == "tanh") {
    constexpr double k = 0.79788456080286535588, a = 0.044715;
    Tensor inner = mul(add(x, mul(pow(x, 3.0), a)), k);
    Tensor t = op("tanh", inner);
    Tensor left = mul(add(t, scalar(1.0)), 0.5);
    Tensor dinner = mul(add(mul(sq(x), 3.0 * a), scalar(1.0)), k);
    Tensor right = mul(mul(mul(x, 0.5), sub(scalar(1.0), sq(t))), dinner);
    c.set(0, mul(c.grad(), add(left, right)));
    return;
  }
  // Phi(x) + x * phi(x)
  Tensor cdf = mul(add(op("erf", mul(x, 0.70710678118654752440)), scalar(1.0)), 0.5);
  Tensor pdf = mul(op("exp", mul(sq(x), -0.5)), kInvSqrt2Pi);
  c.set(0, mul(c.grad(), add(cdf, mul(x, pdf))));
}

}  // namespace

void register_unary_ops() {
  using namespace scalar_ops;  // NOLINT: the table names the functions
  unary<Neg, Types::Numeric, R::Promote, NegCheck>("neg", "-input", {neg_bw});
  unary<Abs, Types::Numeric, R::Promote>("abs", "|input|", {abs_bw, "self"});
  unary<Exp, Types::Float, R::PromoteToFloat>("exp", "e ** input", {exp_bw, "result"});
  unary<Exp2, Types::Float, R::PromoteToFloat>("exp2", "2 ** input", {exp2_bw, "result"});
  unary<Log, Types::Float, R::PromoteToFloat>("log", "natural logarithm", {log_bw, "self"});
  unary<Log2, Types::Float, R::PromoteToFloat>("log2", "base-2 logarithm", {log2_bw, "self"});
  unary<Log10, Types::Float, R::PromoteToFloat>("log10", "base-10 logarithm", {log10_bw, "self"});
  unary<Log1p, Types::Float, R::PromoteToFloat>("log1p", "log(1 + input)", {log1p_bw, "self"});
  unary<Expm1, Types::Float, R::PromoteToFloat>("expm1", "exp(input) - 1", {expm1_bw, "result"});
  unary<Sqrt, Types::Float, R::PromoteToFloat>("sqrt", "square root", {sqrt_bw, "result"});
  unary<Rsqrt, Types::Float, R::PromoteToFloat>("rsqrt", "1 / sqrt(input)", {rsqrt_bw, "result"});
  unary<Sin, Types::Float, R::PromoteToFloat>("sin", "sine", {sin_bw, "self"});
  unary<Cos, Types::Float, R::PromoteToFloat>("cos", "cosine", {cos_bw, "self"});
  unary<Tan, Types::Float, R::PromoteToFloat>("tan", "tangent", {tan_bw, "result"});
  unary<Asin, Types::Float, R::PromoteToFloat>("asin", "arcsine", {asin_bw, "self"});
  unary<Acos, Types::Float, R::PromoteToFloat>("acos", "arccosine", {acos_bw, "self"});
  unary<Atan, Types::Float, R::PromoteToFloat>("atan", "arctangent", {atan_bw, "self"});
  unary<Sinh, Types::Float, R::PromoteToFloat>("sinh", "hyperbolic sine", {sinh_bw, "self"});
  unary<Cosh, Types::Float, R::PromoteToFloat>("cosh", "hyperbolic cosine", {cosh_bw, "self"});
  unary<Tanh, Types::Float, R::PromoteToFloat>("tanh", "hyperbolic tangent", {tanh_bw, "result"});
  unary<Asinh, Types::Float, R::PromoteToFloat>("asinh", "inverse hyperbolic sine",
                                                {asinh_bw, "self"});
  unary<Acosh, Types::Float, R::PromoteToFloat>("acosh", "inverse hyperbolic cosine",
                                                {acosh_bw, "self"});
  unary<Atanh, Types::Float, R::PromoteToFloat>("atanh", "inverse hyperbolic tangent",
                                                {atanh_bw, "self"});
  unary<Sigmoid, Types::Float, R::PromoteToFloat>("sigmoid", "1 / (1 + exp(-input))",
                                                  {sigmoid_bw, "result"});
  unary<Relu, Types::Numeric, R::Promote, ReluCheck>("relu", "max(input, 0)", {relu_bw, "result"});
  // The activations below take floating inputs only, as in PyTorch.
  unary<Silu, Types::Float, R::Promote>("silu", "input * sigmoid(input)", {silu_bw, "self"},
                                         true, decomp::silu);
  unary<Mish, Types::Float, R::Promote>("mish", "input * tanh(softplus(input))", {mish_bw, "self"},
                                         true, decomp::mish);
  unary<Erf, Types::Float, R::PromoteToFloat>("erf", "error function", {erf_bw, "self"});
  unary<Erfc, Types::Float, R::PromoteToFloat>("erfc", "1 - erf(input)", {erfc_bw, "self"});
  unary<Lgamma, Types::Float, R::PromoteToFloat>("lgamma", "log |gamma(input)|",
                                                 {lgamma_bw, "self"});
  unary<Digamma, Types::Float, R::PromoteToFloat>("digamma", "d/dx lgamma(input)",
                                                  {digamma_bw, "self"});
  unary<Erfinv, Types::Float, R::PromoteToFloat>("erfinv", "the inverse of erf on (-1, 1)",
                                                 {erfinv_bw, "result"});
  declare_cuda_pointwise("polygamma", Polygamma::name, 1, 1, cuda::kFloatDtypes, false);
  def("polygamma(Tensor self, int n) -> Tensor")
      .category(OpCategory::Pointwise).method_only().scalar(Polygamma::name)
      .meta(polygamma_meta<false>).cpu(polygamma_cpu).cuda(polygamma_cuda)
      .doc("the n-th derivative of digamma").derivative(polygamma_bw, "self").core();
  def("polygamma_(Tensor(a!) self, int n) -> Tensor(a!)")
      .category(OpCategory::Pointwise).method_only().scalar(Polygamma::name)
      .meta(polygamma_meta<true>).cpu(polygamma_cpu).cuda(polygamma_cuda)
      .doc("the n-th derivative of digamma").derivative(polygamma_bw, "self");
  unary<Floor, Types::Numeric, R::Promote>("floor", "round down", {zero_bw});
  unary<Ceil, Types::Numeric, R::Promote>("ceil", "round up", {zero_bw});
  unary<Round, Types::Numeric, R::Promote>("round", "round half to even", {zero_bw});
  unary<Trunc, Types::Numeric, R::Promote>("trunc", "round toward zero", {zero_bw});
  unary<Frac, Types::Float, R::Promote>("frac", "input - trunc(input)", {identity_bw}, true,
                                         decomp::frac);
  unary<Sign, Types::NumericBool, R::Promote>("sign", "-1, 0 or 1", {zero_bw});
  unary<Reciprocal, Types::Float, R::PromoteToFloat>("reciprocal", "1 / input",
                                                     {reciprocal_bw, "result"});
  unary<Square, Types::Numeric, R::PromoteWithInt>("square", "input * input (pow(input, 2))",
                                                   {square_bw, "self"}, true, decomp::square);
  unary<BitwiseNot, Types::IntBool, R::Promote>("bitwise_not", "~input (integers and bool)");
  unary<LogicalNot, Types::NumericBool, R::LogicalOut>("logical_not", "not input, as bool");
  unary<IsNan, Types::NumericBool, R::LogicalOut>("isnan", "input is NaN", {}, false);
  unary<IsInf, Types::NumericBool, R::LogicalOut>("isinf", "input is +/-inf", {}, false);
  unary<IsPosInf, Types::NumericBool, R::LogicalOut>("isposinf", "input is +inf", {}, false);
  unary<IsNegInf, Types::NumericBool, R::LogicalOut>("isneginf", "input is -inf", {}, false);
  unary<IsFinite, Types::NumericBool, R::LogicalOut>("isfinite", "input is finite", {}, false);
  unary<SignBit, Types::NumericBool, R::LogicalOut>("signbit", "sign bit of input is set",
                                                    {}, false);

  // approximate='tanh' computes gelu_tanh (scalar_ops.h).
  declare_cuda_pointwise("gelu", Gelu::name, 1, 0, cuda::kFloatDtypes);
  declare_cuda_pointwise("gelu", GeluTanh::name, 1, 0, cuda::kFloatDtypes);
  declare_cuda_pointwise("gelu_backward", GeluBackward::name, 2, 0, cuda::kFloatDtypes);
  declare_cuda_pointwise("gelu_backward", GeluBackwardTanh::name, 2, 0, cuda::kFloatDtypes);
  def("gelu(Tensor self, *, str approximate='none') -> Tensor")
      .category(OpCategory::Pointwise).both().scalar(scalar_ops::Gelu::name)
      .meta(gelu_meta<false>).cpu(gelu_cpu<false>).cuda(gelu_cuda)
      .doc("Gaussian error linear unit; approximate='tanh' uses the tanh formula")
      .derivative(gelu_bw, "self").decomposition(decomp::gelu);
  def("gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor")
      .category(OpCategory::Pointwise).scalar(scalar_ops::GeluBackward::name)
      .meta(gelu_backward_meta).cpu(gelu_backward_cpu).cuda(gelu_backward_cuda)
      .doc("grad_output * d gelu(self) / d self (autograd's fused derivative of gelu)")
      .decomposition(decomp::gelu_backward);
  def("gelu_(Tensor(a!) self, *, str approximate='none') -> Tensor(a!)")
      .category(OpCategory::Pointwise).both().scalar(scalar_ops::Gelu::name)
      .meta(gelu_meta<true>).cpu(gelu_cpu<true>).cuda(gelu_cuda).derivative(gelu_bw, "self");

  // PyTorch's other names of the ops above (and of their in-place forms).
  alias("negative", "neg");
  alias("absolute", "abs");
  alias("fix", "trunc");
  alias("arcsin", "asin");
  alias("arccos", "acos");
  alias("arctan", "atan");
  alias("arcsinh", "asinh");
  alias("arccosh", "acosh");
  alias("arctanh", "atanh");
}

}  // namespace ignis

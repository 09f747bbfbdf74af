// Unary pointwise ops. Each op is one line in the table at the bottom: its
// name, dtype rule, and the scalar function (on the op-math type).
#include <cmath>
#include <limits>

#include "ignis/kernels/cpu/loops.h"
#include "ignis/kernels/cpu/vec_math.h"
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

// Registers `name` (function and method) and `name_` (in-place method).
template <typename F, Types T, DtypeRule R, typename Check = NoCheck>
void unary(const char* name, const char* doc, bool with_inplace = true) {
  std::string n(name);
  def(n + "(Tensor self) -> Tensor")
      .category(OpCategory::Pointwise).both()
      .meta(checked_unary_meta<R, false, Check>).cpu(unary_cpu<F, T, R>).doc(doc);
  if (with_inplace) {
    def(n + "_(Tensor(a!) self) -> Tensor(a!)")
        .category(OpCategory::Pointwise).both()
        .meta(checked_unary_meta<R, true, Check>).cpu(unary_cpu<F, T, R>).doc(doc);
  }
}

// ---- scalar functions ---------------------------------------------------------
#define UNARY_FN(Name, ...)                 \
  struct Name {                              \
    template <typename T>                    \
    T operator()(T x) const { return __VA_ARGS__; } \
  };
#define PRED_FN(Name, ...)                     \
  struct Name {                                 \
    template <typename T>                       \
    bool operator()(T x) const { return __VA_ARGS__; } \
  };

UNARY_FN(Neg, -x)
UNARY_FN(Abs, x < T(0) ? T(-x) : x)
UNARY_FN(Exp, cpu::vexp(x))
UNARY_FN(Exp2, std::exp2(x))
UNARY_FN(Log, std::log(x))
UNARY_FN(Log2, std::log2(x))
UNARY_FN(Log10, std::log10(x))
UNARY_FN(Log1p, std::log1p(x))
UNARY_FN(Expm1, std::expm1(x))
UNARY_FN(Sqrt, std::sqrt(x))
UNARY_FN(Rsqrt, T(1) / std::sqrt(x))
UNARY_FN(Sin, std::sin(x))
UNARY_FN(Cos, std::cos(x))
UNARY_FN(Tan, std::tan(x))
UNARY_FN(Asin, std::asin(x))
UNARY_FN(Acos, std::acos(x))
UNARY_FN(Atan, std::atan(x))
UNARY_FN(Sinh, std::sinh(x))
UNARY_FN(Cosh, std::cosh(x))
UNARY_FN(Tanh, cpu::vtanh(x))
UNARY_FN(Sigmoid, cpu::sigmoid(x))
UNARY_FN(Relu, x < T(0) ? T(0) : x)  // NaN and -0.0 pass through, as in PyTorch
UNARY_FN(Silu, x * cpu::sigmoid(x))
UNARY_FN(Mish, x * cpu::vtanh(std::log1p(cpu::vexp(x))))
UNARY_FN(Softplus, x > T(20) ? x : std::log1p(cpu::vexp(x)))
UNARY_FN(GeluErf, T(0.5) * x * (T(1) + cpu::verf(x * T(0.70710678118654752440))))
UNARY_FN(GeluTanh, T(0.5) * x *
                       (T(1) + cpu::vtanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x))))
UNARY_FN(Erf, cpu::verf(x))
UNARY_FN(Erfc, std::erfc(x))
UNARY_FN(Floor, std::is_integral_v<T> ? x : T(std::floor(x)))
UNARY_FN(Ceil, std::is_integral_v<T> ? x : T(std::ceil(x)))
UNARY_FN(Round, std::is_integral_v<T> ? x : T(std::nearbyint(x)))
UNARY_FN(Trunc, std::is_integral_v<T> ? x : T(std::trunc(x)))
UNARY_FN(Frac, std::is_integral_v<T> ? T(0) : T(x - std::trunc(x)))
UNARY_FN(Sign, T((T(0) < x) - (x < T(0))))
UNARY_FN(Reciprocal, T(1) / x)
UNARY_FN(Square, x * x)
struct BitwiseNot {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return !x;
    else return T(~x);
  }
};
PRED_FN(LogicalNot, !(x != T(0)))
PRED_FN(IsNan, x != x)
PRED_FN(IsInf, std::is_floating_point_v<T> && (x == std::numeric_limits<T>::infinity() ||
                                               x == -std::numeric_limits<T>::infinity()))
PRED_FN(IsFinite, !std::is_floating_point_v<T> || (x == x && x != std::numeric_limits<T>::infinity() &&
                                                   x != -std::numeric_limits<T>::infinity()))
PRED_FN(IsPosInf, std::is_floating_point_v<T> && x == std::numeric_limits<T>::infinity())
PRED_FN(IsNegInf, std::is_floating_point_v<T> && x == -std::numeric_limits<T>::infinity())
PRED_FN(SignBit, std::signbit(double(x)))

// abs, floor, ... on bool are errors in PyTorch; the Numeric type set rejects
// bool with a NotImplementedError naming the op. sign accepts bool.
using R = DtypeRule;

// gelu(approximate='none'|'tanh'): one op with a string argument, as in
// PyTorch; the kernel picks the formula once per call.
template <bool Inplace>
void gelu_cpu(OpCall& c) {
  const std::string& approx = c.args[1].to_string();
  if (approx == "tanh") unary_cpu<GeluTanh, Types::Float, R::Promote>(c);
  else unary_cpu<GeluErf, Types::Float, R::Promote>(c);
}
template <bool Inplace>
void gelu_meta(OpCall& c) {
  const std::string& approx = c.args[1].to_string();
  IGNIS_CHECK_VALUE(approx == "none" || approx == "tanh",
                    "gelu: approximate must be 'none' or 'tanh', got '", approx, "'");
  pointwise_meta(c, {0}, R::Promote, Inplace);
}

}  // namespace

void register_unary_ops() {
  unary<Neg, Types::Numeric, R::Promote, NegCheck>("neg", "-input");
  unary<Neg, Types::Numeric, R::Promote, NegCheck>("negative", "alias of neg");
  unary<Abs, Types::Numeric, R::Promote>("abs", "|input|");
  unary<Abs, Types::Numeric, R::Promote>("absolute", "alias of abs");
  unary<Exp, Types::Float, R::PromoteToFloat>("exp", "e ** input");
  unary<Exp2, Types::Float, R::PromoteToFloat>("exp2", "2 ** input");
  unary<Log, Types::Float, R::PromoteToFloat>("log", "natural logarithm");
  unary<Log2, Types::Float, R::PromoteToFloat>("log2", "base-2 logarithm");
  unary<Log10, Types::Float, R::PromoteToFloat>("log10", "base-10 logarithm");
  unary<Log1p, Types::Float, R::PromoteToFloat>("log1p", "log(1 + input)");
  unary<Expm1, Types::Float, R::PromoteToFloat>("expm1", "exp(input) - 1");
  unary<Sqrt, Types::Float, R::PromoteToFloat>("sqrt", "square root");
  unary<Rsqrt, Types::Float, R::PromoteToFloat>("rsqrt", "1 / sqrt(input)");
  unary<Sin, Types::Float, R::PromoteToFloat>("sin", "sine");
  unary<Cos, Types::Float, R::PromoteToFloat>("cos", "cosine");
  unary<Tan, Types::Float, R::PromoteToFloat>("tan", "tangent");
  unary<Asin, Types::Float, R::PromoteToFloat>("asin", "arcsine");
  unary<Acos, Types::Float, R::PromoteToFloat>("acos", "arccosine");
  unary<Atan, Types::Float, R::PromoteToFloat>("atan", "arctangent");
  unary<Sinh, Types::Float, R::PromoteToFloat>("sinh", "hyperbolic sine");
  unary<Cosh, Types::Float, R::PromoteToFloat>("cosh", "hyperbolic cosine");
  unary<Tanh, Types::Float, R::PromoteToFloat>("tanh", "hyperbolic tangent");
  unary<Sigmoid, Types::Float, R::PromoteToFloat>("sigmoid", "1 / (1 + exp(-input))");
  unary<Relu, Types::Numeric, R::Promote, ReluCheck>("relu", "max(input, 0)");
  // The activations below take floating inputs only, as in PyTorch.
  unary<Silu, Types::Float, R::Promote>("silu", "input * sigmoid(input)");
  unary<Mish, Types::Float, R::Promote>("mish", "input * tanh(softplus(input))");
  unary<Erf, Types::Float, R::PromoteToFloat>("erf", "error function");
  unary<Erfc, Types::Float, R::PromoteToFloat>("erfc", "1 - erf(input)");
  unary<Floor, Types::Numeric, R::Promote>("floor", "round down");
  unary<Ceil, Types::Numeric, R::Promote>("ceil", "round up");
  unary<Round, Types::Numeric, R::Promote>("round", "round half to even");
  unary<Trunc, Types::Numeric, R::Promote>("trunc", "round toward zero");
  unary<Trunc, Types::Numeric, R::Promote>("fix", "alias of trunc");
  unary<Frac, Types::Float, R::Promote>("frac", "input - trunc(input)");
  unary<Sign, Types::NumericBool, R::Promote>("sign", "-1, 0 or 1");
  unary<Reciprocal, Types::Float, R::PromoteToFloat>("reciprocal", "1 / input");
  unary<Square, Types::Numeric, R::PromoteWithInt>("square", "input * input (pow(input, 2))");
  unary<BitwiseNot, Types::IntBool, R::Promote>("bitwise_not", "~input (integers and bool)");
  unary<LogicalNot, Types::NumericBool, R::LogicalOut>("logical_not", "not input, as bool");
  unary<IsNan, Types::NumericBool, R::LogicalOut>("isnan", "input is NaN", false);
  unary<IsInf, Types::NumericBool, R::LogicalOut>("isinf", "input is +/-inf", false);
  unary<IsPosInf, Types::NumericBool, R::LogicalOut>("isposinf", "input is +inf", false);
  unary<IsNegInf, Types::NumericBool, R::LogicalOut>("isneginf", "input is -inf", false);
  unary<IsFinite, Types::NumericBool, R::LogicalOut>("isfinite", "input is finite", false);
  unary<SignBit, Types::NumericBool, R::LogicalOut>("signbit", "sign bit of input is set", false);

  def("gelu(Tensor self, *, str approximate='none') -> Tensor")
      .category(OpCategory::Pointwise).both()
      .meta(gelu_meta<false>).cpu(gelu_cpu<false>)
      .doc("Gaussian error linear unit; approximate='tanh' uses the tanh formula");
  def("gelu_(Tensor(a!) self, *, str approximate='none') -> Tensor(a!)")
      .category(OpCategory::Pointwise).both()
      .meta(gelu_meta<true>).cpu(gelu_cpu<true>);
}

}  // namespace ignis

// The scalar functions of the pointwise ops, shared by every backend.
//
// One struct per formula. Its operator() is templated on the compute type
// (the op-math type: float for float16 and bfloat16), and its `name` is what
// the op's declaration gives as `.scalar(...)`, so that a code generator can
// name the struct (scalar_ops::Exp is "exp"). Eager CPU loops call these
// structs, and a generated C++ kernel can include this header and call the
// same ones, so both compute the same bits.
//
// Conventions:
// - Tensor operands come first, in the op's schema order; the op's
//   non-tensor arguments follow, converted to the compute type (add's alpha,
//   softplus's beta and threshold).
// - An op whose formula a string argument picks names its default formula;
//   the others are `<name>_<value>`: div, div_trunc and div_floor for
//   div's rounding_mode; gelu and gelu_tanh for gelu's approximate.
// - Comparisons and predicates return bool.
//
// Only the standard library and vec_math.h (portable, branch-free float
// math) are included.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "ignis/kernels/cpu/vec_math.h"

namespace ignis::scalar_ops {

#define IGNIS_UNARY_OP(Name, op_name, ...)            \
  struct Name {                                      \
    static constexpr const char* name = op_name;     \
    template <typename T>                            \
    IGNIS_ALWAYS_INLINE T operator()(T x) const { return __VA_ARGS__; }  \
  };
#define IGNIS_PREDICATE_OP(Name, op_name, ...)          \
  struct Name {                                        \
    static constexpr const char* name = op_name;       \
    template <typename T>                              \
    IGNIS_ALWAYS_INLINE bool operator()(T x) const { return __VA_ARGS__; } \
  };
#define IGNIS_BINARY_OP(Name, op_name, ...)                \
  struct Name {                                           \
    static constexpr const char* name = op_name;          \
    template <typename T>                                 \
    IGNIS_ALWAYS_INLINE T operator()(T a, T b) const { return __VA_ARGS__; }  \
  };
#define IGNIS_COMPARE_OP(Name, op_name, ...)                  \
  struct Name {                                              \
    static constexpr const char* name = op_name;             \
    template <typename T>                                    \
    IGNIS_ALWAYS_INLINE bool operator()(T a, T b) const { return __VA_ARGS__; }  \
  };

// ---- unary ----------------------------------------------------------------------
IGNIS_UNARY_OP(Neg, "neg", -x)
IGNIS_UNARY_OP(Abs, "abs", x < T(0) ? T(-x) : x)
IGNIS_UNARY_OP(Exp, "exp", cpu::vexp(x))
IGNIS_UNARY_OP(Exp2, "exp2", cpu::vexp2(x))
IGNIS_UNARY_OP(Log, "log", cpu::vlog(x))
IGNIS_UNARY_OP(Log2, "log2", cpu::vlog2(x))
IGNIS_UNARY_OP(Log10, "log10", cpu::vlog10(x))
IGNIS_UNARY_OP(Log1p, "log1p", cpu::vlog1p(x))
IGNIS_UNARY_OP(Expm1, "expm1", cpu::vexpm1(x))
IGNIS_UNARY_OP(Sqrt, "sqrt", std::sqrt(x))
IGNIS_UNARY_OP(Rsqrt, "rsqrt", T(1) / std::sqrt(x))
IGNIS_UNARY_OP(Sin, "sin", cpu::vsin(x))
IGNIS_UNARY_OP(Cos, "cos", cpu::vcos(x))
IGNIS_UNARY_OP(Tan, "tan", cpu::vtan(x))
IGNIS_UNARY_OP(Asin, "asin", cpu::vasin(x))
IGNIS_UNARY_OP(Acos, "acos", cpu::vacos(x))
IGNIS_UNARY_OP(Atan, "atan", cpu::vatan(x))
IGNIS_UNARY_OP(Sinh, "sinh", cpu::vsinh(x))
IGNIS_UNARY_OP(Cosh, "cosh", cpu::vcosh(x))
IGNIS_UNARY_OP(Tanh, "tanh", cpu::vtanh(x))
IGNIS_UNARY_OP(Asinh, "asinh", std::asinh(x))
IGNIS_UNARY_OP(Acosh, "acosh", std::acosh(x))
IGNIS_UNARY_OP(Atanh, "atanh", std::atanh(x))
IGNIS_UNARY_OP(Sigmoid, "sigmoid", cpu::sigmoid(x))
IGNIS_UNARY_OP(Relu, "relu", x < T(0) ? T(0) : x)  // NaN and -0.0 pass through, as in PyTorch
IGNIS_UNARY_OP(Silu, "silu", x * cpu::sigmoid(x))
IGNIS_UNARY_OP(Mish, "mish", x * cpu::vtanh(cpu::vlog1p(cpu::vexp(x))))
IGNIS_UNARY_OP(Gelu, "gelu", T(0.5) * x * (T(1) + cpu::verf(x * T(0.70710678118654752440))))
IGNIS_UNARY_OP(GeluTanh, "gelu_tanh",
               T(0.5) * x *
                   (T(1) + cpu::vtanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x))))
IGNIS_UNARY_OP(Erf, "erf", cpu::verf(x))
IGNIS_UNARY_OP(Erfc, "erfc", cpu::verfc(x))
IGNIS_UNARY_OP(Floor, "floor", std::is_integral_v<T> ? x : T(std::floor(x)))
IGNIS_UNARY_OP(Ceil, "ceil", std::is_integral_v<T> ? x : T(std::ceil(x)))
IGNIS_UNARY_OP(Round, "round", std::is_integral_v<T> ? x : T(std::nearbyint(x)))
IGNIS_UNARY_OP(Trunc, "trunc", std::is_integral_v<T> ? x : T(std::trunc(x)))
IGNIS_UNARY_OP(Frac, "frac", std::is_integral_v<T> ? T(0) : T(x - std::trunc(x)))
IGNIS_UNARY_OP(Sign, "sign", T((T(0) < x) - (x < T(0))))
IGNIS_UNARY_OP(Reciprocal, "reciprocal", T(1) / x)
IGNIS_UNARY_OP(Square, "square", x * x)
struct BitwiseNot {
  static constexpr const char* name = "bitwise_not";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return !x;
    else return T(~x);
  }
};
IGNIS_PREDICATE_OP(LogicalNot, "logical_not", !(x != T(0)))
IGNIS_PREDICATE_OP(IsNan, "isnan", x != x)
IGNIS_PREDICATE_OP(IsInf, "isinf",
                   std::is_floating_point_v<T> && (x == std::numeric_limits<T>::infinity() ||
                                                   x == -std::numeric_limits<T>::infinity()))
IGNIS_PREDICATE_OP(IsFinite, "isfinite",
                   !std::is_floating_point_v<T> ||
                       (x == x && x != std::numeric_limits<T>::infinity() &&
                        x != -std::numeric_limits<T>::infinity()))
IGNIS_PREDICATE_OP(IsPosInf, "isposinf",
                   std::is_floating_point_v<T> && x == std::numeric_limits<T>::infinity())
IGNIS_PREDICATE_OP(IsNegInf, "isneginf",
                   std::is_floating_point_v<T> && x == -std::numeric_limits<T>::infinity())
IGNIS_PREDICATE_OP(SignBit, "signbit", std::signbit(double(x)))

// Activations with parameters (the op's Scalar arguments, in schema order).
struct Softplus {
  static constexpr const char* name = "softplus";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T x, T beta, T threshold) const {
    return x * beta > threshold ? x : T(cpu::vlog1p(cpu::vexp(x * beta)) / beta);
  }
};
struct LeakyRelu {
  static constexpr const char* name = "leaky_relu";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T x, T negative_slope) const { return x > T(0) ? x : x * negative_slope; }
};
// elu(x, alpha, scale, input_scale), with negcoef = alpha * scale (computed
// in double, then converted) and poscoef = scale.
struct Elu {
  static constexpr const char* name = "elu";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T x, T negcoef, T poscoef, T input_scale) const {
    return x > T(0) ? x * poscoef : T(cpu::vexpm1(x * input_scale)) * negcoef;
  }
};
IGNIS_UNARY_OP(LogSigmoid, "logsigmoid",
               (x < T(0) ? x : T(0)) - T(cpu::vlog1p(cpu::vexp(x < T(0) ? x : -x))))
struct Hardtanh {
  static constexpr const char* name = "hardtanh";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T x, T min_val, T max_val) const {
    return x != x ? x : (x < min_val ? min_val : (x > max_val ? max_val : x));
  }
};

// gelu_backward(grad_output, self): grad_output * d gelu(self) / d self.
struct GeluBackward {
  static constexpr const char* name = "gelu_backward";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T g, T x) const {
    T cdf = T(0.5) * (T(1) + cpu::verf(x * T(0.70710678118654752440)));
    T pdf = cpu::vexp(T(-0.5) * x * x) * T(0.39894228040143267794);
    return g * (cdf + x * pdf);
  }
};
struct GeluBackwardTanh {
  static constexpr const char* name = "gelu_backward_tanh";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T g, T x) const {
    constexpr double k = 0.79788456080286535588, a = 0.044715;
    T t = cpu::vtanh(T(k) * (x + T(a) * x * x * x));
    T d = T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * T(k) * (T(1) + T(3 * a) * x * x);
    return g * d;
  }
};

// ---- special functions ---------------------------------------------------------------
// Gamma-family functions and erfinv, written out here so that the CPU, the
// generated kernels and CUDA (where only the device library's lgamma, erf,
// tan, ... exist) compute them alike. Special values follow torch's.
namespace special {
constexpr double kPi = 3.14159265358979323846;

// digamma(x) for x >= 10: log x - 1/(2x) - sum_k B_2k / (2k x^2k), k = 1..7
// (the last term is under 1e-15 there).
template <typename T>
IGNIS_ALWAYS_INLINE T digamma_asymptotic(T x) {
  const T y = T(1) / (x * x);
  const T series =
      y * (T(1.0 / 12) -
           y * (T(1.0 / 120) -
                y * (T(1.0 / 252) -
                     y * (T(1.0 / 240) - y * (T(1.0 / 132) - y * (T(691.0 / 32760) - y * T(1.0 / 12)))))));
  return T(std::log(x)) - T(0.5) / x - series;
}

// digamma (psi): the log-derivative of the gamma function. Below 10 it steps
// up by psi(x + 1) = psi(x) + 1/x; below 0 it reflects, psi(1 - x) - pi /
// tan(pi x), with tan taken of the fraction (x an integer has no value: nan;
// at zero, -inf with zero's sign flipped, as torch).
template <typename T>
IGNIS_ALWAYS_INLINE T digamma(T x) {
  if (x == T(0)) return std::signbit(double(x)) ? std::numeric_limits<T>::infinity()
                                                : -std::numeric_limits<T>::infinity();
  T reflected = T(0);
  if (x < T(0)) {
    const T whole = T(std::trunc(x));
    if (x == whole) return std::numeric_limits<T>::quiet_NaN();
    reflected = T(kPi) / T(std::tan(T(kPi) * (x - whole)));
    x = T(1) - x;
  }
  T steps = T(0);
  while (x < T(10)) {
    steps += T(1) / x;
    x += T(1);
  }
  return digamma_asymptotic(x) - steps - reflected;
}

// The Hurwitz zeta function zeta(s, q) = sum_k (q + k)^-s for s > 1, by
// Euler-Maclaurin: nine terms summed, then the integral of the rest and its
// Bernoulli corrections B_2j / (2j)! * s (s + 1) ... (s + 2j - 2) * a^(1 - s - 2j),
// j = 1..12, at a = q + 9. polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x).
template <typename T>
IGNIS_ALWAYS_INLINE T zeta(T s, T q) {
  if (s == T(1)) return std::numeric_limits<T>::infinity();
  if (q <= T(0)) {
    if (q == T(std::floor(q))) return std::numeric_limits<T>::infinity();
    if (s != T(std::floor(s))) return std::numeric_limits<T>::quiet_NaN();
  }
  // B_2j / (2j)!, j = 1..12
  constexpr double kB[12] = {1.0 / 12,
                             -1.0 / 720,
                             1.0 / 30240,
                             -1.0 / 1209600,
                             1.0 / 47900160,
                             -691.0 / 1307674368000.0,
                             1.0 / 74724249600.0,
                             -3617.0 / 10670622842880000.0,
                             43867.0 / 5109094217170944000.0,
                             -174611.0 / 802857662698291200000.0,
                             77683.0 / 14101100039391805440000.0,
                             -236364091.0 / 1693824136731743669452800000.0};
  T sum = T(std::pow(q, -s));
  T a = q;
  for (int k = 0; k < 9; ++k) {
    a += T(1);
    const T term = T(std::pow(a, -s));
    sum += term;
    if (std::abs(double(term)) < 1e-17 * std::abs(double(sum))) return sum;
  }
  const T w = a;
  sum += w * T(std::pow(w, -s)) / (s - T(1)) - T(0.5) * T(std::pow(w, -s));
  T rising = s;                      // s (s + 1) ... (s + 2j - 2)
  T power = T(std::pow(w, -s)) / w;  // w^(1 - s - 2j)
  for (int j = 0; j < 12; ++j) {
    const T term = T(kB[j]) * rising * power;
    sum += term;
    if (std::abs(double(term)) < 1e-17 * std::abs(double(sum))) break;
    rising *= (s + T(2 * j + 1)) * (s + T(2 * j + 2));
    power /= w * w;
  }
  return sum;
}

// trigamma (polygamma 1): below 0.5 it reflects, psi1(1 - x) + psi1(x) =
// pi^2 / sin^2(pi x); below 10 it steps up by psi1(x) = psi1(x + 1) + 1/x^2;
// then 1/x + 1/(2x^2) + sum_k B_2k / x^(2k+1), k = 1..8.
template <typename T>
IGNIS_ALWAYS_INLINE T trigamma(T x) {
  T sign = T(1), result = T(0);
  if (x < T(0.5)) {  // at a pole sin(pi x) rounds to a tiny number, as in torch
    const T s = T(std::sin(T(kPi) * x));
    result -= T(kPi * kPi) / (s * s);
    sign = T(-1);
    x = T(1) - x;
  }
  while (x < T(10)) {
    result += T(1) / (x * x);
    x += T(1);
  }
  const T y = T(1) / (x * x);
  const T series =
      T(1) + T(0.5) / x +
      y * (T(1.0 / 6) -
           y * (T(1.0 / 30) -
                y * (T(1.0 / 42) -
                     y * (T(1.0 / 30) - y * (T(5.0 / 66) - y * (T(691.0 / 2730) - y * T(7.0 / 6)))))));
  return sign * (result + series / x);
}

template <typename T>
IGNIS_ALWAYS_INLINE T polygamma(T x, long long n) {
  if (n == 0) return digamma(x);
  if (n == 1) return trigamma(x);
  double factorial = 1;  // n! overflows past 170: stop there (n may be 2^62: bad input)
  for (long long i = 2; i <= n && factorial != std::numeric_limits<double>::infinity(); ++i)
    factorial *= double(i);
  // in double: at a negative x the first terms cancel (-128 + 128 at -2.5)
  const double sign = n % 2 ? 1.0 : -1.0;
  return T(sign * factorial * zeta(double(n + 1), double(x)));
}

// erfinv: Giles's single-precision approximation ("Approximating the erfinv
// function", 2010; a polynomial in w = -log(1 - x^2), one for the centre and
// one for the tails), then Newton steps on erf (two: quadratic convergence
// from ~1e-7 reaches double precision).
template <typename T>
IGNIS_ALWAYS_INLINE T erfinv(T y) {
  if (!(y >= T(-1) && y <= T(1))) return std::numeric_limits<T>::quiet_NaN();
  if (y == T(1)) return std::numeric_limits<T>::infinity();
  if (y == T(-1)) return -std::numeric_limits<T>::infinity();
  double w = -std::log((1.0 - double(y)) * (1.0 + double(y))), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * double(y);
  constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
  for (int i = 0; i < 2; ++i) {
    const double slope = kTwoOverSqrtPi * std::exp(-x * x);
    if (slope == 0.0) break;
    x -= (std::erf(x) - double(y)) / slope;
  }
  return T(x);
}
}  // namespace special

IGNIS_UNARY_OP(Lgamma, "lgamma", T(std::lgamma(x)))
IGNIS_UNARY_OP(Digamma, "digamma", special::digamma(x))
IGNIS_UNARY_OP(Erfinv, "erfinv", special::erfinv(x))
// polygamma(x, n): the op's non-tensor argument n after the tensor.
struct Polygamma {
  static constexpr const char* name = "polygamma";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T x, T n) const { return special::polygamma(x, (long long)n); }
};

// ---- binary -----------------------------------------------------------------------
namespace detail {
// Signed integer + - * that wrap (two's complement) where C++ calls the
// overflow undefined: PyTorch's integer ops wrap in practice, and UBSan
// caught mul's (int64 min * 28 in the bit-shift decomposition). In the
// unsigned type, at least unsigned int so that 8- and 16-bit operands do not
// promote to a signed int; other types (floats, SIMD vectors) as they are.
template <typename T, typename F>
IGNIS_ALWAYS_INLINE T wrapping(T a, T b, F f) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return T(U(f(W(U(a)), W(U(b)))));
  } else {
    return f(a, b);
  }
}
template <typename T>
IGNIS_ALWAYS_INLINE T wrap_mul(T a, T b) {
  return wrapping(a, b, [](auto x, auto y) { return x * y; });
}
template <typename T>
IGNIS_ALWAYS_INLINE T wrap_add(T a, T b) {
  return wrapping(a, b, [](auto x, auto y) { return x + y; });
}
template <typename T>
IGNIS_ALWAYS_INLINE T wrap_sub(T a, T b) {
  return wrapping(a, b, [](auto x, auto y) { return x - y; });
}
}  // namespace detail

// add(self, other, alpha) = self + alpha * other (for bool: self or (alpha and other)).
struct Add {
  static constexpr const char* name = "add";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T a, T b, T alpha) const {
    if constexpr (std::is_same_v<T, bool>) return a || (alpha && b);
    else return detail::wrap_add(a, detail::wrap_mul(alpha, b));
  }
};
struct Sub {
  static constexpr const char* name = "sub";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T a, T b, T alpha) const { return Add()(a, b, T(-alpha)); }
};
// rsub(self, other, alpha) = other - alpha * self.
struct Rsub {
  static constexpr const char* name = "rsub";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T self, T other, T alpha) const {
    return detail::wrap_sub(other, detail::wrap_mul(alpha, self));
  }
};
struct Mul {
  static constexpr const char* name = "mul";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else return detail::wrap_mul(a, b);
  }
};
IGNIS_BINARY_OP(Maximum, "maximum", (a != a) ? a : ((b != b) ? b : (a > b ? a : b)))
IGNIS_BINARY_OP(Minimum, "minimum", (a != a) ? a : ((b != b) ? b : (a < b ? a : b)))
IGNIS_BINARY_OP(BitwiseAnd, "bitwise_and", std::is_same_v<T, bool> ? T(a && b) : T(a & b))
IGNIS_BINARY_OP(BitwiseOr, "bitwise_or", std::is_same_v<T, bool> ? T(a || b) : T(a | b))
IGNIS_BINARY_OP(BitwiseXor, "bitwise_xor", std::is_same_v<T, bool> ? T(a != b) : T(a ^ b))
// Shifts (integers): a count out of range (negative, or at least the
// type's width) shifts every bit out, as PyTorch defines it: a left shift
// gives 0, a right shift the sign (-1 or 0). Left shifts go through the
// unsigned type, so the shifted-out bits wrap instead of overflowing.
struct BitwiseLeftShift {
  static constexpr const char* name = "bitwise_left_shift";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      using U = std::make_unsigned_t<T>;
      const bool out = (std::is_signed_v<T> && b < T(0)) || b >= T(sizeof(T) * 8);
      return out ? T(0) : T(U(a) << b);
    } else {
      return a;  // integers only: kernels never instantiate this
    }
  }
};
struct BitwiseRightShift {
  static constexpr const char* name = "bitwise_right_shift";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const bool out = (std::is_signed_v<T> && b < T(0)) || b >= T(sizeof(T) * 8);
      return out ? (a < T(0) ? T(-1) : T(0)) : T(a >> b);
    } else {
      return a;  // integers only: kernels never instantiate this
    }
  }
};
IGNIS_BINARY_OP(Atan2, "atan2", T(cpu::vatan2(a, b)))
IGNIS_BINARY_OP(Hypot, "hypot", T(cpu::vhypot(a, b)))
IGNIS_BINARY_OP(Copysign, "copysign", T(std::copysign(a, b)))

namespace detail {
// True when a / b overflows (INT_MIN / -1), which traps on x86; the quotient
// then wraps to INT_MIN and the remainder is 0, as in PyTorch.
template <typename T>
inline bool div_overflows(T a, T b) {
  if constexpr (std::is_signed_v<T> && std::is_integral_v<T>)
    return b == T(-1) && a == std::numeric_limits<T>::min();
  else
    return false;
}
}  // namespace detail

// Division. Integer division by zero must be refused before the loop runs
// (eager raises ZeroDivisionError); these functions assume b != 0 there.
IGNIS_BINARY_OP(Div, "div", a / b)
struct DivTrunc {
  static constexpr const char* name = "div_trunc";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a;
    else if constexpr (std::is_integral_v<T>) return detail::div_overflows(a, b) ? a : T(a / b);
    else return std::trunc(a / b);
  }
};
// Python's floor division (also floor_divide's function).
struct DivFloor {
  static constexpr const char* name = "div_floor";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if constexpr (std::is_same_v<T, bool>) {
        return a;
      } else {
        if (detail::div_overflows(a, b)) return a;
        T q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        return q;
      }
    } else {
      if (b == T(0)) return a / b;
      T mod = std::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
      T fl;
      if (div != T(0)) {
        fl = std::floor(div);
        if (div - fl > T(0.5)) fl += T(1);
      } else {
        fl = std::copysign(T(0), a / b);
      }
      return fl;
    }
  }
};
// C's remainder: the sign of a.
struct Fmod {
  static constexpr const char* name = "fmod";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return false;
    else if constexpr (std::is_integral_v<T>) return detail::div_overflows(a, b) ? T(0) : T(a % b);
    else return std::fmod(a, b);
  }
};
// Python's remainder: the sign of b.
struct Remainder {
  static constexpr const char* name = "remainder";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return false;
    } else {
      T r = Fmod()(a, b);
      if (r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
      return r;
    }
  }
};
// Note [pow's shortcuts]
// pow(x, e) of floats with a known exponent e in {1, 2, 3, 0.5, -0.5, -1,
// -2} is computed as the arithmetic PyTorch's CPU kernels use for it: x,
// x * x, x * x * x, sqrt(x), 1 / sqrt(x), 1 / x, 1 / (x * x). Eager CPU
// takes them for a 0-dim CPU exponent; the compiler for a constant one
// (BodyBuilder, schedule.cpp). Besides matching torch bit for bit, they
// keep a fused loop vectorised: std::pow is a libm call GCC cannot
// vectorise, and GPT-2's tanh GELU written with pow(x, 3.0) (nanoGPT's
// new_gelu) ran 26x slower compiled than with x * x * x (4096x3072 on the
// 2-core VM: 81.6 against 3.2 ms).
enum class PowShortcut : uint8_t { None, Identity, Square, Cube, Sqrt, Rsqrt, Reciprocal, InverseSquare };
inline PowShortcut pow_shortcut(double e) {
  if (e == 1.0) return PowShortcut::Identity;
  if (e == 2.0) return PowShortcut::Square;
  if (e == 3.0) return PowShortcut::Cube;
  if (e == 0.5) return PowShortcut::Sqrt;
  if (e == -0.5) return PowShortcut::Rsqrt;
  if (e == -1.0) return PowShortcut::Reciprocal;
  if (e == -2.0) return PowShortcut::InverseSquare;
  return PowShortcut::None;
}

// pow(self, exponent); Note [pow's shortcuts] for known float exponents.
struct Pow {
  static constexpr const char* name = "pow";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T base, T exp) const {
    if constexpr (!std::is_integral_v<T>) {
      return cpu::vpow(base, exp);
    } else if constexpr (std::is_same_v<T, bool>) {
      return T(std::pow(double(base), double(exp)));
    } else {
      if (exp < 0) {
        if (base == 1) return 1;
        if (base == -1) return (exp % 2 == 0) ? 1 : -1;
        return 0;
      }
      // In the unsigned type: an overflowing power wraps around (as
      // PyTorch's does in practice) instead of being undefined behaviour.
      // (W: at least unsigned int, so that 8- and 16-bit operands do not
      // promote to a signed int that could overflow.)
      using U = std::make_unsigned_t<T>;
      using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
      W result = 1, b = W(U(base));
      while (exp) {
        if (exp & 1) result *= b;
        exp >>= 1;
        b *= b;
      }
      return T(U(result));
    }
  }
};

IGNIS_COMPARE_OP(Eq, "eq", a == b)
IGNIS_COMPARE_OP(Ne, "ne", a != b)
IGNIS_COMPARE_OP(Lt, "lt", a < b)
IGNIS_COMPARE_OP(Le, "le", a <= b)
IGNIS_COMPARE_OP(Gt, "gt", a > b)
IGNIS_COMPARE_OP(Ge, "ge", a >= b)
IGNIS_COMPARE_OP(LogicalAnd, "logical_and", (a != T(0)) && (b != T(0)))
IGNIS_COMPARE_OP(LogicalOr, "logical_or", (a != T(0)) || (b != T(0)))
IGNIS_COMPARE_OP(LogicalXor, "logical_xor", (a != T(0)) != (b != T(0)))

// ---- three operands ---------------------------------------------------------------
// where(condition, self, other); the condition arrives in the compute type.
struct Where {
  static constexpr const char* name = "where";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T cond, T a, T b) const { return cond != T(0) ? a : b; }
};
// NaN propagates from x and from the bound.
struct ClampMin {
  static constexpr const char* name = "clamp_min";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T x, T lo) const { return (x != x) ? x : (lo != lo ? lo : (x < lo ? lo : x)); }
};
struct ClampMax {
  static constexpr const char* name = "clamp_max";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T x, T hi) const { return (x != x) ? x : (hi != hi ? hi : (x > hi ? hi : x)); }
};
// clamp(self, min, max) with both bounds; with one, it is clamp_min or clamp_max.
struct Clamp {
  static constexpr const char* name = "clamp";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T x, T lo, T hi) const { return ClampMax()(ClampMin()(x, lo), hi); }
};
// PyTorch's formulation: exact at weight 0 and 1.
struct Lerp {
  static constexpr const char* name = "lerp";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T a, T b, T w) const {
    return std::abs(w) < T(0.5) ? a + w * (b - a) : b - (b - a) * (T(1) - w);
  }
};
struct Addcmul {
  static constexpr const char* name = "addcmul";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T self, T t1, T t2, T value) const { return self + value * t1 * t2; }
};
struct Addcdiv {
  static constexpr const char* name = "addcdiv";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T self, T t1, T t2, T value) const { return self + value * t1 / t2; }
};
// masked_fill(self, mask, value): the mask arrives in the compute type.
struct MaskedFill {
  static constexpr const char* name = "masked_fill";
  template <typename T>
  IGNIS_ALWAYS_INLINE T operator()(T x, T mask, T value) const { return mask != T(0) ? value : x; }
};

// ---- fused optimizer steps ---------------------------------------------------------
// Not pointwise ops (they update a parameter and its state in place), so not
// in the list below: one element of the step of _fused_adam_/_fused_adamw_
// and _fused_sgd_ (ops/foreach.cpp), in the compute type T. The CPU loops
// (kernels/cpu/fused_optimizer.cpp) and the CUDA multi-tensor kernel
// (kernels/cuda/multi_tensor.cpp) both call these, so both devices compute
// the same formula. `g` is the gradient already unscaled and negated for
// maximize; bias_correction1 = 1 - beta1^step and bias_correction2_sqrt =
// sqrt(1 - beta2^step), computed once per tensor by the caller.
struct AdamElement {
  template <typename T>
  IGNIS_ALWAYS_INLINE void operator()(T& param, T g, T& exp_avg, T& exp_avg_sq, T& max_exp_avg_sq,
                                      bool amsgrad, bool decoupled, T lr, T beta1, T beta2,
                                      T weight_decay, T eps, T bias_correction1,
                                      T bias_correction2_sqrt) const {
    if (weight_decay != T(0)) {
      if (decoupled) param = param - lr * weight_decay * param;
      else g = g + weight_decay * param;
    }
    exp_avg = beta1 * exp_avg + (T(1) - beta1) * g;
    exp_avg_sq = beta2 * exp_avg_sq + (T(1) - beta2) * g * g;
    T second = exp_avg_sq;
    if (amsgrad) {
      // NaN propagates, as maximum() does in the for-loop optimizer.
      if (exp_avg_sq != exp_avg_sq || exp_avg_sq > max_exp_avg_sq) max_exp_avg_sq = exp_avg_sq;
      second = max_exp_avg_sq;
    }
    const T denom = std::sqrt(second) / bias_correction2_sqrt + eps;
    param = param - (lr / bias_correction1) * exp_avg / denom;
  }
};
// SGD: `has_buffer` when momentum != 0; on the first step the buffer
// becomes the (decayed) gradient, as the for-loop optimizer's clone does.
struct SgdElement {
  template <typename T>
  IGNIS_ALWAYS_INLINE void operator()(T& param, T g, T& buffer, bool has_buffer, bool first_step,
                                      bool nesterov, T lr, T weight_decay, T momentum,
                                      T dampening) const {
    if (weight_decay != T(0)) g = g + weight_decay * param;
    if (has_buffer) {
      buffer = first_step ? g : momentum * buffer + (T(1) - dampening) * g;
      g = nesterov ? g + momentum * buffer : buffer;
    }
    param = param - lr * g;
  }
};

#undef IGNIS_UNARY_OP
#undef IGNIS_PREDICATE_OP
#undef IGNIS_BINARY_OP
#undef IGNIS_COMPARE_OP

// Every struct above, once: a code generator builds its table from the
// structs' names (scalar_ops::Exp::name is "exp") rather than a second list
// of strings, and a test checks that each op's `.scalar(...)` names one.
#define IGNIS_FORALL_SCALAR_OPS(_) \
  _(Neg) _(Abs) _(Exp) _(Exp2) _(Log) _(Log2) _(Log10) _(Log1p) _(Expm1) _(Sqrt) _(Rsqrt) \
  _(Sin) _(Cos) _(Tan) _(Asin) _(Acos) _(Atan) _(Sinh) _(Cosh) _(Tanh) _(Asinh) _(Acosh) _(Atanh) _(Sigmoid) _(Relu) \
  _(Silu) _(Mish) _(Gelu) _(GeluTanh) _(Erf) _(Erfc) _(Lgamma) _(Digamma) _(Erfinv) _(Polygamma) _(Floor) _(Ceil) _(Round) _(Trunc) \
  _(Frac) _(Sign) _(Reciprocal) _(Square) _(BitwiseNot) _(LogicalNot) _(IsNan) _(IsInf) \
  _(IsFinite) _(IsPosInf) _(IsNegInf) _(SignBit) _(Softplus) _(LeakyRelu) _(Elu) _(LogSigmoid) \
  _(Hardtanh) _(GeluBackward) _(GeluBackwardTanh) _(Add) _(Sub) _(Rsub) _(Mul) _(Maximum) \
  _(Minimum) _(BitwiseAnd) _(BitwiseOr) _(BitwiseXor) _(BitwiseLeftShift) _(BitwiseRightShift) \
  _(Atan2) _(Hypot) _(Copysign) _(Div) \
  _(DivTrunc) _(DivFloor) _(Fmod) _(Remainder) _(Pow) _(Eq) _(Ne) _(Lt) _(Le) _(Gt) _(Ge) \
  _(LogicalAnd) _(LogicalOr) _(LogicalXor) _(Where) _(ClampMin) _(ClampMax) _(Clamp) _(Lerp) \
  _(Addcmul) _(Addcdiv) _(MaskedFill)

}  // namespace ignis::scalar_ops

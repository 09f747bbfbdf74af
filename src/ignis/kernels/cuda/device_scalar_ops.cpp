#include "ignis/kernels/cuda/device_scalar_ops.h"

#include <map>
#include <sstream>

#include "ignis/core/error.h"
#include "ignis/kernels/scalar_ops.h"

namespace ignis::cuda {

extern const char* const kScalarOpsText;  // generated: scalar_ops_text.cpp

namespace {

// Note [CUDA kernels derive from scalar_ops.h]
// A pointwise op's GPU formula is its CPU formula: the kernel calls
// ignis::scalar_ops::<Struct>()(...) from the header's own text, so there is
// no second table of CUDA expressions to drift from the CPU's. What differs
// is below: the standard library pieces the header uses, over the device
// math library (full precision: no fast-math), and vec_math.h's functions,
// which on the CPU are branch-free approximations and here are the device's
// functions of the same names (expf, erff, ..., powf: IG_FORALL_VEC_MATH1/2
// below); results therefore agree with the CPU's to rounding, not bit for
// bit, for the transcendental functions (exact for the rest).
const char* kShim = R"CUDA(
// vec_math.h's functions of one and two arguments and the math library's
// function each one stands for here.
#define IG_FORALL_VEC_MATH1(_) _(vexp, exp) _(verf, erf) _(vtanh, tanh) _(vsin, sin) \
  _(vcos, cos) _(vtan, tan) _(vlog, log) _(vlog2, log2) _(vlog10, log10) _(vlog1p, log1p) \
  _(vexpm1, expm1) _(vexp2, exp2) _(vsinh, sinh) _(vcosh, cosh) _(vatan, atan) \
  _(vasin, asin) _(vacos, acos) _(verfc, erfc)
#define IG_FORALL_VEC_MATH2(_) _(vpow, pow) _(vatan2, atan2) _(vhypot, hypot)
#ifdef __CUDACC_RTC__
#define IGNIS_ALWAYS_INLINE __forceinline__
namespace std {
template <class T, T v> struct integral_constant { static constexpr T value = v; };
typedef integral_constant<bool, true> true_type;
typedef integral_constant<bool, false> false_type;
template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class A, class B> constexpr bool is_same_v = is_same<A, B>::value;
template <class T> struct is_integral : false_type {};
#define IG_INTEGRAL(T) template <> struct is_integral<T> : true_type {};
IG_INTEGRAL(bool) IG_INTEGRAL(char) IG_INTEGRAL(signed char) IG_INTEGRAL(unsigned char)
IG_INTEGRAL(short) IG_INTEGRAL(unsigned short) IG_INTEGRAL(int) IG_INTEGRAL(unsigned)
IG_INTEGRAL(long) IG_INTEGRAL(unsigned long) IG_INTEGRAL(long long) IG_INTEGRAL(unsigned long long)
#undef IG_INTEGRAL
template <class T> constexpr bool is_integral_v = is_integral<T>::value;
template <class T> constexpr bool is_floating_point_v = is_same_v<T, float> || is_same_v<T, double>;
template <class T> constexpr bool is_signed_v = T(-1) < T(0);
template <class T> struct make_unsigned { typedef T type; };
template <> struct make_unsigned<char> { typedef unsigned char type; };
template <> struct make_unsigned<signed char> { typedef unsigned char type; };
template <> struct make_unsigned<short> { typedef unsigned short type; };
template <> struct make_unsigned<int> { typedef unsigned type; };
template <> struct make_unsigned<long> { typedef unsigned long type; };
template <> struct make_unsigned<long long> { typedef unsigned long long type; };
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;
template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;
template <class T> struct numeric_limits {
  static constexpr T infinity() { return T(0); }
  static constexpr T min() { return is_signed_v<T> ? T(T(1) << (sizeof(T) * 8 - 1)) : T(0); }
  static constexpr T max() { return T(~min()); }
  static constexpr T lowest() { return min(); }
};
template <> struct numeric_limits<bool> {
  static constexpr bool infinity() { return false; }
  static constexpr bool min() { return false; }
  static constexpr bool max() { return true; }
  static constexpr bool lowest() { return false; }
};
template <> struct numeric_limits<float> {
  static float infinity() { return __int_as_float(0x7f800000); }
  static float quiet_NaN() { return __int_as_float(0x7fc00000); }
  static float min() { return 1.17549435e-38f; }
  static float max() { return 3.40282347e+38f; }
  static float lowest() { return -3.40282347e+38f; }
};
template <> struct numeric_limits<double> {
  static double infinity() { return __longlong_as_double(0x7ff0000000000000ll); }
  static double quiet_NaN() { return __longlong_as_double(0x7ff8000000000000ll); }
  static double min() { return 2.2250738585072014e-308; }
  static double max() { return 1.7976931348623157e+308; }
  static double lowest() { return -1.7976931348623157e+308; }
};
// <cmath>: the device library's float and double overloads; an integer
// argument is computed in double, as <cmath>'s overloads for integers do.
#define IG_MATH1(f)                                                  \
  inline float f(float x) { return ::f(x); }                        \
  inline double f(double x) { return ::f(x); }                      \
  template <class T> inline double f(T x) { return ::f(double(x)); }
#define IG_MATH2(f)                                                  \
  inline float f(float a, float b) { return ::f(a, b); }            \
  inline double f(double a, double b) { return ::f(a, b); }         \
  template <class T> inline double f(T a, T b) { return ::f(double(a), double(b)); }
IG_MATH1(exp) IG_MATH1(exp2) IG_MATH1(log) IG_MATH1(log2) IG_MATH1(log10) IG_MATH1(log1p)
IG_MATH1(expm1) IG_MATH1(sqrt) IG_MATH1(sin) IG_MATH1(cos) IG_MATH1(tan) IG_MATH1(asin)
IG_MATH1(acos) IG_MATH1(atan) IG_MATH1(sinh) IG_MATH1(cosh) IG_MATH1(tanh) IG_MATH1(asinh)
IG_MATH1(acosh) IG_MATH1(atanh) IG_MATH1(erf)
IG_MATH1(erfc) IG_MATH1(lgamma) IG_MATH1(floor) IG_MATH1(ceil) IG_MATH1(nearbyint) IG_MATH1(trunc)
IG_MATH2(atan2) IG_MATH2(hypot) IG_MATH2(copysign) IG_MATH2(fmod) IG_MATH2(pow)
#undef IG_MATH1
#undef IG_MATH2
inline float abs(float x) { return ::fabsf(x); }
inline double abs(double x) { return ::fabs(x); }
inline bool signbit(double x) { return ::signbit(x); }
inline bool isnan(float x) { return ::isnan(x); }
inline bool isnan(double x) { return ::isnan(x); }
inline bool isinf(float x) { return ::isinf(x); }
inline bool isinf(double x) { return ::isinf(x); }
}  // namespace std
#define IG_VEC_MATH1(v, fn)                                       \
  inline float v(float x) { return ::fn##f(x); }                  \
  inline double v(double x) { return ::fn(x); }
#define IG_VEC_MATH2(v, fn)                                       \
  inline float v(float a, float b) { return ::fn##f(a, b); }      \
  inline double v(double a, double b) { return ::fn(a, b); }
#else
// Host C++ (tests/cuda_fake runs the kernels on the CPU): the real headers.
#include <cmath>
#include <limits>
#include <type_traits>
#define IGNIS_ALWAYS_INLINE inline
#define IG_VEC_MATH1(v, fn) template <class T> inline T v(T x) { return std::fn(x); }
#define IG_VEC_MATH2(v, fn) template <class T> inline T v(T a, T b) { return std::fn(a, b); }
#endif
// vec_math.h's functions, each the math library's own here: the device's
// (float and double overloads) or the host's (the fake driver).
namespace ignis::cpu {
IG_FORALL_VEC_MATH1(IG_VEC_MATH1)
IG_FORALL_VEC_MATH2(IG_VEC_MATH2)
template <class T> inline T sigmoid(T x) { return T(1) / (T(1) + vexp(-x)); }
}  // namespace ignis::cpu
#undef IG_VEC_MATH1
#undef IG_VEC_MATH2
#undef IG_FORALL_VEC_MATH1
#undef IG_FORALL_VEC_MATH2
)CUDA";

}  // namespace

const std::string& device_scalar_ops_source() {
  static const std::string text = [] {
    std::ostringstream os;
    os << kShim << "\n// ---- kernels/scalar_ops.h ----\n";
    std::istringstream in(kScalarOpsText);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("#include", 0) == 0 || line.rfind("#pragma once", 0) == 0) continue;
      os << line << "\n";
    }
    return os.str();
  }();
  return text;
}

const char* scalar_ops_struct(const std::string& fn) {
  static const std::map<std::string, const char*> table = {
#define IGNIS_ENTRY(S) {scalar_ops::S::name, #S},
      IGNIS_FORALL_SCALAR_OPS(IGNIS_ENTRY)
#undef IGNIS_ENTRY
  };
  auto it = table.find(fn);
  IGNIS_CHECK(it != table.end(), "CUDA: no scalar function '", fn, "' in scalar_ops.h");
  return it->second;
}

}  // namespace ignis::cuda

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
// functions of the same names (expf, erff, tanhf, sinf, cosf, logf, log2f,
// log10f, log1pf); results therefore agree with the CPU's to rounding, not
// bit for bit, for the transcendental functions (exact for the rest).
const char* kShim = R"CUDA(
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
  static float min() { return 1.17549435e-38f; }
  static float max() { return 3.40282347e+38f; }
  static float lowest() { return -3.40282347e+38f; }
};
template <> struct numeric_limits<double> {
  static double infinity() { return __longlong_as_double(0x7ff0000000000000ll); }
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
IG_MATH1(acos) IG_MATH1(atan) IG_MATH1(sinh) IG_MATH1(cosh) IG_MATH1(tanh) IG_MATH1(erf)
IG_MATH1(erfc) IG_MATH1(floor) IG_MATH1(ceil) IG_MATH1(nearbyint) IG_MATH1(trunc)
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
namespace ignis::cpu {
inline float vexp(float x) { return ::expf(x); }
inline double vexp(double x) { return ::exp(x); }
inline float verf(float x) { return ::erff(x); }
inline double verf(double x) { return ::erf(x); }
inline float vtanh(float x) { return ::tanhf(x); }
inline double vtanh(double x) { return ::tanh(x); }
inline float vsin(float x) { return ::sinf(x); }
inline double vsin(double x) { return ::sin(x); }
inline float vcos(float x) { return ::cosf(x); }
inline double vcos(double x) { return ::cos(x); }
inline float vlog(float x) { return ::logf(x); }
inline double vlog(double x) { return ::log(x); }
inline float vlog2(float x) { return ::log2f(x); }
inline double vlog2(double x) { return ::log2(x); }
inline float vlog10(float x) { return ::log10f(x); }
inline double vlog10(double x) { return ::log10(x); }
inline float vlog1p(float x) { return ::log1pf(x); }
inline double vlog1p(double x) { return ::log1p(x); }
inline float vpow(float x, float y) { return ::powf(x, y); }
inline float vexpm1(float x) { return ::expm1f(x); }
inline double vexpm1(double x) { return ::expm1(x); }
inline float vexp2(float x) { return ::exp2f(x); }
inline double vexp2(double x) { return ::exp2(x); }
inline float vsinh(float x) { return ::sinhf(x); }
inline double vsinh(double x) { return ::sinh(x); }
inline float vcosh(float x) { return ::coshf(x); }
inline double vcosh(double x) { return ::cosh(x); }
inline float vtan(float x) { return ::tanf(x); }
inline double vtan(double x) { return ::tan(x); }
inline float vatan(float x) { return ::atanf(x); }
inline double vatan(double x) { return ::atan(x); }
inline float vasin(float x) { return ::asinf(x); }
inline double vasin(double x) { return ::asin(x); }
inline float vacos(float x) { return ::acosf(x); }
inline double vacos(double x) { return ::acos(x); }
inline float verfc(float x) { return ::erfcf(x); }
inline double verfc(double x) { return ::erfc(x); }
inline float vatan2(float y, float x) { return ::atan2f(y, x); }
inline double vatan2(double y, double x) { return ::atan2(y, x); }
inline float vhypot(float a, float b) { return ::hypotf(a, b); }
inline double vhypot(double a, double b) { return ::hypot(a, b); }
inline double vpow(double x, double y) { return ::pow(x, y); }
template <class T> inline T sigmoid(T x) { return T(1) / (T(1) + vexp(-x)); }
}  // namespace ignis::cpu
#else
// Host C++ (tests/cuda_fake runs the kernels on the CPU): the real headers.
#include <cmath>
#include <limits>
#include <type_traits>
#define IGNIS_ALWAYS_INLINE inline
namespace ignis::cpu {
template <class T> inline T vexp(T x) { return std::exp(x); }
template <class T> inline T verf(T x) { return std::erf(x); }
template <class T> inline T vtanh(T x) { return std::tanh(x); }
template <class T> inline T vsin(T x) { return std::sin(x); }
template <class T> inline T vcos(T x) { return std::cos(x); }
template <class T> inline T vlog(T x) { return std::log(x); }
template <class T> inline T vlog2(T x) { return std::log2(x); }
template <class T> inline T vlog10(T x) { return std::log10(x); }
template <class T> inline T vlog1p(T x) { return std::log1p(x); }
template <class T> inline T vpow(T x, T y) { return std::pow(x, y); }
template <class T> inline T vexpm1(T x) { return std::expm1(x); }
template <class T> inline T vexp2(T x) { return std::exp2(x); }
template <class T> inline T vsinh(T x) { return std::sinh(x); }
template <class T> inline T vcosh(T x) { return std::cosh(x); }
template <class T> inline T vtan(T x) { return std::tan(x); }
template <class T> inline T vatan(T x) { return std::atan(x); }
template <class T> inline T vasin(T x) { return std::asin(x); }
template <class T> inline T vacos(T x) { return std::acos(x); }
template <class T> inline T verfc(T x) { return std::erfc(x); }
template <class T> inline T vatan2(T y, T x) { return std::atan2(y, x); }
template <class T> inline T vhypot(T a, T b) { return std::hypot(a, b); }
template <class T> inline T sigmoid(T x) { return T(1) / (T(1) + vexp(-x)); }
}  // namespace ignis::cpu
#endif
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

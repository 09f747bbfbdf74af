// Scalar math written so that the compiler can vectorise loops calling it
// (no branches, no errno, no libm calls): exp, erf, tanh, sin, cos, log,
// log2, log10, log1p, expm1, exp2, sinh, cosh, tan, atan, asin, acos, atan2,
// hypot, erfc and pow for float, and the activations built on them. The
// one implementation of each: eager's CPU loops, the compiler's generated
// C++ (which includes this header through scalar_ops.h) and tests all call
// these; the double overloads call libm.
// Accuracy: vexp is within 2 ulp of expf where the result is normal, within
// an ulp of the subnormal grid where it is subnormal (0 below -103.97), +inf
// above 88.72, NaN stays NaN.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

// Always inlined: a generated kernel fuses dozens of these into one loop,
// and a call left out-of-line (GCC 13's inliner stops early in big bodies)
// makes the whole loop scalar.
#ifndef IGNIS_ALWAYS_INLINE
#define IGNIS_ALWAYS_INLINE inline __attribute__((always_inline))
#endif

namespace ignis::cpu {

// Note [vexp's scaling]: exp(x) = y * 2^n with n = round(x / ln 2) and y =
// exp(r) on |r| <= ln(2) / 2, and 2^n applied as two factors 2^(n/2) and
// 2^(n - n/2), each a normal float for every n of the clamped range [-150,
// 128]: the product overflows to +inf and rounds into the subnormals and
// to 0 as expf does, with no compare or select on the result. The one
// exponent 2^n took fix-ups at both ends (a clamp at -87.3 with a zero
// below it, n = 128 halved, +inf and NaN put back); NaN now needs none (it
// passes the clamps and the arithmetic). Vector instructions per 16 floats
// (GCC 12, AVX-512): softmax's exp-and-sum loop 41 -> 37 compiled, 45 ->
// 37 in eager's kernel; bench/compiled.py's pointwise chain (tanh,
// sigmoid) 79 -> 69. That kernel alone, one thread, on the 2-core VM
// while quiet: 16.4 -> 15.1 ms; softmax 4096x4096's 13.7 -> 13.2 ms.
IGNIS_ALWAYS_INLINE float vexp(float x) {
  // Each select keeps x when its compare is false, so NaN passes both.
  float xc = x > 89.0f ? 89.0f : x;
  xc = xc < -104.0f ? -104.0f : xc;
  // n = round(xc / ln 2) by the 1.5 * 2^23 shift, which leaves n in t's low
  // bits (no rounding-mode call, no float-to-int conversion).
  const float shift = 12582912.0f;
  const float t = xc * 1.44269504088896341f + shift;
  const float n = t - shift;
  float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  int32_t k;
  std::memcpy(&k, &t, 4);
  k -= 0x4B400000;  // the bits of 1.5 * 2^23
  const int32_t k1 = k >> 1, k2 = k - k1;
  const int32_t b1 = (k1 + 127) << 23, b2 = (k2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  return y * s1 * s2;
}
IGNIS_ALWAYS_INLINE double vexp(double x) { return std::exp(x); }

template <typename T>
IGNIS_ALWAYS_INLINE T sigmoid(T x) { return T(1) / (T(1) + vexp(-x)); }

// erf and tanh for float: odd rational approximations on a clamped range
// (erf(+-4) and tanh(+-7.9) round to +-1 in float). Measured against the
// double-precision functions on a 1e-5 grid over [-10, 10] and on tiny
// arguments: max relative error 4.2e-7 (erf) and 4.0e-7 (tanh).
IGNIS_ALWAYS_INLINE float verf(float x) {
  float xc = x < -4.f ? -4.f : (x > 4.f ? 4.f : x);
  float x2 = xc * xc;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 - 2.10102402082508e-06f;
  p = p * x2 - 5.69250639462346e-05f;
  p = p * x2 - 7.34990630326855e-04f;
  p = p * x2 - 2.95459980854025e-03f;
  p = p * x2 - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 - 2.13374055278905e-04f;
  q = q * x2 - 1.68282697438203e-03f;
  q = q * x2 - 7.37332916720468e-03f;
  q = q * x2 - 1.42647390514189e-02f;
  return xc * p / q;
}
IGNIS_ALWAYS_INLINE double verf(double x) { return std::erf(x); }

IGNIS_ALWAYS_INLINE float vtanh(float x) {
  const float lim = 7.90531110763549805f;
  // NaN passes both selects (as in vexp) and the arithmetic after them
  float xc = x > lim ? lim : x;
  xc = xc < -lim ? -lim : xc;
  float x2 = xc * xc;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 - 8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  float r = xc * p / q;
  return std::fabs(x) < 0.0004f ? x : r;
}
IGNIS_ALWAYS_INLINE double vtanh(double x) { return std::tanh(x); }

// ---- sin, cos, log, log2, log10 and log1p for float, computed in double ---
// Branch-free, so that loops calling them vectorise (libm's sinf/logf are
// calls GCC cannot vectorise). Each works in double on the float argument,
// exactly converted, and rounds once at the end: the double result is within
// about 1e-11 relative of the true value (|r| <= pi/4 Taylor series to
// r^11 / r^12; log1p(f) by a degree-12 Chebyshev fit, 2.0e-11 f^2), so the
// float result is the correctly rounded one except where the true value
// lies within ~1e-11 relative of a rounding boundary. Double arguments call
// libm (the overloads below), as vexp(double) does.
namespace vec_math_detail {

// sin/cos argument reduction over the whole float range, without a branch:
// a float |x| >= 2^24 is m * 2^e with an integer m < 2^24 and e in [1, 104],
// and x = m * (2^e mod 2pi) (mod 2pi). kTwoPowModTwoPi[k][e] holds 2^e mod
// 2pi in three parts of at most 28 bits (m times a part is exact in double);
// row e = 0 is 1 (x < 2^24 reduces as it is), e = 105 NaN (inf and NaN).
// Generated with mpmath at 400 bits by vec_math_tables.py.
// Not const, and with external linkage, so that GCC cannot fold a read:
// where a fused loop makes an argument known on one path (relu's 0), it
// folded that path's reads (of a const or a static table alike), left the
// others masked loads and the loop scalar. Hidden: one copy per library,
// exported by none. Nothing writes them.
#define IGNIS_VEC_MATH_TABLE __attribute__((visibility("hidden")))
inline IGNIS_VEC_MATH_TABLE double kTwoPowModTwoPi0[106] = {
    0x1p+0, 0x1.0000000000000p+1, 0x1.0000000000000p+2,
    0x1.b7812ae000000p+0, 0x1.b7812ae000000p+1, 0x1.2b0bad4000000p-1,
    0x1.2b0bad4000000p+0, 0x1.2b0bad4000000p+1, 0x1.2b0bad4000000p+2,
    0x1.87ef4ac000000p+1, 0x1.87ef4ac000000p+2, 0x1.7dbee04000000p+2,
    0x1.695e0b6000000p+2, 0x1.409c618000000p+2, 0x1.de321ba000000p+1,
    0x1.304999c000000p+0, 0x1.304999c000000p+1, 0x1.304999c000000p+2,
    0x1.9ce6fca000000p+1, 0x1.58e8ec0000000p-3, 0x1.58e8ec0000000p-2,
    0x1.58e8ec0000000p-1, 0x1.58e8ec0000000p+0, 0x1.58e8ec0000000p+1,
    0x1.58e8ec0000000p+2, 0x1.1fb222e000000p+2, 0x1.5a8920e000000p+1,
    0x1.5a8920e000000p+2, 0x1.22f28ca000000p+2, 0x1.678ac84000000p+1,
    0x1.678ac84000000p+2, 0x1.3cf5db4000000p+2, 0x1.cf9802a000000p+1,
    0x1.ebc26b8000000p-1, 0x1.ebc26b8000000p+0, 0x1.ebc26b8000000p+1,
    0x1.668ad94000000p+0, 0x1.668ad94000000p+1, 0x1.668ad94000000p+2,
    0x1.3af5fd4000000p+2, 0x1.c7988a8000000p+1, 0x1.abc6aac000000p-1,
    0x1.abc6aac000000p+0, 0x1.abc6aac000000p+1, 0x1.9a6f588000000p-2,
    0x1.9a6f588000000p-1, 0x1.9a6f588000000p+0, 0x1.9a6f588000000p+1,
    0x1.09f4682000000p-3, 0x1.09f4682000000p-2, 0x1.09f4682000000p-1,
    0x1.09f4682000000p+0, 0x1.09f4682000000p+1, 0x1.09f4682000000p+2,
    0x1.0392366000000p+1, 0x1.0392366000000p+2, 0x1.d412de4000000p+0,
    0x1.d412de4000000p+1, 0x1.07cca42000000p+0, 0x1.07cca42000000p+1,
    0x1.07cca42000000p+2, 0x1.f5e64c4000000p+0, 0x1.f5e64c4000000p+1,
    0x1.8f1a5c2000000p+0, 0x1.8f1a5c2000000p+1, 0x1.8f1a5c2000000p+2,
    0x1.8c15032000000p+2, 0x1.860a512000000p+2, 0x1.79f4ed0000000p+2,
    0x1.61ca24c000000p+2, 0x1.3174946000000p+2, 0x1.a192e70000000p+1,
    0x1.ee66398000000p-3, 0x1.ee66398000000p-2, 0x1.ee66398000000p-1,
    0x1.ee66398000000p+0, 0x1.ee66398000000p+1, 0x1.711a110000000p+0,
    0x1.711a110000000p+1, 0x1.711a110000000p+2, 0x1.50146cc000000p+2,
    0x1.0e09246000000p+2, 0x1.13e5274000000p+1, 0x1.13e5274000000p+2,
    0x1.2b5532a000000p+1, 0x1.2b5532a000000p+2, 0x1.8915606000000p+1,
    0x1.8915606000000p+2, 0x1.800b0b8000000p+2, 0x1.6df661c000000p+2,
    0x1.49cd0e4000000p+2, 0x1.017a676000000p+2, 0x1.c35466c000000p+0,
    0x1.c35466c000000p+1, 0x1.89a58c4000000p-1, 0x1.89a58c4000000p+0,
    0x1.89a58c4000000p+1, 0x1.89a58c4000000p+2, 0x1.812b632000000p+2,
    0x1.7037112000000p+2, 0x1.4e4e6d2000000p+2, 0x1.0a7d250000000p+2,
    0x1.05b529e000000p+1, 0x1.05b529e000000p+2, 0x1.e52a7a6000000p+0,
    __builtin_nan(""),
};
inline IGNIS_VEC_MATH_TABLE double kTwoPowModTwoPi1[106] = {
    0x0p+0, 0x0.0p+0, 0x0.0p+0,
    0x1.de973dc000000p-29, 0x1.de973dc000000p-28, 0x1.58f434e000000p-29,
    0x1.58f434e000000p-28, 0x1.58f434e000000p-27, 0x1.58f434e000000p-26,
    0x1.b6ed46a000000p-28, 0x1.b6ed46a000000p-27, 0x1.72c02e6000000p-26,
    0x1.42a688e000000p-27, 0x1.fcf2e14000000p-27, 0x1.718b922000000p-27,
    0x1.6af3cf0000000p-29, 0x1.6af3cf0000000p-28, 0x1.6af3cf0000000p-27,
    0x1.3635b62000000p-29, 0x1.2c0aa86000000p-31, 0x1.2c0aa86000000p-30,
    0x1.2c0aa86000000p-29, 0x1.2c0aa86000000p-28, 0x1.2c0aa86000000p-27,
    0x1.2c0aa86000000p-26, 0x1.3e83884000000p-30, 0x1.c746b18000000p-27,
    0x1.c746b18000000p-26, 0x1.4a604ac000000p-26, 0x1.424df4e000000p-28,
    0x1.424df4e000000p-27, 0x1.fc41b94000000p-27, 0x1.7029420000000p-27,
    0x1.5fe14ea000000p-29, 0x1.5fe14ea000000p-28, 0x1.5fe14ea000000p-27,
    0x1.bb43660000000p-30, 0x1.bb43660000000p-29, 0x1.bb43660000000p-28,
    0x1.32e9358000000p-27, 0x1.dd783a8000000p-27, 0x1.94b223a000000p-30,
    0x1.94b223a000000p-29, 0x1.94b223a000000p-28, 0x1.8afe656000000p-32,
    0x1.8afe656000000p-31, 0x1.8afe656000000p-30, 0x1.8afe656000000p-29,
    0x1.d250230000000p-31, 0x1.d250230000000p-30, 0x1.d250230000000p-29,
    0x1.d250230000000p-28, 0x1.d250230000000p-27, 0x1.d250230000000p-26,
    0x1.81ccb7e000000p-28, 0x1.81ccb7e000000p-27, 0x1.ecfcfce000000p-29,
    0x1.ecfcfce000000p-28, 0x1.928b318000000p-29, 0x1.928b318000000p-28,
    0x1.928b318000000p-27, 0x1.3978654000000p-28, 0x1.3978654000000p-27,
    0x1.d52d340000000p-28, 0x1.d52d340000000p-27, 0x1.d52d340000000p-26,
    0x1.662d4fe000000p-26, 0x1.105b0f2000000p-27, 0x1.985bedc000000p-27,
    0x1.542ed58000000p-26, 0x1.90c24b2000000p-28, 0x1.08681aa000000p-27,
    0x1.0ec09a6000000p-32, 0x1.0ec09a6000000p-31, 0x1.0ec09a6000000p-30,
    0x1.0ec09a6000000p-29, 0x1.0ec09a6000000p-28, 0x1.0cccd3a000000p-28,
    0x1.0cccd3a000000p-27, 0x1.0cccd3a000000p-26, 0x1.d56c8f0000000p-26,
    0x1.66ac05c000000p-26, 0x1.1255e6c000000p-27, 0x1.1255e6c000000p-26,
    0x1.c0fd6ac000000p-27, 0x1.c0fd6ac000000p-26, 0x1.ee6deac000000p-29,
    0x1.ee6deac000000p-28, 0x1.6613ba4000000p-27, 0x1.21e6a20000000p-26,
    0x1.ffa02bc000000p-26, 0x1.bb133f4000000p-26, 0x1.8fcb336000000p-29,
    0x1.8fcb336000000p-28, 0x1.dc40bb6000000p-33, 0x1.dc40bb6000000p-32,
    0x1.dc40bb6000000p-31, 0x1.dc40bb6000000p-30, 0x1.f75aff2000000p-26,
    0x1.aa88e60000000p-26, 0x1.10e4b3c000000p-26, 0x1.dd9c4f2000000p-26,
    0x1.dc2e18c000000p-28, 0x1.dc2e18c000000p-27, 0x1.8010098000000p-30,
    __builtin_nan(""),
};
inline IGNIS_VEC_MATH_TABLE double kTwoPowModTwoPi2[106] = {
    0x0p+0, 0x0.0p+0, 0x0.0p+0,
    0x1.676733ae8fe48p-58, 0x1.676733ae8fe48p-57, 0x1.8282013467bb3p-57,
    0x1.8282013467bb3p-56, 0x1.8282013467bb3p-55, 0x1.8282013467bb3p-54,
    0x1.b7a75a3b874b6p-58, 0x1.b7a75a3b874b6p-57, 0x1.18127272b447bp-60,
    0x1.3e6e0d9cfd411p-55, 0x1.a9c901afcc7eap-55, 0x1.00fdd3aad5f3bp-56,
    0x1.6f55d1053f822p-58, 0x1.6f55d1053f822p-57, 0x1.6f55d1053f822p-56,
    0x1.c42b77b117eaep-59, 0x1.5c955afd3e7b2p-61, 0x1.5c955afd3e7b2p-60,
    0x1.5c955afd3e7b2p-59, 0x1.5c955afd3e7b2p-58, 0x1.5c955afd3e7b2p-57,
    0x1.5c955afd3e7b2p-56, 0x1.30482e620ef58p-60, 0x1.ff8b4adf975f4p-58,
    0x1.ff8b4adf975f4p-57, 0x1.65945f2ced617p-58, 0x1.0ca3fc821aa9dp-56,
    0x1.0ca3fc821aa9dp-55, 0x1.4634df7a07504p-55, 0x1.b956a569e09d0p-55,
    0x1.f9a3149933690p-59, 0x1.f9a3149933690p-58, 0x1.f9a3149933690p-57,
    0x1.4df386135d88ap-58, 0x1.4df386135d88ap-57, 0x1.4df386135d88ap-56,
    0x1.eb81b224be14bp-57, 0x1.156dfc4188372p-58, 0x1.92432c31a052dp-58,
    0x1.92432c31a052dp-57, 0x1.92432c31a052dp-56, 0x1.e60254ee49eb7p-60,
    0x1.e60254ee49eb7p-59, 0x1.e60254ee49eb7p-58, 0x1.e60254ee49eb7p-57,
    0x1.fee10ecf6f246p-59, 0x1.fee10ecf6f246p-58, 0x1.fee10ecf6f246p-57,
    0x1.fee10ecf6f246p-56, 0x1.fee10ecf6f246p-55, 0x1.fee10ecf6f246p-54,
    0x1.43890d9c746f8p-58, 0x1.43890d9c746f8p-57, 0x1.3ac5b51030d14p-57,
    0x1.3ac5b51030d14p-56, 0x1.9eca6e180b375p-57, 0x1.9eca6e180b375p-56,
    0x1.9eca6e180b375p-55, 0x1.aa070a97a1acap-57, 0x1.aa070a97a1acap-56,
    0x1.ade7e21ae7526p-56, 0x1.ade7e21ae7526p-55, 0x1.ade7e21ae7526p-54,
    0x1.e48c6ee16f461p-55, 0x1.ec0b887161116p-56, 0x1.18f86ee7330dfp-55,
    0x1.5eddc44438188p-55, 0x1.d550ddfc845b1p-56, 0x1.023dc4725657ap-55,
    0x1.686f5a7eabc09p-63, 0x1.686f5a7eabc09p-62, 0x1.686f5a7eabc09p-61,
    0x1.686f5a7eabc09p-60, 0x1.686f5a7eabc09p-59, 0x1.67eb47169dd28p-57,
    0x1.67eb47169dd28p-56, 0x1.67eb47169dd28p-55, 0x1.fcc374a30da1ap-55,
    0x1.9339e7ddf69fep-54, 0x1.79d485edac7c1p-55, 0x1.79d485edac7c1p-54,
    0x1.143efe2c83ecdp-55, 0x1.143efe2c83ecdp-54, 0x1.f7a37c9f86bf0p-57,
    0x1.f7a37c9f86bf0p-56, 0x1.2490631558bb9p-55, 0x1.760daca08373ap-55,
    0x1.0c841fdb6c71fp-54, 0x1.af7eb2f1c1e22p-54, 0x1.ab9ec8f366149p-57,
    0x1.ab9ec8f366149p-56, 0x1.175ed2702248ep-64, 0x1.175ed2702248ep-63,
    0x1.175ed2702248ep-62, 0x1.175ed2702248ep-61, 0x1.6b4fba12a61dbp-56,
    0x1.30794110f0348p-56, 0x1.75989e1b08c42p-57, 0x1.f3dc9ac1ab2f5p-54,
    0x1.f8bea2f8fd73ap-56, 0x1.f8bea2f8fd73ap-55, 0x1.e6a2c67cce3dbp-59,
    __builtin_nan(""),
};

// sin(r) and cos(r) for |r| <= ~pi/4: their Taylor series to r^13 and r^14
// for double results (first omitted terms below 1.1e-16), a term shorter
// for float ones (below 1.4e-13; two multiply-adds fewer: 3% of vsin).
template <bool kDouble>
IGNIS_ALWAYS_INLINE void sin_cos_reduced(double r, double& s, double& c) {
  const double r2 = r * r;
  s = kDouble ? 1.0 / 6227020800 * r2 - 1.0 / 39916800 : -1.0 / 39916800;
  s = s * r2 + 1.0 / 362880;
  s = s * r2 - 1.0 / 5040;
  s = s * r2 + 1.0 / 120;
  s = s * r2 - 1.0 / 6;
  s = s * r2 * r + r;
  c = kDouble ? -1.0 / 87178291200 * r2 + 1.0 / 479001600 : 1.0 / 479001600;
  c = c * r2 - 1.0 / 3628800;
  c = c * r2 + 1.0 / 40320;
  c = c * r2 - 1.0 / 720;
  c = c * r2 + 1.0 / 24;
  c = c * r2 - 0.5;
  c = c * r2 + 1.0;
}

// sin(x) (kind 0), cos(x) (kind 1) or tan(x) (kind 2): |x| reduced to
// r = |x| - n pi/2, |r| <= ~pi/4, then sin or cos of r by the quadrant
// n + kind (tan: sin r / cos r, or -cos r / sin r for odd n).
// pi/2 = kPio2a + kPio2b + kPio2c, the first two of 26 bits (n < 2^27, so n
// times either is exact).
IGNIS_ALWAYS_INLINE float sin_cos(float x, int32_t kind) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const uint32_t abs_bits = bits & 0x7fffffffu;
  float ax;
  std::memcpy(&ax, &abs_bits, 4);
  const int32_t biased = int32_t(abs_bits >> 23);
  // e = 0 below 2^24, and m = |x| 2^-e. Arithmetic, no select on |x| >= 2^24:
  // GCC would make one side's table reads masked loads, which it cannot
  // vectorise as gathers; and int64, as GCC 12 gathers doubles only with
  // 64-bit indices.
  const int64_t e = std::max<int64_t>(int64_t(biased) - 150, 0);
  const int64_t scale_bits = (1023 - e) << 52;
  double scale;
  std::memcpy(&scale, &scale_bits, 8);
  const double m = double(ax) * scale;
  const double y0 = m * kTwoPowModTwoPi0[e], y1 = m * kTwoPowModTwoPi1[e],
               y2 = m * kTwoPowModTwoPi2[e];
  // round(y0 * 2/pi) by the 1.5 * 2^52 shift (|y0| < 2^27): no rounding-mode call
  const double shifter = 0x1.8p52;
  const double n = (y0 * 0x1.45f306dc9c883p-1 + shifter) - shifter;
  const double kPio2a = 0x1.921fb5p+0, kPio2b = 0x1.110b46p-26, kPio2c = 0x1.1a62633145c07p-54;
  const double r = ((y0 - n * kPio2a) - n * kPio2b) + ((y1 - n * kPio2c) + y2);
  double s, c;
  sin_cos_reduced<false>(r, s, c);
  const int32_t q = int32_t(n) + (kind == 1 ? 1 : 0);
  double v = (q & 1) ? c : s;
  v = (q & 2) ? -v : v;
  v = kind == 2 ? ((q & 1) ? -c / s : s / c) : v;
  float out = float(v);
  // sin and tan are odd (the sign of x, -0 included), cos even
  uint32_t out_bits;
  std::memcpy(&out_bits, &out, 4);
  out_bits ^= kind == 1 ? 0u : (bits & 0x80000000u);
  std::memcpy(&out, &out_bits, 4);
  return out;
}

// log(u) for a positive, finite, normal double u: u = 2^k * m with m in
// [sqrt(1/2), sqrt(2)), log(u) = k log(2) + f + f^2 P(f), f = m - 1, where
// P fits (log1p(f) - f) / f^2 (Chebyshev, degree 12, max error 2.0e-11).
IGNIS_ALWAYS_INLINE double log_positive(double u) {
  int64_t bits;
  std::memcpy(&bits, &u, 8);
  int64_t k = (bits >> 52) - 1023;
  const int64_t m_bits = (bits & 0xfffffffffffffLL) | 0x3ff0000000000000LL;
  double m;
  std::memcpy(&m, &m_bits, 8);
  const bool high = m > 0x1.6a09e667f3bcdp+0;  // sqrt(2)
  m = high ? m * 0.5 : m;
  k = high ? k + 1 : k;
  const double f = m - 1.0;
  double p = -0x1.8e19896e9415fp-5;
  p = p * f + 0x1.736ddf636ad9bp-4;
  p = p * f - 0x1.79dadfb6e7fc9p-4;
  p = p * f + 0x1.72486dd2aa993p-4;
  p = p * f - 0x1.9595ac5990e11p-4;
  p = p * f + 0x1.c6f00215b91d9p-4;
  p = p * f - 0x1.0018f07ce1289p-3;
  p = p * f + 0x1.249408b273046p-3;
  p = p * f - 0x1.5554c939e6e03p-3;
  p = p * f + 0x1.9999907fdc231p-3;
  p = p * f - 0x1.00000092d2b44p-2;
  p = p * f + 0x1.5555555b184ecp-2;
  p = p * f - 0x1.ffffffffcc90fp-2;
  return double(k) * 0x1.62e42fefa39efp-1 + (f + f * f * p);
}

// cos(2 pi t) for t in [0, 1), to about an ulp of a double: t is reduced by
// quarter turns, q = round(4 t) and r = t - q / 4 in [-1/8, 1/8] (exact: for
// q >= 1, t and q / 4 are within a factor of two), then cos or sin of the
// angle 2 pi r (|2 pi r| <= pi / 4) by q mod 4. Box-Muller's cosine
// (kernels/cpu/fill.cpp): selects, no branches, so a loop of it vectorises.
IGNIS_ALWAYS_INLINE double cos_two_pi(double t) {
  const double shifter = 0x1.8p52;
  const double q = (4.0 * t + shifter) - shifter;
  const double a = (t - 0.25 * q) * 0x1.921fb54442d18p+2;  // 2 pi
  double s, c;
  sin_cos_reduced<true>(a, s, c);
  const int32_t n = int32_t(q) & 3;  // cos(a + n pi / 2)
  const double v = (n & 1) ? s : c;
  return (n == 1 || n == 2) ? -v : v;
}

}  // namespace vec_math_detail

IGNIS_ALWAYS_INLINE float vsin(float x) { return vec_math_detail::sin_cos(x, 0); }
IGNIS_ALWAYS_INLINE double vsin(double x) { return std::sin(x); }
IGNIS_ALWAYS_INLINE float vcos(float x) { return vec_math_detail::sin_cos(x, 1); }
IGNIS_ALWAYS_INLINE double vcos(double x) { return std::cos(x); }
IGNIS_ALWAYS_INLINE float vtan(float x) { return vec_math_detail::sin_cos(x, 2); }
IGNIS_ALWAYS_INLINE double vtan(double x) { return std::tan(x); }

namespace vec_math_detail {
// atan(a) for a double a >= 0 (inf and NaN included): a > 1 reflects to
// pi/2 - atan(1/a), a > tan(pi/8) shifts to pi/4 + atan((a-1)/(a+1)), and
// on |u| <= tan(pi/8) the odd Taylor series to u^29 (first omitted term
// below 1.3e-13). Selects, no branch.
IGNIS_ALWAYS_INLINE double atan_nonnegative(double a) {
  const bool inv = a > 1.0;
  const double t = inv ? 1.0 / a : a;
  const bool big = t > 0x1.a827999fcef32p-2;  // tan(pi/8)
  const double u = big ? (t - 1.0) / (t + 1.0) : t;
  const double u2 = u * u;
  double p = -1.0 / 29;
  p = p * u2 + 1.0 / 27;
  p = p * u2 - 1.0 / 25;
  p = p * u2 + 1.0 / 23;
  p = p * u2 - 1.0 / 21;
  p = p * u2 + 1.0 / 19;
  p = p * u2 - 1.0 / 17;
  p = p * u2 + 1.0 / 15;
  p = p * u2 - 1.0 / 13;
  p = p * u2 + 1.0 / 11;
  p = p * u2 - 1.0 / 9;
  p = p * u2 + 1.0 / 7;
  p = p * u2 - 1.0 / 5;
  p = p * u2 + 1.0 / 3;
  double r = u - u * u2 * p;
  r = big ? 0x1.921fb54442d18p-1 + r : r;  // pi/4
  return inv ? 0x1.921fb54442d18p+0 - r : r;  // pi/2
}
}  // namespace vec_math_detail

// atan, asin and acos for float, in double through atan_nonnegative:
// asin(x) = atan(x / sqrt((1-x)(1+x))) (the product exact in double), acos(x)
// = 2 atan(sqrt((1-x)/(1+x))) (accurate near 1, where pi/2 - asin is not);
// |x| > 1 takes a square root of a negative: NaN, as libm.
IGNIS_ALWAYS_INLINE float vatan(float x) {
  const float out = float(vec_math_detail::atan_nonnegative(double(std::fabs(x))));
  return std::signbit(x) ? -out : out;  // odd; NaN stays NaN
}
IGNIS_ALWAYS_INLINE double vatan(double x) { return std::atan(x); }
IGNIS_ALWAYS_INLINE float vasin(float x) {
  const double xd = std::fabs(double(x));
  const float out =
      float(vec_math_detail::atan_nonnegative(xd / std::sqrt((1.0 - xd) * (1.0 + xd))));
  return std::signbit(x) ? -out : out;
}
IGNIS_ALWAYS_INLINE double vasin(double x) { return std::asin(x); }
IGNIS_ALWAYS_INLINE float vacos(float x) {
  const double xd = double(x);
  return float(2.0 * vec_math_detail::atan_nonnegative(std::sqrt((1.0 - xd) / (1.0 + xd))));
}
IGNIS_ALWAYS_INLINE double vacos(double x) { return std::acos(x); }

// atan2(y, x) for float: atan(|y| / |x|) in double, then the quadrant (pi -
// it for x's sign bit, -0 included) and y's sign, with C99's special cases
// by selects: both zero -> 0 before the quadrant (atan2(+-0, -0) = +-pi),
// both infinite -> pi/4 before it (3 pi/4 for x = -inf), NaN -> NaN.
IGNIS_ALWAYS_INLINE float vatan2(float y, float x) {
  const double ay = std::fabs(double(y)), ax = std::fabs(double(x));
  double r = vec_math_detail::atan_nonnegative(ay / ax);
  r = ay == 0.0 && ax == 0.0 ? 0.0 : r;
  r = ay == INFINITY && ax == INFINITY ? 0x1.921fb54442d18p-1 : r;  // pi/4
  r = std::signbit(x) ? 0x1.921fb54442d18p+1 - r : r;                 // pi - r
  float out = float(r);
  out = std::signbit(y) ? -out : out;
  return x != x || y != y ? x + y : out;
}
IGNIS_ALWAYS_INLINE double vatan2(double y, double x) { return std::atan2(y, x); }

// hypot(a, b) for float: sqrt(a^2 + b^2) in double (the squares exact, no
// overflow for any float), rounded once; an infinite argument gives +inf
// even beside a NaN (C99).
IGNIS_ALWAYS_INLINE float vhypot(float a, float b) {
  const double ad = double(a), bd = double(b);
  const float out = float(std::sqrt(ad * ad + bd * bd));
  return std::fabs(a) == INFINITY || std::fabs(b) == INFINITY ? INFINITY : out;
}
IGNIS_ALWAYS_INLINE double vhypot(double a, double b) { return std::hypot(a, b); }

// log family: a float's double is never subnormal, so log_positive takes
// every positive finite float; 0, negatives, inf and NaN are selected after.
IGNIS_ALWAYS_INLINE float log_specials(float x, double result) {
  float out = float(result);
  out = x == 0.0f ? -INFINITY : out;
  out = x < 0.0f ? NAN : out;
  out = x == INFINITY ? INFINITY : out;
  return x != x ? x : out;
}
IGNIS_ALWAYS_INLINE float vlog(float x) {
  return log_specials(x, vec_math_detail::log_positive(double(x)));
}
IGNIS_ALWAYS_INLINE double vlog(double x) { return std::log(x); }
IGNIS_ALWAYS_INLINE float vlog2(float x) {
  return log_specials(x, vec_math_detail::log_positive(double(x)) * 0x1.71547652b82fep+0);
}
IGNIS_ALWAYS_INLINE double vlog2(double x) { return std::log2(x); }
IGNIS_ALWAYS_INLINE float vlog10(float x) {
  return log_specials(x, vec_math_detail::log_positive(double(x)) * 0x1.bcb7b1526e50ep-2);
}
IGNIS_ALWAYS_INLINE double vlog10(double x) { return std::log10(x); }
// log1p(x) = log(u) + (x - (u - 1)) with u = 1 + x in double: u is exact
// unless |x| < 2^-29, where the second term is the rounding error u lost
// (log(u (1 + c/u)) = log(u) + c to double precision there).
IGNIS_ALWAYS_INLINE float vlog1p(float x) {
  const double xd = double(x), u = 1.0 + xd;
  const double lost = xd - (u - 1.0);
  float out = float(vec_math_detail::log_positive(u) + (xd < 1.0 ? lost : 0.0));
  out = x == 0.0f ? x : out;  // log1p(-0) = -0
  out = x == -1.0f ? -INFINITY : out;
  out = x < -1.0f ? NAN : out;
  out = x == INFINITY ? INFINITY : out;
  return x != x ? x : out;
}
IGNIS_ALWAYS_INLINE double vlog1p(double x) { return std::log1p(x); }

namespace vec_math_detail {
// exp(t) for a double t whose result a float holds (|t| below ~104): n =
// round(t / ln 2) by the 1.5 * 2^52 shift, r = t - n ln 2 with ln 2 in two
// parts (n ln2_hi exact for |n| < 2^9), exp(r) by Taylor to r^11 on |r| <=
// 0.35 (error below 2.2e-13 relative), times 2^n built as a normal
// double. The clamps keep 2^n normal; the caller's float conversion then
// rounds once, overflowing to inf and into the subnormals as expf would.
// NaN passes both clamps (each select keeps t when its compare is false).
IGNIS_ALWAYS_INLINE double exp_for_float(double t) {
  t = t > 100.0 ? 100.0 : t;
  t = t < -110.0 ? -110.0 : t;
  const double shift = 0x1.8p52;
  const double k = t * 0x1.71547652b82fep+0 + shift;
  const double n = k - shift;
  const double r = (t - n * 0x1.62e42fefa3800p-1) - n * 0x1.ef35793c76730p-45;
  double p = 0x1.ae64567f544e4p-26;
  p = p * r + 0x1.27e4fb7789f5cp-22;
  p = p * r + 0x1.71de3a556c734p-19;
  p = p * r + 0x1.a01a01a01a01ap-16;
  p = p * r + 0x1.a01a01a01a01ap-13;
  p = p * r + 0x1.6c16c16c16c17p-10;
  p = p * r + 0x1.1111111111111p-7;
  p = p * r + 0x1.5555555555555p-5;
  p = p * r + 0x1.5555555555555p-3;
  p = p * r + 0x1.0000000000000p-1;
  p = p * r * r + r + 1.0;
  int64_t kb;
  std::memcpy(&kb, &k, 8);
  const int64_t scale_bits = ((kb - 0x4338000000000000LL) + 1023) << 52;  // 2^n
  double scale;
  std::memcpy(&scale, &scale_bits, 8);
  return p * scale;
}
}  // namespace vec_math_detail

// expm1, exp2, sinh and cosh for float through exp_for_float in double
// (relative error ~7e-15 there). Where e^x - 1 or e^x - e^-x would cancel
// (|x| below 1e-4, 1e-2) a Taylor polynomial takes over, its first
// omitted term below 1e-18 relative. +-inf, NaN and -0 come out as libm's.
IGNIS_ALWAYS_INLINE float vexpm1(float x) {
  const double xd = double(x);
  const double taylor = xd + xd * xd * (0.5 + xd * (1.0 / 6 + xd * (1.0 / 24)));
  const double big = vec_math_detail::exp_for_float(xd) - 1.0;
  const float out = float(std::fabs(x) < 1e-4f ? taylor : big);
  return x == 0.0f ? x : out;  // expm1(-0) = -0
}
IGNIS_ALWAYS_INLINE double vexpm1(double x) { return std::expm1(x); }
IGNIS_ALWAYS_INLINE float vexp2(float x) {
  return float(vec_math_detail::exp_for_float(double(x) * 0x1.62e42fefa39efp-1));
}
IGNIS_ALWAYS_INLINE double vexp2(double x) { return std::exp2(x); }
IGNIS_ALWAYS_INLINE float vsinh(float x) {
  const double xd = double(x), x2 = xd * xd;
  const double taylor = xd + xd * x2 * (1.0 / 6 + x2 * (1.0 / 120 + x2 * (1.0 / 5040)));
  const double e = vec_math_detail::exp_for_float(xd);
  const float out = float(std::fabs(x) < 1e-2f ? taylor : 0.5 * (e - 1.0 / e));
  return x == 0.0f ? x : out;  // sinh(-0) = -0
}
IGNIS_ALWAYS_INLINE double vsinh(double x) { return std::sinh(x); }
IGNIS_ALWAYS_INLINE float vcosh(float x) {
  const double e = vec_math_detail::exp_for_float(double(x));
  return float(0.5 * (e + 1.0 / e));
}
IGNIS_ALWAYS_INLINE double vcosh(double x) { return std::cosh(x); }

namespace vec_math_detail {
// erfc(a) e^(a^2) a sqrt(pi) for a >= 0.5, a smooth function of t = 1/a
// tending to 1: a Chebyshev series of degree 24 in t on [1/10.1, 2]
// (fitted to libm's erfc in double: relative error below 2.3e-12),
// summed by Clenshaw's recurrence (stable, unlike its monomial form).
IGNIS_ALWAYS_INLINE double erfc_tail_factor(double t) {
  // the coefficients from degree 24 down to degree 0
  static constexpr double c[25] = {
      0x1.2515cce84beb4p-37, -0x1.211f73f544e8ep-35, 0x1.9b2b33d328955p-34,
      -0x1.d0b4cea6c7d35p-33, 0x1.8c043266ee1e4p-32, -0x1.3e8cf36bf1b9dp-32,
      -0x1.06f2f76432250p-30, 0x1.a1022a376170ep-28, -0x1.674ecb34071b1p-26,
      0x1.d0bb0e6cfa0d1p-25, -0x1.c0dbd29a8d4bep-24, 0x1.c41a391f76786p-24,
      0x1.0d79356ac572bp-22, -0x1.021aa93142b29p-19, 0x1.de54905ce4377p-18,
      -0x1.3cdb02d2fda44p-16, 0x1.16fbe1d8195d6p-15, -0x1.739fb40584b9cp-19,
      -0x1.289a48d77d345p-12, 0x1.7fb03d8cdd93ap-10, -0x1.358aa829555c1p-8,
      0x1.1f128a0e88bcfp-7, 0x1.b1c0746379eeap-7, -0x1.e13534289c098p-3,
      0x1.863661cada83bp-1};
  const double s = t * 0x1.0d55555555556p+0 - 0x1.1aaaaaaaaaaabp+0, s2 = s + s;
  double b1 = c[0], b2 = 0.0;
#pragma GCC unroll 24
  for (int k = 1; k < 24; ++k) {
    const double b0 = c[k] + s2 * b1 - b2;
    b2 = b1;
    b1 = b0;
  }
  return c[24] + s * b1 - b2;
}
}  // namespace vec_math_detail

// erfc for float, in double: 1 - erf(x) by erf's Taylor series (to x^21)
// below |x| = 0.5, where erfc is near 1; above, e^(-x^2) times the tail
// factor over |x| sqrt(pi) (no cancellation at any size: erfc(10) is
// 2e-45), and 2 - erfc(-x) for x <= -0.5. NaN stays NaN, erfc(+inf) = 0,
// erfc(-inf) = 2.
IGNIS_ALWAYS_INLINE float verfc(float x) {
  const double xd = double(x), a = std::fabs(xd), x2 = xd * xd;
  double p = 0x1.fcc5720624c1cp-27;
  p = p * x2 + -0x1.5f742ec43e71ap-23;
  p = p * x2 + 0x1.b9e6c9dc651a2p-20;
  p = p * x2 + -0x1.f4d25c3e0c2ebp-17;
  p = p * x2 + 0x1.f9a326f9b89b7p-14;
  p = p * x2 + -0x1.c02db40040b85p-11;
  p = p * x2 + 0x1.565bcd0e6a53fp-8;
  p = p * x2 + -0x1.b82ce31288b51p-6;
  p = p * x2 + 0x1.ce2f21a042be2p-4;
  p = p * x2 + -0x1.812746b0379e7p-2;
  p = p * x2 + 0x1.20dd750429b6dp+0;
  const double near_zero = 1.0 - xd * p;
  const double t = 1.0 / (a < 0.5 ? 1.0 : a);  // (finite in the lanes it does not serve)
  double tail = vec_math_detail::exp_for_float(-x2) * vec_math_detail::erfc_tail_factor(t) *
                t * 0x1.20dd750429b6dp-1;  // 1 / sqrt(pi)
  tail = xd < 0.0 ? 2.0 - tail : tail;
  return float(a < 0.5 ? near_zero : tail);
}
IGNIS_ALWAYS_INLINE double verfc(double x) { return std::erfc(x); }

// pow(x, y) for float: |x|^y = exp(y log|x|) in double (log_positive's and
// exp_for_float's errors, ~1e-11 relative for |y| up to 10^3, vanish in the
// float rounding except within that distance of a rounding boundary, so
// nearly every result is the correctly rounded one, glibc powf's), then
// C99's special cases by selects: a negative finite x to a non-integer y is
// NaN, an odd integer y keeps x's sign (-0 and -inf included), pow(x, +-0)
// = 1 and pow(1, y) = 1 for every x and y (NaN included), pow(-1, +-inf) =
// 1. Branch-free, so a loop calling it vectorises (std::pow kept it scalar).
IGNIS_ALWAYS_INLINE float vpow(float x, float y) {
  const float ax = std::fabs(x);
  const bool finite_positive = ax > 0.0f && ax < INFINITY;
  double lg = vec_math_detail::log_positive(double(finite_positive ? ax : 1.0f));
  lg = ax == 0.0f ? -INFINITY : lg;
  lg = ax == INFINITY ? INFINITY : lg;
  float out = float(vec_math_detail::exp_for_float(double(y) * lg));
  const bool y_int = y == std::trunc(y);  // +-inf counts as an even integer
  const float y_small = std::fabs(y) < 0x1p24f ? y : 0.0f;  // larger floats are even
  const bool y_odd = y_int && (int32_t(y_small) & 1) != 0;
  out = std::signbit(x) && y_odd ? -out : out;
  out = x < 0.0f && x > -INFINITY && !y_int ? NAN : out;
  out = x != x ? x : out;
  out = x == 1.0f ? 1.0f : out;
  out = x == -1.0f && std::fabs(y) == INFINITY ? 1.0f : out;
  return y == 0.0f ? 1.0f : out;
}
IGNIS_ALWAYS_INLINE double vpow(double x, double y) { return std::pow(x, y); }

}  // namespace ignis::cpu

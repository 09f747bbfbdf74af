// Scalar math written so that the compiler can vectorise loops calling it
// (no branches, no errno): exp for float, and the activations built on it.
// Accuracy: vexp is within 2 ulp of expf on [-87.3, 88.7]; below -87.3 it
// returns 0 (expf would give a subnormal), above 88.7 +inf, NaN stays NaN.
#pragma once

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

IGNIS_ALWAYS_INLINE float vexp(float x) {
  const float lo = -87.33654f, hi = 88.72283f;
  float xc = x < lo ? lo : (x > hi ? hi : x);
  float n = std::floor(xc * 1.44269504088896341f + 0.5f);
  float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  float out = y * scale;
  out = x < lo ? 0.0f : out;
  out = x > hi ? INFINITY : out;
  return x != x ? x : out;
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
  float xc = x < -lim ? -lim : (x > lim ? lim : x);
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
  r = std::fabs(x) < 0.0004f ? x : r;
  return x != x ? x : r;
}
IGNIS_ALWAYS_INLINE double vtanh(double x) { return std::tanh(x); }

}  // namespace ignis::cpu

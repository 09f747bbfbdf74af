// Scalar math written so that the compiler can vectorise loops calling it
// (no branches, no errno): exp for float, and the activations built on it.
// Accuracy: vexp is within 2 ulp of expf on [-87.3, 88.7]; below -87.3 it
// returns 0 (expf would give a subnormal), above 88.7 +inf, NaN stays NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace ignis::cpu {

inline float vexp(float x) {
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
inline double vexp(double x) { return std::exp(x); }

template <typename T>
inline T sigmoid(T x) { return T(1) / (T(1) + vexp(-x)); }

}  // namespace ignis::cpu

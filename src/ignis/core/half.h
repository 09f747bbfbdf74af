// 16-bit floating point storage types. Arithmetic happens in float: each op
// loads, widens, computes and rounds back (round-to-nearest-even), which is
// how PyTorch's CPU kernels treat these types too.
#pragma once

#include <cstdint>
#include <cstring>

namespace ignis {

inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

struct Half {
  uint16_t x = 0;
  Half() = default;
  Half(float f) : x(from_float(f)) {}
  operator float() const { return to_float(x); }

  // Branch-free (selects), so that a loop converting halves vectorises
  // whatever follows (with early returns, GCC duplicated the code after the
  // conversion per case and left its table reads masked, unvectorisable).
  static float to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    // zero and subnormals: man * 2^-24 (exact), with the sign
    uint32_t small = sign | float_to_bits(float(man) * 5.9604644775390625e-08f);
    uint32_t inf_nan = sign | 0x7f800000 | (man << 13);
    uint32_t normal = sign | ((exp + 112) << 23) | (man << 13);
    return bits_to_float(exp == 0 ? small : (exp == 31 ? inf_nan : normal));
  }
  static uint16_t from_float(float f) {
    uint32_t u = float_to_bits(f);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t absu = u & 0x7fffffff;
    if (absu >= 0x7f800000) {  // inf or nan
      return uint16_t(sign | 0x7c00 | (absu > 0x7f800000 ? 0x200 : 0));
    }
    if (absu >= 0x477ff000) return uint16_t(sign | 0x7c00);  // overflow -> inf
    if (absu < 0x38800000) {  // subnormal or zero in half
      // add 0.5 so that the float addition rounds to nearest even at 2^-24
      float a = bits_to_float(absu) + 0.5f;
      return uint16_t(sign | (float_to_bits(a) - 0x3f000000u));
    }
    uint32_t mant_odd = (absu >> 13) & 1;
    absu += 0xc8000fffu + mant_odd;  // rebias exponent and round to nearest even
    return uint16_t(sign | (absu >> 13));
  }
};

struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  BFloat16(float f) : x(from_float(f)) {}
  operator float() const { return bits_to_float(uint32_t(x) << 16); }

  static uint16_t from_float(float f) {
    uint32_t u = float_to_bits(f);
    if ((u & 0x7fffffff) > 0x7f800000) return uint16_t((u >> 16) | 0x40);  // nan
    uint32_t rounding = 0x7fff + ((u >> 16) & 1);
    return uint16_t((u + rounding) >> 16);
  }
};

}  // namespace ignis

#include "ignis/sym/range.h"

#include <algorithm>
#include <initializer_list>

#include "ignis/core/error.h"

namespace ignis::sym {

namespace {

bool is_inf(int64_t v) { return v == kNegInf || v == kPosInf; }
int sign(int64_t v) { return (v > 0) - (v < 0); }

Range hull(std::initializer_list<int64_t> vs) {
  return {std::min(vs), std::max(vs)};
}

// Python's floor division of two range ends. A finite value over an infinite
// one tends to 0 from its sign's side; an infinite one over anything nonzero
// stays infinite. inf / inf is never the extreme of a corner search (the
// quotient is monotone in each operand once the divisor's sign is fixed), so
// any value between its neighbours serves; 0 or -1 does.
int64_t floordiv_end(int64_t a, int64_t d) {
  if (is_inf(a) && is_inf(d)) return sign(a) == sign(d) ? 0 : -1;
  if (is_inf(a)) return sign(a) == sign(d) ? kPosInf : kNegInf;
  if (is_inf(d)) return a == 0 || sign(a) == sign(d) ? 0 : -1;
  int64_t q = a / d;
  if ((a % d != 0) && ((a < 0) != (d < 0))) --q;
  return q;
}

// Division by zero has no value, so a divisor end at 0 moves one step inward.
// Returns false when nothing but 0 is left.
bool drop_zero(Range& d) {
  if (d.lo == 0) d.lo = 1;
  if (d.hi == 0) d.hi = -1;
  return d.lo <= d.hi;
}

int64_t sat_abs(int64_t v) { return v < 0 ? sat_neg(v) : v; }

}  // namespace

int64_t floordiv_int(int64_t a, int64_t b) {
  IGNIS_CHECK_VALUE(b != 0, "sym: division by zero");
  IGNIS_CHECK_VALUE(!(a == kNegInf && b == -1), "sym: integer overflow in ", a, " // -1");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t mod_int(int64_t a, int64_t b) {
  IGNIS_CHECK_VALUE(b != 0, "sym: modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int64_t sat_add(int64_t a, int64_t b) {
  if (is_inf(a)) return a;
  if (is_inf(b)) return b;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a > 0 ? kPosInf : kNegInf;
  return r;
}

int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (is_inf(a) || is_inf(b)) return sign(a) == sign(b) ? kPosInf : kNegInf;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return sign(a) == sign(b) ? kPosInf : kNegInf;
  return r;
}

int64_t sat_neg(int64_t a) {
  if (a == kNegInf) return kPosInf;
  if (a == kPosInf) return kNegInf;
  return -a;
}

Range range_add(Range a, Range b) { return {sat_add(a.lo, b.lo), sat_add(a.hi, b.hi)}; }

Range range_scale(Range a, int64_t c) {
  return c >= 0 ? Range{sat_mul(a.lo, c), sat_mul(a.hi, c)}
                : Range{sat_mul(a.hi, c), sat_mul(a.lo, c)};
}

Range range_mul(Range a, Range b) {
  return hull({sat_mul(a.lo, b.lo), sat_mul(a.lo, b.hi), sat_mul(a.hi, b.lo),
               sat_mul(a.hi, b.hi)});
}

Range range_pow(Range a, int p) {
  auto pw = [p](int64_t v) {
    int64_t r = v;
    for (int i = 1; i < p; ++i) r = sat_mul(r, v);
    return r;
  };
  if (p % 2 == 1) return {pw(a.lo), pw(a.hi)};  // odd powers are monotone
  if (a.lo >= 0) return {pw(a.lo), pw(a.hi)};
  if (a.hi <= 0) return {pw(a.hi), pw(a.lo)};
  return {0, std::max(pw(a.lo), pw(a.hi))};
}

Range range_floordiv(Range a, Range d) {
  if (!drop_zero(d)) return Range::all();
  if (d.lo < 0 && d.hi > 0) {
    // |a // d| <= |a| whenever |d| >= 1.
    int64_t m = std::max(sat_abs(a.lo), sat_abs(a.hi));
    return {sat_neg(m), m};
  }
  // One divisor sign: the quotient is monotone in each operand, so the
  // extremes sit at the corners.
  return hull({floordiv_end(a.lo, d.lo), floordiv_end(a.lo, d.hi), floordiv_end(a.hi, d.lo),
               floordiv_end(a.hi, d.hi)});
}

Range range_mod(Range a, Range d) {
  if (!drop_zero(d)) return Range::all();
  if (d.hi < 0) {
    // x % d == -((-x) % (-d)) in Python semantics.
    Range r = range_mod({sat_neg(a.hi), sat_neg(a.lo)}, {sat_neg(d.hi), sat_neg(d.lo)});
    return {sat_neg(r.hi), sat_neg(r.lo)};
  }
  if (d.lo < 0) {
    int64_t m = sat_add(std::max(sat_abs(d.lo), sat_abs(d.hi)), -1);
    return {sat_neg(m), m};
  }
  // d >= 1: the remainder is in [0, d - 1].
  Range r{0, d.hi == kPosInf ? kPosInf : d.hi - 1};
  if (a.lo >= 0 && a.hi < d.lo) return a;  // a never wraps: a % d == a
  if (a.lo >= 0) r.hi = std::min(r.hi, a.hi);
  if (d.is_point() && !is_inf(a.lo) && !is_inf(a.hi) &&
      floordiv_end(a.lo, d.lo) == floordiv_end(a.hi, d.lo)) {
    // a stays within one period of the divisor: the remainder is a shifted a.
    int64_t base = floordiv_end(a.lo, d.lo) * d.lo;
    return {a.lo - base, a.hi - base};
  }
  return r;
}

Range range_min(Range a, Range b) { return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)}; }
Range range_max(Range a, Range b) { return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)}; }

}  // namespace ignis::sym

// Integer value ranges and interval arithmetic, with infinite ends.
//
// Every sym::Expr carries the Range its value must lie in, computed when the
// node is built from its children's ranges (see expr.h); the simplifier and
// the prover (prove.h) read these. The arithmetic here is the sound part: each
// operation returns a range containing every result of the operation applied
// to values of its operand ranges. Ends saturate to infinity rather than
// overflow, which only widens a range, so overflow never makes a range wrong.
//
// Infinity is spelt kNegInf / kPosInf (INT64_MIN / INT64_MAX): a finite end
// is any other value. This header knows nothing of expressions.
#pragma once

#include <cstdint>
#include <limits>

namespace ignis::sym {

inline constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();

// The closed interval [lo, hi]; lo == kNegInf and hi == kPosInf mean unbounded.
struct Range {
  int64_t lo = kNegInf;
  int64_t hi = kPosInf;

  static constexpr Range all() { return {}; }
  static constexpr Range point(int64_t v) { return {v, v}; }
  static constexpr Range nonneg() { return {0, kPosInf}; }
  static constexpr Range boolean() { return {0, 1}; }

  bool is_point() const { return lo == hi && lo != kNegInf && hi != kPosInf; }
  bool contains(int64_t v) const { return lo <= v && v <= hi; }
  bool contains(Range r) const { return lo <= r.lo && r.hi <= hi; }
  bool nonneg_known() const { return lo >= 0; }
  bool positive_known() const { return lo >= 1; }
  friend bool operator==(Range a, Range b) { return a.lo == b.lo && a.hi == b.hi; }
};

// Python's integer floor division and remainder (the remainder takes b's
// sign). b == 0 or an overflowing result throws ValueError.
int64_t floordiv_int(int64_t a, int64_t b);
int64_t mod_int(int64_t a, int64_t b);

// Saturating end arithmetic: an infinite operand or an overflow gives the
// infinity of the result's sign. 0 * inf is 0 (a zero factor zeroes any value).
int64_t sat_add(int64_t a, int64_t b);
int64_t sat_mul(int64_t a, int64_t b);
int64_t sat_neg(int64_t a);

Range range_add(Range a, Range b);
Range range_scale(Range a, int64_t c);
Range range_mul(Range a, Range b);
Range range_pow(Range a, int p);  // a^p, p >= 1: even powers are non-negative
// Python semantics (floor; the remainder takes the divisor's sign). A divisor
// range that touches 0 is treated as excluding it: division by zero has no
// value to bound.
Range range_floordiv(Range a, Range d);
Range range_mod(Range a, Range d);
Range range_min(Range a, Range b);
Range range_max(Range a, Range b);

}  // namespace ignis::sym

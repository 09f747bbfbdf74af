// What is known about an expression's value from its symbols' ranges.
//
// The compiler asks these questions to drop bounds checks (known_lt(index,
// size)), to print `/` instead of a floor-division helper (known_nonneg), and
// to decide contiguity; the simplifier asks them before every range rule.
// "Known" means: for every value of the free symbols within their ranges (and
// every loop index below its extent), wherever the expression has a value.
// A false answer means "not proven", never "known false".
//
// Two layers, cheapest first:
// 1. The interval each node carries (interval arithmetic, see range.h).
// 2. Monotone substitution, which sees through correlations that intervals
//    cannot: where e is linear in an atom v (e == A*v + B, with v nowhere
//    else) and A's sign is known, e's lower bound is at one end of v, so v
//    is replaced by that end. Atoms with a symbolic extent go first, and
//    their upper end is symbolic: for an index j < s1 (or for x % s1) it is
//    s1 - 1, so `s1 - j - 1 >= 0` is proven although s1 is unbounded. This
//    is what proves `i*s1 + j < s0*s1` for i < s0, j < s1.
//
// The operands are taken as given: pass simplified expressions for the
// strongest answers (simplify.h's statically_known_true does).
#pragma once

#include "ignis/sym/expr.h"

namespace ignis::sym {

// Bounds on e's value: never wider than e.range(), often tighter.
Range bound(Expr e);

bool known_nonneg(Expr e);  // e >= 0
bool known_pos(Expr e);     // e >= 1
bool known_le(Expr a, Expr b);
bool known_lt(Expr a, Expr b);
inline bool known_ge(Expr a, Expr b) { return known_le(b, a); }
inline bool known_gt(Expr a, Expr b) { return known_lt(b, a); }
bool known_eq(Expr a, Expr b);
bool known_ne(Expr a, Expr b);
// lo <= e < hi.
inline bool known_in(Expr e, Expr lo, Expr hi) { return known_le(lo, e) && known_lt(e, hi); }

}  // namespace ignis::sym

// Simplification: rewrite rules over canonical forms, using range facts.
//
// expr.h's constructors already fold constants and keep sums canonical; the
// rules here are the rewrites that need reasoning: splitting floor-division
// and remainder of sums by what the divisor divides, dropping a division or a
// remainder that the operand's range makes trivial (j // 4 == 0 and j % 4 == j
// for 0 <= j < 4), fusing nested divisions, recombining
// b*(y // b) + y % b into y, choosing min/max operands by ranges and deciding
// comparisons. simplify.cpp lists them as tables, one rule per line, and
// docs/sym.md restates them.
//
// Each rule is an identity wherever the input has a value (a rule may give a
// value where the input divided by zero, never a different one); the
// randomized tests check this point by point.
#pragma once

#include "ignis/sym/expr.h"

namespace ignis::sym {

Expr simplify(Expr e);

// Whether cond simplifies to a nonzero constant: true for every value of its
// symbols. False means "not proven" (a guard would be needed).
bool statically_known_true(Expr cond);
// Whether cond simplifies to 0.
bool statically_known_false(Expr cond);

}  // namespace ignis::sym

// Walking expressions: evaluation, substitution, free symbols.
//
// eval() is the reference semantics the tests hold every rewrite to
// (Python's floor division and remainder); subs() is how a caller binds
// symbols to other expressions (a loop index to a shifted one, a size to a
// specialised constant) and gets a canonical result back.
#pragma once

#include <unordered_map>
#include <vector>

#include "ignis/sym/expr.h"

namespace ignis::sym {

using Bindings = std::unordered_map<Expr, int64_t>;

// The value of e with each symbol bound. An unbound symbol, a division by
// zero or an int64 overflow throws ValueError. Comparisons are 1 or 0.
int64_t eval(Expr e, const Bindings& values);

// e with every occurrence of a key node replaced by its value, rebuilt
// through the canonicalising constructors (not simplified: call simplify).
// Keys match whole nodes, typically symbols; a key that is a sum does not
// match part of a larger sum. Symbols' extents are facts about them and are
// left alone.
Expr subs(Expr e, const std::unordered_map<Expr, Expr>& replacements);

// The symbols e uses, in compare() order (deterministic). Extents of index
// symbols count: they are what the index's range depends on.
std::vector<Expr> free_symbols(Expr e);

}  // namespace ignis::sym

// Printing expressions: torch's readable spelling, and C++ source.
//
// str() is what logs, graph dumps and test expectations show. It follows
// torch's sympy printing where torch has a spelling: `s0*s1 + 4`, `(x//4)`
// for FloorDiv, `Mod(x, 4)`, `Min(a, b)`, `Eq(s0, 3)`, `8 < s0`; a repeated
// factor is `x**2`.
//
// to_cpp() is what generated kernels contain: a C++ expression over int64_t
// variables. Floor division and Python's remainder are plain `/` and `%`
// only where the ranges prove the dividend >= 0 and the divisor > 0: C++
// truncates toward zero, which agrees with floor only there. Elsewhere it
// calls ignis_floordiv / ignis_mod, which cpp_prelude() defines (with
// ignis_min / ignis_max), so generated code stays exact for negative
// operands and fast for the usual non-negative indices.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include "ignis/sym/expr.h"

namespace ignis::sym {

std::string str(Expr e);
std::ostream& operator<<(std::ostream& os, Expr e);

// `name_of` spells a symbol as the generated code's variable (default: its
// name).
using SymbolNamer = std::function<std::string(Expr)>;
// `spell_constant`, when set, sees every integer the C++ spelling would
// write as a literal (a constant, a sum's coefficient or constant term,
// always as the magnitude printed after any sign) and may return another
// spelling for it; an empty string keeps the literal. The compiler's
// size-generic code reads sizes from a parameter array this way
// (compiler/size_params.h).
using ConstantSpeller = std::function<std::string(int64_t)>;
std::string to_cpp(Expr e, const SymbolNamer& name_of = {},
                   const ConstantSpeller& spell_constant = {});

// Definitions of the helpers to_cpp() may call; include once per source.
const char* cpp_prelude();

}  // namespace ignis::sym

#include "ignis/sym/prove.h"

#include <algorithm>

namespace ignis::sym {

namespace {

// Substitutions tried per question: index expressions have a handful of atoms.
constexpr int kMaxSteps = 16;

// The exclusive symbolic upper bound of an atom: an index's extent, or d for
// x % d with d >= 1 (the remainder is then in [0, d - 1]).
Expr symbolic_extent(Expr atom) {
  if (atom.is_symbol()) return extent_of(atom);
  if (atom.kind() == Kind::Mod && atom.arg(1).range().lo >= 1) return atom.arg(1);
  return {};
}

// Whether v occurs in e. A symbol's extent is a fact about it, not a use.
bool contains(Expr e, Expr v) {
  if (e == v) return true;
  if (e.is_symbol()) return false;
  for (Expr a : e.args())
    if (contains(a, v)) return true;
  return false;
}

// A with e == A*v + B and v in neither A nor B; undefined when e is not of
// that form (v squared, or inside a floordiv, a min, ...).
Expr linear_coeff(Expr e, Expr v) {
  SumBuilder a;
  bool linear = true;
  for_each_term(e, [&](Expr t, int64_t c) {
    int uses = 0;
    Expr rest = 1;
    for (Expr f : factors_of(t)) {
      if (f == v) {
        ++uses;
      } else {
        linear = linear && !contains(f, v);
        rest = rest * f;
      }
    }
    linear = linear && uses <= 1;
    if (uses == 1) a.add(rest, c);
  });
  return linear ? a.build() : Expr();
}

// e with the factor v replaced by `value` (v occurs only as a factor).
Expr replace_factor(Expr e, Expr v, Expr value) {
  SumBuilder sb;
  int64_t k = for_each_term(e, [&](Expr t, int64_t c) {
    Expr product = 1;
    for (Expr f : factors_of(t)) product = product * (f == v ? value : f);
    sb.add(product, c);
  });
  sb.add_const(k);
  return sb.build();
}

// The lower bound of e by monotone substitution (see the header).
int64_t lower(Expr e) {
  int64_t best = e.range().lo;
  Expr cur = e;
  std::vector<Expr> done;
  for (int step = 0; step < kMaxSteps && !cur.is_const(); ++step) {
    std::vector<Expr> atoms;
    for_each_term(cur, [&](Expr t, int64_t) {
      for (Expr f : factors_of(t))
        if (std::find(atoms.begin(), atoms.end(), f) == atoms.end()) atoms.push_back(f);
    });
    auto fresh = [&](Expr a) { return std::find(done.begin(), done.end(), a) == done.end(); };
    // Atoms with a symbolic extent first: their ends bring in the sizes that
    // must cancel, so the sizes are substituted only after them.
    Expr v;
    for (Expr a : atoms)
      if (fresh(a) && symbolic_extent(a).defined()) {
        v = a;
        break;
      }
    for (Expr a : atoms)
      if (!v.defined() && fresh(a)) v = a;
    if (!v.defined()) break;
    done.push_back(v);

    Expr coeff = linear_coeff(cur, v);
    if (!coeff.defined() || coeff.is_const(0)) continue;
    Expr end;
    if (coeff.range().lo >= 0) {
      // e grows with v: e is least at v's least.
      if (v.range().lo != kNegInf) end = v.range().lo;
    } else if (coeff.range().hi <= 0) {
      // e shrinks as v grows: e is least at v's most, symbolic when it can be.
      Expr extent = symbolic_extent(v);
      if (extent.defined()) end = extent - 1;
      else if (v.range().hi != kPosInf) end = v.range().hi;
    }
    if (!end.defined()) continue;
    cur = replace_factor(cur, v, end);
    best = std::max(best, cur.range().lo);
  }
  return best;
}

}  // namespace

Range bound(Expr e) {
  Range r = e.range();
  if (r.is_point()) return r;
  return {std::max(r.lo, lower(e)), std::min(r.hi, sat_neg(lower(-e)))};
}

bool known_nonneg(Expr e) { return e.range().lo >= 0 || lower(e) >= 0; }
bool known_pos(Expr e) { return e.range().lo >= 1 || known_nonneg(e - 1); }
bool known_le(Expr a, Expr b) { return known_nonneg(b - a); }
bool known_lt(Expr a, Expr b) { return known_nonneg(b - a - 1); }

bool known_eq(Expr a, Expr b) {
  Expr d = a - b;
  return d.is_const(0) || bound(d) == Range::point(0);
}

bool known_ne(Expr a, Expr b) { return known_lt(a, b) || known_lt(b, a); }

}  // namespace ignis::sym

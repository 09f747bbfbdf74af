#include "ignis/sym/simplify.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "ignis/sym/prove.h"

namespace ignis::sym {

namespace {

// ---- Monomials: what "d divides this term" means ----

// coeff * (product of factors), the factors sorted (a repeat is a power).
struct Mono {
  int64_t coeff = 1;
  std::vector<Expr> factors;

  Mono(int64_t c, std::span<const Expr> f) : coeff(c), factors(f.begin(), f.end()) {}
  Expr expr() const {
    Expr p = coeff;
    for (const Expr& f : factors) p = p * f;
    return p;
  }
  bool is_one() const { return coeff == 1 && factors.empty(); }
  friend bool operator==(const Mono& a, const Mono& b) {
    return a.coeff == b.coeff && a.factors == b.factors;
  }
};

// d as a monomial, if it is one: a constant, an atom, a product, or c*term.
std::optional<Mono> as_mono(Expr d) {
  if (d.is_const()) return Mono(d.value(), {});
  if (d.kind() != Kind::Add) return Mono(1, factors_of(d));
  if (d.args().size() != 1 || d->value != 0) return std::nullopt;
  return Mono(d->coeffs[0], factors_of(d.arg(0)));
}

// q with a == q*b, if b divides a (its coefficient does, and its factors are
// a sub-multiset of a's).
std::optional<Mono> divide(const Mono& a, const Mono& b) {
  if (b.coeff == 0 || a.coeff % b.coeff != 0) return std::nullopt;
  if (!std::includes(a.factors.begin(), a.factors.end(), b.factors.begin(), b.factors.end(),
                     ExprLess()))
    return std::nullopt;
  Mono q(a.coeff / b.coeff, {});
  std::set_difference(a.factors.begin(), a.factors.end(), b.factors.begin(), b.factors.end(),
                      std::back_inserter(q.factors), ExprLess());
  return q;
}

// The greatest common monomial: gcd of coefficients (> 0), common factors.
Mono gcd(const Mono& a, const Mono& b) {
  Mono g(std::gcd(a.coeff, b.coeff), {});
  std::set_intersection(a.factors.begin(), a.factors.end(), b.factors.begin(), b.factors.end(),
                        std::back_inserter(g.factors), ExprLess());
  return g;
}

// x == q*d + r, the terms of x that d divides going to q. For a constant d
// the constant's floor part goes too, leaving r's constant in [0, d).
// Empty when q would be 0.
struct Split {
  Expr q, r;
};

std::optional<Split> split_multiples(Expr x, const Mono& d) {
  SumBuilder q, r;
  bool any = false;
  int64_t k = for_each_term(x, [&](Expr t, int64_t c) {
    if (auto m = divide(Mono(c, factors_of(t)), d)) {
      q.add(m->expr());
      any = true;
    } else {
      r.add_term(t, c);
    }
  });
  int64_t kq = d.factors.empty() ? floordiv_int(k, d.coeff) : 0;
  q.add_const(kq);
  r.add_const(k - kq * d.coeff);
  if (!any && kq == 0) return std::nullopt;
  return Split{q.build(), r.build()};
}

// x == g*y + r with 0 <= r < g, for a monomial g > 1 dividing d (d > 0):
// then x // d == y // (d/g) and x % d == g*(y % (d/g)) + r. Candidates are
// gcd(d, term) for x's terms, the largest first.
struct Factored {
  Expr g, y, r, k;  // k = d / g
};

std::optional<Factored> factor_out(Expr x, const Mono& d) {
  std::vector<Mono> candidates;
  for_each_term(x, [&](Expr t, int64_t c) {
    Mono g = gcd(d, Mono(c, factors_of(t)));
    if (!g.is_one() && std::find(candidates.begin(), candidates.end(), g) == candidates.end())
      candidates.push_back(g);
  });
  std::stable_sort(candidates.begin(), candidates.end(), [](const Mono& a, const Mono& b) {
    return a.factors.size() != b.factors.size() ? a.factors.size() > b.factors.size()
                                                : a.coeff > b.coeff;
  });
  for (const Mono& g : candidates) {
    Expr ge = g.expr();
    if (!known_pos(ge)) continue;
    SumBuilder y, r;
    int64_t k = for_each_term(x, [&](Expr t, int64_t c) {
      if (auto m = divide(Mono(c, factors_of(t)), g)) y.add(m->expr());
      else r.add_term(t, c);
    });
    int64_t ky = g.factors.empty() ? floordiv_int(k, g.coeff) : 0;
    y.add_const(ky);
    r.add_const(k - ky * g.coeff);
    Expr re = r.build();
    if (!known_in(re, 0, ge)) continue;
    return Factored{ge, y.build(), re, divide(d, g)->expr()};
  }
  return std::nullopt;
}

// Whether b divides a as monomials.
bool divides(Expr b, Expr a) {
  auto mb = as_mono(b), ma = as_mono(a);
  return mb && ma && divide(*ma, *mb).has_value();
}

// The terms a and b share (same term, same coefficient) plus the smaller of
// their constants: min(c + x, c + y) == c + min(x, y). Undefined if nothing.
Expr common_part(Expr a, Expr b) {
  std::unordered_map<Expr, int64_t> in_b;
  int64_t kb = for_each_term(b, [&](Expr t, int64_t c) { in_b[t] = c; });
  SumBuilder common;
  bool any = false;
  int64_t ka = for_each_term(a, [&](Expr t, int64_t c) {
    auto it = in_b.find(t);
    if (it != in_b.end() && it->second == c) {
      common.add_term(t, c);
      any = true;
    }
  });
  common.add_const(std::min(ka, kb));
  Expr e = common.build();
  return any || !e.is_const(0) ? e : Expr();
}

// Whether p has terms and every one is in s with the same coefficient.
bool has_terms(Expr s, Expr p) {
  std::unordered_map<Expr, int64_t> in_s;
  for_each_term(s, [&](Expr t, int64_t c) { in_s[t] = c; });
  bool all = true, any = false;
  for_each_term(p, [&](Expr t, int64_t c) {
    auto it = in_s.find(t);
    all = all && it != in_s.end() && it->second == c;
    any = true;
  });
  return any && all;
}

// ---- The rules ----
//
// Each function takes simplified operands and returns the simplified
// operation. It builds the canonical form first (constants fold, divisors
// turn positive), then tries its rules top to bottom; the first that applies
// rewrites into smaller pieces, which are simplified the same way.

class Simplifier {
 public:
  Expr visit(Expr e);

 private:
  Expr add(Expr a, Expr b) { return sum(a + b); }
  Expr mul(Expr a, Expr b) { return sum(a * b); }
  Expr sum(Expr s);
  Expr floordiv(Expr x, Expr d);
  Expr mod(Expr x, Expr d);
  Expr min(Expr a, Expr b);
  Expr max(Expr a, Expr b);
  Expr relation(Kind k, Expr a, Expr b);

  std::unordered_map<Expr, Expr> memo_;
};

Expr Simplifier::floordiv(Expr x, Expr d) {
  // A divisor that simplified to 0 (the expression never has a value: kept
  // as written), or to a negative constant (the canonical flip, with the
  // rules applied to what it produces).
  if (d.is_const(0)) return division_by_zero(Kind::FloorDiv, x);
  if (d.is_const() && d.value() < 0) return floordiv(-x, -d);         // x // -c == (-x) // c
  Expr e = sym::floordiv(x, d);
  if (e.kind() != Kind::FloorDiv) return e;
  x = e.arg(0), d = e.arg(1);
  auto dm = as_mono(d);
  bool pos = known_pos(d);
  Expr inner = x.kind() == Kind::FloorDiv ? x.arg(1) : Expr();

  if (known_in(x, 0, d)) return 0;                                    // 0 <= x < d
  if (known_in(x, -d, 0)) return -1;                                  // -d <= x < 0
  if (auto s = dm ? split_multiples(x, *dm) : std::nullopt)           // (q*d + r) // d
    return add(s->q, floordiv(s->r, d));                              //   == q + r // d
  if (inner.defined() && pos && known_pos(inner))                     // (y // a) // d
    return floordiv(x.arg(0), mul(inner, d));                         //   == y // (a*d), a, d > 0
  if (auto f = pos && dm ? factor_out(x, *dm) : std::nullopt)         // (g*y + r) // (g*k)
    return floordiv(f->y, f->k);                                      //   == y // k, 0 <= r < g
  return e;
}

Expr Simplifier::mod(Expr x, Expr d) {
  if (d.is_const(0)) return division_by_zero(Kind::Mod, x);
  if (d.is_const() && d.value() < 0) return -mod(-x, -d);             // x % -c == -((-x) % c)
  Expr e = sym::mod(x, d);
  if (e.kind() != Kind::Mod) return e;
  x = e.arg(0), d = e.arg(1);
  auto dm = as_mono(d);
  bool pos = known_pos(d);

  if (known_in(x, 0, d)) return x;                                    // 0 <= x < d
  if (known_in(x, -d, 0)) return add(x, d);                           // -d <= x < 0
  if (auto s = dm ? split_multiples(x, *dm) : std::nullopt)           // (q*d + r) % d
    return mod(s->r, d);                                              //   == r % d
  if (x.kind() == Kind::Mod && divides(d, x.arg(1)))                  // (y % (k*d)) % d
    return mod(x.arg(0), d);                                          //   == y % d
  if (auto f = pos && dm ? factor_out(x, *dm) : std::nullopt)         // (g*y + r) % (g*k)
    return add(mul(f->g, mod(f->y, f->k)), f->r);                     //   == g*(y % k) + r
  return e;
}

Expr Simplifier::min(Expr a, Expr b) {
  Expr e = sym::min(a, b);
  if (e.kind() != Kind::Min) return e;
  a = e.arg(0), b = e.arg(1);

  if (known_le(a, b)) return a;                                       // a <= b
  if (known_le(b, a)) return b;                                       // b <= a
  if (Expr c = common_part(a, b); c.defined())                        // min(c + x, c + y)
    return add(c, min(a - c, b - c));                                 //   == c + min(x, y)
  return e;
}

Expr Simplifier::max(Expr a, Expr b) {
  Expr e = sym::max(a, b);
  if (e.kind() != Kind::Max) return e;
  a = e.arg(0), b = e.arg(1);

  if (known_le(a, b)) return b;                                       // a <= b
  if (known_le(b, a)) return a;                                       // b <= a
  if (Expr c = common_part(a, b); c.defined())                        // max(c + x, c + y)
    return add(c, max(a - c, b - c));                                 //   == c + max(x, y)
  return e;
}

// Comparisons are canonical (lhs, rhs) pairs; a proven one folds to 1 or 0.
Expr Simplifier::relation(Kind k, Expr a, Expr b) {
  switch (k) {
    case Kind::Eq:
      if (known_eq(a, b)) return 1;
      if (known_ne(a, b)) return 0;
      return eq(a, b);
    case Kind::Ne:
      if (known_ne(a, b)) return 1;
      if (known_eq(a, b)) return 0;
      return ne(a, b);
    case Kind::Lt:
      if (known_lt(a, b)) return 1;
      if (known_le(b, a)) return 0;
      return lt(a, b);
    default:
      if (known_le(a, b)) return 1;
      if (known_lt(b, a)) return 0;
      return le(a, b);
  }
}

// Sum rules. The canonical sum has merged like terms already; what is left
// is a division next to its remainder, where a term may carry any monomial
// factor R besides the division or remainder:
//   R*b*(y // b) + R*(y % b) == R*y       recombine (turns flat -> coords -> flat into flat)
//   R*y - R*b*(y // b)       == R*(y % b) the remainder, whose range is known
// Both hold for any b != 0 (Python's identity y == b*(y // b) + y % b). Each
// removes a division term, so they cannot undo each other.
Expr Simplifier::sum(Expr s) {
  if (s.kind() != Kind::Add) return s;
  for (size_t i = 0; i < s.args().size(); ++i) {
    auto fs = factors_of(s.arg(i));
    for (size_t f = 0; f < fs.size(); ++f) {
      Kind k = fs[f].kind();
      if (k != Kind::Mod && k != Kind::FloorDiv) continue;
      const Expr& y = fs[f].arg(0);
      const Expr& b = fs[f].arg(1);
      Expr rest = s->coeffs[i];  // the term is rest * fs[f]
      for (size_t g = 0; g < fs.size(); ++g)
        if (g != f) rest = rest * fs[g];
      if (k == Kind::Mod) {
        // The partner is built simplified, so a nested division matches its
        // fused spelling: s2*((f // s2) % s1) pairs with s1*s2*(f // (s1*s2)).
        Expr partner = rest * b * floordiv(y, b);
        if (has_terms(s, partner)) return sum(s - partner - rest * fs[f] + rest * y);
      } else {
        auto rm = as_mono(rest), bm = as_mono(b);
        auto r = rm && bm ? divide(*rm, *bm) : std::nullopt;  // rest == -R*b
        if (!r) continue;
        Expr partner = -r->expr() * y;
        if (has_terms(s, partner))
          return sum(s - rest * fs[f] - partner - r->expr() * mod(y, b));
      }
    }
  }
  return s;
}

Expr Simplifier::visit(Expr e) {
  if (e.is_const() || e.is_symbol()) return e;
  if (auto it = memo_.find(e); it != memo_.end()) return it->second;
  Expr r;
  switch (e.kind()) {
    case Kind::Add: {
      SumBuilder sb;
      sb.add_const(e->value);
      for (size_t i = 0; i < e.args().size(); ++i) sb.add(visit(e.arg(i)), e->coeffs[i]);
      r = sum(sb.build());
      break;
    }
    case Kind::Mul:
      r = 1;
      for (const Expr& f : e.args()) r = r * visit(f);
      r = sum(r);
      break;
    case Kind::FloorDiv: r = floordiv(visit(e.arg(0)), visit(e.arg(1))); break;
    case Kind::Mod: r = mod(visit(e.arg(0)), visit(e.arg(1))); break;
    case Kind::Min: r = min(visit(e.arg(0)), visit(e.arg(1))); break;
    case Kind::Max: r = max(visit(e.arg(0)), visit(e.arg(1))); break;
    default: r = relation(e.kind(), visit(e.arg(0)), visit(e.arg(1))); break;
  }
  memo_.emplace(e, r);
  return r;
}

}  // namespace

// Nodes are interned and immortal, and simplification is a function of the
// node alone (its symbols' ranges are part of it), so results are kept
// across calls: the scheduler rebuilds the same index expressions many times
// while it tries fusions (a body per attempt), and each rebuild asked for the
// same simplifications again (a third of lowering the example GPT's
// backward graph). One table a thread, no lock; cleared when it grows large.
Expr simplify(Expr e) {
  if (e.is_const()) return e;
  thread_local std::unordered_map<Expr, Expr> done;
  auto it = done.find(e);
  if (it != done.end()) return it->second;
  Expr r = Simplifier().visit(e);
  if (done.size() >= (size_t(1) << 18)) done.clear();
  done.emplace(e, r);
  return r;
}

bool statically_known_true(Expr cond) {
  Expr s = simplify(cond);
  return s.is_const() && s.value() != 0;
}

bool statically_known_false(Expr cond) { return simplify(cond).is_const(0); }

}  // namespace ignis::sym

#include "ignis/sym/expr.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <numeric>
#include <unordered_set>

#include "ignis/core/error.h"

namespace ignis::sym {

namespace {

// ---- Stable hashing: from structure only, never from addresses ----

uint64_t splitmix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t combine(uint64_t h, uint64_t v) { return splitmix(h ^ (v + (h << 6) + (h >> 2))); }

uint64_t structural_hash(const Node& n) {
  uint64_t h = combine(0x5157a11ceULL, static_cast<uint64_t>(n.kind));
  if (n.kind == Kind::Const) return combine(h, static_cast<uint64_t>(n.value));
  if (n.kind == Kind::Symbol) {
    for (char c : n.name) h = combine(h, static_cast<unsigned char>(c));
    h = combine(h, n.name.size());
    h = combine(h, n.flags);
    h = combine(h, static_cast<uint64_t>(n.range.lo));
    h = combine(h, static_cast<uint64_t>(n.range.hi));
    return combine(h, n.args.empty() ? 0 : n.args[0].stable_hash());
  }
  for (size_t i = 0; i < n.args.size(); ++i) {
    h = combine(h, n.args[i].stable_hash());
    if (n.kind == Kind::Add) h = combine(h, static_cast<uint64_t>(n.coeffs[i]));
  }
  return combine(h, static_cast<uint64_t>(n.value));
}

// ---- Interning ----

struct NodeHash {
  size_t operator()(const Node* n) const { return n->hash; }
};
struct NodeEq {
  bool operator()(const Node* a, const Node* b) const {
    return a->kind == b->kind && a->flags == b->flags && a->value == b->value &&
           a->range == b->range && a->args == b->args && a->coeffs == b->coeffs &&
           a->name == b->name;
  }
};

class Interner {
 public:
  const Node* intern(Node&& proto) {
    proto.hash = structural_hash(proto);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = table_.find(&proto);
    if (it != table_.end()) return *it;
    const Node* n = new Node(std::move(proto));
    table_.insert(n);
    return n;
  }

 private:
  std::mutex mu_;
  std::unordered_set<const Node*, NodeHash, NodeEq> table_;
};

// Never destroyed: nodes are immortal, and handles may outlive static destructors.
Interner& interner() {
  static auto* table = new Interner;
  return *table;
}

Expr make(Node&& n) { return Expr::from_node(interner().intern(std::move(n))); }

const Node* intern_constant(int64_t v) {
  Node n{Kind::Const};
  n.value = v;
  n.range = Range::point(v);
  return interner().intern(std::move(n));
}

// Small constants skip the table's lock: index code is full of them.
constexpr int64_t kSmallLo = -64, kSmallHi = 1024;

const Node* const* small_constants() {
  static const Node* const* table = [] {
    auto* t = new const Node*[kSmallHi - kSmallLo + 1];
    for (int64_t v = kSmallLo; v <= kSmallHi; ++v) t[v - kSmallLo] = intern_constant(v);
    return t;
  }();
  return table;
}

// ---- Checked integer arithmetic: overflow is a user-visible error ----

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  IGNIS_CHECK_VALUE(!__builtin_add_overflow(a, b, &r), "sym: integer overflow in ", a, " + ", b);
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  IGNIS_CHECK_VALUE(!__builtin_mul_overflow(a, b, &r), "sym: integer overflow in ", a, " * ", b);
  return r;
}

// ---- Building nodes ----

Expr truth(bool b) { return b ? 1 : 0; }

Range range_of_product(const std::vector<Expr>& factors) {
  Range r = Range::point(1);
  for (size_t i = 0; i < factors.size();) {
    size_t j = i;
    while (j < factors.size() && factors[j] == factors[i]) ++j;
    r = range_mul(r, range_pow(factors[i].range(), static_cast<int>(j - i)));
    i = j;
  }
  return r;
}

Range range_of_binary(Kind k, Range a, Range b) {
  switch (k) {
    case Kind::FloorDiv: return range_floordiv(a, b);
    case Kind::Mod: return range_mod(a, b);
    case Kind::Min: return range_min(a, b);
    case Kind::Max: return range_max(a, b);
    default: return Range::boolean();
  }
}

Expr binary(Kind k, Expr a, Expr b) {
  Node n{k};
  n.range = range_of_binary(k, a.range(), b.range());
  n.args = {a, b};
  return make(std::move(n));
}

// A product of atoms, sorted: 1 for none, the atom for one, else a Mul.
Expr product(std::vector<Expr> factors) {
  if (factors.empty()) return 1;
  if (factors.size() == 1) return factors[0];
  Node n{Kind::Mul};
  n.range = range_of_product(factors);
  n.args = std::move(factors);
  return make(std::move(n));
}

Expr multiply_terms(Expr a, Expr b) {
  auto fa = factors_of(a), fb = factors_of(b);
  std::vector<Expr> merged(fa.size() + fb.size());
  std::merge(fa.begin(), fa.end(), fb.begin(), fb.end(), merged.begin(), ExprLess());
  return product(std::move(merged));
}

Expr scale(Expr e, int64_t c) {
  SumBuilder sb;
  sb.add(e, c);
  return sb.build();
}

Expr make_symbol(const std::string& name, Range range, uint8_t flags, Expr extent) {
  IGNIS_CHECK_VALUE(!name.empty(), "sym: a symbol needs a name");
  IGNIS_CHECK_VALUE(range.lo <= range.hi, "sym: symbol ", name, " has an empty range [", range.lo,
                    ", ", range.hi, "]");
  Node n{Kind::Symbol};
  n.name = name;
  n.range = range;
  n.flags = flags;
  if (extent.defined()) n.args = {extent};
  return make(std::move(n));
}

// Splits d into its constant and the rest, with the rest's coefficients
// divided by their gcd g (> 0) and its first coefficient made positive
// (sign = -1 when that took a negation): d == sign * g * rest + constant.
struct Normalized {
  Expr rest;
  int64_t constant;
  int64_t g;
  int sign;
};

Normalized normalize(Expr d) {
  int64_t g = 0;
  int64_t first = 0;
  int64_t constant = for_each_term(d, [&](Expr, int64_t c) {
    if (first == 0) first = c;
    g = std::gcd(g, c);
  });
  int sign = first < 0 ? -1 : 1;
  SumBuilder sb;
  for_each_term(d, [&](Expr t, int64_t c) { sb.add_term(t, c / g * sign); });
  return {sb.build(), constant, g, sign};
}

// The canonical comparison of d = b - a against 0: Lt means d > 0, Le d >= 0,
// Eq d == 0, Ne d != 0 (see Note [Canonical form]).
Expr relation(Kind k, Expr d) {
  if (d.is_const()) {
    int64_t v = d.value();
    switch (k) {
      case Kind::Eq: return truth(v == 0);
      case Kind::Ne: return truth(v != 0);
      case Kind::Lt: return truth(v > 0);
      default: return truth(v >= 0);
    }
  }
  auto [t, c, g, sign] = normalize(d);  // d == sign*g*t + c
  if (k == Kind::Eq || k == Kind::Ne) {
    // sign*g*t + c == 0  <=>  t == -sign*c/g, which needs g | c.
    if (c % g != 0) return truth(k == Kind::Ne);
    return binary(k, t, -sign * (c / g));
  }
  // sign*g*t + c > 0 (Lt) or >= 0 (Le). With sign = +1: t > -c/g, i.e.
  // floor(-c/g) < t (Lt) or ceil(-c/g) <= t (Le). With sign = -1: t < c/g,
  // i.e. t < ceil(c/g) (Lt) or t <= floor(c/g) (Le).
  if (sign > 0) {
    int64_t m = k == Kind::Lt ? floordiv_int(-c, g) : -floordiv_int(c, g);
    return binary(k, m, t);
  }
  int64_t m = k == Kind::Lt ? -floordiv_int(-c, g) : floordiv_int(c, g);
  return binary(k, t, m);
}

// Compares names with a numeric suffix as numbers: s2 < s10, x < x0.
int compare_names(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    size_t i = s.size();
    while (i > 0 && std::isdigit(static_cast<unsigned char>(s[i - 1]))) --i;
    // Suffixes too long for int64 (and "x01" vs "x1") fall back to the full text below.
    int64_t num = (i == s.size() || s.size() - i > 18) ? -1 : std::stoll(s.substr(i));
    return std::pair<std::string, int64_t>(s.substr(0, i), num);
  };
  auto [pa, na] = split(a);
  auto [pb, nb] = split(b);
  if (pa != pb) return pa < pb ? -1 : 1;
  if (na != nb) return na < nb ? -1 : 1;
  return a == b ? 0 : (a < b ? -1 : 1);
}

template <typename T>
int cmp3(T a, T b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

int compare_atoms(Expr a, Expr b) {
  if (a == b) return 0;
  if (a.kind() != b.kind()) return cmp3(a.kind(), b.kind());
  const Node& x = *a.node();
  const Node& y = *b.node();
  if (a.kind() == Kind::Const) return cmp3(x.value, y.value);
  if (a.kind() == Kind::Symbol) {
    if (int c = compare_names(x.name, y.name)) return c;
    if (int c = cmp3(x.flags, y.flags)) return c;
    if (int c = cmp3(x.range.lo, y.range.lo)) return c;
    if (int c = cmp3(x.range.hi, y.range.hi)) return c;
    if (int c = cmp3(x.args.size(), y.args.size())) return c;
  }
  for (size_t i = 0; i < std::min(x.args.size(), y.args.size()); ++i) {
    if (int c = compare(x.args[i], y.args[i])) return c;
    if (a.kind() == Kind::Add) {
      if (int c = cmp3(x.coeffs[i], y.coeffs[i])) return c;
    }
  }
  if (int c = cmp3(x.args.size(), y.args.size())) return c;
  return cmp3(x.value, y.value);  // Adds differing only in their constant
}

}  // namespace

const char* kind_name(Kind k) {
  static const char* names[] = {"Const", "Symbol", "Add", "Mul", "FloorDiv", "Mod",
                                "Min",   "Max",    "Eq",  "Ne",  "Lt",       "Le"};
  return names[static_cast<int>(k)];
}

const Node* Expr::constant_node(int64_t v) {
  if (v >= kSmallLo && v <= kSmallHi) return small_constants()[v - kSmallLo];
  return intern_constant(v);
}

// ---- Symbols ----

Expr symbol(const std::string& name, Range range, uint8_t flags) {
  return make_symbol(name, range, flags, Expr());
}

Expr size_var(const std::string& name, Range range) { return symbol(name, range, kSizeFlag); }

Expr index_var(const std::string& name, Expr extent) {
  IGNIS_CHECK_VALUE(extent.defined(), "sym: index_var(", name, ") needs an extent");
  int64_t hi = extent.range().hi;
  // An empty loop's index never takes a value; [0, 0] keeps the range non-empty.
  hi = hi == kPosInf ? kPosInf : std::max<int64_t>(hi - 1, 0);
  return make_symbol(name, {0, hi}, kIndexFlag, extent);
}

Expr extent_of(Expr sym) {
  return sym.is_symbol() && !sym.args().empty() ? sym.arg(0) : Expr();
}

const std::string& symbol_name(Expr sym) {
  IGNIS_CHECK_VALUE(sym.is_symbol(), "sym: symbol_name of a ", kind_name(sym.kind()));
  return sym->name;
}

// ---- Sums ----

void SumBuilder::add(Expr e, int64_t scale) {
  if (scale == 0) return;
  int64_t c = for_each_term(e, [&](Expr t, int64_t k) { add_term(t, checked_mul(k, scale)); });
  add_const(checked_mul(c, scale));
}

void SumBuilder::add_term(Expr term, int64_t coeff) {
  IGNIS_INTERNAL_ASSERT(!term.is_const() && term.kind() != Kind::Add);
  if (coeff != 0) terms_.emplace_back(term, coeff);
}

void SumBuilder::add_const(int64_t c) { constant_ = checked_add(constant_, c); }

Expr SumBuilder::build() {
  std::sort(terms_.begin(), terms_.end(),
            [](const auto& a, const auto& b) { return compare(a.first, b.first) < 0; });
  Node n{Kind::Add};
  for (auto& [t, c] : terms_) {
    if (!n.args.empty() && n.args.back() == t) {
      n.coeffs.back() = checked_add(n.coeffs.back(), c);
      if (n.coeffs.back() == 0) {
        n.args.pop_back();
        n.coeffs.pop_back();
      }
    } else {
      n.args.push_back(t);
      n.coeffs.push_back(c);
    }
  }
  int64_t constant = constant_;
  terms_.clear();
  constant_ = 0;
  if (n.args.empty()) return constant;
  if (n.args.size() == 1 && n.coeffs[0] == 1 && constant == 0) return n.args[0];
  n.value = constant;
  n.range = Range::point(constant);
  for (size_t i = 0; i < n.args.size(); ++i)
    n.range = range_add(n.range, range_scale(n.args[i].range(), n.coeffs[i]));
  return make(std::move(n));
}

// ---- Arithmetic ----

Expr operator+(Expr a, Expr b) {
  if (a.is_const() && b.is_const()) return checked_add(a.value(), b.value());
  SumBuilder sb;
  sb.add(a);
  sb.add(b);
  return sb.build();
}

Expr operator-(Expr a, Expr b) {
  SumBuilder sb;
  sb.add(a);
  sb.add(b, -1);
  return sb.build();
}

Expr operator-(Expr a) { return scale(a, -1); }

Expr operator*(Expr a, Expr b) {
  if (a.is_const()) return scale(b, a.value());
  if (b.is_const()) return scale(a, b.value());
  // Expand: (sum_i ci*ti + ka) * (sum_j dj*uj + kb).
  std::vector<std::pair<Expr, int64_t>> ta, tb;
  int64_t ka = for_each_term(a, [&](Expr t, int64_t c) { ta.emplace_back(t, c); });
  int64_t kb = for_each_term(b, [&](Expr t, int64_t c) { tb.emplace_back(t, c); });
  SumBuilder sb;
  for (auto& [t, c] : ta)
    for (auto& [u, d] : tb) sb.add_term(multiply_terms(t, u), checked_mul(c, d));
  for (auto& [t, c] : ta) sb.add_term(t, checked_mul(c, kb));
  for (auto& [u, d] : tb) sb.add_term(u, checked_mul(d, ka));
  sb.add_const(checked_mul(ka, kb));
  return sb.build();
}

Expr operator%(Expr a, Expr b) { return mod(a, b); }

Expr floordiv(Expr a, Expr b) {
  IGNIS_CHECK_VALUE(!b.is_const(0), "sym: division by zero in floordiv");
  if (a.is_const() && b.is_const()) return floordiv_int(a.value(), b.value());
  if (b.is_const(1)) return a;
  if (b.is_const() && b.value() < 0) return floordiv(-a, -b);  // x // -c == (-x) // c
  if (a.is_const(0)) return 0;
  if (a == b) return 1;  // b != 0, or the division has no value
  return binary(Kind::FloorDiv, a, b);
}

Expr mod(Expr a, Expr b) {
  IGNIS_CHECK_VALUE(!b.is_const(0), "sym: modulo by zero");
  if (a.is_const() && b.is_const()) return mod_int(a.value(), b.value());
  if (b.is_const(1) || b.is_const(-1) || a.is_const(0) || a == b) return 0;
  if (b.is_const() && b.value() < 0) return -mod(-a, -b);  // x % -c == -((-x) % c)
  return binary(Kind::Mod, a, b);
}

Expr division_by_zero(Kind k, Expr a) {
  IGNIS_INTERNAL_ASSERT(k == Kind::FloorDiv || k == Kind::Mod);
  return binary(k, a, 0);
}

Expr min(Expr a, Expr b) {
  if (a.is_const() && b.is_const()) return std::min(a.value(), b.value());
  if (a == b) return a;
  return compare(a, b) < 0 ? binary(Kind::Min, a, b) : binary(Kind::Min, b, a);
}

Expr max(Expr a, Expr b) {
  if (a.is_const() && b.is_const()) return std::max(a.value(), b.value());
  if (a == b) return a;
  return compare(a, b) < 0 ? binary(Kind::Max, a, b) : binary(Kind::Max, b, a);
}

Expr eq(Expr a, Expr b) { return relation(Kind::Eq, b - a); }
Expr ne(Expr a, Expr b) { return relation(Kind::Ne, b - a); }
Expr lt(Expr a, Expr b) { return relation(Kind::Lt, b - a); }
Expr le(Expr a, Expr b) { return relation(Kind::Le, b - a); }

Expr logical_not(Expr cond) {
  switch (cond.kind()) {
    case Kind::Const: return truth(cond.value() == 0);
    case Kind::Eq: return ne(cond.arg(0), cond.arg(1));
    case Kind::Ne: return eq(cond.arg(0), cond.arg(1));
    case Kind::Lt: return le(cond.arg(1), cond.arg(0));
    case Kind::Le: return lt(cond.arg(1), cond.arg(0));
    default: return eq(cond, 0);
  }
}

// ---- Order ----

int compare(Expr a, Expr b) {
  if (a == b) return 0;
  if (a.kind() != Kind::Mul && b.kind() != Kind::Mul) return compare_atoms(a, b);
  // Products compare by their factor lists, an atom being a list of one, so
  // i0*s1 sorts next to i0 (and before i1): sums print outer index first.
  auto fa = factors_of(a), fb = factors_of(b);
  for (size_t i = 0; i < std::min(fa.size(), fb.size()); ++i)
    if (int c = compare_atoms(fa[i], fb[i])) return c;
  return cmp3(fa.size(), fb.size());
}

}  // namespace ignis::sym

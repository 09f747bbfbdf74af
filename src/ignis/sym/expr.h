// Symbolic integer expressions: the one representation of sizes, strides and
// index arithmetic in the compiler (and, later, of dynamic shapes).
//
// An Expr is a handle to an immutable node in a hash-consed DAG: building the
// same expression twice yields the same node, so `a == b` (pointer equality)
// is structural equality, and handles are one pointer, free to copy and hash.
// Nodes are interned for the life of the process, as LLVM uniques constants
// in its context: index expressions are small and few next to the kernels
// they describe, and immortal nodes keep the handle free of reference counts.
//
// The constructors below build *canonical forms* (Note [Canonical form]);
// rewrites that need reasoning (floor-div/mod of sums, min/max by ranges,
// deciding comparisons) are simplify.h's. Every node carries the Range its
// value lies in (interval arithmetic over its children), which the
// simplifier and the prover (prove.h) read.
//
// Semantics are Python's (and torch's): floordiv rounds toward -inf, and the
// remainder takes the divisor's sign, so `x % n` is in [0, n) for n > 0.
// There is deliberately no operator/ : C++'s `/` truncates, and an operator
// that looks like it but floors would be a trap.
//
// Note [Canonical form]
// - Constants fold: an operation on constants is the constant.
// - A sum is an Add node: terms with nonzero integer coefficients plus an
//   integer constant, terms sorted by compare() and each present once. A
//   constant times anything is a coefficient (2*x is Add{x: 2}), never a Mul.
// - Products expand over sums, so every polynomial has one spelling:
//   (a + b)*2 - b is 2*a + b, and (i0*s1 + i1)*s2 + i2 is i0*s1*s2 + i1*s2 + i2.
// - A Mul is a product of two or more atoms (symbols, floordiv, mod, min, max,
//   comparisons), sorted, a repeated atom standing for a power.
// - Divisors of floordiv and mod are made positive when constant
//   (x // -c is (-x) // c), and min/max order their operands.
// - Comparisons move everything to one side: a non-constant part whose first
//   term has a positive coefficient (divided by the coefficients' gcd) against
//   a constant, e.g. gt(s0, 8) is `8 < s0`, eq(2*x, 4) is Eq(x, 2).
// - Trivial identities that need no ranges: x // 1 = x, x % 1 = 0, x // x = 1,
//   x % x = 0, min(x, x) = x.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>  // std::hash
#include <span>
#include <string>
#include <vector>

#include "ignis/sym/range.h"

namespace ignis::sym {

enum class Kind : uint8_t { Const, Symbol, Add, Mul, FloorDiv, Mod, Min, Max, Eq, Ne, Lt, Le };

const char* kind_name(Kind k);
inline bool is_comparison(Kind k) { return k >= Kind::Eq; }

// Symbol flags: what a symbol stands for. Part of the symbol's identity.
enum SymbolFlag : uint8_t {
  kSizeFlag = 1 << 0,   // a tensor size (or a product of sizes)
  kIndexFlag = 1 << 1,  // a loop index: 0 <= i < extent
};

struct Node;

class Expr {
 public:
  Expr() = default;  // undefined: no node
  // Integers convert implicitly, so index code reads `i * 4 + 1`.
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Expr(T v) : n_(constant_node(static_cast<int64_t>(v))) {}  // NOLINT: implicit on purpose

  bool defined() const { return n_ != nullptr; }
  const Node* node() const { return n_; }
  const Node* operator->() const { return n_; }

  inline Kind kind() const;
  inline bool is_const() const;
  inline bool is_const(int64_t v) const;
  inline bool is_symbol() const;
  inline int64_t value() const;  // a Const's value
  inline Range range() const;    // where the value lies (interval arithmetic)
  inline const std::vector<Expr>& args() const;
  inline const Expr& arg(size_t i) const;
  // The stable structural hash: the same in every process and whatever the
  // order nodes were built in (for cache keys). Not an identity: compare Exprs.
  inline uint64_t stable_hash() const;

  friend bool operator==(Expr a, Expr b) { return a.n_ == b.n_; }

  // For this module's internals: wraps an interned node.
  static Expr from_node(const Node* n) {
    Expr e;
    e.n_ = n;
    return e;
  }

 private:
  static const Node* constant_node(int64_t v);
  const Node* n_ = nullptr;
};

struct Node {
  Kind kind;
  uint8_t flags = 0;            // Symbol: SymbolFlag bits
  int64_t value = 0;            // Const: the value; Add: the constant term
  uint64_t hash = 0;            // stable structural hash
  Range range;                  // Symbol: declared; others: from the children
  std::vector<Expr> args;       // Add: terms; Mul: factors; binary ops: {lhs, rhs};
                                // Symbol: {extent} for an index, else {}
  std::vector<int64_t> coeffs;  // Add: one coefficient per term
  std::string name;             // Symbol
};

inline Kind Expr::kind() const { return n_->kind; }
inline bool Expr::is_const() const { return n_->kind == Kind::Const; }
inline bool Expr::is_const(int64_t v) const { return is_const() && n_->value == v; }
inline bool Expr::is_symbol() const { return n_->kind == Kind::Symbol; }
inline int64_t Expr::value() const { return n_->value; }
inline Range Expr::range() const { return n_->range; }
inline const std::vector<Expr>& Expr::args() const { return n_->args; }
inline const Expr& Expr::arg(size_t i) const { return n_->args[i]; }
inline uint64_t Expr::stable_hash() const { return n_->hash; }

// ---- Symbols ----

// A symbol standing for any integer in `range`. Name, range and flags are its
// identity (as sympy's assumptions are): two symbols differing in any are
// different symbols.
Expr symbol(const std::string& name, Range range = Range::all(), uint8_t flags = 0);
// A tensor size. By default >= 1: an empty dimension is specialised on (as
// torch specialises sizes 0 and 1); pass {0, kPosInf} to allow it.
Expr size_var(const std::string& name, Range range = {1, kPosInf});
// A loop index: 0 <= i < extent, with `extent` possibly symbolic (a size or a
// product of sizes). The prover uses the symbolic bound: i < s1 is known even
// though s1 has no finite upper end.
Expr index_var(const std::string& name, Expr extent);
// The exclusive symbolic upper bound of an index symbol, else undefined.
Expr extent_of(Expr sym);
const std::string& symbol_name(Expr sym);

// ---- Arithmetic (canonicalising constructors) ----

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator*(Expr a, Expr b);
Expr operator%(Expr a, Expr b);  // mod(a, b): Python's remainder
inline Expr& operator+=(Expr& a, Expr b) { return a = a + b; }
inline Expr& operator-=(Expr& a, Expr b) { return a = a - b; }
inline Expr& operator*=(Expr& a, Expr b) { return a = a * b; }

Expr floordiv(Expr a, Expr b);  // Python's a // b; b == 0 throws ValueError
Expr mod(Expr a, Expr b);       // Python's a % b; b == 0 throws ValueError
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
// a // 0 or a % 0 (k is FloorDiv or Mod) as a node, which the constructors
// above refuse: for the simplifier, when a divisor simplifies to 0 and the
// expression, which never has a value, is kept as written. eval() throws.
Expr division_by_zero(Kind k, Expr a);

// Comparisons: boolean expressions, valued 1 or 0 (for guards and masks).
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr lt(Expr a, Expr b);
Expr le(Expr a, Expr b);
inline Expr gt(Expr a, Expr b) { return lt(b, a); }
inline Expr ge(Expr a, Expr b) { return le(b, a); }
// The negation of a comparison (Eq <-> Ne, a < b <-> b <= a); for any other
// expression, eq(e, 0).
Expr logical_not(Expr cond);

// ---- Order and sums ----

// A total, deterministic order (independent of interning order): symbols by
// name with numeric suffixes compared as numbers (s2 < s10), products
// lexicographically by their factors, then by kind and operands. 0 iff a == b.
int compare(Expr a, Expr b);
struct ExprLess {
  bool operator()(Expr a, Expr b) const { return compare(a, b) < 0; }
};

// The factors of a term: a Mul's atoms, or the term itself.
inline std::span<const Expr> factors_of(const Expr& term) {
  return term.kind() == Kind::Mul ? std::span<const Expr>(term.args())
                                  : std::span<const Expr>(&term, 1);
}

// Builds a canonical sum term by term; the rewrite rules and the index
// helpers split and rebuild sums with it. Overflowing int64 throws ValueError.
class SumBuilder {
 public:
  void add(Expr e, int64_t scale = 1);  // adds scale*e, flattening a sum
  void add_term(Expr term, int64_t coeff);
  void add_const(int64_t c);
  Expr build();

 private:
  std::vector<std::pair<Expr, int64_t>> terms_;
  int64_t constant_ = 0;
};

// Visits e as sum(coeff * term) + constant: an Add's terms, nothing for a
// constant, else e itself with coefficient 1. Returns the constant.
template <typename F>
int64_t for_each_term(Expr e, F&& fn) {
  if (e.is_const()) return e.value();
  if (e.kind() != Kind::Add) {
    fn(e, int64_t{1});
    return 0;
  }
  for (size_t i = 0; i < e.args().size(); ++i) fn(e.args()[i], e->coeffs[i]);
  return e->value;
}

}  // namespace ignis::sym

template <>
struct std::hash<ignis::sym::Expr> {
  size_t operator()(ignis::sym::Expr e) const noexcept {
    return std::hash<const void*>()(e.node());
  }
};

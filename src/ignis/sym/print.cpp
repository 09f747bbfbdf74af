#include "ignis/sym/print.h"

#include <ostream>

#include "ignis/sym/prove.h"

namespace ignis::sym {

namespace {

// "(" + s + ")", spelt so that GCC 12's -Wrestrict false positive on
// `"(" + std::string` stays quiet.
std::string paren(std::string s) {
  s.insert(s.begin(), '(');
  s.push_back(')');
  return s;
}

// One printer for both spellings: they differ in the atoms (how a division,
// a remainder, a power and a comparison are written) and agree on sums and
// products.
class Printer {
 public:
  Printer(bool cpp, const SymbolNamer& name_of, const ConstantSpeller& spell_constant = {})
      : cpp_(cpp), name_of_(name_of), spell_constant_(spell_constant) {}

  std::string print(Expr e) {
    switch (e.kind()) {
      case Kind::Const: return constant(e.value());
      case Kind::Symbol: return name_of_ ? name_of_(e) : e->name;
      case Kind::Add: return sum(e);
      case Kind::Mul: return product(e);
      case Kind::FloorDiv: return division(e, "//", " / ", "ignis_floordiv");
      case Kind::Mod: return cpp_ ? division(e, "", " % ", "ignis_mod") : call("Mod", e);
      case Kind::Min: return call(cpp_ ? "ignis_min" : "Min", e);
      case Kind::Max: return call(cpp_ ? "ignis_max" : "Max", e);
      case Kind::Eq: return cpp_ ? infix(e, " == ") : call("Eq", e);
      case Kind::Ne: return cpp_ ? infix(e, " != ") : call("Ne", e);
      case Kind::Lt: return infix(e, " < ");
      case Kind::Le: return infix(e, " <= ");
    }
    return "?";
  }

 private:
  std::string constant(int64_t v) {
    if (!cpp_) return std::to_string(v);
    if (spell_constant_) {
      std::string s = spell_constant_(v);
      if (!s.empty()) return s;
    }
    // Beyond int's range a literal needs its suffix to stay 64-bit in every
    // context; INT64_MIN has no literal at all.
    if (v == kNegInf) return "(-9223372036854775807LL - 1)";
    bool wide = v > INT32_MAX || v < INT32_MIN;
    return std::to_string(v) + (wide ? "LL" : "");
  }

  // An operand of `/`, `%`, `//` or a factor: bare when it is a name, a
  // non-negative constant or already delimited (a call or a parenthesised
  // division); else parenthesised.
  std::string operand(Expr e) {
    Kind k = e.kind();
    bool bare = e.is_symbol() || (e.is_const() && e.value() >= 0) ||
                (k >= Kind::FloorDiv && k <= Kind::Ne) || (cpp_ && is_comparison(k));
    return bare ? print(e) : paren(print(e));
  }

  std::string call(const char* fn, Expr e) {
    return fn + paren(print(e.arg(0)) + ", " + print(e.arg(1)));
  }

  std::string infix(Expr e, const char* op) {
    std::string s = print(e.arg(0)) + op + print(e.arg(1));
    return cpp_ ? paren(s) : s;
  }

  // torch spells floor division `(a//b)`. In C++ the plain operator is exact
  // only for a >= 0 and b > 0 (truncation equals floor there); otherwise the
  // prelude's helper.
  std::string division(Expr e, const char* py_op, const char* cpp_op, const char* helper) {
    const Expr& a = e.arg(0);
    const Expr& b = e.arg(1);
    if (!cpp_) return paren(operand(a) + py_op + operand(b));
    if (known_nonneg(a) && known_pos(b)) return paren(operand(a) + cpp_op + operand(b));
    return helper + paren(print(a) + ", " + print(b));
  }

  // Factors joined by `*`; a repeated factor is `x**n` in torch's spelling
  // and `x*x` in C++.
  std::string product(Expr e) {
    std::string s;
    const auto& fs = e.args();
    for (size_t i = 0; i < fs.size();) {
      size_t j = i;
      while (j < fs.size() && fs[j] == fs[i]) ++j;
      std::string f = operand(fs[i]);
      for (size_t k = i; k < j; ++k) {
        if (cpp_ || k == i) s += (s.empty() ? "" : "*") + f;
      }
      if (!cpp_ && j - i > 1) s += "**" + std::to_string(j - i);
      i = j;
    }
    return s;
  }

  std::string sum(Expr e) {
    std::string s;
    // Appends c*body (the constant when body is empty), its sign written as
    // ` + ` / ` - ` between terms. INT64_MIN has no positive magnitude and is
    // printed signed.
    auto append = [&](int64_t c, const std::string& body) {
      bool neg = c < 0 && c != kNegInf;
      int64_t mag = neg ? -c : c;
      std::string t = body.empty() ? constant(mag)
                                   : (mag == 1 ? body : constant(mag) + "*" + body);
      if (s.empty()) s = (neg ? "-" : "") + t;
      else s += (neg ? " - " : " + ") + t;
    };
    for (size_t i = 0; i < e.args().size(); ++i) {
      const Expr& t = e.arg(i);
      append(e->coeffs[i], t.kind() == Kind::Mul ? product(t) : operand(t));
    }
    if (e->value != 0) append(e->value, "");
    return s;
  }

  bool cpp_;
  const SymbolNamer& name_of_;
  const ConstantSpeller& spell_constant_;
};

}  // namespace

std::string str(Expr e) {
  if (!e.defined()) return "<undefined>";
  return Printer(false, {}).print(e);
}

std::ostream& operator<<(std::ostream& os, Expr e) { return os << str(e); }

std::string to_cpp(Expr e, const SymbolNamer& name_of, const ConstantSpeller& spell_constant) {
  return Printer(true, name_of, spell_constant).print(e);
}

const char* cpp_prelude() {
  return R"(#include <cstdint>
// Python's floor division and remainder (the remainder takes b's sign).
static inline int64_t ignis_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return q - ((a % b != 0) && ((a < 0) != (b < 0)));
}
static inline int64_t ignis_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r + ((r != 0) && ((r < 0) != (b < 0))) * b;
}
static inline int64_t ignis_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t ignis_max(int64_t a, int64_t b) { return a < b ? b : a; }
)";
}

}  // namespace ignis::sym

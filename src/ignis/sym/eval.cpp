#include "ignis/sym/eval.h"

#include <algorithm>

#include "ignis/core/error.h"

namespace ignis::sym {

namespace {

int64_t add(int64_t a, int64_t b) {
  int64_t r;
  IGNIS_CHECK_VALUE(!__builtin_add_overflow(a, b, &r), "sym: integer overflow evaluating a sum");
  return r;
}

int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  IGNIS_CHECK_VALUE(!__builtin_mul_overflow(a, b, &r),
                    "sym: integer overflow evaluating a product");
  return r;
}

Expr rebuild(Expr e, const std::vector<Expr>& args) {
  switch (e.kind()) {
    case Kind::Add: {
      SumBuilder sb;
      sb.add_const(e->value);
      for (size_t i = 0; i < args.size(); ++i) sb.add(args[i], e->coeffs[i]);
      return sb.build();
    }
    case Kind::Mul: {
      Expr p = 1;
      for (const Expr& a : args) p = p * a;
      return p;
    }
    case Kind::FloorDiv: return floordiv(args[0], args[1]);
    case Kind::Mod: return mod(args[0], args[1]);
    case Kind::Min: return min(args[0], args[1]);
    case Kind::Max: return max(args[0], args[1]);
    case Kind::Eq: return eq(args[0], args[1]);
    case Kind::Ne: return ne(args[0], args[1]);
    case Kind::Lt: return lt(args[0], args[1]);
    default: return le(args[0], args[1]);
  }
}

class Substituter {
 public:
  explicit Substituter(const std::unordered_map<Expr, Expr>& m) : map_(m) {}
  Expr visit(Expr e) {
    if (auto it = map_.find(e); it != map_.end()) return it->second;
    if (e.is_const() || e.is_symbol()) return e;
    if (auto it = memo_.find(e); it != memo_.end()) return it->second;
    std::vector<Expr> args;
    bool changed = false;
    for (const Expr& a : e.args()) {
      args.push_back(visit(a));
      changed = changed || args.back() != a;
    }
    Expr r = changed ? rebuild(e, args) : e;
    memo_.emplace(e, r);
    return r;
  }

 private:
  const std::unordered_map<Expr, Expr>& map_;
  std::unordered_map<Expr, Expr> memo_;
};

void collect(Expr e, std::vector<Expr>& out) {
  if (e.is_symbol()) {
    if (std::find(out.begin(), out.end(), e) != out.end()) return;
    out.push_back(e);
  }
  for (const Expr& a : e.args()) collect(a, out);
}

}  // namespace

int64_t eval(Expr e, const Bindings& values) {
  switch (e.kind()) {
    case Kind::Const: return e.value();
    case Kind::Symbol: {
      auto it = values.find(e);
      IGNIS_CHECK_VALUE(it != values.end(), "sym: eval: no value for symbol ", e->name);
      return it->second;
    }
    case Kind::Add: {
      int64_t r = e->value;
      for (size_t i = 0; i < e.args().size(); ++i)
        r = add(r, mul(e->coeffs[i], eval(e.arg(i), values)));
      return r;
    }
    case Kind::Mul: {
      int64_t r = 1;
      for (const Expr& f : e.args()) r = mul(r, eval(f, values));
      return r;
    }
    default: break;
  }
  int64_t a = eval(e.arg(0), values), b = eval(e.arg(1), values);
  switch (e.kind()) {
    case Kind::FloorDiv: return floordiv_int(a, b);
    case Kind::Mod: return mod_int(a, b);
    case Kind::Min: return std::min(a, b);
    case Kind::Max: return std::max(a, b);
    case Kind::Eq: return a == b;
    case Kind::Ne: return a != b;
    case Kind::Lt: return a < b;
    default: return a <= b;
  }
}

Expr subs(Expr e, const std::unordered_map<Expr, Expr>& replacements) {
  return Substituter(replacements).visit(e);
}

std::vector<Expr> free_symbols(Expr e) {
  std::vector<Expr> out;
  collect(e, out);
  std::sort(out.begin(), out.end(), ExprLess());
  return out;
}

}  // namespace ignis::sym

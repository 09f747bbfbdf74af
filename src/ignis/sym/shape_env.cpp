#include "ignis/sym/shape_env.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "ignis/core/error.h"
#include "ignis/core/str.h"
#include "ignis/sym/print.h"
#include "ignis/sym/simplify.h"

namespace ignis::sym {

namespace {

// e == a*sym + b with one symbol: sets a, b and sym.
bool linear_in_one(Expr e, Expr* sym, int64_t* a, int64_t* b) {
  int terms = 0;
  int64_t c = for_each_term(e, [&](Expr t, int64_t k) {
    ++terms;
    *sym = t;
    *a = k;
  });
  if (terms != 1 || !sym->is_symbol()) return false;
  *b = c;
  return true;
}

// Floor and ceiling of p / q for q > 0.
int64_t floor_div(int64_t p, int64_t q) { return p / q - ((p % q != 0) && ((p < 0) != (q < 0))); }
int64_t ceil_div(int64_t p, int64_t q) { return -floor_div(-p, q); }

// Replaces each symbol name in `text` (a word s<digits>) by its source.
std::string spell_sources(const std::string& text,
                          const std::unordered_map<std::string, std::string>& source_of) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    bool word_start = i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_');
    if (word_start && std::isalpha(static_cast<unsigned char>(text[i]))) {
      size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      std::string word = text.substr(i, j - i);
      auto it = source_of.find(word);
      out += it == source_of.end() ? word : it->second;
      i = j;
      continue;
    }
    out += text[i++];
  }
  return out;
}

}  // namespace

// torch's spelling of a guard in the dynamic log: `s77 > 8` for 8 < s77.
std::string ShapeEnv::log_str(Expr g) {
  if ((g.kind() == Kind::Lt || g.kind() == Kind::Le) && g.arg(0).is_const() && !g.arg(1).is_const())
    return sym::str(g.arg(1)) + (g.kind() == Kind::Lt ? " > " : " >= ") + sym::str(g.arg(0));
  return sym::str(g);
}

void ShapeEnv::log(const std::string& msg) const {
  if (log_) log_(where_.empty() ? msg : msg + " " + where_);
}

Expr ShapeEnv::create_symbol(int64_t hint, const std::string& source, int preferred_id, bool duck) {
  IGNIS_CHECK_VALUE(hint >= 2, "ShapeEnv: a size symbol needs a value >= 2 (0 and 1 are "
                    "specialized), got ", hint, " for ", source);
  if (duck) {
    for (const Symbol& s : symbols_) {
      if (s.unbacked || s.hint != hint || replacements_.count(s.sym)) continue;
      equalities_.push_back({source, s.sym});
      log(ignis::str("duck sizing: ", source, " == ", s.source, " (both ", hint, ")"));
      return s.sym;
    }
  }
  int id = preferred_id;
  while (ids_.count(id)) ++id;
  ids_.insert(id);
  Expr sym = size_var(ignis::str("s", id), {2, kPosInf});
  index_of_[sym] = symbols_.size();
  symbols_.push_back(Symbol{sym, source, hint});
  hints_[sym] = hint;
  log(ignis::str("create_symbol ", symbol_name(sym), " = ", hint, " for ", source, " [2, int_oo]"));
  return sym;
}

bool ShapeEnv::constrain_range(Expr sym, int64_t lo, int64_t hi) {
  auto it = index_of_.find(sym);
  IGNIS_CHECK_VALUE(it != index_of_.end(), "ShapeEnv: constrain_range of ", sym::str(sym),
                    ", which is not a size symbol");
  Symbol& s = symbols_[it->second];
  const int64_t new_lo = std::max(s.lo, lo), new_hi = std::min(s.hi, hi);
  if (s.hint < new_lo || s.hint > new_hi) return false;
  if (new_lo == s.lo && new_hi == s.hi) return true;
  s.lo = new_lo;
  s.hi = new_hi;
  log(ignis::str("constrain_range ", symbol_name(sym), " to [", s.lo, ", ",
                 s.hi == kNoUpper ? std::string("int_oo") : std::to_string(s.hi), "]"));
  if (s.lo == s.hi) add_replacement(sym, Expr(s.lo));
  return true;
}

Expr ShapeEnv::create_unbacked(const std::string& origin, int64_t upper, int64_t lower) {
  const std::string name = ignis::str("u", unbacked_count_++);
  const Range range{lower == kNoLower ? kNegInf : lower, upper == kNoUpper ? kPosInf : upper};
  Expr sym = lower >= 0 ? size_var(name, range) : symbol(name, range);
  index_of_[sym] = symbols_.size();
  // The hint is the fakes' size (a count's fake has kUnbackedHint rows even
  // where its range ends below), never the basis of a decision.
  Symbol s{sym, origin, kUnbackedHint, lower, upper};
  s.unbacked = true;
  symbols_.push_back(s);
  hints_[sym] = kUnbackedHint;
  log(ignis::str("create_unbacked_symbol ", symbol_name(sym), " [",
                 lower == kNoLower ? std::string("-int_oo") : std::to_string(lower), ", ",
                 upper == kNoUpper ? std::string("int_oo") : std::to_string(upper), "] for ", origin));
  return sym;
}

bool ShapeEnv::has_unbacked(Expr e) const {
  for (const Expr& s : free_symbols(replace(e))) {
    const Symbol* info = symbol_info(s);
    if (info && info->unbacked) return true;
  }
  return false;
}

void ShapeEnv::data_dependent(Expr cond, const std::string& why) const {
  std::string origins;
  for (const Expr& s : free_symbols(cond)) {
    const Symbol* info = symbol_info(s);
    if (info && info->unbacked)
      origins += ignis::str(origins.empty() ? "" : "; ", symbol_name(s), " is ", info->source);
  }
  throw DataDependentError(ignis::str("Could not ", why, " data-dependent expression ",
                                      log_str(cond), " (", origins, ")"));
}

const ShapeEnv::Symbol* ShapeEnv::symbol_info(Expr sym) const {
  auto it = index_of_.find(sym);
  return it == index_of_.end() ? nullptr : &symbols_[it->second];
}

Expr ShapeEnv::replace(Expr e) const {
  if (!replacements_.empty()) {
    for (int i = 0; i < 8; ++i) {  // a replacement's value may itself be replaced later
      Expr next = subs(e, replacements_);
      if (next == e) break;
      e = next;
    }
  }
  return simplify(e);
}

bool ShapeEnv::is_symbolic(Expr e) const { return !replace(e).is_const(); }

int64_t ShapeEnv::hint_of(Expr e) const { return eval(e, hints_); }

int ShapeEnv::known(Expr cond) const {
  if (cond.is_const()) return cond.value() != 0;
  if (!is_comparison(cond.kind())) return -1;
  Expr diff = simplify(cond.arg(1) - cond.arg(0));  // the relation is `diff <op> 0` flipped: lhs op rhs
  Expr sym;
  int64_t a = 0, b = 0;
  if (linear_in_one(diff, &sym, &a, &b)) {
    const Symbol* s = symbol_info(sym);
    if (s) {
      // diff = rhs - lhs over [lo, hi]: its least and greatest values.
      auto at = [&](int64_t v) -> __int128 { return static_cast<__int128>(a) * v + b; };
      bool hi_inf = s->hi == kNoUpper;
      __int128 lo_v = a > 0 ? at(s->lo) : (hi_inf ? -(__int128(1) << 100) : at(s->hi));
      __int128 hi_v = a > 0 ? (hi_inf ? (__int128(1) << 100) : at(s->hi)) : at(s->lo);
      switch (cond.kind()) {
        case Kind::Lt:  // lhs < rhs: diff > 0
          if (lo_v > 0) return 1;
          if (hi_v <= 0) return 0;
          return -1;
        case Kind::Le:
          if (lo_v >= 0) return 1;
          if (hi_v < 0) return 0;
          return -1;
        case Kind::Eq:
          if (lo_v > 0 || hi_v < 0) return 0;
          if (lo_v == 0 && hi_v == 0) return 1;
          return -1;
        case Kind::Ne:
          if (lo_v > 0 || hi_v < 0) return 1;
          if (lo_v == 0 && hi_v == 0) return 0;
          return -1;
        default: return -1;
      }
    }
  }
  if (statically_known_true(cond)) return 1;
  if (statically_known_false(cond)) return 0;
  return -1;
}

void ShapeEnv::add_replacement(Expr sym, Expr value) {
  replacements_[sym] = value;
  log(ignis::str("set_replacement ", symbol_name(sym), " = ", sym::str(value)));
}

bool ShapeEnv::narrow(Expr cond) {
  Expr diff = simplify(cond.arg(1) - cond.arg(0));
  Expr sym;
  int64_t a = 0, b = 0;
  if (!linear_in_one(diff, &sym, &a, &b)) return false;
  auto it = index_of_.find(sym);
  if (it == index_of_.end()) return false;
  Symbol& s = symbols_[it->second];
  // a*s + b <op> 0 (Lt: > 0, Le: >= 0, Eq: == 0).
  switch (cond.kind()) {
    case Kind::Lt:
    case Kind::Le: {
      int64_t bound_num = -b;  // a*s >= -b (+1 for Lt)
      if (cond.kind() == Kind::Lt) bound_num += 1;
      if (a > 0) s.lo = std::max(s.lo, ceil_div(bound_num, a));
      else s.hi = std::min(s.hi, floor_div(-bound_num, -a));
      return true;
    }
    case Kind::Eq: {
      if ((-b) % a != 0) return false;
      int64_t v = -b / a;
      s.lo = s.hi = v;
      add_replacement(sym, Expr(v));
      return true;
    }
    default: return false;
  }
}

bool ShapeEnv::assume(Expr cond, Expr* sym, int64_t* lo, int64_t* hi) {
  Expr c = replace(cond);
  if (c.kind() != Kind::Lt && c.kind() != Kind::Le) return false;
  Expr diff = simplify(c.arg(1) - c.arg(0));
  Expr s;
  int64_t a = 0, b = 0;
  if (!linear_in_one(diff, &s, &a, &b)) return false;
  const Symbol* info = symbol_info(s);
  if (!info || !info->unbacked || !narrow(c)) return false;
  log(ignis::str("runtime assert ", log_str(c), ": ", log_str(s), " in [", info->lo, ", ",
                 info->hi, "]"));
  *sym = s;
  *lo = info->lo;
  *hi = info->hi;
  return true;
}

bool ShapeEnv::evaluate(Expr cond) {
  Expr c = replace(cond);
  int k = known(c);
  if (k >= 0) return k == 1;
  if (has_unbacked(c)) data_dependent(c, "guard on");
  bool value = eval(c, hints_) != 0;
  Expr g = value ? c : logical_not(c);
  log(ignis::str("eval ", log_str(g), " [guard added]"));
  if (!narrow(g)) {
    relations_.push_back(g);
    if (g.kind() == Kind::Eq) {
      // Eq(s1 - s0, 0): s1 is s0 from now on (the later symbol goes).
      Expr diff = simplify(g.arg(0) - g.arg(1));
      std::vector<std::pair<Expr, int64_t>> terms;
      int64_t c0 = for_each_term(diff, [&](Expr t, int64_t coef) { terms.emplace_back(t, coef); });
      if (c0 == 0 && terms.size() == 2 && terms[0].first.is_symbol() && terms[1].first.is_symbol() &&
          terms[0].second == -terms[1].second && (terms[0].second == 1 || terms[0].second == -1)) {
        Expr x = terms[0].first, y = terms[1].first;
        const Symbol* sx = symbol_info(x);
        const Symbol* sy = symbol_info(y);
        if (sx && sy) {
          if (index_of_[x] > index_of_[y]) std::swap(x, y);
          add_replacement(y, x);
        }
      }
    }
  }
  return value;
}

int64_t ShapeEnv::specialize(Expr e, const std::string& why) {
  Expr r = replace(e);
  int64_t v = hint_of(r);
  if (r.is_const()) return v;
  if (has_unbacked(r)) data_dependent(r, ignis::str("specialize (", why, ")"));
  log(ignis::str("specialize ", sym::str(r), " = ", v, " (", why, ")"));
  Expr cond = eq(r, Expr(v));
  if (!narrow(cond)) relations_.push_back(cond);
  return v;
}

bool ShapeEnv::expect_equal(Expr a, Expr b) {
  // An unbacked size's hint says nothing: the relation itself is asked.
  if (has_unbacked(a) || has_unbacked(b)) return evaluate(eq(a, b));
  if (hint_of(a) != hint_of(b)) return false;
  return evaluate(eq(a, b));
}

std::string ShapeEnv::range_str(const Symbol& s, const std::string& src) {
  if (s.lo == s.hi) return ignis::str(src, " == ", s.lo);
  if (s.hi == kNoUpper) return ignis::str(s.lo, " <= ", src);
  return ignis::str(s.lo, " <= ", src, " <= ", s.hi);
}

std::string ShapeEnv::source_str(Expr e) const {
  std::unordered_map<std::string, std::string> source_of;
  for (const Symbol& s : symbols_)
    if (!s.unbacked) source_of[symbol_name(s.sym)] = s.source;
  if (!is_comparison(e.kind())) return spell_sources(sym::str(e), source_of);
  // lhs <op> rhs with each side's terms kept positive: "L['y'].size()[0] == L['x'].size()[0]".
  Expr diff = e.arg(0) - e.arg(1);
  SumBuilder lhs, rhs;
  int64_t c = for_each_term(diff, [&](Expr t, int64_t k) {
    if (k > 0) lhs.add_term(t, k);
    else rhs.add_term(t, -k);
  });
  if (c > 0) lhs.add_const(c);
  else rhs.add_const(-c);
  const char* op = e.kind() == Kind::Eq ? " == " : e.kind() == Kind::Ne ? " != "
                   : e.kind() == Kind::Lt ? " < " : " <= ";
  return spell_sources(sym::str(lhs.build()) + op + sym::str(rhs.build()), source_of);
}

std::vector<std::string> ShapeEnv::guard_strs() const {
  std::vector<std::string> out;
  for (const SourceEquality& q : equalities_) out.push_back(q.source + " == " + source_str(q.expr));
  for (Expr r : relations_) out.push_back(source_str(r));
  for (const Symbol& s : symbols_)
    if (!s.unbacked) out.push_back(range_str(s, s.source));
  return out;
}

}  // namespace ignis::sym

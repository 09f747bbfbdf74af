#include "ignis/compiler/size_params.h"

#include "ignis/sym/print.h"

namespace ignis::compiler {

std::string SizeParams::lifted(int64_t v, bool any_value) {
  if (!generic_ || (!any_value && (v == 0 || v == 1 || v == -1))) return "";
  // A parameter per occurrence, never one per distinct value: sharing one
  // would make the text depend on which sizes happen to be equal (Note
  // [Size-generic code]).
  values_.push_back(v);
  return lift_ ? "P[" + std::to_string(values_.size() - 1) + "]" : "";
}

std::string SizeParams::integer(int64_t v) {
  std::string s = lifted(v);
  return s.empty() ? std::to_string(v) : s;
}

std::string SizeParams::count(int64_t v) {
  std::string s = lifted(v, /*any_value=*/true);
  return s.empty() ? std::to_string(v) : s;
}

std::string SizeParams::expr(sym::Expr e) {
  return sym::to_cpp(e, {}, [this](int64_t v) { return lifted(v); });
}

std::string SizeParams::product(const std::vector<sym::Expr>& sizes) {
  std::string s;
  int factors = 0;
  for (const sym::Expr& e : sizes) {
    if (e.is_const() && e.value() == 1) continue;
    s += (s.empty() ? "" : "*") + operand(e);
    ++factors;
  }
  // Parenthesised as a whole too: `i / P[1]*P[2]` divides by P[1] only.
  return factors == 0 ? "1" : factors == 1 ? s : "(" + s + ")";
}

std::string SizeParams::operand(sym::Expr e) {
  std::string s = expr(e);
  return e.is_const() || e.is_symbol() ? s : "(" + s + ")";
}

}  // namespace ignis::compiler

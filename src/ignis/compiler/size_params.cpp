#include "ignis/compiler/size_params.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "ignis/compiler/loop_ir.h"
#include "ignis/sym/print.h"

namespace ignis::compiler {

namespace {

struct Seen {
  std::vector<int64_t> first;
  std::vector<uint8_t> varying;
  int sizes = 0;
};

// By the text's hash: two texts of one hash share an entry only when their
// parameter counts agree, and a wrong mask changes which sizes share a
// text, never a result (Note [Parameters that vary with the sizes]).
struct SeenTable {
  static constexpr size_t kMaxEntries = 1 << 14;
  std::mutex mu;
  std::unordered_map<size_t, Seen> entries;
};

SeenTable& seen_table() {
  static SeenTable* table = new SeenTable();  // never destroyed: compiles may run at exit
  return *table;
}

}  // namespace

std::vector<uint8_t> ParamRecorder::literals(const std::string& all_lifted_text, const Kernel& k,
                                             const std::vector<int64_t>& values) {
  std::string key = all_lifted_text;
  for (const std::string& o : k.origins) key += "|" + o;
  const size_t hash = std::hash<std::string>()(key);
  SeenTable& t = seen_table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.entries.find(hash);
  if (how_ != Observe::Off && !values.empty()) {
    if (it == t.entries.end() && how_ == Observe::Probe &&
        t.entries.size() < SeenTable::kMaxEntries)
      it = t.entries.emplace(hash, Seen{values, std::vector<uint8_t>(values.size(), 0), 0}).first;
    if (it != t.entries.end() && it->second.first.size() == values.size()) {
      Seen& e = it->second;
      for (size_t i = 0; i < values.size(); ++i) e.varying[i] |= uint8_t(values[i] != e.first[i]);
      // (once a program: the sizes counted)
      if (std::find(seen_.begin(), seen_.end(), hash) == seen_.end()) {
        seen_.push_back(hash);
        ++e.sizes;
      }
    }
  }
  if (it == t.entries.end() || it->second.sizes < 2) return {};
  return it->second.varying;
}

void clear_varying_params() {
  SeenTable& t = seen_table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.entries.clear();
}

std::string SizeParams::lifted(int64_t v, bool any_value, bool maskable) {
  if (!generic_ || (!any_value && (v == 0 || v == 1 || v == -1))) return "";
  const int64_t at = occurrences_++;
  if (maskable && !any_value && size_t(at) < varying_.size() && !varying_[size_t(at)]) return "";
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

std::string SizeParams::split_value(int64_t v) {
  std::string s = lifted(v, /*any_value=*/false, /*maskable=*/false);
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

// ShapeEnv: the symbolic sizes of one trace and the facts the trace relied on.
//
// Dynamic shapes (docs/dynamic_shapes.md) trace a frame once for many sizes:
// a tensor size that varies becomes a symbol (s77 for L['x'].size()[0]) whose
// value at trace time, its *hint*, decides every question the trace asks
// about it. Each decision that the symbols' ranges do not prove is recorded
// as a guard, so the captured graph is reused only for sizes that would have
// traced the same way (torch's ShapeEnv, without sympy):
//
//   - evaluate(cond) decides a relation with the hints and records it;
//     a relation on one symbol (s0 <= 8, 8 < s0) narrows that symbol's range
//     instead, as torch's value ranges do, and prints as "2 <= src <= 8";
//   - Eq(s1, s0) replaces s1 by s0 from then on; Eq(s0, 5) specialises s0
//     (replaced by 5, guarded src == 5);
//   - sizes 0 and 1 never get symbols (the caller keeps them static), so a
//     symbol's range starts at [2, inf), and "2 <= src" is always guarded.
//
// Symbol names follow torch 2.13: s<id> where id is sha256(source) % 100,
// probing upwards when taken; the caller computes the preferred id (this
// module is Python-free and has no sha256). Duck sizing, torch's default: a
// new size whose value equals an existing symbol's hint reuses that symbol
// and guards the two sources equal.
//
// Note [Unbacked symbols]
// A size that only the data decide (nonzero()'s count, a boolean mask's
// selection) is an *unbacked* symbol u0, u1, ... (torch's name): its range is
// [0, the input's element count], it has no source and no guard, and no call
// can check it before the graph runs. Its hint is a placeholder
// (kUnbackedHint, the size of the fakes standing for such tensors) that no
// decision may use: a relation the ranges do not settle, a specialization or
// an equality with another size throws DataDependentError, which the tracer
// turns into a graph break at that line ("Could not guard on data-dependent
// expression u0 > 8", as torch says). Broadcasting treats such a size as not
// 1, as torch's size-oblivious rule does for size-like symbols.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ignis/sym/eval.h"
#include "ignis/sym/expr.h"

namespace ignis::sym {

// A question about an unbacked symbol that its range does not answer (Note
// [Unbacked symbols]); what() is the user-facing reason.
struct DataDependentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ShapeEnv {
 public:
  static constexpr int64_t kNoUpper = std::numeric_limits<int64_t>::max();
  // The size of fakes standing for a data-dependent size (torch's
  // unbacked_symint_fallback). Never the basis of a decision.
  static constexpr int64_t kUnbackedHint = 8192;

  struct Symbol {
    Expr sym;             // the size_var, range [2, inf)
    std::string source;   // where its value is read: "L['x'].size()[0]"
    int64_t hint = 0;     // its value at trace time
    int64_t lo = 2;       // the range guards narrowed it to
    int64_t hi = kNoUpper;
    bool unbacked = false;  // u<n>: `source` says what computes it; never guarded
  };
  // Another source whose size the trace took equal to a symbol (duck sizing).
  struct SourceEquality {
    std::string source;
    Expr expr;
  };

  // IGNIS_LOGS=dynamic lines ("create_symbol s77 = 4 for L['x'].size()[0] [2, int_oo]").
  using Logger = std::function<void(const std::string&)>;
  void set_logger(Logger log) { log_ = std::move(log); }
  // Appended to each log line: where in user code the event happened.
  void set_location(std::string where) { where_ = std::move(where); }

  // The symbol for a size `hint` (>= 2) read from `source`. `preferred_id`
  // is torch's sha256(source) % 100. With `duck`, an existing symbol with the
  // same hint is returned (and the source guarded equal to it).
  Expr create_symbol(int64_t hint, const std::string& source, int preferred_id, bool duck = true);

  // Narrows symbol `sym`'s range to [lo, hi] (a user's range for a dim:
  // mark_dynamic(min=, max=)); the range guard then checks it and the
  // decisions its bounds settle add no guard. False, and nothing changes,
  // when the symbol's hint lies outside.
  bool constrain_range(Expr sym, int64_t lo, int64_t hi);

  // A new unbacked symbol u<n> in [lower, upper] (Note [Unbacked symbols]);
  // `origin` says what computes it ("nonzero() at f.py:3"), for messages.
  // A count's lower end is 0; a value read by Tensor.item() may be negative
  // (lower kNoLower: no lower end), and its symbol is then no size.
  static constexpr int64_t kNoLower = std::numeric_limits<int64_t>::min();
  Expr create_unbacked(const std::string& origin, int64_t upper = kNoUpper, int64_t lower = 0);
  // Whether e (after the replacements) involves an unbacked symbol.
  bool has_unbacked(Expr e) const;
  // What the ranges say of the relation `cond` (after the replacements),
  // adding no guard: 1 it holds, 0 it fails, -1 they do not decide it.
  int decided(Expr cond) const { return known(replace(cond)); }
  // A relation a check will hold at run time (ignis._check on a
  // data-dependent count): when `cond` is `a*u + b < 0` or `<= 0` for one
  // unbacked symbol u, narrows u's range by it and returns u and its range
  // after; false, changing nothing, for any other relation (an equality
  // would replace u by a constant the data may not give).
  bool assume(Expr cond, Expr* sym, int64_t* lo, int64_t* hi);

  // e with the replacements applied, simplified.
  Expr replace(Expr e) const;
  // Whether e still depends on a symbol after the replacements.
  bool is_symbolic(Expr e) const;
  // e's value at the hints.
  int64_t hint_of(Expr e) const;
  // The hints of every symbol (for eval).
  const Bindings& hints() const { return hints_; }

  // Decides the relation `cond` (a comparison) at the hints and returns it.
  // Unless the symbols' ranges already decide it, the outcome (cond or its
  // negation) becomes a guard; a cond on an unbacked symbol that the ranges
  // leave open throws DataDependentError.
  bool evaluate(Expr cond);
  // Guards e == its hint, replaces e's symbol when e is one, and returns the
  // hint: what a use that needs a real int does (range(), an index, a call
  // that takes no symbols). `why` names that use in the log. An unbacked
  // size cannot be specialized: DataDependentError.
  int64_t specialize(Expr e, const std::string& why);
  // a == b for sizes that must match (broadcast, cat): evaluates Eq(a, b),
  // which then replaces one symbol by the other. False when they differ at
  // the hints (the caller's fake run would have failed).
  bool expect_equal(Expr a, Expr b);

  const std::vector<Symbol>& symbols() const { return symbols_; }
  const Symbol* symbol_info(Expr sym) const;
  const std::vector<SourceEquality>& source_equalities() const { return equalities_; }
  // Relations over two or more symbols (one-symbol ones narrow ranges).
  const std::vector<Expr>& relations() const { return relations_; }
  // Every guard in torch's words, over sources, in a fixed order: source
  // equalities, relations, then each symbol's range ("2 <= L['x'].size()[0]",
  // "2 <= L['x'].size()[0] <= 8", "L['x'].size()[0] == 5" when specialised).
  std::vector<std::string> guard_strs() const;
  // e printed with each symbol spelt as its source.
  std::string source_str(Expr e) const;
  // A symbol's range guard in torch's words, for source text `src`.
  static std::string range_str(const Symbol& s, const std::string& src);

 private:
  void log(const std::string& msg) const;
  static std::string log_str(Expr g);
  [[noreturn]] void data_dependent(Expr cond, const std::string& why) const;
  void add_replacement(Expr sym, Expr value);
  // Narrows the range of the one symbol of a linear `cond`; false when cond
  // is not of that form.
  bool narrow(Expr cond);
  // cond decided by the current ranges: 1 true, 0 false, -1 unknown.
  int known(Expr cond) const;

  std::vector<Symbol> symbols_;
  std::unordered_map<Expr, size_t> index_of_;  // symbol -> symbols_ index
  std::unordered_set<int> ids_;
  int unbacked_count_ = 0;
  std::vector<SourceEquality> equalities_;
  std::vector<Expr> relations_;
  std::unordered_map<Expr, Expr> replacements_;
  Bindings hints_;
  Logger log_;
  std::string where_;
};

}  // namespace ignis::sym

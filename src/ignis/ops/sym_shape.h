// Symbolic shape rules: the output sizes of a call as expressions of its
// inputs' symbolic sizes (dynamic shapes, docs/dynamic_shapes.md).
//
// Capture runs every operation on fake tensors with concrete sizes (the
// symbols' hints); these rules say how the outputs' sizes depend on the
// symbols. The tracer checks each rule's result against the fake's sizes at
// the hints and never trusts a rule that disagrees; a call with no rule
// specialises its inputs' symbols (sound, just less general).
//
// Rules are looked up by the name a call is recorded under (the op, the
// Tensor method, the ignis.nn.functional function, the operator function).
// The family rules come from the op declarations (OpDef::category):
// pointwise ops broadcast their tensor arguments, reductions reduce over
// their `dim` argument. The rest (views, matmul, cat, factories, ...) are
// one table in sym_shape.cpp. Rules may ask the ShapeEnv to decide
// relations (broadcasting s0 with s1 guards Eq(s0, s1)).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ignis/sym/expr.h"
#include "ignis/sym/shape_env.h"

namespace ignis::sym_shape {

using Sizes = std::vector<sym::Expr>;

// One argument of a call as the rules see it.
struct SymArg {
  enum Kind : uint8_t { Other, None, Tensor, Int, List, Str, Bool, Slice, Ellipsis };
  Kind kind = Other;
  Sizes sizes;              // Tensor: symbolic sizes (constants where static)
  sym::Expr value;          // Int: a constant or a symbolic int
  std::vector<SymArg> items;  // List (list or tuple); Slice: start, stop, step
  std::string text;         // Str
  bool flag = false;        // Bool
};

struct SymCall {
  std::string name;   // "add", "view", "linear", "getitem", "zeros"
  bool method = false;  // a Tensor method: args[0] is self
  std::vector<SymArg> args;
  std::vector<std::pair<std::string, SymArg>> kwargs;

  // Positional argument i, else keyword `kw`; nullptr when absent.
  const SymArg* arg(size_t i, const char* kw) const;
};

// The symbolic sizes of each tensor output (one entry per tensor the call
// returns, in order), or nullopt when no rule applies or the arguments are
// outside what the rule handles. Throws nothing on odd arguments.
std::optional<std::vector<Sizes>> output_sizes(const SymCall& call, sym::ShapeEnv& env);

// Contiguous strides of `sizes` (innermost 1).
Sizes contiguous_strides(const Sizes& sizes);

// numpy's broadcast of `shapes`; sizes that must match are equated through
// the env (s0 against s1 guards Eq(s0, s1)); nullopt when two differ.
std::optional<Sizes> broadcast(const std::vector<const Sizes*>& shapes, sym::ShapeEnv& env);

// "[s77, 3]".
std::string str(const Sizes& sizes);

}  // namespace ignis::sym_shape

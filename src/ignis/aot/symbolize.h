// Symbolic AOT graphs: one traced graph serving every size of a dynamic
// capture (docs/dynamic_shapes.md, "Symbolic AOT graphs").
//
// Note [Symbolizing traced graphs]
// ignis's fakes carry int64 sizes, so AOT traces a graph at one size at a
// time. A graph that capture made with symbolic sizes s0..sn is traced at
// the example sizes and at two more hints (other values of every symbol),
// each traced independently through the same pipeline. symbolize() then
// lines the traces up node by node: the same ops, the same arguments but
// numbers, the same tensor ranks, dtypes and devices. Each number that
// differs between the traces (a view's size, a slice's end, a mean's count,
// a tensor's size or stride in the metadata) must be one form
//     k * s0^e0 * s1^e1 * ... + d      (integers k, d; exponents 0..2, or
//                                       0..1 beyond three symbols)
// fitting every trace, and exactly one monomial may fit; a float may be such
// a form or its reciprocal (1/N of a mean). Anything else -- another graph
// at another size, a number that fits no form or several -- fails, and the
// caller keeps tracing each size (the per-size path). A graph from the fit
// reproduces each trace exactly (instantiate() at its hints gives it back);
// a new size gets the first trace's graph with every fitted number
// evaluated, no trace.
//
// What this trusts: that the traced program depends on the sizes only
// through these numbers. Capture specializes sizes 0 and 1 and guards the
// relations its code decides; a decomposition or derivative formula that
// branched on a size beyond those (a threshold between the hints and a
// later size) would go unnoticed -- none of ignis's does (they branch on
// zero sizes, ranks and equalities that capture's duck sizing guards).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ignis/graph/graph.h"
#include "ignis/sym/expr.h"

namespace ignis::aot {

// A number of a traced graph that depends on the symbols.
struct SymbolicLeaf {
  enum class Kind : uint8_t { Int, Double, Reciprocal, Size, Stride };
  uint32_t node = 0;  // position in the graph's node list
  uint32_t leaf = 0;  // position among the node's numbers (leaf order: symbolize.cpp)
  Kind kind = Kind::Int;
  sym::Expr expr;     // Int, Size, Stride: the value
  int64_t scale = 1;  // Double: the value is expr / scale; Reciprocal: scale / expr
};

struct SymbolicGraph {
  std::unique_ptr<graph::Graph> graph;  // the first trace
  std::vector<sym::Expr> symbols;
  std::vector<SymbolicLeaf> leaves;
};

// `traces`: the graphs traced at each hint; `hints[h][i]`: symbol i's value
// in trace h (at least 3 hints, the first three with pairwise different
// values of every symbol; the forms are solved from the first two, and
// every later trace checks them, whatever its values). Returns nullopt and
// says why in `why` when the traces do not fit.
std::optional<SymbolicGraph> symbolize(const std::vector<const graph::Graph*>& traces,
                                       const std::vector<sym::Expr>& symbols,
                                       const std::vector<std::vector<int64_t>>& hints,
                                       std::string* why);

// The graph at `values` (one per symbol): a copy of the first trace with
// every fitted number evaluated. Throws ValueError when a number comes out
// non-integral or a size negative (the caller traces that size instead).
std::unique_ptr<graph::Graph> instantiate(const SymbolicGraph& s,
                                          const std::vector<int64_t>& values);

// The inputs of a captured graph `g` at other sizes: `inputs` are its example
// inputs (an int for each Sym placeholder, tensors), `ints` the new value of
// each Sym placeholder's symbol (nullopt at the other positions). A Sym
// placeholder gets its new value; a tensor with symbolic sizes (its
// placeholder's metadata) a fake of its dtype, device and requires_grad at
// those sizes (and strides: the symbolic ones, else contiguous when it is;
// a dim whose symbol has no Sym input, specialized after the placeholder
// was made, keeps its size); other tensors stay. nullopt, with the reason in `why`, for what this cannot
// make: a Sym input that is no plain symbol, a symbolic tensor sharing its storage with another input, or one whose
// strides are neither; and for a graph whose size arithmetic goes beyond
// sums and products (a floor division, a remainder, a min: step functions
// that could be constant across the hints). `symbols` gets the Sym inputs' symbols, in order.
std::optional<std::vector<graph::Value>> inputs_at(const graph::Graph& g,
                                                   const std::vector<graph::Value>& inputs,
                                                   const std::vector<std::optional<int64_t>>& ints,
                                                   std::vector<sym::Expr>* symbols,
                                                   std::string* why);

// A copy of the first trace whose tensor metadata carries the symbolic sizes
// and strides, for printing ("f32[8*s0, 64]"); its numbers stay the first
// trace's.
std::unique_ptr<graph::Graph> printable(const SymbolicGraph& s);

}  // namespace ignis::aot

// Common-subexpression elimination: a node computing the same target on
// the same arguments as an earlier node is replaced by that node.
//
// Only pure, deterministic computations merge: call_function / call_method
// / get_attr nodes without side effects (see dce.h) whose target is not
// random or uninitialising (randn, dropout, empty, ...). Arguments compare
// structurally after earlier merges, so chains of duplicates collapse in
// one pass. Merged nodes are erased.
#pragma once

#include <functional>

#include "ignis/graph/graph.h"

namespace ignis::graph {

// Returns the number of nodes removed.
size_t eliminate_common_subexpressions(Graph& g);

// The same value numbering, merging only the repeated nodes `merge` picks:
// a node equal to an earlier one -- same target, arguments equal up to
// repeats, whether those were merged or not -- is replaced by it when
// merge(node) holds. The AOT stage merges a backward's repeated reductions
// this way and keeps its repeated casts (Note [One computation for the
// forward and the backward], aot.cpp). Returns the number of nodes removed.
size_t merge_repeated(Graph& g, const std::function<bool(const Node&)>& merge);

}  // namespace ignis::graph

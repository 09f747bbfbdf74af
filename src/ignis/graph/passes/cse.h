// Common-subexpression elimination: a node computing the same target on
// the same arguments as an earlier node is replaced by that node.
//
// Only pure, deterministic computations merge: call_function / call_method
// / get_attr nodes without side effects (see dce.h) whose target is not
// random or uninitialising (randn, dropout, empty, ...). Arguments compare
// structurally after earlier merges, so chains of duplicates collapse in
// one pass. Merged nodes are erased.
#pragma once

#include "ignis/graph/graph.h"

namespace ignis::graph {

// Returns the number of nodes removed.
size_t eliminate_common_subexpressions(Graph& g);

}  // namespace ignis::graph

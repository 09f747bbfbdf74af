// Dead-code elimination: erases nodes whose results nobody uses.
//
// Placeholders and the output are kept (the signature must not change), and
// so are impure nodes (ops writing an argument, foreign calls marked impure,
// calls capture saw write an argument: NodeMeta::writes_argument):
// their effect is the point even when their result is unused.
#pragma once

#include "ignis/graph/graph.h"

namespace ignis::graph {

// True for nodes DCE must keep even without users.
bool has_side_effects(const Node& n);

// Returns whether anything was erased.
bool eliminate_dead_code(Graph& g);

}  // namespace ignis::graph

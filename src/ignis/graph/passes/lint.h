// Structural checks of a graph. A malformed graph fails with a RuntimeError
// naming the offending node:
//   - every node belongs to this graph and names are unique identifiers;
//   - arguments refer to live nodes of this graph defined earlier;
//   - users and inputs agree;
//   - targets fit their opcodes (strings for all but call_function);
//   - exactly one output, and it is the last node.
#pragma once

#include "ignis/graph/graph.h"

namespace ignis::graph {

void lint(const Graph& g);

}  // namespace ignis::graph

// The structural hash of a graph: the key of every later cache level.
//
// It depends on opcodes, targets (op names, foreign identities, attribute
// paths), constants, the argument structure (node references as positions)
// and placeholder metadata (sizes, strides, dtype, device, and the type
// annotation); not on node names, placeholder names, source locations or
// anything process specific (addresses). Tensor constants count by their
// metadata and contents. The result is 32 hex digits (two independent
// 64-bit FNV-1a style hashes of one canonical byte stream).
#pragma once

#include <string>
#include <unordered_map>

#include "ignis/graph/graph.h"

namespace ignis::graph {

std::string structural_hash(const Graph& g);

// The hash of one node's computation, with node references spelt by
// `position` (CSE buckets on this).
uint64_t node_hash(const Node& n, const std::unordered_map<const Node*, int64_t>& position);

}  // namespace ignis::graph

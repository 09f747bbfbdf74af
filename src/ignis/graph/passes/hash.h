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

// The same without the numbers: sizes and strides (ranks stay), int and
// float arguments, tensor constants' contents. Graphs that differ only in
// their sizes share it -- a dynamic graph's instantiations, or one function
// compiled at several sizes -- so it keys what one size's compile can tell
// another's (lower.cpp's realize decisions), never what correctness rests on.
std::string shape_free_hash(const Graph& g);

// The hash of one node's computation, with node references spelt by
// `position` (CSE buckets on this).
uint64_t node_hash(const Node& n, const std::unordered_map<const Node*, int64_t>& position);

}  // namespace ignis::graph

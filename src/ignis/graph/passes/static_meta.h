// The one tensor a node makes, when its sizes and strides are static
// (nullptr for tuples, several tensors or symbolic shapes): what the
// compiler's rewrite passes (sink_gather, row_scatter) may reason about.
#pragma once

#include "ignis/graph/node.h"

namespace ignis::graph {

inline const TensorMeta* static_meta(const Node* n) {
  if (n->meta().tensors.size() != 1 || n->meta().tuple_output) return nullptr;
  const TensorMeta& m = n->meta().tensors[0];
  return m.sym_sizes.empty() && m.sym_strides.empty() ? &m : nullptr;
}

}  // namespace ignis::graph

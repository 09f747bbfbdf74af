// Scatters that write one element per row, as selects: scatter_add(self,
// d, idx, src) with idx of size 1 along d (and self's size elsewhere) adds
// src[r] at one element of each row r, which is
//   self + where(arange(self.size(d)) == idx, src, -0.0)
// and scatter.src likewise `where(hit, src, self)`: pointwise, so the
// compiler fuses the write into the kernels around it instead of copying
// self into a fresh buffer and scattering through an extern. Cross-entropy's
// backward (the gradient of its gather) is such a scatter: the softmax
// term, the one-hot subtraction and the tangent of the logits then make one
// kernel.
//
// The indices still pass through a gather of the arange at idx (one element
// a row): it returns idx itself, and raises for an index out of range as
// the scatter would, so a bad index is never silently dropped.
//
// Only static shapes, idx and src of the same sizes, and self and src of
// one dtype; anything else keeps its scatter.
#pragma once

#include <cstddef>

#include "ignis/graph/graph.h"

namespace ignis::graph {

// Rewrites every such scatter; returns how many.
size_t rewrite_row_scatters(Graph& g);

// Whether rewrite_row_scatters would rewrite anything (g is not changed).
bool has_row_scatter(const Graph& g);

}  // namespace ignis::graph

// Index arithmetic of strided tensors: what the loop IR asks of sym first.
//
// Sizes, strides and offsets are in elements, outermost dimension first
// (torch's order), and may be symbolic. Results come back simplified, so two
// routes to the same address give the same Expr: the round trips
//   ravel_index(unravel_index(f, sizes), sizes) == f
//   unravel_index(ravel_index(c, sizes), sizes) == c   (each c[d] < sizes[d])
// hold symbolically (tests/cpp/test_sym.cpp checks both).
#pragma once

#include <vector>

#include "ignis/sym/expr.h"

namespace ignis::sym {

// offset + sum_d index[d] * strides[d].
Expr linear_index(const std::vector<Expr>& index, const std::vector<Expr>& strides,
                  Expr offset = 0);

// The strides of a contiguous (row-major) tensor: strides[d] is the product
// of the sizes inside d.
std::vector<Expr> contiguous_strides(const std::vector<Expr>& sizes);

// The coordinates of row-major flat index `flat` in a tensor of `sizes`:
// coord[d] = (flat // inner_d) % sizes[d], inner_d the product of the sizes
// inside d. The outermost coordinate is flat // inner_0 with no remainder:
// flat < numel is the caller's contract (as in inductor), and it keeps the
// expression one operation shorter.
std::vector<Expr> unravel_index(Expr flat, const std::vector<Expr>& sizes);

// The row-major flat index of coordinates: the inverse of unravel_index.
Expr ravel_index(const std::vector<Expr>& coords, const std::vector<Expr>& sizes);

// The storage offset of the element at row-major flat index `flat` of a view
// with these sizes, strides and offset.
Expr strided_index(Expr flat, const std::vector<Expr>& sizes, const std::vector<Expr>& strides,
                   Expr offset = 0);

// Whether dims d and d+1 can be iterated as one dim: stride[d] ==
// sizes[d+1] * strides[d+1] is known, or one of the two has size 1.
bool can_merge_dims(const std::vector<Expr>& sizes, const std::vector<Expr>& strides, size_t d);

// Merges every mergeable run of adjacent dims (outer to inner), as
// TensorIterator does before it loops: fewer, longer dims. Merging into or
// with a size-1 dim keeps the other dim's stride.
struct Layout {
  std::vector<Expr> sizes;
  std::vector<Expr> strides;
};
Layout coalesce_dims(const std::vector<Expr>& sizes, const std::vector<Expr>& strides);

// Whether the strides are known to be row-major contiguous for these sizes
// (torch's rule: size-1 dims may have any stride).
bool is_contiguous(const std::vector<Expr>& sizes, const std::vector<Expr>& strides);

}  // namespace ignis::sym

// Sorting along one dim (CPU): sort, and topk's partial sort.
#pragma once

#include <cstdint>

#include "ignis/core/tensor.h"

namespace ignis::cpu {

// Writes the first `k` elements of every slice of `in` along `dim`, in
// order (descending when `descending`), and their positions in the slice,
// into `values` and `indices` (both sized like `in` with `k` at `dim`; any
// strides). NaN orders above every number, as in PyTorch. Equal elements
// keep their order in the input (the sort is stable), so k < n (a partial
// sort) picks the same elements, in the same order, as a full sort would.
void sort_out(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
              int64_t k, bool descending);

}  // namespace ignis::cpu

// Element-wise copies with dtype conversion and broadcasting (CPU).
#pragma once

#include "ignis/core/memory_format.h"
#include "ignis/core/tensor.h"

namespace ignis {

// dst[...] = src[...] (src broadcast to dst's shape, converted to dst's dtype).
void copy_into(const Tensor& dst, const Tensor& src);
// A new tensor holding src converted to `dtype`, laid out as like_strides says.
Tensor to_dtype_copy(const Tensor& src, ScalarType dtype);
// PyTorch's is_non_overlapping_and_dense: t's elements fill one block of
// memory exactly, in some dim order.
bool is_non_overlapping_and_dense(const Tensor& t);
// Strides for a fresh tensor laid out like `t` (PyTorch's empty_like with
// preserve_format): t's strides when t is dense (non-overlapping, no gaps),
// else dense strides in t's dim order (expanded dims keep their place).
DimVector like_strides(const Tensor& t);
// Strides for a copy of `t` in memory format `f`: like_strides for
// preserve_format, else the format's own (memory_format.h).
DimVector strides_for_copy(const Tensor& t, MemoryFormat f);
// Whether t is dense and its memory order is `strides`' (the dims of size 1
// aside): walking both from their first element visits matching elements
// (a channels-last weight and its gradient).
bool dense_in_order(const Tensor& t, const DimVector& strides);

}  // namespace ignis

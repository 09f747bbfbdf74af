// Element-wise copies with dtype conversion and broadcasting (CPU).
#pragma once

#include "ignis/core/tensor.h"

namespace ignis {

// dst[...] = src[...] (src broadcast to dst's shape, converted to dst's dtype).
void copy_into(const Tensor& dst, const Tensor& src);
// A new tensor holding src converted to `dtype`, laid out like src when src
// is dense (non-overlapping, no gaps), contiguous otherwise.
Tensor to_dtype_copy(const Tensor& src, ScalarType dtype);
// Strides for a fresh tensor laid out like `t` (PyTorch's empty_like with
// preserve_format): t's strides when t is dense, else contiguous.
DimVector like_strides(const Tensor& t);

}  // namespace ignis

// Copies and fills on whatever device the tensors live on: the CPU kernels,
// or the CUDA ones when a tensor is on a GPU. Ops whose one implementation
// serves both backends (factories, copy_, _to_copy) call these.
#pragma once

#include "ignis/core/scalar.h"
#include "ignis/core/tensor.h"

namespace ignis {

// dst = src (broadcast, converted); either may be on a CUDA device.
void copy_tensor(const Tensor& dst, const Tensor& src, bool non_blocking = false);
void fill_tensor(const Tensor& t, const Scalar& v);
// Gives `t` the shape `sizes` with contiguous strides, in place (PyTorch's
// resize_, and the resize of an `out=` tensor): the storage is kept when it
// holds enough bytes past t's offset; else t gets a larger storage on its
// device holding the old bytes (other views keep the old storage). New
// elements are uninitialised.
void resize_tensor(const Tensor& t, const DimVector& sizes);
// A 0-dim tensor's value as a Scalar of its kind (bool, integer, float),
// read from any device.
Scalar tensor_to_scalar(const Tensor& v);

}  // namespace ignis

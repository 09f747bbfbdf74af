// One registration function per op family; register_all_ops() calls them.
#pragma once

#include "ignis/core/tensor.h"

namespace ignis {
void register_creation_ops();
void register_unary_ops();
void register_binary_ops();
void register_ternary_ops();
void register_view_ops();
void register_conversion_ops();
void register_reduction_ops();
void register_sort_ops();
void register_unique_ops();
void register_einsum_ops();
void register_index_ops();
void register_matrix_ops();
void register_composite_ops();
void register_attention_ops();
void register_nn_ops();
void register_conv_ops();
void register_pooling_ops();
void register_normalization_ops();
void register_foreach_ops();
void register_amp_ops();
void register_rnn_ops();
void register_linalg_ops();
void register_fft_ops();
// Kernels at the Complex key for ops registered before (ops/complex.cpp).
void register_complex_kernels();
// View pairs of floats (a last dim of 2) as complex numbers, made contiguous
// first when the pairs are not adjacent (a last stride of 1, even other
// strides and offset); ops/complex.cpp.
Tensor as_complex(Tensor pairs);
}  // namespace ignis

#include "ignis/autocast/autocast_kernel.h"
#include "ignis/autograd/autograd_kernel.h"
#include "ignis/cuda/memory.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

void register_all_ops() {
  static bool done = false;
  if (done) return;
  done = true;
  register_creation_ops();
  register_conversion_ops();
  register_unary_ops();
  register_binary_ops();
  register_ternary_ops();
  register_view_ops();
  register_reduction_ops();
  register_sort_ops();
  register_unique_ops();
  register_einsum_ops();
  register_index_ops();
  register_matrix_ops();
  register_attention_ops();
  register_composite_ops();
  register_nn_ops();
  register_conv_ops();
  register_pooling_ops();
  register_normalization_ops();
  register_foreach_ops();
  register_amp_ops();
  register_rnn_ops();
  register_linalg_ops();
  register_fft_ops();
  register_complex_kernels();
  autograd::register_autograd_kernel();
  autocast::register_autocast_kernels();
  // allocate_storage's CUDA hook; allocating raises a clear error without a GPU.
  cuda::install_allocator();
}

}  // namespace ignis

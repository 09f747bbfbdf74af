// 2-D pooling on a CUDA device (eager kernels): max with its indices,
// average, and their adaptive forms, forward and backward, with
// kernels/cpu/pooling.h's contract and its results bit for bit.
//
// The windows are the CPU's: each axis is a cpu::PoolAxis (per output
// position, the input positions it reads and its count_include_pad size),
// uploaded as a table, so one kernel serves fixed and adaptive windows. The
// backward kernels gather rather than scatter: a thread per input element
// sums the gradients of the outputs whose windows read it, in increasing
// output order -- the order in which the CPU's loop over the outputs adds
// them -- so no atomics are needed and both devices round alike.
#pragma once

#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/cuda/kernel_cache.h"
#include "ignis/kernels/cpu/pooling.h"

namespace ignis::cuda {

// Contiguous [planes, H, W] float32/float64 tensors on one GPU, as the CPU's.
void max_pool2d_into(const Tensor& out, const Tensor& indices, const Tensor& in,
                     const cpu::PoolAxis& h, const cpu::PoolAxis& w);
// grad_in = grad_out summed into the positions `indices` name; h and w are
// the forward's windows (every index lies in its output's window).
void max_pool2d_backward_into(const Tensor& grad_in, const Tensor& grad_out,
                              const Tensor& indices, const cpu::PoolAxis& h,
                              const cpu::PoolAxis& w);
void avg_pool2d_into(const Tensor& out, const Tensor& in, const cpu::PoolAxis& h,
                     const cpu::PoolAxis& w, bool count_include_pad, int64_t divisor_override);
void avg_pool2d_backward_into(const Tensor& grad_in, const Tensor& grad_out,
                              const cpu::PoolAxis& h, const cpu::PoolAxis& w,
                              bool count_include_pad, int64_t divisor_override);

// The kernels above for dtype `t`, for tests that compile them without a GPU.
std::vector<KernelRequest> pooling_kernel_requests(ScalarType t);

}  // namespace ignis::cuda

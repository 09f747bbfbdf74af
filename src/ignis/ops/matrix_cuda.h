// The CUDA compute kernels of the matrix products declared in ops/matrix.cpp
// (mm, bmm, addmm, baddbmm, _addmm_act, mv, dot): cuBLASLt through
// kernels/cuda/gemm.h.
// Their meta rules, derivatives and the matmul/linear composites are the
// device-neutral ones of matrix.cpp and composite.cpp.
#pragma once

#include "ignis/ops/op_def.h"

namespace ignis {

void mm_cuda(OpCall& c);
void bmm_cuda(OpCall& c);
void addmm_cuda(OpCall& c);
void baddbmm_cuda(OpCall& c);
void addmm_act_cuda(OpCall& c);

// _addmm_act's `activation`: true for 'gelu_tanh', false for 'relu' (a
// ValueError naming the argument otherwise); and that activation applied in
// place to out (eager's gelu_(approximate='tanh') / relu_): what the CPU
// kernel and the CUDA kernel's fallback run after addmm. In matrix.cpp.
bool addmm_act_is_gelu(const IValue& activation);
void apply_addmm_act(const Tensor& out, bool gelu);
void mv_cuda(OpCall& c);
void dot_cuda(OpCall& c);

}  // namespace ignis

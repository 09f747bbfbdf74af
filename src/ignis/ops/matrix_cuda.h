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
void mv_cuda(OpCall& c);
void dot_cuda(OpCall& c);

}  // namespace ignis

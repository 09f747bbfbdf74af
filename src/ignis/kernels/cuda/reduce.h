// Reductions on CUDA tensors: the same functions, with the same contracts,
// as kernels/cpu/reduce.h (ops/reduction.cpp calls one or the other by the
// call's device).
//
// A reduction is planned as on the CPU (cpu::make_reduce_plan: size-1 dims
// dropped, dims ordered by stride and merged) and runs as one kernel whose
// block reduces in registers, then across a warp by shuffles, then across
// warps through shared memory. Two layouts:
//   * inner: the reduced dim is the input's fastest (or few outputs are
//     kept). Threads of a block row stride along it (a warp per output for
//     short rows, a block for long);
//   * outer: a kept dim is the fastest and there are 32 outputs or more (or
//     rows have at most 16 elements). Each thread owns one output, so a warp
//     reads consecutive elements, and the block's rows split the reduced
//     elements among themselves.
// When there are too few outputs to fill the GPU and each has many
// elements, the reduced elements are split over a second grid dimension:
// every block writes its partial accumulator to a workspace and a second
// kernel combines them (two passes, no atomics, so results do not depend on
// timing). Accumulation is in op-math (float for 16-bit floats, int64 for
// integer sums); var/std use Welford's update; arg reductions keep the
// first index of the extreme (NaN counts as the extreme, as on the CPU).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/cuda/kernel_cache.h"

namespace ignis::cuda {

using DimMask = uint64_t;

void sum_out(const Tensor& out, const Tensor& in, DimMask mask);
void nansum_out(const Tensor& out, const Tensor& in, DimMask mask);
void prod_out(const Tensor& out, const Tensor& in, DimMask mask);
void mean_out(const Tensor& out, const Tensor& in, DimMask mask);
void amax_out(const Tensor& out, const Tensor& in, DimMask mask);
void amin_out(const Tensor& out, const Tensor& in, DimMask mask);
void all_out(const Tensor& out, const Tensor& in, DimMask mask);
void any_out(const Tensor& out, const Tensor& in, DimMask mask);
void count_nonzero_out(const Tensor& out, const Tensor& in, DimMask mask);
void norm_out(const Tensor& out, const Tensor& in, DimMask mask, double p);
void var_mean_out(const Tensor& var, const Tensor& mean, const Tensor& in, DimMask mask,
                  double correction, bool take_sqrt);
void logsumexp_out(const Tensor& out, const Tensor& in, DimMask mask);
void arg_reduce_out(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                    bool is_max);

// The kernel of reduction `kind` ("sum", "amax", "var", ...: the names in
// reduce.cpp's kReductions) reading `in` and writing `out`: the main kernel,
// or with `finish` the one that combines split partial results.
KernelRequest reduce_kernel(const std::string& kind, ScalarType in, ScalarType out, bool finish);
// Every (kind, input dtype, output dtype) the functions above can ask for,
// for tests that compile them all without a GPU.
struct ReduceVariant {
  std::string kind;
  ScalarType in, out;
};
std::vector<ReduceVariant> reduce_variants();

}  // namespace ignis::cuda

// Ranges and random numbers on CUDA tensors, with kernels/cpu/fill.h's
// signatures and the CPU's numbers: element i of a random fill is the same
// function of (seed, offset + i) as on the CPU (Philox-4x32-10 in the same
// integer arithmetic, the same uniform and Box-Muller formulas in double),
// and the generator is the same one (ignis.manual_seed, generator=), so a
// seed gives the same rand, bernoulli and dropout masks on both devices.
// normal/randn go through the device's double log and cos, which may differ
// from the host's in the last bit of a double (float32 results agree).
#pragma once

#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/cuda/kernel_cache.h"
#include "ignis/kernels/cpu/random.h"

namespace ignis::cuda {

void fill_affine(const Tensor& t, double start, double step);
void fill_affine_int(const Tensor& t, int64_t start, int64_t step);
void fill_uniform(const Tensor& t, double from, double to, Generator& g);
void fill_normal(const Tensor& t, double mean, double std, Generator& g);
void fill_randint(const Tensor& t, int64_t low, int64_t high, Generator& g);
void fill_bernoulli(const Tensor& t, double p, Generator& g);

// native_dropout's training branch: mask ~ Bernoulli(1 - p) (bool), out =
// in * mask / (1 - p), with the CPU's numbering (one Philox block per four
// consecutive elements). in, out and mask contiguous, one floating dtype.
void dropout(const Tensor& out, const Tensor& mask, const Tensor& in, double p, Generator& g);

// cpu::multinomial_out's draws on the GPU, from the same generator counters
// (Note [CUDA multinomial], random_kernels.cpp): the same indices with
// replacement; without replacement the same unless two keys meet within the
// last bit of the device's log. Invalid weights raise the CPU's errors (the
// rows' checks are read back: one synchronization).
void multinomial_out(const Tensor& out, const Tensor& probs, int64_t k, bool replacement,
                     Generator& g);
// cpu::fill_randperm's permutation (Fisher-Yates is serial: it is drawn on
// the host and copied), so a seed gives the same permutation on both devices.
void fill_randperm(const Tensor& t, Generator& g);

// The kernels above for dtype `t`, for tests that compile them without a GPU.
std::vector<KernelRequest> random_kernel_requests(ScalarType t);

}  // namespace ignis::cuda

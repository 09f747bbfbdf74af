// Random sampling kernels (CPU): permutations and categorical draws. Like
// the random fills (fill.h), every draw is a pure function of (seed,
// counter), so results do not depend on the thread count.
#pragma once

#include <cstdint>

#include "ignis/core/tensor.h"
#include "ignis/kernels/cpu/random.h"

namespace ignis::cpu {

// A uniformly random permutation of 0 .. t.numel() - 1 into the 1-D `t`
// (any dtype that holds those values), by Fisher-Yates.
void fill_randperm(const Tensor& t, Generator& g);

// `out` [rows, k] (or [k] for a 1-D `probs`): k category indices per row of
// `probs` [rows, n] (or [n]), drawn with probability proportional to the
// row's weights; without replacement no index repeats in a row (and
// zero-weight categories follow the others). Raises PyTorch's errors for
// negative, infinite or NaN weights and for rows summing to zero.
void multinomial_out(const Tensor& out, const Tensor& probs, int64_t k, bool replacement,
                     Generator& g);

}  // namespace ignis::cpu

// Activations folded into a GPU product: relu(addmm(b, x, w)) and
// gelu(addmm(b, x, w), approximate='tanh') on CUDA tensors become one
// `_addmm_act` call, which cuBLASLt runs with its RELU / GELU epilogue
// (ops/matrix.cpp, ops/matrix_cuda.cpp): the activation applies to the
// product's tiles while they are in registers, and the pointwise kernel
// that would read the product back and write the activation is gone. The
// CPU compiler fuses any epilogue into its own GEMM template and does not
// need this.
//
// What folds: an addmm of float32, bfloat16 or float16 CUDA tensors read
// only by a chain of elementwise nodes (their other operands Python
// numbers, their values read by nothing outside the chain but its last)
// that computes relu or the tanh GELU, whatever the spelling: the chain is
// evaluated in float64 at sample points (Note [Activations recognised by
// their values], gemm_activation.cpp) -- F.relu, clamp_min(x, 0),
// where(x > 0, x, 0), F.gelu(approximate='tanh') as AOT decomposes it (over
// the product converted to float32 for 16-bit products), GPT-2's
// hand-written 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). The erf GELU
// (nn.GELU()'s default) does not fold: cuBLASLt has no epilogue for it. In
// training the fold needs the product read by the activation alone, which
// holds for relu (its backward reads relu's output) and not for GELU (its
// backward reads the product).
//
// Values: the epilogue applies the activation to the float result before
// it is rounded to the output's dtype; the unfolded graph rounds the
// product first. For 16-bit outputs the two differ by a rounding (at most
// one unit in the last place); in float32 by float reassociation.
#pragma once

#include "ignis/graph/graph.h"

namespace ignis::graph {

// Folds every such activation; returns how many. The nodes the rewrite
// leaves unused are erased.
size_t fold_gemm_activations(Graph& g);

// Whether fold_gemm_activations would rewrite anything (the graph is not
// changed).
bool has_gemm_activation(const Graph& g);

}  // namespace ignis::graph

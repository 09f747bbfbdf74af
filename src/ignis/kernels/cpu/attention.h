// Fused scaled-dot-product attention on the CPU (flash-style).
//
// Neither direction materialises the L x S score matrix: queries are taken
// in blocks of rows, keys and values in blocks of columns, and each block of
// scores lives only in a per-thread buffer. The forward keeps a running row
// max and sum (online softmax) and rescales its output accumulator when the
// max grows; the backward recomputes the probabilities of each block from the
// saved row log-sum-exp.
#pragma once

#include "ignis/core/tensor.h"

namespace ignis::cpu {

// Shapes: q [B..., L, E], k [B..., S, E], v [B..., S, Ev] (B... the same
// batch dims for all, broadcast ones with stride 0), all of one dtype,
// float32 or float64, each with contiguous rows (last stride 1; the row
// stride may be anything). mask: undefined, or a [B..., L, S] view of any strides, bool
// (True keeps) or of q's dtype (added to the scores). Outputs out
// [B..., L, Ev] and lse [B..., L] are contiguous and of q's dtype. Rows with
// every key masked get out = 0 and lse = -inf. is_causal keeps key j <= i.
void attention_forward_into(const Tensor& out, const Tensor& lse, const Tensor& q,
                            const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                            double scale);

// The gradients of the forward above given dout (any strides with contiguous
// rows, as q): dq, dk,
// dv are contiguous [B..., L, E], [B..., S, E], [B..., S, Ev] of q's dtype
// (the full batch: the caller sums broadcast dims); dmask, when defined, is
// a contiguous [B..., L, S] that receives the gradient of the scores (that of
// a float mask). out and lse are the forward's.
void attention_backward_into(const Tensor& dq, const Tensor& dk, const Tensor& dv,
                             const Tensor& dmask, const Tensor& dout, const Tensor& q,
                             const Tensor& k, const Tensor& v, const Tensor& mask,
                             const Tensor& out, const Tensor& lse, bool causal, double scale);

}  // namespace ignis::cpu

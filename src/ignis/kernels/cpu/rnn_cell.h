// Fused recurrent cells (CPU): the gate math of one LSTM or GRU time step,
// forward and backward, in one pass over the [batch, gates * hidden] rows.
// The matrix products around them (input and hidden projections) are
// ordinary GEMMs; these kernels replace the ~10 pointwise ops per step that
// would otherwise sit between them. Semantics, gate order and workspace
// layout are torch's `_thnn_fused_lstm_cell` / `_thnn_fused_gru_cell`.
//
// Every tensor here is contiguous float32 or float64, all of one dtype
// (ops/rnn.cpp converts 16-bit floats to float32 and back). Rows are split
// across threads when the step is large enough (parallel_rows).
#pragma once

#include "ignis/core/tensor.h"

namespace ignis::cpu {

// LSTM, gates i, f, g, o along dim 1 of the [B, 4H] input_gates/hidden_gates:
//   gates = input_gates + hidden_gates (+ input_bias + hidden_bias, [4H])
//   i, f, o = sigmoid(.), g = tanh(.)
//   cy = f * cx + i * g,  hy = o * tanh(cy)
// workspace [B, 4H] gets the activated gates (i, f, g, o), what backward reads.
// The biases are both undefined or both defined.
void lstm_cell_into(const Tensor& hy, const Tensor& cy, const Tensor& workspace,
                    const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx,
                    const Tensor& input_bias, const Tensor& hidden_bias);

// The gradients of lstm_cell_into: grad_gates [B, 4H] (the gradient of both
// input_gates and hidden_gates), grad_cx [B, H], and when grad_bias is
// defined its column sums [4H] (the gradient of both biases). grad_hy and
// grad_cy may be undefined (zero).
void lstm_cell_backward_into(const Tensor& grad_gates, const Tensor& grad_cx,
                             const Tensor& grad_bias, const Tensor& grad_hy,
                             const Tensor& grad_cy, const Tensor& cx, const Tensor& cy,
                             const Tensor& workspace);

// GRU, gates r, z, n along dim 1 of the [B, 3H] input_gates/hidden_gates
// (ig, hg; biases ib, hb of [3H] or both undefined):
//   r = sigmoid(ig_r + ib_r + hg_r + hb_r),  z = sigmoid(... z ...)
//   n = tanh(ig_n + ib_n + r * (hg_n + hb_n)),  hy = n + z * (hx - n)
// workspace [B, 5H] gets r, z, n, hx and hg_n + hb_n.
void gru_cell_into(const Tensor& hy, const Tensor& workspace, const Tensor& input_gates,
                   const Tensor& hidden_gates, const Tensor& hx, const Tensor& input_bias,
                   const Tensor& hidden_bias);

// The gradients of gru_cell_into from its workspace: grad_input_gates and
// grad_hidden_gates [B, 3H] (they differ in the n gate, which the hidden
// side reaches through r), grad_hx [B, H], and when the bias gradients are
// defined, the column sums of the two gate gradients.
void gru_cell_backward_into(const Tensor& grad_input_gates, const Tensor& grad_hidden_gates,
                            const Tensor& grad_hx, const Tensor& grad_input_bias,
                            const Tensor& grad_hidden_bias, const Tensor& grad_hy,
                            const Tensor& workspace);

}  // namespace ignis::cpu

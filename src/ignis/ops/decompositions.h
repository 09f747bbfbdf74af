// Decompositions: operators written in terms of other operators, down to
// the core set (docs/core_ops.md).
//
// Each is hooked to its op in the op's declaration, `.decomposition(
// decomp::gelu)`, and has OpDef's DecompFn form: it receives the full
// argument stack, calls other ops through the dispatcher and leaves the
// op's outputs on the stack. AOT tracing runs the decomposition of every op
// that reaches the tracer (unless the backend keeps it whole); the ops it
// calls come back through the dispatcher and are decomposed in turn, until
// only core ops remain. Eager execution never uses them.
//
// Rules every decomposition follows (ops/decomp/common.h has the helpers):
//  - it raises what the op raises: structured and view ops run their own
//    meta rule (on meta copies of the arguments) before decomposing;
//  - its outputs have the op's dtypes and shapes (checked against that meta
//    run), and view ops return views with the op's geometry;
//  - float16/bfloat16 math runs in float32 and is rounded once at the end,
//    as the fused kernels (and torch's decompositions) compute;
//  - it calls core ops where that is as clear, so graphs stay short.
//
// One function may serve several overloads (it reads op.schema()).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ignis/dispatch/dispatcher.h"

namespace ignis::decomp {

// ---- generic (decomp/generic.cpp) ------------------------------------------
// A functional composite op: its kernel, which only calls other ops
// (OpBuilder sets this for every functional composite that is not core).
// Aliases (multiply, less, concat, ...) need none: they are names the
// dispatcher resolves to their op (alias() in op_def.h), never ops of their own.
void composite(const OpHandle& op, Stack& s);

// Stands in for AOT's tracer in tests (ignis._C._decompose_trace and
// tests/cpp/test_decompositions.cpp): a boxed fallback for `key` that runs
// the decomposition of every op reaching it that has one, and otherwise
// appends the op's name to `*seen` and runs the op below `key` with `key`
// excluded, so that what its kernels call is not seen.
KernelFn decompose_or_record(DispatchKey key, std::shared_ptr<std::vector<std::string>> seen);

// ---- pointwise (decomp/pointwise.cpp) -----------------------------------------
void silu(const OpHandle& op, Stack& s);
void mish(const OpHandle& op, Stack& s);
void square(const OpHandle& op, Stack& s);
void frac(const OpHandle& op, Stack& s);
void gelu(const OpHandle& op, Stack& s);
void gelu_backward(const OpHandle& op, Stack& s);
void softplus(const OpHandle& op, Stack& s);
void leaky_relu(const OpHandle& op, Stack& s);
void elu(const OpHandle& op, Stack& s);
void logsigmoid(const OpHandle& op, Stack& s);
void hardtanh(const OpHandle& op, Stack& s);
void glu(const OpHandle& op, Stack& s);
void rsub(const OpHandle& op, Stack& s);
void floor_divide(const OpHandle& op, Stack& s);
void clamp_min(const OpHandle& op, Stack& s);
void clamp_max(const OpHandle& op, Stack& s);
void lerp(const OpHandle& op, Stack& s);
void addcmul(const OpHandle& op, Stack& s);
void addcdiv(const OpHandle& op, Stack& s);
void masked_fill(const OpHandle& op, Stack& s);
// bitwise_left_shift / bitwise_right_shift (Tensor and in-place forms' functional op)
void bitwise_shift(const OpHandle& op, Stack& s);

// ---- creation (decomp/creation.cpp) -----------------------------------------------
void zeros(const OpHandle& op, Stack& s);
void ones(const OpHandle& op, Stack& s);
void arange(const OpHandle& op, Stack& s);
void randint(const OpHandle& op, Stack& s);
void linspace(const OpHandle& op, Stack& s);
void eye(const OpHandle& op, Stack& s);

// ---- views (decomp/views.cpp) ---------------------------------------------------------
void transpose(const OpHandle& op, Stack& s);
void t(const OpHandle& op, Stack& s);
void expand_as(const OpHandle& op, Stack& s);
void squeeze(const OpHandle& op, Stack& s);  // squeeze, squeeze.dim
void narrow(const OpHandle& op, Stack& s);
void split(const OpHandle& op, Stack& s);  // split.Tensor, split.sizes
void chunk(const OpHandle& op, Stack& s);
void diagonal(const OpHandle& op, Stack& s);

// ---- reductions (decomp/reduction.cpp) ----------------------------------------------
void sum(const OpHandle& op, Stack& s);
void prod(const OpHandle& op, Stack& s);
void max_all(const OpHandle& op, Stack& s);  // max(self), min(self)
void all_any(const OpHandle& op, Stack& s);  // all, all.dim, any, any.dim
void mean(const OpHandle& op, Stack& s);     // mean, mean.dim
void nansum(const OpHandle& op, Stack& s);
void var(const OpHandle& op, Stack& s);  // var, std, var_mean, std_mean: every overload
void logsumexp(const OpHandle& op, Stack& s);
void norm(const OpHandle& op, Stack& s);  // norm, norm.str
void count_nonzero(const OpHandle& op, Stack& s);

// ---- indexing and data movement (decomp/index.cpp) --------------------------------------
void repeat(const OpHandle& op, Stack& s);
void index_add(const OpHandle& op, Stack& s);
void index_copy(const OpHandle& op, Stack& s);
void index_fill(const OpHandle& op, Stack& s);
void tril_triu(const OpHandle& op, Stack& s);
void roll(const OpHandle& op, Stack& s);

// ---- matrix products (decomp/matrix.cpp) -----------------------------------------------
void dot(const OpHandle& op, Stack& s);
void mv(const OpHandle& op, Stack& s);
void addmm_act(const OpHandle& op, Stack& s);

// ---- nn (decomp/nn.cpp) ------------------------------------------------------------------
void softmax(const OpHandle& op, Stack& s);  // softmax.int, log_softmax.int, _safe_softmax
void native_layer_norm(const OpHandle& op, Stack& s);
void native_layer_norm_backward(const OpHandle& op, Stack& s);
void rms_norm(const OpHandle& op, Stack& s);
void normalize(const OpHandle& op, Stack& s);
void cosine_similarity(const OpHandle& op, Stack& s);
void native_dropout(const OpHandle& op, Stack& s);
void embedding(const OpHandle& op, Stack& s);
void one_hot(const OpHandle& op, Stack& s);

// ---- recurrent cells (decomp/rnn.cpp) ----------------------------------------------------
void thnn_fused_lstm_cell(const OpHandle& op, Stack& s);
void thnn_fused_lstm_cell_backward_impl(const OpHandle& op, Stack& s);
void thnn_fused_gru_cell(const OpHandle& op, Stack& s);
void thnn_fused_gru_cell_backward(const OpHandle& op, Stack& s);

// ---- losses (decomp/loss.cpp) ----------------------------------------------------------
void mse_loss(const OpHandle& op, Stack& s);
void l1_loss(const OpHandle& op, Stack& s);
void smooth_l1_loss(const OpHandle& op, Stack& s);
void huber_loss(const OpHandle& op, Stack& s);
void binary_cross_entropy(const OpHandle& op, Stack& s);
void binary_cross_entropy_with_logits(const OpHandle& op, Stack& s);
void kl_div(const OpHandle& op, Stack& s);
void nll_loss(const OpHandle& op, Stack& s);
void cross_entropy(const OpHandle& op, Stack& s);

// ---- mixed precision (decomp/amp.cpp) ----------------------------------------------------
// GradScaler's two in-place ops over pointwise ops and reductions; on CUDA
// they are the ops' kernels (ops/amp.cpp).
void amp_foreach_non_finite_check_and_unscale(const OpHandle& op, Stack& s);
void amp_update_scale(const OpHandle& op, Stack& s);

}  // namespace ignis::decomp

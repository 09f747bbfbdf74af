#include "ignis/ops/autocast_policy.h"

namespace ignis {

const char* cast_policy_name(CastPolicy p) {
  switch (p) {
    case CastPolicy::None: return "none";
    case CastPolicy::LowerPrecisionFp: return "lower_precision_fp";
    case CastPolicy::Fp32: return "fp32";
    case CastPolicy::Fp32SetOptDtype: return "fp32_set_opt_dtype";
    case CastPolicy::Promote: return "promote";
    case CastPolicy::Banned: return "banned";
  }
  return "?";
}

// Note [Autocast policy table]
// torch 2.x's lists, restricted to the ops ignis has, under ignis's names:
// torch's conv1d/2d/3d and conv_transpose*d all reach ignis's one
// `convolution` op, and `cross_entropy` is torch's `cross_entropy_loss`.
// The CPU column was checked against torch 2.13 by running each op under
// torch.autocast("cpu") (tests/python/test_autocast.py does it again); the
// CUDA column follows torch's AutocastCUDA registrations. Two ignis ops are
// listed on CUDA although torch lists them under other names, because ignis
// computes them in one kernel where torch's CUDA path composes listed ops:
// `cross_entropy` (torch: log_softmax with dtype=float32, then nll_loss in
// fp32) and `norm` (torch's fp32_append_dtype: the norm computed with
// dtype=float32); both give torch's float32 result. Checked against
// torch's AT_FORALL_* lists (aten/src/ATen/autocast_mode.h, 2.x).
const std::vector<AutocastRule>& autocast_rules() {
  using P = CastPolicy;
  constexpr P N = P::None, L = P::LowerPrecisionFp, F = P::Fp32, S = P::Fp32SetOptDtype,
              W = P::Promote, B = P::Banned;
  static const std::vector<AutocastRule> rules = {
      // op                                 cpu  cuda
      // Matrix products and convolutions: in the autocast dtype.
      {"mm",                                 L,   L},
      {"bmm",                                L,   L},
      {"addmm",                              L,   L},
      {"baddbmm",                            L,   L},
      {"matmul",                             L,   L},
      {"linear",                             L,   L},
      {"mv",                                 N,   L},
      {"convolution",                        L,   L},
      {"prelu",                              L,   L},
      {"scaled_dot_product_attention",       L,   L},
      {"_scaled_dot_product_attention",      L,   L},
      // The recurrent cells (torch's CUDA list). On the CPU torch's LSTM runs
      // as mkldnn_rnn_layer, listed there, and its GRU as gru, not listed
      // (float32): ignis's layers end in these cells, whose state would
      // otherwise meet gates of the autocast dtype.
      {"_thnn_fused_lstm_cell",              L,   L},
      {"_thnn_fused_gru_cell",               F,   L},
      // float32 on both.
      {"mse_loss",                           F,   F},
      {"nll_loss",                           F,   F},
      {"l1_loss",                            F,   F},
      {"smooth_l1_loss",                     F,   F},
      {"huber_loss",                         F,   F},
      {"kl_div",                             F,   F},
      {"binary_cross_entropy_with_logits",   F,   F},
      {"cross_entropy",                      F,   F},
      {"binary_cross_entropy",               F,   B},
      // float32 on CUDA; the CPU runs them in the autocast dtype.
      {"exp",                                N,   F},
      {"expm1",                              N,   F},
      {"log",                                N,   F},
      {"log10",                              N,   F},
      {"log2",                               N,   F},
      {"log1p",                              N,   F},
      {"reciprocal",                         N,   F},
      {"rsqrt",                              N,   F},
      {"acos",                               N,   F},
      {"asin",                               N,   F},
      {"cosh",                               N,   F},
      {"sinh",                               N,   F},
      {"tan",                                N,   F},
      {"pow",                                N,   F},
      {"softplus",                           N,   F},
      {"layer_norm",                         N,   F},
      {"native_layer_norm",                  N,   F},
      {"cosine_similarity",                  N,   F},
      {"logsumexp",                          N,   F},
      {"norm",                               N,   F},
      // The Fourier transforms (torch lists fft_fft ... fft_ihfftn and stft
      // on both devices; ignis's Python functions end in these primitives).
      {"_fft_c2c",                           F,   F},
      {"_fft_r2c",                           F,   F},
      {"_fft_c2r",                           F,   F},
      // The reductions that take a dtype: float32 results unless one is given.
      {"prod",                               F,   S},
      {"sum",                                N,   S},
      {"cumsum",                             N,   S},
      {"cumprod",                            N,   S},
      {"softmax.int",                        N,   S},
      {"log_softmax.int",                    N,   S},
      // The widest floating type of the arguments. (torch's CUDA list has no
      // cat/stack/index_copy: there cat and stack promote by themselves and
      // index_copy refuses mixed dtypes.)
      {"cat",                                W,   N},
      {"stack",                              W,   N},
      {"index_copy",                         W,   N},
      {"addcmul",                            N,   W},
      {"addcdiv",                            N,   W},
      {"atan2",                              N,   W},
      {"dot",                                N,   W},
      {"index_put",                          N,   W},
      {"scatter_add",                        N,   W},
  };
  return rules;
}

}  // namespace ignis

// GEMM through cuBLASLt: the per-device handle, the per-stream workspace,
// and the cache of matmul plans (descriptors plus the algorithm the
// heuristic chose), keyed by everything that shapes a call.
//
// This level speaks cuBLASLt's language: column-major matrices described by
// (rows, cols, leading dimension, batch stride) and transpose flags.
// kernels/cuda/gemm.h maps row-major tensors onto it.
#pragma once

#include <cstdint>
#include <string>

#include "ignis/cuda/stream.h"

namespace ignis::cuda {

// One column-major operand as cuBLASLt stores it: `rows` x `cols` with
// leading dimension `ld`, matrices of a batch `batch_stride` elements apart.
// The pointwise function an epilogue applies after the bias.
enum class GemmActivation : uint8_t { None, Relu, GeluTanh };

struct LtMatrix {
  const void* data = nullptr;
  int64_t rows = 0, cols = 0, ld = 0, batch_stride = 0;
};

// D[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b] (+ bias), for b < batch,
// with D (m x n) also serving as C (beta != 0 reads it). op(A) is m x k,
// op(B) k x n. All matrices have `data_type` (a cudaDataType); the product
// accumulates in float (double for CUDA_R_64F), or in TF32 for float32 when
// allow_tf32() is set. `bias` (length m, data_type, may be null) is added
// to every column by cuBLASLt's BIAS epilogue; `activation` then applies
// ReLU or GELU to every element of D (cuBLASLt's RELU and GELU epilogues,
// on the float result before it is rounded to data_type; cuBLASLt's GELU is
// the tanh form, torch's gelu(approximate='tanh')).
struct GemmCall {
  int device = 0;
  int data_type = 0;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  LtMatrix a, b;
  void* d = nullptr;
  int64_t ldd = 0, batch_stride_d = 0;
  const void* bias = nullptr;
  GemmActivation activation = GemmActivation::None;
  double alpha = 1, beta = 0;
};

// Runs `call` on `stream` (queued; returns once cuBLASLt has enqueued it).
// Returns false, running nothing, when the heuristic finds no algorithm for
// this layout (the caller retries with contiguous, aligned operands);
// raises a RuntimeError when cuBLASLt cannot be loaded or a call fails.
bool lt_matmul(const GemmCall& call, const Stream& stream);

// While one lives on this thread, products choose their algorithm by
// timing the heuristic's candidates (Note [GEMM algorithms timed],
// blas.cpp): a max-autotune compiled graph runs its steps inside one.
class GemmAutotuneScope {
 public:
  explicit GemmAutotuneScope(bool on);
  ~GemmAutotuneScope();
  GemmAutotuneScope(const GemmAutotuneScope&) = delete;
  GemmAutotuneScope& operator=(const GemmAutotuneScope&) = delete;

 private:
  bool previous_;
};

// Allocates cuBLASLt's workspace for `stream` (the current stream of its
// device) now, when cuBLASLt can be loaded and it has none yet: a CUDA
// graph captured on the stream then finds it, rather than allocating it
// inside the capture, from the graph's private pool.
void reserve_workspace(const Stream& stream);

// TF32 for float32 products (torch.backends.cuda.matmul.allow_tf32;
// default false, as in torch). Process-wide.
bool allow_tf32();
void set_allow_tf32(bool on);

// Counters, for tests: plans built (each one heuristic query), calls served
// from the cache, matmuls run, of which with the BIAS epilogue and with a
// RELU or GELU one, and calls that found no algorithm (the caller then
// copies its operands, or applies the activation itself).
struct BlasStats {
  int64_t plans = 0, plan_hits = 0, matmuls = 0, bias_epilogues = 0, no_algorithm = 0,
          activation_epilogues = 0;
  // Under max-autotune (GemmAutotuneScope): plans whose algorithm was timed,
  // and plans that took a choice stored by an earlier process.
  int64_t algorithms_timed = 0, algorithms_cached = 0;
};
BlasStats blas_stats();

// The background warm-up of cuBLASLt for `device` (Note [cuBLASLt warmed in
// the background], blas.cpp): "off" (not started: no context yet, or
// IGNIS_CUDA_PREWARM=0), "running", "done", or "failed: <why>". With `wait`
// it first waits for the thread to end.
std::string gemm_prewarm_state(int device, bool wait);
// Waits for every device's warm-up thread (at exit; idempotent).
void join_gemm_prewarm();

}  // namespace ignis::cuda

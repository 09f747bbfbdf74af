// Matrix products on the CPU: C = beta * C + alpha * A @ B.
//
// float32/float64 run on the built-in blocked GEMM, or on BLAS
// (cblas_sgemm/dgemm) when the build found OpenBLAS and IGNIS_GEMM=blas
// (gemm_choice() says which, and why); float16/bfloat16 compute in float
// and round once at the end; integer types use a direct loop.
#pragma once

#include <string>

#include "ignis/core/scalar.h"
#include "ignis/core/tensor.h"
#include "ignis/kernels/cpu/gemm_epilogue.h"

namespace ignis::cpu {

// out[i] = beta * out[i] + alpha * (a[i] @ b[i]) for a [B, m, k], b [B, k, n]
// and a contiguous out [B, m, n], all of one dtype (not bool). a and b may
// have any strides: a batch stride of 0 reuses one matrix for the whole
// batch, and a transposed matrix reaches BLAS as a transpose flag, not a
// copy. When beta is 0, out is only written (NaN in it does not propagate).
void bmm_into(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& beta,
              const Scalar& alpha);

// out (0-dim) = sum_i a[i] * b[i] for 1-D a and b of one dtype and length.
void dot_into(const Tensor& out, const Tensor& a, const Tensor& b);

// c[m, n] (row stride ldc) = beta * c + alpha * a @ b on raw float/double
// matrices: element (i, p) of a at a[i * a_rs + p * a_cs], (p, j) of b at
// b[p * b_rs + j * b_cs]. Runs on the calling thread (inside a parallel
// region BLAS does too): for kernels that already split their work across
// threads, such as attention's blocks. beta == 0 only writes c.
template <typename T>
void gemm_serial(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_rs,
                 int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T beta, T* c,
                 int64_t ldc);

// Which GEMM float32/float64 products run on in this process, and why, in
// one line (IGNIS_LOGS=schedule prints it under a compiled graph's GEMM
// kernels; ignis._C._gemm_choice() returns it): the built-in GEMM's tile and
// ISA, or OpenBLAS's core, and a warning when the build targets AVX-512 but
// OpenBLAS runs kernels without it (OpenBLAS 0.3.21 falls back to Prescott on
// CPUs newer than it knows, 4x slower than the built-in GEMM).
std::string gemm_choice();

// How the built-in GEMM cuts a float32 product of C [m, n] and depth k
// into tasks on `threads` threads (Note [Cutting C for the threads] and Note
// [Products split over their depth] in gemm.cpp): depth slices (1: none),
// rows per row range, columns per column block, and the tasks
// (slices x ranges x blocks), and whether a packed B is packed once for all
// of them (Note [Packing once for all tasks]); `a_columns` when A is column-major (a
// transposed operand, as X^T in a weight gradient). For tests.
struct GemmTasks {
  int64_t slices, rows, cols, tasks;
  bool shares_b;  // a packed B is packed once for all tasks (not per task)
};
GemmTasks gemm_tasks(int64_t m, int64_t n, int64_t k, bool a_columns, int threads);

// True when float32/float64 products use BLAS: the build has OpenBLAS and
// the environment does not set IGNIS_GEMM=builtin (which selects the
// built-in GEMM, so that both paths can be tested from one build).
bool gemm_uses_blas();

// call.c = beta * call.c + alpha * call.a @ call.b (gemm_epilogue.h), then
// call.epilogue (when set) on disjoint blocks covering C, each once its
// elements are final. Threads as bmm_into does: every thread when called
// outside a parallel region; inside one, no OpenMP threads of its own (the
// built-in GEMM and the epilogue run on the calling thread, BLAS is called
// as gemm_serial calls it). Without an epilogue the result equals
// bmm_into's for the same operands.
//
// Two strategies, picked as bmm_into picks its GEMM (gemm_uses_blas());
// docs/benchmarks.md has the measurements:
// - built-in: the blocked GEMM calls the epilogue on each kMC x kNC tile as
//   soon as the tile's k loop ends, on the thread that computed it;
// - BLAS: C in row panels of about 32 MiB (one panel at MLP sizes); BLAS
//   computes a panel (with its own threads), then the epilogue runs over
//   the panel's kMC x kNC blocks in parallel.
// Throws for a dtype other than 0 (float32) or 1 (float64).
void gemm_with_epilogue(const GemmCall& call);

// Forces one strategy, for tests and benchmarks. kBlas in a build without
// BLAS runs the built-in GEMM; panel_rows (kBlas only) overrides the panel
// height when positive.
enum class GemmPath { kAuto, kBuiltin, kBlas };
void gemm_with_epilogue(const GemmCall& call, GemmPath path, int64_t panel_rows = 0);

// The table generated kernels receive: gemm calls gemm_with_epilogue.
const KernelRuntime* kernel_runtime();

}  // namespace ignis::cpu

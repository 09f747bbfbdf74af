// A matrix product whose output tiles are handed to a callback while they
// are still in cache: the runtime side of the compiler's GEMM epilogues.
//
// Generated C++ kernels fuse pointwise work that follows a matmul (bias,
// activation, residual add) into the product: the GEMM calls `epilogue` on
// each finished block of C, on the thread that owns that block, so the
// pointwise code reads C from L2 instead of making a second pass over
// memory. Generated code is compiled outside the project's build (just
// `-I src`) and loaded with dlopen; it cannot link against _C, so it gets a
// KernelRuntime, a table of function pointers, and calls `runtime->gemm`.
// That is why this header includes only <cstdint>: no Tensor, no OpenMP.
//
// The implementation is gemm_with_epilogue() in gemm.h; kernel_runtime()
// returns the table.
#pragma once

#include <cstdint>

namespace ignis::cpu {

// Called once per finished block of C: rows [i0, i1), cols [j0, j1), on the
// thread that computed it, after every k contribution was accumulated.
// The blocks are disjoint and cover C; each element is visited exactly once,
// after it holds its final value. Blocks may run concurrently on different
// threads, so an epilogue must only touch its own block's elements (and
// read shared inputs such as a bias). Coordinates are those of the whole C.
using GemmEpilogue = void (*)(void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

struct GemmCall {          // C[m, n] (row stride ldc) = beta*C + alpha * A @ B
  int64_t m, n, k;
  const void* a; int64_t a_rs, a_cs;   // element (i, p) at a[i*a_rs + p*a_cs]
  const void* b; int64_t b_rs, b_cs;   // element (p, j) at b[p*b_rs + j*b_cs]
  void* c; int64_t ldc;
  double alpha, beta;                  // beta == 0: C is only written
  int dtype;                           // 0: float32, 1: float64
  GemmEpilogue epilogue;               // may be null
  void* ctx;
};

// A function table generated code receives (it cannot link against _C).
struct KernelRuntime {
  void (*gemm)(const GemmCall* call);
};

}  // namespace ignis::cpu

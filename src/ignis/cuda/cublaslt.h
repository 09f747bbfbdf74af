// cuBLASLt, loaded at run time.
//
// As with the driver (driver.h) and NVRTC (nvrtc.h), ignis never links
// cuBLASLt: `import ignis` works without it, and the first GEMM on a GPU
// dlopens it and resolves every entry point below into one table. The
// library is looked for as $IGNIS_CUBLASLT_LIBRARY (which `import
// ignis.cuda` points at a pip nvidia-cublas wheel when no toolkit has one),
// then libcublasLt.so.13 / .12 / libcublasLt.so on the loader's path, then
// under $CUDA_HOME, $CUDA_PATH and /usr/local/cuda. A missing library or
// symbol is recorded, not thrown; require_cublaslt() raises a RuntimeError
// naming every path tried or the missing symbol.
//
// The types and enum values are declared here, copied from cublasLt.h,
// cublas_api.h and library_types.h (CUDA 12 and 13 agree on all of them):
// they are cuBLASLt's stable C ABI, so the build needs no toolkit headers.
// Only what ignis calls is declared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ignis/cuda/driver.h"

namespace ignis::cuda {

using cublasStatus_t = int;
using cublasLtHandle_t = struct cublasLtContext*;
// The opaque descriptors' storage is the caller's in the C API; ignis only
// holds the pointers the Create functions return.
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque*;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque*;
using cublasLtMatmulPreference_t = struct cublasLtMatmulPreferenceOpaque*;
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

inline constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
inline constexpr cublasStatus_t CUBLAS_STATUS_NOT_SUPPORTED = 15;
// cudaDataType_t (library_types.h)
inline constexpr int CUDA_R_32F = 0;
inline constexpr int CUDA_R_64F = 1;
inline constexpr int CUDA_R_16F = 2;
inline constexpr int CUDA_R_16BF = 14;
// cublasComputeType_t
inline constexpr int CUBLAS_COMPUTE_32F = 68;
inline constexpr int CUBLAS_COMPUTE_64F = 70;
inline constexpr int CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
// cublasOperation_t
inline constexpr int32_t CUBLAS_OP_N = 0;
inline constexpr int32_t CUBLAS_OP_T = 1;
// cublasLtMatmulDescAttributes_t
inline constexpr int CUBLASLT_MATMUL_DESC_TRANSA = 3;       // int32_t
inline constexpr int CUBLASLT_MATMUL_DESC_TRANSB = 4;       // int32_t
inline constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE = 7;     // uint32_t
inline constexpr int CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8;  // const void*
inline constexpr int CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26;  // int32_t cudaDataType
// cublasLtEpilogue_t
inline constexpr uint32_t CUBLASLT_EPILOGUE_DEFAULT = 1;
inline constexpr uint32_t CUBLASLT_EPILOGUE_RELU = 2;
inline constexpr uint32_t CUBLASLT_EPILOGUE_BIAS = 4;
inline constexpr uint32_t CUBLASLT_EPILOGUE_GELU = 32;  // the tanh form
// cublasLtMatrixLayoutAttribute_t
inline constexpr int CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5;            // int32_t
inline constexpr int CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6;   // int64_t
// cublasLtMatmulPreferenceAttributes_t
inline constexpr int CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;     // uint64_t
inline constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5;   // uint32_t
inline constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6;
inline constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7;
inline constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8;

// X(name, signature): every cuBLASLt entry point ignis calls (the exported
// symbol is the name).
#define IGNIS_CUBLASLT_FUNCTIONS(X)                                                           \
  X(cublasLtCreate, cublasStatus_t(cublasLtHandle_t*))                                        \
  X(cublasLtDestroy, cublasStatus_t(cublasLtHandle_t))                                        \
  X(cublasLtGetVersion, size_t())                                                             \
  X(cublasLtGetStatusName, const char*(cublasStatus_t))                                       \
  X(cublasLtGetStatusString, const char*(cublasStatus_t))                                     \
  X(cublasLtMatmulDescCreate, cublasStatus_t(cublasLtMatmulDesc_t*, int, int))                \
  X(cublasLtMatmulDescDestroy, cublasStatus_t(cublasLtMatmulDesc_t))                          \
  X(cublasLtMatmulDescSetAttribute,                                                           \
    cublasStatus_t(cublasLtMatmulDesc_t, int, const void*, size_t))                           \
  X(cublasLtMatrixLayoutCreate,                                                               \
    cublasStatus_t(cublasLtMatrixLayout_t*, int, uint64_t, uint64_t, int64_t))                \
  X(cublasLtMatrixLayoutDestroy, cublasStatus_t(cublasLtMatrixLayout_t))                      \
  X(cublasLtMatrixLayoutSetAttribute,                                                         \
    cublasStatus_t(cublasLtMatrixLayout_t, int, const void*, size_t))                         \
  X(cublasLtMatmulPreferenceCreate, cublasStatus_t(cublasLtMatmulPreference_t*))              \
  X(cublasLtMatmulPreferenceDestroy, cublasStatus_t(cublasLtMatmulPreference_t))              \
  X(cublasLtMatmulPreferenceSetAttribute,                                                     \
    cublasStatus_t(cublasLtMatmulPreference_t, int, const void*, size_t))                     \
  X(cublasLtMatmulAlgoGetHeuristic,                                                           \
    cublasStatus_t(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,            \
                   cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,    \
                   cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t*, int*))  \
  X(cublasLtMatmul,                                                                           \
    cublasStatus_t(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,          \
                   cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t, const void*,  \
                   const void*, cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t,        \
                   const cublasLtMatmulAlgo_t*, void*, size_t, CUstream))

struct CublasLtApi {
#define IGNIS_CUBLASLT_DECLARE(name, sig) std::add_pointer_t<sig> name = nullptr;
  IGNIS_CUBLASLT_FUNCTIONS(IGNIS_CUBLASLT_DECLARE)
#undef IGNIS_CUBLASLT_DECLARE

  std::string path;         // the library that loaded
  std::string unavailable;  // why it cannot be used (empty when loaded)

  bool is_loaded() const { return unavailable.empty(); }
};

// The process-wide table, loaded on first use; never throws.
const CublasLtApi& cublaslt();
// cublaslt() when loaded, else a RuntimeError: "cuBLASLt is not available:
// ..." naming the paths tried or the missing symbol.
const CublasLtApi& require_cublaslt();

// Loads the library at `path` alone (no search), for tests of the loader:
// the table it resolves, or its `unavailable` reason.
CublasLtApi load_cublaslt_from(const std::string& path);

// Raises a RuntimeError for a failed cuBLASLt call: "cuBLASLt error:
// CUBLAS_STATUS_X (description) in `what`".
[[noreturn]] void throw_cublas_error(cublasStatus_t s, const char* what);

}  // namespace ignis::cuda

// Calls a cuBLASLt entry point and raises on failure:
//   IGNIS_CUBLAS(cublasLtCreate(&h));
#define IGNIS_CUBLAS(call)                                                      \
  do {                                                                          \
    ::ignis::cuda::cublasStatus_t ignis_cublas_s_ = ::ignis::cuda::cublaslt().call; \
    if (__builtin_expect(ignis_cublas_s_ != ::ignis::cuda::CUBLAS_STATUS_SUCCESS, 0)) \
      ::ignis::cuda::throw_cublas_error(ignis_cublas_s_, #call);                \
  } while (0)

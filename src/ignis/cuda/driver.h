// The CUDA driver API, loaded at run time.
//
// ignis never links libcuda: `import ignis` must work on machines with no
// GPU, no driver and no toolkit. The first call of driver() dlopens
// libcuda.so.1 and resolves every entry point below into one table; when the
// library or a symbol is missing, the table records why, is_loaded() is
// false, and require() raises a RuntimeError naming what is missing.
//
// The types are declared here rather than taken from the toolkit's cuda.h so
// that this folder builds the same with and without the toolkit (CI has
// none). They are the driver's ABI: opaque handles, 32-bit enums and a
// 64-bit device pointer, stable across driver versions. Entry points are
// resolved by their versioned names (cuMemAlloc_v2, ...) exactly as cuda.h's
// macros spell them, so the same code is called as if it were linked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace ignis::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUstreamCaptureMode = int;
using CUstreamCaptureStatus = int;

// The few enum values ignis uses (cuda.h's names).
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;
inline constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900;
inline constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901;
inline constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
inline constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
inline constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_RELAXED = 2;
inline constexpr CUstreamCaptureStatus CU_STREAM_CAPTURE_STATUS_NONE = 0;
inline constexpr CUstreamCaptureStatus CU_STREAM_CAPTURE_STATUS_ACTIVE = 1;
inline constexpr CUstreamCaptureStatus CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
inline constexpr unsigned CU_EVENT_DEFAULT = 0x0;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
inline constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 0x1;
inline constexpr unsigned CU_MEMHOSTALLOC_DEVICEMAP = 0x2;

// X(name, symbol, signature): every entry point ignis calls. `symbol` is the
// name exported by libcuda (cuda.h maps the unversioned names onto it).
#define IGNIS_CUDA_DRIVER_FUNCTIONS(X)                                                        \
  X(cuInit, "cuInit", CUresult(unsigned))                                                      \
  X(cuDriverGetVersion, "cuDriverGetVersion", CUresult(int*))                                  \
  X(cuGetErrorName, "cuGetErrorName", CUresult(CUresult, const char**))                        \
  X(cuGetErrorString, "cuGetErrorString", CUresult(CUresult, const char**))                    \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult(int*))                                      \
  X(cuDeviceGet, "cuDeviceGet", CUresult(CUdevice*, int))                                      \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult(char*, int, CUdevice))                        \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult(size_t*, CUdevice))                      \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult(int*, int, CUdevice))               \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult(CUcontext*, CUdevice))      \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult(CUdevice))             \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult(CUcontext))                                   \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", CUresult(CUcontext*))                                  \
  X(cuCtxSynchronize, "cuCtxSynchronize", CUresult())                                          \
  X(cuMemGetInfo, "cuMemGetInfo_v2", CUresult(size_t*, size_t*))                               \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult(CUdeviceptr*, size_t))                               \
  X(cuMemFree, "cuMemFree_v2", CUresult(CUdeviceptr))                                          \
  X(cuMemHostAlloc, "cuMemHostAlloc", CUresult(void**, size_t, unsigned))                      \
  X(cuMemFreeHost, "cuMemFreeHost", CUresult(void*))                                           \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",                                                 \
    CUresult(CUdeviceptr, const void*, size_t, CUstream))                                      \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",                                                 \
    CUresult(void*, CUdeviceptr, size_t, CUstream))                                            \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2",                                                 \
    CUresult(CUdeviceptr, CUdeviceptr, size_t, CUstream))                                      \
  X(cuMemsetD8Async, "cuMemsetD8Async", CUresult(CUdeviceptr, unsigned char, size_t, CUstream)) \
  X(cuStreamCreate, "cuStreamCreate", CUresult(CUstream*, unsigned))                           \
  X(cuStreamDestroy, "cuStreamDestroy_v2", CUresult(CUstream))                                 \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUresult(CUstream))                            \
  X(cuStreamQuery, "cuStreamQuery", CUresult(CUstream))                                        \
  X(cuStreamWaitEvent, "cuStreamWaitEvent", CUresult(CUstream, CUevent, unsigned))             \
  X(cuEventCreate, "cuEventCreate", CUresult(CUevent*, unsigned))                              \
  X(cuEventDestroy, "cuEventDestroy_v2", CUresult(CUevent))                                    \
  X(cuEventRecord, "cuEventRecord", CUresult(CUevent, CUstream))                               \
  X(cuEventSynchronize, "cuEventSynchronize", CUresult(CUevent))                               \
  X(cuEventQuery, "cuEventQuery", CUresult(CUevent))                                           \
  X(cuEventElapsedTime, "cuEventElapsedTime_v2", CUresult(float*, CUevent, CUevent))           \
  X(cuModuleLoadData, "cuModuleLoadData", CUresult(CUmodule*, const void*))                    \
  X(cuModuleGetFunction, "cuModuleGetFunction", CUresult(CUfunction*, CUmodule, const char*))  \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", CUresult(CUfunction, int, int))                  \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", \
    CUresult(int*, CUfunction, int, size_t))                                                   \
  X(cuLaunchKernel, "cuLaunchKernel",                                                          \
    CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
             CUstream, void**, void**))                                                        \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", CUresult(CUstream, CUstreamCaptureMode))  \
  X(cuStreamEndCapture, "cuStreamEndCapture", CUresult(CUstream, CUgraph*))                    \
  X(cuStreamIsCapturing, "cuStreamIsCapturing", CUresult(CUstream, CUstreamCaptureStatus*))    \
  X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode",                    \
    CUresult(CUstreamCaptureMode*))                                                            \
  X(cuGraphInstantiate, "cuGraphInstantiateWithFlags",                                         \
    CUresult(CUgraphExec*, CUgraph, unsigned long long))                                       \
  X(cuGraphLaunch, "cuGraphLaunch", CUresult(CUgraphExec, CUstream))                           \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", CUresult(CUgraphExec))                           \
  X(cuGraphDestroy, "cuGraphDestroy", CUresult(CUgraph))

struct DriverApi {
#define IGNIS_CUDA_DECLARE(name, symbol, sig) std::add_pointer_t<sig> name = nullptr;
  IGNIS_CUDA_DRIVER_FUNCTIONS(IGNIS_CUDA_DECLARE)
#undef IGNIS_CUDA_DECLARE

  // Why the driver cannot be used (empty when loaded): the library that did
  // not open or the symbol that is missing, or that ignis was built without
  // CUDA.
  std::string unavailable;
  // cuInit's result when the library loaded (a driver with no GPU fails here).
  CUresult init_result = CUDA_SUCCESS;

  bool is_loaded() const { return unavailable.empty(); }
};

// The process-wide table, loaded (and cuInit called) on first use; never
// throws.
const DriverApi& driver();

// driver() when usable (library loaded and cuInit succeeded), else a
// RuntimeError saying why: "ignis was built without CUDA", the library or
// symbol that is missing, or the cuInit error (e.g. "no CUDA GPUs are
// available" when the driver finds none).
const DriverApi& require_driver();

// Raises a RuntimeError for a failed driver call: "CUDA error:
// CUDA_ERROR_X (the driver's description) in `what`". An out-of-memory is
// an OutOfMemoryError (core/out_of_memory.h).
[[noreturn]] void throw_driver_error(CUresult r, const char* what);

// Where a toolkit library loaded at run time (NVRTC, cuBLASLt) is looked
// for: $<env_var>, then each name on the loader's path, then under
// $CUDA_HOME, $CUDA_PATH and /usr/local/cuda (lib64).
std::vector<std::string> toolkit_library_candidates(const char* env_var,
                                                    const std::vector<const char*>& names);

}  // namespace ignis::cuda

// Calls a driver entry point and raises on failure:
//   IGNIS_CU(cuMemAlloc(&p, n));
#define IGNIS_CU(call)                                                          \
  do {                                                                          \
    ::ignis::cuda::CUresult ignis_cu_r_ = ::ignis::cuda::driver().call;         \
    if (__builtin_expect(ignis_cu_r_ != ::ignis::cuda::CUDA_SUCCESS, 0))        \
      ::ignis::cuda::throw_driver_error(ignis_cu_r_, #call);                    \
  } while (0)

// Host emulation of the eager CUDA kernels: their CUDA C++ compiled as host C++
// for fake_libcuda.cpp. Blocks have one thread and the launcher walks the grid
// (the kernels are written for any block shape; warp shuffles only run with
// 32-thread rows and are never reached here).
#include <cstdint>
#include <cstring>
#define __device__
#define __global__
#define __launch_bounds__(...)
#define __grid_constant__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct ig_dim3 { unsigned x, y, z; };
static ig_dim3 blockIdx{0, 0, 0}, threadIdx{0, 0, 0}, blockDim{1, 1, 1}, gridDim{1, 1, 1};
static inline void __syncthreads() {}
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
template <class T> static inline T __shfl_down_sync(unsigned, T v, int) { return v; }
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int) { return v; }
template <class T> static inline T __shfl_sync(unsigned, T v, int) { return v; }
// Atomics: the host walks the grid on one thread, so plain read-modify-writes.
static inline float atomicAdd(float* p, float v) { float o = *p; *p = o + v; return o; }
static inline double atomicAdd(double* p, double v) { double o = *p; *p = o + v; return o; }
static inline int atomicAdd(int* p, int v) { int o = *p; *p = int(unsigned(o) + unsigned(v)); return o; }
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  unsigned long long o = *p; *p = o + v; return o;
}
static inline unsigned atomicAdd(unsigned* p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
static inline void __threadfence() {}
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline unsigned atomicCAS(unsigned* p, unsigned expected, unsigned v) {
  unsigned o = *p; if (o == expected) *p = v; return o;
}

// Host emulation of the eager CUDA kernels: their CUDA C++ compiled as host C++
// (one "thread" runs the whole grid-stride loop), for fake_libcuda.cpp.
#include <cstdint>
#include <cstring>
#define __device__
#define __global__
#define __forceinline__ inline
struct ig_dim3 { unsigned x; };
static ig_dim3 blockIdx{0}, threadIdx{0}, blockDim{1}, gridDim{1};
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }

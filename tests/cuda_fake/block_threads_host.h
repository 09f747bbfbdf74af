// Runs generated CUDA kernels on the host with real threads per block, so
// that what the fake driver (kernel_host.h: one thread a block) cannot
// reach is exercised without a GPU: the compiler's block reductions across
// lanes and warps of any blockDim, and the barriers between a row kernel's
// passes (tests/python/test_cuda_compiler.py). Blocks run one after another;
// the threads of a block run at once, meeting at a std::barrier for each
// __syncthreads(). A warp shuffle is emulated block-wide (every thread of
// the block must call it, as ig_block_reduce's do): a lane reading past its
// warp or past the block gets its own value back, as on the GPU; a lane
// that exists but is outside the caller's mask is read anyway, so a kernel
// that forgets to ignore it double-counts here.
#include <barrier>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct ig_dim3 { unsigned x, y, z; };
static thread_local ig_dim3 threadIdx{0, 0, 0};
static ig_dim3 blockIdx{0, 0, 0}, blockDim{1, 1, 1}, gridDim{1, 1, 1};
static std::barrier<>* ig_block_barrier = nullptr;
static inline void __syncthreads() { ig_block_barrier->arrive_and_wait(); }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static uint64_t ig_shuffle_slots[1024];
template <class T> static inline T __shfl_down_sync(unsigned, T v, int o) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "emulated shuffles move at most 8 bytes");
  memcpy(&ig_shuffle_slots[threadIdx.x], &v, sizeof(T));
  __syncthreads();
  const unsigned lane = threadIdx.x & 31u, src = threadIdx.x + unsigned(o);
  T r = v;
  if (lane + unsigned(o) < 32u && src < blockDim.x) memcpy(&r, &ig_shuffle_slots[src], sizeof(T));
  __syncthreads();
  return r;
}

// Launches kernel(args...) on `grid` blocks of `threads` threads.
template <class... P, class... A>
void ig_launch(void (*kernel)(P...), unsigned grid, unsigned threads, A... args) {
  gridDim = {grid, 1, 1};
  blockDim = {threads, 1, 1};
  for (unsigned b = 0; b < grid; ++b) {
    std::barrier<> barrier(threads);
    ig_block_barrier = &barrier;
    blockIdx = {b, 0, 0};
    std::vector<std::thread> team;
    for (unsigned t = 0; t < threads; ++t)
      team.emplace_back([=] {
        threadIdx = {t, 0, 0};
        kernel(args...);
      });
    for (std::thread& t : team) t.join();
  }
}

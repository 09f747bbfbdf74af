// Runs generated CUDA kernels on the host with real threads per block, so
// that what the fake driver (kernel_host.h: one thread a block) cannot
// reach is exercised without a GPU: the compiler's block reductions across
// lanes and warps of any blockDim, and the barriers between a row kernel's
// passes (tests/python/test_cuda_compiler.py); the fake driver runs the
// eager kernels this way when $FAKE_CUDA_BLOCK_THREADS is set (2-D blocks:
// x fastest, warps of 32 consecutive threads, as on a GPU). Blocks run one after another;
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
#define __launch_bounds__(...)
#define __grid_constant__
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
// The thread's index in its block (x fastest), and its lane in its warp.
static inline unsigned ig_linear_thread() { return threadIdx.y * blockDim.x + threadIdx.x; }
// Every thread of the block publishes v, then reads the slot of the lane
// `src_lane(lane)` of its own warp (its own value when that lane is past
// the warp or the block).
template <class T, class F> static inline T ig_shuffle(T v, F src_lane) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "emulated shuffles move at most 8 bytes");
  const unsigned me = ig_linear_thread(), threads = blockDim.x * blockDim.y;
  memcpy(&ig_shuffle_slots[me], &v, sizeof(T));
  __syncthreads();
  const unsigned lane = me & 31u, from = src_lane(lane), src = (me & ~31u) + from;
  T r = v;
  if (from < 32u && src < threads) memcpy(&r, &ig_shuffle_slots[src], sizeof(T));
  __syncthreads();
  return r;
}
template <class T> static inline T __shfl_down_sync(unsigned, T v, int o) {
  return ig_shuffle(v, [o](unsigned lane) { return lane + unsigned(o); });
}
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int o) {
  return ig_shuffle(v, [o](unsigned lane) { return lane ^ unsigned(o); });
}
template <class T> static inline T __shfl_sync(unsigned, T v, int src) {
  return ig_shuffle(v, [src](unsigned) { return unsigned(src); });
}

// Launches kernel(args...) on a grid of gx x gy blocks of bx x by threads.
template <class... P, class... A>
void ig_launch_2d(void (*kernel)(P...), unsigned gx, unsigned gy, unsigned bx, unsigned by,
                  A... args) {
  gridDim = {gx, gy, 1};
  blockDim = {bx, by, 1};
  const unsigned threads = bx * by;
  for (unsigned y = 0; y < gy; ++y)
    for (unsigned b = 0; b < gx; ++b) {
      std::barrier<> barrier(threads);
      ig_block_barrier = &barrier;
      blockIdx = {b, y, 0};
      std::vector<std::thread> team;
      for (unsigned t = 0; t < threads; ++t)
        team.emplace_back([=] {
          threadIdx = {t % bx, t / bx, 0};
          kernel(args...);
        });
      for (std::thread& t : team) t.join();
    }
}

// Launches kernel(args...) on `grid` blocks of `threads` threads.
template <class... P, class... A>
void ig_launch(void (*kernel)(P...), unsigned grid, unsigned threads, A... args) {
  ig_launch_2d(kernel, grid, 1, threads, 1, args...);
}

// Runs generated CUDA kernels on the host with real threads per block, so
// that what the fake driver (kernel_host.h: one thread a block) cannot
// reach is exercised without a GPU: the compiler's block reductions across
// lanes and warps of any blockDim, and the barriers between a row kernel's
// passes (tests/python/test_cuda_compiler.py); the fake driver runs the
// eager kernels this way when $FAKE_CUDA_BLOCK_THREADS is set (2-D blocks:
// x fastest, warps of 32 consecutive threads, as on a GPU). Blocks run one
// after another; the threads of a block run at once, meeting at a
// std::barrier for each __syncthreads(). Warp shuffles are emulated per
// warp (the warp's lanes meet at a barrier of their own; every lane of the
// warp must call, as on a GPU with a full mask): a lane reading past its
// warp or past the block gets its own value back, as on the GPU; a lane
// that exists but is outside the caller's mask is read anyway, so a kernel
// that forgets to ignore it double-counts here.
//
// The fake driver (fake_libcuda.cpp) also runs the kernels whose source says
// IG_NEEDS_BLOCK_THREADS (the flash-attention kernels) with this header,
// through ig_launch_blocks, which runs a block's threads as fibers on one OS
// thread (a barrier switches to the next fiber). The tensor cores' mma.sync
// m16n8k16 and ldmatrix are emulated per warp, each lane handing over its
// registers and reading the others' by the instruction's documented layout
// (ig_host_mma), so a kernel that puts a value in the wrong lane or
// register computes garbage here too; so is Hopper's wgmma per warpgroup,
// reading shared memory through its descriptors and swizzle
// (ig_host_wgmma).
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <ucontext.h>
#include <vector>
#define IG_HOST_EMULATION 1
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
// ig_launch_blocks runs a block's threads as fibers on the calling thread
// instead (ucontext: a barrier is a switch to the next fiber, not a wake-up
// of an OS thread, so thousands of barriers a block stay cheap).
struct IgFiberBarrier { unsigned count = 0, arrived = 0; uint64_t gen = 0; };
static bool ig_fibers = false;
static IgFiberBarrier ig_fiber_block, ig_fiber_warps[32], ig_fiber_warpgroups[8];
static ucontext_t ig_fiber_main;
static ucontext_t* ig_fiber_ctx = nullptr;
static unsigned ig_fiber_cur = 0;
static inline void ig_fiber_wait(IgFiberBarrier& b) {
  const uint64_t gen = b.gen;
  if (++b.arrived == b.count) {
    b.arrived = 0;
    ++b.gen;
    return;
  }
  while (b.gen == gen) swapcontext(&ig_fiber_ctx[ig_fiber_cur], &ig_fiber_main);
}
static inline void __syncthreads() {
  if (ig_fibers) ig_fiber_wait(ig_fiber_block);
  else ig_block_barrier->arrive_and_wait();
}
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
// The thread's index in its block (x fastest).
static inline unsigned ig_linear_thread() { return threadIdx.y * blockDim.x + threadIdx.x; }

// The warps of the running block, each meeting at its own barrier.
static std::barrier<>* ig_warp_barriers[32];
static inline void ig_warp_sync() {
  if (ig_fibers) ig_fiber_wait(ig_fiber_warps[ig_linear_thread() / 32]);
  else ig_warp_barriers[ig_linear_thread() / 32]->arrive_and_wait();
}
static uint64_t ig_warp_slots[1024];
// Every lane of the warp publishes v, then reads the slot of lane
// `src_lane(lane)` of its own warp (its own value when that lane is past
// the warp or the block).
template <class T, class F> static inline T ig_shuffle(T v, F src_lane) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "emulated shuffles move at most 8 bytes");
  const unsigned me = ig_linear_thread(), threads = blockDim.x * blockDim.y;
  memcpy(&ig_warp_slots[me], &v, sizeof(T));
  ig_warp_sync();
  const unsigned lane = me & 31u, from = src_lane(lane), src = (me & ~31u) + from;
  T r = v;
  if (from < 32u && src < threads) memcpy(&r, &ig_warp_slots[src], sizeof(T));
  ig_warp_sync();
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
// Blocks run one at a time, but the threads of one block do race: a float
// add is a compare-and-swap loop on its bits (W, the same width).
template <class T, class W> static inline T ig_host_atomic_add(T* p, T v) {
  W* w = reinterpret_cast<W*>(p);
  W cur = __atomic_load_n(w, __ATOMIC_RELAXED), next;
  T old;
  do {
    memcpy(&old, &cur, sizeof(T));
    const T n = old + v;
    memcpy(&next, &n, sizeof(T));
  } while (!__atomic_compare_exchange_n(w, &cur, next, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  return old;
}
static inline float atomicAdd(float* p, float v) { return ig_host_atomic_add<float, uint32_t>(p, v); }
static inline double atomicAdd(double* p, double v) { return ig_host_atomic_add<double, uint64_t>(p, v); }
static inline unsigned atomicAdd(unsigned* p, unsigned v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline int atomicAdd(int* p, int v) {  // wraps, as the GPU's does
  return int(__atomic_fetch_add(reinterpret_cast<unsigned*>(p), unsigned(v), __ATOMIC_SEQ_CST));
}
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline unsigned atomicCAS(unsigned* p, unsigned expected, unsigned v) {
  __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;  // the value found: `expected` on success, else the current one
}
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: d += A (16x16) B (16x8)
// for the warp. With g = lane / 4, t = lane % 4, lane holds A's rows g and
// g + 8 at columns 2t, 2t + 1 (registers 0, 1) and 2t + 8, 2t + 9 (2, 3);
// B's column g at rows 2t, 2t + 1 (register 0) and 2t + 8, 2t + 9 (1); C's
// rows g (0, 1) and g + 8 (2, 3) at columns 2t, 2t + 1. Each register
// holds two 16-bit values, the lower column (or row, for B) in its low half.
static inline float ig_host_16bit(uint32_t bits, bool bf16) {
  if (bf16) return __uint_as_float(bits << 16);
  const uint32_t sign = (bits & 0x8000u) << 16, exp = (bits >> 10) & 0x1f, man = bits & 0x3ff;
  if (exp == 0) {
    const float v = float(man) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return __uint_as_float(sign | 0x7f800000u | (man << 13));
  return __uint_as_float(sign | ((exp + 112) << 23) | (man << 13));
}
static uint32_t ig_mma_slots[1024][6];
static inline void ig_host_mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                               bool bf16) {
  uint32_t* mine = ig_mma_slots[ig_linear_thread()];
  for (int i = 0; i < 4; ++i) mine[i] = a[i];
  mine[4] = b[0];
  mine[5] = b[1];
  ig_warp_sync();
  const unsigned base = ig_linear_thread() & ~31u, lane = ig_linear_thread() & 31u;
  auto half = [&](unsigned l, int reg, int k) {
    return ig_host_16bit((ig_mma_slots[base + l][reg] >> (16 * (k & 1))) & 0xffffu, bf16);
  };
  for (int e = 0; e < 4; ++e) {
    const int row = int(lane / 4) + (e >= 2 ? 8 : 0), col = 2 * int(lane % 4) + (e & 1);
    float acc = d[e];
    for (int k = 0; k < 16; ++k) {
      const float x = half(unsigned((row % 8) * 4 + (k % 8) / 2), (row >= 8) + 2 * (k >= 8), k);
      const float y = half(unsigned(col * 4 + (k % 8) / 2), 4 + (k >= 8), k);
      acc += x * y;
    }
    d[e] = acc;
  }
  ig_warp_sync();
}

// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 for the warp: lane l
// names the 16-byte row l % 8 of 8x8 tile l / 8. Register i of lane l gets
// tile i's row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1 (low half
// first); with .trans, tile i's column l / 4 at rows 2 (l % 4) and
// 2 (l % 4) + 1 (PTX ISA, "Warp-level matrix load instruction: ldmatrix").
static const uint16_t* ig_ldmatrix_rows[1024];
static inline void ig_host_ldmatrix_x4(uint32_t (&r)[4], const uint16_t* row, bool trans) {
  ig_ldmatrix_rows[ig_linear_thread()] = row;
  ig_warp_sync();
  const unsigned base = ig_linear_thread() & ~31u, lane = ig_linear_thread() & 31u;
  for (unsigned i = 0; i < 4; ++i) {
    uint16_t lo, hi;
    if (trans) {
      lo = ig_ldmatrix_rows[base + i * 8 + 2 * (lane % 4)][lane / 4];
      hi = ig_ldmatrix_rows[base + i * 8 + 2 * (lane % 4) + 1][lane / 4];
    } else {
      const uint16_t* src = ig_ldmatrix_rows[base + i * 8 + lane / 4];
      lo = src[2 * (lane % 4)];
      hi = src[2 * (lane % 4) + 1];
    }
    r[i] = uint32_t(lo) | (uint32_t(hi) << 16);
  }
  ig_warp_sync();
}
// cp.async.cg.shared.global [dst], [src], 16, src_bytes: src_bytes bytes
// copied, the rest of the 16 zero-filled. The copy is held back until the
// thread's cp.async.wait_group 0 (ig_host_cp_async_wait), so a kernel that
// reads a tile before waiting, or whose wait lands while another warp still
// reads the tile (no barrier between), reads the wrong values here too.
struct IgPendingCopy { void* dst; const void* src; int bytes; };
static std::vector<IgPendingCopy> ig_pending_copies[1024];
static inline void ig_host_cp_async16(void* dst, const void* src, int src_bytes) {
  ig_pending_copies[ig_linear_thread()].push_back({dst, src, src_bytes});
}
static inline void ig_host_cp_async_wait() {
  for (const IgPendingCopy& c : ig_pending_copies[ig_linear_thread()]) {
    memset(c.dst, 0, 16);
    memcpy(c.dst, c.src, size_t(c.bytes));
  }
  ig_pending_copies[ig_linear_thread()].clear();
}

// Hopper's warpgroup MMA (wgmma.mma_async, m64nNk16, float accumulation)
// for the 128 threads of a warpgroup, issued and finished at once (the
// fence, commit and wait are no-ops here). Operands in shared memory are
// named by the instruction's 64-bit descriptor, in the 128-byte swizzle
// only (mode 1): start address, leading byte offset (between 64-column
// atoms of an MN-major operand), stride byte offset (between 8-row groups),
// all in 16-byte units, and the swizzle XORs address bits 4-6 with bits
// 7-9. Shared addresses are offsets into ig_host_dynamic_shared (the
// running block's dynamic shared memory; blocks run one at a time). The
// accumulator of lane l of warp w is rows 16w + l/4 and + 8, columns
// 2(l%4), +1 of every 8-column tile (4 registers a tile, as mma.sync's C);
// A from registers (the RS form) is mma.sync's A layout per warp.
alignas(1024) static unsigned char ig_host_dynamic_shared[232 * 1024];
static inline void ig_warpgroup_sync() {
  ig_fiber_wait(ig_fiber_warpgroups[ig_linear_thread() / 128]);
}
static inline float ig_host_smem_16bit(uint32_t addr, bool bf16) {
  const uint32_t a = addr ^ (((addr >> 7) & 7u) << 4);
  uint16_t v;
  memcpy(&v, ig_host_dynamic_shared + a, 2);
  return ig_host_16bit(v, bf16);
}
// Element (row, k) of a K-major operand (rows of 128 bytes) or (k, col) of
// an MN-major one (k rows of 128 bytes, 64 columns an atom).
static inline uint32_t ig_host_desc_kmajor(uint64_t desc, int row, int k) {
  const uint32_t start = uint32_t(desc & 0x3fff) << 4, sbo = uint32_t((desc >> 32) & 0x3fff) << 4;
  return start + uint32_t(row / 8) * sbo + uint32_t(row % 8) * 128 + uint32_t(k) * 2;
}
static inline uint32_t ig_host_desc_mnmajor(uint64_t desc, int k, int col) {
  const uint32_t start = uint32_t(desc & 0x3fff) << 4, lbo = uint32_t((desc >> 16) & 0x3fff) << 4,
                 sbo = uint32_t((desc >> 32) & 0x3fff) << 4;
  return start + uint32_t(col / 64) * lbo + uint32_t(k / 8) * sbo + uint32_t(k % 8) * 128 +
         uint32_t(col % 64) * 2;
}
struct IgWgmmaSlot { float* d; uint32_t a[4]; };
static IgWgmmaSlot ig_wgmma_slots[1024];
// d (n / 2 floats a thread) = (accumulate ? d : 0) + A B. A: `a_desc`
// (shared memory: K-major, or MN-major with a_trans: its k are the rows of
// 128 bytes) or, when a_regs is given, registers; B: `b_desc`, K-major
// (b_trans false: B's columns are the rows of 128 bytes) or MN-major
// (b_trans: B's rows are).
static inline void ig_host_wgmma(float* d, int n, uint64_t a_desc, const uint32_t* a_regs,
                                 uint64_t b_desc, bool b_trans, bool accumulate, bool bf16,
                                 bool a_trans = false) {
  const unsigned me = ig_linear_thread(), base = me & ~127u;
  ig_wgmma_slots[me].d = d;
  if (a_regs) memcpy(ig_wgmma_slots[me].a, a_regs, 16);
  if ((uint64_t(b_desc) >> 62) != 1 || (!a_regs && (a_desc >> 62) != 1)) __builtin_trap();
  ig_warpgroup_sync();
  if (me == base) {
    std::vector<float> av(64 * 16), bv(size_t(16) * n);
    for (int r = 0; r < 64; ++r)
      for (int k = 0; k < 16; ++k) {
        if (a_regs) {
          const int rr = r % 16, lane = (rr % 8) * 4 + (k % 8) / 2;
          const uint32_t reg = ig_wgmma_slots[base + (r / 16) * 32 + lane].a[(rr >= 8) + 2 * (k >= 8)];
          av[r * 16 + k] = ig_host_16bit((reg >> (16 * (k & 1))) & 0xffffu, bf16);
        } else {
          av[r * 16 + k] = ig_host_smem_16bit(a_trans ? ig_host_desc_mnmajor(a_desc, k, r)
                                                      : ig_host_desc_kmajor(a_desc, r, k), bf16);
        }
      }
    for (int k = 0; k < 16; ++k)
      for (int c = 0; c < n; ++c)
        bv[size_t(k) * n + c] = ig_host_smem_16bit(
            b_trans ? ig_host_desc_mnmajor(b_desc, k, c) : ig_host_desc_kmajor(b_desc, c, k), bf16);
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < n; ++c) {
        float acc = 0.f;
        for (int k = 0; k < 16; ++k) acc += av[r * 16 + k] * bv[size_t(k) * n + c];
        const int rr = r % 16, lane = (rr % 8) * 4 + (c % 8) / 2;
        float* out = ig_wgmma_slots[base + (r / 16) * 32 + lane].d + 4 * (c / 8) + 2 * (rr >= 8) + (c & 1);
        *out = (accumulate ? *out : 0.f) + acc;
      }
  }
  ig_warpgroup_sync();
}

// Runs body() as a grid of gx x gy blocks of bx threads, one block at a
// time, its threads as fibers switched round robin at every barrier: the
// fake driver's launcher for IG_NEEDS_BLOCK_THREADS kernels.
static void (*ig_fiber_body)(void*) = nullptr;
static void* ig_fiber_arg = nullptr;
static bool* ig_fiber_done = nullptr;
static void ig_fiber_entry() {
  ig_fiber_body(ig_fiber_arg);
  ig_fiber_done[ig_fiber_cur] = true;
}  // returns to uc_link: the scheduler
template <class F> void ig_launch_blocks(unsigned gx, unsigned gy, unsigned bx, F body) {
  constexpr size_t kStack = 256 << 10;
  gridDim = {gx, gy, 1};
  blockDim = {bx, 1, 1};
  std::vector<ucontext_t> ctx(bx);
  std::vector<char> stacks(size_t(bx) * kStack);
  std::unique_ptr<bool[]> done(new bool[bx]);
  ig_fiber_body = [](void* f) { (*static_cast<F*>(f))(); };
  ig_fiber_arg = &body;
  ig_fiber_ctx = ctx.data();
  ig_fiber_done = done.get();
  ig_fibers = true;
  for (unsigned y = 0; y < gy; ++y)
    for (unsigned x = 0; x < gx; ++x) {
      blockIdx = {x, y, 0};
      ig_fiber_block = IgFiberBarrier{bx};
      for (unsigned w = 0; w * 32 < bx; ++w)
        ig_fiber_warps[w] = IgFiberBarrier{bx - w * 32 < 32 ? bx - w * 32 : 32};
      for (unsigned w = 0; w * 128 < bx; ++w)
        ig_fiber_warpgroups[w] = IgFiberBarrier{bx - w * 128 < 128 ? bx - w * 128 : 128};
      for (unsigned t = 0; t < bx; ++t) {
        done[t] = false;
        getcontext(&ctx[t]);
        ctx[t].uc_stack.ss_sp = stacks.data() + size_t(t) * kStack;
        ctx[t].uc_stack.ss_size = kStack;
        ctx[t].uc_link = &ig_fiber_main;
        makecontext(&ctx[t], ig_fiber_entry, 0);
      }
      for (unsigned left = bx; left > 0;)
        for (unsigned t = 0; t < bx; ++t) {
          if (done[t]) continue;
          ig_fiber_cur = t;
          threadIdx = {t, 0, 0};
          swapcontext(&ig_fiber_main, &ctx[t]);
          if (done[t]) --left;
        }
    }
  ig_fibers = false;
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
      std::vector<std::unique_ptr<std::barrier<>>> warps;  // for the shuffles
      for (unsigned w = 0; w * 32 < threads; ++w) {
        const unsigned lanes = threads - w * 32 < 32 ? threads - w * 32 : 32;
        warps.emplace_back(new std::barrier<>(std::ptrdiff_t(lanes)));
        ig_warp_barriers[w] = warps.back().get();
      }
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

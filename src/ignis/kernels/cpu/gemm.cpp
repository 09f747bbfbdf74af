#include "ignis/kernels/cpu/gemm.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#if IGNIS_HAVE_BLAS
#include <cblas.h>
#endif

#include "ignis/core/error.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/nn_util.h"
#include "ignis/kernels/cpu/parallel.h"

namespace ignis::cpu {

namespace {

// One matrix operand: element (i, j) lives at data[i * rs + j * cs].
template <typename T>
struct Mat {
  const T* data;
  int64_t rs, cs;
  T at(int64_t i, int64_t j) const { return data[i * rs + j * cs]; }
};

// c[m, n] (row stride ldc) *= beta; beta == 0 overwrites without reading.
template <typename T>
void scale_rows(T* c, int64_t m, int64_t n, int64_t ldc, T beta) {
  if (beta == T(1)) return;
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) std::fill(row, row + n, T(0));
    else for (int64_t j = 0; j < n; ++j) row[j] = static_cast<T>(row[j] * beta);
  }
}

// ---------------------------------------------------------------------------
// Built-in blocked GEMM (float, double), in the GotoBLAS style: B is packed
// into column strips of NR, A into row strips of MR, and a register-tiled
// micro-kernel multiplies one strip pair. Packing also absorbs any strides,
// so transposed and sliced operands cost nothing extra.
// ---------------------------------------------------------------------------
// The register tile: MR rows of C by NR columns, NR a whole number of
// vectors of the widest the build targets. The accumulators (MR x NR/L
// vectors) plus the B row and a broadcast must fit the register file:
// 32 zmm for AVX-512 (12 x 2 accumulators), 16 ymm for AVX2 (6 x 2).
#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
constexpr int kTileRows = 12;
#elif defined(__AVX__)
constexpr int kVecBytes = 32;
constexpr int kTileRows = 6;
#else
constexpr int kVecBytes = 16;
constexpr int kTileRows = 4;
#endif
template <typename T> struct Tile {
  static constexpr int L = kVecBytes / int(sizeof(T));  // lanes per vector
  static constexpr int NV = 2;                          // vectors per tile row
  static constexpr int MR = kTileRows, NR = NV * L;
};
// Note [GEMM block sizes]: a depth panel of 512 with column blocks of 512
// keeps B's panel at 1 MiB (half an L2) and halves the passes over C and
// the micro-kernel calls of a 256-deep panel. With column blocks of 1024 a
// product with n = 1024 (the MLP's down projection, [1024, 4096] @
// [4096, 1024]) had one column block, so two threads split its rows and
// shared one B packed up front, which each read back from L3: 175-199
// GFLOP/s at 2 threads against 221-231 with two column blocks of 512, each
// thread packing its own B into its L2 (docs/benchmarks.md).
constexpr int64_t kKC = 512;  // depth of one packed panel
constexpr int64_t kBPrefetch = 8;  // depths ahead the micro-kernel prefetches B
constexpr int64_t kMC = 48;   // rows of C per block (a multiple of MR)
constexpr int64_t kNC = 512;  // columns of C per task (a multiple of NR)
static_assert(kMC % kTileRows == 0 && kNC % Tile<float>::NR == 0 && kNC % Tile<double>::NR == 0);

// Transposes an L x L block (L = Tile<T>::L, a vector's lanes): row q of
// the result, dst[q * dld + r] for r < cols, is column q of the rows of src
// (src[r * sld + q]; rows past `rows` read as 0). The rows are loaded whole,
// one vector (a cache line with AVX-512) each, and transposed in registers
// in log2(L) butterfly stages, each a two-source permute per row: the
// strided gather it replaces read an element a cycle, and a transposed B's
// columns 4 or 16 KiB apart (the MLP's weights) map to one L1 set and
// evicted one another (packing was 10-20% of a [192, 1024] @ W^T product).
template <typename T, int B, typename V, typename I>
__attribute__((always_inline)) inline void butterfly(V (&r)[Tile<T>::L]) {
  constexpr int L = Tile<T>::L;
  // Stage B swaps the off-diagonal B x B blocks of each 2B x 2B block.
  I lo, hi;
  for (int l = 0; l < L; ++l) {
    lo[l] = (l & B) ? L + l - B : l;
    hi[l] = (l & B) ? L + l : l + B;
  }
#pragma GCC unroll 16
  for (int i = 0; i < L; ++i) {
    if (i & B) continue;
    const V x = r[i], y = r[i + B];
    r[i] = __builtin_shuffle(x, y, lo);
    r[i + B] = __builtin_shuffle(x, y, hi);
  }
}

template <typename T>
__attribute__((always_inline)) inline void transpose_block(const T* src, int64_t sld, int rows,
                                                           T* dst, int64_t dld, int cols) {
  constexpr int L = Tile<T>::L;
  typedef T V __attribute__((vector_size(kVecBytes)));
  using Int = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  typedef Int I __attribute__((vector_size(kVecBytes)));
  V r[L];
#pragma GCC unroll 16
  for (int i = 0; i < L; ++i) {
    if (i < rows) std::memcpy(&r[i], src + i * sld, sizeof(V));
    else r[i] = V{};
  }
  if constexpr (L >= 16) butterfly<T, 8, V, I>(r);
  if constexpr (L >= 8) butterfly<T, 4, V, I>(r);
  if constexpr (L >= 4) butterfly<T, 2, V, I>(r);
  butterfly<T, 1, V, I>(r);
#pragma GCC unroll 16
  for (int i = 0; i < L; ++i) std::memcpy(dst + i * dld, &r[i], cols * sizeof(T));
}

// Packs rows [i0, i0 + mc) x depth [p0, p0 + kc) of A as MR-row strips,
// zero-padded to a whole strip.
// A column-major A (unit row stride) copies MR contiguous elements per depth;
// a row-major one (unit column stride; packed when its row stride makes its
// rows evict one another, see gemm_builtin) is transposed in L x L blocks.
template <typename T>
void pack_a(const Mat<T>& a, int64_t i0, int64_t p0, int64_t mc, int64_t kc, T* dst) {
  constexpr int MR = Tile<T>::MR, L = Tile<T>::L;
  for (int64_t s = 0; s < mc; s += MR, dst += kc * MR) {
    const int64_t mr = std::min<int64_t>(MR, mc - s);
    const T* src = a.data + (i0 + s) * a.rs + p0 * a.cs;
    int64_t p = 0;
    if (a.rs == 1 && mr == MR) {
      for (p = 0; p < kc; ++p) std::memcpy(dst + p * MR, src + p * a.cs, MR * sizeof(T));
    } else if (a.cs == 1 && mr == MR) {
      for (; p + L <= kc; p += L)
        for (int ib = 0; ib < MR; ib += L) {
          const int w = std::min(L, MR - ib);
          transpose_block<T>(src + ib * a.rs + p, a.rs, w, dst + p * MR + ib, MR, w);
        }
    }
    for (; p < kc; ++p) {
      for (int64_t i = 0; i < mr; ++i) dst[p * MR + i] = src[i * a.rs + p * a.cs];
      for (int64_t i = mr; i < MR; ++i) dst[p * MR + i] = T(0);
    }
  }
}

// Packs strips [t0, t1) (columns [t0 * NR, t1 * NR) of the n) of depth
// [p0, p0 + kc) of B, strip t at dst + (t - t0) * kc * NR, zero-padded to
// whole strips. A row-major B is copied depth by depth across the strips:
// each of its rows is then read as one sequential run of the block's
// columns. Strip by strip, the reads walked down B's columns a row stride
// apart (16 KiB for the MLP's [1024, 4096] weight), one page per depth,
// which the hardware prefetcher does not follow: packing took 8% of a
// [1024, 1024] @ [1024, 4096] product at one thread. A transposed B (unit
// row stride, x @ W^T) is transposed in L x L blocks, strip by strip: each
// of a strip's NR rows of W is then a sequential stream.
template <typename T>
void pack_b_strips(const Mat<T>& b, int64_t p0, int64_t kc, int64_t n, int64_t t0, int64_t t1,
                   T* dst) {
  constexpr int NR = Tile<T>::NR, L = Tile<T>::L;
  const int64_t whole = std::min(t1, n / NR);  // strips [t0, whole) are whole
  int64_t t = t0;
  if (b.cs == 1 && whole > t0) {
    for (int64_t p = 0; p < kc; ++p) {
      const T* src = b.data + (p0 + p) * b.rs + t0 * NR;
      for (int64_t u = 0; u < whole - t0; ++u)
        std::memcpy(dst + u * kc * NR + p * NR, src + u * NR, NR * sizeof(T));
    }
    t = whole;
  }
  for (; t < t1; ++t) {
    T* out = dst + (t - t0) * kc * NR;
    const int64_t j0 = t * NR, nr = std::min<int64_t>(NR, n - j0);
    const T* src = b.data + p0 * b.rs + j0 * b.cs;
    int64_t p = 0;
    if (b.rs == 1 && nr == NR) {
      for (; p + L <= kc; p += L)
        for (int jb = 0; jb < NR; jb += L)
          transpose_block<T>(src + jb * b.cs + p, b.cs, L, out + p * NR + jb, NR, L);
    }
    for (; p < kc; ++p) {
      for (int64_t j = 0; j < nr; ++j) out[p * NR + j] = src[p * b.rs + j * b.cs];
      for (int64_t j = nr; j < NR; ++j) out[p * NR + j] = T(0);
    }
  }
}

// acc[MR][NV] = sum over depth p < kc of A(i, p) * (row p of the B strip,
// ldb apart: NR when packed, B's row stride when read in place); A(i, p) is
// read through `a_at` (packed or in place).
template <typename T, typename V, typename AAt>
__attribute__((always_inline)) inline void tile_product(int64_t kc, AAt a_at,
                                                        const T* __restrict b, int64_t ldb,
                                                        V (&acc)[Tile<T>::MR][Tile<T>::NV]) {
  constexpr int MR = Tile<T>::MR, NV = Tile<T>::NV, L = Tile<T>::L;
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = V{};
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    const T* bp = b + p * ldb;
    // B's strip streams from L2 (gemm_builtin keeps A's strip in L1): ask
    // for its row kBPrefetch depths ahead. Without it the loop stalled on
    // the loads of B; with it and the loop order, [192, 1024] @ [1024, 1024]
    // products took 11-15% less time at one thread (docs/benchmarks.md).
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) __builtin_prefetch(bp + kBPrefetch * ldb + v * L, 0, 3);
    V bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) std::memcpy(&bv[v], bp + v * L, sizeof(V));
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const T av = a_at(i, p);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] += av * bv[v];
    }
  }
}

// c[mr, nr] (+)= alpha * acc.
template <typename T, typename V>
__attribute__((always_inline)) inline void store_tile(const V (&acc)[Tile<T>::MR][Tile<T>::NV],
                                                      T alpha, T* c, int64_t ldc, int64_t mr,
                                                      int64_t nr, bool overwrite) {
  constexpr int MR = Tile<T>::MR, NR = Tile<T>::NR, NV = Tile<T>::NV, L = Tile<T>::L;
  if (mr == MR && nr == NR) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        V cv = alpha * acc[i][v];
        if (!overwrite) {
          V old;
          std::memcpy(&old, c + i * ldc + v * L, sizeof(V));
          cv += old;
        }
        std::memcpy(c + i * ldc + v * L, &cv, sizeof(V));
      }
    }
    return;
  }
  T tile[MR][NR];
  std::memcpy(tile, acc, sizeof tile);
  for (int64_t i = 0; i < mr; ++i)
    for (int64_t j = 0; j < nr; ++j)
      c[i * ldc + j] = overwrite ? alpha * tile[i][j] : c[i * ldc + j] + alpha * tile[i][j];
}

// The micro-kernel over A read in place: rows[i] is row i of the strip.
template <typename T>
void micro_kernel_rows(int64_t kc, const T* const (&rows)[Tile<T>::MR], const T* __restrict b,
                       int64_t ldb, T alpha, T* c, int64_t ldc, int64_t mr, int64_t nr,
                       bool overwrite) {
  typedef T V __attribute__((vector_size(kVecBytes)));
  V acc[Tile<T>::MR][Tile<T>::NV];
  tile_product<T>(kc, [&rows](int i, int64_t p) { return rows[i][p]; }, b, ldb, acc);
  store_tile<T>(acc, alpha, c, ldc, mr, nr, overwrite);
}

// c[mr, nr] (+)= alpha * (packed A strip) @ (packed B strip), the MR x NR
// accumulator held in vector registers (GCC vector extensions: the build's
// widest vectors, with no intrinsics per ISA). Per depth step: NV loads of
// B, MR broadcasts of A, MR * NV fused multiply-adds. `overwrite`: C's old
// values are not read (beta == 0, first depth panel), saving a pass over C.
//
// A comes packed (MR-row strips, lda == 0) or, when it is row-major, in
// place: element (i, p) at a[i * lda + p]. Packing a row-major A is a
// strided gather at about a cycle an element, as much as the multiply
// itself costs when N is small (a [256, 1024] @ [1024, 64] product uses
// each element of A for 4 vector FMAs); read in place, each of the MR rows
// is a sequential stream. Rows past `mr` read row 0 again (discarded).
//
// A column-major A (unit row stride) has the packed layout already, with
// its column stride for MR: `adepth` is the distance between depths, MR
// for a packed strip. Such an A is read in place when the strip is whole
// (a short strip would read past the matrix).
//
// B comes packed (ldb == NR) or, row-major, in place (ldb its row stride).
template <typename T>
void micro_kernel(int64_t kc, const T* __restrict a, int64_t lda, int64_t adepth,
                  const T* __restrict b, int64_t ldb, T alpha, T* c, int64_t ldc, int64_t mr,
                  int64_t nr, bool overwrite) {
  constexpr int MR = Tile<T>::MR, NV = Tile<T>::NV;
  // C's tile is loaded (or written) only after the depth loop: fetch its
  // lines now, so that the misses overlap the multiply.
  for (int64_t i = 0; i < mr; ++i) {
    __builtin_prefetch(c + i * ldc, 1, 3);
    __builtin_prefetch(c + i * ldc + nr - 1, 1, 3);
  }
  if (lda != 0) {
    const T* rows[MR];
    for (int i = 0; i < MR; ++i) rows[i] = a + (i < mr ? i : 0) * lda;
    return micro_kernel_rows<T>(kc, rows, b, ldb, alpha, c, ldc, mr, nr, overwrite);
  }
  typedef T V __attribute__((vector_size(kVecBytes)));
  V acc[MR][NV];
  tile_product<T>(kc, [a, adepth](int i, int64_t p) { return a[p * adepth + i]; }, b, ldb,
                  acc);
  store_tile<T>(acc, alpha, c, ldc, mr, nr, overwrite);
}

// Per-thread packing buffer (Slot tells the A and B buffers apart).
template <typename T, int Slot>
T* thread_buffer(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// How a product is cut into tasks: C into a grid of row ranges (whole
// strips of MR rows, any number of them) and column blocks (whole strips of
// NR columns, at most kNC), and the depth into `slices` (Note [Products
// split over their depth]); a task is one slice of one column block and one
// row range.
struct GemmPlan {
  int64_t mcb = kMC, ncb = kNC;  // rows and columns of C per range and block
  int64_t mblocks = 0, nblocks = 0;
  int64_t slices = 1;   // depth slices
  int64_t slice_depth = 0;  // depths per slice (a multiple of the panel depth)
  int64_t tasks = 0;    // slices x column blocks x row ranges
  int threads = 1;
  // Whether packing B (A) once for all tasks pays for its barrier (Note
  // [Packing once for all tasks]); the operands' layouts decide the rest.
  bool b_once = false, a_once = false;
};

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Note [Products split over their depth]
// A product whose C holds few whole blocks and whose depth is long -- a
// weight gradient dY^T @ X, [128-512, 2048] @ [2048, 128] in the medium
// GPT's backward -- was cut only along C: rows down to MR, so on 16 threads
// each task multiplied a strip of a dozen rows by the whole of B (1 MiB,
// streamed from L3 by every task: 6 flops a byte of B). Such products are
// cut along the depth as well: each slice of the depth (kSliceMinDepth or
// more, whole panels, so shared packings keep their layout) is a set of
// tasks of its own, accumulating its part of the sum in a buffer of its own
// (slice 0 in C), and a last pass adds the buffers into C, a run of rows at
// a time, and runs the epilogue on the rows it finished. The buffers hold
// (slices - 1) x m x n elements (at most kSliceBufferBytes; C is small here
// by the condition) and are read once.
// Only products that may use several threads are sliced, and the slices
// follow the thread count (enough for two tasks a thread): on one thread the
// buffers and the pass bought nothing and cost 5-8% of such a product's time
// ([128-512, 2048] @ [2048, 128] on this VM). So a sliced product's sum is
// associated differently at different thread counts (float reassociation,
// as for torch's BLAS); unsliced products keep the same bits at any count.
// IGNIS_GEMM_DEPTH_SLICES=0 turns the slices off (for measurements).
constexpr int64_t kSliceMinDepth = 256;
constexpr int64_t kSliceBufferBytes = int64_t(4) << 20;

bool depth_slices_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("IGNIS_GEMM_DEPTH_SLICES");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

// Note [Packing once for all tasks]
// An operand packed once, by all threads before the tasks, saves the copies
// the tasks would each make of it (B once per row range, A once per column
// block), at the price of a barrier: every thread waits for the slowest
// packer before its first task. On the GPU machines' 16-core hosts (virtual
// CPUs) that wait cost more than the copies it saved in small products:
// with B packed by each task, [256, 1024] @ [1024, 64] ran at 809 and 695
// GFLOP/s against 510 and 419 packed once, and the GPT block's 1024 x 64
// products 1.2-1.6x as fast (bench/gemm.py's variants, two runs on an H100
// machine's host, 16 threads). So an operand is packed once only when the
// copies it saves come to more than kBarrierMadds multiply-adds a thread
// (kPackA / kPackB an element, as plan_gemm counts them). One thread packs
// first and multiplies after with no barrier between: there a copy saved
// always pays.
constexpr int64_t kBarrierMadds = int64_t(1) << 20;
bool pack_once_pays(int64_t copies, int64_t elements, int64_t weight, int threads) {
  return copies > 1 &&
         (threads == 1 || (copies - 1) * elements * weight > kBarrierMadds * threads);
}

// Note [Cutting C for the threads]
// After the depth slices (above), C is cut into a grid of row ranges x
// column blocks, each a whole number of register-tile strips, and each
// (slice, range, block) is a task; tasks are dealt to the threads
// dynamically. The grid is the one whose tasks finish soonest: rounds
// (tasks over threads, rounded up) x the largest task's cost per depth,
// counted in multiply-adds: rows x columns, plus what its operands cost to
// bring in -- kPackA for each row of A the task packs (a transposing copy,
// about 0.4 cycles an element, where a multiply-add takes 1/32 of a cycle
// with AVX-512) and kPackB for each column of B (a plain copy, or a read of
// the panel the threads packed together). A tie goes to more tasks, and a
// grid of two tasks a thread or more is taken when it costs at most
// kSlackPercent of the cheapest: with one task a thread, a thread that
// shares its core with another process (a data loader, a compile) holds
// up the whole product, where with two or more the others take over its
// share (1024^3 on 16 threads: 32 tasks of 132 x 256 cost 2% more than 16
// of 132 x 512 when every core is free). Before, rows came in blocks of
// at most kMC (48) dealt as runs: 1024^3 on 16 threads made 22 x 2 blocks
// of 48 x 512 in runs of 3, 16 tasks of which the longest held 144 x 512
// (two held 48 x 512), 9% over an even share; the grid's cheapest is 3%
// over (the last range is short). One thread takes one row range and the
// fewest column blocks (B packed once per column block).
constexpr int64_t kPackA = 12, kPackB = 4;
constexpr int64_t kSlackPercent = 105;

GemmPlan plan_gemm(int64_t m, int64_t n, int64_t depth, int64_t panel, int64_t elem,
                   int threads, int64_t MR, int64_t NR) {
  GemmPlan p;
  const int64_t whole_blocks = ceil_div(m, kMC) * ceil_div(n, kNC);
  const int64_t unit = ceil_div(kSliceMinDepth, panel) * panel;
  const int64_t slices =
      threads > 1 && depth_slices_enabled()
          ? std::min({ceil_div(2 * int64_t(threads), whole_blocks), depth / unit,
                      int64_t(threads), 1 + kSliceBufferBytes / std::max<int64_t>(m * n * elem, 1)})
          : 1;
  p.slice_depth = depth;
  if (slices > 1) {
    p.slice_depth = ceil_div(ceil_div(depth, slices), panel) * panel;
    p.slices = ceil_div(depth, p.slice_depth);
  }
  const int64_t ms = std::max<int64_t>(ceil_div(m, MR), 1);
  const int64_t ns = std::max<int64_t>(ceil_div(n, NR), 1);
  const int64_t widest = kNC / NR;  // strips per column block at most
  const int64_t fewest_cols = ceil_div(ns, widest);
  // Up to four tasks a thread (or a column block), where an even share needs them.
  const int64_t most_tasks =
      threads > 1 ? 4 * std::max(int64_t(threads), p.slices * fewest_cols) : fewest_cols;
  // The cheapest grid, and the cheapest of two tasks a thread or more.
  struct Grid {
    int64_t cost = -1, tasks = 0, rows = 0, cols = 0, mblocks = 0, nblocks = 0;
    void offer(const Grid& g) {
      if (cost < 0 || g.cost < cost || (g.cost == cost && g.tasks > tasks)) *this = g;
    }
  } best, slack;
  // Each loop visits only the counts whose strips per range differ.
  for (int64_t gn = fewest_cols; gn <= ns;) {
    const int64_t cols = ceil_div(ns, gn), nblocks = ceil_div(ns, cols);
    if (p.slices * nblocks > most_tasks) break;
    for (int64_t gm = 1; gm <= ms;) {
      const int64_t rows = ceil_div(ms, gm), mblocks = ceil_div(ms, rows);
      const int64_t tasks = p.slices * nblocks * mblocks;
      if (tasks > most_tasks) break;
      const int64_t cost = ceil_div(tasks, threads) *
                           (rows * MR * cols * NR + kPackA * rows * MR + kPackB * cols * NR);
      const Grid g{cost, tasks, rows, cols, mblocks, nblocks};
      best.offer(g);
      if (threads > 1 && tasks >= 2 * int64_t(threads)) slack.offer(g);
      if (rows == 1) break;
      gm = ceil_div(ms, rows - 1);
    }
    if (cols == 1) break;
    gn = ceil_div(ns, cols - 1);
  }
  const Grid& pick =
      slack.cost >= 0 && slack.cost * 100 <= best.cost * kSlackPercent ? slack : best;
  p.mcb = pick.rows * MR, p.ncb = pick.cols * NR;
  p.mblocks = pick.mblocks, p.nblocks = pick.nblocks;
  p.tasks = p.slices * p.nblocks * p.mblocks;
  p.threads = p.tasks > 1 ? threads : 1;  // a team of all or none (parallel.h)
  p.b_once = p.threads > 1 && pack_once_pays(p.mblocks, depth * n, kPackB, p.threads);
  p.a_once = p.nblocks > p.threads && pack_once_pays(p.nblocks, depth * m, kPackA, p.threads);
  return p;
}

// Depth panels of kKC, or half of it when A is read in place column-major:
// its strip's depths lie a.cs apart, whole cache lines of which only MR
// elements are used, and 512 of them crowded L1 ([512, 2048] @ [2048, 128]
// with A transposed took 1.07-1.09 of the time of 256-deep panels).
constexpr int64_t panel_depth(bool a_columns_in_place) {
  return a_columns_in_place ? kKC / 2 : kKC;
}

// B packed once for all tasks is kept when it fits this many bytes; past
// it the product is large enough that each task packing its own panels
// (into an L2-sized per-thread buffer) costs little beside the multiply.
constexpr int64_t kSharedPackBytes = int64_t(32) << 20;

// c[m, n] (row stride ldc) = beta * c + alpha * a @ b; alpha == 0 reads
// neither a nor b. The work is split into independent tasks (GemmPlan)
// handed out dynamically, each scaling its part of C by beta: no barriers
// between tasks, so a thread that loses its core to another process only
// delays its own tasks. B's depth panels are packed either by each task for
// its own column block, or once, by all threads together, before any task
// runs, when several tasks share a column block and the copies saved pay
// for the barrier (Note [Packing once for all tasks]; with blocks of 12
// rows, a [256, 1024] @ [1024, 64] product on 16 threads once packed all of
// B in each of 22 tasks and ran at 68 GFLOP/s). A is packed by each task for
// its rows, or once, up front as B, when the column blocks outnumber the
// threads (each row would be packed again for every column block) and that
// pays too. When `ep` is set it
// runs on each tile right after the tile's last depth panel, while the tile
// is still in L2.
// `parallel` allows threads; callers already running one product per
// thread pass false.
template <typename T>
void gemm_builtin(int64_t m, int64_t n, int64_t k, T alpha, Mat<T> a, Mat<T> b, T beta, T* c,
                  int64_t ldc, bool parallel, GemmEpilogue ep = nullptr, void* ctx = nullptr) {
  constexpr int MR = Tile<T>::MR, NR = Tile<T>::NR;
  const bool multiply = k > 0 && alpha != T(0);
  // One thread per ~1M multiply-adds (a few microseconds); an element of C
  // to scale or hand to the epilogue counts as 32 (kGrain elements per
  // thread, as elementwise ops).
  const int by_work =
      parallel ? threads_for(m * n * ((multiply ? k : 0) + 32), int64_t(1) << 20) : 1;
  // A product of at most kFewRows rows reads both operands in place: each
  // packed B strip would serve at most six A strips, and each packed A strip
  // little more ([64, 1024] @ [1024, 256]: 0.83 of the packed time at one
  // and two threads, paired).
  constexpr int64_t kFewRows = 64;
  // A row-major A (unit column stride) is read in place by the micro-kernel,
  // unless its row stride puts the MR rows' cache lines into fewer than 4
  // of L1's 64 sets (a 2 or 4 KiB stride, k = 512 or 1024 floats): those
  // rows would evict one another and the B strip, so A is packed instead --
  // except when B has at most two strips: then each packed A strip would
  // serve only one or two micro-kernel calls, and packing cost more than the
  // evictions ([256, 1024] @ [1024, 64]: 0.81 of the packed time at one
  // thread, process CPU time, paired); and except for a product of at most
  // kFewRows rows.
  const int64_t line_stride = (a.rs * int64_t(sizeof(T)) / 64) % 64;
  const bool a_in_place = a.cs == 1 && a.rs >= k &&
                          (std::gcd<int64_t>(line_stride, 64) <= 16 || n <= 2 * NR ||
                           m <= kFewRows);
  // A column-major A (X^T in a weight gradient) is read in place too: its
  // columns are laid out as packed strips are, MR rows of one depth
  // contiguous (micro_kernel's `adepth`). [256, 1024] @ [1024, 64] with A
  // transposed: 207-235 -> 194-199 us at one thread (the packing gone), the
  // small attention backward 0.86-0.94 -> 0.82-0.87 ms (P^T and dS^T read
  // in place).
  const bool a_cols_in_place = !a_in_place && a.rs == 1 && a.cs >= m;
  // Depth panels (panel_depth): half deep when A is read in place column-major.
  const int64_t kcb = panel_depth(a_cols_in_place);
  const GemmPlan plan =
      plan_gemm(m, n, multiply ? k : 0, kcb, int64_t(sizeof(T)), by_work, MR, NR);
  const int64_t mcb = plan.mcb, ncb = plan.ncb, nblocks = plan.nblocks;
  const int64_t tasks = plan.tasks;
  const int64_t slices = plan.slices, slice_depth = plan.slice_depth;
  const int64_t tasks_per_slice = tasks / slices;
  const bool par = plan.threads > 1;
  const int64_t nstrips = ceil_div(n, NR);
  // A row-major B is read in place when packing it would not pay: each
  // task multiplies it into at most two tiles of rows (a recurrent layer's
  // [20, 128] @ [128, 512] per step packed all of W_hh^T for them: 25-27 ->
  // 18 us at one thread; [20, 512] @ [512, 128]: 26 -> 20 us). Only where
  // every strip is whole and B's rows spread over L1's sets (as for A
  // above: rows 2 KiB apart would evict one another, and are packed).
  const int64_t b_line_stride = (b.rs * int64_t(sizeof(T)) / 64) % 64;
  const bool b_in_place = b.cs == 1 && n % NR == 0 &&
                          (std::min(m, mcb) <= 2 * MR || m <= kFewRows) &&
                          std::gcd<int64_t>(b_line_stride, 64) <= 16;
  // B packed once: panel p0 holds all strips of NR columns, strip t at
  // t * kc * NR within it, as a task's own buffer holds its column block's.
  const bool shared_b = multiply && !b_in_place && plan.b_once &&
                        k * nstrips * NR * int64_t(sizeof(T)) <= kSharedPackBytes;
  T* bshared = shared_b ? thread_buffer<T, 2>(static_cast<size_t>(k * nstrips * NR)) : nullptr;
  // A packed once, by all threads together before any task runs, when
  // several column blocks would each pack the same rows again (the MLP's up
  // projection, [1024, 1024] @ W^T with W [4096, 1024], has 8 column blocks,
  // and each of its tasks transposed all 4 MiB of A; on one thread, too,
  // where A's packing was 5% of that product's time). Unlike B's panel,
  // which streams from L2 past every A strip, a packed A strip is read once
  // per column block and then stays in L1, so reading it back from L3 costs
  // little. Panel p0 holds all strips of MR rows, strip s at s * kc * MR
  // within it; row blocks start on a strip (mcb is a multiple of MR).
  const int64_t mstrips = ceil_div(m, MR);
  const bool shared_a = multiply && !a_in_place && !a_cols_in_place && plan.a_once &&
                        k * mstrips * MR * int64_t(sizeof(T)) <= kSharedPackBytes;
  T* ashared = shared_a ? thread_buffer<T, 3>(static_cast<size_t>(k * mstrips * MR)) : nullptr;
  // With beta == 0 the first depth panel overwrites C: no zeroing pass.
  const bool overwrite = beta == T(0) && multiply;

  // The depth slices after the first accumulate into buffers of m x n
  // (Note [Products split over their depth]), added into C at the end.
  T* slice_sums = slices > 1 ? thread_buffer<T, 4>(static_cast<size_t>((slices - 1) * m * n))
                             : nullptr;

  auto run_task = [&](int64_t task) {
    const int64_t slice = task / tasks_per_slice;
    task %= tasks_per_slice;
    const int64_t j0 = (task % nblocks) * ncb, nc = std::min(ncb, n - j0);
    // The task's rows [r0, r1), worked through kMC at a time (the packed
    // A buffer's rows; whole strips, as r0 is).
    const int64_t r0 = (task / nblocks) * mcb, r1 = std::min(r0 + mcb, m);
    // Slice 0 is C's own sum (scaled by beta); the others start at zero.
    T* const out = slice == 0 ? c : slice_sums + (slice - 1) * m * n;
    const int64_t ldo = slice == 0 ? ldc : n;
    const bool first_overwrites = slice == 0 ? overwrite : true;
    if (!first_overwrites) {
      scale_rows(c + r0 * ldc + j0, r1 - r0, nc, ldc, beta);
    }
    if (!multiply) {
      if (ep) ep(ctx, r0, r1, j0, j0 + nc);
      return;
    }
    T* apack = shared_a ? nullptr : thread_buffer<T, 0>(static_cast<size_t>(kMC * kKC));
    T* bpack = shared_b || b_in_place ? nullptr
                                      : thread_buffer<T, 1>(static_cast<size_t>(kKC * kNC));
    const Mat<T> bj{b.data + j0 * b.cs, b.rs, b.cs};
    const int64_t d0 = slice * slice_depth, d1 = std::min(k, d0 + slice_depth);
    for (int64_t p0 = d0; p0 < d1; p0 += kcb) {
      const int64_t kc = std::min(kcb, d1 - p0);
      const bool last_panel = p0 + kc >= k;
      // This column block's strips of the panel, kc * NR apart.
      const T* panel;
      if (b_in_place) {
        panel = bj.data + p0 * b.rs;
      } else if (shared_b) {
        panel = bshared + p0 * nstrips * NR + (j0 / NR) * kc * NR;
      } else {
        pack_b_strips(bj, p0, kc, nc, 0, ceil_div(nc, NR), bpack);
        panel = bpack;
      }
      for (int64_t i0 = r0; i0 < r1; i0 += kMC) {
        const int64_t mc = std::min(kMC, r1 - i0);
        // This row block's packed strips, kc * MR apart.
        const T* ablock = apack;
        if (shared_a) {
          ablock = ashared + p0 * mstrips * MR + i0 * kc;
        } else if (a_cols_in_place) {
          // Only a short last strip is packed (at its place in apack).
          const int64_t whole = mc - mc % MR;
          if (whole < mc) pack_a(a, i0 + whole, p0, mc - whole, kc, apack + whole * kc);
        } else if (!a_in_place) {
          pack_a(a, i0, p0, mc, kc, apack);
        }
        // A strip (MR x kc, at most 12 KiB) stays in L1 while the
        // column block's B strips stream past it from L2, as BLIS orders
        // its loops (the broadcast operand resident, the vector one
        // streamed). The other order kept a B strip (32 KiB) in L1 against
        // the row block's four A strips (48 KiB), and L1 held neither.
        for (int64_t ir = 0; ir < mc; ir += MR) {
          const bool cols = a_cols_in_place && ir + MR <= mc;
          const T* as = a_in_place ? a.data + (i0 + ir) * a.rs + p0
                        : cols     ? a.data + (i0 + ir) + p0 * a.cs
                                   : ablock + ir * kc;
          for (int64_t jr = 0; jr < nc; jr += NR) {
            const T* bs = b_in_place ? panel + jr : panel + (jr / NR) * kc * NR;
            const int64_t nr = std::min<int64_t>(NR, nc - jr);
            micro_kernel<T>(kc, as, a_in_place ? a.rs : 0, cols ? a.cs : MR, bs,
                            b_in_place ? b.rs : NR, alpha,
                            out + (i0 + ir) * ldo + j0 + jr, ldo, std::min<int64_t>(MR, mc - ir),
                            nr, first_overwrites && p0 == d0);
          }
        }
        // The tile is finished: its epilogue runs while it is in cache.
        if (ep && last_panel && slices == 1) ep(ctx, i0, i0 + mc, j0, j0 + nc);
      }
    }
  };

  // Every (panel, strip) of a shared A and every (panel, group of strips)
  // of a shared B, once, before any task runs.
  const int64_t npanels = ceil_div(k, kcb);
  constexpr int64_t kStripsPerUnit = 16;
  const int64_t bgroups = ceil_div(nstrips, kStripsPerUnit);
  const int64_t a_units = shared_a ? npanels * mstrips : 0;
  const int64_t b_units = shared_b ? npanels * bgroups : 0;
  auto pack_unit = [&](int64_t u) {
    if (u < a_units) {
      const int64_t p0 = (u / mstrips) * kcb, s = u % mstrips, kc = std::min(kcb, k - p0);
      pack_a(a, s * MR, p0, std::min<int64_t>(MR, m - s * MR), kc,
             ashared + p0 * mstrips * MR + s * kc * MR);
      return;
    }
    u -= a_units;
    const int64_t p0 = (u / bgroups) * kcb, kc = std::min(kcb, k - p0);
    const int64_t t0 = (u % bgroups) * kStripsPerUnit, t1 = std::min(t0 + kStripsPerUnit, nstrips);
    pack_b_strips(b, p0, kc, n, t0, t1, bshared + p0 * nstrips * NR + t0 * kc * NR);
  };

  // The slices' sums added into C, a run of rows at a time, each run's
  // epilogue right after (the per-tile epilogues are skipped when sliced).
  const int64_t sum_rows = slices > 1 ? ceil_div(m, 2 * int64_t(plan.threads)) : m;
  const int64_t sum_runs = slices > 1 ? ceil_div(m, sum_rows) : 0;
  auto add_slices = [&](int64_t run) {
    const int64_t r0 = run * sum_rows, r1 = std::min(m, r0 + sum_rows);
    for (int64_t i = r0; i < r1; ++i) {
      T* __restrict__ crow = c + i * ldc;
      for (int64_t s = 0; s + 1 < slices; ++s) {
        const T* __restrict__ part = slice_sums + s * m * n + i * n;
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) crow[j] += part[j];
      }
    }
    if (ep) ep(ctx, r0, r1, 0, n);
  };

  if (!par) {
    // No parallel region at all: even a one-thread region allocates and
    // frees an OpenMP team, a cost attention's small per-block products
    // (thousands per call) paid every time.
    for (int64_t u = 0; u < a_units + b_units; ++u) pack_unit(u);
    for (int64_t task = 0; task < tasks; ++task) run_task(task);
    for (int64_t run = 0; run < sum_runs; ++run) add_slices(run);
    return;
  }
#pragma omp parallel num_threads(plan.threads)
  {
    if (a_units + b_units > 0) {
      // The barrier publishes the packed operands.
#pragma omp for schedule(static)
      for (int64_t u = 0; u < a_units + b_units; ++u) pack_unit(u);
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) run_task(task);
    if (sum_runs > 0) {
      // After the barrier that ends the tasks: every slice is complete.
#pragma omp for schedule(static)
      for (int64_t run = 0; run < sum_runs; ++run) add_slices(run);
    }
  }
}

// ---------------------------------------------------------------------------
// Integer products: a direct loop (row of C += a[i, p] * row p of B).
// ---------------------------------------------------------------------------
template <typename T>
void gemm_int(int64_t m, int64_t n, int64_t k, T alpha, Mat<T> a, Mat<T> b, T* c, int64_t ldc,
              bool parallel) {
  auto rows = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      T* crow = c + i * ldc;
      for (int64_t p = 0; p < k; ++p) {
        const T av = static_cast<T>(alpha * a.at(i, p));
        const T* brow = b.data + p * b.rs;
        if (b.cs == 1) {
          for (int64_t j = 0; j < n; ++j) crow[j] = static_cast<T>(crow[j] + av * brow[j]);
        } else {
          for (int64_t j = 0; j < n; ++j) crow[j] = static_cast<T>(crow[j] + av * brow[j * b.cs]);
        }
      }
    }
  };
  if (parallel) parallel_rows(m, n * k, rows);
  else rows(0, m);
}

// ---------------------------------------------------------------------------
// BLAS
// ---------------------------------------------------------------------------
#if IGNIS_HAVE_BLAS
// Which GEMM runs float32/float64 products: the built-in one unless
// IGNIS_GEMM=blas. OpenBLAS keeps its own pthread pool, whose threads spin
// for a while after each call beside OpenMP's team: on the 16-core GPU
// host a small GPT's training step took 65.7 ms compiled and 37.8 ms eager
// with OpenBLAS, 15.4 and 20.3 ms with the built-in GEMM (every OpenMP
// region waited for cores the BLAS threads held), and the built-in GEMM
// was ahead on 6 of bench/gemm.py's 9 shapes there. On one thread OpenBLAS
// is 5-15% faster on the large shapes.
bool env_builtin() {
  const char* e = std::getenv("IGNIS_GEMM");
  if (e && std::strcmp(e, "blas") == 0) return false;
  return true;
}

// OpenBLAS keeps its own thread pool; keep its size equal to ignis's.
void sync_blas_threads() {
  static std::atomic<int> current{0};
  int want = omp_get_max_threads();
  if (current.load(std::memory_order_relaxed) != want) {
    openblas_set_num_threads(want);
    current.store(want, std::memory_order_relaxed);
  }
}

// How BLAS can read a rows x cols operand in place: row-major (NoTrans) or
// the transpose of a row-major matrix (Trans), with leading dimension ld.
bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, CBLAS_TRANSPOSE* trans,
                 int64_t* ld) {
  if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= std::max<int64_t>(cols, 1))) {
    *trans = CblasNoTrans;
    *ld = rows <= 1 ? std::max<int64_t>(cols, 1) : rs;
    return *ld <= INT_MAX;
  }
  if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= std::max<int64_t>(rows, 1))) {
    *trans = CblasTrans;
    *ld = cols <= 1 ? std::max<int64_t>(rows, 1) : cs;
    return *ld <= INT_MAX;
  }
  return false;
}

// A contiguous copy of an operand BLAS cannot read in place.
template <typename T>
Mat<T> dense_copy(const Mat<T>& x, int64_t rows, int64_t cols, std::vector<T>& buf) {
  buf.resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) buf[i * cols + j] = x.at(i, j);
  return {buf.data(), cols, 1};
}

// A and B as BLAS reads them: in place when it can, else a dense copy.
template <typename T>
struct BlasOperands {
  Mat<T> a, b;
  CBLAS_TRANSPOSE ta, tb;
  int64_t lda, ldb;
  std::vector<T> abuf, bbuf;

  BlasOperands(int64_t m, int64_t n, int64_t k, Mat<T> a_, Mat<T> b_) : a(a_), b(b_) {
    if (!blas_layout(m, k, a.rs, a.cs, &ta, &lda)) {
      a = dense_copy(a, m, k, abuf);
      blas_layout(m, k, a.rs, a.cs, &ta, &lda);
    }
    if (!blas_layout(k, n, b.rs, b.cs, &tb, &ldb)) {
      b = dense_copy(b, k, n, bbuf);
      blas_layout(k, n, b.rs, b.cs, &tb, &ldb);
    }
  }
  BlasOperands(const BlasOperands&) = delete;

  // Rows [i0, i0 + rows) of c = beta * c + alpha * a @ b. A layout BLAS can
  // read for all of A's rows also serves any run of them.
  void gemm_rows(int64_t i0, int64_t rows, int64_t n, int64_t k, T alpha, T beta, T* c,
                 int64_t ldc) const {
    const T* ai = a.data + i0 * a.rs;
    const int M = static_cast<int>(rows), N = static_cast<int>(n), K = static_cast<int>(k);
    if constexpr (std::is_same_v<T, float>) {
      cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, ai, static_cast<int>(lda), b.data,
                  static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
    } else {
      cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, ai, static_cast<int>(lda), b.data,
                  static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
    }
  }
};

template <typename T>
void gemm_blas(int64_t m, int64_t n, int64_t k, T alpha, Mat<T> a, Mat<T> b, T beta, T* c,
               int64_t ldc) {
  BlasOperands<T>(m, n, k, a, b).gemm_rows(0, m, n, k, alpha, beta, c, ldc);
}
#endif

bool use_blas() {
#if IGNIS_HAVE_BLAS
  static const bool builtin = env_builtin();
  return !builtin;
#else
  return false;
#endif
}

// One product c[m, n] = beta * c + alpha * a @ b in type T (float/double or
// an integer type). `parallel`: this call may use all threads.
template <typename T>
void gemm_one(int64_t m, int64_t n, int64_t k, T alpha, Mat<T> a, Mat<T> b, T beta, T* c,
              bool parallel) {
  if (m == 0 || n == 0) return;
  if constexpr (std::is_floating_point_v<T>) {
#if IGNIS_HAVE_BLAS
    if (use_blas() && k > 0 && m <= INT_MAX && n <= INT_MAX && k <= INT_MAX) {
      gemm_blas(m, n, k, alpha, a, b, beta, c, n);
      return;
    }
#endif
    gemm_builtin(m, n, k, alpha, a, b, beta, c, n, parallel);
  } else {
    scale_rows(c, m, n, n, beta);
    if (k > 0) gemm_int(m, n, k, alpha, a, b, c, n, parallel);
  }
}

template <typename T>
Mat<T> mat_of(const Tensor& t, int64_t batch) {
  const T* base = static_cast<const T*>(t.data_ptr()) + batch * t.strides()[0];
  return {base, t.strides()[1], t.strides()[2]};
}

// Small products (below OpenBLAS's own threading threshold, about 64^3) run
// one per thread over the batch; larger ones run one after another, each
// using every thread. Only one level of threading is ever active.
constexpr int64_t kSmallProduct = 262144;

template <typename T>
void bmm_typed(const Tensor& out, const Tensor& a, const Tensor& b, T beta, T alpha) {
  const int64_t batch = out.sizes()[0], m = out.sizes()[1], n = out.sizes()[2];
  const int64_t k = a.sizes()[2];
  T* cbase = out.data<T>();
  const bool per_thread = batch > 1 && m * n * k < kSmallProduct;
  auto run = [&](int64_t b0, int64_t b1, bool parallel) {
    for (int64_t i = b0; i < b1; ++i)
      gemm_one<T>(m, n, k, alpha, mat_of<T>(a, i), mat_of<T>(b, i), beta, cbase + i * m * n,
                  parallel);
  };
#if IGNIS_HAVE_BLAS
  if constexpr (std::is_floating_point_v<T>) sync_blas_threads();
#endif
  if (per_thread) {
    parallel_rows(batch, m * n * std::max<int64_t>(k, 1),
                  [&](int64_t b0, int64_t b1) { run(b0, b1, false); });
  } else {
    run(0, batch, true);
  }
}

}  // namespace

bool gemm_uses_blas() { return use_blas(); }

GemmTasks gemm_tasks(int64_t m, int64_t n, int64_t k, bool a_columns, int threads) {
  const GemmPlan p = plan_gemm(m, n, k, panel_depth(a_columns), int64_t(sizeof(float)), threads,
                               Tile<float>::MR, Tile<float>::NR);
  return {p.slices, p.mcb, p.ncb, p.tasks, p.b_once};
}

std::string gemm_choice() {
  const std::string isa = kVecBytes == 64 ? "AVX-512" : kVecBytes == 32 ? "AVX2" : "SSE";
  const std::string builtin =
      "the built-in GEMM (" + std::to_string(Tile<float>::MR) + "x" +
      std::to_string(Tile<float>::NR) + " float32 register tile, " + isa +
      "; an epilogue runs on each tile as it is finished; a small C with a long depth is "
      "split over the depth)";
#if IGNIS_HAVE_BLAS
  const std::string core = openblas_get_corename();
  std::string note;
  if (kVecBytes == 64 && core != "SkylakeX" && core != "Cooperlake" && core != "SapphireRapids")
    note = "; OpenBLAS runs its " + core +
           " kernels without AVX-512 on this CPU (OPENBLAS_CORETYPE=SkylakeX selects them)";
  if (use_blas())
    return "OpenBLAS (core " + core + ", its own threads; an epilogue runs after each panel of C)" +
           ", as IGNIS_GEMM=blas asks" + note;
  return builtin + ", the default (IGNIS_GEMM=blas selects OpenBLAS, core " + core + ")" + note;
#else
  return builtin + ", the build has no OpenBLAS";
#endif
}

template <typename T>
void gemm_serial(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_rs,
                 int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T beta, T* c,
                 int64_t ldc) {
  if (m == 0 || n == 0) return;
  const Mat<T> am{a, a_rs, a_cs}, bm{b, b_rs, b_cs};
#if IGNIS_HAVE_BLAS
  if (use_blas() && k > 0) {
    // Outside a parallel region OpenBLAS may thread a larger block itself:
    // with as many threads as ignis has, not its own default.
    if (!omp_in_parallel()) sync_blas_threads();
    gemm_blas(m, n, k, alpha, am, bm, beta, c, ldc);
    return;
  }
#endif
  gemm_builtin(m, n, k, alpha, am, bm, beta, c, ldc, false);
}
template void gemm_serial<float>(int64_t, int64_t, int64_t, float, const float*, int64_t,
                                 int64_t, const float*, int64_t, int64_t, float, float*,
                                 int64_t);
template void gemm_serial<double>(int64_t, int64_t, int64_t, double, const double*, int64_t,
                                  int64_t, const double*, int64_t, int64_t, double, double*,
                                  int64_t);

namespace {

// The epilogue over rows [i0, i1) of C (n columns) in kMC x kNC blocks, in
// parallel when outside a parallel region; static scheduling gives each
// thread a run of neighbouring blocks.
void epilogue_blocks(GemmEpilogue ep, void* ctx, int64_t i0, int64_t i1, int64_t n) {
  const int64_t rblocks = (i1 - i0 + kMC - 1) / kMC, cblocks = (n + kNC - 1) / kNC;
  const int64_t tasks = rblocks * cblocks;
  const int nt = tasks > 1 ? threads_for((i1 - i0) * n) : 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t r0 = i0 + (t / cblocks) * kMC, j0 = (t % cblocks) * kNC;
    ep(ctx, r0, std::min(r0 + kMC, i1), j0, std::min(j0 + kNC, n));
  }
}

#if IGNIS_HAVE_BLAS
// Rows of C per BLAS panel when an epilogue follows: about 32 MiB of C (a
// share of a server's L3), at least 256 rows. Measured (docs/benchmarks.md,
// bench/gemm_epilogue.cpp): L2-sized panels lose to one BLAS call plus a
// separate epilogue pass, by 10-40% at 32-128 rows (OpenBLAS packs B again
// for every panel, and each call wakes its threads), while 256-512 rows tie
// with it; so MLP-sized products (C up to 16 MiB) run as one panel, and
// only a C larger than a cache is split, so that the epilogue reads each
// panel from L3 instead of memory.
int64_t blas_panel_rows(int64_t n, size_t elem_size) {
  const int64_t bytes = int64_t(32) << 20;
  const int64_t rows = bytes / (n * static_cast<int64_t>(elem_size));
  return std::max<int64_t>(rows, 256);
}
#endif

// kAuto follows bmm_into's choice (use_blas()): where OpenBLAS has AVX-512
// kernels it is still up to ~15% faster at MLP shapes (docs/benchmarks.md),
// more than the 1-16% a separate bias+GELU pass costs, so BLAS stays; where
// the built-in GEMM is the faster one, its per-tile epilogue comes free.
template <typename T>
void gemm_call_typed(const GemmCall& call, GemmPath path, int64_t panel_rows) {
  const int64_t m = call.m, n = call.n, k = call.k;
  if (m == 0 || n == 0) return;
  const T alpha = static_cast<T>(call.alpha), beta = static_cast<T>(call.beta);
  const Mat<T> a{static_cast<const T*>(call.a), call.a_rs, call.a_cs};
  const Mat<T> b{static_cast<const T*>(call.b), call.b_rs, call.b_cs};
  T* c = static_cast<T*>(call.c);
  const bool parallel = !omp_in_parallel();
#if IGNIS_HAVE_BLAS
  const bool blas = path == GemmPath::kBlas || (path == GemmPath::kAuto && use_blas());
  if (blas && k > 0 && alpha != T(0) && m <= INT_MAX && n <= INT_MAX && k <= INT_MAX &&
      call.ldc <= INT_MAX) {
    if (parallel) sync_blas_threads();
    const BlasOperands<T> ops(m, n, k, a, b);
    if (!call.epilogue) {
      ops.gemm_rows(0, m, n, k, alpha, beta, c, call.ldc);
      return;
    }
    const int64_t ph = panel_rows > 0 ? panel_rows : blas_panel_rows(n, sizeof(T));
    for (int64_t i0 = 0; i0 < m; i0 += ph) {
      const int64_t rows = std::min(ph, m - i0);
      ops.gemm_rows(i0, rows, n, k, alpha, beta, c + i0 * call.ldc, call.ldc);
      epilogue_blocks(call.epilogue, call.ctx, i0, i0 + rows, n);
    }
    return;
  }
#else
  (void)path;
  (void)panel_rows;
#endif
  gemm_builtin(m, n, k, alpha, a, b, beta, c, call.ldc, parallel, call.epilogue, call.ctx);
}

void runtime_gemm(const GemmCall* call) { gemm_with_epilogue(*call); }

}  // namespace

void gemm_with_epilogue(const GemmCall& call, GemmPath path, int64_t panel_rows) {
  IGNIS_CHECK(call.m >= 0 && call.n >= 0 && call.k >= 0, "gemm: negative size (", call.m,
              ", ", call.n, ", ", call.k, ")");
  switch (call.dtype) {
    case 0: gemm_call_typed<float>(call, path, panel_rows); return;
    case 1: gemm_call_typed<double>(call, path, panel_rows); return;
    default:
      IGNIS_CHECK(false, "gemm: dtype code ", call.dtype,
                  " is not 0 (float32) or 1 (float64)");
  }
}

void gemm_with_epilogue(const GemmCall& call) { gemm_with_epilogue(call, GemmPath::kAuto); }

const KernelRuntime* kernel_runtime() {
  static const KernelRuntime table{&runtime_gemm};
  return &table;
}

void bmm_into(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& beta,
              const Scalar& alpha) {
  if (out.numel() == 0) return;
  const ScalarType dt = out.dtype();
  switch (dt) {
    case ScalarType::Float32:
      bmm_typed<float>(out, a, b, beta.to<float>(), alpha.to<float>());
      return;
    case ScalarType::Float64:
      bmm_typed<double>(out, a, b, beta.to_double(), alpha.to_double());
      return;
    case ScalarType::Float16:
    case ScalarType::BFloat16: {
      // Compute in float, round once.
      Tensor af = to_dtype_copy(a, ScalarType::Float32);
      Tensor bf = to_dtype_copy(b, ScalarType::Float32);
      Tensor cf = beta.to_double() == 0.0
                      ? empty_tensor(out.sizes(), ScalarType::Float32, out.device())
                      : to_dtype_copy(out, ScalarType::Float32);
      bmm_typed<float>(cf, af, bf, beta.to<float>(), alpha.to<float>());
      copy_into(out, cf);
      return;
    }
    default:
      IGNIS_DISPATCH_INT(dt, "addmm_impl_cpu_", [&] {
        bmm_typed<scalar_t>(out, a, b, beta.to<scalar_t>(), alpha.to<scalar_t>());
      });
  }
}

namespace {
template <typename T>
void dot_typed(const Tensor& out, const Tensor& a, const Tensor& b) {
  using acc_t = opmath_t<T>;
  const int64_t n = a.numel(), sa = a.strides()[0], sb = b.strides()[0];
  const T* x = a.data<T>();
  const T* y = b.data<T>();
#if IGNIS_HAVE_BLAS
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (use_blas() && n <= INT_MAX && sa <= INT_MAX && sb <= INT_MAX) {
      if constexpr (std::is_same_v<T, float>)
        *out.data<T>() = cblas_sdot(int(n), x, int(sa), y, int(sb));
      else
        *out.data<T>() = cblas_ddot(int(n), x, int(sa), y, int(sb));
      return;
    }
  }
#endif
  acc_t s = acc_t(0);
  if (sa == 1 && sb == 1) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) s += static_cast<acc_t>(x[i]) * static_cast<acc_t>(y[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      s += static_cast<acc_t>(x[i * sa]) * static_cast<acc_t>(y[i * sb]);
  }
  *out.data<T>() = static_cast<T>(s);
}
}  // namespace

void dot_into(const Tensor& out, const Tensor& a, const Tensor& b) {
  IGNIS_DISPATCH_NUMERIC(out.dtype(), "dot", [&] { dot_typed<scalar_t>(out, a, b); });
}

}  // namespace ignis::cpu

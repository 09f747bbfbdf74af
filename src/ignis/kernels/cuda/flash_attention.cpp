#include "ignis/kernels/cuda/flash_attention.h"
#include "ignis/kernels/cuda/flash_attention_sm90.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis::cuda {

namespace {

// Note [Flash attention on CUDA]
// The kernels follow FlashAttention-2 (Dao, 2023). Notation: q [L, D],
// k and v [S, D] per batch index; scores s = q k^T * scale; p = softmax(s)
// by rows; out = p v; lse = the row log-sum-exp of s.
//
// Tensor cores. Every product is mma.sync.m16n8k16 (PTX, sm_80+): a warp
// multiplies a 16x16 A tile (row-major, 4 registers of two 16-bit values a
// lane) by a 16x8 B tile (column-major, 2 registers) into a 16x8 float
// accumulator (4 floats a lane). Lane l holds, with g = l / 4 and t = l % 4:
//   A: rows g and g + 8, columns 2t, 2t + 1 and 2t + 8, 2t + 9
//   B: column g, rows 2t, 2t + 1 and 2t + 8, 2t + 9
//   C: rows g and g + 8, columns 2t and 2t + 1
// So a lane owns two rows of every accumulator, and the accumulators of two
// neighbouring 8-column tiles, rounded to 16 bits, are exactly the A
// registers of the next product over those 16 columns: the probabilities
// never leave registers between "s = q k^T" and "out += p v".
//
// Shared memory. Fragments come out of shared tiles by ldmatrix (.x4: four
// 8x8 tiles of 16-bit values a warp instruction, each lane receiving the
// mma layout above; .trans for the operands stored the other way round,
// such as v in p v), and tiles go in by cp.async (16 bytes global -> shared
// without registers, zero-filled past the rows and D). Tile rows are padded
// by 8 values (16 bytes), so the 8 rows of an ldmatrix phase fall in
// distinct banks.
//
// Forward (ig_flash_fwd): a block of 4 warps owns BM query rows of one
// batch index: 128 at head dim 64 (32 a warp, two m16 tiles, so every k and
// v fragment read from shared memory feeds two products), 64 at 128 (16 a
// warp: the registers hold no more). q goes through shared memory into
// registers as A tiles. The block walks the keys in blocks of BN = 64, k and
// v each in one shared tile, pipelined as FlashAttention-2 does: v(j) loads
// while s = q k^T and the softmax of block j run, k(j + 1) while p v(j)
// runs. For each key block: s = q k^T, the mask (keys past S; with
// is_causal, keys after the query: top-left aligned, j <= i, as the CPU's),
// then the online softmax per row:
//   m' = max(m, rowmax(s));  c = exp(m - m');  l = l c + rowsum(exp(s - m'))
//   acc = acc c + exp(s - m') v
// and at the end out = acc / l, lse = m + log l. Scores are kept in log2
// units (scale * log2 e folded in) so every exponential is one exp2. A row's
// max and sum are shared by the 4 lanes of its quad (two xor shuffles).
// With is_causal, key blocks past the block's last query are never
// visited, and only blocks that cross the diagonal or S are masked. Blocks
// are numbered query block major, batch index minor, the last query blocks
// (the longest causal rows) first, so the short ones fill the tail.
//
// Backward: with p recomputed from q, k and the saved lse,
//   dv = p^T dout    dp = dout v^T    D = rowsum(dout * out)
//   ds = p (dp - D)  dq = ds k scale  dk = ds^T q scale
// Pass 1 (ig_flash_bwd_dot): D per row (dq's float32 workspace is zeroed by
// a memset). Pass 2 (ig_flash_bwd): a block owns BN keys of one batch index
// (16 a warp: 128 keys and 8 warps at head dim 64, as FlashAttention-2, 64
// and 4 at 128) and keeps their dk and dv in registers; it walks the query
// blocks BM = 32 rows at a time (what fits 48 KiB of static shared memory
// beside the keys), staging q, dout, lse and D, and computes
// per warp the transposed products (s^T = k q^T, p^T, dv += p^T dout,
// dp^T = v dout^T, ds^T, dk += ds^T q), so that keys are rows and every
// accumulator stays with its warp. ds^T goes to shared memory as it is
// (keys x queries, two queries a 32-bit store) and comes back transposed by
// ldmatrix.trans as the A tiles of dq += ds k, which is added into the
// float32 workspace by atomics (two columns a red.global.add.v2.f32 on
// sm_90; each (query block, key block) pair adds its part once). The next
// query block's q and dout load (cp.async) while dq is computed and added.
// With is_causal, query blocks wholly before the key block are skipped;
// blocks are numbered key block major, the first key blocks (the most
// query blocks) first. Pass 3 rounds the workspace into dq (the copy kernel).
//
// An attn_mask (the _mask variants) is staged tile by tile into shared
// memory beside k (forward: the block's rows x the key block) or with q and
// dout (backward: the query block x the block's keys), as raw elements, by
// cp.async where its rows allow (ig_fa_stage_mask); the scores read it from
// there. A key-padding mask (row stride 0) stages one row a tile. Reading it
// straight from global memory, one scattered load a score in the softmax's
// critical path, made the masked forward 3.4x the unmasked one.
//
// Head dims: the kernels are instantiated for KD = 64 and 128; a smaller D
// pads q, k, v and dout with zero columns up to KD in shared memory and
// registers (which changes no dot product) and writes only D columns.
// Tiles are staged by cp.async when every row and batch offset is 16-byte
// aligned and D % 8 == 0, else element by element with plain loads.
//
// The host emulation (tests/cuda_fake/block_threads_host.h) runs these
// kernels with real threads, emulating mma.sync's and ldmatrix's register
// layouts and the shuffles per warp, and landing each cp.async at the
// thread's wait (so a read before the wait, or a wait with no barrier
// before another warp's read, goes wrong there too): the fake driver checks
// the tiling, masks, pipeline and online rescaling, not a simplified
// version.

// Must match IgFlashOperand / IgFlashParams in kTemplates.
struct FlashOperand {
  const void* p = nullptr;
  int64_t bs[4] = {0, 0, 0, 0};  // batch strides (elements), innermost batch dim last
  int64_t rs = 0;                // row stride
};
struct FlashParams {
  FlashOperand q, k, v, o, g;  // o: the forward's out (written by it, read by the backward);
                               // g: grad_out (backward only)
  float* lse = nullptr;
  float* delta = nullptr;
  float* dq = nullptr;  // float32 workspace [batch, L, D]
  FlashOperand dk, dv;  // any batch and row strides, as o
  int64_t bsz[4] = {1, 1, 1, 1};
  int64_t batch = 0, L = 0, S = 0;
  int32_t D = 0, causal = 0;
  float scale = 0, scale_log2 = 0;
  int32_t vec = 0;  // 16-byte loads allowed
  FlashOperand m;   // attn_mask [batch..., L, S], broadcast by strides
  int64_t mcs = 0;  // its column stride
  int32_t mkind = 0;  // 0 none, 1 bool, 2 the input dtype
  int32_t mvec = 0;   // its tiles staged by cp.async (mask_rows_aligned)
};

constexpr int kFlashThreads = 128;  // the forward's 4 warps

const char* kTemplates = R"CUDA(
// ---- flash attention (kernels/cuda/flash_attention.cpp) ----
// IG_NEEDS_BLOCK_THREADS: the host emulation runs this unit with real threads.
struct IgFlashOperand { const char* p; int64_t bs[4]; int64_t rs; };
struct IgFlashParams {
  IgFlashOperand q, k, v, o, g;
  float* lse; float* delta; float* dq; IgFlashOperand dk, dv;
  int64_t bsz[4];
  int64_t batch, L, S;
  int32_t D, causal;
  float scale, scale_log2;
  int32_t vec;
  IgFlashOperand m;  // attn_mask over [batch, L, S] (m.rs: its row stride, mcs: its column's)
  int64_t mcs;
  int32_t mkind;     // 0 none, 1 bool, 2 the input dtype
  int32_t mvec;      // its tiles staged by cp.async
};
#define IG_FA_INF __uint_as_float(0x7f800000u)

// The tensor-core product d += a b (m16n8k16, float accumulation) and the
// packing of two floats into one register of 16-bit values (lo first).
template <class T> struct IgTensorCore;
template <> struct IgTensorCore<ig_bf16> {
  static __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4],
                                             const uint32_t (&b)[2]) {
#ifdef IG_HOST_EMULATION
    ig_host_mma(d, a, b, true);
#else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
#ifdef IG_HOST_EMULATION
    return uint32_t(ig_bf16_from(lo).x) | (uint32_t(ig_bf16_from(hi).x) << 16);
#else
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#endif
  }
};
template <> struct IgTensorCore<ig_half> {
  static __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4],
                                             const uint32_t (&b)[2]) {
#ifdef IG_HOST_EMULATION
    ig_host_mma(d, a, b, false);
#else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
#ifdef IG_HOST_EMULATION
    return uint32_t(ig_half_from(lo).x) | (uint32_t(ig_half_from(hi).x) << 16);
#else
    uint32_t r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#endif
  }
};

__device__ __forceinline__ float ig_fa_xor(float v, int o) {
  return __shfl_xor_sync(0xffffffffu, v, o);
}
// Max and sum over the 4 lanes of a quad (the lanes sharing a row).
// 2^x by the SFU alone (ex2.approx.ftz: -inf gives 0); exp2f adds a range
// check and two multiplies around it for denormal results, which softmax
// weights do not need, and the forward is bound by instruction issue.
__device__ __forceinline__ float ig_fa_exp2(float x) {
#ifdef IG_HOST_EMULATION
  return exp2f(x);
#else
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#endif
}
template <bool B> struct IgFaBool { static constexpr bool value = B; };

__device__ __forceinline__ float ig_fa_quad_max(float v) {
  v = fmaxf(v, ig_fa_xor(v, 1));
  return fmaxf(v, ig_fa_xor(v, 2));
}
__device__ __forceinline__ float ig_fa_quad_sum(float v) {
  v += ig_fa_xor(v, 1);
  return v + ig_fa_xor(v, 2);
}

// Batch index b's first element of an operand (elements of T).
template <class T>
__device__ __forceinline__ const T* ig_fa_base(const IgFlashOperand& a, const IgFlashParams& p,
                                               int64_t b) {
  int64_t off = 0;
  for (int d = 3; d >= 0; --d) {
    off += (b % p.bsz[d]) * a.bs[d];
    b /= p.bsz[d];
  }
  return reinterpret_cast<const T*>(a.p) + off;
}
// Batch index b's attn_mask: bool (one byte an element) or T.
template <class T>
__device__ __forceinline__ const char* ig_fa_mask_base(const IgFlashParams& p, int64_t b) {
  return p.mkind == 1 ? ig_fa_base<char>(p.m, p, b)
                      : reinterpret_cast<const char*>(ig_fa_base<T>(p.m, p, b));
}
#ifndef IG_HOST_EMULATION
// Shared-memory address of a generic pointer, for ldmatrix and cp.async.
__device__ __forceinline__ uint32_t ig_fa_smem(const void* ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}
#endif

// cp.async: 16 bytes from global to shared memory without passing through
// registers, finished by ig_fa_cp_wait (each stage is one commit group; the
// kernels wait for all of them, wait_group 0, before a barrier and the reads
// behind it). src_bytes 0 fills the 16 bytes with zeros (rows past the end,
// columns past D).
__device__ __forceinline__ void ig_fa_cp16(void* dst, const void* src, int src_bytes) {
#ifdef IG_HOST_EMULATION
  ig_host_cp_async16(dst, src, src_bytes);
#else
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(ig_fa_smem(dst)),
               "l"(src), "r"(src_bytes));
#endif
}
__device__ __forceinline__ void ig_fa_cp_commit() {
#ifndef IG_HOST_EMULATION
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
__device__ __forceinline__ void ig_fa_cp_wait() {
#ifdef IG_HOST_EMULATION
  ig_host_cp_async_wait();
#else
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

// dst[0] += a and dst[1] += b in global memory, one vector reduction on
// sm_90 (red.v2.f32, dst 8-byte aligned), two atomic adds before it.
__device__ __forceinline__ void ig_fa_atomic_add2(float* dst, float a, float b) {
#if !defined(IG_HOST_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst), "f"(a), "f"(b) : "memory");
#else
  atomicAdd(dst, a);
  atomicAdd(dst + 1, b);
#endif
}

// Shared tile rows [r0, r0 + ROWS) of `base` into tile (row stride LD
// 16-bit values), zero past `rows` and D. With `vec` (D % 8 == 0 and every
// row 16-byte aligned) the copy is cp.async and still in flight on return
// (ig_fa_cp_wait, then __syncthreads, before reading it); else plain loads.
template <class T, int ROWS, int KD, int LD>
__device__ __forceinline__ void ig_fa_stage(uint16_t* tile, const T* base, int64_t rs, int64_t r0,
                                            int64_t rows, int D, bool vec) {
  if (vec) {
    constexpr int CH = KD / 8;
    for (int i = threadIdx.x; i < ROWS * CH; i += blockDim.x) {
      const int r = i / CH, c = (i % CH) * 8;
      const bool live = r0 + r < rows && c < D;
      ig_fa_cp16(tile + r * LD + c, live ? base + (r0 + r) * rs + c : base, live ? 16 : 0);
    }
    ig_fa_cp_commit();
  } else {
    for (int i = threadIdx.x; i < ROWS * KD; i += blockDim.x) {
      const int r = i / KD, c = i % KD;
      uint16_t v = 0;
      if (r0 + r < rows && c < D) v = reinterpret_cast<const uint16_t*>(base + (r0 + r) * rs)[c];
      tile[r * LD + c] = v;
    }
  }
}

// The attn_mask's tile of rows [r0, r0 + ROWS) and columns [c0, c0 + BN)
// of batch index b's mask `mb` (ig_fa_mask_base), as raw elements (a bool's
// byte or a T) at a row pitch of MP bytes, so that the softmax reads it from
// shared memory instead of one scattered global load a score. A mask
// broadcast over rows (row stride 0, key padding) stages its first row
// alone. With p.mvec (contiguous columns, every row and batch offset
// 16-byte aligned) the copy is cp.async, finished as ig_fa_stage's is; else
// plain loads. Elements past L or S are left as they are: never read.
template <class T, int ROWS, int BN, int MP>
__device__ __forceinline__ void ig_fa_stage_mask(unsigned char* tile, const char* mb,
                                                 const IgFlashParams& p, int64_t r0, int64_t c0) {
  const int es = p.mkind == 1 ? 1 : 2;
  const int rows = p.m.rs == 0 ? 1 : ROWS;
  if (p.mvec) {
    const int ch = BN * es / 16;  // 16-byte chunks a row
    const int64_t row_bytes = (p.S - c0) * es;
    for (int i = threadIdx.x; i < rows * ch; i += blockDim.x) {
      const int r = i / ch, c = (i % ch) * 16;
      const int64_t left = row_bytes - c;
      const bool live = r0 + r < p.L && left > 0;
      ig_fa_cp16(tile + r * MP + c, live ? mb + ((r0 + r) * p.m.rs + c0) * es + c : mb,
                 live ? (left < 16 ? int(left) : 16) : 0);
    }
    ig_fa_cp_commit();
  } else {
    for (int i = threadIdx.x; i < rows * BN; i += blockDim.x) {
      const int r = i / BN, c = i % BN;
      if (r0 + r >= p.L || c0 + c >= p.S) continue;
      const char* src = mb + ((r0 + r) * p.m.rs + (c0 + c) * p.mcs) * es;
      if (es == 1) tile[r * MP + c] = static_cast<unsigned char>(*src);
      else *reinterpret_cast<uint16_t*>(tile + r * MP + 2 * c) = *reinterpret_cast<const uint16_t*>(src);
    }
  }
}
// The mask's term for local row r, column c of a staged tile, in log2
// units as the scores are: 0 or -inf for a bool mask (True takes part), the
// value times log2 e for a float one.
// Local row r of a staged mask tile (row 0 for a key-padding mask).
template <int MP>
__device__ __forceinline__ const unsigned char* ig_fa_mask_row(const IgFlashParams& p,
                                                               const unsigned char* tile, int r) {
  return tile + (p.m.rs == 0 ? 0 : r) * MP;
}
// The mask's terms in log2 units, as the scores are: a bool mask (MASK 1)
// gives 0 where True (takes part) and -inf elsewhere; a mask of the input's
// dtype (MASK 2) its value times log2 e. Of column c (ig_fa_mask_at) or of
// columns c and c + 1, c even, with one 16- or 32-bit shared load
// (ig_fa_mask_pair).
template <class T, int MASK>
__device__ __forceinline__ float ig_fa_mask_at(const unsigned char* row, int c) {
  if (MASK == 1) return row[c] ? 0.f : -IG_FA_INF;
  return ig_convert<float>(reinterpret_cast<const T*>(row)[c]) * 1.4426950408889634f;
}
template <class T, int MASK>
__device__ __forceinline__ void ig_fa_mask_pair(const unsigned char* row, int c, float& a,
                                                float& b) {
  if (MASK == 1) {
    const uint16_t two = *reinterpret_cast<const uint16_t*>(row + c);
    a = (two & 0xffu) ? 0.f : -IG_FA_INF;
    b = (two >> 8) ? 0.f : -IG_FA_INF;
  } else {
    const uint32_t two = *reinterpret_cast<const uint32_t*>(row + 2 * c);
    T lo, hi;
    lo.x = static_cast<uint16_t>(two & 0xffffu);
    hi.x = static_cast<uint16_t>(two >> 16);
    a = ig_convert<float>(lo) * 1.4426950408889634f;
    b = ig_convert<float>(hi) * 1.4426950408889634f;
  }
}

// ldmatrix .x4: the warp reads four 8x8 tiles of 16-bit values from shared
// memory, lane l naming row l % 8 of tile l / 8 (16 contiguous bytes).
// Register i gets tile i: lane l holds its row l / 4 at columns 2 (l % 4)
// and 2 (l % 4) + 1, or with TRANS its column l / 4 at rows 2 (l % 4) and
// 2 (l % 4) + 1 (the lower index in the low half) -- the mma fragments.
template <bool TRANS>
__device__ __forceinline__ void ig_fa_ldsm(uint32_t (&r)[4], const uint16_t* row) {
#ifdef IG_HOST_EMULATION
  ig_host_ldmatrix_x4(r, row, TRANS);
#else
  if (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(ig_fa_smem(row)));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(ig_fa_smem(row)));
#endif
}
// The A fragment of the 16x16 block at (m0, k0) of a row-major tile A[m][k].
__device__ __forceinline__ void ig_fa_lda(uint32_t (&a)[4], const uint16_t* tile, int LD, int m0,
                                          int k0) {
  const int l = threadIdx.x % 32;
  ig_fa_ldsm<false>(a, tile + (m0 + l % 16) * LD + k0 + (l / 16) * 8);
}
// The same A fragment from a tile holding A transposed (tile[k][m]).
__device__ __forceinline__ void ig_fa_lda_t(uint32_t (&a)[4], const uint16_t* tile, int LD, int m0,
                                            int k0) {
  const int l = threadIdx.x % 32;
  ig_fa_ldsm<true>(a, tile + (k0 + l % 8 + (l / 16) * 8) * LD + m0 + ((l / 8) & 1) * 8);
}
// The B fragments of two 8-column tiles, columns [n0, n0 + 8) in b[0..1] and
// [n0 + 8, n0 + 16) in b[2..3], over rows [k0, k0 + 16): from a tile holding
// B transposed (tile[n][k]: k in q k^T) or B itself (tile[k][n]: v in p v).
__device__ __forceinline__ void ig_fa_ldb_t(uint32_t (&b)[4], const uint16_t* tile, int LD, int k0,
                                            int n0) {
  const int l = threadIdx.x % 32;
  ig_fa_ldsm<false>(b, tile + (n0 + l % 8 + (l / 16) * 8) * LD + k0 + ((l / 8) & 1) * 8);
}
__device__ __forceinline__ void ig_fa_ldb(uint32_t (&b)[4], const uint16_t* tile, int LD, int k0,
                                          int n0) {
  const int l = threadIdx.x % 32;
  ig_fa_ldsm<true>(b, tile + (k0 + l % 16) * LD + n0 + (l / 16) * 8);
}

// Query rows per warp of the forward: 32 (two m16 tiles, so every k and v
// fragment read from shared memory feeds two products, as FlashAttention-2
// does for head dim 64) where the registers allow it, else 16.
template <int KD> struct IgFlashFwdTiles { static constexpr int MW = KD <= 64 ? 2 : 1; };

// MASK: 0 none, 1 a bool attn_mask, 2 one of the input's dtype.
template <class T, int KD, int MASK>
__device__ __forceinline__ void ig_flash_fwd(const IgFlashParams& p) {
  typedef IgTensorCore<T> TC;
  constexpr int MW = IgFlashFwdTiles<KD>::MW;  // m16 tiles per warp
  constexpr int BM = 4 * 16 * MW, BN = 64, LD = KD + 8;
  // k and v tiles, one after the other (q is staged through both at the start).
  __shared__ __align__(16) uint16_t sKV[2 * BN * LD];
  static_assert(BM <= 2 * BN, "q must fit in the k and v tiles");
  uint16_t* const sK = sKV;
  uint16_t* const sV = sKV + BN * LD;
  // The attn_mask's tile of the block's rows and keys, staged with k.
  constexpr int MP = 2 * BN + 16;
  __shared__ __align__(16) unsigned char sM[MASK ? BM * MP : 16];
  // Query blocks major, batch minor: every batch index's longest causal rows
  // (the last query block) are launched first, the short ones fill the tail.
  const int64_t nqb = (p.L + BM - 1) / BM;
  const int64_t b = int64_t(blockIdx.x) % p.batch;
  const int64_t i0 = (nqb - 1 - int64_t(blockIdx.x) / p.batch) * BM;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const T* Q = ig_fa_base<T>(p.q, p, b);
  const T* K = ig_fa_base<T>(p.k, p, b);
  const T* V = ig_fa_base<T>(p.v, p, b);
  const char* const M = MASK ? ig_fa_mask_base<T>(p, b) : nullptr;
  // This lane's rows: r[mi][h] = tile mi's row g (h = 0) or g + 8 (h = 1).
  int64_t rw[MW][2];
#pragma unroll
  for (int mi = 0; mi < MW; ++mi) {
    rw[mi][0] = i0 + (warp * MW + mi) * 16 + g;
    rw[mi][1] = rw[mi][0] + 8;
  }

  // q goes through shared memory into registers (A tiles), then k's first
  // block is staged while nothing waits on it.
  uint32_t qf[MW][KD / 16][4];
  ig_fa_stage<T, BM, KD, LD>(sKV, Q, p.q.rs, i0, p.L, p.D, p.vec);
  ig_fa_cp_wait();
  __syncthreads();
#pragma unroll
  for (int mi = 0; mi < MW; ++mi)
#pragma unroll
    for (int kk = 0; kk < KD / 16; ++kk) ig_fa_lda(qf[mi][kk], sKV, LD, (warp * MW + mi) * 16, kk * 16);
  __syncthreads();  // every warp holds its q: the tiles are free
  float acc[MW][KD / 8][4];
  float m[MW][2], l[MW][2];  // running max (log2 units) and sum per row
#pragma unroll
  for (int mi = 0; mi < MW; ++mi) {
#pragma unroll
    for (int n = 0; n < KD / 8; ++n) acc[mi][n][0] = acc[mi][n][1] = acc[mi][n][2] = acc[mi][n][3] = 0.f;
    m[mi][0] = m[mi][1] = -IG_FA_INF;
    l[mi][0] = l[mi][1] = 0.f;
  }

  // The pipeline: k of block j + 1 loads during p v of block j, and v of
  // block j during q k^T and the softmax of block j (one tile each, as
  // FlashAttention-2 does, so shared memory holds two tiles, not four).
  const int64_t kend = p.causal ? (p.S < i0 + BM ? p.S : i0 + BM) : p.S;
  ig_fa_stage<T, BN, KD, LD>(sK, K, p.k.rs, 0, p.S, p.D, p.vec);
  if (MASK) ig_fa_stage_mask<T, BM, BN, MP>(sM, M, p, i0, 0);
  for (int64_t j0 = 0; j0 < kend; j0 += BN) {
    ig_fa_cp_wait();
    __syncthreads();  // k(j) is in sK; every warp is done with v(j - 1)
    ig_fa_stage<T, BN, KD, LD>(sV, V, p.v.rs, j0, p.S, p.D, p.vec);

    // s = q k^T for this warp's rows and the block's BN keys.
    float s[MW][BN / 8][4];
#pragma unroll
    for (int mi = 0; mi < MW; ++mi)
#pragma unroll
      for (int n = 0; n < BN / 8; ++n) s[mi][n][0] = s[mi][n][1] = s[mi][n][2] = s[mi][n][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KD / 16; ++kk)
#pragma unroll
      for (int n = 0; n < BN / 8; n += 2) {
        uint32_t kb[4];
        ig_fa_ldb_t(kb, sK, LD, kk * 16, n * 8);
        const uint32_t b0[2] = {kb[0], kb[1]}, b1[2] = {kb[2], kb[3]};
#pragma unroll
        for (int mi = 0; mi < MW; ++mi) {
          TC::mma(s[mi][n], qf[mi][kk], b0);
          TC::mma(s[mi][n + 1], qf[mi][kk], b1);
        }
      }
    // The online softmax of the block's scores, in log2 units. Blocks that
    // cross S or the causal diagonal, and a scale that is not positive, take
    // the checked path (EDGE): keys past S or after the query at -inf. The
    // masked kernels add the attn_mask's term from its staged tile to the
    // scaled scores. The others, most of the work, fold the scale into the
    // exponential's FFMA (their max is taken unscaled: a positive scale
    // keeps the order) with no checks at all.
    const bool edge = !(p.scale_log2 > 0.f) || j0 + BN > p.S || (p.causal && j0 + BN - 1 > i0);
    uint32_t pa[MW][BN / 16][4];
    auto block_softmax = [&](auto edge_tag) {
      constexpr bool EDGE = decltype(edge_tag)::value, SCALED = EDGE || MASK != 0;
      // Local limits: keys [0, ncol) of the block exist; with is_causal,
      // row r sees local keys up to r - j0.
      const int ncol = EDGE && j0 + BN > p.S ? int(p.S - j0) : BN;
#pragma unroll
      for (int mi = 0; mi < MW; ++mi) {
        float mx[2] = {-IG_FA_INF, -IG_FA_INF};
        int last[2] = {BN, BN};
        if (EDGE && p.causal)
          for (int h = 0; h < 2; ++h) {
            const int64_t d = rw[mi][h] - j0;
            last[h] = d < -1 ? -1 : (d > BN ? BN : int(d));
          }
        const unsigned char* mrow[2] = {nullptr, nullptr};
        if (MASK)
          for (int h = 0; h < 2; ++h) mrow[h] = ig_fa_mask_row<MP>(p, sM, int(rw[mi][h] - i0));
#pragma unroll
        for (int n = 0; n < BN / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; e += 2) {
            const int h = e / 2, c = n * 8 + 2 * t;
            float x0 = s[mi][n][e], x1 = s[mi][n][e + 1];
            if (SCALED) {
              float a = 0.f, b = 0.f;
              if (MASK) ig_fa_mask_pair<T, MASK>(mrow[h], c, a, b);
              x0 = fmaf(x0, p.scale_log2, a);
              x1 = fmaf(x1, p.scale_log2, b);
              if (EDGE) {
                if (c >= ncol || c > last[h]) x0 = -IG_FA_INF;
                if (c + 1 >= ncol || c + 1 > last[h]) x1 = -IG_FA_INF;
              }
              s[mi][n][e] = x0;
              s[mi][n][e + 1] = x1;
            }
            mx[h] = fmaxf(mx[h], fmaxf(x0, x1));
          }
        // New maxima, the rescale of what came before.
        float z[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float mb = ig_fa_quad_max(mx[h]);
          const float mn = fmaxf(m[mi][h], SCALED ? mb : mb * p.scale_log2);
          z[h] = mn == -IG_FA_INF ? 0.f : mn;
          const float c = ig_fa_exp2(m[mi][h] - z[h]);  // 0 before the first key
          m[mi][h] = mn;
          l[mi][h] *= c;
#pragma unroll
          for (int n = 0; n < KD / 8; ++n) {
            acc[mi][n][2 * h] *= c;
            acc[mi][n][2 * h + 1] *= c;
          }
        }
        // p = exp2(s - m), summed per lane (the quad's sum is taken at the
        // end), and packed as the A tiles of p v.
#pragma unroll
        for (int n = 0; n < BN / 8; ++n) {
          float pv[4];
#pragma unroll
          for (int e = 0; e < 4; ++e)
            pv[e] = SCALED ? ig_fa_exp2(s[mi][n][e] - z[e / 2])
                         : ig_fa_exp2(fmaf(s[mi][n][e], p.scale_log2, -z[e / 2]));
          l[mi][0] += pv[0] + pv[1];
          l[mi][1] += pv[2] + pv[3];
          pa[mi][n / 2][(n & 1) * 2] = TC::pack(pv[0], pv[1]);
          pa[mi][n / 2][(n & 1) * 2 + 1] = TC::pack(pv[2], pv[3]);
        }
      }
    };
    if (edge) block_softmax(IgFaBool<true>());
    else block_softmax(IgFaBool<false>());
    ig_fa_cp_wait();
    __syncthreads();  // v(j) is in sV; every warp is done with k(j)
    if (j0 + BN < kend) {
      ig_fa_stage<T, BN, KD, LD>(sK, K, p.k.rs, j0 + BN, p.S, p.D, p.vec);
      if (MASK) ig_fa_stage_mask<T, BM, BN, MP>(sM, M, p, i0, j0 + BN);
    }
    // acc += p v: k runs over the block's keys, n over the head dim.
#pragma unroll
    for (int kc = 0; kc < BN / 16; ++kc)
#pragma unroll
      for (int n = 0; n < KD / 8; n += 2) {
        uint32_t vb[4];
        ig_fa_ldb(vb, sV, LD, kc * 16, n * 8);
        const uint32_t b0[2] = {vb[0], vb[1]}, b1[2] = {vb[2], vb[3]};
#pragma unroll
        for (int mi = 0; mi < MW; ++mi) {
          TC::mma(acc[mi][n], pa[mi][kc], b0);
          TC::mma(acc[mi][n + 1], pa[mi][kc], b1);
        }
      }
  }
  // out = acc / l (two neighbouring columns a store when D is even), lse.
  // out is the operand p.o: any batch and row strides (torch's CUDA
  // attention lays its output out as the query is, so that the usual
  // transpose(1, 2) back to [B, L, H, E] is a view).
  T* out = const_cast<T*>(ig_fa_base<T>(p.o, p, b));
#pragma unroll
  for (int mi = 0; mi < MW; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t r = rw[mi][h];
      const float lr = ig_fa_quad_sum(l[mi][h]);
      if (r >= p.L) continue;
      const float inv = lr > 0.f ? 1.f / lr : 0.f;
      T* orow = out + r * p.o.rs;
#pragma unroll
      for (int n = 0; n < KD / 8; ++n) {
        const int c = n * 8 + 2 * t;
        const float x0 = acc[mi][n][h * 2] * inv, x1 = acc[mi][n][h * 2 + 1] * inv;
        if (c + 1 < p.D && p.D % 2 == 0) {
          *reinterpret_cast<uint32_t*>(orow + c) = TC::pack(x0, x1);
        } else {
          if (c < p.D) orow[c] = ig_convert<T>(x0);
          if (c + 1 < p.D) orow[c + 1] = ig_convert<T>(x1);
        }
      }
      if (t == 0)
        p.lse[b * p.L + r] = lr > 0.f ? m[mi][h] * 0.6931471805599453f + logf(lr) : -IG_FA_INF;
    }
}

// The backward's tiles: BN keys a block (16 a warp, so BN / 16 warps) and
// BM queries a step. 128 x 32 at head dim 64 (FlashAttention-2's 128 keys:
// half the dq atomics of 64), 64 x 32 at 128; both within 48 KiB of static
// shared memory.
template <int KD> struct IgFlashBwdTiles {
  static constexpr int BN = KD <= 64 ? 128 : 64, BM = 32, WARPS = BN / 16;
};

template <class T, int KD, int MASK>
__device__ __forceinline__ void ig_flash_bwd(const IgFlashParams& p) {
  typedef IgTensorCore<T> TC;
  constexpr int BN = IgFlashBwdTiles<KD>::BN, BM = IgFlashBwdTiles<KD>::BM;
  constexpr int WARPS = IgFlashBwdTiles<KD>::WARPS, LD = KD + 8, LT = BM + 8;
  constexpr int MT = BM / 16, NT = BM / 8;  // query tiles of 16 (dq) and of 8 (s^T)
  __shared__ __align__(16) uint16_t sK[BN * LD];       // k (v at the start)
  __shared__ __align__(16) uint16_t sQG[2 * BM * LD];  // q then dout
  __shared__ __align__(16) uint16_t sT[BN * LT];      // ds^T, keys x queries
  __shared__ float sL[BM], sD[BM];                     // lse (log2 units), D
  constexpr int MP = 2 * BN + 16;                      // attn_mask: queries x keys
  __shared__ __align__(16) unsigned char sM[MASK ? BM * MP : 16];
  uint16_t* const sQ = sQG;
  uint16_t* const sG = sQG + BM * LD;
  // Key blocks major, batch minor: the longest causal columns (the first key
  // block) of every batch index are launched first.
  const int64_t b = int64_t(blockIdx.x) % p.batch, j0 = (int64_t(blockIdx.x) / p.batch) * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const T* Q = ig_fa_base<T>(p.q, p, b);
  const T* K = ig_fa_base<T>(p.k, p, b);
  const T* V = ig_fa_base<T>(p.v, p, b);
  const T* G = ig_fa_base<T>(p.g, p, b);
  const char* const M = MASK ? ig_fa_mask_base<T>(p, b) : nullptr;
  const int64_t k0 = j0 + warp * 16 + g, k1 = k0 + 8;  // this lane's two keys
  const int kw = warp * 16;                            // the warp's first key in the block

  // v goes through sK into registers (A tiles); then k stays in sK.
  ig_fa_stage<T, BN, KD, LD>(sK, V, p.v.rs, j0, p.S, p.D, p.vec);
  ig_fa_cp_wait();
  __syncthreads();
  uint32_t vf[KD / 16][4];  // this warp's 16 rows of v
#pragma unroll
  for (int kk = 0; kk < KD / 16; ++kk) ig_fa_lda(vf[kk], sK, LD, kw, kk * 16);
  float dk[KD / 8][4], dv[KD / 8][4];
#pragma unroll
  for (int n = 0; n < KD / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[n][e] = dv[n][e] = 0.f;

  // dq's share of each warp: query tile mt, head-dim tiles [n0, n0 + DQN).
  constexpr int DQN = (KD / 8) / (WARPS / MT);
  static_assert(DQN % 2 == 0, "dq's column tiles go in pairs");
  const int mt = warp % MT, n0 = (warp / MT) * DQN;

  // A query block's q, dout, lse and D. q and dout of the next block load
  // (cp.async) while this one's dq is computed and added.
  auto stage_rows = [&](int64_t i0) {
    ig_fa_stage<T, BM, KD, LD>(sQ, Q, p.q.rs, i0, p.L, p.D, p.vec);
    ig_fa_stage<T, BM, KD, LD>(sG, G, p.g.rs, i0, p.L, p.D, p.vec);
    if (MASK) ig_fa_stage_mask<T, BM, BN, MP>(sM, M, p, i0, j0);
    for (int r = threadIdx.x; r < BM; r += blockDim.x) {
      const bool live = i0 + r < p.L;
      const float l = live ? p.lse[b * p.L + i0 + r] : IG_FA_INF;
      // Rows past L, and fully masked rows (lse = -inf), get p = 0.
      sL[r] = l == -IG_FA_INF ? IG_FA_INF : l * 1.4426950408889634f;
      sD[r] = live ? p.delta[b * p.L + i0 + r] : 0.f;
    }
  };
  const int64_t istart = p.causal ? (j0 / BM) * BM : 0;
  __syncthreads();  // every warp holds its v: sK is free
  ig_fa_stage<T, BN, KD, LD>(sK, K, p.k.rs, j0, p.S, p.D, p.vec);
  if (istart < p.L) stage_rows(istart);
  for (int64_t i0 = istart; i0 < p.L; i0 += BM) {
    ig_fa_cp_wait();
    __syncthreads();  // this query block is staged

    // s^T = k q^T and dp^T = v dout^T: the warp's 16 keys x BM queries.
    float st[NT][4], dp[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) st[n][e] = dp[n][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KD / 16; ++kk) {
      uint32_t ka[4];
      ig_fa_lda(ka, sK, LD, kw, kk * 16);
#pragma unroll
      for (int n = 0; n < NT; n += 2) {
        uint32_t qb[4], gb[4];
        ig_fa_ldb_t(qb, sQ, LD, kk * 16, n * 8);
        ig_fa_ldb_t(gb, sG, LD, kk * 16, n * 8);
        const uint32_t q0[2] = {qb[0], qb[1]}, q1[2] = {qb[2], qb[3]};
        const uint32_t g0[2] = {gb[0], gb[1]}, g1[2] = {gb[2], gb[3]};
        TC::mma(st[n], ka, q0);
        TC::mma(st[n + 1], ka, q1);
        TC::mma(dp[n], vf[kk], g0);
        TC::mma(dp[n + 1], vf[kk], g1);
      }
    }
    // p^T = exp2(s^T scale_log2 - lse) (masked), ds^T = p^T (dp^T - D).
    // Blocks that cross S, L or the causal diagonal check each score in
    // local coordinates (EDGE); the others, most of them, check nothing.
    // Rows past L need no check of their own: their lse is staged as +inf.
    const bool edge = j0 + BN > p.S || i0 + BM > p.L || (p.causal && j0 + BN - 1 > i0);
    uint32_t pa[BM / 16][4], sa[BM / 16][4];
    auto block_grads = [&](auto edge_tag) {
      constexpr bool EDGE = decltype(edge_tag)::value;
      // The block's keys [0, nk) and queries [0, nq) exist; with is_causal,
      // local key kl is after local query ql when kl - ql > i0 - j0 (|i0 -
      // j0| < BM + BN in a block the diagonal crosses: int is enough).
      const int nk = EDGE && j0 + BN > p.S ? int(p.S - j0) : BN;
      const int nq = EDGE && i0 + BM > p.L ? int(p.L - i0) : BM;
      const int off = EDGE && p.causal ? int(i0 - j0 < -BN ? -BN : i0 - j0) : BN + BM;
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        float pv[4], dsv[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int ql = n * 8 + 2 * t + (e & 1), kl = kw + g + (e < 2 ? 0 : 8);
          float logit = st[n][e] * p.scale_log2;
          if (MASK && (!EDGE || (kl < nk && ql < nq)))
            logit += ig_fa_mask_at<T, MASK>(ig_fa_mask_row<MP>(p, sM, ql), kl);
          float x = ig_fa_exp2(logit - sL[ql]);
          if (EDGE && (kl >= nk || kl - ql > off)) x = 0.f;
          pv[e] = x;
          dsv[e] = x * (dp[n][e] - sD[ql]);
        }
        pa[n / 2][(n & 1) * 2] = TC::pack(pv[0], pv[1]);
        pa[n / 2][(n & 1) * 2 + 1] = TC::pack(pv[2], pv[3]);
        sa[n / 2][(n & 1) * 2] = TC::pack(dsv[0], dsv[1]);
        sa[n / 2][(n & 1) * 2 + 1] = TC::pack(dsv[2], dsv[3]);
        // ds^T (16-bit, as it enters the products) for dq, two queries a store.
        *reinterpret_cast<uint32_t*>(sT + (kw + g) * LT + n * 8 + 2 * t) = sa[n / 2][(n & 1) * 2];
        *reinterpret_cast<uint32_t*>(sT + (kw + g + 8) * LT + n * 8 + 2 * t) =
            sa[n / 2][(n & 1) * 2 + 1];
      }
    };
    if (edge) block_grads(IgFaBool<true>());
    else block_grads(IgFaBool<false>());
    // dv += p^T dout and dk += ds^T q: k runs over the block's queries.
#pragma unroll
    for (int kc = 0; kc < BM / 16; ++kc)
#pragma unroll
      for (int n = 0; n < KD / 8; n += 2) {
        uint32_t gb[4], qb[4];
        ig_fa_ldb(gb, sG, LD, kc * 16, n * 8);
        ig_fa_ldb(qb, sQ, LD, kc * 16, n * 8);
        const uint32_t g0[2] = {gb[0], gb[1]}, g1[2] = {gb[2], gb[3]};
        const uint32_t q0[2] = {qb[0], qb[1]}, q1[2] = {qb[2], qb[3]};
        TC::mma(dv[n], pa[kc], g0);
        TC::mma(dv[n + 1], pa[kc], g1);
        TC::mma(dk[n], sa[kc], q0);
        TC::mma(dk[n + 1], sa[kc], q1);
      }
    __syncthreads();  // every warp's ds^T is in sT, and q, dout, lse, D are read
    if (i0 + BM < p.L) stage_rows(i0 + BM);

    // dq[mt rows] += ds k * scale over the block's keys, into the workspace.
    float dq[DQN][4];
#pragma unroll
    for (int n = 0; n < DQN; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.f;
#pragma unroll
    for (int kc = 0; kc < BN / 16; ++kc) {
      uint32_t da[4];
      ig_fa_lda_t(da, sT, LT, mt * 16, kc * 16);
#pragma unroll
      for (int n = 0; n < DQN; n += 2) {
        uint32_t kb[4];
        ig_fa_ldb(kb, sK, LD, kc * 16, (n0 + n) * 8);
        const uint32_t b0[2] = {kb[0], kb[1]}, b1[2] = {kb[2], kb[3]};
        TC::mma(dq[n], da, b0);
        TC::mma(dq[n + 1], da, b1);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = i0 + mt * 16 + g + h * 8;
      if (row >= p.L) continue;
      float* dst = p.dq + (b * p.L + row) * p.D;
#pragma unroll
      for (int n = 0; n < DQN; ++n) {
        const int c = (n0 + n) * 8 + 2 * t;
        const float x0 = dq[n][2 * h] * p.scale, x1 = dq[n][2 * h + 1] * p.scale;
        if (c + 1 < p.D && p.D % 2 == 0) {
          ig_fa_atomic_add2(dst + c, x0, x1);
        } else {
          if (c < p.D) atomicAdd(dst + c, x0);
          if (c + 1 < p.D) atomicAdd(dst + c + 1, x1);
        }
      }
    }
  }
  // This warp's rows of dk (scaled) and dv.
  T* dkp = const_cast<T*>(ig_fa_base<T>(p.dk, p, b));
  T* dvp = const_cast<T*>(ig_fa_base<T>(p.dv, p, b));
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int64_t key = e < 2 ? k0 : k1;
    if (key >= p.S) continue;
#pragma unroll
    for (int n = 0; n < KD / 8; ++n) {
      const int c = n * 8 + 2 * t + (e & 1);
      if (c < p.D) {
        dkp[key * p.dk.rs + c] = ig_convert<T>(dk[n][e] * p.scale);
        dvp[key * p.dv.rs + c] = ig_convert<T>(dv[n][e]);
      }
    }
  }
}
)CUDA";

// The backward's first pass, in a unit of its own (a plain grid-stride
// kernel, which the host emulation runs on one thread a block).
const char* kDotTemplate = R"CUDA(
// ---- flash attention, backward pass 1 (kernels/cuda/flash_attention.cpp) ----
struct IgFlashOperand { const char* p; int64_t bs[4]; int64_t rs; };
struct IgFlashParams {
  IgFlashOperand q, k, v, o, g;
  float* lse; float* delta; float* dq; IgFlashOperand dk, dv;
  int64_t bsz[4];
  int64_t batch, L, S;
  int32_t D, causal;
  float scale, scale_log2;
  int32_t vec;
  IgFlashOperand m;  // attn_mask over [batch, L, S] (m.rs: its row stride, mcs: its column's)
  int64_t mcs;
  int32_t mkind;     // 0 none, 1 bool, 2 the input dtype
  int32_t mvec;      // its tiles staged by cp.async
};
template <class T>
__device__ __forceinline__ const T* ig_fa_row(const IgFlashOperand& a, const IgFlashParams& p,
                                              int64_t b, int64_t r) {
  int64_t off = r * a.rs;
  for (int d = 3; d >= 0; --d) {
    off += (b % p.bsz[d]) * a.bs[d];
    b /= p.bsz[d];
  }
  return reinterpret_cast<const T*>(a.p) + off;
}
// delta[row] = sum(dout * out) over the row, in float. With p.vec (both
// operands' rows 16-byte aligned, D % 8 == 0) eight columns a load.
struct __align__(16) IgFaDot16 { uint16_t h[8]; };
template <class T> __device__ __forceinline__ void ig_flash_bwd_dot(const IgFlashParams& p) {
  IG_GRID_STRIDE_LOOP(i, p.batch * p.L) {
    const T* go = ig_fa_row<T>(p.g, p, i / p.L, i % p.L);
    const T* o = ig_fa_row<T>(p.o, p, i / p.L, i % p.L);
    float acc = 0.f;
    if (p.vec) {
      for (int c = 0; c < p.D; c += 8) {
        const IgFaDot16 a = *reinterpret_cast<const IgFaDot16*>(go + c);
        const IgFaDot16 b = *reinterpret_cast<const IgFaDot16*>(o + c);
        for (int e = 0; e < 8; ++e) {
          T x, y;
          x.x = a.h[e];
          y.x = b.h[e];
          acc += ig_convert<float>(x) * ig_convert<float>(y);
        }
      }
    } else {
      for (int c = 0; c < p.D; ++c) acc += ig_convert<float>(go[c]) * ig_convert<float>(o[c]);
    }
    p.delta[i] = acc;
  }
}
)CUDA";

const char* type_of(ScalarType t) { return t == ScalarType::BFloat16 ? "ig_bf16" : "ig_half"; }

KernelRequest make_request(const std::string& symbol, const std::string& templates,
                           const std::string& call, const char* bounds = "") {
  KernelRequest r;
  r.symbol = symbol;
  r.label = symbol + ".cu";
  r.source = str(eager_prelude(), templates, kKernelBodyMarker, "extern \"C\" __global__ void ",
                 bounds, symbol, "(IgFlashParams p) { ", call, "(p); }\n");
  r.options = {"-default-device", "-w"};
  return r;
}

// kind: "fwd", "bwd" (with head-dim tile kd) or "bwd_dot".
// `mask`: the kernel for an attn_mask (p.mkind: 1 bool, flash_fwd_mask_...;
// 2 the input's dtype, flash_fwd_fmask_...), variants of their own so that
// the unmasked kernel keeps its registers and neither tests the kind a score.
const char* mask_tag(int mask) { return mask == 0 ? "_" : mask == 1 ? "_mask_" : "_fmask_"; }
KernelRequest request(const char* kind, ScalarType t, int kd, int mask = 0) {
  const std::string dt = dtype_name(t);
  if (std::string(kind) == "bwd_dot")
    return make_request(str("flash_bwd_dot_", dt), kDotTemplate,
                        str("ig_flash_bwd_dot<", type_of(t), ">"));
  if (std::string(kind) == "fwd_sm90" || std::string(kind) == "bwd_sm90") {
    // wgmma exists on sm_90a only (the architecture-specific target): the
    // kernels are requested on compute capability 9.0 alone. The forward
    // fits two blocks an SM in 128 registers; the backward holds dk, dv and
    // three products' accumulators, one block an SM.
    const bool fwd = std::string(kind) == "fwd_sm90";
    KernelRequest r = make_request(
        str("flash_", kind, mask_tag(mask), dt, "_d", kd), str(kTemplates, flash_sm90_templates()),
        str("ig_flash_", kind, "<", type_of(t), ", ", kd, ", ", mask, ">"),
        fwd ? "__launch_bounds__(256, 2) " : "__launch_bounds__(256, 1) ");
    r.options.push_back("--gpu-architecture=sm_90a");
    r.dynamic_shared_bytes =
        fwd ? flash_forward_sm90_shared_bytes(kd, mask) : flash_backward_sm90_shared_bytes(kd, mask);
    return r;
  }
  KernelRequest r = make_request(
      str("flash_", kind, mask_tag(mask), dt, "_d", kd), kTemplates,
      str("ig_flash_", kind, "<", type_of(t), ", ", kd, ", ", mask, ">"));
  // The head-dim-64 backward (256 threads) takes 174 registers uncapped: one
  // block an SM. At 128 two fit (16 warps to hide the atomics' and barriers'
  // latency) for 48 bytes of spills.
  if (std::string(kind) == "bwd" && kd == 64) r.options.push_back("-maxrregcount=128");
  return r;
}

CUfunction function_for(int device, const char* kind, ScalarType t, int kd, int mask = 0) {
  return get_named_kernel(device, str("flash/", kind, mask_tag(mask), dtype_name(t), "/", kd),
                          [&] { return request(kind, t, kd, mask); });
}

// The batch dims of `t` (its leading dim() - 2), right-aligned into four.
FlashOperand operand(const Tensor& t) {
  FlashOperand a;
  a.p = t.data_ptr();
  const int64_t nb = t.dim() - 2;
  for (int64_t d = 0; d < nb; ++d) a.bs[4 - nb + d] = t.strides()[d];
  a.rs = t.strides()[nb];
  return a;
}

// 16-byte loads need every row start 16-byte aligned and D a multiple of 8.
bool rows_aligned(const Tensor& t, int64_t D) {
  if (D % 8 != 0 || reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 != 0) return false;
  for (int64_t d = 0; d < t.dim() - 1; ++d)
    if (t.size(d) > 1 && t.strides()[d] % 8 != 0) return false;
  return true;
}

// Whether ig_fa_stage_mask may copy the mask's tiles by cp.async: contiguous
// columns, and the base, every row and every batch offset 16-byte aligned
// (the tiles start at multiples of 64 columns).
bool mask_rows_aligned(const Tensor& m) {
  const int64_t es = m.dtype() == ScalarType::Bool ? 1 : 2;
  if (m.strides()[m.dim() - 1] != 1 && m.size(-1) > 1) return false;
  if (reinterpret_cast<uintptr_t>(m.data_ptr()) % 16 != 0) return false;
  for (int64_t d = 0; d < m.dim() - 1; ++d)
    if (m.size(d) > 1 && (m.strides()[d] * es) % 16 != 0) return false;
  return true;
}

int head_tile(int64_t D) { return D <= 64 ? 64 : 128; }

// The forward's query rows a block (BM: 4 warps of IgFlashFwdTiles<kd>::MW
// m16 tiles each).
int64_t forward_rows(int kd) { return kd <= 64 ? 128 : 64; }

// The backward's keys a block (IgFlashBwdTiles<kd>::BN), 16 a warp.
int64_t backward_keys(int kd) { return kd <= 64 ? 128 : 64; }

FlashParams params_for(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                       double scale) {
  FlashParams p;
  p.q = operand(q);
  p.k = operand(k);
  p.v = operand(v);
  const int64_t nb = q.dim() - 2;
  p.batch = 1;
  for (int64_t d = 0; d < nb; ++d) {
    p.bsz[4 - nb + d] = q.size(d);
    p.batch *= q.size(d);
  }
  p.L = q.size(nb);
  p.S = k.size(nb);
  p.D = static_cast<int32_t>(q.size(nb + 1));
  p.causal = causal;
  p.scale = static_cast<float>(scale);
  p.scale_log2 = static_cast<float>(scale * 1.4426950408889634);
  p.vec = rows_aligned(q, p.D) && rows_aligned(k, p.D) && rows_aligned(v, p.D);
  return p;
}

// The attn_mask's operand: [batch..., L, S] as the batch of q (a broadcast
// view, any strides), its kind by dtype.
void set_mask(FlashParams& p, const Tensor& mask, ScalarType dt) {
  if (!mask.defined()) return;
  IGNIS_INTERNAL_ASSERT(mask.dim() >= 2 && mask.size(-2) == p.L && mask.size(-1) == p.S);
  p.m = operand(mask);
  p.mcs = mask.strides()[mask.dim() - 1];
  IGNIS_INTERNAL_ASSERT(mask.dtype() == ScalarType::Bool || mask.dtype() == dt);
  p.mkind = mask.dtype() == ScalarType::Bool ? 1 : 2;
  p.mvec = mask_rows_aligned(mask);
}
void launch(CUfunction f, int64_t blocks, unsigned threads, FlashParams& p, int device,
            int shared_bytes = 0) {
  IGNIS_CHECK(blocks < (int64_t(1) << 31), "flash attention: too many blocks (", blocks, ")");
  Stream stream = current_stream(device);
  // (A request's dynamic shared memory over 48 KiB is allowed by the kernel
  // cache as it loads the function.)
  void* a[] = {&p};
  IGNIS_CU(cuLaunchKernel(f, static_cast<unsigned>(blocks), 1, 1, threads, 1, 1,
                          static_cast<unsigned>(shared_bytes), stream.handle, a, nullptr));
}

// Whether the Hopper kernels (flash_attention_sm90.h) may run at all:
// $IGNIS_CUDA_FLASH_SM90=0 keeps a compute capability 9.0 GPU on the mma.sync
// kernels (read once a process), to compare the two or to step around a
// suspected fault in the Hopper ones.
bool sm90_kernels_allowed() {
  static const bool on = [] {
    const char* e = std::getenv("IGNIS_CUDA_FLASH_SM90");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

// Whether the Hopper kernels take the call, forward and backward: a compute
// capability 9.0 GPU and 16-byte aligned rows of q, k, v (and grad_out in
// the backward: p.vec covers it there), head tiles 64 and 128, an attn_mask
// in any layout (ig_fa_stage_mask copies what cp.async cannot). On the H200
// forward + backward took 0.58-0.76x the time with the mma.sync backward at
// head tile 64 and 0.56-0.64x at 128 (docs/benchmarks.md, "Eighth run" and
// "Ninth run").
bool use_sm90(int device, const FlashParams& p) {
  const DeviceProperties& props = device_properties(device);
  return props.major == 9 && props.minor == 0 && p.vec && sm90_kernels_allowed();
}

}  // namespace

const char* flash_attention_unsupported(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& mask, bool check_device) {
  if (mask.defined() && mask.dtype() != ScalarType::Bool && mask.dtype() != q.dtype())
    return "an attn_mask neither bool nor of the query's dtype";
  if (q.dtype() != ScalarType::Float16 && q.dtype() != ScalarType::BFloat16)
    return "the dtype (float16 and bfloat16 only)";
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype()) return "mixed dtypes";
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2) return "fewer than 2 dims";
  const int64_t E = q.size(-1), Ev = v.size(-1), S = k.size(-2);
  if (E != Ev || k.size(-1) != E) return "a value head dim unlike the query's";
  if (E == 0 || E > kFlashMaxHeadDim) return "the head dim (1 to 128)";
  if (S == 0) return "no keys";
  if (std::max({q.dim(), k.dim(), v.dim(), mask.defined() ? mask.dim() : 0}) > 6)
    return "more than 4 batch dims";
  if (check_device && !q.device().is_cpu()) {
    const auto& props = device_properties(q.device().index);
    if (props.major < 8) return "a GPU older than sm_80 (no bf16 mma.sync)";
  }
  return nullptr;
}

void flash_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q,
                             const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                             double scale) {
  if (out.numel() == 0) return;
  IGNIS_INTERNAL_ASSERT(out.dim() == q.dim() && out.stride(-1) == 1 && lse.is_contiguous() &&
                        lse.dtype() == ScalarType::Float32);
  const int device = q.device().index;
  DeviceGuard guard(device);
  FlashParams p = params_for(q, k, v, causal, scale);
  p.o = operand(out);
  p.lse = lse.data<float>();
  set_mask(p, mask, q.dtype());
  const int kd = head_tile(p.D);
  if (use_sm90(device, p)) {
    const int64_t nqb = (p.L + kFlashSm90Rows - 1) / kFlashSm90Rows;
    launch(function_for(device, "fwd_sm90", q.dtype(), kd, p.mkind), nqb * p.batch,
           kFlashSm90Threads, p, device, flash_forward_sm90_shared_bytes(kd, p.mkind));
    return;
  }
  const int64_t nqb = (p.L + forward_rows(kd) - 1) / forward_rows(kd);
  launch(function_for(device, "fwd", q.dtype(), kd, p.mkind), nqb * p.batch, kFlashThreads,
         p, device);
}

void flash_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv,
                              const Tensor& grad_out, const Tensor& q, const Tensor& k,
                              const Tensor& v, const Tensor& out, const Tensor& lse,
                              const Tensor& mask, bool causal, double scale) {
  IGNIS_INTERNAL_ASSERT(dk.dim() == k.dim() && dk.stride(-1) == 1 && dv.dim() == v.dim() &&
                        dv.stride(-1) == 1 && lse.is_contiguous() &&
                        lse.dtype() == ScalarType::Float32);
  if (dq.numel() == 0 && dk.numel() == 0) return;
  const int device = q.device().index;
  DeviceGuard guard(device);
  FlashParams p = params_for(q, k, v, causal, scale);
  p.vec = p.vec && rows_aligned(grad_out, p.D);
  p.o = operand(out);
  p.g = operand(grad_out);
  p.lse = lse.data<float>();
  set_mask(p, mask, q.dtype());
  Tensor delta = empty_tensor(lse.sizes(), ScalarType::Float32, q.device());
  Tensor dq_acc = empty_tensor(dq.sizes(), ScalarType::Float32, q.device());
  p.delta = delta.data<float>();
  p.dq = dq_acc.data<float>();
  p.dk = operand(dk);
  p.dv = operand(dv);
  if (p.L > 0) {
    // The row-dot kernel reads out and grad_out: its 16-byte loads need those
    // two aligned (the parameters are copied at the launch).
    const int32_t vec = p.vec;
    p.vec = rows_aligned(out, p.D) && rows_aligned(grad_out, p.D);
    void* a[] = {&p};
    launch_grid_stride(function_for(device, "bwd_dot", q.dtype(), 0), p.batch * p.L, a,
                       current_stream(device));
    p.vec = vec;
    fill_tensor(dq_acc, Scalar(0.0));
  }
  const int kd = head_tile(p.D);
  if (use_sm90(device, p)) {
    const int64_t nkb = (p.S + kFlashSm90BackwardKeys - 1) / kFlashSm90BackwardKeys;
    launch(function_for(device, "bwd_sm90", q.dtype(), kd, p.mkind), nkb * p.batch,
           kFlashSm90Threads, p, device, flash_backward_sm90_shared_bytes(kd, p.mkind));
  } else {
    const int64_t bn = backward_keys(kd), nkb = (p.S + bn - 1) / bn;
    launch(function_for(device, "bwd", q.dtype(), kd, p.mkind), nkb * p.batch,
           static_cast<unsigned>(bn / 16) * 32, p, device);
  }
  if (dq.numel() > 0) copy_tensor(dq, dq_acc);
}

std::vector<KernelRequest> flash_attention_kernel_requests() {
  std::vector<KernelRequest> v;
  for (ScalarType t : {ScalarType::Float16, ScalarType::BFloat16}) {
    for (int kd : {64, 128})
      for (const char* kind : {"fwd", "bwd"})
        for (int mask : {0, 1, 2}) v.push_back(request(kind, t, kd, mask));
    v.push_back(request("bwd_dot", t, 0));
    for (int kd : {64, 128})
      for (int mask : {0, 1, 2}) v.push_back(request("fwd_sm90", t, kd, mask));
    for (int kd : {64, 128})
      for (int mask : {0, 1, 2}) v.push_back(request("bwd_sm90", t, kd, mask));
  }
  return v;
}

}  // namespace ignis::cuda

#include "ignis/kernels/cuda/flash_attention_sm90.h"

#include "ignis/core/error.h"

namespace ignis::cuda {

namespace {

// Note [Flash attention on Hopper]
// On an H200 the mma.sync forward (flash_attention.cpp) reached 225 of the
// ~990 dense bf16 TFLOP/s at 8 x 12 heads x 2048 x 64, half of cuDNN's
// wgmma kernel. Hopper's warpgroup MMA (wgmma.mma_async, PTX for sm_90a)
// multiplies a 64-row A by an N-column B for the 4 warps of a warpgroup at
// once, reading B (and A, for q k^T) straight from shared memory through a
// 64-bit descriptor, asynchronously: the warps issue it, go on, and wait for
// the group later. No ldmatrix, no fragment loads.
//
// Shared tiles. A descriptor names a tile of 16-bit values whose rows are
// 128 bytes (64 values: the head tile) in the 128-byte swizzle: in each
// 1024-byte group of 8 rows, row r's 16-byte chunk c sits at chunk c ^ r.
// The staging copies (cp.async, 16 bytes a thread) write that layout, the
// tiles start at multiples of 1024 bytes, and the descriptor says "8-row
// groups 1024 bytes apart". q and k are K-major operands (the head dim, the
// product's reduction, is contiguous); a k-step of 16 moves the start by 32
// bytes inside the swizzle atom. v in p v is an MN-major B (its columns, the
// head dim, are contiguous) read with the transpose bit; a k-step of 16 keys
// moves 16 rows (2048 bytes).
//
// Registers. The accumulator of m64nNk16 is mma.sync's m16n8 layout per
// warp (warp w of the warpgroup owns rows 16w..16w+15; lane l holds rows
// l/4 and l/4 + 8, columns 2(l%4), +1 of every 8-column tile), so the
// online softmax is flash_attention.cpp's, and the probabilities packed to
// 16 bits are exactly the A registers of p v (the register-A form of wgmma):
// they never leave registers.
//
// The block: 128 query rows (two warpgroups of 64), 128 keys a step, head
// dim 64. Shared memory: q (16 KiB), k in 2 stages, v in 3 (16 KiB each):
// 96 KiB and 1 KiB to align them, so two blocks share an SM, and 128
// registers a thread (the launch bounds) hold s (64 floats), the output
// (32) and p (32 registers of two 16-bit values). The step for key block j:
//   s = q k(j)^T: 4 wgmma, wait
//   online softmax of s, rescale the output, pack p
//   issue out += p v(j): 8 wgmma
//   wait for k(j+1), v(j+1) (cp.async); barrier; start k(j+2) and v(j+2)
//       (k's stage held k(j), v's v(j-1): every warp is done with both)
//   wait for p v(j)
// so p v(j) runs on the tensor cores under the barrier and the loads, and
// the 4 warpgroups of an SM interleave their softmaxes (MUFU) with each
// other's products. One barrier a step; the third v stage is what lets
// p v(j) run across it. A product must not stay in flight across the loop's
// back edge: ptxas then moves its accumulators between iterations and
// serializes every wgmma (its warning C7515; the first version of this
// kernel, which waited for p v(j) after the next step's barrier, ran each
// wgmma alone: 285 us where this one takes 279 at 2048 x 2048).
// Measured on the H200 through the SDPA op (bf16, 8 x 12 heads, head dim
// 64; mma.sync kernel -> this one, torch's cuDNN kernel in brackets):
// 2048 x 2048 457 -> 279 us (224), causal 259 -> 160 (141); 512 x 512
// 47.8 -> 27.0 (28.2), causal 31.9 -> 22.8 (20-23); `bench/gpu.py --rows
// attn_fwd` (causal, 512) 0.023 ms against torch's 0.023. Not yet done:
// warp specialization (a producer warp loading by TMA, as
// FlashAttention-3), masks, head dim 128, the backward.
//
// Masks, head dims over 64 and rows that are not 16-byte aligned keep the
// mma.sync kernel (its Note).

// The wgmma wrappers, generated: SS (both operands from shared memory, for
// s = q k^T over 128 keys) and RS (A from registers, for out += p v over the
// 64-column head tile), per 16-bit type. The accumulators are "+f"
// operands; scale-d (0 for the first k-step of s) is a predicate.
std::string wgmma_wrappers() {
  std::string out;
  auto regs = [](int n, int first) {
    std::string s;
    for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::string("%") + std::to_string(first + i);
    return s;
  };
  auto outs = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::string("\"+f\"(d[") + std::to_string(i) + "])";
    return s;
  };
  for (const char* ty : {"bf16", "f16"}) {
    const std::string t = ty;
    out += "template <> struct IgWgmma<" + std::string(t == "bf16" ? "ig_bf16" : "ig_half") + "> {\n";
    // s (64 x 128 floats: 64 a thread) += q (desc) k^T (desc)
    out += "  static __device__ __forceinline__ void ss_n128(float (&d)[64], uint64_t a, uint64_t b, "
           "int accumulate) {\n    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %66, 0;\\n\"\n"
           "      \"wgmma.mma_async.sync.aligned.m64n128k16.f32." + t + "." + t + " {" + regs(64, 0) +
           "}, %64, %65, p, 1, 1, 0, 0;\\n}\\n\"\n      : " + outs(64) +
           "\n      : \"l\"(a), \"l\"(b), \"r\"(accumulate));\n  }\n";
    // out (64 x 64 floats: 32 a thread) += p (registers) v (desc, transposed)
    out += "  static __device__ __forceinline__ void rs_n64(float (&d)[32], const uint32_t (&a)[4], "
           "uint64_t b) {\n    asm volatile(\"wgmma.mma_async.sync.aligned.m64n64k16.f32." + t + "." + t +
           " {" + regs(32, 0) + "}, {%32,%33,%34,%35}, %36, 1, 1, 1, 1;\\n\"\n      : " + outs(32) +
           "\n      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b));\n  }\n};\n";
  }
  return out;
}

const char* kKernel = R"CUDA(
// The 64-bit wgmma descriptor of a 128-byte-swizzled tile at shared address
// `addr`: start (16-byte units), leading and stride byte offsets (16-byte
// units: 8-row groups 1024 bytes apart; the leading offset matters only
// across swizzle atoms, which these tiles never span), swizzle mode 1 = 128B.
__device__ __forceinline__ uint64_t ig_fa90_desc(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1024 >> 4) << 16) |
         (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
__device__ __forceinline__ void ig_fa90_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void ig_fa90_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void ig_fa90_wait() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Pins registers behind the wait: the compiler may not read an accumulator
// the asynchronous product is still writing.
template <int N>
__device__ __forceinline__ void ig_fa90_pin(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Rows [r0, r0 + 128) of a [rows, D] operand (row stride rs, D <= 64,
// D % 8 == 0, rows 16-byte aligned) into a swizzled 128 x 64 tile by
// cp.async: 4 chunks of 16 bytes a thread, zero past `rows` and D. The
// generic-proxy writes become visible to wgmma (the async proxy) through
// fence.proxy.async after the wait, before the barrier.
template <class T>
__device__ __forceinline__ void ig_fa90_stage(uint32_t tile, const T* base, int64_t rs, int64_t r0,
                                              int64_t rows, int D) {
  const int c = threadIdx.x & 7, r = threadIdx.x >> 3;  // 32 rows a pass
  const uint32_t dst = tile + r * 128 + ((c ^ (r & 7)) << 4);
  const T* src = base + (r0 + r) * rs + c * 8;
  const int64_t left = rows - r0 - r;
  const bool col = c * 8 < D;
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const bool live = col && 32 * u < left;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst + u * 32 * 128),
                 "l"(live ? src + 32 * u * rs : base), "r"(live ? 16 : 0));
  }
}

template <class T>
__device__ __forceinline__ void ig_flash_fwd_sm90(const IgFlashParams& p) {
  typedef IgTensorCore<T> TC;
  constexpr int BM = 128, BN = 128, TILE = 128 * 128;  // bytes of one 128-row tile
  extern __shared__ unsigned char ig_fa90_smem[];
  const uint32_t sQ = (ig_fa_smem(ig_fa90_smem) + 1023) & ~1023u;
  const uint32_t sK = sQ + TILE, sV = sK + 2 * TILE;
  // Query blocks major, batch minor, the last (longest causal) first.
  const int64_t nqb = (p.L + BM - 1) / BM;
  const int64_t b = int64_t(blockIdx.x) % p.batch;
  const int64_t i0 = (nqb - 1 - int64_t(blockIdx.x) / p.batch) * BM;
  const int wg = threadIdx.x / 128, w = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const T* Q = ig_fa_base<T>(p.q, p, b);
  const T* K = ig_fa_base<T>(p.k, p, b);
  const T* V = ig_fa_base<T>(p.v, p, b);
  const int64_t kend = p.causal ? (p.S < i0 + BM ? p.S : i0 + BM) : p.S;
  const int nblk = int((kend + BN - 1) / BN);
  // q and the first two key blocks.
  ig_fa90_stage<T>(sQ, Q, p.q.rs, i0, p.L, p.D);
  for (int jb = 0; jb < 2 && jb < nblk; ++jb) {
    ig_fa90_stage<T>(sK + jb * TILE, K, p.k.rs, jb * BN, p.S, p.D);
    ig_fa90_stage<T>(sV + jb * TILE, V, p.v.rs, jb * BN, p.S, p.D);
  }
  ig_fa_cp_commit();
  ig_fa_cp_wait();
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();

  float acc[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  float m[2] = {-IG_FA_INF, -IG_FA_INF}, l[2] = {0.f, 0.f};  // log2 units
  const int64_t first = i0 + wg * 64 + w * 16 + g;
  const int64_t rw[2] = {first, first + 8};
  const uint32_t qaddr = sQ + wg * 64 * 128;
  const float sl2 = p.scale_log2;
  uint32_t pa[BN / 16][4];
  for (int jb = 0; jb < nblk; ++jb) {
    const int64_t j0 = int64_t(jb) * BN;
    float s[BN / 2];
    const uint32_t kaddr = sK + (jb & 1) * TILE, vaddr = sV + (jb % 3) * TILE;
    ig_fa90_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      IgWgmma<T>::ss_n128(s, ig_fa90_desc(qaddr + kk * 32), ig_fa90_desc(kaddr + kk * 32), kk > 0);
    ig_fa90_commit();
    ig_fa90_wait();
    ig_fa90_pin(s);
    // The online softmax (flash_attention.cpp's): blocks crossing S or this
    // warpgroup's causal diagonal, or a scale that is not positive, check
    // every score in local int coordinates; the others fold the scale into
    // the exponential's FFMA, their max taken unscaled.
    const bool edge = !(sl2 > 0.f) || j0 + BN > p.S || (p.causal && j0 + BN - 1 > i0 + wg * 64);
    float mx[2] = {-IG_FA_INF, -IG_FA_INF};
    if (edge) {
      const int ncol = j0 + BN > p.S ? int(p.S - j0) : BN;
      int last[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t d = p.causal ? rw[h] - j0 : BN;
        last[h] = d < -1 ? -1 : (d > BN ? BN : int(d));
      }
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int c = 8 * j + 2 * t + (e & 1);
          float x = s[4 * j + e] * sl2;
          if (c >= ncol || c > last[e >> 1]) x = -IG_FA_INF;
          s[4 * j + e] = x;
          mx[e >> 1] = fmaxf(mx[e >> 1], x);
        }
    } else {
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) mx[e >> 1] = fmaxf(mx[e >> 1], s[4 * j + e]);
      mx[0] *= sl2;
      mx[1] *= sl2;
    }
    float z[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float mn = fmaxf(m[h], ig_fa_quad_max(mx[h]));
      z[h] = mn == -IG_FA_INF ? 0.f : mn;
      const float c = ig_fa_exp2(m[h] - z[h]);  // 0 before the first key
      m[h] = mn;
      l[h] *= c;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        acc[4 * j + 2 * h] *= c;
        acc[4 * j + 2 * h + 1] *= c;
      }
    }
    const float sc = edge ? 1.f : sl2;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      float pv[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) pv[e] = ig_fa_exp2(fmaf(s[4 * j + e], sc, -z[e >> 1]));
      l[0] += pv[0] + pv[1];
      l[1] += pv[2] + pv[3];
      pa[j / 2][(j & 1) * 2] = TC::pack(pv[0], pv[1]);
      pa[j / 2][(j & 1) * 2 + 1] = TC::pack(pv[2], pv[3]);
    }
    // out += p v(j), waited for after the barrier below.
    ig_fa90_fence();
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) IgWgmma<T>::rs_n64(acc, pa[kk], ig_fa90_desc(vaddr + kk * 2048));
    ig_fa90_commit();
    // While p v(j) runs: k(j + 1) and v(j + 1) have landed, k(j + 2) and
    // v(j + 2) start (k's stage held k(j), v's v(j - 1): read by every warp
    // before this barrier).
    ig_fa_cp_wait();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    if (jb + 2 < nblk) {
      ig_fa90_stage<T>(sK + (jb & 1) * TILE, K, p.k.rs, j0 + 2 * BN, p.S, p.D);
      ig_fa90_stage<T>(sV + ((jb + 2) % 3) * TILE, V, p.v.rs, j0 + 2 * BN, p.S, p.D);
      ig_fa_cp_commit();
    }
    ig_fa90_wait();
    ig_fa90_pin(acc);
  }
  // out = acc / l into p.o (any batch and row strides), lse in natural log.
  T* out = const_cast<T*>(ig_fa_base<T>(p.o, p, b));
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t r = rw[h];
    const float lr = ig_fa_quad_sum(l[h]);
    if (r >= p.L) continue;
    const float inv = lr > 0.f ? 1.f / lr : 0.f;
    T* orow = out + r * p.o.rs;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int c = 8 * j + 2 * t;
      if (c < p.D)
        *reinterpret_cast<uint32_t*>(orow + c) = TC::pack(acc[4 * j + 2 * h] * inv, acc[4 * j + 2 * h + 1] * inv);
    }
    if (t == 0) p.lse[b * p.L + r] = lr > 0.f ? m[h] * 0.6931471805599453f + logf(lr) : -IG_FA_INF;
  }
}
)CUDA";

}  // namespace

const std::string& flash_forward_sm90_templates() {
  static const std::string text =
      "\n// ---- flash attention forward on Hopper (kernels/cuda/flash_attention_sm90.cpp) ----\n"
      "#ifdef IG_HOST_EMULATION\n"
      "template <class T> __device__ void ig_flash_fwd_sm90(const IgFlashParams&) {}\n"
      "#else\n"
      "template <class T> struct IgWgmma;\n" +
      wgmma_wrappers() + kKernel + "#endif\n";
  return text;
}

// 1024 bytes of slack to align the tiles to the swizzle's 1024-byte groups
// (dynamic shared memory starts 16-byte aligned), q, k in 2 stages, v in 3.
int flash_forward_sm90_shared_bytes() { return 1024 + 6 * 128 * 128; }

}  // namespace ignis::cuda

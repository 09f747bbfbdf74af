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
// Shared tiles. A descriptor names a tile of 16-bit values in the 128-byte
// swizzle: rows of 128 bytes (64 values), and in each 1024-byte group of 8
// rows, row r's 16-byte chunk c sits at chunk c ^ r. A head tile of 128 is
// two such column atoms, one after the other. The staging copies (cp.async,
// 16 bytes a thread) write that layout, the tiles start at multiples of
// 1024 bytes, and the descriptor says "8-row groups 1024 bytes apart". q and
// k are K-major operands (the head dim, the product's reduction, is
// contiguous); k-step kk of 16 starts (kk % 4) * 32 bytes into atom kk / 4.
// v in p v is an MN-major B (its columns, the head dim, are contiguous) read
// with the transpose bit; a k-step of 16 keys moves 16 rows (2048 bytes),
// and the descriptor's leading byte offset is the distance between v's two
// atoms at head tile 128 (the harness that checked the layout on the H200
// got garbage with the two offsets the other way round).
//
// Registers. The accumulator of m64nNk16 is mma.sync's m16n8 layout per
// warp (warp w of the warpgroup owns rows 16w..16w+15; lane l holds rows
// l/4 and l/4 + 8, columns 2(l%4), +1 of every 8-column tile), so the
// online softmax is flash_attention.cpp's, and the probabilities packed to
// 16 bits are exactly the A registers of p v (the register-A form of wgmma):
// they never leave registers.
//
// The block: 128 query rows (two warpgroups of 64) over key steps of BN =
// 128 at head tile 64, 64 at 128. Shared memory: q in one tile, k in 2
// stages, v in 3: 96 KiB at 64, 112 KiB at 128, and 1 KiB to align them, so
// two blocks share an SM; 128 registers a thread (the launch bounds) hold s
// (BN / 2 floats), the output (head tile / 2) and p (BN / 4 registers of two
// 16-bit values). The step for key block j:
//   s = q k(j)^T: head tile / 16 wgmma, wait
//   online softmax of s, rescale the output, pack p
//   issue out += p v(j): BN / 16 wgmma
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
// wgmma alone: 285 us where this one takes 279 at 2048 x 2048). At head tile
// 128, key steps of 128 need 192 registers (one block an SM): 64-key steps
// with two blocks were 14-17% faster.
//
// Measured on the H200 (`bench/gpu_attention.py`: bf16, 8 x 12 heads,
// torch's SDPA in the same run): head dim 64, 2048 tokens 457 (mma.sync) ->
// 281 us (torch 226), causal 259 -> 161 (143); 512 tokens 27 (21), causal
// 23 (20); head dim 128, 2048 tokens 487 (317). Not yet done: warp
// specialization (a producer warp loading by TMA, as FlashAttention-3).
// The backward (ig_flash_bwd_sm90, below; head tile 64, unmasked) took
// forward + backward from 1893 (mma.sync) to 1185 us at 2048 tokens (torch
// 874), causal 1080 -> 702 (584).
//
// An attn_mask (bool, or of the input's dtype, in any broadcast layout) is
// staged beside k and v, tile by tile, by the mma.sync kernels' own
// ig_fa_stage_mask into two stages of shared memory, and its terms enter
// the checked softmax; masked kernels take 64-key steps (the mask tiles
// keep two blocks an SM at head tile 64). Rows that are not 16-byte
// aligned keep the mma.sync kernels (their Note).

// The wgmma products the kernels use, declared once: the name of the
// wrapper, N (the accumulator is 64 x N floats, N / 2 a thread), whether A
// comes from registers (the RS form) or shared memory, and whether A and B
// are MN-major in shared memory (the transpose bits; K-major otherwise).
struct WgmmaForm {
  const char* name;
  int n;
  bool a_regs, a_mn, b_mn;
};
constexpr WgmmaForm kWgmmaForms[] = {
    {"ss_n64", 64, false, false, false},    // s = q k^T (head tile 128), s^T = k q^T, dp^T
    {"ss_n128", 128, false, false, false},  // s = q k^T (head tile 64)
    {"rs_n64", 64, true, false, true},      // out += p v, dv += p^T dout, dk += ds^T q
    {"rs_n128", 128, true, false, true},    // out += p v (head tile 128)
    {"ss_n32_tt", 32, false, true, true},   // dq = ds k (a half of its columns), ds^T and k
    {"ss_n64_tt", 64, false, true, true},   // stored keys by rows (head tile 64, 128)
};

// The wrappers, per 16-bit type, for the GPU (inline PTX: the accumulators
// are "+f" operands; scale-d, 0 for a product's first k-step, is a
// predicate) and for the host emulation (ig_host_wgmma in
// tests/cuda_fake/block_threads_host.h, which reads shared memory through
// the same descriptors): both from kWgmmaForms, so the emulation cannot
// disagree with the PTX about an operand's layout.
std::string wgmma_wrappers(bool emulated) {
  std::string out;
  auto regs = [](int n, int first) {
    std::string s;
    for (int i = 0; i < n; ++i) {
      if (i) s += ',';
      s += '%';
      s += std::to_string(first + i);
    }
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
    for (const WgmmaForm& f : kWgmmaForms) {
      const int r = f.n / 2;
      const std::string R = std::to_string(r), N = std::to_string(f.n);
      const std::string a_param = f.a_regs ? "const uint32_t (&a)[4]" : "uint64_t a";
      out += "  static __device__ __forceinline__ void " + std::string(f.name) + "(float (&d)[" + R +
             "], " + a_param + ", uint64_t b" + (f.a_regs ? "" : ", int accumulate") + ") {\n";
      if (emulated) {
        out += "    ig_host_wgmma(d, " + N + ", " + (f.a_regs ? "0, a" : "a, nullptr") + ", b, " +
               (f.b_mn ? "true" : "false") + ", " + (f.a_regs ? "true" : "accumulate != 0") + ", " +
               (t == "bf16" ? "true" : "false") + ", " + (f.a_mn ? "true" : "false") + ");\n  }\n";
        continue;
      }
      const std::string head = "wgmma.mma_async.sync.aligned.m64n" + N + "k16.f32." + t + "." + t +
                               " {" + regs(r, 0) + "}, ";
      if (f.a_regs) {
        out += "    asm volatile(\"" + head + "{" + regs(4, r) + "}, %" + std::to_string(r + 4) +
               ", 1, 1, 1, " + (f.b_mn ? "1" : "0") + ";\\n\"\n      : " + outs(r) +
               "\n      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b));\n  }\n";
      } else {
        out += "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + std::to_string(r + 2) +
               ", 0;\\n\"\n      \"" + head + "%" + R + ", %" + std::to_string(r + 1) +
               ", p, 1, 1, " + (f.a_mn ? "1" : "0") + ", " + (f.b_mn ? "1" : "0") +
               ";\\n}\\n\"\n      : " + outs(r) + "\n      : \"l\"(a), \"l\"(b), \"r\"(accumulate));\n  }\n";
      }
    }
    out += "};\n";
  }
  return out;
}

const char* kKernel = R"CUDA(
// The 64-bit wgmma descriptor of a 128-byte-swizzled tile at shared address
// `addr` (16-byte units): the stride byte offset is between 8-row groups
// (1024 bytes); the leading byte offset `lbo` between the 64-column swizzle
// atoms of an MN-major operand (v at head dim 128; K-major operands never
// span atoms within one k-step); swizzle mode 1 = 128B.
__device__ __forceinline__ uint64_t ig_fa90_desc(uint32_t addr, uint32_t lbo = 16) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(lbo >> 4) << 16) |
         (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
#ifdef IG_HOST_EMULATION
// The emulated wgmma finishes as it is issued; shared addresses are offsets
// into the block's dynamic shared memory.
__device__ __forceinline__ void ig_fa90_fence() {}
__device__ __forceinline__ void ig_fa90_commit() {}
__device__ __forceinline__ void ig_fa90_wait() {}
__device__ __forceinline__ void ig_fa90_proxy_fence() {}
template <int N> __device__ __forceinline__ void ig_fa90_pin(float (&)[N]) {}
#define IG_FA90_DYNAMIC_SMEM(name) unsigned char* const name = ig_host_dynamic_shared
__device__ __forceinline__ uint32_t ig_fa90_saddr(const unsigned char* p) {
  return uint32_t(p - ig_host_dynamic_shared);
}
__device__ __forceinline__ void ig_fa90_cp16(uint32_t dst, const void* src, int bytes) {
  ig_host_cp_async16(ig_host_dynamic_shared + dst, src, bytes);
}
#else
__device__ __forceinline__ void ig_fa90_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void ig_fa90_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void ig_fa90_wait() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// cp.async's writes (the generic proxy) become visible to wgmma (the async
// proxy) through this fence, after the wait and before the barrier.
__device__ __forceinline__ void ig_fa90_proxy_fence() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Pins registers behind the wait: the compiler may not read an accumulator
// the asynchronous product is still writing.
template <int N>
__device__ __forceinline__ void ig_fa90_pin(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
#define IG_FA90_DYNAMIC_SMEM(name) extern __shared__ unsigned char name[]
__device__ __forceinline__ uint32_t ig_fa90_saddr(const unsigned char* p) { return ig_fa_smem(p); }
__device__ __forceinline__ void ig_fa90_cp16(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
#endif

// Head tile HD (64 or 128) and key block BN: 128 keys at 64, 64 at 128 (so
// that s, the output and p fit 128 registers either way). With an attn_mask
// (MASK 1: bool, 2: the input's dtype) 64 keys at either, and the mask's
// tiles (BM rows of BN elements, MP bytes apart: 16 bytes of padding so the
// rows' pairs spread over the banks) in 2 stages after v's 3.
template <int HD, int MASK = 0> struct IgFa90Tiles {
  static constexpr int BM = 128, BN = HD == 64 && MASK == 0 ? 128 : 64, ATOMS = HD / 64;
  static constexpr int MP = MASK == 0 ? 0 : BN * MASK + 16;
};

// One thread's share of staging an operand [rows, D] (row stride rs,
// D <= HD, D % 8 == 0, rows 16-byte aligned) into swizzled R x HD tiles:
// HD / 64 column atoms of R rows of 128 bytes, one after the other; the
// thread copies 16-byte chunk c of rows r, r + PASS, ... (cp.async, zero
// past `rows` and D). What does not change from tile to tile (the chunk's
// source and destination offsets, the pass stride) is worked out once, so a
// key step spends its issue slots on the copies, not on reloading the
// parameters and 64-bit products (SASS at head tile 64: the step's staging
// went from 166 to 111 instructions a thread, for two more local loads of
// spilled values a step; not yet timed on a GPU).
template <class T, int HD>
struct IgFa90Rows {
  static constexpr int CH = HD / 8, PASS = 256 / CH;  // chunks a row, rows a pass
  const T* base;     // the operand's row 0 (the address of the zero-filled copies)
  const T* src;      // row r, chunk c
  int64_t rs, step;  // row stride, PASS rows
  int64_t left;      // rows - r
  uint32_t dst;      // offset in a tile's first atom rows
  bool col;          // chunk c is inside D

  __device__ __forceinline__ IgFa90Rows(const T* b, int64_t row_stride, int64_t rows, int D) {
    const int c = threadIdx.x % CH, r = threadIdx.x / CH;
    base = b;
    src = b + r * row_stride + c * 8;
    rs = row_stride;
    step = PASS * row_stride;
    left = rows - r;
    dst = r * 128 + (((c % 8) ^ (r & 7)) << 4);
    col = c * 8 < D;
  }
  // Rows [r0, r0 + R) into the R-row tile at shared address `tile`.
  template <int R>
  __device__ __forceinline__ void stage(uint32_t tile, int64_t r0) const {
    const T* from = src + r0 * rs;
    const int64_t n = left - r0;
    const uint32_t to = tile + (threadIdx.x % CH / 8) * R * 128 + dst;
#pragma unroll
    for (int u = 0; u < R / PASS; ++u) {
      const bool live = col && PASS * u < n;
      ig_fa90_cp16(to + u * PASS * 128, live ? from + u * step : base, live ? 16 : 0);
    }
  }
};

template <class T, int HD, int MASK = 0>
__device__ __forceinline__ void ig_flash_fwd_sm90(const IgFlashParams& p) {
  typedef IgTensorCore<T> TC;
  typedef IgFa90Tiles<HD, MASK> Tiles;
  constexpr int BM = Tiles::BM, BN = Tiles::BN, NA = Tiles::ATOMS, MP = Tiles::MP;
  constexpr uint32_t QT = BM * 128 * NA, KT = BN * 128 * NA;  // bytes of q's tile, of k's or v's
  IG_FA90_DYNAMIC_SMEM(ig_fa90_smem);
  const uint32_t s0 = ig_fa90_saddr(ig_fa90_smem), sQ = (s0 + 1023) & ~1023u;
  const uint32_t sK = sQ + QT, sV = sK + 2 * KT;
  // The mask's 2 stages, as a generic pointer (ig_fa_stage_mask's copies).
  unsigned char* const gM = ig_fa90_smem + (sV + 3 * KT - s0);
  // Query blocks major, batch minor, the last (longest causal) first.
  const int64_t nqb = (p.L + BM - 1) / BM;
  const int64_t b = int64_t(blockIdx.x) % p.batch;
  const int64_t i0 = (nqb - 1 - int64_t(blockIdx.x) / p.batch) * BM;
  const int wg = threadIdx.x / 128, w = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const T* Q = ig_fa_base<T>(p.q, p, b);
  const T* K = ig_fa_base<T>(p.k, p, b);
  const T* V = ig_fa_base<T>(p.v, p, b);
  const char* const M = MASK ? ig_fa_mask_base<T>(p, b) : nullptr;
  const int64_t kend = p.causal ? (p.S < i0 + BM ? p.S : i0 + BM) : p.S;
  const int nblk = int((kend + BN - 1) / BN);
  // q and the first two key blocks.
  const IgFa90Rows<T, HD> qrows(Q, p.q.rs, p.L, p.D), krows(K, p.k.rs, p.S, p.D),
      vrows(V, p.v.rs, p.S, p.D);
  qrows.template stage<BM>(sQ, i0);
  for (int jb = 0; jb < 2 && jb < nblk; ++jb) {
    krows.template stage<BN>(sK + jb * KT, jb * BN);
    vrows.template stage<BN>(sV + jb * KT, jb * BN);
    if (MASK) ig_fa_stage_mask<T, BM, BN, MP>(gM + jb * BM * MP, M, p, i0, jb * BN);
  }
  ig_fa_cp_commit();
  ig_fa_cp_wait();
  ig_fa90_proxy_fence();
  __syncthreads();

  float acc[HD / 2];
#pragma unroll
  for (int i = 0; i < HD / 2; ++i) acc[i] = 0.f;
  float m[2] = {-IG_FA_INF, -IG_FA_INF}, l[2] = {0.f, 0.f};  // log2 units
  const int64_t first = i0 + wg * 64 + w * 16 + g;
  const int64_t rw[2] = {first, first + 8};
  const uint32_t qaddr = sQ + wg * 64 * 128;  // this warpgroup's 64 rows in each atom
  const float sl2 = p.scale_log2;
  uint32_t pa[BN / 16][4];
  for (int jb = 0; jb < nblk; ++jb) {
    const int64_t j0 = int64_t(jb) * BN;
    float s[BN / 2];
    const uint32_t kaddr = sK + (jb & 1) * KT, vaddr = sV + (jb % 3) * KT;
    // s = q k^T: k-step kk reads 32 bytes at (kk % 4) * 32 of atom kk / 4.
    ig_fa90_fence();
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      const uint64_t a = ig_fa90_desc(qaddr + (kk / 4) * BM * 128 + (kk % 4) * 32);
      const uint64_t bk = ig_fa90_desc(kaddr + (kk / 4) * BN * 128 + (kk % 4) * 32);
      if constexpr (BN == 128) IgWgmma<T>::ss_n128(s, a, bk, kk > 0);
      else IgWgmma<T>::ss_n64(s, a, bk, kk > 0);
    }
    ig_fa90_commit();
    ig_fa90_wait();
    ig_fa90_pin(s);
    // The online softmax (flash_attention.cpp's): blocks crossing S or this
    // warpgroup's causal diagonal, a scale that is not positive, or an
    // attn_mask (its terms from the staged tile, in log2 units as the
    // scores) check every score in local int coordinates; the others fold
    // the scale into the exponential's FFMA, their max taken unscaled.
    const bool edge =
        MASK || !(sl2 > 0.f) || j0 + BN > p.S || (p.causal && j0 + BN - 1 > i0 + wg * 64);
    float mx[2] = {-IG_FA_INF, -IG_FA_INF};
    if (edge) {
      const int ncol = j0 + BN > p.S ? int(p.S - j0) : BN;
      int last[2];
      const unsigned char* mrow[2] = {nullptr, nullptr};
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t d = p.causal ? rw[h] - j0 : BN;
        last[h] = d < -1 ? -1 : (d > BN ? BN : int(d));
        if (MASK) mrow[h] = ig_fa_mask_row<MP>(p, gM + (jb & 1) * BM * MP, int(rw[h] - i0));
      }
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float mt[2] = {0.f, 0.f};
          if (MASK) ig_fa_mask_pair<T, MASK>(mrow[h], 8 * j + 2 * t, mt[0], mt[1]);
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const int e = 2 * h + u, c = 8 * j + 2 * t + u;
            float x = s[4 * j + e] * sl2 + mt[u];
            if (c >= ncol || c > last[h]) x = -IG_FA_INF;
            s[4 * j + e] = x;
            mx[h] = fmaxf(mx[h], x);
          }
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
      for (int j = 0; j < HD / 8; ++j) {
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
    // out += p v(j), waited for after the barrier below. k-step kk is keys
    // 16 kk.. (2048 bytes into every atom); v's atoms are BN rows apart.
    ig_fa90_fence();
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      const uint64_t bv = ig_fa90_desc(vaddr + kk * 2048, BN * 128);
      if constexpr (HD == 64) IgWgmma<T>::rs_n64(acc, pa[kk], bv);
      else IgWgmma<T>::rs_n128(acc, pa[kk], bv);
    }
    ig_fa90_commit();
    // While p v(j) runs: k(j + 1) and v(j + 1) have landed, k(j + 2) and
    // v(j + 2) start (k's stage held k(j), v's v(j - 1): read by every warp
    // before this barrier).
    ig_fa_cp_wait();
    ig_fa90_proxy_fence();
    __syncthreads();
    if (jb + 2 < nblk) {
      krows.template stage<BN>(sK + (jb & 1) * KT, j0 + 2 * BN);
      vrows.template stage<BN>(sV + ((jb + 2) % 3) * KT, j0 + 2 * BN);
      if (MASK) ig_fa_stage_mask<T, BM, BN, MP>(gM + (jb & 1) * BM * MP, M, p, i0, j0 + 2 * BN);
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
    for (int j = 0; j < HD / 8; ++j) {
      const int c = 8 * j + 2 * t;
      if (c < p.D)
        *reinterpret_cast<uint32_t*>(orow + c) = TC::pack(acc[4 * j + 2 * h] * inv, acc[4 * j + 2 * h + 1] * inv);
    }
    if (t == 0) p.lse[b * p.L + r] = lr > 0.f ? m[h] * 0.6931471805599453f + logf(lr) : -IG_FA_INF;
  }
}

// The backward on Hopper (head tiles 64 and 128; at 128, dk and dv take 128
// of a thread's 232 registers, one block an SM, 146 KiB of shared memory): a
// block owns BN = 128 keys of one batch index (64 a warpgroup) and walks the query blocks BM = 64 rows at a
// time, as the mma.sync backward does, with every product a wgmma:
//   s^T = k q^T and dp^T = v dout^T     (SS: k, v, q, dout K-major tiles)
//   p^T = exp2(s^T scale log2 e - lse), ds^T = p^T (dp^T - D)  (registers)
//   dv += p^T dout and dk += ds^T q     (RS: p^T, ds^T registers; dout, q
//                                        MN-major B)
//   dq = ds k over the block's 128 keys, HD / 2 columns a warpgroup (SS: both
//       warpgroups' ds^T written to shared memory keys by rows, read as an
//       MN-major A; k as an MN-major B), added into the float32 workspace
//       by red.global.add.v2.f32: one add per element a block
// q, dout, lse and D of the next query block load while this one computes
// (2 stages; lse and D through registers, stored at the step's end). k and
// v stay in shared memory for the whole walk; dk and dv stay in registers
// and are written once, dk scaled. Shared memory at head tile 64 (k, v, q
// and dout twice as large at 128): k, v (16 KiB each), q and dout (2 stages
// of 8 KiB each), ds^T (8 KiB a warpgroup), lse and D (2 stages of 64 floats
// each): 81 KiB and 1 KiB to align them.
//
// The step is bound by instruction issue, not the tensor cores (Nsight
// Compute on the H200 at 8 x 12 x 2048 x 64: 1,056 instructions a warp a
// step for 20 wgmma, 1.7 issued a cycle an SM), so the loop does little
// besides the products: each tile's descriptor is worked out once and a
// k-step adds to it (it was built and moved to a uniform register per
// wgmma: 141 instructions to issue 8), the ds^T stores' swizzle is the
// chunk j ^ g of a row worked out once, lse and D are read as pairs, blocks
// inside S and off the causal diagonal take a p^T path that checks nothing,
// and whole blocks add dq without a branch a pair. 698 instructions a step;
// 1119 -> 849 us at that size (torch's cuDNN backward: about 630).
struct alignas(8) IgFa90F2 { float x, y; };
template <bool B> struct IgFa90Bool { static constexpr bool value = B; };
template <class T, int HD, int MASK = 0>
__device__ __forceinline__ void ig_flash_bwd_sm90(const IgFlashParams& p) {
  static_assert(HD == 64 || HD == 128, "the Hopper backward is built for head tiles 64 and 128");
  typedef IgTensorCore<T> TC;
  constexpr int BN = 128, BM = 64, NA = HD / 64;
  // Bytes of a key tile, of a query tile (NA swizzle atoms each, one after
  // the other) and of a warpgroup's ds^T tile (64 keys x BM queries).
  constexpr uint32_t KT = BN * 128 * NA, QT = BM * 128 * NA, ST = 64 * 128;
  constexpr int CW = HD / 2;  // dq's columns a warpgroup
  constexpr int MP = MASK == 0 ? 0 : BN * MASK + 16;  // an attn_mask tile's row pitch (bytes)
  IG_FA90_DYNAMIC_SMEM(ig_fa90_smem);
  const uint32_t s0 = ig_fa90_saddr(ig_fa90_smem), base = (s0 + 1023) & ~1023u;
  unsigned char* const gbase = ig_fa90_smem + (base - s0);  // `base` as a generic pointer
  const uint32_t sK = base, sV = sK + KT, sQ = sV + KT, sG = sQ + 2 * QT, sS = sG + 2 * QT;
  float* const sL = reinterpret_cast<float*>(gbase + (sS + 2 * ST - base));  // [2][BM]
  float* const sD = sL + 2 * BM;                                             // [2][BM]
  // The attn_mask's tiles of a query block's rows and the block's keys, in
  // 2 stages as q's, after lse and D (a generic pointer: ig_fa_stage_mask's).
  unsigned char* const gMask = reinterpret_cast<unsigned char*>(sD + 2 * BM);
  const int64_t b = int64_t(blockIdx.x) % p.batch, j0 = (int64_t(blockIdx.x) / p.batch) * BN;
  const int wg = threadIdx.x / 128, w = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int kl = 64 * wg + 16 * w + g;  // this lane's first key in the block (and kl + 8)
  const T* Q = ig_fa_base<T>(p.q, p, b);
  const T* K = ig_fa_base<T>(p.k, p, b);
  const T* V = ig_fa_base<T>(p.v, p, b);
  const T* G = ig_fa_base<T>(p.g, p, b);
  const IgFa90Rows<T, HD> qrows(Q, p.q.rs, p.L, p.D), grows(G, p.g.rs, p.L, p.D),
      krows(K, p.k.rs, p.S, p.D), vrows(V, p.v.rs, p.S, p.D);
  const char* const M = MASK ? ig_fa_mask_base<T>(p, b) : nullptr;
  auto stage_rows = [&](int64_t i0, int st) {
    qrows.template stage<BM>(sQ + st * QT, i0);
    grows.template stage<BM>(sG + st * QT, i0);
    if (MASK) ig_fa_stage_mask<T, BM, BN, MP>(gMask + st * BM * MP, M, p, i0, j0);
  };
  // lse (natural log) and D of a block's rows, thread r < BM loading row r
  // into registers a step ahead and storing it (lse in log2 units) into its
  // stage at the end of the step, so the loads' latency hides under the step.
  // Rows past L keep lse +inf: p = 0.
  float nl = IG_FA_INF, nd = 0.f;
  auto load_rows = [&](int64_t i0) {
    nl = IG_FA_INF;
    nd = 0.f;
    if (threadIdx.x < BM && i0 + threadIdx.x < p.L) {
      nl = p.lse[b * p.L + i0 + threadIdx.x];
      nd = p.delta[b * p.L + i0 + threadIdx.x];
    }
  };
  auto store_rows = [&](int st) {
    // Fully masked rows (lse = -inf) get p = 0 too.
    if (threadIdx.x < BM) {
      sL[st * BM + threadIdx.x] = nl == -IG_FA_INF ? IG_FA_INF : nl * 1.4426950408889634f;
      sD[st * BM + threadIdx.x] = nd;
    }
  };
  const int64_t istart = p.causal ? (j0 / BM) * BM : 0;
  krows.template stage<BN>(sK, j0);
  vrows.template stage<BN>(sV, j0);
  if (istart < p.L) {
    stage_rows(istart, 0);
    load_rows(istart);
    store_rows(0);
  }
  ig_fa_cp_commit();

  float dk[HD / 2], dv[HD / 2];
#pragma unroll
  for (int i = 0; i < HD / 2; ++i) dk[i] = dv[i] = 0.f;
  // Each tile's descriptor, worked out once: a k-step adds its byte offset
  // / 16 to the start address (the low field; no carry out of it below 256
  // KiB), so issuing a wgmma costs an add, not a descriptor.
  const uint64_t kD = ig_fa90_desc(sK + wg * 64 * 128), vD = ig_fa90_desc(sV + wg * 64 * 128);
  const uint64_t qD0 = ig_fa90_desc(sQ), gD0 = ig_fa90_desc(sG), dsD = ig_fa90_desc(sS);
  // q and dout are K-major B in s^T and dp^T, MN-major B in dk and dv, where
  // at head tile 128 the leading byte offset is their atoms' distance (BM
  // rows): added to the descriptor's field (16 bytes, 1, by default).
  constexpr uint64_t MN_LBO = HD == 64 ? 0 : uint64_t(BM * 128 / 16 - 1) << 16;
  // dq's B: k's columns CW wg..: 64 bytes into its rows at head tile 64,
  // its second atom at 128.
  const uint64_t kcD = ig_fa90_desc(sK + (HD == 64 ? wg * 64 : wg * BN * 128));
  // This thread's ds^T stores: key rows 16 w + g (+ 8) of its warpgroup's
  // tile, query columns 8 j + 2 t; the 128-byte swizzle XORs the 16-byte
  // chunk j with the row's low bits, g.
  const uint32_t dsRow = (sS + wg * ST - base) + (16 * w + g) * 128 + 4 * t;
  const float sl2 = p.scale_log2;
  int st = 0;
  for (int64_t i0 = istart; i0 < p.L; i0 += BM, st ^= 1) {
    ig_fa_cp_wait();
    ig_fa90_proxy_fence();
    __syncthreads();  // this query block is staged; every warp is done with the other stage
    const bool more = i0 + BM < p.L;
    if (more) {
      stage_rows(i0 + BM, st ^ 1);
      ig_fa_cp_commit();
      load_rows(i0 + BM);
    }
    const uint64_t qD = qD0 + uint64_t(st * (QT >> 4)), gD = gD0 + uint64_t(st * (QT >> 4));
    float s[32], dp[32];
    ig_fa90_fence();
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk)  // k-step kk: 32 bytes at (kk % 4) * 32 of atom kk / 4
      IgWgmma<T>::ss_n64(s, kD + (kk / 4) * (BN * 8) + 2 * (kk % 4),
                         qD + (kk / 4) * (BM * 8) + 2 * (kk % 4), kk > 0);
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk)
      IgWgmma<T>::ss_n64(dp, vD + (kk / 4) * (BN * 8) + 2 * (kk % 4),
                         gD + (kk / 4) * (BM * 8) + 2 * (kk % 4), kk > 0);
    ig_fa90_commit();
    ig_fa90_wait();
    ig_fa90_pin(s);
    ig_fa90_pin(dp);
    // p^T and ds^T. Keys past S, and with is_causal keys after the query
    // (local key k after local query q when k - q > i0 - j0), give p = 0;
    // rows past L have lse +inf (and, with a mask, are checked: their mask
    // rows are not staged). Blocks inside S and L and off the diagonal
    // take the path that checks nothing but the mask's terms.
    const float* const Lr = sL + st * BM + 2 * t;
    const float* const Dr = sD + st * BM + 2 * t;
    const int nk = j0 + BN > p.S ? int(p.S - j0) : BN;
    const int nq = MASK && i0 + BM > p.L ? int(p.L - i0) : BM;
    const unsigned char* const gMs = gMask + st * BM * MP;
    const int off = p.causal ? int(i0 - j0 < -BN ? -BN : i0 - j0) : BN + BM;
    uint32_t pa[BM / 16][4], sa[BM / 16][4];
    auto p_and_ds = [&](auto checked) {
#pragma unroll
      for (int j = 0; j < BM / 8; ++j) {
        const IgFa90F2 l = *reinterpret_cast<const IgFa90F2*>(Lr + 8 * j);
        const IgFa90F2 d = *reinterpret_cast<const IgFa90F2*>(Dr + 8 * j);
        float pv[4], dsv[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int ql = 8 * j + 2 * t + (e & 1), k = kl + (e < 2 ? 0 : 8);
          float y = fmaf(s[4 * j + e], sl2, -(e & 1 ? l.y : l.x));
          if (MASK) y += ig_fa_mask_at<T, MASK>(ig_fa_mask_row<MP>(p, gMs, ql), k);
          float x = ig_fa_exp2(y);
          if (decltype(checked)::value && (k >= nk || k - ql > off || ql >= nq)) x = 0.f;
          pv[e] = x;
          dsv[e] = x * (dp[4 * j + e] - (e & 1 ? d.y : d.x));
        }
        pa[j / 2][(j & 1) * 2] = TC::pack(pv[0], pv[1]);
        pa[j / 2][(j & 1) * 2 + 1] = TC::pack(pv[2], pv[3]);
        sa[j / 2][(j & 1) * 2] = TC::pack(dsv[0], dsv[1]);
        sa[j / 2][(j & 1) * 2 + 1] = TC::pack(dsv[2], dsv[3]);
        // ds^T into this warpgroup's swizzled tile: key rows, query columns.
        const uint32_t chunk = uint32_t(j ^ g) << 4;
        *reinterpret_cast<uint32_t*>(gbase + dsRow + chunk) = sa[j / 2][(j & 1) * 2];
        *reinterpret_cast<uint32_t*>(gbase + dsRow + 8 * 128 + chunk) = sa[j / 2][(j & 1) * 2 + 1];
      }
    };
    if (j0 + BN > p.S || (p.causal && j0 + BN - 1 > i0) || nq < BM) p_and_ds(IgFa90Bool<true>());
    else p_and_ds(IgFa90Bool<false>());
    // dv += p^T dout, dk += ds^T q: k-step kk is queries 16 kk.. (2048 bytes).
    ig_fa90_fence();
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      if constexpr (HD == 64) IgWgmma<T>::rs_n64(dv, pa[kk], gD + 128 * kk);
      else IgWgmma<T>::rs_n128(dv, pa[kk], gD + MN_LBO + 128 * kk);
    }
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      if constexpr (HD == 64) IgWgmma<T>::rs_n64(dk, sa[kk], qD + 128 * kk);
      else IgWgmma<T>::rs_n128(dk, sa[kk], qD + MN_LBO + 128 * kk);
    }
    ig_fa90_commit();
    // dq = ds k over all 128 keys, warpgroup wg taking columns CW wg.. (so
    // each dq element gets one atomic add a block, not one a warpgroup), once
    // both ds^T tiles are in shared memory (written by the generic proxy:
    // fence, then the block meets). k-step kk is keys 16 kk..: ds^T's two
    // tiles sit one after the other, 2048 bytes a k-step, as do k's rows; the
    // columns start 64 bytes into k's swizzled rows at head tile 64, at its
    // second atom at 128.
    ig_fa90_proxy_fence();
    __syncthreads();
    float dq[CW / 2];
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      if constexpr (HD == 64) IgWgmma<T>::ss_n32_tt(dq, dsD + 128 * kk, kcD + 128 * kk, kk > 0);
      else IgWgmma<T>::ss_n64_tt(dq, dsD + 128 * kk, kcD + 128 * kk, kk > 0);
    }
    ig_fa90_commit();
    ig_fa90_wait();
    ig_fa90_pin(dq);
    ig_fa90_pin(dv);
    ig_fa90_pin(dk);
    // dq's adds: a block of whole rows and columns checks nothing (a branch
    // around each add costs more than the add).
    float* const dqRow = p.dq + (b * p.L + i0 + 16 * w + g) * p.D + CW * wg + 2 * t;
    if (i0 + BM <= p.L && p.D == HD) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int j = 0; j < CW / 8; ++j)
          ig_fa_atomic_add2(dqRow + 8 * h * HD + 8 * j, dq[4 * j + 2 * h] * p.scale, dq[4 * j + 2 * h + 1] * p.scale);
    } else {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (i0 + 16 * w + g + 8 * h >= p.L) continue;
#pragma unroll
        for (int j = 0; j < CW / 8; ++j)
          if (CW * wg + 8 * j + 2 * t < p.D)
            ig_fa_atomic_add2(dqRow + 8 * h * p.D + 8 * j, dq[4 * j + 2 * h] * p.scale, dq[4 * j + 2 * h + 1] * p.scale);
      }
    }
    if (more) store_rows(st ^ 1);
  }
  // This lane's rows of dk (scaled) and dv.
  T* const dkp = const_cast<T*>(ig_fa_base<T>(p.dk, p, b));
  T* const dvp = const_cast<T*>(ig_fa_base<T>(p.dv, p, b));
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t key = j0 + kl + 8 * h;
    if (key >= p.S) continue;
#pragma unroll
    for (int j = 0; j < HD / 8; ++j) {
      const int c = 8 * j + 2 * t;
      if (c >= p.D) continue;
      *reinterpret_cast<uint32_t*>(dkp + key * p.dk.rs + c) =
          TC::pack(dk[4 * j + 2 * h] * p.scale, dk[4 * j + 2 * h + 1] * p.scale);
      *reinterpret_cast<uint32_t*>(dvp + key * p.dv.rs + c) = TC::pack(dv[4 * j + 2 * h], dv[4 * j + 2 * h + 1]);
    }
  }
}
)CUDA";

}  // namespace

const std::string& flash_sm90_templates() {
  static const std::string text =
      "\n// ---- flash attention on Hopper (kernels/cuda/flash_attention_sm90.cpp) ----\n"
      "template <class T> struct IgWgmma;\n#ifdef IG_HOST_EMULATION\n" + wgmma_wrappers(true) +
      "#else\n" + wgmma_wrappers(false) + "#endif\n" + kKernel;
  return text;
}

namespace {
// Bytes between the rows of a staged attn_mask tile of `keys` columns (the
// kernels' MP: one or two bytes a key for mask kind 1 or 2, and 16 of
// padding so that rows' pairs spread over the banks); 0 without a mask.
int mask_row_pitch(int keys, int mask) { return mask == 0 ? 0 : keys * mask + 16; }
}  // namespace

// The backward's tiles (its comment above: 82 KiB at head tile 64, 146 at
// 128), with an attn_mask its 2 stages of 64 rows (18 or 34 KiB), and 1024
// bytes of slack to align them to the swizzle's 1024-byte groups (dynamic
// shared memory starts 16-byte aligned).
int flash_backward_sm90_shared_bytes(int kd, int mask) {
  const int atoms = kd / 64, key_tile = 128 * 128 * atoms, query_tile = 64 * 128 * atoms;
  const int mask_tiles = 2 * 64 * mask_row_pitch(128, mask);
  return 1024 + 2 * key_tile + 4 * query_tile + 2 * 64 * 128 + 4 * 64 * 4 + mask_tiles;
}

// 1024 bytes of slack to align the tiles, q (128 rows), k in 2 stages and v
// in 3 (IgFa90Tiles' BN rows each), of head tile kd: 97 KiB at 64, 113 KiB
// at 128 (two blocks an SM: 228 KiB with the 1 KiB each block reserves);
// with a mask (64-key steps) its 2 stages of 128 rows: 77 or 93 KiB at 64
// (bool, the input's dtype), 133 or 149 KiB at 128 (one block an SM).
int flash_forward_sm90_shared_bytes(int kd, int mask) {
  const int bn = kd == 64 && mask == 0 ? 128 : 64;
  const int mask_tiles = 2 * 128 * mask_row_pitch(bn, mask);
  return 1024 + (128 + 5 * bn) * 128 * (kd / 64) + mask_tiles;
}

}  // namespace ignis::cuda

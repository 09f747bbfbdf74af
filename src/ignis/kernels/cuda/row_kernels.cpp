#include "ignis/kernels/cuda/row_kernels.h"

#include <algorithm>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/kernel_errors.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cuda/device_scalar_ops.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis::cuda {

namespace {

constexpr int kBlockThreads = 256;

// Must match IgRowParams in kTemplates.
struct RowParams {
  const void* in;
  void* out;
  const void* w;
  const void* b;
  void* mean;
  void* rstd;
  const void* g;
  int64_t rows, D, inner;
  double eps;
  int32_t kind;
  int32_t narrow;  // kNarrowParams | kNarrowStats
};

// RowParams::narrow: layer norm's weight and bias (kNarrowParams), its mean
// and rstd (kNarrowStats) are in the input's dtype T, else in op-math C.
// The kernels widen them as they load, as a conversion kernel would, but
// without the launch and the extra pass. The parameters' dtype is a
// template argument (P: a variant of its own, `_pT` in the symbol), read
// once a vector; a branch on it there cost the kernels a fifth of their
// speed on the H200. The statistics, read once a row, are a run-time flag.
constexpr int32_t kNarrowParams = 1, kNarrowStats = 2;
// layer_norm_bwd_cols_sum's outputs, grad_weight and grad_bias, in T (else C).
constexpr int32_t kNarrowWeightGrad = 4, kNarrowBiasGrad = 8;

// Must match IgCEParams in kTemplates.
struct CEParams {
  const void* logits;
  const void* target;
  const void* weight;
  void* loss;
  void* picked_weight;
  void* grad_in;
  const void* grad_out;
  const void* total;
  int64_t rows, C, ignore_index;
  double smoothing;
  int32_t target_u8, grad_per_row, weights_only;
  KernelErrorRecord* error;  // a target out of range (Note [Index errors on the GPU])
};

const char* kTemplates = R"CUDA(
// ---- softmax and layer norm (kernels/cuda/row_kernels.cpp) ----
struct IgRowParams {
  const char* in; char* out; const char* w; const char* b; char* mean; char* rstd; const char* g;
  int64_t rows, D, inner;
  double eps;
  int32_t kind;  // softmax 0, log_softmax 1, safe softmax 2 (cpu::SoftmaxKind)
  int32_t narrow;  // bit 2: mean and rstd in T, else C (bit 1, parameters in T, picks
                   // the kernel: its template argument P); layer_norm_bwd_cols_sum's
                   // outputs in T, else C: bit 4 grad_weight, bit 8 grad_bias
};
// Row r's statistic (mean, rstd) in op-math, stored in T when `narrow`.
template <class T, class C> __forceinline__ C ig_stat(const char* base, int64_t r, bool narrow) {
  return narrow ? ig_convert<C>(reinterpret_cast<const T*>(base)[r])
                : reinterpret_cast<const C*>(base)[r];
}
template <class T> __forceinline__ T ig_shfl_xor(const T& v, int o) {
  constexpr int W = (sizeof(T) + 3) / 4;
  union U { T t; uint32_t w[W]; } a, r;
  a.t = v;
#pragma unroll
  for (int i = 0; i < W; ++i) r.w[i] = __shfl_xor_sync(0xffffffffu, a.w[i], o);
  return r.t;
}
template <class T> __forceinline__ T ig_shfl_lane0(const T& v) {
  constexpr int W = (sizeof(T) + 3) / 4;
  union U { T t; uint32_t w[W]; } a, r;
  a.t = v;
#pragma unroll
  for (int i = 0; i < W; ++i) r.w[i] = __shfl_sync(0xffffffffu, a.w[i], 0);
  return r.t;
}
// Combines v over the x threads of this block row (blockDim.x a multiple of
// 32; the block at most 1024 threads, 32 warps) and gives every one of them
// the same result (lane 0's: the butterfly's lanes round in different
// orders). All threads of the block must call it.
template <class T, class F> __forceinline__ T ig_row_allreduce(T v, F f) {
  static_assert(sizeof(T) <= 16, "a row statistic of at most 16 bytes");
  __shared__ __align__(16) char raw[32 * 16];
  T* smem = reinterpret_cast<T*>(raw);
  if (blockDim.x >= 32) {  // always on a GPU; a host emulation runs 1-thread blocks
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = f(v, ig_shfl_xor(v, o));
    v = ig_shfl_lane0(v);
  }
  const int warps = blockDim.x / 32;
  if (warps > 1) {
    __syncthreads();
    if ((threadIdx.x & 31) == 0) smem[threadIdx.y * warps + threadIdx.x / 32] = v;
    __syncthreads();
    v = smem[threadIdx.y * warps];
    for (int i = 1; i < warps; ++i) v = f(v, smem[threadIdx.y * warps + i]);
  }
  return v;
}
#define IG_ROW_STEP (int64_t(gridDim.x) * blockDim.y)  // rows a grid covers per iteration
struct IgAdd { template <class T> T operator()(T a, T b) const { return a + b; } };
// Softmax statistics: the running max and the sum of exp(x - max); s == 0
// marks an empty one. Two parts whose max is -inf (only masked entries so
// far) add their counts: exp(-inf - -inf) would be NaN, and the part must
// stay harmless until it meets a finite entry of its row (a causal mask's
// rows merge such parts in a warp's butterfly; a row of nothing but -inf
// keeps m = -inf, which the caller handles).
template <class C> struct IgMS { C m, s; };
struct IgMSMerge {
  template <class C> IgMS<C> operator()(IgMS<C> a, IgMS<C> b) const {
    if (a.s == C(0)) return b;
    if (b.s == C(0)) return a;
    const C m = a.m != a.m ? a.m : (b.m != b.m ? b.m : (a.m > b.m ? a.m : b.m));
    if (m == -std::numeric_limits<C>::infinity()) return IgMS<C>{m, a.s + b.s};
    return IgMS<C>{m, a.s * std::exp(a.m - m) + b.s * std::exp(b.m - m)};
  }
};
template <class C, class T> __forceinline__ T ig_softmax_value(C x, IgMS<C> st, int kind) {
  if (kind == 1) return ig_convert<T>((x - st.m) - std::log(st.s));
  if (kind == 2 && st.m == -std::numeric_limits<C>::infinity()) return ig_convert<T>(C(0));
  return ig_convert<T>(std::exp(x - st.m) / st.s);
}
// Any other dim: a thread per (outer, inner) column, walking it with stride
// `inner` (neighbouring threads read neighbouring elements).
template <class T, class C> __forceinline__ void ig_softmax_cols(const IgRowParams& p) {
  const T* in = reinterpret_cast<const T*>(p.in);
  T* out = reinterpret_cast<T*>(p.out);
  const int64_t cols = p.rows * p.inner;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols; c += step) {
    const T* x = in + (c / p.inner) * p.D * p.inner + c % p.inner;
    T* y = out + (x - in);
    IgMS<C> st{-std::numeric_limits<C>::infinity(), C(0)};
    for (int64_t k = 0; k < p.D; ++k)
      st = IgMSMerge()(st, IgMS<C>{ig_convert<C>(x[k * p.inner]), C(1)});
    for (int64_t k = 0; k < p.D; ++k)
      y[k * p.inner] = ig_softmax_value<C, T>(ig_convert<C>(x[k * p.inner]), st, p.kind);
  }
}
// ---- the vectorised row kernels (Note [Row kernels keep the row in registers]) ----
template <class T, int V> struct alignas(sizeof(T) * V) IgRVec { T v[V]; };
// Vector i of a parameter row (weight, bias) as stored (P). The callers
// widen it an element at a time, where it is used: a vector widened whole
// as it was loaded kept each of a thread's NV vectors in registers at once
// (a fifth more registers for layer norm).
template <class P, int V> __forceinline__ IgRVec<P, V> ig_param_vec(const char* base, int32_t i) {
  return reinterpret_cast<const IgRVec<P, V>*>(base)[i];
}
// NaN-propagating max (as the CPU's softmax takes it).
struct IgMaxNan {
  template <class C> C operator()(C a, C b) const { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
};
// This thread's vector j of a row team's chunk: vector j * blockDim.x +
// threadIdx.x. Offsets inside a row are 32-bit (the host launches rows of
// fewer than 2^31 elements); a row's base is found once, in 64 bits.
__forceinline__ int32_t ig_row_vec(int j) { return j * int32_t(blockDim.x) + int32_t(threadIdx.x); }
// Row r of a [rows, D] operand as vectors of V (row 0 for a row past the end:
// the team still takes part in the block's reductions, and reads nothing).
template <class T, int V> __forceinline__ const IgRVec<T, V>* ig_row_of(const char* base, int64_t r,
                                                                       const IgRowParams& p) {
  return reinterpret_cast<const IgRVec<T, V>*>(base) + (r < p.rows ? r : 0) * (p.D / V);
}
// Softmax along the last dim, rows of D. A resident row (Note [Row kernels
// keep the row in registers]): its max, then exp(x - max) in place of x and
// their sum, then the output as exp * (1 / sum); log_softmax keeps x and
// writes (x - max) - log(sum). A longer row is read twice: the first pass
// folds each vector into a per-thread (max, sum of exp) pair.
template <class T, class C, int V, int NV, class P> __forceinline__ void ig_softmax_rows_v(const IgRowParams& p) {
  const C kNegInf = -std::numeric_limits<C>::infinity();
  const bool resident = p.D / V <= int64_t(blockDim.x) * NV;
  for (int64_t rb = int64_t(blockIdx.x) * blockDim.y; rb < p.rows; rb += IG_ROW_STEP) {
    const int64_t r = rb + threadIdx.y;
    const int32_t nvec = r < p.rows ? int32_t(p.D / V) : 0;
    const IgRVec<T, V>* x = ig_row_of<T, V>(p.in, r, p);
    IgRVec<T, V>* y = const_cast<IgRVec<T, V>*>(ig_row_of<T, V>(p.out, r, p));
    if (resident) {
      C v[NV][V];
      C m = kNegInf;
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        if (ig_row_vec(j) >= nvec) continue;
        const IgRVec<T, V> a = x[ig_row_vec(j)];
#pragma unroll
        for (int e = 0; e < V; ++e) {
          v[j][e] = ig_convert<C>(a.v[e]);
          m = IgMaxNan()(m, v[j][e]);
        }
      }
      m = ig_row_allreduce(m, IgMaxNan());
      C s = 0;
      if (p.kind == 1) {
#pragma unroll
        for (int j = 0; j < NV; ++j)
          if (ig_row_vec(j) < nvec)
#pragma unroll
            for (int e = 0; e < V; ++e) s += std::exp(v[j][e] - m);
        const C ls = std::log(ig_row_allreduce(s, IgAdd()));
#pragma unroll
        for (int j = 0; j < NV; ++j) {
          if (ig_row_vec(j) >= nvec) continue;
          IgRVec<T, V> o;
#pragma unroll
          for (int e = 0; e < V; ++e) o.v[e] = ig_convert<T>((v[j][e] - m) - ls);
          y[ig_row_vec(j)] = o;
        }
        continue;
      }
#pragma unroll
      for (int j = 0; j < NV; ++j)
        if (ig_row_vec(j) < nvec)
#pragma unroll
          for (int e = 0; e < V; ++e) {
            v[j][e] = std::exp(v[j][e] - m);
            s += v[j][e];
          }
      const C inv = C(1) / ig_row_allreduce(s, IgAdd());
      const bool zero = p.kind == 2 && m == kNegInf;  // safe softmax of a fully masked row
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        if (ig_row_vec(j) >= nvec) continue;
        IgRVec<T, V> o;
#pragma unroll
        for (int e = 0; e < V; ++e) o.v[e] = ig_convert<T>(zero ? C(0) : v[j][e] * inv);
        y[ig_row_vec(j)] = o;
      }
      continue;
    }
    IgMS<C> st{kNegInf, C(0)};
    for (int32_t i = threadIdx.x; i < nvec; i += blockDim.x) {
      const IgRVec<T, V> a = x[i];
      C vm = kNegInf;
#pragma unroll
      for (int e = 0; e < V; ++e) vm = IgMaxNan()(vm, ig_convert<C>(a.v[e]));
      C vs = vm == kNegInf ? C(V) : C(0);
      if (vm != kNegInf)
#pragma unroll
        for (int e = 0; e < V; ++e) vs += std::exp(ig_convert<C>(a.v[e]) - vm);
      st = IgMSMerge()(st, IgMS<C>{vm, vs});
    }
    st = ig_row_allreduce(st, IgMSMerge());
    const C inv = C(1) / st.s, ls = std::log(st.s);
    const bool zero = p.kind == 2 && st.m == kNegInf;
    for (int32_t i = threadIdx.x; i < nvec; i += blockDim.x) {
      const IgRVec<T, V> a = x[i];
      IgRVec<T, V> o;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C d = ig_convert<C>(a.v[e]) - st.m;
        o.v[e] = ig_convert<T>(p.kind == 1 ? d - ls : zero ? C(0) : std::exp(d) * inv);
      }
      y[i] = o;
    }
  }
}
// K rows of the same shape (layer norm's x; a backward's two inputs), this
// thread's share of them. A resident row is loaded once, NV vectors of V a
// thread, and kept; a longer one is read again by each pass, a vector at a
// time (`each`: the lean loop keeps the registers of the resident path, the
// one that counts, low).
template <class T, int V, int NV, int K> struct IgRowChunk {
  const IgRVec<T, V>* src[K];
  int32_t nvec;
  bool resident;
  IgRVec<T, V> v[K][NV];
  // Calls f(i, j) for each of this thread's vectors i (held in v[.][j]).
  template <class F> __forceinline__ void each(F f) {
    if (resident) {
#pragma unroll
      for (int j = 0; j < NV; ++j)
        if (ig_row_vec(j) < nvec) f(ig_row_vec(j), j);
      return;
    }
    for (int32_t i = threadIdx.x; i < nvec; i += blockDim.x) {
#pragma unroll
      for (int k = 0; k < K; ++k) v[k][0] = src[k][i];
      f(i, 0);
    }
  }
};
template <class T, int V, int NV, int K>
__forceinline__ void ig_row_chunk_init(IgRowChunk<T, V, NV, K>& c, const char* const (&base)[K],
                                       const IgRowParams& p, int64_t r) {
#pragma unroll
  for (int k = 0; k < K; ++k) c.src[k] = ig_row_of<T, V>(base[k], r, p);
  c.nvec = r < p.rows ? int32_t(p.D / V) : 0;
  c.resident = p.D / V <= int64_t(blockDim.x) * NV;
  if (c.resident)
#pragma unroll
    for (int j = 0; j < NV; ++j)
      if (ig_row_vec(j) < c.nvec)
#pragma unroll
        for (int k = 0; k < K; ++k) c.v[k][j] = c.src[k][ig_row_vec(j)];
}
// The backward of softmax along the last dim, p.in = its output y, p.g = the
// incoming gradient: softmax (kind 0, 2) y (g - sum(g y)); log_softmax
// (kind 1) g - exp(y) sum(g). In op-math, rounded once.
template <class T, class C, int V, int NV, class P> __forceinline__ void ig_softmax_bwd_rows_v(const IgRowParams& p) {
  IgRVec<T, V>* out = reinterpret_cast<IgRVec<T, V>*>(p.out);
  for (int64_t rb = int64_t(blockIdx.x) * blockDim.y; rb < p.rows; rb += IG_ROW_STEP) {
    const int64_t r = rb + threadIdx.y;
    IgRowChunk<T, V, NV, 2> c;  // [0] y, [1] g
    const char* const base[2] = {p.in, p.g};
    ig_row_chunk_init(c, base, p, r);
    C acc = 0;
    c.each([&](int32_t, int j) {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C gv = ig_convert<C>(c.v[1][j].v[e]);
        acc += p.kind == 1 ? gv : gv * ig_convert<C>(c.v[0][j].v[e]);
      }
    });
    acc = ig_row_allreduce(acc, IgAdd());
    IgRVec<T, V>* dx = out + (r < p.rows ? r : 0) * (p.D / V);
    c.each([&](int32_t i, int j) {
      IgRVec<T, V> o;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C yv = ig_convert<C>(c.v[0][j].v[e]), gv = ig_convert<C>(c.v[1][j].v[e]);
        o.v[e] = ig_convert<T>(p.kind == 1 ? gv - std::exp(yv) * acc : yv * (gv - acc));
      }
      dx[i] = o;
    });
  }
}
// Layer norm over rows of D: the mean, then the biased variance about it
// (two passes over the row, as the CPU computes them; three reads of a row
// too long for the registers), then the output.
template <class T, class C, int V, int NV, class P> __forceinline__ void ig_layer_norm_v(const IgRowParams& p) {
  for (int64_t rb = int64_t(blockIdx.x) * blockDim.y; rb < p.rows; rb += IG_ROW_STEP) {
    const int64_t r = rb + threadIdx.y;
    IgRowChunk<T, V, NV, 1> x;
    const char* const base[1] = {p.in};
    ig_row_chunk_init(x, base, p, r);
    C sum = 0;
    x.each([&](int32_t, int j) {
#pragma unroll
      for (int e = 0; e < V; ++e) sum += ig_convert<C>(x.v[0][j].v[e]);
    });
    const C mean = ig_row_allreduce(sum, IgAdd()) / C(p.D);
    C sq = 0;
    x.each([&](int32_t, int j) {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C d = ig_convert<C>(x.v[0][j].v[e]) - mean;
        sq += d * d;
      }
    });
    const C var = ig_row_allreduce(sq, IgAdd()) / C(p.D);
    const C rstd = C(1) / std::sqrt(var + C(p.eps));
    if (r >= p.rows) continue;
    IgRVec<T, V>* y = reinterpret_cast<IgRVec<T, V>*>(p.out) + r * (p.D / V);
    x.each([&](int32_t i, int j) {
      IgRVec<P, V> wv, bv;
      if (p.w) wv = ig_param_vec<P, V>(p.w, i);
      if (p.b) bv = ig_param_vec<P, V>(p.b, i);
      IgRVec<T, V> o;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        C v = (ig_convert<C>(x.v[0][j].v[e]) - mean) * rstd;
        if (p.w) v = v * ig_convert<C>(wv.v[e]);
        if (p.b) v = v + ig_convert<C>(bv.v[e]);
        o.v[e] = ig_convert<T>(v);
      }
      y[i] = o;
    });
    if (threadIdx.x == 0 && (p.narrow & 2)) {
      reinterpret_cast<T*>(p.mean)[r] = ig_convert<T>(mean);
      reinterpret_cast<T*>(p.rstd)[r] = ig_convert<T>(rstd);
    } else if (threadIdx.x == 0) {
      reinterpret_cast<C*>(p.mean)[r] = mean;
      reinterpret_cast<C*>(p.rstd)[r] = rstd;
    }
  }
}
// grad_input of layer norm per row: rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)).
template <class T, class C, int V, int NV, class P> __forceinline__ void ig_layer_norm_bwd_rows_v(const IgRowParams& p) {
  const bool narrow_stats = p.narrow & 2;
  for (int64_t rb = int64_t(blockIdx.x) * blockDim.y; rb < p.rows; rb += IG_ROW_STEP) {
    const int64_t r = rb + threadIdx.y;
    const bool live = r < p.rows;
    IgRowChunk<T, V, NV, 2> c;  // [0] g, [1] x
    const char* const base[2] = {p.g, p.in};
    ig_row_chunk_init(c, base, p, r);
    const C mu = live ? ig_stat<T, C>(p.mean, r, narrow_stats) : C(0);
    const C rs = live ? ig_stat<T, C>(p.rstd, r, narrow_stats) : C(0);
    C a = 0, bsum = 0;
    c.each([&](int32_t i, int j) {
      IgRVec<P, V> wv;
      if (p.w) wv = ig_param_vec<P, V>(p.w, i);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C gw = ig_convert<C>(c.v[0][j].v[e]) * (p.w ? ig_convert<C>(wv.v[e]) : C(1));
        a += gw;
        bsum += gw * (ig_convert<C>(c.v[1][j].v[e]) - mu) * rs;
      }
    });
    a = ig_row_allreduce(a, IgAdd()) / C(p.D);
    bsum = ig_row_allreduce(bsum, IgAdd()) / C(p.D);
    if (!live) continue;
    IgRVec<T, V>* dx = reinterpret_cast<IgRVec<T, V>*>(p.out) + r * (p.D / V);
    c.each([&](int32_t i, int j) {
      IgRVec<P, V> wv;
      if (p.w) wv = ig_param_vec<P, V>(p.w, i);
      IgRVec<T, V> o;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C xh = (ig_convert<C>(c.v[1][j].v[e]) - mu) * rs;
        const C gw = ig_convert<C>(c.v[0][j].v[e]) * (p.w ? ig_convert<C>(wv.v[e]) : C(1));
        o.v[e] = ig_convert<T>(rs * (gw - a - xh * bsum));
      }
      dx[i] = o;
    });
  }
}
// Layer norm's backward in one pass over g and x, when grad_weight or
// grad_bias is wanted (Note [Layer norm's backward in one pass]): grad_input
// as ig_layer_norm_bwd_rows_v computes it, while each team (a block row)
// also sums g * xhat and g over one slice of consecutive rows, a sum per
// element it holds, then writes them as its slice's row of the partials
// p.b = [2, p.inner, D] in C (the weight's slices, then the bias's), which
// layer_norm_bwd_cols_sum adds. A resident row's sums stay in registers
// until the slice ends; a streaming row's (a host emulation's narrow
// blocks) go into the partials as it goes, each element by the one thread
// that handles it in every row. A team's row steps are as many as the
// longest slice's, so the teams of a block meet at every reduction. (Its
// row is ig_layer_norm_bwd_rows_v's, written out again: a shared helper
// taking the sums as a callback cost that kernel, bounded to 64 registers,
// 24-64 more bytes of spill loads a thread by ptxas.)
template <class T, class C, int V, int NV, class P> __forceinline__ void ig_layer_norm_bwd_fold_v(const IgRowParams& p) {
  const bool narrow_stats = p.narrow & 2;
  C* const part = reinterpret_cast<C*>(const_cast<char*>(p.b));
  const int64_t slices = p.inner, per = (p.rows + slices - 1) / slices;
  const int32_t nvec = int32_t(p.D / V);
  const bool resident = nvec <= int32_t(blockDim.x) * NV;
  for (int64_t sb = int64_t(blockIdx.x) * blockDim.y; sb < slices; sb += IG_ROW_STEP) {
    const int64_t s = sb + threadIdx.y;
    const bool team_live = s < slices;
    C* const pw = part + (team_live ? s : 0) * p.D;
    C* const pb = pw + slices * p.D;
    C aw[NV][V], ab[NV][V];
#pragma unroll
    for (int j = 0; j < NV; ++j)
#pragma unroll
      for (int e = 0; e < V; ++e) aw[j][e] = ab[j][e] = C(0);
    if (!resident && team_live)  // (the elements each() gives this thread)
      for (int32_t i = threadIdx.x; i < nvec; i += blockDim.x)
#pragma unroll
        for (int e = 0; e < V; ++e) pw[i * V + e] = pb[i * V + e] = C(0);
    const int64_t r0 = s * per;
    for (int64_t k = 0; k < per; ++k) {
      const int64_t r = team_live && r0 + k < p.rows ? r0 + k : p.rows;  // p.rows: no row
      const bool live = r < p.rows;
      IgRowChunk<T, V, NV, 2> c;  // [0] g, [1] x
      const char* const base[2] = {p.g, p.in};
      ig_row_chunk_init(c, base, p, r);
      const C mu = live ? ig_stat<T, C>(p.mean, r, narrow_stats) : C(0);
      const C rs = live ? ig_stat<T, C>(p.rstd, r, narrow_stats) : C(0);
      C a = 0, bsum = 0;
      c.each([&](int32_t i, int j) {
        IgRVec<P, V> wv;
        if (p.w) wv = ig_param_vec<P, V>(p.w, i);
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const C gw = ig_convert<C>(c.v[0][j].v[e]) * (p.w ? ig_convert<C>(wv.v[e]) : C(1));
          a += gw;
          bsum += gw * (ig_convert<C>(c.v[1][j].v[e]) - mu) * rs;
        }
      });
      a = ig_row_allreduce(a, IgAdd()) / C(p.D);
      bsum = ig_row_allreduce(bsum, IgAdd()) / C(p.D);
      if (!live) continue;
      IgRVec<T, V>* dx = reinterpret_cast<IgRVec<T, V>*>(p.out) + r * (p.D / V);
      c.each([&](int32_t i, int j) {
        IgRVec<P, V> wv;
        if (p.w) wv = ig_param_vec<P, V>(p.w, i);
        IgRVec<T, V> o;
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const C g = ig_convert<C>(c.v[0][j].v[e]);
          const C xh = (ig_convert<C>(c.v[1][j].v[e]) - mu) * rs;
          const C gw = g * (p.w ? ig_convert<C>(wv.v[e]) : C(1));
          o.v[e] = ig_convert<T>(rs * (gw - a - xh * bsum));
          if (resident) {
            aw[j][e] += g * xh;
            ab[j][e] += g;
          } else {
            pw[i * V + e] += g * xh;
            pb[i * V + e] += g;
          }
        }
        dx[i] = o;
      });
    }
    if (resident && team_live)
#pragma unroll
      for (int j = 0; j < NV; ++j)
        if (ig_row_vec(j) < nvec)
#pragma unroll
          for (int e = 0; e < V; ++e) {
            pw[ig_row_vec(j) * V + e] = aw[j][e];
            pb[ig_row_vec(j) * V + e] = ab[j][e];
          }
  }
}
// grad_weight and grad_bias per column, summed over the rows in gridDim.y
// slices: block (x, y) sums blockDim.x vectors of V columns over slice y's
// rows (its blockDim.y threads of a column sharing them, four rows in
// flight each) into row y of the [gridDim.y, D] partial sums p.out (weight)
// and p.w (bias; the host points it at a temporary); either may be null. A
// warp reads 32 vectors of a row: 512 contiguous bytes of g and of x at V =
// 16 bytes. layer_norm_bwd_cols_sum adds the slices.
template <class T, class C, int V> __forceinline__ void ig_layer_norm_bwd_cols_v(const IgRowParams& p) {
  constexpr int kMaxThreads = 256;
  __shared__ C sw[kMaxThreads * V], sb[kMaxThreads * V];
  const IgRVec<T, V>* gp = reinterpret_cast<const IgRVec<T, V>*>(p.g);
  const IgRVec<T, V>* xp = reinterpret_cast<const IgRVec<T, V>*>(p.in);
  const bool narrow_stats = p.narrow & 2;
  C* dw = reinterpret_cast<C*>(p.out);
  C* db = const_cast<C*>(reinterpret_cast<const C*>(p.w));
  const int64_t nvec = p.D / V;
  const int64_t per_slice = (p.rows + gridDim.y - 1) / gridDim.y;
  const int64_t m0 = int64_t(blockIdx.y) * per_slice;
  const int64_t m1 = m0 + per_slice < p.rows ? m0 + per_slice : p.rows;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  const int slot = threadIdx.y * blockDim.x + threadIdx.x;
  for (int64_t cb = int64_t(blockIdx.x) * blockDim.x; cb < nvec; cb += step) {
    const int64_t n = cb + threadIdx.x;
    C aw[V], ab[V];
#pragma unroll
    for (int e = 0; e < V; ++e) aw[e] = ab[e] = C(0);
    if (n < nvec)
#pragma unroll 4
      for (int64_t m = m0 + threadIdx.y; m < m1; m += blockDim.y) {
        const IgRVec<T, V> gv = gp[m * nvec + n], xv = xp[m * nvec + n];
        const C mu = ig_stat<T, C>(p.mean, m, narrow_stats);
        const C rs = ig_stat<T, C>(p.rstd, m, narrow_stats);
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const C g = ig_convert<C>(gv.v[e]);
          aw[e] += g * (ig_convert<C>(xv.v[e]) - mu) * rs;
          ab[e] += g;
        }
      }
#pragma unroll
    for (int e = 0; e < V; ++e) {
      sw[e * kMaxThreads + slot] = aw[e];
      sb[e * kMaxThreads + slot] = ab[e];
    }
    __syncthreads();
    if (threadIdx.y == 0 && n < nvec) {
      for (int r = 1; r < blockDim.y; ++r)
#pragma unroll
        for (int e = 0; e < V; ++e) {
          aw[e] += sw[e * kMaxThreads + r * blockDim.x + threadIdx.x];
          ab[e] += sb[e * kMaxThreads + r * blockDim.x + threadIdx.x];
        }
#pragma unroll
      for (int e = 0; e < V; ++e) {
        if (dw) dw[int64_t(blockIdx.y) * p.D + n * V + e] = aw[e];
        if (db) db[int64_t(blockIdx.y) * p.D + n * V + e] = ab[e];
      }
    }
    __syncthreads();
  }
}
// The slices' partial sums of the kernel above, p.rows of them, added per
// column: p.in (weight's) and p.g (bias's) into p.out and p.mean (either
// pair may be null), stored in T where p.narrow has kNarrowWeightGrad /
// kNarrowBiasGrad (the parameters' dtype), else in C. A block takes
// blockDim.x neighbouring columns; its blockDim.y rows of threads each add
// one stripe of the slices in order, and the stripes add in order through
// shared memory (a thread a column over every slice, 16 blocks for 4096
// columns, took 41 us of 285 on the H100: too few loads in flight). A
// block has at most 256 threads (the launch: 32 x 8).
template <class T, class C> __forceinline__ void ig_layer_norm_bwd_cols_sum(const IgRowParams& p) {
  __shared__ C parts[2 * 256];  // [2][blockDim.y][blockDim.x]
  const int64_t plane = int64_t(blockDim.x) * blockDim.y;
  const C* pw = reinterpret_cast<const C*>(p.in);
  const C* pb = reinterpret_cast<const C*>(p.g);
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const int64_t per = (p.rows + blockDim.y - 1) / blockDim.y;
  const int64_t s0 = ty * per, s1 = s0 + per < p.rows ? s0 + per : p.rows;
  for (int64_t base = int64_t(blockIdx.x) * blockDim.x; base < p.D;
       base += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = base + tx;
    C aw = 0, ab = 0;
    if (n < p.D) {
      for (int64_t s = s0; s < s1; ++s) {
        if (pw) aw += pw[s * p.D + n];
        if (pb) ab += pb[s * p.D + n];
      }
    }
    parts[ty * blockDim.x + tx] = aw;
    parts[plane + ty * blockDim.x + tx] = ab;
    __syncthreads();
    if (ty == 0 && n < p.D) {
      for (int y = 1; y < int(blockDim.y); ++y) {
        aw += parts[y * blockDim.x + tx];
        ab += parts[plane + y * blockDim.x + tx];
      }
      if (p.out && (p.narrow & 4)) reinterpret_cast<T*>(p.out)[n] = ig_convert<T>(aw);
      else if (p.out) reinterpret_cast<C*>(p.out)[n] = aw;
      if (p.mean && (p.narrow & 8)) reinterpret_cast<T*>(p.mean)[n] = ig_convert<T>(ab);
      else if (p.mean) reinterpret_cast<C*>(p.mean)[n] = ab;
    }
    __syncthreads();
  }
}
// ---- cross-entropy with class indices over rows of C logits ----
struct IgCEParams {
  const char* logits; const char* target; const char* weight; char* loss; char* picked_weight;
  char* grad_in; const char* grad_out; const char* total;
  int64_t rows, C, ignore_index;
  double smoothing;
  int32_t target_u8, grad_per_row, weights_only;
  IgKernelError* error;
};
template <class C> __forceinline__ C ig_ce_nan() {
  return std::numeric_limits<C>::infinity() - std::numeric_limits<C>::infinity();
}
__forceinline__ int64_t ig_ce_target(const IgCEParams& p, int64_t r) {
  return p.target_u8 ? int64_t(reinterpret_cast<const uint8_t*>(p.target)[r])
                     : reinterpret_cast<const int64_t*>(p.target)[r];
}
// One row's statistics: max and sum of exp (IgMS) and, with label smoothing,
// the weighted sum of the logits and the sum of the weights (W); every
// thread of the row gets them. The row is read V elements a load (16-byte
// vectors when the host found the row and the logits aligned to them, else
// V = 1), four loads in flight a thread; each vector is folded into the
// thread's running pair at once: its max, the exps about that max, one
// rescale (V + 2 exps a vector, where folding element by element took two
// an element).
template <class T, class C, int V>
__forceinline__ IgMS<C> ig_ce_stats(const IgCEParams& p, int64_t r, bool live, C* wx, C* ws) {
  constexpr int U = 4;  // vectors loaded before any is folded
  const C kNegInf = -std::numeric_limits<C>::infinity();
  const IgRVec<T, V>* x = reinterpret_cast<const IgRVec<T, V>*>(p.logits) + r * (p.C / V);
  const C* w = reinterpret_cast<const C*>(p.weight);
  IgMS<C> st{kNegInf, C(0)};
  C sx = 0, sw = 0;
  const int64_t nvec = live ? p.C / V : 0;
  for (int64_t i0 = threadIdx.x; i0 < nvec; i0 += int64_t(U) * blockDim.x) {
    IgRVec<T, V> a[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = i0 + int64_t(u) * blockDim.x;
      if (i < nvec) a[u] = x[i];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = i0 + int64_t(u) * blockDim.x;
      if (i >= nvec) break;
      C c[V];
      C vm = kNegInf;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        c[e] = ig_convert<C>(a[u].v[e]);
        vm = IgMaxNan()(vm, c[e]);
      }
      // A vector of nothing but -inf is a part of V masked entries (see IgMSMerge).
      C vs = vm == kNegInf ? C(V) : C(0);
      if (vm != kNegInf) {
#pragma unroll
        for (int e = 0; e < V; ++e) vs += std::exp(c[e] - vm);
      }
      st = IgMSMerge()(st, IgMS<C>{vm, vs});
      if (p.smoothing > 0) {
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const C wk = w ? w[i * V + e] : C(1);
          sx += wk * c[e];
          sw += wk;
        }
      }
    }
  }
  st = ig_row_allreduce(st, IgMSMerge());
  if (p.smoothing > 0) {
    *wx = ig_row_allreduce(sx, IgAdd());
    *ws = ig_row_allreduce(sw, IgAdd());
  }
  return st;
}
// Forward: per row, loss = w[t] (lse - x[t]) (1 - eps) + eps / C (lse W - sum_c w_c x_c)
// and picked_weight = w[t] (both 0 where t is ignore_index; NaN for a target
// out of range, which is not read, and is recorded for the host to raise:
// kind 4, cuda::KernelErrorKind::TargetOutOfBounds). weights_only: just
// picked_weight, for the backward's mean.
template <class T, class C, int V> __forceinline__ void ig_cross_entropy_fwd(const IgCEParams& p) {
  const T* x = reinterpret_cast<const T*>(p.logits);
  const C* w = reinterpret_cast<const C*>(p.weight);
  C* loss = reinterpret_cast<C*>(p.loss);
  C* picked = reinterpret_cast<C*>(p.picked_weight);
  for (int64_t rb = int64_t(blockIdx.x) * blockDim.y; rb < p.rows; rb += IG_ROW_STEP) {
    const int64_t r = rb + threadIdx.y;
    const bool live = r < p.rows;
    const int64_t t = live ? ig_ce_target(p, r) : p.ignore_index;
    const bool valid = t != p.ignore_index;
    const bool in_range = t >= 0 && t < p.C;
    if (p.weights_only) {
      if (live && threadIdx.x == 0)
        picked[r] = !valid ? C(0) : !in_range ? ig_ce_nan<C>() : (w ? w[t] : C(1));
      continue;
    }
    C wx = 0, ws = 0;
    const IgMS<C> st = ig_ce_stats<T, C, V>(p, r, live, &wx, &ws);
    if (!live || threadIdx.x != 0) continue;
    if (!valid || !in_range) {
      if (valid) ig_record_error(p.error, 4, t, p.C, 0);
      loss[r] = valid ? ig_ce_nan<C>() : C(0);
      picked[r] = valid ? ig_ce_nan<C>() : C(0);
      continue;
    }
    const C lse = st.m + std::log(st.s);
    const C wt = w ? w[t] : C(1);
    C l = wt * (lse - ig_convert<C>(x[r * p.C + t]));
    if (p.smoothing > 0)
      l = C(1 - p.smoothing) * l + C(p.smoothing / double(p.C)) * (lse * ws - wx);
    loss[r] = l;
    picked[r] = wt;
  }
}
// Backward: d loss / d x_c = w[t] (1 - eps) (p_c - [c == t]) + eps / C (W p_c - w_c),
// p = softmax(row), scaled by the row's incoming gradient (grad_out[r], or
// grad_out[0] for a sum, divided by *total for a mean); ignored rows get 0.
template <class T, class C, int V> __forceinline__ void ig_cross_entropy_bwd(const IgCEParams& p) {
  const C* w = reinterpret_cast<const C*>(p.weight);
  const C* go = reinterpret_cast<const C*>(p.grad_out);
  const int64_t nvec = p.C / V;
  for (int64_t rb = int64_t(blockIdx.x) * blockDim.y; rb < p.rows; rb += IG_ROW_STEP) {
    const int64_t r = rb + threadIdx.y;
    const bool live = r < p.rows;
    const int64_t t = live ? ig_ce_target(p, r) : p.ignore_index;
    const bool valid = t != p.ignore_index;
    C wx = 0, ws = 0;
    const IgMS<C> st = ig_ce_stats<T, C, V>(p, r, live && valid, &wx, &ws);
    if (!live) continue;
    const IgRVec<T, V>* x = reinterpret_cast<const IgRVec<T, V>*>(p.logits) + r * nvec;
    IgRVec<T, V>* dx = reinterpret_cast<IgRVec<T, V>*>(p.grad_in) + r * nvec;
    if (!valid) {
      IgRVec<T, V> zero;
#pragma unroll
      for (int e = 0; e < V; ++e) zero.v[e] = ig_convert<T>(C(0));
      for (int64_t i = threadIdx.x; i < nvec; i += blockDim.x) dx[i] = zero;
      continue;
    }
    C g = p.grad_per_row ? go[r] : go[0];
    if (p.total) g = g / *reinterpret_cast<const C*>(p.total);
    const bool in_range = t >= 0 && t < p.C;
    const C wt = !in_range ? ig_ce_nan<C>() : w ? w[t] : C(1);
    const C lse = st.m + std::log(st.s);
    const C a = wt * C(1 - p.smoothing), b = C(p.smoothing / double(p.C));
    for (int64_t i = threadIdx.x; i < nvec; i += blockDim.x) {
      const IgRVec<T, V> xv = x[i];
      IgRVec<T, V> o;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const int64_t k = i * V + e;
        const C pk = std::exp(ig_convert<C>(xv.v[e]) - lse);
        C d = a * (pk - (k == t ? C(1) : C(0)));
        if (p.smoothing > 0) d += b * (ws * pk - (w ? w[k] : C(1)));
        o.v[e] = ig_convert<T>(g * d);
      }
      dx[i] = o;
    }
  }
}
)CUDA";

// Kernels over scalar elements (their template is ig_<name><T, C>).
const char* kKernels[] = {"softmax_cols", "layer_norm_bwd_cols_sum"};
// Column kernels reading V elements a load (ig_<name>_v<T, C, V>), one
// compiled variant per (dtype, V).
const char* kColumnKernels[] = {"layer_norm_bwd_cols"};
// Their parameter struct is IgCEParams; the kernels above take IgRowParams.
const char* kCrossEntropyKernels[] = {"cross_entropy_fwd", "cross_entropy_bwd"};
// The vectorised row kernels (ig_<name>_v<T, C, V, NV>), one compiled
// variant per (dtype, V, NV).
const char* kRowKernels[] = {"softmax_rows", "softmax_bwd_rows", "layer_norm",
                             "layer_norm_bwd_rows", "layer_norm_bwd_fold"};
// The one that also keeps a slice's column sums (Note [Layer norm's backward
// in one pass]): a block a team of at most kFoldMaxThreads. Its registers
// decide the teams a multiprocessor runs: bfloat16's variants are compiled
// for three (ptxas: 166-168 registers a thread and no spills, where
// unbounded the 16384 x 4096 row took 176, two teams, 295.6 us on the
// H100); float16's and the wider dtypes' would spill 100-200 bytes a
// thread under that bound, and keep theirs (two teams).
constexpr int kFoldMaxThreads = 128;
bool keeps_column_sums(const char* kernel) { return std::string(kernel) == "layer_norm_bwd_fold"; }

// Note [Row kernels keep the row in registers]
// softmax, log_softmax, layer norm and their backwards read a row with a
// team of blockDim.x threads: a warp for rows up to 32 * 32 elements (the
// block then holds 256 / 32 = 8 rows), more warps for longer rows (up to
// kMaxRowThreads, one row a block). Each thread loads NV vectors of V
// elements (16 bytes: 8 float16/bfloat16, 4 float32, 2 float64) into
// registers, so a row of up to kMaxRowThreads * kRowRegisterElements
// elements is read from memory once and every later pass (the variance
// about the mean, the exps, the output) reuses the registers; a longer row
// is read again by each pass, a vector at a time (`resident` is decided per
// launch, in the same kernel). V is halved until the row length and every
// pointer are multiples of the vector (a row of 7, a sliced input at an
// odd offset: V = 1, scalar loads). The sums accumulate in op-math (float
// for 16-bit inputs) with the CPU's formulas; only their order differs.
//
// These kernels are bound by memory latency: what a thread holds decides
// how many threads a multiprocessor runs, so registers are their cost
// (measured on the H200, variants of each kernel in one harness, bf16,
// 16384x4096 layer norm and 8192x8192 softmax): offsets inside a row are
// 32-bit; the streaming path for long rows walks a vector at a time (its
// chunk of NV vectors, though never run on a resident row, set the whole
// kernel's registers: softmax 109 -> 63); softmax keeps its exps in place
// of x rather than beside it; parameters are widened where each element is
// used. For 16-bit dtypes, whose rows pack two to a register, the kernels
// are compiled for two blocks of kMaxRowThreads a multiprocessor (at most
// 64 registers: layer norm 93 -> 64 with a few spilled bytes, its backward
// 128 -> 64: 131 -> 104 and 147 -> 117 us); float32 and float64 rows two
// inputs wide would spill hundreds of bytes under that bound, and keep 128.
constexpr int kMaxRowThreads = 512;  // the kernels' __launch_bounds__
constexpr int kRowRegisterElements = 32;  // elements of each input a thread keeps

struct RowVariant {
  int vec = 1, nv = 1;  // V and NV
  bool narrow_params = false;  // P = T (layer norm's 16-bit weight and bias), else C
};

std::string row_symbol(const char* kernel, ScalarType t, RowVariant v) {
  return str(kernel, "_", dtype_name(t), "_v", v.vec, "_n", v.nv, v.narrow_params ? "_pT" : "");
}

// The row kernels with parameters (whose P varies).
bool has_params(const char* kernel) { return std::string(kernel).rfind("layer_norm", 0) == 0; }

std::string source_with(const std::string& body) {
  return str(eager_prelude(), device_scalar_ops_source(), kTemplates, kKernelBodyMarker, body);
}

std::string types_of(ScalarType t) {
  return str("typedef ", device_type_name(t), " T;\ntypedef ", device_opmath_name(t), " C;\n");
}

KernelRequest request_with(const std::string& symbol, const std::string& body) {
  KernelRequest r;
  r.symbol = symbol;
  r.label = symbol + ".cu";
  r.source = source_with(body);
  r.options = {"-default-device", "-w"};
  return r;
}

KernelRequest request(ScalarType t, const char* kernel) {
  const std::string symbol = str(kernel, "_", dtype_name(t));
  return request_with(symbol, str(types_of(t), "extern \"C\" __global__ void ", symbol,
                                  "(IgRowParams p) { ig_", kernel, "<T, C>(p); }\n"));
}

// A cross-entropy kernel reading `vec` elements a load.
KernelRequest ce_request(ScalarType t, const char* kernel, int vec) {
  const std::string symbol = str(kernel, "_", dtype_name(t), "_v", vec);
  return request_with(symbol, str(types_of(t), "extern \"C\" __global__ void ", symbol,
                                  "(IgCEParams p) { ig_", kernel, "<T, C, ", vec, ">(p); }\n"));
}

// A column kernel reading `vec` elements a load.
KernelRequest column_request(ScalarType t, const char* kernel, int vec) {
  const std::string symbol = str(kernel, "_", dtype_name(t), "_v", vec);
  return request_with(symbol, str(types_of(t), "extern \"C\" __global__ void ", symbol,
                                  "(IgRowParams p) { ig_", kernel, "_v<T, C, ", vec, ">(p); }\n"));
}

// The vector widths compiled for dtype t: 1, 2, ... up to 16 bytes.
std::vector<int> vector_widths(ScalarType t) {
  std::vector<int> v;
  for (int vec = 1; vec * static_cast<int>(element_size(t)) <= 16; vec *= 2) v.push_back(vec);
  return v;
}

KernelRequest row_request(ScalarType t, const char* kernel, RowVariant v) {
  const std::string symbol = row_symbol(kernel, t, v);
  // At most kMaxRowThreads a block (128 registers a thread); for 16-bit
  // dtypes two such blocks a multiprocessor (64; Note [Row kernels keep the
  // row in registers]).
  const int min_blocks = is_reduced_float(t) ? 2 : 1;
  const std::string bounds =
      !keeps_column_sums(kernel)  ? str(kMaxRowThreads, ", ", min_blocks)
      : t == ScalarType::BFloat16 ? str(kFoldMaxThreads, ", 3")
                                  : str(kFoldMaxThreads);
  return request_with(symbol, str(types_of(t), "extern \"C\" __global__ void __launch_bounds__(",
                                  bounds, ") ", symbol, "(IgRowParams p) { ig_", kernel,
                                  "_v<T, C, ", v.vec, ", ", v.nv, v.narrow_params ? ", T" : ", C",
                                  ">(p); }\n"));
}

// Every (V, NV) a dtype's row kernels are compiled for: V up to 16 bytes,
// NV * V at most kRowRegisterElements.
std::vector<RowVariant> row_variants(ScalarType t) {
  std::vector<RowVariant> v;
  for (int vec : vector_widths(t))
    for (int nv = 1; nv <= 8 && nv * vec <= kRowRegisterElements; nv *= 2) v.push_back({vec, nv});
  return v;
}

CUfunction function_for(int device, ScalarType t, const char* kernel) {
  return get_named_kernel(device, str(kernel, "_", dtype_name(t)),
                         [&] { return request(t, kernel); });
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A pointer a kernel loads vectors from, and the bytes of its elements.
struct VectorOperand {
  const void* p;  // null: absent, no constraint
  int64_t elem;
};
// The widest vector of `elem`-byte elements, 16 bytes at most, that divides
// `length` (the elements of a row) and to which every operand is aligned
// (each at its own element size): 16 bytes halved down to single elements.
int widest_vector(int64_t elem, int64_t length, const std::vector<VectorOperand>& operands) {
  auto fits = [&](int64_t v) {
    if (length % v != 0) return false;
    for (const VectorOperand& o : operands)
      if (o.p && reinterpret_cast<uintptr_t>(o.p) % (v * o.elem) != 0) return false;
    return true;
  };
  int64_t vec = 16 / elem;
  while (vec > 1 && !fits(vec)) vec /= 2;
  return static_cast<int>(vec);
}

// The cross-entropy kernel `kernel` over p.rows rows of p.C logits, V of
// them a load: 16 bytes, halved until C and the `rows` pointers (the
// logits, and the gradient the backward writes) are multiples of it. x
// threads along a row (32 for rows up to 256 vectors, up to the whole
// block beyond), the block's other threads on further rows; `work` is the
// elements a row's threads go through (1 when only picked weights are
// wanted).
void launch_cross_entropy(const Tensor& like, ScalarType t, const char* kernel, CEParams& p,
                          int64_t work, std::initializer_list<const void*> rows) {
  const int device = like.device().index;
  const auto tsize = static_cast<int64_t>(element_size(t));
  std::vector<VectorOperand> operands;
  for (const void* q : rows) operands.push_back({q, tsize});
  const int vec = widest_vector(tsize, p.C, operands);
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  int bx = 32;
  while (bx < kBlockThreads && bx * 8 < work / vec) bx *= 2;
  const int by = kBlockThreads / bx;
  const int64_t sms = device_properties(device).multi_processor_count;
  const auto grid = static_cast<unsigned>(std::clamp<int64_t>(ceil_div(p.rows, by), 1, sms * 32));
  CUfunction f = get_named_kernel(device, str(kernel, "_", dtype_name(t), "_v", vec),
                                 [&] { return ce_request(t, kernel, vec); });
  void* a[] = {&p};
  IGNIS_CU(cuLaunchKernel(f, grid, 1, 1, unsigned(bx), unsigned(by), 1, 0, stream.handle, a,
                          nullptr));
}

// How the vectorised row kernels cover rows of p.D elements of dtype t:
// the vector V (16 bytes, halved until p.D and every operand allow it;
// `rows` are the row-shaped operands, in t, `params` those of D elements,
// in t when p.narrow has kNarrowParams, else in op-math), the vectors NV a
// thread holds, the threads a row (team) and the rows a block.
struct RowPlan {
  RowVariant v;
  int64_t team = 32, per_block = 1;
  bool resident = true;  // the row fits the team's registers
};
RowPlan plan_vector_rows(ScalarType t, const RowParams& p, std::initializer_list<const void*> rows,
                         std::initializer_list<const void*> params) {
  const auto tsize = static_cast<int64_t>(element_size(t));
  RowPlan plan;
  plan.v.narrow_params = (p.narrow & kNarrowParams) != 0;
  // The parameters' element size: op-math (float for 16-bit floats) or t.
  const int64_t csize = is_reduced_float(t) && !plan.v.narrow_params ? 4 : tsize;
  std::vector<VectorOperand> operands;
  for (const void* q : rows) operands.push_back({q, tsize});
  for (const void* q : params) operands.push_back({q, csize});
  plan.v.vec = widest_vector(tsize, p.D, operands);
  const int64_t nvec = p.D / plan.v.vec;
  const int max_nv = std::min(8, kRowRegisterElements / plan.v.vec);
  // Threads a row: a warp, doubled while the row would not fit the registers.
  while (plan.team < kMaxRowThreads && nvec > plan.team * max_nv) plan.team *= 2;
  while (plan.v.nv < max_nv && nvec > plan.team * plan.v.nv) plan.v.nv *= 2;
  plan.resident = nvec <= plan.team * plan.v.nv;
  plan.per_block = std::max<int64_t>(1, kBlockThreads / plan.team);
  return plan;
}

// The vectorised row kernel `kernel` over p.rows rows (plan_vector_rows).
void launch_vector_rows(const Tensor& like, ScalarType t, const char* kernel, RowParams& p,
                        std::initializer_list<const void*> rows,
                        std::initializer_list<const void*> params) {
  const int device = like.device().index;
  const RowPlan plan = plan_vector_rows(t, p, rows, params);
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  const int64_t sms = device_properties(device).multi_processor_count;
  const auto grid =
      static_cast<unsigned>(std::clamp<int64_t>(ceil_div(p.rows, plan.per_block), 1, sms * 32));
  CUfunction f = get_named_kernel(device, row_symbol(kernel, t, plan.v),
                                 [&] { return row_request(t, kernel, plan.v); });
  void* a[] = {&p};
  IGNIS_CU(cuLaunchKernel(f, grid, 1, 1, unsigned(plan.team), unsigned(plan.per_block), 1, 0,
                          stream.handle, a, nullptr));
}

}  // namespace

std::vector<KernelRequest> row_kernel_requests(ScalarType t) {
  std::vector<KernelRequest> v;
  for (const char* k : kKernels) v.push_back(request(t, k));
  for (const char* k : kCrossEntropyKernels)
    for (int vec : vector_widths(t)) v.push_back(ce_request(t, k, vec));
  for (const char* k : kColumnKernels)
    for (int vec : vector_widths(t)) v.push_back(column_request(t, k, vec));
  for (const char* k : kRowKernels)
    for (RowVariant rv : row_variants(t)) {
      v.push_back(row_request(t, k, rv));
      if (has_params(k) && is_reduced_float(t)) {
        rv.narrow_params = true;
        v.push_back(row_request(t, k, rv));
      }
    }
  return v;
}

void softmax_into(const Tensor& out, const Tensor& in, int64_t dim, cpu::SoftmaxKind kind) {
  if (out.numel() == 0) return;
  IGNIS_INTERNAL_ASSERT(in.is_contiguous() && out.is_contiguous() && in.dtype() == out.dtype());
  RowParams p{};
  p.in = in.data_ptr();
  p.out = out.data_ptr();
  p.kind = static_cast<int32_t>(kind);
  p.D = in.dim() == 0 ? 1 : in.size(dim);
  p.inner = 1;
  for (int64_t d = dim + 1; d < in.dim(); ++d) p.inner *= in.size(d);
  p.rows = in.numel() / (p.D * p.inner);
  if (p.inner == 1)
    return launch_vector_rows(in, in.dtype(), "softmax_rows", p, {p.in, p.out}, {});
  const int device = in.device().index;
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  void* a[] = {&p};
  const int64_t sms = device_properties(device).multi_processor_count;
  const auto grid =
      static_cast<unsigned>(std::min(ceil_div(p.rows * p.inner, kBlockThreads), sms * 32));
  IGNIS_CU(cuLaunchKernel(function_for(device, in.dtype(), "softmax_cols"), grid, 1, 1,
                          kBlockThreads, 1, 1, 0, stream.handle, a, nullptr));
}

void softmax_backward_into(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out,
                           cpu::SoftmaxKind kind) {
  if (out.numel() == 0) return;
  IGNIS_INTERNAL_ASSERT(grad_in.is_contiguous() && grad_out.is_contiguous() &&
                        out.is_contiguous() && grad_out.dtype() == out.dtype() &&
                        grad_in.dtype() == out.dtype());
  RowParams p{};
  p.in = out.data_ptr();
  p.g = grad_out.data_ptr();
  p.out = grad_in.data_ptr();
  p.kind = static_cast<int32_t>(kind);
  p.D = out.dim() == 0 ? 1 : out.size(-1);
  p.rows = out.numel() / p.D;
  launch_vector_rows(out, out.dtype(), "softmax_bwd_rows", p, {p.in, p.g, p.out}, {});
}

namespace {

// RowParams::narrow for layer norm over x of dtype t: kNarrowParams when
// there are parameters and every one is in t, kNarrowStats when mean and
// rstd are; else they must be in op-math.
int32_t narrow_flags(ScalarType t, std::initializer_list<const Tensor*> params, const Tensor& mean,
                     const Tensor& rstd) {
  const ScalarType c = opmath_dtype(t);
  int32_t flags = 0;
  bool any = false, in_t = true;
  for (const Tensor* w : params)
    if (w->defined()) {
      IGNIS_INTERNAL_ASSERT(w->dtype() == t || w->dtype() == c);
      any = true;
      in_t = in_t && w->dtype() == t;
    }
  if (any && in_t && t != c) flags |= kNarrowParams;
  IGNIS_INTERNAL_ASSERT(mean.dtype() == rstd.dtype() && (mean.dtype() == t || mean.dtype() == c));
  if (mean.dtype() == t && t != c) flags |= kNarrowStats;
  return flags;
}

}  // namespace

void layer_norm_into(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& in,
                     const Tensor& weight, const Tensor& bias, int64_t n, double eps) {
  const int64_t M = n == 0 ? 0 : in.numel() / n;
  if (M == 0) return;
  RowParams p{};
  p.in = in.data_ptr();
  p.out = out.data_ptr();
  p.w = weight.defined() ? weight.data_ptr() : nullptr;
  p.b = bias.defined() ? bias.data_ptr() : nullptr;
  p.mean = mean.data_ptr();
  p.rstd = rstd.data_ptr();
  p.rows = M;
  p.D = n;
  p.eps = eps;
  p.narrow = narrow_flags(in.dtype(), {&weight, &bias}, mean, rstd);
  launch_vector_rows(in, in.dtype(), "layer_norm", p, {p.in, p.out}, {p.w, p.b});
}

// Note [Layer norm's backward in one pass]
// grad_input needs each row's two sums of g * w; grad_weight and grad_bias
// sum g * xhat and g over the rows. As two kernels (the rows, then slices
// of columns) they read g and x twice: 640 MB against 384 for 16384 x 4096
// bfloat16. When the row fits a team's registers, layer_norm_bwd_fold does
// both in one pass: each team also keeps its slice of rows' column sums in
// registers (two floats for each element it holds), so the kernel reads g
// and x once and writes [2, slices, N] float partials, which
// layer_norm_bwd_cols_sum adds. The slices are as many as teams the GPU runs
// at once (the driver's occupancy of the compiled kernel: one round, every
// slice about as long as another), and at least four rows each. The
// compiler's layer norm backward does the same in its generated code (Note
// [Column sums in a row kernel], compiler/schedule.cpp).
void layer_norm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& g,
                         const Tensor& x, const Tensor& mean, const Tensor& rstd,
                         const Tensor& weight, int64_t M, int64_t N) {
  if (M == 0 || N == 0) {
    for (const Tensor* t : {&dw, &db})
      if (t->defined()) fill_tensor(*t, Scalar(int64_t(0)));
    return;
  }
  RowParams p{};
  p.g = g.data_ptr();
  p.in = x.data_ptr();
  p.mean = mean.data_ptr();
  p.rstd = rstd.data_ptr();
  p.w = weight.defined() ? weight.data_ptr() : nullptr;
  p.out = dx.data_ptr();
  p.rows = M;
  p.D = N;
  p.narrow = narrow_flags(x.dtype(), {&weight}, mean, rstd);
  const RowPlan plan = plan_vector_rows(x.dtype(), p, {p.g, p.in, p.out}, {p.w});
  // Note [Layer norm's backward in one pass]
  const bool fold =
      (dw.defined() || db.defined()) && plan.resident && plan.team <= kFoldMaxThreads;
  if (!fold) launch_vector_rows(x, x.dtype(), "layer_norm_bwd_rows", p, {p.g, p.in, p.out}, {p.w});
  if (!dw.defined() && !db.defined()) return;
  // The column sums in op-math temporaries, then converted into the
  // parameters' dtypes as the CPU's store does. The rows are cut into
  // slices so that the grid fills the GPU (a few blocks of columns would
  // not), each slice's sums a row of partials, added by a second kernel.
  const ScalarType acc = opmath_dtype(x.dtype());
  const int device = x.device().index;
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  const int64_t sms = device_properties(device).multi_processor_count;
  int64_t slices = 1;
  Tensor part, tpw, tpb;  // the fold's partials, [2, slices, N]; the column kernel's
  const void* pw = nullptr;  // the slices' weight and bias partials, [slices, N]
  const void* pb = nullptr;
  if (fold) {
    const char* kernel = "layer_norm_bwd_fold";
    CUfunction f = get_named_kernel(device, row_symbol(kernel, x.dtype(), plan.v),
                                   [&] { return row_request(x.dtype(), kernel, plan.v); });
    // A block a team (its registers, the sums doubling what a thread holds,
    // decide how many a multiprocessor runs, in steps of one team), a
    // slice a team the GPU runs at once (one round: every slice as long as
    // another), each of at least four rows.
    slices = std::clamp<int64_t>(one_round_blocks(f, int(plan.team), device), 1,
                                 std::max<int64_t>(1, ceil_div(M, 4)));
    part = empty_tensor({2, slices, N}, acc, x.device());
    RowParams q = p;
    q.b = part.data_ptr();
    q.inner = slices;
    void* a[] = {&q};
    const auto grid = static_cast<unsigned>(std::clamp<int64_t>(slices, 1, sms * 32));
    IGNIS_CU(cuLaunchKernel(f, grid, 1, 1, unsigned(plan.team), 1, 1, 0, stream.handle, a,
                            nullptr));
    const auto* base = static_cast<const char*>(part.data_ptr());
    if (dw.defined()) pw = base;
    if (db.defined()) pb = base + slices * N * int64_t(element_size(acc));
  }
  const auto tsize = static_cast<int64_t>(element_size(x.dtype()));
  const int vec = widest_vector(tsize, N, {{p.g, tsize}, {p.in, tsize}});
  const int bx = 32, by = kBlockThreads / bx;
  const int64_t col_blocks = std::clamp<int64_t>(ceil_div(N / vec, bx), 1, sms * 32);
  // About 16 blocks a multiprocessor, each slice at least 16 rows a thread row.
  if (!fold)
    slices =
        std::clamp<int64_t>(std::min(ceil_div(sms * 16, col_blocks), M / (by * 16)), 1, 1024);
  // The sums go straight into grad_weight and grad_bias when the slices'
  // kernel adds them and they are contiguous in T or op-math (its store
  // converts), else through op-math temporaries and a copy. (The fold's
  // partials are always added, even a single slice's.)
  const bool summed = fold || slices > 1;
  auto sums_for = [&](const Tensor& d) {
    if (!d.defined()) return Tensor();
    const bool direct =
        summed && d.is_contiguous() && (d.dtype() == x.dtype() || d.dtype() == acc);
    return direct ? d : empty_tensor(d.sizes(), acc, x.device());
  };
  Tensor tw = sums_for(dw), tb = sums_for(db);
  if (!fold) {
    tpw = slices > 1 && dw.defined() ? empty_tensor({slices, N}, acc, x.device()) : tw;
    tpb = slices > 1 && db.defined() ? empty_tensor({slices, N}, acc, x.device()) : tb;
    RowParams q = p;
    q.out = tpw.defined() ? tpw.data_ptr() : nullptr;
    q.w = tpb.defined() ? tpb.data_ptr() : nullptr;  // the column kernel writes grad_bias here
    void* a[] = {&q};
    CUfunction f =
        get_named_kernel(device, str("layer_norm_bwd_cols_", dtype_name(x.dtype()), "_v", vec),
                         [&] { return column_request(x.dtype(), "layer_norm_bwd_cols", vec); });
    IGNIS_CU(cuLaunchKernel(f, unsigned(col_blocks), unsigned(slices), 1, bx, by, 1, 0,
                            stream.handle, a, nullptr));
    pw = tpw.defined() ? tpw.data_ptr() : nullptr;
    pb = tpb.defined() ? tpb.data_ptr() : nullptr;
  }
  if (summed) {
    RowParams s{};
    s.in = pw;
    s.g = pb;
    s.out = tw.defined() ? tw.data_ptr() : nullptr;
    s.mean = tb.defined() ? tb.data_ptr() : nullptr;
    s.rows = slices;
    s.D = N;
    if (tw.defined() && tw.dtype() != acc) s.narrow |= kNarrowWeightGrad;
    if (tb.defined() && tb.dtype() != acc) s.narrow |= kNarrowBiasGrad;
    void* sa[] = {&s};
    // 32 columns a block, the slices in 8 stripes (ig_layer_norm_bwd_cols_sum:
    // at most 256 threads a block).
    constexpr unsigned kColumns = 32, kStripes = 8;
    const auto grid = static_cast<unsigned>(std::clamp<int64_t>(ceil_div(N, kColumns), 1,
                                                                sms * 8));
    IGNIS_CU(cuLaunchKernel(function_for(device, x.dtype(), "layer_norm_bwd_cols_sum"), grid, 1,
                            1, kColumns, kStripes, 1, 0, stream.handle, sa, nullptr));
  }
  if (dw.defined() && !tw.is_same(dw)) copy_tensor(dw, tw);
  if (db.defined() && !tb.is_same(db)) copy_tensor(db, tb);
}

namespace {

CEParams ce_params(const CrossEntropyRows& a) {
  CEParams p{};
  p.logits = a.logits.data_ptr();
  p.target = a.target.data_ptr();
  p.weight = a.weight.defined() ? a.weight.data_ptr() : nullptr;
  p.rows = a.logits.dim() == 1 ? 1 : a.logits.size(0);
  p.C = a.logits.size(-1);
  p.ignore_index = a.ignore_index;
  p.smoothing = a.label_smoothing;
  p.target_u8 = a.target.dtype() == ScalarType::UInt8;
  p.error = kernel_error_record(a.logits.device().index);
  return p;
}

}  // namespace

void cross_entropy_rows(const Tensor& loss, const Tensor& picked_weight, const CrossEntropyRows& a,
                        bool weights_only) {
  CEParams p = ce_params(a);
  if (p.rows == 0) return;
  p.loss = loss.defined() ? loss.data_ptr() : nullptr;
  p.picked_weight = picked_weight.data_ptr();
  p.weights_only = weights_only;
  launch_cross_entropy(a.logits, a.logits.dtype(), "cross_entropy_fwd", p, weights_only ? 1 : p.C,
                       {p.logits});
  check_after_launch(a.logits.device().index);
}

void cross_entropy_rows_backward(const Tensor& grad_logits, const Tensor& grad_loss,
                                 const Tensor& total, const CrossEntropyRows& a) {
  CEParams p = ce_params(a);
  if (p.rows == 0 || p.C == 0) return;
  p.grad_in = grad_logits.data_ptr();
  p.grad_out = grad_loss.data_ptr();
  p.grad_per_row = grad_loss.numel() == p.rows && grad_loss.dim() > 0;
  p.total = total.defined() ? total.data_ptr() : nullptr;
  launch_cross_entropy(a.logits, a.logits.dtype(), "cross_entropy_bwd", p, p.C,
                       {p.logits, p.grad_in});
}

}  // namespace ignis::cuda

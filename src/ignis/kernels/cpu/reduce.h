// Reductions on the CPU: the shared machinery and the kernels built on it.
//
// A reduction of `in` over a set of dims is planned once (make_reduce_plan):
// size-1 dims are dropped, the rest are ordered by input stride and
// neighbours that step as one are merged. Two loop shapes then cover every
// case without copying the input:
//   * inner mode: the innermost input dim is reduced. Each output reduces
//     runs along it with many independent accumulators (vectorised lanes),
//     so `x.sum(-1)` reads each row once at full speed;
//   * vector mode: the innermost input dim is kept. Outputs are computed a
//     tile of that dim at a time: every reduced position adds a whole row
//     segment into a vector of accumulators, so `x.sum(0)` streams rows
//     instead of striding down columns.
// Sums cascade: lanes (or tile accumulators) absorb a bounded number of
// terms before folding into the next level up, which keeps float32 sums of
// millions of elements within a few ulps of a pairwise sum. Work is split
// over outputs with OpenMP, or over the reduced dim when outputs are too
// few to keep the threads busy.
//
// An Op describes one reduction:
//   using in_t, acc_t, out_t;
//   static constexpr bool kCascade;     // sums: fold accumulators in levels
//   acc_t identity() const;             // value of an empty reduction
//   acc_t map(in_t x) const;            // one element as an accumulator
//                                       // (ops only given to reduce_tile may
//                                       // take map(x, j), j the tile lane)
//   acc_t combine(acc_t a, acc_t b) const;  // associative, commutative
//   out_t project(acc_t a) const;       // final value (mean: a / n)
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>

#include <omp.h>

#include "ignis/core/tensor.h"
#include "ignis/kernels/cpu/tensor_iterator.h"

namespace ignis::cpu {

// Bit d set: dim d is reduced.
using DimMask = uint64_t;

// x in its op-math type. Half widens branch-free (the exponent is rebiased
// by a multiply, which also normalises subnormals) so that loops over Half
// vectorise; the generic conversion branches and would dominate.
template <typename T>
inline opmath_t<T> widen(T x) { return static_cast<opmath_t<T>>(x); }
template <>
inline float widen<Half>(Half x) {
  const uint32_t em = x.x & 0x7fffu;
  uint32_t bits = std::bit_cast<uint32_t>(std::bit_cast<float>(em << 13) * 0x1p112f);
  bits |= em >= 0x7c00u ? 0x7f800000u : 0u;  // inf and NaN keep an all-ones exponent
  return std::bit_cast<float>(bits | (static_cast<uint32_t>(x.x & 0x8000u) << 16));
}
// v rounded to T (F16C's conversion for Half when the build targets it).
template <typename T>
inline T narrow(opmath_t<T> v) { return static_cast<T>(v); }
#if defined(__F16C__)
template <>
inline Half narrow<Half>(float v) {
  Half h;
  h.x = std::bit_cast<uint16_t>(static_cast<_Float16>(v));
  return h;
}
#endif

// Elements below which a reduction runs on one thread.
constexpr int64_t kReduceGrain = 32768;

struct ReducePlan {
  // Kept dims without the vector dim, outermost first: sizes and strides (in
  // elements) in the input and in the output.
  DimVector keep_sizes, keep_in, keep_out;
  // Reduced dims, outermost first; never empty (a lone size-1 dim stands in
  // when nothing is reduced).
  DimVector red_sizes, red_in;
  // Vector mode: the innermost input dim is kept and becomes the vector dim.
  bool vec_mode = false;
  int64_t vec_size = 1, vec_in = 0, vec_out = 0;
  int64_t num_outputs = 1;   // product of keep_sizes
  int64_t reduce_numel = 1;  // product of red_sizes
};

// Plans reducing `in` over `mask` into `out`, which has in's shape with the
// reduced dims either removed or kept as size 1. Requires in.numel() > 0.
ReducePlan make_reduce_plan(const Tensor& in, const Tensor& out, DimMask mask);

// Threads to use for `work` elements (1 inside a parallel region).
int reduce_threads(int64_t work);

// Steps through a multi-dim index space, keeping one or two strided offsets.
struct NdCounter {
  static constexpr int kMaxDims = 64;
  const int64_t* sizes;
  const int64_t* s0;
  const int64_t* s1;  // may be null
  int nd;
  int64_t idx[kMaxDims]{};
  int64_t off0 = 0, off1 = 0;

  NdCounter(const DimVector& sz, const DimVector& st0, const DimVector* st1 = nullptr)
      : sizes(sz.data()), s0(st0.data()), s1(st1 ? st1->data() : nullptr),
        nd(static_cast<int>(sz.size())) {}
  // Moves to linear position `pos` (row-major over sizes).
  void seek(int64_t pos) {
    off0 = off1 = 0;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = pos % sizes[d];
      pos /= sizes[d];
      off0 += idx[d] * s0[d];
      if (s1) off1 += idx[d] * s1[d];
    }
  }
  void next() {
    for (int d = nd - 1; d >= 0; --d) {
      off0 += s0[d];
      if (s1) off1 += s1[d];
      if (++idx[d] < sizes[d]) return;
      off0 -= sizes[d] * s0[d];
      if (s1) off1 -= sizes[d] * s1[d];
      idx[d] = 0;
    }
  }
};

namespace detail {

// Independent accumulators per run: 256 bytes' worth (4 AVX-512 registers),
// enough to hide the add latency, clamped to [16, 64].
template <typename T>
constexpr int lanes() {
  int w = 256 / static_cast<int>(sizeof(T));
  return w < 16 ? 16 : (w > 64 ? 64 : w);
}
constexpr int kFan = 32;     // terms a cascade level absorbs before folding up
constexpr int kLevels = 4;   // cascade depth; the top level absorbs the rest
constexpr int kTileBytes = 4096;  // vector-mode accumulators per level
constexpr int kPrefetchBytes = 4096;  // how far ahead contiguous runs prefetch

// A cascade of scalar accumulators (for run totals and thread partials).
template <class Op>
struct ScalarCascade {
  using acc_t = typename Op::acc_t;
  const Op& op;
  acc_t lv[kLevels];
  int cnt[kLevels] = {};
  explicit ScalarCascade(const Op& o) : op(o) {
    for (auto& a : lv) a = op.identity();
  }
  void push(acc_t v) {
    if constexpr (!Op::kCascade) {
      lv[0] = op.combine(lv[0], v);
    } else {
      lv[0] = op.combine(lv[0], v);
      for (int l = 0; l + 1 < kLevels && ++cnt[l] == kFan; ++l) {
        cnt[l] = 0;
        lv[l + 1] = op.combine(lv[l + 1], lv[l]);
        lv[l] = op.identity();
      }
    }
  }
  acc_t result() const {
    acc_t r = lv[0];
    if constexpr (Op::kCascade)
      for (int l = 1; l < kLevels; ++l) r = op.combine(r, lv[l]);
    return r;
  }
};

// The levels of a cascade over `width`-wide accumulator arrays. Level 0 is
// the caller's working accumulators; after kFan steps it folds into level 1,
// a level that fills folds on up, and the top level absorbs the rest. Upper
// levels start empty (and are copied into, not combined, when empty), so a
// short reduction pays for no level it does not use.
template <class Op>
struct Levels {
  using acc_t = typename Op::acc_t;
  acc_t* lv[kLevels];
  int cnt[kLevels] = {};  // folds an upper level holds; 0: empty

  void fold(const Op& op, int64_t width) {
    for (int l = 0; l + 1 < kLevels; ++l) {
      acc_t* __restrict lo = lv[l];
      acc_t* __restrict hi = lv[l + 1];
      if (cnt[l + 1] == 0) {
        for (int64_t j = 0; j < width; ++j) hi[j] = lo[j];
      } else {
        for (int64_t j = 0; j < width; ++j) hi[j] = op.combine(hi[j], lo[j]);
      }
      if (l == 0)
        for (int64_t j = 0; j < width; ++j) lo[j] = op.identity();
      if (++cnt[l + 1] < kFan || l + 2 == kLevels) return;
      cnt[l + 1] = 0;
    }
  }
  // Combines every level into level 0.
  void finish(const Op& op, int64_t width) {
    for (int l = 1; l < kLevels; ++l) {
      if (cnt[l] == 0) continue;
      for (int64_t j = 0; j < width; ++j) lv[0][j] = op.combine(lv[0][j], lv[l][j]);
    }
  }
};

// Reduces n >= lanes elements p[0], p[stride], ... into one accumulator
// (Contig: stride is 1, known at compile time so the lanes vectorise).
template <class Op, bool Contig>
typename Op::acc_t reduce_lanes(const Op& op, const typename Op::in_t* p, int64_t n,
                                int64_t stride) {
  using acc_t = typename Op::acc_t;
  constexpr int W = lanes<acc_t>();
  constexpr int L = Op::kCascade ? kLevels : 1;
  auto at = [p, stride](int64_t i) { return Contig ? p[i] : p[i * stride]; };
  alignas(64) acc_t lv[L][W];
  for (auto& a : lv[0]) a = op.identity();
  Levels<Op> levels;
  for (int l = 0; l < L; ++l) levels.lv[l] = lv[l];
  int64_t i = 0;
  // Blocks of kFan rows of W lanes: a fixed trip count keeps the lanes in
  // registers. A cascade folds after each block.
  constexpr int64_t kBlock = int64_t(W) * kFan;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t b = 0; b < kBlock; b += W) {
      if constexpr (Contig) {
        // Streams from memory run ~10% faster prefetched a few KB ahead.
        const char* ahead = reinterpret_cast<const char*>(p + i + b) + kPrefetchBytes;
        for (int q = 0; q < W * static_cast<int>(sizeof(*p)); q += 64)
          __builtin_prefetch(ahead + q);
      }
      for (int j = 0; j < W; ++j) lv[0][j] = op.combine(lv[0][j], op.map(at(i + b + j)));
    }
    if constexpr (Op::kCascade) levels.fold(op, W);
  }
  for (; i + W <= n; i += W)
    for (int j = 0; j < W; ++j) lv[0][j] = op.combine(lv[0][j], op.map(at(i + j)));
  for (int j = 0; i < n; ++i, ++j) lv[0][j] = op.combine(lv[0][j], op.map(at(i)));
  if constexpr (Op::kCascade) levels.finish(op, W);
  for (int w = W / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) lv[0][j] = op.combine(lv[0][j], lv[0][j + w]);
  return lv[0][0];
}

// Reduces n elements p[0], p[stride], ... into one accumulator.
template <class Op>
typename Op::acc_t reduce_run(const Op& op, const typename Op::in_t* p, int64_t n,
                              int64_t stride) {
  if (n < lanes<typename Op::acc_t>()) {
    typename Op::acc_t a = op.identity();
    for (int64_t i = 0; i < n; ++i) a = op.combine(a, op.map(p[i * stride]));
    return a;
  }
  return stride == 1 ? reduce_lanes<Op, true>(op, p, n, 1)
                     : reduce_lanes<Op, false>(op, p, n, stride);
}

// Inner mode: reduces the whole reduced space of one output, with the
// outermost reduced dim restricted to [r0b, r0e).
template <class Op>
typename Op::acc_t reduce_inner(const Op& op, const typename Op::in_t* base, const ReducePlan& p,
                                int64_t r0b, int64_t r0e) {
  const int k = static_cast<int>(p.red_sizes.size());
  if (k == 1) return reduce_run(op, base + r0b * p.red_in[0], r0e - r0b, p.red_in[0]);
  // Outer reduced dims enumerate runs along the innermost one.
  DimVector sizes(p.red_sizes.begin(), p.red_sizes.end() - 1);
  DimVector strides(p.red_in.begin(), p.red_in.end() - 1);
  sizes[0] = r0e - r0b;
  const int64_t n = p.red_sizes[k - 1], s = p.red_in[k - 1];
  const typename Op::in_t* start = base + r0b * p.red_in[0];
  NdCounter c(sizes, strides);
  int64_t runs = compute_numel(sizes);
  ScalarCascade<Op> acc(op);
  for (int64_t r = 0; r < runs; ++r, c.next()) acc.push(reduce_run(op, start + c.off0, n, s));
  return acc.result();
}

// Vector mode: accumulates `width` consecutive vector-dim outputs starting at
// `base` over the reduced space (outermost reduced dim in [r0b, r0e)).
template <class Op>
void reduce_tile(const Op& op, const typename Op::in_t* base, int64_t width, const ReducePlan& p,
                 int64_t r0b, int64_t r0e, typename Op::acc_t* res) {
  using acc_t = typename Op::acc_t;
  using in_t = typename Op::in_t;
  constexpr int64_t T = kTileBytes / static_cast<int64_t>(sizeof(acc_t));
  constexpr int L = Op::kCascade ? kLevels : 1;
  alignas(64) acc_t lv[L][T];
  for (int64_t j = 0; j < width; ++j) lv[0][j] = op.identity();
  Levels<Op> levels;
  for (int l = 0; l < L; ++l) levels.lv[l] = lv[l];
  DimVector sizes = p.red_sizes;
  sizes[0] = r0e - r0b;
  const in_t* start = base + r0b * p.red_in[0];
  NdCounter c(sizes, p.red_in);
  const int64_t rows = compute_numel(sizes), vs = p.vec_in;
  acc_t* __restrict a = lv[0];
  auto map = [&op](in_t x, int64_t j) {
    if constexpr (requires { op.map(x, j); }) return op.map(x, j);
    else return op.map(x);
  };
  int in_block = 0;
  for (int64_t r = 0; r < rows; ++r, c.next()) {
    const in_t* __restrict row = start + c.off0;
    if (vs == 1) {
      for (int64_t j = 0; j < width; ++j) a[j] = op.combine(a[j], map(row[j], j));
    } else {
      for (int64_t j = 0; j < width; ++j) a[j] = op.combine(a[j], map(row[j * vs], j));
    }
    if constexpr (Op::kCascade) {
      if (++in_block == kFan) {
        in_block = 0;
        levels.fold(op, width);
      }
    }
  }
  if constexpr (Op::kCascade) levels.finish(op, width);
  for (int64_t j = 0; j < width; ++j) res[j] = a[j];
}

// Splits [0, n) into `parts` near-equal ranges; part t gets [*b, *e).
inline void split_range(int64_t n, int parts, int t, int64_t* b, int64_t* e) {
  int64_t per = n / parts, extra = n % parts;
  *b = t * per + std::min<int64_t>(t, extra);
  *e = *b + per + (t < extra ? 1 : 0);
}

}  // namespace detail

// Calls f(in_offset, out_offset) for each of the plan's outputs (the vector
// dim excluded), spread over nt threads.
template <class F>
void for_each_output(const ReducePlan& p, int nt, F f) {
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int64_t b, e;
    detail::split_range(p.num_outputs, omp_get_num_threads(), omp_get_thread_num(), &b, &e);
    NdCounter c(p.keep_sizes, p.keep_in, &p.keep_out);
    c.seek(b);
    for (int64_t o = b; o < e; ++o, c.next()) f(c.off0, c.off1);
  }
}

// Vector mode: the tile width for accumulators of up to max_w lanes,
// narrowed (down to 64) so that every one of nt threads gets a tile.
inline int64_t tile_width(const ReducePlan& p, int nt, int64_t max_w) {
  const int64_t O = p.num_outputs, V = p.vec_size;
  int64_t tw = std::min(max_w, V);
  if (nt > 1 && O * ((V + tw - 1) / tw) < nt) {
    int64_t per = (nt + O - 1) / O;
    tw = std::max<int64_t>(std::min<int64_t>(64, V), ((V + per - 1) / per + 15) / 16 * 16);
    tw = std::min(tw, max_w);
  }
  return tw;
}

// Vector mode: calls f(in_offset, out_offset, w) for each work item (a kept
// position and a tile of at most tw vector-dim outputs; the offsets point at
// the tile's first element), spread over nt threads.
template <class F>
void for_each_tile(const ReducePlan& p, int nt, int64_t tw, F f) {
  const int64_t V = p.vec_size, tiles = (V + tw - 1) / tw;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int64_t b, e;
    detail::split_range(p.num_outputs * tiles, omp_get_num_threads(), omp_get_thread_num(), &b,
                        &e);
    NdCounter c(p.keep_sizes, p.keep_in, &p.keep_out);
    int64_t cur = b / tiles;
    c.seek(cur);
    for (int64_t it = b; it < e; ++it) {
      const int64_t o = it / tiles, j0 = (it % tiles) * tw;
      for (; cur < o; ++cur) c.next();
      f(c.off0 + j0 * p.vec_in, c.off1 + j0 * p.vec_out, std::min(tw, V - j0));
    }
  }
}

// Fills every element of `out` (any layout) with v.
template <typename T>
void fill_value(const Tensor& out, T v) {
  if (out.numel() == 0) return;
  NdCounter c(out.sizes(), out.strides());
  T* p = out.data<T>();
  for (int64_t i = 0, n = out.numel(); i < n; ++i, c.next()) p[c.off0] = v;
}

// Runs `op` reducing `in` over `mask` into `out` (dtype Op::out_t). An empty
// reduction writes project(identity()).
template <class Op>
void reduce(const Tensor& out, const Tensor& in, DimMask mask, const Op& op) {
  using acc_t = typename Op::acc_t;
  using out_t = typename Op::out_t;
  if (out.numel() == 0) return;
  if (in.numel() == 0) {
    fill_value<out_t>(out, op.project(op.identity()));
    return;
  }
  const ReducePlan p = make_reduce_plan(in, out, mask);
  const auto* ip = in.data<typename Op::in_t>();
  out_t* op_ = out.data<out_t>();
  const int nt = reduce_threads(in.numel());
  const int64_t R0 = p.red_sizes[0];

  if (!p.vec_mode) {
    const int64_t O = p.num_outputs;
    if (nt > 1 && O < 4 * nt && R0 >= nt) {
      // Few outputs: each thread reduces a slice of the outermost reduced dim.
      std::unique_ptr<acc_t[]> part(new acc_t[nt * O]);
#pragma omp parallel num_threads(nt)
      {
        int t = omp_get_thread_num();
        int64_t b, e;
        detail::split_range(R0, nt, t, &b, &e);
        NdCounter c(p.keep_sizes, p.keep_in);
        for (int64_t o = 0; o < O; ++o, c.next())
          part[t * O + o] = b < e ? detail::reduce_inner(op, ip + c.off0, p, b, e) : op.identity();
      }
      NdCounter c(p.keep_sizes, p.keep_out);
      for (int64_t o = 0; o < O; ++o, c.next()) {
        detail::ScalarCascade<Op> acc(op);
        for (int t = 0; t < nt; ++t) acc.push(part[t * O + o]);
        op_[c.off0] = op.project(acc.result());
      }
      return;
    }
    for_each_output(p, nt, [&](int64_t in_off, int64_t out_off) {
      op_[out_off] = op.project(detail::reduce_inner(op, ip + in_off, p, 0, R0));
    });
    return;
  }

  // Vector mode: work items are (kept position, tile of the vector dim).
  constexpr int64_t T = detail::kTileBytes / static_cast<int64_t>(sizeof(acc_t));
  const int64_t O = p.num_outputs, V = p.vec_size;
  const int64_t tw = tile_width(p, nt, T);
  if (nt > 1 && O * ((V + tw - 1) / tw) < nt && R0 >= nt) {
    // Still too few: split the outermost reduced dim, with partial rows.
    std::unique_ptr<acc_t[]> part(new acc_t[nt * O * V]);
#pragma omp parallel num_threads(nt)
    {
      int t = omp_get_thread_num();
      int64_t b, e;
      detail::split_range(R0, nt, t, &b, &e);
      NdCounter c(p.keep_sizes, p.keep_in);
      for (int64_t o = 0; o < O; ++o, c.next()) {
        acc_t* dst = part.get() + (t * O + o) * V;
        for (int64_t j0 = 0; j0 < V; j0 += tw) {
          int64_t w = std::min(tw, V - j0);
          if (b < e) detail::reduce_tile(op, ip + c.off0 + j0 * p.vec_in, w, p, b, e, dst + j0);
          else std::fill(dst + j0, dst + j0 + w, op.identity());
        }
      }
    }
    NdCounter c(p.keep_sizes, p.keep_out);
    for (int64_t o = 0; o < O; ++o, c.next()) {
      for (int64_t j = 0; j < V; ++j) {
        detail::ScalarCascade<Op> acc(op);
        for (int t = 0; t < nt; ++t) acc.push(part[(t * O + o) * V + j]);
        op_[c.off0 + j * p.vec_out] = op.project(acc.result());
      }
    }
    return;
  }
  for_each_tile(p, nt, tw, [&](int64_t in_off, int64_t out_off, int64_t w) {
    alignas(64) acc_t res[T];
    detail::reduce_tile(op, ip + in_off, w, p, 0, R0, res);
    for (int64_t j = 0; j < w; ++j) op_[out_off + j * p.vec_out] = op.project(res[j]);
  });
}

// ---------------------------------------------------------------------------
// Kernels. `out` has in's shape with the reduced dims removed or kept as 1;
// dtypes are converted as PyTorch does (inputs cast to an explicit dtype
// first; integer sums and products accumulate in int64).
// ---------------------------------------------------------------------------
void sum_out(const Tensor& out, const Tensor& in, DimMask mask);
void nansum_out(const Tensor& out, const Tensor& in, DimMask mask);
void prod_out(const Tensor& out, const Tensor& in, DimMask mask);
void mean_out(const Tensor& out, const Tensor& in, DimMask mask);  // out: floating
void amax_out(const Tensor& out, const Tensor& in, DimMask mask);  // NaN propagates
void amin_out(const Tensor& out, const Tensor& in, DimMask mask);
void all_out(const Tensor& out, const Tensor& in, DimMask mask);   // out: bool or uint8
void any_out(const Tensor& out, const Tensor& in, DimMask mask);
void count_nonzero_out(const Tensor& out, const Tensor& in, DimMask mask);  // out: int64
// Vector p-norm (p = +-inf, 0 and any other value); out: floating.
void norm_out(const Tensor& out, const Tensor& in, DimMask mask, double p);
// Variance with `correction` (two-pass); standard deviation when take_sqrt.
// `mean`, when defined, receives the mean (shaped like `var`).
void var_mean_out(const Tensor& var, const Tensor& mean, const Tensor& in, DimMask mask,
                  double correction, bool take_sqrt);
// log(sum(exp(x))) computed as m + log(sum(exp(x - m))), m the max; `out`
// (floating) is contiguous; integer inputs are converted to its dtype.
void logsumexp_out(const Tensor& out, const Tensor& in, DimMask mask);
// Index (and value, when `values` is defined) of the first max/min along
// `dim`; NaN counts as the extreme. dim < 0: over the flattened input.
void arg_reduce_out(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                    bool is_max);
// Inclusive scans along `dim`; `out` is contiguous.
void cumsum_out(const Tensor& out, const Tensor& in, int64_t dim);
void cumprod_out(const Tensor& out, const Tensor& in, int64_t dim);

}  // namespace ignis::cpu

#include "ignis/kernels/cpu/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ignis/kernels/cpu/nn_util.h"
#include "ignis/kernels/cpu/vec_math.h"

namespace ignis::cpu {

namespace {

template <typename A>
inline A row_max(const A* __restrict x, int64_t n) {
  A m = -std::numeric_limits<A>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// One contiguous slice x[0, n) -> y (both in the op-math type A). A NaN in
// the slice makes the whole slice NaN, as in PyTorch: the max may skip it,
// but it reaches the sum.
template <typename A, SoftmaxKind K>
inline void softmax_row(const A* __restrict x, A* __restrict y, int64_t n) {
  const A m = row_max(x, n);
  if (K == SoftmaxKind::SafeSoftmax && m == -std::numeric_limits<A>::infinity()) {
    for (int64_t i = 0; i < n; ++i) y[i] = A(0);
    return;
  }
  A s = A(0);
  if constexpr (K == SoftmaxKind::LogSoftmax) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) s += vexp(x[i] - m);
    const A ls = std::log(s);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - ls;
  } else {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) {
      const A e = vexp(x[i] - m);
      y[i] = e;
      s += e;
    }
    const A inv = A(1) / s;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
}

// Rows split by RowChunks (Note [Few long rows], nn_util.h): the chunks'
// maxima, the chunks' sums of exp(x - max) (float and double softmax keep
// the exps in the output), the outputs.
template <typename T, SoftmaxKind K>
void softmax_few_rows(T* out, const T* in, const RowChunks& rc) {
  using A = opmath_t<T>;
  const int64_t n = rc.n;
  std::vector<A> part(size_t(rc.items)), max(size_t(rc.rows)), sum(size_t(rc.rows));
#pragma omp parallel num_threads(rc.threads())
  {
    std::vector<A> ibuf, obuf;
#pragma omp for schedule(static)
    for (int64_t it = 0; it < rc.items; ++it) {
      const int64_t len = rc.length(it);
      part[it] = row_max(RowIn<T>::get(in + rc.row(it) * n + rc.begin(it), len, ibuf), len);
    }
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rc.rows; ++r)
      max[r] = rc.fold(part, r, -std::numeric_limits<A>::infinity(),
                       [](A m, A v) { return v > m ? v : m; });
#pragma omp for schedule(static)
    for (int64_t it = 0; it < rc.items; ++it) {
      const int64_t r = rc.row(it), at = r * n + rc.begin(it), len = rc.length(it);
      const A* x = RowIn<T>::get(in + at, len, ibuf);
      const A m = max[r];
      A s = A(0);
      if constexpr (K != SoftmaxKind::LogSoftmax && std::is_same_v<A, T>) {
        T* y = out + at;
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < len; ++i) {
          const A e = vexp(x[i] - m);
          y[i] = e;
          s += e;
        }
      } else {
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < len; ++i) s += vexp(x[i] - m);
      }
      part[it] = s;
    }
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rc.rows; ++r)
      sum[r] = rc.fold(part, r, A(0), [](A a, A v) { return a + v; });
#pragma omp for schedule(static)
    for (int64_t it = 0; it < rc.items; ++it) {
      const int64_t r = rc.row(it), at = r * n + rc.begin(it), len = rc.length(it);
      const A* x = RowIn<T>::get(in + at, len, ibuf);
      RowOut<T> y(out + at, len, obuf);
      const A m = max[r];
      if (K == SoftmaxKind::SafeSoftmax && m == -std::numeric_limits<A>::infinity()) {
        for (int64_t i = 0; i < len; ++i) y.p[i] = A(0);
      } else if constexpr (K == SoftmaxKind::LogSoftmax) {
        const A ls = std::log(sum[r]);
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) y.p[i] = (x[i] - m) - ls;
      } else if constexpr (std::is_same_v<A, T>) {  // the exps are in the output
        const A inv = A(1) / sum[r];
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) y.p[i] *= inv;
      } else {
        const A inv = A(1) / sum[r];
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) y.p[i] = vexp(x[i] - m) * inv;
      }
      y.flush();
    }
  }
}

// Softmax over the last (contiguous) dimension: one row per slice, or
// chunks of rows when the rows are fewer than the threads.
template <typename T, SoftmaxKind K>
void softmax_lastdim(T* out, const T* in, int64_t rows, int64_t n) {
  using A = opmath_t<T>;
  if (RowChunks::apply(rows, n)) return softmax_few_rows<T, K>(out, in, RowChunks(rows, n));
  parallel_rows(rows, n, [&](int64_t r0, int64_t r1) {
    std::vector<A> ibuf, obuf;
    for (int64_t r = r0; r < r1; ++r) {
      const A* x = RowIn<T>::get(in + r * n, n, ibuf);
      RowOut<T> y(out + r * n, n, obuf);
      softmax_row<A, K>(x, y.p, n);
      y.flush();
    }
  });
}

// Softmax over a middle dimension of a [outer, n, inner] layout: vectorised
// across `inner`, keeping one running max and sum per inner position.
template <typename T, SoftmaxKind K>
void softmax_inner(T* out, const T* in, int64_t outer, int64_t n, int64_t inner) {
  using A = opmath_t<T>;
  constexpr int64_t kChunk = 512;
  // float/double keep the exponentials in `out` for the rescale; 16-bit
  // types recompute them instead of rounding twice.
  constexpr bool kStoreExp = K != SoftmaxKind::LogSoftmax && std::is_same_v<A, T>;
  const int64_t chunks = (inner + kChunk - 1) / kChunk;
  parallel_rows(outer * chunks, n * std::min(inner, kChunk), [&](int64_t t0, int64_t t1) {
    std::vector<A> mx(kChunk), sum(kChunk);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / chunks, j0 = (t % chunks) * kChunk;
      const int64_t w = std::min(kChunk, inner - j0);
      const T* x = in + o * n * inner + j0;
      T* y = out + o * n * inner + j0;
      for (int64_t j = 0; j < w; ++j) mx[j] = -std::numeric_limits<A>::infinity();
      for (int64_t d = 0; d < n; ++d) {
        const T* xr = x + d * inner;
        for (int64_t j = 0; j < w; ++j) {
          const A v = static_cast<A>(xr[j]);
          mx[j] = v > mx[j] ? v : mx[j];
        }
      }
      for (int64_t j = 0; j < w; ++j) sum[j] = A(0);
      for (int64_t d = 0; d < n; ++d) {
        const T* xr = x + d * inner;
        T* yr = y + d * inner;
        for (int64_t j = 0; j < w; ++j) {
          const A e = vexp(static_cast<A>(xr[j]) - mx[j]);
          sum[j] += e;
          if constexpr (kStoreExp) yr[j] = e;
        }
      }
      for (int64_t j = 0; j < w; ++j) {
        if (K == SoftmaxKind::LogSoftmax) sum[j] = mx[j] + std::log(sum[j]);
        else if (K == SoftmaxKind::SafeSoftmax && mx[j] == -std::numeric_limits<A>::infinity())
          sum[j] = A(0);
        else sum[j] = A(1) / sum[j];
      }
      for (int64_t d = 0; d < n; ++d) {
        const T* xr = x + d * inner;
        T* yr = y + d * inner;
        if (K == SoftmaxKind::LogSoftmax) {
          for (int64_t j = 0; j < w; ++j) yr[j] = static_cast<T>(static_cast<A>(xr[j]) - sum[j]);
        } else if constexpr (kStoreExp) {
          for (int64_t j = 0; j < w; ++j) yr[j] *= sum[j];
        } else {
          for (int64_t j = 0; j < w; ++j)
            yr[j] = static_cast<T>(vexp(static_cast<A>(xr[j]) - mx[j]) * sum[j]);
        }
      }
    }
  });
}

template <typename T, SoftmaxKind K>
void softmax_typed(const Tensor& out, const Tensor& in, int64_t dim) {
  const DimVector& sz = in.sizes();
  int64_t outer = 1, inner = 1, n = in.dim() == 0 ? 1 : sz[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= sz[d];
  for (int64_t d = dim + 1; d < in.dim(); ++d) inner *= sz[d];
  if (inner == 1) softmax_lastdim<T, K>(out.data<T>(), in.data<T>(), outer, n);
  else softmax_inner<T, K>(out.data<T>(), in.data<T>(), outer, n, inner);
}

}  // namespace

void softmax_into(const Tensor& out, const Tensor& in, int64_t dim, SoftmaxKind kind) {
  if (out.numel() == 0 || out.device().is_meta()) return;
  IGNIS_DISPATCH_FLOAT(in.dtype(), "softmax", [&] {
    switch (kind) {
      case SoftmaxKind::Softmax: softmax_typed<scalar_t, SoftmaxKind::Softmax>(out, in, dim); break;
      case SoftmaxKind::LogSoftmax:
        softmax_typed<scalar_t, SoftmaxKind::LogSoftmax>(out, in, dim);
        break;
      case SoftmaxKind::SafeSoftmax:
        softmax_typed<scalar_t, SoftmaxKind::SafeSoftmax>(out, in, dim);
        break;
    }
  });
}

}  // namespace ignis::cpu

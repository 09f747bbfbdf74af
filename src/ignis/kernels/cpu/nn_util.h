// Small helpers shared by the matrix and neural-network kernels: splitting
// row loops across threads, reading 16-bit float rows as float, and the type
// names PyTorch prints in the error messages these ops copy.
#pragma once

#include <omp.h>
#if defined(__F16C__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ignis/core/dtype.h"
#include "ignis/core/tensor.h"
#include "ignis/kernels/cpu/parallel.h"

namespace ignis::cpu {

// Below this many elements of work a loop runs on the calling thread.
constexpr int64_t kParallelGrain = 32768;

// Runs f(begin, end) over [0, n) items, split into one contiguous range per
// thread when n * work_per_item is large. Never nests inside a parallel region.
template <typename F>
void parallel_rows(int64_t n, int64_t work_per_item, F f) {
  if (n <= 0) return;
  int nt = threads_for(n * std::max<int64_t>(work_per_item, 1), kParallelGrain);
  if (n == 1 || nt <= 1) {
    f(int64_t(0), n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    int64_t t = omp_get_thread_num(), k = omp_get_num_threads();
    int64_t b = n * t / k, e = n * (t + 1) / k;
    if (b < e) f(b, e);
  }
}

// Note [Few long rows]
// A thread a row leaves threads idle when rows are fewer than threads (a
// 4M-wide softmax ran on one of two). The row kernels (softmax and
// log_softmax, layer_norm and rms_norm) split rows of at least 2 * kChunk
// elements, fewer than kFewRows of them, into chunks of kChunk: every
// (row, chunk) is an item of parallel passes, and each reduction is folded
// per row in chunk order. Which rows split depends on the shape alone and
// the folds on the chunks, so the results do not depend on the thread
// count; they differ from a whole row's fold only in rounding.
struct RowChunks {
  static constexpr int64_t kChunk = 16384, kFewRows = 64;
  static bool apply(int64_t rows, int64_t n) { return rows < kFewRows && n >= 2 * kChunk; }

  RowChunks(int64_t rows, int64_t n)
      : rows(rows), n(n), chunks((n + kChunk - 1) / kChunk), items(rows * chunks) {}
  // Item it: its row, where it starts in the row, its elements.
  int64_t row(int64_t it) const { return it / chunks; }
  int64_t begin(int64_t it) const { return (it % chunks) * kChunk; }
  int64_t length(int64_t it) const { return std::min(kChunk, n - begin(it)); }
  // Row r's per-item values folded in chunk order.
  template <typename A, typename F>
  A fold(const std::vector<A>& part, int64_t r, A init, F f) const {
    for (int64_t c = 0; c < chunks; ++c) init = f(init, part[size_t(r * chunks + c)]);
    return init;
  }
  // The split's team: one thread inside another parallel region.
  int threads() const { return omp_in_parallel() ? 1 : threads_for(rows * n, kParallelGrain); }

  int64_t rows, n, chunks, items;
};

// Half <-> float for a run of n values, eight at a time with the F16C
// instructions when the build targets them (same round-to-nearest-even).
inline void widen(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}
inline void narrow(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) dst[i] = Half(src[i]);
}
template <typename T>
inline void widen(const T* src, opmath_t<T>* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<opmath_t<T>>(src[i]);
}
template <typename T>
inline void narrow(const opmath_t<T>* src, T* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
}

// A row of T seen as opmath_t<T>: the row itself for float and double, a
// converted copy in a per-thread buffer for Half and BFloat16.
template <typename T>
struct RowIn {
  using acc_t = opmath_t<T>;
  static const acc_t* get(const T* p, int64_t n, std::vector<acc_t>& buf) {
    if constexpr (std::is_same_v<acc_t, T>) {
      (void)n;
      (void)buf;
      return p;
    } else {
      if (static_cast<int64_t>(buf.size()) < n) buf.resize(n);
      widen(p, buf.data(), n);
      return buf.data();
    }
  }
};

// Where a kernel writes a row of T: the row itself for float/double, else a
// float buffer that flush() rounds into the row.
template <typename T>
struct RowOut {
  using acc_t = opmath_t<T>;
  T* dst;
  int64_t n;
  acc_t* p;
  RowOut(T* d, int64_t len, std::vector<acc_t>& buf) : dst(d), n(len) {
    if constexpr (std::is_same_v<acc_t, T>) {
      p = d;
    } else {
      if (static_cast<int64_t>(buf.size()) < n) buf.resize(n);
      p = buf.data();
    }
  }
  void flush() {
    if constexpr (!std::is_same_v<acc_t, T>) narrow(p, dst, n);
  }
};

// A view of `t` broadcast to `shape` (stride 0 along expanded dims); the
// caller has checked that the shapes broadcast.
inline Tensor broadcast_view(const Tensor& t, const DimVector& shape) {
  if (t.sizes() == shape) return t;
  const size_t nd = shape.size(), off = nd - t.sizes().size();
  DimVector st(nd, 0);
  for (size_t i = off; i < nd; ++i)
    st[i] = t.sizes()[i - off] == shape[i] ? t.strides()[i - off] : 0;
  return make_view(t, shape, st, t.storage_offset());
}

// "float", "long int", ...: the C++ names some PyTorch messages print.
inline const char* cpp_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::UInt8: return "unsigned char";
    case ScalarType::Int8: return "signed char";
    case ScalarType::Int16: return "short int";
    case ScalarType::Int32: return "int";
    case ScalarType::Int64: return "long int";
    case ScalarType::Float16: return "c10::Half";
    case ScalarType::BFloat16: return "c10::BFloat16";
    case ScalarType::Float32: return "float";
    case ScalarType::Float64: return "double";
    default: return "undefined";
  }
}

}  // namespace ignis::cpu

// Lines as vectors, for the FFT kernels (Note [FFT kernels] in fft.cpp): a
// group of L lines is transformed at once in a buffer whose element i is a
// complex number with vector parts (fft::Cx<V>), lane l holding entry i of
// line l. These are the vector type, lane access, and the shuffles that move
// lines of (re, im) pairs in and out of that layout.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

#include "ignis/core/cpu_allocator.h"

namespace ignis::cpu::fft {

// A complex value with parts V: a float or double (one line), or a GCC vector
// of them (one line per lane). The parts are kept apart, so that a butterfly
// over vectors is plain vector arithmetic, with no shuffles.
template <typename V>
struct Cx {
  V r, i;
};

template <typename V>
inline Cx<V> operator+(const Cx<V>& a, const Cx<V>& b) {
  return {a.r + b.r, a.i + b.i};
}
template <typename V>
inline Cx<V> operator-(const Cx<V>& a, const Cx<V>& b) {
  return {a.r - b.r, a.i - b.i};
}

#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif

// The vector of T that a group of lines is transformed in, one line per lane.
template <typename T>
struct Simd {
  typedef T type __attribute__((vector_size(kVecBytes)));
  static constexpr int L = kVecBytes / int(sizeof(T));
};

// Lanes of V (1 for a scalar).
template <typename V, typename T>
constexpr int kLanes = int(sizeof(V) / sizeof(T));

// The buffer's lanes as scalars: element i's real parts at 2 L i, imaginary at
// 2 L i + L. (may_alias: they are written as T and read as vectors.)
template <typename T>
struct AliasOf {
  typedef T type __attribute__((may_alias));
};
template <typename T>
using Alias = typename AliasOf<T>::type;

template <typename T, typename V>
Alias<T>* lanes_of(Cx<V>* buf) {
  return reinterpret_cast<Alias<T>*>(buf);
}
template <typename T, typename V>
const Alias<T>* lanes_of(const Cx<V>* buf) {
  return reinterpret_cast<const Alias<T>*>(buf);
}

// Shuffles of vectors of T, with constant masks.
template <typename V, typename T>
struct Shuffle {
  static constexpr int L = kLanes<V, T>;
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  typedef I Mask __attribute__((vector_size(sizeof(V))));

  // The mask whose lane j is f(j).
  template <typename F, int... j>
  static constexpr Mask mask(F f, std::integer_sequence<int, j...>) {
    return Mask{I(f(j))...};
  }
  template <typename F>
  static constexpr Mask mask(F f) {
    return mask(f, std::make_integer_sequence<int, L>{});
  }

  // L pairs (re, im) at p: their real and imaginary parts.
  static void load_pairs(const T* p, V& re, V& im) {
    constexpr Mask even = mask([](int j) { return 2 * j; });
    constexpr Mask odd = mask([](int j) { return 2 * j + 1; });
    V a, b;
    std::memcpy(&a, p, sizeof(V));
    std::memcpy(&b, p + L, sizeof(V));
    re = __builtin_shuffle(a, b, even);
    im = __builtin_shuffle(a, b, odd);
  }
  // The inverse: L pairs (re[l], im[l]) to p.
  static void store_pairs(T* p, const V& re, const V& im) {
    constexpr Mask lo = mask([](int j) { return j / 2 + (j % 2) * L; });
    constexpr Mask hi = mask([](int j) { return L / 2 + j / 2 + (j % 2) * L; });
    const V a = __builtin_shuffle(re, im, lo), b = __builtin_shuffle(re, im, hi);
    std::memcpy(p, &a, sizeof(V));
    std::memcpy(p + L, &b, sizeof(V));
  }
  // rows[0..L) := their transpose, by log2 L rounds: at chunk size c, rows r
  // and r + c (r & c = 0) trade the odd c-lane chunks of r for the even ones
  // of r + c.
  template <int c = L / 2>
  static void transpose(V* rows) {
    // Output lane j, in chunk q = j / c, comes from a if q is even, else from b
    // (lanes L on): from its chunk q & ~1 in lo, q | 1 in hi.
    constexpr Mask lo = mask([](int j) { return (j / c % 2) * L + (j / c & ~1) * c + j % c; });
    constexpr Mask hi = mask([](int j) { return (j / c % 2) * L + (j / c | 1) * c + j % c; });
#pragma GCC unroll 16
    for (int r = 0; r < L; ++r)
      if ((r & c) == 0) {
        const V a = rows[r], b = rows[r + c];
        rows[r] = __builtin_shuffle(a, b, lo);
        rows[r + c] = __builtin_shuffle(a, b, hi);
      }
    if constexpr (c > 1) transpose<c / 2>(rows);
  }
};

// buf[j] := pair j of L lines of pairs in a row (line l's at lines[l]), j < pairs.
template <typename V, typename T>
void load_pair_lines(Cx<V>* buf, const T* const* lines, int64_t pairs) {
  using S = Shuffle<V, T>;
  constexpr int L = S::L;
  int64_t j0 = 0;
  for (; j0 + L <= pairs; j0 += L) {
    V re[L], im[L];
    for (int l = 0; l < L; ++l) S::load_pairs(lines[l] + 2 * j0, re[l], im[l]);
    S::transpose(re);
    S::transpose(im);
    for (int j = 0; j < L; ++j) buf[j0 + j] = {re[j], im[j]};
  }
  for (int64_t j = j0; j < pairs; ++j) {
    Cx<V> e;
    for (int l = 0; l < L; ++l) e.r[l] = lines[l][2 * j], e.i[l] = lines[l][2 * j + 1];
    buf[j] = e;
  }
}

// The inverse, for `count` lines: pair j of line l := buf[j] lane l times scale.
template <typename V, typename T>
void store_pair_lines(const Cx<V>* buf, T* const* lines, int count, int64_t pairs, T scale) {
  using S = Shuffle<V, T>;
  constexpr int L = S::L;
  int64_t j0 = 0;
  for (; j0 + L <= pairs; j0 += L) {
    V re[L], im[L];
    for (int j = 0; j < L; ++j) re[j] = buf[j0 + j].r * scale, im[j] = buf[j0 + j].i * scale;
    S::transpose(re);
    S::transpose(im);
    for (int l = 0; l < count; ++l) S::store_pairs(lines[l] + 2 * j0, re[l], im[l]);
  }
  const Alias<T>* lanes = lanes_of<T>(buf);
  for (int l = 0; l < count; ++l)
    for (int64_t j = j0; j < pairs; ++j) {
      lines[l][2 * j] = lanes[2 * L * j + l] * scale;
      lines[l][2 * j + 1] = lanes[2 * L * j + L + l] * scale;
    }
}

// A thread's buffer for its groups of lines: kept between calls up to
// kKeepBytes (a fresh buffer per call, trimmed away by malloc and
// page-faulted in again each time, made 64 rffts of 4096 points 2.7 times
// slower), larger ones taken from the CPU caching allocator for the call
// (whose cached blocks are resident too). Slot: one buffer per use that may be
// live at once on a thread (a line's buffer, and the four-step's groups
// inside that line's transform).
template <int slot>
class Workspace {
 public:
  explicit Workspace(size_t bytes) {
    if (bytes > kKeepBytes) {
      data_ = cpu_allocator().allocate(bytes, &block_);
      return;
    }
    thread_local std::unique_ptr<Line[]> kept;
    thread_local size_t kept_bytes = 0;
    if (kept_bytes < bytes) {
      kept.reset();
      kept.reset(new Line[(bytes + sizeof(Line) - 1) / sizeof(Line)]);
      kept_bytes = bytes;
    }
    data_ = kept.get();
  }
  ~Workspace() {
    if (block_) cpu_allocator().free(data_, block_);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void* data() const { return data_; }

 private:
  static constexpr size_t kKeepBytes = size_t(4) << 20;
  struct alignas(64) Line {
    char bytes[64];
  };
  void* data_;
  size_t block_ = 0;
};

}  // namespace ignis::cpu::fft

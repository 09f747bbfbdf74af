#include "ignis/kernels/cpu/fft.h"

#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>

#include "ignis/core/error.h"
#include "ignis/kernels/cpu/fft_plan.h"
#include "ignis/kernels/cpu/parallel.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis::cpu {

// Note [FFT kernels]
// A transform over several dims is a 1-D transform along each in turn, each a
// loop over the tensor's lines along that dim, in parallel: c2c reads the
// input for the first dim and works in place in the output for the rest; r2c
// does the last dim first (real to complex), c2r does it last, the other dims
// transformed into a temporary first. Transforms run in the tensor's own
// precision (complex64/float32 in float, as torch's pocketfft does:
// test_fft.py holds the error against a float64 reference to at most twice
// torch's), and the scale of a norm mode is applied as the last dim is written.
//
// Lines are transformed in groups of L (a vector register's worth of floats
// or doubles: 16 or 8 with AVX-512), gathered into a buffer whose element i is
// a complex number with vector parts, lane l holding entry i of the group's
// line l (fft::Cx<V>). Every butterfly then transforms L lines with plain
// vector arithmetic, whatever the length, as pocketfft's multi-line
// transforms do. A group short of L lines repeats its first line in the spare
// lanes (computed, never written back). The gather and the scatter are
// transposes, done one of three ways: lanes adjacent in memory (a dim other
// than the last) as vectors of pairs, de-interleaved; lines of contiguous
// entries (the last dim) as L x L blocks transposed in registers; anything
// else lane by lane in blocks. Each thread keeps its buffer between calls
// (fft::Workspace).
//
// A line transformed alone (a tensor of one line; and, for lengths of at
// least 1024 points, fewer lines than L, fewer groups than threads, or lines
// too long for a group's buffer to stay in L2: for_groups) goes by Bailey's
// four-step instead of its plan's passes on scalars: the line as an n1 x n2
// matrix, its columns transformed as lines L at a time, twiddled, then its
// rows, each step's groups shared among the threads. So one long line is
// transformed with vectors and every thread, in pieces that fit in cache.
//
// A 1-D transform of length n is a plan (fft_plan.h), built once per length
// and precision and kept in an LRU cache (plan_cache(): 16 plans of each kind,
// and at most 64 MiB of tables; shared_ptrs, so a plan evicted while another
// thread runs it lives until that run ends). One plan serves both directions:
// its tables hold the forward roots, conjugated on the fly by the backward
// butterflies.
//  - Complex plans: a pass per factor of n, FFTPACK's decimation in frequency
//    with Stockham's autosort (pocketfft's cfftp): each pass reads one buffer
//    and writes the other in order, with its own table of twiddles laid out
//    as it reads them; no bit reversal, no recursion. The powers of two go
//    as 8s (the rest as a 4, two 4s or a 2), then the odd primes. Butterflies
//    are written for radix 2, 4 and 8 and, for odd primes, one template that
//    pairs x_j with x_{p-j} (half the products of a plain DFT), with the
//    radix a compile-time constant for 3, 5, 7, 11 and 13 (unrolled) and a
//    loop bound for larger primes up to 127.
//  - Lengths with a larger prime factor (pocketfft's cost rule decides for
//    primes 17 to 127) use Bluestein's chirp-z: the DFT as a convolution of
//    length M >= 2n - 1, M 11-smooth, by a forward and a backward transform
//    of M and pointwise products with the chirp and the kernel's transform,
//    both precomputed (the kernel's in double whatever the precision).
//  - Real plans (r2c and c2r): for even n a complex transform of n/2 points of
//    the reals taken two at a time (x_{2j} + i x_{2j+1}), separated into the
//    transforms of the even and odd reals and joined with n/4 twiddles (half
//    the work of a complex transform of n); for odd n a complex transform of
//    n. c2r reads the first n/2 + 1 entries and ignores the imaginary parts of
//    the zero and (even n) the n/2 frequencies, as torch's c2r does.
// Twiddles are computed in double, each the product of two roots from tables
// of about sqrt(n) whose angles were reduced to an octant (fft::Roots,
// fft::unit_root), then rounded to the plan's precision.

namespace {

using fft::Alias;
using fft::ComplexPlan;
using fft::Cx;
using fft::kLanes;
using fft::lanes_of;
using fft::load_pair_lines;
using fft::RealPlan;
using fft::Shuffle;
using fft::Simd;
using fft::store_pair_lines;

// ---- the plan cache --------------------------------------------------------------------------

constexpr size_t kCachePlans = 16;
constexpr size_t kCacheBytes = size_t(64) << 20;

// Plans by length, least recently used first out. A plan is built outside the
// lock (a large one takes a while, and a Bluestein plan asks the cache for its
// convolution's); two threads that miss together both build, and the first
// to finish is kept.
template <typename Plan>
class PlanCache {
 public:
  template <typename Build>
  std::shared_ptr<const Plan> get(int64_t n, Build build) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto p = find(n)) {
        ++hits_;
        return p;
      }
    }
    std::shared_ptr<const Plan> made = build(n);
    std::lock_guard<std::mutex> lock(mu_);
    if (auto p = find(n)) return p;
    ++misses_;
    entries_.emplace_front(n, made);
    bytes_ += made->bytes();
    while (entries_.size() > 1 && (entries_.size() > kCachePlans || bytes_ > kCacheBytes)) {
      bytes_ -= entries_.back().second->bytes();
      entries_.pop_back();
    }
    return made;
  }

  void add_stats(FftPlanCacheStats& s) {
    std::lock_guard<std::mutex> lock(mu_);
    s.plans += int64_t(entries_.size());
    s.bytes += int64_t(bytes_);
    s.hits += hits_;
    s.misses += misses_;
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.clear();
    bytes_ = 0;
    hits_ = misses_ = 0;
  }

 private:
  // The plan of length n, moved to the front; null if absent. Under mu_.
  std::shared_ptr<const Plan> find(int64_t n) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->first == n) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front().second;
      }
    return nullptr;
  }

  std::mutex mu_;
  std::list<std::pair<int64_t, std::shared_ptr<const Plan>>> entries_;
  size_t bytes_ = 0;
  int64_t hits_ = 0, misses_ = 0;
};

template <typename Plan>
PlanCache<Plan>& plan_cache() {
  static PlanCache<Plan> cache;
  return cache;
}

template <typename T>
std::shared_ptr<const ComplexPlan<T>> complex_plan(int64_t n) {
  return plan_cache<ComplexPlan<T>>().get(n, [](int64_t m) {
    return std::make_shared<const ComplexPlan<T>>(m, &complex_plan<T>, &complex_plan<double>);
  });
}

template <typename T>
std::shared_ptr<const RealPlan<T>> real_plan(int64_t n) {
  return plan_cache<RealPlan<T>>().get(n, [](int64_t m) {
    return std::make_shared<const RealPlan<T>>(m, complex_plan<T>(RealPlan<T>::complex_length(m)));
  });
}

// ---- lines, lanes and groups -----------------------------------------------------------------

// The element offsets of t's lines along dim d (one per index of the other dims).
std::vector<int64_t> line_offsets(const Tensor& t, int64_t d) {
  const int64_t nd = t.dim();
  std::vector<int64_t> offs{t.storage_offset()};
  for (int64_t k = 0; k < nd; ++k) {
    if (k == d) continue;
    const int64_t size = t.sizes()[k], stride = t.strides()[k];
    std::vector<int64_t> next;
    next.reserve(offs.size() * size_t(size));
    for (int64_t o : offs)
      for (int64_t i = 0; i < size; ++i) next.push_back(o + i * stride);
    offs.swap(next);
  }
  return offs;
}

// A group's lines: their offsets in the source and destination, lanes past
// `count` repeating the first line.
template <int L>
struct Group {
  int64_t src[L], dst[L];
  int count;
  Group(const std::vector<int64_t>& src_offs, const std::vector<int64_t>& dst_offs,
        int64_t first) {
    count = int(std::min<int64_t>(L, int64_t(src_offs.size()) - first));
    for (int l = 0; l < L; ++l) {
      const size_t at = size_t(first + (l < count ? l : 0));
      src[l] = src_offs[at];
      dst[l] = dst_offs[at];
    }
  }
};

// Runs body(group, data, scratch) over the lines, in parallel over groups;
// data and scratch are each thread's buffers of data_size and scratch_size
// elements. Lines go in groups of L (as vectors), or one at a time (as
// scalars) where that is faster: a tensor of one line, and, where the plan
// transforms a line by the four-step (`splits`: itself with vectors and
// threads), fewer lines than L (spare lanes would be wasted work), fewer
// groups than threads (idle threads), or lines so long that a group's buffer
// leaves L2 (measured: 2 x 65536 complex64 lines 6 times faster, 64 x 65536
// 1.5 times on 2 threads).
template <typename T, typename Body>
void for_groups(const std::vector<int64_t>& src_offs, const std::vector<int64_t>& dst_offs,
                int64_t len, int64_t data_size, int64_t scratch_size, bool splits,
                const Body& body) {
  using Vec = typename Simd<T>::type;
  const int64_t lines = int64_t(src_offs.size());
  if (lines == 0) return;
  auto run = [&]<typename V>(V*) {
    constexpr int L = kLanes<V, T>;
    const int64_t groups = (lines + L - 1) / L;
    // A transform costs about len log2(len) operations a line.
    int64_t log_len = 1;
    while ((int64_t(1) << log_len) < len) ++log_len;
    const int nt = groups < 2 ? 1 : threads_for(lines * len * log_len);
#pragma omp parallel num_threads(nt)
    {
      fft::Workspace<0> ws(size_t(data_size + scratch_size) * sizeof(Cx<V>));
      Cx<V>* buf = static_cast<Cx<V>*>(ws.data());
#pragma omp for schedule(static)
      for (int64_t g = 0; g < groups; ++g)
        body(Group<L>(src_offs, dst_offs, g * L), buf, buf + data_size);
    }
  };
  constexpr int L = Simd<T>::L;
  constexpr int64_t kGroupBytes = int64_t(1) << 20;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const bool one_by_one =
      lines == 1 || (splits && (lines < L || (lines + L - 1) / L < threads ||
                                len * int64_t(sizeof(Cx<Vec>)) > kGroupBytes));
  if (one_by_one) run(static_cast<T*>(nullptr));
  else run(static_cast<Vec*>(nullptr));
}

// Gathering and scattering a group's lines: a transpose between the lines
// (L of them, entry i at offset + i * stride) and the buffer (entry i a
// vector of L lanes). Three ways, fastest first:
//  - lanes adjacent in memory (the lines of a dim other than the last, the
//    lanes the last dim's consecutive entries): entry i of all lines is L
//    complex values in a row, read as two vectors and de-interleaved;
//  - lines of contiguous entries (stride 1; a real line read as pairs is
//    its packed form): L entries of each line read as vectors,
//    de-interleaved, and the L x L blocks of parts transposed in registers;
//  - otherwise lane by lane, in blocks of kBlock entries, so that each line's
//    cache lines are used whole while they are in L1 (entry i of 16 lines
//    4 KiB apart share a cache set).

// Whether the group's L lines (all present) start at consecutive elements.
template <int L>
bool adjacent(const int64_t* offs, int count) {
  if (count != L || L == 1) return false;
  for (int l = 1; l < L; ++l)
    if (offs[l] != offs[0] + l) return false;
  return true;
}

// buf[i] := entry i of the group's lines, i < len.
template <typename V, typename T, int L>
void load_complex(Cx<V>* buf, const Complex<T>* base, const Group<L>& g, int64_t len,
                  int64_t stride) {
  if constexpr (L > 1) {
    if (adjacent<L>(g.src, g.count)) {
      for (int64_t i = 0; i < len; ++i)
        Shuffle<V, T>::load_pairs(&base[g.src[0] + i * stride].re, buf[i].r, buf[i].i);
      return;
    }
    if (stride == 1) {
      const T* lines[L];
      for (int l = 0; l < L; ++l) lines[l] = &base[g.src[l]].re;
      return load_pair_lines(buf, lines, len);
    }
  }
  constexpr int64_t kBlock = 16;
  Alias<T>* lanes = lanes_of<T>(buf);
  for (int64_t i0 = 0; i0 < len; i0 += kBlock) {
    const int64_t i1 = std::min(len, i0 + kBlock);
    for (int l = 0; l < L; ++l) {
      const Complex<T>* p = base + g.src[l];
      for (int64_t i = i0; i < i1; ++i) {
        const Complex<T> z = p[i * stride];
        lanes[2 * L * i + l] = z.re;
        lanes[2 * L * i + L + l] = z.im;
      }
    }
  }
}

// buf[j] := reals 2j and 2j + 1 of the group's lines of n reals (0 past the end).
template <typename V, typename T, int L>
void load_real_packed(Cx<V>* buf, const T* base, const Group<L>& g, int64_t n, int64_t stride) {
  Alias<T>* lanes = lanes_of<T>(buf);
  bool done = false;
  if constexpr (L > 1) {
    if (stride == 1) {
      const T* lines[L];
      for (int l = 0; l < L; ++l) lines[l] = base + g.src[l];
      load_pair_lines(buf, lines, n / 2);
      if (n % 2 == 1)
        for (int l = 0; l < L; ++l) lanes[L * (n - 1) + l] = lines[l][n - 1];
      done = true;
    }
  }
  if (!done) {
    constexpr int64_t kBlock = 32;
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      const int64_t i1 = std::min(n, i0 + kBlock);
      for (int l = 0; l < L; ++l) {
        const T* p = base + g.src[l];
        // Real i goes to element i/2, part i%2: offset 2 L (i/2) + L (i%2) = L i.
        for (int64_t i = i0; i < i1; ++i) lanes[L * i + l] = p[i * stride];
      }
    }
  }
  if (n % 2 == 1)
    for (int l = 0; l < L; ++l) lanes[L * n + l] = T(0);
}

// Entries [from, to) of the group's destination lines := buf[i] * scale
// (conjugated: conj(buf[mirror - i]) * scale, the other half of a real
// signal's spectrum).
template <bool conjugate = false, typename V, typename T, int L>
void store_complex(const Cx<V>* buf, Complex<T>* base, const Group<L>& g, int64_t from,
                   int64_t to, int64_t stride, T scale, int64_t mirror = 0) {
  auto scaled = [&](int64_t i) {
    const Cx<V> e = buf[conjugate ? mirror - i : i];
    return Cx<V>{e.r * scale, conjugate ? -(e.i * scale) : e.i * scale};
  };
  if constexpr (L > 1 && !conjugate) {
    if (adjacent<L>(g.dst, g.count)) {
      for (int64_t i = from; i < to; ++i) {
        const Cx<V> e = scaled(i);
        Shuffle<V, T>::store_pairs(&base[g.dst[0] + i * stride].re, e.r, e.i);
      }
      return;
    }
    if (stride == 1) {
      T* lines[L];
      for (int l = 0; l < L; ++l) lines[l] = &base[g.dst[l] + from].re;
      return store_pair_lines(buf + from, lines, g.count, to - from, scale);
    }
  }
  constexpr int64_t kBlock = 16;
  for (int64_t i0 = from; i0 < to; i0 += kBlock) {
    const int64_t i1 = std::min(to, i0 + kBlock);
    Cx<V> block[kBlock];
    for (int64_t i = i0; i < i1; ++i) block[i - i0] = scaled(i);
    const Alias<T>* lanes = lanes_of<T>(block);
    for (int l = 0; l < g.count; ++l) {
      Complex<T>* p = base + g.dst[l];
      for (int64_t i = i0; i < i1; ++i)
        p[i * stride] = {lanes[2 * L * (i - i0) + l], lanes[2 * L * (i - i0) + L + l]};
    }
  }
}

// The group's destination lines of n reals := the packed buf * scale.
template <typename V, typename T, int L>
void store_real_packed(const Cx<V>* buf, T* base, const Group<L>& g, int64_t n, int64_t stride,
                       T scale) {
  if constexpr (L > 1) {
    if (stride == 1) {
      T* lines[L];
      for (int l = 0; l < L; ++l) lines[l] = base + g.dst[l];
      store_pair_lines(buf, lines, g.count, n / 2, scale);
      if (n % 2 == 1)
        for (int l = 0; l < g.count; ++l)
          lines[l][n - 1] = lanes_of<T>(buf)[L * (n - 1) + l] * scale;
      return;
    }
  }
  constexpr int64_t kBlock = 32;
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t i1 = std::min(n, i0 + kBlock);
    Cx<V> block[kBlock / 2];
    for (int64_t j = i0 / 2; j < (i1 + 1) / 2; ++j)
      block[j - i0 / 2] = {buf[j].r * scale, buf[j].i * scale};
    const Alias<T>* lanes = lanes_of<T>(block);
    for (int l = 0; l < g.count; ++l) {
      T* p = base + g.dst[l];
      for (int64_t i = i0; i < i1; ++i) p[i * stride] = lanes[L * (i - i0) + l];
    }
  }
}

template <typename T>
T* base_of(const Tensor& t) {
  return static_cast<T*>(t.data_ptr()) - t.storage_offset();
}

// ---- the transforms --------------------------------------------------------------------------

// dst's lines along d := the transform of src's (the same sizes; dst may be src).
template <typename T>
void c2c_along(const Tensor& src, const Tensor& dst, int64_t d, bool forward, T scale) {
  const int64_t n = src.sizes()[size_t(d)];
  const auto plan = complex_plan<T>(n);
  const int64_t ss = src.strides()[size_t(d)], ds = dst.strides()[size_t(d)];
  const Complex<T>* sb = base_of<Complex<T>>(src);
  Complex<T>* db = base_of<Complex<T>>(dst);
  for_groups<T>(line_offsets(src, d), line_offsets(dst, d), n, n, plan->scratch_size(),
                plan->splits(),
                [&]<typename V, int L>(const Group<L>& g, Cx<V>* data, Cx<V>* scratch) {
                  load_complex(data, sb, g, n, ss);
                  const Cx<V>* y = forward ? plan->template exec<true>(data, scratch)
                                           : plan->template exec<false>(data, scratch);
                  store_complex(y, db, g, 0, n, ds, scale);
                });
}

// dst := the transform of src over dims (dst may be src), scaled as the last is written.
template <typename T>
void c2c_dims(const Tensor& src, const Tensor& dst, const std::vector<int64_t>& dims, bool forward,
              double scale) {
  for (size_t k = 0; k < dims.size(); ++k)
    c2c_along<T>(k == 0 ? src : dst, dst, dims[k], forward,
                 T(k + 1 == dims.size() ? scale : 1.0));
}

template <typename T>
void r2c_typed(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims,
               bool onesided, double scale) {
  const int64_t last = dims.back(), n = in.sizes()[size_t(last)], h = n / 2 + 1;
  const auto plan = real_plan<T>(n);
  const int64_t is = in.strides()[size_t(last)], os = out.strides()[size_t(last)];
  const T* ib = base_of<T>(in);
  Complex<T>* ob = base_of<Complex<T>>(out);
  const T s_last = T(dims.size() == 1 ? scale : 1.0);
  for_groups<T>(line_offsets(in, last), line_offsets(out, last), n, plan->data_size(),
                plan->scratch_size(), plan->splits(),
                [&]<typename V, int L>(const Group<L>& g, Cx<V>* data, Cx<V>* scratch) {
                  load_real_packed(data, ib, g, n, is);
                  const Cx<V>* X = plan->r2c(data, scratch);
                  store_complex(X, ob, g, 0, h, os, s_last);
                  // X_{n-k} = conj(X_k).
                  if (!onesided) store_complex<true>(X, ob, g, h, n, os, s_last, n);
                });
  const std::vector<int64_t> rest(dims.begin(), dims.end() - 1);
  if (!rest.empty()) c2c_dims<T>(out, out, rest, true, scale);
}

template <typename T>
void c2r_typed(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims,
               double scale) {
  const int64_t last = dims.back(), n = out.sizes()[size_t(last)], h = n / 2 + 1;
  // The other dims first, into a temporary (the input stays as it is).
  Tensor src = in;
  const std::vector<int64_t> rest(dims.begin(), dims.end() - 1);
  if (!rest.empty()) {
    src = empty_tensor(in.sizes(), in.dtype(), in.device());
    c2c_dims<T>(in, src, rest, false, 1.0);
  }
  const auto plan = real_plan<T>(n);
  const int64_t ss = src.strides()[size_t(last)], os = out.strides()[size_t(last)];
  const Complex<T>* sb = base_of<Complex<T>>(src);
  T* ob = base_of<T>(out);
  for_groups<T>(line_offsets(src, last), line_offsets(out, last), n, plan->data_size(),
                plan->scratch_size(), plan->splits(),
                [&]<typename V, int L>(const Group<L>& g, Cx<V>* data, Cx<V>* scratch) {
                  load_complex(data, sb, g, h, ss);
                  const Cx<V>* x = plan->c2r(data, scratch);
                  store_real_packed(x, ob, g, n, os, T(scale));
                });
}

}  // namespace

void fft_c2c(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims, bool forward,
             double scale) {
  if (out.numel() == 0) return;
  if (out.dtype() == ScalarType::ComplexFloat) c2c_dims<float>(in, out, dims, forward, scale);
  else c2c_dims<double>(in, out, dims, forward, scale);
}

void fft_r2c(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims, bool onesided,
             double scale) {
  if (out.numel() == 0) return;
  if (in.dtype() == ScalarType::Float32) r2c_typed<float>(out, in, dims, onesided, scale);
  else r2c_typed<double>(out, in, dims, onesided, scale);
}

void fft_c2r(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims, double scale) {
  if (out.numel() == 0) return;
  if (out.dtype() == ScalarType::Float32) c2r_typed<float>(out, in, dims, scale);
  else c2r_typed<double>(out, in, dims, scale);
}

FftPlanCacheStats fft_plan_cache_stats() {
  FftPlanCacheStats s;
  plan_cache<ComplexPlan<float>>().add_stats(s);
  plan_cache<ComplexPlan<double>>().add_stats(s);
  plan_cache<RealPlan<float>>().add_stats(s);
  plan_cache<RealPlan<double>>().add_stats(s);
  return s;
}

void fft_plan_cache_clear() {
  plan_cache<ComplexPlan<float>>().clear();
  plan_cache<ComplexPlan<double>>().clear();
  plan_cache<RealPlan<float>>().clear();
  plan_cache<RealPlan<double>>().clear();
}

}  // namespace ignis::cpu

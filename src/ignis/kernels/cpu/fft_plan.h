// The 1-D transforms behind kernels/cpu/fft.cpp: plans of complex and real
// FFTs of one length, which transform one line at a time (parts of float or
// double) or one line per lane of a GCC vector. Note [FFT kernels] in fft.cpp
// says how; fft.cpp caches the plans (plan_cache()).
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <memory>
#include <numbers>
#include <type_traits>
#include <utility>
#include <vector>

#include "ignis/kernels/cpu/fft_lanes.h"
#include "ignis/kernels/cpu/parallel.h"

namespace ignis::cpu::fft {

// ---- complex arithmetic ---------------------------------------------------------------------

// a times w (fwd) or times conj(w) (backward). Tables hold the forward roots
// exp(-2 pi i k/n); the backward transform uses their conjugates, so that one
// plan serves both directions.
template <bool fwd, typename V, typename T>
inline Cx<V> mul(const Cx<V>& a, const Cx<T>& w) {
  if constexpr (fwd) return {a.r * w.r - a.i * w.i, a.r * w.i + a.i * w.r};
  else return {a.r * w.r + a.i * w.i, a.i * w.r - a.r * w.i};
}

// a times -i (fwd) or +i (backward): the root of order 4, exactly.
template <bool fwd, typename V>
inline Cx<V> quarter(const Cx<V>& a) {
  if constexpr (fwd) return {a.i, -a.r};
  else return {-a.i, a.r};
}

// a times the root of order 8, (1 - i)/sqrt 2 (fwd) or (1 + i)/sqrt 2.
template <bool fwd, typename V, typename T>
inline Cx<V> eighth(const Cx<V>& a) {
  const T h = T(std::numbers::sqrt2 / 2);
  if constexpr (fwd) return {(a.r + a.i) * h, (a.i - a.r) * h};
  else return {(a.r - a.i) * h, (a.i + a.r) * h};
}

// exp(-2 pi i k/n), to about an ulp: the angle is first reduced to at most
// pi/4 by the symmetries of sine and cosine, in integers (computed directly, an
// angle near 2 pi carries an error 8 times an ulp of pi/4, which a double
// transform of a large n would show).
inline std::complex<double> unit_root(int64_t k, int64_t n) {
  k %= n;
  if (k < 0) k += n;
  const int64_t full = 8 * n;  // the angle is 2 pi a / full
  int64_t a = 8 * k;
  bool neg_sin = false, neg_cos = false, swap = false;
  if (a > full / 2) a = full - a, neg_sin = true;  // 2 pi - t
  if (a > full / 4) a = full / 2 - a, neg_cos = true;  // pi - t
  if (a > full / 8) a = full / 4 - a, swap = true;  // pi/2 - t
  const double t = 2.0 * std::numbers::pi * double(a) / double(full);
  double c = std::cos(t), s = std::sin(t);
  if (swap) std::swap(c, s);
  if (neg_cos) c = -c;
  if (neg_sin) s = -s;
  return {c, -s};
}

// exp(-2 pi i k/n) for any k, as the product (in double) of two roots from
// tables of about sqrt(n) each (unit_root's): within an ulp or two, for a
// multiplication where unit_root takes a sine and a cosine (the twiddles of a
// plan of 2^22 points took 0.6 s that way), as pocketfft's sincos_2pibyn does.
class Roots {
 public:
  explicit Roots(int64_t n) : n_(n) {
    while (step_ * step_ < n) ++step_;
    for (int64_t k = 0; k < step_; ++k) low_.push_back(unit_root(k, n));
    for (int64_t k = 0; k * step_ < n; ++k) high_.push_back(unit_root(k * step_, n));
  }
  std::complex<double> operator()(int64_t k) const {
    k %= n_;
    if (k < 0) k += n_;
    const std::complex<double> a = high_[size_t(k / step_)], b = low_[size_t(k % step_)];
    return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
  }

 private:
  int64_t n_, step_ = 1;
  std::vector<std::complex<double>> low_, high_;
};

// ---- butterflies -----------------------------------------------------------------------------
// A radix-r butterfly reads r values x[j * xs] and writes their r-point DFT,
// y[m * ys] = w_m * sum_j x_j exp(-+2 pi i jm/r), where w_m = w[(m - 1) * ws]
// when `twiddled` (the pass's twiddles; w_0 = 1) and 1 otherwise.

template <bool fwd, bool twiddled, typename V, typename T>
inline void put(Cx<V>* y, const Cx<V>& v, const Cx<T>* w, int64_t m, int64_t ws) {
  if constexpr (twiddled) *y = mul<fwd>(v, w[(m - 1) * ws]);
  else *y = v;
}

template <bool fwd, bool twiddled, typename V, typename T>
inline void butterfly2(const Cx<V>* x, int64_t xs, Cx<V>* y, int64_t ys, const Cx<T>* w,
                       int64_t ws) {
  const Cx<V> a = x[0], b = x[xs];
  y[0] = a + b;
  put<fwd, twiddled>(y + ys, a - b, w, 1, ws);
}

// The 4-point DFT of a, b, c, d.
template <bool fwd, typename V>
inline void dft4(Cx<V>& a, Cx<V>& b, Cx<V>& c, Cx<V>& d) {
  const Cx<V> s02 = a + c, d02 = a - c, s13 = b + d, d13 = quarter<fwd>(b - d);
  a = s02 + s13;
  b = d02 + d13;
  c = s02 - s13;
  d = d02 - d13;
}

template <bool fwd, bool twiddled, typename V, typename T>
inline void butterfly4(const Cx<V>* x, int64_t xs, Cx<V>* y, int64_t ys, const Cx<T>* w,
                       int64_t ws) {
  Cx<V> a = x[0], b = x[xs], c = x[2 * xs], d = x[3 * xs];
  dft4<fwd>(a, b, c, d);
  y[0] = a;
  put<fwd, twiddled>(y + ys, b, w, 1, ws);
  put<fwd, twiddled>(y + 2 * ys, c, w, 2, ws);
  put<fwd, twiddled>(y + 3 * ys, d, w, 3, ws);
}

// Two 4-point DFTs (even and odd inputs), joined by the roots of order 8.
template <bool fwd, bool twiddled, typename V, typename T>
inline void butterfly8(const Cx<V>* x, int64_t xs, Cx<V>* y, int64_t ys, const Cx<T>* w,
                       int64_t ws) {
  Cx<V> a0 = x[0], a1 = x[2 * xs], a2 = x[4 * xs], a3 = x[6 * xs];
  Cx<V> b0 = x[xs], b1 = x[3 * xs], b2 = x[5 * xs], b3 = x[7 * xs];
  dft4<fwd>(a0, a1, a2, a3);
  dft4<fwd>(b0, b1, b2, b3);
  b1 = eighth<fwd, V, T>(b1);
  b2 = quarter<fwd>(b2);
  b3 = quarter<fwd>(eighth<fwd, V, T>(b3));
  y[0] = a0 + b0;
  put<fwd, twiddled>(y + ys, a1 + b1, w, 1, ws);
  put<fwd, twiddled>(y + 2 * ys, a2 + b2, w, 2, ws);
  put<fwd, twiddled>(y + 3 * ys, a3 + b3, w, 3, ws);
  put<fwd, twiddled>(y + 4 * ys, a0 - b0, w, 4, ws);
  put<fwd, twiddled>(y + 5 * ys, a1 - b1, w, 5, ws);
  put<fwd, twiddled>(y + 6 * ys, a2 - b2, w, 6, ws);
  put<fwd, twiddled>(y + 7 * ys, a3 - b3, w, 7, ws);
}

// The largest odd radix a plan does directly (a larger prime factor takes
// Bluestein's algorithm): it sizes the butterfly's temporaries.
constexpr int kMaxOddRadix = 127;

// An odd prime radix p: its inputs paired (x_j, x_{p-j}), with s_j their sum
// and d_j their difference, y_m = x_0 + sum_j cos(2 pi jm/p) s_j -+ i sum_j
// sin(2 pi jm/p) d_j and y_{p-m} the same with the second sum's sign flipped,
// half the products of a plain DFT. cs[r] = cos(2 pi r/p), sn[r] = sin(2 pi r/p).
// P > 0: p = P known at compile time (3, 5, 7, 11, 13), the loops unrolled and
// the temporaries in registers; P = 0: any p up to kMaxOddRadix.
template <bool fwd, bool twiddled, int P, typename V, typename T>
inline void butterfly_odd(const Cx<V>* x, int64_t xs, Cx<V>* y, int64_t ys, const Cx<T>* w,
                          int64_t ws, int p_runtime, const T* cs, const T* sn) {
  constexpr int kSize = P > 0 ? (P - 1) / 2 : (kMaxOddRadix - 1) / 2;
  const int p = P > 0 ? P : p_runtime, h = (p - 1) / 2;
  Cx<V> s[kSize], d[kSize];
  const Cx<V> x0 = x[0];
  Cx<V> y0 = x0;
  for (int j = 1; j <= h; ++j) {
    const Cx<V> a = x[j * xs], b = x[(p - j) * xs];
    s[j - 1] = a + b;
    d[j - 1] = a - b;
    y0 = y0 + s[j - 1];
  }
  y[0] = y0;
  for (int m = 1; m <= h; ++m) {
    Cx<V> a = x0;
    V br{}, bi{};
    int r = 0;  // j * m mod p
    for (int j = 1; j <= h; ++j) {
      r += m;
      if (r >= p) r -= p;
      a.r += cs[r] * s[j - 1].r;
      a.i += cs[r] * s[j - 1].i;
      br += sn[r] * d[j - 1].r;
      bi += sn[r] * d[j - 1].i;
    }
    // fwd: y_m = a - i b, y_{p-m} = a + i b; backward the other way round.
    const Cx<V> minus{a.r + bi, a.i - br}, plus{a.r - bi, a.i + br};
    put<fwd, twiddled>(y + m * ys, fwd ? minus : plus, w, m, ws);
    put<fwd, twiddled>(y + (p - m) * ys, fwd ? plus : minus, w, p - m, ws);
  }
}

// ---- complex plans ---------------------------------------------------------------------------

// One pass of a mixed-radix transform (FFTPACK's layout, decimation in
// frequency, Stockham's autosort: no bit reversal). Its input is l1 blocks of
// radix * ido values, cc[i + ido * (j + radix * k)]; each block splits into
// radix transforms of length ido, written ch[i + ido * (k + l1 * m)] after their
// twiddles w_{radix ido}^{m i}. The next pass has l1 * radix blocks of length
// ido; the last (ido 1) leaves the transform in natural order.
template <typename T>
struct Pass {
  int radix;
  int64_t l1, ido;
  size_t tw;  // offset of the (radix - 1) x (ido - 1) twiddles in the plan's table
  size_t cs;  // odd radices: offset of cos(2 pi r/radix), then sin, r < radix
};

// A complex transform of length n, either direction: passes over n's factors
// when they are small, else Bluestein's algorithm (a convolution of length
// M >= 2n - 1 computed by transforms of an 11-smooth length M); a line alone
// (a scalar exec) of 1024 points or more by the four-step over two shorter
// plans. Immutable once built, so threads share it.
template <typename T>
class ComplexPlan {
 public:
  using Shared = std::shared_ptr<const ComplexPlan<T>>;
  using Exact = std::shared_ptr<const ComplexPlan<double>>;
  // get_plan(m): the plan of another length m (the cache's), for Bluestein's
  // convolution and the four-step's parts; get_exact(m) the same in double,
  // for the Bluestein kernel's transform.
  ComplexPlan(int64_t n, Shared (*get_plan)(int64_t), Exact (*get_exact)(int64_t));

  int64_t n() const { return n_; }
  bool bluestein() const { return conv_ != nullptr; }
  // Whether one line (a scalar exec) is transformed by the four-step (its own,
  // or its Bluestein convolution's).
  bool splits() const { return four_ || (conv_ && conv_->splits()); }
  // Elements of scratch exec() needs beside the data.
  int64_t scratch_size() const { return conv_ ? conv_->n() + conv_->scratch_size() : n_; }
  // Bytes held, for the cache's bound.
  size_t bytes() const {
    return sizeof(*this) +
           (tw_.size() + chirp_.size() + kernel_.size() +
            (four_ ? four_->group.size() + four_->lane.size() * Simd<T>::L : 0)) *
               sizeof(Cx<T>) +
           consts_.size() * sizeof(T);
  }

  // Transforms data[0..n) (scratch: scratch_size() elements); returns where the
  // result is, data or scratch.
  template <bool fwd, typename V>
  Cx<V>* exec(Cx<V>* data, Cx<V>* scratch) const {
    if (conv_) return bluestein<fwd>(data, scratch);
    if constexpr (std::is_same_v<V, T>)
      if (four_) return four_step<fwd>(data, scratch);
    Cx<V>*in = data, *out = scratch;
    for (const Pass<T>& p : passes_) {
      run_pass<fwd>(p, in, out);
      std::swap(in, out);
    }
    return in;
  }

  // Prime factors of n in pass order (tests, and the choice of Bluestein).
  static std::vector<int64_t> factors(int64_t n);

 private:
  // Bailey's four-step, for one line of a length that splits as n1 x n2 with
  // both parts at least a vector's lanes: the line as an n1 x n2 matrix
  // (entry j = n2 j1 + j2), its n2 columns transformed as lines L at a time
  // (n1 points), multiplied by w_n^{j2 k1}, then its n1 rows (n2 points), and
  // X[k1 + n1 k2] read from row k1. A single line is then transformed with
  // vectors, by all threads, each part's buffers in cache; the passes alone
  // did it with scalars, on one thread, streaming the whole line per pass.
  // Its twiddles w_n^{j2 k1}, for the group of columns j2 = g L + l, are
  // lane[k1] (lanes w_n^{l k1}) times group[k1 G + g] (w_n^{g L k1}): tables of
  // n/L + n1 L entries, where one of all n had cost as much memory as the line
  // and a read of it per transform.
  struct FourStep {
    using V = typename Simd<T>::type;
    int64_t n1, n2, G;
    Shared cols, rows;           // of n1 and n2
    std::vector<Cx<V>> lane;     // n1
    std::vector<Cx<T>> group;    // n1 x G, G = ceil(n2 / L)
  };

  template <bool fwd, typename V>
  void run_pass(const Pass<T>& p, const Cx<V>* cc, Cx<V>* ch) const;
  template <bool fwd, typename V>
  Cx<V>* bluestein(Cx<V>* data, Cx<V>* scratch) const;
  template <bool fwd>
  Cx<T>* four_step(Cx<T>* data, Cx<T>* scratch) const;

  int64_t n_;
  std::vector<Pass<T>> passes_;
  std::vector<Cx<T>> tw_;
  std::vector<T> consts_;
  // Bluestein: the chirp exp(-i pi k^2/n), k < n, and the transform of the
  // convolution's kernel (the conjugate chirp, both ways round), divided by M.
  Shared conv_;
  std::vector<Cx<T>> chirp_, kernel_;
  std::unique_ptr<const FourStep> four_;
};

// The least length a single line is transformed by the four-step at: one
// line of 2048 or 3000 complex64 points took 15 and 24 us by the passes on
// scalars, 11 and 14 by the four-step; at 1024 it's even, and below the
// call's overhead dominates.
constexpr int64_t kFourStepMin = 1024;

// Cost estimates of pocketfft (its cost_guess): n times the sum of n's prime
// factors, those beyond the hard-coded butterflies weighted up.
inline double fft_cost(int64_t n) {
  double sum = 0;
  int64_t m = n;
  for (int64_t p = 2; p * p <= m; p += (p == 2 ? 1 : 2))
    while (m % p == 0) sum += p <= 13 ? double(p) : 1.1 * double(p), m /= p;
  if (m > 1) sum += m <= 13 ? double(m) : 1.1 * double(m);
  return sum * double(n);
}

// The least m >= n whose prime factors are 2, 3, 5, 7 and 11 (Bluestein's
// convolution length: a transform of it has hard-coded butterflies only).
inline int64_t smooth_length(int64_t n) {
  for (int64_t m = std::max<int64_t>(n, 1);; ++m) {
    int64_t r = m;
    for (int64_t p : {2, 3, 5, 7, 11})
      while (r % p == 0) r /= p;
    if (r == 1) return m;
  }
}

template <typename T>
std::vector<int64_t> ComplexPlan<T>::factors(int64_t n) {
  std::vector<int64_t> f;
  int twos = 0;
  while (n % 2 == 0 && n > 1) n /= 2, ++twos;
  // Powers of two in 8s (fewest passes over memory), the rest a 4 or a 2;
  // 2^(3k+1) as 4 x 4 x 8^(k-1) rather than 2 x 8^k: a radix-2 pass does the
  // least arithmetic per load.
  int eights = twos / 3, rest = twos % 3;
  if (rest == 1 && eights > 0) --eights, f.push_back(4), f.push_back(4);
  else if (rest == 1) f.push_back(2);
  else if (rest == 2) f.push_back(4);
  f.insert(f.end(), size_t(eights), 8);
  for (int64_t p = 3; p * p <= n; p += 2)
    while (n % p == 0) f.push_back(p), n /= p;
  if (n > 1) f.push_back(n);
  return f;
}

template <typename T>
ComplexPlan<T>::ComplexPlan(int64_t n, Shared (*get_plan)(int64_t),
                            Exact (*get_exact)(int64_t))
    : n_(n) {
  const std::vector<int64_t> f = factors(n);
  const int64_t largest = f.empty() ? 1 : *std::max_element(f.begin(), f.end());
  bool direct = largest <= 13;
  if (!direct && largest <= kMaxOddRadix) {
    // pocketfft's rule: direct below 50 or when the large factor is at most
    // sqrt(n); else whichever costs less, Bluestein's two transforms of M
    // weighted by 1.5 for their pointwise passes.
    direct = n < 50 || largest * largest <= n ||
             fft_cost(n) <= 1.5 * 2 * fft_cost(smooth_length(2 * n - 1));
  }
  if (direct) {
    const Roots root(n);
    int64_t l1 = 1;
    for (int64_t r : f) {
      const int64_t ido = n / (l1 * r);
      Pass<T> p{int(r), l1, ido, tw_.size(), consts_.size()};
      // w_{r ido}^{m i} = w_n^{m i l1}, m < r, i < ido.
      for (int64_t m = 1; m < r; ++m)
        for (int64_t i = 1; i < ido; ++i) {
          const std::complex<double> w = root(m * i * l1);
          tw_.push_back({T(w.real()), T(w.imag())});
        }
      if (r % 2 == 1) {
        for (int64_t k = 0; k < r; ++k) consts_.push_back(T(unit_root(k, r).real()));
        for (int64_t k = 0; k < r; ++k) consts_.push_back(T(-unit_root(k, r).imag()));
      }
      passes_.push_back(p);
      l1 *= r;
    }
    if (n >= kFourStepMin) {
      // n1 x n2 as near square as n's factors allow, the larger first.
      std::vector<int64_t> desc = f;
      std::sort(desc.rbegin(), desc.rend());
      int64_t n1 = 1, n2 = 1;
      for (int64_t r : desc) (n1 <= n2 ? n1 : n2) *= r;
      if (std::min(n1, n2) >= Simd<T>::L) {
        constexpr int L = Simd<T>::L;
        auto four = std::make_unique<FourStep>();
        four->n1 = n1, four->n2 = n2, four->G = (n2 + L - 1) / L;
        four->cols = get_plan(n1);
        four->rows = get_plan(n2);
        four->lane.resize(size_t(n1));
        four->group.resize(size_t(n1 * four->G));
        for (int64_t k1 = 0; k1 < n1; ++k1) {
          for (int l = 0; l < L; ++l) {
            const std::complex<double> w = root(l * k1);
            four->lane[size_t(k1)].r[l] = T(w.real());
            four->lane[size_t(k1)].i[l] = T(w.imag());
          }
          for (int64_t g = 0; g < four->G; ++g) {
            const std::complex<double> w = root(g * L * k1);
            four->group[size_t(k1 * four->G + g)] = {T(w.real()), T(w.imag())};
          }
        }
        four_ = std::move(four);
      }
    }
    return;
  }
  // Bluestein: with c_k = exp(-i pi k^2/n) and jk = (j^2 + k^2 - (k - j)^2)/2,
  // X_k = c_k sum_j (x_j c_j) conj(c_{k-j}): a convolution with conj(c), done
  // as transforms of length M >= 2n - 1. (Backward: conjugate chirps, and the
  // kernel's transform conjugated, as the kernel is even.)
  const int64_t M = smooth_length(2 * n - 1);
  conv_ = get_plan(M);
  chirp_.resize(size_t(n));
  std::vector<Cx<double>> ker(size_t(M), Cx<double>{0.0, 0.0});
  const Roots root(2 * n);
  int64_t sq = 0;  // k^2 mod 2n, stepped: (k + 1)^2 = k^2 + 2k + 1
  for (int64_t k = 0; k < n; ++k) {
    const std::complex<double> c = root(sq);  // exp(-2 pi i k^2 / 2n)
    chirp_[size_t(k)] = {T(c.real()), T(c.imag())};
    ker[size_t(k)] = ker[size_t((M - k) % M)] = {c.real() / double(M), -c.imag() / double(M)};
    sq = (sq + 2 * k + 1) % (2 * n);
  }
  // The kernel's transform in double, whatever T, rounded once.
  const Exact exact = get_exact(M);
  std::vector<Cx<double>> scratch(static_cast<size_t>(exact->scratch_size()));
  const Cx<double>* K = exact->template exec<true>(ker.data(), scratch.data());
  kernel_.resize(size_t(M));
  for (int64_t k = 0; k < M; ++k) kernel_[size_t(k)] = {T(K[k].r), T(K[k].i)};
}

template <typename T>
template <bool fwd, typename V>
void ComplexPlan<T>::run_pass(const Pass<T>& p, const Cx<V>* cc, Cx<V>* ch) const {
  const int64_t l1 = p.l1, ido = p.ido, r = p.radix, ys = l1 * ido, ws = ido - 1;
  const Cx<T>* tw = tw_.data() + p.tw;
  const T* cs = consts_.data() + p.cs;
  const T* sn = cs + r;
  // Every block k: its first column needs no twiddles.
  auto loop = [&](auto butterfly) {
    for (int64_t k = 0; k < l1; ++k) {
      const Cx<V>* x = cc + k * r * ido;
      Cx<V>* y = ch + k * ido;
      butterfly(std::false_type{}, x, y, tw);
      for (int64_t i = 1; i < ido; ++i) butterfly(std::true_type{}, x + i, y + i, tw + (i - 1));
    }
  };
#define IGNIS_FFT_PASS(call)                                                        \
  loop([&](auto twiddled, const Cx<V>* x, Cx<V>* y, const Cx<T>* w) {               \
    constexpr bool t = decltype(twiddled)::value;                                   \
    call;                                                                           \
  })
  switch (r) {
    case 2: IGNIS_FFT_PASS((butterfly2<fwd, t>(x, ido, y, ys, w, ws))); break;
    case 4: IGNIS_FFT_PASS((butterfly4<fwd, t>(x, ido, y, ys, w, ws))); break;
    case 8: IGNIS_FFT_PASS((butterfly8<fwd, t>(x, ido, y, ys, w, ws))); break;
    case 3: IGNIS_FFT_PASS((butterfly_odd<fwd, t, 3>(x, ido, y, ys, w, ws, 3, cs, sn))); break;
    case 5: IGNIS_FFT_PASS((butterfly_odd<fwd, t, 5>(x, ido, y, ys, w, ws, 5, cs, sn))); break;
    case 7: IGNIS_FFT_PASS((butterfly_odd<fwd, t, 7>(x, ido, y, ys, w, ws, 7, cs, sn))); break;
    case 11: IGNIS_FFT_PASS((butterfly_odd<fwd, t, 11>(x, ido, y, ys, w, ws, 11, cs, sn))); break;
    case 13: IGNIS_FFT_PASS((butterfly_odd<fwd, t, 13>(x, ido, y, ys, w, ws, 13, cs, sn))); break;
    default:
      IGNIS_FFT_PASS((butterfly_odd<fwd, t, 0>(x, ido, y, ys, w, ws, int(r), cs, sn)));
  }
#undef IGNIS_FFT_PASS
}

// The four-step's columns, then rows, each a loop over groups of L lines
// shared among threads. Lines are pairs (re, im) in a row: groups of L
// adjacent columns (or output entries) move as vectors of pairs, a short
// group lane by lane.
template <typename T>
template <bool fwd>
Cx<T>* ComplexPlan<T>::four_step(Cx<T>* data, Cx<T>* scratch) const {
  using V = typename Simd<T>::type;
  constexpr int L = Simd<T>::L;
  using S = Shuffle<V, T>;
  const FourStep& f = *four_;
  const int64_t n1 = f.n1, n2 = f.n2;
  T* x = &data[0].r;
  T* y = &scratch[0].r;
  // The L pairs in a row at p as a vector element (lanes past `count` 0), and back.
  auto load = [&](const T* p, int count, Cx<V>& e) {
    if (count == L) return S::load_pairs(p, e.r, e.i);
    e = {V{}, V{}};
    for (int l = 0; l < count; ++l) e.r[l] = p[2 * l], e.i[l] = p[2 * l + 1];
  };
  auto store = [&](T* p, int count, const Cx<V>& e) {
    if (count == L) return S::store_pairs(p, e.r, e.i);
    for (int l = 0; l < count; ++l) p[2 * l] = e.r[l], p[2 * l + 1] = e.i[l];
  };
  // body(first line, count, buffer, scratch) over groups of `lines` lines.
  auto groups = [&](int64_t lines, int64_t len, const ComplexPlan& plan, auto body) {
    const int64_t count = (lines + L - 1) / L;
    int64_t log_len = 1;
    while ((int64_t(1) << log_len) < n_) ++log_len;
    const int nt = count < 2 ? 1 : threads_for(n_ * log_len);
#pragma omp parallel num_threads(nt)
    {
      Workspace<1> ws(size_t(len + plan.scratch_size()) * sizeof(Cx<V>));
      Cx<V>* buf = static_cast<Cx<V>*>(ws.data());
#pragma omp for schedule(static)
      for (int64_t g = 0; g < count; ++g)
        body(g * L, int(std::min<int64_t>(L, lines - g * L)), buf, buf + len);
    }
  };
  // Columns j2 (entry j1 at n2 j1 + j2) into scratch, times the twiddles.
  groups(n2, n1, *f.cols, [&](int64_t j0, int count, Cx<V>* a, Cx<V>* b) {
    for (int64_t j1 = 0; j1 < n1; ++j1) load(x + 2 * (n2 * j1 + j0), count, a[j1]);
    const Cx<V>* c = f.cols->template exec<fwd>(a, b);
    const int64_t g = j0 / L;
    for (int64_t k1 = 0; k1 < n1; ++k1) {
      const Cx<V> w = mul<true>(f.lane[size_t(k1)], f.group[size_t(k1 * f.G + g)]);
      store(y + 2 * (k1 * n2 + j0), count, mul<fwd>(c[k1], w));
    }
  });
  // Rows k1 (contiguous) into data, entry k2 of row k1 to k1 + n1 k2.
  groups(n1, n2, *f.rows, [&](int64_t k0, int count, Cx<V>* a, Cx<V>* b) {
    const T* rows[L];
    for (int l = 0; l < L; ++l) rows[l] = y + 2 * (k0 + (l < count ? l : 0)) * n2;
    load_pair_lines(a, rows, n2);
    const Cx<V>* c = f.rows->template exec<fwd>(a, b);
    for (int64_t k2 = 0; k2 < n2; ++k2) store(x + 2 * (k0 + n1 * k2), count, c[k2]);
  });
  return data;
}

// Bluestein: a = x c, zero-padded to M; A = FFT(a) K; conv = IFFT(A) (K holds
// the 1/M); X = conv c.
template <typename T>
template <bool fwd, typename V>
Cx<V>* ComplexPlan<T>::bluestein(Cx<V>* data, Cx<V>* scratch) const {
  const int64_t n = n_, M = conv_->n();
  Cx<V>* a = scratch;
  Cx<V>* inner = scratch + M;
  for (int64_t k = 0; k < n; ++k) a[k] = mul<fwd>(data[k], chirp_[size_t(k)]);
  std::fill(a + n, a + M, Cx<V>{V{}, V{}});
  Cx<V>* A = conv_->template exec<true>(a, inner);
  Cx<V>* other = A == a ? inner : a;
  for (int64_t k = 0; k < M; ++k) A[k] = mul<fwd>(A[k], kernel_[size_t(k)]);
  const Cx<V>* conv = conv_->template exec<false>(A, other);
  for (int64_t k = 0; k < n; ++k) data[k] = mul<fwd>(conv[k], chirp_[size_t(k)]);
  return data;
}

// ---- real plans ------------------------------------------------------------------------------

// A real transform of length n: r2c (forward, the first n/2 + 1 outputs) and
// c2r (backward from those, as torch's: the imaginary parts of the zero and,
// for even n, the n/2 frequencies are ignored). Its data are "packed": the n
// reals two to a complex element, x_{2j} + i x_{2j+1}.
//  - even n: the packed data are a complex signal z of length h = n/2, and
//    with Z its transform, X_k = E_k + w^k O_k, where E = (Z_k + conj Z_{h-k})/2
//    and O = (Z_k - conj Z_{h-k})/2i are the transforms of the even and odd
//    reals and w = exp(-2 pi i/n): half the work of a complex transform of n.
//    c2r inverts the steps.
//  - odd n: a complex transform of n (imaginary parts zero), simple and rare.
template <typename T>
class RealPlan {
 public:
  explicit RealPlan(int64_t n, std::shared_ptr<const ComplexPlan<T>> cplan)
      : n_(n), cplan_(std::move(cplan)) {
    if (n % 2 == 0) {
      const Roots root(n);
      for (int64_t k = 0; k <= n / 4; ++k) {
        const std::complex<double> w = root(k);
        tw_.push_back({T(w.real()), T(w.imag())});
      }
    }
  }

  int64_t n() const { return n_; }
  bool splits() const { return cplan_->splits(); }
  // The length of the complex transform it runs: n/2 or n.
  static int64_t complex_length(int64_t n) { return n % 2 == 0 ? n / 2 : n; }
  // Elements of the data and scratch buffers r2c and c2r take.
  int64_t data_size() const { return n_ % 2 == 0 ? n_ / 2 + 1 : n_; }
  int64_t scratch_size() const { return std::max(data_size(), cplan_->scratch_size()); }
  size_t bytes() const { return sizeof(*this) + tw_.size() * sizeof(Cx<T>); }

  // data holds the n reals packed; returns where X_0 .. X_{n/2} are.
  template <typename V>
  Cx<V>* r2c(Cx<V>* data, Cx<V>* scratch) const;
  // data holds X_0 .. X_{n/2}; returns where the n reals of the (unnormalized)
  // backward transform are, packed.
  template <typename V>
  Cx<V>* c2r(Cx<V>* data, Cx<V>* scratch) const;

 private:
  int64_t n_;
  std::shared_ptr<const ComplexPlan<T>> cplan_;  // of complex_length(n)
  std::vector<Cx<T>> tw_;                        // even n: w^k, k <= n/4
};

template <typename T>
template <typename V>
Cx<V>* RealPlan<T>::r2c(Cx<V>* data, Cx<V>* scratch) const {
  const int64_t n = n_;
  if (n % 2 == 1) {
    // Unpacked in place, from the end: x_j goes to j, from j/2 <= j.
    for (int64_t j = n - 1; j >= 0; --j) {
      const V v = j % 2 == 0 ? data[j / 2].r : data[j / 2].i;
      data[j] = {v, V{}};
    }
    return cplan_->template exec<true>(data, scratch);
  }
  const int64_t h = n / 2;
  Cx<V>* Z = cplan_->template exec<true>(data, scratch);
  const Cx<V> z0 = Z[0];
  Z[0] = {z0.r + z0.i, V{}};
  Z[h] = {z0.r - z0.i, V{}};
  const T half = T(0.5);
  // X_k and X_{h-k} from Z_k and Z_{h-k}: X_{h-k} = conj(E_k - w^k O_k).
  for (int64_t k = 1, j = h - 1; k <= j; ++k, --j) {
    const Cx<V> a = Z[k], b = Z[j];
    const Cx<V> e{(a.r + b.r) * half, (a.i - b.i) * half};
    const Cx<V> o{(a.i + b.i) * half, (b.r - a.r) * half};
    const Cx<V> wo = mul<true>(o, tw_[size_t(k)]);
    Z[k] = e + wo;
    Z[j] = {e.r - wo.r, wo.i - e.i};
  }
  return Z;
}

template <typename T>
template <typename V>
Cx<V>* RealPlan<T>::c2r(Cx<V>* data, Cx<V>* scratch) const {
  const int64_t n = n_;
  if (n % 2 == 1) {
    // The Hermitian completion, transformed; the real parts packed in place.
    for (int64_t k = 1; k <= n / 2; ++k) data[n - k] = {data[k].r, -data[k].i};
    Cx<V>* y = cplan_->template exec<false>(data, scratch);
    for (int64_t j = 0; j < (n + 1) / 2; ++j)
      y[j] = {y[2 * j].r, 2 * j + 1 < n ? y[2 * j + 1].r : V{}};
    return y;
  }
  // Z_k = E_k + i O_k with E_k = X_k + conj X_{h-k} and O_k = (X_k - conj X_{h-k})
  // conj(w^k) (twice the transforms of the even and odd reals; the backward
  // transform of length h then gives n times the signal, the unnormalized c2r).
  const int64_t h = n / 2;
  const V x0 = data[0].r, xh = data[h].r;
  data[0] = {x0 + xh, x0 - xh};
  for (int64_t k = 1, j = h - 1; k <= j; ++k, --j) {
    const Cx<V> a = data[k], b = data[j];
    const Cx<V> e{a.r + b.r, a.i - b.i};
    const Cx<V> o = mul<false>(Cx<V>{a.r - b.r, a.i + b.i}, tw_[size_t(k)]);
    data[k] = {e.r - o.i, e.i + o.r};
    data[j] = {e.r + o.i, o.r - e.i};
  }
  return cplan_->template exec<false>(data, scratch);
}

}  // namespace ignis::cpu::fft

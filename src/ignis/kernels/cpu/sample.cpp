#include "ignis/kernels/cpu/sample.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ignis/kernels/cpu/parallel.h"

namespace ignis::cpu {

namespace {

// 64 random bits of counter `ctr`; and a double in (0, 1], never 0 (its log
// is taken).
uint64_t bits64(uint64_t seed, uint64_t ctr) {
  uint32_t r[4];
  Philox::block(seed, ctr, r);
  return (uint64_t(r[0]) << 32) | r[1];
}
double open_unit(uint64_t seed, uint64_t ctr) {
  return double((bits64(seed, ctr) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

template <typename T>
void write_all(const Tensor& t, const std::vector<int64_t>& v) {
  T* p = t.data<T>();
  const int64_t st = t.strides()[0];
  for (size_t i = 0; i < v.size(); ++i) p[int64_t(i) * st] = static_cast<T>(v[i]);
}

}  // namespace

void fill_randperm(const Tensor& t, Generator& g) {
  const int64_t n = t.numel();
  if (n == 0) return;
  auto [seed, off] = g.reserve(static_cast<uint64_t>(n));
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t(0));
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = int64_t(bits64(seed, off + uint64_t(i)) % uint64_t(i + 1));
    std::swap(perm[size_t(i)], perm[size_t(j)]);
  }
  IGNIS_DISPATCH_NUMERIC(t.dtype(), "randperm", [&] { write_all<scalar_t>(t, perm); });
}

void multinomial_out(const Tensor& out, const Tensor& probs, int64_t k, bool replacement,
                     Generator& g) {
  const bool one_row = probs.dim() == 1;
  const int64_t rows = one_row ? 1 : probs.sizes()[0];
  const int64_t n = probs.sizes()[probs.dim() - 1];
  const int64_t ps_row = one_row ? 0 : probs.strides()[0], ps = probs.strides()[probs.dim() - 1];
  const int64_t os_row = one_row ? 0 : out.strides()[0], os = out.strides()[out.dim() - 1];
  // Weights in double, row by row; the checks first, so that nothing is drawn
  // from a bad distribution.
  std::vector<double> w(static_cast<size_t>(rows * n));
  IGNIS_DISPATCH_FLOAT(probs.dtype(), "multinomial", [&] {
    using T = opmath_t<scalar_t>;
    const scalar_t* p = probs.data<scalar_t>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j)
        w[size_t(r * n + j)] = static_cast<double>(static_cast<T>(p[r * ps_row + j * ps]));
  });
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double v = w[size_t(r * n + j)];
      IGNIS_CHECK(std::isfinite(v) && v >= 0,
                  "probability tensor contains either `inf`, `nan` or element < 0");
      sum += v;
    }
    IGNIS_CHECK(sum > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
  }
  const int64_t per_row = replacement ? k : n;
  auto [seed, off] = g.reserve(static_cast<uint64_t>(rows * per_row));
  int64_t* o = out.data<int64_t>();
  const int nt = threads_for(rows * per_row * 16);
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    std::vector<double> cdf(static_cast<size_t>(n));
    std::vector<int64_t> order(static_cast<size_t>(n));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const double* wr = w.data() + r * n;
      const uint64_t base = off + uint64_t(r * per_row);
      int64_t* orow = o + r * os_row;
      if (replacement) {
        // Inverse CDF: the first category whose cumulative weight exceeds u.
        std::partial_sum(wr, wr + n, cdf.begin());
        const double total = cdf[size_t(n - 1)];
        for (int64_t s = 0; s < k; ++s) {
          const double u = (1.0 - open_unit(seed, base + uint64_t(s))) * total;  // [0, total)
          int64_t j = int64_t(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
          j = std::min(j, n - 1);
          while (wr[j] == 0 && j > 0) --j;  // never a zero-weight category at the top edge
          orow[s * os] = j;
        }
      } else {
        // Each category gets the key E_j / w_j with E_j ~ Exp(1); the k
        // smallest keys are a draw without replacement (the exponential
        // races of weighted sampling). Zero weights come last, by index, as
        // torch's CPU kernel returns them once the others are used up.
        std::vector<double>& key = cdf;
        for (int64_t j = 0; j < n; ++j)
          key[size_t(j)] = wr[j] > 0 ? -std::log(open_unit(seed, base + uint64_t(j))) / wr[j]
                                     : INFINITY;
        std::iota(order.begin(), order.end(), int64_t(0));
        // Ties (zero weights' infinite keys) by index, as the GPU's sort.
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          return key[size_t(a)] < key[size_t(b)] || (key[size_t(a)] == key[size_t(b)] && a < b);
        });
        for (int64_t s = 0; s < k; ++s) orow[s * os] = order[size_t(s)];
      }
    }
  }
}

}  // namespace ignis::cpu

#include "ignis/kernels/cpu/sort.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "ignis/kernels/cpu/parallel.h"

namespace ignis::cpu {

namespace {

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  else return false;
}

// Offsets (in elements) of the first element of every slice along `dim`.
std::vector<int64_t> slice_offsets(const Tensor& t, int64_t dim) {
  int64_t count = 1;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (d != dim) count *= t.sizes()[d];
  std::vector<int64_t> offs(static_cast<size_t>(count), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, off = 0;
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (d == dim) continue;
      off += (rest % t.sizes()[d]) * t.strides()[d];
      rest /= t.sizes()[d];
    }
    offs[size_t(i)] = off;
  }
  return offs;
}

template <typename S>
void sort_typed(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                int64_t k, bool descending) {
  using T = opmath_t<S>;
  const bool scalar = in.dim() == 0;
  const int64_t n = scalar ? 1 : in.sizes()[dim];
  const int64_t st_in = scalar ? 0 : in.strides()[dim];
  const int64_t st_v = scalar ? 0 : values.strides()[dim];
  const int64_t st_i = scalar ? 0 : indices.strides()[dim];
  const std::vector<int64_t> in_off = slice_offsets(in, dim), v_off = slice_offsets(values, dim),
                             i_off = slice_offsets(indices, dim);
  const S* src = in.data<S>();
  S* vp = values.data<S>();
  int64_t* ip = indices.data<int64_t>();
  const int64_t slices = static_cast<int64_t>(in_off.size());
  const int nt = threads_for(in.numel() * 8);
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::vector<T> key(static_cast<size_t>(n));
#pragma omp for schedule(static)
    for (int64_t s = 0; s < slices; ++s) {
      const S* x = src + in_off[size_t(s)];
      for (int64_t j = 0; j < n; ++j) key[size_t(j)] = static_cast<T>(x[j * st_in]);
      std::iota(order.begin(), order.end(), int64_t(0));
      // "a before b": NaN above everything; ties by position (stability).
      auto before = [&](int64_t a, int64_t b) {
        const T ka = key[size_t(a)], kb = key[size_t(b)];
        const bool na = is_nan(ka), nb = is_nan(kb);
        if (na || nb) {
          if (na && nb) return a < b;
          return descending ? na : nb;
        }
        if (ka != kb) return descending ? kb < ka : ka < kb;
        return a < b;
      };
      if (k < n) std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      else std::sort(order.begin(), order.end(), before);
      S* v = vp + v_off[size_t(s)];
      int64_t* ix = ip + i_off[size_t(s)];
      for (int64_t j = 0; j < k; ++j) {
        v[j * st_v] = x[order[size_t(j)] * st_in];
        ix[j * st_i] = order[size_t(j)];
      }
    }
  }
}

}  // namespace

void sort_out(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
              int64_t k, bool descending) {
  if (values.numel() == 0) return;
  IGNIS_DISPATCH_ALL(in.dtype(), "sort",
                     [&] { sort_typed<scalar_t>(values, indices, in, dim, k, descending); });
}

}  // namespace ignis::cpu

// View decompositions, onto the core views (view, permute, expand,
// squeeze.dims, unsqueeze, slice, select, as_strided). Each returns a view
// with exactly the geometry the op's own kernel gives (Args checks the
// strides), so aliasing is unchanged.
#include <algorithm>

#include "ignis/ops/decomp/common.h"

namespace ignis::decomp {

namespace {
std::vector<int64_t> identity_perm(int64_t nd) {
  std::vector<int64_t> p(static_cast<size_t>(nd));
  for (int64_t d = 0; d < nd; ++d) p[static_cast<size_t>(d)] = d;
  return p;
}

// The slices [b, b + size) of dim covering it (one empty slice when it is
// empty), as split and chunk cut it.
std::vector<Tensor> even_slices(const Tensor& x, int64_t dim, int64_t size) {
  const int64_t n = x.size(dim);
  std::vector<Tensor> out;
  if (n == 0 || size == 0) return {slice(x, dim, 0, 0)};
  for (int64_t b = 0; b < n; b += std::min(size, n - b))
    out.push_back(slice(x, dim, b, b + std::min(size, n - b)));
  return out;
}
}  // namespace

void transpose(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  std::vector<int64_t> perm = identity_perm(x.dim());
  if (x.dim() > 0)
    std::swap(perm[wrap_dim(a.int_arg(1), x.dim())], perm[wrap_dim(a.int_arg(2), x.dim())]);
  a.ret(permute(x, perm));
}

// t: transpose of a matrix; a 0-d or 1-d tensor is its own transpose.
void t(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  a.ret(permute(x, x.dim() < 2 ? identity_perm(x.dim()) : std::vector<int64_t>{1, 0}));
}

void expand_as(const OpHandle& o, Stack& s) {
  Args a(o, s);
  a.ret(OpRef("expand").tensor(a.tensor(0), a.tensor(1).sizes().vec()));
}

// squeeze() and squeeze.dim(d): squeeze.dims over every dim or [d].
void squeeze(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  a.ret(squeeze_dims(x, a.overload() == "dim" ? std::vector<int64_t>{a.int_arg(1)}
                                              : identity_perm(x.dim())));
}

// narrow(dim, start, length) = slice(dim, start, start + length); the meta
// run has already refused what slice would clamp silently.
void narrow(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const int64_t dim = wrap_dim(a.int_arg(1), x.dim());
  int64_t start = a.int_arg(2);
  if (start < 0) start += x.size(dim);
  a.ret(slice(x, dim, start, start + a.int_arg(3)));
}

// split.Tensor(split_size) and split.sizes(split_sizes): consecutive slices.
void split(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const int64_t dim = wrap_dim(a.int_arg(2), x.dim());
  if (a[1].is_int()) return a.ret_list(even_slices(x, dim, a.int_arg(1)));
  std::vector<Tensor> out;
  int64_t b = 0;
  for (int64_t len : a.ints(1)) {
    out.push_back(slice(x, dim, b, b + len));
    b += len;
  }
  a.ret_list(std::move(out));
}

// chunk(chunks): slices of ceil(n / chunks); an empty dim gives `chunks`
// empty slices.
void chunk(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const int64_t chunks = a.int_arg(1), dim = wrap_dim(a.int_arg(2), x.dim());
  const int64_t n = x.size(dim);
  if (n == 0) return a.ret_list(std::vector<Tensor>(chunks, slice(x, dim, 0, 0)));
  a.ret_list(even_slices(x, dim, (n - 1) / chunks + 1));
}

// diagonal(offset, dim1, dim2): the other dims, then the diagonal, whose
// stride is the sum of the two dims' strides.
void diagonal(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const int64_t offset = a.int_arg(1);
  const int64_t d1 = wrap_dim(a.int_arg(2), x.dim()), d2 = wrap_dim(a.int_arg(3), x.dim());
  int64_t start = x.storage_offset(), len;
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(x.size(d1), x.size(d2) - offset), 0);
    if (len > 0) start += offset * x.stride(d2);
  } else {
    len = std::max<int64_t>(std::min(x.size(d1) + offset, x.size(d2)), 0);
    if (len > 0) start -= offset * x.stride(d1);
  }
  std::vector<int64_t> sizes, strides;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    sizes.push_back(x.size(d));
    strides.push_back(x.stride(d));
  }
  sizes.push_back(len);
  strides.push_back(x.stride(d1) + x.stride(d2));
  a.ret(OpRef("as_strided").tensor(x, sizes, strides, start));
}

}  // namespace ignis::decomp

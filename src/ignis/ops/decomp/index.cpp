// Indexing and data-movement decompositions, onto cat, index_put, slices
// and expand: repeat, index_add/copy/fill, tril/triu and roll.
#include "ignis/ops/decomp/common.h"

namespace ignis::decomp {

using namespace grad_ops;  // NOLINT

namespace {
OpRef index_put_op("index_put"), cat_op("cat");

// self with `values` put at `index` along dim: index_put with full slices
// (None) before dim, so the indexed shape is self's with dim replaced by
// the index's length, as index_add/copy/fill take their source.
Tensor put_along(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& values,
                 bool accumulate) {
  std::vector<Tensor> indices(static_cast<size_t>(dim));
  indices.push_back(index);
  return index_put_op.tensor(self, IValue::OptTensors{std::move(indices)}, values, accumulate);
}

int64_t dim_of(const Args& a, size_t i) {
  return wrap_dim(a.int_arg(i), std::max<int64_t>(a.tensor(0).dim(), 1));
}
}  // namespace

// repeat(repeats): x (padded with leading 1-dims) seen as [1, s0, 1, s1,
// ...], expanded to [r0, s0, r1, s1, ...] and flattened pairwise.
void repeat(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const auto& r = a.ints(1);
  const int64_t lead = static_cast<int64_t>(r.size()) - x.dim();
  DimVector pairs, expanded, out;
  for (int64_t i = 0; i < static_cast<int64_t>(r.size()); ++i) {
    const int64_t n = i < lead ? 1 : x.size(i - lead);
    pairs.push_back(1);
    pairs.push_back(n);
    expanded.push_back(r[i]);
    expanded.push_back(n);
    out.push_back(r[i] * n);
  }
  Tensor e = expand(reshape(x, pairs), expanded);
  a.ret(fresh(reshape(e, out), x));
}

// index_add(dim, index, source, alpha): accumulating index_put.
void index_add(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& self = a.tensor(0);
  Tensor src = a.tensor(3);
  if (a.scalar(4).to_double() != 1.0) src = mul(src, wrapped_as(a.scalar(4), self.dtype()));
  a.ret(put_along(self, dim_of(a, 1), a.tensor(2), src, true));
}

void index_copy(const OpHandle& o, Stack& s) {
  Args a(o, s);
  a.ret(put_along(a.tensor(0), dim_of(a, 1), a.tensor(2), a.tensor(3), false));
}

// index_fill(dim, index, value): the 0-dim value broadcast into the slices.
void index_fill(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& self = a.tensor(0);
  Tensor value = convert(a.tensor(3), self.dtype());
  a.ret(put_along(self, dim_of(a, 1), a.tensor(2), value, false));
}

// tril(k) keeps column - row <= k, triu(k) keeps column - row >= k.
void tril_triu(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const Device dev = x.device();
  Tensor diff = sub(iota(x.size(-1), dev), unsqueeze(iota(x.size(-2), dev), 1));
  Tensor keep = cmp(a.name() == "tril" ? "le" : "ge", diff, wrapped(a.int_arg(1)));
  a.ret(where(keep, x, wrapped_as(0, x.dtype())));
}

// roll(shifts, dims): per dim, the last `shift` entries moved to the
// front by concatenating two slices; no dims rolls the flattened tensor.
void roll(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const auto& shifts = a.ints(1);
  const auto& dims = a.ints(2);
  auto roll1 = [](const Tensor& y, int64_t shift, int64_t dim) {
    const int64_t n = y.size(dim);
    if (n == 0) return y;
    const int64_t k = ((shift % n) + n) % n;
    if (k == 0) return y;
    std::vector<Tensor> parts{slice(y, dim, n - k, n), slice(y, dim, 0, n - k)};
    return cat_op.tensor(std::move(parts), dim);
  };
  Tensor y;
  if (dims.empty()) {
    y = view(roll1(reshape(x, DimVector{-1}), shifts[0], 0), x.sizes());
  } else {
    y = x;
    for (size_t i = 0; i < dims.size(); ++i) y = roll1(y, shifts[i], wrap_dim(dims[i], x.dim()));
  }
  a.ret(fresh(y, x));
}

}  // namespace ignis::decomp

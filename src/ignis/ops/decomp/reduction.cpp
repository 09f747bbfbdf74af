// Reduction decompositions, onto the core reductions: sum.dim_IntList,
// prod.dim_int, amax/amin, all.dims/any.dims (plus pointwise ops). Sums of
// float16/bfloat16 accumulate in float32 and are rounded once, as the
// reduction kernels accumulate in opmath_t.
#include <cmath>

#include "ignis/ops/decomp/common.h"

namespace ignis::decomp {

using namespace grad_ops;  // NOLINT

namespace {
std::optional<ScalarType> opt_dtype(const IValue& v) {
  if (v.is_none()) return std::nullopt;
  return v.to_dtype();
}

// x's reduction over dims as the op gives it: keepdim=False drops them.
// Reductions are computed with keepdim=True where the result is reused.
Tensor drop_dims(const Tensor& r, const Args& a) { return view(r, a.sizes()); }

}  // namespace

// sum(self, *, dtype) = sum.dim_IntList(self, None, dtype=dtype).
void sum(const OpHandle& o, Stack& s) {
  Args a(o, s);
  a.ret(reduce_sum(a.tensor(0), {}, false, opt_dtype(a[1])));
}

// prod(self) = prod.dim_int of the flattened tensor.
void prod(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Tensor flat = reshape(a.tensor(0), DimVector{-1});
  a.ret(OpRef("prod.dim_int").tensor(flat, int64_t(0), false, a[1]));
}

// max(self) / min(self) = amax / amin over every dim.
void max_all(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const bool is_max = a.name() == "max";
  a.ret(is_max ? reduce_amax(a.tensor(0), {}, false) : reduce_amin(a.tensor(0), {}, false));
}

// all(self), all.dim(self, dim, keepdim), and any's: all.dims / any.dims
// (whose None reduces every dim).
void all_any(const OpHandle& o, Stack& s) {
  Args a(o, s);
  OpRef target(a.name() == "all" ? "all.dims" : "any.dims");
  if (a.overload() == "dim") {
    a.ret(target.tensor(a.tensor(0), std::vector<int64_t>{a.int_arg(1)}, a.bool_arg(2)));
    return;
  }
  a.ret(target.tensor(a.tensor(0), IValue(), false));
}

// mean(self, dtype) and mean.dim(self, dim, keepdim, dtype): sum / count,
// summed in opmath of the result dtype.
void mean(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const bool with_dim = a.overload() == "dim";
  std::vector<int64_t> dims = with_dim ? dims_of(a[1], x.dim()) : std::vector<int64_t>{};
  const bool keepdim = with_dim && a.bool_arg(2);
  Tensor total = reduce_sum(x, dims, keepdim, opmath(a.dtype()));
  a.ret(div(total, wrapped(count_of(x.sizes(), dims))));
}

void nansum(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Tensor x = a.tensor(0);
  if (is_floating(x.dtype())) x = where(op("isnan", x), wrapped_as(0, x.dtype()), x);
  a.ret(reduce_sum(x, dims_of(a[1], x.dim()), a.bool_arg(2), opt_dtype(a[3])));
}

// var, std, var_mean, std_mean, in their three overloads ((self, unbiased),
// (self, dim, unbiased, keepdim), (self, dim, *, correction, keepdim)):
// two passes, as the kernel computes: the mean, then the sum of squared
// deviations from it, divided by max(0, count - correction).
void var(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const std::string& form = a.overload();
  double correction;
  std::vector<int64_t> dims;
  bool keepdim = false;
  if (form.empty()) {
    correction = a.bool_arg(1) ? 1.0 : 0.0;
  } else {
    dims = dims_of(a[1], x.dim());
    keepdim = a.bool_arg(3);
    if (form == "dim") correction = a.bool_arg(2) ? 1.0 : 0.0;
    else correction = a[2].is_none() ? 1.0 : a.scalar(2).to_double();
  }
  const bool take_sqrt = a.name() == "std" || a.name() == "std_mean";
  const bool with_mean = a.name() == "var_mean" || a.name() == "std_mean";
  Tensor xf = up(x, x.dtype());
  Tensor mu = reduce_mean(xf, dims, true);
  Tensor dev = sub(xf, mu);
  const double n = static_cast<double>(count_of(x.sizes(), dims));
  Tensor v = div(reduce_sum(mul(dev, dev), dims, keepdim), scalar(std::max(0.0, n - correction)));
  if (take_sqrt) v = op("sqrt", v);
  if (!with_mean) return a.ret(v);
  a.ret({v, keepdim ? mu : drop_dims(mu, a)});
}

// log(sum(exp(x - m))) + m with m the max (0 where it is infinite, so that
// all -inf gives -inf and +inf gives +inf rather than NaN).
void logsumexp(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  std::vector<int64_t> dims = dims_of(a[1], x.dim());
  Tensor xf = up(x, a.dtype());
  Tensor m = reduce_amax(xf, dims, true);
  m = where(op("isinf", m), wrapped_as(0, m.dtype()), m);
  Tensor r = add(op("log", reduce_sum(op("exp", sub(xf, m)), dims, true)), m);
  a.ret(a.bool_arg(2) ? r : drop_dims(r, a));
}

// norm(self, p, dim, keepdim, *, dtype) and norm.str (p='fro' is 2):
// computed in opmath of the result dtype.
void norm(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  double p = 2.0;
  if (!a[1].is_none() && !a[1].is_string()) p = a.scalar(1).to_double();
  a.ret(vector_norm(up(x, a.dtype()), p, dims_of(a[2], x.dim()), a.bool_arg(3)));
}

// count_nonzero(self, dim=None) and .dim_IntList(self, dim): int64 sums.
void count_nonzero(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  Tensor nz = cmp("ne", x, wrapped_as(0, x.dtype()));
  a.ret(reduce_sum(nz, dims_of(a[1], x.dim()), false, ScalarType::Int64));
}

}  // namespace ignis::decomp

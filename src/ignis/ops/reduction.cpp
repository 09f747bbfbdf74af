// Reduction ops: sum, mean, prod, amax/amin, max/min, argmax/argmin,
// var/std (and *_mean), logsumexp, all/any, norm, count_nonzero and the
// scans cumsum/cumprod. Each is structured: a meta rule that validates the
// arguments and allocates the (contiguous) outputs, and a kernel from
// kernels/cpu/reduce.h or, on a GPU, kernels/cuda/reduce.h (the scans and
// nothing else are CPU-only). Dims follow PyTorch: negative dims wrap, duplicates
// are errors, `dim=None` (and for most ops `dim=[]`) reduces every dim.
#include <cmath>
#include <optional>

#include "ignis/autograd/formula.h"
#include "ignis/kernels/cpu/reduce.h"
#include "ignis/kernels/cuda/reduce.h"
#include "ignis/kernels/cuda/scan.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

using cpu::DimMask;

// The call's reduction kernel: kernels/cpu/reduce.h and kernels/cuda/reduce.h
// declare the same functions, so each op's one kernel serves both devices.
#define IGNIS_REDUCE(c, fn) ((c).device.is_cuda() ? cuda::fn : cpu::fn)

// ---------------------------------------------------------------------------
// Argument helpers
// ---------------------------------------------------------------------------
DimMask all_dims(int64_t nd) {
  if (nd == 0) return 1;
  return nd >= 64 ? ~DimMask(0) : (DimMask(1) << nd) - 1;
}

// The dims an `int`, `int[]` or None argument names. An empty list means
// every dim (sum, mean, amax, ...) or none (all, any), as in PyTorch.
DimMask parse_dims(const Tensor& self, const IValue& v, bool empty_is_all = true) {
  const int64_t nd = self.dim();
  IGNIS_CHECK(nd <= 64, "reductions support at most 64 dims, got ", nd);
  if (v.is_none()) return all_dims(nd);
  if (v.is_int()) return DimMask(1) << wrap_dim(v.to_int(), nd);
  const auto& dims = v.to_int_list();
  if (dims.empty()) return empty_is_all ? all_dims(nd) : 0;
  DimMask m = 0;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, nd);
    IGNIS_CHECK(!((m >> w) & 1), "dim ", w, " appears multiple times in the list of dims");
    m |= DimMask(1) << w;
  }
  return m;
}

DimVector reduced_sizes(const Tensor& self, DimMask m, bool keepdim) {
  DimVector out;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!((m >> d) & 1)) out.push_back(self.sizes()[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

ScalarType sum_dtype(ScalarType t) { return is_floating(t) ? t : ScalarType::Int64; }

// Ops without an identity (amax, max, argmax, inf-norm) cannot reduce an
// empty dim.
void check_nonempty(const char* name, const Tensor& self, DimMask m, bool full,
                    ErrorKind full_kind = ErrorKind::Runtime) {
  if (self.numel() != 0) return;
  if (full) {
    ::ignis::detail::fail(full_kind, name, "(): Expected reduction dim to be specified for "
                          "input.numel() == 0.",
                          full_kind == ErrorKind::Runtime
                              ? " Specify the reduction dim with the 'dim' argument." : "");
  }
  for (int64_t d = 0; d < self.dim(); ++d)
    IGNIS_CHECK_INDEX(!((m >> d) & 1) || self.sizes()[d] != 0, name,
                      "(): Expected reduction dim ", d, " to have non-zero size.");
}

// One reduction call, parsed from the stack: `Dim`, `Keep`, `Dtype` are
// argument positions (-1: absent, meaning every dim / no keepdim / None).
struct Spec {
  DimMask mask;
  bool keepdim;
  bool full;  // no dim argument given (or None)
  std::optional<ScalarType> dtype;
};

template <int Dim, int Keep, int Dtype = -1>
Spec parse(const OpCall& c, bool empty_is_all = true) {
  const Tensor& self = c.tensor(0);
  Spec s{all_dims(self.dim()), false, true, std::nullopt};
  if constexpr (Dim >= 0) {
    s.mask = parse_dims(self, c.args[Dim], empty_is_all);
    s.full = c.args[Dim].is_none();
  }
  if constexpr (Keep >= 0) s.keepdim = c.bool_arg(Keep);
  if constexpr (Dtype >= 0) {
    if (!c.args[Dtype].is_none()) s.dtype = c.args[Dtype].to_dtype();
  }
  return s;
}

void alloc_reduced(OpCall& c, const Spec& s, ScalarType dtype) {
  c.alloc(reduced_sizes(c.tensor(0), s.mask, s.keepdim), dtype);
}

// ---------------------------------------------------------------------------
// sum, nansum, prod, mean
// ---------------------------------------------------------------------------
template <int Dim, int Keep, int Dtype>
void sum_meta(OpCall& c) {
  Spec s = parse<Dim, Keep, Dtype>(c);
  alloc_reduced(c, s, s.dtype.value_or(sum_dtype(c.tensor(0).dtype())));
}
template <int Dim, int Keep, int Dtype>
void sum_kernel(OpCall& c) {
  IGNIS_REDUCE(c, sum_out)(c.outputs[0], c.tensor(0), parse<Dim, Keep, Dtype>(c).mask);
}
template <int Dim, int Keep, int Dtype>
void nansum_kernel(OpCall& c) {
  IGNIS_REDUCE(c, nansum_out)(c.outputs[0], c.tensor(0), parse<Dim, Keep, Dtype>(c).mask);
}
template <int Dim, int Keep, int Dtype>
void prod_kernel(OpCall& c) {
  IGNIS_REDUCE(c, prod_out)(c.outputs[0], c.tensor(0), parse<Dim, Keep, Dtype>(c).mask);
}

template <int Dim, int Keep, int Dtype>
void mean_meta(OpCall& c) {
  Spec s = parse<Dim, Keep, Dtype>(c);
  const ScalarType in = c.tensor(0).dtype();
  if (s.dtype) {
    IGNIS_CHECK(is_floating(*s.dtype), "mean(): could not infer output dtype. Optional dtype "
                "must be either a floating point or complex dtype. Got: ", scalar_type_name(*s.dtype));
  } else {
    IGNIS_CHECK(is_floating(in), "mean(): could not infer output dtype. Input dtype must be "
                "either a floating point or complex dtype. Got: ", scalar_type_name(in));
  }
  alloc_reduced(c, s, s.dtype.value_or(in));
}
template <int Dim, int Keep, int Dtype>
void mean_kernel(OpCall& c) {
  IGNIS_REDUCE(c, mean_out)(c.outputs[0], c.tensor(0), parse<Dim, Keep, Dtype>(c).mask);
}

// ---------------------------------------------------------------------------
// amax, amin, max, min, argmax, argmin
// ---------------------------------------------------------------------------
template <bool IsMax>
constexpr const char* amax_name() { return IsMax ? "amax" : "amin"; }

template <bool IsMax>
void amax_meta(OpCall& c) {
  Spec s = parse<1, 2>(c);
  const bool full = c.args[1].to_int_list().empty();
  check_nonempty(amax_name<IsMax>(), c.tensor(0), s.mask, full);
  alloc_reduced(c, s, c.tensor(0).dtype());
}
template <bool IsMax>
void amax_kernel(OpCall& c) {
  DimMask m = parse<1, 2>(c).mask;
  if (IsMax) IGNIS_REDUCE(c, amax_out)(c.outputs[0], c.tensor(0), m);
  else IGNIS_REDUCE(c, amin_out)(c.outputs[0], c.tensor(0), m);
}

// max(self) / min(self): the extreme of every element.
template <bool IsMax>
void max_all_meta(OpCall& c) {
  check_nonempty(IsMax ? "max" : "min", c.tensor(0), all_dims(c.tensor(0).dim()), true);
  c.alloc({}, c.tensor(0).dtype());
}
template <bool IsMax>
void max_all_kernel(OpCall& c) {
  DimMask m = all_dims(c.tensor(0).dim());
  if (IsMax) IGNIS_REDUCE(c, amax_out)(c.outputs[0], c.tensor(0), m);
  else IGNIS_REDUCE(c, amin_out)(c.outputs[0], c.tensor(0), m);
}

// max.dim / min.dim: (values, indices).
template <bool IsMax>
void max_dim_meta(OpCall& c) {
  Spec s = parse<1, 2>(c);
  check_nonempty(IsMax ? "max" : "min", c.tensor(0), s.mask, false);
  alloc_reduced(c, s, c.tensor(0).dtype());
  alloc_reduced(c, s, ScalarType::Int64);
}
template <bool IsMax>
void max_dim_kernel(OpCall& c) {
  int64_t dim = wrap_dim(c.int_arg(1), c.tensor(0).dim());
  IGNIS_REDUCE(c, arg_reduce_out)(c.outputs[0], c.outputs[1], c.tensor(0), dim, IsMax);
}

// argmax(self, dim=None, keepdim): dim=None flattens (keepdim then keeps
// every dim as size 1).
template <bool IsMax>
void argmax_meta(OpCall& c) {
  const char* name = IsMax ? "argmax" : "argmin";
  const Tensor& self = c.tensor(0);
  IGNIS_CHECK(self.dtype() != ScalarType::Bool, name, "(): does not support bool input");
  Spec s = parse<1, 2>(c);
  check_nonempty(name, self, s.mask, s.full, ErrorKind::Index);
  alloc_reduced(c, s, ScalarType::Int64);
}
template <bool IsMax>
void argmax_kernel(OpCall& c) {
  const Tensor& self = c.tensor(0);
  int64_t dim = c.args[1].is_none() ? -1 : wrap_dim(c.int_arg(1), self.dim());
  if (self.dim() == 0) dim = -1;
  IGNIS_REDUCE(c, arg_reduce_out)(Tensor(), c.outputs[0], self, dim, IsMax);
}

// ---------------------------------------------------------------------------
// var, std, var_mean, std_mean
// ---------------------------------------------------------------------------
// The three overloads: (self, bool unbiased), (self, dim, bool unbiased,
// keepdim) and (self, dim, *, Scalar? correction, keepdim).
enum class VarForm { Unbiased, Dim, Correction };

template <VarForm F>
Spec var_spec(const OpCall& c, double* correction) {
  if constexpr (F == VarForm::Unbiased) {
    *correction = c.bool_arg(1) ? 1.0 : 0.0;
    return parse<-1, -1>(c);
  } else if constexpr (F == VarForm::Dim) {
    *correction = c.bool_arg(2) ? 1.0 : 0.0;
    return parse<1, 3>(c);
  } else {
    *correction = c.args[2].is_none() ? 1.0 : c.scalar(2).to_double();
    return parse<1, 3>(c);
  }
}

template <VarForm F, bool WithMean>
void var_meta(OpCall& c) {
  double corr;
  Spec s = var_spec<F>(c, &corr);
  const ScalarType dt = c.tensor(0).dtype();
  IGNIS_CHECK(is_floating(dt), "std and var only support floating point and complex dtypes");
  alloc_reduced(c, s, dt);
  if (WithMean) alloc_reduced(c, s, dt);
}
template <VarForm F, bool Sqrt, bool WithMean>
void var_kernel(OpCall& c) {
  double corr;
  Spec s = var_spec<F>(c, &corr);
  IGNIS_REDUCE(c, var_mean_out)(c.outputs[0], WithMean ? c.outputs[1] : Tensor(), c.tensor(0),
                            s.mask, corr,
                    Sqrt);
}

// ---------------------------------------------------------------------------
// logsumexp, all/any, count_nonzero
// ---------------------------------------------------------------------------
void logsumexp_meta(OpCall& c) {
  Spec s = parse<1, 2>(c);
  const ScalarType dt = c.tensor(0).dtype();
  alloc_reduced(c, s, is_floating(dt) ? dt : default_dtype());
}
void logsumexp_kernel(OpCall& c) {
  IGNIS_REDUCE(c, logsumexp_out)(c.outputs[0], c.tensor(0), parse<1, 2>(c).mask);
}

// all/any return bool, except uint8 in, uint8 out (as PyTorch).
ScalarType logical_dtype(const Tensor& t) {
  return t.dtype() == ScalarType::UInt8 ? ScalarType::UInt8 : ScalarType::Bool;
}
template <int Dim, int Keep>
void logical_meta(OpCall& c) {
  alloc_reduced(c, parse<Dim, Keep>(c, false), logical_dtype(c.tensor(0)));
}
template <bool IsAll, int Dim, int Keep>
void logical_kernel(OpCall& c) {
  DimMask m = parse<Dim, Keep>(c, false).mask;
  if (IsAll) IGNIS_REDUCE(c, all_out)(c.outputs[0], c.tensor(0), m);
  else IGNIS_REDUCE(c, any_out)(c.outputs[0], c.tensor(0), m);
}

void count_nonzero_meta(OpCall& c) {
  alloc_reduced(c, parse<1, -1>(c), ScalarType::Int64);
}
void count_nonzero_kernel(OpCall& c) {
  IGNIS_REDUCE(c, count_nonzero_out)(c.outputs[0], c.tensor(0), parse<1, -1>(c).mask);
}

// ---------------------------------------------------------------------------
// norm(self, p=2, dim=None, keepdim=False, *, dtype=None)
// ---------------------------------------------------------------------------
// p from a Scalar? (None: 2) or a str ('fro': 2).
double norm_p(const OpCall& c) {
  const IValue& p = c.args[1];
  if (p.is_none()) return 2.0;
  if (p.is_string()) {
    const std::string& s = p.to_string();
    if (s == "fro") return 2.0;
    if (s == "nuc") IGNIS_NOT_IMPLEMENTED("norm: the nuclear norm (p='nuc') is not supported");
    IGNIS_FAIL("linalg.matrix_norm: Order ", s, " not supported.");
  }
  return p.to_double();
}

void norm_meta(OpCall& c) {
  Spec s = parse<2, 3, 4>(c);
  const Tensor& self = c.tensor(0);
  const double p = norm_p(c);
  IGNIS_CHECK(is_floating(self.dtype()), "linalg.vector_norm: Expected a floating point or "
              "complex tensor as input. Got ", scalar_type_name(self.dtype()));
  if (s.dtype) {
    IGNIS_CHECK(is_floating(*s.dtype), "linalg.vector_norm: dtype should be floating point or "
                "complex, but got ", scalar_type_name(*s.dtype));
    IGNIS_CHECK(promote_types(self.dtype(), *s.dtype) == *s.dtype,
                "linalg.vector_norm: the dtype of the input (", scalar_type_name(self.dtype()),
                ") should be convertible without narrowing to the specified dtype (",
                scalar_type_name(*s.dtype), ")");
  }
  if (std::isinf(p) && self.numel() == 0) {
    IGNIS_CHECK(!s.full, "linalg.vector_norm cannot compute the ", p > 0 ? "" : "-",
                "inf norm on an empty tensor because the operation does not have an identity");
    for (int64_t d = 0; d < self.dim(); ++d)
      IGNIS_CHECK(!((s.mask >> d) & 1) || self.sizes()[d] != 0, "linalg.vector_norm cannot "
                  "compute the ", p > 0 ? "" : "-", "inf norm on the dimension ", d,
                  " because this dimension is empty and the operation does not have an identity");
  }
  alloc_reduced(c, s, s.dtype.value_or(self.dtype()));
}
void norm_kernel(OpCall& c) {
  IGNIS_REDUCE(c, norm_out)(c.outputs[0], c.tensor(0), parse<2, 3, 4>(c).mask, norm_p(c));
}

// ---------------------------------------------------------------------------
// cumsum, cumprod (and their in-place forms)
// ---------------------------------------------------------------------------
template <bool Inplace>
void scan_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  wrap_dim(c.int_arg(1), self.dim());
  const IValue& dt = c.args[2];
  if (Inplace) {
    IGNIS_CHECK(dt.is_none() || dt.to_dtype() == self.dtype(), "Bad in-place call: input "
                "tensor dtype ", dtype_name(self.dtype()), " and output tensor dtype ",
                dtype_name(dt.to_dtype()), " should match");
    c.outputs.push_back(self);
    if (!c.device.is_meta()) self.impl()->version_counter().bump();
    return;
  }
  c.alloc(self.sizes(), dt.is_none() ? sum_dtype(self.dtype()) : dt.to_dtype());
}
template <bool IsProd, bool Inplace>
void scan_impl(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const int64_t dim = self.dim() == 0 ? 0 : wrap_dim(c.int_arg(1), self.dim());
  const Tensor& out = c.outputs[0];
  Tensor dst = Inplace ? empty_tensor(self.sizes(), self.dtype(), self.device()) : out;
  if (IsProd) IGNIS_REDUCE(c, cumprod_out)(dst, self, dim);
  else IGNIS_REDUCE(c, cumsum_out)(dst, self, dim);
  if (Inplace) copy_tensor(out, dst);
}

// max.other / min.other: the elementwise maximum / minimum.
template <bool IsMax>
void max_other_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  static OpRef op(IsMax ? "maximum" : "minimum");
  Tensor r = op.tensor(s[0], s[1]);
  s.clear();
  s.emplace_back(std::move(r));
}

// ---- derivatives ------------------------------------------------------------------
using namespace grad_ops;  // NOLINT

int64_t nd_of(const GradCtx& c) { return static_cast<int64_t>(c.sizes(0).size()); }
int64_t count_of(const DimVector& sizes, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= sizes.empty() ? 1 : sizes[d];
  return n;
}
// The incoming gradient (of a reduction over `dims`) broadcast back to self.
Tensor spread(const GradCtx& c, const Tensor& g, const std::vector<int64_t>& dims, bool keepdim) {
  return expand(unreduce(g, c.sizes(0), dims, keepdim), c.sizes(0));
}

void sum_bw(GradCtx& c) { c.set(0, expand(c.grad(), c.sizes(0))); }
void sum_dim_bw(GradCtx& c) {
  auto dims = reduced_dims(c.args[1], nd_of(c));
  c.set(0, spread(c, c.grad(), dims, c.bool_arg(2)));
}
void nansum_bw(GradCtx& c) {
  auto dims = reduced_dims(c.args[1], nd_of(c));
  Tensor g = spread(c, c.grad(), dims, c.bool_arg(2));
  c.set(0, where(op("isnan", c.in(0)), zeros_like(g), g));
}
void mean_bw(GradCtx& c) {
  double n = static_cast<double>(compute_numel(c.sizes(0)));
  c.set(0, expand(div(c.grad(), scalar(n)), c.sizes(0)));
}
void mean_dim_bw(GradCtx& c) {
  auto dims = reduced_dims(c.args[1], nd_of(c));
  double n = static_cast<double>(count_of(c.sizes(0), dims));
  c.set(0, div(spread(c, c.grad(), dims, c.bool_arg(2)), scalar(n)));
}

// The product of all other elements along dim, without dividing (zeros are fine):
// exclusive cumulative products from the left and from the right.
Tensor shifted_cumprod(const Tensor& x, int64_t dim) {
  int64_t n = x.sizes()[dim];
  Tensor cp = op("cumprod", x, dim);
  Tensor head = op("narrow", cp, dim, int64_t(0), n - 1);
  std::vector<int64_t> pad;
  for (int64_t d = x.dim() - 1; d > dim; --d) pad.insert(pad.end(), {0, 0});
  pad.push_back(1);
  pad.push_back(0);
  return op("pad", head, pad, std::string("constant"), 1.0);
}
Tensor prod_others(const Tensor& x, int64_t dim) {
  std::vector<int64_t> fd{dim};
  Tensor right = op("flip", shifted_cumprod(op("flip", x, fd), dim), fd);
  return mul(shifted_cumprod(x, dim), right);
}
// Torch's prod formulas read the result (grad * result / self where no
// element is zero); these compute the products of the others instead, which
// needs no division, but read the result too, so that writing it in place
// before backward is an error as in torch.
void prod_bw(GradCtx& c) {
  (void)c.result();
  Tensor flat = reshape(c.in(0), DimVector{-1});
  Tensor others = reshape(prod_others(flat, 0), c.sizes(0));
  c.set(0, mul(expand(c.grad(), c.sizes(0)), others));
}
void prod_dim_bw(GradCtx& c) {
  (void)c.result();
  if (c.sizes(0).empty()) return c.set(0, c.grad());
  int64_t dim = wrap_dim(c.int_arg(1), nd_of(c));
  Tensor g = spread(c, c.grad(), {dim}, c.bool_arg(2));
  c.set(0, mul(g, prod_others(c.in(0), dim)));
}

// amax/amin/max/min: the gradient is shared evenly by the elements equal to
// the result (PyTorch's rule).
void extreme_bw(GradCtx& c, const std::vector<int64_t>& dims, bool keepdim) {
  const Tensor& x = c.in(0);
  Tensor r = unreduce(c.result(), c.sizes(0), dims, keepdim);
  Tensor mask = op("eq", x, r);
  Tensor cnt = sum_dims(mask, dims, true);
  Tensor g = unreduce(c.grad(), c.sizes(0), dims, keepdim);
  c.set(0, mul(div(g, cnt), mask));
}
void amax_bw(GradCtx& c) {
  auto dims = reduced_dims(c.args[1], nd_of(c));
  extreme_bw(c, dims, c.bool_arg(2));
}
void max_all_bw(GradCtx& c) { extreme_bw(c, reduced_dims(IValue(), nd_of(c)), false); }
// max.dim/min.dim: the gradient goes to the index that was picked.
void max_dim_bw(GradCtx& c) {
  if (c.sizes(0).empty()) return c.set(0, c.grad());
  int64_t dim = wrap_dim(c.int_arg(1), nd_of(c));
  bool keep = c.bool_arg(2);
  Tensor idx = unreduce(c.result(1), c.sizes(0), {dim}, keep);
  Tensor g = unreduce(c.grad(), c.sizes(0), {dim}, keep);
  Tensor z = zeros(c.sizes(0), g.dtype(), g.user_device());
  c.set(0, op("scatter.src", z, dim, idx, g));
}

// var/std and their _mean forms: the dims, correction and keepdim of each form.
template <VarForm F>
void var_args(const GradCtx& c, std::vector<int64_t>& dims, double& corr, bool& keep) {
  int64_t nd = nd_of(c);
  if constexpr (F == VarForm::Unbiased) {
    dims = reduced_dims(IValue(), nd);
    corr = c.bool_arg(1) ? 1.0 : 0.0;
    keep = false;
  } else if constexpr (F == VarForm::Dim) {
    dims = reduced_dims(c.args[1], nd);
    corr = c.bool_arg(2) ? 1.0 : 0.0;
    keep = c.bool_arg(3);
  } else {
    dims = reduced_dims(c.args[1], nd);
    corr = c.args[2].is_none() ? 1.0 : c.scalar(2).to_double();
    keep = c.bool_arg(3);
  }
}
template <VarForm F, bool Std, bool WithMean>
void var_bw(GradCtx& c) {
  std::vector<int64_t> dims;
  double corr;
  bool keep;
  var_args<F>(c, dims, corr, keep);
  const Tensor& x = c.in(0);
  double n = static_cast<double>(count_of(c.sizes(0), dims));
  Tensor centered = sub(x, op("mean.dim", x, dims, true));
  Tensor g = unreduce(c.grad(0), c.sizes(0), dims, keep);
  Tensor d;
  if (Std) {
    Tensor s = unreduce(c.result(0), c.sizes(0), dims, keep);
    d = div(mul(g, centered), mul(s, std::max(n - corr, 0.0)));
  } else {
    d = mul(mul(g, centered), 2.0 / std::max(n - corr, 0.0));
  }
  if (WithMean) d = add(d, div(unreduce(c.grad(1), c.sizes(0), dims, keep), scalar(n)));
  c.set(0, d);
}

void logsumexp_bw(GradCtx& c) {
  auto dims = reduced_dims(c.args[1], nd_of(c));
  bool keep = c.bool_arg(2);
  Tensor r = unreduce(c.result(), c.sizes(0), dims, keep);
  Tensor g = unreduce(c.grad(), c.sizes(0), dims, keep);
  c.set(0, mul(g, op("exp", sub(c.in(0), r))));
}

void norm_bw(GradCtx& c) {
  double p = 2.0;
  const IValue& pv = c.args[1];
  if (pv.is_string()) {
    IGNIS_CHECK_KIND(NotImplemented, pv.to_string() == "fro",
                     "the derivative of norm(p='", pv.to_string(), "') is not implemented");
  } else if (!pv.is_none()) {
    p = pv.to_double();
  }
  auto dims = reduced_dims(c.args[2], nd_of(c));
  bool keep = c.bool_arg(3);
  const Tensor& x = c.in(0);
  Tensor r = unreduce(c.result(), c.sizes(0), dims, keep);
  Tensor g = unreduce(c.grad(), c.sizes(0), dims, keep);
  Tensor d;
  if (p == 0.0) {
    d = zeros_like(x);
  } else if (p == 1.0) {
    d = mul(g, op("sign", x));
  } else if (std::isinf(p)) {
    Tensor mask = op("eq", op("abs", x), r);
    Tensor cnt = sum_dims(mask, dims, true);
    d = mul(div(mul(g, op("sign", x)), cnt), mask);
  } else if (p == 2.0) {
    d = div(mul(g, x), r);
    d = where(op("eq", r, scalar(0.0)), zeros_like(d), d);
  } else {
    // x * |x|^(p-2) / r^(p-1)
    d = div(mul(mul(g, x), pow(op("abs", x), p - 2.0)), pow(r, p - 1.0));
    d = where(op("eq", r, scalar(0.0)), zeros_like(d), d);
  }
  c.set(0, d);
}

Tensor reverse_cumsum(const Tensor& g, int64_t dim) {
  std::vector<int64_t> fd{dim};
  return op("flip", op("cumsum", op("flip", g, fd), dim), fd);
}
void cumsum_bw(GradCtx& c) {
  if (c.sizes(0).empty()) return c.set(0, c.grad());
  c.set(0, reverse_cumsum(c.grad(), wrap_dim(c.int_arg(1), nd_of(c))));
}
// d/dx_i of sum_k g_k * prod_{j<=k} x_j is prod_{j<i} x_j * S_i with
// S_i = g_i + x_{i+1} * S_{i+1}. Without zeros that is a reverse cumsum
// divided by x; with zeros the recurrence runs step by step along dim.
void cumprod_bw(GradCtx& c) {
  if (c.sizes(0).empty()) return c.set(0, c.grad());
  const Tensor& x = c.in(0);
  int64_t dim = wrap_dim(c.int_arg(1), nd_of(c));
  const Tensor& g = c.grad();
  if (!op("any", op("eq", x, scalar(0.0))).item_int()) {
    c.set(0, div(reverse_cumsum(mul(g, c.result()), dim), x));
    return;
  }
  int64_t n = x.size(dim);
  std::vector<Tensor> s(static_cast<size_t>(n));
  s[n - 1] = op("narrow", g, dim, n - 1, int64_t(1));
  for (int64_t i = n - 2; i >= 0; --i)
    s[i] = add(op("narrow", g, dim, i, int64_t(1)),
               mul(op("narrow", x, dim, i + 1, int64_t(1)), s[i + 1]));
  c.set(0, mul(shifted_cumprod(x, dim), OpRef("cat").tensor(s, dim)));
}

}  // namespace

void register_reduction_ops() {
  def("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor")
      .category(OpCategory::Reduction).both().meta(sum_meta<-1, -1, 1>)
      .cpu_and_cuda(sum_kernel<-1, -1, 1>)
      .doc("sum of all elements; integers and bool sum in int64")
      .derivative(sum_bw).decomposition(decomp::sum);
  def("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)"
      " -> Tensor")
      .category(OpCategory::Reduction).both().meta(sum_meta<1, 2, 3>)
      .cpu_and_cuda(sum_kernel<1, 2, 3>)
      .doc("sum over dims (None or [] for all)")
      .derivative(sum_dim_bw).core();
  def("nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) "
      "-> Tensor")
      .category(OpCategory::Reduction).both().meta(sum_meta<1, 2, 3>)
      .cpu_and_cuda(nansum_kernel<1, 2, 3>)
      .doc("sum treating NaN as zero")
      .derivative(nansum_bw, "self").decomposition(decomp::nansum);
  def("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor")
      .category(OpCategory::Reduction).both().meta(mean_meta<-1, -1, 1>)
      .cpu_and_cuda(mean_kernel<-1, -1, 1>)
      .doc("mean of all elements (floating inputs, or an explicit floating dtype)")
      .derivative(mean_bw).decomposition(decomp::mean);
  def("mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) "
      "-> Tensor")
      .category(OpCategory::Reduction).both().meta(mean_meta<1, 2, 3>)
      .cpu_and_cuda(mean_kernel<1, 2, 3>)
      .doc("mean over dims")
      .derivative(mean_dim_bw).decomposition(decomp::mean);
  def("prod(Tensor self, *, ScalarType? dtype=None) -> Tensor")
      .category(OpCategory::Reduction).both().meta(sum_meta<-1, -1, 1>)
      .cpu_and_cuda(prod_kernel<-1, -1, 1>)
      .doc("product of all elements; integers and bool multiply in int64")
      .derivative(prod_bw, "self, result").decomposition(decomp::prod);
  def("prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) "
      "-> Tensor")
      .category(OpCategory::Reduction).both().meta(sum_meta<1, 2, 3>)
      .cpu_and_cuda(prod_kernel<1, 2, 3>)
      .doc("product along one dim")
      .derivative(prod_dim_bw, "self, result").core();

  def("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor")
      .category(OpCategory::Reduction).both().meta(amax_meta<true>).cpu_and_cuda(amax_kernel<true>)
      .doc("maximum over dims ([] for all); NaN propagates")
      .derivative(amax_bw, "self, result").core();
  def("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor")
      .category(OpCategory::Reduction).both().meta(amax_meta<false>)
      .cpu_and_cuda(amax_kernel<false>)
      .doc("minimum over dims ([] for all); NaN propagates")
      .derivative(amax_bw, "self, result").core();
  def("max(Tensor self) -> Tensor")
      .category(OpCategory::Reduction).both().meta(max_all_meta<true>)
      .cpu_and_cuda(max_all_kernel<true>)
      .doc("maximum of all elements; NaN propagates")
      .derivative(max_all_bw, "self, result").decomposition(decomp::max_all);
  def("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
      .category(OpCategory::Reduction).both().meta(max_dim_meta<true>)
      .cpu_and_cuda(max_dim_kernel<true>)
      .doc("maximum along dim and the index of its first occurrence")
      .derivative(max_dim_bw, "result1").core();
  def("max.other(Tensor self, Tensor other) -> Tensor")
      .category(OpCategory::Pointwise).both().composite(max_other_kernel<true>)
      .doc("elementwise maximum (alias of maximum)")
      .derivative(maximum_bw, "self, other");
  def("min(Tensor self) -> Tensor")
      .category(OpCategory::Reduction).both().meta(max_all_meta<false>)
      .cpu_and_cuda(max_all_kernel<false>)
      .doc("minimum of all elements; NaN propagates")
      .derivative(max_all_bw, "self, result").decomposition(decomp::max_all);
  def("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
      .category(OpCategory::Reduction).both().meta(max_dim_meta<false>)
      .cpu_and_cuda(max_dim_kernel<false>)
      .doc("minimum along dim and the index of its first occurrence")
      .derivative(max_dim_bw, "result1").core();
  def("min.other(Tensor self, Tensor other) -> Tensor")
      .category(OpCategory::Pointwise).both().composite(max_other_kernel<false>)
      .doc("elementwise minimum (alias of minimum)")
      .derivative(minimum_bw, "self, other");
  def("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor")
      .category(OpCategory::Reduction).both().meta(argmax_meta<true>)
      .cpu_and_cuda(argmax_kernel<true>)
      .doc("index of the first maximum (of the flattened input when dim is None)").core();
  def("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor")
      .category(OpCategory::Reduction).both().meta(argmax_meta<false>)
      .cpu_and_cuda(argmax_kernel<false>)
      .doc("index of the first minimum (of the flattened input when dim is None)").core();

  using F = VarForm;
  const std::string unbiased = "(Tensor self, bool unbiased=True)";
  const std::string dim = "(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False)";
  const std::string corr =
      "(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False)";
  def("var" + unbiased + " -> Tensor").category(OpCategory::Reduction).both()
      .meta(var_meta<F::Unbiased, false>).cpu_and_cuda(var_kernel<F::Unbiased, false, false>)
      .doc("variance (Bessel-corrected unless unbiased=False)")
      .derivative(var_bw<F::Unbiased, false, false>, "self").decomposition(decomp::var);
  def("var.dim" + dim + " -> Tensor").category(OpCategory::Reduction).both()
      .meta(var_meta<F::Dim, false>).cpu_and_cuda(var_kernel<F::Dim, false, false>)
      .derivative(var_bw<F::Dim, false, false>, "self").decomposition(decomp::var);
  def("var.correction" + corr + " -> Tensor").category(OpCategory::Reduction).both()
      .meta(var_meta<F::Correction, false>).cpu_and_cuda(var_kernel<F::Correction, false, false>)
      .derivative(var_bw<F::Correction, false, false>, "self").decomposition(decomp::var);
  def("std" + unbiased + " -> Tensor").category(OpCategory::Reduction).both()
      .meta(var_meta<F::Unbiased, false>).cpu_and_cuda(var_kernel<F::Unbiased, true, false>)
      .doc("standard deviation (Bessel-corrected unless unbiased=False)")
      .derivative(var_bw<F::Unbiased, true, false>, "self, result").decomposition(decomp::var);
  def("std.dim" + dim + " -> Tensor").category(OpCategory::Reduction).both()
      .meta(var_meta<F::Dim, false>).cpu_and_cuda(var_kernel<F::Dim, true, false>)
      .derivative(var_bw<F::Dim, true, false>, "self, result").decomposition(decomp::var);
  def("std.correction" + corr + " -> Tensor").category(OpCategory::Reduction).both()
      .meta(var_meta<F::Correction, false>).cpu_and_cuda(var_kernel<F::Correction, true, false>)
      .derivative(var_bw<F::Correction, true, false>, "self, result").decomposition(decomp::var);
  def("var_mean" + unbiased + " -> (Tensor, Tensor)").category(OpCategory::Reduction)
      .meta(var_meta<F::Unbiased, true>).cpu_and_cuda(var_kernel<F::Unbiased, false, true>)
      .doc("(variance, mean)")
      .derivative(var_bw<F::Unbiased, false, true>, "self").decomposition(decomp::var);
  def("var_mean.dim" + dim + " -> (Tensor, Tensor)").category(OpCategory::Reduction)
      .meta(var_meta<F::Dim, true>).cpu_and_cuda(var_kernel<F::Dim, false, true>)
      .derivative(var_bw<F::Dim, false, true>, "self").decomposition(decomp::var);
  def("var_mean.correction" + corr + " -> (Tensor, Tensor)").category(OpCategory::Reduction)
      .meta(var_meta<F::Correction, true>).cpu_and_cuda(var_kernel<F::Correction, false, true>)
      .derivative(var_bw<F::Correction, false, true>, "self").decomposition(decomp::var);
  def("std_mean" + unbiased + " -> (Tensor, Tensor)").category(OpCategory::Reduction)
      .meta(var_meta<F::Unbiased, true>).cpu_and_cuda(var_kernel<F::Unbiased, true, true>)
      .doc("(standard deviation, mean)")
      .derivative(var_bw<F::Unbiased, true, true>, "self, result").decomposition(decomp::var);
  def("std_mean.dim" + dim + " -> (Tensor, Tensor)").category(OpCategory::Reduction)
      .meta(var_meta<F::Dim, true>).cpu_and_cuda(var_kernel<F::Dim, true, true>)
      .derivative(var_bw<F::Dim, true, true>, "self, result").decomposition(decomp::var);
  def("std_mean.correction" + corr + " -> (Tensor, Tensor)").category(OpCategory::Reduction)
      .meta(var_meta<F::Correction, true>).cpu_and_cuda(var_kernel<F::Correction, true, true>)
      .derivative(var_bw<F::Correction, true, true>, "self, result").decomposition(decomp::var);

  def("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor")
      .category(OpCategory::Reduction).both().meta(logsumexp_meta).cpu_and_cuda(logsumexp_kernel)
      .doc("log(sum(exp(input))) over dims, computed without overflow")
      .derivative(logsumexp_bw, "self, result").decomposition(decomp::logsumexp);

  def("all(Tensor self) -> Tensor").category(OpCategory::Reduction).both()
      .meta(logical_meta<-1, -1>).cpu_and_cuda(logical_kernel<true, -1, -1>)
      .doc("whether every element is nonzero").decomposition(decomp::all_any);
  def("all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor")
      .category(OpCategory::Reduction).both().meta(logical_meta<1, 2>)
      .cpu_and_cuda(logical_kernel<true, 1, 2>)
      .decomposition(decomp::all_any);
  def("all.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor")
      .category(OpCategory::Reduction).both().meta(logical_meta<1, 2>)
      .cpu_and_cuda(logical_kernel<true, 1, 2>)
      .core();
  def("any(Tensor self) -> Tensor").category(OpCategory::Reduction).both()
      .meta(logical_meta<-1, -1>).cpu_and_cuda(logical_kernel<false, -1, -1>)
      .doc("whether any element is nonzero").decomposition(decomp::all_any);
  def("any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor").category(OpCategory::Reduction)
      .both().meta(logical_meta<1, 2>)
      .cpu_and_cuda(logical_kernel<false, 1, 2>).decomposition(decomp::all_any);
  def("any.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor")
      .category(OpCategory::Reduction).both().meta(logical_meta<1, 2>)
      .cpu_and_cuda(logical_kernel<false, 1, 2>).core();

  def("norm(Tensor self, Scalar? p=2, int[1]? dim=None, bool keepdim=False, *, "
      "ScalarType? dtype=None) -> Tensor")
      .category(OpCategory::Reduction).both().meta(norm_meta).cpu_and_cuda(norm_kernel)
      .doc("vector p-norm over dims (p = 2, 1, 0, inf, -inf or any float)")
      .derivative(norm_bw, "self, result").decomposition(decomp::norm);
  def("norm.str(Tensor self, str p, int[1]? dim=None, bool keepdim=False, *, "
      "ScalarType? dtype=None) -> Tensor")
      .category(OpCategory::Reduction).both().meta(norm_meta).cpu_and_cuda(norm_kernel)
      .doc("p='fro': the 2-norm over dims")
      .derivative(norm_bw, "self, result").decomposition(decomp::norm);

  def("count_nonzero(Tensor self, int? dim=None) -> Tensor")
      .category(OpCategory::Reduction).both().meta(count_nonzero_meta)
      .cpu_and_cuda(count_nonzero_kernel)
      .doc("number of nonzero elements (int64)").decomposition(decomp::count_nonzero);
  def("count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor")
      .category(OpCategory::Reduction).both().meta(count_nonzero_meta)
      .cpu_and_cuda(count_nonzero_kernel)
      .decomposition(decomp::count_nonzero);

  def("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor")
      .category(OpCategory::Reduction).both().meta(scan_meta<false>)
      .cpu_and_cuda(scan_impl<false, false>)
      .doc("inclusive cumulative sum along dim; integers and bool give int64")
      .derivative(cumsum_bw).core();
  def("cumsum_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)")
      .category(OpCategory::Reduction).method_only().meta(scan_meta<true>)
      .cpu_and_cuda(scan_impl<false, true>).derivative(cumsum_bw);
  def("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor")
      .category(OpCategory::Reduction).both().meta(scan_meta<false>)
      .cpu_and_cuda(scan_impl<true, false>)
      .doc("inclusive cumulative product along dim; integers and bool give int64")
      .derivative(cumprod_bw, "self, result").core();
  def("cumprod_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)")
      .category(OpCategory::Reduction).method_only().meta(scan_meta<true>).cpu_and_cuda(scan_impl<true, true>)
      .derivative(cumprod_bw, "self, result");
}

}  // namespace ignis

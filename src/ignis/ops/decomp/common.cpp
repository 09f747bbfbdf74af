#include "ignis/ops/decomp/common.h"

#include <algorithm>
#include <cmath>

namespace ignis::decomp {

using namespace grad_ops;  // NOLINT

namespace {

// A meta tensor with t's geometry, over a meta storage large enough for it
// (so that views and overlapping strides keep their meaning). Wrapped
// numbers stay: they promote as scalars, and every device accepts them.
Tensor meta_copy(const Tensor& t) {
  if (!t.defined() || t.impl()->is_wrapped_number()) return t;
  int64_t extent = t.storage_offset() + 1;
  for (int64_t d = 0; d < t.dim(); ++d)
    extent += (t.sizes()[d] - 1) * t.strides()[d];
  if (t.numel() == 0) extent = t.storage_offset();
  Tensor base = empty_tensor({std::max<int64_t>(extent, 0)}, t.dtype(), Device(DeviceType::Meta));
  return make_view(base, t.sizes(), t.strides(), t.storage_offset());
}

IValue meta_of(const IValue& v) {
  if (v.is_tensor()) return meta_copy(v.to_tensor());
  if (v.is_tensor_list() || v.is_opt_tensor_list()) {
    std::vector<Tensor> l =
        v.is_tensor_list() ? v.to_tensor_list() : v.to_opt_tensor_list();
    for (Tensor& t : l) t = meta_copy(t);
    if (v.is_tensor_list()) return l;
    return IValue::OptTensors{std::move(l)};
  }
  return v;
}

OpRef to_copy_op("_to_copy"), sum_op("sum.dim_IntList"), amax_op("amax"), amin_op("amin"),
    view_op("view"), permute_op("permute"), slice_op("slice.Tensor"),
    squeeze_op("squeeze.dims"), clamp_op("clamp"), arange_op("arange.start");

}  // namespace

bool Args::aliases_input(const Tensor& t) const {
  auto same = [&](const Tensor& in) {
    return in.defined() && in.impl()->storage().get() == t.impl()->storage().get();
  };
  for (size_t i = 0; i < op_.schema().args.size(); ++i) {
    const IValue& v = s_[i];
    if (v.is_tensor() && same(v.to_tensor())) return true;
    if (v.is_tensor_list())
      for (const Tensor& in : v.to_tensor_list())
        if (same(in)) return true;
  }
  return false;
}

Args::Args(const OpHandle& op, Stack& s, bool check) : op_(op), s_(s) {
  const OpDef* d = op.def();
  // Structured ops have a meta rule; view ops one kernel that only computes
  // geometry. Composites check inside their kernel.
  if (!check || !d || !(d->meta || (d->is_view && !d->composite_implicit))) return;
  Stack m;
  m.reserve(op.schema().args.size());
  for (size_t i = 0; i < op.schema().args.size(); ++i) m.push_back(meta_of(s[i]));
  op.redispatch(DispatchKeySet(DispatchKey::Meta), m);
  meta_ = std::move(m);
}

ScalarType Args::dtype(size_t j) const {
  IGNIS_INTERNAL_ASSERT(j < meta_.size(), "decomposition of ", op_.name(),
                        " reads the dtype of an output it did not check");
  return meta_[j].to_tensor().dtype();
}

const DimVector& Args::sizes(size_t j) const {
  IGNIS_INTERNAL_ASSERT(j < meta_.size(), "decomposition of ", op_.name(),
                        " reads the sizes of an output it did not check");
  return meta_[j].to_tensor().sizes();
}

Tensor Args::checked(Tensor t, size_t j) const {
  if (meta_.empty()) return t;
  const Tensor m = meta_[j].to_opt_tensor();
  IGNIS_INTERNAL_ASSERT(m.defined() == t.defined(), "decomposition of ", op_.name(),
                        ": output ", j, " is ", t.defined() ? "defined" : "None",
                        " where the op's is not");
  if (!t.defined()) return t;
  if (t.dtype() != m.dtype()) {
    IGNIS_INTERNAL_ASSERT(t.dtype() == opmath(m.dtype()), "decomposition of ", op_.name(),
                          ": output ", j, " has dtype ", dtype_name(t.dtype()),
                          " where the op gives ", dtype_name(m.dtype()));
    t = convert(t, m.dtype());
  }
  IGNIS_INTERNAL_ASSERT(t.sizes() == m.sizes(), "decomposition of ", op_.name(), ": output ", j,
                        " has shape ", t.shape_str(), " where the op gives ", m.shape_str());
  IGNIS_INTERNAL_ASSERT(!op_.def()->is_view || t.strides() == m.strides(), "decomposition of ",
                        op_.name(), ": view ", j, " has strides ", shape_str(t.strides()),
                        " where the op gives ", shape_str(m.strides()));
  IGNIS_INTERNAL_ASSERT(op_.def()->is_view || !aliases_input(t), "decomposition of ", op_.name(),
                        ": output ", j, " shares an input's storage (see fresh())");
  return t;
}

void Args::ret(std::vector<Tensor> outs) {
  for (size_t j = 0; j < outs.size(); ++j) outs[j] = checked(std::move(outs[j]), j);
  s_.clear();
  for (Tensor& t : outs) s_.emplace_back(std::move(t));
}

void Args::ret_list(std::vector<Tensor> outs) {
  if (!meta_.empty()) {
    const auto& m = meta_[0].to_tensor_list();
    IGNIS_INTERNAL_ASSERT(m.size() == outs.size(), "decomposition of ", op_.name(), " gives ",
                          outs.size(), " tensors where the op gives ", m.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      IGNIS_INTERNAL_ASSERT(outs[k].sizes() == m[k].sizes() && outs[k].strides() == m[k].strides(),
                            "decomposition of ", op_.name(), ": tensor ", k, " has shape ",
                            outs[k].shape_str(), " where the op gives ", m[k].shape_str());
    }
  }
  s_.clear();
  s_.emplace_back(std::move(outs));
}

Tensor fresh(const Tensor& t, const Tensor& of) {
  if (t.impl()->storage().get() != of.impl()->storage().get()) return t;
  static OpRef clone_op("clone");
  return clone_op.tensor(t);
}

ScalarType opmath(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 ? ScalarType::Float32 : t;
}

Tensor convert(const Tensor& t, ScalarType dt) {
  if (!t.defined() || t.dtype() == dt) return t;
  return to_copy_op.tensor(t, dt);
}

Tensor up(const Tensor& t, ScalarType out) {
  if (!t.defined() || t.impl()->is_wrapped_number()) return t;
  return convert(convert(t, out), opmath(out));
}

Tensor wrapped(const Scalar& v) {
  if (v.is_float()) return scalar_to_tensor(v.to_double(), ScalarType::Float64, true);
  return scalar_to_tensor_int(v.to_int(), v.is_bool() ? ScalarType::Bool : ScalarType::Int64,
                              true);
}

Tensor wrapped_as(const Scalar& v, ScalarType dt) {
  if (is_floating(dt)) return wrapped(Scalar(v.to_double()));
  if (dt == ScalarType::Bool) return wrapped(Scalar(v.to_bool()));
  return wrapped(Scalar(v.to_int()));
}

Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
           std::optional<ScalarType> dtype) {
  IValue d = dims.empty() ? IValue() : IValue(dims);
  IValue dt = dtype ? IValue(*dtype) : IValue();
  return sum_op.tensor(x, d, keepdim, dt);
}

Tensor reduce_amax(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return amax_op.tensor(x, dims, keepdim);
}

Tensor reduce_amin(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return amin_op.tensor(x, dims, keepdim);
}

Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return div(reduce_sum(x, dims, keepdim), wrapped(count_of(x.sizes(), dims)));
}

Tensor view(const Tensor& x, const DimVector& sizes) { return view_op.tensor(x, sizes.vec()); }

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  return permute_op.tensor(x, dims);
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return slice_op.tensor(x, dim, start, end, step);
}

Tensor squeeze_dims(const Tensor& x, const std::vector<int64_t>& dims) {
  return squeeze_op.tensor(x, dims);
}

Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  return clamp_op.tensor(x, lo, hi);
}

Tensor iota(int64_t end, Device device) {
  return arange_op.tensor(int64_t(0), end, int64_t(1), ScalarType::Int64, device);
}

Tensor cmp(const char* name, const Tensor& a, const Tensor& b) { return OpRef(name).tensor(a, b); }

// ||x||_p over dims, x already in its compute dtype.
Tensor vector_norm(const Tensor& x, double p, const std::vector<int64_t>& dims, bool keepdim) {
  if (p == 2) return op("sqrt", reduce_sum(mul(x, x), dims, keepdim));
  Tensor ax = op("abs", x);
  if (p == 1) return reduce_sum(ax, dims, keepdim);
  if (std::isinf(p))
    return p > 0 ? reduce_amax(ax, dims, keepdim) : reduce_amin(ax, dims, keepdim);
  // p = 0: the number of nonzero elements.
  if (p == 0) return reduce_sum(convert(cmp("ne", x, scalar(0.0)), x.dtype()), dims, keepdim);
  return pow(reduce_sum(pow(ax, p), dims, keepdim), 1.0 / p);
}

std::vector<int64_t> dims_of(const IValue& dim, int64_t ndim) {
  return grad_ops::reduced_dims(dim, ndim);
}

int64_t count_of(const DimVector& sizes, const std::vector<int64_t>& dims) {
  if (dims.empty()) return compute_numel(sizes);
  const int64_t nd = static_cast<int64_t>(sizes.size());
  int64_t n = 1;
  for (int64_t d : dims) n *= nd == 0 ? 1 : sizes[wrap_dim(d, nd)];
  return n;
}

std::vector<int64_t> last_dims(int64_t nd, size_t k) {
  std::vector<int64_t> dims;
  for (int64_t d = nd - static_cast<int64_t>(k); d < nd; ++d) dims.push_back(d);
  return dims;
}

}  // namespace ignis::decomp

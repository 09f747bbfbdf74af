#include "ignis/core/tensor.h"


namespace ignis {

namespace {
// A tensor's own keys: its device's, FakeTensor for a fake, Complex for a
// complex dtype (Note [Complex tensors], ops/complex.cpp).
DispatchKeySet keys_for(const StorageImpl& storage, ScalarType dtype) {
  DispatchKeySet ks = default_keys_for_device(storage.device().type);
  if (storage.is_fake()) ks = ks.add(DispatchKey::FakeTensor);
  if (is_complex(dtype)) ks = ks.add(DispatchKey::Complex);
  return ks;
}
}  // namespace

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, DimVector sizes, DimVector strides,
                       int64_t offset)
    : storage_(std::move(storage)),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      offset_(offset),
      dtype_(dtype),
      key_set_(keys_for(*storage_, dtype)),
      version_(make_intrusive<VersionCounter>()) {
  inference_ = inference_mode_enabled();
  refresh();
}

TensorImpl::~TensorImpl() = default;

void TensorImpl::set_data_from(const TensorImpl& other) {
  storage_ = other.storage_;
  dtype_ = other.dtype_;
  key_set_ = keys_for(*storage_, dtype_);
  set_geometry(other.sizes_, other.strides_, other.offset_);
}

void TensorImpl::set_geometry(DimVector sizes, DimVector strides, int64_t offset) {
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
  offset_ = offset;
  refresh();
}

void TensorImpl::refresh() {
  numel_ = compute_numel(sizes_);
  // Contiguous in PyTorch's sense: dims of size 1 may have any stride.
  bool contig = true;
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(sizes_.size()) - 1; d >= 0; --d) {
    if (sizes_[d] == 1) continue;
    if (strides_[d] != expected) {
      contig = false;
      break;
    }
    expected *= sizes_[d];
  }
  is_contiguous_ = contig || numel_ == 0;
}

int64_t Tensor::size(int64_t d) const { return sizes()[wrap_dim(d, dim())]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim())]; }

double Tensor::item_double() const {
  IGNIS_CHECK(numel() == 1, "a Tensor with ", numel(),
              " elements cannot be converted to Scalar");
  IGNIS_CHECK(device().is_cpu(), "item() of a tensor on ", device().str(),
              " needs a copy to the cpu first");
  return IGNIS_DISPATCH_ALL(dtype(), "item", [&] {
    return static_cast<double>(static_cast<opmath_t<scalar_t>>(*data<scalar_t>()));
  });
}

int64_t Tensor::item_int() const {
  IGNIS_CHECK(numel() == 1, "a Tensor with ", numel(),
              " elements cannot be converted to Scalar");
  IGNIS_CHECK(device().is_cpu(), "item() of a tensor on ", device().str(),
              " needs a copy to the cpu first");
  return IGNIS_DISPATCH_ALL(dtype(), "item", [&] {
    return static_cast<int64_t>(static_cast<opmath_t<scalar_t>>(*data<scalar_t>()));
  });
}

std::string Tensor::shape_str() const { return ignis::shape_str(sizes()); }

DimVector contiguous_strides(const DimVector& sizes) {
  DimVector strides(sizes.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s *= sizes[d] > 1 ? sizes[d] : 1;
  }
  return strides;
}

int64_t compute_numel(const DimVector& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

int64_t wrap_dim(int64_t dim, int64_t ndim) {
  int64_t lo = ndim > 0 ? -ndim : -1, hi = ndim > 0 ? ndim - 1 : 0;
  IGNIS_CHECK_INDEX(dim >= lo && dim <= hi, "Dimension out of range (expected to be in range of [",
                    lo, ", ", hi, "], but got ", dim, ")");
  return dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim;
}

std::string shape_str(const DimVector& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += str(i ? ", " : "", sizes[i]);
  return s + "]";
}
std::string shape_str(const IntList& sizes) { return shape_str(DimVector(sizes)); }

static void check_sizes(const DimVector& sizes) {
  for (int64_t s : sizes)
    IGNIS_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ",
                shape_str(sizes));
}

// Bytes for `elems` elements of dtype; an overflow (absurd sizes) is an
// error rather than a small allocation that the tensor would overrun.
static size_t checked_nbytes(int64_t elems, ScalarType dtype, bool overflow,
                             const DimVector& sizes) {
  int64_t nbytes = 0;
  overflow |= __builtin_mul_overflow(elems, static_cast<int64_t>(element_size(dtype)), &nbytes);
  IGNIS_CHECK(!overflow, "Storage size calculation overflowed with sizes=", shape_str(sizes));
  return static_cast<size_t>(nbytes);
}

Tensor empty_tensor(const DimVector& sizes, ScalarType dtype, Device device) {
  check_sizes(sizes);
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) overflow |= __builtin_mul_overflow(n, s, &n);
  Storage st = allocate_storage(checked_nbytes(n, dtype, overflow, sizes), device);
  return Tensor(make_intrusive<TensorImpl>(std::move(st), dtype, sizes, contiguous_strides(sizes), 0));
}

Tensor empty_strided_tensor(const DimVector& sizes, const DimVector& strides, ScalarType dtype,
                            Device device) {
  check_sizes(sizes);
  IGNIS_CHECK(sizes.size() == strides.size(), "mismatch in length of strides and shape");
  int64_t extent = 1;
  bool any_zero = false, overflow = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    IGNIS_CHECK(strides[i] >= 0, "as_strided: Negative strides are not supported at the moment, got strides: ",
                shape_str(strides));
    if (sizes[i] == 0) any_zero = true;
    int64_t span;
    overflow |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &span);
    overflow |= __builtin_add_overflow(extent, span, &extent);
  }
  if (any_zero) extent = 0, overflow = false;
  Storage st = allocate_storage(checked_nbytes(extent, dtype, overflow, sizes), device);
  return Tensor(make_intrusive<TensorImpl>(std::move(st), dtype, sizes, strides, 0));
}

Tensor make_view(const Tensor& base, DimVector sizes, DimVector strides, int64_t offset) {
  return make_view(base, base.dtype(), std::move(sizes), std::move(strides), offset);
}

namespace {
thread_local bool tls_inference_mode = false;
}  // namespace

bool inference_mode_enabled() { return tls_inference_mode; }
void set_inference_mode_enabled(bool on) { tls_inference_mode = on; }

Tensor make_view(const Tensor& base, ScalarType dtype, DimVector sizes, DimVector strides,
                 int64_t offset) {
  auto impl = make_intrusive<TensorImpl>(base.impl()->storage(), dtype, std::move(sizes),
                                         std::move(strides), offset);
  impl->share_version_counter(base.impl()->shared_version_counter());
  const intrusive_ptr<TensorImpl>& root = base.impl()->view_base();
  impl->set_view_base(root ? root : base.impl_ptr());
  impl->set_inference(impl->is_inference() || base.impl()->is_inference());
  DispatchKeySet ks = base.key_set().remove(DispatchKey::Complex);
  impl->set_key_set(is_complex(dtype) ? ks.add(DispatchKey::Complex) : ks);
  return Tensor(std::move(impl));
}

Tensor complex_as_pairs(const Tensor& t) {
  IGNIS_INTERNAL_ASSERT(is_complex(t.dtype()), "complex_as_pairs of ", dtype_name(t.dtype()));
  DimVector sz(t.sizes()), st(t.strides());
  for (int64_t& x : st) x *= 2;
  sz.push_back(2);
  st.push_back(1);
  return make_view(t, to_real_type(t.dtype()), std::move(sz), std::move(st),
                   t.storage_offset() * 2);
}

Tensor complex_part(const Tensor& t, int part) {
  Tensor pairs = complex_as_pairs(t);
  DimVector sz(t.sizes()), st(pairs.strides().begin(), pairs.strides().end() - 1);
  return make_view(pairs, pairs.dtype(), std::move(sz), std::move(st),
                   pairs.storage_offset() + part);
}

Tensor scalar_to_tensor(double v, ScalarType dtype, bool wrapped) {
  Tensor t = empty_tensor({}, dtype, Device(DeviceType::CPU));
  IGNIS_DISPATCH_ALL(dtype, "scalar_to_tensor", [&] {
    *t.data<scalar_t>() = static_cast<scalar_t>(static_cast<opmath_t<scalar_t>>(v));
  });
  t.impl()->set_wrapped_number(wrapped);
  return t;
}

Tensor complex_scalar_to_tensor(double re, double im, ScalarType dtype, bool wrapped) {
  IGNIS_INTERNAL_ASSERT(is_complex(dtype), "complex_scalar_to_tensor of ", dtype_name(dtype));
  Tensor t = empty_tensor({}, dtype, Device(DeviceType::CPU));
  if (dtype == ScalarType::ComplexFloat)
    *t.data<Complex<float>>() = {static_cast<float>(re), static_cast<float>(im)};
  else
    *t.data<Complex<double>>() = {re, im};
  t.impl()->set_wrapped_number(wrapped);
  return t;
}

Tensor scalar_to_tensor_int(int64_t v, ScalarType dtype, bool wrapped) {
  Tensor t = empty_tensor({}, dtype, Device(DeviceType::CPU));
  IGNIS_DISPATCH_ALL(dtype, "scalar_to_tensor", [&] {
    *t.data<scalar_t>() = static_cast<scalar_t>(static_cast<opmath_t<scalar_t>>(v));
  });
  t.impl()->set_wrapped_number(wrapped);
  return t;
}

}  // namespace ignis

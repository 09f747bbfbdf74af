// Tensor: a strided view (sizes, strides, storage offset, dtype) of a Storage.
//
// TensorImpl holds the state; Tensor is a one-pointer handle to it. Views share
// the Storage and the VersionCounter of their base, as in PyTorch, so an
// in-place write through any view is seen by all of them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ignis/core/dim_vector.h"
#include "ignis/core/dtype.h"
#include "ignis/core/error.h"
#include "ignis/core/storage.h"
#include "ignis/dispatch/dispatch_key.h"

namespace ignis {

using IntList = std::vector<int64_t>;

// Counts in-place writes to a storage; shared by a tensor and its views.
// Autograd compares it against the value saved with a tensor to detect that a
// saved tensor was modified in place.
class VersionCounter : public RefCounted {
 public:
  explicit VersionCounter(uint64_t start = 0) : version_(start) {}
  uint64_t value() const { return version_.load(std::memory_order_relaxed); }
  void bump() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> version_;
};

// Autograd keeps its per-tensor state (grad, grad_fn, ...) behind this
// interface so that core does not depend on autograd.
struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
  virtual bool requires_grad() const = 0;
};

class TensorImpl : public RefCounted {
 public:
  TensorImpl(Storage storage, ScalarType dtype, DimVector sizes, DimVector strides,
             int64_t offset);
  ~TensorImpl() override;

  const DimVector& sizes() const { return sizes_; }
  const DimVector& strides() const { return strides_; }
  int64_t storage_offset() const { return offset_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  // The device the user sees: the stood-for device of a fake tensor, else
  // device(). Kernels use device(); printing, metadata and Python use this.
  Device user_device() const {
    return storage_->is_fake() ? storage_->fake_device() : storage_->device();
  }
  const Storage& storage() const { return storage_; }
  bool is_contiguous() const { return is_contiguous_; }
  DispatchKeySet key_set() const { return key_set_; }
  void set_key_set(DispatchKeySet ks) { key_set_ = ks; }

  // Address of element 0 (storage data + offset * itemsize). Null on meta.
  void* data() const {
    char* base = static_cast<char*>(storage_->data());
    return base ? base + offset_ * static_cast<int64_t>(element_size(dtype_)) : nullptr;
  }

  // Changes the geometry in place (used by in-place view ops such as
  // squeeze_, and by resize when the storage is large enough).
  void set_geometry(DimVector sizes, DimVector strides, int64_t offset);
  void set_storage(Storage s) { storage_ = std::move(s); }
  // Takes another tensor's storage, geometry and dtype, keeping this one's
  // autograd meta and version counter (torch's set_data: `p.data = t`).
  void set_data_from(const TensorImpl& other);

  // A Python number turned into a 0-dim tensor for an op call: it takes part
  // in type promotion as a scalar ("wrapped number"), not as a tensor.
  bool is_wrapped_number() const { return wrapped_number_; }
  void set_wrapped_number(bool w) { wrapped_number_ = w; }

  VersionCounter& version_counter() const { return *version_; }
  const intrusive_ptr<VersionCounter>& shared_version_counter() const { return version_; }
  void share_version_counter(const intrusive_ptr<VersionCounter>& v) { version_ = v; }

  AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> m) {
    autograd_meta_ = std::move(m);
  }

  // Views: the tensor whose storage this one was made to view (itself never a
  // view): Tensor._base. Null for a tensor that is no view (or a detached one).
  const intrusive_ptr<TensorImpl>& view_base() const { return view_base_; }
  void set_view_base(intrusive_ptr<TensorImpl> b) { view_base_ = std::move(b); }

  // Made while inference mode was on, or a view of such a tensor:
  // Tensor.is_inference(). (torch's restrictions on inference tensors in
  // autograd are not modelled; they behave as tensors made under no_grad.)
  bool is_inference() const { return inference_; }
  void set_inference(bool on) { inference_ = on; }

  // Borrowed pointer to the Python object that wraps this tensor, if any, so
  // that the same TensorImpl always surfaces as the same Python object.
  void* pyobj() const { return pyobj_; }
  void set_pyobj(void* p) { pyobj_ = p; }

 private:
  void refresh();

  Storage storage_;
  DimVector sizes_;
  DimVector strides_;
  int64_t offset_;
  int64_t numel_ = 1;
  ScalarType dtype_;
  bool is_contiguous_ = true;
  bool wrapped_number_ = false;
  bool inference_ = false;
  DispatchKeySet key_set_;
  intrusive_ptr<VersionCounter> version_;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
  intrusive_ptr<TensorImpl> view_base_;
  void* pyobj_ = nullptr;
};

// Inference mode (ignis.inference_mode), thread-local: tensors made while it
// is on are inference tensors (TensorImpl::is_inference). Autograd's grad
// mode is switched off beside it by the Python context.
bool inference_mode_enabled();
void set_inference_mode_enabled(bool on);

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const intrusive_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  const DimVector& sizes() const { return impl_->sizes(); }
  const DimVector& strides() const { return impl_->strides(); }
  int64_t size(int64_t d) const;    // d may be negative
  int64_t stride(int64_t d) const;  // d may be negative
  int64_t dim() const { return impl_->dim(); }
  int64_t numel() const { return impl_->numel(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  ScalarType dtype() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  Device user_device() const { return impl_->user_device(); }
  // A fake tensor (aot/fake.h): metadata with no data, on a meta storage
  // that stands for another device.
  bool is_fake() const { return impl_->storage()->is_fake(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  size_t itemsize() const { return element_size(dtype()); }
  void* data_ptr() const { return impl_->data(); }
  template <typename T>
  T* data() const { return static_cast<T*>(impl_->data()); }
  DispatchKeySet key_set() const { return impl_->key_set(); }

  // Element 0 as a double / int64 (for 1-element tensors on the CPU).
  double item_double() const;
  int64_t item_int() const;

  std::string shape_str() const;  // "[2, 3]"

 private:
  intrusive_ptr<TensorImpl> impl_;
};

using TensorList = std::vector<Tensor>;

// Fresh, uninitialised, contiguous tensor.
Tensor empty_tensor(const DimVector& sizes, ScalarType dtype, Device device);
// Fresh tensor with the given strides (which must not overlap).
Tensor empty_strided_tensor(const DimVector& sizes, const DimVector& strides, ScalarType dtype,
                            Device device);
// A view of `base`'s storage with new geometry; shares the version counter.
Tensor make_view(const Tensor& base, DimVector sizes, DimVector strides, int64_t offset);
// A view of base's storage with another dtype (view_as_real, view_as_complex):
// sizes, strides and offset count elements of `dtype`.
Tensor make_view(const Tensor& base, ScalarType dtype, DimVector sizes, DimVector strides,
                 int64_t offset);
// A complex tensor's numbers as (real, imaginary) pairs: a view of its
// storage in the real type with a last dim of 2 (view_as_real's geometry),
// and one part of them (0 real, 1 imaginary) as a view of t's shape. No
// dispatch: kernels use them (Note [Complex tensors], ops/complex.cpp).
Tensor complex_as_pairs(const Tensor& t);
Tensor complex_part(const Tensor& t, int part);
// 0-dim tensor holding a Python number (marked as a wrapped number).
Tensor scalar_to_tensor(double v, ScalarType dtype, bool wrapped = false);
Tensor scalar_to_tensor_int(int64_t v, ScalarType dtype, bool wrapped = false);
// 0-dim complex tensor (a Python complex, wrapped: it promotes like one).
Tensor complex_scalar_to_tensor(double re, double im, ScalarType dtype, bool wrapped = false);

DimVector contiguous_strides(const DimVector& sizes);
int64_t compute_numel(const DimVector& sizes);
// Wraps a possibly negative dim into [0, ndim); IndexError naming the range
// otherwise. A 0-dim tensor accepts dims -1 and 0.
int64_t wrap_dim(int64_t dim, int64_t ndim);
std::string shape_str(const DimVector& sizes);
std::string shape_str(const IntList& sizes);

}  // namespace ignis

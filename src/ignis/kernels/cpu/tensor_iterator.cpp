#include "ignis/kernels/cpu/tensor_iterator.h"

#include <algorithm>

#include <omp.h>

#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/parallel.h"

namespace ignis {

// ---------------------------------------------------------------------------
// Type promotion
// ---------------------------------------------------------------------------
namespace {

// PyTorch's combine_categories(higher, lower).
ScalarType combine(ScalarType higher, ScalarType lower) {
  if (higher == ScalarType::Undefined) return lower;
  if (lower == ScalarType::Undefined) return higher;
  if (is_complex(higher)) return higher;
  // A complex lower category wins, keeping a floating higher's precision.
  if (is_complex(lower)) return is_floating(higher) ? to_complex_type(higher) : lower;
  if (is_floating(higher)) return higher;
  if (higher == ScalarType::Bool || is_floating(lower)) return promote_types(higher, lower);
  return higher;
}
}  // namespace

ScalarType result_type(const std::vector<const Tensor*>& operands) {
  ScalarType dim_r = ScalarType::Undefined, zero_r = ScalarType::Undefined,
             wrapped_r = ScalarType::Undefined;
  for (const Tensor* t : operands) {
    if (!t || !t->defined()) continue;
    ScalarType dt = t->dtype();
    if (t->impl()->is_wrapped_number()) {
      // A Python float counts as the default dtype, a Python complex as its
      // complex type, a Python int as int64.
      if (is_floating(dt)) dt = default_dtype();
      else if (is_complex(dt)) dt = to_complex_type(default_dtype());
      wrapped_r = promote_types(wrapped_r, dt);
    } else if (t->dim() == 0) {
      zero_r = promote_types(zero_r, dt);
    } else {
      dim_r = promote_types(dim_r, dt);
    }
  }
  return combine(dim_r, combine(zero_r, wrapped_r));
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating(from) && is_integral(to, false)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

DimVector broadcast_shapes(const DimVector& a, const DimVector& b) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    IGNIS_CHECK(da == db || da == 1 || db == 1, "The size of tensor a (", da,
                ") must match the size of tensor b (", db, ") at non-singleton dimension ", i,
                " (shapes ", shape_str(a), " and ", shape_str(b), ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Build
// ---------------------------------------------------------------------------
void TensorIterator::build(const IterConfig& cfg, Device device) {
  compute_shape(cfg);
  compute_types(cfg);
  // CUDA kernels convert each input as they load it (kernels/cuda/pointwise.h),
  // to the same values the cast would give, without the temporaries.
  if (!device.is_meta() && !device.is_cuda()) cast_inputs();
  compute_strides_and_perm();
  allocate_outputs(device);
  coalesce();
}

void TensorIterator::compute_shape(const IterConfig& cfg) {
  bool first = true;
  for (auto& op : operands_) {
    if (op.is_output) continue;
    const Tensor& t = op.tensor;
    broadcast_shape_ = first ? t.sizes() : broadcast_shapes(broadcast_shape_, t.sizes());
    first = false;
  }
  for (auto& op : operands_) {
    if (!op.is_output) continue;
    if (!op.tensor.defined()) {
      op.will_allocate = true;
      continue;
    }
    if (first) {
      broadcast_shape_ = op.tensor.sizes();
      first = false;
      continue;
    }
    IGNIS_CHECK(op.tensor.sizes() == broadcast_shape_, cfg.op_name, ": output with shape ",
                op.tensor.shape_str(), " doesn't match the broadcast shape ",
                shape_str(broadcast_shape_));
  }
  numel_ = compute_numel(broadcast_shape_);
}

void TensorIterator::compute_types(const IterConfig& cfg) {
  if (cfg.common_dtype) {
    common_dtype_ = *cfg.common_dtype;
  } else {
    std::vector<const Tensor*> ins;
    for (auto& op : operands_)
      if (!op.is_output) ins.push_back(&op.tensor);
    common_dtype_ = result_type(ins);
    if (common_dtype_ == ScalarType::Undefined) common_dtype_ = operands_[0].tensor.dtype();
  }
  if (cfg.promote_int_to_float && !is_floating(common_dtype_)) common_dtype_ = default_dtype();
  ScalarType out_dtype = cfg.output_dtype ? *cfg.output_dtype : common_dtype_;
  for (auto& op : operands_) {
    if (op.is_output) {
      if (op.will_allocate) {
        op.target_dtype = out_dtype;
      } else {
        IGNIS_CHECK(can_cast(out_dtype, op.tensor.dtype()), "result type ",
                    scalar_type_name(out_dtype), " can't be cast to the desired output type ",
                    scalar_type_name(op.tensor.dtype()));
        op.target_dtype = out_dtype;
        if (op.tensor.dtype() != out_dtype) {
          // The kernel writes out_dtype: compute into a temporary and copy
          // into the user's tensor in finish().
          IGNIS_INTERNAL_ASSERT(num_outputs_ == 1, "dtype-changing store with several outputs");
          copy_back_ = op.tensor;
          op.tensor = Tensor();
          op.will_allocate = true;
        }
      }
    } else {
      op.target_dtype =
          cfg.keep_input_dtypes || !cfg.promote_inputs ? op.tensor.dtype() : common_dtype_;
    }
  }
}

void TensorIterator::cast_inputs() {
  for (auto& op : operands_) {
    if (!op.is_output && op.tensor.dtype() != op.target_dtype)
      op.tensor = to_dtype_copy(op.tensor, op.target_dtype);
  }
}

void TensorIterator::compute_strides_and_perm() {
  const int nd = static_cast<int>(broadcast_shape_.size());
  for (auto& op : operands_) {
    op.strides = DimVector(nd, 0);
    if (op.will_allocate) continue;
    const Tensor& t = op.tensor;
    int offset = nd - static_cast<int>(t.dim());
    int64_t isz = static_cast<int64_t>(element_size(t.dtype()));
    for (int d = 0; d < t.dim(); ++d)
      op.strides[offset + d] = t.sizes()[d] == 1 ? 0 : t.strides()[d] * isz;
  }
  // perm_[0] is the fastest-moving dim, ordered by the operands' strides.
  auto should_swap = [&](int d0, int d1) {
    for (auto& op : operands_) {
      if (op.will_allocate) continue;
      int64_t s0 = op.strides[d0], s1 = op.strides[d1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (broadcast_shape_[d0] > broadcast_shape_[d1]) return 1;
    }
    return 0;
  };
  perm_ = order_dims(nd, should_swap);
}

void TensorIterator::allocate_outputs(Device device) {
  const int nd = static_cast<int>(broadcast_shape_.size());
  for (auto& op : operands_) {
    if (!op.is_output) continue;
    if (op.will_allocate) {
      // Contiguous in perm order, expressed in the original dim order.
      DimVector strides(nd);
      int64_t s = 1;
      for (int i = 0; i < nd; ++i) {
        int d = perm_[i];
        strides[d] = s;
        s *= std::max<int64_t>(broadcast_shape_[d], 1);
      }
      op.tensor = empty_strided_tensor(broadcast_shape_, strides, op.target_dtype, device);
      int64_t isz = static_cast<int64_t>(element_size(op.target_dtype));
      for (int d = 0; d < nd; ++d)
        op.strides[d] = broadcast_shape_[d] == 1 ? 0 : strides[d] * isz;
    }
  }
}

void TensorIterator::coalesce() {
  const int nd = static_cast<int>(broadcast_shape_.size());
  // Permute shape and strides into iteration order.
  DimVector shape(nd);
  for (int i = 0; i < nd; ++i) shape[i] = broadcast_shape_[perm_[i]];
  for (auto& op : operands_) {
    DimVector s(nd);
    for (int i = 0; i < nd; ++i) s[i] = op.strides[perm_[i]];
    op.strides = std::move(s);
  }
  // Merge dim i+1 into dim i when every operand steps through both as one.
  if (nd > 0) {
    int out = 0;
    for (int i = 1; i < nd; ++i) {
      bool can = true;
      for (auto& op : operands_) {
        if (shape[out] == 1 || shape[i] == 1) continue;
        if (op.strides[out] * shape[out] != op.strides[i]) {
          can = false;
          break;
        }
      }
      if (can) {
        for (auto& op : operands_) {
          if (shape[out] == 1) op.strides[out] = op.strides[i];
        }
        shape[out] *= shape[i];
      } else {
        ++out;
        shape[out] = shape[i];
        for (auto& op : operands_) op.strides[out] = op.strides[i];
      }
    }
    shape.resize(out + 1);
    for (auto& op : operands_) op.strides.resize(out + 1);
  }
  if (shape.empty()) {  // 0-dim: one element
    shape.push_back(1);
    for (auto& op : operands_) op.strides.push_back(0);
  }
  shape_ = std::move(shape);
}

void TensorIterator::finish() {
  if (copy_back_.defined()) {
    copy_into(copy_back_, operands_[0].tensor);
    operands_[0].tensor = copy_back_;
    copy_back_ = Tensor();
  }
}

// ---------------------------------------------------------------------------
// Loops
// ---------------------------------------------------------------------------
void TensorIterator::serial_for_each(Loop loop, void* ctx, int64_t begin, int64_t end) const {
  if (begin >= end) return;
  const int nt = ntensors();
  const int nd = static_cast<int>(shape_.size());
  char* ptrs[8];
  int64_t inner_strides[8];
  IGNIS_INTERNAL_ASSERT(nt <= 8);
  for (int i = 0; i < nt; ++i) inner_strides[i] = operands_[i].strides[0];
  // Multi-index of `begin` over dims 1..nd-1 and offset in dim 0.
  int64_t idx[16] = {0};
  IGNIS_INTERNAL_ASSERT(nd <= 16, "more than 16 dims after coalescing");
  int64_t rem = begin;
  for (int d = 0; d < nd; ++d) {
    idx[d] = rem % shape_[d];
    rem /= shape_[d];
  }
  int64_t pos = begin;
  while (pos < end) {
    for (int i = 0; i < nt; ++i) {
      char* p = static_cast<char*>(operands_[i].tensor.data_ptr());
      for (int d = 0; d < nd; ++d) p += idx[d] * operands_[i].strides[d];
      ptrs[i] = p;
    }
    int64_t n = std::min(shape_[0] - idx[0], end - pos);
    loop(ptrs, inner_strides, n, ctx);
    pos += n;
    idx[0] += n;
    for (int d = 0; d < nd - 1 && idx[d] >= shape_[d]; ++d) {
      idx[d] = 0;
      ++idx[d + 1];
    }
  }
}

void TensorIterator::for_each(Loop loop, void* ctx, int64_t grain) {
  if (numel_ == 0) return;
  int nthreads = get_num_threads();
  if (numel_ < grain || nthreads <= 1 || omp_in_parallel()) {
    serial_for_each(loop, ctx, 0, numel_);
    return;
  }
  int64_t chunks = std::min<int64_t>(nthreads, (numel_ + grain - 1) / grain);
#pragma omp parallel num_threads(cpu::team_threads(chunks))
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t per = (numel_ + nt - 1) / nt;
    int64_t b = t * per, e = std::min(numel_, b + per);
    serial_for_each(loop, ctx, b, e);
  }
}

int get_num_threads() { return omp_get_max_threads(); }
void set_num_threads(int n) {
  IGNIS_CHECK_VALUE(n > 0, "set_num_threads: expected a positive number of threads, got ", n);
  omp_set_num_threads(n);
}

}  // namespace ignis

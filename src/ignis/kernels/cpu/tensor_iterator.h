// TensorIterator: the shared machinery of elementwise kernels.
//
// It broadcasts the inputs, decides the result dtype by PyTorch's promotion
// rules, allocates outputs whose memory layout follows the inputs' (so that
// `x.t() + 1` is laid out like `x.t()`), orders and merges dimensions so that
// the innermost loop is the longest stride-1 run, and runs a 1-D inner loop
// over the whole iteration space, split across threads when it is large.
// The same object serves the meta rule (shapes and dtypes only) and the
// compute kernel (the loops).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "ignis/core/tensor.h"

namespace ignis {

// PyTorch's result_type: dimensioned tensors outrank 0-dim tensors, which
// outrank wrapped Python numbers, except that a higher category (bool <
// integer < float) in a lower-ranked operand still lifts the result.
ScalarType result_type(const std::vector<const Tensor*>& operands);
bool can_cast(ScalarType from, ScalarType to);
DimVector broadcast_shapes(const DimVector& a, const DimVector& b);

// Orders dims fastest-moving first, as PyTorch's reorder_dimensions does:
// starting from C order, an insertion sort where should_swap(d0, d1) > 0
// moves d1 before d0, < 0 stops, and 0 ("can't tell", e.g. broadcast dims)
// looks further.
template <typename ShouldSwap>
std::vector<int> order_dims(int nd, ShouldSwap should_swap) {
  std::vector<int> perm(nd);
  for (int i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
  for (int i = 1; i < nd; ++i) {
    int d1 = i;
    for (int d0 = i - 1; d0 >= 0; --d0) {
      int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  return perm;
}

struct IterConfig {
  const char* op_name = "op";
  // Cast inputs to the common dtype before the loops run.
  bool promote_inputs = true;
  // Integer/bool common dtype becomes the default float dtype (true division).
  bool promote_int_to_float = false;
  // Output dtype when it differs from the common dtype (comparisons: Bool).
  std::optional<ScalarType> output_dtype;
  // Forced common (compute) dtype.
  std::optional<ScalarType> common_dtype;
  // Inputs keep their dtypes (copy: the loop converts element by element).
  bool keep_input_dtypes = false;
};

class TensorIterator {
 public:
  // 1-D inner loop: data[i] is operand i's pointer (outputs first), strides[i]
  // its byte stride, n the element count.
  using Loop = void (*)(char** data, const int64_t* strides, int64_t n, void* ctx);

  void add_output(const Tensor& t) { operands_.push_back({t, true}); ++num_outputs_; }
  void add_input(const Tensor& t) { operands_.push_back({t, false}); }

  // Broadcasts, types, casts inputs to their compute dtype (except on meta)
  // and allocates (on `device`) any undefined outputs.
  void build(const IterConfig& cfg, Device device);

  ScalarType common_dtype() const { return common_dtype_; }
  const Tensor& output(int i = 0) const { return operands_[i].tensor; }
  const Tensor& input(int i) const { return operands_[num_outputs_ + i].tensor; }
  int ntensors() const { return static_cast<int>(operands_.size()); }
  int noutputs() const { return num_outputs_; }
  int64_t numel() const { return numel_; }
  const DimVector& shape() const { return broadcast_shape_; }
  // True when the computed result must be copied into the real output
  // (an in-place op whose output dtype differs from the compute dtype).
  bool needs_output_copy() const { return copy_back_.defined(); }

  // Runs `loop` over the iteration space; in parallel when numel is large.
  void for_each(Loop loop, void* ctx, int64_t grain = 32768);
  // Single-threaded run over linear range [begin, end).
  void serial_for_each(Loop loop, void* ctx, int64_t begin, int64_t end) const;
  // Finishes an in-place op with a dtype-changing store.
  void finish();

  // Iteration geometry after reordering and coalescing (dim 0 fastest).
  const DimVector& iter_shape() const { return shape_; }
  const DimVector& iter_strides(int operand) const { return operands_[operand].strides; }
  char* data_ptr(int operand) const { return static_cast<char*>(operands_[operand].tensor.data_ptr()); }

 private:
  struct Operand {
    Tensor tensor;
    bool is_output;
    bool will_allocate = false;
    ScalarType target_dtype = ScalarType::Undefined;
    DimVector strides;  // bytes, in iteration order
  };
  void compute_shape(const IterConfig& cfg);
  void compute_types(const IterConfig& cfg);
  void cast_inputs();
  void compute_strides_and_perm();
  void allocate_outputs(Device device);
  void coalesce();

  std::vector<Operand> operands_;
  int num_outputs_ = 0;
  DimVector broadcast_shape_;
  DimVector shape_;     // iteration shape (perm order, coalesced)
  std::vector<int> perm_;
  int64_t numel_ = 0;
  ScalarType common_dtype_ = ScalarType::Undefined;
  Tensor copy_back_;  // the user's output when we compute into a temporary
};

// Number of threads kernels use (OpenMP); set_num_threads changes it.
int get_num_threads();
void set_num_threads(int n);

}  // namespace ignis

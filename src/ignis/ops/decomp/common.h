// What the decompositions in this folder share: the Args of one call (typed
// access, the op's own checks, outputs of the op's dtypes) and helpers that
// each call one op through the dispatcher, in the style of the derivative
// formulas (autograd/formula.h, whose grad_ops helpers are used too).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ignis/autograd/formula.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/op_def.h"

namespace ignis::decomp {

// One call of a decomposition.
//
// The constructor runs the op's own meta rule (structured ops) or view
// kernel (view ops, which only compute geometry and call no ops) on meta
// copies of the tensor arguments, below every layer: the call then
// fails as the op would, and the dtype and sizes of each output are known
// before any part runs. ret() leaves the outputs on the stack; a result
// computed in float32 for a float16/bfloat16 output is rounded there, once.
// Any other mismatch with the meta outputs is an internal error naming the
// op, so a decomposition that drifts from its op fails loudly in tests.
class Args {
 public:
  Args(const OpHandle& op, Stack& s, bool check = true);

  const IValue& operator[](size_t i) const { return s_[i]; }
  const Tensor& tensor(size_t i) const { return s_[i].to_tensor(); }
  Tensor opt(size_t i) const { return s_[i].to_opt_tensor(); }
  int64_t int_arg(size_t i) const { return s_[i].to_int(); }
  double double_arg(size_t i) const { return s_[i].to_double(); }
  bool bool_arg(size_t i) const { return s_[i].to_bool(); }
  Scalar scalar(size_t i) const { return s_[i].to_scalar(); }
  const std::string& str(size_t i) const { return s_[i].to_string(); }
  const std::vector<int64_t>& ints(size_t i) const { return s_[i].to_int_list(); }
  const std::string& name() const { return op_.schema().name; }
  const std::string& overload() const { return op_.schema().overload; }

  // Output j as the op's meta rule gives it (checked calls only).
  ScalarType dtype(size_t j = 0) const;
  const DimVector& sizes(size_t j = 0) const;

  // Leaves the outputs on the stack (an undefined tensor for a None output).
  void ret(std::vector<Tensor> outs);
  void ret(Tensor out) { ret(std::vector<Tensor>{std::move(out)}); }
  // For ops returning Tensor[].
  void ret_list(std::vector<Tensor> outs);

 private:
  Tensor checked(Tensor t, size_t j) const;
  bool aliases_input(const Tensor& t) const;

  const OpHandle& op_;
  Stack& s_;
  std::vector<IValue> meta_;  // the outputs of the meta run (empty if unchecked)
};

// t itself, unless it shares `of`'s storage: then a copy. For results of
// non-view ops built from views (reshape, slices) that may alias an input.
Tensor fresh(const Tensor& t, const Tensor& of);

// ---- dtypes -----------------------------------------------------------------------
// The type arithmetic for a result of dtype t is carried out in (float32
// for float16/bfloat16), as the kernels' opmath_t.
ScalarType opmath(ScalarType t);
// t as dtype dt (_to_copy; t itself when it already is).
Tensor convert(const Tensor& t, ScalarType dt);
// An operand of an op whose result has dtype `out`, ready for its math: t
// converted to `out` (as a TensorIterator converts inputs to the common
// dtype), then to opmath(out). Wrapped numbers and undefined tensors pass
// unchanged (wrapped numbers promote as scalars, as they do in the kernel).
Tensor up(const Tensor& t, ScalarType out);

// ---- scalars ------------------------------------------------------------------------
// A Python number as a wrapped 0-dim tensor, keeping its kind (an int does
// not turn an integer tensor into a float one).
Tensor wrapped(const Scalar& v);
// A Python number as an operand of math in dtype dt: converted to dt's kind
// first, as the kernels read it (value.to<T>()).
Tensor wrapped_as(const Scalar& v, ScalarType dt);

// ---- core ops ---------------------------------------------------------------------------
// sum.dim_IntList over `dims` (every dim when empty, as the op reads []),
// optionally accumulating into dtype.
Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
           std::optional<ScalarType> dtype = std::nullopt);
Tensor reduce_amax(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);
Tensor reduce_amin(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);
// The mean over dims of x (already in its compute dtype): sum / count.
Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);
Tensor view(const Tensor& x, const DimVector& sizes);
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor squeeze_dims(const Tensor& x, const std::vector<int64_t>& dims);
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi);
Tensor iota(int64_t end, Device device);  // int64 0, 1, ..., end - 1
// ||x||_p over dims, x already in its compute dtype (p = 2, 1, 0, +-inf or
// any other number), as the norm kernel computes it.
Tensor vector_norm(const Tensor& x, double p, const std::vector<int64_t>& dims, bool keepdim);
// Elementwise comparisons and where, by name: cmp("lt", a, b).
Tensor cmp(const char* name, const Tensor& a, const Tensor& b);

// ---- argument helpers ----------------------------------------------------------------------
// The dims an `int[]?` argument names, wrapped (every dim for None or []).
std::vector<int64_t> dims_of(const IValue& dim, int64_t ndim);
// The number of elements the reduction over dims covers.
int64_t count_of(const DimVector& sizes, const std::vector<int64_t>& dims);
// The last k of nd dims.
std::vector<int64_t> last_dims(int64_t nd, size_t k);

}  // namespace ignis::decomp

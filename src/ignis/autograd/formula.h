// What a derivative formula sees (GradCtx), and the small op helpers the
// formulas in the op family files are written with.
//
// A formula is declared with its op:
//   def("mul(Tensor self, Tensor other) -> Tensor")...derivative(mul_bw, "self, other");
// The second argument names the inputs ("self", "other", ...) and outputs
// ("result", "result1", ...) backward needs; only those are saved, so an
// in-place change to any other input is not an error, as in PyTorch. A saved
// value is version-checked when the formula reads it (in, opt_in, in_list,
// result), so a formula reads a value only for the gradients that need it
// (inside `if (c.needs_grad(i))`): torch saves `other` of mul only when
// self needs a gradient, and a write to it is an error only then.
// Formulas call ops through the dispatcher, so with create_graph=True they
// are themselves recorded and can be differentiated again.
//
// The gradient a formula returns for a tensor input may have the broadcast
// shape of the op's output or another dtype: the caller sums it down to the
// input's shape and casts it to the input's dtype.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ignis/autograd/node.h"
#include "ignis/dispatch/dispatcher.h"

namespace ignis {

struct GradCtx {
  const OpHandle& op;
  // The call's arguments; Tensor arguments that were not saved are None.
  const Stack& args;
  // Geometry of every tensor argument (one entry per tensor of a list).
  const std::vector<std::vector<autograd::TensorGeom>>& geom;
  const std::vector<Tensor>& results;  // saved outputs; undefined if not saved
  const std::vector<Tensor>& grads;    // gradient of each output (zeros if none)
  uint64_t needs;                      // bit i: argument i needs a gradient
  std::vector<std::vector<Tensor>>& out;

  bool needs_grad(int i) const { return (needs >> i) & 1; }
  // Raise when saved input i (output j) was modified in place since it was
  // saved; called on every read below. Empty: no check.
  std::function<void(int)> check_input, check_result;

  // A saved input (an internal error names the op if it was not declared saved).
  const Tensor& in(int i) const {
    IGNIS_INTERNAL_ASSERT(args[i].is_tensor(), "derivative of ", op.name(), " reads argument ",
                          i, " which its declaration does not save");
    if (check_input) check_input(i);
    return args[i].to_tensor();
  }
  Tensor opt_in(int i) const {
    if (check_input) check_input(i);
    return args[i].to_opt_tensor();
  }
  const std::vector<Tensor>& in_list(int i) const {
    if (check_input) check_input(i);
    return args[i].to_tensor_list();
  }
  const Tensor& grad(int j = 0) const { return grads[j]; }
  const Tensor& result(int j = 0) const {
    IGNIS_INTERNAL_ASSERT(results[j].defined(), "derivative of ", op.name(), " reads output ", j,
                          " which its declaration does not save");
    if (check_result) check_result(j);
    return results[j];
  }
  const DimVector& sizes(int i) const { return geom[i][0].sizes; }
  // The strides of saved input i, read without the version check: layout is
  // metadata that an in-place write leaves alone, and a formula may choose
  // how to compute a gradient by it (mm's products) without reading the
  // values (which stay unsaved for AOT when no formula reads them).
  const DimVector& strides(int i) const {
    IGNIS_INTERNAL_ASSERT(args[i].is_tensor(), "derivative of ", op.name(), " reads the strides "
                          "of argument ", i, " which its declaration does not save");
    return args[i].to_tensor().strides();
  }
  ScalarType dtype(int i) const { return geom[i][0].dtype; }
  int64_t int_arg(int i) const { return args[i].to_int(); }
  double double_arg(int i) const { return args[i].to_double(); }
  bool bool_arg(int i) const { return args[i].to_bool(); }
  Scalar scalar(int i) const { return args[i].to_scalar(); }
  const std::vector<int64_t>& int_list(int i) const { return args[i].to_int_list(); }
  // Sets the gradient of tensor argument i (ignored unless needs_grad(i)).
  void set(int i, Tensor g) {
    if (needs_grad(i)) out[i] = {std::move(g)};
  }
  // Gradients of the tensors of a Tensor[] argument, in order.
  void set_list(int i, std::vector<Tensor> gs) {
    if (needs_grad(i)) out[i] = std::move(gs);
  }
};

// Formulas shared between families (binary.cpp's maximum/minimum serve
// reduction.cpp's max.other/min.other).
void maximum_bw(GradCtx& c);
void minimum_bw(GradCtx& c);

// Helpers for formulas: each calls one op through the dispatcher.
namespace grad_ops {
// A Python number as a 0-dim "wrapped number" tensor (promotes as a scalar).
Tensor scalar(double v);
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, double s);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& a);
Tensor pow(const Tensor& a, double e);
Tensor pow(const Tensor& a, const Tensor& e);
Tensor sq(const Tensor& a);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor zeros_like(const Tensor& a);
Tensor zeros(const DimVector& sizes, ScalarType dtype, Device device);
Tensor ones_like(const Tensor& a);
Tensor expand(const Tensor& a, const DimVector& sizes);
Tensor reshape(const Tensor& a, const DimVector& sizes);
Tensor sum_to(const Tensor& g, const DimVector& sizes);
Tensor sum_dims(const Tensor& g, const std::vector<int64_t>& dims, bool keepdim);
Tensor unsqueeze(const Tensor& a, int64_t dim);
Tensor conj_t(const Tensor& a);  // transpose of the last two dims
Tensor to_dtype(const Tensor& a, ScalarType dt);
Tensor to_device(const Tensor& a, Device device);
// Call any op by name with the given arguments (defaults filled in).
template <typename... Args>
Tensor op(const char* name, Args&&... args) {
  return OpRef(name).tensor(std::forward<Args>(args)...);
}
// A zero tensor of `sizes` with g written at positions start, start+step, ...
// along dim (the backward of slicing); differentiable in g.
Tensor embed_slice(const Tensor& g, const DimVector& sizes, int64_t dim, int64_t start,
                   int64_t step);
// For ops whose derivative is easiest as that of a decomposition: `f`
// recomputes the op from its tensor arguments (indexed like the op's
// arguments; undefined where not a saved tensor) with differentiable ops, and
// the gradients of the arguments in `which` are taken through it. With
// create_graph the recomputation is recorded on the original inputs, so
// double backward works too.
using Decomposition = std::function<Tensor(const std::vector<Tensor>& in)>;
void vjp_decomposition(GradCtx& c, std::initializer_list<int> which, const Decomposition& f);
// The same for an op with several differentiable outputs: `f` returns the
// first outputs.size() outputs in order, and output j is weighted by grad(j)
// (the fused recurrent cells: h and c, not the workspace).
using Decompositions = std::function<std::vector<Tensor>(const std::vector<Tensor>& in)>;
void vjp_decomposition_outputs(GradCtx& c, std::initializer_list<int> which,
                               const Decompositions& f);
// Restores reduced dims (keepdim=False) so that g broadcasts against the input.
Tensor unreduce(const Tensor& g, const DimVector& in_sizes, const std::vector<int64_t>& dims,
                bool keepdim);
// The dims a dim-list argument reduces (all dims for None or []).
std::vector<int64_t> reduced_dims(const IValue& dim, int64_t ndim);
}  // namespace grad_ops

}  // namespace ignis

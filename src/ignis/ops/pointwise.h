// Meta rules shared by the pointwise families (unary, binary, ternary).
#pragma once

#include <memory>

#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/ops/op_def.h"

namespace ignis {

enum class DtypeRule : uint8_t {
  Promote,         // result_type of the inputs (add, mul, neg, abs, ...)
  PromoteToFloat,  // integers and bool become the default float (exp, div)
  BoolOut,         // compute in the promoted type, write bool (eq, isnan)
  LogicalOut,      // inputs keep their dtypes (read as truth values), write bool
  PromoteWithInt,  // as if combined with a Python int: bool becomes int64 (square)
};

// In-place writes into a tensor whose elements alias each other (a stride-0
// expanded dim) are refused, as in PyTorch: the result would depend on the
// order of the writes.
void check_no_internal_overlap(const Tensor& t);
// ...nor from an input that shares some but not all of its memory with the
// output (x.add_(x.t())): the result would depend on the order of the loop.
void check_no_partial_overlap(const Tensor& out, const Tensor& in);

// Builds c.iter over the tensor arguments at `inputs` and allocates the
// output (or, for in-place ops, checks that args[0] can hold the result).
void pointwise_meta(OpCall& c, std::initializer_list<int> inputs, DtypeRule rule, bool inplace);

template <DtypeRule R, bool Inplace>
void unary_meta(OpCall& c) { pointwise_meta(c, {0}, R, Inplace); }
template <DtypeRule R, bool Inplace>
void binary_meta(OpCall& c) { pointwise_meta(c, {0, 1}, R, Inplace); }
template <DtypeRule R, bool Inplace>
void ternary_meta(OpCall& c) { pointwise_meta(c, {0, 1, 2}, R, Inplace); }

}  // namespace ignis

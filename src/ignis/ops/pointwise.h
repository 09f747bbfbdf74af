// Meta rules shared by the pointwise families (unary, binary, ternary).
#pragma once

#include <memory>
#include <string>
#include <vector>

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

// The CUDA kernel of a pointwise op (kernels/cuda/pointwise.h): runs the
// scalar function `fn` over c.iter in `compute`, the dtype the CPU kernel
// dispatches on, after checking it against `dtypes` (the CPU dispatch's set,
// as kernels/cuda/pointwise.h's k*Dtypes bits) so that both devices refuse
// the same dtypes with the same error. `scalars` are fn's trailing
// arguments; fn reads the iterator's first `nargs` inputs (-1: all).
void cuda_pointwise(OpCall& c, const char* fn, ScalarType compute, uint32_t dtypes,
                    std::vector<Scalar> scalars = {}, int nargs = -1);
// Records that op `op` runs `fn` on CUDA for `dtypes`, so that a test can
// compile every variant without a GPU (cuda::declared_pointwise()).
void declare_cuda_pointwise(const std::string& op, const char* fn, int nargs, int nscalars,
                            uint32_t dtypes, bool bool_out = false);

template <DtypeRule R, bool Inplace>
void unary_meta(OpCall& c) { pointwise_meta(c, {0}, R, Inplace); }
template <DtypeRule R, bool Inplace>
void binary_meta(OpCall& c) { pointwise_meta(c, {0, 1}, R, Inplace); }
template <DtypeRule R, bool Inplace>
void ternary_meta(OpCall& c) { pointwise_meta(c, {0, 1, 2}, R, Inplace); }

}  // namespace ignis

// For CPU kernels written for float32 and float64 only (convolution,
// pooling, batch norm): 16-bit float arguments are computed in float32 and
// the result rounded once into the op's output, as torch's CPU kernels
// accumulate in float for them. Integer arguments (the ops that accept
// them: convolution, max pooling) are computed in float64, exact while
// values and sums stay within 2^53.
#pragma once

#include "ignis/core/tensor.h"
#include "ignis/kernels/cpu/copy.h"

namespace ignis {

// The dtype a kernel computes an op of dtype `t` in.
inline ScalarType compute_dtype(ScalarType t) {
  return t == ScalarType::Float64 || is_integral(t, false) ? ScalarType::Float64
                                                          : ScalarType::Float32;
}

// `t` contiguous in dtype `dt` (itself when it already is; undefined stays so).
inline Tensor dense(const Tensor& t, ScalarType dt) {
  if (!t.defined() || (t.dtype() == dt && t.is_contiguous())) return t;
  Tensor out = empty_tensor(t.sizes(), dt, t.device());
  copy_into(out, t);
  return out;
}

// Where a kernel writes `out`: out itself when it has dtype `dt`, else a
// scratch tensor that finish() copies into out.
inline Tensor scratch_for(const Tensor& out, ScalarType dt) {
  if (!out.defined() || out.dtype() == dt) return out;
  return empty_tensor(out.sizes(), dt, out.device());
}
// As scratch_for, for a kernel that writes contiguous memory: out itself only
// when it is also contiguous (a channels-last out gets a contiguous scratch,
// laid out by finish()).
inline Tensor contiguous_scratch_for(const Tensor& out, ScalarType dt) {
  if (!out.defined() || (out.dtype() == dt && out.is_contiguous())) return out;
  return empty_tensor(out.sizes(), dt, out.device());
}
inline void finish(const Tensor& out, const Tensor& scratch) {
  if (out.defined() && !out.is_same(scratch)) copy_into(out, scratch);
}

}  // namespace ignis

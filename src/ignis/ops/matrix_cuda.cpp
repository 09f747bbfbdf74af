#include "ignis/ops/matrix_cuda.h"

#include "ignis/kernels/cuda/gemm.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis {

namespace {

// torch's names for the CUDA kernels in its "not implemented for" message.
void check_dtype(ScalarType t, const char* kernel) {
  if (t != ScalarType::Float32 && t != ScalarType::Float64 && t != ScalarType::Float16 &&
      t != ScalarType::BFloat16)
    IGNIS_NOT_IMPLEMENTED("\"", kernel, "\" not implemented for '", scalar_type_name(t), "'");
}

// [m, n] seen as a batch of one [1, m, n].
Tensor as_batch(const Tensor& t) {
  DimVector sz = t.sizes(), st = t.strides();
  sz.insert(0, 1);
  st.insert(0, 0);
  return make_view(t, sz, st, t.storage_offset());
}

const Scalar kZero(int64_t(0)), kOne(int64_t(1));

// addmm / baddbmm: out = beta * self + alpha * (a @ b). A 1-D self of n
// elements with beta == 1 (linear's bias) rides cuBLASLt's BIAS epilogue;
// otherwise self is broadcast into out first and read back as C.
void addmm_into(OpCall& c, const Tensor& out3, const Tensor& a3, const Tensor& b3) {
  const Tensor& self = c.tensor(0);
  Scalar beta = c.scalar(3), alpha = c.scalar(4);
  if (beta.to_double() == 1.0 && cuda::bias_epilogue_applies(self, c.outputs[0]))
    return cuda::bmm_into(out3, a3, b3, kZero, alpha, self);
  // beta == 0 ignores self entirely (NaN in it does not propagate).
  if (beta.to_double() != 0.0) copy_tensor(c.outputs[0], self);
  cuda::bmm_into(out3, a3, b3, beta, alpha);
}

}  // namespace

void mm_cuda(OpCall& c) {
  check_dtype(c.tensor(0).dtype(), "addmm_cuda");
  cuda::bmm_into(as_batch(c.outputs[0]), as_batch(c.tensor(0)), as_batch(c.tensor(1)), kZero,
                 kOne);
}

void bmm_cuda(OpCall& c) {
  check_dtype(c.tensor(0).dtype(), "bmm_cuda");
  cuda::bmm_into(c.outputs[0], c.tensor(0), c.tensor(1), kZero, kOne);
}

void addmm_cuda(OpCall& c) {
  check_dtype(c.tensor(1).dtype(), "addmm_cuda");
  addmm_into(c, as_batch(c.outputs[0]), as_batch(c.tensor(1)), as_batch(c.tensor(2)));
}

void baddbmm_cuda(OpCall& c) {
  check_dtype(c.tensor(1).dtype(), "baddbmm_cuda");
  // A 1-D self of n elements is the same bias for every matrix of the
  // batch: the epilogue's bias batch stride defaults to 0.
  addmm_into(c, c.outputs[0], c.tensor(1), c.tensor(2));
}

// _addmm_act: act(beta * self + alpha * mat1 @ mat2) in one cuBLASLt call
// (its RELU / GELU epilogue, with BIAS for a 1-D self and beta 1; beta 0
// ignores self), the activation applied to the float result before it is
// rounded; else addmm and then the activation in place, as eager's two ops.
void addmm_act_cuda(OpCall& c) {
  check_dtype(c.tensor(1).dtype(), "addmm_cuda");
  const Tensor &self = c.tensor(0), &out = c.outputs[0];
  const double beta = c.scalar(3).to_double();
  const bool gelu = addmm_act_is_gelu(c.args[5]);
  const auto act = gelu ? cuda::GemmActivation::GeluTanh : cuda::GemmActivation::Relu;
  const Tensor bias = beta == 1.0 ? self : Tensor();
  if ((beta == 0.0 || cuda::bias_epilogue_applies(self, out)) &&
      cuda::bmm_activation_into(as_batch(out), as_batch(c.tensor(1)), as_batch(c.tensor(2)),
                                c.scalar(4), bias, act))
    return;
  addmm_into(c, as_batch(out), as_batch(c.tensor(1)), as_batch(c.tensor(2)));
  apply_addmm_act(out, gelu);
}

void mv_cuda(OpCall& c) {
  check_dtype(c.tensor(0).dtype(), "addmv_impl_cuda");
  const Tensor &m = c.tensor(0), &v = c.tensor(1), &out = c.outputs[0];
  // The vector as a [k, 1] matrix, the result as [m, 1].
  Tensor vb = make_view(v, {1, v.sizes()[0], 1}, {0, v.strides()[0], 1}, v.storage_offset());
  Tensor ob = make_view(out, {1, out.sizes()[0], 1}, {0, 1, 1}, out.storage_offset());
  cuda::bmm_into(ob, as_batch(m), vb, kZero, kOne);
}

void dot_cuda(OpCall& c) {
  check_dtype(c.tensor(0).dtype(), "dot");
  const Tensor &a = c.tensor(0), &b = c.tensor(1), &out = c.outputs[0];
  // [1, k] @ [k, 1] -> [1, 1].
  Tensor ab = make_view(a, {1, 1, a.sizes()[0]}, {0, 0, a.strides()[0]}, a.storage_offset());
  Tensor bb = make_view(b, {1, b.sizes()[0], 1}, {0, b.strides()[0], 1}, b.storage_offset());
  Tensor ob = make_view(out, {1, 1, 1}, {0, 1, 1}, out.storage_offset());
  cuda::bmm_into(ob, ab, bb, kZero, kOne);
}

}  // namespace ignis

#include "ignis/kernels/cuda/gemm.h"

#include <algorithm>

#include "ignis/cuda/blas.h"
#include "ignis/cuda/cublaslt.h"
#include "ignis/cuda/device.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis::cuda {

// Note [Row-major products on cuBLASLt]
// cuBLASLt is column-major. A row-major [r, c] matrix is, read column-major,
// its transpose, so C = A @ B (row-major, [m, n]) is computed as
// C^T = B^T @ A^T: cuBLASLt's A is our b, its B is our a, and its m and n
// are our n and m. A row-major operand X [r, c] with strides (sr, sc)
// reaches cuBLASLt without a copy in either of two ways:
//   - sc == 1: X^T is column-major c x r with leading dimension sr (op N);
//   - sr == 1: X itself is column-major r x c with ld sc, so op T gives X^T
//     (a transposed view, x.t() or x.mT, lands here).
// Any other layout (both strides > 1, a leading dimension smaller than the
// rows) is copied contiguous first. A size-1 dimension's stride is
// meaningless and is chosen to fit. The result is contiguous [m, n]: C^T
// column-major n x m with ld n.

namespace {

int lt_type(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return CUDA_R_32F;
    case ScalarType::Float64: return CUDA_R_64F;
    case ScalarType::Float16: return CUDA_R_16F;
    case ScalarType::BFloat16: return CUDA_R_16BF;
    default:
      IGNIS_NOT_IMPLEMENTED("\"addmm_cuda\" not implemented for '", scalar_type_name(t), "'");
  }
}

// X [B, r, c] as cuBLASLt's operand for X^T per batch (see the Note);
// false when its layout needs a copy.
bool as_lt_operand(const Tensor& x, LtMatrix* out, bool* trans) {
  const int64_t r = x.sizes()[1], c = x.sizes()[2];
  const int64_t sr = x.strides()[1], sc = x.strides()[2];
  if (sc == 1 || c == 1) {
    int64_t ld = r == 1 ? std::max<int64_t>(c, 1) : sr;
    if (ld >= std::max<int64_t>(c, 1)) {
      *out = {x.data_ptr(), c, r, ld, x.strides()[0]};
      *trans = false;
      return true;
    }
  }
  if (sr == 1 || r == 1) {
    int64_t ld = c == 1 ? std::max<int64_t>(r, 1) : sc;
    if (ld >= std::max<int64_t>(r, 1)) {
      *out = {x.data_ptr(), r, c, ld, x.strides()[0]};
      *trans = true;
      return true;
    }
  }
  return false;
}

Tensor contiguous_copy(const Tensor& x) {
  Tensor y = empty_tensor(x.sizes(), x.dtype(), x.device());
  copy_tensor(y, x);
  return y;
}

// One attempt: false when cuBLASLt has no algorithm for these layouts.
bool try_lt(const Tensor& out, const Tensor& a, const Tensor& b, double beta, double alpha,
            const Tensor& bias, GemmActivation activation = GemmActivation::None) {
  GemmCall call;
  call.device = device_index(out.device());
  call.data_type = lt_type(out.dtype());
  call.m = out.sizes()[2];
  call.n = out.sizes()[1];
  call.k = a.sizes()[2];
  call.batch = out.sizes()[0];
  if (!as_lt_operand(b, &call.a, &call.trans_a) || !as_lt_operand(a, &call.b, &call.trans_b))
    return false;
  call.d = out.data_ptr();
  call.ldd = call.m;
  call.batch_stride_d = call.m * call.n;
  call.bias = bias.defined() ? bias.data_ptr() : nullptr;
  call.activation = activation;
  call.alpha = alpha;
  call.beta = beta;
  return lt_matmul(call, current_stream(call.device));
}

}  // namespace

bool bias_epilogue_applies(const Tensor& bias, const Tensor& out) {
  return bias.defined() && bias.dim() == 1 && bias.device() == out.device() &&
         bias.dtype() == out.dtype() && bias.sizes()[0] == out.sizes().back() &&
         (bias.strides()[0] == 1 || bias.sizes()[0] == 1) &&
         reinterpret_cast<uintptr_t>(bias.data_ptr()) % 16 == 0;
}

void bmm_into(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& beta_s,
              const Scalar& alpha_s, const Tensor& bias) {
  const int64_t batch = out.sizes()[0], m = out.sizes()[1], n = out.sizes()[2];
  const int64_t k = a.sizes()[2];
  double beta = beta_s.to_double(), alpha = alpha_s.to_double();
  lt_type(out.dtype());  // the dtype check, before any early return
  if (batch == 0 || m == 0 || n == 0) return;
  DeviceGuard guard(device_index(out.device()));
  if (k == 0) {
    // Nothing to multiply: out = beta * out (+ bias). cuBLASLt rejects k = 0,
    // so a product of zeros over k = 1 does the scaling.
    if (beta == 0 && !bias.defined()) return fill_tensor(out, Scalar(0.0));
    Tensor za = empty_tensor({batch, m, 1}, out.dtype(), out.device());
    Tensor zb = empty_tensor({batch, 1, n}, out.dtype(), out.device());
    fill_tensor(za, Scalar(0.0));
    fill_tensor(zb, Scalar(0.0));
    return bmm_into(out, za, zb, beta_s, alpha_s, bias);
  }
  if (try_lt(out, a, b, beta, alpha, bias)) return;
  // No algorithm for these strides or alignments: fresh contiguous operands
  // (allocations are 512-byte aligned) always have one.
  Tensor ac = contiguous_copy(a), bc = contiguous_copy(b);
  if (try_lt(out, ac, bc, beta, alpha, bias)) return;
  if (bias.defined()) {
    // The epilogue itself is not supported here: add the bias as C.
    copy_tensor(out, bias);
    if (try_lt(out, ac, bc, 1.0, alpha, Tensor())) return;
  }
  IGNIS_FAIL("cuBLASLt has no algorithm for a ", scalar_type_name(out.dtype()), " product of [",
             batch, ", ", m, ", ", k, "] and [", batch, ", ", k, ", ", n, "]");
}

bool bmm_activation_into(const Tensor& out, const Tensor& a, const Tensor& b,
                         const Scalar& alpha_s, const Tensor& bias, GemmActivation activation) {
  const int64_t batch = out.sizes()[0], m = out.sizes()[1], n = out.sizes()[2];
  lt_type(out.dtype());
  // k = 0 (act(bias) alone) and empty results go the unfused way.
  if (batch == 0 || m == 0 || n == 0 || a.sizes()[2] == 0) return false;
  if (bias.defined() && !bias_epilogue_applies(bias, out)) return false;
  DeviceGuard guard(device_index(out.device()));
  const double alpha = alpha_s.to_double();
  if (try_lt(out, a, b, 0.0, alpha, bias, activation)) return true;
  Tensor ac = contiguous_copy(a), bc = contiguous_copy(b);
  return try_lt(out, ac, bc, 0.0, alpha, bias, activation);
}

}  // namespace ignis::cuda

#include "ignis/kernels/cuda/batch_norm.h"

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis::cuda {

namespace {

constexpr int kThreads = 256;  // a block per channel; the shared array's size

// Must match IgBatchNormParams in kTemplates. Pointers may be null where
// the CPU's tensors are undefined.
struct BatchNormParams {
  const void *x, *g, *weight, *bias, *running_mean, *running_var, *save_mean_in, *save_invstd_in;
  void *y, *save_mean, *save_invstd, *new_mean, *new_var, *grad_weight, *grad_bias;
  int64_t N, C, L;
  double momentum, eps;
  int32_t training;
};

const char* kTemplates = R"CUDA(
// ---- batch norm (kernels/cuda/batch_norm.cpp) ----
// IG_NEEDS_BLOCK_THREADS: the host emulation runs this unit with real threads.
struct IgBatchNormParams {
  const void *x, *g, *weight, *bias, *running_mean, *running_var, *save_mean_in, *save_invstd_in;
  void *y, *save_mean, *save_invstd, *new_mean, *new_var, *grad_weight, *grad_bias;
  int64_t N, C, L;
  double momentum, eps;
  int32_t training;
};
#define IG_BN_THREADS 256
// The sum of v over the block's threads (blockDim.x a power of two up to
// IG_BN_THREADS), given to every thread. All threads must call it.
__forceinline__ double ig_bn_block_sum(double v) {
  __shared__ double sh[IG_BN_THREADS];
  sh[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}
template <class T> __forceinline__ const T* ig_bn_at(const void* p) {
  return static_cast<const T*>(p);
}
// Element e of channel c's N * L values: x[(n * C + c) * L + l].
#define IG_BN_INDEX(e, c, p) (((e) / (p).L * (p).C + (c)) * (p).L + (e) % (p).L)
template <class T> __forceinline__ void ig_batch_norm(const IgBatchNormParams& p) {
  const T* x = ig_bn_at<T>(p.x);
  T* y = static_cast<T*>(p.y);
  const T *w = ig_bn_at<T>(p.weight), *b = ig_bn_at<T>(p.bias);
  const T *rm = ig_bn_at<T>(p.running_mean), *rv = ig_bn_at<T>(p.running_var);
  const int64_t M = p.N * p.L;
  for (int64_t c = blockIdx.x; c < p.C; c += gridDim.x) {
    double mean, invstd;
    if (p.training) {
      double s = 0;
      for (int64_t e = threadIdx.x; e < M; e += blockDim.x) s += double(x[IG_BN_INDEX(e, c, p)]);
      s = ig_bn_block_sum(s);
      mean = M ? s / double(M) : 0.0;
      double sq = 0;
      for (int64_t e = threadIdx.x; e < M; e += blockDim.x) {
        const double d = double(x[IG_BN_INDEX(e, c, p)]) - mean;
        sq += d * d;
      }
      sq = ig_bn_block_sum(sq);
      const double var = M ? sq / double(M) : 0.0;
      invstd = 1.0 / sqrt(var + p.eps);
      if (threadIdx.x == 0 && p.new_mean) {
        static_cast<T*>(p.new_mean)[c] = T((1 - p.momentum) * double(rm[c]) + p.momentum * mean);
        const double unbiased = M > 1 ? sq / double(M - 1) : var;
        static_cast<T*>(p.new_var)[c] =
            T((1 - p.momentum) * double(rv[c]) + p.momentum * unbiased);
      }
    } else {
      mean = double(rm[c]);
      invstd = 1.0 / sqrt(double(rv[c]) + p.eps);
    }
    if (threadIdx.x == 0) {
      static_cast<T*>(p.save_mean)[c] = T(mean);
      static_cast<T*>(p.save_invstd)[c] = T(invstd);
    }
    const T scale = T(invstd * (w ? double(w[c]) : 1.0));
    const T shift = T((b ? double(b[c]) : 0.0) - mean * double(scale));
    for (int64_t e = threadIdx.x; e < M; e += blockDim.x) {
      const int64_t i = IG_BN_INDEX(e, c, p);
      y[i] = x[i] * scale + shift;
    }
  }
}
template <class T> __forceinline__ void ig_batch_norm_bwd(const IgBatchNormParams& p) {
  const T *x = ig_bn_at<T>(p.x), *g = ig_bn_at<T>(p.g), *w = ig_bn_at<T>(p.weight);
  T* dx = static_cast<T*>(p.y);
  const int64_t M = p.N * p.L;
  for (int64_t c = blockIdx.x; c < p.C; c += gridDim.x) {
    const bool saved = p.save_mean_in != nullptr;
    const double mean = saved ? double(ig_bn_at<T>(p.save_mean_in)[c])
                              : double(ig_bn_at<T>(p.running_mean)[c]);
    const double invstd = saved ? double(ig_bn_at<T>(p.save_invstd_in)[c])
                                : 1.0 / sqrt(double(ig_bn_at<T>(p.running_var)[c]) + p.eps);
    double sg = 0, sgx = 0;  // sum(g), sum(g * (x - mean))
    for (int64_t e = threadIdx.x; e < M; e += blockDim.x) {
      const int64_t i = IG_BN_INDEX(e, c, p);
      sg += double(g[i]);
      sgx += double(g[i]) * (double(x[i]) - mean);
    }
    sg = ig_bn_block_sum(sg);
    sgx = ig_bn_block_sum(sgx);
    if (threadIdx.x == 0) {
      if (p.grad_bias) static_cast<T*>(p.grad_bias)[c] = T(sg);
      if (p.grad_weight) static_cast<T*>(p.grad_weight)[c] = T(sgx * invstd);
    }
    if (!dx) continue;
    const double wc = w ? double(w[c]) : 1.0;
    const T a = T(wc * invstd);
    if (p.training) {
      // dx = w * invstd * (g - mean(g) - xhat * mean(g * xhat))
      const double mg = M ? sg / double(M) : 0.0;
      const double k = M ? sgx * invstd * invstd / double(M) : 0.0;
      for (int64_t e = threadIdx.x; e < M; e += blockDim.x) {
        const int64_t i = IG_BN_INDEX(e, c, p);
        dx[i] = a * T(double(g[i]) - mg - (double(x[i]) - mean) * k);
      }
    } else {
      for (int64_t e = threadIdx.x; e < M; e += blockDim.x) {
        const int64_t i = IG_BN_INDEX(e, c, p);
        dx[i] = g[i] * a;
      }
    }
  }
}
)CUDA";

KernelRequest bn_request(const char* kernel, ScalarType t) {
  return family_kernel(kTemplates, kernel, t, "IgBatchNormParams", kThreads);
}

const void* ptr(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }
void* mut(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

// N, C and L (the product of the spatial sizes) of a [N, C, *] tensor.
void shape_of(const Tensor& t, BatchNormParams& p) {
  p.N = t.size(0);
  p.C = t.size(1);
  p.L = p.N * p.C ? t.numel() / (p.N * p.C) : 0;
}

void launch(const char* kernel, ScalarType t, int device, BatchNormParams& p) {
  if (p.C == 0) return;
  CUfunction f = get_named_kernel(device, str(kernel, "_", dtype_name(t)),
                                  [&] { return bn_request(kernel, t); });
  void* args[] = {&p};
  launch_strided(f, p.C, kThreads, args, current_stream(device));
}

}  // namespace

std::vector<KernelRequest> batch_norm_kernel_requests(ScalarType t) {
  return {bn_request("batch_norm", t), bn_request("batch_norm_bwd", t)};
}

void batch_norm_into(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd,
                     const Tensor& new_mean, const Tensor& new_var, const Tensor& in,
                     const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                     const Tensor& running_var, bool training, double momentum, double eps) {
  require_float_or_double(in.dtype(), "batch_norm");
  const int device = in.device().index;
  DeviceGuard guard(device);
  BatchNormParams p{};
  shape_of(in, p);
  p.x = in.data_ptr();
  p.weight = ptr(weight);
  p.bias = ptr(bias);
  p.running_mean = ptr(running_mean);
  p.running_var = ptr(running_var);
  p.y = out.data_ptr();
  p.save_mean = save_mean.data_ptr();
  p.save_invstd = save_invstd.data_ptr();
  p.new_mean = mut(new_mean);
  p.new_var = mut(new_var);
  p.momentum = momentum;
  p.eps = eps;
  p.training = training ? 1 : 0;
  launch("batch_norm", in.dtype(), device, p);
}

void batch_norm_backward_into(const Tensor& grad_in, const Tensor& grad_weight,
                              const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                              const Tensor& weight, const Tensor& running_mean,
                              const Tensor& running_var, const Tensor& save_mean,
                              const Tensor& save_invstd, bool training, double eps) {
  require_float_or_double(in.dtype(), "batch_norm_backward");
  const int device = in.device().index;
  DeviceGuard guard(device);
  BatchNormParams p{};
  shape_of(in, p);
  p.x = in.data_ptr();
  p.g = grad_out.data_ptr();
  p.weight = ptr(weight);
  p.running_mean = ptr(running_mean);
  p.running_var = ptr(running_var);
  p.save_mean_in = ptr(save_mean);
  p.save_invstd_in = ptr(save_invstd);
  p.y = mut(grad_in);
  p.grad_weight = mut(grad_weight);
  p.grad_bias = mut(grad_bias);
  p.eps = eps;
  p.training = training ? 1 : 0;
  launch("batch_norm_bwd", in.dtype(), device, p);
}

}  // namespace ignis::cuda

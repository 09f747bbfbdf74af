#include "ignis/kernels/cuda/conv.h"

#include <algorithm>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cuda/fill.h"
#include "ignis/kernels/cuda/gemm.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis::cuda {

namespace {

// Elements of a chunk's column matrices together (the image's taps and the
// packed columns side): 256 MiB of float32.
constexpr int64_t kChunkElements = int64_t(1) << 26;
constexpr int kBiasThreads = 256;

// Must match IgConvParams in kTemplates.
struct ConvParams {
  const void* src;
  void* dst;
  const void* bias;
  int64_t n0, nb;  // the chunk: samples [n0, n0 + nb)
  int64_t groups, img_ch, col_ch;
  int64_t img[3], col[3], k[3], s[3], p[3], d[3];
};

const char* kTemplates = R"CUDA(
// ---- convolution (kernels/cuda/conv.cpp) ----
// IG_NEEDS_BLOCK_THREADS: the host emulation runs this unit with real threads.
// A chunk of samples [n0, n0 + nb) of a convolution's geometry (cpu::ConvGeom:
// three spatial dims, leading ones of size 1). Columns buffers are laid out
// [groups, rows, nb, L]: rows K = img_ch * taps for the image's window taps,
// col_ch for the packed columns side; L the columns side's positions.
struct IgConvParams {
  const void* src;
  void* dst;
  const void* bias;  // per channel of what is written, or null
  int64_t n0, nb;
  int64_t groups, img_ch, col_ch;
  int64_t img[3], col[3], k[3], s[3], p[3], d[3];
};
__forceinline__ int64_t ig_conv_L(const IgConvParams& p) { return p.col[0] * p.col[1] * p.col[2]; }
__forceinline__ int64_t ig_conv_img_len(const IgConvParams& p) {
  return p.img[0] * p.img[1] * p.img[2];
}
__forceinline__ int64_t ig_conv_taps(const IgConvParams& p) { return p.k[0] * p.k[1] * p.k[2]; }
// buf[g, c * taps + t, n, l] = the image's tap t of window l (0 in the padding).
template <class T> __forceinline__ void ig_im2col(const IgConvParams& p) {
  const T* img = static_cast<const T*>(p.src);
  T* buf = static_cast<T*>(p.dst);
  const int64_t L = ig_conv_L(p), taps = ig_conv_taps(p), K = p.img_ch * taps;
  const int64_t IL = ig_conv_img_len(p);
  IG_GRID_STRIDE_LOOP(i, p.groups * K * p.nb * L) {
    const int64_t l = i % L, n = (i / L) % p.nb, k = (i / (L * p.nb)) % K;
    const int64_t g = i / (L * p.nb * K), c = k / taps, t = k % taps;
    const int64_t kw = t % p.k[2], kh = (t / p.k[2]) % p.k[1], kd = t / (p.k[1] * p.k[2]);
    const int64_t ow = l % p.col[2], oh = (l / p.col[2]) % p.col[1], od = l / (p.col[1] * p.col[2]);
    const int64_t id = od * p.s[0] - p.p[0] + kd * p.d[0];
    const int64_t ih = oh * p.s[1] - p.p[1] + kh * p.d[1];
    const int64_t iw = ow * p.s[2] - p.p[2] + kw * p.d[2];
    T v = T(0);
    if (id >= 0 && id < p.img[0] && ih >= 0 && ih < p.img[1] && iw >= 0 && iw < p.img[2])
      v = img[((p.n0 + n) * p.groups * p.img_ch + g * p.img_ch + c) * IL +
              (id * p.img[1] + ih) * p.img[2] + iw];
    buf[i] = v;
  }
}
// The input position of tap k along one axis that output position o reads
// back from: o * s - pad + k * d == i, or -1 when no whole o lands there.
__forceinline__ int64_t ig_conv_window_of(int64_t i, int64_t k, int64_t s, int64_t pad,
                                          int64_t d, int64_t n) {
  const int64_t num = i + pad - k * d;
  if (num < 0 || num % s != 0) return -1;
  const int64_t o = num / s;
  return o < n ? o : -1;
}
// image[n0 + n, g * img_ch + c, x] = the sum over the taps of the buffer's
// entries that im2col would read from x (+ bias[channel]); the CPU's col2im
// adds them in the same tap order.
template <class T> __forceinline__ void ig_col2im(const IgConvParams& p) {
  const T* buf = static_cast<const T*>(p.src);
  T* img = static_cast<T*>(p.dst);
  const T* bias = static_cast<const T*>(p.bias);
  const int64_t L = ig_conv_L(p), taps = ig_conv_taps(p), K = p.img_ch * taps;
  const int64_t IL = ig_conv_img_len(p), C = p.groups * p.img_ch;
  IG_GRID_STRIDE_LOOP(i, p.nb * C * IL) {
    const int64_t x = i % IL, ch = (i / IL) % C, n = i / (IL * C);
    const int64_t g = ch / p.img_ch, c = ch % p.img_ch;
    const int64_t iw = x % p.img[2], ih = (x / p.img[2]) % p.img[1], id = x / (p.img[1] * p.img[2]);
    T sum = T(0);
    for (int64_t kd = 0; kd < p.k[0]; ++kd) {
      const int64_t od = ig_conv_window_of(id, kd, p.s[0], p.p[0], p.d[0], p.col[0]);
      if (od < 0) continue;
      for (int64_t kh = 0; kh < p.k[1]; ++kh) {
        const int64_t oh = ig_conv_window_of(ih, kh, p.s[1], p.p[1], p.d[1], p.col[1]);
        if (oh < 0) continue;
        for (int64_t kw = 0; kw < p.k[2]; ++kw) {
          const int64_t ow = ig_conv_window_of(iw, kw, p.s[2], p.p[2], p.d[2], p.col[2]);
          if (ow < 0) continue;
          const int64_t k = c * taps + (kd * p.k[1] + kh) * p.k[2] + kw;
          const int64_t l = (od * p.col[1] + oh) * p.col[2] + ow;
          sum += buf[((g * K + k) * p.nb + n) * L + l];
        }
      }
    }
    if (bias) sum += bias[ch];
    img[(p.n0 + n) * C * IL + ch * IL + x] = sum;
  }
}
// buf[g, o, n, l] = cols[n0 + n, g * col_ch + o, l].
template <class T> __forceinline__ void ig_conv_pack(const IgConvParams& p) {
  const T* cols = static_cast<const T*>(p.src);
  T* buf = static_cast<T*>(p.dst);
  const int64_t L = ig_conv_L(p), C = p.groups * p.col_ch;
  IG_GRID_STRIDE_LOOP(i, C * p.nb * L) {
    const int64_t l = i % L, n = (i / L) % p.nb, ch = i / (L * p.nb);
    buf[i] = cols[((p.n0 + n) * C + ch) * L + l];
  }
}
// cols[n0 + n, ch, l] = buf[ch, n, l] (+ bias[ch]), ch = g * col_ch + o.
template <class T> __forceinline__ void ig_conv_unpack(const IgConvParams& p) {
  const T* buf = static_cast<const T*>(p.src);
  T* cols = static_cast<T*>(p.dst);
  const T* bias = static_cast<const T*>(p.bias);
  const int64_t L = ig_conv_L(p), C = p.groups * p.col_ch;
  IG_GRID_STRIDE_LOOP(i, p.nb * C * L) {
    const int64_t l = i % L, ch = (i / L) % C, n = i / (L * C);
    T v = buf[(ch * p.nb + n) * L + l];
    if (bias) v += bias[ch];
    cols[(p.n0 + n) * C * L + ch * L + l] = v;
  }
}
// dst[c] = the sum of src[n, c, l] over n and l ([N, C, L] with N = nb, C =
// groups * col_ch, L = the positions): a block per channel, summed in double.
template <class T> __forceinline__ void ig_conv_bias_grad(const IgConvParams& p) {
  __shared__ double sh[256];
  const T* src = static_cast<const T*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  const int64_t L = ig_conv_L(p), C = p.groups * p.col_ch, M = p.nb * L;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double s = 0;
    for (int64_t e = threadIdx.x; e < M; e += blockDim.x)
      s += double(src[((e / L) * C + c) * L + e % L]);
    sh[threadIdx.x] = s;
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {
      if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
      __syncthreads();
    }
    if (threadIdx.x == 0) dst[c] = T(sh[0]);
    __syncthreads();
  }
}
)CUDA";

constexpr const char* kKernels[] = {"im2col", "col2im", "conv_pack", "conv_unpack",
                                    "conv_bias_grad"};

KernelRequest conv_request(const char* kernel, ScalarType t) {
  return family_kernel(kTemplates, kernel, t, "IgConvParams");
}

// One convolution's kernels on one device, chunk by chunk.
struct Conv {
  cpu::ConvGeom g;
  ScalarType dtype;
  int device;
  int64_t K, L, nb = 1;  // rows of the taps' matrix per group, positions, samples per chunk

  Conv(const cpu::ConvGeom& geom, ScalarType t, int dev) : g(geom), dtype(t), device(dev) {
    K = g.img_ch * g.k_len();
    L = g.col_len();
    const int64_t per_sample = std::max<int64_t>(1, g.groups * (K + g.col_ch) * L);
    nb = std::clamp<int64_t>(kChunkElements / per_sample, 1, std::max<int64_t>(g.batch, 1));
  }

  ConvParams params(int64_t n0, int64_t n, const void* src, void* dst,
                    const void* bias = nullptr) const {
    ConvParams p{};
    p.src = src;
    p.dst = dst;
    p.bias = bias;
    p.n0 = n0;
    p.nb = n;
    p.groups = g.groups;
    p.img_ch = g.img_ch;
    p.col_ch = g.col_ch;
    for (int i = 0; i < 3; ++i) {
      p.img[i] = g.img[i];
      p.col[i] = g.col[i];
      p.k[i] = g.k[i];
      p.s[i] = g.s[i];
      p.p[i] = g.p[i];
      p.d[i] = g.d[i];
    }
    return p;
  }

  void run(const char* kernel, ConvParams p, int64_t n) const {
    if (n == 0) return;
    CUfunction f = get_named_kernel(device, str(kernel, "_", dtype_name(dtype)),
                                    [&] { return conv_request(kernel, dtype); });
    void* args[] = {&p};
    launch_grid_stride(f, n, args, current_stream(device));
  }

  Tensor buffer(int64_t rows, int64_t n) const {
    return empty_tensor({g.groups, rows, n * L}, dtype, Device(DeviceType::CUDA, device));
  }
  // The weight as [groups, col_ch, K] (transposed: [groups, K, col_ch]).
  Tensor weight_view(const Tensor& w, bool transposed) const {
    if (!transposed)
      return make_view(w, {g.groups, g.col_ch, K}, {g.col_ch * K, K, 1}, w.storage_offset());
    return make_view(w, {g.groups, K, g.col_ch}, {g.col_ch * K, 1, K}, w.storage_offset());
  }

  // buf [groups, K, n * L] = the taps of image samples [n0, n0 + n).
  void im2col(const Tensor& image, int64_t n0, int64_t n, const Tensor& buf) const {
    run("im2col", params(n0, n, image.data_ptr(), buf.data_ptr()), g.groups * K * n * L);
  }
  // image samples [n0, n0 + n) = col2im(buf) (+ bias per image channel).
  void col2im(const Tensor& buf, int64_t n0, int64_t n, const Tensor& image,
              const Tensor& bias) const {
    run("col2im", params(n0, n, buf.data_ptr(), image.data_ptr(),
                         bias.defined() ? bias.data_ptr() : nullptr),
        n * g.groups * g.img_ch * g.img_len());
  }
  // buf [groups, col_ch, n * L] = columns side samples [n0, n0 + n).
  void pack(const Tensor& cols, int64_t n0, int64_t n, const Tensor& buf) const {
    run("conv_pack", params(n0, n, cols.data_ptr(), buf.data_ptr()), g.groups * g.col_ch * n * L);
  }
  void unpack(const Tensor& buf, int64_t n0, int64_t n, const Tensor& cols,
              const Tensor& bias) const {
    run("conv_unpack", params(n0, n, buf.data_ptr(), cols.data_ptr(),
                              bias.defined() ? bias.data_ptr() : nullptr),
        n * g.groups * g.col_ch * L);
  }

  // cols = W @ im2col(image) (+ bias): a convolution's output, or a
  // transposed one's input gradient.
  void gather(const Tensor& image, const Tensor& w, const Tensor& bias, const Tensor& cols) const {
    for (int64_t n0 = 0; n0 < g.batch; n0 += nb) {
      const int64_t n = std::min(nb, g.batch - n0);
      Tensor taps = buffer(K, n), prod = buffer(g.col_ch, n);
      im2col(image, n0, n, taps);
      bmm_into(prod, weight_view(w, false), taps, Scalar(0.0), Scalar(1.0));
      unpack(prod, n0, n, cols, bias);
    }
  }
  // image = col2im(W^T @ cols) (+ bias): a convolution's input gradient, or
  // a transposed one's output.
  void scatter(const Tensor& cols, const Tensor& w, const Tensor& bias, const Tensor& image) const {
    for (int64_t n0 = 0; n0 < g.batch; n0 += nb) {
      const int64_t n = std::min(nb, g.batch - n0);
      Tensor packed = buffer(g.col_ch, n), prod = buffer(K, n);
      pack(cols, n0, n, packed);
      bmm_into(prod, weight_view(w, true), packed, Scalar(0.0), Scalar(1.0));
      col2im(prod, n0, n, image, bias);
    }
  }
  // dW = the sum over samples of cols @ im2col(image)^T.
  void weight_grad(const Tensor& image, const Tensor& cols, const Tensor& dw) const {
    const Tensor dwv =
        make_view(dw, {g.groups, g.col_ch, K}, {g.col_ch * K, K, 1}, dw.storage_offset());
    for (int64_t n0 = 0; n0 < g.batch; n0 += nb) {
      const int64_t n = std::min(nb, g.batch - n0);
      Tensor taps = buffer(K, n), packed = buffer(g.col_ch, n);
      im2col(image, n0, n, taps);
      pack(cols, n0, n, packed);
      const Tensor taps_t = make_view(taps, {g.groups, n * L, K}, {K * n * L, 1, n * L}, 0);
      bmm_into(dwv, packed, taps_t, Scalar(n0 == 0 ? 0.0 : 1.0), Scalar(1.0));
    }
  }
};

// db[c] = the sum of t [N, C, *] over the batch and positions of channel c.
void channel_sums(const Tensor& t, const Tensor& db) {
  const int device = t.device().index;
  const int64_t N = t.size(0), C = t.size(1);
  ConvParams p{};
  p.src = t.data_ptr();
  p.dst = db.data_ptr();
  p.nb = N;
  p.groups = 1;
  p.col_ch = C;
  p.col[0] = p.col[1] = 1;
  p.col[2] = N * C ? t.numel() / (N * C) : 0;
  if (C == 0) return;
  if (p.col[2] == 0 || N == 0) return fill(db, Scalar(0.0));
  CUfunction f = get_named_kernel(device, str("conv_bias_grad_", dtype_name(t.dtype())),
                                  [&] { return conv_request("conv_bias_grad", t.dtype()); });
  void* args[] = {&p};
  launch_strided(f, C, kBiasThreads, args, current_stream(device));
}

}  // namespace

std::vector<KernelRequest> conv_kernel_requests(ScalarType t) {
  std::vector<KernelRequest> r;
  for (const char* k : kKernels) r.push_back(conv_request(k, t));
  return r;
}

void convolution_into(const Tensor& out, const Tensor& input, const Tensor& weight,
                      const Tensor& bias, const cpu::ConvParams& p) {
  require_float_or_double(out.dtype(), "convolution");
  if (out.numel() == 0) return;
  const int device = out.device().index;
  DeviceGuard guard(device);
  if (p.transposed) {
    Conv(cpu::conv_geom(out, input, weight, p), out.dtype(), device)
        .scatter(input, weight, bias, out);
  } else {
    Conv(cpu::conv_geom(input, out, weight, p), out.dtype(), device)
        .gather(input, weight, bias, out);
  }
}

void convolution_backward_into(const Tensor& grad_input, const Tensor& grad_weight,
                               const Tensor& grad_bias, const Tensor& grad_out,
                               const Tensor& input, const Tensor& weight,
                               const cpu::ConvParams& p) {
  require_float_or_double(grad_out.dtype(), "convolution_backward");
  const int device = grad_out.device().index;
  DeviceGuard guard(device);
  // The image side is the input of a convolution, grad_out of a transposed one.
  const Tensor& image = p.transposed ? grad_out : input;
  const Tensor& cols = p.transposed ? input : grad_out;
  const Conv conv(cpu::conv_geom(image, cols, weight, p), grad_out.dtype(), device);
  if (grad_input.defined() && grad_input.numel() > 0) {
    if (p.transposed) conv.gather(grad_out, weight, Tensor(), grad_input);
    else conv.scatter(grad_out, weight, Tensor(), grad_input);
  }
  if (grad_weight.defined() && grad_weight.numel() > 0) {
    if (image.numel() == 0 || cols.numel() == 0) fill(grad_weight, Scalar(0.0));
    else conv.weight_grad(image, cols, grad_weight);
  }
  if (grad_bias.defined() && grad_bias.numel() > 0) channel_sums(grad_out, grad_bias);
}

}  // namespace ignis::cuda

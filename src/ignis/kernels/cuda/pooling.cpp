#include "ignis/kernels/cuda/pooling.h"

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cuda/copy.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis::cuda {

namespace {

// Must match IgPoolAxis / IgPoolParams in kTemplates.
struct AxisArg {
  const int64_t *off, *taps, *span, *inv_off, *inv;
  int64_t in, out;
};
struct PoolParams {
  const void* src;
  void* dst;
  int64_t* indices;
  int64_t planes;
  int64_t divisor_override;
  int32_t count_include_pad;
  AxisArg h, w;
};

const char* kTemplates = R"CUDA(
// ---- pooling (kernels/cuda/pooling.cpp) ----
// One axis of the windows: output o reads input positions taps[off[o] ..
// off[o + 1]) and divides by span[o] under count_include_pad; input i is
// read by outputs inv[inv_off[i] .. inv_off[i + 1]), in increasing order.
struct IgPoolAxis {
  const int64_t *off, *taps, *span, *inv_off, *inv;
  int64_t in, out;
};
struct IgPoolParams {
  const void* src;  // the input, or the gradient of the output
  void* dst;        // the output, or the gradient of the input
  int64_t* indices;
  int64_t planes;
  int64_t divisor_override;
  int32_t count_include_pad;
  IgPoolAxis h, w;
};
__forceinline__ int64_t ig_pool_divisor(const IgPoolParams& p, int64_t oh, int64_t ow) {
  if (p.divisor_override > 0) return p.divisor_override;
  if (p.count_include_pad) return p.h.span[oh] * p.w.span[ow];
  return (p.h.off[oh + 1] - p.h.off[oh]) * (p.w.off[ow + 1] - p.w.off[ow]);
}
// The window max and its flat position r * W + c; NaN wins (a later NaN
// moves the position), as cpu::max_pool2d_into.
template <class T> __forceinline__ void ig_max_pool(const IgPoolParams& p) {
  const T* x = static_cast<const T*>(p.src);
  T* y = static_cast<T*>(p.dst);
  const int64_t OH = p.h.out, OW = p.w.out, W = p.w.in, HW = p.h.in * p.w.in;
  IG_GRID_STRIDE_LOOP(i, p.planes * OH * OW) {
    const int64_t ow = i % OW, oh = (i / OW) % OH;
    const T* xp = x + (i / (OH * OW)) * HW;
    const int64_t r0 = p.h.off[oh], r1 = p.h.off[oh + 1];
    const int64_t c0 = p.w.off[ow], c1 = p.w.off[ow + 1];
    T best = T(-__uint_as_float(0x7f800000u));
    int64_t at = r0 == r1 || c0 == c1 ? 0 : p.h.taps[r0] * W + p.w.taps[c0];
    for (int64_t a = r0; a < r1; ++a) {
      const int64_t r = p.h.taps[a];
      for (int64_t b = c0; b < c1; ++b) {
        const int64_t c = p.w.taps[b];
        const T v = xp[r * W + c];
        if (v > best || v != v) {
          best = v;
          at = r * W + c;
        }
      }
    }
    y[i] = best;
    p.indices[i] = at;
  }
}
// grad_in at (r, c): the gradients of the outputs whose windows read it and
// whose index names it, added in increasing output order.
template <class T> __forceinline__ void ig_max_pool_bwd(const IgPoolParams& p) {
  const T* g = static_cast<const T*>(p.src);
  T* gi = static_cast<T*>(p.dst);
  const int64_t H = p.h.in, W = p.w.in, OW = p.w.out, L = p.h.out * p.w.out;
  IG_GRID_STRIDE_LOOP(i, p.planes * H * W) {
    const int64_t c = i % W, r = (i / W) % H, plane = i / (H * W);
    const int64_t* ix = p.indices + plane * L;
    const T* gp = g + plane * L;
    const int64_t at = r * W + c;
    T sum = T(0);
    for (int64_t a = p.h.inv_off[r]; a < p.h.inv_off[r + 1]; ++a)
      for (int64_t b = p.w.inv_off[c]; b < p.w.inv_off[c + 1]; ++b) {
        const int64_t o = p.h.inv[a] * OW + p.w.inv[b];
        if (ix[o] == at) sum += gp[o];
      }
    gi[i] = sum;
  }
}
template <class T> __forceinline__ void ig_avg_pool(const IgPoolParams& p) {
  const T* x = static_cast<const T*>(p.src);
  T* y = static_cast<T*>(p.dst);
  const int64_t OH = p.h.out, OW = p.w.out, W = p.w.in, HW = p.h.in * p.w.in;
  IG_GRID_STRIDE_LOOP(i, p.planes * OH * OW) {
    const int64_t ow = i % OW, oh = (i / OW) % OH;
    const T* xp = x + (i / (OH * OW)) * HW;
    T sum = T(0);
    for (int64_t a = p.h.off[oh]; a < p.h.off[oh + 1]; ++a)
      for (int64_t b = p.w.off[ow]; b < p.w.off[ow + 1]; ++b)
        sum += xp[p.h.taps[a] * W + p.w.taps[b]];
    y[i] = sum / T(ig_pool_divisor(p, oh, ow));
  }
}
template <class T> __forceinline__ void ig_avg_pool_bwd(const IgPoolParams& p) {
  const T* g = static_cast<const T*>(p.src);
  T* gi = static_cast<T*>(p.dst);
  const int64_t H = p.h.in, W = p.w.in, OW = p.w.out, L = p.h.out * p.w.out;
  IG_GRID_STRIDE_LOOP(i, p.planes * H * W) {
    const int64_t c = i % W, r = (i / W) % H;
    const T* gp = g + (i / (H * W)) * L;
    T sum = T(0);
    for (int64_t a = p.h.inv_off[r]; a < p.h.inv_off[r + 1]; ++a)
      for (int64_t b = p.w.inv_off[c]; b < p.w.inv_off[c + 1]; ++b) {
        const int64_t oh = p.h.inv[a], ow = p.w.inv[b];
        sum += gp[oh * OW + ow] / T(ig_pool_divisor(p, oh, ow));
      }
    gi[i] = sum;
  }
}
)CUDA";

constexpr const char* kKernels[] = {"max_pool", "max_pool_bwd", "avg_pool", "avg_pool_bwd"};

KernelRequest pool_request(const char* kernel, ScalarType t) {
  return family_kernel(kTemplates, kernel, t, "IgPoolParams");
}

int64_t planes_of(const Tensor& t) { return t.dim() == 3 ? t.size(0) : t.size(0) * t.size(1); }

// Both axes' tables in one device tensor (kept alive by the caller until
// the launch is queued: the allocator is stream-ordered).
Tensor upload_axes(const cpu::PoolAxis& h, const cpu::PoolAxis& w, int device, AxisArg* ah,
                   AxisArg* aw) {
  std::vector<int64_t> host;
  std::vector<size_t> starts;  // per axis: off, taps, span, inv_off, inv
  for (const cpu::PoolAxis* a : {&h, &w}) {
    const int64_t out = static_cast<int64_t>(a->taps.size());
    std::vector<std::vector<int64_t>> readers(static_cast<size_t>(a->in));
    starts.push_back(host.size());
    int64_t n = 0;
    host.push_back(0);
    for (int64_t o = 0; o < out; ++o) {
      n += static_cast<int64_t>(a->taps[o].size());
      host.push_back(n);
      for (int64_t i : a->taps[o]) readers[i].push_back(o);
    }
    starts.push_back(host.size());
    for (const auto& t : a->taps) host.insert(host.end(), t.begin(), t.end());
    starts.push_back(host.size());
    host.insert(host.end(), a->span.begin(), a->span.end());
    starts.push_back(host.size());
    n = 0;
    host.push_back(0);
    for (const auto& r : readers) host.push_back(n += static_cast<int64_t>(r.size()));
    starts.push_back(host.size());
    for (const auto& r : readers) host.insert(host.end(), r.begin(), r.end());
  }
  Tensor cpu_table = empty_tensor({static_cast<int64_t>(host.size())}, ScalarType::Int64,
                                  Device(DeviceType::CPU));
  std::copy(host.begin(), host.end(), cpu_table.data<int64_t>());
  Tensor table = empty_tensor(cpu_table.sizes(), ScalarType::Int64,
                              Device(DeviceType::CUDA, device));
  copy(table, cpu_table);
  const int64_t* base = static_cast<const int64_t*>(table.data_ptr());
  AxisArg* args[] = {ah, aw};
  const cpu::PoolAxis* axes[] = {&h, &w};
  for (int k = 0; k < 2; ++k) {
    const size_t* s = &starts[static_cast<size_t>(k) * 5];
    *args[k] = {base + s[0], base + s[1], base + s[2], base + s[3], base + s[4], axes[k]->in,
                static_cast<int64_t>(axes[k]->taps.size())};
  }
  return table;
}

// Runs `kernel` with a thread per element of `dst` (the output, or the
// input's gradient): src and dst [planes, ...] float32/float64 on one GPU.
void run_pool(const char* kernel, const char* op, const Tensor& src, const Tensor& dst,
              const Tensor& indices, const cpu::PoolAxis& h, const cpu::PoolAxis& w,
              int64_t planes, bool count_include_pad = false, int64_t divisor_override = 0) {
  const ScalarType t = dst.dtype();
  require_float_or_double(t, op);
  if (dst.numel() == 0) return;
  const int device = dst.device().index;
  DeviceGuard guard(device);
  PoolParams p{};
  Tensor table = upload_axes(h, w, device, &p.h, &p.w);
  p.src = src.data_ptr();
  p.dst = dst.data_ptr();
  p.indices = indices.defined() ? static_cast<int64_t*>(indices.data_ptr()) : nullptr;
  p.planes = planes;
  p.divisor_override = divisor_override;
  p.count_include_pad = count_include_pad ? 1 : 0;
  CUfunction f = get_named_kernel(device, str(kernel, "_", dtype_name(t)),
                                  [&] { return pool_request(kernel, t); });
  void* args[] = {&p};
  launch_grid_stride(f, dst.numel(), args, current_stream(device));
}

}  // namespace

std::vector<KernelRequest> pooling_kernel_requests(ScalarType t) {
  std::vector<KernelRequest> r;
  for (const char* k : kKernels) r.push_back(pool_request(k, t));
  return r;
}

void max_pool2d_into(const Tensor& out, const Tensor& indices, const Tensor& in,
                     const cpu::PoolAxis& h, const cpu::PoolAxis& w) {
  run_pool("max_pool", "max_pool2d", in, out, indices, h, w, planes_of(in));
}

void max_pool2d_backward_into(const Tensor& grad_in, const Tensor& grad_out,
                              const Tensor& indices, const cpu::PoolAxis& h,
                              const cpu::PoolAxis& w) {
  run_pool("max_pool_bwd", "max_pool2d_backward", grad_out, grad_in, indices, h, w,
           planes_of(grad_in));
}

void avg_pool2d_into(const Tensor& out, const Tensor& in, const cpu::PoolAxis& h,
                     const cpu::PoolAxis& w, bool count_include_pad, int64_t divisor_override) {
  run_pool("avg_pool", "avg_pool2d", in, out, Tensor(), h, w, planes_of(in), count_include_pad,
           divisor_override);
}

void avg_pool2d_backward_into(const Tensor& grad_in, const Tensor& grad_out,
                              const cpu::PoolAxis& h, const cpu::PoolAxis& w,
                              bool count_include_pad, int64_t divisor_override) {
  run_pool("avg_pool_bwd", "avg_pool2d_backward", grad_out, grad_in, Tensor(), h, w,
           planes_of(grad_in), count_include_pad, divisor_override);
}

}  // namespace ignis::cuda

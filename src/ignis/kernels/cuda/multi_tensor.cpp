#include "ignis/kernels/cuda/multi_tensor.h"

#include <algorithm>
#include <map>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cuda/device_scalar_ops.h"
#include "ignis/kernels/cuda/source.h"

namespace ignis::cuda {

namespace {

constexpr int kBlockThreads = 256;

// Must match IgMTTensor / IgMTParams in kTemplates. The launch's argument is
// one IgMTParams, under the 4 KiB every GPU takes.
struct MTTensor {
  void* list[5];       // optimizers: param, grad, then the state tensors;
                       // _foreach_: out, self, then the list operands
  const float* step;   // Adam: this tensor's step count
  int64_t n;
  int64_t first_chunk;  // chunks of the tensors before it in this launch
  double scalar;        // _foreach_: this tensor's number operand
};
struct MTParams {
  MTTensor t[kMultiTensorsPerLaunch];
  int64_t count, chunks;
  double lr, beta1, beta2, weight_decay, eps, momentum, dampening;
  const float* lr_ptr;
  const float* grad_scale;
  const float* found_inf;
  int32_t amsgrad, maximize, decoupled, nesterov, first_step, has_buffer;
  const void* operand;  // _foreach_: a 0-dim tensor operand (the .Tensor overloads)
  double alpha;
  int32_t formula;
};
static_assert(sizeof(MTParams) <= 4096, "a kernel argument of at most 4 KiB");

const char* kTemplates = R"CUDA(
// ---- multi-tensor kernels (kernels/cuda/multi_tensor.cpp) ----
// IG_MT_TENSORS and IG_MT_CHUNK come before this text, from multi_tensor.h.
struct IgMTTensor {
  char* list[5]; const float* step; int64_t n; int64_t first_chunk; double scalar;
};
struct IgMTParams {
  IgMTTensor t[IG_MT_TENSORS];
  int64_t count, chunks;
  double lr, beta1, beta2, weight_decay, eps, momentum, dampening;
  const float* lr_ptr; const float* grad_scale; const float* found_inf;
  int32_t amsgrad, maximize, decoupled, nesterov, first_step, has_buffer;
  const char* operand;
  double alpha;
  int32_t formula;  // cuda::ForeachFormula
};
// Each block walks chunks blockIdx.x, + gridDim.x, ...: increasing, so the
// tensor a chunk belongs to is found by moving forward from the last one.
// The threads of a block stride through the chunk's elements, so any block
// size works and nothing is shared between threads.
template <class F> __forceinline__ void ig_mt_chunks(const IgMTParams& p, F f) {
  int64_t ti = 0;
  for (int64_t c = blockIdx.x; c < p.chunks; c += gridDim.x) {
    while (ti + 1 < p.count && p.t[ti + 1].first_chunk <= c) ++ti;
    const IgMTTensor& t = p.t[ti];
    const int64_t begin = (c - t.first_chunk) * int64_t(IG_MT_CHUNK);
    const int64_t end = begin + IG_MT_CHUNK < t.n ? begin + IG_MT_CHUNK : t.n;
    f(t, begin, end);
  }
}
// The gradient of element k: unscaled (and stored back so), negated for maximize.
template <class T, class C> __forceinline__ C ig_mt_grad(const IgMTParams& p, T* g, int64_t k,
                                                         C inv_scale) {
  C gk = ig_convert<C>(g[k]);
  if (p.grad_scale) {
    gk = gk * inv_scale;
    g[k] = ig_convert<T>(gk);
  }
  return p.maximize ? -gk : gk;
}
// V elements of T in one 16-byte load or store.
template <class T, int V> struct alignas(16) IgMTVec { T v[V]; };
__forceinline__ bool ig_mt_aligned(const void* a) {
  return (reinterpret_cast<unsigned long long>(a) & 15u) == 0;
}
// Adam reads four (AMSGrad: five) tensors and writes three or four per
// element: with one 2-byte load per thread each, too few bytes are in
// flight to reach the memory's bandwidth, so a chunk whose tensors are all
// 16-byte aligned moves 16 bytes of each per load and store.
template <class T, class C> __forceinline__ void ig_fused_adam(const IgMTParams& p) {
  if (p.found_inf && *p.found_inf != 0.0f) return;
  const C lr = p.lr_ptr ? C(*p.lr_ptr) : C(p.lr);
  const C inv_scale = p.grad_scale ? C(1.0 / double(*p.grad_scale)) : C(1);
  constexpr int V = 16 / int(sizeof(T)) > 0 ? 16 / int(sizeof(T)) : 1;
  typedef IgMTVec<T, V> Vec;
  ig_mt_chunks(p, [&](const IgMTTensor& t, int64_t begin, int64_t end) {
    T* pp = reinterpret_cast<T*>(t.list[0]);
    T* g = reinterpret_cast<T*>(t.list[1]);
    T* m = reinterpret_cast<T*>(t.list[2]);
    T* v = reinterpret_cast<T*>(t.list[3]);
    T* vmax = reinterpret_cast<T*>(t.list[4]);
    const double step = *t.step;
    const C bc1 = C(1 - std::pow(p.beta1, step));
    const C bc2_sqrt = C(std::sqrt(1 - std::pow(p.beta2, step)));
    // One element: the gradient unscaled (and stored back so), negated for
    // maximize; the state updated in C.
    auto update = [&](T& pe, T& ge, T& me, T& ve, T& vme) {
      C gk = ig_convert<C>(ge);
      if (p.grad_scale) {
        gk = gk * inv_scale;
        ge = ig_convert<T>(gk);
      }
      if (p.maximize) gk = -gk;
      C pk = ig_convert<C>(pe), mk = ig_convert<C>(me), vk = ig_convert<C>(ve);
      C vmk = p.amsgrad ? ig_convert<C>(vme) : C(0);
      ignis::scalar_ops::AdamElement()(pk, gk, mk, vk, vmk, p.amsgrad != 0, p.decoupled != 0, lr,
                                       C(p.beta1), C(p.beta2), C(p.weight_decay), C(p.eps), bc1,
                                       bc2_sqrt);
      pe = ig_convert<T>(pk);
      me = ig_convert<T>(mk);
      ve = ig_convert<T>(vk);
      if (p.amsgrad) vme = ig_convert<T>(vmk);
    };
    int64_t tail = begin;
    if (V > 1 && (begin % V) == 0 && ig_mt_aligned(pp) && ig_mt_aligned(g) && ig_mt_aligned(m) &&
        ig_mt_aligned(v) && (!p.amsgrad || ig_mt_aligned(vmax))) {
      const int64_t vectors = (end - begin) / V;
      for (int64_t i = threadIdx.x; i < vectors; i += blockDim.x) {
        const int64_t k = begin + i * V;
        Vec P = *reinterpret_cast<const Vec*>(pp + k), G = *reinterpret_cast<const Vec*>(g + k);
        Vec M = *reinterpret_cast<const Vec*>(m + k), S = *reinterpret_cast<const Vec*>(v + k);
        Vec X = p.amsgrad ? *reinterpret_cast<const Vec*>(vmax + k) : S;
#pragma unroll
        for (int j = 0; j < V; ++j) update(P.v[j], G.v[j], M.v[j], S.v[j], X.v[j]);
        *reinterpret_cast<Vec*>(pp + k) = P;
        if (p.grad_scale) *reinterpret_cast<Vec*>(g + k) = G;
        *reinterpret_cast<Vec*>(m + k) = M;
        *reinterpret_cast<Vec*>(v + k) = S;
        if (p.amsgrad) *reinterpret_cast<Vec*>(vmax + k) = X;
      }
      tail = begin + vectors * V;
    }
    for (int64_t k = tail + threadIdx.x; k < end; k += blockDim.x) {
      T unused = T();
      update(pp[k], g[k], m[k], v[k], p.amsgrad ? vmax[k] : unused);
    }
  });
}
template <class T, class C> __forceinline__ void ig_fused_sgd(const IgMTParams& p) {
  if (p.found_inf && *p.found_inf != 0.0f) return;
  const C lr = p.lr_ptr ? C(*p.lr_ptr) : C(p.lr);
  const C inv_scale = p.grad_scale ? C(1.0 / double(*p.grad_scale)) : C(1);
  ig_mt_chunks(p, [&](const IgMTTensor& t, int64_t begin, int64_t end) {
    T* pp = reinterpret_cast<T*>(t.list[0]);
    T* g = reinterpret_cast<T*>(t.list[1]);
    T* b = reinterpret_cast<T*>(t.list[2]);
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
      const C gk = ig_mt_grad<T, C>(p, g, k, inv_scale);
      C pk = ig_convert<C>(pp[k]), bk = p.has_buffer ? ig_convert<C>(b[k]) : C(0);
      ignis::scalar_ops::SgdElement()(pk, gk, bk, p.has_buffer != 0, p.first_step != 0,
                                      p.nesterov != 0, lr, C(p.weight_decay), C(p.momentum),
                                      C(p.dampening));
      pp[k] = ig_convert<T>(pk);
      if (p.has_buffer) b[k] = ig_convert<T>(bk);
    }
  });
}
// _foreach_ ops: out = formula(self, y, z) per element, each formula a
// scalar_ops struct; y is list[2]'s element, else the 0-dim operand, else
// the tensor's number; z is list[3]'s element, else the tensor's number.
template <class T, class C> __forceinline__ void ig_foreach(const IgMTParams& p) {
  namespace so = ignis::scalar_ops;
  const C alpha = C(p.alpha);
  ig_mt_chunks(p, [&](const IgMTTensor& t, int64_t begin, int64_t end) {
    T* out = reinterpret_cast<T*>(t.list[0]);
    const T* a = reinterpret_cast<const T*>(t.list[1]);
    const T* b = reinterpret_cast<const T*>(t.list[2]);
    const T* c = reinterpret_cast<const T*>(t.list[3]);
    const C s = C(t.scalar);
    const C y0 = p.operand ? ig_convert<C>(*reinterpret_cast<const T*>(p.operand)) : s;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
      const C x = ig_convert<C>(a[k]);
      const C y = b ? ig_convert<C>(b[k]) : y0;
      const C z = c ? ig_convert<C>(c[k]) : s;
      C r;
      switch (p.formula) {
        case 0: r = so::Add()(x, y, alpha); break;
        case 1: r = so::Sub()(x, y, alpha); break;
        case 2: r = so::Mul()(x, y); break;
        case 3: r = so::Div()(x, y); break;
        case 4: r = so::Maximum()(x, y); break;
        case 5: r = so::Minimum()(x, y); break;
        case 6: r = so::Lerp()(x, y, z); break;
        case 7: r = so::Addcmul()(x, y, z, s); break;
        case 8: r = so::Addcdiv()(x, y, z, s); break;
        case 9: r = so::Sqrt()(x); break;
        case 10: r = so::Neg()(x); break;
        case 11: r = so::Abs()(x); break;
        case 12: r = so::Exp()(x); break;
        case 13: r = so::Log()(x); break;
        case 14: r = so::Reciprocal()(x); break;
        default: r = so::Sigmoid()(x); break;
      }
      out[k] = ig_convert<T>(r);
    }
  });
}
)CUDA";

const char* kKernels[] = {"fused_adam", "fused_sgd", "foreach"};

std::string source_for(ScalarType t) {
  std::string body = str("typedef ", device_type_name(t), " T;\ntypedef ", device_opmath_name(t),
                         " C;\n");
  // __grid_constant__: the kernel reads its argument where it lies (the
  // constant bank) rather than copying 3 KiB into each thread's local memory
  // to index its tensor table.
  for (const char* k : kKernels)
    body += str("extern \"C\" __global__ void ", k, "_", dtype_name(t),
                "(const __grid_constant__ IgMTParams p) { ig_", k, "<T, C>(p); }\n");
  const std::string sizes = str("\n#define IG_MT_TENSORS ", kMultiTensorsPerLaunch,
                                "\n#define IG_MT_CHUNK ", kMultiTensorChunk, "\n");
  return str(eager_prelude(), device_scalar_ops_source(), sizes, kTemplates, kKernelBodyMarker,
             body);
}

KernelRequest request(ScalarType t, const char* kernel) {
  KernelRequest r;
  r.symbol = str(kernel, "_", dtype_name(t));
  r.label = str("multi_tensor_", dtype_name(t), ".cu");
  r.source = source_for(t);
  r.options = {"-default-device", "-w"};
  return r;
}

CUfunction function_for(int device, ScalarType t, const char* kernel) {
  return get_named_kernel(device, str(kernel, "_", dtype_name(t)),
                          [&] { return request(t, kernel); });
}

// lr as a one-element float32 tensor: its device address; a CPU one (a 0-dim
// tensor may join any device) is read here and passed by value instead.
const float* device_float(const Tensor& t, double* value) {
  if (!t.defined()) return nullptr;
  if (t.device().is_cuda()) return static_cast<const float*>(t.data_ptr());
  *value = *static_cast<const float*>(t.data_ptr());
  return nullptr;
}

// Launches `kernel` over the tensors whose list entries `lists(i)` gives,
// in groups of one dtype and at most kMultiTensorsPerLaunch tensors.
template <class Lists>
void launch_lists(const std::vector<Tensor>& params, const char* kernel, MTParams base,
                  Lists lists) {
  std::map<ScalarType, std::vector<size_t>> by_dtype;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].numel() > 0) by_dtype[params[i].dtype()].push_back(i);
  if (by_dtype.empty()) return;
  const int device = params[0].device().index;
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  const int64_t sms = device_properties(device).multi_processor_count;
  for (const auto& [dtype, indices] : by_dtype) {
    CUfunction f = function_for(device, dtype, kernel);
    for (size_t at = 0; at < indices.size(); at += kMultiTensorsPerLaunch) {
      MTParams p = base;
      p.count = 0;
      p.chunks = 0;
      for (size_t j = at; j < indices.size() && p.count < kMultiTensorsPerLaunch; ++j) {
        MTTensor& m = p.t[p.count++];
        lists(indices[j], m);
        m.n = params[indices[j]].numel();
        m.first_chunk = p.chunks;
        p.chunks += (m.n + kMultiTensorChunk - 1) / kMultiTensorChunk;
      }
      const auto grid = static_cast<unsigned>(std::min<int64_t>(p.chunks, sms * 4));
      void* a[] = {&p};
      IGNIS_CU(cuLaunchKernel(f, grid, 1, 1, kBlockThreads, 1, 1, 0, stream.handle, a, nullptr));
    }
  }
}

void* ptr(const Tensor& t) { return t.data_ptr(); }

// grad_scale / found_inf: on the device (the op's meta rule checks it).
const float* scaler_value(const Tensor& t) {
  return t.defined() ? static_cast<const float*>(t.data_ptr()) : nullptr;
}

}  // namespace

void foreach_apply(const ForeachCall& a) {
  MTParams p{};
  p.formula = static_cast<int32_t>(a.formula);
  p.alpha = a.alpha;
  p.operand = a.operand.defined() ? a.operand.data_ptr() : nullptr;
  auto at = [](const std::vector<Tensor>& l, size_t i) { return l.empty() ? nullptr : ptr(l[i]); };
  launch_lists(a.self, "foreach", p, [&](size_t i, MTTensor& m) {
    m.list[0] = ptr(a.out[i]);
    m.list[1] = ptr(a.self[i]);
    m.list[2] = at(a.b, i);
    m.list[3] = at(a.c, i);
    m.list[4] = nullptr;
    m.step = nullptr;
    m.scalar = a.scalars.empty() ? 0.0 : a.scalars[i];
  });
}

std::vector<KernelRequest> multi_tensor_kernel_requests(ScalarType t) {
  std::vector<KernelRequest> v;
  for (const char* k : kKernels) v.push_back(request(t, k));
  return v;
}

void fused_adam(const AdamLists& t, const AdamStep& h) {
  MTParams p{};
  p.lr = h.lr;
  p.beta1 = h.beta1;
  p.beta2 = h.beta2;
  p.weight_decay = h.weight_decay;
  p.eps = h.eps;
  p.lr_ptr = device_float(h.lr_tensor, &p.lr);
  p.grad_scale = scaler_value(h.grad_scale);
  p.found_inf = scaler_value(h.found_inf);
  p.amsgrad = h.amsgrad;
  p.maximize = h.maximize;
  p.decoupled = h.decoupled;
  launch_lists(t.params, "fused_adam", p, [&](size_t i, MTTensor& m) {
    m.list[0] = ptr(t.params[i]);
    m.list[1] = ptr(t.grads[i]);
    m.list[2] = ptr(t.exp_avgs[i]);
    m.list[3] = ptr(t.exp_avg_sqs[i]);
    m.list[4] = h.amsgrad ? ptr(t.max_exp_avg_sqs[i]) : nullptr;
    m.step = static_cast<const float*>(t.steps[i].data_ptr());
  });
}

void fused_sgd(const SgdLists& t, const SgdStep& h) {
  MTParams p{};
  p.lr = h.lr;
  p.weight_decay = h.weight_decay;
  p.momentum = h.momentum;
  p.dampening = h.dampening;
  p.lr_ptr = device_float(h.lr_tensor, &p.lr);
  p.grad_scale = scaler_value(h.grad_scale);
  p.found_inf = scaler_value(h.found_inf);
  p.nesterov = h.nesterov;
  p.maximize = h.maximize;
  p.first_step = h.first_step;
  p.has_buffer = !t.momentum_buffers.empty();
  launch_lists(t.params, "fused_sgd", p, [&](size_t i, MTTensor& m) {
    m.list[0] = ptr(t.params[i]);
    m.list[1] = ptr(t.grads[i]);
    m.list[2] = t.momentum_buffers.empty() ? nullptr : ptr(t.momentum_buffers[i]);
    m.step = nullptr;
  });
}

}  // namespace ignis::cuda

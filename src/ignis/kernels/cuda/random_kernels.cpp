#include "ignis/kernels/cuda/random_kernels.h"

#include <map>
#include <mutex>
#include <tuple>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cuda/device_scalar_ops.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis::cuda {

namespace {

// What each element is: must match the cases of ig_generate.
enum class Gen : int32_t { Affine, AffineInt, UniformFloat, UniformDouble, Normal, RandInt,
                           Bernoulli };

// Must match IgGenParams in kTemplates.
struct GenParams {
  double a, b;
  int64_t ia, ib;
  uint64_t seed, off;
  int32_t kind;
};

// Note [CUDA random numbers are the CPU's]
// ig_philox is kernels/cpu/random.h's Philox::block, and each case of
// ig_generate is the lambda kernels/cpu/fill.cpp gives `generate` for that
// fill, in the same types (double arithmetic, then one conversion to T as
// the CPU's static_cast<scalar_t> does), so both devices store the same
// bits for a (seed, offset). Keep them in step.
const char* kTemplates = R"CUDA(
// ---- ranges and random numbers (kernels/cuda/random_kernels.cpp) ----
struct IgGenParams {
  double a, b;
  int64_t ia, ib;
  uint64_t seed, off;
  int32_t kind;
};
__forceinline__ void ig_philox(uint64_t seed, uint64_t ctr, uint32_t out[4]) {
  uint32_t c0 = uint32_t(ctr), c1 = uint32_t(ctr >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c0;
    const uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}
__forceinline__ float ig_philox_float(uint32_t x) { return (x >> 8) * (1.0f / 16777216.0f); }
__forceinline__ double ig_philox_double(uint32_t a, uint32_t b) {
  const uint64_t v = (uint64_t(a) << 32 | b) >> 11;
  return v * (1.0 / 9007199254740992.0);
}
template <class T> __forceinline__ void ig_generate(T* out, int64_t n, IgGenParams p) {
  IG_GRID_STRIDE_LOOP(i, n) {
    uint32_t r[4];
    // UniformFloat: four elements a block, as dropout (Note [Uniform floats are
    // dropout's numbers], kernels/cpu/fill.cpp).
    if (p.kind >= 2) ig_philox(p.seed, p.off + uint64_t(p.kind == 2 ? i / 4 : i), r);
    switch (p.kind) {
      case 0: out[i] = ig_convert<T>(p.a + p.b * double(i)); break;
      case 1: out[i] = ig_convert<T>(p.ia + p.ib * i); break;
      case 2: {  // [a, b) in float precision; a value rounding up to b in T becomes a
        const float u = ig_philox_float(r[i % 4]);
        double v = p.a + (p.b - p.a) * u;
        if (double(ig_widen<T>::get(ig_convert<T>(v))) >= p.b) v = p.a;
        out[i] = ig_convert<T>(v);
        break;
      }
      case 3: out[i] = ig_convert<T>(p.a + (p.b - p.a) * ig_philox_double(r[0], r[1])); break;
      case 4: {  // Box-Muller on two 53-bit uniforms; u1 in (0, 1]
        const double u1 = 1.0 - ig_philox_double(r[0], r[1]);
        const double u2 = ig_philox_double(r[2], r[3]);
        out[i] = ig_convert<T>(p.a + p.b * std::sqrt(-2.0 * std::log(u1)) *
                                         std::cos(6.283185307179586 * u2));
        break;
      }
      case 5: {
        const uint64_t range = uint64_t(p.ib) - uint64_t(p.ia);
        const uint64_t v = (uint64_t(r[0]) << 32) | r[1];
        out[i] = ig_convert<T>(int64_t(uint64_t(p.ia) + v % range));
        break;
      }
      default: out[i] = ig_convert<T>(ig_philox_double(r[0], r[1]) < p.a ? 1 : 0); break;
    }
  }
}
// native_dropout: one Philox block gives the uniforms of four consecutive
// elements (as the CPU's dropout numbers them).
template <class T, class C>
__forceinline__ void ig_dropout(const T* x, T* y, bool* m, int64_t n, uint64_t seed,
                                uint64_t off, float keep, double scale_d) {
  const C scale = C(scale_d);
  const int64_t blocks = (n + 3) / 4;
  IG_GRID_STRIDE_LOOP(b, blocks) {
    uint32_t r[4];
    ig_philox(seed, off + uint64_t(b), r);
    const int64_t i0 = b * 4;
    for (int k = 0; k < 4 && i0 + k < n; ++k) {
      const bool kept = ig_philox_float(r[k]) < keep;
      m[i0 + k] = kept;
      y[i0 + k] = ig_convert<T>(kept ? ig_convert<C>(x[i0 + k]) * scale : C(0));
    }
  }
}
)CUDA";

KernelRequest make_request(std::string symbol, const std::string& body) {
  KernelRequest r;
  r.label = symbol + ".cu";
  r.symbol = std::move(symbol);
  r.source = str(eager_prelude(), device_scalar_ops_source(), kTemplates, kKernelBodyMarker, body);
  r.options = {"-default-device", "-w"};
  return r;
}

KernelRequest generate_request(ScalarType t) {
  const std::string sym = str("generate_", dtype_name(t));
  return make_request(sym, str("extern \"C\" __global__ void ", sym, "(", device_type_name(t),
                               "* out, int64_t n, IgGenParams p) { ig_generate(out, n, p); }\n"));
}

KernelRequest dropout_request(ScalarType t) {
  const std::string sym = str("dropout_", dtype_name(t));
  const char* T = device_type_name(t);
  return make_request(sym, str("extern \"C\" __global__ void ", sym, "(const ", T, "* x, ", T,
                               "* y, bool* m, int64_t n, uint64_t seed, uint64_t off, float keep, "
                               "double scale) { ig_dropout<", T, ", ", device_opmath_name(t),
                               ">(x, y, m, n, seed, off, keep, scale); }\n"));
}

CUfunction function_for(int device, ScalarType t, bool dropout) {
  using Key = std::tuple<int, ScalarType, bool>;
  static std::mutex mu;
  static auto* functions = new std::map<Key, CUfunction>();  // never destroyed
  Key key{device, t, dropout};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = functions->find(key);
    if (it != functions->end()) return it->second;
  }
  CUfunction f = get_kernel(device, dropout ? dropout_request(t) : generate_request(t));
  std::lock_guard<std::mutex> lock(mu);
  functions->emplace(std::move(key), f);
  return f;
}

// Runs ig_generate into t, through a contiguous temporary when t is not
// contiguous (as the CPU's generate does).
void generate(const Tensor& t, GenParams p) {
  int64_t n = t.numel();
  if (n == 0) return;
  const int device = t.device().index;
  DeviceGuard guard(device);
  Tensor dst = t.is_contiguous() ? t : empty_tensor(t.sizes(), t.dtype(), t.device());
  void* data = dst.data_ptr();
  void* args[] = {&data, &n, &p};
  launch_grid_stride(function_for(device, t.dtype(), false), n, args, current_stream(device));
  if (!dst.is_same(t)) copy_tensor(t, dst);
}

GenParams params(Gen kind) {
  GenParams p{};
  p.kind = static_cast<int32_t>(kind);
  return p;
}

// A draw from g: its key and the counters t's elements use, reserved.
GenParams drawn(Gen kind, const Tensor& t, Generator& g) {
  GenParams p = params(kind);
  const uint64_t n = static_cast<uint64_t>(t.numel());
  std::tie(p.seed, p.off) = g.reserve(kind == Gen::UniformFloat ? (n + 3) / 4 : n);
  return p;
}

}  // namespace

std::vector<KernelRequest> random_kernel_requests(ScalarType t) {
  std::vector<KernelRequest> v{generate_request(t)};
  if (is_floating(t)) v.push_back(dropout_request(t));
  return v;
}

void fill_affine(const Tensor& t, double start, double step) {
  GenParams p = params(Gen::Affine);
  p.a = start;
  p.b = step;
  generate(t, p);
}

void fill_affine_int(const Tensor& t, int64_t start, int64_t step) {
  GenParams p = params(Gen::AffineInt);
  p.ia = start;
  p.ib = step;
  generate(t, p);
}

void fill_uniform(const Tensor& t, double from, double to, Generator& g) {
  GenParams p =
      drawn(t.dtype() == ScalarType::Float64 ? Gen::UniformDouble : Gen::UniformFloat, t, g);
  p.a = from;
  p.b = to;
  generate(t, p);
}

void fill_normal(const Tensor& t, double mean, double std, Generator& g) {
  GenParams p = drawn(Gen::Normal, t, g);
  p.a = mean;
  p.b = std;
  generate(t, p);
}

void fill_randint(const Tensor& t, int64_t low, int64_t high, Generator& g) {
  GenParams p = drawn(Gen::RandInt, t, g);
  p.ia = low;
  p.ib = high;
  generate(t, p);
}

void fill_bernoulli(const Tensor& t, double prob, Generator& g) {
  GenParams p = drawn(Gen::Bernoulli, t, g);
  p.a = prob;
  generate(t, p);
}

void dropout(const Tensor& out, const Tensor& mask, const Tensor& in, double p, Generator& g) {
  int64_t n = in.numel();
  if (n == 0) return;
  IGNIS_INTERNAL_ASSERT(in.is_contiguous() && out.is_contiguous() && mask.is_contiguous() &&
                        in.dtype() == out.dtype() && mask.dtype() == ScalarType::Bool);
  const int64_t blocks = (n + 3) / 4;
  auto [seed, off] = g.reserve(static_cast<uint64_t>(blocks));
  float keep = static_cast<float>(1.0 - p);
  double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  const int device = in.device().index;
  DeviceGuard guard(device);
  const void* x = in.data_ptr();
  void* y = out.data_ptr();
  void* m = mask.data_ptr();
  void* args[] = {&x, &y, &m, &n, &seed, &off, &keep, &scale};
  launch_grid_stride(function_for(device, in.dtype(), true), blocks, args,
                     current_stream(device));
}

}  // namespace ignis::cuda

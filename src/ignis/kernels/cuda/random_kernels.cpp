#include "ignis/kernels/cuda/random_kernels.h"

#include <tuple>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cuda/device_scalar_ops.h"
#include "ignis/kernels/cpu/sample.h"
#include "ignis/kernels/cuda/sort.h"
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
// ---- multinomial (cpu::multinomial_out's draws, Note [CUDA multinomial]) ----
__forceinline__ double ig_open_unit(uint64_t seed, uint64_t ctr) {  // (0, 1], exactly
  uint32_t r[4];
  ig_philox(seed, ctr, r);
  return ig_philox_double(r[0], r[1]) + 1.0 / 9007199254740992.0;
}
template <class T> __forceinline__ double ig_weight(const T* p, int64_t i) {
  return double(ig_widen<T>::get(p[i]));
}
// A thread a row: the running sums in the CPU's order, and the row's
// status (0 valid, 1 a NaN, infinite or negative weight, 2 a sum <= 0).
template <class T>
__forceinline__ void ig_multinomial_cdf(const T* p, int64_t rows, int64_t n, int64_t ps_row,
                                        int64_t ps, double* cdf, int32_t* status) {
  IG_GRID_STRIDE_LOOP(r, rows) {
    double sum = 0;
    int32_t st = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double v = ig_weight(p, r * ps_row + j * ps);
      if (!(v - v == 0.0 && v >= 0)) st = 1;
      sum += v;
      cdf[r * n + j] = sum;
    }
    status[r] = st != 0 ? st : (sum > 0 ? 0 : 2);
  }
}
// With replacement: sample s of row r is the first category whose running
// sum exceeds u * total (std::upper_bound), never a zero-weight one.
template <class T>
__forceinline__ void ig_multinomial_draw(const T* p, const double* cdf, int64_t rows, int64_t n,
                                         int64_t ps_row, int64_t ps, int64_t k, uint64_t seed,
                                         uint64_t off, int64_t* out, int64_t os_row,
                                         int64_t os) {
  IG_GRID_STRIDE_LOOP(i, rows * k) {
    const int64_t r = i / k, s = i % k;
    const double* c = cdf + r * n;
    const double u = (1.0 - ig_open_unit(seed, off + uint64_t(i))) * c[n - 1];
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (u < c[mid]) hi = mid;
      else lo = mid + 1;
    }
    int64_t j = lo < n - 1 ? lo : n - 1;
    while (j > 0 && ig_weight(p, r * ps_row + j * ps) == 0) --j;
    out[r * os_row + s * os] = j;
  }
}
// Without replacement: each category's key E / w (E ~ Exp(1)); the k
// smallest, ties by index, are the draw (sorted by cuda::sort_out).
template <class T>
__forceinline__ void ig_multinomial_keys(const T* p, int64_t rows, int64_t n, int64_t ps_row,
                                         int64_t ps, uint64_t seed, uint64_t off, double* keys) {
  IG_GRID_STRIDE_LOOP(i, rows * n) {
    const int64_t r = i / n, j = i % n;
    const double w = ig_weight(p, r * ps_row + j * ps);
    keys[i] = w > 0 ? -std::log(ig_open_unit(seed, off + uint64_t(i))) / w
                    : std::numeric_limits<double>::infinity();
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

// The three multinomial kernels for probabilities of dtype t, one unit.
KernelRequest multinomial_request(ScalarType t) {
  const std::string d = dtype_name(t), T = device_type_name(t);
  const std::string rows = "int64_t rows, int64_t n, int64_t ps_row, int64_t ps";
  return make_request(
      str("multinomial_cdf_", d),
      str("extern \"C\" __global__ void multinomial_cdf_", d, "(const ", T, "* p, ", rows,
          ", double* cdf, int32_t* status) { ig_multinomial_cdf(p, rows, n, ps_row, ps, cdf, "
          "status); }\n",
          "extern \"C\" __global__ void multinomial_draw_", d, "(const ", T,
          "* p, const double* cdf, ", rows, ", int64_t k, uint64_t seed, uint64_t off, "
          "int64_t* out, int64_t os_row, int64_t os) { ig_multinomial_draw(p, cdf, rows, n, "
          "ps_row, ps, k, seed, off, out, os_row, os); }\n",
          "extern \"C\" __global__ void multinomial_keys_", d, "(const ", T, "* p, ", rows,
          ", uint64_t seed, uint64_t off, double* keys) { ig_multinomial_keys(p, rows, n, "
          "ps_row, ps, seed, off, keys); }\n"));
}

enum class Unit { Generate, Dropout, Multinomial };

// `kernel`: which of the unit's kernels (the unit's first when null).
CUfunction function_for(int device, ScalarType t, Unit unit, const char* kernel = nullptr) {
  const char* first = unit == Unit::Generate  ? "generate"
                      : unit == Unit::Dropout ? "dropout"
                                              : "multinomial_cdf";
  const std::string symbol = str(kernel ? kernel : first, "_", dtype_name(t));
  return get_named_kernel(device, symbol, [&] {
    KernelRequest r = unit == Unit::Generate  ? generate_request(t)
                      : unit == Unit::Dropout ? dropout_request(t)
                                              : multinomial_request(t);
    r.symbol = symbol;
    return r;
  });
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
  launch_grid_stride(function_for(device, t.dtype(), Unit::Generate), n, args,
                     current_stream(device));
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
  if (is_floating(t)) {
    v.push_back(dropout_request(t));
    v.push_back(multinomial_request(t));
  }
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
  launch_grid_stride(function_for(device, in.dtype(), Unit::Dropout), blocks, args,
                     current_stream(device));
}

// Note [CUDA multinomial]
// The CPU's draws (cpu::multinomial_out), from the same counters of the same
// generator: a thread a row sums the weights in the CPU's order (so the
// running sums, and with them every draw with replacement, are the same
// bits) and flags invalid rows; those flags come back to the host (one
// synchronization) so that a bad distribution raises the CPU's error before
// anything is drawn, where torch's CUDA kernel can only assert on the
// device. Without replacement the keys -log(u) / w go through the device's
// double log (which may differ from the host's in the last bit) and
// cuda::sort_out takes the k smallest, ties by index as on the CPU.
void multinomial_out(const Tensor& out, const Tensor& probs, int64_t k, bool replacement,
                     Generator& g) {
  const bool one_row = probs.dim() == 1;
  const int64_t n = probs.sizes()[probs.dim() - 1];
  int64_t rows = one_row ? 1 : probs.sizes()[0];
  const Tensor p2 = one_row ? make_view(probs, {1, n}, {0, probs.strides()[0]},
                                        probs.storage_offset())
                            : probs;
  const Tensor o2 = one_row ? make_view(out, {1, k}, {0, out.strides()[0]}, out.storage_offset())
                            : out;
  int64_t nn = n, ps_row = p2.strides()[0], ps = p2.strides()[1];
  const ScalarType t = probs.dtype();
  const int device = probs.device().index;
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  Tensor cdf = empty_tensor({rows, n}, ScalarType::Float64, probs.device());
  Tensor status = empty_tensor({rows}, ScalarType::Int32, probs.device());
  const void* p = p2.data_ptr();
  void* c = cdf.data_ptr();
  void* st = status.data_ptr();
  {
    void* args[] = {&p, &rows, &nn, &ps_row, &ps, &c, &st};
    launch_grid_stride(function_for(device, t, Unit::Multinomial, "multinomial_cdf"), rows, args,
                       stream);
  }
  Tensor host = empty_tensor({rows}, ScalarType::Int32, Device(DeviceType::CPU));
  copy_tensor(host, status);  // waits for the kernel
  const int32_t* flags = host.data<int32_t>();
  for (int64_t r = 0; r < rows; ++r) {
    IGNIS_CHECK(flags[r] != 1, "probability tensor contains either `inf`, `nan` or element < 0");
    IGNIS_CHECK(flags[r] != 2, "invalid multinomial distribution (sum of probabilities <= 0)");
  }
  const int64_t per_row = replacement ? k : n;
  auto [seed, off] = g.reserve(static_cast<uint64_t>(rows * per_row));
  if (replacement) {
    void* o = o2.data_ptr();
    int64_t kk = k, os_row = o2.strides()[0], os = o2.strides()[1];
    void* args[] = {&p, &c, &rows, &nn, &ps_row, &ps, &kk, &seed, &off, &o, &os_row, &os};
    launch_grid_stride(function_for(device, t, Unit::Multinomial, "multinomial_draw"), rows * k,
                       args, stream);
    return;
  }
  {
    void* args[] = {&p, &rows, &nn, &ps_row, &ps, &seed, &off, &c};
    launch_grid_stride(function_for(device, t, Unit::Multinomial, "multinomial_keys"), rows * n,
                       args, stream);
  }
  Tensor keys_sorted = empty_tensor({rows, k}, ScalarType::Float64, probs.device());
  sort_out(keys_sorted, o2, cdf, 1, k, false);
}

void fill_randperm(const Tensor& t, Generator& g) {
  Tensor host = empty_tensor(t.sizes(), t.dtype(), Device(DeviceType::CPU));
  cpu::fill_randperm(host, g);
  copy_tensor(t, host);
}

}  // namespace ignis::cuda

#include "ignis/kernels/cpu/fill.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/loops.h"
#include "ignis/kernels/cpu/parallel.h"
#include "ignis/kernels/cpu/vec_math.h"

namespace ignis::cpu {

namespace {

template <typename F>
void parallel_range(int64_t n, F f) {
  const int nt = threads_for(n);
  if (nt <= 1) {
    f(0, n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t per = (n + nt - 1) / nt;
    int64_t b = std::min(n, t * per), e = std::min(n, b + per);
    f(b, e);
  }
}

// Fills t in row-major element order, through a contiguous temporary when t
// is not contiguous: fill(p, b, e) writes elements [b, e) of the scalar_t
// array p, the ranges split over threads.
template <typename Fill>
void fill_ranges(const Tensor& t, const char* name, Fill fill) {
  if (t.numel() == 0 || t.device().is_meta()) return;
  Tensor dst = t.is_contiguous() ? t : empty_tensor(t.sizes(), t.dtype(), t.device());
  IGNIS_DISPATCH_ALL(dst.dtype(), name, [&] {
    scalar_t* p = dst.data<scalar_t>();
    parallel_range(dst.numel(), [&](int64_t b, int64_t e) { fill(p, b, e); });
  });
  if (!dst.is_same(t)) copy_into(t, dst);
}

// Runs gen(i, scalar_t()) -> value for i in [0, numel) into t.
template <typename Gen>
void generate(const Tensor& t, Gen gen) {
  fill_ranges(t, "fill", [&](auto* p, int64_t b, int64_t e) {
    using T = std::remove_pointer_t<decltype(p)>;
    for (int64_t i = b; i < e; ++i) p[i] = static_cast<T>(gen(i, T()));
  });
}

// Runs value(r0, r1, r2, r3, scalar_t()) on the four words of Philox block
// off + i for each element i of t, 16 blocks per SIMD batch (random.h): the
// draws that take a whole block per element.
template <typename Value>
void generate_from_blocks(const Tensor& t, uint64_t seed, uint64_t off, Value value) {
  fill_ranges(t, "random", [&](auto* p, int64_t b, int64_t e) {
    using T = std::remove_pointer_t<decltype(p)>;
    philox_block_per_element(
        seed, off, b, e, [&](int64_t i, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
          p[i] = static_cast<T>(value(r0, r1, r2, r3, T()));
        });
  });
}

}  // namespace

void check_scalar_fits(const Scalar& v, ScalarType t) {
  // Integer types take [lowest, max]; unsigned ones also take negative
  // integers down to -max (they wrap). Floating types take inf and nan.
  int64_t lo = 0, hi = 0;
  double fmax = 0;
  const char* name = "";
  switch (t) {
    case ScalarType::UInt8: lo = -255, hi = 255, name = "uint8_t"; break;
    case ScalarType::Int8: lo = -128, hi = 127, name = "int8_t"; break;
    case ScalarType::Int16: lo = -32768, hi = 32767, name = "int16_t"; break;
    case ScalarType::Int32: lo = INT32_MIN, hi = INT32_MAX, name = "int"; break;
    case ScalarType::Int64: lo = INT64_MIN, hi = INT64_MAX, name = "int64_t"; break;
    case ScalarType::Float16: fmax = 65504.0, name = "c10::Half"; break;
    case ScalarType::BFloat16: fmax = 3.3895313892515355e38, name = "c10::BFloat16"; break;
    case ScalarType::Float32: fmax = std::numeric_limits<float>::max(), name = "float"; break;
    default: return;  // bool and double hold any Python number
  }
  bool bad;
  if (is_floating(t)) {
    double d = v.to_double();
    bad = std::isfinite(d) && std::abs(d) > fmax;
  } else if (v.is_float()) {
    double d = v.to_double();
    double dlo = t == ScalarType::UInt8 ? 0.0 : static_cast<double>(lo);
    bad = !(d >= dlo && d <= static_cast<double>(hi));
  } else {
    bad = v.to_int() < lo || v.to_int() > hi;
  }
  IGNIS_CHECK(!bad, "value cannot be converted to type ", name, " without overflow");
}

void fill(const Tensor& t, const Scalar& v) {
  if (t.numel() == 0 || t.device().is_meta()) return;
  IGNIS_DISPATCH_ALL(t.dtype(), "fill_", [&] {
    using T = opmath_t<scalar_t>;
    T value = v.to<T>();
    if (t.is_contiguous()) {
      scalar_t sv = static_cast<scalar_t>(value);
      scalar_t* p = t.data<scalar_t>();
      parallel_range(t.numel(), [&](int64_t b, int64_t e) { std::fill(p + b, p + e, sv); });
      return;
    }
    TensorIterator it;
    it.add_output(t);
    IterConfig cfg;
    cfg.op_name = "fill_";
    cfg.common_dtype = t.dtype();
    it.build(cfg, t.device());
    cpu_kernel<scalar_t, scalar_t>(it, [value]() -> T { return value; });
  });
}

void fill_affine(const Tensor& t, double start, double step) {
  generate(t, [=](int64_t i, auto) { return start + step * static_cast<double>(i); });
}
void fill_affine_int(const Tensor& t, int64_t start, int64_t step) {
  generate(t, [=](int64_t i, auto) { return start + step * i; });
}
void fill_linspace(const Tensor& t, double start, double end) {
  int64_t n = t.numel();
  if (n == 1) {
    generate(t, [=](int64_t, auto) { return start; });
    return;
  }
  double step = (end - start) / static_cast<double>(n - 1);
  int64_t half = n / 2;
  // Symmetric from both ends, as PyTorch computes it, so the last value is end.
  generate(t, [=](int64_t i, auto) {
    return i < half ? start + step * static_cast<double>(i)
                    : end - step * static_cast<double>(n - i - 1);
  });
}
void fill_eye(const Tensor& t) {
  int64_t m = t.sizes()[1];
  generate(t, [=](int64_t i, auto) { return (i / m == i % m) ? 1 : 0; });
}

// Note [Uniform floats are dropout's numbers]
// native_dropout (ops/nn.cpp) and the float-precision uniform fill (rand,
// rand_like, uniform_ on float32 and 16-bit tensors) both take element i
// from word i % 4 of Philox block offset + i / 4 and reserve ceil(n / 4)
// blocks. So the decomposed dropout of a compiled graph (rand(shape) < 1 - p,
// ops/decomp/nn.cpp) draws eager dropout's mask for the same seed, and
// leaves the generator where eager's leaves it. Double precision takes two
// words, so one block per element. CUDA's kernels number them alike
// (kernels/cuda/random_kernels.cpp).
void fill_uniform(const Tensor& t, double from, double to, Generator& g) {
  const uint64_t n = static_cast<uint64_t>(t.numel());
  const double range = to - from;
  if (t.dtype() == ScalarType::Float64) {
    auto [seed, off] = g.reserve(n);
    generate_from_blocks(t, seed, off, [=](uint32_t r0, uint32_t r1, uint32_t, uint32_t, auto) {
      return from + range * Philox::to_double(r0, r1);
    });
    return;
  }
  auto [seed, off] = g.reserve((n + 3) / 4);
  // Float precision, 24 bits, in batches of Philox blocks (random.h).
  fill_ranges(t, "uniform_", [&](auto* p, int64_t b, int64_t e) {
    using T = std::remove_pointer_t<decltype(p)>;
    if constexpr (std::is_same_v<T, float>) {
      if (from == 0.0 && to == 1.0) {
        // rand(): the formula below is u itself (24 bits: exact in float and
        // below 1), without its double arithmetic (a compiled dropout's
        // numbers: 70 -> 56 us for 89,600 floats at 2 threads, which is
        // Philox's own rate)
        philox_uniform_floats(seed, off, b, e, [&](int64_t i, float u) { p[i] = u; });
        return;
      }
    }
    philox_uniform_floats(seed, off, b, e, [&](int64_t i, float u) {
      // A value that rounds up to `to` in the output type (often, for
      // 16-bit floats) becomes `from`: [from, to).
      const T v = static_cast<T>(from + range * u);
      p[i] = static_cast<double>(v) >= to ? static_cast<T>(from) : v;
    });
  });
}

// Note [Normal floats in batches]
// Element i of a normal draw is Box-Muller on block off + i: two 53-bit
// uniforms u1 (in (0, 1]) and u2, sqrt(-2 log u1) cos(2 pi u2). Float
// precision (float32 and the 16-bit floats) computes it with vec_math.h's
// log (relative error 2e-11) and cosine, on 16 blocks per SIMD batch (16M
// floats at 2 threads: 294 -> 56 ms); the result rounds to the libm
// formula's float on all but about 4 elements in 10^6, which are an ulp off
// (tested against NumPy). float64 keeps libm's log and cos.
void fill_normal(const Tensor& t, double mean, double std, Generator& g) {
  auto [seed, off] = g.reserve(static_cast<uint64_t>(t.numel()));
  generate_from_blocks(t, seed, off,
                       [=](uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3, auto tag) -> double {
    // Box-Muller on two 53-bit uniforms; u1 in (0, 1] so log is finite.
    const double u1 = 1.0 - Philox::to_double(r0, r1);
    const double u2 = Philox::to_double(r2, r3);
    if constexpr (std::is_same_v<decltype(tag), double>) {
      return mean + std * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    } else {
      return mean + std * std::sqrt(-2.0 * vec_math_detail::log_positive(u1)) *
                        vec_math_detail::cos_two_pi(u2);
    }
  });
}

void fill_randint(const Tensor& t, int64_t low, int64_t high, Generator& g) {
  auto [seed, off] = g.reserve(static_cast<uint64_t>(t.numel()));
  // In uint64: high - low may not fit int64 (e.g. the whole int64 range).
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  generate_from_blocks(t, seed, off, [=](uint32_t r0, uint32_t r1, uint32_t, uint32_t, auto) {
    const uint64_t v = (uint64_t(r0) << 32) | r1;
    return static_cast<int64_t>(static_cast<uint64_t>(low) + v % range);
  });
}

void fill_bernoulli(const Tensor& t, double p, Generator& g) {
  auto [seed, off] = g.reserve(static_cast<uint64_t>(t.numel()));
  generate_from_blocks(t, seed, off, [=](uint32_t r0, uint32_t r1, uint32_t, uint32_t, auto) {
    return Philox::to_double(r0, r1) < p ? 1 : 0;
  });
}

Generator& default_generator_impl() {
  static Generator g;
  return g;
}

}  // namespace ignis::cpu

namespace ignis {
namespace {
thread_local Generator* tls_generator = nullptr;
}  // namespace

Generator& default_generator() { return cpu::default_generator_impl(); }

Generator& current_generator() {
  return tls_generator ? *tls_generator : cpu::default_generator_impl();
}

GeneratorGuard::GeneratorGuard(Generator* g) : prev_(tls_generator) { tls_generator = g; }
GeneratorGuard::~GeneratorGuard() { tls_generator = prev_; }
}  // namespace ignis

// The FFT kernels' plan cache (kernels/cpu/fft.cpp, Note [FFT kernels]): a
// plan built once per length and reused, the cache bounded, and threads that
// transform at once (more lengths than the cache holds, so plans are evicted
// while other threads run them) getting the same bits as one thread alone.
// The transforms' values are tested from Python against NumPy and torch
// (tests/python/test_fft.py).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/kernels/cpu/fft.h"

using namespace ignis;
using namespace ignis::cpu;

namespace {

const Device kCpu(DeviceType::CPU);

Tensor random_tensor(const DimVector& sizes, ScalarType dtype, unsigned seed) {
  Tensor t = empty_tensor(sizes, dtype, kCpu);
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist;
  const int64_t reals = t.numel() * (is_complex(dtype) ? 2 : 1);
  if (dtype == ScalarType::Float32 || dtype == ScalarType::ComplexFloat) {
    float* p = static_cast<float*>(t.data_ptr());
    for (int64_t i = 0; i < reals; ++i) p[i] = float(dist(rng));
  } else {
    double* p = static_cast<double*>(t.data_ptr());
    for (int64_t i = 0; i < reals; ++i) p[i] = dist(rng);
  }
  return t;
}

std::vector<char> bytes_of(const Tensor& t) {
  const char* p = static_cast<const char*>(t.data_ptr());
  return std::vector<char>(p, p + t.numel() * int64_t(element_size(t.dtype())));
}

// One transform of each kind of a few lines of length n: c2c forward in
// complex64, r2c in float64, c2r in float32; the outputs' bytes.
std::vector<std::vector<char>> transforms(int64_t n, unsigned seed) {
  std::vector<std::vector<char>> out;
  const Tensor z = random_tensor({3, n}, ScalarType::ComplexFloat, seed);
  Tensor y = empty_tensor({3, n}, ScalarType::ComplexFloat, kCpu);
  fft_c2c(y, z, {1}, true, 1.0);
  out.push_back(bytes_of(y));
  const Tensor x = random_tensor({3, n}, ScalarType::Float64, seed + 1);
  Tensor s = empty_tensor({3, n / 2 + 1}, ScalarType::ComplexDouble, kCpu);
  fft_r2c(s, x, {1}, true, 1.0);
  out.push_back(bytes_of(s));
  const Tensor h = random_tensor({3, n / 2 + 1}, ScalarType::ComplexFloat, seed + 2);
  Tensor r = empty_tensor({3, n}, ScalarType::Float32, kCpu);
  fft_c2r(r, h, {1}, 1.0 / double(n));
  out.push_back(bytes_of(r));
  return out;
}

TEST(FftPlanCache, BuildsAPlanOncePerLengthAndReusesIt) {
  fft_plan_cache_clear();
  const Tensor z = random_tensor({2, 60}, ScalarType::ComplexFloat, 1);
  Tensor y = empty_tensor({2, 60}, ScalarType::ComplexFloat, kCpu);
  fft_c2c(y, z, {1}, true, 1.0);
  FftPlanCacheStats s = fft_plan_cache_stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 0);
  EXPECT_EQ(s.plans, 1);
  // The other direction and another call: the same plan.
  fft_c2c(y, z, {1}, false, 1.0);
  fft_c2c(y, z, {1}, true, 1.0);
  s = fft_plan_cache_stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 2);
  // A 2-D transform of 60 x 60: one lookup per dim, both hits.
  const Tensor sq = random_tensor({60, 60}, ScalarType::ComplexFloat, 2);
  Tensor sy = empty_tensor({60, 60}, ScalarType::ComplexFloat, kCpu);
  fft_c2c(sy, sq, {0, 1}, true, 1.0);
  s = fft_plan_cache_stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 4);
  // A real transform of 60: a real plan, over a complex plan of 30.
  const Tensor x = random_tensor({2, 60}, ScalarType::Float32, 3);
  Tensor X = empty_tensor({2, 31}, ScalarType::ComplexFloat, kCpu);
  fft_r2c(X, x, {1}, true, 1.0);
  s = fft_plan_cache_stats();
  EXPECT_EQ(s.misses, 3);
  EXPECT_EQ(s.plans, 3);
}

TEST(FftPlanCache, StaysBounded) {
  fft_plan_cache_clear();
  // 100 lengths, each in both precisions: the cache keeps at most 16 plans of
  // each of its four kinds.
  for (int64_t n = 2; n < 102; ++n) transforms(n, unsigned(n));
  const FftPlanCacheStats s = fft_plan_cache_stats();
  EXPECT_LE(s.plans, 4 * 16);
  EXPECT_GE(s.plans, 16);
  EXPECT_LE(s.bytes, int64_t(4) * (64 << 20));
  EXPECT_GE(s.misses, 300);
}

TEST(FftPlanCache, ThreadsTransformingAtOnceGetTheSameBits) {
  // Direct, generic-radix and Bluestein lengths, even and odd: more than the
  // cache's 16 a kind, so threads evict plans that others are running.
  const std::vector<int64_t> lengths{5,   12,  17,  60,   97,   128,  243,  289, 400,
                                     1000, 1031, 1155, 2062, 3000, 3001, 4096, 6,  10,
                                     14,  22,  26,  34,   38,   46};
  std::vector<std::vector<std::vector<char>>> want;
  for (size_t i = 0; i < lengths.size(); ++i) want.push_back(transforms(lengths[i], unsigned(i)));
  fft_plan_cache_clear();
  constexpr int kThreads = 6, kRounds = 3;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round)
        for (size_t k = 0; k < lengths.size(); ++k) {
          const size_t i = (k * 7 + size_t(t) * 5 + size_t(round)) % lengths.size();
          if (transforms(lengths[i], unsigned(i)) != want[i]) ++mismatches[size_t(t)];
        }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[size_t(t)], 0) << "thread " << t;
  const FftPlanCacheStats s = fft_plan_cache_stats();
  EXPECT_LE(s.plans, 4 * 16);
  EXPECT_GT(s.hits, 0);
}

}  // namespace

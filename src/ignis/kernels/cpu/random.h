// Counter-based random numbers (Philox-4x32-10).
//
// Element i of a random op's output is a pure function of (seed, offset + i),
// so the numbers are the same whatever the thread count or chunking; the
// generator only advances `offset` by the number of values each op draws.
//
// A Generator is (seed, offset). The default one serves ignis.manual_seed;
// ignis.Generator objects are more of the same class, so a generator seeded
// with s gives the stream the default generator gives after manual_seed(s).
// Random ops draw from current_generator(): the default one, or the one a
// GeneratorGuard installed on this thread for a call made with generator=.
#pragma once

#include <cstdint>
#include <mutex>
#include <utility>

namespace ignis {

struct Philox {
  // Four 32-bit random words for counter `ctr` under key `seed`.
  static inline void block(uint64_t seed, uint64_t ctr, uint32_t out[4]) {
    uint32_t c0 = static_cast<uint32_t>(ctr), c1 = static_cast<uint32_t>(ctr >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int r = 0; r < 10; ++r) {
      uint64_t p0 = uint64_t(0xD2511F53u) * c0;
      uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
      uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
      uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<uint32_t>(p1);
      c3 = static_cast<uint32_t>(p0);
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
  // Blocks ctr .. ctr + kBatch - 1 at once: word w of block j lands in
  // out[4 * j + w], so out holds the words of 4 * kBatch consecutive elements
  // of a float fill in element order. The same numbers as block(), with one
  // block per SIMD lane: the rounds unrolled inside a loop over the lanes
  // that the compiler vectorises (vpmuludq makes the 32x32->64 products).
  // 2.6x block()'s rate per word with AVX-512 (1.2 ns per float element on
  // one core of this VM's Xeon against 3.1).
  static constexpr int kBatch = 16;
  static inline void blocks(uint64_t seed, uint64_t ctr, uint32_t out[4 * kBatch]) {
    uint32_t w0[kBatch], w1[kBatch], w2[kBatch], w3[kBatch];
    blocks_planar(seed, ctr, w0, w1, w2, w3);
    for (int j = 0; j < kBatch; ++j) {
      out[4 * j] = w0[j];
      out[4 * j + 1] = w1[j];
      out[4 * j + 2] = w2[j];
      out[4 * j + 3] = w3[j];
    }
  }
  // The same blocks, word w of block j in ww[j] (w0..w3): for draws that
  // take a whole block per element.
  static inline void blocks_planar(uint64_t seed, uint64_t ctr, uint32_t w0[kBatch],
                                   uint32_t w1[kBatch], uint32_t w2[kBatch], uint32_t w3[kBatch]) {
    uint32_t k0[10], k1[10];  // the key schedule, the same for every lane
    k0[0] = static_cast<uint32_t>(seed);
    k1[0] = static_cast<uint32_t>(seed >> 32);
    for (int r = 1; r < 10; ++r) {
      k0[r] = k0[r - 1] + 0x9E3779B9u;
      k1[r] = k1[r - 1] + 0xBB67AE85u;
    }
#pragma omp simd
    for (int j = 0; j < kBatch; ++j) {
      const uint64_t c = ctr + static_cast<uint64_t>(j);
      uint32_t c0 = static_cast<uint32_t>(c), c1 = static_cast<uint32_t>(c >> 32), c2 = 0, c3 = 0;
#pragma GCC unroll 10
      for (int r = 0; r < 10; ++r) {
        const uint64_t p0 = uint64_t(0xD2511F53u) * c0;
        const uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
        const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0[r];
        const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1[r];
        c1 = static_cast<uint32_t>(p1);
        c3 = static_cast<uint32_t>(p0);
        c0 = n0;
        c2 = n2;
      }
      w0[j] = c0;
      w1[j] = c1;
      w2[j] = c2;
      w3[j] = c3;
    }
  }
  // Uniform float in [0, 1) with 24 random bits, and double with 53.
  static inline float to_float(uint32_t x) { return (x >> 8) * (1.0f / 16777216.0f); }
  static inline double to_double(uint32_t a, uint32_t b) {
    uint64_t v = (uint64_t(a) << 32 | b) >> 11;
    return v * (1.0 / 9007199254740992.0);
  }
};

// Calls f(i, u) for the elements i in [b, e) of a float-precision uniform
// draw whose first block is `off`: element i's u is word i % 4 of block
// off + i / 4 (Note [Uniform floats are dropout's numbers], kernels/cpu/fill.cpp).
// Any [b, e) gives the same u for an element, so threads may split the range
// anywhere. The calls for one batch run as a SIMD loop: f must touch only
// element i's memory.
template <typename F>
inline void philox_uniform_floats(uint64_t seed, uint64_t off, int64_t b, int64_t e, F&& f) {
  constexpr int64_t kGroup = 4 * Philox::kBatch;  // elements per batch of blocks
  uint32_t words[kGroup];
  for (int64_t g = b / kGroup * kGroup; g < e; g += kGroup) {
    Philox::blocks(seed, off + static_cast<uint64_t>(g / 4), words);
    const int64_t lo = b > g ? b : g, hi = e < g + kGroup ? e : g + kGroup;
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) f(i, Philox::to_float(words[i - g]));
  }
}

// Calls f(i, r0, r1, r2, r3) for the elements i in [b, e) of a draw that
// takes block off + i whole for element i (normal, double-precision
// uniforms), kBatch blocks at a time; the calls for one batch run as a SIMD
// loop, so f must touch only element i's memory.
template <typename F>
inline void philox_block_per_element(uint64_t seed, uint64_t off, int64_t b, int64_t e, F&& f) {
  constexpr int64_t kBatch = Philox::kBatch;
  uint32_t w0[kBatch], w1[kBatch], w2[kBatch], w3[kBatch];
  for (int64_t g = b; g < e; g += kBatch) {
    Philox::blocks_planar(seed, off + static_cast<uint64_t>(g), w0, w1, w2, w3);
    const int64_t m = e - g < kBatch ? e - g : kBatch;
#pragma omp simd
    for (int64_t j = 0; j < m; ++j) f(g + j, w0[j], w1[j], w2[j], w3[j]);
  }
}

class Generator {
 public:
  Generator() = default;
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;
  void manual_seed(uint64_t s) {
    std::lock_guard<std::mutex> g(mu_);
    seed_ = s;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }
  std::pair<uint64_t, uint64_t> state() {
    std::lock_guard<std::mutex> g(mu_);
    return {seed_, offset_};
  }
  void set_state(uint64_t seed, uint64_t offset) {
    std::lock_guard<std::mutex> g(mu_);
    seed_ = seed;
    offset_ = offset;
  }
  // Reserves `n` counters; returns (seed, first counter).
  std::pair<uint64_t, uint64_t> reserve(uint64_t n) {
    std::lock_guard<std::mutex> g(mu_);
    uint64_t o = offset_;
    offset_ += n;
    return {seed_, o};
  }

 private:
  std::mutex mu_;
  uint64_t seed_ = 67280421310721ull;
  uint64_t offset_ = 0;
};

Generator& default_generator();

// The generator random ops draw from on this thread (see the file comment).
Generator& current_generator();

// Makes `g` this thread's current generator for the guard's lifetime (null:
// the default generator).
class GeneratorGuard {
 public:
  explicit GeneratorGuard(Generator* g);
  ~GeneratorGuard();
  GeneratorGuard(const GeneratorGuard&) = delete;
  GeneratorGuard& operator=(const GeneratorGuard&) = delete;

 private:
  Generator* prev_;
};

}  // namespace ignis

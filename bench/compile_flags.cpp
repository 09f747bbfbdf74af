// Chooses the flags generated kernels are built with: compile time against
// run time, and bit-equality with the eager kernels, for each candidate.
//
//   ninja -C build bench_compile_flags && ./build/bench_compile_flags
//
// The kernel is bench/compile_flags_kernel.cpp (the shapes of code the C++
// backend emits). Compile times are cold builds through CodeCache (a fresh
// cache directory each time: what a user waits for), best of 3. Run times
// are best of 7 at 2048x1024 float32. "≠ eager" counts elements whose bits
// differ from the eager ops' result for the same math.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/ops/op_def.h"
#include "ignis/runtime/cache_dir.h"
#include "ignis/runtime/code_cache.h"

using namespace ignis;
using namespace ignis::runtime;
namespace fs = std::filesystem;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

fs::path fresh_dir() {
  std::string pattern = (fs::temp_directory_path() / "ignis-bench-flags-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) std::abort();
  return pattern;
}

// Cold compile of `source` with `t`, best of `reps`; the last library stays loaded.
double cold_compile(const std::string& source, const Toolchain& t, int reps, LoadedLibrary* lib) {
  double best = 1e9;
  for (int i = 0; i < reps; ++i) {
    CodeCacheConfig c;
    c.dir = fresh_dir();
    c.toolchain = t;
    CodeCache cache(c);
    double t0 = now_s();
    LoadedLibrary l = cache.load_or_compile(source);
    best = std::min(best, now_s() - t0);
    if (i == reps - 1) *lib = l;
    fs::remove_all(c.dir);
  }
  return best;
}

template <typename F>
double best_ms(F&& f, int reps = 7) {
  double best = 1e9;
  for (int i = 0; i < reps; ++i) {
    double t0 = now_s();
    f();
    best = std::min(best, now_s() - t0);
  }
  return best * 1e3;
}

int64_t bits_differ(const float* a, const Tensor& eager, int64_t n) {
  const float* b = static_cast<const float*>(eager.data_ptr());
  int64_t d = 0;
  for (int64_t i = 0; i < n; ++i) d += std::memcmp(a + i, b + i, 4) != 0;
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  register_all_ops();
  std::string kernel_path = argc > 1 ? argv[1] : IGNIS_BENCH_KERNEL;
  std::string source = read_file(kernel_path).value();
  const int64_t rows = 2048, cols = 1024, n = rows * cols;
  using V = std::vector<int64_t>;
  Tensor x = OpRef("randn").tensor(V{rows, cols}), r = OpRef("randn").tensor(V{rows, cols});
  Tensor a = OpRef("randn").tensor(V{rows, cols}), b = OpRef("randn").tensor(V{rows, cols});
  Tensor c = OpRef("randn").tensor(V{rows, cols});
  Tensor w = OpRef("randn").tensor(V{cols}), bias = OpRef("randn").tensor(V{cols});
  Tensor beta = OpRef("randn").tensor(V{cols});
  auto P = [](const Tensor& t) { return static_cast<float*>(t.data_ptr()); };

  // The eager results for the same math.
  Tensor e_sum = OpRef("add").tensor(x, r);
  Tensor e_ln = OpRef("layer_norm").tensor(e_sum, V{cols}, w, beta, 1e-5);
  Tensor e_gelu = OpRef("gelu").tensor(OpRef("add").tensor(x, bias));
  Tensor e_softmax = OpRef("softmax.int").tensor(x, int64_t(-1));
  Tensor e_swiglu = OpRef("mul").tensor(OpRef("silu").tensor(a), b);
  Tensor e_exp = OpRef("exp").tensor(x);
  Tensor e_muladd = OpRef("add").tensor(OpRef("mul").tensor(a, b), c);
  std::vector<float> sum(n), out(n);

  const std::vector<std::string> common = {"-std=gnu++20", "-fno-math-errno",
                                           "-fno-trapping-math"};
  struct Candidate {
    const char* name;
    std::vector<std::string> flags;
  };
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> f = common;
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  };
  const std::vector<Candidate> candidates = {
      {"-O3 -march=native (eager's)", with({"-O3", "-march=native"})},
      {"-O2 -march=native", with({"-O2", "-march=native"})},
      {"-O1 -march=native", with({"-O1", "-march=native"})},
      {"-O3 (no -march)", with({"-O3"})},
      {"-O3 -march=native -ffp-contract=off", with({"-O3", "-march=native", "-ffp-contract=off"})},
      {"-O2 -march=native -ffp-contract=off", with({"-O2", "-march=native", "-ffp-contract=off"})},
  };

  std::printf("| flags (+ -fopenmp -shared -fPIC %s) | compile s | add+layer_norm | bias+gelu | "
              "softmax | swiglu | exp | mul+add | ≠ eager: ln gelu softmax swiglu exp mul+add "
              "|\n|---|---|---|---|---|---|---|---|---|\n",
              "-fno-math-errno -fno-trapping-math -std=gnu++20");
  for (const auto& cand : candidates) {
    Toolchain t = default_toolchain();
    t.flags = cand.flags;
    LoadedLibrary lib;
    double compile_s = cold_compile(source, t, 3, &lib);
    auto ln = lib.function<void(const float*, const float*, const float*, const float*, float*,
                                float*, int64_t, int64_t)>("k_add_layer_norm");
    auto gelu = lib.function<void(const float*, const float*, float*, int64_t, int64_t)>(
        "k_bias_gelu");
    auto softmax = lib.function<void(const float*, float*, int64_t, int64_t)>("k_softmax");
    auto swiglu = lib.function<void(const float*, const float*, float*, int64_t)>("k_swiglu");
    auto exp = lib.function<void(const float*, float*, int64_t)>("k_exp");
    auto muladd =
        lib.function<void(const float*, const float*, const float*, float*, int64_t)>("k_mul_add");
    double t_ln =
        best_ms([&] { ln(P(x), P(r), P(w), P(beta), sum.data(), out.data(), rows, cols); });
    int64_t d_ln = bits_differ(out.data(), e_ln, n);
    double t_gelu = best_ms([&] { gelu(P(x), P(bias), out.data(), rows, cols); });
    int64_t d_gelu = bits_differ(out.data(), e_gelu, n);
    double t_sm = best_ms([&] { softmax(P(x), out.data(), rows, cols); });
    int64_t d_sm = bits_differ(out.data(), e_softmax, n);
    double t_sw = best_ms([&] { swiglu(P(a), P(b), out.data(), n); });
    int64_t d_sw = bits_differ(out.data(), e_swiglu, n);
    double t_exp = best_ms([&] { exp(P(x), out.data(), n); });
    int64_t d_exp = bits_differ(out.data(), e_exp, n);
    double t_ma = best_ms([&] { muladd(P(a), P(b), P(c), out.data(), n); });
    int64_t d_ma = bits_differ(out.data(), e_muladd, n);
    std::printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %lld %lld %lld %lld %lld "
                "%lld |\n",
                cand.name, compile_s, t_ln, t_gelu, t_sm, t_sw, t_exp, t_ma, (long long)d_ln,
                (long long)d_gelu, (long long)d_sm, (long long)d_sw, (long long)d_exp,
                (long long)d_ma);
    std::fflush(stdout);
  }

  // One translation unit for the six kernels against six compiled in
  // parallel (compile_many), with the default flags, cold.
  std::vector<std::string> parts;
  size_t first = source.find("\n// out =");
  std::string preamble = source.substr(0, first + 1);
  for (size_t pos = first + 1; pos < source.size();) {
    size_t next = source.find("\n// out =", pos);
    size_t end = next == std::string::npos ? source.size() : next + 1;
    parts.push_back(preamble + source.substr(pos, end - pos));
    pos = end;
  }
  double one_tu = 1e9, split = 1e9;
  for (int i = 0; i < 3; ++i) {
    for (bool many : {false, true}) {
      CodeCacheConfig cfg;
      cfg.dir = fresh_dir();
      CodeCache cache(cfg);
      double t0 = now_s();
      if (many) cache.compile_many(parts); else cache.load_or_compile(source);
      double dt = now_s() - t0;
      (many ? split : one_tu) = std::min(many ? split : one_tu, dt);
      fs::remove_all(cfg.dir);
    }
  }
  // What a hit costs: the key (header scan + SHA-256), a verified disk entry
  // in a new CodeCache (read, hash, dlopen), and the in-process map.
  CodeCacheConfig cfg;
  cfg.dir = fresh_dir();
  {
    CodeCache warm(cfg);
    warm.build(source);
  }
  CodeCache cache(cfg);
  double key_ms = best_ms([&] { (void)cache.key(source); });
  double t0 = now_s();
  cache.load_or_compile(source);
  double disk_ms = (now_s() - t0) * 1e3;
  double mem_ms = best_ms([&] { cache.load_or_compile(source); });
  std::printf("\nkey %.3f ms, disk hit %.2f ms (library %lld bytes), memory hit %.3f ms\n",
              key_ms, disk_ms, (long long)fs::file_size(cache.entry_paths(cache.key(source)).so),
              mem_ms);
  fs::remove_all(cfg.dir);

  std::printf("\ndefault flags:");
  for (const auto& f : default_toolchain().flags) std::printf(" %s", f.c_str());
  std::printf("\none TU with %zu kernels: %.2f s; %zu TUs through compile_many (%u at once): "
              "%.2f s\n",
              parts.size(), one_tu, parts.size(), std::max(1u, std::thread::hardware_concurrency()),
              split);
  return 0;
}

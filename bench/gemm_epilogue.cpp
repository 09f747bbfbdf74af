// GEMM + bias + GELU at MLP shapes: a separate pointwise pass over C after
// the product, against the epilogue fused into the product
// (gemm_with_epilogue, gemm_epilogue.h), for each strategy.
//
//   ninja -C build bench_gemm_epilogue && ./build/bench_gemm_epilogue [--threads N] [--rounds R]
//
// Rows:
//   builtin only     built-in GEMM, no bias+GELU (what the pass costs on top)
//   builtin + pass   built-in GEMM, then bias+GELU over C in parallel
//   builtin + epi    built-in GEMM, bias+GELU on each tile as it finishes
//   blas only        BLAS GEMM, no bias+GELU
//   blas + pass      BLAS GEMM, then bias+GELU over C in parallel
//   blas + epi pN    BLAS per N-row panel of C, then bias+GELU over the panel
//   auto + epi       what gemm_with_epilogue picks by default
//   blas tasks R + epi   (builds with OpenBLAS) the built-in GEMM's kind of
//                    decomposition with BLAS inside: OpenMP tasks over blocks
//                    of R rows x 1024 columns, each block a single-threaded
//                    cblas_sgemm (OpenBLAS told to use 1 thread, so its pool
//                    never runs) and then the epilogue on the block
// A "W^T" shape multiplies by a transposed B (x @ W^T, as nn.Linear does).
// Each row's "vs builtin + epi" is the median over rounds of its time over
// that row's in the same round: on a loaded machine the steadier comparison.
// float32, C = A @ B with A [m, k], B [k, n] row-major. Each round times
// every row once, in turn (so that load from other processes falls on all
// of them alike); the table gives the median and the best wall time over
// the rounds, and the median CPU time of the process.
// As in the Python package, libgomp's spin count is 1000 on at most 4 CPUs
// (the binary re-executes itself with GOMP_SPINCOUNT set unless it or
// OMP_WAIT_POLICY is), libgomp's default on more.
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#if IGNIS_HAVE_BLAS
#include <cblas.h>
#endif

#include "ignis/kernels/cpu/gemm.h"
#include "ignis/kernels/scalar_ops.h"

using namespace ignis::cpu;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU seconds of all of this process's threads (BLAS's included): less
// sensitive than wall time to other processes on the cores, but it counts
// spin-waiting too.
double cpu_s() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct BiasGelu {
  float* c;
  int64_t ldc;
  const float* bias;
};

// c[i, j] = gelu(c[i, j] + bias[j]) over a block: what a generated epilogue does.
void bias_gelu_block(void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const auto* e = static_cast<const BiasGelu*>(ctx);
  const ignis::scalar_ops::Gelu gelu;
  for (int64_t i = i0; i < i1; ++i) {
    float* row = e->c + i * e->ldc;
#pragma omp simd
    for (int64_t j = j0; j < j1; ++j) row[j] = gelu(row[j] + e->bias[j]);
  }
}

// The unfused second kernel: the same math over all of C, rows split across threads.
void bias_gelu_pass(const BiasGelu& e, int64_t m, int64_t n) {
  const int nt = m * n >= 32768 ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t i = 0; i < m; ++i) bias_gelu_block(const_cast<BiasGelu*>(&e), i, i + 1, 0, n);
}

struct Shape {
  const char* name;
  int64_t m, n, k;
  bool bt = false;  // B transposed: W [n, k] row-major
};

struct Row {
  std::string name;
  std::function<void()> run;
  std::vector<double> ms, cpu_ms;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  cpu_set_t cpus;
  const bool few_cpus = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) <= 4;
  if (few_cpus && !std::getenv("GOMP_SPINCOUNT") && !std::getenv("OMP_WAIT_POLICY")) {
    setenv("GOMP_SPINCOUNT", "1000", 1);
    execv("/proc/self/exe", argv);
  }
  int rounds = 11;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) omp_set_num_threads(std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
  }
  std::printf("threads %d, BLAS by default: %s, rounds %d; wall ms median (best, GFLOP/s "
              "of the best), median process CPU ms\n%s\n\n",
              omp_get_max_threads(), gemm_uses_blas() ? "yes" : "no", rounds,
              gemm_choice().c_str());
  const Shape shapes[] = {
      {"MLP up 1024x1024 @ 1024x4096", 1024, 4096, 1024},
      {"MLP down 1024x4096 @ 4096x1024", 1024, 1024, 4096},
      {"MLP up 1024x1024 @ (4096x1024 W)^T", 1024, 4096, 1024, true},
      {"MLP down 1024x4096 @ (1024x4096 W)^T", 1024, 1024, 4096, true},
      {"8*128x256 @ 256x1024", 1024, 1024, 256},
      {"64x64 @ 64x64", 64, 64, 64},
  };
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (const Shape& s : shapes) {
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n), bias(s.n);
    for (auto* v : {&a, &b, &bias})
      for (float& x : *v) x = dist(rng);
    BiasGelu ctx{c.data(), s.n, bias.data()};
    const int64_t b_rs = s.bt ? 1 : s.n, b_cs = s.bt ? s.k : 1;
    GemmCall call{s.m, s.n, s.k, a.data(), s.k, 1, b.data(), b_rs, b_cs, c.data(), s.n, 1.0, 0.0,
                  0, nullptr, &ctx};
    auto plain = [&](GemmPath path, bool pass) {
      GemmCall p = call;
      p.epilogue = nullptr;
      gemm_with_epilogue(p, path);
      if (pass) bias_gelu_pass(ctx, s.m, s.n);
    };
    auto fused = [&](GemmPath path, int64_t panel) {
      GemmCall f = call;
      f.epilogue = &bias_gelu_block;
      gemm_with_epilogue(f, path, panel);
    };
    std::vector<Row> rows;
    rows.push_back({"builtin only", [&] { plain(GemmPath::kBuiltin, false); }, {}});
    rows.push_back({"builtin + pass", [&] { plain(GemmPath::kBuiltin, true); }, {}});
    rows.push_back({"builtin + epi", [&] { fused(GemmPath::kBuiltin, 0); }, {}});
    rows.push_back({"blas only", [&] { plain(GemmPath::kBlas, false); }, {}});
    rows.push_back({"blas + pass", [&] { plain(GemmPath::kBlas, true); }, {}});
    for (int64_t ph : {32, 64, 128, 256, 512}) {
      if (ph >= s.m) break;
      rows.push_back({"blas + epi p" + std::to_string(ph), [&, ph] { fused(GemmPath::kBlas, ph); },
                      {}});
    }
    rows.push_back({"auto + epi", [&] { fused(GemmPath::kAuto, 0); }, {}});
#if IGNIS_HAVE_BLAS
    // OpenBLAS's thread count is global: 1 for these rows, restored after.
    auto blas_tasks = [&](int64_t R) {
      const int64_t N = 1024, rb = (s.m + R - 1) / R, cb = (s.n + N - 1) / N;
      openblas_set_num_threads(1);
#pragma omp parallel for schedule(dynamic, 1)
      for (int64_t t = 0; t < rb * cb; ++t) {
        const int64_t i0 = (t / cb) * R, j0 = (t % cb) * N;
        const int64_t mr = std::min(R, s.m - i0), nr = std::min(N, s.n - j0);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, s.bt ? CblasTrans : CblasNoTrans, int(mr),
                    int(nr), int(s.k), 1.f, a.data() + i0 * s.k, int(s.k),
                    b.data() + j0 * b_cs, int(s.bt ? s.k : s.n), 0.f, c.data() + i0 * s.n + j0,
                    int(s.n));
        bias_gelu_block(&ctx, i0, i0 + mr, j0, j0 + nr);
      }
      openblas_set_num_threads(omp_get_max_threads());
    };
    for (int64_t R : {48, 256})
      if (R < s.m) rows.push_back({"blas tasks " + std::to_string(R) + " + epi",
                                   [&, R] { blas_tasks(R); }, {}});
#endif
    const int inner = s.m * s.n * s.k < (int64_t(1) << 24) ? 200 : 1;  // tiny shapes: batch calls
    for (int r = 0; r < rounds + 1; ++r) {
      for (Row& row : rows) {
        const double t0 = now_s(), c0 = cpu_s();
        for (int i = 0; i < inner; ++i) row.run();
        const double ms = (now_s() - t0) * 1e3 / inner, cpu = (cpu_s() - c0) * 1e3 / inner;
        if (r > 0) {  // round 0 warms up
          row.ms.push_back(ms);
          row.cpu_ms.push_back(cpu);
        }
      }
    }
    const double flop = 2.0 * double(s.m) * double(s.n) * double(s.k);
    std::printf("%s\n", s.name);
    const Row& ref = rows[2];  // builtin + epi
    for (const Row& row : rows) {
      const double med = median(row.ms), best = *std::min_element(row.ms.begin(), row.ms.end());
      std::vector<double> ratio;
      for (size_t r = 0; r < row.ms.size(); ++r) ratio.push_back(row.ms[r] / ref.ms[r]);
      std::printf("  %-20s %9.3f ms (best %8.3f, %7.1f GFLOP/s)  cpu %9.3f ms  vs builtin + epi "
                  "%.3f\n",
                  row.name.c_str(), med, best, flop / (best * 1e6), median(row.cpu_ms),
                  median(ratio));
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}

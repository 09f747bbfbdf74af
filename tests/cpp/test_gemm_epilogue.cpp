// gemm_with_epilogue (gemm_epilogue.h): every element of C handed to the
// epilogue exactly once and only once it is final, against a naive
// reference GEMM, over awkward shapes, strides, alpha/beta, both dtypes,
// both strategies (built-in tiles, BLAS panels) and 1 and 2 threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ignis/core/error.h"
#include "ignis/core/tensor.h"
#include "ignis/kernels/cpu/gemm.h"

using namespace ignis;
using namespace ignis::cpu;

namespace {

struct Shape {
  int64_t m, n, k;
};

// 1s, primes, sizes around and not multiples of the tiles (kMC 48, kNC 512,
// kKC 512, MR x NR 12 x 32 with AVX-512, 6 x 16 with AVX2), one that spans
// several tiles each way, one with more column blocks than threads (A
// packed once for all tasks), and one whose A rows, 4 KiB apart, are read in
// place because B has only two strips.
const Shape kShapes[] = {{1, 1, 1},     {1, 7, 1},      {7, 1, 3},     {1, 1, 300},
                         {5, 3, 0},     {64, 64, 64},   {67, 131, 97}, {97, 257, 255},
                         {96, 256, 256}, {193, 513, 17}, {512, 1024, 256}, {61, 1600, 1030},
                         {40, 64, 1024}, {130, 100, 1500}, {1, 300, 2100}};

int64_t slices_of(int64_t m, int64_t n, int64_t k, bool a_columns, int threads) {
  return gemm_tasks(m, n, k, a_columns, threads).slices;
}

// How an operand is laid out in memory.
enum class Layout { kRowMajor, kTransposed, kStrided };

const char* layout_name(Layout l) {
  return l == Layout::kRowMajor ? "row-major" : l == Layout::kTransposed ? "transposed" : "strided";
}

// A rows x cols matrix stored in the given layout, with its strides.
template <typename T>
struct Operand {
  std::vector<T> data;
  int64_t rs = 0, cs = 0;
  T at(int64_t i, int64_t j) const { return data[i * rs + j * cs]; }
};

template <typename T>
Operand<T> make_operand(int64_t rows, int64_t cols, Layout layout, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Operand<T> o;
  int64_t size = rows * cols;
  switch (layout) {
    case Layout::kRowMajor: o.rs = cols; o.cs = 1; break;
    case Layout::kTransposed: o.rs = 1; o.cs = rows; break;
    // Every other column of a wider matrix, rows padded: BLAS cannot read it
    // in place, so the BLAS path copies it.
    case Layout::kStrided:
      o.cs = 2;
      o.rs = 2 * cols + 3;
      size = rows * o.rs;
      break;
  }
  o.data.assign(static_cast<size_t>(std::max<int64_t>(size, 1)),
                std::numeric_limits<T>::quiet_NaN());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) o.data[i * o.rs + j * o.cs] = static_cast<T>(dist(rng));
  return o;
}

// What the recording epilogue saw.
template <typename T>
struct Record {
  const T* c = nullptr;
  int64_t n = 0, ldc = 0;
  std::unique_ptr<std::atomic<int>[]> visits;  // per element of C
  std::vector<T> seen;                         // C's value when visited
  std::vector<T> out;                          // relu(C) + bias[j]
  std::vector<T> bias;
};

template <typename T>
void record_epilogue(void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  auto* r = static_cast<Record<T>*>(ctx);
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) {
      r->visits[i * r->n + j].fetch_add(1, std::memory_order_relaxed);
      const T v = r->c[i * r->ldc + j];
      r->seen[i * r->n + j] = v;
      r->out[i * r->n + j] = (v > T(0) ? v : T(0)) + r->bias[j];
    }
  }
}

struct Config {
  Shape shape;
  Layout la = Layout::kRowMajor, lb = Layout::kRowMajor;
  double alpha = 1.0, beta = 0.0;
  GemmPath path = GemmPath::kAuto;
  int threads = 2;
  bool epilogue = true;
  int64_t panel_rows = 0;  // kBlas: 0 picks the default
};

std::string describe(const Config& c, const char* dtype) {
  return std::string(dtype) + " m=" + std::to_string(c.shape.m) + " n=" +
         std::to_string(c.shape.n) + " k=" + std::to_string(c.shape.k) + " A " +
         layout_name(c.la) + " B " + layout_name(c.lb) + " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta) + " path=" + std::to_string(int(c.path)) +
         " threads=" + std::to_string(c.threads) + " panel=" + std::to_string(c.panel_rows) +
         (c.epilogue ? "" : " no epilogue");
}

// Operands, C's initial values and the naive reference (in double) for one
// shape, layout pair and alpha/beta, shared by the runs over paths and
// thread counts.
template <typename T>
struct Problem {
  Shape shape;
  int64_t ldc;  // n + 5: the padding after each row must stay untouched
  Operand<T> a, b;
  std::vector<T> c0;
  std::vector<double> ref, mag;  // mag: sum of |terms|, for the tolerance
};

template <typename T>
Problem<T> make_problem(const Config& cfg, unsigned seed = 1) {
  const int64_t m = cfg.shape.m, n = cfg.shape.n, k = cfg.shape.k;
  Problem<T> pr;
  pr.shape = cfg.shape;
  pr.ldc = n + 5;
  std::mt19937 rng(seed);
  pr.a = make_operand<T>(m, k, cfg.la, rng);
  pr.b = make_operand<T>(k, n, cfg.lb, rng);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  // beta == 0: C starts as NaN, which must not reach the result.
  pr.c0.assign(static_cast<size_t>(m * pr.ldc), T(12345));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      pr.c0[i * pr.ldc + j] = cfg.beta == 0.0 ? std::numeric_limits<T>::quiet_NaN()
                                              : static_cast<T>(dist(rng));
  pr.ref.assign(static_cast<size_t>(m * n), 0.0);
  pr.mag.assign(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    double* r = pr.ref.data() + i * n;
    double* g = pr.mag.data() + i * n;
    for (int64_t p = 0; p < k; ++p) {
      const double av = pr.a.at(i, p);
      for (int64_t j = 0; j < n; ++j) {
        const double t = av * double(pr.b.at(p, j));
        r[j] += t;
        g[j] += std::abs(t);
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      const double c0 = cfg.beta == 0.0 ? 0.0 : cfg.beta * double(pr.c0[i * pr.ldc + j]);
      r[j] = c0 + cfg.alpha * r[j];
      g[j] = std::abs(c0) + std::abs(cfg.alpha) * g[j];
    }
  }
  return pr;
}

// Runs one configuration and checks C, the visits and what the epilogue saw
// against the reference.
template <typename T>
void check(const Config& cfg, const Problem<T>& pr) {
  constexpr bool is_float = std::is_same_v<T, float>;
  SCOPED_TRACE(describe(cfg, is_float ? "float32" : "float64"));
  const int64_t m = cfg.shape.m, n = cfg.shape.n, k = cfg.shape.k, ldc = pr.ldc;
  std::vector<T> c = pr.c0;

  Record<T> rec;
  rec.c = c.data();
  rec.n = n;
  rec.ldc = ldc;
  rec.visits.reset(new std::atomic<int>[static_cast<size_t>(std::max<int64_t>(m * n, 1))]());
  rec.seen.assign(static_cast<size_t>(m * n), T(0));
  rec.out.assign(static_cast<size_t>(m * n), T(0));
  for (int64_t j = 0; j < n; ++j) rec.bias.push_back(static_cast<T>(0.25 * double(j % 7) - 0.5));

  GemmCall call{};
  call.m = m;
  call.n = n;
  call.k = k;
  call.a = pr.a.data.data();
  call.a_rs = pr.a.rs;
  call.a_cs = pr.a.cs;
  call.b = pr.b.data.data();
  call.b_rs = pr.b.rs;
  call.b_cs = pr.b.cs;
  call.c = c.data();
  call.ldc = ldc;
  call.alpha = cfg.alpha;
  call.beta = cfg.beta;
  call.dtype = is_float ? 0 : 1;
  call.epilogue = cfg.epilogue ? &record_epilogue<T> : nullptr;
  call.ctx = &rec;

  const int saved_threads = omp_get_max_threads();
  omp_set_num_threads(cfg.threads);
  gemm_with_epilogue(call, cfg.path, cfg.panel_rows);
  omp_set_num_threads(saved_threads);

  const double rel = is_float ? 2e-6 : 1e-14;
  int64_t bad_value = 0, bad_visits = 0, bad_seen = 0, bad_out = 0, bad_pad = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const T v = c[i * ldc + j];
      if (j >= n) {
        bad_pad += v != T(12345);
        continue;
      }
      const int64_t e = i * n + j;
      const double tol = rel * (pr.mag[e] + 1.0) * std::sqrt(double(k) + 1.0);
      bad_value += !(std::abs(double(v) - pr.ref[e]) <= tol);
      if (!cfg.epilogue) continue;
      bad_visits += rec.visits[e].load() != 1;
      // The value the epilogue saw is the final one, bit for bit.
      bad_seen += !(rec.seen[e] == v);
      const double want = std::max(pr.ref[e], 0.0) + double(rec.bias[j]);
      bad_out += !(std::abs(double(rec.out[e]) - want) <= tol + rel);
    }
  }
  EXPECT_EQ(bad_value, 0) << "elements of C off the reference";
  EXPECT_EQ(bad_visits, 0) << "elements not visited exactly once";
  EXPECT_EQ(bad_seen, 0) << "elements the epilogue saw before they were final";
  EXPECT_EQ(bad_out, 0) << "epilogue outputs off relu(reference) + bias";
  EXPECT_EQ(bad_pad, 0) << "writes past column n";
}

template <typename T>
void check(const Config& cfg) {
  check<T>(cfg, make_problem<T>(cfg));
}

const GemmPath kPaths[] = {GemmPath::kBuiltin, GemmPath::kBlas, GemmPath::kAuto};

// Every shape, through every path with 1 and 2 threads.
template <typename T>
void every_shape(double alpha, double beta, Layout la, Layout lb) {
  for (const Shape& s : kShapes) {
    Config cfg;
    cfg.shape = s;
    cfg.la = la;
    cfg.lb = lb;
    cfg.alpha = alpha;
    cfg.beta = beta;
    const Problem<T> pr = make_problem<T>(cfg);
    for (GemmPath path : kPaths)
      for (int threads : {1, 2}) {
        cfg.path = path;
        cfg.threads = threads;
        check<T>(cfg, pr);
      }
  }
}

}  // namespace

TEST(GemmEpilogue, VisitsEveryElementOnceWithFinalValues) {
  every_shape<float>(1.0, 0.0, Layout::kRowMajor, Layout::kRowMajor);
}

TEST(GemmEpilogue, TransposedOperands) {
  every_shape<float>(1.0, 0.0, Layout::kTransposed, Layout::kTransposed);
  every_shape<float>(1.0, 0.0, Layout::kRowMajor, Layout::kTransposed);
}

TEST(GemmEpilogue, StridedOperandsBlasCannotRead) {
  every_shape<float>(1.0, 0.0, Layout::kStrided, Layout::kStrided);
}

TEST(GemmEpilogue, BetaOneAccumulatesAndAlphaScales) {
  every_shape<float>(1.0, 1.0, Layout::kRowMajor, Layout::kRowMajor);
  every_shape<float>(0.5, -2.0, Layout::kTransposed, Layout::kRowMajor);
}

TEST(GemmEpilogue, AlphaZeroOnlyScalesC) {
  every_shape<float>(0.0, 0.5, Layout::kStrided, Layout::kRowMajor);
}

TEST(GemmEpilogue, Float64) {
  every_shape<double>(1.0, 0.0, Layout::kRowMajor, Layout::kRowMajor);
  every_shape<double>(0.5, 1.0, Layout::kTransposed, Layout::kStrided);
  // x @ W^T: a row-major A the built-in GEMM packs (a row stride of 513 or
  // 1024) and a transposed B, both transposed in register blocks of 8 doubles
  // with AVX-512 (the A strip of 12 rows in two blocks).
  every_shape<double>(1.0, 0.0, Layout::kRowMajor, Layout::kTransposed);
}

TEST(GemmEpilogue, NoEpilogue) {
  for (const Shape& s : kShapes)
    for (GemmPath path : kPaths) {
      Config cfg;
      cfg.shape = s;
      cfg.path = path;
      cfg.epilogue = false;
      cfg.beta = 1.0;
      check<float>(cfg);
    }
}

TEST(GemmEpilogue, BlasPanelHeights) {
  // Panels of 1, a prime and more than m rows: the panels' blocks still
  // cover C once.
  for (int64_t ph : {1, 37, 96, 100000})
    for (int threads : {1, 2}) {
      Config cfg;
      cfg.shape = {193, 513, 97};
      cfg.path = GemmPath::kBlas;
      cfg.panel_rows = ph;
      cfg.threads = threads;
      cfg.beta = 1.0;
      check<float>(cfg);
      check<double>(cfg);
    }
}

TEST(GemmEpilogue, WithoutEpilogueMatchesBmmInto) {
  // Same operands through bmm_into and gemm_with_epilogue (kAuto, no
  // epilogue): the same bits.
  const Device cpu(DeviceType::CPU);
  for (const Shape& s : kShapes) {
    if (s.k == 0) continue;
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k));
    Tensor a = empty_tensor({1, s.m, s.k}, ScalarType::Float32, cpu);
    Tensor b = empty_tensor({1, s.k, s.n}, ScalarType::Float32, cpu);
    Tensor out = empty_tensor({1, s.m, s.n}, ScalarType::Float32, cpu);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = dist(rng);
    for (int64_t i = 0; i < b.numel(); ++i) b.data<float>()[i] = dist(rng);
    for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = dist(rng);
    std::vector<float> c(out.data<float>(), out.data<float>() + out.numel());
    bmm_into(out, a, b, Scalar(0.75), Scalar(1.5));
    GemmCall call{s.m, s.n, s.k, a.data<float>(), s.k, 1, b.data<float>(), s.n, 1,
                  c.data(), s.n, 1.5, 0.75, 0, nullptr, nullptr};
    gemm_with_epilogue(call);
    int64_t differ = 0;
    for (int64_t i = 0; i < out.numel(); ++i) differ += c[i] != out.data<float>()[i];
    EXPECT_EQ(differ, 0);
  }
}

TEST(GemmEpilogue, SmallProductsOfLongDepthAreSliced) {
  // Note [Products split over their depth]: a C of few blocks with a long
  // depth is sliced on several threads (the shapes above at 2 threads, and
  // the medium GPT's weight gradients at 16); never on one thread, nor a C
  // of many blocks or a short depth.
  EXPECT_EQ(slices_of(40, 64, 1024, false, 2), 2);
  EXPECT_EQ(slices_of(40, 64, 1024, true, 16), 4);
  EXPECT_EQ(slices_of(130, 100, 1500, false, 2), 2);
  EXPECT_EQ(slices_of(1, 300, 2100, false, 2), 2);
  EXPECT_EQ(slices_of(1, 300, 2100, false, 16), 3);  // 4 units, 3 slices of whole panels
  EXPECT_EQ(slices_of(128, 128, 2048, true, 16), 8);
  EXPECT_EQ(slices_of(512, 128, 2048, true, 16), 3);
  EXPECT_EQ(slices_of(128, 128, 2048, true, 1), 1);
  EXPECT_EQ(slices_of(1024, 4096, 1024, false, 16), 1);
  EXPECT_EQ(slices_of(128, 128, 256, true, 16), 1);
  EXPECT_EQ(slices_of(5, 3, 0, false, 4), 1);
}

TEST(GemmEpilogue, TasksShareTheWorkEvenly) {
  // Note [Cutting C for the threads]: the grid of tasks gives the threads
  // even shares. The largest task times the rounds the threads take (the
  // product's span) stays within a few percent of an even share of C
  // (rounded up to whole register tiles): 1024^3 on 16 threads took 3 rounds
  // of 48 x 512 blocks where 2.75 was even (9% over). Column blocks hold at
  // most 512 columns; one thread gets one row range and as few column blocks.
  const Shape shapes[] = {{1024, 1024, 1024}, {1024, 4096, 1024}, {1024, 1024, 4096},
                          {2048, 384, 128},   {2048, 128, 512},   {300, 257, 512},
                          {4096, 4096, 64}};
  for (const Shape& s : shapes)
    for (int threads : {2, 3, 4, 8, 16}) {
      const GemmTasks t = gemm_tasks(s.m, s.n, s.k, false, threads);
      const std::string what = std::to_string(s.m) + "x" + std::to_string(s.k) + " @ " +
                               std::to_string(s.k) + "x" + std::to_string(s.n) + ", " +
                               std::to_string(threads) + " threads";
      ASSERT_EQ(t.slices, 1) << what;
      EXPECT_LE(t.cols, 512) << what;
      EXPECT_EQ(t.tasks, ((s.m + t.rows - 1) / t.rows) * ((s.n + t.cols - 1) / t.cols)) << what;
      EXPECT_LE(t.tasks, 4 * std::max<int64_t>(threads, (s.n + 511) / 512)) << what;
      const double span = double((t.tasks + threads - 1) / threads) * t.rows * t.cols;
      // An even share, each side rounded up to 32 (a register tile's
      // columns; rows are no coarser).
      const double even = double(s.m) * s.n / threads;
      EXPECT_LE(span, 1.10 * even + 64.0 * (s.m + s.n)) << what;
    }
  // Note [Packing once for all tasks]: B is packed once only where the
  // copies saved outweigh a barrier -- the MLP-sized products, not the GPT
  // block's small ones nor a short product.
  EXPECT_TRUE(gemm_tasks(1024, 1024, 1024, false, 16).shares_b);
  EXPECT_TRUE(gemm_tasks(1024, 1024, 4096, false, 16).shares_b);
  EXPECT_FALSE(gemm_tasks(1024, 192, 64, false, 16).shares_b);
  EXPECT_FALSE(gemm_tasks(256, 64, 1024, false, 16).shares_b);
  EXPECT_FALSE(gemm_tasks(1024, 1024, 1024, false, 1).shares_b);
  const GemmTasks one = gemm_tasks(1024, 1600, 1024, false, 1);
  EXPECT_EQ(one.tasks, 4);
  EXPECT_GE(one.rows, 1024);
  EXPECT_EQ(gemm_tasks(1024, 1024, 1024, false, 16).tasks % 16, 0);
}

TEST(GemmEpilogue, BuiltinResultDoesNotDependOnThreads) {
  // The thread count changes how C is cut into blocks and tasks (and whether
  // B is packed once or per task), never the order in which an element's
  // products are summed: the built-in GEMM's results are the same bits at
  // 1, 2 and 3 threads. x @ W^T with k = 1024 and 513 packs both operands by
  // block transposes; at 1600 columns (4 blocks) 2 and 3 threads pack A
  // once for all tasks. (None of these is sliced over its depth at 3
  // threads; the sliced ones are the next test's.)
  const Shape shapes[] = {{300, 257, 1024}, {97, 300, 513}, {1000, 70, 64}, {61, 1600, 1030},
                          {1024, 1024, 1024}};
  // The last packs B once for all tasks at 2 and 3 threads.
  ASSERT_TRUE(gemm_tasks(1024, 1024, 1024, false, 2).shares_b);
  ASSERT_TRUE(gemm_tasks(1024, 1024, 1024, false, 3).shares_b);
  for (const Shape& s : shapes) {
    ASSERT_EQ(slices_of(s.m, s.n, s.k, false, 3), 1);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    std::vector<float> a(s.m * s.k), w(s.n * s.k);
    for (float& x : a) x = dist(rng);
    for (float& x : w) x = dist(rng);
    std::vector<std::vector<float>> cs;
    const int saved_threads = omp_get_max_threads();
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      std::vector<float> c(s.m * s.n, 0.f);
      GemmCall call{s.m, s.n, s.k, a.data(), s.k, 1, w.data(), 1, s.k, c.data(), s.n, 1.0, 0.0,
                    0, nullptr, nullptr};
      gemm_with_epilogue(call, GemmPath::kBuiltin);
      cs.push_back(std::move(c));
    }
    omp_set_num_threads(saved_threads);
    EXPECT_EQ(cs[1], cs[0]) << s.m << "x" << s.k << " @ " << s.k << "x" << s.n << ", 2 threads";
    EXPECT_EQ(cs[2], cs[0]) << s.m << "x" << s.k << " @ " << s.k << "x" << s.n << ", 3 threads";
  }
}

TEST(GemmEpilogue, SlicedProductsAreDeterministicAndClose) {
  // A product sliced over its depth sums its slices in a fixed order: the
  // same bits on every run at one thread count, and within float
  // reassociation of the one-thread (unsliced) result at others. x @ W^T
  // and the weight gradient X^T @ dY (A column-major). (Each has work for
  // 5 threads or more: threads_for gives a smaller product fewer.)
  const Shape shapes[] = {{130, 100, 1500}, {128, 128, 2048}, {8, 300, 2100}};
  for (const Shape& s : shapes)
    for (bool a_columns : {false, true}) {
      const std::string what = std::to_string(s.m) + "x" + std::to_string(s.k) + " @ " +
                               std::to_string(s.k) + "x" + std::to_string(s.n) +
                               (a_columns ? ", A column-major" : "");
      std::mt19937 rng(5);
      std::uniform_real_distribution<float> dist(-1.f, 1.f);
      std::vector<float> a(s.m * s.k), w(s.n * s.k);
      for (float& x : a) x = dist(rng);
      for (float& x : w) x = dist(rng);
      auto run = [&](int threads) {
        const int saved_threads = omp_get_max_threads();
        omp_set_num_threads(threads);
        std::vector<float> c(s.m * s.n, 0.f);
        GemmCall call{s.m, s.n, s.k, a.data(), a_columns ? 1 : s.k, a_columns ? s.m : 1,
                      w.data(), 1, s.k, c.data(), s.n, 1.0, 0.0, 0, nullptr, nullptr};
        gemm_with_epilogue(call, GemmPath::kBuiltin);
        omp_set_num_threads(saved_threads);
        return c;
      };
      const std::vector<float> one = run(1);
      for (int threads : {2, 3, 5}) {
        EXPECT_GT(slices_of(s.m, s.n, s.k, a_columns, threads), 1) << what;
        const std::vector<float> c = run(threads);
        EXPECT_EQ(run(threads), c) << what << ", " << threads << " threads, run again";
        double worst = 0;
        for (size_t i = 0; i < c.size(); ++i) worst = std::max(worst, double(std::abs(c[i] - one[i])));
        // terms of |a*b| < 1, sums of about sqrt(k / 9) in size
        EXPECT_LT(worst, 2e-4 * std::sqrt(double(s.k))) << what << ", " << threads << " threads";
      }
    }
}

TEST(GemmEpilogue, KernelRuntimeTableAndParallelCallers) {
  // Generated kernels call through the table, possibly from inside their
  // own parallel region: each caller then runs its product on its thread.
  const KernelRuntime* rt = kernel_runtime();
  ASSERT_NE(rt, nullptr);
  ASSERT_EQ(rt->gemm, kernel_runtime()->gemm);
  const int64_t m = 67, n = 131, k = 97;
  std::vector<float> a(m * k), b(k * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 13) - 6.f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 7) - 3.f;
  std::vector<float> want(m * n, 0.f);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) want[i * n + j] += a[i * k + p] * b[p * n + j];
  std::vector<std::vector<float>> cs(4, std::vector<float>(m * n, -1.f));
  std::vector<std::vector<int>> visits(4, std::vector<int>(m * n, 0));
  auto count = [](void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    auto* v = static_cast<std::vector<int>*>(ctx);
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = j0; j < j1; ++j) ++(*v)[i * 131 + j];
  };
#pragma omp parallel for num_threads(2)
  for (int t = 0; t < 4; ++t) {
    GemmCall call{m, n, k, a.data(), k, 1, b.data(), n, 1, cs[t].data(), n, 1.0, 0.0, 0,
                  count, &visits[t]};
    rt->gemm(&call);
  }
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(cs[t], want) << "caller " << t;  // small integers: exact
    EXPECT_EQ(visits[t], std::vector<int>(m * n, 1)) << "caller " << t;
  }
}

TEST(GemmEpilogue, BadCallsThrow) {
  float x = 0;
  GemmCall call{1, 1, 1, &x, 1, 1, &x, 1, 1, &x, 1, 1.0, 0.0, 7, nullptr, nullptr};
  EXPECT_THROW(gemm_with_epilogue(call), Error);
  call.dtype = 0;
  call.m = -1;
  EXPECT_THROW(gemm_with_epilogue(call), Error);
}

// A fake libcublasLt.so.13 for tests/cuda_fake/run.sh: the entry points
// ignis calls (cuda/cublaslt.h), computing on the host, since the fake
// driver's device memory is host memory. It follows cuBLASLt's documented
// semantics: column-major operands of (rows, cols, ld), op(A) = A or A^T by
// the TRANSA/TRANSB flags, strided batches, D = alpha * op(A) op(B) +
// beta * C (C unread when beta is 0), the BIAS epilogue adding bias[i] to
// row i of D, then the RELU or GELU epilogue (cuBLASLt's GELU is the tanh
// form) on the unrounded value, TF32 rounding of float inputs under
// CUBLAS_COMPUTE_32F_FAST_TF32.
// It checks what a real cuBLASLt would reject (inconsistent shapes, ld
// smaller than rows, a workspace the algorithm needs but was not given) and,
// like cuBLASLt on some GPUs, has no algorithm for a float64 BIAS, RELU or
// GELU epilogue, so that ignis's fallbacks run. What it cannot check: the GPU's own
// alignment rules and arithmetic, which gpu_check.sh does.
// While the stream captures a CUDA graph, a product is recorded in the fake
// driver's graph (fake_cuda_capture_host_work) with the descriptors and
// scalars copied, as the real library's kernels are captured.
#include <cstdlib>
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstring>

extern "C" {

struct FakeDesc {
  int compute = 68, scale = 0;
  int32_t ta = 0, tb = 0;
  uint32_t epilogue = 1;
  const void* bias = nullptr;
};
struct FakeLayout {
  int type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct HeuristicResult {
  uint64_t algo[8];
  size_t workspace;
  int state;
  float waves;
  int reserved[4];
};

static float half_to_float(uint16_t h) {
  _Float16 f;
  std::memcpy(&f, &h, 2);
  return static_cast<float>(f);
}
static uint16_t float_to_half(float x) {
  _Float16 f = static_cast<_Float16>(x);
  uint16_t h;
  std::memcpy(&h, &f, 2);
  return h;
}
static float bf16_to_float(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static uint16_t float_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (std::isnan(x)) return 0x7fc0;
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}
static float to_tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (!std::isfinite(x)) return x;
  u += 0xfff + ((u >> 13) & 1);
  u &= ~uint32_t(0x1fff);
  std::memcpy(&x, &u, 4);
  return x;
}

static double load(const void* p, int type, int64_t i) {
  switch (type) {
    case 0: return static_cast<const float*>(p)[i];
    case 1: return static_cast<const double*>(p)[i];
    case 2: return half_to_float(static_cast<const uint16_t*>(p)[i]);
    case 14: return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
  }
  return NAN;
}
static void store(void* p, int type, int64_t i, double v) {
  switch (type) {
    case 0: static_cast<float*>(p)[i] = float(v); break;
    case 1: static_cast<double*>(p)[i] = v; break;
    case 2: static_cast<uint16_t*>(p)[i] = float_to_half(float(v)); break;
    case 14: static_cast<uint16_t*>(p)[i] = float_to_bf16(float(v)); break;
  }
}

int cublasLtCreate(void** h) { *h = new int(0); return 0; }
int cublasLtDestroy(void* h) { delete static_cast<int*>(h); return 0; }
size_t cublasLtGetVersion() { return 130101; }
const char* cublasLtGetStatusName(int s) {
  return s == 7 ? "CUBLAS_STATUS_INVALID_VALUE" : s == 15 ? "CUBLAS_STATUS_NOT_SUPPORTED"
                                                          : "CUBLAS_STATUS_FAKE";
}
const char* cublasLtGetStatusString(int) { return "fake cuBLASLt status"; }

int cublasLtMatmulDescCreate(FakeDesc** d, int compute, int scale) {
  if (compute != 68 && compute != 70 && compute != 77) return 7;
  *d = new FakeDesc{compute, scale};
  return 0;
}
int cublasLtMatmulDescDestroy(FakeDesc* d) { delete d; return 0; }
int cublasLtMatmulDescSetAttribute(FakeDesc* d, int attr, const void* buf, size_t n) {
  switch (attr) {
    case 3: if (n != 4) return 7; std::memcpy(&d->ta, buf, 4); return 0;
    case 4: if (n != 4) return 7; std::memcpy(&d->tb, buf, 4); return 0;
    case 7: if (n != 4) return 7; std::memcpy(&d->epilogue, buf, 4); return 0;
    case 8: if (n != sizeof(void*)) return 7; std::memcpy(&d->bias, buf, n); return 0;
    case 26: return n == 4 ? 0 : 7;
  }
  return 7;
}
int cublasLtMatrixLayoutCreate(FakeLayout** l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
  if (ld < int64_t(rows) || ld < 1) return 7;
  *l = new FakeLayout{type, rows, cols, ld};
  return 0;
}
int cublasLtMatrixLayoutDestroy(FakeLayout* l) { delete l; return 0; }
int cublasLtMatrixLayoutSetAttribute(FakeLayout* l, int attr, const void* buf, size_t n) {
  if (attr == 5 && n == 4) { std::memcpy(&l->batch, buf, 4); return 0; }
  if (attr == 6 && n == 8) { std::memcpy(&l->stride, buf, 8); return 0; }
  return 7;
}
int cublasLtMatmulPreferenceCreate(void** p) { *p = new int(0); return 0; }
int cublasLtMatmulPreferenceDestroy(void* p) { delete static_cast<int*>(p); return 0; }
int cublasLtMatmulPreferenceSetAttribute(void*, int, const void*, size_t) { return 0; }

// m, n, k of a consistent call, or false.
static bool shapes(const FakeDesc* d, const FakeLayout* a, const FakeLayout* b,
                   const FakeLayout* c, int64_t* m, int64_t* n, int64_t* k) {
  *m = d->ta ? a->cols : a->rows;
  *k = d->ta ? a->rows : a->cols;
  int64_t kb = d->tb ? b->cols : b->rows;
  *n = d->tb ? b->rows : b->cols;
  return kb == *k && int64_t(c->rows) == *m && int64_t(c->cols) == *n && a->type == c->type &&
         b->type == c->type && a->batch == c->batch && b->batch == c->batch;
}

int cublasLtMatmulAlgoGetHeuristic(void*, FakeDesc* d, FakeLayout* a, FakeLayout* b,
                                   FakeLayout* c, FakeLayout* dd, void*, int requested,
                                   HeuristicResult* results, int* count) {
  int64_t m, n, k;
  if (requested < 1 || !shapes(d, a, b, c, &m, &n, &k) || c->ld != dd->ld) return 7;
  *count = 0;
  if ((d->epilogue & (4 | 2 | 32)) && c->type == 1) return 15;  // no float64 epilogues
  // Three "algorithms" (one computation), so that choosing among them runs.
  const int algos = requested < 3 ? requested : 3;
  std::memset(results, 0, sizeof(HeuristicResult) * size_t(algos));
  for (int i = 0; i < algos; ++i) {
    results[i].algo[0] = uint64_t(i);
    results[i].workspace = 4096;  // so that ignis must pass a workspace
  }
  *count = algos;
  return 0;
}

// One product with everything it reads copied (run now, or at each replay).
struct Product {
  FakeDesc d;
  FakeLayout a, b, c, dl;
  double al, be;
  const void *A, *B, *C;
  void* D;
  int64_t m, n, k;
};
static void run_product(void* p);

int cublasLtMatmul(void*, FakeDesc* d, const void* alpha, const void* A, FakeLayout* a,
                   const void* B, FakeLayout* b, const void* beta, const void* C, FakeLayout* c,
                   void* D, FakeLayout* dl, const void*, void* workspace, size_t ws_size,
                   void* stream) {
  int64_t m, n, k;
  if (!shapes(d, a, b, c, &m, &n, &k) || !workspace || ws_size < 4096) return 7;
  static const bool no_work = getenv("FAKE_CUDA_NO_WORK") != nullptr;  // host side alone
  if (no_work) return 0;
  auto scalar = [&](const void* p) {
    return d->scale == 1 ? *static_cast<const double*>(p) : *static_cast<const float*>(p);
  };
  auto* prod = new Product{*d, *a, *b, *c, *dl, scalar(alpha), scalar(beta), A, B, C, D, m, n, k};
  using Capture = int (*)(void*, void (*)(void*), void*, void (*)(void*));
  static Capture capture = [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return lib ? reinterpret_cast<Capture>(dlsym(lib, "fake_cuda_capture_host_work")) : nullptr;
  }();
  if (capture && capture(stream, run_product, prod, [](void* p) { delete static_cast<Product*>(p); }))
    return 0;
  run_product(prod);
  delete prod;
  return 0;
}

static void run_product(void* p) {
  const Product& pr = *static_cast<const Product*>(p);
  const FakeDesc* d = &pr.d;
  const FakeLayout *a = &pr.a, *b = &pr.b, *c = &pr.c, *dl = &pr.dl;
  const void *A = pr.A, *B = pr.B, *C = pr.C;
  void* D = pr.D;
  const int64_t m = pr.m, n = pr.n, k = pr.k;
  double al = pr.al, be = pr.be;
  bool tf32 = d->compute == 77;
  auto in = [&](const void* p, int64_t i) {
    double v = load(p, a->type, i);
    return tf32 ? double(to_tf32(float(v))) : v;
  };
  for (int64_t bi = 0; bi < c->batch; ++bi) {
    const int64_t oa = bi * a->stride, ob = bi * b->stride, oc = bi * c->stride,
                  od = bi * dl->stride;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          int64_t ia = d->ta ? p + i * a->ld : i + p * a->ld;
          int64_t ib = d->tb ? j + p * b->ld : p + j * b->ld;
          acc += in(A, oa + ia) * in(B, ob + ib);
        }
        double v = al * acc;
        if (be != 0) v += be * load(C, c->type, oc + i + j * c->ld);
        if (d->epilogue & 4) v += load(d->bias, c->type, i);
        if (d->epilogue & 2) v = v > 0 || v != v ? v : 0.0;
        if (d->epilogue & 32)
          v = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        store(D, dl->type, od + i + j * dl->ld, v);
      }
  }
}

}  // extern "C"

// A stand-in for generated C++ (bench/compile_flags.cpp builds it with each
// candidate flag set): the shapes of code the C++ backend will emit for a
// transformer block's non-GEMM work, written as it will be (extern "C"
// entry points, OpenMP over rows, simd inner loops, scalar_ops.h formulas).
#include <cstdint>

#include "ignis/kernels/scalar_ops.h"

using namespace ignis::scalar_ops;

// out = layer_norm(x + r) * w + b over rows of `cols`; also writes x + r.
extern "C" void k_add_layer_norm(const float* x, const float* r, const float* w, const float* b,
                                 float* sum, float* out, int64_t rows, int64_t cols) {
#pragma omp parallel for
  for (int64_t i = 0; i < rows; ++i) {
    const float* xi = x + i * cols;
    const float* ri = r + i * cols;
    float* si = sum + i * cols;
    float* oi = out + i * cols;
    float acc = 0.f;
#pragma omp simd reduction(+ : acc)
    for (int64_t j = 0; j < cols; ++j) {
      float t = Add()(xi[j], ri[j], 1.f);
      si[j] = t;
      acc += t;
    }
    float mean = acc / float(cols);
    float acc2 = 0.f;
#pragma omp simd reduction(+ : acc2)
    for (int64_t j = 0; j < cols; ++j) {
      float d = Sub()(si[j], mean, 1.f);
      acc2 += Mul()(d, d);
    }
    float rstd = Rsqrt()(acc2 / float(cols) + 1e-5f);
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j)
      oi[j] = Add()(Mul()(Mul()(Sub()(si[j], mean, 1.f), rstd), w[j]), b[j], 1.f);
  }
}

// out = gelu(x + bias[col])
extern "C" void k_bias_gelu(const float* x, const float* bias, float* out, int64_t rows,
                            int64_t cols) {
#pragma omp parallel for
  for (int64_t i = 0; i < rows; ++i) {
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j)
      out[i * cols + j] = Gelu()(Add()(x[i * cols + j], bias[j], 1.f));
  }
}

// out = softmax(x, -1)
extern "C" void k_softmax(const float* x, float* out, int64_t rows, int64_t cols) {
#pragma omp parallel for
  for (int64_t i = 0; i < rows; ++i) {
    const float* xi = x + i * cols;
    float* oi = out + i * cols;
    float m = -__builtin_inff();
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < cols; ++j) m = xi[j] > m ? xi[j] : m;
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < cols; ++j) {
      float e = Exp()(Sub()(xi[j], m, 1.f));
      oi[j] = e;
      s += e;
    }
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) oi[j] = Div()(oi[j], s);
  }
}

// out = silu(a) * b
extern "C" void k_swiglu(const float* a, const float* b, float* out, int64_t n) {
#pragma omp parallel for simd
  for (int64_t i = 0; i < n; ++i) out[i] = Mul()(Silu()(a[i]), b[i]);
}

// out = exp(x)
extern "C" void k_exp(const float* x, float* out, int64_t n) {
#pragma omp parallel for simd
  for (int64_t i = 0; i < n; ++i) out[i] = Exp()(x[i]);
}

// out = a * b + c (two ops: eager rounds the product before adding)
extern "C" void k_mul_add(const float* a, const float* b, const float* c, float* out, int64_t n) {
#pragma omp parallel for simd
  for (int64_t i = 0; i < n; ++i) out[i] = Add()(Mul()(a[i], b[i]), c[i], 1.f);
}

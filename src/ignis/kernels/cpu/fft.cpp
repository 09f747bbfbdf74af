#include "ignis/kernels/cpu/fft.h"

#include <cmath>
#include <complex>
#include <memory>
#include <numbers>

#include "ignis/core/error.h"
#include "ignis/kernels/cpu/parallel.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis::cpu {

// Note [FFT kernels]
// A transform over several dims is a 1-D transform along each in turn, each a
// loop over the tensor's lines along that dim (in parallel). A line is
// gathered into a buffer of complex doubles, transformed there and scattered
// back, so that every dtype and stride takes one path, and float inputs are
// transformed in double (more accurate than torch's float transforms, never
// less). A 1-D transform of length n is a Plan:
//  - n whose prime factors are all at most 13: mixed-radix Cooley-Tukey,
//    decimation in time, recursive over n's factors (4s first, then 2, 3, 5,
//    7, 11, 13), each stage's butterflies written for radix 2 and 4 and
//    generic (an r-point DFT) for the rest, with one table of the n roots of
//    unity;
//  - any other n: Bluestein's chirp-z, which writes the length-n DFT as a
//    convolution computed by power-of-two transforms of length M >= 2n - 1,
//    so a prime length costs O(n log n) too.
// Real inputs (r2c) are transformed as complex ones with zero imaginary
// parts; a Hermitian input (c2r) is completed from its first n/2 + 1 entries
// by conjugate symmetry and transformed as complex, its real part kept. (The
// imaginary parts of the zero and, for even n, the n/2 frequencies then drop
// out, as in torch's c2r.) Both do twice the work a dedicated real transform
// would; they are simple and exact.

namespace {

using cd = std::complex<double>;

// A complex product as the formula: std::complex's operator* guards against
// NaN/infinity cases through a library call (__muldc3) on every product,
// which took most of a transform's time.
inline cd cmul(cd a, cd b) {
  return cd(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
}

class Plan {
 public:
  Plan(int64_t n, bool forward) : n_(n), forward_(forward) {
    const double sign = forward ? -1.0 : 1.0;
    int64_t m = n;
    for (int64_t r : {4, 2, 3, 5, 7, 11, 13})
      while (m % r == 0 && m > 1) {
        factors_.push_back(r);
        m /= r;
      }
    if (m == 1) {
      tw_.resize(size_t(n));
      for (int64_t k = 0; k < n; ++k)
        tw_[size_t(k)] = std::polar(1.0, sign * 2.0 * std::numbers::pi * double(k) / double(n));
      return;
    }
    // Bluestein: X_k = c_k sum_j (x_j c_j) conj(c_{k-j}) with c_k = exp(sign i pi k^2 / n),
    // a convolution of length M (a power of two) done by two transforms and a product.
    bluestein_ = true;
    int64_t M = 1;
    while (M < 2 * n - 1) M *= 2;
    M_ = M;
    chirp_.resize(size_t(n));
    for (int64_t k = 0; k < n; ++k) {
      const int64_t k2 = (k * k) % (2 * n);  // exact: the angle modulo 2 pi
      chirp_[size_t(k)] = std::polar(1.0, sign * std::numbers::pi * double(k2) / double(n));
    }
    fwd_ = std::make_unique<Plan>(M, true);
    inv_ = std::make_unique<Plan>(M, false);
    kernel_.assign(size_t(M), cd(0.0, 0.0));
    kernel_[0] = std::conj(chirp_[0]);
    for (int64_t k = 1; k < n; ++k) kernel_[size_t(k)] = kernel_[size_t(M - k)] = std::conj(chirp_[size_t(k)]);
    std::vector<cd> scratch(static_cast<size_t>(M));
    fwd_->run(kernel_.data(), scratch.data());
  }

  int64_t n() const { return n_; }
  // Scratch a run needs, in complex doubles.
  int64_t scratch_size() const { return bluestein_ ? 3 * M_ : n_; }

  // data[0..n) := its transform; scratch holds scratch_size() values.
  void run(cd* data, cd* scratch) const {
    if (n_ <= 1) return;
    if (bluestein_) return run_bluestein(data, scratch);
    std::copy(data, data + n_, scratch);
    transform(scratch, 1, data, n_, 0, 1);
  }

 private:
  // out[0..n) = the DFT of in[0], in[stride], ... (n entries), with the
  // factors from factors_[f] on; the n-th roots are tw_[k * step].
  void transform(const cd* in, int64_t stride, cd* out, int64_t n, size_t f, int64_t step) const {
    if (n == 1) {
      out[0] = in[0];
      return;
    }
    const int64_t r = factors_[f], m = n / r;
    if (m == 1) {  // the last factor: its r one-point transforms are the inputs themselves
      for (int64_t q = 0; q < r; ++q) out[q] = in[q * stride];
    } else {
      for (int64_t q = 0; q < r; ++q)
        transform(in + q * stride, stride * r, out + q * m, m, f + 1, step * r);
    }
    const int64_t N = n_;
    if (r == 2) {
      for (int64_t k = 0; k < m; ++k) {
        const cd a = out[k], b = cmul(out[k + m], tw_[size_t(k * step)]);
        out[k] = a + b;
        out[k + m] = a - b;
      }
      return;
    }
    if (r == 4) {
      // w_4 = -i forward, +i backward.
      const cd j = forward_ ? cd(0.0, -1.0) : cd(0.0, 1.0);
      for (int64_t k = 0; k < m; ++k) {
        const cd a0 = out[k], a1 = cmul(out[k + m], tw_[size_t(k * step)]),
                 a2 = cmul(out[k + 2 * m], tw_[size_t(2 * k * step)]),
                 a3 = cmul(out[k + 3 * m], tw_[size_t(3 * k * step)]);
        const cd s02 = a0 + a2, d02 = a0 - a2, s13 = a1 + a3, d13 = cmul(a1 - a3, j);
        out[k] = s02 + s13;
        out[k + m] = d02 + d13;
        out[k + 2 * m] = s02 - s13;
        out[k + 3 * m] = d02 - d13;
      }
      return;
    }
    // An r-point DFT per k: the r-th roots copied out of the table once, and
    // their exponent q * s mod r stepped by addition.
    cd t[13], y[13], wr[13];
    const int64_t root_r = N / r;  // w_r = tw_[root_r]
    for (int64_t j = 0; j < r; ++j) wr[j] = tw_[size_t(j * root_r)];
    for (int64_t k = 0; k < m; ++k) {
      t[0] = out[k];
      for (int64_t q = 1; q < r; ++q) t[q] = cmul(out[k + q * m], tw_[size_t(q * k * step)]);
      for (int64_t s = 0; s < r; ++s) {
        cd acc = t[0];
        int64_t e = 0;
        for (int64_t q = 1; q < r; ++q) {
          e += s;
          if (e >= r) e -= r;
          acc += cmul(t[q], wr[e]);
        }
        y[s] = acc;
      }
      for (int64_t s = 0; s < r; ++s) out[k + s * m] = y[s];
    }
  }

  void run_bluestein(cd* data, cd* scratch) const {
    const int64_t n = n_, M = M_;
    cd* a = scratch;          // M: the chirped input, then the convolution
    cd* inner = scratch + M;  // 2M: the power-of-two plans' scratch
    for (int64_t j = 0; j < n; ++j) a[j] = cmul(data[j], chirp_[size_t(j)]);
    std::fill(a + n, a + M, cd(0.0, 0.0));
    fwd_->run(a, inner);
    for (int64_t k = 0; k < M; ++k) a[k] = cmul(a[k], kernel_[size_t(k)]);
    inv_->run(a, inner);
    const double inv_m = 1.0 / double(M);
    for (int64_t k = 0; k < n; ++k) data[k] = cmul(a[k], chirp_[size_t(k)]) * inv_m;
  }

  int64_t n_;
  bool forward_;
  std::vector<int64_t> factors_;
  std::vector<cd> tw_;
  bool bluestein_ = false;
  int64_t M_ = 0;
  std::vector<cd> chirp_, kernel_;
  std::unique_ptr<Plan> fwd_, inv_;
};

// The element offsets of t's lines along dim d (one per index of the other dims).
std::vector<int64_t> line_offsets(const Tensor& t, int64_t d) {
  const int64_t nd = t.dim();
  std::vector<int64_t> offs{t.storage_offset()};
  for (int64_t k = 0; k < nd; ++k) {
    if (k == d) continue;
    const int64_t size = t.sizes()[k], stride = t.strides()[k];
    std::vector<int64_t> next;
    next.reserve(offs.size() * size_t(size));
    for (int64_t o : offs)
      for (int64_t i = 0; i < size; ++i) next.push_back(o + i * stride);
    offs.swap(next);
  }
  return offs;
}

template <typename T>
struct Access {
  static cd read(const T* p) { return cd(double(*p), 0.0); }
  static void write(T* p, cd v) { *p = T(v.real()); }
};
template <typename T>
struct Access<Complex<T>> {
  static cd read(const Complex<T>* p) { return cd(double(p->re), double(p->im)); }
  static void write(Complex<T>* p, cd v) { *p = Complex<T>{T(v.real()), T(v.imag())}; }
};

// For each line of `src` along dim d: gather its entries, fill(line, buffer)
// transforms them, and write(line, buffer) scatters the result into `dst`'s
// line (the same index of the other dims), in parallel over the lines.
template <typename Fill, typename Write>
void for_lines(const Tensor& src, const Tensor& dst, int64_t d, int64_t buffer, Fill fill,
               Write write) {
  const std::vector<int64_t> in_offs = line_offsets(src, d), out_offs = line_offsets(dst, d);
  const int64_t lines = int64_t(in_offs.size());
  if (lines == 0) return;
  const int64_t work = lines * buffer * 8;
#pragma omp parallel num_threads(threads_for(work))
  {
    std::vector<cd> buf(static_cast<size_t>(buffer));
#pragma omp for schedule(static)
    for (int64_t l = 0; l < lines; ++l) {
      fill(in_offs[size_t(l)], buf.data());
      write(out_offs[size_t(l)], buf.data());
    }
  }
}

// Transforms t (complex, contiguous or not) in place along dim d.
template <typename C>
void c2c_along(const Tensor& t, int64_t d, const Plan& plan, double scale) {
  const int64_t n = plan.n(), stride = t.strides()[size_t(d)];
  C* base = static_cast<C*>(t.data_ptr()) - t.storage_offset();
  for_lines(t, t, d, n + plan.scratch_size(),
            [&](int64_t off, cd* buf) {
              for (int64_t i = 0; i < n; ++i) buf[i] = Access<C>::read(base + off + i * stride);
              plan.run(buf, buf + n);
            },
            [&](int64_t off, cd* buf) {
              for (int64_t i = 0; i < n; ++i) Access<C>::write(base + off + i * stride, buf[i] * scale);
            });
}

template <typename C>
void c2c_dims(const Tensor& t, const std::vector<int64_t>& dims, bool forward, double scale) {
  for (size_t k = 0; k < dims.size(); ++k) {
    const Plan plan(t.sizes()[size_t(dims[k])], forward);
    c2c_along<C>(t, dims[k], plan, k + 1 == dims.size() ? scale : 1.0);
  }
}

template <typename R>
void r2c_typed(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims,
               bool onesided, double scale) {
  using C = Complex<R>;
  const int64_t last = dims.back(), n = in.sizes()[size_t(last)];
  const int64_t kept = onesided ? n / 2 + 1 : n;
  const Plan plan(n, true);
  const int64_t is = in.strides()[size_t(last)], os = out.strides()[size_t(last)];
  const R* ib = static_cast<const R*>(in.data_ptr()) - in.storage_offset();
  C* ob = static_cast<C*>(out.data_ptr()) - out.storage_offset();
  const double s_last = dims.size() == 1 ? scale : 1.0;
  for_lines(in, out, last, n + plan.scratch_size(),
            [&](int64_t off, cd* buf) {
              for (int64_t i = 0; i < n; ++i) buf[i] = Access<R>::read(ib + off + i * is);
              plan.run(buf, buf + n);
            },
            [&](int64_t off, cd* buf) {
              for (int64_t i = 0; i < kept; ++i) Access<C>::write(ob + off + i * os, buf[i] * s_last);
            });
  const std::vector<int64_t> rest(dims.begin(), dims.end() - 1);
  if (!rest.empty()) c2c_dims<C>(out, rest, true, scale);
}

template <typename R>
void c2r_typed(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims,
               double scale) {
  using C = Complex<R>;
  const int64_t last = dims.back(), n = out.sizes()[size_t(last)], h = n / 2 + 1;
  // The other dims first, on a copy (the input stays as it is).
  Tensor tmp = empty_tensor(in.sizes(), in.dtype(), in.device());
  copy_tensor(tmp, in);
  const std::vector<int64_t> rest(dims.begin(), dims.end() - 1);
  if (!rest.empty()) c2c_dims<C>(tmp, rest, false, 1.0);
  const Plan plan(n, false);
  const int64_t ts = tmp.strides()[size_t(last)], os = out.strides()[size_t(last)];
  const C* tb = static_cast<const C*>(tmp.data_ptr());
  R* ob = static_cast<R*>(out.data_ptr()) - out.storage_offset();
  for_lines(tmp, out, last, n + plan.scratch_size(),
            [&](int64_t off, cd* buf) {
              for (int64_t k = 0; k < h; ++k) buf[k] = Access<C>::read(tb + off + k * ts);
              for (int64_t k = h; k < n; ++k) buf[k] = std::conj(buf[n - k]);
              plan.run(buf, buf + n);
            },
            [&](int64_t off, cd* buf) {
              for (int64_t i = 0; i < n; ++i) ob[off + i * os] = R(buf[i].real() * scale);
            });
}

}  // namespace

void fft_c2c(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims, bool forward,
             double scale) {
  copy_tensor(out, in);
  if (out.numel() == 0) return;
  if (out.dtype() == ScalarType::ComplexFloat) c2c_dims<Complex<float>>(out, dims, forward, scale);
  else c2c_dims<Complex<double>>(out, dims, forward, scale);
}

void fft_r2c(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims, bool onesided,
             double scale) {
  if (out.numel() == 0) return;
  if (in.dtype() == ScalarType::Float32) r2c_typed<float>(out, in, dims, onesided, scale);
  else r2c_typed<double>(out, in, dims, onesided, scale);
}

void fft_c2r(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims, double scale) {
  if (out.numel() == 0) return;
  if (out.dtype() == ScalarType::Float32) c2r_typed<float>(out, in, dims, scale);
  else c2r_typed<double>(out, in, dims, scale);
}

}  // namespace ignis::cpu

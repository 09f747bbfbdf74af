// Discrete Fourier transforms: torch's three primitives, which ignis.fft's
// functions (fft, rfft, irfft, fftn, hfft, ... in python/ignis/fft.py) and
// stft/istft are written over, as torch's are over ATen's:
//   _fft_c2c  complex -> complex over dims, forward or backward;
//   _fft_r2c  real -> complex, forward, the last dim one-sided or full;
//   _fft_c2r  one-sided Hermitian complex -> real, backward.
// `normalization` is torch's: 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the product
// of the transformed sizes (the signal's, for c2r the output's). The kernels
// are kernels/cpu/fft.cpp's; CUDA tensors are transformed on the host. Core
// ops: the compiler calls them as extern kernels. Their derivatives are
// transforms too (torch's formulas), so gradients of every order exist.
#include <cmath>
#include <set>

#include "ignis/autograd/formula.h"
#include "ignis/kernels/cpu/fft.h"
#include "ignis/ops/families.h"
#include "ignis/ops/on_host.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

// dims wrapped and checked: distinct, in range, at least one.
std::vector<int64_t> fft_dims(const OpCall& c, const Tensor& self) {
  std::vector<int64_t> dims;
  std::set<int64_t> seen;
  const char* name = c.op.schema().name.c_str();
  for (int64_t d : c.int_list(1)) {
    const int64_t w = wrap_dim(d, self.dim());
    IGNIS_CHECK(seen.insert(w).second, name, ": dims must be unique, got dim ", d, " twice");
    dims.push_back(w);
  }
  IGNIS_CHECK(!dims.empty(), name, ": expects at least one dim to transform");
  return dims;
}

double fft_scale(int64_t normalization, const DimVector& signal, const std::vector<int64_t>& dims) {
  double n = 1.0;
  for (int64_t d : dims) n *= double(signal[size_t(d)]);
  switch (normalization) {
    case 0: return 1.0;
    case 1: return 1.0 / std::sqrt(n);
    case 2: return 1.0 / n;
  }
  IGNIS_FAIL("fft: normalization must be 0 (none), 1 (by 1/sqrt(n)) or 2 (by 1/n), got ",
             normalization);
}

void check_lengths(const char* name, const DimVector& sizes, const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    IGNIS_CHECK(sizes[size_t(d)] >= 1, name, ": Invalid number of data points (",
                sizes[size_t(d)], ") specified");
}

void c2c_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  IGNIS_CHECK_KIND(Type, is_complex(self.dtype()), "_fft_c2c: expects a complex input tensor, "
                   "but got ", scalar_type_name(self.dtype()));
  check_lengths("_fft_c2c", self.sizes(), fft_dims(c, self));
  c.alloc(self.sizes(), self.dtype());
}
void c2c_cpu(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const std::vector<int64_t> dims = fft_dims(c, self);
  cpu::fft_c2c(c.outputs[0], self, dims, c.bool_arg(3),
               fft_scale(c.int_arg(2), self.sizes(), dims));
}

void r2c_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  IGNIS_CHECK_KIND(Type, self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64,
                   "_fft_r2c: expects a float32 or float64 input tensor, but got ",
                   scalar_type_name(self.dtype()));
  const std::vector<int64_t> dims = fft_dims(c, self);
  check_lengths("_fft_r2c", self.sizes(), dims);
  DimVector sizes = self.sizes();
  if (c.bool_arg(3)) sizes[size_t(dims.back())] = sizes[size_t(dims.back())] / 2 + 1;
  c.alloc(sizes, to_complex_type(self.dtype()));
}
void r2c_cpu(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const std::vector<int64_t> dims = fft_dims(c, self);
  cpu::fft_r2c(c.outputs[0], self, dims, c.bool_arg(3),
               fft_scale(c.int_arg(2), self.sizes(), dims));
}

void c2r_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  IGNIS_CHECK_KIND(Type, is_complex(self.dtype()), "_fft_c2r: expects a complex input tensor, "
                   "but got ", scalar_type_name(self.dtype()));
  const std::vector<int64_t> dims = fft_dims(c, self);
  const int64_t n = c.int_arg(3), last = dims.back();
  IGNIS_CHECK(n >= 1, "_fft_c2r: Invalid number of data points (", n, ") specified");
  IGNIS_CHECK(self.sizes()[size_t(last)] >= n / 2 + 1, "_fft_c2r: an output of ", n,
              " points along dim ", last, " needs ", n / 2 + 1, " input entries there, got ",
              self.sizes()[size_t(last)]);
  DimVector sizes = self.sizes();
  sizes[size_t(last)] = n;
  check_lengths("_fft_c2r", sizes, dims);
  c.alloc(sizes, to_real_type(self.dtype()));
}
void c2r_cpu(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const std::vector<int64_t> dims = fft_dims(c, self);
  cpu::fft_c2r(c.outputs[0], self, dims, fft_scale(c.int_arg(2), c.outputs[0].sizes(), dims));
}

// ---- derivatives (torch's) ------------------------------------------------------------------
using namespace grad_ops;  // NOLINT

Tensor real_part(const Tensor& z) {
  return op("select.int", op("view_as_real", z), int64_t(-1), int64_t(0));
}

// The transform is linear, y = F x; the gradient is F^H g: the transform the
// other way, under the same normalization.
void c2c_bw(GradCtx& c) {
  c.set(0, op("_fft_c2c", c.grad(), c.int_list(1), c.int_arg(2), !c.bool_arg(3)));
}

// y = P F x for real x, P keeping the first n/2 + 1 frequencies: the gradient
// is Re(F^H P^T g), P^T padding g with zeros back to n.
void r2c_bw(GradCtx& c) {
  const std::vector<int64_t>& dims = c.int_list(1);
  Tensor g = c.grad();
  const int64_t last = wrap_dim(dims.back(), g.dim());
  const int64_t n = c.sizes(0)[size_t(last)], kept = g.sizes()[size_t(last)];
  if (c.bool_arg(3) && n > kept) {
    DimVector pad = g.sizes();
    pad[size_t(last)] = n - kept;
    g = op("cat", std::vector<Tensor>{g, zeros(pad, g.dtype(), g.device())}, last);
  }
  c.set(0, real_part(op("_fft_c2c", g, dims, c.int_arg(2), false)));
}

// y = Re(F^H E z), E completing the Hermitian signal from its first half:
// the gradient is the one-sided forward transform of g with the entries that
// stand for two (1 .. n - n/2 - 1) doubled.
void c2r_bw(GradCtx& c) {
  const std::vector<int64_t>& dims = c.int_list(1);
  const Tensor& g = c.grad();
  Tensor gi = op("_fft_r2c", g, dims, c.int_arg(2), true);
  const int64_t last = wrap_dim(dims.back(), g.dim());
  const int64_t n = g.sizes()[size_t(last)], h = gi.sizes()[size_t(last)];
  if (n - h > 0) {
    // Weights 1, 2, ..., 2, then 1 for the n/2 frequency when n is even.
    const ScalarType rt = to_real_type(gi.dtype());
    auto run = [&](int64_t len, double v) {
      return op("full", std::vector<int64_t>{len}, Scalar(v), rt, g.device());
    };
    std::vector<Tensor> parts{run(1, 1.0), run(n - h, 2.0)};
    if (h - 1 - (n - h) > 0) parts.push_back(run(h - 1 - (n - h), 1.0));
    DimVector shape(size_t(g.dim() - last), 1);
    shape[0] = h;
    gi = mul(gi, reshape(op("cat", parts, int64_t(0)), shape));
  }
  // An input with more entries along the last dim than n/2 + 1: the rest were not read.
  const int64_t in_last = c.sizes(0)[size_t(last)];
  if (in_last > h) {
    DimVector pad = gi.sizes();
    pad[size_t(last)] = in_last - h;
    gi = op("cat", std::vector<Tensor>{gi, zeros(pad, gi.dtype(), gi.device())}, last);
  }
  c.set(0, gi);
}

}  // namespace

void register_fft_ops() {
  def("_fft_c2c(Tensor self, int[] dim, int normalization, bool forward) -> Tensor")
      .category(OpCategory::Other).meta(c2c_meta).cpu(c2c_cpu).cuda(on_host<c2c_cpu>)
      .doc("the discrete Fourier transform of a complex tensor over dim (forward: "
           "exp(-2 pi i jk/n); backward: exp(+2 pi i jk/n))")
      .derivative(c2c_bw).core();
  def("_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor")
      .category(OpCategory::Other).meta(r2c_meta).cpu(r2c_cpu).cuda(on_host<r2c_cpu>)
      .doc("the forward transform of a real tensor; onesided: the last dim's first n/2 + 1 "
           "frequencies")
      .derivative(r2c_bw).core();
  def("_fft_c2r(Tensor self, int[] dim, int normalization, int last_dim_size) -> Tensor")
      .category(OpCategory::Other).meta(c2r_meta).cpu(c2r_cpu).cuda(on_host<c2r_cpu>)
      .doc("the backward transform of a one-sided Hermitian signal: a real tensor with "
           "last_dim_size entries along the last dim")
      .derivative(c2r_bw).core();
}

}  // namespace ignis

// Linear algebra: the factorizations and solvers of ignis.linalg, on LAPACK
// (kernels/cpu/lapack.h), float32 and float64, batched over leading dims.
//
// Note [Linear algebra ops]
// Each op is core: no formula over other core ops factors a matrix, so the
// compiler runs them as extern kernels. Their results are batches of
// column-major matrices (strides [..., 1, m]), LAPACK's layout, which torch's
// linalg results have too: the kernel copies its input into the output's
// memory and LAPACK works there in place, one matrix at a time. A
// factorization that cannot be completed (a singular matrix, one that is not
// positive-definite) reports it in `info` for the `_ex` ops, and raises
// torch's LinAlgError with torch's message where the op checks errors.
// The derivatives are torch's formulas (FunctionsManual.cpp), written with
// ignis ops so that they differentiate again. On CUDA each op runs the same
// LAPACK kernel on host copies of its arguments and copies its results back
// (on_host: one synchronizing round trip; cuSOLVER is not wired in).
#include <cmath>

#include "ignis/autograd/formula.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/lapack.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/ops/families.h"
#include "ignis/ops/on_host.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

using namespace grad_ops;
namespace lapack = cpu::lapack;

// --- shapes and layouts -------------------------------------------------------

// Strides of a batch of column-major matrices of `sizes` ([..., m, n]): each
// matrix's columns contiguous, the batch row-major over whole matrices.
DimVector fortran_strides(const DimVector& sizes) {
  const size_t r = sizes.size();
  DimVector st(r, 1);
  if (r < 2) {
    int64_t s = 1;
    for (size_t i = r; i-- > 0;) {
      st[i] = s;
      s *= std::max<int64_t>(sizes[i], 1);
    }
    return st;
  }
  st[r - 2] = 1;
  st[r - 1] = std::max<int64_t>(sizes[r - 2], 1);
  int64_t s = std::max<int64_t>(sizes[r - 2], 1) * std::max<int64_t>(sizes[r - 1], 1);
  for (size_t i = r - 2; i-- > 0;) {
    st[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return st;
}

DimVector batch_of(const Tensor& a, int64_t matrix_dims = 2) {
  return DimVector(a.sizes().begin(), a.sizes().end() - matrix_dims);
}

int64_t numel_of(const DimVector& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

DimVector with(DimVector batch, std::initializer_list<int64_t> tail) {
  for (int64_t t : tail) batch.push_back(t);
  return batch;
}

// The checks every op makes of its matrix argument, in torch's words.
void check_matrix(const char* fn, const Tensor& a, bool square, const char* name = "A") {
  IGNIS_CHECK(a.dim() >= 2, fn, ": The input tensor ", name, " must have at least 2 dimensions.");
  const ScalarType dt = a.dtype();
  IGNIS_CHECK(is_floating(dt), fn, ": Expected a floating point or complex tensor as input. Got ",
              scalar_type_name(dt));
  IGNIS_CHECK(dt == ScalarType::Float32 || dt == ScalarType::Float64, fn,
              ": not implemented for '", scalar_type_name(dt), "' (float32 and float64 are)");
  if (square)
    IGNIS_CHECK(a.sizes()[a.dim() - 1] == a.sizes()[a.dim() - 2], fn,
                ": ", name, " must be batches of square matrices, but they are ",
                a.sizes()[a.dim() - 2], " by ", a.sizes()[a.dim() - 1], " matrices");
}

// torch's prefix for a batch element's error ("" for a single matrix).
std::string batch_prefix(const Tensor& a, int64_t b) {
  return a.dim() > 2 ? str("(Batch element ", b, "): ") : std::string();
}

// Runs f(b, matrix pointer) over a batch of matrices of `sizes` stored as
// fortran_strides gives, dispatched on the dtype.
template <typename F>
void for_each_matrix(const Tensor& t, F f) {
  const int64_t rows = t.sizes()[t.dim() - 2], cols = t.sizes()[t.dim() - 1];
  const int64_t batch = numel_of(batch_of(t));
  if (t.dtype() == ScalarType::Float32) {
    float* p = t.data<float>();
    for (int64_t b = 0; b < batch; ++b) f(b, p + b * rows * cols);
  } else {
    double* p = t.data<double>();
    for (int64_t b = 0; b < batch; ++b) f(b, p + b * rows * cols);
  }
}

int as_int(int64_t v) {
  IGNIS_CHECK(v <= int64_t(1) << 31, "linalg: a matrix dimension of ", v,
              " is past LAPACK's 32-bit sizes");
  return static_cast<int>(v);
}

Tensor mH(const Tensor& a) { return conj_t(a); }
Tensor mm(const Tensor& a, const Tensor& b) { return op("matmul", a, b); }
Tensor eye_like(const Tensor& a, int64_t n) {
  return op("eye", n, IValue(), IValue(a.dtype()), IValue(a.device()));
}
Tensor diag_embed(const Tensor& v) {  // [..., n] -> [..., n, n]
  const int64_t n = v.sizes()[v.dim() - 1];
  return mul(unsqueeze(v, -1), eye_like(v, n));
}
Tensor tril(const Tensor& a, int64_t k = 0) { return op("tril", a, k); }
Tensor triu(const Tensor& a, int64_t k = 0) { return op("triu", a, k); }
Tensor solve_tri(const Tensor& a, const Tensor& b, bool upper, bool left, bool unit = false) {
  return op("linalg_solve_triangular", a, b, upper, left, unit);
}
Tensor solve(const Tensor& a, const Tensor& b, bool left = true) {
  static OpRef solve_ex("linalg_solve_ex");
  return solve_ex.call(a, b, left, false).at(0).to_tensor();
}

// --- cholesky -----------------------------------------------------------------
// linalg_cholesky_ex(A, *, upper=False, check_errors=False) -> (L, info)

void cholesky_meta(OpCall& c) {
  const Tensor& a = c.tensor(0);
  check_matrix("linalg.cholesky", a, true);
  c.alloc_strided(a.sizes(), fortran_strides(a.sizes()), a.dtype());
  c.alloc(batch_of(a), ScalarType::Int32);
}

void cholesky_cpu(OpCall& c) {
  const Tensor& a = c.tensor(0);
  const bool upper = c.bool_arg(1), check = c.bool_arg(2);
  Tensor& out = c.outputs[0];
  int32_t* info = c.outputs[1].data<int32_t>();
  copy_into(out, a);
  const int n = as_int(a.sizes()[a.dim() - 1]);
  for_each_matrix(out, [&](int64_t b, auto* m) {
    // LAPACK reads and writes one triangle; the other keeps A's values and
    // is zeroed after (torch's L is triangular).
    info[b] = lapack::potrf(upper ? 'U' : 'L', n, m, std::max(n, 1));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        if (upper ? i > j : i < j) m[i + int64_t(j) * n] = 0;
    if (check && info[b] != 0)
      IGNIS_FAIL_KIND(LinAlg, "linalg.cholesky: ", batch_prefix(a, b),
                      "The factorization could not be completed because the input is not "
                      "positive-definite (the leading minor of order ", info[b],
                      " is not positive-definite).");
  });
}

// torch's cholesky_backward: gA = L^{-H} Phi(L^H gL) L^{-1}, Phi taking the
// lower triangle with half the diagonal, then the Hermitian part.
void cholesky_bw(GradCtx& c) {
  if (!c.needs_grad(0)) return;
  const bool upper = c.bool_arg(1);
  Tensor L = upper ? mH(c.result(0)) : c.result(0);
  Tensor gL = upper ? mH(c.grad(0)) : c.grad(0);
  Tensor gA = tril(mm(mH(L), gL));
  gA = mul(add(gA, mH(tril(gA, -1))), 0.5);
  gA = solve_tri(mH(L), gA, /*upper=*/true, /*left=*/true);
  gA = solve_tri(L, gA, /*upper=*/false, /*left=*/false);
  c.set(0, gA);
}

// --- triangular solve -----------------------------------------------------------
// linalg_solve_triangular(A, B, *, upper, left=True, unitriangular=False) -> X

DimVector broadcast_batch(const DimVector& a, const DimVector& b, const char* fn) {
  const size_t r = std::max(a.size(), b.size());
  DimVector out(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t x = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const int64_t y = i + b.size() >= r ? b[i + b.size() - r] : 1;
    IGNIS_CHECK(x == y || x == 1 || y == 1, fn, ": the batch dimensions of A and B cannot be "
                "broadcast: ", x, " and ", y, " at batch dimension ", i);
    out[i] = x == 1 ? y : x;
  }
  return out;
}

void solve_triangular_meta(OpCall& c) {
  const Tensor &a = c.tensor(0), &b = c.tensor(1);
  const bool left = c.bool_arg(3);
  check_matrix("linalg.solve_triangular", a, true);
  check_matrix("linalg.solve_triangular", b, false, "B");
  IGNIS_CHECK(a.dtype() == b.dtype(), "linalg.solve_triangular: Expected A and B to have the same "
              "dtype, but found A of type ", scalar_type_name(a.dtype()), " and B of type ",
              scalar_type_name(b.dtype()), " instead");
  const int64_t n = a.sizes()[a.dim() - 1];
  const int64_t bm = b.sizes()[b.dim() - 2], bn = b.sizes()[b.dim() - 1];
  IGNIS_CHECK(left ? bm == n : bn == n, "linalg.solve_triangular: Incompatible shapes of A and B "
              "for the equation ", left ? "AX = B" : "XA = B", " (", n, "x", n, " and ", bm, "x",
              bn, ")");
  DimVector sizes = with(broadcast_batch(batch_of(a), batch_of(b), "linalg.solve_triangular"),
                         {bm, bn});
  c.alloc_strided(sizes, fortran_strides(sizes), a.dtype());
}

void solve_triangular_cpu(OpCall& c) {
  const Tensor &a = c.tensor(0), &b = c.tensor(1);
  const bool upper = c.bool_arg(2), left = c.bool_arg(3), unit = c.bool_arg(4);
  Tensor& x = c.outputs[0];
  copy_into(x, b);
  const DimVector batch = batch_of(x);
  const int64_t n = a.sizes()[a.dim() - 1];
  Tensor af = empty_strided_tensor(with(batch, {n, n}), fortran_strides(with(batch, {n, n})),
                                   a.dtype(), a.device());
  copy_into(af, a);
  const int m = as_int(x.sizes()[x.dim() - 2]), k = as_int(x.sizes()[x.dim() - 1]);
  const int nn = as_int(n);
  for_each_matrix(x, [&](int64_t i, auto* xm) {
    using T = std::remove_pointer_t<decltype(xm)>;
    const T* am = af.data<T>() + i * n * n;
    if (m && k) lapack::trsm<T>(left, upper, false, unit, m, k, am, std::max(nn, 1), xm, std::max(m, 1));
  });
}

// torch's linalg_solve_triangular backward: gB = A^{-H} gX (left), gA = -gB X^H
// on A's triangle.
void solve_triangular_bw(GradCtx& c) {
  const bool upper = c.bool_arg(2), left = c.bool_arg(3), unit = c.bool_arg(4);
  const Tensor& A = c.in(0);
  Tensor gB = solve_tri(mH(A), c.grad(), !upper, left, unit);
  c.set(1, gB);
  if (c.needs_grad(0)) {
    const Tensor& X = c.result(0);
    Tensor gA = neg(left ? mm(gB, mH(X)) : mm(mH(X), gB));
    gA = upper ? triu(gA, unit ? 1 : 0) : tril(gA, unit ? -1 : 0);
    c.set(0, gA);
  }
}

// --- LU, solve, inverse, determinants -----------------------------------------------

// LU factors of each matrix of `a` (square, fortran layout) in `lu`, pivots
// in `piv` (int32, 1-based) and LAPACK's info per matrix.
void lu_into(const Tensor& lu, const Tensor& a, const Tensor& piv, int32_t* info) {
  copy_into(lu, a);
  const int m = as_int(a.sizes()[a.dim() - 2]), n = as_int(a.sizes()[a.dim() - 1]);
  const int k = std::min(m, n);
  int32_t* p = piv.data<int32_t>();
  for_each_matrix(lu, [&](int64_t b, auto* mat) {
    info[b] = m && n ? lapack::getrf(m, n, mat, std::max(m, 1), p + b * k) : 0;
  });
}

// The LU factors of square `a` in a fresh fortran-layout tensor, its pivots
// in `piv` (a singular matrix's zero pivot stays in U's diagonal: det and
// slogdet read it there).
Tensor lu_factors(const Tensor& a, Tensor& piv) {
  const int64_t n = a.sizes()[a.dim() - 1];
  Tensor lu = empty_strided_tensor(a.sizes(), fortran_strides(a.sizes()), a.dtype(), a.device());
  piv = empty_tensor(with(batch_of(a), {n}), ScalarType::Int32, a.device());
  std::vector<int32_t> info(static_cast<size_t>(std::max<int64_t>(numel_of(batch_of(a)), 1)));
  lu_into(lu, a, piv, info.data());
  return lu;
}

// linalg_lu_factor_ex(A, *, pivot=True, check_errors=False) -> (LU, pivots, info)
void lu_factor_meta(OpCall& c) {
  const Tensor& a = c.tensor(0);
  check_matrix("linalg.lu_factor", a, false);
  IGNIS_CHECK(c.bool_arg(1), "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  const int64_t m = a.sizes()[a.dim() - 2], n = a.sizes()[a.dim() - 1];
  c.alloc_strided(a.sizes(), fortran_strides(a.sizes()), a.dtype());
  c.alloc(with(batch_of(a), {std::min(m, n)}), ScalarType::Int32);
  c.alloc(batch_of(a), ScalarType::Int32);
}
void lu_factor_cpu(OpCall& c) {
  const Tensor& a = c.tensor(0);
  int32_t* info = c.outputs[2].data<int32_t>();
  lu_into(c.outputs[0], a, c.outputs[1], info);
  if (c.bool_arg(2))
    for (int64_t b = 0; b < c.outputs[2].numel(); ++b)
      if (info[b] > 0)
        IGNIS_FAIL_KIND(LinAlg, "linalg.lu_factor: ", batch_prefix(a, b), "U[", info[b], ",",
                        info[b], "] is zero and using it on lu_solve would result in a division "
                        "by zero. If you still want to perform the factorization, consider "
                        "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
}

// linalg_solve_ex(A, B, *, left=True, check_errors=False) -> (result, info).
// B is a batch of vectors when it is one, or has A's batch shape with one
// dim less (torch's rule); else a batch of matrices. left=False solves
// X A = B as A^T X^T = B^T.
bool solve_vector_case(const Tensor& a, const Tensor& b) {
  if (b.dim() == 1) return true;
  if (b.dim() != a.dim() - 1) return false;
  for (int64_t i = 0; i < b.dim(); ++i)
    if (b.sizes()[i] != a.sizes()[i]) return false;
  return true;
}

void solve_meta(OpCall& c) {
  const Tensor &a = c.tensor(0), &b = c.tensor(1);
  check_matrix("linalg.solve", a, true);
  IGNIS_CHECK(b.dim() >= 1, "linalg.solve: The input tensor B must have at least 1 dimensions.");
  IGNIS_CHECK(a.dtype() == b.dtype(), "linalg.solve: Expected A and B to have the same dtype, but "
              "found A of type ", scalar_type_name(a.dtype()), " and B of type ",
              scalar_type_name(b.dtype()), " instead");
  const int64_t n = a.sizes()[a.dim() - 1];
  const bool left = c.bool_arg(2);
  if (solve_vector_case(a, b)) {
    IGNIS_CHECK(b.sizes()[b.dim() - 1] == n, "linalg.solve: Incompatible shapes of A and B for the "
                "equation ", left ? "AX = B" : "XA = B", " (", n, "x", n, " and ",
                b.sizes()[b.dim() - 1], ")");
    DimVector sizes = with(broadcast_batch(batch_of(a), batch_of(b, 1), "linalg.solve"), {n});
    c.alloc(sizes, a.dtype());
  } else {
    const int64_t bm = b.sizes()[b.dim() - 2], bn = b.sizes()[b.dim() - 1];
    IGNIS_CHECK(left ? bm == n : bn == n, "linalg.solve: Incompatible shapes of A and B for the "
                "equation ", left ? "AX = B" : "XA = B", " (", n, "x", n, " and ", bm, "x", bn, ")");
    DimVector sizes = with(broadcast_batch(batch_of(a), batch_of(b), "linalg.solve"), {bm, bn});
    c.alloc_strided(sizes, fortran_strides(sizes), a.dtype());
  }
  c.alloc(batch_of(a), ScalarType::Int32);
}

void solve_cpu(OpCall& c) {
  const Tensor &a = c.tensor(0), &b = c.tensor(1);
  const bool left = c.bool_arg(2), check = c.bool_arg(3);
  const bool vec = solve_vector_case(a, b);
  Tensor& x = c.outputs[0];
  const int64_t n = a.sizes()[a.dim() - 1];
  // X as a batch of n x k column-major right-hand sides (left), or of X^T.
  const DimVector batch = vec ? batch_of(x, 1) : batch_of(x);
  const int64_t k = vec ? 1 : (left ? x.sizes()[x.dim() - 1] : x.sizes()[x.dim() - 2]);
  Tensor rhs = empty_strided_tensor(with(batch, {n, k}), fortran_strides(with(batch, {n, k})),
                                    a.dtype(), a.device());
  Tensor bb = vec ? make_view(b, with(batch_of(b, 1), {n, 1}),
                              with(DimVector(b.strides().begin(), b.strides().end() - 1),
                                   {b.strides()[b.dim() - 1], 1}), b.storage_offset())
                  : b;
  if (!vec && !left) bb = make_view(bb, with(batch_of(bb), {bb.sizes()[bb.dim() - 1], bb.sizes()[bb.dim() - 2]}),
                                    with(DimVector(bb.strides().begin(), bb.strides().end() - 2),
                                         {bb.strides()[bb.dim() - 1], bb.strides()[bb.dim() - 2]}),
                                    bb.storage_offset());
  copy_into(rhs, bb);
  // A's LU once per matrix of A's own batch; the right-hand sides broadcast over it.
  Tensor lu = empty_strided_tensor(a.sizes(), fortran_strides(a.sizes()), a.dtype(), a.device());
  const DimVector abatch = batch_of(a);
  Tensor piv = empty_tensor(with(abatch, {n}), ScalarType::Int32, a.device());
  int32_t* info = c.outputs[1].data<int32_t>();
  lu_into(lu, a, piv, info);
  for (int64_t i = 0; i < numel_of(abatch); ++i)
    if (check && info[i] > 0)
      IGNIS_FAIL_KIND(LinAlg, "linalg.solve: ", batch_prefix(a, i),
                      "The solver failed because the input matrix is singular.");
  // Which matrix of A serves right-hand side i: its batch index broadcast down.
  const size_t r = batch.size(), ar = abatch.size();
  const int nn = as_int(n), kk = as_int(k);
  for_each_matrix(rhs, [&](int64_t i, auto* xm) {
    using T = std::remove_pointer_t<decltype(xm)>;
    int64_t rem = i, ai = 0, astride = 1;
    for (size_t d = r; d-- > 0;) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      if (d + ar >= r) {
        const size_t ad = d + ar - r;
        if (abatch[ad] != 1) ai += idx * astride;
        astride *= abatch[ad];
      }
    }
    if (n == 0 || k == 0 || info[ai] > 0) return;
    lapack::getrs<T>(left ? 'N' : 'T', nn, kk, lu.data<T>() + ai * n * n, std::max(nn, 1),
                     piv.data<int32_t>() + ai * n, xm, std::max(nn, 1));
  });
  if (vec) {
    copy_into(x, make_view(rhs, with(batch, {n}), with(DimVector(rhs.strides().begin(),
                                                                 rhs.strides().end() - 2), {1}),
                           0));
  } else if (left) {
    copy_into(x, rhs);
  } else {
    copy_into(x, make_view(rhs, with(batch, {k, n}),
                           with(DimVector(rhs.strides().begin(), rhs.strides().end() - 2),
                                {rhs.strides()[rhs.dim() - 1], 1}), 0));
  }
}

// torch's linalg_solve backward: gB = A^{-H} gX (left), gA = -gB X^H.
void solve_bw(GradCtx& c) {
  const Tensor& A = c.in(0);
  const bool left = c.bool_arg(2);
  const Tensor& X = c.result(0);
  // solve_vector_case on B's geometry (B itself is not saved)
  const DimVector& bs = c.sizes(1);
  bool vec = bs.size() == 1;
  if (!vec && bs.size() + 1 == size_t(A.dim())) {
    vec = true;
    for (size_t i = 0; i < bs.size(); ++i) vec &= bs[i] == A.sizes()[i];
  }
  Tensor gX = c.grad(0);
  Tensor gB = solve(mH(A), gX, left);
  c.set(1, gB);
  if (c.needs_grad(0)) {
    Tensor g = vec ? unsqueeze(gB, -1) : gB, x = vec ? unsqueeze(X, -1) : X;
    c.set(0, neg(left ? mm(g, mH(x)) : mm(mH(x), g)));
  }
}

// linalg_inv_ex(A, *, check_errors=False) -> (inverse, info)
void inv_meta(OpCall& c) {
  const Tensor& a = c.tensor(0);
  check_matrix("linalg.inv", a, true);
  c.alloc_strided(a.sizes(), fortran_strides(a.sizes()), a.dtype());
  c.alloc(batch_of(a), ScalarType::Int32);
}
void inv_cpu(OpCall& c) {
  const Tensor& a = c.tensor(0);
  Tensor& out = c.outputs[0];
  int32_t* info = c.outputs[1].data<int32_t>();
  const int64_t n = a.sizes()[a.dim() - 1];
  Tensor piv = empty_tensor(with(batch_of(a), {n}), ScalarType::Int32, a.device());
  lu_into(out, a, piv, info);
  const int nn = as_int(n);
  for_each_matrix(out, [&](int64_t b, auto* m) {
    if (info[b] > 0) {
      if (c.bool_arg(1))
        IGNIS_FAIL_KIND(LinAlg, "linalg.inv: ", batch_prefix(a, b), "The diagonal element ",
                        info[b], " is zero, the inversion could not be completed because the "
                        "input matrix is singular.");
      return;
    }
    if (nn) info[b] = lapack::getri(nn, m, std::max(nn, 1), piv.data<int32_t>() + b * n);
  });
}
// -A^{-H} g A^{-H}
void inv_bw(GradCtx& c) {
  if (!c.needs_grad(0)) return;
  Tensor invH = mH(c.result(0));
  c.set(0, neg(mm(invH, mm(c.grad(0), invH))));
}

// The sign and log|det| of each matrix from its LU factors.
template <typename T>
void slogdet_of(const T* lu, const int32_t* piv, int64_t n, T* sign, T* logabs) {
  T s = 1, l = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T d = lu[i + i * n];
    if (piv[i] != i + 1) s = -s;
    if (d < 0) s = -s;
    if (d == 0) s = 0;
    l += std::log(std::abs(d));
  }
  *sign = s;
  *logabs = l;
}

// linalg_slogdet(A) -> (sign, logabsdet)
void slogdet_meta(OpCall& c) {
  const Tensor& a = c.tensor(0);
  check_matrix("linalg.slogdet", a, true);
  c.alloc(batch_of(a), a.dtype());
  c.alloc(batch_of(a), a.dtype());
}
void slogdet_cpu(OpCall& c) {
  const Tensor& a = c.tensor(0);
  const int64_t n = a.sizes()[a.dim() - 1];
  Tensor piv;
  const Tensor lu = lu_factors(a, piv);
  for_each_matrix(lu, [&](int64_t b, auto* m) {
    using T = std::remove_pointer_t<decltype(m)>;
    slogdet_of<T>(m, piv.data<int32_t>() + b * n, n, c.outputs[0].data<T>() + b,
                  c.outputs[1].data<T>() + b);
  });
}
// d log|det A| = A^{-H}: the gradient through a solve with the identity
// (singular A: inf, as torch's).
void slogdet_bw(GradCtx& c) {
  if (!c.needs_grad(0)) return;
  const Tensor& A = c.in(0);
  const int64_t n = A.sizes()[A.dim() - 1];
  Tensor g = unsqueeze(unsqueeze(c.grad(1), -1), -1);
  Tensor invH = mH(solve(A, expand(eye_like(A, n), A.sizes())));
  c.set(0, mul(g, invH));
}

// linalg_det(A) -> det: the product of U's diagonal, signed by the pivots.
void det_meta(OpCall& c) {
  const Tensor& a = c.tensor(0);
  check_matrix("linalg.det", a, true);
  c.alloc(batch_of(a), a.dtype());
}
void det_cpu(OpCall& c) {
  const Tensor& a = c.tensor(0);
  const int64_t n = a.sizes()[a.dim() - 1];
  Tensor piv;
  const Tensor lu = lu_factors(a, piv);
  for_each_matrix(lu, [&](int64_t b, auto* m) {
    using T = std::remove_pointer_t<decltype(m)>;
    // The product of U's diagonal, signed by the permutation (no logs: an
    // exact product for integer-valued matrices, as LAPACK's).
    T d = 1;
    const int32_t* p = piv.data<int32_t>() + b * n;
    for (int64_t i = 0; i < n; ++i) {
      d *= m[i + i * n];
      if (p[i] != i + 1) d = -d;
    }
    c.outputs[0].data<T>()[b] = d;
  });
}
// d det A = det A * A^{-H}, through the SVD where A is singular
// (adj(A)^H = U diag(prod_{j != i} s_j) V^H det(U V^H)) so that a rank-
// deficient A still gets its (finite) gradient, as torch's does.
void det_bw(GradCtx& c) {
  if (!c.needs_grad(0)) return;
  const Tensor& A = c.in(0);
  Tensor g = unsqueeze(unsqueeze(c.grad(0), -1), -1);
  // The SVD form serves every matrix: cofactor^T = U diag(prod of the other
  // singular values) V^H * det(U) det(V^H).
  Stack usv = OpRef("linalg_svd").call(A, false, IValue());
  const Tensor U = usv[0].to_tensor(), S = usv[1].to_tensor(), Vh = usv[2].to_tensor();
  const int64_t n = A.sizes()[A.dim() - 1];
  // prod_{j != i} s_j without dividing (s_i may be 0): prefix and suffix products.
  Tensor ones = op("ones_like", op("narrow", S, int64_t(-1), int64_t(0), int64_t(1)));
  Tensor pre = op("cumprod", op("cat", std::vector<Tensor>{ones, op("narrow", S, int64_t(-1), int64_t(0),
                                                                      std::max<int64_t>(n - 1, 0))},
                                int64_t(-1)), int64_t(-1));
  Tensor suf = op("flip", op("cumprod", op("cat", std::vector<Tensor>{ones, op("narrow", op("flip", S, std::vector<int64_t>{-1}), int64_t(-1), int64_t(0),
                                                                               std::max<int64_t>(n - 1, 0))},
                                         int64_t(-1)), int64_t(-1)), std::vector<int64_t>{-1});
  Tensor others = mul(pre, suf);
  Tensor sign = mul(op("linalg_det", U), op("linalg_det", Vh));
  Tensor cof = mul(mm(mul(U, unsqueeze(others, -2)), Vh), unsqueeze(unsqueeze(sign, -1), -1));
  c.set(0, mul(g, cof));
}

// --- symmetric eigendecomposition -----------------------------------------------------
// linalg_eigh(A, UPLO="L") -> (eigenvalues, eigenvectors)

void eigh_meta(OpCall& c) {
  const Tensor& a = c.tensor(0);
  check_matrix("linalg.eigh", a, true);
  const std::string uplo = c.args[1].to_string();
  IGNIS_CHECK(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u",
              "Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  const int64_t n = a.sizes()[a.dim() - 1];
  c.alloc(with(batch_of(a), {n}), a.dtype());
  c.alloc_strided(a.sizes(), fortran_strides(a.sizes()), a.dtype());
}
void eigh_cpu(OpCall& c) {
  const Tensor& a = c.tensor(0);
  const char uplo = static_cast<char>(std::toupper(c.args[1].to_string()[0]));
  Tensor& vecs = c.outputs[1];
  copy_into(vecs, a);
  const int n = as_int(a.sizes()[a.dim() - 1]);
  for_each_matrix(vecs, [&](int64_t b, auto* m) {
    using T = std::remove_pointer_t<decltype(m)>;
    if (n == 0) return;
    const int info = lapack::syevd<T>('V', uplo, n, m, n, c.outputs[0].data<T>() + b * n);
    if (info > 0)
      IGNIS_FAIL_KIND(LinAlg, "linalg.eigh: ", batch_prefix(a, b), "The algorithm failed to "
                      "converge because the input matrix is ill-conditioned or has too many "
                      "repeated eigenvalues (error code: ", info, ").");
  });
}
// torch's linalg_eig_backward for Hermitian A:
// gA = V (diag(gL) + skew(V^H gV) / E) V^H, E_ij = L_j - L_i (1 on the diagonal).
void eigh_bw(GradCtx& c) {
  if (!c.needs_grad(0)) return;
  const Tensor& L = c.result(0);
  const Tensor& V = c.result(1);
  const Tensor &gL = c.grad(0), &gV = c.grad(1);
  const int64_t n = L.sizes()[L.dim() - 1];
  Tensor E = add(sub(unsqueeze(L, -2), unsqueeze(L, -1)), eye_like(L, n));
  Tensor VhgV = mm(mH(V), gV);
  Tensor inner = div(mul(sub(VhgV, mH(VhgV)), 0.5), E);
  inner = add(inner, diag_embed(gL));
  c.set(0, mm(V, mm(inner, mH(V))));
}

// --- SVD ---------------------------------------------------------------------------------
// linalg_svd(A, full_matrices=True, *, driver=None) -> (U, S, Vh)

void svd_meta(OpCall& c) {
  const Tensor& a = c.tensor(0);
  check_matrix("linalg.svd", a, false);
  IGNIS_CHECK(c.args[2].is_none(), "torch.linalg.svd: keyword argument `driver=` is only "
              "supported on CUDA inputs with cuSOLVER backend.");
  const bool full = c.bool_arg(1);
  const int64_t m = a.sizes()[a.dim() - 2], n = a.sizes()[a.dim() - 1], k = std::min(m, n);
  const DimVector batch = batch_of(a);
  DimVector us = with(batch, {m, full ? m : k}), vs = with(batch, {full ? n : k, n});
  c.alloc_strided(us, fortran_strides(us), a.dtype());
  c.alloc(with(batch, {k}), a.dtype());
  c.alloc_strided(vs, fortran_strides(vs), a.dtype());
}
void svd_cpu(OpCall& c) {
  const Tensor& a = c.tensor(0);
  const bool full = c.bool_arg(1);
  const int64_t m = a.sizes()[a.dim() - 2], n = a.sizes()[a.dim() - 1], k = std::min(m, n);
  Tensor work = empty_strided_tensor(a.sizes(), fortran_strides(a.sizes()), a.dtype(), a.device());
  copy_into(work, a);
  Tensor &U = c.outputs[0], &S = c.outputs[1], &Vh = c.outputs[2];
  const int64_t ucols = full ? m : k, vrows = full ? n : k;
  if (k == 0) {  // an empty matrix: U and Vh are identities when full
    if (full) {
      copy_into(U, eye_like(a, m));
      copy_into(Vh, eye_like(a, n));
    }
    return;
  }
  for_each_matrix(work, [&](int64_t b, auto* w) {
    using T = std::remove_pointer_t<decltype(w)>;
    const int info = lapack::gesdd<T>(full ? 'A' : 'S', as_int(m), as_int(n), w, as_int(m),
                                      S.data<T>() + b * k, U.data<T>() + b * m * ucols, as_int(m),
                                      Vh.data<T>() + b * vrows * n, as_int(vrows));
    if (info > 0)
      IGNIS_FAIL_KIND(LinAlg, "linalg.svd: ", batch_prefix(a, b), "The algorithm failed to "
                      "converge because the input matrix is ill-conditioned or has too many "
                      "repeated singular values (error code: ", info, ").");
  });
}
// torch's svd_backward (real case).
void svd_bw(GradCtx& c) {
  if (!c.needs_grad(0)) return;
  const bool full = c.bool_arg(1);
  Tensor U = c.result(0), S = c.result(1), Vh = c.result(2);
  Tensor gU = c.grad(0), gS = c.grad(1), gVh = c.grad(2);
  const DimVector& as = c.sizes(0);
  const int64_t m = as[as.size() - 2], n = as[as.size() - 1], k = std::min(m, n);
  if (full) {  // only the first k vectors carry information
    U = op("narrow", U, int64_t(-1), int64_t(0), k);
    Vh = op("narrow", Vh, int64_t(-2), int64_t(0), k);
    gU = op("narrow", gU, int64_t(-1), int64_t(0), k);
    gVh = op("narrow", gVh, int64_t(-2), int64_t(0), k);
  }
  Tensor V = mH(Vh), gV = mH(gVh);
  Tensor UhgU = mm(mH(U), gU);
  UhgU = sub(UhgU, mH(UhgU));
  Tensor VhgV = mm(mH(V), gV);
  VhgV = sub(VhgV, mH(VhgV));
  Tensor S2 = mul(S, S);
  Tensor E = add(sub(unsqueeze(S2, -2), unsqueeze(S2, -1)), eye_like(S, k));
  Tensor gA = div(add(mul(UhgU, unsqueeze(S, -2)), mul(unsqueeze(S, -1), VhgV)), E);
  gA = add(gA, diag_embed(gS));
  if (m > k) {
    gA = mm(U, gA);
    Tensor gUSinv = div(gU, unsqueeze(S, -2));
    gA = add(gA, sub(gUSinv, mm(U, mm(mH(U), gUSinv))));
    gA = mm(gA, mH(V));
  } else if (n > k) {
    gA = mm(gA, mH(V));
    Tensor gVSinv = div(gV, unsqueeze(S, -2));
    gA = add(gA, sub(mH(gVSinv), mm(mm(mH(gVSinv), V), mH(V))));
    gA = mm(U, gA);
  } else {
    gA = mm(U, mm(gA, mH(V)));
  }
  c.set(0, gA);
}

// --- QR ----------------------------------------------------------------------------------
// linalg_qr(A, mode="reduced") -> (Q, R)

void qr_meta(OpCall& c) {
  const Tensor& a = c.tensor(0);
  check_matrix("linalg.qr", a, false);
  const std::string mode = c.args[1].to_string();
  IGNIS_CHECK(mode == "reduced" || mode == "complete" || mode == "r",
              "qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  const int64_t m = a.sizes()[a.dim() - 2], n = a.sizes()[a.dim() - 1], k = std::min(m, n);
  const DimVector batch = batch_of(a);
  DimVector qs = mode == "r" ? DimVector{0} : with(batch, {m, mode == "complete" ? m : k});
  DimVector rs = with(batch, {mode == "complete" ? m : k, n});
  c.alloc_strided(qs, fortran_strides(qs), a.dtype());
  c.alloc_strided(rs, fortran_strides(rs), a.dtype());
}
void qr_cpu(OpCall& c) {
  const Tensor& a = c.tensor(0);
  const std::string mode = c.args[1].to_string();
  const int64_t m = a.sizes()[a.dim() - 2], n = a.sizes()[a.dim() - 1], k = std::min(m, n);
  const int64_t qcols = mode == "complete" ? m : k, rrows = mode == "complete" ? m : k;
  const DimVector batch = batch_of(a);
  // The factorization in an m x max(n, qcols) buffer: geqrf over its first n
  // columns, orgqr over its first qcols.
  const int64_t w = std::max(n, qcols);
  Tensor work = empty_strided_tensor(with(batch, {m, w}), fortran_strides(with(batch, {m, w})),
                                     a.dtype(), a.device());
  copy_into(make_view(work, a.sizes(), DimVector(work.strides().begin(), work.strides().end()), 0), a);
  Tensor tau = empty_tensor(with(batch, {std::max<int64_t>(k, 1)}), a.dtype(), a.device());
  Tensor& R = c.outputs[1];
  for_each_matrix(work, [&](int64_t b, auto* wm) {
    using T = std::remove_pointer_t<decltype(wm)>;
    T* t = tau.data<T>() + b * std::max<int64_t>(k, 1);
    if (m && n) lapack::geqrf<T>(as_int(m), as_int(n), wm, std::max(as_int(m), 1), t);
    T* r = R.data<T>() + b * rrows * n;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < rrows; ++i) r[i + j * rrows] = i <= j && i < m ? wm[i + j * m] : T(0);
    if (mode == "r") return;
    if (m && qcols) lapack::orgqr<T>(as_int(m), as_int(qcols), as_int(k), wm, std::max(as_int(m), 1), t);
    T* q = c.outputs[0].data<T>() + b * m * qcols;
    for (int64_t j = 0; j < qcols; ++j)
      for (int64_t i = 0; i < m; ++i) q[i + j * m] = wm[i + j * m];
  });
}
// The QR backward of TensorFlow's QrGrad / torch's linalg_qr_backward:
// m >= n: gA = (gQ + Q copyltu(M)) R^{-T}, M = R gR^T - gQ^T Q, copyltu the
// symmetric matrix from M's lower triangle. m < n: A = Q [X | Y], R = [U | V]
// with U square; X's gradient as above with gQ + Y gV^T, Y's = Q gV.
Tensor qr_square_part(const Tensor& Q, const Tensor& R, const Tensor& gQ, const Tensor& gR) {
  Tensor M = sub(mm(R, mH(gR)), mm(mH(gQ), Q));
  Tensor low = tril(M, -1);
  Tensor sym = add(add(low, mH(low)), diag_embed(op("diagonal", M, int64_t(0), int64_t(-2), int64_t(-1))));
  Tensor b = add(gQ, mm(Q, sym));
  // b R^{-T}: X R^T = b^T ... solved as X R^H = b from the right
  return solve_tri(mH(R), b, /*upper=*/false, /*left=*/false);
}
void qr_bw(GradCtx& c) {
  if (!c.needs_grad(0)) return;
  const std::string mode = c.args[1].to_string();
  IGNIS_CHECK(mode != "r", "The derivative of linalg.qr depends on Q, which is not computed when "
              "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
              "through linalg.qr.");
  const Tensor &Q = c.result(0), &R = c.result(1);
  const DimVector& as = c.sizes(0);
  const int64_t m = as[as.size() - 2], n = as[as.size() - 1];
  IGNIS_CHECK(mode == "reduced" || m <= n, "The QR decomposition is not differentiable when "
              "mode='complete' and nrows > ncols.");
  const Tensor &gQ = c.grad(0), &gR = c.grad(1);
  if (m >= n) {
    c.set(0, qr_square_part(Q, R, gQ, gR));
    return;
  }
  Tensor U = op("narrow", R, int64_t(-1), int64_t(0), m);
  Tensor gU = op("narrow", gR, int64_t(-1), int64_t(0), m);
  Tensor gV = op("narrow", gR, int64_t(-1), m, n - m);
  Tensor Y = op("narrow", c.in(0), int64_t(-1), m, n - m);
  Tensor gX = qr_square_part(Q, U, add(gQ, mm(Y, mH(gV))), gU);
  Tensor gY = mm(Q, gV);
  c.set(0, op("cat", std::vector<Tensor>{gX, gY}, int64_t(-1)));
}

}  // namespace

void register_linalg_ops() {
  // Note [Linear algebra ops]: core, extern kernels in the compiler, LAPACK underneath.
  def("linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> "
      "(Tensor L, Tensor info)")
      .category(OpCategory::Other).meta(cholesky_meta).cpu(cholesky_cpu).cuda(on_host<cholesky_cpu>)
      .doc("the Cholesky factor of each symmetric positive-definite matrix (lower, or upper)")
      .derivative(cholesky_bw, "result").core();
  def("linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, "
      "bool unitriangular=False) -> Tensor")
      .category(OpCategory::Other).meta(solve_triangular_meta).cpu(solve_triangular_cpu).cuda(on_host<solve_triangular_cpu>)
      .doc("X with A X = B (left) or X A = B for triangular A")
      .derivative(solve_triangular_bw, "self, result").core();
  def("linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> "
      "(Tensor LU, Tensor pivots, Tensor info)")
      .category(OpCategory::Other).meta(lu_factor_meta).cpu(lu_factor_cpu).cuda(on_host<lu_factor_cpu>)
      .doc("LU factors with partial pivoting (LAPACK's packed form, 1-based int32 pivots)")
      .nondifferentiable().core();
  def("linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> "
      "(Tensor result, Tensor info)")
      .category(OpCategory::Other).meta(solve_meta).cpu(solve_cpu).cuda(on_host<solve_cpu>)
      .doc("X with A X = B (left) or X A = B, through A's LU factors")
      .derivative(solve_bw, "A, result").core();
  def("linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)")
      .category(OpCategory::Other).meta(inv_meta).cpu(inv_cpu).cuda(on_host<inv_cpu>)
      .doc("the inverse of each square matrix")
      .derivative(inv_bw, "result").core();
  def("linalg_det(Tensor A) -> Tensor")
      .category(OpCategory::Other).meta(det_meta).cpu(det_cpu).cuda(on_host<det_cpu>)
      .doc("the determinant of each square matrix")
      .derivative(det_bw, "A").core();
  def("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)")
      .category(OpCategory::Other).meta(slogdet_meta).cpu(slogdet_cpu).cuda(on_host<slogdet_cpu>)
      .doc("the sign and the log of the absolute value of each matrix's determinant")
      .derivative(slogdet_bw, "A").core();
  def("linalg_eigh(Tensor self, str UPLO=\"L\") -> (Tensor eigenvalues, Tensor eigenvectors)")
      .category(OpCategory::Other).meta(eigh_meta).cpu(eigh_cpu).cuda(on_host<eigh_cpu>)
      .doc("eigenvalues (ascending) and eigenvectors of each symmetric matrix")
      .derivative(eigh_bw, "result, result1").core();
  def("linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None) -> "
      "(Tensor U, Tensor S, Tensor Vh)")
      .category(OpCategory::Other).meta(svd_meta).cpu(svd_cpu).cuda(on_host<svd_cpu>)
      .doc("the singular value decomposition A = U diag(S) Vh (S descending)")
      .derivative(svd_bw, "result, result1, result2").core();
  def("linalg_qr(Tensor A, str mode=\"reduced\") -> (Tensor Q, Tensor R)")
      .category(OpCategory::Other).meta(qr_meta).cpu(qr_cpu).cuda(on_host<qr_cpu>)
      .doc("the QR decomposition A = Q R (Householder)")
      .derivative(qr_bw, "A, result, result1").core();
}

}  // namespace ignis

#include "ignis/kernels/cpu/lapack.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "ignis/core/error.h"

#if IGNIS_HAVE_BLAS
#include <cblas.h>

// LAPACK's Fortran entry points (OpenBLAS exports them). Every argument is
// a pointer; each character argument has a hidden length after the others
// (gfortran's convention), passed as 1.
extern "C" {
void spotrf_(const char*, const int*, float*, const int*, int*, size_t);
void dpotrf_(const char*, const int*, double*, const int*, int*, size_t);
void sgetrf_(const int*, const int*, float*, const int*, int*, int*);
void dgetrf_(const int*, const int*, double*, const int*, int*, int*);
void sgetrs_(const char*, const int*, const int*, const float*, const int*, const int*, float*,
             const int*, int*, size_t);
void dgetrs_(const char*, const int*, const int*, const double*, const int*, const int*, double*,
             const int*, int*, size_t);
void sgetri_(const int*, float*, const int*, const int*, float*, const int*, int*);
void dgetri_(const int*, double*, const int*, const int*, double*, const int*, int*);
void ssyevd_(const char*, const char*, const int*, float*, const int*, float*, float*, const int*,
             int*, const int*, int*, size_t, size_t);
void dsyevd_(const char*, const char*, const int*, double*, const int*, double*, double*,
             const int*, int*, const int*, int*, size_t, size_t);
void sgesdd_(const char*, const int*, const int*, float*, const int*, float*, float*, const int*,
             float*, const int*, float*, const int*, int*, int*, size_t);
void dgesdd_(const char*, const int*, const int*, double*, const int*, double*, double*,
             const int*, double*, const int*, double*, const int*, int*, int*, size_t);
void sgeqrf_(const int*, const int*, float*, const int*, float*, float*, const int*, int*);
void dgeqrf_(const int*, const int*, double*, const int*, double*, double*, const int*, int*);
void sorgqr_(const int*, const int*, const int*, float*, const int*, const float*, float*,
             const int*, int*);
void dorgqr_(const int*, const int*, const int*, double*, const int*, const double*, double*,
             const int*, int*);
}
#endif

namespace ignis::cpu::lapack {

namespace {

[[noreturn]] void no_lapack() {
  IGNIS_FAIL_KIND(NotImplemented,
                  "ignis.linalg needs LAPACK, and this build of ignis has none (it was built "
                  "without OpenBLAS: install libopenblas-dev and rebuild)");
}

// A workspace size LAPACK reported as a floating-point number.
template <typename T>
int work_size(T query) {
  return std::max(1, static_cast<int>(query));
}

}  // namespace

bool available() {
#if IGNIS_HAVE_BLAS
  return true;
#else
  return false;
#endif
}

#if IGNIS_HAVE_BLAS

template <> int potrf<float>(char uplo, int n, float* a, int ld) {
  int info = 0;
  spotrf_(&uplo, &n, a, &ld, &info, 1);
  return info;
}
template <> int potrf<double>(char uplo, int n, double* a, int ld) {
  int info = 0;
  dpotrf_(&uplo, &n, a, &ld, &info, 1);
  return info;
}

template <> int getrf<float>(int m, int n, float* a, int ld, int* ipiv) {
  int info = 0;
  sgetrf_(&m, &n, a, &ld, ipiv, &info);
  return info;
}
template <> int getrf<double>(int m, int n, double* a, int ld, int* ipiv) {
  int info = 0;
  dgetrf_(&m, &n, a, &ld, ipiv, &info);
  return info;
}

template <>
int getrs<float>(char trans, int n, int nrhs, const float* a, int lda, const int* ipiv, float* b,
                 int ldb) {
  int info = 0;
  sgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);
  return info;
}
template <>
int getrs<double>(char trans, int n, int nrhs, const double* a, int lda, const int* ipiv,
                  double* b, int ldb) {
  int info = 0;
  dgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);
  return info;
}

template <typename T, typename F>
int getri_impl(F f, int n, T* a, int ld, const int* ipiv) {
  int info = 0, lwork = -1;
  T query = 0;
  f(&n, a, &ld, ipiv, &query, &lwork, &info);
  lwork = work_size(query);
  std::vector<T> work(static_cast<size_t>(lwork));
  f(&n, a, &ld, ipiv, work.data(), &lwork, &info);
  return info;
}
template <> int getri<float>(int n, float* a, int ld, const int* ipiv) {
  return getri_impl(sgetri_, n, a, ld, ipiv);
}
template <> int getri<double>(int n, double* a, int ld, const int* ipiv) {
  return getri_impl(dgetri_, n, a, ld, ipiv);
}

template <typename T, typename F>
int syevd_impl(F f, char jobz, char uplo, int n, T* a, int ld, T* w) {
  int info = 0, lwork = -1, liwork = -1, iquery = 0;
  T query = 0;
  f(&jobz, &uplo, &n, a, &ld, w, &query, &lwork, &iquery, &liwork, &info, 1, 1);
  lwork = work_size(query);
  liwork = std::max(1, iquery);
  std::vector<T> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  f(&jobz, &uplo, &n, a, &ld, w, work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  return info;
}
template <> int syevd<float>(char jobz, char uplo, int n, float* a, int ld, float* w) {
  return syevd_impl(ssyevd_, jobz, uplo, n, a, ld, w);
}
template <> int syevd<double>(char jobz, char uplo, int n, double* a, int ld, double* w) {
  return syevd_impl(dsyevd_, jobz, uplo, n, a, ld, w);
}

template <typename T, typename F>
int gesdd_impl(F f, char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt) {
  int info = 0, lwork = -1;
  T query = 0;
  std::vector<int> iwork(static_cast<size_t>(8 * std::max(1, std::min(m, n))));
  f(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, &query, &lwork, iwork.data(), &info, 1);
  lwork = work_size(query);
  std::vector<T> work(static_cast<size_t>(lwork));
  f(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork, iwork.data(), &info, 1);
  return info;
}
template <>
int gesdd<float>(char jobz, int m, int n, float* a, int lda, float* s, float* u, int ldu,
                 float* vt, int ldvt) {
  return gesdd_impl(sgesdd_, jobz, m, n, a, lda, s, u, ldu, vt, ldvt);
}
template <>
int gesdd<double>(char jobz, int m, int n, double* a, int lda, double* s, double* u, int ldu,
                  double* vt, int ldvt) {
  return gesdd_impl(dgesdd_, jobz, m, n, a, lda, s, u, ldu, vt, ldvt);
}

template <typename T, typename F>
int geqrf_impl(F f, int m, int n, T* a, int ld, T* tau) {
  int info = 0, lwork = -1;
  T query = 0;
  f(&m, &n, a, &ld, tau, &query, &lwork, &info);
  lwork = work_size(query);
  std::vector<T> work(static_cast<size_t>(lwork));
  f(&m, &n, a, &ld, tau, work.data(), &lwork, &info);
  return info;
}
template <> int geqrf<float>(int m, int n, float* a, int ld, float* tau) {
  return geqrf_impl(sgeqrf_, m, n, a, ld, tau);
}
template <> int geqrf<double>(int m, int n, double* a, int ld, double* tau) {
  return geqrf_impl(dgeqrf_, m, n, a, ld, tau);
}

template <typename T, typename F>
int orgqr_impl(F f, int m, int n, int k, T* a, int ld, const T* tau) {
  int info = 0, lwork = -1;
  T query = 0;
  f(&m, &n, &k, a, &ld, tau, &query, &lwork, &info);
  lwork = work_size(query);
  std::vector<T> work(static_cast<size_t>(lwork));
  f(&m, &n, &k, a, &ld, tau, work.data(), &lwork, &info);
  return info;
}
template <> int orgqr<float>(int m, int n, int k, float* a, int ld, const float* tau) {
  return orgqr_impl(sorgqr_, m, n, k, a, ld, tau);
}
template <> int orgqr<double>(int m, int n, int k, double* a, int ld, const double* tau) {
  return orgqr_impl(dorgqr_, m, n, k, a, ld, tau);
}

template <typename T>
void trsm(bool left, bool upper, bool transpose, bool unit_diagonal, int m, int n, const T* a,
          int lda, T* b, int ldb) {
  const auto side = left ? CblasLeft : CblasRight;
  const auto uplo = upper ? CblasUpper : CblasLower;
  const auto trans = transpose ? CblasTrans : CblasNoTrans;
  const auto diag = unit_diagonal ? CblasUnit : CblasNonUnit;
  if constexpr (sizeof(T) == 4)
    cblas_strsm(CblasColMajor, side, uplo, trans, diag, m, n, 1.0f, a, lda, b, ldb);
  else
    cblas_dtrsm(CblasColMajor, side, uplo, trans, diag, m, n, 1.0, a, lda, b, ldb);
}

#else  // no LAPACK in this build

template <typename T> int potrf(char, int, T*, int) { no_lapack(); }
template <typename T> int getrf(int, int, T*, int, int*) { no_lapack(); }
template <typename T> int getrs(char, int, int, const T*, int, const int*, T*, int) { no_lapack(); }
template <typename T> int getri(int, T*, int, const int*) { no_lapack(); }
template <typename T> int syevd(char, char, int, T*, int, T*) { no_lapack(); }
template <typename T> int gesdd(char, int, int, T*, int, T*, T*, int, T*, int) { no_lapack(); }
template <typename T> int geqrf(int, int, T*, int, T*) { no_lapack(); }
template <typename T> int orgqr(int, int, int, T*, int, const T*) { no_lapack(); }
template <typename T> void trsm(bool, bool, bool, bool, int, int, const T*, int, T*, int) {
  no_lapack();
}
#define IGNIS_LAPACK_INSTANTIATE(T)                                                     \
  template int potrf<T>(char, int, T*, int);                                            \
  template int getrf<T>(int, int, T*, int, int*);                                       \
  template int getrs<T>(char, int, int, const T*, int, const int*, T*, int);            \
  template int getri<T>(int, T*, int, const int*);                                      \
  template int syevd<T>(char, char, int, T*, int, T*);                                  \
  template int gesdd<T>(char, int, int, T*, int, T*, T*, int, T*, int);                 \
  template int geqrf<T>(int, int, T*, int, T*);                                         \
  template int orgqr<T>(int, int, int, T*, int, const T*);
IGNIS_LAPACK_INSTANTIATE(float)
IGNIS_LAPACK_INSTANTIATE(double)
#undef IGNIS_LAPACK_INSTANTIATE

#endif

template void trsm<float>(bool, bool, bool, bool, int, int, const float*, int, float*, int);
template void trsm<double>(bool, bool, bool, bool, int, int, const double*, int, double*, int);

}  // namespace ignis::cpu::lapack

// LAPACK (and BLAS trsm) for one matrix at a time, float and double: the
// factorizations behind ignis.linalg (ops/linalg.cpp). Matrices are
// column-major, LAPACK's layout, with leading dimension `ld`; each call
// returns LAPACK's `info` (0: success; > 0: the factorization's own failure,
// which the op turns into its error). Workspaces are queried and allocated
// per call. The routines come from OpenBLAS, which carries LAPACK; a build
// without OpenBLAS has none, and each call raises NotImplementedError.
#pragma once

#include <cstdint>

namespace ignis::cpu::lapack {

bool available();

// Cholesky: A = L L^T (uplo 'L') or U^T U ('U'), in place.
template <typename T> int potrf(char uplo, int n, T* a, int ld);
// LU with partial pivoting: A = P L U, in place; ipiv 1-based (LAPACK's).
template <typename T> int getrf(int m, int n, T* a, int ld, int* ipiv);
// Solves A X = B (trans 'N') or A^T X = B ('T') from getrf's factors, in place in b.
template <typename T>
int getrs(char trans, int n, int nrhs, const T* a, int lda, const int* ipiv, T* b, int ldb);
// The inverse from getrf's factors, in place.
template <typename T> int getri(int n, T* a, int ld, const int* ipiv);
// Symmetric eigendecomposition (divide and conquer): eigenvalues ascending
// in w, eigenvectors (jobz 'V') in a's columns.
template <typename T> int syevd(char jobz, char uplo, int n, T* a, int ld, T* w);
// SVD (divide and conquer): jobz 'S' (reduced), 'A' (full) or 'N' (values
// only); a is destroyed.
template <typename T>
int gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt);
// QR: R in a's upper triangle, the reflectors below it and in tau.
template <typename T> int geqrf(int m, int n, T* a, int ld, T* tau);
// Q's first n columns (m x n) from geqrf's k reflectors, in place.
template <typename T> int orgqr(int m, int n, int k, T* a, int ld, const T* tau);
// Triangular solve with m x n B, in place: op(A) X = B (left) or X op(A) = B.
template <typename T>
void trsm(bool left, bool upper, bool transpose, bool unit_diagonal, int m, int n, const T* a,
          int lda, T* b, int ldb);

}  // namespace ignis::cpu::lapack

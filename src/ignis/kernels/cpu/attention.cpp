#include "ignis/kernels/cpu/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ignis/core/dtype.h"
#include "ignis/kernels/cpu/gemm.h"
#include "ignis/kernels/cpu/parallel.h"
#include "ignis/kernels/cpu/vec_math.h"

namespace ignis::cpu {

namespace {

// Rows of queries per task and keys per block. 64 x 128 score blocks (32 KiB
// in float) stay in L1/L2 next to the query rows and the output accumulator,
// and a 512-row sequence still gives 8 tasks per head to spread over threads.
constexpr int64_t kBQ = 64;
constexpr int64_t kBK = 128;

// Element offset of each flat batch index of `t` (its leading nb dims).
std::vector<int64_t> batch_offsets(const Tensor& t, int64_t nb) {
  int64_t n = 1;
  for (int64_t d = 0; d < nb; ++d) n *= t.sizes()[d];
  std::vector<int64_t> off(static_cast<size_t>(n));
  std::vector<int64_t> idx(static_cast<size_t>(nb), 0);
  int64_t cur = 0;  // relative to data_ptr(), which includes the storage offset
  for (int64_t i = 0; i < n; ++i) {
    off[i] = cur;
    for (int64_t d = nb - 1; d >= 0; --d) {
      if (++idx[d] < t.sizes()[d]) {
        cur += t.strides()[d];
        break;
      }
      cur -= (idx[d] - 1) * t.strides()[d];
      idx[d] = 0;
    }
  }
  return off;
}

// The mask as the kernels read it: position (i, j) of batch b.
template <typename T>
struct MaskView {
  const bool* bmask = nullptr;
  const T* fmask = nullptr;
  std::vector<int64_t> off;
  int64_t sl = 0, ss = 0;
  MaskView(const Tensor& m, int64_t nb) {
    if (!m.defined()) return;
    if (m.dtype() == ScalarType::Bool) bmask = m.data<bool>();
    else fmask = m.data<T>();
    off = batch_offsets(m, nb);
    sl = m.strides()[nb];
    ss = m.strides()[nb + 1];
  }
};

constexpr double kInf = std::numeric_limits<double>::infinity();

// Scores s[bq, bk] (row stride kBK) of query rows i0.. and keys j0..: the
// causal and explicit masks applied.
template <typename T>
void mask_block(T* s, int64_t bq, int64_t bk, int64_t i0, int64_t j0, bool causal,
                const MaskView<T>& m, int64_t b) {
  const T ninf = static_cast<T>(-kInf);
  if (m.bmask) {
    const bool* mb = m.bmask + m.off[b];
    for (int64_t r = 0; r < bq; ++r) {
      const bool* row = mb + (i0 + r) * m.sl + j0 * m.ss;
      T* sr = s + r * kBK;
      for (int64_t c = 0; c < bk; ++c)
        if (!row[c * m.ss]) sr[c] = ninf;
    }
  } else if (m.fmask) {
    const T* mf = m.fmask + m.off[b];
    for (int64_t r = 0; r < bq; ++r) {
      const T* row = mf + (i0 + r) * m.sl + j0 * m.ss;
      T* sr = s + r * kBK;
      if (m.ss == 1) {
#pragma omp simd
        for (int64_t c = 0; c < bk; ++c) sr[c] += row[c];
      } else {
        for (int64_t c = 0; c < bk; ++c) sr[c] += row[c * m.ss];
      }
    }
  }
  // Only blocks that cross the diagonal hold keys after some query.
  if (causal && j0 + bk - 1 > i0) {
    for (int64_t r = 0; r < bq; ++r) {
      T* sr = s + r * kBK;
      for (int64_t c = std::max<int64_t>(0, i0 + r + 1 - j0); c < bk; ++c) sr[c] = ninf;
    }
  }
}

// Keys a block of query rows [i0, i0 + bq) can see.
inline int64_t key_end(bool causal, int64_t S, int64_t i0, int64_t bq) {
  return causal ? std::min(S, i0 + bq) : S;
}

struct Dims {
  int64_t nb, batch, L, S, E, Ev;
};

Dims dims_of(const Tensor& q, const Tensor& v) {
  Dims d;
  d.nb = q.dim() - 2;
  d.batch = 1;
  for (int64_t i = 0; i < d.nb; ++i) d.batch *= q.sizes()[i];
  d.L = q.sizes()[d.nb];
  d.E = q.sizes()[d.nb + 1];
  d.S = v.sizes()[d.nb];
  d.Ev = v.sizes()[d.nb + 1];
  return d;
}

// An operand as the kernels read it: row r of batch b at base + off[b] +
// r * rs (its elements contiguous). Rows may be further apart than their
// length: q, k and v sliced out of one fused projection are read in place.
template <typename T>
struct Rows {
  const T* base;
  std::vector<int64_t> off;
  int64_t rs;
  Rows(const Tensor& t, int64_t nb)
      : base(t.data<T>()), off(batch_offsets(t, nb)), rs(t.strides()[nb]) {}
  const T* at(int64_t b, int64_t r) const { return base + off[b] + r * rs; }
};

// Threads for `work` multiply-adds: about one per million (a few
// microseconds), so that small attention stays on the calling thread.
int threads_for_flops(int64_t work, int64_t tasks) {
  return tasks > 1 ? threads_for(work, int64_t(1) << 20) : 1;
}

template <typename T>
void forward_typed(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                   const Tensor& v, const Tensor& mask, bool causal, T scale) {
  const Dims d = dims_of(q, v);
  const Rows<T> qr(q, d.nb), kr(k, d.nb), vr(v, d.nb);
  const MaskView<T> mv(mask, d.nb);
  T* op = out.data<T>();
  T* lp = lse.data<T>();
  const int64_t nqb = (d.L + kBQ - 1) / kBQ, tasks = d.batch * nqb;
  const int nt = threads_for_flops(d.batch * d.L * d.S * (d.E + d.Ev), tasks);
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    std::vector<T> s(kBQ * kBK), acc(kBQ * d.Ev), mrow(kBQ), lrow(kBQ);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t b = t / nqb, i0 = (t % nqb) * kBQ, bq = std::min(kBQ, d.L - i0);
      const T* Q = qr.at(b, i0);
      std::fill(acc.begin(), acc.end(), T(0));
      std::fill(mrow.begin(), mrow.end(), static_cast<T>(-kInf));
      std::fill(lrow.begin(), lrow.end(), T(0));
      const int64_t jend = key_end(causal, d.S, i0, bq);
      for (int64_t j0 = 0; j0 < jend; j0 += kBK) {
        const int64_t bk = std::min(kBK, jend - j0);
        gemm_serial<T>(bq, bk, d.E, scale, Q, qr.rs, 1, kr.at(b, j0), 1, kr.rs, T(0), s.data(),
                       kBK);
        mask_block<T>(s.data(), bq, bk, i0, j0, causal, mv, b);
        for (int64_t r = 0; r < bq; ++r) {
          T* sr = s.data() + r * kBK;
          T mx = static_cast<T>(-kInf);
#pragma omp simd reduction(max : mx)
          for (int64_t c = 0; c < bk; ++c) mx = sr[c] > mx ? sr[c] : mx;
          const T mnew = std::max(mrow[r], mx);
          if (mnew == static_cast<T>(-kInf)) {
            // Nothing seen unmasked yet: the row contributes nothing.
            std::fill(sr, sr + bk, T(0));
            continue;
          }
          T sum = 0;
#pragma omp simd reduction(+ : sum)
          for (int64_t c = 0; c < bk; ++c) {
            const T e = vexp(sr[c] - mnew);
            sr[c] = e;
            sum += e;
          }
          const T corr = vexp(mrow[r] - mnew);  // 0 on the first unmasked block
          lrow[r] = lrow[r] * corr + sum;
          mrow[r] = mnew;
          if (corr != T(1)) {
            T* ar = acc.data() + r * d.Ev;
#pragma omp simd
            for (int64_t e = 0; e < d.Ev; ++e) ar[e] *= corr;
          }
        }
        gemm_serial<T>(bq, d.Ev, bk, T(1), s.data(), kBK, 1, vr.at(b, j0), vr.rs, 1, T(1),
                       acc.data(), d.Ev);
      }
      for (int64_t r = 0; r < bq; ++r) {
        const int64_t row = b * d.L + i0 + r;
        T* orow = op + row * d.Ev;
        const T* ar = acc.data() + r * d.Ev;
        if (lrow[r] > T(0)) {
          const T inv = T(1) / lrow[r];
#pragma omp simd
          for (int64_t e = 0; e < d.Ev; ++e) orow[e] = ar[e] * inv;
          lp[row] = mrow[r] + std::log(lrow[r]);
        } else {
          std::fill(orow, orow + d.Ev, T(0));
          lp[row] = static_cast<T>(-kInf);
        }
      }
    }
  }
}

// The backward of one block of query rows [i0, i0 + bq) of batch b: writes
// its rows of dq (and of dmask), adds into dK/dV (that batch's [S, E] and
// [S, Ev], wherever the caller keeps them).
template <typename T>
struct BackwardBlocks {
  Dims d;
  Rows<T> q, k, v, g, o, lse;  // g: dout; lse read through its row stride
  MaskView<T> mv;
  T *dqp, *dmp;
  bool causal;
  T scale;

  // p, ds: kBQ x kBK scratch; D: kBQ.
  void run(int64_t b, int64_t i0, T* dK, T* dV, T* p, T* ds, T* D) const {
    const int64_t bq = std::min(kBQ, d.L - i0);
    const T* Q = q.at(b, i0);
    const T* G = g.at(b, i0);
    const T* O = o.at(b, i0);
    const T* LS = lse.at(b, i0);
    T* dQ = dqp + (b * d.L + i0) * d.E;
    T* dM = dmp ? dmp + b * d.L * d.S : nullptr;
    std::fill(dQ, dQ + bq * d.E, T(0));
    for (int64_t r = 0; r < bq; ++r) {
      const T *gr = G + r * g.rs, *orow = O + r * o.rs;
      T acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int64_t e = 0; e < d.Ev; ++e) acc += gr[e] * orow[e];
      D[r] = acc;
    }
    const int64_t jend = key_end(causal, d.S, i0, bq);
    for (int64_t j0 = 0; j0 < jend; j0 += kBK) {
      const int64_t bk = std::min(kBK, jend - j0);
      const T *K = k.at(b, j0), *V = v.at(b, j0);
      gemm_serial<T>(bq, bk, d.E, scale, Q, q.rs, 1, K, 1, k.rs, T(0), p, kBK);
      mask_block<T>(p, bq, bk, i0, j0, causal, mv, b);
      for (int64_t r = 0; r < bq; ++r) {
        T* pr = p + r * kBK;
        const T l = LS[r * lse.rs];
        if (l == static_cast<T>(-kInf)) {
          std::fill(pr, pr + bk, T(0));
          continue;
        }
#pragma omp simd
        for (int64_t c = 0; c < bk; ++c) pr[c] = vexp(pr[c] - l);
      }
      // dV += P^T dO;  dP = dO V^T
      gemm_serial<T>(bk, d.Ev, bq, T(1), p, 1, kBK, G, g.rs, 1, T(1), dV + j0 * d.Ev, d.Ev);
      gemm_serial<T>(bq, bk, d.Ev, T(1), G, g.rs, 1, V, 1, v.rs, T(0), ds, kBK);
      for (int64_t r = 0; r < bq; ++r) {
        const T* pr = p + r * kBK;
        T* sr = ds + r * kBK;
        const T Dr = D[r];
#pragma omp simd
        for (int64_t c = 0; c < bk; ++c) sr[c] = pr[c] * (sr[c] - Dr);
        if (dM) std::copy(sr, sr + bk, dM + (i0 + r) * d.S + j0);
      }
      // dQ += dS K * scale;  dK += dS^T Q * scale
      gemm_serial<T>(bq, d.E, bk, scale, ds, kBK, 1, K, k.rs, 1, T(1), dQ, d.E);
      gemm_serial<T>(bk, d.E, bq, scale, ds, 1, kBK, Q, q.rs, 1, T(1), dK + j0 * d.E, d.E);
    }
  }
};

// Two ways to split the work without races on dk/dv, which every query
// block of a batch adds into: with enough batch indices, one task per batch
// index (it owns that index's dk and dv); otherwise (few heads, long
// sequences) one task per query block, each thread adding into its own
// zeroed copy of dk and dv, summed at the end.
template <typename T>
void backward_typed(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dmask,
                    const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                    const Tensor& mask, const Tensor& out, const Tensor& lse, bool causal,
                    T scale) {
  const Dims d = dims_of(q, v);
  const BackwardBlocks<T> w{d,
                            Rows<T>(q, d.nb),
                            Rows<T>(k, d.nb),
                            Rows<T>(v, d.nb),
                            Rows<T>(dout, d.nb),
                            Rows<T>(out, d.nb),
                            Rows<T>(lse, d.nb),
                            MaskView<T>(mask, d.nb),
                            dq.data<T>(),
                            dmask.defined() ? dmask.data<T>() : nullptr,
                            causal,
                            scale};
  T *dkp = dk.data<T>(), *dvp = dv.data<T>();
  const int64_t nkv = d.S * d.E, nvv = d.S * d.Ev;
  // Causally skipped blocks have no gradient: dmask starts at zero.
  if (w.dmp && causal) std::fill(w.dmp, w.dmp + d.batch * d.L * d.S, T(0));
  const int64_t nqb = (d.L + kBQ - 1) / kBQ;
  const int nt = threads_for_flops(2 * d.batch * d.L * d.S * (d.E + d.Ev), d.batch * nqb);
  if (nt <= 1 || d.batch >= 2 * nt) {
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
      std::vector<T> p(kBQ * kBK), ds(kBQ * kBK), D(kBQ);
#pragma omp for schedule(dynamic, 1)
      for (int64_t b = 0; b < d.batch; ++b) {
        T* dK = dkp + b * nkv;
        T* dV = dvp + b * nvv;
        std::fill(dK, dK + nkv, T(0));
        std::fill(dV, dV + nvv, T(0));
        for (int64_t i0 = 0; i0 < d.L; i0 += kBQ)
          w.run(b, i0, dK, dV, p.data(), ds.data(), D.data());
      }
    }
    return;
  }
  const int64_t nk = d.batch * nkv, nv = d.batch * nvv;
  std::vector<T> part(static_cast<size_t>(nt * (nk + nv)), T(0));
#pragma omp parallel num_threads(nt)
  {
    std::vector<T> p(kBQ * kBK), ds(kBQ * kBK), D(kBQ);
    T* mine = part.data() + omp_get_thread_num() * (nk + nv);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < d.batch * nqb; ++t) {
      const int64_t b = t / nqb;
      w.run(b, (t % nqb) * kBQ, mine + b * nkv, mine + nk + b * nvv, p.data(), ds.data(),
            D.data());
    }
    // (the implicit barrier above: every copy is complete)
#pragma omp for
    for (int64_t i = 0; i < nk + nv; ++i) {
      T acc = 0;
      for (int th = 0; th < nt; ++th) acc += part[th * (nk + nv) + i];
      (i < nk ? dkp[i] : dvp[i - nk]) = acc;
    }
  }
}

}  // namespace

void attention_forward_into(const Tensor& out, const Tensor& lse, const Tensor& q,
                            const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                            double scale) {
  if (out.numel() == 0) return;
  if (q.dtype() == ScalarType::Float64) {
    forward_typed<double>(out, lse, q, k, v, mask, causal, scale);
  } else {
    forward_typed<float>(out, lse, q, k, v, mask, causal, static_cast<float>(scale));
  }
}

void attention_backward_into(const Tensor& dq, const Tensor& dk, const Tensor& dv,
                             const Tensor& dmask, const Tensor& dout, const Tensor& q,
                             const Tensor& k, const Tensor& v, const Tensor& mask,
                             const Tensor& out, const Tensor& lse, bool causal, double scale) {
  if (q.dtype() == ScalarType::Float64) {
    backward_typed<double>(dq, dk, dv, dmask, dout, q, k, v, mask, out, lse, causal, scale);
  } else {
    backward_typed<float>(dq, dk, dv, dmask, dout, q, k, v, mask, out, lse, causal,
                          static_cast<float>(scale));
  }
}

}  // namespace ignis::cpu

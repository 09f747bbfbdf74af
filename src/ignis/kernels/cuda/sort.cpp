#include "ignis/kernels/cuda/sort.h"

#include <algorithm>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cpu/fill.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis::cuda {

namespace {

// Note [A bitonic sort on (value, position)]
// Every slice is padded to N, a power of two, and sorted by a bitonic
// network whose comparator is cpu::sort_out's order made total: NaN above
// every number, then the value (descending or not), then the position, with
// the padding after everything. A total order has one sorted permutation,
// so the network (which is not stable by itself) returns exactly the CPU's
// stable sort, and topk is its first k. A block sorts a chunk of up to
// kChunk elements in shared memory (every stage of the network inside the
// chunk); a longer slice then runs the remaining stages, each stride of
// kChunk or more as one pass over global memory and the strides below it
// as one shared-memory pass per chunk (ig_sort_merge): for a slice of 2^16,
// 10 global passes and 4 merges after the chunks.
constexpr int kChunk = 4096;      // elements of the large kernels' shared arrays
constexpr int kSmallChunk = 256;  // and of the small ones (slices of 256 or fewer)

const char* kTemplates = R"CUDA(
// ---- sort (kernels/cuda/sort.cpp, Note [A bitonic sort on (value, position)]) ----
// IG_NEEDS_BLOCK_THREADS: the host emulation runs this unit with real threads.
template <class K>
__device__ __forceinline__ bool ig_sort_before(K ka, int32_t ia, K kb, int32_t ib, int32_t n,
                                               bool desc) {
  const bool pa = ia >= n, pb = ib >= n;  // padding, after everything
  if (pa || pb) return pa == pb ? ia < ib : pb;
  const bool na = ka != ka, nb = kb != kb;  // NaN above every number
  if (na || nb) return na && nb ? ia < ib : (desc ? na : nb);
  if (ka != kb) return desc ? kb < ka : ka < kb;
  return ia < ib;
}
// Stage s of the network over the c elements of (sk, si), strides jmax .. 1;
// element t of the chunk is element base + t of its slice.
template <class K>
__device__ __forceinline__ void ig_bitonic_strides(K* sk, int32_t* si, int c, int64_t base,
                                                   int64_t s, int jmax, int32_t n, bool desc) {
  for (int j = jmax; j > 0; j >>= 1) {
    for (int t = threadIdx.x; t < c / 2; t += blockDim.x) {
      const int lo = (t / j) * 2 * j + t % j, hi = lo + j;
      const bool up = ((base + lo) & s) == 0;
      const K klo = sk[lo], khi = sk[hi];
      const int32_t ilo = si[lo], ihi = si[hi];
      if (ig_sort_before(khi, ihi, klo, ilo, n, desc) == up) {
        sk[lo] = khi;
        sk[hi] = klo;
        si[lo] = ihi;
        si[hi] = ilo;
      }
    }
    __syncthreads();
  }
}
// The elements of the chunk at base that land among the first k: read
// from the input by position, so the values keep their bits.
template <class T>
__device__ __forceinline__ void ig_sort_emit(const T* in, T* vals, int64_t* idx,
                                             const int32_t* si, int c, int64_t base,
                                             int64_t line, int32_t n, int64_t k) {
  for (int t = threadIdx.x; t < c && base + t < k; t += blockDim.x) {
    const int32_t p = si[t];
    vals[line * k + base + t] = in[line * n + p];
    idx[line * k + base + t] = p;
  }
}
// Every stage up to the chunk's size, per chunk; the result goes to the
// outputs when a chunk is the whole (padded) slice, else to the scratch.
template <class T, class K, int C>
__device__ __forceinline__ void ig_sort_chunks(const T* in, T* vals, int64_t* idx, K* keys,
                                               int32_t* pos, int64_t lines, int32_t n,
                                               int64_t N, int64_t k, int32_t desc) {
  __shared__ K sk[C];
  __shared__ int32_t si[C];
  const int c = int(N < C ? N : C);
  const int64_t per_line = N / c, chunks = lines * per_line;
  for (int64_t q = blockIdx.x; q < chunks; q += gridDim.x) {
    const int64_t line = q / per_line, base = (q % per_line) * c;
    for (int t = threadIdx.x; t < c; t += blockDim.x) {
      const int64_t p = base + t;
      si[t] = int32_t(p);
      sk[t] = p < n ? ig_convert<K>(in[line * n + p]) : K();
    }
    __syncthreads();
    for (int64_t s = 2; s <= c; s <<= 1) ig_bitonic_strides(sk, si, c, base, s, int(s / 2), n, desc != 0);
    if (c == N) {
      ig_sort_emit(in, vals, idx, si, c, 0, line, n, k);
    } else {
      for (int t = threadIdx.x; t < c; t += blockDim.x) {
        keys[line * N + base + t] = sk[t];
        pos[line * N + base + t] = si[t];
      }
    }
    __syncthreads();
  }
}
// Stage s, stride j (j >= the chunk size) in global memory: a thread a pair.
template <class K>
__device__ __forceinline__ void ig_sort_step(K* keys, int32_t* pos, int64_t lines, int32_t n,
                                             int64_t N, int64_t s, int64_t j, int32_t desc) {
  const int64_t half = N / 2;
  IG_GRID_STRIDE_LOOP(q, lines * half) {
    const int64_t line = q / half, t = q % half;
    const int64_t lo = (t / j) * 2 * j + t % j, hi = lo + j;
    const bool up = (lo & s) == 0;
    K* kl = keys + line * N;
    int32_t* pl = pos + line * N;
    const K klo = kl[lo], khi = kl[hi];
    const int32_t ilo = pl[lo], ihi = pl[hi];
    if (ig_sort_before(khi, ihi, klo, ilo, n, desc != 0) == up) {
      kl[lo] = khi;
      kl[hi] = klo;
      pl[lo] = ihi;
      pl[hi] = ilo;
    }
  }
}
// Stage s's strides below the chunk size, per chunk in shared memory; the
// last stage (s == N) writes the outputs.
template <class T, class K, int C>
__device__ __forceinline__ void ig_sort_merge(const T* in, T* vals, int64_t* idx, K* keys,
                                              int32_t* pos, int64_t lines, int32_t n, int64_t N,
                                              int64_t k, int64_t s, int32_t desc) {
  __shared__ K sk[C];
  __shared__ int32_t si[C];
  const int64_t per_line = N / C, chunks = lines * per_line;
  for (int64_t q = blockIdx.x; q < chunks; q += gridDim.x) {
    const int64_t line = q / per_line, base = (q % per_line) * C;
    for (int t = threadIdx.x; t < C; t += blockDim.x) {
      sk[t] = keys[line * N + base + t];
      si[t] = pos[line * N + base + t];
    }
    __syncthreads();
    ig_bitonic_strides(sk, si, C, base, s, C / 2, n, desc != 0);
    if (s == N) {
      ig_sort_emit(in, vals, idx, si, C, base, line, n, k);
    } else {
      for (int t = threadIdx.x; t < C; t += blockDim.x) {
        keys[line * N + base + t] = sk[t];
        pos[line * N + base + t] = si[t];
      }
    }
    __syncthreads();
  }
}
)CUDA";

// One translation unit per dtype with the four kernels.
KernelRequest unit_for(ScalarType t) {
  const std::string d = dtype_name(t);
  const std::string T = device_type_name(t), K = device_opmath_name(t);
  const std::string data = str("const ", T, "* in, ", T, "* vals, int64_t* idx, ", K,
                               "* keys, int32_t* pos, int64_t lines, int32_t n, int64_t N, "
                               "int64_t k");
  const std::string data_args = "in, vals, idx, keys, pos, lines, n, N, k";
  std::string body;
  for (auto [name, chunk] : {std::pair<const char*, int>{"sort_chunks_small", kSmallChunk},
                             std::pair<const char*, int>{"sort_chunks", kChunk}})
    body += str("extern \"C\" __global__ void ", name, "_", d, "(", data, ", int32_t desc) { ",
                "ig_sort_chunks<", T, ", ", K, ", ", chunk, ">(", data_args, ", desc); }\n");
  body += str("extern \"C\" __global__ void sort_step_", d, "(", K,
              "* keys, int32_t* pos, int64_t lines, int32_t n, int64_t N, int64_t s, int64_t j, "
              "int32_t desc) { ig_sort_step(keys, pos, lines, n, N, s, j, desc); }\n");
  body += str("extern \"C\" __global__ void sort_merge_", d, "(", data,
              ", int64_t s, int32_t desc) { ig_sort_merge<", T, ", ", K, ", ", kChunk, ">(",
              data_args, ", s, desc); }\n");
  KernelRequest r;
  r.symbol = str("sort_chunks_", d);
  r.label = str("sort_", d, ".cu");
  r.source = str(eager_prelude(), kTemplates, kKernelBodyMarker, body);
  r.options = {"-default-device", "-w"};
  return r;
}

CUfunction function_for(int device, ScalarType t, const char* kernel) {
  const std::string symbol = str(kernel, "_", dtype_name(t));
  return get_named_kernel(device, symbol, [&] {
    KernelRequest r = unit_for(t);
    r.symbol = symbol;
    return r;
  });
}

// t with `dim` moved last (a 0-dim tensor as one element).
Tensor dim_last(const Tensor& t, int64_t dim) {
  if (t.dim() == 0) return make_view(t, {1}, {1}, t.storage_offset());
  DimVector sizes, strides;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d == dim) continue;
    sizes.push_back(t.sizes()[d]);
    strides.push_back(t.strides()[d]);
  }
  sizes.push_back(t.sizes()[dim]);
  strides.push_back(t.strides()[dim]);
  return make_view(t, sizes, strides, t.storage_offset());
}

// t itself when contiguous, else a contiguous tensor of its shape
// (holding t's values when `fill`).
Tensor contiguous_like(const Tensor& t, bool fill) {
  if (t.is_contiguous()) return t;
  Tensor c = empty_tensor(t.sizes(), t.dtype(), t.device());
  if (fill) copy_tensor(c, t);
  return c;
}

int block_threads(int64_t chunk) {
  return static_cast<int>(std::clamp<int64_t>(chunk / 2, 1, 1024));
}

}  // namespace

std::vector<KernelRequest> sort_kernel_requests(ScalarType t) { return {unit_for(t)}; }

void sort_out(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
              int64_t k, bool descending) {
  if (values.numel() == 0) return;
  const int64_t len = in.dim() == 0 ? 1 : in.sizes()[dim];
  IGNIS_CHECK(len < (int64_t(1) << 31), "sort on CUDA: slices of at most 2^31 - 1 elements, got ",
              len);
  const Tensor src = contiguous_like(dim_last(in, dim), true);
  const Tensor v_view = dim_last(values, dim), i_view = dim_last(indices, dim);
  const Tensor v = contiguous_like(v_view, false), ix = contiguous_like(i_view, false);
  const ScalarType t = in.dtype();
  int64_t lines = src.numel() / len;
  auto n = static_cast<int32_t>(len);
  int64_t N = 2;
  while (N < len) N <<= 1;
  int32_t desc = descending ? 1 : 0;
  const int device = in.device().index;
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  const void* in_p = src.data_ptr();
  void* vals = v.data_ptr();
  void* idx = ix.data_ptr();
  void* keys = nullptr;
  void* pos = nullptr;
  Tensor key_buf, pos_buf;  // the scratch of slices longer than a chunk
  const bool small = N <= kSmallChunk;
  const int64_t c = small ? N : std::min<int64_t>(N, kChunk);
  if (N > c) {
    key_buf = empty_tensor({lines * N}, cpu::opmath_type(t), in.device());  // the CPU's keys
    pos_buf = empty_tensor({lines * N}, ScalarType::Int32, in.device());
    keys = key_buf.data_ptr();
    pos = pos_buf.data_ptr();
  }
  {
    void* args[] = {&in_p, &vals, &idx, &keys, &pos, &lines, &n, &N, &k, &desc};
    launch_strided(function_for(device, t, small ? "sort_chunks_small" : "sort_chunks"),
                   lines * (N / c), block_threads(c), args, stream);
  }
  for (int64_t s = 2 * c; s <= N; s <<= 1) {
    for (int64_t j = s / 2; j >= c; j >>= 1) {
      void* args[] = {&keys, &pos, &lines, &n, &N, &s, &j, &desc};
      launch_grid_stride(function_for(device, t, "sort_step"), lines * (N / 2), args, stream);
    }
    void* args[] = {&in_p, &vals, &idx, &keys, &pos, &lines, &n, &N, &k, &s, &desc};
    launch_strided(function_for(device, t, "sort_merge"), lines * (N / c), block_threads(c), args,
                   stream);
  }
  if (!v.is_same(v_view)) copy_tensor(v_view, v);
  if (!ix.is_same(i_view)) copy_tensor(i_view, ix);
}

}  // namespace ignis::cuda

#include "ignis/kernels/cuda/source.h"


#include "ignis/core/error.h"

namespace ignis::cuda {

namespace {

// Note [CUDA kernels compute the CPU's bits]
// float16 and bfloat16 conversions are written here bit for bit as
// core/half.h writes them (round to nearest even, NaN kept quiet), rather
// than taken from cuda_fp16.h, so that a value converted on the GPU equals
// the same value converted on the CPU, and NVRTC needs no toolkit headers.
const char* kPrelude = R"CUDA(
#ifndef __CUDACC_RTC__
#include <cstdint>  // nvcc (the ahead-of-time measurement in docs/cuda.md)
#else
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#endif

struct ig_half { uint16_t x; };
struct ig_bf16 { uint16_t x; };

// Float to the 16-bit floats: one cvt instruction where the GPU has it
// (half: every GPU this runs on; bfloat16: compute capability 8.0 on), bit
// arithmetic elsewhere -- the host build of these kernels for the fake
// driver, and bfloat16 before 8.0. The bit arithmetic took five of the
// twenty-odd instructions an element of GPT-2's bfloat16 GELU runs (the
// cvt: 22.4 -> 18.5 us a launch, docs/benchmarks.md run 16). Both round to
// nearest even; a NaN keeps its sign and payload bits as on the CPU (the
// cvt would give the canonical NaN, and a sort that moves half values
// through float would no longer return the CPU's bits). The 16-bit floats
// to float stay bit arithmetic: bfloat16's is a shift.
#if defined(__CUDA_ARCH__)
#define IG_CVT_HALF 1
#if __CUDA_ARCH__ >= 800
#define IG_CVT_BF16 1
#endif
#endif
__device__ __forceinline__ float ig_to_float(ig_half h) {
  uint32_t sign = uint32_t(h.x & 0x8000) << 16;
  uint32_t exp = (h.x >> 10) & 0x1f;
  uint32_t man = h.x & 0x3ff;
  if (exp == 0) {
    if (man == 0) return __uint_as_float(sign);
    float v = float(man) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return __uint_as_float(sign | 0x7f800000u | (man << 13));
  return __uint_as_float(sign | ((exp + 112) << 23) | (man << 13));
}
__device__ __forceinline__ float ig_to_float(ig_bf16 b) { return __uint_as_float(uint32_t(b.x) << 16); }
__device__ __forceinline__ ig_half ig_half_from(float f) {
  ig_half r;
#ifdef IG_CVT_HALF
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.x) : "f"(f));
  if (f != f) r.x = uint16_t(((__float_as_uint(f) >> 16) & 0x8000) | 0x7e00);
#else
  uint32_t u = __float_as_uint(f);
  uint32_t sign = (u >> 16) & 0x8000;
  uint32_t absu = u & 0x7fffffffu;
  if (absu >= 0x7f800000u) { r.x = uint16_t(sign | 0x7c00 | (absu > 0x7f800000u ? 0x200 : 0)); return r; }
  if (absu >= 0x477ff000u) { r.x = uint16_t(sign | 0x7c00); return r; }
  if (absu < 0x38800000u) {
    float a = __uint_as_float(absu) + 0.5f;
    r.x = uint16_t(sign | (__float_as_uint(a) - 0x3f000000u));
    return r;
  }
  uint32_t mant_odd = (absu >> 13) & 1;
  absu += 0xc8000fffu + mant_odd;
  r.x = uint16_t(sign | (absu >> 13));
#endif
  return r;
}
__device__ __forceinline__ ig_bf16 ig_bf16_from(float f) {
  ig_bf16 r;
  uint32_t u = __float_as_uint(f);
#ifdef IG_CVT_BF16
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.x) : "f"(f));
  if (f != f) r.x = uint16_t((u >> 16) | 0x40);
#else
  if ((u & 0x7fffffffu) > 0x7f800000u) { r.x = uint16_t((u >> 16) | 0x40); return r; }
  r.x = uint16_t((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
#endif
  return r;
}

// Value conversions with C++'s rules, through float for the 16-bit floats,
// and != 0 for bool.
template <class T> struct ig_widen {
  static __device__ T get(T v) { return v; }
};
template <> struct ig_widen<ig_half> {
  static __device__ float get(ig_half v) { return ig_to_float(v); }
};
template <> struct ig_widen<ig_bf16> {
  static __device__ float get(ig_bf16 v) { return ig_to_float(v); }
};
template <class D> struct ig_narrow {
  template <class S> static __device__ D get(S v) { return static_cast<D>(v); }
};
template <> struct ig_narrow<bool> {
  template <class S> static __device__ bool get(S v) { return v != S(0); }
};
template <> struct ig_narrow<ig_half> {
  template <class S> static __device__ ig_half get(S v) { return ig_half_from(static_cast<float>(v)); }
};
template <> struct ig_narrow<ig_bf16> {
  template <class S> static __device__ ig_bf16 get(S v) { return ig_bf16_from(static_cast<float>(v)); }
};
template <class D, class S> __device__ __forceinline__ D ig_convert(S v) {
  return ig_narrow<D>::get(ig_widen<S>::get(v));
}

#define IG_MAX_DIMS 16
struct Geometry {
  int64_t sizes[IG_MAX_DIMS];
  int64_t dst_strides[IG_MAX_DIMS];
  int64_t src_strides[IG_MAX_DIMS];
  int32_t ndim;
};

// What a kernel found wrong in its data, for the host to raise at its next
// synchronization (cuda/kernel_errors.h, Note [Index errors on the GPU]):
// must match cuda::KernelErrorRecord, in pinned host memory mapped for the
// device. The fields, then `ready`; threads racing to record write the
// same words but their own value.
struct IgKernelError {
  volatile int32_t ready;
  int32_t kind;
  int64_t value, bound, dim;
};
__device__ __forceinline__ void ig_record_error(IgKernelError* e, int32_t kind, int64_t value,
                                                int64_t bound, int64_t dim) {
  if (!e || e->ready) return;
  e->kind = kind;
  e->value = value;
  e->bound = bound;
  e->dim = dim;
  __threadfence_system();
  e->ready = 1;
}

#define IG_GRID_STRIDE_LOOP(i, n)                                          \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

// The dst and src offsets of element i of g's shape (row-major).
__device__ __forceinline__ void ig_offsets(int64_t i, const Geometry& g, int64_t& od, int64_t& os) {
  int64_t rem = i;
  od = 0;
  os = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    int64_t k = rem % g.sizes[d];
    rem /= g.sizes[d];
    od += k * g.dst_strides[d];
    os += k * g.src_strides[d];
  }
}

// dst (any strides) = src (any strides, broadcast by zero strides), converted.
template <class D, class S>
__device__ void copy_strided(D* dst, const S* src, int64_t n, Geometry g) {
  IG_GRID_STRIDE_LOOP(i, n) {
    int64_t od, os;
    ig_offsets(i, g, od, os);
    dst[od] = ig_convert<D>(src[os]);
  }
}

// Contiguous dst and src of the same shape, converted.
template <class D, class S>
__device__ void copy_contiguous(D* dst, const S* src, int64_t n) {
  IG_GRID_STRIDE_LOOP(i, n) dst[i] = ig_convert<D>(src[i]);
}

// Every element of dst (any strides) = value (passed as its bytes).
template <class D>
__device__ void fill_strided(D* dst, uint64_t bits, int64_t n, Geometry g) {

  D v = *reinterpret_cast<const D*>(&bits);
  IG_GRID_STRIDE_LOOP(i, n) {
    int64_t rem = i, od = 0;
    for (int d = g.ndim - 1; d >= 0; --d) {
      od += (rem % g.sizes[d]) * g.dst_strides[d];
      rem /= g.sizes[d];
    }
    dst[od] = v;
  }
}

template <class D>
__device__ void fill_contiguous(D* dst, uint64_t bits, int64_t n) {

  D v = *reinterpret_cast<const D*>(&bits);
  IG_GRID_STRIDE_LOOP(i, n) dst[i] = v;
}

// Scans (cumsum, cumprod): a thread per line, in the CPU's order and with
// its accumulators (kernels/cpu/reduce.cpp, scan_acc_t: float in double,
// 16-bit floats in float, integers in int64), so that both devices give the
// same bits. The geometry walks the lines (the shape without the scanned
// dim); step and len walk one line. src is converted to dst's dtype first.
template <class T> struct ig_scan_acc { typedef int64_t type; };
template <> struct ig_scan_acc<float> { typedef double type; };
template <> struct ig_scan_acc<double> { typedef double type; };
template <> struct ig_scan_acc<ig_half> { typedef float type; };
template <> struct ig_scan_acc<ig_bf16> { typedef float type; };
template <class D, class S, bool Prod>
__device__ void scan_lines(D* dst, const S* src, int64_t lines, int64_t len, int64_t dst_step,
                           int64_t src_step, Geometry g) {
  typedef typename ig_scan_acc<D>::type A;
  IG_GRID_STRIDE_LOOP(i, lines) {
    int64_t od, os;
    ig_offsets(i, g, od, os);
    A acc = Prod ? A(1) : A(0);
    for (int64_t j = 0; j < len; ++j) {
      A v = static_cast<A>(ig_widen<D>::get(ig_convert<D>(src[os + j * src_step])));
      acc = Prod ? acc * v : acc + v;
      dst[od + j * dst_step] = ig_narrow<D>::get(acc);
    }
  }
}
template <class D, class S>
__device__ void cumsum_lines(D* dst, const S* src, int64_t lines, int64_t len, int64_t dst_step,
                             int64_t src_step, Geometry g) {
  scan_lines<D, S, false>(dst, src, lines, len, dst_step, src_step, g);
}
template <class D, class S>
__device__ void cumprod_lines(D* dst, const S* src, int64_t lines, int64_t len, int64_t dst_step,
                              int64_t src_step, Geometry g) {
  scan_lines<D, S, true>(dst, src, lines, len, dst_step, src_step, g);
}
)CUDA";

// The parameter list each kernel template takes (its extern "C" wrapper
// forwards them).
struct KernelShape {
  const char* name;
  const char* params;  // with types; T0, T1 stand for the dtypes
  const char* args;
};
const KernelShape kShapes[] = {
    {"copy_strided", "T0* dst, const T1* src, int64_t n, Geometry g", "dst, src, n, g"},
    {"copy_contiguous", "T0* dst, const T1* src, int64_t n", "dst, src, n"},
    {"fill_strided", "T0* dst, uint64_t bits, int64_t n, Geometry g", "dst, bits, n, g"},
    {"fill_contiguous", "T0* dst, uint64_t bits, int64_t n", "dst, bits, n"},
    {"cumsum_lines", "T0* dst, const T1* src, int64_t lines, int64_t len, int64_t dst_step, "
                     "int64_t src_step, Geometry g", "dst, src, lines, len, dst_step, src_step, g"},
    {"cumprod_lines", "T0* dst, const T1* src, int64_t lines, int64_t len, int64_t dst_step, "
                      "int64_t src_step, Geometry g", "dst, src, lines, len, dst_step, src_step, g"},
};

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
}

}  // namespace

const char* device_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::UInt8: return "uint8_t";
    case ScalarType::Int8: return "int8_t";
    case ScalarType::Int16: return "int16_t";
    case ScalarType::Int32: return "int32_t";
    case ScalarType::Int64: return "int64_t";
    case ScalarType::Float16: return "ig_half";
    case ScalarType::BFloat16: return "ig_bf16";
    case ScalarType::Float32: return "float";
    case ScalarType::Float64: return "double";
    default: break;
  }
  IGNIS_FAIL("no CUDA kernel type for dtype ", to_string(t));
}

const char* device_opmath_name(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 ? "float" : device_type_name(t);
}

const char* eager_prelude() { return kPrelude; }

KernelRequest family_kernel(const char* templates, const char* kernel, ScalarType t,
                            const char* params, int launch_bounds) {
  const std::string sym = str(kernel, "_", dtype_name(t));
  KernelRequest r;
  r.label = sym + ".cu";
  r.symbol = sym;
  const std::string bounds =
      launch_bounds > 0 ? str("__launch_bounds__(", launch_bounds, ") ") : std::string();
  r.source = str(kPrelude, templates, kKernelBodyMarker, "extern \"C\" __global__ void ", bounds,
                 sym, "(", params, " p) { ig_", kernel, "<", device_type_name(t), ">(p); }\n");
  r.options = {"-default-device", "-w"};
  return r;
}

void require_float_or_double(ScalarType t, const char* op) {
  if (t != ScalarType::Float32 && t != ScalarType::Float64)
    IGNIS_FAIL_KIND(NotImplemented, "\"", op, "\" not implemented for '", scalar_type_name(t),
                    "'");
}

KernelRequest eager_kernel(const std::string& kernel, std::initializer_list<ScalarType> types) {
  const KernelShape* shape = nullptr;
  for (const KernelShape& s : kShapes)
    if (kernel == s.name) shape = &s;
  IGNIS_INTERNAL_ASSERT(shape, "unknown eager CUDA kernel ", kernel);
  std::string symbol = kernel, targs;
  std::string params = shape->params;
  int i = 0;
  for (ScalarType t : types) {
    symbol += str("_", dtype_name(t));
    targs += str(i ? ", " : "", device_type_name(t));
    replace_all(params, str("T", i), device_type_name(t));
    ++i;
  }
  KernelRequest r;
  r.symbol = symbol;
  r.label = symbol + ".cu";
  r.source = str(kPrelude, "\nextern \"C\" __global__ void ", symbol, "(", params, ") {\n  ",
                 kernel, "<", targs, ">(", shape->args, ");\n}\n");
  return r;
}

CUfunction eager_function(int device, const char* kernel, std::initializer_list<ScalarType> types) {
  std::string name = kernel;
  for (ScalarType t : types) name += str("_", dtype_name(t));
  return get_named_kernel(device, name, [&] { return eager_kernel(kernel, types); });
}

}  // namespace ignis::cuda

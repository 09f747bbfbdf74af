#include "ignis/kernels/cuda/pointwise.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/kernel_cache.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/kernels/cuda/device_scalar_ops.h"
#include "ignis/kernels/cuda/source.h"

namespace ignis::cuda {

namespace {

constexpr int kMaxOperands = 4;  // the output and up to three inputs
constexpr int kMaxScalars = 8;   // the function's Scalars, then CPU-scalar inputs

// Must match IgGeom / IgPtrs / IgScalars in kTemplates.
template <typename I, typename S>
struct Geom {
  I sizes[kMaxKernelDims];
  S strides[kMaxKernelDims][kMaxOperands];
  int32_t ndim;
};
struct Ptrs {
  void* p[kMaxOperands];
};
struct Scalars {
  uint64_t bits[kMaxScalars];
};

const char* kTemplates = R"CUDA(
// ---- pointwise kernels (kernels/cuda/pointwise.cpp) ----
#define IG_MAX_OPERANDS 4
struct IgPtrs { char* p[IG_MAX_OPERANDS]; };
template <class I, class S> struct IgGeom {
  I sizes[IG_MAX_DIMS];
  S strides[IG_MAX_DIMS][IG_MAX_OPERANDS];
  int32_t ndim;
};
struct IgScalars { uint64_t bits[8]; };
template <class T, int V> struct alignas(sizeof(T) * V) IgVec { T v[V]; };

template <class C> __forceinline__ C ig_scalar(const IgScalars& s, int k) {
  return *reinterpret_cast<const C*>(&s.bits[k]);
}
// An input of dtype In, as the CPU's cast to the common dtype and then its
// widening to op-math give it.
template <class C, class Common, class In> __forceinline__ C ig_load(In v) {
  if constexpr (std::is_same_v<Common, In>) return ig_convert<C>(v);
  else return ig_convert<C>(ig_convert<Common>(v));
}
// Byte offsets of linear index i (dim 0 fastest, as TensorIterator orders).
template <class I, class S, int NT>
__forceinline__ void ig_offsets(const IgGeom<I, S>& g, I i, S (&off)[NT]) {
#pragma unroll
  for (int t = 0; t < NT; ++t) off[t] = 0;
  for (int d = 0; d < IG_MAX_DIMS; ++d) {
    if (d == g.ndim) break;
    const I q = i / g.sizes[d];
    const S k = S(i - q * g.sizes[d]);
    i = q;
#pragma unroll
    for (int t = 0; t < NT; ++t) off[t] += k * g.strides[d][t];
  }
}
)CUDA";

const char* layout_name(PointwiseLayout l) {
  switch (l) {
    case PointwiseLayout::Vectorized: return "vec";
    case PointwiseLayout::VectorRows: return "vrows";
    case PointwiseLayout::Strided32: return "s32";
    case PointwiseLayout::Strided64: return "s64";
  }
  return "?";
}

std::string symbol_of(const PointwiseKernel& k) {
  std::string s = str("pw_", k.fn, "_", dtype_name(k.compute), "_", dtype_name(k.out));
  for (ScalarType t : k.inputs) s += str("_", t == ScalarType::Undefined ? "s" : dtype_name(t));
  s += str("_n", k.nscalars, "_", layout_name(k.layout));
  if (k.layout == PointwiseLayout::Vectorized || k.layout == PointwiseLayout::VectorRows)
    s += str(k.vec);
  return s;
}

// The bits of `v` in the op-math type of `compute` (kernel arguments are
// reinterpreted, not converted, on the device).
uint64_t opmath_bits(const Scalar& v, ScalarType compute) {
  uint64_t bits = 0;
  IGNIS_DISPATCH_ALL(compute, "pointwise", [&] {
    opmath_t<scalar_t> x = v.to<opmath_t<scalar_t>>();
    std::memcpy(&bits, &x, sizeof(x));
  });
  return bits;
}
// A CPU 0-dim input converted as TensorIterator's cast does: to `compute`
// (rounding to a 16-bit float first), then widened.
uint64_t opmath_bits(const Tensor& cpu_scalar, ScalarType compute) {
  Tensor v = to_dtype_copy(cpu_scalar, compute);
  uint64_t bits = 0;
  IGNIS_DISPATCH_ALL(compute, "pointwise", [&] {
    opmath_t<scalar_t> x = static_cast<opmath_t<scalar_t>>(*v.data<scalar_t>());
    std::memcpy(&bits, &x, sizeof(x));
  });
  return bits;
}

CUfunction function_for(int device, const PointwiseKernel& k) {
  // The symbol names every field the source depends on: looked up by it, the
  // source is generated and hashed once per process.
  return get_named_kernel(device, symbol_of(k), [&] { return pointwise_kernel(k); });
}

std::vector<PointwiseDecl>& decls() {
  static auto* v = new std::vector<PointwiseDecl>();
  return *v;
}

}  // namespace

void check_dtype(uint32_t dtypes, ScalarType t, const char* op) {
  if (t != ScalarType::Undefined && (dtypes & dtype_bit(t))) return;
  IGNIS_FAIL_KIND(NotImplemented, "\"", op, "\" not implemented for '", scalar_type_name(t), "'");
}

void declare_pointwise(PointwiseDecl d) { decls().push_back(std::move(d)); }
const std::vector<PointwiseDecl>& declared_pointwise() { return decls(); }

KernelRequest pointwise_kernel(const PointwiseKernel& k) {
  const int nin = static_cast<int>(k.inputs.size());
  IGNIS_INTERNAL_ASSERT(nin >= 1 && nin < kMaxOperands && k.nscalars + nin <= kMaxScalars);
  const std::string C = device_opmath_name(k.compute);
  const std::string common = device_type_name(k.compute);
  const std::string out = device_type_name(k.out);
  const std::string sym = symbol_of(k);
  auto in_type = [&](int j) { return std::string(device_type_name(k.inputs[j])); };
  auto is_scalar = [&](int j) { return k.inputs[j] == ScalarType::Undefined; };
  // The call of the scalar function on x[0..nin) and the Scalars.
  std::string call = str("ignis::scalar_ops::", scalar_ops_struct(k.fn), "()(");
  for (int j = 0; j < nin; ++j) call += str(j ? ", " : "", "x[", j, "]");
  for (int i = 0; i < k.nscalars; ++i) call += str(", ig_scalar<C>(s, ", i, ")");
  call += ")";
  // x[j] for element `at` of each tensor input (`at(j)` gives the load).
  auto loads = [&](auto at) {
    std::string code = str("      C x[", nin, "];\n");
    for (int j = 0; j < nin; ++j) {
      if (is_scalar(j)) code += str("      x[", j, "] = ig_scalar<C>(s, ", k.nscalars + j, ");\n");
      else code += str("      x[", j, "] = ig_load<C, Common, ", in_type(j), ">(", at(j), ");\n");
    }
    return code;
  };
  std::string body;
  if (k.layout == PointwiseLayout::Vectorized) {
    // Two vectors an iteration, both loaded before either is stored (the
    // output may alias an input, so the compiler could not hoist the second
    // load above the first store itself): more bytes in flight a thread.
    const int V = k.vec;
    body += str("extern \"C\" __global__ void ", sym, "(IgPtrs p, int64_t n, IgScalars s) {\n",
                "  typedef ", C, " C;\n  typedef ", common, " Common;\n",
                "  const int64_t step = int64_t(blockDim.x) * gridDim.x;\n",
                "  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;\n",
                "  const int64_t nv = n / ", V, ";\n",
                "  for (int64_t v0 = tid; v0 < nv; v0 += 2 * step) {\n");
    for (int j = 0; j < nin; ++j)
      if (!is_scalar(j))
        body += str("    IgVec<", in_type(j), ", ", V, "> a", j, "[2];\n");
    body += "#pragma unroll\n    for (int u = 0; u < 2; ++u) {\n"
            "      const int64_t v = v0 + u * step;\n      if (v >= nv) break;\n";
    for (int j = 0; j < nin; ++j)
      if (!is_scalar(j))
        body += str("      a", j, "[u] = reinterpret_cast<const IgVec<", in_type(j), ", ", V,
                    ">*>(p.p[", j + 1, "])[v];\n");
    body += "    }\n#pragma unroll\n    for (int u = 0; u < 2; ++u) {\n"
            "      const int64_t v = v0 + u * step;\n      if (v >= nv) break;\n";
    body += str("      IgVec<", out, ", ", V, "> o;\n#pragma unroll\n      for (int e = 0; e < ", V,
                "; ++e) {\n");
    body += loads([&](int j) { return str("a", j, "[u].v[e]"); });
    body += str("        o.v[e] = ig_convert<", out, ">(", call, ");\n      }\n",
                "      reinterpret_cast<IgVec<", out, ", ", V, ">*>(p.p[0])[v] = o;\n    }\n  }\n",
                "  for (int64_t i = nv * ", V, " + tid; i < n; i += step) {\n");
    body += loads([&](int j) {
      return str("reinterpret_cast<const ", in_type(j), "*>(p.p[", j + 1, "])[i]");
    });
    body += str("      reinterpret_cast<", out, "*>(p.p[0])[i] = ig_convert<", out, ">(", call,
                ");\n  }\n}\n");
  } else if (k.layout == PointwiseLayout::VectorRows) {
    // g's dim 0 counts vectors (its strides: a vector's bytes, or 0 for an
    // operand broadcast along it, which loads one element and repeats it).
    const int V = k.vec;
    body += str("extern \"C\" __global__ void ", sym,
                "(IgPtrs p, IgGeom<uint32_t, int32_t> g, int64_t n, IgScalars s) {\n",
                "  typedef ", C, " C;\n  typedef ", common, " Common;\n",
                "  const uint32_t step = uint32_t(blockDim.x) * gridDim.x;\n",
                "  for (uint32_t i = uint32_t(blockIdx.x) * blockDim.x + threadIdx.x; i < uint32_t(n);"
                " i += step) {\n",
                "    int32_t off[", nin + 1, "];\n    ig_offsets(g, i, off);\n");
    for (int j = 0; j < nin; ++j) {
      if (is_scalar(j)) continue;
      const std::string vt = str("IgVec<", in_type(j), ", ", V, ">");
      body += str("    ", vt, " a", j, ";\n    if (g.strides[0][", j + 1, "] == 0) {\n",
                  "      const ", in_type(j), " one = *reinterpret_cast<const ", in_type(j),
                  "*>(p.p[", j + 1, "] + off[", j + 1, "]);\n",
                  "#pragma unroll\n      for (int e = 0; e < ", V, "; ++e) a", j, ".v[e] = one;\n",
                  "    } else {\n      a", j, " = *reinterpret_cast<const ", vt, "*>(p.p[", j + 1,
                  "] + off[", j + 1, "]);\n    }\n");
    }
    body += str("    IgVec<", out, ", ", V, "> o;\n#pragma unroll\n    for (int e = 0; e < ", V,
                "; ++e) {\n");
    body += loads([&](int j) { return str("a", j, ".v[e]"); });
    body += str("      o.v[e] = ig_convert<", out, ">(", call, ");\n    }\n",
                "    *reinterpret_cast<IgVec<", out, ", ", V, ">*>(p.p[0] + off[0]) = o;\n  }\n}\n");
  } else {
    const bool narrow = k.layout == PointwiseLayout::Strided32;
    const char* I = narrow ? "uint32_t" : "int64_t";
    const char* S = narrow ? "int32_t" : "int64_t";
    body += str("extern \"C\" __global__ void ", sym, "(IgPtrs p, IgGeom<", I, ", ", S,
                "> g, int64_t n, IgScalars s) {\n", "  typedef ", C, " C;\n  typedef ", common,
                " Common;\n", "  const ", I, " step = ", I, "(blockDim.x) * gridDim.x;\n",
                "  for (", I, " i = ", I, "(blockIdx.x) * blockDim.x + threadIdx.x; i < ", I,
                "(n); i += step) {\n", "    ", S, " off[", nin + 1, "];\n",
                "    ig_offsets(g, i, off);\n");
    body += loads([&](int j) {
      return str("*reinterpret_cast<const ", in_type(j), "*>(p.p[", j + 1, "] + off[", j + 1, "])");
    });
    body += str("    *reinterpret_cast<", out, "*>(p.p[0] + off[0]) = ig_convert<", out, ">(", call,
                ");\n  }\n}\n");
  }
  KernelRequest r;
  r.symbol = sym;
  r.label = sym + ".cu";
  r.source = str(eager_prelude(), device_scalar_ops_source(), kTemplates, kKernelBodyMarker, body);
  r.options = {"-default-device", "-w"};
  return r;
}

void pointwise(TensorIterator& it, const PointwiseOp& op) {
  const int64_t n = it.numel();
  const Tensor& out = it.output(0);
  const int nin = op.nargs < 0 ? it.ntensors() - 1 : op.nargs;
  IGNIS_INTERNAL_ASSERT(it.noutputs() == 1 && nin >= 1 && nin < kMaxOperands);
  if (n == 0) {
    it.finish();
    return;
  }
  PointwiseKernel k;
  k.fn = op.fn;
  k.compute = op.compute;
  k.out = out.dtype();
  k.nscalars = static_cast<int>(op.scalars.size());
  Scalars scalars{};
  for (int i = 0; i < k.nscalars; ++i) scalars.bits[i] = opmath_bits(op.scalars[i], op.compute);
  Ptrs ptrs{};
  ptrs.p[0] = it.data_ptr(0);
  for (int j = 0; j < nin; ++j) {
    const Tensor& t = it.input(j);
    if (t.device().is_cpu()) {  // a 0-dim CPU tensor: check_same_device allows only those
      k.inputs.push_back(ScalarType::Undefined);
      scalars.bits[k.nscalars + j] = opmath_bits(t, op.compute);
    } else {
      k.inputs.push_back(t.dtype());
      ptrs.p[j + 1] = it.data_ptr(j + 1);
    }
  }
  // The operands the kernel addresses: the output and the tensor inputs.
  auto tensor_operand = [&](int t) { return t == 0 || k.inputs[t - 1] != ScalarType::Undefined; };
  auto itemsize = [&](int t) {
    return static_cast<int64_t>(element_size(t == 0 ? k.out : k.inputs[t - 1]));
  };
  const DimVector& shape = it.iter_shape();
  const int nd = static_cast<int>(shape.size());
  bool contiguous = nd == 1;
  for (int t = 0; t <= nin && contiguous; ++t)
    if (tensor_operand(t) && it.iter_strides(t)[0] != itemsize(t) && shape[0] != 1)
      contiguous = false;

  const int device = out.device().index;
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  int64_t nn = n;
  if (contiguous) {
    int64_t widest = 1;
    for (int t = 0; t <= nin; ++t)
      if (tensor_operand(t)) widest = std::max(widest, itemsize(t));
    int vec = static_cast<int>(std::min<int64_t>(8, 16 / widest));
    // 128-bit accesses need every pointer aligned to its vector's size.
    auto aligned = [&](int v) {
      for (int t = 0; t <= nin; ++t)
        if (tensor_operand(t) && reinterpret_cast<uintptr_t>(ptrs.p[t]) % (v * itemsize(t)) != 0)
          return false;
      return true;
    };
    while (vec > 1 && !aligned(vec)) vec /= 2;
    k.layout = PointwiseLayout::Vectorized;
    k.vec = vec;
    CUfunction f = function_for(device, k);
    void* args[] = {&ptrs, &nn, &scalars};
    launch_grid_stride(f, (n + vec - 1) / vec, args, stream);
  } else {
    IGNIS_CHECK(nd <= kMaxKernelDims, "CUDA kernels handle at most ", kMaxKernelDims,
                " dims after coalescing, got ", nd);
    // 32-bit index math when the element count and every operand's furthest
    // byte offset fit in an int32.
    bool fits = n <= INT32_MAX;
    for (int t = 0; t <= nin && fits; ++t) {
      int64_t reach = 0;
      for (int d = 0; d < nd; ++d) reach += (shape[d] - 1) * std::abs(it.iter_strides(t)[d]);
      fits = reach <= INT32_MAX;
    }
    // Whole aligned vectors along a fastest dim that every operand reads
    // contiguously (or broadcasts): the VectorRows layout.
    int vec = 1;
    if (fits && nd >= 2) {
      int64_t widest = 1;
      for (int t = 0; t <= nin; ++t)
        if (tensor_operand(t)) widest = std::max(widest, itemsize(t));
      auto rows_of_vectors = [&](int v) {
        if (shape[0] % v != 0) return false;
        for (int t = 0; t <= nin; ++t) {
          if (!tensor_operand(t)) continue;
          const int64_t inner = it.iter_strides(t)[0], bytes = v * itemsize(t);
          if (inner == 0 && t > 0) continue;  // broadcast along it: one element, repeated
          if (inner != itemsize(t) || reinterpret_cast<uintptr_t>(ptrs.p[t]) % bytes != 0)
            return false;
          for (int d = 1; d < nd; ++d)
            if (it.iter_strides(t)[d] % bytes != 0) return false;
        }
        return true;
      };
      vec = static_cast<int>(std::min<int64_t>(8, 16 / widest));
      while (vec > 1 && !rows_of_vectors(vec)) vec /= 2;
    }
    if (vec > 1) {
      k.layout = PointwiseLayout::VectorRows;
      k.vec = vec;
      Geom<uint32_t, int32_t> geom{};
      geom.ndim = nd;
      for (int d = 0; d < nd; ++d) {
        geom.sizes[d] = static_cast<uint32_t>(d == 0 ? shape[0] / vec : shape[d]);
        for (int t = 0; t <= nin; ++t)
          geom.strides[d][t] = !tensor_operand(t) ? 0
                               : static_cast<int32_t>(it.iter_strides(t)[d] * (d == 0 ? vec : 1));
      }
      int64_t nvec = n / vec;
      void* args[] = {&ptrs, &geom, &nvec, &scalars};
      launch_grid_stride(function_for(device, k), nvec, args, stream);
      it.finish();
      return;
    }
    k.layout = fits ? PointwiseLayout::Strided32 : PointwiseLayout::Strided64;
    CUfunction f = function_for(device, k);
    auto run = [&](auto geom) {
      using I = std::remove_reference_t<decltype(geom.sizes[0])>;
      using S = std::remove_reference_t<decltype(geom.strides[0][0])>;
      geom.ndim = nd;
      for (int d = 0; d < nd; ++d) {
        geom.sizes[d] = static_cast<I>(shape[d]);
        for (int t = 0; t <= nin; ++t)
          geom.strides[d][t] = tensor_operand(t) ? static_cast<S>(it.iter_strides(t)[d]) : S(0);
      }
      void* args[] = {&ptrs, &geom, &nn, &scalars};
      launch_grid_stride(f, n, args, stream);
    };
    if (fits) run(Geom<uint32_t, int32_t>{});
    else run(Geom<int64_t, int64_t>{});
  }
  it.finish();
}

}  // namespace ignis::cuda

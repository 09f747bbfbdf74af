#include "ignis/compiler/codegen_cuda.h"

#include <cstdio>
#include <functional>
#include <map>

#include "ignis/compiler/codegen_cpp.h"
#include "ignis/compiler/size_params.h"
#include "ignis/compiler/text.h"
#include "ignis/core/error.h"
#include "ignis/kernels/cuda/device_scalar_ops.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/runtime/sha256.h"
#include "ignis/sym/index.h"
#include "ignis/sym/print.h"
#include "ignis/sym/simplify.h"

namespace ignis::compiler {

namespace {

// Threads per block: one simple choice for every kernel in this first slice
// (a per-kernel heuristic, vectorised loads, ... later change CudaLaunch,
// not the kernels' text).
constexpr int kThreadsPerBlock = 256;

// What generated kernels need besides the eager prelude and scalar_ops.h:
// the reduction combines and the block reduction.
const char* kHelpers = R"CUDA(
// ---- the compiler's helpers (compiler/codegen_cuda.cpp) ----
#ifdef __CUDACC_RTC__
__device__ __forceinline__ double ig_nan() { return __longlong_as_double(0x7ff8000000000000LL); }
#else
inline double ig_nan() { return __builtin_nan(""); }
#endif
struct IgSum {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct IgProd {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a * b; }
};
// max and min propagating NaN, as eager's amax/amin and the CPU's generated code.
struct IgMax {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
    return (a > b || a != a) ? a : b;
  }
};
struct IgMin {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
    return (a < b || a != a) ? a : b;
  }
};
// Combines v over the threads of the block (every thread must call it) and
// returns the result to all of them. Any blockDim.x works, 1 included: each
// warp folds its live lanes with shuffles (a lane reads lane + o only when
// that lane exists), lane 0 of each warp leaves its part in shared memory,
// and every thread folds the parts in the same order, so all get the same
// bits. The leading barrier lets one kernel reduce several times.
template <class T, class F> __device__ __forceinline__ T ig_block_reduce(T v, F f) {
  __shared__ T ig_parts[32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned left = blockDim.x - (warp << 5);
  const unsigned width = left < 32u ? left : 32u;
  const unsigned mask = width == 32u ? 0xffffffffu : ((1u << width) - 1u);
  for (unsigned o = 16; o > 0; o >>= 1) {
    const T other = __shfl_down_sync(mask, v, int(o));
    if (lane + o < width) v = f(v, other);
  }
  __syncthreads();
  if (lane == 0) ig_parts[warp] = v;
  __syncthreads();
  const unsigned warps = (blockDim.x + 31u) >> 5;
  T r = ig_parts[0];
  for (unsigned w = 1; w < warps; ++w) r = f(r, ig_parts[w]);
  return r;
}
)CUDA";

// A size-generic kernel's parameters (Note [Size-generic code]), passed by
// value: the launch copies them into the kernel's constant parameter space.
const char* kGenericHelpers = R"CUDA(
template <int N> struct IgParams {
  int64_t v[N];
  __device__ __forceinline__ int64_t operator[](int i) const { return v[i]; }
};
)CUDA";

const char* cuda_type(ScalarType t) { return cuda::device_type_name(t); }

// A number as an exact literal of the node's type, converted as the CPU's
// generated code converts it (double or int64 -> the type).
std::string literal(const ScalarNode& s) {
  std::string v;
  char buf[64];
  if (s.is_int) {
    std::snprintf(buf, sizeof buf, "%lldLL", static_cast<long long>(s.int_value));
    v = buf;
  } else if (s.value != s.value) {
    v = "ig_nan()";
  } else if (s.value == __builtin_inf()) {
    v = "std::numeric_limits<double>::infinity()";
  } else if (s.value == -__builtin_inf()) {
    v = "(-std::numeric_limits<double>::infinity())";
  } else {
    std::snprintf(buf, sizeof buf, "%a", s.value);
    v = buf;
  }
  return std::string("ig_convert<") + cuda_type(s.dtype) + ">(" + v + ")";
}

const char* combine_functor(Combine c) {
  switch (c) {
    case Combine::Sum: return "IgSum";
    case Combine::Prod: return "IgProd";
    case Combine::Max: return "IgMax";
    case Combine::Min: return "IgMin";
  }
  return "IgSum";
}

std::string combine_init(Combine c, ScalarType t) {
  std::string limits = std::string("std::numeric_limits<") + cuda_type(t) + ">::infinity()";
  switch (c) {
    case Combine::Sum: return "0";
    case Combine::Prod: return "1";
    case Combine::Max: return "-" + limits;
    case Combine::Min: return limits;
  }
  return "0";
}

std::string ptr_name(const Buffer& b) {
  return b.kind == BufferKind::Computed || b.kind == BufferKind::Extern ? b.name : "in_" + b.name;
}

// Note [Scratch rows on the GPU]
// The scheduler keeps some values of one pass over a row for a later pass
// (Loop::spills) in a per-thread scratch row. A scratch kept in an output's
// row (Kernel::scratch_in_output) works unchanged on the GPU: each thread
// writes and reads back the same elements (every pass gives thread t the
// inner elements t, t + blockDim.x, ...). A per-thread row has no cheap GPU
// form (it would be global memory the size of the input), so a later pass
// recomputes the value from its operands instead: on the GPU a recomputed
// exp costs less than a second trip to memory.
class CudaKernelPrinter {
 public:
  // generic, lift: as SizeParams's (Note [Size-generic code]).
  CudaKernelPrinter(Text& os, const Program& p, const Kernel& k, std::string symbol,
                    bool generic = false, bool lift = true)
      : out_(os), p_(p), k_(k), symbol_(std::move(symbol)), base_(k.node_numbers()),
        sz_(generic, lift) {}

  CudaKernel print() {
    IGNIS_INTERNAL_ASSERT(!k_.gemm, "codegen_cuda: ", k_.name,
                          " is a GEMM template; GPU products run as externs");
    CudaKernel out;
    out.symbol = symbol_;
    out.launch.threads = kThreadsPerBlock;
    out_ << "// " << k_.name << ": ";
    for (size_t i = 0; i < k_.origins.size(); ++i) out_ << (i ? ", " : "") << k_.origins[i];
    out_ << "\nextern \"C\" __global__ void " << symbol_ << "(";
    // The body first: the parameters it reads complete the signature.
    Text signature;
    std::swap(os_, signature);
    out.params = declare_params();
    std::swap(os_, signature);
    if (k_.reductions.empty()) print_pointwise(&out.launch);
    else print_rows(&out.launch);
    out.size_params = sz_.values();
    out_ << signature.str();
    if (!out.size_params.empty())
      out_ << ", const IgParams<" << int64_t(out.size_params.size()) << "> P";
    out_ << ") {\n" << os_.str() << "}\n\n";
    return out;
  }

 private:
  // The kernel's parameters: a pointer per buffer it reads or writes.
  std::vector<int> declare_params() {
    std::vector<bool> used(p_.buffers.size(), false), written(p_.buffers.size(), false);
    for (const Loop& l : k_.loops) {
      for (const ScalarNode& s : l.body)
        if (s.kind == ScalarKind::Load) used[size_t(s.buffer)] = true;
      for (const Store& st : l.stores) used[size_t(st.buffer)] = written[size_t(st.buffer)] = true;
    }
    for (const auto& h : k_.scratch_in_output)
      used[size_t(h.buffer)] = written[size_t(h.buffer)] = true;
    std::vector<int> params;
    for (size_t b = 0; b < used.size(); ++b) {
      if (!used[b]) continue;
      const Buffer& buf = p_.buffers[b];
      os_ << (params.empty() ? "" : ", ") << (written[b] ? "" : "const ") << cuda_type(buf.dtype)
          << "* __restrict__ " << ptr_name(buf);
      params.push_back(int(b));
    }
    return params;
  }

  static std::string var(sym::Expr v) { return sym::to_cpp(v); }
  std::string tmp(size_t loop, int node) const { return "tmp" + std::to_string(base_[loop] + node); }

  // Declares `vars` (sizes `sizes`, row-major, the last fastest) from the
  // linear index `lin`. (Generic code writes a stride as the product of the
  // sizes after it.)
  void print_unravel(const std::vector<sym::Expr>& vars, const std::vector<sym::Expr>& sizes,
                     const std::string& lin, const std::string& ind) {
    int64_t stride = 1;
    for (size_t j = vars.size(); j-- > 0;) {
      const int64_t size = sizes[j].value();
      std::string e = "0";
      if (size != 1) {
        e = stride == 1 ? lin
                        : "(" + lin + " / " +
                              (sz_.generic()
                                   ? sz_.product({sizes.begin() + ptrdiff_t(j) + 1, sizes.end()})
                                   : std::to_string(stride)) +
                              ")";
        if (j > 0) e = e + " % " + sz_.expr(sizes[j]);
      }
      os_ << ind << "const int64_t " << var(vars[j]) << " = " << e << ";\n";
      stride *= size;
    }
  }

  // The product of `sizes` (a row's or the kernel's elements): its value in
  // static code, over the parameters in generic code.
  std::string numel(const std::vector<sym::Expr>& sizes, int64_t value) {
    return sz_.generic() ? sz_.product(sizes) : std::to_string(value);
  }

  const Kernel::ScratchInOutput* home(int scratch) const {
    for (const auto& h : k_.scratch_in_output)
      if (h.scratch == scratch) return &h;
    return nullptr;
  }

  std::string scratch_element(int scratch) {
    return "scratch" + std::to_string(scratch) + "[" +
           sz_.expr(sym::simplify(sym::ravel_index(k_.inner, k_.inner_sizes))) + "]";
  }

  // The rows of outputs that hold scratch values (Note [Scratch rows on the GPU]).
  void declare_scratch(const std::string& ind) {
    for (const auto& h : k_.scratch_in_output)
      os_ << ind << cuda_type(k_.scratch[size_t(h.scratch)]) << "* scratch" << h.scratch << " = "
          << ptr_name(p_.buffers[size_t(h.buffer)]) << " + (" << sz_.expr(h.base) << ");\n";
  }

  // The expression of node s (of loop `loop`), its operands named by `arg`.
  std::string expr(const ScalarNode& s, const std::function<std::string(int)>& arg,
                   const std::string& ind) {
    switch (s.kind) {
      case ScalarKind::Load:
        return ptr_name(p_.buffers[size_t(s.buffer)]) + "[" + sz_.expr(s.index) + "]";
      case ScalarKind::Constant:
        // An integer constant may be a size too (a mean's count): lifted.
        if (sz_.generic() && s.is_int)
          return std::string("ig_convert<") + cuda_type(s.dtype) + ">(" +
                 sz_.integer(s.int_value) + ")";
        return literal(s);
      case ScalarKind::Call: {
        std::string e = std::string("ignis::scalar_ops::") + scalar_struct_name(s.fn) + "{}(";
        for (size_t a = 0; a < s.args.size(); ++a) e += (a ? ", " : "") + arg(s.args[a]);
        return e + ")";
      }
      case ScalarKind::Cast:
        return std::string("ig_convert<") + cuda_type(s.dtype) + ">(" + arg(s.args.at(0)) + ")";
      case ScalarKind::Where:
        return arg(s.args.at(0)) + " ? " + arg(s.args.at(1)) + " : " + arg(s.args.at(2));
      case ScalarKind::Ref:
        if (s.acc >= 0) return "acc" + std::to_string(s.acc);
        if (s.scratch < 0) return tmp(size_t(s.loop), s.node);
        if (home(s.scratch)) return scratch_element(s.scratch);
        return recompute_spill(s.scratch, ind);
    }
    return "";
  }

  // The value a per-thread scratch row would hold, recomputed here from the
  // node of the pass that spilled it (Note [Scratch rows on the GPU]).
  std::string recompute_spill(int scratch, const std::string& ind) {
    for (size_t lj = 0; lj < k_.loops.size(); ++lj)
      for (const auto& [node, s] : k_.loops[lj].spills)
        if (s == scratch) return recompute(lj, node, ind);
    IGNIS_INTERNAL_ASSERT(false, "codegen_cuda: no pass of ", k_.name, " fills scratch", scratch);
    return "";
  }

  std::string recompute(size_t lj, int node, const std::string& ind) {
    auto it = recomputed_.find({lj, node});
    if (it != recomputed_.end()) return it->second;
    const ScalarNode& s = k_.loops[lj].body[size_t(node)];
    std::string e = expr(s, [&](int a) { return recompute(lj, a, ind); }, ind);
    std::string name = "re" + tmp(lj, node).substr(3);
    os_ << ind << "const " << cuda_type(s.dtype) << " " << name << " = " << e << ";\n";
    recomputed_.emplace(std::make_pair(lj, node), name);
    return name;
  }

  // Which of a loop's nodes print_nodes prints.
  enum class Part { All, Invariant, PerElement };

  // Loop li's nodes (those of `part`: row-invariant ones go before a row
  // kernel's pass, at row scope), one statement each.
  void print_nodes(size_t li, const std::string& ind, Part part) {
    const Loop& l = k_.loops[li];
    const std::vector<bool> inv = part == Part::All ? std::vector<bool>(l.body.size(), false)
                                                    : row_invariant_nodes(k_, li);
    recomputed_.clear();
    for (size_t i = 0; i < l.body.size(); ++i) {
      if ((part == Part::Invariant && !inv[i]) || (part == Part::PerElement && inv[i])) continue;
      const ScalarNode& s = l.body[i];
      std::string e = expr(s, [&](int a) { return tmp(li, a); }, ind);
      os_ << ind << "const " << cuda_type(s.dtype) << " " << tmp(li, int(i)) << " = " << e << ";\n";
    }
  }

  // Loop li's nodes (`part` of them), spills and stores, one statement each.
  // `once`: a scalar block in a row kernel, computed by every thread and
  // stored by one.
  void print_body(size_t li, const std::string& ind, bool once, Part part = Part::All) {
    const Loop& l = k_.loops[li];
    print_nodes(li, ind, part);
    for (const auto& [node, scratch] : l.spills)
      if (home(scratch)) os_ << ind << scratch_element(scratch) << " = " << tmp(li, node) << ";\n";
    for (const Store& st : l.stores)
      os_ << ind << (once ? "if (threadIdx.x == 0) " : "")
          << ptr_name(p_.buffers[size_t(st.buffer)]) << "[" << sz_.expr(st.index)
          << "] = " << tmp(li, st.value) << ";\n";
  }

  // No reduction: one grid-stride loop over every element; each element runs
  // every loop of the kernel in order (a later loop re-reads only elements
  // this thread stored).
  void print_pointwise(CudaLaunch* launch) {
    const int64_t n = k_.outer_numel() * k_.inner_numel();
    launch->blocks = (n + launch->threads - 1) / launch->threads;
    std::vector<sym::Expr> vars = k_.outer, sizes = k_.outer_sizes;
    vars.insert(vars.end(), k_.inner.begin(), k_.inner.end());
    sizes.insert(sizes.end(), k_.inner_sizes.begin(), k_.inner_sizes.end());
    os_ << "  for (int64_t ig_i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; ig_i < "
        << numel(sizes, n) << "; ig_i += int64_t(gridDim.x) * blockDim.x) {\n";
    print_unravel(vars, sizes, "ig_i", "    ");
    declare_scratch("    ");
    for (size_t li = 0; li < k_.loops.size(); ++li) print_body(li, "    ", false);
    os_ << "  }\n";
  }

  // With reductions: a block per row (an outer iteration), each loop a pass
  // of the block over the row's inner elements.
  void print_rows(CudaLaunch* launch) {
    const int64_t rows = k_.outer_numel(), inner = k_.inner_numel();
    launch->blocks = rows;
    os_ << "  for (int64_t ig_row = blockIdx.x; ig_row < " << numel(k_.outer_sizes, rows)
        << "; ig_row += gridDim.x) {\n";
    print_unravel(k_.outer, k_.outer_sizes, "ig_row", "    ");
    declare_scratch("    ");
    for (size_t li = 0; li < k_.loops.size(); ++li) {
      const Loop& l = k_.loops[li];
      if (!l.inner) {
        print_body(li, "    ", true);
      } else {
        for (int r : l.reductions) {
          const Reduction& red = k_.reductions[size_t(r)];
          os_ << "    " << cuda_type(red.dtype) << " acc" << r << " = "
              << combine_init(red.combine, red.dtype) << ";\n";
        }
        print_nodes(li, "    ", Part::Invariant);
        os_ << "    for (int64_t ig_e = threadIdx.x; ig_e < " << numel(k_.inner_sizes, inner)
            << "; ig_e += blockDim.x) {\n";
        print_unravel(k_.inner, k_.inner_sizes, "ig_e", "      ");
        print_body(li, "      ", false, Part::PerElement);
        for (int r : l.reductions) {
          const Reduction& red = k_.reductions[size_t(r)];
          os_ << "      acc" << r << " = " << combine_functor(red.combine) << "()(acc" << r
              << ", " << tmp(li, red.value) << ");\n";
        }
        os_ << "    }\n";
        for (int r : l.reductions)
          os_ << "    acc" << r << " = ig_block_reduce(acc" << r << ", "
              << combine_functor(k_.reductions[size_t(r)].combine) << "());\n";
      }
      // What this pass stored is visible to the block's next pass.
      bool wrote = !l.stores.empty();
      for (const auto& spill : l.spills) wrote = wrote || home(spill.second) != nullptr;
      if (wrote && li + 1 < k_.loops.size()) os_ << "    __syncthreads();\n";
    }
    os_ << "  }\n";
  }

  Text& out_;  // the translation unit
  Text os_;    // this kernel's signature, then its body
  const Program& p_;
  const Kernel& k_;
  std::string symbol_;
  std::vector<int> base_;
  std::map<std::pair<size_t, int>, std::string> recomputed_;  // in the loop being printed
  SizeParams sz_;
};

// sym's helpers (floor division, remainder) without their #include line:
// the eager prelude has the fixed-width integers NVRTC lacks.
std::string sym_helpers() {
  std::string s = sym::cpp_prelude();
  if (s.rfind("#include", 0) == 0) s = s.substr(s.find('\n') + 1);
  return s;
}

CudaProgramCode print_program(const Program& p, const std::string& tag, bool generic, bool lift) {
  Text os;
  os << "// Generated by ignis's compiler (src/ignis/compiler/codegen_cuda.cpp).\n"
     << cuda::eager_prelude() << cuda::device_scalar_ops_source() << sym_helpers() << kHelpers
     << (generic ? kGenericHelpers : "") << "\n";
  CudaProgramCode code;
  for (const Kernel& k : p.kernels)
    code.kernels.push_back(
        CudaKernelPrinter(os, p, k, tag.empty() ? k.name : k.name + "_" + tag, generic, lift)
            .print());
  code.source = os.str();
  return code;
}

}  // namespace

const std::vector<std::string>& cuda_compile_options() {
  static const std::vector<std::string> options = {"-default-device", "-w"};
  return options;
}

CudaProgramCode generate_cuda(const Program& p, const CompilerOptions& options, bool lift) {
  IGNIS_INTERNAL_ASSERT(p.device.is_cuda(), "generate_cuda: a program on ", p.device.str());
  // Kernel symbols carry a hash of the program's text, so that kernels of
  // different graphs never share a name (IGNIS_CUDA_DUMP_SOURCES writes
  // <symbol>.cu; the fake driver loads kernels by symbol). Size-generic
  // text is the same for every size it serves, and so are its symbols.
  // (The tag is the lifted text's, so that printing with the values in
  // place keeps the symbols.)
  const bool generic = options.size_generic;
  const std::string tag =
      runtime::sha256_hex(print_program(p, "", generic, true).source).substr(0, 12);
  return print_program(p, tag, generic, lift);
}

}  // namespace ignis::compiler

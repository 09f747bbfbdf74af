#include "ignis/compiler/codegen_cuda.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ignis/compiler/codegen_cpp.h"
#include "ignis/compiler/size_params.h"
#include "ignis/compiler/text.h"
#include "ignis/core/error.h"
#include "ignis/kernels/cuda/device_scalar_ops.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/runtime/sha256.h"
#include "ignis/sym/eval.h"
#include "ignis/sym/index.h"
#include "ignis/sym/print.h"
#include "ignis/sym/simplify.h"

namespace ignis::compiler {

namespace {

// Threads per block of pointwise and streaming row kernels; rows held in
// registers and column kernels choose their own (Note [Vectors and
// registers on the GPU]).
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
// The block-shared buffer of ig_column_reduce_n: one for the kernel, whatever
// types and counts its reductions fold (a __shared__ array inside the
// template would be one per instantiation).
__device__ __forceinline__ char* ig_column_smem() {
  __shared__ __align__(16) char ig_cbuf[16384];  // the printer's kColumnReduceBytes
  return ig_cbuf;
}
// Combines the N values v[0..N) of each thread over the row lanes of a
// column kernel's block (thread t works on column group t % cw, row lane
// t / cw): afterwards every thread's v[j] is the fold of its group's v[j]
// over the lanes, in lane order (the same bits in every thread; threads past
// the last whole lane hold the combine's identity and are not read). One
// barrier round for all N values: each (j, column) is folded by one thread
// and handed back through shared memory. Folding each value in a round of
// its own (two barriers and 16 shared reads a thread a value) left GPT-2's
// layer-norm weight gradients at 41 us a launch (docs/benchmarks.md run 16).
// Needs N * blockDim.x * sizeof(T) <= 16384; every thread must call it.
template <int N, class T, class F> __device__ __forceinline__ void ig_column_reduce_n(T* v, F f, int cw) {
  T* const buf = reinterpret_cast<T*>(ig_column_smem());
  const int t = int(threadIdx.x), b = int(blockDim.x), lanes = b / cw;
  __syncthreads();  // the last call's readers are done
#pragma unroll
  for (int j = 0; j < N; ++j) buf[j * b + t] = v[j];
  __syncthreads();
  for (int o = t; o < N * cw; o += b) {
    T* const p = buf + (o / cw) * b + o % cw;
    T r = p[0];
#pragma unroll 4
    for (int y = 1; y < lanes; ++y) r = f(r, p[y * cw]);
    p[0] = r;  // lane 0's slot: read by this thread alone
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < N; ++j) v[j] = buf[j * b + t % cw];
}
// A load from L2, past this multiprocessor's L1 (ld.global.cg): for the
// partials other blocks of the launch wrote (their __threadfence and the
// counter order the writes; L1 is not coherent with them). Not volatile, so
// a thread's loads can all be in flight at once.
template <class T> __device__ __forceinline__ T ig_load_l2(const T* p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  return *p;
#endif
}
// V elements of T moved by one load or store instruction (16 bytes at most).
template <class T, int V> struct alignas(sizeof(T) * V) IgVec { T v[V]; };
// A vector load marked as read once (ld.global.cs: evicted first from L1 and
// L2), for data a kernel streams (config.cuda.streaming_loads).
template <class V> __device__ __forceinline__ V ig_load_stream(const V* p) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(V) == 16) {
    const int4 r = __ldcs(reinterpret_cast<const int4*>(p));
    return *reinterpret_cast<const V*>(&r);
  } else if constexpr (sizeof(V) == 8) {
    const int2 r = __ldcs(reinterpret_cast<const int2*>(p));
    return *reinterpret_cast<const V*>(&r);
  }
#endif
  return *p;
}
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
// The online max and sum of exps (Note [Online max and sum of exps]): m the
// row's running max, s the sum of e(x - m) over the elements seen, so that
// one pass gives what a max pass and a sum-of-exps pass give. An element
// equal to a max of -inf counts 1 (the pair's rescale zeroes it once a
// finite max arrives; a row whose max stays -inf ends NaN, as
// e(-inf - -inf) makes it in two passes); a NaN carries through both.
template <class T, class E> __device__ __forceinline__ void ig_online_add(T& m, T& s, T x, E e) {
  if (x > m) {
    s = s * e(m - x);
    m = x;
  }
  s += (x == m && m == -std::numeric_limits<T>::infinity()) ? T(1) : e(x - m);
  m = IgMax()(m, x);
}
template <class T, class E> __device__ __forceinline__ void ig_online_merge(T& m, T& s, T m2, T s2,
                                                                            E e) {
  const T mm = IgMax()(m, m2);
  s = s * (m == mm ? T(1) : e(m - mm)) + s2 * (m2 == mm ? T(1) : e(m2 - mm));
  m = mm;
}
// ig_block_reduce for the pair; every thread gets the row's (max, sum).
template <class T, class E> __device__ __forceinline__ void ig_block_reduce_online(T& m, T& s, E e) {
  __shared__ T ig_pm[32], ig_ps[32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned left = blockDim.x - (warp << 5);
  const unsigned width = left < 32u ? left : 32u;
  const unsigned mask = width == 32u ? 0xffffffffu : ((1u << width) - 1u);
  for (unsigned o = 16; o > 0; o >>= 1) {
    const T m2 = __shfl_down_sync(mask, m, int(o)), s2 = __shfl_down_sync(mask, s, int(o));
    if (lane + o < width) ig_online_merge(m, s, m2, s2, e);
  }
  __syncthreads();
  if (lane == 0) {
    ig_pm[warp] = m;
    ig_ps[warp] = s;
  }
  __syncthreads();
  const unsigned warps = (blockDim.x + 31u) >> 5;
  m = ig_pm[0];
  s = ig_ps[0];
  for (unsigned w = 1; w < warps; ++w) ig_online_merge(m, s, ig_pm[w], ig_ps[w], e);
  if (m == -std::numeric_limits<T>::infinity()) s = T(ig_nan());
}
)CUDA";

// A size-generic kernel's parameters (Note [Size-generic code]), passed by
// value: the launch copies them into the kernel's constant parameter space.
// The host always passes int64s; a kernel whose indices fit in 32 bits reads
// them as its index type T, so that its comparisons and products with them
// stay 32-bit (the values fit: they are extents, strides and offsets of the
// buffers fits_int32 checked).
const char* kGenericHelpers = R"CUDA(
template <int N, typename T = int64_t> struct IgParams {
  int64_t v[N];
  __device__ __forceinline__ T operator[](int i) const { return T(v[i]); }
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

// Kernels are printed over their own views (kernel_view): argN.
std::string ptr_name(const Buffer& b) { return b.name; }

// Whether e uses the symbol v.
bool involves(sym::Expr e, sym::Expr v) {
  const std::vector<sym::Expr> used = sym::free_symbols(e);
  return std::find(used.begin(), used.end(), v) != used.end();
}

// The largest power of two dividing x (x == 0: any).
int64_t pow2_divisor(int64_t x) { return x == 0 ? int64_t(1) << 40 : (x & -x); }

// How an element index moves with a loop variable v: `unit` when it is
// v + rest with rest free of v (neighbouring v, neighbouring elements: a
// vector access), `align` the power of two that divides rest for every
// value of the other variables (its coefficients and constant).
struct AccessForm {
  bool unit = false;
  int64_t align = 1;
};

AccessForm access_form(sym::Expr index, sym::Expr v) {
  AccessForm f;
  int64_t align = int64_t(1) << 40;
  int64_t coeff_v = 0;
  bool other = false;
  const int64_t c = sym::for_each_term(index, [&](sym::Expr term, int64_t coeff) {
    if (term == v) {
      coeff_v += coeff;
    } else if (involves(term, v)) {
      other = true;
    } else {
      align = std::min(align, pow2_divisor(coeff));
    }
  });
  align = std::min(align, pow2_divisor(c));
  f.unit = !other && coeff_v == 1;
  f.align = align;
  return f;
}

// Note [Vectors and registers on the GPU]
// Static kernels move 16 bytes per load or store where they can: when every
// access whose index moves with the innermost loop variable moves by one
// element per step (or not at all), the innermost extent and the other
// terms of those indices are multiples of V, each thread takes V
// neighbouring elements, loading and storing each such buffer as one
// IgVec<T, V> (accesses in other layouts stay scalar). The data pointers
// must be aligned too, which only the launch knows: the kernel checks them
// once and otherwise runs the scalar loop.
//
// A row kernel whose row fits in the block's registers (at most
// kMaxRowChunks vectors a thread) keeps it there: thread t holds vectors
// t, t + blockDim.x, ... of the row in every pass, so a buffer that several
// passes read (softmax's and layer_norm's x) is loaded once, and values a
// later pass needs (softmax's exps: the loop IR's spills) stay in registers
// instead of a scratch row. All of it must fit the registers a thread of
// the block may use (65536 a multiprocessor over the block's threads, less
// kRegisterReserve for the pass's own values); when it does not, the spills
// are recomputed from the held loads (a 50304-wide bfloat16 softmax at 1024
// threads), and when the loads alone do not fit, the row streams. Loads
// that only a later pass reads (layer_norm's weight and bias) are issued
// before the first pass when the kernel runs a round or two of blocks
// (row_waves: there the rows' latency is the kernel's time; in longer
// kernels their registers would cost occupancy). A longer row, misaligned
// pointers, or a block too small to hold the row (the fake driver's
// one-thread blocks) take the streaming path: each pass reads the row again
// (Note [Scratch rows on the GPU]).
constexpr int kMaxRowChunks = 8;
constexpr int kMaxBlockThreads = 1024;

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
  // options: the compiler's (size_generic, config.cuda's row knobs); lift:
  // as SizeParams's (Note [Size-generic code]).
  // p and k: the kernel's own view (kernel_view); args_comment, printed
  // under its name: which buffer each argN is.
  CudaKernelPrinter(Text& os, const Program& p, const Kernel& k, std::string symbol,
                    const CompilerOptions& options, bool lift, std::string args_comment)
      : out_(os), p_(p), k_(k), symbol_(std::move(symbol)), options_(options),
        base_(k.node_numbers()), sz_(options.size_generic, lift),
        args_comment_(std::move(args_comment)), folds_(k.folding_stores()) {}

  // What the kernel's text is apart from its name and comment: two kernels
  // of one key are one kernel.
  const std::string& key() const { return key_; }
  // Note [Parameters that vary with the sizes] (size_params.h)
  void keep_literals(std::vector<uint8_t> varying) { sz_.keep_literals(std::move(varying)); }

  CudaKernel print() {
    IGNIS_INTERNAL_ASSERT(!k_.gemm, "codegen_cuda: ", k_.name,
                          " is a GEMM template; GPU products run as externs");
    CudaKernel out;
    out.symbol = symbol_;
    out.launch.threads = kThreadsPerBlock;
    it_ = fits_int32() ? "int32_t" : "int64_t";
    // The body first: the parameters it reads complete the signature, and
    // the launch (its block size) the declaration.
    Text signature;
    std::swap(os_, signature);
    out.params = declare_params();
    std::swap(os_, signature);
    if (k_.reductions.empty()) print_pointwise(&out.launch);
    else if (is_column_kernel()) print_columns(&out.launch);
    else print_rows(&out.launch);
    out.size_params = sz_.values();
    std::string tail = "(" + signature.str();
    if (out.launch.workspace_bytes > 0) tail += ", char* __restrict__ ig_ws";
    if (!out.size_params.empty()) {
      if (narrow_indices())
        for (int64_t v : out.size_params)
          IGNIS_INTERNAL_ASSERT(fits_32_bits(v), "codegen_cuda: ", k_.name, " reads a parameter ",
                                v, " beyond its 32-bit indices");
      tail += ", const IgParams<" + std::to_string(out.size_params.size()) +
              (narrow_indices() ? ", int32_t" : "") + "> P";
    }
    tail += ") {\n" + os_.str() + "}\n\n";
    const std::string bounds = std::to_string(out.launch.threads) +
                               (out.launch.min_blocks > 0
                                    ? ", " + std::to_string(out.launch.min_blocks)
                                    : std::string());
    key_ = bounds + tail;
    out_ << "// " << k_.name << ": ";
    for (size_t i = 0; i < k_.origins.size(); ++i) out_ << (i ? ", " : "") << k_.origins[i];
    out_ << "\n" << args_comment_;
    out_ << "extern \"C\" __global__ void __launch_bounds__(" << bounds << ") " << symbol_
         << tail;
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
        if (j > 0) e = e + " % " + sz_.operand(sizes[j]);
      }
      os_ << ind << "const " << it_ << " " << var(vars[j]) << " = " << e << ";\n";
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
        if (vec_) {
          const std::string key = access_key(s.buffer, s.index);
          if (vec_->cached.count(key)) return vec_->cache.at(key) + "[ig_k][ig_j]";
          auto it = vec_->loads.find(key);
          if (it != vec_->loads.end()) return it->second + ".v[ig_j]";
        }
        return ptr_name(p_.buffers[size_t(s.buffer)]) + "[" + sz_.expr(s.index) + "]";
      case ScalarKind::Index: return "(int64_t)(" + sz_.expr(s.index) + ")";
      case ScalarKind::Constant:
        // An integer constant may be a size too (a mean's count): lifted,
        // unless the kernel reads its parameters as 32-bit indices and the
        // value is wider (a fill value, not a size).
        if (sz_.generic() && s.is_int && (!narrow_indices() || fits_32_bits(s.int_value)))
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
      case ScalarKind::Ref: {
        // The value read may have another type than the node (a float
        // accumulator read as the bfloat16 sum a graph asked for: softmax's
        // backward in bfloat16 failed NVRTC on `const ig_bf16 tmp9 = acc0;`
        // and ran eagerly).
        const ScalarType from = ref_dtype(s);
        const std::string v = ref(s, ind);
        return from == s.dtype ? v : std::string("ig_convert<") + cuda_type(s.dtype) + ">(" + v + ")";
      }
    }
    return "";
  }

  std::string ref(const ScalarNode& s, const std::string& ind) {
    if (s.acc >= 0) return acc(s.acc);
    if (s.scratch < 0) return tmp(size_t(s.loop), s.node);
    if (vec_ && vec_->registers)
      return vec_->spills ? "ig_sp" + std::to_string(s.scratch) + "[ig_k][ig_j]"
                          : recompute_spill(s.scratch, ind);
    if (home(s.scratch) && !(online_ && online_->recomputed.count(s.scratch)))
      return scratch_element(s.scratch);
    return recompute_spill(s.scratch, ind);
  }

  // The type of the value a Ref node reads (as codegen_cpp's ref_dtype).
  ScalarType ref_dtype(const ScalarNode& s) const {
    if (s.scratch >= 0) return k_.scratch[size_t(s.scratch)];
    if (s.acc >= 0) return k_.reductions[size_t(s.acc)].dtype;
    return k_.loops[size_t(s.loop)].body[size_t(s.node)].dtype;
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
      if (vec_ && s.kind == ScalarKind::Load) {
        const std::string key = access_key(s.buffer, s.index);
        auto c = vec_->cache.find(key);
        if (c != vec_->cache.end() && !vec_->cached.count(key) && vec_->filling.insert(key).second)
          os_ << ind << c->second << "[ig_k][ig_j] = " << tmp(li, int(i)) << ";\n";
      }
    }
  }

  // Loop li's nodes (`part` of them), spills and stores, one statement each.
  // `once`: a scalar block in a row kernel, computed by every thread and
  // stored by one.
  void print_body(size_t li, const std::string& ind, bool once, Part part = Part::All) {
    const Loop& l = k_.loops[li];
    print_nodes(li, ind, part);
    for (const auto& [node, scratch] : l.spills) {
      if (vec_ && vec_->registers) {
        if (vec_->spills)
          os_ << ind << "ig_sp" << scratch << "[ig_k][ig_j] = " << tmp(li, node) << ";\n";
      } else if (home(scratch)) {
        os_ << ind << scratch_element(scratch) << " = " << tmp(li, node) << ";\n";
      }
    }
    for (const Store& st : l.stores) {
      if (st.fold) {  // a column sum's partial: this thread's element of its worker's row
        const std::string at =
            vec_ && vec_->registers
                ? "ig_fold" + std::to_string(fold_slot(st.buffer)) + "[ig_k][ig_j]"
                : ptr_name(p_.buffers[size_t(st.buffer)]) + "[" + sz_.expr(st.index) + "]";
        os_ << ind << at << " = " << combine_functor(*st.fold) << "()(" << at << ", "
            << tmp(li, st.value) << ");\n";
        continue;
      }
      if (vec_ && vec_->registers && !once) {
        const std::string key = access_key(st.buffer, st.index);
        auto c = vec_->cache.find(key);
        if (c != vec_->cache.end() && !vec_->cached.count(key) && vec_->filling.insert(key).second)
          os_ << ind << c->second << "[ig_k][ig_j] = " << tmp(li, st.value) << ";\n";
      }
      if (vec_ && !once) {
        auto it = vec_->stores.find(access_key(st.buffer, st.index));
        if (it != vec_->stores.end()) {
          os_ << ind << it->second << ".v[ig_j] = " << tmp(li, st.value) << ";\n";
          continue;
        }
      }
      os_ << ind << (once ? "if (threadIdx.x == 0) " : "")
          << ptr_name(p_.buffers[size_t(st.buffer)]) << "[" << sz_.expr(st.index)
          << "] = " << tmp(li, st.value) << ";\n";
    }
  }

  // ---- vectors and registers (Note [Vectors and registers on the GPU]) ----

  // While a vector or register path is printed: how accesses are spelled.
  struct VectorState {
    bool registers = false;  // row path: chunks in registers
    bool spills = false;     // ... and the loop IR's spills in ig_sp arrays (else recomputed)
    std::map<std::string, std::string> loads, stores;  // access -> IgVec variable (this pass)
    std::map<std::string, std::string> cache;          // access -> ig_rc array (loads several passes read)
    std::set<std::string> cached;                      // filled by an earlier pass
    std::set<std::string> filling;                     // filled by this pass
    int names = 0;                                     // IgVec variables printed so far
  };

  static std::string access_key(int buffer, sym::Expr index) {
    return std::to_string(buffer) + "@" + sym::to_cpp(index);
  }

  static bool fits_32_bits(int64_t v) { return v == int64_t(int32_t(v)); }
  // Whether the kernel's indices (and the parameters it reads) are int32_t.
  bool narrow_indices() const { return it_ == "int32_t"; }

  // Every index this kernel forms fits in int32: the extents of the buffers
  // it touches and its iteration space, with room for a grid-stride step
  // past the end. Size-generic code decides it at the size it is printed for,
  // like any other decision of its text: a size past the limit prints the
  // 64-bit text (Note [Size-generic code]).
  bool fits_int32() const {
    constexpr int64_t kLimit = (int64_t(1) << 31) - (int64_t(1) << 26);
    auto known = [](const std::vector<sym::Expr>& v) {
      return std::all_of(v.begin(), v.end(), [](const sym::Expr& e) { return e.is_const(); });
    };
    if (!known(k_.outer_sizes) || !known(k_.inner_sizes)) return false;
    if (k_.outer_numel() >= kLimit || k_.inner_numel() >= kLimit ||
        k_.outer_numel() * k_.inner_numel() >= kLimit)
      return false;
    std::vector<bool> used(p_.buffers.size(), false);
    for (const Loop& l : k_.loops) {
      for (const ScalarNode& s : l.body)
        if (s.kind == ScalarKind::Load) used[size_t(s.buffer)] = true;
      for (const Store& st : l.stores) used[size_t(st.buffer)] = true;
    }
    for (const auto& h : k_.scratch_in_output) used[size_t(h.buffer)] = true;
    for (size_t b = 0; b < used.size(); ++b) {
      if (!used[b]) continue;
      const Buffer& buf = p_.buffers[b];
      if (!known(buf.sizes) || !known(buf.strides)) return false;
      int64_t extent = 1;
      for (size_t d = 0; d < buf.sizes.size(); ++d) {
        const int64_t n = buf.sizes[d].value(), st = buf.strides[d].value();
        if (n == 0) { extent = 0; break; }
        extent += (n - 1) * (st < 0 ? -st : st);
        if (extent >= kLimit) return false;
      }
    }
    return true;
  }

  // The accesses of loop li that move with v: (buffer, index, store?).
  struct Access {
    int buffer;
    sym::Expr index;
    bool store;
    ScalarType dtype;
  };
  std::vector<Access> accesses(size_t li) const {
    std::vector<Access> out;
    const Loop& l = k_.loops[li];
    for (const ScalarNode& s : l.body)
      if (s.kind == ScalarKind::Load) out.push_back({s.buffer, s.index, false, s.dtype});
    for (const Store& st : l.stores)  // (a folding store is an element's read and write)
      if (!st.fold) out.push_back({st.buffer, st.index, true, p_.buffers[size_t(st.buffer)].dtype});
    return out;
  }

  // Whether a loop computes a value from its coordinates (ScalarKind::Index):
  // the resident-row path renames the innermost variable per chunk, which
  // such a value does not follow, so those rows stream. (The pointwise
  // vector path defines the variable per lane, `x = ig_v0 + ig_j`.)
  bool has_index_values() const {
    for (const Loop& l : k_.loops)
      for (const ScalarNode& s : l.body)
        if (s.kind == ScalarKind::Index) return true;
    return false;
  }

  // The vector width for the loops `loops` moving with v (extent n): 16
  // bytes of the widest element an access moves by one along v, halved until
  // the extent and every such access's other terms allow it; 1 when no
  // access moves along v element by element.
  int vector_width(const std::vector<size_t>& loops, sym::Expr v, int64_t n,
                   bool in_generic = false) const {
    if ((sz_.generic() && !in_generic) || n <= 1) return 1;
    size_t widest = 0;
    std::vector<int64_t> aligns;
    for (size_t li : loops)
      for (const Access& a : accesses(li)) {
        AccessForm f = access_form(a.index, v);
        if (!f.unit) continue;
        widest = std::max(widest, element_size(p_.buffers[size_t(a.buffer)].dtype));
        aligns.push_back(f.align);
      }
    if (widest == 0) return 1;
    int width = int(std::min<size_t>(8, 16 / widest));
    for (; width > 1; width /= 2) {
      if (n % width) continue;
      if (std::all_of(aligns.begin(), aligns.end(), [&](int64_t al) { return al % width == 0; }))
        break;
    }
    return width;
  }

  // The IgVec type of buffer b's elements.
  std::string vec_type(int b, int width) const {
    return std::string("IgVec<") + cuda_type(p_.buffers[size_t(b)].dtype) + ", " +
           std::to_string(width) + ">";
  }

  // `const bool ig_aligned = ...;`: whether every pointer a vector accesses
  // is aligned to its vector (the launch decides; offsets of views too).
  void print_alignment_check(const std::vector<size_t>& loops, sym::Expr v, int width,
                             const std::string& ind) {
    std::map<int, size_t> bytes;
    for (size_t li : loops)
      for (const Access& a : accesses(li))
        if (access_form(a.index, v).unit)
          bytes[a.buffer] = element_size(p_.buffers[size_t(a.buffer)].dtype) * size_t(width);
    os_ << ind << "const bool ig_aligned =";
    const char* sep = " ";
    for (const auto& [b, n] : bytes) {
      os_ << sep << "reinterpret_cast<unsigned long long>(" << ptr_name(p_.buffers[size_t(b)])
          << ") % " << n << " == 0";
      sep = " &&\n" "      ";
    }
    os_ << ";\n";
  }

  // Inside a vector's scope (the innermost variable v not yet declared, its
  // first element's value in `base`): IgVec loads of loop li's per-element
  // accesses that move along v and are not in the register cache, and the
  // IgVecs its vector stores fill.
  void print_vector_accesses(size_t li, sym::Expr v, sym::Expr base, int width,
                             const std::string& ind) {
    vec_->loads.clear();
    vec_->stores.clear();
    auto vector_load = [&](const ScalarNode& s) {
      const std::string key = access_key(s.buffer, s.index);
      if (vec_->cached.count(key) || vec_->loads.count(key) || !access_form(s.index, v).unit)
        return;
      const std::string name = "ig_vl" + std::to_string(vec_->names++);
      os_ << ind << "const " << vec_type(s.buffer, width) << " " << name << " = "
          << (stream_loads_ ? "ig_load_stream(" : "*") << "reinterpret_cast<const "
          << vec_type(s.buffer, width) << "*>(" << ptr_name(p_.buffers[size_t(s.buffer)]) << " + ("
          << sz_.expr(sym::subs(s.index, {{v, base}})) << "))" << (stream_loads_ ? ")" : "")
          << ";\n";
      vec_->loads.emplace(key, name);
    };
    const std::vector<bool> inv = row_invariant_nodes(k_, li);
    const Loop& l = k_.loops[li];
    for (size_t i = 0; i < l.body.size(); ++i)
      if (l.body[i].kind == ScalarKind::Load && !(l.inner && !inv.empty() && inv[i]))
        vector_load(l.body[i]);
    if (!vec_->registers)
      for (const ScalarNode* x : recomputed_loads(li)) vector_load(*x);
    for (const Store& st : l.stores) {
      const std::string key = access_key(st.buffer, st.index);
      if (st.fold || vec_->stores.count(key) || !access_form(st.index, v).unit) continue;
      const std::string name = "ig_vs" + std::to_string(vec_->names++);
      os_ << ind << vec_type(st.buffer, width) << " " << name << ";\n";
      vec_->stores.emplace(key, name);
    }
  }

  // The loads of the values loop li reads from the online pair's sum pass,
  // which is not printed: li recomputes them (Note [Online max and sum of
  // exps]), and its vectors load their operands too.
  std::vector<const ScalarNode*> recomputed_loads(size_t li) const {
    std::vector<const ScalarNode*> out;
    if (!online_) return out;
    const Loop& sum = k_.loops[online_->sum_loop];
    for (const ScalarNode& r : k_.loops[li].body) {
      if (r.kind != ScalarKind::Ref || r.acc >= 0 || !online_->recomputed.count(r.scratch)) continue;
      for (const auto& [node, sc] : sum.spills) {
        if (sc != r.scratch) continue;
        const std::vector<bool> cone = node_cone(online_->sum_loop, node);
        for (size_t i = 0; i < sum.body.size(); ++i)
          if (cone[i] && sum.body[i].kind == ScalarKind::Load) out.push_back(&sum.body[i]);
      }
    }
    return out;
  }

  // After the element loop: the vector stores of loop li.
  void print_vector_stores(size_t li, sym::Expr v, sym::Expr base, int width,
                           const std::string& ind) {
    std::set<std::string> done;
    for (const Store& st : k_.loops[li].stores) {
      const std::string key = access_key(st.buffer, st.index);
      auto it = vec_->stores.find(key);
      if (it == vec_->stores.end() || !done.insert(key).second) continue;
      os_ << ind << "*reinterpret_cast<" << vec_type(st.buffer, width) << "*>("
          << ptr_name(p_.buffers[size_t(st.buffer)]) << " + ("
          << sz_.expr(sym::subs(st.index, {{v, base}})) << ")) = " << it->second << ";\n";
    }
  }

  // Whether the kernel reads what it stores elsewhere than where it stores
  // it: a later loop re-reading what an earlier one stored, or a loop
  // reading another element of a buffer it stores. A loop that reads each
  // element it then overwrites (a result written in place, Note [Results
  // written in place] in memory_plan.h) does not count: its vectors load
  // before they store, element for element.
  bool reads_own_output() const {
    std::set<int> stored_before;
    for (const Loop& l : k_.loops) {
      for (const ScalarNode& s : l.body) {
        if (s.kind != ScalarKind::Load) continue;
        if (stored_before.count(s.buffer)) return true;
        for (const Store& st : l.stores)
          if (st.buffer == s.buffer && sym::compare(st.index, s.index) != 0) return true;
      }
      for (const Store& st : l.stores) stored_before.insert(st.buffer);
    }
    return false;
  }

  // Note [Small pointwise kernels]
  // A pointwise kernel over few elements is one thread's latency, not the
  // memory's rate: 50 pointwise ops on 1024 floats (ten rounds of sin, cos
  // and relu) took one 256-thread block of 4-wide vectors, so one
  // multiprocessor ran every element, each thread four chains of twenty
  // sin/cos in turn, while 131 others idled. When the grid would not give
  // every multiprocessor a block, blocks shrink to kSpreadMinThreads threads,
  // then vectors narrow, until it does or each thread has one element: that
  // kernel runs 16 blocks of 64 threads. Kernels of many blocks keep their
  // 16-byte vectors and 256-thread blocks. Static code only: size-generic
  // text keeps one block size for every size. config.cuda.spread_small.
  static constexpr int kSpreadMinThreads = 64;
  static void spread_small(int64_t n, int* width, int* threads) {
    auto blocks = [&] { return (n / *width + *threads - 1) / *threads; };
    while (*threads > kSpreadMinThreads && blocks() < kMultiprocessors) *threads /= 2;
    while (*width > 1 && blocks() < kMultiprocessors) *width /= 2;
  }

  // No reduction: one grid-stride loop over every element; each element runs
  // every loop of the kernel in order (a later loop re-reads only elements
  // this thread stored). Static kernels whose accesses allow it take
  // `width` neighbouring elements a step instead, when the pointers are
  // aligned (Note [Vectors and registers on the GPU]).
  void print_pointwise(CudaLaunch* launch) {
    const int64_t n = k_.outer_numel() * k_.inner_numel();
    std::vector<sym::Expr> vars = k_.outer, sizes = k_.outer_sizes;
    vars.insert(vars.end(), k_.inner.begin(), k_.inner.end());
    sizes.insert(sizes.end(), k_.inner_sizes.begin(), k_.inner_sizes.end());
    std::vector<size_t> all(k_.loops.size());
    for (size_t li = 0; li < all.size(); ++li) all[li] = li;
    int width = 1;
    // Size-generic text takes vectors too where this size's extent and
    // accesses allow them (the sizes that divide alike share the text), its
    // vector count a parameter; one vector a thread a step.
    if (!vars.empty() && sizes.back().is_const() && !reads_own_output() &&
        k_.scratch_in_output.empty())
      width = vector_width(all, vars.back(), sizes.back().value(),
                           /*in_generic=*/options_.cuda_generic_rows);
    if (options_.cuda_spread_small && !sz_.generic()) spread_small(n, &width, &launch->threads);
    stream_loads_ = options_.cuda_streaming_loads;
    const int64_t nvec = n / width;
    // Vectors a thread takes a step (config.cuda.pointwise_vectors_per_thread),
    // only where the grid keeps a few rounds of blocks.
    int64_t per_thread = width > 1 && !sz_.generic() ? options_.cuda_pointwise_vectors : 1;
    while (per_thread > 1 && nvec / (launch->threads * per_thread) < 4 * kMultiprocessors)
      per_thread /= 2;
    launch->blocks = (nvec + launch->threads * per_thread - 1) / (launch->threads * per_thread);
    std::string ind = "  ";
    if (width > 1) {
      const sym::Expr v = vars.back();
      const sym::Expr base = sym::index_var("ig_v0", sizes.back());
      print_alignment_check(all, v, width, "  ");
      os_ << "  if (ig_aligned) {\n";
      vec_.emplace();
      std::vector<sym::Expr> head = vars;
      head.back() = base;
      std::string in = "      ";
      if (per_thread > 1) {
        // Vector u of a thread's step is a block's width after vector u - 1,
        // so a warp's accesses stay neighbours; the guard only where the
        // steps do not divide the vectors.
        const bool whole = nvec % (launch->threads * per_thread) == 0;
        os_ << "    for (" << it_ << " ig_q0 = " << it_ << "(blockIdx.x) * " << it_ << "(blockDim.x) * "
            << per_thread << " + " << it_ << "(threadIdx.x); ig_q0 < " << nvec << "; ig_q0 += " << it_
            << "(gridDim.x) * " << it_ << "(blockDim.x) * " << per_thread << ") {\n";
        os_ << "#pragma unroll\n      for (int ig_u = 0; ig_u < " << per_thread << "; ++ig_u) {\n";
        os_ << "        const " << it_ << " ig_q = ig_q0 + ig_u * " << it_ << "(blockDim.x);\n";
        if (!whole) os_ << "        if (ig_q >= " << nvec << ") break;\n";
        in = "        ";
      } else {
        os_ << "    for (" << it_ << " ig_q = " << it_ << "(blockIdx.x) * " << it_
            << "(blockDim.x) + " << it_ << "(threadIdx.x); ig_q < " << sz_.integer(nvec)
            << "; ig_q += " << it_ << "(gridDim.x) * " << it_ << "(blockDim.x)) {\n";
      }
      os_ << in << "const " << it_ << " ig_i = ig_q * " << width << ";\n";
      print_unravel(head, sizes, "ig_i", in);
      const std::string in2 = in + "  ";
      for (size_t li : all) {
        print_vector_accesses(li, v, base, width, in);
        os_ << "#pragma unroll\n" << in << "for (int ig_j = 0; ig_j < " << width << "; ++ig_j) {\n";
        os_ << in2 << "const " << it_ << " " << var(v) << " = ig_v0 + ig_j;\n";
        print_body(li, in2, false);
        os_ << in << "}\n";
        print_vector_stores(li, v, base, width, in);
      }
      if (per_thread > 1) os_ << "      }\n";
      os_ << "    }\n  } else {\n";
      vec_.reset();
      ind = "    ";
    }
    os_ << ind << "for (" << it_ << " ig_i = " << it_ << "(blockIdx.x) * " << it_
        << "(blockDim.x) + " << it_ << "(threadIdx.x); ig_i < " << numel(sizes, n)
        << "; ig_i += " << it_ << "(gridDim.x) * " << it_ << "(blockDim.x)) {\n";
    print_unravel(vars, sizes, "ig_i", ind + "  ");
    declare_scratch(ind + "  ");
    for (size_t li = 0; li < k_.loops.size(); ++li) print_body(li, ind + "  ", false);
    os_ << ind << "}\n";
    if (width > 1) os_ << "  }\n";
  }

  // Whether the kernel reduces columns: every load that moves with the
  // reduced (inner) dims moves element by element with the last outer dim
  // and not with the innermost inner one (LayerNorm's weight and bias
  // gradients: sums over rows). A block per row would read each column
  // with a stride; print_columns reads rows of neighbouring columns.
  bool is_column_kernel() const {
    if (k_.outer.empty() || k_.inner.empty() || !k_.scratch_in_output.empty()) return false;
    bool any = false;
    for (const Loop& l : k_.loops) {
      if (!l.spills.empty()) return false;
      if (!l.inner) continue;
      for (const ScalarNode& s : l.body) {
        if (s.kind != ScalarKind::Load) continue;
        bool moves = false, across = false;
        for (const sym::Expr& r : k_.inner) moves = moves || involves(s.index, r);
        for (const sym::Expr& o : k_.outer) across = across || involves(s.index, o);
        // A value every column of a row shares (layer_norm's mean and rstd
        // in its weight gradient) is one address for the warp: a broadcast.
        if (!moves || !across) continue;
        if (!access_form(s.index, k_.outer.back()).unit ||
            access_form(s.index, k_.inner.back()).unit)
          return false;
        any = true;
      }
    }
    return any;
  }

  // A column kernel: a block takes cw = min(32, blockDim.x) neighbouring
  // outer iterations (columns), thread t column t % cw and every lanes-th
  // inner iteration from t / cw, so a warp reads cw neighbouring elements of
  // one row; ig_column_reduce folds the lanes of each column. Few columns
  // split their rows over several blocks (Note [Split column reductions]).
  // Where the columns allow it a thread takes `width` neighbouring columns
  // and reads them as one vector (Note [Vectors of columns]).
  void print_columns(CudaLaunch* launch) {
    const int64_t cols = k_.outer_numel(), inner = k_.inner_numel();
    const int width = column_width();
    launch->threads = kColumns * kColumnLanes;
    const int64_t groups = (cols + kColumns * width - 1) / (kColumns * width);
    // split: the split form (Note [Split column reductions]), `splits` >= 1 ranges
    const int64_t split_ranges = column_splits(groups, inner);
    const bool split = split_ranges >= 1;
    const int64_t splits = std::max<int64_t>(split_ranges, 1);
    launch->blocks = groups * splits;
    os_ << "  const int ig_cw = blockDim.x < " << kColumns << " ? int(blockDim.x) : " << kColumns
        << ";\n";
    os_ << "  const int ig_lanes = int(blockDim.x) / ig_cw;\n";
    os_ << "  const int ig_ty = int(threadIdx.x) / ig_cw;\n";
    const std::string ncols = numel(k_.outer_sizes, cols);
    const std::string span = width > 1 ? "(ig_cw * " + std::to_string(width) + ")" : "ig_cw";
    const std::vector<size_t> passes = inner_loops();
    const sym::Expr v = k_.outer.back();
    if (width > 1) print_alignment_check(passes, v, width, "  ");
    if (split) {
      print_split_workspace(launch, cols, splits);
      os_ << "  const " << it_ << " ig_groups = (" << ncols << " + " << span << " - 1) / " << span
          << ";\n";
      os_ << "  __shared__ bool ig_last;\n";
      os_ << "  for (" << it_ << " ig_item = blockIdx.x; ig_item < ig_groups * "
          << sz_.count(splits) << "; ig_item += gridDim.x) {\n";
      os_ << "    const " << it_ << " ig_split = ig_item / ig_groups;\n";
      os_ << "    const " << it_ << " ig_c0 = (ig_item % ig_groups) * " << span << ";\n";
    } else {
      os_ << "  for (" << it_ << " ig_c0 = " << it_ << "(blockIdx.x) * " << span << "; ig_c0 < "
          << ncols << "; ig_c0 += " << it_ << "(gridDim.x) * " << span << ") {\n";
    }
    os_ << "    const " << it_ << " ig_o = ig_c0 + " << it_ << "(threadIdx.x) % ig_cw"
        << (width > 1 ? " * " + std::to_string(width) : "") << ";\n";
    os_ << "    const bool ig_live = ig_o < " << ncols << " && ig_ty < ig_lanes;\n";
    os_ << "    const " << it_ << " ig_col = ig_live ? ig_o : ig_c0;\n";
    // With vectors the last column variable is the lane's, ig_v0 + ig_j.
    std::vector<sym::Expr> head = k_.outer;
    const sym::Expr base = sym::index_var("ig_v0", k_.outer_sizes.back());
    if (width > 1) head.back() = base;
    print_unravel(head, k_.outer_sizes, "ig_col", "    ");
    acc_lanes_ = width;
    auto lanes = [&](const std::string& ind, const std::function<void(const std::string&)>& body) {
      if (width == 1) return body(ind);
      os_ << lane_loop(ind, width) << " {\n";
      os_ << ind << "  const " << it_ << " " << var(v) << " = ig_v0 + ig_j;\n";
      body(ind + "  ");
      os_ << ind << "}\n";
    };
    std::string ind = "    ";
    for (size_t li = 0; li < k_.loops.size(); ++li) {
      const Loop& l = k_.loops[li];
      if (!l.inner) {
        lanes(ind, [&](const std::string& in) {
          print_nodes(li, in, Part::All);
          for (const Store& st : l.stores)
            os_ << in << "if (ig_live && ig_ty == 0) " << ptr_name(p_.buffers[size_t(st.buffer)])
                << "[" << sz_.expr(st.index) << "] = " << tmp(li, st.value) << ";\n";
        });
        continue;
      }
      print_acc_init(li, ind);
      // A value of the columns alone goes before the rows (per lane with vectors).
      if (width == 1) print_nodes(li, ind, Part::Invariant);
      std::string lo = "ig_ty", hi = numel(k_.inner_sizes, inner);
      const int64_t chunk = (inner + splits - 1) / splits;
      if (split) {
        lo = "ig_split * " + sz_.split_value(chunk) + " + ig_ty";
        hi = "(ig_split + 1) * " + sz_.split_value(chunk) + " < " + hi + " ? (ig_split + 1) * " +
             sz_.split_value(chunk) + " : " + numel(k_.inner_sizes, inner);
        os_ << ind << "const " << it_ << " ig_hi = " << hi << ";\n";
        hi = "ig_hi";
      }
      // Row ig_e of the thread's columns: a vector where the pointers are
      // aligned, element by element where not.
      auto row = [&](bool vectors, const std::string& in) {
        print_unravel(k_.inner, k_.inner_sizes, "ig_e", in);
        if (width == 1) {
          print_body(li, in, false, Part::PerElement);
          print_accumulate(li, in);
        } else {
          if (vectors) {
            vec_.emplace();
            print_vector_accesses(li, v, base, width, in);
          }
          lanes(in, [&](const std::string& i2) {
            print_body(li, i2, false, Part::All);
            print_accumulate(li, i2);
          });
          if (vectors) print_vector_stores(li, v, base, width, in);
          vec_.reset();
        }
      };
      auto rows = [&](bool vectors) {
        os_ << "#pragma unroll 4\n";
        os_ << ind << "  for (" << it_ << " ig_e = " << lo << "; ig_e < " << hi
            << "; ig_e += ig_lanes) {\n";
        row(vectors, ind + "    ");
        os_ << ind << "  }\n";
      };
      // Note [Whole ranges the compiler can hoist], for a split column
      // kernel: a whole range on a block of the planned size (ig_lanes =
      // kColumnLanes) runs a literal count of rows a thread.
      const int64_t steps = chunk / kColumnLanes, full = inner / chunk;
      const bool hoist =
          options_.cuda_row_hoist_chunks && splits > 1 && steps >= 1 && !sz_.generic();
      auto whole_rows = [&](bool vectors) {
        print_whole_range("ig_e0", "ig_split * " + std::to_string(chunk) + " + ig_ty", "ig_e", steps,
                          kColumnLanes, chunk % kColumnLanes, "ig_ty", ind + "  ",
                          [&](const std::string& in) { row(vectors, in); });
      };
      const std::string planned = "blockDim.x == " + std::to_string(kColumns * kColumnLanes) + "u" +
                                  (full < splits ? " && ig_split < " + std::to_string(full) : "");
      const std::string live = width > 1 ? "ig_live && ig_aligned" : "ig_live";
      if (hoist) {
        os_ << ind << "if (" << live << " && " << planned << ") {\n";
        whole_rows(width > 1);
        os_ << ind << "} else if (" << live << ") {\n";
      } else {
        os_ << ind << "if (" << live << ") {\n";
      }
      rows(width > 1);
      if (width > 1) {
        os_ << ind << "} else if (ig_live) {\n";
        rows(false);
      }
      os_ << ind << "}\n";
      print_block_reduce(li, ind, /*columns=*/true);
      if (split) {
        print_split_fold(li, splits, width);
        ind = "      ";
        continue;
      }
      if (!l.stores.empty() && li + 1 < k_.loops.size()) os_ << ind << "__syncthreads();\n";
    }
    acc_lanes_ = 1;
    if (split) os_ << "    }\n    __syncthreads();  // ig_last is the next item's\n";
    os_ << "  }\n";
  }

  // Note [Vectors of columns]
  // A column kernel's warp reads 32 neighbouring columns of a row: 64 bytes
  // of bfloat16, one 2-byte load a thread. Where every access that moves
  // with the columns moves element by element (and the columns divide into
  // vectors of 16 bytes), a thread takes `width` neighbouring columns
  // instead and loads each row's part of them as one vector: a warp reads
  // 512 bytes of a bfloat16 row with a 16-byte load a thread, and keeps an
  // accumulator per column (acc<r>[width]). Misaligned pointers (a view's
  // offset) take the same columns element by element. Values of the columns
  // alone (a weight) are computed per lane inside the row loop.
  // config.cuda.column_vectors.
  int column_width() const {
    if (!options_.cuda_column_vectors) return 1;
    for (const Loop& l : k_.loops)
      if (!l.spills.empty()) return 1;
    const std::vector<size_t> passes = inner_loops();
    const sym::Expr& last = k_.outer_sizes.back();
    if (!last.is_const()) return 1;
    return vector_width(passes, k_.outer.back(), last.value(), /*in_generic=*/true);
  }

  // Note [Split column reductions]
  // A column kernel has a block per 32 columns, so a reduction over the rows
  // of few columns (layer_norm's weight and bias gradients: 4096 columns of
  // 16384 rows; a bias gradient: 768 columns) would run on fewer blocks than
  // the GPU has multiprocessors, each streaming a long column alone. Such a
  // kernel splits its rows into `splits` ranges, one block per (columns,
  // range) item. Each block folds its range, writes the partial results to a
  // workspace the launch allocates (CudaLaunch::workspace_bytes), and counts
  // itself in its column group's counter (zeroed before the launch); the
  // block that counts last folds the partials in range order and runs the
  // loops after the reduction (the casts and stores). The order of the fold
  // does not depend on which block finishes last, so the bits do not change
  // from run to run. Only a kernel with one pass over the rows splits: a
  // second pass would need every range's result first.
  static constexpr int kColumns = 32, kColumnLanes = 16;

  // How many ranges the rows split into; 0 when the kernel cannot split.
  // Size-generic code takes the split form whenever the kernel can split,
  // with one range where static code would not split: that costs each block
  // a partial written and read back, and spares a second text for the
  // sizes on either side of the threshold (a batch's bias gradient over 37
  // and over 130 rows).
  int64_t column_splits(int64_t groups, int64_t inner) const {
    // Enough blocks for a few per multiprocessor (H100/H200: 132), each
    // thread folding at least config.cuda.column_split_rows_per_thread rows
    // of its range (4; 16 left a bias gradient over 4096 rows of 768
    // columns 48 blocks, each thread 16 rows in sequence: docs/benchmarks.md
    // run 15).
    constexpr int64_t kTargetBlocks = 1024;
    const int64_t kMinPerThread = options_.cuda_column_split_rows;
    int passes = 0;
    for (size_t li = 0; li < k_.loops.size(); ++li) {
      const Loop& l = k_.loops[li];
      if (l.inner) {
        ++passes;
        for (int r : l.reductions)
          if (!is_partial_dtype(k_.reductions[size_t(r)].dtype)) return 0;
      } else if (passes == 0 && !l.stores.empty()) {
        return 0;  // a store before the reduction would run in every range
      }
    }
    if (passes != 1) return 0;
    const int64_t floor = sz_.generic() ? 1 : 0;
    if (groups >= kTargetBlocks / 4) return floor;
    const int64_t splits =
        std::min((kTargetBlocks + groups - 1) / groups, inner / (kColumnLanes * kMinPerThread));
    return splits >= 2 ? splits : floor;
  }

  // The workspace: a counter per column group (the first zeroed_bytes),
  // then for each reduction its partials, [splits][columns].
  void print_split_workspace(CudaLaunch* launch, int64_t cols, int64_t splits) {
    auto round = [](int64_t b) { return (b + 127) / 128 * 128; };
    int64_t offset = round(cols * int64_t(sizeof(uint32_t)));
    launch->zeroed_bytes = offset;
    os_ << "  unsigned* const ig_count = reinterpret_cast<unsigned*>(ig_ws);\n";
    for (const Loop& l : k_.loops) {
      if (!l.inner) continue;
      for (int r : l.reductions) {
        const Reduction& red = k_.reductions[size_t(r)];
        os_ << "  " << cuda_type(red.dtype) << "* const ig_part" << r << " = reinterpret_cast<"
            << cuda_type(red.dtype) << "*>(ig_ws + " << sz_.split_value(offset) << ");\n";
        offset += round(splits * cols * int64_t(element_size(red.dtype)));
      }
    }
    launch->workspace_bytes = offset;
  }

  // After loop li's block fold: the partials out, the last block of the
  // column group in. The kernel's remaining loops run inside the `if`.
  void print_split_fold(size_t li, int64_t splits, int width) {
    const Loop& l = k_.loops[li];
    const std::string cols = numel(k_.outer_sizes, k_.outer_numel());
    // With vectors a thread's columns are ig_o + ig_j (ig_col + ig_j).
    const std::string lane = width > 1 ? " + ig_j" : "";
    auto lanes = [&](const std::string& ind) {
      if (width > 1)
        os_ << lane_loop(ind, width);
    };
    for (int r : l.reductions) {
      lanes("    ");
      os_ << (width > 1 ? "\n  " : "") << "    if (ig_live && ig_ty == 0) ig_part" << r
          << "[ig_split * " << cols << " + ig_o" << lane << "] = " << acc(r) << ";\n";
    }
    print_last_block(
        "ig_c0 / " + (width > 1 ? "(ig_cw * " + std::to_string(width) + ")" : std::string("ig_cw")),
        splits, "    ");
    print_partials_fold(l.reductions, "ig_col", cols, splits, /*columns=*/true, "      ");
  }

  // After a split kernel's partials are out: its block counts itself in
  // ig_count[counter], and the item's last block (ig_last) enters the `if`
  // that the caller closes.
  void print_last_block(const std::string& counter, int64_t splits, const std::string& ind) {
    os_ << ind << "__threadfence();\n" << ind << "__syncthreads();\n";
    os_ << ind << "if (threadIdx.x == 0) ig_last = atomicAdd(&ig_count[" << counter
        << "], 1u) == "
        << (sz_.generic() ? "unsigned(" + sz_.count(splits - 1) + ")"
                          : std::to_string(splits - 1) + "u")
        << ";\n";
    os_ << ind << "__syncthreads();\n";
    os_ << ind << "if (ig_last) {\n" << ind << "  __threadfence();\n";
  }

  // Accumulators rs, in an item's last block, as the fold of their `splits`
  // partials ig_part<r>[base + s * stride], shared among the threads that
  // hold the same result: in a row kernel the block's (thread t folds
  // partials t, t + blockDim.x, ..., then ig_block_reduce), in a column
  // kernel a column's lanes (lane y folds y, y + ig_lanes, ..., then
  // ig_column_reduce_n; with vectors, each of the thread's columns
  // base + ig_j). Each thread's share is in range order and the final
  // fold's order is fixed, so the bits do not depend on which block ended
  // last. One thread folding all 1024 of mse's partials in a chain took
  // about 26 us of its 191 (the H100, docs/benchmarks.md run 15); the
  // block's threads take four each. Every accumulator's loads come before
  // any fold across threads, and they are plain L2 loads (ig_load_l2), not
  // volatile ones, so a thread has them all in flight at once: a column
  // kernel that read each column's partials and folded them before reading
  // the next column's waited for L2 16 times in a row (GPT-2's layer-norm
  // weight gradients: docs/benchmarks.md run 16).
  void print_partials_fold(const std::vector<int>& rs, const std::string& base,
                           const std::string& stride, int64_t splits, bool columns,
                           const std::string& ind) {
    const bool vec = columns && acc_lanes_ > 1;
    const std::string lane = vec ? "[ig_j]" : "";
    auto lanes = [&](const std::string& in) { return vec ? lane_loop(in, acc_lanes_) + " " : in; };
    for (int r : rs) {
      const Reduction& red = k_.reductions[size_t(r)];
      os_ << lanes(ind) << "acc" << r << lane << " = " << combine_init(red.combine, red.dtype)
          << ";\n";
    }
    os_ << "#pragma unroll 4\n";
    os_ << ind << "for (int ig_s = " << (columns ? "ig_ty" : "int(threadIdx.x)") << "; ig_s < "
        << sz_.count(splits) << "; ig_s += " << (columns ? "ig_lanes" : "int(blockDim.x)")
        << ") {\n";
    for (int r : rs) {
      const Reduction& red = k_.reductions[size_t(r)];
      os_ << lanes(ind + "  ") << "acc" << r << lane << " = " << combine_functor(red.combine)
          << "()(acc" << r << lane << ", ig_load_l2(ig_part" << r << " + " << base
          << (vec ? " + ig_j" : "") << " + ig_s * " << stride << "));\n";
    }
    os_ << ind << "}\n";
    print_across_threads(rs, ind, columns);
  }

  // Whether a row's extents are known constants and its values come from
  // memory alone (no ScalarKind::Index): what the vector and register paths
  // of a row need.
  bool static_inner() const {
    return !k_.inner.empty() && !has_index_values() &&
           std::all_of(k_.inner_sizes.begin(), k_.inner_sizes.end(),
                       [](const sym::Expr& e) { return e.is_const(); });
  }

  // Note [Split row reductions]
  // A row kernel has a block per row, so a reduction of few long rows (a
  // full sum or mean of a large tensor -- a loss, a gradient's norm -- is one
  // row) would run on one block each: one multiprocessor streaming the whole
  // tensor. Such a kernel splits each row into `splits` ranges, one block per
  // (row, range) item, as column reductions split their rows (Note [Split
  // column reductions]): each block folds its range, writes its partial
  // results to the launch's workspace ([splits][rows] per reduction) and
  // counts itself in its row's counter; the block that counts last folds the
  // partials in range order and runs the loops after the reduction (the
  // casts and stores). The fold's order does not depend on which block ends
  // last, so the bits are the same on every run. Only a kernel with one pass
  // over the row and nothing stored before it splits (a second pass would
  // need every range's result first), and only with no rows' workers.
  // config.cuda.split_rows.
  int64_t row_splits(int64_t rows, int64_t inner) const {
    constexpr int64_t kMaxRows = 256;
    if (!options_.cuda_split_rows || k_.workers > 0 || k_.columns ||
        !folds_.empty() || rows <= 0 || rows >= kMaxRows)
      return 1;
    int passes = 0;
    for (const Loop& l : k_.loops) {
      if (l.inner) {
        ++passes;
        if (!l.spills.empty()) return 1;
        for (int r : l.reductions)
          if (!is_partial_dtype(k_.reductions[size_t(r)].dtype)) return 1;
      } else if (passes == 0 && !l.stores.empty()) {
        return 1;
      }
    }
    if (passes != 1) return 1;
    const int64_t target = options_.cuda_split_rows_blocks;
    const int64_t splits = std::min((target + rows - 1) / rows,
                                    inner / options_.cuda_split_rows_min_elements);
    return splits >= 2 ? splits : 1;
  }

  // A whole range's loop (Note [Whole ranges the compiler can hoist]):
  // `first` = `start` (the thread's first item), then `steps` items `var` =
  // first + k * stride in a literal-count loop, then, when `rest` lanes have
  // one more, that item under `lane < rest` (an unsigned literal for an
  // unsigned lane: threadIdx.x); body(in) prints an item's work at indent
  // `in`.
  void print_whole_range(const std::string& first, const std::string& start,
                         const std::string& var, int64_t steps, int64_t stride, int64_t rest,
                         const std::string& lane, const std::string& ind,
                         const std::function<void(const std::string&)>& body) {
    const std::string in = ind + "  ";
    os_ << ind << "const " << it_ << " " << first << " = " << start << ";\n";
    os_ << "#pragma unroll 4\n" << ind << "for (int ig_k = 0; ig_k < " << steps << "; ++ig_k) {\n";
    os_ << in << "const " << it_ << " " << var << " = " << first << " + " << it_ << "(ig_k) * "
        << stride << ";\n";
    body(in);
    os_ << ind << "}\n";
    if (rest > 0) {
      os_ << ind << "if (" << lane << " < " << rest << (lane == "threadIdx.x" ? "u" : "")
          << ") {\n";
      os_ << in << "const " << it_ << " " << var << " = " << first << " + " << steps * stride
          << ";\n";
      body(in);
      os_ << ind << "}\n";
    }
  }

  // Note [Whole ranges the compiler can hoist]
  // A split row kernel's range loop, `for (c = lo + threadIdx.x; c < hi; c
  // += blockDim.x)` unrolled four times, left the compiler an exit test
  // after every copy (it cannot know the count is a multiple of four), and a
  // load after an exit test waits for it: two 16-byte loads a thread in
  // flight for mse's ((a - b) ** 2).mean(), not eight (the PTX of the
  // H100's 191.5 us kernel; Triton's 173.5). As with a resident row's
  // chunks (Note [Chunks the compiler can hoist]), a range that is whole,
  // on a block of the planned size, runs a literal count of steps from
  // threadIdx.x, then one guarded step for a remainder; other ranges (the
  // last, partial one; a host emulation's blocks) keep the general loop.
  // config.cuda.row_hoist_chunks.

  // The split row kernel: items (row, range) in a grid-stride loop, each
  // block's range streamed in 16-byte vectors where the accesses and the
  // pointers allow (ranges are whole vectors), else element by element;
  // then the partials' fold.
  void print_rows_split(CudaLaunch* launch, int64_t rows, int64_t splits) {
    const int64_t inner = k_.inner_numel();
    const std::vector<size_t> passes = inner_loops();
    const int width = static_inner()
                          ? vector_width(passes, k_.inner.back(), k_.inner_sizes.back().value(),
                                         /*in_generic=*/true)
                          : 1;
    const int64_t nvec = inner / width;
    const int64_t chunkv = (nvec + splits - 1) / splits, chunk = chunkv * width;
    launch->blocks = rows * splits;
    stream_loads_ = options_.cuda_streaming_loads;
    print_split_workspace(launch, rows, splits);
    if (width > 1) print_alignment_check(passes, k_.inner.back(), width, "  ");
    os_ << "  __shared__ bool ig_last;\n";
    os_ << "  for (" << it_ << " ig_item = blockIdx.x; ig_item < " << sz_.split_value(rows * splits)
        << "; ig_item += gridDim.x) {\n";
    os_ << "    const " << it_ << " ig_row = ig_item / " << sz_.split_value(splits) << ";\n";
    os_ << "    const " << it_ << " ig_split = ig_item % " << sz_.split_value(splits) << ";\n";
    print_unravel(k_.outer, k_.outer_sizes, "ig_row", "    ");
    std::string ind = "    ";
    declare_scratch(ind);
    // for (v = ig_split * n + threadIdx.x; v < min((ig_split + 1) * n, total); ...)
    // (In size-generic code n and total are parameters.)
    auto range_loop = [&](const std::string& in, const std::string& var, int64_t n, int64_t total) {
      const std::string lo = "ig_split * " + sz_.split_value(n);
      const std::string hi = lo + " + " + sz_.split_value(n);
      const std::string end = sz_.integer(total);
      os_ << in << "for (" << it_ << " " << var << " = " << lo << " + " << it_
          << "(threadIdx.x); " << var << " < (" << hi << " < " << end << " ? " << hi << " : "
          << end << "); " << var << " += blockDim.x) {\n";
    };
    bool folded = false;
    for (size_t li = 0; li < k_.loops.size(); ++li) {
      if (!k_.loops[li].inner) {
        print_body(li, ind, true);
        print_pass_barrier(li, ind);
        continue;
      }
      print_acc_init(li, ind);
      print_nodes(li, ind, Part::Invariant);
      auto scalar = [&](const std::string& in) {
        range_loop(in, "ig_e", chunk, inner);
        print_unravel(k_.inner, k_.inner_sizes, "ig_e", in + "  ");
        print_body(li, in + "  ", false, Part::PerElement);
        print_accumulate(li, in + "  ");
        os_ << in << "}\n";
      };
      if (width > 1) {
        const std::string in2 = ind + "  ", in3 = ind + "    ";
        const sym::Expr v = k_.inner.back();
        const sym::Expr base = sym::index_var("ig_v0", k_.inner_sizes.back());
        std::vector<sym::Expr> head = k_.inner;
        head.back() = base;
        // Vector ig_c of the row: its elements' lanes.
        auto vector_body = [&](const std::string& in) {
          os_ << in << "const " << it_ << " ig_e0 = ig_c * " << width << ";\n";
          print_unravel(head, k_.inner_sizes, "ig_e0", in);
          vec_.emplace();
          print_lanes(li, v, base, width, in);
          vec_.reset();
        };
        // Note [Whole ranges the compiler can hoist]: a full range on a
        // block of the planned size runs a literal count of steps a thread.
        const int64_t threads = launch->threads, steps = chunkv / threads,
                      full = nvec / chunkv;
        // (Not in size-generic code: the counts are the size's.)
        if (options_.cuda_row_hoist_chunks && steps >= 1 && !sz_.generic()) {
          os_ << ind << "if (ig_aligned && blockDim.x == " << threads << "u"
              << (full < splits ? " && ig_split < " + std::to_string(full) : std::string()) << ") {\n";
          print_whole_range("ig_c0", "ig_split * " + std::to_string(chunkv) + " + " + it_ +
                                             "(threadIdx.x)",
                            "ig_c", steps, threads, chunkv % threads, "threadIdx.x", in2,
                            vector_body);
          os_ << ind << "} else if (ig_aligned) {\n";
        } else {
          os_ << ind << "if (ig_aligned) {\n";
        }
        os_ << "#pragma unroll 4\n";
        range_loop(in2, "ig_c", chunkv, nvec);
        vector_body(in3);
        os_ << in2 << "}\n" << ind << "} else {\n";
        scalar(in2);
        os_ << ind << "}\n";
      } else {
        scalar(ind);
      }
      print_block_reduce(li, ind);
      print_row_split_fold(li, rows, splits, ind);
      ind += "  ";
      folded = true;
      print_pass_barrier(li, ind);
    }
    IGNIS_INTERNAL_ASSERT(folded, "codegen_cuda: a split row kernel with no pass over the row");
    os_ << "    }\n    __syncthreads();  // ig_last is the next item's\n  }\n";
  }

  // After the one pass's block fold: the partials out, the row's last block
  // in (the `if` the remaining loops run inside, closed by the caller).
  void print_row_split_fold(size_t li, int64_t rows, int64_t splits, const std::string& ind) {
    const Loop& l = k_.loops[li];
    for (int r : l.reductions)
      os_ << ind << "if (threadIdx.x == 0) ig_part" << r << "[ig_split * " << sz_.integer(rows)
          << " + ig_row] = " << acc(r) << ";\n";
    print_last_block("ig_row", splits, ind);
    print_partials_fold(l.reductions, "ig_row", sz_.integer(rows), splits, /*columns=*/false,
                        ind + "  ");
  }

  // With reductions: a block per row (an outer iteration), each loop a pass
  // of the block over the row's inner elements. A static row that fits in
  // the block's registers is held there (Note [Vectors and registers on
  // the GPU]); others stream.
  void print_rows(CudaLaunch* launch) {
    const int64_t rows = k_.outer_numel(), inner = k_.inner_numel();
    if (const int64_t splits = row_splits(rows, inner); splits > 1)
      return print_rows_split(launch, rows, splits);
    launch->blocks = rows;
    int width = 1, chunks = 0;
    int64_t nvec = 0;
    Residency residency;
    const std::vector<size_t> passes = inner_loops();
    // Note [Resident rows in size-generic code]
    // Size-generic text serves every size that prints it, so its plan is
    // made for the row's bucket, the power of two at or above its vectors:
    // the block, chunks and registers of rows of 2049 to 4096 vectors are
    // those of 4096. A row of the bucket has more than half of them, so a
    // thread's chunks below that half need no guard (their loads issue
    // together, as static rows' hoisted chunks: Note [Chunks the compiler
    // can hoist]); the others are guarded by the row's own count, a
    // parameter. A row's vector width is its own (the sizes that divide
    // alike share it). Measured on the H100 (docs/benchmarks.md run 17),
    // streaming -> resident -> with the sure chunks: softmax 4096 x 4096
    // 0.255 -> 0.126 -> 0.109 ms (static 0.094), layer_norm 8192 x 1024
    // 0.261 -> 0.107 -> 0.100 (0.094): a resident row reads its input once
    // where a streaming one reads it on every pass and writes and reads a
    // scratch. The guards are what is left: a row that fills its bucket (a
    // power of two) prints them away, a text of its own
    // (config.cuda.generic_exact_rows), and runs at static code's speed
    // (run 18: softmax 0.093 against 0.105 guarded, static 0.094).
    const bool generic = sz_.generic();
    const bool statics = inner > 0 && !k_.columns && static_inner() &&
                         (!generic || options_.cuda_generic_rows);
    if (statics) {
      width = vector_width(passes, k_.inner.back(), k_.inner_sizes.back().value(), true);
      nvec = inner / width;
      const int64_t plan_nvec = generic ? int64_t(std::bit_ceil(uint64_t(nvec))) : nvec;
      // config.cuda.row_vectors_per_thread vectors a thread (four by
      // default: enough loads in flight, few registers), the block a whole
      // number of warps.
      const int64_t per_thread = std::max<int64_t>(1, options_.cuda_row_vectors);
      const int64_t warps = ((plan_nvec + per_thread - 1) / per_thread + 31) / 32;
      const int threads = int(std::min<int64_t>(kMaxBlockThreads, 32 * std::max<int64_t>(1, warps)));
      chunks = int((plan_nvec + threads - 1) / threads);
      if (chunks > kMaxRowChunks) chunks = 0;
      // What the row keeps must fit the registers a thread of a block this
      // large may have, with room for the pass's own values: else the
      // prefetches are dropped, then spills are recomputed, and if even the
      // loads do not fit, the row streams (a 50304-wide bfloat16 softmax
      // held its exps too: 208 bytes of local-memory spills a thread at
      // 1024 threads).
      const int64_t budget = std::min<int64_t>(255, kRegistersPerSM / threads) - kRegisterReserve;
      if (chunks > 0) {
        bool fits = false;
        for (int attempt = options_.cuda_row_prefetch ? 0 : 1; attempt < 3 && !fits; ++attempt) {
          residency = plan_residency(passes, /*keep_spills=*/attempt < 2,
                                     /*prefetch=*/attempt == 0, k_.inner.back());
          // (a worker's column-sum partials are held too: Note [Column sums in a row kernel])
          const int64_t regs = residency.registers(chunks, width) +
                               int64_t(folds_.size()) * chunks * width;
          fits = regs <= budget &&
                 (residency.prefetch.empty() || row_waves(rows, threads, regs) <= 2);
        }
        if (!fits) chunks = 0;
        // Note [Occupancy before kept values]
        if (fits && options_.cuda_row_occupancy && !residency.spilled.empty()) {
          const int64_t regs = residency.registers(chunks, width);
          Residency lean = plan_residency(passes, /*keep_spills=*/false, /*prefetch=*/false,
                                          k_.inner.back());
          const int64_t lean_regs = lean.registers(chunks, width);
          if (row_waves(rows, threads, regs) > kManyRounds &&
              blocks_per_sm(threads, lean_regs) > blocks_per_sm(threads, regs))
            residency = std::move(lean);
        }
      }
      // Note [Online max and sum of exps]
      online_ = options_.cuda_online_softmax ? online_pair() : std::nullopt;
      if (online_ && chunks > 0) {
        const int64_t regs = residency.registers(chunks, width);
        if (blocks_per_sm(threads, regs) <= 1 && row_waves(rows, threads, regs) > kManyRounds)
          chunks = 0;
        else
          online_.reset();
      }
      if (chunks > 0) {
        launch->threads = threads;
        if (options_.cuda_row_one_wave) launch->min_blocks = one_wave_blocks(rows, threads);
      }
    }
    // A row that streams moves vectors too where the pointers allow (in
    // size-generic code too, its vector count a parameter: GPT-2's loss over
    // 50304-wide logits streamed element by element there).
    const int stream_width = chunks == 0 && statics ? width : 1;
    if (chunks > 0 || stream_width > 1) {
      const sym::Expr v = k_.inner.back();
      if (width > 1) print_alignment_check(passes, v, width, "  ");
      else os_ << "  const bool ig_aligned = true;\n";
    }
    if (chunks > 0) {
      // Note [Chunks the compiler can hoist]: the resident path runs blocks
      // of exactly the planned size (a host emulation may run others: they
      // stream).
      if (options_.cuda_row_hoist_chunks) {
        row_threads_ = launch->threads;
        // A generic row has more than half its bucket's vectors, so the
        // chunks below that half are whole in every row of the bucket (all
        // of them in a row that fills it, with config.cuda.generic_exact_rows:
        // a text of its own).
        const uint64_t bucket = std::bit_ceil(uint64_t(nvec));
        row_sure_chunks_ = !generic || (options_.cuda_generic_exact_rows &&
                                        int64_t(chunks) * row_threads_ == nvec)
                               ? chunks
                               : int(bucket / 2 / row_threads_);
        os_ << "  const bool ig_resident = ig_aligned && blockDim.x == " << row_threads_ << "u;\n";
      } else {
        row_threads_ = 0;
        os_ << "  const bool ig_resident = ig_aligned && " << it_ << "(blockDim.x) * " << chunks
            << " >= " << sz_.integer(nvec) << ";\n";
      }
    }
    if (k_.workers > 0) {
      print_worker_rows(launch, rows, chunks, width);
    } else {
      os_ << "  for (" << it_ << " ig_row = blockIdx.x; ig_row < " << numel(k_.outer_sizes, rows)
          << "; ig_row += gridDim.x) {\n";
    }
    print_unravel(k_.outer, k_.outer_sizes, "ig_row", "    ");
    std::string ind = "    ";
    if (chunks > 0) {
      os_ << "    if (ig_resident) {\n";
      print_rows_in_registers(residency, width, chunks, nvec, "      ");
      os_ << "    } else {\n";
      ind = "      ";
    } else if (stream_width > 1) {
      os_ << "    if (ig_aligned) {\n";
      print_rows_streaming_vectors(stream_width, "      ");
      os_ << "    } else {\n";
      ind = "      ";
    }
    print_rows_streaming(ind);
    if (chunks > 0 || stream_width > 1) os_ << "    }\n";
    os_ << "  }\n";
    if (k_.workers > 0 && chunks > 0) print_worker_partials(chunks, width, nvec);
    online_.reset();
  }

  // Note [Column sums in a row kernel] (schedule.cpp): a block a worker,
  // its range of consecutive rows in turn. The block first sets its row of
  // each partials buffer to the identity; each element of that row is then
  // folded by the one thread that handles the element in every row (a
  // resident row's chunks and a streaming row's strides both fix it), so
  // no two threads touch it and the block's last row leaves it complete.
  // A resident row's thread holds its elements' partials in registers
  // (ig_fold<i>[chunk][lane]) and writes them once, after its rows; a
  // streaming row folds into the buffer, set to the identity first.
  //
  // A worker's rows run one after another, so the kernel takes as long as
  // its busiest multiprocessor: a grid of 1.33 rounds (layer norm's
  // backward over 16384 x 4096 bfloat16: 528 workers, 161 registers a
  // thread, three blocks a multiprocessor) left a third of the GPU idle for
  // the last round. So the grid decides the ranges: the rows split among
  // gridDim.x blocks, the partials' rows past the grid set to the identity
  // (which the fold then reads at no cost to its result), and a resident
  // kernel is launched as one round (CudaLaunch::one_round: as many blocks
  // as the driver's occupancy of the compiled kernel runs at once, at most
  // the workers). Any grid up to the workers is right (a capped launch, a
  // host emulation's).
  void print_worker_rows(CudaLaunch* launch, int64_t rows, int chunks, int width) {
    const int64_t workers = k_.workers;
    launch->blocks = workers;
    launch->one_round = chunks > 0;
    os_ << "  const " << it_ << " ig_w = blockIdx.x;  // a range of rows\n";
    os_ << "  const " << it_ << " ig_per = (" << rows << " + " << it_ << "(gridDim.x) - 1) / "
        << it_ << "(gridDim.x);\n";
    for (size_t i = 0; i < folds_.size() && chunks > 0; ++i) {
      const Store& st = *folds_[i];
      const Buffer& b = p_.buffers[size_t(st.buffer)];
      os_ << "  " << cuda_type(b.dtype) << " ig_fold" << i << "[" << chunks << "][" << width << "];\n";
      os_ << "#pragma unroll\n  for (int ig_k = 0; ig_k < " << chunks << "; ++ig_k)\n"
          << "#pragma unroll\n    for (int ig_j = 0; ig_j < " << width << "; ++ig_j) ig_fold" << i
          << "[ig_k][ig_j] = " << combine_init(*st.fold, b.dtype) << ";\n";
    }
    os_ << "  for (" << it_ << " ig_v = ig_w + " << it_ << "(gridDim.x); ig_v < " << workers
        << "; ig_v += " << it_ << "(gridDim.x)) {  // partials' rows past the grid\n";
    print_partials_identity("ig_v");
    os_ << "  }\n";
    os_ << (chunks > 0 ? "  if (!ig_resident) {\n" : "  {\n");
    print_partials_identity("ig_w");
    os_ << "    __syncthreads();\n  }\n";
    os_ << "  for (" << it_ << " ig_row = ig_w * ig_per; ig_row < " << rows
        << " && ig_row < (ig_w + 1) * ig_per; ++ig_row) {\n";
  }

  // Row `row` of each partials buffer set to its fold's identity by the
  // block's threads.
  void print_partials_identity(const std::string& row) {
    for (const Store* st : folds_) {
      const Buffer& b = p_.buffers[size_t(st->buffer)];
      const int64_t n = b.sizes.back().value();
      os_ << "    for (" << it_ << " ig_i = threadIdx.x; ig_i < " << n << "; ig_i += blockDim.x) "
          << ptr_name(b) << "[" << row << " * " << n << " + ig_i] = "
          << combine_init(*st->fold, b.dtype) << ";\n";
    }
  }

  // After a resident worker's rows: its registers' partials to its row of
  // each partials buffer (the chunks' elements, as the resident passes
  // number them).
  void print_worker_partials(int chunks, int width, int64_t nvec) {
    os_ << "  if (ig_resident) {\n#pragma unroll\n    for (int ig_k = 0; ig_k < " << chunks
        << "; ++ig_k) {\n";
    os_ << "      const " << it_ << " ig_c = " << it_ << "(ig_k) * "
        << (row_threads_ > 0 ? std::to_string(row_threads_) : it_ + "(blockDim.x)") << " + " << it_
        << "(threadIdx.x);\n";
    os_ << "      if (ig_c < " << sz_.integer(nvec) << ") {\n#pragma unroll\n        for (int ig_j = 0; ig_j < "
        << width << "; ++ig_j) {\n";
    for (size_t i = 0; i < folds_.size(); ++i) {
      const Buffer& b = p_.buffers[size_t(folds_[i]->buffer)];
      const int64_t n = b.sizes.back().value();
      os_ << "          " << ptr_name(b) << "[ig_w * " << sz_.integer(n) << " + ig_c * " << width
          << " + ig_j] = ig_fold" << i << "[ig_k][ig_j];\n";
    }
    os_ << "        }\n      }\n    }\n  }\n";
  }

  // `for` over a vector's lanes ig_j, unrolled (its body follows).
  static std::string lane_loop(const std::string& ind, int width) {
    return "#pragma unroll\n" + ind + "for (int ig_j = 0; ig_j < " + std::to_string(width) +
           "; ++ig_j)";
  }

  // The kernel's passes over the row (its inner loops), in order.
  std::vector<size_t> inner_loops() const {
    std::vector<size_t> out;
    for (size_t li = 0; li < k_.loops.size(); ++li)
      if (k_.loops[li].inner) out.push_back(li);
    return out;
  }

  // Which ig_fold array holds a folding store's partials.
  int fold_slot(int buffer) const {
    for (size_t i = 0; i < folds_.size(); ++i)
      if (folds_[i]->buffer == buffer) return int(i);
    return -1;
  }

  // About how many rounds of blocks a row kernel of `rows` rows runs in when
  // its threads hold `regs` registers of the row each (plus the reserve):
  // the blocks a multiprocessor holds at once, by threads and registers,
  // on H100/H200's 132 multiprocessors. Prefetching a later pass's loads
  // pays while a multiprocessor sees a row or two (the rows' latency is the
  // kernel's time: GPT-2's 768-wide layer_norm, 9.6 -> 8.2 us on the H200)
  // and costs when the registers it takes lower the occupancy of a kernel
  // of many rounds (16384 rows of 4096: 100 -> 130 us).
  static double row_waves(int64_t rows, int threads, int64_t regs) {
    return double(rows) / double(kMultiprocessors * blocks_per_sm(threads, regs));
  }
  // Hopper's limits (H100/H200): multiprocessors, and the threads, blocks
  // and registers one of them holds at once.
  static constexpr int64_t kMultiprocessors = 132, kThreadsPerSM = 2048, kBlocksPerSM = 32,
                           kRegistersPerSM = 65536;

  // Note [One wave of short rows]
  // A kernel of short rows (GPT-2's residual add and layer norm: 4096 rows
  // of 768, a warp each) takes about as long as one row when every row is
  // resident at once, and twice that when the last rows wait for a second
  // round of blocks. ptxas sizes a thread's registers for the code, not the
  // grid: the norm above took 96 registers, so a multiprocessor held 21
  // one-warp blocks and 4096 rows ran in 1.48 rounds (Triton's kernel of
  // the same rows: 61-64 registers, 32 blocks, one round). When the grid
  // fits one round at all, the kernel asks for it through
  // __launch_bounds__'s minimum blocks a multiprocessor, so long as that
  // leaves a thread kMinRowRegisters (ptxas then keeps the registers to
  // 65536 / (blocks * threads), spilling what does not fit to local
  // memory, which L1 holds: 92-120 bytes a thread for GPT-2's norms, by
  // ptxas -v). config.cuda.row_one_wave turns it on. Off: on the H100 the
  // spills cost more than the round saves (GPT-2's forward 2.818 -> 2.867
  // ms; docs/benchmarks.md run 11); max-autotune still tries it per kernel.
  static constexpr int64_t kMinRowRegisters = 64;
  static int one_wave_blocks(int64_t rows, int threads) {
    const int64_t want = (rows + kMultiprocessors - 1) / kMultiprocessors;
    if (want <= 1 || want > std::min(kBlocksPerSM, kThreadsPerSM / threads) ||
        kRegistersPerSM / (want * threads) < kMinRowRegisters)
      return 0;
    return int(want);
  }

  // The blocks of `threads` threads, each holding `regs` registers of the
  // row (plus the reserve), that one multiprocessor runs at once.
  static int64_t blocks_per_sm(int threads, int64_t regs) {
    const int64_t per_thread = std::max<int64_t>(regs + kRegisterReserve, 1);
    return std::max<int64_t>(1, std::min({kBlocksPerSM, kThreadsPerSM / threads,
                                          kRegistersPerSM / (per_thread * threads)}));
  }

  // Note [Occupancy before kept values]
  // A resident row keeps the values a pass computes and a later pass reads
  // (softmax's exps, layer_norm's x - mean) in ig_sp arrays: 32 floats a
  // thread at four 8-wide vectors, which halves the blocks a multiprocessor
  // holds (softmax over 8192 bfloat16: 3 blocks of 256 threads instead of
  // 6). A kernel of one or two rounds of blocks is bound by a row's latency
  // and gains from not recomputing; one of many rounds is bound by how many
  // rows are in flight, so under config.cuda.row_occupancy it recomputes
  // those values from the row it holds anyway, when that raises the blocks
  // a multiprocessor runs and the kernel has more than kManyRounds rounds.
  static constexpr double kManyRounds = 4;

  // Note [Online max and sum of exps]
  // log_softmax and cross-entropy reduce a row twice: its max, then the sum
  // of exp(x - max). A row held in registers reads memory once for both;
  // a row too long for that (GPT-2's 50304-wide logits: 100 KB of bfloat16,
  // one 1024-thread block a multiprocessor) leaves each multiprocessor with
  // one row at a time, its loads, two block reductions and exps in
  // sequence: 332 us for 4096 rows on the H100, 1.24 TB/s. Such a kernel
  // streams its rows instead (256-thread blocks, eight a multiprocessor)
  // and folds both reductions in the first pass: each thread keeps the max
  // m so far and the sum s of exp(x - m), rescaling s when m grows
  // (ig_online_add), and the block merges the pairs (ig_online_merge) --
  // one read of the row and one block reduction. Edge values match the two
  // passes: a NaN makes both NaN, an infinite max a NaN sum, a row of -inf a
  // NaN sum. The pair applies when the sum pass does nothing else (no
  // stores; values it keeps for a later pass, softmax's exps, are
  // recomputed there from the final max, even where the scheduler gave them
  // a scratch row in an output: streaming, that row cost a write and a
  // read of the row, the recomputation a read) and
  // sums exp(x - max) of the very x the max pass folds (same_value): the
  // loss's target gather and mean read the two results as before, softmax
  // reads its row twice instead of three times. config.cuda.online_softmax
  // turns it off.

  // The streaming row: each pass reads the row from memory again.
  void print_rows_streaming(const std::string& ind) {
    const int64_t inner = k_.inner_numel();
    const std::string in2 = ind + "  ";
    declare_scratch(ind);
    print_passes(ind, [&](size_t li) {
      os_ << ind << "for (" << it_ << " ig_e = threadIdx.x; ig_e < "
          << numel(k_.inner_sizes, inner) << "; ig_e += blockDim.x) {\n";
      print_unravel(k_.inner, k_.inner_sizes, "ig_e", in2);
      print_body(li, in2, false, Part::PerElement);
      print_accumulate(li, in2);
      os_ << ind << "}\n";
    });
  }

  // A row kernel's passes in order at `ind`: a scalar block as it is; an
  // inner pass as its accumulators and row-invariant nodes, then
  // `over_row(li)` (the pass's loop over the row, however the path walks
  // it), its block reduction; each followed by the barrier its stores need.
  // The online pair's sum pass is folded into its max pass, so not printed.
  void print_passes(const std::string& ind, const std::function<void(size_t)>& over_row) {
    for (size_t li = 0; li < k_.loops.size(); ++li) {
      if (online_ && li == online_->sum_loop) continue;
      if (!k_.loops[li].inner) {
        print_body(li, ind, true);
      } else {
        print_acc_init(li, ind);
        print_nodes(li, ind, Part::Invariant);
        over_row(li);
        print_block_reduce(li, ind);
      }
      print_pass_barrier(li, ind);
    }
  }

  // The streaming row in vectors of `width` elements: thread t takes vectors
  // t, t + blockDim.x, ... of the row in every pass (so what a pass stores a
  // later pass reads back in the same thread), each pass reading the row
  // again; the aligned static case of print_rows_streaming.
  void print_rows_streaming_vectors(int width, const std::string& ind) {
    const sym::Expr v = k_.inner.back();
    const sym::Expr base = sym::index_var("ig_v0", k_.inner_sizes.back());
    std::vector<sym::Expr> head = k_.inner;
    head.back() = base;
    const int64_t nvec = k_.inner_numel() / width;
    const std::string i2 = ind + "  ";
    vec_.emplace();
    declare_scratch(ind);
    print_passes(ind, [&](size_t li) {
      os_ << "#pragma unroll 4\n" << ind << "for (" << it_ << " ig_c = threadIdx.x; ig_c < "
          << sz_.integer(nvec) << "; ig_c += blockDim.x) {\n";
      os_ << i2 << "const " << it_ << " ig_e0 = ig_c * " << width << ";\n";
      print_unravel(head, k_.inner_sizes, "ig_e0", i2);
      print_lanes(li, v, base, width, i2);
      os_ << ind << "}\n";
    });
    vec_.reset();
  }

  // Accumulator r: a variable, or in a vectorized column kernel an array
  // with a column of the thread's vector each (acc_lanes_ of them), indexed
  // by the lane ig_j where one is in scope (Note [Vectors of columns]).
  std::string acc(int r) const {
    return "acc" + std::to_string(r) + (acc_lanes_ > 1 ? "[ig_j]" : "");
  }

  // Loop li's accumulators, at their combine's identity.
  void print_acc_init(size_t li, const std::string& ind) {
    for (int r : k_.loops[li].reductions) {
      const Reduction& red = k_.reductions[size_t(r)];
      if (acc_lanes_ > 1) {
        os_ << ind << cuda_type(red.dtype) << " acc" << r << "[" << acc_lanes_ << "];\n";
        os_ << lane_loop(ind, acc_lanes_) << " " << acc(r) << " = "
            << combine_init(red.combine, red.dtype) << ";\n";
        continue;
      }
      os_ << ind << cuda_type(red.dtype) << " acc" << r << " = "
          << combine_init(red.combine, red.dtype) << ";\n";
    }
    if (online_ && li == online_->max_loop)
      os_ << ind << cuda_type(k_.reductions[size_t(online_->sum_acc)].dtype) << " acc"
          << online_->sum_acc << " = 0;\n";
  }

  void print_accumulate(size_t li, const std::string& ind) {
    if (online_ && li == online_->max_loop) {
      const Reduction& max = k_.reductions[size_t(online_->max_acc)];
      os_ << ind << "ig_online_add(acc" << online_->max_acc << ", acc" << online_->sum_acc << ", "
          << tmp(li, max.value) << ", ignis::scalar_ops::" << online_->exp << "{});\n";
      return;
    }
    for (int r : k_.loops[li].reductions) {
      const Reduction& red = k_.reductions[size_t(r)];
      os_ << ind << acc(r) << " = " << combine_functor(red.combine) << "()(" << acc(r) << ", "
          << tmp(li, red.value) << ");\n";
    }
  }

  // Loop li's accumulators folded across the block: ig_block_reduce, or
  // (`columns`) ig_column_reduce_n over each column's row lanes.
  void print_block_reduce(size_t li, const std::string& ind, bool columns = false) {
    if (online_ && li == online_->max_loop) {
      os_ << ind << "ig_block_reduce_online(acc" << online_->max_acc << ", acc" << online_->sum_acc
          << ", ignis::scalar_ops::" << online_->exp << "{});\n";
      return;
    }
    print_across_threads(k_.loops[li].reductions, ind, columns);
  }

  // Accumulators rs folded across the threads that share them: the block
  // (ig_block_reduce), or (`columns`) each column's row lanes.
  void print_across_threads(const std::vector<int>& rs, const std::string& ind, bool columns) {
    if (columns) return print_column_reduce(rs, ind);
    for (int r : rs)
      os_ << ind << acc(r) << " = ig_block_reduce(" << acc(r) << ", "
          << combine_functor(k_.reductions[size_t(r)].combine) << "());\n";
  }

  // Accumulators rs of a column kernel (acc_lanes_ columns a thread) folded
  // over the row lanes: ig_column_reduce_n on as many of a thread's columns
  // at once as its buffer (ig_column_smem's, kColumnReduceBytes) holds for
  // the block (all 8 of a bfloat16 vector's float sums).
  static constexpr int kColumnReduceBytes = 16384;
  void print_column_reduce(const std::vector<int>& rs, const std::string& ind) {
    for (int r : rs) {
      const Reduction& red = k_.reductions[size_t(r)];
      const int per = std::max<int>(
          1, kColumnReduceBytes / (kColumns * kColumnLanes * int(element_size(red.dtype))));
      for (int j = 0; j < acc_lanes_; j += per) {
        const int n = std::min(per, acc_lanes_ - j);
        const std::string at = "acc" + std::to_string(r);
        os_ << ind << "ig_column_reduce_n<" << n << ">("
            << (acc_lanes_ > 1 ? at + (j ? " + " + std::to_string(j) : "") : "&" + at) << ", "
            << combine_functor(red.combine) << "(), ig_cw);\n";
      }
    }
  }

  // What pass li stored is visible to the block's next pass.
  void print_pass_barrier(size_t li, const std::string& ind) {
    const Loop& l = k_.loops[li];
    bool wrote = !l.stores.empty();
    for (const auto& spill : l.spills) wrote = wrote || home(spill.second) != nullptr;
    if (wrote && li + 1 < k_.loops.size()) os_ << ind << "__syncthreads();\n";
  }

  // What a resident row keeps in registers: each load of a buffer the
  // kernel does not write that several passes read (ig_rc arrays), each
  // value a pass stores and a later pass loads back, and with keep_spills
  // the loop IR's spills (ig_sp arrays; else a later pass recomputes them,
  // and the loads that recomputation reads count as that pass's).
  struct Residency {
    std::map<std::string, ScalarType> cache;  // access -> element type
    // Cached loads that only later passes read, loaded with the first pass's
    // (access -> the load: its buffer and index).
    std::map<std::string, std::pair<int, sym::Expr>> prefetch;
    std::set<int> spilled;                    // scratches held in ig_sp arrays
    std::vector<ScalarType> spill_types;
    // The 32-bit registers a thread spends on them (16-bit values in pairs).
    int64_t registers(int chunks, int width) const {
      int64_t bytes = 0;
      for (const auto& kv : cache) bytes += int64_t(element_size(kv.second));
      for (ScalarType t : spill_types) bytes += int64_t(element_size(t));
      return (int64_t(chunks) * width * bytes + 3) / 4;
    }
  };
  static constexpr int64_t kRegisterReserve = 24;

  Residency plan_residency(const std::vector<size_t>& passes, bool keep_spills, bool prefetch,
                           const sym::Expr& v) const {
    Residency r;
    std::map<std::string, std::pair<int, sym::Expr>> loads;  // read-only unit loads (prefetch)
    const std::unordered_set<int> written = k_.stored_buffers();
    std::map<std::string, std::set<size_t>> readers;
    std::map<std::string, ScalarType> types;
    auto read_loads = [&](size_t li, size_t reader, const std::vector<bool>& inv,
                          const std::vector<bool>* cone) {
      const Loop& l = k_.loops[li];
      for (size_t i = 0; i < l.body.size(); ++i) {
        const ScalarNode& s = l.body[i];
        if (s.kind != ScalarKind::Load || written.count(s.buffer) || (!inv.empty() && inv[i]) ||
            (cone && !(*cone)[i]))
          continue;
        const std::string key = access_key(s.buffer, s.index);
        readers[key].insert(reader);
        types[key] = s.dtype;
        if (prefetch && reader == li && access_form(s.index, v).unit)
          loads.emplace(key, std::make_pair(s.buffer, s.index));
      }
    };
    for (size_t li : passes) read_loads(li, li, row_invariant_nodes(k_, li), nullptr);
    if (!keep_spills) {
      // A pass that reads a spill reads what its recomputation loads.
      for (size_t li : passes)
        for (const ScalarNode& s : k_.loops[li].body) {
          if (s.kind != ScalarKind::Ref || s.acc >= 0 || s.scratch < 0) continue;
          for (size_t lj = 0; lj < k_.loops.size(); ++lj)
            for (const auto& [node, sc] : k_.loops[lj].spills)
              if (sc == s.scratch) {
                std::vector<bool> cone = node_cone(lj, node);
                read_loads(lj, li, row_invariant_nodes(k_, lj), &cone);
              }
        }
    }
    // A value a pass stores and a later pass loads back at the same element
    // (layer_norm backward's normalised x) is forwarded in registers too.
    std::map<std::string, size_t> first_store;
    for (size_t li : passes)
      for (const Store& st : k_.loops[li].stores) {
        const std::string key = access_key(st.buffer, st.index);
        if (first_store.emplace(key, li).second)
          types[key] = p_.buffers[size_t(st.buffer)].dtype;
      }
    for (size_t li : passes)
      for (const ScalarNode& s : k_.loops[li].body) {
        if (s.kind != ScalarKind::Load) continue;
        const std::string key = access_key(s.buffer, s.index);
        auto st = first_store.find(key);
        if (st != first_store.end() && st->second < li) {
          readers[key].insert(st->second);
          readers[key].insert(li);
        }
      }
    for (const auto& [key, ls] : readers)
      if (ls.size() >= 2) r.cache.emplace(key, types[key]);
    // A vector load that the first pass does not read (layer_norm's weight
    // and bias, read by the last pass after two reductions) is issued
    // before the first pass, so its latency overlaps the row's.
    if (!passes.empty())
      for (const auto& [key, load] : loads)
        if (!readers[key].count(passes.front())) {
          r.cache.emplace(key, types[key]);
          r.prefetch.emplace(key, load);
        }
    if (keep_spills)
      for (size_t li : passes)
        for (const auto& sp : k_.loops[li].spills)
          if (r.spilled.insert(sp.second).second)
            r.spill_types.push_back(k_.scratch[size_t(sp.second)]);
    return r;
  }

  // The nodes of loop li that node depends on (itself included).
  std::vector<bool> node_cone(size_t li, int node) const {
    const Loop& l = k_.loops[li];
    std::vector<bool> in(l.body.size(), false);
    std::vector<int> todo{node};
    while (!todo.empty()) {
      const int n = todo.back();
      todo.pop_back();
      if (n < 0 || in[size_t(n)]) continue;
      in[size_t(n)] = true;
      for (int a : l.body[size_t(n)].args) todo.push_back(a);
    }
    return in;
  }

  // Inside a vector's scope (its first element ig_v0): pass li over the
  // vector's `width` lanes -- the vector loads, each lane's nodes and
  // accumulation, the vector stores.
  void print_lanes(size_t li, sym::Expr v, sym::Expr base, int width, const std::string& ind) {
    const std::string i2 = ind + "  ";
    print_vector_accesses(li, v, base, width, ind);
    os_ << lane_loop(ind, width) << " {\n";
    os_ << i2 << "const " << it_ << " " << var(v) << " = ig_v0 + ig_j;\n";
    print_body(li, i2, false, Part::PerElement);
    print_accumulate(li, i2);
    os_ << ind << "}\n";
    print_vector_stores(li, v, base, width, ind);
  }

  // Note [Chunks the compiler can hoist]
  // A resident row's passes loop over a thread's chunks, vectors t, t + T,
  // ... of the row for T the block's planned threads. Written as
  // `ig_k * blockDim.x + threadIdx.x` under `if (ig_c < nvec)`, every load
  // sat behind a guard the compiler could not prove true, and it issued
  // them one after the other, each after the last one's arithmetic: four
  // 16-byte loads a thread in sequence instead of in flight together. With
  // the planned T a literal (the resident path runs only on blocks of that
  // size) a chunk that every thread has needs no guard, and only a last,
  // partial chunk keeps one. Measured on the H100 (the row lab, ad hoc:
  // the generated kernels with the guard removed by hand), softmax over
  // 8192 x 8192 bfloat16 128.8 -> 97.9 us (0.69 -> 0.90 of the copy
  // bandwidth), layer_norm over 16384 x 4096 104.4 -> 93.6 us (0.85 ->
  // 0.95), GPT-2's 4096 x 768 residual layer norm 12.3 -> 10.3 us from
  // memory; ptxas also gave that norm 69 registers instead of 96. Through
  // the compiler (docs/benchmarks.md run 12): softmax 123 -> 95 us, layer_norm
  // 101 -> 96 us, 0.93 of the copy bandwidth each. (An earlier run that
  // failed with it on was the machine's: torch's own cublasCreate failed
  // there too, and the same tree passed on the next machine.)
  // config.cuda.row_hoist_chunks off prints the guarded form (row_threads_ 0).
  int64_t row_threads_ = 0;
  // ... and how many of a thread's chunks are whole in every row the text
  // serves: all in static code (a last, partial one is guarded by its
  // literal count); in size-generic code those below half the row's bucket
  // (Note [Resident rows in size-generic code]).
  int row_sure_chunks_ = 0;

  // The loop over a thread's chunks of a resident row, opened: chunk ig_k is
  // the row's vector ig_c (when the row has it), its first element ig_e0,
  // the inner variables `head` unravelled from it (closed by the caller:
  // two braces).
  void open_chunk_loop(const std::vector<sym::Expr>& head, int chunks, int64_t nvec, int width,
                       const std::string& ind) {
    const std::string i2 = ind + "  ", i3 = ind + "    ";
    os_ << "#pragma unroll\n" << ind << "for (int ig_k = 0; ig_k < " << chunks << "; ++ig_k) {\n";
    // Note [Chunks the compiler can hoist]
    if (row_threads_ == 0) {
      os_ << i2 << "const " << it_ << " ig_c = " << it_ << "(ig_k) * " << it_ << "(blockDim.x) + "
          << it_ << "(threadIdx.x);\n";
      os_ << i2 << "if (ig_c < " << sz_.integer(nvec) << ") {\n";
    } else {
      os_ << i2 << "const " << it_ << " ig_c = " << it_ << "(ig_k) * " << row_threads_ << " + "
          << it_ << "(threadIdx.x);\n";
      if (sz_.generic() && row_sure_chunks_ < chunks)
        os_ << i2 << "if (ig_k < " << row_sure_chunks_ << " || ig_c < " << sz_.integer(nvec)
            << ") {\n";
      else if (int64_t(chunks) * row_threads_ > nvec)
        os_ << i2 << "if (ig_k + 1 < " << chunks << " || ig_c < " << nvec << ") {\n";
      else
        os_ << i2 << "{\n";
    }
    os_ << i3 << "const " << it_ << " ig_e0 = ig_c * " << width << ";\n";
    print_unravel(head, k_.inner_sizes, "ig_e0", i3);
  }

  // The resident row: thread t holds vectors t, t + blockDim.x, ... (chunk
  // ig_k, element ig_j of the vector) in every pass; a load that several
  // passes read is kept in an ig_rc array, a spill in an ig_sp array.
  void print_rows_in_registers(const Residency& residency, int width, int chunks,
                               int64_t nvec, const std::string& ind) {
    const sym::Expr v = k_.inner.back();
    const sym::Expr base = sym::index_var("ig_v0", k_.inner_sizes.back());
    vec_.emplace();
    vec_->registers = true;
    vec_->spills = !residency.spilled.empty();
    for (const auto& [key, type] : residency.cache) {
      const std::string name = "ig_rc" + std::to_string(vec_->cache.size());
      vec_->cache.emplace(key, name);
      os_ << ind << cuda_type(type) << " " << name << "[" << chunks << "][" << width << "];\n";
    }
    for (int sc : residency.spilled)
      os_ << ind << cuda_type(k_.scratch[size_t(sc)]) << " ig_sp" << sc << "[" << chunks << "]["
          << width << "];\n";
    std::vector<sym::Expr> head = k_.inner;
    head.back() = base;
    const std::string i2 = ind + "  ", i3 = ind + "    ", i4 = ind + "      ";
    if (!residency.prefetch.empty()) {
      open_chunk_loop(head, chunks, nvec, width, ind);
      for (const auto& [key, load] : residency.prefetch) {
        const std::string type = vec_type(load.first, width), name = vec_->cache.at(key);
        os_ << i3 << "{\n" << i4 << "const " << type << " ig_pf = *reinterpret_cast<const " << type
            << "*>(" << ptr_name(p_.buffers[size_t(load.first)]) << " + ("
            << sz_.expr(sym::subs(load.second, {{v, base}})) << "));\n";
        os_ << lane_loop(i4, width) << " "
            << name << "[ig_k][ig_j] = ig_pf.v[ig_j];\n" << i3 << "}\n";
        vec_->cached.insert(key);
      }
      os_ << i2 << "}\n" << ind << "}\n";
    }
    print_passes(ind, [&](size_t li) {
      vec_->filling.clear();
      open_chunk_loop(head, chunks, nvec, width, ind);
      print_lanes(li, v, base, width, i3);
      os_ << i2 << "}\n" << ind << "}\n";
      vec_->cached.insert(vec_->filling.begin(), vec_->filling.end());
    });
    vec_.reset();
  }

  // ---- the online max and sum of exps (Note [Online max and sum of exps]) ----

  // A max pass and the sum-of-exps pass after it, merged: the first pass
  // folds both reductions, the second is not printed.
  struct OnlinePair {
    size_t max_loop = 0, sum_loop = 0;
    int max_acc = -1, sum_acc = -1;
    std::string exp;  // the scalar_ops struct of the exp (the sum pass's own)
    std::set<int> recomputed;  // the sum pass's kept values: later passes recompute them
  };

  // Whether node a of loop la and node b of loop lb compute the same value.
  bool same_value(size_t la, int a, size_t lb, int b) const {
    const ScalarNode& x = k_.loops[la].body[size_t(a)];
    const ScalarNode& y = k_.loops[lb].body[size_t(b)];
    if (x.kind != y.kind || x.dtype != y.dtype || x.args.size() != y.args.size()) return false;
    switch (x.kind) {
      case ScalarKind::Load:
        if (x.buffer != y.buffer || sym::compare(x.index, y.index) != 0) return false;
        break;
      case ScalarKind::Index:
        if (sym::compare(x.index, y.index) != 0) return false;
        break;
      case ScalarKind::Constant:
        if (x.is_int != y.is_int || x.int_value != y.int_value ||
            !(x.value == y.value || (x.value != x.value && y.value != y.value)))
          return false;
        break;
      case ScalarKind::Call:
        if (x.fn != y.fn) return false;
        break;
      case ScalarKind::Ref:
        if (x.acc != y.acc || x.loop != y.loop || x.node != y.node || x.scratch != y.scratch)
          return false;
        break;
      case ScalarKind::Cast:
      case ScalarKind::Where: break;
    }
    for (size_t i = 0; i < x.args.size(); ++i)
      if (!same_value(la, x.args[i], lb, y.args[i])) return false;
    return true;
  }

  // The kernel's max pass followed by a pass that only sums exp(x - max)
  // of the same x (log_softmax's and cross-entropy's reductions), if any.
  std::optional<OnlinePair> online_pair() const {
    for (size_t la = 0; la + 1 < k_.loops.size(); ++la) {
      const Loop& a = k_.loops[la];
      const Loop& b = k_.loops[la + 1];
      if (!a.inner || !b.inner || a.reductions.size() != 1 || b.reductions.size() != 1 ||
          !a.stores.empty() || !b.stores.empty() || !a.spills.empty())
        continue;
      const int ra = a.reductions[0], rb = b.reductions[0];
      const Reduction& max = k_.reductions[size_t(ra)];
      const Reduction& sum = k_.reductions[size_t(rb)];
      if (max.combine != Combine::Max || sum.combine != Combine::Sum || max.dtype != sum.dtype ||
          !is_floating(max.dtype))
        continue;
      const ScalarNode& e = b.body[size_t(sum.value)];
      if (e.kind != ScalarKind::Call || e.fn != "exp" || e.args.size() != 1) continue;
      const ScalarNode& d = b.body[size_t(e.args[0])];
      if (d.kind != ScalarKind::Call || d.fn != "sub" || d.args.size() < 2 || d.args.size() > 3)
        continue;
      const ScalarNode& m = b.body[size_t(d.args[1])];
      if (m.kind != ScalarKind::Ref || m.acc != ra || m.dtype != max.dtype) continue;
      if (d.args.size() == 3) {
        const ScalarNode& alpha = b.body[size_t(d.args[2])];
        if (alpha.kind != ScalarKind::Constant || (alpha.is_int ? alpha.int_value : alpha.value) != 1)
          continue;
      }
      if (!same_value(la, max.value, la + 1, d.args[0])) continue;
      // Nothing else may read the sum pass's nodes.
      bool read = false;
      for (size_t lj = la + 2; lj < k_.loops.size(); ++lj)
        for (const ScalarNode& x : k_.loops[lj].body)
          read = read || (x.kind == ScalarKind::Ref && x.acc < 0 && x.scratch < 0 &&
                          size_t(x.loop) == la + 1);
      if (read) continue;
      OnlinePair pair{la, la + 1, ra, rb, scalar_struct_name("exp"), {}};
      for (const auto& sp : b.spills) pair.recomputed.insert(sp.second);
      return pair;
    }
    return std::nullopt;
  }

  Text& out_;  // the translation unit
  Text os_;    // this kernel's signature, then its body
  const Program& p_;
  const Kernel& k_;
  std::string symbol_;
  std::string key_;
  std::string args_comment_;
  const CompilerOptions& options_;
  std::vector<int> base_;
  std::map<std::pair<size_t, int>, std::string> recomputed_;  // in the loop being printed
  SizeParams sz_;
  std::string it_ = "int64_t";  // the index type (int32_t when every index fits)
  std::optional<VectorState> vec_;
  std::optional<OnlinePair> online_;
  int acc_lanes_ = 1;  // columns of a thread in a vectorized column kernel
  bool stream_loads_ = false;  // vector loads as ig_load_stream (config.cuda.streaming_loads)
  // The kernel's folding stores, one a buffer: ig_fold<i> holds the i-th
  // (Note [Column sums in a row kernel]).
  std::vector<const Store*> folds_;
};

// sym's helpers (floor division, remainder) without their #include line:
// the eager prelude has the fixed-width integers NVRTC lacks.
std::string sym_helpers() {
  std::string s = sym::cpp_prelude();
  if (s.rfind("#include", 0) == 0) s = s.substr(s.find('\n') + 1);
  return s;
}

// Note [Kernels of one text]
// A model's layers lower to kernels that differ only in the buffers they
// read and write: GPT-2-small's forward has twelve copies of each layer's
// kernels. Each kernel is printed over its own view of the program, its
// buffers numbered (and named arg0, arg1, ...) in the order its loops
// first name them, so two kernels of one structure print one text but for
// their name and comment; the second runs the first's compiled function
// with its own buffers (CudaKernel::params, Executable::Kern::params: the
// program's buffer of each argument), and its text in the source is a
// comment saying so. The comment line under each kernel's name says which
// buffer each argN is. Both printers do it: NVRTC compiles a layer's
// kernels once instead of once a layer (GPT-2-small's forward: 7 kernels
// for 52 launches, its backward 18 for 132), and so does the C++ compiler
// (codegen_cpp: a CPU kernel's `bufs` is its own table, bufs[0] its arg0,
// which CompiledGraph::run_cpu_kernel gathers before the call).
CudaProgramCode print_program(const Program& p, const std::string& tag,
                              const std::vector<CompilerOptions>& per_kernel, bool lift,
                              Observe observe) {
  // (A program of no kernels takes one options for its prelude.)
  IGNIS_INTERNAL_ASSERT(per_kernel.size() == std::max<size_t>(p.kernels.size(), 1),
                        "generate_cuda: ", per_kernel.size(), " options for ", p.kernels.size(),
                        " kernels");
  const bool generic = per_kernel[0].size_generic;
  Text os;
  os << "// Generated by ignis's compiler (src/ignis/compiler/codegen_cuda.cpp).\n"
     << cuda::eager_prelude() << cuda::device_scalar_ops_source() << sym_helpers() << kHelpers
     << (generic ? kGenericHelpers : "") << "\n";
  CudaProgramCode code;
  code.prelude_bytes = os.str().size();
  std::unordered_map<std::string, size_t> first_of_key;  // key -> the kernel that printed it
  ParamRecorder recorder(observe);  // Note [Parameters that vary with the sizes]
  for (size_t ki = 0; ki < p.kernels.size(); ++ki) {
    const Kernel& k = p.kernels[ki];
    CompilerOptions options = per_kernel[ki];
    options.size_generic = generic;
    // Note [Kernels of one text]
    const KernelView v = kernel_view(p, k);
    const std::string args = kernel_args_comment(v, p);
    const std::string symbol = tag.empty() ? k.name : k.name + "_" + tag;
    Text text;
    CudaKernelPrinter printer(text, v.program, v.kernel, symbol, options, true, args);
    CudaKernel ck = printer.print();
    // Note [Parameters that vary with the sizes]: the all-lifted text is
    // what the sizes' values are recorded by and the literals looked up by.
    std::vector<uint8_t> varying;
    if (generic) {
      varying = recorder.literals(printer.key(), k, ck.size_params);
    }
    std::string key = printer.key();
    if (generic && (!varying.empty() || !lift)) {
      Text again;
      CudaKernelPrinter reprinted(again, v.program, v.kernel, symbol, options, lift, args);
      reprinted.keep_literals(std::move(varying));
      ck = reprinted.print();
      key = reprinted.key();
      std::swap(text, again);
    }
    ck.key = key;
    for (int& b : ck.params) b = v.order[size_t(b)];
    const size_t begin = os.str().size();
    auto [first, fresh] = first_of_key.emplace(key, code.kernels.size());
    if (fresh) {
      os << text.str();
    } else {
      ck.symbol = code.kernels[first->second].symbol;
      os << same_code_comment(k, args, ck.symbol);
    }
    ck.source_begin = begin;
    ck.source_end = os.str().size();
    code.kernels.push_back(std::move(ck));
  }
  code.source = os.str();
  return code;
}

}  // namespace

const std::vector<std::string>& cuda_compile_options() {
  static const std::vector<std::string> options = {"-default-device", "-w"};
  return options;
}

CudaProgramCode generate_cuda(const Program& p, const CompilerOptions& options, bool lift,
                              Observe observe) {
  return generate_cuda(p, std::vector<CompilerOptions>(std::max<size_t>(p.kernels.size(), 1), options),
                       lift, observe);
}

CudaProgramCode generate_cuda(const Program& p, const std::vector<CompilerOptions>& options,
                              bool lift, Observe observe) {
  IGNIS_INTERNAL_ASSERT(p.device.is_cuda(), "generate_cuda: a program on ", p.device.str());
  // Kernel symbols carry a hash of the program's text, so that kernels of
  // different graphs never share a name (IGNIS_CUDA_DUMP_SOURCES writes
  // <symbol>.cu; the fake driver loads kernels by symbol). Size-generic
  // text is the same for every size it serves, and so are its symbols.
  // (The tag is the lifted text's, so that printing with the values in
  // place keeps the symbols.)
  const std::string tag =
      runtime::sha256_hex(print_program(p, "", options, true, observe).source).substr(0, 12);
  return print_program(p, tag, options, lift, Observe::Off);
}

}  // namespace ignis::compiler

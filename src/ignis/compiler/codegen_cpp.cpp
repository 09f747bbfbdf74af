#include "ignis/compiler/codegen_cpp.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "ignis/compiler/size_params.h"
#include "ignis/compiler/text.h"
#include "ignis/core/error.h"
#include "ignis/kernels/scalar_ops.h"
#include "ignis/sym/eval.h"
#include "ignis/sym/index.h"
#include "ignis/sym/print.h"
#include "ignis/sym/simplify.h"

namespace ignis::compiler {

const std::string& scalar_struct_name(const std::string& fn) {
  static const std::unordered_map<std::string, std::string> table = {
#define IGNIS_ENTRY(S) {scalar_ops::S::name, #S},
      IGNIS_FORALL_SCALAR_OPS(IGNIS_ENTRY)
#undef IGNIS_ENTRY
  };
  auto it = table.find(fn);
  IGNIS_CHECK(it != table.end(), "compiler: no scalar function '", fn, "' in scalar_ops.h");
  return it->second;
}

namespace {

// The C++ type of a value (and element) of dtype t. 16-bit floats are their
// raw bits (uint16_t), converted to and from float by half.h's static
// functions: a local of class type (ignis::BFloat16) inside an `omp simd`
// loop becomes a per-lane array that GCC then copies element by element,
// which kept every loop touching 16-bit floats scalar.
const char* ctype(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return "float";
    case ScalarType::Float64: return "double";
    case ScalarType::Int64: return "int64_t";
    case ScalarType::Int32: return "int32_t";
    case ScalarType::Int16: return "int16_t";
    case ScalarType::Int8: return "int8_t";
    case ScalarType::UInt8: return "uint8_t";
    case ScalarType::BFloat16: return "uint16_t";
    case ScalarType::Float16: return "uint16_t";
    case ScalarType::Bool: return "bool";
    default: IGNIS_NOT_IMPLEMENTED("compiler: no C++ type for ", dtype_name(t), " yet");
  }
}

bool is_16bit(ScalarType t) { return t == ScalarType::BFloat16 || t == ScalarType::Float16; }

// The C++ type of an element in memory (a buffer, a scratch row): ctype,
// but bytes for bool. GCC does not vectorize a loop that loads `bool`
// elements (a dropout mask, a causal mask): the loads stay scalar, and with
// them the whole loop, exp and all (the attention probabilities' backward of
// a 35-token Transformer LM: 397 -> 112 us at one thread). Loaded as bytes
// and compared with 0 (`buf3[i] != 0`), the loop vectorizes.
const char* element_ctype(ScalarType t) { return t == ScalarType::Bool ? "uint8_t" : ctype(t); }

// Element `e` of memory of dtype t as a value: a byte compared with 0 for
// bool (element_ctype), else as it is.
std::string element_value(ScalarType t, std::string e) {
  return t == ScalarType::Bool ? "(" + e + " != 0)" : e;
}

// `value` (C++ of dtype `from`) converted to dtype `to`, as a static_cast
// between the arithmetic types (16-bit floats: through float, as their
// struct's conversions do).
std::string convert(ScalarType from, ScalarType to, std::string value) {
  if (from == to && is_16bit(to)) return value;  // the bits as they are
  if (is_16bit(from)) {
    value = from == ScalarType::BFloat16 ? "ignis::bits_to_float(uint32_t(" + value + ") << 16)"
                                         : "ignis::Half::to_float(" + value + ")";
    if (to == ScalarType::Float32) return value;
    from = ScalarType::Float32;
  }
  // A bool as a float: a select, which GCC vectorises as a blend; its
  // static_cast kept k.float().sum() over 8M bools at 2.2 ms on the 2-core VM
  // (0.85 as a select).
  if (from == ScalarType::Bool && (to == ScalarType::Float32 || to == ScalarType::Float64))
    return "(" + value + " ? " + ctype(to) + "(1) : " + ctype(to) + "(0))";
  if (!is_16bit(to)) return std::string("static_cast<") + ctype(to) + ">(" + value + ")";
  if (from != ScalarType::Float32) value = "static_cast<float>(" + value + ")";
  return std::string(to == ScalarType::BFloat16 ? "ignis::BFloat16" : "ignis::Half") +
         "::from_float(" + value + ")";
}

// `value` of dtype `from` where dtype `to` is wanted: as it is when the
// types agree, else converted. (Loads, stores and references may carry a
// dtype other than their value's, a reduction's accumulator read back as
// its bfloat16 result, which C++ converts implicitly; 16-bit bits cannot.)
std::string as_dtype(ScalarType from, ScalarType to, const std::string& value) {
  return from == to || (!is_16bit(from) && !is_16bit(to)) ? value : convert(from, to, value);
}

// A number as an exact C++ literal of type t. Doubles print in hex (exact),
// converted as eager converts a Scalar argument: double (or int64) -> t.
std::string literal(const ScalarNode& s) {
  char buf[64];
  if (s.is_int) std::snprintf(buf, sizeof buf, "%lldLL", static_cast<long long>(s.int_value));
  else if (s.value != s.value) std::snprintf(buf, sizeof buf, "__builtin_nan(\"\")");
  else if (s.value == __builtin_inf()) std::snprintf(buf, sizeof buf, "__builtin_inf()");
  else if (s.value == -__builtin_inf()) std::snprintf(buf, sizeof buf, "(-__builtin_inf())");
  else std::snprintf(buf, sizeof buf, "%a", s.value);
  return convert(s.is_int ? ScalarType::Int64 : ScalarType::Float64, s.dtype, buf);
}

// The variable a kernel reads or writes buffer b through.
// Kernels are printed over their own views (kernel_view): argN.
std::string ptr_name(const Buffer& b) { return b.name; }

const char* combine_init(Combine c) {
  switch (c) {
    case Combine::Sum: return "0";
    case Combine::Prod: return "1";
    case Combine::Max: return "-__builtin_inf()";
    case Combine::Min: return "__builtin_inf()";
  }
  return "0";
}

std::string combine_expr(Combine c, const std::string& a, const std::string& b) {
  switch (c) {
    case Combine::Sum: return a + " + " + b;
    case Combine::Prod: return a + " * " + b;
    case Combine::Max: return "ignis_red_max(" + a + ", " + b + ")";
    case Combine::Min: return "ignis_red_min(" + a + ", " + b + ")";
  }
  return a;
}

// Lanes of a reduction's accumulator (options.lanes()): independent
// partial results, so the fold vectorises and pipelines without
// reassociating one chain (and rounds less than one long chain), as eager's
// vectorised reductions do.

class KernelPrinter {
 public:
  // lift: in size-generic mode, read sizes from P (false prints the same
  // code with the values in place: Note [Size-generic code]).
  KernelPrinter(Text& os, const Program& p, const Kernel& k, const CompilerOptions& options,
                bool lift = true)
      : os_(os), p_(p), k_(k), base_(k.node_numbers()), lanes_(options.lanes()),
        grain_(options.min_parallel_elements), threads_(options.threads),
        generic_(options.size_generic), row_prefetch_(options.cpu_row_prefetch),
        sz_(options.size_generic, lift) {
    if (reduces_bytes()) lanes_ *= 4;
  }

  // Note [Lanes for byte loads]
  // A reduction's lane loop has as many iterations as lanes, and GCC
  // vectorises it with one vector size: with 16 lanes, a loop that loads a
  // bool mask beside floats got 16-byte (or 8-byte) vectors for all of it,
  // so `p.abs().sum() + k.float().sum()` fused ran slower than its two
  // kernels apart (2.3 ms against 0.5 + 0.85). A kernel whose reduction
  // loops load 1-byte elements takes four times the lanes, so the bytes fill
  // a vector and the floats four.
  bool reduces_bytes() const {
    if (k_.gemm || k_.columns) return false;
    for (const Loop& l : k_.loops) {
      if (!l.inner || l.reductions.empty()) continue;
      for (const ScalarNode& s : l.body)
        if (s.kind == ScalarKind::Load && element_size(p_.buffers[size_t(s.buffer)].dtype) == 1)
          return true;
    }
    return false;
  }

  // The values of the kernel's parameters (empty for static code).
  const std::vector<int64_t>& size_params() const { return sz_.values(); }
  // Note [Parameters that vary with the sizes]
  void keep_literals(std::vector<uint8_t> varying) { sz_.keep_literals(std::move(varying)); }

  void print() {
    if (k_.gemm) return print_gemm();
    if (k_.columns) return print_columns();
    os_ << "// " << k_.name << ": ";
    for (size_t i = 0; i < k_.origins.size(); ++i) os_ << (i ? ", " : "") << k_.origins[i];
    os_ << "\nextern \"C\" void " << k_.name << "(char* const* bufs, const ignis::cpu::KernelRuntime*"
        << signature_params() << ") {\n";
    declare_pointers();
    const int64_t loops = int64_t(std::max<size_t>(k_.loops.size(), 1));
    int64_t work = k_.outer_numel() * std::max<int64_t>(k_.inner_numel(), 1) * loops;
    std::string indent = "  ";
    // Threads split the outer loops; a pointwise kernel with few outer
    // iterations (a contiguous tensor is one loop) splits its inner loop
    // instead, in contiguous chunks that each stay vectorised. (Generic
    // code leaves the work's size to the run-time `if`. No team for no
    // work: the row-invariant loads before an empty loop are dead code
    // only when the compiler sees the loop run zero times.)
    bool pointwise = k_.loops.size() == 1 && k_.loops[0].inner && k_.loops[0].reductions.empty() &&
                     !k_.inner.empty();
    parallel_inner_ =
        pointwise && k_.outer_numel() < 16 && (generic_ ? k_.inner_numel() > 0 : work >= grain_);
    work_ = work;
    work_factor_ = loops;
    plan_next_row_prefetch();
    splits_rows();
    if (k_.workers > 0) {
      print_worker_rows(work);
      indent = "      ";
    } else if (!k_.outer.empty()) {
      if (k_.outer_numel() > 1 && !parallel_inner_ && !split_rows_) {
        std::string w = work_text(work, true, loops);
        os_ << omp_for(work, w);
        if (k_.outer.size() > 1) os_ << " collapse(" << k_.outer.size() << ")";
        os_ << " if (" << w << " >= " << grain_ << ")\n";
      }
      for (size_t i = 0; i < k_.outer.size(); ++i)
        os_ << indent << loop_header(k_.outer[i], k_.outer_sizes[i]);
      indent = "    ";
    }
    for (size_t s = 0; s < k_.scratch.size(); ++s) {
      const Kernel::ScratchInOutput* home = nullptr;
      for (const auto& h : k_.scratch_in_output)
        if (h.scratch == int(s)) home = &h;
      // (no __restrict__ on a row of an output: the last pass reads it
      // through the scratch and writes it through the output's pointer)
      if (home)
        os_ << indent << element_ctype(k_.scratch[s]) << "* scratch" << s << " = "
            << ptr_name(p_.buffers[size_t(home->buffer)]) << " + (" << sz_.expr(home->base)
            << ");\n";
      else
        os_ << indent << element_ctype(k_.scratch[s]) << "* __restrict__ scratch" << s
            << " = ignis_scratch<" << element_ctype(k_.scratch[s]) << ", " << s << ">("
            << (generic_ ? sz_.product(k_.inner_sizes) : std::to_string(k_.inner_numel()))
            << ");\n";
    }
    for (size_t li = 0; li < k_.loops.size(); ++li) print_loop(li, indent);
    if (k_.workers > 0) os_ << "    }\n  }\n";
    else
      for (size_t i = 0; i < k_.outer.size(); ++i) os_ << "  }\n";
    os_ << "}\n\n";
  }

  // Note [Column sums in a row kernel] (schedule.cpp): the rows in
  // k_.workers ranges, a range a task of the team; each sets its part of the
  // partials to the identity, then runs its rows, whose folding stores
  // gather their column sums there.
  void print_worker_rows(int64_t work) {
    const int64_t rows = k_.outer_numel(), workers = k_.workers;
    const int64_t per = (rows + workers - 1) / workers;
    std::string w = work_text(work, true, int64_t(std::max<size_t>(k_.loops.size(), 1)));
    os_ << omp_for(work, w) << " if (" << w << " >= " << grain_ << ")\n";
    os_ << "  for (int64_t ig_w = 0; ig_w < " << workers << "; ++ig_w) {\n";
    for (const Store* st : k_.folding_stores()) {
      const Buffer& b = p_.buffers[size_t(st->buffer)];
      const int64_t n = b.sizes.back().value();
      os_ << "    for (int64_t ig_i = 0; ig_i < " << n << "; ++ig_i) " << ptr_name(b)
          << "[ig_w * " << n << " + ig_i] = " << combine_init(*st->fold) << ";\n";
    }
    os_ << "    for (int64_t ig_row = ig_w * " << per << "; ig_row < std::min<int64_t>(" << rows
        << ", (ig_w + 1) * " << per << "); ++ig_row) {\n";
    int64_t stride = 1;
    for (size_t j = k_.outer.size(); j-- > 0;) {
      const int64_t size = k_.outer_sizes[j].value();
      std::string e = stride == 1 ? "ig_row" : "(ig_row / " + std::to_string(stride) + ")";
      if (j > 0) e += " % " + std::to_string(size);
      os_ << "      const int64_t " << var(k_.outer[j]) << " = " << e << ";\n";
      stride *= size;
    }
  }

 private:
  // The signature's parameter array, in size-generic code.
  const char* signature_params() const {
    return generic_ ? ", const int64_t* __restrict__ P" : "";
  }

  // The work a thread decision compares with the grain: its value (static
  // code), or the kernel's extents (outer, and inner when `inner`) times
  // `factor` written over the parameters (generic code).
  std::string work_text(int64_t work, bool inner, int64_t factor) {
    if (!generic_) return std::to_string(work);
    std::vector<sym::Expr> sizes = k_.outer_sizes;
    if (inner) sizes.insert(sizes.end(), k_.inner_sizes.begin(), k_.inner_sizes.end());
    std::string w = sz_.product(sizes);
    return factor == 1 ? w : w + "*" + std::to_string(factor);
  }

  // "#pragma omp parallel for" over `work` elements: serial within one
  // grain of work, else a team of every thread (the options' count or the
  // process's), as eager ops split (threads_for): libgomp's workers exit
  // whenever a team is smaller than the last one (kernels/cpu/parallel.h).
  // Static code decides when it is printed; generic code at run time, from
  // the work's expression (ignis_threads_for).
  std::string omp_for(int64_t work, const std::string& work_expr, bool simd = false) const {
    std::string s = simd ? "#pragma omp parallel for simd" : "#pragma omp parallel for";
    if (generic_) {
      const std::string g = std::to_string(grain_);
      if (threads_ > 0)
        return s + " num_threads(" + work_expr + " > " + g + " ? " + std::to_string(threads_) +
               " : 1)";
      return s + " num_threads(ignis_threads_for(" + work_expr + ", " + g + "))";
    }
    const int64_t grains = std::max<int64_t>((work + grain_ - 1) / grain_, 1);
    if (threads_ > 0) return s + " num_threads(" + std::to_string(grains > 1 ? threads_ : 1) + ")";
    return s + " num_threads(ignis_threads(" + std::to_string(grains) + "))";
  }

  static std::string var(sym::Expr v) { return sym::to_cpp(v); }

  // "for (int64_t v = 0; v < size; ++v) {\n"
  std::string loop_header(sym::Expr v, sym::Expr size) {
    std::string n = var(v);
    return "for (int64_t " + n + " = 0; " + n + " < " + sz_.expr(size) + "; ++" + n + ") {\n";
  }

  void declare_pointers() {
    std::vector<bool> used(p_.buffers.size(), false), written(p_.buffers.size(), false);
    for (const Loop& l : k_.loops) {
      for (const ScalarNode& s : l.body)
        if (s.kind == ScalarKind::Load) used[size_t(s.buffer)] = true;
      for (const Store& st : l.stores) used[size_t(st.buffer)] = written[size_t(st.buffer)] = true;
    }
    for (size_t b = 0; b < used.size(); ++b) {
      if (!used[b]) continue;
      const Buffer& buf = p_.buffers[b];
      os_ << "  " << (written[b] ? "" : "const ") << element_ctype(buf.dtype) << "* __restrict__ "
          << ptr_name(buf) << " = reinterpret_cast<" << (written[b] ? "" : "const ")
          << element_ctype(buf.dtype) << "*>(bufs[" << b << "]);\n";
    }
  }

  std::string tmp(size_t loop, int node) const { return "tmp" + std::to_string(base_[loop] + node); }

  // A reference to an earlier loop's value: a variable, or in a column
  // kernel this column's element of an array.
  std::string ref(const ScalarNode& s) {
    if (s.scratch >= 0) {
      std::string e = "scratch" + std::to_string(s.scratch) + "[" +
                      sz_.expr(sym::simplify(sym::ravel_index(k_.inner, k_.inner_sizes))) + "]";
      return element_value(k_.scratch[size_t(s.scratch)], e);
    }
    std::string name = s.acc >= 0 ? "acc" + std::to_string(s.acc) : tmp(size_t(s.loop), s.node) + "_v";
    if (!k_.columns) return s.acc >= 0 ? name : tmp(size_t(s.loop), s.node);
    return name + "[" + lane_ + "]";
  }

  // The dtype of the value a Ref node reads (its own dtype may differ).
  ScalarType ref_dtype(const ScalarNode& s) const {
    if (s.scratch >= 0) return k_.scratch[size_t(s.scratch)];
    if (s.acc >= 0) return k_.reductions[size_t(s.acc)].dtype;
    return k_.loops[size_t(s.loop)].body[size_t(s.node)].dtype;
  }

  // The nodes of inner loop li computed once per outer iteration, before
  // the loop (loop_ir.h's row_invariant_nodes): a row's log or rsqrt is not
  // taken per element, and a call GCC cannot vectorise (std::log) no longer
  // keeps the whole loop scalar (a cross-entropy backward kernel over
  // [1024, 96] took 1.8 ms at one thread with log(row sum) in its loop).
  // Not in column kernels, whose loops run per column chunk, nor where the
  // inner loops never run: hoisted, a load would read an empty tensor's
  // element 0 (lgamma of a [0, 5] broadcast view read past nothing and
  // crashed: its call is hoisted, where exp's vector math is not).
  std::vector<bool> invariant_nodes(size_t li) const {
    bool empty = false;
    for (const sym::Expr& e : k_.inner_sizes) empty |= e.is_const() && e.value() <= 0;
    if (k_.columns || empty) return std::vector<bool>(k_.loops[li].body.size(), false);
    return row_invariant_nodes(k_, li);
  }

  // Note [Next-row prefetch]
  // A row kernel's first pass reads its row from memory; the later passes
  // re-read it (or its row scratch) from cache and do the arithmetic
  // (softmax's exp, layer_norm's squares). Each thread runs its rows in
  // order and the next row is usually the next in memory, so the hardware
  // prefetcher keeps streaming -- but only a few KiB ahead of the demand
  // misses, and a later pass over a wide row makes none for a long while.
  // So the first later pass that reduces (the one with the block loop)
  // prefetches the next row's first-pass loads into L2, one line per block
  // of lanes. Measured on the 2-core VM (alternating calls, 2 threads,
  // prefetch on/off): softmax 4096x4096 0.92, 2048x8192 0.97; layer_norm
  // 8192x4096 0.97, 4096x8192 0.94, 32768x1024 0.98 -- and rows of 8 KiB
  // or less lost (softmax 16384x1024 1.05, 8192x2048 1.06: the hardware's
  // lookahead already covers them), a 128 KiB row gained nothing, so only
  // rows of 16 to 64 KiB prefetch. Into L1 instead (locality 3) softmax
  // 4096x4096 gained more (0.85) but layer_norm lost up to 1.55x: the next
  // row evicted the current one's scratch. Only loads contiguous in the
  // innermost inner dim that move with the last outer dim and that the
  // kernel does not write; config.cpp.row_prefetch turns it off.
  struct NextRowPrefetch {
    int buffer;
    sym::Expr index;  // the load's index at the next row (the last outer var + 1)
  };

  void plan_next_row_prefetch() {
    prefetch_loop_ = -1;
    prefetches_.clear();
    if (!row_prefetch_ || k_.columns || k_.gemm || parallel_inner_ || k_.outer.empty() ||
        k_.inner.empty() || k_.outer_numel() < 2)
      return;
    size_t first = 0;
    while (first < k_.loops.size() && !k_.loops[first].inner) ++first;
    size_t target = first + 1;
    while (target < k_.loops.size() &&
           !(k_.loops[target].inner && !k_.loops[target].reductions.empty()))
      ++target;
    if (first >= k_.loops.size() || target >= k_.loops.size()) return;
    const std::unordered_set<int> written = k_.stored_buffers();
    const sym::Expr row = k_.outer.back(), r = k_.inner.back();
    const std::unordered_map<sym::Expr, sym::Expr> next{{row, row + sym::Expr(1)}},
        step{{r, r + sym::Expr(1)}};
    int64_t bytes = 0;
    std::unordered_set<std::string> seen;
    for (const ScalarNode& s : k_.loops[first].body) {
      if (s.kind != ScalarKind::Load || written.count(s.buffer)) continue;
      sym::Expr at_next = sym::simplify(sym::subs(s.index, next));
      if (sym::simplify(at_next - s.index).is_const(0)) continue;  // the same every row
      if (!sym::simplify(sym::subs(s.index, step) - s.index).is_const(1)) continue;
      std::string key = std::to_string(s.buffer) + ":" + sym::to_cpp(at_next);
      if (!seen.insert(key).second) continue;
      bytes += k_.inner_numel() * int64_t(element_size(p_.buffers[size_t(s.buffer)].dtype));
      prefetches_.push_back({s.buffer, at_next});
    }
    constexpr int64_t kMinRowBytes = 16 * 1024, kMaxRowBytes = 64 * 1024;
    if (prefetches_.empty() || bytes < kMinRowBytes || bytes > kMaxRowBytes) {
      prefetches_.clear();
      return;
    }
    prefetch_loop_ = int(target);
  }

  // The prefetches of the next row at this block of loop li (inside the
  // block loop, before its lanes; `pos`: the block's first element): one per
  // cache line the block's lanes span, for reading (0) into L2 (locality 1).
  void print_next_row_prefetch(size_t li, const std::string& ind, const std::string& pos) {
    if (int(li) != prefetch_loop_) return;
    const sym::Expr row = k_.outer.back();
    const std::string rv = var(row), r = var(k_.inner.back());
    os_ << ind << "if (" << rv << " + 1 < " << sz_.expr(k_.outer_sizes.back()) << ") {\n"
        << ind << "  const int64_t " << r << " = " << pos << ";\n";
    for (const NextRowPrefetch& pf : prefetches_) {
      const Buffer& b = p_.buffers[size_t(pf.buffer)];
      const int64_t esize = int64_t(element_size(b.dtype)), line = 64;
      const int64_t span = std::max<int64_t>(lanes_ * esize, line);
      for (int64_t off = 0; off < span; off += line)
        os_ << ind << "  __builtin_prefetch(" << ptr_name(b) << " + (" << sz_.expr(pf.index) << ")"
            << (off ? " + " + std::to_string(off / esize) : std::string()) << ", 0, 1);\n";
    }
    os_ << ind << "}\n";
  }

  // Which of a loop's nodes print_body prints.
  enum class Part { All, Invariant, PerElement };

  void print_body(size_t li, const std::string& ind, Part part = Part::All) {
    const Loop& l = k_.loops[li];
    const std::vector<bool> inv =
        part == Part::All ? std::vector<bool>(l.body.size(), false) : invariant_nodes(li);
    for (size_t i = 0; i < l.body.size(); ++i) {
      const ScalarNode& s = l.body[i];
      if ((part == Part::Invariant && !inv[i]) || (part == Part::PerElement && inv[i])) continue;
      os_ << ind << "const " << ctype(s.dtype) << " " << tmp(li, int(i)) << " = ";
      switch (s.kind) {
        case ScalarKind::Load: {
          const Buffer& b = p_.buffers[size_t(s.buffer)];
          os_ << as_dtype(b.dtype, s.dtype,
                          element_value(b.dtype, ptr_name(b) + "[" + sz_.expr(s.index) + "]"));
          break;
        }
        case ScalarKind::Index: os_ << sz_.expr(s.index); break;
        case ScalarKind::Constant:
          // An integer constant of the computation may be a size too (a
          // mean's count): generic code lifts it like one.
          if (generic_ && s.is_int)
            os_ << convert(ScalarType::Int64, s.dtype, sz_.integer(s.int_value));
          else
            os_ << literal(s);
          break;
        case ScalarKind::Call:
          os_ << "ignis::scalar_ops::" << scalar_struct_name(s.fn) << "{}(";
          for (size_t a = 0; a < s.args.size(); ++a) os_ << (a ? ", " : "") << tmp(li, s.args[a]);
          os_ << ")";
          break;
        case ScalarKind::Cast:
          os_ << convert(l.body[size_t(s.args.at(0))].dtype, s.dtype, tmp(li, s.args.at(0)));
          break;
        case ScalarKind::Where:
          os_ << tmp(li, s.args.at(0)) << " ? " << tmp(li, s.args.at(1)) << " : "
              << tmp(li, s.args.at(2));
          break;
        case ScalarKind::Ref: os_ << as_dtype(ref_dtype(s), s.dtype, ref(s)); break;
      }
      os_ << ";\n";
    }
    if (part == Part::Invariant) return;
    for (const auto& [node, scratch] : l.spills)
      os_ << ind << "scratch" << scratch << "["
          << sz_.expr(sym::simplify(sym::ravel_index(k_.inner, k_.inner_sizes))) << "] = "
          << as_dtype(l.body[size_t(node)].dtype, k_.scratch[size_t(scratch)], tmp(li, node))
          << ";\n";
    for (const Store& st : l.stores) {
      const Buffer& b = p_.buffers[size_t(st.buffer)];
      const std::string at = ptr_name(b) + "[" + sz_.expr(st.index) + "]";
      const std::string v = as_dtype(l.body[size_t(st.value)].dtype, b.dtype, tmp(li, st.value));
      os_ << ind << at << " = " << (st.fold ? combine_expr(*st.fold, at, v) : v) << ";\n";
    }
  }

  // The fold of each of loop li's reductions into `target(r)`.
  template <typename Target>
  void print_folds(size_t li, const std::string& ind, Target target) {
    for (int r : k_.loops[li].reductions) {
      const Reduction& red = k_.reductions[size_t(r)];
      std::string t = target(r);
      os_ << ind << t << " = " << combine_expr(red.combine, t, tmp(li, red.value)) << ";\n";
    }
  }

  // Note [NaN lanes]: a max or min that propagates NaN costs four vector
  // instructions per element (two compares, a mask or and a blend), and
  // that was a tenth of a compiled softmax's time on one core. A float
  // max/min's lanes fold instead with the one-instruction select that skips
  // NaN (`x > acc ? x : acc`) and record in lanes of their own whether an
  // element was NaN; the NaN is put back once the lanes are folded. The tail
  // keeps the propagating form (it folds into lane 0, which starts the fold).
  // The lanes fold with the plain select too, and their NaN flags with one
  // or: the propagating select compiled to two data-dependent branches per
  // lane, and the flags to one each (softmax's row max mispredicts a few of
  // them a row: 2-4% of the kernel's time at two threads on the 2-core VM,
  // alternating runs of the kernel alone), eager's `omp simd reduction(max:)`
  // to none.
  // `x > acc ? x : acc` (or <): one instruction, keeps acc when x is NaN.
  static std::string nan_skipping_select(const Reduction& red, const std::string& x,
                                         const std::string& acc) {
    const char* cmp = red.combine == Combine::Max ? " > " : " < ";
    return x + cmp + acc + " ? " + x + " : " + acc;
  }
  static bool tracks_nan(const Reduction& red) {
    return (red.combine == Combine::Max || red.combine == Combine::Min) &&
           (red.dtype == ScalarType::Float32 || red.dtype == ScalarType::Float64);
  }

  // Note [Counting in 32-bit lanes]
  // An int64 sum of bools or bytes (a mask's count, an accuracy's matches)
  // in int64 lanes beside float work made GCC leave the whole loop scalar:
  // the masked loss's one kernel took 17 ms against 2.1 ms without its
  // count. The lanes of such a sum count in int32 instead, adding the byte
  // itself, and widen to int64 when folded; static code only, and only when
  // the extent times the largest byte stays under 2^31 (no lane can wrap).
  // The node a sum's int32 lanes add (its bool or byte source), or -1.
  int narrow_sum_source(size_t li, const Reduction& red) const {
    if (generic_ || red.combine != Combine::Sum || red.dtype != ScalarType::Int64) return -1;
    const std::vector<ScalarNode>& body = k_.loops[li].body;
    const ScalarNode& v = body[size_t(red.value)];
    if (v.kind != ScalarKind::Cast || v.args.size() != 1) return -1;
    const ScalarType from = body[size_t(v.args[0])].dtype;
    const int64_t largest = from == ScalarType::Bool ? 1
                            : from == ScalarType::UInt8 ? 255
                            : from == ScalarType::Int8 ? 128 : 0;
    if (!largest || k_.inner_sizes.empty()) return -1;
    int64_t n = 1;
    for (const sym::Expr& e : k_.inner_sizes) {
      if (!e.is_const()) return -1;
      n *= e.value();
    }
    return n < (int64_t{1} << 31) / largest ? v.args[0] : -1;
  }
  std::string lane_ctype(size_t li, const Reduction& red) const {
    return narrow_sum_source(li, red) >= 0 ? "int32_t" : ctype(red.dtype);
  }

  // The fold of each of loop li's reductions into its lane `lane`.
  // (`chunked`: float sums fold into their chunk's lanes, Note [Float sums in chunks].)
  void print_lane_folds(size_t li, const std::string& ind, bool chunked = false) {
    for (int r : k_.loops[li].reductions) {
      const Reduction& red = k_.reductions[size_t(r)];
      const int narrow = narrow_sum_source(li, red);
      std::string t = "acc" + std::to_string(r) + (chunked && sums_in_chunks(red) ? "_chunk" : "_lanes") +
                      "[lane]",
                  v = narrow >= 0 ? "static_cast<int32_t>(" + tmp(li, narrow) + ")" : tmp(li, red.value);
      if (!tracks_nan(red)) {
        os_ << ind << t << " = " << combine_expr(red.combine, t, v) << ";\n";
        continue;
      }
      os_ << ind << t << " = " << nan_skipping_select(red, v, t) << ";\n"
          << ind << "nan" << r << "_lanes[lane] |= " << v << " != " << v << ";\n";
    }
  }

  void print_loop(size_t li, const std::string& ind) {
    const Loop& l = k_.loops[li];
    if (!l.inner || k_.inner.empty()) {
      // Once per outer iteration: a scalar block's values stay visible to
      // later loops; a reduction over no dims folds its one value.
      for (int r : l.reductions)
        os_ << ind << ctype(k_.reductions[size_t(r)].dtype) << " acc" << r << " = "
            << combine_init(k_.reductions[size_t(r)].combine) << ";\n";
      if (!l.inner) {
        print_body(li, ind);
        return;
      }
      os_ << ind << "{\n";
      print_body(li, ind + "  ");
      print_folds(li, ind + "  ", [](int r) { return "acc" + std::to_string(r); });
      os_ << ind << "}\n";
      return;
    }
    if (l.reductions.empty()) {
      std::string in = ind;
      // The innermost loop is `omp simd`: its iterations are independent
      // (every value is computed and stored at its own element), and GCC's
      // own analysis gives up on some bodies (GCC 13 on the polynomial exp).
      size_t last = k_.inner.size() - 1;
      print_body(li, in, Part::Invariant);
      if (parallel_inner_) {
        os_ << omp_for(work_, work_text(work_, true, work_factor_), last == 0);
        // (static code chose the team only for a work above the grain)
        if (generic_) os_ << " if (" << work_text(work_, true, work_factor_) << " >= " << grain_ << ")";
        os_ << "\n";
      }
      for (size_t i = 0; i < k_.inner.size(); ++i) {
        if (i == last && !(parallel_inner_ && last == 0)) os_ << in << "#pragma omp simd\n";
        os_ << in << loop_header(k_.inner[i], k_.inner_sizes[i]);
        in += "  ";
      }
      print_body(li, in, Part::PerElement);
      for (size_t i = k_.inner.size(); i-- > 0;) os_ << ind << std::string(2 * i, ' ') << "}\n";
      return;
    }
    if (splits_across_threads(li)) return print_split_reduction(li, ind);
    // A reduction loop: lanes over blocks of the innermost dim, the tail
    // folded into lane 0, then the lanes folded into acc<r>.
    for (int r : l.reductions) {
      const Reduction& red = k_.reductions[size_t(r)];
      os_ << ind << lane_ctype(li, red) << " acc" << r << "_lanes[" << lanes_ << "];\n"
          << ind << "for (int64_t l = 0; l < " << lanes_ << "; ++l) acc" << r << "_lanes[l] = "
          << combine_init(red.combine) << ";\n";
      if (tracks_nan(red))
        os_ << ind << "int32_t nan" << r << "_lanes[" << lanes_ << "] = {};\n";
    }
    print_body(li, ind, Part::Invariant);
    std::string rv = var(k_.inner.back());
    int64_t size = k_.inner_sizes.back().value();
    int64_t main = size - size % lanes_;
    // Whole chunks (float sums cascade through their chunk's lanes: Note
    // [Float sums in chunks]), then the other blocks straight into the lanes.
    const bool chunked = sums_any_in_chunks(li) && (generic_ || main >= 2 * kChunk);
    if (chunked) declare_chunk_lanes(li, ind);
    std::string in = ind;
    for (size_t i = 0; i + 1 < k_.inner.size(); ++i) {
      os_ << in << loop_header(k_.inner[i], k_.inner_sizes[i]);
      in += "  ";
    }
    // Static code prints the blocks and the tail that have iterations, with
    // their bounds; generic code prints both, bounded by the extent.
    std::string size_text = std::to_string(size), main_text = std::to_string(main);
    if (generic_) {
      size_text = sz_.operand(k_.inner_sizes.back());
      main_text = size_text + " - " + size_text + " % " + std::to_string(lanes_);
    }
    const std::string whole = chunked ? whole_chunks(main_text) : "0";
    if (chunked) {
      os_ << in << "for (int64_t chunk = 0; chunk < " << whole << "; chunk += " << kChunk << ") {\n";
      print_chunk(li, in + "  ", "chunk");
      os_ << in << "}\n";
    }
    if (!chunked)
      print_blocks(li, in, "0", main_text, /*chunked=*/false);
    else if (generic_ || main > main / kChunk * kChunk)
      print_chunk(li, in, whole, rest_of_chunks(main_text, whole));
    if (main < size || generic_) {
      os_ << in << "for (int64_t " << rv << " = " << main_text << "; " << rv << " < " << size_text
          << "; ++" << rv << ") {\n";
      print_body(li, in + "  ", Part::PerElement);
      print_folds(li, in + "  ", [](int r) { return "acc" + std::to_string(r) + "_lanes[0]"; });
      os_ << in << "}\n";
    }
    for (size_t i = k_.inner.size() - 1; i-- > 0;) os_ << ind << std::string(2 * i, ' ') << "}\n";
    if (chunked) compensate_lanes(li, ind);
    for (int r : l.reductions) {
      const Reduction& red = k_.reductions[size_t(r)];
      std::string a = "acc" + std::to_string(r);
      os_ << ind << ctype(red.dtype) << " " << a << " = " << a << "_lanes[0];\n";
      if (!tracks_nan(red)) {
        os_ << ind << "for (int64_t l = 1; l < " << lanes_ << "; ++l) " << a << " = "
            << combine_expr(red.combine, a, a + "_lanes[l]") << ";\n";
        continue;
      }
      // (lane 0 may hold the tail's NaN, which the select keeps: its compare is false)
      std::string nan = "nan" + std::to_string(r), lane = a + "_lanes[l]";
      os_ << ind << "for (int64_t l = 1; l < " << lanes_ << "; ++l) " << a << " = "
          << nan_skipping_select(red, lane, a) << ";\n"
          << ind << "int32_t " << nan << " = 0;\n"
          << ind << "for (int64_t l = 0; l < " << lanes_ << "; ++l) " << nan << " |= " << nan
          << "_lanes[l];\n"
          << ind << "if (" << nan << ") " << a << " = " << ctype(red.dtype) << "(__builtin_nan(\"\"));\n";
    }
  }

  // Note [Full reductions across threads]
  // A reduction with no outer loop (x.sum(), a loss's mean, a norm) has
  // nothing for the outer `omp for` to split, and ran on one thread however
  // long it was: the masked loss's 8M-element reductions used one of the 2
  // cores. So such a loop, when its one inner dim spans more than a grain
  // and it writes no row scratch, splits its blocks across the team
  // (`omp for schedule(static)`: contiguous runs in thread order); each
  // thread folds its lanes into a partial, and the partials are folded in
  // thread order after the region, then the tail, so a team of a given size
  // always sums in the same order. Every combine (sum, prod, max, min) is
  // associative; the NaN a max or min skipped in its lanes is put back per
  // thread, and the partials fold with the NaN-propagating combine.
  //
  // A kernel with a few outer iterations (x.sum(1) over 4 rows of 4M: 4 of
  // 16 threads busy) whose inner loops all reduce splits each row the same
  // way, the rows one after another (split_rows_); static code only, which
  // knows the extents, and under kFewRows rows, the bound below which a
  // pointwise kernel splits its inner loop too.
  static constexpr int kMaxParts = 256;
  static constexpr int64_t kFewRows = 16;

  bool splits_across_threads(size_t li) const {
    const Loop& l = k_.loops[li];
    if ((!k_.outer.empty() && !split_rows_) || k_.inner.size() != 1 || !l.spills.empty() ||
        !k_.scratch.empty())
      return false;
    if (generic_) return true;  // the team is chosen at run time (ignis_threads_for)
    const sym::Expr& n = k_.inner_sizes.back();
    return n.is_const() && n.value() >= 2 * grain_ && n.value() >= 2 * lanes_;
  }

  // Whether the kernel's rows split across the threads one by one.
  bool splits_rows() {
    if (generic_ || k_.outer.empty() || k_.outer_numel() >= kFewRows || k_.inner.size() != 1 ||
        !k_.scratch.empty())
      return false;
    split_rows_ = true;  // (asked of each loop below)
    bool any = false;
    for (size_t li = 0; li < k_.loops.size() && split_rows_; ++li) {
      const Loop& l = k_.loops[li];
      if (!l.inner) continue;
      if (l.reductions.empty() || !splits_across_threads(li)) split_rows_ = false;
      any = true;
    }
    return split_rows_ = split_rows_ && any;
  }

  // Note [Float sums in chunks]
  // A lane that adds a million floats one after another rounds each add at
  // its growing total's scale: a compiled float32 sum of 9M values in
  // [0, 255] was off by 7.6e-6 (eager's, which sums pairwise, by 6e-8), and
  // rows of 4M floats summed by x.sum(1) by 1.6e-6 (eager's and
  // torch.compile's 6e-8). So a float sum folds each whole chunk of kChunk
  // elements of its innermost dim into lanes of its own first, then the
  // chunk into the lanes: the error grows with the chunk and the number of
  // chunks, not with the extent (a cascade, as eager's and torch's sums
  // are). The blocks after the last whole chunk are a chunk of their own
  // (added to a large total one by one, they rounded alike each time), and
  // chunks are added into the lanes compensated (print_compensated_add). A
  // dim under two chunks is not chunked (one chunk only adds its fold), the
  // same rule in static and size-generic code, so both sum in one order.
  // Full reductions split across threads chunk the same way, and column
  // kernels cascade their reduced rows (print_columns).
  static constexpr int64_t kChunk = 4096;
  static bool sums_in_chunks(const Reduction& red) {
    return red.combine == Combine::Sum && is_floating(red.dtype);
  }
  bool sums_any_in_chunks(size_t li) const {
    for (int r : k_.loops[li].reductions)
      if (sums_in_chunks(k_.reductions[size_t(r)])) return true;
    return false;
  }
  // The start of the blocks after the whole chunks of [0, main): none when
  // main is under two chunks (one chunk only adds its fold: 4% of a row
  // sum's time over rows of 4096 floats).
  std::string whole_chunks(const std::string& main_text) const {
    if (!generic_) {
      const int64_t main = std::stoll(main_text);
      return std::to_string(main >= 2 * kChunk ? main / kChunk * kChunk : 0);
    }
    const std::string c = std::to_string(kChunk), m = "(" + main_text + ")";
    return "(" + m + " >= " + std::to_string(2 * kChunk) + " ? " + m + " / " + c + " * " + c + " : 0)";
  }
  // The elements of [whole, main): the blocks after the whole chunks.
  std::string rest_of_chunks(const std::string& main_text, const std::string& whole) const {
    if (!generic_) return std::to_string(std::stoll(main_text) - std::stoll(whole));
    return "(" + main_text + ") - " + whole;
  }
  // The chunk lanes of loop li's float sums, and the compensation of their
  // lanes (zero).
  void declare_chunk_lanes(size_t li, const std::string& ind) {
    for (int r : k_.loops[li].reductions) {
      if (!sums_in_chunks(k_.reductions[size_t(r)])) continue;
      const std::string t = ctype(k_.reductions[size_t(r)].dtype), a = "acc" + std::to_string(r);
      os_ << ind << t << " " << a << "_chunk[" << lanes_ << "];\n"
          << ind << t << " " << a << "_comp[" << lanes_ << "] = {};\n";
    }
  }
  // `into[l] += part[l]` over `n` lanes, compensated (Kahan): `comp`
  // keeps what each add rounded away. Adding nearly equal chunk sums into a
  // growing total rounds the same way again and again: the columns of a
  // 300001-row sum drifted to 1.3e-6 without it (eager's: 1.2e-7). A
  // compensation that is not finite is dropped (`c - c == 0` fails for inf
  // and NaN): an infinite total gives (inf - x) - inf = NaN, and a row of
  // 10000 floats holding one inf summed to NaN, not inf.
  void print_compensated_add(const std::string& ind, ScalarType dtype, const std::string& into,
                             const std::string& part, const std::string& comp, int64_t n) {
    const std::string t = ctype(dtype);
    os_ << ind << "#pragma omp simd\n"
        << ind << "for (int64_t l = 0; l < " << n << "; ++l) {\n"
        << ind << "  const " << t << " y = " << part << "[l] - " << comp << "[l];\n"
        << ind << "  const " << t << " s = " << into << "[l] + y;\n"
        << ind << "  const " << t << " c = (s - " << into << "[l]) - y;\n"
        << ind << "  " << comp << "[l] = c - c == 0 ? c : 0;\n"
        << ind << "  " << into << "[l] = s;\n"
        << ind << "}\n";
  }
  // The compensation taken back from loop li's chunked lanes, once their
  // last element is in.
  void compensate_lanes(size_t li, const std::string& ind) {
    for (int r : k_.loops[li].reductions)
      if (sums_in_chunks(k_.reductions[size_t(r)]))
        os_ << ind << "for (int64_t l = 0; l < " << lanes_ << "; ++l) acc" << r << "_lanes[l] -= acc"
            << r << "_comp[l];\n";
  }

  // One chunk of loop li's innermost dim from `start`, `count` elements
  // (kChunk for a whole one, a constant trip count): its float sums in fresh
  // chunk lanes, added into the lanes at its end. (`omp simd` on the small
  // reset and add loops lets GCC keep the chunk's lanes in a register;
  // without it they lived on the stack, 2x slower.)
  void print_chunk(size_t li, const std::string& in, const std::string& start,
                   const std::string& count = std::to_string(kChunk)) {
    for (int r : k_.loops[li].reductions)
      if (sums_in_chunks(k_.reductions[size_t(r)]))
        os_ << in << "#pragma omp simd\n"
            << in << "for (int64_t l = 0; l < " << lanes_ << "; ++l) acc" << r << "_chunk[l] = 0;\n";
    print_blocks(li, in, start, count, /*chunked=*/true);
    for (int r : k_.loops[li].reductions) {
      const Reduction& red = k_.reductions[size_t(r)];
      if (!sums_in_chunks(red)) continue;
      const std::string a = "acc" + std::to_string(r);
      print_compensated_add(in, red.dtype, a + "_lanes", a + "_chunk", a + "_comp", lanes_);
    }
  }

  // Loop li's blocks of lanes over `count` elements of its innermost dim
  // from `start`, folded into the lanes (`chunked`: float sums into their
  // chunk's). (`omp simd`: the lanes are independent, which GCC does not
  // prove on its own for a max with NaN propagation.)
  void print_blocks(size_t li, const std::string& in, const std::string& start,
                    const std::string& count, bool chunked) {
    const std::string at = start == "0" ? "block" : start + " + block";
    os_ << in << "for (int64_t block = 0; block < " << count << "; block += " << lanes_ << ") {\n";
    print_next_row_prefetch(li, in + "  ", at);
    os_ << in << "  #pragma omp simd\n"
        << in << "  for (int64_t lane = 0; lane < " << lanes_ << "; ++lane) {\n"
        << in << "    const int64_t " << var(k_.inner.back()) << " = " << at << " + lane;\n";
    print_body(li, in + "    ", Part::PerElement);
    print_lane_folds(li, in + "    ", chunked);
    os_ << in << "  }\n" << in << "}\n";
  }

  void print_split_reduction(size_t li, const std::string& ind) {
    const Loop& l = k_.loops[li];
    std::string rv = var(k_.inner.back());
    std::string size_text, main_text, team;
    const std::string g = std::to_string(grain_);
    if (generic_) {
      size_text = sz_.operand(k_.inner_sizes.back());
      main_text = size_text + " - " + size_text + " % " + std::to_string(lanes_);
      team = threads_ > 0 ? "(" + size_text + " > " + g + " ? " + std::to_string(threads_) + " : 1)"
                          : "ignis_threads_for(" + size_text + ", " + g + ")";
    } else {
      const int64_t size = k_.inner_sizes.back().value();
      size_text = std::to_string(size);
      main_text = std::to_string(size - size % lanes_);
      team = threads_ > 0 ? std::to_string(threads_) : "ignis_threads(2)";
    }
    const std::string t = "team" + std::to_string(li);
    os_ << ind << "// (split across threads: Note [Full reductions across threads])\n";
    print_body(li, ind, Part::Invariant);
    os_ << ind << "int " << t << " = " << team << ";\n"
        << ind << "if (" << t << " > " << kMaxParts << ") " << t << " = " << kMaxParts << ";\n";
    for (int r : l.reductions) {
      const Reduction& red = k_.reductions[size_t(r)];
      std::string a = "acc" + std::to_string(r);
      os_ << ind << ctype(red.dtype) << " " << a << "_parts[" << kMaxParts << "];\n"
          << ind << "for (int t = 0; t < " << t << "; ++t) " << a << "_parts[t] = "
          << combine_init(red.combine) << ";\n";
    }
    os_ << ind << "#pragma omp parallel num_threads(" << t << ")\n" << ind << "{\n";
    const std::string in = ind + "  ";
    for (int r : l.reductions) {
      const Reduction& red = k_.reductions[size_t(r)];
      os_ << in << lane_ctype(li, red) << " acc" << r << "_lanes[" << lanes_ << "];\n"
          << in << "for (int64_t l = 0; l < " << lanes_ << "; ++l) acc" << r << "_lanes[l] = "
          << combine_init(red.combine) << ";\n";
      if (tracks_nan(red)) os_ << in << "int32_t nan" << r << "_lanes[" << lanes_ << "] = {};\n";
    }
    // Whole chunks across the team (a constant trip count inside, which GCC
    // keeps in registers), then the last part chunk's blocks on thread 0.
    const std::string whole = whole_chunks(main_text);
    declare_chunk_lanes(li, in);
    os_ << in << "#pragma omp for schedule(static) nowait\n"
        << in << "for (int64_t chunk = 0; chunk < " << whole << "; chunk += " << kChunk << ") {\n";
    print_chunk(li, in + "  ", "chunk");
    os_ << in << "}\n";
    const std::string rest = rest_of_chunks(main_text, whole);
    if (rest != "0") {
      os_ << in << "if (omp_get_thread_num() == 0) {\n";
      print_chunk(li, in + "  ", whole, rest);
      os_ << in << "}\n";
    }
    compensate_lanes(li, in);
    // Each thread's partial: its lanes folded (a skipped NaN put back).
    for (int r : l.reductions) {
      const Reduction& red = k_.reductions[size_t(r)];
      std::string a = "acc" + std::to_string(r), lane = a + "_lanes[l]";
      os_ << in << "{\n" << in << "  " << ctype(red.dtype) << " part = " << a << "_lanes[0];\n";
      if (!tracks_nan(red)) {
        os_ << in << "  for (int64_t l = 1; l < " << lanes_ << "; ++l) part = "
            << combine_expr(red.combine, "part", lane) << ";\n";
      } else {
        std::string nan = "nan" + std::to_string(r);
        os_ << in << "  for (int64_t l = 1; l < " << lanes_ << "; ++l) part = "
            << nan_skipping_select(red, lane, "part") << ";\n"
            << in << "  int32_t " << nan << " = 0;\n"
            << in << "  for (int64_t l = 0; l < " << lanes_ << "; ++l) " << nan << " |= " << nan
            << "_lanes[l];\n"
            << in << "  if (" << nan << ") part = " << ctype(red.dtype) << "(__builtin_nan(\"\"));\n";
      }
      os_ << in << "  " << a << "_parts[omp_get_thread_num()] = part;\n" << in << "}\n";
    }
    os_ << ind << "}\n";
    for (int r : l.reductions) {
      const Reduction& red = k_.reductions[size_t(r)];
      std::string a = "acc" + std::to_string(r);
      os_ << ind << ctype(red.dtype) << " " << a << " = " << a << "_parts[0];\n"
          << ind << "for (int t = 1; t < " << t << "; ++t) " << a << " = "
          << combine_expr(red.combine, a, a + "_parts[t]") << ";\n";
    }
    // The tail, after the blocks (serial), folded into acc<r>.
    if (!generic_ && main_text == size_text) return;
    os_ << ind << "for (int64_t " << rv << " = " << main_text << "; " << rv << " < " << size_text
        << "; ++" << rv << ") {\n";
    print_body(li, ind + "  ", Part::PerElement);
    print_folds(li, ind + "  ", [](int r) { return "acc" + std::to_string(r); });
    os_ << ind << "}\n";
  }

  // A GEMM template: the runtime's GEMM (blocked, threaded, BLAS where it
  // wins) calls the epilogue on each finished block of C, which runs the
  // kernel's one loop over the block while it is in cache.
  void print_gemm() {
    const Kernel::Gemm& g = *k_.gemm;
    const Buffer &a = p_.buffers[size_t(g.a)], &b = p_.buffers[size_t(g.b)],
                 &c = p_.buffers[size_t(g.c)];
    std::string epilogue = "nullptr";
    os_ << "// " << k_.name << ": ";
    for (size_t i = 0; i < k_.origins.size(); ++i) os_ << (i ? ", " : "") << k_.origins[i];
    os_ << " (GEMM";
    if (!k_.loops.empty()) {
      os_ << " with its epilogue)\n";
      epilogue = k_.name + "_epilogue";
      os_ << "static void " << epilogue
          << "(void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {\n";
      // Generic code's epilogue gets the parameters with the buffers.
      if (generic_)
        os_ << "  char* const* bufs = static_cast<const IgnisEpilogueContext*>(ctx)->bufs;\n"
            << "  const int64_t* __restrict__ P = static_cast<const IgnisEpilogueContext*>(ctx)->P;\n";
      else
        os_ << "  char* const* bufs = static_cast<char* const*>(ctx);\n";
      declare_pointers();
      std::string row = var(k_.outer.at(0)), col = var(k_.inner.at(0));
      os_ << "  for (int64_t " << row << " = i0; " << row << " < i1; ++" << row << ") {\n"
          << "    #pragma omp simd\n"
          << "    for (int64_t " << col << " = j0; " << col << " < j1; ++" << col << ") {\n";
      print_body(0, "      ");
      os_ << "    }\n  }\n}\n";
    } else {
      os_ << ")\n";
    }
    char alpha[40];
    std::snprintf(alpha, sizeof alpha, "%a", g.alpha);
    auto n = [this](const sym::Expr& e) { return sz_.expr(e); };
    os_ << "extern \"C\" void " << k_.name
        << "(char* const* bufs, const ignis::cpu::KernelRuntime* rt" << signature_params() << ") {\n";
    const bool context = generic_ && !k_.loops.empty();
    if (context) os_ << "  IgnisEpilogueContext ctx{bufs, P};\n";
    os_ << "  const ignis::cpu::GemmCall call{" << n(c.sizes[0]) << ", " << n(c.sizes[1])
        << ", " << n(a.sizes[1]) << ",\n"
        << "      bufs[" << g.a << "], " << n(a.strides[0]) << ", " << n(a.strides[1])
        << ",  // " << a.name << "\n"
        << "      bufs[" << g.b << "], " << n(b.strides[0]) << ", " << n(b.strides[1])
        << ",  // " << b.name << "\n"
        << "      bufs[" << g.c << "], " << n(c.strides[0]) << ",  // " << c.name << "\n"
        << "      " << alpha << ", 0.0, " << (c.dtype == ScalarType::Float64 ? 1 : 0) << ", "
        << epilogue << ", " << (context ? "&ctx" : "const_cast<char**>(bufs)") << "};\n"
        << "  rt->gemm(&call);\n}\n\n";
  }

  // A column kernel: outer loops but the last, then chunks of kColumns of
  // the last outer dim; inside, every loop runs its body for each column of
  // the chunk innermost, and accumulators and scalar values referenced later
  // are arrays over the chunk.
  static constexpr int64_t kColumns = 64;
  static constexpr int64_t kRowChunk = 256;
  static constexpr int kMaxColumnParts = 64;

  // Whether a column kernel with `parallel` independent column chunks of
  // `width` columns splits its rows across the team instead (Note [Full
  // reductions across threads]: a bias gradient's 64 columns over a million
  // rows ran on one thread): static code, under kFewRows chunks, one reduced
  // dim of two blocks or more and two grains of work per chunk, and no value
  // of a loop over the rows read later. A pass that only stores (a
  // standardization's (x - mean) / std over the rows) runs its rows across
  // the team too.
  bool splits_columns(int64_t parallel, int64_t width,
                      const std::vector<std::pair<size_t, int>>& kept) const {
    if (generic_ || parallel >= kFewRows || k_.inner.size() != 1) return false;
    const sym::Expr& rows = k_.inner_sizes.back();
    if (!rows.is_const() || rows.value() < 2 * kChunk || rows.value() * width < 2 * grain_)
      return false;
    for (const auto& [kl, kn] : kept)
      if (k_.loops[kl].inner) return false;
    return true;
  }

  void print_columns() {
    os_ << "// " << k_.name << ": ";
    for (size_t i = 0; i < k_.origins.size(); ++i) os_ << (i ? ", " : "") << k_.origins[i];
    os_ << " (column reduction)\nextern \"C\" void " << k_.name
        << "(char* const* bufs, const ignis::cpu::KernelRuntime*" << signature_params() << ") {\n";
    declare_pointers();
    size_t n = k_.outer.size();
    std::string col = var(k_.outer[n - 1]);
    int64_t cols = k_.outer_sizes[n - 1].value();
    int64_t chunks = (cols + kColumns - 1) / kColumns;
    int64_t work = k_.outer_numel() * k_.inner_numel();
    int64_t parallel = chunks;
    for (size_t i = 0; i + 1 < n; ++i) parallel *= k_.outer_sizes[i].value();
    // Scalar values a later loop reads.
    std::vector<std::pair<size_t, int>> kept;
    for (const Loop& l : k_.loops)
      for (const ScalarNode& s : l.body)
        if (s.kind == ScalarKind::Ref && s.acc < 0 &&
            std::find(kept.begin(), kept.end(), std::make_pair(size_t(s.loop), s.node)) == kept.end())
          kept.emplace_back(size_t(s.loop), s.node);
    split_columns_ = splits_columns(parallel, std::min(cols, kColumns), kept);
    if (parallel > 1 && !split_columns_) {
      std::string w = work_text(work, true, 1);
      os_ << omp_for(work, w) << " collapse(" << n << ") if (" << w << " >= " << grain_ << ")\n";
    }
    std::string ind = "  ";
    for (size_t i = 0; i + 1 < n; ++i) {
      os_ << ind << loop_header(k_.outer[i], k_.outer_sizes[i]);
    }
    const std::string cols_text = sz_.expr(k_.outer_sizes[n - 1]);
    os_ << ind << "for (int64_t chunk = 0; chunk < " << cols_text << "; chunk += " << kColumns
        << ") {\n";
    ind = "    ";
    os_ << ind << "const int64_t chunk_end = chunk + " << kColumns << " < " << cols_text
        << " ? chunk + " << kColumns << " : " << cols_text << ";\n";
    lane_ = col + " - chunk";
    std::string lanes = "for (int64_t " + col + " = chunk; " + col + " < chunk_end; ++" + col + ")";
    for (size_t li = 0; li < k_.loops.size(); ++li) {
      const Loop& l = k_.loops[li];
      // The reduced rows cascade (Note [Float sums in chunks]): a column has
      // one accumulator, not a row's lanes, so its float sums add chunks of
      // kRowChunk rows (a lane's share of a row chunk) into partials, sixteen
      // of those into a block's partials, and the blocks into the sums,
      // compensated; the rows after the last whole block and chunk go
      // straight into the sums.
      // (Split across the team, every reduction runs in row blocks: the
      // blocks are what the threads share.)
      const bool split = split_columns_ && l.inner;
      const sym::Expr rows = l.inner && !k_.inner.empty() ? k_.inner_sizes.back() : sym::Expr(0);
      const bool chunked = l.inner && (split || (sums_any_in_chunks(li) &&
                           (generic_ || (rows.is_const() && rows.value() >= kRowChunk))));
      const bool blocks = chunked && (split || generic_ || rows.value() >= kChunk);
      // The accumulators at `at` (`comp`: with the compensation of their sums).
      auto declare_accs = [&](const std::string& at, bool comp) {
        for (int r : l.reductions) {
          const Reduction& red = k_.reductions[size_t(r)];
          os_ << at << ctype(red.dtype) << " acc" << r << "[" << kColumns << "];\n"
              << at << "for (int64_t l = 0; l < " << kColumns << "; ++l) acc" << r
              << "[l] = " << combine_init(red.combine) << ";\n";
          if (comp && blocks && sums_in_chunks(red))
            os_ << at << ctype(red.dtype) << " acc" << r << "_comp[" << kColumns << "] = {};\n";
        }
      };
      declare_accs(ind, !split);
      for (const auto& [kl, kn] : kept)
        if (kl == li)
          os_ << ind << ctype(l.body[size_t(kn)].dtype) << " " << tmp(kl, kn) << "_v[" << kColumns
              << "];\n";
      // One row of the chunk's columns (`part`: float sums into their
      // chunk's partials).
      auto print_row = [&](const std::string& in, bool part) {
        os_ << in << "#pragma omp simd\n" << in << lanes << " {\n";
        print_body(li, in + "  ");
        print_folds(li, in + "  ", [&](int r) {
          const bool p = part && sums_in_chunks(k_.reductions[size_t(r)]);
          return "acc" + std::to_string(r) + (p ? "_part[" : "[") + lane_ + "]";
        });
        for (const auto& [kl, kn] : kept)
          if (kl == li)
            os_ << in << "  " << tmp(kl, kn) << "_v[" << lane_ << "] = " << tmp(kl, kn) << ";\n";
        os_ << in << "}\n";
      };
      if (!l.inner) {
        print_row(ind, false);
        continue;
      }
      if (split && l.reductions.empty()) {  // a pass that only stores: its rows across the team
        const std::string r = var(k_.inner.back());
        os_ << ind << "// (rows across threads: Note [Full reductions across threads])\n"
            << ind << "#pragma omp parallel for num_threads(ignis_threads(2)) schedule(static)\n"
            << ind << "for (int64_t " << r << " = 0; " << r << " < " << sz_.expr(k_.inner_sizes.back())
            << "; ++" << r << ") {\n";
        print_row(ind + "  ", false);
        os_ << ind << "}\n";
        continue;
      }
      // Split: each thread's accumulators (named as the sums they fold
      // into, which they shadow) over its share of the row blocks, the
      // partials folded in thread order after the region.
      const std::string team = "team" + std::to_string(li);
      std::string lind = ind;
      if (split) {
        os_ << ind << "// (split across threads: Note [Full reductions across threads])\n"
            << ind << "int " << team << " = ignis_threads(2);\n"
            << ind << "if (" << team << " > " << kMaxColumnParts << ") " << team << " = "
            << kMaxColumnParts << ";\n";
        for (int r : l.reductions)
          os_ << ind << ctype(k_.reductions[size_t(r)].dtype) << " acc" << r << "_parts["
              << kMaxColumnParts << "][" << kColumns << "];\n";
        os_ << ind << "#pragma omp parallel num_threads(" << team << ")\n" << ind << "{\n";
        lind = ind + "  ";
        declare_accs(lind, true);
      }
      std::string in = lind;
      for (size_t i = 0; i + 1 < k_.inner.size(); ++i) {
        os_ << in << loop_header(k_.inner[i], k_.inner_sizes[i]);
        in += "  ";
      }
      const std::string r = var(k_.inner.back());
      const std::string blk = std::to_string(kChunk), chk = std::to_string(kRowChunk);
      auto whole = [&](int64_t unit) {
        const std::string u = std::to_string(unit);
        return generic_ ? sz_.operand(rows) + " / " + u + " * " + u
                        : std::to_string(rows.value() / unit * unit);
      };
      // The partials `acc<r><name>` of the loop's float sums, declared zero or
      // added into `acc<r><into>` (the sums themselves for "").
      auto declare_partials = [&](const std::string& in, const std::string& name) {
        for (int red : l.reductions)
          if (sums_in_chunks(k_.reductions[size_t(red)]))
            os_ << in << ctype(k_.reductions[size_t(red)].dtype) << " acc" << red << name << "["
                << kColumns << "] = {};\n";
      };
      auto add_partials = [&](const std::string& in, const std::string& name, const std::string& into) {
        for (int red : l.reductions)
          if (sums_in_chunks(k_.reductions[size_t(red)]))
            os_ << in << "#pragma omp simd\n"
                << in << "for (int64_t l = 0; l < " << kColumns << "; ++l) acc" << red << into
                << "[l] += acc" << red << name << "[l];\n";
      };
      // One chunk of rows from `start`, its partials added into `into`.
      auto print_chunk_rows = [&](const std::string& in, const std::string& start,
                                  const std::string& into) {
        declare_partials(in, "_part");
        os_ << in << "for (int64_t " << r << " = " << start << "; " << r << " < " << start << " + "
            << chk << "; ++" << r << ") {\n";
        print_row(in + "  ", true);
        os_ << in << "}\n";
        add_partials(in, "_part", into);
      };
      std::string from = "0";
      if (chunked) {
        std::string after_blocks = "0";
        if (blocks) {
          after_blocks = whole(kChunk);
          if (split) os_ << in << "#pragma omp for schedule(static) nowait\n";
          os_ << in << "for (int64_t row_block = 0; row_block < " << after_blocks
              << "; row_block += " << blk << ") {\n";
          declare_partials(in + "  ", "_block");
          os_ << in << "  for (int64_t row_chunk = row_block; row_chunk < row_block + " << blk
              << "; row_chunk += " << chk << ") {\n";
          print_chunk_rows(in + "    ", "row_chunk", "_block");
          os_ << in << "  }\n";
          for (int red : l.reductions)
            if (sums_in_chunks(k_.reductions[size_t(red)])) {
              const std::string a = "acc" + std::to_string(red);
              print_compensated_add(in + "  ", k_.reductions[size_t(red)].dtype, a, a + "_block",
                                    a + "_comp", kColumns);
            }
          os_ << in << "}\n";
        }
        from = whole(kRowChunk);
        if (split) {  // (the rows after the blocks: thread 0's)
          os_ << in << "if (omp_get_thread_num() == 0) {\n";
          in += "  ";
        }
        if (generic_ || rows.value() / kRowChunk * kRowChunk > rows.value() / kChunk * kChunk) {
          os_ << in << "for (int64_t row_chunk = " << after_blocks << "; row_chunk < " << from
              << "; row_chunk += " << chk << ") {\n";
          print_chunk_rows(in + "  ", "row_chunk", "");
          os_ << in << "}\n";
        }
      }
      if (!chunked || generic_ || rows.value() > rows.value() / kRowChunk * kRowChunk) {
        // (the last rows of a chunked sum are a partial chunk of their own)
        if (chunked) declare_partials(in, "_part");
        os_ << in << "for (int64_t " << r << " = " << from << "; " << r << " < " << sz_.expr(rows)
            << "; ++" << r << ") {\n";
        print_row(in + "  ", chunked);
        os_ << in << "}\n";
        if (chunked) add_partials(in, "_part", "");
      }
      if (split) os_ << lind << "}\n";
      for (size_t i = k_.inner.size() - 1; i-- > 0;) os_ << lind << std::string(2 * i, ' ') << "}\n";
      for (int red : l.reductions)
        if (blocks && sums_in_chunks(k_.reductions[size_t(red)]))
          os_ << lind << "for (int64_t l = 0; l < " << kColumns << "; ++l) acc" << red << "[l] -= acc"
              << red << "_comp[l];\n";
      if (!split) continue;
      for (int r : l.reductions)
        os_ << lind << "for (int64_t l = 0; l < " << kColumns << "; ++l) acc" << r
            << "_parts[omp_get_thread_num()][l] = acc" << r << "[l];\n";
      os_ << ind << "}\n";
      for (int r : l.reductions) {
        const Reduction& red = k_.reductions[size_t(r)];
        const std::string a = "acc" + std::to_string(r);
        os_ << ind << "for (int64_t l = 0; l < " << kColumns << "; ++l) {\n"
            << ind << "  " << a << "[l] = " << a << "_parts[0][l];\n"
            << ind << "  for (int t = 1; t < " << team << "; ++t) " << a << "[l] = "
            << combine_expr(red.combine, a + "[l]", a + "_parts[t][l]") << ";\n"
            << ind << "}\n";
      }
    }
    os_ << "  }\n";
    for (size_t i = 0; i + 1 < n; ++i) os_ << "  }\n";
    os_ << "}\n\n";
  }

  Text& os_;
  const Program& p_;
  const Kernel& k_;
  std::string lane_;
  std::vector<int> base_;
  int64_t lanes_, grain_, threads_;
  int64_t work_ = 0;  // the kernel's elements times loops (print's estimate)
  int64_t work_factor_ = 1;  // its loops
  bool parallel_inner_ = false;
  bool split_rows_ = false;     // Note [Full reductions across threads]
  bool split_columns_ = false;  // likewise, in a column kernel
  bool generic_;
  bool row_prefetch_;
  // Note [Next-row prefetch]: the loop that prefetches (-1: none), and what.
  int prefetch_loop_ = -1;
  std::vector<NextRowPrefetch> prefetches_;
  SizeParams sz_;
};

}  // namespace

std::string generate_kernel_cpp(const Program& p, const Kernel& k, const CompilerOptions& options) {
  KernelView v = kernel_view(p, k);
  // Note [Inner dims split at their divisions]
  if (std::optional<Kernel> split = split_inner_at_divisions(v.kernel)) v.kernel = std::move(*split);
  v.kernel.name = "ignis_kernel";
  v.kernel.origins.clear();
  Text os;
  KernelPrinter(os, v.program, v.kernel, options).print();
  return os.str();
}

std::string generate_cpp(const Program& p, const CompilerOptions& options) {
  return generate_cpp(p, std::vector<CompilerOptions>(p.kernels.size(), options));
}

std::string generate_cpp(const Program& p, const std::vector<CompilerOptions>& per_kernel) {
  return generate_cpp_code(p, per_kernel).source;
}

const char* cpp_includes() {
  return "#include \"ignis/core/half.h\"\n"
         "#include \"ignis/kernels/cpu/gemm_epilogue.h\"\n"
         "#include \"ignis/kernels/scalar_ops.h\"\n\n"
         "#include <omp.h>\n#include <vector>\n";
}

CppProgramCode generate_cpp_code(const Program& p, const std::vector<CompilerOptions>& per_kernel,
                                 bool lift, Observe observe) {
  Text os;
  os << "// Generated by ignis's compiler (src/ignis/compiler/codegen_cpp.cpp).\n"
     << cpp_includes() << "\n" << sym::cpp_prelude() << "\n";
  // A per-thread row of n values (slot: which of a kernel's rows), kept
  // between calls so the steady state allocates nothing.
  os << "template <typename T, int Slot> inline T* ignis_scratch(int64_t n) {\n"
     << "  thread_local std::vector<T> row;\n"
     << "  if (int64_t(row.size()) < n) row.resize(size_t(n));\n"
     << "  return row.data();\n}\n";
  // Threads for `grains` grains of work: one, or all the process allows (a
  // smaller team makes libgomp's surplus workers exit; see parallel.h).
  os << "static inline int ignis_threads(int64_t grains) {\n"
     << "  return grains > 1 ? omp_get_max_threads() : 1;\n}\n";
  bool generic = false;
  for (const CompilerOptions& o : per_kernel) generic = generic || o.size_generic;
  if (generic) {
    // Size-generic code decides at run time, from the work's expression,
    // what static code decides when printing (ignis_threads(grains)), and
    // hands a GEMM's epilogue the parameters with the buffers.
    os << "static inline int ignis_threads_for(int64_t work, int64_t grain) {\n"
       << "  return work > grain ? omp_get_max_threads() : 1;\n}\n"
       << "struct IgnisEpilogueContext {\n  char* const* bufs;\n  const int64_t* P;\n};\n";
  }
  // max/min propagating NaN (as eager's amax), branch-free so they vectorise.
  os << "template <typename T> inline T ignis_red_max(T a, T b) { return ((a > b) | (a != a)) ? a : b; }\n"
     << "template <typename T> inline T ignis_red_min(T a, T b) { return ((a < b) | (a != a)) ? a : b; }\n\n";
  CppProgramCode code;
  // Note [Kernels of one text] (codegen_cuda.cpp): a kernel whose text,
  // printed over its own view under a neutral name, an earlier kernel
  // printed runs that kernel's function with its own buffers.
  std::unordered_map<std::string, size_t> first_of_text;
  ParamRecorder recorder(observe);  // Note [Parameters that vary with the sizes]
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const Kernel& k = p.kernels[i];
    KernelView v = kernel_view(p, k);
    // Note [Inner dims split at their divisions]
    if (std::optional<Kernel> split = split_inner_at_divisions(v.kernel)) v.kernel = std::move(*split);
    v.kernel.name = "ignis_kernel";
    v.kernel.origins.clear();
    // Note [Parameters that vary with the sizes]: the all-lifted text is
    // what the sizes' values are recorded by and the literals looked up by.
    std::vector<uint8_t> varying;
    Text key;
    KernelPrinter keyed(key, v.program, v.kernel, per_kernel.at(i), true);
    keyed.print();
    if (per_kernel.at(i).size_generic) {
      varying = recorder.literals(key.str(), k, keyed.size_params());
    }
    std::string key_text = key.str();
    std::vector<int64_t> values = keyed.size_params();
    if (per_kernel.at(i).size_generic && (!varying.empty() || !lift)) {
      Text again;
      KernelPrinter rekeyed(again, v.program, v.kernel, per_kernel.at(i), lift);
      rekeyed.keep_literals(varying);
      rekeyed.print();
      key_text = again.str();
      values = rekeyed.size_params();
    }
    code.size_params.push_back(std::move(values));
    auto [first, fresh] = first_of_text.emplace(key_text, i);
    const std::string args = kernel_args_comment(v, p);
    if (fresh) {
      v.kernel.name = k.name;
      v.kernel.origins = k.origins;
      Text text;
      KernelPrinter named(text, v.program, v.kernel, per_kernel.at(i), lift);
      named.keep_literals(varying);
      named.print();
      const std::string& t = text.str();
      const size_t header = t.find('\n') + 1;  // "// kernel_3: its ops" (every printer's first line)
      os << t.substr(0, header) << args << t.substr(header);
      code.symbols.push_back(k.name);
    } else {
      code.symbols.push_back(code.symbols[first->second]);
      os << same_code_comment(k, args, code.symbols.back());
    }
    code.params.push_back(std::move(v.order));
  }
  code.source = os.str();
  return code;
}

}  // namespace ignis::compiler

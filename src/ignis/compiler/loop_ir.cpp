#include "ignis/compiler/loop_ir.h"

#include <algorithm>
#include <cstdio>
#include <unordered_set>

#include "ignis/compiler/text.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/runtime/cpu_info.h"
#include "ignis/sym/eval.h"
#include "ignis/sym/print.h"
#include "ignis/sym/simplify.h"

namespace ignis::compiler {

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Constant: return "constant";
    case BufferKind::Extern: return "extern";
    case BufferKind::Computed: return "computed";
  }
  return "?";
}

const char* scalar_kind_name(ScalarKind k) {
  switch (k) {
#define IGNIS_CASE(K) \
  case ScalarKind::K: return #K;
    IGNIS_FORALL_SCALAR_KINDS(IGNIS_CASE)
#undef IGNIS_CASE
  }
  return "?";
}

const char* combine_name(Combine c) {
  switch (c) {
#define IGNIS_CASE(C, op) \
  case Combine::C: return op;
    IGNIS_FORALL_COMBINES(IGNIS_CASE)
#undef IGNIS_CASE
  }
  return "?";
}

std::unordered_set<int> Kernel::stored_buffers() const {
  std::unordered_set<int> s;
  for (const Loop& l : loops)
    for (const Store& st : l.stores) s.insert(st.buffer);
  return s;
}

sym::Expr Kernel::worker_var(int64_t workers) {
  return sym::index_var("ig_w", std::max<int64_t>(workers, 1));
}

std::vector<const Store*> Kernel::folding_stores() const {
  std::vector<const Store*> out;
  for (const Loop& l : loops)
    for (const Store& st : l.stores)
      if (st.fold && std::none_of(out.begin(), out.end(),
                                  [&](const Store* o) { return o->buffer == st.buffer; }))
        out.push_back(&st);
  return out;
}

std::vector<int> Kernel::buffers_in_order() const {
  std::vector<int> order;
  std::unordered_set<int> seen;
  auto see = [&](int b) {
    if (b >= 0 && seen.insert(b).second) order.push_back(b);
  };
  for (const Loop& l : loops) {
    for (const ScalarNode& s : l.body)
      if (s.kind == ScalarKind::Load) see(s.buffer);
    for (const Store& st : l.stores) see(st.buffer);
  }
  for (const ScratchInOutput& h : scratch_in_output) see(h.buffer);
  if (gemm) {
    see(gemm->a);
    see(gemm->b);
    see(gemm->c);
  }
  for (int b : outputs) see(b);
  return order;
}

Kernel Kernel::with_buffers(const std::unordered_map<int, int>& local) const {
  auto to = [&](int b) { return b < 0 ? b : local.at(b); };
  Kernel k = *this;
  for (Loop& l : k.loops) {
    for (ScalarNode& s : l.body)
      if (s.kind == ScalarKind::Load) s.buffer = to(s.buffer);
    for (Store& st : l.stores) st.buffer = to(st.buffer);
  }
  for (ScratchInOutput& h : k.scratch_in_output) h.buffer = to(h.buffer);
  if (k.gemm) {
    k.gemm->a = to(k.gemm->a);
    k.gemm->b = to(k.gemm->b);
    k.gemm->c = to(k.gemm->c);
  }
  for (int& b : k.outputs) b = to(b);
  return k;
}

KernelView kernel_view(const Program& p, const Kernel& k) {
  KernelView v;
  v.order = k.buffers_in_order();
  v.program.device = p.device;
  std::unordered_map<int, int> local;
  for (int b : v.order) {
    local.emplace(b, int(v.program.buffers.size()));
    v.program.buffers.push_back(p.buffers[size_t(b)]);
    v.program.buffers.back().name = "arg" + std::to_string(v.program.buffers.size() - 1);
  }
  v.kernel = k.with_buffers(local);
  return v;
}

std::string kernel_args_comment(const KernelView& v, const Program& p) {
  std::string s = "//";
  for (size_t a = 0; a < v.order.size(); ++a)
    s += (a ? ", " : " ") + v.program.buffers[a].name + " = " + p.buffers[size_t(v.order[a])].name;
  return s + "\n";
}

std::string same_code_comment(const Kernel& k, const std::string& args_comment,
                              const std::string& symbol) {
  std::string s = "// " + k.name + ": ";
  for (size_t o = 0; o < k.origins.size(); ++o) s += (o ? ", " : "") + k.origins[o];
  return s + "\n" + args_comment + "// runs " + symbol + " (the same code)\n\n";
}

int64_t Kernel::outer_numel() const {
  int64_t n = 1;
  for (const sym::Expr& e : outer_sizes) n *= e.value();
  return n;
}

int64_t Kernel::inner_numel() const {
  int64_t n = 1;
  for (const sym::Expr& e : inner_sizes) n *= e.value();
  return n;
}

std::vector<bool> row_invariant_nodes(const Kernel& k, size_t loop) {
  const Loop& l = k.loops[loop];
  std::vector<bool> inv(l.body.size(), false);
  if (!l.inner || k.inner.empty()) return inv;
  const std::unordered_set<int> written = k.stored_buffers();
  for (size_t i = 0; i < l.body.size(); ++i) {
    const ScalarNode& s = l.body[i];
    switch (s.kind) {
      case ScalarKind::Load: {
        bool outer_only = !written.count(s.buffer);
        for (sym::Expr v : sym::free_symbols(s.index))
          for (const sym::Expr& in : k.inner) outer_only &= sym::compare(v, in) != 0;
        inv[i] = outer_only;
        break;
      }
      case ScalarKind::Constant: inv[i] = true; break;
      case ScalarKind::Index: {
        bool outer_only = true;
        for (sym::Expr v : sym::free_symbols(s.index))
          for (const sym::Expr& in : k.inner) outer_only &= sym::compare(v, in) != 0;
        inv[i] = outer_only;
        break;
      }
      case ScalarKind::Ref: inv[i] = s.scratch < 0; break;
      case ScalarKind::Call:
      case ScalarKind::Cast:
      case ScalarKind::Where:
        inv[i] = true;
        for (int a : s.args) inv[i] = inv[i] && inv[size_t(a)];
        break;
    }
  }
  return inv;
}

std::vector<int> Kernel::node_numbers() const {
  std::vector<int> base;
  int n = 0;
  for (const Loop& l : loops) {
    base.push_back(n);
    n += int(l.body.size());
  }
  return base;
}

int Program::buffer_of(const graph::Node* n) const {
  for (const auto& [node, b] : node_buffers)
    if (node == n) return b;
  return -1;
}

namespace {

std::string list(const std::vector<sym::Expr>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + sym::str(v[i]);
  return s + "]";
}

std::string value_str(const graph::Value& v) {
  switch (v.kind()) {
    case graph::Value::Kind::None: return "None";
    case graph::Value::Kind::Bool: return v.to_bool() ? "True" : "False";
    case graph::Value::Kind::Int: return std::to_string(v.to_int());
    case graph::Value::Kind::Double: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", v.to_double());
      return buf;
    }
    case graph::Value::Kind::Str: return "'" + v.to_str() + "'";
    case graph::Value::Kind::Node: return v.to_node()->name();
    case graph::Value::Kind::List:
    case graph::Value::Kind::Tuple: {
      std::string s = v.kind() == graph::Value::Kind::List ? "[" : "(";
      for (size_t i = 0; i < v.items().size(); ++i)
        s += (i ? ", " : "") + value_str(v.items()[i]);
      return s + (v.kind() == graph::Value::Kind::List ? "]" : ")");
    }
    default: return v.kind_name();
  }
}

}  // namespace

std::string to_string(const Program& p, const Kernel& k) {
  Text os;
  os << k.name << " (";
  for (size_t i = 0; i < k.origins.size(); ++i) os << (i ? ", " : "") << k.origins[i];
  os << ") ->";
  for (int b : k.outputs) os << " " << p.buffers[size_t(b)].name;
  os << "\n  outer";
  for (size_t i = 0; i < k.outer.size(); ++i)
    os << (i ? ", " : " ") << sym::str(k.outer[i]) << " < " << sym::str(k.outer_sizes[i]);
  os << "; inner";
  for (size_t i = 0; i < k.inner.size(); ++i)
    os << (i ? ", " : " ") << sym::str(k.inner[i]) << " < " << sym::str(k.inner_sizes[i]);
  if (k.workers > 0) os << "; rows in " << k.workers << " ranges ig_w";
  os << "\n";
  if (k.gemm) {
    char alpha[32];
    std::snprintf(alpha, sizeof alpha, "%g", k.gemm->alpha);
    os << "  gemm " << p.buffers[size_t(k.gemm->c)].name << " = " << alpha << " * "
       << p.buffers[size_t(k.gemm->a)].name << " @ " << p.buffers[size_t(k.gemm->b)].name
       << (k.loops.empty() ? "\n" : ", then per finished block:\n");
  }
  for (const auto& h : k.scratch_in_output)
    os << "  scratch" << h.scratch << " in " << p.buffers[size_t(h.buffer)].name << "["
       << sym::str(h.base) << " + inner]\n";
  std::vector<int> base = k.node_numbers();
  for (size_t li = 0; li < k.loops.size(); ++li) {
    const Loop& l = k.loops[li];
    int b = base[li];
    os << "  loop " << li << (l.inner ? " over inner" : " once") << ":\n";
    for (size_t i = 0; i < l.body.size(); ++i) {
      const ScalarNode& s = l.body[i];
      os << "    tmp" << (b + int(i)) << ": " << dtype_name(s.dtype) << " = ";
      switch (s.kind) {
        case ScalarKind::Load:
          os << "load " << p.buffers[size_t(s.buffer)].name << "[" << sym::str(s.index) << "]";
          break;
        case ScalarKind::Index: os << "index " << sym::str(s.index); break;
        case ScalarKind::Constant:
          if (s.is_int) os << "constant " << s.int_value;
          else os << "constant " << value_str(graph::Value(s.value));
          break;
        case ScalarKind::Call:
        case ScalarKind::Cast:
        case ScalarKind::Where:
          os << (s.kind == ScalarKind::Call ? s.fn : s.kind == ScalarKind::Cast ? "cast" : "where")
             << "(";
          for (size_t a = 0; a < s.args.size(); ++a) os << (a ? ", " : "") << "tmp" << (b + s.args[a]);
          os << ")";
          break;
        case ScalarKind::Ref:
          if (s.acc >= 0) os << "acc" << s.acc;
          else if (s.scratch >= 0) os << "scratch" << s.scratch << "[inner]";
          else os << "tmp" << (base[size_t(s.loop)] + s.node);
          break;
      }
      os << "\n";
    }
    for (int r : l.reductions)
      os << "    acc" << r << " = " << combine_name(k.reductions[size_t(r)].combine) << "(tmp"
         << (b + k.reductions[size_t(r)].value) << ")\n";
    for (const auto& [node, scratch] : l.spills)
      os << "    scratch" << scratch << "[inner] = tmp" << (b + node) << "\n";
    for (const Store& st : l.stores) {
      if (st.fold) {
        os << "    fold " << p.buffers[size_t(st.buffer)].name << "[" << sym::str(st.index)
           << "] = " << combine_name(*st.fold) << "(tmp" << (b + st.value) << ")\n";
        continue;
      }
      os << "    store " << p.buffers[size_t(st.buffer)].name << "[" << sym::str(st.index)
         << "] = tmp" << (b + st.value) << "\n";
    }
  }
  return os.str();
}

std::string to_string(const Program& p) {
  Text os;
  if (!p.device.is_cpu()) os << "device " << p.device.str() << "\n";
  for (const Buffer& b : p.buffers) {
    os << b.name << ": " << dtype_name(b.dtype) << list(b.sizes) << " strides " << list(b.strides)
       << " " << buffer_kind_name(b.kind);
    if (b.eliminated) os << " (fused away)";
    if (b.written_as >= 0) os << " (written in place as " << p.buffers[size_t(b.written_as)].name << ")";
    if (b.kind == BufferKind::Input) os << " " << b.input_index;
    if (b.kind == BufferKind::Constant) os << " " << b.attr;
    os << "\n";
  }
  for (const Step& s : p.steps) {
    if (s.kind == Step::Kind::RunKernel) {
      os << to_string(p, p.kernels[s.kernel]);
      continue;
    }
    os << (s.view ? "view " : "extern ") << s.op->name() << "(";
    for (size_t i = 0; i < s.args.size(); ++i) {
      const graph::Value& a = s.args[i];
      os << (i ? ", " : "");
      if (a.is_node() && p.buffer_of(a.to_node()) >= 0) os << p.buffers[p.buffer_of(a.to_node())].name;
      else os << value_str(a);
    }
    for (const auto& [k, v] : s.kwargs) os << ", " << k << "=" << value_str(v);
    os << ") ->";
    for (int b : s.outputs) os << " " << (b < 0 ? std::string("_") : p.buffers[b].name);
    os << "\n";
  }
  os << "return (";
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    os << (i ? ", " : "");
    if (p.outputs[i].buffer >= 0) os << p.buffers[p.outputs[i].buffer].name;
    else os << value_str(p.outputs[i].value);
  }
  os << ")\n";
  return os.str();
}

int64_t CompilerOptions::lanes() const {
  if (reduction_lanes > 0) return reduction_lanes;
  return std::max(4, runtime::cpu_info().vector_bits / 32);
}

std::string CompilerOptions::fingerprint() const {
  return std::to_string(realize_opcount_threshold) + "," + std::to_string(realize_reads_threshold) +
         "," + std::to_string(max_fusion_size) + "," + std::to_string(min_parallel_elements) +
         "," + std::to_string(threads) + "," + std::to_string(lanes()) +
         "," + std::to_string(cuda_row_vectors) + (cuda_row_prefetch ? ",prefetch" : "") + (cuda_row_occupancy ? ",occupancy" : "") +
         (cuda_online_softmax ? ",online" : "") + (cuda_generic_rows ? ",generic_rows" : "") +
         (cuda_generic_exact_rows ? ",generic_exact_rows" : "") +
         (cuda_row_one_wave ? ",one_wave" : "") +
         (cuda_activation_epilogues ? ",act_epilogues" : "") +
         (cuda_row_hoist_chunks ? ",hoist_chunks" : "") +
         (cuda_column_vectors ? ",column_vectors" : "") +
         (cuda_spread_small ? ",spread_small" : "") +
         (cuda_split_rows ? ",split_rows>=" + std::to_string(cuda_split_rows_min_elements) + "/" +
                                std::to_string(cuda_split_rows_blocks)
                          : "") +
         ",pw_vectors=" + std::to_string(cuda_pointwise_vectors) +
         (cuda_streaming_loads ? ",streaming" : "") +
         ",column_split_rows=" + std::to_string(cuda_column_split_rows) +
         (realize_across_kernels ? ",across" : "") +
         (column_sums_in_rows ? ",column_sums_in_rows>=" + std::to_string(column_sums_min_rows) +
                                    "x" + std::to_string(cuda_column_sums_min_row)
                              : "") +
         (cpu_row_prefetch ? ",cpu_prefetch" : "") +
         (size_generic ? ",generic" : "");
}

namespace {

// The constants c of every x // c and x % c in e (x itself divided).
void divisors_of(sym::Expr e, sym::Expr x, std::vector<int64_t>* divisors) {
  if (!e.defined() || e.is_const() || e.is_symbol()) return;
  if ((e.kind() == sym::Kind::FloorDiv || e.kind() == sym::Kind::Mod) && e.arg(0) == x &&
      e.arg(1).is_const())
    divisors->push_back(e.arg(1).value());
  for (const sym::Expr& a : e.args()) divisors_of(a, x, divisors);
}

// Whether e has a floor division or remainder of an expression using v or w.
bool divides(sym::Expr e, sym::Expr v, sym::Expr w) {
  if (!e.defined() || e.is_const() || e.is_symbol()) return false;
  if (e.kind() == sym::Kind::FloorDiv || e.kind() == sym::Kind::Mod) {
    const std::vector<sym::Expr> used = sym::free_symbols(e);
    if (std::find(used.begin(), used.end(), v) != used.end() ||
        std::find(used.begin(), used.end(), w) != used.end())
      return true;
  }
  for (const sym::Expr& a : e.args())
    if (divides(a, v, w)) return true;
  return false;
}

}  // namespace

std::optional<Kernel> split_inner_at_divisions(const Kernel& k) {
  if (k.gemm || k.columns || k.workers > 0 || !k.scratch.empty() || k.loops.size() != 1 ||
      !k.loops[0].inner || !k.loops[0].reductions.empty() || k.inner.empty() ||
      !k.inner_sizes.back().is_const())
    return std::nullopt;
  const sym::Expr x = k.inner.back();
  const int64_t extent = k.inner_sizes.back().value();
  const Loop& loop = k.loops[0];
  std::vector<int64_t> divisors;
  for (const ScalarNode& n : loop.body)
    if (n.kind == ScalarKind::Load || n.kind == ScalarKind::Index) divisors_of(n.index, x, &divisors);
  for (const Store& st : loop.stores) divisors_of(st.index, x, &divisors);
  if (divisors.empty()) return std::nullopt;
  const int64_t c = divisors.front();
  for (int64_t d : divisors)
    if (d != c) return std::nullopt;
  if (c < 8 || extent % c != 0 || extent / c < 2) return std::nullopt;
  // A kernel of few outer iterations spreads its inner loop over the threads
  // (the printers' parallel inner loop): split, only its E / c outer part
  // would be spread, so keep the one loop unless that part has room.
  if (k.outer_numel() < 16 && extent / c < 16) return std::nullopt;
  const std::string name = sym::symbol_name(x);
  const sym::Expr xo = sym::index_var(name + "_o", extent / c);
  const sym::Expr xi = sym::index_var(name + "_i", c);
  const std::unordered_map<sym::Expr, sym::Expr> at{{x, xo * c + xi}};
  Kernel out = k;
  Loop& l = out.loops[0];
  auto rewrite = [&](sym::Expr& e) {
    e = sym::simplify(sym::subs(e, at));
    return !divides(e, xo, xi);
  };
  for (ScalarNode& n : l.body)
    if ((n.kind == ScalarKind::Load || n.kind == ScalarKind::Index) && !rewrite(n.index))
      return std::nullopt;
  for (Store& st : l.stores)
    if (!rewrite(st.index)) return std::nullopt;
  out.inner.back() = xo;
  out.inner_sizes.back() = sym::Expr(extent / c);
  out.inner.push_back(xi);
  out.inner_sizes.push_back(sym::Expr(c));
  return out;
}

}  // namespace ignis::compiler


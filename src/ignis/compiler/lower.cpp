#include "ignis/compiler/lower.h"
#include "ignis/compiler/memory_plan.h"

#include "ignis/compiler/body.h"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "ignis/core/error.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/interpreter.h"
#include "ignis/graph/passes/gemm_activation.h"
#include "ignis/graph/passes/hash.h"
#include "ignis/graph/passes/complex_views.h"
#include "ignis/graph/passes/row_scatter.h"
#include "ignis/graph/passes/sink_gather.h"
#include "ignis/kernels/scalar_ops.h"
#include "ignis/ops/op_def.h"
#include "ignis/sym/eval.h"
#include "ignis/sym/index.h"
#include "ignis/sym/simplify.h"

namespace ignis::compiler {

using graph::Node;
using graph::OpKind;
using graph::Value;
using sym::Expr;

namespace {

// ---- scalar functions: what scalar_ops.h's structs take and return --------------

struct ScalarSignature {
  int arity = -1;             // operands (-1: unknown name)
  bool returns_bool = false;  // comparisons, predicates, logical ops
};

template <typename S, typename... Args>
ScalarSignature sig() {  // the declared return type: no body is instantiated
  return {int(sizeof...(Args)), std::is_same_v<std::invoke_result_t<S, Args...>, bool>};
}

template <typename S>
ScalarSignature signature_of() {
  if constexpr (std::is_invocable_v<S, float>) return sig<S, float>();
  else if constexpr (std::is_invocable_v<S, float, float>) return sig<S, float, float>();
  else if constexpr (std::is_invocable_v<S, float, float, float>) return sig<S, float, float, float>();
  else if constexpr (std::is_invocable_v<S, float, float, float, float>)
    return sig<S, float, float, float, float>();
  else return ScalarSignature{};
}

// Read from the structs themselves, so a new scalar function needs no entry here.
ScalarSignature scalar_signature(const std::string& name) {
  static const std::unordered_map<std::string, ScalarSignature> table = [] {
    std::unordered_map<std::string, ScalarSignature> t;
#define IGNIS_ENTRY(S) t[scalar_ops::S::name] = signature_of<scalar_ops::S>();
    IGNIS_FORALL_SCALAR_OPS(IGNIS_ENTRY)
#undef IGNIS_ENTRY
    return t;
  }();
  auto it = table.find(name);
  return it == table.end() ? ScalarSignature{} : it->second;
}

struct Val {
  std::vector<int64_t> sizes;
  ScalarType dtype = ScalarType::Float32;
  int buffer = -1;  // realized: the buffer holding it
  Body body;        // virtual (buffer < 0)
  std::vector<std::string> origins;  // nodes fused into a virtual value
};

enum class How : uint8_t { Pointwise, View, Reduction, Template, Concat, Extern };

// The view ops (by base name) lowered as index remappings (lower_view).
const std::unordered_set<std::string>& view_ops() {
  static const std::unordered_set<std::string> t = {
      "view", "_unsafe_view", "reshape", "permute", "expand", "unsqueeze",
      "squeeze", "t", "transpose", "slice", "select", "alias"};
  return t;
}

int64_t norm_dim(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

class Lowering {
 public:
  // realize: names of nodes computed into buffers whatever the policy says
  // (Note [Values recomputed across kernels]).
  Lowering(const graph::Graph& g, const CompilerOptions& options,
           std::unordered_set<std::string> realize = {})
      : g_(g), options_(options), forced_(std::move(realize)) {}

  // recomputed: when given, the pointwise values the schedule recomputes
  // in several kernels that would be cheaper stored once, each with why.
  Program run(std::map<std::string, std::string>* recomputed = nullptr) {
    choose_device();
    classify();
    for (Node* n : g_.nodes()) lower_node(n);
    schedule(p_, std::move(computes_), std::move(externs_), order_, options_);
    if (recomputed) *recomputed = recomputed_across_kernels();
    write_results_in_place(p_);
    return std::move(p_);
  }

  // Note [Values recomputed across kernels]
  // The realize policy (needs_realize) inlines a cheap value into each of
  // its users, and the scheduler fuses each user with its own kernel: a
  // residual stream h = h + delta read by every layer's layer norm is
  // recomputed from the embeddings on by each norm until its reads pass
  // realize_reads_threshold (GPT-2's norm kernels read 2, 3, 4, then 5
  // tensors of [4096, 768], torch.compile's likewise). Once scheduled, a
  // pointwise value that several kernels recompute and that reads two or
  // more tensors of its full shape costs less stored: one write by the first
  // kernel (fused there as a second output) and one read by each later
  // one, against every read again by each. lower_graph lowers such graphs
  // again with those values realized, while new ones appear. Loads of
  // broadcast operands (a bias row) do not count: they stay in cache.
  std::map<std::string, std::string> recomputed_across_kernels() const {
    std::unordered_map<std::string, std::vector<std::string>> kernels;
    for (const Kernel& k : p_.kernels)
      for (const std::string& o : k.origins) kernels[o].push_back(k.name);
    std::map<std::string, std::string> out;
    for (const auto& [n, v] : vals_) {
      if (v.buffer >= 0 || n->users().size() <= 1 || forced_.count(n->name())) continue;
      auto h = how_.find(n);
      if (h == how_.end() || h->second != How::Pointwise) continue;
      auto k = kernels.find(n->name());
      if (k == kernels.end() || k->second.size() < 2) continue;
      const int64_t loads = full_loads(v);
      if (loads < 2) continue;
      std::string why = "realized " + n->name() + ": recomputed from " + std::to_string(loads) +
                        " tensors by";
      for (const std::string& kn : k->second) why += " " + kn;
      out.emplace(n->name(), why + " (Note [Values recomputed across kernels])");
    }
    return out;
  }

  // The distinct tensors v reads element for element (a load whose index
  // moves with every dim of v's shape longer than one).
  static int64_t full_loads(const Val& v) {
    BodyBuilder bb;
    const Coords c = canonical_coords(v.sizes);
    v.body(bb, c);
    std::set<int> buffers;
    for (const ScalarNode& s : bb.body) {
      if (s.kind != ScalarKind::Load) continue;
      const std::vector<sym::Expr> used = sym::free_symbols(s.index);
      bool full = true;
      for (size_t d = 0; d < c.size(); ++d)
        if (v.sizes[d] > 1 && std::find(used.begin(), used.end(), c[d]) == used.end()) full = false;
      if (full) buffers.insert(s.buffer);
    }
    return int64_t(buffers.size());
  }

 private:
  // ---- deciding what each node becomes ----

  static const graph::TensorMeta& meta(const Node* n, size_t i = 0) {
    IGNIS_CHECK_KIND(NotImplemented, n->meta().tensors.size() > i, "compiler: node ", n->name(),
                     " has no tensor metadata");
    return n->meta().tensors[i];
  }

  // The op's arguments in schema order, defaults filled in.
  static std::vector<Value> full_args(const Node* n) {
    const FunctionSchema& s = n->target().op->schema();
    std::vector<Value> out;
    for (size_t i = 0; i < s.args.size(); ++i) {
      if (i < n->args().size()) out.push_back(n->args()[i]);
      else if (const Value* v = n->kwarg(s.args[i].name)) out.push_back(*v);
      else if (s.args[i].has_default) out.push_back(graph::from_ivalue(s.args[i].default_value));
      else out.push_back(Value());
    }
    return out;
  }

  static bool is_float_dtype(ScalarType t) {
    return t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::BFloat16 ||
           t == ScalarType::Float16;
  }
  // The dtypes kernels read and write: floats, the integers and bool.
  static bool is_kernel_dtype(ScalarType t) {
    switch (t) {
      case ScalarType::Float32: case ScalarType::Float64: case ScalarType::BFloat16:
      case ScalarType::Float16: case ScalarType::Int64: case ScalarType::Int32:
      case ScalarType::Int16: case ScalarType::Int8: case ScalarType::UInt8:
      case ScalarType::Bool:
        return true;
      default: return false;
    }
  }

  // The scalar functions that are exact on integers and bool (no division,
  // whose integer form traps on zero, and no transcendental).
  static bool is_integer_safe(const std::string& fn) {
    static const std::unordered_set<std::string> t = {
        "add", "sub", "mul", "neg", "abs", "relu", "sign", "square", "maximum", "minimum",
        "clamp", "clamp_min", "clamp_max", "where", "eq", "ne", "lt", "le", "gt", "ge",
        "bitwise_and", "bitwise_or", "bitwise_xor", "logical_not", "logical_and", "logical_or",
        "logical_xor"};
    return t.count(fn) != 0;
  }



  // What a pointwise node computes: a scalar_ops call, a select (where), a
  // copy (identity) or a conversion (cast) of its operands (nodes or
  // numbers); kind None when the node is outside the slice.
  enum class PwKind : uint8_t { None, Call, Where, Identity, Cast, Arange, Pad };
  struct PointwiseCall {
    PwKind kind = PwKind::None;
    std::string fn;
    std::vector<Value> operands;
    ScalarType compute = ScalarType::Float32;  // the operands' (and constants') type
    // The operands' common dtype (compute's unless it is a 16-bit float): a
    // 16-bit float operand of a wider one rounds to its own dtype first.
    ScalarType common = ScalarType::Undefined;
    // A 16-bit float the result rounds to before it goes on in its compute
    // type (a narrowing copy: Note [Copies to a 16-bit float]); Undefined
    // when nothing rounds.
    ScalarType rounds_to = ScalarType::Undefined;
    // Pad: torch's pad list (last dim first: low, high, then the dim before).
    std::vector<int64_t> pads;
  };

  static const graph::TensorMeta* single_meta(const Node* n) {
    if (n->meta().tensors.size() != 1 || n->meta().tuple_output) return nullptr;
    return &n->meta().tensors[0];
  }

  // Whether number v is stored exactly in dtype t (eager's fill raises on
  // overflow; leave anything near that to eager). Infinities and NaN are
  // every float dtype's (a mask's -inf).
  static bool exact_in(const Value& v, ScalarType t) {
    if (v.kind() == Value::Kind::Double) {
      double x = v.to_double();
      return is_float_dtype(t) && (x == 0 || !std::isfinite(x) ||
                                   (std::abs(x) >= 1e-4 && std::abs(x) <= 6e4));
    }
    if (v.kind() != Value::Kind::Int || t == ScalarType::Bool) return false;
    int64_t x = v.to_int();
    switch (t) {
      case ScalarType::Int8: return x >= -128 && x <= 127;
      case ScalarType::UInt8: return x >= 0 && x <= 255;
      case ScalarType::Int16: return x >= -32768 && x <= 32767;
      case ScalarType::Int32: return x >= INT32_MIN && x <= INT32_MAX;
      case ScalarType::Int64: return true;
      default: return std::abs(x) <= 2048;  // floats: exact even in float16
    }
  }

  // Note [Operands of another dtype]
  // Eager converts every operand of a pointwise op to the common dtype
  // (TensorIterator) and computes there: a bool or integer tensor added to a
  // float one, and 0-dim tensors, which do not take part in promotion against
  // tensors with dims of the same or a higher kind (bool < integer < float).
  // Most such 0-dim operands are numbers a decomposition or a reversed
  // operator made tensors (`1 - x` traces as sub(1, x), whose self can only
  // be a tensor: a wrapped int64 or float64 constant). They were externs,
  // each a pass over memory and a buffer; now the kernel loads the operand
  // and converts it to the compute type. An operand converts when that is
  // what eager does: of a lower kind, or of the same kind and narrower, or
  // (when dt is known to be the common dtype) 0-dim. No 16-bit float as
  // the common dtype: eager rounds an operand to a 16-bit dt first. A 16-bit
  // float operand of a wider float dt (layer_norm's bfloat16 x less its
  // float32 mean) converts, rounded to its own dtype first: eager's operand
  // was a stored 16-bit tensor, while a fused one computes in float32 and
  // rounds only at its store (a load rounds to itself: no instruction).
  static int kind_rank(ScalarType t) {
    return t == ScalarType::Bool ? 0 : is_float_dtype(t) ? 2 : 1;
  }
  static bool converts_to(const graph::TensorMeta& m, ScalarType dt, bool dt_is_common) {
    if (dt == ScalarType::Undefined || !is_kernel_dtype(m.dtype) || !is_kernel_dtype(dt) ||
        compute_type(dt) != dt)
      return false;
    if (compute_type(m.dtype) != m.dtype)  // a 16-bit float: into a wider float
      return is_float_dtype(dt) && element_size(m.dtype) < element_size(dt);
    const int mk = kind_rank(m.dtype), dk = kind_rank(dt);
    if (dt_is_common && m.sizes.empty()) return mk <= dk;
    return mk < dk || (mk == dk && element_size(m.dtype) < element_size(dt));
  }

  // clone, _to_copy (between kernel dtypes on the program's device) and copy (src
  // broadcast into self's layout): copies, so the value is the source's
  // (converted as eager converts: a C++ static_cast of the compute values).
  PointwiseCall copy_call(const Node* n, const std::vector<Value>& args) const {
    const std::string& name = n->target().op->schema().name;
    const graph::TensorMeta* out = single_meta(n);
    size_t src = name == "copy" ? 1 : 0;
    if (!out || args.size() <= src) return {};
    if (name == "copy" && !args[src].is_node()) {
      // A number copied into every element (a decomposed fill / zeros_like):
      // a constant; self's old contents are never read.
      return constant_call(out, args[src]);
    }
    if (!args[src].is_node()) return {};
    const graph::TensorMeta* in = single_meta(args[src].to_node());
    if (!in || !is_kernel_dtype(in->dtype) || !is_kernel_dtype(out->dtype) ||
        !on_device(in) || !on_device(out))
      return {};
    PointwiseCall pc;
    pc.kind = compute_type(in->dtype) == compute_type(out->dtype) ? PwKind::Identity : PwKind::Cast;
    pc.operands.push_back(args[src]);
    pc.compute = compute_type(in->dtype);
    // Note [Copies to a 16-bit float]
    // A 16-bit float computes in float32, and a chain of such ops rounds
    // once, where it is stored. An explicit copy to bfloat16 or half is
    // different: the program asked for the rounding (`x.to(bfloat16).float()`
    // is x rounded), and what reads the copy inside this kernel must see the
    // rounded value, as it reads eager's stored tensor. The compute types
    // agree (float32 both), so without this the copy would be the identity.
    // (A cast of the rounded value back to bfloat16 where it is stored is
    // the rounded value: BodyBuilder's cast shortcut.) Copies between equal
    // dtypes and from bool or a byte integer (exact in 16 bits) round nothing.
    const bool exact = in->dtype == out->dtype || in->dtype == ScalarType::Bool ||
                       in->dtype == ScalarType::Int8 || in->dtype == ScalarType::UInt8;
    if (compute_type(out->dtype) != out->dtype && !exact) pc.rounds_to = out->dtype;
    return pc;
  }

  // arange(start, end, step): element i is start + step * i, computed where
  // it is read (a causal mask's positions, an embedding's) rather than a
  // buffer an extern fills. Integer starts and steps only, with every value
  // exact in a float (|v| <= 2^24): eager's float formula (start + step *
  // double(i)) then rounds as the integer arithmetic here does, whatever
  // the compilers contract into an FMA. Others stay externs.
  PointwiseCall arange_call(const Node* n) const {
    const graph::TensorMeta* out = single_meta(n);
    if (!out || !on_device(out) || !is_kernel_dtype(out->dtype) || out->sizes.size() != 1)
      return {};
    std::vector<Value> args = full_args(n);
    const bool has_start = n->target().op->schema().overload == "start";
    Value start = has_start ? args.at(0) : Value(int64_t(0));
    Value step = has_start ? args.at(2) : Value(int64_t(1));
    if (start.kind() != Value::Kind::Int || step.kind() != Value::Kind::Int) return {};
    const int64_t s = start.to_int(), st = step.to_int(), count = out->sizes[0];
    const int64_t limit = int64_t(1) << 24;
    auto exact = [&](int64_t v) { return v >= -limit && v <= limit; };
    if (count > 0 && (!exact(s) || !exact(s + st * (count - 1)) || !exact(st))) return {};
    PointwiseCall pc;
    pc.kind = PwKind::Arange;
    pc.operands = {start, step};
    pc.compute = ScalarType::Int64;
    return pc;
  }

  // pad(self, pads, "constant", value): self's element where the output's
  // coordinates fall inside it, else the value; computed where it is read
  // (a slice's gradient padded back to the sliced tensor, added to its
  // siblings': one kernel rather than a pass and a buffer per pad). The
  // read is clamped into self, so the select never reads outside it.
  PointwiseCall pad_call(const Node* n) const {
    const graph::TensorMeta* out = single_meta(n);
    std::vector<Value> args = full_args(n);
    if (!out || !on_device(out) || !is_kernel_dtype(out->dtype) || !args[0].is_node()) return {};
    const graph::TensorMeta* in = single_meta(args[0].to_node());
    if (!in || !on_device(in) || in->dtype != out->dtype || !args[1].is_sequence() ||
        args[2].kind() != Value::Kind::Str || args[2].to_str() != "constant")
      return {};
    for (int64_t s : in->sizes)
      if (s == 0) return {};  // nothing to read: the extern fills
    PointwiseCall pc;
    for (const Value& v : args[1].items()) {
      if (v.kind() != Value::Kind::Int) return {};
      pc.pads.push_back(v.to_int());
    }
    if (pc.pads.size() % 2 || pc.pads.size() > 2 * in->sizes.size()) return {};
    Value fill = args[3].is_none() ? Value(int64_t(0)) : args[3];
    if (!exact_in(fill, out->dtype)) return {};
    pc.kind = PwKind::Pad;
    pc.operands = {args[0], fill};
    pc.compute = compute_type(out->dtype);
    return pc;
  }

  // Number v in every element of out: a constant computed where it is read
  // (a fill's copy, full's zero tangent or mask) rather than a buffer an
  // extern fills.
  PointwiseCall constant_call(const graph::TensorMeta* out, const Value& v) const {
    if (!out || !on_device(out) || !is_kernel_dtype(out->dtype) || !exact_in(v, out->dtype))
      return {};
    PointwiseCall pc;
    pc.kind = PwKind::Identity;
    pc.operands.push_back(v);
    pc.compute = compute_type(out->dtype);
    return pc;
  }

  PointwiseCall pointwise_call(const Node* n) const {
    const OpHandle* op = n->target().op;
    const OpDef* d = op->def();
    // empty / empty_strided: their values are unspecified, so zeros are as
    // good as any. Read by nothing (a fill's copy never reads its self), the
    // node is dead and no buffer is allocated for it (an extern allocated one).
    if (d && d->determinism == Determinism::Uninitialized && d->category == OpCategory::Creation)
      return constant_call(single_meta(n), Value(int64_t(0)));
    if (!d || n->target().impure() || n->target().nondeterministic()) return {};
    const std::string& opname = op->schema().name;
    if (opname == "clone" || opname == "_to_copy" || opname == "copy")
      return copy_call(n, full_args(n));
    if (opname == "full") return constant_call(single_meta(n), full_args(n).at(1));
    if (opname == "arange") return arange_call(n);
    if (opname == "pad") return pad_call(n);
    const graph::TensorMeta* out = single_meta(n);
    if (d->category != OpCategory::Pointwise || d->scalar.empty() || !out || !on_device(out))
      return {};
    std::string fn = d->scalar;
    // One storage dtype for every tensor operand (where's condition aside):
    // the output's, or for a bool-valued function the operands' own. The
    // math runs in its compute type (float for 16-bit floats, rounded once
    // when stored).
    ScalarType dt = out->dtype;
    std::vector<Value> args = full_args(n);
    // Whether dt is the common dtype eager converts every operand to (Note
    // [Operands of another dtype]): the output's, or the promotion of the
    // compared operands that have dims (0-dim ones do not decide the type;
    // bfloat16 against float32 compares in float32).
    bool dt_is_common = true;
    if (scalar_signature(fn).returns_bool) {
      if (dt != ScalarType::Bool) return {};
      dt = ScalarType::Undefined;  // from the operands
      for (const Value& a : args) {
        const graph::TensorMeta* m = a.is_node() ? single_meta(a.to_node()) : nullptr;
        if (m && !m->sizes.empty() && is_kernel_dtype(m->dtype))
          dt = dt == ScalarType::Undefined ? m->dtype : promote_types(dt, m->dtype);
      }
      if (dt != ScalarType::Undefined && !is_kernel_dtype(dt)) return {};
      dt_is_common = dt != ScalarType::Undefined;
    } else if (!is_kernel_dtype(dt)) {
      return {};
    }
    PointwiseCall pc;
    const FunctionSchema& s = op->schema();
    for (size_t i = 0; i < args.size(); ++i) {
      const Value& a = args[i];
      const std::string& name = s.args[i].name;
      if (a.kind() == Value::Kind::Str || (a.is_none() && name == "rounding_mode")) {
        // The string arguments that pick a formula (scalar_ops.h's conventions).
        if (name == "rounding_mode") {
          if (a.is_none()) continue;
          if (a.to_str() != "trunc" && a.to_str() != "floor") return {};
          fn += "_" + a.to_str();
        } else if (name == "approximate") {
          if (a.to_str() == "tanh") fn += "_tanh";
          else if (a.to_str() != "none") return {};
        } else {
          return {};
        }
        continue;
      }
      if (a.is_none() && fn == "clamp" && (name == "min" || name == "max")) {
        // clamp with one bound is clamp_max / clamp_min of the other.
        fn = name == "min" ? "clamp_max" : "clamp_min";
        continue;
      }
      if (a.is_node()) {
        const graph::TensorMeta* m = single_meta(a.to_node());
        if (!m || !on_device(m)) return {};  // a CPU scalar tensor with CUDA ones: eager's
        if (fn == "where" && pc.operands.empty()) {
          if (m->dtype != ScalarType::Bool) return {};
        } else if (dt == ScalarType::Undefined && is_kernel_dtype(m->dtype)) {
          dt = m->dtype;
        } else if (m->dtype != dt && !converts_to(*m, dt, dt_is_common)) {
          return {};
        }
      } else if (a.kind() != Value::Kind::Double && a.kind() != Value::Kind::Int) {
        return {};  // bools, lists, dtypes, None: not a number operand
      } else if (fn == "where" && pc.operands.empty()) {
        return {};  // a constant condition
      }
      pc.operands.push_back(a);
    }
    if (fn == "clamp_min_max" || dt == ScalarType::Undefined) return {};
    if (scalar_signature(fn).arity != int(pc.operands.size())) return {};
    if (!is_float_dtype(dt) && !is_integer_safe(fn)) return {};
    // A number operand that eager would promote the tensor for (a float
    // with integer tensors, any number with bool ones): leave it to eager.
    for (const Value& a : pc.operands) {
      if (a.kind() == Value::Kind::Double && !is_float_dtype(dt)) return {};
      if (a.kind() == Value::Kind::Int && dt == ScalarType::Bool) return {};
    }
    pc.kind = fn == "where" ? PwKind::Where : PwKind::Call;
    pc.fn = fn;
    pc.compute = compute_type(dt);
    pc.common = dt;
    return pc;
  }

  How how_of(const Node* n) const {
    if (n->op() != OpKind::CallFunction || graph::is_getitem(n->target())) return How::Extern;
    IGNIS_CHECK_KIND(NotImplemented, n->target().kind == graph::Target::Kind::Op,
                     "compiler: node ", n->name(), " calls ", n->target().identity(),
                     ", not a dispatcher op");
    if (view_ops().count(n->target().op->schema().name) && n->meta().tensors.size() == 1 &&
        !n->meta().tuple_output && n->target().op->schema().overload != "dtype")  // (view(dtype))
      return How::View;
    if (pointwise_call(n).kind != PwKind::None) return How::Pointwise;
    if (reduction_call(n).ok) return How::Reduction;
    if (gemm_call(n).ok) return How::Template;
    if (concat_ok(n)) return How::Concat;
    return How::Extern;
  }

  // cat of kernel-dtype tensors on the program's device: each input is computed (or copied)
  // straight into its slice of the output. Inputs with no elements add
  // nothing (the legacy [0]-shaped empty included).
  bool concat_ok(const Node* n) const {
    if (n->target().op->schema().full_name() != "cat") return false;
    const graph::TensorMeta* out = single_meta(n);
    if (!out || !on_device(out) || !is_kernel_dtype(out->dtype)) return false;
    std::vector<Value> args = full_args(n);
    if (!args[0].is_sequence() || args[1].kind() != Value::Kind::Int) return false;
    for (const Value& t : args[0].items()) {
      if (!t.is_node()) return false;
      const graph::TensorMeta* m = single_meta(t.to_node());
      if (!m || !on_device(m) || !is_kernel_dtype(m->dtype)) return false;
    }
    return true;
  }

  // A GEMM the compiler runs as a template with an epilogue: mm, or addmm
  // (bias + alpha * a @ b, the bias added in the epilogue), of 2-D float32 or
  // float64 CPU matrices. Batched products stay externs for now.
  struct GemmCall {
    bool ok = false;
    const Node* a = nullptr;
    const Node* b = nullptr;
    const Node* bias = nullptr;  // addmm
    double alpha = 1, beta = 1;
  };

  GemmCall gemm_call(const Node* n) const {
    GemmCall gc;
    const std::string& name = n->target().op->schema().name;
    // (On the GPU, products run as externs on eager's cuBLASLt kernels.)
    if ((name != "mm" && name != "addmm") || !device_.is_cpu()) return gc;
    std::vector<Value> args = full_args(n);
    size_t first = name == "addmm" ? 1 : 0;
    const graph::TensorMeta* out = single_meta(n);
    if (!out || !on_device(out) || out->sizes.size() != 2 ||
        (out->dtype != ScalarType::Float32 && out->dtype != ScalarType::Float64))
      return gc;
    for (size_t i = 0; i < first + 2; ++i) {
      if (!args[i].is_node()) return gc;
      const graph::TensorMeta* m = single_meta(args[i].to_node());
      if (!m || m->dtype != out->dtype || !on_device(m)) return gc;
      if (i >= first && m->sizes.size() != 2) return gc;
      for (int64_t s : m->sizes)
        if (s == 0) return gc;
    }
    if (name == "addmm") {
      auto number = [](const Value& v, double* out) {
        if (v.kind() == Value::Kind::Int) *out = double(v.to_int());
        else if (v.kind() == Value::Kind::Double) *out = v.to_double();
        else return false;
        return true;
      };
      const FunctionSchema& s = n->target().op->schema();
      if (!number(args[size_t(s.find_arg("beta"))], &gc.beta) ||
          !number(args[size_t(s.find_arg("alpha"))], &gc.alpha))
        return gc;
      gc.bias = args[0].to_node();
    }
    gc.a = args[first].to_node();
    gc.b = args[first + 1].to_node();
    gc.ok = true;
    return gc;
  }

  // A reduction the compiler generates: sum, prod, amax or amin of one
  // float32/float64 tensor over some dims (all when the list is empty or
  // None), accumulated in the output dtype (sum's and prod's `dtype`).
  struct ReductionCall {
    bool ok = false;
    Combine combine = Combine::Sum;
    std::vector<bool> reduced;  // per input dim
    bool keepdim = false;
    ScalarType in_dtype = ScalarType::Float32, out_dtype = ScalarType::Float32;
  };

  ReductionCall reduction_call(const Node* n) const {
    ReductionCall rc;
    const FunctionSchema& s = n->target().op->schema();
    bool known = false;
#define IGNIS_MATCH(C, op)   \
  if (s.name == op) {        \
    rc.combine = Combine::C; \
    known = true;            \
  }
    IGNIS_FORALL_COMBINES(IGNIS_MATCH)
#undef IGNIS_MATCH
    const graph::TensorMeta* out = single_meta(n);
    if (!known || !out || n->args().empty() || !n->args()[0].is_node()) return rc;
    const graph::TensorMeta* in = single_meta(n->args()[0].to_node());
    if (!in) return rc;
    // Float reductions, and on the CPU integer and bool sums into int64 (a
    // mask's count, (pred == y).sum()): their lanes are int64 adds. (The CUDA
    // printer's reductions are float; there they stay externs.)
    const bool float_reduction = is_float_dtype(in->dtype) && is_float_dtype(out->dtype);
    const bool int_sum = rc.combine == Combine::Sum && out->dtype == ScalarType::Int64 &&
                         is_integral(in->dtype, /*include_bool=*/true) && device_.is_cpu();
    if (in->sizes.empty() || !(float_reduction || int_sum) || !on_device(in) || !on_device(out))
      return rc;
    for (int64_t sz : in->sizes)
      if (sz == 0) return rc;  // empty reductions: eager's identities and errors
    std::vector<Value> args = full_args(n);
    int64_t rank = int64_t(in->sizes.size());
    rc.reduced.assign(in->sizes.size(), false);
    int di = s.find_arg("dim"), ki = s.find_arg("keepdim");
    std::vector<Value> dims;
    if (di >= 0 && args[size_t(di)].kind() == Value::Kind::Int) dims.push_back(args[size_t(di)]);
    else if (di >= 0 && args[size_t(di)].is_sequence()) dims = args[size_t(di)].items();
    else if (di >= 0 && !args[size_t(di)].is_none()) return rc;
    for (const Value& d : dims) {
      if (d.kind() != Value::Kind::Int) return rc;
      int64_t k = norm_dim(d.to_int(), rank);
      if (k < 0 || k >= rank) return rc;
      rc.reduced[size_t(k)] = true;
    }
    if (dims.empty()) rc.reduced.assign(in->sizes.size(), true);
    rc.keepdim = ki >= 0 && args[size_t(ki)].kind() == Value::Kind::Bool && args[size_t(ki)].to_bool();
    rc.in_dtype = in->dtype;
    rc.out_dtype = out->dtype;
    rc.ok = true;
    return rc;
  }

  // Users are decided before their inputs (reverse order): a view that must
  // be a real tensor is run as an extern (a real view of its realized input,
  // so a graph output that aliases an input stays an alias), which in turn
  // makes its input realized.
  void classify() {
    std::vector<Node*> order = g_.node_list();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node* n = *it;
      if (n->op() != OpKind::CallFunction) continue;
      How h = how_of(n);
      if (h == How::View && read_as_tensor(n)) h = How::Extern;
      how_[n] = h;
    }
  }

  // Whether a user needs n as a tensor in memory: the graph output, or an
  // extern call's input.
  bool read_as_tensor(const Node* n) const {
    for (const Node* u : n->users()) {
      if (u->op() != OpKind::CallFunction) return true;  // the output
      auto it = how_.find(u);
      if (it == how_.end() || it->second == How::Extern || it->second == How::Template) {
        // A template reads its matrices from memory; an addmm's bias is
        // read by the epilogue like any other value.
        if (it != how_.end() && it->second == How::Template) {
          GemmCall gc = gemm_call(u);
          if (gc.bias == n && gc.a != n && gc.b != n) continue;
        }
        return true;
      }
    }
    return false;
  }

  // The realize policy: a value is computed into a buffer when something
  // needs it in memory, or when several users would each recompute it and
  // it is not cheap: more than options_.realize_opcount_threshold arithmetic
  // ops, or reads of more than options_.realize_reads_threshold elements. A
  // cheap value with several users is recomputed in each (softmax's
  // exp(x - max) feeds the sum and the quotient: computed in both passes over
  // the row, never stored), as inductor inlines cheap pointwise values rather
  // than storing them.
  //
  // The ops counted are the body's calls and selects: views, dtype casts and
  // the loads of broadcast per-row statistics are free next to the store and
  // the read back that realizing costs. (Counted as graph nodes, layer_norm
  // backward's x_hat = (x - mean) * rstd was nine -- five of them casts and
  // views of the saved statistics -- and was stored in float32, twice the
  // bytes of the bfloat16 x it is recomputed from.)
  bool needs_realize(const Node* n) const {
    if (read_as_tensor(n)) return true;
    if (n->users().size() <= 1) return false;
    if (forced_.count(n->name())) return true;
    auto it = vals_.find(n);
    if (it == vals_.end()) return true;
    const Val& v = it->second;
    if (v.buffer >= 0) return false;
    // A value fused from many nodes is not cheap whatever they are, and its
    // body is not built just to count them (lowering's time).
    if (int64_t(v.origins.size()) > 4 * options_.realize_opcount_threshold) return true;
    BodyBuilder bb;  // shares equal loads: what is left are distinct elements
    v.body(bb, canonical_coords(v.sizes));
    int64_t loads = 0, ops = 0;
    for (const ScalarNode& s : bb.body) {
      loads += s.kind == ScalarKind::Load;
      ops += s.kind == ScalarKind::Call || s.kind == ScalarKind::Where;
    }
    return ops > options_.realize_opcount_threshold || loads > options_.realize_reads_threshold;
  }

  // ---- buffers ----

  int add_buffer(Buffer b) {
    if (b.name.empty()) b.name = "buf" + std::to_string(p_.buffers.size());
    p_.buffers.push_back(std::move(b));
    return int(p_.buffers.size()) - 1;
  }

  static std::vector<Expr> exprs(const std::vector<int64_t>& v) {
    return std::vector<Expr>(v.begin(), v.end());
  }

  // A value read from a buffer through its strides.
  Val buffer_val(int b, const graph::TensorMeta& m) {
    Val v;
    v.sizes = m.sizes;
    v.dtype = m.dtype;
    v.buffer = b;
    std::vector<Expr> strides = p_.buffers[b].strides;
    ScalarType dt = m.dtype;
    v.body = [b, strides, dt](BodyBuilder& bb, const Coords& c) {
      ScalarNode s;
      s.kind = ScalarKind::Load;
      s.dtype = dt;
      s.buffer = b;
      s.index = sym::simplify(sym::linear_index(c, strides));
      return cast_to(bb, bb.add(std::move(s)), dt, compute_type(dt));
    };
    return v;
  }

  // scalar_ops function fn of nodes args, of type dt.
  static int call(BodyBuilder& bb, const char* fn, ScalarType dt, std::vector<int> args) {
    ScalarNode s;
    s.kind = ScalarKind::Call;
    s.dtype = dt;
    s.fn = fn;
    s.args = std::move(args);
    return bb.add(std::move(s));
  }

  // The int64 value of expression e of the loop variables.
  static int index_value(BodyBuilder& bb, const Expr& e) {
    ScalarNode s;
    s.kind = ScalarKind::Index;
    s.dtype = ScalarType::Int64;
    s.index = sym::simplify(e);
    return bb.add(std::move(s));
  }

  // arange at coords c: start + step * c[0] in int64 (exact: arange_call),
  // then the output's type.
  static int arange_value(BodyBuilder& bb, const Coords& c, int64_t start, int64_t step,
                          ScalarType out_dt) {
    constexpr ScalarType I64 = ScalarType::Int64;
    int x = index_value(bb, c.at(0));
    if (step != 1) x = call(bb, "mul", I64, {x, constant(bb, Value(step), I64)});
    if (start != 0)
      x = call(bb, "add", I64,
               {x, constant(bb, Value(start), I64), constant(bb, Value(int64_t(1)), I64)});
    return cast_to(bb, x, I64, out_dt);
  }

  // pad at coords c (pad_call): `in` at c minus the low pads, clamped into
  // `in` so the read never leaves it, where c falls inside; else `fill`.
  static int pad_value(BodyBuilder& bb, const Coords& c, const Val& in,
                       const std::vector<int64_t>& pads, const Value& fill, ScalarType dt,
                       ScalarType out_dt) {
    constexpr ScalarType I64 = ScalarType::Int64, B = ScalarType::Bool;
    Coords e = c;
    int inside = -1;  // the conjunction of the bounds checks, or -1: always inside
    auto require = [&](int cond) {
      inside = inside < 0 ? cond : call(bb, "logical_and", B, {inside, cond});
    };
    for (size_t p = 0; p + 1 < pads.size(); p += 2) {
      const size_t d = c.size() - 1 - p / 2;
      const int64_t low = pads[p], high = pads[p + 1], size = in.sizes[d];
      e[d] = c[d] - Expr(low);
      if (low <= 0 && high <= 0) continue;  // a crop: always inside
      const int x = index_value(bb, e[d]);
      if (low > 0) require(call(bb, "ge", B, {x, constant(bb, Value(int64_t(0)), I64)}));
      if (high > 0) require(call(bb, "lt", B, {x, constant(bb, Value(size), I64)}));
      e[d] = sym::max(sym::min(e[d], Expr(size - 1)), Expr(0));
    }
    for (Expr& x : e) x = sym::simplify(x);
    const int x = cast_to(bb, in.body(bb, e), compute_type(in.dtype), dt);
    if (inside < 0) return x;
    ScalarNode w;
    w.kind = ScalarKind::Where;
    w.dtype = out_dt;
    w.args = {inside, x, constant(bb, fill, dt)};
    return bb.add(std::move(w));
  }

  // Node x (of type from) converted to type to.
  static int cast_to(BodyBuilder& bb, int x, ScalarType from, ScalarType to) {
    if (from == to) return x;
    ScalarNode s;  // (BodyBuilder::add drops a narrowing of an exact widening)
    s.kind = ScalarKind::Cast;
    s.dtype = to;
    s.args = {x};
    return bb.add(std::move(s));
  }

  // Whether a tensor lives where the program's kernels run: only such
  // tensors are read or written by kernels; others (a CPU scalar tensor in a
  // CUDA graph) stay with the externs that use them.
  bool on_device(const graph::TensorMeta* m) const {
    return m && m->device.type == device_.type &&
           (device_.is_cpu() || m->device.index < 0 || m->device.index == device_.index);
  }

  // The program's device: the GPU of its CUDA tensors, else the CPU. The
  // loop IR is the same for both; only the printer differs.
  void choose_device() {
    for (Node* n : g_.nodes())
      for (const graph::TensorMeta& m : n->meta().tensors) {
        IGNIS_CHECK_KIND(NotImplemented, m.device.is_cpu() || m.device.is_cuda(),
                         "compiler: node ", n->name(), " has a tensor on ", m.device.str(),
                         "; only CPU and CUDA tensors are compiled");
        if (!m.device.is_cuda()) continue;
        IGNIS_CHECK_KIND(NotImplemented,
                         device_.is_cpu() || m.device.index < 0 || device_.index < 0 ||
                             m.device.index == device_.index,
                         "compiler: the graph has tensors on ", device_.str(), " and ",
                         m.device.str(), "; one GPU per graph for now");
        if (device_.is_cpu() || device_.index < 0) device_ = m.device;
      }
    if (device_.is_cuda() && device_.index < 0) device_.index = 0;
    p_.device = device_;
  }

  Buffer tensor_buffer(const graph::TensorMeta& m, BufferKind k, const std::string& name = "") {
    IGNIS_CHECK_KIND(NotImplemented, m.device.is_cpu() || m.device.is_cuda(),
                     "compiler: a tensor on ", m.device.str(), " (only CPU and CUDA tensors)");
    IGNIS_CHECK_KIND(NotImplemented, k != BufferKind::Computed || on_device(&m),
                     "compiler: a value on ", m.device.str(), " computed in a program on ",
                     device_.str());
    Buffer b;
    b.name = name;
    b.kind = k;
    b.dtype = m.dtype;
    b.sizes = exprs(m.sizes);
    b.strides = exprs(m.strides);
    return b;
  }

  void bind(const Node* n, int b) { p_.node_buffers.emplace_back(n, b); }

  // Whether strides lay the sizes out densely with no overlap (a permutation
  // of a contiguous layout): a kernel may then store in the eager layout.
  static bool dense(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
    std::vector<size_t> dims;
    for (size_t d = 0; d < sizes.size(); ++d)
      if (sizes[d] != 1) dims.push_back(d);
    std::sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
    int64_t expect = 1;
    for (size_t d : dims) {
      if (strides[d] != expect) return false;
      expect *= sizes[d];
    }
    return true;
  }

  // Computes a virtual value into a buffer, in the node's eager layout when
  // that is dense (what the fake trace recorded, and what later graphs of the
  // same program expect), else contiguous.
  void realize(const Node* n) {
    Val& v = vals_.at(n);
    if (v.buffer >= 0) return;
    graph::TensorMeta m = stored_meta(meta(n));
    int b = add_buffer(tensor_buffer(m, BufferKind::Computed));
    ComputeNode cn;
    cn.buffer = b;
    cn.sizes = m.sizes;
    cn.dtype = m.dtype;
    Body body = v.body;
    ScalarType stored = m.dtype;
    cn.body = [body, stored](BodyBuilder& bb, const Coords& c) {
      return cast_to(bb, body(bb, c), compute_type(stored), stored);
    };
    std::vector<Expr> strides = p_.buffers[size_t(b)].strides;
    cn.store_index = [strides](const Coords& c) { return sym::linear_index(c, strides); };
    // Iterate in the output's memory order (outermost stride first), so the
    // store is sequential and a transposed layout moves the strided access to
    // the loads, as eager's TensorIterator orders dims.
    cn.loop_order.resize(m.sizes.size());
    std::iota(cn.loop_order.begin(), cn.loop_order.end(), size_t{0});
    std::stable_sort(cn.loop_order.begin(), cn.loop_order.end(),
                     [&](size_t a, size_t b) { return m.strides[a] > m.strides[b]; });
    cn.origins = v.origins;
    add_compute(std::move(cn));
    v = buffer_val(b, m);
    bind(n, b);
  }

  void add_compute(ComputeNode cn) {
    order_.push_back(PendingStep{-1, int(computes_.size())});
    computes_.push_back(std::move(cn));
  }

  // A layout for a value the compiler stores: the trace's when dense, else contiguous.
  static graph::TensorMeta stored_meta(graph::TensorMeta m) {
    if (!dense(m.sizes, m.strides)) {
      std::vector<Expr> cs = sym::contiguous_strides(exprs(m.sizes));
      m.strides.clear();
      for (const Expr& e : cs) m.strides.push_back(e.value());
    }
    return m;
  }

  // A GEMM template: a compute node storing alpha * a @ b; addmm's bias is
  // added by a pointwise value over it, which the scheduler runs in the
  // GEMM's epilogue with whatever pointwise work follows.
  void lower_gemm(const Node* n) {
    GemmCall gc = gemm_call(n);
    for (const Node* in : {gc.a, gc.b}) {
      if (vals_.count(in)) realize(in);
      IGNIS_CHECK_KIND(NotImplemented, p_.buffer_of(in) >= 0, "compiler: input ", in->name(),
                       " of ", n->name(), " is not a tensor");
    }
    graph::TensorMeta m = meta(n);
    m.strides = {m.sizes[1], 1};  // C is written row-major by the GEMM
    int c = add_buffer(tensor_buffer(m, BufferKind::Computed));
    ComputeNode cn;
    cn.buffer = c;
    cn.sizes = m.sizes;
    cn.dtype = m.dtype;
    cn.body = [](BodyBuilder& bb, const Coords&) { return bb.add(ScalarNode{}); };
    std::vector<Expr> strides = p_.buffers[size_t(c)].strides;
    cn.store_index = [strides](const Coords& co) { return sym::linear_index(co, strides); };
    cn.loop_order = {0, 1};
    cn.origins = {n->name()};
    cn.gemm = Kernel::Gemm{p_.buffer_of(gc.a), p_.buffer_of(gc.b), c, gc.alpha};
    add_compute(std::move(cn));
    Val prod = buffer_val(c, m);
    if (!gc.bias || gc.beta == 0) {  // beta 0: the bias is ignored (NaN included), as eager
      vals_[n] = prod;
      vals_[n].origins = {n->name()};
    } else {
      // addmm = prod + beta * bias, as scalar_ops' add(a, b, alpha).
      const Val& bias = vals_.at(gc.bias);
      Val v;
      v.sizes = m.sizes;
      v.dtype = m.dtype;
      v.origins = bias.origins;
      v.origins.push_back(n->name());
      Body pb = prod.body, bb_ = bias.body;
      std::vector<int64_t> bias_sizes = bias.sizes, out_sizes = m.sizes;
      double beta = gc.beta;
      ScalarType dt = compute_type(m.dtype);
      v.body = [pb, bb_, bias_sizes, out_sizes, beta, dt](BodyBuilder& bb, const Coords& co) {
        ScalarNode s;
        s.kind = ScalarKind::Call;
        s.dtype = dt;
        s.fn = "add";
        s.args = {pb(bb, co), bb_(bb, broadcast(co, bias_sizes, out_sizes)),
                  constant(bb, Value(beta), dt)};
        return bb.add(std::move(s));
      };
      vals_[n] = std::move(v);
      if (needs_realize(n)) realize(n);
      return;
    }
    bind(n, c);
  }

  // cat: one buffer, written by one compute node per input over the input's
  // own sizes, storing at its offset along the dim. The scheduler fuses each
  // writer with the work that produces its input (a permute-copy of an
  // attention gradient becomes the store into its slice), and never lets a
  // reader of the buffer join a kernel that is still writing it.
  void lower_cat(const Node* n) {
    std::vector<Value> args = full_args(n);
    graph::TensorMeta m = stored_meta(meta(n));
    const int64_t rank = int64_t(m.sizes.size());
    const int64_t dim = norm_dim(args[1].to_int(), rank);
    int b = add_buffer(tensor_buffer(m, BufferKind::Computed));
    std::vector<Expr> strides = p_.buffers[size_t(b)].strides;
    std::vector<size_t> order(m.sizes.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return m.strides[x] > m.strides[y]; });
    ScalarType stored = m.dtype;
    int64_t offset = 0;
    std::vector<std::string> origins;
    for (const Value& t : args[0].items()) {
      const Node* in = t.to_node();
      const Val& v = vals_.at(in);
      int64_t numel = 1;
      for (int64_t s : v.sizes) numel *= s;
      if (numel == 0) continue;
      ComputeNode cn;
      cn.buffer = b;
      cn.sizes = v.sizes;
      cn.dtype = stored;
      Body body = v.body;
      ScalarType from = compute_type(v.dtype);
      cn.body = [body, from, stored](BodyBuilder& bb, const Coords& c) {
        return cast_to(bb, cast_to(bb, body(bb, c), from, compute_type(stored)),
                       compute_type(stored), stored);
      };
      cn.store_index = [strides, dim, offset](const Coords& c) {
        Coords at = c;
        at[size_t(dim)] = at[size_t(dim)] + Expr(offset);
        return sym::linear_index(at, strides);
      };
      cn.loop_order = order;
      cn.origins = v.origins;
      cn.origins.push_back(n->name());
      for (const std::string& o : v.origins) origins.push_back(o);
      add_compute(std::move(cn));
      offset += v.sizes[size_t(dim)];
    }
    IGNIS_INTERNAL_ASSERT(offset == m.sizes[size_t(dim)], "compiler: cat ", n->name(),
                          " fills ", offset, " of ", m.sizes[size_t(dim)], " along dim ", dim);
    vals_[n] = buffer_val(b, m);
    bind(n, b);
  }

  // A reduction: a compute node over its input's sizes folding the reduced
  // dims; its input's value is computed inside it, never stored.
  void lower_reduction(const Node* n) {
    ReductionCall rc = reduction_call(n);
    const Node* src = n->args()[0].to_node();
    const Val& in = vals_.at(src);
    graph::TensorMeta m = stored_meta(meta(n));
    int b = add_buffer(tensor_buffer(m, BufferKind::Computed));
    ComputeNode cn;
    cn.buffer = b;
    cn.is_reduction = true;
    cn.sizes = in.sizes;
    cn.reduced = rc.reduced;
    cn.combine = rc.combine;
    cn.dtype = compute_type(rc.out_dtype);  // the accumulator's
    Body inner = in.body;
    ScalarType from = compute_type(rc.in_dtype), to = cn.dtype;
    cn.body = [inner, from, to](BodyBuilder& bb, const Coords& c) {
      return cast_to(bb, inner(bb, c), from, to);
    };
    std::vector<Expr> strides = p_.buffers[size_t(b)].strides;
    std::vector<bool> reduced = rc.reduced;
    bool keepdim = rc.keepdim;
    cn.store_index = [strides, reduced, keepdim](const Coords& c) {
      Coords oc;
      for (size_t d = 0; d < c.size(); ++d) {
        if (!reduced[d]) oc.push_back(c[d]);
        else if (keepdim) oc.push_back(Expr(0));
      }
      return sym::linear_index(oc, strides);
    };
    cn.origins = in.origins;
    cn.origins.push_back(n->name());
    add_compute(std::move(cn));
    vals_[n] = buffer_val(b, m);
    bind(n, b);
  }

  // ---- nodes ----

  void lower_node(Node* n) {
    switch (n->op()) {
      case OpKind::Placeholder: {
        const graph::TensorMeta& m = meta(n);
        IGNIS_CHECK_KIND(NotImplemented, !n->meta().tuple_output,
                         "compiler: placeholder ", n->name(), " is not a tensor");
        Buffer b = tensor_buffer(m, BufferKind::Input, n->name());
        b.input_index = int64_t(p_.inputs.size());
        int id = add_buffer(std::move(b));
        p_.inputs.push_back(id);
        vals_[n] = buffer_val(id, m);
        bind(n, id);
        return;
      }
      case OpKind::GetAttr: {
        const graph::TensorMeta& m = meta(n);
        Buffer b = tensor_buffer(m, BufferKind::Constant, n->name());
        b.attr = n->target().name;
        int id = add_buffer(std::move(b));
        vals_[n] = buffer_val(id, m);
        bind(n, id);
        return;
      }
      case OpKind::Output: return lower_output(n);
      case OpKind::CallFunction: break;
      default:
        IGNIS_NOT_IMPLEMENTED("compiler: cannot lower ", graph::op_kind_name(n->op()), " node ",
                              n->name());
    }
    if (graph::is_getitem(n->target())) {
      const Node* src = n->args().at(0).to_node();
      int64_t i = n->args().at(1).to_int();
      auto it = extern_outputs_.find(src);
      IGNIS_CHECK_KIND(NotImplemented, it != extern_outputs_.end() && i >= 0 &&
                                           i < int64_t(it->second.size()),
                       "compiler: getitem of ", src->name(), " is not of an extern's outputs");
      int b = it->second[size_t(i)];
      IGNIS_CHECK_KIND(NotImplemented, b >= 0, "compiler: getitem ", n->name(), " of ",
                       src->name(), " has no buffer");
      vals_[n] = buffer_val(b, n->meta().tensors.at(0));
      bind(n, b);
      return;
    }
    switch (how_.at(n)) {
      case How::Pointwise: return lower_pointwise(n);
      case How::View: return lower_view(n);
      case How::Reduction: return lower_reduction(n);
      case How::Template: return lower_gemm(n);
      case How::Concat: return lower_cat(n);
      case How::Extern: return lower_extern(n);
    }
  }

  // A number operand: a constant in the compute type (scalar_ops.h's conventions).
  static int constant(BodyBuilder& bb, const Value& v, ScalarType dt) {
    ScalarNode s;
    s.kind = ScalarKind::Constant;
    s.dtype = dt;
    if (v.kind() == Value::Kind::Int) {
      s.is_int = true;
      s.int_value = v.to_int();
    } else {
      s.value = v.to_double();
    }
    return bb.add(std::move(s));
  }

  // Reads operand `in` (sizes in_sizes) at output coords c: broadcast dims
  // (size 1 or missing) read index 0.
  static Coords broadcast(const Coords& c, const std::vector<int64_t>& in_sizes,
                          const std::vector<int64_t>& out_sizes) {
    Coords r;
    size_t lead = out_sizes.size() - in_sizes.size();
    for (size_t d = 0; d < in_sizes.size(); ++d)
      r.push_back(in_sizes[d] == 1 && out_sizes[d + lead] != 1 ? Expr(0) : c[d + lead]);
    return r;
  }

  void lower_pointwise(const Node* n) {
    PointwiseCall pc = pointwise_call(n);
    const graph::TensorMeta& m = meta(n);
    Val v;
    v.sizes = m.sizes;
    v.dtype = m.dtype;
    struct Operand {
      Value number;
      Val val;
      bool is_node = false;
    };
    std::vector<Operand> ops;
    for (const Value& a : pc.operands) {
      Operand o;
      if (a.is_node()) {
        o.is_node = true;
        o.val = vals_.at(a.to_node());
        for (const std::string& s : o.val.origins)
          if (std::find(v.origins.begin(), v.origins.end(), s) == v.origins.end())
            v.origins.push_back(s);
      } else {
        o.number = a;
      }
      ops.push_back(std::move(o));
    }
    v.origins.push_back(n->name());
    std::string fn = pc.fn;
    PwKind kind = pc.kind;
    ScalarType out_dt = compute_type(m.dtype), dt = pc.compute, rounds_to = pc.rounds_to,
               common = pc.common;
    std::vector<int64_t> out_sizes = m.sizes;
    std::vector<int64_t> pads = pc.pads;
    v.body = [ops, fn, kind, out_dt, dt, rounds_to, common, out_sizes, pads](BodyBuilder& bb,
                                                                             const Coords& c) {
      if (kind == PwKind::Pad)
        return pad_value(bb, c, ops.at(0).val, pads, ops.at(1).number, dt, out_dt);
      if (kind == PwKind::Arange)
        return arange_value(bb, c, ops.at(0).number.to_int(), ops.at(1).number.to_int(), out_dt);
      if (rounds_to != ScalarType::Undefined) {
        // Note [Copies to a 16-bit float]: rounded, then on in float32
        int x = cast_to(bb, ops.at(0).val.body(bb, broadcast(c, ops.at(0).val.sizes, out_sizes)),
                        dt, rounds_to);
        return cast_to(bb, x, rounds_to, out_dt);
      }
      std::vector<int> args;
      for (const Operand& o : ops) {
        if (!o.is_node) {
          args.push_back(constant(bb, o.number, dt));
          continue;
        }
        int x = o.val.body(bb, broadcast(c, o.val.sizes, out_sizes));
        // where's condition stays bool; an operand of another dtype converts,
        // a 16-bit float one rounded first (Note [Operands of another dtype])
        if (!(kind == PwKind::Where && args.empty())) {
          const ScalarType ct = compute_type(o.val.dtype);
          if (ct != o.val.dtype && common != ScalarType::Undefined && o.val.dtype != common)
            x = cast_to(bb, cast_to(bb, x, ct, o.val.dtype), o.val.dtype, ct);
          x = cast_to(bb, x, ct, dt);
        }
        args.push_back(x);
      }
      if (kind == PwKind::Identity) return args.at(0);
      ScalarNode s;
      s.kind = kind == PwKind::Call    ? ScalarKind::Call
               : kind == PwKind::Where ? ScalarKind::Where
                                       : ScalarKind::Cast;
      s.dtype = out_dt;
      s.fn = fn;
      s.args = std::move(args);
      return bb.add(std::move(s));
    };
    vals_[n] = std::move(v);
    if (needs_realize(n)) realize(n);
  }

  // A view: the input's value at remapped coordinates (no kernel, no copy).
  void lower_view(const Node* n) {
    std::vector<Value> args = full_args(n);
    const Val& in = vals_.at(args[0].to_node());
    const std::vector<int64_t>& is = in.sizes;
    const std::vector<int64_t> os = meta(n).sizes;
    int64_t in_rank = int64_t(is.size()), out_rank = int64_t(os.size());
    const std::string& name = n->target().op->schema().name;
    std::function<Coords(const Coords&)> remap;
    bool empty = std::find(os.begin(), os.end(), 0) != os.end() ||
                 std::find(is.begin(), is.end(), 0) != is.end();
    if (empty) {
      // No element is ever read: any coordinates do (and index arithmetic
      // over a size-0 dim would divide by zero).
      remap = [in_rank](const Coords&) { return Coords(size_t(in_rank), Expr(0)); };
    } else if (name == "view" || name == "_unsafe_view" || name == "reshape") {
      std::vector<Expr> ie = exprs(is), oe = exprs(os);
      remap = [ie, oe](const Coords& c) {
        return sym::unravel_index(sym::simplify(sym::ravel_index(c, oe)), ie);
      };
    } else if (name == "alias") {
      remap = [](const Coords& c) { return c; };
    } else if (name == "permute") {
      std::vector<int64_t> dims = args[1].items().empty() ? std::vector<int64_t>{} : [&] {
        std::vector<int64_t> r;
        for (const Value& d : args[1].items()) r.push_back(norm_dim(d.to_int(), in_rank));
        return r;
      }();
      remap = [dims](const Coords& c) {
        Coords r(c.size());
        for (size_t k = 0; k < dims.size(); ++k) r[size_t(dims[k])] = c[k];
        return r;
      };
    } else if (name == "t" || name == "transpose") {
      int64_t d0 = 0, d1 = in_rank > 1 ? 1 : 0;
      if (name == "transpose") {
        d0 = norm_dim(args[1].to_int(), in_rank);
        d1 = norm_dim(args[2].to_int(), in_rank);
      }
      remap = [d0, d1](const Coords& c) {
        Coords r = c;
        if (!r.empty()) std::swap(r[size_t(d0)], r[size_t(d1)]);
        return r;
      };
    } else if (name == "expand") {
      remap = [is, os](const Coords& c) { return broadcast(c, is, os); };
    } else if (name == "unsqueeze") {
      int64_t d = norm_dim(args[1].to_int(), out_rank);
      remap = [d](const Coords& c) {
        Coords r = c;
        r.erase(r.begin() + d);
        return r;
      };
    } else if (name == "squeeze") {
      // Each input dim either maps to the next output dim or was squeezed
      // away (size 1, reads 0); the sizes tell which.
      std::vector<int> from(size_t(in_rank), -1);
      int64_t o = 0;
      for (int64_t d = 0; d < in_rank; ++d) {
        bool keep = o < out_rank && os[size_t(o)] == is[size_t(d)] &&
                    (is[size_t(d)] != 1 || in_rank - d <= out_rank - o);
        if (keep) from[size_t(d)] = int(o++);
      }
      IGNIS_INTERNAL_ASSERT(o == out_rank, "squeeze remap of ", n->name());
      remap = [from](const Coords& c) {
        Coords r;
        for (int f : from) r.push_back(f < 0 ? Expr(0) : c[size_t(f)]);
        return r;
      };
    } else if (name == "slice") {
      int64_t d = norm_dim(args[1].to_int(), in_rank);
      int64_t size = is[size_t(d)];
      int64_t start = args[2].is_none() ? 0 : args[2].to_int();
      if (start < 0) start += size;
      start = std::clamp<int64_t>(start, 0, size);
      int64_t step = args[4].is_none() ? 1 : args[4].to_int();
      remap = [d, start, step](const Coords& c) {
        Coords r = c;
        r[size_t(d)] = c[size_t(d)] * step + start;
        return r;
      };
    } else if (name == "select") {
      int64_t d = norm_dim(args[1].to_int(), in_rank);
      int64_t idx = args[2].to_int();
      if (idx < 0) idx += is[size_t(d)];
      remap = [d, idx](const Coords& c) {
        Coords r = c;
        r.insert(r.begin() + d, Expr(idx));
        return r;
      };
    } else {
      IGNIS_INTERNAL_ASSERT(false, "no remap for view ", name);
    }
    Val v;
    v.sizes = os;
    v.dtype = in.dtype;
    v.origins = in.origins;
    v.origins.push_back(n->name());
    Body inner = in.body;
    v.body = [inner, remap](BodyBuilder& bb, const Coords& c) { return inner(bb, remap(c)); };
    vals_[n] = std::move(v);
  }

  void lower_extern(Node* n) {
    for (Node* in : n->input_nodes()) {
      if (vals_.count(in)) realize(in);
      IGNIS_CHECK_KIND(NotImplemented, p_.buffer_of(in) >= 0, "compiler: input ", in->name(),
                       " of ", n->name(), " is not a tensor");
    }
    Step st;
    st.kind = Step::Kind::CallExtern;
    st.node = graph::NodePtr(n);
    st.op = n->target().op;
    st.args = n->args();
    st.kwargs = n->kwargs();
    // The result aliases an input (the memory plan keeps that input alive as
    // long): the index-remapped views, and every other op declared a view
    // that runs as an extern (view(dtype), view_as_real, view_as_complex).
    const OpDef* def = st.op->def();
    st.view = view_ops().count(st.op->schema().name) != 0 ||
              (def && def->category == OpCategory::View);
    const auto& ts = n->meta().tensors;
    IGNIS_CHECK_KIND(NotImplemented, !ts.empty(), "compiler: node ", n->name(),
                     " has no tensor metadata");
    if (n->meta().tuple_output) {
      // One buffer per element a getitem reads, at that element's position
      // in the op's results (-1: an element no node reads, or a None -- the
      // tuple's own metadata lists defined elements only, so positions come
      // from the getitems).
      for (Node* u : n->users()) {
        if (!graph::is_getitem(u->target()) || u->meta().tensors.size() != 1) continue;
        size_t i = size_t(u->args().at(1).to_int());
        if (st.outputs.size() <= i) st.outputs.resize(i + 1, -1);
        if (st.outputs[i] < 0)
          st.outputs[i] = add_buffer(tensor_buffer(u->meta().tensors[0], BufferKind::Extern));
      }
      extern_outputs_[n] = st.outputs;
    } else {
      st.outputs.push_back(add_buffer(tensor_buffer(ts[0], BufferKind::Extern)));
      vals_[n] = buffer_val(st.outputs[0], ts[0]);
      bind(n, st.outputs[0]);
    }
    order_.push_back(PendingStep{int(externs_.size()), -1});
    externs_.push_back(std::move(st));
  }

  void lower_output(const Node* n) {
    const Value& result = n->args().at(0);
    std::vector<Value> items =
        result.is_sequence() ? result.items() : std::vector<Value>{result};
    for (const Value& v : items) {
      ProgramOutput o;
      if (v.is_node()) {
        const Node* src = v.to_node();
        if (vals_.count(src)) realize(src);
        o.buffer = p_.buffer_of(src);
        IGNIS_CHECK_KIND(NotImplemented, o.buffer >= 0, "compiler: output ", src->name(),
                         " is not a tensor");
      } else {
        IGNIS_CHECK_KIND(NotImplemented, !v.has_items(), "compiler: nested graph outputs");
        o.value = v;
      }
      p_.outputs.push_back(std::move(o));
    }
  }

  const graph::Graph& g_;
  CompilerOptions options_;
  Device device_;  // where the program's kernels run (choose_device)
  Program p_;
  std::unordered_map<const Node*, How> how_;
  std::unordered_map<const Node*, Val> vals_;
  std::unordered_map<const Node*, std::vector<int>> extern_outputs_;
  std::vector<ComputeNode> computes_;
  std::vector<Step> externs_;
  std::vector<PendingStep> order_;
  std::unordered_set<std::string> forced_;
};

// Note [Realize decisions shared across sizes]
// Values recomputed across kernels (above) are found by lowering, and each
// round realizes more and lowers again: the example GPT's backward graph
// took three lowerings of ~12 ms each at every size of a dynamic capture
// (docs/dynamic_shapes.md). The values a round realizes depend on the
// graph's structure, not on its numbers, and realizing a value with several
// users is correct whatever the sizes (it is what needs_realize does for
// costly ones); so a graph that differs from one lowered before only in its
// numbers (graph::shape_free_hash: another size of the same graph) starts
// from that graph's final set, and usually lowers once. What it changes is
// how many rounds the search takes, never what a program computes.
class RealizedSets {
 public:
  // The values realized, and the schedule log's line for each.
  struct Entry {
    std::unordered_set<std::string> names;
    std::vector<std::string> why;
  };
  Entry get(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sets_.find(key);
    return it == sets_.end() ? Entry{} : it->second;
  }
  void put(const std::string& key, Entry e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (sets_.size() >= kMaxGraphs) sets_.clear();  // a bound, not an LRU: rarely reached
    sets_[key] = std::move(e);
  }

 private:
  static constexpr size_t kMaxGraphs = 4096;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> sets_;
};

RealizedSets& realized_sets() {
  static auto* sets = new RealizedSets;  // never destroyed: compiles may run at exit
  return *sets;
}

// Lowers g, then again with the values its schedule recomputes across
// kernels realized (Note [Values recomputed across kernels]) while there
// are new ones: a value realized makes the next one along a chain cheap
// enough to inline again (GPT-2's residual stream: three rounds),
// starting from the set another size of it ended with.
Program lower_graph(const graph::Graph& g, const CompilerOptions& options) {
  constexpr int kMaxRounds = 4;
  std::map<std::string, std::string> recomputed;
  std::vector<std::string> why;  // IGNIS_LOGS=schedule: what each round realized
  if (!options.realize_across_kernels) return Lowering(g, options).run(nullptr);
  const std::string key = graph::shape_free_hash(g) + "|" + options.fingerprint();
  RealizedSets::Entry earlier = realized_sets().get(key);
  std::unordered_set<std::string> realize = earlier.names;
  // (the log says what was realized as the first lowering found it)
  for (const std::string& line : earlier.why)
    why.push_back(line + " [as lowered before: Note [Realize decisions shared across sizes]]");
  Program p = Lowering(g, options, realize).run(&recomputed);
  for (int round = 1; round < kMaxRounds && !recomputed.empty(); ++round) {
    for (const auto& [name, line] : recomputed) {
      realize.insert(name);
      why.push_back(line);
      earlier.why.push_back(line);
    }
    p = Lowering(g, options, realize).run(&recomputed);
  }
  realized_sets().put(key, RealizedSets::Entry{realize, std::move(earlier.why)});
  p.schedule_log.insert(p.schedule_log.begin(), why.begin(), why.end());
  return p;
}

}  // namespace

Program lower(const graph::Graph& g, const CompilerOptions& options) {
  const bool fold_activations = options.cuda_activation_epilogues && graph::has_gemm_activation(g);
  if (!graph::has_sinkable_gather(g) && !graph::has_row_scatter(g) && !fold_activations &&
      !graph::has_complex_view_pair(g))
    return lower_graph(g, options);
  // The caller's graph stays as it was traced: the rewrite works on a copy,
  // which the program keeps (its extern steps point into it).
  auto copy = std::make_shared<graph::Graph>();
  if (const Node* out = g.output_node()) {
    Node* o = copy->output(copy->copy_from(g));
    o->meta() = out->meta();
  } else {
    copy->copy_from(g);
  }
  graph::cancel_complex_views(*copy);
  graph::rewrite_row_scatters(*copy);
  graph::sink_gathers(*copy);
  if (fold_activations) graph::fold_gemm_activations(*copy);
  Program p = lower_graph(*copy, options);
  p.rewritten = std::move(copy);
  return p;
}

}  // namespace ignis::compiler

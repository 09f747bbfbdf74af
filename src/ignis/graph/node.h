// The pieces of a graph: argument values, targets, metadata and Node.
//
// The IR mirrors torch.fx: a Graph is a doubly linked list of Nodes in
// execution order; each Node has an opcode, a unique name, a target,
// positional args and keyword args. Arguments are Values:
// nested lists/tuples/dicts of constants and references to earlier Nodes.
// Capture, AOT tracing and the compiler all produce and consume this IR, so
// it stays small and free of Python: objects of the embedding layer (Python
// callables, arbitrary constants) are held as Foreign handles.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ignis/core/intrusive_ptr.h"
#include "ignis/core/memory_format.h"
#include "ignis/core/tensor.h"
#include "ignis/sym/expr.h"

namespace ignis {
class OpHandle;
}

namespace ignis::graph {

class Graph;
class Node;
using NodePtr = intrusive_ptr<Node>;

// An object owned by the embedding layer (a Python object). C++ never looks
// inside; the layer subclasses this to keep the object alive.
class Opaque {
 public:
  virtual ~Opaque() = default;
  // Object identity (Python `is`), used by CSE.
  virtual bool same(const Opaque& other) const = 0;
};

// A foreign object with what C++ needs to print, hash and compare it.
struct Foreign {
  std::shared_ptr<const Opaque> handle;
  std::string module;  // __module__ of a callable: "_operator", "ignis", "math"
  std::string name;    // __name__ of a callable ("add"); empty for constants
  std::string repr;    // repr(): constants in code and tables; str() of a callable
  std::string str;     // str() of a constant (str(graph) prints it); empty: same as repr
  // Stable across processes (module.qualname for callables, repr for
  // constants): the structural hash uses it.
  std::string identity;
  bool impure = false;            // mutates state: DCE keeps it, CSE skips it
  bool nondeterministic = false;  // random or uninitialised results: CSE skips it

  std::string qualified_name() const { return module.empty() ? name : module + "." + name; }
  bool same(const Foreign& o) const;
};
using ForeignPtr = std::shared_ptr<const Foreign>;

// ---------------------------------------------------------------------------
// Value: one argument (or, in the interpreter, one runtime value)
// ---------------------------------------------------------------------------
class Value {
 public:
  enum class Kind : uint8_t {
    None, Bool, Int, Double, Str, Dtype, Device, Tensor, Node,
    List, Tuple, Dict, Slice, Ellipsis, Foreign, MemoryFormat
  };
  using Items = std::vector<Value>;

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : kind_(Kind::Bool), v_(b) {}
  Value(int64_t i) : kind_(Kind::Int), v_(i) {}
  Value(int i) : kind_(Kind::Int), v_(int64_t(i)) {}
  Value(double d) : kind_(Kind::Double), v_(d) {}
  Value(std::string s) : kind_(Kind::Str), v_(std::move(s)) {}
  Value(const char* s) : kind_(Kind::Str), v_(std::string(s)) {}
  Value(ScalarType t) : kind_(Kind::Dtype), v_(t) {}
  Value(Device d) : kind_(Kind::Device), v_(d) {}
  Value(MemoryFormat f) : kind_(Kind::MemoryFormat), v_(f) {}
  Value(Tensor t) : kind_(Kind::Tensor), v_(std::move(t)) {}
  Value(NodePtr n) : kind_(Kind::Node), v_(std::move(n)) {}
  Value(Node* n) : Value(NodePtr(n)) {}
  Value(ForeignPtr f) : kind_(Kind::Foreign), v_(std::move(f)) {}

  static Value list(Items items) { return Value(Kind::List, std::move(items)); }
  static Value tuple(Items items) { return Value(Kind::Tuple, std::move(items)); }
  // Keys and values interleaved: k0, v0, k1, v1, ...
  static Value dict(Items kv) { return Value(Kind::Dict, std::move(kv)); }
  static Value slice(Value start, Value stop, Value step) {
    return Value(Kind::Slice, Items{std::move(start), std::move(stop), std::move(step)});
  }
  static Value ellipsis() {
    Value v;
    v.kind_ = Kind::Ellipsis;
    return v;
  }

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_node() const { return kind_ == Kind::Node; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  bool is_sequence() const { return kind_ == Kind::List || kind_ == Kind::Tuple; }
  bool has_items() const { return is_sequence() || kind_ == Kind::Dict || kind_ == Kind::Slice; }

  bool to_bool() const { return get<bool>(); }
  int64_t to_int() const { return get<int64_t>(); }
  double to_double() const { return get<double>(); }
  const std::string& to_str() const { return get<std::string>(); }
  ScalarType to_dtype() const { return get<ScalarType>(); }
  Device to_device() const { return get<Device>(); }
  MemoryFormat to_memory_format() const { return get<MemoryFormat>(); }
  const Tensor& to_tensor() const { return get<Tensor>(); }
  Node* to_node() const { return get<NodePtr>().get(); }
  const Foreign& to_foreign() const { return *get<ForeignPtr>(); }
  const ForeignPtr& foreign_ptr() const { return get<ForeignPtr>(); }
  // Elements of a list/tuple, k/v pairs of a dict, start/stop/step of a slice.
  const Items& items() const;

  const char* kind_name() const;
  // Structural equality; tensors and foreign objects compare by identity.
  bool operator==(const Value& o) const;
  bool operator!=(const Value& o) const { return !(*this == o); }

 private:
  Value(Kind k, Items items)
      : kind_(k), v_(std::make_shared<const Items>(std::move(items))) {}
  template <typename T>
  const T& get() const {
    const T* p = std::get_if<T>(&v_);
    if (!p) bad_kind();
    return *p;
  }
  [[noreturn]] void bad_kind() const;

  Kind kind_ = Kind::None;
  std::variant<std::monostate, bool, int64_t, double, std::string, ScalarType, Device, Tensor,
               NodePtr, std::shared_ptr<const Items>, ForeignPtr, MemoryFormat>
      v_;
};

// Calls fn(Node*) for each node referenced in v, depth first, in order.
template <typename F>
void for_each_node(const Value& v, F&& fn) {
  if (v.is_node()) fn(v.to_node());
  else if (v.has_items())
    for (const Value& e : v.items()) for_each_node(e, fn);
}
// A copy of v with every node reference replaced by fn(Node*) -> Value.
template <typename F>
Value map_nodes(const Value& v, F&& fn);

using Kwargs = std::vector<std::pair<std::string, Value>>;

// ---------------------------------------------------------------------------
// Opcode and target
// ---------------------------------------------------------------------------
enum class OpKind : uint8_t {
  Placeholder, GetAttr, CallFunction, CallMethod, CallModule, Output, Root
};
const char* op_kind_name(OpKind k);  // "placeholder", "call_function", ...
// False for an unknown name.
bool parse_op_kind(const std::string& s, OpKind* out);

// What a node calls. A name for placeholder (the argument name), get_attr
// and call_module (an attribute path "layer.0.weight"), call_method (the
// method name) and output; a dispatcher op or a foreign callable for
// call_function.
struct Target {
  enum class Kind : uint8_t { Name, Op, Callable };
  Kind kind = Kind::Name;
  std::string name;               // Kind::Name
  const OpHandle* op = nullptr;   // Kind::Op
  ForeignPtr callable;            // Kind::Callable

  Target() = default;
  Target(std::string n) : name(std::move(n)) {}
  Target(const char* n) : name(n) {}
  Target(const OpHandle& h) : kind(Kind::Op), op(&h) {}
  Target(ForeignPtr f) : kind(Kind::Callable), callable(std::move(f)) {}

  bool is_name() const { return kind == Kind::Name; }
  // Side effects (an op writing an argument, a foreign call marked impure).
  bool impure() const;
  // Results differ between calls with equal arguments (random, empty).
  bool nondeterministic() const;
  // The short name naming a node after this target ("add", "relu", "sum").
  std::string base_name() const;
  // Stable text for hashing: "op:add.Tensor", "py:_operator.add", "name:sum".
  std::string identity() const;
  bool operator==(const Target& o) const;
};

// operator.getitem as a target of graphs built in C++ (AOT's tuple
// outputs): printed `x[0]`, run natively by the interpreter; the binding
// layer resolves it to Python's operator.getitem.
const Target& getitem_target();
bool is_getitem(const Target& t);

// Whether a call known only by its name (a foreign callable's __name__, a
// call_method's method) makes random or uninitialised results. A name of
// ignis ops (or an alias of one) is judged by their declarations.
bool nondeterministic_by_name(const std::string& name);

// ---------------------------------------------------------------------------
// Metadata
// ---------------------------------------------------------------------------
// Sizes and strides are ints: the values at trace time (the hints, for a
// graph with dynamic shapes). A graph traced with symbolic sizes also keeps
// their symbolic form beside them (docs/dynamic_shapes.md).
using SymInt = int64_t;

struct TensorMeta {
  std::vector<SymInt> sizes;
  std::vector<SymInt> strides;
  ScalarType dtype = ScalarType::Float32;
  Device device;
  // The symbolic sizes and strides (constants where static); empty when the
  // tensor's shape is static. Printed instead of `sizes` ("f32[s77, 3]").
  std::vector<sym::Expr> sym_sizes;
  std::vector<sym::Expr> sym_strides;

  static TensorMeta of(const Tensor& t);
  bool operator==(const TensorMeta& o) const {
    return sizes == o.sizes && strides == o.strides && dtype == o.dtype &&
           device.type == o.device.type && device.index == o.device.index &&
           sym_sizes == o.sym_sizes && sym_strides == o.sym_strides;
  }
};

struct SourceLoc {
  std::string file;
  int64_t line = 0;
  bool empty() const { return file.empty(); }
  std::string str() const;  // "file:line"
};

struct NodeMeta {
  // One entry per tensor the node produces (a tuple-returning node has
  // several); empty when unknown.
  std::vector<TensorMeta> tensors;
  bool tuple_output = false;  // tensors describe a tuple's elements
  // A node whose value is a symbolic int (a placeholder `s77`, `s77 * 2`):
  // its expression, printed "Sym(2*s77)". Undefined for other nodes.
  sym::Expr sym_value;
  // The call wrote one of its arguments although its target does not say so
  // (F.relu(x, inplace=True); capture saw the argument's version change):
  // a side effect, which DCE keeps and CSE does not merge.
  bool writes_argument = false;
  SourceLoc loc;
  std::vector<std::pair<std::string, std::string>> extra;  // free-form, ordered

  const std::string* find_extra(const std::string& key) const;
  void set_extra(const std::string& key, std::string value);
  bool erase_extra(const std::string& key);
};

// ---------------------------------------------------------------------------
// Node
// ---------------------------------------------------------------------------
class Node : public RefCounted {
 public:
  ~Node() override;

  OpKind op() const { return op_; }
  const std::string& name() const { return name_; }
  const Target& target() const { return target_; }
  const std::vector<Value>& args() const { return args_; }
  const Kwargs& kwargs() const { return kwargs_; }
  const Value* kwarg(const std::string& key) const;
  // Nodes that use this one, in the order they started using it.
  const std::vector<Node*>& users() const { return users_; }
  // Distinct nodes in args then kwargs, in order of first appearance.
  const std::vector<Node*>& input_nodes() const { return inputs_; }

  Graph* graph() const { return graph_; }
  bool erased() const { return graph_ == nullptr; }
  Node* next() const { return next_; }
  Node* prev() const { return prev_; }

  // Replaces args/kwargs, updating users of old and new inputs.
  void set_args(std::vector<Value> args);
  void set_kwargs(Kwargs kwargs);
  void set_arg(size_t i, Value v);
  void set_target(Target t) { target_ = std::move(t); }
  // Renames (the graph makes the name unique, as for new nodes).
  void rename(const std::string& candidate);
  // Replaces every use of this node by `with`; returns the former users.
  std::vector<Node*> replace_all_uses_with(const Value& with);
  // Replaces uses of `old_input` in this node's args/kwargs by `with`.
  void replace_input_with(Node* old_input, const Value& with);

  // Moves `n` to just before / after this node.
  void prepend(Node* n);
  void append(Node* n);

  NodeMeta& meta() { return meta_; }
  const NodeMeta& meta() const { return meta_; }
  // Type annotation printed in code ("ignis.Tensor"); empty for none. The
  // object itself lives in type_object for the binding layer.
  std::string type_repr;
  std::shared_ptr<const Opaque> type_object;
  // Binding layer state: its cached wrapper (cleared when that dies) and its
  // free-form metadata object.
  void* pyobj = nullptr;
  std::shared_ptr<Opaque> pymeta;

 private:
  friend class Graph;
  Node(Graph* g, OpKind op, std::string name, Target target)
      : graph_(g), op_(op), name_(std::move(name)), target_(std::move(target)) {}
  void update_inputs();
  void clear_inputs();
  void unlink();

  Graph* graph_;
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  OpKind op_;
  std::string name_;
  Target target_;
  std::vector<Value> args_;
  Kwargs kwargs_;
  std::vector<Node*> users_;
  std::vector<Node*> inputs_;
  NodeMeta meta_;
};

template <typename F>
Value map_nodes(const Value& v, F&& fn) {
  if (v.is_node()) return fn(v.to_node());
  if (!v.has_items()) return v;
  Value::Items out;
  out.reserve(v.items().size());
  for (const Value& e : v.items()) out.push_back(map_nodes(e, fn));
  switch (v.kind()) {
    case Value::Kind::List: return Value::list(std::move(out));
    case Value::Kind::Tuple: return Value::tuple(std::move(out));
    case Value::Kind::Dict: return Value::dict(std::move(out));
    default: return Value::slice(out[0], out[1], out[2]);
  }
}

}  // namespace ignis::graph

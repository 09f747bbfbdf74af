// Graph, Node and Value.
#include "ignis/graph/graph.h"

#include <algorithm>
#include <cstring>

#include "ignis/core/error.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/ops/op_def.h"

namespace ignis::graph {

// ---------------------------------------------------------------------------
// Foreign / Value
// ---------------------------------------------------------------------------
bool Foreign::same(const Foreign& o) const {
  if (handle && o.handle) return handle->same(*o.handle);
  return !handle && !o.handle && identity == o.identity;
}

const char* Value::kind_name() const {
  static const char* names[] = {"None", "bool", "int", "float", "str", "dtype", "device",
                                "Tensor", "Node", "list", "tuple", "dict", "slice",
                                "ellipsis", "object", "memory_format"};
  return names[static_cast<int>(kind_)];
}

void Value::bad_kind() const {
  IGNIS_FAIL_KIND(Type, "graph value: unexpected ", kind_name(), " here");
}

const Value::Items& Value::items() const {
  IGNIS_CHECK_TYPE(has_items(), "graph value: ", kind_name(), " has no elements");
  return *std::get<std::shared_ptr<const Items>>(v_);
}

bool Value::operator==(const Value& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::None: case Kind::Ellipsis: return true;
    case Kind::Bool: return to_bool() == o.to_bool();
    case Kind::Int: return to_int() == o.to_int();
    case Kind::Double: {  // bitwise: NaN equals NaN, -0.0 differs from 0.0
      double a = to_double(), b = o.to_double();
      return std::memcmp(&a, &b, sizeof a) == 0;
    }
    case Kind::Str: return to_str() == o.to_str();
    case Kind::Dtype: return to_dtype() == o.to_dtype();
    case Kind::MemoryFormat: return to_memory_format() == o.to_memory_format();
    case Kind::Device:
      return to_device().type == o.to_device().type && to_device().index == o.to_device().index;
    case Kind::Tensor: return to_tensor().is_same(o.to_tensor());
    case Kind::Node: return to_node() == o.to_node();
    case Kind::Foreign: return to_foreign().same(o.to_foreign());
    default: return items() == o.items();
  }
}

// ---------------------------------------------------------------------------
// OpKind / Target
// ---------------------------------------------------------------------------
namespace {
const char* kOpNames[] = {"placeholder", "get_attr", "call_function", "call_method",
                          "call_module", "output", "root"};

// torch.fx's _snake_case: "_" before an upper-case letter that follows a
// lower-case one, then lower-case everything.
std::string snake_case(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (i > 0 && c >= 'A' && c <= 'Z' && s[i - 1] >= 'a' && s[i - 1] <= 'z') out += '_';
    out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
}  // namespace

const char* op_kind_name(OpKind k) { return kOpNames[static_cast<int>(k)]; }

bool parse_op_kind(const std::string& s, OpKind* out) {
  for (int i = 0; i < 6; ++i) {
    if (s == kOpNames[i]) {
      *out = static_cast<OpKind>(i);
      return true;
    }
  }
  return false;
}

std::string Target::base_name() const {
  switch (kind) {
    case Kind::Op: return snake_case(op->schema().name);
    case Kind::Callable: return snake_case(callable->name);
    case Kind::Name: break;
  }
  std::string n = name;
  // Magic method names name nodes without their underscores: __add__ -> add.
  if (n.size() > 4 && n.rfind("__", 0) == 0 && n.compare(n.size() - 2, 2, "__") == 0)
    n = n.substr(2, n.size() - 4);
  return snake_case(n);
}

std::string Target::identity() const {
  switch (kind) {
    case Kind::Op: return "op:" + op->name();
    case Kind::Callable: return "py:" + callable->identity;
    case Kind::Name: break;
  }
  return "name:" + name;
}

bool Target::impure() const {
  if (kind == Kind::Callable) return callable->impure;
  if (kind == Kind::Name) return false;
  for (const Argument& a : op->schema().args)
    if (a.is_write) return true;
  return false;
}

bool Target::nondeterministic() const {
  if (kind == Kind::Callable) return callable->nondeterministic;
  if (kind == Kind::Name) return false;
  return op->def() && op->def()->nondeterministic();
}

bool nondeterministic_by_name(const std::string& n) {
  const std::vector<OpHandle*>& ops = Dispatcher::get().overloads(n);
  if (!ops.empty())
    return std::any_of(ops.begin(), ops.end(),
                       [](const OpHandle* h) { return h->def() && h->def()->nondeterministic(); });
  // Not an ignis op (Tensor.new_empty, Tensor.exponential_, ignis.nn.init's
  // xavier_uniform_, ...): nothing declares these, so the name is read. The
  // guess errs towards "random": a wrong yes only costs CSE a merge.
  for (const char* w : {"rand", "dropout", "bernoulli", "normal", "uniform", "multinomial",
                        "empty", "exponential", "cauchy", "geometric", "poisson"})
    if (n.find(w) != std::string::npos) return true;
  return false;
}

bool Target::operator==(const Target& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::Op: return op == o.op;
    case Kind::Callable: return callable->same(*o.callable);
    case Kind::Name: break;
  }
  return name == o.name;
}

// ---------------------------------------------------------------------------
// Meta
// ---------------------------------------------------------------------------
const Target& getitem_target() {
  static const Target t = [] {
    auto f = std::make_shared<Foreign>();
    f->module = "_operator";
    f->name = "getitem";
    f->repr = "<built-in function getitem>";
    f->identity = "_operator.getitem";
    return Target(ForeignPtr(f));
  }();
  return t;
}

bool is_getitem(const Target& t) {
  return t.kind == Target::Kind::Callable && t.callable->identity == "_operator.getitem";
}

TensorMeta TensorMeta::of(const Tensor& t) {
  TensorMeta m;
  m.sizes.assign(t.sizes().begin(), t.sizes().end());
  m.strides.assign(t.strides().begin(), t.strides().end());
  m.dtype = t.dtype();
  m.device = t.user_device();
  return m;
}

std::string SourceLoc::str() const { return ignis::str(file, ":", line); }

const std::string* NodeMeta::find_extra(const std::string& key) const {
  for (const auto& [k, v] : extra)
    if (k == key) return &v;
  return nullptr;
}

void NodeMeta::set_extra(const std::string& key, std::string value) {
  for (auto& [k, v] : extra) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  extra.emplace_back(key, std::move(value));
}

bool NodeMeta::erase_extra(const std::string& key) {
  auto it = std::find_if(extra.begin(), extra.end(), [&](const auto& e) { return e.first == key; });
  if (it == extra.end()) return false;
  extra.erase(it);
  return true;
}

// ---------------------------------------------------------------------------
// Node
// ---------------------------------------------------------------------------
Node::~Node() { clear_inputs(); }

const Value* Node::kwarg(const std::string& key) const {
  for (const auto& [k, v] : kwargs_)
    if (k == key) return &v;
  return nullptr;
}

void Node::clear_inputs() {
  for (Node* in : inputs_) {
    auto& u = in->users_;
    u.erase(std::remove(u.begin(), u.end(), this), u.end());
  }
  inputs_.clear();
}

void Node::update_inputs() {
  clear_inputs();
  auto add = [this](Node* n) {
    if (std::find(inputs_.begin(), inputs_.end(), n) == inputs_.end()) inputs_.push_back(n);
  };
  for (const Value& a : args_) for_each_node(a, add);
  for (const auto& kv : kwargs_) for_each_node(kv.second, add);
  for (Node* in : inputs_) in->users_.push_back(this);
}

void Node::set_args(std::vector<Value> args) {
  IGNIS_CHECK(!erased(), "Node '", name_, "' was erased from its graph and cannot be edited");
  args_ = std::move(args);
  update_inputs();
}

void Node::set_kwargs(Kwargs kwargs) {
  IGNIS_CHECK(!erased(), "Node '", name_, "' was erased from its graph and cannot be edited");
  kwargs_ = std::move(kwargs);
  update_inputs();
}

void Node::set_arg(size_t i, Value v) {
  IGNIS_CHECK_INDEX(i < args_.size(), "Node '", name_, "' has ", args_.size(), " args, no arg ", i);
  std::vector<Value> a = args_;
  a[i] = std::move(v);
  set_args(std::move(a));
}

void Node::rename(const std::string& candidate) {
  IGNIS_CHECK(!erased(), "Node '", name_, "' was erased from its graph and cannot be renamed");
  if (candidate == name_) return;
  name_ = graph_->unique_name(candidate);
}

void Node::replace_input_with(Node* old_input, const Value& with) {
  auto repl = [&](Node* n) { return n == old_input ? with : Value(n); };
  std::vector<Value> a;
  a.reserve(args_.size());
  for (const Value& v : args_) a.push_back(map_nodes(v, repl));
  Kwargs k;
  for (const auto& [key, v] : kwargs_) k.emplace_back(key, map_nodes(v, repl));
  args_ = std::move(a);
  kwargs_ = std::move(k);
  update_inputs();
}

std::vector<Node*> Node::replace_all_uses_with(const Value& with) {
  std::vector<Node*> users = users_;
  for (Node* u : users) u->replace_input_with(this, with);
  return users;
}

void Node::unlink() {
  prev_->next_ = next_;
  next_->prev_ = prev_;
  prev_ = next_ = nullptr;
}

void Node::prepend(Node* n) {
  IGNIS_CHECK(n != this, "cannot move node '", name_, "' next to itself");
  IGNIS_CHECK(!erased() && n->graph_ == graph_, "prepend: nodes '", name_, "' and '", n->name_,
              "' are not in the same graph");
  n->unlink();
  n->prev_ = prev_;
  n->next_ = this;
  prev_->next_ = n;
  prev_ = n;
}

void Node::append(Node* n) { next_->prepend(n); }

// ---------------------------------------------------------------------------
// Graph
// ---------------------------------------------------------------------------
Graph::Graph() {
  root_ = new Node(this, OpKind::Root, "", Target());
  root_->incref();
  root_->prev_ = root_->next_ = root_;
  insert_before_ = root_;
}

Graph::~Graph() {
  // Drop all edges first so no node outlives the users it points back to.
  for (Node* n : node_list()) {
    n->args_.clear();
    n->kwargs_.clear();
    n->clear_inputs();
  }
  for (Node* n : node_list()) {
    n->unlink();
    n->graph_ = nullptr;
    if (n->decref()) delete n;
  }
  if (root_->decref()) delete root_;
}

std::unordered_set<std::string>& Graph::reserved_names() {
  static std::unordered_set<std::string> names = [] {
    // Python keywords, the builtins a graph plausibly meets, and the names
    // generated code uses. The binding layer adds the complete lists.
    const char* init[] = {
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise",
        "return", "try", "while", "with", "yield", "abs", "all", "any", "bool", "bytes",
        "callable", "chr", "dict", "dir", "divmod", "enumerate", "eval", "exec", "filter",
        "float", "format", "getattr", "globals", "hasattr", "hash", "id", "input", "int",
        "isinstance", "iter", "len", "list", "locals", "map", "max", "min", "next", "object",
        "open", "ord", "pow", "print", "range", "repr", "reversed", "round", "set", "setattr",
        "slice", "sorted", "str", "sum", "super", "tuple", "type", "vars", "zip", "inf", "nan",
        "NoneType", "torch", "ignis", "device"};
    return std::unordered_set<std::string>(std::begin(init), std::end(init));
  }();
  return names;
}

std::string Namespace::create(const std::string& cand_in) {
  std::string candidate = cand_in;
  bool valid = !candidate.empty() && !is_digit(candidate[0]) &&
               std::all_of(candidate.begin(), candidate.end(), is_ident_char);
  if (!valid) {
    // Runs of characters illegal in an identifier become one "_".
    std::string s;
    for (size_t i = 0; i < candidate.size();) {
      if (is_ident_char(candidate[i])) {
        s += candidate[i++];
      } else {
        s += '_';
        while (i < candidate.size() && !is_ident_char(candidate[i])) ++i;
      }
    }
    candidate = s.empty() ? "_unnamed" : s;
    if (is_digit(candidate[0])) candidate = "_" + candidate;
  }
  // Split "base_N" (the last "_" followed only by digits, not at position 0).
  std::string base = candidate;
  bool has_num = false;
  int64_t num = 0;
  size_t us = candidate.rfind('_');
  if (us != std::string::npos && us > 0 && us + 1 < candidate.size() &&
      std::all_of(candidate.begin() + us + 1, candidate.end(), is_digit) &&
      candidate.size() - us - 1 < 18) {
    base = candidate.substr(0, us);
    num = std::stoll(candidate.substr(us + 1));
    has_num = true;
  }
  if (!has_num || used_.count(candidate)) {
    auto it = base_count_.find(base);
    num = it == base_count_.end() ? 0 : it->second;
    if (Graph::reserved_names().count(candidate)) {
      ++num;
      candidate = ignis::str(base, "_", num);
    }
  }
  while (used_.count(candidate)) {
    ++num;
    candidate = ignis::str(base, "_", num);
  }
  used_.insert(candidate);
  base_count_[base] = num;
  return candidate;
}

void Graph::insert(Node* n) {
  n->incref();
  Node* before = insert_before_;
  n->prev_ = before->prev_;
  n->next_ = before;
  before->prev_->next_ = n;
  before->prev_ = n;
  ++size_;
}

Node* Graph::create_node(OpKind op, Target target, std::vector<Value> args, Kwargs kwargs,
                         const std::string& name) {
  IGNIS_CHECK_VALUE(op != OpKind::Root, "create_node: 'root' is not a node opcode");
  const bool wants_callable = op == OpKind::CallFunction;
  IGNIS_CHECK_TYPE(wants_callable || target.is_name(), "create_node: the target of a ",
                   op_kind_name(op), " node must be a string, got ", target.identity());
  IGNIS_CHECK_TYPE(!wants_callable || !target.is_name(),
                   "create_node: the target of a call_function node must be callable, got the "
                   "string '", target.name, "'");
  std::string unique = unique_name(name.empty() ? target.base_name() : name);
  Node* n = new Node(this, op, std::move(unique), std::move(target));
  n->args_ = std::move(args);
  n->kwargs_ = std::move(kwargs);
  n->update_inputs();
  insert(n);
  return n;
}

Node* Graph::placeholder(const std::string& name) {
  return create_node(OpKind::Placeholder, Target(name));
}
Node* Graph::get_attr(const std::string& path) {
  return create_node(OpKind::GetAttr, Target(path));
}
Node* Graph::call_function(Target fn, std::vector<Value> args, Kwargs kwargs) {
  return create_node(OpKind::CallFunction, std::move(fn), std::move(args), std::move(kwargs));
}
Node* Graph::call_method(const std::string& method, std::vector<Value> args, Kwargs kwargs) {
  return create_node(OpKind::CallMethod, Target(method), std::move(args), std::move(kwargs));
}
Node* Graph::call_module(const std::string& path, std::vector<Value> args, Kwargs kwargs) {
  return create_node(OpKind::CallModule, Target(path), std::move(args), std::move(kwargs));
}
Node* Graph::output(Value result) {
  return create_node(OpKind::Output, Target("output"), {std::move(result)});
}

void Graph::erase_node(Node* n) {
  IGNIS_CHECK(n->graph_ == this, "erase_node: node '", n->name(), "' is not in this graph");
  if (!n->users_.empty()) {
    std::string users;
    for (Node* u : n->users_) users += (users.empty() ? "" : ", ") + u->name();
    IGNIS_FAIL("Tried to erase Node ", n->name(), " but it still had ", n->users_.size(),
               " users in the graph: ", users, "!");
  }
  if (insert_before_ == n) insert_before_ = n->next_;
  n->unlink();
  --size_;
  n->args_.clear();
  n->kwargs_.clear();
  n->clear_inputs();
  n->graph_ = nullptr;
  if (n->decref()) delete n;
}

std::vector<Node*> Graph::node_list() const {
  std::vector<Node*> v;
  v.reserve(size_);
  for (Node* n : nodes()) v.push_back(n);
  return v;
}

Node* Graph::find(const std::string& name) const {
  for (Node* n : nodes())
    if (n->name() == name) return n;
  return nullptr;
}

Node* Graph::output_node() const {
  for (Node* n : reversed())
    if (n->op() == OpKind::Output) return n;
  return nullptr;
}

std::vector<Node*> Graph::placeholders() const {
  std::vector<Node*> v;
  for (Node* n : nodes())
    if (n->op() == OpKind::Placeholder) v.push_back(n);
  return v;
}

Value Graph::copy_from(const Graph& other, const std::vector<Value>* inputs) {
  std::unordered_map<const Node*, Value> env;
  size_t next_input = 0;
  auto lookup = [&](Node* n) -> Value {
    auto it = env.find(n);
    IGNIS_CHECK(it != env.end(), "copy_from: node '", n->name(), "' is used before it is defined");
    return it->second;
  };
  for (Node* n : other.nodes()) {
    if (n->op() == OpKind::Output) return map_nodes(n->args().at(0), lookup);
    if (n->op() == OpKind::Placeholder && inputs) {
      IGNIS_CHECK_VALUE(next_input < inputs->size(), "copy_from: ", inputs->size(),
                        " inputs given, but the graph has more placeholders");
      env[n] = (*inputs)[next_input++];
      continue;
    }
    std::vector<Value> args;
    for (const Value& a : n->args()) args.push_back(map_nodes(a, lookup));
    Kwargs kwargs;
    for (const auto& [k, v] : n->kwargs()) kwargs.emplace_back(k, map_nodes(v, lookup));
    Node* c = create_node(n->op(), n->target(), std::move(args), std::move(kwargs), n->name());
    c->meta() = n->meta();
    c->type_repr = n->type_repr;
    c->type_object = n->type_object;
    env[n] = Value(c);
  }
  return Value();
}

}  // namespace ignis::graph

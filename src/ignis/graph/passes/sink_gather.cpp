#include "ignis/graph/passes/sink_gather.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/passes/dce.h"
#include "ignis/graph/passes/static_meta.h"
#include "ignis/ops/op_def.h"

namespace ignis::graph {

namespace {

const OpHandle* op_of(const Node* n) {
  if (n->op() != OpKind::CallFunction || n->target().kind != Target::Kind::Op) return nullptr;
  return n->target().op;
}

// Arguments an elementwise call may take besides its tensor operands.
bool plain_argument(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Node: return static_meta(v.to_node()) != nullptr;
    case Value::Kind::None: case Value::Kind::Bool: case Value::Kind::Int:
    case Value::Kind::Double: case Value::Kind::Str: case Value::Kind::Dtype:
    case Value::Kind::Device:
      return true;
    default: return false;  // lists (a dims argument), tensors held by value, ...
  }
}

// A node whose element at a coordinate is a function of its operands'
// elements at that coordinate (broadcast): a Pointwise declaration, a clone
// or a `_to_copy` that moves no data between devices.
bool elementwise(const Node* n) {
  const OpHandle* op = op_of(n);
  if (!op || !op->def() || n->target().impure() || n->target().nondeterministic() ||
      n->meta().writes_argument || !static_meta(n))
    return false;
  const std::string& name = op->schema().name;
  if (name == "_to_copy" || name == "clone") {
    if (n->args().size() != 1 || !n->args()[0].is_node()) return false;
    const TensorMeta* in = static_meta(n->args()[0].to_node());
    const TensorMeta* out = static_meta(n);
    if (!in || in->device.type != out->device.type || in->device.index != out->device.index)
      return false;
    for (const auto& [k, v] : n->kwargs())
      if (k != "dtype" && k != "device" && k != "non_blocking" &&
          !(k == "memory_format" && v.is_none()))
        return false;
  } else if (op->def()->category != OpCategory::Pointwise) {
    return false;
  }
  for (const Value& a : n->args())
    if (!plain_argument(a)) return false;
  for (const auto& [k, v] : n->kwargs())
    if (!plain_argument(v)) return false;
  return true;
}

bool is_view(const Node* n) {
  const OpHandle* op = op_of(n);
  return op && op->def() && (op->def()->category == OpCategory::View || op->def()->is_view) &&
         !n->args().empty() && n->args()[0].is_node();
}

// A value the program holds in memory whatever the rewrite does: a
// placeholder or constant, or the output of a non-elementwise op, seen
// through views.
bool leaf(const Node* n) {
  while (is_view(n)) n = n->args()[0].to_node();
  if (n->op() == OpKind::Placeholder || n->op() == OpKind::GetAttr) return true;
  const OpHandle* op = op_of(n);
  if (!op || !op->def()) return false;
  const std::string& name = op->schema().name;
  return op->def()->category != OpCategory::Pointwise && name != "_to_copy" && name != "clone" &&
         name != "copy";
}

// One gather(P, d, idx) and what its rewrite would create.
class Sinker {
 public:
  explicit Sinker(Node* gather) : gather_(gather) {}

  // Checks the gather and plans its rewrite; false leaves it alone.
  bool plan() {
    const OpHandle* op = op_of(gather_);
    if (!op || op->schema().full_name() != "gather" || gather_->args().size() != 3) return false;
    for (const auto& [k, v] : gather_->kwargs())
      if (k != "sparse_grad") return false;
    const Value& p = gather_->args()[0];
    const Value& dim = gather_->args()[1];
    const Value& idx = gather_->args()[2];
    if (!p.is_node() || dim.kind() != Value::Kind::Int || !idx.is_node()) return false;
    const TensorMeta* pm = static_meta(p.to_node());
    const TensorMeta* im = static_meta(idx.to_node());
    if (!pm || !im || !static_meta(gather_) || pm->sizes.empty() ||
        im->sizes.size() != pm->sizes.size())
      return false;
    shape_ = pm->sizes;
    int64_t rank = int64_t(shape_.size());
    d_ = dim.to_int() < 0 ? dim.to_int() + rank : dim.to_int();
    if (d_ < 0 || d_ >= rank || shape_[size_t(d_)] < 2) return false;
    for (int64_t s : shape_)
      if (s <= 0) return false;
    // idx names one element of P's dim d for each of P's rows: no more
    // elements than P has, so recomputing P's operations there costs less.
    for (size_t k = 0; k < shape_.size(); ++k) {
      if (int64_t(k) == d_ ? (im->sizes[k] < 1 || im->sizes[k] > shape_[k])
                           : im->sizes[k] != shape_[k])
        return false;
    }
    idx_ = idx.to_node();
    out_sizes_ = im->sizes;
    return elementwise(p.to_node()) && full(p.to_node());
  }

  // Builds the gathered value before the gather and hands the gather's
  // users to it; returns the nodes that may now be dead.
  std::vector<Node*> rewrite(Graph& g) {
    Node* before = g.insert_point();
    g.set_insert_point(gather_);
    Node* top = build(g, gather_->args()[0].to_node());
    g.set_insert_point(before);
    gather_->replace_all_uses_with(Value(top));
    std::vector<Node*> maybe_dead = {gather_};
    for (const auto& [n, sink] : planned_)
      if (sink) maybe_dead.push_back(n);
    return maybe_dead;
  }

 private:
  // Whether n, of P's exact sizes, can be had at idx's elements: sunk when
  // elementwise with every operand full or per row, gathered when a leaf.
  bool full(Node* n) {
    auto it = planned_.find(n);
    if (it != planned_.end()) return true;
    const TensorMeta* m = static_meta(n);
    if (!m || m->sizes != shape_) return false;
    if (elementwise(n) && operands_sink(n)) {
      planned_[n] = true;
      return true;
    }
    if (!leaf(n)) return false;
    planned_[n] = false;
    return true;
  }

  bool operands_sink(Node* n) {
    bool any_full = false;
    for (Node* a : n->input_nodes()) {
      const TensorMeta* m = static_meta(a);
      if (!m || m->sizes.size() > shape_.size()) return false;
      if (m->sizes == shape_) {
        if (!full(a)) return false;
        any_full = true;
        continue;
      }
      // Per row: size 1 along d, P's size or 1 elsewhere (right-aligned).
      size_t off = shape_.size() - m->sizes.size();
      for (size_t k = 0; k < m->sizes.size(); ++k) {
        int64_t s = m->sizes[k];
        if (int64_t(k + off) == d_ ? s != 1 : (s != 1 && s != shape_[k + off])) return false;
      }
    }
    return any_full;
  }

  TensorMeta gathered_meta(const Node* like) const {
    TensorMeta t = *static_meta(like);
    t.sizes = out_sizes_;
    DimVector strides = contiguous_strides(DimVector(out_sizes_));
    t.strides.assign(strides.begin(), strides.end());
    return t;
  }

  // n's value at idx's elements.
  Node* build(Graph& g, Node* n) {
    auto done = built_.find(n);
    if (done != built_.end()) return done->second;
    Node* out;
    if (!planned_.at(n)) {
      out = g.call_function(*gather_->target().op, {Value(n), Value(d_), Value(idx_)});
    } else {
      auto swap = [&](Node* a) -> Value {
        return planned_.count(a) ? Value(build(g, a)) : Value(a);
      };
      std::vector<Value> args;
      for (const Value& a : n->args()) args.push_back(map_nodes(a, swap));
      Kwargs kwargs;
      for (const auto& [k, v] : n->kwargs()) kwargs.emplace_back(k, map_nodes(v, swap));
      out = g.create_node(OpKind::CallFunction, n->target(), std::move(args), std::move(kwargs),
                          n->name());
    }
    out->meta().tensors = {gathered_meta(n)};
    out->meta().loc = gather_->meta().loc;
    built_[n] = out;
    return out;
  }

  Node* gather_;
  Node* idx_ = nullptr;
  int64_t d_ = 0;
  std::vector<SymInt> shape_;      // P's sizes
  std::vector<SymInt> out_sizes_;  // idx's (the gather's result)
  std::unordered_map<Node*, bool> planned_;  // full nodes: true sunk, false gathered
  std::unordered_map<Node*, Node*> built_;
};

}  // namespace

bool has_sinkable_gather(const Graph& g) {
  for (Node* n : g.nodes())
    if (const OpHandle* op = op_of(n); op && op->schema().name == "gather" && Sinker(n).plan())
      return true;
  return false;
}

size_t sink_gathers(Graph& g) {
  size_t rewritten = 0;
  for (Node* n : g.node_list()) {
    const OpHandle* op = op_of(n);
    if (!op || op->schema().name != "gather") continue;
    Sinker s(n);
    if (!s.plan()) continue;
    std::vector<Node*> maybe_dead = s.rewrite(g);
    ++rewritten;
    // Erase what only the gather used, users before their inputs (later in
    // the graph first).
    std::unordered_map<const Node*, size_t> position;
    for (Node* m : g.nodes()) position[m] = position.size();
    std::sort(maybe_dead.begin(), maybe_dead.end(),
              [&](Node* a, Node* b) { return position.at(a) > position.at(b); });
    for (Node* m : maybe_dead)
      if (m->users().empty() && !has_side_effects(*m)) g.erase_node(m);
  }
  return rewritten;
}

}  // namespace ignis::graph

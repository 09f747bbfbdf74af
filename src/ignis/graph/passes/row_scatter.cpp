#include "ignis/graph/passes/row_scatter.h"

#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/passes/dce.h"
#include "ignis/graph/passes/static_meta.h"

namespace ignis::graph {

namespace {

bool same_device(const TensorMeta& a, const TensorMeta& b) {
  return a.device.type == b.device.type && a.device.index == b.device.index;
}

TensorMeta contiguous_meta(std::vector<SymInt> sizes, ScalarType dtype, Device device) {
  TensorMeta m;
  DimVector strides = contiguous_strides(DimVector(sizes));
  m.strides.assign(strides.begin(), strides.end());
  m.sizes = std::move(sizes);
  m.dtype = dtype;
  m.device = device;
  return m;
}

// A scatter this pass rewrites: scatter_add or scatter.src, static, one
// index a row along d.
struct RowScatter {
  Node* node = nullptr;
  bool add = false;
  int64_t d = 0;
  Node *self = nullptr, *index = nullptr, *src = nullptr;
};

bool match(Node* n, RowScatter* out) {
  if (n->op() != OpKind::CallFunction || n->target().kind != Target::Kind::Op) return false;
  const std::string name = n->target().op->schema().full_name();
  if ((name != "scatter_add" && name != "scatter.src") || n->args().size() != 4 ||
      !n->kwargs().empty() || n->meta().writes_argument)
    return false;
  const std::vector<Value>& a = n->args();
  if (!a[0].is_node() || a[1].kind() != Value::Kind::Int || !a[2].is_node() || !a[3].is_node())
    return false;
  const TensorMeta *self = static_meta(a[0].to_node()), *index = static_meta(a[2].to_node()),
                   *src = static_meta(a[3].to_node()), *result = static_meta(n);
  if (!self || !index || !src || !result || self->sizes.empty() ||
      index->sizes.size() != self->sizes.size() || src->sizes != index->sizes ||
      src->dtype != self->dtype || index->dtype != ScalarType::Int64 ||
      !same_device(*self, *index) || !same_device(*self, *src))
    return false;
  const int64_t rank = int64_t(self->sizes.size());
  const int64_t d = a[1].to_int() < 0 ? a[1].to_int() + rank : a[1].to_int();
  if (d < 0 || d >= rank || self->sizes[size_t(d)] < 1) return false;
  for (int64_t k = 0; k < rank; ++k)
    if (index->sizes[size_t(k)] != (k == d ? 1 : int64_t(self->sizes[size_t(k)]))) return false;
  out->node = n;
  out->add = name == "scatter_add";
  out->d = d;
  out->self = a[0].to_node();
  out->index = a[2].to_node();
  out->src = a[3].to_node();
  return true;
}

Node* call(Graph& g, const char* op, std::vector<Value> args, Kwargs kwargs, TensorMeta meta,
           const Node* like) {
  Node* n = g.create_node(OpKind::CallFunction, Target(Dispatcher::get().find_or_throw(op)),
                          std::move(args), std::move(kwargs));
  n->meta().tensors = {std::move(meta)};
  n->meta().loc = like->meta().loc;
  return n;
}

Node* rewrite(Graph& g, const RowScatter& s) {
  const TensorMeta& self = *static_meta(s.self);
  const TensorMeta& index = *static_meta(s.index);
  const size_t rank = self.sizes.size(), d = size_t(s.d);
  const int64_t extent = int64_t(self.sizes[d]);
  Node* before = g.insert_point();
  g.set_insert_point(s.node);
  // arange along d, size 1 in the other dims: it broadcasts against idx.
  std::vector<SymInt> line(rank, SymInt(1));
  line[d] = SymInt(extent);
  Value::Items line_items;
  for (SymInt v : line) line_items.push_back(Value(int64_t(v)));
  auto positions = [&] {
    Node* iota = call(g, "arange.start", {Value(int64_t(0)), Value(extent)},
                      {{"dtype", Value(ScalarType::Int64)}, {"device", Value(self.device)}},
                      contiguous_meta({SymInt(extent)}, ScalarType::Int64, self.device), s.node);
    return call(g, "view", {Value(iota), Value::list(line_items)}, {},
                contiguous_meta(line, ScalarType::Int64, self.device), s.node);
  };
  // Two aranges: the gather below is an extern, so the one it reads is
  // stored; the hit test reads its own, which the lowering computes from the
  // coordinates in the fused kernel. Reading the stored int64s there capped
  // the kernel's vectors at two elements (16 bytes of int64): GPT-2's
  // cross-entropy backward over 4096 x 50304 bfloat16 logits moved 4-byte
  // vectors, 644 us on the H100 (docs/benchmarks.md run 15).
  Node* column = positions();
  // Checked indices: the arange at idx is idx, or an error where idx is out
  // of range (what the scatter would raise).
  Value::Items full_items;
  for (SymInt v : self.sizes) full_items.push_back(Value(int64_t(v)));
  TensorMeta spread = contiguous_meta(self.sizes, ScalarType::Int64, self.device);
  for (size_t k = 0; k < rank; ++k) spread.strides[k] = SymInt(k == d ? 1 : 0);
  Node* spread_node = call(g, "expand", {Value(column), Value::list(full_items)}, {}, spread,
                           s.node);
  Node* checked = call(g, "gather", {Value(spread_node), Value(s.d), Value(s.index)}, {},
                       contiguous_meta(index.sizes, ScalarType::Int64, self.device), s.node);
  Node* hit = call(g, "eq", {Value(positions()), Value(checked)}, {},
                   contiguous_meta(self.sizes, ScalarType::Bool, self.device), s.node);
  // self is read once (a value two pointwise users read would be stored
  // first): scatter_add adds where(hit, src, -0.0), whose -0.0 leaves every
  // other element's bits as they are (-0.0 + -0.0 is -0.0; +0.0 would turn
  // it into +0.0); scatter selects.
  Node* out;
  if (s.add) {
    Node* neutral = call(g, "full", {Value::list({}), Value(-0.0)},
                         {{"dtype", Value(self.dtype)}, {"device", Value(self.device)}},
                         contiguous_meta({}, self.dtype, self.device), s.node);
    Node* term = call(g, "where.self", {Value(hit), Value(s.src), Value(neutral)}, {},
                      contiguous_meta(self.sizes, self.dtype, self.device), s.node);
    out = call(g, "add", {Value(s.self), Value(term)}, {}, *static_meta(s.node), s.node);
  } else {
    out = call(g, "where.self", {Value(hit), Value(s.src), Value(s.self)}, {},
               *static_meta(s.node), s.node);
  }
  g.set_insert_point(before);
  s.node->replace_all_uses_with(Value(out));
  return out;
}

}  // namespace

bool has_row_scatter(const Graph& g) {
  RowScatter s;
  for (Node* n : g.nodes())
    if (match(n, &s)) return true;
  return false;
}

size_t rewrite_row_scatters(Graph& g) {
  size_t rewritten = 0;
  for (Node* n : g.node_list()) {
    RowScatter s;
    if (!match(n, &s)) continue;
    rewrite(g, s);
    if (n->users().empty() && !has_side_effects(*n)) g.erase_node(n);
    ++rewritten;
  }
  return rewritten;
}

}  // namespace ignis::graph

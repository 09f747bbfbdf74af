// The partitioners: default and min-cut (see partition.h).
#include "ignis/aot/partition.h"

#include <algorithm>
#include <unordered_map>

#include "ignis/core/error.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/passes/dce.h"
#include "ignis/graph/passes/lint.h"
#include "ignis/ops/op_def.h"

namespace ignis::aot {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Target;
using graph::Value;

namespace {

// ---------------------------------------------------------------------------
// What one node is
// ---------------------------------------------------------------------------
bool is_tangent(const Node& n) {
  return n.op() == OpKind::Placeholder && n.name().rfind("tangents", 0) == 0;
}

bool is_primal(const Node& n) { return n.op() == OpKind::Placeholder && !is_tangent(n); }

// operator.getitem (what capture and tracing emit), or x.__getitem__(i).
bool is_getitem(const Node& n) {
  if (n.op() == OpKind::CallMethod) return n.target().name == "__getitem__";
  if (n.op() != OpKind::CallFunction || n.target().kind != Target::Kind::Callable) return false;
  const graph::Foreign& f = *n.target().callable;
  return f.name == "getitem" && (f.module == "_operator" || f.module == "operator");
}

bool is_call(const Node& n) {
  return n.op() == OpKind::CallFunction || n.op() == OpKind::CallMethod ||
         n.op() == OpKind::CallModule;
}

// Side effects that must happen once (copy_ into an input, an in-place method).
bool is_effectful(const Node& n) { return is_call(n) && graph::has_side_effects(n); }

// Draws from the RNG: running it again would give other numbers. An
// uninitialised allocation (empty) is not: nothing reads its values, so the
// backward may make its own.
bool is_random(const Node& n) {
  if (n.op() != OpKind::CallFunction) return false;
  const Target& t = n.target();
  if (t.kind == Target::Kind::Op && t.op->def())
    return t.op->def()->determinism == Determinism::Random;
  return t.nondeterministic();
}

const OpDef* def_of(const Node& n) {
  if (n.op() != OpKind::CallFunction || n.target().kind != Target::Kind::Op) return nullptr;
  return n.target().op->def();
}

bool is_compute_intensive(const Node& n) {
  const OpDef* d = def_of(n);
  if (!d) return false;
  // GEMMs and attention are declared Template (matmul and the public
  // scaled_dot_product_attention are composites: they reach graphs as those).
  return d->category == OpCategory::Template;
}

int64_t bytes_of(const Node& n) {
  int64_t total = 0;
  for (const graph::TensorMeta& m : n.meta().tensors) {
    int64_t numel = 1;
    for (graph::SymInt s : m.sizes) numel *= s;
    total += numel * static_cast<int64_t>(element_size(m.dtype));
  }
  return total;
}

// Fuses with its neighbours in a generated kernel: its result need never be
// written to memory when all its users fuse too.
bool is_fusible(const Node& n) {
  const OpDef* d = def_of(n);
  if (!d || is_random(n) || is_effectful(n) || is_compute_intensive(n)) return false;
  switch (d->category) {
    case OpCategory::Pointwise: case OpCategory::View: case OpCategory::Reduction:
    case OpCategory::Creation:
      return true;
    default: return false;
  }
}

// Whether the backward may compute this forward node again (partition.h,
// "Recompute policy"); the chain-length cap is applied by the caller.
bool is_recomputable(const Node& n, const PartitionOptions& o) {
  if (is_getitem(n) || n.op() == OpKind::GetAttr) return true;  // a constant is free to read
  const OpDef* d = def_of(n);
  if (!d || is_random(n) || is_effectful(n) || is_compute_intensive(n)) return false;
  switch (d->category) {
    case OpCategory::Pointwise: case OpCategory::Creation: return true;
    case OpCategory::View: return o.recompute_views;
    case OpCategory::Reduction: {
      int64_t in = 0;
      for (const Node* i : n.input_nodes()) in += bytes_of(*i);
      return static_cast<double>(bytes_of(n)) * o.reduction_ratio >= static_cast<double>(in);
    }
    default: return false;
  }
}

// ---------------------------------------------------------------------------
// The joint graph, read once
// ---------------------------------------------------------------------------
struct Joint {
  std::vector<Node*> nodes;  // execution order, without the output node
  std::unordered_map<const Node*, size_t> index;
  std::vector<Value> fw_outs;  // the first K output values
  std::vector<Value> grads;    // the rest
  // Per node (by index):
  std::vector<char> tangent;      // a tangent, or computed from one
  std::vector<char> live;         // the output or an effectful node needs it
  std::vector<char> forced_fw;    // random or effectful, no tangent: runs in the forward
  std::vector<char> required_fw;  // primals, and what fw outputs and forced nodes need
  std::vector<char> grad_out;     // named directly by a grad output

  size_t size() const { return nodes.size(); }
  size_t at(const Node* n) const { return index.at(n); }
};

// Marks in `mask` every node that the marked nodes (transitively) read.
void close_over_inputs(const Joint& j, std::vector<char>& mask) {
  for (size_t i = j.size(); i-- > 0;)
    if (mask[i])
      for (const Node* in : j.nodes[i]->input_nodes()) mask[j.at(in)] = 1;
}

Joint read_joint(const Graph& joint, size_t num_fwd_outputs) {
  Joint j;
  Node* out = joint.output_node();
  IGNIS_CHECK(out && !out->args().empty(), "partition: the joint graph has no output");
  const Value& result = out->args()[0];
  IGNIS_CHECK(result.is_sequence() && result.items().size() >= num_fwd_outputs,
              "partition: the joint graph must return a tuple of ", num_fwd_outputs,
              " forward outputs followed by the gradients of the primals");
  const Value::Items& items = result.items();
  j.fw_outs.assign(items.begin(), items.begin() + static_cast<ptrdiff_t>(num_fwd_outputs));
  j.grads.assign(items.begin() + static_cast<ptrdiff_t>(num_fwd_outputs), items.end());

  for (Node* n : joint.nodes())
    if (n != out) {
      j.index.emplace(n, j.nodes.size());
      j.nodes.push_back(n);
    }
  const size_t n = j.size();
  j.tangent.assign(n, 0);
  j.live.assign(n, 0);
  j.forced_fw.assign(n, 0);
  j.required_fw.assign(n, 0);
  j.grad_out.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = *j.nodes[i];
    bool t = is_tangent(node);
    for (const Node* in : node.input_nodes()) t = t || j.tangent[j.at(in)];
    j.tangent[i] = t;
  }
  // Walking backwards, a node's users are decided before the node.
  for (size_t i = n; i-- > 0;) {
    const Node& node = *j.nodes[i];
    bool live = is_effectful(node);
    for (const Node* u : node.users()) live = live || u == out || j.live[j.at(u)];
    j.live[i] = live;
  }
  for (const Value& g : j.grads) graph::for_each_node(g, [&](Node* x) { j.grad_out[j.at(x)] = 1; });
  for (const Value& v : j.fw_outs)
    graph::for_each_node(v, [&](Node* x) {
      IGNIS_CHECK(!j.tangent[j.at(x)], "partition: forward output '", x->name(),
                  "' depends on a tangent");
      j.required_fw[j.at(x)] = 1;
    });
  for (size_t i = 0; i < n; ++i) {
    const Node& node = *j.nodes[i];
    if (j.live[i] && !j.tangent[i] && (is_effectful(node) || is_random(node)))
      j.forced_fw[i] = j.required_fw[i] = 1;
    if (is_primal(node)) j.required_fw[i] = 1;
  }
  close_over_inputs(j, j.required_fw);
  return j;
}

// ---------------------------------------------------------------------------
// Building the two graphs
// ---------------------------------------------------------------------------
using Env = std::unordered_map<const Node*, Value>;

Value lookup(const Env& env, Node* n) {
  auto it = env.find(n);
  IGNIS_INTERNAL_ASSERT(it != env.end(), "partition: '", n->name(), "' has no value here");
  return it->second;
}

// Copies `n` into `g` under the same name, its arguments mapped through env.
Node* copy_node(Graph& g, const Node& n, Env& env) {
  auto map = [&](Node* x) { return lookup(env, x); };
  std::vector<Value> args;
  for (const Value& a : n.args()) args.push_back(graph::map_nodes(a, map));
  graph::Kwargs kwargs;
  for (const auto& [k, v] : n.kwargs()) kwargs.emplace_back(k, graph::map_nodes(v, map));
  Node* c = g.create_node(n.op(), n.target(), std::move(args), std::move(kwargs), n.name());
  IGNIS_INTERNAL_ASSERT(c->name() == n.name(), "partition: '", n.name(), "' was renamed");
  c->meta() = n.meta();
  c->type_repr = n.type_repr;
  c->type_object = n.type_object;
  env[&n] = Value(c);
  return c;
}

Value map_value(const Env& env, const Value& v) {
  return graph::map_nodes(v, [&](Node* x) { return lookup(env, x); });
}

// Builds both graphs once the backward's boundary is known. The backward
// walks up from the grad outputs (and tangent-dependent effectful nodes) and
// stops at tangents and at nodes in `stop`; the stop nodes it reaches are
// the saved values. `never_in_bw` marks forward nodes the backward must not
// compute (the walk reaching one is a partitioner bug).
Partition assemble(const Joint& j, const std::vector<char>& stop,
                   const std::vector<char>& never_in_bw, size_t num_fwd_outputs) {
  const size_t n = j.size();
  std::vector<char> seen(n, 0), in_bw(n, 0), saved(n, 0);
  std::vector<size_t> todo;
  for (const Value& g : j.grads) graph::for_each_node(g, [&](Node* x) { todo.push_back(j.at(x)); });
  for (size_t i = 0; i < n; ++i)
    if (j.tangent[i] && j.live[i] && is_effectful(*j.nodes[i])) todo.push_back(i);
  while (!todo.empty()) {
    size_t i = todo.back();
    todo.pop_back();
    if (seen[i]) continue;
    seen[i] = 1;
    const Node& node = *j.nodes[i];
    if (is_tangent(node)) continue;
    if (stop[i]) {
      saved[i] = 1;
      continue;
    }
    IGNIS_INTERNAL_ASSERT(j.tangent[i] || (!is_primal(node) && !never_in_bw[i]),
                          "partition: the backward would compute forward node '", node.name(),
                          "' again");
    in_bw[i] = 1;
    for (const Node* in : node.input_nodes()) todo.push_back(j.at(in));
  }

  // The forward: what its outputs, random and effectful nodes and the saved
  // values need.
  std::vector<char> in_fw = j.required_fw;
  for (size_t i = 0; i < n; ++i) in_fw[i] = in_fw[i] || saved[i];
  close_over_inputs(j, in_fw);

  Partition p;
  p.num_fwd_outputs = num_fwd_outputs;
  p.forward = std::make_unique<Graph>();
  p.backward = std::make_unique<Graph>();
  Env fenv, benv;
  // The forward ends with its write-backs into inputs (schema.h), then what
  // reads an input after its write-back (an output viewing it): values of
  // the backward's half computed here for saving come before, or they would
  // read the written input (a compiler that recomputes a fused pointwise
  // value from the input at its use would read the new data).
  std::vector<char> after_writes(n, 0), written_primal(n, 0);
  bool past_write = false;
  for (size_t i = 0; i < n; ++i) {
    const Node& node = *j.nodes[i];
    bool write_back = is_effectful(node) && !node.args().empty() && node.args()[0].is_node() &&
                      is_primal(*node.args()[0].to_node());
    if (write_back) {
      written_primal[j.at(node.args()[0].to_node())] = 1;
      after_writes[i] = 1;
      past_write = true;
      continue;
    }
    if (!past_write) continue;
    for (const Node* in : node.input_nodes())
      after_writes[i] = after_writes[i] || written_primal[j.at(in)] || after_writes[j.at(in)];
  }
  for (int late = 0; late < 2; ++late) {
    for (size_t i = 0; i < n; ++i) {
      if (!in_fw[i] || after_writes[i] != late) continue;
      IGNIS_INTERNAL_ASSERT(!j.tangent[i], "partition: tangent-dependent '", j.nodes[i]->name(),
                            "' in the forward");
      copy_node(*p.forward, *j.nodes[i], fenv);
    }
  }
  Value::Items fw_result;
  for (const Value& v : j.fw_outs) fw_result.push_back(map_value(fenv, v));

  for (size_t i = 0; i < n; ++i) {
    if (!saved[i]) continue;
    const Node& s = *j.nodes[i];
    fw_result.push_back(lookup(fenv, j.nodes[i]));
    p.saved.push_back(s.name());
    p.saved_bytes += bytes_of(s);
    Node* ph = p.backward->placeholder(s.name());
    IGNIS_INTERNAL_ASSERT(ph->name() == s.name(), "partition: '", s.name(), "' was renamed");
    ph->meta() = s.meta();
    ph->type_repr = s.type_repr;
    ph->type_object = s.type_object;
    benv[&s] = Value(ph);
  }
  p.forward->output(Value::tuple(std::move(fw_result)));

  for (size_t i = 0; i < n; ++i)
    if (is_tangent(*j.nodes[i])) copy_node(*p.backward, *j.nodes[i], benv);
  for (size_t i = 0; i < n; ++i) {
    if (!in_bw[i]) continue;
    copy_node(*p.backward, *j.nodes[i], benv);
    if (in_fw[i]) p.recomputed.push_back(j.nodes[i]->name());
  }
  Value::Items grads;
  for (const Value& g : j.grads) grads.push_back(map_value(benv, g));
  p.backward->output(Value::tuple(std::move(grads)));
  return p;
}

// ---------------------------------------------------------------------------
// Maximum flow (Dinic): BFS levels, then blocking flows along increasing
// levels. O(V^2 E) in theory; on partitioning graphs (DAGs with few long
// augmenting paths) a handful of phases.
// ---------------------------------------------------------------------------
class MaxFlow {
 public:
  static constexpr int64_t kInf = int64_t(1) << 62;

  explicit MaxFlow(int nodes) : adj_(static_cast<size_t>(nodes)) {}

  void add_edge(int from, int to, int64_t cap) {
    adj_[from].push_back(static_cast<int>(edges_.size()));
    edges_.push_back({to, cap});
    adj_[to].push_back(static_cast<int>(edges_.size()));
    edges_.push_back({from, 0});
  }

  // The maximum flow from s to t, or kInf when it is at least kInf (every
  // cut holds an infinite edge).
  int64_t run(int s, int t) {
    int64_t flow = 0;
    while (levels(s, t)) {
      next_.assign(adj_.size(), 0);
      while (int64_t f = augment(s, t, kInf)) {
        flow += f;
        if (flow >= kInf) return kInf;
      }
    }
    return flow;
  }

  // Nodes that reach t in the residual graph. Their complement and they
  // form the minimum cut nearest the sink.
  std::vector<char> sink_side(int t) const {
    std::vector<char> seen(adj_.size(), 0);
    std::vector<int> todo{t};
    seen[t] = 1;
    while (!todo.empty()) {
      int w = todo.back();
      todo.pop_back();
      for (int e : adj_[w]) {
        int v = edges_[e].to;  // edge e ^ 1 runs v -> w
        if (edges_[e ^ 1].cap > 0 && !seen[v]) {
          seen[v] = 1;
          todo.push_back(v);
        }
      }
    }
    return seen;
  }

 private:
  struct Edge {
    int to;
    int64_t cap;  // residual capacity
  };

  bool levels(int s, int t) {
    level_.assign(adj_.size(), -1);
    std::vector<int> queue{s};
    level_[s] = 0;
    for (size_t q = 0; q < queue.size(); ++q) {
      int v = queue[q];
      for (int e : adj_[v])
        if (edges_[e].cap > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[v] + 1;
          queue.push_back(edges_[e].to);
        }
    }
    return level_[t] >= 0;
  }

  // One augmenting path along increasing levels; next_ skips edges already
  // found saturated or dead in this phase.
  int64_t augment(int v, int t, int64_t limit) {
    if (v == t) return limit;
    for (size_t& k = next_[v]; k < adj_[v].size(); ++k) {
      Edge& e = edges_[adj_[v][k]];
      if (e.cap <= 0 || level_[e.to] != level_[v] + 1) continue;
      int64_t f = augment(e.to, t, std::min(limit, e.cap));
      if (f > 0) {
        e.cap -= f;
        edges_[adj_[v][k] ^ 1].cap += f;
        return f;
      }
    }
    return 0;
  }

  std::vector<Edge> edges_;
  std::vector<std::vector<int>> adj_;
  std::vector<int> level_;
  std::vector<size_t> next_;
};

// Forward nodes the backward may not compute again (partition.h, "Recompute
// policy"), chain cap included.
std::vector<char> banned_nodes(const Joint& j, const PartitionOptions& o) {
  const size_t n = j.size();
  std::vector<char> banned(n, 0);
  std::vector<int64_t> chain(n, 0);  // recomputable ops ending here
  for (size_t i = 0; i < n; ++i) {
    const Node& node = *j.nodes[i];
    if (!j.required_fw[i] || !is_call(node)) continue;
    if (!is_recomputable(node, o)) {
      banned[i] = 1;
      continue;
    }
    int64_t longest = 0;
    for (const Node* in : node.input_nodes()) longest = std::max(longest, chain[j.at(in)]);
    chain[i] = longest + (is_getitem(node) ? 0 : 1);  // a getitem computes nothing
    if (chain[i] > o.max_recompute_chain) {
      banned[i] = 1;
      chain[i] = 0;
    }
  }
  return banned;
}

// Note [Saving what eager saves]
// Eager autograd keeps what the derivative formulas save: tanh its result,
// mul its operands. A program may write into an input after the forward
// (under no_grad, or after a graph break); eager's gradient survives that
// when no formula saved the input, and raises ("modified by an inplace
// operation") when one did. A compiled backward that saved an input eager
// did not save (to recompute tanh from it) would raise where eager does
// not. So a primal that no backward node of the joint graph reads (one
// computed from a tangent, or one only the gradients need) is never saved
// nor recomputed from: the cut saves what is computed from it instead, as
// eager does. The same holds for the forward's outputs (the program may
// write into those too: v2.add_(...) after a graph break) and for views of
// either (they share the storage and the version counter). Those the
// formulas read are saved as before, and the runtime checks the versions
// of the inputs eager saves whether or not the cut saved them
// (aot_autograd.py, _eager_saved_inputs).
bool read_by_backward(const Joint& j, size_t i) {
  if (j.grad_out[i]) return true;
  for (const Node* u : j.nodes[i]->users()) {
    if (u->op() == OpKind::Output) continue;
    const size_t ui = j.at(u);
    if (j.live[ui] && (j.tangent[ui] || !j.required_fw[ui])) return true;
  }
  return false;
}

// The forward outputs (the primals among them when `primals`) and, when
// `primals`, every primal; then the views (and getitems) taken of those in
// execution order.
std::vector<char> held_with_views(const Joint& j, bool primals) {
  std::vector<char> held(j.size(), 0);
  for (const Value& v : j.fw_outs)
    graph::for_each_node(v, [&](Node* x) { held[j.at(x)] = primals || !is_primal(*x); });
  for (size_t i = 0; i < j.size(); ++i) {
    const Node& node = *j.nodes[i];
    if (primals && is_primal(node)) held[i] = 1;
    const OpDef* d = def_of(node);
    const bool view = is_getitem(node) || (d && d->category == OpCategory::View);
    if (!held[i] && !j.tangent[i] && view)
      for (const Node* in : node.input_nodes()) held[i] = held[i] || held[j.at(in)];
  }
  return held;
}

// Values the program holds after the forward (the primals and the forward
// outputs) and the views taken of them in execution order.
std::vector<char> visible_to_program(const Joint& j) { return held_with_views(j, true); }

// Note [Recomputing from what the program holds]
// (Note [Saving what eager saves], continued.) The runtime checks a saved
// value's version when a tangent that meets it in the backward arrives
// (aot_autograd.py, _saved_tangents): the tangents of the formulas that read
// it, and those of whatever the backward recomputes from it. Eager checks an
// input (an output, a view of either) only when a formula that saved it
// runs. So the cut may save `a` for t5 = a * a (MulBackward reads it), but
// must not recompute from it the mask of t3 = a.masked_fill(a < 0.1, v),
// which eager saves instead of `a`: after a later a.mul_(0.9) under no_grad
// the compiled backward raised when only t3's gradient arrived, where eager's
// runs (fuzz seed 300293); unchecked, it would have computed the mask from
// the new data. A forward node reading a value the program holds may be
// recomputed by the backward only for the gradients (the tangents) that
// formulas reading that value or a view of it serve; one that serves others
// stays in the forward, and the cut saves it or what is computed from it.
// torch.compile's partitioner recomputes there and raises (on 300293 its
// aot_eager does not compile at all).

// A set of tangents, by position among the tangent placeholders.
class TangentSet {
 public:
  explicit TangentSet(size_t num_tangents = 0) : words_((num_tangents + 63) / 64, 0) {}
  void add(size_t k) { words_[k / 64] |= uint64_t(1) << (k % 64); }
  void add_all() { std::fill(words_.begin(), words_.end(), ~uint64_t(0)); }
  void add(const TangentSet& o) {
    for (size_t w = 0; w < words_.size(); ++w) words_[w] |= o.words_[w];
  }
  bool subset_of(const TangentSet& o) const {
    for (size_t w = 0; w < words_.size(); ++w)
      if (words_[w] & ~o.words_[w]) return false;
    return true;
  }

 private:
  std::vector<uint64_t> words_;
};

// Forward nodes that read a value the program holds (a primal, a forward
// output, or a view of either) and that the backward may not recompute
// from it (Note [Recomputing from what the program holds]).
std::vector<char> recompute_from_held_banned(const Joint& j) {
  const size_t n = j.size();
  size_t num_tangents = 0;
  std::vector<TangentSet> reach(n);  // the tangents a node is computed from
  for (size_t i = 0; i < n; ++i)
    if (is_tangent(*j.nodes[i])) ++num_tangents;
  for (size_t i = 0, k = 0; i < n; ++i) {
    reach[i] = TangentSet(num_tangents);
    if (is_tangent(*j.nodes[i])) reach[i].add(k++);
    for (const Node* in : j.nodes[i]->input_nodes()) reach[i].add(reach[j.at(in)]);
  }
  auto live_users = [&](size_t i) {
    std::vector<size_t> users;
    for (const Node* u : j.nodes[i]->users())
      if (u->op() != OpKind::Output && j.live[j.at(u)]) users.push_back(j.at(u));
    return users;
  };
  // Per tangent-free node, the tangents whose gradients a backward reading
  // it would serve: those of the first tangent-dependent nodes downstream
  // (all of them for a value returned as a gradient itself).
  std::vector<TangentSet> serves(n, TangentSet(num_tangents));
  for (size_t i = n; i-- > 0;) {
    if (j.tangent[i]) continue;
    if (j.grad_out[i]) serves[i].add_all();
    for (size_t u : live_users(i)) serves[i].add(j.tangent[u] ? reach[u] : serves[u]);
  }
  // Held values by family: a primal or forward output roots one, and a view
  // (or getitem) of a member joins its family (one storage, one version
  // counter). -1: not held.
  std::vector<int64_t> root(n, -1);
  std::vector<char> fw_out(n, 0);
  for (const Value& v : j.fw_outs) graph::for_each_node(v, [&](Node* x) { fw_out[j.at(x)] = 1; });
  for (size_t i = 0; i < n; ++i) {
    const Node& node = *j.nodes[i];
    const OpDef* d = def_of(node);
    if (!j.tangent[i] && (is_getitem(node) || (d && d->category == OpCategory::View)))
      for (const Node* in : node.input_nodes())
        if (root[i] < 0) root[i] = root[j.at(in)];
    if (root[i] < 0 && (is_primal(node) || fw_out[i])) root[i] = static_cast<int64_t>(i);
  }
  // The tangents the formulas reading a family serve: eager checks its
  // version counter only when their gradients arrive.
  std::vector<TangentSet> read_for(n, TangentSet(num_tangents));
  for (size_t i = 0; i < n; ++i) {
    if (root[i] < 0) continue;
    TangentSet& reads = read_for[static_cast<size_t>(root[i])];
    if (j.grad_out[i]) reads.add_all();
    for (size_t u : live_users(i)) {
      if (j.tangent[u]) reads.add(reach[u]);
      else if (root[u] != root[i] && !j.required_fw[u]) reads.add(serves[u]);  // a formula's part
    }
  }
  std::vector<char> banned(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (root[i] < 0) continue;
    for (size_t u : live_users(i))
      if (!j.tangent[u] && j.required_fw[u] && root[u] != root[i] && is_call(*j.nodes[u]) &&
          !serves[u].subset_of(read_for[static_cast<size_t>(root[i])]))
        banned[u] = 1;
  }
  return banned;
}

// The nodes whose saving the minimum cut chooses; empty when no cut is finite.
std::vector<char> min_cut(const Joint& j, const std::vector<char>& banned,
                          const PartitionOptions& o) {
  const size_t n = j.size();
  // Candidates: live values computed without tangents. Node i splits into
  // in = 2i and out = 2i + 1.
  std::vector<char> cand(n, 0);
  size_t num_cand = 0;
  for (size_t i = 0; i < n; ++i) {
    cand[i] = j.live[i] && !j.tangent[i];
    num_cand += cand[i];
  }
  const int source = static_cast<int>(2 * n), sink = source + 1;
  const int64_t inf = MaxFlow::kInf;
  // Capacity = cost * tie_scale + tie, tie in {1, 2, 3, 4}: the tie terms of
  // any cut sum to less than tie_scale, so they only order cuts of equal
  // cost: fewer tensors first, then forward outputs (alive anyway, and what
  // eager's formulas save: tanh's result, not its input, so a later write
  // into the input cannot change the gradient), then primals, then other
  // values, then views (a view's base is the thing worth keeping). Costs
  // are clamped so that all finite capacities together stay below kInf.
  const int64_t tie_scale = 4 * static_cast<int64_t>(num_cand) + 1;
  // A primal the forward writes back into (copy_ of a mutated input) holds
  // its new value once the forward has run: the backward may neither read
  // it (saved) nor recompute from it. Its edge cannot be cut, so whatever
  // the backward needs of it is saved downstream.
  std::vector<char> written(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = *j.nodes[i];
    if (is_effectful(node) && !node.args().empty() && node.args()[0].is_node() &&
        is_primal(*node.args()[0].to_node()))
      written[j.at(node.args()[0].to_node())] = 1;
  }
  const std::vector<char> visible = visible_to_program(j);
  // Forward outputs and views of them: the program holds them after the
  // forward (a model's logits beside its loss), so saving one adds no
  // memory. They cost nothing; the backward recomputes from them rather
  // than have the forward save a value of the same size made from them
  // (cross-entropy's softmax: saved, it doubled the logits' memory).
  const std::vector<char> held_output = held_with_views(j, false);
  const int64_t max_cost = inf / (tie_scale * (static_cast<int64_t>(num_cand) + 1)) - 1;
  MaxFlow flow(sink + 1);
  for (size_t i = 0; i < n; ++i) {
    if (!cand[i]) continue;
    const Node& node = *j.nodes[i];
    const int in = static_cast<int>(2 * i), out = in + 1;
    bool only_getitems = !node.users().empty();
    bool materialized = !is_fusible(node);
    bool fw_output = false;
    bool feeds_bw = j.grad_out[i];
    for (const Node* u : node.users()) {
      if (u->op() == OpKind::Output) {
        materialized = true;
        only_getitems = false;
        fw_output = true;
        continue;
      }
      size_t ui = j.at(u);
      if (!j.live[ui]) continue;
      only_getitems = only_getitems && is_getitem(*u);
      materialized = materialized || !is_fusible(*u);
      if (j.tangent[ui]) feeds_bw = true;
      else flow.add_edge(out, static_cast<int>(2 * ui), inf);
    }
    const bool unsaved_primal = visible[i] && !read_by_backward(j, i);
    if (only_getitems || written[i] || unsaved_primal) {
      flow.add_edge(in, out, inf);  // saved through its getitems; or never
    } else {
      double cost = held_output[i] ? 0.0 : static_cast<double>(bytes_of(node));
      if (!materialized && !is_primal(node)) cost *= o.unfused_save_penalty;
      int64_t c = std::min(static_cast<int64_t>(cost), max_cost);
      const OpDef* d = def_of(node);
      int64_t tie = fw_output && !is_primal(node)                 ? 1
                    : is_primal(node)                               ? 2
                    : d && d->category == OpCategory::View          ? 4
                                                                    : 3;
      flow.add_edge(in, out, c * tie_scale + tie);
    }
    if (is_primal(node) || banned[i]) flow.add_edge(source, in, inf);
    if (feeds_bw) flow.add_edge(out, sink, inf);
  }
  // No finite cut: the backward reads a written primal itself (eager would
  // refuse: a value saved for backward was modified in place). The caller
  // falls back to saving what the backward reads.
  if (flow.run(source, sink) >= inf) return {};
  // Of the minimum cuts, the one nearest the sink saves values as late as
  // possible, so the backward recomputes the fewest nodes.
  std::vector<char> late = flow.sink_side(sink);
  std::vector<char> cut(n, 0);
  for (size_t i = 0; i < n; ++i) cut[i] = cand[i] && !late[2 * i] && late[2 * i + 1];
  return cut;
}

}  // namespace

// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------
Partition default_partition(const Graph& joint, size_t num_fwd_outputs) {
  Joint j = read_joint(joint, num_fwd_outputs);
  // Everything the forward computes is available to the backward; a getitem
  // of a forward tuple counts as forward, so that its element, not the
  // tuple, is what gets saved.
  std::vector<char> fw = j.required_fw;
  for (size_t i = 0; i < j.size(); ++i) {
    const Node& node = *j.nodes[i];
    if (is_getitem(node) && node.args()[0].is_node() && fw[j.at(node.args()[0].to_node())])
      fw[i] = 1;
  }
  std::vector<char> never(j.size(), 0);
  for (size_t i = 0; i < j.size(); ++i) never[i] = j.forced_fw[i];
  return assemble(j, fw, never, num_fwd_outputs);
}

Partition min_cut_rematerialization_partition(const Graph& joint, size_t num_fwd_outputs,
                                              const PartitionOptions& options) {
  Joint j = read_joint(joint, num_fwd_outputs);
  std::vector<char> banned = banned_nodes(j, options);
  const std::vector<char> held = recompute_from_held_banned(j);
  for (size_t i = 0; i < j.size(); ++i) banned[i] = banned[i] || held[i];
  std::vector<char> cut = min_cut(j, banned, options);
  if (cut.empty()) return default_partition(joint, num_fwd_outputs);
  for (size_t i = 0; i < j.size(); ++i) banned[i] = banned[i] || j.forced_fw[i];
  return assemble(j, cut, banned, num_fwd_outputs);
}

void verify_partition(const Partition& p) {
  IGNIS_CHECK(p.forward && p.backward, "verify_partition: a graph is missing");
  graph::lint(*p.forward);
  graph::lint(*p.backward);
  std::unordered_map<std::string, const Node*> fw_nodes;
  for (const Node* n : p.forward->nodes()) {
    IGNIS_CHECK(!is_tangent(*n), "verify_partition: tangent '", n->name(), "' in the forward");
    fw_nodes.emplace(n->name(), n);
  }
  const Value& out = p.forward->output_node()->args().at(0);
  IGNIS_CHECK(out.kind() == Value::Kind::Tuple &&
                  out.items().size() == p.num_fwd_outputs + p.saved.size(),
              "verify_partition: the forward must return ", p.num_fwd_outputs, " outputs and ",
              p.saved.size(), " saved values");
  for (size_t k = 0; k < p.saved.size(); ++k) {
    const Value& v = out.items()[p.num_fwd_outputs + k];
    IGNIS_CHECK(v.is_node() && v.to_node()->name() == p.saved[k], "verify_partition: forward "
                "output ", p.num_fwd_outputs + k, " is not saved value '", p.saved[k], "'");
  }
  std::vector<Node*> phs = p.backward->placeholders();
  for (size_t k = 0; k < phs.size(); ++k) {
    bool ok = k < p.saved.size() ? phs[k]->name() == p.saved[k] : is_tangent(*phs[k]);
    IGNIS_CHECK(ok, "verify_partition: backward input '", phs[k]->name(),
                "' is neither the saved value nor a tangent in its place");
  }
  IGNIS_CHECK(phs.size() >= p.saved.size(), "verify_partition: the backward takes ", phs.size(),
              " inputs but ", p.saved.size(), " values are saved");
  for (const Node* n : p.backward->nodes()) {
    if (!is_call(*n) || !fw_nodes.count(n->name())) continue;
    IGNIS_CHECK(!is_random(*n) && !is_effectful(*n), "verify_partition: the backward recomputes "
                "random or effectful forward node '", n->name(), "'");
  }
}

}  // namespace ignis::aot

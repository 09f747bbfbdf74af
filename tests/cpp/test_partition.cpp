// The AOT partitioners on hand-built joint graphs: structure of the forward
// and backward, what is saved and recomputed, and that running forward then
// backward computes what the joint graph computes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "ignis/aot/partition.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/graph.h"
#include "ignis/graph/interpreter.h"
#include "ignis/graph/printer.h"
#include "ignis/kernels/cpu/random.h"
#include "ignis/ops/op_def.h"

using namespace ignis;
using namespace ignis::graph;
using namespace ignis::aot;

namespace {

const OpHandle& op(const char* name) {
  register_all_ops();
  return Dispatcher::get().find_or_throw(name);
}

Tensor randn(std::vector<int64_t> sizes) {
  register_all_ops();
  return OpRef("randn").tensor(sizes);
}

// operator.getitem as the Python layer describes it.
ForeignPtr getitem_fn() {
  static ForeignPtr f = [] {
    auto g = std::make_shared<Foreign>();
    g->module = "_operator";
    g->name = "getitem";
    g->repr = "<built-in function getitem>";
    g->identity = "_operator.getitem";
    return g;
  }();
  return f;
}

// Stands in for the Python layer while a test runs: evaluates getitem.
class GetitemHook {
 public:
  GetitemHook() : saved_(foreign_hook()) {
    foreign_hook() = [](const Node& n, const std::vector<Value>& args, const Kwargs&,
                        const Value&) -> Value {
      IGNIS_CHECK(n.target().kind == Target::Kind::Callable &&
                      n.target().callable->name == "getitem",
                  "test hook: unexpected foreign node ", n.name());
      return args.at(0).items().at(static_cast<size_t>(args.at(1).to_int()));
    };
  }
  ~GetitemHook() { foreign_hook() = saved_; }

 private:
  ForeignHook saved_;
};

bool same_values(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  if (a.is_sequence()) {
    if (a.items().size() != b.items().size()) return false;
    for (size_t i = 0; i < a.items().size(); ++i)
      if (!same_values(a.items()[i], b.items()[i])) return false;
    return true;
  }
  if (!a.is_tensor()) return a == b;
  Tensor x = OpRef("contiguous").tensor(a.to_tensor());
  Tensor y = OpRef("contiguous").tensor(b.to_tensor());
  return x.sizes() == y.sizes() && x.dtype() == y.dtype() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * x.itemsize()) == 0;
}

// Runs the joint graph, then forward and backward, from the same RNG state;
// recomputation repeats the same kernels on the same values, so results
// must match bit for bit.
void expect_runs_like_joint(const Graph& joint, const Partition& p,
                            const std::vector<Value>& inputs) {
  GetitemHook hook;
  size_t num_primals = 0;
  for (Node* n : joint.placeholders()) num_primals += n->name().rfind("tangents", 0) != 0;
  default_generator().manual_seed(1234);
  Value ref = interpret(joint, inputs);
  default_generator().manual_seed(1234);
  std::vector<Value> primals(inputs.begin(), inputs.begin() + num_primals);
  Value fw = interpret(*p.forward, primals);
  const size_t k = p.num_fwd_outputs;
  ASSERT_EQ(fw.items().size(), k + p.saved.size());
  std::vector<Value> bw_in(fw.items().begin() + k, fw.items().end());
  bw_in.insert(bw_in.end(), inputs.begin() + num_primals, inputs.end());
  Value bw = interpret(*p.backward, bw_in);
  for (size_t i = 0; i < k; ++i)
    EXPECT_TRUE(same_values(ref.items()[i], fw.items()[i])) << "forward output " << i;
  ASSERT_EQ(ref.items().size(), k + bw.items().size());
  for (size_t i = 0; i < bw.items().size(); ++i)
    EXPECT_TRUE(same_values(ref.items()[k + i], bw.items()[i])) << "grad " << i;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::vector<std::string> call_names(const Graph& g) {
  std::vector<std::string> v;
  for (Node* n : g.nodes())
    if (n->op() == OpKind::CallFunction) v.push_back(n->name());
  return v;
}

// Both partitions of one joint graph, verified, plus its example inputs.
struct Both {
  Partition def, cut;
};
Both partition_both(Graph& joint, size_t k, const std::vector<Value>& inputs) {
  Both b{default_partition(joint, k), min_cut_rematerialization_partition(joint, k)};
  verify_partition(b.def);
  verify_partition(b.cut);
  expect_runs_like_joint(joint, b.def, inputs);
  expect_runs_like_joint(joint, b.cut, inputs);
  EXPECT_LE(b.cut.saved_bytes, b.def.saved_bytes);
  return b;
}

// Builds a joint graph the way AOT tracing does: primals first, each forward
// op evaluated eagerly (for shapes) and recorded with its derivative, then
// tangents and the backward in reverse, then (outputs..., grads of primals).
class JointBuilder {
 public:
  Graph g;

  Node* primal(std::vector<int64_t> sizes) {
    Node* p = g.placeholder("primals_" + std::to_string(primals_.size() + 1));
    primals_.push_back(p);
    val_[p] = randn(sizes);
    needs_grad_[p] = true;
    return p;
  }

  Node* mm(Node* a, Node* b) {
    return record(call("mm", {a, b}), [=, this](Node* g) {
      acc(a, call("mm", {g, call("t", {b})}));
      acc(b, call("mm", {call("t", {a}), g}));
    });
  }
  Node* t(Node* a) {
    return record(call("t", {a}), [=, this](Node* g) { acc(a, call("t", {g})); });
  }
  // b has a's shape, or is a bias added to every row.
  Node* add(Node* a, Node* b) {
    bool bias = sizes(b) != sizes(a);
    return record(call("add", {a, b}), [=, this](Node* g) {
      acc(a, g);
      acc(b, bias ? call("sum.dim_IntList", {g, Value::list({int64_t(0)})}) : g);
    });
  }
  Node* mul(Node* a, Node* b) {
    return record(call("mul", {a, b}), [=, this](Node* g) {
      acc(a, call("mul", {g, b}));
      acc(b, call("mul", {g, a}));
    });
  }
  Node* scale(Node* a, double s) {
    return record(call("mul", {a, s}), [=, this](Node* g) { acc(a, call("mul", {g, s})); });
  }
  // A pointwise op by name, with its derivative.
  Node* unary(const std::string& name, Node* a) {
    Node* y = call(name.c_str(), {a});
    return record(y, [=, this](Node* g) {
      Node* d = nullptr;
      if (name == "sin") d = call("mul", {g, call("cos", {a})});
      else if (name == "cos") d = call("mul", {g, call("neg", {call("sin", {a})})});
      else if (name == "exp") d = call("mul", {g, y});
      else if (name == "tanh") d = call("mul", {g, call("rsub", {call("mul", {y, y}), 1.0})});
      else if (name == "sigmoid") d = call("mul", {g, call("mul", {y, call("rsub", {y, 1.0})})});
      else if (name == "neg") d = call("neg", {g});
      else if (name == "relu")
        d = call("where.self", {call("le", {y, 0.0}), call("zeros_like", {g}), g});
      else if (name == "gelu") d = call("gelu_backward", {g, a});
      IGNIS_CHECK(d, "JointBuilder: no derivative for ", name);
      acc(a, d);
    });
  }
  Node* softmax(Node* a) {
    Node* y = call("softmax.int", {a, int64_t(-1)});
    return record(y, [=, this](Node* g) {
      Node* gy = call("mul", {g, y});
      Node* s = call("sum.dim_IntList", {gy, Value::list({int64_t(-1)}), true});
      acc(a, call("mul", {y, call("sub", {g, s})}));
    });
  }
  // native_layer_norm over the last dim, read through getitems.
  Node* layer_norm(Node* x, Node* w, Node* b) {
    Value shape = Value::list({sizes(x).back()});
    Node* ln = call("native_layer_norm", {x, shape, w, b, 1e-5});
    Node* out = getitem(ln, 0);
    Node* mean = getitem(ln, 1);
    Node* rstd = getitem(ln, 2);
    return record(out, [=, this](Node* g) {
      Node* r = call("native_layer_norm_backward", {g, x, shape, mean, rstd, w, b});
      acc(x, getitem(r, 0));
      acc(w, getitem(r, 1));
      acc(b, getitem(r, 2));
    });
  }
  // Dropout as its decomposition: a mask from rand_like, then a scale.
  Node* dropout(Node* x, double p) {
    Node* mask = call("gt", {call("rand_like", {x}), p});
    return scale(mul(x, mask), 1.0 / (1.0 - p));
  }

  // Adds tangents and the backward; returns the example inputs (primals,
  // then tangents) after recording tensor meta on the joint graph.
  std::vector<Value> finish(const std::vector<Node*>& outs) {
    Node* first_op = nullptr;
    for (Node* n : g.nodes())
      if (n->op() != OpKind::Placeholder && !first_op) first_op = n;
    std::vector<Value> inputs;
    for (Node* p : primals_) inputs.push_back(val_[p]);
    for (size_t i = 0; i < outs.size(); ++i) {
      g.set_insert_point(first_op);
      Node* t = g.placeholder("tangents_" + std::to_string(i + 1));
      g.set_insert_point(nullptr);
      val_[t] = randn(sizes(outs[i]));
      inputs.push_back(val_[t]);
      acc(outs[i], t);
    }
    for (auto it = tape_.rbegin(); it != tape_.rend(); ++it) {
      auto gi = grad_.find(it->first);
      if (gi != grad_.end()) it->second(gi->second);
    }
    Value::Items result(outs.begin(), outs.end());
    for (Node* p : primals_) {
      auto gi = grad_.find(p);
      result.push_back(gi == grad_.end() ? Value() : Value(gi->second));
    }
    g.output(Value::tuple(std::move(result)));
    GetitemHook hook;
    record_tensor_meta(g, inputs);
    return inputs;
  }

 private:
  Node* call(const char* name, std::vector<Value> args) {
    Node* n = g.call_function(op(name), args);
    std::vector<Value> vals;
    for (const Value& a : args) vals.push_back(map_nodes(a, [&](Node* x) { return val_[x]; }));
    val_[n] = call_op(op(name), vals, {});
    for (const Value& a : args)
      for_each_node(a, [&](Node* x) { needs_grad_[n] |= needs_grad_[x]; });
    return n;
  }
  Node* getitem(Node* tuple, int64_t i) {
    Node* n = g.call_function(getitem_fn(), {tuple, i});
    val_[n] = val_[tuple].items().at(static_cast<size_t>(i));
    needs_grad_[n] = needs_grad_[tuple];
    return n;
  }
  std::vector<int64_t> sizes(Node* n) {
    auto s = val_[n].to_tensor().sizes();
    return std::vector<int64_t>(s.begin(), s.end());
  }
  Node* record(Node* out, std::function<void(Node*)> backward) {
    tape_.emplace_back(out, std::move(backward));
    return out;
  }
  // Accumulates a gradient of x (nothing when x needs none).
  void acc(Node* x, Node* g) {
    if (!needs_grad_[x]) return;
    auto it = grad_.find(x);
    if (it == grad_.end()) grad_[x] = g;
    else it->second = call("add", {it->second, g});
  }

  std::vector<Node*> primals_;
  std::unordered_map<Node*, Value> val_;
  std::unordered_map<Node*, bool> needs_grad_;
  std::unordered_map<Node*, Node*> grad_;
  std::vector<std::pair<Node*, std::function<void(Node*)>>> tape_;
};

}  // namespace

// (a) y = relu(x * w), its backward written out as AOT would trace it.
TEST(Partition, ReluOfProduct) {
  Graph g;
  Node* x = g.placeholder("primals_1");
  Node* w = g.placeholder("primals_2");
  Node* tg = g.placeholder("tangents_1");
  Node* mul = g.call_function(op("mul"), {x, w});
  Node* relu = g.call_function(op("relu"), {mul});
  Node* le = g.call_function(op("le"), {relu, 0.0});
  Node* zeros = g.call_function(op("zeros_like"), {tg});
  Node* where = g.call_function(op("where.self"), {le, zeros, tg});
  Node* gx = g.call_function(op("mul"), {where, w});
  Node* gw = g.call_function(op("mul"), {where, x});
  g.output(Value::tuple({relu, gx, gw}));
  std::vector<Value> inputs{randn({4, 5}), randn({4, 5}), randn({4, 5})};
  record_tensor_meta(g, inputs);

  Both b = partition_both(g, 1, inputs);
  EXPECT_EQ(b.def.saved, std::vector<std::string>({"primals_1", "primals_2", "relu"}));
  EXPECT_EQ(b.def.saved_bytes, 240);
  EXPECT_TRUE(b.def.recomputed.empty());
  EXPECT_EQ(graph_str(*b.def.forward),
            "graph():\n"
            "    %primals_1 : [num_users=2] = placeholder[target=primals_1]\n"
            "    %primals_2 : [num_users=2] = placeholder[target=primals_2]\n"
            "    %mul : [num_users=1] = call_function[target=ignis.ops.mul](args = (%primals_1, "
            "%primals_2), kwargs = {})\n"
            "    %relu : [num_users=1] = call_function[target=ignis.ops.relu](args = (%mul,), "
            "kwargs = {})\n"
            "    return (relu, primals_1, primals_2, relu)");
  EXPECT_EQ(graph_str(*b.def.backward),
            "graph():\n"
            "    %primals_1 : [num_users=1] = placeholder[target=primals_1]\n"
            "    %primals_2 : [num_users=1] = placeholder[target=primals_2]\n"
            "    %relu : [num_users=1] = placeholder[target=relu]\n"
            "    %tangents_1 : [num_users=2] = placeholder[target=tangents_1]\n"
            "    %le : [num_users=1] = call_function[target=ignis.ops.le](args = (%relu, 0.0), "
            "kwargs = {})\n"
            "    %zeros_like : [num_users=1] = call_function[target=ignis.ops.zeros_like](args = "
            "(%tangents_1,), kwargs = {})\n"
            "    %where : [num_users=2] = call_function[target=ignis.ops.where.self](args = (%le, "
            "%zeros_like, %tangents_1), kwargs = {})\n"
            "    %mul_1 : [num_users=1] = call_function[target=ignis.ops.mul](args = (%where, "
            "%primals_2), kwargs = {})\n"
            "    %mul_2 : [num_users=1] = call_function[target=ignis.ops.mul](args = (%where, "
            "%primals_1), kwargs = {})\n"
            "    return (mul_1, mul_2)");
  // The primals are saved anyway (the grads multiply by them), so the
  // min-cut recomputes mul and relu from them instead of saving relu.
  EXPECT_EQ(b.cut.saved, std::vector<std::string>({"primals_1", "primals_2"}));
  EXPECT_EQ(b.cut.saved_bytes, 160);
  EXPECT_EQ(b.cut.recomputed, std::vector<std::string>({"mul", "relu"}));
  EXPECT_EQ(call_names(*b.cut.backward),
            std::vector<std::string>({"mul", "relu", "le", "zeros_like", "where", "mul_1",
                                      "mul_2"}));
}

// (b) A two-layer MLP: mm, t, add (bias), relu.
TEST(Partition, Mlp) {
  JointBuilder j;
  Node* x = j.primal({8, 16});
  Node* w1 = j.primal({32, 16});
  Node* b1 = j.primal({32});
  Node* w2 = j.primal({4, 32});
  Node* b2 = j.primal({4});
  Node* h = j.unary("relu", j.add(j.mm(x, j.t(w1)), b1));
  Node* y = j.add(j.mm(h, j.t(w2)), b2);
  std::vector<Value> inputs = j.finish({y});

  Both b = partition_both(j.g, 1, inputs);
  EXPECT_EQ(b.def.saved, std::vector<std::string>({"primals_1", "t", "relu", "t_1"}));
  // Same bytes. The backward reads the weights through transposes, not the
  // weights themselves, so those views are what is saved (as eager's mm
  // saves w.t()): a weight the program writes into later must make the
  // backward raise only where eager's does (Note [Saving what eager saves]).
  EXPECT_EQ(b.cut.saved, std::vector<std::string>({"primals_1", "relu", "t_2", "t_5"}));
  EXPECT_EQ(b.cut.saved_bytes, b.def.saved_bytes);
  for (const std::string& r : b.cut.recomputed) EXPECT_EQ(r.rfind("mm", 0), std::string::npos);
}

// (c) Ten pointwise ops after a matmul: the min-cut saves the matmul's
// output and recomputes the chain, never the matmul.
TEST(Partition, PointwiseChainAfterMatmul) {
  JointBuilder j;
  Node* x = j.primal({32, 32});
  Node* w = j.primal({32, 32});
  Node* h = j.mm(x, w);
  for (const char* name : {"sin", "cos", "exp", "tanh", "sigmoid", "neg", "relu", "sin", "exp"})
    h = j.unary(name, h);
  h = j.scale(h, 2.0);  // the tenth
  std::vector<Value> inputs = j.finish({h});

  Both b = partition_both(j.g, 1, inputs);
  EXPECT_EQ(b.cut.saved, std::vector<std::string>({"primals_1", "primals_2", "mm"}));
  EXPECT_EQ(b.cut.saved_bytes, 3 * 4096);
  EXPECT_LT(b.cut.saved_bytes, b.def.saved_bytes);
  EXPECT_FALSE(has(b.cut.recomputed, "mm"));
  EXPECT_EQ(b.cut.recomputed.size(), 9u);  // every pointwise op the backward reads
  EXPECT_TRUE(b.def.recomputed.empty());
  // A short cap on recompute chains forces saves partway along the chain.
  PartitionOptions o;
  o.max_recompute_chain = 3;
  Partition capped = min_cut_rematerialization_partition(j.g, 1, o);
  verify_partition(capped);
  expect_runs_like_joint(j.g, capped, inputs);
  EXPECT_GT(capped.saved.size(), 3u);
  EXPECT_LE(capped.saved_bytes, b.def.saved_bytes);
}

// (d) Dropout: the random mask is saved; rand_like never runs in the backward.
TEST(Partition, RandomMaskIsSavedNotRecomputed) {
  JointBuilder j;
  Node* x = j.primal({16, 16});
  Node* y = j.unary("sin", j.dropout(x, 0.5));
  std::vector<Value> inputs = j.finish({y});

  Both b = partition_both(j.g, 1, inputs);
  for (const Partition* p : {&b.def, &b.cut}) {
    EXPECT_TRUE(has(p->saved, "gt"));
    EXPECT_TRUE(has(call_names(*p->forward), "rand_like"));
    EXPECT_FALSE(has(call_names(*p->backward), "rand_like"));
  }
  // No backward formula reads x (mul's backward reads the mask; sin's reads
  // its input, the dropout's result), so x is not saved to recompute from:
  // the mask and cos are, the same bytes (Note [Saving what eager saves]).
  EXPECT_EQ(b.cut.saved, std::vector<std::string>({"gt", "cos"}));
  EXPECT_TRUE(b.cut.recomputed.empty());
}

// (e) A multi-output op read through getitems: the elements are saved.
TEST(Partition, MultiOutputThroughGetitem) {
  JointBuilder j;
  Node* x = j.primal({8, 16});
  Node* w = j.primal({16});
  Node* bias = j.primal({16});
  Node* y = j.unary("tanh", j.layer_norm(x, w, bias));
  std::vector<Value> inputs = j.finish({y});

  Both b = partition_both(j.g, 1, inputs);
  // getitem: the normalised output; getitem_1/_2: mean and rstd.
  for (const Partition* p : {&b.def, &b.cut}) {
    EXPECT_TRUE(has(p->saved, "getitem_1"));
    EXPECT_TRUE(has(p->saved, "getitem_2"));
    EXPECT_FALSE(has(p->saved, "native_layer_norm"));
    EXPECT_FALSE(has(p->recomputed, "native_layer_norm"));
  }
  EXPECT_EQ(b.def.saved,
            std::vector<std::string>({"primals_1", "primals_2", "primals_3", "getitem_1",
                                      "getitem_2", "tanh"}));
  EXPECT_EQ(b.cut.saved, b.def.saved);
}

// A reduction that shrinks its input a lot is saved rather than recomputed,
// even when its input is saved anyway.
TEST(Partition, ShrinkingReductionIsSaved) {
  Graph g;
  Node* x = g.placeholder("primals_1");
  Node* tg = g.placeholder("tangents_1");
  Node* sin = g.call_function(op("sin"), {x});
  Node* sum = g.call_function(op("sum.dim_IntList"), {sin, Value::list({int64_t(1)})});
  Node* exp = g.call_function(op("exp"), {sum});
  Node* mul = g.call_function(op("mul"), {tg, exp});
  Node* unsq = g.call_function(op("unsqueeze"), {mul, int64_t(1)});
  Node* expand = g.call_function(op("expand"), {unsq, Value::list({int64_t(16), int64_t(64)})});
  Node* cos = g.call_function(op("cos"), {x});
  g.output(Value::tuple({exp, g.call_function(op("mul"), {expand, cos})}));
  std::vector<Value> inputs{randn({16, 64}), randn({16})};
  record_tensor_meta(g, inputs);

  Both b = partition_both(g, 1, inputs);
  EXPECT_EQ(b.cut.saved, std::vector<std::string>({"primals_1", "exp"}));
  EXPECT_TRUE(b.cut.recomputed.empty());
  // Allowed to recompute it, the cut saves only the input it needs anyway.
  PartitionOptions o;
  o.reduction_ratio = 1e9;
  Partition p = min_cut_rematerialization_partition(g, 1, o);
  verify_partition(p);
  expect_runs_like_joint(g, p, inputs);
  EXPECT_EQ(p.saved, std::vector<std::string>({"primals_1"}));
  EXPECT_EQ(p.recomputed, std::vector<std::string>({"sin", "sum_1", "exp"}));
}

// A write-back into an input (copy_) stays in the forward, exactly once.
TEST(Partition, KeepsWriteBacksInTheForward) {
  Graph g;
  Node* x = g.placeholder("primals_1");
  Node* buf = g.placeholder("primals_2");
  Node* tg = g.placeholder("tangents_1");
  Node* sin = g.call_function(op("sin"), {x});
  Node* bump = g.call_function(op("add"), {buf, 1.0});
  g.call_function(op("copy_"), {buf, bump});  // its result is unused
  Node* cos = g.call_function(op("cos"), {x});
  Node* gx = g.call_function(op("mul"), {tg, cos});
  g.output(Value::tuple({sin, gx, Value()}));
  std::vector<Value> inputs{randn({3}), randn({3}), randn({3})};
  record_tensor_meta(g, inputs);
  Both b = partition_both(g, 1, inputs);
  for (const Partition* p : {&b.def, &b.cut}) {
    EXPECT_TRUE(has(call_names(*p->forward), "copy_"));
    EXPECT_FALSE(has(call_names(*p->backward), "copy_"));
  }
  EXPECT_EQ(b.cut.saved, std::vector<std::string>({"primals_1"}));
}

TEST(Partition, VerifyNamesTheViolation) {
  JointBuilder j;
  Node* x = j.primal({4});
  std::vector<Value> inputs = j.finish({j.unary("exp", x)});
  Partition p = default_partition(j.g, 1);
  p.forward->set_insert_point(p.forward->output_node());
  p.forward->placeholder("tangents_9");
  p.forward->set_insert_point(nullptr);
  try {
    verify_partition(p);
    ADD_FAILURE() << "verify_partition accepted a tangent in the forward";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tangent 'tangents_9' in the forward"),
              std::string::npos);
  }
  Graph bad;
  Node* t = bad.placeholder("tangents_1");
  bad.output(Value::tuple({bad.call_function(op("neg"), {t})}));
  try {
    default_partition(bad, 1);
    ADD_FAILURE() << "a forward output computed from a tangent was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("forward output 'neg' depends on a tangent"),
              std::string::npos);
  }
}

// A 12-layer transformer (pre-norm attention + GELU MLP): thousands of
// nodes, partitioned in milliseconds.
TEST(Partition, TransformerInMilliseconds) {
  const int64_t S = 8, D = 16, F = 32;
  JointBuilder j;
  Node* x = j.primal({S, D});
  struct Layer {
    Node *ln1w, *ln1b, *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo, *ln2w, *ln2b, *w1, *b1, *w2, *b2;
  };
  std::vector<Layer> layers(12);
  for (Layer& l : layers) {
    l = {j.primal({D}),    j.primal({D}), j.primal({D, D}), j.primal({D}), j.primal({D, D}),
         j.primal({D}),    j.primal({D, D}), j.primal({D}), j.primal({D, D}), j.primal({D}),
         j.primal({D}),    j.primal({D}), j.primal({F, D}), j.primal({F}), j.primal({D, F}),
         j.primal({D})};
  }
  auto linear = [&](Node* in, Node* w, Node* b) { return j.add(j.mm(in, j.t(w)), b); };
  Node* h = x;
  for (const Layer& l : layers) {
    Node* n1 = j.layer_norm(h, l.ln1w, l.ln1b);
    Node* q = linear(n1, l.wq, l.bq);
    Node* k = linear(n1, l.wk, l.bk);
    Node* v = linear(n1, l.wv, l.bv);
    Node* p = j.softmax(j.scale(j.mm(q, j.t(k)), 0.25));
    h = j.add(h, linear(j.mm(p, v), l.wo, l.bo));
    Node* n2 = j.layer_norm(h, l.ln2w, l.ln2b);
    h = j.add(h, linear(j.unary("gelu", linear(n2, l.w1, l.b1)), l.w2, l.b2));
  }
  std::vector<Value> inputs = j.finish({h});
  EXPECT_GT(j.g.size(), 1000u);

  auto start = std::chrono::steady_clock::now();
  Partition cut = min_cut_rematerialization_partition(j.g, 1);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count();
  Partition def = default_partition(j.g, 1);
  verify_partition(cut);
  verify_partition(def);
  expect_runs_like_joint(j.g, cut, inputs);
  expect_runs_like_joint(j.g, def, inputs);
  EXPECT_LE(cut.saved_bytes, def.saved_bytes);
  for (const std::string& r : cut.recomputed) {
    EXPECT_EQ(r.rfind("mm", 0), std::string::npos) << r;
    EXPECT_EQ(r.rfind("softmax", 0), std::string::npos) << r;
    EXPECT_EQ(r.rfind("native_layer_norm", 0), std::string::npos) << r;
  }
  EXPECT_LT(ms, 100.0);
  std::printf("[ transformer ] %zu joint nodes; min-cut %.2f ms; saved %zu tensors / %lld bytes "
              "(default %zu / %lld); %zu recomputed\n",
              j.g.size(), ms, cut.saved.size(), static_cast<long long>(cut.saved_bytes),
              def.saved.size(), static_cast<long long>(def.saved_bytes), cut.recomputed.size());
}

// The graph IR from C++: building with dispatcher ops, naming, printing,
// interpreting, passes and hashing.
#include <gtest/gtest.h>

#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/graph.h"
#include "ignis/graph/interpreter.h"
#include "ignis/graph/passes/cse.h"
#include "ignis/graph/passes/dce.h"
#include "ignis/graph/passes/hash.h"
#include "ignis/graph/passes/lint.h"
#include "ignis/graph/printer.h"
#include "ignis/ops/op_def.h"

using namespace ignis;
using namespace ignis::graph;

namespace {

const OpHandle& op(const char* name) {
  register_all_ops();
  return Dispatcher::get().find_or_throw(name);
}

Tensor full(std::vector<int64_t> sizes, double v) {
  register_all_ops();
  return OpRef("full").tensor(sizes, v, ScalarType::Float32);
}

float at(const Tensor& t, int64_t i) { return static_cast<const float*>(t.data_ptr())[i]; }

bool throws_with(const std::function<void()>& fn, const std::string& text) {
  try {
    fn();
  } catch (const Error& e) {
    return std::string(e.what()).find(text) != std::string::npos;
  }
  return false;
}

// x, y -> relu(x + y) * 2, returned as a 1-tuple; plus an unused input.
struct Seed {
  Graph g;
  Node *x, *y, *unused, *add, *relu, *mul, *out;
  Seed() {
    x = g.placeholder("x");
    y = g.placeholder("y");
    unused = g.placeholder("unused");
    add = g.call_function(op("add"), {x, y});
    relu = g.call_function(op("relu"), {add});
    mul = g.call_method("mul", {relu, 2.0});
    out = g.output(Value::tuple({mul}));
  }
};

}  // namespace

TEST(Graph, BuildsWithUsersAndNames) {
  Seed s;
  EXPECT_EQ(s.g.size(), 7u);
  EXPECT_EQ(s.add->name(), "add");
  EXPECT_EQ(s.relu->name(), "relu");
  EXPECT_EQ(s.x->users(), std::vector<Node*>({s.add}));
  EXPECT_TRUE(s.unused->users().empty());
  EXPECT_EQ(s.mul->users(), std::vector<Node*>({s.out}));
  EXPECT_EQ(s.g.output_node(), s.out);
  // torch.fx naming: suffixes count up; builtins and keywords are avoided.
  s.g.set_insert_point(s.out);
  Node* a2 = s.g.call_function(op("add"), {s.x, s.x});
  Node* sum = s.g.call_method("sum", {a2});
  Node* kw = s.g.create_node(OpKind::CallMethod, Target("clone"), {sum}, {}, "lambda");
  Node* odd = s.g.create_node(OpKind::CallMethod, Target("clone"), {sum}, {}, "9 lives!");
  EXPECT_EQ(a2->name(), "add_1");
  EXPECT_EQ(sum->name(), "sum_1");
  EXPECT_EQ(kw->name(), "lambda_1");
  EXPECT_EQ(odd->name(), "_9_lives_");
  EXPECT_EQ(s.g.node_list().back(), s.out);
  lint(s.g);
}

TEST(Graph, PrintsLikeTorchFx) {
  Seed s;
  EXPECT_EQ(tabular(s.g),
            "opcode         name    target          args         kwargs\n"
            "-------------  ------  --------------  -----------  --------\n"
            "placeholder    x       x               ()           {}\n"
            "placeholder    y       y               ()           {}\n"
            "placeholder    unused  unused          ()           {}\n"
            "call_function  add     ignis.ops.add   (x, y)       {}\n"
            "call_function  relu    ignis.ops.relu  (add,)       {}\n"
            "call_method    mul     mul             (relu, 2.0)  {}\n"
            "output         output  output          ((mul,),)    {}");
  PythonCode pc = python_code(s.g);
  EXPECT_EQ(pc.src,
            "\n\n\ndef forward(self, x, y, unused):\n"
            "    add = ignis.ops.add.default(x, y);  x = y = None\n"
            "    relu = ignis.ops.relu.default(add);  add = None\n"
            "    mul = relu.mul(2.0);  relu = None\n"
            "    return (mul,)\n    ");
  EXPECT_TRUE(pc.globals.empty());  // ops are named through the ignis module
}

TEST(Graph, PythonReprs) {
  EXPECT_EQ(py_float_repr(2.0), "2.0");
  EXPECT_EQ(py_float_repr(0.1), "0.1");
  EXPECT_EQ(py_float_repr(1e-5), "1e-05");
  EXPECT_EQ(py_float_repr(1e16), "1e+16");
  EXPECT_EQ(py_float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(py_float_repr(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(py_float_repr(123456.789), "123456.789");
  EXPECT_EQ(py_str_repr("a'b"), "\"a'b\"");
  EXPECT_EQ(py_str_repr("a\n"), "'a\\n'");
  Value v = Value::list({Value::slice(Value(), 2, Value()), Value::ellipsis(),
                         Value::tuple({Value(true)}), ScalarType::Int64, Device(DeviceType::CPU),
                         Value::dict({"k", 1.5})});
  EXPECT_EQ(value_repr(v),
            "[slice(None, 2, None), Ellipsis, (True,), ignis.int64, device(type='cpu'), "
            "{'k': 1.5}]");
}

TEST(Graph, InterpretsThroughTheDispatcher) {
  Seed s;
  Value r = interpret(s.g, {full({3}, 1.5), full({3}, -3.0), Value()});
  ASSERT_EQ(r.kind(), Value::Kind::Tuple);
  const Tensor& t = r.items()[0].to_tensor();
  EXPECT_EQ(at(t, 0), 0.0f);  // relu(1.5 - 3) * 2
  Value r2 = interpret(s.g, {full({2}, 1.0), full({2}, 2.0), Value()});
  EXPECT_EQ(at(r2.items()[0].to_tensor(), 1), 6.0f);
  // Varargs sizes and kwargs through call_method.
  Graph g;
  Node* x = g.placeholder("x");
  Node* v = g.call_method("view", {x, 2, 3});
  Node* a = g.call_method("add", {v, v}, {{"alpha", 2}});
  g.output(a);
  Value out = interpret(g, {full({6}, 1.0)});
  EXPECT_EQ(out.to_tensor().sizes(), DimVector({2, 3}));
  EXPECT_EQ(at(out.to_tensor(), 5), 3.0f);
  EXPECT_TRUE(throws_with([&] { interpret(g, {}); }, "missing input for placeholder 'x'"));
  // Python-only parts need the binding layer's hook.
  Graph gm;
  Node* p = gm.placeholder("p");
  gm.output(gm.call_module("layer", {p}));
  ForeignHook saved = foreign_hook();
  foreign_hook() = nullptr;
  EXPECT_TRUE(throws_with([&] { interpret(gm, {full({1}, 0)}); }, "needs the Python layer"));
  foreign_hook() = saved;
}

TEST(Graph, DeadCodeAndCse) {
  Graph g;
  Node* x = g.placeholder("x");
  g.placeholder("unused");
  Node* a = g.call_function(op("exp"), {x});
  Node* b = g.call_function(op("exp"), {x});
  Node* c = g.call_function(op("add"), {a, b});
  Node* d = g.call_function(op("sub"), {b, a});
  Node* dead = g.call_function(op("neg"), {c});
  g.call_function(op("sin"), {dead});
  g.call_function(op("add_"), {x, 1.0});  // writes x: kept
  g.output(Value::list({c, d}));
  EXPECT_EQ(eliminate_common_subexpressions(g), 1u);  // b -> a
  EXPECT_EQ(d->args()[0].to_node(), a);
  EXPECT_TRUE(eliminate_dead_code(g));
  std::vector<std::string> names;
  for (Node* n : g.nodes()) names.push_back(n->name());
  EXPECT_EQ(names, std::vector<std::string>({"x", "unused", "exp", "add", "sub", "add_",
                                             "output"}));
  lint(g);
}

// merge_repeated merges only the repeats it is asked to, and compares the
// others' users up to the repeats: the second amax reads the second exp, a
// repeat kept, and still merges with the first amax.
TEST(Graph, MergeRepeatedComparesUpToKeptRepeats) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* e1 = g.call_function(op("exp"), {x});
  Node* m1 = g.call_function(op("amax"), {e1, Value::list({Value(int64_t(1))}), true});
  Node* e2 = g.call_function(op("exp"), {x});
  Node* m2 = g.call_function(op("amax"), {e2, Value::list({Value(int64_t(1))}), true});
  Node* m3 = g.call_function(op("amax"), {e2, Value::list({Value(int64_t(0))}), true});
  Node* s = g.call_function(op("sub"), {e2, m2});
  g.output(Value::list({m1, s, m3}));
  const auto reductions = [](const Node& n) { return n.target().base_name() == "amax"; };
  EXPECT_EQ(merge_repeated(g, reductions), 1u);  // m2 -> m1; e2 kept; m3 reduces another dim
  EXPECT_EQ(s->args()[0].to_node(), e2);
  EXPECT_EQ(s->args()[1].to_node(), m1);
  EXPECT_EQ(m3->args()[0].to_node(), e2);
  lint(g);
  EXPECT_EQ(eliminate_common_subexpressions(g), 1u);  // now e2 -> e1 too
  EXPECT_EQ(s->args()[0].to_node(), e1);
  lint(g);
}

TEST(Graph, LintNamesTheNode) {
  Seed s;
  s.x->prepend(s.add);
  EXPECT_TRUE(throws_with([&] { lint(s.g); }, "Argument 'x' of Node 'add' was used before"));
  Graph g;
  Node* x = g.placeholder("x");
  Node* e = g.call_function(op("exp"), {x});
  EXPECT_TRUE(throws_with([&] { g.erase_node(x); }, "still had 1 users"));
  EXPECT_TRUE(throws_with([&] { lint(g); }, "no output node"));
  g.output(e);
  g.call_function(op("neg"), {e});
  EXPECT_TRUE(throws_with([&] { lint(g); }, "Node 'neg' comes after the output node"));
}

TEST(Graph, StructuralHash) {
  auto build = [](const char* xname, double c, const char* opname, int64_t dim0) {
    auto g = std::make_unique<Graph>();
    Node* x = g->placeholder(xname);
    x->meta().tensors.push_back(TensorMeta::of(full({dim0, 2}, 0)));
    Node* a = g->call_function(op(opname), {x, c});
    a->meta().loc = SourceLoc{xname, 7};
    g->output(Value::tuple({a, Value::dict({"k", Value::list({a, Value()})})}));
    return g;
  };
  std::string h = structural_hash(*build("x", 2.0, "mul", 3));
  EXPECT_EQ(h.size(), 32u);
  EXPECT_EQ(structural_hash(*build("renamed", 2.0, "mul", 3)), h);
  EXPECT_NE(structural_hash(*build("x", 3.0, "mul", 3)), h);
  EXPECT_NE(structural_hash(*build("x", 2.0, "add", 3)), h);
  EXPECT_NE(structural_hash(*build("x", 2.0, "mul", 4)), h);
  // Without the numbers: sizes and number arguments do not count, the ops do.
  std::string f = shape_free_hash(*build("x", 2.0, "mul", 3));
  EXPECT_NE(f, h);
  EXPECT_EQ(shape_free_hash(*build("x", 2.0, "mul", 4)), f);
  EXPECT_EQ(shape_free_hash(*build("x", 3.0, "mul", 3)), f);
  EXPECT_NE(shape_free_hash(*build("x", 2.0, "add", 3)), f);
}

TEST(Graph, CopyAndErase) {
  Seed s;
  Graph g;
  Node* a = g.placeholder("a");
  Node* b = g.placeholder("b");
  Value out = g.copy_from(s.g, nullptr);
  (void)a;
  (void)b;
  // Copied placeholders get fresh names; the output value maps to copies.
  ASSERT_EQ(out.kind(), Value::Kind::Tuple);
  Node* mul = out.items()[0].to_node();
  EXPECT_EQ(mul->graph(), &g);
  EXPECT_EQ(mul->name(), "mul");
  g.output(out);
  lint(g);
  NodePtr keep(s.relu);
  s.mul->set_args({2.0});
  s.g.erase_node(s.relu);
  EXPECT_TRUE(keep->erased());
  EXPECT_TRUE(keep->args().empty());
  EXPECT_TRUE(s.add->users().empty());
  EXPECT_TRUE(throws_with([&] { keep->set_args({}); }, "was erased"));
}

// The AOT stage from C++: fake tensors, proxy tracing through the dispatcher,
// functionalization and the joint graph, each checked as input function ->
// expected graph text (graph_str, torch.fx's str(graph)).
#include <gtest/gtest.h>

#include "ignis/aot/aot.h"
#include "ignis/aot/fake.h"
#include "ignis/aot/trace.h"
#include "ignis/autograd/autograd_meta.h"
#include "ignis/graph/interpreter.h"
#include "ignis/graph/printer.h"
#include "ignis/ops/op_def.h"

using namespace ignis;
using graph::Value;

namespace {

void setup() {
  register_all_ops();
  aot::register_tracing_kernels();
}

Tensor randn(std::vector<int64_t> sizes) {
  setup();
  return OpRef("randn").tensor(sizes);
}

Tensor call(const char* name, std::initializer_list<IValue> args) {
  const OpHandle& h = Dispatcher::get().find_or_throw(name);
  Stack s(args);
  fill_defaults(h.schema(), s);
  h.call(s);
  return s.at(0).to_tensor();
}

// A Python number passed to an op (a wrapped 0-dim tensor).
Tensor num(double v) { return scalar_to_tensor(v, ScalarType::Float64, true); }

// The text of a traced graph without its first line ("graph():").
std::string body(const graph::Graph& g) {
  std::string s = graph::graph_str(g);
  return s.substr(s.find('\n') + 1);
}

bool has_inplace_call(const graph::Graph& g, bool allow_copy) {
  for (graph::Node* n : g.nodes()) {
    if (n->op() != graph::OpKind::CallFunction || n->target().kind != graph::Target::Kind::Op)
      continue;
    const std::string& name = n->target().op->schema().name;
    if (name.back() == '_' && !(allow_copy && name == "copy_")) return true;
  }
  return false;
}

}  // namespace

TEST(Fake, MetadataWithoutDataAndTheStoodForDevice) {
  Tensor x = randn({3, 4});
  aot::FakeTensorMode mode;
  Tensor f = mode.from_tensor(x);
  EXPECT_TRUE(f.is_fake());
  EXPECT_TRUE(f.device().is_meta());      // what kernels see
  EXPECT_TRUE(f.user_device().is_cpu());  // what the user sees
  EXPECT_TRUE(f.key_set().has(DispatchKey::FakeTensor));
  EXPECT_TRUE(mode.from_tensor(x).is_same(f));
  aot::FakeModeGuard guard(mode);
  Tensor y = call("mm", {f, call("t", {f})});
  EXPECT_TRUE(y.is_fake());
  EXPECT_EQ(y.sizes(), DimVector({3, 3}));
  EXPECT_TRUE(y.user_device().is_cpu());
  Tensor v = call("select.int", {f, int64_t(0), int64_t(1)});
  EXPECT_EQ(v.impl()->storage().get(), f.impl()->storage().get());  // views alias
  Tensor z = OpRef("zeros").tensor(std::vector<int64_t>{2}, IValue(), IValue(Device(DeviceType::CUDA)));
  EXPECT_TRUE(z.is_fake() && z.user_device().is_cuda());  // no GPU needed
}

TEST(Trace, RecordsCoreOpsWithMetadata) {
  Tensor x = randn({2, 3}), y = randn({3});
  aot::TracedGraph t = aot::trace(
      [](const std::vector<Value>& in) {
        Tensor a = call("add", {in[0].to_tensor(), in[1].to_tensor()});
        return Value::tuple({Value(call("mul", {call("relu", {a}), num(2.0)}))});
      },
      {Value(x), Value(y)});
  EXPECT_FALSE(t.joint);
  EXPECT_EQ(body(*t.graph),
            "    %arg0_1 : [num_users=1] = placeholder[target=arg0_1]\n"
            "    %arg1_1 : [num_users=1] = placeholder[target=arg1_1]\n"
            "    %add : [num_users=1] = call_function[target=ignis.ops.add](args = (%arg0_1, "
            "%arg1_1), kwargs = {})\n"
            "    %relu : [num_users=1] = call_function[target=ignis.ops.relu](args = (%add,), "
            "kwargs = {})\n"
            "    %mul : [num_users=1] = call_function[target=ignis.ops.mul](args = (%relu, 2.0), "
            "kwargs = {})\n"
            "    return (mul,)");
  for (graph::Node* n : t.graph->nodes())
    if (n->op() == graph::OpKind::CallFunction) {
      ASSERT_EQ(n->meta().tensors.size(), 1u);
      EXPECT_EQ(n->meta().tensors[0].sizes, std::vector<int64_t>({2, 3}));
    }
}

TEST(Functionalize, MutationsBecomeFunctionalOpsAndOneWriteBack) {
  Tensor x = randn({2, 3});
  aot::TracedGraph t = aot::trace(
      [](const std::vector<Value>& in) {
        Tensor a = in[0].to_tensor();
        call("add_", {a, num(1.0)});                         // in place on the input
        Tensor row = call("select.int", {a, int64_t(0), int64_t(1)});
        call("mul_", {row, num(3.0)});                       // through a view
        return Value::tuple({Value(call("neg", {a}))});
      },
      {Value(x)});
  EXPECT_FALSE(has_inplace_call(*t.graph, /*allow_copy=*/true));
  EXPECT_TRUE(t.inputs[0].mutated);
  EXPECT_EQ(body(*t.graph),
            "    %arg0_1 : [num_users=2] = placeholder[target=arg0_1]\n"
            "    %add : [num_users=2] = call_function[target=ignis.ops.add](args = (%arg0_1, "
            "1.0), kwargs = {})\n"
            "    %select : [num_users=1] = call_function[target=ignis.ops.select.int](args = "
            "(%add, 0, 1), kwargs = {})\n"
            "    %mul : [num_users=1] = call_function[target=ignis.ops.mul](args = (%select, "
            "3.0), kwargs = {})\n"
            "    %as_strided_scatter : [num_users=2] = call_function[target=ignis.ops."
            "as_strided_scatter](args = (%add, %mul, [3], [1], 3), kwargs = {})\n"
            "    %neg : [num_users=1] = call_function[target=ignis.ops.neg](args = "
            "(%as_strided_scatter,), kwargs = {})\n"
            "    %copy_ : [num_users=0] = call_function[target=ignis.ops.copy_](args = (%arg0_1, "
            "%as_strided_scatter), kwargs = {})\n"
            "    return (neg,)");
  // The graph computes what eager computes and mutates the input the same way.
  Tensor eager = call("clone", {x}), run = call("clone", {x});
  call("add_", {eager, num(1.0)});
  call("mul_", {call("select.int", {eager, int64_t(0), int64_t(1)}), num(3.0)});
  Tensor expected = call("neg", {eager});
  Value out = graph::interpret(*t.graph, {Value(run)});
  Tensor got = out.items()[0].to_tensor();
  const float* a = static_cast<const float*>(got.data_ptr());
  const float* b = static_cast<const float*>(expected.data_ptr());
  const float* r = static_cast<const float*>(run.data_ptr());
  const float* e = static_cast<const float*>(eager.data_ptr());
  for (int i = 0; i < 6; ++i) {
    EXPECT_FLOAT_EQ(a[i], b[i]);
    EXPECT_FLOAT_EQ(r[i], e[i]);
  }
}

TEST(Joint, ForwardAndBackwardInOneGraph) {
  Tensor x = randn({4}), w = randn({4});
  autograd::set_requires_grad(w, true);
  aot::TracedGraph t = aot::trace(
      [](const std::vector<Value>& in) {
        Tensor p = call("mul", {in[0].to_tensor(), in[1].to_tensor()});
        return Value::tuple({Value(call("sum", {call("exp", {p})}))});
      },
      {Value(x), Value(w)});
  ASSERT_TRUE(t.joint);
  EXPECT_FALSE(t.inputs[0].requires_grad);
  EXPECT_TRUE(t.inputs[1].requires_grad);
  EXPECT_EQ(t.num_tangents(), 1u);
  std::vector<std::string> placeholders;
  for (graph::Node* n : t.graph->placeholders()) placeholders.push_back(n->name());
  EXPECT_EQ(placeholders, (std::vector<std::string>{"primals_1", "primals_2", "tangents_1"}));
  // output: (sum, None, grad of w)
  const Value& out = t.graph->output_node()->args()[0];
  ASSERT_EQ(out.items().size(), 3u);
  EXPECT_TRUE(out.items()[1].is_none());
  EXPECT_TRUE(out.items()[2].is_node());
  EXPECT_FALSE(has_inplace_call(*t.graph, false));
}

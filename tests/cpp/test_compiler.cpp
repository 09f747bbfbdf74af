// The compiler: lowering a hand-built graph (checked through the IR
// printer's text) and running the compiled program against the interpreter.
#include <gtest/gtest.h>

#include "ignis/compiler/compiled_graph.h"
#include "ignis/compiler/lower.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/graph.h"
#include "ignis/graph/interpreter.h"
#include "ignis/ops/op_def.h"

using namespace ignis;
using graph::Value;

namespace {

const OpHandle& op(const char* name) {
  register_all_ops();
  return Dispatcher::get().find_or_throw(name);
}

Tensor filled(const DimVector& sizes, float start) {
  Tensor t = empty_tensor(sizes, ScalarType::Float32, Device());
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + 0.25f * float(i) - 1.0f;
  return t;
}

// relu(x + y) * 2 with y broadcast along rows, then a matmul (a GEMM template) of
// the transposed result.
struct Seed {
  graph::Graph g;
  std::vector<Value> inputs{Value(filled({4, 3}, 0)), Value(filled({3}, 1))};
  Seed() {
    graph::Node* x = g.placeholder("x");
    graph::Node* y = g.placeholder("y");
    graph::Node* a = g.call_function(op("add"), {x, y});
    graph::Node* r = g.call_function(op("relu"), {a});
    graph::Node* m = g.call_function(op("mul"), {r, 2.0});
    graph::Node* t = g.call_function(op("permute"), {m, Value::list({int64_t(1), int64_t(0)})});
    graph::Node* mm = g.call_function(op("mm"), {t, x});
    g.output(Value::tuple({m, mm}));
    graph::record_tensor_meta(g, inputs);
  }
};

}  // namespace

TEST(Compiler, LowersPointwiseChainToOneKernelAndAGemm) {
  Seed s;
  compiler::Program p = compiler::lower(s.g);
  EXPECT_EQ(compiler::to_string(p),
            "x: float32[4, 3] strides [3, 1] input 0\n"
            "y: float32[3] strides [1] input 1\n"
            "buf2: float32[4, 3] strides [3, 1] computed\n"
            "buf3: float32[3, 4] strides [1, 3] extern\n"
            "buf4: float32[3, 3] strides [3, 1] computed\n"
            "kernel_0 (add, relu, mul) -> buf2\n"
            "  outer x0 < 4; inner x1 < 3\n"
            "  loop 0 over inner:\n"
            "    tmp0: float32 = load x[3*x0 + x1]\n"
            "    tmp1: float32 = load y[x1]\n"
            "    tmp2: float32 = constant 1\n"
            "    tmp3: float32 = add(tmp0, tmp1, tmp2)\n"
            "    tmp4: float32 = relu(tmp3)\n"
            "    tmp5: float32 = constant 2\n"
            "    tmp6: float32 = mul(tmp4, tmp5)\n"
            "    store buf2[3*x0 + x1] = tmp6\n"
            "view permute(buf2, [1, 0]) -> buf3\n"
            "kernel_1 (mm) -> buf4\n"
            "  outer x0 < 3; inner x1 < 3\n"
            "  gemm buf4 = 1 * buf3 @ x\n"
            "return (buf2, buf4)\n");
}

TEST(Compiler, CompiledGraphEqualsTheInterpreter) {
  Seed s;
  compiler::CompiledGraph cg(s.g);
  EXPECT_EQ(cg.kernel_count(), 2u);  // the fused chain, and the GEMM template
  EXPECT_NE(cg.source().find("ignis::scalar_ops::Relu{}(tmp3)"), std::string::npos);
  std::vector<Tensor> in{s.inputs[0].to_tensor(), s.inputs[1].to_tensor()};
  std::vector<Value> got = cg.run(in);
  Value want = graph::interpret(s.g, s.inputs);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const Tensor& a = got[i].to_tensor();
    const Tensor& b = want.items()[i].to_tensor();
    ASSERT_EQ(a.sizes(), b.sizes());
    Tensor bc = b.is_contiguous() ? b : graph::call_op_by_name("contiguous", {Value(b)}, {}).to_tensor();
    Tensor ac = a.is_contiguous() ? a : graph::call_op_by_name("contiguous", {Value(a)}, {}).to_tensor();
    for (int64_t k = 0; k < a.numel(); ++k)
      EXPECT_FLOAT_EQ(ac.data<float>()[k], bc.data<float>()[k]) << "output " << i << " at " << k;
  }
}

// The dispatcher's contract: layers run in key order, a layer that excludes
// itself is not re-entered, fallthrough keys are skipped, and a boxed
// fallback sees every op with its schema and arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ignis/dispatch/dispatcher.h"
#include "ignis/ops/op_def.h"

using namespace ignis;

namespace {

std::vector<std::string>& trace() {
  static std::vector<std::string> t;
  return t;
}

Tensor cpu_tensor(std::vector<int64_t> sizes) {
  return empty_tensor(DimVector(sizes), ScalarType::Float32, Device(DeviceType::CPU));
}

OpHandle& layered_op() {
  static OpHandle* op = [] {
    register_all_ops();
    OpHandle& h = Dispatcher::get().register_op("test_layers(Tensor self) -> Tensor");
    h.set_kernel(DispatchKey::CPU, [](const OpHandle&, DispatchKeySet, Stack&) {
      trace().push_back("CPU");
    });
    // Layer 2 excludes itself with a guard and re-enters through call().
    h.set_kernel(DispatchKey::TestLayer2, [](const OpHandle& op, DispatchKeySet, Stack& s) {
      trace().push_back("L2");
      ExcludeDispatchKeyGuard g(DispatchKey::TestLayer2);
      op.call(s);
    });
    // Layer 1 passes the key set below itself on (redispatch).
    h.set_kernel(DispatchKey::TestLayer1, [](const OpHandle& op, DispatchKeySet ks, Stack& s) {
      trace().push_back("L1");
      op.redispatch(ks.below(DispatchKey::TestLayer1), s);
    });
    return &h;
  }();
  return *op;
}

}  // namespace

TEST(Dispatcher, LayersRunInKeyOrder) {
  OpHandle& op = layered_op();
  trace().clear();
  IncludeDispatchKeyGuard inc(DispatchKeySet(DispatchKey::TestLayer1).add(DispatchKey::TestLayer2));
  Stack s{cpu_tensor({2})};
  op.call(s);
  EXPECT_EQ(trace(), (std::vector<std::string>{"L2", "L1", "CPU"}));
}

TEST(Dispatcher, ExcludedKeyIsNotReentered) {
  OpHandle& op = layered_op();
  trace().clear();
  IncludeDispatchKeyGuard inc(DispatchKeySet(DispatchKey::TestLayer1).add(DispatchKey::TestLayer2));
  ExcludeDispatchKeyGuard exc(DispatchKey::TestLayer1);
  Stack s{cpu_tensor({2})};
  op.call(s);
  EXPECT_EQ(trace(), (std::vector<std::string>{"L2", "CPU"}));
  // The guard restores the thread-local set on exit.
  EXPECT_TRUE(tls_dispatch_keys().excluded.has(DispatchKey::TestLayer1));
}

TEST(Dispatcher, GuardRestoresOnExit) {
  DispatchKeySet before = tls_dispatch_keys().excluded;
  {
    ExcludeDispatchKeyGuard g(DispatchKey::TestLayer2);
    EXPECT_TRUE(tls_dispatch_keys().excluded.has(DispatchKey::TestLayer2));
  }
  EXPECT_EQ(tls_dispatch_keys().excluded, before);
}

TEST(Dispatcher, UnregisteredFunctionalKeysFallThrough) {
  OpHandle& op = layered_op();
  trace().clear();
  // ADInplaceOrView is on every CPU tensor but has no kernel or fallback: it
  // falls through. The autograd keys have a boxed fallback (the autograd
  // layer), which redispatches to CPU when nothing requires grad.
  Stack s{cpu_tensor({2})};
  EXPECT_TRUE(s[0].to_tensor().key_set().has(DispatchKey::ADInplaceOrView));
  EXPECT_TRUE(s[0].to_tensor().key_set().has(DispatchKey::AutogradCPU));
  EXPECT_EQ(op.resolve(op.compute_keys(s)), DispatchKey::AutogradCPU);
  EXPECT_EQ(op.resolve(op.compute_keys(s).remove(DispatchKey::AutogradCPU)), DispatchKey::CPU);
  op.call(s);
  EXPECT_EQ(trace(), (std::vector<std::string>{"CPU"}));
}

TEST(Dispatcher, ExplicitFallthroughSkipsAFallback) {
  OpHandle& op = layered_op();
  Dispatcher::get().register_fallback(DispatchKey::TestLayer0, [](const OpHandle& o, DispatchKeySet ks, Stack& s) {
    trace().push_back("fallback");
    o.redispatch(ks.below(DispatchKey::TestLayer0), s);
  });
  IncludeDispatchKeyGuard inc(DispatchKey::TestLayer0);
  trace().clear();
  Stack s{cpu_tensor({2})};
  op.call(s);
  EXPECT_EQ(trace(), (std::vector<std::string>{"fallback", "CPU"}));
  op.set_fallthrough(DispatchKey::TestLayer0);
  trace().clear();
  Stack s2{cpu_tensor({2})};
  op.call(s2);
  EXPECT_EQ(trace(), (std::vector<std::string>{"CPU"}));
  Dispatcher::get().register_fallback(DispatchKey::TestLayer0, nullptr);
}

TEST(Dispatcher, BoxedFallbackRecordsEveryOp) {
  register_all_ops();
  std::vector<std::string> seen;
  std::vector<size_t> nargs;
  Dispatcher::get().register_fallback(
      DispatchKey::TestLayer0, [&](const OpHandle& op, DispatchKeySet ks, Stack& s) {
        seen.push_back(op.name());
        nargs.push_back(s.size());
        EXPECT_EQ(s.size(), op.schema().args.size());
        op.redispatch(ks.below(DispatchKey::TestLayer0), s);
      });
  {
    IncludeDispatchKeyGuard inc(DispatchKey::TestLayer0);
    Tensor a = OpRef("ones").tensor(std::vector<int64_t>{2, 3});
    Tensor b = OpRef("add").tensor(a, a);
    Tensor c = OpRef("exp").tensor(b);
    Tensor d = OpRef("view").tensor(c, std::vector<int64_t>{6});
    EXPECT_EQ(d.sizes(), DimVector({6}));
    EXPECT_NEAR(d.data<float>()[0], std::exp(2.0f), 1e-5);
  }
  Dispatcher::get().register_fallback(DispatchKey::TestLayer0, nullptr);
  EXPECT_EQ(seen, (std::vector<std::string>{"ones", "add", "exp", "view"}));
  EXPECT_EQ(nargs, (std::vector<size_t>{3, 3, 1, 2}));
}

TEST(Dispatcher, MissingBackendKernelIsAClearError) {
  register_all_ops();
  OpHandle& h = Dispatcher::get().register_op("test_cpu_only(Tensor self) -> Tensor");
  h.set_kernel(DispatchKey::CPU, [](const OpHandle&, DispatchKeySet, Stack&) {});
  Tensor m = empty_tensor({2}, ScalarType::Float32, Device(DeviceType::Meta));
  Stack s{m};
  try {
    h.call(s);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotImplemented);
    EXPECT_NE(std::string(e.what()).find("test_cpu_only"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Meta"), std::string::npos);
  }
}

TEST(Dispatcher, MetaKernelIsDerivedFromTheDeclaration) {
  register_all_ops();
  for (const auto& op : Dispatcher::get().ops()) {
    if (op->name().rfind("test_", 0) == 0) continue;
    EXPECT_TRUE(op->has_kernel(DispatchKey::Meta)) << op->name() << " has no Meta kernel";
  }
  Tensor a = empty_tensor({4, 1}, ScalarType::Float32, Device(DeviceType::Meta));
  Tensor b = empty_tensor({3}, ScalarType::Float64, Device(DeviceType::Meta));
  Tensor c = OpRef("add").tensor(a, b);
  EXPECT_EQ(c.sizes(), DimVector({4, 3}));
  EXPECT_EQ(c.dtype(), ScalarType::Float64);
  EXPECT_TRUE(c.device().is_meta());
}

TEST(Schema, ParsesAndPrints) {
  FunctionSchema fs = parse_schema(
      "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  EXPECT_EQ(fs.name, "add_");
  EXPECT_EQ(fs.overload, "Tensor");
  ASSERT_EQ(fs.args.size(), 3u);
  EXPECT_TRUE(fs.args[0].is_write);
  EXPECT_TRUE(fs.args[2].kwarg_only);
  EXPECT_TRUE(fs.is_inplace());
  FunctionSchema m = parse_schema("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  ASSERT_EQ(m.returns.size(), 2u);
  EXPECT_EQ(m.returns[1].name, "indices");
  EXPECT_EQ(parse_schema(m.str()).str(), m.str());
}

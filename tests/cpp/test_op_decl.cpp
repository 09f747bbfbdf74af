// The facts passes read from an op's declaration. Each test checks the
// declarations against the rule they replaced or against the ops' own
// definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/node.h"
#include "ignis/kernels/scalar_ops.h"
#include "ignis/ops/op_def.h"

using namespace ignis;

namespace {

const OpDef& def_of(const std::string& name) {
  register_all_ops();
  const OpDef* d = Dispatcher::get().find_or_throw(name).def();
  EXPECT_NE(d, nullptr) << name;
  return *d;
}

// The rule graph passes used before ops declared it: a name containing one of
// these words was taken for random or uninitialised.
bool old_heuristic(const std::string& name) {
  for (const char* w : {"rand", "dropout", "bernoulli", "normal", "uniform", "multinomial",
                        "empty", "exponential", "cauchy", "geometric", "poisson"})
    if (name.find(w) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(OpDecl, EveryOpTheOldNameRuleCaughtIsDeclaredNondeterministic) {
  register_all_ops();
  // Names the word rule caught by accident: normalize is not normal_.
  const std::set<std::string> false_positives = {"normalize"};
  int caught = 0;
  for (const auto& h : Dispatcher::get().ops()) {
    const std::string& name = h->schema().name;
    if (!old_heuristic(name) || false_positives.count(name) || name.rfind("test_", 0) == 0)
      continue;
    ++caught;
    ASSERT_NE(h->def(), nullptr) << h->name();
    EXPECT_TRUE(h->def()->nondeterministic()) << h->name() << " is not declared random";
  }
  EXPECT_GE(caught, 19);  // empty*, rand*, *_like, uniform_, normal_, random_, bernoulli_, dropout*
  for (const std::string& n : false_positives) EXPECT_FALSE(def_of(n).nondeterministic()) << n;
}

TEST(OpDecl, RandomAndUninitialisedAreTold) {
  EXPECT_EQ(def_of("randn").determinism, Determinism::Random);
  EXPECT_EQ(def_of("bernoulli_").determinism, Determinism::Random);
  EXPECT_EQ(def_of("native_dropout").determinism, Determinism::Random);
  EXPECT_EQ(def_of("empty").determinism, Determinism::Uninitialized);
  EXPECT_EQ(def_of("empty_like").determinism, Determinism::Uninitialized);
  EXPECT_EQ(def_of("add").determinism, Determinism::Deterministic);
}

TEST(OpDecl, NamesAreJudgedByTheOpsTheyName) {
  register_all_ops();
  EXPECT_TRUE(graph::nondeterministic_by_name("randn_like"));
  EXPECT_TRUE(graph::nondeterministic_by_name("dropout"));  // dropout and dropout.functional
  EXPECT_TRUE(graph::nondeterministic_by_name("uniform_"));
  EXPECT_FALSE(graph::nondeterministic_by_name("normalize"));
  EXPECT_FALSE(graph::nondeterministic_by_name("add"));
  // Not ignis ops: the name itself is read.
  EXPECT_TRUE(graph::nondeterministic_by_name("new_empty"));
  EXPECT_TRUE(graph::nondeterministic_by_name("exponential_"));
  EXPECT_FALSE(graph::nondeterministic_by_name("__add__"));
}

TEST(OpDecl, GemmCallsAreTemplates) {
  for (const char* n : {"mm", "bmm", "addmm", "baddbmm", "mv"})
    EXPECT_EQ(def_of(n).category, OpCategory::Template) << n;
  EXPECT_EQ(def_of("matmul").category, OpCategory::Composite);
}

TEST(OpDecl, DataDependentShapesAreDeclared) {
  EXPECT_NE(def_of("nonzero").data_dependent, "");
  EXPECT_NE(def_of("masked_select").data_dependent, "");
  EXPECT_EQ(def_of("where.self").data_dependent, "");
}

TEST(OpDecl, AliasesAreNamesOfOneOp) {
  register_all_ops();
  const Dispatcher& d = Dispatcher::get();
  // PyTorch's aliases ignis has, and the ops they name.
  const std::set<std::pair<std::string, std::string>> expected = {
      {"negative", "neg"}, {"absolute", "abs"}, {"fix", "trunc"}, {"subtract", "sub"},
      {"multiply", "mul"}, {"divide", "div"}, {"true_divide", "div"}, {"less", "lt"},
      {"less_equal", "le"}, {"greater", "gt"}, {"greater_equal", "ge"}, {"not_equal", "ne"},
      {"clip", "clamp"}, {"concat", "cat"}, {"concatenate", "cat"}, {"ger", "outer"}};
  std::set<std::pair<std::string, std::string>> declared(d.aliases().begin(), d.aliases().end());
  for (const auto& e : expected) {
    EXPECT_TRUE(declared.count(e)) << e.first;
    // The in-place form follows where the op has one.
    if (!d.overloads(e.second + "_").empty())
      EXPECT_TRUE(declared.count({e.first + "_", e.second + "_"})) << e.first << "_";
  }
  for (const auto& [alias, op] : d.aliases()) {
    ASSERT_NE(d.find(op), nullptr) << op;
    EXPECT_EQ(d.find(alias), d.find(op)) << alias;
    EXPECT_EQ(&d.overloads(alias), &d.overloads(op)) << alias;
    EXPECT_EQ(*d.alias_target(alias), op);
  }
  // No alias is an op of its own, with kernels a graph could hold.
  for (const auto& h : d.ops()) {
    EXPECT_EQ(d.alias_target(h->schema().name), nullptr) << h->name();
    EXPECT_EQ(h->def() ? h->def()->doc.rfind("alias of", 0) : std::string::npos, std::string::npos)
        << h->name() << " is declared as an op of its own";
  }
  EXPECT_EQ(d.find("multiply_"), d.find("mul_"));
  EXPECT_EQ(d.find("no_such_alias"), nullptr);
}

namespace {
template <typename... F>
std::set<std::string> names_of() { return {F::name...}; }
}  // namespace

TEST(OpDecl, EveryPointwiseKernelNamesItsScalarFunction) {
  register_all_ops();
  using namespace scalar_ops;  // NOLINT
  // The structs code generators can name: scalar_ops.h's own list.
  const std::set<std::string> known = names_of<
#define IGNIS_STRUCT(S) S,
      IGNIS_FORALL_SCALAR_OPS(IGNIS_STRUCT)
#undef IGNIS_STRUCT
      Neg>();
  int structured = 0;
  for (const auto& h : Dispatcher::get().ops()) {
    const OpDef* d = h->def();
    if (!d) continue;
    if (!d->scalar.empty()) EXPECT_TRUE(known.count(d->scalar)) << h->name() << ": " << d->scalar;
    // Pointwise ops with a kernel of their own (composites only call other ops).
    if (d->category != OpCategory::Pointwise || d->any_backend) continue;
    ++structured;
    EXPECT_FALSE(d->scalar.empty()) << h->name() << " names no scalar function";
  }
  EXPECT_GE(structured, 150);
  EXPECT_EQ(def_of("exp").scalar, "exp");
  EXPECT_EQ(def_of("exp_").scalar, "exp");
  EXPECT_EQ(def_of("floor_divide").scalar, "div_floor");
  EXPECT_EQ(def_of("gelu").scalar, "gelu");  // approximate='tanh': gelu_tanh
}

TEST(OpDecl, ScalarFunctionsComputeThePointwiseFormulas) {
  using namespace scalar_ops;  // NOLINT
  EXPECT_EQ(Add()(1.0f, 2.0f, 3.0f), 7.0f);
  EXPECT_EQ(Add()(false, true, true), true);
  EXPECT_EQ(Sub()(int64_t(5), int64_t(2), int64_t(2)), 1);
  EXPECT_EQ(Rsub()(2.0, 5.0, 2.0), 1.0);
  EXPECT_EQ(DivFloor()(int64_t(-7), int64_t(2)), -4);
  EXPECT_EQ(DivTrunc()(int64_t(-7), int64_t(2)), -3);
  EXPECT_EQ(Remainder()(int64_t(-7), int64_t(2)), 1);
  EXPECT_EQ(Fmod()(int64_t(-7), int64_t(2)), -1);
  EXPECT_EQ(Pow()(int64_t(3), int64_t(4)), 81);
  EXPECT_EQ(Clamp()(5.0f, 0.0f, 1.0f), 1.0f);
  EXPECT_TRUE(std::isnan(Maximum()(1.0f, NAN)));
  EXPECT_TRUE(IsNan()(NAN));
  EXPECT_FLOAT_EQ(Exp()(1.0f), 2.7182817f);
}

TEST(OpDecl, ArgumentsTorchDoesNotDifferentiateAreDeclared) {
  // torch raises when these require grad; a formula that silently left them
  // out would give no gradient instead.
  EXPECT_EQ(def_of("nll_loss").nondiff_inputs, uint64_t(1) << 2);
  EXPECT_EQ(def_of("nll_loss").nondiff_when, nullptr);
  // cross_entropy's weight only with class indices (a predicate on the call).
  EXPECT_EQ(def_of("cross_entropy").nondiff_inputs, uint64_t(1) << 2);
  EXPECT_NE(def_of("cross_entropy").nondiff_when, nullptr);
  EXPECT_EQ(def_of("binary_cross_entropy").nondiff_inputs, uint64_t(1) << 2);
  EXPECT_EQ(def_of("binary_cross_entropy_with_logits").nondiff_inputs,
            (uint64_t(1) << 2) | (uint64_t(1) << 6));
  for (const char* differentiable : {"mse_loss", "l1_loss", "huber_loss", "layer_norm"})
    EXPECT_EQ(def_of(differentiable).nondiff_inputs, 0u) << differentiable;
  // Every declared argument is a tensor of an op that has a derivative.
  for (const auto& h : Dispatcher::get().ops()) {
    const OpDef* d = h->def();
    if (!d || !d->nondiff_inputs) continue;
    EXPECT_NE(d->derivative, nullptr) << h->name();
    const auto& args = h->schema().args;
    for (size_t i = 0; i < 64; ++i) {
      if (!((d->nondiff_inputs >> i) & 1)) continue;
      ASSERT_LT(i, args.size()) << h->name();
      EXPECT_TRUE(args[i].type == ArgType::Tensor || args[i].type == ArgType::OptTensor)
          << h->name() << " argument " << args[i].name;
    }
  }
}

TEST(OpDecl, EveryScalarNameIsAStructOfScalarOps) {
  register_all_ops();
  std::set<std::string> structs;
#define IGNIS_NAME_OF(S) structs.insert(scalar_ops::S::name);
  IGNIS_FORALL_SCALAR_OPS(IGNIS_NAME_OF)
#undef IGNIS_NAME_OF
  EXPECT_GE(structs.size(), 80u);
  for (const OpDef* d : all_op_defs())
    if (!d->scalar.empty())
      EXPECT_TRUE(structs.count(d->scalar)) << d->schema << " names scalar function '"
                                            << d->scalar << "', which scalar_ops.h lacks";
}

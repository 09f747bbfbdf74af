// The core-op set and the decompositions (docs/core_ops.md): every op is
// core, decomposed or in place; and every op that declares a decomposition,
// decomposed recursively as AOT's tracer does, ends in core ops (or in-place
// ops, which functionalization turns into functional ones) and gives the
// fused op's dtypes and shapes. tests/python/test_decompositions.py compares
// values and gradients.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ignis/dispatch/dispatcher.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/op_def.h"

using namespace ignis;

namespace {

const OpDef& def_of(const std::string& name) {
  const OpHandle& h = Dispatcher::get().find_or_throw(name);
  return *h.def();
}

// ---- sample inputs (float32 on the CPU) ------------------------------------------
using Shape = std::vector<int64_t>;
Tensor W(double v) { return scalar_to_tensor(v, ScalarType::Float64, true); }  // a Python float
Tensor F(Shape s) { return OpRef("randn").tensor(s); }
Tensor P(Shape s) {  // in (0.05, 0.95): probabilities, positive weights
  Tensor u = OpRef("rand").tensor(s);
  return OpRef("add").tensor(OpRef("mul").tensor(u, W(0.9)), W(0.05));
}
Tensor L(int64_t high, Shape s) { return OpRef("randint").tensor(high, s); }
Tensor Lv(Shape values) {
  Tensor t = empty_tensor({static_cast<int64_t>(values.size())}, ScalarType::Int64,
                          Device(DeviceType::CPU));
  for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return t;
}
Tensor Bo(Shape s) { return OpRef("lt").tensor(OpRef("rand").tensor(s), W(0.5)); }
Tensor T(Shape s) { return OpRef("t").tensor(F(s)); }  // a transposed (strided) matrix
IValue D(ScalarType t) { return IValue(t); }

struct Sample {
  std::string op;
  std::vector<IValue> args;                             // leading positional arguments
  std::vector<std::pair<std::string, IValue>> named{};  // the others, by name
};

Stack stack_of(const OpHandle& op, const Sample& sm) {
  const FunctionSchema& fs = op.schema();
  Stack s(fs.args.size());
  std::vector<bool> given(fs.args.size(), false);
  for (size_t i = 0; i < sm.args.size(); ++i) {
    s[i] = sm.args[i];
    given[i] = true;
  }
  for (const auto& [name, v] : sm.named) {
    int i = fs.find_arg(name);
    EXPECT_GE(i, 0) << sm.op << " has no argument " << name;
    s[i] = v;
    given[i] = true;
  }
  for (size_t i = 0; i < fs.args.size(); ++i)
    if (!given[i]) s[i] = fs.args[i].default_value;
  return s;
}

std::vector<Sample> listed_samples();

// The functional _foreach_ ops (ops/foreach.cpp), each built from its schema:
// lists of two positive tensors of different shapes (sqrt, log and div need
// no sign), a list of two numbers, a number, a 0-dim tensor.
std::vector<Sample> foreach_samples() {
  std::vector<Sample> out;
  for (const auto& h : Dispatcher::get().ops()) {
    const FunctionSchema& fs = h->schema();
    if (fs.name.rfind("_foreach_", 0) != 0 || fs.is_inplace()) continue;
    Sample sm{h->name(), {}};
    for (const Argument& a : fs.args) {
      if (a.kwarg_only) break;
      if (a.type == ArgType::TensorList)
        sm.args.emplace_back(std::vector<Tensor>{P({3, 4}), P({5})});
      else if (a.type == ArgType::FloatList)
        sm.args.emplace_back(std::vector<double>{0.5, 2.0});
      else if (a.type == ArgType::Scalar) sm.args.emplace_back(Scalar(1.5));
      else if (a.type == ArgType::Tensor) sm.args.emplace_back(P({}));
      else ADD_FAILURE() << h->name() << ": no sample for argument " << a.name;
    }
    out.push_back(std::move(sm));
  }
  return out;
}

// The functional forms of the fused optimizer steps: two parameters with
// their states and step counts (float32, as the optimizers keep them).
std::vector<Sample> fused_step_samples() {
  auto two = [] { return std::vector<Tensor>{F({3, 4}), F({5})}; };
  auto pos = [] { return std::vector<Tensor>{P({3, 4}), P({5})}; };
  auto f32 = [](double v) { return scalar_to_tensor(v, ScalarType::Float32); };
  auto steps = [&] { return std::vector<Tensor>{f32(3.0), f32(1.0)}; };
  std::vector<std::pair<std::string, IValue>> adam{
      {"beta1", 0.9}, {"beta2", 0.99}, {"weight_decay", 0.1}, {"eps", 1e-8},
      {"amsgrad", true}, {"maximize", false}};
  std::vector<std::pair<std::string, IValue>> sgd{
      {"weight_decay", 0.1}, {"momentum", 0.9}, {"dampening", 0.0}, {"nesterov", true},
      {"maximize", false}, {"is_first_step", false}};
  std::vector<Sample> out;
  for (const char* name : {"_fused_adam", "_fused_adamw"})
    for (IValue lr : {IValue(0.01), IValue(f32(0.01))}) {
      Sample sm{lr.is_tensor() ? std::string(name) + ".tensor_lr" : name,
                {two(), two(), two(), pos(), pos(), steps()}, adam};
      sm.named.emplace_back("lr", lr);
      out.push_back(std::move(sm));
    }
  for (IValue lr : {IValue(0.01), IValue(f32(0.01))}) {
    Sample sm{lr.is_tensor() ? "_fused_sgd.tensor_lr" : "_fused_sgd", {two(), two(), two()}, sgd};
    sm.named.emplace_back("lr", lr);
    out.push_back(std::move(sm));
  }
  return out;
}

std::vector<Sample> samples() {
  std::vector<Sample> all = listed_samples();
  for (Sample& sm : foreach_samples()) all.push_back(std::move(sm));
  for (Sample& sm : fused_step_samples()) all.push_back(std::move(sm));
  return all;
}

std::vector<Sample> listed_samples() {
  using V = std::vector<int64_t>;
  const auto f64 = ScalarType::Float64;
  Stack ln = OpRef("native_layer_norm").call(F({3, 4}), V{4}, F({4}), F({4}), 1e-5);
  Tensor cx = F({3, 2});
  Stack lstm = OpRef("_thnn_fused_lstm_cell").call(F({3, 8}), F({3, 8}), cx, None{}, None{});
  Stack gru = OpRef("_thnn_fused_gru_cell").call(F({3, 6}), F({3, 6}), F({3, 2}), F({6}), F({6}));
  return {
      {"zeros", {V{2, 3}}}, {"ones", {V{2, 3}}}, {"arange", {Scalar(int64_t(5))}},
      {"linspace", {Scalar(0.0), Scalar(1.0), int64_t(7)}}, {"eye", {int64_t(3)}},
      {"randint", {int64_t(10), V{3, 4}}}, {"empty_like", {F({2, 3})}},
      {"zeros_like", {F({2, 3})}}, {"ones_like", {F({2, 3})}},
      {"full_like", {F({2, 3}), Scalar(2.5)}}, {"rand_like", {F({2, 3})}},
      {"randn_like", {F({2, 3})}}, {"randint_like", {F({2, 3}), int64_t(7)}},
      {"randint_like.low", {F({2, 3}), int64_t(-3), int64_t(7)}},
      {"contiguous", {T({3, 4})}}, {"to.dtype", {F({3, 4}), D(f64)}},
      {"to.device", {F({3, 4}), Device(DeviceType::CPU), D(f64)}},
      {"to.other", {F({3, 4}), OpRef("_to_copy").tensor(F({2}), f64)}},
      {"to.kw", {F({3, 4})}, {{"dtype", D(f64)}}},
      {"type_as", {F({3, 4}), OpRef("_to_copy").tensor(F({2}), f64)}},
      {"frac", {F({3, 5})}}, {"square", {F({3, 5})}}, {"silu", {F({3, 5})}},
      {"mish", {F({3, 5})}}, {"gelu", {F({3, 5})}, {{"approximate", "tanh"}}},
      {"gelu_backward", {F({3, 5}), F({3, 5})}},
      {"rsub", {F({3, 4}), F({4})}}, {"floor_divide", {F({3, 4}), P({4})}},
      {"bitwise_left_shift", {L(70, {3, 4}), L(70, {4})}},
      {"bitwise_right_shift", {L(70, {3, 4}), L(70, {4})}},
      {"pow.Scalar", {Scalar(2.5), F({3, 4})}},
      {"argsort", {F({3, 5})}}, {"argsort.stable", {F({3, 5})}, {{"stable", true}}},
      {"broadcast_to", {F({3, 1}), V{2, 3, 4}}},
      {"broadcast_tensors", {std::vector<Tensor>{F({3, 1}), F({4}), F({2, 1, 1})}}},
      {"clamp_min", {F({3, 4}), F({4})}},
      {"clamp_max", {F({3, 4}), F({4})}}, {"lerp", {F({3, 4}), F({3, 4}), F({3, 4})}},
      {"addcmul", {F({3, 4}), F({3, 4}), F({4})}, {{"value", Scalar(0.5)}}},
      {"addcdiv", {F({3, 4}), F({3, 4}), P({4})}}, {"masked_fill", {F({3, 4}), Bo({3, 4}), W(0.5)}},
      {"reshape", {T({3, 4}), V{12}}}, {"view_as", {F({2, 6}), F({3, 4})}},
      {"reshape_as", {T({3, 4}), F({12})}},
      {"transpose.int", {F({2, 3, 4}), int64_t(0), int64_t(2)}},
      {"swapaxes", {F({2, 3, 4}), int64_t(0), int64_t(1)}},
      {"swapdims", {F({2, 3, 4}), int64_t(2), int64_t(1)}}, {"t", {F({3, 4})}},
      {"expand_as", {F({3, 1}), F({2, 3, 4})}}, {"squeeze", {F({3, 1, 4, 1})}},
      {"squeeze.dim", {F({3, 1, 4}), int64_t(1)}}, {"flatten", {F({2, 3, 4})}},
      {"unflatten", {F({2, 12}), int64_t(1), V{3, 4}}},
      {"narrow", {F({4, 5}), int64_t(1), int64_t(1), int64_t(3)}},
      {"split.Tensor", {F({7, 4}), int64_t(3)}}, {"split.sizes", {F({7, 4}), V{2, 5}}},
      {"chunk", {F({7, 4}), int64_t(3)}}, {"unbind.int", {F({3, 4})}},
      {"diagonal", {F({3, 4, 5}), int64_t(1), int64_t(1), int64_t(2)}},
      {"movedim", {F({2, 3, 4}), V{0}, V{2}}}, {"moveaxis", {F({2, 3, 4}), V{0}, V{2}}},
      {"sum", {F({3, 4})}}, {"nansum", {F({3, 4})}}, {"mean", {F({3, 4})}},
      {"mean.dim", {F({3, 4, 5}), V{0, 2}}}, {"prod", {F({3, 4})}}, {"max", {F({3, 4})}},
      {"max.other", {F({3, 4}), F({4})}}, {"min", {F({3, 4})}}, {"min.other", {F({3, 4}), F({4})}},
      {"var", {F({3, 4})}}, {"var.dim", {F({3, 4, 5}), V{1}, true, true}},
      {"var.correction", {F({3, 4})}, {{"correction", Scalar(int64_t(0))}}},
      {"std", {F({3, 4})}}, {"std.dim", {F({3, 4}), V{1}}}, {"std.correction", {F({3, 4})}},
      {"var_mean", {F({3, 4})}}, {"var_mean.dim", {F({3, 4}), V{0}}},
      {"var_mean.correction", {F({3, 4})}}, {"std_mean", {F({3, 4})}},
      {"std_mean.dim", {F({3, 4}), V{1}, true, true}}, {"std_mean.correction", {F({3, 4})}},
      {"logsumexp", {F({3, 4}), V{1}}}, {"all", {Bo({3, 4})}},
      {"all.dim", {Bo({3, 4}), int64_t(1)}},
      {"any", {Bo({3, 4})}}, {"any.dim", {Bo({3, 4}), int64_t(0), true}}, {"norm", {F({3, 4})}},
      {"norm.str", {F({3, 4}), "fro"}}, {"count_nonzero", {L(3, {3, 4})}},
      {"count_nonzero.dim_IntList", {L(3, {3, 4}), V{1}}},
      {"stack", {std::vector<Tensor>{F({2, 3}), F({2, 3})}, int64_t(1)}},
      {"hstack", {std::vector<Tensor>{F({2, 3}), F({2, 3})}}},
      {"vstack", {std::vector<Tensor>{F({2, 3}), F({3})}}},
      {"dstack", {std::vector<Tensor>{F({2, 3}), F({2, 3})}}},
      {"column_stack", {std::vector<Tensor>{F({3}), F({3, 2})}}},
      {"repeat", {F({2, 3}), V{2, 1, 2}}}, {"tile", {F({2, 3}), V{2}}},
      {"index_add", {F({5, 3}), int64_t(0), Lv({0, 2, 2, 4}), F({4, 3})}},
      {"index_copy", {F({5, 3}), int64_t(0), Lv({4, 0, 2}), F({3, 3})}},
      {"scatter.reduce", {F({5}), int64_t(0), Lv({0, 2, 2, 4}), F({4})}, {{"reduce", "add"}}},
      {"scatter.value_reduce", {F({5}), int64_t(0), Lv({0, 2, 2, 4}), Scalar(1.5)},
       {{"reduce", "multiply"}}},
      {"prelu", {F({2, 3, 4}), F({3})}},
      {"_amp_foreach_non_finite_check_and_unscale_",
       {std::vector<Tensor>{F({2, 3}), T({3, 2})}, OpRef("zeros").tensor(Shape{1}),
        OpRef("full").tensor(Shape{1}, Scalar(0.5))}},
      {"_amp_update_scale_",
       {OpRef("full").tensor(Shape{}, Scalar(8.0)),
        OpRef("zeros").tensor(Shape{}, D(ScalarType::Int32)), OpRef("zeros").tensor(Shape{}),
        2.0, 0.5, int64_t(3)}},
      {"index_fill.int_Tensor", {F({4, 5}), int64_t(1), Lv({0, 3}), W(2.5)}},
      {"take_along_dim", {F({3, 4}), L(4, {3, 2}), int64_t(1)}}, {"tril", {F({4, 5})}},
      {"triu", {F({2, 4, 5}), int64_t(1)}}, {"fliplr", {F({3, 4})}}, {"flipud", {F({3, 4})}},
      {"roll", {F({4, 5}), V{2, -1}, V{0, 1}}},
      {"_unique2", {L(5, {3, 4}), true, true, true}},
      {"unique_dim", {L(2, {5, 3}), int64_t(0), true, true, true}},
      {"unique_consecutive", {L(3, {12}), true, true, IValue()}},
      {"einsum", {std::string("bij,bjk->bik"), std::vector<Tensor>{F({2, 3, 4}), F({2, 4, 5})}}},
      {"round.decimals", {F({3, 4}), int64_t(2)}},
      {"where", {Bo({3, 4})}}, {"take", {F({3, 4}), L(12, {5})}}, {"dot", {F({5}), F({5})}},
      {"mv", {F({3, 4}), F({4})}}, {"matmul", {F({2, 1, 3, 4}), F({5, 4, 2})}},
      {"_addmm_act", {F({5}), F({3, 4}), F({4, 5})}, {{"activation", "gelu_tanh"}}},
      {"outer", {F({3}), F({4})}},
      {"linear", {F({2, 3, 4}), F({5, 4}), F({5})}},
      {"scaled_dot_product_attention", {F({2, 3, 4}), F({2, 5, 4}), F({2, 5, 6})},
       {{"is_causal", true}}},
      {"scaled_dot_product_attention", {F({2, 3, 4}), F({2, 5, 4}), F({2, 5, 6})},
       {{"dropout_p", 0.5}}},
      {"softmax.int", {F({3, 4}), int64_t(1)}}, {"softmax.functional", {F({3, 4}), int64_t(1)}},
      {"log_softmax.int", {F({3, 4}), int64_t(0), D(f64)}},
      {"log_softmax.functional", {F({3, 4}), int64_t(1)}},
      {"_safe_softmax", {F({3, 4}), int64_t(1)}},
      {"native_layer_norm", {F({3, 4}), V{4}, F({4}), F({4}), 1e-5}},
      {"native_layer_norm_backward", {F({3, 4}), F({3, 4}), V{4}, ln[1], ln[2], F({4}), F({4})}},
      {"layer_norm", {F({2, 3, 4}), V{3, 4}}}, {"rms_norm", {F({3, 4}), V{4}, F({4})}},
      {"normalize", {F({3, 4})}}, {"cosine_similarity", {F({3, 4}), F({4})}},
      {"_thnn_fused_lstm_cell", {F({3, 8}), F({3, 8}), F({3, 2}), F({8}), F({8})}},
      {"_thnn_fused_lstm_cell_backward_impl",
       {None{}, F({3, 2}), cx, lstm[1], lstm[2], true}},
      {"_thnn_fused_gru_cell", {F({3, 6}), T({6, 3}), F({3, 2})}},
      {"_thnn_fused_gru_cell_backward", {F({3, 2}), gru[1], false}},
      {"native_dropout", {F({4, 5}), 0.3, true}}, {"dropout", {F({4, 5}), 0.4, true}},
      {"dropout.functional", {F({4, 5}), 0.5}}, {"embedding", {F({10, 3}), L(10, {2, 4})}},
      {"one_hot", {L(5, {3, 4}), int64_t(5)}}, {"nll_loss", {F({4, 5}), L(5, {4})}},
      {"cross_entropy", {F({4, 5}), L(5, {4})}, {{"label_smoothing", 0.1}}},
      {"mse_loss", {F({3, 4}), F({3, 4})}}, {"l1_loss", {F({3, 4}), F({3, 4})}},
      {"smooth_l1_loss", {F({3, 4}), F({3, 4})}}, {"huber_loss", {F({3, 4}), F({3, 4})}},
      {"binary_cross_entropy", {P({3, 4}), P({3, 4})}},
      {"binary_cross_entropy_with_logits", {F({3, 4}), P({3, 4})}},
      {"kl_div", {F({3, 4}), P({3, 4})}}, {"softplus", {F({3, 4})}}, {"leaky_relu", {F({3, 4})}},
      {"leaky_relu.functional", {F({3, 4})}}, {"elu", {F({3, 4})}},
      {"elu.functional", {F({3, 4})}}, {"logsigmoid", {F({3, 4})}}, {"hardtanh", {F({3, 4})}},
      {"hardtanh.functional", {F({3, 4})}}, {"relu6", {F({3, 4})}},
      {"relu6.functional", {F({3, 4})}}, {"glu", {F({3, 4})}},
  };
}

// The ops that reach a stand-in for AOT's tracer while `op` runs on `s`.
std::vector<std::string> decomposed_trace(const OpHandle& op, Stack& s) {
  auto seen = std::make_shared<std::vector<std::string>>();
  constexpr DispatchKey kKey = DispatchKey::TestLayer1;
  Dispatcher::get().register_fallback(kKey, decomp::decompose_or_record(kKey, seen));
  {
    IncludeDispatchKeyGuard on(kKey);
    op.call(s);
  }
  Dispatcher::get().register_fallback(kKey, nullptr);
  return *seen;
}

std::vector<Tensor> tensors_of(const Stack& s) {
  std::vector<Tensor> out;
  for (const IValue& v : s) {
    if (v.is_tensor()) {
      out.push_back(v.to_tensor());
    } else if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list()) out.push_back(t);
    } else {
      out.emplace_back();
    }
  }
  return out;
}

}  // namespace

TEST(CoreOps, EveryOpIsCoreDecomposedOrInPlace) {
  register_all_ops();
  for (const auto& h : Dispatcher::get().ops()) {
    const OpDef* d = h->def();
    if (!d) continue;  // ops registered by tests
    EXPECT_FALSE(d->core && d->decomposition) << h->name() << " is core and decomposes";
    EXPECT_TRUE(d->core || d->decomposition || h->schema().is_inplace())
        << h->name() << " is neither core, decomposed nor in place";
  }
}

// Functionalization turns `op_` into `op`, which must then be core or
// decompose. fill_ and zero_ become copy (copy_'s functional form),
// in-place view ops (t_, squeeze_, ...) are traced as their view op, and an
// in-place composite (random_.to, bernoulli_.Tensor) is traced through: the
// ops its kernel calls are what functionalization sees.
TEST(CoreOps, InPlaceOpsHaveAFunctionalFormThatLowers) {
  register_all_ops();
  const std::set<std::string> special{"fill_", "zero_"};
  EXPECT_TRUE(def_of("copy").core);
  for (const auto& h : Dispatcher::get().ops()) {
    const OpDef* d = h->def();
    if (!d || d->core || !h->schema().is_inplace() || d->category == OpCategory::View ||
        d->composite_implicit)
      continue;
    const std::string& name = h->schema().name;
    if (special.count(name)) continue;
    // Ops that also write arguments other than self (GradScaler's
    // _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_)
    // have no functional form: functionalization refuses such writes, and
    // AOT runs a graph holding one eagerly.
    bool writes_others = false;
    for (size_t i = 1; i < h->schema().args.size(); ++i) writes_others |= h->schema().args[i].is_write;
    if (writes_others) continue;
    std::string base = name.substr(0, name.size() - 1);
    const std::string& ov = h->schema().overload;
    const OpHandle* f = Dispatcher::get().find(ov.empty() ? base : base + "." + ov);
    ASSERT_NE(f, nullptr) << h->name() << " has no functional form";
    EXPECT_TRUE(f->def()->core || f->def()->decomposition)
        << h->name() << ": its functional form " << f->name() << " neither is core nor decomposes";
  }
}

// The ops functionalization and the compiler emit themselves are core:
// copy (for copy_, fill_, zero_), as_strided_scatter (a write into a view),
// and attention as one template op (scaled_dot_product_attention without
// dropout calls it).
TEST(CoreOps, FunctionalizationOutputsAndTemplatesAreCore) {
  register_all_ops();
  for (const char* name : {"copy", "as_strided_scatter", "_scaled_dot_product_attention", "mm",
                           "bmm", "addmm", "baddbmm", "clone", "as_strided"})
    EXPECT_TRUE(def_of(name).core) << name;
  EXPECT_EQ(def_of("_scaled_dot_product_attention").category, OpCategory::Template);
}

// The RNG and uninitialised factories are core and say so (passes must not
// merge or replay them).
TEST(CoreOps, RandomAndUninitializedCoreOpsDeclareIt) {
  register_all_ops();
  for (const char* name : {"rand", "randn", "randint.low", "uniform_", "normal_", "random_.from",
                           "bernoulli_", "randperm", "multinomial"}) {
    EXPECT_TRUE(def_of(name).core) << name;
    EXPECT_EQ(def_of(name).determinism, Determinism::Random) << name;
  }
  for (const char* name : {"empty", "empty_strided"}) {
    EXPECT_TRUE(def_of(name).core) << name;
    EXPECT_EQ(def_of(name).determinism, Determinism::Uninitialized) << name;
  }
}

// Aliases (multiply, less, concat, ...) are names the dispatcher resolves to
// their op: no op of their own, so nothing to classify or decompose.
TEST(CoreOps, AliasesResolveToTheirOp) {
  register_all_ops();
  const Dispatcher& d = Dispatcher::get();
  ASSERT_FALSE(d.aliases().empty());
  for (const auto& [alias, target] : d.aliases()) {
    const auto& ops = d.overloads(alias);
    ASSERT_FALSE(ops.empty()) << alias;
    EXPECT_EQ(&ops, &d.overloads(target)) << alias;
    for (const OpHandle* h : ops) {
      EXPECT_EQ(h->schema().name, target) << alias;
      EXPECT_TRUE(h->def()->core || h->def()->decomposition || h->schema().is_inplace())
          << alias << " names " << h->name();
    }
  }
  EXPECT_EQ(d.find("multiply"), d.find("mul"));
}

TEST(Decompositions, EveryOneEndsInCoreOps) {
  register_all_ops();
  std::set<std::string> covered;
  for (const Sample& sm : samples()) {
    const OpHandle& op = Dispatcher::get().find_or_throw(sm.op);
    ASSERT_TRUE(op.def()->decomposition) << sm.op << " has a sample but no decomposition";
    covered.insert(sm.op);
    Stack fused = stack_of(op, sm);
    op.call(fused);
    Stack s = stack_of(op, sm);
    for (const std::string& n : decomposed_trace(op, s)) {
      const OpDef& d = def_of(n);
      EXPECT_TRUE(d.core || Dispatcher::get().find(n)->schema().is_inplace())
          << sm.op << " decomposes into " << n << ", which is not core";
    }
    // Same outputs: dtypes and shapes (the Python test compares values).
    std::vector<Tensor> want = tensors_of(fused), got = tensors_of(s);
    ASSERT_EQ(got.size(), want.size()) << sm.op;
    for (size_t j = 0; j < want.size(); ++j) {
      ASSERT_EQ(got[j].defined(), want[j].defined()) << sm.op << " output " << j;
      if (!want[j].defined()) continue;
      EXPECT_EQ(got[j].dtype(), want[j].dtype()) << sm.op << " output " << j;
      EXPECT_EQ(got[j].sizes(), want[j].sizes()) << sm.op << " output " << j;
    }
  }
  for (const auto& h : Dispatcher::get().ops()) {
    if (h->def() && h->def()->decomposition) {
      EXPECT_TRUE(covered.count(h->name())) << h->name() << " decomposes but has no sample";
    }
  }
}

// The decompositions raise what the op raises (its meta rule runs first).
TEST(Decompositions, RaiseTheOpsErrors) {
  register_all_ops();
  const OpHandle& gelu = Dispatcher::get().find_or_throw("gelu");
  Stack s{F({2}), std::string("fast")};
  EXPECT_THROW(gelu.def()->decomposition(gelu, s), Error);
  const OpHandle& mm_like = Dispatcher::get().find_or_throw("dot");
  Stack t{F({2}), F({3})};
  EXPECT_THROW(mm_like.def()->decomposition(mm_like, t), Error);
}

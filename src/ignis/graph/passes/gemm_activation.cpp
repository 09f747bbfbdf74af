#include "ignis/graph/passes/gemm_activation.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/interpreter.h"
#include "ignis/graph/passes/dce.h"
#include "ignis/ops/op_def.h"

namespace ignis::graph {

namespace {

// Note [Activations recognised by their values]
// A graph says relu or the tanh GELU in many ways: AOT's decomposition of
// F.gelu(approximate='tanh') (over the product converted to float32 for
// 16-bit products), a hand-written 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x +
// 0.044715 * pow(x, 3)))) (GPT-2 as Hugging Face writes it), relu,
// clamp_min(x, 0), where(x > 0, x, 0). Rather than one pattern per
// spelling, the pass takes the chain of elementwise nodes that ends at a
// node and reads nothing but one product (and Python numbers), evaluates it
// in float64 at sample points, and folds it when it is relu (exactly) or
// the tanh GELU (within float64 rounding: the same formula, written some
// other way). A chain of other values (a GELU with a rounded constant, the
// erf GELU, a scaled relu) does not fold.
constexpr size_t kMaxChain = 24;

std::string op_name(const Node* n) {
  if (!n || n->op() != OpKind::CallFunction || n->target().kind != Target::Kind::Op ||
      n->meta().writes_argument || n->target().impure() || n->target().nondeterministic())
    return {};
  return n->target().op->schema().full_name();
}

const TensorMeta* single_meta(const Node* n) {
  return n->meta().tensors.size() == 1 && !n->meta().tuple_output ? &n->meta().tensors[0]
                                                                   : nullptr;
}

bool gemm_dtype(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::BFloat16 || t == ScalarType::Float16;
}

// An elementwise node of one tensor's elements: a Pointwise op, or a
// `_to_copy` that changes only the dtype (between float types).
bool elementwise(const Node* n) {
  const std::string name = op_name(n);
  if (name.empty()) return false;
  if (name == "_to_copy") {
    if (n->args().size() != 1 || n->kwargs().size() != 1 || n->kwargs()[0].first != "dtype")
      return false;
    const TensorMeta* m = single_meta(n);
    return m && is_floating(m->dtype);
  }
  const OpDef* def = n->target().op->def();
  return def && def->category == OpCategory::Pointwise && single_meta(n);
}

// A constant operand of the chain: a Python number.
bool number(const Value& v) {
  return v.kind() == Value::Kind::Double || v.kind() == Value::Kind::Int ||
         v.kind() == Value::Kind::Bool;
}

// The addmm of CUDA tensors of a GEMM dtype this pass can fold into.
bool foldable_addmm(const Node* a) {
  if (op_name(a) != "addmm") return false;
  const TensorMeta* m = single_meta(a);
  return m && m->device.type == DeviceType::CUDA && gemm_dtype(m->dtype);
}

struct Fold {
  Node* addmm = nullptr;     // the product
  Node* last = nullptr;      // the node whose value is the activation of it
  std::vector<Node*> chain;  // the elementwise nodes from the product to last, in order
  const char* activation = nullptr;
};

// The chain of elementwise nodes ending at `last` whose only tensor input
// is one foldable product, each read by nothing outside it (but `last`);
// false when there is none.
bool chain_of(Node* last, Fold* f) {
  if (!elementwise(last)) return false;
  std::vector<Node*> chain;
  std::unordered_set<Node*> in_chain;
  Node* product = nullptr;
  std::vector<Node*> stack = {last};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (in_chain.count(n)) continue;
    if (!elementwise(n) || chain.size() >= kMaxChain) return false;
    in_chain.insert(n);
    chain.push_back(n);
    auto operand = [&](const Value& v) {
      if (number(v)) return true;
      if (!v.is_node()) return false;
      Node* a = v.to_node();
      if (foldable_addmm(a)) {
        if (product && product != a) return false;
        product = a;
        return true;
      }
      stack.push_back(a);
      return true;
    };
    for (const Value& a : n->args())
      if (!operand(a)) return false;
    for (const auto& [k, v] : n->kwargs())
      if (k != "dtype" && !operand(v)) return false;
  }
  if (!product) return false;
  for (Node* n : chain)
    if (n != last)
      for (Node* u : n->users())
        if (!in_chain.count(u)) return false;
  for (Node* u : product->users())
    if (!in_chain.count(u)) return false;
  const TensorMeta *pm = single_meta(product), *lm = single_meta(last);
  if (lm->dtype != pm->dtype || lm->sizes != pm->sizes) return false;
  // Program order (the graph's), for evaluation.
  std::unordered_map<const Node*, size_t> order;
  size_t i = 0;
  for (Node* n : last->graph()->nodes()) order[n] = i++;
  std::sort(chain.begin(), chain.end(),
            [&](const Node* a, const Node* b) { return order.at(a) < order.at(b); });
  f->addmm = product;
  f->last = last;
  f->chain = std::move(chain);
  return true;
}

// The chain's values at `x` (float64 on the CPU; conversions are the identity).
Tensor evaluate(const Fold& f, const Tensor& x) {
  std::unordered_map<const Node*, Tensor> values;
  auto arg = [&](const Value& v) -> Value {
    if (!v.is_node()) return v;
    return v.to_node() == f.addmm ? Value(x) : Value(values.at(v.to_node()));
  };
  for (Node* n : f.chain) {
    if (op_name(n) == "_to_copy") {
      values[n] = values.count(n->args()[0].to_node()) ? values.at(n->args()[0].to_node()) : x;
      continue;
    }
    std::vector<Value> args;
    for (const Value& a : n->args()) args.push_back(arg(a));
    Kwargs kwargs;
    for (const auto& [k, v] : n->kwargs()) kwargs.emplace_back(k, arg(v));
    Value r = call_op(*n->target().op, args, kwargs);
    if (r.kind() != Value::Kind::Tensor) throw std::runtime_error("not a tensor");
    values[n] = r.to_tensor();
  }
  return values.at(f.last);
}

// The sample points: both signs, across GELU's bend and its tails.
const std::vector<double>& samples() {
  static const std::vector<double> s = [] {
    std::vector<double> v = {0.0, 1e-6, -1e-6, 1e-3, -1e-3, 30.0, -30.0, 1e4, -1e4};
    for (int i = -96; i <= 96; ++i) v.push_back(i / 16.0 + 1.0 / 64);
    return v;
  }();
  return s;
}

// Which activation the chain computes: "relu", "gelu_tanh" or nullptr.
const char* recognise(const Fold& f) {
  const std::vector<double>& xs = samples();
  Tensor x = empty_tensor({int64_t(xs.size())}, ScalarType::Float64, Device());
  std::copy(xs.begin(), xs.end(), static_cast<double*>(x.data_ptr()));
  Tensor y;
  try {
    y = evaluate(f, x);
  } catch (const std::exception&) {
    return nullptr;  // an op that cannot run on float64 CPU samples: not these
  }
  if (y.dtype() != ScalarType::Float64 || y.numel() != x.numel() || !y.is_contiguous())
    return nullptr;
  const double* v = static_cast<const double*>(y.data_ptr());
  bool relu = true, gelu = true;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double a = xs[i];
    relu = relu && v[i] == (a > 0 ? a : 0.0);
    const double g =
        0.5 * a * (1.0 + std::tanh(0.79788456080286535588 * (a + 0.044715 * a * a * a)));
    gelu = gelu && std::abs(v[i] - g) <= 1e-12 * std::max(1.0, std::abs(g));
  }
  return relu ? "relu" : gelu ? "gelu_tanh" : nullptr;
}

bool match(Node* n, Fold* f) {
  if (!chain_of(n, f)) return false;
  f->activation = recognise(*f);
  return f->activation != nullptr;
}

// The folds of g: the longest chain for each product (nodes in reverse
// order, so that a chain's last node is seen before its inner ones).
std::vector<Fold> folds_of(const Graph& g) {
  std::vector<Node*> nodes;
  for (Node* n : g.nodes()) nodes.push_back(n);
  std::vector<Fold> out;
  std::unordered_set<const Node*> taken;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Fold f;
    if (!match(*it, &f) || taken.count(f.addmm)) continue;
    taken.insert(f.addmm);
    out.push_back(std::move(f));
  }
  return out;
}

// A cheap pre-check: a foldable product read by an elementwise node.
bool has_candidate(const Graph& g) {
  for (Node* n : g.nodes())
    if (foldable_addmm(n))
      for (Node* u : n->users())
        if (elementwise(u)) return true;
  return false;
}

}  // namespace

bool has_gemm_activation(const Graph& g) { return has_candidate(g) && !folds_of(g).empty(); }

size_t fold_gemm_activations(Graph& g) {
  if (!has_candidate(g)) return 0;
  std::vector<Fold> folds = folds_of(g);
  if (folds.empty()) return 0;
  static const OpHandle& act = Dispatcher::get().find_or_throw("_addmm_act");
  for (const Fold& fold : folds) {
    g.set_insert_point(fold.last);
    Kwargs kwargs = fold.addmm->kwargs();
    kwargs.emplace_back("activation", Value(std::string(fold.activation)));
    Node* n = g.create_node(OpKind::CallFunction, Target(act), fold.addmm->args(),
                            std::move(kwargs));
    n->meta().tensors = fold.last->meta().tensors;
    n->meta().loc = fold.last->meta().loc;
    fold.last->replace_all_uses_with(n);
  }
  g.set_insert_point(nullptr);
  eliminate_dead_code(g);
  return folds.size();
}

}  // namespace ignis::graph

#include "ignis/graph/passes/gemm_activation.h"

#include <vector>

#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/passes/dce.h"

namespace ignis::graph {

namespace {

// The op a node calls ("addmm", "_to_copy", ...); empty for anything else.
std::string op_name(const Node* n) {
  if (!n || n->op() != OpKind::CallFunction || n->target().kind != Target::Kind::Op ||
      n->meta().writes_argument)
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

// n is `name(args...)` with no keywords, its Node arguments those of
// `nodes` (nullptr: any node, stored back) and its constants `consts`, in
// the order given: `mul(x, 0.5)` is call(n, "mul", {x, nullptr}, {0.5}) with
// the constant after the node. Returns the node arguments.
bool call_of(const Node* n, const char* name, std::initializer_list<const Node*> nodes,
             std::initializer_list<double> consts, std::vector<Node*>* args) {
  if (op_name(n) != name || !n->kwargs().empty() ||
      n->args().size() != nodes.size() + consts.size())
    return false;
  args->clear();
  size_t i = 0;
  for (const Node* want : nodes) {
    const Value& a = n->args()[i++];
    if (!a.is_node() || (want && a.to_node() != want)) return false;
    args->push_back(a.to_node());
  }
  for (double c : consts) {
    const Value& a = n->args()[i++];
    if (a.kind() != Value::Kind::Double || a.to_double() != c) return false;
  }
  return true;
}

bool only_user(const Node* n, const Node* user) {
  return n->users().size() == 1 && n->users()[0] == user;
}

// An addmm this pass can fold an activation into: CUDA tensors of a GEMM
// dtype, used by nothing but `user`.
bool foldable_addmm(const Node* a, const Node* user) {
  if (op_name(a) != "addmm" || !only_user(a, user)) return false;
  const TensorMeta* m = single_meta(a);
  return m && m->device.type == DeviceType::CUDA && gemm_dtype(m->dtype);
}

struct Fold {
  Node* addmm = nullptr;  // the product
  Node* last = nullptr;   // the node whose value the activation's result is
  const char* activation = nullptr;
};

bool match_relu(Node* n, Fold* f) {
  std::vector<Node*> a;
  if (!call_of(n, "relu", {nullptr}, {}, &a) || !foldable_addmm(a[0], n)) return false;
  *f = {a[0], n, "relu"};
  return true;
}

// 0.5 x (1 + tanh(0.7978845608028654 (x + 0.044715 x x x))), as
// decomp::gelu writes it, ending at n (through a conversion back to the
// product's dtype for 16-bit products).
bool match_gelu_tanh(Node* n, Fold* f) {
  constexpr double kA = 0.044715, kK = 0.79788456080286535588;
  std::vector<Node*> a;
  Node* last = n;
  Node* top = n;  // mul(0.5 x, 1 + t)
  if (op_name(n) == "_to_copy") {
    if (n->args().size() != 1 || !n->args()[0].is_node() || n->kwargs().size() != 1 ||
        n->kwargs()[0].first != "dtype")
      return false;
    top = n->args()[0].to_node();
    if (!only_user(top, n)) return false;
  }
  if (!call_of(top, "mul", {nullptr, nullptr}, {}, &a)) return false;
  Node *half = a[0], *one_plus = a[1];
  if (!call_of(half, "mul", {nullptr}, {0.5}, &a) || !only_user(half, top)) return false;
  Node* x = a[0];
  if (!call_of(one_plus, "add", {nullptr}, {1.0}, &a) || !only_user(one_plus, top)) return false;
  Node* t = a[0];
  if (!call_of(t, "tanh", {nullptr}, {}, &a) || !only_user(t, one_plus)) return false;
  Node* scaled = a[0];
  if (!call_of(scaled, "mul", {nullptr}, {kK}, &a) || !only_user(scaled, t)) return false;
  Node* inner = a[0];
  if (!call_of(inner, "add", {x, nullptr}, {}, &a) || !only_user(inner, scaled)) return false;
  Node* cube = a[1];
  if (!call_of(cube, "mul", {nullptr, x}, {}, &a) || !only_user(cube, inner)) return false;
  Node* square = a[0];
  if (!call_of(square, "mul", {nullptr, x}, {}, &a) || !only_user(square, cube)) return false;
  Node* ax = a[0];
  if (!call_of(ax, "mul", {x}, {kA}, &a) || !only_user(ax, square)) return false;
  // x's users are the five above.
  if (x->users().size() != 5) return false;
  for (const Node* u : x->users())
    if (u != half && u != inner && u != cube && u != square && u != ax) return false;
  // x is the product (float32), or the product converted to float32 with
  // the result converted back to the product's dtype.
  const TensorMeta *xm = single_meta(x), *lm = single_meta(last);
  if (!xm || !lm || xm->dtype != ScalarType::Float32) return false;
  Node* product = x;
  if (op_name(x) == "_to_copy") {
    if (last == top || x->args().size() != 1 || !x->args()[0].is_node() ||
        x->kwargs().size() != 1 || x->kwargs()[0].first != "dtype")
      return false;
    product = x->args()[0].to_node();
    if (!foldable_addmm(product, x)) return false;
  } else {
    // The five users of x above are the product's only ones.
    const TensorMeta* m = single_meta(x);
    if (last != top || op_name(x) != "addmm" || !m || m->device.type != DeviceType::CUDA)
      return false;
  }
  if (lm->dtype != single_meta(product)->dtype) return false;
  *f = {product, last, "gelu_tanh"};
  return true;
}

bool match(Node* n, Fold* f) { return match_relu(n, f) || match_gelu_tanh(n, f); }

}  // namespace

bool has_gemm_activation(const Graph& g) {
  Fold f;
  for (Node* n : g.nodes())
    if (match(n, &f)) return true;
  return false;
}

size_t fold_gemm_activations(Graph& g) {
  std::vector<Fold> folds;
  Fold f;
  for (Node* n : g.nodes())
    if (match(n, &f)) folds.push_back(f);
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

#include "ignis/graph/passes/complex_views.h"

#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/passes/dce.h"

namespace ignis::graph {

namespace {

const std::string* op_name(const Node* n) {
  if (n->op() != OpKind::CallFunction || n->target().kind != Target::Kind::Op) return nullptr;
  return &n->target().op->schema().name;
}

// The input of the inner view when `n` is the outer view of a pair.
Node* pair_input(const Node* n) {
  const std::string* outer = op_name(n);
  if (!outer || (*outer != "view_as_real" && *outer != "view_as_complex") ||
      n->args().size() != 1 || !n->args()[0].is_node())
    return nullptr;
  const Node* inner = n->args()[0].to_node();
  const std::string* name = op_name(inner);
  const char* want = *outer == "view_as_real" ? "view_as_complex" : "view_as_real";
  if (!name || *name != want || inner->args().size() != 1 || !inner->args()[0].is_node())
    return nullptr;
  return inner->args()[0].to_node();
}

}  // namespace

bool has_complex_view_pair(const Graph& g) {
  for (const Node* n : g.nodes())
    if (pair_input(n)) return true;
  return false;
}

size_t cancel_complex_views(Graph& g) {
  size_t cancelled = 0;
  for (Node* n : g.node_list()) {
    Node* x = pair_input(n);
    if (!x) continue;
    Node* inner = n->args()[0].to_node();
    n->replace_all_uses_with(Value(x));
    g.erase_node(n);
    if (inner->users().empty() && !has_side_effects(*inner)) g.erase_node(inner);
    ++cancelled;
  }
  return cancelled;
}

}  // namespace ignis::graph

#include "ignis/graph/passes/dce.h"

namespace ignis::graph {

bool has_side_effects(const Node& n) {
  switch (n.op()) {
    case OpKind::Placeholder: case OpKind::Output: case OpKind::Root: return true;
    case OpKind::CallFunction: return n.target().impure() || n.meta().writes_argument;
    // An in-place method (add_) mutates its receiver. Modules may have state.
    case OpKind::CallMethod:
      return (!n.target().name.empty() && n.target().name.back() == '_') ||
             n.meta().writes_argument;
    case OpKind::CallModule: return true;
    case OpKind::GetAttr: return false;
  }
  return true;
}

bool eliminate_dead_code(Graph& g) {
  // Walking backwards erases a whole dead chain in one pass: a node's users
  // come after it, so they are gone by the time it is looked at.
  bool changed = false;
  std::vector<Node*> order = g.node_list();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    if (n->users().empty() && !has_side_effects(*n)) {
      g.erase_node(n);
      changed = true;
    }
  }
  return changed;
}

}  // namespace ignis::graph

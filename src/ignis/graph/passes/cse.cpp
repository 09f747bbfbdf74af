#include "ignis/graph/passes/cse.h"

#include <unordered_map>

#include "ignis/graph/passes/dce.h"
#include "ignis/graph/passes/hash.h"

namespace ignis::graph {

namespace {
bool mergeable(const Node& n) {
  switch (n.op()) {
    case OpKind::CallFunction: case OpKind::CallMethod: case OpKind::GetAttr: break;
    default: return false;
  }
  if (has_side_effects(n) || n.target().nondeterministic()) return false;
  return n.op() != OpKind::CallMethod || !nondeterministic_by_name(n.target().name);
}

bool same_computation(const Node& a, const Node& b) {
  return a.op() == b.op() && a.target() == b.target() && a.args() == b.args() &&
         a.kwargs() == b.kwargs();
}
}  // namespace

size_t eliminate_common_subexpressions(Graph& g) {
  // Buckets by a hash of (op, target, args) with node references spelt by
  // their position; candidates in a bucket are compared exactly.
  std::unordered_map<uint64_t, std::vector<Node*>> seen;
  std::unordered_map<const Node*, int64_t> position;
  size_t removed = 0;
  int64_t i = 0;
  for (Node* n : g.node_list()) {
    position[n] = i++;
    if (!mergeable(*n)) continue;
    uint64_t h = node_hash(*n, position);
    Node* same = nullptr;
    for (Node* c : seen[h])
      if (same_computation(*c, *n)) same = c;
    if (!same) {
      seen[h].push_back(n);
      continue;
    }
    n->replace_all_uses_with(Value(same));
    g.erase_node(n);
    ++removed;
  }
  return removed;
}

}  // namespace ignis::graph

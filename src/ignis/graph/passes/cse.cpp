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

// Equal up to repeats: node references compare by their first equal node.
bool same_computation(const Node& a, const Node& b,
                      const std::unordered_map<const Node*, Node*>& first) {
  if (a.op() != b.op() || !(a.target() == b.target()) || a.args().size() != b.args().size() ||
      a.kwargs().size() != b.kwargs().size())
    return false;
  auto canon = [&](const Value& v) {
    return map_nodes(v, [&](Node* n) {
      auto it = first.find(n);
      return Value(it == first.end() ? n : it->second);
    });
  };
  for (size_t i = 0; i < a.args().size(); ++i)
    if (!(canon(a.args()[i]) == canon(b.args()[i]))) return false;
  for (size_t i = 0; i < a.kwargs().size(); ++i)
    if (a.kwargs()[i].first != b.kwargs()[i].first ||
        !(canon(a.kwargs()[i].second) == canon(b.kwargs()[i].second)))
      return false;
  return true;
}
}  // namespace

size_t merge_repeated(Graph& g, const std::function<bool(const Node&)>& merge) {
  // Buckets by a hash of (op, target, args) with node references spelt by
  // the position of their first equal node; candidates in a bucket are
  // compared exactly.
  std::unordered_map<uint64_t, std::vector<Node*>> seen;
  std::unordered_map<const Node*, int64_t> position;
  std::unordered_map<const Node*, Node*> first;  // a repeat's first equal node
  size_t removed = 0;
  int64_t i = 0;
  for (Node* n : g.node_list()) {
    position[n] = i++;
    if (!mergeable(*n)) continue;
    const uint64_t h = node_hash(*n, position);
    Node* same = nullptr;
    for (Node* c : seen[h])
      if (same_computation(*c, *n, first)) same = c;
    if (!same) {
      seen[h].push_back(n);
      continue;
    }
    if (merge(*n)) {
      n->replace_all_uses_with(Value(same));
      g.erase_node(n);
      ++removed;
    } else {
      first[n] = same;
      position[n] = position[same];
    }
  }
  return removed;
}

size_t eliminate_common_subexpressions(Graph& g) {
  return merge_repeated(g, [](const Node&) { return true; });
}

}  // namespace ignis::graph

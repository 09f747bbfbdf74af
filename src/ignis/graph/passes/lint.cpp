#include "ignis/graph/passes/lint.h"

#include <algorithm>
#include <unordered_set>

#include "ignis/core/error.h"

namespace ignis::graph {

namespace {
bool is_identifier(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
  });
}
}  // namespace

void lint(const Graph& g) {
  std::unordered_set<const Node*> defined;
  std::unordered_set<std::string> names;
  const Node* output = nullptr;
  for (Node* n : g.nodes()) {
    const std::string& name = n->name();
    IGNIS_CHECK(n->graph() == &g, "lint: Node '", name, "' does not belong to this graph");
    IGNIS_CHECK(is_identifier(name), "lint: Node name '", name, "' is not a valid identifier");
    IGNIS_CHECK(names.insert(name).second, "lint: Node name '", name, "' is not unique");
    IGNIS_CHECK(!output, "lint: Node '", name, "' comes after the output node '",
                output ? output->name() : "", "'");
    bool callable = n->op() == OpKind::CallFunction;
    IGNIS_CHECK(callable != n->target().is_name(), "lint: Node '", name, "' (",
                op_kind_name(n->op()), ") has a target of the wrong kind: ",
                n->target().identity());
    auto check_arg = [&](Node* a) {
      IGNIS_CHECK(!a->erased(), "lint: Argument '", a->name(), "' of Node '", name,
                  "' was erased from the graph");
      IGNIS_CHECK(a->graph() == &g, "lint: Argument '", a->name(), "' of Node '", name,
                  "' does not belong to this Graph, but was used as an argument!");
      IGNIS_CHECK(defined.count(a), "lint: Argument '", a->name(), "' of Node '", name,
                  "' was used before it has been defined! Please check that Nodes in the graph "
                  "are topologically ordered");
      const auto& u = a->users();
      IGNIS_CHECK(std::find(u.begin(), u.end(), n) != u.end(), "lint: Node '", name,
                  "' uses '", a->name(), "' but is missing from its users");
    };
    for (const Value& v : n->args()) for_each_node(v, check_arg);
    for (const auto& kv : n->kwargs()) for_each_node(kv.second, check_arg);
    for (Node* u : n->users()) {
      const auto& in = u->input_nodes();
      IGNIS_CHECK(std::find(in.begin(), in.end(), n) != in.end(), "lint: Node '", name,
                  "' lists user '", u->name(), "' that does not use it");
    }
    if (n->op() == OpKind::Output) output = n;
    defined.insert(n);
  }
  IGNIS_CHECK(output, "lint: the graph has no output node");
}

}  // namespace ignis::graph

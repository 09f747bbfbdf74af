// Graph: an ordered list of Nodes, and the API that builds and edits it.
//
// Building mirrors torch.fx:
//   Graph g;
//   Node* x = g.placeholder("x");
//   Node* y = g.call_function(add_op, {x, 2.0});
//   g.output(Value::tuple({y}));
// New nodes go at the insertion point (the end, unless set_insert_point
// moved it). Names are unique per graph and follow torch.fx's rules (a
// candidate from the target, "_N" suffixes, no Python keywords/builtins).
//
// Ownership: the graph holds a reference on each live node; args hold
// references on the nodes they use; users are plain back pointers (a node is
// in u's users exactly while u's args use it). Erasing a node (it must have
// no users) unlinks it and clears its args.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ignis/graph/node.h"

namespace ignis::graph {

// Unique Python identifiers, by torch.fx's _Namespace rules: illegal
// characters become "_", a "_N" suffix is bumped until the name is free, and
// reserved names (keywords, builtins) are never produced.
class Namespace {
 public:
  std::string create(const std::string& candidate);
  bool used(const std::string& name) const { return used_.count(name) != 0; }

 private:
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int64_t> base_count_;
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // --- building -------------------------------------------------------------
  // `name` empty: derived from the target.
  Node* create_node(OpKind op, Target target, std::vector<Value> args = {}, Kwargs kwargs = {},
                    const std::string& name = "");
  Node* placeholder(const std::string& name);
  Node* get_attr(const std::string& path);
  Node* call_function(Target fn, std::vector<Value> args = {}, Kwargs kwargs = {});
  Node* call_method(const std::string& method, std::vector<Value> args = {}, Kwargs kwargs = {});
  Node* call_module(const std::string& path, std::vector<Value> args = {}, Kwargs kwargs = {});
  Node* output(Value result);

  // New nodes go before `n` (nullptr: at the end).
  void set_insert_point(Node* before) { insert_before_ = before ? before : root_; }
  Node* insert_point() const { return insert_before_ == root_ ? nullptr : insert_before_; }

  // Removes a node with no users; throws naming the node otherwise.
  void erase_node(Node* n);

  // --- queries --------------------------------------------------------------
  // Iteration in execution order: for (Node* n : g.nodes()) ...
  class Iter {
   public:
    Iter(Node* n, bool rev) : n_(n), rev_(rev) {}
    Node* operator*() const { return n_; }
    Iter& operator++() {
      n_ = rev_ ? n_->prev() : n_->next();
      return *this;
    }
    bool operator!=(const Iter& o) const { return n_ != o.n_; }

   private:
    Node* n_;
    bool rev_;
  };
  struct Range {
    Node* root;
    bool rev;
    Iter begin() const { return Iter(rev ? root->prev() : root->next(), rev); }
    Iter end() const { return Iter(root, rev); }
  };
  Range nodes() const { return Range{root_, false}; }
  Range reversed() const { return Range{root_, true}; }
  std::vector<Node*> node_list() const;
  size_t size() const { return size_; }
  Node* find(const std::string& name) const;
  Node* output_node() const;  // null when there is none
  std::vector<Node*> placeholders() const;

  // --- naming ---------------------------------------------------------------
  // A unique name derived from `candidate` (torch.fx's _Namespace rules).
  std::string unique_name(const std::string& candidate) { return names_.create(candidate); }
  // Names that nodes may not take (Python keywords and builtins, plus the
  // names generated code needs: "ignis", "inf", ...). The binding layer adds
  // the exact lists of the running Python at import.
  static std::unordered_set<std::string>& reserved_names();

  // Copies the nodes of `other` before the insertion point; placeholders of
  // `other` map to `inputs` when given (one per placeholder) or are copied.
  // Returns the value of other's output (mapped), or None.
  Value copy_from(const Graph& other, const std::vector<Value>* inputs = nullptr);

  // The binding layer's wrapper of this graph (borrowed; null when none).
  void* pyobj = nullptr;

 private:
  friend class Node;
  void insert(Node* n);

  Node* root_;  // sentinel of the circular list
  Node* insert_before_;
  size_t size_ = 0;
  Namespace names_;
};

}  // namespace ignis::graph

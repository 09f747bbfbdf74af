// Proxy tracing through the dispatcher: the ops that reach the ProxyTrace
// key are recorded into a graph::Graph.
//
// A Tracer owns the graph being built and the binding of each fake tensor
// to the graph value that computes it. While a TracingGuard is alive the
// ProxyTrace key (and, with functionalization on, the Functionalize key) is
// in the thread's included keys, so every op on any tensor reaches the
// tracer after autograd, functionalization and composite decomposition have
// run above it (Note [Dispatch key order]). The fallback:
//   1. decomposes the op when it declares a decomposition and the policy
//      does not keep it whole (the parts come back through the dispatcher);
//   2. otherwise records a call_function node whose args are the graph
//      values of the tensor arguments and the constants of the others
//      (kwarg-only arguments as kwargs; trailing defaults dropped), runs the
//      op below (fake tensors compute metadata only), binds the outputs and
//      stores each node's TensorMeta (torch's meta["val"]).
// Nested calls made by the kernels below are not recorded.
//
// Functionalization (Note [Functionalization over fake storages],
// functionalize.cpp) shares the tracer's state: fakes keep the aliasing of
// the real tensors, so a mutation is recorded as the functional op plus a
// new value for the mutated storage, and a tensor whose storage changed
// after its node was recorded is regenerated from the storage's value.
#pragma once

#include <functional>
#include <unordered_map>

#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/graph.h"

namespace ignis::aot {

class Tracer {
 public:
  // Whether an op with a declared decomposition is decomposed (default:
  // always).
  using DecomposePolicy = std::function<bool(const OpHandle&)>;

  explicit Tracer(graph::Graph& g, bool functionalize = true);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  graph::Graph& graph() { return g_; }
  bool functionalize() const { return functionalize_; }
  DecomposePolicy decompose;

  // Binds t to node n (placeholders, recorded outputs). t's storage gets n
  // as its root value when t covers the storage exactly.
  void bind(const Tensor& t, graph::Node* n);
  // The graph value of t: its node (regenerated when its storage was
  // mutated since); for a real tensor met in the trace, a get_attr of a
  // constant `_tensor_constantN` (a wrapped number becomes a Python scalar).
  // Throws for a fake tensor that this trace did not produce.
  graph::Value value_of(const Tensor& t);
  graph::Node* node_of(const Tensor& t);

  // --- functionalization state ------------------------------------------
  // Records that `self` (a tensor whose data an in-place op wrote) now
  // holds the value `result` computes (same sizes as self).
  void write(const Tensor& self, const Tensor& result);
  // Storages written during the trace.
  bool written(const Tensor& t) const;

  // The real tensors the graph reads through get_attr, by attribute name.
  const std::vector<std::pair<std::string, Tensor>>& constants() const { return constants_; }
  // The get_attr node of a real tensor (made on first use).
  graph::Node* constant(const Tensor& t);

  // Records a call of `op` with the given stack (before the call) as a node;
  // used by the fallback and by functionalization's replays.
  graph::Node* record(const OpHandle& op, const Stack& args);
  // Binds the outputs on `results` to node n (getitem nodes for tuples).
  void bind_results(const OpHandle& op, graph::Node* n, const Stack& results);

 private:
  struct Binding {
    Tensor keep;  // keeps the impl alive so that its address is not reused
    graph::NodePtr node;
    uint64_t generation;  // of its storage when bound
  };
  struct StorageState {
    graph::NodePtr root;  // a node whose tensor covers the storage exactly
    Tensor root_tensor;
    uint64_t generation = 0;  // bumped on every write
    bool written = false;
  };
  StorageState& state_of(const Tensor& t);

  graph::Graph& g_;
  bool functionalize_;
  std::unordered_map<const TensorImpl*, Binding> bound_;
  std::unordered_map<const StorageImpl*, StorageState> storages_;
  std::vector<Storage> keep_storages_;
  std::vector<std::pair<std::string, Tensor>> constants_;
};

// While alive: `t` receives the ops of this thread.
class TracingGuard {
 public:
  explicit TracingGuard(Tracer& t);
  ~TracingGuard();
  TracingGuard(const TracingGuard&) = delete;
  TracingGuard& operator=(const TracingGuard&) = delete;

 private:
  Tracer* prev_;
  DispatchKeySet prev_included_;
};

Tracer* active_tracer();

// Registers the ProxyTrace and Functionalize fallbacks (and the FakeTensor
// one); idempotent.
void register_tracing_kernels();

}  // namespace ignis::aot

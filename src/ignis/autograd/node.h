// Backward graph: Node (one backward function), Edge (where its results go)
// and SavedVariable (a tensor kept for backward, checked against in-place
// writes by its version counter).
//
// A node's inputs are the gradients of the forward op's outputs (input_nr =
// output index); its outputs are the gradients of the forward op's
// differentiable inputs, which flow along next_edges() (one per input slot;
// an invalid edge for inputs that need no gradient).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ignis/core/tensor.h"

namespace ignis::autograd {

// What gradients flow through: floating and complex tensors (torch's
// isDifferentiableType; complex ones through real views, ops/complex.cpp).
inline bool is_differentiable_type(ScalarType t) { return is_floating(t) || is_complex(t); }


class Node;
struct AutogradMeta;
using tensor_list = std::vector<Tensor>;

// A tensor hook: sees the gradient computed for a tensor and may replace it
// (an undefined result keeps it).
struct TensorHook {
  int64_t id;
  std::function<Tensor(const Tensor&)> fn;
};

struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// Shape, dtype and device of one forward output: the engine fills a zero
// gradient from it when a backward input receives none.
struct TensorGeom {
  DimVector sizes;
  ScalarType dtype = ScalarType::Float32;
  Device device;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // PyTorch-style name, e.g. "MulBackward0".
  virtual std::string name() const = 0;
  // Gradients of the inputs (one per next edge) from those of the outputs.
  virtual tensor_list apply(tensor_list&& grads) = 0;
  // Drops saved tensors after a backward without retain_graph.
  virtual void release_variables() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::vector<Edge>& mutable_next_edges() { return next_edges_; }
  // Creation order: the engine runs ready nodes newest first.
  uint64_t sequence_nr() const { return seq_; }

  // Forward outputs this node is the grad_fn of, by output_nr.
  const std::vector<TensorGeom>& input_geom() const { return input_geom_; }
  uint32_t add_input_geom(const Tensor& t);

  // Non-leaf tensors with retain_grad(): the engine stores the gradient that
  // arrives at input_nr into their .grad.
  std::vector<std::pair<uint32_t, AutogradMeta*>>& retained() { return retained_; }
  // Hooks of non-leaf tensors, by the input_nr their gradient arrives at.
  std::vector<std::pair<uint32_t, TensorHook>>& pre_hooks() { return pre_hooks_; }

 protected:
  std::vector<Edge> next_edges_;
  std::vector<TensorGeom> input_geom_;
  std::vector<std::pair<uint32_t, AutogradMeta*>> retained_;
  std::vector<std::pair<uint32_t, TensorHook>> pre_hooks_;
  uint64_t seq_;
};

// Note [Saved-tensor hooks]
// saved_tensors_hooks(pack, unpack) (torch.autograd.graph): while a pair is
// installed on a thread, each tensor a backward node saves is handed to
// pack, and only what pack returns is kept; the backward gets unpack(that)
// back. Activation checkpointing keeps nothing and recomputes the forward
// on the first unpack; offloading keeps a CPU copy. An output is packed
// detached (its history would be a cycle through the node) and gets its
// history back when unpacked, as one kept in place does. The version check
// of a packed tensor is its hooks' business (torch checks none either).
class SavedTensorHooks {
 public:
  virtual ~SavedTensorHooks() = default;
  virtual std::shared_ptr<void> pack(const Tensor& t) = 0;
  virtual Tensor unpack(const std::shared_ptr<void>& packed) = 0;
};

// Installs `hooks` on this thread until the guard ends; nullptr installs
// none (the AOT trace's own saving must not reach a user's hooks).
class SavedTensorHooksGuard {
 public:
  explicit SavedTensorHooksGuard(std::shared_ptr<SavedTensorHooks> hooks);
  ~SavedTensorHooksGuard();
  SavedTensorHooksGuard(const SavedTensorHooksGuard&) = delete;
  SavedTensorHooksGuard& operator=(const SavedTensorHooksGuard&) = delete;

 private:
  std::shared_ptr<SavedTensorHooks> previous_;
};
// The hooks installed on this thread (nullptr: none).
const std::shared_ptr<SavedTensorHooks>& current_saved_tensor_hooks();

// A tensor saved for backward. Inputs are kept as they are; outputs are kept
// as a shallow copy without autograd state (keeping the output itself would
// make a cycle node -> output -> grad_fn == node) and get their history back
// when unpacked. Under saved-tensor hooks, the packed form is kept instead.
class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output);
  bool was_defined() const { return was_defined_; }
  // The tensor; RuntimeError when it was freed by an earlier backward or
  // (with check_version) modified in place since it was saved. `owner` is
  // the node that saved it.
  Tensor unpack(const std::shared_ptr<Node>& owner, const char* what,
                bool check_version = true) const;
  // RuntimeError when the tensor was modified in place since it was saved.
  void check_version(const std::shared_ptr<Node>& owner, const char* what) const;
  void reset() {
    data_ = Tensor();
    packed_.reset();
  }

 private:
  Tensor data_;
  std::shared_ptr<SavedTensorHooks> hooks_;  // set when packed
  std::shared_ptr<void> packed_;
  uint64_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool was_defined_ = false;
};

// Drops a reference to a node without recursion: a long chain of nodes (a
// loop of a million ops) is freed iteratively instead of one destructor
// calling the next until the stack overflows.
void release_node(std::shared_ptr<Node>&& n);

// The message of the error a second backward through a freed graph raises.
extern const char* const kFreedGraphMessage;

}  // namespace ignis::autograd

// The backward engine: runs the graph of nodes reachable from some roots,
// each once all the gradients flowing into it have arrived (dependency
// counting; ready nodes run newest first), summing gradients that meet.
#pragma once

#include "ignis/autograd/node.h"

namespace ignis::autograd {

struct BackwardOptions {
  bool keep_graph = false;    // retain_graph: keep saved tensors for another backward
  bool create_graph = false;  // record the backward ops (higher-order gradients)
  bool allow_unused = false;  // grad(): an input the outputs do not depend on gives None
};

// tensor.backward(): accumulates into the .grad of the leaves. `grads` has
// one entry per output (undefined: ones for a 1-element output).
void backward(const tensor_list& outputs, const tensor_list& grads, const BackwardOptions& opt);

// autograd.grad(): returns the gradients of `inputs` (nothing accumulated).
tensor_list grad(const tensor_list& outputs, const tensor_list& grads, const tensor_list& inputs,
                 const BackwardOptions& opt);

// grad() into gradient edges taken earlier: the AOT trace takes its inputs'
// edges before the traced function runs, because a view input's edge changes
// when its base is written in place (a stale view regenerates its history),
// while the ops that read it before the write recorded the edge it had then.
tensor_list grad(const tensor_list& outputs, const tensor_list& grads,
                 const std::vector<Edge>& input_edges, const BackwardOptions& opt);

// Sees every saved tensor a backward node's formula reads (checks the
// version of) on this thread, with the gradients the node was called with. The AOT trace records with it which
// inputs and outputs eager's formulas save, and which gradients reach the
// nodes that read them (Note [Saving what eager saves], aot/partition.cpp).
class SavedTensorObserver {
 public:
  virtual ~SavedTensorObserver() = default;
  virtual void checked(const Tensor& saved, const tensor_list& node_grads) = 0;
  // Every node the engine ran: the gradients it ran with and those it gave.
  virtual void applied(const tensor_list& node_grads, const tensor_list& results) {
    (void)node_grads;
    (void)results;
  }
};

// Installs an observer on this thread for the guard's lifetime.
class ObserveSavedTensors {
 public:
  explicit ObserveSavedTensors(SavedTensorObserver* o);
  ~ObserveSavedTensors();
  ObserveSavedTensors(const ObserveSavedTensors&) = delete;
  ObserveSavedTensors& operator=(const ObserveSavedTensors&) = delete;

 private:
  SavedTensorObserver* previous_;
};

// Called by SavedVariable::check_version: tells the observer, if any.
void notify_checked(const Tensor& saved);

}  // namespace ignis::autograd

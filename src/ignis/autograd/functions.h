// The backward nodes: AccumulateGrad (leaves), OpNode (an op's declared
// derivative formula) and NotImplementedNode (an op without one).
#pragma once

#include "ignis/autograd/node.h"
#include "ignis/dispatch/dispatcher.h"

namespace ignis::autograd {

// Adds the incoming gradient into a leaf's .grad.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {}
  std::string name() const override { return "AccumulateGrad"; }
  tensor_list apply(tensor_list&& grads) override;
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

// Backward of one call of an op with a declared derivative. Its next edges
// are the op's tensor inputs in order (one per tensor of a Tensor[]).
class OpNode : public Node {
 public:
  OpNode(const OpHandle& op, std::string name) : op_(op), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  tensor_list apply(tensor_list&& grads) override;
  void release_variables() override;

  // Filled by the autograd kernel at forward time.
  Stack args;  // non-tensor arguments; tensor arguments are None here
  std::vector<std::vector<SavedVariable>> saved_in;  // per argument
  std::vector<std::vector<TensorGeom>> geom;         // per argument
  std::vector<SavedVariable> saved_out;              // per output
  std::vector<int> first_slot;                       // per argument: its first next edge
  uint64_t needs = 0;

 private:
  const OpHandle& op_;
  std::string name_;
  bool released_ = false;
};

// Recorded for an op without a derivative whose inputs require grad: fails
// at backward, naming the op.
class NotImplementedNode : public Node {
 public:
  explicit NotImplementedNode(std::string op) : op_(std::move(op)) {}
  std::string name() const override { return "NotImplemented"; }
  tensor_list apply(tensor_list&& grads) override;

 private:
  std::string op_;
};

// "MulBackward0" from "mul" (in-place and private underscores dropped).
std::string backward_name(const OpHandle& op);

}  // namespace ignis::autograd

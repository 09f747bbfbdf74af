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

// The grad_fn of values that may not be differentiated again (torch's
// DelayedError): the gradients a backward computed without recording its
// ops, under create_graph. Fails with `message` only if a later backward
// reaches it, so a create_graph=True whose result is only read costs nothing.
class DelayedErrorNode : public Node {
 public:
  DelayedErrorNode(std::string name, std::string message)
      : name_(std::move(name)), message_(std::move(message)) {}
  std::string name() const override { return name_; }
  tensor_list apply(tensor_list&& grads) override;

 private:
  std::string name_, message_;
};

// Where a view sits in its base's storage.
struct ViewGeom {
  DimVector sizes, strides;
  int64_t offset = 0;  // relative to the base's storage offset
};
struct BaseGeom {
  DimVector sizes, strides;
  ScalarType dtype = ScalarType::Float32;
  Device device;
};

// The grad_fn a base gets when one of its views is modified in place
// (PyTorch's CopySlices): the base's gradient passes through unchanged except
// in the view's region, where the in-place op's backward (`fn`) maps it to
// the view's old value and to the op's other inputs. Next edges: the base's
// previous history, then fn's edges for the op's other inputs.
class CopySlices : public Node {
 public:
  CopySlices(BaseGeom base, ViewGeom view, std::shared_ptr<Node> fn)
      : base_(std::move(base)), view_(std::move(view)), fn_(std::move(fn)) {}
  ~CopySlices() override { release_node(std::move(fn_)); }
  std::string name() const override { return "CopySlices"; }
  tensor_list apply(tensor_list&& grads) override;
  void release_variables() override { fn_->release_variables(); }

 private:
  BaseGeom base_;
  ViewGeom view_;
  std::shared_ptr<Node> fn_;
};

// The grad_fn of a view after an in-place op on it: the view is re-read
// from its base (as_strided), so its gradient lands in the view's region of
// a zero gradient for the base.
class AsStridedBackward : public Node {
 public:
  AsStridedBackward(BaseGeom base, ViewGeom view)
      : base_(std::move(base)), view_(std::move(view)) {}
  std::string name() const override { return "AsStridedBackward0"; }
  tensor_list apply(tensor_list&& grads) override;

 private:
  BaseGeom base_;
  ViewGeom view_;
};

// "MulBackward0" from "mul" (in-place and private underscores dropped).
std::string backward_name(const OpHandle& op);

}  // namespace ignis::autograd

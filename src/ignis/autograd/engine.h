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

}  // namespace ignis::autograd

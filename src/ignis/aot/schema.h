// What AOT tracing hands on: the traced graph and the facts about its
// inputs and outputs that the runtime wrapper needs (torch's
// ViewAndMutationMeta, reduced to what ignis tracks so far).
//
// Execution of a traced graph, in order:
//   1. the forward reads its inputs (primals_1..N, or arg0_1.. for an
//      inference graph);
//   2. it computes the outputs functionally: no op in the graph mutates
//      anything except the final write-backs;
//   3. it ends with one copy_(input, new_value) per mutated input (a module
//      buffer such as BatchNorm's running mean), so the caller sees eager's
//      mutations -- except, in a joint graph, a write whose new value has
//      autograd history (`buf.add_(w)` with w requiring grad): that new
//      value is an extra output after the function's own, and the runtime
//      writes it into the input with an autograd-visible copy_ after the
//      graph, so that the input joins the graph's history as eager's
//      in-place op makes it (torch's mutated-input outputs);
//   4. a joint graph also reads tangents_1..M, one per output that has one
//      (OutputInfo::requires_grad), and returns the gradients of the
//      primals after the outputs.
//
// An output that views an input's storage is, in a joint graph, made again
// by the runtime as the same kind of alias of that input as in the trace
// (AliasKind; as_strided with the output's geometry), so that in-place ops
// on an autograd view reach the input's history as on eager's view; it has
// no tangent (its gradient flows through the input's own history). Whether
// it requires grad is not fixed by the trace: a view of an input that
// requires no grad yet still follows it, so a later write with grad data
// (here or after the graph) makes it require grad. A view that overlaps
// itself (a broadcast dimension), or of such an input, stays an output of
// the compiled node with a tangent.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ignis/graph/graph.h"

namespace ignis::aot {

// How the traced function returned its tensors.
enum class OutputKind : uint8_t {
  Single,  // one tensor
  Tuple,   // a tuple of tensors (Dynamo's graphs always return one)
  List,    // a list of tensors
  Nested,  // make_fx only: any nesting of tuples/lists; the output node keeps it
};

// What an output viewing an input is to autograd, in the trace (joint graphs):
// the runtime remakes it as the same kind of alias of the real input.
enum class AliasKind : uint8_t {
  None,        // no autograd view (detach(), or not a view of the input)
  View,        // a view made with grad mode on: its requires_grad and history
               // follow the input's, then and after later writes to it
  NoGradView,  // a view made under no_grad (Note [No-grad views],
               // autograd_meta.cpp): requires grad when the input does
  Same,        // the input itself (x.float() of a float x, x.to(x.dtype)): the
               // runtime returns the input's own tensor (fuzz seed 740872)
};

struct InputInfo {
  bool requires_grad = false;  // a joint graph returns its gradient
  bool mutated = false;        // its data is written: the forward ends with copy_ into it
  // The same tensor was passed at this earlier position: the graph reads
  // that placeholder only (this one gets no gradient), and the runtime must
  // check that the two arguments are still one tensor. -1: not a duplicate.
  int duplicate_of = -1;
};

struct OutputInfo {
  bool requires_grad = false;  // it has a tangent in the joint graph
  int aliased_input = -1;      // the input whose storage it views, or -1
  // For an output viewing an input in a joint graph: which kind of alias of
  // it the trace's output is (the runtime makes the same kind).
  AliasKind alias_kind = AliasKind::None;
  // This output is the new value of that input (a write with autograd
  // history, step 3 above), or -1.
  int mutated_input = -1;
  // A joint graph's output that is an autograd view of another of its
  // outputs (t3 = t2.t() returned beside t2): the output it views, or -1.
  // Like a view of an input it has no tangent, and the runtime remakes it as
  // that kind of view (alias_kind) of the other output, so that a later
  // write into t2 rebases t3's history as eager's autograd does.
  int aliased_output = -1;
  // A view of an input (remade by the runtime) whose input the function
  // wrote after making it: eager's view is stale then (its history is
  // regenerated from the base's when next used, and a no-grad view refuses
  // that), so the runtime makes it before the graph's writes, with this
  // geometry (a view made after them would be fresh).
  bool made_before_write = false;
  // A joint graph's output that is a no-grad view (Note [No-grad views]) of
  // a value that is neither an input nor an output: the runtime returns it as
  // a no-grad view of the node's output, so that it requires grad, takes no
  // gradient, and refuses an in-place op with grad mode on, as eager's does.
  bool no_grad_view = false;
  // Such a no-grad view whose base the graph wrote after making it: eager's
  // is stale, and refuses to give its history when next read (fuzz seed
  // 500341); the runtime marks the one it returns stale too.
  bool stale_no_grad_view = false;
  // Not one of the function's outputs: the intermediate that two or more of
  // them view (t10 = t7.unsqueeze(0), w = t10[:, :], t7 not returned). The
  // graph returns it after the function's outputs, and the runtime remakes
  // those views from it (aliased_output), so that a write through one of
  // them later rebases the others' history, as eager's views of t7 do
  // (torch's outputs aliasing an intermediate).
  bool intermediate_base = false;
  std::vector<int64_t> view_sizes, view_strides;
  int64_t view_offset = 0;
};

// A tensor eager's formulas save that the program holds: input `index`
// (index < number of inputs) or output `index - inputs`, read by a backward
// node that ran with gradients computed from `tangents` (positions among the
// tangent placeholders). They are resolved on the whole trace, before dead
// code goes: a reader whose gradient ends in zeros (fill_'s derivative)
// leaves the graph, but eager runs it, and checks the version then (fuzz
// seed 374742).
struct EagerSaved {
  int index = -1;
  std::vector<int> tangents;
};

struct TracedGraph {
  // Joint: placeholders primals_1..N, tangents_1..M; output
  // (fw_out_1..K, grad_primals_1..N) with None for inputs that get no grad.
  // Inference: placeholders arg0_1..; output (out_1..K).
  std::unique_ptr<graph::Graph> graph;
  bool joint = false;
  std::vector<InputInfo> inputs;    // one per input
  std::vector<OutputInfo> outputs;  // one per forward output (K entries)
  OutputKind output_kind = OutputKind::Tuple;
  // Real tensors the graph reads with get_attr (attribute name, tensor).
  std::vector<std::pair<std::string, Tensor>> constants;
  // Joint: what eager's formulas save of the inputs and outputs.
  std::vector<EagerSaved> eager_saved;
  size_t num_tangents() const {
    size_t m = 0;
    for (const OutputInfo& o : outputs) m += o.requires_grad;
    return m;
  }
};

}  // namespace ignis::aot

// The AOT stage (AOTAutograd's role): a function over tensors -- a captured
// graph run by the interpreter, or any callable -- is traced through the
// dispatcher on fake tensors into a graph of core ops: functional, with
// decompositions applied, and joint with its backward when an input
// requires grad. Partitioners (partition.h) then split a joint graph.
//
// trace() reads top to bottom:
//   1. fakes for the inputs (FakeTensorMode, or the real tensors themselves
//      for tracing_mode="real"), bound to placeholders;
//   2. the function runs with the ProxyTrace and Functionalize keys
//      included (trace.h), grad mode on when a joint graph is wanted;
//   3. mutated inputs get their one copy_ each (or, joint, an output for
//      a write with autograd history: schema.h);
//   4. joint: tangent placeholders, then autograd's backward runs under the
//      same tracer, so its formulas are recorded (and decomposed) too;
//   5. the output node; joint: a backward formula's repeats of forward
//      reductions and GEMMs merged with them; dead-code elimination, lint.
#pragma once

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "ignis/aot/schema.h"

namespace ignis::aot {

struct AotOptions {
  bool fake = true;           // false: trace on the real inputs (make_fx "real")
  bool functionalize = true;  // false: in-place ops are recorded as they are
  bool decompose = true;      // apply declared decompositions...
  // ...except to these ops, which the backend keeps whole (full names,
  // "gelu" or "mm"; a base name keeps every overload).
  std::unordered_set<std::string> keep;
  // When set, only these ops are decomposed (make_fx's decomposition_table).
  bool only_listed = false;
  std::unordered_set<std::string> only;
  // Joint graph when grad mode is on and an input requires grad; `inference`
  // forces an inference graph.
  bool inference = false;
  // The function switches grad mode on itself (a captured graph entered
  // inside `with no_grad()` that leaves the block): joint when an input
  // requires grad even though grad mode is off; the function starts in the
  // caller's mode either way.
  bool enables_grad = false;
  // make_fx: no joint graph; grad mode and requires_grad stay as they are
  // (a backward the function runs itself is traced), and the output node
  // returns what the function returned (a tensor, tuple or list), not
  // always a tuple.
  bool as_is = false;
};

using TraceFn = std::function<graph::Value(const std::vector<graph::Value>& inputs)>;

// Traces fn on `inputs` (tensors only: a value that is not a tensor would be
// baked into the graph without a guard). Throws when fn returns something other than a
// tensor or a flat tuple/list of tensors, or when an op cannot run on fake
// tensors (data-dependent ops such as .item()).
TracedGraph trace(const TraceFn& fn, const std::vector<graph::Value>& inputs,
                  const AotOptions& options = {});

// trace() of a graph run by the interpreter (root: the module object that
// get_attr/call_module nodes read, for the embedding layer).
TracedGraph trace_graph(const graph::Graph& g, const std::vector<graph::Value>& inputs,
                        const graph::Value& root, const AotOptions& options = {});

}  // namespace ignis::aot

// Runs a graph eagerly on real values.
//
// Dispatcher ops (Op targets, and call_method on tensors whose method name
// is an ignis op) run here, through the dispatcher. Everything that belongs
// to the embedding layer -- foreign callables, methods of foreign objects,
// call_module and get_attr on the root module -- goes through the foreign
// hook, which the Python binding installs at import. Values are freed after
// their last use, as in the generated code.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ignis/dispatch/ivalue.h"
#include "ignis/graph/graph.h"

namespace ignis::graph {

// Runs node `n` (its args/kwargs already evaluated) on the embedding side.
// `root` is the module object given to interpret() (None when there is
// none).
using ForeignHook = std::function<Value(const Node& n, const std::vector<Value>& args,
                                        const Kwargs& kwargs, const Value& root)>;
ForeignHook& foreign_hook();

// Evaluates `g` with one input per placeholder (a placeholder with a
// default may be left out) and returns the value of its output.
// `on_result`, when given, sees each node's value as it is computed.
using ResultFn = std::function<void(Node& n, const Value& result)>;
Value interpret(const Graph& g, const std::vector<Value>& inputs, const Value& root = Value(),
                const ResultFn& on_result = nullptr);

// Runs `g` and records in each node's meta the TensorMeta of the tensor (or
// tuple/list of tensors) it produced -- torch.fx's ShapeProp.
Value record_tensor_meta(Graph& g, const std::vector<Value>& inputs, const Value& root = Value());

// A boxed argument or result as a graph value. Tensors become `tensor(t)`
// (default: the tensor itself); int/float/tensor lists become lists, or
// tuples when `lists` is false (how results are returned).
using TensorToValue = std::function<Value(const Tensor&)>;
Value from_ivalue(const IValue& v, const TensorToValue& tensor = nullptr, bool lists = false);

// Calls one dispatcher op with graph values; throws a TypeError naming the
// op when the values do not fit its schema.
Value call_op(const OpHandle& op, const std::vector<Value>& args, const Kwargs& kwargs);
// Calls the first overload of `name` ("add") whose schema fits; throws a
// TypeError listing the overloads when none does. False-y `found` (when
// given) instead of throwing when no op has that name.
Value call_op_by_name(const std::string& name, const std::vector<Value>& args,
                      const Kwargs& kwargs, bool* found = nullptr);

}  // namespace ignis::graph

// Text forms of a graph, matching torch.fx character for character:
//   tabular()      -- Graph.print_tabular(): tabulate's "simple" table of
//                     opcode, name, target, args, kwargs;
//   graph_str()    -- str(graph): "graph():\n    %x : [num_users=1] = ...";
//   python_code()  -- GraphModule.code: a `def forward(self, ...)` with one
//                     statement per node and "a = b = None" after last uses.
// Values print as Python's repr() would print the corresponding objects.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ignis/graph/graph.h"

namespace ignis::graph {

// Python repr() of a float: shortest round-trip digits, "2.0", "1e-05", "inf".
std::string py_float_repr(double d);
// Python repr() of a str: '...' (or "..." when the text has ' but no ").
std::string py_str_repr(const std::string& s);
// repr() of the Python object a value stands for (nodes print their name).
std::string value_repr(const Value& v);
// str() of a target as a table cell: the name, the callable's str(), or
// "ignis.ops.add.Tensor".
std::string target_str(const Target& t);

std::string tabular(const Graph& g);
std::string graph_str(const Graph& g);
// One line of graph_str: "%add : [num_users=1] = call_function[target=...](...)".
std::string format_node(const Node& n);

struct CodeOptions {
  std::string root_module = "self";
  // Prefix printed for ignis functions and types ("ignis.relu"); a caller
  // whose code imports ignis under another name passes that name.
  std::string module_alias = "ignis";
  std::string fn_name = "forward";
  // print_readable's form: each value annotated with torch's type string
  // ("f32[s77, 3]", "Sym(2*s77)") instead of the Python type.
  bool verbose = false;
};

// torch's type string of a node's value for print_readable: "f32[s77, 3]"
// (symbolic sizes where the node has them), "Sym(2*s77)"; empty when unknown.
std::string verbose_type(const Node& n);

// A global the generated code refers to: its name and the target it stands
// for (a foreign callable, or a dispatcher op).
struct CodeGlobal {
  std::string name;
  Target target;
};

struct PythonCode {
  std::string src;
  std::vector<CodeGlobal> globals;
};

PythonCode python_code(const Graph& g, const CodeOptions& opts = {});

}  // namespace ignis::graph

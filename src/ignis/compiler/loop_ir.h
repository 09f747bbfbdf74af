// The compiler's loop IR: what a graph of core ops becomes before C++ is
// generated for it (TorchInductor's IR, cut down to the first slice: CPU,
// static shapes, pointwise kernels plus extern calls).
//
// A Program is a list of steps over buffers. A Buffer is a tensor the program
// reads or writes: a graph input, a get_attr constant, an extern call's
// output, or a kernel's output. A Kernel computes one output buffer, one
// element per iteration of a flat loop; its body is a DAG of scalar nodes
// (loads, constants, calls of scalar_ops.h's structs, casts, selects) whose
// last node is the value stored. Everything the compiler does not lower is a
// CallExtern step: the node runs through the dispatcher on real tensors.
// Sizes, strides and indices are sym::Exprs (constants for now) so that
// dynamic shapes later change values, not structure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ignis/core/dtype.h"
#include "ignis/graph/node.h"
#include "ignis/sym/expr.h"

namespace ignis::compiler {

enum class BufferKind : uint8_t { Input, Constant, Extern, Computed };
const char* buffer_kind_name(BufferKind k);

struct Buffer {
  std::string name;  // "buf3"; inputs and constants: the graph node's name
  BufferKind kind = BufferKind::Computed;
  ScalarType dtype = ScalarType::Float32;
  std::vector<sym::Expr> sizes;
  std::vector<sym::Expr> strides;  // elements; the data pointer includes the offset
  int64_t input_index = -1;        // Input: the placeholder's position
  std::string attr;                // Constant: the get_attr target
};

// The kinds of scalar nodes, listed once (printer and code generator switch on them).
#define IGNIS_FORALL_SCALAR_KINDS(_) _(Load) _(Constant) _(Call) _(Cast) _(Where)

enum class ScalarKind : uint8_t {
#define IGNIS_ENUM(K) K,
  IGNIS_FORALL_SCALAR_KINDS(IGNIS_ENUM)
#undef IGNIS_ENUM
};
const char* scalar_kind_name(ScalarKind k);

// One scalar value of a kernel body. `args` index earlier nodes of the body.
struct ScalarNode {
  ScalarKind kind = ScalarKind::Constant;
  ScalarType dtype = ScalarType::Float32;  // the value's type
  int buffer = -1;                         // Load: the buffer read
  sym::Expr index;                         // Load: the element read (in elements)
  double value = 0;                        // Constant (when !is_int)
  int64_t int_value = 0;                   // Constant (when is_int)
  bool is_int = false;
  std::string fn;                          // Call: a scalar_ops name ("exp")
  std::vector<int> args;                   // Call, Cast {x}, Where {cond, a, b}
};

struct Kernel {
  std::string name;                // "kernel_0": the exported symbol
  int output = -1;                 // the buffer stored to
  std::vector<sym::Expr> ranges;   // the output's sizes: the iteration space
  sym::Expr flat;                  // the flat loop index symbol, 0 <= flat < numel
  sym::Expr store_index;           // where element `flat` goes in the output
  std::vector<ScalarNode> body;    // topologically ordered; body.back() is stored
  std::vector<std::string> origins;  // names of the graph nodes fused here
  int64_t numel() const;
};

struct Step {
  enum class Kind : uint8_t { RunKernel, CallExtern };
  Kind kind = Kind::RunKernel;
  int kernel = -1;                 // RunKernel
  graph::NodePtr node;             // CallExtern: the node run (target, for names)
  const OpHandle* op = nullptr;    // CallExtern
  std::vector<graph::Value> args;  // CallExtern: node references name buffers (node_buffers)
  graph::Kwargs kwargs;
  // CallExtern: one buffer per result position (-1: no node reads it, or None)
  std::vector<int> outputs;
  bool view = false;               // CallExtern of a view op: its result aliases its input
};

// A graph output: a buffer, or a value that is no tensor (None, a number).
struct ProgramOutput {
  int buffer = -1;
  graph::Value value;
};

struct Program {
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  std::vector<int> inputs;  // the buffer of each placeholder, in order
  std::vector<ProgramOutput> outputs;
  // Graph nodes that name buffers in extern arguments.
  std::vector<std::pair<const graph::Node*, int>> node_buffers;

  int buffer_of(const graph::Node* n) const;  // -1 when the node has none
};

// Readable text of the whole program (logs and tests), e.g.
//   buf2: float32[4, 3] strides [3, 1] computed
//   kernel_0 -> buf2 (add, relu, mul) over [4, 3]
//     tmp0 = load x[flat]
//     tmp1 = load y[flat]
//     ...
std::string to_string(const Program& p);
std::string to_string(const Program& p, const Kernel& k);

}  // namespace ignis::compiler

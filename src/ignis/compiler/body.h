// What lowering hands the scheduler: computations not yet placed in loops.
//
// Lowering (lower.cpp) describes every value as a *Body*: a function that,
// given coordinates (one sym::Expr per dim), adds the scalar nodes computing
// the value there to a BodyBuilder and returns the node. A value that must
// exist in memory becomes a ComputeNode: a buffer and the body that fills it,
// either pointwise (one element per coordinate) or a reduction (a combine of
// the body over some dims). The scheduler (schedule.cpp) groups compute nodes
// into kernels and builds their bodies with the kernels' loop variables.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ignis/compiler/loop_ir.h"

namespace ignis::compiler {

using Coords = std::vector<sym::Expr>;

// Builds one loop body, sharing equal nodes (a value read twice is loaded
// once), so inlining a value at each use costs no duplicate code.
//
// `on_load`, when set, sees every load first and may answer it with another
// node (the scheduler reads a value fused in the same kernel from where it
// was computed rather than from memory); -1 keeps the load.
class BodyBuilder {
 public:
  using LoadHook = std::function<int(BodyBuilder&, const ScalarNode& load)>;
  explicit BodyBuilder(LoadHook on_load = {}) : on_load_(std::move(on_load)) {}
  int add(ScalarNode n);
  std::vector<ScalarNode> body;

 private:
  int pow_shortcut(const ScalarNode& n);
  int cast_shortcut(const ScalarNode& n) const;
  LoadHook on_load_;
  std::unordered_map<std::string, int> seen_;
};

// A value as a function of its coordinates.
using Body = std::function<int(BodyBuilder&, const Coords&)>;

// One index variable per dim (d0, d1, ...), ranging over `sizes`: the
// coordinates a body is built at when only its shape matters.
Coords canonical_coords(const std::vector<int64_t>& sizes);

struct ComputeNode {
  int buffer = -1;  // the buffer it fills (Program::buffers)
  // The iteration space: the output's sizes (pointwise), or the reduced
  // input's (a reduction, with `reduced` marking the dims folded).
  std::vector<int64_t> sizes;
  std::vector<bool> reduced;  // reductions only; one per dim of `sizes`
  bool is_reduction = false;
  Combine combine = Combine::Sum;
  // Pointwise: the buffer's dtype (the body's value is already converted);
  // a reduction: the accumulator's (the compute type of the buffer's).
  ScalarType dtype = ScalarType::Float32;
  Body body;  // the value at coordinates over `sizes`
  // The element of `buffer` written for coordinates over `sizes` (a
  // reduction's index ignores its reduced coordinates).
  std::function<sym::Expr(const Coords&)> store_index;
  // The order to iterate `sizes` in when the node starts a pointwise kernel
  // (its buffer's memory order, outermost first).
  std::vector<size_t> loop_order;
  std::vector<std::string> origins;  // the graph nodes it computes
  // A GEMM template (c = alpha * a @ b, a kernel of its own whose epilogue
  // later pointwise nodes over its output may join); body is unused.
  std::optional<Kernel::Gemm> gemm;
};

// A step before scheduling: an extern step of the program, or a compute node.
struct PendingStep {
  int extern_step = -1;   // index into the lowering's extern steps
  int compute = -1;       // index into the compute nodes
};

// Groups compute nodes into kernels (fusion) and fills p.kernels and p.steps
// (p.steps comes in empty; `externs` are the extern steps `order` refers to).
void schedule(Program& p, std::vector<ComputeNode> nodes, std::vector<Step> externs,
              const std::vector<PendingStep>& order, const CompilerOptions& options);

}  // namespace ignis::compiler

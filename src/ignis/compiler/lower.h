// Lowering: a graph of core ops (AOT's inference, forward or backward graph)
// to a Program (loop_ir.h). docs/compiler.md has the rules; in short:
// - pointwise ops with a scalar function, on one float dtype, and the view
//   ops are *virtual* values: functions from an output coordinate to a
//   scalar expression, composed without touching memory;
// - a value is realized (a kernel computes it into a buffer) when it is a
//   graph output, an extern call's input, or has more than one user;
// - every other op is an extern call through the dispatcher.
// Before lowering, a graph whose gathers read elementwise values is rewritten
// (a copy; graph/passes/sink_gather.h) to gather their operands instead, and
// one whose scatters write one element a row to select it by comparing
// indices (graph/passes/row_scatter.h).
#pragma once

#include "ignis/compiler/loop_ir.h"
#include "ignis/graph/graph.h"

namespace ignis::compiler {

// Throws NotImplementedError for graphs outside the slice (a foreign callable,
// a non-tensor placeholder, a tensor on neither the CPU nor one GPU, missing
// metadata): the caller runs such graphs some other way. The program's
// device is the GPU of the graph's CUDA tensors, else the CPU.
Program lower(const graph::Graph& g, const CompilerOptions& options = {});

}  // namespace ignis::compiler

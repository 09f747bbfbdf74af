// The symbolic bytecode interpreter (TorchDynamo's InstructionTranslator).
//
// trace_frame runs a frame's bytecode over variable trackers instead of
// values: tensor operations become graph nodes (their metadata computed on
// fake tensors, aot/fake.h), Python values fold to constants, user functions and
// nn.Module.forward are inlined, loops unroll. Every value read from the
// frame becomes a guard. The result is a cache entry whose plan calls the
// captured graph and then returns, or runs the instruction capture could not
// trace and continues in a resume function (a graph break).
#pragma once

#include <memory>

#include "ignis/capture/eval_frame.h"
#include "ignis/capture/plan.h"

namespace ignis::capture {

// Returns the new entry; nullptr with a Python error set when tracing raised
// an error that must reach the user (fullgraph=True and a graph break, a
// backend failure). An entry whose plan exit is RunOriginal means "run this
// frame eagerly" (nothing to capture, or the frame is unsupported as a
// whole); the hook also marks the code skipped when `skip_code` is set.
struct TraceResult {
  std::shared_ptr<CacheEntry> entry;
  bool skip_code = false;
};
// Drops the decoded-bytecode cache (ignis.compiler.reset()).
void clear_code_info_cache();

TraceResult trace_frame(const FrameView& f, const std::shared_ptr<const CaptureConfig>& cfg,
                        bool* error);

}  // namespace ignis::capture

// The autocast layer: the kernels of the AutocastCPU and AutocastCUDA keys.
//
// Each op with a cast policy (ops/autocast_policy.h) gets a kernel at the
// autocast key of each device type where it has one. The kernel casts the
// op's floating-point tensor arguments that live on that device type as the
// policy says, excludes its own key (so that the ops a composite calls run
// as they are, in the dtype they were given) and redispatches below itself.
// Ops with no policy have no kernel there: the key falls through at the cost
// of one mask. The key is in the thread's included set only while autocast
// is enabled for its device type (autocast_mode.h).
//
// The casts are ordinary `_to_copy` calls through the whole dispatcher, so
// autograd records them (gradients flow back to float32 weights in float32)
// and AOT's tracer records them into graphs.
#pragma once

namespace ignis::autocast {

// Registers the autocast kernels of every op in the policy table; idempotent.
// Throws an internal error for a table entry that names no op.
void register_autocast_kernels();

}  // namespace ignis::autocast

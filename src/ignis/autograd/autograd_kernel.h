// The Autograd kernel: one boxed fallback for the AutogradCPU, AutogradCUDA
// and AutogradMeta keys. For an op whose differentiable inputs require grad
// (with grad mode on) it runs the op below the autograd keys and records a
// backward node from the op's declared derivative; otherwise it only
// redispatches.
#pragma once

namespace ignis::autograd {
void register_autograd_kernel();
}  // namespace ignis::autograd

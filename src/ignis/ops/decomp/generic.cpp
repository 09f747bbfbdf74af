// The decompositions that are not written per op: composites (their own
// kernel) and the test stand-in for AOT's tracer.
#include "ignis/ops/decompositions.h"
#include "ignis/ops/op_def.h"

namespace ignis::decomp {

void composite(const OpHandle& op, Stack& s) {
  // Composite kernels only call ops through the dispatcher; they read no keys.
  op.def()->any_backend(op, DispatchKeySet(), s);
}

KernelFn decompose_or_record(DispatchKey key, std::shared_ptr<std::vector<std::string>> seen) {
  return [key, seen](const OpHandle& op, DispatchKeySet ks, Stack& s) {
    const OpDef* d = op.def();
    if (d && d->decomposition) {
      d->decomposition(op, s);
      return;
    }
    seen->push_back(op.name());
    ExcludeDispatchKeyGuard inner(key);
    op.redispatch(ks.below(key), s);
  };
}

}  // namespace ignis::decomp

// The Functionalize key: in-place ops become functional ops while tracing.
//
// Note [Functionalization over fake storages]
// torch wraps every tensor in a FunctionalTensorWrapper that holds its
// current value. ignis needs no wrapper: fake tensors share storages exactly
// as the real tensors they stand for do, so the storage is the unit of
// mutation. An in-place op `self.op_(args)` is traced as
//   result = op(self, args)                  (recorded: the functional form)
//   self.op_(args)                           (not recorded: on fakes this only
//                                             runs the meta rule, which checks
//                                             the write as eager would)
//   Tracer::write(self, result)              (the storage's value becomes
//                                             result, or as_strided_scatter of
//                                             it into the old value when self
//                                             is a view)
// Every tensor on that storage, when next used, is re-read from the new
// value (Tracer::value_of: as_strided of the storage's value). At the end,
// graph inputs whose storage was written get one copy_ each (aot/joint.cpp).
// copy_ becomes copy(self, src) (a new tensor laid out like self), and fill_
// and zero_ copies of their value. In-place view ops (t_, squeeze_, ...)
// change only metadata: they are traced as their view op. An in-place op with no functional form (the random
// fillers normal_, uniform_, bernoulli_, random_) runs on a clone, which is
// then written: the graph keeps that op in place, on a fresh tensor only.
#include "ignis/aot/trace.h"
#include "ignis/dispatch/op_variants.h"
#include "ignis/ops/op_def.h"

namespace ignis::aot {

namespace {

constexpr DispatchKeySet kTracingKeys =
    DispatchKeySet(DispatchKey::ProxyTrace) | DispatchKeySet(DispatchKey::Functionalize);

// Runs op on s below the tracing keys: checks (and, on real tensors,
// performs) the write without recording it.
void run_untraced(const OpHandle& op, DispatchKeySet below, Stack& s) {
  ExcludeDispatchKeyGuard g(kTracingKeys);  // for what its kernel calls
  op.redispatch(below - kTracingKeys, s);
}

void functionalize_fallback(const OpHandle& op, DispatchKeySet ks, Stack& s) {
  DispatchKeySet below = ks.below(DispatchKey::Functionalize);
  Tracer* tr = active_tracer();
  const FunctionSchema& fs = op.schema();
  bool writes = false;
  for (const Argument& a : fs.args) writes |= a.is_write;
  if (!tr || !tr->functionalize() || !writes) {
    op.redispatch(below, s);
    return;
  }
  IGNIS_CHECK(fs.is_inplace(), "functionalization: ", op.name(),
              " writes an argument other than self; out= forms are not supported while tracing");
  Tensor self = s[0].to_tensor();
  const std::string& name = fs.name;
  Tensor result;
  if (name == "fill_" || name == "zero_") {
    // Whole overwrites: copy(self, value), the functional form of copy_.
    static OpRef copy("copy");
    Tensor value = name == "zero_" ? scalar_to_tensor_int(0, ScalarType::Int64, true)
                                   : s[1].to_tensor();
    result = copy.tensor(self, value);
  } else if (const OpHandle* fop = functional_variant(fs)) {
    Stack fs_stack(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(fs.args.size()));
    if (fop->def() && fop->def()->meta) {
      fop->call(fs_stack);  // recorded; its meta rule gives the result
      result = fs_stack.at(0).to_tensor();
    } else if (fop->def() && fop->def()->category == OpCategory::View) {
      // Metadata only: self becomes the view.
      fop->call(fs_stack);
      result = fs_stack.at(0).to_tensor();
      run_untraced(op, below, s);
      tr->bind(self, tr->node_of(result));
      return;
    } else {
      // A functional form written as clone + this in-place op: running it
      // would come back here. Record it, and get its result by applying the
      // in-place op to a clone of self, unrecorded.
      graph::Node* n = tr->record(*fop, fs_stack);
      static OpRef clone("clone");
      Stack cs(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(fs.args.size()));
      {
        ExcludeDispatchKeyGuard g(kTracingKeys);
        cs[0] = IValue(clone.tensor(self));
      }
      run_untraced(op, op.compute_keys(cs).below(DispatchKey::Functionalize), cs);
      tr->bind_results(*fop, n, cs);
      result = cs.at(0).to_tensor();
    }
  } else {
    // No functional form: the op runs in place on a clone of self.
    static OpRef clone("clone");
    Tensor c = clone.tensor(self);
    Stack cs(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(fs.args.size()));
    cs[0] = IValue(c);
    {
      // Recorded (in place on the clone); autograd already saw the op.
      ExcludeDispatchKeyGuard g(DispatchKeySet(DispatchKey::Functionalize) | kAutogradKeys);
      op.call(cs);
    }
    static OpRef copy("copy_");
    Stack w{IValue(self), IValue(c), IValue(false)};
    run_untraced(copy.handle(), copy.handle().compute_keys(w).below(DispatchKey::Functionalize), w);
    tr->write(self, c);
    s.clear();
    s.emplace_back(self);
    return;
  }
  run_untraced(op, below, s);
  if (result.dtype() != self.dtype())
    result = OpRef("_to_copy").tensor(result, self.dtype());  // recorded
  tr->write(self, result);
}

}  // namespace

void register_functionalize_kernel() {
  Dispatcher::get().register_fallback(DispatchKey::Functionalize, functionalize_fallback);
}

}  // namespace ignis::aot

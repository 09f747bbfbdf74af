#include "ignis/autocast/autocast_kernel.h"

#include "ignis/autocast/autocast_mode.h"
#include "ignis/core/error.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/ops/autocast_policy.h"

namespace ignis::autocast {

namespace {

// A tensor autocast may cast on `dev`: floating but not float64 (which every
// policy leaves alone, as torch's), on that device type (as the user sees
// it: a fake counts as the device it stands for), and not a wrapped Python
// number.
bool castable(const Tensor& t, DeviceType dev) {
  return t.defined() && !t.impl()->is_wrapped_number() && is_floating(t.dtype()) &&
         t.dtype() != ScalarType::Float64 && t.user_device().type == dev;
}

// Calls f on every tensor argument (single tensors and Tensor[] items),
// replacing it with what f returns.
template <typename F>
void map_tensor_args(const OpHandle& op, Stack& s, F f) {
  for (size_t i = 0; i < op.schema().args.size(); ++i) {
    IValue& v = s[i];
    if (v.is_tensor()) {
      v = IValue(f(v.to_tensor()));
    } else if (v.is_tensor_list()) {
      std::vector<Tensor> list = v.to_tensor_list();
      for (Tensor& t : list) t = f(t);
      v = IValue(std::move(list));
    }
  }
}

template <typename F>
void visit_tensor_args(const OpHandle& op, const Stack& s, F f) {
  for (size_t i = 0; i < op.schema().args.size(); ++i) {
    const IValue& v = s[i];
    if (v.is_tensor()) f(v.to_tensor());
    else if (v.is_tensor_list())
      for (const Tensor& t : v.to_tensor_list()) f(t);
  }
}

void cast_all(const OpHandle& op, Stack& s, DeviceType dev, ScalarType to) {
  map_tensor_args(op, s, [&](const Tensor& t) {
    return castable(t, dev) ? cached_cast(t, to, dev) : t;
  });
}

[[noreturn]] void banned(const OpHandle& op) {
  IGNIS_FAIL_KIND(Runtime, op.name(), " is unsafe to autocast: probabilities in float16 lose the ",
                  "precision its logarithms need. Skip the sigmoid and use ",
                  "binary_cross_entropy_with_logits (nn.BCEWithLogitsLoss) on the logits, which ",
                  "autocast runs in float32.");
}

void apply_policy(const OpHandle& op, CastPolicy p, DeviceType dev, int dtype_arg, Stack& s) {
  switch (p) {
    case CastPolicy::None: return;
    case CastPolicy::LowerPrecisionFp: cast_all(op, s, dev, get_dtype(dev)); return;
    case CastPolicy::Fp32: cast_all(op, s, dev, ScalarType::Float32); return;
    case CastPolicy::Fp32SetOptDtype: {
      // torch's rule: only when the first argument is a castable tensor and
      // the caller left dtype unset; otherwise the op runs as called.
      const IValue& first = s[0];
      if (first.is_tensor() && castable(first.to_tensor(), dev) && s[dtype_arg].is_none())
        s[dtype_arg] = IValue(ScalarType::Float32);
      return;
    }
    case CastPolicy::Promote: {
      // torch's rule: float32 wins over the autocast dtype; float64 takes no
      // part (it is left as it is and the op's own promotion meets it); the
      // two 16-bit types do not mix.
      ScalarType widest = get_dtype(dev);
      visit_tensor_args(op, s, [&](const Tensor& t) {
        if (!castable(t, dev) || t.dtype() == widest) return;
        IGNIS_CHECK(widest == ScalarType::Float32 || t.dtype() == ScalarType::Float32,
                    "autocast: ", op.name(), " got both ", dtype_name(widest), " and ",
                    dtype_name(t.dtype()), " tensors, which promote to no autocast type");
        widest = ScalarType::Float32;
      });
      cast_all(op, s, dev, widest);
      return;
    }
    case CastPolicy::Banned: banned(op);
  }
}

KernelFn autocast_kernel(const OpHandle& op, CastPolicy p, DeviceType dev) {
  DispatchKey key = autocast_key(dev);
  int dtype_arg = op.schema().find_arg("dtype");
  IGNIS_INTERNAL_ASSERT(p != CastPolicy::Fp32SetOptDtype || dtype_arg >= 0, op.name(),
                        " has no dtype argument for the fp32_set_opt_dtype policy");
  return [p, dev, key, dtype_arg](const OpHandle& op, DispatchKeySet ks, Stack& s) {
    // Excluded while the op runs: the ops a composite calls see the dtypes
    // the policy chose, as in torch.
    ExcludeDispatchKeyGuard no_autocast(key);
    apply_policy(op, p, dev, dtype_arg, s);
    op.redispatch(ks.below(key), s);
  };
}

std::vector<OpHandle*> ops_named(const std::string& name) {
  Dispatcher& d = Dispatcher::get();
  if (name.find('.') != std::string::npos) {
    OpHandle* h = d.find(name);
    return h ? std::vector<OpHandle*>{h} : std::vector<OpHandle*>{};
  }
  return d.overloads(name);
}

}  // namespace

void register_autocast_kernels() {
  static bool done = false;
  if (done) return;
  done = true;
  for (const AutocastRule& rule : autocast_rules()) {
    std::vector<OpHandle*> ops = ops_named(rule.op);
    IGNIS_INTERNAL_ASSERT(!ops.empty(), "the autocast policy table names no op '", rule.op, "'");
    for (OpHandle* h : ops) {
      if (rule.cpu != CastPolicy::None)
        h->set_kernel(DispatchKey::AutocastCPU, autocast_kernel(*h, rule.cpu, DeviceType::CPU));
      if (rule.cuda != CastPolicy::None)
        h->set_kernel(DispatchKey::AutocastCUDA, autocast_kernel(*h, rule.cuda, DeviceType::CUDA));
    }
  }
}

}  // namespace ignis::autocast

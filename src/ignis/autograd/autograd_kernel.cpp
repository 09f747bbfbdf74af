#include "ignis/autograd/autograd_kernel.h"

#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/functions.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/ops/op_def.h"

namespace ignis::autograd {

namespace {

constexpr DispatchKeySet kAutogradKeys = DispatchKeySet(DispatchKey::AutogradCPU) |
                                         DispatchKeySet(DispatchKey::AutogradCUDA) |
                                         DispatchKeySet(DispatchKey::AutogradMeta);

OpRef clone_op("clone");

bool is_tensor_arg(ArgType t) { return t == ArgType::Tensor || t == ArgType::OptTensor; }

// True when some tensor argument requires grad: the fast check on every call.
bool any_requires_grad(const OpHandle& op, const Stack& s) {
  const FunctionSchema& fs = op.schema();
  for (size_t i = 0; i < fs.args.size(); ++i) {
    const IValue& v = s[i];
    if (v.is_tensor()) {
      if (requires_grad(v.to_tensor())) return true;
    } else if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list())
        if (requires_grad(t)) return true;
    }
  }
  return false;
}

void check_inplace(const OpHandle& op, const Tensor& self) {
  AutogradMeta* m = get_meta(self);
  if (!m) return;
  IGNIS_CHECK(!(m->requires_grad_ && !m->grad_fn_),
              "a leaf Variable that requires grad is being used in an in-place operation.");
  if (m->is_view_ && requires_grad(m->base_))
    IGNIS_FAIL_KIND(NotImplemented, "in-place operation '", op.name(),
                    "' on a view of a tensor that requires grad is not supported by ignis "
                    "autograd yet; clone() the view first (or use the out-of-place op)");
}

// Outputs of a call, flattened (a Tensor[] return gives one per tensor).
std::vector<Tensor*> flat_outputs(Stack& s) {
  std::vector<Tensor*> outs;
  for (IValue& v : s) {
    if (v.is_tensor()) {
      outs.push_back(&v.to_tensor());
    } else if (v.is_tensor_list()) {
      auto& l = const_cast<std::vector<Tensor>&>(v.to_tensor_list());
      for (Tensor& t : l) outs.push_back(&t);
    } else {
      outs.push_back(nullptr);
    }
  }
  return outs;
}

void record(const OpHandle& op, DispatchKeySet below, Stack& s) {
  const OpDef* d = op.def();
  const FunctionSchema& fs = op.schema();
  size_t nargs = fs.args.size();
  bool inplace = fs.is_inplace();
  if (inplace) check_inplace(op, s[0].to_tensor());

  std::shared_ptr<Node> node;
  OpNode* on = nullptr;
  if (d && d->derivative) {
    auto n = std::make_shared<OpNode>(op, backward_name(op));
    on = n.get();
    node = std::move(n);
  } else {
    node = std::make_shared<NotImplementedNode>(op.name());
  }

  // Edges, geometry and the saved inputs.
  std::vector<Tensor> inputs;  // to spot outputs that are inputs unchanged
  if (on) {
    on->args.resize(nargs);
    on->saved_in.resize(nargs);
    on->geom.resize(nargs);
    on->first_slot.assign(nargs, -1);
  }
  auto& edges = node->mutable_next_edges();
  for (size_t i = 0; i < nargs; ++i) {
    const IValue& v = s[i];
    ArgType at = fs.args[i].type;
    bool save = on && ((d->save_inputs >> i) & 1);
    if (is_tensor_arg(at) || at == ArgType::TensorList) {
      std::vector<Tensor> ts;
      if (v.is_tensor()) ts.push_back(v.to_tensor());
      else if (v.is_tensor_list()) ts = v.to_tensor_list();
      else ts.push_back(Tensor());  // None
      if (on) on->first_slot[i] = static_cast<int>(edges.size());
      for (const Tensor& t : ts) {
        edges.push_back(t.defined() ? gradient_edge(t) : Edge{});
        if (edges.back().valid() && on) on->needs |= uint64_t(1) << i;
        if (!on) continue;
        on->geom[i].push_back(t.defined() ? TensorGeom{t.sizes(), t.dtype(), t.device()}
                                          : TensorGeom{});
        if (save) {
          // An in-place op overwrites self: backward needs the old value.
          Tensor keep = (inplace && i == 0 && t.defined()) ? clone_op.tensor(t) : t;
          on->saved_in[i].emplace_back(keep, false);
        }
        if (t.defined()) inputs.push_back(t);
      }
    } else if (on) {
      on->args[i] = v;
    }
  }

  {
    ExcludeDispatchKeyGuard guard(kAutogradKeys);
    op.redispatch(below, s);
  }

  std::vector<Tensor*> outs = flat_outputs(s);
  Tensor view_base;
  if (fs.is_out_of_place_view() && s.size() > 0) {
    const Tensor& self = inputs.empty() ? Tensor() : inputs[0];
    AutogradMeta* m = self.defined() ? get_meta(self) : nullptr;
    view_base = m && m->is_view_ ? m->base_ : self;
  }
  if (on) on->saved_out.resize(outs.size());
  for (size_t j = 0; j < outs.size(); ++j) {
    Tensor* t = outs[j];
    if (!t || !t->defined()) {
      node->add_input_geom(Tensor());
      continue;
    }
    node->add_input_geom(*t);
    if (on && ((d->save_outputs >> j) & 1) && !is_floating(t->dtype()))
      on->saved_out[j] = SavedVariable(*t, true);  // e.g. the indices of max.dim
    if (!is_floating(t->dtype())) continue;
    bool passthrough = false;
    if (!inplace)
      for (const Tensor& in : inputs) passthrough |= in.is_same(*t);
    if (passthrough) continue;  // e.g. contiguous() of a contiguous tensor
    set_history(*t, node, static_cast<uint32_t>(j));
    if (view_base.defined() && t->impl()->storage().get() == view_base.impl()->storage().get()) {
      AutogradMeta& m = materialize_meta(*t);
      m.is_view_ = true;
      m.base_ = view_base;
    }
    if (on && ((d->save_outputs >> j) & 1)) on->saved_out[j] = SavedVariable(*t, true);
  }
}

void autograd_fallback(const OpHandle& op, DispatchKeySet ks, Stack& s) {
  DispatchKeySet below = ks.below(DispatchKey::AutogradCPU);
  if (__builtin_expect(!grad_enabled() || !any_requires_grad(op, s), 1)) {
    op.redispatch(below, s);
    return;
  }
  const OpDef* d = op.def();
  if (d && d->nondifferentiable) {
    ExcludeDispatchKeyGuard guard(kAutogradKeys);
    op.redispatch(below, s);
    return;
  }
  record(op, below, s);
}

}  // namespace

void register_autograd_kernel() {
  static bool done = false;
  if (done) return;
  done = true;
  for (DispatchKey k : {DispatchKey::AutogradCPU, DispatchKey::AutogradCUDA,
                        DispatchKey::AutogradMeta})
    Dispatcher::get().register_fallback(k, autograd_fallback);
}

}  // namespace ignis::autograd

#include "ignis/autograd/autograd_kernel.h"

#include <algorithm>

#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/functions.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/ops/op_def.h"

namespace ignis::autograd {

namespace {

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

// An argument the op's derivative does not differentiate may not require
// grad: torch raises at the call too, rather than leave the gradient out.
void check_nondiff(const OpHandle& op, const OpDef& d, const Stack& s) {
  const FunctionSchema& fs = op.schema();
  for (size_t i = 0; i < fs.args.size(); ++i) {
    if (!((d.nondiff_inputs >> i) & 1) || !s[i].is_tensor() || !requires_grad(s[i].to_tensor()))
      continue;
    if (d.nondiff_when && !d.nondiff_when(s)) return;
    IGNIS_FAIL_KIND(Runtime, "The function '", op.name(), "' is not differentiable with respect "
                    "to argument '", fs.args[i].name, "'. This input cannot have requires_grad "
                    "True.");
  }
}

// Marks the outputs of a view op that alias `self`'s storage as views of its
// base; made under no_grad, or from such a view, they are no-grad views
// (Note [No-grad views] in autograd_meta.cpp).
void mark_views(const Tensor& self, const std::vector<Tensor*>& outs) {
  if (!self.defined()) return;
  AutogradMeta* sm = get_meta(self);
  const Tensor& base = sm && sm->is_view_ ? sm->base_ : self;
  bool no_grad = !grad_enabled() || (sm && sm->is_view_ && sm->no_grad_view_);
  for (Tensor* t : outs) {
    if (!t || !t->defined() || t->is_same(self) ||
        t->impl()->storage().get() != base.impl()->storage().get())
      continue;
    set_view_of(*t, base, no_grad);
  }
}

// After an in-place op (recorded as `node`) on the view `self`: the base
// gets a CopySlices over its previous history, the view a history that
// re-reads it from the base.
void rebase_view(const Tensor& self, const std::shared_ptr<Node>& node) {
  AutogradMeta* m = get_meta(self);
  const Tensor base = m->base_;
  BaseGeom bg{base.sizes(), base.strides(), base.dtype(), base.device()};
  ViewGeom vg{self.sizes(), self.strides(), self.storage_offset() - base.storage_offset()};
  auto cs = std::make_shared<CopySlices>(bg, vg, node);
  auto& edges = cs->mutable_next_edges();
  edges.push_back(gradient_edge(base));
  for (size_t i = 1; i < node->next_edges().size(); ++i) edges.push_back(node->next_edges()[i]);
  cs->add_input_geom(base);
  set_history(base, cs, 0);
  auto vb = std::make_shared<AsStridedBackward>(bg, vg);
  vb->mutable_next_edges().push_back(Edge{cs, 0});
  vb->add_input_geom(self);
  set_history(self, vb, 0);
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
  if (inplace) check_inplace(s[0].to_tensor());

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
  if (on) on->saved_out.resize(outs.size());
  for (size_t j = 0; j < outs.size(); ++j) {
    Tensor* t = outs[j];
    if (!t || !t->defined()) {
      node->add_input_geom(Tensor());
      continue;
    }
    node->add_input_geom(*t);
    if (on && ((d->save_outputs >> j) & 1) && !is_differentiable_type(t->dtype()))
      on->saved_out[j] = SavedVariable(*t, true);  // e.g. the indices of max.dim
    if (!is_differentiable_type(t->dtype())) continue;
    bool passthrough = false;
    if (!inplace)
      for (const Tensor& in : inputs) passthrough |= in.is_same(*t);
    if (passthrough) continue;  // e.g. contiguous() of a contiguous tensor
    set_history(*t, node, static_cast<uint32_t>(j));
    if (on && ((d->save_outputs >> j) & 1)) on->saved_out[j] = SavedVariable(*t, true);
  }
  if (d && d->is_view && !inputs.empty()) mark_views(inputs[0], outs);
  if (inplace) {
    AutogradMeta* m = get_meta(s[0].to_tensor());
    if (m && m->is_view_) rebase_view(s[0].to_tensor(), node);
  }
}

// Note [Ops without a derivative record after running]
// An op declared without a derivative (comparisons, isnan, argmax, ...)
// records a node only so that a backward through one of its floating outputs
// raises; most have no floating output at all. Such an op runs first and
// takes its inputs' edges only when an output needs the node: reading an
// edge is not free of effects (a no-grad view whose base was written refuses
// it), and torch, whose outputs of these ops are not differentiable, never
// reads them (`v == v` on such a view works in torch).
void record_without_derivative(const OpHandle& op, DispatchKeySet below, Stack& s) {
  const FunctionSchema& fs = op.schema();
  std::vector<Tensor> inputs;  // one per tensor argument slot, undefined for None
  for (size_t i = 0; i < fs.args.size(); ++i) {
    const ArgType at = fs.args[i].type;
    if (!is_tensor_arg(at) && at != ArgType::TensorList) continue;
    if (s[i].is_tensor()) inputs.push_back(s[i].to_tensor());
    else if (s[i].is_tensor_list()) for (const Tensor& t : s[i].to_tensor_list()) inputs.push_back(t);
    else inputs.emplace_back();
  }
  {
    ExcludeDispatchKeyGuard guard(kAutogradKeys);
    op.redispatch(below, s);
  }
  std::vector<Tensor*> outs = flat_outputs(s);
  auto needs_node = [&](const Tensor* t) {
    if (!t || !t->defined() || !is_differentiable_type(t->dtype())) return false;
    for (const Tensor& in : inputs)
      if (in.defined() && in.is_same(*t)) return false;  // passed through unchanged
    return true;
  };
  if (std::none_of(outs.begin(), outs.end(), needs_node)) return;
  auto node = std::make_shared<NotImplementedNode>(op.name());
  auto& edges = node->mutable_next_edges();
  for (const Tensor& t : inputs) edges.push_back(t.defined() ? gradient_edge(t) : Edge{});
  for (size_t j = 0; j < outs.size(); ++j) {
    Tensor* t = outs[j];
    node->add_input_geom(t && t->defined() ? *t : Tensor());
    if (needs_node(t)) set_history(*t, node, static_cast<uint32_t>(j));
  }
}

void autograd_fallback(const OpHandle& op, DispatchKeySet ks, Stack& s) {
  DispatchKeySet below = ks.below(DispatchKey::AutogradCPU);
  const OpDef* d = op.def();
  if (__builtin_expect(!grad_enabled(), 0)) {
    // Views are tracked under no_grad too (Note [No-grad views]).
    if (d && d->is_view) {
      Tensor self = s[0].is_tensor() ? s[0].to_tensor() : Tensor();
      op.redispatch(below, s);
      mark_views(self, flat_outputs(s));
      return;
    }
    op.redispatch(below, s);
    return;
  }
  if (__builtin_expect(!any_requires_grad(op, s), 1)) {
    // Views are tracked even when nothing requires grad, so that a later
    // in-place op that brings in a tensor requiring grad (buf[0] = x) can
    // record through the base.
    if (d && d->is_view) {
      Tensor self = s[0].is_tensor() ? s[0].to_tensor() : Tensor();
      op.redispatch(below, s);
      mark_views(self, flat_outputs(s));
      return;
    }
    op.redispatch(below, s);
    return;
  }
  if (d && d->nondifferentiable) {
    ExcludeDispatchKeyGuard guard(kAutogradKeys);
    op.redispatch(below, s);
    return;
  }
  if (d && d->nondiff_inputs) check_nondiff(op, *d, s);
  if (d && !d->derivative && !d->is_view && !op.schema().is_inplace()) {
    record_without_derivative(op, below, s);
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

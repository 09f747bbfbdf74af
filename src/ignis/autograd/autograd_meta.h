// Per-tensor autograd state (requires_grad, grad, grad_fn, ...), kept
// behind core's AutogradMetaInterface, and the helpers every part of
// autograd uses to read and write it.
#pragma once

#include <memory>

#include "ignis/autograd/node.h"

namespace ignis::autograd {

struct AutogradMeta : AutogradMetaInterface {
  ~AutogradMeta() override;
  bool requires_grad() const override {
    return requires_grad_ || grad_fn_ != nullptr ||
           (is_view_ && (no_grad_view_ ? base_requires_grad() : stale_view()));
  }
  bool base_requires_grad() const;
  // A view whose storage was written since its history was set, while its
  // base has history: its grad_fn must be regenerated from the base.
  bool stale_view() const;

  bool requires_grad_ = false;  // set on leaves by requires_grad_()
  Tensor grad_;
  std::shared_ptr<Node> grad_fn_;
  std::weak_ptr<Node> grad_accumulator_;  // leaves: their AccumulateGrad
  uint32_t output_nr_ = 0;
  bool retains_grad_ = false;
  // Views: the tensor whose storage this one views (itself not a view).
  bool is_view_ = false;
  // Made by a view op under no_grad (or from such a view): torch's
  // CreationMeta::NO_GRAD_MODE. It requires grad when its base does, but it
  // has no history: an in-place op on it with grad mode on, or reading its
  // history after its base was written, is an error (see Note [No-grad views]
  // in autograd_meta.cpp).
  bool no_grad_view_ = false;
  Tensor base_;
  intrusive_ptr<VersionCounter> version_;  // views: the storage's version counter ...
  uint64_t view_version_ = 0;             // ... when the view's history was last set
  // Leaves: hooks run on the gradient before it is accumulated into grad_.
  std::vector<TensorHook> hooks_;
  // Leaves: hooks run on the tensor after a gradient was accumulated into
  // grad_ (torch's post-accumulate-grad hooks: an optimizer step per
  // parameter during backward).
  std::vector<std::pair<int64_t, std::function<void(const Tensor&)>>> post_accumulate_hooks_;
};

inline AutogradMeta* get_meta(const Tensor& t) {
  return static_cast<AutogradMeta*>(t.impl()->autograd_meta());
}
AutogradMeta& materialize_meta(const Tensor& t);

inline bool requires_grad(const Tensor& t) {
  if (!t.defined()) return false;
  AutogradMetaInterface* m = t.impl()->autograd_meta();
  return m && m->requires_grad();
}
inline bool is_leaf(const Tensor& t) {
  AutogradMeta* m = get_meta(t);
  return !m || !m->grad_fn_;
}
// Float dtypes only: "only Tensors of floating point dtype can require gradients".
void set_requires_grad(const Tensor& t, bool on);
// Where a gradient for t goes: its grad_fn, or the AccumulateGrad of a leaf
// that requires grad, or an invalid edge.
Edge gradient_edge(const Tensor& t);
// Marks t as a view of `base` (itself not a view); `no_grad`: made under
// no_grad (AutogradMeta::no_grad_view_).
void set_view_of(const Tensor& t, const Tensor& base, bool no_grad = false);
// The errors torch raises for a view made under no_grad: an in-place op on it
// with grad mode on, and its history read after its base was written.
[[noreturn]] void fail_inplace_on_no_grad_view();
[[noreturn]] void fail_no_grad_view_rebased();
// The check of an in-place op recorded with grad mode on (some input requires
// grad): a leaf that requires grad may not be modified, nor a view of one (a
// view is written through its base), nor a view made under no_grad.
void check_inplace(const Tensor& self);
// Marks the view t stale, as if its base had been written since its history
// was set: its history is regenerated when next read, and a no-grad view
// refuses that (the compiled runtime's outputs that eager's views were).
void mark_stale_view(const Tensor& t);
// Makes `fn` the grad_fn of t (output output_nr of fn).
void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr);
// A tensor sharing t's data and version counter, without history.
Tensor detach(const Tensor& t);
void retain_grad(const Tensor& t);
// Registers a hook on t's gradient (t must require grad); returns its id.
int64_t register_hook(const Tensor& t, std::function<Tensor(const Tensor&)> fn);
void remove_hook(const Tensor& t, int64_t id);
// Registers fn(t), run each time a gradient has been accumulated into the
// leaf t's .grad; returns its id (remove_hook removes it).
int64_t register_post_accumulate_hook(const Tensor& t, std::function<void(const Tensor&)> fn);

}  // namespace ignis::autograd

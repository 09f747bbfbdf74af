#include "ignis/autograd/autograd_meta.h"

#include <algorithm>

#include "ignis/autograd/functions.h"

namespace ignis::autograd {

AutogradMeta::~AutogradMeta() {
  if (retains_grad_ && grad_fn_) {
    auto& r = grad_fn_->retained();
    r.erase(std::remove_if(r.begin(), r.end(), [this](auto& p) { return p.second == this; }),
            r.end());
  }
  release_node(std::move(grad_fn_));
}

AutogradMeta& materialize_meta(const Tensor& t) {
  AutogradMetaInterface* m = t.impl()->autograd_meta();
  if (!m) {
    t.impl()->set_autograd_meta(std::make_unique<AutogradMeta>());
    m = t.impl()->autograd_meta();
  }
  return *static_cast<AutogradMeta*>(m);
}

void set_requires_grad(const Tensor& t, bool on) {
  if (on) {
    IGNIS_CHECK(is_differentiable_type(t.dtype()),
                "only Tensors of floating point dtype can require gradients (got ",
                dtype_name(t.dtype()), ")");
  }
  AutogradMeta* m = get_meta(t);
  if (m && m->grad_fn_) {
    IGNIS_CHECK(on, "you can only change requires_grad flags of leaf variables. If you want to "
                "use a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().");
    return;
  }
  if (!on && !m) return;
  materialize_meta(t).requires_grad_ = on;
}

bool AutogradMeta::stale_view() const {
  return version_ && version_->value() != view_version_ && autograd::requires_grad(base_);
}

bool AutogradMeta::base_requires_grad() const { return autograd::requires_grad(base_); }

// Note [No-grad views]
// A view op under no_grad still makes an autograd view (torch's
// CreationMeta::NO_GRAD_MODE), so that what it means stays defined when grad
// mode comes back: it requires grad when its base does (with no history of
// its own); an in-place op on it with grad mode on that autograd would record
// raises (it cannot rebase the base's history on a view the base's history
// never saw), and so does reading its history after its base (or another
// view) was written in place while the base requires grad. A gradient that
// reaches it goes nowhere (no edge, no .grad), as in torch.
void set_view_of(const Tensor& t, const Tensor& base, bool no_grad) {
  AutogradMeta& m = materialize_meta(t);
  m.is_view_ = true;
  m.no_grad_view_ = no_grad;
  m.base_ = base;
  m.version_ = t.impl()->shared_version_counter();
  m.view_version_ = m.version_->value();
}

// The view was written through its base (or another view): what it holds now
// is read from the base's current value, so its history is the base's.
static void regenerate_view_history(const Tensor& t, AutogradMeta& m) {
  const Tensor& base = m.base_;
  BaseGeom bg{base.sizes(), base.strides(), base.dtype(), base.device()};
  ViewGeom vg{t.sizes(), t.strides(), t.storage_offset() - base.storage_offset()};
  auto node = std::make_shared<AsStridedBackward>(bg, vg);
  node->mutable_next_edges().push_back(gradient_edge(base));
  node->add_input_geom(t);
  set_history(t, node, 0);
}

void fail_inplace_on_no_grad_view() {
  IGNIS_FAIL("A view was created in no_grad mode and is being modified inplace with grad mode "
             "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
             "You can clarify your code by moving both the view and the inplace either both "
             "inside the no_grad block (if you don't want the inplace to be tracked) or both "
             "outside (if you want the inplace to be tracked).");
}

void check_inplace(const Tensor& self) {
  AutogradMeta* m = get_meta(self);
  if (!m) return;
  if (m->is_view_ && m->no_grad_view_) fail_inplace_on_no_grad_view();
  IGNIS_CHECK(!(m->requires_grad_ && !m->grad_fn_),
              "a leaf Variable that requires grad is being used in an in-place operation.");
  if (m->is_view_) {
    AutogradMeta* bm = get_meta(m->base_);
    IGNIS_CHECK(!(bm && bm->requires_grad_ && !bm->grad_fn_),
                "a view of a leaf Variable that requires grad is being used in an in-place "
                "operation.");
  }
}

void mark_stale_view(const Tensor& t) {
  AutogradMeta* m = get_meta(t);
  IGNIS_CHECK(m && m->is_view_ && m->version_, "mark_stale_view: not a view");
  // One behind the counter: it only moves forward, so the view stays stale.
  m->view_version_ = m->version_->value() - 1;
}

void fail_no_grad_view_rebased() {
  IGNIS_FAIL("A view was created in no_grad mode and its base or another view of its base has "
             "been modified inplace with grad mode enabled. Given that this use case is "
             "ambiguous and error-prone, it is forbidden. You can clarify your code by moving "
             "both the view and the inplace either both inside the no_grad block (if you don't "
             "want the inplace to be tracked) or both outside (if you want the inplace to be "
             "tracked).");
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = get_meta(t);
  if (!m) return {};
  if (m->is_view_ && m->stale_view()) {
    if (m->no_grad_view_) fail_no_grad_view_rebased();
    regenerate_view_history(t, *m);
  }
  if (m->grad_fn_) return {m->grad_fn_, m->output_nr_};
  // A no-grad view that requires grad through its base has no edge: the
  // gradient reaching it is dropped, as torch's is.
  if (!m->requires_grad_) return {};
  std::shared_ptr<Node> acc = m->grad_accumulator_.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m->grad_accumulator_ = acc;
  }
  return {acc, 0};
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
  AutogradMeta& m = materialize_meta(t);
  if (m.retains_grad_ && m.grad_fn_) {
    // The tensor's history moves to a new node (an in-place op): so does
    // the retain_grad registration.
    auto& r = m.grad_fn_->retained();
    r.erase(std::remove_if(r.begin(), r.end(), [&m](auto& p) { return p.second == &m; }),
            r.end());
    fn->retained().emplace_back(output_nr, &m);
  }
  m.grad_fn_ = fn;
  m.output_nr_ = output_nr;
  if (m.is_view_ && m.version_) m.view_version_ = m.version_->value();
}

Tensor detach(const Tensor& t) {
  Tensor d = make_view(t, t.sizes(), t.strides(), t.storage_offset());
  d.impl()->set_wrapped_number(t.impl()->is_wrapped_number());
  d.impl()->set_view_base(nullptr);  // torch: x.detach()._base is None
  return d;
}

void retain_grad(const Tensor& t) {
  IGNIS_CHECK(requires_grad(t), "can't retain_grad on Tensor that has requires_grad=False");
  AutogradMeta& m = materialize_meta(t);
  if (!m.grad_fn_ || m.retains_grad_) return;  // leaves keep their grad anyway
  m.retains_grad_ = true;
  m.grad_fn_->retained().emplace_back(m.output_nr_, &m);
}

namespace {
int64_t next_hook_id() {
  static int64_t next_id = 0;
  return ++next_id;
}
}  // namespace

int64_t register_hook(const Tensor& t, std::function<Tensor(const Tensor&)> fn) {
  IGNIS_CHECK(requires_grad(t),
              "cannot register a hook on a tensor that doesn't require gradient");
  AutogradMeta& m = materialize_meta(t);
  int64_t id = next_hook_id();
  if (m.grad_fn_) m.grad_fn_->pre_hooks().emplace_back(m.output_nr_, TensorHook{id, std::move(fn)});
  else m.hooks_.push_back(TensorHook{id, std::move(fn)});
  return id;
}

void remove_hook(const Tensor& t, int64_t id) {
  AutogradMeta* m = get_meta(t);
  if (!m) return;
  auto drop = [id](auto& v, auto get) {
    v.erase(std::remove_if(v.begin(), v.end(), [&](auto& h) { return get(h).id == id; }), v.end());
  };
  drop(m->hooks_, [](TensorHook& h) -> TensorHook& { return h; });
  auto& post = m->post_accumulate_hooks_;
  post.erase(std::remove_if(post.begin(), post.end(), [&](auto& h) { return h.first == id; }),
             post.end());
  if (m->grad_fn_)
    drop(m->grad_fn_->pre_hooks(),
         [](std::pair<uint32_t, TensorHook>& p) -> TensorHook& { return p.second; });
}

int64_t register_post_accumulate_hook(const Tensor& t, std::function<void(const Tensor&)> fn) {
  IGNIS_CHECK(requires_grad(t),
              "cannot register a hook on a tensor that doesn't require gradient");
  IGNIS_CHECK(is_leaf(t), "post accumulate grad hooks cannot be registered on non-leaf tensors");
  AutogradMeta& m = materialize_meta(t);
  int64_t id = next_hook_id();
  m.post_accumulate_hooks_.emplace_back(id, std::move(fn));
  return id;
}

}  // namespace ignis::autograd

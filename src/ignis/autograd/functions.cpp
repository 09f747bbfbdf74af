#include "ignis/autograd/functions.h"

#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/formula.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/ops/op_def.h"

namespace ignis::autograd {

namespace {

OpRef add_op("add");
OpRef add_inplace_op("add_");
OpRef clone_op("clone");
OpRef grad_alloc_op("empty_strided");
OpRef grad_copy_op("copy_");

// A formula's gradient for an input of geometry `g`: summed over broadcast
// dims, cast to the input's dtype and moved to its device (the gradient of
// a copy between devices, x.cuda() or copy_ from a CPU source, comes back
// on the device the copy went to).
Tensor fit_to(Tensor grad, const TensorGeom& g) {
  if (!grad.defined()) return grad;
  if (grad.sizes() != g.sizes) grad = grad_ops::sum_to(grad, g.sizes);
  if (grad.dtype() != g.dtype) grad = grad_ops::to_dtype(grad, g.dtype);
  if (grad.device() != g.device) grad = grad_ops::to_device(grad, g.device);
  return grad;
}

}  // namespace

tensor_list AccumulateGrad::apply(tensor_list&& grads) {
  if (grads.empty() || !grads[0].defined()) return {};
  Tensor g = std::move(grads[0]);
  grads.clear();
  AutogradMeta& m = materialize_meta(variable_);
  for (auto& h : m.hooks_) {
    Tensor r = h.fn(g);
    if (r.defined()) g = std::move(r);
  }
  g = fit_to(std::move(g), TensorGeom{variable_.sizes(), variable_.dtype(), variable_.device()});
  if (!m.grad_.defined()) {
    // torch's layout contract: .grad is laid out as its variable where that
    // is dense (a channels-last weight gets a channels-last gradient, which
    // the optimizers' fused steps read in the weight's own order), else
    // densely in the variable's dim order.
    const DimVector layout = like_strides(variable_);
    if (grad_enabled()) {
      m.grad_ = g;  // create_graph: .grad keeps its history
    } else if (dense_in_order(g, layout) &&
               g.impl()->use_count() == 1 && !requires_grad(g)) {
      m.grad_ = std::move(g);  // nobody else sees it: steal it
    } else {
      // Shared (a + b hands the same gradient to both) or laid out otherwise
      // (expanded by sum's backward, or another dim order): .grad gets its
      // own copy in the variable's layout.
      m.grad_ = grad_alloc_op.tensor(variable_.sizes(), layout, g.dtype(), g.user_device());
      grad_copy_op.call(m.grad_, g);
      if (requires_grad(m.grad_)) m.grad_ = detach(m.grad_);
    }
  } else if (grad_enabled()) {
    m.grad_ = add_op.tensor(m.grad_, g);
  } else {
    add_inplace_op.call(m.grad_, g);
  }
  // A copy: a hook may remove itself (or others) while they run.
  if (!m.post_accumulate_hooks_.empty()) {
    auto hooks = m.post_accumulate_hooks_;
    for (auto& h : hooks) h.second(variable_);
  }
  return {};
}

tensor_list OpNode::apply(tensor_list&& grads) {
  bool any_saved = false;
  for (auto& v : saved_in)
    for (auto& s : v) any_saved |= s.was_defined();
  for (auto& s : saved_out) any_saved |= s.was_defined();
  IGNIS_CHECK(!(released_ && any_saved), kFreedGraphMessage);
  std::shared_ptr<Node> self = shared_from_this();
  const FunctionSchema& fs = op_.schema();

  // Saved values are version-checked when the formula reads them (GradCtx),
  // not here: torch saves a value only for the gradients whose formulas read
  // it, so writing a value that no needed gradient reads is no error (mul
  // saves `other` for self's gradient only when self needs one).
  Stack full = args;
  for (size_t i = 0; i < saved_in.size(); ++i) {
    if (saved_in[i].empty()) continue;
    const char* what = fs.args[i].name.c_str();
    if (fs.args[i].type == ArgType::TensorList) {
      std::vector<Tensor> l;
      for (auto& s : saved_in[i]) l.push_back(s.unpack(self, what, false));
      full[i] = IValue(std::move(l));
    } else {
      full[i] = IValue(saved_in[i][0].unpack(self, what, false));
    }
  }
  std::vector<Tensor> results;
  for (auto& s : saved_out) results.push_back(s.unpack(self, "result", false));

  bool any = false;
  for (auto& g : grads) any |= g.defined();
  tensor_list out(next_edges_.size());
  if (!any) return out;
  for (size_t j = 0; j < grads.size(); ++j) {
    if (grads[j].defined() || !is_differentiable_type(input_geom_[j].dtype)) continue;
    const TensorGeom& g = input_geom_[j];
    grads[j] = grad_ops::zeros(g.sizes, g.dtype, g.device);
  }

  std::vector<std::vector<Tensor>> in_grads(fs.args.size());
  GradCtx ctx{op_, full, geom, results, grads, needs, in_grads};
  ctx.check_input = [this, &self, &fs](int i) {
    if (i >= 0 && static_cast<size_t>(i) < saved_in.size())
      for (const SavedVariable& s : saved_in[i]) s.check_version(self, fs.args[i].name.c_str());
  };
  ctx.check_result = [this, &self](int j) {
    if (j >= 0 && static_cast<size_t>(j) < saved_out.size())
      saved_out[j].check_version(self, "result");
  };
  op_.def()->derivative(ctx);

  for (size_t i = 0; i < in_grads.size(); ++i) {
    if (in_grads[i].empty() || first_slot[i] < 0) continue;
    for (size_t k = 0; k < in_grads[i].size() && k < geom[i].size(); ++k) {
      size_t slot = static_cast<size_t>(first_slot[i]) + k;
      if (slot < out.size() && next_edges_[slot].valid())
        out[slot] = fit_to(std::move(in_grads[i][k]), geom[i][k]);
    }
  }
  return out;
}

void OpNode::release_variables() {
  released_ = true;
  for (auto& v : saved_in)
    for (auto& s : v) s.reset();
  for (auto& s : saved_out) s.reset();
}

namespace {
OpRef copy_op("copy_");
OpRef zero_op("zero_");

OpRef empty_strided_op("empty_strided");

// A zero (or g-filled) tensor laid out like the base, and the view's region of
// it. Allocated through the dispatcher, so that a trace records it (and a fake
// backward makes a fake of it).
Tensor base_like(const BaseGeom& b, ScalarType dtype, Device device) {
  Tensor t = empty_strided_op.tensor(b.sizes.vec(), b.strides.vec(), dtype, device);
  zero_op.call(t);
  return t;
}
OpRef as_strided_op("as_strided");

// The view's region of `base`. Under create_graph (`recorded`: the engine
// runs backward with grad mode on) it is an as_strided through the
// dispatcher, an autograd view: the writes into it below are then recorded
// on the fresh gradient as any in-place op on a view is (a CopySlices of its
// own), so a second derivative follows them -- even when the incoming
// gradient has no history, since the in-place op's formula may give the
// region one (y[1].mul_(x[0].sin()): g * sin(x[0]), a function of x).
Tensor region(const Tensor& base, const ViewGeom& v, bool recorded) {
  if (recorded)
    return as_strided_op.tensor(base, v.sizes.vec(), v.strides.vec(),
                                base.storage_offset() + v.offset);
  return make_view(base, v.sizes, v.strides, base.storage_offset() + v.offset);
}
}  // namespace

tensor_list CopySlices::apply(tensor_list&& grads) {
  tensor_list out(next_edges_.size());
  if (grads.empty() || !grads[0].defined()) return out;
  const Tensor& g = grads[0];
  Tensor result = base_like(base_, g.dtype(), g.device());
  copy_op.call(result, g);
  Tensor gv = region(result, view_, grad_enabled());
  tensor_list res = fn_->apply({clone_op.tensor(gv)});
  if (!res.empty() && res[0].defined()) copy_op.call(gv, res[0]);
  else zero_op.call(gv);
  out[0] = result;
  for (size_t i = 1; i < out.size() && i < res.size(); ++i) out[i] = std::move(res[i]);
  return out;
}

tensor_list AsStridedBackward::apply(tensor_list&& grads) {
  if (grads.empty() || !grads[0].defined()) return tensor_list(1);
  const Tensor& g = grads[0];
  Tensor result = base_like(base_, g.dtype(), g.device());
  copy_op.call(region(result, view_, grad_enabled()), g);
  return {result};
}

tensor_list NotImplementedNode::apply(tensor_list&&) {
  IGNIS_FAIL_KIND(NotImplemented, "the derivative for '", op_,
                  "' is not implemented in ignis (its inputs require grad)");
}

tensor_list DelayedErrorNode::apply(tensor_list&&) { IGNIS_FAIL(message_); }

std::string backward_name(const OpHandle& op) {
  std::string base = op.schema().name;
  while (!base.empty() && base.back() == '_') base.pop_back();
  size_t start = base.find_first_not_of('_');
  std::string n;
  bool up = true;
  for (size_t i = start == std::string::npos ? 0 : start; i < base.size(); ++i) {
    char c = base[i];
    if (c == '_') {
      up = true;
      continue;
    }
    n += up && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    up = false;
  }
  return n + "Backward0";
}

}  // namespace ignis::autograd

// The multi-tensor ops the optimizers call: torch's `_foreach_*` (a
// pointwise op applied to each tensor of a list) and the fused optimizer
// steps `_fused_adam_`, `_fused_adamw_`, `_fused_sgd_` (with torch's
// functional forms `_fused_adam` etc., for functionalization).
//
// A `_foreach_` op is a composite: for each position i it calls the
// per-tensor op with element i of each list argument (lists of tensors or
// of numbers) and the other arguments as given, so every device with the
// per-tensor op's kernels runs it and autograd sees the parts; on CUDA,
// without autograd, it is one multi-tensor launch instead (Note
// [Multi-tensor _foreach_ on CUDA]). The fused steps are structured ops with one kernel per
// device: the CPU's loops (kernels/cpu/fused_optimizer.h) and on CUDA one
// launch for up to 40 tensors (kernels/cuda/multi_tensor.h).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/core/error.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/fused_optimizer.h"
#include "ignis/kernels/cuda/multi_tensor.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

Tensor wrapped_number(const Scalar& v) {
  if (v.is_float()) return scalar_to_tensor(v.to_double(), ScalarType::Float64, true);
  return scalar_to_tensor_int(v.to_int(), v.is_bool() ? ScalarType::Bool : ScalarType::Int64,
                              true);
}

bool is_tensor_type(ArgType t) { return t == ArgType::Tensor || t == ArgType::OptTensor; }

// The argument `v` of a _foreach_ op at position i, as the per-tensor op's
// argument of type `want`: list elements are picked, numbers become the
// wrapped tensors a Python number would be where a tensor is expected.
IValue element(const IValue& v, ArgType declared, ArgType want, size_t i) {
  if (declared == ArgType::TensorList) return IValue(v.to_tensor_list()[i]);
  if (declared == ArgType::FloatList) {
    const Scalar x(v.to_double_list()[i]);
    return is_tensor_type(want) ? IValue(wrapped_number(x)) : IValue(x);
  }
  if (declared == ArgType::Scalar && is_tensor_type(want))
    return IValue(wrapped_number(v.to_scalar()));
  return v;
}

// Note [Multi-tensor _foreach_ on CUDA]
// A _foreach_ op is one call of its per-tensor op per tensor, which on CUDA
// is a launch per tensor. When nothing needs autograd (grad mode off, as in
// an optimizer step) and every tensor is a real CUDA tensor, contiguous, of
// a floating dtype, with each position's tensors of one shape and dtype (so
// no broadcasting or promotion), the op runs as one multi-tensor launch per
// 40 tensors instead (cuda::foreach_apply): the same scalar_ops formula in
// the same op-math type as the per-tensor kernels. Anything else (CPU
// tensors, grad mode with tensors requiring grad, mixed dtypes, zero_,
// copy_) goes tensor by tensor.
std::optional<cuda::ForeachFormula> formula_of(const std::string& per_tensor) {
  using Fm = cuda::ForeachFormula;
  static const std::map<std::string, Fm> formulas{
      {"add", Fm::Add}, {"sub", Fm::Sub}, {"mul", Fm::Mul}, {"div", Fm::Div},
      {"maximum", Fm::Maximum}, {"minimum", Fm::Minimum}, {"lerp", Fm::Lerp},
      {"addcmul", Fm::Addcmul}, {"addcdiv", Fm::Addcdiv}, {"sqrt", Fm::Sqrt}, {"neg", Fm::Neg},
      {"abs", Fm::Abs}, {"exp", Fm::Exp}, {"log", Fm::Log}, {"reciprocal", Fm::Reciprocal},
      {"sigmoid", Fm::Sigmoid}};
  std::string base = per_tensor;
  if (!base.empty() && base.back() == '_') base.pop_back();
  auto it = formulas.find(base);
  if (it == formulas.end()) return std::nullopt;
  return it->second;
}

// Runs the call as cuda::foreach_apply when Note [Multi-tensor _foreach_ on
// CUDA] allows; false (nothing done) otherwise.
bool foreach_on_cuda(const OpHandle& op, const std::string& per_tensor, Stack& s) {
  const auto formula = formula_of(per_tensor);
  const std::vector<Tensor>& self = s[0].to_tensor_list();
  if (!formula || self.empty()) return false;
  const FunctionSchema& fs = op.schema();
  const Device device = self[0].device();
  if (!device.is_cuda()) return false;
  const bool grad_mode = autograd::grad_enabled();
  // t may join self[i] (`like`): on the device, contiguous, of its shape and
  // dtype, and not needing autograd.
  auto fits = [&](const Tensor& t, const Tensor& like) {
    return t.defined() && t.device() == device && t.is_contiguous() &&
           t.dtype() == like.dtype() && t.sizes() == like.sizes() &&
           !(grad_mode && autograd::requires_grad(t));
  };
  for (const Tensor& t : self)
    if (!fits(t, t) || !is_floating(t.dtype())) return false;
  cuda::ForeachCall call;
  call.formula = *formula;
  std::vector<std::vector<Tensor>*> lists{&call.b, &call.c};
  size_t next_list = 0;
  for (size_t j = 1; j < fs.args.size(); ++j) {
    const Argument& a = fs.args[j];
    if (a.type == ArgType::TensorList) {
      const std::vector<Tensor>& l = s[j].to_tensor_list();
      for (size_t i = 0; i < self.size(); ++i)
        if (!fits(l[i], self[i])) return false;
      *lists[next_list++] = l;
    } else if (a.type == ArgType::FloatList) {
      call.scalars = s[j].to_double_list();
    } else if (a.type == ArgType::Scalar && a.name == "alpha") {
      call.alpha = s[j].to_scalar().to_double();
    } else if (a.type == ArgType::Scalar) {
      call.scalars.assign(self.size(), s[j].to_scalar().to_double());
    } else if (a.type == ArgType::Tensor) {  // the .Tensor overloads' 0-dim operand
      const Tensor& t = s[j].to_tensor();
      if (t.device().is_cpu() && is_floating(t.dtype())) {
        call.scalars.assign(self.size(), tensor_to_scalar(t).to_double());
      } else if (t.device() == device && !(grad_mode && autograd::requires_grad(t)) &&
                 std::all_of(self.begin(), self.end(),
                             [&](const Tensor& x) { return x.dtype() == t.dtype(); })) {
        call.operand = t;
      } else {
        return false;
      }
    }
  }
  call.self = self;  // the launcher groups positions by dtype
  if (fs.is_inplace()) {
    call.out = self;
  } else {
    for (const Tensor& t : self) call.out.push_back(empty_tensor(t.sizes(), t.dtype(), device));
  }
  cuda::foreach_apply(call);
  if (fs.is_inplace())
    for (const Tensor& t : call.out) t.impl()->version_counter().bump();
  s.clear();  // `self` refers into s: not used below
  if (!fs.is_inplace()) s.emplace_back(std::move(call.out));
  return true;
}

// The kernel of a _foreach_ op applying the op `per_tensor` ("add", "add_":
// the overload without a name) position by position; lists must be as long
// as `self`.
KernelFn foreach_kernel(std::string per_tensor) {
  return [per_tensor](const OpHandle& op, DispatchKeySet, Stack& s) {
    const OpHandle& each = Dispatcher::get().find_or_throw(per_tensor);
    const FunctionSchema &fs = op.schema(), &es = each.schema();
    const size_t n = s[0].to_tensor_list().size();
    for (size_t j = 1; j < fs.args.size(); ++j) {
      if (fs.args[j].type == ArgType::TensorList)
        IGNIS_CHECK(s[j].to_tensor_list().size() == n, op.name(), ": Tensor lists must have the "
                    "same number of tensors, got ", n, " and ", s[j].to_tensor_list().size());
      if (fs.args[j].type == ArgType::FloatList)
        IGNIS_CHECK(s[j].to_double_list().size() == n, op.name(), ": Tensor list must have same "
                    "number of elements as scalar list, got ", n, " and ",
                    s[j].to_double_list().size());
    }
    // The .Tensor overloads take one scalar tensor (a step count, a learning
    // rate on the device), as torch's do.
    if (fs.overload == "Tensor")
      IGNIS_CHECK(s[1].to_tensor().dim() == 0, op.name(), ": scalar tensor expected to be 0 "
                  "dim but it has ", s[1].to_tensor().dim(), " dimensions and ",
                  s[1].to_tensor().numel(), " elements.");
    if (foreach_on_cuda(op, per_tensor, s)) return;
    std::vector<Tensor> results;
    results.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      Stack e;
      e.reserve(es.args.size());
      for (size_t j = 0; j < fs.args.size(); ++j)
        e.push_back(element(s[j], fs.args[j].type, es.args[j].type, i));
      fill_defaults(es, e);
      each.call(e);
      if (!fs.returns.empty()) results.push_back(e[0].to_tensor());
    }
    s.clear();
    if (!fs.returns.empty()) s.emplace_back(std::move(results));
  };
}

// Declares _foreach_<name>.<overload>(Tensor[] self<args>) -> Tensor[] over
// `name`, and _foreach_<name>_ -> () over `name_`, each with its own args.
void foreach_pair(const std::string& name, const std::string& overload, const std::string& args,
                  const char* what) {
  const std::string ov = overload.empty() ? "" : "." + overload;
  def("_foreach_" + name + ov + "(Tensor[] self" + args + ") -> Tensor[]")
      .category(OpCategory::Composite).composite(foreach_kernel(name))
      .doc(str(what, ", for each tensor of a list"));
  def("_foreach_" + name + "_" + ov + "(Tensor(a!)[] self" + args + ") -> ()")
      .category(OpCategory::Composite).composite(foreach_kernel(name + "_"))
      .python_returns_self().doc(str(what, " in place, for each tensor of a list"));
}

// The functional form of an op that writes lists (torch's _fused_adam for
// _fused_adam_): the written lists are cloned, `inplace` updates the clones,
// and they are returned in argument order. What functionalization needs.
KernelFn functional_of(std::string inplace) {
  return [inplace](const OpHandle&, DispatchKeySet, Stack& s) {
    static const OpRef clone("clone");
    const OpHandle& w = Dispatcher::get().find_or_throw(inplace);
    const FunctionSchema& ws = w.schema();
    Stack e(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(ws.args.size()));
    std::vector<IValue> outs;
    for (size_t j = 0; j < ws.args.size(); ++j) {
      if (!ws.args[j].is_write) continue;
      std::vector<Tensor> copies;
      for (const Tensor& t : e[j].to_tensor_list()) copies.push_back(clone.tensor(t));
      e[j] = IValue(std::move(copies));
      outs.push_back(e[j]);
    }
    w.call(e);
    s.clear();
    for (IValue& o : outs) s.push_back(std::move(o));
  };
}

// The schema text without its alias annotations ("Tensor(a!)[]" -> "Tensor[]").
std::string without_annotations(std::string text) {
  for (size_t at = text.find("Tensor("); at != std::string::npos; at = text.find("Tensor(", at)) {
    const size_t close = text.find(')', at);
    text.erase(at + 6, close - at - 5);
    at += 6;
  }
  return text;
}

// Declares the in-place fused step `name_<ov>(args) -> ()` with its kernels
// and its functional form `name<ov>(args) -> returns`.
void fused_pair(const std::string& name, const std::string& ov, const std::string& args,
                const std::string& returns, MetaFn meta, ImplFn cpu, ImplFn cuda,
                const char* what) {
  def(name + "_" + ov + args + " -> ()")
      .category(OpCategory::Other).meta(meta).cpu(cpu).cuda(cuda).nondifferentiable()
      .doc(str(what, " of every parameter of the lists (CUDA: one launch per 40 tensors)"));
  def(name + ov + without_annotations(args) + " -> " + returns)
      .category(OpCategory::Composite).composite(functional_of(name + "_" + ov))
      .doc(str(what, " on copies of the parameters and states, which it returns"));
}

// ---- fused optimizer steps ----

// The lists of a fused step, checked as torch checks them: equal lengths,
// each state tensor of its parameter's shape and dtype, laid out as it,
// floating, on one device; parameters dense (contiguous, or in another dim
// order such as channels-last); steps one-element float32 tensors; the
// scaler's tensors (grad_scale, found_inf) one float32 element on that device.
void check_lists(const OpHandle& op, const std::vector<Tensor>& params,
                 std::initializer_list<std::pair<const char*, const std::vector<Tensor>*>> lists) {
  for (const Tensor& p : params) {
    IGNIS_CHECK(is_floating(p.dtype()), op.name(), ": expected floating point parameters, got ",
                scalar_type_name(p.dtype()));
    IGNIS_CHECK(is_non_overlapping_and_dense(p), op.name(),
                ": expected dense parameters (contiguous, or in another dim order), got one of "
                "shape ", p.shape_str(), " and strides ", shape_str(p.strides()));
  }
  for (const auto& [what, list] : lists) {
    IGNIS_CHECK(list->size() == params.size(), op.name(), ": expected as many ", what,
                " as parameters (", params.size(), "), got ", list->size());
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor &t = (*list)[i], &p = params[i];
      IGNIS_CHECK(t.defined() && t.sizes() == p.sizes() && t.dtype() == p.dtype() &&
                      t.device() == p.device() && dense_in_order(t, p.strides()),
                  op.name(), ": ", what, "[", i, "] must be a tensor of its parameter's shape ",
                  p.shape_str(), ", dtype ", scalar_type_name(p.dtype()), ", device ",
                  p.user_device().str(), " and layout (strides ", shape_str(p.strides()), ")");
    }
  }
}
void check_one_float(const OpHandle& op, const char* what, const Tensor& t, const Tensor& like) {
  if (!t.defined()) return;
  IGNIS_CHECK(t.numel() == 1 && t.dtype() == ScalarType::Float32, op.name(), ": ", what,
              " must be a one-element float32 tensor, got ", t.shape_str(), " ",
              scalar_type_name(t.dtype()));
  IGNIS_CHECK(!like.defined() || t.device() == like.device(), op.name(), ": ", what,
              " must be on the parameters' device ", like.user_device().str(), ", got ",
              t.user_device().str());
}

// _fused_adam(w)_(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
// state_steps, *, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
// grad_scale, found_inf); lr is a float or (overload tensor_lr) a tensor.
AdamLists adam_lists(const OpCall& c) {
  return {c.args[0].to_tensor_list(), c.args[1].to_tensor_list(), c.args[2].to_tensor_list(),
          c.args[3].to_tensor_list(), c.args[4].to_tensor_list(), c.args[5].to_tensor_list()};
}
template <bool Decoupled>
AdamStep adam_step(const OpCall& c) {
  AdamStep h;
  if (c.args[6].is_tensor()) h.lr_tensor = c.tensor(6);
  else h.lr = c.double_arg(6);
  h.beta1 = c.double_arg(7);
  h.beta2 = c.double_arg(8);
  h.weight_decay = c.double_arg(9);
  h.eps = c.double_arg(10);
  h.amsgrad = c.bool_arg(11);
  h.maximize = c.bool_arg(12);
  h.grad_scale = c.opt_tensor(13);
  h.found_inf = c.opt_tensor(14);
  h.decoupled = Decoupled;
  return h;
}
template <bool Decoupled>
void fused_adam_meta(OpCall& c) {
  const AdamLists t = adam_lists(c);
  const AdamStep h = adam_step<Decoupled>(c);
  check_lists(c.op, t.params, {{"grads", &t.grads}, {"exp_avgs", &t.exp_avgs},
                               {"exp_avg_sqs", &t.exp_avg_sqs}});
  if (h.amsgrad) check_lists(c.op, t.params, {{"max_exp_avg_sqs", &t.max_exp_avg_sqs}});
  IGNIS_CHECK(t.steps.size() == t.params.size(), c.op.name(), ": expected as many state_steps "
              "as parameters (", t.params.size(), "), got ", t.steps.size());
  const Tensor like = t.params.empty() ? Tensor() : t.params[0];
  for (const Tensor& s : t.steps) check_one_float(c.op, "each state_step", s, like);
  check_one_float(c.op, "grad_scale", h.grad_scale, like);
  check_one_float(c.op, "found_inf", h.found_inf, like);
  if (h.lr_tensor.defined()) check_one_float(c.op, "lr", h.lr_tensor, Tensor());
}
void bump_all(std::initializer_list<const std::vector<Tensor>*> lists) {
  for (const auto* l : lists)
    for (const Tensor& t : *l) t.impl()->version_counter().bump();
}
template <bool Decoupled>
void fused_adam_cpu(OpCall& c) {
  const AdamLists t = adam_lists(c);
  cpu::fused_adam(t, adam_step<Decoupled>(c));
  bump_all({&t.params, &t.grads, &t.exp_avgs, &t.exp_avg_sqs, &t.max_exp_avg_sqs});
}
template <bool Decoupled>
void fused_adam_cuda(OpCall& c) {
  const AdamLists t = adam_lists(c);
  cuda::fused_adam(t, adam_step<Decoupled>(c));
  bump_all({&t.params, &t.grads, &t.exp_avgs, &t.exp_avg_sqs, &t.max_exp_avg_sqs});
}

// _fused_sgd_(self, grads, momentum_buffer_list, *, weight_decay, momentum,
// lr, dampening, nesterov, maximize, is_first_step, grad_scale, found_inf).
SgdLists sgd_lists(const OpCall& c) {
  return {c.args[0].to_tensor_list(), c.args[1].to_tensor_list(), c.args[2].to_tensor_list()};
}
SgdStep sgd_step(const OpCall& c) {
  SgdStep h;
  h.weight_decay = c.double_arg(3);
  h.momentum = c.double_arg(4);
  if (c.args[5].is_tensor()) h.lr_tensor = c.tensor(5);
  else h.lr = c.double_arg(5);
  h.dampening = c.double_arg(6);
  h.nesterov = c.bool_arg(7);
  h.maximize = c.bool_arg(8);
  h.first_step = c.bool_arg(9);
  h.grad_scale = c.opt_tensor(10);
  h.found_inf = c.opt_tensor(11);
  return h;
}
void fused_sgd_meta(OpCall& c) {
  const SgdLists t = sgd_lists(c);
  const SgdStep h = sgd_step(c);
  check_lists(c.op, t.params, {{"grads", &t.grads}});
  if (!t.momentum_buffers.empty())
    check_lists(c.op, t.params, {{"momentum buffers", &t.momentum_buffers}});
  IGNIS_CHECK(h.momentum == 0 || !t.momentum_buffers.empty() || t.params.empty(), c.op.name(),
              ": momentum ", h.momentum, " needs a momentum buffer per parameter");
  const Tensor like = t.params.empty() ? Tensor() : t.params[0];
  check_one_float(c.op, "grad_scale", h.grad_scale, like);
  check_one_float(c.op, "found_inf", h.found_inf, like);
  if (h.lr_tensor.defined()) check_one_float(c.op, "lr", h.lr_tensor, Tensor());
}
void fused_sgd_cpu(OpCall& c) {
  const SgdLists t = sgd_lists(c);
  cpu::fused_sgd(t, sgd_step(c));
  bump_all({&t.params, &t.grads, &t.momentum_buffers});
}
void fused_sgd_cuda(OpCall& c) {
  const SgdLists t = sgd_lists(c);
  cuda::fused_sgd(t, sgd_step(c));
  bump_all({&t.params, &t.grads, &t.momentum_buffers});
}

}  // namespace

void register_foreach_ops() {
  // Binary: a number, a list of numbers, a list of tensors, one tensor.
  for (const char* name : {"add", "sub"}) {
    const std::string n = name;
    const char* what = n == "add" ? "self + alpha * other" : "self - alpha * other";
    foreach_pair(n, "Scalar", ", Scalar scalar", what);
    foreach_pair(n, "ScalarList", ", float[] scalars", what);
    foreach_pair(n, "List", ", Tensor[] other, *, Scalar alpha=1", what);
  }
  foreach_pair("add", "Tensor", ", Tensor other, *, Scalar alpha=1", "self + alpha * other");
  for (const char* name : {"mul", "div"}) {
    const std::string n = name;
    const char* what = n == "mul" ? "self * other" : "self / other";
    foreach_pair(n, "Scalar", ", Scalar scalar", what);
    foreach_pair(n, "ScalarList", ", float[] scalars", what);
    foreach_pair(n, "List", ", Tensor[] other", what);
    foreach_pair(n, "Tensor", ", Tensor other", what);
  }
  for (const char* name : {"maximum", "minimum"}) {
    foreach_pair(name, "Scalar", ", Scalar scalar", name);
    foreach_pair(name, "ScalarList", ", float[] scalars", name);
    foreach_pair(name, "List", ", Tensor[] other", name);
  }
  for (const char* name : {"sqrt", "neg", "abs", "exp", "log", "reciprocal", "sigmoid"})
    foreach_pair(name, "", "", name);
  foreach_pair("lerp", "Scalar", ", Tensor[] tensors1, Scalar weight",
               "self + weight * (end - self)");
  foreach_pair("lerp", "List", ", Tensor[] tensors1, Tensor[] weights",
               "self + weight * (end - self)");
  for (const char* name : {"addcmul", "addcdiv"}) {
    const std::string n = name;
    const char* what = n == "addcmul" ? "self + value * tensor1 * tensor2"
                                      : "self + value * tensor1 / tensor2";
    foreach_pair(n, "Scalar", ", Tensor[] tensor1, Tensor[] tensor2, Scalar value=1", what);
    foreach_pair(n, "ScalarList", ", Tensor[] tensor1, Tensor[] tensor2, float[] scalars", what);
  }
  def("_foreach_zero_(Tensor(a!)[] self) -> ()").category(OpCategory::Composite)
      .composite(foreach_kernel("zero_")).python_returns_self()
      .doc("zero each tensor of a list");
  def("_foreach_copy_(Tensor(a!)[] self, Tensor[] src, bool non_blocking=False) -> ()")
      .category(OpCategory::Composite).composite(foreach_kernel("copy_")).python_returns_self()
      .doc("copy src[i] into self[i]");

  const std::string adam_args =
      "(Tensor(a!)[] self, Tensor(b!)[] grads, Tensor(c!)[] exp_avgs, Tensor(d!)[] exp_avg_sqs, "
      "Tensor(e!)[] max_exp_avg_sqs, Tensor[] state_steps, *, ";
  const std::string adam_rest =
      ", float beta1, float beta2, float weight_decay, float eps, bool amsgrad, bool maximize, "
      "Tensor? grad_scale=None, Tensor? found_inf=None)";
  const std::string adam_returns =
      "(Tensor[] self_out, Tensor[] grads_out, Tensor[] exp_avgs_out, Tensor[] exp_avg_sqs_out, "
      "Tensor[] max_exp_avg_sqs_out)";
  for (const char* lr : {"float lr", "Tensor lr"}) {
    const std::string ov = lr[0] == 'T' ? ".tensor_lr" : "";
    fused_pair("_fused_adam", ov, adam_args + lr + adam_rest, adam_returns,
               fused_adam_meta<false>, fused_adam_cpu<false>, fused_adam_cuda<false>,
               "one Adam step");
    fused_pair("_fused_adamw", ov, adam_args + lr + adam_rest, adam_returns,
               fused_adam_meta<true>, fused_adam_cpu<true>, fused_adam_cuda<true>,
               "one AdamW step");
    fused_pair("_fused_sgd", ov,
               std::string("(Tensor(a!)[] self, Tensor(b!)[] grads, Tensor(c!)[] "
                           "momentum_buffer_list, *, float weight_decay, float momentum, ") +
                   lr + ", float dampening, bool nesterov, bool maximize, bool is_first_step, "
                   "Tensor? grad_scale=None, Tensor? found_inf=None)",
               "(Tensor[] self_out, Tensor[] grads_out, Tensor[] momentum_buffer_list_out)",
               fused_sgd_meta, fused_sgd_cpu, fused_sgd_cuda, "one SGD step");
  }
}

}  // namespace ignis

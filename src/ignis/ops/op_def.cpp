#include "ignis/ops/op_def.h"

#include <memory>

#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/ops/decompositions.h"

namespace ignis {

const char* category_name(OpCategory c) {
  switch (c) {
    case OpCategory::Pointwise: return "pointwise";
    case OpCategory::Reduction: return "reduction";
    case OpCategory::View: return "view";
    case OpCategory::Template: return "template";
    case OpCategory::Creation: return "creation";
    case OpCategory::Composite: return "composite";
    case OpCategory::Other: return "other";
  }
  return "?";
}

Tensor& OpCall::alloc(const DimVector& sizes, ScalarType dtype) {
  outputs.push_back(empty_tensor(sizes, dtype, device));
  return outputs.back();
}

Tensor& OpCall::alloc_strided(const DimVector& sizes, const DimVector& strides, ScalarType dtype) {
  outputs.push_back(empty_strided_tensor(sizes, strides, dtype, device));
  return outputs.back();
}

Tensor& OpCall::alloc_in_format(const DimVector& sizes, ScalarType dtype, MemoryFormat format) {
  if (format == MemoryFormat::Contiguous) return alloc(sizes, dtype);
  return alloc_strided(sizes, strides_in_format(sizes, format), dtype);
}

static std::vector<std::unique_ptr<OpDef>>& def_storage() {
  static auto* v = new std::vector<std::unique_ptr<OpDef>>();
  return *v;
}

const std::vector<const OpDef*>& all_op_defs() {
  static std::vector<const OpDef*> view;
  if (view.size() != def_storage().size()) {
    view.clear();
    for (auto& d : def_storage()) view.push_back(d.get());
  }
  return view;
}

OpBuilder::OpBuilder(std::string schema) {
  def_storage().push_back(std::make_unique<OpDef>());
  d_ = def_storage().back().get();
  d_->schema = std::move(schema);
}

void alias(const std::string& name, const std::string& op) {
  Dispatcher& d = Dispatcher::get();
  d.register_alias(name, op);
  if (!d.overloads(op + "_").empty()) d.register_alias(name + "_", op + "_");
}

namespace {

Device output_device(const OpHandle& op, const Stack& s, DispatchKey k) {
  if (k == DispatchKey::Meta) return Device(DeviceType::Meta);
  return call_device(op, s, k == DispatchKey::CUDA ? Device(DeviceType::CUDA)
                                                   : Device(DeviceType::CPU));
}

// Pops the arguments and pushes the outputs (for in-place ops the outputs
// are the mutated arguments, which the meta rule returns as outputs too).
void finish(OpCall& call, Stack& s) {
  std::vector<Tensor> outs = std::move(call.outputs);
  s.clear();
  for (auto& t : outs) s.emplace_back(std::move(t));
}

KernelFn structured_kernel(const OpDef* d, DispatchKey k) {
  MetaFn meta = d->meta;
  ImplFn impl = k == DispatchKey::CPU ? d->cpu : k == DispatchKey::CUDA ? d->cuda : nullptr;
  bool meta_only = k == DispatchKey::Meta;
  bool cross_device = d->cross_device;
  return [meta, impl, meta_only, cross_device, k](const OpHandle& op, DispatchKeySet, Stack& s) {
    if (!cross_device) check_same_device(op, s);
    OpCall call{op, s, output_device(op, s, k), {}, nullptr};
    meta(call);
    if (!meta_only) impl(call);
    finish(call, s);
  };
}

// The CUDA slot of a structured op with no CUDA kernel yet: a call that mixes
// devices gets torch's device-mismatch error first (as it would from a
// kernel), one on CUDA tensors alone a NotImplementedError naming the op.
void missing_cuda_kernel(const OpHandle& op, DispatchKeySet, Stack& s) {
  check_same_device(op, s);
  IGNIS_NOT_IMPLEMENTED("Could not run '", op.name(), "' with arguments from the 'CUDA' backend: ",
                        "ignis has no CUDA kernel for this operator yet");
}

// The CUDA slot of a structured op with no CUDA kernel but a decomposition:
// the decomposition runs on the CUDA tensors, its parts coming back through
// the dispatcher to their own CUDA kernels (or to this fallback in turn).
// Autograd, which recorded the whole op above this kernel, is excluded so
// that the parts are not recorded as well (as AOT's tracer applies them).
// Results are the decomposition's: the same values as the CPU's fused
// kernel up to rounding, but checks that need the data (a target out of
// range) are left to the ops it calls.
KernelFn decomposed_cuda_kernel(DecompFn decompose) {
  return [decompose](const OpHandle& op, DispatchKeySet, Stack& s) {
    check_same_device(op, s);
    ExcludeDispatchKeyGuard no_autograd(kAutogradKeys);
    decompose(op, s);
  };
}

// The comma-separated names of `list`, trimmed.
std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string::npos) end = list.size();
    std::string name = list.substr(pos, end - pos);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    pos = end + 1;
    if (!name.empty()) names.push_back(std::move(name));
  }
  return names;
}

// Turns the names of .derivative()'s `saves` into argument/output bit masks.
void parse_saves(OpDef* d, const FunctionSchema& fs) {
  for (const std::string& name : split_names(d->saves)) {
    if (name.rfind("result", 0) == 0) {
      int j = name.size() == 6 ? 0 : std::stoi(name.substr(6));
      d->save_outputs |= uint64_t(1) << j;
      continue;
    }
    int i = fs.find_arg(name);
    IGNIS_INTERNAL_ASSERT(i >= 0, "derivative of ", fs.full_name(), " saves unknown '", name, "'");
    d->save_inputs |= uint64_t(1) << i;
  }
}

// .not_differentiable()'s names as an argument bit mask.
void parse_nondiff(OpDef* d, const FunctionSchema& fs) {
  for (const std::string& name : split_names(d->nondiff)) {
    int i = fs.find_arg(name);
    IGNIS_INTERNAL_ASSERT(i >= 0, fs.full_name(), " declares unknown argument '", name,
                          "' not differentiable");
    d->nondiff_inputs |= uint64_t(1) << i;
  }
}

}  // namespace

Device call_device(const OpHandle& op, const Stack& s, Device otherwise) {
  const auto& args = op.schema().args;
  for (size_t i = 0; i < args.size(); ++i)
    if (s[i].is_device()) return s[i].to_device();
  // A 0-dim CPU tensor beside tensors on another device is a scalar to the
  // kernel (check_same_device allows it; TensorIterator reads it on the
  // host), as in torch: it does not choose the device. pow's derivative
  // masks with `exponent == 0`, a CPU scalar for a number exponent, in a
  // where() over CUDA gradients.
  const Tensor* cpu_scalar = nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    const IValue& v = s[i];
    if (v.is_tensor() && !v.to_tensor().impl()->is_wrapped_number()) {
      const Tensor& t = v.to_tensor();
      if (t.dim() == 0 && t.user_device().is_cpu()) {
        if (!cpu_scalar) cpu_scalar = &t;
        continue;
      }
      return t.user_device();
    }
    if (v.is_tensor_list() && !v.to_tensor_list().empty())
      return v.to_tensor_list()[0].user_device();
  }
  return cpu_scalar ? cpu_scalar->user_device() : otherwise;
}

void check_same_device(const OpHandle& op, const Stack& s) {
  const Tensor* first = nullptr;
  auto visit = [&](const Tensor& t) {
    if (!t.defined() || (t.dim() == 0 && t.user_device().is_cpu())) return;
    if (!first) {
      first = &t;
      return;
    }
    IGNIS_CHECK(t.user_device() == first->user_device(),
                "Expected all tensors to be on the same device, but found at least two devices, ",
                first->user_device().str(), " and ", t.user_device().str(), "! (in ", op.name(),
                ")");
  };
  for (size_t i = 0; i < op.schema().args.size(); ++i) {
    const IValue& v = s[i];
    if (v.is_tensor()) visit(v.to_tensor());
    else if (v.is_tensor_list()) for (const Tensor& t : v.to_tensor_list()) visit(t);
    // Index lists (Tensor?[]) may stay on the CPU, as PyTorch allows.
  }
}

OpBuilder::~OpBuilder() {
  OpHandle& h = Dispatcher::get().register_op(d_->schema);
  h.set_def(d_);
  parse_saves(d_, h.schema());
  parse_nondiff(d_, h.schema());
  d_->is_view = h.schema().is_out_of_place_view();
  // A functional composite decomposes into what its kernel calls: AOT runs
  // decompositions with autograd excluded, where the kernel would run below
  // the tracer and the op be recorded whole. In-place composites reach the
  // tracer only as their functional form (functionalization).
  if (d_->composite_implicit && !d_->core && !d_->decomposition && !h.schema().is_inplace())
    d_->decomposition = decomp::composite;
  IGNIS_INTERNAL_ASSERT(!d_->core || !d_->decomposition, "core op ", d_->schema,
                        " declares a decomposition");
  if (d_->category == OpCategory::Creation) d_->nondifferentiable = true;
  if (d_->any_backend) {
    for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::Meta})
      h.set_kernel(k, d_->any_backend);
    if (d_->composite_implicit) {
      for (DispatchKey k : {DispatchKey::AutogradCPU, DispatchKey::AutogradCUDA,
                            DispatchKey::AutogradMeta})
        h.set_kernel(k, d_->any_backend);
    }
    return;
  }
  IGNIS_INTERNAL_ASSERT(d_->meta != nullptr, "op ", d_->schema, " declares neither a meta rule nor a kernel");
  h.set_kernel(DispatchKey::Meta, structured_kernel(d_, DispatchKey::Meta));
  if (d_->cpu) h.set_kernel(DispatchKey::CPU, structured_kernel(d_, DispatchKey::CPU));
  if (d_->cuda) h.set_kernel(DispatchKey::CUDA, structured_kernel(d_, DispatchKey::CUDA));
  else if (d_->decomposition)
    h.set_kernel(DispatchKey::CUDA, decomposed_cuda_kernel(d_->decomposition));
  else h.set_kernel(DispatchKey::CUDA, missing_cuda_kernel);
}

}  // namespace ignis

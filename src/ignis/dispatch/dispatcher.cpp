#include "ignis/dispatch/dispatcher.h"

namespace ignis {

LocalDispatchKeySet& tls_dispatch_keys() {
  static thread_local LocalDispatchKeySet tls;
  return tls;
}

static bool is_backend_key(DispatchKey k) {
  return kBackendKeys.has(k);
}

OpHandle::OpHandle(FunctionSchema schema) : schema_(std::move(schema)) {
  full_name_ = schema_.full_name();
  for (size_t i = 0; i < schema_.args.size(); ++i) {
    switch (schema_.args[i].type) {
      case ArgType::Tensor:
      case ArgType::OptTensor:
      case ArgType::TensorList:
      case ArgType::OptTensorList:
        tensor_args_.push_back(static_cast<int>(i));
        break;
      case ArgType::Device:
      case ArgType::OptDevice:
        if (device_arg_ < 0) device_arg_ = static_cast<int>(i);
        break;
      default:
        break;
    }
  }
  rebuild_table();
}

DispatchKeySet OpHandle::compute_keys(const Stack& stack) const {
  DispatchKeySet ks;
  bool wrapped_complex = false;
  for (int i : tensor_args_) {
    const IValue& v = stack[i];
    if (v.is_tensor()) {
      const Tensor& t = v.to_tensor();
      // A wrapped Python number lives on the CPU but must not pull a CUDA op
      // onto the CPU backend; a Python complex still makes the op complex.
      if (!t.impl()->is_wrapped_number()) ks = ks | t.key_set();
      else wrapped_complex |= t.key_set().has(DispatchKey::Complex);
    } else if (v.is_tensor_list() || v.is_opt_tensor_list()) {
      for (const Tensor& t : v.is_tensor_list() ? v.to_tensor_list() : v.to_opt_tensor_list())
        if (t.defined()) ks = ks | t.key_set();
    }
  }
  if (ks.empty()) {
    // Factories and all-scalar calls: the device argument decides.
    DeviceType dt = DeviceType::CPU;
    if (device_arg_ >= 0 && stack[device_arg_].is_device()) dt = stack[device_arg_].to_device().type;
    else {
      for (int i : tensor_args_)
        if (stack[i].is_tensor()) dt = stack[i].to_tensor().device().type;
    }
    ks = default_keys_for_device(dt);
  }
  if (wrapped_complex) ks = ks.add(DispatchKey::Complex);
  const LocalDispatchKeySet& tls = tls_dispatch_keys();
  return (ks | tls.included) - tls.excluded;
}

DispatchKey OpHandle::resolve(DispatchKeySet ks) const {
  return (ks - DispatchKeySet::from_bits(skip_mask_)).highest();
}

void OpHandle::redispatch(DispatchKeySet ks, Stack& stack) const {
  DispatchKey k = resolve(ks);
  const KernelFn* fn = table_[idx(k)];
  if (__builtin_expect(fn == nullptr, 0)) fail_missing(k, ks);
  (*fn)(*this, ks, stack);
}

void OpHandle::fail_missing(DispatchKey k, DispatchKeySet ks) const {
  if (k == DispatchKey::Undefined)
    IGNIS_FAIL_KIND(NotImplemented, "Could not run '", full_name_,
                    "': no dispatch key left in ", ks.str());
  IGNIS_FAIL_KIND(NotImplemented, "Could not run '", full_name_, "' with arguments from the '",
                  dispatch_key_name(k), "' backend: ignis has no ", dispatch_key_name(k),
                  " kernel for this operator");
}

void OpHandle::set_kernel(DispatchKey k, KernelFn fn) {
  kernels_[idx(k)] = std::move(fn);
  explicit_fallthrough_ &= ~(uint64_t(1) << idx(k));
  rebuild_table();
}

void OpHandle::set_fallthrough(DispatchKey k) {
  kernels_[idx(k)] = nullptr;
  explicit_fallthrough_ |= uint64_t(1) << idx(k);
  rebuild_table();
}

void OpHandle::rebuild_table() {
  const Dispatcher& d = Dispatcher::get();
  skip_mask_ = 0;
  for (int i = 1; i < kNumDispatchKeys; ++i) {
    auto k = static_cast<DispatchKey>(i);
    uint64_t bit = uint64_t(1) << i;
    table_[i] = nullptr;
    if (kernels_[i]) {
      table_[i] = &kernels_[i];
    } else if (explicit_fallthrough_ & bit) {
      skip_mask_ |= bit;
    } else if (const KernelFn* fb = d.fallback(k)) {
      table_[i] = fb;
    } else if (!is_backend_key(k)) {
      skip_mask_ |= bit;
    }
  }
}

Dispatcher& Dispatcher::get() {
  static Dispatcher* d = new Dispatcher();  // never destroyed: kernels may run at exit
  return *d;
}

OpHandle* Dispatcher::find(const std::string& full_name) const {
  auto it = by_name_.find(full_name);
  if (it != by_name_.end()) return it->second;
  size_t dot = full_name.find('.');
  const std::string* target = alias_target(full_name.substr(0, dot));
  if (!target) return nullptr;
  it = by_name_.find(dot == std::string::npos ? *target : *target + full_name.substr(dot));
  return it == by_name_.end() ? nullptr : it->second;
}

const std::string* Dispatcher::alias_target(const std::string& name) const {
  auto it = alias_to_.find(name);
  return it == alias_to_.end() ? nullptr : &it->second;
}

OpHandle& Dispatcher::find_or_throw(const std::string& full_name) const {
  OpHandle* h = find(full_name);
  IGNIS_CHECK_KIND(Internal, h != nullptr, "no operator named '", full_name, "' is registered");
  return *h;
}

const std::vector<OpHandle*>& Dispatcher::overloads(const std::string& base_name) const {
  static const std::vector<OpHandle*> empty;
  const std::string* target = alias_target(base_name);
  auto it = by_base_.find(target ? *target : base_name);
  return it == by_base_.end() ? empty : it->second;
}

OpHandle& Dispatcher::register_op(const std::string& schema_text) {
  FunctionSchema fs = parse_schema(schema_text);
  std::string full = fs.full_name();
  IGNIS_CHECK_KIND(Internal, by_name_.count(full) == 0, "operator '", full,
                   "' registered twice");
  std::string base = fs.name;
  IGNIS_CHECK_KIND(Internal, !alias_to_.count(base), "operator '", full,
                   "' registered under the name of an alias");
  ops_.push_back(std::make_unique<OpHandle>(std::move(fs)));
  OpHandle* h = ops_.back().get();
  by_name_[full] = h;
  by_base_[base].push_back(h);
  return *h;
}

void Dispatcher::register_alias(const std::string& alias, const std::string& base_name) {
  IGNIS_CHECK_KIND(Internal, by_base_.count(base_name) != 0, "alias '", alias,
                   "' names no operator '", base_name, "'");
  IGNIS_CHECK_KIND(Internal, by_base_.count(alias) == 0 && alias_to_.count(alias) == 0,
                   "alias '", alias, "' is already an operator or an alias");
  alias_to_[alias] = base_name;
  alias_list_.emplace_back(alias, base_name);
}

void Dispatcher::register_fallback(DispatchKey k, KernelFn fn) {
  fallbacks_[static_cast<size_t>(k)] = std::move(fn);
  for (auto& op : ops_) op->rebuild_table();
}

void fill_defaults(const FunctionSchema& schema, Stack& stack) {
  for (size_t i = stack.size(); i < schema.args.size(); ++i) {
    const Argument& a = schema.args[i];
    IGNIS_CHECK_TYPE(a.has_default, schema.full_name(), "() missing required argument '",
                     a.name, "' (position ", i, ")");
    stack.push_back(a.default_value);
  }
}

}  // namespace ignis

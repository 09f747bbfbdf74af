#include "ignis/dispatch/dispatch_key.h"

namespace ignis {

const char* dispatch_key_name(DispatchKey k) {
  switch (k) {
    case DispatchKey::Undefined: return "Undefined";
#define IGNIS_KEY(k)     \
  case DispatchKey::k:   \
    return #k;
    IGNIS_FORALL_DISPATCH_KEYS(IGNIS_KEY)
#undef IGNIS_KEY
    default: return "?";
  }
}

bool parse_dispatch_key(const std::string& name, DispatchKey* out) {
  for (int i = 1; i < kNumDispatchKeys; ++i) {
    if (name == dispatch_key_name(static_cast<DispatchKey>(i))) {
      *out = static_cast<DispatchKey>(i);
      return true;
    }
  }
  return false;
}

std::string DispatchKeySet::str() const {
  std::string out = "DispatchKeySet(";
  bool first = true;
  for (int i = kNumDispatchKeys - 1; i > 0; --i) {
    if (has(static_cast<DispatchKey>(i))) {
      if (!first) out += ", ";
      out += dispatch_key_name(static_cast<DispatchKey>(i));
      first = false;
    }
  }
  return out + ")";
}

DispatchKey backend_key(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return DispatchKey::CPU;
    case DeviceType::CUDA: return DispatchKey::CUDA;
    case DeviceType::Meta: return DispatchKey::Meta;
  }
  return DispatchKey::Undefined;
}

DispatchKey autograd_key(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return DispatchKey::AutogradCPU;
    case DeviceType::CUDA: return DispatchKey::AutogradCUDA;
    case DeviceType::Meta: return DispatchKey::AutogradMeta;
  }
  return DispatchKey::Undefined;
}

DispatchKeySet default_keys_for_device(DeviceType t) {
  return DispatchKeySet(backend_key(t))
      .add(autograd_key(t))
      .add(DispatchKey::ADInplaceOrView);
}

}  // namespace ignis

#include "ignis/autocast/autocast_mode.h"

#include <unordered_map>
#include <utility>

#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/core/error.h"
#include "ignis/dispatch/dispatcher.h"

namespace ignis::autocast {

namespace {

struct ThreadState {
  ScalarType cpu_dtype = ScalarType::BFloat16;
  ScalarType cuda_dtype = ScalarType::Float16;
  bool cache_enabled = true;
  int nesting = 0;
  // Keyed by the weight's TensorImpl; the weight itself is held too, so the
  // key cannot be reused by another tensor while the entry lives.
  std::unordered_map<const TensorImpl*, std::pair<Tensor, Tensor>> cache;
};

ThreadState& state() {
  thread_local ThreadState s;
  return s;
}

ScalarType& dtype_slot(DeviceType t) {
  return t == DeviceType::CUDA ? state().cuda_dtype : state().cpu_dtype;
}

DispatchKey checked_key(DeviceType t) {
  DispatchKey k = autocast_key(t);
  IGNIS_CHECK(k != DispatchKey::Undefined, "User specified an unsupported autocast device_type '",
              device_type_name(t), "'");
  return k;
}

const OpRef to_copy_op("_to_copy");

Tensor cast(const Tensor& t, ScalarType dtype) { return to_copy_op.tensor(t, dtype); }

}  // namespace

DispatchKey autocast_key(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return DispatchKey::AutocastCPU;
    case DeviceType::CUDA: return DispatchKey::AutocastCUDA;
    default: return DispatchKey::Undefined;
  }
}

bool is_enabled(DeviceType t) {
  DispatchKey k = autocast_key(t);
  return k != DispatchKey::Undefined && tls_dispatch_keys().included.has(k);
}

void set_enabled(DeviceType t, bool on) {
  DispatchKey k = checked_key(t);
  DispatchKeySet& inc = tls_dispatch_keys().included;
  inc = on ? inc.add(k) : inc.remove(k);
}

ScalarType get_dtype(DeviceType t) {
  checked_key(t);
  return dtype_slot(t);
}

void set_dtype(DeviceType t, ScalarType dtype) {
  checked_key(t);
  dtype_slot(t) = dtype;  // unchecked, as torch's: ignis.autocast warns and disables itself
}

int64_t state_key() {
  int64_t key = is_cache_enabled() ? 1 : 0;
  if (is_enabled(DeviceType::CPU)) key |= 2 | (int64_t(dtype_slot(DeviceType::CPU)) << 8);
  if (is_enabled(DeviceType::CUDA)) key |= 4 | (int64_t(dtype_slot(DeviceType::CUDA)) << 16);
  return key;
}

std::string describe_state_key(int64_t key) {
  auto dev = [&](int64_t bit, int shift) -> std::string {
    return (key & bit) ? dtype_name(static_cast<ScalarType>((key >> shift) & 0xff)) : "off";
  };
  return "cpu=" + dev(2, 8) + " cuda=" + dev(4, 16) + " cache=" + ((key & 1) ? "on" : "off");
}

bool is_cache_enabled() { return state().cache_enabled; }
void set_cache_enabled(bool on) { state().cache_enabled = on; }
int increment_nesting() { return ++state().nesting; }
int decrement_nesting() { return --state().nesting; }

Tensor cached_cast(const Tensor& t, ScalarType dtype, DeviceType device) {
  if (t.dtype() == dtype) return t;
  ThreadState& s = state();
  autograd::AutogradMeta* m = autograd::get_meta(t);
  // Under no_grad the cast has no history: caching it would hand a cast
  // without a path back to the weight to a later op that records one.
  // Fakes (tracing) are not cached: an entry would keep a trace's fakes alive
  // until the user's region ends, and the trace records each cast anyway.
  bool cacheable = s.cache_enabled && autograd::grad_enabled() && !t.is_fake() &&
                   dtype == dtype_slot(device) &&
                   t.dtype() == ScalarType::Float32 && m && m->requires_grad_ && !m->grad_fn_ &&
                   !m->is_view_;
  if (!cacheable) return cast(t, dtype);
  auto it = s.cache.find(t.impl());
  if (it != s.cache.end()) return it->second.second;
  Tensor r = cast(t, dtype);
  s.cache.emplace(t.impl(), std::make_pair(t, r));
  return r;
}

void clear_cache() { state().cache.clear(); }
size_t cache_size() { return state().cache.size(); }

}  // namespace ignis::autocast

#include "ignis/aot/fake.h"

#include "ignis/autograd/autograd_meta.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/ops/op_def.h"

namespace ignis::aot {

namespace {

thread_local FakeTensorMode* tls_mode = nullptr;

Storage fake_storage(size_t nbytes, Device device) {
  Storage s = allocate_storage(nbytes, Device(DeviceType::Meta));
  s->set_fake_device(device);
  return s;
}

bool is_wrapped(const Tensor& t) { return t.impl()->is_wrapped_number(); }

// Real tensors meeting fakes become fakes (through the active mode); a
// wrapped Python number stays real (meta rules read only its dtype).
Tensor to_fake(const OpHandle& op, const Tensor& t) {
  if (!t.defined() || t.is_fake() || is_wrapped(t)) return t;
  if (t.device().is_meta()) return t;
  FakeTensorMode* mode = tls_mode;
  IGNIS_CHECK(mode != nullptr, op.name(), ": a real tensor on ", t.device().str(),
              " met a fake tensor outside a FakeTensorMode; convert it with "
              "FakeTensorMode.from_tensor first");
  return mode->from_tensor(t);
}

void mark_fake(Tensor& t, Device device) {
  if (!t.defined() || t.is_fake() || !t.device().is_meta()) return;
  t.impl()->storage()->set_fake_device(device);
  t.impl()->set_key_set(t.key_set().add(DispatchKey::FakeTensor));
}

void fake_fallback(const OpHandle& op, DispatchKeySet ks, Stack& s) {
  const auto& args = op.schema().args;
  for (size_t i = 0; i < args.size(); ++i) {
    IValue& v = s[i];
    if (v.is_device()) {
      v = IValue(stood_for(v.to_device()));
    } else if (v.is_tensor()) {
      v = IValue(to_fake(op, v.to_tensor()));
    } else if (v.is_tensor_list()) {
      std::vector<Tensor> l = v.to_tensor_list();
      for (Tensor& t : l) t = to_fake(op, t);
      v = IValue(std::move(l));
    }
  }
  check_same_device(op, s);  // on the devices the fakes stand for
  Device device = call_device(op, s, Device(DeviceType::CPU));
  if (tls_mode && !device.is_meta()) tls_mode->note_device(device);
  // Kernels live in the meta world: a device argument names meta for them
  // (the outputs are marked with the stood-for device afterwards).
  for (size_t i = 0; i < args.size(); ++i)
    if (s[i].is_device()) s[i] = IValue(Device(DeviceType::Meta));
  // Tensors the op writes: their version counters move as they would on the
  // device (Meta kernels leave them alone), so that autograd sees the write
  // (a view's history refreshed after its base changed, a saved tensor
  // modified in place).
  std::vector<Tensor> written;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].is_write && s[i].is_tensor()) written.push_back(s[i].to_tensor());
  DispatchKeySet below = (ks.below(DispatchKey::FakeTensor) - kBackendKeys).add(DispatchKey::Meta);
  op.redispatch(below, s);
  for (const Tensor& t : written) t.impl()->version_counter().bump();
  for (IValue& v : s) {
    if (v.is_tensor()) {
      mark_fake(v.to_tensor(), device);
    } else if (v.is_tensor_list()) {
      auto& l = const_cast<std::vector<Tensor>&>(v.to_tensor_list());
      for (Tensor& t : l) mark_fake(t, device);
    }
  }
}

}  // namespace

Tensor make_fake(const DimVector& sizes, const DimVector& strides, ScalarType dtype,
                 Device device, int64_t offset) {
  int64_t span = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) {
      span = 0;
      break;
    }
    span += (sizes[d] - 1) * strides[d];
  }
  size_t nbytes = static_cast<size_t>(span + offset) * element_size(dtype);
  return Tensor(make_intrusive<TensorImpl>(fake_storage(nbytes, device), dtype, sizes, strides,
                                           offset));
}

Tensor FakeTensorMode::from_tensor(const Tensor& t) {
  if (!t.defined() || t.is_fake()) return t;
  auto it = tensors_.find(t.impl());
  if (it != tensors_.end()) return it->second.second;
  const StorageImpl* st = t.impl()->storage().get();
  auto sit = storages_.find(st);
  if (sit == storages_.end()) {
    sit = storages_.emplace(st, std::make_pair(t.impl()->storage(),
                                               fake_storage(st->nbytes(), t.user_device())))
              .first;
  }
  note_device(t.device());
  Tensor f(make_intrusive<TensorImpl>(sit->second.second, t.dtype(), t.sizes(), t.strides(),
                                      t.storage_offset()));
  // Note [Fake version counters]: the fakes of one version counter's
  // tensors share one, starting where the real one stands. Capture makes a
  // frame value's fake when the trace first reads it, perhaps after a write
  // to its base was traced (fuzz seed 410368: t9[:, 0].zero_() under
  // no_grad, then w10 * 2 where w10 is a no-grad view of t9's base): the
  // write moved the shared fake counter past the real one, so the view's
  // fake, keeping the real view's version, is stale as eager's will be.
  const intrusive_ptr<VersionCounter>& rv = t.impl()->shared_version_counter();
  auto cit = counters_.find(rv.get());
  if (cit == counters_.end())
    cit = counters_.emplace(rv.get(), std::make_pair(rv, make_intrusive<VersionCounter>(rv->value())))
              .first;
  f.impl()->share_version_counter(cit->second.second);
  if (autograd::requires_grad(t)) autograd::set_requires_grad(f, true);
  tensors_.emplace(t.impl(), std::make_pair(t, f));
  return f;
}

FakeModeGuard::FakeModeGuard(FakeTensorMode& mode)
    : prev_(tls_mode), prev_included_(tls_dispatch_keys().included) {
  tls_mode = &mode;
  tls_dispatch_keys().included = prev_included_.add(DispatchKey::FakeTensor);
}

FakeModeGuard::~FakeModeGuard() {
  tls_mode = prev_;
  tls_dispatch_keys().included = prev_included_;
}

FakeTensorMode* active_fake_mode() { return tls_mode; }

Device stood_for(Device d) {
  if (!d.is_meta() || !tls_mode || tls_mode->device().is_meta()) return d;
  return tls_mode->device();
}

void register_fake_kernel() {
  static bool done = false;
  if (done) return;
  done = true;
  Dispatcher::get().register_fallback(DispatchKey::FakeTensor, fake_fallback);
}

}  // namespace ignis::aot

// Dispatch keys and key sets.
//
// Note [Dispatch key order]
// The order in which keys are declared is their priority: a later key runs
// before an earlier one. Backend keys (which compute) come first, then the
// functional layers that wrap them, each of which does its work, excludes
// itself and redispatches to the keys below it. A DispatchKeySet is a 64-bit
// set; the key that runs is the highest bit set once the thread-local
// excluded keys are removed.
//
// The layers follow PyTorch's order, lowest first:
//   BackendSelect < FakeTensor < ProxyTrace < Functionalize < ADInplaceOrView
//     < Autograd < Complex < Autocast < Profiler
// so that a tracer sees what remains after the layers above it have done
// their work: autograd has recorded the backward of the op it was called
// with, functionalization has turned mutations into functional ops, and
// composite ops (registered at the autograd keys) have decomposed. Complex
// tensors carry the Complex key, above autograd: an op on them is rewritten
// into real ops on real views of them (ops/complex.cpp), which autograd then
// records and the tracer sees, as real ops (Note [Complex tensors]). The
// tracer records that op, then the fake layer computes its metadata with
// the Meta kernel. AOT depends on this order (aot/trace.h).
#pragma once

#include <cstdint>
#include <string>

#include "ignis/core/device.h"

namespace ignis {

#define IGNIS_FORALL_DISPATCH_KEYS(_)                                       \
  _(CPU)             /* eager CPU kernels */                                \
  _(CUDA)            /* eager CUDA kernels */                               \
  _(Meta)            /* shape/dtype/stride inference with no data */        \
  _(BackendSelect)   /* factories: pick a backend from the device arg */    \
  _(FakeTensor)      /* fake tensors: meta compute, real-device metadata */ \
  _(ProxyTrace)      /* records each op that reaches it into a graph */     \
  _(Functionalize)   /* rewrites mutations as functional ops */             \
  _(ADInplaceOrView) /* version counters and view bookkeeping */            \
  _(AutogradCPU)     /* records backward nodes, then redispatches */        \
  _(AutogradCUDA)                                                           \
  _(AutogradMeta)                                                           \
  _(Complex)         /* complex ops as real ops on real views (complex.cpp) */ \
  _(AutocastCPU)     /* mixed precision casting */                          \
  _(AutocastCUDA)                                                           \
  _(Profiler)        /* times each op call (profiler/profiler.h) */         \
  _(TestLayer0)      /* reserved for the dispatcher's own tests */          \
  _(TestLayer1)                                                             \
  _(TestLayer2)

enum class DispatchKey : uint8_t {
  Undefined = 0,
#define IGNIS_KEY(k) k,
  IGNIS_FORALL_DISPATCH_KEYS(IGNIS_KEY)
#undef IGNIS_KEY
      NumKeys,
};
constexpr int kNumDispatchKeys = static_cast<int>(DispatchKey::NumKeys);
static_assert(kNumDispatchKeys <= 64, "DispatchKeySet is a 64-bit set");

const char* dispatch_key_name(DispatchKey k);
bool parse_dispatch_key(const std::string& name, DispatchKey* out);

class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey k)
      : bits_(k == DispatchKey::Undefined ? 0 : (uint64_t(1) << static_cast<int>(k))) {}
  static constexpr DispatchKeySet from_bits(uint64_t b) {
    DispatchKeySet s;
    s.bits_ = b;
    return s;
  }

  constexpr bool has(DispatchKey k) const { return (bits_ & DispatchKeySet(k).bits_) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint64_t raw() const { return bits_; }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return from_bits(bits_ | o.bits_); }
  constexpr DispatchKeySet operator&(DispatchKeySet o) const { return from_bits(bits_ & o.bits_); }
  constexpr DispatchKeySet operator-(DispatchKeySet o) const { return from_bits(bits_ & ~o.bits_); }
  constexpr DispatchKeySet add(DispatchKey k) const { return *this | DispatchKeySet(k); }
  constexpr DispatchKeySet remove(DispatchKey k) const { return *this - DispatchKeySet(k); }
  constexpr bool operator==(DispatchKeySet o) const { return bits_ == o.bits_; }
  constexpr bool operator!=(DispatchKeySet o) const { return bits_ != o.bits_; }

  // The key that runs: the highest-priority key in the set.
  DispatchKey highest() const {
    if (bits_ == 0) return DispatchKey::Undefined;
    return static_cast<DispatchKey>(63 - __builtin_clzll(bits_));
  }
  // Keys strictly below k: what a layer at k redispatches to.
  constexpr DispatchKeySet below(DispatchKey k) const {
    return from_bits(bits_ & ((uint64_t(1) << static_cast<int>(k)) - 1));
  }
  std::string str() const;

 private:
  uint64_t bits_ = 0;
};

// Named sets, so that no file spells the lists out again.
constexpr DispatchKeySet kBackendKeys = DispatchKeySet(DispatchKey::CPU) |
                                        DispatchKeySet(DispatchKey::CUDA) |
                                        DispatchKeySet(DispatchKey::Meta);
constexpr DispatchKeySet kAutogradKeys = DispatchKeySet(DispatchKey::AutogradCPU) |
                                         DispatchKeySet(DispatchKey::AutogradCUDA) |
                                         DispatchKeySet(DispatchKey::AutogradMeta);

// The keys a tensor on this device carries: its backend key, its autograd key
// and ADInplaceOrView. Which layers actually run is decided by the kernels
// registered (an unregistered functional layer falls through).
DispatchKeySet default_keys_for_device(DeviceType t);
DispatchKey backend_key(DeviceType t);
DispatchKey autograd_key(DeviceType t);

}  // namespace ignis

// Autocast state: what `ignis.autocast(...)` switches, per thread.
//
// Whether autocast is on for a device type is whether that device type's
// autocast key is in the thread's included dispatch keys: the state and the
// key cannot disagree, and guards that save and restore the included set
// (tracers, fake modes) save and restore autocast with it. The rest is
// thread-local data next to it: the dtype per device type, whether casts of
// weights are cached, how deep the autocast blocks are nested, and that cache.
#pragma once

#include <cstdint>
#include <string>

#include "ignis/core/device.h"
#include "ignis/core/dtype.h"
#include "ignis/core/tensor.h"
#include "ignis/dispatch/dispatch_key.h"

namespace ignis::autocast {

// The autocast key of a device type (AutocastCPU, AutocastCUDA); Undefined
// for device types autocast does not serve.
DispatchKey autocast_key(DeviceType t);

bool is_enabled(DeviceType t);
void set_enabled(DeviceType t, bool on);
// The dtype LowerPrecisionFp ops run in: bfloat16 on the CPU and float16 on
// CUDA unless set.
ScalarType get_dtype(DeviceType t);
// Any dtype, as torch's: ignis.autocast checks the dtype (it warns and
// disables itself for one the device type does not support).
void set_dtype(DeviceType t, ScalarType dtype);

// The whole state as one number, for capture's guards: a graph traced under
// one autocast state must not run under another (its dtypes were fixed by
// the trace). The dtype of a disabled device type does not count.
int64_t state_key();
std::string describe_state_key(int64_t key);  // "cpu=bfloat16 cuda=off cache=on"

bool is_cache_enabled();
void set_cache_enabled(bool on);
// Nesting of autocast blocks on this thread: the outermost block's exit
// clears the cache (the Python context manager keeps the count).
int increment_nesting();
int decrement_nesting();

// Note [Autocast weight cache]
// A model's weights are cast again by every op that reads them. Inside one
// autocast region a float32 leaf that requires grad (a parameter) is cast to
// the autocast dtype once: the cast, with its autograd history back to the
// weight, is kept and reused until the outermost region exits. Other tensors
// (activations, views, tensors not requiring grad) may change between two
// reads and are cast every time, as torch does. Casts made under no_grad are
// not cached either (they carry no history for later ops to record), nor are
// fake tensors (a trace's fakes would outlive the trace).
Tensor cached_cast(const Tensor& t, ScalarType dtype, DeviceType device);
void clear_cache();
size_t cache_size();

}  // namespace ignis::autocast

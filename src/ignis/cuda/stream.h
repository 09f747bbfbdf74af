// CUDA streams and events.
//
// As in PyTorch: each device has a default stream (the legacy NULL stream,
// which synchronizes with other blocking streams) and, per thread, a current
// stream, which starts as the default one and is what eager kernels, copies
// and the allocator use. New streams come from a per-device pool of
// non-blocking streams that are never destroyed, so a stream handle is never
// reused for another stream while the allocator still files blocks under it.
#pragma once

#include <cstdint>

#include "ignis/cuda/driver.h"

namespace ignis::cuda {

struct Stream {
  int device = 0;
  CUstream handle = nullptr;  // nullptr: the default stream

  // The allocator's key for this stream (caching_allocator.h).
  uintptr_t id() const { return reinterpret_cast<uintptr_t>(handle); }
  bool operator==(const Stream& o) const { return device == o.device && handle == o.handle; }
};

Stream default_stream(int device);
// This thread's current stream of `device` (-1: the current device).
Stream current_stream(int device = -1);
// Makes `s` the current stream of its device on this thread.
void set_current_stream(const Stream& s);
// The next stream of the device's pool (32, round robin, as PyTorch's).
Stream pool_stream(int device);

void synchronize_stream(const Stream& s);
// True when all work queued on `s` has finished.
bool query_stream(const Stream& s);

// An owned CUevent. Timing events can measure elapsed_ms between two.
class Event {
 public:
  explicit Event(bool enable_timing = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Records the event on `s` (created on s's device on first record).
  void record(const Stream& s);
  // Makes `s` wait (on the device) for the work before the last record.
  void block(const Stream& s) const;
  bool query() const;   // true when never recorded or completed
  void synchronize() const;
  // Milliseconds between this event and `end`, both recorded and complete.
  float elapsed_ms(const Event& end) const;
  bool recorded() const { return handle_ != nullptr; }
  int device() const { return device_; }

 private:
  CUevent handle_ = nullptr;
  int device_ = -1;
  bool timing_;
};

}  // namespace ignis::cuda

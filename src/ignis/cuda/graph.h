// CUDA graphs: the work a stream queues, captured once and replayed with one
// launch (torch.cuda.CUDAGraph's role).
//
// capture_begin starts capturing the current stream of the current device
// (never the default stream: a capture cannot hold the legacy stream's
// implicit synchronization); from then until capture_end every kernel,
// copy and cuBLASLt call queued on it is recorded instead of run, and every
// CUDA allocation this thread makes comes from the graph's private memory
// pool (caching_allocator.h, Note [Private pools for CUDA graphs]), so the
// addresses the graph reads and writes stay the graph's while it lives.
// replay() launches the recorded work on the current stream: it reads its
// inputs and writes its outputs at the addresses they had when captured.
// As with torch, warming up (running the work once before capturing, so
// kernels are loaded and workspaces allocated) is the caller's job, tensors
// allocated inside the capture live in the pool and each replay overwrites
// them, and a random op replays the numbers drawn at capture (ignis does not
// yet advance the generator per replay).
#pragma once

#include "ignis/cuda/caching_allocator.h"
#include "ignis/cuda/driver.h"
#include "ignis/cuda/stream.h"

namespace ignis::cuda {

class CudaGraph {
 public:
  CudaGraph() = default;
  ~CudaGraph();  // reset(), errors ignored
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Starts capturing the current stream of the current device into this
  // graph, allocating into `pool` (another graph's pool(), or a
  // new_pool_id(); 0: a new pool). `mode` is the driver's capture mode
  // (CU_STREAM_CAPTURE_MODE_GLOBAL: other threads' unsafe calls fail too).
  void capture_begin(PoolId pool = 0, CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL);
  // Ends the capture and instantiates the graph. When the capture was
  // invalidated (an operation a capture cannot hold: a synchronization, a
  // read to the host, ...) or instantiation fails, the capture is discarded
  // (the graph is as after reset()) and a RuntimeError carries the
  // driver's error.
  void capture_end();
  // Ends a capture that failed on the way (an exception inside it) and
  // discards it; never throws.
  void abort_capture() noexcept;
  // Launches the graph on the current stream of its device.
  void replay();
  // Frees the graph and gives back its pool (the pool's memory returns to
  // the device once no graph holds it and its tensors are gone).
  void reset();

  bool capturing() const { return capturing_; }
  bool captured() const { return exec_ != nullptr; }
  // The pool the graph allocates from (0 before capture_begin).
  PoolId pool() const { return pool_; }
  int device() const { return device_; }
  // The stream it was captured on.
  const Stream& capture_stream() const { return stream_; }
  // Replays so far (for tests and logs).
  int64_t replays() const { return replays_; }

 private:
  int device_ = -1;
  Stream stream_;
  PoolId pool_ = 0;
  bool holds_pool_ = false;
  bool capturing_ = false;
  CUgraphExec exec_ = nullptr;
  int64_t replays_ = 0;
};

// Whether `s` is capturing a graph now (torch.cuda.is_current_stream_capturing
// for the current stream). False where CUDA is not available.
bool stream_is_capturing(const Stream& s);

}  // namespace ignis::cuda

#include "ignis/cuda/graph.h"

#include "ignis/core/error.h"
#include "ignis/cuda/blas.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/memory.h"

namespace ignis::cuda {

CudaGraph::~CudaGraph() {
  try {
    reset();
  } catch (...) {
    // A device torn down at exit: the graph goes with the process.
  }
}

void CudaGraph::capture_begin(PoolId pool, CUstreamCaptureMode mode) {
  IGNIS_CHECK(!capturing_ && !exec_,
              "This CUDAGraph instance already owns a captured graph. To capture a new graph, "
              "create a new instance (or call reset() first).");
  require_driver();
  const int device = current_device();
  const Stream stream = current_stream(device);
  IGNIS_CHECK(stream.handle != nullptr,
              "CUDA graphs must be captured on a non-default stream. (However, after capture, "
              "it's ok to replay them on the default stream.)");
  DeviceGuard guard(device);
  // Outside the capture, so that it comes from the stream's own memory.
  reserve_workspace(stream);
  CachingAllocator& alloc = device_allocator(device);
  const PoolId p = pool ? pool : CachingAllocator::new_pool_id();
  alloc.begin_allocate_to_pool(p);
  CUresult r = driver().cuStreamBeginCapture(stream.handle, mode);
  if (r != CUDA_SUCCESS) {
    alloc.end_allocate_to_pool(p);
    alloc.release_pool(p);
    throw_driver_error(r, "cuStreamBeginCapture");
  }
  device_ = device;
  stream_ = stream;
  pool_ = p;
  holds_pool_ = true;
  capturing_ = true;
}

void CudaGraph::capture_end() {
  IGNIS_CHECK(capturing_, "CUDAGraph.capture_end: no capture is underway (call capture_begin)");
  DeviceGuard guard(device_);
  CUgraph graph = nullptr;
  // The stream's capture ends first: the allocator's deferred event work
  // (end_allocate_to_pool) must not land inside it.
  CUresult r = driver().cuStreamEndCapture(stream_.handle, &graph);
  capturing_ = false;
  device_allocator(device_).end_allocate_to_pool(pool_);
  if (r != CUDA_SUCCESS || !graph) {
    if (graph) driver().cuGraphDestroy(graph);
    reset();
    throw_driver_error(r != CUDA_SUCCESS ? r : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                       "cuStreamEndCapture: the capture was invalidated by an operation a CUDA "
                       "graph cannot hold (a synchronization, a copy to the host, an event "
                       "query, ...)");
  }
  r = driver().cuGraphInstantiate(&exec_, graph, 0);
  // The executable graph is self-contained: the template is not kept.
  driver().cuGraphDestroy(graph);
  if (r != CUDA_SUCCESS) {
    exec_ = nullptr;
    reset();
    throw_driver_error(r, "cuGraphInstantiateWithFlags");
  }
}

void CudaGraph::abort_capture() noexcept {
  if (!capturing_) return;
  try {
    DeviceGuard guard(device_);
    CUgraph graph = nullptr;
    driver().cuStreamEndCapture(stream_.handle, &graph);
    if (graph) driver().cuGraphDestroy(graph);
    capturing_ = false;
    device_allocator(device_).end_allocate_to_pool(pool_);
    reset();
  } catch (...) {
    capturing_ = false;
  }
}

void CudaGraph::replay() {
  IGNIS_CHECK(exec_, "Called CUDAGraph.replay without a preceding successful capture.");
  DeviceGuard guard(device_);
  IGNIS_CU(cuGraphLaunch(exec_, current_stream(device_).handle));
  ++replays_;
}

void CudaGraph::reset() {
  if (capturing_) {
    abort_capture();
    return;
  }
  if (exec_) {
    DeviceGuard guard(device_);
    driver().cuGraphExecDestroy(exec_);
    exec_ = nullptr;
  }
  if (holds_pool_) {
    holds_pool_ = false;
    device_allocator(device_).release_pool(pool_);
  }
}

bool stream_is_capturing(const Stream& s) {
  if (!driver().is_loaded() || driver().init_result != CUDA_SUCCESS) return false;
  DeviceGuard guard(s.device);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  IGNIS_CU(cuStreamIsCapturing(s.handle, &status));
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace ignis::cuda

#include "ignis/compiler/cudagraph_runner.h"

#include <algorithm>
#include <unordered_map>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/memory.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/interpreter.h"
#include "ignis/ops/op_def.h"

namespace ignis::compiler {

// Note [CUDA graph runner]
//
// Calls. The first call runs the graph plainly (a warm-up: kernels loaded,
// cuBLASLt's plans made); the second records it: the compiled graph runs
// on a side stream under capture, allocating from a private pool, and the
// recorded graph is then replayed once for that call's results. Later calls
// replay.
//
// Inputs. A recorded graph reads each input at the address it had when
// recorded. An input is first recorded in place: parameters, buffers and
// the backward graph's saved tensors (the forward runner's outputs, which
// stay at their pool addresses) keep their address from call to call. Each
// replay checks every in-place input's data pointer and layout; when one
// arrived elsewhere, the graph is recorded again with that input copied: a
// static buffer in the pool, filled by a device copy before each replay.
// An input the graph writes stays in place (a copy would take the write)
// and is re-recorded at its new address instead, as is an input that now
// lives in a graph's pool (another runner's output: the backward graph's
// saved tensors after the forward graph recorded again). After kMaxRecords
// recordings the runner falls back to plain runs.
//
// Outputs. What the graph computes lives in its pool and each replay
// overwrites it. An output is handed out on a storage that shares the pool
// block without owning it (its deleter only holds the captured storage, so
// the block outlives the graph while anything holds the output). Before the
// next replay (or recording), a storage someone still holds (use count
// above the runner's own) is moved out: its bytes are copied on the stream
// into memory from the stream's allocator and the storage takes that memory
// over (StorageImpl::swap_memory), so a loss or activation kept from the
// last step keeps its value, and an output nobody kept costs nothing. An
// output that is an input (or a view of one) is that input of the current
// call (or the same view of it).
//
// Fallbacks (plain runs from then on, reported once with the reason): the
// graph is not on CUDA; it has random ops (the generator's seed and offset
// would be baked into the replays); a driver error during capture (an
// operation a capture cannot hold: a host read, a synchronization); an
// output that is neither the graph's pool memory nor an input (a constant);
// inputs that keep moving.

namespace {

bool same_place(const Tensor& t, const void* ptr, ScalarType dtype, const DimVector& sizes,
                const DimVector& strides) {
  return t.data_ptr() == ptr && t.dtype() == dtype && t.sizes() == sizes &&
         t.strides() == strides;
}

// The first random op among the graph's extern calls ("" when none).
std::string random_op(const Executable& e) {
  for (const Executable::Call& s : e.steps)
    if (!s.kernel && s.op && s.op->def() && s.op->def()->determinism == Determinism::Random)
      return s.op->name();
  return {};
}

// Per input: whether a step writes it (an extern's `(a!)` argument, or a
// kernel output).
std::vector<bool> written_inputs(const Executable& e) {
  std::unordered_map<int, size_t> input_of;
  for (size_t i = 0; i < e.inputs.size(); ++i) input_of.emplace(e.inputs[i], i);
  std::vector<bool> written(e.inputs.size(), false);
  auto mark_buffer = [&](int b) {
    auto it = input_of.find(b);
    if (it != input_of.end()) written[it->second] = true;
  };
  std::function<void(const graph::Value&)> mark = [&](const graph::Value& v) {
    if (v.is_node()) {
      auto it = e.ref_buffer.find(v.to_node());
      if (it != e.ref_buffer.end()) mark_buffer(it->second);
    } else if (v.is_sequence()) {
      for (const graph::Value& item : v.items()) mark(item);
    }
  };
  for (const Executable::Call& s : e.steps) {
    if (s.kernel) {
      for (int b : e.kernels[size_t(s.index)].outputs) mark_buffer(b);
      continue;
    }
    if (!s.op) continue;
    const auto& args = s.op->schema().args;
    for (size_t a = 0; a < args.size() && a < s.args.size(); ++a)
      if (args[a].is_write) mark(s.args[a]);
    for (const auto& [name, v] : s.kwargs) {
      int a = s.op->schema().find_arg(name);
      if (a >= 0 && args[size_t(a)].is_write) mark(v);
    }
  }
  return written;
}

// Restores the thread's current stream when the recording ends.
struct CurrentStreamGuard {
  cuda::Stream saved;
  explicit CurrentStreamGuard(const cuda::Stream& s) : saved(cuda::current_stream(s.device)) {
    cuda::set_current_stream(s);
  }
  ~CurrentStreamGuard() { cuda::set_current_stream(saved); }
};

}  // namespace

CudaGraphRunner::CudaGraphRunner(const CompiledGraph& graph, std::string name, Reporter report)
    : graph_(graph), name_(std::move(name)), report_(std::move(report)) {
  const Executable& e = graph_.executable();
  in_place_.assign(e.inputs.size(), true);
  written_ = written_inputs(e);
  if (!e.device.is_cuda()) {
    // Not a fallback worth a warning: reduce-overhead on the CPU compiles
    // as the default mode does.
    fallback_ = "the graph runs on the CPU (CUDA graphs are for CUDA graphs only)";
    if (report_) report_(false, name_ + ": not recorded: " + fallback_);
    return;
  }
  if (std::string op = random_op(e); !op.empty()) {
    fall_back("it has a random op (" + op +
              "): its generator's seed and offset would be baked into every replay");
    return;
  }
  capture_stream_ = cuda::pool_stream(e.device.index);
}

CudaGraphRunner::~CudaGraphRunner() {
  // Outputs still held keep their pool blocks (their storages hold the
  // captured ones), so the graph and its pool can go now.
  cuda_graph_.reset();
}

CudaGraphRunner::Stats CudaGraphRunner::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.copied_inputs = copied_inputs();
  return s;
}

int CudaGraphRunner::copied_inputs() const {
  return int(std::count(in_place_.begin(), in_place_.end(), false));
}

std::string CudaGraphRunner::fallback_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fallback_;
}

void CudaGraphRunner::fall_back(const std::string& reason) {
  fallback_ = reason;
  if (report_) report_(true, name_ + ": CUDA graphs off, running the graph plainly: " + reason);
}

void CudaGraphRunner::drop_graph() {
  move_held_outputs();
  cuda_graph_.reset();
  statics_.clear();
  outputs_.clear();
  pool_.clear();
}

std::vector<graph::Value> CudaGraphRunner::plain(const std::vector<Tensor>& inputs) {
  ++stats_.plain_runs;
  return graph_.run(inputs);
}

std::vector<graph::Value> CudaGraphRunner::run(const std::vector<Tensor>& inputs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!fallback_.empty()) return plain(inputs);
  if (calls_++ == 0) return plain(inputs);  // the warm-up
  if (!cuda_graph_) return record(inputs);
  // Outputs of the last replay someone holds leave the pool first: one may
  // be an input of this call, which must then not be read in place.
  move_held_outputs();
  std::vector<size_t> moved;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputPlace& r = recorded_[i];
    if (in_place_[i] && !same_place(inputs[i], r.ptr, r.dtype, r.sizes, r.strides))
      moved.push_back(i);
  }
  if (moved.empty()) return replay(inputs);
  std::string which;
  cuda::CachingAllocator& alloc = cuda::device_allocator(graph_.executable().device.index);
  for (size_t i : moved) {
    which += (which.empty() ? "" : ", ") + std::to_string(i);
    // Another graph's output (the forward's saved tensors after the forward
    // recorded again) stays put from now on: recorded at its new address.
    const StorageImpl* st = inputs[i].impl()->storage().get();
    const bool in_a_pool = st && st->data() && alloc.block_pool(st->data()) != 0;
    if (!written_[i] && !in_a_pool) in_place_[i] = false;
  }
  if (stats_.records >= kMaxRecords) {
    drop_graph();
    fall_back("inputs keep arriving at new addresses (recorded " +
              std::to_string(stats_.records) + " times; last moved: input " + which + ")");
    return plain(inputs);
  }
  if (report_)
    report_(false, name_ + ": recording again: input " + which +
                       " arrived at a new address (now copied into a static buffer, or "
                       "recorded at its new address if the graph writes it or it lives in a "
                       "graph's pool)");
  return record(inputs);
}

std::vector<graph::Value> CudaGraphRunner::record(const std::vector<Tensor>& inputs) {
  drop_graph();
  const Executable& e = graph_.executable();
  const int device = e.device.index;
  cuda::DeviceGuard device_guard(device);
  const cuda::Stream user = cuda::current_stream(device);
  // The capture stream starts after what the caller's stream queued.
  cuda::Event ready;
  ready.record(user);
  ready.block(capture_stream_);
  auto g = std::make_unique<cuda::CudaGraph>();
  std::vector<Tensor> run_inputs(inputs.size());
  std::vector<graph::Value> outs;
  statics_.assign(inputs.size(), Tensor());
  try {
    CurrentStreamGuard stream_guard(capture_stream_);
    g->capture_begin();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      if (in_place_[i]) {
        run_inputs[i] = t;
        continue;
      }
      // Allocated in the pool; filled before each replay, outside the graph.
      statics_[i] = empty_strided_tensor(t.sizes(), t.strides(), t.dtype(), t.device());
      run_inputs[i] = statics_[i];
    }
    outs = graph_.run(run_inputs);
    g->capture_end();
  } catch (const std::exception& ex) {
    g->abort_capture();
    statics_.clear();
    fall_back(std::string("recording failed: ") + ex.what());
    return plain(inputs);
  }
  // Where each output lives.
  std::unordered_map<const StorageImpl*, int> pool_index;
  for (size_t k = 0; k < outs.size(); ++k) {
    OutputSource src;
    if (!outs[k].is_tensor()) {
      src.value = outs[k];
      outputs_.push_back(std::move(src));
      continue;
    }
    const Tensor& t = outs[k].to_tensor();
    src.dtype = t.dtype();
    src.sizes = t.sizes();
    src.strides = t.strides();
    src.offset = t.storage_offset();
    const StorageImpl* st = t.impl()->storage().get();
    for (size_t i = 0; i < run_inputs.size() && src.kind == OutputSource::Kind::Value; ++i) {
      if (run_inputs[i].impl()->storage().get() != st) continue;
      src.kind = OutputSource::Kind::Input;
      src.index = int(i);
      src.offset = t.storage_offset() - run_inputs[i].storage_offset();
      src.whole_input = src.offset == 0 && t.sizes() == run_inputs[i].sizes() &&
                        t.strides() == run_inputs[i].strides() &&
                        t.dtype() == run_inputs[i].dtype();
    }
    if (src.kind == OutputSource::Kind::Value) {
      if (!st || !st->data() ||
          cuda::device_allocator(device).block_pool(st->data()) != g->pool()) {
        drop_graph();
        fall_back("output " + std::to_string(k) +
                  " is not memory the graph computes (it aliases a constant or memory from "
                  "outside the graph)");
        return plain(inputs);
      }
      auto [it, fresh] = pool_index.emplace(st, int(pool_.size()));
      if (fresh) pool_.push_back({t.impl()->storage(), Storage()});
      src.kind = OutputSource::Kind::Pool;
      src.index = it->second;
    }
    outputs_.push_back(std::move(src));
  }
  recorded_.assign(inputs.size(), InputPlace{});
  for (size_t i = 0; i < inputs.size(); ++i)
    recorded_[i] = {inputs[i].data_ptr(), inputs[i].dtype(), inputs[i].sizes(),
                    inputs[i].strides()};
  cuda_graph_ = std::move(g);
  ++stats_.records;
  if (report_) {
    report_(false, name_ + ": recorded a CUDA graph of " + std::to_string(e.steps.size()) +
                       " steps (" + std::to_string(copied_inputs()) + " of " +
                       std::to_string(inputs.size()) + " inputs copied)");
  }
  // The capture ran nothing: this call's results come from a replay.
  return replay(inputs);
}

std::vector<graph::Value> CudaGraphRunner::replay(const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (in_place_[i]) continue;
    graph::call_op_by_name("copy_", {graph::Value(statics_[i]), graph::Value(inputs[i])}, {});
    ++stats_.input_copies;
  }
  cuda_graph_->replay();
  ++stats_.replays;
  const Device device = graph_.executable().device;
  for (PoolStorage& p : pool_) {
    if (p.handed) continue;  // nobody else held it: reused as it is
    Storage captured = p.captured;
    p.handed = make_intrusive<StorageImpl>(captured->data(), captured->nbytes(), device,
                                           [captured](void*) {});
  }
  std::vector<graph::Value> outs;
  outs.reserve(outputs_.size());
  for (const OutputSource& o : outputs_) {
    switch (o.kind) {
      case OutputSource::Kind::Value:
        outs.push_back(o.value);
        break;
      case OutputSource::Kind::Pool:
        outs.push_back(graph::Value(Tensor(make_intrusive<TensorImpl>(
            pool_[size_t(o.index)].handed, o.dtype, o.sizes, o.strides, o.offset))));
        break;
      case OutputSource::Kind::Input: {
        const Tensor& in = inputs[size_t(o.index)];
        if (o.whole_input) {
          outs.push_back(graph::Value(in));
          break;
        }
        std::vector<graph::Value> size_values, stride_values;
        for (int64_t s : o.sizes) size_values.emplace_back(s);
        for (int64_t s : o.strides) stride_values.emplace_back(s);
        outs.push_back(graph::call_op_by_name(
            "as_strided",
            {graph::Value(in), graph::Value::list(size_values), graph::Value::list(stride_values),
             graph::Value(in.storage_offset() + o.offset)},
            {}));
        break;
      }
    }
  }
  return outs;
}

void CudaGraphRunner::move_held_outputs() {
  if (pool_.empty()) return;
  const Device device = graph_.executable().device;
  const cuda::Stream stream = cuda::current_stream(device.index);
  for (PoolStorage& p : pool_) {
    if (!p.handed) continue;
    if (p.handed->use_count() > 1) {
      Storage fresh = allocate_storage(p.handed->nbytes(), device);
      cuda::DeviceGuard guard(device.index);
      IGNIS_CU(cuMemcpyDtoDAsync(reinterpret_cast<cuda::CUdeviceptr>(fresh->data()),
                                 reinterpret_cast<cuda::CUdeviceptr>(p.handed->data()),
                                 p.handed->nbytes(), stream.handle));
      p.handed->swap_memory(*fresh);  // `fresh` now shares the pool block, and goes
      ++stats_.outputs_moved;
      p.handed = Storage();
    }
  }
}

}  // namespace ignis::compiler

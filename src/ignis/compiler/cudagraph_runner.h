// mode="reduce-overhead": a compiled CUDA graph's launches recorded into a
// CUDA graph (cuda/graph.h) and replayed with one launch per call, with no
// Python and no per-kernel host work on the way. See Note [CUDA graph
// runner] in the .cpp for inputs, outputs and fallbacks.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ignis/compiler/compiled_graph.h"
#include "ignis/cuda/graph.h"

namespace ignis::compiler {

class CudaGraphRunner {
 public:
  // Told of each recording (with why, for a re-recording) and of the
  // fallback to plain runs (`fallback` true, once), as one line of text.
  using Reporter = std::function<void(bool fallback, const std::string& text)>;
  // Recordings (the first and the re-recordings after inputs moved) before
  // the runner gives up and runs the graph plainly.
  static constexpr int kMaxRecords = 4;

  // Wraps `graph`, which must outlive the runner. `name` labels reports.
  CudaGraphRunner(const CompiledGraph& graph, std::string name, Reporter report);
  ~CudaGraphRunner();
  CudaGraphRunner(const CudaGraphRunner&) = delete;
  CudaGraphRunner& operator=(const CudaGraphRunner&) = delete;

  // CompiledGraph::run's contract: one value per graph output.
  std::vector<graph::Value> run(const std::vector<Tensor>& inputs);

  struct Stats {
    int64_t plain_runs = 0;     // warm-up and fallback runs
    int64_t records = 0;        // captures that succeeded
    int64_t replays = 0;
    int64_t input_copies = 0;   // inputs copied into their static buffers
    int64_t outputs_moved = 0;  // held outputs moved out of the pool
    int copied_inputs = 0;      // inputs read through static buffers now
  };
  Stats stats() const;
  // Why the runner runs the graph plainly (empty while it replays).
  std::string fallback_reason() const;

 private:
  struct InputPlace {
    const void* ptr = nullptr;
    ScalarType dtype = ScalarType::Float32;
    DimVector sizes, strides;
  };
  // Where output k comes from at each replay.
  struct OutputSource {
    enum class Kind { Value, Pool, Input } kind = Kind::Value;
    graph::Value value;  // Value: the number or None the graph returns
    int index = -1;      // Pool: into pool_; Input: the input it views
    ScalarType dtype = ScalarType::Float32;
    DimVector sizes, strides;
    int64_t offset = 0;  // Pool: storage offset; Input: relative to the input's
    bool whole_input = false;  // Input: the input itself (same geometry)
  };
  struct PoolStorage {
    Storage captured;  // the capture's, holding the pool block
    Storage handed;    // what outputs of the last replay share (no owner)
  };

  std::vector<graph::Value> plain(const std::vector<Tensor>& inputs);
  std::vector<graph::Value> record(const std::vector<Tensor>& inputs);
  std::vector<graph::Value> replay(const std::vector<Tensor>& inputs);
  void move_held_outputs();
  void fall_back(const std::string& reason);
  int copied_inputs() const;  // inputs read through static buffers now
  void drop_graph();

  const CompiledGraph& graph_;
  std::string name_;
  Reporter report_;
  mutable std::mutex mu_;
  std::string fallback_;
  int64_t calls_ = 0;
  Stats stats_;
  std::vector<bool> in_place_;    // per input: read at its address, else copied
  std::vector<bool> written_;     // per input: the graph writes it (always in place)
  std::vector<InputPlace> recorded_;
  std::vector<Tensor> statics_;   // per copied input: its buffer in the pool
  std::vector<OutputSource> outputs_;
  std::vector<PoolStorage> pool_;
  std::unique_ptr<cuda::CudaGraph> cuda_graph_;
  cuda::Stream capture_stream_;
};

}  // namespace ignis::compiler

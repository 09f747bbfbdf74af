// A compiled graph: an Executable (executable.h) and its kernels compiled
// (once per machine, through runtime::CodeCache) and loaded, and the runtime
// that runs its steps on real tensors.
//
// Compiling looks in the graph cache first (runtime/graph_cache.h): a graph
// compiled before, by any process with the same ignis build, toolchain and
// knobs, loads its Executable and library from disk and skips lowering,
// scheduling and code generation.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ignis/compiler/codegen_cpp.h"
#include "ignis/compiler/executable.h"
#include "ignis/cuda/driver.h"
#include "ignis/graph/graph.h"
#include "ignis/runtime/code_cache.h"

namespace ignis::compiler {

struct CompileGraphOptions {
  runtime::CodeCache* cache = nullptr;  // null: CodeCache::global()
  CompilerOptions compiler;
  // mode="max-autotune": measure variants of each kernel (autotune.h).
  bool autotune = false;
  // get_attr targets -> tensors (AOT's graph constants).
  std::unordered_map<std::string, Tensor> constants;
  // Look up and fill the graph cache (config.fx_graph_cache).
  bool graph_cache = true;
  // A C++ compile still running after this many seconds prints a progress
  // line on stderr (and its time when done); negative: never.
  double progress_delay_s = 2.0;
  // A dynamic graph's other sizes (Note [Parameters that vary with the
  // sizes], size_params.h): when set, a size-generic compile that lowers
  // calls it once per process and graph, and it calls its argument with
  // each graph of the same structure at other sizes, which are lowered and
  // printed (not compiled) so that the kernels' parameters that do not
  // vary print as literals. Called during construction only.
  std::function<void(const std::function<void(const graph::Graph&)>&)> probes;
};

// Forgets which graphs were probed and what their kernels' parameters were
// (Note [Parameters that vary with the sizes]): ignis.compiler.reset().
void forget_probed_sizes();

// Launches kernel k of a CUDA program (its function f) on the current
// stream of `device` with the data pointers of its parameter buffers
// (`ptrs` indexed by buffer; every generated kernel strides over its work,
// so launch_strided may cap the grid); a one-round kernel in at most
// `round` blocks (round_blocks; 0: k.blocks).
// A kernel with a workspace (a split reduction's) uses `workspace` when
// given, which must hold k.workspace_bytes with its first k.zeroed_bytes
// zero (Note [One workspace a run]); else it allocates and zeroes its own.
void launch_cuda_kernel(cuda::CUfunction f, const Executable::Kern& k,
                        const std::vector<char*>& ptrs, int device, int64_t round = 0,
                        char* workspace = nullptr);
// For a one-round kernel (CudaLaunch::one_round), the blocks of it the GPU
// holds at once (the driver's occupancy of f); 0 for any other.
int64_t round_blocks(cuda::CUfunction f, const Executable::Kern& k, int device);

class CompiledGraph {
 public:
  CompiledGraph(const graph::Graph& g, CompileGraphOptions options = {});

  // One value per placeholder; returns one value per graph output (a tensor,
  // or the None/number the graph returns).
  std::vector<graph::Value> run(const std::vector<Tensor>& inputs) const;

  // Per-step timing (config.profile_bandwidth): while enabled, run() times
  // every kernel and extern call. One row per step: what it is, the bytes a
  // kernel must move (each buffer it reads or writes, once; 0 for externs),
  // calls, total wall seconds and total CPU seconds of the process (exact on
  // one thread, where it is the step's cost even while other processes load
  // the machine; other threads' time reaches the process clock only at
  // scheduler ticks).
  struct StepProfile {
    std::string label;
    int64_t bytes = 0;
    int64_t calls = 0;
    double seconds = 0;
    double cpu_seconds = 0;
  };
  void enable_profile(bool on);
  std::vector<StepProfile> profile() const;

  // The loop IR, the memory plan and the fusion decisions, printed.
  const std::string& program_text() const { return exec_.program_text; }
  const std::string& memory_plan_text() const { return exec_.memory_plan_text; }
  const std::string& schedule_text() const { return exec_.schedule_text; }
  // Autotuning's choice per kernel, one line each; empty without autotuning.
  const std::vector<std::string>& autotune_report() const { return exec_.autotune_report; }
  bool autotune_measured() const { return autotune_measured_; }
  const std::string& source() const { return exec_.source; }
  size_t kernel_count() const { return exec_.kernels.size(); }
  // Whether the graph cache supplied this graph (nothing was lowered).
  bool from_graph_cache() const { return from_graph_cache_; }
  // Whether getting this graph's kernels ran a compiler (g++ or NVRTC);
  // false when their library or module was loaded already or on disk (a
  // size-generic graph whose text another size compiled: Note
  // [Size-generic code]).
  bool compiled_code() const { return compiled_code_; }
  bool size_generic() const { return exec_.size_generic; }
  // Where compiling this graph went, in order: (phase, seconds) for the
  // graph cache's lookup, lowering, the memory plan, code generation, the
  // C++ compile or NVRTC (or the library's load), for
  // ignis._dynamo.utils.compile_times().
  const std::vector<std::pair<std::string, double>>& compile_phases() const { return phases_; }
  // What running needs (buffers, steps, outputs), for runners that wrap
  // run() (cudagraph_runner.h).
  const Executable& executable() const { return exec_; }

 private:
  void compile(const graph::Graph& g, const CompileGraphOptions& options,
               runtime::CodeCache& cache, std::string* code_key);

  Executable exec_;
  bool autotune_measured_ = false;
  bool autotune_gemms_ = false;  // max-autotune: run inside a cuda::GemmAutotuneScope
  bool from_graph_cache_ = false;
  bool compiled_code_ = false;
  std::vector<std::pair<std::string, double>> phases_;  // compile_phases()
  // Loads (compiling on first use) a CUDA program's kernels from exec_.source.
  void load_cuda_kernels(double progress_delay_s);
  static const std::string& cpu_symbol(const Executable::Kern& k);
  void run_cpu_kernel(size_t i, const std::vector<char*>& ptrs) const;

  runtime::LoadedLibrary library_;
  std::vector<KernelFn*> kernels_;                 // static code's
  std::vector<GenericKernelFn*> generic_kernels_;  // size-generic code's
  std::vector<cuda::CUfunction> cuda_kernels_;  // a CUDA program's, one per kernel
  std::vector<int64_t> cuda_rounds_;            // round_blocks of each
  // Note [One workspace a run]: each kernel's offset into the run's
  // workspace (-1: none), and its size.
  std::vector<int64_t> workspace_at_;
  int64_t workspace_bytes_ = 0;
  std::vector<Tensor> constants_;  // per buffer (undefined for non-constants)
  // Filled while profiling; run() is const and may run on several threads,
  // so the rows are guarded.
  bool profiling_ = false;
  mutable std::mutex profile_mutex_;
  mutable std::vector<StepProfile> profile_;
};

}  // namespace ignis::compiler

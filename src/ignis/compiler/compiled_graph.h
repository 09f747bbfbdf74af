// A compiled graph: a lowered Program, its kernels compiled (once per
// machine, through runtime::CodeCache) and loaded, and the runtime that
// runs its steps on real tensors.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ignis/compiler/codegen_cpp.h"
#include "ignis/compiler/loop_ir.h"
#include "ignis/compiler/memory_plan.h"
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
};

class CompiledGraph {
 public:
  CompiledGraph(const graph::Graph& g, CompileGraphOptions options = {});

  // One value per placeholder; returns one value per graph output (a tensor,
  // or the None/number the graph returns).
  std::vector<graph::Value> run(const std::vector<Tensor>& inputs) const;

  // Per-step timing (config.profile_bandwidth): while enabled, run() times
  // every kernel and extern call. One row per step: what it is, the bytes a
  // kernel must move (each buffer it reads or writes, once; 0 for externs),
  // calls and total seconds.
  struct StepProfile {
    std::string label;
    int64_t bytes = 0;
    int64_t calls = 0;
    double seconds = 0;
  };
  void enable_profile(bool on);
  std::vector<StepProfile> profile() const;

  const Program& program() const { return program_; }
  const MemoryPlan& memory_plan() const { return plan_; }
  // Autotuning's choice per kernel, one line each; empty without autotuning.
  const std::vector<std::string>& autotune_report() const { return autotune_report_; }
  bool autotune_measured() const { return autotune_measured_; }
  const std::string& source() const { return source_; }
  size_t kernel_count() const { return program_.kernels.size(); }

 private:
  Program program_;
  MemoryPlan plan_;
  std::string source_;
  std::vector<std::string> autotune_report_;
  bool autotune_measured_ = false;
  runtime::LoadedLibrary library_;
  std::vector<KernelFn*> kernels_;
  std::vector<Tensor> constants_;  // per buffer (undefined for non-constants)
  // Filled while profiling; run() is const and may run on several threads,
  // so the rows are guarded.
  bool profiling_ = false;
  mutable std::mutex profile_mutex_;
  mutable std::vector<StepProfile> profile_;
};

}  // namespace ignis::compiler

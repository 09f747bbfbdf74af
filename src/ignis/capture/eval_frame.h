// The frame-evaluation hook (PEP 523) and the per-code-object cache.
//
// While a compiled function runs (CompiledFunction in py_capture.cpp), a
// thread-local CaptureConfig is current and CPython calls our hook for every
// frame it starts. The hook:
//   - runs generator/coroutine frames, frames of skipped code (ignis itself,
//     the standard library, code marked by ignis.compiler.disable) and frames
//     while no config is current with CPython's own evaluator;
//   - otherwise looks up the code object's cache (kept in co_extra): the
//     first entry whose config matches and whose guards pass runs its plan
//     (plan.h) instead of the bytecode; the hit entry moves to the front;
//   - on a miss, calls trace_frame (tracer.h) to make a new entry, unless the
//     code already has `cache_size_limit` entries, in which case it warns once
//     (naming the guard that failed last) and runs the frame eagerly from then
//     on.
// The hook is installed while at least one CompiledFunction call is active
// on any thread and uninstalled otherwise, so plain Python keeps CPython's
// inlined calls.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ignis/capture/frame.h"

namespace ignis::capture {

// The arguments of one ignis.compile(...) call.
struct CaptureConfig {
  PyObject* backend = nullptr;   // callable(gm, example_inputs) -> callable; owned
  bool fullgraph = false;
  // None: automatic dynamic (a size that changed between traces becomes
  // symbolic); True: every size symbolic from the start; False: never.
  PyObject* dynamic = nullptr;   // owned
  int cache_size_limit = 8;
  // Ops whose output size depends on the data (nonzero, x[mask]) join the
  // graph with an unbacked size (docs/dynamic_shapes.md) instead of breaking
  // it; torch's capture_dynamic_output_shape_ops, which torch leaves off.
  bool capture_dynamic_output_shape_ops = true;
  // Tensor.item() of an integer tensor joins the graph as an unbacked int
  // (docs/dynamic_shapes.md); torch's capture_scalar_outputs, off in torch.
  bool capture_scalar_outputs = true;
  ~CaptureConfig();
};

// The config of the innermost active compiled call on this thread; nullptr
// while capture is off (also inside the compiled graph itself).
const CaptureConfig* current_config();

// RAII: makes `cfg` current (nullptr: capture off) for a scope.
class CaptureScope {
 public:
  explicit CaptureScope(std::shared_ptr<const CaptureConfig> cfg);
  ~CaptureScope();
 private:
  std::shared_ptr<const CaptureConfig> prev_;
};
const std::shared_ptr<const CaptureConfig>& current_config_ptr();

// Marks a code object so the hook never captures it (ignis.compiler.disable,
// and codes the tracer rejected as a whole).
void mark_skip(PyCodeObject* code, const std::string& reason);
bool is_skipped(PyCodeObject* code);

// ignis.compiler.disable's mark: like mark_skip, but a user annotation, so
// reset_caches keeps it.
void mark_disabled(PyCodeObject* code);

// Drops every cache entry and every skip mark made by the hook or the tracer
// (ignis.compiler.reset()); marks from mark_disabled stay.
void reset_caches();

// A compiled call (CompiledFunction) is running: the hook is installed while
// at least one is (a count under the GIL, over all threads).
void enter_compiled_call();
void exit_compiled_call();
bool hook_installed();

// The compile id ("frame/recompile") of the trace_frame call in progress on
// this thread (empty outside one); the tracer tags its log events with it.
const std::string& current_compile_id();

// Automatic dynamic's memory of a code object (torch's frame state): the
// sizes (and strides) each tensor source had when the code was traced, -1
// for a dim seen with two sizes (strides) -- dynamic from then on. Kept
// beside the code's cache and dropped with it by reset_caches. nullptr when
// the code cannot hold state.
// `first_sizes`/`first_strides` keep the values of the first trace, which
// the dynamic graph made later is told about (Note [The sizes before a
// graph went dynamic], tracer_output.cpp).
struct FrameDynamicState {
  std::unordered_map<std::string, std::vector<int64_t>> sizes;
  std::unordered_map<std::string, std::vector<int64_t>> strides;
  std::unordered_map<std::string, std::vector<int64_t>> first_sizes;
  std::unordered_map<std::string, std::vector<int64_t>> first_strides;
};
FrameDynamicState* frame_dynamic_state(PyCodeObject* code);

// Number of cache entries of a code object (tests, explain).
int cache_entry_count(PyCodeObject* code);

// The cache of a code object, most recently hit first (tests, debugging):
// new reference to a list of (compile_id, [guard lines]), or nullptr with an
// error set.
PyObject* describe_cache(PyCodeObject* code);

}  // namespace ignis::capture

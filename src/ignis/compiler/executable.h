// What running a compiled program needs besides its kernels' code: the
// buffers, the steps (kernel launches and extern calls), the memory plan and
// the program's outputs, with nothing left of the lowering (no loop bodies,
// no graph). It is what the graph cache stores, so that a new process that
// meets the same graph skips lowering, scheduling and code generation: it
// reads an Executable and loads the kernels' library by its code key.
//
// Extern calls keep their arguments as graph values; a reference to a
// buffer is a placeholder node of the executable's own small graph (one per
// referenced buffer), so an Executable neither holds the traced graph alive
// nor differs between the compiling and the loading process.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ignis/compiler/loop_ir.h"
#include "ignis/compiler/memory_plan.h"
#include "ignis/graph/graph.h"

namespace ignis::compiler {

struct Executable {
  struct Buf {
    std::string name;
    BufferKind kind = BufferKind::Computed;
    ScalarType dtype = ScalarType::Float32;
    std::vector<int64_t> sizes, strides;
    std::string attr;  // Constant: the get_attr target
  };
  struct Kern {
    std::string name;          // the exported symbol (CPU); the IR's name (CUDA)
    std::vector<int> outputs;  // buffers it writes (allocated before it runs)
    // CUDA (codegen_cuda.h's CudaKernel): the __global__ function, the
    // buffers passed to it, threads per block and blocks that have work.
    std::string symbol;
    std::vector<int> params;
    int64_t threads = 0, blocks = 0;
    // CudaLaunch's: a workspace allocated for each launch, its first
    // zeroed_bytes set to zero on the stream before it.
    int64_t workspace_bytes = 0, zeroed_bytes = 0;
    // CudaLaunch's: blocks is the most it takes; it runs one round of them.
    bool one_round = false;
    // Size-generic code: the values the kernel reads as P[0], P[1], ...
    // (this size's; Note [Size-generic code]). Empty for static code.
    std::vector<int64_t> size_params;
    // CUDA: its text in `source`, [source_begin, source_end).
    int64_t source_begin = 0, source_end = 0;
  };
  struct Call {
    bool kernel = false;
    int index = -1;                  // kernel: into kernels
    const OpHandle* op = nullptr;    // extern
    std::vector<graph::Value> args;  // buffer references: nodes of `refs`
    graph::Kwargs kwargs;
    std::vector<int> outputs;        // extern: a buffer per result position (-1: unread)
    bool view = false;
    // For profiles: what it is, and the bytes a kernel must move.
    std::string label;
    int64_t bytes = 0;
  };
  struct Output {
    int buffer = -1;
    graph::Value value;  // when buffer < 0: the None or number returned
  };

  Device device;  // where kernels run and computed buffers live (Program::device)
  // The kernels are size-generic: a CPU kernel is a GenericKernelFn taking
  // its size_params, a CUDA one takes them as its last argument when it has any.
  bool size_generic = false;
  std::vector<Buf> buffers;
  std::vector<int> inputs;  // one buffer per graph input
  std::vector<Kern> kernels;
  std::vector<Call> steps;
  std::vector<Output> outputs;
  MemoryPlan plan;
  // The placeholders extern arguments refer to, and their buffers.
  std::shared_ptr<graph::Graph> refs;
  std::unordered_map<const graph::Node*, int> ref_buffer;
  // What the compiler printed, kept for the Python accessors (a CUDA
  // program's `source` is also what its kernels are compiled from).
  std::string program_text, memory_plan_text, schedule_text, source;
  int64_t source_prelude_bytes = 0;  // CUDA: the source's part shared by every kernel
  std::vector<std::string> autotune_report;
};

Executable make_executable(const Program& p, const MemoryPlan& plan);

// The bytes the graph cache stores; nullopt when the program cannot be
// written (an extern argument that is a tensor or another value with no
// portable spelling): such graphs are simply not cached.
std::optional<std::string> serialize(const Executable& e);
// Nullopt when the bytes are not a well-formed executable of this format
// (the caller treats it as a miss).
std::optional<Executable> deserialize(std::string_view bytes);

}  // namespace ignis::compiler

// The compiler's loop IR: what a graph of core ops becomes before C++ or
// CUDA C++ is generated for it (TorchInductor's IR, for static shapes).
//
// A Program is a list of steps over buffers. A Buffer is a tensor the program
// reads or writes: a graph input, a get_attr constant, an extern call's
// output, or a kernel's output. Everything the compiler does not lower is a
// CallExtern step: the node runs through the dispatcher on real tensors.
//
// A Kernel is one fused loop nest. Its *outer* loops run over the dims every
// fused computation shares (parallel across threads); inside them, a
// sequence of Loops runs once per outer iteration, each either over the
// kernel's *inner* dims (a reduction's dims, or the innermost dim of a
// pointwise kernel: the vectorised loop) or not at all (a per-row scalar
// block). So softmax is one kernel: per row, a loop reducing the max, a loop
// reducing the sum of exponentials, a loop storing the quotients.
//
// A loop's body is a DAG of scalar nodes (loads, constants, calls of
// scalar_ops.h's structs, casts, selects, and references to values of
// earlier loops: a reduction's result, a scalar block's value); stores write
// body values to buffers, and reductions fold a body value into an
// accumulator with a combine function. Sizes, strides and indices are
// sym::Exprs (constants for now) so that dynamic shapes later change values,
// not structure.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ignis/core/device.h"
#include "ignis/core/dtype.h"
#include "ignis/graph/node.h"
#include "ignis/sym/expr.h"

namespace ignis::compiler {

// The type a kernel computes values of a storage dtype in: float for the
// 16-bit floats (loaded, widened, and rounded once when stored), else the
// dtype itself.
inline ScalarType compute_type(ScalarType storage) {
  return storage == ScalarType::BFloat16 || storage == ScalarType::Float16 ? ScalarType::Float32
                                                                           : storage;
}

enum class BufferKind : uint8_t { Input, Constant, Extern, Computed };
const char* buffer_kind_name(BufferKind k);

struct Buffer {
  std::string name;  // "buf3"; inputs and constants: the graph node's name
  BufferKind kind = BufferKind::Computed;
  ScalarType dtype = ScalarType::Float32;
  std::vector<sym::Expr> sizes;
  std::vector<sym::Expr> strides;  // elements; the data pointer includes the offset
  int64_t input_index = -1;        // Input: the placeholder's position
  std::string attr;                // Constant: the get_attr target
  bool eliminated = false;         // Computed, but every reader is fused: never allocated
  // Computed into another buffer's storage (Note [Results written in place],
  // memory_plan.h): that buffer's index; this one is never allocated.
  int written_as = -1;
};

// The kinds of scalar nodes, listed once (printer and code generator switch on them).
// Ref reads a value computed in an earlier loop of the same kernel: a
// reduction's result (`acc`) or a node of a scalar block (`loop`, `node`).
// Index is the int64 value of `index`, an expression of the loop variables
// (arange's element number: values that depend on where, not on memory).
#define IGNIS_FORALL_SCALAR_KINDS(_) _(Load) _(Constant) _(Call) _(Cast) _(Where) _(Ref) _(Index)

enum class ScalarKind : uint8_t {
#define IGNIS_ENUM(K) K,
  IGNIS_FORALL_SCALAR_KINDS(IGNIS_ENUM)
#undef IGNIS_ENUM
};
const char* scalar_kind_name(ScalarKind k);

// One scalar value of a loop body. `args` index earlier nodes of the body.
struct ScalarNode {
  ScalarKind kind = ScalarKind::Constant;
  ScalarType dtype = ScalarType::Float32;  // the value's type
  int buffer = -1;                         // Load: the buffer read
  sym::Expr index;                         // Load: the element read (in elements); Index: the value
  double value = 0;                        // Constant (when !is_int)
  int64_t int_value = 0;                   // Constant (when is_int)
  bool is_int = false;
  std::string fn;                          // Call: a scalar_ops name ("exp")
  std::vector<int> args;                   // Call, Cast {x}, Where {cond, a, b}
  int acc = -1;                            // Ref: a reduction of the kernel, or
  int loop = -1, node = -1;                //      node `node` of scalar loop `loop`, or
  int scratch = -1;                        //      this element of a row scratch
};

// How a reduction folds values; listed once (printer, code generator, lowering).
// _(name, the core op's name)
#define IGNIS_FORALL_COMBINES(_) _(Sum, "sum") _(Prod, "prod") _(Max, "amax") _(Min, "amin")
enum class Combine : uint8_t {
#define IGNIS_ENUM(C, op) C,
  IGNIS_FORALL_COMBINES(IGNIS_ENUM)
#undef IGNIS_ENUM
};
const char* combine_name(Combine c);
// The accumulator types a reduction's partials (a split column kernel's
// workspace, a row kernel's folded column sums) are kept in memory as.
inline bool is_partial_dtype(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::Int64 ||
         t == ScalarType::Int32;
}

struct Store {
  int buffer = -1;
  sym::Expr index;
  int value = -1;  // a node of the loop's body
  // A store that folds instead of overwriting, buffer[index] =
  // combine(buffer[index], value): a column sum's partials in a row kernel
  // (Note [Column sums in a row kernel], schedule.cpp). Each worker sets its
  // part of the buffer to the combine's identity before its rows.
  std::optional<Combine> fold;
};

struct Reduction {
  Combine combine = Combine::Sum;
  ScalarType dtype = ScalarType::Float32;  // the accumulator's (and result's) type
  int value = -1;                          // the body node folded, once per inner element
};

struct Loop {
  bool inner = true;  // iterates the kernel's inner dims; false: once per outer iteration
  std::vector<ScalarNode> body;  // topologically ordered
  std::vector<Store> stores;
  std::vector<int> reductions;   // the kernel reductions this loop accumulates
  // (node, scratch): values a later loop reads back instead of recomputing,
  // written to the kernel's row scratch at this element of the inner dims.
  std::vector<std::pair<int, int>> spills;
};

struct Kernel {
  std::string name;  // "kernel_0": the exported symbol
  // Loop variables (sym index symbols) and their extents, outermost first.
  std::vector<sym::Expr> outer, outer_sizes;
  std::vector<sym::Expr> inner, inner_sizes;
  std::vector<Loop> loops;
  std::vector<Reduction> reductions;
  // A reduction over outer dims of the memory layout (column sums): the last
  // outer dim is iterated innermost, inside every loop, in chunks, so the
  // reads stay contiguous and each column keeps its own accumulator.
  bool columns = false;
  // A GEMM template: the kernel is one GEMM call (runtime's gemm, blocked and
  // threaded there) whose epilogue runs the kernel's single loop on each
  // finished block of the output (outer = rows, inner = columns).
  struct Gemm {
    int a = -1, b = -1, c = -1;  // buffers: c = alpha * a @ b
    double alpha = 1;
  };
  std::optional<Gemm> gemm;
  // A row kernel folding column sums into partials (Note [Column sums in a
  // row kernel]): its outer iterations split into `workers` ranges of
  // consecutive rows, worker ig_w (a thread's range on the CPU, a block on
  // the GPU) taking rows [ig_w * R, (ig_w + 1) * R) for R = ceil(rows /
  // workers); the folding stores index their buffers by ig_w. 0: none.
  int64_t workers = 0;
  static sym::Expr worker_var(int64_t workers);
  // The folding stores, the first of each buffer (a partials buffer's row
  // is set to the identity once, and held once in registers).
  std::vector<const Store*> folding_stores() const;
  // Per-thread rows (one element per inner iteration) holding values an
  // earlier loop computed and a later one needs: their dtypes.
  std::vector<ScalarType> scratch;
  // A scratch row kept in the row of an output instead: the kernel's last
  // pass reads the scratch and overwrites the output at the same elements,
  // so the output row (from element `base`, an expression of the outer
  // loop variables) holds the values until then. The first pass then
  // writes, and fetches, the output's lines while the input streams in,
  // rather than leaving the output's misses to a last pass that has
  // nothing else to do (softmax 4096x4096: 21.5 ms against 16.4 ms).
  struct ScratchInOutput {
    int scratch = -1, buffer = -1;
    sym::Expr base;
  };
  std::vector<ScratchInOutput> scratch_in_output;
  std::vector<int> outputs;          // the buffers the kernel writes
  std::vector<std::string> origins;  // names of the graph nodes fused here
  int64_t outer_numel() const;
  int64_t inner_numel() const;
  // The buffers the kernel's loops store to (`outputs` without a GEMM's own
  // result, which the GEMM writes): a load of one of them is not read-only.
  std::unordered_set<int> stored_buffers() const;
  // Node i of loop l is printed (and generated) as tmp<node_numbers()[l] + i>.
  std::vector<int> node_numbers() const;
  // The buffers the kernel reads or writes, in the order its loops first
  // name them (loads and stores loop by loop, then the scratch rows' homes,
  // the GEMM's operands, the outputs): the same for two kernels of one
  // structure whatever the buffers' numbers (Note [Kernels of one text]).
  std::vector<int> buffers_in_order() const;
  // This kernel with buffer b renamed local[b] (every b it names must be
  // in `local`).
  Kernel with_buffers(const std::unordered_map<int, int>& local) const;
};

struct Step {
  enum class Kind : uint8_t { RunKernel, CallExtern };
  Kind kind = Kind::RunKernel;
  int kernel = -1;                 // RunKernel
  graph::NodePtr node;             // CallExtern: the node run (target, for names)
  const OpHandle* op = nullptr;    // CallExtern
  std::vector<graph::Value> args;  // CallExtern: node references name buffers (node_buffers)
  graph::Kwargs kwargs;
  // CallExtern: one buffer per result position (-1: no node reads it, or None)
  std::vector<int> outputs;
  bool view = false;               // CallExtern of a view op: its result aliases its input
};

// The knobs of lowering, scheduling and code generation
// (ignis._inductor.config sets them; the defaults are these).
struct CompilerOptions {
  // A value with several users is recomputed in each when it has at most
  // this many arithmetic ops (casts and views are free), else stored once
  // (config.realize_opcount_threshold).
  int64_t realize_opcount_threshold = 8;
  // ... or when it reads more than this many distinct elements of memory
  // (config.realize_reads_threshold): a residual stream summed over layers
  // would otherwise re-read every layer's output in every consumer.
  int64_t realize_reads_threshold = 4;
  // ... and, once scheduled, a value several kernels recompute from two or
  // more tensors is stored by the first (config.realize_across_kernels;
  // Note [Values recomputed across kernels], lower.cpp).
  bool realize_across_kernels = true;
  // A row kernel folds column sums of its values into partials per range of
  // rows (config.column_sums_in_rows; Note [Column sums in a row kernel],
  // schedule.cpp).
  bool column_sums_in_rows = true;
  int64_t column_sums_min_rows = 64;  // ... in row groups of this many rows or more
  // ... and on the GPU of rows of this many elements or more
  // (config.cuda.column_sums_min_row; the fuzzer lowers it to reach the GPU
  // folds with small shapes).
  int64_t cuda_column_sums_min_row = 4096;
  // Graph nodes one kernel may fuse (config.max_fusion_size).
  int64_t max_fusion_size = 64;
  // Elements of work below which a kernel runs on one thread
  // (config.cpp.min_parallel_elements): forking the team costs microseconds.
  int64_t min_parallel_elements = 32768;
  // Threads a kernel uses; 0: the runtime's (config.cpp.threads).
  int64_t threads = 0;
  // Independent accumulators per reduction (config.cpp.reduction_lanes);
  // 0: lanes(), the running CPU's.
  int64_t reduction_lanes = 0;
  // Print code whose text does not depend on the sizes: they are read from
  // each kernel's parameter array (Note [Size-generic code],
  // size_params.h; config.size_generic).
  bool size_generic = false;
  // GPU row kernels whose row fits in registers: the vectors of a row each
  // thread aims to hold (config.cuda.row_vectors_per_thread; the block is
  // the row's vectors over this, rounded up to a warp), and whether the
  // loads only a later pass reads are issued with the first pass's
  // (config.cuda.row_prefetch; Note [Vectors and registers on the GPU]).
  int64_t cuda_row_vectors = 4;
  bool cuda_row_prefetch = true;
  // ... and whether a row kernel of many rounds of blocks recomputes the
  // values its passes share instead of keeping them, when that lets a
  // multiprocessor hold more rows (config.cuda.row_occupancy; Note
  // [Occupancy before kept values], codegen_cuda.cpp).
  bool cuda_row_occupancy = false;
  // ... and whether a max pass and the sum-of-exps pass after it fold in one
  // streaming pass where a row would hold a multiprocessor alone
  // (config.cuda.online_softmax; Note [Online max and sum of exps]).
  bool cuda_online_softmax = true;
  // ... and whether size-generic code holds rows in registers too, planned
  // for their power-of-two bucket (config.cuda.generic_rows; Note [Resident
  // rows in size-generic code], codegen_cuda.cpp).
  bool cuda_generic_rows = true;
  // ... and whether a generic row whose vectors fill its bucket exactly (a
  // power of two) prints its chunks unguarded: another text for those sizes
  // (config.cuda.generic_exact_rows; Note [Resident rows in size-generic
  // code]).
  bool cuda_generic_exact_rows = true;
  // ... and whether a row kernel whose grid fits one round of blocks asks
  // ptxas for registers that let it (config.cuda.row_one_wave; Note [One
  // wave of short rows], codegen_cuda.cpp; off until measured on a GPU).
  bool cuda_row_one_wave = false;
  // GPU products: relu and the tanh GELU of an addmm fold into cuBLASLt's
  // epilogue (config.cuda.activation_epilogues; graph/passes/gemm_activation.h).
  bool cuda_activation_epilogues = true;
  // Resident rows' chunk loops with the planned block size a literal and no
  // guard on whole chunks (config.cuda.row_hoist_chunks; Note [Chunks the
  // compiler can hoist], codegen_cuda.cpp).
  bool cuda_row_hoist_chunks = true;
  // Column kernels: a thread takes a 16-byte vector of neighbouring columns
  // (config.cuda.column_vectors; Note [Vectors of columns], codegen_cuda.cpp).
  bool cuda_column_vectors = true;
  // Pointwise kernels of few blocks: smaller blocks and narrower vectors
  // until each multiprocessor has one (config.cuda.spread_small; Note
  // [Small pointwise kernels], codegen_cuda.cpp).
  bool cuda_spread_small = true;
  // Row kernels of few long rows (a full sum): each row split among blocks
  // (config.cuda.split_rows; Note [Split row reductions], codegen_cuda.cpp).
  bool cuda_split_rows = true;
  // ... into ranges of at least this many elements (a 256-thread block's
  // 16 each; the fuzzer lowers it to reach split kernels with small rows).
  int64_t cuda_split_rows_min_elements = 4096;
  // ... into about this many blocks in all (config.cuda.split_rows_blocks).
  int64_t cuda_split_rows_blocks = 1024;
  // Large pointwise kernels: 16-byte vectors a thread takes a step, each a
  // block's width apart (config.cuda.pointwise_vectors_per_thread).
  int64_t cuda_pointwise_vectors = 1;
  // Pointwise and split row kernels load their vectors as read once
  // (ld.global.cs; config.cuda.streaming_loads).
  bool cuda_streaming_loads = false;
  // Split column kernels: the fewest rows of its range a thread folds
  // (config.cuda.column_split_rows_per_thread; Note [Split column
  // reductions], codegen_cuda.cpp).
  int64_t cuda_column_split_rows = 4;
  // CPU row kernels: a later pass prefetches the next row's first-pass
  // loads (config.cpp.row_prefetch; Note [Next-row prefetch], codegen_cpp.cpp).
  bool cpu_row_prefetch = true;

  // reduction_lanes, 0 resolved to the running CPU's float vector width:
  // 16 with AVX-512, 8 with AVX2 (4 at least). Eager's vectorised
  // reductions (omp simd, -march=native) keep that many lanes, so a
  // compiled softmax then rounds as eager's does; with 16 lanes on an AVX2
  // machine a third of its elements were an ulp off.
  int64_t lanes() const;

  // Every field, as text: part of the graph cache's key (a field added
  // above must be added here, or programs compiled with another value of it
  // would be reused).
  std::string fingerprint() const;
};

// A graph output: a buffer, or a value that is no tensor (None, a number).
struct ProgramOutput {
  int buffer = -1;
  graph::Value value;
};

struct Program {
  // The graph lowered when a pass rewrote a copy of the one given (lower.h):
  // node_buffers and the extern steps point into it (first, so that it is
  // destroyed last). Null otherwise.
  std::shared_ptr<const graph::Graph> rewritten;
  // Where the kernels run and the computed buffers live: the CPU, or the GPU
  // of the graph's CUDA tensors. Everything above the printer is the same
  // for both (codegen_cpp or codegen_cuda prints the kernels).
  Device device;
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  std::vector<int> inputs;  // the buffer of each placeholder, in order
  std::vector<ProgramOutput> outputs;
  // The scheduler's fusion decisions, one line each (IGNIS_LOGS=schedule).
  std::vector<std::string> schedule_log;
  // Graph nodes that name buffers in extern arguments.
  std::vector<std::pair<const graph::Node*, int>> node_buffers;

  int buffer_of(const graph::Node* n) const;  // -1 when the node has none
};

// Kernel k over its own view of p (Note [Kernels of one text],
// codegen_cuda.cpp): its buffers renumbered in the order it first names
// them (`order`: the program's buffer of each) and named arg0, arg1, ...,
// so that kernels of one structure print one text. Both printers print
// every kernel over its view.
struct KernelView {
  Program program;  // the device and the kernel's buffers, nothing else
  Kernel kernel;
  std::vector<int> order;
};
KernelView kernel_view(const Program& p, const Kernel& k);
// Note [Inner dims split at their divisions]
// A view that merges dims of a permuted tensor leaves a pointwise kernel's
// innermost variable divided: the small GPT's attention backward gathers
// q, k and v's gradients as `arg0[... + S*(x2 / 16) + (x2 % 16)]` over
// x2 < 64, one row of heads. With S a literal GCC turns the divisions into
// shifts and the loads stay cheap (115 us a call on this VM); with S a
// size-generic parameter the same loop ran 629 us, the loads gathered
// element by element. split_inner_at_divisions(k) writes the innermost
// variable x as xo * c + xi (xo < E / c, xi < c) when its accesses divide
// it by one constant c >= 8 that divides its extent E, and the substituted
// indices simplify to no division or remainder of xo or xi: the inner loop
// is then contiguous runs of c. Nullopt when k is not such a pointwise
// kernel, or when it has fewer than 16 outer iterations and E / c is under
// 16 too (its inner loop is what the threads split). The CPU printer applies it to every kernel: static code gains
// too (117 -> 51 us, the loads in whole vectors); a size-generic text
// decides it from its size's values, like every decision of a text.
std::optional<Kernel> split_inner_at_divisions(const Kernel& k);

// The comment line under a kernel's name saying which buffer each argN is:
// "// arg0 = arg0_1, arg1 = buf3\n".
std::string kernel_args_comment(const KernelView& v, const Program& p);
// The place in the source of kernel k when it runs `symbol`, an earlier
// kernel's code: its name, ops and arguments, and that it does.
std::string same_code_comment(const Kernel& k, const std::string& args_comment,
                              const std::string& symbol);

// Which nodes of inner loop `loop` of k take the same value at every inner
// element: loads at an index of the outer variables only (of buffers the
// kernel does not write), constants, accumulators and scalar-block values of
// earlier loops, and calls on such values. Printers compute them once per
// outer iteration, before the loop. All false for a scalar block or a
// kernel with no inner dims.
std::vector<bool> row_invariant_nodes(const Kernel& k, size_t loop);

// Readable text of the whole program (logs and tests), e.g.
//   buf2: float32[4, 3] strides [3, 1] computed
//   kernel_0 (add, relu, mul) -> buf2
//     outer x0 < 4; inner x1 < 3
//     loop 0 over inner:
//       tmp0: float32 = load x[3*x0 + x1]
//       ...
std::string to_string(const Program& p);
std::string to_string(const Program& p, const Kernel& k);

}  // namespace ignis::compiler

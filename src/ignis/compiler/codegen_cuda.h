// CUDA C++ for a Program's kernels (a Program whose device is a GPU): one
// NVRTC translation unit per graph, compiled once per machine and GPU
// architecture through cuda/kernel_cache.h's cubin cache.
//
// Each Kernel of the loop IR becomes one `extern "C" __global__` function
// taking the data pointers of the buffers it reads or writes (in buffer
// order, CudaKernel::params), and calling the same scalar_ops.h structs as
// the CPU's generated C++, through the NVRTC shim the eager CUDA kernels use
// (kernels/cuda/device_scalar_ops.h). Three shapes:
//
// - a *pointwise* kernel (no reduction): a grid-stride loop over every
//   element of its outer x inner space, the loop variables unravelled from
//   the linear index (the innermost fastest, so neighbouring threads touch
//   neighbouring elements of a contiguous output);
// - a *row* kernel (any reduction): each block takes whole rows (one outer
//   iteration) in a block-stride loop; each of the kernel's loops is a pass
//   of the block's threads over the row's inner elements, a reduction folded
//   per thread and then across the block (ig_block_reduce: warp shuffles and
//   shared memory, correct for any blockDim, 1 included), so softmax and
//   layer_norm stay one kernel each. Scalar blocks are computed by every
//   thread at row scope. Note [Scratch rows on the GPU] says what becomes of
//   the CPU's scratch rows;
// - a *column* kernel (a reduction over rows of neighbouring columns): a
//   thread per column, the block's row lanes folded per column.
// Static kernels load and store 16-byte vectors and hold a row that fits in
// registers (Note [Vectors and registers on the GPU] in the .cpp).
//
// docs/compiler.md ("The compiler on the GPU") shows an example.
#pragma once

#include <string>
#include <vector>

#include "ignis/compiler/loop_ir.h"
#include "ignis/compiler/size_params.h"

namespace ignis::compiler {

// How a kernel is launched. `blocks` is the number of blocks that have work
// (rows of a row kernel, ceil(elements / threads) of a pointwise one); the
// launcher may use fewer, since every kernel strides over its work.
struct CudaLaunch {
  int threads = 256;
  int64_t blocks = 1;
  // __launch_bounds__'s second argument, the blocks a multiprocessor must be
  // able to hold at once (ptxas keeps the registers a thread to that); 0:
  // none (Note [One wave of short rows], codegen_cuda.cpp).
  int min_blocks = 0;
  // Device memory the kernel takes as its `char* ig_ws` argument (after the
  // buffers), of which the first zeroed_bytes are zero when it starts: a
  // split column reduction's counters and partials (Note [Split column
  // reductions]). 0: no such argument.
  int64_t workspace_bytes = 0, zeroed_bytes = 0;
  // `blocks` is the most the kernel takes: it runs as many as the GPU holds
  // at once (the driver's occupancy of the compiled kernel), each a range of
  // rows (Note [Column sums in a row kernel], codegen_cuda.cpp).
  bool one_round = false;
};

struct CudaKernel {
  std::string symbol;       // the extern "C" name: the kernel's, tagged with the source's hash
  std::string key;          // its text and launch bounds apart from the name: one key, one kernel
  std::vector<int> params;  // the buffers whose data pointers it takes, in order
  CudaLaunch launch;
  // Size-generic code: the values of the kernel's last argument, an
  // IgParams<N> passed by value (Note [Size-generic code]); empty: no such
  // argument (static code, or nothing to read).
  std::vector<int64_t> size_params;
  // Its text in the program's source: [source_begin, source_end) (Note
  // [A graph's CUDA in parts], compiled_graph.cpp).
  size_t source_begin = 0, source_end = 0;
};

struct CudaProgramCode {
  std::string source;               // the whole translation unit
  std::vector<CudaKernel> kernels;  // one per Program kernel, in order
  size_t prelude_bytes = 0;         // the source's shared part, before every kernel
};

// options.size_generic: sizes are kernel arguments; `lift` false prints the
// same kernels with the values in place (what T with B substituted equals).
// `observe`: what the size-generic kernels' values are recorded as (Note
// [Parameters that vary with the sizes], size_params.h).
CudaProgramCode generate_cuda(const Program& p, const CompilerOptions& options = {},
                              bool lift = true, Observe observe = Observe::Off);
// ... each kernel printed under its own options (autotuning's winners; the
// first's size_generic and tag rule for all).
CudaProgramCode generate_cuda(const Program& p, const std::vector<CompilerOptions>& per_kernel,
                              bool lift = true, Observe observe = Observe::Off);

// The NVRTC options the source is compiled with (those of the eager kernels:
// scalar_ops.h's unannotated functions become device functions).
const std::vector<std::string>& cuda_compile_options();

}  // namespace ignis::compiler

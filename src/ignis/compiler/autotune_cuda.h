// Autotuning on the GPU (mode="max-autotune", a CUDA graph): for each row
// kernel of a Program (softmax, the norms, cross-entropy's rows), the
// fastest of the code generator's row knobs, measured on this GPU.
//
// The knobs are config.cuda's: the vectors a thread holds (1, 2, 4, 8: the
// block size), whether a later pass's loads are issued with the first
// pass's (row_prefetch), and whether a grid that fits one round of blocks
// asks ptxas for the registers that let it (row_one_wave). Variants that
// print the same kernel (every knob of a pointwise or column kernel) are
// one; a kernel with a single text is not measured. Every variant's kernels
// compile at once (NVRTC in parts on the host's threads, through the cubin
// cache); each kernel then runs on device buffers of the program's shapes
// (floats 0.5, integers 0: kernels never index by data) in batches of
// launches timed by CUDA events until ~20 ms have passed, and the fastest
// median batch wins, when it beats the default by kMinGain (else the default
// stays: a tie is noise). Winners are kept on disk under the cache
// directory, keyed by the kernel's default text and the GPU (its name and
// compute capability), so a later process, or a layer of the same text,
// skips the measurement; a corrupt entry is measured again.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ignis/compiler/loop_ir.h"

namespace ignis::compiler {

struct CudaAutotuneResult {
  std::vector<CompilerOptions> per_kernel;  // the winner of each kernel
  std::vector<std::string> report;          // a line per row kernel
  bool measured = false;                    // false: every winner came from the disk
};

CudaAutotuneResult autotune_cuda(const Program& p, const CompilerOptions& requested,
                                 const std::filesystem::path& cache_dir);

}  // namespace ignis::compiler

// Memory planning: when each buffer of a Program dies, and which buffers can
// share storage.
//
// A compiled graph keeps a buffer only while a later step reads it: after its
// last use the reference is dropped (so peak memory follows the live set,
// as in eager, instead of holding every intermediate to the end). Buffers
// that only kernels read (never an extern, which might return an alias of
// its input, and never a graph output) are placed in *slots*: a buffer whose
// writer runs after another's last reader takes over its storage, so a
// chain of intermediates cycles through a few warm allocations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ignis/compiler/loop_ir.h"

namespace ignis::compiler {

struct MemoryPlan {
  // Per step: the buffers whose last use is that step (dropped after it).
  std::vector<std::vector<int>> release_after;
  // Per buffer: the slot whose storage it uses, or -1 (allocated on its own).
  std::vector<int> slot;
  std::vector<int64_t> slot_bytes;  // per slot: the largest buffer placed in it
};

MemoryPlan plan_memory(const Program& p);

// Note [Results written in place]
// A kernel whose output has the layout of a buffer it reads for the last
// time, element for element (every load at the element the output stores,
// in the loop that stores it), writes the output over that buffer: the
// output is renamed to the buffer it replaces, in the kernel and in every
// later step. A GEMM's epilogue likewise transforms the GEMM's result where
// it lies instead of copying it into a buffer of its own (linear's bias add:
// one output buffer, as eager's addmm writes). Fewer fresh buffers: less
// memory touched for the first time, and a smaller peak. Runs after
// scheduling, before planning (lower()).
void write_results_in_place(Program& p);

// The plan as text: one line per slot ("slot 0 (4096 bytes): buf3, buf7")
// and one per step that releases buffers ("after step 2: release buf3").
std::string to_string(const Program& p, const MemoryPlan& plan);

// Bytes a buffer's elements span (its dense extent).
int64_t buffer_bytes(const Buffer& b);

}  // namespace ignis::compiler

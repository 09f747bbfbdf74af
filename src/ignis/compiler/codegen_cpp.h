// C++ source for a Program's kernels: one translation unit, compiled once
// through runtime::CodeCache.
//
// Each kernel is `extern "C" void kernel_N(char* const* bufs)`: bufs[b] is
// buffer b's data pointer (storage offset included), the same array for every
// kernel of the program. A kernel is one flat loop over its output's
// elements, split across OpenMP threads from 32768 elements (as eager's
// TensorIterator), with one statement per scalar node (tmp0, tmp1, ...) that
// calls the same scalar_ops.h structs eager's loops call.
#pragma once

#include <string>

#include "ignis/compiler/loop_ir.h"

namespace ignis::compiler {

std::string generate_cpp(const Program& p);

// The C++ struct of a scalar_ops name ("exp" -> "Exp"); throws for an unknown name.
const std::string& scalar_struct_name(const std::string& fn);

}  // namespace ignis::compiler

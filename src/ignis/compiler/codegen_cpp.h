// C++ source for a Program's kernels: one translation unit, compiled once
// through runtime::CodeCache.
//
// Each kernel is `extern "C" void kernel_N(char* const* bufs, const
// ignis::cpu::KernelRuntime* rt)`: bufs[b] is
// buffer b's data pointer (storage offset included), the same array for every
// kernel of the program, and rt the runtime's functions (the GEMM of a
// template kernel; generated code cannot link against _C). A kernel is its outer loops (split across OpenMP
// threads from options.min_parallel_elements of work) around its loops, with
// one statement per scalar node (tmp0, tmp1, ...) calling the same
// scalar_ops.h structs eager's loops call. docs/compiler.md shows examples.
#pragma once

#include <string>
#include <vector>

#include "ignis/compiler/loop_ir.h"
#include "ignis/compiler/size_params.h"
#include "ignis/kernels/cpu/gemm_epilogue.h"

namespace ignis::compiler {

// The signature of every generated kernel.
using KernelFn = void(char* const* bufs, const cpu::KernelRuntime* rt);
// ... and of a size-generic one: P holds the kernel's sizes (Note
// [Size-generic code], size_params.h).
using GenericKernelFn = void(char* const* bufs, const cpu::KernelRuntime* rt, const int64_t* P);

struct CppProgramCode {
  std::string source;
  // Per kernel: the values of its parameters P[0], P[1], ... (empty for
  // static code).
  std::vector<std::vector<int64_t>> size_params;
  // Per kernel: the function it runs (its own, or an earlier kernel's of the
  // same text: Note [Kernels of one text], codegen_cuda.cpp) and the
  // buffers that function's `bufs` holds, in order.
  std::vector<std::string> symbols;
  std::vector<std::vector<int>> params;
};

std::string generate_cpp(const Program& p, const CompilerOptions& options = {});
// With options per kernel (autotuning's winners): per_kernel[i] for kernel i.
std::string generate_cpp(const Program& p, const std::vector<CompilerOptions>& per_kernel);
// The source and each kernel's parameters. `lift` false prints size-generic
// kernels with the values in place of P[k] (what T with B substituted must
// equal; tests compare the two).
// `observe`: what the size-generic kernels' values are recorded as (Note
// [Parameters that vary with the sizes], size_params.h).
CppProgramCode generate_cpp_code(const Program& p, const std::vector<CompilerOptions>& per_kernel,
                                 bool lift = true, Observe observe = Observe::Off);
// The #include lines every generated source begins with: the code cache's
// CompileOptions::prelude, precompiled once per machine.
const char* cpp_includes();
// One kernel's function alone, over its own view of the program and under a
// neutral name (what autotuning compares and keys its cache by: kernels of
// one text, a model's layers, share it; Note [Kernels of one text]).
std::string generate_kernel_cpp(const Program& p, const Kernel& k, const CompilerOptions& options);

// The C++ struct of a scalar_ops name ("exp" -> "Exp"); throws for an unknown name.
const std::string& scalar_struct_name(const std::string& fn);

}  // namespace ignis::compiler

// Resume functions: code objects that continue a frame at an instruction.
//
// When capture stops at a graph break, the plan runs the breaking
// instruction itself and then calls a resume function with the values the
// rest of the frame needs. A resume function's code is the original code with
// a short prologue in front:
//
//   COPY_FREE_VARS n (when the code has free variables) / RESUME 0
//   LOAD_FAST ___stack0 ... (or PUSH_NULL for a NULL stack slot)   rebuild the value stack
//   JUMP_FORWARD -> the original instruction at `target_offset`
//   <original bytecode, unchanged apart from renumbered local slots>
//
// Its parameters are the non-NULL stack items ("___stack0", ...) followed by
// the live locals, in that order; every other local starts unbound, as in the
// original frame at that point. Line numbers, the exception table (shifted by
// the prologue) and free variables are kept, so tracebacks and closures
// behave as in the original. Resume code objects are cached per (code,
// target, stack layout, locals), so a break inside a loop reuses one code
// object (and its capture cache) on every iteration.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>
#include <vector>

namespace ignis::capture {

struct ResumeSpec {
  PyCodeObject* code = nullptr;   // the original code (borrowed)
  int target_offset = 0;          // byte offset of the instruction to continue at
  std::vector<bool> stack_null;   // one per stack slot, bottom first; true: a NULL slot
  std::vector<int> live_locals;   // co_varnames indices passed after the stack items
  bool inside_with = false;       // the target may lie in a with block (see can_resume_at)
};

// Can a frame of `code` be resumed at `offset`? False (with `why` set) when
// the offset lies inside a try/with region (an exception-table entry covers
// it), when the code has cell variables of its own (a resumed frame could not
// share cells with closures made before the break), or when renumbering
// locals would need EXTENDED_ARG.
// `inside_with_ok`: offsets inside `with` blocks are fine (the caller passes
// the block's __exit__ on the value stack, and the block's cleanup handler,
// kept in the resume code, runs it); try blocks still refuse.
bool can_resume_at(PyCodeObject* code, int offset, std::string* why, bool inside_with_ok = false);

// New reference to the resume code object for `spec` (cached), or nullptr
// with a Python error set.
PyObject* make_resume_code(const ResumeSpec& spec);

// New reference: a function running make_resume_code(spec) with the given
// globals and closure (the original function's), or nullptr with an error.
PyObject* make_resume_function(const ResumeSpec& spec, PyObject* globals, PyObject* closure);

// Indices into co_varnames of the locals that may be read at or after
// `offset` before being written (backward liveness over the code's control
// flow, exception edges included). Sorted ascending.
std::vector<int> live_locals_at(PyCodeObject* code, int offset);

// Drops the cached analyses and resume code objects and the references they
// hold to original code objects (ignis.compiler.reset()).
void clear_resume_caches();

// Test-only binding (py_resume_testing.cpp): adds _make_resume_function,
// _live_locals_at and _can_resume_at to `capture_module`. False with a
// Python error set on failure.
bool init_resume_testing(PyObject* capture_module);

}  // namespace ignis::capture

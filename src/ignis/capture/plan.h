// Plan: the compiled code of one cache entry, run by the frame hook in place
// of the frame's bytecode when the entry's guards pass.
//
//   1. inputs: graph inputs are registers of the guard check (guards.h);
//   2. call the backend-compiled graph (if the entry has one) with them,
//      with capture switched off for its duration (its frames are ours);
//   3. rebuild the Python values the rest of the frame needs with a small
//      stack program (ValueProgram) over registers, graph outputs and
//      constants;
//   4. finish: return a value, or run the instruction the tracer could not
//      (a call, a data-dependent jump, an attribute or item store) on real
//      values, then call the resume function that continues the frame after
//      it. Capture stays on for steps 4's Python, so frames called there and
//      the resume function are captured in turn.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>
#include <string>
#include <vector>

#include "ignis/capture/guards.h"

namespace ignis::capture {

// A stack program that builds Python values. Ops push onto a value stack;
// the program's result is the whole stack, bottom first.
struct ValueOp {
  enum Kind : uint8_t {
    Reg,     // push register `arg`
    Out,     // push graph output `arg`
    Const,   // push `obj`
    Null,    // push a NULL slot (CPython's call protocol; only in break stacks)
    Tuple,   // pop `arg` values, push a tuple of them
    List,    // pop `arg` values, push a list
    Dict,    // pop 2*`arg` values (k0, v0, k1, v1, ...), push a dict
    Slice,   // pop 3 (start, stop, step), push a slice
    Call,    // pop `arg` args and then the callable; push callable(*args)
    Pop,     // drop the top value (a side effect's result)
    Save,    // remember the top value (not popped) in slot `arg`
    Load,    // push the value remembered in slot `arg` (one object named twice)
  };
  Kind kind;
  Py_ssize_t arg = 0;
  PyObject* obj = nullptr;  // owned (Const)
};
using ValueProgram = std::vector<ValueOp>;

// How the plan ends.
struct PlanExit {
  enum Kind : uint8_t {
    Return,      // program leaves one value: the frame's return value
    Call,        // CALL: program leaves [stack_below..., NULL|self-or-callable, callable|self, args..., locals...]
    CallEx,      // CALL_FUNCTION_EX: [stack_below..., NULL, callable, args tuple, (kwargs dict if has_kwargs), locals...]
    Jump,        // POP_JUMP_IF_*: [stack_below..., cond, locals...]
    StoreAttr,   // STORE_ATTR name: [stack_below..., value, obj, locals...]  (obj.name = value)
    StoreSubscr, // STORE_SUBSCR: [stack_below..., value, container, key, locals...]
    BinarySubscr,  // BINARY_SUBSCR: [stack_below..., container, key, locals...]; pushes container[key]
    RunOriginal, // no graph, no program: run the frame's own bytecode unchanged
  };
  enum JumpIf : uint8_t { IfTrue, IfFalse, IfNone, IfNotNone };
  Kind kind = Return;
  int stack_below = 0;        // stack items under the instruction's operands
  int num_locals = 0;         // live locals passed to the resume function
  // Call: positional arg count (CPython's oparg) and kw names (tuple or nullptr).
  int nargs = 0;
  PyObject* kwnames = nullptr;  // owned
  bool has_kwargs = false;      // CallEx
  PyObject* name = nullptr;     // StoreAttr attribute name, owned
  JumpIf jump_if = IfTrue;
  // Resume functions (owned): called with (stack..., locals...) where stack is
  // stack_below plus the call's result for Call/CallEx (the item for
  // BinarySubscr), stack_below for the others. For Jump: `resume` is the fall-through path and `resume_jump`
  // the jump target.
  PyObject* resume = nullptr;
  PyObject* resume_jump = nullptr;
  // A break inside `with no_grad()`-like blocks: the grad mode their
  // __exit__ would restore if the instruction raises (-1: none open).
  int grad_mode_on_error = -1;
};

struct Plan {
  std::vector<int> graph_inputs;   // registers
  PyObject* graph_fn = nullptr;    // owned; nullptr when the entry has no graph
  ValueProgram program;
  PlanExit exit;
  ~Plan();
};

struct CaptureConfig;

// One compiled variant of a code object.
struct CacheEntry {
  GuardProgram guards;
  Plan plan;
  std::shared_ptr<const CaptureConfig> config;  // the compile() call that made it
  std::string compile_id;                        // "0/1": frame id / recompile index
};

// Runs the plan with registers from a passed guard check. New reference, or
// nullptr with a Python error set. (plan.cpp)
PyObject* run_plan(const Plan& plan, const FrameView& f, GuardProgram::Registers& regs);

}  // namespace ignis::capture

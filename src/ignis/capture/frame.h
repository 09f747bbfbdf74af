// FrameView: what capture reads from a Python frame that is about to run.
//
// The frame hook (eval_frame.cpp) builds one from CPython's
// _PyInterpreterFrame before the frame's first instruction runs, so only the
// arguments are bound: `args` are the first `nargs` fast locals (positional,
// keyword-only, *args tuple, **kwargs dict, in co_varnames order). Cells are
// not yet made and free variables not yet copied; `closure` is the function's
// closure tuple instead. Everything here is borrowed for the frame's lifetime.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace ignis::capture {

struct FrameView {
  PyCodeObject* code = nullptr;
  PyObject* func = nullptr;      // the function object being called
  PyObject* globals = nullptr;   // dict
  PyObject* builtins = nullptr;  // dict
  PyObject* closure = nullptr;   // tuple of cells, or nullptr
  PyObject* const* args = nullptr;
  int nargs = 0;                 // co_argcount + co_kwonlyargcount + varargs + varkw
};

}  // namespace ignis::capture

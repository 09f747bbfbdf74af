// run_plan: executes a cache entry's compiled code for one call.
//
// Ownership contract: every PyObject* on the value stack is an owned
// reference (nullptr marks a NULL slot of CPython's call protocol). Registers
// are borrowed from the guard check; graph outputs are borrowed from the
// graph's result sequence, which run_plan owns.
#include "ignis/capture/plan.h"

#include <algorithm>

#include "ignis/autograd/grad_mode.h"
#include "ignis/capture/eval_frame.h"

namespace ignis::capture {

Plan::~Plan() {
  if (!Py_IsInitialized()) return;
  Py_CLEAR(graph_fn);
  for (ValueOp& op : program) Py_CLEAR(op.obj);
  Py_CLEAR(exit.kwnames);
  Py_CLEAR(exit.name);
  Py_CLEAR(exit.resume);
  Py_CLEAR(exit.resume_jump);
}

namespace {

// A value stack with inline room for the common short programs, so a
// cache hit that returns a few values allocates nothing here.
class ValueStack {
 public:
  ValueStack() = default;
  ValueStack(const ValueStack&) = delete;
  ValueStack& operator=(const ValueStack&) = delete;
  ~ValueStack() { clear(); }

  void push(PyObject* o) {  // steals o (may be nullptr)
    if (size_ == cap_) grow();
    data_[size_++] = o;
  }
  PyObject* pop() { return data_[--size_]; }
  size_t size() const { return size_; }
  PyObject** data() { return data_; }
  PyObject*& operator[](size_t i) { return data_[i]; }
  void clear() {
    for (size_t i = 0; i < size_; ++i) Py_XDECREF(data_[i]);
    size_ = 0;
  }

 private:
  // The items move into a new block before the old one is released: once
  // the stack lives in heap_, resizing heap_ in place would free the block
  // data_ points to before its items were copied (a crash on the second
  // growth, past 32 values: a long list rebuilt after the graph).
  void grow() {
    size_t ncap = cap_ * 2;
    std::vector<PyObject*> bigger(ncap);
    std::copy(data_, data_ + size_, bigger.begin());
    heap_.swap(bigger);
    data_ = heap_.data();
    cap_ = ncap;
  }
  static constexpr size_t kInline = 16;
  PyObject* inline_[kInline];
  std::vector<PyObject*> heap_;
  PyObject** data_ = inline_;
  size_t size_ = 0;
  size_t cap_ = kInline;
};

bool run_program(const ValueProgram& prog, PyObject* outs, GuardProgram::Registers& regs,
                 ValueStack& st) {
  struct Slots {  // owned references, released on every way out
    std::vector<PyObject*> v;
    ~Slots() {
      for (PyObject* o : v) Py_XDECREF(o);
    }
  } saved;
  auto& slots = saved.v;
  for (const ValueOp& op : prog) {
    switch (op.kind) {
      case ValueOp::Save:
        if (slots.size() <= static_cast<size_t>(op.arg)) slots.resize(op.arg + 1, nullptr);
        Py_XDECREF(slots[op.arg]);
        slots[op.arg] = st[st.size() - 1];
        Py_XINCREF(slots[op.arg]);
        break;
      case ValueOp::Load: {
        PyObject* o = static_cast<size_t>(op.arg) < slots.size() ? slots[op.arg] : nullptr;
        if (!o) {
          PyErr_SetString(PyExc_SystemError, "capture plan: load of an empty slot");
          return false;
        }
        Py_INCREF(o);
        st.push(o);
        break;
      }
      case ValueOp::Reg: {
        PyObject* o = regs.get(static_cast<int>(op.arg));
        Py_XINCREF(o);
        st.push(o);
        break;
      }
      case ValueOp::Out: {
        if (!outs || op.arg >= PySequence_Fast_GET_SIZE(outs)) {
          PyErr_SetString(PyExc_SystemError, "capture plan: graph output index out of range");
          return false;
        }
        PyObject* o = PySequence_Fast_GET_ITEM(outs, op.arg);
        Py_INCREF(o);
        st.push(o);
        break;
      }
      case ValueOp::Const:
        Py_XINCREF(op.obj);
        st.push(op.obj);
        break;
      case ValueOp::Null:
        st.push(nullptr);
        break;
      case ValueOp::Tuple:
      case ValueOp::List: {
        Py_ssize_t n = op.arg;
        PyObject* c = op.kind == ValueOp::Tuple ? PyTuple_New(n) : PyList_New(n);
        if (!c) return false;
        for (Py_ssize_t i = n - 1; i >= 0; --i) {
          PyObject* v = st.pop();
          if (op.kind == ValueOp::Tuple) PyTuple_SET_ITEM(c, i, v);
          else PyList_SET_ITEM(c, i, v);
        }
        st.push(c);
        break;
      }
      case ValueOp::Dict: {
        Py_ssize_t n = op.arg;
        PyObject* d = PyDict_New();
        if (!d) return false;
        size_t base = st.size() - 2 * n;
        bool ok = true;
        for (Py_ssize_t i = 0; i < n && ok; ++i)
          ok = PyDict_SetItem(d, st[base + 2 * i], st[base + 2 * i + 1]) == 0;
        for (Py_ssize_t i = 0; i < 2 * n; ++i) Py_XDECREF(st.pop());
        if (!ok) {
          Py_DECREF(d);
          return false;
        }
        st.push(d);
        break;
      }
      case ValueOp::Slice: {
        PyObject* step = st.pop();
        PyObject* stop = st.pop();
        PyObject* start = st.pop();
        PyObject* s = PySlice_New(start, stop, step);
        Py_XDECREF(start);
        Py_XDECREF(stop);
        Py_XDECREF(step);
        if (!s) return false;
        st.push(s);
        break;
      }
      case ValueOp::Call: {
        size_t n = static_cast<size_t>(op.arg);
        size_t base = st.size() - n - 1;
        PyObject* r = PyObject_Vectorcall(st[base], st.data() + base + 1, n, nullptr);
        for (size_t i = 0; i <= n; ++i) Py_XDECREF(st.pop());
        if (!r) return false;
        st.push(r);
        break;
      }
      case ValueOp::Pop:
        Py_XDECREF(st.pop());
        break;
    }
  }
  return true;
}

// Calls `fn` with the non-NULL items of st[0, below), then `extra` (if not
// null), then st[from, from + nlocals). Borrowed arguments; new reference.
// Note [Resume functions and closures]
// A resume function is made when the frame is traced, with that frame's
// closure cells. One code object can run with many closures (each call of a
// function that defines it makes a new closure), and the cache entry's
// guards read free variables through the running frame, so a later frame of
// the same code may pass them with other cells: its resume function must
// continue with the running frame's cells, not the traced frame's, or it
// would read and write another closure's variables.
// Returns `fn` itself, or a new function stored (owned) in *made_out.
PyObject* resume_for_frame(PyObject* fn, const FrameView& f, PyObject** made_out) {
  if (!fn || !PyFunction_Check(fn)) return fn;
  PyObject* closure = f.closure;
  if (PyFunction_GET_CLOSURE(fn) == closure ||
      (closure == nullptr && PyFunction_GET_CLOSURE(fn) == Py_None))
    return fn;
  PyObject* made = PyFunction_NewWithQualName(PyFunction_GET_CODE(fn), PyFunction_GET_GLOBALS(fn),
                                             reinterpret_cast<PyFunctionObject*>(fn)->func_qualname);
  if (!made) return nullptr;
  *made_out = made;
  if (PyFunction_SetClosure(made, closure ? closure : Py_None) < 0) return nullptr;
  return made;
}

PyObject* call_resume(PyObject* fn_traced, const FrameView& f, ValueStack& st, int below,
                      PyObject* extra, size_t from, int nlocals) {
  PyObject* made = nullptr;
  PyObject* fn = resume_for_frame(fn_traced, f, &made);
  if (fn_traced && !fn) {
    Py_XDECREF(made);
    return nullptr;
  }
  PyObject* small[24];
  std::vector<PyObject*> big;
  size_t max = static_cast<size_t>(below) + 1 + static_cast<size_t>(nlocals);
  PyObject** argv = small;
  if (max > 24) {
    big.resize(max);
    argv = big.data();
  }
  size_t n = 0;
  for (int i = 0; i < below; ++i)
    if (st[i]) argv[n++] = st[i];
  if (extra) argv[n++] = extra;
  for (int i = 0; i < nlocals; ++i) {
    PyObject* v = st[from + i];
    if (!v) {
      PyErr_SetString(PyExc_SystemError, "capture plan: a live local passed to a resume function is unbound");
      Py_XDECREF(made);
      return nullptr;
    }
    argv[n++] = v;
  }
  if (!fn) {
    PyErr_SetString(PyExc_SystemError, "capture plan: missing resume function");
    return nullptr;
  }
  PyObject* out = PyObject_Vectorcall(fn, argv, n, nullptr);
  Py_XDECREF(made);
  return out;
}

// The operands of the breaking instruction start at st[below]; the live
// locals are the top `nlocals` items.
// *resumed is set once the resume function is entered (its own with-block
// handlers restore grad mode from then on).
PyObject* run_exit(const PlanExit& ex, const FrameView& f, ValueStack& st, bool* resumed) {
  const int below = ex.stack_below;
  const int nloc = ex.num_locals;
  const size_t total = st.size();
  auto need = [&](size_t operands) {
    if (total != static_cast<size_t>(below) + operands + static_cast<size_t>(nloc)) {
      PyErr_SetString(PyExc_SystemError, "capture plan: value stack does not match the exit");
      return false;
    }
    return true;
  };
  const size_t locals_at = total - static_cast<size_t>(nloc);

  switch (ex.kind) {
    case PlanExit::Return: {
      if (!need(1)) return nullptr;
      PyObject* r = st[below];
      st[below] = nullptr;
      return r;
    }
    case PlanExit::Call: {
      const size_t nargs = static_cast<size_t>(ex.nargs);
      if (!need(2 + nargs)) return nullptr;
      PyObject* slot0 = st[below];
      PyObject** argv;
      size_t argc;
      PyObject* callable;
      if (!slot0) {
        callable = st[below + 1];
        argv = st.data() + below + 2;
        argc = nargs;
      } else {
        callable = slot0;
        argv = st.data() + below + 1;
        argc = nargs + 1;
      }
      size_t nkw = ex.kwnames ? static_cast<size_t>(PyTuple_GET_SIZE(ex.kwnames)) : 0;
      PyObject* r = PyObject_Vectorcall(callable, argv, argc - nkw, nkw ? ex.kwnames : nullptr);
      if (!r) return nullptr;
      *resumed = true;
      PyObject* out = call_resume(ex.resume, f, st, below, r, locals_at, nloc);
      Py_DECREF(r);
      return out;
    }
    case PlanExit::CallEx: {
      if (!need(ex.has_kwargs ? 4 : 3)) return nullptr;
      PyObject* slot0 = st[below];
      PyObject* callable = slot0 ? slot0 : st[below + 1];
      PyObject* args = st[below + 2];
      PyObject* kwargs = ex.has_kwargs ? st[below + 3] : nullptr;
      // `f(*args)` passes args unconverted; CPython's CALL_FUNCTION_EX names
      // the callee when args is not iterable (check_args_iterable), and so
      // must the plan, or the user sees a different message than eagerly.
      if (!PyTuple_CheckExact(args) && !Py_TYPE(args)->tp_iter && !PySequence_Check(args)) {
        PyObject* fname = _PyObject_FunctionStr(callable);
        if (fname) {
          PyErr_Format(PyExc_TypeError, "%U argument after * must be an iterable, not %.200s", fname,
                       Py_TYPE(args)->tp_name);
          Py_DECREF(fname);
        }
        return nullptr;
      }
      PyObject* targs = PyTuple_CheckExact(args) ? (Py_INCREF(args), args) : PySequence_Tuple(args);
      if (!targs) return nullptr;
      if (slot0) {  // a bound self in slot 1: prepend it
        Py_ssize_t n = PyTuple_GET_SIZE(targs);
        PyObject* t = PyTuple_New(n + 1);
        if (!t) {
          Py_DECREF(targs);
          return nullptr;
        }
        Py_INCREF(st[below + 1]);
        PyTuple_SET_ITEM(t, 0, st[below + 1]);
        for (Py_ssize_t i = 0; i < n; ++i) {
          Py_INCREF(PyTuple_GET_ITEM(targs, i));
          PyTuple_SET_ITEM(t, i + 1, PyTuple_GET_ITEM(targs, i));
        }
        Py_DECREF(targs);
        targs = t;
      }
      PyObject* kw = nullptr;
      if (kwargs && kwargs != Py_None) {
        if (PyDict_CheckExact(kwargs)) {
          kw = Py_NewRef(kwargs);
        } else {
          kw = PyDict_New();
          if (!kw || PyDict_Update(kw, kwargs) < 0) {
            Py_XDECREF(kw);
            Py_DECREF(targs);
            return nullptr;
          }
        }
      }
      PyObject* r = PyObject_Call(callable, targs, kw);
      Py_DECREF(targs);
      Py_XDECREF(kw);
      if (!r) return nullptr;
      *resumed = true;
      PyObject* out = call_resume(ex.resume, f, st, below, r, locals_at, nloc);
      Py_DECREF(r);
      return out;
    }
    case PlanExit::Jump: {
      if (!need(1)) return nullptr;
      PyObject* cond = st[below];
      bool taken;
      switch (ex.jump_if) {
        case PlanExit::IfNone: taken = cond == Py_None; break;
        case PlanExit::IfNotNone: taken = cond != Py_None; break;
        default: {
          int t = PyObject_IsTrue(cond);
          if (t < 0) return nullptr;
          taken = ex.jump_if == PlanExit::IfTrue ? t == 1 : t == 0;
        }
      }
      *resumed = true;
      return call_resume(taken ? ex.resume_jump : ex.resume, f, st, below, nullptr, locals_at, nloc);
    }
    case PlanExit::StoreAttr: {
      if (!need(2)) return nullptr;
      if (PyObject_SetAttr(st[below + 1], ex.name, st[below]) < 0) return nullptr;
      *resumed = true;
      return call_resume(ex.resume, f, st, below, nullptr, locals_at, nloc);
    }
    case PlanExit::StoreSubscr: {
      if (!need(3)) return nullptr;
      if (PyObject_SetItem(st[below + 1], st[below + 2], st[below]) < 0) return nullptr;
      *resumed = true;
      return call_resume(ex.resume, f, st, below, nullptr, locals_at, nloc);
    }
    case PlanExit::BinarySubscr: {
      // (a boolean-mask index: its result's size depends on the data)
      if (!need(2)) return nullptr;
      PyObject* r = PyObject_GetItem(st[below], st[below + 1]);
      if (!r) return nullptr;
      *resumed = true;
      PyObject* out = call_resume(ex.resume, f, st, below, r, locals_at, nloc);
      Py_DECREF(r);
      return out;
    }
    case PlanExit::RunOriginal:
      break;
  }
  PyErr_SetString(PyExc_SystemError, "capture plan: RunOriginal has no plan to run");
  return nullptr;
}

}  // namespace

PyObject* run_plan(const Plan& plan, const FrameView& f, GuardProgram::Registers& regs) {
  PyObject* outs = nullptr;  // owned: the graph's outputs as a fast sequence
  if (plan.graph_fn) {
    PyObject* small[16];
    std::vector<PyObject*> big;
    size_t n = plan.graph_inputs.size();
    PyObject** argv = small;
    if (n > 16) {
      big.resize(n);
      argv = big.data();
    }
    for (size_t i = 0; i < n; ++i) argv[i] = regs.get(plan.graph_inputs[i]);
    PyObject* r;
    // A graph may switch grad mode (with-blocks); if it raises midway, the
    // blocks' exits never run: put the caller's mode back, as they would.
    bool grad_before = autograd::grad_enabled();
    {
      // The graph's own frames (the backend's callable) are never captured.
      CaptureScope off(nullptr);
      r = PyObject_Vectorcall(plan.graph_fn, argv, n, nullptr);
    }
    if (!r) {
      autograd::set_grad_enabled(grad_before);
      return nullptr;
    }
    outs = PySequence_Fast(r, "capture plan: a compiled graph must return a tuple or list");
    Py_DECREF(r);
    if (!outs) return nullptr;
  }
  ValueStack st;
  PyObject* result = nullptr;
  bool resumed = false;
  if (run_program(plan.program, outs, regs, st)) result = run_exit(plan.exit, f, st, &resumed);
  if (!result && plan.exit.grad_mode_on_error >= 0 && !resumed)
    autograd::set_grad_enabled(plan.exit.grad_mode_on_error != 0);
  Py_XDECREF(outs);
  return result;
}

}  // namespace ignis::capture

// TEST STUB of trace_frame, for the hook's tests until tracer.cpp lands.
// DELETE THIS FILE when the real tracer is merged (its trace_frame is weak,
// so the real definition wins even if this file is still around).
//
// It does not trace: it guards each argument (tensors with check_tensor,
// plain constants with check_equals, anything else with check_type) and
// grad mode, then calls cfg.backend(fn, [args]) with the frame's function
// and arguments. The backend's result is the entry's graph function, called
// with the arguments; its first output is returned. A backend returning None
// gives a RunOriginal entry; a function whose name starts with "stub_skip"
// is rejected as a whole (skip_code). A backend exception propagates. A
// function carrying `_stub_plan` gets the plan that dict spells out (see
// describe_plan), to exercise every plan exit; `_stub_guards` adds guards
// (see add_stub_guards).
#include "ignis/capture/tracer.h"

#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/python/py_common.h"

namespace ignis::capture {

namespace {

std::string local_name(PyCodeObject* code, int i) {
  PyObject* names = code->co_localsplusnames;
  if (!names || i >= PyTuple_GET_SIZE(names)) return "?";
  const char* s = PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i));
  return s ? s : "?";
}

bool is_plain_constant(PyObject* o) {
  return o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
         PyUnicode_CheckExact(o);
}

// A plan spelled out by the test on the function (fn._stub_plan, a dict):
//   layout: value stack, bottom first: None -> NULL slot, int i -> graph
//           output i, "aN" -> argument N's register;
//   exit: "return" | "call" | "callex" | "jump" | "store_attr" | "store_subscr";
//   stack_below, num_locals, nargs, kwnames, has_kwargs, name,
//   jump_if ("true" | "false" | "none" | "not_none"), resume, resume_jump.
bool describe_plan(PyObject* d, Plan& plan) {
  auto item = [&](const char* k) { return PyDict_GetItemString(d, k); };  // borrowed
  auto int_of = [&](const char* k) {
    PyObject* v = item(k);
    return v ? static_cast<int>(PyLong_AsLong(v)) : 0;
  };
  auto str_of = [&](const char* k) -> std::string {
    PyObject* v = item(k);
    const char* c = v && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : nullptr;
    return c ? c : "";
  };
  PyObject* layout = item("layout");
  if (!layout || !PyList_Check(layout)) {
    PyErr_SetString(PyExc_TypeError, "_stub_plan needs a layout list");
    return false;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(layout); ++i) {
    PyObject* v = PyList_GET_ITEM(layout, i);
    if (v == Py_None) {
      plan.program.push_back(ValueOp{ValueOp::Null, 0, nullptr});
    } else if (PyLong_Check(v)) {
      plan.program.push_back(ValueOp{ValueOp::Out, PyLong_AsSsize_t(v), nullptr});
    } else {
      std::string s = PyUnicode_AsUTF8(v);
      plan.program.push_back(ValueOp{ValueOp::Reg, std::stoi(s.substr(1)), nullptr});
    }
  }
  PlanExit& ex = plan.exit;
  std::string kind = str_of("exit");
  ex.kind = kind == "call"           ? PlanExit::Call
            : kind == "callex"       ? PlanExit::CallEx
            : kind == "jump"         ? PlanExit::Jump
            : kind == "store_attr"   ? PlanExit::StoreAttr
            : kind == "store_subscr" ? PlanExit::StoreSubscr
                                     : PlanExit::Return;
  ex.stack_below = int_of("stack_below");
  ex.num_locals = int_of("num_locals");
  ex.nargs = int_of("nargs");
  ex.has_kwargs = int_of("has_kwargs") != 0;
  std::string j = str_of("jump_if");
  ex.jump_if = j == "false" ? PlanExit::IfFalse
               : j == "none" ? PlanExit::IfNone
               : j == "not_none" ? PlanExit::IfNotNone
                                 : PlanExit::IfTrue;
  if (PyObject* v = item("kwnames")) ex.kwnames = Py_NewRef(v);
  if (PyObject* v = item("name")) ex.name = Py_NewRef(v);
  if (PyObject* v = item("resume")) ex.resume = Py_NewRef(v);
  if (PyObject* v = item("resume_jump")) ex.resume_jump = Py_NewRef(v);
  return !PyErr_Occurred();
}

// Extra guards spelled out by the test (fn._stub_guards, a list of tuples);
// the register each load returns is appended to fn._stub_regs:
//   ("local", i, name) ("global", name) ("closure", i, name) ("attr", r, name)
//   ("dict_item", r, key) ("item", r, i) ("call_method0", r, method)
//   ("id", r, obj) ("type", r, type) ("equals", r, value) ("len", r, n)
//   ("none", r, is_none) ("grad_mode", on) ("default_dtype", int)
bool add_stub_guards(PyObject* func, PyObject* list, GuardProgram& g) {
  PyObject* regs = PyList_New(0);
  if (!regs) return false;
  bool ok = true;
  for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(list); ++i) {
    PyObject* t = PyList_GET_ITEM(list, i);
    std::string op = PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, 0));
    auto a = [&](int k) { return PyTuple_GET_ITEM(t, k); };
    auto n = [&](int k) { return static_cast<int>(PyLong_AsLong(a(k))); };
    auto s = [&](int k) { return std::string(PyUnicode_AsUTF8(a(k))); };
    int reg = -1;
    if (op == "local") reg = g.local(n(1), s(2));
    else if (op == "global") reg = g.global(a(1));
    else if (op == "closure") reg = g.closure(n(1), s(2));
    else if (op == "attr") reg = g.attr(n(1), a(2));
    else if (op == "dict_item") reg = g.dict_item(n(1), a(2));
    else if (op == "item") reg = g.item(n(1), n(2));
    else if (op == "call_method0") reg = g.call_method0(n(1), s(2).c_str());
    else if (op == "id") g.check_id(n(1), a(2));
    else if (op == "type") g.check_type(n(1), reinterpret_cast<PyTypeObject*>(a(2)));
    else if (op == "equals") g.check_equals(n(1), a(2));
    else if (op == "len") g.check_len(n(1), n(2));
    else if (op == "none") g.check_none(n(1), PyObject_IsTrue(a(2)) == 1);
    else if (op == "grad_mode") g.check_grad_mode(PyObject_IsTrue(a(1)) == 1);
    else if (op == "default_dtype") g.check_default_dtype(n(1));
    else {
      PyErr_Format(PyExc_ValueError, "unknown stub guard %s", op.c_str());
      ok = false;
    }
    if (ok && reg >= 0) {
      PyObject* r = PyLong_FromLong(reg);
      ok = r && PyList_Append(regs, r) == 0;
      Py_XDECREF(r);
    }
  }
  ok = ok && !PyErr_Occurred() && PyObject_SetAttrString(func, "_stub_regs", regs) == 0;
  Py_DECREF(regs);
  return ok;
}

}  // namespace

__attribute__((weak)) TraceResult trace_frame(const FrameView& f,
                                              const std::shared_ptr<const CaptureConfig>& cfg,
                                              bool* error) {
  TraceResult res;
  *error = false;
  const char* name = PyUnicode_AsUTF8(f.code->co_name);
  if (name && std::string(name).rfind("stub_skip", 0) == 0) {
    res.skip_code = true;
    return res;
  }
  auto entry = std::make_shared<CacheEntry>();
  PyObject* args = PyList_New(f.nargs);
  if (!args) {
    *error = true;
    return res;
  }
  for (int i = 0; i < f.nargs; ++i) {
    PyObject* v = f.args[i];
    int reg = entry->guards.local(i, local_name(f.code, i));
    entry->plan.graph_inputs.push_back(reg);
    if (py::is_tensor(v)) {
      const Tensor& t = py::unwrap(v);
      TensorGuardSpec spec;
      spec.type = Py_TYPE(v);
      spec.dtype = static_cast<int>(t.dtype());
      spec.device_type = static_cast<int>(t.device().type);
      spec.device_index = t.device().index;
      spec.requires_grad = autograd::requires_grad(t);
      spec.sizes.assign(t.sizes().begin(), t.sizes().end());
      spec.strides.assign(t.strides().begin(), t.strides().end());
      entry->guards.check_tensor(reg, std::move(spec));
    } else if (is_plain_constant(v)) {
      entry->guards.check_equals(reg, v);
    } else {
      entry->guards.check_type(reg, Py_TYPE(v));
    }
    Py_INCREF(v);
    PyList_SET_ITEM(args, i, v);
  }
  entry->guards.check_grad_mode(autograd::grad_enabled());
  PyObject* extra = PyObject_GetAttrString(f.func, "_stub_guards");
  if (!extra) PyErr_Clear();
  if (extra && PyList_Check(extra) && !add_stub_guards(f.func, extra, entry->guards)) {
    Py_DECREF(extra);
    Py_DECREF(args);
    *error = true;
    return res;
  }
  Py_XDECREF(extra);
  PyObject* compiled = PyObject_CallFunctionObjArgs(cfg->backend, f.func, args, nullptr);
  Py_DECREF(args);
  if (!compiled) {
    *error = true;
    return res;
  }
  // The stub's graph gets the arguments positionally: only right for plain
  // positional parameters.
  bool positional_only = f.code->co_kwonlyargcount == 0 &&
                         !(f.code->co_flags & (CO_VARARGS | CO_VARKEYWORDS));
  if (compiled == Py_None || !positional_only) {
    Py_DECREF(compiled);
    entry->plan.exit.kind = PlanExit::RunOriginal;
  } else {
    entry->plan.graph_fn = compiled;
    PyObject* desc = PyObject_GetAttrString(f.func, "_stub_plan");
    if (!desc) PyErr_Clear();
    if (desc && PyDict_Check(desc)) {
      bool ok = describe_plan(desc, entry->plan);
      Py_DECREF(desc);
      if (!ok) {
        *error = true;
        return res;
      }
    } else {
      Py_XDECREF(desc);
      entry->plan.program.push_back(ValueOp{ValueOp::Out, 0, nullptr});
      entry->plan.exit.kind = PlanExit::Return;
    }
  }
  entry->config = cfg;
  res.entry = std::move(entry);
  return res;
}

}  // namespace ignis::capture

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
// is rejected as a whole (skip_code). A backend exception propagates.
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
  PyObject* compiled = PyObject_CallFunctionObjArgs(cfg->backend, f.func, args, nullptr);
  Py_DECREF(args);
  if (!compiled) {
    *error = true;
    return res;
  }
  if (compiled == Py_None) {
    Py_DECREF(compiled);
    entry->plan.exit.kind = PlanExit::RunOriginal;
  } else {
    entry->plan.graph_fn = compiled;
    entry->plan.program.push_back(ValueOp{ValueOp::Out, 0, nullptr});
    entry->plan.exit.kind = PlanExit::Return;
  }
  entry->config = cfg;
  res.entry = std::move(entry);
  return res;
}

}  // namespace ignis::capture

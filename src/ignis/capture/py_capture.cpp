// The `_C._capture` submodule: CompiledFunction and DisabledFunction (the
// callables ignis.compile and ignis.compiler.disable return) and the
// switches of the capture machinery.
#include <memory>
#include <new>

#include "ignis/capture/eval_frame.h"
#include "ignis/capture/resume.h"
#include "ignis/capture/tracer.h"
#include "ignis/capture/log.h"
#include "ignis/python/py_common.h"

namespace ignis::capture {
namespace {

// --- shared parts of the two wrapper types --------------------------------------

// Copies __name__, __qualname__, __doc__, __module__, __dict__ and sets
// __wrapped__ as functools.update_wrapper does (functions and methods only:
// an nn.Module's __dict__ is its state, not metadata).
bool copy_metadata(PyObject* self, PyObject* fn) {
  if (PyFunction_Check(fn) || PyMethod_Check(fn)) {
    PyObject* functools = PyImport_ImportModule("functools");
    if (!functools) return false;
    PyObject* r = PyObject_CallMethod(functools, "update_wrapper", "OO", self, fn);
    Py_DECREF(functools);
    if (!r) return false;
    Py_DECREF(r);
    return true;
  }
  return PyObject_SetAttrString(self, "__wrapped__", fn) == 0;
}

// __get__: bind to an instance like a function does.
PyObject* bind_descr(PyObject* self, PyObject* obj, PyObject*) {
  if (!obj || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

// --- CompiledFunction -----------------------------------------------------------------

struct CompiledFunctionObject {
  PyObject_HEAD
  PyObject* fn;
  PyObject* dict;
  vectorcallfunc vectorcall;
  std::shared_ptr<const CaptureConfig> config;
};

// RAII for one compiled call: config current, hook installed.
class CompiledCall {
 public:
  explicit CompiledCall(const std::shared_ptr<const CaptureConfig>& cfg) : scope_(cfg) {
    enter_compiled_call();
  }
  ~CompiledCall() { exit_compiled_call(); }

 private:
  CaptureScope scope_;
};

PyObject* cf_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* cf = reinterpret_cast<CompiledFunctionObject*>(self);
  if (!cf->fn || !cf->config) {
    PyErr_SetString(PyExc_RuntimeError, "CompiledFunction was cleared");
    return nullptr;
  }
  CompiledCall call(cf->config);
  return PyObject_Vectorcall(cf->fn, args, nargsf, kwnames);
}

PyObject* cf_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"fn", "backend", "fullgraph", "dynamic", "cache_size_limit",
                             "capture_dynamic_output_shape_ops", "capture_scalar_outputs", nullptr};
  PyObject* fn;
  PyObject* backend;
  int fullgraph = 0;
  PyObject* dynamic = Py_None;
  int limit = 8;
  int dynamic_output_shapes = 1, scalar_outputs = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|pOipp:CompiledFunction", const_cast<char**>(kw),
                                   &fn, &backend, &fullgraph, &dynamic, &limit,
                                   &dynamic_output_shapes, &scalar_outputs))
    return nullptr;
  if (!PyCallable_Check(fn) || !PyCallable_Check(backend)) {
    PyErr_SetString(PyExc_TypeError, "CompiledFunction(fn, backend, ...): fn and backend must be callable");
    return nullptr;
  }
  auto* self = reinterpret_cast<CompiledFunctionObject*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  new (&self->config) std::shared_ptr<const CaptureConfig>();
  self->fn = Py_NewRef(fn);
  self->vectorcall = cf_vectorcall;
  try {
    auto cfg = std::make_shared<CaptureConfig>();
    cfg->backend = Py_NewRef(backend);
    cfg->fullgraph = fullgraph != 0;
    cfg->dynamic = Py_NewRef(dynamic);
    cfg->cache_size_limit = limit;
    cfg->capture_dynamic_output_shape_ops = dynamic_output_shapes != 0;
    cfg->capture_scalar_outputs = scalar_outputs != 0;
    self->config = std::move(cfg);
  } catch (...) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  if (!copy_metadata(reinterpret_cast<PyObject*>(self), fn)) {
    Py_DECREF(self);
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(self);
}

int cf_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* cf = reinterpret_cast<CompiledFunctionObject*>(self);
  Py_VISIT(cf->fn);
  Py_VISIT(cf->dict);
  if (cf->config) Py_VISIT(cf->config->backend);
  return 0;
}

int cf_clear(PyObject* self) {
  auto* cf = reinterpret_cast<CompiledFunctionObject*>(self);
  Py_CLEAR(cf->fn);
  Py_CLEAR(cf->dict);
  cf->config.reset();  // cache entries may keep the config (and its backend) alive
  return 0;
}

void cf_dealloc(PyObject* self) {
  auto* cf = reinterpret_cast<CompiledFunctionObject*>(self);
  PyObject_GC_UnTrack(self);
  cf_clear(self);
  cf->config.~shared_ptr();
  Py_TYPE(self)->tp_free(self);
}

PyObject* cf_repr(PyObject* self) {
  auto* cf = reinterpret_cast<CompiledFunctionObject*>(self);
  PyObject* backend = cf->config ? cf->config->backend : Py_None;
  return PyUnicode_FromFormat("<ignis.compile of %R (backend=%R, fullgraph=%s)>", cf->fn ? cf->fn : Py_None,
                              backend, cf->config && cf->config->fullgraph ? "True" : "False");
}

PyObject* cf_get_fn(PyObject* self, void*) {
  PyObject* fn = reinterpret_cast<CompiledFunctionObject*>(self)->fn;
  return Py_NewRef(fn ? fn : Py_None);
}
const CaptureConfig* config_of(PyObject* self) {
  const CaptureConfig* c = reinterpret_cast<CompiledFunctionObject*>(self)->config.get();
  if (!c) PyErr_SetString(PyExc_RuntimeError, "CompiledFunction was cleared");
  return c;
}
PyObject* cf_get_backend(PyObject* self, void*) {
  const CaptureConfig* c = config_of(self);
  return c ? Py_NewRef(c->backend) : nullptr;
}
PyObject* cf_get_fullgraph(PyObject* self, void*) {
  const CaptureConfig* c = config_of(self);
  return c ? PyBool_FromLong(c->fullgraph) : nullptr;
}
PyObject* cf_get_dynamic(PyObject* self, void*) {
  const CaptureConfig* c = config_of(self);
  return c ? Py_NewRef(c->dynamic) : nullptr;
}
PyObject* cf_get_limit(PyObject* self, void*) {
  const CaptureConfig* c = config_of(self);
  return c ? PyLong_FromLong(c->cache_size_limit) : nullptr;
}

PyGetSetDef cf_getset[] = {
    {"_fn", cf_get_fn, nullptr, "the wrapped callable", nullptr},
    {"_backend", cf_get_backend, nullptr, nullptr, nullptr},
    {"_fullgraph", cf_get_fullgraph, nullptr, nullptr, nullptr},
    {"_dynamic", cf_get_dynamic, nullptr, nullptr, nullptr},
    {"_cache_size_limit", cf_get_limit, nullptr, nullptr, nullptr},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject CompiledFunctionType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// --- DisabledFunction --------------------------------------------------------------------

struct DisabledFunctionObject {
  PyObject_HEAD
  PyObject* fn;
  PyObject* dict;
  vectorcallfunc vectorcall;
};

PyObject* df_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* df = reinterpret_cast<DisabledFunctionObject*>(self);
  CaptureScope off(nullptr);
  return PyObject_Vectorcall(df->fn, args, nargsf, kwnames);
}

PyObject* df_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"fn", nullptr};
  PyObject* fn;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:DisabledFunction", const_cast<char**>(kw), &fn))
    return nullptr;
  if (!PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "DisabledFunction(fn): fn must be callable");
    return nullptr;
  }
  auto* self = reinterpret_cast<DisabledFunctionObject*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->fn = Py_NewRef(fn);
  self->vectorcall = df_vectorcall;
  if (!copy_metadata(reinterpret_cast<PyObject*>(self), fn)) {
    Py_DECREF(self);
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(self);
}

int df_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* df = reinterpret_cast<DisabledFunctionObject*>(self);
  Py_VISIT(df->fn);
  Py_VISIT(df->dict);
  return 0;
}

int df_clear(PyObject* self) {
  auto* df = reinterpret_cast<DisabledFunctionObject*>(self);
  Py_CLEAR(df->fn);
  Py_CLEAR(df->dict);
  return 0;
}

void df_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  df_clear(self);
  Py_TYPE(self)->tp_free(self);
}

PyObject* df_repr(PyObject* self) {
  PyObject* fn = reinterpret_cast<DisabledFunctionObject*>(self)->fn;
  return PyUnicode_FromFormat("<ignis.compiler.disable of %R>", fn ? fn : Py_None);
}

PyObject* df_get_fn(PyObject* self, void*) {
  PyObject* fn = reinterpret_cast<DisabledFunctionObject*>(self)->fn;
  return Py_NewRef(fn ? fn : Py_None);
}

PyGetSetDef df_getset[] = {
    {"_fn", df_get_fn, nullptr, "the wrapped callable", nullptr},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject DisabledFunctionType = {PyVarObject_HEAD_INIT(nullptr, 0)};

bool ready_types() {
  PyTypeObject& c = CompiledFunctionType;
  c.tp_name = "ignis._C._capture.CompiledFunction";
  c.tp_basicsize = sizeof(CompiledFunctionObject);
  c.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
               Py_TPFLAGS_METHOD_DESCRIPTOR;
  c.tp_doc = "A callable that runs `fn` with frame capture on (what ignis.compile returns).";
  c.tp_new = cf_new;
  c.tp_dealloc = cf_dealloc;
  c.tp_traverse = cf_traverse;
  c.tp_clear = cf_clear;
  c.tp_call = PyVectorcall_Call;
  c.tp_vectorcall_offset = offsetof(CompiledFunctionObject, vectorcall);
  c.tp_descr_get = bind_descr;
  c.tp_dictoffset = offsetof(CompiledFunctionObject, dict);
  c.tp_getset = cf_getset;
  c.tp_repr = cf_repr;
  if (PyType_Ready(&c) < 0) return false;

  PyTypeObject& d = DisabledFunctionType;
  d.tp_name = "ignis._C._capture.DisabledFunction";
  d.tp_basicsize = sizeof(DisabledFunctionObject);
  d.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
               Py_TPFLAGS_METHOD_DESCRIPTOR;
  d.tp_doc = "A callable that runs `fn` with frame capture off (ignis.compiler.disable).";
  d.tp_new = df_new;
  d.tp_dealloc = df_dealloc;
  d.tp_traverse = df_traverse;
  d.tp_clear = df_clear;
  d.tp_call = PyVectorcall_Call;
  d.tp_vectorcall_offset = offsetof(DisabledFunctionObject, vectorcall);
  d.tp_descr_get = bind_descr;
  d.tp_dictoffset = offsetof(DisabledFunctionObject, dict);
  d.tp_getset = df_getset;
  d.tp_repr = df_repr;
  return PyType_Ready(&d) == 0;
}

// --- module functions ------------------------------------------------------------------

PyCodeObject* code_arg(PyObject* o) {
  if (PyCode_Check(o)) return reinterpret_cast<PyCodeObject*>(o);
  PyErr_SetString(PyExc_TypeError, "expected a code object");
  return nullptr;
}

PyObject* f_mark_skip(PyObject*, PyObject* o) {
  PyCodeObject* code = code_arg(o);
  if (!code) return nullptr;
  mark_disabled(code);
  Py_RETURN_NONE;
}

PyObject* f_is_skipped(PyObject*, PyObject* o) {
  PyCodeObject* code = code_arg(o);
  if (!code) return nullptr;
  return PyBool_FromLong(is_skipped(code));
}

PyObject* f_reset(PyObject*, PyObject*) {
  reset_caches();
  clear_resume_caches();
  clear_code_info_cache();
  Py_RETURN_NONE;
}

PyObject* f_set_log_mask(PyObject*, PyObject* o) {
  unsigned long v = PyLong_AsUnsignedLong(o);
  if (PyErr_Occurred()) return nullptr;
  set_log_mask(static_cast<unsigned>(v));
  Py_RETURN_NONE;
}

PyObject* f_log_mask(PyObject*, PyObject*) { return PyLong_FromUnsignedLong(log_mask()); }

PyObject* g_sink = nullptr;  // owned: the list set_event_sink keeps alive

PyObject* f_set_event_sink(PyObject*, PyObject* o) {
  if (o != Py_None && !PyList_Check(o)) {
    PyErr_SetString(PyExc_TypeError, "set_event_sink expects a list or None");
    return nullptr;
  }
  PyObject* old = g_sink;
  g_sink = o == Py_None ? nullptr : Py_NewRef(o);
  set_event_sink(g_sink);
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

PyObject* f_event_sink(PyObject*, PyObject*) { return Py_NewRef(g_sink ? g_sink : Py_None); }

PyObject* f_cache_entry_count(PyObject*, PyObject* o) {
  PyCodeObject* code = code_arg(o);
  if (!code) return nullptr;
  return PyLong_FromLong(cache_entry_count(code));
}

PyObject* f_describe_cache(PyObject*, PyObject* o) {
  PyCodeObject* code = code_arg(o);
  if (!code) return nullptr;
  return describe_cache(code);
}

PyObject* f_hook_installed(PyObject*, PyObject*) { return PyBool_FromLong(hook_installed()); }

PyMethodDef capture_methods[] = {
    {"mark_skip", f_mark_skip, METH_O, "mark_skip(code): never capture frames of this code (ignis.compiler.disable)."},
    {"is_skipped", f_is_skipped, METH_O, "is_skipped(code): whether the hook runs this code eagerly."},
    {"reset", f_reset, METH_NOARGS, "Drops every cache entry and hook-made skip mark."},
    {"set_log_mask", f_set_log_mask, METH_O, "set_log_mask(int): which capture logs are on (LOG_* bits)."},
    {"log_mask", f_log_mask, METH_NOARGS, nullptr},
    {"set_event_sink", f_set_event_sink, METH_O, "set_event_sink(list|None): where explain() events go."},
    {"event_sink", f_event_sink, METH_NOARGS, nullptr},
    {"cache_entry_count", f_cache_entry_count, METH_O, "cache_entry_count(code): cache entries of a code object."},
    {"describe_cache", f_describe_cache, METH_O, "describe_cache(code): [(compile_id, [guard lines])], most recent first."},
    {"hook_installed", f_hook_installed, METH_NOARGS, "Whether the frame hook is installed now."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef capture_module_def = {PyModuleDef_HEAD_INIT, "ignis._C._capture",
                                  "Frame capture (ignis.compile's C side).", -1, capture_methods,
                                  nullptr, nullptr, nullptr, nullptr};

}  // namespace
}  // namespace ignis::capture

namespace ignis::py {

bool init_capture(PyObject* module) {
  using namespace ignis::capture;
  if (!ready_types()) return false;
  PyObject* m = PyModule_Create(&capture_module_def);
  if (!m) return false;
  bool ok = PyModule_AddObjectRef(m, "CompiledFunction", reinterpret_cast<PyObject*>(&CompiledFunctionType)) == 0 &&
            PyModule_AddObjectRef(m, "DisabledFunction", reinterpret_cast<PyObject*>(&DisabledFunctionType)) == 0 &&
            PyModule_AddIntConstant(m, "LOG_GRAPH_BREAKS", kLogGraphBreaks) == 0 &&
            PyModule_AddIntConstant(m, "LOG_GUARDS", kLogGuards) == 0 &&
            PyModule_AddIntConstant(m, "LOG_RECOMPILES", kLogRecompiles) == 0 &&
            PyModule_AddIntConstant(m, "LOG_GRAPH_CODE", kLogGraphCode) == 0 &&
            PyModule_AddIntConstant(m, "LOG_BYTECODE", kLogBytecode) == 0 &&
            PyModule_AddIntConstant(m, "LOG_OUTPUT_CODE", kLogOutputCode) == 0 &&
            PyModule_AddIntConstant(m, "LOG_AOT_GRAPHS", kLogAotGraphs) == 0 &&
            PyModule_AddIntConstant(m, "LOG_SCHEDULE", kLogSchedule) == 0 &&
            PyModule_AddIntConstant(m, "LOG_DYNAMIC", kLogDynamic) == 0 &&
            PyModule_AddIntConstant(m, "LOG_CUDAGRAPHS", kLogCudagraphs) == 0;
  // The lead adds helper A's test binding here: init_resume_testing(m).
  if (ok) {
    PyObject* modules = PyImport_GetModuleDict();  // borrowed
    ok = PyDict_SetItemString(modules, "ignis._C._capture", m) == 0;
  }
  if (!ok || PyModule_AddObjectRef(module, "_capture", m) < 0) {
    Py_DECREF(m);
    return false;
  }
  Py_DECREF(m);
  return true;
}

}  // namespace ignis::py

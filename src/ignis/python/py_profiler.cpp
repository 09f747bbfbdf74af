// The profiler's binding (profiler/profiler.h); ignis.profiler and
// ignis.autograd.profiler build torch's objects on top of it.
//   _C._profiler_start(record_shapes): starts a session on this thread.
//   _C._profiler_stop(): ends it; a list of (name, kind, start_ns, end_ns,
//     parent, shapes) with kind 0 op, 1 backward node, 2 user range,
//     3 compiled graph or kernel, parent an index into the list or -1, and
//     shapes a list of lists of ints (or None without record_shapes).
//   _C._profiler_active(): whether a session runs on this thread.
//   _C._profiler_begin_range(name) -> handle, _C._profiler_end_range(handle):
//     record_function's range.
#include "ignis/profiler/profiler.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

namespace {

PyObject* f_start(PyObject*, PyObject* record_shapes) {
  IGNIS_PY_BEGIN
  profiler::Options opt;
  opt.record_shapes = PyObject_IsTrue(record_shapes) == 1;
  profiler::start(opt);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* shapes_list(const std::vector<std::vector<int64_t>>& shapes) {
  PyObject* l = PyList_New(Py_ssize_t(shapes.size()));
  if (!l) return nullptr;
  for (size_t i = 0; i < shapes.size(); ++i) {
    PyObject* s = PyList_New(Py_ssize_t(shapes[i].size()));
    if (!s) {
      Py_DECREF(l);
      return nullptr;
    }
    PyList_SET_ITEM(l, Py_ssize_t(i), s);
    for (size_t j = 0; j < shapes[i].size(); ++j) {
      PyObject* v = PyLong_FromLongLong(shapes[i][j]);
      if (!v) {
        Py_DECREF(l);
        return nullptr;
      }
      PyList_SET_ITEM(s, Py_ssize_t(j), v);
    }
  }
  return l;
}

PyObject* f_stop(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  std::vector<profiler::Event> events = profiler::stop();
  PyObject* out = PyList_New(Py_ssize_t(events.size()));
  if (!out) return nullptr;
  for (size_t i = 0; i < events.size(); ++i) {
    const profiler::Event& e = events[i];
    PyObject* shapes;
    if (e.kind == profiler::EventKind::Op && !e.shapes.empty()) {
      shapes = shapes_list(e.shapes);
      if (!shapes) {
        Py_DECREF(out);
        return nullptr;
      }
    } else {
      shapes = Py_NewRef(Py_None);
    }
    PyObject* t = Py_BuildValue("(s#iLLiN)", e.name.data(), Py_ssize_t(e.name.size()),
                                int(e.kind), static_cast<long long>(e.start_ns),
                                static_cast<long long>(e.end_ns), int(e.parent), shapes);
    if (!t) {
      Py_DECREF(out);
      return nullptr;
    }
    PyList_SET_ITEM(out, Py_ssize_t(i), t);
  }
  return out;
  IGNIS_PY_END(nullptr)
}

PyObject* f_active(PyObject*, PyObject*) { return PyBool_FromLong(profiler::active()); }

PyObject* f_begin_range(PyObject*, PyObject* name) {
  IGNIS_PY_BEGIN
  if (!PyUnicode_Check(name)) {
    PyErr_Format(PyExc_TypeError, "record_function expects a str name, got %s",
                 Py_TYPE(name)->tp_name);
    return nullptr;
  }
  return PyLong_FromLongLong(profiler::begin_range(PyUnicode_AsUTF8(name)));
  IGNIS_PY_END(nullptr)
}

PyObject* f_end_range(PyObject*, PyObject* handle) {
  IGNIS_PY_BEGIN
  const long long h = PyLong_AsLongLong(handle);
  if (h == -1 && PyErr_Occurred()) return nullptr;
  profiler::end_range(h);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyMethodDef functions[] = {
    {"_profiler_start", f_start, METH_O, "Starts profiling on this thread."},
    {"_profiler_stop", f_stop, METH_NOARGS, "Stops profiling on this thread; its events."},
    {"_profiler_active", f_active, METH_NOARGS, "Whether this thread profiles."},
    {"_profiler_begin_range", f_begin_range, METH_O, "Opens a named range."},
    {"_profiler_end_range", f_end_range, METH_O, "Closes a range opened by begin."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_profiler(PyObject* module) { return PyModule_AddFunctions(module, functions) == 0; }

}  // namespace ignis::py

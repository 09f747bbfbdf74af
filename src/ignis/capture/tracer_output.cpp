// The tracer's results: the captured graph handed to the backend, the value
// program that rebuilds Python values from graph outputs and frame inputs,
// and graph breaks (the partial graph, the instruction run eagerly, the
// resume functions).
#include "ignis/autograd/grad_mode.h"
#include "ignis/capture/log.h"
#include "ignis/capture/resume.h"
#include "ignis/capture/tracer_impl.h"
#include "ignis/core/str.h"
#include "ignis/graph/passes/dce.h"
#include "ignis/graph/printer.h"
#include "ignis/python/py_common.h"

namespace ignis::capture {

namespace {


PyObject* py_partial() { return py_import_attr("functools", "partial"); }

PyObject* grad_exit_fn() { return py_import_attr("ignis.autograd.grad_mode", "_grad_exit"); }

// _rebuild_object(cls, attrs): an instance of a user class made inside
// captured code, for the plan to return or pass on (no __init__ runs again).
PyObject* rebuild_object(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyType_Check(args[0]) || !PyDict_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "_rebuild_object(cls, attrs)");
    return nullptr;
  }
  auto* tp = reinterpret_cast<PyTypeObject*>(args[0]);
  PyObject* obj = tp->tp_alloc(tp, 0);
  if (!obj) return nullptr;
  PyObject** dp = _PyObject_GetDictPtr(obj);
  if (!dp) {
    Py_DECREF(obj);
    PyErr_SetString(PyExc_TypeError, "_rebuild_object: the class has no instance dict");
    return nullptr;
  }
  if (!*dp) *dp = PyDict_New();
  if (!*dp || PyDict_Update(*dp, args[1]) < 0) {
    Py_DECREF(obj);
    return nullptr;
  }
  return obj;
}

PyObject* rebuild_object_fn() {
  static PyMethodDef def = {"_rebuild_object", reinterpret_cast<PyCFunction>(
                                                   reinterpret_cast<void*>(rebuild_object)),
                            METH_FASTCALL, "Rebuilds an object made inside captured code."};
  static PyObject* fn = PyCFunction_New(&def, nullptr);
  if (!fn) throw PyErrorSet{};
  return fn;
}

int next_graph_id() {
  static int id = 0;
  return ++id;
}

std::string source_line(const std::string& file, int line) {
  Obj lc = Obj::steal(PyImport_ImportModule("linecache"));
  if (!lc) {
    PyErr_Clear();
    return "";
  }
  Obj s = Obj::steal(PyObject_CallMethod(lc.get(), "getline", "si", file.c_str(), line));
  if (!s) {
    PyErr_Clear();
    return "";
  }
  std::string text = utf8(s.get());
  size_t a = text.find_first_not_of(" \t");
  size_t b = text.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : text.substr(a, b - a + 1);
}

// Tensors among `v` that the graph must return (computed by it; inputs too
// when `inputs`, as Dynamo returns the tensors on the value stack).
void collect_outputs(const VTP& v, std::vector<VTP>& out, std::unordered_set<VT*>& seen,
                     bool inputs = false) {
  if (!v) return;
  switch (v->kind) {
    case VK::Tensor:
      if ((v->reg < 0 || inputs) && !seen.count(v.get())) {
        // Two trackers of one node are one output.
        for (auto& o : out)
          if (o->node.get() == v->node.get()) return;
        seen.insert(v.get());
        out.push_back(v);
      }
      for (auto& [k, e] : v->attrs) collect_outputs(e, out, seen);  // a frame tensor's new .grad
      return;
    case VK::List: case VK::Tuple: case VK::Dict: case VK::Partial:
      for (auto& e : v->items) collect_outputs(e, out, seen);
      for (auto& [k, e] : v->kw) collect_outputs(e, out, seen);
      return;
    case VK::Object: case VK::Module: case VK::LocalObject:
      for (auto& [k, e] : v->attrs) collect_outputs(e, out, seen);
      return;
    case VK::Func:
      if (v->defaults) collect_outputs(v->defaults, out, seen);
      return;
    case VK::Iter:
      if (v->self) collect_outputs(v->self, out, seen);
      for (size_t i = v->index; i < v->items.size(); ++i) collect_outputs(v->items[i], out, seen);
      return;
    case VK::Method: case VK::TensorAttr:
      collect_outputs(v->self, out, seen);
      return;
    case VK::SymInt:  // the tensors its unbacked sizes are read from (note_unbacked_reads)
    case VK::Slice:   // its bounds' tensors
      for (auto& e : v->items) collect_outputs(e, out, seen);
      return;
    default: return;
  }
}

}  // namespace

void Tracer::emit_value(const VTP& v, ValueProgram& prog, const std::vector<VTP>& outputs) {
  // Mutable objects made while tracing keep their identity: built once, then
  // loaded again wherever the value appears a second time.
  bool identity = v->local && (v->kind == VK::List || v->kind == VK::Dict || v->kind == VK::Set ||
                               v->kind == VK::LocalObject);
  if (identity) {
    auto seen = emitted_slots.find(v.get());
    if (seen != emitted_slots.end()) {
      prog.push_back(ValueOp{ValueOp::Load, seen->second});
      return;
    }
  }
  emit_value_once(v, prog, outputs);
  if (identity) {
    int slot = static_cast<int>(emitted_slots.size());
    emitted_slots[v.get()] = slot;
    prog.push_back(ValueOp{ValueOp::Save, slot});
  }
}

void Tracer::emit_value_once(const VTP& v, ValueProgram& prog, const std::vector<VTP>& outputs) {
  auto push_const = [&](PyObject* o) {
    Py_INCREF(o);
    prog.push_back(ValueOp{ValueOp::Const, 0, o});
  };
  switch (v->kind) {
    case VK::Null: prog.push_back(ValueOp{ValueOp::Null}); return;
    case VK::Const: push_const(v->value.get()); return;
    case VK::SymInt:  // an int the frame goes on with: computed from the sizes at run time
      if (emit_sym(shape_env.replace(v->sym), prog, &outputs)) return;
      {  // else its value, guarded
        Obj n = const_value(v);
        push_const(n.get());
        return;
      }
    case VK::Slice: {
      // A slice with a size in it (`y[:n]`, n a mask's count) is built at
      // run time from its parts, each emitted as the value it is; one of
      // constants is a constant.
      bool constant = true;
      for (const VTP& e : v->items) constant = constant && e->kind == VK::Const;
      if (constant) {
        Obj n = const_value(v);
        push_const(n.get());
        return;
      }
      push_const(reinterpret_cast<PyObject*>(&PySlice_Type));
      for (const VTP& e : v->items) emit_value(e, prog, outputs);
      prog.push_back(ValueOp{ValueOp::Call, static_cast<Py_ssize_t>(v->items.size())});
      return;
    }
    case VK::Tensor: {
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i].get() == v.get() || (v->node && outputs[i]->node.get() == v->node.get())) {
          prog.push_back(ValueOp{ValueOp::Out, static_cast<Py_ssize_t>(i)});
          return;
        }
      }
      if (v->reg >= 0) {
        prog.push_back(ValueOp{ValueOp::Reg, v->reg});
        return;
      }
      throw Unsupported{"internal: a tensor missing from the graph outputs"};
    }
    case VK::Set: {
      if (!v->local && v->reg >= 0) {  // the frame's own set (unchanged: its mutators break)
        prog.push_back(ValueOp{ValueOp::Reg, v->reg});
        return;
      }
      push_const(reinterpret_cast<PyObject*>(&PySet_Type));
      Obj t = check(PySequence_Tuple(v->value.get()));
      push_const(t.get());
      prog.push_back(ValueOp{ValueOp::Call, 1});
      return;
    }
    case VK::Partial: {
      if (!v->kw.empty()) throw Unsupported{"a functools.partial with keywords cannot be rebuilt"};
      push_const(py_partial());
      emit_value(v->func, prog, outputs);
      for (auto& e : v->items) emit_value(e, prog, outputs);
      prog.push_back(ValueOp{ValueOp::Call, static_cast<Py_ssize_t>(v->items.size() + 1)});
      return;
    }
    case VK::List:
    case VK::Tuple: {
      if (v->reg >= 0 && !v->local) {
        prog.push_back(ValueOp{ValueOp::Reg, v->reg});
        return;
      }
      if (v->pytype) {
        // Other tuple types (Size, struct sequences) are built from one tuple,
        // Size((a, b)). A namedtuple's class takes its fields as arguments
        // instead; it is built as its __new__ builds it, tuple.__new__(P,
        // (a, b)), a C call: running P's Python __new__ here would be a frame
        // for capture to trace.
        const bool is_namedtuple = PyObject_HasAttrString(v->pytype.get(), "_make");
        if (is_namedtuple) {
          static PyObject* tuple_new =
              check(PyObject_GetAttrString(reinterpret_cast<PyObject*>(&PyTuple_Type), "__new__"))
                  .release();
          push_const(tuple_new);
        }
        push_const(v->pytype.get());
        for (auto& e : v->items) emit_value(e, prog, outputs);
        prog.push_back(ValueOp{ValueOp::Tuple, static_cast<Py_ssize_t>(v->items.size())});
        prog.push_back(ValueOp{ValueOp::Call, is_namedtuple ? 2 : 1});
        return;
      }
      for (auto& e : v->items) emit_value(e, prog, outputs);
      prog.push_back(ValueOp{v->kind == VK::List ? ValueOp::List : ValueOp::Tuple,
                             static_cast<Py_ssize_t>(v->items.size())});
      return;
    }
    case VK::Dict: {
      if (v->reg >= 0 && !v->local) {
        prog.push_back(ValueOp{ValueOp::Reg, v->reg});
        return;
      }
      if (v->pytype) push_const(v->pytype.get());  // OrderedDict(the dict)
      for (size_t i = 0; i < v->keys.size(); ++i) {
        push_const(v->keys[i].get());
        emit_value(v->items[i], prog, outputs);
      }
      prog.push_back(ValueOp{ValueOp::Dict, static_cast<Py_ssize_t>(v->keys.size())});
      if (v->pytype) prog.push_back(ValueOp{ValueOp::Call, 1});
      return;
    }
    case VK::Iter: {
      push_const(PyDict_GetItemString(builtins_dict(), "iter"));
      if (v->value) {
        // range iterator: iter(range(...)[index:])
        Obj rest = check(PySequence_GetSlice(v->value.get(), static_cast<Py_ssize_t>(v->index),
                                             PY_SSIZE_T_MAX));
        push_const(rest.get());
      } else if (v->self) {
        for (size_t i = v->index; i < v->length; ++i)
          emit_value(subscr(v->self, make_const(Obj::steal(PyLong_FromSize_t(i)).get())), prog, outputs);
        prog.push_back(ValueOp{ValueOp::List, static_cast<Py_ssize_t>(v->length - v->index)});
      } else {
        for (size_t i = v->index; i < v->items.size(); ++i) emit_value(v->items[i], prog, outputs);
        prog.push_back(ValueOp{ValueOp::List, static_cast<Py_ssize_t>(v->items.size() - v->index)});
      }
      prog.push_back(ValueOp{ValueOp::Call, 1});
      return;
    }
    case VK::Module:
    case VK::Object:
      if (v->reg >= 0) prog.push_back(ValueOp{ValueOp::Reg, v->reg});
      else push_const(v->value.get());
      return;
    case VK::Func: {
      if (v->value) {
        push_const(v->value.get());
        return;
      }
      // types.FunctionType(code, globals, name, defaults, closure)
      if (v->kwdefaults) throw Unsupported{"a nested function with keyword-only defaults cannot be rebuilt"};
      for (auto& c : v->closure)
        if (!c->value) throw Unsupported{"a nested function closing over this frame's variables cannot be rebuilt"};
      push_const(reinterpret_cast<PyObject*>(&PyFunction_Type));
      push_const(v->code.get());
      push_const(v->globals.get());
      Obj name = check(PyObject_GetAttrString(v->code.get(), "co_name"));
      push_const(name.get());
      if (v->defaults) {
        emit_value(v->defaults, prog, outputs);  // a tuple
      } else {
        push_const(Py_None);
      }
      if (v->closure.empty()) {
        push_const(Py_None);
      } else {
        for (auto& c : v->closure) push_const(c->value.get());
        prog.push_back(ValueOp{ValueOp::Tuple, static_cast<Py_ssize_t>(v->closure.size())});
      }
      prog.push_back(ValueOp{ValueOp::Call, 5});
      return;
    }
    case VK::Method:
      if (v->func) {  // types.MethodType(func, self)
        push_const(reinterpret_cast<PyObject*>(&PyMethod_Type));
        emit_value(v->func, prog, outputs);
        emit_value(v->self, prog, outputs);
        prog.push_back(ValueOp{ValueOp::Call, 2});
        return;
      }
      [[fallthrough]];  // a container's method: getattr(container, name)
    case VK::TensorAttr: {
      push_const(PyDict_GetItemString(builtins_dict(), "getattr"));
      emit_value(v->self, prog, outputs);
      Obj n = check(PyUnicode_FromString(v->attr.c_str()));
      push_const(n.get());
      prog.push_back(ValueOp{ValueOp::Call, 2});
      return;
    }
    case VK::LocalObject: {
      // _rebuild_object(cls, {attributes})
      push_const(rebuild_object_fn());
      push_const(v->pytype.get());
      for (auto& [name, value] : v->attrs) {
        Obj n = check(PyUnicode_FromString(name.c_str()));
        push_const(n.get());
        emit_value(value, prog, outputs);
      }
      prog.push_back(ValueOp{ValueOp::Dict, static_cast<Py_ssize_t>(v->attrs.size())});
      prog.push_back(ValueOp{ValueOp::Call, 2});
      return;
    }
    case VK::GradExit: {
      // functools.partial(_grad_exit, prev): the block's __exit__ for the
      // resume function (tracer_calls.cpp recognizes it when it comes back).
      push_const(py_partial());
      push_const(grad_exit_fn());
      push_const(v->grad_prev ? Py_True : Py_False);
      prog.push_back(ValueOp{ValueOp::Call, 2});
      return;
    }
    case VK::GradMode:
      if (v->value && !v->grad_applied) {
        push_const(v->value.get());
        prog.push_back(ValueOp{ValueOp::Call, 0});
        return;
      }
      break;
    default: break;
  }
  throw Unsupported{std::string("a value capture cannot rebuild after a break")};
}

Obj Tracer::compile_graph(const std::vector<VTP>& outputs) {
  graph::Value::Items outs;
  outs.reserve(outputs.size());
  for (const VTP& o : outputs) outs.push_back(graph::Value(node_of(o)));
  ir->output(graph::Value::tuple(std::move(outs)));
  graph::eliminate_dead_code(*ir);
  // Inputs whose every use was dead go too.
  std::vector<VTP> kept;
  std::vector<Obj> kept_examples;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // A symbol's placeholder stays while the symbol does (torch keeps them:
    // they bind the sizes the tensors' types name).
    bool live_symbol = inputs[i]->kind == VK::SymInt && shape_env.replace(inputs[i]->sym) == inputs[i]->sym;
    if (inputs[i]->node->users().empty() && !live_symbol) {
      ir->erase_node(inputs[i]->node.get());
      inputs[i]->node = nullptr;
      continue;
    }
    kept.push_back(inputs[i]);
    kept_examples.push_back(example_inputs[i]);
  }
  inputs = kept;
  example_inputs = kept_examples;
  // Count what is left to run.
  int calls = 0;
  for (graph::Node* n : ir->nodes())
    calls += n->op() != graph::OpKind::Placeholder && n->op() != graph::OpKind::Output;
  if (calls == 0 && outputs.empty()) return Obj();

  Obj fx = check(PyImport_ImportModule("ignis.fx"));
  Obj root = check(PyDict_New());
  Obj gm = check(PyObject_CallMethod(fx.get(), "GraphModule", "OO", root.get(), pygraph.get()));
  int gid = next_graph_id();
  if (log_on(kLogGraphCode)) {
    Obj code = check(PyObject_GetAttrString(gm.get(), "code"));
    std::string text = str("TRACED GRAPH ", gid, " (", entry_->compile_id, ") ",
                           code_info(fv.code).name, " ", code_info(fv.code).filename, "\n");
    text += graph::tabular(*ir) + "\n";
    text += utf8(code.get());
    log_write(kLogGraphCode, text);
  }
  if (PyObject* sink = event_sink()) {
    Obj cid = check(PyUnicode_FromString(entry_->compile_id.c_str()));
    Obj ev = check(Py_BuildValue("(sOO)", "graph", gm.get(), cid.get()));
    PyList_Append(sink, ev.get());
  }
  Obj ex = check(PyList_New(0));
  for (auto& e : example_inputs) PyList_Append(ex.get(), e.get());
  // Note [The sizes before a graph went dynamic]
  // A dynamic graph made by automatic dynamic replaces, for later calls, the
  // static graph of the first trace (the newest cache entry is tried first,
  // and its guards admit the first sizes too), and its per-size compiles
  // (Note [Compiling a size on its second call], _compile.py) would count
  // the first sizes as new: a call there ran eagerly once more and compiled
  // again (on the GPU, the training step at a GPT's first length: an eager
  // step in the second pass, an 0.8 s compile in the third). The graph
  // carries the first trace's values of its Sym inputs, so that its
  // per-size cache counts them as seen once (their next call compiles).
  {
    Obj key = check(PyList_New(0));
    bool complete = true, any = false;
    for (const VTP& in : inputs) {
      if (in->kind != VK::SymInt) continue;
      auto it = prior_value.find(in->sym);
      if (it == prior_value.end()) {
        complete = false;
        break;
      }
      any = true;
      Obj n = check(PyLong_FromLongLong(it->second));
      PyList_Append(key.get(), n.get());
    }
    if (complete && any) {
      Obj tuple = check(PySequence_Tuple(key.get()));
      Obj keys = check(PyList_New(0));
      PyList_Append(keys.get(), tuple.get());
      if (PyObject_SetAttrString(gm.get(), "_ignis_prior_sizes", keys.get()) < 0) PyErr_Clear();
    }
  }
  Obj compiled;
  {
    // The backend traces the graph from its start, in the grad mode it is
    // entered with (guarded), not the mode of a with-block it breaks in.
    autograd::GradModeGuard entry_mode(grad_enabled_at_start);
    compiled = Obj::steal(PyObject_CallFunctionObjArgs(cfg->backend, gm.get(), ex.get(), nullptr));
  }
  if (!compiled) throw PyErrorSet{};
  if (!PyCallable_Check(compiled.get())) {
    PyErr_Format(PyExc_TypeError, "the backend returned %R, which is not callable", compiled.get());
    throw PyErrorSet{};
  }
  if (graph_enters_autocast) {
    // A run that raises inside a region must not leave autocast on (Note
    // [Autocast blocks in captured graphs]).
    PyObject* wrap = py_import_attr("ignis.amp.autocast_mode", "_leaving_regions_on_error");
    compiled = check(PyObject_CallOneArg(wrap, compiled.get()));
  }
  for (auto& in : inputs) entry_->plan.graph_inputs.push_back(in->reg);
  return compiled;
}

void log_bytecode(const char* what, PyObject* code) {
  if (!log_on(kLogBytecode)) return;
  Obj dis = Obj::steal(PyImport_ImportModule("dis"));
  Obj bc = dis ? Obj::steal(PyObject_CallMethod(dis.get(), "Bytecode", "O", code)) : Obj();
  Obj text = bc ? Obj::steal(PyObject_CallMethod(bc.get(), "dis", nullptr)) : Obj();
  if (!text) {
    PyErr_Clear();
    return;
  }
  auto* co = reinterpret_cast<PyCodeObject*>(code);
  log_write(kLogBytecode, str(what, " ", utf8(co->co_qualname), " (", utf8(co->co_filename), ":",
                              co->co_firstlineno, ")\n", utf8(text.get())));
}

void Tracer::log_break(const std::string& reason, const std::string& file, int line) {
  if (log_on(kLogGraphBreaks)) {
    std::string src = source_line(file, line);
    std::string text = str("Graph break at ", file, ":", line, "\n  Reason: ", reason);
    if (!src.empty()) text += str("\n    ", src);
    log_write(kLogGraphBreaks, text);
  }
  if (PyObject* sink = event_sink()) {
    Obj cid = check(PyUnicode_FromString(entry_->compile_id.c_str()));
    Obj ev = check(Py_BuildValue("(sssiO)", "break", reason.c_str(), file.c_str(), line, cid.get()));
    PyList_Append(sink, ev.get());
  }
}

namespace {
void log_guards(CacheEntry& e) {
  if (log_on(kLogGuards)) {
    std::string text = "GUARDS:";
    for (auto& l : e.guards.describe()) text += "\n  " + l;
    log_write(kLogGuards, text);
  }
  if (PyObject* sink = event_sink()) {
    Obj lines = check(PyList_New(0));
    for (auto& l : e.guards.describe()) {
      Obj s = check(PyUnicode_FromString(l.c_str()));
      PyList_Append(lines.get(), s.get());
    }
    Obj cid = check(PyUnicode_FromString(e.compile_id.c_str()));
    Obj ev = check(Py_BuildValue("(sOO)", "guards", lines.get(), cid.get()));
    PyList_Append(sink, ev.get());
  }
}
}  // namespace

void Tracer::emit_side_effects(ValueProgram& prog, const std::vector<VTP>& outputs) {
  auto push_const = [&](PyObject* o) {
    Py_INCREF(o);
    prog.push_back(ValueOp{ValueOp::Const, 0, o});
  };
  for (auto& w : global_writes) {  // globals[name] = value
    push_const(operator_fn("setitem"));
    push_const(w.globals.get());
    push_const(w.name.get());
    emit_value(w.value, prog, outputs);
    prog.push_back(ValueOp{ValueOp::Call, 3});
    prog.push_back(ValueOp{ValueOp::Pop});
  }
  for (auto& m : mutated) {
    if (m->kind == VK::List) {
      // lst[:] = [new items]
      push_const(operator_fn("setitem"));
      prog.push_back(ValueOp{ValueOp::Reg, m->reg});
      Obj all = check(PySlice_New(nullptr, nullptr, nullptr));
      push_const(all.get());
      for (auto& e : m->items) emit_value(e, prog, outputs);
      prog.push_back(ValueOp{ValueOp::List, static_cast<Py_ssize_t>(m->items.size())});
      prog.push_back(ValueOp{ValueOp::Call, 3});
      prog.push_back(ValueOp{ValueOp::Pop});
    } else if (m->kind == VK::Dict) {
      // d.clear(); d.update({new items})
      Obj clear = check(PyObject_GetAttrString(reinterpret_cast<PyObject*>(&PyDict_Type), "clear"));
      Obj update = check(PyObject_GetAttrString(reinterpret_cast<PyObject*>(&PyDict_Type), "update"));
      push_const(clear.get());
      prog.push_back(ValueOp{ValueOp::Reg, m->reg});
      prog.push_back(ValueOp{ValueOp::Call, 1});
      prog.push_back(ValueOp{ValueOp::Pop});
      push_const(update.get());
      prog.push_back(ValueOp{ValueOp::Reg, m->reg});
      for (size_t i = 0; i < m->keys.size(); ++i) {
        push_const(m->keys[i].get());
        emit_value(m->items[i], prog, outputs);
      }
      prog.push_back(ValueOp{ValueOp::Dict, static_cast<Py_ssize_t>(m->keys.size())});
      prog.push_back(ValueOp{ValueOp::Call, 2});
      prog.push_back(ValueOp{ValueOp::Pop});
    }
    for (auto& [name, v] : m->attrs) {  // object.name = value
      push_const(PyDict_GetItemString(builtins_dict(), "setattr"));
      prog.push_back(ValueOp{ValueOp::Reg, m->reg});
      Obj n = check(PyUnicode_FromString(name.c_str()));
      push_const(n.get());
      emit_value(v, prog, outputs);
      prog.push_back(ValueOp{ValueOp::Call, 3});
      prog.push_back(ValueOp{ValueOp::Pop});
    }
  }
}

void Tracer::finish_return(const VTP& value) {
  std::vector<VTP> outputs;
  std::unordered_set<VT*> seen;
  collect_outputs(value, outputs, seen);
  for (auto& m : mutated) collect_outputs(m, outputs, seen);
  for (auto& w : global_writes) collect_outputs(w.value, outputs, seen);
  if (call_nodes == 0 && outputs.empty() && mutated.empty() && global_writes.empty()) {
    // No tensor work: run the frame's own bytecode from now on (Dynamo skips
    // such frames too).
    entry_->plan.exit.kind = PlanExit::RunOriginal;
    skip_code = true;
    return;
  }
  ValueProgram prog;
  emit_side_effects(prog, outputs);
  emit_value(value, prog, outputs);
  Obj fn = compile_graph(outputs);
  entry_->plan.graph_fn = fn.release();
  entry_->plan.program = std::move(prog);
  entry_->plan.exit.kind = PlanExit::Return;
  finish_shape_guards();
  log_guards(*entry_);
}

void Tracer::finish_run_original(const std::string&) {
  entry_->plan.exit.kind = PlanExit::RunOriginal;
}

bool Tracer::finish_break(TFrame& f, const Instr& in, const std::vector<VTP>& stack,
                          const std::string& reason, const RestartAt* inner) {
  const std::string& log_file = inner ? inner->filename : f.ci->filename;
  int log_line = inner ? inner->lineno : in.line;
  if (&f != root || cfg->fullgraph) return false;
  const CodeInfo& ci = *f.ci;
  size_t operands = 0;
  PlanExit exit;
  switch (in.op) {
    case Opc::Call:
      operands = static_cast<size_t>(in.arg) + 2;
      exit.kind = PlanExit::Call;
      exit.nargs = in.arg;
      if (f.kwnames) exit.kwnames = Obj(f.kwnames).release();
      break;
    case Opc::CallFunctionEx:
      operands = 3 + (in.arg & 1);
      exit.kind = PlanExit::CallEx;
      exit.has_kwargs = in.arg & 1;
      break;
    case Opc::PopJumpIfFalse: case Opc::PopJumpIfTrue: case Opc::PopJumpIfNone:
    case Opc::PopJumpIfNotNone:
      operands = 1;
      exit.kind = PlanExit::Jump;
      exit.jump_if = in.op == Opc::PopJumpIfFalse ? PlanExit::IfFalse
                     : in.op == Opc::PopJumpIfTrue ? PlanExit::IfTrue
                     : in.op == Opc::PopJumpIfNone ? PlanExit::IfNone : PlanExit::IfNotNone;
      break;
    case Opc::StoreAttr:
      operands = 2;
      exit.kind = PlanExit::StoreAttr;
      exit.name = Obj::borrow(in.argval).release();
      break;
    case Opc::StoreSubscr:
      operands = 3;
      exit.kind = PlanExit::StoreSubscr;
      break;
    case Opc::BinarySubscr:
      operands = 2;
      exit.kind = PlanExit::BinarySubscr;
      break;
    default:
      return false;
  }
  if (stack.size() < operands) return false;
  // Inside grad-mode `with` blocks: the graph leaves the block's mode set;
  // the resume function gets the blocks' exits on its stack, and if the
  // instruction itself raises, the plan restores the mode the outermost
  // open block would.
  for (auto& v : stack)
    if (v->kind == VK::AutocastExit) {
      // The graph would end inside the region (Note [Autocast blocks in
      // captured graphs]).
      break_fail_note = "a graph break inside an ignis.autocast block";
      return false;
    }
  int grad_mode_on_error = -1;
  for (auto& v : stack)
    if (v->kind == VK::GradExit) {
      grad_mode_on_error = v->grad_prev;
      break;
    }
  bool in_with = grad_mode_on_error >= 0;
  if (grad_enabled != grad_enabled_at_start && !in_with) {
    break_fail_note = "grad mode changed outside a with block";
    return false;
  }
  size_t idx = f.pc;
  if (idx + 1 >= ci.ins.size()) return false;
  // As Dynamo: a break inside a loop body does not resume (each iteration
  // would compile anew); the frame runs eagerly and its callees are captured.
  for (size_t i = idx; i < ci.ins.size(); ++i) {
    const Instr& j = ci.ins[i];
    if (j.target >= 0 && ci.ins[j.target].offset <= in.offset) {
      break_fail_note = "a graph break inside a loop";
      return false;
    }
  }
  int resume_offset = ci.ins[idx + 1].offset;
  int jump_offset = in.target >= 0 ? ci.ins[in.target].offset : -1;
  std::string why;
  if (!can_resume_at(ci.code, in.offset, &why, in_with) ||
      !can_resume_at(ci.code, resume_offset, &why, in_with) ||
      (exit.kind == PlanExit::Jump && !can_resume_at(ci.code, jump_offset, &why, in_with))) {
    break_fail_note = "cannot resume here: " + why;
    return false;
  }
  // Live locals after the instruction, on either path.
  std::vector<int> live = live_locals_at(ci.code, resume_offset);
  if (exit.kind == PlanExit::Jump) {
    for (int l : live_locals_at(ci.code, jump_offset))
      if (std::find(live.begin(), live.end(), l) == live.end()) live.push_back(l);
    std::sort(live.begin(), live.end());
  }
  std::vector<int> passed;
  std::vector<VTP> local_vals;
  for (int l : live) {
    VTP v = f.locals[l];
    if (!v && l < fv.nargs) {
      v = root_arg(l);
      f.locals[l] = v;
    }
    if (!v) continue;  // unbound here: stays unbound in the resume function
    passed.push_back(l);
    local_vals.push_back(v);
  }
  exit.stack_below = static_cast<int>(stack.size() - operands);
  exit.num_locals = static_cast<int>(passed.size());

  std::vector<VTP> outputs;
  std::unordered_set<VT*> seen;
  try {
    // Dynamo returns a tested tensor from the graph even when it is an input.
    for (size_t i = 0; i < stack.size(); ++i)
      collect_outputs(stack[i], outputs, seen,
                      exit.kind == PlanExit::Jump && i + 1 == stack.size());
    for (auto& l : local_vals) collect_outputs(l, outputs, seen);
    for (auto& m : mutated) collect_outputs(m, outputs, seen);
    for (auto& w : global_writes) collect_outputs(w.value, outputs, seen);
    ValueProgram prog;
    emit_side_effects(prog, outputs);
    for (auto& s : stack) emit_value(s, prog, outputs);
    for (auto& l : local_vals) emit_value(l, prog, outputs);
    entry_->plan.program = std::move(prog);
  } catch (Unsupported& u) {
    break_fail_note = u.reason;
    return false;
  } catch (const sym::DataDependentError& e) {  // a value the resume needs that no run time gives
    break_fail_note = e.what();
    return false;
  }

  // Resume functions.
  ResumeSpec spec;
  spec.code = ci.code;
  spec.target_offset = resume_offset;
  for (int i = 0; i < exit.stack_below; ++i) spec.stack_null.push_back(stack[i]->kind == VK::Null);
  if (exit.kind == PlanExit::Call || exit.kind == PlanExit::CallEx ||
      exit.kind == PlanExit::BinarySubscr)
    spec.stack_null.push_back(false);  // the instruction's result
  spec.live_locals = passed;
  spec.inside_with = in_with;
  exit.resume = make_resume_function(spec, fv.globals, fv.closure);
  if (!exit.resume) throw PyErrorSet{};
  log_bytecode("resume function", PyFunction_GET_CODE(exit.resume));
  if (exit.kind == PlanExit::Jump) {
    spec.target_offset = jump_offset;
    exit.resume_jump = make_resume_function(spec, fv.globals, fv.closure);
    if (!exit.resume_jump) throw PyErrorSet{};
    log_bytecode("resume function", PyFunction_GET_CODE(exit.resume_jump));
  }
  log_break(inner ? reason + "\n  User code traceback:\n" + inner->traceback : reason, log_file,
            log_line);
  Obj fn = call_nodes > 0 || !outputs.empty() ? compile_graph(outputs) : Obj();
  entry_->plan.graph_fn = fn.release();
  exit.grad_mode_on_error = grad_mode_on_error;
  entry_->plan.exit = exit;
  exit.kwnames = exit.name = exit.resume = exit.resume_jump = nullptr;  // owned by the plan now
  finish_shape_guards();
  log_guards(*entry_);
  return true;
}

}  // namespace ignis::capture

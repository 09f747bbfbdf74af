// The tracer's results: the captured graph handed to the backend, the value
// program that rebuilds Python values from graph outputs and frame inputs,
// and graph breaks (the partial graph, the instruction run eagerly, the
// resume functions).
#include "ignis/capture/log.h"
#include "ignis/capture/resume.h"
#include "ignis/capture/tracer_impl.h"
#include "ignis/core/str.h"
#include "ignis/python/py_common.h"

namespace ignis::capture {

namespace {

std::string utf8(PyObject* s) {
  if (!s || !PyUnicode_Check(s)) return "";
  const char* c = PyUnicode_AsUTF8(s);
  return c ? c : "";
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

// Tensors among `v` that the graph must return (computed by it, not inputs).
void collect_outputs(const VTP& v, std::vector<VTP>& out, std::unordered_set<VT*>& seen) {
  if (!v) return;
  switch (v->kind) {
    case VK::Tensor:
      if (v->reg < 0 && !seen.count(v.get())) {
        // Two trackers of one node are one output.
        for (auto& o : out)
          if (o->node.get() == v->node.get()) return;
        seen.insert(v.get());
        out.push_back(v);
      }
      return;
    case VK::List: case VK::Tuple: case VK::Dict:
      for (auto& e : v->items) collect_outputs(e, out, seen);
      return;
    case VK::Iter:
      if (v->self) collect_outputs(v->self, out, seen);
      for (size_t i = v->index; i < v->items.size(); ++i) collect_outputs(v->items[i], out, seen);
      return;
    case VK::Method: case VK::TensorAttr:
      collect_outputs(v->self, out, seen);
      return;
    default: return;
  }
}

}  // namespace

void Tracer::emit_value(const VTP& v, ValueProgram& prog, const std::vector<VTP>& outputs) {
  auto push_const = [&](PyObject* o) {
    Py_INCREF(o);
    prog.push_back(ValueOp{ValueOp::Const, 0, o});
  };
  switch (v->kind) {
    case VK::Null: prog.push_back(ValueOp{ValueOp::Null}); return;
    case VK::Const: push_const(v->value.get()); return;
    case VK::Tensor: {
      if (v->reg >= 0) {
        prog.push_back(ValueOp{ValueOp::Reg, v->reg});
        return;
      }
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i].get() == v.get() || outputs[i]->node.get() == v->node.get()) {
          prog.push_back(ValueOp{ValueOp::Out, static_cast<Py_ssize_t>(i)});
          return;
        }
      }
      throw Unsupported{"internal: a tensor missing from the graph outputs"};
    }
    case VK::List:
    case VK::Tuple: {
      if (v->reg >= 0 && !v->local) {
        prog.push_back(ValueOp{ValueOp::Reg, v->reg});
        return;
      }
      if (v->pytype) {
        push_const(v->pytype.get());
        for (auto& e : v->items) emit_value(e, prog, outputs);
        prog.push_back(ValueOp{ValueOp::Tuple, static_cast<Py_ssize_t>(v->items.size())});
        prog.push_back(ValueOp{ValueOp::Call, 1});
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
      for (size_t i = 0; i < v->keys.size(); ++i) {
        push_const(v->keys[i].get());
        emit_value(v->items[i], prog, outputs);
      }
      prog.push_back(ValueOp{ValueOp::Dict, static_cast<Py_ssize_t>(v->keys.size())});
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
    case VK::Func:
      if (v->value) {
        push_const(v->value.get());
        return;
      }
      throw Unsupported{"a function made inside the captured code cannot be rebuilt after a break"};
    case VK::Method: {
      if (!v->func) {
        emit_value(v->self, prog, outputs);  // getattr(container, name)
        push_const(PyDict_GetItemString(builtins_dict(), "getattr"));
        prog.pop_back();
        prog.pop_back();
        push_const(PyDict_GetItemString(builtins_dict(), "getattr"));
        emit_value(v->self, prog, outputs);
        Obj n = check(PyUnicode_FromString(v->attr.c_str()));
        push_const(n.get());
        prog.push_back(ValueOp{ValueOp::Call, 2});
        return;
      }
      static PyObject* method_type = reinterpret_cast<PyObject*>(&PyMethod_Type);
      push_const(method_type);
      emit_value(v->func, prog, outputs);
      emit_value(v->self, prog, outputs);
      prog.push_back(ValueOp{ValueOp::Call, 2});
      return;
    }
    case VK::TensorAttr: {
      push_const(PyDict_GetItemString(builtins_dict(), "getattr"));
      emit_value(v->self, prog, outputs);
      Obj n = check(PyUnicode_FromString(v->attr.c_str()));
      push_const(n.get());
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
  Obj outs = check(PyTuple_New(static_cast<Py_ssize_t>(outputs.size())));
  for (size_t i = 0; i < outputs.size(); ++i) {
    PyObject* n = node_of(outputs[i]);
    Py_INCREF(n);
    PyTuple_SET_ITEM(outs.get(), i, n);
  }
  check(PyObject_CallMethod(graph.get(), "output", "(O)", outs.get()));
  check(PyObject_CallMethod(graph.get(), "eliminate_dead_code", nullptr));
  // Inputs whose every use was dead go too.
  std::vector<VTP> kept;
  std::vector<Obj> kept_examples;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Obj users = check(PyObject_GetAttrString(inputs[i]->node.get(), "users"));
    if (PyObject_Length(users.get()) == 0) {
      check(PyObject_CallMethod(graph.get(), "erase_node", "O", inputs[i]->node.get()));
      inputs[i]->node = Obj();
      continue;
    }
    kept.push_back(inputs[i]);
    kept_examples.push_back(example_inputs[i]);
  }
  inputs = kept;
  example_inputs = kept_examples;
  // Count what is left to run.
  Obj nodes = check(PyObject_GetAttrString(graph.get(), "nodes"));
  Obj it = check(PyObject_GetIter(nodes.get()));
  int calls = 0;
  while (PyObject* n = PyIter_Next(it.get())) {
    Obj node = Obj::steal(n);
    Obj op = check(PyObject_GetAttrString(n, "op"));
    std::string o = utf8(op.get());
    if (o != "placeholder" && o != "output") ++calls;
  }
  if (PyErr_Occurred()) throw PyErrorSet{};
  if (calls == 0 && outputs.empty()) return Obj();

  Obj fx = check(PyImport_ImportModule("ignis.fx"));
  Obj root = check(PyDict_New());
  Obj gm = check(PyObject_CallMethod(fx.get(), "GraphModule", "OO", root.get(), graph.get()));
  int gid = next_graph_id();
  if (log_on(kLogGraphCode)) {
    Obj tab = Obj::steal(PyObject_CallMethod(graph.get(), "_tabular", nullptr));
    if (!tab) PyErr_Clear();
    Obj code = check(PyObject_GetAttrString(gm.get(), "code"));
    std::string text = str("TRACED GRAPH ", gid, " (", entry_->compile_id, ") ",
                           code_info(fv.code).name, " ", code_info(fv.code).filename, "\n");
    if (tab) text += utf8(tab.get()) + "\n";
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
  Obj compiled = Obj::steal(PyObject_CallFunctionObjArgs(cfg->backend, gm.get(), ex.get(), nullptr));
  if (!compiled) throw PyErrorSet{};
  if (!PyCallable_Check(compiled.get())) {
    PyErr_Format(PyExc_TypeError, "the backend returned %R, which is not callable", compiled.get());
    throw PyErrorSet{};
  }
  for (auto& in : inputs) entry_->plan.graph_inputs.push_back(in->reg);
  return compiled;
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

void Tracer::finish_return(const VTP& value) {
  std::vector<VTP> outputs;
  std::unordered_set<VT*> seen;
  collect_outputs(value, outputs, seen);
  if (call_nodes == 0 && outputs.empty()) {
    // Nothing for a graph to do: run the frame's own bytecode under guards.
    entry_->plan.exit.kind = PlanExit::RunOriginal;
    log_guards(*entry_);
    return;
  }
  ValueProgram prog;
  emit_value(value, prog, outputs);
  Obj fn = compile_graph(outputs);
  entry_->plan.graph_fn = fn.release();
  entry_->plan.program = std::move(prog);
  entry_->plan.exit.kind = PlanExit::Return;
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
    default:
      return false;
  }
  if (stack.size() < operands) return false;
  if (grad_enabled != grad_enabled_at_start) return false;  // inside a grad-mode block
  size_t idx = f.pc;
  if (idx + 1 >= ci.ins.size()) return false;
  int resume_offset = ci.ins[idx + 1].offset;
  int jump_offset = in.target >= 0 ? ci.ins[in.target].offset : -1;
  std::string why;
  if (!can_resume_at(ci.code, in.offset, &why) || !can_resume_at(ci.code, resume_offset, &why) ||
      (exit.kind == PlanExit::Jump && !can_resume_at(ci.code, jump_offset, &why))) {
    log_break(reason + " (cannot resume here: " + why + "; the frame runs eagerly)", log_file, log_line);
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
      v = wrap_input(fv.args[l], guards().local(l, ci.slot_names[l]));
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
    for (auto& s : stack) collect_outputs(s, outputs, seen);
    for (auto& l : local_vals) collect_outputs(l, outputs, seen);
    ValueProgram prog;
    for (auto& s : stack) emit_value(s, prog, outputs);
    for (auto& l : local_vals) emit_value(l, prog, outputs);
    entry_->plan.program = std::move(prog);
  } catch (Unsupported& u) {
    log_break(reason + " (" + u.reason + "; the frame runs eagerly)", log_file, log_line);
    return false;
  }

  // Resume functions.
  ResumeSpec spec;
  spec.code = ci.code;
  spec.target_offset = resume_offset;
  for (int i = 0; i < exit.stack_below; ++i) spec.stack_null.push_back(stack[i]->kind == VK::Null);
  if (exit.kind == PlanExit::Call || exit.kind == PlanExit::CallEx) spec.stack_null.push_back(false);
  spec.live_locals = passed;
  exit.resume = make_resume_function(spec, fv.globals, fv.closure);
  if (!exit.resume) throw PyErrorSet{};
  if (exit.kind == PlanExit::Jump) {
    spec.target_offset = jump_offset;
    exit.resume_jump = make_resume_function(spec, fv.globals, fv.closure);
    if (!exit.resume_jump) throw PyErrorSet{};
  }
  log_break(reason, log_file, log_line);
  Obj fn = call_nodes > 0 || !outputs.empty() ? compile_graph(outputs) : Obj();
  entry_->plan.graph_fn = fn.release();
  entry_->plan.exit = exit;
  exit.kwnames = exit.name = exit.resume = exit.resume_jump = nullptr;  // owned by the plan now
  log_guards(*entry_);
  return true;
}

}  // namespace ignis::capture

// The symbolic bytecode interpreter: decoding, the frame loop and each
// instruction's meaning over variable trackers. Calls, attributes and
// builtins are in tracer_calls.cpp; graph outputs, plans and graph breaks in
// tracer_output.cpp.
//
// Instructions are decoded with `dis` (so opcode numbers, jump targets and
// argument meanings come from the running interpreter, 3.11 or 3.12) and
// interpreted here by name.
#include "ignis/capture/tracer_impl.h"

#include <cstring>

#include "ignis/autocast/autocast_mode.h"
#include "ignis/capture/log.h"
#include "ignis/capture/resume.h"
#include "ignis/core/str.h"
#include "ignis/python/py_common.h"

namespace ignis::capture {

std::string utf8(PyObject* s) {
  if (!s || !PyUnicode_Check(s)) return "";
  const char* c = PyUnicode_AsUTF8(s);
  return c ? c : "";
}

Obj check(PyObject* p) {
  if (!p) throw PyErrorSet{};
  return Obj::steal(p);
}

VTP make_const(PyObject* o) {
  auto v = std::make_shared<VT>(VK::Const);
  v->value = Obj::borrow(o);
  return v;
}

VTP make_null() { return std::make_shared<VT>(VK::Null); }

PyObject* py_import_attr(const char* module, const char* name) {
  static auto& cache = *new std::unordered_map<std::string, PyObject*>();  // never released
  std::string key = std::string(module) + "." + name;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Obj m = check(PyImport_ImportModule(module));
  PyObject* v = PyObject_GetAttrString(m.get(), name);
  if (!v) throw PyErrorSet{};
  cache[key] = v;
  return v;
}

PyObject* operator_fn(const char* name) { return py_import_attr("operator", name); }

PyObject* builtins_dict() { return PyEval_GetBuiltins(); }

PyObject* ignis_module() {
  static PyObject* mod = PyImport_ImportModule("ignis");
  return mod;
}

const char* binary_op_name(const std::string& r) {
  static const std::pair<const char*, const char*> table[] = {
      {"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "truediv"}, {"//", "floordiv"},
      {"%", "mod"}, {"**", "pow"}, {"@", "matmul"}, {"&", "and_"}, {"|", "or_"},
      {"^", "xor"}, {"<<", "lshift"}, {">>", "rshift"}, {"+=", "iadd"}, {"-=", "isub"},
      {"*=", "imul"}, {"/=", "itruediv"}, {"//=", "ifloordiv"}, {"%=", "imod"},
      {"**=", "ipow"}, {"@=", "imatmul"}, {"&=", "iand"}, {"|=", "ior"}, {"^=", "ixor"},
      {"<<=", "ilshift"}, {">>=", "irshift"}};
  for (auto& [sym, name] : table)
    if (r == sym) return name;
  return nullptr;
}

// --- decoding ------------------------------------------------------------------------------
namespace {

Opc opcode_of(const std::string& n) {
  static const std::unordered_map<std::string, Opc> table = {
      {"NOP", Opc::Nop}, {"RESUME", Opc::Nop}, {"PRECALL", Opc::Nop}, {"CACHE", Opc::Nop},
      {"EXTENDED_ARG", Opc::Nop}, {"POP_TOP", Opc::PopTop}, {"PUSH_NULL", Opc::PushNull},
      {"COPY", Opc::Copy}, {"SWAP", Opc::Swap}, {"LOAD_CONST", Opc::LoadConst},
      {"RETURN_VALUE", Opc::ReturnValue}, {"RETURN_CONST", Opc::ReturnConst},
      {"LOAD_FAST", Opc::LoadFast}, {"LOAD_FAST_CHECK", Opc::LoadFast},
      {"LOAD_FAST_AND_CLEAR", Opc::LoadFastAndClear}, {"STORE_FAST", Opc::StoreFast},
      {"DELETE_FAST", Opc::DeleteFast}, {"LOAD_GLOBAL", Opc::LoadGlobal},
      {"LOAD_ATTR", Opc::LoadAttr}, {"LOAD_METHOD", Opc::LoadMethod},
      {"STORE_ATTR", Opc::StoreAttr}, {"LOAD_DEREF", Opc::LoadDeref},
      {"STORE_DEREF", Opc::StoreDeref}, {"LOAD_CLOSURE", Opc::LoadClosure},
      {"MAKE_CELL", Opc::MakeCell}, {"COPY_FREE_VARS", Opc::CopyFreeVars},
      {"KW_NAMES", Opc::KwNames}, {"CALL", Opc::Call}, {"CALL_FUNCTION_EX", Opc::CallFunctionEx},
      {"MAKE_FUNCTION", Opc::MakeFunction}, {"BINARY_OP", Opc::BinaryOp},
      {"UNARY_NEGATIVE", Opc::UnaryNegative}, {"UNARY_POSITIVE", Opc::UnaryPositive},
      {"UNARY_NOT", Opc::UnaryNot}, {"UNARY_INVERT", Opc::UnaryInvert},
      {"COMPARE_OP", Opc::CompareOp}, {"IS_OP", Opc::IsOp}, {"CONTAINS_OP", Opc::ContainsOp},
      {"BINARY_SUBSCR", Opc::BinarySubscr}, {"STORE_SUBSCR", Opc::StoreSubscr},
      {"BINARY_SLICE", Opc::BinarySlice}, {"STORE_SLICE", Opc::StoreSlice},
      {"BUILD_TUPLE", Opc::BuildTuple}, {"BUILD_LIST", Opc::BuildList},
      {"BUILD_MAP", Opc::BuildMap}, {"BUILD_CONST_KEY_MAP", Opc::BuildConstKeyMap},
      {"BUILD_SLICE", Opc::BuildSlice}, {"BUILD_STRING", Opc::BuildString},
      {"FORMAT_VALUE", Opc::FormatValue}, {"LIST_APPEND", Opc::ListAppend},
      {"LIST_EXTEND", Opc::ListExtend}, {"MAP_ADD", Opc::MapAdd}, {"DICT_MERGE", Opc::DictMerge},
      {"DICT_UPDATE", Opc::DictUpdate}, {"CALL_INTRINSIC_1", Opc::CallIntrinsic1},
      {"LIST_TO_TUPLE", Opc::CallIntrinsic1}, {"UNPACK_SEQUENCE", Opc::UnpackSequence},
      {"UNPACK_EX", Opc::UnpackEx}, {"GET_ITER", Opc::GetIter}, {"FOR_ITER", Opc::ForIter},
      {"END_FOR", Opc::EndFor}, {"JUMP_FORWARD", Opc::JumpForward},
      {"JUMP_BACKWARD", Opc::JumpBackward}, {"JUMP_BACKWARD_NO_INTERRUPT", Opc::JumpBackward},
      {"JUMP", Opc::JumpForward}, {"POP_JUMP_IF_FALSE", Opc::PopJumpIfFalse},
      {"POP_JUMP_FORWARD_IF_FALSE", Opc::PopJumpIfFalse},
      {"POP_JUMP_BACKWARD_IF_FALSE", Opc::PopJumpIfFalse},
      {"POP_JUMP_IF_TRUE", Opc::PopJumpIfTrue}, {"POP_JUMP_FORWARD_IF_TRUE", Opc::PopJumpIfTrue},
      {"POP_JUMP_BACKWARD_IF_TRUE", Opc::PopJumpIfTrue},
      {"POP_JUMP_IF_NONE", Opc::PopJumpIfNone}, {"POP_JUMP_FORWARD_IF_NONE", Opc::PopJumpIfNone},
      {"POP_JUMP_BACKWARD_IF_NONE", Opc::PopJumpIfNone},
      {"POP_JUMP_IF_NOT_NONE", Opc::PopJumpIfNotNone},
      {"POP_JUMP_FORWARD_IF_NOT_NONE", Opc::PopJumpIfNotNone},
      {"POP_JUMP_BACKWARD_IF_NOT_NONE", Opc::PopJumpIfNotNone},
      {"JUMP_IF_FALSE_OR_POP", Opc::JumpIfFalseOrPop},
      {"JUMP_IF_TRUE_OR_POP", Opc::JumpIfTrueOrPop}, {"BEFORE_WITH", Opc::BeforeWith},
      {"RETURN_GENERATOR", Opc::ReturnGenerator}, {"YIELD_VALUE", Opc::YieldValue},
      {"BUILD_SET", Opc::BuildSet}, {"SET_ADD", Opc::SetAdd}, {"SET_UPDATE", Opc::SetUpdate},
      {"LOAD_SUPER_ATTR", Opc::LoadSuperAttr}, {"STORE_GLOBAL", Opc::StoreGlobal},
      {"IMPORT_NAME", Opc::ImportName}, {"IMPORT_FROM", Opc::ImportFrom},
      {"GET_YIELD_FROM_ITER", Opc::GetYieldFromIter}, {"SEND", Opc::Send}, {"END_SEND", Opc::EndSend},
  };
  auto it = table.find(n);
  return it == table.end() ? Opc::Unknown : it->second;
}

bool is_jump(Opc op) {
  switch (op) {
    case Opc::JumpForward: case Opc::JumpBackward: case Opc::PopJumpIfFalse:
    case Opc::PopJumpIfTrue: case Opc::PopJumpIfNone: case Opc::PopJumpIfNotNone:
    case Opc::JumpIfFalseOrPop: case Opc::JumpIfTrueOrPop: case Opc::ForIter: case Opc::Send:
      return true;
    default: return false;
  }
}


int int_attr(PyObject* o, const char* name, int dflt) {
  Obj v = check(PyObject_GetAttrString(o, name));
  if (v.get() == Py_None) return dflt;
  return static_cast<int>(PyLong_AsLong(v.get()));
}

}  // namespace

namespace {
// Never destroyed: its Python references must not be released after the
// interpreter has finalized. Entries hold their code object, so a key is
// never a freed address.
std::unordered_map<PyCodeObject*, std::unique_ptr<CodeInfo>>& code_info_cache() {
  static auto* cache = new std::unordered_map<PyCodeObject*, std::unique_ptr<CodeInfo>>();
  return *cache;
}
}  // namespace

void clear_code_info_cache() { code_info_cache().clear(); }

const CodeInfo& code_info(PyCodeObject* code) {
  auto& cache = code_info_cache();
  auto found = cache.find(code);
  if (found != cache.end()) return *found->second;
  auto ci = std::make_unique<CodeInfo>();
  ci->code = code;
  ci->keep.push_back(Obj::borrow(reinterpret_cast<PyObject*>(code)));
  static PyObject* dis = PyImport_ImportModule("dis");
  if (!dis) throw PyErrorSet{};
  Obj it = check(PyObject_CallMethod(dis, "get_instructions", "O", code));
  Obj list = check(PySequence_List(it.get()));
  int line = code->co_firstlineno;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list.get()); ++i) {
    PyObject* o = PyList_GET_ITEM(list.get(), i);
    Instr in;
    Obj opname = check(PyObject_GetAttrString(o, "opname"));
    in.opname = utf8(opname.get());
    in.op = opcode_of(in.opname);
    in.arg = int_attr(o, "arg", 0);
    Obj argval = check(PyObject_GetAttrString(o, "argval"));
    if (in.op == Opc::KwNames) {
      // dis does not resolve KW_NAMES' constant on every version: read it.
      argval = Obj::borrow(PyTuple_GetItem(code->co_consts, in.arg));
      if (!argval) throw PyErrorSet{};
    }
    in.argval = argval.get();
    ci->keep.push_back(argval);
    Obj argrepr = check(PyObject_GetAttrString(o, "argrepr"));
    in.argrepr = utf8(argrepr.get());
    in.offset = int_attr(o, "offset", 0);
    Obj pos = check(PyObject_GetAttrString(o, "positions"));
    if (pos.get() != Py_None) {
      int l = int_attr(pos.get(), "lineno", 0);
      if (l > 0) line = l;
    }
    in.line = line;
    ci->index_of[in.offset] = static_cast<int>(ci->ins.size());
    ci->ins.push_back(std::move(in));
  }
  for (Instr& in : ci->ins) {
    if (is_jump(in.op) && PyLong_Check(in.argval)) {
      auto t = ci->index_of.find(static_cast<int>(PyLong_AsLong(in.argval)));
      if (t != ci->index_of.end()) in.target = t->second;
    }
  }
  ci->nlocalsplus = code->co_nlocalsplus;
  for (int i = 0; i < ci->nlocalsplus; ++i)
    ci->slot_names.push_back(utf8(PyTuple_GET_ITEM(code->co_localsplusnames, i)));
  ci->filename = utf8(code->co_filename);
  ci->name = utf8(code->co_name);
  // Decoding runs Python (dis), so another trace may have decoded the same
  // code meanwhile: keep the first, which may be in use.
  auto [it_, inserted] = cache.emplace(code, std::move(ci));
  (void)inserted;
  return *it_->second;
}

// --- the tracer ----------------------------------------------------------------------------
Tracer::Tracer(const FrameView& f, std::shared_ptr<const CaptureConfig> c,
               std::unordered_set<int> forced)
    : fv(f), cfg(std::move(c)), forced_breaks(std::move(forced)) {
  entry_ = std::make_shared<CacheEntry>();
  entry_->config = cfg;
  PyObject* fx = PyImport_ImportModule("ignis.fx");
  if (!fx) throw PyErrorSet{};
  Obj fxm = Obj::steal(fx);
  pygraph = check(PyObject_CallMethod(fxm.get(), "Graph", nullptr));
  ir = py::graph_ptr(pygraph.get());
  if (!ir) {
    PyErr_SetString(PyExc_TypeError, "ignis.fx.Graph is not a graph of the C++ IR");
    throw PyErrorSet{};
  }
  aot::register_fake_kernel();
  grad_enabled_at_start = grad_enabled = [] {
    Obj r = check(PyObject_CallMethod(ignis_module(), "is_grad_enabled", nullptr));
    return r.get() == Py_True;
  }();
}

Tracer::~Tracer() {
  // Leave autocast as tracing found it: a trace that stopped inside an
  // autocast block never ran its exit.
  while (!autocast_open.empty()) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyObject* r = PyObject_CallMethod(autocast_open.back().get(), "__exit__", "OOO", Py_None,
                                      Py_None, Py_None);
    Py_XDECREF(r);
    PyErr_Clear();
    PyErr_Restore(t, v, tb);
    autocast_open.pop_back();
  }
  // Leave the interpreter's grad mode as tracing found it.
  if (grad_enabled != grad_enabled_at_start) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyObject* C = PyObject_GetAttrString(ignis_module(), "_C");
    if (C) {
      PyObject* r = PyObject_CallMethod(C, "_set_grad_enabled", "O",
                                        grad_enabled_at_start ? Py_True : Py_False);
      Py_XDECREF(r);
      Py_DECREF(C);
    }
    PyErr_Clear();
    PyErr_Restore(t, v, tb);
  }
}

VTP Tracer::make_tuple(std::vector<VTP> items) {
  bool all_const = true;
  for (auto& i : items) all_const &= i->kind == VK::Const;
  if (all_const) {
    Obj t = check(PyTuple_New(static_cast<Py_ssize_t>(items.size())));
    for (size_t i = 0; i < items.size(); ++i) {
      Py_INCREF(items[i]->value.get());
      PyTuple_SET_ITEM(t.get(), i, items[i]->value.get());
    }
    return make_const(t.get());
  }
  auto v = std::make_shared<VT>(VK::Tuple);
  v->items = std::move(items);
  return v;
}

VTP Tracer::make_list(std::vector<VTP> items) {
  auto v = std::make_shared<VT>(VK::List);
  v->items = std::move(items);
  return v;
}

void Tracer::set_grad_mode(bool enabled) {
  if (enabled == grad_enabled) return;
  PyObject* fn = py_import_attr("ignis.autograd.grad_mode", "_set_grad_enabled");
  if (last_grad_node && call_nodes == call_nodes_at_grad_node) {
    // Nothing ran since the previous switch: fold the two (as Dynamo emits
    // only the net change), or drop both when they cancel.
    if (enabled == grad_before_grad_node) {
      ir->erase_node(last_grad_node.get());
      --call_nodes;
      last_grad_node = nullptr;
    } else {
      last_grad_node->set_args({graph::Value(enabled)});
    }
  } else {
    grad_before_grad_node = grad_enabled;
    last_grad_node = graph::NodePtr(ir->call_function(target_of(fn), {graph::Value(enabled)}));
    ++call_nodes;
    call_nodes_at_grad_node = call_nodes;
  }
  Obj C = check(PyObject_GetAttrString(ignis_module(), "_C"));
  check(PyObject_CallMethod(C.get(), "_set_grad_enabled", "O", enabled ? Py_True : Py_False));
  grad_enabled = enabled;
}

// See Note [Autocast blocks in captured graphs].
void Tracer::enter_autocast(PyObject* ctx) {
  Obj device = check(PyObject_GetAttrString(ctx, "device"));
  Obj dtype = check(PyObject_GetAttrString(ctx, "fast_dtype"));
  Obj enabled = check(PyObject_GetAttrString(ctx, "_enabled"));
  Obj cache = check(PyObject_GetAttrString(ctx, "_cache_enabled"));
  PyObject* fn = py_import_attr("ignis.amp.autocast_mode", "_enter_autocast");
  ir->call_function(target_of(fn), {py::py_to_value(device.get()), py::py_to_value(dtype.get()),
                                    graph::Value(enabled.get() == Py_True),
                                    graph::Value(cache.get() == Py_True)});
  ++call_nodes;
  graph_enters_autocast = true;
  check(PyObject_CallMethod(ctx, "__enter__", nullptr));
  autocast_open.push_back(Obj::borrow(ctx));
}

void Tracer::exit_autocast() {
  IGNIS_INTERNAL_ASSERT(!autocast_open.empty(), "capture: an autocast exit with no open region");
  PyObject* fn = py_import_attr("ignis.amp.autocast_mode", "_exit_autocast");
  ir->call_function(target_of(fn), {});
  ++call_nodes;
  Obj ctx = autocast_open.back();
  autocast_open.pop_back();
  check(PyObject_CallMethod(ctx.get(), "__exit__", "OOO", Py_None, Py_None, Py_None));
}

// --- the frame loop ---------------------------------------------------------------------------
namespace {

VTP pop(TFrame& f) {
  if (f.stack.empty()) throw Unsupported{"internal: value stack underflow"};
  VTP v = std::move(f.stack.back());
  f.stack.pop_back();
  return v;
}

std::vector<VTP> popn(TFrame& f, size_t n) {
  if (f.stack.size() < n) throw Unsupported{"internal: value stack underflow"};
  std::vector<VTP> out(f.stack.end() - n, f.stack.end());
  f.stack.resize(f.stack.size() - n);
  return out;
}

bool breakable(Opc op) {
  switch (op) {
    case Opc::Call: case Opc::CallFunctionEx: case Opc::PopJumpIfFalse: case Opc::PopJumpIfTrue:
    case Opc::PopJumpIfNone: case Opc::PopJumpIfNotNone: case Opc::StoreAttr:
    case Opc::StoreSubscr: case Opc::BinarySubscr:
      return true;
    default: return false;
  }
}

std::string current_exception_text() {
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  PyErr_NormalizeException(&t, &v, &tb);
  std::string s = "an exception";
  if (t) {
    s = reinterpret_cast<PyTypeObject*>(t)->tp_name;
    if (v) {
      PyObject* m = PyObject_Str(v);
      if (m) {
        const char* c = PyUnicode_AsUTF8(m);
        if (c && *c) s += std::string(": ") + c;
        Py_DECREF(m);
      }
    }
  }
  Py_XDECREF(t);
  Py_XDECREF(v);
  Py_XDECREF(tb);
  PyErr_Clear();
  return s;
}

}  // namespace

VTP Tracer::run_frame(TFrame& f) {
  const auto& ins = f.ci->ins;
  int64_t steps = 0;
  while (f.pc < ins.size()) {
    const Instr& in = ins[f.pc];
    f.line = in.line;
    if (++steps > 2000000) throw Unsupported{"the traced loop runs too long to unroll"};
    if (&f == root && forced_breaks.count(in.offset)) {
      auto r = forced_reasons.find(in.offset);
      std::string why = r != forced_reasons.end() ? r->second.reason : "graph break in a call";
      if (finish_break(f, in, f.stack, why, r != forced_reasons.end() ? &r->second : nullptr))
        return nullptr;
      throw Unsupported{why};
    }
    if (in.op == Opc::ReturnValue || in.op == Opc::ReturnConst) {
      VTP v = in.op == Opc::ReturnValue ? pop(f) : make_const(in.argval);
      return v;
    }
    std::vector<VTP> snapshot;
    bool may_break = &f == root && breakable(in.op);
    if (may_break) snapshot = f.stack;
    size_t pc_before = f.pc;
    try {
      try {
        step(f, in);
      } catch (PyErrorSet&) {
        // An exception the traced operation raised is a graph break (eager
        // Python raises it again at that point); KeyboardInterrupt and
        // SystemExit are the user's, and stop tracing.
        if (!PyErr_ExceptionMatches(PyExc_Exception)) throw;
        throw Unsupported{current_exception_text()};
      } catch (const sym::DataDependentError& e) {
        // A decision on a data-dependent size (Note [Unbacked symbols]).
        throw Unsupported{e.what(), false, true};
      }
    } catch (Unsupported& u) {
      if (&f != root) throw;  // the caller turns it into a restart at its call
      if (u.needs_frame) break_fail_note = "the call needs its own frame";
      if (may_break && !u.needs_frame && (in.op != Opc::BinarySubscr || u.data_dependent)) {
        f.pc = pc_before;
        if (finish_break(f, in, snapshot, u.reason)) return nullptr;
      }
      throw;
    }
  }
  throw Unsupported{"internal: fell off the end of the bytecode"};
}

void Tracer::step(TFrame& f, const Instr& in) {
  const auto& ins = f.ci->ins;
  auto next = [&] { ++f.pc; };
  auto jump = [&](int target) {
    if (target < 0) throw Unsupported{"internal: unknown jump target"};
    f.pc = static_cast<size_t>(target);
  };
  switch (in.op) {
    case Opc::Nop: next(); return;
    case Opc::PopTop: pop(f); next(); return;
    case Opc::PushNull: f.stack.push_back(make_null()); next(); return;
    case Opc::Copy: {
      if (f.stack.size() < static_cast<size_t>(in.arg)) throw Unsupported{"internal: COPY"};
      f.stack.push_back(f.stack[f.stack.size() - in.arg]);
      next();
      return;
    }
    case Opc::Swap: {
      std::swap(f.stack.back(), f.stack[f.stack.size() - in.arg]);
      next();
      return;
    }
    case Opc::LoadConst: f.stack.push_back(make_const(in.argval)); next(); return;
    case Opc::LoadFast: {
      VTP v = f.locals[in.arg];
      if (!v && &f == root && in.arg < fv.nargs) {
        v = root_arg(in.arg);
        f.locals[in.arg] = v;
      }
      if (!v) throw Unsupported{str("local variable '", f.ci->slot_names[in.arg],
                                    "' is read before it is assigned")};
      f.stack.push_back(v);
      next();
      return;
    }
    case Opc::LoadFastAndClear: {
      VTP v = f.locals[in.arg];
      f.stack.push_back(v ? v : make_null());
      f.locals[in.arg] = nullptr;
      next();
      return;
    }
    case Opc::StoreFast: {
      VTP v = pop(f);
      if (v->kind == VK::Null) v = nullptr;  // 3.12 comprehensions restore unbound locals
      if (v && v->kind == VK::Tensor) rename_node(v, f.ci->slot_names[in.arg]);
      f.locals[in.arg] = v;
      next();
      return;
    }
    case Opc::DeleteFast: f.locals[in.arg] = nullptr; next(); return;
    case Opc::LoadGlobal: {
      if (in.arg & 1) f.stack.push_back(make_null());
      f.stack.push_back(load_global(f, in.argval));
      next();
      return;
    }
    case Opc::LoadAttr:
    case Opc::LoadMethod: {
      VTP obj = pop(f);
      bool method = in.op == Opc::LoadMethod || (PY_VERSION_HEX >= 0x030C0000 && (in.arg & 1));
      VTP a = getattr(obj, in.argval);
      if (method) f.stack.push_back(make_null());
      f.stack.push_back(a);
      next();
      return;
    }
    case Opc::StoreGlobal: {
      VTP v = pop(f);
      bool replaced = false;
      for (auto& w : global_writes) {
        if (w.globals.get() == f.globals.get() &&
            PyUnicode_Compare(w.name.get(), in.argval) == 0) {
          w.value = v;
          replaced = true;
        }
      }
      if (!replaced) global_writes.push_back(GlobalWrite{f.globals, Obj::borrow(in.argval), v});
      next();
      return;
    }
    case Opc::LoadSuperAttr: {  // 3.12: super().name with [super, __class__, self] on the stack
      VTP self = pop(f);
      VTP cls = pop(f);
      pop(f);  // the global `super`
      VTP sup = make_super(f, cls, self);
      VTP a = getattr(sup, in.argval);
      if (in.arg & 1) f.stack.push_back(make_null());
      f.stack.push_back(a);
      next();
      return;
    }
    case Opc::StoreAttr: {
      VTP obj = pop(f);
      VTP value = pop(f);
      std::string name = utf8(in.argval);
      bool frame_object = (obj->kind == VK::Object || obj->kind == VK::Module) && obj->reg >= 0;
      // `p.grad = None` (or a tensor) on a tensor from the frame (zero_grad,
      // an optimizer's step): replayed after the graph as any attribute write.
      bool frame_grad = obj->kind == VK::Tensor && obj->reg >= 0 && obj->value && name == "grad" &&
                        (value->kind == VK::Tensor || (value->kind == VK::Const && value->value.get() == Py_None));
      if (frame_grad) {
        mark_mutated(obj, "a .grad assignment");
      } else if (obj->kind != VK::LocalObject && !frame_object)
        throw Unsupported{str("assignment to attribute '", name, "' of a ",
                              obj->kind == VK::Tensor ? "tensor" : "Python object")};
      if (frame_object) mark_mutated(obj, "attribute assignment");
      bool replaced = false;
      for (auto& [k, v] : obj->attrs)
        if (k == name) {
          v = value;
          replaced = true;
        }
      if (!replaced) obj->attrs.emplace_back(name, value);
      next();
      return;
    }
    case Opc::ReturnGenerator:
      if (!f.yields) throw Unsupported{"a generator frame"};
      f.stack.push_back(make_const(Py_None));
      next();
      return;
    case Opc::YieldValue: {
      if (!f.yields) throw Unsupported{"yield outside an inlined generator"};
      f.yields->push_back(pop(f));
      f.stack.push_back(make_const(Py_None));  // the value sent back in
      next();
      return;
    }
    case Opc::GetYieldFromIter: {
      if (!f.yields) throw Unsupported{"yield from outside an inlined generator"};
      f.stack.push_back(get_iter(pop(f)));
      next();
      return;
    }
    case Opc::Send: {
      // `yield from it` in an inlined generator (run to completion): what
      // `it` yields is yielded here, all at once. The expression's own value
      // (the sub-generator's return value) is not tracked: only the form
      // that drops it (a `yield from` statement) is accepted.
      pop(f);  // the value sent in: None here
      VTP it = f.stack.back();
      if (!f.yields || it->kind != VK::Iter) throw Unsupported{"SEND outside an inlined generator"};
      size_t at = static_cast<size_t>(in.target);
      if (at < ins.size() && ins[at].opname == "END_SEND") ++at;  // 3.12
      if (at >= ins.size() || ins[at].op != Opc::PopTop)
        throw Unsupported{"the value of a yield from expression"};
      while (VTP v = iter_next(it)) f.yields->push_back(v);
      f.stack.back() = make_const(Py_None);  // 3.11: the receiver becomes its return value
      if (ins[in.target].opname == "END_SEND") f.stack.push_back(make_const(Py_None));  // 3.12 keeps both
      jump(in.target);
      return;
    }
    case Opc::EndSend: {  // 3.12: receiver, value -> value
      VTP v = pop(f);
      pop(f);
      f.stack.push_back(v);
      next();
      return;
    }
    case Opc::BuildSet: {
      auto items = popn(f, in.arg);
      auto set = std::make_shared<VT>(VK::Set);
      set->value = check(PySet_New(nullptr));
      for (auto& e : items) {
        Obj c = const_value(e);
        if (!c) throw Unsupported{"a set of values that are not constants"};
        if (PySet_Add(set->value.get(), c.get()) < 0) throw PyErrorSet{};
      }
      f.stack.push_back(set);
      next();
      return;
    }
    case Opc::SetAdd:
    case Opc::SetUpdate: {
      VTP v = pop(f);
      VTP set = f.stack[f.stack.size() - in.arg];
      if (set->kind != VK::Set) throw Unsupported{"internal: SET_ADD"};
      mark_mutated(set, "SET_ADD");  // (see LIST_APPEND)
      std::vector<VTP> items = in.op == Opc::SetAdd ? std::vector<VTP>{v} : unpack(v);
      for (auto& e : items) {
        Obj c = const_value(e);
        if (!c) throw Unsupported{"a set of values that are not constants"};
        if (PySet_Add(set->value.get(), c.get()) < 0) throw PyErrorSet{};
      }
      next();
      return;
    }
    case Opc::ImportName: {
      VTP fromlist = pop(f);
      VTP level = pop(f);
      f.stack.push_back(import_name(f, in.argval, fromlist, level));
      next();
      return;
    }
    case Opc::ImportFrom: f.stack.push_back(import_from(f.stack.back(), in.argval)); next(); return;
    case Opc::MakeCell: {
      auto c = std::make_shared<VT>(VK::Cell);
      VTP v = f.locals[in.arg];
      if (!v && &f == root && in.arg < fv.nargs) {
        v = root_arg(in.arg);
        realize(v);  // a cell's contents are realized (Dynamo's placeholder order)
      }
      c->items.push_back(v);
      f.locals[in.arg] = c;
      next();
      return;
    }
    case Opc::CopyFreeVars: {
      int n = in.arg;
      for (int k = 0; k < n; ++k) {
        int slot = f.ci->nlocalsplus - n + k;
        VTP cell;
        if (&f == root) {
          cell = std::make_shared<VT>(VK::Cell);
          if (!fv.closure || k >= PyTuple_GET_SIZE(fv.closure))
            throw Unsupported{"internal: the frame's closure does not match its code"};
          cell->value = Obj::borrow(PyTuple_GET_ITEM(fv.closure, k));
          cell->reg = guards().closure(k, f.ci->slot_names[slot]);
          cell->local = false;
        } else {
          if (!f.func || static_cast<int>(f.func->closure.size()) != n)
            throw Unsupported{"internal: closure of an inlined function"};
          cell = f.func->closure[k];
        }
        f.locals[slot] = cell;
      }
      next();
      return;
    }
    case Opc::LoadClosure: {
      VTP c = f.locals[in.arg];
      if (!c || c->kind != VK::Cell) throw Unsupported{"internal: LOAD_CLOSURE of a non-cell"};
      f.stack.push_back(c);
      next();
      return;
    }
    case Opc::LoadDeref: {
      VTP c = f.locals[in.arg];
      if (!c || c->kind != VK::Cell) throw Unsupported{"internal: LOAD_DEREF of a non-cell"};
      VTP v = cell_contents(f, c);
      if (!v) throw Unsupported{str("free variable '", f.ci->slot_names[in.arg],
                                    "' is read before it is assigned")};
      f.stack.push_back(v);
      next();
      return;
    }
    case Opc::StoreDeref: {
      VTP c = f.locals[in.arg];
      VTP v = pop(f);
      if (!c || c->kind != VK::Cell || !c->local)
        throw Unsupported{str("assignment to the nonlocal variable '", f.ci->slot_names[in.arg],
                              "' of an enclosing function")};
      c->items.assign(1, v);
      next();
      return;
    }
    case Opc::KwNames: f.kwnames = Obj::borrow(in.argval); next(); return;
    case Opc::Call: {
      size_t nargs = static_cast<size_t>(in.arg);
      std::vector<VTP> args = popn(f, nargs);
      VTP callable = pop(f);
      VTP first = pop(f);
      if (first->kind != VK::Null) {  // method form: [method, self, args...]
        args.insert(args.begin(), callable);
        callable = first;
      }
      std::vector<std::pair<std::string, VTP>> kwargs;
      if (f.kwnames) {
        Py_ssize_t nk = PyTuple_GET_SIZE(f.kwnames.get());
        size_t base = args.size() - static_cast<size_t>(nk);
        for (Py_ssize_t k = 0; k < nk; ++k)
          kwargs.emplace_back(utf8(PyTuple_GET_ITEM(f.kwnames.get(), k)), args[base + k]);
        args.resize(base);
      }
      // kwnames stay set until the call succeeds: a graph break at this CALL
      // passes them to the eager call.
      VTP r = call(callable, std::move(args), std::move(kwargs));
      f.kwnames = Obj();
      f.stack.push_back(r);
      next();
      return;
    }
    case Opc::CallFunctionEx: {
      VTP kw = (in.arg & 1) ? pop(f) : nullptr;
      VTP argv = pop(f);
      VTP callable = pop(f);
      VTP null = pop(f);
      if (null->kind != VK::Null) throw Unsupported{"internal: CALL_FUNCTION_EX layout"};
      std::vector<VTP> args = unpack(argv);
      std::vector<std::pair<std::string, VTP>> kwargs;
      if (kw) {
        if (kw->kind == VK::Dict) {
          for (size_t i = 0; i < kw->keys.size(); ++i)
            kwargs.emplace_back(utf8(kw->keys[i].get()), kw->items[i]);
        } else if (kw->kind == VK::Const && PyDict_Check(kw->value.get())) {
          PyObject *k, *v;
          Py_ssize_t pos = 0;
          while (PyDict_Next(kw->value.get(), &pos, &k, &v)) kwargs.emplace_back(utf8(k), make_const(v));
        } else {
          throw Unsupported{"**kwargs of an unsupported type"};
        }
      }
      f.stack.push_back(call(callable, std::move(args), std::move(kwargs)));
      next();
      return;
    }
    case Opc::MakeFunction: {
      VTP code = pop(f);
      auto fn = std::make_shared<VT>(VK::Func);
      if (in.arg & 0x08) {
        VTP cl = pop(f);
        fn->closure = cl->kind == VK::Tuple ? cl->items : std::vector<VTP>{};
        if (cl->kind != VK::Tuple) throw Unsupported{"internal: closure tuple"};
      }
      if (in.arg & 0x04) pop(f);  // annotations
      if (in.arg & 0x02) fn->kwdefaults = pop(f);
      if (in.arg & 0x01) fn->defaults = pop(f);
      fn->code = code->value;
      fn->globals = f.globals;
      fn->name = Obj::borrow(reinterpret_cast<PyCodeObject*>(code->value.get())->co_qualname);
      f.stack.push_back(fn);
      next();
      return;
    }
    case Opc::BinaryOp: {
      VTP b = pop(f);
      VTP a = pop(f);
      const char* name = binary_op_name(in.argrepr);
      if (!name) throw Unsupported{str("binary operator '", in.argrepr, "'")};
      f.stack.push_back(binary(name, a, b));
      next();
      return;
    }
    case Opc::UnaryNegative: f.stack.push_back(unary("neg", pop(f))); next(); return;
    case Opc::UnaryPositive: f.stack.push_back(unary("pos", pop(f))); next(); return;
    case Opc::UnaryInvert: f.stack.push_back(unary("invert", pop(f))); next(); return;
    case Opc::UnaryNot: {
      VTP a = pop(f);
      f.stack.push_back(make_const(truth(a) ? Py_False : Py_True));
      next();
      return;
    }
    case Opc::CompareOp: {
      VTP b = pop(f);
      VTP a = pop(f);
      f.stack.push_back(compare(utf8(in.argval).c_str(), a, b));
      next();
      return;
    }
    case Opc::IsOp: {
      VTP b = pop(f);
      VTP a = pop(f);
      realize(a);  // as Dynamo's lazy arguments, which `is` realizes
      realize(b);
      bool same;
      if (a == b) same = true;
      else if (a->kind == VK::Tensor && b->kind == VK::Tensor)
        same = a->node && a->node.get() == b->node.get() && a->fake.get() == b->fake.get();
      else if (a->kind == VK::Tensor || b->kind == VK::Tensor) same = false;
      else if ((a->kind == VK::Module || a->kind == VK::Object) &&
               (b->kind == VK::Module || b->kind == VK::Object))
        // Guarded by type, two of them may be one object in one call and two
        // in the next: not something to bake into the entry.
        throw Unsupported{"'is' between two objects from the frame"};
      else if (a->value && b->value) same = a->value.get() == b->value.get();
      else if ((a->kind == VK::Null) != (b->kind == VK::Null)) same = false;
      else if (a->value || b->value) same = false;  // a fresh container is no existing object
      else throw Unsupported{"'is' between values capture cannot identify"};
      if (in.arg) same = !same;
      f.stack.push_back(make_const(same ? Py_True : Py_False));
      next();
      return;
    }
    case Opc::ContainsOp: {
      VTP container = pop(f);
      VTP item = pop(f);
      bool found = false;
      Obj c = const_value(container);
      Obj i = const_value(item);
      if (c && i) {
        int r = PySequence_Contains(c.get(), i.get());
        if (r < 0) throw PyErrorSet{};
        found = r;
      } else if (i && container->kind == VK::Dict) {
        for (auto& k : container->keys) {
          int r = PyObject_RichCompareBool(k.get(), i.get(), Py_EQ);
          if (r < 0) throw PyErrorSet{};
          found |= r;
        }
      } else if (i && (container->kind == VK::List || container->kind == VK::Tuple)) {
        for (auto& e : container->items) {
          Obj ev = const_value(e);
          if (!ev) throw Unsupported{"'in' over a container holding tensors"};
          int r = PyObject_RichCompareBool(ev.get(), i.get(), Py_EQ);
          if (r < 0) throw PyErrorSet{};
          found |= r;
        }
      } else {
        throw Unsupported{"'in' on values capture cannot compare"};
      }
      if (in.arg) found = !found;
      f.stack.push_back(make_const(found ? Py_True : Py_False));
      next();
      return;
    }
    case Opc::BinarySubscr: {
      VTP key = pop(f);
      VTP obj = pop(f);
      f.stack.push_back(subscr(obj, key));
      next();
      return;
    }
    case Opc::StoreSubscr: {
      VTP key = pop(f);
      VTP obj = pop(f);
      VTP value = pop(f);
      store_subscr(obj, key, value);
      next();
      return;
    }
    case Opc::BinarySlice: {
      VTP stop = pop(f);
      VTP start = pop(f);
      VTP obj = pop(f);
      f.stack.push_back(subscr(obj, make_slice({start, stop})));
      next();
      return;
    }
    case Opc::StoreSlice: {
      VTP stop = pop(f);
      VTP start = pop(f);
      VTP obj = pop(f);
      VTP value = pop(f);
      Obj s0 = const_value(start), s1 = const_value(stop);
      if (!s0 || !s1) throw Unsupported{"slice bounds that are not Python numbers"};
      Obj sl = check(PySlice_New(s0.get(), s1.get(), nullptr));
      store_subscr(obj, make_const(sl.get()), value);
      next();
      return;
    }
    case Opc::BuildTuple: f.stack.push_back(make_tuple(popn(f, in.arg))); next(); return;
    case Opc::BuildList: f.stack.push_back(make_list(popn(f, in.arg))); next(); return;
    case Opc::BuildMap: {
      auto kv = popn(f, 2 * static_cast<size_t>(in.arg));
      auto d = std::make_shared<VT>(VK::Dict);
      for (size_t i = 0; i < kv.size(); i += 2) {
        Obj k = const_value(kv[i]);
        if (!k) throw Unsupported{"a dict key that is not a constant"};
        d->keys.push_back(k);
        d->items.push_back(kv[i + 1]);
      }
      f.stack.push_back(d);
      next();
      return;
    }
    case Opc::BuildConstKeyMap: {
      VTP keys = pop(f);
      auto vals = popn(f, in.arg);
      auto d = std::make_shared<VT>(VK::Dict);
      Obj kt = const_value(keys);
      if (!kt || !PyTuple_Check(kt.get())) throw Unsupported{"internal: BUILD_CONST_KEY_MAP"};
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kt.get()); ++i) {
        d->keys.push_back(Obj::borrow(PyTuple_GET_ITEM(kt.get(), i)));
        d->items.push_back(vals[i]);
      }
      f.stack.push_back(d);
      next();
      return;
    }
    case Opc::BuildSlice: {
      f.stack.push_back(make_slice(popn(f, in.arg)));
      next();
      return;
    }
    case Opc::FormatValue: {
      VTP spec = (in.arg & 0x04) ? pop(f) : nullptr;
      VTP v = pop(f);
      Obj val = const_value(v);
      if (!val) throw Unsupported{"formatting a tensor into a string"};
      int conv = in.arg & 0x03;
      if (conv == 1) val = check(PyObject_Str(val.get()));
      else if (conv == 2) val = check(PyObject_Repr(val.get()));
      else if (conv == 3) val = check(PyObject_ASCII(val.get()));
      Obj sp = spec ? const_value(spec) : Obj();
      Obj out = check(PyObject_Format(val.get(), sp ? sp.get() : nullptr));
      f.stack.push_back(make_const(out.get()));
      next();
      return;
    }
    case Opc::BuildString: {
      auto parts = popn(f, in.arg);
      Obj t = check(PyTuple_New(in.arg));
      for (int i = 0; i < in.arg; ++i) {
        Obj s = const_value(parts[i]);
        if (!s) throw Unsupported{"internal: BUILD_STRING"};
        PyTuple_SET_ITEM(t.get(), i, s.release());
      }
      Obj empty = check(PyUnicode_FromString(""));
      Obj s = check(PyUnicode_Join(empty.get(), t.get()));
      f.stack.push_back(make_const(s.get()));
      next();
      return;
    }
    case Opc::ListAppend: {
      VTP v = pop(f);
      VTP l = f.stack[f.stack.size() - in.arg];
      if (l->kind != VK::List) throw Unsupported{"internal: LIST_APPEND"};
      // A list being built by a literal is the frame's own -- but in a
      // resume function (a graph break inside a literal of over 30 items,
      // built by BUILD_LIST 0 and LIST_APPENDs) it arrives as an argument,
      // and its appends must be written back like list.append's: they were
      // lost, and the literal came back with the items before the break.
      mark_mutated(l, "LIST_APPEND");
      l->items.push_back(v);
      next();
      return;
    }
    case Opc::ListExtend: {
      VTP v = pop(f);
      VTP l = f.stack[f.stack.size() - in.arg];
      if (l->kind != VK::List) throw Unsupported{"internal: LIST_EXTEND"};
      mark_mutated(l, "LIST_EXTEND");  // (see LIST_APPEND)
      for (auto& e : unpack(v)) l->items.push_back(e);
      next();
      return;
    }
    case Opc::MapAdd: {
      VTP v = pop(f);
      VTP k = pop(f);
      VTP d = f.stack[f.stack.size() - in.arg];
      Obj kc = const_value(k);
      if (d->kind != VK::Dict || !kc) throw Unsupported{"a dict key that is not a constant"};
      mark_mutated(d, "MAP_ADD");  // (see LIST_APPEND)
      bool replaced = false;
      for (size_t i = 0; i < d->keys.size(); ++i) {
        if (PyObject_RichCompareBool(d->keys[i].get(), kc.get(), Py_EQ) == 1) {
          d->items[i] = v;
          replaced = true;
        }
      }
      if (!replaced) {
        d->keys.push_back(kc);
        d->items.push_back(v);
      }
      next();
      return;
    }
    case Opc::DictMerge:
    case Opc::DictUpdate: {
      VTP v = pop(f);
      VTP d = f.stack[f.stack.size() - in.arg];
      if (d->kind != VK::Dict) throw Unsupported{"internal: DICT_UPDATE"};
      mark_mutated(d, "DICT_UPDATE");  // (see LIST_APPEND)
      if (v->kind == VK::Dict) {
        for (size_t i = 0; i < v->keys.size(); ++i) {
          d->keys.push_back(v->keys[i]);
          d->items.push_back(v->items[i]);
        }
      } else if (v->kind == VK::Const && PyDict_Check(v->value.get())) {
        PyObject *k, *x;
        Py_ssize_t pos = 0;
        while (PyDict_Next(v->value.get(), &pos, &k, &x)) {
          d->keys.push_back(Obj::borrow(k));
          d->items.push_back(make_const(x));
        }
      } else {
        throw Unsupported{"** of a value that is not a dict"};
      }
      next();
      return;
    }
    case Opc::CallIntrinsic1: {
      if (in.argrepr.find("LIST_TO_TUPLE") != std::string::npos || in.opname == "LIST_TO_TUPLE") {
        VTP l = pop(f);
        f.stack.push_back(make_tuple(unpack(l)));
      } else if (in.argrepr.find("UNARY_POSITIVE") != std::string::npos) {
        f.stack.push_back(unary("pos", pop(f)));
      } else {
        throw Unsupported{str("instruction ", in.opname, " ", in.argrepr)};
      }
      next();
      return;
    }
    case Opc::UnpackSequence: {
      VTP v = pop(f);
      auto items = unpack(v);
      if (static_cast<int>(items.size()) != in.arg)
        throw Unsupported{str("unpacking ", items.size(), " values into ", in.arg, " names")};
      for (auto it = items.rbegin(); it != items.rend(); ++it) f.stack.push_back(*it);
      next();
      return;
    }
    case Opc::UnpackEx: {
      VTP v = pop(f);
      auto items = unpack(v);
      size_t before = in.arg & 0xFF, after = in.arg >> 8;
      if (items.size() < before + after) throw Unsupported{"not enough values to unpack"};
      std::vector<VTP> mid(items.begin() + before, items.end() - after);
      for (size_t i = 0; i < after; ++i) f.stack.push_back(items[items.size() - 1 - i]);
      f.stack.push_back(make_list(mid));
      for (size_t i = before; i-- > 0;) f.stack.push_back(items[i]);
      next();
      return;
    }
    case Opc::GetIter: f.stack.push_back(get_iter(pop(f))); next(); return;
    case Opc::ForIter: {
      VTP it = f.stack.back();
      VTP v = iter_next(it);
      if (v) {
        f.stack.push_back(v);
        next();
        return;
      }
      pop(f);
      jump(in.target);
      if (f.pc < ins.size() && ins[f.pc].op == Opc::EndFor) ++f.pc;  // 3.12 skips END_FOR
      return;
    }
    case Opc::EndFor: pop(f); pop(f); next(); return;
    case Opc::JumpForward:
    case Opc::JumpBackward: jump(in.target); return;
    case Opc::PopJumpIfFalse:
    case Opc::PopJumpIfTrue: {
      VTP c = f.stack.back();
      bool t = truth(c);
      pop(f);
      if (t == (in.op == Opc::PopJumpIfTrue)) jump(in.target);
      else next();
      return;
    }
    case Opc::PopJumpIfNone:
    case Opc::PopJumpIfNotNone: {
      VTP c = f.stack.back();
      realize(c);  // `if t is not None` realizes a lazy argument in Dynamo too
      bool is_none = c->kind == VK::Const && c->value.get() == Py_None;
      pop(f);
      if (is_none == (in.op == Opc::PopJumpIfNone)) jump(in.target);
      else next();
      return;
    }
    case Opc::JumpIfFalseOrPop:
    case Opc::JumpIfTrueOrPop: {
      bool t = truth(f.stack.back());
      if (t == (in.op == Opc::JumpIfTrueOrPop)) {
        jump(in.target);
      } else {
        pop(f);
        next();
      }
      return;
    }
    case Opc::BeforeWith: {
      VTP ctx = pop(f);
      if (ctx->kind == VK::Autocast) {
        enter_autocast(ctx->value.get());
        auto exit = std::make_shared<VT>(VK::AutocastExit);
        exit->value = ctx->value;
        f.stack.push_back(exit);
        f.stack.push_back(make_const(ctx->value.get()));  // `as` binds the autocast object
        next();
        return;
      }
      if (ctx->kind != VK::GradMode)
        throw Unsupported{"a 'with' block over a context manager other than ignis.no_grad / "
                          "enable_grad / set_grad_enabled / ignis.autocast"};
      auto exit = std::make_shared<VT>(VK::GradExit);
      exit->grad_prev = ctx->grad_applied ? ctx->grad_prev : grad_enabled;
      if (!ctx->grad_applied) set_grad_mode(ctx->grad_enabled);
      f.stack.push_back(exit);
      f.stack.push_back(make_const(Py_None));
      next();
      return;
    }
    case Opc::ReturnValue:
    case Opc::ReturnConst:
      break;
    case Opc::Unknown:
      break;
  }
  throw Unsupported{str("instruction ", in.opname, " is not supported by capture")};
}

// --- entry ----------------------------------------------------------------------------------
namespace {
// f(), with a decision on a data-dependent size that no break could take
// (Note [Unbacked symbols]) turned into what it is for capture: the frame
// runs eagerly, with the reason, never an exception to the user.
template <class F>
auto data_dependent_as_unsupported(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const sym::DataDependentError& e) {
    throw Unsupported{e.what(), false, true};
  }
}
}  // namespace

void Tracer::run() {
  const CodeInfo& ci = code_info(fv.code);
  TFrame f;
  f.ci = &ci;
  f.locals.assign(ci.nlocalsplus, nullptr);
  f.globals = Obj::borrow(fv.globals);
  f.builtins = Obj::borrow(fv.builtins);
  root = cur = &f;
  guards().check_grad_mode(grad_enabled_at_start);
  // The autocast state decided the dtypes the trace saw (and what AOT
  // records): guard it as global state, as Dynamo does.
  guards().check_autocast_state(autocast::state_key());
  {
    // Factories read the default dtype: guard it as global state (as torch).
    Obj d = check(PyObject_CallMethod(ignis_module(), "get_default_dtype", nullptr));
    guards().check_default_dtype(static_cast<int>(py::dtype_of(d.get())));
  }
  if (ci.code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) {
    finish_run_original("generator and coroutine frames run eagerly");
    return;
  }
  log_bytecode("original", reinterpret_cast<PyObject*>(ci.code));
  VTP ret;
  try {
    ret = data_dependent_as_unsupported([&] { return run_frame(f); });
  } catch (Unsupported& u) {
    fail_line = f.line;
    if (cfg->fullgraph) {
      log_break(u.reason, ci.filename, f.line);
      throw;
    }
    log_break(u.reason + " (" + (break_fail_note.empty() ? "" : break_fail_note + "; ") +
                  "the frame runs eagerly)", ci.filename, f.line);
    finish_run_original(u.reason);
    skip_code = true;
    return;
  }
  if (!ret) return;
  try {
    data_dependent_as_unsupported([&] { finish_return(ret); });
  } catch (Unsupported& u) {  // a returned value capture cannot rebuild
    fail_line = f.line;
    if (cfg->fullgraph) throw;
    log_break(u.reason + " (the frame runs eagerly)", ci.filename, f.line);
    auto fresh = std::make_shared<CacheEntry>();
    fresh->config = cfg;
    entry_ = fresh;  // drop the partial plan
    finish_run_original(u.reason);
    skip_code = true;
  }
}

namespace {
// Sets ignis.compiler.Unsupported (RuntimeError if it cannot be imported).
void raise_fullgraph_error(const std::string& where) {
  PyObject* type = PyExc_RuntimeError;
  try {
    type = py_import_attr("ignis.compiler", "Unsupported");
  } catch (PyErrorSet&) {
    PyErr_Clear();
  }
  PyErr_SetString(type, ("graph break with fullgraph=True: " + where).c_str());
}
}  // namespace

TraceResult trace_frame(const FrameView& f, const std::shared_ptr<const CaptureConfig>& cfg,
                        bool* error) {
  *error = false;
  TraceResult result;
  std::unordered_set<int> forced;
  std::unordered_map<int, RestartAt> reasons;
  for (int attempt = 0; attempt < 64; ++attempt) {
    try {
      Tracer t(f, cfg, forced);
      t.forced_reasons = reasons;
      try {
        t.run();
      } catch (Unsupported& u) {
        // Only fullgraph lets an Unsupported escape run().
        const CodeInfo& ci = code_info(f.code);
        int line = t.fail_line ? t.fail_line : ci.code->co_firstlineno;
        raise_fullgraph_error(str(u.reason, "\n  at ", ci.filename, ":", line, " in ", ci.name));
        *error = true;
        return result;
      }
      result.entry = t.entry();
      result.skip_code = t.skip_code;
      return result;
    } catch (RestartAt& r) {
      if (cfg->fullgraph) {
        raise_fullgraph_error(str(r.reason, "\n  at ", r.filename, ":", r.lineno,
                                  "\n  User code traceback:\n", r.traceback));
        *error = true;
        return result;
      }
      if (forced.count(r.offset)) break;  // no progress: give up on the frame
      forced.insert(r.offset);
      reasons[r.offset] = r;
    } catch (PyErrorSet&) {
      *error = true;
      return result;
    }
  }
  // Could not settle on break points: run the frame as it is.
  auto entry = std::make_shared<CacheEntry>();
  entry->config = cfg;
  entry->plan.exit.kind = PlanExit::RunOriginal;
  result.entry = entry;
  result.skip_code = true;
  return result;
}

}  // namespace ignis::capture

// The PEP 523 frame hook, the per-code cache in co_extra, and the current
// capture config.
//
// Note [Frames the hook does not evaluate]
// On a cache hit (or a fresh compile) the hook runs the entry's plan instead
// of the frame's bytecode, so the frame CPython pushed for the call is never
// evaluated. It was never linked into the thread's frame chain either (the
// evaluator links a frame when it starts running it), so nothing can have
// seen it: no frame object exists for it. Who releases it differs:
//   3.11: _PyEval_Vector clears and pops the frame after the eval function
//         returns, whatever it did; the hook just returns the result.
//   3.12: the evaluator clears and pops the frame itself when it returns, and
//         _PyEval_Vector does nothing afterwards; so the hook must do what
//         CPython's clear_thread_frame does: drop the references the frame
//         holds (localsplus up to stacktop, f_locals, f_funcobj, f_code) and
//         pop it off the thread's data stack. Neither _PyFrame_ClearExceptCode
//         nor _PyThreadState_PopFrame is exported by libpython 3.12, so both
//         are done here from the struct layouts.
// Only frames owned by the thread (FRAME_OWNED_BY_THREAD) are ever released
// this way; generator frames always go to the default evaluator.
#include "ignis/capture/eval_frame.h"

#define Py_BUILD_CORE
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE

#include <algorithm>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "ignis/capture/log.h"
#include "ignis/capture/plan.h"
#include "ignis/capture/tracer.h"
#include "ignis/core/str.h"
#include "ignis/python/py_common.h"

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030D0000
#error "ignis capture supports CPython 3.11 and 3.12"
#endif

namespace ignis::capture {

CaptureConfig::~CaptureConfig() {
  if (!Py_IsInitialized()) return;
  Py_CLEAR(backend);
  Py_CLEAR(dynamic);
}

// --- current config -----------------------------------------------------------

namespace {
thread_local std::shared_ptr<const CaptureConfig> t_config;
thread_local std::string t_compile_id;
}  // namespace

const CaptureConfig* current_config() { return t_config.get(); }
const std::shared_ptr<const CaptureConfig>& current_config_ptr() { return t_config; }
const std::string& current_compile_id() { return t_compile_id; }

CaptureScope::CaptureScope(std::shared_ptr<const CaptureConfig> cfg) : prev_(std::move(t_config)) {
  t_config = std::move(cfg);
}
CaptureScope::~CaptureScope() { t_config = std::move(prev_); }

// --- per-code state (co_extra) ------------------------------------------------

namespace {

struct CodeState {
  enum FileDecision : int8_t { Unknown, Capture, SkipFile };
  FileDecision file = Unknown;
  bool disabled = false;  // ignis.compiler.disable (kept by reset)
  bool skipped = false;   // hook/tracer decision (dropped by reset)
  bool warned = false;    // cache_size_limit warning given
  int frame_id = -1;      // compile id's first part, assigned at the first compile
  int compiles = 0;       // compile id's second part for the next compile
  std::string skip_reason;
  std::vector<std::shared_ptr<CacheEntry>> entries;  // most recently hit first
  FrameDynamicState dynamic;  // automatic dynamic's sizes (dropped by reset)
};

Py_ssize_t g_extra_index = -1;
std::unordered_set<CodeState*>* g_states = nullptr;  // every live CodeState (for reset)
int g_frame_counter = 0;
int g_active_calls = 0;
bool g_hook_installed = false;
_PyFrameEvalFunction g_prev_eval = nullptr;

void free_code_state(void* p) {
  auto* cs = static_cast<CodeState*>(p);
  if (g_states) g_states->erase(cs);
  delete cs;
}

bool ensure_extra_index() {
  if (g_extra_index >= 0) return true;
#if PY_VERSION_HEX >= 0x030C0000
  g_extra_index = PyUnstable_Eval_RequestCodeExtraIndex(free_code_state);
#else
  g_extra_index = _PyEval_RequestCodeExtraIndex(free_code_state);
#endif
  if (g_extra_index < 0) {
    PyErr_Clear();
    return false;
  }
  g_states = new std::unordered_set<CodeState*>();
  return true;
}

// Borrowed; nullptr when the code has none yet (or co_extra is unusable).
CodeState* peek_state(PyCodeObject* code) {
  if (g_extra_index < 0) return nullptr;
  void* p = nullptr;
#if PY_VERSION_HEX >= 0x030C0000
  if (PyUnstable_Code_GetExtra(reinterpret_cast<PyObject*>(code), g_extra_index, &p) < 0) {
#else
  if (_PyCode_GetExtra(reinterpret_cast<PyObject*>(code), g_extra_index, &p) < 0) {
#endif
    PyErr_Clear();
    return nullptr;
  }
  return static_cast<CodeState*>(p);
}

CodeState* get_state(PyCodeObject* code) {
  if (!ensure_extra_index()) return nullptr;
  CodeState* cs = peek_state(code);
  if (cs) return cs;
  cs = new CodeState();
#if PY_VERSION_HEX >= 0x030C0000
  if (PyUnstable_Code_SetExtra(reinterpret_cast<PyObject*>(code), g_extra_index, cs) < 0) {
#else
  if (_PyCode_SetExtra(reinterpret_cast<PyObject*>(code), g_extra_index, cs) < 0) {
#endif
    PyErr_Clear();
    delete cs;
    return nullptr;
  }
  g_states->insert(cs);
  return cs;
}

// --- which files are never captured ---------------------------------------------

struct SkipDirs {
  bool ready = false;
  std::vector<std::string> skip;   // ignis's package dir, the stdlib dirs, skipped libraries
  std::vector<std::string> keep;   // site-packages (inside the stdlib dir)
};

// Installed libraries whose frames are never captured, as torch._dynamo's
// THIRDPARTY_SKIPLIST: ignis calls some of them itself (numpy from tensor
// printing and conversion), and none of them is model code. Other packages
// in site-packages are captured like user code.
constexpr const char* kSkippedLibraries[] = {
    "numpy", "torch", "_pytest", "pytest", "pluggy", "_distutils_hack", "setuptools",
    "pkg_resources", "typing_extensions", "tqdm", "hypothesis", "scipy", "pandas", "sympy",
    "networkx", "six", "packaging", "importlib_metadata", "zipp", "filelock", "fsspec",
    "jinja2", "markupsafe", "triton", "onnx", "tensorflow", "jax", "sklearn", "PIL",
    "matplotlib", "IPython", "ipykernel", "tornado", "zmq", "coverage", "_virtualenv",
};
SkipDirs g_dirs;

std::string utf8(PyObject* s) {
  if (!s || !PyUnicode_Check(s)) return {};
  const char* c = PyUnicode_AsUTF8(s);
  if (!c) {
    PyErr_Clear();
    return {};
  }
  return c;
}

std::string with_slash(std::string d) {
  if (!d.empty() && d.back() != '/') d += '/';
  return d;
}

void init_skip_dirs() {
  g_dirs.ready = true;
  CaptureScope off(nullptr);
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject* name = PyUnicode_FromString("ignis");
  PyObject* mod = name ? PyImport_GetModule(name) : nullptr;
  Py_XDECREF(name);
  if (mod) {
    PyObject* file = PyObject_GetAttrString(mod, "__file__");
    std::string f = utf8(file);
    Py_XDECREF(file);
    size_t slash = f.rfind('/');
    // ignis's own frames, layers' forward included, are never captured as
    // frames (as torch.nn's are not): a compiled layer enters through
    // ignis.compile's wrap_inline, and the tracer inlines layers it meets.
    if (slash != std::string::npos) g_dirs.skip.push_back(f.substr(0, slash + 1));
    Py_DECREF(mod);
  }
  PyErr_Clear();
  PyObject* sysconfig = PyImport_ImportModule("sysconfig");
  PyObject* paths = sysconfig ? PyObject_CallMethod(sysconfig, "get_paths", nullptr) : nullptr;
  if (paths && PyDict_Check(paths)) {
    for (const char* k : {"stdlib", "platstdlib"}) {
      std::string d = utf8(PyDict_GetItemString(paths, k));
      if (!d.empty()) g_dirs.skip.push_back(with_slash(d));
    }
    for (const char* k : {"purelib", "platlib"}) {
      std::string d = utf8(PyDict_GetItemString(paths, k));
      if (d.empty()) continue;
      d = with_slash(d);
      for (const char* lib : kSkippedLibraries) {
        g_dirs.skip.push_back(d + lib + "/");
        g_dirs.skip.push_back(d + lib + ".py");
      }
      g_dirs.keep.push_back(d);
    }
  }
  Py_XDECREF(paths);
  Py_XDECREF(sysconfig);
  PyErr_Clear();
  PyErr_Restore(type, value, tb);
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}

bool is_skipped_file(PyCodeObject* code) {
  if (!g_dirs.ready) init_skip_dirs();
  std::string f = utf8(code->co_filename);
  if (starts_with(f, "<frozen ")) return true;  // frozen stdlib modules
  for (const auto& s : g_dirs.skip)
    if (starts_with(f, s) && (s.back() == '/' || f.size() == s.size())) {
      // The stdlib dir holds site-packages: only listed libraries there.
      bool in_site = false;
      for (const auto& k : g_dirs.keep) in_site |= starts_with(f, k) && k.size() > s.size();
      if (!in_site) return true;
    }
  return false;
}

// --- registers for guard checks ---------------------------------------------------
// One Registers per nesting depth of the hook on this thread, reused, so a
// guard check allocates nothing once warm.
struct RegisterPool {
  std::vector<std::unique_ptr<GuardProgram::Registers>> regs;
  size_t depth = 0;
};
thread_local RegisterPool t_pool;

class PooledRegisters {
 public:
  PooledRegisters() {
    if (t_pool.depth == t_pool.regs.size())
      t_pool.regs.push_back(std::make_unique<GuardProgram::Registers>());
    regs_ = t_pool.regs[t_pool.depth++].get();
  }
  ~PooledRegisters() {
    regs_->reset();
    --t_pool.depth;
  }
  GuardProgram::Registers& get() { return *regs_; }

 private:
  GuardProgram::Registers* regs_;
};

// --- frames -------------------------------------------------------------------------

PyObject* frame_func(_PyInterpreterFrame* frame) {
#if PY_VERSION_HEX >= 0x030C0000
  return frame->f_funcobj;
#else
  return reinterpret_cast<PyObject*>(frame->f_func);
#endif
}

FrameView make_view(_PyInterpreterFrame* frame) {
  FrameView v;
  PyCodeObject* code = frame->f_code;
  v.code = code;
  v.func = frame_func(frame);
  v.globals = frame->f_globals;
  v.builtins = frame->f_builtins;
  v.closure = (v.func && PyFunction_Check(v.func))
                  ? reinterpret_cast<PyFunctionObject*>(v.func)->func_closure
                  : nullptr;
  v.args = frame->localsplus;
  v.nargs = code->co_argcount + code->co_kwonlyargcount + ((code->co_flags & CO_VARARGS) ? 1 : 0) +
            ((code->co_flags & CO_VARKEYWORDS) ? 1 : 0);
  return v;
}

#if PY_VERSION_HEX >= 0x030C0000
// CPython 3.12's _PyThreadState_PopFrame (not exported): the frame is the top
// of the thread's data stack; a chunk whose first frame it is goes back to
// the arena allocator the chunk came from (_PyObject_VirtualAlloc uses the
// object arena allocator, which PyObject_GetArenaAllocator returns).
void pop_thread_frame(PyThreadState* ts, _PyInterpreterFrame* frame) {
  PyObject** base = reinterpret_cast<PyObject**>(frame);
  _PyStackChunk* chunk = ts->datastack_chunk;
  if (base == &chunk->data[0]) {
    _PyStackChunk* previous = chunk->previous;
    ts->datastack_top = &previous->data[previous->top];
    ts->datastack_chunk = previous;
    PyObjectArenaAllocator arena;
    PyObject_GetArenaAllocator(&arena);
    arena.free(arena.ctx, chunk, chunk->size);
    ts->datastack_limit = reinterpret_cast<PyObject**>(reinterpret_cast<char*>(previous) + previous->size);
  } else {
    ts->datastack_top = base;
  }
}
#endif

// Releases a thread-owned frame the hook did not evaluate (see Note [Frames
// the hook does not evaluate]) and passes `result` through.
PyObject* finish_unevaluated(PyThreadState* ts, _PyInterpreterFrame* frame, PyObject* result) {
#if PY_VERSION_HEX >= 0x030C0000
  // Unlinked frames have no frame object (nothing could ask for one).
  if (frame->frame_obj) {
    PyFrameObject* fo = frame->frame_obj;
    frame->frame_obj = nullptr;
    Py_DECREF(fo);
  }
  // Finalizers run by these decrefs may push frames; ours stays allocated
  // below them until the pop.
  PyObject* exc = nullptr;
  if (!result) exc = PyErr_GetRaisedException();
  int top = frame->stacktop;
  frame->stacktop = 0;
  for (int i = 0; i < top; ++i) Py_XDECREF(frame->localsplus[i]);
  Py_XDECREF(frame->f_locals);
  frame->f_locals = nullptr;
  Py_DECREF(frame->f_funcobj);
  Py_DECREF(frame->f_code);
  pop_thread_frame(ts, frame);
  if (exc) PyErr_SetRaisedException(exc);
#else
  (void)ts;
  (void)frame;
#endif
  return result;
}

PyObject* eval_default(PyThreadState* ts, _PyInterpreterFrame* frame, int throwflag) {
  return g_prev_eval ? g_prev_eval(ts, frame, throwflag) : _PyEval_EvalFrameDefault(ts, frame, throwflag);
}

std::string code_location(PyCodeObject* code) {
  return str("'", utf8(code->co_name), "' (", utf8(code->co_filename), ":", code->co_firstlineno, ")");
}

// Why each existing entry rejected this frame, for logs and the limit
// warning: ("0/1", reason) pairs in cache order.
std::vector<std::pair<std::string, std::string>> failure_reasons(
    const CodeState& cs, const FrameView& f, const CaptureConfig* cfg) {
  std::vector<std::pair<std::string, std::string>> out;
  CaptureScope off(nullptr);  // guards' Python and reprs are not captured
  PooledRegisters regs;
  std::vector<std::shared_ptr<CacheEntry>> entries = cs.entries;  // see hook()
  for (const auto& e : entries) {
    std::string why;
    if (e->config && e->config->backend != cfg->backend) {
      why = "___check_current_backend: entry compiled for another backend";
    } else if (e->guards.check(f, regs.get(), &why)) {
      why = "guards pass";
    }
    regs.get().reset();
    out.emplace_back(e->compile_id, why);
  }
  return out;
}

// torch._dynamo's recompiles log: one line per existing entry.
void log_recompile(PyCodeObject* code, const std::vector<std::pair<std::string, std::string>>& reasons) {
  std::string msg = str("Recompiling function ", utf8(code->co_name), " in ", utf8(code->co_filename),
                        ":", code->co_firstlineno, "\n    triggered by the following guard failure(s):");
  for (const auto& r : reasons) msg += str("\n    - ", r.first, ": ", r.second);
  log_write(kLogRecompiles, msg);
}

// Runs `entry` on a frame whose guards passed (registers in `regs`).
// Note [Recursion depth of plans]
// CPython counts Python recursion when the evaluator starts a frame; a frame
// run by its plan never gets there, yet the plan recurses in C (a break's
// call or a resume function calls compiled code again). Unless the plan
// counts itself as a frame, recursion that raises RecursionError eagerly
// overflows the C stack instead. 3.12 keeps the C stack's count apart from
// the Python one (Py_EnterRecursiveCall uses the C count): a plan takes both.
class PlanDepth {
 public:
  explicit PlanDepth(PyThreadState* ts) : ts_(ts) {}
  PlanDepth(const PlanDepth&) = delete;
  PlanDepth& operator=(const PlanDepth&) = delete;
  bool enter() {
#if PY_VERSION_HEX >= 0x030C0000
    if (ts_->py_recursion_remaining <= 0) {
      PyErr_SetString(PyExc_RecursionError, "maximum recursion depth exceeded");
      return false;
    }
    --ts_->py_recursion_remaining;
    py_ = true;
#endif
    if (Py_EnterRecursiveCall("")) return false;
    c_ = true;
    return true;
  }
  ~PlanDepth() {
    if (c_) Py_LeaveRecursiveCall();
#if PY_VERSION_HEX >= 0x030C0000
    if (py_) ++ts_->py_recursion_remaining;
#endif
  }

 private:
  PyThreadState* ts_;
  bool py_ = false;
  bool c_ = false;
};

PyObject* run_entry(PyThreadState* ts, _PyInterpreterFrame* frame, const CacheEntry& entry,
                    const FrameView& f, GuardProgram::Registers& regs) {
  if (entry.plan.exit.kind == PlanExit::RunOriginal) {
    regs.reset();
    return eval_default(ts, frame, 0);
  }
  PyObject* r = nullptr;
  {
    PlanDepth depth(ts);  // see Note [Recursion depth of plans]
    if (depth.enter()) r = run_plan(entry.plan, f, regs);
  }
  regs.reset();
  return finish_unevaluated(ts, frame, r);
}

// Note [One compile at a time]
// Tracing runs Python (dis, guard reprs, the backend), and Python switches
// threads; two threads compiling at once would share the tracer's and this
// file's per-code state mid-update (and overshoot cache_size_limit). As
// Dynamo's compile_lock, compiles are serialized by a recursive lock (a
// backend may call compiled code, which compiles on the same thread), waited
// for with the GIL released. It is held only while deciding and tracing,
// never while user code of the frame runs: that code may wait for another
// thread that needs to compile.
std::recursive_mutex g_compile_mutex;

class CompileLock {
 public:
  CompileLock() {
    if (!g_compile_mutex.try_lock()) {
      waited_ = true;
      Py_BEGIN_ALLOW_THREADS
      g_compile_mutex.lock();
      Py_END_ALLOW_THREADS
    }
  }
  ~CompileLock() { g_compile_mutex.unlock(); }
  CompileLock(const CompileLock&) = delete;
  CompileLock& operator=(const CompileLock&) = delete;
  bool waited() const { return waited_; }

 private:
  bool waited_ = false;
};

// The entry whose guards pass for this frame (moved to the front), or null.
std::shared_ptr<CacheEntry> lookup(CodeState& cs, const FrameView& f, PyObject* backend,
                                   GuardProgram::Registers& regs) {
  // Guard loads and comparisons may call Python (getattr, __eq__): not
  // captured. (Moving the config out and back costs no atomics.)
  CaptureScope off(nullptr);
  auto& entries = cs.entries;
  for (size_t i = 0; i < entries.size(); ++i) {
    // A copy: Python run by a guard (a property, __eq__) may call compiled
    // code or reset() and so change `entries` under us.
    std::shared_ptr<CacheEntry> e = entries[i];
    if (e->config && e->config->backend != backend) continue;
    if (!e->guards.check(f, regs, nullptr)) {
      regs.reset();
      continue;
    }
    if (i && i < entries.size() && entries[i] == e)
      std::rotate(entries.begin(), entries.begin() + i, entries.begin() + i + 1);
    return e;
  }
  return nullptr;
}

// What a miss decided (under the compile lock), acted on once it is released.
struct MissOutcome {
  enum Kind { RunEagerly, Fail, Run, RunChecked } kind = RunEagerly;
  std::shared_ptr<CacheEntry> entry;
};

MissOutcome compile_miss(CodeState& cs, const FrameView& f, const std::shared_ptr<const CaptureConfig>& cfg) {
  PyCodeObject* code = f.code;
  if (cs.disabled || cs.skipped) return {};  // decided by a compile this one waited for
  if (!cs.entries.empty()) {
    // At the limit the code keeps its entries (calls that pass their guards
    // still run them) but never compiles again: misses run eagerly.
    if (static_cast<int>(cs.entries.size()) >= cfg->cache_size_limit) {
      if (!cs.warned) {
        cs.warned = true;
        auto reasons = failure_reasons(cs, f, cfg.get());
        if (log_on(kLogRecompiles)) log_recompile(code, reasons);
        std::string last = reasons.empty() ? "" : reasons[0].first + ": " + reasons[0].second;
        std::string msg = str("ignis.compile hit cache_size_limit (", cfg->cache_size_limit,
                              ")\n   function: ", code_location(code), "\n   last reason: ", last,
                              "\nTo log all recompilation reasons, use IGNIS_LOGS=\"recompiles\".");
        int rc;
        {
          CaptureScope off(nullptr);
          rc = PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 1);
        }
        if (rc < 0) return {MissOutcome::Fail, nullptr};
      }
      return {};
    }
    if (log_on(kLogRecompiles)) log_recompile(code, failure_reasons(cs, f, cfg.get()));
  }

  if (cs.frame_id < 0) cs.frame_id = g_frame_counter++;
  std::string compile_id = str(cs.frame_id, "/", cs.compiles++);
  bool error = false;
  TraceResult tr;
  {
    CaptureScope off(nullptr);
    std::string saved_id = std::move(t_compile_id);
    t_compile_id = compile_id;
    try {
      tr = trace_frame(f, cfg, &error);
    } catch (...) {
      py::set_python_error();
      error = true;
    }
    t_compile_id = std::move(saved_id);
  }
  if (error || PyErr_Occurred()) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_SystemError, "ignis capture: trace_frame failed without an exception");
    return {MissOutcome::Fail, nullptr};
  }
  if (tr.skip_code) {
    cs.skipped = true;
    cs.skip_reason = "rejected by the tracer";
  }
  if (!tr.entry) return {};
  std::shared_ptr<CacheEntry> entry = std::move(tr.entry);
  entry->compile_id = compile_id;
  if (!entry->config) entry->config = cfg;
  cs.entries.insert(cs.entries.begin(), entry);
  return {MissOutcome::RunChecked, std::move(entry)};
}

PyObject* on_miss(PyThreadState* ts, _PyInterpreterFrame* frame, CodeState& cs, const FrameView& f,
                  const std::shared_ptr<const CaptureConfig>& cfg) {
  PooledRegisters regs;
  MissOutcome m;
  {
    CompileLock lock;  // see Note [One compile at a time]
    if (lock.waited()) {
      // Another thread compiled meanwhile: its entry may fit this frame.
      if (auto hit = lookup(cs, f, cfg->backend, regs.get())) m = {MissOutcome::Run, std::move(hit)};
    }
    if (!m.entry) m = compile_miss(cs, f, cfg);
  }
  switch (m.kind) {
    case MissOutcome::RunEagerly:
      return eval_default(ts, frame, 0);
    case MissOutcome::Fail:
      return finish_unevaluated(ts, frame, nullptr);
    case MissOutcome::Run:
      return run_entry(ts, frame, *m.entry, f, regs.get());
    case MissOutcome::RunChecked:
      break;
  }
  bool pass;
  {
    CaptureScope off(nullptr);
    pass = m.entry->guards.check(f, regs.get(), nullptr);
  }
  if (!pass) {
    // Tracing changed what the guards read (or the tracer guarded something
    // it did not see): the frame has not started, so running it eagerly is
    // still exact.
    regs.get().reset();
    return eval_default(ts, frame, 0);
  }
  return run_entry(ts, frame, *m.entry, f, regs.get());
}

// Frames Python's import machinery calls (finders, loaders, import hooks,
// the bodies of modules being imported) run eagerly: they are not the
// program's tensor code, and an import only runs them the first time. Their
// caller is a frame of importlib's frozen bootstrap.
bool called_by_import_machinery(PyThreadState* ts) {
  _PyInterpreterFrame* caller = ts->cframe ? ts->cframe->current_frame : nullptr;
  if (!caller) return false;
  PyObject* file = caller->f_code->co_filename;
  return PyUnicode_Check(file) &&
         (PyUnicode_CompareWithASCIIString(file, "<frozen importlib._bootstrap>") == 0 ||
          PyUnicode_CompareWithASCIIString(file, "<frozen importlib._bootstrap_external>") == 0);
}

PyObject* capture_frame(PyThreadState* ts, _PyInterpreterFrame* frame, int throwflag) {
  const std::shared_ptr<const CaptureConfig>& cfg = t_config;
  if (throwflag || !cfg || frame->owner != FRAME_OWNED_BY_THREAD || frame->f_locals)
    return eval_default(ts, frame, throwflag);
  if (called_by_import_machinery(ts)) return eval_default(ts, frame, throwflag);
  PyCodeObject* code = frame->f_code;
  if (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE))
    return eval_default(ts, frame, throwflag);
  if (!PyFunction_Check(frame_func(frame))) return eval_default(ts, frame, throwflag);
  CodeState* cs = get_state(code);
  if (!cs || cs->disabled || cs->skipped) return eval_default(ts, frame, throwflag);
  if (cs->file == CodeState::Unknown)
    cs->file = is_skipped_file(code) ? CodeState::SkipFile : CodeState::Capture;
  if (cs->file == CodeState::SkipFile) return eval_default(ts, frame, throwflag);

  FrameView f = make_view(frame);
  {
    PooledRegisters regs;
    // Keeps the hit entry alive while its plan runs: the plan's Python may
    // recompile this code or reset the caches.
    std::shared_ptr<CacheEntry> hit = lookup(*cs, f, cfg->backend, regs.get());
    if (hit) return run_entry(ts, frame, *hit, f, regs.get());
  }
  // Keep the config alive across a compile that may change t_config.
  std::shared_ptr<const CaptureConfig> keep = cfg;
  return on_miss(ts, frame, *cs, f, keep);
}

#if PY_VERSION_HEX < 0x030C0000
// Note [C recursion under the hook]
// While an eval function is installed, 3.11 runs every Python call through
// it and so recurses in C once per Python frame (without one, calls between
// Python functions stay in one C loop). 3.11 only counts Python frames, so
// under a raised sys.setrecursionlimit deep recursion would overflow the C
// stack; the hook caps its nesting at 3.12's C recursion limit (3.12 counts
// evaluator entries itself).
constexpr int kMaxHookNesting = 1500;
thread_local int t_hook_nesting = 0;

PyObject* hook(PyThreadState* ts, _PyInterpreterFrame* frame, int throwflag) {
  if (t_hook_nesting >= kMaxHookNesting && frame->owner == FRAME_OWNED_BY_THREAD && !throwflag) {
    PyErr_SetString(PyExc_RecursionError, "maximum recursion depth exceeded");
    return nullptr;  // 3.11's _PyEval_Vector releases the unevaluated frame
  }
  ++t_hook_nesting;
  PyObject* r = capture_frame(ts, frame, throwflag);
  --t_hook_nesting;
  return r;
}
#else
PyObject* hook(PyThreadState* ts, _PyInterpreterFrame* frame, int throwflag) {
  return capture_frame(ts, frame, throwflag);
}
#endif

}  // namespace

// --- public API -------------------------------------------------------------------

void mark_skip(PyCodeObject* code, const std::string& reason) {
  CodeState* cs = get_state(code);
  if (!cs) return;
  cs->skipped = true;
  cs->skip_reason = reason;
}

void mark_disabled(PyCodeObject* code) {
  CodeState* cs = get_state(code);
  if (!cs) return;
  cs->disabled = true;
  cs->skip_reason = "disabled";
}

bool is_skipped(PyCodeObject* code) {
  CodeState* cs = peek_state(code);
  return cs && (cs->disabled || cs->skipped);
}

FrameDynamicState* frame_dynamic_state(PyCodeObject* code) {
  CodeState* cs = get_state(code);
  return cs ? &cs->dynamic : nullptr;
}

void reset_caches() {
  if (!g_states) return;
  // Move every entry out first: destroying entries can free code objects
  // (resume functions) and with them other CodeStates.
  std::vector<std::shared_ptr<CacheEntry>> dead;
  for (CodeState* cs : *g_states) {
    for (auto& e : cs->entries) dead.push_back(std::move(e));
    cs->entries.clear();
    cs->skipped = false;
    cs->warned = false;
    cs->frame_id = -1;
    cs->compiles = 0;
    cs->dynamic.sizes.clear();
    if (!cs->disabled) cs->skip_reason.clear();
  }
  g_frame_counter = 0;
  dead.clear();
}

int cache_entry_count(PyCodeObject* code) {
  CodeState* cs = peek_state(code);
  return cs ? static_cast<int>(cs->entries.size()) : 0;
}

PyObject* describe_cache(PyCodeObject* code) {
  PyObject* out = PyList_New(0);
  CodeState* cs = peek_state(code);
  if (!out || !cs) return out;
  for (const auto& e : cs->entries) {
    std::vector<std::string> lines = e->guards.describe();
    PyObject* l = PyList_New(static_cast<Py_ssize_t>(lines.size()));
    if (!l) {
      Py_DECREF(out);
      return nullptr;
    }
    for (size_t i = 0; i < lines.size(); ++i)
      PyList_SET_ITEM(l, static_cast<Py_ssize_t>(i), PyUnicode_FromString(lines[i].c_str()));
    PyObject* t = Py_BuildValue("(sN)", e->compile_id.c_str(), l);
    if (!t || PyList_Append(out, t) < 0) {
      Py_XDECREF(t);
      Py_DECREF(out);
      return nullptr;
    }
    Py_DECREF(t);
  }
  return out;
}

void enter_compiled_call() {
  if (g_active_calls++ == 0 && !g_hook_installed) {
    PyInterpreterState* interp = PyInterpreterState_Get();
    g_prev_eval = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (g_prev_eval == _PyEval_EvalFrameDefault) g_prev_eval = nullptr;
    _PyInterpreterState_SetEvalFrameFunc(interp, hook);
    g_hook_installed = true;
  }
}

void exit_compiled_call() {
  if (--g_active_calls == 0 && g_hook_installed) {
    PyInterpreterState* interp = PyInterpreterState_Get();
    _PyInterpreterState_SetEvalFrameFunc(interp, g_prev_eval ? g_prev_eval : _PyEval_EvalFrameDefault);
    g_prev_eval = nullptr;
    g_hook_installed = false;
  }
}

bool hook_installed() { return g_hook_installed; }

}  // namespace ignis::capture

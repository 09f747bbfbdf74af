// Internals of the symbolic bytecode interpreter (tracer.cpp, tracer_calls.cpp,
// tracer_output.cpp): variable trackers, decoded instructions and the Tracer.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ignis/aot/fake.h"
#include "ignis/capture/tracer.h"
#include "ignis/graph/graph.h"
#include "ignis/sym/shape_env.h"

namespace ignis::capture {

// --- owned Python references --------------------------------------------------------------
class Obj {
 public:
  Obj() = default;
  static Obj steal(PyObject* p) { Obj o; o.p_ = p; return o; }
  static Obj borrow(PyObject* p) { Py_XINCREF(p); return steal(p); }
  Obj(const Obj& o) : p_(o.p_) { Py_XINCREF(p_); }
  Obj(Obj&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  Obj& operator=(Obj o) { std::swap(p_, o.p_); return *this; }
  ~Obj() { Py_XDECREF(p_); }
  PyObject* get() const { return p_; }
  PyObject* release() { PyObject* r = p_; p_ = nullptr; return r; }
  explicit operator bool() const { return p_ != nullptr; }
 private:
  PyObject* p_ = nullptr;
};

// The UTF-8 text of a str ("" for anything else).
std::string utf8(PyObject* s);

// A Python error is set and must reach the user unchanged.
struct PyErrorSet {};
// Throws PyErrorSet when `p` is null; otherwise an owned reference.
Obj check(PyObject* p);

// A graph break: tracing cannot continue at the current instruction.
struct Unsupported {
  std::string reason;
  // The instruction reads the running frame (zero-argument super(), locals(),
  // sys._getframe()): the plan cannot run it in the frame's place, so there
  // is no graph break here, the frame runs eagerly.
  bool needs_frame = false;
  // The operation's result has a size that depends on the data (a
  // boolean-mask index): a BINARY_SUBSCR breaks the graph only for this
  // reason. Another failure there (an exception the subscript raises while
  // tracing) runs the frame eagerly, so that it raises at the user's line.
  bool data_dependent = false;
};
// Tracing inside an inlined call broke; the root frame restarts and breaks
// at the call instruction `offset` instead.
struct RestartAt {
  int offset;
  std::string reason;
  std::string filename;  // where the inner break happened
  int lineno;
  std::string traceback;  // "File ..., line N, in f" lines, outermost call first
};

// --- decoded bytecode -------------------------------------------------------------------------
enum class Opc : uint8_t {
  Unknown, Nop, PopTop, PushNull, Copy, Swap, LoadConst, ReturnValue, ReturnConst,
  LoadFast, LoadFastAndClear, StoreFast, DeleteFast, LoadGlobal, LoadAttr, LoadMethod,
  StoreAttr, LoadDeref, StoreDeref, LoadClosure, MakeCell, CopyFreeVars, KwNames, Call,
  CallFunctionEx, MakeFunction, BinaryOp, UnaryNegative, UnaryPositive, UnaryNot, UnaryInvert,
  CompareOp, IsOp, ContainsOp, BinarySubscr, StoreSubscr, BinarySlice, StoreSlice, BuildTuple,
  BuildList, BuildMap, BuildConstKeyMap, BuildSlice, BuildString, FormatValue, ListAppend,
  ListExtend, MapAdd, DictMerge, DictUpdate, CallIntrinsic1, UnpackSequence, UnpackEx, GetIter,
  ForIter, EndFor, JumpForward, JumpBackward, PopJumpIfFalse, PopJumpIfTrue, PopJumpIfNone,
  PopJumpIfNotNone, JumpIfFalseOrPop, JumpIfTrueOrPop, BeforeWith, ReturnGenerator,
  YieldValue, BuildSet, SetAdd, SetUpdate, LoadSuperAttr, StoreGlobal, ImportName, ImportFrom,
  GetYieldFromIter, Send, EndSend,
};

struct Instr {
  Opc op = Opc::Unknown;
  std::string opname;
  int arg = 0;
  PyObject* argval = nullptr;  // borrowed from CodeInfo::keep
  std::string argrepr;
  int offset = 0;
  int line = 0;
  int target = -1;             // instruction index of a jump target
};

struct CodeInfo {
  PyCodeObject* code = nullptr;
  std::vector<Instr> ins;
  std::unordered_map<int, int> index_of;  // offset -> instruction index
  std::vector<std::string> slot_names;    // localsplus names
  int nlocalsplus = 0;
  std::vector<Obj> keep;  // argvals
  std::string filename, name;
};
const CodeInfo& code_info(PyCodeObject* code);

// --- variable trackers ---------------------------------------------------------------------
struct VT;
using VTP = std::shared_ptr<VT>;

enum class VK : uint8_t {
  Const,     // an immutable value (numbers, str, None, tuples of those, ignis.Size, range,
             // dtype, device) or an object used by identity (functions, classes, modules
             // of Python, builtins, ops)
  Tensor,
  List,
  Tuple,
  Dict,      // keys are constants (keys), values trackers (items)
  Iter,      // an iterator over `items` from `index`; or over a range (value)
  Func,      // a Python function created while tracing (MAKE_FUNCTION)
  Module,    // an nn.Module instance
  Object,    // another user object (attributes read through its source)
  Method,    // a bound method: self + func
  TensorAttr,// tensor.method, not yet called
  Cell,      // a cell: contents in items[0] (or read from its source)
  Null,      // CPython's NULL stack slot
  GradMode,  // a grad-mode context manager (no_grad(), enable_grad(), set_grad_enabled(b))
  GradExit,  // its bound __exit__
  Set,       // a set of constants (keys) made while tracing
  Partial,   // functools.partial: func, items (args), kw
  LocalObject,  // an instance of a user class made while tracing (pytype, attrs)
  Super,     // super(pytype, self): attribute lookup after pytype in self's MRO
  Autocast,     // an ignis.autocast(...) object made while tracing (value: the object)
  AutocastExit, // its __exit__ inside a traced `with` block (value: the object)
  Slice,     // a slice with a symbolic bound: items = {start, stop, step} (only then; a
             // slice of constants is a Const)
  SymInt,    // a symbolic int (a dynamic size, or arithmetic on sizes): node, sym, hint;
             // no `value` (a use that needs a real int specializes it: const_value)
};

struct VT {
  VK kind;
  Obj value;           // Const/Module/Object/Func(function if real)/Cell(real cell)
  int reg = -1;        // guard register when the value came from the frame
  // Tensor
  graph::NodePtr node; // its graph node (null until a placeholder is needed)
  Obj fake;            // the fake tensor standing for it (aot/fake.h): metadata and device
  bool name_set = false;  // the node was named after a variable already
  // containers
  std::vector<VTP> items;
  std::vector<Obj> keys;       // Dict keys
  Obj pytype;                  // namedtuple / Size class for tuples; nullptr: plain
  bool local = true;           // created while tracing (may be mutated)
  // Iter
  size_t index = 0;
  size_t length = 0;           // Iter over a tensor's first dimension (self)
  // Func
  Obj code, globals, name;
  VTP defaults, kwdefaults;    // Tuple / Dict trackers or nullptr
  std::vector<VTP> closure;    // Cell trackers
  // Method / TensorAttr
  VTP self, func;
  std::string attr;
  // side effects: attribute writes (LocalObject attributes, or pending
  // writes to a frame object), keyword arguments of a Partial
  std::vector<std::pair<std::string, VTP>> attrs;
  std::vector<std::pair<std::string, VTP>> kw;
  bool mutated = false;        // a frame container/object changed: replay after the graph
  // GradMode
  bool grad_enabled = false, grad_prev = false, grad_applied = false;
  // Tensor: symbolic sizes (empty: static shape); a frame input's strides
  // over them and its stride symbols (empty: its placeholder's strides are
  // contiguous over sym_sizes where the fake is contiguous). SymInt: its
  // expression and its value at trace time.
  std::vector<sym::Expr> sym_sizes;
  std::vector<sym::Expr> sym_strides;
  sym::Expr sym;
  int64_t hint = 0;

  explicit VT(VK k) : kind(k) {}
};

VTP make_const(PyObject* o);  // borrowed o
VTP make_null();

// --- the interpreter --------------------------------------------------------------------------
struct TFrame {
  const CodeInfo* ci = nullptr;
  TFrame* parent = nullptr;
  std::vector<VTP> locals;   // localsplus
  std::vector<VTP> stack;
  Obj globals, builtins;
  VTP func;                  // Func tracker for inlined code (closure, globals)
  size_t pc = 0;
  std::vector<VTP>* yields = nullptr;  // an inlined generator: what it yields
  Obj kwnames;               // pending KW_NAMES
  int line = 0;
};

class Tracer {
 public:
  Tracer(const FrameView& f, std::shared_ptr<const CaptureConfig> cfg,
         std::unordered_set<int> forced_breaks);
  ~Tracer();

  // Runs the root frame; fills entry_. Throws RestartAt, PyErrorSet.
  void run();
  std::shared_ptr<CacheEntry> entry() { return entry_; }
  bool skip_code = false;

  // --- tracing state ---
  const FrameView& fv;
  std::shared_ptr<const CaptureConfig> cfg;
  std::shared_ptr<CacheEntry> entry_;
  GuardProgram& guards() { return entry_->guards; }
  std::unordered_set<int> forced_breaks;
  std::unordered_map<int, RestartAt> forced_reasons;

  // The graph being built: an ignis.fx.Graph (what the GraphModule handed to
  // the backend wraps) and its C++ graph, which the tracer builds directly.
  Obj pygraph;
  graph::Graph* ir = nullptr;
  // Each trace has its own fake tensors: inputs become fakes (memoized, so
  // views of one storage stay views of one fake storage), and every
  // operation runs on them under this mode.
  aot::FakeTensorMode fake_mode;
  Obj fake_of(PyObject* real);                  // the fake of a real tensor (new reference)
  std::vector<VTP> inputs;   // tensor inputs with placeholders, in order
  std::vector<Obj> example_inputs;
  std::unordered_map<int, VTP> reg_vt;  // register -> tracker (one per source)
  TFrame* root = nullptr;
  TFrame* cur = nullptr;
  int call_nodes = 0;        // graph nodes created by calls

  // --- values from the frame ---
  VTP wrap_input(PyObject* value, int reg);     // guards + tracker for a sourced value
  VTP root_arg(int i);                          // the root frame's argument i, wrapped
  // Registers whose tensors get placeholders when first used (the root
  // frame's arguments and container items: Dynamo's lazy variables); tensors
  // read through any other source (parameters, globals, attributes) get them
  // when read. This gives Dynamo's placeholder order.
  std::unordered_set<int> lazy_regs;
  void realize(const VTP& v);                   // a root argument's placeholder, now
  VTP load_global(TFrame& f, PyObject* name);
  VTP cell_contents(TFrame& f, const VTP& cell);

  // --- graph ---
  graph::Node* node_of(const VTP& t);           // t's node (makes placeholders)
  VTP call_graph(PyObject* fn, const std::string& method, const std::vector<VTP>& args,
                 const std::vector<std::pair<std::string, VTP>>& kwargs);
  VTP call_graph_out(PyObject* fn, const std::string& method, const std::vector<VTP>& args,
                     const std::vector<std::pair<std::string, VTP>>& kwargs, size_t at);
  // The operation run on the fakes (metadata, autograd's checks); throws
  // Unsupported, naming the call, when it raises.
  Obj run_on_fakes(PyObject* fn, const std::string& method, const std::vector<VTP>& args,
                   const std::vector<std::pair<std::string, VTP>>& kwargs);
  // A tracker as a node argument (nodes, constants, containers of them).
  graph::Value graph_arg(const VTP& v);
  // A tracker as a Python value for the fake run (fake tensors, constants).
  Obj fake_arg(const VTP& v);
  // The call_function target for a Python callable; made once per trace.
  const graph::Target& target_of(PyObject* fn);
  std::unordered_map<PyObject*, std::pair<Obj, graph::Target>> targets;
  // A tensor tracker for `node`, whose value the fake `fake` stands for.
  VTP tensor_result(PyObject* fake, graph::Node* node);
  // The tracker for an op's result computed on fakes (tensors, tuples of
  // tensors through getitem nodes, or a folded constant).
  VTP wrap_result(PyObject* fake_result, graph::Node* node);
  void rename_node(const VTP& t, const std::string& name);

  // --- operations ---
  VTP call(const VTP& fn, std::vector<VTP> args, std::vector<std::pair<std::string, VTP>> kwargs);
  VTP call_function_obj(PyObject* fn, const VTP& fnvt, std::vector<VTP>& args,
                        std::vector<std::pair<std::string, VTP>>& kwargs);
  VTP call_builtin(PyObject* fn, std::vector<VTP>& args,
                   std::vector<std::pair<std::string, VTP>>& kwargs, bool* handled);
  VTP call_method(const VTP& self, const std::string& name, std::vector<VTP>& args,
                  std::vector<std::pair<std::string, VTP>>& kwargs);
  VTP call_tensor_method(const VTP& self, const std::string& name, std::vector<VTP>& args,
                         std::vector<std::pair<std::string, VTP>>& kwargs);
  VTP inline_function(PyObject* code, PyObject* globals, const VTP& fnvt,
                      std::vector<VTP> args, std::vector<std::pair<std::string, VTP>> kwargs);
  VTP call_checkpointed(std::vector<VTP>& args, std::vector<std::pair<std::string, VTP>>& kwargs);
  VTP call_module(const VTP& mod, std::vector<VTP>& args,
                  std::vector<std::pair<std::string, VTP>>& kwargs);
  VTP getattr(const VTP& obj, PyObject* name);
  // `import` inside traced code: modules already in sys.modules, guarded (Note [Imports while tracing]).
  VTP import_name(TFrame& f, PyObject* name, const VTP& fromlist, const VTP& level);
  VTP import_from(const VTP& module, PyObject* name);
  void guard_not_shadowed(const VTP& obj, PyObject* name);  // `name` stays a class attribute / absent
  VTP make_super(TFrame& f, const VTP& cls, const VTP& self);  // nullptrs: zero-argument form
  VTP class_attribute(const VTP& self, PyObject* attr, PyObject* name);  // bind a class attribute
  VTP binary(const char* opname, const VTP& a, const VTP& b);   // operator module name
  VTP unary(const char* opname, const VTP& a);
  VTP compare(const char* op, const VTP& a, const VTP& b);
  VTP subscr(const VTP& obj, const VTP& key);
  void store_subscr(const VTP& obj, const VTP& key, const VTP& value);
  bool truth(const VTP& v);               // throws Unsupported for tensors
  // ignis._check and its family: None when the condition holds (a guard on
  // sizes), Unsupported when it fails or cannot be decided; nullptr when
  // `name` is not one of them or the arguments are not theirs.
  VTP call_check(const std::string& name, const std::vector<VTP>& args,
                 const std::vector<std::pair<std::string, VTP>>& kwargs);
  // ... a condition on a data-dependent count, as a node checking it when
  // the graph runs (Note [Runtime checks of data-dependent counts]).
  void runtime_check(const std::string& name, const std::vector<VTP>& args, const VTP& cond);
  std::string count_meaning(const sym::Expr& u) const;
  void runtime_check_relation(const std::string& name, const sym::Expr& rel,
                              const std::string& relation, const std::string& error,
                              const std::string& where);
  Py_ssize_t module_length(const VTP& m); // len() of a container module, guarded
  VTP get_iter(const VTP& v);
  VTP iter_next(const VTP& it);           // nullptr when exhausted
  std::vector<VTP> unpack(const VTP& v);  // throws Unsupported when unknown length
  VTP make_tuple(std::vector<VTP> items);
  VTP make_list(std::vector<VTP> items);
  void set_grad_mode(bool enabled);
  // Note [Autocast blocks in captured graphs]
  // `with ignis.autocast(...)` becomes _enter_autocast(device, dtype,
  // enabled, cache_enabled) and _exit_autocast() nodes around the block's
  // ops, as Dynamo records them; the tracer also enters the region for real,
  // so the fakes get the dtypes autocast gives. Backends that run the graph
  // (eager) call the two functions; AOT's trace runs them too, so the casts
  // autocast makes are recorded as ops and the traced graphs need no state.
  // A graph break inside the block is refused (the frame runs eagerly): the
  // graph would end inside the region. A backend's callable for such a graph
  // is wrapped so that a run raising inside a region exits it.
  void enter_autocast(PyObject* ctx);
  void exit_autocast();
  std::vector<Obj> autocast_open;  // regions entered for real, innermost last
  bool graph_enters_autocast = false;  // the graph holds _enter_autocast nodes
  Obj const_value(const VTP& v);          // Python value of a constant-like tracker or null

  // --- interpretation ---
  VTP run_frame(TFrame& f);               // returns the frame's return value
  void step(TFrame& f, const Instr& in);

  // --- output (tracer_output.cpp) ---
  void finish_return(const VTP& value);
  // `inner`: the break happened in a call inlined at `in` (log its location).
  bool finish_break(TFrame& f, const Instr& in, const std::vector<VTP>& stack,
                    const std::string& reason, const RestartAt* inner = nullptr);
  void finish_run_original(const std::string& reason);
  Obj compile_graph(const std::vector<VTP>& outputs);
  void emit_value(const VTP& v, ValueProgram& prog, const std::vector<VTP>& outputs);
  // Objects made while tracing, already built by the program being emitted:
  // a second mention loads the same object (a list returned twice is one list).
  std::unordered_map<VT*, int> emitted_slots;
  void emit_value_once(const VTP& v, ValueProgram& prog, const std::vector<VTP>& outputs);
  void log_break(const std::string& reason, const std::string& file, int line);

  // Frame containers/objects changed while tracing (replayed by the plan).
  std::vector<VTP> mutated;
  // `global name = value` while tracing: (globals dict, name, value), replayed too.
  struct GlobalWrite {
    Obj globals, name;
    VTP value;
  };
  std::vector<GlobalWrite> global_writes;
  void mark_mutated(const VTP& v, const char* what);
  void emit_side_effects(ValueProgram& prog, const std::vector<VTP>& outputs);
  std::string break_fail_note;  // why finish_break declined (for the log)
  int fail_line = 0;            // the root frame's line when tracing stopped

  bool grad_enabled_at_start = true;
  bool grad_enabled = true;
  // The last _set_grad_enabled node, the mode before it, and call_nodes right
  // after it: a switch with no op since folds into it.
  graph::NodePtr last_grad_node;
  bool grad_before_grad_node = true;
  int call_nodes_at_grad_node = -1;
  int inline_depth = 0;

  // --- dynamic shapes (tracer_dynamic.cpp; docs/dynamic_shapes.md) ---
  sym::ShapeEnv shape_env;
  std::unordered_map<sym::Expr, int> symbol_reg;   // symbol -> register of its size
  std::unordered_map<sym::Expr, VTP> symbol_vt;    // symbol -> its placeholder's tracker
  std::unordered_map<std::string, int> size_reg;   // "L['x'].size()[0]" -> register
  // A symbol's value in this code's first trace, where automatic dynamic
  // made it (Note [The sizes before a graph went dynamic]).
  std::unordered_map<sym::Expr, int64_t> prior_value;
  bool has_symbols() const { return !shape_env.symbols().empty(); }
  // Which dims of a frame tensor are symbolic (config, marks, frame state);
  // gives the tracker its symbolic sizes and the guard spec its dynamic dims.
  void make_dynamic(const VTP& v, PyObject* tensor, int reg, TensorGuardSpec& spec);
  // An int read from the frame that automatic dynamic (or dynamic=True) makes
  // a symbol: a SymInt tracker with its own placeholder; nullptr to keep it a
  // constant (guarded by value).
  VTP dynamic_int(PyObject* value, int reg);
  graph::Node* lift_int(const VTP& t);  // its placeholder, made at its first use
  // The size registers of the symbols make_dynamic made for tensor `reg`.
  void bind_sizes(int reg);
  struct PendingSize {
    std::string source;
    int dim;
    sym::Expr sym;
    bool is_new;  // a new symbol (else duck-sized to an existing one)
    bool stride = false;  // a stride symbol (x.stride()[dim]), not a size
  };
  // Strides of frame tensors that are products with a stride symbol (the
  // dims after it in the layout): their registers and values, for the shape
  // guards (Note [Stride symbols]).
  struct StrideProduct {
    int reg;
    sym::Expr expr;
    std::string source;
  };
  std::vector<std::pair<PendingSize, sym::Expr>> pending_stride_products;
  std::vector<StrideProduct> stride_products;
  // The stride symbols made so far: a Python int read from a tensor's layout
  // (x.stride(), x.is_contiguous()) pins them all.
  std::vector<sym::Expr> stride_symbols;
  // The strides of frame tensors' size-1 dims, which the tensor guards do
  // not check (Note [Strides of size-1 dims]): x.stride() pins them.
  struct UnitStride {
    int reg, dim;
    int64_t value;
    std::string source;
  };
  std::vector<UnitStride> unit_strides;
  // Before a tensor method that reads a layout (`what`: stride,
  // is_contiguous, ...): the stride symbols, and for x.stride() the size-1
  // dims' strides, pinned.
  void pin_layout(const std::string& what);
  std::vector<PendingSize> pending_sizes;
  // The symbolic sizes of a tensor tracker with replacements applied
  // (constants from the fake when static).
  std::vector<sym::Expr> sizes_of(const VTP& t);
  bool is_symbolic(const VTP& t);
  // A tracker for the int `e` (a constant, or a SymInt with a graph node:
  // the symbol's placeholder, else `fallback` run to make one).
  VTP sym_int(sym::Expr e, const VTP& tensor, int64_t dim);
  // The SymInt tracker of `n`, a node just recorded that computes `e`.
  VTP sym_value_of(graph::Node* n, sym::Expr e);
  VTP size_of(const VTP& t, int64_t dim);       // x.size(d), x.shape[d]
  VTP shape_of(const VTP& t);                   // x.shape, x.size(): an ignis.Size tracker
  VTP numel_of(const VTP& t);
  // Arithmetic and comparisons with a SymInt operand; nullptr when the
  // operation is not one on ints (the caller specializes).
  VTP sym_binary(const char* name, const VTP& a, const VTP& b);
  // A comparison on an unbacked size that its range leaves open gives a
  // SymInt tracker holding the comparison (torch's SymBool, no node): a
  // branch on it breaks the graph at the jump (truth()).
  VTP sym_compare(const char* name, const VTP& a, const VTP& b);
  // min()/max() of ints with a SymInt among them; nullptr otherwise.
  VTP sym_minmax(bool is_max, const std::vector<VTP>& args);
  int64_t specialize(const VTP& v, const std::string& why);
  // Placeholders for the symbols of a tensor input, before its own.
  void lift_symbols(const VTP& t);
  // After a call recorded at `node` with results `result`: the outputs'
  // symbolic sizes by the op's rule, or the inputs specialized.
  void propagate_shapes(PyObject* fn, const std::string& method, const std::vector<VTP>& args,
                        const std::vector<std::pair<std::string, VTP>>& kwargs, const VTP& result);
  // The shape guards, once tracing is over (guards.h check_shapes).
  void finish_shape_guards();
  // slice(start, stop, step) from trackers: a Slice tracker when a bound is a
  // SymInt, else a constant slice (throws Unsupported for other bounds).
  VTP make_slice(std::vector<VTP> parts);
  // Appends ops computing the int `e` from the size registers (Python's
  // operators on the symbols' values); false for an expression it cannot
  // spell (a comparison), with nothing appended.
  bool emit_sym(sym::Expr e, ValueProgram& prog, const std::vector<VTP>* outputs = nullptr);
  std::string user_location();

  // --- data-dependent sizes (tracer_unbacked.cpp) ---
  // x[mask], masked_select, nonzero, where(cond) recorded with an unbacked
  // size; nullptr when the call is none of them (or the config keeps them as
  // graph breaks). `name`: the op, Tensor method or "getitem".
  VTP call_unbacked(PyObject* fn, const std::string& name, bool method, const std::vector<VTP>& args,
                    const std::vector<std::pair<std::string, VTP>>& kwargs);
  // x[key] where key holds one boolean mask among ints, slices, None and
  // Ellipsis (x[0, mask], x[mask, 1:]): the basic indexing, then the mask
  // after full slices, as torch applies them; nullptr for any other key.
  VTP subscr_mask_among_basic(const VTP& x, const VTP& key);
  // A new unbacked symbol for the count of `what` among `counted` elements.
  sym::Expr new_unbacked(const std::string& what, const std::vector<sym::Expr>& counted);
  // A new unbacked symbol in [lower, upper] made by `origin` at the current
  // line (its dynamic log line and messages say where).
  sym::Expr unbacked_at_line(const std::string& origin, int64_t lower, int64_t upper);
  // Where each unbacked symbol's value can be read: dim `dim` of `tensor`,
  // or with `value`, tensor.item() (a value Tensor.item() read).
  struct UnbackedSource {
    VTP tensor;
    int64_t dim = 0;
    bool value = false;
  };
  // t.item() of a one-element integer tensor as an unbacked int u<n> in its
  // dtype's range (config capture_scalar_outputs); nullptr otherwise.
  VTP item_unbacked(const VTP& t);
  // The graph's arguments that give unbacked symbol u at run time: (the
  // tensor, its dim) for a count, (the int, None) for an item() value.
  std::pair<graph::Value, graph::Value> unbacked_read(const sym::Expr& u);
  std::unordered_map<sym::Expr, UnbackedSource> unbacked_source;
  // A SymInt involving unbacked symbols keeps the tensors they are read from
  // in its items, so that a frame going on with it has them as graph outputs.
  void note_unbacked_reads(const VTP& v);                  // "file:line" of the current instruction
};

// The names call_unbacked may record with an unbacked size (ops, Tensor
// methods, "getitem"): a cheap test before building its arguments.
bool makes_unbacked_size(const std::string& name);

// IGNIS_LOGS=bytecode: the disassembly of `code` (original frames, resume functions).
void log_bytecode(const char* what, PyObject* code);

// The operator-module function for a BINARY_OP argrepr ("+" -> add, "+=" -> iadd).
const char* binary_op_name(const std::string& argrepr);

// Cached module attributes (borrowed; imported once). Throws PyErrorSet.
PyObject* py_import_attr(const char* module, const char* name);
PyObject* operator_fn(const char* name);   // operator.<name>
PyObject* builtins_dict();
PyObject* ignis_module();

}  // namespace ignis::capture

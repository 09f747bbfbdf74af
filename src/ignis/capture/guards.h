// GuardProgram: the checks that decide whether a cache entry may run a
// frame, compiled to a flat list of steps evaluated in C++.
//
// Values are named by *sources* (where a value comes from in the frame:
// L['x'], G['torch'], L['self']._modules['fc']._parameters['weight'], ...).
// Each source is loaded once per call into a register; the tracer asks for
// registers (deduplicated: asking twice for the same source gives the same
// register) and then adds checks on them. The plan (plan.h) reads graph inputs
// and reconstruction values from the same registers, so a guarded call loads
// each input exactly once.
//
// Loads run lazily in the order they were added; a load that fails (missing
// attribute, key or index, or an exception in __getattr__) fails the guard
// with a reason naming the source, never raises.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ignis/capture/frame.h"
#include "ignis/sym/expr.h"

namespace ignis::capture {

// Tensor properties a tensor guard pins. A set bit of `dynamic_dims` means
// the size of that dim is symbolic: it is not checked for equality here (the
// shape guards, check_shapes, check it), and the strides are checked as
// products of sizes (`stride_dims`) where the trace gave them so. A set bit
// of `dynamic_strides` means the stride of that dim is symbolic (a stride
// symbol, or a product with one: Note [Stride symbols] in
// tracer_dynamic.cpp): the shape guards check it.
struct TensorGuardSpec {
  PyTypeObject* type = nullptr;  // exact Python type (ignis.Tensor, Parameter, ...)
  int dtype = 0;                 // ignis ScalarType as int
  int device_type = 0;           // ignis DeviceType as int
  int device_index = -1;
  bool requires_grad = false;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  uint64_t dynamic_dims = 0;
  uint64_t dynamic_strides = 0;
  // With dynamic dims or strides, stride i must be strides[i] *
  // prod(size[k] for the bits k of stride_dims[i]) (contiguous: stride[0]
  // == size[1]); empty when both masks are 0. `size_text`/`stride_text` spell them for logs
  // ("s77", "3").
  std::vector<uint64_t> stride_dims;
  std::vector<std::string> size_text, stride_text;
};

// The guards a trace with symbolic sizes relied on (sym::ShapeEnv's), over
// the values of size registers (GuardProgram::tensor_size).
struct ShapeGuards {
  // Each symbol and the register its value is read from.
  std::vector<std::pair<sym::Expr, int>> symbols;
  struct Check {
    sym::Expr expr;   // a relation over the symbols (nonzero: holds) ...
    int reg = -1;     // ... or, when reg >= 0, register reg's value == expr
    std::string text; // torch's words, for the reason and the guards log
  };
  std::vector<Check> checks;
};

class GuardProgram {
 public:
  GuardProgram();
  ~GuardProgram();
  GuardProgram(const GuardProgram&) = delete;
  GuardProgram& operator=(const GuardProgram&) = delete;

  // --- registers (sources) ---------------------------------------------------
  // Each returns a register index. `name` arguments are for messages only.
  int local(int index, const std::string& name);   // FrameView::args[index]: L['name']
  int global(PyObject* name);                      // f_globals[name], else builtins: G['name']
  int closure(int index, const std::string& name); // closure[index].cell_contents: L['name']
  // A fixed object known when tracing (another module's globals dict), named
  // `name` in messages; loads through it are guarded like any other.
  int object(PyObject* obj, const std::string& name);
  int attr(int reg, PyObject* name);               // getattr(r, name): r.name
  int dict_item(int reg, PyObject* key);           // r[key] from a dict's storage (no __getitem__ call)
  int item(int reg, Py_ssize_t index);             // r[index] for a list/tuple: r[i]
  int call_method0(int reg, const char* method);   // r.method(): r.__reduce__()
  // r.size()[dim] of a tensor, read in C++ as an int: L['x'].size()[0]
  int tensor_size(int reg, int dim);
  // r.stride()[dim], the same way: L['x'].stride()[0]
  int tensor_stride(int reg, int dim);
  int num_registers() const;
  // The source text of a register: "L['x']", "G['torch'].nn", ...
  const std::string& source_name(int reg) const;

  // --- checks ------------------------------------------------------------------
  void check_tensor(int reg, TensorGuardSpec spec);
  void check_type(int reg, PyTypeObject* type);    // type(r) is type
  void check_id(int reg, PyObject* obj);           // r is obj (holds a reference to obj)
  // type(r) is type(value) and r == value; for None, bool, int, float, str,
  // bytes, complex, ignis.dtype, ignis.device, and tuples of these.
  void check_equals(int reg, PyObject* value);
  void check_len(int reg, Py_ssize_t n);           // len(r) == n (list, tuple, dict)
  void check_none(int reg, bool is_none);
  // `key` is not in the dict r (an instance __dict__ that must not shadow a
  // class attribute the trace resolved, e.g. a module's forward).
  void check_no_key(int reg, PyObject* key);
  // Global state read at trace time.
  void check_grad_mode(bool enabled);
  void check_default_dtype(int dtype);
  // autocast::state_key() (enabled and dtype per device type, cache flag).
  void check_autocast_state(int64_t key);
  // Symbolic-size guards (ranges, equalities, relations), evaluated in C++
  // over the registers' ints; the failing check's text is the reason.
  // Added after every load it reads.
  void check_shapes(ShapeGuards guards);

  // --- evaluation -----------------------------------------------------------------
  // Runs all steps. On success returns true and `regs` holds a borrowed or
  // owned value per register (see Registers). On failure returns false and,
  // when `why` is non-null, sets it to a readable reason:
  //   "tensor 'L['x']' size mismatch at index 0. expected 4, actual 8"
  class Registers;
  bool check(const FrameView& f, Registers& regs, std::string* why) const;

  // Guard lines for IGNIS_LOGS=guards, one per check, e.g.
  //   TENSOR_MATCH: L['x'] (ignis.Tensor, float32, cpu, size=[4], stride=[1], requires_grad=False)
  //   ID_MATCH: G['torch'] is <module 'ignis'>
  std::vector<std::string> describe() const;

  struct Impl;
 private:
  std::unique_ptr<Impl> impl_;
};

// Values loaded by a guard check, indexed by register. Owns references to
// the values it loaded (and releases them on destruction / reset).
class GuardProgram::Registers {
 public:
  Registers() = default;
  ~Registers() { reset(); }
  Registers(const Registers&) = delete;
  Registers& operator=(const Registers&) = delete;
  PyObject* get(int reg) const { return values_[reg]; }  // borrowed
  void reset() {
    for (PyObject* o : values_) Py_XDECREF(o);
    values_.clear();
  }
  std::vector<PyObject*> values_;  // owned references (nullptr: not loaded)
};

}  // namespace ignis::capture

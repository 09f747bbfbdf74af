// GuardProgram: a flat list of load and check steps run in insertion order.
//
// The hot path (GuardProgram::check with why == nullptr) makes no Python
// calls for tensor, id, type, len, None and number/string checks and
// allocates nothing once the Registers vector has grown to size. Only loads
// that need Python semantics (getattr, r.method()) call into Python.
// Failure reasons are built only when the caller asks for them.
#include "ignis/capture/guards.h"

#include <cmath>
#include <cstring>
#include <unordered_map>

#include "ignis/autocast/autocast_mode.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/core/dtype.h"
#include "ignis/core/str.h"
#include "ignis/python/py_common.h"
#include "ignis/sym/eval.h"

namespace ignis::capture {

namespace {

enum class Op : uint8_t {
  // loads (write register `reg`)
  LoadLocal,
  LoadGlobal,
  LoadClosure,
  LoadObject,
  LoadAttr,
  LoadDictItem,
  LoadItem,
  LoadCallMethod0,
  LoadTensorSize,
  LoadTensorStride,
  // checks
  CheckTensor,
  CheckType,
  CheckId,
  CheckEquals,
  CheckLen,
  CheckNone,
  CheckNoKey,
  CheckGradMode,
  CheckDefaultDtype,
  CheckAutocastState,
  CheckShapes,
};

struct Step {
  Op op;
  int reg = -1;         // loads: destination; checks: the checked register
  int parent = -1;      // loads from a register: the source register
  Py_ssize_t arg = 0;   // index / length / spec index / flag
  PyObject* obj = nullptr;  // owned: name, key, expected object or value
  std::string text;     // method name (LoadCallMethod0)
};

struct RegisterInfo {
  Op op;
  int parent;
  Py_ssize_t arg;
  PyObject* key;  // borrowed from the load step
  std::string source;
};

// A stored value the hot path can compare without calling Python.
struct FastValue {
  enum Kind : uint8_t { Identity, Int, Float, Str, Bytes, Device, Tuple, Generic } kind;
  long long i = 0;
  double d = 0;
};

std::string type_repr(PyTypeObject* t) {
  PyObject* r = PyObject_Repr(reinterpret_cast<PyObject*>(t));
  if (!r) {
    PyErr_Clear();
    return t->tp_name;
  }
  const char* s = PyUnicode_AsUTF8(r);
  std::string out = s ? s : t->tp_name;
  Py_DECREF(r);
  return out;
}

// "ignis.Tensor", "builtins.int": the type's module and qualified name.
std::string type_name(PyTypeObject* t) {
  std::string out;
  PyObject* mod = PyObject_GetAttrString(reinterpret_cast<PyObject*>(t), "__module__");
  if (mod && PyUnicode_Check(mod)) {
    const char* m = PyUnicode_AsUTF8(mod);
    // ignis's private modules re-export their types at the top level
    // (ignis._tensor.Tensor is ignis.Tensor).
    if (m) out = std::string(m).rfind("ignis._", 0) == 0 ? "ignis." : std::string(m) + ".";
  }
  Py_XDECREF(mod);
  PyObject* q = PyType_GetQualName(t);
  const char* qs = q ? PyUnicode_AsUTF8(q) : nullptr;
  out += qs ? qs : t->tp_name;
  Py_XDECREF(q);
  PyErr_Clear();
  return out;
}

std::string obj_repr(PyObject* o) {
  PyObject* r = PyObject_Repr(o);
  if (!r) {
    PyErr_Clear();
    return "<unrepresentable>";
  }
  const char* s = PyUnicode_AsUTF8(r);
  std::string out = s ? s : "<unrepresentable>";
  Py_DECREF(r);
  return out;
}

std::string str_of(PyObject* o) {
  if (PyUnicode_Check(o)) {
    const char* s = PyUnicode_AsUTF8(o);
    if (s) return s;
    PyErr_Clear();
  }
  return obj_repr(o);
}

std::string int_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += str(i ? ", " : "", v[i]);
  return s + "]";
}

std::string text_list(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += str(i ? ", " : "", v[i]);
  return s + "]";
}

bool same_key(PyObject* a, PyObject* b) {
  if (a == b) return true;
  if (PyUnicode_CheckExact(a) && PyUnicode_CheckExact(b)) return PyUnicode_Compare(a, b) == 0;
  if (PyLong_CheckExact(a) && PyLong_CheckExact(b)) {
    int r = PyObject_RichCompareBool(a, b, Py_EQ);
    if (r < 0) PyErr_Clear();
    return r == 1;
  }
  return false;
}

// Equality of a stored constant and a value on the hot path: 1 equal,
// 0 different, -1 needs Python's ==.
int fast_equal(PyObject* expected, PyObject* actual) {
  if (expected == actual) return 1;
  if (Py_TYPE(expected) != Py_TYPE(actual)) return 0;
  if (expected == Py_None || PyBool_Check(expected)) return 0;  // singletons: identity only
  if (PyLong_CheckExact(expected)) {
    int ov1 = 0, ov2 = 0;
    long long a = PyLong_AsLongLongAndOverflow(expected, &ov1);
    long long b = PyLong_AsLongLongAndOverflow(actual, &ov2);
    if (ov1 || ov2) return -1;
    return a == b;
  }
  if (PyFloat_CheckExact(expected)) {
    double a = PyFloat_AS_DOUBLE(expected), b = PyFloat_AS_DOUBLE(actual);
    return a == b || (std::isnan(a) && std::isnan(b));
  }
  if (PyUnicode_CheckExact(expected)) return PyUnicode_Compare(expected, actual) == 0;
  if (PyBytes_CheckExact(expected)) {
    Py_ssize_t n = PyBytes_GET_SIZE(expected);
    return n == PyBytes_GET_SIZE(actual) &&
           std::memcmp(PyBytes_AS_STRING(expected), PyBytes_AS_STRING(actual), n) == 0;
  }
  if (PyComplex_CheckExact(expected)) {
    Py_complex a = PyComplex_AsCComplex(expected), b = PyComplex_AsCComplex(actual);
    return a.real == b.real && a.imag == b.imag;
  }
  if (py::is_dtype(expected)) return py::dtype_of(expected) == py::dtype_of(actual);
  if (py::is_memory_format(expected)) return expected == actual;  // four singletons
  if (py::is_device(expected)) {
    Device a = py::device_of(expected), b = py::device_of(actual);
    return a.type == b.type && a.index == b.index;
  }
  if (PyTuple_CheckExact(expected)) {
    Py_ssize_t n = PyTuple_GET_SIZE(expected);
    if (n != PyTuple_GET_SIZE(actual)) return 0;
    for (Py_ssize_t i = 0; i < n; ++i) {
      int r = fast_equal(PyTuple_GET_ITEM(expected, i), PyTuple_GET_ITEM(actual, i));
      if (r != 1) return r;
    }
    return 1;
  }
  return -1;
}

}  // namespace

struct GuardProgram::Impl {
  std::vector<Step> steps;
  std::vector<RegisterInfo> regs;
  std::vector<TensorGuardSpec> tensor_specs;
  std::vector<ShapeGuards> shape_guards;
  // Registers by (op, parent, arg), in order: a trace loads hundreds of
  // values (a model's parameters), and each new load looks for an equal one.
  struct LoadKey {
    Op op;
    int parent;
    Py_ssize_t arg;
    bool operator==(const LoadKey&) const = default;
  };
  struct LoadKeyHash {
    size_t operator()(const LoadKey& k) const {
      uint64_t h = (static_cast<uint64_t>(k.parent) << 8) ^ static_cast<uint64_t>(k.op);
      return std::hash<uint64_t>()(h * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(k.arg));
    }
  };
  std::unordered_map<LoadKey, std::vector<int>, LoadKeyHash> by_load;

  ~Impl() {
    if (!Py_IsInitialized()) return;
    for (Step& s : steps) Py_CLEAR(s.obj);
  }

  int add_register(Op op, int parent, Py_ssize_t arg, PyObject* key, std::string source,
                   const char* text = nullptr) {
    std::vector<int>& same_load = by_load[LoadKey{op, parent, arg}];
    for (int i : same_load) {
      const RegisterInfo& r = regs[i];
      if ((key == nullptr) != (r.key == nullptr)) continue;
      if (key && !same_key(key, r.key)) continue;
      if (text && steps_text_of(i) != text) continue;
      return i;
    }
    int reg = static_cast<int>(regs.size());
    same_load.push_back(reg);
    Step s;
    s.op = op;
    s.reg = reg;
    s.parent = parent;
    s.arg = arg;
    s.obj = key;
    Py_XINCREF(key);
    if (text) s.text = text;
    steps.push_back(std::move(s));
    regs.push_back(RegisterInfo{op, parent, arg, key, std::move(source)});
    return reg;
  }

  std::string steps_text_of(int reg) const {
    for (const Step& s : steps)
      if (s.reg == reg && s.op == Op::LoadCallMethod0) return s.text;
    return {};
  }

  void add_check(Op op, int reg, Py_ssize_t arg, PyObject* obj) {
    Step s;
    s.op = op;
    s.reg = reg;
    s.arg = arg;
    s.obj = obj;
    Py_XINCREF(obj);
    if (op == Op::CheckGradMode || op == Op::CheckDefaultDtype || op == Op::CheckAutocastState) {
      // Global state is checked before any value is loaded (as torch._dynamo
      // checks it first): cheapest, and the reason a whole cache fails.
      steps.insert(steps.begin() + num_global_checks++, std::move(s));
      return;
    }
    steps.push_back(std::move(s));
  }
  size_t num_global_checks = 0;

  const std::string& src(int reg) const { return regs[reg].source; }

  // Loads register s.reg. False (no exception set) when the value is missing.
  bool load(const Step& s, const FrameView& f, std::vector<PyObject*>& v) const {
    PyObject* out = nullptr;
    switch (s.op) {
      case Op::LoadLocal:
        if (s.arg < f.nargs) out = f.args[s.arg];
        Py_XINCREF(out);
        break;
      case Op::LoadGlobal:
        out = PyDict_GetItemWithError(f.globals, s.obj);
        if (!out && !PyErr_Occurred() && f.builtins && PyDict_Check(f.builtins))
          out = PyDict_GetItemWithError(f.builtins, s.obj);
        Py_XINCREF(out);
        break;
      case Op::LoadClosure:
        if (f.closure && s.arg < PyTuple_GET_SIZE(f.closure)) {
          PyObject* cell = PyTuple_GET_ITEM(f.closure, s.arg);
          if (PyCell_Check(cell)) out = PyCell_GET(cell);
        }
        Py_XINCREF(out);
        break;
      case Op::LoadObject:
        out = s.obj;
        Py_INCREF(out);
        break;
      case Op::LoadAttr:
        out = PyObject_GetAttr(v[s.parent], s.obj);
        break;
      case Op::LoadDictItem: {
        PyObject* d = v[s.parent];
        // The dict's own storage, as the trace read it (an OrderedDict of
        // module hooks included; a subclass's __getitem__ is not called).
        if (PyDict_Check(d)) out = PyDict_GetItemWithError(d, s.obj);
        Py_XINCREF(out);
        break;
      }
      case Op::LoadItem: {
        PyObject* c = v[s.parent];
        Py_ssize_t i = s.arg;
        if (PyList_Check(c)) {
          if (i < 0) i += PyList_GET_SIZE(c);
          if (i >= 0 && i < PyList_GET_SIZE(c)) out = PyList_GET_ITEM(c, i);
        } else if (PyTuple_Check(c)) {
          if (i < 0) i += PyTuple_GET_SIZE(c);
          if (i >= 0 && i < PyTuple_GET_SIZE(c)) out = PyTuple_GET_ITEM(c, i);
        }
        Py_XINCREF(out);
        break;
      }
      case Op::LoadCallMethod0:
        out = PyObject_CallMethod(v[s.parent], s.text.c_str(), nullptr);
        break;
      case Op::LoadTensorSize: {
        PyObject* t = v[s.parent];
        if (!py::is_tensor(t)) return false;
        TensorImpl* impl = py::unwrap(t).impl();
        if (!impl || s.arg >= static_cast<Py_ssize_t>(impl->sizes().size())) return false;
        out = PyLong_FromLongLong(impl->sizes()[s.arg]);
        break;
      }
      case Op::LoadTensorStride: {
        PyObject* t = v[s.parent];
        if (!py::is_tensor(t)) return false;
        TensorImpl* impl = py::unwrap(t).impl();
        if (!impl || s.arg >= static_cast<Py_ssize_t>(impl->strides().size())) return false;
        out = PyLong_FromLongLong(impl->strides()[s.arg]);
        break;
      }
      default:
        return true;
    }
    if (!out) {
      PyErr_Clear();
      return false;
    }
    v[s.reg] = out;
    return true;
  }

  // Only CUDA device indices are meaningful (a CPU tensor may say -1 or 0).
  static bool index_differs(Device d, const TensorGuardSpec& spec) {
    return d.type == DeviceType::CUDA && d.index != spec.device_index;
  }

  static bool tensor_matches(const TensorGuardSpec& spec, PyObject* o) {
    if (Py_TYPE(o) != spec.type || !py::is_tensor(o)) return false;
    TensorImpl* t = py::unwrap(o).impl();
    if (!t) return false;
    if (static_cast<int>(t->dtype()) != spec.dtype) return false;
    Device d = t->device();
    if (static_cast<int>(d.type) != spec.device_type || index_differs(d, spec)) return false;
    AutogradMetaInterface* m = t->autograd_meta();
    if ((m && m->requires_grad()) != spec.requires_grad) return false;
    const DimVector& sz = t->sizes();
    if (sz.size() != spec.sizes.size()) return false;
    const DimVector& st = t->strides();
    // The stride of a dim of size 1 is not checked: index 0 is the only one
    // read (Note [Strides of size-1 dims] in tracer_dynamic.cpp).
    if (spec.dynamic_dims == 0 && spec.dynamic_strides == 0) {
      for (size_t i = 0; i < sz.size(); ++i)
        if (sz[i] != spec.sizes[i] || (st[i] != spec.strides[i] && sz[i] != 1)) return false;
      return true;
    }
    for (size_t i = 0; i < sz.size(); ++i) {
      if (!((spec.dynamic_dims >> i) & 1) && sz[i] != spec.sizes[i]) return false;
      if (!((spec.dynamic_strides >> i) & 1) && sz[i] != 1 &&
          st[i] != expected_stride(spec, sz, i))
        return false;
    }
    return true;
  }

  // Stride i as the spec states it for these sizes (a product of sizes times
  // a constant for a tensor with dynamic dims).
  static int64_t expected_stride(const TensorGuardSpec& spec, const DimVector& sz, size_t i) {
    if (spec.stride_dims.empty()) return spec.strides[i];
    int64_t v = spec.strides[i];
    for (size_t k = 0; k < sz.size(); ++k)
      if ((spec.stride_dims[i] >> k) & 1) v *= sz[k];
    return v;
  }

  // Runs the shape guards over the registers: -1 all hold, else the index
  // of the first check that fails.
  static int failing_shape_check(const ShapeGuards& g, const std::vector<PyObject*>& v) {
    // Reused across calls: after the first, assigning a symbol's value
    // allocates nothing (every symbol a check reads is assigned first).
    thread_local sym::Bindings values;
    auto value_of = [&](int reg, int64_t* out) {
      PyObject* o = v[reg];
      if (!o || !PyLong_Check(o)) return false;
      *out = PyLong_AsLongLong(o);
      if (*out == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
      return true;
    };
    for (const auto& [sym, reg] : g.symbols) {
      int64_t x;
      if (!value_of(reg, &x)) return 0;
      values[sym] = x;
    }
    for (size_t i = 0; i < g.checks.size(); ++i) {
      const ShapeGuards::Check& c = g.checks[i];
      try {
        int64_t e = sym::eval(c.expr, values);
        if (c.reg >= 0) {
          int64_t x;
          if (!value_of(c.reg, &x) || x != e) return static_cast<int>(i);
        } else if (e == 0) {
          return static_cast<int>(i);
        }
      } catch (...) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  // The first mismatch in torch._dynamo's words (TensorCheck::check_verbose).
  std::string tensor_reason(const TensorGuardSpec& spec, PyObject* o, const std::string& name) const {
    if (Py_TYPE(o) != spec.type || !py::is_tensor(o))
      return str("expected type of '", name, "' to be a tensor type, but found ",
                 type_repr(Py_TYPE(o)));
    TensorImpl* t = py::unwrap(o).impl();
    std::string p = str("tensor '", name, "' ");
    if (!t) return p + "is undefined";
    if (static_cast<int>(t->dtype()) != spec.dtype)
      return p + str("dtype mismatch. expected ",
                     scalar_type_name(static_cast<ScalarType>(spec.dtype)), ", actual ",
                     scalar_type_name(t->dtype()));
    Device d = t->device();
    if (static_cast<int>(d.type) != spec.device_type)
      return p + str("device mismatch. expected ",
                     Device(static_cast<DeviceType>(spec.device_type), spec.device_index).str(),
                     ", actual ", d.str());
    if (index_differs(d, spec))
      return p + str("Tensor device index mismatch. Expected device index to be ",
                     spec.device_index, ", actual ", static_cast<int>(d.index));
    AutogradMetaInterface* m = t->autograd_meta();
    if ((m && m->requires_grad()) != spec.requires_grad)
      return p + str("requires_grad mismatch. expected requires_grad=", spec.requires_grad ? 1 : 0);
    const DimVector& sz = t->sizes();
    if (sz.size() != spec.sizes.size())
      return p + str("rank mismatch. expected ", spec.sizes.size(), ", actual ", sz.size());
    for (size_t i = 0; i < sz.size(); ++i)
      if (!((spec.dynamic_dims >> i) & 1) && sz[i] != spec.sizes[i])
        return p + str("size mismatch at index ", i, ". expected ", spec.sizes[i], ", actual ", sz[i]);
    const DimVector& st = t->strides();
    for (size_t i = 0; i < st.size(); ++i)
      if (!((spec.dynamic_strides >> i) & 1) && sz[i] != 1 && st[i] != expected_stride(spec, sz, i))
        return p + str("stride mismatch at index ", i, ". expected ", expected_stride(spec, sz, i),
                       ", actual ", st[i]);
    return p + "mismatch";
  }

  // Runs check `s`: 1 pass, 0 fail, (only CheckEquals on exotic values) the
  // Python comparison's error is swallowed as a failure.
  bool run_check(const Step& s, const std::vector<PyObject*>& v) const {
    switch (s.op) {
      case Op::CheckTensor:
        return tensor_matches(tensor_specs[s.arg], v[s.reg]);
      case Op::CheckType:
        return Py_TYPE(v[s.reg]) == reinterpret_cast<PyTypeObject*>(s.obj);
      case Op::CheckId:
        return v[s.reg] == s.obj;
      case Op::CheckEquals: {
        int r = fast_equal(s.obj, v[s.reg]);
        if (r >= 0) return r == 1;
        r = PyObject_RichCompareBool(v[s.reg], s.obj, Py_EQ);
        if (r < 0) PyErr_Clear();
        return r == 1;
      }
      case Op::CheckLen: {
        PyObject* o = v[s.reg];
        Py_ssize_t n;
        if (PyList_Check(o)) n = PyList_GET_SIZE(o);
        else if (PyTuple_Check(o)) n = PyTuple_GET_SIZE(o);
        else if (PyDict_Check(o)) n = PyDict_GET_SIZE(o);
        else {
          n = PyObject_Length(o);
          if (n < 0) PyErr_Clear();
        }
        return n == s.arg;
      }
      case Op::CheckNone:
        return (v[s.reg] == Py_None) == (s.arg != 0);
      case Op::CheckNoKey: {
        if (!PyDict_Check(v[s.reg])) return false;
        int r = PyDict_Contains(v[s.reg], s.obj);
        if (r < 0) PyErr_Clear();
        return r == 0;
      }
      case Op::CheckGradMode:
        return autograd::grad_enabled() == (s.arg != 0);
      case Op::CheckDefaultDtype:
        return static_cast<int>(default_dtype()) == s.arg;
      case Op::CheckAutocastState:
        return autocast::state_key() == s.arg;
      case Op::CheckShapes:
        return failing_shape_check(shape_guards[s.arg], v) < 0;
      default:
        return true;
    }
  }

  std::string check_reason(const Step& s, const std::vector<PyObject*>& v) const {
    switch (s.op) {
      case Op::CheckTensor:
        return tensor_reason(tensor_specs[s.arg], v[s.reg], src(s.reg));
      case Op::CheckType:
        return str("type(", src(s.reg), ") is ", type_repr(reinterpret_cast<PyTypeObject*>(s.obj)));
      case Op::CheckId:
        return str("___check_obj_id(", src(s.reg), ", ",
                   static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(s.obj)), ")");
      case Op::CheckEquals:
        return str(src(s.reg), " == ", obj_repr(s.obj));
      case Op::CheckLen:
        return str("len(", src(s.reg), ") == ", s.arg);
      case Op::CheckNone:
        return str(src(s.reg), s.arg ? " is None" : " is not None");
      case Op::CheckNoKey:
        return str(obj_repr(s.obj), " not in ", src(s.reg));
      case Op::CheckGradMode:
        return "GLOBAL_STATE changed: grad_mode";
      case Op::CheckDefaultDtype:
        return "GLOBAL_STATE changed: default_dtype";
      case Op::CheckAutocastState:
        return "GLOBAL_STATE changed: autocast";
      case Op::CheckShapes: {
        const ShapeGuards& g = shape_guards[s.arg];
        int i = failing_shape_check(g, v);
        return i < 0 ? "" : g.checks[i].text;
      }
      default:
        return "";
    }
  }
};

GuardProgram::GuardProgram() : impl_(std::make_unique<Impl>()) {}
GuardProgram::~GuardProgram() = default;

int GuardProgram::local(int index, const std::string& name) {
  return impl_->add_register(Op::LoadLocal, -1, index, nullptr, str("L['", name, "']"));
}

int GuardProgram::global(PyObject* name) {
  return impl_->add_register(Op::LoadGlobal, -1, 0, name, str("G['", str_of(name), "']"));
}

int GuardProgram::object(PyObject* obj, const std::string& name) {
  return impl_->add_register(Op::LoadObject, -1, 0, obj, name);
}

int GuardProgram::closure(int index, const std::string& name) {
  // Named as a local, as Dynamo names a frame's free variables.
  return impl_->add_register(Op::LoadClosure, -1, index, nullptr, str("L['", name, "']"));
}

int GuardProgram::attr(int reg, PyObject* name) {
  return impl_->add_register(Op::LoadAttr, reg, 0, name, str(impl_->src(reg), ".", str_of(name)));
}

int GuardProgram::dict_item(int reg, PyObject* key) {
  return impl_->add_register(Op::LoadDictItem, reg, 0, key,
                             str(impl_->src(reg), "[", obj_repr(key), "]"));
}

int GuardProgram::item(int reg, Py_ssize_t index) {
  return impl_->add_register(Op::LoadItem, reg, index, nullptr, str(impl_->src(reg), "[", index, "]"));
}

int GuardProgram::call_method0(int reg, const char* method) {
  return impl_->add_register(Op::LoadCallMethod0, reg, 0, nullptr,
                             str(impl_->src(reg), ".", method, "()"), method);
}

int GuardProgram::tensor_size(int reg, int dim) {
  return impl_->add_register(Op::LoadTensorSize, reg, dim, nullptr,
                             str(impl_->src(reg), ".size()[", dim, "]"));
}

int GuardProgram::tensor_stride(int reg, int dim) {
  return impl_->add_register(Op::LoadTensorStride, reg, dim, nullptr,
                             str(impl_->src(reg), ".stride()[", dim, "]"));
}

int GuardProgram::num_registers() const { return static_cast<int>(impl_->regs.size()); }

const std::string& GuardProgram::source_name(int reg) const { return impl_->src(reg); }

void GuardProgram::check_tensor(int reg, TensorGuardSpec spec) {
  impl_->tensor_specs.push_back(std::move(spec));
  impl_->add_check(Op::CheckTensor, reg, static_cast<Py_ssize_t>(impl_->tensor_specs.size() - 1),
                   nullptr);
}

void GuardProgram::check_type(int reg, PyTypeObject* type) {
  impl_->add_check(Op::CheckType, reg, 0, reinterpret_cast<PyObject*>(type));
}

void GuardProgram::check_id(int reg, PyObject* obj) { impl_->add_check(Op::CheckId, reg, 0, obj); }

void GuardProgram::check_equals(int reg, PyObject* value) {
  impl_->add_check(Op::CheckEquals, reg, 0, value);
}

void GuardProgram::check_len(int reg, Py_ssize_t n) { impl_->add_check(Op::CheckLen, reg, n, nullptr); }

void GuardProgram::check_no_key(int reg, PyObject* key) {
  impl_->add_check(Op::CheckNoKey, reg, 0, key);
}

void GuardProgram::check_none(int reg, bool is_none) {
  impl_->add_check(Op::CheckNone, reg, is_none ? 1 : 0, nullptr);
}

void GuardProgram::check_grad_mode(bool enabled) {
  impl_->add_check(Op::CheckGradMode, -1, enabled ? 1 : 0, nullptr);
}

void GuardProgram::check_default_dtype(int dtype) {
  impl_->add_check(Op::CheckDefaultDtype, -1, dtype, nullptr);
}

void GuardProgram::check_autocast_state(int64_t key) {
  impl_->add_check(Op::CheckAutocastState, -1, static_cast<Py_ssize_t>(key), nullptr);
}

void GuardProgram::check_shapes(ShapeGuards guards) {
  impl_->shape_guards.push_back(std::move(guards));
  impl_->add_check(Op::CheckShapes, -1, static_cast<Py_ssize_t>(impl_->shape_guards.size() - 1),
                   nullptr);
}

bool GuardProgram::check(const FrameView& f, Registers& regs, std::string* why) const {
  std::vector<PyObject*>& v = regs.values_;
  if (!v.empty()) regs.reset();
  v.resize(impl_->regs.size(), nullptr);
  for (const Step& s : impl_->steps) {
    if (s.op < Op::CheckTensor) {
      if (!impl_->load(s, f, v)) {
        if (why) *why = str("missing value for ", impl_->src(s.reg));
        return false;
      }
    } else if (!impl_->run_check(s, v)) {
      if (why) *why = impl_->check_reason(s, v);
      return false;
    }
  }
  return true;
}

std::vector<std::string> GuardProgram::describe() const {
  std::vector<std::string> out;
  const Impl& I = *impl_;
  for (const Step& s : I.steps) {
    switch (s.op) {
      case Op::CheckTensor: {
        const TensorGuardSpec& t = I.tensor_specs[s.arg];
        std::string tn = t.type ? type_name(t.type) : "?";
        std::string sizes = t.size_text.empty() ? int_list(t.sizes) : text_list(t.size_text);
        std::string strides = t.stride_text.empty() ? int_list(t.strides) : text_list(t.stride_text);
        out.push_back(str("TENSOR_MATCH: ", I.src(s.reg), " (", tn, ", ",
                          dtype_name(static_cast<ScalarType>(t.dtype)), ", ",
                          Device(static_cast<DeviceType>(t.device_type), t.device_index).str(),
                          ", size=", sizes, ", stride=", strides,
                          ", requires_grad=", t.requires_grad, ")"));
        break;
      }
      case Op::CheckType:
        out.push_back(str("TYPE_MATCH: type(", I.src(s.reg), ") is ",
                          type_repr(reinterpret_cast<PyTypeObject*>(s.obj))));
        break;
      case Op::CheckId:
        out.push_back(str("ID_MATCH: ", I.src(s.reg), " is ", obj_repr(s.obj)));
        break;
      case Op::CheckEquals:
        out.push_back(str("EQUALS_MATCH: ", I.src(s.reg), " == ", obj_repr(s.obj)));
        break;
      case Op::CheckLen:
        out.push_back(str("LENGTH_CHECK: len(", I.src(s.reg), ") == ", s.arg));
        break;
      case Op::CheckNone:
        out.push_back(str(s.arg ? "NONE_MATCH: " : "NOT_NONE_MATCH: ", I.src(s.reg),
                          s.arg ? " is None" : " is not None"));
        break;
      case Op::CheckNoKey:
        out.push_back(str("DICT_KEY_ABSENT: ", obj_repr(s.obj), " not in ", I.src(s.reg)));
        break;
      case Op::CheckGradMode:
        out.push_back(str("GLOBAL_STATE: grad_mode=", s.arg != 0));
        break;
      case Op::CheckDefaultDtype:
        out.push_back(str("DEFAULT_DTYPE: ", dtype_name(static_cast<ScalarType>(s.arg))));
        break;
      case Op::CheckAutocastState:
        out.push_back(str("GLOBAL_STATE: autocast=", autocast::describe_state_key(s.arg)));
        break;
      case Op::CheckShapes:
        // torch's shape guards are LAMBDA_GUARDs over sources.
        for (const ShapeGuards::Check& c : I.shape_guards[s.arg].checks) {
          std::string line = str("LAMBDA_GUARD: ", c.text);
          if (out.empty() || out.back() != line) out.push_back(line);  // a range is two checks
        }
        break;
      default:
        break;
    }
  }
  return out;
}

}  // namespace ignis::capture

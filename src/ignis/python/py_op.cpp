// Op objects: one Python callable per operator name, parsing arguments by
// the op's schema (trying its overloads in order), calling the dispatcher,
// and converting the results.
//
// The same object is the function at ignis.<name> and the method
// ignis.Tensor.<name>: the type has Py_TPFLAGS_METHOD_DESCRIPTOR, so
// `x.add(y)` calls it as add(x, y) with no bound-method object in between.

#include <cstring>
#include <map>
#include <memory>

#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/ops/op_def.h"
#include "ignis/kernels/cpu/random.h"
#include "ignis/python/py_common.h"

#include <structmember.h>

namespace ignis::py {

namespace {

struct PyOp {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  std::vector<const OpHandle*>* overloads;
  PyObject* name;      // str
  PyObject* alias_of;  // str: the op's own name when `name` is an alias of it; else null
  PyObject* overload_objects;  // dict overload name -> OpOverload, made on first use
};
PyTypeObject* OpType = nullptr;

// Why one overload did not match, for the TypeError listing all overloads.
struct Mismatch {
  std::string msg;
};

// --- scalar conversions ---------------------------------------------------------
// An int, for an int or int[] parameter. A bool is an int subclass but no
// int here: PyTorch's parser refuses it for those (zeros(True), view(True, 6),
// sum(dim=True) are TypeErrors), though it takes one for a float or Scalar.
bool as_int(PyObject* o, int64_t* out) {
  if (PyBool_Check(o)) return false;
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return false;
    *out = v;
    return true;
  }
  if (is_tensor(o)) {
    const Tensor& t = unwrap(o);
    if (t.numel() == 1 && t.dim() == 0 && is_integral(t.dtype(), true) && t.device().is_cpu()) {
      *out = t.item_int();
      return true;
    }
    return false;
  }
  if (PyFloat_Check(o)) return false;
  if (PyIndex_Check(o)) {  // NumPy integers
    PyObject* i = PyNumber_Index(o);
    if (!i) {
      PyErr_Clear();
      return false;
    }
    *out = PyLong_AsLongLong(i);
    Py_DECREF(i);
    return true;
  }
  return false;
}

bool as_double(PyObject* o, double* out) {
  if (PyFloat_Check(o)) {
    *out = PyFloat_AS_DOUBLE(o);
    return true;
  }
  if (PyLong_Check(o)) {
    *out = PyLong_AsDouble(o);
    return !PyErr_Occurred() || (PyErr_Clear(), false);
  }
  if (is_tensor(o)) {
    const Tensor& t = unwrap(o);
    if (t.numel() == 1 && t.device().is_cpu()) {
      *out = t.item_double();
      return true;
    }
    return false;
  }
  if (is_number(o)) {
    *out = PyFloat_AsDouble(o);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    return true;
  }
  return false;
}

bool as_int_list(PyObject* o, std::vector<int64_t>* out) {
  if (PyTuple_Check(o) || PyList_Check(o)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    PyObject** items = PySequence_Fast_ITEMS(o);
    out->resize(n);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (!as_int(items[i], &(*out)[i])) return false;
    return true;
  }
  int64_t v;
  if (as_int(o, &v)) {  // int[1]: a lone int
    out->assign(1, v);
    return true;
  }
  return false;
}

const char* py_type_name(PyObject* o) {
  if (is_tensor(o)) return "Tensor";
  return Py_TYPE(o)->tp_name;
}

// Converts one Python argument to the schema's type; false on a mismatch.
bool convert(PyObject* o, const Argument& a, bool first_arg, IValue* out) {
  bool optional = false;
  switch (a.type) {
    case ArgType::OptTensor: case ArgType::OptInt: case ArgType::OptIntList:
    case ArgType::OptFloat: case ArgType::OptBool: case ArgType::OptScalar:
    case ArgType::OptDtype: case ArgType::OptDevice: case ArgType::OptStr:
    case ArgType::OptMemoryFormat:
      optional = true;
      break;
    default:
      break;
  }
  if (o == Py_None) {
    if (!optional) return false;
    *out = None{};
    return true;
  }
  switch (a.type) {
    case ArgType::Tensor:
    case ArgType::OptTensor:
      if (is_tensor(o)) {
        *out = unwrap(o);
        return true;
      }
      // A Python number where a tensor is expected (x + 2, where(c, x, 0.)):
      // a 0-dim "wrapped number" that promotes like a scalar.
      if (!first_arg && PyComplex_Check(o)) {  // x * 1j: a wrapped complex number
        *out = complex_scalar_to_tensor(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o),
                                        ScalarType::ComplexDouble, true);
        return true;
      }
      if (!first_arg && is_number(o)) {
        Scalar s = to_scalar(o);
        Tensor t = s.is_float() ? scalar_to_tensor(s.to_double(), ScalarType::Float64, true)
                                : scalar_to_tensor_int(s.to_int(), s.natural_dtype(), true);
        *out = std::move(t);
        return true;
      }
      return false;
    case ArgType::TensorList:
    case ArgType::OptTensorList: {
      if (!PyTuple_Check(o) && !PyList_Check(o)) return false;
      Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
      PyObject** items = PySequence_Fast_ITEMS(o);
      std::vector<Tensor> v(n);
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (items[i] == Py_None && a.type == ArgType::OptTensorList) continue;
        if (!is_tensor(items[i])) return false;
        v[i] = unwrap(items[i]);
      }
      if (a.type == ArgType::TensorList) *out = std::move(v);
      else *out = IValue::OptTensors{std::move(v)};
      return true;
    }
    case ArgType::Int:
    case ArgType::OptInt: {
      int64_t v;
      if (!as_int(o, &v)) return false;
      *out = v;
      return true;
    }
    case ArgType::IntList:
    case ArgType::OptIntList: {
      std::vector<int64_t> v;
      if (!as_int_list(o, &v)) return false;
      *out = std::move(v);
      return true;
    }
    case ArgType::Float:
    case ArgType::OptFloat: {
      // A bool binds as 0.0 or 1.0, as PyTorch's parser converts it
      // (dropout(x, True)); a loose match (Note [Overload resolution]).
      double v;
      if (!as_double(o, &v)) return false;
      *out = v;
      return true;
    }
    case ArgType::FloatList: {
      if (!PyTuple_Check(o) && !PyList_Check(o)) {
        double v;
        if (!as_double(o, &v)) return false;
        *out = std::vector<double>{v};
        return true;
      }
      Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
      std::vector<double> v(n);
      for (Py_ssize_t i = 0; i < n; ++i)
        if (!as_double(PySequence_Fast_ITEMS(o)[i], &v[i])) return false;
      *out = std::move(v);
      return true;
    }
    case ArgType::Bool:
    case ArgType::OptBool:
      if (PyBool_Check(o)) {
        *out = o == Py_True;
        return true;
      }
      if (!PyLong_Check(o) && !PyFloat_Check(o) && is_number(o) && PyObject_HasAttrString(o, "dtype")) {
        int r = PyObject_IsTrue(o);  // numpy.bool_
        if (r < 0) { PyErr_Clear(); return false; }
        *out = r == 1;
        return true;
      }
      return false;
    case ArgType::Scalar:
    case ArgType::OptScalar:
      if (is_number(o)) {
        *out = to_scalar(o);
        return true;
      }
      if (is_tensor(o) && unwrap(o).numel() == 1 && unwrap(o).device().is_cpu()) {
        const Tensor& t = unwrap(o);
        if (t.dtype() == ScalarType::Bool) *out = t.item_int() != 0;
        else if (is_floating(t.dtype())) *out = t.item_double();
        else *out = t.item_int();
        return true;
      }
      return false;
    case ArgType::Dtype:
    case ArgType::OptDtype: {
      ScalarType st;
      if (!to_dtype(o, &st)) return false;
      *out = st;
      return true;
    }
    case ArgType::Device:
    case ArgType::OptDevice: {
      Device d;
      if (!is_device(o) && !PyUnicode_Check(o) && !PyLong_Check(o)) return false;
      if (!to_device(o, &d)) throw PythonErrorAlreadySet{};
      *out = d;
      return true;
    }
    case ArgType::Str:
    case ArgType::OptStr:
      if (!PyUnicode_Check(o)) return false;
      *out = std::string(PyUnicode_AsUTF8(o));
      return true;
    case ArgType::MemoryFormat:
    case ArgType::OptMemoryFormat:
      if (!is_memory_format(o)) return false;
      *out = memory_format_of(o);
      return true;
  }
  return false;
}

// Whether binding Python object `o` to parameter `a` is a loose match (see
// Note [Overload resolution]): a Python bool taken by a parameter that is no
// bool (a Scalar, a float, a Tensor as a wrapped number).
bool loose_bool(PyObject* o, const Argument& a) {
  return PyBool_Check(o) && a.type != ArgType::Bool && a.type != ArgType::OptBool;
}

// Matches Python arguments to one schema. On a mismatch returns false with
// the reason in *why. *loose (when given) counts the loose matches.
bool parse(const FunctionSchema& fs, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
           Stack& stack, std::string* why, int* loose = nullptr) {
  if (loose) *loose = 0;
  const size_t nparams = fs.args.size();
  stack.clear();
  stack.resize(nparams);
  std::vector<bool> filled(nparams, false);
  size_t npos = 0;  // positional parameters
  while (npos < nparams && !fs.args[npos].kwarg_only) ++npos;

  Py_ssize_t ai = 0;
  for (size_t pi = 0; pi < npos && ai < nargs; ++pi, ++ai) {
    const Argument& a = fs.args[pi];
    PyObject* o = args[ai];
    // Varargs sizes: view(2, 3), permute(1, 0), zeros(2, 3): an int[] that is
    // the last positional parameter gathers the remaining ints.
    if ((a.type == ArgType::IntList || a.type == ArgType::OptIntList) && pi == npos - 1 &&
        nargs - ai > 1) {
      std::vector<int64_t> v;
      for (; ai < nargs; ++ai) {
        int64_t x;
        if (!as_int(args[ai], &x)) {
          *why = "argument '" + a.name + "' must be a sequence of ints, but got " +
                 py_type_name(args[ai]) + " in it";
          return false;
        }
        v.push_back(x);
      }
      stack[pi] = std::move(v);
      filled[pi] = true;
      --ai;
      continue;
    }
    if (!convert(o, a, pi == 0, &stack[pi])) {
      *why = "argument '" + a.name + "' (position " + std::to_string(pi + 1) + ") must be " +
             arg_type_name(a.type) + ", not " + py_type_name(o);
      return false;
    }
    if (loose && loose_bool(o, a)) ++*loose;
    filled[pi] = true;
  }
  if (ai < nargs) {
    *why = "takes " + std::to_string(npos) + " positional arguments but " +
           std::to_string(nargs) + " were given";
    return false;
  }
  if (kwnames) {
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; ++k) {
      const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
      int idx = fs.find_arg(key);
      // PyTorch names the first argument `input` in the function form.
      if (idx < 0 && std::string(key) == "input" && !fs.args.empty() && fs.args[0].name == "self")
        idx = 0;
      // NumPy's spellings, which torch's parser accepts too: axis for dim,
      // keepdims for keepdim (x.sum(axis=0, keepdims=True)).
      if (idx < 0 && std::string(key) == "axis") idx = fs.find_arg("dim");
      if (idx < 0 && std::string(key) == "keepdims") idx = fs.find_arg("keepdim");
      if (idx < 0) {
        *why = std::string("got an unexpected keyword argument '") + key + "'";
        return false;
      }
      if (filled[idx]) {
        *why = std::string("got multiple values for argument '") + key + "'";
        return false;
      }
      PyObject* o = args[nargs + k];
      if (!convert(o, fs.args[idx], idx == 0, &stack[idx])) {
        *why = "argument '" + fs.args[idx].name + "' must be " + arg_type_name(fs.args[idx].type) +
               ", not " + py_type_name(o);
        return false;
      }
      if (loose && loose_bool(o, fs.args[idx])) ++*loose;
      filled[idx] = true;
    }
  }
  for (size_t i = 0; i < nparams; ++i) {
    if (filled[i]) continue;
    if (!fs.args[i].has_default) {
      *why = "missing required argument '" + fs.args[i].name + "'";
      return false;
    }
    stack[i] = fs.args[i].default_value;
  }
  return true;
}

PyObject* convert_result(const OpHandle& op, Stack& stack);

PyObject* structseq_for(const OpHandle& op) {
  // torch.return_types-style named tuples, one type per op.
  static std::map<std::string, PyTypeObject*> types;
  const auto& rets = op.schema().returns;
  auto it = types.find(op.schema().name);
  if (it != types.end()) return reinterpret_cast<PyObject*>(it->second);
  auto* fields = new PyStructSequence_Field[rets.size() + 1];
  for (size_t i = 0; i < rets.size(); ++i) {
    fields[i].name = strdup(rets[i].name.c_str());
    fields[i].doc = nullptr;
  }
  fields[rets.size()] = {nullptr, nullptr};
  auto* desc = new PyStructSequence_Desc{strdup(("ignis.return_types." + op.schema().name).c_str()),
                                         nullptr, fields, static_cast<int>(rets.size())};
  PyTypeObject* t = PyStructSequence_NewType(desc);
  types[op.schema().name] = t;
  return reinterpret_cast<PyObject*>(t);
}

PyObject* one_result(const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::None: Py_RETURN_NONE;
    case IValue::Tag::Tensor: return wrap(v.to_tensor());
    case IValue::Tag::Int: return PyLong_FromLongLong(v.to_int());
    case IValue::Tag::Double: return PyFloat_FromDouble(v.to_double());
    case IValue::Tag::Bool: return PyBool_FromLong(v.to_bool());
    case IValue::Tag::TensorList: {
      const auto& l = v.to_tensor_list();
      PyObject* tup = PyTuple_New(static_cast<Py_ssize_t>(l.size()));
      for (size_t i = 0; i < l.size(); ++i) PyTuple_SET_ITEM(tup, i, wrap(l[i]));
      return tup;
    }
    case IValue::Tag::IntList: {
      const auto& l = v.to_int_list();
      PyObject* tup = PyTuple_New(static_cast<Py_ssize_t>(l.size()));
      for (size_t i = 0; i < l.size(); ++i) PyTuple_SET_ITEM(tup, i, PyLong_FromLongLong(l[i]));
      return tup;
    }
    default:
      PyErr_Format(PyExc_RuntimeError, "cannot return a %s to Python", v.tag_name());
      return nullptr;
  }
}

PyObject* convert_result(const OpHandle& op, Stack& stack) {
  const auto& rets = op.schema().returns;
  if (rets.empty()) Py_RETURN_NONE;
  if (rets.size() == 1) return one_result(stack[0]);
  bool named = !rets[0].name.empty();
  PyObject* tup = named ? PyStructSequence_New(reinterpret_cast<PyTypeObject*>(structseq_for(op)))
                        : PyTuple_New(static_cast<Py_ssize_t>(rets.size()));
  for (size_t i = 0; i < rets.size(); ++i) {
    PyObject* r = one_result(stack[i]);
    if (!r) {
      Py_DECREF(tup);
      return nullptr;
    }
    if (named) PyStructSequence_SET_ITEM(tup, i, r);
    else PyTuple_SET_ITEM(tup, i, r);
  }
  return tup;
}

std::string signature_text(const FunctionSchema& fs) {
  std::string s = "(";
  bool kw = false;
  for (size_t i = 0; i < fs.args.size(); ++i) {
    const Argument& a = fs.args[i];
    if (i) s += ", ";
    if (a.kwarg_only && !kw) {
      s += "*, ";
      kw = true;
    }
    s += std::string(arg_type_name(a.type)) + " " + a.name;
    if (a.has_default) s += "=" + a.default_value.repr();
  }
  return s + ")";
}

// Note [Overload resolution]
// An op's overloads are tried in declaration order. The first one that takes
// the arguments with no loose match wins. A loose match is a Python bool
// bound to a parameter that is no bool: PyTorch's argument parser accepts a
// bool for a Scalar or a float (torch.full((2,), True), x.fill_(False),
// dropout(x, True)), and so does ignis, but when a later overload takes that bool as a
// bool, that overload is meant: elu(x, 1.0, False) is elu.functional's
// inplace=False, not elu's scale=0 (which silently returned zeros). An
// overload with loose matches is used only when no overload matches without
// one (the first such). PyTorch orders its overloads by type (torchgen's
// sort_overloads) and takes the first match; this ranking is ignis's, so that
// declaration order cannot bind a bool to a number when a bool parameter
// exists. An int or int[] parameter never takes a bool at all (as_int), as in
// PyTorch.
//
// Returns the overload and leaves its arguments in `stack`; null when none
// matches, with the first overload's reason in *first_why.
const OpHandle* resolve(const std::vector<const OpHandle*>& overloads, PyObject* const* args,
                        Py_ssize_t nargs, PyObject* kwnames, Stack& stack,
                        std::string* first_why) {
  const OpHandle* fallback = nullptr;
  Stack fallback_stack;
  for (const OpHandle* h : overloads) {
    std::string why;
    int loose = 0;
    if (parse(h->schema(), args, nargs, kwnames, stack, &why, &loose)) {
      if (loose == 0) return h;
      if (!fallback) {
        fallback = h;
        fallback_stack = std::move(stack);
        stack = Stack();
      }
      continue;
    }
    if (first_why && first_why->empty()) *first_why = why;
  }
  if (fallback) stack = std::move(fallback_stack);
  return fallback;
}

PyObject* op_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames);

// The position of keyword `name` among kwnames (-1: absent).
Py_ssize_t keyword_at(PyObject* kwnames, const char* name) {
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k)
    if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), name) == 0) return k;
  return -1;
}

// A vectorcall's arguments without keyword `at`, for calling on without it.
struct WithoutKeyword {
  std::vector<PyObject*> args;
  PyRef names;  // the other keywords' names (a tuple, possibly empty)
  WithoutKeyword(PyObject* const* a, Py_ssize_t nargs, PyObject* kwnames, Py_ssize_t at)
      : args(a, a + nargs), names(PyTuple_New(PyTuple_GET_SIZE(kwnames) - 1)) {
    for (Py_ssize_t k = 0, j = 0; k < PyTuple_GET_SIZE(kwnames); ++k) {
      if (k == at) continue;
      PyObject* key = PyTuple_GET_ITEM(kwnames, k);
      Py_INCREF(key);
      PyTuple_SET_ITEM(names.p, j++, key);
      args.push_back(a[nargs + k]);
    }
  }
  PyObject* kwnames() const { return PyTuple_GET_SIZE(names.p) ? names.p : nullptr; }
};

// Factories take PyTorch's `requires_grad=` keyword. It is not part of their
// schemas: the call runs without it and autograd flags the result.
// Returns null with no error set when `requires_grad` is not among kwnames.
PyObject* factory_with_requires_grad(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                     PyObject* kwnames) {
  auto* op = reinterpret_cast<PyOp*>(self);
  const OpDef* d = op->overloads->empty() ? nullptr : (*op->overloads)[0]->def();
  if (!d || d->category != OpCategory::Creation) return nullptr;
  const Py_ssize_t at = keyword_at(kwnames, "requires_grad");
  if (at < 0) return nullptr;
  int on = PyObject_IsTrue(args[nargs + at]);
  if (on < 0) return nullptr;
  WithoutKeyword rest(args, nargs, kwnames, at);
  PyObject* out = op_vectorcall(self, rest.args.data(), static_cast<size_t>(nargs), rest.kwnames());
  if (out && on && is_tensor(out)) {
    try {
      autograd::set_requires_grad(unwrap(out), true);
    } catch (...) {
      Py_DECREF(out);
      set_python_error();
      return nullptr;
    }
  }
  return out;
}

// Factories take PyTorch's `layout=` and `pin_memory=` keywords, outside
// their schemas too: ignis stores strided tensors only, so a layout is None or
// ignis.strided (a sparse one is refused by name), and pin_memory=True pins
// the result (ignis.cuda's page-locked memory; an error without a GPU, as
// torch's). Returns null with no error set when neither is among kwnames.
PyObject* factory_layout_and_pinning(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                     PyObject* kwnames) {
  auto* op = reinterpret_cast<PyOp*>(self);
  const OpDef* d = op->overloads->empty() ? nullptr : (*op->overloads)[0]->def();
  if (!d || d->category != OpCategory::Creation) return nullptr;
  if (const Py_ssize_t at = keyword_at(kwnames, "layout"); at >= 0) {
    PyObject* l = args[nargs + at];
    if (l != Py_None && l != strided_layout()) {
      if (!is_layout(l))
        return PyErr_Format(PyExc_TypeError, "%U(): argument 'layout' must be ignis.layout, "
                            "not %s", op->name, Py_TYPE(l)->tp_name);
      PyRef r(PyObject_Repr(l));
      return PyErr_Format(PyExc_NotImplementedError, "%U(): layout=%U is not supported: ignis "
                          "stores strided tensors only", op->name, r.p);
    }
    WithoutKeyword rest(args, nargs, kwnames, at);
    return op_vectorcall(self, rest.args.data(), static_cast<size_t>(nargs), rest.kwnames());
  }
  const Py_ssize_t at = keyword_at(kwnames, "pin_memory");
  if (at < 0) return nullptr;
  int pin = PyObject_IsTrue(args[nargs + at]);
  if (pin < 0) return nullptr;
  WithoutKeyword rest(args, nargs, kwnames, at);
  PyObject* out = op_vectorcall(self, rest.args.data(), static_cast<size_t>(nargs), rest.kwnames());
  if (!out || !pin || !is_tensor(out)) return out;
  PyObject* pinned = PyObject_CallMethod(out, "pin_memory", nullptr);
  Py_DECREF(out);
  return pinned;
}

// Random ops declared random_with_generator() take PyTorch's `generator=`
// keyword (OpDef::takes_generator). It is not part of their
// schemas either: the call runs under a GeneratorGuard, so the op's kernels
// (and the ops a composite calls) draw from that generator; None draws from
// the default one. Returns null with no error set when `generator` is not
// among kwnames.
PyObject* random_with_generator(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                PyObject* kwnames) {
  auto* op = reinterpret_cast<PyOp*>(self);
  bool takes = false;
  for (const OpHandle* h : *op->overloads) takes = takes || (h->def() && h->def()->takes_generator);
  if (!takes) return nullptr;
  const Py_ssize_t at = keyword_at(kwnames, "generator");
  if (at < 0) return nullptr;
  PyObject* g = args[nargs + at];
  if (g != Py_None && !is_generator(g)) {
    PyErr_Format(PyExc_TypeError, "%U(): argument 'generator' must be ignis.Generator, not %s",
                 op->name, Py_TYPE(g)->tp_name);
    return nullptr;
  }
  WithoutKeyword rest(args, nargs, kwnames, at);
  GeneratorGuard guard(g == Py_None ? nullptr : generator_of(g));
  return op_vectorcall(self, rest.args.data(), static_cast<size_t>(nargs), rest.kwnames());
}

// Writes one result into its `out=` tensor, as PyTorch does: same device, a
// dtype the result can be cast to, resized to the result's shape (with a
// warning when it held elements), and no autograd through it.
void write_out(const char* name, PyObject* result, PyObject* out) {
  const Tensor& r = unwrap(result);
  const Tensor& o = unwrap(out);
  if (autograd::grad_enabled() && (autograd::requires_grad(r) || autograd::requires_grad(o)))
    throw Error(ErrorKind::Runtime,
                std::string(name) + "(): functions with out=... arguments don't support "
                "automatic differentiation, but one of the arguments requires grad.");
  IGNIS_CHECK(o.user_device() == r.user_device(), "Expected out tensor to have device ",
              r.user_device().str(), ", but got ", o.user_device().str(), " instead");
  IGNIS_CHECK(can_cast(r.dtype(), o.dtype()), "result type ", scalar_type_name(r.dtype()),
              " can't be cast to the desired output type ", scalar_type_name(o.dtype()));
  if (o.sizes() != r.sizes()) {
    if (o.numel() != 0) {
      std::string msg = "An output with one or more elements was resized since it had shape " +
                        o.shape_str() + ", which does not match the required output shape " +
                        r.shape_str() + ". Pass an out tensor with zero elements to resize it "
                        "without this warning.";
      if (PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 1) < 0) throw PythonErrorAlreadySet();
    }
    resize_tensor(o, r.sizes());
  }
  PyObject* done = PyObject_CallMethod(out, "copy_", "O", result);
  if (!done) throw PythonErrorAlreadySet();
  Py_DECREF(done);
}

// Whether `out=` applies to an overload: it returns new tensors only (no
// views, no in-place writes, no lists) and has no `out` of its own.
bool takes_out(const FunctionSchema& fs) {
  for (const Argument& a : fs.args)
    if (a.name == "out" || a.is_write) return false;
  if (fs.returns.empty()) return false;
  for (const Return& r : fs.returns)
    if (!r.alias_set.empty() || r.type != ArgType::Tensor) return false;
  return true;
}

// PyTorch's `out=` keyword, accepted by every overload that takes_out: the
// op runs as without it and its results are copied into `out` (a tensor,
// or a tuple of one per result), which is returned. Returns null with no
// error set when `out` is not among kwnames.
PyObject* call_with_out(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames) {
  auto* op = reinterpret_cast<PyOp*>(self);
  const Py_ssize_t at = keyword_at(kwnames, "out");
  if (at < 0) return nullptr;
  for (const OpHandle* h : *op->overloads)  // an op declaring `out` parses it itself
    for (const Argument& a : h->schema().args)
      if (a.name == "out") return nullptr;
  PyObject* out = args[nargs + at];
  WithoutKeyword rest(args, nargs, kwnames, at);
  // The overload is found without the keywords no schema declares either
  // (generator=, requires_grad=, layout=, pin_memory=); the call below handles them.
  std::vector<PyObject*> plain(args, args + nargs), plain_keys;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    if (k == at || PyUnicode_CompareWithASCIIString(key, "generator") == 0 ||
        PyUnicode_CompareWithASCIIString(key, "requires_grad") == 0 ||
        PyUnicode_CompareWithASCIIString(key, "layout") == 0 ||
        PyUnicode_CompareWithASCIIString(key, "pin_memory") == 0)
      continue;
    plain_keys.push_back(key);
    plain.push_back(args[nargs + k]);
  }
  const Py_ssize_t nplain = static_cast<Py_ssize_t>(plain_keys.size());
  PyRef plain_names(PyTuple_New(nplain));
  for (Py_ssize_t i = 0; i < nplain; ++i) {
    Py_INCREF(plain_keys[size_t(i)]);
    PyTuple_SET_ITEM(plain_names.p, i, plain_keys[size_t(i)]);
  }
  PyObject* rest_names = rest.kwnames();
  const char* name = PyUnicode_AsUTF8(op->name);
  Stack stack;
  const OpHandle* matched = resolve(*op->overloads, plain.data(), nargs,
                                    nplain ? plain_names.p : nullptr, stack, nullptr);
  // No overload takes these arguments: the usual call reports them.
  if (!matched) return op_vectorcall(self, rest.args.data(), static_cast<size_t>(nargs), rest_names);
  if (!takes_out(matched->schema()))
    return PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument 'out'", name);
  const size_t nret = matched->schema().returns.size();
  std::vector<PyObject*> outs;
  if (out != Py_None) {
    if (is_tensor(out)) {
      outs.push_back(out);
    } else if (PyTuple_Check(out) || PyList_Check(out)) {
      for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(out); ++i)
        outs.push_back(PySequence_Fast_GET_ITEM(out, i));
    }
    bool ok = outs.size() == nret;
    for (PyObject* o : outs) ok &= is_tensor(o);
    if (!ok)
      return PyErr_Format(PyExc_TypeError, "%s(): argument 'out' must be %s, not %s", name,
                          nret == 1 ? "Tensor" : "a tuple of Tensors, one per result",
                          Py_TYPE(out)->tp_name);
  }
  PyRef result(op_vectorcall(self, rest.args.data(), static_cast<size_t>(nargs), rest_names));
  if (out == Py_None) return result.release();
  if (nret == 1) {
    write_out(name, result.p, outs[0]);
  } else {
    for (size_t i = 0; i < nret; ++i)
      write_out(name, PyTuple_GET_ITEM(result.p, Py_ssize_t(i)), outs[i]);
  }
  Py_INCREF(out);
  return out;
}

PyObject* op_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* op = reinterpret_cast<PyOp*>(self);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  try {
    // The keywords no schema declares, each taken off before the call.
    if (kwnames && PyTuple_GET_SIZE(kwnames) > 0) {
      PyObject* r = call_with_out(self, args, nargs, kwnames);
      if (r || PyErr_Occurred()) return r;
      r = factory_with_requires_grad(self, args, nargs, kwnames);
      if (r || PyErr_Occurred()) return r;
      r = factory_layout_and_pinning(self, args, nargs, kwnames);
      if (r || PyErr_Occurred()) return r;
      r = random_with_generator(self, args, nargs, kwnames);
      if (r || PyErr_Occurred()) return r;
    }
    Stack stack;
    stack.reserve(8);
    std::string first_why;
    if (const OpHandle* h = resolve(*op->overloads, args, nargs, kwnames, stack, &first_why)) {
      h->call(stack);
      if (h->def() && h->def()->python_returns_self && nargs > 0) {
        Py_INCREF(args[0]);  // the caller's object itself (torch returns the same list)
        return args[0];
      }
      return convert_result(*h, stack);
    }
    // No overload matched: list them all, as PyTorch does.
    std::string msg = std::string(PyUnicode_AsUTF8(op->name)) +
                      "() received an invalid combination of arguments - got (";
    for (Py_ssize_t i = 0; i < nargs; ++i) msg += std::string(i ? ", " : "") + py_type_name(args[i]);
    if (kwnames) {
      for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k)
        msg += std::string(nargs + k ? ", " : "") + PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k)) +
               "=" + py_type_name(args[nargs + k]);
    }
    msg += "), but expected ";
    if (op->overloads->size() == 1) {
      msg += signature_text((*op->overloads)[0]->schema()) + ": " + first_why;
    } else {
      msg += "one of:";
      for (const OpHandle* h : *op->overloads) msg += "\n * " + signature_text(h->schema());
    }
    PyErr_SetString(PyExc_TypeError, msg.c_str());
    return nullptr;
  } catch (const PythonErrorAlreadySet&) {
    return nullptr;
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyObject* op_descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (!obj || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

PyObject* op_repr(PyObject* self) {
  return PyUnicode_FromFormat("<ignis op %U>", reinterpret_cast<PyOp*>(self)->name);
}

PyObject* op_get_name(PyObject* self, void*) {
  PyObject* n = reinterpret_cast<PyOp*>(self)->name;
  Py_INCREF(n);
  return n;
}
PyObject* op_get_schemas(PyObject* self, void*) {
  auto* op = reinterpret_cast<PyOp*>(self);
  PyObject* l = PyList_New(0);
  for (const OpHandle* h : *op->overloads) {
    PyObject* s = PyUnicode_FromString(h->schema().str().c_str());
    PyList_Append(l, s);
    Py_DECREF(s);
  }
  return l;
}
PyObject* op_get_doc(PyObject* self, void*) {
  auto* op = reinterpret_cast<PyOp*>(self);
  std::string doc;
  if (op->alias_of) doc = std::string("alias of ") + PyUnicode_AsUTF8(op->alias_of) + "\n";
  for (const OpHandle* h : *op->overloads) {
    doc += h->schema().str() + "\n";
    if (h->def() && !h->def()->doc.empty()) doc += "    " + h->def()->doc + "\n";
  }
  return PyUnicode_FromString(doc.c_str());
}
PyObject* op_get_category(PyObject* self, void*) {
  auto* op = reinterpret_cast<PyOp*>(self);
  const OpHandle* h = (*op->overloads)[0];
  return PyUnicode_FromString(h->def() ? category_name(h->def()->category) : "other");
}

PyObject* op_get_alias_of(PyObject* self, void*) {
  PyObject* a = reinterpret_cast<PyOp*>(self)->alias_of;
  if (!a) Py_RETURN_NONE;
  Py_INCREF(a);
  return a;
}

// "random" or "uninitialized" when some overload is declared so; else
// "deterministic".
PyObject* op_get_determinism(PyObject* self, void*) {
  const char* r = "deterministic";
  for (const OpHandle* h : *reinterpret_cast<PyOp*>(self)->overloads) {
    if (!h->def()) continue;
    if (h->def()->determinism == Determinism::Random) r = "random";
    else if (h->def()->determinism == Determinism::Uninitialized) r = "uninitialized";
  }
  return PyUnicode_FromString(r);
}

// The scalar function (kernels/scalar_ops.h) of the first overload naming one.
PyObject* op_get_scalar_name(PyObject* self, void*) {
  for (const OpHandle* h : *reinterpret_cast<PyOp*>(self)->overloads)
    if (h->def() && !h->def()->scalar.empty())
      return PyUnicode_FromString(h->def()->scalar.c_str());
  Py_RETURN_NONE;
}

// Whether every overload runs on CUDA tensors: it declares a CUDA kernel, is
// one kernel for every backend (views, composites), or has a decomposition
// (which runs there in its place). An op without any raises
// NotImplementedError naming itself and the CUDA backend there.
PyObject* op_get_has_cuda_kernel(PyObject* self, void*) {
  for (const OpHandle* h : *reinterpret_cast<PyOp*>(self)->overloads) {
    const OpDef* d = h->def();
    if (d && !d->cuda && !d->any_backend && !d->decomposition) Py_RETURN_FALSE;
  }
  Py_RETURN_TRUE;
}

PyGetSetDef op_getset[] = {
    {"__name__", op_get_name, nullptr, nullptr, nullptr},
    {"__qualname__", op_get_name, nullptr, nullptr, nullptr},
    {"__doc__", op_get_doc, nullptr, nullptr, nullptr},
    {"schemas", op_get_schemas, nullptr, "The schema of each overload.", nullptr},
    {"category", op_get_category, nullptr, nullptr, nullptr},
    {"determinism", op_get_determinism, nullptr,
     "'random', 'uninitialized' or 'deterministic', as the op is declared.", nullptr},
    {"scalar_name", op_get_scalar_name, nullptr,
     "The name of the op's scalar function in kernels/scalar_ops.h (None: it has none).",
     nullptr},
    {"has_cuda_kernel", op_get_has_cuda_kernel, nullptr,
     "Whether every overload runs on CUDA tensors (a CUDA kernel, or one for every backend).",
     nullptr},
    {"alias_of", op_get_alias_of, nullptr,
     "The name of the op this name is an alias of (None: the op's own name).", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// ignis.ops.add.Tensor, ignis.ops.relu.default: one overload as a callable
// (torch.ops.aten.add.Tensor), which AOT graphs' generated code calls.
// Overload names are matched before the generic attributes, so that such a
// call raises and catches no AttributeError.
PyObject* op_getattro(PyObject* self, PyObject* name) {
  auto* op = reinterpret_cast<PyOp*>(self);
  const char* s = PyUnicode_AsUTF8(name);
  if (!s) return nullptr;
  if (s[0] != '_') {
    for (const OpHandle* h : *op->overloads) {
      // (random_.from is also random_.from_, the name printed code uses)
      const std::string& ov = h->schema().overload;
      if (h->schema().python_overload() != s && (ov.empty() || ov != s)) continue;
      if (!op->overload_objects && !(op->overload_objects = PyDict_New())) return nullptr;
      if (PyObject* hit = PyDict_GetItemWithError(op->overload_objects, name)) {
        Py_INCREF(hit);
        return hit;
      }
      if (PyErr_Occurred()) return nullptr;
      PyObject* o = op_overload_object(h);
      if (!o || PyDict_SetItem(op->overload_objects, name, o) < 0) {
        Py_XDECREF(o);
        return nullptr;
      }
      return o;
    }
  }
  return PyObject_GenericGetAttr(self, name);
}

PyMemberDef op_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(PyOp, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyObject* make_op(const std::string& name, std::vector<const OpHandle*> overloads,
                  const std::string& alias_of = "") {
  PyObject* o = OpType->tp_alloc(OpType, 0);
  if (!o) return nullptr;
  auto* op = reinterpret_cast<PyOp*>(o);
  op->vectorcall = op_vectorcall;
  op->overloads = new std::vector<const OpHandle*>(std::move(overloads));
  op->name = PyUnicode_FromString(name.c_str());
  op->alias_of = alias_of.empty() ? nullptr : PyUnicode_FromString(alias_of.c_str());
  op->overload_objects = nullptr;
  return o;
}

}  // namespace

bool parse_op_args(const FunctionSchema& fs, PyObject* const* args, Py_ssize_t nargs,
                   PyObject* kwnames, Stack& stack, std::string* why) {
  return parse(fs, args, nargs, kwnames, stack, why);
}

PyObject* op_results(const OpHandle& op, Stack& stack) { return convert_result(op, stack); }

bool init_op_type(PyObject* module) {
  static PyType_Slot slots[] = {
      {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
      {Py_tp_descr_get, reinterpret_cast<void*>(op_descr_get)},
      {Py_tp_repr, reinterpret_cast<void*>(op_repr)},
      {Py_tp_getset, op_getset},
      {Py_tp_getattro, reinterpret_cast<void*>(op_getattro)},
      {Py_tp_members, op_members},
      {0, nullptr},
  };
  static PyType_Spec spec = {
      "ignis._C.Op", sizeof(PyOp), 0,
      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR, slots};
  PyObject* t = PyType_FromSpec(&spec);
  if (!t) return false;
  OpType = reinterpret_cast<PyTypeObject*>(t);
  Py_INCREF(t);
  return PyModule_AddObject(module, "Op", t) == 0;
}

PyObject* build_op_table() {
  // Group overloads by Python name; an op's variants are the union of its
  // overloads' variants.
  std::map<std::string, std::pair<std::vector<const OpHandle*>, uint8_t>> groups;
  std::vector<std::string> order;
  for (const auto& h : Dispatcher::get().ops()) {
    const OpDef* d = h->def();
    std::string name = d && !d->python_name.empty() ? d->python_name : h->schema().name;
    if (!groups.count(name)) order.push_back(name);
    auto& g = groups[name];
    g.first.push_back(h.get());
    g.second |= d ? d->variants : kFunction;
  }
  // An alias is the same op under another name: an object of its own (so
  // that it prints, and captured graphs record it, as the name the user
  // wrote, as torch.multiply does) that calls the op's own overloads.
  std::map<std::string, std::string> alias_of;
  for (const auto& [alias, target] : Dispatcher::get().aliases()) {
    if (!groups.count(target)) continue;
    order.push_back(alias);
    groups[alias] = groups[target];
    alias_of[alias] = target;
  }
  PyObject* dict = PyDict_New();
  for (const auto& name : order) {
    auto& g = groups[name];
    PyObject* op = make_op(name, g.first, alias_of.count(name) ? alias_of[name] : "");
    PyObject* entry = Py_BuildValue("(NOO)", op, (g.second & kFunction) ? Py_True : Py_False,
                                    (g.second & kMethod) ? Py_True : Py_False);
    PyDict_SetItemString(dict, name.c_str(), entry);
    Py_DECREF(entry);
  }
  return dict;
}

bool is_number(PyObject* o) {
  if (PyFloat_Check(o) || PyLong_Check(o)) return true;  // bool is a PyLong
  if (is_tensor(o) || PyUnicode_Check(o) || PySequence_Check(o)) return false;
  // NumPy scalars: have __float__ or __index__ and a dtype.
  PyTypeObject* t = Py_TYPE(o);
  return t->tp_as_number && (t->tp_as_number->nb_float || t->tp_as_number->nb_index) &&
         PyObject_HasAttrString(o, "dtype");
}

Scalar to_scalar(PyObject* o) {
  if (PyBool_Check(o)) return Scalar(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    IGNIS_CHECK(!overflow, "Python int too large to convert to int64");
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(o)) return Scalar(PyFloat_AS_DOUBLE(o));
  // NumPy scalar: go by its kind.
  PyObject* dt = PyObject_GetAttrString(o, "dtype");
  PyObject* kind = dt ? PyObject_GetAttrString(dt, "kind") : nullptr;
  Py_XDECREF(dt);
  std::string k = kind && PyUnicode_Check(kind) ? PyUnicode_AsUTF8(kind) : "f";
  Py_XDECREF(kind);
  PyErr_Clear();
  if (k == "b") return Scalar(PyObject_IsTrue(o) == 1);
  if (k == "i" || k == "u") {
    PyObject* i = PyNumber_Index(o);
    int64_t v = i ? PyLong_AsLongLong(i) : 0;
    Py_XDECREF(i);
    return Scalar(v);
  }
  return Scalar(PyFloat_AsDouble(o));
}

}  // namespace ignis::py

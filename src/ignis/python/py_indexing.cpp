// Tensor indexing from Python: t[idx] and t[idx] = value, with PyTorch's
// semantics (NumPy's rules plus PyTorch's legacy reading of short lists).
//
// The index becomes a tuple of items. Basic items (ints, slices, None,
// Ellipsis) are applied one by one as views (select, slice, unsqueeze), so a
// basic index returns a view. Advanced items (integer or boolean tensors,
// sequences, Python bools) are collected into a Tensor?[] list aligned with
// the dims of that view, and one call of `index` (or `index_put_`) applies
// them together: broadcasting of the index tensors and the placement of the
// result dims (adjacent or not) are that op's business.
#include <cstring>

#include "ignis/dispatch/dispatcher.h"
#include "ignis/kernels/cpu/index_kernels.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

namespace {

OpRef select_op("select.int");
OpRef slice_op("slice.Tensor");
OpRef unsqueeze_op("unsqueeze");
OpRef view_op("view");
OpRef expand_op("expand");
OpRef index_op("index.Tensor");
OpRef index_put_op("index_put_");
OpRef copy_op("copy_");
OpRef fill_op("fill_");
OpRef to_op("to.dtype");

// One item of an index tuple, converted from Python.
struct Item {
  enum class Kind { Int, Slice, None, Ellipsis, Bool, Tensor } kind;
  int64_t value = 0;             // Int: the index; Bool: 0 or 1
  PyObject* slice = nullptr;     // Slice: borrowed
  Tensor tensor;                 // Tensor: an index tensor (integer, or a mask)
};

bool is_mask(const Tensor& t) {
  return t.dtype() == ScalarType::Bool || t.dtype() == ScalarType::UInt8;
}

bool is_ndarray(PyObject* o) { return std::strcmp(Py_TYPE(o)->tp_name, "numpy.ndarray") == 0; }

// A list (or array) used as an index: a bool/uint8 tensor stays a mask; any
// other data becomes int64, as PyTorch's indexing_tensor_from_data does.
Tensor sequence_to_tensor(PyObject* seq) {
  static PyObject* tensor_fn = nullptr;
  if (!tensor_fn) {
    PyObject* mod = PyImport_ImportModule("ignis");
    if (!mod) throw PythonErrorAlreadySet{};
    tensor_fn = PyObject_GetAttrString(mod, "tensor");
    Py_DECREF(mod);
    if (!tensor_fn) throw PythonErrorAlreadySet{};
  }
  PyObject* r = PyObject_CallOneArg(tensor_fn, seq);
  if (!r) throw PythonErrorAlreadySet{};
  Tensor t = unwrap(r);
  Py_DECREF(r);
  // An empty list has no element to say it holds bools: it is an empty index.
  bool empty_list = t.numel() == 0 && !is_ndarray(seq);
  if ((!is_mask(t) || empty_list) && t.dtype() != ScalarType::Int64)
    t = to_op.tensor(t, ScalarType::Int64);
  return t;
}

Item to_item(PyObject* o) {
  Item it{Item::Kind::None};
  if (o == Py_None) return it;
  if (o == Py_Ellipsis) {
    it.kind = Item::Kind::Ellipsis;
    return it;
  }
  if (PyBool_Check(o)) {
    it.kind = Item::Kind::Bool;
    it.value = o == Py_True;
    return it;
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    it.kind = Item::Kind::Int;
    it.value = PyLong_AsLongLongAndOverflow(o, &overflow);
    IGNIS_CHECK_INDEX(!overflow, "index is out of bounds (does not fit in int64)");
    return it;
  }
  if (PySlice_Check(o)) {
    it.kind = Item::Kind::Slice;
    it.slice = o;
    return it;
  }
  if (is_tensor(o)) {
    const Tensor& t = unwrap(o);
    // A 0-dim integer tensor selects like an int (a view); a 0-dim mask acts
    // like a Python bool.
    if (t.dim() == 0 && is_integral(t.dtype(), true)) {
      it.kind = is_mask(t) ? Item::Kind::Bool : Item::Kind::Int;
      it.value = is_mask(t) ? t.item_int() != 0 : t.item_int();
      return it;
    }
    it.kind = Item::Kind::Tensor;
    it.tensor = t;
    return it;
  }
  if (PyUnicode_Check(o) || PyBytes_Check(o))
    IGNIS_FAIL_KIND(Type, "new(): invalid data type '", Py_TYPE(o)->tp_name, "'");
  if (PySequence_Check(o)) {
    it.kind = Item::Kind::Tensor;
    it.tensor = sequence_to_tensor(o);
    return it;
  }
  if (PyIndex_Check(o)) {  // NumPy integers and other __index__ objects
    PyObject* i = PyNumber_Index(o);
    if (i) {
      it.kind = Item::Kind::Int;
      it.value = PyLong_AsLongLong(i);
      Py_DECREF(i);
      if (!PyErr_Occurred()) return it;
    }
    PyErr_Clear();
  }
  IGNIS_FAIL_KIND(Index, "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                  "Variables are valid indices (got ", Py_TYPE(o)->tp_name, ")");
}

// PyTorch's treatSequenceAsTuple: a short non-tuple sequence holding a
// slice, None, Ellipsis, tensor or sequence is read as a tuple (x[[0, [1]]]
// is x[0, [1]]), with a deprecation warning.
bool sequence_as_tuple(PyObject* index) {
  if (PyTuple_Check(index)) return true;
  if (is_tensor(index) || is_ndarray(index) || PyUnicode_Check(index) || PyBytes_Check(index) ||
      !PySequence_Check(index))
    return false;
  Py_ssize_t n = PySequence_Size(index);
  if (n < 0) {
    PyErr_Clear();
    return false;
  }
  if (n >= 32) return false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* o = PySequence_GetItem(index, i);
    if (!o) {
      PyErr_Clear();
      return false;
    }
    bool multi = is_tensor(o) || PySequence_Check(o) || PySlice_Check(o) || o == Py_None ||
                 o == Py_Ellipsis;
    Py_DECREF(o);
    if (multi) {
      if (PyErr_WarnEx(PyExc_UserWarning, "Using a non-tuple sequence for multidimensional "
                       "indexing is deprecated; use x[tuple(seq)] instead of x[seq].", 1) < 0)
        throw PythonErrorAlreadySet{};
      return true;
    }
  }
  return false;
}

std::vector<Item> to_items(PyObject* index, bool* was_tuple) {
  std::vector<Item> items;
  *was_tuple = sequence_as_tuple(index);
  if (!*was_tuple) {
    items.push_back(to_item(index));
    return items;
  }
  PyObject* seq = PySequence_Tuple(index);
  if (!seq) throw PythonErrorAlreadySet{};
  try {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq); ++i)
      items.push_back(to_item(PyTuple_GET_ITEM(seq, i)));
  } catch (...) {
    Py_DECREF(seq);
    throw;
  }
  // Slices stay borrowed: `index` (a tuple, or the list copied) holds them.
  Py_DECREF(seq);
  return items;
}

// A 1-D int64 index standing for a Python bool: [0] for True (the new dim
// of size 1 is kept), [] for False (it becomes empty).
Tensor bool_index(bool v) {
  Tensor t = empty_tensor({v ? 1 : 0}, ScalarType::Int64, Device(DeviceType::CPU));
  if (v) *t.data<int64_t>() = 0;
  return t;
}

struct Parsed {
  Tensor view;                  // self after the basic items
  std::vector<Tensor> indices;  // advanced indices aligned with view's dims
  bool advanced = false;
};

Parsed apply_items(const Tensor& self, const std::vector<Item>& items, bool was_tuple) {
  using K = Item::Kind;
  if (self.dim() == 0 && !was_tuple && !items.empty()) {
    IGNIS_CHECK_INDEX(items[0].kind != K::Int, "invalid index of a 0-dim tensor. Use "
                      "`tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a "
                      "0-dim tensor to a number");
    IGNIS_CHECK_INDEX(items[0].kind != K::Slice, "slice() cannot be applied to a 0-dim tensor.");
  }
  int64_t specified = 0;
  for (const Item& it : items) {
    if (it.kind == K::Int || it.kind == K::Slice) ++specified;
    else if (it.kind == K::Tensor) specified += is_mask(it.tensor) ? it.tensor.dim() : 1;
  }
  IGNIS_CHECK_INDEX(specified <= self.dim(), "too many indices for tensor of dimension ",
                    self.dim());
  Parsed p;
  p.view = self;
  int64_t dim = 0;
  for (const Item& it : items) {
    switch (it.kind) {
      case K::Int: {
        int64_t n = p.view.size(dim);
        IGNIS_CHECK_INDEX(it.value >= -n && it.value < n, "index ", it.value,
                          " is out of bounds for dimension ", dim, " with size ", n);
        p.view = select_op.tensor(p.view, dim, it.value);
        break;
      }
      case K::Slice: {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(it.slice, &start, &stop, &step) < 0) throw PythonErrorAlreadySet{};
        IGNIS_CHECK_VALUE(step > 0, "step must be greater than zero");
        p.view = slice_op.tensor(p.view, dim, int64_t(start), int64_t(stop), int64_t(step));
        p.indices.emplace_back();
        ++dim;
        break;
      }
      case K::None:
        p.view = unsqueeze_op.tensor(p.view, dim);
        p.indices.emplace_back();
        ++dim;
        break;
      case K::Ellipsis: {
        int64_t n = self.dim() - specified;
        for (int64_t i = 0; i < n; ++i) p.indices.emplace_back();
        dim += n;
        break;
      }
      case K::Bool:
        p.view = unsqueeze_op.tensor(p.view, dim);
        p.indices.push_back(bool_index(it.value != 0));
        p.advanced = true;
        ++dim;
        break;
      case K::Tensor:
        // A k-dim mask is one entry of the list covering k dims.
        p.indices.push_back(it.tensor);
        p.advanced = true;
        dim += is_mask(it.tensor) ? it.tensor.dim() : 1;
        break;
    }
  }
  while (!p.indices.empty() && !p.indices.back().defined()) p.indices.pop_back();
  return p;
}

Parsed parse(const Tensor& self, PyObject* index) {
  bool was_tuple = false;
  std::vector<Item> items = to_items(index, &was_tuple);
  return apply_items(self, items, was_tuple);
}

// A new view of all of self (x[...] is not x).
Tensor alias(const Tensor& self) {
  if (self.dim() == 0) return view_op.tensor(self, std::vector<int64_t>{});
  return slice_op.tensor(self, int64_t(0), None{}, None{}, int64_t(1));
}

// Leading dims of size 1 dropped (PyTorch's slicePrefix1sSize): a value of
// shape [1, 3] may be assigned to a [3] destination.
Tensor strip_leading_ones(const Tensor& v) {
  int64_t k = 0;
  while (k < v.dim() && v.sizes()[k] == 1) ++k;
  if (k == 0) return v;
  std::vector<int64_t> shape(v.sizes().begin() + k, v.sizes().end());
  return view_op.tensor(v, shape);
}

void copy_to(const Tensor& dst, const Tensor& src) {
  // x[1:] = x[:-1] would read what it has overwritten: PyTorch refuses it.
  IGNIS_CHECK(cpu::mem_overlap(dst, src) != cpu::MemOverlap::Partial, cpu::kOverlapMessage);
  if (dst.sizes() == src.sizes()) {
    copy_op.call(dst, src);
  } else if (src.dim() == 0 && src.device().is_cpu()) {
    fill_op.call(dst, src);
  } else {
    Tensor v = expand_op.tensor(strip_leading_ones(src), dst.sizes().vec());
    copy_op.call(dst, v);
  }
}

// PyTorch's legacy tensor type name: "ignis.FloatTensor", "ignis.LongTensor".
std::string tensor_type_name(ScalarType t) {
  return str("ignis.", scalar_type_name(t), "Tensor");
}

// The assigned value as a tensor: a Python number becomes a 0-dim tensor of
// self's dtype (converted as PyTorch converts it: 2.7 -> 2 for integers).
Tensor value_to_tensor(const Tensor& self, PyObject* v) {
  if (is_tensor(v)) return unwrap(v);
  if (is_number(v)) {
    Scalar s = to_scalar(v);
    return s.is_float() ? scalar_to_tensor(s.to_double(), self.dtype())
                        : scalar_to_tensor_int(s.to_int(), self.dtype());
  }
  IGNIS_FAIL_KIND(Type, "can't assign a ", Py_TYPE(v)->tp_name, " to a ",
                  tensor_type_name(self.dtype()));
}

PyObject* f_getitem(PyObject*, PyObject* args) {
  PyObject *self_o, *index;
  if (!PyArg_ParseTuple(args, "OO", &self_o, &index)) return nullptr;
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(is_tensor(self_o), "_getitem expects a Tensor");
  const Tensor& self = unwrap(self_o);
  Parsed p = parse(self, index);
  Tensor r;
  if (p.advanced) r = index_op.tensor(p.view, IValue::OptTensors{std::move(p.indices)});
  else if (p.view.is_same(self)) r = alias(self);
  else r = std::move(p.view);
  return wrap(std::move(r));
  IGNIS_PY_END(nullptr)
}

PyObject* f_setitem(PyObject*, PyObject* args) {
  PyObject *self_o, *index, *value_o;
  if (!PyArg_ParseTuple(args, "OOO", &self_o, &index, &value_o)) return nullptr;
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(is_tensor(self_o), "_setitem expects a Tensor");
  const Tensor& self = unwrap(self_o);
  Tensor value = value_to_tensor(self, value_o);
  Parsed p = parse(self, index);
  if (!p.advanced) {
    copy_to(p.view, value);
  } else {
    index_put_op.call(p.view, IValue::OptTensors{std::move(p.indices)}, strip_leading_ones(value),
                      false);
  }
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyMethodDef methods[] = {
    {"_getitem", f_getitem, METH_VARARGS, "self[index], with PyTorch's indexing rules."},
    {"_setitem", f_setitem, METH_VARARGS, "self[index] = value, with PyTorch's indexing rules."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_indexing(PyObject* module) { return PyModule_AddFunctions(module, methods) == 0; }

}  // namespace ignis::py

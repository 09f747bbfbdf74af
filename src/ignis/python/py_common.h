// Shared helpers of the CPython binding layer.
//
// Note [Ownership at the CPython boundary]
// Functions here follow CPython's conventions: "new reference" results must
// be released by the caller; "borrowed" arguments are not stolen. Each
// function's comment says which it is when it is not a plain PyObject* ->
// new-reference function.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>

#include "ignis/core/scalar.h"
#include "ignis/core/tensor.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/graph.h"

namespace ignis {
class Generator;  // kernels/cpu/random.h
}  // namespace ignis

namespace ignis::py {

// Translates the C++ exception in flight into the matching Python exception.
// Use inside catch(...).
void set_python_error();

#define IGNIS_PY_BEGIN try {
#define IGNIS_PY_END(retval)      \
  }                               \
  catch (...) {                   \
    ::ignis::py::set_python_error(); \
    return retval;                \
  }

// Raised when a Python error is already set and must propagate unchanged.
struct PythonErrorAlreadySet {};

// An owned reference that throws PythonErrorAlreadySet when made from null
// (the call that returned it set a Python error). Non-copyable; release()
// hands the reference on.
struct PyRef {
  PyObject* p;
  explicit PyRef(PyObject* o) : p(o) {
    if (!p) throw PythonErrorAlreadySet{};
  }
  ~PyRef() { Py_XDECREF(p); }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  PyObject* release() {
    PyObject* r = p;
    p = nullptr;
    return r;
  }
};

// --- Tensor -----------------------------------------------------------------
struct PyTensor {
  PyObject_HEAD
  Tensor tensor;
};
extern PyTypeObject* TensorBaseType;
// The Python class instances are created as (ignis.Tensor once registered).
extern PyTypeObject* TensorClass;
bool is_tensor(PyObject* o);
// Borrowed view of the Tensor inside a Python tensor object.
inline const Tensor& unwrap(PyObject* o) { return reinterpret_cast<PyTensor*>(o)->tensor; }
// New reference: the Python object for `t` (the same object each time for
// the same TensorImpl while that object lives). None for undefined.
PyObject* wrap(Tensor t);
PyObject* wrap_as(PyTypeObject* cls, Tensor t);
bool init_tensor_type(PyObject* module);

// --- dtype / device ----------------------------------------------------------
bool init_dtype_types(PyObject* module);
bool is_dtype(PyObject* o);
ScalarType dtype_of(PyObject* o);          // for objects where is_dtype() holds
PyObject* dtype_object(ScalarType t);      // borrowed
// Accepts ignis dtypes, Python's float/int/bool types and NumPy dtypes.
bool to_dtype(PyObject* o, ScalarType* out);
bool is_memory_format(PyObject* o);
MemoryFormat memory_format_of(PyObject* o);  // for objects where is_memory_format() holds
PyObject* memory_format_object(MemoryFormat f);  // borrowed
bool is_layout(PyObject* o);
PyObject* strided_layout();  // borrowed: ignis.strided
bool is_device(PyObject* o);
Device device_of(PyObject* o);
PyObject* make_device(Device d);           // new reference
// Accepts ignis.device, "cuda:0", or an int (a CUDA index).
bool to_device(PyObject* o, Device* out);

// --- ops -----------------------------------------------------------------------
bool init_op_type(PyObject* module);
// New reference: dict name -> (op object, is_function, is_method).
PyObject* build_op_table();
// Matches Python arguments to one schema as an op call does (Python numbers
// for tensors become wrapped numbers, defaults are filled in). False with
// the reason in *why on a mismatch.
bool parse_op_args(const FunctionSchema& fs, PyObject* const* args, Py_ssize_t nargs,
                   PyObject* kwnames, Stack& stack, std::string* why);
// New reference: an op's results on `stack` as an op call returns them.
PyObject* op_results(const OpHandle& op, Stack& stack);

// --- generators (py_generator.cpp): _C.Generator, _C.default_generator ----------
bool init_generator(PyObject* module);
bool is_generator(PyObject* o);
// Borrowed: the C++ generator of an object where is_generator() holds.
ignis::Generator* generator_of(PyObject* o);

// --- decompositions (py_decompose.cpp): _decompose, _decompose_trace, ... ------
bool init_decompose(PyObject* module);
bool init_profiler(PyObject* module);

// --- indexing (py_indexing.cpp): _getitem / _setitem ----------------------------
bool init_indexing(PyObject* module);

// --- graph IR views (py_graph.cpp): GraphBase, NodeBase, OpOverload ----------------
// Call after init_op_type (op objects are graph targets).
bool init_graph(PyObject* module);
// The OpOverload object (ignis.ops.add.Tensor) of one overload; new reference.
PyObject* op_overload_object(const OpHandle* op);
// The C++ graph of an ignis.fx.Graph (borrowed), or null when o is none.
graph::Graph* graph_ptr(PyObject* o);
// A new instance of graph_cls (an ignis.fx.Graph class) that owns g.
PyObject* adopt_graph(PyObject* graph_cls, std::unique_ptr<graph::Graph> g);
// Python objects <-> graph values (tensors, numbers, containers, foreign
// objects); the conversions the interpreter's foreign hook uses.
graph::Value py_to_value(PyObject* o);
PyObject* py_from_value(const graph::Value& v);  // new reference
// The target of a node of kind `op` that a Python object names: a str, an
// OpOverload, or (call_function) any callable, held as a foreign target.
graph::Target py_to_target(PyObject* o, graph::OpKind op);
// Sets n's type annotation from a Python type (None clears it).
void py_set_node_type(graph::Node* n, PyObject* type);

// --- AOT (py_aot.cpp): tracing, partitioners, fake tensors -------------------------
bool init_aot(PyObject* module);

// --- compiler (py_compiler.cpp): compiled graphs ------------------------------------
bool init_compiler(PyObject* module);

// --- CPU caching allocator (py_memory.cpp): _cpu_memory_stats, _cpu_empty_cache, ... --
bool init_memory(PyObject* module);

// --- CUDA runtime (py_cuda.cpp): _cuda_* functions, OutOfMemoryError --------------
// ignis.OutOfMemoryError, raised for core/out_of_memory.h's error (a RuntimeError).
extern PyObject* OutOfMemoryErrorType;
extern PyObject* LinAlgErrorType;  // module.cpp
bool init_cuda(PyObject* module);
// --- cuBLASLt settings and loader (py_cuda_blas.cpp): _cuda_blas_*, _cublaslt_* ----
bool init_cuda_blas(PyObject* module);
// --- DLPack (py_dlpack.cpp): _to_dlpack, _from_dlpack_capsule ---------------------
bool init_dlpack(PyObject* module);

// --- autograd (py_autograd.cpp): Tensor.grad etc., grad_fn objects, grad mode -------
// Call after init_tensor_type.
bool init_autograd(PyObject* module);

// --- capture (src/ignis/capture/py_capture.cpp): the _C._capture submodule ----------
bool init_capture(PyObject* module);

// --- numbers -----------------------------------------------------------------
// True when o is a Python or NumPy number (bool, int, float).
bool is_number(PyObject* o);
Scalar to_scalar(PyObject* o);  // for objects where is_number() holds

// A Python size object (ignis.Size once registered, else tuple).
extern PyObject* SizeClass;
PyObject* make_size(const DimVector& v);

}  // namespace ignis::py

// OpDef: the one declaration of an operator.
//
// Each op is declared once, in the file of its family (ops/unary.cpp,
// ops/binary.cpp, ...), through the builder below: its schema, category,
// Python variants, and either a structured pair (a device-independent meta
// rule that allocates the outputs, plus a compute kernel per backend) or one
// kernel that works on every backend (views and composites, which only call
// other ops or re-stride). Everything else is derived from the declaration:
// the Meta kernel (the meta rule alone), the CPU kernel (meta rule, then
// compute), the Python function and Tensor method, and the op's listing in
// `ignis.ops`. The declaration also carries the facts passes read (random or
// uninitialised results, data-dependent output shapes, the scalar function of
// a pointwise op), and alias() gives an op its other names.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ignis/core/memory_format.h"
#include "ignis/dispatch/dispatcher.h"

namespace ignis {

enum class OpCategory : uint8_t { Pointwise, Reduction, View, Template, Creation, Composite, Other };
const char* category_name(OpCategory c);

enum Variants : uint8_t { kFunction = 1, kMethod = 2, kBoth = 3 };

// Whether equal arguments give equal results. Passes read it: CSE never merges
// two calls that are not Deterministic, and a partitioner that recomputes
// values must not replay them.
enum class Determinism : uint8_t {
  Deterministic,
  Random,         // results are drawn from the RNG (rand, bernoulli_, dropout)
  Uninitialized,  // results are whatever the memory held (empty, empty_like)
};

class TensorIterator;
struct GradCtx;  // autograd/formula.h

// A derivative formula: reads the saved inputs/outputs and the gradients of
// the outputs from the context and sets the gradients of the inputs.
using DerivativeFn = void (*)(GradCtx&);
// For .not_differentiable(): whether a call's arguments (defaults filled in)
// make the named arguments non-differentiable.
using NondiffWhen = bool (*)(const Stack&);

// The state of one call of a structured op: its arguments, the outputs the
// meta rule allocated, and (for pointwise and reduction ops) the iterator
// the meta rule built so that the compute kernel need not rebuild it.
struct OpCall {
  const OpHandle& op;
  Stack& args;
  Device device;  // where outputs are allocated
  std::vector<Tensor> outputs;
  std::shared_ptr<TensorIterator> iter;

  const Tensor& tensor(size_t i) const { return args[i].to_tensor(); }
  Tensor opt_tensor(size_t i) const { return args[i].to_opt_tensor(); }
  int64_t int_arg(size_t i) const { return args[i].to_int(); }
  double double_arg(size_t i) const { return args[i].to_double(); }
  bool bool_arg(size_t i) const { return args[i].to_bool(); }
  Scalar scalar(size_t i) const { return args[i].to_scalar(); }
  const std::vector<int64_t>& int_list(size_t i) const { return args[i].to_int_list(); }
  // Allocates an output on `device`: contiguous unless strides are given, or
  // laid out in a memory format (strides_in_format).
  Tensor& alloc(const DimVector& sizes, ScalarType dtype);
  Tensor& alloc_strided(const DimVector& sizes, const DimVector& strides, ScalarType dtype);
  Tensor& alloc_in_format(const DimVector& sizes, ScalarType dtype, MemoryFormat format);
};

using MetaFn = void (*)(OpCall&);
using ImplFn = void (*)(OpCall&);

// A decomposition: the op written in terms of other ops. It receives a full
// stack of arguments (defaults filled in), calls other ops through the
// dispatcher, and leaves the op's outputs on the stack, as a kernel would.
// AOT tracing applies it (aot/trace.h) unless the backend keeps the op
// whole; eager execution never uses it. The decompositions live in
// ops/decomp/, declared in ops/decompositions.h.
using DecompFn = void (*)(const OpHandle& op, Stack& stack);

struct OpDef {
  std::string schema;
  OpCategory category = OpCategory::Other;
  uint8_t variants = kFunction;
  // Python-facing name when it differs from the schema name (rare).
  std::string python_name;
  // Structured ops
  MetaFn meta = nullptr;
  ImplFn cpu = nullptr;
  ImplFn cuda = nullptr;
  // Unstructured ops: one kernel for every backend key (views, composites).
  KernelFn any_backend;
  // Composite ops implemented only through other ops: also registered at the
  // autograd keys, so autograd records their parts.
  bool composite_implicit = false;
  // Autograd: the derivative formula and what backward needs saved (bit i of
  // save_inputs: argument i; bit j of save_outputs: output j), parsed from
  // the names given to .derivative().
  DerivativeFn derivative = nullptr;
  std::string saves;
  uint64_t save_inputs = 0;
  uint64_t save_outputs = 0;
  // Tensor arguments the derivative does not differentiate (bit i: argument
  // i), parsed from .not_differentiable()'s names. As in PyTorch, passing
  // one that requires grad while grad mode is on is an error at the call, so
  // that a gradient is never silently missing. `nondiff_when`, when set,
  // limits that to the calls it accepts.
  std::string nondiff;
  uint64_t nondiff_inputs = 0;
  NondiffWhen nondiff_when = nullptr;
  // Tensor arguments may live on different devices (copy_ and copy move data
  // between them, as torch's do); other structured ops check that they share one.
  bool cross_device = false;
  // Outputs never require grad even when inputs do (creation ops, .detach()).
  bool nondifferentiable = false;
  Determinism determinism = Determinism::Deterministic;
  // A random op that takes PyTorch's `generator=` keyword: its kernels draw
  // from current_generator() (kernels/cpu/random.h), which a call with
  // generator= points at that generator. Dropout draws from the default
  // generator only, as in PyTorch.
  bool takes_generator = false;
  // Why the shape of an output, or a Python value the op returns, depends on
  // the input tensors' values (empty: it does not). Tracers read it to stop
  // before the call rather than to trace an output they cannot size.
  std::string data_dependent;
  // Pointwise ops: the `name` of the op's scalar function in
  // kernels/scalar_ops.h ("exp" for scalar_ops::Exp), for code generators.
  std::string scalar;
  // Returns an alias of its first input (schema `Tensor(a) -> Tensor(a)`):
  // autograd tracks the output as a view of that input's base.
  bool is_view = false;
  // Python hands back the first argument, as torch's binding does for the
  // in-place _foreach_ ops (their schemas return nothing; `x = op_(x, ...)`
  // works in torch). The C++ op still returns nothing.
  bool python_returns_self = false;
  // The op written in terms of other ops (null: the op is kept whole).
  // Functional composite ops get their kernel as decomposition (see
  // OpBuilder::composite).
  DecompFn decomposition = nullptr;
  // A core op: one the compiler lowers itself, and where decomposition
  // stops (docs/core_ops.md). A core op has no decomposition.
  bool core = false;
  std::string doc;

  bool nondeterministic() const { return determinism != Determinism::Deterministic; }
};

// Builder used by the op family files:
//   def("exp(Tensor self) -> Tensor").pointwise().both().meta(m).cpu(k);
class OpBuilder {
 public:
  explicit OpBuilder(std::string schema);
  ~OpBuilder();  // registers the op
  OpBuilder(const OpBuilder&) = delete;

  OpBuilder& category(OpCategory c) { d_->category = c; return *this; }
  OpBuilder& variants(uint8_t v) { d_->variants = v; return *this; }
  OpBuilder& method_only() { d_->variants = kMethod; return *this; }
  OpBuilder& both() { d_->variants = kBoth; return *this; }
  OpBuilder& meta(MetaFn f) { d_->meta = f; return *this; }
  OpBuilder& cpu(ImplFn f) { d_->cpu = f; return *this; }
  OpBuilder& cuda(ImplFn f) { d_->cuda = f; return *this; }
  // One compute kernel for CPU and CUDA: it routes by the tensors' devices
  // itself (copies and fills, through kernels/device_kernels.h).
  OpBuilder& cpu_and_cuda(ImplFn f) { d_->cpu = d_->cuda = f; return *this; }
  OpBuilder& kernel(KernelFn f) { d_->any_backend = std::move(f); return *this; }
  // A kernel written only in terms of other ops. Unless the op is core or
  // in place, that kernel is also its decomposition.
  OpBuilder& composite(KernelFn f) {
    d_->any_backend = std::move(f);
    d_->composite_implicit = true;
    return *this;
  }
  OpBuilder& doc(std::string s) { d_->doc = std::move(s); return *this; }
  // The op's derivative; `saves` lists the argument names and outputs
  // ("result", "result1", ...) the formula reads, comma-separated.
  OpBuilder& derivative(DerivativeFn f, std::string saves = "") {
    d_->derivative = f;
    d_->saves = std::move(saves);
    return *this;
  }
  OpBuilder& nondifferentiable() { d_->nondifferentiable = true; return *this; }
  OpBuilder& cross_device() { d_->cross_device = true; return *this; }
  // Tensor arguments (comma-separated names) that must not require grad, on
  // every call or on those `when` accepts (see OpDef::nondiff_inputs).
  OpBuilder& not_differentiable(std::string args, NondiffWhen when = nullptr) {
    d_->nondiff = std::move(args);
    d_->nondiff_when = when;
    return *this;
  }
  // Results drawn from the RNG / left uninitialised (see Determinism).
  OpBuilder& random() { d_->determinism = Determinism::Random; return *this; }
  // Random, and takes generator= (see OpDef::takes_generator).
  OpBuilder& random_with_generator() {
    d_->takes_generator = true;
    return random();
  }
  OpBuilder& uninitialized() { d_->determinism = Determinism::Uninitialized; return *this; }
  OpBuilder& data_dependent(std::string why) { d_->data_dependent = std::move(why); return *this; }
  OpBuilder& scalar(std::string name) { d_->scalar = std::move(name); return *this; }
  OpBuilder& decomposition(DecompFn f) { d_->decomposition = f; return *this; }
  OpBuilder& core(bool on = true) { d_->core = on; return *this; }
  OpBuilder& python_returns_self() { d_->python_returns_self = true; return *this; }

 private:
  OpDef* d_;
};

inline OpBuilder def(std::string schema) { return OpBuilder(std::move(schema)); }

// Declares `name` another name of the op `op` (base names), as PyTorch's
// aliases are (multiply for mul): one op and one kernel set, which
// Dispatcher::find, ignis.<name>, Tensor.<name> and ignis.ops.<name> all
// reach. When the op has an in-place form `op_`, `name_` becomes its name too.
void alias(const std::string& name, const std::string& op);

// The device a call's outputs go to: its Device argument, else the device
// of its first tensor argument that is not a wrapped Python number, else
// `otherwise`. Devices as the user sees them (a fake's stood-for device).
Device call_device(const OpHandle& op, const Stack& s, Device otherwise);
// All tensor arguments of one call live on one device (as the user sees
// devices); a 0-dim CPU tensor (a scalar) may join tensors of any device, as
// in PyTorch. Throws naming the op and both devices.
void check_same_device(const OpHandle& op, const Stack& s);

// All declarations, in registration order.
const std::vector<const OpDef*>& all_op_defs();

// Registers every op family; idempotent.
void register_all_ops();

}  // namespace ignis

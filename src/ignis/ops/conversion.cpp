// Copies and conversions: copy_, clone, contiguous, to, _to_copy, fill_, zero_.
#include "ignis/autograd/formula.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/fill.h"
#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"
#include "ignis/ops/pointwise.h"

namespace ignis {

namespace {

OpRef to_copy_op("_to_copy");
OpRef clone_op("clone");

// The strides of a copy of `self` in `memory_format` (None: preserve_format).
DimVector copy_strides(const Tensor& self, const IValue& memory_format) {
  return strides_for_copy(self, memory_format.is_none() ? MemoryFormat::Preserve
                                                        : memory_format.to_memory_format());
}

// _to_copy(self, *, dtype, device, non_blocking, memory_format): a fresh tensor
// laid out like self, or in memory_format.
void to_copy_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  if (self.device().is_meta() && !c.args[2].is_none() && !c.args[2].to_device().is_meta())
    IGNIS_NOT_IMPLEMENTED("Cannot copy out of meta tensor; no data!");
  ScalarType dt = c.args[1].is_none() ? self.dtype() : c.args[1].to_dtype();
  c.alloc_strided(self.sizes(), copy_strides(self, c.args[4]), dt);
}
// Reached at the CPU key for a CPU tensor sent to a GPU, so it copies across
// devices (copy_tensor), as copy_ does.
void to_copy_impl(OpCall& c) { copy_tensor(c.outputs[0], c.tensor(0), c.bool_arg(3)); }
void clone_impl(OpCall& c) { copy_tensor(c.outputs[0], c.tensor(0)); }

void clone_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  c.alloc_strided(self.sizes(), copy_strides(self, c.args[1]), self.dtype());
}

void copy_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const Tensor& src = c.tensor(1);
  DimVector b = broadcast_shapes(self.sizes(), src.sizes());
  IGNIS_CHECK(b == self.sizes(), "copy_: the source of shape ", src.shape_str(),
              " cannot be broadcast to the destination of shape ", self.shape_str());
  // The same data in the same layout (x[i] = x[i], even of an expanded x):
  // nothing changes, and torch's copy_ returns before its overlap checks
  // (fuzz seed 4508387, against torch: ignis raised where torch did not).
  const bool same_data = self.impl()->storage().get() == src.impl()->storage().get() &&
                         self.storage_offset() == src.storage_offset() &&
                         self.sizes() == src.sizes() && self.strides() == src.strides() &&
                         self.dtype() == src.dtype();
  if (!same_data) {
    check_no_internal_overlap(self);
    check_no_partial_overlap(self, src);
  }
  c.outputs.push_back(self);
  if (!c.device.is_meta()) self.impl()->version_counter().bump();
}
void copy_impl(OpCall& c) { copy_tensor(c.tensor(0), c.tensor(1), c.bool_arg(2)); }

// copy(self, src): what copy_ would leave in self, as a new tensor laid out
// like self (its values are not read). Functionalization records copy_,
// fill_ and zero_ as this op (aot/functionalize.cpp), as torch does.
void copy_functional_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const Tensor& src = c.tensor(1);
  IGNIS_CHECK(broadcast_shapes(self.sizes(), src.sizes()) == self.sizes(), "copy: the source of "
              "shape ", src.shape_str(), " cannot be broadcast to the destination of shape ",
              self.shape_str());
  c.alloc_strided(self.sizes(), like_strides(self), self.dtype());
}
void copy_functional_impl(OpCall& c) { copy_tensor(c.outputs[0], c.tensor(1)); }

void fill_meta(OpCall& c) {
  const Tensor& v = c.tensor(1);
  IGNIS_CHECK(v.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              v.dim(), " dimensions.");
  // A Python number must fit the dtype (a 0-dim tensor is converted as by copy_).
  if (v.impl()->is_wrapped_number())
    cpu::check_scalar_fits(tensor_to_scalar(v), c.tensor(0).dtype());
  else  // as torch: fill_ with a tensor refuses an expanded self, with a number it does not
    check_no_internal_overlap(c.tensor(0));
  c.outputs.push_back(c.tensor(0));
  if (!c.device.is_meta()) c.tensor(0).impl()->version_counter().bump();
}
void fill_impl(OpCall& c) { fill_tensor(c.tensor(0), tensor_to_scalar(c.tensor(1))); }
void zero_meta(OpCall& c) {
  c.outputs.push_back(c.tensor(0));
  if (!c.device.is_meta()) c.tensor(0).impl()->version_counter().bump();
}
void zero_impl(OpCall& c) { fill_tensor(c.tensor(0), Scalar(int64_t(0))); }

// contiguous(self, memory_format): self when already laid out in that
// format, else a copy in it.
void contiguous_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  const MemoryFormat f = s[1].to_memory_format();
  s.clear();
  const bool done = f == MemoryFormat::Contiguous || f == MemoryFormat::Preserve
                        ? self.is_contiguous()
                        : has_format(self.sizes(), self.strides(), f);
  // As torch's: preserve_format is refused only where a copy would be needed.
  IGNIS_CHECK(done || f != MemoryFormat::Preserve,
              "preserve memory format is unsupported by the contiguous operator");
  s.emplace_back(done ? std::move(self) : clone_op.tensor(self, f));
}

// to(...): self when nothing changes (and copy=False), else _to_copy.
// Devices are compared as the user sees them (a fake's stood-for device). A
// memory format changes nothing when self's strides suggest it already (torch's
// rule: a contiguous N x 1 x H x W tensor is copied to channels_last).
void to_common(Stack& s, const Tensor& self, ScalarType dt, Device dev, bool non_blocking,
               bool copy, const IValue& memory_format) {
  bool same = dt == self.dtype() && dev == self.user_device();
  if (!memory_format.is_none() && memory_format.to_memory_format() != MemoryFormat::Preserve)
    same = same && suggest_memory_format(self.sizes(), self.strides()) ==
                       memory_format.to_memory_format();
  Tensor out = same && !copy ? self
                             : to_copy_op.tensor(self, dt, dev, non_blocking, memory_format);
  s.clear();
  s.emplace_back(std::move(out));
}
void to_dtype_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  to_common(s, self, s[1].to_dtype(), self.user_device(), s[2].to_bool(), s[3].to_bool(), s[4]);
}
void to_device_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  Device dev = s[1].to_device();
  ScalarType dt = s[2].is_none() ? self.dtype() : s[2].to_dtype();
  to_common(s, self, dt, dev, s[3].to_bool(), s[4].to_bool(), s[5]);
}
void to_other_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  Tensor other = s[1].to_tensor();
  to_common(s, self, other.dtype(), other.user_device(), s[2].to_bool(), s[3].to_bool(), s[4]);
}
void to_kw_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  ScalarType dt = s[1].is_none() ? self.dtype() : s[1].to_dtype();
  Device dev = s[2].is_none() ? self.user_device() : s[2].to_device();
  to_common(s, self, dt, dev, s[3].to_bool(), s[4].to_bool(), s[5]);
}

void type_as_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  Tensor other = s[1].to_tensor();
  to_common(s, self, other.dtype(), self.user_device(), false, false, IValue());
}

// ---- derivatives ------------------------------------------------------------------
using namespace grad_ops;  // NOLINT

void identity_bw(GradCtx& c) { c.set(0, c.grad()); }  // cast back to self's dtype by the caller
void copy_bw(GradCtx& c) {
  c.set(0, zeros_like(c.grad()));
  c.set(1, c.grad());
}
void fill_bw(GradCtx& c) {
  c.set(0, zeros_like(c.grad()));
  c.set(1, c.grad());  // summed to the 0-dim value by the caller
}
void zero_bw(GradCtx& c) { c.set(0, zeros_like(c.grad())); }

}  // namespace

void register_conversion_ops() {
  def("_to_copy(Tensor self, *, ScalarType? dtype=None, Device? device=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor")
      .category(OpCategory::Other).variants(kFunction).meta(to_copy_meta)
      .cpu_and_cuda(to_copy_impl).doc("copy converted to dtype and/or moved to device")
      .derivative(identity_bw).core();
  def("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor").category(OpCategory::Other).both().meta(clone_meta)
      .cpu_and_cuda(clone_impl).doc("a copy with the same layout").derivative(identity_bw).core();
  def("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)")
      .category(OpCategory::Other).method_only().meta(copy_meta).cpu_and_cuda(copy_impl)
      .cross_device()
      .doc("writes src (broadcast and converted) into self").derivative(copy_bw);
  // Core: functionalization writes copy_, fill_ and zero_ as copy, and the
  // compiler lowers it as a (broadcasting, converting) pointwise copy.
  def("copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor")
      .category(OpCategory::Other).meta(copy_functional_meta)
      .cpu_and_cuda(copy_functional_impl)
      .cross_device()
      .doc("src broadcast and converted into a new tensor laid out like self").core()
      .derivative(copy_bw);
  def("fill_(Tensor(a!) self, Tensor value) -> Tensor(a!)").category(OpCategory::Other).both()
      .meta(fill_meta).cpu_and_cuda(fill_impl)
      .derivative(fill_bw);
  def("zero_(Tensor(a!) self) -> Tensor(a!)").category(OpCategory::Other).both().meta(zero_meta)
      .cpu_and_cuda(zero_impl).derivative(zero_bw);
  def("contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)").category(OpCategory::Other).method_only()
      .composite(contiguous_kernel);
  def("to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)")
      .category(OpCategory::Other).method_only().composite(to_dtype_kernel);
  def("to.device(Tensor(a) self, Device device, ScalarType? dtype=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)")
      .category(OpCategory::Other).method_only().composite(to_device_kernel);
  def("to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)")
      .category(OpCategory::Other).method_only().composite(to_other_kernel);
  def("to.kw(Tensor(a) self, *, ScalarType? dtype=None, Device? device=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)")
      .category(OpCategory::Other).method_only().composite(to_kw_kernel);
  def("type_as(Tensor self, Tensor other) -> Tensor").category(OpCategory::Other).method_only()
      .composite(type_as_kernel);
}

}  // namespace ignis

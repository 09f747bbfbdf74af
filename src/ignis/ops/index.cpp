// Data movement and indexing: cat/stack, repeat/tile, index_select, gather,
// scatter, tril/triu, flip, roll, pad, advanced indexing (index, index_put_),
// nonzero, masked_select, where(condition), take.
//
// The structured ops compute shapes and check arguments in their meta rule
// (so they run on the meta device) and move data with the kernels of
// kernels/cpu/index_kernels.h, or on CUDA tensors with those of
// kernels/cuda/index_kernels.h: one implementation per op, only the
// primitive (mapped_copy, zero_triangle) routed by device. Index values are
// range-checked before any kernel reads through them; on CUDA that check and
// the offset tables read a host copy of the indices (one synchronising copy
// per call), except where the kernel reads a CUDA index itself and checks it
// on the device (index_select, index_add_/copy_/fill_, gather, scatter,
// scatter_add, x[idx] and index_put_ with up to four index tensors): its
// error is raised at the next synchronization (Note [Index errors on the
// GPU], cuda/kernel_errors.h).
#include <algorithm>

#include "ignis/autograd/formula.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/fill.h"
#include "ignis/kernels/cpu/index_kernels.h"
#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/kernels/cuda/index_kernels.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

using cpu::MapDim;

OpRef cat_op("cat");
OpRef unsqueeze_op("unsqueeze");
OpRef reshape_op("reshape");
OpRef expand_op("expand");
OpRef index_op("index.Tensor");
OpRef nonzero_op("nonzero");
OpRef repeat_op("repeat");
OpRef flip_op("flip");
OpRef clone_op("clone");
OpRef index_put_op("index_put_");
OpRef unbind_op("unbind.int");

void ret(Stack& s, Tensor t) {
  s.clear();
  s.emplace_back(std::move(t));
}

bool is_index_dtype(ScalarType t) { return t == ScalarType::Int64 || t == ScalarType::Int32; }
bool is_mask_dtype(ScalarType t) { return t == ScalarType::Bool || t == ScalarType::UInt8; }

DimVector bytes(const DimVector& strides, size_t itemsize) {
  DimVector s = strides;
  for (auto& v : s) v *= static_cast<int64_t>(itemsize);
  return s;
}

// t[start:start+len] along dim, as a view.
Tensor narrow_view(const Tensor& t, int64_t dim, int64_t start, int64_t len) {
  DimVector sz = t.sizes();
  sz[dim] = len;
  return make_view(t, sz, t.strides(), t.storage_offset() + start * t.strides()[dim]);
}

bool expandable_to(const DimVector& from, const DimVector& to) {
  if (from.size() > to.size()) return false;
  size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[off + i]) return false;
  return true;
}

// t broadcast to `shape` (which it must be expandable to), as a view.
Tensor expand_view(const Tensor& t, const DimVector& shape) {
  DimVector st(shape.size(), 0);
  size_t off = shape.size() - t.dim();
  for (int64_t d = 0; d < t.dim(); ++d)
    st[off + d] = t.sizes()[d] == shape[off + d] ? t.strides()[d] : 0;
  return make_view(t, shape, st, t.storage_offset());
}

// A 0-dim tensor as a 1-element 1-D view (gather/scatter treat them alike).
Tensor as_1d(const Tensor& t) {
  return t.dim() == 0 ? make_view(t, {1}, {1}, t.storage_offset()) : t;
}

Scalar scalar_of(const Tensor& t) {
  if (t.dtype() == ScalarType::Bool) return Scalar(t.item_int() != 0);
  if (is_floating(t.dtype())) return Scalar(t.item_double());
  return Scalar(t.item_int());
}

void bump(OpCall& c, const Tensor& t) {
  if (!c.device.is_meta()) t.impl()->version_counter().bump();
}

// The compute kernels read every tensor argument's data: all must be on the
// call's device (a meta index with a cpu self has no data to read), except
// that a CUDA call takes 0-dim CPU tensors (values) and CPU index tensors,
// as torch does.
void expect_one_device(const OpCall& c) {
  const Device dev = c.device;
  auto check = [dev](const Tensor& t, bool index) {
    const bool ok = !t.defined() || t.device() == dev ||
                    (dev.is_cuda() && t.device().is_cpu() && (index || t.dim() == 0));
    IGNIS_CHECK(ok, "Expected all tensors to be on the same device, but found at least two "
                "devices, ", dev.str(), " and ", t.device().str(), "!");
  };
  for (const IValue& v : c.args) {
    if (v.is_tensor()) check(v.to_tensor(), false);
    else if (v.is_tensor_list()) for (const Tensor& t : v.to_tensor_list()) check(t, false);
    else if (v.is_opt_tensor_list()) for (const Tensor& t : v.to_opt_tensor_list()) check(t, true);
  }
}

// t on the host: itself, or a copy of a CUDA tensor (for reading index values).
Tensor host(const Tensor& t) {
  if (!t.defined() || !t.device().is_cuda()) return t;
  Tensor h = empty_tensor(t.sizes(), t.dtype(), Device(DeviceType::CPU));
  copy_tensor(h, t);
  return h;
}
// t on `d`: itself, or a copy (a 0-dim CPU value read by a CUDA kernel).
Tensor on_device(const Tensor& t, Device d) {
  if (t.device() == d) return t;
  Tensor r = empty_tensor(t.sizes(), t.dtype(), d);
  copy_tensor(r, t);
  return r;
}
std::optional<int64_t> out_of_range(const Tensor& index, int64_t lo, int64_t hi) {
  return cpu::find_out_of_range(host(index), lo, hi);
}
void index_offsets(const std::vector<Tensor>& indices, const std::vector<int64_t>& sizes,
                   const std::vector<int64_t>& byte_strides, int64_t* out) {
  std::vector<Tensor> h;
  for (const Tensor& t : indices) h.push_back(host(t));
  cpu::index_offsets(h, sizes, byte_strides, out);
}

// cpu::mapped_copy on `device`'s memory (the CUDA kernel ignores
// parallel_dims: it runs every position at once, adding atomically; and
// reads `device_indices`, which the CPU never gets).
void mapped_copy(Device device, char* dst, const char* src, std::vector<MapDim> dims,
                 ScalarType dtype, cpu::MapOp op, int parallel_dims,
                 const Scalar& alpha = Scalar(int64_t(1)),
                 std::vector<cuda::DeviceIndex> device_indices = {}) {
  if (device.is_cuda())
    cuda::mapped_copy(device.index, dst, src, std::move(dims), dtype, op, alpha,
                      std::move(device_indices));
  else
    cpu::mapped_copy(dst, src, std::move(dims), dtype, op, parallel_dims, alpha);
}

// Whether the kernel reads `index` on the device (Note [Index errors on the
// GPU]): an int64 or int32 index on the CUDA device the op runs on.
bool read_on_device(const Tensor& index, Device device) {
  return device.is_cuda() && index.defined() && index.device() == device &&
         is_index_dtype(index.dtype()) && cuda::kernel_error_record(device.index);
}
// The device index of `index` for a mapped copy of `ndims` dims: its
// element strides at the map dims `at` (0 elsewhere).
cuda::DeviceIndex device_index(const Tensor& index, size_t ndims,
                               const std::vector<std::pair<size_t, int64_t>>& at, int64_t scale,
                               int64_t bound, int64_t dim, bool wrap, bool into_dst,
                               cuda::KernelErrorKind kind) {
  cuda::DeviceIndex x;
  x.data = index.data_ptr();
  x.int32 = index.dtype() == ScalarType::Int32;
  x.strides.assign(ndims, 0);
  for (const auto& [d, st] : at) x.strides.at(d) = st;
  x.scale = scale;
  x.bound = bound;
  x.dim = dim;
  x.wrap = wrap;
  x.into_dst = into_dst;
  x.kind = kind;
  return x;
}

// For every position p of index (row-major), the byte offsets of self's
// element at p with p[dim] replaced by index[p] and, when `other` is
// defined, of other's element at p (from a host copy of the index).
void position_offsets(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& other,
                      std::vector<int64_t>& self_off, std::vector<int64_t>& other_off) {
  const int64_t n = index.numel();
  Tensor iv = empty_tensor(index.sizes(), ScalarType::Int64, Device(DeviceType::CPU));
  copy_tensor(iv, index);
  const int64_t* ix = iv.data<int64_t>();
  const int64_t isz = static_cast<int64_t>(self.itemsize()), nd = index.dim();
  self_off.assign(static_cast<size_t>(n), 0);
  other_off.assign(other.defined() ? static_cast<size_t>(n) : 0, 0);
  std::vector<int64_t> pos(static_cast<size_t>(nd), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t so = 0, oo = 0;
    for (int64_t d = 0; d < nd; ++d) {
      so += (d == dim ? ix[i] : pos[d]) * self.strides()[d];
      if (other.defined()) oo += pos[d] * other.strides()[d];
    }
    self_off[i] = so * isz;
    if (other.defined()) other_off[i] = oo * isz;
    for (int64_t d = nd - 1; d >= 0; --d) {  // the next position, row-major
      if (++pos[d] < index.sizes()[d]) break;
      pos[d] = 0;
    }
  }
}

// The source of a scatter on CUDA: `other`, or for a fill the value as a
// 0-dim tensor on self's device (broadcast by zero strides).
Tensor scatter_source(cpu::FiberOp op, const Tensor& self, const Tensor& other,
                      const Scalar& value) {
  if (op != cpu::FiberOp::ScatterFill) return other;
  Tensor v = empty_tensor({}, self.dtype(), self.device());
  fill_tensor(v, value);
  return v;
}

// gather_scatter_on with a CUDA index the kernel reads: a mapped copy over
// the index's positions, self's offset along `dim` from the index value.
void gather_scatter_on_device(cpu::FiberOp op, const Tensor& self, int64_t dim,
                              const Tensor& index, const Tensor& other, const Scalar& value) {
  const size_t nd = size_t(index.dim()), isz = self.itemsize();
  const bool gather = op == cpu::FiberOp::Gather;
  const Tensor src = scatter_source(op, self, other, value);
  std::vector<MapDim> dims(nd);
  for (size_t d = 0; d < nd; ++d) {
    MapDim& m = dims[d];
    m.size = index.sizes()[d];
    const int64_t self_bytes = d == size_t(dim) ? 0 : self.strides()[d] * int64_t(isz);
    const int64_t other_bytes = src.dim() == 0 ? 0 : src.strides()[d] * int64_t(isz);
    m.dst_stride = gather ? other_bytes : self_bytes;
    m.src_stride = gather ? self_bytes : other_bytes;
  }
  std::vector<std::pair<size_t, int64_t>> at;
  for (size_t d = 0; d < nd; ++d) at.emplace_back(d, index.strides()[d]);
  std::vector<cuda::DeviceIndex> dev{device_index(
      index, nd, at, self.strides()[dim] * int64_t(isz), self.sizes()[dim], dim, false, !gather,
      cuda::KernelErrorKind::IndexOutOfBoundsRuntime)};
  char* sp = static_cast<char*>(self.data_ptr());
  if (gather)
    mapped_copy(self.device(), static_cast<char*>(other.data_ptr()), sp, std::move(dims),
                self.dtype(), cpu::MapOp::Copy, 0, Scalar(int64_t(1)), std::move(dev));
  else
    mapped_copy(self.device(), sp, static_cast<const char*>(src.data_ptr()), std::move(dims),
                self.dtype(), op == cpu::FiberOp::ScatterAdd ? cpu::MapOp::Add : cpu::MapOp::Copy,
                0, Scalar(int64_t(1)), std::move(dev));
}

// cpu::gather_scatter on self's device. On CUDA every position p of index
// becomes one position of a mapped copy, through tables of self's and
// other's byte offsets built on the host from a copy of the index.
void gather_scatter_on(cpu::FiberOp op, const Tensor& self, int64_t dim, const Tensor& index,
                       const Tensor& other, const Scalar& value) {
  if (!self.device().is_cuda()) return cpu::gather_scatter(op, self, dim, index, other, value);
  const int64_t n = index.numel();
  if (n == 0) return;
  if (read_on_device(index, self.device())) return gather_scatter_on_device(op, self, dim, index,
                                                                            other, value);
  MapDim m;
  m.size = n;
  std::vector<int64_t> self_off, other_off;
  position_offsets(self, dim, index, other, self_off, other_off);
  char* sp = static_cast<char*>(self.data_ptr());
  if (op == cpu::FiberOp::Gather) {
    m.dst_table = std::move(other_off);
    m.src_table = std::move(self_off);
    cuda::mapped_copy(self.device().index, static_cast<char*>(other.data_ptr()), sp, {m},
                      self.dtype(), cpu::MapOp::Copy);
    return;
  }
  m.dst_table = std::move(self_off);
  const Tensor src = scatter_source(op, self, other, value);
  if (op != cpu::FiberOp::ScatterFill) m.src_table = std::move(other_off);
  cuda::mapped_copy(self.device().index, sp, static_cast<const char*>(src.data_ptr()), {m},
                    self.dtype(),
                    op == cpu::FiberOp::ScatterAdd ? cpu::MapOp::Add : cpu::MapOp::Copy);
}

void zero_triangle(const Tensor& t, int64_t k, bool lower) {
  if (t.device().is_cuda()) cuda::zero_triangle(t, k, lower);
  else cpu::zero_triangle(t, k, lower);
}

// Identity map of dims [0, n) of dst and src (contiguous-style traversal).
std::vector<MapDim> affine_dims(const DimVector& sizes, const DimVector& dst_bytes,
                                const DimVector& src_bytes) {
  std::vector<MapDim> dims(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    dims[d].size = sizes[d];
    dims[d].dst_stride = dst_bytes[d];
    dims[d].src_stride = src_bytes[d];
  }
  return dims;
}

// ---- cat / stack ------------------------------------------------------------------------
// An empty 1-D tensor is skipped by cat whatever the other shapes (legacy
// behaviour PyTorch keeps).
bool cat_skipped(const Tensor& t) { return t.dim() == 1 && t.sizes()[0] == 0; }

void cat_meta(OpCall& c) {
  const auto& ts = c.args[0].to_tensor_list();
  IGNIS_CHECK_VALUE(!ts.empty(), "torch.cat(): expected a non-empty list of Tensors");
  std::vector<const Tensor*> ptrs;
  const Tensor* ref = nullptr;
  for (size_t i = 0; i < ts.size(); ++i) {
    IGNIS_CHECK(ts[i].dim() > 0, "zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
    ptrs.push_back(&ts[i]);
    if (!ref && !cat_skipped(ts[i])) ref = &ts[i];
  }
  ScalarType dt = result_type(ptrs);
  if (!ref) {
    c.alloc({0}, dt);
    return;
  }
  int64_t dim = wrap_dim(c.int_arg(1), ref->dim());
  DimVector size = ref->sizes();
  size[dim] = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    if (cat_skipped(t)) continue;
    IGNIS_CHECK(t.dim() == ref->dim(), "Tensors must have same number of dimensions: got ",
                ref->dim(), " and ", t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d == dim) continue;
      IGNIS_CHECK(t.sizes()[d] == ref->sizes()[d], "Sizes of tensors must match except in "
                  "dimension ", dim, ". Expected size ", ref->sizes()[d], " but got size ",
                  t.sizes()[d], " for tensor number ", i, " in the list.");
    }
    size[dim] += t.sizes()[dim];
  }
  c.alloc(size, dt);
}

void cat_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& out = c.outputs[0];
  if (out.numel() == 0) return;
  const auto& ts = c.args[0].to_tensor_list();
  const Tensor* ref = nullptr;
  for (const Tensor& t : ts)
    if (!cat_skipped(t)) {
      ref = &t;
      break;
    }
  int64_t dim = wrap_dim(c.int_arg(1), ref->dim());
  int64_t off = 0;
  for (const Tensor& t : ts) {
    if (cat_skipped(t)) continue;
    int64_t n = t.sizes()[dim];
    if (n > 0) copy_into(narrow_view(out, dim, off, n), t);  // converts to the result dtype
    off += n;
  }
}

void stack_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  std::vector<Tensor> ts = s[0].to_tensor_list();
  IGNIS_CHECK(!ts.empty(), "stack expects a non-empty TensorList");
  int64_t dim = wrap_dim(s[1].to_int(), ts[0].dim() + 1);
  for (size_t i = 1; i < ts.size(); ++i)
    IGNIS_CHECK(ts[i].sizes() == ts[0].sizes(), "stack expects each tensor to be equal size, "
                "but got ", ts[0].shape_str(), " at entry 0 and ", ts[i].shape_str(),
                " at entry ", i);
  for (Tensor& t : ts) t = unsqueeze_op.tensor(t, dim);
  ret(s, cat_op.tensor(std::move(ts), dim));
}

// scatter(self, dim, index, src | value, *, reduce): torch's older spelling
// of scatter_reduce with the self values included, reduce "add" (a sum) or
// "multiply" (a product); a value is a src of index's shape.
template <bool Inplace>
void scatter_with_reduce_kernel(const OpHandle& op, DispatchKeySet, Stack& s) {
  static const OpRef reduce_op("scatter_reduce.two"), reduce_inplace_op("scatter_reduce_.two"),
      full_like_op("full_like");
  const std::string& how = s[4].to_string();
  IGNIS_CHECK(how == "add" || how == "multiply",
              "reduce argument must be either add or multiply.");
  Tensor self = s[0].to_tensor();
  Tensor index = s[2].to_tensor();
  // A value, or a Python number bound to the src overload as a wrapped number.
  const bool value = op.schema().overload == "value_reduce" ||
                     s[3].to_tensor().impl()->is_wrapped_number();
  Tensor src = !value ? s[3].to_tensor()
                      : full_like_op.tensor(index, s[3].is_tensor() ? tensor_to_scalar(s[3].to_tensor())
                                                                    : s[3].to_scalar(),
                                            self.dtype());
  const char* r = how == "add" ? "sum" : "prod";
  const OpRef& run = Inplace ? reduce_inplace_op : reduce_op;
  ret(s, run.tensor(self, s[1].to_int(), index, src, std::string(r), true));
}

// atleast_{1,2,3}d as hstack/vstack/dstack/column_stack need them.
Tensor reshape_to(const Tensor& t, std::vector<int64_t> shape) {
  return reshape_op.tensor(t, std::move(shape));
}
std::vector<Tensor> stack_inputs(const Stack& s, const char* name) {
  const auto& ts = s[0].to_tensor_list();
  IGNIS_CHECK(!ts.empty(), name, " expects a non-empty TensorList");
  return ts;
}
void hstack_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  std::vector<Tensor> ts = stack_inputs(s, "hstack");
  for (Tensor& t : ts)
    if (t.dim() == 0) t = reshape_to(t, {1});
  int64_t dim = ts[0].dim() == 1 ? 0 : 1;
  ret(s, cat_op.tensor(std::move(ts), dim));
}
void vstack_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  std::vector<Tensor> ts = stack_inputs(s, "vstack");
  for (Tensor& t : ts)
    if (t.dim() < 2) t = reshape_to(t, {1, t.numel()});
  ret(s, cat_op.tensor(std::move(ts), int64_t(0)));
}
void dstack_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  std::vector<Tensor> ts = stack_inputs(s, "dstack");
  for (Tensor& t : ts) {
    if (t.dim() == 0) t = reshape_to(t, {1, 1, 1});
    else if (t.dim() == 1) t = reshape_to(t, {1, t.sizes()[0], 1});
    else if (t.dim() == 2) t = unsqueeze_op.tensor(t, int64_t(2));
  }
  ret(s, cat_op.tensor(std::move(ts), int64_t(2)));
}
void column_stack_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  std::vector<Tensor> ts = stack_inputs(s, "column_stack");
  for (Tensor& t : ts)
    if (t.dim() <= 1) t = reshape_to(t, {t.numel(), 1});
  ret(s, cat_op.tensor(std::move(ts), int64_t(1)));
}

// ---- repeat / tile ------------------------------------------------------------------------
void repeat_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const auto& reps = c.int_list(1);
  const int64_t n = static_cast<int64_t>(reps.size());
  IGNIS_CHECK(n >= self.dim(), "Number of dimensions of repeat dims can not be smaller than "
              "number of dimensions of tensor");
  const int64_t pad = n - self.dim();
  DimVector size(n);
  for (int64_t i = 0; i < n; ++i) size[i] = reps[i] * (i < pad ? 1 : self.sizes()[i - pad]);
  c.alloc(size, self.dtype());
}

// The output, viewed as [r0, s0, r1, s1, ...], is self broadcast along the r dims.
void repeat_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& self = c.tensor(0);
  const Tensor& out = c.outputs[0];
  if (out.numel() == 0) return;
  const auto& reps = c.int_list(1);
  const int64_t n = static_cast<int64_t>(reps.size()), pad = n - self.dim();
  const int64_t isz = static_cast<int64_t>(self.itemsize());
  std::vector<MapDim> dims;
  for (int64_t i = 0; i < n; ++i) {
    int64_t s = i < pad ? 1 : self.sizes()[i - pad];
    int64_t os = out.strides()[i] * isz;
    int64_t ss = i < pad ? 0 : self.strides()[i - pad] * isz;
    dims.push_back(MapDim{reps[i], os * s, 0, {}, {}});
    dims.push_back(MapDim{s, os, ss, {}, {}});
  }
  mapped_copy(out.device(), static_cast<char*>(out.data_ptr()),
              static_cast<const char*>(self.data_ptr()),
              std::move(dims), self.dtype(), cpu::MapOp::Copy, static_cast<int>(2 * n));
}

void tile_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  std::vector<int64_t> reps = s[1].to_int_list();
  if (static_cast<int64_t>(reps.size()) < self.dim())
    reps.insert(reps.begin(), self.dim() - reps.size(), 1);
  ret(s, repeat_op.tensor(self, reps));
}

// ---- index_select -------------------------------------------------------------------------
void index_select_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const Tensor& index = c.tensor(2);
  int64_t dim = wrap_dim(c.int_arg(1), self.dim());
  IGNIS_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  IGNIS_CHECK(is_index_dtype(index.dtype()),
              "index_select(): Expected dtype int32 or int64 for index");
  if (self.dim() == 0) {
    IGNIS_CHECK(index.numel() == 1, "index_select(): Index to scalar can have only 1 value, "
                "got ", index.numel(), " value(s)");
    c.alloc({}, self.dtype());
    return;
  }
  IGNIS_CHECK(self.sizes()[dim] > 0 || index.numel() == 0,
              "index_select(): self indexing axis dim should be positive");
  DimVector size = self.sizes();
  size[dim] = index.numel();
  c.alloc(size, self.dtype());
}

void index_select_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& self = c.tensor(0);
  const Tensor& out = c.outputs[0];
  Tensor index = as_1d(c.tensor(2));
  int64_t dim = wrap_dim(c.int_arg(1), self.dim());
  int64_t n = self.dim() == 0 ? 1 : self.sizes()[dim];
  const bool device_read = read_on_device(index, c.device);
  if (!device_read) IGNIS_CHECK_INDEX(!out_of_range(index, 0, n), "index out of range in self");
  if (out.numel() == 0) return;
  Tensor src = as_1d(self), dst = as_1d(out);
  const size_t isz = self.itemsize();
  auto dims = affine_dims(dst.sizes(), bytes(dst.strides(), isz), bytes(src.strides(), isz));
  const int64_t step = src.strides()[dim] * static_cast<int64_t>(isz);
  std::vector<cuda::DeviceIndex> dev;
  if (device_read) {
    dims[dim].src_stride = 0;
    dev.push_back(device_index(index, dims.size(), {{size_t(dim), index.strides()[0]}}, step, n,
                               dim, false, false, cuda::KernelErrorKind::IndexOutOfRangeInSelf));
  } else {
    dims[dim].src_table.resize(index.numel());
    index_offsets({index}, {n}, {step}, dims[dim].src_table.data());
  }
  mapped_copy(dst.device(), static_cast<char*>(dst.data_ptr()),
              static_cast<const char*>(src.data_ptr()),
              std::move(dims), self.dtype(), cpu::MapOp::Copy,
              static_cast<int>(dst.dim()), Scalar(int64_t(1)), std::move(dev));
}

int64_t nonempty_dim(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
int64_t size_or_1(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.sizes()[d]; }

// ---- index_add / index_copy / index_fill -------------------------------------------------
// self[..., index[i], ...] (op)= source[..., i, ...] along dim: a mapped copy
// whose dim `dim` goes through the table of index offsets. Only the dims
// before `dim` run in parallel, so repeated indices resolve in order.
enum class IndexedOp { Add, Copy, Fill };

const char* indexed_name(IndexedOp k) {
  return k == IndexedOp::Add ? "index_add_" : k == IndexedOp::Copy ? "index_copy_" : "index_fill_";
}

template <IndexedOp K, bool Inplace>
void indexed_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const Tensor& index = c.tensor(2);
  const char* name = indexed_name(K);
  int64_t dim = wrap_dim(c.int_arg(1), self.dim());
  IGNIS_CHECK_INDEX(index.dim() <= 1, name, "(): Index is supposed to be a vector, but got dim: ",
                    index.dim(), " with type: ", scalar_type_name(index.dtype()), " and size: ",
                    index.shape_str());
  if (K == IndexedOp::Add)
    IGNIS_CHECK(is_index_dtype(index.dtype()), name, "(): Expected dtype int32/int64 for index");
  else if (K == IndexedOp::Copy)
    IGNIS_CHECK(index.dtype() == ScalarType::Int64, name, "(): Expected a long tensor for "
                "index, but got ", scalar_type_name(index.dtype()));
  else
    IGNIS_CHECK_INDEX(index.dtype() == ScalarType::Int64, name,
                      "(): Expected dtype int64 for index.");
  if (K == IndexedOp::Fill) {
    const Tensor& v = c.tensor(3);
    IGNIS_CHECK(v.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got "
                "tensor with ", v.dim(), " dimension(s).");
  } else {
    const Tensor& src = c.tensor(3);
    IGNIS_CHECK(src.dtype() == self.dtype(), name, "(): self (", scalar_type_name(self.dtype()),
                ") and source (", scalar_type_name(src.dtype()), ") must have the same scalar type");
    IGNIS_CHECK(index.numel() == size_or_1(src, dim), name, "(): Number of indices (",
                index.numel(), ") should be equal to source.size(dim): (", size_or_1(src, dim),
                "), for dim: ", dim);
    bool same = src.dim() == self.dim();
    for (int64_t d = 0; same && d < src.dim(); ++d)
      same = d == dim || src.sizes()[d] == size_or_1(self, d);
    IGNIS_CHECK(same, name, "(): source tensor shape must match self tensor shape, excluding "
                "the specified dimension. Got self.shape = ", self.shape_str(),
                " source.shape = ", src.shape_str());
  }
  if (Inplace) {
    c.outputs.push_back(self);
    bump(c, self);
  } else {
    c.alloc_strided(self.sizes(), like_strides(self), self.dtype());
  }
}

template <IndexedOp K, bool Inplace>
void indexed_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& self = c.tensor(0);
  const Tensor& out = c.outputs[0];
  Tensor index = as_1d(c.tensor(2));
  int64_t dim = wrap_dim(c.int_arg(1), self.dim());
  const int64_t n = size_or_1(self, dim);
  // index_fill counts negative indices from the end; the others reject them.
  const bool device_read = read_on_device(index, c.device);
  auto bad = device_read ? std::nullopt : out_of_range(index, K == IndexedOp::Fill ? -n : 0, n);
  if (K == IndexedOp::Add)
    IGNIS_CHECK(!bad, "index ", bad.value_or(0), " is out of bounds for dimension ", dim,
                " with size ", n);
  else
    IGNIS_CHECK_INDEX(!bad, K == IndexedOp::Copy ? "index_copy_(): " : "", "index ",
                      bad.value_or(0), " is out of bounds for dimension ", dim, " with size ", n);
  if (!Inplace) copy_into(out, self);
  Tensor dst = as_1d(out);
  // The source: `source` itself, or the fill value broadcast (stride 0).
  Tensor src = K == IndexedOp::Fill
                   ? on_device(to_dtype_copy(c.tensor(3), self.dtype()), out.device())
                   : c.tensor(3);
  Tensor src1 = K == IndexedOp::Fill ? make_view(src, DimVector(dst.dim(), 1),
                                                 DimVector(dst.dim(), 0), src.storage_offset())
                                     : as_1d(src);
  const size_t isz = self.itemsize();
  DimVector sizes = dst.sizes();
  sizes[dim] = index.numel();
  auto dims = affine_dims(sizes, bytes(dst.strides(), isz), bytes(src1.strides(), isz));
  const int64_t step = dst.strides()[dim] * static_cast<int64_t>(isz);
  std::vector<cuda::DeviceIndex> dev;
  if (device_read) {
    dims[dim].dst_stride = 0;
    dev.push_back(device_index(index, dims.size(), {{size_t(dim), index.strides()[0]}}, step, n,
                               dim, K == IndexedOp::Fill, true,
                               K == IndexedOp::Add ? cuda::KernelErrorKind::IndexOutOfBoundsRuntime
                                                   : cuda::KernelErrorKind::IndexOutOfBounds));
  } else {
    dims[dim].dst_table.resize(index.numel());
    index_offsets({index}, {n}, {step}, dims[dim].dst_table.data());
  }
  mapped_copy(dst.device(), static_cast<char*>(dst.data_ptr()),
              static_cast<const char*>(src1.data_ptr()),
              std::move(dims), self.dtype(),
              K == IndexedOp::Add ? cpu::MapOp::Add : cpu::MapOp::Copy,
              static_cast<int>(dim), K == IndexedOp::Add ? c.scalar(4) : Scalar(int64_t(1)),
              std::move(dev));
}

void take_along_dim_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor(), idx = s[1].to_tensor();
  IGNIS_CHECK(idx.dtype() == ScalarType::Int64, "torch.take_along_dim(): dtype of indices "
              "should be Long but got ", scalar_type_name(idx.dtype()));
  static OpRef gather("gather");
  if (s[2].is_none()) {
    ret(s, gather.tensor(reshape_to(self, {-1}), int64_t(0), reshape_to(idx, {-1})));
    return;
  }
  IGNIS_CHECK(self.dim() == idx.dim(), "torch.take_along_dim(): input and indices should have "
              "the same number of dimensions, but got ", self.dim(), " dimensions for input, and ",
              idx.dim(), " dimensions for indices");
  int64_t dim = wrap_dim(s[2].to_int(), self.dim());
  // Broadcast every dim but `dim`, which keeps each side's own size.
  DimVector a = self.sizes(), b = idx.sizes();
  if (self.dim() > 0) a[dim] = b[dim] = 1;
  DimVector shape = broadcast_shapes(a, b);
  std::vector<int64_t> self_shape = shape.vec(), idx_shape = shape.vec();
  if (self.dim() > 0) {
    self_shape[dim] = self.sizes()[dim];
    idx_shape[dim] = idx.sizes()[dim];
  }
  ret(s, gather.tensor(expand_op.tensor(self, self_shape), dim,
                       expand_op.tensor(idx, idx_shape)));
}

// ---- gather / scatter -----------------------------------------------------------------------

void gather_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const Tensor& index = c.tensor(2);
  int64_t dim = wrap_dim(c.int_arg(1), self.dim());
  IGNIS_CHECK(is_index_dtype(index.dtype()), "gather(): Expected dtype int64 for index");
  IGNIS_CHECK(nonempty_dim(index) == nonempty_dim(self),
              "Index tensor must have the same number of dimensions as input tensor");
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (d == dim) continue;
    IGNIS_CHECK(index.sizes()[d] <= size_or_1(self, d), "Size does not match at dimension ", d,
                " expected index ", index.shape_str(), " to be no larger than self ",
                self.shape_str(), " apart from dimension ", dim);
  }
  c.alloc(index.sizes(), self.dtype());
}

void check_dim_range(const Tensor& index, const Tensor& self, int64_t dim) {
  int64_t n = size_or_1(self, dim);
  auto bad = out_of_range(index, 0, n);
  IGNIS_CHECK(!bad, "index ", bad.value_or(0), " is out of bounds for dimension ", dim,
              " with size ", n);
}

void gather_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& self = c.tensor(0);
  const Tensor& index = c.tensor(2);
  int64_t dim = wrap_dim(c.int_arg(1), self.dim());
  if (!read_on_device(index, c.device)) check_dim_range(index, self, dim);
  gather_scatter_on(cpu::FiberOp::Gather, as_1d(self), dim, as_1d(index), as_1d(c.outputs[0]),
                    Scalar());
}

// scatter(self, dim, index, src | value), scatter_add, and their in-place forms.
// A Python number given as src arrives as a wrapped 0-dim tensor: it is the
// value form.
enum class ScatterKind { Src, Value, Add };

template <ScatterKind K>
bool scatter_has_src(const OpCall& c) {
  return K != ScatterKind::Value && !c.tensor(3).impl()->is_wrapped_number();
}

template <ScatterKind K, bool Inplace>
void scatter_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const Tensor& index = c.tensor(2);
  const char* name = K == ScatterKind::Add ? "scatter_add" : "scatter";
  int64_t dim = wrap_dim(c.int_arg(1), self.dim());
  IGNIS_CHECK(is_index_dtype(index.dtype()), name, "(): Expected dtype int64 for index");
  IGNIS_CHECK(nonempty_dim(index) == nonempty_dim(self),
              "Index tensor must have the same number of dimensions as self tensor");
  if (scatter_has_src<K>(c)) {
    const Tensor& src = c.tensor(3);
    IGNIS_CHECK(src.dtype() == self.dtype(), name,
                "(): Expected self.dtype to be equal to src.dtype");
    IGNIS_CHECK(nonempty_dim(index) == nonempty_dim(src),
                "Index tensor must have the same number of dimensions as src tensor");
    for (int64_t d = 0; d < index.dim(); ++d)
      IGNIS_CHECK((d == dim || index.sizes()[d] <= size_or_1(self, d)) &&
                      index.sizes()[d] <= size_or_1(src, d),
                  "Expected index ", index.shape_str(), " to be no larger than self ",
                  self.shape_str(), " apart from dimension ", dim,
                  " and to be no larger size than src ", src.shape_str());
  } else {
    for (int64_t d = 0; d < index.dim(); ++d)
      IGNIS_CHECK(d == dim || index.sizes()[d] <= size_or_1(self, d), "Expected index ",
                  index.shape_str(), " to be no larger than self ", self.shape_str(),
                  " apart from dimension ", dim);
  }
  if (Inplace) {
    c.outputs.push_back(self);
    bump(c, self);
  } else {
    c.alloc_strided(self.sizes(), like_strides(self), self.dtype());
  }
}

template <ScatterKind K, bool Inplace>
void scatter_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& self = c.tensor(0);
  const Tensor& index = c.tensor(2);
  const Tensor& out = c.outputs[0];
  int64_t dim = wrap_dim(c.int_arg(1), self.dim());
  if (!read_on_device(index, c.device)) check_dim_range(index, self, dim);
  if (!Inplace) copy_into(out, self);
  bool has_src = scatter_has_src<K>(c);
  Scalar value = K == ScatterKind::Value ? c.scalar(3)
                 : has_src                ? Scalar()
                                          : scalar_of(c.tensor(3));
  cpu::FiberOp op = !has_src                  ? cpu::FiberOp::ScatterFill
                    : K == ScatterKind::Add ? cpu::FiberOp::ScatterAdd
                                            : cpu::FiberOp::Scatter;
  gather_scatter_on(op, as_1d(out), dim, as_1d(index),
                    has_src ? as_1d(c.tensor(3)) : Tensor(), value);
}

// scatter_reduce(self, dim, index, src, reduce, *, include_self=True)
cpu::Reduce reduce_kind(const std::string& r) {
  if (r == "sum") return cpu::Reduce::Sum;
  if (r == "prod") return cpu::Reduce::Prod;
  if (r == "mean") return cpu::Reduce::Mean;
  if (r == "amax") return cpu::Reduce::Max;
  if (r == "amin") return cpu::Reduce::Min;
  IGNIS_FAIL("reduce argument must be either sum, prod, mean, amax or amin, got ", r);
}

template <bool Inplace>
void scatter_reduce_meta(OpCall& c) {
  reduce_kind(c.args[4].to_string());
  // A Python number binds to `src` as a wrapped number, which scatter and
  // scatter_add take as a value; scatter_reduce has no value form (torch
  // refuses the number too), and its kernel reads src at index's shape.
  IGNIS_CHECK_KIND(Type, !c.tensor(3).impl()->is_wrapped_number(),
                   "scatter_reduce(): argument 'src' must be Tensor, not a Python number");
  scatter_meta<ScatterKind::Src, Inplace>(c);
}

// cpu::scatter_reduce on out's device. On CUDA the host groups the index's
// positions by the element of out they reduce into, keeping the index's
// row-major order within a group (the CPU's order: positions meeting at one
// element lie on one fiber along dim), and the GPU folds each group.
void scatter_reduce_on(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                       cpu::Reduce r, bool include_self) {
  if (!out.device().is_cuda()) return cpu::scatter_reduce(out, dim, index, src, r, include_self);
  const int64_t n = index.numel();
  if (n == 0) return;
  std::vector<int64_t> out_off, src_off;
  position_offsets(out, dim, index, src, out_off, src_off);
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return out_off[a] < out_off[b]; });
  std::vector<int64_t> dst, starts, srcs(n);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = order[k];
    if (k == 0 || out_off[i] != out_off[order[k - 1]]) {
      dst.push_back(out_off[i]);
      starts.push_back(k);
    }
    srcs[k] = src_off[i];
  }
  starts.push_back(n);
  cuda::scatter_reduce_grouped(out.device().index, static_cast<char*>(out.data_ptr()),
                               static_cast<const char*>(src.data_ptr()), dst, starts, srcs,
                               out.dtype(), r, include_self);
}

template <bool Inplace>
void scatter_reduce_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& self = c.tensor(0);
  const Tensor& out = c.outputs[0];
  int64_t dim = wrap_dim(c.int_arg(1), self.dim());
  Tensor index = c.tensor(2);
  check_dim_range(index, self, dim);
  if (!Inplace) copy_into(out, self);
  if (index.dtype() != ScalarType::Int64) index = to_dtype_copy(index, ScalarType::Int64);
  scatter_reduce_on(as_1d(out), dim, as_1d(index), as_1d(c.tensor(3)),
                    reduce_kind(c.args[4].to_string()), c.bool_arg(5));
}

// ---- tril / triu ------------------------------------------------------------------------------
template <bool Lower, bool Inplace>
void tri_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  IGNIS_CHECK(self.dim() >= 2, Lower ? "tril" : "triu",
              ": input tensor must have at least 2 dimensions");
  if (Inplace) {
    c.outputs.push_back(self);
    bump(c, self);
  } else {
    c.alloc(self.sizes(), self.dtype());
  }
}
template <bool Lower, bool Inplace>
void tri_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& out = c.outputs[0];
  if (!Inplace) copy_into(out, c.tensor(0));
  zero_triangle(out, c.int_arg(1), Lower);
}

// ---- flip / roll ----------------------------------------------------------------------------
std::vector<bool> dim_mask(const Tensor& self, const std::vector<int64_t>& dims) {
  std::vector<bool> m(std::max<int64_t>(self.dim(), 1), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, self.dim());
    IGNIS_CHECK(!m[w], "dim ", w, " appears multiple times in the list of dims");
    m[w] = true;
  }
  return m;
}

void flip_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  dim_mask(self, c.int_list(1));
  c.alloc_strided(self.sizes(), like_strides(self), self.dtype());
}

// A flipped dim reads the source backwards: a negative stride from its end.
void flip_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& self = c.tensor(0);
  const Tensor& out = c.outputs[0];
  if (out.numel() == 0) return;
  std::vector<bool> m = dim_mask(self, c.int_list(1));
  const size_t isz = self.itemsize();
  DimVector ss = bytes(self.strides(), isz);
  const char* src = static_cast<const char*>(self.data_ptr());
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!m[d]) continue;
    src += (self.sizes()[d] - 1) * ss[d];
    ss[d] = -ss[d];
  }
  mapped_copy(out.device(), static_cast<char*>(out.data_ptr()), src,
              affine_dims(self.sizes(), bytes(out.strides(), isz), ss), self.dtype(),
              cpu::MapOp::Copy, static_cast<int>(self.dim()));
}

void roll_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const auto& shifts = c.int_list(1);
  const auto& dims = c.int_list(2);
  IGNIS_CHECK(!shifts.empty(), "`shifts` required");
  IGNIS_CHECK(dims.empty() ? shifts.size() == 1 : shifts.size() == dims.size(),
              "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  // (wrap_dim lets a 0-dim tensor's dim be 0 or -1; roll has no dim to
  // roll there, and indexing one by it wrote past the kernel's tables.)
  IGNIS_CHECK_KIND(Index, dims.empty() || self.dim() > 0, "Dimension specified as ", dims[0],
                   " but tensor has no dimensions");
  for (int64_t d : dims) wrap_dim(d, self.dim());
  c.alloc(self.sizes(), self.dtype());
}

// Position i of a rolled dim reads position (i - shift) mod n.
std::vector<int64_t> rotation_table(int64_t n, int64_t shift, int64_t byte_stride) {
  std::vector<int64_t> t(n);
  int64_t s = n ? ((shift % n) + n) % n : 0;
  for (int64_t i = 0; i < n; ++i) t[i] = ((i - s + n) % n) * byte_stride;
  return t;
}

void roll_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& self = c.tensor(0);
  const Tensor& out = c.outputs[0];
  if (out.numel() == 0) return;
  const auto& shifts = c.int_list(1);
  const auto& dims_arg = c.int_list(2);
  const int64_t isz = static_cast<int64_t>(self.itemsize());
  std::vector<MapDim> dims;
  if (dims_arg.empty()) {
    // Roll of the flattened tensor: the source order is self's row-major order.
    std::vector<int64_t> offs(self.numel());
    cpu::strided_offsets(self, offs.data());
    MapDim m;
    m.size = self.numel();
    m.dst_stride = isz;
    std::vector<int64_t> rot = rotation_table(m.size, shifts[0], 1);
    m.src_table.resize(m.size);
    for (int64_t i = 0; i < m.size; ++i) m.src_table[i] = offs[rot[i]];
    dims.push_back(std::move(m));
  } else {
    std::vector<int64_t> total(self.dim(), 0);
    std::vector<bool> rolled(self.dim(), false);
    for (size_t k = 0; k < dims_arg.size(); ++k) {
      int64_t d = wrap_dim(dims_arg[k], self.dim());
      total[d] += shifts[k];
      rolled[d] = true;
    }
    dims = affine_dims(self.sizes(), bytes(out.strides(), isz), bytes(self.strides(), isz));
    for (int64_t d = 0; d < self.dim(); ++d)
      if (rolled[d])
        dims[d].src_table = rotation_table(self.sizes()[d], total[d], dims[d].src_stride);
  }
  mapped_copy(out.device(), static_cast<char*>(out.data_ptr()),
              static_cast<const char*>(self.data_ptr()),
              std::move(dims), self.dtype(), cpu::MapOp::Copy,
              static_cast<int>(dims.size()));
}

// ---- pad ----------------------------------------------------------------------------------------
enum class PadMode { Constant, Reflect, Replicate, Circular };

PadMode pad_mode(const std::string& m) {
  if (m == "constant") return PadMode::Constant;
  if (m == "reflect") return PadMode::Reflect;
  if (m == "replicate") return PadMode::Replicate;
  if (m == "circular") return PadMode::Circular;
  IGNIS_NOT_IMPLEMENTED("Unrecognised padding mode ", m);
}

// Output size of each dim; pad[2k], pad[2k+1] pad the k-th dim from the end.
void pad_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const auto& p = c.int_list(1);
  const std::string& mode_name = c.args[2].to_string();
  PadMode mode = pad_mode(mode_name);
  const int64_t nd = self.dim(), k = static_cast<int64_t>(p.size()) / 2;
  IGNIS_CHECK(p.size() % 2 == 0, "Padding length must be divisible by 2");
  IGNIS_CHECK(k <= nd, "Padding length should be less than or equal to two times the input "
              "dimension but got padding length ", p.size(), " and input of dimension ", nd);
  if (mode != PadMode::Constant) {
    IGNIS_CHECK(c.args[3].is_none(), "Padding mode \"", mode_name,
                "\" doesn't take in value argument");
    if (k < 1 || k > 3 || (nd != k + 1 && nd != k + 2))
      IGNIS_NOT_IMPLEMENTED("Padding size ", p.size(), " is not supported for ", nd,
                            "D input tensor.\nSupported combinations for non-constant padding:\n"
                            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)");
    for (int64_t d = 1; d < nd; ++d)
      IGNIS_CHECK(self.sizes()[d] != 0, "Expected ", k + 1, "D or ", k + 2, "D (batch mode) "
                  "tensor with possibly 0 batch size and other non-zero dimensions for input, "
                  "but got: ", self.shape_str());
    if (mode == PadMode::Reflect && self.dtype() == ScalarType::Bool)
      IGNIS_NOT_IMPLEMENTED("\"reflection_pad", k, "d\" not implemented for 'Bool'");
  }
  DimVector size = self.sizes();
  for (int64_t j = 0; j < k; ++j) {
    int64_t d = nd - 1 - j, l = p[2 * j], r = p[2 * j + 1], n = self.sizes()[d];
    if (mode == PadMode::Reflect)
      IGNIS_CHECK(l < n && r < n, "Argument #4: Padding size should be less than the "
                  "corresponding input dimension, but got: padding (", l, ", ", r,
                  ") at dimension ", d, " of input ", self.shape_str());
    size[d] = n + l + r;
    if (mode == PadMode::Circular)
      IGNIS_CHECK(l <= n && r <= n && (n + std::min<int64_t>(l, 0) + std::min<int64_t>(r, 0) > 0
                                       || size[d] <= 0),
                  "Padding value causes wrapping around more than once.");
    IGNIS_CHECK(size[d] >= 0, "The input size ", n, ", plus negative padding ", l, " and ", r,
                " resulted in a negative output size, which is invalid. Check dimension ", d,
                " of your input.");
  }
  c.alloc(size, self.dtype());
}

// Source position of output position i of a dim of size n padded by (l, r).
// Reflect and replicate read the whole input; circular (as PyTorch does)
// first crops by the negative pads, then wraps around what is left.
int64_t pad_source(PadMode mode, int64_t i, int64_t l, int64_t r, int64_t n) {
  int64_t j = i - l;
  switch (mode) {
    case PadMode::Reflect:
      if (j < 0) j = -j;
      if (j >= n) j = 2 * (n - 1) - j;
      return j;
    case PadMode::Replicate: return std::clamp<int64_t>(j, 0, n - 1);
    case PadMode::Circular: {
      int64_t crop_l = std::max<int64_t>(-l, 0);
      int64_t kept = n - crop_l - std::max<int64_t>(-r, 0);
      j = i - std::max<int64_t>(l, 0);
      return ((j % kept) + kept) % kept + crop_l;
    }
    case PadMode::Constant: break;
  }
  return j;
}

void pad_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& self = c.tensor(0);
  const Tensor& out = c.outputs[0];
  if (out.numel() == 0) return;
  const auto& p = c.int_list(1);
  PadMode mode = pad_mode(c.args[2].to_string());
  const int64_t nd = self.dim(), k = static_cast<int64_t>(p.size()) / 2;
  const int64_t isz = static_cast<int64_t>(self.itemsize());
  auto dims = affine_dims(out.sizes(), bytes(out.strides(), isz), bytes(self.strides(), isz));
  char* dst = static_cast<char*>(out.data_ptr());
  const char* src = static_cast<const char*>(self.data_ptr());
  if (mode == PadMode::Constant) {
    fill_tensor(out, Scalar(c.args[3].is_none() ? 0.0 : c.double_arg(3)));
    // Copy the overlap of input and output; negative pads crop.
    for (int64_t j = 0; j < k; ++j) {
      int64_t d = nd - 1 - j, l = p[2 * j], n = self.sizes()[d];
      int64_t o0 = std::max<int64_t>(l, 0), s0 = std::max<int64_t>(-l, 0);
      int64_t len = std::min(n - s0, out.sizes()[d] - o0);
      if (len <= 0) return;
      dst += o0 * dims[d].dst_stride;
      src += s0 * dims[d].src_stride;
      dims[d].size = len;
    }
  } else {
    for (int64_t j = 0; j < k; ++j) {
      int64_t d = nd - 1 - j, l = p[2 * j], n = self.sizes()[d];
      dims[d].src_table.resize(dims[d].size);
      for (int64_t i = 0; i < dims[d].size; ++i)
        dims[d].src_table[i] = pad_source(mode, i, l, p[2 * j + 1], n) * dims[d].src_stride;
    }
  }
  mapped_copy(out.device(), dst, src, std::move(dims), self.dtype(), cpu::MapOp::Copy,
              static_cast<int>(nd));
}

// ---- advanced indexing: index / index_put_ ---------------------------------------------------
// index(self, indices): indices[i] indexes dim i of self (a k-dim boolean
// mask covers k dims and stands for its nonzero() coordinates). The index
// tensors broadcast together to shape B. When the indexed dims are adjacent,
// B replaces them in place; otherwise B comes first, then the other dims.
struct AdvIndex {
  std::vector<Tensor> idx;  // one per dim of self: an int32/int64 tensor or undefined
  DimVector bshape;
  int64_t first = -1, last = -1;
  bool adjacent = true;
  DimVector result;  // result shape
};

// Checks the indices and replaces each mask by its nonzero() coordinates,
// which needs the mask's data: on the meta device masks are refused.
std::vector<Tensor> expand_masks(const Tensor& self, const std::vector<Tensor>& indices,
                                 bool meta) {
  std::vector<Tensor> out;
  int64_t used = 0;
  for (const Tensor& t : indices) {
    if (!t.defined()) {
      out.emplace_back();
      ++used;
      continue;
    }
    ScalarType dt = t.dtype();
    IGNIS_CHECK_INDEX(is_index_dtype(dt) || is_mask_dtype(dt),
                      "tensors used as indices must be long, int, byte or bool tensors");
    if (!is_mask_dtype(dt)) {
      out.push_back(t);
      ++used;
      continue;
    }
    IGNIS_CHECK_INDEX(t.dim() > 0, "index: a 0-dim boolean index is only supported through "
                      "tensor[...] indexing");
    IGNIS_CHECK_INDEX(used + t.dim() <= self.dim(), "too many indices for tensor of dimension ",
                      self.dim(), " (got ", used + t.dim(), ")");
    for (int64_t j = 0; j < t.dim(); ++j)
      IGNIS_CHECK_INDEX(t.sizes()[j] == self.sizes()[used + j], "The shape of the mask ",
                        t.shape_str(), " at index ", j, " does not match the shape of the "
                        "indexed tensor ", self.shape_str(), " at index ", used + j);
    IGNIS_CHECK(meta || t.device().is_cpu() || t.device() == self.device(), "index: a mask on ",
                t.device().str(), " cannot index a tensor on ", self.device().str());
    if (meta)
      IGNIS_NOT_IMPLEMENTED("index: indexing with a boolean mask has a data-dependent output "
                            "shape (the number of True elements), which the meta device cannot "
                            "compute");
    Tensor nz = cpu::nonzero(host(t));  // [n, k], on the host
    int64_t n = nz.sizes()[0], k = t.dim();
    for (int64_t j = 0; j < k; ++j) out.push_back(make_view(nz, {n}, {k}, j));
    used += k;
  }
  return out;
}

AdvIndex analyse(const Tensor& self, const std::vector<Tensor>& expanded) {
  AdvIndex a;
  IGNIS_CHECK_INDEX(static_cast<int64_t>(expanded.size()) <= self.dim(),
                    "too many indices for tensor of dimension ", self.dim(), " (got ",
                    expanded.size(), ")");
  a.idx = expanded;
  a.idx.resize(self.dim());
  bool first_shape = true;
  std::string shapes;
  bool ok = true;
  for (int64_t d = 0; d < self.dim(); ++d) {
    const Tensor& t = a.idx[d];
    if (!t.defined()) continue;
    if (a.first < 0) a.first = d;
    a.last = d;
    shapes += (shapes.empty() ? "" : ", ") + t.shape_str();
    if (first_shape) {
      a.bshape = t.sizes();
      first_shape = false;
    } else if (ok) {
      // Broadcast without throwing, to raise PyTorch's IndexError below.
      const DimVector& s = t.sizes();
      size_t n = std::max(a.bshape.size(), s.size());
      DimVector b(n);
      for (size_t i = 0; i < n && ok; ++i) {
        int64_t x = i < n - a.bshape.size() ? 1 : a.bshape[i - (n - a.bshape.size())];
        int64_t y = i < n - s.size() ? 1 : s[i - (n - s.size())];
        ok = x == y || x == 1 || y == 1;
        b[i] = x == 1 ? y : x;
      }
      a.bshape = b;
    }
  }
  IGNIS_CHECK_INDEX(a.first >= 0, "at least one index must be provided");
  IGNIS_CHECK_INDEX(ok, "shape mismatch: indexing tensors could not be broadcast together with "
                    "shapes ", shapes);
  for (int64_t d = a.first; d <= a.last; ++d) a.adjacent = a.adjacent && a.idx[d].defined();
  if (a.adjacent) {
    for (int64_t d = 0; d < a.first; ++d) a.result.push_back(self.sizes()[d]);
    for (int64_t v : a.bshape) a.result.push_back(v);
    for (int64_t d = a.last + 1; d < self.dim(); ++d) a.result.push_back(self.sizes()[d]);
  } else {
    a.result = a.bshape;
    for (int64_t d = 0; d < self.dim(); ++d)
      if (!a.idx[d].defined()) a.result.push_back(self.sizes()[d]);
  }
  return a;
}

AdvIndex prepare_index(OpCall& c) {
  const Tensor& self = c.tensor(0);
  std::vector<Tensor> expanded =
      expand_masks(self, c.args[1].to_opt_tensor_list(), c.device.is_meta());
  AdvIndex a = analyse(self, expanded);
  // The kernel then sees only integer indices (masks already resolved).
  c.args[1] = IValue::OptTensors{std::move(expanded)};
  return a;
}

// IndexError naming the first out-of-range index value.
void check_index_bounds(const Tensor& self, const AdvIndex& a) {
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!a.idx[d].defined()) continue;
    int64_t n = self.sizes()[d];
    auto bad = out_of_range(a.idx[d], -n, n);
    IGNIS_CHECK_INDEX(!bad, "index ", bad.value_or(0), " is out of bounds for dimension ", d,
                      " with size ", n);
  }
}

// The map of the result (with B flattened into one dim) onto self: along B,
// self is addressed through the table of offsets the index values give.
// `res` is the other side (the output, or the values broadcast to the
// result shape); its B dims need a table too, as they may not merge.
struct IndexMap {
  std::vector<MapDim> dims;
  int b_pos = 0;  // position of the flattened B dim
  std::vector<cuda::DeviceIndex> device;  // the indices a CUDA kernel reads itself
};

// Whether a CUDA kernel reads a's indices itself (Note [Index errors on the
// GPU]): at most kMaxDeviceIndices of them, each on self's CUDA device and
// stepping by one stride along the flattened B dim once broadcast.
bool reads_indices_on_device(const Tensor& self, const AdvIndex& a) {
  if (!self.device().is_cuda()) return false;
  int count = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!a.idx[d].defined()) continue;
    const Tensor x = expand_view(a.idx[d], a.bshape);
    if (++count > cuda::kMaxDeviceIndices || !read_on_device(x, self.device()) ||
        !cpu::collapsed_stride(a.bshape, x.strides()))
      return false;
  }
  return true;
}

IndexMap index_map(const Tensor& self, const AdvIndex& a, const Tensor& res, bool self_is_dst,
                   bool device_read) {
  const int64_t isz = static_cast<int64_t>(self.itemsize());
  const int64_t nb = static_cast<int64_t>(a.bshape.size());
  const DimVector res_bytes = bytes(res.strides(), self.itemsize());
  IndexMap m;
  std::vector<int64_t> self_dims;  // the non-indexed dims of self, in result order
  if (a.adjacent) {
    for (int64_t d = 0; d < a.first; ++d) self_dims.push_back(d);
    m.b_pos = static_cast<int>(a.first);
  }
  for (int64_t d = a.adjacent ? a.last + 1 : 0; d < self.dim(); ++d)
    if (!a.idx[d].defined()) self_dims.push_back(d);

  std::vector<Tensor> idx;
  std::vector<int64_t> sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!a.idx[d].defined()) continue;
    idx.push_back(expand_view(a.idx[d], a.bshape));
    sizes.push_back(self.sizes()[d]);
    strides.push_back(self.strides()[d] * isz);
  }
  MapDim bdim;
  bdim.size = compute_numel(a.bshape);
  if (device_read) {  // the kernel reads each index at its step along B
    const size_t ndims = self_dims.size() + 1;
    size_t j = 0;
    for (int64_t d = 0; d < self.dim(); ++d) {
      if (!a.idx[d].defined()) continue;
      const int64_t step = *cpu::collapsed_stride(a.bshape, idx[j].strides());
      m.device.push_back(device_index(idx[j], ndims, {{size_t(m.b_pos), step}}, strides[j],
                                      sizes[j], d, true, self_is_dst,
                                      cuda::KernelErrorKind::IndexOutOfBounds));
      ++j;
    }
  } else {
    std::vector<int64_t> table(bdim.size);
    index_offsets(idx, sizes, strides, table.data());
    (self_is_dst ? bdim.dst_table : bdim.src_table) = std::move(table);
  }
  DimVector rs(res.strides().begin() + m.b_pos, res.strides().begin() + m.b_pos + nb);
  // res's side of B steps affinely unless its B dims do not merge (then a table).
  if (std::optional<int64_t> step = cpu::collapsed_stride(a.bshape, rs)) {
    (self_is_dst ? bdim.src_stride : bdim.dst_stride) = *step * isz;
  } else {
    std::vector<int64_t> other(bdim.size);
    cpu::strided_offsets(make_view(res, a.bshape, rs, res.storage_offset()), other.data());
    (self_is_dst ? bdim.src_table : bdim.dst_table) = std::move(other);
  }

  int64_t r = 0;  // result dim
  for (size_t i = 0; i <= self_dims.size(); ++i) {
    if (static_cast<int>(i) == m.b_pos) {
      m.dims.push_back(std::move(bdim));
      r += nb;
      continue;
    }
    int64_t d = self_dims[static_cast<int>(i) < m.b_pos ? i : i - 1];
    int64_t ss = self.strides()[d] * isz;
    MapDim md;
    md.size = self.sizes()[d];
    md.dst_stride = self_is_dst ? ss : res_bytes[r];
    md.src_stride = self_is_dst ? res_bytes[r] : ss;
    m.dims.push_back(std::move(md));
    ++r;
  }
  return m;
}

// x[mask] with one mask over the leading dims of a CPU tensor whose other dims
// are contiguous: the kernel walks the mask itself (no nonzero() coordinates).
bool leading_mask(const OpCall& c) {
  const Tensor& self = c.tensor(0);
  const auto& indices = c.args[1].to_opt_tensor_list();
  if (c.device.is_meta() || indices.size() != 1 || !indices[0].defined()) return false;
  const Tensor& m = indices[0];
  if (!is_mask_dtype(m.dtype()) || m.dim() == 0 || m.dim() > self.dim() || !m.device().is_cpu() ||
      !self.device().is_cpu())
    return false;
  for (int64_t d = 0; d < m.dim(); ++d)
    if (m.sizes()[d] != self.sizes()[d]) return false;  // the general path raises
  int64_t expected = 1;
  for (int64_t d = self.dim() - 1; d >= m.dim(); --d) {
    if (self.sizes()[d] != 1 && self.strides()[d] != expected) return false;
    expected *= self.sizes()[d];
  }
  return true;
}

void index_meta(OpCall& c) {
  if (leading_mask(c)) {
    const Tensor& self = c.tensor(0);
    const Tensor& m = c.args[1].to_opt_tensor_list()[0];
    DimVector size{cpu::count_true(m)};
    for (int64_t d = m.dim(); d < self.dim(); ++d) size.push_back(self.sizes()[d]);
    c.alloc(size, self.dtype());
    return;
  }
  AdvIndex a = prepare_index(c);
  c.alloc(a.result, c.tensor(0).dtype());
}

void index_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& self = c.tensor(0);
  const Tensor& out = c.outputs[0];
  if (leading_mask(c)) {
    cpu::masked_gather(out, self, c.args[1].to_opt_tensor_list()[0]);
    return;
  }
  AdvIndex a = analyse(self, c.args[1].to_opt_tensor_list());
  const bool device_read = reads_indices_on_device(self, a);
  if (!device_read) check_index_bounds(self, a);
  if (out.numel() == 0) return;
  IndexMap m = index_map(self, a, out, false, device_read);
  mapped_copy(out.device(), static_cast<char*>(out.data_ptr()),
              static_cast<const char*>(self.data_ptr()),
              std::move(m.dims), self.dtype(), cpu::MapOp::Copy,
              static_cast<int>(a.result.size()), Scalar(int64_t(1)), std::move(m.device));
}

void index_put_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const Tensor& values = c.tensor(2);
  AdvIndex a = prepare_index(c);
  IGNIS_CHECK(expandable_to(values.sizes(), a.result), "shape mismatch: value tensor of shape ",
              values.shape_str(), " cannot be broadcast to indexing result of shape ",
              shape_str(a.result));
  // A 0-dim value converts like a scalar; a dimensioned one must match.
  IGNIS_CHECK(values.dtype() == self.dtype() || values.dim() == 0, "Index put requires the "
              "source and destination "
              "dtypes match, got ", scalar_type_name(self.dtype()), " for the destination and ",
              scalar_type_name(values.dtype()), " for the source.");
  if (!c.device.is_meta()) {
    cpu::MemOverlap o = cpu::mem_overlap(self, values);
    IGNIS_CHECK(o == cpu::MemOverlap::No || o == cpu::MemOverlap::TooHard, cpu::kOverlapMessage);
  }
  c.outputs.push_back(self);
  bump(c, self);
}

void index_put_impl(OpCall& c) {
  expect_one_device(c);
  const Tensor& self = c.tensor(0);
  AdvIndex a = analyse(self, c.args[1].to_opt_tensor_list());
  const bool device_read = reads_indices_on_device(self, a);
  if (!device_read) check_index_bounds(self, a);
  if (compute_numel(a.result) == 0) return;
  Tensor values = on_device(c.tensor(2), self.device());  // a 0-dim CPU value
  if (values.dtype() != self.dtype()) values = to_dtype_copy(values, self.dtype());
  values = expand_view(values, a.result);
  // Only the dims before B may run in parallel: along B two positions may
  // hit the same element, and the later one must win (or add last).
  IndexMap m = index_map(self, a, values, true, device_read);
  mapped_copy(self.device(), static_cast<char*>(self.data_ptr()),
              static_cast<const char*>(values.data_ptr()), std::move(m.dims), self.dtype(),
              c.bool_arg(3) ? cpu::MapOp::Add : cpu::MapOp::Copy, m.b_pos, Scalar(int64_t(1)),
              std::move(m.device));
}

void index_put_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor out = clone_op.tensor(s[0].to_tensor());
  index_put_op.call(out, s[1], s[2], s[3]);
  ret(s, out);
}

// ---- nonzero / masked_select / where / take ---------------------------------------------------
void nonzero_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  if (self.device().is_meta())
    IGNIS_NOT_IMPLEMENTED("nonzero: the output shape depends on the data (the number of nonzero "
                          "elements), which the meta device cannot compute");
  // On CUDA: the coordinates are found on the host, from a copy (the output's
  // size needs the data there anyway), and copied back.
  ret(s, on_device(cpu::nonzero(host(self)), self.device()));
}

void masked_select_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor(), mask = s[1].to_tensor();
  IGNIS_CHECK(mask.dtype() == ScalarType::Bool, "masked_select: expected BoolTensor for mask");
  DimVector shape = broadcast_shapes(self.sizes(), mask.sizes());
  if (shape.empty()) shape.push_back(1);
  Tensor se = expand_op.tensor(self, shape.vec()), me = expand_op.tensor(mask, shape.vec());
  Tensor flat_self = reshape_to(se, {-1}), flat_mask = reshape_to(me, {-1});
  ret(s, index_op.tensor(flat_self, IValue::OptTensors{{flat_mask}}));
}

void where_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor cond = s[0].to_tensor();
  if (cond.dim() == 0) cond = unsqueeze_op.tensor(cond, int64_t(0));
  Tensor nz = nonzero_op.tensor(cond);
  Stack r = unbind_op.call(nz, int64_t(1));
  s.clear();
  s.push_back(std::move(r[0]));
}

void take_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor(), index = s[1].to_tensor();
  IGNIS_CHECK(index.dtype() == ScalarType::Int64, "take(): Expected a long tensor for index, "
              "but got ", scalar_type_name(index.dtype()));
  int64_t n = self.numel();
  // A CUDA index the index kernel reads on the device is checked there, in
  // its words (Note [Index errors on the GPU]); others here, in take's.
  const bool on_device = index.device().is_cuda() && read_on_device(index, self.device());
  if (index.device().is_cpu() || (index.device().is_cuda() && !on_device)) {  // not meta or fake
    auto bad = out_of_range(index, -n, n);
    IGNIS_CHECK_INDEX(!bad, "out of range: tried to access index ", bad.value_or(0),
                      " on a tensor of ", n, " elements.");
  }
  ret(s, index_op.tensor(reshape_to(self, {-1}), IValue::OptTensors{{index}}));
}

void flip_dims_kernel(Stack& s, int64_t dim, int64_t min_dim, const char* msg) {
  Tensor self = s[0].to_tensor();
  IGNIS_CHECK(self.dim() >= min_dim, msg);
  ret(s, flip_op.tensor(self, std::vector<int64_t>{dim}));
}
void fliplr_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  flip_dims_kernel(s, 1, 2, "Input must be >= 2-d.");
}
void flipud_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  flip_dims_kernel(s, 0, 1, "Input must be >= 1-d.");
}

// ---- derivatives ------------------------------------------------------------------
using namespace grad_ops;  // NOLINT

void cat_bw(GradCtx& c) {
  const auto& geom = c.geom[0];
  int64_t nd = 0;
  for (const auto& g : geom)
    if (!(g.sizes.size() == 1 && g.sizes[0] == 0)) nd = static_cast<int64_t>(g.sizes.size());
  int64_t dim = wrap_dim(c.int_arg(1), nd);
  std::vector<Tensor> out;
  int64_t off = 0;
  for (const auto& g : geom) {
    if (static_cast<int64_t>(g.sizes.size()) != nd) {  // a legacy empty 1-D input
      out.push_back(zeros(g.sizes, c.grad().dtype(), c.grad().user_device()));
      continue;
    }
    out.push_back(op("narrow", c.grad(), dim, off, g.sizes[dim]));
    off += g.sizes[dim];
  }
  c.set_list(0, std::move(out));
}
// repeat: each input element collects the gradients of all its copies.
void repeat_bw(GradCtx& c) {
  const auto& reps = c.int_list(1);
  const DimVector& sizes = c.sizes(0);
  int64_t lead = static_cast<int64_t>(reps.size() - sizes.size());
  std::vector<int64_t> shape, sum_dims_;
  for (size_t i = 0; i < reps.size(); ++i) {
    int64_t s = static_cast<int64_t>(i) < lead ? 1 : sizes[i - lead];
    sum_dims_.push_back(static_cast<int64_t>(shape.size()));
    shape.push_back(reps[i]);
    shape.push_back(s);
  }
  Tensor g = reshape(c.grad(), DimVector(shape));
  c.set(0, reshape(sum_dims(g, sum_dims_, false), sizes));
}
int64_t dim_arg(const GradCtx& c, int i) {
  return wrap_dim(c.int_arg(i), static_cast<int64_t>(c.sizes(0).size()));
}
Tensor zeros_of_self(const GradCtx& c) {
  return zeros(c.sizes(0), c.grad().dtype(), c.grad().user_device());
}
void index_select_bw(GradCtx& c) {
  c.set(0, op("index_add", zeros_of_self(c), dim_arg(c, 1), c.in(2), c.grad()));
}
void gather_bw(GradCtx& c) {
  c.set(0, op("scatter_add", zeros_of_self(c), dim_arg(c, 1), c.in(2), c.grad()));
}
void scatter_bw(GradCtx& c) {
  int64_t dim = dim_arg(c, 1);
  c.set(0, op("scatter.value", c.grad(), dim, c.in(2), 0.0));
  if (c.needs_grad(3)) c.set(3, op("gather", c.grad(), dim, c.in(2)));
}
void scatter_add_bw(GradCtx& c) {
  c.set(0, c.grad());
  if (c.needs_grad(3)) c.set(3, op("gather", c.grad(), dim_arg(c, 1), c.in(2)));
}
void index_add_bw(GradCtx& c) {
  c.set(0, c.grad());
  if (c.needs_grad(3)) {
    Tensor g = op("index_select", c.grad(), dim_arg(c, 1), c.in(2));
    double alpha = c.scalar(4).to_double();
    c.set(3, alpha == 1.0 ? g : mul(g, alpha));
  }
}
void index_copy_bw(GradCtx& c) {
  int64_t dim = dim_arg(c, 1);
  c.set(0, op("index_fill.int_Tensor", c.grad(), dim, c.in(2), scalar(0.0)));
  if (c.needs_grad(3)) c.set(3, op("index_select", c.grad(), dim, c.in(2)));
}
void index_fill_bw(GradCtx& c) {
  int64_t dim = dim_arg(c, 1);
  c.set(0, op("index_fill.int_Tensor", c.grad(), dim, c.in(2), scalar(0.0)));
  if (c.needs_grad(3)) c.set(3, op("index_select", c.grad(), dim, c.in(2)));
}
void tril_bw(GradCtx& c) { c.set(0, op("tril", c.grad(), c.int_arg(1))); }
void triu_bw(GradCtx& c) { c.set(0, op("triu", c.grad(), c.int_arg(1))); }
void flip_bw(GradCtx& c) { c.set(0, op("flip", c.grad(), c.int_list(1))); }
void roll_bw(GradCtx& c) {
  std::vector<int64_t> back;
  for (int64_t s : c.int_list(1)) back.push_back(-s);
  c.set(0, op("roll", c.grad(), back, c.int_list(2)));
}
void pad_bw(GradCtx& c) {
  const std::string& mode = c.args[2].to_string();
  if (mode != "constant") {
    // reflect/replicate/circular: pad the flat index of every input element
    // the same way to learn which input element each output element copies,
    // then add the gradients up there.
    const DimVector& sizes = c.sizes(0);
    int64_t n = compute_numel(sizes);
    Tensor idx = OpRef("arange.start").tensor(int64_t(0), n, int64_t(1), ScalarType::Int64,
                                              c.grad().user_device());
    Tensor src = op("pad", reshape(idx, sizes), c.int_list(1), mode, c.args[3]);
    Tensor flat = zeros(DimVector{n}, c.grad().dtype(), c.grad().user_device());
    flat = op("index_put", flat, IValue::OptTensors{{reshape(src, DimVector{-1})}},
              reshape(c.grad(), DimVector{-1}), true);
    c.set(0, reshape(flat, sizes));
    return;
  }
  std::vector<int64_t> crop;
  for (int64_t p : c.int_list(1)) crop.push_back(-p);
  c.set(0, op("pad", c.grad(), crop, std::string("constant"), 0.0));
}
void index_bw(GradCtx& c) {
  c.set(0, op("index_put", zeros_of_self(c), c.args[1], c.grad(), true));
}
// torch's masked_select_backward: the gradient scattered where the mask
// holds into zeros of the broadcast shape, summed to self's. It saves self,
// as torch's does (so writing self before backward raises there too).
void masked_select_bw(GradCtx& c) {
  const Tensor& g = c.grad();
  DimVector shape = broadcast_shapes(c.sizes(0), c.sizes(1));
  if (shape.empty()) shape.push_back(1);
  static OpRef index_put_fn("index_put");
  const Tensor& self = c.in(0);  // read (version-checked) as torch's zeros_like(self) reads it
  Tensor mask = expand_op.tensor(c.in(1), shape.vec());
  Tensor z = index_put_fn.tensor(zeros(shape, self.dtype(), g.user_device()),
                                 IValue::OptTensors{{mask}}, g, false);
  c.set(0, sum_to(z, c.sizes(0)));
}

void index_put_bw(GradCtx& c) {
  bool acc = c.bool_arg(3);
  c.set(0, acc ? c.grad() : op("index_put", c.grad(), c.args[1], scalar(0.0), false));
  if (c.needs_grad(2)) c.set(2, op("index.Tensor", c.grad(), c.args[1]));
}
// scatter_reduce: sum and mean spread the gradient over what met at each
// element; amax/amin give it to the values equal to the result (shared evenly).
void scatter_reduce_bw(GradCtx& c) {
  const std::string& how = c.args[4].to_string();
  IGNIS_CHECK_KIND(NotImplemented, how != "prod",
                   "the derivative of scatter_reduce(reduce='prod') is not implemented in ignis");
  int64_t dim = dim_arg(c, 1);
  const Tensor& idx = c.in(2);
  const Tensor& g = c.grad();
  bool include_self = c.bool_arg(5);
  Tensor ones_src = op("ones_like", c.in(3));
  auto hits = [&](const Tensor& per_src) {  // sum of per_src over the sources of each element
    return op("scatter_add", zeros_of_self(c), dim, idx, per_src);
  };
  // Elements no source reaches keep self's value (its gradient is g there).
  Tensor reached = op("gt", hits(to_dtype(ones_src, g.dtype())), scalar(0.0));
  if (how == "sum" || how == "mean") {
    Tensor gg = g;
    if (how == "mean") {
      Tensor n = hits(to_dtype(ones_src, g.dtype()));
      if (include_self) n = add(n, scalar(1.0));
      gg = div(g, where(op("eq", n, scalar(0.0)), op("ones_like", n), n));
    }
    c.set(0, include_self ? gg : where(reached, zeros_like(g), g));
    if (c.needs_grad(3)) c.set(3, op("gather", gg, dim, idx));
    return;
  }
  const Tensor& r = c.result();
  Tensor self_hit = to_dtype(op("eq", c.in(0), r), g.dtype());
  if (!include_self) self_hit = where(reached, zeros_like(self_hit), op("ones_like", self_hit));
  Tensor src_hit = to_dtype(op("eq", c.in(3), op("gather", r, dim, idx)), g.dtype());
  Tensor count = add(self_hit, hits(src_hit));
  Tensor share = div(g, where(op("eq", count, scalar(0.0)), op("ones_like", count), count));
  c.set(0, mul(share, self_hit));
  if (c.needs_grad(3)) c.set(3, mul(op("gather", share, dim, idx), src_hit));
}


}  // namespace

void register_index_ops() {
  def("cat(Tensor[] tensors, int dim=0) -> Tensor").category(OpCategory::Other).meta(cat_meta)
      .cpu_and_cuda(cat_impl).doc("concatenation along dim (inputs promote to a common dtype)")
      .derivative(cat_bw).core();
  def("stack(Tensor[] tensors, int dim=0) -> Tensor").category(OpCategory::Composite)
      .composite(stack_kernel).doc("concatenation along a new dim");
  def("hstack(Tensor[] tensors) -> Tensor").category(OpCategory::Composite)
      .composite(hstack_kernel);
  def("vstack(Tensor[] tensors) -> Tensor").category(OpCategory::Composite)
      .composite(vstack_kernel);
  def("dstack(Tensor[] tensors) -> Tensor").category(OpCategory::Composite)
      .composite(dstack_kernel);
  def("column_stack(Tensor[] tensors) -> Tensor").category(OpCategory::Composite)
      .composite(column_stack_kernel);
  def("repeat(Tensor self, int[] repeats) -> Tensor").category(OpCategory::Other).method_only()
      .meta(repeat_meta).cpu_and_cuda(repeat_impl).doc("self tiled repeats[i] times along dim i")
      .derivative(repeat_bw).decomposition(decomp::repeat);
  def("tile(Tensor self, int[] dims) -> Tensor").category(OpCategory::Composite).both()
      .composite(tile_kernel);
  def("index_select(Tensor self, int dim, Tensor index) -> Tensor").category(OpCategory::Other)
      .both().meta(index_select_meta).cpu_and_cuda(index_select_impl)
      .doc("the entries index of dim")
      .derivative(index_select_bw, "index").core();
  def("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor")
      .category(OpCategory::Other).both().meta(gather_meta).cpu_and_cuda(gather_impl)
      .doc("out[i][j] = self[index[i][j]][j] (for dim 0)")
      .derivative(gather_bw, "index").core();
  using SK = ScatterKind;
  def("scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor")
      .category(OpCategory::Other).both().meta(scatter_meta<SK::Src, false>)
      .cpu_and_cuda(scatter_impl<SK::Src, false>)
      .doc("self with self[index[i][j]][j] = src[i][j] (for dim 0)")
      .derivative(scatter_bw, "index").core();
  def("scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor")
      .category(OpCategory::Other).both().meta(scatter_meta<SK::Value, false>)
      .cpu_and_cuda(scatter_impl<SK::Value, false>).derivative(scatter_bw, "index").core();
  def("scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)")
      .category(OpCategory::Other).method_only().meta(scatter_meta<SK::Src, true>)
      .cpu_and_cuda(scatter_impl<SK::Src, true>)
      .derivative(scatter_bw, "index");
  def("scatter_.value(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)")
      .category(OpCategory::Other).method_only().meta(scatter_meta<SK::Value, true>)
      .cpu_and_cuda(scatter_impl<SK::Value, true>)
      .derivative(scatter_bw, "index");
  def("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor")
      .category(OpCategory::Other).both().meta(scatter_meta<SK::Add, false>)
      .cpu_and_cuda(scatter_impl<SK::Add, false>)
      .doc("self with self[index[i][j]][j] += src[i][j] (for dim 0)")
      .derivative(scatter_add_bw, "index").core();
  def("scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)")
      .category(OpCategory::Other).method_only().meta(scatter_meta<SK::Add, true>)
      .cpu_and_cuda(scatter_impl<SK::Add, true>)
      .derivative(scatter_add_bw, "index");
  def("scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, "
      "bool include_self=True) -> Tensor")
      .category(OpCategory::Other).both().meta(scatter_reduce_meta<false>)
      .cpu_and_cuda(scatter_reduce_impl<false>)
      .doc("scatter with sum, prod, mean, amax or amin of the values meeting at an element")
      .derivative(scatter_reduce_bw, "self, index, src, result").core();
  def("scatter_reduce_.two(Tensor(a!) self, int dim, Tensor index, Tensor src, str reduce, *, "
      "bool include_self=True) -> Tensor(a!)").category(OpCategory::Other).method_only()
      .meta(scatter_reduce_meta<true>).cpu_and_cuda(scatter_reduce_impl<true>)
      .derivative(scatter_reduce_bw, "self, index, src, result");
  def("scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor")
      .category(OpCategory::Other).composite(scatter_with_reduce_kernel<false>);
  def("scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> "
      "Tensor").category(OpCategory::Other).composite(scatter_with_reduce_kernel<false>);
  def("scatter_.reduce(Tensor(a!) self, int dim, Tensor index, Tensor src, *, str reduce) -> "
      "Tensor(a!)").category(OpCategory::Other).method_only()
      .composite(scatter_with_reduce_kernel<true>);
  def("scatter_.value_reduce(Tensor(a!) self, int dim, Tensor index, Scalar value, *, "
      "str reduce) -> Tensor(a!)").category(OpCategory::Other).method_only()
      .composite(scatter_with_reduce_kernel<true>);
  using IK = IndexedOp;
  def("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor")
      .category(OpCategory::Other).both().meta(indexed_meta<IK::Add, false>)
      .cpu_and_cuda(indexed_impl<IK::Add, false>)
      .doc("self with source[i] * alpha added at index[i] along dim")
      .derivative(index_add_bw, "index").decomposition(decomp::index_add);
  def("index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> "
      "Tensor(a!)").category(OpCategory::Other).method_only().meta(indexed_meta<IK::Add, true>)
      .cpu_and_cuda(indexed_impl<IK::Add, true>)
      .derivative(index_add_bw, "index");
  def("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor")
      .category(OpCategory::Other).both().meta(indexed_meta<IK::Copy, false>)
      .cpu_and_cuda(indexed_impl<IK::Copy, false>)
      .doc("self with source[i] written at index[i] along dim")
      .derivative(index_copy_bw, "index").decomposition(decomp::index_copy);
  def("index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)")
      .category(OpCategory::Other).method_only().meta(indexed_meta<IK::Copy, true>)
      .cpu_and_cuda(indexed_impl<IK::Copy, true>)
      .derivative(index_copy_bw, "index");
  def("index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor")
      .category(OpCategory::Other).both().meta(indexed_meta<IK::Fill, false>)
      .cpu_and_cuda(indexed_impl<IK::Fill, false>)
      .doc("self with value written at the entries index of dim")
      .derivative(index_fill_bw, "index").decomposition(decomp::index_fill);
  def("index_fill_.int_Tensor(Tensor(a!) self, int dim, Tensor index, Tensor value) -> "
      "Tensor(a!)").category(OpCategory::Other).method_only().meta(indexed_meta<IK::Fill, true>)
      .cpu_and_cuda(indexed_impl<IK::Fill, true>)
      .derivative(index_fill_bw, "index");
  def("take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor")
      .category(OpCategory::Composite).both().composite(take_along_dim_kernel)
      .doc("gather with indices broadcast against self");
  def("tril(Tensor self, int diagonal=0) -> Tensor").category(OpCategory::Other).both()
      .meta(tri_meta<true, false>).cpu_and_cuda(tri_impl<true, false>).doc("lower triangle")
      .derivative(tril_bw).decomposition(decomp::tril_triu);
  def("tril_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)").category(OpCategory::Other)
      .method_only().meta(tri_meta<true, true>).cpu_and_cuda(tri_impl<true, true>)
      .derivative(tril_bw);
  def("triu(Tensor self, int diagonal=0) -> Tensor").category(OpCategory::Other).both()
      .meta(tri_meta<false, false>).cpu_and_cuda(tri_impl<false, false>).doc("upper triangle")
      .derivative(triu_bw).decomposition(decomp::tril_triu);
  def("triu_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)").category(OpCategory::Other)
      .method_only().meta(tri_meta<false, true>).cpu_and_cuda(tri_impl<false, true>)
      .derivative(triu_bw);
  def("flip(Tensor self, int[] dims) -> Tensor").category(OpCategory::Other).both().meta(flip_meta)
      .cpu_and_cuda(flip_impl).doc("reverses the order along dims")
      .derivative(flip_bw).core();
  def("fliplr(Tensor self) -> Tensor").category(OpCategory::Composite).both()
      .composite(fliplr_kernel);
  def("flipud(Tensor self) -> Tensor").category(OpCategory::Composite).both()
      .composite(flipud_kernel);
  def("roll(Tensor self, int[] shifts, int[] dims=[]) -> Tensor").category(OpCategory::Other).both()
      .meta(roll_meta).cpu_and_cuda(roll_impl)
      .doc("rotates along dims (the flattened tensor if none)")
      .derivative(roll_bw).decomposition(decomp::roll);
  def("pad(Tensor self, int[] pad, str mode='constant', float? value=None) -> Tensor")
      .category(OpCategory::Other).meta(pad_meta).cpu_and_cuda(pad_impl)
      .doc("pads (or, with negative pads, crops) the last len(pad)/2 dims")
      .derivative(pad_bw).core();
  def("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor").category(OpCategory::Other)
      .meta(index_meta).cpu_and_cuda(index_impl)
      .doc("advanced (NumPy) indexing with integer and boolean tensors").derivative(index_bw)
      .core();
  def("index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> "
      "Tensor(a!)").category(OpCategory::Other).both().meta(index_put_meta)
      .cpu_and_cuda(index_put_impl)
      .doc("self[indices] = values (or += with accumulate)")
      .derivative(index_put_bw);
  def("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor")
      .category(OpCategory::Composite).both().composite(index_put_kernel).core();
  def("nonzero(Tensor self) -> Tensor").category(OpCategory::Other).both().kernel(nonzero_kernel)
      .data_dependent("nonzero(): the output's shape is the number of nonzero elements "
                      "(data-dependent)")
      .doc("[n, dim] coordinates of the nonzero elements").core();
  def("masked_select(Tensor self, Tensor mask) -> Tensor").category(OpCategory::Other).both()
      .kernel(masked_select_kernel).derivative(masked_select_bw, "self, mask").core()
      .data_dependent("masked_select(): the output's shape is the number of elements where the "
                      "mask holds (data-dependent)")
      .doc("1-D tensor of the elements where mask holds");
  def("where(Tensor condition) -> Tensor[]").category(OpCategory::Composite).composite(where_kernel)
      .doc("nonzero(condition) as a tuple of 1-D index tensors");
  def("take(Tensor self, Tensor index) -> Tensor").category(OpCategory::Composite).both()
      .composite(take_kernel).doc("self.flatten()[index]");
  // PyTorch's other names of cat.
  alias("concat", "cat");
  alias("concatenate", "cat");
}

}  // namespace ignis

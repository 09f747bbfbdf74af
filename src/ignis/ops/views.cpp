// View ops: results share storage (and the version counter) with the input.
// One kernel serves every backend: a view only computes new geometry.
#include <algorithm>
#include <numeric>
#include <optional>

#include "ignis/autograd/formula.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

using Geometry = std::pair<DimVector, DimVector>;  // sizes, strides

void ret(Stack& s, Tensor t) {
  s.clear();
  s.emplace_back(std::move(t));
}
void ret_list(Stack& s, std::vector<Tensor> l) {
  s.clear();
  s.emplace_back(std::move(l));
}

// Replaces one -1 in `shape` so that it holds numel elements.
DimVector infer_size(const std::vector<int64_t>& shape, int64_t numel) {
  DimVector out(shape);
  int64_t known = 1;
  bool overflow = false;
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      IGNIS_CHECK(!infer, "only one dimension can be inferred");
      infer = i;
    } else {
      IGNIS_CHECK(out[i] >= 0, "invalid shape dimension ", out[i], " at index ", i, " of shape ",
                  shape_str(shape));
      overflow |= __builtin_mul_overflow(known, out[i], &known);
    }
  }
  IGNIS_CHECK(!overflow, "shape '", shape_str(shape), "' is invalid for input of size ", numel);
  if (infer) {
    IGNIS_CHECK(known != 0, "cannot reshape tensor of 0 elements into shape ", shape_str(shape),
                " because the unspecified dimension size -1 can be any value and is ambiguous");
    IGNIS_CHECK(numel % known == 0, "shape '", shape_str(shape),
                "' is invalid for input of size ", numel);
    out[*infer] = numel / known;
  } else {
    IGNIS_CHECK(known == numel, "shape '", shape_str(shape), "' is invalid for input of size ", numel);
  }
  return out;
}

// Strides for viewing (sizes, strides) as new_sizes without copying, or
// nothing when impossible (PyTorch's computeStride).
std::optional<DimVector> view_strides(const DimVector& sizes, const DimVector& strides,
                                      const DimVector& new_sizes) {
  DimVector out(new_sizes.size());
  if (sizes.empty()) {
    std::fill(out.begin(), out.end(), 1);
    return out;
  }
  int64_t numel = compute_numel(sizes);
  if (numel == 0) {
    if (sizes == new_sizes) return strides;
    return contiguous_strides(new_sizes);
  }
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

void view_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  DimVector shape = infer_size(s[1].to_int_list(), self.numel());
  auto st = view_strides(self.sizes(), self.strides(), shape);
  IGNIS_CHECK(st.has_value(), "view size is not compatible with input tensor's size and stride (at "
              "least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  ret(s, make_view(self, shape, *st, self.storage_offset()));
}

void reshape_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  DimVector shape = infer_size(s[1].to_int_list(), self.numel());
  if (view_strides(self.sizes(), self.strides(), shape)) {
    // Through the view op (not make_view) so that autograd records it.
    static OpRef view("view");
    ret(s, view.tensor(self, shape.vec()));
    return;
  }
  // Not viewable, so not contiguous: contiguous() copies.
  Tensor contig = OpRef("contiguous").tensor(self);
  ret(s, OpRef("view").tensor(contig, shape.vec()));
}

void view_as_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  std::vector<int64_t> shape = s[1].to_tensor().sizes().vec();
  ret(s, OpRef("view").tensor(self, shape));
}
void reshape_as_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  std::vector<int64_t> shape = s[1].to_tensor().sizes().vec();
  ret(s, OpRef("reshape").tensor(self, shape));
}

void permute_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  const auto& dims = s[1].to_int_list();
  int64_t nd = self.dim();
  IGNIS_CHECK(static_cast<int64_t>(dims.size()) == nd, "permute(sparse_coo): number of dimensions in "
              "the tensor input does not match the length of the desired ordering of dimensions i.e. "
              "input.dim() = ", nd, " is not equal to len(dims) = ", dims.size());
  DimVector sz(nd), st(nd);
  std::vector<bool> seen(nd, false);
  for (int64_t i = 0; i < nd; ++i) {
    int64_t d = wrap_dim(dims[i], nd);
    IGNIS_CHECK(!seen[d], "permute(): duplicate dims are not allowed.");
    seen[d] = true;
    sz[i] = self.sizes()[d];
    st[i] = self.strides()[d];
  }
  ret(s, make_view(self, sz, st, self.storage_offset()));
}

Geometry transposed(const Tensor& self, int64_t d0, int64_t d1) {
  DimVector sz = self.sizes(), st = self.strides();
  d0 = wrap_dim(d0, self.dim());
  d1 = wrap_dim(d1, self.dim());
  if (self.dim() == 0) return {sz, st};
  std::swap(sz[d0], sz[d1]);
  std::swap(st[d0], st[d1]);
  return {sz, st};
}

void transpose_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  auto [sz, st] = transposed(self, s[1].to_int(), s[2].to_int());
  ret(s, make_view(self, sz, st, self.storage_offset()));
}
void transpose_inplace_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  auto [sz, st] = transposed(self, s[1].to_int(), s[2].to_int());
  self.impl()->set_geometry(sz, st, self.storage_offset());
  ret(s, self);
}

void check_t(const Tensor& self) {
  IGNIS_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
}
void t_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  check_t(self);
  auto [sz, st] = transposed(self, 0, self.dim() > 1 ? 1 : 0);
  ret(s, make_view(self, sz, st, self.storage_offset()));
}
void t_inplace_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  check_t(self);
  auto [sz, st] = transposed(self, 0, self.dim() > 1 ? 1 : 0);
  self.impl()->set_geometry(sz, st, self.storage_offset());
  ret(s, self);
}

Geometry expanded(const Tensor& self, const std::vector<int64_t>& size) {
  int64_t nd = static_cast<int64_t>(size.size());
  IGNIS_CHECK(nd >= self.dim(), "expand(", "Tensor{", self.shape_str(), "}, size=", shape_str(size),
              "): the number of sizes provided (", nd, ") must be greater or equal to the number of "
              "dimensions in the tensor (", self.dim(), ")");
  DimVector sz(nd), st(nd);
  for (int64_t i = nd - 1; i >= 0; --i) {
    int64_t off = nd - 1 - i;
    int64_t dim = self.dim() - 1 - off;
    int64_t cur_size = dim >= 0 ? self.sizes()[dim] : 1;
    int64_t cur_stride = dim >= 0 ? self.strides()[dim] : 0;
    int64_t target = size[i];
    if (target == -1) {
      IGNIS_CHECK(dim >= 0, "The expanded size of the tensor (-1) isn't allowed in a leading, "
                  "non-existing dimension ", i);
      target = cur_size;
    }
    IGNIS_CHECK(target >= 0, "The expanded size of the tensor (", target, ") isn't allowed; "
                "sizes must be non-negative (or -1 to keep a dimension).  Target sizes: ",
                shape_str(size));
    if (cur_size != target) {
      IGNIS_CHECK(cur_size == 1, "The expanded size of the tensor (", target, ") must match the "
                  "existing size (", cur_size, ") at non-singleton dimension ", i, ".  Target sizes: ",
                  shape_str(size), ".  Tensor sizes: ", self.shape_str());
      cur_stride = 0;
    }
    sz[i] = target;
    st[i] = cur_stride;
  }
  int64_t numel = 1;
  bool overflow = false;
  for (int64_t x : sz) overflow |= __builtin_mul_overflow(numel, x, &numel);
  IGNIS_CHECK(!overflow, "expand: the number of elements of size ", shape_str(size),
              " overflows int64");
  return {sz, st};
}
void expand_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  auto [sz, st] = expanded(self, s[1].to_int_list());
  ret(s, make_view(self, sz, st, self.storage_offset()));
}
void expand_as_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  auto [sz, st] = expanded(self, s[1].to_tensor().sizes().vec());
  ret(s, make_view(self, sz, st, self.storage_offset()));
}

// broadcast_to(self, size) is expand (size is the shape broadcasting
// gives); broadcast_tensors(tensors) expands each to their common shape.
// Both are views of their inputs, recorded as the expands they are.
void broadcast_to_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  static OpRef expand_op("expand");
  Tensor r = expand_op.tensor(s[0].to_tensor(), s[1].to_int_list());
  ret(s, std::move(r));
}
void broadcast_tensors_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  static OpRef expand_op("expand");
  const std::vector<Tensor> ts = s[0].to_tensor_list();
  DimVector shape;
  for (size_t i = 0; i < ts.size(); ++i)
    shape = i == 0 ? ts[i].sizes() : broadcast_shapes(shape, ts[i].sizes());
  std::vector<Tensor> out;
  const std::vector<int64_t> size(shape.begin(), shape.end());
  for (const Tensor& t : ts) out.push_back(expand_op.tensor(t, size));
  ret_list(s, std::move(out));
}

// squeeze(), squeeze(dim), squeeze(dims)
Geometry squeezed(const Tensor& self, const IValue& dims) {
  std::vector<bool> drop(self.dim(), false);
  if (dims.is_none()) {
    for (int64_t d = 0; d < self.dim(); ++d) drop[d] = self.sizes()[d] == 1;
  } else {
    std::vector<int64_t> l = dims.is_int() ? std::vector<int64_t>{dims.to_int()} : dims.to_int_list();
    std::vector<bool> seen(std::max<int64_t>(self.dim(), 1), false);
    for (int64_t d : l) {
      int64_t w = wrap_dim(d, self.dim());
      IGNIS_CHECK(!seen[w], "dim ", w, " appears multiple times in the list of dims");
      seen[w] = true;
      if (self.dim() > 0 && self.sizes()[w] == 1) drop[w] = true;
    }
  }
  DimVector sz, st;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (drop[d]) continue;
    sz.push_back(self.sizes()[d]);
    st.push_back(self.strides()[d]);
  }
  return {sz, st};
}
void squeeze_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  auto [sz, st] = squeezed(self, s.size() > 1 ? s[1] : IValue());
  ret(s, make_view(self, sz, st, self.storage_offset()));
}
void squeeze_inplace_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  auto [sz, st] = squeezed(self, s.size() > 1 ? s[1] : IValue());
  self.impl()->set_geometry(sz, st, self.storage_offset());
  ret(s, self);
}

Geometry unsqueezed(const Tensor& self, int64_t dim) {
  dim = wrap_dim(dim, self.dim() + 1);
  DimVector sz = self.sizes(), st = self.strides();
  int64_t new_stride = dim >= self.dim() ? 1 : sz[dim] * st[dim];
  sz.insert(dim, 1);
  st.insert(dim, new_stride);
  return {sz, st};
}
void unsqueeze_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  auto [sz, st] = unsqueezed(self, s[1].to_int());
  ret(s, make_view(self, sz, st, self.storage_offset()));
}
void unsqueeze_inplace_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  auto [sz, st] = unsqueezed(self, s[1].to_int());
  self.impl()->set_geometry(sz, st, self.storage_offset());
  ret(s, self);
}

void flatten_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  int64_t nd = self.dim();
  int64_t start = wrap_dim(s[1].to_int(), nd), end = wrap_dim(s[2].to_int(), nd);
  IGNIS_CHECK(start <= end, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (nd == 0) {
    ret(s, OpRef("reshape").tensor(self, std::vector<int64_t>{1}));
    return;
  }
  if (start == end) {
    ret(s, self);
    return;
  }
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < start; ++d) shape.push_back(self.sizes()[d]);
  int64_t prod = 1;
  for (int64_t d = start; d <= end; ++d) prod *= self.sizes()[d];
  shape.push_back(prod);
  for (int64_t d = end + 1; d < nd; ++d) shape.push_back(self.sizes()[d]);
  ret(s, OpRef("reshape").tensor(self, shape));
}

void unflatten_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  const auto& sizes = s[2].to_int_list();
  IGNIS_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  IGNIS_CHECK(self.dim() > 0, "unflatten: Dimension specified as ", s[1].to_int(),
              " but tensor has no dimensions");
  int64_t dim = wrap_dim(s[1].to_int(), self.dim());
  DimVector inferred = infer_size(sizes, self.sizes()[dim]);
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < dim; ++d) shape.push_back(self.sizes()[d]);
  for (int64_t v : inferred) shape.push_back(v);
  for (int64_t d = dim + 1; d < self.dim(); ++d) shape.push_back(self.sizes()[d]);
  ret(s, OpRef("view").tensor(self, shape));
}

// slice(self, dim, start, end, step): Python slicing semantics (clamped).
Tensor slice_impl(const Tensor& self, int64_t dim, std::optional<int64_t> start,
                  std::optional<int64_t> end, int64_t step) {
  IGNIS_CHECK(self.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  IGNIS_CHECK_VALUE(step > 0, "slice step must be positive");
  dim = wrap_dim(dim, self.dim());
  int64_t n = self.sizes()[dim];
  int64_t b = start.value_or(0), e = end.value_or(n);
  if (b < 0) b += n;
  if (e < 0) e += n;
  b = std::clamp<int64_t>(b, 0, n);
  e = std::clamp<int64_t>(e, b, n);
  DimVector sz = self.sizes(), st = self.strides();
  sz[dim] = e == b ? 0 : (e - b - 1) / step + 1;
  // A step so large that stride * step overflows leaves at most one element,
  // whose stride does not matter.
  if (__builtin_mul_overflow(st[dim], step, &st[dim])) st[dim] = self.strides()[dim];
  return make_view(self, sz, st, self.storage_offset() + b * self.strides()[dim]);
}
std::optional<int64_t> opt_int(const IValue& v) {
  return v.is_none() ? std::nullopt : std::optional<int64_t>(v.to_int());
}
void slice_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  ret(s, slice_impl(self, s[1].to_int(), opt_int(s[2]), opt_int(s[3]), s[4].to_int()));
}

void narrow_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  IGNIS_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  int64_t dim = wrap_dim(s[1].to_int(), self.dim());
  int64_t n = self.sizes()[dim];
  int64_t start = s[2].to_int(), length = s[3].to_int();
  IGNIS_CHECK_INDEX(start >= -n && start <= n, "start out of range (expected to be in range of [",
                    -n, ", ", n, "], but got ", start, ")");
  if (start < 0) start += n;
  IGNIS_CHECK(length >= 0, "narrow(): length must be non-negative.");
  IGNIS_CHECK(start <= n - length, "start (", start, ") + length (", length,
              ") exceeds dimension size (", n, ").");
  ret(s, slice_impl(self, dim, start, start + length, 1));
}

void select_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  IGNIS_CHECK_INDEX(self.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  int64_t dim = wrap_dim(s[1].to_int(), self.dim());
  int64_t n = self.sizes()[dim];
  int64_t index = s[2].to_int();
  IGNIS_CHECK_INDEX(index >= -n && index < n, "select(): index ", index,
                    " out of range for tensor of size ", self.shape_str(), " at dimension ", dim);
  if (index < 0) index += n;
  DimVector sz = self.sizes(), st = self.strides();
  int64_t off = self.storage_offset() + index * st[dim];
  sz.erase(dim);
  st.erase(dim);
  ret(s, make_view(self, sz, st, off));
}

void split_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  IGNIS_CHECK(self.dim() > 0, "split expects at least a 1-dimensional tensor");
  int64_t dim = wrap_dim(s[2].to_int(), self.dim());
  int64_t n = self.sizes()[dim];
  std::vector<Tensor> out;
  if (s[1].is_int()) {
    int64_t size = s[1].to_int();
    IGNIS_CHECK(size >= 0, "split expects split_size be non-negative, but got split_size=", size);
    IGNIS_CHECK(size > 0 || n == 0, "split_size can only be 0 if dimension size is 0, "
                "but got dimension size of ", n);
    if (n == 0) {
      out.push_back(slice_impl(self, dim, 0, 0, 1));
    } else {
      for (int64_t b = 0; b < n; b += std::min(size, n - b))
        out.push_back(slice_impl(self, dim, b, b + std::min(size, n - b), 1));
    }
  } else {
    const auto& sizes = s[1].to_int_list();
    int64_t total = 0;
    bool overflow = false;
    for (int64_t v : sizes) {
      IGNIS_CHECK(v >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but "
                  "got split_sizes=", shape_str(sizes));
      overflow |= __builtin_add_overflow(total, v, &total);
    }
    IGNIS_CHECK(!overflow, "split_with_sizes expects split_sizes to sum exactly to ", n,
                " (input tensor's size at dimension ", dim, "), but got split_sizes=",
                shape_str(sizes));
    IGNIS_CHECK(total == n, "split_with_sizes expects split_sizes to sum exactly to ", n,
                " (input tensor's size at dimension ", dim, "), but got split_sizes=", shape_str(sizes));
    int64_t b = 0;
    for (int64_t v : sizes) {
      out.push_back(slice_impl(self, dim, b, b + v, 1));
      b += v;
    }
  }
  ret_list(s, std::move(out));
}

void chunk_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  int64_t chunks = s[1].to_int();
  IGNIS_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  IGNIS_CHECK(self.dim() > 0, "chunk expects at least a 1-dimensional tensor");
  int64_t dim = wrap_dim(s[2].to_int(), self.dim());
  int64_t n = self.sizes()[dim];
  int64_t size = n == 0 ? 0 : (n - 1) / chunks + 1;  // ceil(n / chunks) without overflow
  std::vector<Tensor> out;
  if (size == 0) {
    // An empty dim gives `chunks` empty tensors (torch's rule); a count no
    // memory holds is an error, not an allocation that kills the process.
    IGNIS_CHECK(chunks <= (int64_t{1} << 31), "chunk: cannot split an empty dimension into ", chunks,
                " chunks (one empty tensor each)");
    for (int64_t i = 0; i < chunks; ++i) out.push_back(slice_impl(self, dim, 0, 0, 1));
  } else {
    for (int64_t b = 0; b < n; b += std::min(size, n - b))
      out.push_back(slice_impl(self, dim, b, b + std::min(size, n - b), 1));
  }
  ret_list(s, std::move(out));
}

void unbind_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  IGNIS_CHECK_INDEX(self.dim() > 0, "Dimension specified as ", s[1].to_int(),
                    " but tensor has no dimensions");
  int64_t dim = wrap_dim(s[1].to_int(), self.dim());
  std::vector<Tensor> out;
  static OpRef select("select.int");
  for (int64_t i = 0; i < self.sizes()[dim]; ++i) out.push_back(select.tensor(self, dim, i));
  ret_list(s, std::move(out));
}

void as_strided_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  DimVector sz(s[1].to_int_list()), st(s[2].to_int_list());
  IGNIS_CHECK(sz.size() == st.size(), "mismatch in length of strides and shape");
  int64_t off = s[3].is_none() ? self.storage_offset() : s[3].to_int();
  IGNIS_CHECK(off >= 0, "Tensor: invalid storage offset ", off);
  // extent: one past the last element addressed, in elements, computed
  // without overflow (huge sizes or strides must not wrap to a small value).
  int64_t extent = 1;
  bool empty = false, overflow = false;
  for (size_t i = 0; i < sz.size(); ++i) {
    IGNIS_CHECK(st[i] >= 0, "as_strided: Negative strides are not supported at the moment, got strides: ",
                shape_str(st));
    IGNIS_CHECK(sz[i] >= 0, "Storage size calculation overflowed with sizes=", shape_str(sz),
                " and strides=", shape_str(st));
    if (sz[i] == 0) empty = true;
    int64_t span;
    overflow |= __builtin_mul_overflow(sz[i] - 1, st[i], &span);
    overflow |= __builtin_add_overflow(extent, span, &extent);
  }
  int64_t need_elems = 0, need_bytes = 0;
  if (!empty) {
    overflow |= __builtin_add_overflow(extent, off, &need_elems);
    overflow |= __builtin_mul_overflow(need_elems, static_cast<int64_t>(self.itemsize()),
                                       &need_bytes);
  }
  IGNIS_CHECK(!overflow, "Storage size calculation overflowed with sizes=", shape_str(sz),
              " and strides=", shape_str(st));
  size_t need = static_cast<size_t>(need_bytes);
  IGNIS_CHECK(need <= self.impl()->storage()->nbytes(), "setStorage: sizes ", shape_str(sz),
              ", strides ", shape_str(st), ", storage offset ", off, ", and itemsize ", self.itemsize(),
              " requiring a storage size of ", need, " are out of bounds for storage of size ",
              self.impl()->storage()->nbytes());
  ret(s, make_view(self, sz, st, off));
}

void diagonal_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  int64_t offset = s[1].to_int();
  // Two distinct valid dims imply at least two dims.
  int64_t d1 = wrap_dim(s[2].to_int(), self.dim()), d2 = wrap_dim(s[3].to_int(), self.dim());
  IGNIS_CHECK(d1 != d2, "diagonal dimensions cannot be identical ", s[2].to_int(), ", ", s[3].to_int());
  int64_t off = self.storage_offset();
  int64_t len;
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(self.sizes()[d1], self.sizes()[d2] - offset), 0);
    if (len > 0) off += offset * self.strides()[d2];
  } else {
    len = std::max<int64_t>(std::min(self.sizes()[d1] + offset, self.sizes()[d2]), 0);
    if (len > 0) off -= offset * self.strides()[d1];
  }
  DimVector sz, st;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    sz.push_back(self.sizes()[d]);
    st.push_back(self.strides()[d]);
  }
  sz.push_back(len);
  st.push_back(self.strides()[d1] + self.strides()[d2]);
  ret(s, make_view(self, sz, st, off));
}

void movedim_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  int64_t nd = self.dim();
  auto src = s[1].to_int_list(), dst = s[2].to_int_list();
  IGNIS_CHECK(src.size() == dst.size(), "movedim: Invalid source or destination dims: source (",
              shape_str(src), " dims) should contain the same number of dims as destination (",
              shape_str(dst), " dims)");
  // A 0-dim tensor accepts dims 0 and -1, like a 1-dim one, and stays as it is.
  int64_t slots = std::max<int64_t>(nd, 1);
  std::vector<int64_t> order(slots, -1);
  std::vector<bool> used(slots, false);
  for (size_t i = 0; i < src.size(); ++i) {
    int64_t a = wrap_dim(src[i], nd), b = wrap_dim(dst[i], nd);
    IGNIS_CHECK(!used[a], "movedim: repeated dim in `source` (", shape_str(src), ")");
    IGNIS_CHECK(order[b] == -1, "movedim: repeated dim in `destination` (", shape_str(dst), ")");
    order[b] = a;
    used[a] = true;
  }
  if (nd == 0) {
    ret(s, OpRef("view").tensor(self, std::vector<int64_t>{}));
    return;
  }
  int64_t next = 0;
  for (int64_t i = 0; i < nd; ++i) {
    if (order[i] != -1) continue;
    while (used[next]) ++next;
    order[i] = next;
    used[next] = true;
  }
  ret(s, OpRef("permute").tensor(self, order));
}


// view_as_real / view_as_complex: the same bytes seen as pairs of floats, or
// as complex numbers (Note [Complex tensors], ops/complex.cpp). The last
// dim of 2 is the (real, imaginary) pair; every other stride doubles.
void view_as_real_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  IGNIS_CHECK(is_complex(self.dtype()), "view_as_real is only supported for complex tensors");
  ret(s, complex_as_pairs(self));
}
void view_as_complex_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  const ScalarType t = self.dtype();
  IGNIS_CHECK(t == ScalarType::Float32 || t == ScalarType::Float64,
              "view_as_complex is only supported for float and double tensors, but got a "
              "tensor of scalar type: ", scalar_type_name(t));
  IGNIS_CHECK(self.dim() != 0, "Input tensor must have one or more dimensions");
  IGNIS_CHECK(self.sizes().back() == 2, "Tensor must have a last dimension of size 2");
  IGNIS_CHECK(self.strides().back() == 1, "Tensor must have a last dimension with stride 1");
  DimVector sz(self.sizes().begin(), self.sizes().end() - 1);
  DimVector st(self.strides().begin(), self.strides().end() - 1);
  for (int64_t& x : st) {
    IGNIS_CHECK(x % 2 == 0, "Tensor must have a stride divisible by 2 for all but last dimension");
    x /= 2;
  }
  IGNIS_CHECK(self.storage_offset() % 2 == 0, "Tensor must have a storage_offset divisible by 2");
  ret(s, make_view(self, to_complex_type(t), sz, st, self.storage_offset() / 2));
}

// view(dtype): the same bytes as another dtype (torch's Tensor.view(dtype)).
// Of another element size the last dim, which must be contiguous, holds
// proportionally more or fewer elements; every other stride and the offset
// scale with it. Not differentiable (torch's output_differentiability).
void view_dtype_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  const ScalarType to = s[1].to_dtype();
  const int64_t from_size = int64_t(element_size(self.dtype())), to_size = int64_t(element_size(to));
  if (from_size == to_size) {
    ret(s, make_view(self, to, self.sizes(), self.strides(), self.storage_offset()));
    return;
  }
  const std::string what = str(" to view ", scalar_type_name(self.dtype()), " as ",
                               scalar_type_name(to), " (different element sizes)");
  IGNIS_CHECK(self.dim() > 0, "self.dim() cannot be 0", what);
  IGNIS_CHECK(self.strides().back() == 1, "self.stride(-1) must be 1", what, ", but got ",
              self.strides().back());
  DimVector sz(self.sizes()), st(self.strides());
  int64_t off = self.storage_offset();
  if (to_size < from_size) {
    const int64_t r = from_size / to_size;
    for (size_t d = 0; d + 1 < st.size(); ++d) st[d] *= r;
    sz.back() *= r;
    off *= r;
  } else {
    const int64_t r = to_size / from_size;
    IGNIS_CHECK(sz.back() % r == 0, "self.size(-1) must be divisible by ", r, what, ", but got ",
                sz.back());
    for (size_t d = 0; d + 1 < st.size(); ++d) {
      IGNIS_CHECK(st[d] % r == 0, "self.stride(", d, ") must be divisible by ", r, what,
                  ", but got ", st[d]);
      st[d] /= r;
    }
    IGNIS_CHECK(off % r == 0, "self.storage_offset() must be divisible by ", r, what,
                ", but got ", off);
    sz.back() /= r;
    off /= r;
  }
  ret(s, make_view(self, to, sz, st, off));
}

// ---- derivatives ------------------------------------------------------------------
using namespace grad_ops;  // NOLINT

void reshape_bw(GradCtx& c) { c.set(0, reshape(c.grad(), c.sizes(0))); }
void expand_bw(GradCtx& c) { c.set(0, c.grad()); }  // summed to self's shape by the caller
void permute_bw(GradCtx& c) {
  const auto& dims = c.int_list(1);
  int64_t nd = static_cast<int64_t>(dims.size());
  std::vector<int64_t> inv(dims.size());
  for (int64_t i = 0; i < nd; ++i) inv[wrap_dim(dims[i], nd)] = i;
  c.set(0, op("permute", c.grad(), inv));
}
void transpose_bw(GradCtx& c) {
  c.set(0, op("transpose.int", c.grad(), c.int_arg(1), c.int_arg(2)));
}
void t_bw(GradCtx& c) { c.set(0, op("t", c.grad())); }
// Each other's derivative (as_complex makes a gradient whose pairs are not
// adjacent contiguous first).
void view_as_real_bw(GradCtx& c) { c.set(0, as_complex(c.grad())); }
void view_as_complex_bw(GradCtx& c) { c.set(0, OpRef("view_as_real").tensor(c.grad())); }

void narrow_bw(GradCtx& c) {
  int64_t nd = static_cast<int64_t>(c.sizes(0).size());
  int64_t dim = wrap_dim(c.int_arg(1), nd);
  int64_t start = c.int_arg(2);
  if (start < 0) start += c.sizes(0)[dim];
  c.set(0, embed_slice(c.grad(), c.sizes(0), dim, start, 1));
}
void select_bw(GradCtx& c) {
  int64_t nd = static_cast<int64_t>(c.sizes(0).size());
  int64_t dim = wrap_dim(c.int_arg(1), nd);
  int64_t index = c.int_arg(2);
  if (index < 0) index += c.sizes(0)[dim];
  c.set(0, embed_slice(unsqueeze(c.grad(), dim), c.sizes(0), dim, index, 1));
}
void slice_bw(GradCtx& c) {
  int64_t nd = static_cast<int64_t>(c.sizes(0).size());
  int64_t dim = wrap_dim(c.int_arg(1), nd);
  int64_t n = c.sizes(0)[dim];
  int64_t start = c.args[2].is_none() ? 0 : c.int_arg(2);
  if (start < 0) start += n;
  start = std::min(std::max<int64_t>(start, 0), n);
  c.set(0, embed_slice(c.grad(), c.sizes(0), dim, start, c.int_arg(4)));
}
// split / chunk: the output gradients side by side again.
void split_bw(GradCtx& c) {
  int64_t nd = static_cast<int64_t>(c.sizes(0).size());
  int64_t dim = wrap_dim(c.int_arg(2), nd);
  c.set(0, OpRef("cat").tensor(c.grads, dim));
}
// as_strided: the gradient of each output element goes to the storage
// element it reads (summed where output elements overlap), and the input
// reads its elements back out of that storage. Assumes the input's own
// elements do not overlap (as PyTorch's fast path does).
Tensor storage_positions(const DimVector& sizes, const DimVector& strides, int64_t offset) {
  Tensor pos = scalar_to_tensor_int(offset, ScalarType::Int64);
  for (size_t d = 0; d < sizes.size(); ++d) {
    Tensor r = OpRef("arange.start").tensor(int64_t(0), sizes[d], int64_t(1), ScalarType::Int64);
    DimVector shape(sizes.size(), 1);
    shape[d] = sizes[d];
    pos = add(pos, reshape(mul(r, scalar_to_tensor_int(strides[d], ScalarType::Int64, true)),
                           shape));
  }
  return expand(pos, sizes);
}
int64_t last_position(const DimVector& sizes, const DimVector& strides, int64_t offset) {
  int64_t p = offset;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return -1;
    p += (sizes[d] - 1) * strides[d];
  }
  return p;
}
void as_strided_bw(GradCtx& c) {
  // Only self's geometry is read (torch saves just that), so this is not a
  // read of its values that a later in-place write would invalidate: no
  // version check, as on every other view (the AOT runtime remakes views of
  // inputs with as_strided, which eager made with slice or t: fuzz seed 74448).
  IGNIS_INTERNAL_ASSERT(c.args[0].is_tensor(), "as_strided's derivative: self not saved");
  const Tensor& x = c.args[0].to_tensor();
  const Tensor& g = c.grad();
  DimVector osz(c.int_list(1)), ost(c.int_list(2));
  int64_t ooff = c.args[3].is_none() ? x.storage_offset() : c.int_arg(3);
  int64_t n = std::max(last_position(osz, ost, ooff),
                       last_position(x.sizes(), x.strides(), x.storage_offset())) + 1;
  Tensor flat = zeros(DimVector{std::max<int64_t>(n, 0)}, g.dtype(), g.device());
  Tensor opos = reshape(storage_positions(osz, ost, ooff), DimVector{-1});
  flat = op("index_put", flat, IValue::OptTensors{{opos}}, reshape(g, DimVector{-1}), true);
  Tensor ipos = storage_positions(x.sizes(), x.strides(), x.storage_offset());
  c.set(0, op("index.Tensor", flat, IValue::OptTensors{{ipos}}));
}
void diagonal_bw(GradCtx& c) {
  Tensor z = zeros(c.sizes(0), c.grad().dtype(), c.grad().device());
  Tensor d = op("diagonal", z, c.int_arg(1), c.int_arg(2), c.int_arg(3));
  OpRef("copy_").call(d, c.grad());
  c.set(0, z);
}

// as_strided_scatter: self's values with the elements that
// as_strided(size, stride, storage_offset) addresses replaced by src's, in a
// new tensor laid out like self when self is dense (else contiguous); the
// offset counts from the new tensor's storage. Functionalization writes a
// mutated view back into its base with it (aot/functionalize.cpp).
void as_strided_scatter_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const Tensor& src = c.tensor(1);
  DimVector sz(c.int_list(2)), st(c.int_list(3));
  IGNIS_CHECK(sz.size() == st.size(), "as_strided_scatter: mismatch in length of strides and shape");
  IGNIS_CHECK(src.sizes() == sz, "as_strided_scatter: expected src to have a size equal to the "
              "slice of self. src size = ", src.shape_str(), ", slice size = ", shape_str(sz));
  IGNIS_CHECK(src.dtype() == self.dtype(), "as_strided_scatter: expected src dtype ",
              dtype_name(self.dtype()), " but got ", dtype_name(src.dtype()));
  int64_t off = c.args[4].is_none() ? 0 : c.int_arg(4);
  // A negative offset would address elements before the new tensor's first
  // (written out of bounds by the copy below, not caught by `last`).
  IGNIS_CHECK(off >= 0, "as_strided_scatter: invalid storage offset ", off);
  int64_t last = off;
  bool overflow = false;
  for (size_t i = 0; i < sz.size(); ++i) {
    IGNIS_CHECK(sz[i] >= 0 && st[i] >= 0, "as_strided_scatter: negative sizes or strides");
    if (sz[i] == 0) last = -1;
    int64_t span = 0;
    if (last >= 0) {
      overflow |= __builtin_mul_overflow(sz[i] - 1, st[i], &span);
      overflow |= __builtin_add_overflow(last, span, &last);
    }
  }
  IGNIS_CHECK(!overflow && last < self.numel(), "as_strided_scatter: the slice (size ", shape_str(sz),
              ", stride ", shape_str(st), ", offset ", off, ") is out of bounds for ",
              self.numel(), " elements");
  if (is_non_overlapping_and_dense(self)) c.alloc_strided(self.sizes(), self.strides(), self.dtype());
  else c.alloc(self.sizes(), self.dtype());
}
void as_strided_scatter_impl(OpCall& c) {
  Tensor& out = c.outputs[0];
  copy_into(out, c.tensor(0));
  int64_t off = c.args[4].is_none() ? 0 : c.int_arg(4);
  copy_into(make_view(out, DimVector(c.int_list(2)), DimVector(c.int_list(3)), off), c.tensor(1));
}

// On the GPU the two copies are the CUDA copy_ kernel's (strided both ways);
// autograd, which recorded the whole op, is excluded from them.
OpRef copy_op("copy_");
void as_strided_scatter_cuda(OpCall& c) {
  ExcludeDispatchKeyGuard no_autograd(kAutogradKeys);
  Tensor& out = c.outputs[0];
  copy_op.call(out, c.tensor(0));
  int64_t off = c.args[4].is_none() ? 0 : c.int_arg(4);
  copy_op.call(make_view(out, DimVector(c.int_list(2)), DimVector(c.int_list(3)), off),
               c.tensor(1));
}

// A view op is core unless it declares a decomposition (onto the core views).
void view_op(const std::string& schema, KernelFn k, DerivativeFn d, const char* doc = "",
             const char* saves = "", DecompFn decomp = nullptr) {
  def(schema).category(OpCategory::View).both().kernel(std::move(k)).doc(doc).derivative(d, saves)
      .decomposition(decomp).core(!decomp);
}

}  // namespace

void register_view_ops() {
  view_op("view(Tensor(a) self, int[] size) -> Tensor(a)",
          view_kernel, reshape_bw, "same data, new shape");
  def("reshape(Tensor(a) self, int[] shape) -> Tensor(a)").category(OpCategory::View).both()
      .composite(reshape_kernel).doc("a view when possible, else a copy");
  def("view_as(Tensor(a) self, Tensor other) -> Tensor(a)").category(OpCategory::View)
      .method_only().composite(view_as_kernel);
  def("reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)").category(OpCategory::View)
      .method_only().composite(reshape_as_kernel);
  view_op("permute(Tensor(a) self, int[] dims) -> Tensor(a)", permute_kernel, permute_bw);
  view_op("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
          transpose_kernel, transpose_bw, "", "", decomp::transpose);
  view_op("swapaxes(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
          transpose_kernel, transpose_bw, "", "", decomp::transpose);
  view_op("swapdims(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
          transpose_kernel, transpose_bw, "", "", decomp::transpose);
  def("transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)").category(OpCategory::View)
      .method_only().kernel(transpose_inplace_kernel).derivative(transpose_bw);
  view_op("t(Tensor(a) self) -> Tensor(a)", t_kernel, t_bw, "", "", decomp::t);
  def("view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)").category(OpCategory::View)
      .method_only().kernel(view_dtype_kernel).nondifferentiable().core(true)
      .doc("the same bytes as another dtype");
  view_op("view_as_real(Tensor(a) self) -> Tensor(a)", view_as_real_kernel, view_as_real_bw,
          "a complex tensor's numbers as (real, imaginary) pairs of floats, a last dim of 2");
  view_op("view_as_complex(Tensor(a) self) -> Tensor(a)", view_as_complex_kernel,
          view_as_complex_bw, "pairs of floats (a last dim of 2) as complex numbers");
  def("t_(Tensor(a!) self) -> Tensor(a!)").category(OpCategory::View).method_only()
      .kernel(t_inplace_kernel).derivative(t_bw);
  view_op("expand(Tensor(a) self, int[] size) -> Tensor(a)", expand_kernel, expand_bw);
  def("broadcast_to(Tensor(a) self, int[] size) -> Tensor(a)").category(OpCategory::View)
      .both().composite(broadcast_to_kernel).doc("self expanded to size (a view)");
  def("broadcast_tensors(Tensor[] tensors) -> Tensor[]").category(OpCategory::View)
      .composite(broadcast_tensors_kernel)
      .doc("the tensors expanded to their broadcast shape (views)");
  def("expand_as(Tensor(a) self, Tensor other) -> Tensor(a)").category(OpCategory::View)
      .method_only().kernel(expand_as_kernel).derivative(expand_bw)
      .decomposition(decomp::expand_as);
  view_op("squeeze(Tensor(a) self) -> Tensor(a)", squeeze_kernel, reshape_bw, "", "",
          decomp::squeeze);
  view_op("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", squeeze_kernel, reshape_bw, "", "",
          decomp::squeeze);
  view_op("squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", squeeze_kernel, reshape_bw);
  def("squeeze_(Tensor(a!) self, int[]? dim=None) -> Tensor(a!)").category(OpCategory::View)
      .method_only().kernel(squeeze_inplace_kernel).derivative(reshape_bw);
  view_op("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", unsqueeze_kernel, reshape_bw);
  def("unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)").category(OpCategory::View)
      .method_only().kernel(unsqueeze_inplace_kernel).derivative(reshape_bw);
  def("flatten(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)")
      .category(OpCategory::View).both().composite(flatten_kernel);
  def("unflatten(Tensor(a) self, int dim, int[] sizes) -> Tensor(a)")
      .category(OpCategory::View).both().composite(unflatten_kernel);
  view_op("narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)",
          narrow_kernel, narrow_bw, "", "", decomp::narrow);
  view_op("select.int(Tensor(a) self, int dim, int index) -> Tensor(a)", select_kernel, select_bw);
  view_op("slice.Tensor(Tensor(a) self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor(a)",
          slice_kernel, slice_bw, "self[start:end:step] along dim");
  view_op("split.Tensor(Tensor(a) self, int split_size, int dim=0) -> Tensor(a)[]",
          split_kernel, split_bw, "", "", decomp::split);
  view_op("split.sizes(Tensor(a) self, int[] split_size, int dim=0) -> Tensor(a)[]",
          split_kernel, split_bw, "", "", decomp::split);
  view_op("chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]", chunk_kernel, split_bw,
          "", "", decomp::chunk);
  def("unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]").category(OpCategory::View).both()
      .composite(unbind_kernel);
  view_op("as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> Tensor(a)",
          as_strided_kernel, as_strided_bw, "", "self");
  def("as_strided_scatter(Tensor self, Tensor src, int[] size, int[] stride, "
      "int? storage_offset=None) -> Tensor")
      .category(OpCategory::Other).both()
      .meta(as_strided_scatter_meta).cpu(as_strided_scatter_impl).cuda(as_strided_scatter_cuda)
      .doc("self with the as_strided slice replaced by src (a copy)")
      .core();  // functionalization writes mutated views back with it
  view_op("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)",
          diagonal_kernel, diagonal_bw, "", "", decomp::diagonal);
  def("movedim(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)")
      .category(OpCategory::View).both().composite(movedim_kernel);
  def("moveaxis(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)")
      .category(OpCategory::View).both().composite(movedim_kernel);
}

}  // namespace ignis

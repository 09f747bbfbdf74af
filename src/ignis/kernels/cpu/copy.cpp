#include "ignis/kernels/cpu/copy.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "ignis/kernels/cpu/loops.h"
#include "ignis/kernels/device_kernels.h"

namespace ignis {

namespace {

template <typename dst_t, typename src_t>
void copy_loop(char** data, const int64_t* strides, int64_t n, void*) {
  if (strides[0] == sizeof(dst_t) && strides[1] == sizeof(src_t)) {
    dst_t* __restrict o = reinterpret_cast<dst_t*>(data[0]);
    const src_t* __restrict a = reinterpret_cast<const src_t*>(data[1]);
    if constexpr (std::is_same_v<dst_t, src_t>) {
      std::memcpy(o, a, n * sizeof(dst_t));
    } else {
      for (int64_t i = 0; i < n; ++i)
        o[i] = static_cast<dst_t>(static_cast<opmath_t<src_t>>(a[i]));
    }
    return;
  }
  char *op = data[0], *ap = data[1];
  for (int64_t i = 0; i < n; ++i) {
    const src_t v = *reinterpret_cast<const src_t*>(ap + i * strides[1]);
    *reinterpret_cast<dst_t*>(op + i * strides[0]) =
        static_cast<dst_t>(static_cast<opmath_t<src_t>>(v));
  }
}

template <typename dst_t>
TensorIterator::Loop pick_src(ScalarType src) {
  return IGNIS_DISPATCH_ALL(src, "copy_", [&]() -> TensorIterator::Loop {
    return &copy_loop<dst_t, scalar_t>;
  });
}

// src viewed with dst's shape (stride 0 along broadcast dims): the
// iterator requires an output of exactly the inputs' broadcast shape.
Tensor broadcast_to(const Tensor& src, const DimVector& sizes) {
  if (src.sizes() == sizes) return src;
  DimVector b = broadcast_shapes(sizes, src.sizes());
  IGNIS_CHECK(b == sizes, "copy_: the source of shape ", src.shape_str(),
              " cannot be broadcast to the destination of shape ", shape_str(sizes));
  const int64_t nd = static_cast<int64_t>(sizes.size()), lead = nd - src.dim();
  DimVector strides(nd, 0);
  for (int64_t d = 0; d < src.dim(); ++d)
    if (src.sizes()[d] == sizes[lead + d]) strides[lead + d] = src.strides()[d];
  return make_view(src, sizes, strides, src.storage_offset());
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.device().is_meta()) return;
  if (src.device().is_meta()) IGNIS_NOT_IMPLEMENTED("Cannot copy out of meta tensor; no data!");
  // Complex tensors copy as their real views (Note [Complex tensors]): pairs
  // to pairs (broadcasting aligns their leading dims); a real source fills
  // the real parts and zeros the imaginary ones; a complex source gives a
  // real tensor its real parts (torch warns at the Python level).
  if (is_complex(dst.dtype()) || is_complex(src.dtype())) {
    if (is_complex(dst.dtype()) && is_complex(src.dtype())) {
      copy_into(complex_as_pairs(dst), complex_as_pairs(src));
    } else if (is_complex(dst.dtype())) {
      copy_into(complex_part(dst, 0), src);
      fill_tensor(complex_part(dst, 1), Scalar(int64_t(0)));
    } else {
      copy_into(dst, complex_part(src, 0));
    }
    return;
  }
  // Copies that touch a GPU are the CUDA copy kernels' (which convert and
  // broadcast the same way), so that code written against copy_into
  // (TensorIterator's casts and copy-back, float_compute.h) serves both.
  if (dst.device().is_cuda() || src.device().is_cuda()) return copy_tensor(dst, src);
  IGNIS_CHECK(dst.device().is_cpu() && src.device().is_cpu(),
              "copy between ", src.device().str(), " and ", dst.device().str(),
              " needs the CUDA backend");
  TensorIterator iter;
  iter.add_output(dst);
  iter.add_input(broadcast_to(src, dst.sizes()));
  IterConfig cfg;
  cfg.op_name = "copy_";
  cfg.common_dtype = dst.dtype();
  cfg.keep_input_dtypes = true;
  iter.build(cfg, dst.device());
  TensorIterator::Loop loop = IGNIS_DISPATCH_ALL(dst.dtype(), "copy_", [&] {
    return pick_src<scalar_t>(src.dtype());
  });
  iter.for_each(loop, nullptr, 65536);
}

bool is_non_overlapping_and_dense(const Tensor& t) {
  if (t.is_contiguous()) return true;  // (which an empty tensor always is)
  const int64_t nd = t.dim();
  std::vector<int64_t> perm(nd);
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    if (t.sizes()[a] < 2) return false;
    if (t.sizes()[b] < 2) return true;
    return t.strides()[a] < t.strides()[b];
  });
  int64_t expected = 1;
  for (int64_t d : perm) {
    if (t.sizes()[d] < 2) return true;
    if (t.strides()[d] != expected) return false;
    expected *= t.sizes()[d];
  }
  return true;
}

DimVector like_strides(const Tensor& t) {
  if (is_non_overlapping_and_dense(t)) return t.strides();
  // PyTorch's infer_dense_strides: dims ordered by stride (insertion sort,
  // innermost first), where a stride-0 dim compares as "don't know" and so
  // keeps its place; then dense strides in that order.
  const int64_t nd = t.dim();
  const DimVector& sz = t.sizes();
  const DimVector& st = t.strides();
  auto should_swap = [&](int d0, int d1) {
    if (st[d0] == 0 || st[d1] == 0) return 0;
    if (st[d0] != st[d1]) return st[d0] < st[d1] ? -1 : 1;
    return sz[d0] > sz[d1] ? 1 : 0;
  };
  const std::vector<int> perm = order_dims(static_cast<int>(nd), should_swap);
  DimVector strides(nd);
  int64_t s = 1;
  for (int64_t i = 0; i < nd; ++i) {
    strides[perm[i]] = s;
    if (sz[perm[i]] > 1) s *= sz[perm[i]];
  }
  return strides;
}

DimVector strides_for_copy(const Tensor& t, MemoryFormat f) {
  return f == MemoryFormat::Preserve ? like_strides(t) : strides_in_format(t.sizes(), f);
}

bool dense_in_order(const Tensor& t, const DimVector& strides) {
  if (!is_non_overlapping_and_dense(t)) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes()[d] > 1 && t.strides()[d] != strides[d]) return false;
  return true;
}

Tensor to_dtype_copy(const Tensor& src, ScalarType dtype) {
  if (src.dim() == 0 && src.device().is_cpu()) {
    Tensor out = is_floating(src.dtype()) ? scalar_to_tensor(src.item_double(), dtype)
                                          : scalar_to_tensor_int(src.item_int(), dtype);
    out.impl()->set_wrapped_number(src.impl()->is_wrapped_number());
    return out;
  }
  Tensor out = empty_strided_tensor(src.sizes(), like_strides(src), dtype, src.device());
  copy_into(out, src);
  return out;
}

}  // namespace ignis

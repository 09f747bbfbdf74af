#include "ignis/core/memory_format.h"

#include <algorithm>

#include "ignis/core/error.h"

namespace ignis {

// Note [Memory formats]
// A memory format names a stride order, not a storage kind: a channels-last
// tensor is an ordinary strided tensor whose strides run over (N, H, W, C)
// from outermost to innermost while its sizes stay (N, C, H, W). So no
// kernel needs to know formats: the ops that take `memory_format=` only pick
// their output's strides (strides_in_format; Preserve: the source's dense
// layout, like_strides in kernels/cpu/copy.h), and everything after them
// (TensorIterator's outputs, the compiler's buffers, which follow a fake
// tensor's strides) keeps the layout it is given. As in PyTorch, the strides
// are computed from the sizes as they are (a size-0 dim makes the strides
// outside it 0), and the test for a format skips size-1 dims.

const char* memory_format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous: return "contiguous_format";
    case MemoryFormat::Preserve: return "preserve_format";
    case MemoryFormat::ChannelsLast: return "channels_last";
    case MemoryFormat::ChannelsLast3d: return "channels_last_3d";
  }
  return "?";
}

namespace {

// The dims of format f from innermost to outermost; its rank in *rank.
const int* format_order(MemoryFormat f, size_t rank) {
  static const int cl2d[] = {1, 3, 2, 0};
  static const int cl3d[] = {1, 4, 3, 2, 0};
  if (f == MemoryFormat::ChannelsLast) {
    IGNIS_CHECK_KIND(Runtime, rank == 4, "required rank 4 tensor to use channels_last format");
    return cl2d;
  }
  IGNIS_CHECK_KIND(Runtime, rank == 5, "required rank 5 tensor to use channels_last_3d format");
  return cl3d;
}

}  // namespace

DimVector strides_in_format(const DimVector& sizes, MemoryFormat f) {
  IGNIS_INTERNAL_ASSERT(f != MemoryFormat::Preserve, "strides_in_format: Preserve has no strides "
                        "of its own");
  const size_t n = sizes.size();
  DimVector strides(n, 1);
  if (f == MemoryFormat::Contiguous) {
    for (size_t i = n; i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(sizes[i], 1);
    return strides;
  }
  const int* order = format_order(f, n);
  int64_t s = 1;
  for (size_t i = 0; i < n; ++i) {
    strides[size_t(order[i])] = s;
    s *= sizes[size_t(order[i])];
  }
  return strides;
}

bool has_format(const DimVector& sizes, const DimVector& strides, MemoryFormat f) {
  const size_t n = sizes.size();
  if (f == MemoryFormat::Contiguous || f == MemoryFormat::Preserve) {
    int64_t expect = 1, numel = 1;
    for (int64_t s : sizes) numel *= s;
    if (numel == 0) return true;
    for (size_t i = n; i-- > 0;) {
      if (sizes[i] == 1) continue;
      if (strides[i] != expect) return false;
      expect *= sizes[i];
    }
    return true;
  }
  if (n != (f == MemoryFormat::ChannelsLast ? 4u : 5u)) return false;
  const int* order = format_order(f, n);
  int64_t expect = 1;
  for (size_t i = 0; i < n; ++i) {
    const size_t d = size_t(order[i]);
    if (sizes[d] == 1) continue;
    if (strides[d] != expect) return false;
    expect *= sizes[d];
  }
  return true;
}

MemoryFormat suggest_memory_format(const DimVector& sizes, const DimVector& strides) {
  const size_t n = sizes.size();
  if (n != 4 && n != 5) return MemoryFormat::Contiguous;
  const MemoryFormat f = n == 4 ? MemoryFormat::ChannelsLast : MemoryFormat::ChannelsLast3d;
  if (strides[1] == 0) return MemoryFormat::Contiguous;  // a broadcast channel dim
  const int* order = format_order(f, n);
  int64_t min = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t d = size_t(order[i]);
    if (sizes[d] == 0 || strides[d] < min) return MemoryFormat::Contiguous;
    // The batch dim's stride equal to the channels' (N x 1 x 1 x 1 with equal
    // strides): ambiguous, taken as contiguous, as torch does.
    if (d == 0 && min == strides[1]) return MemoryFormat::Contiguous;
    min = sizes[d] > 1 ? strides[d] * sizes[d] : strides[d];
  }
  return f;
}

}  // namespace ignis

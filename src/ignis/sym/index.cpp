#include "ignis/sym/index.h"

#include "ignis/core/error.h"
#include "ignis/sym/simplify.h"

namespace ignis::sym {

namespace {

bool known_one(Expr size) { return statically_known_true(eq(size, 1)); }

bool mergeable(Expr outer_size, Expr outer_stride, Expr inner_size, Expr inner_stride) {
  return known_one(outer_size) || known_one(inner_size) ||
         statically_known_true(eq(outer_stride, inner_size * inner_stride));
}

}  // namespace

Expr linear_index(const std::vector<Expr>& index, const std::vector<Expr>& strides,
                  Expr offset) {
  IGNIS_CHECK_VALUE(index.size() == strides.size(), "sym: linear_index: ", index.size(),
                    " indices for ", strides.size(), " strides");
  SumBuilder sb;
  sb.add(offset);
  for (size_t d = 0; d < index.size(); ++d) sb.add(index[d] * strides[d]);
  return simplify(sb.build());
}

std::vector<Expr> contiguous_strides(const std::vector<Expr>& sizes) {
  std::vector<Expr> strides(sizes.size());
  Expr inner = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = inner;
    inner = inner * sizes[d];
  }
  return strides;
}

std::vector<Expr> unravel_index(Expr flat, const std::vector<Expr>& sizes) {
  std::vector<Expr> strides = contiguous_strides(sizes);
  std::vector<Expr> coords(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    Expr q = floordiv(flat, strides[d]);
    coords[d] = simplify(d == 0 ? q : mod(q, sizes[d]));
  }
  return coords;
}

Expr ravel_index(const std::vector<Expr>& coords, const std::vector<Expr>& sizes) {
  IGNIS_CHECK_VALUE(coords.size() == sizes.size(), "sym: ravel_index: ", coords.size(),
                    " coordinates for ", sizes.size(), " sizes");
  return linear_index(coords, contiguous_strides(sizes));
}

Expr strided_index(Expr flat, const std::vector<Expr>& sizes, const std::vector<Expr>& strides,
                   Expr offset) {
  return linear_index(unravel_index(flat, sizes), strides, offset);
}

bool can_merge_dims(const std::vector<Expr>& sizes, const std::vector<Expr>& strides, size_t d) {
  IGNIS_CHECK_VALUE(sizes.size() == strides.size() && d + 1 < sizes.size(),
                    "sym: can_merge_dims: dim ", d, " of ", sizes.size());
  return mergeable(sizes[d], strides[d], sizes[d + 1], strides[d + 1]);
}

Layout coalesce_dims(const std::vector<Expr>& sizes, const std::vector<Expr>& strides) {
  IGNIS_CHECK_VALUE(sizes.size() == strides.size(), "sym: coalesce_dims: ", sizes.size(),
                    " sizes for ", strides.size(), " strides");
  Layout out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!out.sizes.empty() &&
        mergeable(out.sizes.back(), out.strides.back(), sizes[d], strides[d])) {
      Expr& size = out.sizes.back();
      Expr& stride = out.strides.back();
      if (known_one(sizes[d])) continue;  // the outer dim's size and stride stand
      // Either the outer dim has size 1 or it steps over exactly this one:
      // both ways the merged dim steps by the inner stride.
      stride = strides[d];
      size = simplify(size * sizes[d]);
      continue;
    }
    out.sizes.push_back(sizes[d]);
    out.strides.push_back(strides[d]);
  }
  return out;
}

bool is_contiguous(const std::vector<Expr>& sizes, const std::vector<Expr>& strides) {
  IGNIS_CHECK_VALUE(sizes.size() == strides.size(), "sym: is_contiguous: ", sizes.size(),
                    " sizes for ", strides.size(), " strides");
  for (const Expr& s : sizes)
    if (statically_known_true(eq(s, 0))) return true;  // no element to misplace
  Expr expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (known_one(sizes[d])) continue;
    if (!statically_known_true(eq(strides[d], expected))) return false;
    expected = expected * sizes[d];
  }
  return true;
}

}  // namespace ignis::sym

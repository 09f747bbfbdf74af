// unique and unique_consecutive: the distinct values (or rows along a dim) of
// a tensor, with where each element went (inverse) and how often each value
// occurs (counts), as torch's _unique2 / unique_dim / unique_consecutive.
//
// Composite over core ops: a stable (lexicographic, for rows) sort brings
// equal values together, a run starts where a value differs from the one
// before it, and the runs' starts give values, counts and, scattered back
// through the sort's permutation, the inverse. So one implementation serves
// every dtype and both devices (sort has CPU and CUDA kernels; nonzero finds
// the run starts on the host, the one sync the data-dependent size needs).
// NaN differs from everything, itself included: each NaN is its own value,
// sorted last, as torch's CPU kernel gives them. Capture keeps these calls in
// the graph with an unbacked size (tracer_unbacked.cpp).
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

OpRef sort_stable_op("sort.stable");
OpRef narrow_op("narrow");
OpRef ne_op("ne");
OpRef any_dim_op("any.dim");
OpRef cat_op("cat");
OpRef cumsum_op("cumsum");
OpRef nonzero_op("nonzero");
OpRef reshape_op("reshape");
OpRef index_select_op("index_select");
OpRef scatter_op("scatter.src");
OpRef full_op("full");
OpRef arange_op("arange");
OpRef sub_op("sub");
OpRef movedim_op("movedim");
OpRef contiguous_op("contiguous");

struct Unique {
  Tensor values, inverse, counts;
};

// The distinct rows of `rows` ([n] or [n, m]; m columns compared in order),
// in sorted order when `sort`, else in the order their runs appear.
Unique unique_rows(const Tensor& rows, bool sort) {
  const int64_t n = rows.sizes()[0];
  const Device dev = rows.device();
  Tensor sorted = rows, perm;
  if (sort) {
    if (rows.dim() == 1) {
      Stack r = sort_stable_op.call(rows, true, int64_t(0), false);
      sorted = r[0].to_tensor();
      perm = r[1].to_tensor();
    } else {
      // Lexicographic: stable sorts by each column, the last one first.
      perm = arange_op.tensor(Scalar(n), ScalarType::Int64, dev);
      for (int64_t c = rows.sizes()[1] - 1; c >= 0; --c) {
        Tensor col = reshape_op.tensor(narrow_op.tensor(rows, int64_t(1), c, int64_t(1)),
                                       std::vector<int64_t>{n});
        Tensor keys = index_select_op.tensor(col, int64_t(0), perm);
        Stack r = sort_stable_op.call(keys, true, int64_t(0), false);
        perm = index_select_op.tensor(perm, int64_t(0), r[1].to_tensor());
      }
      sorted = index_select_op.tensor(rows, int64_t(0), perm);
    }
  }
  // Where a run starts: the first row, and each row unlike the one before it.
  Tensor is_new = full_op.tensor(std::vector<int64_t>{std::min<int64_t>(n, 1)}, Scalar(true),
                                 ScalarType::Bool, dev);
  if (n > 1) {
    Tensor differs = ne_op.tensor(narrow_op.tensor(sorted, int64_t(0), int64_t(1), n - 1),
                                  narrow_op.tensor(sorted, int64_t(0), int64_t(0), n - 1));
    if (differs.dim() == 2) differs = any_dim_op.tensor(differs, int64_t(1), false);
    is_new = cat_op.tensor(std::vector<Tensor>{is_new, differs}, int64_t(0));
  }
  Tensor starts = reshape_op.tensor(nonzero_op.tensor(is_new), std::vector<int64_t>{-1});
  const int64_t k = starts.sizes()[0];
  Unique u;
  u.values = index_select_op.tensor(sorted, int64_t(0), starts);
  // counts: from each start to the next (the last to n).
  Tensor ends = cat_op.tensor(
      std::vector<Tensor>{narrow_op.tensor(starts, int64_t(0), std::min<int64_t>(k, 1), k - std::min<int64_t>(k, 1)),
                          full_op.tensor(std::vector<int64_t>{k > 0 ? 1 : 0}, Scalar(n), ScalarType::Int64, dev)},
      int64_t(0));
  u.counts = sub_op.tensor(ends, starts);
  // inverse: the run of each sorted row, put back where that row came from.
  Tensor one = full_op.tensor(std::vector<int64_t>{}, Scalar(int64_t(1)), ScalarType::Int64, dev);
  Tensor run = sub_op.tensor(cumsum_op.tensor(is_new, int64_t(0), ScalarType::Int64), one);
  u.inverse = sort ? scatter_op.tensor(full_op.tensor(std::vector<int64_t>{n}, Scalar(0),
                                                      ScalarType::Int64, dev),
                                       int64_t(0), perm, run)
                   : run;
  return u;
}

void ret3(Stack& s, Unique u) {
  s.clear();
  s.emplace_back(std::move(u.values));
  s.emplace_back(std::move(u.inverse));
  s.emplace_back(std::move(u.counts));
}

// Over the flattened elements; the inverse takes self's shape. An inverse
// or counts not asked for is empty, as torch's flat kernels give them (its
// dim= kernels give all three).
void unique_flat(Stack& s, const Tensor& self, bool sort, bool inverse, bool counts) {
  Unique u = unique_rows(reshape_op.tensor(self, std::vector<int64_t>{-1}), sort);
  u.inverse = reshape_op.tensor(u.inverse, self.sizes().vec());
  auto none = [&] {
    return full_op.tensor(std::vector<int64_t>{0}, Scalar(int64_t(0)), ScalarType::Int64, self.device());
  };
  if (!inverse) u.inverse = none();
  if (!counts) u.counts = none();
  ret3(s, std::move(u));
}

// Over the slices along `dim`: each slice is a row of its flattened elements.
void unique_along(Stack& s, const Tensor& self, int64_t dim, bool sort) {
  IGNIS_CHECK_INDEX(self.dim() > 0, "unique: dim given for a 0-dimensional tensor");
  dim = wrap_dim(dim, self.dim());
  Tensor moved = contiguous_op.tensor(movedim_op.tensor(self, std::vector<int64_t>{dim},
                                                        std::vector<int64_t>{0}));
  const int64_t n = moved.sizes()[0];
  Unique u = unique_rows(reshape_op.tensor(moved, std::vector<int64_t>{n, n == 0 ? 0 : -1}), sort);
  std::vector<int64_t> shape = moved.sizes().vec();
  shape[0] = u.values.sizes()[0];
  u.values = movedim_op.tensor(reshape_op.tensor(u.values, shape), std::vector<int64_t>{0},
                               std::vector<int64_t>{dim});
  ret3(s, std::move(u));
}

// _unique2(self, sorted, return_inverse, return_counts): torch's CPU kernel
// sorts whatever `sorted` says, and so does this one.
void unique2_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  unique_flat(s, self, true, s[2].to_bool(), s[3].to_bool());
}
void unique_dim_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  unique_along(s, self, s[1].to_int(), true);
}
void unique_consecutive_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  if (s[3].is_none()) unique_flat(s, self, false, s[1].to_bool(), s[2].to_bool());
  else unique_along(s, self, s[3].to_int(), false);
}

constexpr const char* kDataDependent =
    "the output's shape is the number of distinct values (data-dependent)";

}  // namespace

void register_unique_ops() {
  def("_unique2(Tensor self, bool sorted=True, bool return_inverse=False, "
      "bool return_counts=False) -> (Tensor, Tensor, Tensor)")
      .category(OpCategory::Composite).both().composite(unique2_kernel)
      .data_dependent(std::string("unique(): ") + kDataDependent)
      .doc("the sorted distinct elements, each element's index among them, and their counts");
  def("unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, "
      "bool return_counts=False) -> (Tensor, Tensor, Tensor)")
      .category(OpCategory::Composite).both().composite(unique_dim_kernel)
      .data_dependent(std::string("unique(dim=): ") + kDataDependent)
      .doc("the sorted distinct slices along dim, each slice's index among them, and their counts");
  def("unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, "
      "int? dim=None) -> (Tensor, Tensor, Tensor)")
      .category(OpCategory::Composite).both().composite(unique_consecutive_kernel)
      .data_dependent(std::string("unique_consecutive(): ") + kDataDependent)
      .doc("the first element of each run of equal elements (or slices along dim), each "
           "element's run, and the runs' lengths");
}

}  // namespace ignis

// Ordering ops: sort, argsort and topk. sort and topk are core: an order
// cannot be written with other core ops, and topk's partial sort costs less
// than a full one. Both run kernels/cpu/sort.h (kernels/cuda/sort.h on a
// GPU, the same results) and, in the compiler, stay extern calls. argsort is
// sort's indices.
#include "ignis/autograd/formula.h"
#include "ignis/kernels/cpu/sort.h"
#include "ignis/kernels/cuda/sort.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

// Argument positions of the two sort overloads: sort(self, dim, descending)
// and sort.stable(self, *, stable, dim, descending).
struct SortArgs {
  int64_t dim;
  bool descending;
};
SortArgs sort_args(const Stack& s, bool with_stable) {
  const size_t d = with_stable ? 2 : 1;
  return {s[d].to_int(), s[d + 1].to_bool()};
}

// values and indices of `self` with `k` elements at `dim`.
void alloc_ordered(OpCall& c, int64_t dim, int64_t k) {
  const Tensor& self = c.tensor(0);
  DimVector sizes = self.sizes();
  if (self.dim() > 0) sizes[dim] = k;
  c.alloc(sizes, self.dtype());
  c.alloc(sizes, ScalarType::Int64);
}

// The call's device's kernel (cpu::sort_out and cuda::sort_out agree).
auto sort_out_on(const OpCall& c) { return c.device.is_cuda() ? cuda::sort_out : cpu::sort_out; }

template <bool Stable>
void sort_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  SortArgs a = sort_args(c.args, Stable);
  const int64_t dim = wrap_dim(a.dim, self.dim());
  alloc_ordered(c, dim, self.dim() == 0 ? 1 : self.sizes()[dim]);
}
template <bool Stable>
void sort_kernel(OpCall& c) {
  const Tensor& self = c.tensor(0);
  SortArgs a = sort_args(c.args, Stable);
  const int64_t dim = wrap_dim(a.dim, self.dim());
  sort_out_on(c)(c.outputs[0], c.outputs[1], self, dim,
                 self.dim() == 0 ? 1 : self.sizes()[dim], a.descending);
}

// topk(self, k, dim=-1, largest=True, sorted=True). The result is always
// sorted (sorted=False allows any order).
void topk_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const int64_t dim = wrap_dim(c.int_arg(2), self.dim());
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[dim];
  const int64_t k = c.int_arg(1);
  IGNIS_CHECK(k >= 0 && k <= n, "selected index k out of range");
  IGNIS_CHECK(self.dtype() != ScalarType::Bool, "topk does not support bool dtypes");
  alloc_ordered(c, dim, k);
}
void topk_kernel(OpCall& c) {
  const Tensor& self = c.tensor(0);
  const int64_t dim = wrap_dim(c.int_arg(2), self.dim());
  // A 0-dim self gives itself back for k = 0 too, as torch's topk does.
  const int64_t k = self.dim() == 0 ? 1 : c.int_arg(1);
  sort_out_on(c)(c.outputs[0], c.outputs[1], self, dim, k, c.bool_arg(3));
}

// argsort: the indices of sort (argsort.stable passes `stable` on).
void argsort_kernel(const OpHandle& op, DispatchKeySet, Stack& s) {
  static OpRef sort_stable("sort.stable");
  const bool stable = op.schema().overload == "stable" && s[1].to_bool();
  SortArgs a = sort_args(s, op.schema().overload == "stable");
  Stack r = sort_stable.call(s[0].to_tensor(), stable, a.dim, a.descending);
  Tensor idx = r.at(1).to_tensor();
  s.clear();
  s.emplace_back(std::move(idx));
}

// ---- derivatives --------------------------------------------------------------------
using namespace grad_ops;  // NOLINT

// The gradient of the values goes back to the positions they came from.
Tensor scatter_back(const GradCtx& c, int64_t dim) {
  if (c.sizes(0).empty()) return c.grad();
  const Tensor& g = c.grad();
  return op("scatter.src", zeros(c.sizes(0), g.dtype(), g.user_device()), dim, c.result(1), g);
}
void sort_bw(GradCtx& c) {
  const int64_t d = c.args.size() == 4 ? 2 : 1;  // sort.stable has four arguments
  c.set(0, scatter_back(c, wrap_dim(c.int_arg(d), int64_t(c.sizes(0).size()))));
}
void topk_bw(GradCtx& c) {
  c.set(0, scatter_back(c, wrap_dim(c.int_arg(2), int64_t(c.sizes(0).size()))));
}

}  // namespace

void register_sort_ops() {
  def("sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)")
      .category(OpCategory::Other).both().meta(sort_meta<false>).cpu_and_cuda(sort_kernel<false>)
      .doc("the elements along dim in order, and where each came from (stable; NaN last, "
           "or first when descending)")
      .derivative(sort_bw, "result1").core();
  def("sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> "
      "(Tensor values, Tensor indices)")
      .category(OpCategory::Other).both().meta(sort_meta<true>).cpu_and_cuda(sort_kernel<true>)
      .doc("sort; every sort is stable, so `stable` changes nothing")
      .derivative(sort_bw, "result1").core();
  def("argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor")
      .category(OpCategory::Composite).both().composite(argsort_kernel)
      .doc("the indices that sort self along dim");
  def("argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor")
      .category(OpCategory::Composite).both().composite(argsort_kernel);
  def("topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> "
      "(Tensor values, Tensor indices)")
      .category(OpCategory::Other).both().meta(topk_meta).cpu_and_cuda(topk_kernel)
      .doc("the k largest (or smallest) elements along dim, in order, and their indices")
      .derivative(topk_bw, "result1").core();
}

}  // namespace ignis

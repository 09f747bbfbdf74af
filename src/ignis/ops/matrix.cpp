// Matrix products: mm, bmm, addmm, baddbmm, dot, mv (structured, computed
// by kernels/cpu/gemm on the CPU and cuBLASLt on CUDA, ops/matrix_cuda.h)
// and matmul, outer (composites over them, so that
// autograd and tracing see the primitive products).
#include "ignis/autograd/formula.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/gemm.h"
#include "ignis/kernels/cpu/nn_util.h"
#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/families.h"
#include "ignis/ops/matrix_cuda.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

using cpu::cpp_type_name;

// ---- shared checks ------------------------------------------------------------------
void check_gemm_dtype(ScalarType t) {
  if (t == ScalarType::Bool)
    IGNIS_NOT_IMPLEMENTED("\"addmm_impl_cpu_\" not implemented for '", scalar_type_name(t), "'");
}

void check_mm_args(const Tensor& a, const Tensor& b, const char* first) {
  IGNIS_CHECK(a.dim() == 2, first, " must be a matrix, got ", a.dim(), "-D tensor");
  IGNIS_CHECK(b.dim() == 2, "mat2 must be a matrix, got ", b.dim(), "-D tensor");
  IGNIS_CHECK(a.sizes()[1] == b.sizes()[0], "mat1 and mat2 shapes cannot be multiplied (",
              a.sizes()[0], "x", a.sizes()[1], " and ", b.sizes()[0], "x", b.sizes()[1], ")");
  IGNIS_CHECK(a.dtype() == b.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
              cpp_type_name(a.dtype()), " != ", cpp_type_name(b.dtype()));
  check_gemm_dtype(a.dtype());
}

void check_bmm_args(const Tensor& a, const Tensor& b) {
  IGNIS_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
  IGNIS_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
  IGNIS_CHECK(b.sizes()[0] == a.sizes()[0] && b.sizes()[1] == a.sizes()[2],
              "Expected size for first two dimensions of batch2 tensor to be: [", a.sizes()[0],
              ", ", a.sizes()[2], "] but got: [", b.sizes()[0], ", ", b.sizes()[1], "].");
  IGNIS_CHECK(a.dtype() == b.dtype(), "expected scalar type ", scalar_type_name(a.dtype()),
              " but found ", scalar_type_name(b.dtype()));
  check_gemm_dtype(a.dtype());
}

// `self` of addmm/baddbmm must broadcast to the product's shape; same
// message as expand().
void check_expandable(const Tensor& self, const DimVector& target) {
  const int64_t nd = static_cast<int64_t>(target.size());
  IGNIS_CHECK(self.dim() <= nd, "expand(Tensor{", self.shape_str(), "}, size=", shape_str(target),
              "): the number of sizes provided (", nd, ") must be greater or equal to the number "
              "of dimensions in the tensor (", self.dim(), ")");
  for (int64_t i = 0; i < self.dim(); ++i) {
    int64_t have = self.sizes()[self.dim() - 1 - i], want = target[nd - 1 - i];
    IGNIS_CHECK(have == want || have == 1, "The expanded size of the tensor (", want,
                ") must match the existing size (", have, ") at non-singleton dimension ",
                nd - 1 - i, ".  Target sizes: ", shape_str(target), ".  Tensor sizes: ",
                self.shape_str());
  }
}

void check_self_dtype(const Tensor& self, const Tensor& mat) {
  IGNIS_CHECK(self.dtype() == mat.dtype(), "self and mat2 must have the same dtype, but got ",
              scalar_type_name(self.dtype()), " and ", scalar_type_name(mat.dtype()));
}

// [m, n] seen as a batch of one [1, m, n].
Tensor as_batch(const Tensor& t) {
  DimVector sz = t.sizes(), st = t.strides();
  sz.insert(0, 1);
  st.insert(0, 0);
  return make_view(t, sz, st, t.storage_offset());
}

// ---- mm / bmm / addmm / baddbmm -----------------------------------------------------
void mm_meta(OpCall& c) {
  const Tensor &a = c.tensor(0), &b = c.tensor(1);
  check_mm_args(a, b, "self");
  c.alloc({a.sizes()[0], b.sizes()[1]}, a.dtype());
}
void mm_cpu(OpCall& c) {
  cpu::bmm_into(as_batch(c.outputs[0]), as_batch(c.tensor(0)), as_batch(c.tensor(1)),
                Scalar(int64_t(0)), Scalar(int64_t(1)));
}

void bmm_meta(OpCall& c) {
  const Tensor &a = c.tensor(0), &b = c.tensor(1);
  check_bmm_args(a, b);
  c.alloc({a.sizes()[0], a.sizes()[1], b.sizes()[2]}, a.dtype());
}
void bmm_cpu(OpCall& c) {
  cpu::bmm_into(c.outputs[0], c.tensor(0), c.tensor(1), Scalar(int64_t(0)), Scalar(int64_t(1)));
}

// addmm(self, mat1, mat2, *, beta, alpha) and baddbmm(self, batch1, batch2, ...)
template <bool Batched>
void addmm_meta(OpCall& c) {
  const Tensor &self = c.tensor(0), &a = c.tensor(1), &b = c.tensor(2);
  DimVector shape;
  if (Batched) {
    check_bmm_args(a, b);
    shape = {a.sizes()[0], a.sizes()[1], b.sizes()[2]};
  } else {
    check_mm_args(a, b, "mat1");
    shape = {a.sizes()[0], b.sizes()[1]};
  }
  check_self_dtype(self, b);
  check_expandable(self, shape);
  c.alloc(shape, a.dtype());
}
template <bool Batched>
void addmm_cpu(OpCall& c) {
  const Tensor& out = c.outputs[0];
  Scalar beta = c.scalar(3), alpha = c.scalar(4);
  // beta == 0 ignores self entirely (NaN in it does not propagate).
  if (beta.to_double() != 0.0) copy_into(out, cpu::broadcast_view(c.tensor(0), out.sizes()));
  if (Batched) cpu::bmm_into(out, c.tensor(1), c.tensor(2), beta, alpha);
  else cpu::bmm_into(as_batch(out), as_batch(c.tensor(1)), as_batch(c.tensor(2)), beta, alpha);
}

// _addmm_act(self, mat1, mat2, *, beta, alpha, activation): relu(addmm) or
// gelu(addmm, approximate='tanh') -- the two functions cuBLASLt's
// epilogues compute (its GELU is the tanh form), which the CUDA compiler
// folds into a product (graph/passes/gemm_activation.h); on CUDA one
// cuBLASLt call (matrix_cuda.cpp). Not torch's _addmm_activation, whose
// use_gelu is the tanh form on CUDA and the erf form on the CPU: this one
// is the same function on every device. The CPU runs addmm and then the
// activation in place, as eager's two ops.
void addmm_act_meta(OpCall& c) {
  addmm_act_is_gelu(c.args[5]);
  addmm_meta<false>(c);
}
void addmm_act_cpu(OpCall& c) {
  addmm_cpu<false>(c);
  apply_addmm_act(c.outputs[0], addmm_act_is_gelu(c.args[5]));
}

// ---- dot / mv -------------------------------------------------------------------------
void dot_meta(OpCall& c) {
  const Tensor &a = c.tensor(0), &b = c.tensor(1);
  IGNIS_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ",
              b.dim(), "D tensors");
  IGNIS_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(),
              "] and src [", b.numel(), "] to have the same number of elements, but got ",
              a.numel(), " and ", b.numel(), " elements respectively");
  IGNIS_CHECK(a.dtype() == b.dtype(), "dot : expected both vectors to have same dtype, but found ",
              scalar_type_name(a.dtype()), " and ", scalar_type_name(b.dtype()));
  if (a.dtype() == ScalarType::Bool)
    IGNIS_NOT_IMPLEMENTED("\"dot\" not implemented for 'Bool'");
  c.alloc({}, a.dtype());
}
void dot_cpu(OpCall& c) { cpu::dot_into(c.outputs[0], c.tensor(0), c.tensor(1)); }

void mv_meta(OpCall& c) {
  const Tensor &m = c.tensor(0), &v = c.tensor(1);
  IGNIS_CHECK(m.dim() == 2 && v.dim() == 1, "vector + matrix @ vector expected, got 1, ", m.dim(),
              ", ", v.dim());
  IGNIS_CHECK(m.sizes()[1] == v.sizes()[0], "size mismatch, got input (", m.sizes()[0],
              "), mat (", m.sizes()[0], "x", m.sizes()[1], "), vec (", v.sizes()[0], ")");
  IGNIS_CHECK(m.dtype() == v.dtype(), "addmv input tensors must have the same dtype, but got ",
              scalar_type_name(v.dtype()), ", ", scalar_type_name(m.dtype()), ", and ",
              scalar_type_name(v.dtype()));
  check_gemm_dtype(m.dtype());
  c.alloc({m.sizes()[0]}, m.dtype());
}
void mv_cpu(OpCall& c) {
  const Tensor &m = c.tensor(0), &v = c.tensor(1), &out = c.outputs[0];
  // The vector as a [k, 1] matrix, the result as [m, 1].
  Tensor vb = make_view(v, {1, v.sizes()[0], 1}, {0, v.strides()[0], 1}, v.storage_offset());
  Tensor ob = make_view(out, {1, out.sizes()[0], 1}, {0, 1, 1}, out.storage_offset());
  cpu::bmm_into(ob, as_batch(m), vb, Scalar(int64_t(0)), Scalar(int64_t(1)));
}

// ---- composites: matmul, outer -----------------------------------------------------------
OpRef mm_op("mm"), bmm_op("bmm"), mv_op("mv"), dot_op("dot"), reshape_op("reshape"),
    view_op("view"), expand_op("expand"), unsqueeze_op("unsqueeze"), squeeze_op("squeeze.dim"),
    mul_op("mul");

void ret(Stack& s, Tensor t) {
  s.clear();
  s.emplace_back(std::move(t));
}

std::vector<int64_t> vec_of(const DimVector& d, size_t begin, size_t end) {
  return std::vector<int64_t>(d.begin() + begin, d.begin() + end);
}

// PyTorch's matmul: dot, mv and mm for 1-D/2-D operands; a batched left
// operand against a matrix or vector folds its batch into the rows of one
// mm/mv; everything else broadcasts the batch dimensions and runs bmm.
Tensor matmul_impl(const Tensor& a, const Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  IGNIS_CHECK(da > 0 && db > 0, "both arguments to matmul need to be at least 1D, but they are ",
              da, "D and ", db, "D");
  if (da == 1 && db == 1) return dot_op.tensor(a, b);
  if (da == 2 && db == 1) return mv_op.tensor(a, b);
  if (da == 1 && db == 2) return squeeze_op.tensor(mm_op.tensor(unsqueeze_op.tensor(a, 0), b), 0);
  if (da == 2 && db == 2) return mm_op.tensor(a, b);
  const DimVector& as = a.sizes();
  if (da >= 3 && db <= 2) {
    int64_t rows = 1;
    for (int64_t d = 0; d < da - 1; ++d) rows *= as[d];
    Tensor folded = reshape_op.tensor(a, std::vector<int64_t>{rows, as[da - 1]});
    std::vector<int64_t> out_shape = vec_of(as, 0, da - 1);
    Tensor r;
    if (db == 2) {
      r = mm_op.tensor(folded, b);
      out_shape.push_back(b.sizes()[1]);
    } else {
      r = mv_op.tensor(folded, b);
    }
    return view_op.tensor(r, out_shape);
  }
  Tensor a3 = da == 1 ? unsqueeze_op.tensor(a, 0) : a;
  Tensor b3 = db == 1 ? unsqueeze_op.tensor(b, 1) : b;
  const int64_t n = a3.sizes()[a3.dim() - 2], k = a3.sizes()[a3.dim() - 1];
  const int64_t k2 = b3.sizes()[b3.dim() - 2], p = b3.sizes()[b3.dim() - 1];
  DimVector batch = broadcast_shapes(DimVector(vec_of(a3.sizes(), 0, a3.dim() - 2)),
                                     DimVector(vec_of(b3.sizes(), 0, b3.dim() - 2)));
  const int64_t nb = compute_numel(batch);
  std::vector<int64_t> ea = batch.vec(), eb = batch.vec();
  ea.insert(ea.end(), {n, k});
  eb.insert(eb.end(), {k2, p});
  Tensor a_flat = reshape_op.tensor(expand_op.tensor(a3, ea), std::vector<int64_t>{nb, n, k});
  Tensor b_flat = reshape_op.tensor(expand_op.tensor(b3, eb), std::vector<int64_t>{nb, k2, p});
  Tensor r = bmm_op.tensor(a_flat, b_flat);
  std::vector<int64_t> out_shape = batch.vec();
  if (da > 1) out_shape.push_back(n);
  if (db > 1) out_shape.push_back(p);
  return view_op.tensor(r, out_shape);
}

void matmul_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor a = s[0].to_tensor(), b = s[1].to_tensor();
  ret(s, matmul_impl(a, b));
}

void outer_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor a = s[0].to_tensor(), b = s[1].to_tensor();
  IGNIS_CHECK(a.dim() == 1, "outer: Expected 1-D argument self, but got ", a.dim(), "-D");
  IGNIS_CHECK(b.dim() == 1, "outer: Expected 1-D argument vec2, but got ", b.dim(), "-D");
  ret(s, mul_op.tensor(unsqueeze_op.tensor(a, 1), b));
}

// ---- derivatives ------------------------------------------------------------------
using namespace grad_ops;  // NOLINT

Tensor mT(const Tensor& t) { return conj_t(t); }
// A column-major matrix (the transpose of a contiguous one: nn.Linear's
// weight.t() as mm's mat2), from its sizes and strides.
bool column_major(const DimVector& sizes, const DimVector& strides) {
  return sizes.size() == 2 && strides[0] == 1 && strides[1] == sizes[0];
}
// The gradients of mat1 @ mat2 (arguments i1, i2 of the call), each in its
// input's layout, as torch's mm_mat1_backward / mm_mat2_backward: for a
// column-major input the product is taken the other way round and
// transposed, so that a Linear's weight gradient (mat2 = W.t()) comes out as
// W's contiguous [out, in] once its t() is undone -- AccumulateGrad then
// keeps it without a copy, and the product is dY^T @ X, as torch computes it.
// The layout is read from the input's strides, not its values: the
// gradient of mat1 reads only mat2.
Tensor mm_mat1_grad(GradCtx& c, int i1, int i2) {
  if (column_major(c.sizes(i1), c.strides(i1))) return mT(op("mm", c.in(i2), mT(c.grad())));
  return op("mm", c.grad(), mT(c.in(i2)));
}
Tensor mm_mat2_grad(GradCtx& c, int i1, int i2) {
  if (column_major(c.sizes(i2), c.strides(i2))) return mT(op("mm", mT(c.grad()), c.in(i1)));
  return op("mm", mT(c.in(i1)), c.grad());
}
void mm_bw(GradCtx& c) {
  if (c.needs_grad(0)) c.set(0, mm_mat1_grad(c, 0, 1));
  if (c.needs_grad(1)) c.set(1, mm_mat2_grad(c, 0, 1));
}
void bmm_bw(GradCtx& c) {
  if (c.needs_grad(0)) c.set(0, op("bmm", c.grad(), mT(c.in(1))));
  if (c.needs_grad(1)) c.set(1, op("bmm", mT(c.in(0)), c.grad()));
}
// addmm / baddbmm: beta * self + alpha * (mat1 @ mat2).
template <bool Batched>
void addmm_bw(GradCtx& c) {
  const char* mm_name = Batched ? "bmm" : "mm";
  double beta = c.scalar(3).to_double(), alpha = c.scalar(4).to_double();
  c.set(0, beta == 1.0 ? c.grad() : mul(c.grad(), beta));
  if (c.needs_grad(1)) {
    Tensor g = Batched ? op(mm_name, c.grad(), mT(c.in(2))) : mm_mat1_grad(c, 1, 2);
    c.set(1, alpha == 1.0 ? g : mul(g, alpha));
  }
  if (c.needs_grad(2)) {
    Tensor g = Batched ? op(mm_name, mT(c.in(1)), c.grad()) : mm_mat2_grad(c, 1, 2);
    c.set(2, alpha == 1.0 ? g : mul(g, alpha));
  }
}
// Through its decomposition: the activation of addmm, recomputed.
void addmm_act_bw(GradCtx& c) {
  const Scalar beta = c.scalar(3), alpha = c.scalar(4);
  const bool gelu = addmm_act_is_gelu(c.args[5]);
  vjp_decomposition(c, {0, 1, 2}, [&](const std::vector<Tensor>& in) {
    Tensor pre = op("addmm", in[0], in[1], in[2], beta, alpha);
    return gelu ? op("gelu", pre, std::string("tanh")) : op("relu", pre);
  });
}
void dot_bw(GradCtx& c) {
  if (c.needs_grad(0)) c.set(0, mul(c.grad(), c.in(1)));
  if (c.needs_grad(1)) c.set(1, mul(c.grad(), c.in(0)));
}
void mv_bw(GradCtx& c) {
  if (c.needs_grad(0)) c.set(0, op("outer", c.grad(), c.in(1)));
  if (c.needs_grad(1)) c.set(1, op("mv", op("t", c.in(0)), c.grad()));
}

}  // namespace

bool addmm_act_is_gelu(const IValue& activation) {
  const std::string& a = activation.to_string();
  IGNIS_CHECK_VALUE(a == "relu" || a == "gelu_tanh",
                    "_addmm_act: activation must be 'relu' or 'gelu_tanh', got '", a, "'");
  return a == "gelu_tanh";
}

void apply_addmm_act(const Tensor& out, bool gelu) {
  if (gelu) OpRef("gelu_").call(out, std::string("tanh"));
  else OpRef("relu_").call(out);
}

void register_matrix_ops() {
  // The GEMM calls are templates: a compiler fills a matrix-multiply template for them (with
  // pointwise prologues or epilogues) rather than fusing them as loops. dot is a reduction in
  // all but name and stays Other; matmul and outer only call these and stay composite.
  def("mm(Tensor self, Tensor mat2) -> Tensor")
      .category(OpCategory::Template).both().meta(mm_meta).cpu(mm_cpu).cuda(mm_cuda)
      .doc("matrix product of [n, m] and [m, p]")
      .derivative(mm_bw, "self, mat2").core();
  def("bmm(Tensor self, Tensor mat2) -> Tensor")
      .category(OpCategory::Template).both().meta(bmm_meta).cpu(bmm_cpu).cuda(bmm_cuda)
      .doc("batched matrix product of [b, n, m] and [b, m, p]")
      .derivative(bmm_bw, "self, mat2").core();
  def("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor")
      .category(OpCategory::Template).both().meta(addmm_meta<false>).cpu(addmm_cpu<false>)
      .cuda(addmm_cuda)
      .doc("beta * self + alpha * (mat1 @ mat2)")
      .derivative(addmm_bw<false>, "mat1, mat2").core();
  def("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
      "Tensor")
      .category(OpCategory::Template).both().meta(addmm_meta<true>).cpu(addmm_cpu<true>)
      .cuda(baddbmm_cuda)
      .doc("beta * self + alpha * bmm(batch1, batch2)")
      .derivative(addmm_bw<true>, "batch1, batch2").core();
  def("_addmm_act(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, "
      "str activation) -> Tensor")
      .category(OpCategory::Template).both().meta(addmm_act_meta).cpu(addmm_act_cpu)
      .cuda(addmm_act_cuda)
      .doc("relu(addmm(...)) (activation='relu') or gelu(addmm(...), approximate='tanh') "
           "('gelu_tanh'): on CUDA one cuBLASLt call with its activation epilogue")
      .derivative(addmm_act_bw, "self, mat1, mat2").decomposition(decomp::addmm_act);
  def("dot(Tensor self, Tensor tensor) -> Tensor")
      .category(OpCategory::Other).both().meta(dot_meta).cpu(dot_cpu).cuda(dot_cuda)
      .doc("inner product of two 1-D tensors")
      .derivative(dot_bw, "self, tensor").decomposition(decomp::dot);
  def("mv(Tensor self, Tensor vec) -> Tensor")
      .category(OpCategory::Template).both().meta(mv_meta).cpu(mv_cpu).cuda(mv_cuda)
      .doc("matrix-vector product")
      .derivative(mv_bw, "self, vec").decomposition(decomp::mv);
  def("matmul(Tensor self, Tensor other) -> Tensor").category(OpCategory::Composite).both()
      .composite(matmul_kernel).doc("matrix product with NumPy's 1-D and batch broadcasting rules");
  def("outer(Tensor self, Tensor vec2) -> Tensor").category(OpCategory::Composite).both()
      .composite(outer_kernel).doc("outer product of two 1-D tensors");
  alias("ger", "outer");  // PyTorch's other name of outer
}

}  // namespace ignis

// Matrix-product decompositions: dot and mv as mm (the GEMM template the
// compiler keeps), so that one template serves every 1-D/2-D product.
#include "ignis/ops/decomp/common.h"

namespace ignis::decomp {

using namespace grad_ops;  // NOLINT

namespace {
OpRef mm_op("mm");
}  // namespace

// dot(a, b) = mm([1, k], [k, 1]) as a 0-dim tensor.
void dot(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Tensor r = mm_op.tensor(unsqueeze(a.tensor(0), 0), unsqueeze(a.tensor(1), 1));
  a.ret(view(r, DimVector{}));
}

// mv(m, v) = mm(m, [k, 1]) as a vector.
// relu(addmm(...)) or gelu(addmm(...), approximate='tanh'): the two ops
// the CUDA compiler folded (graph/passes/gemm_activation.h).
void addmm_act(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Tensor pre = OpRef("addmm").tensor(a.tensor(0), a.tensor(1), a.tensor(2), a.scalar(3), a.scalar(4));
  a.ret(a.str(5) == "gelu_tanh" ? OpRef("gelu").tensor(pre, std::string("tanh"))
                                : OpRef("relu").tensor(pre));
}

void mv(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Tensor r = mm_op.tensor(a.tensor(0), unsqueeze(a.tensor(1), 1));
  a.ret(view(r, a.sizes()));
}

}  // namespace ignis::decomp

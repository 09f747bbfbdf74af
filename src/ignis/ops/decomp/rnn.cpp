// Recurrent cell decompositions: the fused LSTM/GRU cells and their
// backward ops as slices, sigmoid, tanh, products and a cat (the workspace),
// the formulas the kernels in kernels/cpu/rnn_cell compute. Float16/bfloat16
// are computed in float32 and rounded once, as the kernels do.
#include "ignis/ops/decomp/common.h"

namespace ignis::decomp {

using namespace grad_ops;  // NOLINT

namespace {

// Gate k (of width H) of the [B, G * H] gates.
Tensor gate(const Tensor& gates, int64_t k, int64_t H) {
  return slice(gates, 1, k * H, (k + 1) * H);
}

// 1 - x, in x's dtype.
Tensor one_minus(const Tensor& x) { return sub(wrapped_as(1, x.dtype()), x); }

// An optional gradient in the compute dtype, zeros where None.
Tensor grad_or_zeros(const Tensor& g, const Tensor& like, ScalarType dt) {
  return g.defined() ? up(g, dt) : grad_ops::zeros(like.sizes(), opmath(dt), like.device());
}

}  // namespace

// _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias)
// -> (hy, cy, workspace = cat(i, f, g, o)).
void thnn_fused_lstm_cell(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& cx = a.tensor(2);
  const ScalarType dt = cx.dtype();
  const int64_t H = cx.size(1);
  Tensor gates = add(up(a.tensor(0), dt), up(a.tensor(1), dt));
  if (a.opt(3).defined()) gates = add(gates, add(up(a.tensor(3), dt), up(a.tensor(4), dt)));
  Tensor i = op("sigmoid", gate(gates, 0, H)), f = op("sigmoid", gate(gates, 1, H));
  Tensor g = op("tanh", gate(gates, 2, H)), out = op("sigmoid", gate(gates, 3, H));
  Tensor cy = add(mul(f, up(cx, dt)), mul(i, g));
  Tensor hy = mul(out, op("tanh", cy));
  a.ret({hy, cy, OpRef("cat").tensor(std::vector<Tensor>{i, f, g, out}, 1)});
}

// _thnn_fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace,
// has_bias) -> (grad_gates, grad_cx, grad_bias): with tc = tanh(cy) and
// dc = grad_hy o (1 - tc^2) + grad_cy,
//   d i = dc g i (1 - i), d f = dc cx f (1 - f), d g = dc i (1 - g^2),
//   d o = grad_hy tc o (1 - o), grad_cx = dc f, grad_bias = sum over rows.
void thnn_fused_lstm_cell_backward_impl(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& cx = a.tensor(2);
  const ScalarType dt = cx.dtype();
  const int64_t H = cx.size(1);
  Tensor ws = up(a.tensor(4), dt);
  Tensor i = gate(ws, 0, H), f = gate(ws, 1, H), g = gate(ws, 2, H), out = gate(ws, 3, H);
  Tensor dh = grad_or_zeros(a.opt(0), cx, dt), dcy = grad_or_zeros(a.opt(1), cx, dt);
  Tensor tc = op("tanh", up(a.tensor(3), dt));
  Tensor dc = add(mul(mul(dh, out), one_minus(mul(tc, tc))), dcy);
  Tensor di = mul(mul(dc, g), mul(i, one_minus(i)));
  Tensor df = mul(mul(dc, up(cx, dt)), mul(f, one_minus(f)));
  Tensor dg = mul(mul(dc, i), one_minus(mul(g, g)));
  Tensor dout = mul(mul(dh, tc), mul(out, one_minus(out)));
  Tensor dgates = OpRef("cat").tensor(std::vector<Tensor>{di, df, dg, dout}, 1);
  Tensor db = a.bool_arg(5) ? reduce_sum(dgates, {0}, false) : Tensor();
  a.ret({dgates, mul(dc, f), db});
}

// _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias, hidden_bias)
// -> (hy, workspace = cat(r, z, n, hx, hg_n + hb_n)).
void thnn_fused_gru_cell(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& hx = a.tensor(2);
  const ScalarType dt = hx.dtype();
  const int64_t H = hx.size(1);
  Tensor ig = up(a.tensor(0), dt), hg = up(a.tensor(1), dt), h = up(hx, dt);
  if (a.opt(3).defined()) {
    ig = add(ig, up(a.tensor(3), dt));
    hg = add(hg, up(a.tensor(4), dt));
  }
  Tensor r = op("sigmoid", add(gate(ig, 0, H), gate(hg, 0, H)));
  Tensor z = op("sigmoid", add(gate(ig, 1, H), gate(hg, 1, H)));
  Tensor hn = gate(hg, 2, H);
  Tensor n = op("tanh", add(gate(ig, 2, H), mul(r, hn)));
  Tensor hy = add(n, mul(z, sub(h, n)));
  a.ret({hy, OpRef("cat").tensor(std::vector<Tensor>{r, z, n, h, hn}, 1)});
}

// _thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias): with
//   d n = grad_hy (1 - z) (1 - n^2), d z = grad_hy (hx - n) z (1 - z),
//   d r = d n hn r (1 - r),
// grad_input_gates = (d r, d z, d n), grad_hidden_gates = (d r, d z, d n r),
// grad_hx = grad_hy z, the bias gradients their sums over rows.
void thnn_fused_gru_cell_backward(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& gy = a.tensor(0);
  const ScalarType dt = gy.dtype();
  const int64_t H = gy.size(1);
  Tensor dh = up(gy, dt), ws = up(a.tensor(1), dt);
  Tensor r = gate(ws, 0, H), z = gate(ws, 1, H), n = gate(ws, 2, H), hx = gate(ws, 3, H),
         hn = gate(ws, 4, H);
  Tensor dn = mul(mul(dh, one_minus(z)), one_minus(mul(n, n)));
  Tensor dz = mul(mul(dh, sub(hx, n)), mul(z, one_minus(z)));
  Tensor dr = mul(mul(dn, hn), mul(r, one_minus(r)));
  Tensor gi = OpRef("cat").tensor(std::vector<Tensor>{dr, dz, dn}, 1);
  Tensor gh = OpRef("cat").tensor(std::vector<Tensor>{dr, dz, mul(dn, r)}, 1);
  const bool bias = a.bool_arg(2);
  a.ret({gi, gh, mul(dh, z), bias ? reduce_sum(gi, {0}, false) : Tensor(),
         bias ? reduce_sum(gh, {0}, false) : Tensor()});
}

}  // namespace ignis::decomp

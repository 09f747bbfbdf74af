// Fused recurrent cells: the gate math of one LSTM or GRU step and its
// backward, as torch declares them (`_thnn_fused_lstm_cell`,
// `_thnn_fused_gru_cell` and their backward ops; torch has only CUDA kernels
// for them, ignis has CPU ones). nn.LSTM/GRU and their cells call them
// between the matrix products of each step (python/ignis/nn/modules/rnn.py).
// Kernels: kernels/cpu/rnn_cell. Decompositions: ops/decomp/rnn.cpp, so AOT
// hands the compiler core ops (and CUDA runs the decomposition).
//
// The backward ops have no derivative: create_graph differentiates a
// recomputation of the cell from its saved inputs (vjp_decomposition_outputs).
#include <string>

#include "ignis/autograd/formula.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/kernels/cpu/rnn_cell.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/families.h"
#include "ignis/ops/float_compute.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

// A [rows, cols] floating tensor of `dtype` (named `what` in the error).
void check_matrix(const Tensor& t, const char* op, const char* what, int64_t rows, int64_t cols,
                  ScalarType dtype) {
  IGNIS_CHECK(t.dim() == 2 && t.size(0) == rows && t.size(1) == cols, op, ": expected ", what,
              " of size [", rows, ", ", cols, "], got ", t.shape_str());
  IGNIS_CHECK(t.dtype() == dtype, op, ": expected ", what, " of dtype ",
              scalar_type_name(dtype), ", got ", scalar_type_name(t.dtype()));
}

// The gates [B, G * H] against the state [B, H]; returns H. The biases are
// both None or both [G * H].
int64_t check_cell(const char* op, int64_t G, const Tensor& input_gates,
                   const Tensor& hidden_gates, const Tensor& state, const Tensor& input_bias,
                   const Tensor& hidden_bias) {
  const ScalarType dt = input_gates.dtype();
  if (!is_floating(dt))
    IGNIS_FAIL_KIND(NotImplemented, "\"", op, "\" not implemented for '", scalar_type_name(dt),
                    "'");
  IGNIS_CHECK(state.dim() == 2, op, ": expected a 2-D state [batch, hidden], got ",
              state.shape_str());
  const int64_t B = state.size(0), H = state.size(1);
  check_matrix(input_gates, op, "input_gates", B, G * H, dt);
  check_matrix(hidden_gates, op, "hidden_gates", B, G * H, dt);
  check_matrix(state, op, "the state", B, H, dt);
  IGNIS_CHECK(input_bias.defined() == hidden_bias.defined(), op,
              ": input_bias and hidden_bias must both be given or both be None");
  for (const Tensor* b : {&input_bias, &hidden_bias}) {
    if (!b->defined()) continue;
    IGNIS_CHECK(b->dim() == 1 && b->size(0) == G * H && b->dtype() == dt, op,
                ": expected a bias of size [", G * H, "] and dtype ", scalar_type_name(dt),
                ", got ", b->shape_str(), " of ", scalar_type_name(b->dtype()));
  }
  return H;
}

// _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias)
// -> (hy, cy, workspace)
void lstm_cell_meta(OpCall& c) {
  const Tensor& cx = c.tensor(2);
  check_cell("_thnn_fused_lstm_cell", 4, c.tensor(0), c.tensor(1), cx, c.opt_tensor(3),
             c.opt_tensor(4));
  c.alloc(cx.sizes(), cx.dtype());
  c.alloc(cx.sizes(), cx.dtype());
  c.alloc(c.tensor(0).sizes(), cx.dtype());
}
void lstm_cell_cpu(OpCall& c) {
  const ScalarType dt = compute_dtype(c.tensor(2).dtype());
  std::vector<Tensor> res;
  for (const Tensor& o : c.outputs) res.push_back(scratch_for(o, dt));
  cpu::lstm_cell_into(res[0], res[1], res[2], dense(c.tensor(0), dt), dense(c.tensor(1), dt),
                      dense(c.tensor(2), dt), dense(c.opt_tensor(3), dt),
                      dense(c.opt_tensor(4), dt));
  for (size_t i = 0; i < res.size(); ++i) finish(c.outputs[i], res[i]);
}

// _thnn_fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace,
// has_bias) -> (grad_gates, grad_cx, grad_bias or None)
void lstm_cell_backward_meta(OpCall& c) {
  const char* op = "_thnn_fused_lstm_cell_backward_impl";
  const Tensor& cx = c.tensor(2);
  const ScalarType dt = cx.dtype();
  IGNIS_CHECK(cx.dim() == 2, op, ": expected a 2-D cx [batch, hidden], got ", cx.shape_str());
  const int64_t B = cx.size(0), H = cx.size(1);
  check_matrix(c.tensor(3), op, "cy", B, H, dt);
  check_matrix(c.tensor(4), op, "workspace", B, 4 * H, dt);
  for (size_t i : {0, 1})
    if (c.opt_tensor(i).defined())
      check_matrix(c.tensor(i), op, i == 0 ? "grad_hy" : "grad_cy", B, H, dt);
  c.alloc(DimVector{B, 4 * H}, dt);
  c.alloc(cx.sizes(), dt);
  if (c.bool_arg(5)) c.alloc(DimVector{4 * H}, dt);
  else c.outputs.emplace_back();
}
void lstm_cell_backward_cpu(OpCall& c) {
  const ScalarType dt = compute_dtype(c.tensor(2).dtype());
  std::vector<Tensor> res;
  for (const Tensor& o : c.outputs) res.push_back(scratch_for(o, dt));
  cpu::lstm_cell_backward_into(res[0], res[1], res[2], dense(c.opt_tensor(0), dt),
                               dense(c.opt_tensor(1), dt), dense(c.tensor(2), dt),
                               dense(c.tensor(3), dt), dense(c.tensor(4), dt));
  for (size_t i = 0; i < res.size(); ++i) finish(c.outputs[i], res[i]);
}

// _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias, hidden_bias)
// -> (hy, workspace)
void gru_cell_meta(OpCall& c) {
  const Tensor& hx = c.tensor(2);
  const int64_t H = check_cell("_thnn_fused_gru_cell", 3, c.tensor(0), c.tensor(1), hx,
                               c.opt_tensor(3), c.opt_tensor(4));
  c.alloc(hx.sizes(), hx.dtype());
  c.alloc(DimVector{hx.size(0), 5 * H}, hx.dtype());
}
void gru_cell_cpu(OpCall& c) {
  const ScalarType dt = compute_dtype(c.tensor(2).dtype());
  std::vector<Tensor> res;
  for (const Tensor& o : c.outputs) res.push_back(scratch_for(o, dt));
  cpu::gru_cell_into(res[0], res[1], dense(c.tensor(0), dt), dense(c.tensor(1), dt),
                     dense(c.tensor(2), dt), dense(c.opt_tensor(3), dt),
                     dense(c.opt_tensor(4), dt));
  for (size_t i = 0; i < res.size(); ++i) finish(c.outputs[i], res[i]);
}

// _thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias) ->
// (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias)
void gru_cell_backward_meta(OpCall& c) {
  const char* op = "_thnn_fused_gru_cell_backward";
  const Tensor& g = c.tensor(0);
  const ScalarType dt = g.dtype();
  IGNIS_CHECK(g.dim() == 2, op, ": expected a 2-D grad_hy [batch, hidden], got ", g.shape_str());
  const int64_t B = g.size(0), H = g.size(1);
  check_matrix(c.tensor(1), op, "workspace", B, 5 * H, dt);
  c.alloc(DimVector{B, 3 * H}, dt);
  c.alloc(DimVector{B, 3 * H}, dt);
  c.alloc(g.sizes(), dt);
  for (int k = 0; k < 2; ++k) {
    if (c.bool_arg(2)) c.alloc(DimVector{3 * H}, dt);
    else c.outputs.emplace_back();
  }
}
void gru_cell_backward_cpu(OpCall& c) {
  const ScalarType dt = compute_dtype(c.tensor(0).dtype());
  std::vector<Tensor> res;
  for (const Tensor& o : c.outputs) res.push_back(scratch_for(o, dt));
  cpu::gru_cell_backward_into(res[0], res[1], res[2], res[3], res[4], dense(c.tensor(0), dt),
                              dense(c.tensor(1), dt));
  for (size_t i = 0; i < res.size(); ++i) finish(c.outputs[i], res[i]);
}

// ---- derivatives ------------------------------------------------------------------
using namespace grad_ops;  // NOLINT

Tensor narrow_cols(const Tensor& t, int64_t k, int64_t H) {
  return OpRef("narrow").tensor(t, 1, k * H, H);
}

// The LSTM cell written with differentiable ops, for create_graph: in[0..4]
// are the op's tensor arguments. Returns (hy, cy).
std::vector<Tensor> lstm_cell_ops(const std::vector<Tensor>& in) {
  const int64_t H = in[2].size(1);
  Tensor gates = add(in[0], in[1]);
  if (in[3].defined()) gates = add(gates, add(in[3], in[4]));
  Tensor i = op("sigmoid", narrow_cols(gates, 0, H)), f = op("sigmoid", narrow_cols(gates, 1, H));
  Tensor g = op("tanh", narrow_cols(gates, 2, H)), o = op("sigmoid", narrow_cols(gates, 3, H));
  Tensor cy = add(mul(f, in[2]), mul(i, g));
  return {mul(o, op("tanh", cy)), cy};
}
std::vector<Tensor> gru_cell_ops(const std::vector<Tensor>& in) {
  const int64_t H = in[2].size(1);
  Tensor ig = in[0], hg = in[1];
  if (in[3].defined()) {
    ig = add(ig, in[3]);
    hg = add(hg, in[4]);
  }
  Tensor r = op("sigmoid", add(narrow_cols(ig, 0, H), narrow_cols(hg, 0, H)));
  Tensor z = op("sigmoid", add(narrow_cols(ig, 1, H), narrow_cols(hg, 1, H)));
  Tensor n = op("tanh", add(narrow_cols(ig, 2, H), mul(r, narrow_cols(hg, 2, H))));
  return {add(n, mul(z, sub(in[2], n)))};
}

// Outside create_graph the fused backward runs; it gives one gradient for
// both gate inputs (they are summed) and one for both biases.
void lstm_cell_bw(GradCtx& c) {
  if (autograd::grad_enabled()) {
    vjp_decomposition_outputs(c, {0, 1, 2, 3, 4}, lstm_cell_ops);
    return;
  }
  const bool has_bias = c.needs_grad(3) || c.needs_grad(4);
  Stack r = OpRef("_thnn_fused_lstm_cell_backward_impl")
                .call(c.grad(0), c.grad(1), c.in(2), c.result(1), c.result(2), has_bias);
  const Tensor gates = r[0].to_tensor();
  c.set(0, gates);
  c.set(1, gates);
  c.set(2, r[1].to_tensor());
  const Tensor bias = r[2].to_opt_tensor();
  c.set(3, bias);
  c.set(4, bias);
}
void gru_cell_bw(GradCtx& c) {
  if (autograd::grad_enabled()) {
    vjp_decomposition_outputs(c, {0, 1, 2, 3, 4}, gru_cell_ops);
    return;
  }
  const bool has_bias = c.needs_grad(3) || c.needs_grad(4);
  Stack r = OpRef("_thnn_fused_gru_cell_backward").call(c.grad(0), c.result(1), has_bias);
  for (int i = 0; i < 5; ++i) c.set(i, r[static_cast<size_t>(i)].to_opt_tensor());
}

}  // namespace

void register_rnn_ops() {
  def("_thnn_fused_lstm_cell(Tensor input_gates, Tensor hidden_gates, Tensor cx, "
      "Tensor? input_bias=None, Tensor? hidden_bias=None) -> (Tensor, Tensor, Tensor)")
      .category(OpCategory::Other).meta(lstm_cell_meta).cpu(lstm_cell_cpu)
      .doc("one LSTM step's gate math (gates i, f, g, o): (hy, cy, workspace of the "
           "activated gates)")
      .derivative(lstm_cell_bw,
                  "input_gates, hidden_gates, cx, input_bias, hidden_bias, result1, result2")
      .decomposition(decomp::thnn_fused_lstm_cell);
  def("_thnn_fused_lstm_cell_backward_impl(Tensor? grad_hy, Tensor? grad_cy, Tensor cx, "
      "Tensor cy, Tensor workspace, bool has_bias) -> (Tensor, Tensor, Tensor)")
      .category(OpCategory::Other).meta(lstm_cell_backward_meta).cpu(lstm_cell_backward_cpu)
      .doc("the gradients of _thnn_fused_lstm_cell's gates, cx and (has_bias) bias")
      .decomposition(decomp::thnn_fused_lstm_cell_backward_impl);
  def("_thnn_fused_gru_cell(Tensor input_gates, Tensor hidden_gates, Tensor hx, "
      "Tensor? input_bias=None, Tensor? hidden_bias=None) -> (Tensor, Tensor)")
      .category(OpCategory::Other).meta(gru_cell_meta).cpu(gru_cell_cpu)
      .doc("one GRU step's gate math (gates r, z, n): (hy, workspace)")
      .derivative(gru_cell_bw, "input_gates, hidden_gates, hx, input_bias, hidden_bias, result1")
      .decomposition(decomp::thnn_fused_gru_cell);
  def("_thnn_fused_gru_cell_backward(Tensor grad_hy, Tensor workspace, bool has_bias) -> "
      "(Tensor, Tensor, Tensor, Tensor, Tensor)")
      .category(OpCategory::Other).meta(gru_cell_backward_meta).cpu(gru_cell_backward_cpu)
      .doc("the gradients of _thnn_fused_gru_cell's input and hidden gates, hx and "
           "(has_bias) biases")
      .decomposition(decomp::thnn_fused_gru_cell_backward);
}

}  // namespace ignis

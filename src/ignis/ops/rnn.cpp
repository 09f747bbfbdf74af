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
#include "ignis/kernels/device_kernels.h"
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

// ---- a whole recurrence ------------------------------------------------------------
// Note [A recurrence as one op]
// _rnn_recurrence runs one direction of an LSTM or GRU layer over T equal
// steps of B rows: per step the hidden product (mm, or addmm with GRU's
// b_hh) and the fused cell; xg [T*B, G*H] holds every step's input
// projection with the biases the cell adds. It returns the outputs
// [T*B, H], the final h (and c), and what the backward reads: each step's
// c (LSTM) and the cells' workspaces. Its backward op runs the steps in
// reverse with the fused backward cell and one product each, and takes
// W_hh's gradient (and b_hh's) in one product over all steps.
// It is core (docs/core_ops.md, "its cost"): AOT keeps it whole and the
// compiler calls it as an extern. Recorded step by step, a 35-step, 2-layer
// LSTM language model traced into ~450 kernels (6 s of C++ compile) and its
// backward into a weight-gradient product per step, 1.4x slower than eager.
// Eager's nn.LSTM/GRU use the same two ops (rnn.py's _Recurrence, which adds
// create_graph's recorded backward).
struct RecurrenceShape {
  bool lstm;
  int64_t T, B, H, G, W;  // W: the workspace's width per row
};

RecurrenceShape check_recurrence(const char* op, const Tensor& xg, const Tensor& h0,
                                 const Tensor& c0, const Tensor& w_hh, const Tensor& b_hh,
                                 bool lstm) {
  RecurrenceShape r;
  r.lstm = lstm;
  r.G = lstm ? 4 : 3;
  IGNIS_CHECK(h0.dim() == 2 && h0.size(0) > 0, op, ": expected h0 of size [batch, hidden], got ",
              h0.shape_str());
  r.B = h0.size(0);
  r.H = h0.size(1);
  r.W = lstm ? 4 * r.H : 5 * r.H;
  const ScalarType dt = h0.dtype();
  IGNIS_CHECK(is_floating(dt), op, ": expected floating tensors, got ", scalar_type_name(dt));
  IGNIS_CHECK(xg.dim() == 2 && xg.size(1) == r.G * r.H && xg.size(0) % r.B == 0, op,
              ": expected xg of size [steps * ", r.B, ", ", r.G * r.H, "], got ", xg.shape_str());
  r.T = xg.size(0) / r.B;
  check_matrix(xg, op, "xg", r.T * r.B, r.G * r.H, dt);
  check_matrix(w_hh, op, "w_hh", r.G * r.H, r.H, dt);
  IGNIS_CHECK(c0.defined() == lstm, op, lstm ? ": an LSTM needs c0" : ": a GRU takes no c0");
  if (lstm) check_matrix(c0, op, "c0", r.B, r.H, dt);
  IGNIS_CHECK(!(lstm && b_hh.defined()), op,
              ": an LSTM's b_hh belongs in xg (the cell adds it with b_ih)");
  if (b_hh.defined())
    IGNIS_CHECK(b_hh.dim() == 1 && b_hh.size(0) == r.G * r.H && b_hh.dtype() == dt, op,
                ": expected b_hh of size [", r.G * r.H, "], got ", b_hh.shape_str());
  return r;
}

// _rnn_recurrence(xg, h0, c0, w_hh, b_hh, is_lstm, reverse)
//   -> (out, hy, cy, cs, workspace); cy and cs undefined for a GRU.
void recurrence_meta(OpCall& c) {
  const Tensor& h0 = c.tensor(1);
  RecurrenceShape r = check_recurrence("_rnn_recurrence", c.tensor(0), h0, c.opt_tensor(2),
                                       c.tensor(3), c.opt_tensor(4), c.bool_arg(5));
  const ScalarType dt = h0.dtype();
  c.alloc(DimVector{r.T * r.B, r.H}, dt);
  c.alloc(DimVector{r.B, r.H}, dt);
  if (r.lstm) {
    c.alloc(DimVector{r.B, r.H}, dt);
    c.alloc(DimVector{r.T * r.B, r.H}, dt);
  } else {
    c.outputs.emplace_back();
    c.outputs.emplace_back();
  }
  c.alloc(DimVector{r.T * r.B, r.W}, dt);
}

Tensor rows(const Tensor& t, int64_t step, int64_t B) {
  static OpRef narrow("narrow");
  return narrow.tensor(t, 0, step * B, B);
}
void copy_rows(const Tensor& dst, int64_t step, int64_t B, const Tensor& src) {
  copy_tensor(rows(dst, step, B), src);
}

// A row-major copy of the 2-D w whose rows are an odd number of 64-byte
// lines apart: the built-in GEMM then reads it in place as a right operand
// (rows 2 KiB apart, [128, 512] float32, would share L1's sets, so it packs
// them instead, every step).
Tensor odd_lines_copy(const Tensor& w) {
  const int64_t es = static_cast<int64_t>(w.itemsize());
  int64_t lines = (w.size(1) * es + 63) / 64;
  if (lines % 2 == 0) ++lines;
  Tensor out = empty_strided_tensor(w.sizes(), DimVector{lines * 64 / es, 1}, w.dtype(),
                                    w.device());
  copy_tensor(out, w);
  return out;
}

void recurrence_impl(OpCall& c) {
  static OpRef mm("mm"), addmm("addmm"), lstm_cell("_thnn_fused_lstm_cell"),
      gru_cell("_thnn_fused_gru_cell"), transpose("t");
  const Tensor &xg = c.tensor(0), &h0 = c.tensor(1), &w_hh = c.tensor(3);
  const Tensor c0 = c.opt_tensor(2), b_hh = c.opt_tensor(4);
  const bool lstm = c.bool_arg(5), reverse = c.bool_arg(6);
  const int64_t B = h0.size(0), T = xg.size(0) / B;
  const Tensor &out = c.outputs[0], &ws = c.outputs[4];
  const Tensor w_t = odd_lines_copy(transpose.tensor(w_hh));
  Tensor h = h0, cell = c0;
  for (int64_t k = 0; k < T; ++k) {
    const int64_t t = reverse ? T - 1 - k : k;
    const Tensor x = rows(xg, t, B);
    if (lstm) {
      Stack r = lstm_cell.call(x, mm.tensor(h, w_t), cell);
      h = r[0].to_tensor();
      cell = r[1].to_tensor();
      copy_rows(c.outputs[3], t, B, cell);
      copy_rows(ws, t, B, r[2].to_tensor());
    } else {
      Tensor hg = b_hh.defined() ? addmm.tensor(b_hh, h, w_t) : mm.tensor(h, w_t);
      Stack r = gru_cell.call(x, hg, h);
      h = r[0].to_tensor();
      copy_rows(ws, t, B, r[1].to_tensor());
    }
    copy_rows(out, t, B, h);
  }
  copy_tensor(c.outputs[1], h);
  if (lstm) copy_tensor(c.outputs[2], cell);
}

// _rnn_recurrence_backward(grad_out, grad_hy, grad_cy, h0, c0, w_hh, out, cs,
//   workspace, has_b_hh, is_lstm, reverse) -> (grad_xg, grad_h0, grad_c0,
//   grad_w_hh, grad_b_hh): grad_c0 undefined for a GRU, grad_b_hh unless has_b_hh.
void recurrence_backward_meta(OpCall& c) {
  const Tensor &h0 = c.tensor(3), &w_hh = c.tensor(5), &out = c.tensor(6);
  const bool lstm = c.bool_arg(10);
  const int64_t B = h0.size(0), H = h0.size(1), G = lstm ? 4 : 3;
  const ScalarType dt = h0.dtype();
  IGNIS_CHECK(out.dim() == 2 && out.size(1) == H && out.size(0) % B == 0,
              "_rnn_recurrence_backward: expected out of size [steps * ", B, ", ", H, "], got ",
              out.shape_str());
  check_matrix(w_hh, "_rnn_recurrence_backward", "w_hh", G * H, H, dt);
  c.alloc(DimVector{out.size(0), G * H}, dt);
  c.alloc(h0.sizes(), dt);
  if (lstm) c.alloc(h0.sizes(), dt);
  else c.outputs.emplace_back();
  c.alloc(w_hh.sizes(), dt);
  if (c.bool_arg(9)) c.alloc(DimVector{G * H}, dt);
  else c.outputs.emplace_back();
}

void recurrence_backward_impl(OpCall& c) {
  static OpRef mm("mm"), addmm("addmm"), add("add"), cat("cat"), narrow("narrow"),
      transpose("t"), lstm_bw("_thnn_fused_lstm_cell_backward_impl"),
      gru_bw("_thnn_fused_gru_cell_backward");
  const Tensor g_out = c.opt_tensor(0), g_h = c.opt_tensor(1), g_c = c.opt_tensor(2);
  const Tensor &h0 = c.tensor(3), &w_hh = c.tensor(5), &out = c.tensor(6), &ws = c.tensor(8);
  const Tensor c0 = c.opt_tensor(4), cs = c.opt_tensor(7);
  const bool has_b = c.bool_arg(9), lstm = c.bool_arg(10), reverse = c.bool_arg(11);
  const int64_t B = h0.size(0), T = out.size(0) / B;
  const Tensor& d_xg = c.outputs[0];
  // GRU: the hidden gates' gradient differs from the input gates' (n's r factor)
  Tensor d_hg = lstm ? d_xg : empty_tensor(d_xg.sizes(), d_xg.dtype(), d_xg.device());
  auto step_grad = [&](int64_t t) { return g_out.defined() ? rows(g_out, t, B) : Tensor(); };
  auto plus = [&](const Tensor& a, const Tensor& b) {
    return !a.defined() ? b : !b.defined() ? a : add.tensor(a, b);
  };
  // dh: the gradient of the state step t produced, its output's included
  const int64_t first = reverse ? 0 : T - 1;
  Tensor dh = plus(step_grad(first), g_h), dc = g_c;
  if (!dh.defined()) dh = zeros(h0.sizes(), h0.dtype(), h0.device());
  if (lstm && !dc.defined()) dc = zeros(h0.sizes(), h0.dtype(), h0.device());
  for (int64_t k = 0; k < T; ++k) {
    const int64_t t = reverse ? k : T - 1 - k;
    const int64_t prev = reverse ? t + 1 : t - 1;  // the step that made t's state
    const bool has_prev = prev >= 0 && prev < T;
    const Tensor g_prev = has_prev ? step_grad(prev) : Tensor();
    if (lstm) {
      Stack r = lstm_bw.call(dh, dc, has_prev ? rows(cs, prev, B) : c0, rows(cs, t, B),
                             rows(ws, t, B), false);
      const Tensor dx = r[0].to_tensor();
      dc = r[1].to_tensor();
      copy_rows(d_xg, t, B, dx);
      // (the previous step's output gradient joins in the GEMM's epilogue)
      dh = g_prev.defined() ? addmm.tensor(g_prev, dx, w_hh) : mm.tensor(dx, w_hh);
    } else {
      Stack r = gru_bw.call(dh, rows(ws, t, B), false);
      const Tensor dhg = r[1].to_tensor();
      copy_rows(d_xg, t, B, r[0].to_tensor());
      copy_rows(d_hg, t, B, dhg);
      dh = addmm.tensor(plus(r[2].to_tensor(), g_prev), dhg, w_hh);
    }
  }
  copy_tensor(c.outputs[1], dh);
  if (lstm) copy_tensor(c.outputs[2], dc);
  // W_hh's gradient in one product: d_hg^T [G*H, T*B] @ the states each step began from
  const int64_t n = (T - 1) * B;
  Tensor prev_states =
      reverse ? cat.tensor(std::vector<Tensor>{narrow.tensor(out, 0, B, n), h0}, 0)
              : cat.tensor(std::vector<Tensor>{h0, narrow.tensor(out, 0, 0, n)}, 0);
  copy_tensor(c.outputs[3], mm.tensor(transpose.tensor(d_hg), prev_states));
  if (has_b) copy_tensor(c.outputs[4], sum_dims(d_hg, {0}, false));
}

void recurrence_bw(GradCtx& c) {
  IGNIS_CHECK_KIND(NotImplemented, !autograd::grad_enabled(),
                   "_rnn_recurrence: double backward is not supported (eager's nn.LSTM/GRU "
                   "recompute the steps for create_graph)");
  const bool lstm = c.bool_arg(5);
  Stack r = OpRef("_rnn_recurrence_backward")
                .call(c.grad(0), c.grad(1), lstm ? c.grad(2) : Tensor(), c.in(1),
                      c.opt_in(2), c.in(3), c.result(0), lstm ? c.result(3) : Tensor(),
                      c.result(4), c.needs_grad(4), lstm, c.bool_arg(6));
  for (int i = 0; i < 5; ++i) c.set(i, r[static_cast<size_t>(i)].to_opt_tensor());
}

}  // namespace

void register_rnn_ops() {
  def("_rnn_recurrence(Tensor xg, Tensor h0, Tensor? c0, Tensor w_hh, Tensor? b_hh, "
      "bool is_lstm, bool reverse) -> (Tensor, Tensor, Tensor, Tensor, Tensor)")
      .category(OpCategory::Other).core().meta(recurrence_meta).cpu_and_cuda(recurrence_impl)
      .doc("one direction of an LSTM or GRU layer over equal steps (Note [A recurrence as one "
           "op]): (out, hy, cy, cs, workspace)")
      .derivative(recurrence_bw, "h0, c0, w_hh, result, result3, result4");
  def("_rnn_recurrence_backward(Tensor? grad_out, Tensor? grad_hy, Tensor? grad_cy, Tensor h0, "
      "Tensor? c0, Tensor w_hh, Tensor out, Tensor? cs, Tensor workspace, bool has_b_hh, "
      "bool is_lstm, bool reverse) -> (Tensor, Tensor, Tensor, Tensor, Tensor)")
      .category(OpCategory::Other).core().meta(recurrence_backward_meta)
      .cpu_and_cuda(recurrence_backward_impl)
      .doc("the gradients of _rnn_recurrence's xg, h0, c0, w_hh and (has_b_hh) b_hh");
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

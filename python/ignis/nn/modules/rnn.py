"""Recurrent layers: RNN, LSTM, GRU and their cells, as in torch.nn.

Same parameter names, shapes, order and initialisation as PyTorch
(weight_ih_l{k}[_reverse], weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k},
weight_hr_l{k} for LSTM's proj_size; every one U(-1/sqrt(hidden),
1/sqrt(hidden))), the same gate order (LSTM i, f, g, o; GRU r, z, n with
n = tanh(W_in x + b_in + r * (W_hn h + b_hn))), so a PyTorch state_dict
loads and gives PyTorch's outputs.

The recurrence is written with ordinary ops, so autograd and capture see it
like any other code. An LSTM or GRU step is two of them: the hidden
projection (mm) and the fused cell op (`_thnn_fused_lstm_cell` /
`_thnn_fused_gru_cell`, src/ignis/ops/rnn.cpp: the gate math forward and
backward in one kernel each, decomposed into core ops for the compiler);
the Elman RNN is an addmm and its activation. Every layer runs on a
"flat" sequence: (sum of batch sizes, features) with a batch size per step,
which is a padded batch (T * B rows, B per step) or a PackedSequence's data
as it is; the input projection of all steps is one matmul (with both biases
of the LSTM and b_ih of the GRU folded in), and step t works on the first
batch_sizes[t] rows (the sequences still running, longest first), leaving
the finished ones' state as it was.
"""
import math
import numbers

import ignis
from ... import _ops
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


_fused_lstm_cell = _ops.get("_thnn_fused_lstm_cell")
_fused_gru_cell = _ops.get("_thnn_fused_gru_cell")


# ---- one step of each kind of cell --------------------------------------------------------
# xg: this step's input projection, W_ih x + b_ih, plus b_hh for RNN and LSTM
# (GRU keeps b_hn inside r * (W_hn h + b_hn)); w_hh_t, w_hr_t: the transposed
# hidden and projection weights; state: h, or (h, c).
def _input_proj(mode, x, w_ih, b_ih, b_hh):
    # Both biases as one vector: linear adds it in its GEMM's epilogue, where
    # adding b_hh after would be a pass over all steps' gates (and its
    # backward another).
    if b_hh is not None and mode != "GRU":
        b_ih = b_ih + b_hh
    return F.linear(x, w_ih, b_ih)


def _rnn_step(act):
    def step(xg, h, w_hh_t, b_hh, w_hr_t):
        return act(ignis.addmm(xg, h, w_hh_t))
    return step


def _lstm_step(xg, state, w_hh_t, b_hh, w_hr_t):
    h, c = state
    h, c, _ = _fused_lstm_cell(xg, h.mm(w_hh_t), c)
    if w_hr_t is not None:
        h = h.mm(w_hr_t)
    return h, c


def _gru_step(xg, h, w_hh_t, b_hh, w_hr_t):
    # b_hh joins the hidden gates: the cell adds them whole to r and z, and
    # keeps b_hn inside r * (W_hn h + b_hn), as GRU's n gate needs.
    hg = h.mm(w_hh_t) if b_hh is None else ignis.addmm(b_hh, h, w_hh_t)
    return _fused_gru_cell(xg, hg, h)[0]


def _step_fn(mode):
    if mode == "LSTM":
        return _lstm_step
    if mode == "GRU":
        return _gru_step
    return _rnn_step(ignis.tanh if mode == "RNN_TANH" else ignis.relu)


def _t(w):
    return None if w is None else w.t()


# ---- state helpers: h, or the pair (h, c) -------------------------------------------------
def _head(state, n):
    """The first n rows (the state itself when that is all of it: a narrow's
    backward would write a zero-filled full-size gradient every step)."""
    if isinstance(state, tuple):
        return tuple(_head(s, n) for s in state)
    return state if n == state.shape[0] else state.narrow(0, 0, n)


def _merge(new, old, n):
    """new for the first n rows, old for the rest."""
    if isinstance(new, tuple):
        return tuple(_merge(a, b, n) for a, b in zip(new, old))
    if n == old.shape[0]:
        return new
    return ignis.cat([new, old.narrow(0, n, old.shape[0] - n)], 0)


def _out(state):
    return state[0] if isinstance(state, tuple) else state


def _run_direction(step, xg, batch_sizes, state, w_hh_t, b_hh, w_hr_t, reverse):
    """Runs one direction of one layer over the flat projected input xg;
    returns the flat output and the final state."""
    steps = xg.split(batch_sizes)  # one backward node for all steps (narrow would be one each)
    order = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
    outs = [None] * len(batch_sizes)
    for t in order:
        b = batch_sizes[t]
        new = step(steps[t], _head(state, b), w_hh_t, b_hh, w_hr_t)
        state = _merge(new, state, b)
        outs[t] = _out(new)
    return ignis.cat(outs, 0), state


# ---- training: one autograd node per direction and layer -------------------------------------
# Note [Recurrence as one autograd node]
# Recorded op by op, a step of an LSTM is an mm and a fused cell, and its
# backward two more mms (the gradients of h and of W_hh) plus an add that
# accumulates W_hh's gradient, with a node's bookkeeping each. Over
# equal-sized steps the layer instead runs as one op, `_rnn_recurrence`
# (ops/rnn.cpp, Note [A recurrence as one op]): forward multiplies by W_hh^T
# copied once into rows the GEMM reads in place; its backward op runs the
# steps in reverse with the fused backward cell and one mm each, and takes
# W_hh's gradient (and b_hh's, for GRU) in one product over all steps (as
# PyTorch's fused RNN kernels do). Compiled graphs record that op whole (the
# compiler calls it as an extern) instead of T steps of kernels. Eager calls
# it through _Recurrence, which adds double backward: with create_graph,
# backward recomputes the steps recorded. Packed sequences (steps of
# different sizes), proj_size and autocast keep the recorded form.
_recurrence = _ops.get("_rnn_recurrence")
_recurrence_backward = _ops.get("_rnn_recurrence_backward")


class _Recurrence(ignis.autograd.Function):
    """One direction of an LSTM or GRU layer over T steps of B rows:
    (xg [T*B, G*H], h0 [B, H], c0 [B, H] or None, w_hh [G*H, H], b_hh or
    None) -> (out [T*B, H], h_T, c_T or None). xg holds the input
    projections with the biases the cell adds (LSTM: both; GRU: b_ih)."""

    @staticmethod
    def forward(ctx, xg, h0, c0, w_hh, b_hh, mode, reverse):
        lstm = mode == "LSTM"
        out, h, c, cs, ws = _recurrence(xg, h0, c0, w_hh, b_hh, lstm, reverse)
        ctx.args = (xg, h0, c0, w_hh, b_hh, mode, reverse)
        # What ctx keeps must not be an output: an output's grad_fn holds ctx,
        # and that cycle runs through C++ where the garbage collector cannot
        # see it (every step's memory would stay). Outputs get aliases.
        ctx.saved = (out, cs, ws)
        return out.detach(), h, None if c is None else c.detach()

    @staticmethod
    def backward(ctx, g_out, g_h, g_c):
        xg, h0, c0, w_hh, b_hh, mode, reverse = ctx.args
        if ignis.is_grad_enabled():  # create_graph: differentiate the recorded steps
            return _Recurrence._recorded_backward(ctx, g_out, g_h, g_c)
        out, cs, ws = ctx.saved
        d_xg, dh, dc, d_w, d_b = _recurrence_backward(g_out, g_h, g_c, h0, c0, w_hh, out, cs, ws,
                                                      b_hh is not None, mode == "LSTM", reverse)
        return d_xg, dh, dc, d_w, d_b, None, None

    @staticmethod
    def _recorded_backward(ctx, g_out, g_h, g_c):
        # The steps are recorded on the inputs themselves, so that the
        # gradients returned are functions of them (differentiable again).
        xg, h0, c0, w_hh, b_hh, mode, reverse = ctx.args
        inputs = [xg, h0, c0, w_hh, b_hh]
        B = h0.shape[0]
        state = (h0, c0) if mode == "LSTM" else h0
        out, state = _run_direction(_step_fn(mode), xg, [B] * (xg.shape[0] // B), state,
                                    w_hh.t(), b_hh, None, reverse)
        outs = [out] + (list(state) if mode == "LSTM" else [state])
        grads = [g_out, g_h] + ([g_c] if mode == "LSTM" else [])
        wanted = [t is not None and t.requires_grad for t in inputs]
        got = iter(ignis.autograd.grad(outs, [t for t, w in zip(inputs, wanted) if w], grads,
                                       create_graph=True, allow_unused=True))
        return tuple(next(got) if w else None for w in wanted) + (None, None)


def _one_node(module, batch_sizes):
    """Whether a layer's directions can run as one op each (see Note
    [Recurrence as one autograd node]); _run also asks that the projected
    input have the weights' dtype, which it has not under autocast (a 16-bit
    linear): there the per-step form records autocast's casts for autograd,
    where the op's backward would meet the 16-bit gates with the float32
    weights outside the autocast region."""
    return (module.mode in ("LSTM", "GRU") and not module.proj_size
            and len(batch_sizes) > 0 and batch_sizes[0] > 0
            and all(b == batch_sizes[0] for b in batch_sizes))


class RNNBase(Module):
    """The shared body of RNN, LSTM and GRU (PyTorch's RNNBase)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
                 dtype=None):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            import warnings
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}")
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size > 0 and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        gate_size = _GATES[mode] * hidden_size

        self._flat_weights_names = []
        self._all_weights = []
        real_hidden = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                w_ih = Parameter(ignis.empty((gate_size, layer_input), **fk))
                w_hh = Parameter(ignis.empty((gate_size, real_hidden), **fk))
                b_ih = Parameter(ignis.empty(gate_size, **fk))
                b_hh = Parameter(ignis.empty(gate_size, **fk))
                if proj_size == 0:
                    params = (w_ih, w_hh, b_ih, b_hh) if bias else (w_ih, w_hh)
                else:
                    w_hr = Parameter(ignis.empty((proj_size, hidden_size), **fk))
                    params = (w_ih, w_hh, b_ih, b_hh, w_hr) if bias else (w_ih, w_hh, w_hr)
                suffix = "_reverse" if direction == 1 else ""
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    names += ["weight_hr_l{}{}"]
                names = [n.format(layer, suffix) for n in names]
                for name, p in zip(names, params):
                    setattr(self, name, p)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """A no-op: ignis keeps no fused weight buffer (PyTorch's is for cuDNN)."""

    @property
    def _flat_weights(self):
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def _layer_weights(self, layer, direction):
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of one layer and direction; None where absent."""
        sfx = f"_l{layer}" + ("_reverse" if direction == 1 else "")
        g = lambda n: getattr(self, n + sfx, None)  # noqa: E731
        return (g("weight_ih"), g("weight_hh"), g("bias_ih") if self.bias else None,
                g("bias_hh") if self.bias else None, g("weight_hr") if self.proj_size else None)

    # ---- checks, with PyTorch's messages -----------------------------------------------
    def _expected_hidden_size(self, batch_size, is_cell_state=False):
        D = 2 if self.bidirectional else 1
        h = self.hidden_size if (is_cell_state or self.proj_size == 0) else self.proj_size
        return (self.num_layers * D, batch_size, h)

    def check_input(self, input, batch_sizes):
        expected_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    @staticmethod
    def check_hidden_size(hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(msg.format(list(expected), list(hx.shape)))

    # ---- forward ------------------------------------------------------------------------
    def forward(self, input, hx=None):
        is_lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        D = 2 if self.bidirectional else 1
        if packed:
            data, batch_sizes = input.data, [int(b) for b in input.batch_sizes.tolist()]
            sorted_indices, unsorted_indices = input.sorted_indices, input.unsorted_indices
            B = batch_sizes[0]
            is_batched = True
            self.check_input(data, input.batch_sizes)
        else:
            if input.dim() not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                                 f"{input.dim()}D input instead")
            is_batched = input.dim() == 3
            sorted_indices = unsorted_indices = None
            if not is_batched:
                input = input.unsqueeze(1)
                hx = self._unsqueeze_hx(hx, is_lstm)
            elif self.batch_first:
                input = input.transpose(0, 1)
            self.check_input(input, None)
            T, B = input.shape[0], input.shape[1]
            if T == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            batch_sizes = [B] * T
            data = input.reshape(T * B, input.shape[2])

        if hx is None:
            zeros = lambda h: ignis.zeros((self.num_layers * D, B, h),  # noqa: E731
                                          dtype=data.dtype, device=data.device)
            h0 = zeros(self.proj_size or self.hidden_size)
            hx = (h0, zeros(self.hidden_size)) if is_lstm else h0
        else:
            if is_lstm:
                if not isinstance(hx, tuple) or len(hx) != 2:
                    raise RuntimeError("LSTM expects hx as a tuple (h_0, c_0)")
            elif isinstance(hx, tuple):
                raise RuntimeError(f"{type(self).__name__} expects hx as a tensor, not a tuple")
            if sorted_indices is not None:  # the user's order -> the packed order
                hx = tuple(h.index_select(1, sorted_indices) for h in hx) if is_lstm \
                    else hx.index_select(1, sorted_indices)
            if is_lstm:
                self.check_hidden_size(hx[0], self._expected_hidden_size(B))
                self.check_hidden_size(hx[1], self._expected_hidden_size(B, True),
                                       "Expected hidden[1] size {}, got {}")
            else:
                self.check_hidden_size(hx, self._expected_hidden_size(B))

        out, hn = self._run(data, batch_sizes, hx)

        if packed:
            output = PackedSequence(out, input.batch_sizes, sorted_indices, unsorted_indices)
            if unsorted_indices is not None:
                hn = tuple(h.index_select(1, unsorted_indices) for h in hn) if is_lstm \
                    else hn.index_select(1, unsorted_indices)
            return output, hn
        output = out.reshape(T, B, out.shape[-1])
        if not is_batched:
            output = output.squeeze(1)
            hn = tuple(h.squeeze(1) for h in hn) if is_lstm else hn.squeeze(1)
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, hn

    def _unsqueeze_hx(self, hx, is_lstm):
        if hx is None:
            return None
        hs = hx if is_lstm else (hx,)
        for h in hs:
            if h.dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                   f"{h.dim()}-D tensor")
        hs = tuple(h.unsqueeze(1) for h in hs)
        return hs if is_lstm else hs[0]

    def _run(self, data, batch_sizes, hx):
        """All layers over the flat input; returns (flat output, h_n or (h_n, c_n))."""
        is_lstm = self.mode == "LSTM"
        step = _step_fn(self.mode)
        D = 2 if self.bidirectional else 1
        h_finals, c_finals = [], []
        one_node = _one_node(self, batch_sizes)
        x = data
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_weights(layer, d)
                k = layer * D + d
                state = (hx[0][k], hx[1][k]) if is_lstm else hx[k]
                xg = _input_proj(self.mode, x, w_ih, b_ih, b_hh)
                h0, c0 = state if is_lstm else (state, None)
                if one_node and xg.dtype == w_hh.dtype == h0.dtype:
                    b = None if is_lstm else b_hh
                    if ignis.compiler.is_compiling():  # the op whole, its derivative declared
                        out, h, c, _, _ = _recurrence(xg, h0, c0, w_hh, b, is_lstm, d == 1)
                    else:
                        out, h, c = _Recurrence.apply(xg, h0, c0, w_hh, b, self.mode, d == 1)
                    state = (h, c) if is_lstm else h
                else:
                    out, state = _run_direction(step, xg, batch_sizes, state, w_hh.t(), b_hh,
                                                _t(w_hr), reverse=d == 1)
                outs.append(out)
                if is_lstm:
                    h_finals.append(state[0])
                    c_finals.append(state[1])
                else:
                    h_finals.append(state)
            x = outs[0] if D == 1 else ignis.cat(outs, 1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        hn = ignis.stack(h_finals, 0)
        return x, ((hn, ignis.stack(c_finals, 0)) if is_lstm else hn)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)


def _split_args(cls_name, args, kwargs, with_nonlinearity):
    """The keyword arguments of RNN/LSTM/GRU's positional signature
    (input_size, hidden_size, num_layers, [nonlinearity,] bias, batch_first,
    dropout, bidirectional[, proj_size for LSTM])."""
    names = ["input_size", "hidden_size", "num_layers"]
    if with_nonlinearity:
        names.append("nonlinearity")
    names += ["bias", "batch_first", "dropout", "bidirectional"]
    if cls_name == "LSTM":
        names.append("proj_size")
    if len(args) > len(names):
        raise TypeError(f"{cls_name}.__init__ takes at most {len(names)} positional arguments")
    for n, v in zip(names, args):
        if n in kwargs:
            raise TypeError(f"{cls_name}.__init__ got multiple values for argument '{n}'")
        kwargs[n] = v
    return kwargs


class RNN(RNNBase):
    """Elman RNN: h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh), act tanh or relu."""

    def __init__(self, *args, **kwargs):
        kwargs = _split_args("RNN", args, kwargs, True)
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        super().__init__(mode, **kwargs)
        self.nonlinearity = nonlinearity  # not in the repr, as in torch


class LSTM(RNNBase):
    """Long short-term memory, gates i, f, g, o; proj_size > 0 projects h."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", **_split_args("LSTM", args, kwargs, False))


class GRU(RNNBase):
    """Gated recurrent unit, gates r, z, n."""

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", **_split_args("GRU", args, kwargs, False))


# ---- cells ---------------------------------------------------------------------------------
class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(ignis.empty((num_chunks * hidden_size, input_size), **fk))
        self.weight_hh = Parameter(ignis.empty((num_chunks * hidden_size, hidden_size), **fk))
        if bias:
            self.bias_ih = Parameter(ignis.empty(num_chunks * hidden_size, **fk))
            self.bias_hh = Parameter(ignis.empty(num_chunks * hidden_size, **fk))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _prepare(self, input, hx, n_states):
        """Batches an unbatched input; zeros for a missing state. Returns
        (input, states tuple, is_batched)."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             f"instead")
        states = None if hx is None else (hx if n_states == 2 else (hx,))
        if states is not None:
            for h in states:
                if h.dim() not in (1, 2):
                    raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got "
                                     f"{h.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} "
                               f"expected {self.input_size}")
        if states is None:
            z = ignis.zeros((input.size(0), self.hidden_size), dtype=input.dtype,
                            device=input.device)
            states = (z,) * n_states
        elif not is_batched:
            states = tuple(h.unsqueeze(0) for h in states)
        for h in states:
            if h.size(0) != input.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden0 "
                                   f"batch size {h.size(0)}")
            if h.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden0 has inconsistent hidden_size: got {h.size(1)}, "
                                   f"expected {self.hidden_size}")
        return input, states, is_batched


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        act = ignis.tanh if self.nonlinearity == "tanh" else ignis.relu
        xg = _input_proj("RNN", x, self.weight_ih, self.bias_ih, self.bias_hh)
        h = _rnn_step(act)(xg, h, self.weight_hh.t(), None, None)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        x, (h, c), batched = self._prepare(input, hx, 2)
        h, c, _ = _fused_lstm_cell(x.mm(self.weight_ih.t()), h.mm(self.weight_hh.t()), c,
                                   self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        h = _fused_gru_cell(x.mm(self.weight_ih.t()), h.mm(self.weight_hh.t()), h,
                            self.bias_ih, self.bias_hh)[0]
        return h if batched else h.squeeze(0)

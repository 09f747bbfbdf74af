"""Decompositions (src/ignis/ops/decomp, docs/core_ops.md) against the fused ops.

Every op that declares a decomposition (`_C._decompositions()`) must have
samples in SAMPLES below, so a new decomposition is covered without a new
test. For each sample and dtype:
  - one level (`_C._decompose`) and the full recursion down to core ops
    (`_C._decompose_trace`, which stands in for AOT's tracer) give the fused
    op's dtypes, shapes and values;
  - the recursion leaves only core ops (or in-place ops, which AOT's
    functionalization turns into functional ones);
  - gradients through the fully decomposed graph equal the fused op's
    (float64; for the inputs the fused op's formula differentiates);
  - with torch installed, the decomposition equals torch's op.
"""
import math
import zlib

import numpy as np
import pytest

from conftest import HAVE_TORCH, _layout_base_and_view, torch
import ignis

C = ignis._C
DECOMPOSED = C._decompositions()
CORE = set(C._core_ops())
# Ops that write their first argument: AOT functionalizes them before they
# reach the tracer, so they may remain after decomposing.
IN_PLACE = {s.split("(")[0] for op, _, _ in C._op_table().values() for s in op.schemas
            if "(a!)" in s.split("(", 1)[1].split(",")[0].split(")")[0] + ")"}

FLOATS = ("float32", "float64", "bfloat16")
WITH_INT = FLOATS + ("int64",)
ONE = ("float32",)
TOL = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-11), "bfloat16": (2e-2, 2e-2),
       "float16": (4e-3, 4e-3)}


# --------------------------------------------------------------------------------
# Sample inputs. A maker builds one argument for the sample's dtype `dt`;
# anything else is passed as it is.
# --------------------------------------------------------------------------------
class Maker:
    def __init__(self, fn):
        self.fn = fn


DT = object()  # the sample's dtype, as an ignis dtype


def _values(rng, shape, dt, kind):
    if dt == "bool":
        return rng.random(shape) > 0.5
    if dt.startswith("int") or dt == "uint8":
        lo, hi = {"any": (-5, 6), "pos": (1, 6), "nonzero": (1, 6)}[kind]
        v = rng.integers(lo, hi, shape)
        if kind == "nonzero":
            v = v * rng.choice([-1, 1], shape)
        return v
    lo, hi = {"any": (-2, 2), "pos": (0.1, 2), "prob": (0.05, 0.95), "unit": (-0.9, 0.9),
              "wide": (-30, 30), "nonzero": (0.2, 2)}.get(kind, (-2, 2))
    v = rng.uniform(lo, hi, shape)
    if kind == "nonzero":
        v = v * rng.choice([-1, 1], shape)
    if kind == "nan":
        v[rng.random(shape) < 0.3] = np.nan
    if kind == "zeros":
        v[rng.random(shape) < 0.4] = 0
    if kind == "masked" and len(shape) >= 2:
        v[0] = -np.inf  # a fully masked row
    return v


def _tensor(rng, shape, dt, kind="any", layout="contiguous"):
    base, view = _layout_base_and_view(tuple(shape), layout)
    a = np.asarray(_values(rng, base, dt, kind))
    t = ignis.from_numpy(np.array(a, order="C")).to(getattr(ignis, dt))
    return view(t)


def F(*shape, kind="any", layout="contiguous"):
    """A tensor of the sample's dtype."""
    return Maker(lambda rng, dt: _tensor(rng, shape, dt, kind, layout))


def FD(dtype, *shape, kind="any", layout="contiguous"):
    """A tensor of a fixed dtype."""
    return Maker(lambda rng, dt: _tensor(rng, shape, dtype, kind, layout))


def I(high, *shape, low=0):  # noqa: E743 - reads like the other makers
    """An int64 tensor in [low, high)."""
    return Maker(lambda rng, dt: ignis.from_numpy(rng.integers(low, high, shape)))


def IV(values, dtype="int64"):
    """An integer tensor with these values."""
    return Maker(lambda rng, dt: ignis.tensor(values, dtype=getattr(ignis, dtype)))


def B(*shape):
    return Maker(lambda rng, dt: _tensor(rng, shape, "bool"))


class S:
    """One sample: positional and keyword arguments (makers allowed) and flags.

    dtypes: the dtypes `dt` runs with. grad: compare gradients (float64).
    grad_outputs / grad_inputs: the outputs whose gradient flows back and the
    inputs (float64 tensors, in order) that require grad and whose gradients
    are compared (default: all; the others stay constants, as an argument the
    op does not differentiate must). random: the decomposition draws
    differently from the fused op, so only shapes and dtypes (and `check`)
    are compared. values: False for uninitialised results. torch: False
    where torch has no op of this signature to compare with.
    """

    def __init__(self, *args, dtypes=FLOATS, grad=True, grad_outputs=None, grad_inputs=None,
                 random=False, check=None, values=True, torch=True, build=None, **kwargs):
        self.args, self.kwargs = args, kwargs
        self.dtypes, self.grad, self.grad_outputs = dtypes, grad, grad_outputs
        self.grad_inputs = grad_inputs
        self.random, self.check, self.values, self.torch = random, check, values, torch
        self.build = build

    def make(self, key, dt):
        rng = np.random.default_rng(zlib.crc32(key.encode()))
        if self.build is not None:
            return self.build(rng, dt), {}

        def mk(v):
            if isinstance(v, Maker):
                return v.fn(rng, dt)
            if v is DT:
                return getattr(ignis, dt)
            if isinstance(v, list):
                return [mk(e) for e in v]
            return v
        return [mk(a) for a in self.args], {k: mk(v) for k, v in self.kwargs.items()}


def _layer_norm_backward_args(rng, dt):
    x = _tensor(rng, (3, 4), dt)
    w, b = _tensor(rng, (4,), dt), _tensor(rng, (4,), dt)
    _, mean, rstd = C._op_overload("native_layer_norm")(x, [4], w, b, 1e-5)
    return [_tensor(rng, (3, 4), dt), x, [4], mean, rstd, w, b]


def _layer_norm_backward_no_affine(rng, dt):
    x = _tensor(rng, (2, 3, 4), dt, layout="transposed")
    _, mean, rstd = C._op_overload("native_layer_norm")(x, [3, 4], None, None, 1e-5)
    return [_tensor(rng, (2, 3, 4), dt), x, [3, 4], mean, rstd, None, None]


def _lstm_cell_backward_args(with_grad_hy):
    def build(rng, dt):
        ig, hg, cx = (_tensor(rng, shape, dt) for shape in ((3, 8), (3, 8), (3, 2)))
        _, cy, ws = C._op_overload("_thnn_fused_lstm_cell")(ig, hg, cx)
        grad_hy = _tensor(rng, (3, 2), dt) if with_grad_hy else None
        return [grad_hy, _tensor(rng, (3, 2), dt), cx, cy, ws, with_grad_hy]
    return build


def _gru_cell_backward_args(has_bias):
    def build(rng, dt):
        ig, hg, hx = (_tensor(rng, shape, dt) for shape in ((3, 6), (3, 6), (3, 2)))
        biases = [_tensor(rng, (6,), dt), _tensor(rng, (6,), dt)] if has_bias else []
        _, ws = C._op_overload("_thnn_fused_gru_cell")(ig, hg, hx, *biases)
        return [_tensor(rng, (3, 2), dt), ws, has_bias]
    return build


def _dropout_check(p):
    def check(args, out):
        x = args[0]
        o, mask = out if isinstance(out, tuple) else (out, None)
        scale = 1 / (1 - p) if p < 1 else 0.0
        if mask is None:
            mask = o != 0
        expect = ignis.where(mask, x.double() * scale, ignis.zeros_like(x.double()))
        assert np.allclose(o.double().numpy(), expect.numpy(), rtol=2e-2, atol=1e-2)
    return check


SAMPLES = {
    # ---- creation ----------------------------------------------------------
    "zeros": [S([2, 3]), S([4], dtype=DT, dtypes=WITH_INT)],
    "ones": [S([2, 3]), S([4], dtype=DT, dtypes=WITH_INT)],
    "arange": [S(5, dtypes=ONE), S(5.5, dtypes=ONE), S(7, dtype=DT, dtypes=WITH_INT)],
    "linspace": [S(0, 1, 7, dtypes=ONE), S(-3.5, 2, 6, dtype=DT, dtypes=WITH_INT),
                 S(2, 10, 1, dtype=DT), S(-7.9, 9.3, 8, dtype=ignis.int32, dtypes=ONE)],
    "eye": [S(3, dtypes=ONE), S(3, 5, dtype=DT, dtypes=WITH_INT)],
    "randint": [S(10, [3, 4], dtypes=ONE, torch=False)],
    "empty_like": [S(F(2, 3), values=False)],
    "zeros_like": [S(F(2, 3)), S(F(2, 3), dtype=ignis.int64)],
    "ones_like": [S(F(2, 3), dtypes=WITH_INT)],
    "full_like": [S(F(2, 3), 2.5), S(F(2, 3), 4, dtypes=WITH_INT)],
    "rand_like": [S(F(2, 3), torch=False)],
    "randn_like": [S(F(2, 3), torch=False)],
    "randint_like": [S(F(2, 3), 7, torch=False)],
    "randint_like.low": [S(F(2, 3), -3, 7, torch=False)],
    # ---- conversion --------------------------------------------------------
    "contiguous": [S(F(3, 4, layout="transposed")), S(F(3, 4))],
    "to.dtype": [S(F(3, 4), ignis.float64), S(F(3, 4), DT, dtypes=WITH_INT)],
    "to.device": [S(F(3, 4), "cpu", ignis.float64)],
    "to.other": [S(F(3, 4), FD("float64", 2))],
    "to.kw": [S(F(3, 4, layout="strided"), dtype=ignis.float64)],
    "type_as": [S(F(3, 4), FD("float64", 2))],
    # ---- unary -------------------------------------------------------------
    "frac": [S(F(3, 5, kind="wide")), S(F(2, 3, 4, layout="transposed"))],
    "square": [S(F(3, 5), dtypes=WITH_INT), S(B(3, 4), dtypes=ONE)],
    "silu": [S(F(3, 5)), S(F(2, 3, 4, layout="strided", kind="wide"))],
    "mish": [S(F(3, 5)), S(F(2, 3, 4, layout="transposed", kind="wide"))],
    "gelu": [S(F(3, 5)), S(F(4, 6, layout="strided"), approximate="tanh")],
    # gelu_backward has no derivative of its own (autograd differentiates
    # gelu's formula under create_graph instead).
    "gelu_backward": [S(F(3, 5), F(3, 5), grad=False),
                      S(F(3, 5), F(5), approximate="tanh", grad=False),
                      S(F(3, 5, layout="transposed"), F(3, 5), grad=False)],
    # ---- binary --------------------------------------------------------------
    "rsub": [S(F(3, 4), F(4), dtypes=WITH_INT), S(F(3, 4), 2, alpha=2, dtypes=WITH_INT)],
    "floor_divide": [S(F(3, 4), F(4, kind="nonzero"), dtypes=WITH_INT, grad=False)],
    # Shift counts from -5 to 70: negative and past the width are in range too.
    "bitwise_left_shift": [S(I(70, 3, 4, low=-5), I(70, 4, low=-5), dtypes=ONE, grad=False),
                           S(IV([-7, 3, 100], "int8"), IV([1, 7, 8], "int8"), dtypes=ONE,
                             grad=False),
                           S(IV([5, 255, 1], "uint8"), 3, dtypes=ONE, grad=False)],
    "bitwise_right_shift": [S(I(70, 3, 4, low=-50), I(70, 4, low=-5), dtypes=ONE, grad=False),
                            S(IV([-7, 3, -100], "int8"), IV([1, 7, 6], "int8"), dtypes=ONE,
                              grad=False),
                            S(IV([5, 255, 128], "uint8"), IV([1, 7, 8], "uint8"), dtypes=ONE,
                              grad=False)],
    "pow.Scalar": [S(2.5, F(3, 4)), S(2, F(3, 4, kind="pos"), dtypes=WITH_INT)],
    # ---- ternary -----------------------------------------------------------
    "clamp_min": [S(F(3, 4), F(4), dtypes=WITH_INT), S(F(3, 4), 0.0)],
    "clamp_max": [S(F(3, 4), F(4), dtypes=WITH_INT), S(F(3, 4), 0.5)],
    "lerp": [S(F(3, 4), F(3, 4), 0.3), S(F(3, 4), F(4), 0.7),
             S(F(3, 4), F(3, 4), F(3, 4, kind="unit"))],
    "addcmul": [S(F(3, 4), F(3, 4), F(4), value=0.5), S(F(3, 4), F(3, 4), F(4)),
                S(F(3, 4), F(3, 4), F(4), value=2, dtypes=("int64",))],
    "addcdiv": [S(F(3, 4), F(3, 4), F(4, kind="nonzero"), value=2.0),
                S(F(3, 4, layout="transposed"), F(3, 4), F(3, 4, kind="nonzero"))],
    "masked_fill": [S(F(3, 4), B(3, 4), 0.5), S(F(3, 4), B(4), -1.0),
                    S(F(3, 4), B(3, 4), 3, dtypes=("int64",))],
    # ---- views -------------------------------------------------------------
    "reshape": [S(F(2, 6), [3, 4]), S(F(3, 4, layout="transposed"), [12])],
    "view_as": [S(F(2, 6), F(3, 4))],
    "reshape_as": [S(F(3, 4, layout="transposed"), F(12))],
    "transpose.int": [S(F(2, 3, 4), 0, 2), S(F(3, 4), -1, 0, dtypes=WITH_INT)],
    "swapaxes": [S(F(2, 3, 4), 0, 1)],
    "swapdims": [S(F(2, 3, 4), 2, 1)],
    "t": [S(F(3, 4)), S(F(5)), S(F(3, 4, layout="strided"))],
    "expand_as": [S(F(3, 1), F(2, 3, 4))],
    "broadcast_to": [S(F(3, 1), [2, 3, 4]), S(F(3, 4, layout="transposed"), [2, -1, 4])],
    "broadcast_tensors": [S([F(3, 1), F(4), F(2, 1, 1)]), S([F(3, 4)])],
    "argsort": [S(F(3, 5), grad=False), S(F(4, 3, layout="transposed"), 0, True, grad=False)],
    "argsort.stable": [S(F(3, 5), stable=True, dim=0, descending=True, grad=False)],
    "squeeze": [S(F(3, 1, 4, 1))],
    "squeeze.dim": [S(F(3, 1, 4), 1), S(F(3, 1, 4), 0)],
    "flatten": [S(F(2, 3, 4)), S(F(2, 3, 4, layout="transposed"), 1, 2)],
    "unflatten": [S(F(2, 12), 1, [3, 4])],
    "narrow": [S(F(4, 5), 1, 1, 3), S(F(4, 5, layout="strided"), 0, -3, 2)],
    "split.Tensor": [S(F(7, 4), 3), S(F(4, 7), 2, 1)],
    "split.sizes": [S(F(7, 4), [2, 5]), S(F(4, 6), [1, 2, 3], 1)],
    "chunk": [S(F(7, 4), 3), S(F(4, 6), 4, 1)],
    "unbind.int": [S(F(3, 4)), S(F(3, 4), 1)],
    "diagonal": [S(F(4, 5)), S(F(3, 4, 5), 1, 1, 2), S(F(4, 5, layout="transposed"), -2)],
    "movedim": [S(F(2, 3, 4), [0], [2])],
    "moveaxis": [S(F(2, 3, 4), [0, 1], [2, 0])],
    # ---- reductions --------------------------------------------------------------
    "sum": [S(F(3, 4), dtypes=WITH_INT), S(F(3, 4), dtype=ignis.float64)],
    "nansum": [S(F(3, 4, kind="nan")), S(F(3, 4, kind="nan"), [1], True),
               S(F(3, 4), dtypes=("int64",))],
    "mean": [S(F(3, 4)), S(F(3, 4), dtype=ignis.float64)],
    "mean.dim": [S(F(3, 4, 5), [0, 2]), S(F(3, 4), [1], True), S(F(3, 4, layout="strided"), None)],
    "prod": [S(F(3, 4), dtypes=WITH_INT)],
    "max": [S(F(3, 4), dtypes=WITH_INT)],
    "min": [S(F(3, 4), dtypes=WITH_INT)],
    "max.other": [S(F(3, 4), F(4))],
    "min.other": [S(F(3, 4), F(4))],
    "var": [S(F(3, 4)), S(F(3, 4), False)],
    "var.dim": [S(F(3, 4, 5), [1], True, True), S(F(3, 4), None)],
    "var.correction": [S(F(3, 4, 5), [0, 2], correction=0), S(F(3, 4), correction=2, keepdim=True)],
    "std": [S(F(3, 4)), S(F(3, 4), False)],
    "std.dim": [S(F(3, 4, 5), [1], True, True), S(F(3, 4), None)],
    "std.correction": [S(F(3, 4, 5), [0, 2], correction=0)],
    "var_mean": [S(F(3, 4))],
    "var_mean.dim": [S(F(3, 4, 5), [1], False, True), S(F(3, 4), [0])],
    "var_mean.correction": [S(F(3, 4, 5), [2], correction=0)],
    "std_mean": [S(F(3, 4))],
    "std_mean.dim": [S(F(3, 4, 5), [1, 2], True, True)],
    "std_mean.correction": [S(F(3, 4), correction=1.5)],
    "logsumexp": [S(F(3, 4), [1]), S(F(2, 3, 4, layout="transposed"), [0, 2], True),
                  S(F(3, 4, kind="masked"), [1], grad=False),
                  S(I(5, 3, 4), [1], dtypes=ONE)],
    "all": [S(B(3, 4), dtypes=ONE), S(F(3, 4, kind="zeros"))],
    "all.dim": [S(B(3, 4), 1, dtypes=ONE), S(F(3, 4, kind="zeros"), 0, True)],
    "any": [S(B(3, 4), dtypes=ONE), S(F(3, 4, kind="zeros"))],
    "any.dim": [S(B(3, 4), 1, dtypes=ONE), S(F(3, 4, kind="zeros"), 0, True)],
    "norm": [S(F(3, 4)), S(F(3, 4), 1, [1]), S(F(3, 4), math.inf, [0], True),
             S(F(3, 4), -math.inf, [1]), S(F(3, 4, kind="zeros"), 0, grad=False),
             S(F(3, 4, kind="nonzero"), 3.0, [1]), S(F(3, 4), 2, dtype=ignis.float64)],
    "norm.str": [S(F(3, 4), "fro", [0, 1]), S(F(2, 3, 4, layout="transposed"), "fro")],
    "count_nonzero": [S(F(3, 4, kind="zeros")), S(I(3, 3, 4), 1, dtypes=ONE)],
    "count_nonzero.dim_IntList": [S(I(3, 3, 4), [0, 1], dtypes=ONE), S(F(3, 4, kind="zeros"), [1])],
    # ---- indexing and data movement ------------------------------------------------------
    "stack": [S([F(2, 3), F(2, 3, layout="transposed")], 1)],
    "hstack": [S([F(2, 3), F(2, 3)])],
    "vstack": [S([F(2, 3), F(3)])],
    "dstack": [S([F(2, 3), F(2, 3)])],
    "column_stack": [S([F(3), F(3, 2)])],
    "repeat": [S(F(2, 3), [2, 1, 2], dtypes=WITH_INT), S(F(3), [2]),
               S(F(2, 3, layout="transposed"), [1, 3]), S(F(2, 3), [1, 1])],
    "tile": [S(F(2, 3), [2])],
    "index_add": [S(F(5, 3), 0, IV([0, 2, 2, 4]), F(4, 3), alpha=2),
                  S(F(3, 5), 1, IV([4, 1]), F(3, 2), dtypes=WITH_INT)],
    # GradScaler's in-place ops: each run writes its arguments, so the three
    # runs here see different states; test_autocast.py compares the
    # decompositions' effects with the CPU kernels and torch.
    "_amp_foreach_non_finite_check_and_unscale_": [
        S(build=lambda rng, dt: [[ignis.randn(2, 3), ignis.randn(3, 2).t()], ignis.zeros(1),
                                 ignis.full((1,), 0.5)], dtypes=ONE, grad=False, values=False,
          torch=False)],
    "_amp_update_scale_": [
        S(build=lambda rng, dt: [ignis.full((), 8.0), ignis.zeros((), dtype=ignis.int32),
                                 ignis.zeros(()), 2.0, 0.5, 3], dtypes=ONE, grad=False,
          values=False, torch=False)],
    "prelu": [S(F(2, 3, 4), F(3)), S(F(5), F(1))],
    "scatter.reduce": [S(F(4, 3), 0, IV([[0, 1, 3], [0, 1, 3]]), F(2, 3), reduce="add"),
                       S(F(3, 5), 1, IV([[4, 1], [2, 2], [0, 3]]), F(3, 2), reduce="multiply",
                         grad=False, dtypes=WITH_INT)],
    "scatter.value_reduce": [S(F(4, 3), 0, IV([[0, 1, 3], [2, 1, 0]]), 1.5, reduce="add"),
                             S(F(3, 5), 1, IV([[4, 1], [2, 2], [0, 3]]), 2.0, reduce="multiply",
                               grad=False)],
    "index_copy": [S(F(5, 3), 0, IV([4, 0, 2]), F(3, 3)), S(F(3, 5), 1, IV([1, 3]), F(3, 2))],
    "index_fill.int_Tensor": [S(F(4, 5), 1, IV([0, 3]), 2.5), S(F(4, 5), 0, IV([1]), -1)],
    "take_along_dim": [S(F(3, 4), I(4, 3, 2), 1), S(F(3, 4), I(12, 5))],
    "tril": [S(F(4, 5), dtypes=WITH_INT), S(F(2, 4, 5), 1), S(F(4, 4, layout="transposed"), -1)],
    "triu": [S(F(4, 5), dtypes=WITH_INT), S(F(2, 4, 5), 1), S(B(4, 4), -1, dtypes=ONE)],
    "fliplr": [S(F(3, 4))],
    "flipud": [S(F(3, 4))],
    "roll": [S(F(4, 5), [1], [0], dtypes=WITH_INT), S(F(4, 5), [2, -1], [0, 1]), S(F(4, 5), [3]),
             S(F(3, 4), [0], [1]), S(F(3, 4, layout="transposed"), [7], [-1])],
    "_unique2": [S(I(5, 3, 4), True, True, True, dtypes=ONE, grad=False),
                 S(I(3, 7), False, False, False, dtypes=ONE, grad=False)],
    "unique_dim": [S(I(2, 5, 3), 0, True, True, True, dtypes=ONE, grad=False),
                   S(I(2, 3, 6), 1, True, False, True, dtypes=ONE, grad=False)],
    "unique_consecutive": [S(I(3, 12), True, True, None, dtypes=ONE, grad=False),
                           S(I(2, 6, 2), True, True, 0, dtypes=ONE, grad=False)],
    "round.decimals": [S(F(3, 4, kind="wide"), decimals=2), S(F(3, 4, kind="wide"), decimals=-1),
                       S(F(3, 4), decimals=0)],
    "einsum": [S("bij,bjk->bik", [F(2, 3, 4), F(2, 4, 5)]), S("ii->i", [F(4, 4)]),
               S("...i,...i->...", [F(2, 1, 3), F(4, 3)]), S("a,b,c->abc", [F(2), F(3), F(4)])],
    "where": [S(B(3, 4), dtypes=ONE)],
    "take": [S(F(3, 4), I(12, 5))],
    # ---- matrix products -----------------------------------------------------------
    "dot": [S(F(5), F(5), dtypes=WITH_INT)],
    "mv": [S(F(3, 4), F(4)), S(F(3, 4, layout="transposed"), F(4))],
    "_addmm_act": [S(F(5), F(3, 4), F(4, 5), activation="relu"),
                   S(F(3, 5), F(3, 4), F(4, 5, layout="transposed"), beta=0.5, alpha=2.0,
                     activation="gelu_tanh")],
    "matmul": [S(F(3, 4), F(4, 5)), S(F(2, 3, 4), F(4)), S(F(4), F(2, 4, 3)),
               S(F(2, 1, 3, 4), F(5, 4, 2)), S(F(3, 4), F(4)), S(F(4), F(4)),
               S(F(2, 3, 4), F(4, 5))],
    "outer": [S(F(3), F(4))],
    "linear": [S(F(2, 3, 4), F(5, 4), F(5)), S(F(3, 4), F(5, 4)), S(F(4), F(5, 4), F(5)),
               S(F(2, 3, 4, layout="transposed"), F(5, 4), F(5))],
    "scaled_dot_product_attention": [
        S(F(2, 3, 4), F(2, 5, 4), F(2, 5, 6)),
        S(F(1, 2, 3, 4), F(1, 2, 3, 4), F(1, 2, 3, 4), is_causal=True),
        S(F(2, 3, 4), F(2, 5, 4), F(2, 5, 4), B(3, 5), grad=False),
        S(F(2, 3, 4), F(2, 5, 4), F(2, 5, 4), F(3, 5), scale=0.3),
        # dropout_p > 0 is no _scaled_dot_product_attention: softmax, dropout
        # and matmul, decomposed in turn.
        S(F(2, 3, 4), F(2, 5, 4), F(2, 5, 6), None, 0.5, random=True, torch=False)],
    # ---- nn ------------------------------------------------------------------------------
    "softmax.int": [S(F(3, 4), 1), S(F(2, 3, 4, layout="transposed"), 0),
                    S(F(3, 4), -1, dtype=ignis.float64), S(F(0, 3), 1)],
    "softmax.functional": [S(F(3, 4), 1), S(F(2, 3, 4))],
    "log_softmax.int": [S(F(3, 4), 1), S(F(2, 3, 4, layout="strided"), 2),
                        S(F(3, 4), 0, dtype=ignis.float64)],
    "log_softmax.functional": [S(F(3, 4), -1)],
    "_safe_softmax": [S(F(3, 4), 1), S(F(3, 4, kind="masked"), 1, grad=False)],
    "native_layer_norm": [
        S(F(3, 4), [4], F(4), F(4), 1e-5, grad_outputs=[0]),
        S(F(2, 3, 4, layout="transposed"), [3, 4], None, None, 1e-5, grad_outputs=[0]),
        # bfloat16 input, float32 parameters: ignis's fused op gives mean and
        # rstd in the input's dtype (torch: float32); the decomposition follows it.
        S(F(3, 4), [4], FD("float32", 4), FD("float32", 4), 1e-3, dtypes=("bfloat16",),
          torch=False)],
    "native_layer_norm_backward": [S(build=_layer_norm_backward_args, grad=False, torch=False),
                                   S(build=_layer_norm_backward_no_affine, grad=False,
                                     torch=False)],
    "layer_norm": [S(F(3, 4), [4], F(4), F(4)), S(F(2, 3, 4), [3, 4])],
    # torch has these only for CUDA: no torch comparison. The workspace
    # (the last output) is not differentiable, as in torch.
    "_thnn_fused_lstm_cell": [
        S(F(3, 8), F(3, 8), F(3, 2), F(8), F(8), grad_outputs=[0, 1], torch=False),
        S(F(2, 12, layout="transposed"), F(2, 12), F(2, 3), grad_outputs=[0, 1], torch=False)],
    "_thnn_fused_lstm_cell_backward_impl": [
        S(build=_lstm_cell_backward_args(True), grad=False, torch=False),
        S(build=_lstm_cell_backward_args(False), grad=False, torch=False)],
    "_thnn_fused_gru_cell": [
        S(F(3, 6), F(3, 6), F(3, 2), F(6), F(6), grad_outputs=[0], torch=False),
        S(F(2, 9), F(2, 9, layout="transposed"), F(2, 3), grad_outputs=[0], torch=False)],
    "_thnn_fused_gru_cell_backward": [
        S(build=_gru_cell_backward_args(True), grad=False, torch=False),
        S(build=_gru_cell_backward_args(False), grad=False, torch=False)],
    "rms_norm": [S(F(3, 4), [4], F(4)), S(F(2, 3, 4, layout="transposed"), [3, 4], None, 1e-3)],
    "normalize": [S(F(3, 4)), S(F(3, 4), 1.0, 0), S(F(3, 4), 3.0, -1)],
    "cosine_similarity": [S(F(3, 4), F(3, 4)), S(F(3, 4), F(4), 1),
                          S(F(2, 3, 4), F(1, 3, 4), 0)],
    "native_dropout": [S(F(4, 5), 0.3, True, random=True, check=_dropout_check(0.3)),
                       S(F(4, 5), 0.3, False), S(F(4, 5), 0.0, True), S(F(4, 5), 1.0, True)],
    "dropout": [S(F(4, 5), 0.4, True, random=True, check=_dropout_check(0.4)),
                S(F(4, 5), 0.4, False)],
    "dropout.functional": [S(F(4, 5), 0.5, random=True, check=_dropout_check(0.5))],
    "embedding": [S(F(10, 3), I(10, 2, 4)), S(F(10, 3), IV([1, 5, 1], "int32")),
                  S(F(10, 3), I(10, 5), 1, grad=False)],
    "one_hot": [S(I(5, 3, 4), 5, dtypes=ONE), S(I(5, 6), dtypes=ONE)],
    # A class weight with class indices is not differentiable (torch raises
    # if it requires grad), so it stays a constant: grad_inputs=[0].
    "nll_loss": [S(F(4, 5), I(5, 4)),
                 S(F(4, 5), IV([0, 2, -100, 4]), F(5, kind="pos"), grad_inputs=[0]),
                 S(F(2, 5, 3), I(5, 2, 3), reduction="none"),
                 S(F(4, 5), I(5, 4), reduction="sum"), S(F(5), IV(2)),
                 S(F(4, 5), IV([1, 3, 3, 0]), ignore_index=3), S(F(4, 5), I(5, 4), None, False),
                 S(F(4, 5), IV([1, 3, 3, 0], "uint8")),
                 S(F(4, 5), IV([1, 3, 3, 0], "uint8"), F(5, kind="pos"), ignore_index=3,
                   reduction="sum", grad_inputs=[0])],
    # As nll_loss's, the class weight is constant with class indices; with
    # class probabilities it is differentiable, as in torch.
    "cross_entropy": [
        S(F(4, 5), I(5, 4)),
        S(F(4, 5), IV([0, 2, -100, 4]), F(5, kind="pos"), label_smoothing=0.1, grad_inputs=[0]),
        S(F(2, 5, 3), I(5, 2, 3), reduction="none", label_smoothing=0.2),
        S(F(4, 5), F(4, 5, kind="prob")),
        S(F(4, 5), F(4, 5, kind="prob"), F(5, kind="pos"), label_smoothing=0.1, reduction="sum"),
        S(F(2, 5, 3), F(2, 5, 3, kind="prob"), reduction="none"), S(F(5), IV(3)),
        S(F(4, 5), IV([1, 1, 3, 3]), ignore_index=1, reduction="sum"),
        # (torch refuses this with reduction="mean")
        S(F(4, 5), IV([1, 3, 3, 0], "uint8"), F(5, kind="pos"), label_smoothing=0.2,
          reduction="sum", grad_inputs=[0])],
    # (The weighted mse/l1 mean divides by the sum of the weight itself, not
    # of the weight broadcast against a larger target.)
    "mse_loss": [S(F(3, 4), F(3, 4)), S(F(3, 4), F(4), reduction="sum"),
                 S(F(3, 4), F(3, 4), reduction="none"),
                 S(F(3, 4), F(3, 4), weight=F(3, 4, kind="pos")),
                 S(F(4), F(3, 4), weight=F(4, kind="pos")),
                 S(F(3, 4), F(3, 4), None, False)],
    "l1_loss": [S(F(3, 4), F(3, 4)), S(F(3, 4), F(3, 4), reduction="none"),
                S(F(3, 4), F(3, 4), weight=F(3, 4, kind="pos")),
                S(F(1, 4), F(3, 4), weight=F(1, 4, kind="pos"))],
    "smooth_l1_loss": [S(F(3, 4), F(3, 4)), S(F(3, 4), F(3, 4), beta=0.5, reduction="sum"),
                       S(F(3, 4), F(3, 4), beta=0.0)],
    "huber_loss": [S(F(3, 4), F(3, 4)), S(F(3, 4), F(3, 4), "none", 0.5),
                   S(F(3, 4), F(3, 4), weight=F(3, 4, kind="pos"))],
    # bce's weights are not differentiable (as in torch): constants.
    "binary_cross_entropy": [S(F(3, 4, kind="prob"), F(3, 4, kind="prob")),
                             S(F(3, 4, kind="prob"), F(3, 4, kind="prob"), F(4, kind="pos"),
                               reduction="sum", grad_inputs=[0, 1])],
    "binary_cross_entropy_with_logits": [
        S(F(3, 4), F(3, 4, kind="prob")),
        S(F(3, 4), F(3, 4, kind="prob"), F(4, kind="pos"), pos_weight=F(4, kind="pos"),
          reduction="none", grad_inputs=[0, 1])],
    "kl_div": [S(F(3, 4), F(3, 4, kind="prob")),
               S(F(3, 4), F(3, 4, kind="prob"), reduction="batchmean"),
               S(F(3, 4), F(3, 4), log_target=True, reduction="sum"),
               S(F(3, 4), F(3, 4, kind="zeros"), reduction="none", grad=False)],
    "softplus": [S(F(3, 4)), S(F(3, 4), 2, 1)],
    "leaky_relu": [S(F(3, 4)), S(F(3, 4), 0.2)],
    "leaky_relu.functional": [S(F(3, 4), 0.1)],
    "elu": [S(F(3, 4)), S(F(3, 4), 0.5, 2, 1.5)],
    "elu.functional": [S(F(3, 4), 0.7)],
    "logsigmoid": [S(F(3, 4)), S(F(3, 4, kind="wide"))],
    "hardtanh": [S(F(3, 4)), S(F(3, 4), -0.5, 0.25), S(F(3, 4), -1, 2, dtypes=("int64",))],
    "hardtanh.functional": [S(F(3, 4), -0.5, 0.5)],
    "relu6": [S(F(3, 4, kind="wide"))],
    "relu6.functional": [S(F(3, 4, kind="wide"))],
    "glu": [S(F(3, 4)), S(F(4, 3, layout="transposed"), 0)],
}


def _foreach_samples():
    """The functional _foreach_ ops (ops/foreach.cpp), each a composite over
    its per-tensor op, on lists of two tensors of different shapes."""
    def lst(kind="any"):
        return [F(3, 4, kind=kind), F(5, kind=kind)]
    out = {}
    for name in ("add", "sub", "mul", "div", "maximum", "minimum"):
        other = "nonzero" if name == "div" else "any"
        out[f"_foreach_{name}.Scalar"] = [S(lst(), 1.5)]
        out[f"_foreach_{name}.ScalarList"] = [S(lst(), [0.5, -2.0])]
        out[f"_foreach_{name}.List"] = [S(lst(), lst(other))]
        if name in ("add", "sub"):
            out[f"_foreach_{name}.List"].append(S(lst(), lst(), alpha=0.5))
        if name in ("add", "mul", "div"):  # a 0-dim tensor, as torch's overload takes
            out[f"_foreach_{name}.Tensor"] = [S(lst(), F(kind=other))]
    for name, kind in (("sqrt", "pos"), ("neg", "any"), ("abs", "any"), ("exp", "any"),
                       ("log", "pos"), ("reciprocal", "nonzero"), ("sigmoid", "any")):
        out[f"_foreach_{name}"] = [S(lst(kind))]
    out["_foreach_lerp.Scalar"] = [S(lst(), lst(), 0.3)]
    out["_foreach_lerp.List"] = [S(lst(), lst(), lst("unit"))]
    for name in ("addcmul", "addcdiv"):
        den = "nonzero" if name == "addcdiv" else "any"
        out[f"_foreach_{name}.Scalar"] = [S(lst(), lst(), lst(den), value=0.5)]
        out[f"_foreach_{name}.ScalarList"] = [S(lst(), lst(), lst(den), [0.5, 2.0])]
    # The fused optimizer steps' functional forms: copies of the parameters
    # and states, updated (float32 step counts, as the optimizers keep them).
    steps = [FD("float32", kind="pos"), FD("float32", kind="pos")]
    for name in ("_fused_adam", "_fused_adamw"):
        for ov, lr in (("", 0.01), (".tensor_lr", FD("float32", kind="pos"))):
            out[name + ov] = [S(lst(), lst(), lst(), lst("pos"), lst("pos"), steps, lr=lr,
                                beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-8,
                                amsgrad=True, maximize=False, grad=False, dtypes=("float32",))]
    for ov, lr in (("", 0.01), (".tensor_lr", FD("float32", kind="pos"))):
        out["_fused_sgd" + ov] = [S(lst(), lst(), lst(), weight_decay=0.1, momentum=0.9, lr=lr,
                                    dampening=0.0, nesterov=True, maximize=False,
                                    is_first_step=False, grad=False, dtypes=("float32",))]
    return out


SAMPLES.update(_foreach_samples())

# Aliases are names of one op (alias() in the family files), not ops: they
# declare no decomposition, and a call through one is the op it names, so it
# traces (and decomposes) as that op. Samples: (the op, samples as above).
ALIASES = {
    "negative": ("neg", [S(F(3, 5), dtypes=WITH_INT)]),
    "absolute": ("abs", [S(F(3, 5), dtypes=WITH_INT)]),
    "fix": ("trunc", [S(F(3, 5), dtypes=WITH_INT)]),
    "subtract": ("sub", [S(F(3, 4), F(4), dtypes=WITH_INT), S(F(3, 4), 2.0, alpha=3)]),
    "multiply": ("mul", [S(F(3, 4), F(3, 1), dtypes=WITH_INT)]),
    "divide": ("div", [S(F(3, 4), F(4, kind="nonzero"), dtypes=WITH_INT),
                       S(F(3, 4), F(4, kind="nonzero"), rounding_mode="floor")]),
    "true_divide": ("div", [S(F(3, 4), F(4, kind="nonzero"))]),
    "less": ("lt", [S(F(3, 4), F(4), dtypes=WITH_INT)]),
    "less_equal": ("le", [S(F(3, 4), F(4), dtypes=WITH_INT)]),
    "greater": ("gt", [S(F(3, 4), F(4), dtypes=WITH_INT)]),
    "greater_equal": ("ge", [S(F(3, 4), F(4), dtypes=WITH_INT)]),
    "not_equal": ("ne", [S(F(3, 4), F(4), dtypes=WITH_INT)]),
    "clip": ("clamp", [S(F(3, 4), -0.5, 0.5), S(F(3, 4), F(4), None)]),
    "concat": ("cat", [S([F(2, 3), F(1, 3)])]),
    "concatenate": ("cat", [S([F(2, 3), F(2, 2)], 1)]),
    "ger": ("outer", [S(F(3), F(4))]),
}
ALIAS_CASES = [(alias, i, dt) for alias, (_, samples) in ALIASES.items()
               for i, s in enumerate(samples) for dt in s.dtypes]

CASES = [(name, i, dt) for name in DECOMPOSED for i, s in enumerate(SAMPLES.get(name, []))
         for dt in s.dtypes]


def test_every_decomposition_has_samples():
    missing = [n for n in DECOMPOSED if n not in SAMPLES]
    assert not missing, f"decomposed ops without samples in SAMPLES: {missing}"
    stale = [n for n in SAMPLES if n not in DECOMPOSED]
    assert not stale, f"SAMPLES for ops that do not decompose: {stale}"


def test_aliases_are_no_ops():
    ops = {s.split("(")[0] for op, _, _ in C._op_table().values() for s in op.schemas}
    for alias, (target, _) in ALIASES.items():
        assert getattr(ignis.ops, alias).alias_of == target
        assert alias not in ops and alias not in DECOMPOSED and alias not in CORE


def test_core_ops_declare_no_decomposition():
    assert not CORE & set(DECOMPOSED)


def test_every_op_is_core_decomposed_or_in_place():
    decomposed = set(DECOMPOSED)
    rest = sorted(n for op, _, _ in C._op_table().values() for s in op.schemas
                  for n in [s.split("(")[0]] if n not in CORE | decomposed | IN_PLACE)
    assert not rest, f"ops that are neither core, decomposed nor in place: {rest}"


# --------------------------------------------------------------------------------
# Running and comparing
# --------------------------------------------------------------------------------
def flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat(o)]
    return [out]


def fused(name, args, kwargs):
    ignis.manual_seed(0)
    return C._op_overload(name)(*args, **kwargs)


def one_level(name, args, kwargs):
    ignis.manual_seed(0)
    return C._decompose(name, *args, **kwargs)


def recursive(name, args, kwargs):
    """(result, names of the ops that remain) with every decomposition applied."""
    ignis.manual_seed(0)
    box = []
    seen = C._decompose_trace(lambda: box.append(C._op_overload(name)(*args, **kwargs)))
    return box[0], seen


def assert_close(got, want, sample, what):
    got, want = flat(got), flat(want)
    assert len(got) == len(want), f"{what}: {len(got)} outputs, fused gives {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None:
            assert g is None, f"{what}: output {k} should be None"
            continue
        assert g.dtype == w.dtype, f"{what}: output {k} dtype {g.dtype} != {w.dtype}"
        assert tuple(g.shape) == tuple(w.shape), f"{what}: output {k} shape {g.shape} != {w.shape}"
        if sample.random or not sample.values:
            continue
        name = str(w.dtype).split(".")[-1]
        gv, wv = (t.float() if name == "bfloat16" else t for t in (g, w))
        if name in TOL:
            rtol, atol = TOL[name]
            np.testing.assert_allclose(gv.numpy(), wv.numpy(), rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=f"{what}: output {k}")
        else:
            np.testing.assert_array_equal(gv.numpy(), wv.numpy(), err_msg=f"{what}: output {k}")


@pytest.mark.parametrize("name,index,dt", CASES)
def test_decomposition_matches_fused(name, index, dt):
    sample = SAMPLES[name][index]
    args, kwargs = sample.make(f"{name}/{index}/{dt}", dt)
    want = fused(name, args, kwargs)
    got = one_level(name, args, kwargs)
    assert_close(got, want, sample, f"{name} one level")
    got, seen = recursive(name, args, kwargs)
    assert_close(got, want, sample, f"{name} recursive")
    if sample.check is not None:
        sample.check(args, got)
    left = sorted(set(seen) - CORE - IN_PLACE)
    assert not left, f"{name} decomposes into ops that are not core: {left}"


@pytest.mark.parametrize("alias,index,dt", ALIAS_CASES)
def test_alias_traces_as_its_op(alias, index, dt):
    target, samples = ALIASES[alias]
    sample = samples[index]
    args, kwargs = sample.make(f"{alias}/{index}/{dt}", dt)
    want = fused(target, args, kwargs)
    got = getattr(ignis, alias)(*args, **kwargs)
    assert_close(got, want, sample, f"ignis.{alias}")
    got, seen = recursive(alias, args, kwargs)
    assert_close(got, want, sample, f"{alias} recursive")
    assert seen == recursive(target, args, kwargs)[1], f"{alias} traces unlike {target}"
    assert alias not in seen
    left = sorted(set(seen) - CORE - IN_PLACE)
    assert not left, f"{alias} decomposes into ops that are not core: {left}"


def _requiring_grad(v, wanted, count):
    """v with its float64 tensors as leaves; the k-th of them (counted in
    count[0], across calls) requires grad if k is in `wanted` (None: all)."""
    if isinstance(v, list):
        return [_requiring_grad(e, wanted, count) for e in v]
    if isinstance(v, ignis.Tensor) and v.dtype == ignis.float64:
        k = count[0]
        count[0] += 1
        return v.detach().requires_grad_(wanted is None or k in wanted)
    return v


def _leaves(v):
    if isinstance(v, list):
        return [t for e in v for t in _leaves(e)]
    return [v] if isinstance(v, ignis.Tensor) and v.requires_grad else []


GRAD_CASES = [(n, i) for n, i, dt in CASES if dt == "float64" and SAMPLES[n][i].grad
              and not SAMPLES[n][i].random]


@pytest.mark.parametrize("name,index", GRAD_CASES)
def test_decomposition_gradients(name, index):
    sample = SAMPLES[name][index]
    args, kwargs = sample.make(f"{name}/{index}/grad", "float64")
    count = [0]
    args = [_requiring_grad(a, sample.grad_inputs, count) for a in args]
    kwargs = {k: _requiring_grad(v, sample.grad_inputs, count) for k, v in kwargs.items()}
    leaves = _leaves(args) + _leaves(list(kwargs.values()))
    if not leaves:
        pytest.skip("no float64 inputs")
    want_out = flat(fused(name, args, kwargs))
    got_out = flat(recursive(name, args, kwargs)[0])
    which = sample.grad_outputs or range(len(want_out))
    outs = [k for k in which if want_out[k] is not None and want_out[k].requires_grad]
    if not outs:
        pytest.skip("no differentiable outputs")
    rng = np.random.default_rng(7)
    weights = [ignis.from_numpy(rng.uniform(-1, 1, tuple(want_out[k].shape))) for k in outs]

    def grads(out):
        loss = sum((out[k] * w).sum() for k, w in zip(outs, weights))
        return ignis.autograd.grad(loss, leaves, allow_unused=True)

    for k, (g, w) in enumerate(zip(grads(got_out), grads(want_out))):
        if w is None:  # the input must not reach the output (to.other's other)
            assert g is None or not np.any(g.numpy()), \
                f"{name}: the fused op gives no gradient for input {k}"
            continue
        assert g is not None, f"{name}: no gradient for input {k}"
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-9,
                                   err_msg=f"{name}: gradient of input {k}")


# --------------------------------------------------------------------------------
# Against torch
# --------------------------------------------------------------------------------
if HAVE_TORCH:
    import torch.nn.functional as TF

    # Ops whose schema is torch.nn.functional's rather than an ATen op's.
    TORCH_FN = {
        "softmax.functional": TF.softmax, "log_softmax.functional": TF.log_softmax,
        "normalize": TF.normalize, "cross_entropy": TF.cross_entropy, "nll_loss": TF.nll_loss,
        "mse_loss": TF.mse_loss, "l1_loss": TF.l1_loss, "smooth_l1_loss": TF.smooth_l1_loss,
        "huber_loss": TF.huber_loss, "binary_cross_entropy": TF.binary_cross_entropy,
        "binary_cross_entropy_with_logits": TF.binary_cross_entropy_with_logits,
        "kl_div": TF.kl_div, "leaky_relu.functional": TF.leaky_relu,
        "elu.functional": TF.elu, "hardtanh.functional": TF.hardtanh,
        "relu6.functional": TF.relu6, "dropout.functional": TF.dropout,
        "logsigmoid": TF.logsigmoid,
        # ignis's own op (graph/passes/gemm_activation.h): torch's two ops.
        "_addmm_act": lambda s, a, b, beta=1, alpha=1, activation="relu": (
            TF.relu(torch.addmm(s, a, b, beta=beta, alpha=alpha)) if activation == "relu"
            else TF.gelu(torch.addmm(s, a, b, beta=beta, alpha=alpha), approximate="tanh")),
    }


def _to_torch(v):
    if isinstance(v, list):
        return [_to_torch(e) for e in v]
    if isinstance(v, ignis.Tensor):
        bf16 = v.dtype == ignis.bfloat16
        t = torch.from_numpy(np.array((v.float() if bf16 else v).numpy()))
        return t.bfloat16() if bf16 else t
    if isinstance(v, ignis.dtype):
        return getattr(torch, str(v).split(".")[-1])
    return v


def _torch_op(name):
    if name in TORCH_FN:
        return TORCH_FN[name]
    base, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, base, None)
    # An overload torch names differently: let the packet pick by arguments.
    return getattr(packet, overload or "default", packet) if packet is not None else None


@pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")
@pytest.mark.parametrize("name,index,dt", CASES)
def test_decomposition_matches_torch(name, index, dt):
    sample = SAMPLES[name][index]
    fn = _torch_op(name)
    if not sample.torch or sample.random or not sample.values or fn is None:
        pytest.skip("no torch op of the same signature")
    args, kwargs = sample.make(f"{name}/{index}/{dt}", dt)
    try:
        want = fn(*_to_torch(args), **{k: _to_torch(v) for k, v in kwargs.items()})
    except (TypeError, RuntimeError) as e:
        pytest.skip(f"torch's {name} takes other arguments: {e}")
    got = recursive(name, args, kwargs)[0]
    got, want = flat(got), flat(want)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], f"output {k} dtype"
        assert tuple(g.shape) == tuple(w.shape), f"output {k} shape"
        g = (g.float() if g.dtype == ignis.bfloat16 else g).numpy()
        w = (w.float() if w.dtype == torch.bfloat16 else w).numpy()
        rtol, atol = TOL.get(dt, (0, 0)) if np.issubdtype(w.dtype, np.floating) else (0, 0)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"{name}: output {k}")

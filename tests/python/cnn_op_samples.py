"""Sample calls of the CNN ops (src/ignis/ops/conv.cpp, pooling.cpp,
normalization.cpp), for the declaration-driven suites that cannot build
their arguments from the schema alone: test_aot (fake tensors against real
ones) and test_compiler_ops (compiled against eager, values and gradients).

SAMPLES maps an op's overload name to (suffix, build) pairs. build(t)
returns the positional arguments; t(shape, kind="any") makes a tensor in
the caller's dtype and layout (kind "pos": positive values, for
variances). Backward samples size their grad_output (and pick indices) by
running the forward in float64, so that they build in every dtype.
CONSTANT_ARGS: positions a gradient test must not differentiate (the op
declares them not differentiable).
"""
import ignis

_ops = ignis.ops


def _f64(t):
    return t.detach().to(ignis.float64)


def _conv(xs, ws, bias, stride, padding, dilation, transposed, output_padding, groups):
    def build(t):
        out_ch = ws[1] * groups if transposed else ws[0]
        return [t(xs), t(ws), t((out_ch,)) if bias else None, stride, padding, dilation,
                transposed, output_padding, groups]
    return build


def _conv_backward(xs, ws, stride, padding, dilation, transposed, output_padding, groups,
                   mask):
    def build(t):
        x, w = t(xs), t(ws)
        y = _ops.convolution(_f64(x), _f64(w), None, stride, padding, dilation, transposed,
                             output_padding, groups)
        out_ch = ws[1] * groups if transposed else ws[0]
        return [t(tuple(y.shape)), x, w, [out_ch] if mask[2] else None, stride, padding,
                dilation, transposed, output_padding, groups, mask]
    return build


def _max_pool_backward(xs, k, s, p, d, ceil):
    def build(t):
        x = t(xs)
        y, idx = _ops.max_pool2d_with_indices(_f64(x), k, s, p, d, ceil)
        return [t(tuple(y.shape)), x, k, s, p, d, ceil, idx]
    return build


def _avg_pool_backward(xs, k, s, p, ceil, include_pad, divisor):
    def build(t):
        x = t(xs)
        y = _ops.avg_pool2d(_f64(x), k, s, p, ceil, include_pad, divisor)
        return [t(tuple(y.shape)), x, k, s, p, ceil, include_pad, divisor]
    return build


def _adaptive_backward(op, xs, size):
    def build(t):
        x = t(xs)
        out = getattr(_ops, op)(_f64(x), size)
        if isinstance(out, tuple):
            return [t(tuple(out[0].shape)), x, out[1]]
        return [t(tuple(out.shape)), x]
    return build


def _batch_norm(xs, affine, stats, training):
    def build(t):
        c = xs[1]
        return [t(xs), t((c,)) if affine else None, t((c,)) if affine else None,
                t((c,)) if stats else None, t((c,), "pos") if stats else None, training, 0.1,
                1e-5]
    return build


def _batch_norm_backward(xs, training, mask):
    def build(t):
        c = xs[1]
        # any mean and positive 1/std will do
        return [t(xs), t(xs), t((c,)), None, None, t((c,)), t((c,), "pos"), training, 1e-5, mask]
    return build


SAMPLES = {
    "convolution": [
        ("2d", _conv((2, 3, 6, 5), (4, 3, 3, 2), True, [1], [1], [1], False, [0], 1)),
        ("2d_strided_grouped", _conv((2, 4, 7, 7), (6, 2, 3, 3), False, [2, 1], [1, 0], [2], False,
                                     [0], 2)),
        ("1x1", _conv((2, 4, 5, 5), (3, 4, 1, 1), True, [1], [0], [1], False, [0], 1)),
        ("1d", _conv((2, 3, 9), (4, 3, 3), True, [2], [1], [1], False, [0], 1)),
        ("transposed", _conv((2, 4, 4, 5), (4, 3, 3, 3), True, [2], [1], [1], True, [1], 1)),
    ],
    "convolution_backward": [
        ("all", _conv_backward((2, 3, 6, 5), (4, 3, 3, 2), [1], [1], [1], False, [0], 1,
                               [1, 1, 1])),
        ("input_only", _conv_backward((2, 4, 4, 5), (4, 3, 3, 3), [2], [1], [1], True, [1], 1,
                                      [1, 0, 0])),
    ],
    "max_pool2d_with_indices": [
        ("k3s2p1", lambda t: [t((2, 3, 7, 8)), [3], [2], [1], [1], False]),
        ("ceil_dilated", lambda t: [t((2, 3, 9, 8)), [2, 3], [2], [0], [2, 1], True]),
    ],
    "max_pool2d_with_indices_backward": [
        ("k3s2p1", _max_pool_backward((2, 3, 7, 8), [3], [2], [1], [1], False)),
    ],
    "avg_pool2d": [
        ("k3s2p1", lambda t: [t((2, 3, 7, 8)), [3], [2], [1], False, True, None]),
        ("ceil_exclude_pad", lambda t: [t((2, 3, 7, 8)), [3], [2], [1], True, False, None]),
        ("divisor", lambda t: [t((3, 6, 6)), [2], [], [0], False, True, 3]),
    ],
    "avg_pool2d_backward": [
        ("k3s2p1", _avg_pool_backward((2, 3, 7, 8), [3], [2], [1], True, False, None)),
    ],
    "_adaptive_avg_pool2d": [("3x2", lambda t: [t((2, 3, 7, 8)), [3, 2]])],
    "_adaptive_avg_pool2d_backward": [
        ("3x2", _adaptive_backward("_adaptive_avg_pool2d", (2, 3, 7, 8), [3, 2]))],
    "adaptive_max_pool2d": [("3x2", lambda t: [t((2, 3, 7, 8)), [3, 2]])],
    "adaptive_max_pool2d_backward": [
        ("3x2", _adaptive_backward("adaptive_max_pool2d", (2, 3, 7, 8), [3, 2]))],
    "_native_batch_norm_legit_functional": [
        ("train", _batch_norm((4, 3, 5, 2), True, True, True)),
        ("train_no_stats", _batch_norm((4, 3, 5), False, False, True)),
        ("eval", _batch_norm((4, 3, 5, 2), True, True, False)),
    ],
    "native_batch_norm_backward": [
        ("train", _batch_norm_backward((4, 3, 5, 2), True, [1, 1, 1])),
        ("eval_input_only", _batch_norm_backward((4, 3, 5), False, [1, 0, 0])),
    ],
}

CONSTANT_ARGS = {"_native_batch_norm_legit_functional": {3, 4}}

"""ignis.autograd.functional: derivatives of whole functions
(torch.autograd.functional's vjp, jvp, jacobian, hessian, vhp, hvp), built
on ignis.autograd.grad.

Inputs and outputs follow torch's structure: a function of one Tensor gives
Tensors, a function of a tuple of Tensors gives tuples (jacobian of tuple
outputs and tuple inputs: a tuple of tuples, [i][j] = d output_i / d input_j).
Without create_graph the results are detached. jvp uses the double-vjp
trick (a vjp with a dummy cotangent, differentiated w.r.t. that cotangent),
as torch does. ignis has no forward-mode AD: jacobian's strategy
"forward-mode" (which torch allows only with vectorize=True) and hessian's
outer_jacobian_strategy "forward-mode" are computed in reverse mode, with
the same results; vectorize is accepted and the rows are computed one by one.
"""
import ignis
from . import grad as _autograd_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(value, arg_name, fn_name):
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for v in values:
        if not isinstance(v, ignis.Tensor):
            what = "inputs" if arg_name == "inputs" else arg_name
            if is_tuple:
                raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a "
                                f"tuple of Tensors but the value at index {values.index(v)} "
                                f"has type {type(v)}.")
            raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the given {what} has type {type(value)}.")
    return is_tuple, values


def _outputs_as_tuple(out, fn_name):
    return _as_tuple(out, "outputs of the user-provided function", fn_name)


def _prepare_inputs(inputs, create_graph, need_graph):
    # Fresh leaves (or, with create_graph, views that keep the caller's graph).
    res = []
    for x in inputs:
        if create_graph and x.requires_grad:
            res.append(x.view_as(x))
        else:
            res.append(x.detach().requires_grad_(need_graph))
    return tuple(res)


def _finish(values, create_graph):
    if isinstance(values, tuple):
        return tuple(_finish(v, create_graph) for v in values)
    if values is None or create_graph:
        return values
    return values.detach()


def _unpack(values, is_tuple):
    return values if is_tuple else values[0]


def _check_v(v, refs, what, fn_name):
    if len(v) != len(refs):
        raise RuntimeError(f"The given v should contain a single Tensor." if len(refs) == 1
                           else f"v is a tuple of invalid length: should be {len(refs)} but "
                                f"got {len(v)}.")
    for i, (vv, r) in enumerate(zip(v, refs)):
        if tuple(vv.shape) != tuple(r.shape):
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {tuple(r.shape)} "
                               f"but got {tuple(vv.shape)}.")


def _grad(outputs, inputs, grad_outputs, create_graph, strict, stage):
    """grad() of the outputs that require it; None for inputs they do not reach
    (an error in strict mode)."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if strict:
        for i, o in enumerate(outputs):
            if not o.requires_grad:
                raise RuntimeError(f"Output {i} of the user-provided function does not "
                                   f"require gradients. The outputs must be computed in a "
                                   f"differentiable manner from the input when running in "
                                   f"strict mode.")
    if not pairs:
        res = (None,) * len(inputs)
    else:
        res = _autograd_grad([p[0] for p in pairs], inputs, [p[1] for p in pairs],
                             retain_graph=True, create_graph=create_graph, allow_unused=True)
    if strict:
        for i, r in enumerate(res):
            if r is None:
                raise RuntimeError(f"The {stage} of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode.")
    return res


def _zeros_for_none(grads, refs):
    return tuple(ignis.zeros_like(r) if g is None else g for g, r in zip(grads, refs))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """torch.autograd.functional.vjp: (func(inputs), v^T J)."""
    with ignis.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare_inputs(inputs, create_graph, True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _outputs_as_tuple(outputs, "vjp")
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            _check_v(v, outputs, "v", "vjp")
        else:
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided "
                                   "function returns a single Tensor with a single element.")
            v = (ignis.ones_like(outputs[0]),)
        grads = _grad(outputs, inputs, v, create_graph, strict, "output")
        grads = _zeros_for_none(grads, inputs)
    return (_unpack(_finish(outputs, create_graph), is_outputs_tuple),
            _unpack(_finish(grads, create_graph), is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """torch.autograd.functional.jvp: (func(inputs), J v), by the double-vjp
    trick."""
    with ignis.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare_inputs(inputs, create_graph, True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            _check_v(v, inputs, "v", "jvp")
        else:
            if len(inputs) != 1 or inputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the "
                                   "user-provided function is a single Tensor with a single "
                                   "element.")
            v = (ignis.ones_like(inputs[0]),)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _outputs_as_tuple(outputs, "jvp")
        # u -> J^T u is linear in the dummy cotangent u; its vjp with v is J v.
        dummies = tuple(ignis.zeros_like(o).requires_grad_(True) for o in outputs)
        grad_inputs = _grad(outputs, inputs, dummies, True, strict, "output")
        used = [(g, vv) for g, vv in zip(grad_inputs, v) if g is not None]
        if used:
            jv = _autograd_grad([g for g, _ in used], dummies, [vv for _, vv in used],
                                retain_graph=True, create_graph=create_graph,
                                allow_unused=True)
        else:
            jv = (None,) * len(dummies)
        if strict and create_graph:
            for i, r in enumerate(jv):
                if r is None:
                    raise RuntimeError(f"The gradient with respect to the input is independent "
                                       f"of entry {i} in the grad_outputs when using the double "
                                       f"backward trick to compute forward mode gradients. This "
                                       f"is not allowed in strict mode.")
        jv = _zeros_for_none(jv, outputs)
    return (_unpack(_finish(outputs, create_graph), is_outputs_tuple),
            _unpack(_finish(jv, create_graph), is_outputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """torch.autograd.functional.jacobian: one Tensor of shape
    output.shape + input.shape per (output, input) pair, in torch's nesting."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or '
                             '"reverse-mode". Hint: If your function has more outputs than '
                             'inputs, "forward-mode" tends to be more performant. Otherwise, '
                             'prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                'torch.autograd.functional.jacobian: `create_graph=True` and '
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `create_graph=False` or `strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or "
                                      "forward-over-reverse Hessian is only implemented for "
                                      "`vectorize=True`.")
    if strict and vectorize:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           "`vectorized=True` are not supported together. Please either set "
                           "`strict=False` or `vectorize=False`.")
    with ignis.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare_inputs(inputs, create_graph, True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _outputs_as_tuple(outputs, "jacobian")
        jac = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]  # rows[j]: d out[k] / d input_j for each k
            flat = out.reshape(-1)
            for k in range(flat.numel()):
                if out.requires_grad:
                    # Row k: the gradient of the k-th element alone.
                    res = _autograd_grad((flat[k],), inputs, retain_graph=True,
                                         create_graph=create_graph, allow_unused=True)
                else:
                    if strict:
                        raise RuntimeError(
                            f"Output {i} of the user-provided function does not require "
                            f"gradients. The outputs must be computed in a differentiable "
                            f"manner from the input when running in strict mode.")
                    res = (None,) * len(inputs)
                for j, (r, x) in enumerate(zip(res, inputs)):
                    if r is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {j}. This is not allowed in strict mode.")
                        r = ignis.zeros_like(x)
                    rows[j].append(r)
            per_input = []
            for j, x in enumerate(inputs):
                shape = tuple(out.shape) + tuple(x.shape)
                if rows[j]:
                    block = ignis.stack(rows[j]).reshape(shape)
                else:
                    block = ignis.zeros(shape, dtype=x.dtype, device=x.device)
                per_input.append(block)
            jac.append(tuple(per_input))
        jac = _finish(tuple(jac), create_graph)
    if strategy == "forward-mode" and is_inputs_tuple:
        # torch's forward-mode path nests lists, not tuples, for tuple inputs.
        rows = [list(row) for row in jac]
        return rows if is_outputs_tuple else rows[0]
    if is_outputs_tuple:
        return tuple(_unpack(row, is_inputs_tuple) for row in jac)
    return _unpack(jac[0], is_inputs_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """torch.autograd.functional.hessian of a function returning one
    element: input.shape + input.shape per input pair."""
    is_inputs_tuple, inputs_t = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or '
                             '"reverse-mode".')

    def gradient(*xs):
        out = func(*xs)
        is_out_tuple, outs = _outputs_as_tuple(out, "hessian")
        if is_out_tuple or not isinstance(out, ignis.Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        grads = _grad((out.squeeze(),), xs, (None,), True, strict, "output")
        return tuple(ignis.zeros_like(x) if g is None else g for g, x in zip(grads, xs))

    # The outer jacobian is always reverse mode here (see the module doc).
    res = jacobian(gradient, inputs_t, create_graph=create_graph, strict=strict,
                   vectorize=vectorize and not strict, strategy="reverse-mode")
    # jacobian of a tuple-valued gradient: res[i][j] = d grad_i / d input_j.
    if not is_inputs_tuple:
        return res[0][0] if isinstance(res[0], tuple) else res[0]
    return res


def _scalar_output(func, inputs, fn_name, create_graph, strict):
    outputs = func(*inputs)
    is_out_tuple, outs = _outputs_as_tuple(outputs, fn_name)
    if is_out_tuple or not isinstance(outputs, ignis.Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs.numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           f"contain a single element")
    return outputs


def _prepare_v(v, inputs, fn_name):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        _check_v(v, inputs, "v", fn_name)
        return v
    if len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    return (ignis.ones_like(inputs[0]),)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """torch.autograd.functional.vhp: (func(inputs), v^T H)."""
    with ignis.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _prepare_inputs(inputs, create_graph, True)
        v = _prepare_v(v, inputs, "vhp")
        out = _scalar_output(func, inputs, "vhp", create_graph, strict)
        jac = _grad((out,), inputs, (None,), True, strict, "output")
        used = [(g, vv) for g, vv in zip(jac, v) if g is not None and g.requires_grad]
        if used:
            res = _autograd_grad([g for g, _ in used], inputs, [vv for _, vv in used],
                                 retain_graph=True, create_graph=create_graph,
                                 allow_unused=True)
        else:
            res = (None,) * len(inputs)
        if strict:
            for i, r in enumerate(res):
                if r is None:
                    raise RuntimeError(f"The jacobian of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in "
                                       f"strict mode.")
        res = _zeros_for_none(res, inputs)
    return _finish(out, create_graph), _unpack(_finish(res, create_graph), is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """torch.autograd.functional.hvp: (func(inputs), H v), by the double
    backward trick on the gradient (equal to vhp for a symmetric Hessian)."""
    with ignis.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _prepare_inputs(inputs, create_graph, True)
        v = _prepare_v(v, inputs, "hvp")
        out = _scalar_output(func, inputs, "hvp", create_graph, strict)
        jac = _grad((out,), inputs, (None,), True, strict, "output")
        jac = [ignis.zeros_like(x) if g is None else g for g, x in zip(jac, inputs)]
        dummies = tuple(ignis.zeros_like(x).requires_grad_(True) for x in inputs)
        used = [(g, d) for g, d in zip(jac, dummies) if g.requires_grad]
        if used:
            # w -> H^T w; its vjp with v is H v.
            double_back = _autograd_grad([g for g, _ in used], inputs, [d for _, d in used],
                                         retain_graph=True, create_graph=True,
                                         allow_unused=True)
        else:
            double_back = (None,) * len(inputs)
        pairs = [(d, vv) for d, vv in zip(double_back, v) if d is not None and d.requires_grad]
        if pairs:
            res = _autograd_grad([d for d, _ in pairs], dummies, [vv for _, vv in pairs],
                                 retain_graph=True, create_graph=create_graph,
                                 allow_unused=True)
        else:
            res = (None,) * len(inputs)
        if strict:
            for i, r in enumerate(res):
                if r is None:
                    raise RuntimeError(f"The jacobian of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in "
                                       f"strict mode.")
        res = _zeros_for_none(res, inputs)
    return _finish(out, create_graph), _unpack(_finish(res, create_graph), is_inputs_tuple)

"""gradcheck: compares analytical gradients with central finite differences.

Inputs should be float64 tensors (the default tolerances assume it).
"""
import numpy as np

__all__ = ["gradcheck", "gradgradcheck"]


def _flat_outputs(out):
    if isinstance(out, (tuple, list)):
        return [o for o in out if o is not None]
    return [out]


def _numerical_jacobian(fn, inputs, idx, out_idx, eps):
    from .. import no_grad
    x = inputs[idx]
    base = x.detach().numpy().copy()
    flat = base.reshape(-1)
    cols = []

    def set_to(arr):
        with no_grad():
            x.copy_(_from(arr, x))

    def run():
        return _flat_outputs(fn(*inputs))[out_idx].detach().numpy().astype(np.float64).copy()

    for k in range(flat.size):
        orig = flat[k]
        flat[k] = orig + eps
        set_to(base)
        plus = run()
        flat[k] = orig - eps
        set_to(base)
        minus = run()
        flat[k] = orig
        set_to(base)
        cols.append(((plus - minus) / (2 * eps)).reshape(-1))
    return np.stack(cols, axis=0) if cols else np.zeros((0, 0))  # [n_in, n_out]


def _from(arr, like):
    from .. import from_numpy
    return from_numpy(np.array(arr, order="C", copy=True)).to(like.dtype)


def _analytical_jacobian(fn, inputs, diff_idx, out_idx):
    from .. import zeros
    from . import grad
    out = _flat_outputs(fn(*inputs))[out_idx]
    n_out = out.numel()
    jac = {i: np.zeros((inputs[i].numel(), n_out)) for i in diff_idx}
    for k in range(n_out):
        g = zeros(tuple(out.shape), dtype=out.dtype)
        g.view(-1)[k] = 1.0
        res = grad(out, [inputs[i] for i in diff_idx], g, retain_graph=True, allow_unused=True)
        for i, r in zip(diff_idx, res):
            if r is not None:
                jac[i][:, k] = r.detach().numpy().astype(np.float64).reshape(-1)
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              **unused):
    """True when func's analytical Jacobian matches finite differences for
    every input with requires_grad=True; raises (or returns False) otherwise."""
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    inputs = tuple(inputs)
    from .._tensor import Tensor
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    outs = _flat_outputs(func(*inputs))
    for oi, o in enumerate(outs):
        if not o.dtype.is_floating_point or not o.requires_grad:
            continue
        ana = _analytical_jacobian(func, inputs, diff_idx, oi)
        for i in diff_idx:
            leaf = inputs[i]
            num = _numerical_jacobian_leaf(func, inputs, i, oi, eps)
            if not np.allclose(ana[i], num, atol=atol, rtol=rtol, equal_nan=True):
                msg = (f"Jacobian mismatch for output {oi} with respect to input {i},\n"
                       f"numerical:{num}\nanalytical:{ana[i]}\n")
                if raise_exception:
                    raise RuntimeError(msg)
                return False
            del leaf
    return True


def _numerical_jacobian_leaf(func, inputs, i, oi, eps):
    # Perturb a detached copy so that leaves that require grad are not
    # written in place under autograd.
    x = inputs[i]
    probe = x.detach().clone().requires_grad_(x.requires_grad)
    args = list(inputs)
    args[i] = probe
    return _numerical_jacobian(func, args, i, oi, eps)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **unused):
    """gradcheck of the first derivative (vector-Jacobian product with
    random grad_outputs), which exercises double backward."""
    from .. import randn_like
    from . import grad
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    inputs = tuple(inputs)
    outs = _flat_outputs(func(*inputs))
    if grad_outputs is None:
        grad_outputs = [randn_like(o) for o in outs]
    grad_outputs = list(grad_outputs)
    from .._tensor import Tensor
    diff = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    n = len(inputs)

    def first(*args):
        ins = args[:n]
        gos = args[n:]
        o = _flat_outputs(func(*ins))
        d = [x for x in ins if isinstance(x, Tensor) and x.requires_grad]
        return grad(o, d, gos, create_graph=True, allow_unused=True)

    for g in grad_outputs:
        g.requires_grad_(True)
    del diff
    return gradcheck(first, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)

"""Anomaly detection (torch.autograd.detect_anomaly / set_detect_anomaly).

While enabled with check_nan, a backward whose gradients contain NaN raises
RuntimeError("Function 'XBackward0' returned nan values in its 0th output."),
torch's message.

How it differs from torch: ignis's engine runs its C++ nodes without a
Python hook between them, so the check is made where Python sees gradients:
  * a Python autograd.Function's backward is checked output by output, as
    torch checks every node;
  * the gradients that reach the graph's leaves are checked through tensor
    hooks during backward() (grad()'s results are checked once it returns,
    as ignis runs no leaf hooks there), and a NaN is blamed on the node that
    handed it over (its next_functions edge into the leaf). That node did
    return NaN, but when the NaN arose further up the graph torch names the
    node where it arose instead; when several nodes feed one leaf they are
    all named.
There is no traceback of the forward call that created the failing node
(torch records one per node in anomaly mode).
"""
import warnings

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_anomaly_enabled"]

# Process-wide, as torch's AnomalyMode.
_enabled = False
_check_nan = True


def is_anomaly_enabled():
    """torch.is_anomaly_enabled: whether anomaly detection is on."""
    return _enabled


def is_anomaly_check_nan_enabled():
    """torch.is_anomaly_check_nan_enabled: whether it checks for NaN."""
    return _check_nan


def set_anomaly_enabled(enabled, check_nan=True):
    """torch.set_anomaly_enabled(enabled, check_nan=True)."""
    global _enabled, _check_nan
    _enabled, _check_nan = bool(enabled), bool(check_nan)


class detect_anomaly:
    """Context manager and decorator that turns anomaly detection on
    (torch.autograd.detect_anomaly(check_nan=True)); it warns that it
    slows the backward down, as torch does."""

    def __init__(self, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the "
                      "runtime and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args):
        set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """torch.autograd.set_detect_anomaly(mode, check_nan=True): sets the
    mode when made (so a bare call turns it on or off); as a context manager
    it restores the previous mode on exit."""

    def __init__(self, mode, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *args):
        set_anomaly_enabled(self.prev, self.prev_check_nan)


def _checking():
    return _enabled and _check_nan


def nan_message(name, index):
    # torch's wording, "th" included for every index.
    return f"Function '{name}' returned nan values in its {index}th output."


def _has_nan(t):
    return t is not None and t.is_floating_point() and bool(t.isnan().any())


def check_function_outputs(name, grads):
    """Raises torch's error when a Python Function's backward returned NaN."""
    if not _checking():
        return
    for i, g in enumerate(grads):
        if hasattr(g, "isnan") and _has_nan(g):
            raise RuntimeError(nan_message(name, i))


def _walk(roots):
    """Over the graph behind the root nodes: {(id(node), input nr): [(feeding
    node, its output index)...]} and the leaves' AccumulateGrad nodes as
    {id(node): (node, variable)}."""
    seen, stack, edges_into, leaves = set(), [r for r in roots if r is not None], {}, {}
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for i, (child, nr) in enumerate(getattr(node, "next_functions", ())):
            if child is None:
                continue
            edges_into.setdefault((id(child), nr), []).append((node, i))
            variable = getattr(child, "variable", None)
            if variable is not None:
                leaves[id(child)] = (child, variable)
            else:
                stack.append(child)
    return edges_into, leaves


class _LeafChecks:
    """Tensor hooks that check the gradients reaching the leaves behind
    `outputs` (and grad()'s inputs) for NaN while a backward runs."""

    def __init__(self, outputs, inputs=None):
        self.handles, self.feeders = [], {}
        if not _checking():
            return
        roots = [o.grad_fn for o in outputs if getattr(o, "grad_fn", None) is not None]
        edges_into, leaves = _walk(roots)
        if inputs is None:
            # backward(): hooks on the leaves see their gradients as they arrive.
            for node, variable in leaves.values():
                feeders = edges_into.get((id(node), 0), [])
                self.handles.append(variable.register_hook(self._checker(feeders)))
            return
        # grad(): leaf hooks do not run there, so its results are checked after.
        for t in inputs:
            node = t.grad_fn
            if node is None:
                node = next((n for n, v in leaves.values() if v is t), None)
                key = (id(node), 0)
            else:
                key = (id(node), t.output_nr)
            self.feeders[id(t)] = edges_into.get(key, []) if node is not None else []

    def check_results(self, inputs, results):
        if not self.feeders:
            return
        for t, g in zip(inputs, results):
            self._checker(self.feeders.get(id(t), []))(g)

    @staticmethod
    def _checker(feeders):
        def check(grad):
            if not _has_nan(grad):
                return None
            named = [(n.name(), i) for n, i in feeders]
            if len(named) == 1:
                raise RuntimeError(nan_message(*named[0]))
            if named:
                raise RuntimeError("One of the functions " + ", ".join(
                    f"'{n}' ({i}th output)" for n, i in named) + " returned nan values.")
            raise RuntimeError("A gradient computed by the backward contains nan values.")
        return check

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        return False

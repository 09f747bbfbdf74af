"""ignis.utils.checkpoint: activation checkpointing, torch.utils.checkpoint's
interface.

`checkpoint(fn, *args, use_reentrant=False)` runs fn without keeping the
tensors its backward needs, and runs it again during the backward to get
them: memory for compute. Two ways, as in torch:

- use_reentrant=False (recommended): fn runs with grad, under saved-tensor
  hooks (ignis.autograd.graph, Note [Saved-tensor hooks]) that keep a small
  placeholder for each saved tensor. The first backward node that needs one
  runs fn again, under hooks that fill every placeholder in the order they
  were saved. Works with autograd.grad, keyword arguments, inputs that do not
  require grad and parameters used inside fn.
- use_reentrant=True (torch's default when unset, with a warning): an
  autograd.Function whose forward runs fn under no_grad and whose backward
  runs it again with grad and calls backward on it. Gradients reach
  parameters through that inner backward, so only .backward() (not
  autograd.grad) sees them, and at least one input must require grad.

The random state of the first run is restored for the second
(preserve_rng_state=True), so dropout draws the same mask; autocast's state
is the first run's too. Under ignis.compile, checkpoint(fn, ...) is traced
as fn(...) (the compiler's partitioner chooses what the backward saves).
"""
import contextlib
import warnings

from .. import _C
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn",
           "detach_variable"]


class CheckpointError(RuntimeError):
    """The second run of a checkpointed function did not save what the first
    saved (a different number of tensors, or other shapes or dtypes)."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: ",
                           type(inputs).__name__)
    out = []
    for inp in inputs:
        if not isinstance(inp, _C.TensorBase):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


class _RunState:
    """What the second run must see as the first did: the random state and
    autocast's per-device state."""

    def __init__(self, preserve_rng_state):
        from .. import get_rng_state
        self.rng = get_rng_state() if preserve_rng_state else None
        self.autocast = [(d, _C.is_autocast_enabled(d), _C.get_autocast_dtype(d))
                         for d in ("cpu", "cuda") if _C.is_autocast_available(d)]

    @contextlib.contextmanager
    def restored(self):
        from .. import autocast
        from ..random import fork_rng
        with contextlib.ExitStack() as stack:
            stack.enter_context(fork_rng(enabled=self.rng is not None))
            if self.rng is not None:
                from .. import set_rng_state
                set_rng_state(self.rng)
            for device, enabled, dtype in self.autocast:
                if enabled or _C.is_autocast_enabled(device):
                    stack.enter_context(_quiet_autocast(autocast, device, dtype, enabled))
            yield


def _quiet_autocast(autocast, device, dtype, enabled):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return autocast(device, dtype=dtype, enabled=enabled)


def _reentrant(use_reentrant, caller):
    """use_reentrant as given, or True with torch's warning when not given."""
    if use_reentrant is None:
        warnings.warn(
            f"torch.utils.checkpoint.{caller}: the use_reentrant parameter should be passed "
            "explicitly. use_reentrant=False is recommended; ignis, as torch, uses "
            "use_reentrant=True when it is not passed.", stacklevel=3)
        return True
    return use_reentrant


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, **kwargs):
    """Runs function(*args, **kwargs) keeping none of the tensors its
    backward needs; they are recomputed by running it again in the backward
    (see the module doc). preserve_rng_state=True (a keyword) restores the
    random state for the second run."""
    use_reentrant = _reentrant(use_reentrant, "checkpoint")
    preserve = kwargs.pop("preserve_rng_state", True)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return _ReentrantCheckpoint.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn,
                                         determinism_check == "default", args, kwargs)


# --- use_reentrant=True ----------------------------------------------------------------------
class _ReentrantCheckpoint(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.state = _RunState(preserve_rng_state)
        ctx.tensor_at = [i for i, a in enumerate(args) if isinstance(a, _C.TensorBase)]
        ctx.others = [None if isinstance(a, _C.TensorBase) else a for a in args]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_at])
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        from ..autograd import backward
        from ..autograd.grad_mode import enable_grad
        inputs = list(ctx.others)
        for i, t in zip(ctx.tensor_at, ctx.saved_tensors):
            inputs[i] = t
        inputs = detach_variable(tuple(inputs))
        with ctx.state.restored(), enable_grad():
            outputs = ctx.run_function(*inputs)
        if isinstance(outputs, _C.TensorBase):
            outputs = (outputs,)
        roots, root_grads = [], []
        for o, g in zip(outputs, grads):
            if isinstance(o, _C.TensorBase) and o.requires_grad:
                roots.append(o)
                root_grads.append(g)
        if not roots:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        backward(roots, root_grads)
        return (None, None) + tuple(x.grad if isinstance(x, _C.TensorBase) else None
                                    for x in inputs)


# --- use_reentrant=False ---------------------------------------------------------------------
class _Slot:
    """A saved tensor's placeholder: the tensor once recomputed, until its
    backward node takes it."""
    __slots__ = ("tensor",)

    def __init__(self):
        self.tensor = None


class _Frame:
    """One call of a checkpointed function: the placeholders of what it
    saved, in order, and how to run it again."""

    def __init__(self, recompute, check):
        self.recompute = recompute
        self.check = check
        self.slots = []
        self.metas = []

    def pack(self, t):
        slot = _Slot()
        self.slots.append(slot)
        self.metas.append((tuple(t.shape), t.dtype, t.device))
        return slot

    def unpack(self, slot):
        if slot.tensor is None:
            self._run_again()
        t, slot.tensor = slot.tensor, None
        if t is None:
            raise CheckpointError("torch.utils.checkpoint: the recomputation did not save a "
                                  "tensor the backward needs")
        return t

    def _run_again(self):
        filled = []

        def fill(t):
            i = len(filled)
            filled.append((tuple(t.shape), t.dtype, t.device))
            if i < len(self.slots):
                self.slots[i].tensor = t.detach()
            return None

        def refuse(_):
            raise RuntimeError("torch.utils.checkpoint: a backward through the recomputed "
                               "graph is not supported")

        with saved_tensors_hooks(fill, refuse):
            self.recompute()
        if self.check and filled != self.metas:
            why = f"{len(self.metas)} tensors saved in the forward, {len(filled)} in the recomputation"
            if len(filled) == len(self.metas):
                i = next(i for i, (a, b) in enumerate(zip(self.metas, filled)) if a != b)
                why += f"; first difference at tensor {i}: {self.metas[i]} before, {filled[i]} now"
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following "
                                  f"tensors have different metadata than during the forward pass: "
                                  f"{why}")


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, check, args,
                                  kwargs):
    from ..autograd.grad_mode import enable_grad
    state = _RunState(preserve_rng_state)
    forward_context, recompute_context = context_fn()

    def recompute():
        with state.restored(), enable_grad(), recompute_context:
            function(*args, **kwargs)

    frame = _Frame(recompute, check)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs a Sequential (or a list of modules/functions) in `segments`
    checkpointed chunks; the last chunk runs normally, as in torch."""
    use_reentrant = _reentrant(use_reentrant, "checkpoint_sequential")
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    functions = list(functions)

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)

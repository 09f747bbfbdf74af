"""ignis.autograd.graph: hooks on the tensors autograd saves for backward
(torch.autograd.graph's saved_tensors_hooks, save_on_cpu,
disable_saved_tensors_hooks).

While `saved_tensors_hooks(pack_hook, unpack_hook)` is active on a thread,
every tensor an op saves for its backward is passed to `pack_hook`, and only
what it returns is kept; the backward calls `unpack_hook` on that to get a
tensor back (Note [Saved-tensor hooks], src/ignis/autograd/node.h).

    with ignis.autograd.graph.saved_tensors_hooks(lambda t: t.to("cpu"),
                                                  lambda t: t.to("cuda")):
        loss = model(x).sum()
    loss.backward()

Tensors saved by Python autograd.Function's ctx.save_for_backward are kept
as they are. Hooks run with none active (what they compute saves nothing).
"""
from .. import _C

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]


class saved_tensors_hooks:
    """Context manager: the pack and unpack hooks of tensors saved for
    backward, on this thread. pack_hook(tensor) -> any object;
    unpack_hook(that object) -> a tensor equal to the one packed."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc):
        _C._pop_saved_tensors_hooks()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors go to the CPU (pinned when pin_memory and a GPU is there)
    and come back to their device for the backward: GPU memory for CPU
    memory and copies."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            if t.device.type == "cpu":
                return (t.device, t)
            cpu = t.to("cpu")
            if pin_memory:
                cpu = cpu.pin_memory()
            return (t.device, cpu)

        def unpack(packed):
            device, t = packed
            return t.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager: an op that saves a tensor for backward raises
    RuntimeError(error_message) (as a feature incompatible with saved-tensor
    hooks would declare)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        message = self.error_message

        def refuse(t):
            raise RuntimeError(message)

        _C._push_saved_tensors_hooks(refuse, refuse)
        return self

    def __exit__(self, *exc):
        _C._pop_saved_tensors_hooks()
        return False

"""DataParallel: wraps a module and calls it, as torch's DataParallel does
with a single device. Its state_dict keys carry the `module.` prefix, as
torch's do, so checkpoints saved from either load into the other."""
from ..modules.module import Module


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if device_ids is not None and len(device_ids) > 1:
            raise NotImplementedError("ignis.nn.DataParallel: replicating a module over several "
                                      "devices is not supported; it runs on one device")
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

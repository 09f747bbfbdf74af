"""convert_conv2d_weight_memory_format / convert_conv3d_weight_memory_format:
the weights of a model's (transposed) convolutions laid out in a memory format,
in place, as torch's utilities do before channels-last training."""


def _convert(module, memory_format, kinds):
    if isinstance(module, kinds):
        w = module.weight
        module.weight.data = w.detach().clone(memory_format=memory_format)
        if w.grad is not None:
            module.weight.grad = w.grad.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Every nn.Conv2d / nn.ConvTranspose2d weight in `module` (recursively) in
    `memory_format` (ignis.channels_last, say); returns the module."""
    from .. import Conv2d, ConvTranspose2d
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """convert_conv2d_weight_memory_format for nn.Conv3d / nn.ConvTranspose3d
    (ignis.channels_last_3d)."""
    from .. import Conv3d, ConvTranspose3d
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))

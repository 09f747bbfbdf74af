"""ignis.accelerator: the current accelerator, as torch.accelerator. CUDA is
the only accelerator ignis has; without a usable GPU there is none."""

__all__ = ["current_accelerator", "device_count", "is_available", "current_device_index",
           "set_device_index", "synchronize"]


def _cuda():
    try:
        from . import cuda
    except ImportError:
        return None
    return cuda if getattr(cuda, "is_available", lambda: False)() else None


def is_available():
    return _cuda() is not None


def current_accelerator(check_available=False):
    """ignis.device('cuda') when a GPU is usable, else None."""
    if _cuda() is None:
        return None
    from . import device
    return device("cuda")


def device_count():
    cuda = _cuda()
    return cuda.device_count() if cuda is not None else 0


def current_device_index():
    cuda = _cuda()
    if cuda is None:
        raise RuntimeError("ignis.accelerator: no accelerator is available")
    return cuda.current_device()


def set_device_index(device):
    cuda = _cuda()
    if cuda is None:
        raise RuntimeError("ignis.accelerator: no accelerator is available")
    cuda.set_device(device)


def synchronize(device=None):
    cuda = _cuda()
    if cuda is not None:
        cuda.synchronize(device)

"""The deprecated per-device spellings of ignis.amp, torch's
``torch.cuda.amp`` and ``torch.cpu.amp``: ``autocast`` with the device type
fixed and its old defaults, and ``GradScaler`` with the device fixed. Each
warns (FutureWarning) and then behaves as the ignis.amp object it stands for."""
import warnings


def _deprecated(old, new, tail=""):
    warnings.warn(f"`{old}(args...)` is deprecated. Please use `{new}args...{tail})` instead.",
                  FutureWarning, stacklevel=3)


def autocast_for(device_type, default_dtype_name):
    from .amp.autocast_mode import autocast as _autocast

    class autocast(_autocast):
        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            import ignis
            _deprecated(f"ignis.{device_type}.amp.autocast",
                        f"ignis.amp.autocast('{device_type}', ")
            if dtype is None:
                dtype = getattr(ignis, default_dtype_name)
            super().__init__(device_type, dtype=dtype, enabled=enabled,
                             cache_enabled=cache_enabled)

    autocast.__module__ = f"ignis.{device_type}.amp"
    return autocast


def grad_scaler_for(device_type):
    from .amp.grad_scaler import GradScaler as _GradScaler

    class GradScaler(_GradScaler):
        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=2000, enabled=True):
            _deprecated(f"ignis.{device_type}.amp.GradScaler",
                        f"ignis.amp.GradScaler('{device_type}', ")
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)

    GradScaler.__module__ = f"ignis.{device_type}.amp"
    return GradScaler

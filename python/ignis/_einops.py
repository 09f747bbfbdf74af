"""einops on ignis tensors: an einops backend for ignis and its layers.

einops picks a backend by the tensor's type: it scans the subclasses of its
`AbstractBackend` whose `framework_name` is a module already imported, and
asks each whether it handles the tensor. Its torch backend looks for
`sys.modules["torch"]`, so an `import ignis as torch` program's tensors are
unknown to it. `IgnisBackend` (framework "ignis") is torch's backend with
ignis in torch's place: einops's own code runs unchanged, and capture traces
it as Dynamo traces einops on torch (docs/architecture.md, Capture).

The backend class must exist before einops first meets an ignis tensor, but
ignis does not import einops (it is not a dependency): `install()` defines it
at once when einops is already imported, and otherwise puts a finder on
`sys.meta_path` that defines it right after `einops._backends` loads.

Layers: `einops.layers.torch` subclasses real torch's `nn.Module`, so
`ignis.utils.einops` offers `Rearrange` and `Reduce` built on
einops's layer mixins and ignis's `nn.Module` (see that module).
"""
import importlib.abc
import sys

_BACKENDS_MODULE = "einops._backends"


def _define_backend(backends):
    """Defines IgnisBackend as a subclass of einops's torch backend (which
    makes it one of AbstractBackend's subclasses einops scans)."""
    if getattr(backends, "_ignis_backend", None) is not None:
        return backends._ignis_backend
    import ignis

    class IgnisBackend(backends.TorchBackend):
        framework_name = "ignis"

        def __init__(self):
            # TorchBackend's __init__ imports torch; ignis stands in for it.
            self.torch = ignis

        def layers(self):
            from .utils import einops as layers
            return layers

    backends._ignis_backend = IgnisBackend
    return IgnisBackend


class _AfterEinopsBackends(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Lets the normal finders load `einops._backends`, then defines the
    ignis backend in it. Answers for that one module name only."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _BACKENDS_MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                self._wrapped = spec.loader
                spec.loader = self
                return spec
        return None

    def create_module(self, spec):
        return self._wrapped.create_module(spec)

    def exec_module(self, module):
        self._wrapped.exec_module(module)
        _define_backend(module)


def install():
    """Makes einops accept ignis tensors, now or when einops is imported."""
    mod = sys.modules.get(_BACKENDS_MODULE)
    if mod is not None:
        _define_backend(mod)
    elif not any(isinstance(f, _AfterEinopsBackends) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterEinopsBackends())

"""einops's layers over ignis: what `einops.layers.torch` is for torch.

    from ignis.utils.einops import Rearrange, Reduce

`einops.layers.torch` builds its layers on real torch's `nn.Module`; these
are the same layers on ignis's `nn.Module` (einops's mixins parse the pattern
and apply the recipe through the ignis backend, see ignis._einops), so they
sit in ignis models, state_dicts and compiled graphs. They live among the
layers because capture inlines layers' methods as model code (ignis's other
modules it does not trace). einops's EinMix is missing: ignis has no einsum.
Needs einops.
"""
from einops.layers import RearrangeMixin, ReduceMixin

from ..._einops import install
from .module import Module

install()

__all__ = ["Rearrange", "Reduce"]


class Rearrange(RearrangeMixin, Module):
    def forward(self, input):
        return self._apply_recipe(input)


class Reduce(ReduceMixin, Module):
    def forward(self, input):
        return self._apply_recipe(input)

"""einops's layers over ignis: what `einops.layers.torch` is for torch.

    from ignis.utils.einops import Rearrange, Reduce, EinMix

(that module re-exports these; they live among the layers because capture
inlines layers' methods as model code, and ignis's other modules not).
`einops.layers.torch` builds its layers on real torch's `nn.Module`; these
are the same layers (einops's mixins parse the pattern and apply the recipe
through the ignis backend, see ignis._einops) on ignis's `nn.Module`, so they
sit in ignis models, state_dicts and compiled graphs. Needs einops.
"""
from einops.layers import RearrangeMixin, ReduceMixin
from einops.layers._einmix import _EinmixMixin

from ... import einsum, zeros
from ..._einops import install
from ..parameter import Parameter
from .module import Module

install()

__all__ = ["Rearrange", "Reduce", "EinMix"]


class Rearrange(RearrangeMixin, Module):
    def forward(self, input):
        return self._apply_recipe(input)


class Reduce(ReduceMixin, Module):
    def forward(self, input):
        return self._apply_recipe(input)


class EinMix(_EinmixMixin, Module):
    def _create_parameters(self, weight_shape, weight_bound, bias_shape, bias_bound):
        self.weight = Parameter(zeros(weight_shape).uniform_(-weight_bound, weight_bound))
        self.bias = None if bias_shape is None else Parameter(
            zeros(bias_shape).uniform_(-bias_bound, bias_bound))

    def _create_rearrange_layers(self, pre_reshape_pattern, pre_reshape_lengths,
                                 post_reshape_pattern, post_reshape_lengths):
        self.pre_rearrange = None if pre_reshape_pattern is None else Rearrange(
            pre_reshape_pattern, **pre_reshape_lengths)
        self.post_rearrange = None if post_reshape_pattern is None else Rearrange(
            post_reshape_pattern, **post_reshape_lengths)

    def forward(self, input):
        if self.pre_rearrange is not None:
            input = self.pre_rearrange(input)
        result = einsum(self.einsum_pattern, input, self.weight)
        if self.bias is not None:
            result = result + self.bias
        if self.post_rearrange is not None:
            result = self.post_rearrange(result)
        return result

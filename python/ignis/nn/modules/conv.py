"""Conv1d/2d/3d and ConvTranspose1d/2d/3d: parameters plus F.conv*.

Construction, parameter shapes and initialisation follow PyTorch's
_ConvNd (kaiming-uniform(a=sqrt(5)) weight, U(-1/sqrt(fan_in), ...) bias),
so a state_dict moves between the two unchanged.
"""
import math

import ignis
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(v, n):
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return (v,) * n


class _ConvNd(Module):
    _nd = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, nd)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, nd)
        self.stride = _ntuple(stride, nd)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, nd)
        self.dilation = _ntuple(dilation, nd)
        self.output_padding = _ntuple(output_padding, nd)
        self.transposed = self._transposed
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's argument for the non-zero padding modes: last dim first.
        if isinstance(self.padding, str):
            pad = []
            if self.padding == "same":
                for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                    total = d * (k - 1)
                    pad += [total // 2, total - total // 2]
            else:
                pad = [0, 0] * nd
            self._reversed_padding_repeated_twice = pad
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding)
                                                     for _ in range(2)]
        fk = {"device": device, "dtype": dtype}
        if self.transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(ignis.empty(shape, **fk))
        if bias:
            self.bias = Parameter(ignis.empty(out_channels, **fk))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class _Conv(_ConvNd):
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         0, groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        fn = type(self)._fn
        if self.padding_mode != "zeros":
            return fn(F.pad(input, self._reversed_padding_repeated_twice,
                            mode=self.padding_mode),
                      weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    _nd = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    _nd = 2
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    _nd = 3
    _fn = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _transposed = True
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        """The output_padding that makes the output `output_size` (torch's rule)."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        output_size = list(output_size)
        if len(output_size) == nd + 2 or (len(output_size) == nd + 1 and input.dim() == nd + 1):
            output_size = output_size[-nd:]
        if len(output_size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.dim()}D input, output_size must "
                             f"have {nd} or {nd + 2} elements (got {len(output_size)})")
        result = []
        for d in range(nd):
            size = input.shape[input.dim() - nd + d]
            smallest = ((size - 1) * self.stride[d] - 2 * self.padding[d]
                        + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            largest = smallest + self.stride[d] - 1
            if not smallest <= output_size[d] <= largest:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {smallest} to {largest} (for an input of "
                                 f"{list(input.shape)[2:]})")
            result.append(output_size[d] - smallest)
        return tuple(result)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding,
                              output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    _nd = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    _nd = 2
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    _nd = 3
    _fn = staticmethod(F.conv_transpose3d)


class _LazyConvMixin(LazyModuleMixin):
    """torch's _LazyConvXdMixin: in_channels (and the weight's shape) from
    the first input's channel dim (dim 1, or 0 for an unbatched input)."""

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            with ignis.no_grad():
                if self.transposed:
                    self.weight.materialize((self.in_channels, self.out_channels // self.groups,
                                             *self.kernel_size))
                else:
                    self.weight.materialize((self.out_channels, self.in_channels // self.groups,
                                             *self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()

    def _get_in_channels(self, input):
        batched = self._nd + 2
        if input.dim() not in (batched - 1, batched):
            raise RuntimeError(f"Expected {batched - 1}D (unbatched) or {batched}D (batched) "
                               f"input to {self.__class__.__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.dim() == batched else input.shape[0]


def _lazy_conv(conv_cls):
    """LazyConv{1,2,3}d: Conv's arguments without in_channels."""
    class LazyConv(_LazyConvMixin, conv_cls):
        cls_to_become = conv_cls

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                     bias=True, padding_mode="zeros", device=None, dtype=None):
            super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                             padding_mode, device=device, dtype=dtype)
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.out_channels = out_channels
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
    LazyConv.__name__ = LazyConv.__qualname__ = "Lazy" + conv_cls.__name__
    LazyConv.__doc__ = (f"torch.nn.Lazy{conv_cls.__name__}: a {conv_cls.__name__} whose "
                        "in_channels comes from its first input; it then becomes a "
                        f"{conv_cls.__name__}.")
    return LazyConv


def _lazy_conv_transpose(conv_cls):
    """LazyConvTranspose{1,2,3}d: ConvTranspose's arguments without in_channels."""
    class LazyConvTranspose(_LazyConvMixin, conv_cls):
        cls_to_become = conv_cls

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                     groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                     dtype=None):
            super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                             dilation, padding_mode, device=device, dtype=dtype)
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.out_channels = out_channels
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
    LazyConvTranspose.__name__ = LazyConvTranspose.__qualname__ = "Lazy" + conv_cls.__name__
    LazyConvTranspose.__doc__ = (f"torch.nn.Lazy{conv_cls.__name__}: a {conv_cls.__name__} "
                                 "whose in_channels comes from its first input; it then "
                                 f"becomes a {conv_cls.__name__}.")
    return LazyConvTranspose


LazyConv1d = _lazy_conv(Conv1d)
LazyConv2d = _lazy_conv(Conv2d)
LazyConv3d = _lazy_conv(Conv3d)
LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d)

"""ignis.nn.utils: gradient clipping, packed sequences (rnn), parameter
vectors, conv/linear + BatchNorm fusion, the hook-based weight_norm and
spectral_norm, parametrizations (parametrize, parametrizations) and
stateless.functional_call."""
from .clip_grad import (clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,  # noqa: F401
                        get_total_norm)
from . import rnn  # noqa: F401
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .fusion import (  # noqa: F401
    fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights)
from . import fusion  # noqa: F401
from .weight_norm import weight_norm, remove_weight_norm  # noqa: F401
from .spectral_norm import spectral_norm, remove_spectral_norm  # noqa: F401
from . import parametrize  # noqa: F401
from . import parametrizations  # noqa: F401
from . import stateless  # noqa: F401
from .init import skip_init  # noqa: F401
from .memory_format import (  # noqa: F401
    convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The deprecated name of clip_grad_norm_ (warns, as torch's)."""
    import warnings
    warnings.warn("nn.utils.clip_grad_norm is deprecated in favor of nn.utils.clip_grad_norm_.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)

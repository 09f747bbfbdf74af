"""ignis: a deep-learning compiler stack with a PyTorch-shaped API.

`import ignis as torch` runs ordinary eager PyTorch code written against the
supported subset. Operators are declared once in C++ (src/ignis/ops); this
package attaches each declared op as a function here and as a method of
ignis.Tensor.
"""
import os as _os

# OpenMP threads spin ~300k iterations waiting for the next parallel region
# (libgomp's default). On a machine of few cores that others compete for, a
# spinning worker holds the core its partner needs, and the region waits about
# as long as the spin lasts (an op of 40k floats on 2 threads beside a 2-job
# build: 8 ms at 300k spins, 0.5 ms at 10^4, 62 us at 10^3, 14 us with no
# spin), so there workers spin briefly, then sleep: 1000 spins, which on
# this VM's quiet 2 cores cost nothing against 10^4 and under one or two
# competing processes took the example GPT's training step from 52-61 ms
# to 19-21 (docs/benchmarks.md, "Threads under load"; not spinning at all was
# as good under load and 38% slower quiet). With more cores the short spin
# costs more than it saves: a worker that slept is woken by a futex at the
# next region (the training step on 16 cores: 6.5 ms with GOMP_SPINCOUNT=10000,
# 5.9 with 10^6, eager and compiled alike), so there libgomp's default stays,
# as in torch. Settings the user made win. Read by libgomp when ignis._C
# loads it.
def _short_spin_wanted(env=_os.environ):
    if "OMP_WAIT_POLICY" in env or "GOMP_SPINCOUNT" in env:
        return False
    try:
        cpus = len(_os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = _os.cpu_count() or 1
    return cpus <= 4


if _short_spin_wanted():
    _os.environ["GOMP_SPINCOUNT"] = "1000"

from . import _C  # noqa: E402
from ._C import (  # noqa: E402,F401
    dtype, device, bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
    complex64, complex128, initial_seed, get_default_dtype, promote_types, can_cast,
    get_num_threads, set_num_threads,
    memory_format, contiguous_format, preserve_format, channels_last, channels_last_3d,
    layout, strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc,
)

# PyTorch's dtype aliases.
half = float16
float = float32  # noqa: A001
double = float64
cfloat = complex64
cdouble = complex128
short = int16
int = int32  # noqa: A001
long = int64
uint8 = uint8

from ._size import Size, SymInt  # noqa: E402,F401
from ._tensor import Tensor  # noqa: E402
from . import _legacy_types  # noqa: E402
_legacy_types.install(globals())  # FloatTensor, LongTensor, ...
from . import _ops  # noqa: E402

_ops.install(globals(), Tensor)

from ._creation import tensor, as_tensor, from_numpy, asarray, scalar_tensor  # noqa: E402,F401
from ._functions import *  # noqa: E402,F401,F403
from ._more_functions import *  # noqa: E402,F401,F403
from ._nn_top_level import *  # noqa: E402,F401,F403
from ._torch_extras import *  # noqa: E402,F401,F403
from .functional import *  # noqa: E402,F401,F403
from . import functional  # noqa: E402,F401
from ._dtype_info import finfo, iinfo  # noqa: E402,F401
from ._generator import Generator, default_generator  # noqa: E402,F401
from . import _random  # noqa: E402
from ._random import normal, bernoulli, poisson, binomial  # noqa: E402,F401
_random.install(Tensor)
from . import random  # noqa: E402,F401
from . import autograd  # noqa: E402,F401
from .autograd import (  # noqa: E402,F401
    no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
    is_inference_mode_enabled, is_anomaly_enabled, is_anomaly_check_nan_enabled,
    set_anomaly_enabled,
)
autograd._install(globals(), Tensor)
from . import nn  # noqa: E402,F401
from . import optim  # noqa: E402,F401
from . import testing  # noqa: E402,F401
from . import fx, compiler  # noqa: E402,F401
from . import linalg, special, fft  # noqa: E402,F401
from ._spectral import stft, istft  # noqa: E402,F401
Tensor.stft = stft
Tensor.istft = istft
from ._storage import UntypedStorage, TypedStorage, install as _install_storage  # noqa: E402,F401
_install_storage(Tensor)
from . import func  # noqa: E402,F401
from .func import vmap  # noqa: E402,F401
from . import cpu  # noqa: E402,F401
from . import cuda  # noqa: E402,F401
from . import amp  # noqa: E402,F401
from .amp import autocast  # noqa: E402,F401
from .amp.autocast_mode import (  # noqa: E402,F401
    is_autocast_enabled, set_autocast_enabled, get_autocast_dtype, set_autocast_dtype,
    is_autocast_cache_enabled, set_autocast_cache_enabled, clear_autocast_cache,
    autocast_increment_nesting, autocast_decrement_nesting, is_autocast_cpu_enabled,
    set_autocast_cpu_enabled, get_autocast_cpu_dtype, set_autocast_cpu_dtype,
    get_autocast_gpu_dtype, set_autocast_gpu_dtype,
)
from ._C import OutOfMemoryError  # noqa: E402,F401
from ._compile import compile  # noqa: E402,F401,A001
from . import _dynamo  # noqa: E402,F401
from . import _logging  # noqa: E402,F401
from . import utils  # noqa: E402,F401
from . import backends, accelerator, multiprocessing, onnx  # noqa: E402,F401
from . import profiler  # noqa: E402,F401
from .serialization import save, load  # noqa: E402,F401
from ._checks import (  # noqa: E402,F401
    _check, _check_index, _check_is_size, _check_not_implemented, _check_tensor_all,
    _check_type, _check_value, _check_with)
from ._einops import install as _install_einops  # noqa: E402
_install_einops()  # einops (when a program uses it) accepts ignis tensors
from .utils.dlpack import from_dlpack  # noqa: E402,F401


# GradScaler's ops under torch's top-level names (ops starting with "_" are
# otherwise only in ignis.ops).
_amp_foreach_non_finite_check_and_unscale_ = ops._amp_foreach_non_finite_check_and_unscale_
_amp_update_scale_ = ops._amp_update_scale_


def nonzero(input, *, as_tuple=False):
    """Indices of non-zero elements: an [n, ndim] tensor, or one tensor per dim."""
    return input.nonzero(as_tuple=as_tuple)


def set_default_dtype(d):
    """Sets the default floating dtype (float32 unless changed)."""
    _C.set_default_dtype(d)


def set_float32_matmul_precision(precision):
    """"highest" (the default): float32 matrix products in full float32; "high" or
    "medium": TF32 on CUDA tensor cores (ignis.backends.cuda.matmul.allow_tf32), as torch."""
    backends.cuda._set_precision(precision)


def get_float32_matmul_precision():
    return backends.cuda._get_precision()


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(t):
    return t.dtype.is_floating_point


def numel(t):
    return t.numel()


__version__ = "0.1.0"


# Submodules torch imports with itself but that cost ignis's import time
# (`ignis.distributions`: ~30 ms): loaded on first access (PEP 562), so
# `torch.distributions.Normal` works without an import of its own.
_LAZY_SUBMODULES = ("distributions", "jit")


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'ignis' has no attribute '{name}'")

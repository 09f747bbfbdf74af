"""ignis.backends.cuda: the CUDA math settings, as torch.backends.cuda.

``matmul.allow_tf32`` (default False, as torch) lets float32 matrix products on
the GPU run in TF32 on the tensor cores (cuBLASLt's CUBLAS_COMPUTE_32F_FAST_TF32).
It is one setting with ``ignis.set_float32_matmul_precision``: "highest" is
allow_tf32 False, "high" and "medium" are True, as in torch.
"""
from .. import _C

_PRECISIONS = ("highest", "high", "medium")
_precision = "highest"


def _set_precision(p):
    global _precision
    if p not in _PRECISIONS:
        raise RuntimeError(f"Invalid precision {p!r}: expected one of 'highest', 'high', 'medium'")
    _precision = p
    _C._cuda_blas_set_allow_tf32(p != "highest")


def _get_precision():
    return _precision


class _MatmulSettings:
    def __init__(self):
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self):
        return _precision != "highest"

    @allow_tf32.setter
    def allow_tf32(self, on):
        _set_precision("high" if on else "highest")


matmul = _MatmulSettings()


def is_built():
    """Whether this build of ignis has CUDA support."""
    try:
        from .. import cuda
    except ImportError:
        return False
    return bool(getattr(cuda, "is_available", lambda: False)())

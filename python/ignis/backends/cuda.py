"""ignis.backends.cuda: the CUDA math settings scripts write. They are kept
as set; ignis's CUDA backend (ignis.cuda) decides its own precision."""


class _MatmulSettings:
    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


matmul = _MatmulSettings()


def is_built():
    """Whether this build of ignis has CUDA support."""
    try:
        from .. import cuda
    except ImportError:
        return False
    return bool(getattr(cuda, "is_available", lambda: False)())

"""ignis.backends: which compute libraries ignis uses, answering as
torch.backends does. On the CPU ignis runs its own kernels and OpenBLAS, so
cudnn, mkldnn and mps report not available; the settings scripts write
(cudnn.benchmark, ...) are kept and change nothing, except
cuda.matmul.allow_tf32, which selects TF32 for float32 products on the GPU."""
from . import cpu, cuda, cudnn, mkldnn, mps, openmp  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "openmp"]

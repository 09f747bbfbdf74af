from .module import Module, RemovableHandle  # noqa: F401
from .linear import Identity, Linear, NonDynamicallyQuantizableLinear  # noqa: F401
from .activation import (  # noqa: F401
    ReLU, GELU, SiLU, Tanh, Sigmoid, Softmax, MultiheadAttention,
)
from .normalization import LayerNorm, RMSNorm  # noqa: F401
from .sparse import Embedding  # noqa: F401
from .dropout import Dropout  # noqa: F401
from .loss import CrossEntropyLoss, MSELoss  # noqa: F401
from .container import Sequential, ModuleList, ModuleDict  # noqa: F401

__all__ = [
    "Module", "RemovableHandle", "Identity", "Linear", "NonDynamicallyQuantizableLinear",
    "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "MultiheadAttention", "LayerNorm",
    "RMSNorm", "Embedding", "Dropout", "CrossEntropyLoss", "MSELoss", "Sequential", "ModuleList",
    "ModuleDict",
]

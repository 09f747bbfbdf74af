from .module import Module, RemovableHandle  # noqa: F401
from .linear import Identity, Linear, NonDynamicallyQuantizableLinear  # noqa: F401
from .activation import (  # noqa: F401
    ReLU, GELU, SiLU, Tanh, Sigmoid, Softmax, MultiheadAttention,
    LeakyReLU, ELU, CELU, SELU, ReLU6, Hardswish, Hardsigmoid, Mish, Hardtanh, Softplus,
    Softsign, Tanhshrink, LogSigmoid, Threshold, LogSoftmax, Softmin, PReLU,
)
from .normalization import LayerNorm, RMSNorm  # noqa: F401
from .sparse import Embedding  # noqa: F401
from .dropout import Dropout  # noqa: F401
from .loss import (  # noqa: F401
    CrossEntropyLoss, MSELoss, L1Loss, SmoothL1Loss, HuberLoss, KLDivLoss, NLLLoss, BCELoss,
    BCEWithLogitsLoss,
)
from .container import Sequential, ModuleList, ModuleDict  # noqa: F401

__all__ = [
    "Module", "RemovableHandle", "Identity", "Linear", "NonDynamicallyQuantizableLinear",
    "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "MultiheadAttention", "LayerNorm",
    "RMSNorm", "Embedding", "Dropout", "CrossEntropyLoss", "MSELoss", "Sequential", "ModuleList",
    "ModuleDict",
    "LeakyReLU", "ELU", "CELU", "SELU", "ReLU6", "Hardswish", "Hardsigmoid", "Mish", "Hardtanh",
    "Softplus", "Softsign", "Tanhshrink", "LogSigmoid", "Threshold", "LogSoftmax", "Softmin",
    "PReLU", "L1Loss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "NLLLoss", "BCELoss",
    "BCEWithLogitsLoss",
]

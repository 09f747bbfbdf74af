from .module import Module, RemovableHandle  # noqa: F401
from .linear import (  # noqa: F401
    Identity, Linear, NonDynamicallyQuantizableLinear, Bilinear, LazyLinear,
)
from .lazy import LazyModuleMixin  # noqa: F401
from .activation import (  # noqa: F401
    ReLU, GELU, SiLU, Tanh, Sigmoid, Softmax, MultiheadAttention,
    LeakyReLU, ELU, CELU, SELU, ReLU6, Hardswish, Hardsigmoid, Mish, Hardtanh, Softplus,
    Softsign, Tanhshrink, LogSigmoid, Threshold, LogSoftmax, Softmin, PReLU, RReLU, Softmax2d,
    GLU, Hardshrink, Softshrink,
)
from .normalization import (  # noqa: F401
    BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm, GroupNorm, InstanceNorm1d,
    InstanceNorm2d, InstanceNorm3d, LayerNorm,
    RMSNorm, LocalResponseNorm, CrossMapLRN2d,
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyInstanceNorm1d, LazyInstanceNorm2d,
    LazyInstanceNorm3d,
)
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .dropout import (  # noqa: F401
    Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout, FeatureAlphaDropout,
)
from .loss import (  # noqa: F401
    CrossEntropyLoss, CTCLoss, MSELoss, L1Loss, SmoothL1Loss, HuberLoss, KLDivLoss, NLLLoss,
    LinearCrossEntropyLoss, LinearCrossEntropyOptions,
    NLLLoss2d,
    BCELoss,
    BCEWithLogitsLoss, MarginRankingLoss, HingeEmbeddingLoss, CosineEmbeddingLoss,
    SoftMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, MultiLabelMarginLoss,
    TripletMarginLoss, TripletMarginWithDistanceLoss, GaussianNLLLoss, PoissonNLLLoss,
)
from .conv import (  # noqa: F401
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
    LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,
    LazyConvTranspose3d,
)
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from .pooling import (  # noqa: F401
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
    AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d,
    LPPool1d, LPPool2d, LPPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, FractionalMaxPool2d,
    FractionalMaxPool3d,
)
from .upsampling import (  # noqa: F401
    PixelShuffle, PixelUnshuffle, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d,
    ChannelShuffle,
)
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401
from .transformer import (  # noqa: F401
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
)
from .container import (  # noqa: F401
    Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict,
)
from .padding import (  # noqa: F401
    ConstantPad1d, ConstantPad2d, ConstantPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d,
    ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
    ReplicationPad3d, CircularPad1d, CircularPad2d, CircularPad3d,
)
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401

__all__ = [
    "Module", "RemovableHandle", "Identity", "Linear", "NonDynamicallyQuantizableLinear",
    "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "MultiheadAttention", "LayerNorm",
    "RMSNorm", "Embedding", "Dropout", "CrossEntropyLoss", "LinearCrossEntropyLoss",
    "LinearCrossEntropyOptions", "CTCLoss", "MSELoss", "Sequential",
    "ModuleList",
    "ModuleDict",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "GroupNorm", "InstanceNorm1d",
    "InstanceNorm2d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
    "PixelUnshuffle",
    "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "LeakyReLU", "ELU", "CELU", "SELU", "ReLU6", "Hardswish", "Hardsigmoid", "Mish", "Hardtanh",
    "Softplus", "Softsign", "Tanhshrink", "LogSigmoid", "Threshold", "LogSoftmax", "Softmin",
    "PReLU", "RReLU", "L1Loss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "NLLLoss", "BCELoss",
    "BCEWithLogitsLoss", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell",
    "GRUCell", "Transformer", "TransformerEncoder", "TransformerDecoder",
    "TransformerEncoderLayer", "TransformerDecoderLayer", "Flatten", "Unflatten",
    "ParameterList", "ParameterDict", "Dropout1d", "Dropout2d", "Dropout3d", "Softmax2d", "GLU",
    "CosineSimilarity", "PairwiseDistance", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d",
    "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "Fold", "Unfold",
    "Bilinear", "LazyLinear", "LazyModuleMixin", "Hardshrink", "Softshrink", "LocalResponseNorm",
    "CrossMapLRN2d",
    "AlphaDropout", "FeatureAlphaDropout", "MarginRankingLoss", "HingeEmbeddingLoss",
    "CosineEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss",
    "MultiLabelMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss",
    "GaussianNLLLoss", "PoissonNLLLoss", "LPPool1d", "LPPool2d", "LPPool3d",
    "ChannelShuffle",
    "EmbeddingBag", "InstanceNorm3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d",
    "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d", "FractionalMaxPool3d",
    "NLLLoss2d", "AdaptiveLogSoftmaxWithLoss",
    "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
    "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
    "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
]

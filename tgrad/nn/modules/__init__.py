"""The layers of tgrad.nn, one family per file."""

from tgrad.nn.modules.activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    RReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from tgrad.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss
from tgrad.nn.modules.attention import MultiheadAttention
from tgrad.nn.modules.batchnorm import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    SyncBatchNorm,
)
from tgrad.nn.modules.container import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from tgrad.nn.modules.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from tgrad.nn.modules.dropout import (
    AlphaDropout,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
)
from tgrad.nn.modules.flatten import Flatten, Fold, Unflatten, Unfold
from tgrad.nn.modules.linear import Bilinear, Identity, Linear
from tgrad.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from tgrad.nn.modules.module import Module
from tgrad.nn.modules.normalization import (
    CrossMapLRN2d,
    GroupNorm,
    LayerNorm,
    LocalResponseNorm,
    RMSNorm,
)
from tgrad.nn.modules.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    FractionalMaxPool2d,
    FractionalMaxPool3d,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)
from tgrad.nn.modules.rnn import (
    GRU,
    LSTM,
    RNN,
    GRUCell,
    LSTMCell,
    RNNBase,
    RNNCell,
    RNNCellBase,
)
from tgrad.nn.modules.sparse import Embedding, EmbeddingBag
from tgrad.nn.modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from tgrad.nn.modules.upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "Linear", "Bilinear", "Identity",
           "Flatten",
           "Unflatten", "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
           "Softmin", "LeakyReLU", "ELU", "SELU", "Softplus", "Hardtanh", "ReLU6",
           "LogSigmoid", "Mish", "GLU", "LayerNorm", "Dropout", "Embedding", "EmbeddingBag",
           "CrossEntropyLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss",
           "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "Conv1d", "Conv2d", "MaxPool1d",
           "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "BatchNorm1d", "BatchNorm2d", "InstanceNorm1d", "InstanceNorm2d", "GroupNorm",
           "RMSNorm", "MultiheadAttention", "Hardswish", "Hardsigmoid", "Softsign",
           "Tanhshrink", "Softshrink", "Hardshrink", "CELU", "Threshold", "PReLU",
           "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
           "ConvTranspose1d", "ConvTranspose2d", "Upsample", "UpsamplingNearest2d",
           "UpsamplingBilinear2d"]
__all__ += ["ParameterList", "ParameterDict", "Dropout1d", "Dropout2d", "Dropout3d"]
__all__ += ["Conv3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d",
            "RReLU", "AlphaDropout", "FeatureAlphaDropout", "LocalResponseNorm", "LPPool1d",
            "CrossMapLRN2d", "LPPool2d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
            "ConvTranspose3d", "FractionalMaxPool2d", "FractionalMaxPool3d",
            "LPPool3d", "BatchNorm3d", "InstanceNorm3d", "Fold", "Unfold"]
__all__ += ["AdaptiveLogSoftmaxWithLoss", "SyncBatchNorm"]
__all__ += ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
            "TransformerDecoderLayer"]

# Lazy layers (shapes inferred on the first forward).
from tgrad.nn.modules import lazy  # noqa: E402
from tgrad.nn.modules.lazy import *  # noqa: E402,F401,F403

__all__ += lazy.__all__

# More losses, distances, shuffles and padding layers.
from tgrad.nn.modules import distance, loss_extra, padding, pixelshuffle  # noqa: E402
from tgrad.nn.modules.distance import *  # noqa: E402,F401,F403
from tgrad.nn.modules.loss_extra import *  # noqa: E402,F401,F403
from tgrad.nn.modules.padding import *  # noqa: E402,F401,F403
from tgrad.nn.modules.pixelshuffle import *  # noqa: E402,F401,F403

__all__ += (distance.__all__ + loss_extra.__all__ + padding.__all__
            + pixelshuffle.__all__)

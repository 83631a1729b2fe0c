"""The layers of tgrad.nn, one family per file."""

from tgrad.nn.modules.activation import (
    ELU,
    GELU,
    GLU,
    SELU,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Tanh,
)
from tgrad.nn.modules.container import ModuleDict, ModuleList, Sequential
from tgrad.nn.modules.dropout import Dropout
from tgrad.nn.modules.flatten import Flatten, Unflatten
from tgrad.nn.modules.linear import Identity, Linear
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
from tgrad.nn.modules.normalization import LayerNorm
from tgrad.nn.modules.sparse import Embedding

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "Linear", "Identity", "Flatten",
           "Unflatten", "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
           "Softmin", "LeakyReLU", "ELU", "SELU", "Softplus", "Hardtanh", "ReLU6",
           "LogSigmoid", "Mish", "GLU", "LayerNorm", "Dropout", "Embedding",
           "CrossEntropyLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss",
           "BCELoss", "BCEWithLogitsLoss", "KLDivLoss"]

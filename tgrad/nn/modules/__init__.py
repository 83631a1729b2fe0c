"""The layers of tgrad.nn, one family per file."""

from tgrad.nn.modules.activation import GELU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from tgrad.nn.modules.container import ModuleList, Sequential
from tgrad.nn.modules.dropout import Dropout
from tgrad.nn.modules.linear import Identity, Linear
from tgrad.nn.modules.loss import CrossEntropyLoss, MSELoss
from tgrad.nn.modules.module import Module
from tgrad.nn.modules.normalization import LayerNorm
from tgrad.nn.modules.sparse import Embedding

__all__ = ["Module", "Sequential", "ModuleList", "Linear", "Identity", "ReLU", "GELU", "SiLU",
           "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "LayerNorm", "Dropout", "Embedding",
           "CrossEntropyLoss", "MSELoss"]

"""tgrad.optim: Optimizer, SGD, Adam, AdamW, RMSprop, Adagrad (PyTorch's update rules) and
lr_scheduler."""

from tgrad.optim import lr_scheduler
from tgrad.optim.adam import Adam, AdamW
from tgrad.optim.optimizer import Optimizer
from tgrad.optim.rmsprop import Adagrad, RMSprop
from tgrad.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]

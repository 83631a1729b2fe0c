"""tgrad.optim: Optimizer, SGD, Adam, AdamW, RMSprop, Adagrad, NAdam, RAdam, Adamax, Adadelta,
Rprop, ASGD, LBFGS, Adafactor, SparseAdam (PyTorch's update rules), lr_scheduler and
swa_utils."""

from tgrad.optim import lr_scheduler, swa_utils
from tgrad.optim.adadelta import Adadelta
from tgrad.optim.adafactor import Adafactor
from tgrad.optim.adam import Adam, AdamW
from tgrad.optim.adamax import Adamax
from tgrad.optim.asgd import ASGD
from tgrad.optim.lbfgs import LBFGS
from tgrad.optim.nadam import NAdam
from tgrad.optim.optimizer import Optimizer
from tgrad.optim.radam import RAdam
from tgrad.optim.rmsprop import Adagrad, RMSprop
from tgrad.optim.rprop import Rprop
from tgrad.optim.sgd import SGD
from tgrad.optim.sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam",
           "Adamax", "Adadelta", "Rprop", "ASGD", "LBFGS", "Adafactor", "SparseAdam",
           "lr_scheduler", "swa_utils"]

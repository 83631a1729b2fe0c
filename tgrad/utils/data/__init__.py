"""tgrad.utils.data: PyTorch's data-loading API (torch.utils.data) in pure Python.

Datasets (``Dataset``, ``IterableDataset``, ``TensorDataset``, ``Subset``,
``ConcatDataset``, ``ChainDataset``, ``StackDataset``, ``random_split``), samplers
(``Sampler``, ``SequentialSampler``, ``RandomSampler``, ``SubsetRandomSampler``,
``WeightedRandomSampler``, ``BatchSampler``, ``DistributedSampler``), ``DataLoader`` and
the collate functions
(``default_collate``, ``default_convert``). ``num_workers > 0`` loads in worker
processes (see tgrad/utils/data/dataloader.py for the differences from PyTorch).
"""

from tgrad.utils.data._collate import default_collate, default_convert
from tgrad.utils.data.dataloader import DataLoader, get_worker_info
from tgrad.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from tgrad.utils.data.distributed import DistributedSampler
from tgrad.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler",
           "SequentialSampler", "StackDataset", "Subset",
           "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "default_collate",
           "default_convert", "get_worker_info", "random_split"]

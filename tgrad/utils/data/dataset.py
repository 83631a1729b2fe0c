"""Datasets (PyTorch's torch.utils.data.dataset).

A map-style ``Dataset`` maps keys (usually ints ``0 .. len - 1``) to samples through
``__getitem__`` (and, optionally, a batched ``__getitems__(list_of_keys) -> list``); an
``IterableDataset`` yields its samples from ``__iter__``. ``TensorDataset`` indexes tensors
along dim 0, ``Subset`` / ``ConcatDataset`` / ``ChainDataset`` view other datasets, and
``random_split`` shuffles a dataset into non-overlapping ``Subset``s.
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from tgrad.tensor import Tensor
from tgrad.utils.data.sampler import _randperm

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset",
           "Subset", "StackDataset", "random_split"]

_T_co = TypeVar("_T_co", covariant=True)


class Dataset(Generic[_T_co]):
    """Base class of map-style datasets: subclasses define ``__getitem__`` (and usually
    ``__len__``, which the default samplers need). ``a + b`` is ``ConcatDataset([a, b])``."""

    def __getitem__(self, index) -> _T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[_T_co]) -> ConcatDataset[_T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co]):
    """Base class of iterable-style datasets: subclasses define ``__iter__``. ``a + b`` is
    ``ChainDataset([a, b])``. A DataLoader with ``num_workers > 0`` iterates a copy in
    every worker: shard the samples with ``get_worker_info()`` (None in the main
    process)."""

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset[_T_co]) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple]):
    """Samples ``(t[i] for t in tensors)``: every tensor indexed along dim 0, so all of
    them must have the same size N of dim 0 (the dataset's length)."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset: expected at least one tensor")
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class ConcatDataset(Dataset[_T_co]):
    """The map-style ``datasets`` one after another: index i reads the dataset whose range
    (``cumulative_sizes``) holds i. Negative indices count from the end."""

    @staticmethod
    def cumsum(sequence: Iterable) -> list[int]:
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        super().__init__()
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class StackDataset(Dataset):
    """Several datasets of one length read together: ``StackDataset(a, b)[i]`` is
    ``(a[i], b[i])`` and ``StackDataset(x=a, y=b)[i]`` is ``{"x": a[i], "y": b[i]}``;
    ``__getitems__`` uses the datasets' own batched reads where they have one."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args:
            if kwargs:
                raise ValueError("Supported either ``tuple``- (via ``args``) or"
                                 "``dict``- (via ``kwargs``) like input/output, but both "
                                 "types are given.")
            self._length = len(args[0])
            if any(self._length != len(d) for d in args):
                raise ValueError("Size mismatch between datasets")
            self.datasets: tuple | dict = args
        elif kwargs:
            tmp = list(kwargs.values())
            self._length = len(tmp[0])
            if any(self._length != len(d) for d in tmp):
                raise ValueError("Size mismatch between datasets")
            self.datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def _column(self, dataset: Dataset, indices: list) -> list:
        if callable(getattr(dataset, "__getitems__", None)):
            items = dataset.__getitems__(indices)
            if len(items) != len(indices):
                raise ValueError("Nested dataset's output size mismatch."
                                 f" Expected {len(indices)}, got {len(items)}")
            return list(items)
        return [dataset[i] for i in indices]

    def __getitems__(self, indices: list) -> list:
        if isinstance(self.datasets, dict):
            cols = {k: self._column(d, indices) for k, d in self.datasets.items()}
            return [{k: c[j] for k, c in cols.items()} for j in range(len(indices))]
        cols = [self._column(d, indices) for d in self.datasets]
        return [tuple(c[j] for c in cols) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ChainDataset(IterableDataset):
    """The iterable ``datasets`` chained: all samples of the first, then the second, ..."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        super().__init__()
        self.datasets = datasets

    def __iter__(self) -> Iterator:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset[_T_co]):
    """The samples of ``dataset`` at ``indices``: ``Subset(d, idx)[i]`` is ``d[idx[i]]``."""

    def __init__(self, dataset: Dataset[_T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        if (type(self).__getitem__ is not Subset.__getitem__
                and type(self).__getitems__ is Subset.__getitems__):
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        # batched reads when the parent dataset has them (the DataLoader calls this)
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence[int | float],
                 generator: Any = None) -> list[Subset]:
    """Split ``dataset`` into non-overlapping ``Subset``s of the given ``lengths``, drawn
    from one random permutation of its indices. ``lengths`` are ints summing to
    ``len(dataset)``, or fractions summing to 1: ``floor(len * frac)`` each, then the
    remainder dealt out one by one from the first split. ``generator``: None (tgrad's
    global generator, seeded by ``tgrad.manual_seed``), a CPU ``tgrad.Generator`` or a
    ``numpy.random.Generator``."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths: list[int] = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(len(dataset) * frac))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):  # round-robin until the remainder is spent
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. "
                              f"This might result in an empty dataset.", stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = _randperm(sum(lengths), generator, "random_split")
    return [Subset(dataset, indices[offset - length: offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]

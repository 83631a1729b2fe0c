"""Samplers (PyTorch's torch.utils.data.sampler): iterables of dataset indices.

``Sampler`` yields keys (ints) for a map-style dataset; ``BatchSampler`` groups another
sampler's keys into lists of ``batch_size``. Random samplers take PyTorch's
``generator=``: ``None`` draws from tgrad's global CPU generator (the one
``tgrad.manual_seed`` seeds), so shuffling is reproducible under ``tgrad.manual_seed(s)``;
an explicit generator is a CPU ``tgrad.Generator`` (``tgrad.Generator().manual_seed(42)``,
drawn from and advanced as PyTorch's) or a ``numpy.random.Generator``.
Indices are drawn on the host with NumPy: they are Python ints, not tensor data.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]

_T_co = TypeVar("_T_co", covariant=True)


def _rng(generator: Any, op: str) -> np.random.Generator:
    """The NumPy generator to draw indices from. ``None``: a fresh one seeded by one draw of
    tgrad's global CPU generator (as PyTorch seeds a private torch.Generator from the
    global one), so the result follows ``tgrad.manual_seed``."""
    if generator is None:
        from tgrad import int64, randint
        seed = int(randint(0, 2 ** 53, (), dtype=int64, device="cpu").item())
        return np.random.default_rng(seed)
    if isinstance(generator, np.random.Generator):
        return generator
    from tgrad.generator import Generator
    if isinstance(generator, Generator):
        if generator.device.type != "cpu":
            raise RuntimeError(f"{op}: expected a 'cpu' device type for generator but found "
                               f"'{generator.device.type}'")
        return generator._np
    raise TypeError(f"{op}: generator must be None, a tgrad.Generator or a "
                    f"numpy.random.Generator, got {type(generator).__name__}")


def _randperm(n: int, generator: Any, op: str) -> list[int]:
    """A random permutation of range(n) as Python ints (PyTorch's randperm(n, generator=))."""
    return _rng(generator, op).permutation(int(n)).tolist()


class Sampler(Generic[_T_co]):
    """Base class of samplers: subclasses define ``__iter__`` (the indices) and, where
    the count is known, ``__len__``."""

    def __init__(self, data_source: Sized | None = None) -> None:
        if data_source is not None:
            import warnings
            warnings.warn("`data_source` argument is not used and will be removed in 2.2.0."
                          "You may still have custom implementation that utilizes it.",
                          stacklevel=2)

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Indices 0, 1, ..., len(data_source) - 1 in order."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Random indices into ``data_source``: a shuffle of all of them (``replacement=False``;
    ``num_samples`` > len repeats whole shuffles, then part of one), or ``num_samples``
    independent uniform draws (``replacement=True``). ``generator``: see the module doc."""

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: Any = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if (not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool)
                or self.num_samples <= 0):
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        # the dataset's size may change at runtime
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        rng = _rng(self.generator, "RandomSampler")
        if self.replacement:
            if n == 0:  # NumPy's "high <= 0" otherwise
                raise RuntimeError(f"RandomSampler: cannot draw {self.num_samples} samples "
                                   f"from an empty data_source (random_ expects 'from' to be "
                                   f"less than 'to', but got from=0 >= to=0)")
            yield from rng.integers(0, n, size=self.num_samples).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in a random order (without replacement)."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _randperm(len(self.indices), self.generator, "SubsetRandomSampler"):
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices of ``[0, len(weights))`` drawn with probability proportional
    to ``weights`` (PyTorch's multinomial sampling). Without replacement each index comes at
    most once, so ``num_samples`` may not exceed ``len(weights)``; as PyTorch's CPU
    multinomial, once every index of nonzero weight has been drawn the zero-weight ones
    follow (here in a random order)."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        w = weights.tolist() if hasattr(weights, "tolist") else weights
        w = np.asarray(w, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise RuntimeError("WeightedRandomSampler: probability tensor contains either "
                               "`inf`, `nan` or element < 0")
        if w.sum() <= 0:
            raise RuntimeError("WeightedRandomSampler: invalid multinomial distribution "
                               "(sum of probabilities <= 0)")
        if not replacement and num_samples > len(w):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        from tgrad import float64, tensor
        self.weights = tensor(w, dtype=float64)
        self._p = w / w.sum()
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rng = _rng(self.generator, "WeightedRandomSampler")
        n_nonzero = int(np.count_nonzero(self._p))
        if self.replacement or self.num_samples <= n_nonzero:
            yield from rng.choice(len(self._p), size=self.num_samples,
                                  replace=self.replacement, p=self._p).tolist()
            return
        # without replacement, more samples than nonzero weights: all of those, then
        # zero-weight indices (PyTorch's topk of p / Exp(1) draws puts them last)
        yield from rng.choice(len(self._p), size=n_nonzero, replace=False, p=self._p).tolist()
        zeros = np.flatnonzero(self._p == 0)
        yield from rng.permutation(zeros)[: self.num_samples - n_nonzero].tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Lists of ``batch_size`` indices from ``sampler`` (any iterable); the last one is
    shorter unless ``drop_last``, which drops it.

    ``list(BatchSampler(SequentialSampler(range(10)), 3, False))`` is
    ``[[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]``."""

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        batch = list(itertools.islice(it, self.batch_size))
        while batch:
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch
            batch = list(itertools.islice(it, self.batch_size))

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size

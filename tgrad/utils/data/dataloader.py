"""DataLoader (PyTorch's torch.utils.data.DataLoader): batches of a dataset.

Map-style datasets: a sampler yields indices (``SequentialSampler``, or ``RandomSampler``
when ``shuffle=True``), a ``BatchSampler`` groups them into lists of ``batch_size``, and
each list is read (``dataset.__getitems__(list)`` if defined, else ``dataset[i]`` each) and
merged by ``collate_fn`` (``default_collate``). ``batch_size=None`` turns batching off:
each index's sample goes through ``default_convert``. Iterable-style datasets: samples
are taken from ``iter(dataset)`` ``batch_size`` at a time.

Deliberate differences from PyTorch:

- loading always runs in the calling process. ``num_workers > 0`` is accepted (PyTorch's
  argument checks apply) but starts no worker processes: the batches and their order
  are exactly those of ``num_workers=0``; ``worker_init_fn`` is never called,
  ``get_worker_info()`` is None, ``timeout`` / ``prefetch_factor`` /
  ``persistent_workers`` / ``multiprocessing_context`` / ``in_order`` have no effect.
- ``pin_memory`` / ``pin_memory_device`` are accepted and ignored (tgrad has no pinned
  host memory; batches stay where ``collate_fn`` made them).
- ``generator`` is None (tgrad's global generator, seeded by ``tgrad.manual_seed``), a CPU
  ``tgrad.Generator`` or a ``numpy.random.Generator``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Callable

from tgrad.utils.data._collate import default_collate, default_convert
from tgrad.utils.data.dataset import Dataset, IterableDataset
from tgrad.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]


def get_worker_info() -> None:
    """Information about the current loader worker process: always None in tgrad, whose
    DataLoader loads in the main process (PyTorch returns None there too)."""
    return None


class _InfiniteConstantSampler(Sampler):
    """The index sampler of an iterable-style dataset: None forever."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size`` (see the module doc).

    Argument rules (PyTorch's, with its errors): ``sampler`` excludes ``shuffle``;
    ``batch_sampler`` excludes ``batch_size`` (other than 1), ``shuffle``, ``sampler`` and
    ``drop_last``; ``batch_size=None`` excludes ``drop_last``; an ``IterableDataset`` takes
    no ``shuffle``, ``sampler`` or ``batch_sampler``. ``len(loader)`` is the number of
    batches (of samples when ``batch_size=None``); for an ``IterableDataset`` it is
    derived from ``len(dataset)``.
    """

    def __init__(self, dataset: Dataset, batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler | Iterable | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Any = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        self._initialized = False
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError("multiprocessing_context can only be used with multi-process "
                             f"loading (num_workers > 0), but got num_workers={num_workers}")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        # dataset checks first: an IterableDataset takes no sampler at all
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._initialized = True

    def __setattr__(self, attr: str, val: Any) -> None:
        if getattr(self, "_initialized", False) and attr in (
                "batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> _DataLoaderIter:
        return _DataLoaderIter(self)

    def __len__(self) -> int:
        if self._is_iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = (length // self.batch_size if self.drop_last
                          else math.ceil(length / self.batch_size))
            return length
        return len(self._index_sampler)


class _DataLoaderIter:
    """One pass over a DataLoader (each ``iter(loader)`` starts a new one, re-drawing the
    shuffle)."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._dataset = loader.dataset
        self._auto_collation = loader._auto_collation
        self._collate_fn = loader.collate_fn
        self._drop_last = loader.drop_last
        self._sampler_iter = iter(loader._index_sampler)
        self._dataset_iter = iter(self._dataset) if loader._is_iterable else None
        self._ended = False
        self._num_yielded = 0

    def __iter__(self) -> _DataLoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def _fetch_iterable(self, index):
        if self._ended:
            raise StopIteration
        if not self._auto_collation:
            return self._collate_fn(next(self._dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self._dataset_iter))
            except StopIteration:
                self._ended = True
                break
        if len(data) == 0 or (self._drop_last and len(data) < len(index)):
            raise StopIteration
        return self._collate_fn(data)

    def _fetch_map(self, index):
        if not self._auto_collation:
            return self._collate_fn(self._dataset[index])
        getitems = getattr(self._dataset, "__getitems__", None)
        if getitems:
            data = getitems(index)
        else:
            data = [self._dataset[i] for i in index]
        return self._collate_fn(data)

    def __next__(self) -> Any:
        index = next(self._sampler_iter)  # may raise StopIteration
        if self._dataset_iter is not None:
            out = self._fetch_iterable(index)
        else:
            out = self._fetch_map(index)
        self._num_yielded += 1
        return out

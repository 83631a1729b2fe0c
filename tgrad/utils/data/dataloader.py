"""DataLoader (PyTorch's torch.utils.data.DataLoader): batches of a dataset.

Map-style datasets: a sampler yields indices (``SequentialSampler``, or ``RandomSampler``
when ``shuffle=True``), a ``BatchSampler`` groups them into lists of ``batch_size``, and
each list is read (``dataset.__getitems__(list)`` if defined, else ``dataset[i]`` each) and
merged by ``collate_fn`` (``default_collate``). ``batch_size=None`` turns batching off:
each index's sample goes through ``default_convert``. Iterable-style datasets: samples
are taken from ``iter(dataset)`` ``batch_size`` at a time.

``num_workers > 0`` loads in worker processes, as PyTorch (see _worker.py for the worker
side): ``multiprocessing_context`` (None: multiprocessing's default start method, 'fork'
on Linux before Python 3.14) starts ``num_workers`` daemonic processes, each with its own
index queue and a copy of the dataset; the main process hands out batch indices round
robin, keeping ``prefetch_factor * num_workers`` batches in flight, and yields results in
the sampler's order (``in_order=False``: as they arrive). Each iterator draws a
``base_seed`` (one 63-bit draw from ``generator``; also with ``num_workers=0``, as
PyTorch, so both draw the same shuffle); worker i is seeded with ``base_seed + i``. An
IterableDataset is replicated in every worker (shard it with ``get_worker_info()``).
``timeout > 0`` bounds each wait for a batch; a worker that dies raises a RuntimeError;
workers stop when the pass ends, when the iterator is deleted, or at exit
(``persistent_workers=True``: they live as long as the loader and serve every epoch).

Deliberate differences from PyTorch:

- batches cross processes as pickles, tensors as NumPy arrays (a copy; PyTorch puts them
  in shared memory). A worker's cuda tensors are copied to the host and back to the same
  device in the main process. A worker forked after the GPU driver started cannot use
  cuda (PyTorch's "Cannot re-initialize CUDA in forked subprocess" error): use
  ``multiprocessing_context="spawn"``.
- ``pin_memory`` / ``pin_memory_device`` are accepted and ignored (tgrad has no pinned
  host memory; batches stay where ``collate_fn`` made them); PyTorch's warning when no
  accelerator is available.
- ``generator`` is None (tgrad's global generator, seeded by ``tgrad.manual_seed``), a CPU
  ``tgrad.Generator`` or a ``numpy.random.Generator``.
"""

from __future__ import annotations

import atexit
import itertools
import math
import multiprocessing
import multiprocessing.context
import os
import queue
import time
import warnings
import weakref
from collections.abc import Iterable
from typing import Any, Callable

from tgrad.utils.data import _worker
from tgrad.utils.data._collate import default_collate, default_convert
from tgrad.utils.data._worker import ExceptionWrapper, get_worker_info
from tgrad.utils.data.dataset import Dataset, IterableDataset
from tgrad.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    _rng,
)

__all__ = ["DataLoader", "get_worker_info"]


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
        if multiprocessing_context is not None:
            if num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 f"loading (num_workers > 0), but got num_workers={num_workers}")
            if isinstance(multiprocessing_context, str):
                methods = multiprocessing.get_all_start_methods()
                if multiprocessing_context not in methods:
                    raise ValueError("multiprocessing_context option should specify a valid "
                                     f"start method in {methods!r}, but got "
                                     f"multiprocessing_context={multiprocessing_context!r}")
                multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
            if not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context "
                                "object or a string specifying the start method, but got "
                                f"multiprocessing_context={multiprocessing_context}")

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
        self._iterator = None  # the persistent workers' iterator, reused by every epoch
        self._IterableDataset_len_called = None
        self._initialized = True
        self.check_worker_number_rationality()

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

    def __iter__(self) -> _BaseDataLoaderIter:
        # persistent workers: one iterator (and one set of workers) for every epoch
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def _get_iterator(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def check_worker_number_rationality(self) -> None:
        """PyTorch's warning when ``num_workers`` exceeds the CPUs this process may use."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        max_workers = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
        if max_workers is not None and self.num_workers <= max_workers:
            return
        suggest = ("DataLoader is not able to compute a suggested max number of worker in "
                   "current system." if max_workers is None else
                   f"Our suggested max number of worker in current system is {max_workers}"
                   f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, "
                   "which is smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {suggest} Please be aware that excessive worker creation might "
                      "get DataLoader running slow or even freeze, lower the worker number to "
                      "avoid potential slowness/freeze if necessary.", stacklevel=2)

    def __len__(self) -> int:
        if self._is_iterable:
            # remembered: the iterator warns when more samples than this come out
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = (length // self.batch_size if self.drop_last
                          else math.ceil(length / self.batch_size))
            return length
        return len(self._index_sampler)




# ------------------------------------------------------------------ fetchers
class _MapDatasetFetcher:
    """Reads one index (``auto_collation=False``) or a list of them from a map-style
    dataset and collates."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if getitems else [self.dataset[i] for i in index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    """Takes ``len(index)`` samples (one without auto-collation) from ``iter(dataset)``;
    StopIteration once it is exhausted (a short last batch unless ``drop_last``)."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> None:
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if len(data) == 0 or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def _make_fetcher(is_iterable: bool, dataset: Any, auto_collation: bool,
                  collate_fn: Callable, drop_last: bool) -> Any:
    cls = _IterableDatasetFetcher if is_iterable else _MapDatasetFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


# ------------------------------------------------------------------ iterators
class _BaseDataLoaderIter:
    """One pass over a DataLoader (each ``iter(loader)`` starts a new one, re-drawing the
    shuffle and the workers' base seed)."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._is_iterable = loader._is_iterable
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory:
            from tgrad import cuda
            if loader.pin_memory_device:
                warnings.warn("pin_memory_device is deprecated, the current accelerator will "
                              "be used as the device,ignore "
                              f"pin_memory_device='{loader.pin_memory_device}'.", stacklevel=3)
            if not cuda.is_available():
                warnings.warn("'pin_memory' argument is set as true but no accelerator is "
                              "found, then device pinned memory won't be used.", stacklevel=3)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # one draw per iterator, whatever num_workers (PyTorch's random_() of an int64)
        self._base_seed = int(_rng(loader.generator, "DataLoader").integers(0, 2 ** 63))
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self) -> Any:
        return next(self._sampler_iter)  # may raise StopIteration

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        if (self._is_iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                   f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                   f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not "
                        "properly configuring the IterableDataset replica at each worker. "
                        "Please see https://pytorch.org/docs/stable/data.html"
                        "#torch.utils.data.IterableDataset for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """``num_workers=0``: fetch and collate in the calling process."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._dataset_fetcher = _make_fetcher(self._is_iterable, self._dataset,
                                              self._auto_collation, self._collate_fn,
                                              self._drop_last)

    def _next_data(self) -> Any:
        index = self._next_index()  # may raise StopIteration
        return self._dataset_fetcher.fetch(index)  # may raise StopIteration


_POLL_S = 0.1  # how often a waiting main process checks that its workers live

# live multi-process iterators, shut down at exit before multiprocessing's own exit hook
_live_iterators: weakref.WeakSet = weakref.WeakSet()
_python_exiting = [False]


@atexit.register
def _shutdown_live_iterators() -> None:
    for it in list(_live_iterators):
        it._shutdown_workers()
    _python_exiting[0] = True


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """``num_workers > 0``: worker processes fetch, the main process hands out indices and
    reorders results (PyTorch's bookkeeping: ``_send_idx`` / ``_rcvd_idx`` task numbers,
    ``_task_info[idx] = (worker_id,)`` while outstanding, ``(worker_id, data)`` once an
    out-of-order result arrived)."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._shutdown = True  # until the workers exist (for __del__ on a failed start)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:
            raise AssertionError(
                "prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self._worker_init_fn = loader.worker_init_fn
        self._worker_result_queue = ctx.Queue()
        self._workers_done_event = ctx.Event()
        self._index_queues = []
        self._workers = []
        self._workers_status = [True] * self._num_workers
        self._shutdown = False
        try:
            for i in range(self._num_workers):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()
                w = ctx.Process(
                    target=_worker._worker_loop,
                    args=(self._is_iterable, self._dataset, index_queue,
                          self._worker_result_queue, self._workers_done_event,
                          self._auto_collation, self._collate_fn, self._drop_last,
                          self._base_seed, self._worker_init_fn, i, self._num_workers,
                          ctx.get_start_method()))
                w.daemon = True
                w.start()
                self._index_queues.append(index_queue)
                self._workers.append(w)
        except BaseException:
            self._shutdown_workers()
            raise
        self._data_queue = self._worker_result_queue
        _live_iterators.add(self)
        self._reset(loader, first_iter=True)

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0  # task number of the next index sent to a worker
        self._rcvd_idx = 0  # task number of the next batch __next__ returns
        self._task_info: dict = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:  # persistent workers: restart every fetcher, wait for the acks
            for q in self._index_queues:
                q.put(_worker._ResumeIteration())
            pending = self._num_workers
            while pending > 0:
                return_idx, _ = self._get_data()
                if isinstance(return_idx, _worker._ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout: float) -> tuple[bool, Any]:
        """Wait up to ``timeout`` seconds for a result, checking the workers' health."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return True, self._data_queue.get(
                    timeout=max(0.0, min(_POLL_S, deadline - time.monotonic())))
            except queue.Empty:
                failed = [w for i, w in enumerate(self._workers)
                          if self._workers_status[i] and not w.is_alive()]
                if failed:
                    for i, w in enumerate(self._workers):
                        if w in failed:
                            self._mark_worker_as_unavailable(i)
                    pids = ", ".join(str(w.pid) for w in failed)
                    raise RuntimeError(
                        f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from None
                if time.monotonic() >= deadline:
                    return False, None

    def _get_data(self) -> Any:
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            success, data = self._try_get_data(_worker.MP_STATUS_CHECK_INTERVAL)
            if success:
                return data

    def _next_data(self) -> Any:
        while True:
            # skip tasks of workers that ended (iterable datasets) without a result
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx, None)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            if len(self._task_info[self._rcvd_idx]) == 2:  # arrived earlier, out of order
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._is_iterable and isinstance(data, _worker._IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                if self._in_order:
                    break
                if self._workers_num_tasks[worker_queue_idx] < max_tasks // sum(
                        self._workers_status):
                    break
        else:
            return
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data: Any, worker_idx: int) -> Any:
        self._workers_num_tasks[worker_idx] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return _worker.unpack(data)

    def _mark_worker_as_unavailable(self, worker_id: int, shutdown: bool = False) -> None:
        # the worker exits on None (after its queued tasks, which the main process skips)
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        if _python_exiting[0] or getattr(self, "_shutdown", True):
            return
        self._shutdown = True
        _live_iterators.discard(self)
        try:
            self._workers_done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id, shutdown=True)
            for w in self._workers:
                w.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._worker_result_queue.cancel_join_thread()
            self._worker_result_queue.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL)

    def __del__(self) -> None:
        self._shutdown_workers()

"""DataLoader worker processes (PyTorch's torch/utils/data/_utils/worker.py).

Each worker runs ``_worker_loop``: it seeds Python's ``random``, tgrad's global generator
(``base_seed + worker_id``, as PyTorch) and NumPy's legacy global generator (a SeedSequence
of ``[worker_id, base_seed low 32 bits, base_seed high bits, 0]``, PyTorch's
``_generate_state``), sets ``get_worker_info()``, runs ``worker_init_fn(worker_id)``,
then reads ``(task_idx, index)`` from its own index queue and puts
``(task_idx, result)`` on the shared result queue. ``None`` on the index queue ends it;
``_ResumeIteration`` restarts the fetcher (persistent workers, a new epoch).

Results cross the process boundary as pickles made here (``pack``): every tgrad tensor is
sent as its NumPy array plus device and ``requires_grad`` and rebuilt by ``unpack`` in the
main process (a copy; no shared memory). A non-leaf tensor that requires grad is refused
with PyTorch's error (autograd graphs do not cross processes). An exception in a worker
travels as an ``ExceptionWrapper`` (type + formatted traceback) and is re-raised in the
main process as ``Caught <Type> in DataLoader worker process <id>.``.
"""

from __future__ import annotations

import io
import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

MP_STATUS_CHECK_INTERVAL = 5.0  # seconds between a worker's checks that the main process lives


@dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: ``id`` (0 .. num_workers - 1),
    ``num_workers``, ``seed`` (``base_seed + id``: tgrad's and Python's generators are
    seeded with it) and ``dataset`` (this process's copy of the dataset)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """Information about the current DataLoader worker process (``id``, ``num_workers``,
    ``seed``, ``dataset``); None in the main process. Use it in an ``IterableDataset``'s
    ``__iter__`` or in ``worker_init_fn`` to give each worker its shard."""
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's iterable dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Restart the fetcher (a new epoch with persistent workers)."""


class KeyErrorMessage(str):
    """A KeyError's message whose repr is itself (keeps the traceback text readable)."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception's type and formatted traceback, picklable across processes."""

    def __init__(self, exc_info: tuple | None = None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where
        try:  # an exception class that cannot be pickled travels as a RuntimeError
            pickle.dumps(self.exc_type)
        except Exception:  # noqa: BLE001
            self.exc_type = RuntimeError

    def reraise(self) -> None:
        """Raise ``exc_type("Caught <Type> <where>.\\nOriginal Traceback ...")``."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - the type takes other arguments
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            del exception  # no exception -> traceback -> frame cycle: the iterator frees


def _generate_state(base_seed: int, worker_id: int) -> list[int]:
    """NumPy's seed for a worker: PyTorch's ``_generate_state`` (a SeedSequence hash of
    the worker id and the two 32-bit halves of base_seed; 4 uint32 words)."""
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    return np.random.SeedSequence(entropy).generate_state(4).tolist()


# ------------------------------------------------------------------ tensors across processes
def _rebuild_tensor(arr: np.ndarray, device: str, requires_grad: bool):
    from tgrad.tensor import Tensor
    t = Tensor(arr)
    if device != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


class _TensorPickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        from tgrad.tensor import Tensor
        if not isinstance(obj, Tensor):
            return NotImplemented
        if obj.requires_grad and not obj.is_leaf:
            raise RuntimeError(
                "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
                "autograd does not support crossing process boundaries.  If you just want to "
                "transfer the data, call detach() on the tensor before serializing (e.g., "
                "putting it on the queue).")
        arr = obj.numpy(force=True)
        arr = np.ascontiguousarray(arr).reshape(arr.shape)  # ascontiguousarray makes 0-d 1-d
        return _rebuild_tensor, (arr, str(obj.device), obj.requires_grad)


def pack(data: Any) -> bytes:
    """``data`` pickled with tgrad tensors as NumPy arrays (see the module doc)."""
    buf = io.BytesIO()
    _TensorPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(data)
    return buf.getvalue()


def unpack(payload: bytes) -> Any:
    return pickle.loads(payload)


# ------------------------------------------------------------------ the worker process
def _worker_loop(is_iterable: bool, dataset: Any, index_queue: Any, data_queue: Any,
                 done_event: Any, auto_collation: bool, collate_fn: Any, drop_last: bool,
                 base_seed: int, init_fn: Any, worker_id: int, num_workers: int,
                 start_method: str) -> None:
    from tgrad.utils.data.dataloader import _make_fetcher
    try:
        if start_method == "fork":
            # a GPU context does not survive fork: cuda raises PyTorch's error in here
            from tgrad.cuda._runtime import forbid_in_forked_child
            forbid_in_forked_child()
        seed = base_seed + worker_id
        random.seed(seed)
        import tgrad
        tgrad.manual_seed(seed)
        np.random.seed(_generate_state(base_seed, worker_id))

        global _worker_info
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_exception = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _make_fetcher(is_iterable, dataset, auto_collation, collate_fn,
                                    drop_last)
        except Exception:  # noqa: BLE001 - re-raised in the main process
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

        iteration_end = False
        manager_pid = os.getppid()
        while os.getppid() == manager_pid:  # the main process is alive
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))  # acknowledge
                iteration_end = False
                fetcher = _make_fetcher(is_iterable, dataset, auto_collation, collate_fn,
                                        drop_last)
                continue
            if r is None:  # the final signal
                break
            if done_event.is_set() or iteration_end:
                continue  # wait for None
            idx, index = r
            if init_exception is not None:
                data = init_exception
                init_exception = None
            else:
                try:
                    data = pack(fetcher.fetch(index))
                except Exception as e:  # noqa: BLE001
                    if isinstance(e, StopIteration) and is_iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(
                            where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass  # the main process raises it
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()

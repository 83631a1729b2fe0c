"""Out-of-range indices found on the GPU, raised at the next synchronization.

``x[idx]`` with a cuda index tensor checks the indices in the gather kernel itself
(tgrad/kernels/indexing.py ``gather_nd_kernel`` with CHECK). Reading the verdict back at
once would make every such gather a host synchronization (about one launch latency), and
could not be captured into a CUDA graph. So, like PyTorch's device-side asserts, the error
is raised later: at the next point where the host waits for the stream anyway, with a
message that names the index, the dim and the tensor.

* Records: each device has one int64 buffer of ``SLOTS`` records. A checked launch gets the
  next record, round robin (``record_for``); per index array k of the launch the kernel
  writes (1, the bad index as given) at [2k, 2k + 1]. Launches waiting to be checked
  (``_Waiting``: stream, description) are listed under their record on the host, identical
  ones once (a loop without a synchronization does not grow the lists).
* Checks: ``DeviceArray.to_host`` (every ``.item()``, ``.numpy()``, ``.cpu()``...),
  ``tgrad.cuda.synchronize`` and ``Stream.synchronize`` call ``check`` after they waited;
  when launches wait on that device it reads the records (one small device-to-host copy).
  A set record raises IndexError for the oldest (naming the launches its index is out of
  range for) and is cleared; the launches of the synchronized streams are forgotten, those
  of other streams wait on.
* More than ``SLOTS`` launches without a synchronization share records; an error then names
  the launches the index is out of range for.
* CUDA graphs: launches captured into a graph are listed with the graph
  (``begin_capture``/``end_capture``) and wait again after each ``replay`` (``replayed``).
* The result of a gather with a bad index is not valid (the bad elements are not written);
  the error says so.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tgrad.cuda._runtime import runtime

__all__ = ["DeviceIndexError", "SLOTS", "record_for", "check", "waiting", "begin_capture",
           "end_capture", "replayed"]

SLOTS = 64
RECORD = 8  # int64s per record: (flag, bad index) for each of gather_nd_kernel's 4 arrays


class DeviceIndexError(IndexError):
    """An out-of-range cuda index of an earlier op, raised at a synchronization: its text
    names that op's tensor, so the ops that reword their own IndexErrors pass it on."""


class _Waiting(NamedTuple):
    """A checked launch whose record has not been read since it ran."""

    stream: int
    shape: tuple  # the indexed tensor's shape
    dims: tuple  # per index array: the dim it indexes
    sizes: tuple  # per index array: that dim's size
    op: str = "index:"  # the error's first words, naming the op: "index:" (x[idx]), "gather():"


class _Records:
    """One device's record buffer and the launches waiting on each record."""

    def __init__(self, device: int) -> None:
        from tgrad.cuda.array import DeviceArray
        self.buffer = DeviceArray.empty((SLOTS, RECORD), np.dtype(np.int64), device)
        rt = runtime()
        rt.memset_d8(self.buffer.data_ptr(), 0, self.buffer.nbytes, rt.tgrad_stream(device))
        self.next = 0
        # slot -> its waiting launches, as the keys of a dict (in launch order; a loop's
        # identical launches are one entry, so nothing grows without a synchronization)
        self.waiting: dict[int, dict[_Waiting, None]] = {}


_records: dict[int, _Records] = {}
waiting: set = set()  # devices with launches waiting to be checked (read by to_host)
_capturing: dict[int, list] = {}  # device -> (slot, _Waiting) launched into a capture


def record_for(device: int, stream: int, shape: tuple, dims: tuple, sizes: tuple,
               op: str = "index:"):
    """The record (an int64 DeviceArray of RECORD elements) a checked gather on ``device``
    and ``stream`` writes its bad indices to; the launch then waits to be checked. ``op``:
    the error's first words, as the op's host check words it ("index:", "gather():")."""
    recs = _records.get(device)
    if recs is None:
        recs = _records[device] = _Records(device)
    slot = recs.next
    recs.next = (slot + 1) % SLOTS
    entry = _Waiting(stream, shape, dims, sizes, op)
    captured = _capturing.get(device)
    if captured is not None:
        captured.append((slot, entry))
    else:
        recs.waiting.setdefault(slot, {})[entry] = None
        waiting.add(device)
    return recs.buffer.view((RECORD,), (1,), slot * RECORD)


def check(device: int, stream: int | None = None) -> None:
    """After ``stream`` (every stream of ``device`` when None) has been waited for: raise
    IndexError if a waiting launch of it found a bad index."""
    if device not in waiting:
        return
    recs = _records[device]
    rt = runtime()
    host = np.empty((SLOTS, RECORD), np.int64)
    read_on = rt.tgrad_stream(device) if stream is None else stream
    rt.memcpy_dtoh(host, recs.buffer.data_ptr(), read_on)
    oldest_first = sorted(recs.waiting, key=lambda slot: (slot - recs.next) % SLOTS)
    bad = [slot for slot in oldest_first if host[slot, ::2].any()]
    message = _message(device, host[bad[0]], list(recs.waiting[bad[0]]), len(bad)) \
        if bad else ""
    for slot in bad:  # read: cleared for the launches still to come
        rt.memset_d8(recs.buffer.data_ptr() + slot * RECORD * 8, 0, RECORD * 8, read_on)
    for slot in oldest_first:  # the launches of streams not synchronized still wait
        kept = {w: None for w in recs.waiting[slot] if stream is not None and w.stream != stream}
        if kept:
            recs.waiting[slot] = kept
        else:
            del recs.waiting[slot]
    if not recs.waiting:
        waiting.discard(device)
    if bad:
        raise DeviceIndexError(message)


def _message(device: int, record: np.ndarray, launches: list, n_bad: int) -> str:
    """PyTorch's index error text for the first bad index array of ``record``, the tensor
    it indexed, and why it comes now. Of launches sharing the record, those the index is
    out of range for are named."""
    k = int(np.flatnonzero(record[::2])[0])
    index = int(record[2 * k + 1])
    culprits = [w for w in launches
                if k < len(w.sizes) and not -w.sizes[k] <= index < w.sizes[k]] or launches
    first = culprits[0]
    text = (f"{first.op} index {index} is out of bounds for dimension {first.dims[k]} with size "
            f"{first.sizes[k]} (tensor of shape {list(first.shape)} on cuda:{device})")
    if len(culprits) > 1:
        others = "; ".join(f"shape {list(w.shape)}" for w in culprits[1:4])
        text += (f", or of one of {len(culprits) - 1} later indexing ops that shared its "
                 f"error record ({others})")
    if n_bad > 1:
        text += f"; {n_bad - 1} more indexing ops found bad indices too"
    return (text + ". A cuda index tensor is checked on the GPU by the indexing kernel and the "
            "error is raised at the next synchronization (as PyTorch's device-side assert): "
            "the result of that indexing is not valid.")


def begin_capture(device: int) -> None:
    """Checked launches on ``device`` are now recorded into a CUDA graph, not run (call it
    before the capture begins: the record buffer is made here, outside the graph)."""
    if device not in _records:
        _records[device] = _Records(device)
    _capturing[device] = []


def end_capture(device: int) -> list:
    """The (slot, launch) pairs captured since ``begin_capture``, for the graph to keep."""
    return _capturing.pop(device, [])


def replayed(device: int, stream: int, captured: list) -> None:
    """A graph holding ``captured`` launches was replayed on ``stream``: they wait again."""
    if not captured:
        return
    recs = _records[device]
    for slot, entry in captured:
        recs.waiting.setdefault(slot, {})[entry._replace(stream=stream)] = None
    waiting.add(device)

"""tgrad.nn.utils.rnn, as ``torch.nn.utils.rnn``: padding a list of variable-length
sequences into one tensor (``pad_sequence``) and splitting it back (``unpad_sequence``),
and the packed layout (``PackedSequence``, ``pack_padded_sequence``, ``pack_sequence``,
``pad_packed_sequence``, ``unpack_sequence``; ``invert_permutation``).

All are built from differentiable tgrad ops (``full``, ``cat``, ``stack``, ``expand``,
``index_select``, views and ``clone``), so gradients flow from the padded or packed tensor
to every sequence (the padding positions get none) and back, higher derivatives included,
on any device. Lengths, ``batch_sizes`` and the sort are host-side (int64 CPU tensors, as in
PyTorch). tgrad's recurrent layers (nn.RNN/LSTM/GRU) accept a PackedSequence and return
one.
"""

from __future__ import annotations

from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from tgrad import dtypes
from tgrad.ops._common import broadcast_or_raise
from tgrad.ops.creation import full, tensor
from tgrad.ops.shape import cat, stack
from tgrad.tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]  # torch.nn.utils.rnn.__all__, in its order


def _fit(seq: Tensor, target: tuple) -> Tensor:
    """``seq`` broadcast to ``target`` as PyTorch's copy into the padded output does (sizes
    aligned from the right), with its error messages."""
    if tuple(seq.shape) == target:
        return seq
    out = broadcast_or_raise(None, target, seq.shape)
    if out != target:
        raise RuntimeError(f"output with shape {list(target)} doesn't match the broadcast "
                           f"shape {list(out)}")
    return seq.expand(target)


def pad_sequence(sequences: Sequence[Tensor] | Tensor, batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Pad a list of variable-length sequences with ``padding_value`` and stack them.

    Shapes: each sequence is (L_i, *) with the trailing dims * of the first sequence (others
    are broadcast to them, as PyTorch copies them); the result is (T, B, *), or (B, T, *)
    with ``batch_first``, where B = len(sequences) and T = max L_i. ``padding_side="right"``
    puts each sequence at the start of its row, ``"left"`` at the end. The result has the
    first sequence's dtype and device (other sequences are converted). Differentiable with
    respect to every sequence.

    Raises RuntimeError for an empty list, a bad ``padding_side``, a 0-d sequence or
    trailing dims that do not broadcast; TypeError for an element that is not a Tensor.
    """
    if isinstance(sequences, Tensor):
        seqs = list(sequences.unbind(0))
    else:
        seqs = list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    for i, s in enumerate(seqs):
        if not isinstance(s, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(s).__name__}")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    for i, s in enumerate(seqs):
        if s.ndim == 0:
            raise RuntimeError(f"pad_sequence: expected each sequence to have at least one "
                               f"dimension (its length), but sequence {i} is 0-d")
    first = seqs[0]
    trailing = tuple(first.shape[1:])
    dtype, device = first.dtype, first.device
    max_len = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        if s.dtype is not dtype or s.device != device:
            s = s.to(device=device, dtype=dtype)
        s = _fit(s, (s.shape[0], *trailing))
        n_pad = max_len - s.shape[0]
        if n_pad:
            pad = full((n_pad, *trailing), padding_value, dtype=dtype, device=device)
            s = cat([s, pad] if padding_side == "right" else [pad, s])
        rows.append(s)
    return stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Iterable[int],
                   batch_first: bool = False) -> list[Tensor]:
    """Split a right-padded batch back into its sequences (the inverse of ``pad_sequence``).

    Shapes: ``padded_sequences`` is (T, B, *), or (B, T, *) with ``batch_first``;
    ``lengths`` (a tensor or a list of B ints) gives each sequence's length; returns B
    tensors of shape (lengths[b], *) (lengths beyond T give T, negative ones 0), copies
    that stay differentiable with respect to ``padded_sequences``. PyTorch transposes a
    time-first input in place; tgrad leaves it untouched.

    Raises ValueError (Python's ``zip`` text) when ``lengths`` and the batch differ in size.
    """
    padded = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    max_length = padded.shape[1]
    if isinstance(lengths, Tensor):
        lengths = lengths.tolist()
    out = []
    for seq, length in zip(padded.unbind(0), lengths, strict=True):
        n = max(0, min(int(length), max_length))
        out.append(seq[:n].clone())
    return out


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation of 0..n-1 (an int64 tensor on its device, with
    ``out[permutation[i]] = i``), or None for None, as ``torch.nn.utils.rnn``'s."""
    if permutation is None:
        return None
    perm = np.asarray(permutation.tolist(), dtype=np.int64)
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size)
    return tensor(inverse, dtype=dtypes.int64, device=permutation.device)


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """A batch of variable-length sequences packed time step by time step (a named tuple,
    as ``torch.nn.utils.rnn.PackedSequence``).

    Fields: ``data`` (sum of the lengths, *): step 0 of every sequence, then step 1 of every
    sequence still running, ...; ``batch_sizes`` (int64 CPU, length max L): how many
    sequences run at each step; ``sorted_indices``: the batch order used for packing
    (sequences sorted by decreasing length), None when the batch was already sorted;
    ``unsorted_indices``: its inverse (computed when not given). Build one with
    ``pack_padded_sequence`` or ``pack_sequence``, not by hand. ``PackedSequence((data,
    batch_sizes))`` (one tuple) is accepted as PyTorch's legacy form.
    """

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # the legacy (data, batch_sizes) tuple
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """``data.to(*args, **kwargs)``, the indices moved to data's new device
        (``batch_sizes`` stays on the CPU); self when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices, unsorted_indices = (
            None if t is None else t.to(data.device)
            for t in (self.sorted_indices, self.unsorted_indices))
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cpu(self) -> PackedSequence:
        """The PackedSequence with ``data`` and the indices on the CPU."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> PackedSequence:
        """The PackedSequence with ``data`` and the indices on ``device`` (default cuda)."""
        return self.to("cuda" if device is None else device)

    def double(self) -> PackedSequence:
        """``data`` as float64 (same shapes)."""
        return self.to(dtype=dtypes.float64)

    def float(self) -> PackedSequence:  # noqa: A003
        """``data`` as float32 (same shapes)."""
        return self.to(dtype=dtypes.float32)

    def half(self) -> PackedSequence:
        """``data`` as float16 (same shapes)."""
        return self.to(dtype=dtypes.float16)

    def long(self) -> PackedSequence:
        """``data`` as int64 (same shapes)."""
        return self.to(dtype=dtypes.int64)

    def int(self) -> PackedSequence:  # noqa: A003
        """``data`` as int32 (same shapes)."""
        return self.to(dtype=dtypes.int32)

    def short(self) -> PackedSequence:
        """``data`` as int16 (same shapes)."""
        return self.to(dtype=dtypes.int16)

    def char(self) -> PackedSequence:
        """``data`` as int8 (same shapes)."""
        return self.to(dtype=dtypes.int8)

    def byte(self) -> PackedSequence:
        """``data`` as uint8 (same shapes)."""
        return self.to(dtype=dtypes.uint8)

    def is_pinned(self) -> bool:
        """Whether ``data`` is in pinned host memory (never, in tgrad)."""
        return self.data.is_pinned()

    def pin_memory(self) -> PackedSequence:
        """The PackedSequence with ``data`` and the indices pinned (``Tensor.pin_memory``)."""
        sorted_indices, unsorted_indices = (
            None if t is None else t.pin_memory()
            for t in (self.sorted_indices, self.unsorted_indices))
        return type(self)(self.data.pin_memory(), self.batch_sizes, sorted_indices,
                          unsorted_indices)

    @property
    def is_cuda(self) -> bool:
        """True when ``data`` is on a cuda device."""
        return self.data.is_cuda


def _lengths_list(lengths: Tensor | Iterable) -> list[int]:
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.ndim}D {lengths.device} Long tensor")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input: Tensor, lengths: Tensor | Iterable[int],  # noqa: A002
                         batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch of variable-length sequences.

    Shapes: ``input`` is (T, B, *), or (B, T, *) with ``batch_first``; ``lengths`` (a tensor
    or a list of B ints, each in 1..T) gives each sequence's length. With ``enforce_sorted``
    the lengths must be non-increasing; otherwise the batch is sorted by decreasing length
    first (a stable sort: equal lengths keep their order) and ``sorted_indices`` records the
    order. Returns a PackedSequence whose ``data`` is (sum(lengths), *), differentiable with
    respect to ``input``.

    Raises RuntimeError (PyTorch's texts) for an empty input, a lengths count other than B,
    a length <= 0, unsorted lengths with ``enforce_sorted``, a 2-D lengths tensor; and
    (tgrad only: PyTorch reads past the input) a length greater than T.
    """
    lens = _lengths_list(lengths)
    sorted_indices = None
    if not enforce_sorted:
        order = np.argsort(-np.asarray(lens, dtype=np.int64), kind="stable")
        lens = [lens[i] for i in order]
        sorted_indices = tensor(order, dtype=dtypes.int64, device=input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)  # noqa: A001
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    x = input.transpose(0, 1) if batch_first else input
    batch = x.shape[1]
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={batch})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if any(lens[i] < lens[i + 1] for i in range(batch - 1)):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                           "pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if lens[0] > x.shape[0]:
        raise RuntimeError(f"pack_padded_sequence: a sequence length ({lens[0]}) is greater "
                           f"than the input's time dimension ({x.shape[0]})")
    batch_sizes = [sum(n > t for n in lens) for t in range(lens[0])]
    data = cat([x[t, :b] for t, b in enumerate(batch_sizes)])
    return PackedSequence(data, tensor(batch_sizes, dtype=dtypes.int64), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Unpack a PackedSequence into a padded batch (the inverse of
    ``pack_padded_sequence``).

    Shapes: returns (padded, lengths) with padded (T, B, *), or (B, T, *) with
    ``batch_first``, where T = ``total_length`` or the longest length, in the original
    batch order (``unsorted_indices``), and lengths an int64 CPU tensor of B lengths.
    Differentiable with respect to ``sequence.data``.

    Raises ValueError (PyTorch's text) when ``total_length`` is below the longest length.
    """
    batch_sizes = [int(b) for b in sequence.batch_sizes.tolist()]
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_len}")
        max_len = total_length
    data = sequence.data
    batch = batch_sizes[0]
    trailing = tuple(data.shape[1:])
    steps, offset = [], 0
    for b in batch_sizes:
        step = data[offset:offset + b]
        offset += b
        if b < batch:
            pad = full((batch - b, *trailing), padding_value, dtype=data.dtype,
                       device=data.device)
            step = cat([step, pad])
        steps.append(step)
    if max_len > len(batch_sizes):
        steps.append(full((max_len - len(batch_sizes), batch, *trailing), padding_value,
                          dtype=data.dtype, device=data.device))
        padded = cat([stack(steps[:-1]), steps[-1]])
    else:
        padded = stack(steps)
    lens = np.array([sum(b > i for b in batch_sizes) for i in range(batch)], dtype=np.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lens = lens[np.asarray(sequence.unsorted_indices.tolist(), dtype=np.int64)]
    return padded, tensor(lens, dtype=dtypes.int64)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of variable-length sequences, each (L_i, *):
    ``pack_padded_sequence(pad_sequence(sequences), [L_i], enforce_sorted=enforce_sorted)``.
    With ``enforce_sorted`` the L_i must be non-increasing (PyTorch's error otherwise)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Split a PackedSequence back into its sequences, in the original batch order (the
    inverse of ``pack_sequence``): B tensors of shape (L_b, *), differentiable with respect
    to ``packed_sequences.data``."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)

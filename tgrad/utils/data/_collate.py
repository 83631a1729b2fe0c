"""default_collate / default_convert (PyTorch's torch.utils.data._utils.collate).

``default_collate(batch)`` turns a list of B samples into one batch, by the type of the
first sample:

- tgrad Tensors of one shape S -> ``tgrad.stack(batch)``, shape (B, *S) (differentiable);
- NumPy arrays -> tensors of their dtype, then stacked; NumPy scalars -> a (B,) tensor of
  their dtype;
- Python floats -> a (B,) float64 tensor, ints -> int64, bools -> bool (PyTorch's dtypes,
  not the default dtype);
- str / bytes -> the batch unchanged;
- Mappings -> the same mapping type with each key collated; namedtuples -> the same
  namedtuple of collated fields; other sequences (all of one length) -> collated
  position by position (a list for tuples, the same sequence type for lists).

Anything else raises PyTorch's TypeError. ``default_convert(data)`` converts one sample the
same way without batching (NumPy arrays and scalars to tensors, recursing into
containers; everything else unchanged). Tensors are created on the default device.
"""

from __future__ import annotations

import collections.abc
import copy
import re
from typing import Any, Callable

import numpy as np

import tgrad
from tgrad.tensor import Tensor

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]

_np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
    "found {}")


def _as_tensor(data) -> Tensor:
    """A NumPy array or scalar as a tgrad tensor of its dtype (an unsupported NumPy dtype,
    e.g. uint16, raises tgrad's TypeError naming it)."""
    return tgrad.as_tensor(np.asarray(data))


def default_convert(data: Any) -> Any:
    """Convert one sample: NumPy arrays / scalars to tgrad tensors, recursing into mappings,
    namedtuples and sequences (tuples become lists); anything else is returned as is."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_",
                                                                       "bytes_"):
        if (elem_type.__name__ == "ndarray"
                and _np_str_obj_array_pattern.search(data.dtype.str) is not None):
            return data  # arrays of strings or objects stay arrays
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:  # the mapping type cannot be built from a dict
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch: Any, *, collate_fn_map: dict | None = None) -> Any:
    """Collate ``batch`` (a sequence of samples) by the type of its first element:
    ``collate_fn_map`` maps a type (or tuple of types) to ``fn(batch, *, collate_fn_map)``
    (exact type first, then the first isinstance match in insertion order); containers
    recurse. ``default_collate`` is ``collate`` with ``default_collate_fn_map``."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                              for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch],
                                           collate_fn_map=collate_fn_map) for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                    for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map)
                           for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map)
                              for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None) -> Tensor:
    return tgrad.stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None) -> Any:
    elem = batch[0]
    if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([_as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None) -> Tensor:
    return _as_tensor(list(batch))


def collate_float_fn(batch, *, collate_fn_map=None) -> Tensor:
    return tgrad.tensor(list(batch), dtype=tgrad.float64)


def collate_int_fn(batch, *, collate_fn_map=None) -> Tensor:
    return tgrad.tensor(list(batch))  # int64 (bool for bools)


def collate_str_fn(batch, *, collate_fn_map=None) -> Any:
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch: Any) -> Any:
    """Merge a list of samples into a batch (see the module doc): tensors / arrays stacked
    along a new dim 0, numbers to a (B,) tensor (float -> float64, int -> int64), strings
    kept, containers collated field by field. PyTorch's ``default_collate``."""
    return collate(batch, collate_fn_map=default_collate_fn_map)

"""PyTorch's ``torch.return_types``: the named tuples ops return, one type per op.

Each is a namedtuple that also takes PyTorch's structseq call ``type(r)(sequence)`` (and has
``n_fields``), and prints as PyTorch's structseq does, one field per line::

    tgrad.return_types.max(
    values=tensor([2.]),
    indices=tensor([1]))

The (values, indices) results (max/min with a dim, sort, topk, kthvalue, median, nanmedian,
mode, cummax, cummin) subclass ``values_indices``, so code that tests for it still works.
tgrad.linalg's results are ``linalg_<op>`` (linalg_eigh, linalg_svd, linalg_slogdet, ...);
the older top-level tgrad.qr / svd / slogdet / geqrf / lu_unpack / triangular_solve return
``qr``, ``svd``, ... (PyTorch's; tgrad.lu returns a plain tuple, as torch.lu).
"""

from __future__ import annotations

from collections import namedtuple


def _structseq_repr(self) -> str:
    fields = ",\n".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
    return f"tgrad.return_types.{type(self).__name__}(\n{fields})"


values_indices = namedtuple("values_indices", ["values", "indices"])
values_indices.__module__ = __name__


def _structseq_new(cls, *args, **kwargs):
    """PyTorch's structseq call ``type(r)(sequence)`` (one sequence of the fields' length),
    beside the namedtuple's positional and keyword forms tgrad's ops use."""
    if len(args) == 1 and not kwargs and isinstance(args[0], (tuple, list)):
        seq = args[0]
        if len(seq) != len(cls._fields):
            raise TypeError(f"tgrad.return_types.{cls.__name__}() takes a "
                            f"{len(cls._fields)}-sequence ({len(seq)}-sequence given)")
        return tuple.__new__(cls, seq)
    return super(cls, cls).__new__(cls, *args, **kwargs)


def _return_type(name: str, base: type) -> type:
    n = len(base._fields)
    return type(name, (base,), {"__slots__": (), "__repr__": _structseq_repr,
                                "__new__": _structseq_new, "__module__": __name__,
                                "__qualname__": name, "n_fields": n,
                                "n_sequence_fields": n, "n_unnamed_fields": 0})


_VALUES_INDICES_OPS = ("max", "min", "sort", "topk", "kthvalue", "median", "nanmedian",
                       "mode", "cummax", "cummin")
_OTHERS = {"aminmax": ("min", "max"), "frexp": ("mantissa", "exponent"),
           "histogram": ("hist", "bin_edges"), "histogramdd": ("hist", "bin_edges"),
           # linear algebra: tgrad.linalg.<op> returns linalg_<op>, the top-level tgrad.<op>
           # (PyTorch's older names) <op>
           "geqrf": ("a", "tau"), "lu_unpack": ("P", "L", "U"), "qr": ("Q", "R"),
           "slogdet": ("sign", "logabsdet"), "svd": ("U", "S", "V"),
           "triangular_solve": ("solution", "cloned_coefficient"),
           "linalg_cholesky_ex": ("L", "info"), "linalg_eig": ("eigenvalues", "eigenvectors"),
           "linalg_eigh": ("eigenvalues", "eigenvectors"), "linalg_inv_ex": ("inverse", "info"),
           "linalg_ldl_factor": ("LD", "pivots"),
           "linalg_ldl_factor_ex": ("LD", "pivots", "info"),
           "linalg_lstsq": ("solution", "residuals", "rank", "singular_values"),
           "linalg_lu": ("P", "L", "U"), "linalg_lu_factor": ("LU", "pivots"),
           "linalg_lu_factor_ex": ("LU", "pivots", "info"), "linalg_qr": ("Q", "R"),
           "linalg_slogdet": ("sign", "logabsdet"), "linalg_solve_ex": ("result", "info"),
           "linalg_svd": ("U", "S", "Vh")}

for _name in _VALUES_INDICES_OPS:
    globals()[_name] = _return_type(_name, values_indices)
for _name, _fields in _OTHERS.items():
    globals()[_name] = _return_type(_name, namedtuple(_name, _fields))
del _name, _fields

__all__ = ["values_indices", *_VALUES_INDICES_OPS, *_OTHERS]

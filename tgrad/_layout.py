"""PyTorch's ``torch.layout``: how a tensor's elements are laid out in memory.

Dense tgrad tensors are strided (per-dim strides): their ``Tensor.layout`` is
``tgrad.strided``. Sparse COO tensors (``tgrad.sparse``: ``sparse_coo_tensor``,
``Tensor.to_sparse``) report ``tgrad.sparse_coo``, and ``zeros_like`` / ``empty_like`` of one
give an empty sparse COO tensor, as PyTorch's. The other layouts PyTorch names
(``sparse_csr``, ``sparse_csc``, ``sparse_bsr``, ``sparse_bsc``, ``jagged``...) exist so that
code referring to them imports, but no tensor has them. A dense creation function given
``layout=`` anything other than ``tgrad.strided`` (or None) raises (``check_layout``);
``to_sparse`` and the ``*_like`` functions of a sparse tensor take ``tgrad.sparse_coo``.
"""

from __future__ import annotations


class layout:  # noqa: N801  (PyTorch's name: torch.layout is the type)
    """A memory layout; the instances are interned module constants (``tgrad.strided``)."""

    __slots__ = ("name",)
    __module__ = "tgrad"  # tgrad.layout, as torch.layout

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"tgrad.{self.name}"

    def __reduce__(self) -> str:
        return self.name  # pickled by reference to the module constant (as dtypes are)


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")
_mkldnn = layout("_mkldnn")

LAYOUTS = ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc",
           "jagged", "_mkldnn")


def check_layout(op: str, value) -> None:
    """The ``layout=`` argument of creation function ``op``: None or ``tgrad.strided``
    pass; another layout raises RuntimeError (tgrad has dense strided tensors only); a
    non-layout raises PyTorch's TypeError."""
    if value is None or value is strided:
        return
    if not isinstance(value, layout):
        raise TypeError(f"{op}(): argument 'layout' must be tgrad.layout, not "
                        f"{type(value).__name__}")
    raise RuntimeError(f"{op}(): layout={value!r} is not supported: tgrad supports only the "
                       f"strided layout (pass layout=tgrad.strided or leave it out)")

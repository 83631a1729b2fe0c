"""Embedding: a lookup table; row i of ``weight`` is the vector of index i."""

from __future__ import annotations

from tgrad.nn import init
from tgrad.nn.modules.module import Module
from tgrad.nn.parameter import Parameter
from tgrad.tensor import Tensor


def _setup_table(module: Module, num_embeddings: int, embedding_dim: int, padding_idx,
                 weight, trainable: bool, device, dtype, pad_name: str) -> None:
    """The (num_embeddings, embedding_dim) table of Embedding and EmbeddingBag: padding_idx
    checked and made non-negative, the weight given (its storage shared) or drawn by the
    module's reset_parameters. pad_name keeps each module's PyTorch text."""
    module.num_embeddings, module.embedding_dim = num_embeddings, embedding_dim
    if padding_idx is not None:
        if not -num_embeddings <= padding_idx < num_embeddings:
            raise AssertionError(f"{pad_name} must be within num_embeddings")
        padding_idx %= num_embeddings
    module.padding_idx = padding_idx
    if weight is None:
        from tgrad.ops.creation import empty
        module.weight = Parameter(empty(num_embeddings, embedding_dim, device=device,
                                        dtype=dtype), requires_grad=trainable)
        module.reset_parameters()
    else:
        if tuple(weight.shape) != (num_embeddings, embedding_dim):
            raise AssertionError("Shape of weight does not match num_embeddings and "
                                 "embedding_dim")
        module.weight = Parameter(weight, requires_grad=trainable)


class Embedding(Module):
    """input: integer tensor (*) -> output (*, embedding_dim).  weight ~ N(0, 1);
    the row ``padding_idx`` starts at zeros and receives no gradient.
    Backward: dweight[i] = sum of the output gradients at positions where input == i
    (divided by the count of i in the input with ``scale_grad_by_freq``). ``max_norm``:
    each forward first renormalises the referenced rows of ``weight`` in place (see
    F.embedding). ``sparse=True``: weight.grad is a sparse COO tensor (tgrad.sparse)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        _setup_table(self, num_embeddings, embedding_dim, padding_idx, _weight, not _freeze,
                     device, dtype, "Padding_idx")

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding whose weight is ``embeddings`` (num_embeddings, embedding_dim),
        sharing its storage as PyTorch does; ``freeze`` (default) makes it require no
        gradient. The ``padding_idx`` row keeps its pretrained values (it only gets no
        gradient). max_norm, norm_type and scale_grad_by_freq as in the constructor;
        sparse=True gives a sparse COO weight gradient."""
        if not isinstance(embeddings, Tensor):
            raise TypeError(f"Embedding.from_pretrained: embeddings must be a Tensor, got "
                            f"{type(embeddings).__name__}")
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx=padding_idx, max_norm=max_norm,
                   norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse,
                   _weight=embeddings, _freeze=freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            from tgrad.autograd.grad_mode import no_grad
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        from tgrad.nn.functional import embedding
        return embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                         self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s


class EmbeddingBag(Module):
    """input (B, N) or (n,) with offsets (B,) -> (B, embedding_dim): the sum, mean or max
    of each bag's embedding rows (``tgrad.nn.functional.embedding_bag``). weight ~ N(0, 1);
    the row ``padding_idx`` starts at zeros and is left out of the bags."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None,
                 include_last_offset: bool = False, padding_idx: int | None = None,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.mode, self.include_last_offset = mode, include_last_offset
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.max_norm, self.norm_type = max_norm, norm_type
        _setup_table(self, num_embeddings, embedding_dim, padding_idx, _weight, True, device,
                     dtype, "padding_idx")

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        mode: str = "mean", include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        """An EmbeddingBag whose weight is ``embeddings`` (sharing its storage);
        ``freeze`` (default) makes it require no gradient."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm=max_norm, norm_type=norm_type, mode=mode,
                  _weight=embeddings,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    reset_parameters = Embedding.reset_parameters

    def forward(self, input: Tensor, offsets: Tensor | None = None,  # noqa: A002
                per_sample_weights: Tensor | None = None) -> Tensor:
        from tgrad.nn.functional import embedding_bag
        return embedding_bag(input, self.weight, offsets, max_norm=self.max_norm,
                             norm_type=self.norm_type, mode=self.mode,
                             scale_grad_by_freq=self.scale_grad_by_freq, sparse=self.sparse,
                             per_sample_weights=per_sample_weights,
                             include_last_offset=self.include_last_offset,
                             padding_idx=self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode='{self.mode}'"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

"""AdaptiveLogSoftmaxWithLoss: the adaptive softmax of Grave et al. ("Efficient softmax
approximation for GPUs"), with PyTorch's parameter layout, so state dicts share its keys:
``head`` Linear(in_features, shortlist + n_clusters) and ``tail`` a ModuleList of
Sequential(Linear(in_features, hsz_i, bias=False), Linear(hsz_i, osz_i, bias=False)),
hsz_i = in_features // div_value ** (i + 1), osz_i the size of cluster i.

The classes [0, cutoffs[0]) (the shortlist) are scored by the head; cluster i holds the
classes [cutoffs[i], cutoffs[i + 1]) (cutoffs ends with n_classes) and is one more head
entry, shortlist + i. So
    log p(c | x) = head_logprob[c]                                    (c < cutoffs[0])
    log p(c | x) = head_logprob[shortlist + i] + log_softmax(tail_i(x))[c - cutoffs[i]]
                                                               (c in cluster i)
and the probabilities over all n_classes sum to 1. forward computes the tail only for the
rows whose target is in that cluster. Gradients are those of the parts (linear,
log_softmax, gather, index_add).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence

from tgrad import dtypes
from tgrad.nn import functional as F
from tgrad.nn.modules.container import ModuleList, Sequential
from tgrad.nn.modules.linear import Linear
from tgrad.nn.modules.module import Module
from tgrad.tensor import Tensor

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax (see the module docstring). forward(input (N, in_features), target
    (N,) int) -> _ASMoutput(output (N,) the log-probability of each target, loss the mean of
    -output); an unbatched input (in_features,) with a 0-d target gives a 0-d output.
    log_prob(input (N, in_features)) -> (N, n_classes); predict(input) -> (N,) int64, the
    most probable class."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device=None,
                 dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device,
                           dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(
                Linear(in_features, hsz, bias=False, device=device, dtype=dtype),
                Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        targ_dim = target_.ndim
        if targ_dim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {tuple(input_.shape)}")
        elif targ_dim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {tuple(input_.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if target_.dtype.is_floating_point or target_.dtype is dtypes.bool_:
            raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss: target must hold integer class "
                               f"indices (int64), got {target_.dtype.name}")
        batched = targ_dim > 0
        input = input_ if batched else input_.unsqueeze(0)  # noqa: A001  (N, in_features)
        target = target_ if batched else target_.unsqueeze(0)  # (N,)
        if target.numel():
            lo, hi = int(target.min()), int(target.max())  # on a GPU: synchronizing reads
            if lo < 0 or hi > self.n_classes - 1:
                raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], "
                                   f"but values in range [{lo}, {hi}] were found. ")
        # cluster of each row's target: 0 the shortlist, i + 1 the tail cluster i
        cluster = sum((target >= c).long() for c in self.cutoffs[:-1])
        in_head = cluster == 0
        head_index = in_head.long() * target + (~in_head).long() * (
            self.shortlist_size + cluster - 1)  # the head entry each row reads
        head_logprob = F.log_softmax(self.head(input), dim=1)  # (N, head_size)
        output = head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)  # (N,)
        for i in range(self.n_clusters):
            rows = (cluster == i + 1).nonzero().squeeze(1)  # (m,)
            if rows.numel() == 0:
                continue
            relative = target.index_select(0, rows) - self.cutoffs[i]
            cluster_logprob = F.log_softmax(self.tail[i](input.index_select(0, rows)), dim=1)
            output = output.index_add(
                0, rows, cluster_logprob.gather(1, relative.unsqueeze(1)).squeeze(1))
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:  # noqa: A002
        """(N, n_classes) log-probabilities from input (N, in_features) and its head output
        (N, head_size)."""
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            k = self.shortlist_size + i
            parts.append(F.log_softmax(self.tail[i](input), dim=1) + head_logprob[:, k:k + 1])
        from tgrad.ops.shape import cat
        return cat(parts, 1)

    def _check_2d(self, op: str, input: Tensor) -> None:  # noqa: A002
        if input.ndim != 2:
            raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss.{op}: expected a 2-D input (N, "
                               f"{self.in_features}), got shape {tuple(input.shape)}; "
                               f"unsqueeze(0) a single example")

    def log_prob(self, input: Tensor) -> Tensor:  # noqa: A002
        """(N, in_features) -> (N, n_classes) log-probabilities of every class."""
        self._check_2d("log_prob", input)
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:  # noqa: A002
        """(N, in_features) -> (N,) int64: the most probable class, log_prob(input).argmax(1).
        A row whose head argmax is a shortlist class needs no tail (that class's probability
        is at least its cluster entries' total); the others read their full log_prob."""
        self._check_2d("predict", input)
        head_output = self.head(input)
        output = head_output.argmax(1)
        rows = (output >= self.shortlist_size).nonzero().squeeze(1)
        if rows.numel() == 0:
            return output
        full = self._full_log_prob(input.index_select(0, rows),
                                   head_output.index_select(0, rows))
        return output.index_copy(0, rows, full.argmax(1))

"""DistributedSampler (PyTorch's torch.utils.data.distributed): the share of a dataset's
indices that one of ``num_replicas`` processes reads.

tgrad has no process groups (no torch.distributed): ``num_replicas`` and ``rank`` must be
given; leaving one out raises PyTorch's error for a process group that was never
initialized. The algorithm is PyTorch's: with ``shuffle``, ``tgrad.randperm(len(dataset),
generator=tgrad.Generator().manual_seed(seed + epoch))`` (tgrad's randperm stream, so the
order is not torch's), else ``0 .. len - 1``; then padded by repeating its start to a
multiple of ``num_replicas`` (or, with ``drop_last``, cut down to one), and every
``num_replicas``-th index from ``rank`` is this replica's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from tgrad.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[int]):
    """Indices ``rank, rank + num_replicas, ...`` of the (shuffled with ``seed + epoch``,
    padded or cut) index list; ``len`` is ``num_samples``, the same for every replica:
    ``ceil(N / num_replicas)``, or ``ceil((N - num_replicas) / num_replicas)`` with
    ``drop_last`` when N is not a multiple. Call ``set_epoch(e)`` every epoch to reshuffle."""

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:  # PyTorch's text (dist.get_world_size())
            raise ValueError("Default process group has not been initialized, please make "
                             "sure to call init_process_group. (tgrad has no process groups: "
                             "pass num_replicas and rank to DistributedSampler)")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas)
                                         / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            from tgrad import Generator, randperm
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:  # pad with the start (repeated as often as needed)
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match "
                                 f"total_size ({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not "
                                 f"match num_samples ({self.num_samples})")
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose shuffle the next iteration gives (seed + epoch)."""
        self.epoch = epoch

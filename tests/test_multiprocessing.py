"""tgrad.multiprocessing: Python's multiprocessing names plus PyTorch's spawn /
start_processes semantics (fn(i, *args) per process; a child's exception re-raised in the
parent). The children are forked here (the test module needs no import in a fresh
interpreter); tensors travel as pickled copies."""

from __future__ import annotations

import pytest

import tgrad
import tgrad.multiprocessing as mp


def _scaled_ones(i, queue):
    queue.put((i, (tgrad.ones(2) * i).tolist()))


def _fails_in_one(i):
    if i == 1:
        raise ValueError("boom in child")


def test_spawn_runs_fn_per_process_and_reraises_a_child_error():
    ctx = mp.get_context("fork")
    queue = ctx.SimpleQueue()
    assert mp.spawn(_scaled_ones, args=(queue,), nprocs=2, start_method="fork") is None
    assert sorted(queue.get() for _ in range(2)) == [(0, [0.0, 0.0]), (1, [1.0, 1.0])]
    with pytest.raises(mp.ProcessRaisedException, match="boom in child") as e:
        mp.spawn(_fails_in_one, nprocs=2, start_method="fork")
    assert e.value.error_index == 1
    context = mp.start_processes(_scaled_ones, args=(queue,), nprocs=1, join=False,
                                 start_method="fork")
    assert context.join() and queue.get() == (0, [0.0, 0.0])
    assert mp.Queue is not None and mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    assert tgrad.multiprocessing is mp

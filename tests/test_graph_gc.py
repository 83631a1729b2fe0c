"""What a recorded graph costs Python's garbage collector.

A graph kept alive (a long unrolled loop, a list of outputs) is walked by every full
collection, so each object it holds that the collector tracks is paid for again and again:
with 100,000 recorded ops alive, collections took more time than the ops. The metadata a node
keeps per input and output (shape, dtype, device) is therefore interned (one shared tuple per
distinct value), and a view's replay chain holds its op's shared bound ``apply``.
"""

from __future__ import annotations

import gc
from collections import Counter

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck


def _tracked_per_op(make, step, n: int = 200) -> tuple:
    """Objects the collector still tracks per recorded op after a collection, for a chain
    kept alive (collections untrack tuples of untracked items, so a fresh shape tuple costs
    nothing): the new objects reachable from the chain's second ``n`` outputs, so that
    one-time caches filled by the first ops, and objects another thread of the test run
    makes meanwhile, are not counted. Returns (per op, {type name: per op})."""
    outs = [make()]
    for _ in range(n):
        outs.append(step(outs[-1]))
    gc.collect()
    before = {id(o) for o in gc.get_objects()}
    for _ in range(n):
        outs.append(step(outs[-1]))
    gc.collect()
    new = {id(o): o for o in gc.get_objects() if id(o) not in before}
    graph, stack = {}, outs[n + 1:]
    while stack:
        o = stack.pop()
        if id(o) not in graph:
            graph[id(o)] = o
            stack.extend(r for r in gc.get_referents(o) if id(r) in new)
    kinds = Counter(type(o).__name__ for o in graph.values())
    del outs, new, graph, stack
    return sum(kinds.values()) / n, {k: v / n for k, v in kinds.items() if v >= n // 2}


def test_metadata_is_shared_between_nodes_of_the_same_shape_dtype_and_device():
    x = tgrad.tensor(np.ones((3, 2)), requires_grad=True)
    a, b = x * 2.0, (x + 1.0).exp()
    # one tuple per (shape, dtype, device): the inputs' and outputs' metadata are the same
    # object, and a node's one-output tuple is too
    assert a.grad_fn._out_meta is b.grad_fn._out_meta
    assert a.grad_fn._in_meta[0] is b.grad_fn._in_meta[0] is a.grad_fn._out_meta[0]
    assert a.grad_fn._out_meta[0] == ((3, 2), tgrad.float64, tgrad.device("cpu"))
    c = x.float() * 2.0  # another dtype, another shape: other metadata
    d = x.sum(0) * 2.0
    assert c.grad_fn._out_meta[0] == ((3, 2), tgrad.float32, tgrad.device("cpu"))
    assert d.grad_fn._out_meta[0] == ((2,), tgrad.float64, tgrad.device("cpu"))
    assert len({id(n._out_meta[0]) for n in (a.grad_fn, c.grad_fn, d.grad_fn)}) == 3


def test_a_unary_node_shares_its_input_metadata_tuple():
    x = tgrad.tensor(np.ones(5), requires_grad=True)
    y, z = x.exp(), x.tanh()
    assert y.grad_fn._in_meta is z.grad_fn._in_meta is y.grad_fn._out_meta
    assert y.grad_fn._in_meta == (((5,), tgrad.float64, tgrad.device("cpu")),)


@pytest.mark.parametrize("step, most", [
    (lambda y: y * 1.0001, 6),  # tensor, storage, node, its edge, edges, in_meta
    (lambda y: y.exp(), 8),  # + the saved output's alias and its SavedTensor; in_meta shared
    (lambda y: y + y, 7),
])
def test_a_recorded_op_keeps_few_objects_for_the_collector(step, most):
    per_op, kinds = _tracked_per_op(lambda: tgrad.tensor(np.ones(4), requires_grad=True),
                                    step)
    assert per_op <= most + 0.05, str(kinds)  # (a str: shown whole, not cut by pytest)


def test_a_view_chain_holds_the_shared_bound_apply():
    x = tgrad.tensor(np.arange(6.0), requires_grad=True) * 1.0
    v1, v2 = x.view(2, 3), x.view(3, 2)
    (fn1, _), = v1._view_chain
    (fn2, _), = v2._view_chain
    assert fn1 is fn2
    v1[0, 1] = 7.0  # the chain still replays: writing through the view reaches the base
    assert x.tolist() == [0.0, 7.0, 2.0, 3.0, 4.0, 5.0]


def test_metadata_cache_starts_over_past_its_limit(monkeypatch):
    from tgrad.autograd import function
    monkeypatch.setattr(function, "_METAS_LIMIT", 4)
    cpu = tgrad.device("cpu")
    cpu._metas.clear()
    for n in range(1, 12):  # 11 distinct shapes: the cache never holds more than 4
        y = tgrad.tensor(np.ones(n), requires_grad=True) * 2.0
        assert y.grad_fn._out_meta[0] == ((n,), tgrad.float64, cpu)
        assert len(cpu._metas) <= 4
    # gradients still check against their shapes after the cache was cleared
    x = tgrad.tensor(np.random.default_rng(0).standard_normal((3, 1)), requires_grad=True)
    w = tgrad.tensor(np.random.default_rng(1).standard_normal((1, 4)), requires_grad=True)
    assert gradcheck(lambda a, b: (a * b).exp(), (x, w))
    out = (x * w).sum()
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), w.detach().numpy().sum() * np.ones((3, 1)),
                               rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), x.detach().numpy().sum() * np.ones((1, 4)),
                               rtol=1e-12)


def _has_own_dict(obj) -> bool:
    """True when ``obj``'s attributes live in a dict of their own (not the class's shared
    key table): the dict is then one of the objects the collector reaches from it."""
    return any(type(r) is dict for r in gc.get_referents(obj))


class _Twice(tgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.factor = 2.0
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * ctx.factor


def test_nodes_made_after_many_unrecorded_ones_keep_the_shared_attribute_table():
    # CPython's shared key table takes one new name once a few dozen instances exist; the
    # first 60 nodes of this class run under no_grad (no _seq, _edges, ... set), so without
    # the fields seeded at class creation every recorded node would get a dict of its own
    x = tgrad.tensor(np.arange(3.0), requires_grad=True)
    with tgrad.no_grad():
        for _ in range(60):
            _Twice.apply(x)
    y = _Twice.apply(x)
    assert not _has_own_dict(y.grad_fn)
    ys = [_Twice.apply(x) for _ in range(60)]
    y.sum().backward()  # release() sets _released on a node made after 60 others
    assert not _has_own_dict(y.grad_fn)
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    assert [v.tolist() for v in ys[:2]] == [[0.0, 2.0, 4.0]] * 2

"""tgrad.utils._pytree: PyTorch's pytree flatten / unflatten / map over nested containers
(expected values written from PyTorch 2.13's, measured)."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest

import tgrad
from tgrad.utils import _pytree as pytree

Pair = namedtuple("Pair", "x y")


def test_flatten_gives_leaves_in_order_and_a_spec_that_rebuilds_the_tree():
    tree = (1, [2, {"a": 3, "b": None}], Pair(4, deque([5], maxlen=3)),
            OrderedDict(z=6, y=7), defaultdict(list, {"k": 8}))
    leaves, spec = pytree.tree_flatten(tree)
    assert leaves == [1, 2, 3, None, 4, 5, 6, 7, 8]
    assert spec.num_leaves == 9 and spec == pytree.tree_structure(tree)
    back = pytree.tree_unflatten(leaves, spec)
    assert back == tree and type(back[2]) is Pair and back[2].y.maxlen == 3
    assert type(back[3]) is OrderedDict and back[4].default_factory is list
    assert repr(pytree.tree_structure((1, [2, 3]))) == \
        "TreeSpec(tuple, None, [*,\n  TreeSpec(list, None, [*,\n    *])])"
    assert pytree.treespec_pprint(pytree.tree_structure((1, [2, 3]))) == "(*, [*, *])"
    assert pytree.tree_flatten(None) == ([None], pytree.LeafSpec())
    assert pytree.tree_structure((1, (2,))) != pytree.tree_structure((1, [2]))
    with pytest.raises(ValueError, match="has length 2 but the spec refers to a pytree that "
                                         "holds 3 items"):
        pytree.tree_unflatten([1, 2], pytree.tree_structure((1, [2, 3])))


def test_map_family_over_tensors():
    tree = {"w": tgrad.tensor([1.0, 2.0]), "meta": ("name", 3)}
    doubled = pytree.tree_map_only(tgrad.Tensor, lambda t: t * 2, tree)
    assert doubled["w"].tolist() == [2.0, 4.0] and doubled["meta"] == ("name", 3)
    assert pytree.tree_map(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)]) == [11, (22, 33)]
    with pytest.raises(ValueError, match="Node arity mismatch; expected 2, but got 1"):
        pytree.tree_map(lambda a, b: a + b, [1, 2], [1])
    seen = []
    assert pytree.tree_map_(seen.append, [1, [2]]) == [1, [2]] and seen == [1, 2]
    assert pytree.tree_all(lambda v: v > 0, [1, (2,)]) and not pytree.tree_any(bool, [0, [0]])
    assert pytree.tree_any_only(str, lambda s: s == "name", tree)
    assert pytree.tree_leaves([1, [2]], is_leaf=lambda x: isinstance(x, list)) == [[1, [2]]]


def test_registered_node():
    class Point:
        def __init__(self, a, b):
            self.a, self.b = a, b

    pytree.register_pytree_node(Point, lambda p: ([p.a, p.b], None),
                                lambda children, _: Point(*children))
    leaves, spec = pytree.tree_flatten([Point(1, (2, 3))])
    assert leaves == [1, 2, 3]
    rebuilt = pytree.tree_unflatten([4, 5, 6], spec)[0]
    assert isinstance(rebuilt, Point) and rebuilt.a == 4 and rebuilt.b == (5, 6)
    with pytest.raises(ValueError, match="already registered"):
        pytree.register_pytree_node(Point, lambda p: ([], None), lambda c, _: None)

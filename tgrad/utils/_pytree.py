"""``tgrad.utils._pytree``: PyTorch's ``torch.utils._pytree`` core, for libraries that walk
nested containers of tensors. A pytree is a leaf or a node: a tuple, list, dict,
OrderedDict, defaultdict, deque, namedtuple, or a class given to ``register_pytree_node``;
everything else (None included) is a leaf. ``tree_flatten`` gives the leaves in order and a
``TreeSpec`` (node type, context such as a dict's keys, child specs) that
``tree_unflatten`` rebuilds the tree from; ``tree_map`` and friends apply a function to the
leaves. The ``*_with_path`` variants and spec serialization are not provided."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque
from typing import Any, Callable, Iterator

__all__ = ["TreeSpec", "LeafSpec", "register_pytree_node", "tree_is_leaf", "tree_flatten",
           "tree_unflatten", "tree_iter", "tree_leaves", "tree_structure", "tree_map",
           "tree_map_", "tree_map_only", "tree_map_only_", "tree_all", "tree_any",
           "tree_all_only", "tree_any_only", "treespec_pprint", "is_namedtuple",
           "is_namedtuple_class", "is_namedtuple_instance"]

# node type -> (flatten(node) -> (children, context), unflatten(children, context) -> node)
_NODES: dict = {
    tuple: (lambda t: (list(t), None), lambda c, _: tuple(c)),
    list: (lambda t: (list(t), None), lambda c, _: list(c)),
    dict: (lambda d: (list(d.values()), list(d)), lambda c, keys: dict(zip(keys, c))),
    OrderedDict: (lambda d: (list(d.values()), list(d)),
                  lambda c, keys: OrderedDict(zip(keys, c))),
    defaultdict: (lambda d: (list(d.values()), [d.default_factory, list(d)]),
                  lambda c, ctx: defaultdict(ctx[0], zip(ctx[1], c))),
    deque: (lambda d: (list(d), d.maxlen), lambda c, maxlen: deque(c, maxlen=maxlen)),
}
_NAMEDTUPLE = (lambda t: (list(t), type(t)), lambda c, cls: cls(*c))


def is_namedtuple_class(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")


def is_namedtuple_instance(obj: Any) -> bool:
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj: Any) -> bool:
    """A namedtuple class or instance."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable, *,
                         serialized_type_name: str | None = None, **kwargs: Any) -> None:
    """Make ``cls`` a node: ``flatten_fn(obj) -> (children, context)``,
    ``unflatten_fn(children, context) -> obj`` (PyTorch's; registering a type twice raises
    its ValueError)."""
    if cls in _NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    _NODES[cls] = (flatten_fn, unflatten_fn)


def _node(tree: Any):
    """(type name, flatten, unflatten) of a node, None for a leaf."""
    kind = type(tree)
    if kind in _NODES:
        return (kind, *_NODES[kind])
    if is_namedtuple_class(kind):
        return ("namedtuple", *_NAMEDTUPLE)
    return None


class TreeSpec:
    """A pytree's structure: ``type`` (the node's class; ``namedtuple`` nodes keep their
    class as ``context``), ``context``, ``children_specs``; ``num_leaves``, ``num_nodes``;
    equal specs describe the same structure."""

    def __init__(self, type: Any, context: Any, children_specs: list) -> None:  # noqa: A002
        self.type, self.context, self.children_specs = type, context, children_specs
        self.num_leaves = sum(c.num_leaves for c in children_specs)
        self.num_nodes = 1 + sum(c.num_nodes for c in children_specs)

    def is_leaf(self) -> bool:
        return False

    def children(self) -> list:
        return list(self.children_specs)

    def child(self, index: int) -> TreeSpec:
        return self.children_specs[index]

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeSpec) and type(other) is type(self)
                and self.type == other.type and self.context == other.context
                and self.children_specs == other.children_specs)

    __hash__ = None

    def unflatten(self, leaves: Any) -> Any:
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                             f"but the spec refers to a pytree that holds {self.num_leaves} "
                             f"items ({self}).")
        return self._build(iter(leaves))

    def _build(self, leaves: Iterator) -> Any:
        children = [c._build(leaves) for c in self.children_specs]
        if self.type == "namedtuple":
            return _NAMEDTUPLE[1](children, self.context)
        return _NODES[self.type][1](children, self.context)

    def __repr__(self, indent: int = 0) -> str:
        name = self.type if isinstance(self.type, str) else self.type.__name__
        context = self.context
        if isinstance(context, list) and context and isinstance(context[0], type):
            context = "[" + ", ".join(repr(c) for c in context) + "]"
        parts = [c.__repr__(indent + 2) for c in self.children_specs]
        return (f"TreeSpec({name}, {context}, ["
                + (",\n" + " " * (indent + 2)).join(parts) + "])")


class LeafSpec(TreeSpec):
    """A leaf's spec (printed ``*``)."""

    def __init__(self) -> None:
        super().__init__(None, None, [])
        self.num_leaves, self.num_nodes = 1, 1

    def is_leaf(self) -> bool:
        return True

    def _build(self, leaves: Iterator) -> Any:
        return next(leaves)

    def __repr__(self, indent: int = 0) -> str:
        return "*"


def tree_is_leaf(tree: Any, is_leaf: Callable | None = None) -> bool:
    """True for a leaf (or where ``is_leaf(tree)`` says so); an empty container is a node."""
    return (is_leaf is not None and is_leaf(tree)) or _node(tree) is None


def _flatten(tree: Any, is_leaf: Callable | None, leaves: list) -> TreeSpec:
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return LeafSpec()
    node = _node(tree)
    if node is None:
        leaves.append(tree)
        return LeafSpec()
    kind, flatten, _ = node
    children, context = flatten(tree)
    return TreeSpec(kind, context, [_flatten(c, is_leaf, leaves) for c in children])


def tree_flatten(tree: Any, is_leaf: Callable | None = None) -> tuple:
    """(leaves, TreeSpec) of ``tree``."""
    leaves: list = []
    spec = _flatten(tree, is_leaf, leaves)
    return leaves, spec


def tree_unflatten(leaves: Any, treespec: TreeSpec) -> Any:
    """The tree of ``treespec`` with ``leaves`` in order."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be "
                        f"instance of TreeSpec but got item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_iter(tree: Any, is_leaf: Callable | None = None) -> Iterator:
    return iter(tree_flatten(tree, is_leaf)[0])


def tree_leaves(tree: Any, is_leaf: Callable | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable | None = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def _leaves_of_all(tree: Any, rests: tuple, is_leaf: Callable | None) -> tuple:
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves]
    for rest in rests:
        columns.append(_flatten_up_to(spec, rest))
    return spec, columns


def _flatten_up_to(spec: TreeSpec, tree: Any) -> list:
    """``tree``'s subtrees at ``spec``'s leaves (``tree`` must have spec's nodes)."""
    if spec.is_leaf():
        return [tree]
    node = _node(tree)
    if node is None or node[0] != spec.type:
        raise ValueError(f"Node type mismatch; expected {spec.type}, but got {type(tree)}.")
    children, context = node[1](tree)
    if len(children) != len(spec.children_specs):
        raise ValueError(f"Node arity mismatch; expected {len(spec.children_specs)}, but got "
                         f"{len(children)}.")
    if context != spec.context:
        raise ValueError(f"Node context mismatch for custom node type {spec.type}.")
    return [leaf for c, s in zip(children, spec.children_specs) for leaf in _flatten_up_to(s, c)]


def tree_map(func: Callable, tree: Any, *rests: Any, is_leaf: Callable | None = None) -> Any:
    """A tree of ``tree``'s structure with ``func(leaf, *matching leaves of rests)``."""
    spec, columns = _leaves_of_all(tree, rests, is_leaf)
    return spec.unflatten(func(*xs) for xs in zip(*columns))


def tree_map_(func: Callable, tree: Any, *rests: Any, is_leaf: Callable | None = None) -> Any:
    """Calls ``func`` on the leaves for its side effects; returns ``tree``."""
    _, columns = _leaves_of_all(tree, rests, is_leaf)
    for xs in zip(*columns):
        func(*xs)
    return tree


def _only(types: Any, func: Callable) -> Callable:
    return lambda x: func(x) if isinstance(x, types) else x


def tree_map_only(types: Any, func: Callable, tree: Any,
                  is_leaf: Callable | None = None) -> Any:
    """tree_map applying ``func`` to the leaves that are instances of ``types`` only."""
    return tree_map(_only(types, func), tree, is_leaf=is_leaf)


def tree_map_only_(types: Any, func: Callable, tree: Any,
                   is_leaf: Callable | None = None) -> Any:
    return tree_map_(_only(types, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable, tree: Any, is_leaf: Callable | None = None) -> bool:
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred: Callable, tree: Any, is_leaf: Callable | None = None) -> bool:
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(types: Any, pred: Callable, tree: Any,
                  is_leaf: Callable | None = None) -> bool:
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, types))


def tree_any_only(types: Any, pred: Callable, tree: Any,
                  is_leaf: Callable | None = None) -> bool:
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, types))


def treespec_pprint(treespec: TreeSpec) -> str:
    """The structure with ``*`` for the leaves: ``(*, [*, *])``, ``{'a': *}``."""
    dummy = tree_unflatten([_Star()] * treespec.num_leaves, treespec)
    return repr(dummy)


class _Star:
    def __repr__(self) -> str:
        return "*"

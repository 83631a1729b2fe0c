"""Tensor hooks and retain_grad.

A leaf's hooks live on the tensor and run in its AccumulateGrad before accumulation; a
non-leaf's hooks are pre-hooks of its grad_fn for its output slot. A hook returning a
tensor replaces the gradient.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict

from tgrad.autograd.node import RemovableHandle, run_leaf_hooks  # noqa: F401 (re-export)


def register_tensor_hook(t, hook) -> RemovableHandle:
    gf = t.grad_fn
    if gf is None:
        if t._hooks is None:
            t._hooks = OrderedDict()
        table = t._hooks
    else:
        if gf._pre_hooks is None:
            gf._pre_hooks = {}
        table = gf._pre_hooks.setdefault(t._output_nr, OrderedDict())
    handle = RemovableHandle(table)
    table[handle.id] = hook
    return handle


def register_post_accumulate_hook(t, hook) -> RemovableHandle:
    if t._grad_fn is not None or t._base is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                           "tensors")
    if t._post_accumulate_hooks is None:
        t._post_accumulate_hooks = OrderedDict()
    handle = RemovableHandle(t._post_accumulate_hooks)
    t._post_accumulate_hooks[handle.id] = hook
    return handle


def install_retain_grad(t) -> None:
    gf = t.grad_fn
    if gf._retain_grad_refs is None:
        gf._retain_grad_refs = {}
    gf._retain_grad_refs[t._output_nr] = weakref.ref(t)
    t._retain_node = gf


def move_retain_grad(t) -> None:
    """After an in-place op gave ``t`` a new grad_fn, ``t.grad`` must receive the gradient of
    the new value (as PyTorch): move the retain_grad entry from the old node to the new."""
    old = getattr(t, "_retain_node", None)
    if old is not None and old._retain_grad_refs:
        for nr, ref in list(old._retain_grad_refs.items()):
            if ref() is t:
                del old._retain_grad_refs[nr]
    if t.grad_fn is not None:
        install_retain_grad(t)

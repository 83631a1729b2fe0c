"""In-place writes through a view: the base's gradient is re-routed (PyTorch's CopySlices).

After ``view op= value`` the base ``B`` holds ``B_old`` outside the view's region and the
op's result ``R`` inside it. So for an incoming gradient ``g`` of the new base:
    dB_old = g outside the region, exactly 0 inside (where, so a NaN g stays out)
    dR     = view(g)       (the same view ops replayed on g)
The region is found by replaying the view ops on a mask of ones and zeroing the view. A
chain that changes dtype (.real/.imag/view_as_real of a complex base, view_as_complex of a
real one) needs the mask in the base's dtype: for a complex base the region is per
component (b.real covers the real parts only), so
    dB_old = (Re g where Re mask != 0) + i (Im g where Im mask != 0).
The view's own grad_fn is then regenerated lazily from the base (see Tensor.grad_fn).
"""

from __future__ import annotations

import functools

import numpy as np

from tgrad.autograd.function import differentiable_formula
from tgrad.autograd.grad_mode import STATE
from tgrad.autograd.node import Node, gradient_edge


def replay_view(chain, t):
    """Apply the view ops recorded in ``chain`` to ``t``."""
    for fn, args in chain:
        t = fn(t, *args)
    return t


@functools.cache
def _view_as_complex():
    """complex_ops.ViewAsComplex, imported once (a module-level import would be circular)."""
    from tgrad.ops.complex_ops import ViewAsComplex
    return ViewAsComplex


class CopySlices(Node):
    def __init__(self, base, chain, result_edge: tuple) -> None:
        super().__init__()
        self.next_functions = (gradient_edge(base), result_edge)
        self.chain = chain
        self.shape = base.shape
        self.dtype = base.dtype
        self.device = base.device
        # the mask in the base's dtype (not bool) when the chain reinterprets the dtype
        self.split = base.dtype.is_complex
        if not self.split:
            vac = _view_as_complex()
            for fn, _ in chain:
                if getattr(fn, "__self__", None) is vac:
                    self.split = True
                    break
        # a base not laid out contiguously over all its storage (x.t_()): the mask is built
        # in its layout, so that view ops by storage geometry (as_strided) write the mask
        self.layout = None
        data, root = base._data, base._storage.root
        if data is not root or type(data) is not np.ndarray or not data.flags.c_contiguous:
            # (a C-contiguous NumPy root: the base spans all its storage, from offset 0)
            if not base.is_contiguous() or base.storage_offset() or root.size != \
                    base.numel():
                from tgrad.ops.layout import storage_geometry
                self.layout = storage_geometry(base)

    def name(self) -> str:
        return "CopySlices"

    def apply(self, grads: list) -> tuple:
        from tgrad import bool as bool_
        from tgrad.ops.creation import full, zeros
        from tgrad.ops.elementwise import ne, where
        g = grads[0]
        if g is None:
            g = zeros(self.shape, dtype=self.dtype, device=self.device)
        if not (self.split or self.layout is not None or differentiable_formula()) \
                and g.is_contiguous():
            return self._plain(g)
        mdt = self.dtype if self.split else bool_
        one = (1 + 1j) if mdt.is_complex else 1  # both components of a complex mask set
        prev = STATE.enabled
        STATE.enabled = False
        try:
            if self.layout is None:
                outside = full(self.shape, one, dtype=mdt, device=self.device)
            else:
                from tgrad.ops.layout import with_geometry
                outside = with_geometry(zeros((), dtype=mdt, device=self.device), self.layout,
                                        fill=one)
            replay_view(self.chain, outside).fill_(0)
            if self.split and not self.dtype.is_complex:
                outside = ne(outside, 0)
        finally:
            STATE.enabled = prev
        if self.split and self.dtype.is_complex:
            from tgrad.ops.complex_ops import complex as complex_
            from tgrad.ops.complex_ops import imag, real
            kept = complex_(where(ne(real(outside), 0), real(g), 0.0),
                            where(ne(imag(outside), 0), imag(g), 0.0))
        else:
            kept = where(outside, g, 0.0)
        try:
            region = replay_view(self.chain, g)
        except RuntimeError:  # g laid out otherwise than the base (transposed by a later
            if g.is_contiguous():  # mT): view(-1) needs it dense; a dense g failing is a bug
                raise
            region = replay_view(self.chain, g.contiguous())
        return (kept, region)

    def _plain(self, g) -> tuple:
        """apply's values without a graph to record (no create_graph, no forward-AD level)
        for a contiguous g and a real (or bool) dtype: dB_old = a copy of g with the
        region zeroed (the same values as the where of the mask, without the mask),
        dR = view(g)."""
        kept = g.clone()  # (grad mode is off: nothing recorded)
        replay_view(self.chain, kept).fill_(0)
        return (kept, replay_view(self.chain, g))


def rebase_base(view, result_edge: tuple) -> None:
    """Give ``view._base`` a CopySlices grad_fn whose region gradient flows to
    ``result_edge``; mark the view's grad_fn stale so it is regenerated from the base."""
    base = view._base
    node = CopySlices(base, view._view_chain, result_edge)
    base._grad_fn = node
    base._output_nr = 0
    base._requires_grad = True
    view._grad_fn_version = -1

"""``einsum``: Einstein summation, composed of tgrad ops (no primitive, no kernel of its own).

How an equation runs (each step differentiable, so gradients and double backward come
from the parts):
1. Parse: ``...`` stands for the broadcast dims of each operand (aligned from the right);
   without ``->`` the output is the ``...`` dims then the labels seen once, sorted.
2. Per operand: a label repeated within it takes the diagonal (a ``diagonal`` view per
   repeat, as PyTorch's); labels no other operand and not the output has are summed at once.
3. Operands contract left to right: labels both sides share and something later needs are
   batch dims, shared labels nothing later needs are contracted; each step is one batched
   ``matmul`` of (batch, left, contracted) @ (batch, contracted, right), size-1 dims
   expanded to the label's size first (they broadcast, as in PyTorch).
4. Labels left over that the output lacks are summed; the rest are permuted to its order,
   and with two or more operands, or anything summed, made contiguous in it (so .view works
   where PyTorch's does).
"""

from __future__ import annotations

import functools
import math
import operator

from tgrad import dtypes
from tgrad.ops.matmul import matmul
from tgrad.tensor import Tensor

__all__ = ["einsum"]

_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _parse(equation: str, operands: tuple) -> tuple[list, list]:
    """(labels per operand, output labels); ``...`` becomes one private label per dim."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        word = "more" if len(operands) > len(terms) else "fewer"
        raise RuntimeError(f"einsum(): {word} operands were provided than specified in the "
                           f"equation ({len(operands)} operands, {len(terms)} in '{equation}')")
    n_ell = 0
    for k, (term, t) in enumerate(zip(terms, operands)):
        plain = term.replace("...", "")
        for c in plain:
            if c not in _LETTERS:
                raise RuntimeError(f"einsum(): invalid subscript given at index "
                                   f"{eq.index(c)} in the equation string, subscripts must be "
                                   f"in [a-zA-Z]")
        if "..." in term:
            if term.count("...") > 1:
                raise RuntimeError(f"einsum(): found more than one '...' in operand {k}")
            n_ell = max(n_ell, t.ndim - len(plain))
            if t.ndim < len(plain):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({len(plain)}) is more than the number of dimensions "
                                   f"({t.ndim}) for operand {k}")
        elif len(plain) != t.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                               f"({len(plain)}) does not match the number of dimensions "
                               f"({t.ndim}) for operand {k} and no ellipsis was given")
    ell = [chr(0x2460 + i) for i in range(n_ell)]  # private labels, never letters
    labels = []
    for term, t in zip(terms, operands):
        head, _, tail = term.partition("...")
        mid = ell[n_ell - (t.ndim - len(head) - len(tail)):] if "..." in term else []
        labels.append(list(head) + mid + list(tail))
    if arrow:
        head, dots, tail = rhs.partition("...")
        out = list(head) + (ell if dots else []) + list(tail)
        seen = set()
        for c in out:
            if c in _LETTERS and not any(c in ls for ls in labels):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   f"equation for any input operand")
            if c in seen:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   f"the output")
            if c not in _LETTERS and c not in ell:
                raise RuntimeError(f"einsum(): invalid subscript '{c}' in the output")
            seen.add(c)
    else:
        counts: dict = {}
        for ls in labels:
            for c in ls:
                counts[c] = counts.get(c, 0) + 1
        out = ell + sorted(c for c, n in counts.items() if n == 1 and c in _LETTERS)
    return labels, out


def _sizes(labels: list, operands: tuple) -> dict:
    """The size of each label; 1 broadcasts against any size."""
    size: dict = {}
    for k, (ls, t) in enumerate(zip(labels, operands)):
        for c, n in zip(ls, t.shape):
            m = size.get(c, 1)
            if n != 1 and m != 1 and n != m:
                name = c if c in _LETTERS else "..."
                raise RuntimeError(f"einsum(): subscript {name} has size {n} for operand {k} "
                                   f"which does not broadcast with previously seen size {m}")
            size[c] = m if n == 1 else n
    return size


def _diagonal(t: Tensor, ls: list) -> tuple[Tensor, list]:
    """Labels repeated within one operand: keep the diagonal (t[i, j, i] -> labels j, i), a
    view of t as PyTorch's (each repeat taken by ``diagonal``, which puts it last)."""
    n = {}
    for c, s in zip(ls, t.shape):
        if n.setdefault(c, s) != s:
            raise RuntimeError(f"einsum(): subscript {c} is repeated for an operand but the "
                               f"sizes don't match, {s} != {n[c]}")
    ls = list(ls)
    while len(set(ls)) < len(ls):
        c = next(c for k, c in enumerate(ls) if c in ls[k + 1:])
        first = ls.index(c)
        second = ls.index(c, first + 1)
        t = t.diagonal(0, first, second)
        ls = [x for k, x in enumerate(ls) if k not in (first, second)] + [c]
    return t, ls


def _sum_labels(t: Tensor, ls: list, drop: set) -> tuple[Tensor, list]:
    dims = tuple(i for i, c in enumerate(ls) if c in drop)
    if not dims:
        return t, ls
    return t.sum(dims), [c for c in ls if c not in drop]


def _arranged(t: Tensor, ls: list, order: list, size: dict) -> Tensor:
    """``t`` with its dims in ``order`` and size-1 dims expanded to their label's size."""
    if ls != order:  # (the identity permutation: no view)
        t = t.permute([ls.index(c) for c in order])
    target = tuple(size[c] for c in order)
    return t if t.shape == target else t.expand(target)


def _contract(a: Tensor, la: list, b: Tensor, lb: list, needed: set, size: dict):
    """One pairwise step: a batched matmul over the shared labels nothing later needs."""
    batch = [c for c in la if c in lb and c in needed]
    summed = [c for c in la if c in lb and c not in needed]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]
    prod = lambda cs: math.prod(size[c] for c in cs)  # noqa: E731
    nb, nl, nc, nr = prod(batch), prod(left), prod(summed), prod(right)
    a3 = _arranged(a, la, batch + left + summed, size).reshape(nb, nl, nc)
    b3 = _arranged(b, lb, batch + summed + right, size).reshape(nb, nc, nr)
    out = matmul(a3, b3).reshape([size[c] for c in batch + left + right])
    return out, batch + left + right


def _sublist(k, sub) -> str:
    """One subscripts list of the sublist form as equation text: 0..25 -> A..Z, 26..51 ->
    a..z, Ellipsis -> ``...`` (PyTorch's mapping); ``k``: the operand (None: the output)."""
    where = "the output" if k is None else f"operand {k}"
    if not isinstance(sub, (list, tuple)):
        raise TypeError(f"einsum(): the subscripts of {where} must be a list of ints in "
                        f"[0, 52) and Ellipsis, got {type(sub).__name__}; the sublist form "
                        f"is einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])")
    text = ""
    for s in sub:
        if s is Ellipsis:
            text += "..."
            continue
        try:
            n = operator.index(s)
        except TypeError:
            raise TypeError(f"einsum(): subscripts of {where} must be ints in [0, 52) or "
                            f"Ellipsis, got {type(s).__name__}") from None
        if not 0 <= n < 52:
            raise ValueError(f"einsum(): subscript in subscript list is not within the valid "
                             f"range [0, 52) (got {n} for {where})")
        text += chr(ord("A") + n) if n < 26 else chr(ord("a") + n - 26)
    return text


def _from_sublists(args: tuple) -> tuple[str, tuple]:
    """einsum(op0, sub0, op1, sub1, ..., [sub_out]) as (equation, operands), as PyTorch."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one "
                         "operand, or at least one operand and its subscripts list")
    operands = args[0::2] if len(args) % 2 == 0 else args[:-1:2]
    for k, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): operand {k} of the sublist form must be a Tensor, "
                            f"not {type(t).__name__}")
    equation = ",".join(_sublist(k, sub) for k, sub in enumerate(args[1::2]))
    if len(args) % 2:
        if isinstance(args[-1], Tensor):
            raise TypeError(f"einsum(): operand {len(operands)} has no subscripts list; the "
                            f"sublist form is einsum(op0, sublist0, op1, sublist1, ..., "
                            f"[sublist_out])")
        equation += "->" + _sublist(None, args[-1])
    return equation, tuple(operands)


def einsum(equation: str, *operands) -> Tensor:
    """Sum of products of ``operands`` over the subscripts ``equation`` names, as
    ``torch.einsum`` (e.g. ``"bij,bjk->bik"``, ``"ii->i"``, ``"...ij,...jk"``); also the
    sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` (ints 0..51 and Ellipsis, the
    output list optional), turned into the equation it stands for."""
    if isinstance(equation, Tensor):
        equation, operands = _from_sublists((equation,) + operands)
    elif not isinstance(equation, str):
        raise TypeError(f"einsum(): the first argument must be the equation string or the "
                        f"first operand (a Tensor), not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must provide at least one operand")
    for k, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): operand {k} must be a Tensor, not {type(t).__name__}")
    labels, out = _parse(equation, operands)
    dts = {t.dtype for t in operands}
    if len(dts) > 1:
        if not set(out).issuperset(set().union(*labels)):  # a contraction: PyTorch's error
            names = dtypes.SCALAR_TYPE_NAMES
            other = next(t.dtype for t in operands if t.dtype != operands[0].dtype)
            raise RuntimeError(
                f"einsum(): expected scalar type {names.get(operands[0].dtype)} but found "
                f"{names.get(other)} (operands {[str(t.dtype) for t in operands]} of a "
                f"contraction must have one dtype: convert them with .to(dtype))")
        # nothing summed: PyTorch's products promote the operands to their common dtype
        # (real x complex is complex)
        common = functools.reduce(dtypes.promote_types, dts)
        operands = tuple(t if t.dtype == common else t.to(common) for t in operands)
    terms = [_diagonal(t, ls) for t, ls in zip(operands, labels)]
    size = _sizes([ls for _, ls in terms], [t for t, _ in terms])
    # Sum at once the labels of one operand that nothing else (output or operand) has.
    keep = set(out)
    for k, (t, ls) in enumerate(terms):
        others = keep.union(*(set(terms[j][1]) for j in range(len(terms)) if j != k))
        terms[k] = _sum_labels(t, ls, set(ls) - others)
    cur, lc = terms[0]
    for k in range(1, len(terms)):
        t, ls = terms[k]
        needed = keep.union(*(set(terms[j][1]) for j in range(k + 1, len(terms))))
        cur, lc = _contract(cur, lc, t, ls, needed, size)
    cur, lc = _sum_labels(cur, lc, set(lc) - keep)
    res = _arranged(cur, lc, out, size)
    # Two or more operands, or one summed: a fresh result, made contiguous in the output's
    # label order so that .view works wherever PyTorch's does (PyTorch's layout, from its
    # own pairwise products and sums, is contiguous for most equations: "ij,jk->ki",
    # "ijk->ki", "...,...->..."; where it is not, tgrad's contiguous strides still allow
    # every view PyTorch's allow). One operand and nothing summed: a view of it, permuted
    # and diagonals taken, as PyTorch's ("ij->ji", "ii->i").
    summed = len(terms) == 1 and not set(labels[0]) <= keep
    return res.contiguous() if len(terms) > 1 or summed else res

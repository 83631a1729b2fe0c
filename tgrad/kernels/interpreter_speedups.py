"""Three pieces of work Triton's interpreter (3.6 to 3.9) does that change no result, made fast
(and one correction for NumPy 2.4, ``_index_of_one_element``).

1. Overflow checks computed and thrown away. Every int32 add, sub and mul in a kernel first
repeats itself in int64 and compares the result with int32's range
(``binary_op_sanitize_overflow_impl``), to hand the comparison to ``device_assert``, which
returns without looking at it unless the builder's options say ``debug`` (the interpreter's
never do). ``install()`` sets the interpreter's ``sanitize_overflow`` option to False while
``debug`` is False, so that work is skipped; with ``debug`` on, nothing changes.

2. ``tl.reduce`` with a combine function of tgrad's own (the product and the NaN-propagating
max/min of tgrad/kernels/reduction.py). The interpreter has NumPy fast paths for ``tl.sum``,
``tl.max``/``tl.min`` and argmax/argmin only; any other combine function goes through
``ReduceOps.generic_reduce``, which walks the block one element at a time in Python and calls
the combine function on 0-d tensors. ``install()`` replaces it by a pairwise tree over the
reduced axis: at each level, elements (0, 1), (2, 3), ... are combined by one call of the same
combine function on whole arrays (its operations are elementwise, so that equals calling it
element by element), an odd last element is carried to the next level, and the operands stay
in the block's order (only associativity is assumed, as Triton's GPU reduction assumes it).
A GPU block reduces in a tree too, so the rounding order is nearer the GPU's than the
interpreter's left-to-right loop.

3. Scans of triton.language repeated on every launch and nested device call. A launch
patches the builtins of triton.language (``_patch_lang``: ``inspect.getmembers`` of each
package, then a test of every member, about 0.1-0.5 ms each), and so does every call of a
jit function from inside a kernel: a helper of tgrad's, and ``tl.sum``/``tl.max``, which
are jit functions themselves; those later scans find every builtin patched already and
change nothing. ``install()`` lists each package's builtin names once (before any launch:
the modules do not change), patches a package from that list (the same test, on those
names only) and skips it while it is patched, until a patch scope restores (the launch's
end). 16 scans a launch before, 248 for a kernel with 30 nested calls; none now.

Measured on the CPU box (float32 op table of tests/_triton_interp_runner.py, one process):
440 s before, 279 s with the tree reduce, 200 s with both; ``amax`` of 5000 floats on the
interpreted cuda device: 8.6 s before, 0.07 s after. Speedup 3: an argsort of 30 integers
(21 bitonic steps, two ``tl.sum`` each) 55 -> 35 ms with the skip alone; a lone ``a * b``
of 8 floats 1.90 -> 1.55 ms with the list; that op table (TGRAD_EXTRA_CHECKS=0, with the
writers' device sort) 120 s -> 95 s (skip) -> 65 s (list); 91 s before both and the sort.
"""

from __future__ import annotations

import dataclasses

import numpy as np


def install() -> None:
    from triton import language as tl
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    if not builder.options.debug and builder.options.sanitize_overflow:
        builder.options = dataclasses.replace(builder.options, sanitize_overflow=False)

    reduce_ops = interpreter.ReduceOps
    if getattr(reduce_ops, "_tgrad_tree_reduce", False):
        return

    def tree_reduce(self, input):  # noqa: A002 - Triton's name
        original_axis = self.axis
        input, axis = self.unravel(input, self.axis)  # noqa: A001 - axis None: flattened, 0
        dtypes = [arg.dtype for arg in input]
        np_dtypes = [arg.handle.data.dtype for arg in input]
        data = [arg.handle.data for arg in input]

        def along(s: slice) -> tuple:
            return (slice(None),) * axis + (s,)

        n = data[0].shape[axis]
        while n > 1:
            half = n // 2
            left = [self.to_tensor(d[along(slice(0, 2 * half, 2))], t)
                    for d, t in zip(data, dtypes)]
            right = [self.to_tensor(d[along(slice(1, 2 * half, 2))], t)
                     for d, t in zip(data, dtypes)]
            out = self.combine_fn.fn(*left, *right)
            out = out if isinstance(out, tuple) else (out,)
            pairs = [np.broadcast_to(o.handle.data if isinstance(o, tl.core.tensor) else o,
                                     left[0].handle.data.shape).astype(dt)
                     for o, dt in zip(out, np_dtypes)]
            data = [np.concatenate([p, d[along(slice(2 * half, n))]], axis)
                    for p, d in zip(pairs, data)]
            n = data[0].shape[axis]
        ret = []
        for d, t in zip(data, dtypes):
            d = np.squeeze(d, axis)
            if self.keep_dims:
                d = (np.expand_dims(d, axis) if original_axis is not None
                     else d.reshape((1,) * input[0].handle.data.ndim))
            elif original_axis is None:
                d = d.item()
            ret.append(self.to_tensor(d, t))
        return ret

    reduce_ops.generic_reduce = tree_reduce
    reduce_ops._tgrad_tree_reduce = True
    _skip_repeated_patches(interpreter)
    _index_of_one_element(interpreter)


def _index_of_one_element(interpreter) -> None:
    """A correction, not a speed-up: a kernel's loop bound or index taken from a runtime
    value calls the interpreted tensor's ``__index__``, which Triton 3.6 to 3.8 define as
    ``int(handle.data)`` of a one-element array. NumPy 2.4 made that a TypeError ("only
    0-dimensional arrays can be converted to Python scalars"), so every reduction failed in
    the interpreter. Triton 3.9's own definition (triton-lang/triton#9172) squeezes first;
    the same one is installed here for every version."""
    patch_tensor = getattr(interpreter, "_patch_lang_tensor", None)
    if patch_tensor is None:  # (a Triton whose interpreter patches tensors otherwise)
        return

    def patch_lang_tensor(tensor, scope) -> None:
        patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    interpreter._patch_lang_tensor = patch_lang_tensor


def _skip_repeated_patches(interpreter) -> None:
    """3. (see the module doc) A package's builtins are scanned once until a scope restores,
    and a scan visits only the names that are builtins of the unpatched package (listed
    here, before any launch: triton.language's modules do not change)."""
    import inspect

    from triton import language as tl
    is_builtin = tl.core.is_builtin
    patch_attr = interpreter._patch_attr
    names = {id(pkg): [n for n, m in inspect.getmembers(pkg) if is_builtin(m)]
             for pkg in (tl, tl.tensor, tl.math, tl.core, tl.core.tensor,
                         tl.core.tensor_descriptor_base)}
    scan = interpreter._patch_builtin
    restore = interpreter._LangPatchScope.restore
    patched: set = set()  # ids of the packages whose builtins are all patched now

    def patch_builtin(pkg, builder, scope) -> None:
        key = id(pkg)
        if key in patched:
            return
        listed = names.get(key)
        if listed is None:
            scan(pkg, builder, scope)
        else:  # the scan's own test, on the listed names only
            for name in listed:
                member = getattr(pkg, name)
                if is_builtin(member):
                    patch_attr(pkg, name, member, builder, scope)
        patched.add(key)

    def restore_all(self) -> None:
        patched.clear()  # (conservative: the next call scans again)
        restore(self)

    interpreter._patch_builtin = patch_builtin
    interpreter._LangPatchScope.restore = restore_all

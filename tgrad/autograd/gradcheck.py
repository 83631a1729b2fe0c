"""gradcheck / gradgradcheck: compare analytical gradients with central differences.

For each input i requiring grad and each output o, the numerical Jacobian column for
element j is (f(x + eps e_j) - f(x - eps e_j)) / (2 eps), computed by perturbing the input
in place; the analytical Jacobian row for output element k is the vector-Jacobian product
with the one-hot grad_output e_k. They must agree within atol + rtol * |numerical|.
"""

from __future__ import annotations

import warnings

import numpy as np

from tgrad.autograd.grad_mode import STATE


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck on a mismatch (a RuntimeError, as in PyTorch)."""


def _as_tuple(x) -> tuple:
    from tgrad.tensor import Tensor
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _differentiable_outputs(outputs: tuple) -> list:
    return [o for o in outputs if getattr(o, "requires_grad", False)]


def _element_access(t):
    """(get(idx) -> float, put(idx, value)) on ``t``'s storage in place, any device: NumPy
    indexing on the CPU, the backend's view + copy primitives elsewhere (e.g. cuda)."""
    data = t._data
    if isinstance(data, np.ndarray):
        def put(idx, v):
            data[idx] = v
        return (lambda idx: data[idx].item()), put
    from tgrad.backends import get_backend
    be = get_backend(t.device)
    return ((lambda idx: be.to_host(be.basic_index(data, tuple(idx))).item()),
            (lambda idx, v: be.copy_(be.basic_index(data, tuple(idx)),
                                     be.full((), v, data.dtype))))


def _float_outputs(result) -> list:
    """The floating (and complex) tensors among ``func``'s outputs, the ones gradcheck
    compares (PyTorch's: an integer or bool output has no derivative to check)."""
    from tgrad.tensor import Tensor
    return [o for o in _as_tuple(result) if isinstance(o, Tensor)
            and (o.dtype.is_floating_point or o.dtype.is_complex)]


def _check_no_stride_0(inputs: tuple) -> None:
    """PyTorch's refusal of an input with a stride-0 dim (an expand()ed tensor): perturbing
    one element would move all its aliases at once."""
    from tgrad.tensor import Tensor
    for idx, inp in enumerate(inputs):
        if isinstance(inp, Tensor) and inp.requires_grad and any(
                st == 0 and sz > 1 for st, sz in zip(inp.stride(), inp.shape)):
            raise RuntimeError(f"The {idx}th input has a dimension with stride 0. gradcheck "
                               f"only supports inputs that are non-overlapping to be able to "
                               f"compute the numerical gradients correctly. You should call "
                               f".contiguous on the input before passing it to gradcheck.")


def _numerical_jacobian(func, inputs: tuple, outputs: tuple, eps: float) -> list:
    """jac[i][o]: ndarray of shape (inputs[i].numel(), outputs[o].numel())."""
    from tgrad.tensor import Tensor
    jac = []
    for inp in inputs:
        if not (isinstance(inp, Tensor) and inp.requires_grad):
            jac.append(None)
            continue
        cols = [np.zeros((inp.numel(), o.numel())) for o in outputs]
        get, put = _element_access(inp)
        for j, idx in enumerate(np.ndindex(*inp.shape)):
            orig = get(idx)
            put(idx, orig + eps)
            plus = [np.asarray(o.numpy(force=True), np.float64).ravel().copy()
                    for o in _float_outputs(func(*inputs))]
            put(idx, orig - eps)
            minus = [np.asarray(o.numpy(force=True), np.float64).ravel().copy()
                     for o in _float_outputs(func(*inputs))]
            put(idx, orig)
            for k in range(len(outputs)):
                cols[k][j] = (plus[k] - minus[k]) / (2 * eps)
        jac.append(cols)
    return jac


def _analytical_jacobian(inputs: tuple, outputs: tuple) -> list:
    from tgrad.autograd import grad as autograd_grad
    from tgrad.ops.creation import zeros_like
    from tgrad.tensor import Tensor
    diff_inputs = [inp for inp in inputs if isinstance(inp, Tensor) and inp.requires_grad]
    jac = [[np.zeros((inp.numel(), o.numel())) for o in outputs] for inp in diff_inputs]
    for oi, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        for k in range(out.numel()):
            g = zeros_like(out)
            _element_access(g)[1](np.unravel_index(k, out.shape), 1)
            grads = autograd_grad(out, diff_inputs, g, retain_graph=True, allow_unused=True)
            for ii, gi in enumerate(grads):
                if gi is not None:
                    jac[ii][oi][:, k] = np.asarray(gi.numpy(force=True), np.float64).ravel()
    return jac



def _check_flags(first: tuple, second: tuple, needs: list) -> None:
    """PyTorch's AssertionErrors for gradcheck's mode flags: ``first`` / ``second`` are
    (name, value) of the two modes (one must be on); ``needs`` lists (flag, value, mode):
    a flag that is on requires its mode."""
    values = dict([first, second])
    if not (first[1] or second[1]):
        raise AssertionError(f"Expected at least one of {first[0]} or {second[0]} to be True")
    for flag, on, mode in needs:
        if on and not values[mode]:
            raise AssertionError(f"Setting {flag}=True requires {mode} to be True")

def gradcheck(func, inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, check_sparse_nnz: bool = False,
              nondet_tol: float = 0.0, *, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False,
              masked: bool | None = None) -> bool:
    """Check ``func``'s gradients against finite differences (use float64 inputs).

    Returns True on success; on failure raises GradcheckError ("Jacobian mismatch for
    output 0 with respect to input 0, ...") or returns False when ``raise_exception`` is
    False. PyTorch's checks, in its order: the reverse-mode Jacobian (``check_backward_ad``)
    and, with ``check_forward_ad``, the forward-mode one (one jvp per input element) against
    central differences; then, with ``check_batched_forward_grad``, a ``tgrad.func.vmap`` of
    jvps against single jvps; with ``check_batched_grad``, an ``is_grads_batched`` vjp
    against single vjps; that zero grad_outputs give zero gradients; and, with
    ``check_undefined_grad``, that undefined (None) output gradients give undefined or zero
    input gradients (all outputs at once, then one at a time). ``fast_mode`` computes the
    full Jacobians all the same (a superset of PyTorch's fast check); ``masked`` concerns
    sparse tensors, which tgrad does not have; ``check_grad_dtypes`` is always on (the
    engine gives every gradient its input's dtype).

    Complex inputs and outputs are checked as pairs of reals (``_realified``): each complex
    input z is perturbed in its real and its imaginary part, each complex output compared
    in both parts. Under PyTorch's convention (the gradient of real L is dL/dRe z +
    i dL/dIm z) that is the whole real Jacobian, which determines both Wirtinger
    derivatives, what PyTorch's complex gradcheck checks.
    """
    _check_flags(("check_forward_ad", check_forward_ad), ("check_backward_ad", check_backward_ad),
                 [("check_batched_grad", check_batched_grad, "check_backward_ad"),
                  ("check_batched_forward_grad", check_batched_forward_grad,
                   "check_forward_ad")])
    from tgrad.tensor import Tensor
    inputs = _as_tuple(inputs)
    func, inputs = _realified(func, inputs)
    if check_sparse_nnz:
        raise ValueError("gradcheck: check_sparse_nnz=True needs sparse tensors, which tgrad "
                         "does not have; leave it False")
    inputs = _as_tuple(inputs)
    for i, inp in enumerate(inputs):
        if isinstance(inp, Tensor) and inp.requires_grad and inp.dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex.", UserWarning,
                          stacklevel=2)
    if not any(isinstance(i, Tensor) and i.requires_grad for i in inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")

    def fail(msg: str) -> bool:
        if raise_exception:
            raise GradcheckError(msg)
        return False

    _check_no_stride_0(inputs)
    all_outputs = tuple(_float_outputs(func(*inputs)))
    diff_out = [oi for oi, o in enumerate(all_outputs) if o.requires_grad]
    numerical = _numerical_jacobian(func, inputs, all_outputs, eps)
    numerical = [n for n in numerical if n is not None]
    if not diff_out:
        # As PyTorch: only when no output is differentiable, every numerical derivative
        # must be zero; otherwise the non-differentiable outputs are ignored.
        for n_list in numerical:
            for n in n_list:
                if np.any(n != 0):
                    return fail("Numerical gradient for function expected to be zero")
        return True
    outputs = tuple(all_outputs[oi] for oi in diff_out)
    numerical = [[n_list[oi] for oi in diff_out] for n_list in numerical]
    diff_idx = [i for i, inp in enumerate(inputs) if isinstance(inp, Tensor) and inp.requires_grad]
    # (output indices in messages count the differentiable outputs, as PyTorch's)
    if check_backward_ad:
        analytical = _analytical_jacobian(inputs, outputs)
        for a_list, n_list, ii in zip(analytical, numerical, diff_idx):
            for oi, (a, n) in enumerate(zip(a_list, n_list)):
                if a.shape != n.shape or not np.allclose(a, n, rtol=rtol, atol=atol):
                    return fail(f"Jacobian mismatch for output {oi} with respect to input "
                                f"{ii},\nnumerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n")
        # Reentrancy: a second backward must give the same Jacobian (up to nondet_tol).
        again = _analytical_jacobian(inputs, outputs)
        for a_list, b_list, ii in zip(analytical, again, diff_idx):
            for oi, (a, b) in enumerate(zip(a_list, b_list)):
                if np.max(np.abs(a - b), initial=0.0) > nondet_tol:
                    return fail(f"Backward is not reentrant, i.e., running backward with same "
                                f"input and grad_output multiple times gives different values, "
                                f"although analytical gradient matches numerical gradient. The "
                                f"tolerance for nondeterminism was {nondet_tol}. (output {oi}, "
                                f"input {ii})")
    if check_forward_ad:
        forward = _forward_jacobian(func, inputs, diff_out, [o.numel() for o in outputs])
        for f_list, n_list, ii in zip(forward, numerical, diff_idx):
            for oi, (a, n) in enumerate(zip(f_list, n_list)):
                if not np.allclose(a, n, rtol=rtol, atol=atol):
                    return fail(f"Jacobian computed with forward mode mismatch for output {oi} "
                                f"with respect to input {ii},\nnumerical:{_fmt(n)}\n"
                                f"analytical:{_fmt(a)}\n")
        if check_batched_forward_grad:
            problem = _batched_forward_problem(func, inputs, diff_out)
            if problem is not None:
                return fail(problem)
    if not check_backward_ad:
        return True
    if check_batched_grad:
        problem = _batched_grad_problem(inputs, outputs)
        if problem is not None:
            return fail(problem)
    problem = _backward_mul_by_grad_output_problem(inputs, outputs)
    if problem is not None:
        return fail(problem)
    if check_undefined_grad:
        problem = _undefined_grad_problem(func, inputs)
        if problem is not None:
            return fail(problem)
    return True


def _tangent_of(out):
    from tgrad.autograd.forward_ad import unpack_dual
    return unpack_dual(out).tangent


def _forward_jacobian(func, inputs: tuple, diff_out: list, out_numels: list) -> list:
    """jac[i][o] as _numerical_jacobian's, from forward-mode AD: one jvp per element of
    each input that requires grad, with a one-hot tangent (none for the other inputs); an
    empty input has empty columns (``out_numels``: the compared outputs' sizes)."""
    from tgrad.autograd import forward_ad
    from tgrad.ops.creation import zeros_like
    from tgrad.tensor import Tensor
    jac = []
    for i, inp in enumerate(inputs):
        if not (isinstance(inp, Tensor) and inp.requires_grad):
            continue
        cols = [np.zeros((0, n)) for n in out_numels] if inp.numel() == 0 else None
        for j in range(inp.numel()):
            tangent = zeros_like(inp).detach()
            _element_access(tangent)[1](np.unravel_index(j, inp.shape), 1)
            with forward_ad.dual_level():
                args = list(inputs)
                args[i] = forward_ad.make_dual(inp, tangent)
                outs = _float_outputs(func(*args))
                outs = [outs[oi] for oi in diff_out]
                if cols is None:
                    cols = [np.zeros((inp.numel(), o.numel())) for o in outs]
                for k, o in enumerate(outs):
                    t = _tangent_of(o)
                    if t is not None:
                        cols[k][j] = np.asarray(t.numpy(force=True), np.float64).ravel()
        jac.append(cols)
    return jac


def _batched_forward_problem(func, inputs: tuple, diff_out: list) -> str | None:
    """PyTorch's check_batched_forward_grad: ``tgrad.func.vmap`` over jvps with a batch of
    two random tangents per input must give the jvps computed one at a time."""
    from tgrad import func as tfunc
    from tgrad.autograd import forward_ad
    from tgrad.ops.creation import randn, zeros_like
    from tgrad.ops.shape import stack
    from tgrad.tensor import Tensor
    for i, inp in enumerate(inputs):
        if not (isinstance(inp, Tensor) and inp.requires_grad):
            continue

        def jvp(tangent, i=i, inp=inp):
            # PyTorch batches with its legacy vmap, which is no functorch transform: a user
            # Function without a vmap rule is not refused there (STATE's transform depths
            # cleared while func runs)
            depths = STATE.func_depth, STATE.vmap_depth
            STATE.func_depth = STATE.vmap_depth = 0
            try:
                with forward_ad.dual_level():
                    args = list(inputs)
                    args[i] = forward_ad.make_dual(inp.detach(), tangent)
                    outs = _float_outputs(func(*args))
                    result = []
                    for oi in diff_out:
                        t = _tangent_of(outs[oi])
                        result.append(zeros_like(outs[oi]).detach() if t is None
                                      else t.detach())
                    return tuple(result)
            finally:
                STATE.func_depth, STATE.vmap_depth = depths

        tangents = [randn(inp.shape, dtype=inp.dtype, device=inp.device) for _ in range(2)]
        expected = [stack(list(col)) for col in zip(*[jvp(t) for t in tangents])]
        got = tfunc.vmap(jvp)(stack(tangents))
        for oi, (res, exp) in enumerate(zip(got, expected)):
            if not np.allclose(res.numpy(force=True), exp.numpy(force=True)):
                return (f"For output {oi} and input {i}:\n\nbatched forward gradients (vmap "
                        f"over jvp) differ from the jvps computed one at a time\n\nGot:\n"
                        f"{res}\n\nExpected:\n{exp}")
    return None


def _batched_grad_problem(inputs: tuple, outputs: tuple) -> str | None:
    """PyTorch's check_batched_grad: for each output, the vjps of a batch of two random
    grad_outputs (``autograd.grad(..., is_grads_batched=True)``) must be the vjps computed
    one at a time."""
    from tgrad.autograd import grad as autograd_grad
    from tgrad.ops.creation import randn, zeros_like
    from tgrad.ops.shape import stack
    from tgrad.tensor import Tensor
    diff_inputs = [inp for inp in inputs if isinstance(inp, Tensor) and inp.requires_grad]
    for oi, out in enumerate(outputs):
        def vjp(v, out=out):
            gs = autograd_grad(out, diff_inputs, v, retain_graph=True, allow_unused=True)
            return [zeros_like(inp).detach() if g is None else g
                    for g, inp in zip(gs, diff_inputs)]

        gos = [randn(out.shape, dtype=out.dtype, device=out.device) for _ in range(2)]
        expected = [stack(list(col)) for col in zip(*[vjp(g) for g in gos])]
        got = autograd_grad(out, diff_inputs, stack(gos), retain_graph=True,
                            allow_unused=True, is_grads_batched=True)
        for ii, (res, exp, inp) in enumerate(zip(got, expected, diff_inputs)):
            if res is None:
                res = stack([zeros_like(inp).detach()] * 2)
            if not np.allclose(res.numpy(force=True), exp.numpy(force=True)):
                return (f"For output {oi} and input {ii}:\n\nbatched gradients "
                        f"(is_grads_batched=True) differ from the vjps computed one at a "
                        f"time\n\nGot:\n{res}\n\nExpected:\n{exp}")
    return None


def _undefined_grad_problem(func, inputs: tuple) -> str | None:
    """PyTorch's check_undefined_grad: a backward given undefined (None) gradients for all
    the outputs, then (with several outputs) for one output at a time with zeros for the
    others, must run and give undefined or zero input gradients. The message, or None."""
    from tgrad.autograd.engine import run_backward
    from tgrad.autograd.node import gradient_edge
    from tgrad.ops.creation import zeros_like
    from tgrad.tensor import Tensor

    def bc_warning() -> None:
        warnings.warn("Backwards compatibility: New undefined gradient support checking "
                      "feature is enabled by default, but it may break existing callers of "
                      "this function. If this is true for you, you can call this function "
                      'with "check_undefined_grad=False" to disable the feature', stacklevel=4)

    diff_inputs = [inp for inp in inputs if isinstance(inp, Tensor) and inp.requires_grad]

    def outs():
        return [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor) and o.requires_grad]

    first = outs()
    cases = [(first, [None] * len(first))]
    if len(first) > 1:
        for k in range(len(first)):
            o = outs()
            cases.append((o, [None if j == k else zeros_like(t) for j, t in enumerate(o)]))
    for out_list, root_grads in cases:
        try:
            grads = run_backward([gradient_edge(o) for o in out_list], root_grads, False, False,
                                 [gradient_edge(t) for t in diff_inputs], accumulate=False)
        except RuntimeError:
            bc_warning()
            return ('Expected backward function to handle undefined output grads. Please look '
                    'at "Notes about undefined output gradients" in '
                    '"tools/autograd/derivatives.yaml"')
        for g in grads:
            if g is not None and np.any(np.asarray(g.numpy(force=True)) != 0):
                bc_warning()
                return ("Expected all input grads to be undefined or zero when all output "
                        'grads are undefined or zero. Please look at "Notes about undefined '
                        'output gradients" in "tools/autograd/derivatives.yaml"')
    return None


def _backward_mul_by_grad_output_problem(inputs: tuple, outputs: tuple) -> str | None:
    """PyTorch's last check: a backward is linear in grad_output, so zero grad_outputs
    must give zero (or None) input gradients of the inputs' dtype, device and shape. The
    Jacobian checks miss a backward that adds a constant (g * f'(x) + c): one-hot
    grad_outputs see only f'(x) + c, which can be within tolerance. The message, or None."""
    from tgrad.autograd import grad as autograd_grad
    from tgrad.ops.creation import zeros_like
    from tgrad.tensor import Tensor
    diff_inputs = [inp for inp in inputs if isinstance(inp, Tensor) and inp.requires_grad]
    grads = autograd_grad(outputs, diff_inputs, [zeros_like(o) for o in outputs],
                          allow_unused=True)
    for gi, di in zip(grads, diff_inputs):
        if gi is None:
            continue
        if not np.all(np.asarray(gi.numpy(force=True)) == 0):
            return "backward not multiplied by grad_output"
        if gi.dtype is not di.dtype:
            return "grad is incorrect type"
        if gi.device != di.device:
            return "grad is incorrect device"
        if gi.shape != di.shape:
            return "grad is incorrect size"
    return None


def _fmt(a: np.ndarray) -> str:
    return np.array2string(a, precision=6, threshold=200)


def _realified(func, inputs: tuple) -> tuple:
    """(func', inputs'): each complex input as view_as_real(z) (a float leaf of shape
    S + (2,)), each complex output of func as view_as_real of it; real ones unchanged."""
    from tgrad.ops.complex_ops import view_as_complex, view_as_real
    from tgrad.tensor import Tensor
    is_c = [isinstance(t, Tensor) and t.dtype.is_complex for t in inputs]
    real_in = tuple(view_as_real(t.detach()).clone().requires_grad_(t.requires_grad) if c
                    else t for t, c in zip(inputs, is_c))

    def real_func(*xs):
        outs = func(*[view_as_complex(x) if c else x for x, c in zip(xs, is_c)])
        single = isinstance(outs, Tensor)
        outs = [view_as_real(o) if isinstance(o, Tensor) and o.dtype.is_complex else o
                for o in _as_tuple(outs)]
        return outs[0] if single else tuple(outs)
    return real_func, real_in


def gradgradcheck(func, inputs, grad_outputs=None, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0, *,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """gradcheck of the gradients: checks second derivatives through create_graph=True.

    Random float64 ``grad_outputs`` are generated when not given (non-contiguous ones with
    ``gen_non_contig_grad_outputs``). As PyTorch's, the gradient function is checked by
    ``gradcheck`` with ``check_forward_ad=check_fwd_over_rev`` (forward over reverse: the
    tangents of the gradients computed inside a dual level) and
    ``check_backward_ad=check_rev_over_rev``.
    """
    _check_flags(("check_fwd_over_rev", check_fwd_over_rev),
                 ("check_rev_over_rev", check_rev_over_rev),
                 [("check_undefined_grad", check_undefined_grad, "check_rev_over_rev"),
                  ("check_batched_grad", check_batched_grad, "check_rev_over_rev")])
    from tgrad.autograd import grad as autograd_grad
    from tgrad.ops.creation import randn
    from tgrad.tensor import Tensor
    inputs = _as_tuple(inputs)
    outputs = [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor) and o.requires_grad]
    if grad_outputs is None:
        grad_outputs = []
        for o in outputs:
            if gen_non_contig_grad_outputs and o.ndim > 0:
                g = randn(o.shape + (2,), dtype=o.dtype, device=o.device)[..., 0]
            else:
                g = randn(o.shape, dtype=o.dtype, device=o.device)
            grad_outputs.append(g.requires_grad_(True))
    grad_outputs = list(_as_tuple(grad_outputs))
    n_in = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def new_func(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = [o for o in _as_tuple(func(*ins)) if isinstance(o, Tensor) and o.requires_grad]
        diff_ins = [ins[i] for i in diff_idx]
        grads = autograd_grad(outs, diff_ins, list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev,
                     fast_mode=fast_mode, masked=masked)

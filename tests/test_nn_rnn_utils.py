"""tgrad.nn.utils.rnn (pad_sequence, unpad_sequence, PackedSequence, pack_padded_sequence,
pack_sequence, pad_packed_sequence) against NumPy references built element by element,
gradcheck / gradgradcheck in float64, and PyTorch's error texts (as torch.nn.utils.rnn 2.14
gives them for the same inputs)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from interpreted import run_json

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.nn.utils import rnn
from tgrad.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpad_sequence,
)

T = tgrad.tensor


def _np_pad(seqs: list, batch_first: bool, value: float, side: str) -> np.ndarray:
    """The reference: a (B, T, *) array of ``value`` with each sequence written at the start
    (right padding) or the end (left padding) of its row, then (T, B, *) unless
    batch_first."""
    n_max = max(len(s) for s in seqs)
    out = np.full((len(seqs), n_max, *seqs[0].shape[1:]), value, dtype=seqs[0].dtype)
    for b, s in enumerate(seqs):
        for t in range(len(s)):
            out[b, t if side == "right" else n_max - len(s) + t] = s[t]
    return out if batch_first else np.swapaxes(out, 0, 1)


@pytest.mark.parametrize("lengths", [[1], [17, 1, 5], [1, 17], [3, 3, 3], [0, 2]])
@pytest.mark.parametrize("trailing", [(), (3,), (2, 2)])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_values(lengths, trailing, batch_first, side):
    rng = np.random.default_rng(len(lengths) * 10 + len(trailing))
    seqs = [rng.standard_normal((n, *trailing)).astype(np.float32) for n in lengths]
    got = pad_sequence([T(s) for s in seqs], batch_first=batch_first, padding_value=-1.5,
                       padding_side=side)
    want = _np_pad(seqs, batch_first, -1.5, side)
    assert got.dtype is tgrad.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_pad_sequence_defaults_dtypes_and_tensor_input():
    got = pad_sequence([T([1., 2.]), T([3.])])
    assert got.tolist() == [[1.0, 3.0], [2.0, 0.0]]
    ints = pad_sequence([T([1, 2]), T([3.5])])  # the first sequence's dtype: 3.5 -> 3
    assert ints.dtype is tgrad.int64 and ints.tolist() == [[1, 3], [2, 0]]
    bools = pad_sequence([T([True, False]), T([True])])
    assert bools.dtype is tgrad.bool and bools.tolist() == [[True, True], [False, False]]
    mixed = pad_sequence([T([1., 2.]), T([3.], dtype=tgrad.float64)])
    assert mixed.dtype is tgrad.float32 and mixed.tolist() == [[1.0, 3.0], [2.0, 0.0]]
    assert pad_sequence((T([1., 2.]), T([3.]))).tolist() == [[1.0, 3.0], [2.0, 0.0]]
    x = T([[1., 2.], [3., 4.]])  # a tensor is a sequence of its rows
    assert pad_sequence(x).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    empty = pad_sequence([tgrad.empty(0), tgrad.empty(0)])
    assert empty.shape == (0, 2)
    # trailing dims of later sequences broadcast to the first's (PyTorch copies them so)
    assert pad_sequence([T([[1., 2.]]), T([3.])]).tolist() == [[[1.0, 2.0], [3.0, 3.0]]]
    got = pad_sequence([T([[1., 2.], [3., 4.]]), T([[1.], [2.]])], batch_first=True)
    assert got.tolist() == [[[1.0, 2.0], [3.0, 4.0]], [[1.0, 1.0], [2.0, 2.0]]]


@pytest.mark.parametrize("seqs, kwargs, exc, text", [
    ([], {}, RuntimeError, "received an empty list of sequences"),
    ([], dict(padding_side="middle"), RuntimeError, "received an empty list of sequences"),
    ([T([1., 2.]), T([3.])], dict(padding_side="middle"), RuntimeError,
     "Expected padding_side to be one of left or right, but got middle."),
    ([T([1., 2.]), T([3.])], dict(batch_first=True, padding_side="Left"), RuntimeError,
     "Expected padding_side to be one of left or right, but got Left."),
    ([T([1., 2.]), [3.]], {}, TypeError,
     "expected Tensor as element 1 in argument 0, but got list"),
    ([T([1., 2.]), 3], {}, TypeError, "expected Tensor as element 1 in argument 0, but got int"),
    ([T([[1., 2.]]), T([[3., 4., 5.]])], {}, RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1"),
    ([T([1.]), T([[1., 2., 3.]])], {}, RuntimeError,
     "output with shape [1] doesn't match the broadcast shape [1, 3]"),
    ([T([[1., 2.]]), T([[[1., 2.]]])], {}, RuntimeError,
     "output with shape [1, 2] doesn't match the broadcast shape [1, 1, 2]"),
])
def test_pad_sequence_errors(seqs, kwargs, exc, text):
    with pytest.raises(exc) as info:
        pad_sequence(seqs, **kwargs)
    assert str(info.value) == text


def test_pad_sequence_zero_dim_error():
    # PyTorch fails here with an internal message ("ArrayRef: invalid slice, ..."); tgrad
    # says what is wrong.
    with pytest.raises(RuntimeError, match="at least one dimension .* sequence 1 is 0-d"):
        pad_sequence([T([1.]), T(2.)])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_gradients(batch_first, side):
    rng = np.random.default_rng(5)
    lengths = [1, 17, 4]
    seqs = [T(rng.standard_normal((n, 2)), dtype=tgrad.float64, requires_grad=True)
            for n in lengths]

    def fn(*xs):
        return pad_sequence(list(xs), batch_first=batch_first, padding_value=0.5,
                            padding_side=side)

    assert gradcheck(fn, seqs)
    assert gradgradcheck(fn, seqs)
    # the gradient of each sequence is the upstream gradient at its positions (the
    # padding's is dropped): the reference slices it with NumPy
    g = rng.standard_normal(fn(*seqs).shape)
    fn(*seqs).backward(T(g))
    g_bf = g if batch_first else np.swapaxes(g, 0, 1)
    for b, (s, n) in enumerate(zip(seqs, lengths)):
        rows = slice(0, n) if side == "right" else slice(17 - n, 17)
        np.testing.assert_array_equal(s.grad.numpy(), g_bf[b, rows])


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence_roundtrip_and_gradients(batch_first):
    rng = np.random.default_rng(6)
    lengths = [17, 1, 6]
    seqs = [rng.standard_normal((n, 3)) for n in lengths]
    padded = pad_sequence([T(s) for s in seqs], batch_first=batch_first)
    for lens in (lengths, T(lengths)):
        out = unpad_sequence(padded, lens, batch_first=batch_first)
        assert len(out) == 3
        for o, s in zip(out, seqs):
            np.testing.assert_array_equal(o.numpy(), s)
    assert padded.shape == ((3, 17, 3) if batch_first else (17, 3, 3))  # input untouched
    out = unpad_sequence(padded, lengths, batch_first=batch_first)
    out[1].mul_(0.0)  # copies, not views of the padded tensor
    np.testing.assert_array_equal(unpad_sequence(padded, lengths, batch_first)[1].numpy(),
                                  seqs[1])

    p = padded.detach().requires_grad_(True)

    def fn(x):
        return tuple(unpad_sequence(x, lengths, batch_first=batch_first))

    assert gradcheck(fn, (p,))
    assert gradgradcheck(fn, (p,))
    # pad then unpad is the identity: the gradient of each sequence comes back unchanged
    xs = [T(s, requires_grad=True) for s in seqs]
    back = unpad_sequence(pad_sequence(xs, batch_first=batch_first), T(lengths), batch_first)
    gs = [rng.standard_normal(s.shape) for s in seqs]
    tgrad.autograd.backward(back, [T(g) for g in gs])
    for x, g in zip(xs, gs):
        np.testing.assert_array_equal(x.grad.numpy(), g)


def test_unpad_sequence_lengths_outside_the_range_and_errors():
    padded = T([[1., 2.], [3., 0.]])
    out = unpad_sequence(padded, T([5, -1]), batch_first=True)  # as torch: all, none
    assert [o.tolist() for o in out] == [[1.0, 2.0], []]
    out = unpad_sequence(T([[1., 3.], [2., 0.]]), T([2, 1]))  # time first
    assert [o.tolist() for o in out] == [[1.0, 2.0], [3.0]]
    with pytest.raises(ValueError) as info:
        unpad_sequence(padded, T([2, 1, 3]), batch_first=True)
    assert str(info.value) == "zip() argument 2 is longer than argument 1"


def test_exported_like_torch():
    assert tgrad.nn.utils.rnn is rnn
    assert rnn.__all__ == ["PackedSequence", "invert_permutation", "pack_padded_sequence",
                           "pad_packed_sequence", "pad_sequence", "unpad_sequence",
                           "pack_sequence", "unpack_sequence"]
    from tgrad.nn.utils import clip_grad_norm_, clip_grad_value_  # still there
    assert callable(clip_grad_norm_) and callable(clip_grad_value_)


# ---------------------------------------------------------------- packed sequences


def _np_pack(x: np.ndarray, lengths: list, batch_first: bool, enforce_sorted: bool):
    """The reference: the batch order (a stable sort by decreasing length, or as given),
    then step t of every sequence longer than t, in that order."""
    xb = x if batch_first else np.swapaxes(x, 0, 1)  # (B, T, *)
    order = (list(range(len(lengths))) if enforce_sorted
             else sorted(range(len(lengths)), key=lambda b: -lengths[b]))
    data, batch_sizes = [], []
    for t in range(max(lengths)):
        running = [b for b in order if lengths[b] > t]
        batch_sizes.append(len(running))
        data.extend(xb[b, t] for b in running)
    return np.stack(data), batch_sizes, order


@pytest.mark.parametrize("lengths, enforce_sorted", [
    ([17, 5, 5, 1], True), ([1], True), ([5, 17, 1, 5, 17], False), ([1, 1, 2], False)])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("trailing", [(), (3,)])
def test_pack_padded_sequence_values(lengths, enforce_sorted, batch_first, trailing):
    rng = np.random.default_rng(len(lengths))
    n_t, n_b = max(lengths) + 2, len(lengths)  # two more steps than the longest
    x = rng.standard_normal((n_b, n_t, *trailing) if batch_first else (n_t, n_b, *trailing))
    packed = pack_padded_sequence(T(x), lengths, batch_first=batch_first,
                                  enforce_sorted=enforce_sorted)
    data, batch_sizes, order = _np_pack(x, lengths, batch_first, enforce_sorted)
    assert isinstance(packed, PackedSequence) and isinstance(packed, tuple)
    np.testing.assert_array_equal(packed.data.numpy(), data)
    assert packed.batch_sizes.tolist() == batch_sizes
    assert packed.batch_sizes.dtype is tgrad.int64 and packed.batch_sizes.device.type == "cpu"
    if enforce_sorted:
        assert packed.sorted_indices is None and packed.unsorted_indices is None
    else:
        assert packed.sorted_indices.tolist() == order
        assert packed.sorted_indices.dtype is tgrad.int64
        inverse = packed.unsorted_indices.tolist()
        assert [order[k] for k in inverse] == list(range(n_b))  # unsorted undoes sorted
    # and back: the input at the valid steps, padding_value elsewhere, original order
    for total in (None, n_t):
        out, lens = pad_packed_sequence(packed, batch_first=batch_first, padding_value=-7.0,
                                        total_length=total)
        want = np.full((n_b, total or max(lengths), *trailing), -7.0)
        xb = x if batch_first else np.swapaxes(x, 0, 1)
        for b, n in enumerate(lengths):
            want[b, :n] = xb[b, :n]
        want = want if batch_first else np.swapaxes(want, 0, 1)
        np.testing.assert_array_equal(out.numpy(), want)
        assert lens.tolist() == lengths and lens.dtype is tgrad.int64


def test_pack_sequence_and_the_legacy_forms():
    a, b, c = T([1., 2.]), T([3., 4., 5.]), T([6.])
    packed = pack_sequence([a, b, c], enforce_sorted=False)
    assert packed.data.tolist() == [3.0, 1.0, 6.0, 4.0, 2.0, 5.0]
    assert packed.batch_sizes.tolist() == [3, 2, 1]
    assert packed.sorted_indices.tolist() == [1, 0, 2]
    assert packed.unsorted_indices.tolist() == [1, 0, 2]
    sorted_packed = pack_sequence([b, a, c])
    assert sorted_packed.data.tolist() == packed.data.tolist()
    assert sorted_packed.sorted_indices is None
    out, lens = pad_packed_sequence(packed, batch_first=True)
    assert out.tolist() == [[1.0, 2.0, 0.0], [3.0, 4.0, 5.0], [6.0, 0.0, 0.0]]
    assert lens.tolist() == [2, 3, 1]
    # PackedSequence built directly: the inverse permutation is computed; (data, sizes) tuple
    p = PackedSequence(T([1., 2., 3.]), T([3]), T([2, 0, 1]))
    assert p.unsorted_indices.tolist() == [1, 2, 0]
    legacy = PackedSequence((T([1., 2.]), T([2])))
    assert legacy.data.tolist() == [1.0, 2.0] and legacy.batch_sizes.tolist() == [2]
    assert legacy.sorted_indices is None and legacy.unsorted_indices is None
    assert PackedSequence._fields == ("data", "batch_sizes", "sorted_indices",
                                      "unsorted_indices")
    assert packed.to(tgrad.float32) is packed and packed.cpu() is packed
    assert not packed.is_cuda
    for conv, dt in ((packed.double, tgrad.float64), (packed.half, tgrad.float16),
                     (packed.double().float, tgrad.float32), (packed.long, tgrad.int64),
                     (packed.int, tgrad.int32), (packed.short, tgrad.int16),
                     (packed.char, tgrad.int8), (packed.byte, tgrad.uint8)):
        q = conv()
        assert q.data.dtype is dt and q.sorted_indices.tolist() == [1, 0, 2]
        assert q.batch_sizes is packed.batch_sizes
        if not dt.is_floating_point:
            assert q.data.tolist() == [int(v) for v in packed.data.tolist()]
    # PyTorch's is_pinned / pin_memory (Tensor.pin_memory's: a copy, or its error
    # without an accelerator)
    assert packed.is_pinned() is False
    if tgrad.cuda.is_available():
        pinned = packed.pin_memory()
        assert pinned.data.tolist() == packed.data.tolist()
        assert pinned.sorted_indices.tolist() == [1, 0, 2]
    else:
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            packed.pin_memory()


_SORT_MSG = ("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
             "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
             "to sidestep this requirement if you do not need ONNX exportability.")
_LEN_MSG = ("Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0")


@pytest.mark.parametrize("call, exc, text", [
    (lambda x: pack_padded_sequence(x, [2, 3, 2, 1]), RuntimeError, _SORT_MSG),
    (lambda x: pack_padded_sequence(x, [0, 3, 2, 2]), RuntimeError, _SORT_MSG),
    (lambda x: pack_padded_sequence(x, [3, 2, 2, 0]), RuntimeError, _LEN_MSG),
    (lambda x: pack_padded_sequence(x, [3, 2, 2, 0], enforce_sorted=False), RuntimeError,
     _LEN_MSG),
    (lambda x: pack_padded_sequence(x, [3, 2, 2]), RuntimeError,
     "Expected `len(lengths)` to be equal to batch_size, but got 3 (batch_size=4)"),
    (lambda x: pack_padded_sequence(x, T([[3, 2], [2, 1]])), RuntimeError,
     "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor"),
    (lambda x: pack_padded_sequence(tgrad.empty(3, 0), []), RuntimeError,
     "Cannot pack empty tensors."),
    (lambda x: pack_padded_sequence(tgrad.empty(0, 2), [0, 0]), RuntimeError,
     "Cannot pack empty tensors."),
    (lambda x: pack_sequence([T([1., 2.]), T([3., 4., 5.])]), RuntimeError, _SORT_MSG),
    (lambda x: pack_sequence([]), RuntimeError, "received an empty list of sequences"),
    (lambda x: pad_packed_sequence(pack_padded_sequence(x, [3, 2, 2, 1]), total_length=2),
     ValueError, "Expected total_length to be at least the length of the longest sequence in "
     "input, but got total_length=2 and max sequence length being 3"),
])
def test_packed_errors(call, exc, text):
    with pytest.raises(exc) as info:
        call(tgrad.arange(12.0).reshape(3, 4))
    assert str(info.value) == text


def test_pack_length_beyond_the_input_is_an_error():
    # PyTorch reads past the input here; tgrad refuses
    with pytest.raises(RuntimeError, match=r"a sequence length \(4\) is greater than the "
                       r"input's time dimension \(3\)"):
        pack_padded_sequence(tgrad.arange(12.0).reshape(3, 4), [4, 2, 2, 1])


def test_lengths_as_float_tensor_truncate():
    x = tgrad.arange(12.0).reshape(3, 4)
    for lengths in (T([3.0, 2.0, 2.0, 1.0]), [3.7, 2, 2, 1]):
        assert pack_padded_sequence(x, lengths).batch_sizes.tolist() == [4, 3, 1]


@pytest.mark.parametrize("batch_first", [False, True])
def test_packed_gradients(batch_first):
    rng = np.random.default_rng(8)
    lengths = [4, 1, 17]
    shape = (3, 17, 2) if batch_first else (17, 3, 2)
    x = T(rng.standard_normal(shape), dtype=tgrad.float64, requires_grad=True)

    def pack(x):
        return pack_padded_sequence(x, lengths, batch_first=batch_first,
                                    enforce_sorted=False).data

    def roundtrip(x):
        packed = pack_padded_sequence(x, lengths, batch_first=batch_first,
                                      enforce_sorted=False)
        return pad_packed_sequence(packed, batch_first=batch_first, padding_value=0.5,
                                   total_length=18)[0]

    for fn in (pack, roundtrip):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))
    # the roundtrip's gradient: the upstream one at the valid steps, zero at the padding
    g = rng.standard_normal((3, 18, 2) if batch_first else (18, 3, 2))
    (gx,) = tgrad.autograd.grad(roundtrip(x), x, T(g))
    want = np.zeros(shape)
    for b, n in enumerate(lengths):
        if batch_first:
            want[b, :n] = g[b, :n]
        else:
            want[:n, b] = g[:n, b]
    np.testing.assert_array_equal(gx.numpy(), want)
    # pack_sequence is differentiable with respect to each sequence
    seqs = [T(rng.standard_normal((n, 2)), dtype=tgrad.float64, requires_grad=True)
            for n in lengths]
    assert gradcheck(lambda *s: pack_sequence(list(s), enforce_sorted=False).data, seqs)


CUDA_SCRIPT = textwrap.dedent(r"""
    import json
    import numpy as np
    import tgrad
    from tgrad.nn.utils.rnn import (pack_sequence, pad_packed_sequence, pad_sequence,
                                    unpad_sequence)
    assert tgrad.cuda.is_interpreted()
    xs = [tgrad.tensor(np.arange(n * 2.0).reshape(n, 2), device="cuda", requires_grad=True)
          for n in (3, 1)]
    p = pad_sequence(xs, batch_first=True, padding_value=-1.0, padding_side="left")
    back = unpad_sequence(pad_sequence(xs), [3, 1])
    packed = pack_sequence(xs[::-1], enforce_sorted=False)
    unpacked, lens = pad_packed_sequence(packed, batch_first=True)
    (p.sum() + 10 * sum(b.sum() for b in back) + 100 * unpacked.sum()).backward()
    print(json.dumps({"device": str(p.device), "p": p.detach().cpu().tolist(),
                      "packed": [packed.data.detach().cpu().tolist(),
                                 packed.batch_sizes.tolist(), str(packed.batch_sizes.device),
                                 str(packed.sorted_indices.device), packed.is_cuda],
                      "unpacked": [unpacked.detach().cpu().tolist(), lens.tolist()],
                      "back": [b.detach().cpu().tolist() for b in back],
                      "grads": [x.grad.cpu().tolist() for x in xs]}))
""")


def test_interpreted_cuda():
    res = run_json(CUDA_SCRIPT)
    assert res["device"] == "cuda:0"
    assert res["p"] == [[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]],
                        [[-1.0, -1.0], [-1.0, -1.0], [0.0, 1.0]]]
    assert res["back"] == [[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], [[0.0, 1.0]]]
    assert res["packed"] == [[[0.0, 1.0], [0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], [2, 1, 1],
                             "cpu", "cuda:0", True]
    assert res["unpacked"] == [[[[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]],
                                [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]], [1, 3]]
    assert res["grads"] == [[[111.0, 111.0]] * 3, [[111.0, 111.0]]]

"""tgrad.Generator (PyTorch's torch.Generator): draws equal NumPy's PCG64 stream for the same
seed (the independent reference), generators are independent of each other and of the
global stream, state round trips, PyTorch's seed range and error texts (torch 2.14)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tgrad
from tgrad.utils.data import RandomSampler, SubsetRandomSampler, random_split

sys.path.insert(0, os.path.dirname(__file__))
from interpreted import run_json  # noqa: E402


def _gen(seed: int) -> tgrad.Generator:
    return tgrad.Generator().manual_seed(seed)


def test_draws_equal_numpy_pcg64_for_the_same_seed():
    np.testing.assert_array_equal(
        tgrad.rand(3, 4, dtype=tgrad.float64, generator=_gen(7)).numpy(),
        np.random.default_rng(7).random((3, 4)))
    np.testing.assert_array_equal(
        tgrad.randn(5, dtype=tgrad.float64, generator=_gen(7)).numpy(),
        np.random.default_rng(7).standard_normal(5))
    assert tgrad.randperm(9, generator=_gen(3)).tolist() == \
        np.random.default_rng(3).permutation(9).tolist()
    u = np.random.default_rng(5).random(6)
    assert tgrad.randint(2, 9, (6,), generator=_gen(5)).tolist() == \
        np.floor(u * 7 + 2).astype(int).tolist()
    np.testing.assert_array_equal(
        tgrad.normal(2.0, 3.0, (4,), generator=_gen(1), dtype=tgrad.float64).numpy(),
        np.random.default_rng(1).standard_normal(4) * 3.0 + 2.0)


def test_a_generator_matches_manual_seed_and_leaves_the_global_stream_alone():
    tgrad.manual_seed(11)
    expected = tgrad.rand(6, dtype=tgrad.float64).numpy()
    tgrad.manual_seed(11)
    g = _gen(11)
    first = tgrad.rand(3, dtype=tgrad.float64, generator=g).numpy()
    rest = tgrad.rand(3, dtype=tgrad.float64, generator=g).numpy()
    np.testing.assert_array_equal(np.concatenate([first, rest]), expected)  # g advanced
    np.testing.assert_array_equal(tgrad.rand(6, dtype=tgrad.float64).numpy(), expected)


def test_every_sampler_takes_a_generator():
    def draws(seed: int) -> list:
        g = _gen(seed)
        x = tgrad.empty(5, dtype=tgrad.float64)
        out = [x.uniform_(-1, 2, generator=g).tolist(), x.normal_(1, 2, generator=g).tolist(),
               x.log_normal_(generator=g).tolist(), x.exponential_(3, generator=g).tolist(),
               x.cauchy_(generator=g).tolist(), x.geometric_(0.3, generator=g).tolist(),
               x.random_(0, 10, generator=g).tolist(), x.bernoulli_(0.4, generator=g).tolist(),
               tgrad.bernoulli(tgrad.full((5,), 0.5), generator=g).tolist(),
               tgrad.multinomial(tgrad.tensor([0.1, 0.6, 0.3]), 4, True,
                                 generator=g).tolist(),
               tgrad.multinomial(tgrad.tensor([0.1, 0.6, 0.3]), 2, generator=g).tolist()]
        return out

    tgrad.manual_seed(0)
    first = draws(21)
    tgrad.manual_seed(1)  # the global stream does not matter
    assert draws(21) == first
    assert draws(22) != first
    rng = np.random.default_rng(21)  # uniform_ reads the float64 uniforms directly
    np.testing.assert_allclose(first[0], rng.random(5) * 3 - 1, rtol=1e-15)


def test_state_round_trip_seed_and_initial_seed():
    g = tgrad.Generator()
    assert g.initial_seed() == 67280421310721  # PyTorch's default seed
    assert g.device == tgrad.device("cpu")
    state = g.get_state()
    a = tgrad.rand(4, generator=g)
    g.set_state(state)
    assert tgrad.rand(4, generator=g).tolist() == a.tolist()
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    assert tgrad.manual_seed(-1) is tgrad.default_generator
    assert tgrad.initial_seed() == 2 ** 64 - 1  # negative seeds wrap modulo 2^64
    assert _gen(-1).initial_seed() == 2 ** 64 - 1
    s = tgrad.seed()
    assert tgrad.initial_seed() == s
    with pytest.raises(ValueError, match="Overflow when unpacking long"):
        tgrad.manual_seed(2 ** 64)
    with pytest.raises(ValueError, match="Overflow when unpacking long"):
        tgrad.Generator().manual_seed(-2 ** 63 - 1)
    assert tgrad.Generator().manual_seed(-2 ** 63).initial_seed() == 2 ** 63
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        tgrad.Generator().manual_seed(1.5)
    # torch.manual_seed converts with int() first (torch.random.manual_seed: int(seed))
    assert tgrad.manual_seed(7.9).initial_seed() == 7
    assert tgrad.manual_seed("5").initial_seed() == 5


def test_default_generator_is_the_global_stream():
    tgrad.manual_seed(4)
    a = tgrad.rand(3, generator=tgrad.default_generator)
    tgrad.manual_seed(4)
    assert tgrad.rand(3).tolist() == a.tolist()
    tgrad.default_generator.manual_seed(9)
    assert tgrad.initial_seed() == 9


def test_errors_follow_pytorch():
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but "
                                           "found 'cuda'"):
        tgrad.rand(2, generator=tgrad.Generator("cuda"))
    with pytest.raises(TypeError, match="argument 'generator' must be tgrad.Generator, not "
                                        "int"):
        tgrad.randn(2, generator=3)


def test_data_samplers_take_a_tgrad_generator():
    order = list(RandomSampler(range(10), generator=_gen(3)))
    assert order == np.random.default_rng(3).permutation(10).tolist()
    g = _gen(3)
    first, second = list(RandomSampler(range(10), generator=g)), \
        list(RandomSampler(range(10), generator=g))
    assert first == order and second != first  # the sampler advances the generator
    assert list(SubsetRandomSampler([5, 6, 7], generator=_gen(2))) == \
        [[5, 6, 7][i] for i in np.random.default_rng(2).permutation(3)]
    parts = random_split(range(6), [4, 2], generator=_gen(8))
    perm = np.random.default_rng(8).permutation(6).tolist()
    assert list(parts[0].indices) == perm[:4] and list(parts[1].indices) == perm[4:]
    with pytest.raises(RuntimeError, match="expected a 'cpu' device type for generator"):
        list(RandomSampler(range(3), generator=tgrad.Generator("cuda")))


def test_nn_init_takes_a_generator():
    from tgrad.nn import init

    for fill in (lambda w, g: init.uniform_(w, -1.0, 2.0, generator=g),
                 lambda w, g: init.normal_(w, 0.5, 2.0, generator=g),
                 lambda w, g: init.xavier_uniform_(w, generator=g),
                 lambda w, g: init.xavier_normal_(w, generator=g),
                 lambda w, g: init.kaiming_uniform_(w, generator=g),
                 lambda w, g: init.kaiming_normal_(w, generator=g),
                 lambda w, g: init.trunc_normal_(w, generator=g),
                 lambda w, g: init.orthogonal_(w, generator=g),
                 lambda w, g: init.sparse_(w, 0.5, generator=g)):
        tgrad.manual_seed(0)  # sparse_'s row permutations come from the global stream
        a = fill(tgrad.empty(4, 6, dtype=tgrad.float64), _gen(13))
        tgrad.manual_seed(0)
        b = fill(tgrad.empty(4, 6, dtype=tgrad.float64), _gen(13))
        assert a.tolist() == b.tolist()
    w = init.uniform_(tgrad.empty(5, dtype=tgrad.float64), -1.0, 2.0, generator=_gen(13))
    np.testing.assert_allclose(w.numpy(), np.random.default_rng(13).random(5) * 3 - 1,
                               rtol=1e-15)
    w = init.normal_(tgrad.empty(5, dtype=tgrad.float64), 0.5, 2.0, generator=_gen(13))
    np.testing.assert_allclose(w.numpy(), np.random.default_rng(13).standard_normal(5) * 2
                               + 0.5, rtol=1e-15)


def test_state_is_a_uint8_cpu_tensor_with_pytorchs_errors():
    """get_state / get_rng_state: a 1-D uint8 CPU tensor (tgrad's 48-byte layout: PCG64's
    state, inc as 128-bit little-endian words, then has_uint32, uinteger as 32-bit ones,
    then the initial seed); set_state takes it (and the legacy NumPy dict) and raises
    PyTorch's errors."""
    g = tgrad.Generator().manual_seed(5)
    st = g.get_state()
    assert st.dtype is tgrad.uint8 and st.shape == (48,) and st.device.type == "cpu"
    ref = np.random.default_rng(5).bit_generator.state  # the independent PCG64 reference
    raw = bytes(st.tolist())
    assert int.from_bytes(raw[:16], "little") == ref["state"]["state"]
    assert int.from_bytes(raw[16:32], "little") == ref["state"]["inc"]
    assert raw[32:40] == bytes(8)
    assert int.from_bytes(raw[40:], "little") == 5
    a = tgrad.rand(3, generator=g).tolist()
    g.set_state(st)
    assert tgrad.rand(3, generator=g).tolist() == a
    g.set_state(ref)  # the dict form tgrad used to return
    assert tgrad.rand(3, generator=g).tolist() == a
    tgrad.manual_seed(7)
    gst = tgrad.get_rng_state()
    b = tgrad.randn(4).tolist()
    tgrad.random.set_rng_state(gst)
    assert tgrad.randn(4).tolist() == b
    for f in (g.set_state, tgrad.set_rng_state, tgrad.random.set_rng_state):
        for bad, name in (([1, 2], "list"), (None, "NoneType"), ({}, "dict"),
                          (np.zeros(40, np.uint8), "numpy.ndarray")):
            with pytest.raises(TypeError, match=f"expected a torch.ByteTensor, but got {name}"):
                f(bad)
        with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
            f(tgrad.zeros(40))
        with pytest.raises(RuntimeError, match="of size 48 but found the input RNG state "
                                               "size to be 10"):
            f(tgrad.zeros(10, dtype=tgrad.uint8))


def test_set_state_restores_the_initial_seed():
    """PyTorch's state carries the generator's seed: set_rng_state / set_state bring back
    initial_seed() together with the stream. A 40-byte state of earlier tgrad versions
    (no seed) restores the stream and leaves the seed."""
    tgrad.manual_seed(5)
    st = tgrad.get_rng_state()
    first = tgrad.rand(3).tolist()
    tgrad.manual_seed(7)
    tgrad.set_rng_state(st)
    assert tgrad.initial_seed() == 5 and tgrad.rand(3).tolist() == first
    g = tgrad.Generator().manual_seed(2 ** 64 - 1)
    gst = g.get_state()
    g.manual_seed(1)
    assert g.set_state(gst).initial_seed() == 2 ** 64 - 1
    old_layout = tgrad.tensor(gst.tolist()[:40], dtype=tgrad.uint8)
    g.manual_seed(1)
    ref = tgrad.Generator().set_state(gst)
    assert g.set_state(old_layout).initial_seed() == 1
    assert tgrad.rand(4, generator=g).tolist() == tgrad.rand(4, generator=ref).tolist()


_CUDA_SEED_SCRIPT = r"""
import json, tgrad
c = tgrad.cuda
out = {}
c.manual_seed(2 ** 40 + 3)
st = c.get_rng_state()
out["state_seed"] = int.from_bytes(bytes(st.tolist()[:8]), "little")
first = tgrad.rand(3, device="cuda").cpu().tolist()
c.manual_seed(7)
c.set_rng_state(st)
out["init_after_set"] = c.initial_seed()
out["same_stream"] = tgrad.rand(3, device="cuda").cpu().tolist() == first
c.manual_seed(3)
out["masked_stream"] = tgrad.rand(3, device="cuda").cpu().tolist() == first
g = tgrad.Generator("cuda").manual_seed(11)
out["gen"] = tgrad.Generator("cuda").set_state(g.get_state()).initial_seed()
print(json.dumps(out))
"""


def test_cuda_set_state_restores_the_initial_seed():
    # PyTorch's cuda state is (seed, offset) with the full 64-bit seed, and set_state sets
    # the seed from it (CUDAGeneratorImpl::set_state calls set_current_seed): after
    # set_rng_state / set_state, initial_seed() is the state's seed (tgrad kept the seed of
    # the last manual_seed and stored the seed masked to the 31 bits its Philox kernel
    # reads, which still draws the same stream)
    out = run_json(_CUDA_SEED_SCRIPT)
    assert out == {"state_seed": 2 ** 40 + 3, "init_after_set": 2 ** 40 + 3,
                   "same_stream": True, "masked_stream": True, "gen": 11}


def test_fork_rng_cpu_device_type():
    tgrad.manual_seed(3)
    first = tgrad.rand(3).tolist()
    tgrad.manual_seed(3)
    with tgrad.random.fork_rng(devices=[], device_type="cpu"):
        tgrad.rand(5)
    assert tgrad.rand(3).tolist() == first
    with pytest.raises(AttributeError, match="get_rng_state"):
        with tgrad.random.fork_rng(device_type="cpu"):  # torch.cpu has a device 0 to fork
            pass

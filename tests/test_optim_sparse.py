"""Optimizers, clipping and zero_grad with sparse COO gradients (nn.Embedding(sparse=True)):
a few training steps against NumPy float64 reimplementations of PyTorch's documented
updates (written here), against the dense-gradient path where the algorithms coincide, and
PyTorch's error texts."""

import math

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
from tgrad import optim

ROWS, DIM = 6, 3
BATCHES = ([1, 4, 1], [0, 4], [2, 2, 5, 1])  # repeated rows; rows 3 never looked up
_rng = np.random.default_rng(7)
W0 = _rng.standard_normal((ROWS, DIM))
COEF = [_rng.standard_normal((len(b), DIM)) for b in BATCHES]  # loss = sum(C * emb(idx))


def _grad_ref(step: int) -> np.ndarray:
    """d loss / d weight at ``step`` (dense): each looked-up row gets its coefficient row."""
    g = np.zeros((ROWS, DIM))
    np.add.at(g, BATCHES[step], COEF[step])
    return g


def _train(make_opt, sparse=True, steps=3):
    emb = nn.Embedding(ROWS, DIM, sparse=sparse).double()
    with tgrad.no_grad():
        emb.weight.copy_(tgrad.tensor(W0))
    opt = make_opt(emb.parameters())
    for k in range(steps):
        opt.zero_grad()
        out = emb(tgrad.tensor(BATCHES[k]))
        (out * tgrad.tensor(COEF[k])).sum().backward()
        assert emb.weight.grad.is_sparse == sparse
        opt.step()
    return emb, opt


@pytest.mark.parametrize("maximize", [False, True])
def test_sgd_plain_equals_dense_path_and_numpy(maximize):
    emb, _ = _train(lambda p: optim.SGD(p, lr=0.1, maximize=maximize))
    dense, _ = _train(lambda p: optim.SGD(p, lr=0.1, maximize=maximize), sparse=False)
    w = W0.copy()
    for k in range(len(BATCHES)):
        w -= 0.1 * (-_grad_ref(k) if maximize else _grad_ref(k))
    np.testing.assert_allclose(emb.weight.detach().numpy(), w, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(emb.weight.detach().numpy(), dense.weight.detach().numpy(),
                               rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("nesterov,dampening,maximize",
                         [(False, 0.0, False), (True, 0.0, False), (False, 0.3, True)])
def test_sgd_momentum_sparse_buffer(nesterov, dampening, maximize):
    lr, mu = 0.05, 0.9
    emb, opt = _train(lambda p: optim.SGD(p, lr=lr, momentum=mu, dampening=dampening,
                                          nesterov=nesterov, maximize=maximize, foreach=True))
    w, buf = W0.copy(), None
    for k in range(len(BATCHES)):
        g = -_grad_ref(k) if maximize else _grad_ref(k)
        buf = g.copy() if buf is None else mu * buf + (1 - dampening) * g
        w -= lr * (g + mu * buf if nesterov else buf)
    np.testing.assert_allclose(emb.weight.detach().numpy(), w, rtol=1e-12, atol=1e-12)
    b = opt.state[emb.weight]["momentum_buffer"]
    assert b.is_sparse and not b.is_coalesced()  # PyTorch keeps the buffer sparse
    np.testing.assert_allclose(b.to_dense().numpy(), buf, rtol=1e-12, atol=1e-12)


def test_sgd_momentum_buffer_indices_as_pytorch():
    # PyTorch 2.13: buffer [1, 4, 1] (the first grad), then 0.9 buf + g with g at [0, 4]:
    # its one-pass merge gives [0, 1, 4, 1]
    _, opt = _train(lambda p: optim.SGD(p, lr=0.1, momentum=0.9), steps=2)
    b = next(iter(opt.state.values()))["momentum_buffer"]
    np.testing.assert_array_equal(b._indices().numpy(), [[0, 1, 4, 1]])


def test_sgd_sparse_errors():
    with pytest.raises(RuntimeError, match=r"^add\(sparse, dense\) is not supported. Use "
                                           r"add\(dense, sparse\) instead.$"):
        _train(lambda p: optim.SGD(p, lr=0.1, weight_decay=0.01))
    with pytest.raises(RuntimeError, match="^`_fused_sgd` does not support sparse gradients$"):
        _train(lambda p: optim.SGD(p, lr=0.1, momentum=0.9, fused=True))


@pytest.mark.parametrize("maximize", [False, True])
def test_adagrad_sparse_numpy_and_dense_path(maximize):
    kw = dict(lr=0.2, lr_decay=0.05, initial_accumulator_value=0.1, eps=1e-10,
              maximize=maximize)
    emb, opt = _train(lambda p: optim.Adagrad(p, foreach=True, **kw))
    w, s = W0.copy(), np.full((ROWS, DIM), 0.1)
    for k in range(len(BATCHES)):
        g = -_grad_ref(k) if maximize else _grad_ref(k)
        rows = np.unique(BATCHES[k])  # PyTorch's _make_sparse path: the coalesced rows only
        clr = 0.2 / (1 + k * 0.05)
        s[rows] += g[rows] ** 2
        w[rows] -= clr * g[rows] / (np.sqrt(s[rows]) + 1e-10)
    np.testing.assert_allclose(emb.weight.detach().numpy(), w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(opt.state[emb.weight]["sum"].numpy(), s, rtol=1e-12)
    assert opt.state[emb.weight]["step"].item() == len(BATCHES)
    # untouched rows have g = 0, so dense Adagrad gives the same numbers
    dense, _ = _train(lambda p: optim.Adagrad(p, **kw), sparse=False)
    np.testing.assert_allclose(emb.weight.detach().numpy(), dense.weight.detach().numpy(),
                               rtol=1e-12, atol=1e-12)


def test_adagrad_sparse_errors():
    with pytest.raises(RuntimeError,
                       match="^weight_decay option is not compatible with sparse gradients$"):
        _train(lambda p: optim.Adagrad(p, weight_decay=0.1))
    with pytest.raises(RuntimeError, match="^`fused` does not support sparse grad or complex "
                                           "param$"):
        _train(lambda p: optim.Adagrad(p, fused=True))


def _lazy_adam_ref(lr, b1, b2, eps, maximize):
    """PyTorch's SparseAdam (torch/optim/_functional.sparse_adam) in float64."""
    w, m, v = W0.copy(), np.zeros((ROWS, DIM)), np.zeros((ROWS, DIM))
    for k in range(len(BATCHES)):
        t = k + 1
        g = -_grad_ref(k) if maximize else _grad_ref(k)
        rows = np.unique(BATCHES[k])
        gv = g[rows]
        old_m, old_v = m[rows].copy(), v[rows].copy()
        upd_m, upd_v = (gv - old_m) * (1 - b1), (gv ** 2 - old_v) * (1 - b2)
        m[rows] += upd_m
        v[rows] += upd_v
        step_size = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        w[rows] += -step_size * ((upd_m + old_m) / (np.sqrt(upd_v + old_v) + eps))
    return w, m, v


@pytest.mark.parametrize("maximize", [False, True])
def test_sparse_adam_lazy_update(maximize):
    emb, opt = _train(lambda p: optim.SparseAdam(p, lr=0.01, betas=(0.8, 0.95), eps=1e-6,
                                                 maximize=maximize))
    w, m, v = _lazy_adam_ref(0.01, 0.8, 0.95, 1e-6, maximize)
    st = opt.state[emb.weight]
    assert st["step"] == len(BATCHES) and isinstance(st["step"], int)
    np.testing.assert_allclose(emb.weight.detach().numpy(), w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(st["exp_avg"].numpy(), m, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(st["exp_avg_sq"].numpy(), v, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(emb.weight.detach().numpy()[3], W0[3])  # never looked up
    # dense Adam decays the moments of every row, so rows seen earlier keep moving
    dense, _ = _train(lambda p: optim.Adam(p, lr=0.01, betas=(0.8, 0.95), eps=1e-6,
                                           maximize=maximize), sparse=False)
    assert not np.allclose(dense.weight.detach().numpy()[4], w[4])


def test_sparse_adam_empty_grad_counts_the_step():
    emb = nn.Embedding(ROWS, DIM, sparse=True).double()
    opt = optim.SparseAdam(emb.parameters())
    emb.weight.grad = tgrad.sparse_coo_tensor(tgrad.zeros(1, 0, dtype=tgrad.int64),
                                              tgrad.zeros(0, DIM, dtype=tgrad.float64),
                                              (ROWS, DIM))
    before = emb.weight.detach().numpy().copy()
    opt.step()
    assert opt.state[emb.weight]["step"] == 1
    np.testing.assert_array_equal(emb.weight.detach().numpy(), before)


def test_sparse_adam_errors():
    lin = nn.Linear(2, 2)
    for kw, msg in ((dict(lr=0.0), "Invalid learning rate: 0.0"),
                    (dict(eps=0.0), "Invalid epsilon value: 0.0"),
                    (dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
                    (dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0")):
        with pytest.raises(ValueError, match=f"^{msg}$"):
            optim.SparseAdam(lin.parameters(), **kw)
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        optim.SparseAdam(lin.parameters(), lr=tgrad.ones(2))
    sp = tgrad.zeros(2, 2).to_sparse().requires_grad_()
    with pytest.raises(ValueError, match=r"^Sparse params at indices \[\[0, 1\]\]: SparseAdam "
                                         r"requires dense parameter tensors$"):
        optim.SparseAdam([tgrad.zeros(2, requires_grad=True), sp])
    with pytest.raises(ValueError, match=r"^Complex params at indices \[\[0, 0\]\]: "
                                         r"SparseAdam does not support complex parameters$"):
        optim.SparseAdam([tgrad.zeros(2, dtype=tgrad.complex64, requires_grad=True)])
    lin(tgrad.ones(2)).sum().backward()
    opt = optim.SparseAdam(lin.parameters())
    with pytest.raises(RuntimeError, match="^SparseAdam does not support dense gradients, "
                                           "please consider Adam instead$"):
        opt.step()
    assert opt.defaults == {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "maximize": False}


@pytest.mark.parametrize("cls,msg", [
    (optim.Adam, "Adam does not support sparse gradients, please consider SparseAdam instead"),
    (optim.AdamW, "Adam does not support sparse gradients, please consider SparseAdam instead"),
    (optim.RMSprop, "RMSprop does not support sparse gradients"),
    (optim.Adamax, "Adamax does not support sparse gradients"),
    (optim.NAdam, "NAdam does not support sparse gradients"),
    (optim.RAdam, "RAdam does not support sparse gradients"),
    (optim.Adadelta, "Adadelta does not support sparse gradients"),
    (optim.Rprop, "Rprop does not support sparse gradients"),
    (optim.ASGD, "ASGD does not support sparse gradients"),
    (optim.Adafactor, "Adafactor does not support sparse gradients"),
])
def test_other_optimizers_refuse_sparse_grads(cls, msg):
    for kw in ({}, {"foreach": True}):
        with pytest.raises(RuntimeError, match=f"^{msg}$"):
            _train(lambda p, kw=kw: cls(p, **kw), steps=1)

    class Custom(cls):  # a subclass keeps the tgrad class's name, as PyTorch's text
        pass
    with pytest.raises(RuntimeError, match=f"^{msg}$"):
        _train(Custom, steps=1)


def test_lbfgs_uses_sparse_grad_dense():
    def run(sparse):
        emb = nn.Embedding(ROWS, DIM, sparse=sparse).double()
        with tgrad.no_grad():
            emb.weight.copy_(tgrad.tensor(W0))
        opt = optim.LBFGS(emb.parameters(), lr=0.5, max_iter=3)
        target = tgrad.tensor(COEF[0])

        def closure():
            opt.zero_grad()
            loss = ((emb(tgrad.tensor(BATCHES[0])) - target) ** 2).sum()
            loss.backward()
            return loss
        opt.step(closure)
        return emb.weight.detach().numpy()
    np.testing.assert_allclose(run(True), run(False), rtol=1e-12, atol=1e-12)


def test_zero_grad_keeps_an_empty_sparse_grad():
    for owner in ("optimizer", "module"):
        emb, opt = _train(lambda p: optim.SGD(p, lr=0.1), steps=1)
        g = emb.weight.grad
        (opt if owner == "optimizer" else emb).zero_grad(set_to_none=False)
        assert emb.weight.grad is g and g.is_sparse and g._nnz() == 0 and g.is_coalesced()
        assert g.shape == (ROWS, DIM)
        emb(tgrad.tensor([2, 0, 2])).sum().backward()  # accumulates in place (PyTorch)
        assert emb.weight.grad is g and not g.is_coalesced()
        np.testing.assert_array_equal(g._indices().numpy(), [[2, 0, 2]])
        ref = np.zeros((ROWS, DIM))
        ref[[0, 2]] = [[1.0] * DIM, [2.0] * DIM]
        np.testing.assert_array_equal(g.to_dense().numpy(), ref)


def test_clip_grad_refuses_sparse_grads():
    emb, _ = _train(lambda p: optim.SGD(p, lr=0.0), steps=1)
    before = emb.weight.grad.to_dense().numpy().copy()
    for norm_type in (2.0, "inf"):
        with pytest.raises(NotImplementedError,
                           match="Could not run 'aten::linalg_vector_norm' with arguments "
                                 "from the 'SparseCPU' backend"):
            nn.utils.clip_grad_norm_(emb.parameters(), 0.1, norm_type=norm_type)
    with pytest.raises(NotImplementedError, match="'aten::linalg_vector_norm'"):
        nn.utils.get_total_norm([emb.weight.grad])
    with pytest.raises(NotImplementedError,
                       match="Could not run 'aten::clamp_min_' with arguments from the "
                             "'SparseCPU' backend"):
        nn.utils.clip_grad_value_(emb.parameters(), 0.1)
    np.testing.assert_array_equal(emb.weight.grad.to_dense().numpy(), before)


# ---------------------------------------------------------------------- EmbeddingBag
BAG_INPUT = [1, 4, 1, 0, 2, 2, 5]
BAG_OFFSETS = [0, 3, 3, 5]  # bags [1, 4, 1], [], [0, 2], [2, 5]
BAG_OF = np.array([0, 0, 0, 2, 2, 3, 3])


@pytest.mark.parametrize("mode,psw,pad", [("sum", False, None), ("sum", True, 2),
                                          ("mean", False, None), ("mean", False, 2)])
def test_embedding_bag_sparse_grad(mode, psw, pad):
    out_grad = np.arange(1.0, 9.0).reshape(4, 2)  # d loss / d output (bags, dim)
    psw_np = np.arange(1.0, 8.0)
    keep = np.array([i != pad for i in BAG_INPUT])
    # PyTorch's sparse gradient: one entry per non-padding input position, the gradient its
    # row received from its bag
    vals = out_grad[BAG_OF]
    if psw:
        vals = vals * psw_np[:, None]
    if mode == "mean":
        counts = np.bincount(BAG_OF[keep], minlength=4)
        vals = vals / counts[BAG_OF][:, None]
    grads = {}
    for sparse in (True, False):
        w = tgrad.tensor(W0[:, :2].copy(), requires_grad=True)
        out = nn.functional.embedding_bag(
            tgrad.tensor(BAG_INPUT), w, tgrad.tensor(BAG_OFFSETS), mode=mode, sparse=sparse,
            per_sample_weights=tgrad.tensor(psw_np) if psw else None, padding_idx=pad)
        (out * tgrad.tensor(out_grad)).sum().backward()
        grads[sparse] = w.grad
    g = grads[True]
    assert g.is_sparse and not g.is_coalesced() and g.shape == (ROWS, 2)
    np.testing.assert_array_equal(g._indices().numpy(), [np.array(BAG_INPUT)[keep]])
    np.testing.assert_allclose(g._values().numpy(), vals[keep], rtol=1e-15)
    np.testing.assert_allclose(g.to_dense().numpy(), grads[False].numpy(), rtol=1e-14)


def test_embedding_bag_module_sparse_2d_input_and_errors():
    bag = nn.EmbeddingBag(ROWS, 2, mode="mean", sparse=True).double()
    bag(tgrad.tensor([[1, 2], [2, 3]])).sum().backward()
    np.testing.assert_array_equal(bag.weight.grad._indices().numpy(), [[1, 2, 2, 3]])
    np.testing.assert_array_equal(bag.weight.grad._values().numpy(), np.full((4, 2), 0.5))
    before = bag.weight.detach().numpy().copy()
    optim.SparseAdam(bag.parameters(), lr=0.1).step()
    # a first Adam step moves each entry with a gradient g by -lr g / (|g| + eps / sqrt(bc2))
    moved = np.zeros((ROWS, 2))
    moved[1:4] = -0.1
    np.testing.assert_allclose(bag.weight.detach().numpy() - before, moved, rtol=1e-6)
    with pytest.raises(ValueError, match="^max mode does not support sparse weights$"):
        nn.EmbeddingBag(ROWS, 2, mode="max", sparse=True)(tgrad.tensor([[1, 2]]))
    w = tgrad.tensor(W0, requires_grad=True)
    out = nn.functional.embedding_bag(tgrad.tensor([[1, 1]]), w, sparse=True, mode="sum",
                                      scale_grad_by_freq=True)
    with pytest.raises(RuntimeError, match="^embedding_backward: scale_grad_by_freq not "
                                           "supported with sparse gradients$"):
        out.sum().backward()

"""DataLoader with worker processes (num_workers > 0), checked against num_workers=0 and
against references computed here: the rows of a NumPy array, Python's / NumPy's / tgrad's
generators seeded by hand with PyTorch's per-worker seeds, and PyTorch's published
``_generate_state`` values. Tiny datasets, at most 2 workers."""

import multiprocessing as mp
import os
import random
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tgrad
from tgrad.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    get_worker_info,
)
from tgrad.utils.data._worker import _generate_state

XA = np.arange(20.0).reshape(10, 2)


def make_ds():
    return TensorDataset(tgrad.tensor(XA), tgrad.arange(10))


def labels(loader):
    return [b[1].tolist() for b in loader]


def no_children():
    return mp.active_children() == []


# ------------------------------------------------------------------ datasets (module level:
# picklable for the spawn start method)
class Seeds(Dataset):
    """Each sample: (index, worker id, worker seed, tgrad / NumPy / Python draws)."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return (i, info.id, info.seed, float(tgrad.rand(()).item()), float(np.random.rand()),
                random.random())


class Shard(IterableDataset):
    """range(n), split between workers by get_worker_info (every num_workers-th item)."""

    def __init__(self, n, shard=True):
        self.n = n
        self.shard = shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


class Fails(Dataset):
    def __init__(self, exc):
        self.exc = exc

    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise self.exc
        return i


class Gated(Dataset):
    """Item 0 waits for ``event`` (up to 60 s); item 1 sets ``event`` when ``set_on_1``."""

    def __init__(self, event, set_on_1):
        self.event = event
        self.set_on_1 = set_on_1

    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 0:
            self.event.wait(60)
        if i == 1 and self.set_on_1:
            self.event.set()
        return i


class Sleeps(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        if i == 1:
            import time
            time.sleep(1.0)
        return i


class Dies(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 1:
            os._exit(3)
        return i


class Tagged(Dataset):
    """Returns (i, tag) where tag is set by worker_init_fn in the worker's copy."""

    tag = "main"
    inits = 0

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i, self.tag, self.inits, os.getpid()


def tag_init(worker_id):
    ds = get_worker_info().dataset
    ds.tag = f"worker{worker_id}"
    ds.inits += 1


def bad_init(worker_id):
    raise KeyError("no config")


# ------------------------------------------------------------------ same data as num_workers=0
def test_map_style_same_batches_as_single_process():
    ds = make_ds()
    ref = labels(DataLoader(ds, batch_size=3))
    assert ref == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    for in_order in (True, False):
        got = list(DataLoader(ds, batch_size=3, num_workers=2, in_order=in_order))
        lab = [b[1].tolist() for b in got]
        if in_order:
            assert lab == ref
        assert sorted(lab) == ref
        for xb, yb in got:  # each row is XA's row of its label, float64
            assert xb.dtype == tgrad.float64 and yb.dtype == tgrad.int64
            np.testing.assert_array_equal(np.asarray(xb.tolist()), XA[yb.tolist()])
    assert no_children()


def test_shuffle_same_order_as_single_process():
    ds = make_ds()
    for gen in (lambda: None, lambda: tgrad.Generator().manual_seed(7),
                lambda: np.random.default_rng(7)):
        tgrad.manual_seed(11)
        ref = labels(DataLoader(ds, batch_size=4, shuffle=True, generator=gen()))
        tgrad.manual_seed(11)
        got = labels(DataLoader(ds, batch_size=4, shuffle=True, generator=gen(),
                                num_workers=2, prefetch_factor=1))
        assert got == ref
        assert sorted(sum(got, [])) == list(range(10))
    assert no_children()


def test_unbatched_and_custom_collate_run_in_workers():
    ds = make_ds()
    got = list(DataLoader(ds, batch_size=None, num_workers=2))
    assert [y.item() for _, y in got] == list(range(10))

    def collate(batch):  # runs in the worker: report its pid with the batch
        return os.getpid(), [int(y) for _, y in batch]

    out = list(DataLoader(ds, batch_size=5, num_workers=2, collate_fn=collate))
    assert [b for _, b in out] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert os.getpid() not in {p for p, _ in out} and len({p for p, _ in out}) == 2


def test_iterable_sharded_by_worker_info():
    ref = list(DataLoader(Shard(7), batch_size=None))
    got = list(DataLoader(Shard(7), batch_size=None, num_workers=2))
    assert got == ref == list(range(7))
    # batches are made per worker: worker 0 has 0 2 4 6, worker 1 has 1 3 5 (round robin)
    batches = [b.tolist() for b in DataLoader(Shard(7), batch_size=2, num_workers=2)]
    assert batches == [[0, 2], [1, 3], [4, 6], [5]]
    batches = [b.tolist() for b in DataLoader(Shard(7), batch_size=2, num_workers=2,
                                              drop_last=True)]
    assert batches == [[0, 2], [1, 3], [4, 6]]
    assert no_children()


def test_iterable_replicated_without_sharding_warns_on_length():
    loader = DataLoader(Shard(3, shard=False), batch_size=None, num_workers=2)
    assert len(loader) == 3
    with pytest.warns(UserWarning, match=r"was reported to be 3.*not properly configuring"):
        got = list(loader)
    assert sorted(got) == [0, 0, 1, 1, 2, 2]  # each worker yields the whole dataset


# ------------------------------------------------------------------ order
def test_in_order_waits_for_the_slow_worker():
    ctx = mp.get_context()
    ev = ctx.Event()  # item 0 (worker 0) is produced only after item 1 (worker 1)
    got = list(DataLoader(Gated(ev, set_on_1=True), batch_size=None, num_workers=2))
    assert got == [0, 1, 2, 3]


def test_out_of_order_yields_as_results_arrive():
    ctx = mp.get_context()
    ev = ctx.Event()  # item 0 waits until the test has received another item
    it = iter(DataLoader(Gated(ev, set_on_1=False), batch_size=None, num_workers=2,
                         in_order=False))
    first = next(it)
    assert first != 0
    ev.set()
    rest = list(it)
    assert sorted([first] + rest) == [0, 1, 2, 3]
    del it
    assert no_children()


# ------------------------------------------------------------------ seeds
def test_generate_state_matches_pytorch():
    # torch.utils.data._utils.worker._generate_state(base_seed, worker_id) in PyTorch 2.13
    assert _generate_state(0, 0) == [2968811710, 3677149159, 745650761, 2884920346]
    assert _generate_state(123456789012345, 1) == [470203773, 4173466889, 748208948,
                                                   3177297813]


def test_worker_seeds_distinct_and_reproducible():
    def run(seed):
        loader = DataLoader(Seeds(), batch_size=None, num_workers=2,
                            generator=tgrad.Generator().manual_seed(seed))
        return list(loader)

    a, b, c = run(5), run(5), run(6)
    assert a == b and a != c
    assert get_worker_info() is None
    seeds = {wid: s for _, wid, s, *_ in a}
    assert sorted(seeds) == [0, 1] and seeds[1] == seeds[0] + 1  # base_seed + worker_id
    base = seeds[0]
    for wid in (0, 1):  # each worker's first two draws, from hand-seeded references
        rows = [r for r in a if r[1] == wid]
        g = tgrad.Generator().manual_seed(base + wid)
        ref_t = [float(tgrad.rand((), generator=g).item()) for _ in rows]
        rs = np.random.RandomState(_generate_state(base, wid))
        py = random.Random(base + wid)
        assert [r[3] for r in rows] == ref_t
        assert [r[4] for r in rows] == [rs.random_sample() for _ in rows]
        assert [r[5] for r in rows] == [py.random() for _ in rows]
    # the main process's streams are untouched by the workers' seeding
    tgrad.manual_seed(0)
    np.random.seed(0)
    run(5)
    assert np.random.rand() == np.random.RandomState(0).rand()


# ------------------------------------------------------------------ init fn, persistence
def test_worker_init_fn_and_persistent_workers():
    ds = Tagged()
    loader = DataLoader(ds, batch_size=None, num_workers=2, worker_init_fn=tag_init,
                        persistent_workers=True)
    epochs = [list(loader) for _ in range(3)]
    for ep in epochs:
        assert [i for i, *_ in ep] == [0, 1, 2, 3]
        assert [t for _, t, _, _ in ep] == ["worker0", "worker1", "worker0", "worker1"]
        assert all(n == 1 for _, _, n, _ in ep)  # init ran once per worker, ever
    pids = [{p for *_, p in ep} for ep in epochs]
    assert pids[0] == pids[1] == pids[2] and len(pids[0]) == 2
    assert ds.tag == "main" and ds.inits == 0  # the main process's copy is untouched
    # an epoch abandoned half-way: the next one still starts from the beginning
    it = iter(loader)
    next(it)
    assert [i for i, *_ in loader] == [0, 1, 2, 3]
    assert len(mp.active_children()) == 2
    del loader, it
    assert no_children()

    plain = DataLoader(Tagged(), batch_size=None, num_workers=1)
    p1 = {p for *_, p in plain}
    p2 = {p for *_, p in plain}
    assert p1.isdisjoint(p2)  # without persistent_workers each epoch starts new workers


# ------------------------------------------------------------------ errors
def test_worker_exception_reraised_with_worker_id():
    it = iter(DataLoader(Fails(ValueError("bad item")), batch_size=None, num_workers=2))
    assert [next(it), next(it)] == [0, 1]
    with pytest.raises(ValueError) as err:
        next(it)
    msg = str(err.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 0.")
    assert "Original Traceback (most recent call last):" in msg and "bad item" in msg
    assert "__getitem__" in msg
    del it, err
    assert no_children()

    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        list(DataLoader(Fails(ValueError()), batch_size=None, num_workers=2,
                        worker_init_fn=bad_init))
    assert no_children()


def test_timeout_and_dead_worker():
    it = iter(DataLoader(Sleeps(), batch_size=None, num_workers=2, timeout=0.2))
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        list(it)
    del it
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited "
                                           r"unexpectedly"):
        list(DataLoader(Dies(), batch_size=None, num_workers=2))
    assert no_children()


def test_argument_errors():
    with pytest.raises(ValueError, match="should specify a valid start method in"):
        DataLoader(make_ds(), num_workers=1, multiprocessing_context="bogus")
    with pytest.raises(TypeError, match="should be a valid context object"):
        DataLoader(make_ds(), num_workers=1, multiprocessing_context=3)
    with pytest.raises(AssertionError, match="requires timeout == 0"):
        iter(DataLoader(make_ds(), timeout=1.0))  # PyTorch: timeout needs workers
    assert isinstance(DataLoader(make_ds(), num_workers=1, multiprocessing_context="spawn")
                      .multiprocessing_context, mp.context.BaseContext)


# ------------------------------------------------------------------ tensors across processes
class Grads(Dataset):
    def __init__(self, leaf):
        self.w = tgrad.tensor([1.0, 2.0], requires_grad=True)
        self.leaf = leaf

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return self.w if self.leaf else self.w * 2


def test_tensors_cross_processes():
    got = list(DataLoader(Grads(leaf=True), batch_size=None, num_workers=1))
    assert all(t.requires_grad and t.is_leaf and t.tolist() == [1.0, 2.0] for t in got)
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        list(DataLoader(Grads(leaf=False), batch_size=None, num_workers=1))
    samples = [(np.float32(1.5), np.array([True, False]), np.array([3], np.int32))]
    (f, b, i), = DataLoader(samples, batch_size=None, num_workers=1)
    assert (f.dtype, b.dtype, i.dtype) == (tgrad.float32, tgrad.bool, tgrad.int32)
    assert (f.item(), b.tolist(), i.tolist()) == (1.5, [True, False], [3])


def test_pin_memory_is_a_no_op():
    ds = make_ds()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = labels(DataLoader(ds, batch_size=4, num_workers=1, pin_memory=True))
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    pinned = any("no accelerator is found" in str(x.message) for x in w)
    assert pinned == (not tgrad.cuda.is_available())


def test_spawn_context():
    loader = DataLoader(make_ds(), batch_size=4, num_workers=1,
                        multiprocessing_context="spawn")
    assert labels(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert no_children()


class MakesCuda(Dataset):
    def __len__(self):
        return 1

    def __getitem__(self, i):
        return tgrad.zeros(1, device="cuda")


def test_forked_worker_refuses_the_parents_gpu(monkeypatch):
    # a parent whose (real, non-emulated) GPU driver runtime had started: simulated
    class FakeDriver:
        interpreted = False

    if mp.get_start_method() != "fork":
        ctx = mp.get_context("fork")
    else:
        ctx = None
    from tgrad.cuda import _runtime
    monkeypatch.setitem(_runtime._state, "rt", FakeDriver())
    monkeypatch.setitem(_runtime._state, "done", True)
    loader = DataLoader(MakesCuda(), batch_size=None, num_workers=1,
                        multiprocessing_context=ctx)
    with pytest.raises(RuntimeError, match="Caught RuntimeError in DataLoader worker process "
                                           "0(.|\n)*Cannot re-initialize CUDA in forked "
                                           "subprocess"):
        list(loader)


def test_workers_stop_at_exit():
    # a persistent loader and an abandoned pass still alive when the interpreter exits
    code = ("import tgrad\n"
            "from tgrad.utils.data import DataLoader\n"
            "keep = DataLoader(list(range(6)), num_workers=2, persistent_workers=True)\n"
            "assert [int(b) for b in keep] == list(range(6))\n"
            "it = iter(DataLoader(list(range(6)), num_workers=2))\n"
            "assert int(next(it)) == 0\n"
            "pids = [w.pid for w in keep._iterator._workers + it._workers]\n"
            "print(' '.join(map(str, pids)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0 and out.stderr == "", out.stderr
    for pid in map(int, out.stdout.split()):  # every worker is gone (and was reaped)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


class Shapes(Dataset):
    """Tensors of several shapes, dtypes and layouts, built from NumPy references."""

    def __len__(self):
        return 1

    def __getitem__(self, i):
        return (tgrad.tensor(3.5, dtype=tgrad.float64), tgrad.tensor(7),
                tgrad.tensor(XA).t()[:, ::3], tgrad.zeros(0, 2), tgrad.tensor(True))


def test_tensor_shapes_survive_the_worker_pipe():
    # a 0-d sample came back 1-d (np.ascontiguousarray makes 0-d arrays 1-d)
    (s, i, view, empty, flag), = DataLoader(Shapes(), batch_size=None, num_workers=1)
    assert (s.shape, i.shape, flag.shape) == ((), (), ())
    assert (s.item(), i.item(), flag.item()) == (3.5, 7, True)
    assert (s.dtype, i.dtype) == (tgrad.float64, tgrad.int64)
    assert view.shape == (2, 4) and np.array_equal(view.numpy(), XA.T[:, ::3])
    assert empty.shape == (0, 2)
    got = list(DataLoader(make_ds(), batch_size=None, num_workers=1))
    assert [y.shape for _, y in got] == [()] * 10

"""tgrad.utils.data: datasets, samplers, DataLoader and the collate functions, checked
against plain-Python / NumPy references written here (index chunking, the fraction split
rule, stacked arrays) and by gradcheck for the differentiable tensor collate."""

import collections
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tgrad
from tgrad.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)

Point = collections.namedtuple("Point", "x y")


def np_of(t):
    return np.asarray(t.tolist())


def chunks(seq, size, drop_last):
    """Reference batching: consecutive slices of ``size``."""
    out = [list(seq[i:i + size]) for i in range(0, len(seq), size)]
    if drop_last and out and len(out[-1]) < size:
        out.pop()
    return out


class Squares(Dataset):
    """Map-style: sample i is (i, i*i as float)."""

    def __init__(self, n):
        self.n = n
        self.reads = []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.reads.append(i)
        return i, float(i * i)


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


# ----------------------------------------------------------------------------- datasets
def test_tensor_dataset_indexes_dim0():
    xa = np.arange(35, dtype=np.float64).reshape(7, 5)
    ya = np.arange(7) * 3
    ds = TensorDataset(tgrad.tensor(xa), tgrad.tensor(ya))
    assert len(ds) == 7
    for i in (0, 3, 6, -1):
        xs, ys = ds[i]
        np.testing.assert_array_equal(np_of(xs), xa[i])
        assert ys.item() == ya[i]
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(tgrad.zeros(3, 2), tgrad.zeros(4))
    with pytest.raises(ValueError, match="at least one tensor"):
        TensorDataset()


def test_subset_concat_chain():
    sub = Subset(list(range(10, 20)), [3, 1, 7])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [13, 11, 17]
    assert sub.__getitems__([2, 0]) == [17, 13]

    cat = ConcatDataset([range(3), range(0), range(10, 14)])
    ref = list(range(3)) + list(range(10, 14))
    assert len(cat) == 7 and cat.cumulative_sizes == [3, 3, 7]
    assert [cat[i] for i in range(-7, 7)] == ref[-7:] + ref
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-8]
    with pytest.raises(AssertionError, match="empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Stream(2)])
    added = Squares(2) + Squares(3)
    assert isinstance(added, ConcatDataset) and added[4] == (2, 4.0)

    chain = Stream(2) + Stream(3)
    assert isinstance(chain, ChainDataset)
    assert list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        list(ChainDataset([range(2)]))

    with pytest.raises(NotImplementedError, match="should implement __getitem__"):
        Dataset()[0]

    class BadSubset(Subset):
        def __getitem__(self, i):
            return 0

    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        BadSubset(range(3), [0])


def ref_split_lengths(n, fracs):
    """PyTorch's rule, written out: floor(n * f) each, then +1 round robin."""
    lens = [math.floor(n * f) for f in fracs]
    k = 0
    while sum(lens) < n:
        lens[k % len(lens)] += 1
        k += 1
    return lens


@pytest.mark.parametrize("n,fracs", [(10, [0.33, 0.33, 0.34]), (7, [0.5, 0.25, 0.25]),
                                     (1, [0.5, 0.5]), (13, [1.0]), (11, [0.1] * 10)])
def test_random_split_fractions(n, fracs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero-length splits warn
        parts = random_split(range(n), fracs)
    assert [len(p) for p in parts] == ref_split_lengths(n, fracs)
    assert sorted(x for p in parts for x in (p[i] for i in range(len(p)))) == list(range(n))


def test_random_split_lengths_seed_and_errors():
    tgrad.manual_seed(3)
    a = [list(p.indices) for p in random_split(range(9), [2, 0, 7])]
    tgrad.manual_seed(3)
    b = [list(p.indices) for p in random_split(range(9), [2, 0, 7])]
    assert a == b and [len(p) for p in a] == [2, 0, 7]
    assert sorted(a[0] + a[2]) == list(range(9))
    g1 = [p.indices for p in random_split(range(9), [4, 5], generator=np.random.default_rng(1))]
    g2 = [p.indices for p in random_split(range(9), [4, 5], generator=np.random.default_rng(1))]
    assert g1 == g2
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(1), [1.0, 0.0])
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(range(10), [1.5, -0.5])
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        random_split(range(4), [2, 2], generator=42)


# ----------------------------------------------------------------------------- samplers
def test_sequential_and_batch_sampler():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    assert len(SequentialSampler(range(0))) == 0
    for n in (0, 1, 2, 3, 7, 10):
        for bs in (1, 3, 4):
            for drop in (False, True):
                s = BatchSampler(SequentialSampler(range(n)), bs, drop)
                ref = chunks(list(range(n)), bs, drop)
                assert list(s) == ref and len(s) == len(ref), (n, bs, drop)
    assert list(BatchSampler([5, 2, 8], 2, False)) == [[5, 2], [8]]  # any iterable
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="batch_size should be a positive integer"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(range(3), 2, 1)
    with pytest.raises(NotImplementedError):
        Sampler().__iter__()


def test_random_sampler():
    n = 11
    tgrad.manual_seed(0)
    first = list(RandomSampler(range(n)))
    assert sorted(first) == list(range(n))
    tgrad.manual_seed(0)
    assert list(RandomSampler(range(n))) == first
    # num_samples > n: whole permutations, then part of one
    s = list(RandomSampler(range(n), num_samples=2 * n + 4))
    assert len(s) == 2 * n + 4
    assert sorted(s[:n]) == sorted(s[n:2 * n]) == list(range(n))
    assert len(set(s[2 * n:])) == 4
    r = RandomSampler(range(3), replacement=True, num_samples=70)
    draws = list(r)
    assert len(r) == 70 and len(draws) == 70 and set(draws) <= {0, 1, 2}
    assert len(set(draws)) == 3  # P(a value missing in 70 draws) ~ 3 (2/3)^70
    g = [list(RandomSampler(range(n), generator=np.random.default_rng(5))) for _ in range(2)]
    assert g[0] == g[1]
    rng = np.random.default_rng(5)
    shared = RandomSampler(range(n), generator=rng)
    assert list(shared) == g[0] and sorted(shared) == list(range(n))  # the state moves on
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples=0"):
        RandomSampler([])
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        list(RandomSampler(range(3), generator="seed"))
    # drawing with replacement from nothing: PyTorch's RuntimeError (NumPy's "high <= 0")
    with pytest.raises(RuntimeError, match="RandomSampler: cannot draw 2 samples from an "
                                           "empty data_source"):
        list(RandomSampler([], replacement=True, num_samples=2))


def test_subset_and_weighted_samplers():
    idx = [4, 2, 9, 7, 1]
    s = SubsetRandomSampler(idx, generator=np.random.default_rng(0))
    assert len(s) == 5 and sorted(s) == sorted(idx)
    w = WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 4000, generator=np.random.default_rng(0))
    draws = np.asarray(list(w))
    assert len(w) == 4000 and set(draws.tolist()) == {1, 3}
    assert abs((draws == 3).mean() - 0.75) < 0.03  # ~4.5 standard deviations
    np.testing.assert_array_equal(np_of(w.weights), [0.0, 1.0, 0.0, 3.0])
    nr = list(WeightedRandomSampler(tgrad.tensor([1.0, 2.0, 3.0, 0.5]), 4, replacement=False))
    assert sorted(nr) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean"):
        WeightedRandomSampler([1.0], 1, replacement=None)
    with pytest.raises(ValueError, match=r"1d sequence .* shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 1)
    with pytest.raises(RuntimeError, match="element < 0"):
        WeightedRandomSampler([1.0, -1.0], 1)
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        WeightedRandomSampler([0.0, 0.0], 1)
    with pytest.raises(RuntimeError, match="without replacement"):
        WeightedRandomSampler([1.0, 0.0], 3, replacement=False)
    # without replacement, more samples than nonzero weights: PyTorch's CPU multinomial
    # draws every nonzero-weight index first, then the zero-weight ones
    assert list(WeightedRandomSampler([1.0, 0.0], 2, replacement=False)) == [0, 1]
    for seed in range(5):
        d = list(WeightedRandomSampler([0.0, 2.0, 0.0, 1.0, 0.0], 4, replacement=False,
                                       generator=np.random.default_rng(seed)))
        assert sorted(d[:2]) == [1, 3] and len(set(d)) == 4 and set(d[2:]) <= {0, 2, 4}


# ----------------------------------------------------------------------------- collate
def test_default_collate_numbers_and_arrays():
    f = default_collate([1.5, 2.0, -3.25])
    assert f.dtype == tgrad.float64 and f.tolist() == [1.5, 2.0, -3.25]
    i = default_collate([3, 1])
    assert i.dtype == tgrad.int64 and i.tolist() == [3, 1]
    b = default_collate([True, False])
    assert b.dtype == tgrad.bool and b.tolist() == [True, False]
    for dt in (np.float32, np.float64, np.int32, np.int64, np.bool_):
        arrs = [(np.arange(6).reshape(2, 3) * k).astype(dt) for k in range(3)]
        out = default_collate(arrs)
        assert out.dtype == tgrad.dtypes.from_numpy_dtype(dt) and out.shape == (3, 2, 3)
        np.testing.assert_array_equal(np_of(out), np.stack(arrs))
        sc = default_collate([dt(1), dt(0)])
        assert sc.dtype == tgrad.dtypes.from_numpy_dtype(dt) and sc.shape == (2,)
    zero_d = default_collate([np.array(1.5), np.array(2.5)])
    assert zero_d.dtype == tgrad.float64 and zero_d.tolist() == [1.5, 2.5]
    one = default_collate([np.ones((1, 4), np.float32)])  # batch of 1
    assert one.shape == (1, 1, 4)


def test_default_collate_tensors_stack_and_backprop():
    xs = [tgrad.tensor(np.random.default_rng(k).standard_normal((2, 3))) for k in range(4)]
    out = default_collate(xs)
    np.testing.assert_allclose(np_of(out), np.stack([np_of(x) for x in xs]))
    a = tgrad.randn(3, 2, dtype=tgrad.float64, requires_grad=True)
    b = tgrad.randn(3, 2, dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda a, b: default_collate([a, b]), (a, b))
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([tgrad.zeros(2), tgrad.zeros(3)])


def test_default_collate_containers():
    batch = [{"a": Point(1, [2.0, 3]), "b": (b"x", np.int32(4)), "s": "p"},
             {"a": Point(5, [6.0, 7]), "b": (b"y", np.int32(8)), "s": "q"}]
    out = default_collate(batch)
    assert set(out) == {"a", "b", "s"} and isinstance(out["a"], Point)
    assert out["a"].x.tolist() == [1, 5] and out["a"].x.dtype == tgrad.int64
    y0, y1 = out["a"].y  # a list stays a list, collated position by position
    assert isinstance(out["a"].y, list)
    assert y0.dtype == tgrad.float64 and y0.tolist() == [2.0, 6.0]
    assert y1.dtype == tgrad.int64 and y1.tolist() == [3, 7]
    assert isinstance(out["b"], list)  # a tuple becomes a list (PyTorch)
    assert tuple(out["b"][0]) == (b"x", b"y")
    assert out["b"][1].dtype == tgrad.int32 and out["b"][1].tolist() == [4, 8]
    assert list(out["s"]) == ["p", "q"]
    ordered = default_collate([collections.OrderedDict(k=1), collections.OrderedDict(k=2)])
    assert isinstance(ordered, collections.OrderedDict) and ordered["k"].tolist() == [1, 2]


def test_default_collate_errors():
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers"):
        default_collate([object()])
    with pytest.raises(TypeError, match="found <class 'NoneType'>"):
        default_collate([None, None])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"])])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])
    with pytest.raises(IndexError):
        default_collate([])  # an empty batch has no first element (as PyTorch)
    with pytest.raises(TypeError, match="does not support NumPy dtype uint16"):
        default_collate([np.zeros(2, np.uint16)])


def test_default_convert():
    arr = np.arange(4, dtype=np.float32)
    out = default_convert({"a": (np.float64(1.5), arr), "b": [np.int32(3), "s"],
                           "c": Point(np.ones(2), 2), "d": np.array(["x"])})
    assert out["a"][0].dtype == tgrad.float64 and out["a"][0].item() == 1.5
    assert isinstance(out["a"], list) and out["a"][1].dtype == tgrad.float32
    np.testing.assert_array_equal(np_of(out["a"][1]), arr)
    assert out["b"][0].dtype == tgrad.int32 and out["b"][1] == "s"
    assert isinstance(out["c"], Point) and out["c"].y == 2 and out["c"].x.tolist() == [1.0, 1.0]
    assert isinstance(out["d"], np.ndarray)  # string arrays stay arrays
    t = tgrad.ones(2)
    assert default_convert(t) is t and default_convert(3) == 3 and default_convert("s") == "s"


# ----------------------------------------------------------------------------- DataLoader
@pytest.mark.parametrize("n,bs,drop", [(7, 3, False), (7, 3, True), (6, 3, True), (1, 4, False),
                                       (1, 4, True), (5, 1, False), (0, 2, False)])
def test_loader_sequential_batches(n, bs, drop):
    xa = np.random.default_rng(n).standard_normal((n, 2)).astype(np.float32)
    ya = np.arange(n) * 2
    loader = DataLoader(TensorDataset(tgrad.tensor(xa), tgrad.tensor(ya)), batch_size=bs,
                        drop_last=drop)
    ref = chunks(list(range(n)), bs, drop)
    got = list(loader)
    assert len(loader) == len(ref) == len(got)
    for (xb, yb), idx in zip(got, ref):
        assert xb.dtype == tgrad.float32 and xb.shape == (len(idx), 2)
        np.testing.assert_array_equal(np_of(xb), xa[idx])
        np.testing.assert_array_equal(np_of(yb), ya[idx])


def test_loader_shuffle_reproducible():
    ds = Squares(10)
    def epoch(loader):
        return [i for ib, _ in loader for i in ib.tolist()]
    tgrad.manual_seed(7)
    loader = DataLoader(ds, batch_size=4, shuffle=True)
    e1, e2 = epoch(loader), epoch(loader)
    assert sorted(e1) == sorted(e2) == list(range(10)) and e1 != e2  # new order per pass
    tgrad.manual_seed(7)
    assert epoch(loader) == e1
    # random ops between batches do not change the order of a pass already started
    tgrad.manual_seed(7)
    mixed = []
    for ib, sq in loader:
        tgrad.rand(5)
        mixed += ib.tolist()
        np.testing.assert_array_equal(np_of(sq), np.asarray(ib.tolist(), np.float64) ** 2)
    assert mixed == e1
    g = [epoch(DataLoader(ds, batch_size=3, shuffle=True, generator=np.random.default_rng(1)))
         for _ in range(2)]
    assert g[0] == g[1] and sorted(g[0]) == list(range(10))


def test_loader_batch_size_none_and_samplers():
    ds = Squares(4)
    items = list(DataLoader(ds, batch_size=None))
    assert len(DataLoader(ds, batch_size=None)) == 4
    assert items == [[0, 0.0], [1, 1.0], [2, 4.0], [3, 9.0]]  # default_convert: tuple -> list
    arrs = list(DataLoader([np.full(2, k, np.float64) for k in range(3)], batch_size=None))
    assert all(a.dtype == tgrad.float64 and a.tolist() == [k, k] for k, a in enumerate(arrs))
    out = list(DataLoader(range(10), sampler=[3, 1, 0, 9, 8], batch_size=2))
    assert [o.tolist() for o in out] == [[3, 1], [0, 9], [8]]
    bsamp = [[3, 1], [0], [9, 8, 7]]
    loader = DataLoader(range(10), batch_sampler=bsamp)
    assert [o.tolist() for o in loader] == bsamp and len(loader) == 3
    assert loader.batch_size is None and loader.drop_last is False
    sums = list(DataLoader(range(5), batch_size=2, collate_fn=sum))
    assert sums == [1, 5, 4]
    strs = list(DataLoader(["a", "b", "c"], batch_size=2))
    assert [list(s) for s in strs] == [["a", "b"], ["c"]]


def test_loader_uses_getitems():
    class Batched(Squares):
        def __getitems__(self, idx):
            self.reads.append(tuple(idx))
            return [(i, float(i * i)) for i in idx]
    ds = Batched(5)
    list(DataLoader(ds, batch_size=2))
    assert ds.reads == [(0, 1), (2, 3), (4,)]
    sub = Subset(ds, [4, 0, 2])
    ib, _ = next(iter(DataLoader(sub, batch_size=3)))
    assert ib.tolist() == [4, 0, 2] and ds.reads[-1] == (4, 0, 2)


@pytest.mark.parametrize("n,bs,drop", [(7, 3, False), (7, 3, True), (6, 3, True), (0, 2, False),
                                       (2, 5, True)])
def test_loader_iterable_dataset(n, bs, drop):
    loader = DataLoader(Stream(n), batch_size=bs, drop_last=drop)
    ref = chunks(list(range(n)), bs, drop)
    assert [b.tolist() for b in loader] == ref
    assert len(loader) == (n // bs if drop else math.ceil(n / bs))
    assert [x for x in DataLoader(Stream(3), batch_size=None)] == [0, 1, 2]


def test_loader_argument_errors():
    it = Stream(3)
    cases = [
        (dict(dataset=it, shuffle=True), "expected unspecified shuffle option"),
        (dict(dataset=it, sampler=[0]), "expected unspecified sampler option"),
        (dict(dataset=it, batch_sampler=[[0]]), "expected unspecified batch_sampler option"),
        (dict(dataset=range(3), sampler=[0], shuffle=True), "mutually exclusive with shuffle"),
        (dict(dataset=range(3), batch_sampler=[[0]], batch_size=2),
         "batch_sampler option is mutually exclusive with batch_size"),
        (dict(dataset=range(3), batch_sampler=[[0]], drop_last=True),
         "batch_sampler option is mutually exclusive"),
        (dict(dataset=range(3), batch_sampler=[[0]], shuffle=True),
         "batch_sampler option is mutually exclusive"),
        (dict(dataset=range(3), batch_size=None, drop_last=True),
         "batch_size=None option disables auto-batching"),
        (dict(dataset=range(3), num_workers=-1), "num_workers option should be non-negative"),
        (dict(dataset=range(3), timeout=-1), "timeout option should be non-negative"),
        (dict(dataset=range(3), prefetch_factor=2), "prefetch_factor option could only"),
        (dict(dataset=range(3), persistent_workers=True), "needs num_workers > 0"),
        (dict(dataset=range(3), multiprocessing_context="spawn"), "num_workers > 0"),
        (dict(dataset=range(3), batch_size=0), "batch_size should be a positive integer"),
    ]
    for kwargs, msg in cases:
        with pytest.raises(ValueError, match=msg):
            DataLoader(**kwargs)
    loader = DataLoader(range(3), shuffle=False)  # shuffle=False is allowed with an iterable
    assert [t.tolist() for t in DataLoader(it, shuffle=False)] == [[0], [1], [2]]
    with pytest.raises(ValueError, match="batch_size attribute should not be set after"):
        loader.batch_size = 2
    loader.collate_fn = default_convert  # other attributes may change


def test_loader_worker_arguments_kept():
    # the worker processes themselves: tests/test_data_workers.py
    xa = np.arange(12.0).reshape(6, 2)
    ds = TensorDataset(tgrad.tensor(xa))
    ref = [b[0].tolist() for b in DataLoader(ds, batch_size=4)]
    loader = DataLoader(ds, batch_size=4, num_workers=1, persistent_workers=True,
                        prefetch_factor=4, timeout=30.0)
    assert [b[0].tolist() for b in loader] == ref and len(loader) == 2
    assert loader.prefetch_factor == 4 and loader.timeout == 30.0
    assert get_worker_info() is None
    assert DataLoader(ds, num_workers=2).prefetch_factor == 2


def test_import_is_lazy_and_exposed():
    code = ("import sys, tgrad; assert 'tgrad.utils.data' not in sys.modules; "
            "import tgrad.utils; from tgrad.utils import data; "
            "assert tgrad.utils.data.DataLoader is data.DataLoader; "
            "assert 'torch' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_stack_dataset_tuple_dict_and_batched_reads():
    from tgrad.utils.data import StackDataset

    class Batched(list):  # a dataset with its own batched read, counted
        reads = 0

        def __getitems__(self, idx):
            Batched.reads += 1
            return [self[i] for i in idx]

    a, b = Batched([10, 11, 12]), ["x", "y", "z"]
    s = StackDataset(a, b)
    assert len(s) == 3 and s[1] == (11, "y")
    assert s.__getitems__([2, 0]) == [(12, "z"), (10, "x")] and Batched.reads == 1
    d = StackDataset(n=a, c=b)
    assert d[0] == {"n": 10, "c": "x"}
    assert d.__getitems__([1]) == [{"n": 11, "c": "y"}] and Batched.reads == 2
    loader = tgrad.utils.data.DataLoader(d, batch_size=3)  # default_collate of dicts
    (batch,) = list(loader)
    assert batch["n"].tolist() == [10, 11, 12] and batch["c"] == ["x", "y", "z"]
    for bad, text in ((lambda: StackDataset(a, c=b), "both types are given"),
                      (lambda: StackDataset(a, [1]), "Size mismatch between datasets"),
                      (lambda: StackDataset(), "At least one dataset should be passed")):
        with pytest.raises(ValueError, match=text):
            bad()


def _distributed_reference(n, replicas, rank, shuffle, seed, epoch, drop_last):
    """PyTorch's documented DistributedSampler algorithm, written out."""
    if shuffle:
        g = tgrad.Generator()
        g.manual_seed(seed + epoch)
        idx = tgrad.randperm(n, generator=g).tolist()
    else:
        idx = list(range(n))
    if drop_last:
        per = n // replicas  # the largest multiple of replicas that fits
        idx = idx[:per * replicas]
    else:
        per = -(-n // replicas)
        while len(idx) < per * replicas:  # pad by repeating from the start
            idx = idx + idx[:per * replicas - len(idx)]
    return idx[rank::replicas]


@pytest.mark.parametrize("n, replicas", [(10, 4), (10, 5), (3, 8), (7, 3)])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_index_sequences(n, replicas, shuffle, drop_last):
    from tgrad.utils.data import DistributedSampler
    got = set()
    for rank in range(replicas):
        s = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=shuffle,
                               seed=5, drop_last=drop_last)
        for epoch in (0, 3):
            s.set_epoch(epoch)
            want = _distributed_reference(n, replicas, rank, shuffle, 5, epoch, drop_last)
            assert list(s) == want and len(s) == len(want)
            got.update(want)
    assert got == set(range(n)) or drop_last  # without drop_last every index is read


def test_distributed_sampler_errors_and_drop_last_small():
    from tgrad.utils.data import DistributedSampler
    assert list(DistributedSampler(range(3), num_replicas=8, rank=7, shuffle=False)) == [1]
    s = DistributedSampler(range(3), num_replicas=8, rank=0, drop_last=True)
    assert len(s) == 0 and list(s) == []
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(5))
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(5), num_replicas=2)
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval "
                                         r"\[0, 1\]"):
        DistributedSampler(range(5), num_replicas=2, rank=2)

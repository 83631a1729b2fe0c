"""Module APIs matching torch.nn.Module: get_parameter / get_buffer, extra state, type,
to_empty, share_memory, state-dict hooks and metadata (BatchNorm's version logic), global
module hooks, nn.Buffer, Sequential repetition and the deprecated register_backward_hook.
Expected values are hand-derived or NumPy float64, following PyTorch 2.13's behaviour."""

import io
from collections import OrderedDict

import numpy as np
import pytest

import tgrad
from tgrad import nn
from tgrad.nn.modules import module as module_mod

F64 = tgrad.float64


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _lin(w, b):
    lin = nn.Linear(len(w[0]), len(w), dtype=F64)
    with tgrad.no_grad():
        lin.weight.copy_(_t(w))
        lin.bias.copy_(_t(b))
    return lin


# ------------------------------------------------------------------ get_parameter / get_buffer
def test_get_parameter_and_get_buffer_follow_dotted_paths():
    net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    assert net.get_parameter("0.weight") is net[0].weight
    assert net.get_parameter("1.bias") is net[1].bias
    assert net.get_buffer("1.running_var") is net[1].running_var
    np.testing.assert_array_equal(net.get_buffer("1.running_var").numpy(), np.ones(3))
    assert net.get_buffer("1.num_batches_tracked").item() == 0
    net[1].foo = 3
    cases = [
        (lambda: net.get_parameter("0.nope"), "Linear has no attribute `nope`"),
        (lambda: net.get_parameter("5.weight"), "Sequential has no attribute `5`"),
        (lambda: net.get_parameter("1.running_mean"), "`running_mean` is not an nn.Parameter"),
        (lambda: net.get_parameter("1.foo"), "`foo` is not an nn.Parameter"),
        (lambda: net.get_buffer("1.weight"), "`weight` is not a buffer"),
        (lambda: net.get_buffer("1.foo"), "`foo` is not a buffer"),
        (lambda: net.get_buffer("1.bar"), "BatchNorm1d has no attribute `bar`"),
        (lambda: net.get_submodule("0.weight"), "`weight` is not an nn.Module"),
    ]
    for fn, msg in cases:
        with pytest.raises(AttributeError) as info:
            fn()
        assert str(info.value) == msg


def test_set_submodule_replaces_or_adds_a_child():
    # PyTorch's set_submodule(target, module, strict=False): replaces an existing child or
    # adds one under an existing parent; strict only replaces; its errors are PyTorch's
    net = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))
    tanh = nn.Tanh()
    net.set_submodule("1.0", tanh)
    assert net[1][0] is tanh and [type(m).__name__ for m in net[1]] == ["Tanh", "Linear"]
    extra = nn.Identity()
    net.set_submodule("1.extra", extra)
    assert net.get_submodule("1.extra") is extra
    assert [n for n, _ in net.named_modules()] == ["", "0", "1", "1.0", "1.1", "1.extra"]
    top = nn.ReLU()
    net.set_submodule("0", top, strict=True)
    assert net[0] is top and list(net.state_dict()) == ["1.1.weight", "1.1.bias"]
    net.foo = 3
    cases = [
        (lambda: net.set_submodule("1.new", nn.ReLU(), strict=True), AttributeError,
         "Sequential has no attribute `new`"),
        (lambda: net.set_submodule("2.x", nn.ReLU()), AttributeError,
         "Sequential has no attribute `2`"),
        (lambda: net.set_submodule("foo", nn.ReLU()), AttributeError,
         "`foo` is not an nn.Module"),
        (lambda: net.set_submodule("", nn.ReLU()), ValueError,
         "Cannot set the submodule without a target name!"),
        (lambda: net.set_submodule("0", 5), ValueError,
         "`module` is not an nn.Module, found <class 'int'>"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc) as info:
            fn()
        assert str(info.value) == msg


# ------------------------------------------------------------------ extra state
class _Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(_t([1.0, 2.0]))
        self.steps = 0

    def get_extra_state(self):
        return {"steps": self.steps}

    def set_extra_state(self, state):
        self.steps = state["steps"]


def test_extra_state_is_saved_and_loaded_only_when_overridden():
    src = nn.Sequential(_Counter(), nn.ReLU())
    src[0].steps = 7
    sd = src.state_dict()
    assert list(sd) == ["0.w", "0._extra_state"]
    assert sd["0._extra_state"] == {"steps": 7}
    assert "_extra_state" not in nn.Linear(1, 1).state_dict()
    dst = nn.Sequential(_Counter(), nn.ReLU())
    dst.load_state_dict(sd)
    assert dst[0].steps == 7
    del sd["0._extra_state"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "0._extra_state"'):
        dst.load_state_dict(sd)
    res = dst.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["0._extra_state"] and res.unexpected_keys == []
    plain = nn.Sequential(nn.Linear(1, 1))
    sd = plain.state_dict()
    sd["0._extra_state"] = 1
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "0._extra_state"'):
        plain.load_state_dict(sd)
    with pytest.raises(RuntimeError):
        plain.get_extra_state()


# ------------------------------------------------------------------ type / to_empty / share
def test_type_casts_every_parameter_and_buffer():
    bn = nn.BatchNorm1d(2)
    w = bn.weight
    with tgrad.no_grad():
        w.copy_(tgrad.tensor([0.5, 0.25]))
    assert bn.type(F64) is bn
    assert bn.weight is w and w.dtype == F64 and bn.running_mean.dtype == F64
    assert bn.num_batches_tracked.dtype == F64  # integer buffers too, as PyTorch's type()
    np.testing.assert_array_equal(w.detach().numpy(), [0.5, 0.25])
    bn.type("float32")
    assert w.dtype == tgrad.float32 and bn.running_var.dtype == tgrad.float32


def test_float_double_half_cast_floating_point_tensors_only():
    # PyTorch's float()/double()/half()/bfloat16(): floating point parameters, their grads
    # and buffers; complex and integer ones keep their dtype and values (to(dtype) casts
    # complex ones too)
    m = nn.Linear(2, 1, dtype=tgrad.complex64)
    with tgrad.no_grad():
        m.weight.copy_(tgrad.tensor([[1 + 2j, 3 - 1j]]))
    m.register_buffer("phase", tgrad.tensor([1j]))
    m.register_buffer("count", tgrad.tensor([3]))
    m.lin = nn.Linear(2, 1)
    m.lin.weight.grad = tgrad.ones(1, 2)
    for cast, dt in (("double", F64), ("half", tgrad.float16), ("bfloat16", tgrad.bfloat16),
                     ("float", tgrad.float32)):
        assert getattr(m, cast)() is m
        assert m.weight.dtype == tgrad.complex64 and m.phase.dtype == tgrad.complex64
        assert m.weight.tolist() == [[1 + 2j, 3 - 1j]] and m.phase.tolist() == [1j]
        assert m.count.dtype == tgrad.int64 and m.count.tolist() == [3]
        assert m.lin.weight.dtype == dt and m.lin.weight.grad.dtype == dt
        assert m.lin.weight.grad.tolist() == [[1.0, 1.0]]


def test_to_empty_keeps_shapes_dtypes_and_parameter_objects():
    net = nn.Sequential(nn.Linear(3, 2, dtype=F64), nn.BatchNorm1d(2))
    net.double()  # BatchNorm's float buffers to float64, num_batches_tracked stays int64
    w = net[0].weight
    outer = net.to_empty(device="cpu")
    assert outer is net and net[0].weight is w and w.requires_grad
    assert w.shape == (2, 3) and w.dtype == F64
    assert net[1].running_mean.shape == (2,) and net[1].num_batches_tracked.dtype == tgrad.int64

    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = nn.Parameter(_t([1.0, 2.0]))
            self.child = nn.Linear(1, 1)

    h = Holder()
    with tgrad.no_grad():
        h.child.weight.fill_(4.0)
    h.to_empty(device="cpu", recurse=False)
    assert h.p.shape == (2,)
    np.testing.assert_array_equal(h.child.weight.detach().numpy(), [[4.0]])  # not touched


def test_share_memory_is_a_no_op_returning_self():
    lin = _lin([[1.0, 2.0]], [3.0])
    assert lin.share_memory() is lin
    np.testing.assert_array_equal(lin.weight.detach().numpy(), [[1.0, 2.0]])


# ------------------------------------------------------------------ state_dict hooks
def test_state_dict_pre_and_post_hooks():
    net = nn.Sequential(_lin([[1.0, 2.0]], [3.0]))
    log = []
    h1 = net[0].register_state_dict_pre_hook(lambda m, prefix, kv: log.append(("pre", prefix,
                                                                               kv)))

    def post(m, sd, prefix, md):
        log.append(("post", prefix, list(sd), md))
        sd[prefix + "note"] = _t(1.0)

    h2 = net[0].register_state_dict_post_hook(post)
    sd = net.state_dict(keep_vars=True)
    assert log == [("pre", "0.", True), ("post", "0.", ["0.weight", "0.bias"], {"version": 1})]
    assert list(sd) == ["0.weight", "0.bias", "0.note"] and sd["0.note"].item() == 1.0
    h1.remove()
    h2.remove()
    log.clear()
    assert list(net.state_dict()) == ["0.weight", "0.bias"] and log == []
    net.register_state_dict_post_hook(lambda m, sd, prefix, md: {})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        net.state_dict()


def test_private_state_dict_hook_result_replaces_the_root_state_dict():
    lin = _lin([[1.0]], [2.0])
    with lin._register_state_dict_hook(lambda m, sd, prefix, md: {"only": sd["bias"]}):
        sd = lin.state_dict()
        assert list(sd) == ["only"] and sd["only"].tolist() == [2.0]
    assert list(lin.state_dict()) == ["weight", "bias"]  # the with block removed it


def test_load_state_dict_pre_hook_sees_the_local_state_and_metadata():
    src = nn.Sequential(_lin([[1.0, 2.0]], [3.0]))
    dst = nn.Sequential(_lin([[0.0, 0.0]], [0.0]))
    seen = []

    def pre(mod, sd, prefix, md, strict, missing, unexpected, errors):
        seen.append((mod, sorted(sd), prefix, dict(md), strict))
        sd[prefix + "bias"] = _t([9.0])  # the copy may be edited; the caller's is not

    handle = dst[0].register_load_state_dict_pre_hook(pre)
    sd = src.state_dict()
    dst.load_state_dict(sd)
    assert seen == [(dst[0], ["0.bias", "0.weight"], "0.", {"version": 1}, True)]
    np.testing.assert_array_equal(dst[0].weight.detach().numpy(), [[1.0, 2.0]])
    assert dst[0].bias.tolist() == [9.0] and sd["0.bias"].tolist() == [3.0]
    seen.clear()
    dst.load_state_dict(dict(sd), strict=False)  # no metadata: {} (strict is always True)
    assert seen[0][3] == {} and seen[0][4] is True
    handle.remove()
    dst.load_state_dict(sd)
    assert dst[0].bias.tolist() == [3.0] and len(seen) == 1

    calls = []
    with dst._register_load_state_dict_pre_hook(lambda *a: calls.append(len(a))):
        dst.load_state_dict(sd)
    assert calls == [7]  # without the module


def test_load_state_dict_post_hook_edits_incompatible_keys_in_place():
    lin = _lin([[1.0]], [2.0])
    sd = lin.state_dict()
    del sd["bias"]
    sd["extra"] = _t(0.0)
    got = []

    def forgive(mod, inc):
        got.append((list(inc.missing_keys), list(inc.unexpected_keys)))
        inc.missing_keys.clear()
        inc.unexpected_keys.clear()

    h = lin.register_load_state_dict_post_hook(forgive)
    res = lin.load_state_dict(sd)  # strict, but the hook cleared both lists
    assert got == [(["bias"], ["extra"])]
    assert res.missing_keys == [] and res.unexpected_keys == []
    h.remove()
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "bias"'):
        lin.load_state_dict(sd)
    lin.register_load_state_dict_post_hook(lambda m, inc: inc.unexpected_keys.append("ghost"))
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "ghost"'):
        lin.load_state_dict(lin.state_dict())
    other = _lin([[1.0]], [2.0])
    other.register_load_state_dict_post_hook(lambda m, inc: inc)
    with pytest.raises(AssertionError, match="not expected to return new values"):
        other.load_state_dict(other.state_dict())


def test_unexpected_keys_are_found_per_module():
    net = nn.Sequential(_lin([[1.0]], [2.0]))
    sd = net.state_dict()
    sd["0.foo"] = _t(1.0)
    sd["nope.x"] = _t(1.0)
    sd["top"] = _t(1.0)
    res = net.load_state_dict(sd, strict=False)
    assert sorted(res.unexpected_keys) == ["0.foo", "nope.x", "top"]
    assert res.missing_keys == []


def test_load_state_dict_assign_keeps_requires_grad_and_plain_mappings_load():
    lin = _lin([[1.0, 2.0]], [3.0])
    new_w = _t([[5.0, 6.0]])
    lin.load_state_dict({"weight": new_w, "bias": _t([7.0])}, assign=True)
    assert isinstance(lin.weight, nn.Parameter) and lin.weight.requires_grad
    np.testing.assert_array_equal(lin(_t([[1.0, 1.0]])).detach().numpy(), [[18.0]])
    scalar = nn.Module()
    scalar.s = nn.Parameter(_t(0.0))
    scalar.load_state_dict({"s": _t([4.0])})  # PyTorch 0.3's one-element tensors
    assert scalar.s.item() == 4.0


# ------------------------------------------------------------------ metadata and versions
def test_state_dict_metadata_records_each_module_version():
    net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    sd = net.state_dict()
    assert sd._metadata == OrderedDict([("", {"version": 1}), ("0", {"version": 1}),
                                        ("1", {"version": 2})])
    assert nn.Module._version == 1 and nn.BatchNorm1d._version == 2
    plain = {}
    assert net.state_dict(destination=plain) is plain and not hasattr(plain, "_metadata")


def test_batchnorm_missing_num_batches_tracked_depends_on_the_version():
    src = nn.Sequential(nn.BatchNorm1d(2, dtype=F64))
    with tgrad.no_grad():
        src[0].running_mean.copy_(_t([0.5, -1.5]))
    sd = src.state_dict()
    del sd["0.num_batches_tracked"]
    dst = nn.Sequential(nn.BatchNorm1d(2, dtype=F64))
    dst[0].num_batches_tracked.fill_(5)
    # version 2 metadata: the key is required
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: '
                                           r'"0.num_batches_tracked"'):
        dst.load_state_dict(sd)
    # version 1 metadata, or none: the module keeps its own count (PyTorch's _NormBase)
    sd._metadata["0"] = {"version": 1}
    for legacy in (sd, dict(sd)):
        res = dst.load_state_dict(legacy)
        assert res.missing_keys == [] and res.unexpected_keys == []
        assert dst[0].num_batches_tracked.item() == 5
        np.testing.assert_array_equal(dst[0].running_mean.detach().numpy(), [0.5, -1.5])
    assert "0.num_batches_tracked" not in sd  # the caller's dict is not changed
    fresh = nn.Sequential(nn.BatchNorm1d(2, dtype=F64))
    fresh.load_state_dict(dict(sd))
    assert fresh[0].num_batches_tracked.item() == 0


def test_tgrad_saved_state_dicts_still_load():
    src = nn.Sequential(_lin([[1.0, 2.0]], [3.0]), nn.BatchNorm1d(1, dtype=F64))
    src[1].num_batches_tracked.fill_(4)
    buf = io.BytesIO()
    tgrad.save(src.state_dict(), buf)
    buf.seek(0)
    dst = nn.Sequential(_lin([[0.0, 0.0]], [0.0]), nn.BatchNorm1d(1, dtype=F64))
    res = dst.load_state_dict(tgrad.load(buf))
    assert res.missing_keys == [] and res.unexpected_keys == []
    np.testing.assert_array_equal(dst[0].weight.detach().numpy(), [[1.0, 2.0]])
    assert dst[1].num_batches_tracked.item() == 4


# ------------------------------------------------------------------ global hooks
def test_global_forward_hooks_run_before_the_modules_own():
    log = []
    lin = _lin([[1.0, 2.0]], [0.5])
    net = nn.Sequential(lin)
    lin.register_forward_pre_hook(lambda m, a: log.append("own_pre"))
    lin.register_forward_hook(lambda m, a, o: log.append("own_fwd"))
    h1 = module_mod.register_module_forward_pre_hook(
        lambda m, a: log.append(("gpre", type(m).__name__)))
    h2 = module_mod.register_module_forward_hook(
        lambda m, a, o: log.append(("gfwd", type(m).__name__)))
    try:
        assert module_mod._any_global_hook
        net(_t([[1.0, 1.0]]))
        assert log == [("gpre", "Sequential"), ("gpre", "Linear"), "own_pre",
                       ("gfwd", "Linear"), "own_fwd", ("gfwd", "Sequential")]
    finally:
        h1.remove()
        h2.remove()
    assert not module_mod._any_global_hook
    log.clear()
    net(_t([[1.0, 1.0]]))
    assert log == ["own_pre", "own_fwd"]


def test_global_forward_hooks_modify_input_and_output():
    lin = _lin([[1.0, 2.0]], [0.5])
    with module_mod.register_module_forward_pre_hook(lambda m, a: a[0] * 2), \
            module_mod.register_module_forward_hook(
                lambda m, a, kw, o: o + kw.get("shift", 0.0) if kw else o + 100.0,
                with_kwargs=True):
        y = lin(_t([[1.0, 1.0]]))
    # (2 * [1, 1]) @ [1, 2] + 0.5 = 6.5, then the output hook adds 100 (no kwargs)
    np.testing.assert_array_equal(y.detach().numpy(), [[106.5]])
    assert not module_mod._any_global_hook
    np.testing.assert_array_equal(lin(_t([[1.0, 1.0]])).detach().numpy(), [[3.5]])


def test_global_always_call_hook_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    seen = []
    with module_mod.register_module_forward_hook(lambda m, a, o: seen.append(o),
                                                 always_call=True):
        with pytest.raises(ValueError, match="boom"):
            Boom()(_t([1.0]))
    assert seen == [None]


def test_global_full_backward_hooks():
    class Mul(nn.Module):
        def forward(self, x, y):
            return x * y

    x, y = _t([1.0, 2.0], requires_grad=True), _t([3.0, 4.0], requires_grad=True)
    log = []
    m = Mul()
    m.register_full_backward_hook(lambda mod, gi, go: log.append("own"))

    def ghook(mod, gi, go):
        log.append(("global", [g.tolist() for g in gi], [g.tolist() for g in go]))
        return (gi[0] * 10, gi[1])

    def gpre(mod, go):
        log.append("pre")
        return (go[0] * 2,)

    with module_mod.register_module_full_backward_hook(ghook), \
            module_mod.register_module_full_backward_pre_hook(gpre):
        m(x, y).sum().backward()
    # grad_output [1, 1] doubled by the pre-hook: grad_x = 2 y, grad_y = 2 x; x's scaled by 10
    assert log == ["pre", ("global", [[6.0, 8.0], [2.0, 4.0]], [[2.0, 2.0]]), "own"]
    assert x.grad.tolist() == [60.0, 80.0] and y.grad.tolist() == [2.0, 4.0]
    x.grad = y.grad = None
    log.clear()
    m(x, y).sum().backward()
    assert log == ["own"] and x.grad.tolist() == [3.0, 4.0]


# ------------------------------------------------------------------ nn.Buffer
def test_buffer_assignment_registers_a_buffer():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.kept = nn.Buffer(_t([1.0, 2.0]))
            self.scratch = nn.Buffer(_t([3.0]), persistent=False)

    m = M()
    assert [n for n, _ in m.named_buffers()] == ["kept", "scratch"]
    assert list(m.state_dict()) == ["kept"]
    assert m.kept.tolist() == [1.0, 2.0] and list(m.parameters()) == []
    src = _t([5.0], requires_grad=True)
    b = nn.Buffer(src)
    assert isinstance(b, nn.Buffer) and b.requires_grad and b.persistent and b.is_leaf
    assert not isinstance(_t([1.0]), nn.Buffer)
    with tgrad.no_grad():
        b.fill_(6.0)
    assert src.item() == 6.0  # shares the storage, as data.detach()
    m.to(tgrad.float32)
    assert m.kept.dtype == tgrad.float32
    m.kept = _t([9.0])  # a plain tensor replaces a registered buffer
    assert m.get_buffer("kept").tolist() == [9.0]
    m.other = 1
    with pytest.raises(KeyError, match="attribute 'other' already exists"):
        m.other = nn.Buffer(_t([1.0]))


def test_to_complex_dtype_converts_float_and_complex_tensors_only():
    # PyTorch: Module.to takes floating point or complex dtypes and converts the floating
    # point and complex parameters / buffers (integer ones are kept); it used to refuse
    # complex dtypes
    m = nn.Linear(2, 2, dtype=F64)
    with tgrad.no_grad():
        m.weight.copy_(_t([[1.0, 2.0], [3.0, -4.0]]))
        m.bias.copy_(_t([0.5, -1.0]))
    m.register_buffer("count", tgrad.tensor([1, 2]))
    w = m.weight
    assert m.to(tgrad.complex128) is m and m.weight is w
    assert (m.weight.dtype, m.bias.dtype) == (tgrad.complex128, tgrad.complex128)
    assert m.count.dtype == tgrad.int64
    x = np.array([[1 + 1j, 2 - 3j]])
    want = x @ np.array([[1.0, 2.0], [3.0, -4.0]]).T + np.array([0.5, -1.0])
    got = m(tgrad.tensor(x)).detach().numpy()
    assert got.dtype == np.complex128 and np.allclose(got, want, rtol=1e-15)
    m.to(dtype=tgrad.complex64)  # complex -> complex
    assert m.weight.dtype == tgrad.complex64 and m.count.dtype == tgrad.int64
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes, but "
                                        "got desired dtype=tgrad.int64"):
        m.to(tgrad.int64)


# ------------------------------------------------------------------ Sequential * n
def test_sequential_repetition_shares_the_modules():
    lin = _lin([[2.0]], [1.0])
    relu = nn.ReLU()
    seq = nn.Sequential(lin, relu)
    twice = seq * 2
    assert list(twice._modules) == ["0", "1", "2", "3"]
    assert twice[0] is lin and twice[2] is lin and twice[3] is relu
    assert len(list(twice.parameters())) == 2  # shared, listed once
    # x = 1: relu(2*1 + 1) = 3, then relu(2*3 + 1) = 7
    assert twice(_t([[1.0]])).item() == 7.0
    thrice = 3 * seq
    assert len(thrice) == 6 and thrice[4] is lin
    assert thrice(_t([[1.0]])).item() == 15.0
    same = seq
    seq *= 2
    assert seq is same and len(seq) == 4 and seq[2] is lin
    with pytest.raises(TypeError, match="unsupported operand type"):
        seq * 1.5
    with pytest.raises(ValueError, match="Non-positive multiplication factor 0"):
        seq * 0
    with pytest.raises(ValueError, match="Non-positive multiplication factor -1"):
        seq *= -1


# ------------------------------------------------------------------ register_backward_hook
def test_register_backward_hook_hooks_the_output_node():
    class Mul(nn.Module):
        def forward(self, x, y):
            return x * y

    m = Mul()
    seen = []

    def hook(mod, grad_input, grad_output):
        seen.append((mod, [g.tolist() for g in grad_input], [g.tolist() for g in grad_output]))
        return (grad_input[0] * 3, grad_input[1])

    handle = m.register_backward_hook(hook)
    x, y = _t([1.0, 2.0], requires_grad=True), _t([3.0, 4.0], requires_grad=True)
    m(x, y).sum().backward()
    assert seen == [(m, [[3.0, 4.0], [1.0, 2.0]], [[1.0, 1.0]])]
    assert x.grad.tolist() == [9.0, 12.0] and y.grad.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full"):
        m.register_full_backward_hook(lambda *a: None)
    handle.remove()
    x.grad = None
    m(x, y).sum().backward()
    assert len(seen) == 1 and x.grad.tolist() == [3.0, 4.0]
    full = Mul()
    full.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full"):
        full.register_backward_hook(lambda *a: None)


def test_to_a_tensor_takes_its_dtype_for_float_tensors_only():
    bn = nn.BatchNorm1d(2)
    out = bn.to(tgrad.zeros(1, dtype=F64))
    assert out is bn and bn.weight.dtype == F64 and bn.running_mean.dtype == F64
    assert bn.num_batches_tracked.dtype == tgrad.int64  # integer buffers keep their dtype
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        bn.to(tgrad.zeros(1, dtype=tgrad.int32))


def test_dtype_conversion_converts_grad_in_place():
    lin = _lin([[1.0, 2.0]], [0.5])
    lin.weight.grad = _t([[3.0, 4.0]])
    g = lin.weight.grad
    lin.float()
    assert lin.weight.grad is g and g.dtype == tgrad.float32 and g.tolist() == [[3.0, 4.0]]


def test_share_memory_of_a_lazy_module_raises():
    with pytest.raises(RuntimeError, match="Can't share memory on an uninitialized parameter"):
        nn.LazyLinear(3).share_memory()
    lin = nn.LazyLinear(3)
    lin(tgrad.ones(1, 2))
    assert lin.share_memory() is lin


def test_module_compile_returns_none_and_keeps_forward():
    lin = _lin([[1.0, 2.0]], [0.5])
    assert lin.compile(mode="reduce-overhead") is None
    assert lin(_t([[1.0, 1.0]])).tolist() == [[3.5]]
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        lin.compile(mode="fast")


def test_assignment_and_registration_errors_have_pytorchs_texts():
    lin = nn.Linear(1, 1)
    with pytest.raises(TypeError, match=r"cannot assign 'tgrad\.FloatTensor' as parameter "
                                        r"'weight' \(tgrad\.nn\.Parameter or None expected\)"):
        lin.weight = tgrad.ones(1, 1)
    seq = nn.Sequential(nn.ReLU())
    with pytest.raises(TypeError, match=r"cannot assign 'tgrad\.LongTensor' as child module "
                                        "'0'"):
        setattr(seq, "0", tgrad.ones(1, dtype=tgrad.int64))
    bn = nn.BatchNorm1d(1)
    with pytest.raises(TypeError, match=r"as buffer 'running_mean' \(tgrad\.nn\.Buffer, "
                                        r"tgrad\.Tensor or None expected\)"):
        bn.running_mean = 3
    with pytest.raises(TypeError, match=r"cannot assign 'tgrad\.FloatTensor' object to "
                                        "parameter 'w'"):
        lin.register_parameter("w", tgrad.ones(1))
    with pytest.raises(KeyError, match=r'parameter name can\\\'t contain "\."\'$'):
        lin.register_parameter("a.b", None)
    with pytest.raises(KeyError, match=r'buffer name can\\\'t contain "\."\'$'):
        lin.register_buffer("a.b", None)
    with pytest.raises(KeyError, match='module name can\\\\\'t contain ".", got: a.b'):
        lin.add_module("a.b", None)
    sd = lin.state_dict()
    sd["bias"] = 1.0
    with pytest.raises(RuntimeError, match='While copying the parameter named "bias", expected '
                                           "tgrad.Tensor or Tensor-like object from checkpoint "
                                           "but received <class 'float'>"):
        lin.load_state_dict(sd)


def test_module_dict_update_errors_and_container_dir():
    md = nn.ModuleDict()
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable "
                                        "of key/value pairs, but got int"):
        md.update(3)
    with pytest.raises(TypeError, match="element #0 should be Iterable; isint"):
        md.update([3])
    with pytest.raises(ValueError, match="element #1 has length 1; 2 is required"):
        md.update([("a", nn.ReLU()), ("b",)])
    assert list(md.keys()) == ["a"]  # the entries before the bad one are added (PyTorch)
    for c in (nn.Sequential(nn.ReLU(), nn.Tanh()), nn.ModuleList([nn.ReLU()])):
        d = dir(c)
        assert not any(k.isdigit() for k in d) and "append" in d


def test_private_names_libraries_read():
    # PyTorch's _non_persistent_buffers_set and _get_name() (read by outside libraries and
    # custom reprs; repr starts with _get_name()); a module pickled under the old attribute
    # name still loads
    import pickle

    m = nn.Linear(2, 3)
    m.register_buffer("scratch", tgrad.zeros(1), persistent=False)
    assert m._non_persistent_buffers_set == {"scratch"}
    assert m._get_name() == "Linear" and "scratch" not in m.state_dict()

    class Renamed(nn.Linear):
        def _get_name(self) -> str:
            return "Shown"

    assert repr(Renamed(2, 3)).startswith("Shown(in_features=2")
    state = dict(m.__dict__)
    state["_non_persistent_buffers"] = state.pop("_non_persistent_buffers_set")
    old = nn.Linear.__new__(nn.Linear)
    old.__setstate__(state)
    assert old._non_persistent_buffers_set == {"scratch"} and "scratch" not in old.state_dict()
    again = pickle.loads(pickle.dumps(m))
    assert again._non_persistent_buffers_set == {"scratch"}
    np.testing.assert_array_equal(again.weight.detach().numpy(), m.weight.detach().numpy())

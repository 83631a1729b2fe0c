"""tgrad.utils.benchmark (torch.utils.benchmark): Timer's measurement loops driven by a fake
deterministic clock (exact raw_times / number_per_run, no wall-clock assertions), Measurement's
statistics and repr, Compare's tables, and the default timer's GPU synchronization rule."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest

import tgrad
from tgrad.utils import benchmark
from tgrad.utils.benchmark import Compare, Measurement, TaskSpec, Timer
from tgrad.utils.benchmark.utils import common

A = 2.0 ** -10  # fake seconds per stmt execution (powers of two: every sum is exact)
B = 2.0 ** -20  # fake seconds per clock read


class FakeClock:
    """Advances by A per ``tick()`` (the timed stmt) and by B per read (the timer)."""

    def __init__(self) -> None:
        self.ticks = 0
        self.reads = 0
        self.setups = 0

    def tick(self) -> None:
        self.ticks += 1

    def setup(self) -> None:
        self.setups += 1

    def __call__(self) -> float:
        self.reads += 1
        return self.ticks * A + self.reads * B


def fake_timer(clock: FakeClock, **kw) -> Timer:
    return Timer("tick()", setup="setup()", timer=clock,
                 globals={"tick": clock.tick, "setup": clock.setup}, **kw)


def measurement(raw_times, number_per_run=1, **spec) -> Measurement:
    spec.setdefault("stmt", "f(x)")
    spec.setdefault("setup", "pass")
    return Measurement(number_per_run, list(raw_times), TaskSpec(**spec))


def no_address(text: str) -> str:
    return re.sub(r" at 0x[0-9a-f]+>", " at 0x...>", text)


# ----------------------------------------------------------------------------- Timer
def test_timeit_runs_a_warmup_then_one_block():
    clock = FakeClock()
    m = fake_timer(clock).timeit(100)
    # warm-up: max(100 // 100, 2) = 2 runs; then one timed block of 100
    assert clock.ticks == 102 and clock.setups == 2 and clock.reads == 4
    assert m.number_per_run == 100 and m.raw_times == [100 * A + B]
    assert m.median == m.mean == (100 * A + B) / 100 and m.iqr == 0.0
    assert m.times == [(100 * A + B) / 100]


def test_blocked_autorange_block_size_and_replicates_are_exact():
    clock = FakeClock()
    seen = []
    m = fake_timer(clock).blocked_autorange(callback=lambda n, t: seen.append((n, t)))
    # block size: overhead = median of five timeit(0) = B; number=1 gives B/(A+B) > 1e-4,
    # number=10 gives B/(10A+B) <= 1e-4 with 10A+B >= 0.2/1000, so blocks of 10 stmts
    block = 10 * A + B
    n_blocks = int(np.ceil(0.2 / block))  # replicates until their sum reaches min_run_time
    assert n_blocks == 21
    assert m.number_per_run == 10 and m.raw_times == [block] * n_blocks
    assert seen == [(10, block)] * n_blocks
    assert m.median == block / 10 and m.iqr == 0.0
    assert m.mean == pytest.approx(block / 10, rel=1e-15)  # a float sum of 21 terms
    # setup runs once per timing: 5 overhead probes + 2 block-size probes + the blocks
    assert clock.setups == 5 + 2 + n_blocks
    assert clock.ticks == 1 + 10 + 10 * n_blocks
    assert clock.reads == 2 * clock.setups


def test_blocked_autorange_min_run_time():
    clock = FakeClock()
    m = fake_timer(clock).blocked_autorange(min_run_time=0.05)
    # 0.05/1000 = 5e-5 <= 10A+B too, so blocks of 10; ceil(0.05 / (10A+B)) of them
    assert m.number_per_run == 10 and len(m.raw_times) == 6


def test_a_block_longer_than_min_run_time_stops_the_estimate():
    clock = FakeClock()
    m = fake_timer(clock).blocked_autorange(min_run_time=A / 2)
    assert m.number_per_run == 1 and m.raw_times == [A + B]


def test_adaptive_autorange_stops_when_confident_or_at_max_run_time():
    clock = FakeClock()
    m = fake_timer(clock).adaptive_autorange()  # constant blocks: iqr 0 once 4 are in
    assert m.number_per_run == 10 and m.raw_times == [10 * A + B] * 4
    clock = FakeClock()
    m = fake_timer(clock).adaptive_autorange(threshold=0.0, max_run_time=0.015)
    # iqr/median < 0 never holds: stops once the total passes max_run_time (2 blocks)
    assert m.raw_times == [10 * A + B] * 2


def test_repeat_and_autorange_point_to_blocked_autorange_as_torch():
    t = Timer()
    for f in (t.repeat, t.autorange):
        with pytest.raises(NotImplementedError, match="blocked_autorange"):
            f()


def test_stmt_sees_globals_and_setup_names_and_globals_are_copied():
    out = []
    g = {"out": out, "k": 3}
    t = Timer("out.append(k * y)", setup="y = 2", globals=g,
              timer=FakeClock())
    t.timeit(5)
    assert out == [6] * (2 + 5) and set(g) == {"out", "k"}  # no tgrad / __builtins__ added
    # tgrad is importable by name without passing it, as torch is in torch's Timer
    seen = []
    Timer("seen.append(tgrad.ones(2).sum().item())", globals={"seen": seen},
          timer=FakeClock()).timeit(2)
    assert seen == [2.0] * 4


def test_multiline_snippets_are_dedented_and_stripped():
    t = Timer("""
        a = 1
        b = a + 1
    """, setup="""
        import math
    """, timer=FakeClock())
    assert t.timeit(2).task_spec.stmt == "a = 1\nb = a + 1"
    assert t.timeit(2).task_spec.setup == "import math"


def test_callable_stmt_and_setup():
    clock = FakeClock()
    t = Timer(clock.tick, setup=clock.setup, timer=clock, label="L")
    m = t.timeit(10)
    assert clock.ticks == 12 and clock.setups == 2 and m.raw_times == [10 * A + B]
    assert m.task_spec.stmt == "FakeClock.tick()" and m.title == "L"
    with pytest.raises(ValueError, match="stmt"):
        Timer(3)


def test_language_and_global_setup_checks():
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        Timer("pass", global_setup="#include <x>")
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        Timer("pass", language="cpp")
    with pytest.raises(ValueError, match="Invalid language"):
        Timer("pass", language="rust")
    assert Timer("pass", language=benchmark.Language.PYTHON, timer=FakeClock()).timeit(2)


def test_num_threads_is_set_for_the_duration_and_restored():
    before = tgrad.get_num_threads()
    seen = []
    t = Timer("seen.append(tgrad.get_num_threads())", globals={"seen": seen},
              timer=FakeClock(), num_threads=3)
    m = t.timeit(2)
    assert set(seen) == {3} and tgrad.get_num_threads() == before
    assert m.num_threads == 3 and m.task_spec.num_threads == 3


def test_task_spec_fields_reach_the_measurement():
    t = Timer("f(x)", setup="x = 1\nf = abs", timer=FakeClock(), label="L", sub_label="S",
              description="D", env="E", num_threads=2)
    m = t.timeit(2)
    assert (m.stmt, m.setup, m.label, m.sub_label, m.description, m.env, m.num_threads) == \
        ("f(x)", "x = 1\nf = abs", "L", "S", "D", "E", 2)
    assert m.title == "L: S" and m.task_spec.title == "L: S" and m.metadata is None


# ----------------------------------------------------------------------------- default timer
def test_default_timer_does_not_sync_without_cuda(monkeypatch):
    calls = []
    monkeypatch.setattr(tgrad.cuda, "is_available", lambda: False)
    monkeypatch.setattr(tgrad.cuda, "synchronize", lambda *a: calls.append(a))
    assert isinstance(benchmark.timer(), float)
    Timer("x = 1").timeit(3)
    assert calls == []


@pytest.mark.skipif(tgrad.cuda.is_available(), reason="checks the machine without cuda")
def test_no_cuda_here_means_no_sync():
    assert not tgrad.cuda.is_available()
    assert isinstance(benchmark.timer(), float)  # would raise if it tried to synchronize


def test_default_timer_syncs_a_real_gpu_but_not_the_interpreter(monkeypatch):
    calls = []
    monkeypatch.setattr(tgrad.cuda, "is_available", lambda: True)
    monkeypatch.setattr(tgrad.cuda, "synchronize", lambda *a: calls.append(a))
    monkeypatch.setattr(tgrad.cuda, "is_interpreted", lambda: False)
    benchmark.timer()
    assert calls == [()]
    Timer("x = 1").timeit(3)  # warm-up and timed block: two reads each
    assert len(calls) == 1 + 4
    monkeypatch.setattr(tgrad.cuda, "is_interpreted", lambda: True)
    benchmark.timer()
    assert len(calls) == 5


def test_default_timer_is_timers_default():
    import inspect
    assert inspect.signature(Timer).parameters["timer"].default is benchmark.timer


# ----------------------------------------------------------------------------- Measurement
def test_statistics_match_numpy():
    rng = np.random.default_rng(0)
    raw = (1e-4 + rng.random(37) * 1e-5).tolist()
    m = measurement(raw, number_per_run=7)
    t = np.array(raw) / 7
    assert m.times == pytest.approx(t.tolist(), rel=0, abs=0)
    assert m.median == pytest.approx(np.median(t), rel=1e-15)
    assert m.mean == pytest.approx(np.mean(t), rel=1e-15)
    assert m.iqr == pytest.approx(np.quantile(t, 0.75) - np.quantile(t, 0.25), rel=1e-12)


@pytest.mark.parametrize("value,figures", [(1e-6, 1), (1e-5, 2), (1e-4, 3), (1e-3, 4),
                                           (1.0, 4)])
def test_significant_figures_of_steady_times(value, figures):
    # no spread: the 25 ns floor on the confidence interval decides (capped at 4)
    assert measurement([value] * 8).significant_figures == figures


def test_significant_figures_uses_the_interquartile_points():
    # n=4: points [1.1, 1.2] us; std 0.05 us; CI = 1.645 * 0.05 / sqrt(2) = 58 ns;
    # log10(1.15 us / 58 ns) = 1.3 -> 1
    assert measurement([1.0e-6, 1.1e-6, 1.2e-6, 1.3e-6]).significant_figures == 1
    # 100 points spread 1 ns around 1 ms: CI ~ 25 ns floor -> log10(4e4) -> capped at 4
    m = measurement(1e-3 + np.linspace(0, 1e-9, 100))
    assert m.significant_figures == 4


def test_warnings_and_meets_confidence():
    steady = measurement([1.0, 1.0, 1.0, 1.0])
    assert not steady.has_warnings and steady.meets_confidence(0.1)
    shaky = measurement([1.0, 1.1, 1.2, 1.3, 1.4])  # iqr 0.2 / median 1.2 = 16.7%
    assert shaky.has_warnings and shaky.meets_confidence(0.2)
    assert not shaky.meets_confidence()
    assert "16.7% of the median" in repr(shaky) and "system fluctuation" in repr(shaky)
    wild = measurement([1.0, 2.0, 3.0, 4.0])  # iqr 1.5 / median 2.5 = 60%
    assert "60.0% of the median" in repr(wild)
    assert "significant environmental influence" in repr(wild)


def test_repr_has_torchs_layout():
    m = measurement([1.0e-5, 2.0e-5, 1.5e-5, 1.1e-5, 1.3e-5], 10, label="L", sub_label="s",
                    description="d")
    assert no_address(repr(m)) == (
        "<tgrad.utils.benchmark.utils.common.Measurement object at 0x...>\n"
        "L: s\n"
        "d\n"
        "  Median: 1.30 us\n"
        "  IQR:    0.40 us (1.10 to 1.50)\n"
        "  5 measurements, 10 runs per measurement, 1 thread\n"
        "  WARNING: Interquartile range is 30.8% of the median measurement.\n"
        "           This suggests significant environmental influence.")
    one = measurement([1.0e-5], 10, stmt="x+1", setup="y=2")
    assert no_address(repr(one)) == (
        "<tgrad.utils.benchmark.utils.common.Measurement object at 0x...>\n"
        "x+1\n"
        "setup: y=2\n"
        "  1.00 us\n"
        "  1 measurement, 10 runs , 1 thread")
    two = measurement([1e-5, 1.1e-5], 10, stmt="x+1\ny", setup="y=2\nz=3", description="DD",
                      num_threads=4)
    assert no_address(repr(two)) == (
        "<tgrad.utils.benchmark.utils.common.Measurement object at 0x...>\n"
        "stmt:\n  x+1\n  y\n\nDD\nsetup:\n  y=2\n  z=3\n\n"
        "  Median: 1.05 us\n"
        "  2 measurements, 10 runs per measurement, 4 threads")


def test_units():
    assert [common.select_unit(t)[0] for t in (3e-9, 3e-8, 3e-6, 3e-4, 3e-2, 3.0, 300.0)] == \
        ["ns", "ns", "us", "us", "ms", "s", "s"]
    assert common.select_unit(2e-6) == ("us", 1e-6)
    assert common.unit_to_english("ms") == "millisecond"
    assert common.trim_sigfig(3.14159, 2) == pytest.approx(3.1)
    assert common.trim_sigfig(123.456, 2) == 120.0
    assert common.ordered_unique([3, 1, 3, 2, 1]) == [3, 1, 2]


def test_merge_groups_by_task_spec_and_normalizes_to_one_run():
    a1 = measurement([2.0, 4.0], 2, label="a")
    a2 = measurement([9.0], 3, label="a")
    b = measurement([1.0], 1, label="b")
    a1.metadata = {"x": 1}
    merged = Measurement.merge([a1, b, a2])
    assert [m.label for m in merged] == ["a", "b"]
    assert merged[0].number_per_run == 1 and merged[0].raw_times == [1.0, 2.0, 3.0]
    assert merged[0].metadata is None and merged[1].raw_times == [1.0]


def test_measurement_pickles():
    m = measurement([1.0, 2.0, 3.0, 4.0], 2, label="L")
    m2 = pickle.loads(pickle.dumps(m))
    assert m2 == m and m2.median == m.median and m2.label == "L"


# ----------------------------------------------------------------------------- Compare
def table_measurements() -> list[Measurement]:
    out = []
    for sub, scale in (("float", 1.0), ("int", 2.0)):
        for desc, base in (("n=1", 1.5e-6), ("n=8", 12.25e-6)):
            out.append(measurement([base * scale] * 4, label="add", sub_label=sub,
                                   description=desc))
    return out


def test_compare_table_rows_columns_and_values():
    text = str(Compare(table_measurements()))
    assert text == (
        "[---------- add -----------]\n"
        "             |  n=1  |  n=8 \n"
        "1 threads: -----------------\n"
        "      float  |  1.5  |  12.2\n"
        "      int    |  3.0  |  24.5\n"
        "\n"
        "Times are in microseconds (us).\n")


def test_compare_units_per_table_and_one_table_per_label():
    ms = table_measurements() + [
        measurement([2e-3] * 4, label="mm", sub_label="float", description="n=1"),
        measurement([5e-3] * 4, label="mm", sub_label="float", description="n=2")]
    tables = str(Compare(ms)).split("\n\n[")
    assert len(tables) == 2
    assert "Times are in microseconds (us)." in tables[0]
    assert "Times are in milliseconds (ms)." in tables[1]
    assert " mm " in tables[1] and "2.0  |  5.0" in tables[1]


def test_compare_merges_replicates_and_groups_threads():
    ms = [measurement([1e-6] * 2, label="L", sub_label="r", description="c"),
          measurement([3e-6] * 2, label="L", sub_label="r", description="c"),
          measurement([8e-6] * 2, label="L", sub_label="r", description="c", num_threads=4)]
    text = str(Compare(ms))
    rows = [line for line in text.splitlines() if line.startswith("      r")]
    assert len(rows) == 2 and rows[0].endswith("2.0") and rows[1].endswith("8.0")
    assert text.index("1 threads: ") < text.index("4 threads: ")


def test_compare_empty_cells_env_and_trim():
    ms = [measurement([1.2345e-6] * 4, label="L", sub_label="a", description="x", env="A"),
          measurement([2.5e-6] * 4, label="L", sub_label="b", description="y", env="B")]
    c = Compare(ms)
    # the expected strings are torch.utils.benchmark.Compare's output for the same input
    assert str(c) == ("[--------- L ----------]\n"
                      "          |   x   |   y \n"
                      "1 threads: -------------\n"
                      "  (A)  a  |  1.2  |     \n"
                      "  (B)  b  |       |  2.5\n"
                      "\n"
                      "Times are in microseconds (us).\n")
    c.trim_significant_figures()  # 1 significant figure at the 25 ns resolution
    assert str(c) == ("[-------- L ---------]\n"
                      "          |  x  |   y \n"
                      "1 threads: -----------\n"
                      "  (A)  a  |  1  |     \n"
                      "  (B)  b  |     |  2.5\n"
                      "\n"
                      "Times are in microseconds (us).\n")


def test_compare_colorize_and_highlight_warnings():
    ms = [measurement([1e-6] * 4, label="L", sub_label="fast", description="c"),
          measurement([6e-6] * 4, label="L", sub_label="slow", description="c"),
          measurement([1e-6, 2e-6, 3e-6, 4e-6], label="L", sub_label="noisy", description="c")]
    c = Compare(ms)
    assert "\033[" not in str(c)
    c.colorize()  # best (green), >= 5x (red), >= 2x (dim red)
    assert str(c) == (
        "[------- L -------]\n"
        "             |   c \n"
        "1 threads: --------\n"
        "      fast   |  \x1b[92m\x1b[1m1.0\x1b[0m\x1b[0m\n"
        "      slow   |  \x1b[31m\x1b[1m6.0\x1b[0m\x1b[0m\n"
        "      noisy  |  \x1b[2m\x1b[91m2.5\x1b[0m\x1b[0m\n"
        "\n"
        "Times are in microseconds (us).\n")
    c.colorize(rowwise=True)
    assert str(c).count("\033[92m\033[1m") == 3  # each row's only cell is its row's best
    c2 = Compare(ms)
    c2.highlight_warnings()
    assert str(c2) == (
        "[----------- L -----------]\n"
        "             |       c     \n"
        "1 threads: ----------------\n"
        "      fast   |   1.0       \n"
        "      slow   |   6.0       \n"
        "      noisy  |  2.5 (! 60%)\n"
        "\n"
        "Times are in microseconds (us).\n"
        "(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n")


def test_compare_extend_results_and_print(capsys):
    c = Compare(table_measurements()[:2])
    c.extend_results(table_measurements()[2:])
    with pytest.raises(ValueError, match="Measurement"):
        c.extend_results([1.0])
    c.print()
    assert capsys.readouterr().out == str(Compare(table_measurements())) + "\n"


def test_compare_without_description_or_env():  # torch raises TypeError on these
    ms = [measurement([1e-6] * 4, label="L", sub_label="a"),
          measurement([2e-6] * 4, label="L", sub_label="b", env="E")]
    text = str(Compare(ms))
    assert "(E)" in text and "(Unspecified env)" in text


def test_end_to_end_with_the_default_timer():
    # real clock, structure only (no assertion on speed)
    x = tgrad.ones(4)
    m = Timer("x + x", globals={"x": x}, label="add", description="4").blocked_autorange(
        min_run_time=0.01)
    assert m.number_per_run >= 1 and len(m.raw_times) >= 1
    assert all(t > 0 for t in m.raw_times) and m.median > 0
    assert "add" in str(Compare([m]))


def test_reachable_from_tgrad_utils():
    assert "benchmark" in tgrad.utils.__all__ and tgrad.utils.benchmark is benchmark
    assert benchmark.utils.timer.Timer is Timer and benchmark.utils.compare.Compare is Compare
    with pytest.raises(AttributeError):
        tgrad.utils.no_such_module  # noqa: B018


def test_import_tgrad_does_not_import_benchmark():
    import subprocess
    import sys
    code = ("import sys, tgrad, tgrad.utils; "
            "print('tgrad.utils.benchmark' in sys.modules, "
            "tgrad.utils.benchmark.Timer.__name__, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False Timer False"

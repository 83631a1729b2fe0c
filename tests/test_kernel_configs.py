"""Launch-configuration arithmetic of tgrad/kernels/configs.py (no kernels run)."""

from __future__ import annotations

import pytest

from tgrad.kernels import configs


def _programs(m_programs: int, k: int, kc: int) -> int:
    return m_programs * -(-k // kc)


@pytest.mark.parametrize(("m", "k", "cfg", "want_chunk"), [
    (4096, 8192, configs.RED_COL, 512),        # column sum of 8192 x 4096: 16 chunks
    (8192, 4096, configs.RED_ROW, 4096),       # row sum of 8192 x 4096: enough rows already
    (1, 1 << 20, configs.RED_ROW, 4096),       # a full reduction: 16384 elements a program
    (1, 1000, configs.RED_ROW, 1000),          # too short to be worth a second launch
])
def test_red_split_fills_the_gpu_with_programs_of_at_least_16k_elements(m, k, cfg, want_chunk):
    m_programs = -(-m // cfg.block_m)
    kc = configs.red_split(m_programs, k, cfg.block_m, cfg.block_k, interpreted=False)
    assert kc == want_chunk
    assert kc % cfg.block_k == 0 or kc == k        # whole loop steps per chunk
    if kc < k:
        assert kc * cfg.block_m >= configs.RED_SPLIT_MIN_ELEMENTS
        assert _programs(m_programs, k, kc) <= configs.RED_SPLIT_PROGRAMS


def test_red_split_in_the_interpreter_uses_short_chunks():
    kc = configs.red_split(1, 3000, configs.RED_INTERP.block_m, 1024, interpreted=True)
    assert kc < 3000 and kc % 1024 == 0


def test_row_reductions_of_long_rows_take_the_config_measured_for_their_kind():
    # H200 sweeps (perf/results/h200_20261204_run4): sums of rows >= 2048 one row a
    # program, amax/amin eight rows in 512-wide steps; the rest keep RED_ROW; columns and
    # short rows unchanged
    for kind in ("sum", "mean", "var", "logsumexp"):
        assert configs.red_config(4096, False, False, kind) == configs.RED_ROW_LONG_SUM
        assert configs.red_config(2047, False, False, kind) == configs.RED_ROW
    for kind in ("amax", "amin"):
        assert configs.red_config(1 << 20, False, False, kind) == configs.RED_ROW_LONG_MINMAX
        assert configs.red_config(4096, False, False, kind, rows=8192) == \
            configs.RED_ROW_LONG_MINMAX
        # a full reduction (one row) keeps RED_ROW: 7 of the 8 tile rows would idle
        assert configs.red_config(1 << 20, False, False, kind, rows=1) == configs.RED_ROW
    for kind in ("prod", "argmax", "argmin", "all", "any", ""):
        assert configs.red_config(4096, False, False, kind) == configs.RED_ROW
    assert configs.red_config(4096, True, False, "sum") == configs.RED_COL
    assert configs.red_config(100, False, False, "sum") == configs.RED_ROW_SHORT
    assert configs.red_config(4096, False, True, "sum").block_m == configs.RED_INTERP.block_m


def test_elementwise_16_bit_data_streams_32_bytes_a_thread():
    assert configs.ew_config(True, False, 1 << 24, 2) == configs.EW_CONTIG_16
    assert configs.ew_config(True, False, 1 << 24, 4) == configs.EW_CONTIG
    assert configs.ew_config(True, False, 1 << 24, 8) == configs.EW_CONTIG_8B
    assert configs.ew_config(False, False, 1 << 24, 2) == configs.EW_STRIDED
    c = configs.EW_CONTIG_16
    assert c.block // (c.num_warps * 32) * 2 == 32


def test_row_kernel_configs_measured_on_the_h200():
    rc = configs.row_config
    # layer_norm backward (heavy), unit-stride float32/16-bit rows of 4096: 4 rows, 16 warps
    assert rc(4096, False, False, heavy=True) == configs.RowConfig(True, 4, 4096, 16)
    assert rc(3000, False, False, heavy=True) == configs.RowConfig(True, 4, 4096, 16)
    # strided or float64 rows keep one row in 8 warps (4 rows spill there)
    assert rc(2048, False, False, heavy=True, strided=True) == configs.RowConfig(True, 1, 2048,
                                                                               8)
    assert rc(2048, True, False, heavy=True) == configs.RowConfig(True, 1, 2048, 8)
    # 16-bit forward rows of one tile: half the warps; everything else unchanged
    assert rc(4096, False, False, half_rows=True) == configs.RowConfig(True, 1, 4096, 4)
    assert rc(4096, False, False) == configs.RowConfig(True, 1, 4096, 8)
    assert rc(8192, False, False, half_rows=True) == configs.RowConfig(True, 1, 8192, 16)
    assert rc(1024, False, False, half_rows=True) == rc(1024, False, False)  # 4 rows a tile

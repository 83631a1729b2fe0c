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

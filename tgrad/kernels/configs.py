"""Every kernel launch configuration of tgrad in one place (block sizes, warps)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EwConfig:
    block: int
    num_warps: int


# Elementwise (any arity): contiguous inputs stream 4 KiB..8 KiB per program; strided ones
# spend registers on index maths, so use a smaller block.
EW_CONTIG = EwConfig(block=2048, num_warps=8)
EW_STRIDED = EwConfig(block=1024, num_warps=4)
# Interpreter mode: one program interprets a whole block with NumPy; bigger is faster.
EW_INTERP = EwConfig(block=4096, num_warps=4)


@dataclass(frozen=True)
class RedConfig:
    block_m: int   # output rows per program
    block_k: int   # reduced elements per loop step
    num_warps: int


# Rows contiguous in K (row reductions): few rows per program, long K tiles.
RED_ROW = RedConfig(block_m=4, block_k=512, num_warps=4)
RED_ROW_SHORT = RedConfig(block_m=32, block_k=64, num_warps=4)
# Columns (M contiguous, K strided): wide M tiles so loads coalesce along M.
RED_COL = RedConfig(block_m=256, block_k=16, num_warps=4)
RED_INTERP = RedConfig(block_m=16, block_k=64, num_warps=4)


def ew_config(contiguous: bool, interpreted: bool) -> EwConfig:
    if interpreted:
        return EW_INTERP
    return EW_CONTIG if contiguous else EW_STRIDED


def red_config(k: int, m_contiguous: bool, interpreted: bool) -> RedConfig:
    if interpreted:
        return RED_INTERP
    if m_contiguous:
        return RED_COL
    return RED_ROW if k >= 512 else RED_ROW_SHORT

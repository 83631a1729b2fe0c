"""Every kernel launch configuration of tgrad in one place (block sizes, warps)."""

from __future__ import annotations

import math
from dataclasses import dataclass

# Compiler options of every compiled launch (not the interpreter's). Triton flushes
# subnormals to zero inside libdevice by default (enable_reflect_ftz=True), which made
# ceil/log/rsqrt/erf... of a subnormal differ from NumPy on the first H200 run; tgrad keeps
# IEEE subnormals, as PyTorch's CUDA kernels do.
COMPILE_OPTIONS = {"enable_reflect_ftz": False}


@dataclass(frozen=True)
class EwConfig:
    block: int
    num_warps: int


# Elementwise (any arity): contiguous inputs stream 4 KiB..8 KiB per program; strided ones
# spend registers on index maths, so use a smaller block.
EW_CONTIG = EwConfig(block=2048, num_warps=8)
# float64 (8-byte outputs): the same 16 KiB per program in half the elements, which keeps
# the heaviest float64 formulas (pow's exponent gradient: exp2, two logs) free of spills.
EW_CONTIG_8B = EwConfig(block=1024, num_warps=8)
# 16-bit (and 8-bit) contiguous data: the same 2048 elements in 4 warps, so each thread
# loads 32 bytes of every operand, not 16 (H200, perf/results/h200_20261204_run4/
# sweep_round*: bf16 tanh forward at 16M elements 77% -> 83-84% of copy bandwidth in two
# sweeps, its backward 95% either way)
EW_CONTIG_16 = EwConfig(block=2048, num_warps=4)
EW_STRIDED = EwConfig(block=1024, num_warps=4)
# Interpreter mode: one program interprets a whole block with NumPy; bigger is faster.
EW_INTERP = EwConfig(block=4096, num_warps=4)


@dataclass(frozen=True)
class RedConfig:
    block_m: int   # output rows per program
    block_k: int   # reduced elements per loop step
    num_warps: int
    # software pipelining of the loop over K steps (2, 3: the next steps' loads go to shared
    # memory by cp.async while this one reduces; 1: none). Not measured on a GPU yet, hence
    # 1 everywhere; perf/sweep_gpu.py tries 2 and 3.
    stages: int = 1


# Rows contiguous in K (row reductions): few rows per program, long K tiles. Rows of at
# least RED_LONG_K elements: one row per program in 2048-wide steps for sums (sum, mean,
# var, logsumexp), eight rows in 512-wide steps for amax/amin. H200, 8192 x 4096 float32,
# two sweeps (perf/results/h200_20261204_run4/sweep_round*): sum 67% -> 80% of copy
# bandwidth, logsumexp 69-70% -> 80%, var 67% -> 79%, amax 72-73% -> 75-76%; (1, 4096, 8) read the
# same for sums but amax fell to 65%, and every 16-warp tile was slower.
RED_ROW = RedConfig(block_m=4, block_k=512, num_warps=4)
RED_LONG_K = 2048
RED_ROW_LONG_SUM = RedConfig(block_m=1, block_k=2048, num_warps=4)
RED_ROW_LONG_MINMAX = RedConfig(block_m=8, block_k=512, num_warps=8)
RED_LONG_SUM_KINDS = frozenset(("sum", "mean", "var", "logsumexp"))
RED_LONG_MINMAX_KINDS = frozenset(("amax", "amin"))
RED_MINMAX_MIN_ROWS = 1024
RED_ROW_SHORT = RedConfig(block_m=32, block_k=64, num_warps=4)
# Columns (M contiguous, K strided): wide M tiles so loads coalesce along M.
RED_COL = RedConfig(block_m=64, block_k=32, num_warps=4)
RED_INTERP = RedConfig(block_m=32, block_k=1024, num_warps=4)


def ew_config(contiguous: bool, interpreted: bool, numel: int = 1 << 30,
              itemsize: int = 4) -> EwConfig:
    if interpreted:
        # the interpreter's cost is per op, not per element: one program, just big enough
        return EwConfig(block=min(EW_INTERP.block, max(16, 1 << (numel - 1).bit_length())),
                        num_warps=EW_INTERP.num_warps)
    if contiguous:
        return EW_CONTIG_8B if itemsize >= 8 else EW_CONTIG if itemsize == 4 else EW_CONTIG_16
    return EW_STRIDED


# Strided elementwise launches (2+ collapsed dims): when the innermost extent is a multiple
# of the block (halving the block down to EW_INNER_MIN_BLOCK to find one), every block lies
# inside one run of the innermost dim and the kernel unravels only the block's start
# (INNER), not every element (integer div/mod by runtime sizes: the row-broadcast mul ran
# at 83% of copy bandwidth on the H200). The interpreter keeps bigger blocks (its cost is
# per program).
EW_INNER_MIN_BLOCK = 128
EW_INNER_MIN_BLOCK_INTERP = 256


def ew_inner_block(inner: int, block: int, interpreted: bool) -> int:
    """The block (a power of two <= ``block``) dividing the innermost extent ``inner``, or
    0 when none at least the minimum does."""
    low = EW_INNER_MIN_BLOCK_INTERP if interpreted else EW_INNER_MIN_BLOCK
    while block >= low:
        if inner % block == 0:
            return block
        block //= 2
    return 0


# Two-stage reductions: when the output rows give too few programs to fill the GPU (a full
# reduction has one row), the reduced dim is cut into chunks, one program per (row block,
# chunk), and a second launch reduces the partial results (fixed order: deterministic).
RED_SPLIT_PROGRAMS = 1024  # aim for this many programs (132 SMs x ~8)
RED_SPLIT_MIN_ELEMENTS = 16384  # elements per program at least: fewer is not worth a launch
RED_SPLIT_INTERP_CHUNK = 256  # interpreter: small, so the tests' sizes take both stages


def red_split(m_programs: int, k: int, block_m: int, block_k: int, interpreted: bool) -> int:
    """Chunk length of the reduced dim for the first stage (``k``: no split). A program
    reads block_m rows of a chunk, so wide row blocks (column reductions: 64 rows) split
    into shorter chunks: an 8192 x 4096 column sum had 64 programs unsplit (13% of copy
    bandwidth on the H200), and gets 16 chunks of 512."""
    if interpreted:
        min_chunk = RED_SPLIT_INTERP_CHUNK
    else:
        min_chunk = max(block_k, -(-RED_SPLIT_MIN_ELEMENTS // block_m))
    chunks = min(k // min_chunk, max(1, RED_SPLIT_PROGRAMS // max(m_programs, 1)))
    if chunks < 2:
        return k
    chunk = -(-k // chunks)
    return -(-chunk // block_k) * block_k  # whole loop steps per chunk


def red_config(k: int, m_contiguous: bool, interpreted: bool, kind: str = "",
               rows: int = 1 << 30) -> RedConfig:
    """``kind``: the reduction (reduction.OPS); rows of at least RED_LONG_K elements get a
    config per kind where one was measured better (prod, all, any and the arg-reductions
    keep RED_ROW: not measured). ``rows``: how many output rows; amax/amin take their
    8-row tile only with at least RED_MINMAX_MIN_ROWS of them (a full reduction's one row
    would leave 7 of 8 tile rows idle)."""
    if interpreted:
        bk = min(RED_INTERP.block_k, max(16, 1 << (k - 1).bit_length()))
        return RedConfig(RED_INTERP.block_m, bk, RED_INTERP.num_warps)
    if m_contiguous:
        return RED_COL
    if k >= RED_LONG_K:
        if kind in RED_LONG_SUM_KINDS:
            return RED_ROW_LONG_SUM
        if kind in RED_LONG_MINMAX_KINDS and rows >= RED_MINMAX_MIN_ROWS:
            return RED_ROW_LONG_MINMAX
    return RED_ROW if k >= 512 else RED_ROW_SHORT


# Scans (cumsum) over lines of K elements: lines along the contiguous last dim get long K
# tiles; lines that are contiguous among themselves (a scan over an outer dim) get wide
# line tiles, so loads coalesce either way. Each program carries its lines' running sums.
SCAN_ROW = RedConfig(block_m=4, block_k=256, num_warps=4)
SCAN_COL = RedConfig(block_m=64, block_k=16, num_warps=4)
SCAN_INTERP = RedConfig(block_m=32, block_k=256, num_warps=4)


def scan_config(k: int, lines_contiguous: bool, interpreted: bool) -> RedConfig:
    """block_m: lines per program; block_k: elements per step along the scanned dim."""
    if interpreted:
        return RedConfig(SCAN_INTERP.block_m, min(SCAN_INTERP.block_k,
                                                  max(16, 1 << (k - 1).bit_length())),
                         SCAN_INTERP.num_warps)
    return SCAN_COL if lines_contiguous else SCAN_ROW


# Sorts (argsort, tgrad/kernels/sort.py): stage 1 sorts tiles of SORT_TILE elements in
# registers (bitonic over (key, position) pairs: 8 bytes each for 32-bit keys, 12 for 64-bit
# ones), as SORT_TILE / block segments of the first block of SORT_BLOCKS that holds a line
# (whole short lines) or of SORT_TILE (tiles of long ones). Longer lines then merge runs
# pairwise, SORT_MERGE_BLOCK elements per program, log2(K / SORT_TILE) launches. Every
# block is a kernel of its own, and bitonic networks are slow to compile (Triton 3.9:
# about 10 s at 1024 elements, twice that at 2048, as for tl.sort; 1-5 s for the short
# blocks), hence one tile size and four blocks (at most 4x padding for short lines).
@dataclass(frozen=True)
class SortConfig:
    block: int         # elements of a line per tile segment (a power of two >= 2)
    rows: int          # segments per program (rows * block: a power of two)
    num_warps: int
    merge_block: int   # elements per merge program
    merge_warps: int


SORT_TILE = 1024
SORT_BLOCKS = (16, 64, 256, SORT_TILE)
SORT_WARPS = 8
SORT_MERGE_BLOCK = 1024
SORT_MERGE_WARPS = 8   # 58-92 registers; 4 warps (8 positions a thread): 104-180
# Interpreter: one configuration (one compiled variant per dtype for the AOT checks) with
# small segments, so the tests' sizes (1023, 1025) take the merge passes, and long merge
# blocks (its cost is per op, not per element).
SORT_INTERP = SortConfig(block=64, rows=16, num_warps=4, merge_block=2048, merge_warps=4)


def sort_config(k: int, interpreted: bool) -> SortConfig:
    """``k``: the length of the lines to sort."""
    if interpreted:
        return SORT_INTERP
    block = next((b for b in SORT_BLOCKS if b >= k), SORT_TILE)
    return SortConfig(block, SORT_TILE // block, SORT_WARPS, SORT_MERGE_BLOCK,
                      SORT_MERGE_WARPS)


# ------------------------------------------------------------------ nn kernels (issue 5)
@dataclass(frozen=True)
class RowConfig:
    """Row kernels (softmax family, cross_entropy, layer_norm): BLOCK_M rows per program,
    BLOCK_N columns per tile; ``one_pass`` when a whole row fits in one tile (registers),
    else the kernel loops over column tiles (online max/sum, or two passes). ``stages``:
    software-pipelining depth of a loop over row blocks (layer_norm backward's one-pass
    loop, and cross_entropy's forward, which then runs persistent programs; 1: none, 2:
    the next block's loads go to shared memory by cp.async while this one computes). Not
    measured on a GPU yet, hence 1 (perf/sweep_gpu.py tries 2 and 3)."""
    one_pass: bool
    block_m: int
    block_n: int
    num_warps: int
    stages: int = 1


# Compiled: a row of up to 32 KiB (8192 fp32, 4096 fp64) stays in registers at 16 warps
# (16 values per thread per live tile); float64 rows (2 registers a value) and kernels
# that keep more tiles live (layer_norm backward: g, x, xhat, w and the dw/db partial sums)
# stop at half that. Longer rows stream
# 4 KiB column tiles. Short rows pack BLOCK_M rows into a tile of at most ROW_TILE_BYTES.
ROW_ONE_PASS_BYTES = 32768
ROW_TILE_BYTES = 16384
ROW_ONLINE_TILE_BYTES = 4096
# Interpreter: small limits so tests at small sizes take both paths.
ROW_INTERP_ONE_PASS_MAX = 64
ROW_INTERP_TILE = 512
ROW_INTERP_ONLINE_BLOCK_N = 32
# Measured on the H200 at 8192 x 4096 (perf/results/h200_20261204_run4/sweep_round*):
# - heavy kernels whose tile is one row of ROW_TILE_BYTES (layer_norm backward on float32
#   or 16-bit unit-stride rows of 2049..4096; not float64 or strided rows, whose 64-bit
#   values or addresses spill then): 4 rows in 16 warps (32 values a thread per tile, 128
#   registers, no spill under Triton 3.6) instead of 1 row in 8. Round 1: float32 67% ->
#   71% of copy bandwidth, bfloat16 46% -> 46%; round 2 had 4 rows in 8 warps at 71% and
#   2 rows in 4 warps at 71% (the latter spills 288 bytes).
# - 16-bit forward rows of one ROW_TILE_BYTES tile (half_rows; rows of 2049..4096): 4
#   warps instead of 8. bfloat16 cross_entropy forward 42-43% -> 49-50%, log_softmax
#   forward 76-77% -> 82-83%, layer_norm forward 81-82% -> 82-84% (both rounds). Backward
#   kernels were not measured so and keep theirs.
ROW_HEAVY_ONE_ROW = (4, 16)   # (block_m, num_warps)
ROW_HALF_WARPS_DIV = 2
# Row kernels run as persistent programs (cross_entropy's forward with stages > 1): this many
# programs at most (8 per SM of an H200); the interpreter: few, so a test walks several
# row blocks per program.
ROW_PERSISTENT_PROGRAMS = 1056
ROW_PERSISTENT_PROGRAMS_INTERP = 3


def row_persistent_programs(interpreted: bool) -> int:
    return ROW_PERSISTENT_PROGRAMS_INTERP if interpreted else ROW_PERSISTENT_PROGRAMS


# layer_norm backward: dw/db partial sums, at most this many partial rows (stage 1 programs)
LN_MAX_PARTIALS = 528     # 4 x 132 SMs
LN_INTERP_MAX_PARTIALS = 4
# ... and its stage 2 (ln_dwdb_kernel): BLOCK_P partial rows x BLOCK_N columns a step, one
# program per BLOCK_N columns (128-byte float32 row pieces; 128 programs at N = 4096). Not
# measured on a GPU yet: it replaced two column sums and two casts (4-6 launches).
LN_DWDB = (64, 32)
LN_DWDB_INTERP = (2, 64)  # several steps over the 4 interpreter partials
LN_DWDB_WARPS = 4


def ln_dwdb_config(interpreted: bool) -> tuple[int, int]:
    """(BLOCK_P, BLOCK_N) of layer_norm backward's stage 2."""
    return LN_DWDB_INTERP if interpreted else LN_DWDB


def _pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def row_config(n: int, f64: bool, interpreted: bool, heavy: bool = False,
               strided: bool = False, half_rows: bool = False) -> RowConfig:
    """``heavy``: the kernel keeps about twice as many row tiles live (layer_norm bwd).
    ``strided``: some operand's rows are not unit-stride, so every element carries its own
    64-bit address; a heavy kernel on such rows is budgeted like float64 (at most 8 values a
    thread: 16 spilled under Triton 3.6, while unit-stride rows, which Triton specializes,
    do not spill at 16). ``half_rows``: a forward kernel streaming 16-bit rows (log_softmax,
    cross_entropy and layer_norm forward: those measured); a one-row tile then runs in half
    the warps, so each thread loads 32 bytes, not 16 (ROW_HALF_WARPS_DIV)."""
    bn = _pow2(max(n, 1))
    if interpreted:
        if bn <= ROW_INTERP_ONE_PASS_MAX:
            return RowConfig(True, max(1, min(64, ROW_INTERP_TILE // bn)), bn, 4)
        return RowConfig(False, 4, ROW_INTERP_ONLINE_BLOCK_N, 4)
    item = 8 if f64 or (heavy and strided) else 4
    if bn * item <= ROW_ONE_PASS_BYTES // (2 if heavy or f64 else 1):
        bm = max(1, min(16, ROW_TILE_BYTES // (bn * item)))
        tile_bytes = bm * bn * item
        warps = 4 if tile_bytes <= 8192 else (8 if tile_bytes <= 16384 else 16)
        if f64 and bm > 1 and tile_bytes > 8192:
            # float64: half the rows at the same warps (4 values a thread, not 8). At 8
            # rows of 256, Triton 3.6 spilled 4 bytes in cross_entropy's forward once
            # libdevice kept subnormals (48 registers: not register pressure)
            bm //= 2
        elif heavy and item == 4 and bm == 1 and tile_bytes == ROW_TILE_BYTES:
            bm, warps = ROW_HEAVY_ONE_ROW
        elif half_rows and item == 4 and bm == 1 and tile_bytes == ROW_TILE_BYTES:
            warps = max(4, warps // ROW_HALF_WARPS_DIV)
        return RowConfig(True, bm, bn, warps)
    return RowConfig(False, 1, ROW_ONLINE_TILE_BYTES // item, 8)


@dataclass(frozen=True)
class MatmulConfig:
    block_m: int
    block_n: int
    block_k: int
    group_m: int
    num_warps: int
    num_stages: int


# Autotune candidates for tl.dot matmuls (16-bit inputs, tensor cores on sm_90); fp32/fp64
# use smaller K tiles (twice the bytes per element).
MATMUL_CONFIGS_16 = [
    MatmulConfig(128, 256, 64, 8, 8, 3),
    # two more large tiles (the H200 measured bf16 4096^3 at 66% of torch.matmul with the
    # four below to choose from; unmeasured yet): 4 stages (196 KiB of shared memory of 227)
    # and the transposed tile
    MatmulConfig(128, 256, 64, 8, 8, 4),
    MatmulConfig(256, 128, 64, 8, 8, 3),
    MatmulConfig(128, 128, 64, 8, 4, 4),
    MatmulConfig(64, 128, 64, 8, 4, 4),
    MatmulConfig(128, 64, 32, 8, 4, 4),
]
MATMUL_CONFIGS_32 = [
    MatmulConfig(128, 128, 32, 8, 8, 3),
    MatmulConfig(64, 128, 32, 8, 4, 4),
    MatmulConfig(64, 64, 32, 8, 4, 3),
]
MATMUL_CONFIGS_64 = [MatmulConfig(64, 64, 16, 8, 4, 2), MatmulConfig(32, 32, 16, 8, 4, 2)]
MATMUL_INTERP = MatmulConfig(32, 32, 16, 4, 4, 1)
# Integer matmuls (int_matmul_kernel: exact int64 products summed without tl.dot, a
# (BLOCK_M, BLOCK_K, BLOCK_N) product per step; not a speed path: PyTorch's CUDA has none)
MATMUL_INT = MatmulConfig(16, 16, 16, 1, 4, 1)
# Compiled launches autotune over the list above; if autotuning itself fails (e.g. a Triton
# without a working benchmarker), the first config of the list is used.
MATMUL_AUTOTUNE = True

# Flat 1-D kernels (activations, dropout, random, optimizer, gather/scatter).
FLAT_BLOCK = 1024
FLAT_WARPS = 4
FLAT_INTERP_BLOCK = 4096
OPTIM_BLOCK = 2048         # elements per program of a fused optimizer launch
OPTIM_INTERP_BLOCK = 256
GATHER_ND_BLOCK = 512      # gather_nd: int64 offset maths of 8 dims + 4 index arrays
                           # spills at 1024 elements per 4 warps, not at 512 (ptxas -v)


# The writers' folds (tgrad/kernels/indexing.py scatter_sorted): a lane folds a run of
# repeated indices one value at a time up to a chunk boundary past L positions, then the
# chunk partials of a longer run; L, a power of two near sqrt(NB / 2) and at least
# SCATTER_MIN_CHUNK, bounds a lane's steps by 2 L + NB / L (about 3 sqrt(NB)) whatever the
# repeats. Runs of at most L indices keep NumPy's add.at order exactly.
SCATTER_MIN_CHUNK = 64


def scatter_chunk(nb: int) -> int:
    return max(SCATTER_MIN_CHUNK, 1 << round(math.log2(max(nb / 2, 1)) / 2))


def flat_block(interpreted: bool) -> int:
    return FLAT_INTERP_BLOCK if interpreted else FLAT_BLOCK


def gather_nd_block(interpreted: bool) -> int:
    return FLAT_INTERP_BLOCK if interpreted else GATHER_ND_BLOCK


def optim_block(interpreted: bool) -> int:
    return OPTIM_INTERP_BLOCK if interpreted else OPTIM_BLOCK


# grid_sample (tgrad/kernels/grid_sample.py): BLOCK_P points x BLOCK_C channels per tile in
# num_warps, the taps unrolled; not measured on a GPU yet. The tile is picked by Triton
# version, as the one that spills no register in either kernel for any mode / padding /
# align / dtype when compiled for sm_90 (tests/test_triton_nn_aot.py):
# - Triton 3.6 (the GPU machine's): 128 x 4 in 4 warps. Tiles of 8, 2 or 1 channels made
#   ptxas spill 4-36 bytes in some backward variants, 256 x 4 in float64 bicubic, 64 x 4 16
#   bytes in float64 bicubic (zeros padding, align_corners).
# - Triton 3.9 (and versions not tried): 64 x 4 in 4 warps. 128 x 4 spills there (bicubic:
#   12-20 bytes in float32, 416-824 in float64; 3-D bilinear float64: 152-248), as do 64 x 4
#   in 2 or 8 warps; 32 x 4 in 2 or 4 warps does not spill under 3.9 but does under 3.6.
# Interpreter: one fixed tile (the tests' 4..68 points x 1..3 channels in one or two
# programs; one block shape, so the recorded AOT specializations do not multiply by the
# tests' sizes).
GRID_SAMPLE_TILES = {"3.6": (128, 4, 4)}  # Triton "major.minor" -> (BLOCK_P, BLOCK_C, warps)
GRID_SAMPLE_TILE_DEFAULT = (64, 4, 4)
GRID_SAMPLE_WARPS = 4
GRID_SAMPLE_INTERP = (64, 4)


def grid_sample_tile(triton_version: str) -> tuple[int, int, int]:
    """(BLOCK_P, BLOCK_C, num_warps) of the compiled grid_sample kernels under that Triton."""
    return GRID_SAMPLE_TILES.get(".".join(triton_version.split(".")[:2]),
                                 GRID_SAMPLE_TILE_DEFAULT)


def grid_sample_config(points: int, c: int, interpreted: bool) -> tuple[int, int, int]:
    """(BLOCK_P, BLOCK_C, num_warps) for ``points`` output points of ``c`` channels (the
    tile does not depend on them today; it depends on the installed Triton)."""
    if interpreted:
        return (*GRID_SAMPLE_INTERP, GRID_SAMPLE_WARPS)
    import triton
    return grid_sample_tile(triton.__version__)

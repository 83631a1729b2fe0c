"""Ahead-of-time compilation of the nn kernels (tgrad/kernels/{softmax,cross_entropy,
layer_norm,activations,dropout,matmul,indexing,optim,grid_sample}.py) for the H200 (sm_90),
no GPU needed: every family compiles with the configs the wrappers pick
(tgrad/kernels/configs.py), and ``ptxas -v`` reports no register spills for softmax /
log_softmax / cross_entropy / layer_norm at the row sizes of the interpreter tests and the
GPU benchmark sizes, nor for grid_sample's kernels in every mode, padding and dtype."""

from __future__ import annotations

import os
import sys

import pytest

triton = pytest.importorskip("triton")
if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
    pytest.skip("AOT compilation needs the compiler, not the interpreter",
                allow_module_level=True)

sys.path.insert(0, os.path.dirname(__file__))
from test_triton_aot import TARGET, _compile, _ew_sig, _spills  # noqa: E402

from tgrad.kernels import activations as ka  # noqa: E402
from tgrad.kernels import configs  # noqa: E402
from tgrad.kernels import cross_entropy as kce  # noqa: E402
from tgrad.kernels import dropout as kd  # noqa: E402
from tgrad.kernels import elementwise as ew  # noqa: E402
from tgrad.kernels import grid_sample as kgs  # noqa: E402
from tgrad.kernels import indexing as kix  # noqa: E402
from tgrad.kernels import layer_norm as kln  # noqa: E402
from tgrad.kernels import matmul as kmm  # noqa: E402
from tgrad.kernels import optim as kopt  # noqa: E402
from tgrad.kernels import softmax as ksm  # noqa: E402

DT = {"float32": "fp32", "float64": "fp64", "float16": "fp16", "bfloat16": "bf16"}
# Row lengths: the interpreter tests' (37, 150 -> online there) and the benchmark's.
ROW_NS = [37, 150, 1000, 2048, 4096, 8192, 50000]


def _ints(*names):
    return {n: "i32" for n in names}


def _row_cases():
    for n in ROW_NS:
        for dt in ("float32", "float64", "bfloat16"):
            if dt == "float64" and n in (1000, 8192):
                continue
            if dt == "bfloat16" and n not in (2048, 50000):
                continue
            yield n, dt


ROW_CASES = list(_row_cases())
_ID = [f"{n}-{d}" for n, d in ROW_CASES]


def _cfg(n, dt, heavy=False, strided=False, forward=False):
    # forward: a forward kernel, whose 16-bit rows get row_config's half_rows (as the
    # wrappers in tgrad/backends/_triton_nn.py ask for them)
    return configs.row_config(n, dt == "float64", False, heavy, strided,
                              half_rows=forward and dt == "bfloat16")


def _row_cx(cfg, dt, **kw):
    return dict(kw, ACC64=dt == "float64", ONE_PASS=cfg.one_pass, BLOCK_M=cfg.block_m,
                BLOCK_N=cfg.block_n)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("n,dt", ROW_CASES, ids=_ID)
def test_softmax_no_spills(n, dt, log):
    cfg, t = _cfg(n, dt, forward=log), DT[dt]
    fw = dict(X=f"*{t}", Y=f"*{t}", **_ints("M", "N", "M0", "SX1", "SX0", "SXN", "SY1",
                                             "SY0", "SYN"))
    k = _compile(ksm.softmax_fwd_kernel, fw, _row_cx(cfg, dt, LOG=log), cfg.num_warps)
    assert _spills(k.asm["ptx"]) == (0, 0)
    cfg = _cfg(n, dt)
    bw = dict(G=f"*{t}", Y=f"*{t}", DX=f"*{t}",
              **_ints("M", "N", "M0", "SG1", "SG0", "SGN", "SY1", "SY0", "SYN", "SD1", "SD0",
                      "SDN"))
    k = _compile(ksm.softmax_bwd_kernel, bw, _row_cx(cfg, dt, LOG=log), cfg.num_warps)
    assert _spills(k.asm["ptx"]) == (0, 0)


@pytest.mark.parametrize("n,dt", ROW_CASES, ids=_ID)
def test_cross_entropy_no_spills(n, dt):
    cfg, t = _cfg(n, dt, forward=True), DT[dt]
    acc = "fp64" if dt == "float64" else "fp32"
    # LOSS in x's dtype: reduction "none" (the benchmark's); the others store float32
    fw = dict(X=f"*{t}", T="*i64", RW=f"*{acc}", LOSS=f"*{t}", LSE=f"*{acc}",
              WOUT=f"*{acc}", **_ints("M", "N", "M0", "SX1", "SX0", "SXN", "ignore_index"))
    k = _compile(kce.ce_fwd_kernel, fw, _row_cx(cfg, dt, HAS_W=True), cfg.num_warps)
    assert _spills(k.asm["ptx"]) == (0, 0)
    cfg = _cfg(n, dt)
    bw = dict(G=f"*{acc}", X=f"*{t}", T="*i64", RW=f"*{acc}", LSE=f"*{acc}", TOTAL=f"*{acc}",
              DX=f"*{t}", **_ints("M", "N", "M0", "SX1", "SX0", "SXN", "SD1", "SD0", "SDN",
                                  "ignore_index"))
    cx = dict(G_PER_ROW=False, MEAN=True, HAS_W=False, ACC64=dt == "float64",
              BLOCK_M=cfg.block_m, BLOCK_N=min(cfg.block_n, 4096))
    k = _compile(kce.ce_bwd_kernel, bw, cx, cfg.num_warps)
    assert _spills(k.asm["ptx"]) == (0, 0)


@pytest.mark.parametrize("n,dt", ROW_CASES, ids=_ID)
def test_layer_norm_no_spills(n, dt):
    cfg, t = _cfg(n, dt, forward=True), DT[dt]
    acc = "fp64" if dt == "float64" else "fp32"
    fw = dict(X=f"*{t}", W=f"*{t}", B=f"*{t}", Y=f"*{t}", MEAN=f"*{acc}", RSTD=f"*{acc}",
              **_ints("M", "N", "M0", "SX1", "SX0", "SXN", "SY1", "SY0", "SYN"), eps="fp64")
    k = _compile(kln.ln_fwd_kernel, fw, _row_cx(cfg, dt, HAS_W=True, HAS_B=True),
                 cfg.num_warps)
    assert _spills(k.asm["ptx"]) == (0, 0)
    # Backward on unit-stride rows (Triton specializes the stride-1 arguments into
    # constants, as it does on the GPU) and on strided rows (the wrapper then budgets
    # registers like float64).
    for strided in (False, True):
        cfg = _cfg(n, dt, heavy=True, strided=strided)
        row_strides = ("SGN", "SXN", "SDN")
        bw = dict(G=f"*{t}", X=f"*{t}", W=f"*{t}", MEAN=f"*{acc}", RSTD=f"*{acc}",
                  DX=f"*{t}", DWP=f"*{acc}", DBP=f"*{acc}",
                  **_ints("M", "N", "M0", "SG1", "SG0", "SX1", "SX0", "SD1", "SD0",
                          "n_blocks", "n_progs", *(row_strides if strided else ())))
        cx = _row_cx(cfg, dt, HAS_W=True, NEED_W=True, NEED_B=True,
                     **({} if strided else dict.fromkeys(row_strides, 1)))
        k = _compile(kln.ln_bwd_kernel, bw, cx, cfg.num_warps)
        assert _spills(k.asm["ptx"]) == (0, 0), f"strided={strided}: {cfg}"
    # stage 2: both partial sums, stored in the parameters' dtype
    bp, bn = configs.ln_dwdb_config(False)
    sig = dict(DWP=f"*{acc}", DBP=f"*{acc}", DW=f"*{t}", DB=f"*{t}", **_ints("P", "N"))
    k = _compile(kln.ln_dwdb_kernel, sig, dict(NEED_W=True, NEED_B=True,
                 ACC64=dt == "float64", BLOCK_P=bp, BLOCK_N=bn), configs.LN_DWDB_WARPS)
    assert _spills(k.asm["ptx"]) == (0, 0)


# grid_sample's tile depends on the Triton version (configs.grid_sample_tile): the one
# that spills nowhere under it. Under the GPU machine's Triton 3.6
# (test_spill_checks_pass_with_triton36 reruns this file with it) every mode x padding x
# dtype, with both align_corners, is compiled; under other versions each mode's heaviest
# variants (float64, reflection padding, align_corners=False: compiling all 120 kernels
# takes about 200 s of CI's 2 cores), or all of them with TGRAD_ALL_GRID_SAMPLE_SPILLS=1
# (how 3.9's tile was checked). All are asserted spill-free.
GRID_SAMPLE_ALL = triton.__version__.startswith("3.6.") or \
    os.environ.get("TGRAD_ALL_GRID_SAMPLE_SPILLS", "0") not in ("", "0")
GRID_SAMPLE_CASES = [(k, m, p, dt) for k in (2, 3) for m in range(3) for p in range(3)
                     for dt in ("float32", "float64") if not (k == 3 and m == 2)
                     if GRID_SAMPLE_ALL or (p == 2 and dt == "float64")]


@pytest.mark.parametrize("k,mode,pad,dt", GRID_SAMPLE_CASES,
                         ids=[f"{k}d-m{m}-p{p}-{d}" for k, m, p, d in GRID_SAMPLE_CASES])
def test_grid_sample_no_spills(k, mode, pad, dt):
    """Both kernels at the compiled config (both align_corners where all are compiled)."""
    for align in (False, True) if GRID_SAMPLE_ALL else (False,):
        _grid_sample_no_spills(k, mode, pad, dt, align)


def _grid_sample_no_spills(k, mode, pad, dt, align):
    t = DT[dt]
    bp, bc, warps = configs.grid_sample_config(1 << 20, 16, False)
    nt, ntz = kgs._taps(mode, k)
    sizes = _ints("NP", "P", "C", "D", "H", "W", "SXN", "SXC", "SXD", "SXH", "SXW")
    cx = dict(K=k, MODE=mode, PAD=pad, ALIGN=align, ACC64=dt == "float64", NT=nt,
              NTZ=ntz, BLOCK_P=bp, BLOCK_C=bc)
    kf = _compile(kgs.grid_sample_fwd_kernel, dict(X=f"*{t}", GRID=f"*{t}", O=f"*{t}",
                                                   **sizes), cx, warps)
    sig = dict(GO=f"*{t}", X=f"*{t}", GRID=f"*{t}", DGRID=f"*{t}", TGT="*i64", VAL=f"*{t}",
               **sizes)
    kb = _compile(kgs.grid_sample_bwd_kernel, sig, dict(cx, T=ntz * nt * nt), warps)
    spills = (_spills(kf.asm["ptx"]), _spills(kb.asm["ptx"]))
    assert spills == ((0, 0), (0, 0)), f"(fwd, bwd) {spills}, tile {(bp, bc, warps)}, " \
        f"Triton {triton.__version__}"


@pytest.mark.parametrize("cfg", configs.MATMUL_CONFIGS_16, ids=str)
def test_bf16_matmul_configs_pipeline_on_tensor_cores(cfg):
    """Every 16-bit autotune candidate, specialized as a 4096^3 launch is (16-aligned
    pointers, sizes and strides; unit inner strides), fits the H200's 227 KiB of shared
    memory with its stages and compiles to wgmma fed by cp.async (software pipelined)."""
    from triton.compiler import ASTSource
    names = kmm.matmul_kernel.arg_names
    sig = {n: "i32" for n in names}
    sig.update(A="*bf16", B="*bf16", C="*bf16")
    cx = dict(PRECISION="tf32", ACC64=False, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n,
              BLOCK_K=cfg.block_k, GROUP_M=cfg.group_m, SAK=1, SBN=1, SCN=1)
    sig.update({k: "constexpr" for k in cx})
    aligned = [n for n in names if sig[n] != "constexpr" and n != "NB0"]
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in aligned}
    k = triton.compile(ASTSource(fn=kmm.matmul_kernel, signature=sig, constexprs=cx,
                                 attrs=attrs), target=TARGET,
                       options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages,
                                **configs.COMPILE_OPTIONS})
    ptx = k.asm["ptx"]
    assert k.metadata.shared <= 227 * 1024, k.metadata.shared
    assert "wgmma.mma_async" in ptx and "cp.async" in ptx


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
@pytest.mark.parametrize("bm,warps", [(1, 8), (4, 16)])
def test_layer_norm_backward_pipelines_its_row_loop(dt, bm, warps):
    """STAGES=2 (perf/sweep_gpu.py's candidates; configs keep 1 until measured): specialized
    as a launch on 16-aligned rows of 4096 is, the loop over row blocks fetches the next
    block by cp.async into shared memory, within the H200's 227 KiB, and nothing spills."""
    t, acc = DT[dt], "fp32"
    sig = dict(G=f"*{t}", X=f"*{t}", W=f"*{t}", MEAN=f"*{acc}", RSTD=f"*{acc}", DX=f"*{t}",
               DWP=f"*{acc}", DBP=f"*{acc}", **_ints("M", "N", "M0", "SG1", "SG0", "SX1", "SX0",
                                                      "SD1", "SD0", "n_blocks", "n_progs"))
    cfg = configs.RowConfig(True, bm, 4096, warps, 2)
    cx = _row_cx(cfg, dt, HAS_W=True, NEED_W=True, NEED_B=True, SGN=1, SXN=1, SDN=1,
                 STAGES=cfg.stages)
    k = _compile(kln.ln_bwd_kernel, sig, cx, warps,
                 aligned=[n for n in sig if n not in ("n_blocks", "n_progs")])
    assert k.metadata.shared <= 227 * 1024, k.metadata.shared
    assert "cp.async" in k.asm["ptx"]
    assert _spills(k.asm["ptx"]) == (0, 0)


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
@pytest.mark.parametrize("bm,warps", [(1, 4), (2, 8)])
def test_cross_entropy_forward_persistent_pipelines(dt, bm, warps):
    """STAGES=2 (sweep candidates; configs keep 1): the persistent programs' loop over row
    blocks fetches ahead by cp.async, without spills."""
    t, acc = DT[dt], "fp32"
    sig = dict(X=f"*{t}", T="*i64", RW=f"*{acc}", LOSS=f"*{acc}", LSE=f"*{acc}",
               WOUT=f"*{acc}", **_ints("M", "N", "M0", "SX1", "SX0", "ignore_index"))
    cfg = configs.RowConfig(True, bm, 4096, warps, 2)
    cx = _row_cx(cfg, dt, HAS_W=False, SXN=1, STAGES=cfg.stages)
    k = _compile(kce.ce_fwd_kernel, sig, cx, warps,
                 aligned=[n for n in sig if n != "ignore_index"])
    assert "cp.async" in k.asm["ptx"]
    assert _spills(k.asm["ptx"]) == (0, 0)


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64"])
def test_matmul_compiles(dt):
    t = DT[dt]
    cfgs = {"float64": configs.MATMUL_CONFIGS_64, "float32": configs.MATMUL_CONFIGS_32}.get(
        dt, configs.MATMUL_CONFIGS_16)
    sig = dict(A=f"*{t}", B=f"*{t}", C=f"*{t}",
               **_ints("M", "N", "K", "NB0", "SA1", "SA0", "SAM", "SAK", "SB1", "SB0", "SBK",
                       "SBN", "SC1", "SC0", "SCM", "SCN"))
    for c in cfgs[:2]:
        for prec in (("ieee", "tf32") if dt == "float32" else ("tf32" if dt != "float64"
                                                               else "ieee",)):
            k = _compile(kmm.matmul_kernel, sig, dict(
                PRECISION=prec, ACC64=dt == "float64", BLOCK_M=c.block_m, BLOCK_N=c.block_n,
                BLOCK_K=c.block_k, GROUP_M=c.group_m), c.num_warps)
            assert "cubin" in k.asm
            if dt in ("float16", "bfloat16") or prec == "tf32":
                assert "mma" in k.asm["ptx"]  # tensor cores (wgmma / mma.sync)


def test_flat_kernels_compile():
    blk = configs.FLAT_BLOCK
    w = configs.FLAT_WARPS
    for fn in (ka.f_gelu, ka.f_gelu_tanh, ka.f_silu):
        k = _compile(ew.ew_kernel, _ew_sig("fp32", "fp32", "i32"),
                     {"FN": fn, "ARITY": 1, "NDIM": 1, "UPCAST": False, "IDX64": False,
                      "BLOCK": blk}, w)
        assert _spills(k.asm["ptx"]) == (0, 0)
    cases = [
        (ka.softplus_kernel, dict(O="*fp32", G="*fp32", X="*fp32", N="i32", SO="i32",
                                  SG="i32", SX="i32", beta="fp64", threshold="fp64"),
         dict(BWD=True, UPCAST=False, BLOCK=blk)),
        (kd.rand_kernel, dict(O="*fp32", N="i32", seed="i32", offset="i64"),
         dict(NORMAL=True, F64=False, BLOCK=blk)),
        (kd.rand_kernel, dict(O="*fp64", N="i32", seed="i32", offset="i64"),
         dict(NORMAL=True, F64=True, BLOCK=blk)),
        (kd.dropout_kernel, dict(O="*bf16", X="*bf16", N="i32", p="fp64", scale="fp64",
                                 seed="i32", offset="i64"), dict(UPCAST=True, BLOCK=blk)),
        (kix.gather_kernel, dict(OUT="*fp32", X="*fp32", OFF="*i64", N="i32"),
         dict(BLOCK=blk)),
        (kix.gather_nd_kernel, dict(OUT="*fp32", X="*fp32", IDX="*i64", ERR="*i64",
                                    **_ints("N", "NB", *[f"{p}{i}" for p in ("S", "XS", "IS")
                                                         for i in range(8)],
                                            *[f"{p}{k}" for p in "NK" for k in range(4)])),
         dict(NDIM=8, NIDX=4, CHECK=True, WRAP=True, BLOCK=configs.GATHER_ND_BLOCK)),
        (kix.index_targets_kernel, dict(T="*i64", IDX="*i32", ERR="*i64",
                                        **_ints("NB", *[f"{p}{k}" for p in "NK"
                                                        for k in range(4)])),
         dict(NIDX=4, BLOCK=blk)),
        (kix.range_check_kernel, dict(IDX="*i64", ERR="*i64", N="i32", SIZE="i32"),
         dict(NEGATIVES=True, BLOCK=blk)),
        (kix.scatter_parts_kernel, dict(PART="*fp32", V="*bf16", PERM="*i64", T="*i64",
                                        **_ints("NB", "NS", "L")),
         dict(REDUCE=0, ACC=0, INIT=0, BLOCK=blk)),
        (kix.scatter_parts_kernel, dict(PART="*fp64", V="*fp64", PERM="*i64", T="*i64",
                                        **_ints("NB", "NS", "L")),
         dict(REDUCE=1, ACC=1, INIT=1, BLOCK=blk)),
        (kix.scatter_sorted_kernel, dict(OUT="*fp32", V="*fp32", PERM="*i64", T="*i64",
                                         PART="*fp32", **_ints("NB", "NS", "NS0", "ST1", "ST0",
                                                                "L")),
         dict(REDUCE=0, ACC=0, INIT=0, BLOCK=blk)),
        (kix.scatter_sorted_kernel, dict(OUT="*fp64", V="*fp64", PERM="*i64", T="*i64",
                                         PART="*fp64", **_ints("NB", "NS", "NS0", "ST1", "ST0",
                                                                "L")),
         dict(REDUCE=0, ACC=1, INIT=0, BLOCK=blk)),
        (kix.scatter_sorted_kernel, dict(OUT="*i64", V="*i64", PERM="*i64", T="*i64",
                                         PART="*i64", **_ints("NB", "NS", "NS0", "ST1", "ST0",
                                                               "L")),
         dict(REDUCE=2, ACC=2, INIT=-(2**63), BLOCK=blk)),
        (kix.scatter_sorted_kernel, dict(OUT="*bf16", V="*bf16", PERM="*i64", T="*i64",
                                         PART="*fp32", **_ints("NB", "NS", "NS0", "ST1", "ST0",
                                                                "L")),
         dict(REDUCE=1, ACC=0, INIT=1, BLOCK=blk)),
        (kix.put_sorted_kernel, dict(DST="*bf16", V="*bf16", PERM="*i64", T="*i64",
                                     **_ints("NB", "NS", "NS0", "ST1", "ST0")), dict(BLOCK=blk)),
        (kopt.sgd_kernel, dict(P="*fp32", G="*fp32", B="*fp32", OFFS="*i64", FIRST="*i64",
                               BT="*i64", BS="*i64", lr="fp64", momentum="fp64",
                               dampening="fp64", wd="fp64"),
         dict(HAS_WD=True, HAS_MOM=True, NESTEROV=True, MAXIMIZE=False, ACC64=False,
              BLOCK=configs.OPTIM_BLOCK)),
        (kopt.adam_kernel, dict(P="*fp32", G="*fp32", M="*fp32", V="*fp32", VM="*fp32",
                                OFFS="*i64", SCAL="*fp64", BT="*i64", BS="*i64", w1="fp64",
                                w1c="fp64", beta2="fp64", w2="fp64", eps="fp64", wd="fp64",
                                decay="fp64"),
         dict(LERP_LOW=True, HAS_WD=True, DECOUPLED=True, AMSGRAD=True, MAXIMIZE=False, ACC64=False,
              BLOCK=configs.OPTIM_BLOCK)),
    ]
    for fn, sig, cx in cases:
        k = _compile(fn, sig, cx, w)
        assert _spills(k.asm["ptx"]) == (0, 0), fn.__name__


# Python floats passed to a kernel become fp32 arguments unless the parameter is declared
# tl.float64: these are, so float64 tensors get their full precision on the GPU (fp32
# kernels cast them down inside). The interpreter keeps Python floats exact either way.
FLOAT64_ARGS = [(kd.dropout_kernel, ("p", "scale")), (ka.softplus_kernel, ("beta", "threshold")),
                (kln.ln_fwd_kernel, ("eps",)),
                (kopt.sgd_kernel, ("lr", "momentum", "dampening", "wd")),
                (kopt.adam_kernel, ("w1", "w1c", "beta2", "w2", "eps", "wd", "decay"))]


@pytest.mark.parametrize("kernel,names", FLOAT64_ARGS, ids=lambda k: getattr(k, "__name__", ""))
def test_float_arguments_are_declared_float64(kernel, names):
    params = {p.name: p for p in kernel.params}
    assert [params[n].annotation_type for n in names] == ["fp64"] * len(names)


def test_sums_of_exponentials_take_one_mufu_and_no_select_per_element(tmp_path):
    """perf/sass_counts.py's machine code of the row kernels at rows of 4096:
    cross_entropy and log_softmax spend exactly one MUFU.EX2 per element and no
    per-element compare or select (Triton's exp adds a subnormal range check and tgrad's old
    -inf select added two more); one-dim rows (M0 = 1) divide no row index."""
    import json
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "perf"))
    import sass_counts
    if not os.path.exists(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia",
                                       "bin", "nvdisasm")):
        pytest.skip("no nvdisasm inside triton's package")
    assert sass_counts.main(["--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "sass_counts.json").read_text())["rows"]
    assert {(r["kernel"], r["dtype"]) for r in rows} >= {
        ("cross_entropy fwd", "bfloat16"), ("log_softmax fwd", "float32")}
    for r in rows:
        if r["kernel"] in ("cross_entropy fwd", "log_softmax fwd"):
            assert r["ex2"] == r["mufu"] == r["elements_per_thread"], r
            assert r["fsetp_fsel"] < r["elements_per_thread"], r
    # the same specializations (one-dim rows: M0 = 1) spill nothing
    for name, dt, *compile_args, _ in sass_counts.cases():
        assert _spills(sass_counts._compile(*compile_args).asm["ptx"]) == (0, 0), (name, dt)

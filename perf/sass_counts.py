"""SASS instruction counts of the row kernels at the benchmark's rows (4096) and of the
reduction kernel on its 8192 x 4096 matrix, as
the wrappers launch them on the H200 (sm_90; configs of tgrad/kernels/configs.py, aligned
unit-stride rows): no GPU needed, Triton compiles ahead of time and nvdisasm (inside
Triton's package) lists the machine code. A proxy for the issue rate of kernels that
bandwidth alone does not explain (bf16 cross_entropy forward ran at 50% of copy bandwidth
on the H200 in about the time float32's twice-as-many bytes took).

    python perf/sass_counts.py [--out DIR] [--rows-2d]   # a table; DIR/sass_counts.json

Columns: SASS instructions of the kernel (the forward kernels are straight-line code, one
row per program, so this is the count per row and thread), per element a thread holds,
MUFU and the float compare/select instructions (FSETP, FSEL) among them, and the longest
loop's body (layer_norm backward: the cost per block of rows); the JSON adds MUFU.EX2.
"""

from __future__ import annotations

import argparse
import collections
import inspect
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))
import _report  # noqa: E402

N = 4096


def compile_sm90(fn, sig: dict, constexprs: dict, num_warps: int, aligned=()):
    """``fn`` compiled ahead of time for the H200 (sm_90) with tgrad's compile options.
    Constexpr parameters left out take their defaults, as a launch binds them; ``aligned``:
    parameters specialized as 16-divisible (pointers, sizes, strides), as a launch on
    aligned data specializes them. (tests/test_triton_aot.py compiles through this too.)"""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tgrad.kernels import configs
    params = inspect.signature(fn.fn).parameters
    constexprs = dict({n: p.default for n, p in params.items()
                       if p.default is not inspect.Parameter.empty and n not in sig},
                      **constexprs)
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in aligned}
    sig = dict(sig, **{k: "constexpr" for k in constexprs})
    return triton.compile(ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": num_warps, **configs.COMPILE_OPTIONS})


def _compile(fn, sig: dict, constexprs: dict, num_warps: int):
    """As a launch on aligned rows: every argument 16-divisible but ignore_index (-100) and
    floats."""
    return compile_sm90(fn, sig, constexprs, num_warps, aligned=[
        n for n, t in sig.items() if n != "ignore_index" and not t.startswith("fp")])


def _sass(cubin: bytes) -> tuple[collections.Counter, int]:
    """(opcode counts with MUFU.EX2 counted apart as well, instructions in the kernel's
    longest loop: from a label to the backward branch to it; 0 without a loop)."""
    import triton
    nvdisasm = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin",
                            "nvdisasm")
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
    try:
        text = subprocess.run([nvdisasm, "-c", f.name], capture_output=True, text=True,
                              check=True).stdout
    finally:
        os.unlink(f.name)
    ops = collections.Counter()
    labels: dict = {}
    loop = n = 0
    for line in text.splitlines():
        lab = re.match(r"\s*(\.L_x_\d+):", line)
        if lab:
            labels[lab.group(1)] = n
            continue
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.EX2)?(.*)",
                     line)
        if not m:
            continue
        ops[m.group(1)] += 1
        if m.group(2):
            ops["MUFU.EX2"] += 1
        target = re.search(r"(\.L_x_\d+)", m.group(3)) if m.group(1) == "BRA" else None
        if target and target.group(1) in labels and labels[target.group(1)] < n:  # a loop
            loop = max(loop, n + 1 - labels[target.group(1)])
        n += 1
    return ops, loop


def _m0(sig: dict, cx: dict, rows_2d: bool) -> tuple[dict, dict]:
    return (dict(sig, M0="i32"), cx) if rows_2d else (sig, dict(cx, M0=1))


def cases(rows_2d: bool = False):
    """(name, dtype, kernel, signature, constexprs, num_warps, elements a thread holds).
    ``rows_2d``: M0 a runtime argument, as two-level rows launch (the row index then divides
    by it); else one-dim rows, M0 = 1, which Triton specializes into a constant."""
    from tgrad.kernels import configs
    from tgrad.kernels import cross_entropy as kce
    from tgrad.kernels import layer_norm as kln
    from tgrad.kernels import softmax as ksm
    for dt, t in (("bfloat16", "bf16"), ("float32", "fp32")):
        for op in ("cross_entropy", "log_softmax", "softmax"):
            # the forward wrappers ask for half_rows (log_softmax, cross_entropy forward)
            cfg = configs.row_config(N, False, False, half_rows=op != "softmax"
                                     and dt == "bfloat16")
            # rows of one dim: M0 = 1 and unit column strides, specialized as a launch does
            cx = dict(SXN=1, ACC64=False, ONE_PASS=cfg.one_pass, BLOCK_M=cfg.block_m,
                      BLOCK_N=cfg.block_n)
            if op == "cross_entropy":
                sig = dict(X=f"*{t}", T="*i64", RW="*fp32", LOSS=f"*{t}", LSE="*fp32",
                           WOUT="*fp32", M="i32", N="i32", SX1="i32", SX0="i32",
                           ignore_index="i32")
                cx = dict(cx, HAS_W=False)
                kern = kce.ce_fwd_kernel
            else:
                sig = dict(X=f"*{t}", Y=f"*{t}", M="i32", N="i32", SX1="i32", SX0="i32",
                           SY1="i32", SY0="i32")
                cx = dict(cx, SYN=1, LOG=op == "log_softmax")
                kern = ksm.softmax_fwd_kernel
            per_thread = cfg.block_m * cfg.block_n // (32 * cfg.num_warps)
            sig, cx = _m0(sig, cx, rows_2d)
            yield f"{op} fwd", dt, kern, sig, cx, cfg.num_warps, per_thread
        # layer_norm backward: persistent programs loop over blocks of block_m rows (the
        # loop body is the per-block cost)
        cfg = configs.row_config(N, False, False, heavy=True)
        sig = dict(G=f"*{t}", X=f"*{t}", W=f"*{t}", MEAN="*fp32", RSTD="*fp32", DX=f"*{t}",
                   DWP="*fp32", DBP="*fp32", M="i32", N="i32", SG1="i32", SG0="i32",
                   SX1="i32", SX0="i32", SD1="i32", SD0="i32", n_blocks="i32", n_progs="i32")
        cx = dict(SGN=1, SXN=1, SDN=1, HAS_W=True, NEED_W=True, NEED_B=True, ACC64=False,
                  ONE_PASS=cfg.one_pass, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n,
                  EVEN=True)  # 8192 rows of 4096: no lane masked
        sig, cx = _m0(sig, cx, rows_2d)
        yield ("layer_norm bwd", dt, kln.ln_bwd_kernel, sig, cx, cfg.num_warps,
               cfg.block_m * cfg.block_n // (32 * cfg.num_warps))
    # contiguous elementwise tanh (bench_gpu's bfloat16 miss): one block per program
    from tgrad.kernels import elementwise as ew
    for dt, t in (("bfloat16", "bf16"), ("float32", "fp32")):
        cfg = configs.ew_config(True, False, 1 << 25, 2 if t == "bf16" else 4)
        # unit strides for O and A (specialized to 1), none for B and C, one dim
        cx = {f"{p}{i}": int(i == 0 and p in "OA") for p in "OABC" for i in range(8)}
        cx.update({f"S{i}": 1 for i in range(8)}, FN=ew.f_tanh, ARITY=1, NDIM=1,
                  UPCAST=t == "bf16", IDX64=False, BLOCK=cfg.block)
        sig = dict(O=f"*{t}", A=f"*{t}", B=f"*{t}", C=f"*{t}", N="i32")
        yield ("tanh fwd", dt, ew.ew_kernel, sig, cx, cfg.num_warps,
               cfg.block // (32 * cfg.num_warps))
    # reductions of an 8192 x 4096 float32 matrix (bench_gpu's), rows and columns: loops
    # over K steps of block_k (the loop body is the cost per step)
    import triton.language as tl

    from tgrad.kernels import reduction as red
    for kind, cols in (("sum", False), ("amax", False), ("logsumexp", False), ("var", False),
                       ("sum", True)):
        cfg = configs.red_config(2 * N if cols else N, cols, False, kind, N if cols else 2 * N)
        sig = dict(X="*fp32", Y="*fp32", M="i32", K="i32", correction="fp64", KC="i32",
                   NS="i32", D="i32", **{"SK" if cols else "SM": "i32"})
        cx = dict(OP=red.OPS[kind], ACC=tl.float32, IDX64=False, BLOCK_M=cfg.block_m,
                  BLOCK_K=cfg.block_k, **{"SM" if cols else "SK": 1})
        yield (f"{kind} {'cols' if cols else 'rows'}", "float32", red.red_kernel, sig, cx,
               cfg.num_warps, cfg.block_m * cfg.block_k // (32 * cfg.num_warps))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "perf" / "out"))
    ap.add_argument("--rows-2d", action="store_true",
                    help="M0 as a runtime argument (two-level rows; every launch before "
                         "one-dim rows passed M0 = 1)")
    a = ap.parse_args(argv)
    import triton
    rows = []
    for name, dt, kern, sig, cx, warps, per_thread in cases(a.rows_2d):
        ops, loop = _sass(_compile(kern, sig, cx, warps).asm["cubin"])
        total = sum(ops.values()) - ops["MUFU.EX2"]
        rows.append({"kernel": name, "dtype": dt, "n": N, "num_warps": warps,
                     "elements_per_thread": per_thread, "sass": total,
                     "sass_per_element": round(total / per_thread, 2), "mufu": ops["MUFU"],
                     "ex2": ops.pop("MUFU.EX2", 0),
                     "fsetp_fsel": ops["FSETP"] + ops["FSEL"], "loop_body": loop,
                     "top": dict(ops.most_common(8))})
    print(f"SASS of the row kernels at rows of {N} (sm_90, triton {triton.__version__})")
    print(f"{'kernel':18s} {'dtype':9s} {'warps':>5s} {'el/thr':>6s} {'SASS':>5s} "
          f"{'/el':>6s} {'MUFU':>5s} {'FSETP+FSEL':>10s} {'loop':>5s}")
    for r in rows:
        print(f"{r['kernel']:18s} {r['dtype']:9s} {r['num_warps']:5d} "
              f"{r['elements_per_thread']:6d} {r['sass']:5d} {r['sass_per_element']:6.2f} "
              f"{r['mufu']:5d} {r['fsetp_fsel']:10d} {r['loop_body']:5d}")
    report = dict(_report.header("tgrad-sass-counts/1"), triton=triton.__version__,
                  target="sm_90", rows_2d=a.rows_2d, rows=rows)
    if a.out:
        _report.save(report, a.out, "sass_counts.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

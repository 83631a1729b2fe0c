"""SASS instruction counts of the row kernels' forward at the benchmark's rows (4096), as
the wrappers launch them on the H200 (sm_90; configs of tgrad/kernels/configs.py, aligned
unit-stride rows): no GPU needed, Triton compiles ahead of time and nvdisasm (inside
Triton's package) lists the machine code. A proxy for the issue rate of kernels that
bandwidth alone does not explain (bf16 cross_entropy forward ran at 50% of copy bandwidth
on the H200 in about the time float32's twice-as-many bytes took).

    python perf/sass_counts.py [--out DIR]     # prints a table, writes DIR/sass_counts.json

Columns: SASS instructions of the kernel (straight-line code: one row per program, so the
count is per row), per element of the row each thread handles, MUFU (ex2/lg2) and the
float compare/select instructions (FSETP, FSEL) among them.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

N = 4096


def _compile(fn, sig: dict, constexprs: dict, num_warps: int):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tgrad.kernels import configs
    # constexpr parameters left out take their defaults, as a launch binds them
    params = inspect.signature(fn.fn).parameters
    constexprs = dict({n: p.default for n, p in params.items()
                       if p.default is not inspect.Parameter.empty and n not in sig},
                      **constexprs)
    # 16-divisible, as a launch on aligned rows specializes them (not ignore_index: -100)
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in sig
             if n != "ignore_index"}
    sig = dict(sig, **{k: "constexpr" for k in constexprs})
    return triton.compile(ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": num_warps, **configs.COMPILE_OPTIONS})


def _sass_ops(cubin: bytes) -> collections.Counter:
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
    for line in text.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
        if m:
            ops[m.group(1)] += 1
    return ops


def cases():
    """(name, dtype, kernel, signature, constexprs, num_warps, elements a thread holds)."""
    from tgrad.kernels import configs
    from tgrad.kernels import cross_entropy as kce
    from tgrad.kernels import softmax as ksm
    for dt, t in (("bfloat16", "bf16"), ("float32", "fp32")):
        for op in ("cross_entropy", "log_softmax", "softmax"):
            # the forward wrappers ask for half_rows (log_softmax, cross_entropy forward)
            cfg = configs.row_config(N, False, False, half_rows=op != "softmax"
                                     and dt == "bfloat16")
            cx = dict(SXN=1, ACC64=False, ONE_PASS=cfg.one_pass, BLOCK_M=cfg.block_m,
                      BLOCK_N=cfg.block_n)
            if op == "cross_entropy":
                sig = dict(X=f"*{t}", T="*i64", RW="*fp32", LOSS=f"*{t}", LSE="*fp32",
                           WOUT="*fp32", M="i32", N="i32", M0="i32", SX1="i32", SX0="i32",
                           ignore_index="i32")
                cx = dict(cx, HAS_W=False)
                kern = kce.ce_fwd_kernel
            else:
                sig = dict(X=f"*{t}", Y=f"*{t}", M="i32", N="i32", M0="i32", SX1="i32",
                           SX0="i32", SY1="i32", SY0="i32")
                cx = dict(cx, SYN=1, LOG=op == "log_softmax")
                kern = ksm.softmax_fwd_kernel
            per_thread = cfg.block_m * cfg.block_n // (32 * cfg.num_warps)
            yield f"{op} fwd", dt, kern, sig, cx, cfg.num_warps, per_thread


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "perf" / "out"))
    a = ap.parse_args(argv)
    import triton
    rows = []
    for name, dt, kern, sig, cx, warps, per_thread in cases():
        ops = _sass_ops(_compile(kern, sig, cx, warps).asm["cubin"])
        total = sum(ops.values())
        rows.append({"kernel": name, "dtype": dt, "n": N, "num_warps": warps,
                     "elements_per_thread": per_thread, "sass": total,
                     "sass_per_element": round(total / per_thread, 2), "mufu": ops["MUFU"],
                     "fsetp_fsel": ops["FSETP"] + ops["FSEL"],
                     "top": dict(ops.most_common(8))})
    print(f"SASS of the row kernels' forward at rows of {N} (sm_90, triton {triton.__version__})")
    print(f"{'kernel':18s} {'dtype':9s} {'warps':>5s} {'el/thr':>6s} {'SASS':>5s} "
          f"{'/el':>6s} {'MUFU':>5s} {'FSETP+FSEL':>10s}")
    for r in rows:
        print(f"{r['kernel']:18s} {r['dtype']:9s} {r['num_warps']:5d} "
              f"{r['elements_per_thread']:6d} {r['sass']:5d} {r['sass_per_element']:6.2f} "
              f"{r['mufu']:5d} {r['fsetp_fsel']:10d}")
    report = {"schema": "tgrad-sass-counts/1", "date": datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec="seconds"), "triton": triton.__version__,
        "command": " ".join(sys.argv), "target": "sm_90", "rows": rows}
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "sass_counts.json").write_text(json.dumps(report, indent=1))
        print(f"wrote {out / 'sass_counts.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

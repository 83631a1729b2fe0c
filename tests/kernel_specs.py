"""Every Triton kernel specialization the interpreter tests launch, recorded and compiled
ahead of time for sm_90.

``record(path)`` wraps Triton's interpreter so that each launch notes its kernel, the Triton
type of every runtime argument (``*fp32``, ``i32``, ``fp64``...), its constexpr values and
``num_warps``; one launch per variant (``spec_of``) is written to ``path`` as JSON at exit.
The interpreter runners (tests/_triton_interp_runner.py, tests/test_triton_nn_ops.py) call
it when pytest sets ``TGRAD_RECORD_SPECS``. ``compile_spec(spec)`` compiles one of them for
the H200 (no GPU needed), so tests/test_triton_aot_specs.py can check that every kernel
variant the tests exercise also compiles for the real machine: with the installed Triton, or
with the GPU machine's Triton 3.6 where ``TGRAD_TRITON36`` names one (CI's .ci/run does).

Block sizes are the interpreter's (tgrad/kernels/configs.py picks bigger blocks there);
the compiled configs' register use is checked by tests/test_triton_aot.py and
tests/test_triton_nn_aot.py. What this adds is every constexpr branch, dtype and index width
the op table reaches.
"""

from __future__ import annotations

import atexit
import glob
import importlib
import inspect
import json
import os
import sys
import tempfile

LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
ENV = "TGRAD_RECORD_SPECS"
# A folder holding the GPU machine's Triton 3.6 (.ci/run makes one), or "".
TRITON36 = os.environ.get("TGRAD_TRITON36", "")
NO_TRITON36 = "TGRAD_TRITON36 is not set: no Triton 3.6 to check against"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def subprocess_env(triton_dir: str, **extra: str) -> dict:
    """This environment for a compiling subprocess: no interpreter, ``triton_dir`` (when
    given) first on the path, then the repository and tests/; ``extra`` set on top."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    path = [triton_dir, ROOT, os.path.join(ROOT, "tests"), env.get("PYTHONPATH", "")]
    return dict(env, PYTHONPATH=os.pathsep.join(p for p in path if p), **extra)
_SPEC_DIR: list[str] = []   # one folder per pytest session, made on first use


def recording_env(env: dict, name: str) -> dict:
    """``env`` for an interpreter runner subprocess that records into this session's folder
    under ``name``."""
    if not _SPEC_DIR:
        _SPEC_DIR.append(tempfile.mkdtemp(prefix="tgrad-kernel-specs-"))
    return dict(env, **{ENV: os.path.join(_SPEC_DIR[0], name + ".json")})


# ew_kernel's constexprs fall in two groups that its code never mixes: the formula (FN, its
# ARITY and UPCAST, with the operand types) and the indexing (NDIM, IDX64, INNER, BLOCK, with
# num_warps). Every value of each group is compiled at least once, not every pair of them.
_EW_KERNEL = "tgrad.kernels.elementwise:ew_kernel"
_EW_FORMULA = ("FN", "ARITY", "UPCAST")


def _ew_groups(spec: dict) -> tuple[str, str]:
    _, declared, plain, num_warps = json.loads(spec["variant"])
    formula = json.dumps([{k: declared.get(k) for k in _EW_FORMULA}, plain], sort_keys=True)
    indexing = json.dumps([{k: v for k, v in declared.items() if k not in _EW_FORMULA},
                           num_warps], sort_keys=True)
    return formula, indexing


def recorded() -> list[dict]:
    """One specialization per variant, over every runner of this session; for ew_kernel,
    enough of them that each formula group and each indexing group is in one (about 470 of
    its 3000 variants; the compile step took 9 minutes of CI's 2 cores before)."""
    files = sorted(glob.glob(os.path.join(_SPEC_DIR[0], "*.json"))) if _SPEC_DIR else []
    seen: dict[str, dict] = {}
    for f in files:
        for spec in json.load(open(f)):
            seen.setdefault(spec["variant"], spec)
    return cover_ew_groups([seen[k] for k in sorted(seen)])


def cover_ew_groups(specs: list[dict]) -> list[dict]:
    """``specs`` with only the ew_kernel ones that bring a formula or indexing group not yet
    kept (in order, so the result is deterministic)."""
    kept, formulas, indexings = [], set(), set()
    for spec in specs:
        if spec["kernel"] == _EW_KERNEL:
            formula, indexing = _ew_groups(spec)
            if formula in formulas and indexing in indexings:
                continue
            formulas.add(formula)
            indexings.add(indexing)
        kept.append(spec)
    return kept


def record_if_asked() -> None:
    """Called by the interpreter runners: record when pytest asked for it."""
    if os.environ.get(ENV):
        record(os.environ[ENV])


def _encode(value):
    """A constexpr value as JSON: jitted functions by module and name, Triton dtypes by
    name, plain Python values as they are."""
    fn = getattr(value, "fn", None)
    if fn is not None and callable(fn):
        return {"jit": f"{fn.__module__}:{fn.__name__}"}
    if type(value).__module__.startswith("triton.language") and hasattr(value, "name"):
        return {"tl_dtype": value.name}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot record constexpr value {value!r} ({type(value).__name__})")


def _decode(value):
    if isinstance(value, dict) and "jit" in value:
        module, name = value["jit"].split(":")
        return getattr(importlib.import_module(module), name)
    if isinstance(value, dict) and "tl_dtype" in value:
        import triton.language as tl
        return tl.dtype(value["tl_dtype"])
    return value


def _annotation(p: inspect.Parameter) -> str:
    a = p.annotation
    return "" if a is inspect.Parameter.empty else (a if isinstance(a, str) else repr(a))


def spec_of(fn, args: tuple, kwargs: dict, no_specialize=()) -> dict:
    """The specialization of one launch of the jitted Python function ``fn``, as Triton's
    binder makes it on a GPU: an int argument equal to 1 becomes the constexpr 1, and
    pointers aligned to 16 bytes and ints divisible by 16 are listed in ``divisible`` (the
    ``tt.divisibility`` hint that lets loads vectorize), unless the parameter is in
    ``no_specialize`` (the kernel's ``do_not_specialize``). ``variant`` names what the
    kernel's code branches on: its declared constexprs, the argument types before those
    value specializations, and ``num_warps``."""
    from triton.backends.compiler import BaseBackend
    from triton.runtime.jit import native_specialize_impl
    sig = inspect.signature(fn)
    opts = {k: kwargs[k] for k in LAUNCH_OPTIONS if k in kwargs}
    bound = sig.bind(*args, **{k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS})
    bound.apply_defaults()
    types, constexprs, divisible = {}, {}, []
    declared, plain = {}, {}
    for i, (name, p) in enumerate(sig.parameters.items()):
        ann, value = _annotation(p), bound.arguments[name]
        if "constexpr" in ann:
            constexprs[name] = declared[name] = _encode(value)
        elif "float64" in ann:   # e.g. ``eps: tl.float64``: the annotation fixes the type
            types[name] = plain[name] = "fp64"
        else:
            plain[name] = native_specialize_impl(BaseBackend, value, False, False, True)[0]
            specialize = name not in no_specialize and i not in no_specialize
            ty, key = native_specialize_impl(BaseBackend, value, False, specialize, True)
            if ty == "constexpr":
                constexprs[name] = value
            else:
                types[name] = ty
                if isinstance(key, str) and "D" in key:
                    divisible.append(name)
    kernel, num_warps = f"{fn.__module__}:{fn.__name__}", opts.get("num_warps", 4)
    return {"kernel": kernel, "signature": types, "constexprs": constexprs,
            "divisible": divisible, "num_warps": num_warps,
            "variant": json.dumps([kernel, declared, plain, num_warps], sort_keys=True)}


def record(path: str) -> None:
    """Record every interpreted launch from now on; at exit, write the first launch of each
    variant (stride-1 constants and divisibility vary with shapes; compiling every
    combination would take ten times as long and exercise no other branch)."""
    from triton.runtime.interpreter import InterpretedFunction
    seen: dict[str, dict] = {}
    run = InterpretedFunction.run

    def recording_run(self, *args, grid, warmup, **kwargs):
        spec = spec_of(self.fn, args, kwargs, self.kwargs.get("do_not_specialize") or ())
        seen.setdefault(spec["variant"], spec)
        return run(self, *args, grid=grid, warmup=warmup, **kwargs)

    InterpretedFunction.run = recording_run
    atexit.register(lambda: json.dump([seen[k] for k in sorted(seen)], open(path, "w")))


def compile_spec(spec: dict, target=None):
    """Compile a recorded specialization for ``target`` (default: sm_90, the H200)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tgrad.kernels.configs import COMPILE_OPTIONS
    module, name = spec["kernel"].split(":")
    kernel = getattr(importlib.import_module(module), name)
    constexprs = {k: _decode(v) for k, v in spec["constexprs"].items()}
    signature = dict(spec["signature"], **{k: "constexpr" for k in constexprs})
    attrs = {(kernel.arg_names.index(n),): [["tt.divisibility", 16]] for n in spec["divisible"]}
    return triton.compile(ASTSource(fn=kernel, signature=signature, constexprs=constexprs,
                                    attrs=attrs),
                          target=target or GPUTarget("cuda", 90, 32),
                          options={"num_warps": spec["num_warps"], **COMPILE_OPTIONS})


def _compile_or_error(spec: dict) -> str | None:
    try:
        compile_spec(spec)
    except Exception as e:  # noqa: BLE001 - reported per specialization
        return (f"{spec['kernel']} signature={spec['signature']} "
                f"constexprs={spec['constexprs']} num_warps={spec['num_warps']}: "
                f"{type(e).__name__}: {str(e)[-1500:]}")
    return None


def main(path: str) -> None:
    """``python tests/kernel_specs.py SPECS.json``: compile every specialization in the file
    (all cores) and print the Triton version and the failures as JSON after a marker."""
    from concurrent.futures import ProcessPoolExecutor

    import triton
    specs = json.load(open(path))
    # The slow compiles (the bitonic sort networks, ~10 s each) first and one spec per task,
    # so the workers finish together.
    order = sorted(specs, key=lambda sp: "sort" not in sp["kernel"])
    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        errors = [e for e in pool.map(_compile_or_error, order, chunksize=1) if e]
    print("@@RESULT@@" + json.dumps({"triton": triton.__version__, "compiled": len(specs),
                                     "errors": errors}))


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    main(sys.argv[1])

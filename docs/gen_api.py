"""Generate docs/api.md: every public name of tgrad, tgrad.autograd, tgrad.nn, tgrad.optim
(and their public submodules) with its signature and the first line of its docstring.

    python docs/gen_api.py          # rewrite docs/api.md
    python docs/gen_api.py --check  # exit 1 if docs/api.md is out of date (used by tests)
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

OUT = Path(__file__).with_name("api.md")

# (module, heading note). Each module's public names are its __all__.
MODULES = [
    ("tgrad", "tensors, dtypes, devices, creation and math functions, save/load"),
    ("tgrad.autograd", "backward / grad, grad modes, Function, gradcheck, anomaly detection"),
    ("tgrad.autograd.functional", "higher-level derivatives"),
    ("tgrad.autograd.forward_ad", "forward-mode AD (dual_level, make_dual, unpack_dual)"),
    ("tgrad.autograd.graph", "saved-tensor hooks and graph edges"),
    ("tgrad.autograd.profiler", "the profiler"),
    ("tgrad.profiler", "torch.profiler's API: schedules, step(), trace handlers"),
    ("tgrad.func", "function transforms (grad, vjp, jvp, jacrev, jacfwd, hessian, vmap, "
                   "functional_call)"),
    ("tgrad.nn", "Module, Parameter and layers"),
    ("tgrad.nn.functional", "functional ops"),
    ("tgrad.nn.init", "parameter initialisation"),
    ("tgrad.nn.grad", "gradients of convolutions w.r.t. input and weight"),
    ("tgrad.nn.utils", "gradient clipping"),
    ("tgrad.nn.utils.rnn", "padding variable-length sequences"),
    ("tgrad.nn.utils.parametrize", "parametrizations of parameters and buffers"),
    ("tgrad.nn.utils.parametrizations", "orthogonal, weight_norm, spectral_norm"),
    ("tgrad.nn.utils.prune", "pruning"),
    ("tgrad.nn.utils.fusion", "folding BatchNorm into convolutions and linear layers"),
    ("tgrad.nn.parallel", "DataParallel on one device"),
    ("tgrad.optim", "optimizers"),
    ("tgrad.optim.optimizer", "the Optimizer base class and the global step hooks"),
    ("tgrad.optim.lr_scheduler", "learning-rate schedules"),
    ("tgrad.optim.swa_utils", "weight averaging (SWA, EMA)"),
    ("tgrad.amp", "automatic mixed precision (autocast, GradScaler)"),
    ("tgrad.utils.checkpoint", "activation checkpointing"),
    ("tgrad.utils.data", "datasets, samplers, DataLoader, collate functions"),
    ("tgrad.utils.benchmark", "timing statements (Timer, Measurement, Compare)"),
    ("tgrad.utils.dlpack", "DLPack exchange (to_dlpack, from_dlpack)"),
    ("tgrad.utils._pytree", "flatten / unflatten / map over nested containers"),
    ("tgrad.distributions", "probability distributions"),
    ("tgrad.fft", "discrete Fourier transforms (CPU)"),
    ("tgrad.linalg", "linear algebra"),
    ("tgrad.special", "special functions"),
    ("tgrad.signal.windows", "window functions (torch.signal.windows)"),
    ("tgrad.accelerator", "the device-agnostic accelerator API (over tgrad.cuda)"),
    ("tgrad.cpu", "the CPU device module"),
    ("tgrad.jit", "torch.jit's guards and decorators (no TorchScript: code runs eagerly)"),
    ("tgrad.compiler", "torch.compiler's guards and decorators (no compiler)"),
    ("tgrad.distributed", "torch.distributed's guards (not available: one process)"),
    ("tgrad.multiprocessing", "Python's multiprocessing plus PyTorch's spawn"),
    ("tgrad.testing", "testing helpers"),
]
SUBMODULES = {m for m, _ in MODULES}


def _signature(obj) -> str:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    # a function default prints with its address (<function relu at 0x...>): keep the name
    return re.sub(r"<function ([\w.]+) at 0x[0-9a-f]+>", r"\1", sig.replace("'", ""))


def _doc(obj) -> str:
    doc = inspect.getdoc(obj)
    if not doc:
        return ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def _entry(qual: str, obj) -> list[str]:
    if inspect.ismodule(obj):
        return [f"- `{qual}`: module (see its section)" if qual in SUBMODULES
                else f"- `{qual}`: module"]
    if inspect.isclass(obj):
        sig = _signature(obj).replace(" -> None", "")
        lines = [f"- **class** `{qual}{sig}`" + (f": {_doc(obj)}" if _doc(obj) else "")]
        for name, member in sorted(vars(obj).items()):
            if name.startswith("_") and name not in ("__call__",):
                continue
            fn = member
            kind = ""
            if isinstance(member, property):
                lines.append(f"  - `{name}` (property)" +
                             (f": {_doc(member)}" if _doc(member) else ""))
                continue
            if isinstance(member, (staticmethod, classmethod)):
                kind = "static " if isinstance(member, staticmethod) else "class "
                fn = member.__func__
            if callable(fn):
                lines.append(f"  - {kind}`{name}{_signature(fn)}`" +
                             (f": {_doc(fn)}" if _doc(fn) else ""))
        return lines
    if callable(obj):
        return [f"- `{qual}{_signature(obj)}`" + (f": {_doc(obj)}" if _doc(obj) else "")]
    text = repr(obj)
    if " at 0x" in text or len(text) > 80:  # no addresses: the file must be reproducible
        text = f"<{type(obj).__name__}>"
    return [f"- `{qual}` = `{text}`"]


def _tensor_methods() -> list[str]:
    """Tensor methods attached by tgrad.ops (one place per op)."""
    import tgrad
    lines = []
    for name in sorted(dir(tgrad.Tensor)):
        if name.startswith("_"):
            continue
        member = inspect.getattr_static(tgrad.Tensor, name)
        if isinstance(member, property):
            lines.append(f"- `Tensor.{name}` (property)")
        elif callable(member):
            lines.append(f"- `Tensor.{name}{_signature(member)}`" +
                         (f": {_doc(member)}" if _doc(member) else ""))
    return lines


def generate() -> str:
    out = ["# API reference", "",
           "Generated by `python docs/gen_api.py` from the code (the tests check that it is "
           "up to date). Signatures follow PyTorch's names; see the other pages for usage.", ""]
    for modname, note in MODULES:
        mod = importlib.import_module(modname)
        names = list(getattr(mod, "__all__", []))
        out += [f"## `{modname}`: {note}", ""]
        for name in sorted(set(names), key=lambda n: (n.lower(), n)):
            out += _entry(f"{modname}.{name}", getattr(mod, name))
        out.append("")
        if modname == "tgrad":
            out += ["### `tgrad.Tensor` methods and properties", ""] + _tensor_methods() + [""]
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = generate()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is out of date: run python docs/gen_api.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main(sys.argv[1:]))

"""Writes the PyTorch checkpoint fixtures that tests/test_serialization_torch.py reads.

Run by hand, with a Python that has torch (the tests themselves never import torch):

    python tests/data/make_torch_fixtures.py

Every tensor's values are a formula of np.arange (restated in the test, which recomputes it
in NumPy float64), so the files are deterministic up to the zip's serialization id.

Files (PyTorch's zip format, torch.save defaults):
  torch_state_dict.pt   {"model": state_dict of Sequential(Linear(3, 4), BatchNorm1d(4),
                         Linear(4, 2)), "extra": dtypes, views, nested containers}
  torch_uint8.pt        a uint8 tensor (arange(4))
  torch_uint16.pt       a uint16 tensor (written with _rebuild_tensor_v3: clear error)
  torch_complex.pt      {"c64": complex64 (2, 3), "c128": complex128 (3,), "c128_t": a transposed
                         view of a complex128 (2, 2)}: real part ramp, imaginary part -ramp/2
  torch_legacy.pt       a float32 tensor in the legacy (torch < 1.6, non-zip) format
  torch_conj.pt         a complex128 x (ramp - ramp/2 j) with PyTorch's lazy views of it: x.conj()
                        and x.reshape(1, 2).mH (conj bit); and y.conj().imag of a copy y of x
                        (neg bit)
  torch_float8.pt       every bit pattern (arange(256) as uint8, viewed) of each float8 dtype,
                        a transposed (16, 16) view of the float8_e5m2 one, and float32
                        values cast by torch into float8_e4m3fn / float8_e5m2
"""

import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def ramp(shape, scale=0.125, shift=-1.0):
    """np.arange(n) * scale + shift, reshaped (exact in float16/bfloat16 for small n)."""
    n = int(np.prod(shape))
    return np.arange(n, dtype=np.float64).reshape(shape) * scale + shift


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                torch.nn.Linear(4, 2))
    with torch.no_grad():
        model[0].weight.copy_(torch.from_numpy(ramp((4, 3))))
        model[0].bias.copy_(torch.from_numpy(ramp((4,), 0.25, 0.5)))
        model[1].weight.copy_(torch.from_numpy(ramp((4,), 0.5, 1.0)))
        model[1].bias.copy_(torch.from_numpy(ramp((4,), -0.25, 0.0)))
        model[1].running_mean.copy_(torch.from_numpy(ramp((4,), 0.25, -0.5)))
        model[1].running_var.copy_(torch.from_numpy(ramp((4,), 0.5, 1.0)))
        model[1].num_batches_tracked.fill_(7)
        model[2].weight.copy_(torch.from_numpy(ramp((2, 4), 0.0625, 0.25)))
        model[2].bias.copy_(torch.from_numpy(ramp((2,), 1.0, -0.5)))

    base = torch.from_numpy(ramp((3, 4), 1.0, 0.0)).float()  # 0..11
    extra = {
        "f64": torch.from_numpy(ramp((2, 3), 0.1, 0.0)),          # float64
        "i64": torch.arange(6, dtype=torch.int64).reshape(2, 3) * 3 - 5,
        "i32": torch.arange(4, dtype=torch.int32) - 2,
        "b": torch.arange(5) % 2 == 0,
        "f16": torch.from_numpy(ramp((3,), 0.5, -0.5)).half(),
        "bf16": torch.from_numpy(ramp((2, 2), 0.25, 1.0)).bfloat16(),
        "scalar": torch.tensor(2.5),
        "base": base,
        "t": base.t(),                                             # transposed view
        "row1": base[1],                                           # two more views of base
        "col2": base[:, 2],
        "param": torch.nn.Parameter(torch.from_numpy(ramp((2,), 1.0, 3.0)).float()),
        "nested": {"list": [1, 2.5, "s", None, True, (3, "t")],
                   "tensors": [torch.arange(3, dtype=torch.float32) * 2]},
        "dtype": torch.float16,
        "shape": torch.Size([2, 3]),
    }
    torch.save({"model": model.state_dict(), "extra": extra},
               os.path.join(HERE, "torch_state_dict.pt"))
    torch.save(torch.arange(4, dtype=torch.uint8), os.path.join(HERE, "torch_uint8.pt"))
    torch.save(torch.arange(4).to(torch.uint16), os.path.join(HERE, "torch_uint16.pt"))
    torch.save(torch.arange(4, dtype=torch.float32), os.path.join(HERE, "torch_legacy.pt"),
               _use_new_zipfile_serialization=False)
    write_float8()
    write_complex()
    write_conj()


def write_complex():
    def cx(shape):
        r = torch.from_numpy(ramp(shape))
        return torch.complex(r, -r / 2)
    torch.save({"c64": cx((2, 3)).to(torch.complex64), "c128": cx((3,)),
                "c128_t": cx((2, 2)).t()}, os.path.join(HERE, "torch_complex.pt"))


def write_conj():
    r = torch.from_numpy(ramp((2,)))
    x = torch.complex(r, -r / 2)
    y = x.clone()  # (a real view of x's storage cannot share the file with complex ones)
    views = {"x": x, "conj": x.conj(), "mH": x.reshape(1, 2).mH, "conj_imag": y.conj().imag}
    assert views["conj"].is_conj() and views["conj_imag"].is_neg()
    torch.save(views, os.path.join(HERE, "torch_conj.pt"))


FLOAT8_CAST = [0.0, -0.0, 1.0625, 1.1875, 448.0, 464.0, 500.0, 57344.0, 61440.0, 1e6,
               float("inf"), float("-inf"), float("nan"), -3.0, 2.0 ** -10]


def write_float8():
    bits = torch.arange(256, dtype=torch.uint8)
    f8 = {n: bits.clone().view(getattr(torch, n)) for n in (  # (tgrad shares no storage
        # across dtypes: one storage each)
            "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
            "float8_e8m0fnu")}
    f8["e5m2_t"] = f8["float8_e5m2"].reshape(16, 16).t()
    x = torch.tensor(FLOAT8_CAST, dtype=torch.float32)
    f8["cast_e4m3fn"], f8["cast_e5m2"] = x.to(torch.float8_e4m3fn), x.to(torch.float8_e5m2)
    torch.save(f8, os.path.join(HERE, "torch_float8.pt"))


if __name__ == "__main__":
    main()

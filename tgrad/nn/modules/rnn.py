"""RNN, LSTM, GRU and their cells: PyTorch's arguments, parameters (names, shapes, order),
initialisation, shape checks and outputs; the maths is in tgrad/nn/_rnn.py. A PackedSequence
input (tgrad.nn.utils.rnn) gives a PackedSequence output and h_n (c_n) at each sequence's
own last step, as PyTorch."""

from __future__ import annotations

import math
import numbers
import warnings

from tgrad.nn import init
from tgrad.nn._rnn import MODES, gru_cell, lstm_cell, rnn, rnn_relu_cell, rnn_tanh_cell
from tgrad.nn.modules.module import Module
from tgrad.nn.parameter import Parameter
from tgrad.tensor import Tensor

_NAMES = {"RNN_TANH": "RNN", "RNN_RELU": "RNN", "LSTM": "LSTM", "GRU": "GRU"}


def _no_proj_size(cls: str, kwargs: dict) -> None:
    """RNN and GRU take no proj_size (PyTorch's ValueError), nor other unknown keywords."""
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
    for k in kwargs:
        raise TypeError(f"{cls}.__init__() got an unexpected keyword argument '{k}'")



def _uniform_by_hidden_size(module: Module) -> None:
    """PyTorch's init of every recurrent weight and bias: U(-1/sqrt(H), 1/sqrt(H)), in
    registration order (one seed gives one model). H = 0 (a cell may have it): U(0, 0)."""
    stdv = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0.0
    for weight in module.parameters():
        init.uniform_(weight, -stdv, stdv)

class RNNBase(Module):
    """The multi-layer recurrent layers (mode "RNN_TANH", "RNN_RELU", "LSTM" or "GRU").

    Per layer l and direction (suffix "" or "_reverse"): weight_ih_l{l} (G H, H_in) with
    H_in = input_size for l = 0 else D H_out, weight_hh_l{l} (G H, H_out), bias_ih_l{l} and
    bias_hh_l{l} (G H,) when ``bias``, and weight_hr_l{l} (proj_size, H) for an LSTM with
    ``proj_size`` > 0; G = 1, 4 (i, f, g, o), 3 (r, z, n); H_out = proj_size or H; D = 2
    when bidirectional. All ~ U(-1/sqrt(H), 1/sqrt(H)), drawn in registration order.

    Input (L, N, H_in), (N, L, H_in) with ``batch_first``, or unbatched (L, H_in); initial
    state h_0 (D num_layers, N, H_out) (unbatched: (D num_layers, H_out)), zeros if omitted.
    Output (L, N, D H_out) (batch_first: (N, L, D H_out)) and h_n like h_0. ``dropout``
    applies to every layer's output but the last, in training mode only. A PackedSequence
    input (data (sum L_i, H_in)) gives a PackedSequence output (data (sum L_i, D H_out),
    the same batch_sizes and indices) and h_n (D num_layers, N, H_out) taken at each
    sequence's own last step (the reverse direction's after its first step), h_0 and h_n
    in the caller's batch order (``sorted_indices`` applied and undone)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        from tgrad.ops.creation import empty
        super().__init__()
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        for name, value in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(value, int):
                raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in MODES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = proj_size
        gate_size = MODES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        directions = 2 if bidirectional else 1
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else real_hidden * directions
                shapes = [("weight_ih_l{}{}", (gate_size, layer_input)),
                          ("weight_hh_l{}{}", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for fmt, shape in shapes:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(empty(shape, **kw)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_by_hidden_size(self)

    def flatten_parameters(self) -> None:
        """A no-op (PyTorch's packs the weights for cuDNN)."""

    @property
    def _flat_weights(self) -> list:
        """The parameters in ``_flat_weights_names`` order (None for a name that is not an
        attribute), read at each access, so it follows reassigned parameters as PyTorch's
        list (which its __setattr__ keeps in sync)."""
        return [getattr(self, name) if hasattr(self, name) else None
                for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters per (layer, direction), layer-major, in registration order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _layer_weights(self) -> list:
        """Per (layer, direction): (w_ih, w_hh, b_ih, b_hh, w_hr), None for absent ones."""
        out = []
        for names in self._all_weights:
            get = {n.split("_l")[0]: getattr(self, n) for n in names}
            out.append(tuple(get.get(k) for k in ("weight_ih", "weight_hh", "bias_ih",
                                                  "bias_hh", "weight_hr")))
        return out

    # -------------------------------------------------------------- PyTorch's checks
    def check_input(self, input: Tensor, batch_sizes=None) -> None:  # noqa: A002
        """``batch_sizes`` given: ``input`` is a PackedSequence's data (2-D)."""
        w = getattr(self, self._flat_weights_names[0])
        if input.dtype is not w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        want = 2 if batch_sizes is not None else 3
        if input.ndim != want:
            raise RuntimeError(f"input must have {want} dimensions, got {input.ndim}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def get_expected_hidden_size(self, input: Tensor,  # noqa: A002
                                 batch_sizes=None) -> tuple[int, int, int]:
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        directions = 2 if self.bidirectional else 1
        return (self.num_layers * directions, mini_batch,
                self.proj_size if self.proj_size > 0 else self.hidden_size)

    def check_hidden_size(self, hx: Tensor, expected: tuple,
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.shape)))

    def _check_state_dtype(self, input: Tensor, hxs: tuple) -> None:  # noqa: A002
        for h in hxs:
            if h.dtype is not input.dtype:
                raise RuntimeError(f"{_NAMES[self.mode]}: hidden state dtype ({h.dtype}) does "
                                   f"not match input dtype ({input.dtype})")

    # -------------------------------------------------------------- forward
    def _zero_states(self, x: Tensor, expected: tuple) -> tuple:
        """(h_0,) or (h_0, c_0) of zeros in x's dtype / device; ``expected`` is h_0's shape
        (num_layers * directions, N, H_out), c_0's last dim is hidden_size."""
        from tgrad.ops.creation import zeros
        hxs = (zeros(expected, dtype=x.dtype, device=x.device),)
        if self.mode == "LSTM":
            hxs += (zeros(expected[:2] + (self.hidden_size,), dtype=x.dtype,
                          device=x.device),)
        return hxs

    def _check_hx_type(self, hx) -> None:
        """A given hx is a Tensor, or for LSTM a pair (h_0, c_0) of Tensors."""
        if self.mode == "LSTM":
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2
                    and all(isinstance(t, Tensor) for t in hx)):
                raise TypeError(f"LSTM: hx must be a tuple (h_0, c_0) of two Tensors, got "
                                f"{type(hx).__name__}")
        elif not isinstance(hx, Tensor):
            raise TypeError(f"{_NAMES[self.mode]}: hx must be a Tensor, got "
                            f"{type(hx).__name__}")

    def _check_states(self, x: Tensor, hxs: tuple, expected: tuple) -> None:
        """PyTorch's check_hidden_size on h_0 (and c_0), then the states' dtypes against
        x's; ``expected`` as in _zero_states."""
        if self.mode == "LSTM":
            self.check_hidden_size(hxs[0], expected, "Expected hidden[0] size {}, got {}")
            self.check_hidden_size(hxs[1], expected[:2] + (self.hidden_size,),
                                   "Expected hidden[1] size {}, got {}")
        else:
            self.check_hidden_size(hxs[0], expected)
        self._check_state_dtype(x, hxs)

    def _prepare(self, input, hx) -> tuple:  # noqa: A002
        """(input (L, N, H_in) time-major, hx tuple, is_batched) after PyTorch's checks;
        ``hx``: h_0 (RNN, GRU) or (h_0, c_0) (LSTM), or None for zeros."""
        name = _NAMES[self.mode]
        lstm = self.mode == "LSTM"
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected input to be a Tensor or a PackedSequence, "
                            f"got {type(input).__name__}")
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D "
                             + ("tensor instead" if name == "RNN" else "instead"))
        is_batched = input.ndim == 3
        batch_dim = 0 if self.batch_first else 1
        x = input if is_batched else input.unsqueeze(batch_dim)
        if hx is None:
            hxs = self._zero_states(x, self.get_expected_hidden_size(x))
        elif lstm:
            self._check_hx_type(hx)
            want = 3 if is_batched else 2
            if hx[0].ndim != want or hx[1].ndim != want:
                raise RuntimeError(
                    f"For {'batched 3' if is_batched else 'unbatched 2'}-D input, hx and cx "
                    f"should also be {want}-D but got ({hx[0].ndim}-D, {hx[1].ndim}-D) tensors")
            hxs = tuple(hx) if is_batched else (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        else:
            self._check_hx_type(hx)
            want = 3 if is_batched else 2
            if hx.ndim != want:
                raise RuntimeError(
                    f"For {'batched 3' if is_batched else 'unbatched 2'}-D input, hx should "
                    f"also be {want}-D but got {hx.ndim}-D tensor")
            hxs = (hx if is_batched else hx.unsqueeze(1),)
        self.check_input(x)
        self._check_states(x, hxs, self.get_expected_hidden_size(x))
        if self.batch_first:
            x = x.transpose(0, 1)
        if x.shape[0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        return x, hxs, is_batched

    def _prepare_packed(self, packed, hx) -> tuple:
        """(data (sum L_i, H_in), batch_sizes list, hx tuple in the packed (sorted) batch
        order) after PyTorch's checks; a given hx is in the caller's batch order."""
        x, sizes_t, sorted_indices = packed.data, packed.batch_sizes, packed.sorted_indices
        sizes = [int(b) for b in sizes_t.tolist()]
        self.check_input(x, sizes)
        expected = self.get_expected_hidden_size(x, sizes)
        if hx is None:
            return x, sizes, self._zero_states(x, expected)
        self._check_hx_type(hx)
        hxs = tuple(hx) if self.mode == "LSTM" else (hx,)
        self._check_states(x, hxs, expected)
        if sorted_indices is not None:  # PyTorch's permute_hidden
            hxs = tuple(h.index_select(1, sorted_indices) for h in hxs)
        return x, sizes, hxs

    def _run(self, input, hx) -> tuple:  # noqa: A002
        """(output, states tuple) in the caller's layout; a PackedSequence input gives a
        PackedSequence output (``batch_first`` does not apply) and states in the caller's
        batch order."""
        from tgrad.nn.utils.rnn import PackedSequence
        if isinstance(input, PackedSequence):
            x, sizes, hxs = self._prepare_packed(input, hx)
            out, states = rnn(self.mode, x, hxs, self._layer_weights(), self.num_layers,
                              self.dropout, self.training, self.bidirectional, sizes)
            if input.unsorted_indices is not None:
                states = tuple(s.index_select(1, input.unsorted_indices) for s in states)
            return PackedSequence(out, input.batch_sizes, input.sorted_indices,
                                  input.unsorted_indices), states
        x, hxs, is_batched = self._prepare(input, hx)
        out, states = rnn(self.mode, x, hxs, self._layer_weights(), self.num_layers,
                          self.dropout, self.training, self.bidirectional)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not is_batched:
            out = out.squeeze(0 if self.batch_first else 1)
            states = tuple(s.squeeze(1) for s in states)
        return out, states

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu with
    ``nonlinearity='relu'``). forward(input, h_0=None) -> (output, h_n); see RNNBase."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None,
                 **kwargs) -> None:
        _no_proj_size("RNN", kwargs)
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple:  # noqa: A002
        out, (h,) = self._run(input, hx)
        return out, h


class LSTM(RNNBase):
    """LSTM: gates [i, f, g, o] = x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh,
    c_t = sigmoid(f) c_{t-1} + sigmoid(i) tanh(g), h_t = sigmoid(o) tanh(c_t) (then
    h_t W_hr^T when proj_size > 0). forward(input, (h_0, c_0)=None) -> (output, (h_n, c_n));
    c_0 and c_n are (D num_layers, N, hidden_size); see RNNBase."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:  # noqa: A002
        out, (h, c) = self._run(input, hx)
        return out, (h, c)


class GRU(RNNBase):
    """GRU: r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z likewise,
    n = tanh(W_in x + b_in + r (W_hn h + b_hn)), h' = (1 - z) n + z h.
    forward(input, h_0=None) -> (output, h_n); see RNNBase."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None, **kwargs) -> None:
        _no_proj_size("GRU", kwargs)
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple:  # noqa: A002
        out, (h,) = self._run(input, hx)
        return out, h


# ==================================================================== cells
class RNNCellBase(Module):
    """weight_ih (G H, input_size), weight_hh (G H, H), bias_ih and bias_hh (G H,) when
    ``bias``; all ~ U(-1/sqrt(H), 1/sqrt(H)). Input (N, input_size) or unbatched
    (input_size,); hidden states (N, H) or (H,), zeros if omitted."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        from tgrad.ops.creation import empty
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, **kw))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, **kw))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_by_hidden_size(self)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _batched(self, name: str, input, hxs) -> tuple:  # noqa: A002
        """(input (N, H_in), hidden states (N, H) or None, is_batched) after PyTorch's
        dimension checks (input first); ``hxs``: a tuple of the given hidden tensors."""
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected input to be a Tensor, got "
                            f"{type(input).__name__}")
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        labels = ("hidden",) if hxs is None or len(hxs) == 1 else ("hx[0]", "hx[1]")
        for h, label in zip(hxs or (), labels):
            if not isinstance(h, Tensor):
                raise TypeError(f"{name}: expected {label} to be a Tensor, got "
                                f"{type(h).__name__}")
            if h.ndim not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {h.ndim}D "
                                 f"instead")
        is_batched = input.ndim == 2
        if is_batched:
            return input, hxs, True
        return input.unsqueeze(0), None if hxs is None else tuple(h.unsqueeze(0) for h in hxs), \
            False

    def _zeros(self, input: Tensor, n: int) -> tuple:  # noqa: A002
        from tgrad.ops.creation import zeros
        z = zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device)
        return (z,) * n


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (relu with ``nonlinearity='relu'``)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        x, hxs, is_batched = self._batched("RNNCell", input, None if hx is None else (hx,))
        (h,) = self._zeros(x, 1) if hxs is None else hxs
        if self.nonlinearity == "tanh":
            ret = rnn_tanh_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih,
                                self.bias_hh)
        elif self.nonlinearity == "relu":
            ret = rnn_relu_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih,
                                self.bias_hh)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """(h', c') of one LSTM step: gates [i, f, g, o] = x W_ih^T + b_ih + h W_hh^T + b_hh,
    c' = sigmoid(f) c + sigmoid(i) tanh(g), h' = sigmoid(o) tanh(c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:  # noqa: A002
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"LSTMCell: hx must be a tuple (h_0, c_0) of two Tensors, got "
                            f"{type(hx).__name__}")
        x, hxs, is_batched = self._batched("LSTMCell", input, None if hx is None else tuple(hx))
        h, c = self._zeros(x, 2) if hxs is None else hxs
        h, c = lstm_cell(x, (h, c), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """h' of one GRU step: r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z likewise,
    n = tanh(W_in x + b_in + r (W_hn h + b_hn)), h' = (1 - z) n + z h."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        x, hxs, is_batched = self._batched("GRUCell", input, None if hx is None else (hx,))
        (h,) = self._zeros(x, 1) if hxs is None else hxs
        ret = gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)

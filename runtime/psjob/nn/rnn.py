"""paddle.nn's recurrent layers in static mode (Paddle 3.0's paddle.nn.SimpleRNN, GRU, LSTM,
their cells, RNN and BiRNN).

Cells hold Paddle's four parameters, created in Paddle's order with its names and default
initialiser: weight_ih [G*H, input] (`<cell>_N.w_0`), weight_hh [G*H, H] (`.w_1`), bias_ih
[G*H] (`.b_0`), bias_hh [G*H] (`.b_1`), each Uniform(-1/sqrt(H), 1/sqrt(H)); a `False`
attribute makes that parameter a constant (weights 1, biases 0) that is not trained, as
Paddle does. G is 1 (SimpleRNNCell), 3 (GRUCell: gates r, z, c) or 4 (LSTMCell: i, f, g, o).
A cell's forward is one step built from element-wise ops.

RNN(cell, is_reverse, time_major) runs a cell over the time axis, BiRNN(cell_fw, cell_bw) one
cell each way with the outputs concatenated. Paddle builds them in static mode as a while loop
around the cell's traced forward; psjob unrolls that loop when the time axis has a size known
at build time (the same steps in the same order; with `sequence_length` each step's new states
are new * mask + old * (1 - mask) and the outputs are left unmasked, as Paddle's loop does). A
built-in cell run forward with no `sequence_length` and no extra arguments runs as one fused
`rnn` op instead (the same recurrence; any time length). Anything else over a time axis of
unknown size is refused by name: psjob has no while loop.

SimpleRNN, GRU and LSTM (num_layers, direction 'forward' or 'bidirect', time_major, dropout
between layers, sequence_length) are, as Paddle's, a list of one RNN or BiRNN per layer whose
cells' parameters they also hold as weight_ih_l0, weight_hh_l0_reverse, ...; they run as one
`rnn` op (fluid/ops/rnn_ops.py) over every cell's weights, inputs transposed to time-major
around it. They keep Paddle's flat all-weights parameter (`gru_N.w_0`, zeros), which no op
reads, so a paddle.static.save holds Paddle's names.
"""
from __future__ import annotations

import numpy as np

from psjob import tensor as _t
from psjob.fluid import layers as _layers
from psjob.fluid.framework import Variable
from psjob.fluid.initializer import ConstantInitializer, UniformInitializer
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_int, check_variable
from psjob.nn import functional as _F
from psjob.nn.layer import Layer, LayerList

__all__ = ["RNNCellBase", "SimpleRNNCell", "GRUCell", "LSTMCell", "RNN", "BiRNN", "SimpleRNN", "GRU", "LSTM"]

_BIDIRECTIONAL = ("bidirectional", "bidirect")


def _map(fn, *structures):
    """fn over the leaves of equally nested tuples/lists of Variables (paddle.utils.map_structure)."""
    first = structures[0]
    if isinstance(first, (tuple, list)):
        if any(not isinstance(s, (tuple, list)) or len(s) != len(first) for s in structures[1:]):
            raise ValueError("RNN: a cell's new states must have the structure of its previous states")
        return type(first)(_map(fn, *parts) for parts in zip(*structures))
    return fn(*structures)


def _leaves(structure):
    if isinstance(structure, (tuple, list)):
        return [leaf for part in structure for leaf in _leaves(part)]
    return [structure]


# -- cells -------------------------------------------------------------------------------------

class RNNCellBase(Layer):
    """paddle.nn.RNNCellBase: a cell's initial states and their shapes."""

    def get_initial_states(self, batch_ref, shape=None, dtype=None, init_value=0.0, batch_dim_idx=0):
        """States filled with init_value, [batch] + each shape of `shape` (the cell's state_shape
        by default; a leading -1 is the batch); the batch size is batch_ref's dimension
        batch_dim_idx, and the dtype batch_ref's unless given (one dtype for every state)."""
        ref = _leaves(batch_ref)[0]
        check_variable(ref, "batch_ref", "get_initial_states")
        batch = ref.shape[batch_dim_idx] if ref.shape[batch_dim_idx] > 0 else _t.shape(ref)[batch_dim_idx]
        shapes = self.state_shape if shape is None else shape
        dtype = dtype if isinstance(dtype, str) else ref.dtype

        def fill(s):
            dims = list(s)[1:] if list(s)[:1] == [-1] else list(s)
            return _t.full([batch] + dims, float(init_value), dtype)

        return fill(shapes) if _is_shape(shapes) else tuple(fill(s) for s in shapes)

    @property
    def state_shape(self):
        raise NotImplementedError(f"{type(self).__name__} must define state_shape")


def _is_shape(s) -> bool:
    return isinstance(s, (list, tuple)) and all(isinstance(v, int) for v in s)


class _Cell(RNNCellBase):
    """The four parameters of a built-in cell of `gates` gates."""

    GATES = 1

    def __init__(self, kind, input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr):
        super().__init__()
        self.input_size = check_int(input_size, "input_size", kind, minimum=1)
        self.hidden_size = check_int(hidden_size, "hidden_size", kind, minimum=1)
        std = 1.0 / float(np.sqrt(hidden_size))
        rows = self.GATES * self.hidden_size

        def param(shape, attr, is_bias, constant):
            if attr is False:  # Paddle: a constant that is not trained
                p = self.create_parameter(shape, None, is_bias=is_bias, default_initializer=ConstantInitializer(constant))
                p.stop_gradient = True
                p.trainable = False
                return p
            return self.create_parameter(shape, attr, is_bias=is_bias, default_initializer=UniformInitializer(-std, std))

        self.weight_ih = param([rows, self.input_size], weight_ih_attr, False, 1.0)
        self.weight_hh = param([rows, self.hidden_size], weight_hh_attr, False, 1.0)
        self.bias_ih = param([rows], bias_ih_attr, True, 0.0)
        self.bias_hh = param([rows], bias_hh_attr, True, 0.0)

    def _gates(self, inputs, pre_h):
        x = _t.add(_t.matmul(inputs, self.weight_ih, transpose_y=True), self.bias_ih)
        return x, _t.add(_t.matmul(pre_h, self.weight_hh, transpose_y=True), self.bias_hh)


class SimpleRNNCell(_Cell):
    """h = act(W_ih x + b_ih + W_hh h + b_hh), act tanh or relu (paddle.nn.SimpleRNNCell)."""

    GATES = 1

    def __init__(self, input_size, hidden_size, activation="tanh", weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None):
        if activation not in ("tanh", "relu"):
            raise ValueError(f"SimpleRNNCell: activation must be 'tanh' or 'relu', got {activation!r}")
        super().__init__("SimpleRNNCell", input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr,
                         bias_hh_attr)
        self.activation = activation

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def forward(self, inputs, states=None):
        check_variable(inputs, "inputs", "SimpleRNNCell")
        if states is None:
            states = self.get_initial_states(inputs)
        x, h = self._gates(inputs, states)
        pre = _t.add(x, h)
        out = _t.tanh(pre) if self.activation == "tanh" else _layers.relu(pre)
        return out, out


class GRUCell(_Cell):
    """paddle.nn.GRUCell: r, z, c gates; h = (h_prev - c) * z + c."""

    GATES = 3

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None,
                 bias_hh_attr=None, name=None):
        super().__init__("GRUCell", input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr,
                         bias_hh_attr)

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def forward(self, inputs, states=None):
        check_variable(inputs, "inputs", "GRUCell")
        if states is None:
            states = self.get_initial_states(inputs)
        x_gates, h_gates = self._gates(inputs, states)
        x_r, x_z, x_c = _t.split(x_gates, 3, axis=-1)
        h_r, h_z, h_c = _t.split(h_gates, 3, axis=-1)
        r = _t.sigmoid(_t.add(x_r, h_r))
        z = _t.sigmoid(_t.add(x_z, h_z))
        c = _t.tanh(_t.add(x_c, _t.multiply(r, h_c)))
        h = _t.add(_t.multiply(_t.subtract(states, c), z), c)
        return h, h


class LSTMCell(_Cell):
    """paddle.nn.LSTMCell: i, f, g, o gates; states (h, c)."""

    GATES = 4

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None,
                 bias_hh_attr=None, proj_size=0, name=None):
        if proj_size:
            raise ValueError("LSTMCell: proj_size is not supported by psjob")
        super().__init__("LSTMCell", input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr,
                         bias_hh_attr)

    @property
    def state_shape(self):
        return ((self.hidden_size,), (self.hidden_size,))

    def forward(self, inputs, states=None):
        check_variable(inputs, "inputs", "LSTMCell")
        if states is None:
            states = self.get_initial_states(inputs)
        pre_h, pre_c = states
        x_gates, h_gates = self._gates(inputs, pre_h)
        i, f, g, o = _t.split(_t.add(x_gates, h_gates), 4, axis=-1)
        c = _t.add(_t.multiply(_t.sigmoid(f), pre_c), _t.multiply(_t.sigmoid(i), _t.tanh(g)))
        h = _t.multiply(_t.sigmoid(o), _t.tanh(c))
        return h, (h, c)


_MODE = {GRUCell: "GRU", LSTMCell: "LSTM"}


def _cell_mode(cell):
    """The fused op's mode for a built-in cell, else None."""
    if type(cell) is SimpleRNNCell:
        return "RNN_TANH" if cell.activation == "tanh" else "RNN_RELU"
    return _MODE.get(type(cell))


# -- the fused op ------------------------------------------------------------------------------

def _rnn_op(mode, inputs, initial_states, weights, input_size, hidden_size, num_layers=1, bidirectional=False,
            time_major=False, sequence_length=None, dropout=0.0, training=True):
    """Append one `rnn` op; returns (outputs in inputs' layout, the list of final states)."""
    x = inputs if time_major else _layers.transpose(inputs, [1, 0, 2])
    helper = LayerHelper("rnn")
    out = helper.create_variable_for_type_inference(inputs.dtype)
    states = [helper.create_variable_for_type_inference(inputs.dtype) for _ in initial_states]
    reserve = helper.create_variable_for_type_inference("uint8", stop_gradient=True)
    dropout_state = helper.create_variable_for_type_inference("uint8", stop_gradient=True)
    helper.append_op(type="rnn",
                     inputs={"Input": [x], "WeightList": list(weights), "PreState": list(initial_states),
                             "SequenceLength": [] if sequence_length is None else [sequence_length]},
                     outputs={"Out": [out], "State": states, "Reserve": [reserve], "DropoutState": [dropout_state]},
                     attrs={"dropout_prob": float(dropout), "is_bidirec": bool(bidirectional),
                            "input_size": int(input_size), "hidden_size": int(hidden_size),
                            "num_layers": int(num_layers), "mode": mode, "is_test": not training})
    return (out if time_major else _layers.transpose(out, [1, 0, 2])), states


# -- RNN and BiRNN -----------------------------------------------------------------------------

def _run(cell, inputs, initial_states, sequence_length, time_major, is_reverse, kwargs, training):
    """paddle.nn.layer.rnn.rnn in static mode: (outputs, final states)."""
    check_variable(inputs, "inputs", "RNN")
    if len(inputs.shape) < 3:
        raise ValueError(f"RNN: inputs {inputs.name}{list(inputs.shape)} must be [batch, time, ...] "
                         "([time, batch, ...] when time_major)")
    if initial_states is None:
        initial_states = cell.get_initial_states(inputs, batch_dim_idx=1 if time_major else 0)
    mode = _cell_mode(cell)
    if mode and not is_reverse and sequence_length is None and not kwargs and len(inputs.shape) == 3:
        pre = [_layers.unsqueeze(s, [0]) for s in _leaves(initial_states)]
        out, finals = _rnn_op(mode, inputs, pre, [cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh],
                              cell.input_size, cell.hidden_size, time_major=time_major, training=training)
        finals = [_layers.squeeze(s, [0]) for s in finals]
        return out, (tuple(finals) if len(finals) > 1 else finals[0])
    steps = inputs.shape[0 if time_major else 1]
    if steps < 0:
        raise ValueError(f"RNN over a {type(cell).__name__}: the time axis of {inputs.name}{list(inputs.shape)} "
                         "has no size until run time, and psjob has no while loop to run the cell step by step "
                         "(give the input a fixed length, or use a built-in cell forward without sequence_length)")
    rest = list(range(2, len(inputs.shape)))
    x = inputs if time_major else _layers.transpose(inputs, [1, 0] + rest)
    mask = None
    if sequence_length is not None:
        check_variable(sequence_length, "sequence_length", "RNN")
        dtype = _leaves(initial_states)[0].dtype
        mask = _t.cast(_F.sequence_mask(sequence_length, maxlen=steps), dtype)  # [batch, time]
    states, outs = initial_states, [None] * steps
    for t in (range(steps - 1, -1, -1) if is_reverse else range(steps)):
        step_in = _layers.squeeze(_layers.slice(x, axes=[0], starts=[t], ends=[t + 1]), [0])
        out, new_states = cell(step_in, states, **kwargs)
        check_variable(out, "a cell's output", "RNN")
        if mask is not None:
            m = _layers.slice(mask, axes=[1], starts=[t], ends=[t + 1])  # [batch, 1]
            new_states = _map(lambda new, old, m=m: new * m + old * (1.0 - m), new_states, states)
        states, outs[t] = new_states, out
    return _t.stack(outs, axis=0 if time_major else 1), states


class RNN(Layer):
    """paddle.nn.RNN: outputs [batch, time, ...] ([time, batch, ...] when time_major) and the
    final states."""

    def __init__(self, cell, is_reverse=False, time_major=False):
        super().__init__()
        if not callable(cell):
            raise ValueError(f"RNN: cell must be a layer computing (outputs, new_states), got {type(cell).__name__}")
        self.cell, self.is_reverse, self.time_major = cell, bool(is_reverse), bool(time_major)

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        return _run(self.cell, inputs, initial_states, sequence_length, self.time_major, self.is_reverse, kwargs,
                    self.training)


class BiRNN(Layer):
    """paddle.nn.BiRNN: cell_fw forward, cell_bw reversed, outputs concatenated on the last axis,
    final states (states_fw, states_bw)."""

    def __init__(self, cell_fw, cell_bw, time_major=False):
        super().__init__()
        self.cell_fw, self.cell_bw, self.time_major = cell_fw, cell_bw, bool(time_major)

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        if initial_states is None:
            initial_states = (None, None)
        elif not isinstance(initial_states, (list, tuple)) or len(initial_states) != 2:
            raise ValueError("BiRNN: initial_states must be (states_fw, states_bw)")
        out_fw, states_fw = _run(self.cell_fw, inputs, initial_states[0], sequence_length, self.time_major, False,
                                 kwargs, self.training)
        out_bw, states_bw = _run(self.cell_bw, inputs, initial_states[1], sequence_length, self.time_major, True,
                                 kwargs, self.training)
        return _t.concat([out_fw, out_bw], axis=-1), (states_fw, states_bw)


# -- SimpleRNN, GRU, LSTM ----------------------------------------------------------------------

class _RNNBase(LayerList):
    """Paddle's RNNBase: one RNN or BiRNN per layer, run as one fused `rnn` op."""

    CELL: type = SimpleRNNCell

    def __init__(self, input_size, hidden_size, num_layers, direction, time_major, dropout, attrs, **cell_args):
        super().__init__()
        kind = type(self).__name__
        if direction not in ("forward",) + _BIDIRECTIONAL:
            raise ValueError(f"{kind}: direction must be 'forward' or 'bidirect' (or 'bidirectional'), "
                             f"got {direction!r}")
        self.num_layers = check_int(num_layers, "num_layers", kind, minimum=1)
        if not 0.0 <= float(dropout) <= 1.0:
            raise ValueError(f"{kind}: dropout must lie in [0, 1], got {dropout}")
        self.input_size, self.hidden_size = input_size, hidden_size
        self.time_major, self.dropout = bool(time_major), float(dropout)
        self.num_directions = 2 if direction in _BIDIRECTIONAL else 1
        cells = []
        for i in range(self.num_layers):
            in_size = input_size if i == 0 else self.num_directions * hidden_size
            if self.num_directions == 1:
                cell = self.CELL(in_size, hidden_size, **attrs, **cell_args)
                self.append(RNN(cell, False, time_major))
                cells.append(cell)
            else:
                fw = self.CELL(in_size, hidden_size, **attrs, **cell_args)
                bw = self.CELL(in_size, hidden_size, **attrs, **cell_args)
                self.append(BiRNN(fw, bw, time_major))
                cells += [fw, bw]
        for k, cell in enumerate(cells):
            suffix = f"l{k // self.num_directions}" + ("_reverse" if k % self.num_directions else "")
            for attr in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                setattr(self, f"{attr}_{suffix}", getattr(cell, attr))
        self._mode = _cell_mode(cells[0])
        self._states = 2 if self._mode == "LSTM" else 1
        # Paddle's cudnn layout: every cell's two weights, then every cell's two biases.
        self._all_weights = ([w for c in cells for w in (c.weight_ih, c.weight_hh)]
                             + [b for c in cells for b in (c.bias_ih, c.bias_hh)])
        total = int(sum(np.prod(w.shape) for w in self._all_weights))
        self._flat_weight = [self.create_parameter([total], default_initializer=ConstantInitializer(0.0))]

    def forward(self, inputs, initial_states=None, sequence_length=None):
        kind = type(self).__name__
        check_variable(inputs, "inputs", kind)
        if len(inputs.shape) != 3:
            raise ValueError(f"{kind}: inputs {inputs.name}{list(inputs.shape)} must be 3-D")
        if initial_states is None:
            batch_index = 1 if self.time_major else 0
            batch = inputs.shape[batch_index] if inputs.shape[batch_index] > 0 else _t.shape(inputs)[batch_index]
            shape = [self.num_layers * self.num_directions, batch, self.hidden_size]
            initial_states = [_t.full(shape, 0.0, inputs.dtype) for _ in range(self._states)]
        elif isinstance(initial_states, Variable):
            initial_states = [initial_states]
        initial_states = list(initial_states)
        if len(initial_states) != self._states:
            raise ValueError(f"{kind}: initial_states must be {'(h0, c0)' if self._states == 2 else 'h0'}, "
                             f"got {len(initial_states)} tensors")
        if sequence_length is not None:
            check_variable(sequence_length, "sequence_length", kind)
        out, states = _rnn_op(self._mode, inputs, initial_states, self._all_weights, self.input_size,
                              self.hidden_size, self.num_layers, self.num_directions == 2, self.time_major,
                              sequence_length, self.dropout, self.training)
        return out, (tuple(states) if len(states) > 1 else states[0])


class SimpleRNN(_RNNBase):
    CELL = SimpleRNNCell

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 activation="tanh", weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None,
                 name=None):
        super().__init__(input_size, hidden_size, num_layers, direction, time_major, dropout,
                         dict(weight_ih_attr=weight_ih_attr, weight_hh_attr=weight_hh_attr, bias_ih_attr=bias_ih_attr,
                              bias_hh_attr=bias_hh_attr), activation=activation)


class GRU(_RNNBase):
    CELL = GRUCell

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__(input_size, hidden_size, num_layers, direction, time_major, dropout,
                         dict(weight_ih_attr=weight_ih_attr, weight_hh_attr=weight_hh_attr, bias_ih_attr=bias_ih_attr,
                              bias_hh_attr=bias_hh_attr))


class LSTM(_RNNBase):
    CELL = LSTMCell

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, proj_size=0,
                 name=None):
        super().__init__(input_size, hidden_size, num_layers, direction, time_major, dropout,
                         dict(weight_ih_attr=weight_ih_attr, weight_hh_attr=weight_hh_attr, bias_ih_attr=bias_ih_attr,
                              bias_hh_attr=bias_hh_attr), proj_size=proj_size)

"""paddle.nn.GRU and GRUCell in static mode.

GRUCell holds Paddle's four parameters, created in Paddle's order and with its names and
default initialiser: weight_ih [3H, input] (`gru_cell_N.w_0`), weight_hh [3H, H] (`.w_1`),
bias_ih [3H] (`.b_0`), bias_hh [3H] (`.b_1`), each Uniform(-1/sqrt(H), 1/sqrt(H)); gates in
the order r, z, c (paddle.nn.GRUCell). Its forward is one step built from element-wise ops.

GRU(input_size, hidden_size, num_layers, direction='forward', time_major) runs as Paddle's
static GRU does: one `rnn` op (fluid/ops/rnn_ops.py) over its cells' weights, inputs
transposed to time-major around it, the initial state zeros unless given. As Paddle, it also
keeps a flat all-weights parameter (`gru_N.w_0`, zeros), which no op reads, so a
paddle.static.save holds the same names as Paddle's. Bidirectional runs, dropout between
layers, sequence_length and bias-free cells are refused.

RNN(cell, is_reverse, time_major) runs a cell over the time axis (paddle.nn.RNN). Paddle builds
it in static mode as a while loop whose body is the cell's forward traced once; psjob has no
while op, so an RNN over a GRUCell runs as the same one-layer `rnn` op GRU uses, over that
cell's own four parameters (the same recurrence, gates r, z, c). Other cells, is_reverse and
sequence_length are refused by name.
"""
from __future__ import annotations

import numpy as np

from psjob import tensor as _t
from psjob.fluid import layers as _layers
from psjob.fluid.initializer import ConstantInitializer, UniformInitializer
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_int, check_variable
from psjob.nn.layer import Layer

__all__ = ["GRUCell", "GRU", "RNN"]


class GRUCell(Layer):
    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None,
                 bias_hh_attr=None, name=None):
        super().__init__()
        self.input_size = check_int(input_size, "input_size", "GRUCell", minimum=1)
        self.hidden_size = check_int(hidden_size, "hidden_size", "GRUCell", minimum=1)
        if bias_ih_attr is False or bias_hh_attr is False:
            raise ValueError("GRUCell: cells without biases (bias_*_attr=False) are not supported by psjob")
        std = 1.0 / float(np.sqrt(hidden_size))
        init = UniformInitializer(-std, std)
        h3 = 3 * self.hidden_size
        self.weight_ih = self.create_parameter([h3, self.input_size], weight_ih_attr, default_initializer=init)
        self.weight_hh = self.create_parameter([h3, self.hidden_size], weight_hh_attr, default_initializer=init)
        self.bias_ih = self.create_parameter([h3], bias_ih_attr, is_bias=True, default_initializer=init)
        self.bias_hh = self.create_parameter([h3], bias_hh_attr, is_bias=True, default_initializer=init)

    def forward(self, inputs, states=None):
        check_variable(inputs, "inputs", "GRUCell")
        if states is None:
            states = _t.full([_t.shape(inputs)[0], self.hidden_size], 0.0, inputs.dtype)
        x_gates = _t.add(_t.matmul(inputs, self.weight_ih, transpose_y=True), self.bias_ih)
        h_gates = _t.add(_t.matmul(states, self.weight_hh, transpose_y=True), self.bias_hh)
        x_r, x_z, x_c = _t.split(x_gates, 3, axis=-1)
        h_r, h_z, h_c = _t.split(h_gates, 3, axis=-1)
        r = _t.sigmoid(_t.add(x_r, h_r))
        z = _t.sigmoid(_t.add(x_z, h_z))
        c = _t.tanh(_t.add(x_c, _t.multiply(r, h_c)))
        h = _t.add(_t.multiply(_t.subtract(states, c), z), c)
        return h, h


class GRU(Layer):
    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__()
        if direction != "forward":
            raise ValueError(f"GRU(direction={direction!r}) is not supported by psjob: only 'forward'")
        self.num_layers = check_int(num_layers, "num_layers", "GRU", minimum=1)
        if dropout and self.num_layers > 1:
            raise ValueError("GRU: dropout between layers is not supported by psjob")
        self.input_size, self.hidden_size = input_size, hidden_size
        self.time_major, self.dropout = bool(time_major), float(dropout)
        cells = []
        for i in range(self.num_layers):
            cell = GRUCell(input_size if i == 0 else hidden_size, hidden_size, weight_ih_attr, weight_hh_attr,
                           bias_ih_attr, bias_hh_attr)
            self.add_sublayer(str(i), cell)
            cells.append(cell)
        # Paddle's cudnn layout: every layer's two weights, then every layer's two biases.
        self._all_weights = ([w for c in cells for w in (c.weight_ih, c.weight_hh)]
                             + [b for c in cells for b in (c.bias_ih, c.bias_hh)])
        total = int(sum(np.prod(w.shape) for w in self._all_weights))
        self._flat_weight = [self.create_parameter([total], default_initializer=ConstantInitializer(0.0))]

    def forward(self, inputs, initial_states=None, sequence_length=None):
        check_variable(inputs, "inputs", "GRU")
        if sequence_length is not None:
            raise ValueError("GRU: sequence_length is not supported by psjob (pad the batch to one length)")
        if len(inputs.shape) != 3:
            raise ValueError(f"GRU: inputs {inputs.name}{list(inputs.shape)} must be 3-D")
        out, state = _gru_op(inputs, initial_states, self.time_major, self._all_weights, self.input_size,
                             self.hidden_size, self.num_layers, self.dropout, self.training)
        return out, state


class RNN(Layer):
    """paddle.nn.RNN over a GRUCell: outputs [batch, time, H] ([time, batch, H] when time_major)
    and the final state [batch, H]."""

    def __init__(self, cell, is_reverse=False, time_major=False):
        super().__init__()
        if not isinstance(cell, GRUCell):
            raise ValueError(f"RNN: a {type(cell).__name__} cell is not supported by psjob: only paddle.nn.GRUCell "
                             "(psjob has no while loop to run another cell's forward step by step)")
        if is_reverse:
            raise ValueError("RNN(is_reverse=True) is not supported by psjob")
        self.cell, self.is_reverse, self.time_major = cell, bool(is_reverse), bool(time_major)

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        check_variable(inputs, "inputs", "RNN")
        if sequence_length is not None:
            raise ValueError("RNN: sequence_length is not supported by psjob (pad the batch to one length)")
        if kwargs:
            raise ValueError(f"RNN: extra cell arguments {sorted(kwargs)} are not supported by psjob")
        if len(inputs.shape) != 3:
            raise ValueError(f"RNN: inputs {inputs.name}{list(inputs.shape)} must be 3-D")
        if initial_states is not None:
            check_variable(initial_states, "initial_states", "RNN")
            initial_states = _layers.unsqueeze(initial_states, [0])
        cell = self.cell
        out, state = _gru_op(inputs, initial_states, self.time_major,
                             [cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh],
                             cell.input_size, cell.hidden_size, 1, 0.0, self.training)
        return out, _layers.squeeze(state, [0])


def _gru_op(inputs, initial_states, time_major, weights, input_size, hidden_size, num_layers, dropout, training):
    """Append one `rnn` op in mode GRU; returns (outputs, final states [num_layers, B, H])."""
    x = inputs if time_major else _layers.transpose(inputs, [1, 0, 2])
    if initial_states is None:
        batch = _t.shape(inputs)[1 if time_major else 0]
        initial_states = _t.full([num_layers, batch, hidden_size], 0.0, inputs.dtype)
    helper = LayerHelper("rnn")
    out = helper.create_variable_for_type_inference(inputs.dtype)
    state = helper.create_variable_for_type_inference(inputs.dtype)
    reserve = helper.create_variable_for_type_inference("uint8", stop_gradient=True)
    dropout_state = helper.create_variable_for_type_inference("uint8", stop_gradient=True)
    helper.append_op(type="rnn",
                     inputs={"Input": [x], "WeightList": list(weights), "PreState": [initial_states],
                             "SequenceLength": []},
                     outputs={"Out": [out], "State": [state], "Reserve": [reserve],
                              "DropoutState": [dropout_state]},
                     attrs={"dropout_prob": dropout, "is_bidirec": False, "input_size": input_size,
                            "hidden_size": hidden_size, "num_layers": num_layers, "mode": "GRU",
                            "is_test": not training})
    return (out if time_major else _layers.transpose(out, [1, 0, 2])), state

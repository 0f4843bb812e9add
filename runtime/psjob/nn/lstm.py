"""paddle.nn.LSTM and LSTMCell in static mode (Paddle 3.0.0's nn/layer/rnn.py).

LSTMCell holds Paddle's four parameters, created in Paddle's order with its names and default
initialiser: weight_ih [4H, input] (`lstm_cell_N.w_0`), weight_hh [4H, H] (`.w_1`), bias_ih
[4H] (`.b_0`), bias_hh [4H] (`.b_1`), each Uniform(-1/sqrt(H), 1/sqrt(H)); gates in the order
i, f, g, o. Its forward is one step built from element-wise ops.

LSTM(input_size, hidden_size, num_layers, direction, time_major) is, as Paddle's, a list of
one wrapper per layer (`rnn` forward, `bi_rnn` with cell_fw / cell_bw bidirectional) whose
cells' parameters it also holds as weight_ih_l0, weight_hh_l0_reverse, ...; it runs as
Paddle's static LSTM does: one `rnn` op in mode 'LSTM' (fluid/ops/rnn_lstm.py) over all the
cells' weights, inputs transposed to time-major around it, the initial states zeros unless
given. It keeps Paddle's flat all-weights parameter (`lstm_N.w_0`, zeros), which no op reads,
so a paddle.static.save holds Paddle's names. Dropout between layers, sequence_length,
proj_size and bias-free cells are refused.
"""
from __future__ import annotations

import numpy as np

from psjob import tensor as _t
from psjob.fluid import layers as _layers
from psjob.fluid.initializer import ConstantInitializer, UniformInitializer
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_int, check_variable
from psjob.nn.layer import Layer, LayerList

__all__ = ["LSTMCell", "LSTM"]

_BIDIRECTIONAL = ("bidirectional", "bidirect")


class LSTMCell(Layer):
    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None,
                 bias_hh_attr=None, proj_size=0, name=None):
        super().__init__()
        self.input_size = check_int(input_size, "input_size", "LSTMCell", minimum=1)
        self.hidden_size = check_int(hidden_size, "hidden_size", "LSTMCell", minimum=1)
        if proj_size:
            raise ValueError("LSTMCell: proj_size is not supported by psjob")
        if bias_ih_attr is False or bias_hh_attr is False:
            raise ValueError("LSTMCell: cells without biases (bias_*_attr=False) are not supported by psjob")
        std = 1.0 / float(np.sqrt(hidden_size))
        init = UniformInitializer(-std, std)
        h4 = 4 * self.hidden_size
        self.weight_ih = self.create_parameter([h4, self.input_size], weight_ih_attr, default_initializer=init)
        self.weight_hh = self.create_parameter([h4, self.hidden_size], weight_hh_attr, default_initializer=init)
        self.bias_ih = self.create_parameter([h4], bias_ih_attr, is_bias=True, default_initializer=init)
        self.bias_hh = self.create_parameter([h4], bias_hh_attr, is_bias=True, default_initializer=init)

    def forward(self, inputs, states=None):
        check_variable(inputs, "inputs", "LSTMCell")
        if states is None:
            zeros = _t.full([_t.shape(inputs)[0], self.hidden_size], 0.0, inputs.dtype)
            states = (zeros, zeros)
        pre_h, pre_c = states
        gates = _t.add(_t.matmul(inputs, self.weight_ih, transpose_y=True), self.bias_ih)
        gates = _t.add(gates, _t.add(_t.matmul(pre_h, self.weight_hh, transpose_y=True), self.bias_hh))
        i, f, g, o = _t.split(gates, 4, axis=-1)
        c = _t.add(_t.multiply(_t.sigmoid(f), pre_c), _t.multiply(_t.sigmoid(i), _t.tanh(g)))
        h = _t.multiply(_t.sigmoid(o), _t.tanh(c))
        return h, (h, c)


class _Wrapper(Layer):
    """Paddle's per-layer RNN / BiRNN holder (its names only: LSTM runs the fused op)."""

    def __init__(self, scope, cells):
        super().__init__(scope)
        for name, cell in cells:
            setattr(self, name, cell)


class LSTM(LayerList):
    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, proj_size=0,
                 name=None):
        super().__init__()
        if direction not in ("forward",) + _BIDIRECTIONAL:
            raise ValueError(f"LSTM: direction must be 'forward' or 'bidirect' (or 'bidirectional'), "
                             f"got {direction!r}")
        self.num_layers = check_int(num_layers, "num_layers", "LSTM", minimum=1)
        if dropout and self.num_layers > 1:
            raise ValueError("LSTM: dropout between layers is not supported by psjob")
        self.input_size, self.hidden_size = input_size, hidden_size
        self.time_major, self.dropout = bool(time_major), float(dropout)
        self.num_directions = 2 if direction in _BIDIRECTIONAL else 1
        attrs = (weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)
        cells = []
        for i in range(self.num_layers):
            in_size = input_size if i == 0 else self.num_directions * hidden_size
            if self.num_directions == 1:
                cell = LSTMCell(in_size, hidden_size, *attrs, proj_size=proj_size)
                self.append(_Wrapper("rnn", [("cell", cell)]))
                cells.append(cell)
            else:
                fw, bw = LSTMCell(in_size, hidden_size, *attrs), LSTMCell(in_size, hidden_size, *attrs)
                self.append(_Wrapper("bi_rnn", [("cell_fw", fw), ("cell_bw", bw)]))
                cells += [fw, bw]
        for k, cell in enumerate(cells):
            suffix = f"l{k // self.num_directions}" + ("_reverse" if k % self.num_directions else "")
            for attr in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                setattr(self, f"{attr}_{suffix}", getattr(cell, attr))
        # Paddle's cudnn layout: every cell's two weights, then every cell's two biases.
        self._all_weights = ([w for c in cells for w in (c.weight_ih, c.weight_hh)]
                             + [b for c in cells for b in (c.bias_ih, c.bias_hh)])
        total = int(sum(np.prod(w.shape) for w in self._all_weights))
        self._flat_weight = [self.create_parameter([total], default_initializer=ConstantInitializer(0.0))]

    def forward(self, inputs, initial_states=None, sequence_length=None):
        check_variable(inputs, "inputs", "LSTM")
        if sequence_length is not None:
            raise ValueError("LSTM: sequence_length is not supported by psjob (pad the batch to one length)")
        if len(inputs.shape) != 3:
            raise ValueError(f"LSTM: inputs {inputs.name}{list(inputs.shape)} must be 3-D")
        x = inputs if self.time_major else _layers.transpose(inputs, [1, 0, 2])
        if initial_states is None:
            batch = _t.shape(inputs)[1 if self.time_major else 0]
            shape = [self.num_layers * self.num_directions, batch, self.hidden_size]
            initial_states = (_t.full(shape, 0.0, inputs.dtype), _t.full(shape, 0.0, inputs.dtype))
        if len(initial_states) != 2:
            raise ValueError(f"LSTM: initial_states must be (h0, c0), got {len(initial_states)} tensors")
        helper = LayerHelper("rnn")
        out = helper.create_variable_for_type_inference(inputs.dtype)
        states = [helper.create_variable_for_type_inference(inputs.dtype) for _ in range(2)]
        reserve = helper.create_variable_for_type_inference("uint8", stop_gradient=True)
        dropout_state = helper.create_variable_for_type_inference("uint8", stop_gradient=True)
        helper.append_op(type="rnn",
                         inputs={"Input": [x], "WeightList": self._all_weights, "PreState": list(initial_states),
                                 "SequenceLength": []},
                         outputs={"Out": [out], "State": states, "Reserve": [reserve],
                                  "DropoutState": [dropout_state]},
                         attrs={"dropout_prob": self.dropout, "is_bidirec": self.num_directions == 2,
                                "input_size": self.input_size, "hidden_size": self.hidden_size,
                                "num_layers": self.num_layers, "mode": "LSTM", "is_test": not self.training})
        return (out if self.time_major else _layers.transpose(out, [1, 0, 2])), tuple(states)

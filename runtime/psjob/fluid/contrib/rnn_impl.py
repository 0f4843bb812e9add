"""fluid.contrib.layers.basic_gru and basic_lstm (Paddle 1.8's contrib/layers/rnn_impl.py):
multi-layer, optionally bidirectional GRU / LSTM over padded input, built from fluid ops.

Paddle builds them as a StaticRNN around BasicGRUUnit / BasicLSTMUnit; psjob has no recurrent
op, so the steps are unrolled, which needs the time axis's size at build time (the input's
second dimension, or its first when batch_first=False). The arithmetic is Paddle's, op for op:

* GRU unit (weights [I + H, 2H] and [I + H, H], biases [2H] and [H]): r, u =
  split(act_g([x, h] @ W_g + b_g)); c = act([x, r * h] @ W_c + b_c); h' = u * h + (1 - u) * c.
* LSTM unit (weight [I + H, 4H], bias [4H]): i, j, f, o = split([x, h] @ W + b);
  c' = c * sigmoid(f + forget_bias) + sigmoid(i) * tanh(j); h' = tanh(c') * sigmoid(o) (Paddle's
  unit takes gate_activation and activation but uses sigmoid and tanh).
* With sequence_length, a step past a sequence's end keeps its states: new * m - old * (m - 1).
  The reverse direction runs the steps from the last to the first (Paddle reverses the padded
  input, so it starts on the padding, whose steps keep the initial state).
* Layer k > 0 reads layer k - 1's output (dropped out when dropout_prob > 0, also after the
  last layer, as Paddle's loop does). Parameters are named as Paddle's:
  `<name>_layers_<k>/BasicGRUUnit_0.w_0`, `..._reverse_layers_<k>/...` for the reverse direction.
"""
from __future__ import annotations

import copy

from psjob.fluid import unique_name
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers import manip, nn, sequence_lod, tensor
from psjob.fluid.layers._checks import check_int, check_variable
from psjob.fluid.param_attr import ParamAttr

__all__ = ["basic_gru", "basic_lstm"]


def _suffixed(attr, suffix):
    """Paddle's per-layer attribute: a copy with suffix appended to a given name."""
    attr = ParamAttr._to_attr(attr) if attr is not None else None
    if attr is None or attr is False or attr.name is None:
        return attr
    attr = copy.deepcopy(attr)
    attr.name += suffix
    return attr


class _GRUUnit:
    def __init__(self, scope, hidden, param_attr, bias_attr, gate_activation, activation, dtype):
        self.helper = LayerHelper("basic_gru", unique_name.generate(f"{scope}/BasicGRUUnit"))
        self.hidden, self.param_attr, self.bias_attr, self.dtype = hidden, param_attr, bias_attr, dtype
        self.gate_act, self.act = gate_activation or nn.sigmoid, activation or nn.tanh
        self.built = False

    def _build(self, input_size):
        h, p = self.hidden, self.helper
        self.w_gate = p.create_parameter(_suffixed(self.param_attr, "_gate"), [input_size + h, 2 * h], self.dtype)
        self.w_cand = p.create_parameter(_suffixed(self.param_attr, "_candidate"), [input_size + h, h], self.dtype)
        self.b_gate = p.create_parameter(_suffixed(self.bias_attr, "_gate"), [2 * h], self.dtype, is_bias=True)
        self.b_cand = p.create_parameter(_suffixed(self.bias_attr, "_candidate"), [h], self.dtype, is_bias=True)
        self.built = True

    def __call__(self, x, pre_hidden):
        if not self.built:
            self._build(x.shape[-1])
        gates = self.gate_act(nn.elementwise_add(nn.matmul(manip.concat([x, pre_hidden], 1), self.w_gate),
                                                 self.b_gate))
        r, u = manip.split(gates, 2, dim=1)
        cand = nn.matmul(manip.concat([x, r * pre_hidden], 1), self.w_cand)
        c = self.act(nn.elementwise_add(cand, self.b_cand))
        return [u * pre_hidden + (1 - u) * c]


class _LSTMUnit:
    def __init__(self, scope, hidden, param_attr, bias_attr, forget_bias, dtype):
        self.helper = LayerHelper("basic_lstm", unique_name.generate(f"{scope}/BasicLSTMUnit"))
        self.hidden, self.param_attr, self.bias_attr, self.dtype = hidden, param_attr, bias_attr, dtype
        self.forget_bias = tensor.fill_constant([1], dtype, float(forget_bias))
        self.forget_bias.stop_gradient = False
        self.built = False

    def __call__(self, x, pre_hidden, pre_cell):
        if not self.built:
            h = self.hidden
            self.w = self.helper.create_parameter(self.param_attr, [x.shape[-1] + h, 4 * h], self.dtype)
            self.b = self.helper.create_parameter(self.bias_attr, [4 * h], self.dtype, is_bias=True)
            self.built = True
        gates = nn.elementwise_add(nn.matmul(manip.concat([x, pre_hidden], 1), self.w), self.b)
        i, j, f, o = manip.split(gates, 4, dim=-1)
        cell = nn.elementwise_add(nn.elementwise_mul(pre_cell, nn.sigmoid(nn.elementwise_add(f, self.forget_bias))),
                                  nn.elementwise_mul(nn.sigmoid(i), nn.tanh(j)))
        return [nn.tanh(cell) * nn.sigmoid(o), cell]


def _check(layer, input, hidden_size, num_layers, batch_first):
    check_variable(input, "input", layer)
    hidden_size = check_int(hidden_size, "hidden_size", layer, minimum=1)
    num_layers = check_int(num_layers, "num_layers", layer, minimum=1)
    if len(input.shape) != 3:
        raise ValueError(f"{layer}: input {input.name}{list(input.shape)} must be 3-D "
                         f"({'[batch, time, size]' if batch_first else '[time, batch, size]'})")
    steps = input.shape[1 if batch_first else 0]
    if steps < 0:
        raise ValueError(f"{layer}: the time axis of {input.name}{list(input.shape)} has no size until run time; "
                         "psjob unrolls the steps at build time (Paddle runs a StaticRNN): give it a fixed length")
    if input.shape[-1] < 0:
        raise ValueError(f"{layer}: input {input.name}{list(input.shape)} needs a known last dimension")
    return hidden_size, num_layers, steps


def _initial(init, layer_index, direction, num_layers, dirs, hidden, like):
    """State [batch, hidden] of one layer and direction: init's [num_layers * dirs, batch, hidden]
    entry, or zeros."""
    if init is None:
        return tensor.fill_constant_batch_size_like(like, [-1, hidden], like.dtype, 0.0)
    k = layer_index * dirs + direction
    return manip.squeeze(nn.slice(init, axes=[0], starts=[k], ends=[k + 1]), [0])


def _run(units, x_tm, steps, inits, mask, reverse, dropout_prob, dropout_impl):
    """One direction over time-major x: (outputs [T, batch, H], final states per layer)."""
    states = inits
    outs = [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        step = manip.squeeze(nn.slice(x_tm, axes=[0], starts=[t], ends=[t + 1]), [0])
        m = None if mask is None else nn.slice(mask, axes=[1], starts=[t], ends=[t + 1])  # [batch, 1]
        for k, unit in enumerate(units):
            new = unit(step, *states[k])
            if m is not None:
                new = [nn.elementwise_mul(n, m) - nn.elementwise_mul(old, m - 1.0) for n, old in zip(new, states[k])]
            states[k] = new
            step = new[0]
            if dropout_prob is not None and dropout_prob > 0.0:
                step = nn.dropout(step, dropout_prob=dropout_prob, dropout_implementation=dropout_impl)
        outs[t] = step
    return manip.stack(outs, axis=0), states


def _basic_rnn(layer, make_unit, n_states, input, inits, hidden_size, num_layers, sequence_length, dropout_prob,
               bidirectional, batch_first, param_attr, bias_attr, name, dropout_impl, bw_bias_default):
    hidden_size, num_layers, steps = _check(layer, input, hidden_size, num_layers, batch_first)
    dirs = 2 if bidirectional else 1
    units = []
    for direction, tag, scope in ((0, "fw", "_layers_"), (1, "bw", "_reverse_layers_"))[:dirs]:
        units.append([make_unit(f"{name}{scope}{k}", _suffixed(param_attr, f"_{tag}_w_{k}"),
                                _suffixed(bias_attr, f"_{tag}_b_{k}") if bias_attr is not None and
                                ParamAttr._to_attr(bias_attr).name is not None else
                                (bw_bias_default if direction else bias_attr))
                      for k in range(num_layers)])
    x_tm = manip.transpose(input, [1, 0, 2]) if batch_first else input
    mask = None
    if sequence_length is not None:
        check_variable(sequence_length, "sequence_length", layer)
        mask = sequence_lod.sequence_mask(sequence_length, maxlen=steps, dtype="float32")  # [batch, T]
    like = manip.squeeze(nn.slice(x_tm, axes=[0], starts=[0], ends=[1]), [0])
    outs, finals = [], []
    for direction in range(dirs):
        states = [[_initial(None if inits[s] is None else inits[s], k, direction, num_layers, dirs, hidden_size, like)
                   for s in range(n_states)] for k in range(num_layers)]
        out, last = _run(units[direction], x_tm, steps, states, mask, direction == 1, dropout_prob, dropout_impl)
        outs.append(out)
        finals.append([manip.reshape(manip.concat([last[k][s] for k in range(num_layers)], axis=0),
                                     [num_layers, -1, hidden_size]) for s in range(n_states)])
    rnn_out = outs[0] if dirs == 1 else manip.concat(outs, axis=2)
    if batch_first:
        rnn_out = manip.transpose(rnn_out, [1, 0, 2])
    if dirs == 2:
        finals = [[manip.reshape(manip.concat([finals[0][s], finals[1][s]], axis=1),
                                 [num_layers * dirs, -1, hidden_size]) for s in range(n_states)]]
    return [rnn_out] + finals[0]


def basic_gru(input, init_hidden, hidden_size, num_layers=1, sequence_length=None, dropout_prob=0.0,
              bidirectional=False, batch_first=True, param_attr=None, bias_attr=None, gate_activation=None,
              activation=None, dtype="float32", name="basic_gru"):
    """(rnn_out [batch, time, H * dirs], last_hidden [num_layers * dirs, batch, H]) of a GRU
    (Paddle 1.8 API docs, fluid.contrib.layers.basic_gru); init_hidden is
    [num_layers * dirs, batch, H] or None (zeros)."""
    def unit(scope, p, b):
        return _GRUUnit(scope, hidden_size, p, b, gate_activation, activation, dtype)
    out, last = _basic_rnn("basic_gru", unit, 1, input, [init_hidden], hidden_size, num_layers, sequence_length,
                           dropout_prob, bidirectional, batch_first, param_attr, bias_attr, name,
                           "downgrade_in_infer", bias_attr)
    return out, last


def basic_lstm(input, init_hidden, init_cell, hidden_size, num_layers=1, sequence_length=None, dropout_prob=0.0,
               bidirectional=False, batch_first=True, param_attr=None, bias_attr=None, gate_activation=None,
               activation=None, forget_bias=1.0, dtype="float32", name="basic_lstm"):
    """(rnn_out [batch, time, H * dirs], last_hidden, last_cell [num_layers * dirs, batch, H]) of an
    LSTM (Paddle 1.8 API docs, fluid.contrib.layers.basic_lstm); init_hidden and init_cell are
    [num_layers * dirs, batch, H] or None (zeros; Paddle uses both or neither)."""
    if (init_hidden is None) != (init_cell is None):
        raise ValueError("basic_lstm: give both init_hidden and init_cell, or neither")

    def unit(scope, p, b):
        return _LSTMUnit(scope, hidden_size, p, b, forget_bias, dtype)
    # Paddle's reverse layers take param_attr as their bias attribute when bias_attr has no name.
    out, last_h, last_c = _basic_rnn("basic_lstm", unit, 2, input, [init_hidden, init_cell], hidden_size, num_layers,
                                     sequence_length, dropout_prob, bidirectional, batch_first, param_attr,
                                     bias_attr, name, "upscale_in_train", param_attr)
    return out, last_h, last_c

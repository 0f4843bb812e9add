"""`rnn` in mode 'GRU': Paddle's fused recurrent op (behind paddle.nn.GRU in static mode),
time-major, forward direction, any number of layers, no SequenceLength.

Inputs: Input [T, B, I]; WeightList, for every layer its w_ih [3H, in], w_hh [3H, H], then
every layer's b_ih [3H], b_hh [3H] (Paddle's cudnn layout: all weights, then all biases);
PreState [h0: [num_layers, B, H]]. Outputs: Out [T, B, H], State [[num_layers, B, H]], and
Reserve / DropoutState (Paddle's scratch, written empty). Each step, as Paddle's GRUCell
(paddle.nn.GRUCell; gates in the order r, z, c):

    r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
    z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
    c = tanh(W_ic x + b_ic + r * (W_hc h + b_hc))
    h = z * h + (1 - z) * c

The gradient recomputes the gates and runs back through time. Mode 'LSTM' (forward or
bidirectional) is rnn_lstm.py's. Dropout between layers, the SimpleRNN modes, bidirectional
GRUs and SequenceLength are refused by name.
"""
from __future__ import annotations

from psjob.fluid.framework import GraphError
from psjob.fluid.ops import rnn_lstm
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out


def _check(op):
    if op.attr("mode") not in ("GRU", "LSTM"):
        raise GraphError(f"rnn: mode {op.attr('mode')!r} is not supported by psjob (only 'GRU', 'LSTM')")
    if op.attr("is_bidirec", False) and op.attr("mode") == "GRU":
        raise GraphError("rnn: bidirectional runs are not supported by psjob")
    if op.input("SequenceLength"):
        raise GraphError("rnn: SequenceLength is not supported by psjob (pad the batch to one length)")
    if op.attr("dropout_prob", 0.0) and not op.attr("is_test", False) and op.attr("num_layers", 1) > 1:
        raise GraphError("rnn: dropout between layers is not supported by psjob")


def _rnn_shape(op):
    _check(op)
    if op.attr("mode") == "LSTM":
        return rnn_lstm.infer_shape(op)
    x = in_var(op, "Input")
    hidden, layers = int(op.attr("hidden_size")), int(op.attr("num_layers", 1))
    if len(x.shape) != 3:
        raise GraphError(f"rnn: Input {x.name}{list(x.shape)} must be [time, batch, input_size]")
    if len(op.input("WeightList")) != 4 * layers:
        raise GraphError(f"rnn: {layers} GRU layers need 4 weights each, got {len(op.input('WeightList'))}")
    set_out(op, "Out", (x.shape[0], x.shape[1], hidden), x.dtype)
    set_out(op, "State", (layers, x.shape[1], hidden), x.dtype)
    set_out(op, "Reserve", (0,), "uint8")
    set_out(op, "DropoutState", (0,), "uint8")


def _weights(ctx, layers):
    w = ctx.input_list("WeightList")
    return [(w[2 * i], w[2 * i + 1], w[2 * layers + 2 * i], w[2 * layers + 2 * i + 1]) for i in range(layers)]


def _sigmoid(xp, v):
    e = xp.exp(-xp.abs(v))
    return xp.where(v >= 0, 1 / (1 + e), e / (1 + e))


def _layer_forward(xp, x, h, w_ih, w_hh, b_ih, b_hh):
    """Out [T, B, H] and per step (h_prev, r, z, c, W_hc h + b_hc)."""
    hidden = w_hh.shape[1]
    xg = x @ w_ih.T + b_ih
    outs, steps = [], []
    for t in range(x.shape[0]):
        hg = h @ w_hh.T + b_hh
        r = _sigmoid(xp, xg[t, :, :hidden] + hg[:, :hidden])
        z = _sigmoid(xp, xg[t, :, hidden:2 * hidden] + hg[:, hidden:2 * hidden])
        hc = hg[:, 2 * hidden:]
        c = xp.tanh(xg[t, :, 2 * hidden:] + r * hc)
        steps.append((h, r, z, c, hc))
        h = z * h + (1 - z) * c
        outs.append(h)
    return xp.stack(outs), steps


@register_op("rnn", infer_shape=_rnn_shape, grad=lambda op: [GradOpSpec(
    "rnn_grad",
    {"Input": op.input("Input"), "WeightList": op.input("WeightList"), "PreState": op.input("PreState"),
     "Out@GRAD": [grad_name(op.output("Out")[0])], "State@GRAD": [grad_name(n) for n in op.output("State")]},
    {"Input@GRAD": [grad_name(op.input("Input")[0])], "WeightList@GRAD": [grad_name(n) for n in op.input("WeightList")],
     "PreState@GRAD": [grad_name(n) for n in op.input("PreState")]}, dict(op.attrs))])
def rnn(ctx):
    if ctx.attr("mode") == "LSTM":
        return rnn_lstm.forward(ctx)
    xp, x = ctx.xp, ctx.input("Input")
    layers = int(ctx.attr("num_layers", 1))
    h0 = ctx.input("PreState")
    finals = []
    for i, (w_ih, w_hh, b_ih, b_hh) in enumerate(_weights(ctx, layers)):
        x, _ = _layer_forward(xp, x, h0[i], w_ih, w_hh, b_ih, b_hh)
        finals.append(x[-1])
    ctx.set_output("Out", x)
    ctx.set_output("State", xp.stack(finals))
    ctx.set_output("Reserve", xp.zeros((0,), dtype="uint8"))
    ctx.set_output("DropoutState", xp.zeros((0,), dtype="uint8"))


def _layer_backward(xp, x, steps, dout, dh, w_ih, w_hh):
    """(dx, dh0, dw_ih, dw_hh, db_ih, db_hh) of one layer, dout [T, B, H] and dh the final state's."""
    dxg = xp.empty(x.shape[:2] + (w_ih.shape[0],), dtype=x.dtype)
    dw_hh, db_hh = xp.zeros_like(w_hh), xp.zeros(w_hh.shape[0], dtype=x.dtype)
    for t in range(x.shape[0] - 1, -1, -1):
        h_prev, r, z, c, hc = steps[t]
        dh = dh + dout[t]
        dc = dh * (1 - z) * (1 - c * c)
        dz = dh * (h_prev - c) * z * (1 - z)
        dr = dc * hc * r * (1 - r)
        dxg[t] = xp.concatenate([dr, dz, dc], axis=1)
        dhg = xp.concatenate([dr, dz, dc * r], axis=1)
        dw_hh += dhg.T @ h_prev
        db_hh += dhg.sum(axis=0)
        dh = dh * z + dhg @ w_hh
    flat_x, flat_g = x.reshape(-1, x.shape[2]), dxg.reshape(-1, dxg.shape[2])
    return dxg @ w_ih, dh, flat_g.T @ flat_x, dw_hh, flat_g.sum(axis=0), db_hh


@register_op("rnn_grad")
def rnn_grad(ctx):
    if ctx.attr("mode") == "LSTM":
        return rnn_lstm.backward(ctx)
    xp, x = ctx.xp, ctx.input("Input")
    layers = int(ctx.attr("num_layers", 1))
    weights, h0 = _weights(ctx, layers), ctx.input("PreState")
    inputs, all_steps = [], []
    for i, (w_ih, w_hh, b_ih, b_hh) in enumerate(weights):
        inputs.append(x)
        x, steps = _layer_forward(xp, x, h0[i], w_ih, w_hh, b_ih, b_hh)
        all_steps.append(steps)
    dout = ctx.input("Out@GRAD")
    dstate = ctx.input("State@GRAD") if ctx.has_input("State@GRAD") else xp.zeros_like(h0)
    dws, dbs, dh0 = [None] * (2 * layers), [None] * (2 * layers), xp.zeros_like(h0)
    for i in range(layers - 1, -1, -1):
        w_ih, w_hh = weights[i][:2]
        dout, dh0[i], dws[2 * i], dws[2 * i + 1], dbs[2 * i], dbs[2 * i + 1] = _layer_backward(
            xp, inputs[i], all_steps[i], dout, dstate[i], w_ih, w_hh)
    ctx.set_output("Input@GRAD", dout)
    for j, g in enumerate(dws + dbs):
        ctx.set_output("WeightList@GRAD", g, j)
    ctx.set_output("PreState@GRAD", dh0)

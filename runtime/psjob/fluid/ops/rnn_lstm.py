"""The LSTM mode of Paddle's fused `rnn` op (behind paddle.nn.LSTM in static mode): time-major,
forward or bidirectional, any number of layers, no SequenceLength. rnn_ops.py registers the op
and hands mode 'LSTM' here.

Inputs: Input [T, B, I]; WeightList: for every layer and direction (layer 0 forward, layer 0
reverse, layer 1 forward, ...) w_ih [4H, in], w_hh [4H, H], then in the same order every
b_ih [4H], b_hh [4H] (Paddle's cudnn layout); PreState [h0, c0], each [layers * directions,
B, H]. Outputs: Out [T, B, directions * H] (forward then reverse outputs along the last axis),
State [h, c] of the PreState shapes. Each step, as Paddle's LSTMCell (paddle.nn.LSTMCell;
gates in the order i, f, g, o):

    i, f, g, o = split(W_ih x + b_ih + W_hh h + b_hh, 4)
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h = sigmoid(o) * tanh(c)

The reverse direction reads the sequence from its end; a layer above the first reads both
directions' outputs. The gradient recomputes the gates and runs back through time.
"""
from __future__ import annotations

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import in_var, set_out

GATES = 4


def directions(op_or_ctx) -> int:
    return 2 if op_or_ctx.attr("is_bidirec", False) else 1


def infer_shape(op):
    x = in_var(op, "Input")
    hidden, layers, dirs = int(op.attr("hidden_size")), int(op.attr("num_layers", 1)), directions(op)
    if len(x.shape) != 3:
        raise GraphError(f"rnn: Input {x.name}{list(x.shape)} must be [time, batch, input_size]")
    if len(op.input("WeightList")) != 4 * layers * dirs:
        raise GraphError(f"rnn: {layers} LSTM layers of {dirs} direction(s) need 4 weights each, "
                         f"got {len(op.input('WeightList'))}")
    if len(op.input("PreState")) != 2:
        raise GraphError(f"rnn: an LSTM needs two initial states (h0, c0), got {len(op.input('PreState'))}")
    set_out(op, "Out", (x.shape[0], x.shape[1], dirs * hidden), x.dtype)
    for i in range(2):
        set_out(op, "State", (layers * dirs, x.shape[1], hidden), x.dtype, i=i)
    set_out(op, "Reserve", (0,), "uint8")
    set_out(op, "DropoutState", (0,), "uint8")


def _weights(ctx, layers, dirs):
    w, n = ctx.input_list("WeightList"), layers * dirs
    return [(w[2 * k], w[2 * k + 1], w[2 * n + 2 * k], w[2 * n + 2 * k + 1]) for k in range(n)]


def _sigmoid(xp, v):
    e = xp.exp(-xp.abs(v))
    return xp.where(v >= 0, 1 / (1 + e), e / (1 + e))


def _order(steps, reverse):
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _direction_forward(xp, x, h, c, weights, reverse):
    """Out [T, B, H] and per step (h_prev, c_prev, i, f, g, o, c)."""
    w_ih, w_hh, b_ih, b_hh = weights
    hidden = w_hh.shape[1]
    xg = x @ w_ih.T + b_ih
    outs, steps = [None] * x.shape[0], [None] * x.shape[0]
    for t in _order(x.shape[0], reverse):
        g = xg[t] + h @ w_hh.T + b_hh
        i, f = _sigmoid(xp, g[:, :hidden]), _sigmoid(xp, g[:, hidden:2 * hidden])
        cand, o = xp.tanh(g[:, 2 * hidden:3 * hidden]), _sigmoid(xp, g[:, 3 * hidden:])
        steps[t] = (h, c, i, f, cand, o)
        c = f * c + i * cand
        h = o * xp.tanh(c)
        steps[t] += (c,)
        outs[t] = h
    return xp.stack(outs), steps, h, c


def _run(ctx):
    """Every layer's input, every direction's steps, Out and the final (h, c)."""
    xp, x = ctx.xp, ctx.input("Input")
    layers, dirs = int(ctx.attr("num_layers", 1)), directions(ctx)
    weights = _weights(ctx, layers, dirs)
    h0, c0 = ctx.input("PreState", 0), ctx.input("PreState", 1)
    inputs, steps, hs, cs = [], [], [], []
    for layer in range(layers):
        inputs.append(x)
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            out, st, h, c = _direction_forward(xp, x, h0[k], c0[k], weights[k], d == 1)
            outs.append(out)
            steps.append(st)
            hs.append(h)
            cs.append(c)
        x = outs[0] if dirs == 1 else xp.concatenate(outs, axis=2)
    return weights, inputs, steps, x, xp.stack(hs), xp.stack(cs)


def forward(ctx):
    _, _, _, out, h, c = _run(ctx)
    ctx.set_output("Out", out)
    ctx.set_output("State", h, 0)
    ctx.set_output("State", c, 1)
    ctx.set_output("Reserve", ctx.xp.zeros((0,), dtype="uint8"))
    ctx.set_output("DropoutState", ctx.xp.zeros((0,), dtype="uint8"))


def _direction_backward(xp, x, steps, dout, dh, dc, weights, reverse):
    """(dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh) of one direction of one layer."""
    w_ih, w_hh = weights[:2]
    dxg = xp.empty(x.shape[:2] + (w_ih.shape[0],), dtype=x.dtype)
    dw_hh, db_hh = xp.zeros_like(w_hh), xp.zeros(w_hh.shape[0], dtype=x.dtype)
    for t in _order(x.shape[0], not reverse):
        h_prev, c_prev, i, f, cand, o, c = steps[t]
        dh = dh + dout[t]
        tc = xp.tanh(c)
        dc = dc + dh * o * (1 - tc * tc)
        dg = xp.concatenate([dc * cand * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - cand * cand),
                             dh * tc * o * (1 - o)], axis=1)
        dxg[t] = dg
        dw_hh += dg.T @ h_prev
        db_hh += dg.sum(axis=0)
        dh, dc = dg @ w_hh, dc * f
    flat_x, flat_g = x.reshape(-1, x.shape[2]), dxg.reshape(-1, dxg.shape[2])
    return dxg @ w_ih, dh, dc, flat_g.T @ flat_x, dw_hh, flat_g.sum(axis=0), db_hh


def _grad(ctx, slot, i, zeros):
    """An output's gradient, or zeros where nothing downstream read that output."""
    names = ctx.ins.get(slot, ())
    name = names[i] if i < len(names) else None
    return ctx.vals[name] if name in ctx.vals else zeros


def backward(ctx):
    xp = ctx.xp
    layers, dirs = int(ctx.attr("num_layers", 1)), directions(ctx)
    weights, inputs, steps, _, h_last, _ = _run(ctx)
    hidden = h_last.shape[2]
    out_shape = h_last.shape[1:2] + (dirs * hidden,)
    dout = _grad(ctx, "Out@GRAD", 0, xp.zeros((inputs[0].shape[0],) + out_shape, dtype=h_last.dtype))
    dh_last = _grad(ctx, "State@GRAD", 0, xp.zeros_like(h_last))
    dc_last = _grad(ctx, "State@GRAD", 1, xp.zeros_like(h_last))
    n = layers * dirs
    dws, dbs = [None] * (2 * n), [None] * (2 * n)
    dh0, dc0 = xp.zeros_like(h_last), xp.zeros_like(h_last)
    for layer in range(layers - 1, -1, -1):
        dx = None
        for d in range(dirs):
            k = layer * dirs + d
            dx_d, dh0[k], dc0[k], dws[2 * k], dws[2 * k + 1], dbs[2 * k], dbs[2 * k + 1] = _direction_backward(
                xp, inputs[layer], steps[k], dout[:, :, d * hidden:(d + 1) * hidden], dh_last[k], dc_last[k],
                weights[k], d == 1)
            dx = dx_d if dx is None else dx + dx_d
        dout = dx
    ctx.set_output("Input@GRAD", dout)
    for j, g in enumerate(dws + dbs):
        ctx.set_output("WeightList@GRAD", g, j)
    ctx.set_output("PreState@GRAD", dh0, 0)
    ctx.set_output("PreState@GRAD", dc0, 1)

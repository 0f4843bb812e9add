"""`rnn`: Paddle's fused recurrent op, behind paddle.nn.SimpleRNN, GRU and LSTM in static mode.

Time-major, any number of layers, one or both directions, optional SequenceLength, dropout
between layers. Inputs: Input [T, B, I]; WeightList, for every layer and direction (layer 0
forward, layer 0 reverse, layer 1 forward, ...) w_ih [G*H, in] and w_hh [G*H, H], then in the
same order every b_ih [G*H] and b_hh [G*H] (Paddle's cudnn layout: all weights, then all
biases); PreState: h0 (and c0 for an LSTM), each [layers * directions, B, H]; SequenceLength
[B] (optional). Outputs: Out [T, B, directions * H] (the forward then the reverse outputs along
the last axis), State of PreState's shapes, Reserve (the dropout masks between layers, uint8;
empty without dropout) and DropoutState (Paddle's scratch, written empty).

Each step, as Paddle's cells (paddle.nn.SimpleRNNCell, GRUCell, LSTMCell), with
g_x = W_ih x + b_ih and g_h = W_hh h + b_hh:

    RNN_TANH / RNN_RELU (G = 1):  h = act(g_x + g_h)
    GRU (G = 3, gates r, z, c):   r = sigmoid(g_x,r + g_h,r), z = sigmoid(g_x,z + g_h,z),
                                  c = tanh(g_x,c + r * g_h,c), h = z * h + (1 - z) * c
    LSTM (G = 4, gates i, f, g, o): c = sigmoid(f) * c + sigmoid(i) * tanh(g),
                                  h = sigmoid(o) * tanh(c)

The reverse direction reads the time axis from its end. With SequenceLength, as Paddle's CPU
kernel: a step at or beyond a sequence's length leaves its state as it was and outputs zeros
(so the reverse direction of a short sequence starts from h0 at its last real step). Dropout
(`dropout_prob` while training, upscale_in_train) applies to every layer's output that feeds
the next layer. The gradient recomputes the forward and runs back through time.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out

# mode -> (gates per cell, state tensors)
MODES = {"RNN_TANH": (1, 1), "RNN_RELU": (1, 1), "GRU": (3, 1), "LSTM": (4, 2)}
_host_rng = np.random.default_rng()  # dropout masks between layers: fresh randomness, as Paddle's


def _geometry(op_or_ctx):
    mode = op_or_ctx.attr("mode")
    if mode not in MODES:
        raise GraphError(f"rnn: mode {mode!r} is not supported; use one of {sorted(MODES)}")
    gates, states = MODES[mode]
    layers = int(op_or_ctx.attr("num_layers", 1))
    dirs = 2 if op_or_ctx.attr("is_bidirec", False) else 1
    return mode, gates, states, layers, dirs


def _rnn_shape(op):
    mode, gates, states, layers, dirs = _geometry(op)
    x = in_var(op, "Input")
    hidden = int(op.attr("hidden_size"))
    if len(x.shape) != 3:
        raise GraphError(f"rnn: Input {x.name}{list(x.shape)} must be [time, batch, input_size]")
    if len(op.input("WeightList")) != 4 * layers * dirs:
        raise GraphError(f"rnn: {layers} {mode} layer(s) of {dirs} direction(s) need 4 weights each "
                         f"(w_ih, w_hh, b_ih, b_hh), got {len(op.input('WeightList'))}")
    if len(op.input("PreState")) != states:
        raise GraphError(f"rnn: mode {mode} takes {states} initial state(s), got {len(op.input('PreState'))}")
    if op.input("SequenceLength"):
        lengths = in_var(op, "SequenceLength")
        if len(lengths.shape) != 1 or not lengths.dtype.startswith("int"):
            raise GraphError(f"rnn: SequenceLength {lengths.name}{list(lengths.shape)} ({lengths.dtype}) must be "
                             "a 1-D integer tensor of one length per batch row")
    set_out(op, "Out", (x.shape[0], x.shape[1], dirs * hidden), x.dtype)
    for i in range(states):
        set_out(op, "State", (layers * dirs, x.shape[1], hidden), x.dtype, i=i)
    set_out(op, "Reserve", (-1,), "uint8")
    set_out(op, "DropoutState", (0,), "uint8")


def _sigmoid(xp, v):
    e = xp.exp(-xp.abs(v))
    return xp.where(v >= 0, 1 / (1 + e), e / (1 + e))


# -- one step of each cell: forward keeps what its backward needs ------------------------------

def _step(xp, mode, gx, h, c, w_hh, b_hh):
    """(h_new, c_new or None, cache) of one step; gx = W_ih x + b_ih."""
    gh = h @ w_hh.T + b_hh
    if mode == "GRU":
        n = w_hh.shape[1]
        r = _sigmoid(xp, gx[:, :n] + gh[:, :n])
        z = _sigmoid(xp, gx[:, n:2 * n] + gh[:, n:2 * n])
        hc = gh[:, 2 * n:]
        cand = xp.tanh(gx[:, 2 * n:] + r * hc)
        return z * h + (1 - z) * cand, None, (h, r, z, cand, hc)
    if mode == "LSTM":
        n = w_hh.shape[1]
        g = gx + gh
        i, f = _sigmoid(xp, g[:, :n]), _sigmoid(xp, g[:, n:2 * n])
        cand, o = xp.tanh(g[:, 2 * n:3 * n]), _sigmoid(xp, g[:, 3 * n:])
        c_new = f * c + i * cand
        tc = xp.tanh(c_new)
        return o * tc, c_new, (h, c, i, f, cand, o, tc)
    pre = gx + gh
    h_new = xp.tanh(pre) if mode == "RNN_TANH" else xp.maximum(pre, 0)
    return h_new, None, (h, h_new)


def _step_backward(xp, mode, cache, dh, dc, w_hh):
    """(d g_x, d g_h, dh_prev, dc_prev) of one step from the gradients of its new h (and c)."""
    if mode == "GRU":
        h, r, z, cand, hc = cache
        d_cand = dh * (1 - z) * (1 - cand * cand)
        dz = dh * (h - cand) * z * (1 - z)
        dr = d_cand * hc * r * (1 - r)
        dgx = xp.concatenate([dr, dz, d_cand], axis=1)
        dgh = xp.concatenate([dr, dz, d_cand * r], axis=1)
        return dgx, dgh, dh * z + dgh @ w_hh, None
    if mode == "LSTM":
        h, c, i, f, cand, o, tc = cache
        dc = dc + dh * o * (1 - tc * tc)
        dg = xp.concatenate([dc * cand * i * (1 - i), dc * c * f * (1 - f), dc * i * (1 - cand * cand),
                             dh * tc * o * (1 - o)], axis=1)
        return dg, dg, dg @ w_hh, dc * f
    h, h_new = cache
    dpre = dh * (1 - h_new * h_new) if mode == "RNN_TANH" else dh * (h_new > 0)
    return dpre, dpre, dpre @ w_hh, None


# -- a direction of a layer, and the whole stack ----------------------------------------------

def _order(steps, reverse):
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _direction_forward(xp, mode, x, h, c, weights, reverse, mask):
    """Out [T, B, H], the per-step caches, the final h and c. mask [T, B, 1] or None."""
    w_ih, w_hh, b_ih, b_hh = weights
    gx = x @ w_ih.T + b_ih
    outs, caches = [None] * x.shape[0], [None] * x.shape[0]
    for t in _order(x.shape[0], reverse):
        h_new, c_new, caches[t] = _step(xp, mode, gx[t], h, c, w_hh, b_hh)
        if mask is None:
            h, c, outs[t] = h_new, c_new, h_new
        else:
            m = mask[t]
            outs[t] = h_new * m
            h = h_new * m + h * (1 - m)
            if c_new is not None:
                c = c_new * m + c * (1 - m)
    return xp.stack(outs), caches, h, c


def _direction_backward(xp, mode, x, caches, dout, dh, dc, weights, reverse, mask):
    """(dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh) of one direction of one layer."""
    w_ih, w_hh = weights[:2]
    dgx_all = xp.empty(x.shape[:2] + (w_ih.shape[0],), dtype=x.dtype)
    dw_hh, db_hh = xp.zeros_like(w_hh), xp.zeros(w_hh.shape[0], dtype=x.dtype)
    for t in _order(x.shape[0], not reverse):
        if mask is None:
            dh_new, dc_new, dh_keep, dc_keep = dh + dout[t], dc, None, None
        else:
            m = mask[t]
            dh_new, dh_keep = (dh + dout[t]) * m, dh * (1 - m)
            dc_new, dc_keep = (None, None) if dc is None else (dc * m, dc * (1 - m))
        dgx, dgh, dh, dc = _step_backward(xp, mode, caches[t], dh_new, dc_new, w_hh)
        dgx_all[t] = dgx
        dw_hh += dgh.T @ caches[t][0]
        db_hh += dgh.sum(axis=0)
        if dh_keep is not None:
            dh = dh + dh_keep
            if dc_keep is not None:
                dc = dc + dc_keep
    flat_x, flat_g = x.reshape(-1, x.shape[2]), dgx_all.reshape(-1, dgx_all.shape[2])
    return dgx_all @ w_ih, dh, dc, flat_g.T @ flat_x, dw_hh, flat_g.sum(axis=0), db_hh


def _weights(ctx, n):
    w = ctx.input_list("WeightList")
    return [(w[2 * k], w[2 * k + 1], w[2 * n + 2 * k], w[2 * n + 2 * k + 1]) for k in range(n)]


def _mask(ctx, x):
    if not ctx.has_input("SequenceLength"):
        return None
    xp, lengths = ctx.xp, ctx.input("SequenceLength")
    if lengths.shape != (x.shape[1],):
        raise ValueError(f"rnn: SequenceLength has shape {list(lengths.shape)}; the batch has {x.shape[1]} rows")
    return (xp.arange(x.shape[0])[:, None] < lengths[None, :]).astype(x.dtype)[:, :, None]


def _dropout_masks(ctx, x, layers, dirs, hidden):
    """Masks [layers - 1, T, B, dirs * H] (0/1) for the outputs that feed the next layer, or None."""
    p = float(ctx.attr("dropout_prob", 0.0))
    if layers < 2 or p <= 0.0 or ctx.attr("is_test", False):
        return None, p
    if ctx.has_input("Reserve"):  # the gradient reads the forward's masks
        return ctx.input("Reserve").reshape(layers - 1, x.shape[0], x.shape[1], dirs * hidden), p
    shape = (layers - 1, x.shape[0], x.shape[1], dirs * hidden)
    u = _host_rng.random(shape, dtype=np.float32) if ctx.xp is np else ctx.xp.random.random(shape)
    return (u >= p).astype("uint8"), p


def _run(ctx):
    """Every layer's input, every direction's caches, Out, the final states, the dropout masks."""
    xp, x = ctx.xp, ctx.input("Input")
    mode, _, states, layers, dirs = _geometry(ctx)
    weights = _weights(ctx, layers * dirs)
    hidden = int(ctx.attr("hidden_size"))
    h0 = ctx.input("PreState", 0)
    c0 = ctx.input("PreState", 1) if states == 2 else None
    mask = _mask(ctx, x)
    drops, p = _dropout_masks(ctx, x, layers, dirs, hidden)
    inputs, caches, hs, cs = [], [], [], []
    for layer in range(layers):
        if layer and drops is not None:
            x = x * drops[layer - 1] / (1.0 - p) if p < 1.0 else x * 0
        inputs.append(x)
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            out, cache, h, c = _direction_forward(xp, mode, x, h0[k], None if c0 is None else c0[k], weights[k],
                                                  d == 1, mask)
            outs.append(out)
            caches.append(cache)
            hs.append(h)
            cs.append(c)
        x = outs[0] if dirs == 1 else xp.concatenate(outs, axis=2)
    finals = [xp.stack(hs)] + ([xp.stack(cs)] if states == 2 else [])
    return weights, inputs, caches, x, finals, mask, drops, p


@register_op("rnn", infer_shape=_rnn_shape, grad=lambda op: [GradOpSpec(
    "rnn_grad",
    {"Input": op.input("Input"), "WeightList": op.input("WeightList"), "PreState": op.input("PreState"),
     "SequenceLength": op.input("SequenceLength"), "Reserve": op.output("Reserve"),
     "Out@GRAD": [grad_name(op.output("Out")[0])], "State@GRAD": [grad_name(n) for n in op.output("State")]},
    {"Input@GRAD": [grad_name(op.input("Input")[0])], "WeightList@GRAD": [grad_name(n) for n in op.input("WeightList")],
     "PreState@GRAD": [grad_name(n) for n in op.input("PreState")]}, dict(op.attrs))])
def rnn(ctx):
    _, _, _, out, finals, _, drops, _ = _run(ctx)
    xp = ctx.xp
    ctx.set_output("Out", out)
    for i, state in enumerate(finals):
        ctx.set_output("State", state, i)
    ctx.set_output("Reserve", xp.zeros((0,), dtype="uint8") if drops is None else drops.reshape(-1))
    ctx.set_output("DropoutState", xp.zeros((0,), dtype="uint8"))


def _grad(ctx, slot, i, zeros):
    """An output's gradient, or zeros where nothing downstream read that output."""
    names = ctx.ins.get(slot, ())
    name = names[i] if i < len(names) else None
    return ctx.vals[name] if name in ctx.vals else zeros


@register_op("rnn_grad")
def rnn_grad(ctx):
    xp = ctx.xp
    mode, _, states, layers, dirs = _geometry(ctx)
    weights, inputs, caches, out, finals, mask, drops, p = _run(ctx)
    hidden = finals[0].shape[2]
    dout = _grad(ctx, "Out@GRAD", 0, xp.zeros_like(out))
    dh_last = _grad(ctx, "State@GRAD", 0, xp.zeros_like(finals[0]))
    dc_last = _grad(ctx, "State@GRAD", 1, xp.zeros_like(finals[0])) if states == 2 else None
    n = layers * dirs
    dws, dbs = [None] * (2 * n), [None] * (2 * n)
    dh0 = xp.zeros_like(finals[0])
    dc0 = xp.zeros_like(finals[0]) if states == 2 else None
    for layer in range(layers - 1, -1, -1):
        dx = None
        for d in range(dirs):
            k = layer * dirs + d
            dx_d, dh0[k], dc_k, dws[2 * k], dws[2 * k + 1], dbs[2 * k], dbs[2 * k + 1] = _direction_backward(
                xp, mode, inputs[layer], caches[k], dout[:, :, d * hidden:(d + 1) * hidden], dh_last[k],
                None if dc_last is None else dc_last[k], weights[k], d == 1, mask)
            if dc0 is not None:
                dc0[k] = dc_k
            dx = dx_d if dx is None else dx + dx_d
        if layer and drops is not None:
            dx = dx * drops[layer - 1] / (1.0 - p) if p < 1.0 else dx * 0
        dout = dx
    ctx.set_output("Input@GRAD", dout)
    for j, g in enumerate(dws + dbs):
        ctx.set_output("WeightList@GRAD", g, j)
    ctx.set_output("PreState@GRAD", dh0, 0)
    if dc0 is not None:
        ctx.set_output("PreState@GRAD", dc0, 1)

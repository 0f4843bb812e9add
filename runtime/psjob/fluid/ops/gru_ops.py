"""`gru`: Fluid 1.x's GRU over the sequences of a LoD tensor (behind
fluid.layers.dynamic_gru; Paddle 1.8 API docs, "dynamic_gru").

Input [T, 3D] is the projected input of every row (x_u, x_r, x_c), Weight [D, 3D] and Bias
[1, 3D]. As Paddle's kernel reads the weight's memory, its first 2*D*D values are the gate
weight W_g [D, 2D] (update, reset) and the last D*D the candidate weight W_c [D, D] — a
reshape of the flat buffer, not a column slice of [D, 3D]. Each step, with h the previous
hidden state (H0's row, or zeros, at a sequence's first step):

    g = x_t + Bias
    u, r = act_g(g[:, :2D] + h @ W_g)     (split in halves)
    c = act_c(g[:, 2D:] + (r * h) @ W_c)
    h' = (1 - u) * h + u * c              (origin_mode: u * h + (1 - u) * c)

is_reverse runs every sequence from its last row to its first. Hidden [T, D] keeps Input's
LoD. The steps are vectorized over sequences: step t takes the t-th row of every sequence
longer than t. BatchGate holds the gates after activation in row order ([T, 3D]: u, r, c),
BatchResetHiddenPrev r * h and BatchHidden the previous state of every row; the gradient
reads them (Paddle keeps them in its own batch order: scratch outputs, not for users).
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out
from psjob.fluid.ops.sequence_ops import segments

ACTIVATIONS = ("sigmoid", "tanh", "relu", "identity")


def _act_name(ctx_or_op, attr, default):
    name = str(ctx_or_op.attr(attr, default))
    if name not in ACTIVATIONS:
        raise GraphError(f"gru: {attr} must be one of {ACTIVATIONS}, got {name!r}")
    return name


def _act(xp, name, v):
    if name == "sigmoid":
        return 1 / (1 + xp.exp(-v))
    if name == "tanh":
        return xp.tanh(v)
    if name == "relu":
        return xp.maximum(v, v.dtype.type(0))
    return v


def _act_grad(name, y):
    """d act / d input, from the output y."""
    if name == "sigmoid":
        return y * (1 - y)
    if name == "tanh":
        return 1 - y * y
    if name == "relu":
        return (y > 0).astype(y.dtype)
    return 1


def _gru_shape(op):
    x, w = in_var(op, "Input"), in_var(op, "Weight")
    _act_name(op, "gate_activation", "sigmoid")
    _act_name(op, "activation", "tanh")
    d = w.shape[0]
    if tuple(w.shape) != (d, 3 * d):
        raise GraphError(f"gru: Weight {w.name}{list(w.shape)} must be [size, 3 * size]")
    if x.shape[-1] >= 0 and x.shape[-1] != 3 * d:
        raise GraphError(f"gru: Input {x.name}{list(x.shape)} must have 3 * size = {3 * d} columns")
    set_out(op, "Hidden", (-1, d), x.dtype, max(x.lod_level, 1))
    for slot, width in (("BatchGate", 3 * d), ("BatchResetHiddenPrev", d), ("BatchHidden", d)):
        if op.outputs.get(slot):
            set_out(op, slot, (-1, width), x.dtype)


def _gru_grad(op):
    ins = {s: op.input(s) for s in ("Input", "Weight", "Bias", "H0") if op.input(s)}
    ins.update({s: op.output(s) for s in ("Hidden", "BatchGate", "BatchResetHiddenPrev", "BatchHidden")})
    ins["Hidden@GRAD"] = [grad_name(op.output("Hidden")[0])]
    outs = {s + "@GRAD": [grad_name(n) for n in op.input(s)] for s in ("Input", "Weight", "Bias", "H0")
            if op.input(s)}
    return [GradOpSpec("gru_grad", ins, outs, dict(op.attrs))]


def _steps(s, reverse):
    """Per step t: (sequences longer than t, their row at step t)."""
    for t in range(s.max_len):
        active = np.nonzero(s.lengths > t)[0]
        rows = s.starts[active] + (s.lengths[active] - 1 - t if reverse else t)
        yield active, rows


def _weights(ctx, d):
    flat = ctx.input("Weight").reshape(-1)
    return flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d)


def _checked_segments(ctx, what):
    x = ctx.input("Input")
    s = segments(ctx.input_lod("Input"), what)
    if s.rows != x.shape[0]:
        raise ValueError(f"{what}: LoD ends at {s.rows} but Input has {x.shape[0]} rows")
    return x, s


@register_op("gru", infer_shape=_gru_shape, grad=_gru_grad)
def gru(ctx):
    xp = ctx.xp
    x, s = _checked_segments(ctx, "gru")
    d = ctx.input("Weight").shape[0]
    w_g, w_c = _weights(ctx, d)
    act_g = _act_name(ctx, "gate_activation", "sigmoid")
    act_c = _act_name(ctx, "activation", "tanh")
    origin = bool(ctx.attr("origin_mode", False))
    g_all = x + ctx.input("Bias").reshape(1, -1) if ctx.has_input("Bias") else x
    h = (ctx.input("H0").astype(x.dtype, copy=True) if ctx.has_input("H0")
         else xp.zeros((s.num_seqs, d), dtype=x.dtype))
    gates = xp.empty_like(x)
    reset_prev = xp.empty((x.shape[0], d), dtype=x.dtype)
    prev_all = xp.empty((x.shape[0], d), dtype=x.dtype)
    hidden = xp.empty((x.shape[0], d), dtype=x.dtype)
    for active, rows in _steps(s, bool(ctx.attr("is_reverse", False))):
        rows_x, prev = _to(xp, rows), h[_to(xp, active)]
        g = g_all[rows_x]
        ur = _act(xp, act_g, g[:, :2 * d] + prev @ w_g)
        u, r = ur[:, :d], ur[:, d:]
        rh = r * prev
        c = _act(xp, act_c, g[:, 2 * d:] + rh @ w_c)
        new = (u * prev + (1 - u) * c) if origin else (prev - u * prev + u * c)
        gates[rows_x, :2 * d], gates[rows_x, 2 * d:] = ur, c
        reset_prev[rows_x], prev_all[rows_x], hidden[rows_x] = rh, prev, new
        h[_to(xp, active)] = new
    lod = ctx.input_lod("Input")
    ctx.set_output("Hidden", hidden, lod=lod)
    ctx.set_output("BatchGate", gates)
    ctx.set_output("BatchResetHiddenPrev", reset_prev)
    ctx.set_output("BatchHidden", prev_all)


def _to(xp, host):
    return host if xp is np else xp.asarray(host)


@register_op("gru_grad")
def gru_grad(ctx):
    xp = ctx.xp
    x, s = _checked_segments(ctx, "gru_grad")
    d = ctx.input("Weight").shape[0]
    w_g, w_c = _weights(ctx, d)
    act_g = _act_name(ctx, "gate_activation", "sigmoid")
    act_c = _act_name(ctx, "activation", "tanh")
    origin = bool(ctx.attr("origin_mode", False))
    gates, reset_prev = ctx.input("BatchGate"), ctx.input("BatchResetHiddenPrev")
    prev_all, dhidden = ctx.input("BatchHidden"), ctx.input("Hidden@GRAD")
    dx = xp.zeros_like(x)
    dw_g, dw_c = xp.zeros_like(w_g), xp.zeros_like(w_c)
    carry = xp.zeros((s.num_seqs, d), dtype=x.dtype)  # d loss / d h of each sequence's next state
    for active, rows in reversed(list(_steps(s, bool(ctx.attr("is_reverse", False))))):
        rows_x, act_x = _to(xp, rows), _to(xp, active)
        dh = dhidden[rows_x] + carry[act_x]
        prev, u, r, c = prev_all[rows_x], gates[rows_x, :d], gates[rows_x, d:2 * d], gates[rows_x, 2 * d:]
        if origin:
            du, dc, dprev = dh * (prev - c), dh * (1 - u), dh * u
        else:
            du, dc, dprev = dh * (c - prev), dh * u, dh * (1 - u)
        dc_pre = dc * _act_grad(act_c, c)
        dw_c += reset_prev[rows_x].T @ dc_pre
        drh = dc_pre @ w_c.T
        dprev = dprev + drh * r
        dur_pre = xp.concatenate([du * _act_grad(act_g, u), drh * prev * _act_grad(act_g, r)], axis=1)
        dw_g += prev.T @ dur_pre
        dprev = dprev + dur_pre @ w_g.T
        dx[rows_x, :2 * d], dx[rows_x, 2 * d:] = dur_pre, dc_pre
        carry[act_x] = dprev
    ctx.set_output("Input@GRAD", dx, lod=ctx.input_lod("Input"))
    w = ctx.input("Weight")
    ctx.set_output("Weight@GRAD", xp.concatenate([dw_g.reshape(-1), dw_c.reshape(-1)]).reshape(w.shape))
    if ctx.has_output("Bias@GRAD"):
        ctx.set_output("Bias@GRAD", dx.sum(axis=0).reshape(ctx.input("Bias").shape))
    if ctx.has_output("H0@GRAD"):
        ctx.set_output("H0@GRAD", carry)

"""`lstm`: Fluid 1.x's LSTM over the sequences of a LoD tensor (behind
fluid.layers.dynamic_lstm; Paddle 1.8 API docs, "dynamic_lstm").

Input [T, 4D] is the projected input of every row, Weight [D, 4D] the hidden-to-gate weight,
Bias [1, 4D] the gate bias, or [1, 7D] with `use_peepholes`: the gate bias, then the peephole
weights w_ic, w_fc, w_oc [D] each. The four gate blocks are, in order, the candidate, the input
gate, the forget gate and the output gate (Paddle's {W_ch, W_ih, W_fh, W_oh}). Each step, with h
and c the previous states (H0's and C0's rows, or zeros, at a sequence's first step):

    g = x_t + b + h @ W
    cand = act_cand(g_c);  i = act_gate(g_i + c * w_ic);  f = act_gate(g_f + c * w_fc)
    c' = cand * i + c * f;  o = act_gate(g_o + c' * w_oc);  h' = o * act_cell(c')

is_reverse runs every sequence from its last row to its first. Hidden and Cell [T, D] keep
Input's LoD; BatchGate [T, 4D] holds the activated gates (cand, i, f, o) and BatchCellPreAct
[T, D] the cell before act_cell, in row order (Paddle keeps them in its own batch order:
scratch outputs, not for users). The gradient reads them, Hidden and Cell. As Paddle's
kernel, it flows from Hidden only: a loss on Cell sends no gradient back (Paddle zeroes the
cell's output gradient, "support the case output cell has gradient" left to do).
"""
from __future__ import annotations

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.gru_ops import ACTIVATIONS, _act, _act_grad, _checked_segments, _steps, _to
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out

_ACTS = (("gate_activation", "sigmoid"), ("cell_activation", "tanh"), ("candidate_activation", "tanh"))


def _acts(ctx_or_op):
    names = []
    for attr, default in _ACTS:
        name = str(ctx_or_op.attr(attr, default))
        if name not in ACTIVATIONS:
            raise GraphError(f"lstm: {attr} must be one of {ACTIVATIONS}, got {name!r}")
        names.append(name)
    return names


def _lstm_shape(op):
    x, w = in_var(op, "Input"), in_var(op, "Weight")
    _acts(op)
    d = w.shape[0]
    if tuple(w.shape) != (d, 4 * d):
        raise GraphError(f"lstm: Weight {w.name}{list(w.shape)} must be [size, 4 * size]")
    if x.shape[-1] >= 0 and x.shape[-1] != 4 * d:
        raise GraphError(f"lstm: Input {x.name}{list(x.shape)} must have 4 * size = {4 * d} columns")
    width = 7 * d if op.attr("use_peepholes", True) else 4 * d
    if op.input("Bias") and tuple(in_var(op, "Bias").shape) != (1, width):
        b = in_var(op, "Bias")
        raise GraphError(f"lstm: Bias {b.name}{list(b.shape)} must be [1, {width}] "
                         f"(use_peepholes={bool(op.attr('use_peepholes', True))})")
    for slot, cols in (("Hidden", d), ("Cell", d), ("BatchGate", 4 * d), ("BatchCellPreAct", d)):
        if op.outputs.get(slot):
            set_out(op, slot, (-1, cols), x.dtype, max(x.lod_level, 1) if slot in ("Hidden", "Cell") else None)


def _lstm_grad(op):
    ins = {s: op.input(s) for s in ("Input", "Weight", "Bias", "H0", "C0") if op.input(s)}
    ins.update({s: op.output(s) for s in ("Hidden", "Cell", "BatchGate", "BatchCellPreAct")})
    ins["Hidden@GRAD"] = [grad_name(op.output("Hidden")[0])]
    outs = {s + "@GRAD": [grad_name(n) for n in op.input(s)] for s in ("Input", "Weight", "Bias", "H0", "C0")
            if op.input(s)}
    return [GradOpSpec("lstm_grad", ins, outs, dict(op.attrs))]


def _bias(ctx, x, d):
    """(gate bias [4D] or 0, peepholes (w_ic, w_fc, w_oc) or None)."""
    if not ctx.has_input("Bias"):
        return 0, None
    b = ctx.input("Bias").reshape(-1)
    peep = (b[4 * d:5 * d], b[5 * d:6 * d], b[6 * d:7 * d]) if ctx.attr("use_peepholes", True) else None
    return b[:4 * d], peep


def _initial(ctx, slot, s, d, dtype):
    xp = ctx.xp
    return ctx.input(slot).astype(dtype, copy=True) if ctx.has_input(slot) else xp.zeros((s.num_seqs, d), dtype)


@register_op("lstm", infer_shape=_lstm_shape, grad=_lstm_grad)
def lstm(ctx):
    xp = ctx.xp
    x, s = _checked_segments(ctx, "lstm")
    w = ctx.input("Weight")
    d = w.shape[0]
    act_g, act_cell, act_cand = _acts(ctx)
    bias, peep = _bias(ctx, x, d)
    g_all = x + bias
    h, c = _initial(ctx, "H0", s, d, x.dtype), _initial(ctx, "C0", s, d, x.dtype)
    gates = xp.empty_like(x)
    hidden, cell = xp.empty((x.shape[0], d), x.dtype), xp.empty((x.shape[0], d), x.dtype)
    for active, rows in _steps(s, bool(ctx.attr("is_reverse", False))):
        rows_x, act_x = _to(xp, rows), _to(xp, active)
        h_prev, c_prev = h[act_x], c[act_x]
        g = g_all[rows_x] + h_prev @ w
        cand = _act(xp, act_cand, g[:, :d])
        gi, gf = g[:, d:2 * d], g[:, 2 * d:3 * d]
        if peep is not None:
            gi, gf = gi + c_prev * peep[0], gf + c_prev * peep[1]
        i, f = _act(xp, act_g, gi), _act(xp, act_g, gf)
        c_new = cand * i + c_prev * f
        go = g[:, 3 * d:] + (c_new * peep[2] if peep is not None else 0)
        o = _act(xp, act_g, go)
        h_new = o * _act(xp, act_cell, c_new)
        gates[rows_x] = xp.concatenate([cand, i, f, o], axis=1)
        hidden[rows_x], cell[rows_x] = h_new, c_new
        h[act_x], c[act_x] = h_new, c_new
    lod = ctx.input_lod("Input")
    ctx.set_output("Hidden", hidden, lod=lod)
    ctx.set_output("Cell", cell, lod=lod)
    ctx.set_output("BatchGate", gates)
    ctx.set_output("BatchCellPreAct", cell.copy())


def _previous_states(ctx, s, d, dtype, reverse):
    """Each row's previous hidden and cell state (H0/C0 or zeros at a sequence's first step)."""
    xp = ctx.xp
    hidden, cell = ctx.input("Hidden"), ctx.input("Cell")
    h, c = _initial(ctx, "H0", s, d, dtype), _initial(ctx, "C0", s, d, dtype)
    h_prev, c_prev = xp.empty_like(hidden), xp.empty_like(cell)
    for active, rows in _steps(s, reverse):
        rows_x, act_x = _to(xp, rows), _to(xp, active)
        h_prev[rows_x], c_prev[rows_x] = h[act_x], c[act_x]
        h[act_x], c[act_x] = hidden[rows_x], cell[rows_x]
    return h_prev, c_prev


def _gate_grads(xp, dc, do_pre, i, f, cand, c_prev, peep, dpeep, act_g, act_cand):
    """One step's gate gradients of an LSTM cell (lstm's and lstmp's alike) from the cell
    state's gradient `dc`: the pre-activation gradients in the gates' order (candidate, input,
    forget, output) and the previous cell state's gradient; adds the peepholes' to `dpeep`."""
    dcand_pre = dc * i * _act_grad(act_cand, cand)
    di_pre = dc * cand * _act_grad(act_g, i)
    df_pre = dc * c_prev * _act_grad(act_g, f)
    dc_prev = dc * f
    if peep is not None:
        dc_prev = dc_prev + di_pre * peep[0] + df_pre * peep[1]
        dpeep[0] += (di_pre * c_prev).sum(axis=0)
        dpeep[1] += (df_pre * c_prev).sum(axis=0)
    return xp.concatenate([dcand_pre, di_pre, df_pre, do_pre], axis=1), dc_prev


@register_op("lstm_grad")
def lstm_grad(ctx):
    xp = ctx.xp
    x, s = _checked_segments(ctx, "lstm_grad")
    w = ctx.input("Weight")
    d = w.shape[0]
    act_g, act_cell, act_cand = _acts(ctx)
    _, peep = _bias(ctx, x, d)
    reverse = bool(ctx.attr("is_reverse", False))
    h_prev_all, c_prev_all = _previous_states(ctx, s, d, x.dtype, reverse)
    gates, cell = ctx.input("BatchGate"), ctx.input("Cell")
    dhidden = ctx.input("Hidden@GRAD")
    dx = xp.zeros_like(x)
    dpeep = [xp.zeros((d,), x.dtype) for _ in range(3)]
    carry_h, carry_c = xp.zeros((s.num_seqs, d), x.dtype), xp.zeros((s.num_seqs, d), x.dtype)
    for active, rows in reversed(list(_steps(s, reverse))):
        rows_x, act_x = _to(xp, rows), _to(xp, active)
        cand, i, f, o = (gates[rows_x, k * d:(k + 1) * d] for k in range(4))
        c_new, c_prev = cell[rows_x], c_prev_all[rows_x]
        c_act = _act(xp, act_cell, c_new)
        dh = dhidden[rows_x] + carry_h[act_x]
        dc = carry_c[act_x] + dh * o * _act_grad(act_cell, c_act)
        do_pre = dh * c_act * _act_grad(act_g, o)
        if peep is not None:
            dc = dc + do_pre * peep[2]
            dpeep[2] += (do_pre * c_new).sum(axis=0)
        dg, dc_prev = _gate_grads(xp, dc, do_pre, i, f, cand, c_prev, peep, dpeep, act_g, act_cand)
        dx[rows_x] = dg
        carry_h[act_x], carry_c[act_x] = dg @ w.T, dc_prev
    ctx.set_output("Input@GRAD", dx, lod=ctx.input_lod("Input"))
    if ctx.has_output("Weight@GRAD"):
        ctx.set_output("Weight@GRAD", h_prev_all.T @ dx)
    if ctx.has_output("Bias@GRAD"):
        parts = [dx.sum(axis=0)] + (dpeep if peep is not None else [])
        ctx.set_output("Bias@GRAD", xp.concatenate(parts).reshape(ctx.input("Bias").shape))
    if ctx.has_output("H0@GRAD"):
        ctx.set_output("H0@GRAD", carry_h)
    if ctx.has_output("C0@GRAD"):
        ctx.set_output("C0@GRAD", carry_c)


# -- lstmp -------------------------------------------------------------------------------
# Fluid 1.8's lstmp (fluid.layers.dynamic_lstmp): the LSTM above with a projection of the
# hidden state, r = act_proj(h @ ProjWeight) [T, P], fed back instead of h: Weight is [P, 4D],
# H0 the initial projection [num_seqs, P]. cell_clip > 0 clips the cell to [-clip, clip] (its
# gradient stops where clipped, carried part included, as Paddle's kernel), proj_clip > 0 the
# projection. Outputs Projection and Cell keep Input's LoD; BatchHidden (h), BatchGate and
# BatchCellPreAct are the kernel's scratch. As lstm's, the gradient flows from Projection only.

_PROJ_ACT = ("proj_activation", "tanh")


def _lstmp_shape(op):
    x, w, pw = in_var(op, "Input"), in_var(op, "Weight"), in_var(op, "ProjWeight")
    _acts(op)
    d, p = pw.shape
    if tuple(w.shape) != (p, 4 * d):
        raise GraphError(f"lstmp: Weight {w.name}{list(w.shape)} must be [proj_size {p}, 4 * {d}]")
    if x.shape[-1] >= 0 and x.shape[-1] != 4 * d:
        raise GraphError(f"lstmp: Input {x.name}{list(x.shape)} must have 4 * size = {4 * d} columns")
    for slot, cols in (("Projection", p), ("Cell", d), ("BatchHidden", d), ("BatchGate", 4 * d),
                       ("BatchCellPreAct", d)):
        if op.outputs.get(slot):
            set_out(op, slot, (-1, cols), x.dtype, max(x.lod_level, 1) if slot in ("Projection", "Cell") else None)


def _lstmp_grad(op):
    ins = {s: op.input(s) for s in ("Input", "Weight", "ProjWeight", "Bias", "H0", "C0") if op.input(s)}
    ins.update({s: op.output(s) for s in ("Projection", "Cell", "BatchHidden", "BatchGate", "BatchCellPreAct")})
    ins["Projection@GRAD"] = [grad_name(op.output("Projection")[0])]
    outs = {s + "@GRAD": [grad_name(n) for n in op.input(s)]
            for s in ("Input", "Weight", "ProjWeight", "Bias", "H0", "C0") if op.input(s)}
    return [GradOpSpec("lstmp_grad", ins, outs, dict(op.attrs))]


def _proj_act(ctx):
    name = str(ctx.attr(*_PROJ_ACT))
    if name not in ACTIVATIONS:
        raise GraphError(f"lstmp: proj_activation must be one of {ACTIVATIONS}, got {name!r}")
    return name


def _clip(xp, v, bound):
    return xp.clip(v, -bound, bound) if bound and bound > 0 else v


@register_op("lstmp", infer_shape=_lstmp_shape, grad=_lstmp_grad)
def lstmp(ctx):
    xp = ctx.xp
    x, s = _checked_segments(ctx, "lstmp")
    w, pw = ctx.input("Weight"), ctx.input("ProjWeight")
    d, p = pw.shape
    act_g, act_cell, act_cand = _acts(ctx)
    act_p = _proj_act(ctx)
    cell_clip, proj_clip = float(ctx.attr("cell_clip", 0.0) or 0.0), float(ctx.attr("proj_clip", 0.0) or 0.0)
    bias, peep = _bias(ctx, x, d)
    g_all = x + bias
    r, c = _initial(ctx, "H0", s, p, x.dtype), _initial(ctx, "C0", s, d, x.dtype)
    gates = xp.empty_like(x)
    proj, cell, hidden = (xp.empty((x.shape[0], k), x.dtype) for k in (p, d, d))
    for active, rows in _steps(s, bool(ctx.attr("is_reverse", False))):
        rows_x, act_x = _to(xp, rows), _to(xp, active)
        r_prev, c_prev = r[act_x], c[act_x]
        g = g_all[rows_x] + r_prev @ w
        cand = _act(xp, act_cand, g[:, :d])
        gi, gf = g[:, d:2 * d], g[:, 2 * d:3 * d]
        if peep is not None:
            gi, gf = gi + c_prev * peep[0], gf + c_prev * peep[1]
        i, f = _act(xp, act_g, gi), _act(xp, act_g, gf)
        c_new = _clip(xp, cand * i + c_prev * f, cell_clip)
        o = _act(xp, act_g, g[:, 3 * d:] + (c_new * peep[2] if peep is not None else 0))
        h_new = o * _act(xp, act_cell, c_new)
        r_new = _clip(xp, _act(xp, act_p, h_new @ pw), proj_clip)
        gates[rows_x] = xp.concatenate([cand, i, f, o], axis=1)
        proj[rows_x], cell[rows_x], hidden[rows_x] = r_new, c_new, h_new
        r[act_x], c[act_x] = r_new, c_new
    lod = ctx.input_lod("Input")
    ctx.set_output("Projection", proj, lod=lod)
    ctx.set_output("Cell", cell, lod=lod)
    ctx.set_output("BatchHidden", hidden)
    ctx.set_output("BatchGate", gates)
    ctx.set_output("BatchCellPreAct", cell.copy())


@register_op("lstmp_grad")
def lstmp_grad(ctx):
    xp = ctx.xp
    x, s = _checked_segments(ctx, "lstmp_grad")
    w, pw = ctx.input("Weight"), ctx.input("ProjWeight")
    d, p = pw.shape
    act_g, act_cell, act_cand = _acts(ctx)
    act_p = _proj_act(ctx)
    cell_clip, proj_clip = float(ctx.attr("cell_clip", 0.0) or 0.0), float(ctx.attr("proj_clip", 0.0) or 0.0)
    _, peep = _bias(ctx, x, d)
    reverse = bool(ctx.attr("is_reverse", False))
    proj, cell, hidden, gates = ctx.input("Projection"), ctx.input("Cell"), ctx.input("BatchHidden"), ctx.input("BatchGate")
    # each row's previous projection and cell (H0 / C0 or zeros at a sequence's first step)
    r, c = _initial(ctx, "H0", s, p, x.dtype), _initial(ctx, "C0", s, d, x.dtype)
    r_prev_all, c_prev_all = xp.empty_like(proj), xp.empty_like(cell)
    for active, rows in _steps(s, reverse):
        rows_x, act_x = _to(xp, rows), _to(xp, active)
        r_prev_all[rows_x], c_prev_all[rows_x] = r[act_x], c[act_x]
        r[act_x], c[act_x] = proj[rows_x], cell[rows_x]
    dproj = ctx.input("Projection@GRAD")
    dx = xp.zeros_like(x)
    dpw = xp.zeros_like(pw)
    dpeep = [xp.zeros((d,), x.dtype) for _ in range(3)]
    carry_r, carry_c = xp.zeros((s.num_seqs, p), x.dtype), xp.zeros((s.num_seqs, d), x.dtype)
    for active, rows in reversed(list(_steps(s, reverse))):
        rows_x, act_x = _to(xp, rows), _to(xp, active)
        cand, i, f, o = (gates[rows_x, k * d:(k + 1) * d] for k in range(4))
        c_new, c_prev, h_new, r_new = cell[rows_x], c_prev_all[rows_x], hidden[rows_x], proj[rows_x]
        dr = dproj[rows_x] + carry_r[act_x]
        if proj_clip > 0:
            dr = dr * (xp.abs(r_new) < proj_clip)
        dh_pre = dr * _act_grad(act_p, r_new)
        dpw += h_new.T @ dh_pre
        dh = dh_pre @ pw.T
        c_act = _act(xp, act_cell, c_new)
        do_pre = dh * c_act * _act_grad(act_g, o)
        dc = carry_c[act_x] + dh * o * _act_grad(act_cell, c_act)
        if peep is not None:
            dc = dc + do_pre * peep[2]
            dpeep[2] += (do_pre * c_new).sum(axis=0)
        if cell_clip > 0:
            dc = dc * (xp.abs(c_new) < cell_clip)
        dg, dc_prev = _gate_grads(xp, dc, do_pre, i, f, cand, c_prev, peep, dpeep, act_g, act_cand)
        dx[rows_x] = dg
        carry_r[act_x], carry_c[act_x] = dg @ w.T, dc_prev
    ctx.set_output("Input@GRAD", dx, lod=ctx.input_lod("Input"))
    if ctx.has_output("Weight@GRAD"):
        ctx.set_output("Weight@GRAD", r_prev_all.T @ dx)
    if ctx.has_output("ProjWeight@GRAD"):
        ctx.set_output("ProjWeight@GRAD", dpw)
    if ctx.has_output("Bias@GRAD"):
        parts = [dx.sum(axis=0)] + (dpeep if peep is not None else [])
        ctx.set_output("Bias@GRAD", xp.concatenate(parts).reshape(ctx.input("Bias").shape))
    if ctx.has_output("H0@GRAD"):
        ctx.set_output("H0@GRAD", carry_r)
    if ctx.has_output("C0@GRAD"):
        ctx.set_output("C0@GRAD", carry_c)


# -- cudnn_lstm --------------------------------------------------------------------------
# fluid.layers.lstm's op. Paddle 1.8 has only a cuDNN kernel: on CPU it stops with "CPU is not
# support for this kernel now"; psjob has none at all, so a program holding it builds (shapes
# as Paddle infers them) and stops when it runs. The op reads no Cache here.

def _cudnn_lstm_shape(op):
    x = in_var(op, "Input")
    # as Paddle 1.8 infers it: hidden_size wide, bidirectional or not
    set_out(op, "Out", list(x.shape[:-1]) + [int(op.attr("hidden_size"))], x.dtype)
    for slot, init in (("last_h", "InitH"), ("last_c", "InitC")):
        set_out(op, slot, in_var(op, init).shape, x.dtype)


@register_op("cudnn_lstm", infer_shape=_cudnn_lstm_shape)
def cudnn_lstm(ctx):
    raise NotImplementedError("cudnn_lstm (fluid.layers.lstm): Paddle 1.8 has only a cuDNN kernel for it "
                              "(on CPU: 'CPU is not support for this kernel now') and psjob has none; "
                              "use fluid.layers.dynamic_lstm, or paddle.nn.LSTM in Paddle 2.x code")

"""`hierarchical_sigmoid`: the hierarchical sigmoid loss (Morin and Bengio, 2005), as Paddle 1.8's
op behind fluid.layers.hsigmoid, with its gradient.

Inputs X [N, D], W [num_classes - 1, D], Label [N, 1], Bias [num_classes - 1, 1] (optional), or
with a custom tree PathTable / PathCode [N, L] (node ids and bits, a negative id ending a path).
The default tree is Paddle's SimpleCode: c = label + num_classes; the path has bit_length(c) - 1
nodes, node j is (c >> (j + 1)) - 1 with bit (c >> j) & 1. PreOut [N, L] (L =
bit_length(num_classes - 1)) holds softplus(z_j), z_j = clip(x . W[node] + b[node], -40, 40), and 0
past a path's end — so, as in Paddle, each such padding slot adds log 2 to Out:
Out[i] = sum_j PreOut[i, j] - sum_{j on the path} bit_j * z_j.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.core import scatter_add
from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out


def _host(xp, a):
    return np.asarray(a if xp is np else xp.asnumpy(a))


def _code_length(op_or_ctx, table_shape=None):
    if table_shape is not None:
        return int(table_shape[1])
    return int(op_or_ctx.attr("num_classes", 2) - 1).bit_length()


def _hs_shape(op):
    x, w = in_var(op, "X"), in_var(op, "W")
    if int(op.attr("num_classes", 0)) < 2:
        raise GraphError(f"hierarchical_sigmoid: num_classes must be at least 2, got {op.attr('num_classes')}")
    if len(x.shape) != 2 or len(w.shape) != 2 or (x.shape[1] >= 0 and w.shape[1] != x.shape[1]):
        raise GraphError(f"hierarchical_sigmoid: X {x.name}{list(x.shape)} and W {w.name}{list(w.shape)} must be "
                         "[N, D] and [nodes, D]")
    table = in_var(op, "PathTable").shape if op.input("PathTable") else None
    set_out(op, "Out", (x.shape[0], 1), x.dtype)
    set_out(op, "PreOut", (x.shape[0], _code_length(op, table)), x.dtype)
    if op.output("W_Out"):
        set_out(op, "W_Out", w.shape, w.dtype)


def _paths(ctx, rows):
    """(nodes [N, L] with -1 past each path's end, bits [N, L])."""
    xp = ctx.xp
    if ctx.has_input("PathTable"):
        nodes = _host(xp, ctx.input("PathTable")).astype(np.int64).reshape(rows, -1)
        bits = _host(xp, ctx.input("PathCode")).astype(np.int64).reshape(rows, -1)
        ended = np.cumsum(nodes < 0, axis=1) > 0
        return np.where(ended, -1, nodes), np.where(ended, 0, bits)
    classes = int(ctx.attr("num_classes"))
    labels = _host(xp, ctx.input("Label")).astype(np.int64).reshape(-1)
    if labels.shape[0] != rows or (labels.size and (labels.min() < 0 or labels.max() >= classes)):
        raise ValueError(f"hierarchical_sigmoid: Label needs one class in [0, {classes}) per row of X")
    c = labels[:, None] + classes
    j = np.arange(_code_length(ctx), dtype=np.int64)[None, :]
    lengths = np.floor(np.log2(c)).astype(np.int64)  # bit_length(c) - 1
    on_path = j < lengths
    return np.where(on_path, (c >> (j + 1)) - 1, -1), np.where(on_path, (c >> j) & 1, 0)


def _logits(ctx, x, w, nodes):
    xp = ctx.xp
    safe = np.where(nodes < 0, 0, nodes)
    idx = safe if xp is np else xp.asarray(safe)
    z = xp.einsum("nd,nld->nl", x, w[idx])
    if ctx.has_input("Bias"):
        z = z + ctx.input("Bias").reshape(-1)[idx]
    mask = (nodes >= 0).astype(x.dtype)
    mask = mask if xp is np else xp.asarray(mask)
    return xp.clip(z, -40.0, 40.0) * mask, mask, idx


@register_op("hierarchical_sigmoid", infer_shape=_hs_shape, grad=lambda op: [GradOpSpec(
    "hierarchical_sigmoid_grad",
    {slot: op.input(slot) for slot in ("X", "W", "Label", "Bias", "PathTable", "PathCode") if op.input(slot)}
    | {"Out@GRAD": [grad_name(op.output("Out")[0])]},
    {slot + "@GRAD": [grad_name(op.input(slot)[0])] for slot in ("X", "W", "Bias") if op.input(slot)},
    dict(op.attrs))], no_grad_inputs=("Label", "PathTable", "PathCode"))
def hierarchical_sigmoid(ctx):
    xp, x, w = ctx.xp, ctx.input("X"), ctx.input("W")
    nodes, bits = _paths(ctx, x.shape[0])
    z, mask, _ = _logits(ctx, x, w, nodes)
    pre = xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))
    b = bits.astype(x.dtype) if xp is np else xp.asarray(bits, dtype=x.dtype)
    ctx.set_output("Out", (pre.sum(axis=1) - (b * z).sum(axis=1)).reshape(-1, 1))
    ctx.set_output("PreOut", pre)
    if ctx.has_output("W_Out"):
        ctx.set_output("W_Out", w)


@register_op("hierarchical_sigmoid_grad")
def hierarchical_sigmoid_grad(ctx):
    xp, x, w = ctx.xp, ctx.input("X"), ctx.input("W")
    nodes, bits = _paths(ctx, x.shape[0])
    z, mask, idx = _logits(ctx, x, w, nodes)
    e = xp.exp(-xp.abs(z))
    sig = xp.where(z >= 0, 1 / (1 + e), e / (1 + e))
    b = bits.astype(x.dtype) if xp is np else xp.asarray(bits, dtype=x.dtype)
    dz = (sig - b) * mask * ctx.input("Out@GRAD").reshape(-1, 1)
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", xp.einsum("nl,nld->nd", dz, w[idx]))
    flat = idx.reshape(-1)
    if ctx.has_output("W@GRAD"):
        dw = xp.zeros_like(w)
        scatter_add(xp, dw, flat, (dz[:, :, None] * x[:, None, :]).reshape(-1, x.shape[1]))
        ctx.set_output("W@GRAD", dw)
    if ctx.has_output("Bias@GRAD"):
        bias = ctx.input("Bias")
        db = xp.zeros(bias.shape[0], dtype=bias.dtype)
        scatter_add(xp, db, flat, dz.reshape(-1))
        ctx.set_output("Bias@GRAD", db.reshape(bias.shape))

"""`cvm` (continuous value model): the show and click columns of CTR embeddings, as Paddle's
op behind fluid.layers.continuous_value_model / paddle.static.nn.continuous_value_model.

X [N, D] holds show and click in its first two columns. use_cvm: Y [N, D] with
Y[:, 0] = log(show + 1), Y[:, 1] = log(click + 1) - log(show + 1), the rest X's; otherwise
Y = X[:, 2:]. The gradient, as Paddle's cvm_grad: X@GRAD[:, 2:] is Y@GRAD's embedding columns and
X@GRAD[:, :2] is CVM's row (the batch's show and click, [N, 2] — one row per sequence when X has a
LoD, copied to each of its rows), which the sparse table's push reads as statistics.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out
from psjob.fluid.ops.sequence_ops import segments


def _cvm_shape(op):
    x = in_var(op, "X")
    if len(x.shape) != 2 or 0 <= x.shape[1] < 2:
        raise GraphError(f"cvm: X {x.name}{list(x.shape)} must be [N, D] with D >= 2 (show, click, ...)")
    width = x.shape[1] if op.attr("use_cvm", True) else (x.shape[1] - 2 if x.shape[1] >= 0 else -1)
    set_out(op, "Y", (x.shape[0], width), x.dtype, x.lod_level)


@register_op("cvm", infer_shape=_cvm_shape, grad=lambda op: [GradOpSpec(
    "cvm_grad", {"X": op.input("X"), "CVM": op.input("CVM"), "Y@GRAD": [grad_name(op.output("Y")[0])]},
    {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))], no_grad_inputs=("CVM",))
def cvm(ctx):
    xp, x = ctx.xp, ctx.input("X")
    if ctx.attr("use_cvm", True):
        show = xp.log(x[:, 0:1] + 1)
        y = xp.concatenate([show, xp.log(x[:, 1:2] + 1) - show, x[:, 2:]], axis=1)
    else:
        y = x[:, 2:].copy()
    ctx.set_output("Y", y, lod=ctx.input_lod("X"))


@register_op("cvm_grad")
def cvm_grad(ctx):
    xp, x, dy, stats = ctx.xp, ctx.input("X"), ctx.input("Y@GRAD"), ctx.input("CVM")
    lod = ctx.input_lod("X")
    if lod:
        s = segments(lod, "cvm_grad")
        rows = stats[xp.asarray(s.seg(np)) if xp is not np else s.seg(np)]
    else:
        rows = stats
    if rows.shape[0] != x.shape[0]:
        raise ValueError(f"cvm: CVM has {stats.shape[0]} rows for X's {x.shape[0]} rows "
                         f"({'sequences' if lod else 'rows'} must match)")
    tail = dy[:, 2:] if ctx.attr("use_cvm", True) else dy
    ctx.set_output("X@GRAD", xp.concatenate([rows[:, :2].astype(dy.dtype), tail], axis=1), lod=lod)

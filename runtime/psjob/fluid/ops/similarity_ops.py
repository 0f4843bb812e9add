"""`cos_sim`: the cosine similarity of the rows of X and Y (Paddle's cos_sim op).

X is [N, D...] and Y is [N, D...] or [1, D...] (one row against every row of X);
rows are flattened after the first dimension. Out is [N, 1]; XNorm and YNorm, the
rows' L2 norms ([N, 1] and [N or 1, 1]), are outputs too, as in Paddle, and the
gradient reads them:

    dX = dOut * (Y / (|x| |y|) - Out * X / |x|^2)
    dY = dOut * (X / (|x| |y|) - Out * Y / |y|^2)   (summed over the rows for a [1, D] Y)

As in Paddle there is no epsilon: a zero row gives a non-finite similarity.
"""
from __future__ import annotations

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out


def _rows(v):
    return v.reshape(v.shape[0], -1)


def _cos_sim_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    if len(x.shape) < 2 or len(y.shape) != len(x.shape):
        raise GraphError(f"cos_sim: X {x.name}{list(x.shape)} and Y {y.name}{list(y.shape)} must have "
                         "the same rank, at least 2")
    if list(x.shape[1:]) != list(y.shape[1:]):
        raise GraphError(f"cos_sim: X {x.name}{list(x.shape)} and Y {y.name}{list(y.shape)} differ after "
                         "the first dimension")
    if y.shape[0] not in (1, -1) and x.shape[0] not in (-1, y.shape[0]):
        raise GraphError(f"cos_sim: Y {y.name}{list(y.shape)} must have as many rows as X "
                         f"{x.name}{list(x.shape)}, or one")
    set_out(op, "Out", (x.shape[0], 1), x.dtype, x.lod_level)
    set_out(op, "XNorm", (x.shape[0], 1), x.dtype)
    set_out(op, "YNorm", (y.shape[0], 1), y.dtype)


def _cos_sim_grad(op):
    ins = {"X": op.input("X"), "Y": op.input("Y"), "Out": op.output("Out"),
           "XNorm": op.output("XNorm"), "YNorm": op.output("YNorm"),
           "Out@GRAD": [grad_name(op.output("Out")[0])]}
    outs = {"X@GRAD": [grad_name(op.input("X")[0])], "Y@GRAD": [grad_name(op.input("Y")[0])]}
    return [GradOpSpec("cos_sim_grad", ins, outs, dict(op.attrs))]


@register_op("cos_sim", infer_shape=_cos_sim_shape, grad=_cos_sim_grad)
def cos_sim(ctx):
    xp = ctx.xp
    x, y = _rows(ctx.input("X")), _rows(ctx.input("Y"))
    if y.shape[0] not in (1, x.shape[0]):
        raise ValueError(f"cos_sim: Y has {y.shape[0]} rows, X {x.shape[0]}: Y needs as many, or one")
    x_norm = xp.sqrt((x * x).sum(axis=1, keepdims=True))
    y_norm = xp.sqrt((y * y).sum(axis=1, keepdims=True))
    out = (x * y).sum(axis=1, keepdims=True) / (x_norm * y_norm)
    ctx.set_output("Out", out.astype(x.dtype, copy=False), lod=ctx.input_lod("X"))
    ctx.set_output("XNorm", x_norm)
    ctx.set_output("YNorm", y_norm)


@register_op("cos_sim_grad")
def cos_sim_grad(ctx):
    x_in, y_in = ctx.input("X"), ctx.input("Y")
    x, y = _rows(x_in), _rows(y_in)
    out, dout = ctx.input("Out"), ctx.input("Out@GRAD")
    x_norm, y_norm = ctx.input("XNorm"), ctx.input("YNorm")
    dx = dout * (y / (x_norm * y_norm) - out * x / (x_norm * x_norm))
    dy = dout * (x / (x_norm * y_norm) - out * y / (y_norm * y_norm))
    if y.shape[0] == 1 and x.shape[0] != 1:
        dy = dy.sum(axis=0, keepdims=True)
    ctx.set_output("X@GRAD", dx.reshape(x_in.shape).astype(x_in.dtype, copy=False))
    ctx.set_output("Y@GRAD", dy.reshape(y_in.shape).astype(y_in.dtype, copy=False))

"""Layer normalization (Paddle's `layer_norm` op, behind `paddle.nn.LayerNorm`,
`nn.functional.layer_norm` and `static.nn.layer_norm`).

X is seen as a matrix [left, right]: left = the product of the dimensions before
`begin_norm_axis`, right = the product of the rest. Each row is normalized by its own
mean and (biased) variance, then scaled and shifted by the optional Scale and Bias of
size `right`:  Y = (x - mean) / sqrt(var + epsilon) * Scale + Bias. Mean and Variance
([left]) are outputs too, as in Paddle; the gradient reads them instead of recomputing.
(Ba, Kiros and Hinton, "Layer Normalization", 2016.)
"""
from __future__ import annotations

import math

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out


def _split(shape, axis):
    left, right = 1, 1
    for d in shape[:axis]:
        left = -1 if (d < 0 or left < 0) else left * d
    for d in shape[axis:]:
        right = -1 if (d < 0 or right < 0) else right * d
    return left, right


def _layer_norm_shape(op):
    x = in_var(op, "X")
    axis = int(op.attr("begin_norm_axis", 1))
    if not 0 < axis < len(x.shape) + (len(x.shape) == 1):
        raise GraphError(f"layer_norm: begin_norm_axis {axis} is out of range for {x.name}{list(x.shape)}")
    left, right = _split(x.shape, axis)
    for slot in ("Scale", "Bias"):
        if op.input(slot):
            p = in_var(op, slot)
            size = math.prod(p.shape)
            if right >= 0 and size != right:
                raise GraphError(f"layer_norm: {slot} {p.name}{list(p.shape)} has {size} elements but "
                                 f"{x.name}{list(x.shape)} normalizes {right} from axis {axis}")
    set_out(op, "Y", x.shape, x.dtype, x.lod_level)
    set_out(op, "Mean", (left,), x.dtype)
    set_out(op, "Variance", (left,), x.dtype)


def _layer_norm_grad(op):
    ins = {slot: op.input(slot) for slot in ("X", "Scale", "Bias") if op.input(slot)}
    ins.update({"Mean": op.output("Mean"), "Variance": op.output("Variance"),
                "Y@GRAD": [grad_name(op.output("Y")[0])]})
    outs = {slot + "@GRAD": [grad_name(n) for n in op.input(slot)]
            for slot in ("X", "Scale", "Bias") if op.input(slot)}
    return [GradOpSpec("layer_norm_grad", ins, outs, dict(op.attrs))]


def _rows(ctx, x):
    axis = int(ctx.attr("begin_norm_axis", 1))
    right = math.prod(x.shape[axis:])
    return x.reshape(-1, right)


@register_op("layer_norm", infer_shape=_layer_norm_shape, grad=_layer_norm_grad)
def layer_norm(ctx):
    x = ctx.input("X")
    x2 = _rows(ctx, x)
    mean = x2.mean(axis=1)
    var = x2.var(axis=1)
    y = (x2 - mean[:, None]) / ctx.xp.sqrt(var[:, None] + ctx.attr("epsilon", 1e-5))
    if ctx.has_input("Scale"):
        y = y * ctx.input("Scale").reshape(1, -1)
    if ctx.has_input("Bias"):
        y = y + ctx.input("Bias").reshape(1, -1)
    ctx.set_output("Y", y.reshape(x.shape).astype(x.dtype, copy=False), lod=ctx.input_lod("X"))
    ctx.set_output("Mean", mean.astype(x.dtype, copy=False))
    ctx.set_output("Variance", var.astype(x.dtype, copy=False))


@register_op("layer_norm_grad")
def layer_norm_grad(ctx):
    x = ctx.input("X")
    x2, dy = _rows(ctx, x), _rows(ctx, ctx.input("Y@GRAD"))
    mean, var = ctx.input("Mean").reshape(-1, 1), ctx.input("Variance").reshape(-1, 1)
    rstd = 1.0 / ctx.xp.sqrt(var + ctx.attr("epsilon", 1e-5))
    xhat = (x2 - mean) * rstd
    if ctx.has_output("Bias@GRAD"):
        ctx.set_output("Bias@GRAD", dy.sum(axis=0).reshape(ctx.input("Bias").shape))
    if ctx.has_output("Scale@GRAD"):
        ctx.set_output("Scale@GRAD", (dy * xhat).sum(axis=0).reshape(ctx.input("Scale").shape))
    if ctx.has_output("X@GRAD"):
        g = dy * ctx.input("Scale").reshape(1, -1) if ctx.has_input("Scale") else dy
        dx = rstd * (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True))
        ctx.set_output("X@GRAD", dx.reshape(x.shape).astype(x.dtype, copy=False))

"""Gradient-clipping ops appended by fluid/clip.py (Optimize role, before the
optimizer op of the gradient they clip).

* `clip` (Paddle's): Out = min(max(X, min), max).
* `clip_by_norm` (Paddle's): Out = X * max_norm / max(||X||_2, max_norm).
* `squared_l2_norm` (Paddle's): Out[0] = sum(X^2).
* `l1_norm` (Paddle's): Out[0] = sum(|X|) (paddle.static.ctr_metric_bundle's absolute error).
* `clip_global_norm_scale` (psjob): Out[0] = clip_norm / max(sqrt(sum_i X_i), clip_norm),
  from the per-gradient squared norms X_i — Fluid spells this as sums, sqrt,
  fill_constant, elementwise_max and elementwise_div; one op keeps the
  connected group the transpiler moves to a pserver small.
* `clip_global_norm_apply` (psjob): Out = X * Scale[0].

SelectedRows inputs: duplicate ids are summed first wherever the result
depends on it (value clipping, norms), so every op sees the gradient the
rows stand for; the output stays SelectedRows over the rows present.
"""
from __future__ import annotations

from psjob.fluid.core import SelectedRows
from psjob.fluid.ops.registry import in_var, register_op, set_out, simple_grad
from psjob.foundation.kernels.optimizers import merge_duplicate_rows


def _like_x(op):
    x = in_var(op, "X")
    set_out(op, "Out", x.shape, x.dtype, x.lod_level)
    out = op.block._find_var_recursive(op.output("Out")[0])
    if out is not None:
        out.type = x.type


def _scalar_out(op):
    set_out(op, "Out", [1], in_var(op, "X").dtype)


def _merged(xp, x):
    """(values to compute on, rebuild(values) -> output of the input's kind)."""
    if isinstance(x, SelectedRows):
        rows, values = (x.rows, x.values) if x.unique else merge_duplicate_rows(xp, x.rows, x.values)
        return values, lambda v: SelectedRows(rows, v, x.height, unique=True)
    return x, lambda v: v


@register_op("clip", infer_shape=_like_x, grad=simple_grad("clip_grad"))
def clip(ctx):
    values, rebuild = _merged(ctx.xp, ctx.input("X"))
    lo, hi = float(ctx.attr("min")), float(ctx.attr("max"))
    ctx.set_output("Out", rebuild(ctx.xp.clip(values, lo, hi)))


@register_op("clip_grad")
def clip_grad(ctx):
    """paddle.clip on a forward tensor: the gradient passes where min < x < max (Paddle's rule)."""
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    inside = (x > float(ctx.attr("min"))) & (x < float(ctx.attr("max")))
    ctx.set_output("X@GRAD", dout * inside)


@register_op("clip_by_norm", infer_shape=_like_x)
def clip_by_norm(ctx):
    xp = ctx.xp
    values, rebuild = _merged(xp, ctx.input("X"))
    max_norm = float(ctx.attr("max_norm"))
    norm = xp.sqrt((values.astype("float64") ** 2).sum())
    factor = (max_norm / xp.maximum(norm, max_norm)).astype(values.dtype)
    ctx.set_output("Out", rebuild(values * factor))


@register_op("squared_l2_norm", infer_shape=_scalar_out)
def squared_l2_norm(ctx):
    xp = ctx.xp
    x = ctx.input("X")
    values, _ = _merged(xp, x)
    ctx.set_output("Out", (values.astype("float64") ** 2).sum().reshape(1).astype(values.dtype))


@register_op("l1_norm", infer_shape=_scalar_out, grad=simple_grad("l1_norm_grad"))
def l1_norm(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", ctx.xp.abs(x.astype("float64")).sum().reshape(1).astype(x.dtype))


@register_op("l1_norm_grad")
def l1_norm_grad(ctx):
    x = ctx.input("X")
    ctx.set_output("X@GRAD", ctx.xp.sign(x) * ctx.input("Out@GRAD").reshape(()))


@register_op("clip_global_norm_scale", infer_shape=_scalar_out)
def clip_global_norm_scale(ctx):
    xp = ctx.xp
    squares = ctx.input_list("X")
    total = squares[0].astype("float64").reshape(1)
    for s in squares[1:]:
        total = total + s.astype("float64").reshape(1)
    clip_norm = float(ctx.attr("max_global_norm"))
    scale = clip_norm / xp.maximum(xp.sqrt(total), clip_norm)
    ctx.set_output("Out", scale.astype(squares[0].dtype))


@register_op("clip_global_norm_apply", infer_shape=_like_x)
def clip_global_norm_apply(ctx):
    x = ctx.input("X")
    scale = ctx.input("Scale").reshape(())
    if isinstance(x, SelectedRows):
        # Scaling is linear: duplicates need no merging.
        ctx.set_output("Out", SelectedRows(x.rows, x.values * scale.astype(x.values.dtype), x.height,
                                           unique=x.unique))
        return
    ctx.set_output("Out", x * scale.astype(x.dtype))

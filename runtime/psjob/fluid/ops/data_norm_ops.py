"""`data_norm`: CTR models' normalization by running statistics, as Paddle's op behind
fluid.layers.data_norm and paddle.static.nn.data_norm.

X is [N, C]. Three parameters of [C] hold the statistics: BatchSize (n), BatchSum (s) and
BatchSquareSum (q). The forward pass normalizes with them, never with the batch's own:

    Means = s / n        Scales = sqrt(n / q)        Y = (X - Means) * Scales

and, with enable_scale_and_shift, Y = Y * scale_w + bias. Their "gradients" are the batch's
statistics, which the optimizer then applies to them (Paddle's data_norm_grad, checked against
Paddle 3.0.0): BatchSize@GRAD = N, BatchSum@GRAD = sum(X), BatchSquareSum@GRAD =
sum((X - Means)^2) + N * epsilon, per column. X@GRAD = Y@GRAD * Scales (times scale_w).

slot_dim > 0 splits each row into slots of slot_dim columns whose first column is the slot's
show count: a slot whose show is 0 (|show| < 1e-7) gives Y = 0 there and adds nothing to the
statistics, which are then per-slot averages: BatchSize@GRAD = 1 where any row showed the slot
(0 where none did), BatchSum@GRAD = sum / count, BatchSquareSum@GRAD = square sum / count +
count * epsilon. With scale and shift, a hidden slot's X@GRAD (and its share of the scale_w
and bias gradients) is 0; without, X@GRAD = Y@GRAD * Scales everywhere, as Paddle's.
"""
from __future__ import annotations

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out

_STATS = ("BatchSize", "BatchSum", "BatchSquareSum")
_AFFINE = ("scale_w", "bias")
_MIN_SHOW = 1e-7  # a slot's show count below this (in magnitude) hides the slot


def _channels(x) -> int:
    return int(x.shape[1])


def _data_norm_shape(op):
    x = in_var(op, "X")
    if len(x.shape) != 2:
        raise GraphError(f"data_norm: X {x.name}{list(x.shape)} must be 2-D [N, C] (Paddle's data_norm "
                         "takes a batch of feature rows)")
    c = _channels(x)
    eps = float(op.attr("epsilon", 1e-5))
    if not 0.0 <= eps <= 1e-3:
        raise GraphError(f"data_norm: epsilon must lie in [0, 0.001] (as Paddle's), got {eps}")
    slot_dim = int(op.attr("slot_dim", -1))
    if slot_dim > 0 and c >= 0 and c % slot_dim:
        raise GraphError(f"data_norm: X's {c} columns are not a whole number of slots of slot_dim {slot_dim}")
    for slot in _STATS + _AFFINE:
        if op.input(slot):
            p = in_var(op, slot)
            if c >= 0 and list(p.shape) != [c]:
                raise GraphError(f"data_norm: {slot} {p.name}{list(p.shape)} must be [{c}], one per column "
                                 f"of X {x.name}{list(x.shape)}")
    set_out(op, "Y", x.shape, x.dtype, x.lod_level)
    set_out(op, "Means", (c,), x.dtype)
    set_out(op, "Scales", (c,), x.dtype)


def _data_norm_grad(op):
    ins = {slot: op.input(slot) for slot in ("X",) + _STATS + _AFFINE if op.input(slot)}
    ins.update({"Means": op.output("Means"), "Scales": op.output("Scales"),
                "Y@GRAD": [grad_name(op.output("Y")[0])]})
    outs = {slot + "@GRAD": [grad_name(n) for n in op.input(slot)]
            for slot in ("X",) + _STATS + _AFFINE if op.input(slot)}
    return [GradOpSpec("data_norm_grad", ins, outs, dict(op.attrs))]


def _shown(ctx, x):
    """[N, C] booleans: True where the column's slot is shown in that row (all True without slots)."""
    xp, slot_dim = ctx.xp, int(ctx.attr("slot_dim", -1))
    if slot_dim <= 0:
        return None
    n, c = x.shape
    if c % slot_dim:
        raise ValueError(f"data_norm: X's {c} columns are not a whole number of slots of slot_dim {slot_dim}")
    show = x[:, ::slot_dim]
    visible = (show <= -_MIN_SHOW) | (show >= _MIN_SHOW)
    return xp.repeat(visible, slot_dim, axis=1)


def _check_x(ctx, x):
    if x.ndim != 2:
        raise ValueError(f"data_norm: X must be 2-D [N, C], got shape {tuple(x.shape)}")
    if ctx.input("BatchSize").shape[0] != x.shape[1]:
        raise ValueError(f"data_norm: X has {x.shape[1]} columns but the statistics have "
                         f"{ctx.input('BatchSize').shape[0]}")


@register_op("data_norm", infer_shape=_data_norm_shape, grad=_data_norm_grad)
def data_norm(ctx):
    xp, x = ctx.xp, ctx.input("X")
    _check_x(ctx, x)
    n, s, q = (ctx.input(slot) for slot in _STATS)
    means = s / n
    scales = xp.sqrt(n / q)
    y = (x - means) * scales
    if ctx.attr("enable_scale_and_shift", False):
        y = y * ctx.input("scale_w") + ctx.input("bias")
    shown = _shown(ctx, x)
    if shown is not None:
        y = xp.where(shown, y, 0)
    ctx.set_output("Y", y.astype(x.dtype, copy=False), lod=ctx.input_lod("X"))
    ctx.set_output("Means", means.astype(x.dtype, copy=False))
    ctx.set_output("Scales", scales.astype(x.dtype, copy=False))


@register_op("data_norm_grad")
def data_norm_grad(ctx):
    xp, x, dy = ctx.xp, ctx.input("X"), ctx.input("Y@GRAD")
    _check_x(ctx, x)
    means, scales = ctx.input("Means"), ctx.input("Scales")
    eps = float(ctx.attr("epsilon", 1e-5))
    affine = bool(ctx.attr("enable_scale_and_shift", False))
    shown = _shown(ctx, x)
    centred = x - means
    if ctx.has_output("X@GRAD"):
        dx = dy * scales * ctx.input("scale_w") if affine else dy * scales
        if affine and shown is not None:
            dx = xp.where(shown, dx, 0)
        ctx.set_output("X@GRAD", dx.astype(x.dtype, copy=False), lod=ctx.input_lod("X"))
    if affine:
        live = dy if shown is None else xp.where(shown, dy, 0)
        ctx.set_output("scale_w@GRAD", (live * centred * scales).sum(axis=0).astype(x.dtype, copy=False))
        ctx.set_output("bias@GRAD", live.sum(axis=0).astype(x.dtype, copy=False))
    if shown is None:
        count = xp.full(x.shape[1], x.shape[0], dtype=x.dtype)
        total, square = x.sum(axis=0), (centred * centred).sum(axis=0)
        size_grad, square_grad = count, square + count * eps
    else:
        weight = shown.astype(x.dtype)
        count = weight.sum(axis=0)
        total, square = (x * weight).sum(axis=0), (centred * centred * weight).sum(axis=0)
        seen = count >= 1
        safe = xp.where(seen, count, 1)
        total = xp.where(seen, total / safe, 0)
        square_grad = xp.where(seen, square / safe + count * eps, 0)
        size_grad = seen.astype(x.dtype)
    ctx.set_output("BatchSize@GRAD", size_grad.astype(x.dtype, copy=False))
    ctx.set_output("BatchSum@GRAD", total.astype(x.dtype, copy=False))
    ctx.set_output("BatchSquareSum@GRAD", square_grad.astype(x.dtype, copy=False))

"""Constant padding and cropping (Paddle 1.8 API docs, fluid.layers.pad / pad_constant_like /
crop; Paddle 2.x's paddle.nn.functional.pad in constant mode builds `pad` too).

* pad: X padded by `paddings` ([before_0, after_0, before_1, after_1, ...], one pair per
  dimension) with `pad_value`; the gradient is the matching slice of Out@GRAD.
* pad_constant_like: Y padded at the end of each dimension to X's shape with `pad_value`
  (Out has X's shape); gradient for Y only.
* crop: the block of X starting at `offsets` with shape `shape` (or Y's shape when Y is given);
  the gradient is Out@GRAD placed back into zeros of X's shape.
"""
from __future__ import annotations

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out, simple_grad


def _pairs(op_or_ctx, ndim):
    pads = [int(p) for p in op_or_ctx.attr("paddings", [])]
    if len(pads) != 2 * ndim or any(p < 0 for p in pads):
        raise GraphError(f"pad: paddings {pads} must hold two non-negative values per dimension of X ({ndim})")
    return [(pads[2 * i], pads[2 * i + 1]) for i in range(ndim)]


def _pad_shape(op):
    x = in_var(op, "X")
    pairs = _pairs(op, len(x.shape))
    set_out(op, "Out", [d + b + a if d >= 0 else -1 for d, (b, a) in zip(x.shape, pairs)], x.dtype)


@register_op("pad", infer_shape=_pad_shape, grad=simple_grad("pad_grad"))
def pad(ctx):
    xp, x = ctx.xp, ctx.input("X")
    value = ctx.attr("pad_value", 0.0)
    ctx.set_output("Out", xp.pad(x, _pairs(ctx, x.ndim), mode="constant", constant_values=x.dtype.type(value)))


def _inner(pairs, shape):
    return tuple(slice(b, b + d) for (b, _), d in zip(pairs, shape))


@register_op("pad_grad")
def pad_grad(ctx):
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", dout[_inner(_pairs(ctx, x.ndim), x.shape)].copy())


# -- pad_constant_like ---------------------------------------------------------------------

def _pad_like_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    if len(x.shape) != len(y.shape):
        raise GraphError(f"pad_constant_like: X {x.name}{list(x.shape)} and Y {y.name}{list(y.shape)} need "
                         "the same rank")
    if any(0 <= dx < dy for dx, dy in zip(x.shape, y.shape)):
        raise GraphError(f"pad_constant_like: Y {y.name}{list(y.shape)} must not be larger than X "
                         f"{x.name}{list(x.shape)} in any dimension")
    set_out(op, "Out", x.shape, y.dtype)


def _like_pairs(x, y):
    if x.ndim != y.ndim or any(dx < dy for dx, dy in zip(x.shape, y.shape)):
        raise ValueError(f"pad_constant_like: Y {list(y.shape)} must fit inside X {list(x.shape)}")
    return [(0, dx - dy) for dx, dy in zip(x.shape, y.shape)]


@register_op("pad_constant_like", infer_shape=_pad_like_shape, grad=lambda op: [GradOpSpec(
    "pad_constant_like_grad", {"Y": op.input("Y"), "Out@GRAD": [grad_name(op.output("Out")[0])]},
    {"Y@GRAD": [grad_name(op.input("Y")[0])]}, dict(op.attrs))], no_grad_inputs=("X",))
def pad_constant_like(ctx):
    xp, x, y = ctx.xp, ctx.input("X"), ctx.input("Y")
    value = y.dtype.type(ctx.attr("pad_value", 0.0))
    ctx.set_output("Out", xp.pad(y, _like_pairs(x, y), mode="constant", constant_values=value))


@register_op("pad_constant_like_grad")
def pad_constant_like_grad(ctx):
    y, dout = ctx.input("Y"), ctx.input("Out@GRAD")
    ctx.set_output("Y@GRAD", dout[tuple(slice(0, d) for d in y.shape)].copy())


# -- crop ----------------------------------------------------------------------------------

def _crop_box(op_or_ctx, x_shape, y_shape=None):
    ndim = len(x_shape)
    offsets = [int(o) for o in (op_or_ctx.attr("offsets", None) or [0] * ndim)]
    shape = list(y_shape) if y_shape is not None else [int(s) for s in op_or_ctx.attr("shape", [])]
    if len(offsets) != ndim or len(shape) != ndim:
        raise GraphError(f"crop: offsets {offsets} and shape {shape} need one value per dimension of X ({ndim})")
    return offsets, shape


def _crop_shape(op):
    x = in_var(op, "X")
    y_shape = in_var(op, "Y").shape if op.input("Y") else None
    _, shape = _crop_box(op, x.shape, y_shape)
    set_out(op, "Out", shape, x.dtype)


def _crop_slices(ctx, x):
    y_shape = ctx.input("Y").shape if ctx.has_input("Y") else None
    offsets, shape = _crop_box(ctx, x.shape, y_shape)
    shape = [x.shape[i] - offsets[i] if s == -1 else s for i, s in enumerate(shape)]
    if any(o < 0 or s < 0 or o + s > d for o, s, d in zip(offsets, shape, x.shape)):
        raise ValueError(f"crop: offsets {offsets} with shape {shape} leave X {list(x.shape)}")
    return tuple(slice(o, o + s) for o, s in zip(offsets, shape))


@register_op("crop", infer_shape=_crop_shape, grad=simple_grad("crop_grad", inputs=("X", "Y"), grad_of=("X",)),
             no_grad_inputs=("Y",))
def crop(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", x[_crop_slices(ctx, x)].copy())


@register_op("crop_grad")
def crop_grad(ctx):
    xp, x, dout = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD")
    dx = xp.zeros(x.shape, dtype=dout.dtype)
    dx[_crop_slices(ctx, x)] = dout
    ctx.set_output("X@GRAD", dx)

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

import numpy as np

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


# -- pad2d (Fluid 1.8) and pad3d (Paddle 2.x's F.pad beyond 'constant') --------------------------
# pad2d: 4-D X, paddings [top, bottom, left, right], mode 'constant' (pad_value), 'reflect' or
# 'edge'. pad3d: 5-D X, paddings [left, right, top, bottom, front, back], mode 'constant' (value),
# 'reflect', 'replicate' or 'circular'. data_format puts the channels first or last. The gradient
# sums Out@GRAD into the input position each output element was copied from, axis by axis.

_NUMPY_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "replicate": "edge",
                "circular": "wrap"}


def _spatial_pads(op_or_ctx, ndim):
    """[(axis, before, after)] and numpy's pad mode for pad2d / pad3d."""
    pads = [int(p) for p in op_or_ctx.attr("paddings", [])]
    mode = op_or_ctx.attr("mode", "constant")
    fmt = op_or_ctx.attr("data_format", "NCHW" if ndim == 4 else "NCDHW")
    kind = "pad2d" if ndim == 4 else "pad3d"
    modes = ("constant", "reflect", "edge") if kind == "pad2d" else ("constant", "reflect", "replicate", "circular")
    if mode not in modes:
        raise GraphError(f"{kind}: mode must be one of {list(modes)}, got {mode!r}")
    if len(pads) != 2 * (ndim - 2) or min(pads) < 0:
        raise GraphError(f"{kind}: paddings {pads} must hold {2 * (ndim - 2)} non-negative values")
    first = 1 if fmt in ("NHWC", "NDHWC") else 2
    if kind == "pad2d":
        pairs = [(pads[0], pads[1]), (pads[2], pads[3])]
    else:
        pairs = [(pads[4], pads[5]), (pads[2], pads[3]), (pads[0], pads[1])]
    return [(first + i, b, a) for i, (b, a) in enumerate(pairs)], _NUMPY_MODES[mode]


def _pad_nd_shape(op):
    x = in_var(op, "X")
    want = 4 if op.type == "pad2d" else 5
    if len(x.shape) != want:
        raise GraphError(f"{op.type}: X {x.name}{list(x.shape)} must be {want}-D")
    shape = list(x.shape)
    for axis, b, a in _spatial_pads(op, want)[0]:
        shape[axis] = shape[axis] + b + a if shape[axis] >= 0 else -1
    set_out(op, "Out", shape, x.dtype)


def _pad_nd_value(ctx):
    return float(ctx.attr("pad_value" if ctx.op_type.startswith("pad2d") else "value", 0.0))


def _pad_nd(ctx):
    xp, x = ctx.xp, ctx.input("X")
    spec, mode = _spatial_pads(ctx, x.ndim)
    widths = [(0, 0)] * x.ndim
    for axis, b, a in spec:
        if mode == "reflect" and (b >= x.shape[axis] or a >= x.shape[axis]):
            raise ValueError(f"{ctx.op_type}: reflect padding ({b}, {a}) must be smaller than the padded "
                             f"dimension ({x.shape[axis]})")
        widths[axis] = (b, a)
    kwargs = {"constant_values": x.dtype.type(_pad_nd_value(ctx))} if mode == "constant" else {}
    ctx.set_output("Out", xp.pad(x, widths, mode=mode, **kwargs))


def _pad_nd_grad(ctx):
    xp, x, dout = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD")
    spec, mode = _spatial_pads(ctx, x.ndim)
    g = dout
    for axis, b, a in spec:
        n = x.shape[axis]
        # src[k]: the input index output k copies along this axis (-1: a constant).
        src = np.pad(np.arange(n), (b, a), mode=mode, **({"constant_values": -1} if mode == "constant" else {}))
        onehot = np.zeros((src.shape[0], n), dtype=dout.dtype)
        keep = src >= 0
        onehot[np.nonzero(keep)[0], src[keep]] = 1
        m = onehot if xp is np else xp.asarray(onehot)
        g = xp.moveaxis(xp.tensordot(xp.moveaxis(g, axis, -1), m, axes=([-1], [0])), -1, axis)
    ctx.set_output("X@GRAD", g)


for _op in ("pad2d", "pad3d"):
    register_op(_op, infer_shape=_pad_nd_shape, grad=simple_grad(_op + "_grad"))(_pad_nd)
    register_op(_op + "_grad")(_pad_nd_grad)

"""Matrix product, broadcasting element-wise arithmetic and mean.

Element-wise ops follow Fluid's broadcast rule: Y's dimensions line up with
X's starting at `axis` (-1 = trailing), so an fc bias of shape [size] adds to
an [N, size] activation. The gradient of Y sums over the broadcast dimensions.
"""
from __future__ import annotations

import numpy as np

from ..framework import GraphError
from .registry import GradOpSpec, grad_name, in_var, register_op, set_out


# -- mul (the fc matrix product) ---------------------------------------------------------

def _flat2d(shape, num_col_dims):
    rows = 1
    for d in shape[:num_col_dims]:
        rows = -1 if (d < 0 or rows < 0) else rows * d
    cols = 1
    for d in shape[num_col_dims:]:
        cols = -1 if (d < 0 or cols < 0) else cols * d
    return rows, cols


def _mul_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    xn, yn = op.attr("x_num_col_dims", 1), op.attr("y_num_col_dims", 1)
    _, xk = _flat2d(x.shape, xn)
    yk, _ = _flat2d(y.shape, yn)
    if xk > 0 and yk > 0 and xk != yk:
        raise GraphError(f"mul: X {x.name}{list(x.shape)} flattened to [*, {xk}] does not match "
                         f"Y {y.name}{list(y.shape)} flattened to [{yk}, *]")
    set_out(op, "Out", tuple(x.shape[:xn]) + tuple(y.shape[yn:]), x.dtype, x.lod_level)


def _mul_grad(op):
    x, y, out = op.input("X")[0], op.input("Y")[0], op.output("Out")[0]
    return [GradOpSpec("mul_grad", {"X": [x], "Y": [y], "Out@GRAD": [grad_name(out)]},
                       {"X@GRAD": [grad_name(x)], "Y@GRAD": [grad_name(y)]}, dict(op.attrs))]


@register_op("mul", infer_shape=_mul_shape, grad=_mul_grad)
def mul(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    xn, yn = ctx.attr("x_num_col_dims", 1), ctx.attr("y_num_col_dims", 1)
    x2 = x.reshape(int(np.prod(x.shape[:xn])), -1)
    y2 = y.reshape(int(np.prod(y.shape[:yn])), -1)
    out = x2 @ y2
    ctx.set_output("Out", out.reshape(x.shape[:xn] + y.shape[yn:]), lod=ctx.input_lod("X"))


@register_op("mul_grad")
def mul_grad(ctx):
    x, y, dout = ctx.input("X"), ctx.input("Y"), ctx.input("Out@GRAD")
    xn, yn = ctx.attr("x_num_col_dims", 1), ctx.attr("y_num_col_dims", 1)
    x2 = x.reshape(int(np.prod(x.shape[:xn])), -1)
    y2 = y.reshape(int(np.prod(y.shape[:yn])), -1)
    d2 = dout.reshape(x2.shape[0], y2.shape[1])
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", (d2 @ y2.T).reshape(x.shape))
    if ctx.has_output("Y@GRAD"):
        ctx.set_output("Y@GRAD", (x2.T @ d2).reshape(y.shape))


# -- element-wise ------------------------------------------------------------------------

def _bcast_y(x_ndim, y, axis):
    """Reshape y so numpy broadcasting matches Fluid's `axis` rule."""
    if y.ndim == x_ndim:
        return y
    # Trailing 1s of Y are ignored by Fluid ([N,1] + [1] works either way).
    if axis == -1 or axis is None:
        axis = x_ndim - y.ndim
    return y.reshape((1,) * axis + tuple(y.shape) + (1,) * (x_ndim - axis - y.ndim))


def _elementwise_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    if len(y.shape) > len(x.shape):
        raise GraphError(f"{op.type}: Y {y.name}{list(y.shape)} has more dimensions than "
                         f"X {x.name}{list(x.shape)}; put the larger operand in X")
    set_out(op, "Out", x.shape, x.dtype, x.lod_level)


def _elementwise_grad(op):
    x, y, out = op.input("X")[0], op.input("Y")[0], op.output("Out")[0]
    return [GradOpSpec(op.type + "_grad",
                       {"X": [x], "Y": [y], "Out": [out], "Out@GRAD": [grad_name(out)]},
                       {"X@GRAD": [grad_name(x)], "Y@GRAD": [grad_name(y)]}, dict(op.attrs))]


_FORWARD = {
    "elementwise_add": lambda xp, x, y: x + y,
    "elementwise_sub": lambda xp, x, y: x - y,
    "elementwise_mul": lambda xp, x, y: x * y,
    "elementwise_div": lambda xp, x, y: x / y,
    "elementwise_max": lambda xp, x, y: xp.maximum(x, y),
}


def _make_forward(fn):
    def kernel(ctx):
        x, y = ctx.input("X"), ctx.input("Y")
        yb = _bcast_y(x.ndim, y, ctx.attr("axis", -1))
        ctx.set_output("Out", fn(ctx.xp, x, yb), lod=ctx.input_lod("X"))
    return kernel


def _reduce_to(xp, g, shape_b, shape):
    """Sum g over the axes where shape_b (broadcast y) has 1s, reshape to y's shape."""
    axes = tuple(i for i, (gd, bd) in enumerate(zip(g.shape, shape_b)) if bd == 1 and gd != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape)


def _make_grad(type_):
    def kernel(ctx):
        xp = ctx.xp
        x, y, dout = ctx.input("X"), ctx.input("Y"), ctx.input("Out@GRAD")
        yb = _bcast_y(x.ndim, y, ctx.attr("axis", -1))
        if type_ == "elementwise_add":
            dx, dyb = dout, dout
        elif type_ == "elementwise_sub":
            dx, dyb = dout, -dout
        elif type_ == "elementwise_mul":
            dx, dyb = dout * yb, dout * x
        elif type_ == "elementwise_div":
            dx = dout / yb
            dyb = -dout * x / (yb * yb)
        else:  # max: the gradient goes to the larger operand (x on ties)
            mask = x >= yb
            dx, dyb = dout * mask, dout * (~mask)
        if ctx.has_output("X@GRAD"):
            ctx.set_output("X@GRAD", _reduce_to(xp, dx, x.shape, x.shape) if dx.shape != x.shape else dx)
        if ctx.has_output("Y@GRAD"):
            ctx.set_output("Y@GRAD", _reduce_to(xp, dyb, yb.shape, y.shape))
    return kernel


for _t, _fn in _FORWARD.items():
    register_op(_t, infer_shape=_elementwise_shape, grad=_elementwise_grad)(_make_forward(_fn))
    register_op(_t + "_grad")(_make_grad(_t))


# -- mean --------------------------------------------------------------------------------

def _mean_shape(op):
    x = in_var(op, "X")
    set_out(op, "Out", (1,), x.dtype)


@register_op("mean", infer_shape=_mean_shape,
             grad=lambda op: [GradOpSpec("mean_grad",
                                         {"X": op.input("X"), "Out@GRAD": [grad_name(op.output("Out")[0])]},
                                         {"X@GRAD": [grad_name(op.input("X")[0])]})])
def mean(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", x.mean().reshape(1).astype(x.dtype))


@register_op("mean_grad")
def mean_grad(ctx):
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", ctx.xp.full(x.shape, dout.reshape(()) / x.size, dtype=x.dtype))

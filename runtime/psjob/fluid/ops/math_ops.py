"""Matrix product, broadcasting element-wise arithmetic and mean.

Element-wise ops (add, sub, mul, div, max, min, pow, floordiv, mod) broadcast as
Paddle's do (broadcast.py): the shorter operand's dimensions line up with the
other's starting at `axis` (-1 = trailing), then sizes of 1 stretch in either
operand, so an fc bias [size] adds to an [N, size] activation and [N, 13, 1] times
[1, 13, 9] is [N, 13, 9]. A broadcast operand's gradient sums over the dimensions
it was stretched along.
"""
from __future__ import annotations

import math

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops import broadcast
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out

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
    x2 = x.reshape(math.prod(x.shape[:xn]), -1)
    y2 = y.reshape(math.prod(y.shape[:yn]), -1)
    out = x2 @ y2
    ctx.set_output("Out", out.reshape(x.shape[:xn] + y.shape[yn:]), lod=ctx.input_lod("X"))


@register_op("mul_grad")
def mul_grad(ctx):
    x, y, dout = ctx.input("X"), ctx.input("Y"), ctx.input("Out@GRAD")
    xn, yn = ctx.attr("x_num_col_dims", 1), ctx.attr("y_num_col_dims", 1)
    x2 = x.reshape(math.prod(x.shape[:xn]), -1)
    y2 = y.reshape(math.prod(y.shape[:yn]), -1)
    d2 = dout.reshape(x2.shape[0], y2.shape[1])
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", (d2 @ y2.T).reshape(x.shape))
    if ctx.has_output("Y@GRAD"):
        ctx.set_output("Y@GRAD", (x2.T @ d2).reshape(y.shape))


# -- element-wise ------------------------------------------------------------------------

def _elementwise_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    # The output keeps X's LoD (Fluid shares X's LoD with Out).
    set_out(op, "Out", broadcast.infer(op, x, y), x.dtype, x.lod_level)


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
    "elementwise_min": lambda xp, x, y: xp.minimum(x, y),
    "elementwise_pow": lambda xp, x, y: xp.power(x, y),
    # Paddle 2.x rounds the quotient down (Fluid 1.8 truncated it, for integers only).
    "elementwise_floordiv": lambda xp, x, y: xp.floor_divide(x, y),
    # Paddle's remainder takes the divisor's sign, as Python's % (numpy's mod) does.
    "elementwise_mod": lambda xp, x, y: xp.mod(x, y),
}
# Piecewise constant in both operands: Paddle registers no gradient for them.
_NO_GRAD = ("elementwise_floordiv", "elementwise_mod")


def _make_forward(fn):
    def kernel(ctx):
        x, y = ctx.input("X"), ctx.input("Y")
        xb, yb = broadcast.operands(x, y, ctx.attr("axis", -1))
        out = fn(ctx.xp, xb, yb)
        ctx.set_output("Out", out.astype(x.dtype, copy=False), lod=ctx.input_lod("X"))
    return kernel


def _grads(type_, xp, x, y, out, dout):
    """(dOut/dX * dout, dOut/dY * dout) on the broadcast operands, as Paddle's grad kernels."""
    if type_ == "elementwise_add":
        return dout, dout
    if type_ == "elementwise_sub":
        return dout, -dout
    if type_ == "elementwise_mul":
        return dout * y, dout * x
    if type_ == "elementwise_div":
        return dout / y, -dout * out / y
    if type_ == "elementwise_pow":
        return dout * y * xp.power(x, y - 1), dout * out * xp.log(x)
    # max/min: on ties the gradient goes to Y (Paddle's MaxGradDy is x <= y, MinGradDy x >= y).
    to_x = (x > y) if type_ == "elementwise_max" else (x < y)
    return dout * to_x, dout * ~to_x


def _make_grad(type_):
    def kernel(ctx):
        xp = ctx.xp
        x, y, dout = ctx.input("X"), ctx.input("Y"), ctx.input("Out@GRAD")
        axis = ctx.attr("axis", -1)
        xb, yb = broadcast.operands(x, y, axis)
        out = ctx.input("Out") if type_ in ("elementwise_div", "elementwise_pow") else None
        dx, dy = _grads(type_, xp, xb, yb, out, dout)
        if ctx.has_output("X@GRAD"):
            ctx.set_output("X@GRAD", broadcast.reduce_grad(dx, xb.shape, x.shape).astype(x.dtype, copy=False))
        if ctx.has_output("Y@GRAD"):
            ctx.set_output("Y@GRAD", broadcast.reduce_grad(dy, yb.shape, y.shape).astype(y.dtype, copy=False))
    return kernel


for _t, _fn in _FORWARD.items():
    if _t in _NO_GRAD:
        register_op(_t, infer_shape=_elementwise_shape)(_make_forward(_fn))
        continue
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
    if type(x) is np.ndarray and x.dtype in _MEAN_FLOATS and x.size:
        # What x.mean() does for these dtypes, without its wrappers: the same pairwise sum,
        # divided in float64 by the element count, rounded to x's dtype.
        total = np.add.reduce(x, axis=None)
        ctx.set_output("Out", np.array([float(total) / x.size], dtype=x.dtype))
        return
    ctx.set_output("Out", x.mean().reshape(1).astype(x.dtype))


_MEAN_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@register_op("mean_grad")
def mean_grad(ctx):
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", ctx.xp.full(x.shape, dout.reshape(()) / x.size, dtype=x.dtype))

"""Paddle's element-wise broadcast rule, shared by shape inference, kernels and gradients.

Paddle (Fluid 1.8 and 2.x alike, `GetBroadcastDimsArrays`) lines the operand with fewer
dimensions up against the other one starting at dimension `axis` (-1: at the trailing
dimensions, numpy's rule), pads it with 1s to the same rank, and then broadcasts in
both directions: per dimension the sizes must be equal or one of them 1. In a static
graph an unknown size (-1, a batch dimension) against 1 or -1 stays unknown; against a
known size > 1 it takes that size. See the elementwise ops' documentation, e.g.
https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/add_en.html and
Fluid's `elementwise_add` (the `axis` attribute).

The gradient of an operand that was broadcast is the output gradient summed over the
dimensions where that operand (padded) had size 1, reshaped to the operand's shape.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import GraphError


def _axis(nx: int, ny: int, axis) -> int:
    """Where the shorter operand starts in the longer one's dimensions."""
    diff = abs(nx - ny)
    axis = -1 if axis is None else int(axis)
    # Paddle 2.x reads a negative axis as counted from the end: -1 is trailing.
    if axis < 0:
        axis = diff + axis + 1
    if not 0 <= axis <= diff:
        raise ValueError(f"axis {axis} leaves no room for the {min(nx, ny)}-D operand inside the "
                         f"{max(nx, ny)}-D one (axis must lie in [0, {diff}] or be -1)")
    return axis


def aligned(x_shape, y_shape, axis=-1):
    """(x, y) shapes of one rank: the shorter one padded with 1s around `axis`."""
    xs, ys = tuple(x_shape), tuple(y_shape)
    if len(xs) == len(ys):
        return xs, ys
    a = _axis(len(xs), len(ys), axis)
    big = max(len(xs), len(ys))

    def pad(s):
        return (1,) * a + s + (1,) * (big - a - len(s))
    return (xs, pad(ys)) if len(xs) > len(ys) else (pad(xs), ys)


def out_shape(x_shape, y_shape, axis=-1):
    """The broadcast shape; raises ValueError when a dimension pair does not broadcast."""
    xs, ys = aligned(x_shape, y_shape, axis)
    out = []
    for i, (a, b) in enumerate(zip(xs, ys)):
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        elif a < 0 or b < 0:  # unknown against a known size > 1: the known size
            out.append(max(a, b))
        else:
            raise ValueError(f"dimension {i} of the aligned shapes {list(xs)} and {list(ys)} is "
                             f"{a} against {b}; sizes must match or one must be 1")
    return tuple(out)


def infer(op, x, y, what=None):
    """Shape inference: the broadcast shape of Variables x and y under op's `axis`."""
    try:
        return out_shape(x.shape, y.shape, op.attr("axis", -1))
    except ValueError as exc:
        raise GraphError(f"{what or op.type}: X {x.name}{list(x.shape)} and Y {y.name}{list(y.shape)} "
                         f"(axis={op.attr('axis', -1)}) do not broadcast: {exc}") from None


def operands(x, y, axis=-1):
    """Arrays x and y reshaped (views) so numpy/cupy broadcasting applies Paddle's rule."""
    xs, ys = aligned(x.shape, y.shape, axis)
    return (x if xs == x.shape else x.reshape(xs)), (y if ys == y.shape else y.reshape(ys))


def reduce_grad(g, aligned_shape, shape):
    """The gradient g (output shape) of an operand: summed over the dimensions the
    operand was broadcast along, reshaped to the operand's own shape."""
    axes = tuple(i for i, (gd, d) in enumerate(zip(g.shape, aligned_shape)) if d == 1 and gd != 1)
    if axes:
        # numpy's own reduction, without the ndarray.sum wrapper: the same sum
        g = np.add.reduce(g, axis=axes, keepdims=True) if type(g) is np.ndarray else g.sum(axis=axes, keepdims=True)
    return g if g.shape == tuple(shape) else g.reshape(shape)

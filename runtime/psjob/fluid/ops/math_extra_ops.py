"""Element-wise math, cumulative and matrix-building ops behind paddle.sin, paddle.cumsum,
paddle.logsumexp, paddle.diag, fluid.layers.l2_normalize, fluid.layers.Print, ... (Paddle's op
types and attribute names, Paddle 2.x API docs; Fluid 1.8 for `norm`, `one_hot`, `print`).

* unary with gradients: `sin`, `cos`, `tan`, `asin`, `acos`, `atan`, `sinh`, `cosh`, `expm1`,
  `rsqrt`, `reciprocal`, `erf`, `log2`, `log10`; `floor`,
  `ceil`, `round` and `sign` are piecewise constant, their gradient is 0 (as Paddle's).
  `round` rounds halves away from zero (C's round, which Paddle's kernel calls), not to even.
* `cumsum` (axis, flatten, exclusive, reverse), `cumprod` (dim), `logsumexp` (axis list, keepdim, reduce_all),
  `reduce_amax`/`reduce_amin` (the gradient split evenly among tied maxima, Paddle's rule).
* `norm` (Fluid's l2_normalize: Out = X / sqrt(sum(X^2, axis) + epsilon), Norm kept).
* `diag_v2` (a vector to a matrix with `offset`, `padding_value`; a matrix to its diagonal),
  `eye`, `linspace` (Start, Stop, Num one-element tensors), `trace`, `roll`, `flip`/`reverse`,
  `repeat_interleave`, `expand_as` (Fluid's: tiles X to Y's shape) and `expand_as_v2`
  (broadcasts X to Y's shape), `size` (int64 element count), `one_hot` (Fluid's: [N, 1] ids to
  [N, depth]), `print` (Fluid's Print: writes the tensor to stdout, passes it on), `hash`
  (Fluid's: XXH64 of each row's bytes, num_hash seeds, modulo mod_by; [..., num_hash, 1]).
"""
from __future__ import annotations

import math
import struct
import sys
import weakref

import numpy as np

from psjob.fluid import tensor_text
from psjob.fluid.framework import GraphError
from psjob.fluid.ops import broadcast
from psjob.fluid.ops.reduce_ops import _out_shape, reduce_axes
from psjob.fluid.ops.registry import (
    GradOpSpec,
    grad_name,
    in_var,
    register_op,
    same_shape,
    set_out,
    simple_grad,
)
from psjob.fluid.ops.shape_ops import _norm_axis

# -- unary -------------------------------------------------------------------------------


def _erf(xp, x):
    """numpy has no erf: math.erf element-wise on the host (exact to double precision, which
    the finite-difference checks need; slow for large arrays, which erf rarely sees)."""
    host = np.asarray(x if xp is np else xp.asnumpy(x))
    out = np.vectorize(math.erf, otypes=[host.dtype])(host) if host.size else host.copy()
    return out if xp is np else xp.asarray(out)


def _round_half_away(xp, x):
    return xp.sign(x) * xp.floor(xp.abs(x) + 0.5)


def _unary(name, forward, backward, needs_out=False):
    """forward(xp, x) -> out; backward(xp, x, out, dout) -> dx (None: no gradient op)."""
    def kernel(ctx):
        x = ctx.input("X")
        ctx.set_output("Out", forward(ctx.xp, x).astype(x.dtype, copy=False), lod=ctx.input_lod("X"))

    def grad_kernel(ctx):
        x, dout = ctx.input("X"), ctx.input("Out@GRAD")
        out = ctx.input("Out") if needs_out else None
        ctx.set_output("X@GRAD", backward(ctx.xp, x, out, dout).astype(x.dtype, copy=False))

    register_op(name, infer_shape=same_shape(),
                grad=simple_grad(name + "_grad", keep_outputs=needs_out))(kernel)
    register_op(name + "_grad")(grad_kernel)


_LN2, _LN10 = math.log(2.0), math.log(10.0)
_unary("sin", lambda xp, x: xp.sin(x), lambda xp, x, o, d: d * xp.cos(x))
_unary("cos", lambda xp, x: xp.cos(x), lambda xp, x, o, d: -d * xp.sin(x))
_unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), lambda xp, x, o, d: -0.5 * d * o * o * o, needs_out=True)
_unary("reciprocal", lambda xp, x: 1 / x, lambda xp, x, o, d: -d * o * o, needs_out=True)
_unary("erf", _erf, lambda xp, x, o, d: d * (2 / math.sqrt(math.pi)) * xp.exp(-x * x))
_unary("log2", lambda xp, x: xp.log2(x), lambda xp, x, o, d: d / (x * _LN2))
_unary("log10", lambda xp, x: xp.log10(x), lambda xp, x, o, d: d / (x * _LN10))
_unary("tan", lambda xp, x: xp.tan(x), lambda xp, x, o, d: d * (1 + o * o), needs_out=True)
_unary("atan", lambda xp, x: xp.arctan(x), lambda xp, x, o, d: d / (1 + x * x))
_unary("asin", lambda xp, x: xp.arcsin(x), lambda xp, x, o, d: d / xp.sqrt(1 - x * x))
_unary("acos", lambda xp, x: xp.arccos(x), lambda xp, x, o, d: -d / xp.sqrt(1 - x * x))
_unary("sinh", lambda xp, x: xp.sinh(x), lambda xp, x, o, d: d * xp.cosh(x))
_unary("cosh", lambda xp, x: xp.cosh(x), lambda xp, x, o, d: d * xp.sinh(x))
_unary("expm1", lambda xp, x: xp.expm1(x), lambda xp, x, o, d: d * (o + 1), needs_out=True)
for _name, _fn in (("floor", lambda xp, x: xp.floor(x)), ("ceil", lambda xp, x: xp.ceil(x)),
                   ("round", _round_half_away), ("sign", lambda xp, x: xp.sign(x))):
    _unary(_name, _fn, lambda xp, x, o, d: xp.zeros_like(d))


# -- cumsum ------------------------------------------------------------------------------

def _cumsum_shape(op):
    x = in_var(op, "X")
    if op.attr("flatten", False):
        n = int(np.prod(x.shape)) if all(d >= 0 for d in x.shape) else -1
        set_out(op, "Out", [n], x.dtype)
        return
    _norm_axis(op.attr("axis", -1), len(x.shape), "cumsum")
    set_out(op, "Out", x.shape, x.dtype)


def _cumsum(xp, x, axis, exclusive, reverse):
    if reverse:
        x = xp.flip(x, axis)
    out = xp.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        out = out - x
    return xp.flip(out, axis) if reverse else out


@register_op("cumsum", infer_shape=_cumsum_shape,
             grad=lambda op: [GradOpSpec("cumsum_grad", {"X": op.input("X"),
                                                         "Out@GRAD": [grad_name(op.output("Out")[0])]},
                                         {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))])
def cumsum(ctx):
    x = ctx.input("X")
    if ctx.attr("flatten", False):
        x = x.reshape(-1)
    axis = _norm_axis(ctx.attr("axis", -1), x.ndim, "cumsum") if not ctx.attr("flatten", False) else 0
    ctx.set_output("Out", _cumsum(ctx.xp, x, axis, ctx.attr("exclusive", False), ctx.attr("reverse", False)))


@register_op("cumsum_grad")
def cumsum_grad(ctx):
    """The transpose of a (reversed, exclusive) running sum is the running sum the other way."""
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    flat = ctx.attr("flatten", False)
    axis = 0 if flat else _norm_axis(ctx.attr("axis", -1), x.ndim, "cumsum")
    dx = _cumsum(ctx.xp, dout.reshape(-1) if flat else dout, axis, ctx.attr("exclusive", False),
                 not ctx.attr("reverse", False))
    ctx.set_output("X@GRAD", dx.reshape(x.shape))


# -- cumprod -----------------------------------------------------------------------------

def _cumprod_shape(op):
    x = in_var(op, "X")
    _norm_axis(op.attr("dim", -1), len(x.shape), "cumprod")
    set_out(op, "Out", x.shape, x.dtype)


@register_op("cumprod", infer_shape=_cumprod_shape,
             grad=lambda op: [GradOpSpec("cumprod_grad", {"X": op.input("X"),
                                                          "Out@GRAD": [grad_name(op.output("Out")[0])]},
                                         {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))])
def cumprod(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", ctx.xp.cumprod(x, axis=_norm_axis(ctx.attr("dim", -1), x.ndim, "cumprod"), dtype=x.dtype))


@register_op("cumprod_grad")
def cumprod_grad(ctx):
    """dx_i = (x_0 ... x_{i-1}) * R_i with R_i = dout_i + x_{i+1} * R_{i+1}: exact where x holds
    zeros too (no division by x)."""
    xp, x = ctx.xp, ctx.input("X")
    axis = _norm_axis(ctx.attr("dim", -1), x.ndim, "cumprod")
    xs, dout = xp.moveaxis(x, axis, 0), xp.moveaxis(ctx.input("Out@GRAD"), axis, 0)
    before = xp.concatenate([xp.ones_like(xs[:1]), xp.cumprod(xs[:-1], axis=0)], axis=0)
    r = xp.empty_like(dout)
    r[-1] = dout[-1]
    for i in range(xs.shape[0] - 2, -1, -1):
        r[i] = dout[i] + xs[i + 1] * r[i + 1]
    ctx.set_output("X@GRAD", xp.moveaxis(before * r, 0, axis))


# -- logsumexp, reduce_amax / reduce_amin -----------------------------------------------

def _axis_reduce_shape(op, dim_attr="dim", keep_attr="keep_dim"):
    x = in_var(op, "X")
    axes = reduce_axes(len(x.shape), op.attr(dim_attr, [0]), op.attr("reduce_all", False), op.type)
    set_out(op, "Out", _out_shape(list(x.shape), axes, op.attr(keep_attr, False)), x.dtype)


def _logsumexp_axes(ctx, x):
    dims = ctx.attr("axis", [])
    return reduce_axes(x.ndim, dims, ctx.attr("reduce_all", False) or not dims, "logsumexp")


def _reduce_grad_spec(op):
    return [GradOpSpec(op.type + "_grad", {"X": op.input("X"), "Out": op.output("Out"),
                                           "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))]


def _logsumexp_shape(op):
    x = in_var(op, "X")
    dims = op.attr("axis", [])
    axes = reduce_axes(len(x.shape), dims, op.attr("reduce_all", False) or not dims, "logsumexp")
    set_out(op, "Out", _out_shape(list(x.shape), axes, op.attr("keepdim", False)), x.dtype)


@register_op("logsumexp", infer_shape=_logsumexp_shape, grad=_reduce_grad_spec)
def logsumexp(ctx):
    xp, x = ctx.xp, ctx.input("X")
    axes = _logsumexp_axes(ctx, x)
    top = x.max(axis=axes, keepdims=True) if x.size else xp.zeros([1] * x.ndim, x.dtype)
    top = xp.where(xp.isfinite(top), top, xp.zeros_like(top))  # all -inf: log(0), not nan
    out = xp.log(xp.exp(x - top).sum(axis=axes, keepdims=True)) + top
    ctx.set_output("Out", out.reshape(_out_shape(list(x.shape), axes, ctx.attr("keepdim", False))))


@register_op("logsumexp_grad")
def logsumexp_grad(ctx):
    xp, x = ctx.xp, ctx.input("X")
    axes = _logsumexp_axes(ctx, x)
    keep = _out_shape(list(x.shape), axes, True)
    out, dout = ctx.input("Out").reshape(keep), ctx.input("Out@GRAD").reshape(keep)
    ctx.set_output("X@GRAD", (dout * xp.exp(x - out)).astype(x.dtype, copy=False))


def _make_amax(kind):
    def forward(ctx):
        x = ctx.input("X")
        axes = reduce_axes(x.ndim, ctx.attr("dim", [0]), ctx.attr("reduce_all", False), kind)
        out = x.max(axis=axes) if kind == "reduce_amax" else x.min(axis=axes)
        ctx.set_output("Out", out.reshape(_out_shape(list(x.shape), axes, ctx.attr("keep_dim", False))))

    def backward(ctx):
        x = ctx.input("X")
        axes = reduce_axes(x.ndim, ctx.attr("dim", [0]), ctx.attr("reduce_all", False), kind)
        keep = _out_shape(list(x.shape), axes, True)
        hit = x == ctx.input("Out").reshape(keep)
        share = hit / hit.sum(axis=axes, keepdims=True)
        ctx.set_output("X@GRAD", (ctx.input("Out@GRAD").reshape(keep) * share).astype(x.dtype))

    register_op(kind, infer_shape=_axis_reduce_shape, grad=_reduce_grad_spec)(forward)
    register_op(kind + "_grad")(backward)


_make_amax("reduce_amax")
_make_amax("reduce_amin")


# -- norm (l2_normalize) -------------------------------------------------------------------

def _norm_shape(op):
    x = in_var(op, "X")
    axis = _norm_axis(op.attr("axis", -1), len(x.shape), "l2_normalize")
    set_out(op, "Out", x.shape, x.dtype)
    set_out(op, "Norm", [1 if i == axis else d for i, d in enumerate(x.shape)], x.dtype)


@register_op("norm", infer_shape=_norm_shape,
             grad=lambda op: [GradOpSpec("norm_grad", {"X": op.input("X"), "Norm": op.output("Norm"),
                                                       "Out@GRAD": [grad_name(op.output("Out")[0])]},
                                         {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))])
def norm(ctx):
    xp, x = ctx.xp, ctx.input("X")
    axis = _norm_axis(ctx.attr("axis", -1), x.ndim, "l2_normalize")
    n = xp.sqrt((x * x).sum(axis=axis, keepdims=True) + x.dtype.type(ctx.attr("epsilon", 1e-10)))
    ctx.set_output("Norm", n)
    ctx.set_output("Out", x / n)


@register_op("norm_grad")
def norm_grad(ctx):
    x, n, dout = ctx.input("X"), ctx.input("Norm"), ctx.input("Out@GRAD")
    axis = _norm_axis(ctx.attr("axis", -1), x.ndim, "l2_normalize")
    ctx.set_output("X@GRAD", dout / n - x * (dout * x).sum(axis=axis, keepdims=True) / (n * n * n))


# -- diag_v2, eye, linspace, trace ---------------------------------------------------------

def _diag_shape(op):
    x = in_var(op, "X")
    k = int(op.attr("offset", 0))
    if len(x.shape) == 1:
        n = x.shape[0] + abs(k) if x.shape[0] >= 0 else -1
        set_out(op, "Out", [n, n], x.dtype)
    elif len(x.shape) == 2:
        r, c = x.shape
        n = -1 if r < 0 or c < 0 else max(0, min(r, c - k) if k >= 0 else min(r + k, c))
        set_out(op, "Out", [n], x.dtype)
    else:
        raise GraphError(f"diag: x {x.name}{list(x.shape)} must be 1-D or 2-D")


@register_op("diag_v2", infer_shape=_diag_shape,
             grad=simple_grad("diag_v2_grad"))
def diag_v2(ctx):
    xp, x, k = ctx.xp, ctx.input("X"), int(ctx.attr("offset", 0))
    if x.ndim == 1:
        n = x.shape[0] + abs(k)
        out = xp.full((n, n), ctx.attr("padding_value", 0.0), dtype=x.dtype)
        rows = xp.arange(x.shape[0]) + max(-k, 0)
        out[rows, rows + k] = x
    else:
        out = xp.diagonal(x, offset=k).copy()
    ctx.set_output("Out", out)


@register_op("diag_v2_grad")
def diag_v2_grad(ctx):
    xp, x, dout, k = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD"), int(ctx.attr("offset", 0))
    if x.ndim == 1:
        rows = xp.arange(x.shape[0]) + max(-k, 0)
        ctx.set_output("X@GRAD", dout[rows, rows + k])
        return
    dx = xp.zeros_like(x)
    r = xp.arange(dout.shape[0]) + max(-k, 0)
    dx[r, r + k] = dout
    ctx.set_output("X@GRAD", dx)


def _eye_shape(op):
    rows = int(op.attr("num_rows"))
    cols = int(op.attr("num_columns", -1))
    set_out(op, "Out", [rows, rows if cols < 0 else cols], op.attr("dtype", "float32"))


@register_op("eye", infer_shape=_eye_shape)
def eye(ctx):
    rows, cols = int(ctx.attr("num_rows")), int(ctx.attr("num_columns", -1))
    ctx.set_output("Out", ctx.xp.eye(rows, rows if cols < 0 else cols, dtype=ctx.attr("dtype", "float32")))


def _scalar(ctx, slot):
    v = ctx.input(slot)
    if v.size != 1:
        raise ValueError(f"{ctx.op_type}: {slot} must hold one value, got shape {list(v.shape)}")
    return v.reshape(-1)[0].item()


@register_op("linspace", infer_shape=lambda op: set_out(op, "Out", [-1], op.attr("dtype", "float32")),
             no_grad_inputs=("Start", "Stop", "Num"))
def linspace(ctx):
    num = int(_scalar(ctx, "Num"))
    if num <= 0:
        raise ValueError(f"linspace: num must be positive, got {num}")
    dtype = ctx.attr("dtype", "float32")
    out = np.linspace(float(_scalar(ctx, "Start")), float(_scalar(ctx, "Stop")), num)
    if np.dtype(dtype).kind in "iu":
        out = np.trunc(out)  # Paddle's integer linspace truncates each value
    out = out.astype(dtype)
    ctx.set_output("Out", out if ctx.xp is np else ctx.xp.asarray(out))


def _trace_axes(op_or_ctx, ndim):
    # Paddle 2.x names them axis1 / axis2, Paddle 1.8's op dim1 / dim2
    a1 = _norm_axis(op_or_ctx.attrs.get("axis1", op_or_ctx.attrs.get("dim1", 0)), ndim, "trace")
    a2 = _norm_axis(op_or_ctx.attrs.get("axis2", op_or_ctx.attrs.get("dim2", 1)), ndim, "trace")
    if a1 == a2:
        raise GraphError(f"trace: axis1 and axis2 must differ, both are {a1}")
    return a1, a2


def _trace_shape(op):
    x = in_var(op, "Input")
    if len(x.shape) < 2:
        raise GraphError(f"trace: x {x.name}{list(x.shape)} needs at least 2 dimensions")
    a1, a2 = _trace_axes(op, len(x.shape))
    set_out(op, "Out", [d for i, d in enumerate(x.shape) if i not in (a1, a2)] or [1], x.dtype)


@register_op("trace", infer_shape=_trace_shape, grad=simple_grad("trace_grad", inputs=("Input",)))
def trace(ctx):
    x = ctx.input("Input")
    a1, a2 = _trace_axes(ctx, x.ndim)
    out = ctx.xp.trace(x, offset=int(ctx.attr("offset", 0)), axis1=a1, axis2=a2).astype(x.dtype)
    ctx.set_output("Out", out.reshape(out.shape or (1,)))


@register_op("trace_grad")
def trace_grad(ctx):
    xp, x = ctx.xp, ctx.input("Input")
    a1, a2 = _trace_axes(ctx, x.ndim)
    rest = [d for i, d in enumerate(x.shape) if i not in (a1, a2)]
    dout = ctx.input("Out@GRAD").reshape(rest)
    n1, n2 = x.shape[a1], x.shape[a2]
    mask = xp.eye(n1, n2, k=int(ctx.attr("offset", 0)), dtype=x.dtype)
    # dout over the other axes times the diagonal mask over (a1, a2), then back into x's axis order.
    g = dout.reshape(rest + [1, 1]) * mask
    order = [i for i in range(x.ndim) if i not in (a1, a2)] + [a1, a2]
    ctx.set_output("Input@GRAD", xp.transpose(g, np.argsort(order)).astype(x.dtype))


# -- roll, flip / reverse, repeat_interleave -----------------------------------------------

def _roll_args(attrs, ndim):
    shifts, axes = list(attrs.get("shifts", [])), list(attrs.get("axis", attrs.get("dims", [])))  # 1.8: dims
    if axes and len(shifts) != len(axes):
        raise GraphError(f"roll: shifts {shifts} and axis {axes} must have one length")
    return shifts, [_norm_axis(a, ndim, "roll") for a in axes]


@register_op("roll", infer_shape=same_shape(),
             grad=lambda op: [GradOpSpec("roll", {"X": [grad_name(op.output("Out")[0])]},
                                         {"Out": [grad_name(op.input("X")[0])]},
                                         dict(op.attrs, shifts=[-int(s) for s in op.attr("shifts", [])]))])
def roll(ctx):
    x = ctx.input("X")
    shifts, axes = _roll_args(ctx.attrs, x.ndim)
    if not axes:
        out = ctx.xp.roll(x.reshape(-1), shifts[0] if len(shifts) == 1 else sum(shifts)).reshape(x.shape)
    else:
        out = ctx.xp.roll(x, tuple(int(s) for s in shifts), axis=tuple(axes))
    ctx.set_output("Out", out)


def _flip_axes(ctx_or_op, ndim):
    axes = ctx_or_op.attrs.get("axis", [])
    axes = [axes] if isinstance(axes, int) else list(axes)
    return tuple(sorted({_norm_axis(a, ndim, "flip") for a in axes}))


def _flip_shape(op):
    x = in_var(op, "X")
    _flip_axes(op, len(x.shape))
    set_out(op, "Out", x.shape, x.dtype)


for _name in ("flip", "reverse"):
    # The gradient of a flip is the same flip.
    register_op(_name, infer_shape=_flip_shape,
                grad=lambda op, _t=_name: [GradOpSpec(_t, {"X": [grad_name(op.output("Out")[0])]},
                                                      {"Out": [grad_name(op.input("X")[0])]}, dict(op.attrs))])(
        lambda ctx: ctx.set_output("Out", ctx.xp.flip(ctx.input("X"), _flip_axes(ctx, ctx.input("X").ndim)).copy()))


def _repeat_shape(op):
    x = in_var(op, "X")
    r = int(op.attr("Repeats", 1))
    if op.input("RepeatsTensor"):
        raise GraphError("repeat_interleave: a repeats tensor is not supported by psjob; pass an int")
    if r < 1:
        raise GraphError(f"repeat_interleave: repeats must be positive, got {r}")
    dim = op.attr("dim", None)
    if dim is None:  # the flattened x (paddle.repeat_interleave flattens first; kept for other writers)
        n = int(np.prod(x.shape)) * r if all(d >= 0 for d in x.shape) else -1
        set_out(op, "Out", [n], x.dtype)
        return
    axis = _norm_axis(dim, len(x.shape), "repeat_interleave")
    shape = list(x.shape)
    shape[axis] = shape[axis] * r if shape[axis] >= 0 else -1
    set_out(op, "Out", shape, x.dtype)


def _repeat_axis(ctx, x):
    dim = ctx.attr("dim", None)
    return None if dim is None else _norm_axis(dim, x.ndim, "repeat_interleave")


@register_op("repeat_interleave", infer_shape=_repeat_shape, grad=simple_grad("repeat_interleave_grad"))
def repeat_interleave(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", ctx.xp.repeat(x, int(ctx.attr("Repeats", 1)), axis=_repeat_axis(ctx, x)))


@register_op("repeat_interleave_grad")
def repeat_interleave_grad(ctx):
    x, dout, r = ctx.input("X"), ctx.input("Out@GRAD"), int(ctx.attr("Repeats", 1))
    axis = _repeat_axis(ctx, x)
    if axis is None:
        ctx.set_output("X@GRAD", dout.reshape(-1, r).sum(axis=1).reshape(x.shape))
        return
    shape = list(x.shape)
    ctx.set_output("X@GRAD", dout.reshape(shape[:axis] + [shape[axis], r] + shape[axis + 1:]).sum(axis=axis + 1))


# -- expand_as (Fluid: tile), expand_as_v2 (broadcast) ------------------------------------

def _expand_as_shape(op):
    x, y = in_var(op, "X"), in_var(op, "target_tensor" if op.input("target_tensor") else "Y")
    if op.type == "expand_as_v2":
        target = list(op.attr("target_shape", []) or y.shape)
        try:
            broadcast.out_shape(x.shape, target)
        except ValueError:
            raise GraphError(f"expand_as: x {x.name}{list(x.shape)} does not broadcast to "
                             f"{y.name}{list(y.shape)}") from None
        set_out(op, "Out", target, x.dtype)
        return
    if len(x.shape) != len(y.shape):
        raise GraphError(f"expand_as: x {x.name}{list(x.shape)} and target_tensor {y.name}{list(y.shape)} "
                         "must have the same rank")
    for a, b in zip(x.shape, y.shape):
        if a > 0 and b >= 0 and b % a:
            raise GraphError(f"expand_as: each size of target_tensor {y.name}{list(y.shape)} must be a "
                             f"multiple of x {x.name}{list(x.shape)}'s")
    set_out(op, "Out", y.shape, x.dtype)


def _target(ctx):
    return ctx.input("target_tensor") if ctx.has_input("target_tensor") else ctx.input("Y")


def _expand_as_grad(op):
    return [GradOpSpec(op.type + "_grad", {"X": op.input("X"), "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"X@GRAD": [grad_name(op.input("X")[0])]}, dict(op.attrs))]


@register_op("expand_as", infer_shape=_expand_as_shape, grad=_expand_as_grad, no_grad_inputs=("target_tensor",))
def expand_as(ctx):
    x, y = ctx.input("X"), _target(ctx)
    if x.ndim != y.ndim or any(b % a for a, b in zip(x.shape, y.shape)):
        raise ValueError(f"expand_as: target shape {list(y.shape)} is not a multiple of x's {list(x.shape)}")
    ctx.set_output("Out", ctx.xp.tile(x, [b // a for a, b in zip(x.shape, y.shape)]))


@register_op("expand_as_grad")
def expand_as_grad(ctx):
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    split = []
    for a, b in zip(x.shape, dout.shape):
        split += [b // a, a]
    ctx.set_output("X@GRAD", dout.reshape(split).sum(axis=tuple(range(0, 2 * x.ndim, 2))))


@register_op("expand_as_v2", infer_shape=_expand_as_shape, grad=_expand_as_grad, no_grad_inputs=("Y",))
def expand_as_v2(ctx):
    ctx.set_output("Out", ctx.xp.broadcast_to(ctx.input("X"), _target(ctx).shape).copy())


@register_op("expand_as_v2_grad")
def expand_as_v2_grad(ctx):
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", broadcast.reduce_grad(dout, (1,) * (dout.ndim - x.ndim) + tuple(x.shape), x.shape))


# -- size, one_hot, print ----------------------------------------------------------------

@register_op("size", infer_shape=lambda op: set_out(op, "Out", [1], "int64"), no_grad_inputs=("Input",))
def size(ctx):
    ctx.set_output("Out", ctx.xp.asarray([ctx.input("Input").size], dtype="int64"))


def _one_hot_shape(op):
    x = in_var(op, "X")
    if not x.shape or x.shape[-1] != 1:
        raise GraphError(f"one_hot: input {x.name}{list(x.shape)} must end in a dimension of 1 ([N, 1] ids)")
    set_out(op, "Out", list(x.shape[:-1]) + [int(op.attr("depth"))], "float32", x.lod_level)


@register_op("one_hot", infer_shape=_one_hot_shape)
def one_hot(ctx):
    x, xp, depth = ctx.input("X"), ctx.xp, int(ctx.attr("depth"))
    ids = x[..., 0]
    bad = (ids < 0) | (ids >= depth)
    if bad.any() and not ctx.attr("allow_out_of_range", False):
        raise ValueError(f"one_hot: ids in [{int(ids.min())}, {int(ids.max())}] exceed depth {depth} "
                         "(pass allow_out_of_range=True to give such rows all zeros)")
    ctx.set_output("Out", (ids[..., None] == xp.arange(depth)).astype("float32"), lod=ctx.input_lod("X"))


_print_counts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # op -> runs printed


@register_op("print", infer_shape=same_shape("In", "Out"),
             grad=lambda op: [GradOpSpec("assign", {"X": [grad_name(op.output("Out")[0])]},
                                         {"Out": [grad_name(op.input("In")[0])]})])
def print_(ctx):
    """Fluid's Print: the tensor in Paddle's format (psjob/fluid/tensor_text.py: its name,
    message, LoD, place, shape, layout, dtype and values, as the flags choose) to stdout for the
    first `first_n` runs (all when -1), at most `summarize` values (all when -1)."""
    x, name = ctx.input("In"), ctx.ins["In"][0]
    seen = _print_counts.get(ctx.op, 0)
    first_n = int(ctx.attr("first_n", -1))
    if first_n < 0 or seen < first_n:
        _print_counts[ctx.op] = seen + 1
        host = np.asarray(x if ctx.xp is np else ctx.xp.asnumpy(x))
        lod = [np.asarray(level).tolist() for level in (ctx.input_lod("In") or [])]
        text = tensor_text.print_op_text(
            host, lod, ctx.place, name=name if ctx.attr("print_tensor_name", True) else None,
            message=ctx.attr("message", "") or "", summarize=int(ctx.attr("summarize", 20)),
            print_lod=bool(ctx.attr("print_tensor_lod", True)), print_shape=bool(ctx.attr("print_tensor_shape", True)),
            print_dtype=bool(ctx.attr("print_tensor_type", True)))
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    ctx.set_output("Out", x, lod=ctx.input_lod("In"))


# -- hash (Fluid's fluid.layers.hash) --------------------------------------------------------
# XXH64 by its specification (github.com/Cyan4973/xxHash, doc/xxhash_spec.md): Paddle's hash
# op hashes each row's bytes (the last dimension) once per seed 0..num_hash-1, modulo mod_by.

_M64 = (1 << 64) - 1
_P1, _P2, _P3, _P4, _P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                           0x27D4EB2F165667C5)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M64


def _xxh_round(acc, lane):
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def xxh64(data: bytes, seed: int = 0) -> int:
    n, i = len(data), 0
    if n >= 32:
        acc = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed & _M64, (seed - _P1) & _M64]
        while i + 32 <= n:
            acc = [_xxh_round(a, lane) for a, lane in zip(acc, struct.unpack_from("<4Q", data, i))]
            i += 32
        h = (_rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)) & _M64
        for a in acc:
            h = ((h ^ _xxh_round(0, a)) * _P1 + _P4) & _M64
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        h = (_rotl(h ^ _xxh_round(0, struct.unpack_from("<Q", data, i)[0]), 27) * _P1 + _P4) & _M64
        i += 8
    if i + 4 <= n:
        h = (_rotl(h ^ ((struct.unpack_from("<I", data, i)[0] * _P1) & _M64), 23) * _P2 + _P3) & _M64
        i += 4
    for byte in data[i:]:
        h = (_rotl(h ^ ((byte * _P5) & _M64), 11) * _P1) & _M64
    h = ((h ^ (h >> 33)) * _P2) & _M64
    h = ((h ^ (h >> 29)) * _P3) & _M64
    return h ^ (h >> 32)


def _hash_shape(op):
    x = in_var(op, "X")
    if x.dtype not in ("int32", "int64") or len(x.shape) < 2:
        raise GraphError(f"hash: input {x.name}{list(x.shape)} must be an int32/int64 tensor of 2 or more "
                         f"dimensions, got {x.dtype}")
    set_out(op, "Out", list(x.shape[:-1]) + [int(op.attr("num_hash", 1)), 1], x.dtype, x.lod_level)


@register_op("hash", infer_shape=_hash_shape)
def hash_(ctx):
    x = ctx.input("X")
    host = np.ascontiguousarray(x if ctx.xp is np else ctx.xp.asnumpy(x))
    rows = host.reshape(-1, host.shape[-1])
    num, mod = int(ctx.attr("num_hash", 1)), int(ctx.attr("mod_by"))
    out = np.array([[xxh64(r.tobytes(), s) % mod for s in range(num)] for r in rows], dtype=host.dtype)
    out = out.reshape(host.shape[:-1] + (num, 1))
    ctx.set_output("Out", out if ctx.xp is np else ctx.xp.asarray(out), lod=ctx.input_lod("X"))

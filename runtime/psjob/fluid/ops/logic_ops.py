"""Logical and floating-point-class ops, no gradients (Paddle's op types, Paddle 2.x API docs;
Fluid 1.8 for `isfinite`, `isinf`, `isnan`):

* `logical_and`, `logical_or`, `logical_xor` (X, Y broadcast as numpy's) and `logical_not`:
  bool outputs; a non-bool operand counts as true where it is non-zero.
* `isnan_v2`, `isinf_v2`, `isfinite_v2`: element-wise bool (paddle.isnan, ...).
* `isnan`, `isinf`, `isfinite` (Fluid's has_nan, has_inf, isfinite): one bool, shape [1] —
  whether any element is nan / any is inf / every element is finite.
* `reduce_all`, `reduce_any` over `dim` (or everything with `reduce_all`), keep_dim.
* `allclose` (|x - y| <= atol + rtol * |y|, `equal_nan`) and `equal_all` (same shape and
  every element equal): one bool, shape [1]; `isclose`: the same test element-wise (one shape).
* `bitwise_not` of an integer or bool tensor.
"""
from __future__ import annotations

from psjob.fluid.framework import GraphError
from psjob.fluid.ops import broadcast
from psjob.fluid.ops.reduce_ops import _out_shape, reduce_axes
from psjob.fluid.ops.registry import in_var, register_op, set_out


def _binary_shape(op):
    x, y = in_var(op, "X"), in_var(op, "Y")
    set_out(op, "Out", broadcast.infer(op, x, y), "bool")


def _make_binary(fn_name):
    def kernel(ctx):
        x, y = broadcast.operands(ctx.input("X"), ctx.input("Y"), ctx.attr("axis", -1))
        ctx.set_output("Out", getattr(ctx.xp, fn_name)(x.astype(bool), y.astype(bool)))
    return kernel


for _op in ("logical_and", "logical_or", "logical_xor"):
    register_op(_op, infer_shape=_binary_shape)(_make_binary(_op))


def _bool_like(op):
    x = in_var(op, "X")
    set_out(op, "Out", x.shape, "bool")


register_op("logical_not", infer_shape=_bool_like)(
    lambda ctx: ctx.set_output("Out", ctx.xp.logical_not(ctx.input("X").astype(bool))))
for _op, _fn in (("isnan_v2", "isnan"), ("isinf_v2", "isinf"), ("isfinite_v2", "isfinite")):
    register_op(_op, infer_shape=_bool_like)(
        lambda ctx, _fn=_fn: ctx.set_output("Out", getattr(ctx.xp, _fn)(ctx.input("X"))))


def _one_bool(op):
    set_out(op, "Out", [1], "bool")


register_op("isnan", infer_shape=_one_bool)(
    lambda ctx: ctx.set_output("Out", ctx.xp.isnan(ctx.input("X")).any().reshape(1)))
register_op("isinf", infer_shape=_one_bool)(
    lambda ctx: ctx.set_output("Out", ctx.xp.isinf(ctx.input("X")).any().reshape(1)))
register_op("isfinite", infer_shape=_one_bool)(
    lambda ctx: ctx.set_output("Out", ctx.xp.isfinite(ctx.input("X")).all().reshape(1)))


def _reduce_bool_shape(op):
    x = in_var(op, "X")
    axes = reduce_axes(len(x.shape), op.attr("dim", [0]), op.attr("reduce_all", False), op.type)
    set_out(op, "Out", _out_shape(list(x.shape), axes, op.attr("keep_dim", False)), "bool")


def _make_reduce(kind):
    def kernel(ctx):
        x = ctx.input("X").astype(bool)
        axes = reduce_axes(x.ndim, ctx.attr("dim", [0]), ctx.attr("reduce_all", False), kind)
        out = x.all(axis=axes) if kind == "reduce_all" else x.any(axis=axes)
        ctx.set_output("Out", out.reshape(_out_shape(list(x.shape), axes, ctx.attr("keep_dim", False))))
    return kernel


for _op in ("reduce_all", "reduce_any"):
    register_op(_op, infer_shape=_reduce_bool_shape)(_make_reduce(_op))


def _allclose_shape(op):
    x, y = in_var(op, "Input"), in_var(op, "Other")
    if x.dtype != y.dtype:
        raise GraphError(f"allclose: x {x.name} is {x.dtype} but y {y.name} is {y.dtype}")
    set_out(op, "Out", [1], "bool")


@register_op("allclose", infer_shape=_allclose_shape)
def allclose(ctx):
    x, y = ctx.input("Input"), ctx.input("Other")
    ok = ctx.xp.allclose(x, y, rtol=float(ctx.attr("rtol", 1e-5)), atol=float(ctx.attr("atol", 1e-8)),
                         equal_nan=bool(ctx.attr("equal_nan", False)))
    ctx.set_output("Out", ctx.xp.asarray([bool(ok)]))


@register_op("equal_all", infer_shape=_one_bool)
def equal_all(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    same = x.shape == y.shape and bool((x == y).all())
    ctx.set_output("Out", ctx.xp.asarray([same]))


def _isclose_shape(op):
    x, y = in_var(op, "Input"), in_var(op, "Other")
    if len(x.shape) != len(y.shape) or any(a >= 0 and b >= 0 and a != b for a, b in zip(x.shape, y.shape)):
        raise GraphError(f"isclose: x {x.name}{list(x.shape)} and y {y.name}{list(y.shape)} must have one shape")
    set_out(op, "Out", x.shape, "bool")


@register_op("isclose", infer_shape=_isclose_shape)
def isclose(ctx):
    x, y = ctx.input("Input"), ctx.input("Other")
    ctx.set_output("Out", ctx.xp.isclose(x, y, rtol=float(ctx.attr("rtol", 1e-5)), atol=float(ctx.attr("atol", 1e-8)),
                                         equal_nan=bool(ctx.attr("equal_nan", False))))


def _bitwise_not_shape(op):
    x = in_var(op, "X")
    if not (x.dtype == "bool" or x.dtype.startswith(("int", "uint"))):
        raise GraphError(f"bitwise_not: X {x.name} must be an integer or bool tensor, got {x.dtype}")
    set_out(op, "Out", x.shape, x.dtype)


register_op("bitwise_not", infer_shape=_bitwise_not_shape)(
    lambda ctx: ctx.set_output("Out", ctx.xp.invert(ctx.input("X"))))

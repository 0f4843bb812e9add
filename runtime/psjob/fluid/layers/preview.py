"""Layers Fluid 1.8 added ahead of Paddle 2.0's API (Paddle 1.8 API docs, fluid.layers): the
n-ary `sum`, `mse_loss`, `tril`/`triu`, `arange` and the element-wise `log1p`, `erf`, `atan`,
`asin`, `acos`. They are Paddle 1.8's ops (kernels and gradients in fluid/ops); kept in their own
module because `sum` and `range` would shadow Python's in a module that uses them.
"""
from __future__ import annotations

from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers import manip, nn, tensor
from psjob.fluid.layers._checks import FLOATS, check_dtype, check_variable
from psjob.fluid.layers.ops import _unary

__all__ = ["sum", "mse_loss", "tril", "triu", "arange", "log1p", "erf", "atan", "asin", "acos"]

log1p = _unary("log1p", "log(1 + x), element-wise.")
erf = _unary("erf", "The error function of x, element-wise.")
atan = _unary("atan", "The arctangent of x, element-wise.")
asin = _unary("asin", "The arcsine of x (in [-1, 1]), element-wise.")
acos = _unary("acos", "The arccosine of x (in [-1, 1]), element-wise.")


def sum(x):  # noqa: A001 (Fluid's name)
    """The element-wise sum of x: a Variable (returned as a copy) or a list of Variables of one
    shape and dtype (the `sum` op; not a reduction, which is reduce_sum)."""
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    if not xs:
        raise ValueError("sum: x must be a Variable or a non-empty list of Variables")
    for i, v in enumerate(xs):
        check_variable(v, f"x[{i}]" if isinstance(x, (list, tuple)) else "x", "sum")
    if len({v.dtype for v in xs}) > 1:
        raise TypeError(f"sum: the inputs must share one dtype, got {[v.dtype for v in xs]}")
    helper = LayerHelper("sum")
    out = helper.create_variable_for_type_inference(xs[0].dtype)
    helper.append_op(type="sum", inputs={"X": xs}, outputs={"Out": [out]})
    return out


def mse_loss(input, label):  # noqa: A002 (Fluid's name)
    """The mean of (input - label)^2 over every element, a [1] value (Fluid 1.8: reduce_mean of
    square_error_cost)."""
    for name, v in (("input", input), ("label", label)):
        check_variable(v, name, "mse_loss")
        check_dtype(v, name, FLOATS, "mse_loss")
    return manip.reduce_mean(nn.square_error_cost(input, label))


def _tril_triu(input, diagonal, lower, name):  # noqa: A002
    what = "tril" if lower else "triu"
    check_variable(input, "input", what)
    if isinstance(diagonal, bool) or not isinstance(diagonal, int):
        raise TypeError(f"{what}: diagonal must be an int, got {diagonal!r}")
    if len(input.shape) < 2:
        raise ValueError(f"{what}: input must have at least 2 dimensions, got shape {list(input.shape)}")
    helper = LayerHelper(what, name)
    out = helper.block().create_var(name=helper.name, dtype=input.dtype)  # Paddle 1.8 names it tril_N
    helper.append_op(type="tril_triu", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"diagonal": diagonal, "lower": lower})
    return out


def tril(input, diagonal=0, name=None):  # noqa: A002
    """The lower triangle (column - row <= diagonal) of input's last two dimensions; the rest 0."""
    return _tril_triu(input, diagonal, True, name)


def triu(input, diagonal=0, name=None):  # noqa: A002
    """The upper triangle (column - row >= diagonal) of input's last two dimensions; the rest 0."""
    return _tril_triu(input, diagonal, False, name)


def arange(start, end, step=1, dtype=None, name=None):
    """fluid.layers.range with dtype int64 by default (Fluid 1.8's arange)."""
    return tensor.range(start, end, step, "int64" if dtype is None else dtype)

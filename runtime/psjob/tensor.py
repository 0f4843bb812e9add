"""Paddle 2.x tensor functions (`paddle.reshape`, `paddle.matmul`, ...) in static mode: each
appends ops to the current Program, with Paddle 2.x argument names and defaults.

Element-wise binary functions broadcast as Fluid's elementwise ops do: `y` may have
fewer dimensions than `x` (aligned at the trailing ones) or the same number with 1s;
a `y` with more dimensions than `x` is refused at build time.
"""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from .fluid import layers as _layers
from .fluid.framework import Variable, convert_dtype
from .fluid.layer_helper import LayerHelper
from .fluid.layers._checks import check_int_list, check_variable

__all__ = [
    "reshape", "concat", "cast", "mean", "sum", "square", "sqrt", "abs", "exp", "log", "pow",
    "matmul", "multiply", "add", "subtract", "divide", "maximum", "scale", "sigmoid", "tanh",
    "clip", "squeeze", "unsqueeze", "split", "stack", "slice", "flatten", "transpose",
    "ones", "zeros", "full", "full_like", "ones_like", "zeros_like", "argmax", "topk", "where",
    "greater_than", "greater_equal", "less_than", "less_equal", "equal", "not_equal",
    "create_parameter", "to_tensor", "float32", "float64", "float16", "int32", "int64", "bool",
]

float16, float32, float64, int32, int64 = "float16", "float32", "float64", "int32", "int64"
bool = "bool"  # noqa: A001 (paddle.bool)
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _op(op_type, inputs, attrs=None, dtype=None, out_slot="Out", name=None, stop_gradient=False):
    first = next(iter(inputs.values()))[0]
    helper = LayerHelper(op_type, name)
    out = helper.create_variable_for_type_inference(dtype or first.dtype, stop_gradient=stop_gradient)
    helper.append_op(type=op_type, inputs=inputs, outputs={out_slot: [out]}, attrs=attrs or {})
    return out


def _axes(axis, what):
    return [] if axis is None else check_int_list(axis, "axis", what)


# -- shape ------------------------------------------------------------------------------

def reshape(x, shape, name=None):
    if isinstance(shape, Variable):
        raise TypeError("paddle.reshape: a shape Variable is not supported; pass a list of ints")
    return _layers.reshape(x, list(shape), name=name)


def concat(x, axis=0, name=None):
    return _layers.concat(list(x), axis=axis, name=name)


def split(x, num_or_sections, axis=0, name=None):
    """Paddle 2.x splits along axis 0 by default (Fluid's split: the last axis)."""
    return _layers.split(x, num_or_sections, dim=axis, name=name)


def squeeze(x, axis=None, name=None):
    return _layers.squeeze(x, _axes(axis, "squeeze"), name=name)


def unsqueeze(x, axis, name=None):
    return _layers.unsqueeze(x, _axes(axis, "unsqueeze"), name=name)


def transpose(x, perm, name=None):
    return _layers.transpose(x, list(perm), name=name)


def stack(x, axis=0, name=None):
    xs = list(x)
    for i, v in enumerate(xs):
        check_variable(v, f"x[{i}]", "stack")
    helper = LayerHelper("stack", name)
    out = helper.create_variable_for_type_inference(xs[0].dtype)
    helper.append_op(type="stack", inputs={"X": xs}, outputs={"Y": [out]}, attrs={"axis": int(axis)})
    return out


def slice(input, axes, starts, ends):  # noqa: A001 (paddle.slice)
    check_variable(input, "input", "slice")
    return _op("slice", {"X": [input]}, {"axes": check_int_list(axes, "axes", "slice"),
                                          "starts": check_int_list(starts, "starts", "slice"),
                                          "ends": check_int_list(ends, "ends", "slice")})


def flatten(x, start_axis=0, stop_axis=-1, name=None):
    check_variable(x, "x", "flatten")
    nd = len(x.shape)
    start, stop = start_axis % nd, stop_axis % nd
    if start > stop:
        raise ValueError(f"flatten: start_axis {start_axis} comes after stop_axis {stop_axis}")
    if stop == nd - 1:
        shape = [0] * start + [-1]
    elif all(d >= 0 for d in x.shape[start:]):
        shape = [0] * start + [int(np.prod(x.shape[start:stop + 1]))] + list(x.shape[stop + 1:])
    else:
        raise ValueError(f"flatten: {x.name}{list(x.shape)} needs known dimensions after start_axis "
                         "unless stop_axis is the last one")
    return _layers.reshape(x, shape, name=name)


# -- math -------------------------------------------------------------------------------

def cast(x, dtype):
    return _layers.cast(x, convert_dtype(dtype))


def mean(x, axis=None, keepdim=False, name=None):
    if axis is None and not keepdim:
        return _layers.mean(x, name=name)
    return _layers.reduce_mean(x, dim=axis, keep_dim=keepdim, name=name)


def sum(x, axis=None, dtype=None, keepdim=False, name=None):  # noqa: A001 (paddle.sum)
    if dtype is not None:
        x = cast(x, dtype)
    return _layers.reduce_sum(x, dim=axis, keep_dim=keepdim, name=name)


def _unary(op_type):
    def fn(x, name=None):
        check_variable(x, "x", op_type)
        return _op(op_type, {"X": [x]}, name=name)
    fn.__name__ = op_type
    fn.__doc__ = f"paddle.{op_type}: element-wise."
    return fn


square, sqrt, abs, exp, log = (_unary(t) for t in ("square", "sqrt", "abs", "exp", "log"))  # noqa: A001
sigmoid, tanh = _layers.sigmoid, _layers.tanh


def pow(x, y, name=None):  # noqa: A001 (paddle.pow)
    if isinstance(y, Variable):
        raise TypeError("paddle.pow: a Variable exponent is not supported; pass a number")
    check_variable(x, "x", "pow")
    return _op("pow", {"X": [x]}, {"factor": float(y)}, name=name)


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    return _layers.scale(x, scale, bias, bias_after_scale, act, name)


def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    return _layers.matmul(x, y, transpose_x, transpose_y, 1.0, name)


def _binary(fluid_fn):
    def fn(x, y, name=None):
        check_variable(x, "x", fluid_fn.__name__)
        if not isinstance(y, Variable):
            return x._binary(y, fluid_fn.__name__)
        return fluid_fn(x, y, axis=-1, name=name)
    return fn


add = _binary(_layers.elementwise_add)
subtract = _binary(_layers.elementwise_sub)
multiply = _binary(_layers.elementwise_mul)
divide = _binary(_layers.elementwise_div)
maximum = _binary(_layers.elementwise_max)


def clip(x, min=None, max=None, name=None):  # noqa: A002 (Paddle's names)
    check_variable(x, "x", "clip")
    lo = -_FLOAT32_MAX if min is None else float(min)
    hi = _FLOAT32_MAX if max is None else float(max)
    if lo > hi:
        raise ValueError(f"paddle.clip: min ({lo}) exceeds max ({hi})")
    return _op("clip", {"X": [x]}, {"min": lo, "max": hi}, name=name)


# -- creation ---------------------------------------------------------------------------

def _dtype(dtype, default="float32"):
    return convert_dtype(dtype if dtype is not None else default)


def full(shape, fill_value, dtype=None, name=None):
    shape = check_int_list(list(shape), "shape", "full")
    if any(d < 0 for d in shape):
        raise ValueError(f"paddle.full: shape {shape} must be fully known (use full_like for a batch)")
    return _layers.fill_constant(shape, _dtype(dtype), fill_value)


def ones(shape, dtype=None, name=None):
    return full(shape, 1.0, dtype)


def zeros(shape, dtype=None, name=None):
    return full(shape, 0.0, dtype)


def full_like(x, fill_value, dtype=None, name=None):
    check_variable(x, "x", "full_like")
    dtype = _dtype(dtype, x.dtype)
    return _op("fill_any_like", {"X": [x]}, {"value": float(fill_value), "dtype": dtype},
               dtype=dtype, name=name, stop_gradient=True)


def ones_like(x, dtype=None, name=None):
    return full_like(x, 1.0, dtype, name)


def zeros_like(x, dtype=None, name=None):
    return full_like(x, 0.0, dtype, name)


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    return _layers.create_parameter(list(shape), convert_dtype(dtype), name, attr, is_bias,
                                    default_initializer)


def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    raise RuntimeError("paddle.to_tensor builds an eager (dygraph) tensor, which psjob does not have: "
                       "declare an input with paddle.static.data and feed the array to Executor.run, "
                       "or make a constant with paddle.full / nn.initializer.Assign")


# -- search and compare -----------------------------------------------------------------

def argmax(x, axis=None, keepdim=False, dtype="int64", name=None):
    check_variable(x, "x", "argmax")
    dtype = convert_dtype(dtype)
    attrs = {"flatten": axis is None, "axis": -1 if axis is None else int(axis),
             "keepdims": builtins.bool(keepdim), "dtype": dtype}
    return _op("arg_max", {"X": [x]}, attrs, dtype=dtype, name=name, stop_gradient=True)


def topk(x, k, axis=-1, largest=True, sorted=True, name=None):  # noqa: A002
    if axis not in (-1, len(x.shape) - 1) or not largest:
        raise ValueError("paddle.topk: only the largest values along the last axis are supported")
    return _layers.topk(x, k, name)


def where(condition, x=None, y=None, name=None):
    if x is None or y is None:
        raise ValueError("paddle.where(condition) without x and y (the indices form) is not supported")
    for arg, v in (("condition", condition), ("x", x), ("y", y)):
        check_variable(v, arg, "where")
    return _op("where", {"Condition": [condition], "X": [x], "Y": [y]}, name=name)


def _compare(op_type):
    def fn(x, y, name=None):
        check_variable(x, "x", op_type)
        if not isinstance(y, Variable):
            if not isinstance(y, numbers.Real):
                raise TypeError(f"paddle.{op_type}: y must be a Variable or a number, got {y!r}")
            y = full_like(x, y)
        return _op(op_type, {"X": [x], "Y": [y]}, dtype="bool", name=name, stop_gradient=True)
    fn.__name__ = op_type
    return fn


greater_than, greater_equal, less_than, less_equal, equal, not_equal = (
    _compare(t) for t in ("greater_than", "greater_equal", "less_than", "less_equal", "equal", "not_equal"))


def add_n(inputs, name=None):
    """The element-wise sum of a list of Variables of one shape and dtype (Paddle's `sum` op);
    a single Variable is returned summed with nothing (a copy)."""
    xs = [inputs] if isinstance(inputs, Variable) else list(inputs)
    if not xs:
        raise ValueError("paddle.add_n: inputs is empty")
    for i, v in enumerate(xs):
        check_variable(v, f"inputs[{i}]", "add_n")
        if v.dtype != xs[0].dtype or len(v.shape) != len(xs[0].shape) or any(
                a >= 0 and b >= 0 and a != b for a, b in zip(v.shape, xs[0].shape)):
            raise ValueError(f"paddle.add_n: inputs[{i}] {v.name} is {v.dtype}{list(v.shape)}, inputs[0] "
                             f"{xs[0].name} is {xs[0].dtype}{list(xs[0].shape)}: they must match")
    return _op("sum", {"X": xs}, name=name)


__all__ += ["add_n"]

"""Paddle 2.x tensor functions (`paddle.reshape`, `paddle.matmul`, ...) in static mode: each
appends ops to the current Program, with Paddle 2.x argument names and defaults.

Element-wise binary functions (add, subtract, multiply, divide, maximum, minimum, pow,
floor_divide, remainder) and the comparisons broadcast as Paddle 2.x's do, numpy-style in
both directions: shapes are aligned at their trailing dimensions and a size of 1 in either
operand stretches ([N, 13, 1] * [1, 13, 9] is [N, 13, 9]); the gradient of a stretched
operand is summed back to its shape.
"""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from psjob.fluid import layers as _layers
from psjob.fluid.framework import Variable, convert_dtype
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_int_list, check_variable

__all__ = [
    "reshape", "concat", "cast", "mean", "sum", "max", "min", "prod", "square", "sqrt", "abs", "exp", "log", "log1p",
    "pow",
    "matmul", "einsum", "multiply", "add", "subtract", "divide", "maximum", "minimum", "floor_divide",
    "remainder", "mod", "floor_mod", "scale", "sigmoid", "tanh",
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

def _one_int_tensors(values, what):
    """Paddle's list of runtime sizes (reshape's ShapeTensor, tile's repeat_times_tensor): each
    entry a one-element int tensor, the ints made constants; the attribute holds -1 for the
    Variables, the ints as given."""
    tensors, attr = [], []
    for i, v in enumerate(values):
        if isinstance(v, Variable):
            if v.dtype not in ("int32", "int64") or int(np.prod(v.shape)) not in (1, -1):
                raise TypeError(f"{what}[{i}] {v.name}{list(v.shape)} must be a one-element int32/int64 tensor, "
                                f"got {v.dtype}")
            tensors.append(v)
            attr.append(-1)
        else:
            n = check_int_list([v], what, what.split("(")[0])[0]
            tensors.append(_layers.fill_constant([1], "int32", n))
            attr.append(n)
    return tensors, attr


def _int_vector(v, what):
    if v.dtype not in ("int32", "int64") or len(v.shape) != 1 or v.shape[0] < 1:
        raise TypeError(f"{what} {v.name}{list(v.shape)} must be a 1-D int32/int64 tensor of known length, got {v.dtype}")
    return int(v.shape[0])


def _reshape2(x, inputs, attr, name):
    helper = LayerHelper("reshape2", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    xshape = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op(type="reshape2", inputs=dict(inputs, X=[x]), outputs={"Out": [out], "XShape": [xshape]},
                     attrs={"shape": attr})
    return out


def reshape(x, shape, name=None):
    """As paddle.reshape: `shape` a list of ints, a list holding one-element int Variables
    (sizes read when the op runs, e.g. paddle.shape(y)[1]), or a 1-D int Variable."""
    check_variable(x, "x", "reshape")
    if isinstance(shape, Variable):
        return _reshape2(x, {"Shape": [shape]}, [-1] * _int_vector(shape, "paddle.reshape: shape"), name)
    if isinstance(shape, (list, tuple)) and any(isinstance(d, Variable) for d in shape):
        tensors, attr = _one_int_tensors(list(shape), "reshape(shape)")
        return _reshape2(x, {"ShapeTensor": tensors}, attr, name)
    return _layers.reshape(x, list(shape), name=name)


def concat(x, axis=0, name=None):
    return _layers.concat(list(x), axis=axis, name=name)


def split(x, num_or_sections, axis=0, name=None):
    """Paddle 2.x splits along axis 0 by default (Fluid's split: the last axis)."""
    return _layers.split(x, num_or_sections, dim=axis, name=name)


def squeeze(x, axis=None, name=None):
    """Paddle 2.x's squeeze leaves a named axis whose size is not 1 in place (Fluid 1.x's
    squeeze refused it): x.squeeze(2) of a [N, 50, 50] is x."""
    axes = _axes(axis, "squeeze")
    check_variable(x, "x", "squeeze")
    if axes:
        nd = len(x.shape)
        axes = [a for a in axes if not (-nd <= a < nd) or x.shape[a] in (1, -1)]
        if not axes:
            return _layers.assign(x)
    return _layers.squeeze(x, axes, name=name)


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
    return _op("slice", {"Input": [input]}, {"axes": check_int_list(axes, "axes", "slice"),
                                          "starts": check_int_list(starts, "starts", "slice"),
                                          "ends": check_int_list(ends, "ends", "slice")})


def flatten(x, start_axis=0, stop_axis=-1, name=None):
    """Merge dimensions start_axis..stop_axis into one (Paddle's flatten_contiguous_range):
    the merged size is unknown (-1) only if one of the merged dimensions is."""
    check_variable(x, "x", "flatten")
    nd = len(x.shape)
    if not (-nd <= start_axis < nd and -nd <= stop_axis < nd) and nd:
        raise ValueError(f"flatten: start_axis {start_axis} / stop_axis {stop_axis} out of range for "
                         f"{x.name}{list(x.shape)}")
    if nd and start_axis % nd > stop_axis % nd:
        raise ValueError(f"flatten: start_axis {start_axis} comes after stop_axis {stop_axis}")
    helper = LayerHelper("flatten_contiguous_range", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    xshape = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op(type="flatten_contiguous_range", inputs={"X": [x]},
                     outputs={"Out": [out], "XShape": [xshape]},
                     attrs={"start_axis": int(start_axis), "stop_axis": int(stop_axis)})
    return out


# -- math -------------------------------------------------------------------------------

def cast(x, dtype):
    return _layers.cast(x, convert_dtype(dtype))


def mean(x, axis=None, keepdim=False, name=None):
    if axis is None and not keepdim:
        return _layers.mean(x, name=name)
    return _layers.reduce_mean(x, dim=axis, keep_dim=keepdim, name=name)


def max(x, axis=None, keepdim=False, name=None):  # noqa: A001 (paddle.max)
    return _layers.reduce_max(x, dim=axis, keep_dim=keepdim, name=name)


def min(x, axis=None, keepdim=False, name=None):  # noqa: A001 (paddle.min)
    return _layers.reduce_min(x, dim=axis, keep_dim=keepdim, name=name)


def sum(x, axis=None, dtype=None, keepdim=False, name=None):  # noqa: A001 (paddle.sum)
    if dtype is not None:
        x = cast(x, dtype)
    return _layers.reduce_sum(x, dim=axis, keep_dim=keepdim, name=name)


def prod(x, axis=None, keepdim=False, dtype=None, name=None):
    if dtype is not None:
        x = cast(x, dtype)
    return _layers.reduce_prod(x, dim=axis, keep_dim=keepdim, name=name)


def _unary(op_type):
    def fn(x, name=None):
        check_variable(x, "x", op_type)
        return _op(op_type, {"X": [x]}, name=name)
    fn.__name__ = op_type
    fn.__doc__ = f"paddle.{op_type}: element-wise."
    return fn


square, sqrt, abs, exp, log, log1p = (  # noqa: A001
    _unary(t) for t in ("square", "sqrt", "abs", "exp", "log", "log1p"))
sigmoid, tanh = _layers.sigmoid, _layers.tanh


def pow(x, y, name=None):  # noqa: A001 (paddle.pow)
    """x ** y: a number y is the `pow` op's factor; a Variable y is elementwise_pow (broadcast)."""
    check_variable(x, "x", "pow")
    if isinstance(y, Variable):
        return _layers.elementwise_pow(x, y, axis=-1, name=name)
    if not isinstance(y, numbers.Real):
        raise TypeError(f"paddle.pow: y must be a Variable or a number, got {y!r}")
    return _op("pow", {"X": [x]}, {"factor": float(y)}, name=name)


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    return _layers.scale(x, scale, bias, bias_after_scale, act, name)


def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    return _layers.matmul(x, y, transpose_x, transpose_y, 1.0, name)


def einsum(equation, *operands):
    """Einstein summation of operands by Paddle's equation (one `einsum` op; see
    fluid/ops/einsum_ops.py for the equations psjob accepts)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("paddle.einsum: no operands given")
    for i, x in enumerate(operands):
        check_variable(x, f"operands[{i}]", "einsum")
    return _op("einsum", {"Operands": list(operands)}, {"equation": equation})


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
minimum = _binary(_layers.elementwise_min)
floor_divide = _binary(_layers.elementwise_floordiv)
remainder = mod = floor_mod = _binary(_layers.elementwise_mod)


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
    if not isinstance(shape, Variable) and any(isinstance(d, Variable) for d in shape):
        return _full_runtime_shape(list(shape), fill_value, _dtype(dtype))
    shape = check_int_list(list(shape), "shape", "full")
    if any(d < 0 for d in shape):
        raise ValueError(f"paddle.full: shape {shape} must be fully known (use full_like for a batch)")
    return _layers.fill_constant(shape, _dtype(dtype), fill_value)


def _full_runtime_shape(shape, fill_value, dtype):
    """Paddle's fill_constant with a ShapeTensorList: one int tensor per dimension, read when
    the op runs (e.g. [paddle.shape(x)[0], 1]); a Variable's dimension is -1 until then."""
    dims = []
    for i, d in enumerate(shape):
        if isinstance(d, Variable):
            if d.dtype not in ("int32", "int64") or int(np.prod(d.shape)) not in (1, -1):
                raise TypeError(f"paddle.full: shape[{i}] {d.name}{list(d.shape)} must be a one-element "
                                f"int32/int64 tensor, got {d.dtype}")
            dims.append(d)
        else:
            dims.append(_layers.fill_constant([1], "int32", check_int_list([d], "shape", "full")[0]))
    attr = [-1 if isinstance(d, Variable) else int(d) for d in shape]
    attrs = {"shape": attr, "dtype": dtype, "value": float(fill_value)}
    return _op("fill_constant", {"ShapeTensorList": dims}, attrs, dtype=dtype, stop_gradient=True)


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


def _bitwise(op_type):
    def fn(x, y, out=None, name=None):
        check_variable(x, "x", op_type)
        check_variable(y, "y", op_type)
        if out is not None:
            raise ValueError(f"paddle.{op_type}: out= is not supported")
        return _op(op_type, {"X": [x], "Y": [y]}, name=name, stop_gradient=True)
    fn.__name__ = op_type
    return fn


bitwise_and, bitwise_or, bitwise_xor = (_bitwise(t) for t in ("bitwise_and", "bitwise_or", "bitwise_xor"))
__all__ += ["bitwise_and", "bitwise_or", "bitwise_xor"]


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


# -- batched matrices, triangles, selection, shape, ranges, tiling (PaddleRec's model zoo) --

__all__ += ["bmm", "tril", "triu", "masked_select", "shape", "arange", "tile", "expand", "assign", "gather",
            "multinomial"]


def bmm(x, y, name=None):
    """Batched matrix product of 3-D x [B, M, K] and y [B, K, N]: [B, M, N]."""
    check_variable(x, "x", "bmm")
    check_variable(y, "y", "bmm")
    return _op("bmm", {"X": [x], "Y": [y]}, name=name)


def _tril_triu(x, diagonal, lower, name):
    what = "tril" if lower else "triu"
    check_variable(x, "x", what)
    if not isinstance(diagonal, numbers.Integral) or isinstance(diagonal, builtins.bool):
        raise TypeError(f"paddle.{what}: diagonal must be an int, got {diagonal!r}")
    return _op("tril_triu", {"X": [x]}, {"diagonal": int(diagonal), "lower": lower}, name=name)


def tril(x, diagonal=0, name=None):
    """The lower triangle (column - row <= diagonal) of x's last two dimensions; the rest 0."""
    return _tril_triu(x, diagonal, True, name)


def triu(x, diagonal=0, name=None):
    """The upper triangle (column - row >= diagonal) of x's last two dimensions; the rest 0."""
    return _tril_triu(x, diagonal, False, name)


def masked_select(x, mask, name=None):
    """The elements of x where the bool mask (broadcast with x) is true: 1-D, length unknown."""
    check_variable(x, "x", "masked_select")
    check_variable(mask, "mask", "masked_select")
    return _op("masked_select", {"X": [x], "Mask": [mask]}, out_slot="Y", name=name)


def shape(input):  # noqa: A002 (Paddle's name)
    """x's runtime shape as an int32 [rank] tensor (a -1 dimension reads its fed size)."""
    check_variable(input, "input", "shape")
    return _op("shape", {"Input": [input]}, dtype="int32", stop_gradient=True)


def _range_bound(v, dtype, what):
    if isinstance(v, Variable):
        return v
    if isinstance(v, builtins.bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"paddle.arange: {what} must be a number or a Variable, got {v!r}")
    return _layers.fill_constant([1], dtype, v)


def arange(start=0, end=None, step=1, dtype=None, name=None):
    """[start, start + step, ...) below end (above it for a negative step); arange(n) is 0..n-1.

    dtype defaults to int64 when start, end and step are ints, else float32 (Paddle 2.x).
    With numbers the length, ceil((end - start) / step), is known when the program is built."""
    if end is None:
        start, end = 0, start
    bounds = (start, end, step)
    numbers_only = not any(isinstance(v, Variable) for v in bounds)
    if dtype is None:
        floats = any(isinstance(v, float) or (isinstance(v, Variable) and "float" in v.dtype) for v in bounds)
        dtype = "float32" if floats else "int64"
    dtype = convert_dtype(dtype)
    if numbers_only and step == 0:
        raise ValueError("paddle.arange: step must not be 0")
    start_v, end_v, step_v = (_range_bound(v, dtype, w) for v, w in zip(bounds, ("start", "end", "step")))
    out = _op("range", {"Start": [start_v], "End": [end_v], "Step": [step_v]}, dtype=dtype, name=name,
              stop_gradient=True)
    if numbers_only:
        out.shape = (builtins.max(0, int(np.ceil((end - start) / step))),)
    return out


def tile(x, repeat_times, name=None):
    """x repeated repeat_times[i] times along dimension i (the shorter of x's rank and
    repeat_times is padded with leading 1s)."""
    check_variable(x, "x", "tile")
    if isinstance(repeat_times, Variable):
        n = _int_vector(repeat_times, "paddle.tile: repeat_times")
        return _op("tile", {"X": [x], "RepeatTimes": [repeat_times]}, {"repeat_times": [-1] * n}, name=name)
    if any(isinstance(r, Variable) for r in repeat_times):
        tensors, attr = _one_int_tensors(list(repeat_times), "tile(repeat_times)")
        return _op("tile", {"X": [x], "repeat_times_tensor": tensors}, {"repeat_times": attr}, name=name)
    reps = check_int_list(list(repeat_times), "repeat_times", "tile")
    return _op("tile", {"X": [x]}, {"repeat_times": reps}, name=name)


def expand(x, shape, name=None):
    """x broadcast to `shape` (-1 keeps x's dimension; x is aligned to the right), Paddle's
    expand_v2: paddle.expand(x, shape), x.expand(shape)."""
    check_variable(x, "x", "expand")
    if isinstance(shape, Variable):
        raise TypeError("paddle.expand: a shape Variable is not supported; pass a list")
    if any(isinstance(d, Variable) for d in shape):
        # expand_v2's expand_shapes_tensor (e.g. [paddle.shape(x)[0], 20]), read when the op runs.
        dims, attr = _one_int_tensors(list(shape), "expand(shape)")
        return _op("expand_v2", {"X": [x], "expand_shapes_tensor": dims}, {"shape": attr}, name=name)
    return _op("expand_v2", {"X": [x]}, {"shape": check_int_list(list(shape), "shape", "expand")}, name=name)


def gather(x, index, axis=None, name=None):
    """x's slices at `index` (int, [K] or [K, 1]) along `axis` (default 0): Paddle's gather op."""
    check_variable(x, "x", "gather")
    check_variable(index, "index", "gather")
    if isinstance(axis, Variable):
        raise TypeError("paddle.gather: an axis Variable is not supported; pass an int")
    axis = 0 if axis is None else check_int_list([axis], "axis", "gather")[0]
    return _op("gather", {"X": [x], "Index": [index]}, {"axis": axis}, name=name)


def multinomial(x, num_samples=1, replacement=False, name=None):
    """int64 category indices drawn from the weights of x (1-D, or one row per draw): random."""
    check_variable(x, "x", "multinomial")
    num_samples = check_int_list([num_samples], "num_samples", "multinomial")[0]
    return _op("multinomial", {"X": [x]}, {"num_samples": num_samples, "replacement": builtins.bool(replacement)},
               dtype="int64", name=name, stop_gradient=True)


def assign(x, output=None):
    """A copy of x (a Variable: the assign op), or a constant made from a numpy array, list or
    number (assign_value, with numpy's dtype for it: [1.5, 2.0] is float64 and 3 int64, as in Paddle)."""
    if isinstance(x, Variable):
        return _layers.assign(x, output)
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"paddle.assign: x must be a Variable or numeric array-like, got {type(x).__name__}")
    dtype = convert_dtype(str(arr.dtype))
    attrs = {"shape": list(arr.shape) or [1], "dtype": dtype, "values": arr.reshape(-1).tolist()}
    helper = LayerHelper("assign_value")
    out = output or helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type="assign_value", inputs={}, outputs={"Out": [out]}, attrs=attrs)
    return out

# -- Tensor methods ------------------------------------------------------------------------
# Paddle patches its tensor functions onto the static Variable as methods (Paddle's
# monkey_patch_variable over `tensor_method_func`): x.reshape([-1, 1]), x.unsqueeze(-1),
# x.sum(axis=1), x.tile([1, 2]). The same functions here, where Variable has no such attribute
# of its own. Fluid 1.x Variables had none of them, so a Fluid-only program never sees them.
_TENSOR_METHODS = (
    "reshape", "cast", "mean", "sum", "max", "min", "square", "sqrt", "abs", "exp", "log", "log1p", "pow", "matmul", "multiply",
    "add", "subtract", "divide", "maximum", "minimum", "floor_divide", "remainder", "mod", "floor_mod",
    "scale", "tanh", "clip", "squeeze", "unsqueeze", "split", "flatten", "transpose", "argmax", "topk",
    "greater_than", "greater_equal", "less_than", "less_equal", "equal", "not_equal", "bmm", "tril", "triu",
    "masked_select", "tile", "expand", "max", "min", "prod", "bitwise_and", "bitwise_or", "bitwise_xor",
)
for _name in _TENSOR_METHODS:
    if not hasattr(Variable, _name):
        setattr(Variable, _name, globals()[_name])

# Paddle's in-place variants are dygraph-only (its inplace_apis_in_dygraph_only): in static mode
# x.unsqueeze_(-1) is x.unsqueeze(-1) and returns a new Variable, x keeping its value.
unsqueeze_, squeeze_ = unsqueeze, squeeze
for _name in ("unsqueeze_", "squeeze_"):
    if not hasattr(Variable, _name):
        setattr(Variable, _name, globals()[_name])

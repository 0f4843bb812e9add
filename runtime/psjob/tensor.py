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
from psjob.fluid import unique_name as _unique_name
from psjob.fluid.framework import Variable, convert_dtype, default_main_program
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_int_list, check_variable
from psjob.fluid.layers._runtime_args import _int_vector_len, _runtime_ints, _shape_inputs

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
    """Paddle's list of runtime sizes (reshape's ShapeTensor, tile's repeat_times_tensor): Fluid
    1.8's, fluid.layers.tensor._runtime_ints."""
    return _runtime_ints(values, what)


def _int_vector(v, what):
    return _int_vector_len(v, what)


def reshape(x, shape, name=None):
    """As paddle.reshape: `shape` a list of ints, a list holding one-element int Variables
    (sizes read when the op runs, e.g. paddle.shape(y)[1]), or a 1-D int Variable (Fluid 1.8's
    reshape, which takes them all)."""
    check_variable(x, "x", "reshape")
    return _layers.reshape(x, shape if isinstance(shape, Variable) else list(shape), name=name)


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
    """paddle.sum; a bool or int32 x sums to int64 unless dtype says otherwise, as in Paddle."""
    if dtype is None and getattr(x, "dtype", None) in ("bool", "int32"):
        dtype = "int64"
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
    if not isinstance(shape, Variable) and builtins.any(isinstance(d, Variable) for d in shape):
        return _full_runtime_shape(list(shape), fill_value, _dtype(dtype))
    shape = check_int_list(list(shape), "shape", "full")
    if builtins.any(d < 0 for d in shape):
        raise ValueError(f"paddle.full: shape {shape} must be fully known (use full_like for a batch)")
    # Paddle 3.0's full (ones, zeros) takes two fill_constant names and names its output by the
    # second: the first program's is fill_constant_1.tmp_0, as there.
    _unique_name.generate_in(default_main_program(), "fill_constant")
    return _layers.fill_constant(shape, _dtype(dtype), fill_value)


def _full_runtime_shape(shape, fill_value, dtype):
    """Paddle's fill_constant with a ShapeTensorList: one int tensor per dimension, read when
    the op runs (e.g. [paddle.shape(x)[0], 1]); a Variable's dimension is -1 until then."""
    try:
        return _layers.fill_constant(shape, dtype, fill_value)
    except TypeError as exc:  # named as the caller knows it
        raise TypeError(str(exc).replace("fill_constant:", "paddle.full:", 1)) from None


def fill_constant(shape, dtype, value, force_cpu=False, out=None, name=None):
    """paddle.tensor.fill_constant (Paddle 2.x keeps Fluid's layer under paddle.tensor): a
    dimension of `shape` may be a one-element int tensor, read when the op runs."""
    shape = [shape] if isinstance(shape, int) else shape
    return _layers.fill_constant(shape, _dtype(dtype), value, force_cpu=force_cpu, out=out)


def ones(shape, dtype=None, name=None):
    return full(shape, 1.0, dtype)


def zeros(shape, dtype=None, name=None):
    return full(shape, 0.0, dtype)


def full_like(x, fill_value, dtype=None, name=None):
    """Fluid 1.8's full_like (the fill_any_like op; Paddle's names: full_like_0.tmp_0)."""
    check_variable(x, "x", "full_like")
    return _layers.full_like(x, fill_value, dtype=_dtype(dtype, x.dtype), name=name)


def ones_like(x, dtype=None, name=None):
    return full_like(x, 1.0, dtype, name)


def zeros_like(x, dtype=None, name=None):
    return full_like(x, 0.0, dtype, name)


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    return _layers.create_parameter(list(shape), convert_dtype(dtype), name, attr, is_bias,
                                    default_initializer)


def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    """In static mode, as Paddle's static to_tensor: a constant Variable holding `data` (an
    assign_value op, an assign of a Variable). Python ints become int64, Python floats float32,
    numpy data keeps its dtype; a scalar is [1] (psjob's one-value shape, where Paddle's is 0-D).
    In dynamic mode it would build an eager tensor, which psjob does not have: refused."""
    from psjob import device
    if device.in_dynamic_mode():
        raise RuntimeError("paddle.to_tensor builds an eager (dygraph) tensor, which psjob does not have: "
                           "call paddle.enable_static() first (it is then a constant of the static graph), "
                           "declare an input with paddle.static.data and feed the array to Executor.run, "
                           "or make a constant with paddle.full / nn.initializer.Assign")
    if isinstance(data, Variable):
        out = _layers.assign(data)
        out = out if dtype is None or convert_dtype(dtype) == out.dtype else cast(out, dtype)
        out.stop_gradient = builtins.bool(stop_gradient)
        return out
    arr = np.asarray(data)
    if not isinstance(data, (np.ndarray, np.generic)):
        if arr.dtype.kind == "f":
            arr = arr.astype("float32")
        elif arr.dtype.kind in "iu":
            arr = arr.astype("int64")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"paddle.to_tensor: data must be numbers, bools or arrays of them, got dtype {arr.dtype}")
    if dtype is not None:
        arr = arr.astype(convert_dtype(dtype))
    helper = LayerHelper("assign")
    out = helper.create_variable_for_type_inference(arr.dtype.name, stop_gradient=builtins.bool(stop_gradient))
    helper.append_op(type="assign_value", inputs={}, outputs={"Out": [out]},
                     attrs={"shape": list(arr.shape) or [1], "dtype": arr.dtype.name,
                            "values": arr.reshape(-1).tolist()})
    return out


# -- search and compare -----------------------------------------------------------------

def argmax(x, axis=None, keepdim=False, dtype="int64", name=None):
    check_variable(x, "x", "argmax")
    dtype = convert_dtype(dtype)
    attrs = {"flatten": axis is None, "axis": -1 if axis is None else int(axis),
             "keepdims": builtins.bool(keepdim), "dtype": dtype}
    return _op("arg_max", {"X": [x]}, attrs, dtype=dtype, name=name, stop_gradient=True)


def topk(x, k, axis=-1, largest=True, sorted=True, name=None):  # noqa: A002
    """(values, int64 indices) of the k largest (or smallest) along axis, in order; among equal
    values the lower index first. The largest along the last axis is Fluid's top_k op, the
    rest Paddle 2.x's top_k_v2."""
    check_variable(x, "x", "topk")
    if isinstance(k, Variable):
        raise TypeError("paddle.topk: a k Variable is not supported; pass an int")
    axis = _axis_int(-1 if axis is None else axis, x, "topk")
    if largest and axis in (-1, len(x.shape) - 1):
        return _layers.topk(x, k, name)
    helper = LayerHelper("top_k_v2", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    ids = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(type="top_k_v2", inputs={"X": [x]}, outputs={"Out": [out], "Indices": [ids]},
                     attrs={"k": check_int_list([k], "k", "topk")[0], "axis": axis,
                            "largest": builtins.bool(largest), "sorted": True})
    return out, ids


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
        if v.dtype != xs[0].dtype or len(v.shape) != len(xs[0].shape) or builtins.any(
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
    numbers_only = not builtins.any(isinstance(v, Variable) for v in bounds)
    if dtype is None:
        floats = builtins.any(isinstance(v, float) or (isinstance(v, Variable) and "float" in v.dtype) for v in bounds)
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
    if builtins.any(isinstance(r, Variable) for r in repeat_times):
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
    if builtins.any(isinstance(d, Variable) for d in shape):
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
    return _layers.assign_value(arr.astype(convert_dtype(str(arr.dtype))), output)

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


# -- search, sort, index, logic, element-wise math, creation, random (Paddle 2.x API docs) -----
# Kernels: fluid/ops/search_ops.py, logic_ops.py, math_extra_ops.py, random_ops.py. Where a
# Paddle 2.x function returns a 0-D tensor (numel, a full reduction) psjob returns shape [1],
# as its reductions do.

def _axis_int(axis, x, what):
    if isinstance(axis, Variable):
        raise TypeError(f"paddle.{what}: an axis Variable is not supported; pass an int")
    axis = check_int_list([axis], "axis", what)[0]
    nd = len(x.shape)
    if not -nd <= axis < builtins.max(nd, 1):
        raise ValueError(f"paddle.{what}: axis {axis} is out of range for {x.name}{list(x.shape)}")
    return axis


def _int_var(v, arg, what):
    check_variable(v, arg, what)
    if v.dtype not in ("int32", "int64"):
        raise TypeError(f"paddle.{what}: {arg} {v.name} must be int32 or int64, got {v.dtype}")
    return v


def cumsum(x, axis=None, dtype=None, name=None):
    """The running sum along axis; axis None sums over the flattened x (a 1-D result)."""
    check_variable(x, "x", "cumsum")
    if dtype is not None:
        x = cast(x, dtype)
    if axis is None:
        return _op("cumsum", {"X": [x]}, {"axis": -1, "flatten": True, "exclusive": False, "reverse": False}, name=name)
    return _op("cumsum", {"X": [x]}, {"axis": _axis_int(axis, x, "cumsum"), "flatten": False, "exclusive": False,
                                      "reverse": False}, name=name)


def cumprod(x, dim=None, dtype=None, name=None):
    """The running product along dim; dim None multiplies along the flattened x."""
    check_variable(x, "x", "cumprod")
    if dtype is not None:
        x = cast(x, dtype)
    if dim is None:
        x, dim = flatten(x), 0
    return _op("cumprod", {"X": [x]}, {"dim": _axis_int(dim, x, "cumprod")}, name=name)


def _argsort(x, axis, descending, name):
    check_variable(x, "x", "argsort")
    helper = LayerHelper("argsort", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    ids = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(type="argsort", inputs={"X": [x]}, outputs={"Out": [out], "Indices": [ids]},
                     attrs={"axis": _axis_int(axis, x, "argsort"), "descending": builtins.bool(descending)})
    return out, ids


def argsort(x, axis=-1, descending=False, stable=False, name=None):
    """The int64 indices that sort x along axis (psjob's sort is always stable: ties keep order)."""
    return _argsort(x, axis, descending, name)[1]


def sort(x, axis=-1, descending=False, stable=False, name=None):
    """x sorted along axis (stable)."""
    return _argsort(x, axis, descending, name)[0]


def _axes_list(x, axis, what):
    axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    return [_axis_int(a, x, what) for a in axes]


def flip(x, axis, name=None):
    """x reversed along axis (an int or a list)."""
    check_variable(x, "x", "flip")
    return _op("flip", {"X": [x]}, {"axis": _axes_list(x, axis, "flip")}, name=name)


def reverse(x, axis, name=None):
    """paddle.reverse: flip."""
    return flip(x, axis, name)


def roll(x, shifts, axis=None, name=None):
    """x's elements shifted along axis (wrapping round); axis None rolls the flattened x."""
    check_variable(x, "x", "roll")
    shifts = check_int_list(shifts, "shifts", "roll")
    axes = [] if axis is None else _axes_list(x, axis, "roll")
    if axes and len(axes) != len(shifts):
        raise ValueError(f"paddle.roll: shifts {shifts} and axis {axes} must have one length")
    return _op("roll", {"X": [x]}, {"shifts": shifts, "axis": axes}, name=name)


def unbind(input, axis=0):  # noqa: A002
    """input's slices along axis (that axis dropped), as a list."""
    check_variable(input, "input", "unbind")
    axis = _axis_int(axis, input, "unbind")
    n = input.shape[axis]
    if n < 0:
        raise ValueError(f"paddle.unbind: axis {axis} of {input.name}{list(input.shape)} has unknown size")
    helper = LayerHelper("unbind")
    outs = [helper.create_variable_for_type_inference(input.dtype) for _ in range(n)]
    helper.append_op(type="unbind", inputs={"X": [input]}, outputs={"Out": outs}, attrs={"axis": axis})
    return outs


def unstack(x, axis=0, num=None):
    return _layers.unstack(x, axis, num)


def chunk(x, chunks, axis=0, name=None):
    """x split into `chunks` equal pieces along axis."""
    check_variable(x, "x", "chunk")
    chunks = check_int_list([chunks], "chunks", "chunk")[0]
    axis = _axis_int(axis, x, "chunk")
    if x.shape[axis] >= 0 and x.shape[axis] % chunks:
        raise ValueError(f"paddle.chunk: axis {axis} of {x.name}{list(x.shape)} does not split into {chunks}")
    return split(x, chunks, axis, name)


def index_select(x, index, axis=0, name=None):
    """x's slices at the 1-D int `index` along axis."""
    check_variable(x, "x", "index_select")
    _int_var(index, "index", "index_select")
    return _op("index_select", {"X": [x], "Index": [index]}, {"dim": _axis_int(axis, x, "index_select")}, name=name)


def index_sample(x, index):
    """Per row i of 2-D x, the elements x[i, index[i, j]]: shape of index."""
    check_variable(x, "x", "index_sample")
    _int_var(index, "index", "index_sample")
    return _op("index_sample", {"X": [x], "Index": [index]})


def gather_nd(x, index, name=None):
    check_variable(x, "x", "gather_nd")
    _int_var(index, "index", "gather_nd")
    return _op("gather_nd", {"X": [x], "Index": [index]}, name=name)


def scatter(x, index, updates, overwrite=True, name=None):
    return _layers.scatter(x, index, updates, name=name, overwrite=overwrite)


def scatter_nd_add(x, index, updates, name=None):
    return _layers.scatter_nd_add(x, index, updates, name=name)


def take_along_axis(arr, indices, axis, broadcast=True):
    """arr's elements at `indices` along axis (indices has arr's rank)."""
    check_variable(arr, "arr", "take_along_axis")
    _int_var(indices, "indices", "take_along_axis")
    return _op("take_along_axis", {"Input": [arr], "Index": [indices]},
               {"Axis": _axis_int(axis, arr, "take_along_axis")}, out_slot="Result")


def put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True, broadcast=True):
    """arr with `values` written (reduce 'assign'), added ('add') or multiplied ('mul') at
    `indices` along axis."""
    check_variable(arr, "arr", "put_along_axis")
    _int_var(indices, "indices", "put_along_axis")
    if reduce not in ("assign", "add", "mul", "multiply"):
        raise ValueError(f"paddle.put_along_axis: reduce must be 'assign', 'add' or 'mul', got {reduce!r}")
    if not isinstance(values, Variable):
        values = full([1] * len(arr.shape), values, arr.dtype)
    return _op("put_along_axis", {"Input": [arr], "Index": [indices], "Value": [values]},
               {"Axis": _axis_int(axis, arr, "put_along_axis"), "Reduce": reduce}, out_slot="Result")


def nonzero(x, as_tuple=False):
    """The int64 [N, rank] coordinates of x's non-zero elements; as_tuple: one [N] per dimension."""
    check_variable(x, "x", "nonzero")
    cond = x if x.dtype == "bool" else not_equal(x, 0)
    out = _op("where_index", {"Condition": [cond]}, dtype="int64", stop_gradient=True)
    if not as_tuple:
        return out
    return tuple(reshape(slice(out, [1], [i], [i + 1]), [-1]) for i in range(len(x.shape)))


def _operand(v, like, what):
    if isinstance(v, Variable):
        return v
    if not isinstance(v, numbers.Number):
        raise TypeError(f"paddle.where: {what} must be a Variable or a number, got {v!r}")
    return full_like(like, v)


def where(condition, x=None, y=None, name=None):
    """x where condition, else y (broadcast; a number counts as a tensor of it); with neither,
    nonzero(condition, as_tuple=True)."""
    check_variable(condition, "condition", "where")
    if x is None and y is None:
        return nonzero(condition, as_tuple=True)
    if x is None or y is None:
        raise ValueError("paddle.where: give both x and y, or neither")
    like = x if isinstance(x, Variable) else y if isinstance(y, Variable) else None
    if like is None:
        raise TypeError("paddle.where: x or y must be a Variable")
    x, y = _operand(x, like, "x"), _operand(y, like, "y")
    return _op("where", {"Condition": [condition], "X": [x], "Y": [y]}, name=name)


def _logical(op_type, binary):
    def fn(x, y=None, out=None, name=None):
        check_variable(x, "x", op_type)
        if out is not None:
            raise ValueError(f"paddle.{op_type}: out= is not supported")
        inputs = {"X": [x]}
        if binary:
            check_variable(y, "y", op_type)
            inputs["Y"] = [y]
        return _op(op_type, inputs, dtype="bool", name=name, stop_gradient=True)
    fn.__name__ = op_type
    return fn


logical_and, logical_or, logical_xor = (_logical(t, True) for t in ("logical_and", "logical_or", "logical_xor"))


def logical_not(x, out=None, name=None):
    return _logical("logical_not", False)(x, None, out, name)


def _elementwise_check(op_type, what):
    def fn(x, name=None):
        check_variable(x, "x", what)
        return _op(op_type, {"X": [x]}, dtype="bool", name=name, stop_gradient=True)
    fn.__name__ = what
    fn.__doc__ = f"paddle.{what}: element-wise bool."
    return fn


isnan, isinf, isfinite = (_elementwise_check(f"{w}_v2", w) for w in ("isnan", "isinf", "isfinite"))


def _reduce_bool(op_type, x, axis, keepdim, name):
    check_variable(x, "x", op_type)
    if x.dtype != "bool":
        x = cast(x, "bool")
    dims = _axes(axis, op_type)
    return _op(op_type, {"X": [x]}, {"dim": dims or [0], "keep_dim": builtins.bool(keepdim),
                                     "reduce_all": axis is None}, dtype="bool", name=name, stop_gradient=True)


def any(x, axis=None, keepdim=False, name=None):  # noqa: A001 (paddle.any)
    return _reduce_bool("reduce_any", x, axis, keepdim, name)


def all(x, axis=None, keepdim=False, name=None):  # noqa: A001 (paddle.all)
    return _reduce_bool("reduce_all", x, axis, keepdim, name)


def argmin(x, axis=None, keepdim=False, dtype="int64", name=None):
    check_variable(x, "x", "argmin")
    dtype = convert_dtype(dtype)
    attrs = {"flatten": axis is None, "axis": -1 if axis is None else _axis_int(axis, x, "argmin"),
             "keepdims": builtins.bool(keepdim), "dtype": dtype}
    return _op("arg_min", {"X": [x]}, attrs, dtype=dtype, name=name, stop_gradient=True)


def unique(x, return_index=False, return_inverse=False, return_counts=False, axis=None, dtype="int64", name=None):
    """x's distinct values, sorted (of the flattened x), and as asked: the index of each one's
    first occurrence, each element's position among them (inverse) and the counts (int `dtype`)."""
    check_variable(x, "x", "unique")
    if axis is not None:
        raise ValueError("paddle.unique: axis is not supported by psjob (unique of the flattened x only)")
    dtype = convert_dtype(dtype)
    if dtype not in ("int32", "int64"):
        raise TypeError(f"paddle.unique: dtype must be int32 or int64, got {dtype}")
    helper = LayerHelper("unique", name)
    out = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    extra = {k: helper.create_variable_for_type_inference(dtype, stop_gradient=True)
             for k, want in (("Indices", return_index), ("Index", return_inverse), ("Counts", return_counts)) if want}
    helper.append_op(type="unique", inputs={"X": [x]}, outputs=dict({"Out": [out]}, **{k: [v] for k, v in extra.items()}),
                     attrs={"dtype": dtype, "return_index": builtins.bool(return_index),
                            "return_inverse": builtins.bool(return_inverse),
                            "return_counts": builtins.bool(return_counts), "axis": [], "is_sorted": True})
    return out if not extra else (out, *extra.values())


def searchsorted(sorted_sequence, values, out_int32=False, right=False, name=None):
    """For each value, the index where it would go in the (last dimension of) sorted_sequence."""
    check_variable(sorted_sequence, "sorted_sequence", "searchsorted")
    check_variable(values, "values", "searchsorted")
    return _op("searchsorted", {"SortedSequence": [sorted_sequence], "Values": [values]},
               {"out_int32": builtins.bool(out_int32), "right": builtins.bool(right)},
               dtype="int32" if out_int32 else "int64", name=name, stop_gradient=True)


def bucketize(x, sorted_sequence, out_int32=False, right=False, name=None):
    """searchsorted of x in a 1-D sorted_sequence."""
    check_variable(sorted_sequence, "sorted_sequence", "bucketize")
    if len(sorted_sequence.shape) != 1:
        raise ValueError(f"paddle.bucketize: sorted_sequence {sorted_sequence.name}"
                         f"{list(sorted_sequence.shape)} must be 1-D")
    return searchsorted(sorted_sequence, x, out_int32, right, name)


sign, floor, ceil, round, sin, cos, rsqrt, reciprocal, erf, log2, log10 = (  # noqa: A001
    _unary(t) for t in ("sign", "floor", "ceil", "round", "sin", "cos", "rsqrt", "reciprocal", "erf", "log2", "log10"))
tan, asin, acos, atan, sinh, cosh, expm1 = (
    _unary(t) for t in ("tan", "asin", "acos", "atan", "sinh", "cosh", "expm1"))


def isclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """Element-wise |x - y| <= atol + rtol * |y| (bool; x and y of one shape)."""
    check_variable(x, "x", "isclose")
    check_variable(y, "y", "isclose")
    if x.dtype != y.dtype:
        raise TypeError(f"paddle.isclose: x {x.name} is {x.dtype} but y {y.name} is {y.dtype}")
    return _op("isclose", {"Input": [x], "Other": [y]}, {"rtol": float(rtol), "atol": float(atol),
                                                        "equal_nan": builtins.bool(equal_nan)},
               dtype="bool", name=name, stop_gradient=True)


def bitwise_not(x, out=None, name=None):
    check_variable(x, "x", "bitwise_not")
    if out is not None:
        raise ValueError("paddle.bitwise_not: out= is not supported")
    return _op("bitwise_not", {"X": [x]}, name=name, stop_gradient=True)


def masked_fill(x, mask, value, name=None):
    """x with `value` (a number or a one-element tensor) where the bool mask (broadcast) is true."""
    check_variable(x, "x", "masked_fill")
    check_variable(mask, "mask", "masked_fill")
    if mask.dtype != "bool":
        raise TypeError(f"paddle.masked_fill: mask {mask.name} must be bool, got {mask.dtype}")
    fill = full_like(x, value) if not isinstance(value, Variable) else cast(value, x.dtype)
    return where(mask, fill, x, name=name)


def scatter_nd(index, updates, shape, name=None):
    """zeros of `shape` with each updates slice added at the coordinates in index's last dimension."""
    _int_var(index, "index", "scatter_nd")
    check_variable(updates, "updates", "scatter_nd")
    return scatter_nd_add(zeros(shape, updates.dtype), index, updates, name=name)


def mv(x, vec, name=None):
    """The product of matrix x [M, N] and vector vec [N]: [M]."""
    check_variable(x, "x", "mv")
    check_variable(vec, "vec", "mv")
    if len(x.shape) != 2 or len(vec.shape) != 1:
        raise ValueError(f"paddle.mv: x {x.name}{list(x.shape)} must be 2-D and vec {vec.name}{list(vec.shape)} 1-D")
    return reshape(matmul(x, unsqueeze(vec, [1])), [-1])


def _reduce_amax(op_type, x, axis, keepdim, name):
    check_variable(x, "x", op_type)
    dims = _axes(axis, op_type)
    return _op(op_type, {"X": [x]}, {"dim": dims or [0], "keep_dim": builtins.bool(keepdim),
                                     "reduce_all": axis is None}, name=name)


def amax(x, axis=None, keepdim=False, name=None):
    """As max; the gradient is shared evenly by tied maxima."""
    return _reduce_amax("reduce_amax", x, axis, keepdim, name)


def amin(x, axis=None, keepdim=False, name=None):
    """As min; the gradient is shared evenly by tied minima."""
    return _reduce_amax("reduce_amin", x, axis, keepdim, name)


def logsumexp(x, axis=None, keepdim=False, name=None):
    """log(sum(exp(x))) over axis (all when None), computed without overflow."""
    check_variable(x, "x", "logsumexp")
    dims = _axes(axis, "logsumexp")
    return _op("logsumexp", {"X": [x]}, {"axis": dims, "keepdim": builtins.bool(keepdim),
                                         "reduce_all": axis is None or not dims}, name=name)


def numel(x, name=None):
    """x's number of elements, int64 [1] (read when the op runs)."""
    check_variable(x, "x", "numel")
    return _op("size", {"Input": [x]}, dtype="int64", name=name, stop_gradient=True)


def rank(input):  # noqa: A002
    """input's number of dimensions, a constant int32 [1]."""
    return _layers.rank(input)


def _count(x, axes):
    """The number of elements reduced over `axes` (x's shape known there), else None."""
    shape = x.shape if not axes else [x.shape[a] for a in axes]
    return None if builtins.any(d < 0 for d in shape) else int(np.prod(shape))


def var(x, axis=None, unbiased=True, keepdim=False, name=None):
    """The variance over axis (all when None), divided by n - 1 when unbiased (Paddle's
    composition: mean, squared deviations, sum, division)."""
    check_variable(x, "x", "var")
    if "float" not in x.dtype:
        raise TypeError(f"paddle.var: x {x.name} must be a float tensor, got {x.dtype}")
    axes = _axes(axis, "var")
    u = mean(x, axis=axes or None, keepdim=True)
    total = sum(square(subtract(x, u)), axis=axes or None, keepdim=keepdim)
    n = _count(x, [a % builtins.max(len(x.shape), 1) for a in axes])
    if n is not None:
        denom = n - int(builtins.bool(unbiased))
        return scale(total, 1.0 / denom if denom > 0 else float("nan"), name=name)
    count = divide(cast(numel(x), x.dtype), cast(numel(u), x.dtype))
    if unbiased:
        count = scale(count, 1.0, -1.0)
    return divide(total, count)


def std(x, axis=None, unbiased=True, keepdim=False, name=None):
    """The standard deviation: sqrt(var)."""
    return sqrt(var(x, axis, unbiased, keepdim))


def diag(x, offset=0, padding_value=0, name=None):
    """A 1-D x as the diagonal (`offset` above the main one) of a square matrix padded with
    padding_value; a 2-D x's diagonal."""
    check_variable(x, "x", "diag")
    if len(x.shape) not in (1, 2):
        raise ValueError(f"paddle.diag: x {x.name}{list(x.shape)} must be 1-D or 2-D")
    return _op("diag_v2", {"X": [x]}, {"offset": check_int_list([offset], "offset", "diag")[0],
                                       "padding_value": float(padding_value)}, name=name)


def eye(num_rows, num_columns=None, dtype=None, name=None):
    rows = check_int_list([num_rows], "num_rows", "eye")[0]
    cols = rows if num_columns is None else check_int_list([num_columns], "num_columns", "eye")[0]
    if rows < 0 or cols < 0:
        raise ValueError(f"paddle.eye: num_rows {rows} and num_columns {cols} must not be negative")
    dtype = _dtype(dtype)
    helper = LayerHelper("eye", name)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type="eye", inputs={}, outputs={"Out": [out]},
                     attrs={"num_rows": rows, "num_columns": cols, "dtype": dtype})
    return out


def linspace(start, stop, num, dtype=None, name=None):
    return _layers.linspace(start, stop, num, _dtype(dtype), name)


def meshgrid(*args, **kwargs):
    """Coordinate grids of 1-D tensors (ij indexing): each input broadcast along the others' axes."""
    xs = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    for i, v in enumerate(xs):
        check_variable(v, f"args[{i}]", "meshgrid")
        if len(v.shape) != 1:
            raise ValueError(f"paddle.meshgrid: args[{i}] {v.name}{list(v.shape)} must be 1-D")
    n = len(xs)
    shape = [v.shape[0] for v in xs]
    outs = []
    for i, v in enumerate(xs):
        r = reshape(v, [-1 if j == i else 1 for j in range(n)])
        outs.append(r if n == 1 else expand(r, shape))
    return outs


def broadcast_to(x, shape, name=None):
    return expand(x, shape, name)


def expand_as(x, y, name=None):
    """x broadcast to y's shape (Paddle 2.x's expand_as_v2)."""
    check_variable(x, "x", "expand_as")
    check_variable(y, "y", "expand_as")
    return _op("expand_as_v2", {"X": [x], "Y": [y]}, {"target_shape": list(y.shape)}, name=name)


def repeat_interleave(x, repeats, axis=None, name=None):
    """Each element of x repeated `repeats` times along axis (the flattened x when None)."""
    check_variable(x, "x", "repeat_interleave")
    if isinstance(repeats, Variable):
        raise TypeError("paddle.repeat_interleave: a repeats tensor is not supported by psjob; pass an int")
    repeats = check_int_list([repeats], "repeats", "repeat_interleave")[0]
    if axis is None:  # as Paddle: the flattened x, along its one axis
        x, axis = flatten(x), 0
    attrs = {"Repeats": repeats, "dim": _axis_int(axis, x, "repeat_interleave")}
    return _op("repeat_interleave", {"X": [x]}, attrs, name=name)


def outer(x, y, name=None):
    """The outer product of x and y (each flattened): [x.size, y.size]."""
    check_variable(x, "x", "outer")
    check_variable(y, "y", "outer")
    return matmul(reshape(x, [-1, 1]), reshape(y, [1, -1]))


def dot(x, y, name=None):
    """The inner product of 1-D x and y ([1]), or row by row of 2-D x and y ([N])."""
    check_variable(x, "x", "dot")
    check_variable(y, "y", "dot")
    if len(x.shape) not in (1, 2) or len(x.shape) != len(y.shape):
        raise ValueError(f"paddle.dot: x {x.name}{list(x.shape)} and y {y.name}{list(y.shape)} must both be 1-D or 2-D")
    return sum(multiply(x, y), axis=-1, keepdim=False, name=name)


def mm(input, mat2, name=None):  # noqa: A002
    return matmul(input, mat2, name=name)


def t(input, name=None):  # noqa: A002
    """The transpose of a matrix (a 0-D or 1-D input is returned as it is)."""
    check_variable(input, "input", "t")
    if len(input.shape) > 2:
        raise ValueError(f"paddle.t: input {input.name}{list(input.shape)} has more than 2 dimensions")
    return input if len(input.shape) < 2 else transpose(input, [1, 0], name)


def addmm(input, x, y, beta=1.0, alpha=1.0, name=None):  # noqa: A002
    """beta * input + alpha * (x @ y)."""
    return add(scale(input, float(beta)), scale(matmul(x, y), float(alpha)))


def clone(x, name=None):
    return _layers.assign(x)


def increment(x, value=1.0, name=None):
    """x + value (Paddle's increment op, in place on x as Fluid's)."""
    check_variable(x, "x", "increment")
    return _layers.increment(x, value, in_place=True)


def _porder(p, what):
    """Paddle's p as a float: 'fro' (and None) is 2, the strings 'inf' / '-inf' are ±inf."""
    if p is None or p == "fro":
        return 2.0
    if isinstance(p, str) and p in ("inf", "-inf"):
        return float(p)
    if isinstance(p, builtins.bool) or not isinstance(p, numbers.Real):
        raise ValueError(f"paddle.{what}: p must be a number, 'fro', 'inf' or '-inf' for a vector norm, got {p!r}")
    return float(p)


def _norm_axis_list(axis, x, what):
    """axis as non-negative ints (Paddle's negative axes count from the end)."""
    axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    axes = check_int_list(axes, "axis", what)
    rank = len(x.shape)
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"paddle.{what}: axis {a} is out of range for {x.name}{list(x.shape)}")
    out = [a % rank for a in axes]
    if len(set(out)) != len(out):
        raise ValueError(f"paddle.{what}: axis {axis} names a dimension twice")
    return out


def vector_norm(x, p=2.0, axis=None, keepdim=False, name=None):
    """The p-norm of x as a vector over axis (all of x when None), as Paddle builds it: one p_norm
    op for None or one axis; abs / pow / reduce_sum / pow (reduce_max or reduce_min for ±inf,
    the count of non-zeros for 0) over several axes."""
    check_variable(x, "x", "vector_norm")
    porder = _porder(p, "vector_norm")
    keep = builtins.bool(keepdim)
    attrs = {"porder": porder, "keepdim": keep, "epsilon": 1e-12}
    if axis is None:
        return _op("p_norm", {"X": [x]}, dict(attrs, axis=-1, asvector=True), name=name)
    axes = _norm_axis_list(axis, x, "vector_norm")
    if len(axes) == 1:
        return _op("p_norm", {"X": [x]}, dict(attrs, axis=axes[0], asvector=False), name=name)
    if porder in (np.inf, -np.inf):
        reduce = max if porder > 0 else min
        return reduce(abs(x), axis=axes, keepdim=keep, name=name)
    if porder == 0:
        return cast(count_nonzero(x, axis=axes, keepdim=keep), x.dtype)
    return pow(sum(pow(abs(x), porder), axis=axes, keepdim=keep), 1.0 / porder, name=name)


def matrix_norm(x, p="fro", axis=(-2, -1), keepdim=False, name=None):
    """The matrix norm of x over the two dimensions in axis: 'fro' (sqrt of the sum of squares),
    1 / -1 (max / min over columns of the column sums of |x|), inf / -inf (the same over rows).
    The 2-norm, -2 and 'nuc' need a singular value decomposition, which psjob does not have."""
    check_variable(x, "x", "matrix_norm")
    axes = _norm_axis_list(axis, x, "matrix_norm")
    if len(axes) != 2:
        raise ValueError(f"paddle.matrix_norm: axis must name two dimensions, got {axis!r}")
    keep = builtins.bool(keepdim)
    if p == "fro":
        return sqrt(sum(square(x), axis=axes, keepdim=keep), name=name)
    if p in ("nuc", 2, -2):
        raise ValueError(f"paddle.matrix_norm: p={p!r} needs singular values (svd), which psjob does not "
                         "have; 'fro', 1, -1, inf and -inf are supported")
    porder = _porder(p, "matrix_norm")
    if builtins.abs(porder) not in (1.0, np.inf):
        raise ValueError(f"paddle.matrix_norm: p must be 'fro', 1, -1, inf or -inf, got {p!r}")
    # Paddle's composition: the 1-norms along one axis, then the max (p > 0) or min of those.
    summed, across = (axes[1], axes[0]) if builtins.abs(porder) == np.inf else (axes[0], axes[1])
    if not keep and summed < across:
        across -= 1
    col = _op("p_norm", {"X": [x]}, {"porder": 1.0, "axis": summed, "keepdim": keep, "asvector": False,
                                     "epsilon": 1e-12})
    return (max if porder > 0 else min)(col, axis=[across], keepdim=keep, name=name)


def norm(x, p=None, axis=None, keepdim=False, name=None):
    """Paddle's norm: a vector norm when axis is None (all of x) or one dimension ('fro' and None
    are the 2-norm there), a matrix norm (vector_norm, matrix_norm) when axis names two."""
    check_variable(x, "x", "norm")
    if isinstance(axis, (list, tuple)) and len(axis) == 1:
        axis = axis[0]
    if axis is None or isinstance(axis, numbers.Integral):
        return vector_norm(x, _porder(p, "norm"), axis, keepdim, name)
    if isinstance(axis, (list, tuple)) and len(axis) == 2:
        return matrix_norm(x, "fro" if p is None else p, axis, keepdim, name)
    raise ValueError(f"paddle.norm: axis must be None, an int or a list of one or two ints, got {axis!r}")


def inverse(x, name=None):
    """The inverse of each square matrix in x's last two dimensions (Paddle's inverse op)."""
    check_variable(x, "x", "inverse")
    if len(x.shape) < 2:
        raise ValueError(f"paddle.inverse: x {x.name}{list(x.shape)} must have at least 2 dimensions")
    return _op("inverse", {"Input": [x]}, out_slot="Output", name=name)


def allclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    return _layers.allclose(x, y, float(rtol), float(atol), builtins.bool(equal_nan), name=name)


def equal_all(x, y, name=None):
    check_variable(x, "x", "equal_all")
    check_variable(y, "y", "equal_all")
    return _op("equal_all", {"X": [x], "Y": [y]}, dtype="bool", name=name, stop_gradient=True)


def is_tensor(x):
    return isinstance(x, Variable)


def count_nonzero(x, axis=None, keepdim=False, name=None):
    """The int64 number of non-zero elements over axis (all when None)."""
    check_variable(x, "x", "count_nonzero")
    return sum(cast(not_equal(x, 0), "int64"), axis=axis, keepdim=keepdim, name=name)


def diff(x, n=1, axis=-1, prepend=None, append=None, name=None):
    """The n-th forward difference along axis (prepend/append joined first), as Paddle composes it."""
    check_variable(x, "x", "diff")
    axis = _axis_int(axis, x, "diff")
    parts = [v for v in (prepend, x, append) if v is not None]
    out = concat(parts, axis) if len(parts) > 1 else x
    for _ in range(check_int_list([n], "n", "diff")[0]):
        big = 2 ** 31 - 1
        hi = _op("slice", {"Input": [out]}, {"axes": [axis], "starts": [1], "ends": [big]})
        lo = _op("slice", {"Input": [out]}, {"axes": [axis], "starts": [0], "ends": [-1]})
        out = (logical_xor(hi, lo) if out.dtype == "bool" else subtract(hi, lo))
    return out


def trace(x, offset=0, axis1=0, axis2=1, name=None):
    """The sum of x's diagonal (`offset` above the main one) in the plane of axis1 and axis2."""
    check_variable(x, "x", "trace")
    return _op("trace", {"Input": [x]}, {"offset": check_int_list([offset], "offset", "trace")[0],
                                         "axis1": _axis_int(axis1, x, "trace"), "axis2": _axis_int(axis2, x, "trace")},
               name=name)


# -- random --------------------------------------------------------------------------------

def _random(op_type, shape, dtype, attrs, floats=True):
    inputs = {}
    if isinstance(shape, Variable) or builtins.any(isinstance(d, Variable) for d in shape):
        # sizes read when the op runs (a shape tensor, or a list holding one-element int tensors)
        inputs, shape = _shape_inputs(shape, f"paddle.{op_type}")
    else:
        shape = check_int_list(list(shape), "shape", op_type)
        if builtins.any(d < 0 for d in shape):
            raise ValueError(f"paddle.{op_type}: shape {shape} must be fully known")
    dtype = _dtype(dtype, "float32" if floats else "int64")
    if floats and "float" not in dtype:
        raise TypeError(f"paddle.{op_type}: dtype must be a float type, got {dtype}")
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]}, attrs=dict(attrs, shape=shape, dtype=dtype))
    return out


def uniform(shape, dtype=None, min=-1.0, max=1.0, seed=0, name=None):  # noqa: A002
    if float(min) >= float(max):
        raise ValueError(f"paddle.uniform: min ({min}) must be below max ({max})")
    return _random("uniform_random", shape, dtype, {"min": float(min), "max": float(max), "seed": int(seed)})


def rand(shape, dtype=None, name=None):
    return uniform(shape, dtype, 0.0, 1.0)


def randn(shape, dtype=None, name=None):
    return _random("gaussian_random", shape, dtype, {"mean": 0.0, "std": 1.0, "seed": 0})


def normal(mean=0.0, std=1.0, shape=None, name=None):
    """Normal values of mean and std (numbers) in `shape`."""
    if isinstance(mean, Variable) or isinstance(std, Variable):
        raise TypeError("paddle.normal: mean or std as a tensor is not supported by psjob; pass numbers")
    return _random("gaussian_random", [1] if shape is None else shape, None,
                   {"mean": float(mean), "std": float(std), "seed": 0})


def standard_normal(shape, dtype=None, name=None):
    return randn(shape, dtype)


def randint(low=0, high=None, shape=(1,), dtype=None, name=None):
    """int64 (or dtype) values in [low, high); randint(n) draws from [0, n)."""
    if high is None:
        low, high = 0, low
    low, high = check_int_list([low], "low", "randint")[0], check_int_list([high], "high", "randint")[0]
    if low >= high:
        raise ValueError(f"paddle.randint: low ({low}) must be below high ({high})")
    return _random("randint", shape, dtype, {"low": low, "high": high, "seed": 0}, floats=False)


def randperm(n, dtype="int64", name=None):
    n = check_int_list([n], "n", "randperm")[0]
    return _random("randperm", [n], dtype, {"n": n, "seed": 0}, floats=False)


def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):  # noqa: A002
    return _layers.shard_index(input, index_num, nshards, shard_id, ignore_value)


def bernoulli(x, name=None):
    """0/1 draws (x's dtype) with the probabilities in x."""
    check_variable(x, "x", "bernoulli")
    return _op("bernoulli", {"X": [x]}, {"seed": 0}, name=name, stop_gradient=True)


__all__ += [
    "cumsum", "argsort", "sort", "flip", "reverse", "roll", "unbind", "unstack", "chunk", "index_select",
    "index_sample", "gather_nd", "scatter", "scatter_nd_add", "take_along_axis", "put_along_axis", "nonzero",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite", "any", "all",
    "argmin", "unique", "searchsorted", "bucketize", "sign", "floor", "ceil", "round", "sin", "cos", "rsqrt",
    "reciprocal", "erf", "log2", "log10", "amax", "amin", "logsumexp", "numel", "rank", "var", "std", "diag",
    "eye", "linspace", "meshgrid", "broadcast_to", "expand_as", "repeat_interleave", "outer", "dot", "mm", "t",
    "addmm", "clone", "increment", "norm", "inverse", "allclose", "equal_all", "is_tensor", "count_nonzero", "diff", "trace",
    "uniform", "rand", "randn", "normal", "standard_normal", "randint", "randperm", "bernoulli", "shard_index",
    "tan", "asin", "acos", "atan", "sinh", "cosh", "expm1", "isclose", "bitwise_not", "masked_fill", "scatter_nd", "mv",
    "cumprod",
]

_TENSOR_METHODS_2 = (
    "cumsum", "argsort", "sort", "flip", "roll", "unbind", "chunk", "index_select", "index_sample", "gather_nd",
    "scatter", "take_along_axis", "put_along_axis", "nonzero", "logical_and", "logical_or", "logical_xor",
    "logical_not", "isnan", "isinf", "isfinite", "any", "all", "argmin", "unique", "sign", "floor", "ceil", "round",
    "sin", "cos", "rsqrt", "reciprocal", "erf", "log2", "log10", "amax", "amin", "logsumexp", "numel", "var", "std",
    "broadcast_to", "expand_as", "repeat_interleave", "outer", "dot", "mm", "t", "clone", "norm", "allclose",
    "equal_all", "count_nonzero", "diff", "trace", "gather", "sigmoid", "bernoulli", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "expm1", "isclose", "bitwise_not", "masked_fill", "mv", "cumprod",
)
for _name in _TENSOR_METHODS_2:
    if not hasattr(Variable, _name):
        setattr(Variable, _name, globals()[_name])



# Paddle's static Variable also has these (its framework.Variable): x.T reverses the dimensions,
# x.detach() is a copy no gradient flows back through, x.cpu() / x.cuda() a copy (psjob runs a
# program on one place: the Executor's), x.size() the number of elements (int64 [1]).
def _variable_T(self):
    check_variable(self, "x", "Variable.T")
    return _layers.transpose(self, list(range(len(self.shape)))[::-1])


def _variable_copy(self, what, stop_gradient=False):
    check_variable(self, "x", what)
    helper = LayerHelper(what)
    out = helper.create_variable_for_type_inference(self.dtype, stop_gradient=stop_gradient)
    helper.append_op(type="assign", inputs={"X": [self]}, outputs={"Out": [out]})
    return out


def _variable_detach(self):
    return _variable_copy(self, "detach", stop_gradient=True)


def _variable_cpu(self):
    return _variable_copy(self, "memcpy_d2h")


def _variable_cuda(self, device_id=None, blocking=True):
    return _variable_copy(self, "memcpy_h2d")


for _name, _fn in (("T", property(_variable_T)), ("detach", _variable_detach), ("cpu", _variable_cpu),
                   ("cuda", _variable_cuda), ("size", numel)):
    if not hasattr(Variable, _name):
        setattr(Variable, _name, _fn)

# paddle.tensor's tensor-array functions (paddle.tensor.create_array, ...). Paddle has no
# top-level paddle.create_array, so they stay out of __all__ (which paddle.* re-exports).
from psjob.fluid.layers.control_blocks import array_length, array_read, array_write, create_array  # noqa: E402,F401

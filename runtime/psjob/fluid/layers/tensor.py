"""Tensor layers: constants, casts, parameters and global variables."""
from __future__ import annotations

import numpy as np

from psjob.fluid import unique_name
from psjob.fluid.framework import Variable, default_main_program, default_startup_program
from psjob.fluid.framework import convert_dtype as _convert_dtype
from psjob.fluid.initializer import ConstantInitializer
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._runtime_args import _shape_inputs


def fill_constant(shape, dtype, value, force_cpu=False, out=None):
    """A tensor of `shape` filled with `value` (a number, or a one-element tensor read when the op
    runs). As in Fluid 1.8, `shape` may be an int tensor holding the sizes
    (the ShapeTensor input), or a list in which a dimension is a one-element int tensor (e.g.
    fluid.layers.shape(x)[0]; the ShapeTensorList input): the op reads them when it runs, and
    those dimensions are -1 until then."""
    helper = LayerHelper("fill_constant")
    out = out or helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    inputs, shape = _shape_inputs(shape, "fill_constant")
    attrs = {"shape": shape, "dtype": dtype}
    if isinstance(value, Variable):  # Fluid 1.8's ValueTensor: a one-element tensor, read when the op runs
        inputs["ValueTensor"] = [value]
        attrs["value"] = 0.0
    else:
        attrs["value"] = float(value)
    helper.append_op(type="fill_constant", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


def shape(input):  # noqa: A002 (Fluid's name)
    """input's runtime shape as an int32 [rank] tensor (fluid.layers.shape): a -1 dimension
    reads the size fed at run time."""
    helper = LayerHelper("shape")
    out = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op(type="shape", inputs={"Input": [input]}, outputs={"Out": [out]})
    return out


def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    """A variable living in both programs, initialized in the startup program."""
    name = name or unique_name.generate_in(default_main_program(), "global_var")
    main = default_main_program().global_block()
    var = main.create_var(name=name, shape=shape, dtype=dtype, persistable=persistable, stop_gradient=True)
    startup = default_startup_program().global_block()
    svar = startup.create_var(name=name, shape=shape, dtype=dtype, persistable=persistable)
    ConstantInitializer(value)(svar, startup)
    return var


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    from psjob.fluid.param_attr import ParamAttr
    attr = ParamAttr._to_attr(attr)
    if name and attr is not False and attr.name is None:
        attr.name = name
    return LayerHelper("create_parameter").create_parameter(attr, shape, dtype, is_bias, default_initializer)


def cast(x, dtype):
    helper = LayerHelper("cast")
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="cast", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"in_dtype": x.dtype, "out_dtype": dtype})
    return out


def assign(input, output=None):
    """A copy of a Variable (the assign op), or a constant from a numpy array of bool, float32,
    int32 or int64 (assign_value), as Fluid 1.x's assign takes either."""
    if not isinstance(input, Variable):
        arr = np.asarray(input) if isinstance(input, np.ndarray) else None
        if arr is None or arr.dtype.name not in ("bool", "float32", "int32", "int64"):
            got = arr.dtype.name if arr is not None else type(input).__name__
            raise TypeError(f"assign: input must be a Variable or a numpy.ndarray of bool, float32, int32 or int64, "
                            f"got {got}")
        return assign_value(arr, output)
    helper = LayerHelper("assign")
    output = output or helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="assign", inputs={"X": [input]}, outputs={"Out": [output]})
    return output


def assign_value(arr, output=None):
    """A constant holding numpy array `arr` (the assign_value op; a 0-D array becomes [1])."""
    attrs = {"shape": list(arr.shape) or [1], "dtype": arr.dtype.name, "values": arr.reshape(-1).tolist()}
    helper = LayerHelper("assign_value")
    out = output or helper.create_variable_for_type_inference(arr.dtype.name, stop_gradient=True)
    helper.append_op(type="assign_value", inputs={}, outputs={"Out": [out]}, attrs=attrs)
    return out


def sums(input, out=None):
    helper = LayerHelper("sum")
    out = out or helper.create_variable_for_type_inference(input[0].dtype)
    helper.append_op(type="sum", inputs={"X": list(input)}, outputs={"Out": [out]})
    return out


def increment(x, value=1.0, in_place=True):
    helper = LayerHelper("increment")
    out = x if in_place else helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="increment", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"step": float(value)})
    return out


def fill_constant_batch_size_like(input, shape, dtype, value, input_dim_idx=0, output_dim_idx=0,
                                  force_cpu=False):
    """`value` in `shape`, whose output_dim_idx size is input's input_dim_idx size when run
    (a sequence input's number of sequences at dimension 0)."""
    helper = LayerHelper("fill_constant_batch_size_like")
    dtype = _convert_dtype(dtype)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type="fill_constant_batch_size_like", inputs={"Input": [input]}, outputs={"Out": [out]},
                     attrs={"shape": [int(d) for d in shape], "dtype": dtype, "value": float(value),
                            "input_dim_idx": int(input_dim_idx), "output_dim_idx": int(output_dim_idx)})
    out.stop_gradient = True
    return out


def create_tensor(dtype, name=None, persistable=False):
    """An empty variable of `dtype` for a later op (assign, fill_constant(out=...)) to write."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"create_tensor: argument 'name' must be a str, got {name!r}")
    dtype = _known_dtype(dtype, "create_tensor")
    helper = LayerHelper("create_tensor", name)
    return helper.block().create_var(name=name or unique_name.generate("create_tensor"),
                                     dtype=_convert_dtype(dtype), persistable=persistable)


# -- Fluid 1.8's creation, range and check layers ---------------------------------------------

_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")


def _known_dtype(dtype, layer):
    try:
        name = _convert_dtype(dtype)
    except (TypeError, ValueError, KeyError) as exc:
        raise TypeError(f"{layer}: argument 'dtype' {dtype!r} is not a dtype ({exc})") from None
    if name not in _DTYPES:
        raise TypeError(f"{layer}: argument 'dtype' must be one of {', '.join(_DTYPES)}, got {dtype!r}")
    return name


def _check_var(x, arg, layer):
    if not isinstance(x, Variable):
        raise TypeError(f"{layer}: argument {arg!r} must be a fluid Variable, got {type(x).__name__}")
    return x


def _fixed_shape(shape, layer):
    if not isinstance(shape, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise TypeError(f"{layer}: argument 'shape' must be a list of ints, got {shape!r}")
    if any(d < 0 for d in shape):
        raise ValueError(f"{layer}: shape {list(shape)} must be fully known")
    return [int(d) for d in shape]


def zeros(shape, dtype, force_cpu=False):
    """A constant tensor of 0s."""
    return fill_constant(_fixed_shape(shape, "zeros"), _known_dtype(dtype, "zeros"), 0.0)


def ones(shape, dtype, force_cpu=False):
    """A constant tensor of 1s."""
    return fill_constant(_fixed_shape(shape, "ones"), _known_dtype(dtype, "ones"), 1.0)


def zeros_like(x, out=None):
    """0s of x's shape and dtype (the fill_zeros_like op)."""
    helper = LayerHelper("zeros_like")
    out = out or helper.create_variable_for_type_inference(_check_var(x, "x", "zeros_like").dtype, stop_gradient=True)
    helper.append_op(type="fill_zeros_like", inputs={"X": [x]}, outputs={"Out": [out]})
    out.stop_gradient = True
    return out


def ones_like(x, out=None):
    """1s of x's shape and dtype (the fill_any_like op)."""
    helper = LayerHelper("ones_like")
    out = out or helper.create_variable_for_type_inference(_check_var(x, "x", "ones_like").dtype, stop_gradient=True)
    helper.append_op(type="fill_any_like", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"value": 1.0, "dtype": x.dtype})
    out.stop_gradient = True
    return out


def _bound(v, dtype, arg, layer):
    if isinstance(v, Variable):
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{layer}: argument {arg!r} must be a number or a Variable, got {v!r}")
    return fill_constant([1], dtype, v)


def range(start, end, step, dtype):  # noqa: A001 (Fluid's name)
    """[start, start + step, ...) below end (above it for a negative step), the `range` op."""
    dtype = _known_dtype(dtype, "range")
    if not any(isinstance(v, Variable) for v in (start, end, step)) and step == 0:
        raise ValueError("range: step must not be 0")
    helper = LayerHelper("range")
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type="range", inputs={"Start": [_bound(start, dtype, "start", "range")],
                                           "End": [_bound(end, dtype, "end", "range")],
                                           "Step": [_bound(step, dtype, "step", "range")]},
                     outputs={"Out": [out]})
    if not any(isinstance(v, Variable) for v in (start, end, step)):
        import math
        out.shape = (max(0, int(math.ceil((end - start) / step))),)
    return out


def linspace(start, stop, num, dtype="float32", name=None):
    """num evenly spaced values from start to stop, both included (the `linspace` op)."""
    dtype = _known_dtype(dtype, "linspace")
    if isinstance(num, int) and not isinstance(num, bool) and num < 1:
        raise ValueError(f"linspace: num must be positive, got {num}")
    helper = LayerHelper("linspace", name)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type="linspace", inputs={"Start": [_bound(start, "float64", "start", "linspace")],
                                              "Stop": [_bound(stop, "float64", "stop", "linspace")],
                                              "Num": [_bound(num, "int32", "num", "linspace")]},
                     outputs={"Out": [out]}, attrs={"dtype": dtype})
    if isinstance(num, int):
        out.shape = (num,)
    return out


def _whole_check(op_type, layer, x):
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference("bool", stop_gradient=True)
    helper.append_op(type=op_type, inputs={"X": [_check_var(x, "x", layer)]}, outputs={"Out": [out]})
    return out


def isfinite(x):
    """bool [1]: whether every element of x is finite (neither inf nor nan)."""
    return _whole_check("isfinite", "isfinite", x)


def has_inf(x):
    """bool [1]: whether any element of x is +inf or -inf."""
    return _whole_check("isinf", "has_inf", x)


def has_nan(x):
    """bool [1]: whether any element of x is nan."""
    return _whole_check("isnan", "has_nan", x)


def _random(op_type, shape, dtype, attrs, layer):
    dtype = _known_dtype(dtype, layer)
    if dtype not in ("float16", "float32", "float64"):
        raise TypeError(f"{layer}: argument 'dtype' must be a float type, got {dtype}")
    if isinstance(shape, Variable) or (isinstance(shape, (list, tuple)) and any(isinstance(d, Variable)
                                                                               for d in shape)):
        inputs, shape = _shape_inputs(shape, layer)  # sizes read when the op runs, as Paddle 1.8's
    else:
        inputs, shape = {}, _fixed_shape(shape, layer)
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]},
                     attrs=dict(attrs, shape=shape, dtype=dtype))
    return out


def uniform_random(shape, dtype="float32", min=-1.0, max=1.0, seed=0, name=None):  # noqa: A002
    """Uniform values in [min, max); seed 0 draws fresh values each run."""
    if float(min) >= float(max):
        raise ValueError(f"uniform_random: min ({min}) must be below max ({max})")
    return _random("uniform_random", shape, dtype, {"min": float(min), "max": float(max), "seed": int(seed)},
                   "uniform_random")


def gaussian_random(shape, mean=0.0, std=1.0, seed=0, dtype="float32"):
    """Normal values of mean and std; seed 0 draws fresh values each run."""
    return _random("gaussian_random", shape, dtype, {"mean": float(mean), "std": float(std), "seed": int(seed)},
                   "gaussian_random")


def _random_batch_size_like(op_type, input, shape, dtype, input_dim_idx, output_dim_idx, attrs, layer):
    _check_var(input, "input", layer)
    dtype = _known_dtype(dtype, layer)
    if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise TypeError(f"{layer}: argument 'shape' must be a list of ints, got {shape!r}")
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type=op_type, inputs={"Input": [input]}, outputs={"Out": [out]},
                     attrs=dict(attrs, shape=[int(d) for d in shape], dtype=dtype, input_dim_idx=int(input_dim_idx),
                                output_dim_idx=int(output_dim_idx)))
    return out


def uniform_random_batch_size_like(input, shape, dtype="float32", input_dim_idx=0, output_dim_idx=0,  # noqa: A002
                                   min=-1.0, max=1.0, seed=0):  # noqa: A002
    """Uniform values in [min, max) of `shape`, whose output_dim_idx size is input's input_dim_idx size."""
    return _random_batch_size_like("uniform_random_batch_size_like", input, shape, dtype, input_dim_idx,
                                   output_dim_idx, {"min": float(min), "max": float(max), "seed": int(seed)},
                                   "uniform_random_batch_size_like")


def gaussian_random_batch_size_like(input, shape, input_dim_idx=0, output_dim_idx=0, mean=0.0, std=1.0,  # noqa: A002
                                    seed=0, dtype="float32"):
    """Normal values of `shape`, whose output_dim_idx size is input's input_dim_idx size."""
    return _random_batch_size_like("gaussian_random_batch_size_like", input, shape, dtype, input_dim_idx,
                                   output_dim_idx, {"mean": float(mean), "std": float(std), "seed": int(seed)},
                                   "gaussian_random_batch_size_like")


def eye(num_rows, num_columns=None, batch_shape=None, dtype="float32"):
    """An identity matrix [num_rows, num_columns] (the `eye` op), tiled to batch_shape + that when given."""
    for arg, v in (("num_rows", num_rows), ("num_columns", num_columns)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise TypeError(f"eye: argument {arg!r} must be a non-negative int, got {v!r}")
    dtype = _known_dtype(dtype, "eye")
    cols = num_rows if num_columns is None else num_columns
    helper = LayerHelper("eye")
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type="eye", inputs={}, outputs={"Out": [out]},
                     attrs={"num_rows": num_rows, "num_columns": cols, "dtype": dtype})
    if batch_shape:
        from psjob.fluid.layers.manip import expand, reshape
        batch = [int(b) for b in batch_shape]
        out = expand(reshape(out, [1] * len(batch) + [num_rows, cols]), batch + [1, 1])
        out.stop_gradient = True
    return out


def diag(diagonal):
    """A square matrix with `diagonal` (a 1-D Variable or numpy array) on its diagonal."""
    if not isinstance(diagonal, Variable):
        import numpy as np
        arr = np.asarray(diagonal)
        helper = LayerHelper("assign_value")
        const = helper.create_variable_for_type_inference(_convert_dtype(str(arr.dtype)), stop_gradient=True)
        helper.append_op(type="assign_value", inputs={}, outputs={"Out": [const]},
                         attrs={"shape": list(arr.shape), "dtype": const.dtype, "values": arr.reshape(-1).tolist()})
        diagonal = const
    if len(diagonal.shape) != 1:
        raise ValueError(f"diag: argument 'diagonal' {diagonal.name}{list(diagonal.shape)} must be 1-D")
    helper = LayerHelper("diag_v2")
    out = helper.create_variable_for_type_inference(diagonal.dtype)
    helper.append_op(type="diag_v2", inputs={"X": [diagonal]}, outputs={"Out": [out]},
                     attrs={"offset": 0, "padding_value": 0.0})
    return out

"""Tensor layers: constants, casts, parameters and global variables."""
from __future__ import annotations

from psjob.fluid import unique_name
from psjob.fluid.framework import Variable, default_main_program, default_startup_program
from psjob.fluid.framework import convert_dtype as _convert_dtype
from psjob.fluid.initializer import ConstantInitializer
from psjob.fluid.layer_helper import LayerHelper


def fill_constant(shape, dtype, value, force_cpu=False, out=None):
    """A tensor of `shape` filled with `value`. As in Fluid 1.8, a dimension of `shape` may be a
    one-element int tensor (e.g. fluid.layers.shape(x)[0]): the op then takes the whole shape
    from its ShapeTensorList input when it runs, and that dimension is -1 until then."""
    helper = LayerHelper("fill_constant")
    out = out or helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    shape = list(shape)
    inputs = {}
    if any(isinstance(d, Variable) for d in shape):
        inputs["ShapeTensorList"] = [_shape_dim(d, i) for i, d in enumerate(shape)]
        shape = [-1 if isinstance(d, Variable) else int(d) for d in shape]
    helper.append_op(type="fill_constant", inputs=inputs, outputs={"Out": [out]},
                     attrs={"shape": shape, "dtype": dtype, "value": float(value)})
    out.stop_gradient = True
    return out


def _shape_dim(d, i):
    """One entry of a ShapeTensorList: a one-element int tensor (an int becomes one)."""
    if not isinstance(d, Variable):
        return fill_constant([1], "int32", int(d))
    if d.dtype not in ("int32", "int64") or len(d.shape) > 1 or d.shape[0] not in (1, -1):
        raise TypeError(f"fill_constant: shape[{i}] {d.name}{list(d.shape)} must be a one-element "
                        f"int32/int64 tensor, got {d.dtype}")
    return d


def shape(input):  # noqa: A002 (Fluid's name)
    """input's runtime shape as an int32 [rank] tensor (fluid.layers.shape): a -1 dimension
    reads the size fed at run time."""
    helper = LayerHelper("shape")
    out = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op(type="shape", inputs={"Input": [input]}, outputs={"Out": [out]})
    return out


def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    """A variable living in both programs, initialized in the startup program."""
    name = name or unique_name.generate("global_var")
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
    helper = LayerHelper("assign")
    output = output or helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="assign", inputs={"X": [input]}, outputs={"Out": [output]})
    return output


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
    helper = LayerHelper("create_tensor", name)
    return helper.block().create_var(name=name or unique_name.generate("create_tensor"),
                                     dtype=_convert_dtype(dtype), persistable=persistable)

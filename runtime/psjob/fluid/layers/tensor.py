"""Tensor layers: constants, casts, parameters and global variables."""
from __future__ import annotations

from psjob.fluid import unique_name
from psjob.fluid.framework import convert_dtype as _convert_dtype
from psjob.fluid.framework import default_main_program, default_startup_program
from psjob.fluid.initializer import ConstantInitializer
from psjob.fluid.layer_helper import LayerHelper


def fill_constant(shape, dtype, value, force_cpu=False, out=None):
    helper = LayerHelper("fill_constant")
    out = out or helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type="fill_constant", outputs={"Out": [out]},
                     attrs={"shape": list(shape), "dtype": dtype, "value": float(value)})
    out.stop_gradient = True
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

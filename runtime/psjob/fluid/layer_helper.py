"""LayerHelper: what every layer function uses to create parameters and ops.

A parameter lives in two programs: declared (and trained) in the main program,
initialized by an op appended to the startup program.
"""
from __future__ import annotations

from psjob.fluid import unique_name
from psjob.fluid.framework import Variable, default_main_program, default_startup_program
from psjob.fluid.initializer import ConstantInitializer, XavierInitializer, global_initializer
from psjob.fluid.param_attr import ParamAttr


class LayerHelper:
    def __init__(self, layer_type: str, name: str | None = None, **kwargs):
        self.layer_type = layer_type
        self.kwargs = kwargs
        self.name = name or unique_name.generate_in(self.main_program, layer_type)

    @property
    def main_program(self):
        return default_main_program()

    @property
    def startup_program(self):
        return default_startup_program()

    def block(self):
        return self.main_program.current_block()

    def append_op(self, *args, **kwargs):
        return self.block().append_op(*args, **kwargs)

    def create_variable_for_type_inference(self, dtype="float32", stop_gradient=False, shape=None):
        return self.block().create_var(name=unique_name.generate_in(self.main_program, f"{self.name}.tmp"),
                                       dtype=dtype, shape=shape, stop_gradient=stop_gradient)

    create_tmp_variable = create_variable_for_type_inference

    def create_parameter(self, attr, shape, dtype="float32", is_bias=False, default_initializer=None):
        attr = ParamAttr._to_attr(attr)
        if attr is False:
            return None
        name = attr.name or unique_name.generate_in(self.main_program, f"{self.name}.{'b' if is_bias else 'w'}")
        init = attr.initializer or global_initializer(is_bias) or default_initializer or (
            ConstantInitializer(0.0) if is_bias else XavierInitializer())
        main_block = self.main_program.global_block()
        if main_block.has_var(name):
            # Shared parameter (same ParamAttr name used twice): reuse it.
            return main_block.var(name)
        param = main_block.create_parameter(
            name, shape, dtype, trainable=attr.trainable,
            optimize_attr={"learning_rate": attr.learning_rate}, regularizer=attr.regularizer,
            initializer=init, gradient_clip_attr=attr.gradient_clip,
            do_model_average=getattr(attr, "do_model_average", True))
        param.need_clip = getattr(attr, "need_clip", True)
        startup_block = self.startup_program.global_block()
        if not startup_block.has_var(name):
            svar = startup_block.create_var(name=name, shape=shape, dtype=dtype, persistable=True)
            init(svar, startup_block)
        return param

    def append_activation(self, out: Variable, act: str | None) -> Variable:
        if act is None:
            return out
        result = self.create_variable_for_type_inference(out.dtype)
        self.append_op(type=act, inputs={"X": [out]}, outputs={"Out": [result]})
        return result

"""LayerHelper: what every layer function uses to create parameters and ops.

A parameter lives in two programs: declared (and trained) in the main program,
initialized by an op appended to the startup program.
"""
from __future__ import annotations

from psjob.fluid import unique_name
from psjob.fluid.framework import Variable, default_main_program, default_startup_program
from psjob.fluid.initializer import ConstantInitializer, XavierInitializer, global_initializer
from psjob.fluid.param_attr import ParamAttr, WeightNormParamAttr


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
        if isinstance(attr, WeightNormParamAttr):
            return self._weight_normalized(attr, name, list(shape), dtype, init)
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

    # -- weight normalization (Salimans and Kingma, 2016; Paddle's WeightNormParamAttr) -------
    def _weight_normalized(self, attr, name, shape, dtype, init) -> Variable:
        """w = v * g / ||v||, the norm over every dimension but attr.dim (all of them when None):
        parameters <name>_v (shape, from the initializer) and <name>_g (1 but along dim),
        g starting as ||v|| so that w starts as the initializer made it; w itself is computed
        in the main program each run, and the gradients reach g and v."""
        dim = attr.dim
        if dim is not None:
            if isinstance(dim, bool) or not isinstance(dim, int) or not -len(shape) <= dim < len(shape):
                raise ValueError(f"WeightNormParamAttr: dim must be None or an axis of the weight's shape "
                                 f"{shape}, got {dim!r}")
            dim %= len(shape)
        g_shape = [1] * len(shape)
        if dim is not None:
            g_shape[dim] = shape[dim]
        axes = [a for a in range(len(shape)) if a != dim]
        common = {"trainable": attr.trainable, "optimize_attr": {"learning_rate": attr.learning_rate},
                  "regularizer": attr.regularizer, "gradient_clip_attr": attr.gradient_clip,
                  "do_model_average": getattr(attr, "do_model_average", True)}
        main_block, startup_block = self.main_program.global_block(), self.startup_program.global_block()
        params = {}
        for suffix, pshape in (("_g", g_shape), ("_v", shape)):  # Paddle's order
            pname = name + suffix
            if main_block.has_var(pname):
                params[suffix] = main_block.var(pname)
                continue
            params[suffix] = main_block.create_parameter(pname, pshape, dtype, initializer=init if suffix == "_v"
                                                         else None, **common)
            params[suffix].need_clip = getattr(attr, "need_clip", True)
        v, g = params["_v"], params["_g"]
        if not startup_block.has_var(v.name):
            sv = startup_block.create_var(name=v.name, shape=shape, dtype=dtype, persistable=True)
            init(sv, startup_block)
            sg = startup_block.create_var(name=g.name, shape=g_shape, dtype=dtype, persistable=True)
            self._norm_except(startup_block, self.startup_program, sv, axes, out=sg)
        norm = self._norm_except(self.block(), self.main_program, v, axes)
        scale = self._tmp(self.block(), self.main_program, dtype, "weight_norm_scale")
        self.block().append_op(type="elementwise_div", inputs={"X": [g], "Y": [norm]}, outputs={"Out": [scale]},
                               attrs={"axis": -1})
        w = self._tmp(self.block(), self.main_program, dtype, "weight_norm_w")
        self.block().append_op(type="elementwise_mul", inputs={"X": [v], "Y": [scale]}, outputs={"Out": [w]},
                               attrs={"axis": -1})
        return w

    def _tmp(self, block, program, dtype, what):
        return block.create_var(name=unique_name.generate_in(program, f"{self.name}.{what}"), dtype=dtype)

    def _norm_except(self, block, program, x, axes, out=None):
        """sqrt(sum(x^2)) over `axes`, the dimensions kept as 1."""
        sq = self._tmp(block, program, x.dtype, "weight_norm_square")
        block.append_op(type="square", inputs={"X": [x]}, outputs={"Out": [sq]})
        total = self._tmp(block, program, x.dtype, "weight_norm_sum")
        block.append_op(type="reduce_sum", inputs={"X": [sq]}, outputs={"Out": [total]},
                        attrs={"dim": axes, "keep_dim": True, "reduce_all": len(axes) == len(x.shape)})
        out = out if out is not None else self._tmp(block, program, x.dtype, "weight_norm_norm")
        block.append_op(type="sqrt", inputs={"X": [total]}, outputs={"Out": [out]})
        return out

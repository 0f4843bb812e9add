"""`x + y`, `x * 2.0`, `x ** y`, `x < y` on Variables build element-wise, scale, pow or
comparison ops; Variable operands broadcast as Paddle's do (ops/broadcast.py).

framework.Variable's operators call `binary` once this module installed it
(`set_arithmetic`, on import of psjob.fluid.layers): the IR stays below the layers.
"""
from __future__ import annotations

from psjob.fluid.framework import Variable, set_arithmetic
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers import nn, tensor

_COMPARE = ("less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal")


def _compare(op_type, x, y):
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference("bool", stop_gradient=True)
    helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]})
    return out


def binary(x: Variable, other, op_type: str, reverse: bool):
    if op_type == "matmul":  # x @ y
        return nn.matmul(x, other)
    if op_type == "cast":  # x.astype(dtype): `other` is the dtype
        return tensor.cast(x, other)
    if not isinstance(other, Variable):
        value = float(other)
        if op_type == "elementwise_add":
            return nn.scale(x, 1.0, value)
        if op_type == "elementwise_mul":
            return nn.scale(x, value)
        if op_type == "elementwise_sub":
            return nn.scale(x, -1.0, value) if reverse else nn.scale(x, 1.0, -value)
        if op_type == "elementwise_div" and not reverse:
            return nn.scale(x, 1.0 / value)
        if op_type == "elementwise_pow" and not reverse:
            helper = LayerHelper("pow")
            out = helper.create_variable_for_type_inference(x.dtype)
            helper.append_op(type="pow", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"factor": value})
            return out
        other = tensor.fill_constant([1], x.dtype, value)
    a, b = (other, x) if reverse else (x, other)
    if op_type in _COMPARE:
        return _compare(op_type, a, b)
    return getattr(nn, op_type)(a, b)


set_arithmetic(binary)

"""`x + y`, `x * 2.0` on Variables build element-wise / scale ops.

framework.Variable's operators call `binary` once this module installed it
(`set_arithmetic`, on import of psjob.fluid.layers): the IR stays below the layers.
"""
from __future__ import annotations

from ..framework import Variable, set_arithmetic
from . import nn, tensor


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
        other = tensor.fill_constant([1], x.dtype, value)
    a, b = (other, x) if reverse else (x, other)
    return getattr(nn, op_type)(a, b)


set_arithmetic(binary)

"""Element-wise math layers (Fluid's layers/ops.py): out = f(x), same shape and LoD.

Each appends the op of its name; the gradients are the ops' (ops/tensor_math_ops.py).
"""
from __future__ import annotations

from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import FLOATS, check_dtype, check_variable

__all__ = ["square", "sqrt", "abs", "exp", "log", "softsign"]


def _unary(op_type, doc):
    def layer(x, name=None):
        check_variable(x, "x", op_type)
        check_dtype(x, "x", FLOATS, op_type)
        helper = LayerHelper(op_type, name)
        out = helper.create_variable_for_type_inference(x.dtype)
        helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]})
        return out
    layer.__name__ = layer.__qualname__ = op_type
    layer.__doc__ = doc
    return layer


square = _unary("square", "x * x, element-wise.")
sqrt = _unary("sqrt", "The square root of x, element-wise.")
abs = _unary("abs", "|x|, element-wise.")  # noqa: A001 (Fluid's name)
exp = _unary("exp", "e ** x, element-wise.")
log = _unary("log", "The natural logarithm of x, element-wise.")
softsign = _unary("softsign", "x / (1 + |x|), element-wise.")

"""Element-wise math layers (Fluid's layers/ops.py): out = f(x), same shape and LoD.

Each appends the op of its name; the gradients are the ops' (ops/tensor_math_ops.py).
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import Variable
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import FLOATS, check_dtype, check_variable
from psjob.fluid.layers.tensor import assign as _assign

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

# More element-wise layers of Fluid 1.8's layers/ops.py (kernels: ops/math_extra_ops.py).
rsqrt = _unary("rsqrt", "1 / sqrt(x), element-wise.")
sin = _unary("sin", "sin(x), element-wise.")
cos = _unary("cos", "cos(x), element-wise.")
floor = _unary("floor", "The largest integer not above x, element-wise (gradient 0).")
ceil = _unary("ceil", "The smallest integer not below x, element-wise (gradient 0).")
round = _unary("round", "x rounded to the nearest integer, halves away from zero (gradient 0).")  # noqa: A001
_sign = _unary("sign", "-1, 0 or 1 by the sign of x, element-wise (gradient 0).")


def sign(x, name=None):
    """-1, 0 or 1 by the sign of x, element-wise (gradient 0); x a Variable or, as Fluid 1.8
    takes it, a numpy array (made a constant with assign)."""
    if isinstance(x, np.ndarray):
        x = _assign(x)
    return _sign(x, name)
reciprocal = _unary("reciprocal", "1 / x, element-wise.")


def pow(x, factor=1.0, name=None):  # noqa: A001 (Fluid's name)
    """x ** factor, element-wise (the `pow` op); factor may be a one-element float32 tensor
    (Fluid 1.8's FactorTensor), read when the op runs."""
    check_variable(x, "x", "pow")
    inputs, attrs = {"X": [x]}, {}
    if isinstance(factor, Variable):
        check_dtype(factor, "factor", ("float32",), "pow")
        factor.stop_gradient = True
        inputs["FactorTensor"] = [factor]
    elif isinstance(factor, bool) or not isinstance(factor, (int, float)):
        raise TypeError(f"pow: argument 'factor' must be a number or a Variable, got {factor!r}")
    else:
        attrs["factor"] = float(factor)
    helper = LayerHelper("pow", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="pow", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


__all__ += ["rsqrt", "sin", "cos", "floor", "ceil", "round", "sign", "reciprocal", "pow"]

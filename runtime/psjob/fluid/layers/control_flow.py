"""Comparison layers (Fluid's layers/control_flow.py): bool tensors, no gradient.

x and y are Variables of one dtype; y broadcasts against x as numpy broadcasts. `cond`,
when given, is the bool Variable to write (Fluid's out argument)."""
from __future__ import annotations

from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_variable

__all__ = ["less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal"]


def _compare(op_type):
    def layer(x, y, force_cpu=None, cond=None, name=None):
        check_variable(x, "x", op_type)
        check_variable(y, "y", op_type)
        if x.dtype != y.dtype:
            raise TypeError(f"{op_type}: x {x.name} is {x.dtype} but y {y.name} is {y.dtype}")
        helper = LayerHelper(op_type, name)
        out = cond if cond is not None else helper.create_variable_for_type_inference("bool")
        out.stop_gradient = True
        helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]})
        return out
    layer.__name__ = layer.__qualname__ = op_type
    layer.__doc__ = f"x {op_type.replace('_', ' ')} y, element-wise (bool)."
    return layer


less_than = _compare("less_than")
less_equal = _compare("less_equal")
greater_than = _compare("greater_than")
greater_equal = _compare("greater_equal")
equal = _compare("equal")
not_equal = _compare("not_equal")

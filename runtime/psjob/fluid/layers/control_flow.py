"""Comparison layers (Fluid's layers/control_flow.py): bool tensors, no gradient.

x and y are Variables of one dtype; y broadcasts against x as numpy broadcasts. `cond`,
when given, is the bool Variable to write (Fluid's out argument)."""
from __future__ import annotations

from psjob.fluid import unique_name
from psjob.fluid.framework import default_main_program
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_int, check_variable

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


# -- logical layers (Fluid 1.8 layers/nn.py's logical_*), Print ------------------------------

def _logical(op_type, binary):
    def layer(x, y=None, out=None, name=None):
        check_variable(x, "x", op_type)
        inputs = {"X": [x]}
        if binary:
            check_variable(y, "y", op_type)
            inputs["Y"] = [y]
        helper = LayerHelper(op_type, name)
        out = out if out is not None else helper.create_variable_for_type_inference("bool")
        out.stop_gradient = True
        helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]})
        return out
    layer.__name__ = layer.__qualname__ = op_type
    layer.__doc__ = f"Element-wise {op_type.split('_')[1]} of bool tensors (numpy broadcasting)."
    return layer


def _logical_not(x, out=None, name=None):
    return _logical("logical_not", False)(x, None, out, name)


logical_and = _logical("logical_and", True)
logical_or = _logical("logical_or", True)
logical_xor = _logical("logical_xor", True)
logical_not = _logical_not
logical_not.__name__ = logical_not.__qualname__ = "logical_not"


def Print(input, first_n=-1, message=None, summarize=20, print_tensor_name=True,  # noqa: A002, N802
          print_tensor_type=True, print_tensor_shape=True, print_tensor_lod=True, print_phase="both"):
    """Fluid's Print: an op that writes `input` (with `message`, its name, dtype, shape and LoD)
    to stdout each time it runs, for the first `first_n` runs (-1: always), at most `summarize`
    values (-1: all), and passes it on unchanged. psjob prints in the forward pass only."""
    check_variable(input, "input", "Print")
    if print_phase not in ("forward", "backward", "both"):
        raise ValueError(f"Print: print_phase must be 'forward', 'backward' or 'both', got {print_phase!r}")
    helper = LayerHelper("print")
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="print", inputs={"In": [input]}, outputs={"Out": [out]},
                     attrs={"first_n": int(first_n), "message": message or "", "summarize": int(summarize),
                            "print_tensor_name": bool(print_tensor_name), "print_tensor_type": bool(print_tensor_type),
                            "print_tensor_shape": bool(print_tensor_shape), "print_tensor_lod": bool(print_tensor_lod),
                            "print_phase": print_phase.upper()})
    return out


__all__ += ["logical_and", "logical_or", "logical_xor", "logical_not", "Print"]


def lod_rank_table(x, level=0):
    """The sequences of x's LoD (level 0) ranked by length, longest first (a rank table, for
    reorder_lod_tensor_by_rank). Fluid 1.8 keeps it in fluid.layers.control_flow only, unexported."""
    check_variable(x, "x", "lod_rank_table")
    helper = LayerHelper("lod_rank_table")
    table = helper.block().create_var(name=unique_name.generate_in(default_main_program(), "lod_rank_table"),
                                      type="LOD_RANK_TABLE", stop_gradient=True)
    helper.append_op(type="lod_rank_table", inputs={"X": [x]}, outputs={"Out": [table]},
                     attrs={"level": check_int(level, "level", "lod_rank_table")})
    return table

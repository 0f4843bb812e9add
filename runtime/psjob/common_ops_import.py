"""paddle.common_ops_import: the layer-building helpers code that appends its own ops imports
from Paddle (PaddleRec's static PS model_util does): LayerHelper, Variable, convert_dtype and
Paddle's argument checks check_type, check_dtype, check_variable_and_dtype, with Paddle's
signatures and TypeError messages."""
from __future__ import annotations

from psjob.fluid.framework import Variable, convert_dtype, default_main_program, default_startup_program
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.param_attr import ParamAttr

__all__ = ["LayerHelper", "Variable", "ParamAttr", "convert_dtype", "default_main_program",
           "default_startup_program", "check_type", "check_dtype", "check_variable_and_dtype"]


def check_type(input, input_name, expected_type, op_name, extra_message=""):  # noqa: A002 (Paddle's names)
    if not isinstance(input, expected_type):
        raise TypeError(f"The type of '{input_name}' in {op_name} must be {expected_type}, but received "
                        f"{type(input)}. {extra_message}")


def check_dtype(input_dtype, input_name, expected_dtype, op_name, extra_message=""):
    expected = [expected_dtype] if isinstance(expected_dtype, str) else list(expected_dtype)
    if convert_dtype(input_dtype) not in [convert_dtype(d) for d in expected]:
        raise TypeError(f"The data type of '{input_name}' in {op_name} must be {expected}, but received "
                        f"{convert_dtype(input_dtype)}. {extra_message}")


def check_variable_and_dtype(input, input_name, expected_dtype, op_name, extra_message=""):  # noqa: A002
    check_type(input, input_name, Variable, op_name, extra_message)
    check_dtype(input.dtype, input_name, expected_dtype, op_name, extra_message)

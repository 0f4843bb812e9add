"""Sequence layers over LoD tensors (variable-length inputs such as the id
lists of a CTR slot)."""
from __future__ import annotations

from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import FLOATS, check_choice, check_dtype, check_variable

__all__ = ["sequence_pool"]

POOL_TYPES = ("sum", "average", "sqrt", "max", "first", "last")


def sequence_pool(input, pool_type, is_test=False, pad_value=0.0):
    """One row per sequence of a LoD level-1 input: [num_seqs, dim], without LoD.

    pool_type: sum, average, sqrt (sum / sqrt(length)), max, first or last.
    Empty sequences give pad_value.
    """
    layer = "sequence_pool"
    check_variable(input, "input", layer)
    check_dtype(input, "input", FLOATS, layer)
    if not isinstance(pool_type, str):
        raise TypeError(f"{layer}: argument 'pool_type' must be a string, got {pool_type!r}")
    check_choice(pool_type.lower(), "pool_type", POOL_TYPES, layer)
    helper = LayerHelper(layer)
    out = helper.create_variable_for_type_inference(input.dtype)
    outputs = {"Out": [out]}
    if pool_type.lower() == "max":
        outputs["MaxIndex"] = [helper.create_variable_for_type_inference("int64", stop_gradient=True)]
    helper.append_op(type="sequence_pool", inputs={"X": [input]}, outputs=outputs,
                     attrs={"pooltype": pool_type.upper(), "is_test": bool(is_test),
                            "pad_value": float(pad_value)})
    return out

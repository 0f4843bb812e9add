"""Sequence layers over LoD tensors (variable-length inputs such as the id
lists of a CTR slot)."""
from __future__ import annotations

from psjob.fluid.framework import Variable
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import FLOATS, check_choice, check_dtype, check_int, check_variable

__all__ = ["sequence_pool", "dynamic_gru"]

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


GRU_ACTIVATIONS = ("sigmoid", "tanh", "relu", "identity")


def dynamic_gru(input, size, param_attr=None, bias_attr=None, is_reverse=False,
                gate_activation="sigmoid", candidate_activation="tanh", h_0=None, origin_mode=False):
    """A GRU over every sequence of a LoD level-1 input [T, 3 * size] (the projected input,
    an fc of width 3 * size in front): Hidden [T, size] with the input's LoD (Paddle 1.8
    API docs, fluid.layers.dynamic_gru). Weight [size, 3 * size], bias [1, 3 * size]; h_0
    [num_seqs, size] is the initial state (zeros when None). See psjob.fluid.ops.gru_ops.
    """
    layer = "dynamic_gru"
    check_variable(input, "input", layer)
    check_dtype(input, "input", ("float32", "float64"), layer)
    size = check_int(size, "size", layer, minimum=1)
    check_choice(gate_activation, "gate_activation", GRU_ACTIVATIONS, layer)
    check_choice(candidate_activation, "candidate_activation", GRU_ACTIVATIONS, layer)
    if h_0 is not None and not isinstance(h_0, Variable):
        raise TypeError(f"{layer}: argument 'h_0' must be a fluid Variable or None, got {type(h_0).__name__}")
    helper = LayerHelper("gru")
    weight = helper.create_parameter(param_attr, [size, 3 * size], input.dtype)
    bias = helper.create_parameter(bias_attr, [1, 3 * size], input.dtype, is_bias=True)
    inputs = {"Input": [input], "Weight": [weight]}
    if bias is not None:
        inputs["Bias"] = [bias]
    if h_0 is not None:
        check_dtype(h_0, "h_0", ("float32", "float64"), layer)
        inputs["H0"] = [h_0]
    hidden = helper.create_variable_for_type_inference(input.dtype)
    scratch = {slot: [helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)]
               for slot in ("BatchGate", "BatchResetHiddenPrev", "BatchHidden")}
    helper.append_op(type="gru", inputs=inputs, outputs=dict(Hidden=[hidden], **scratch),
                     attrs={"is_reverse": bool(is_reverse), "gate_activation": gate_activation,
                            "activation": candidate_activation, "origin_mode": bool(origin_mode)})
    return hidden

"""Sequence layers over LoD tensors (variable-length inputs such as the id
lists of a CTR slot)."""
from __future__ import annotations

from psjob.fluid.framework import Variable
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import FLOATS, check_choice, check_dtype, check_int, check_variable

__all__ = ["sequence_pool", "dynamic_gru", "sequence_conv", "sequence_unpad", "sequence_expand_as",
           "sequence_reshape"]

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


def sequence_conv(input, num_filters, filter_size=3, filter_stride=1, padding=True, padding_start=None,
                  bias_attr=None, param_attr=None, act=None, name=None):
    """A 1-D convolution along each sequence of a LoD level-1 input [T, D] (Paddle 1.8 API
    docs, fluid.layers.sequence_conv): row i sees rows i + padding_start .. + filter_size - 1
    of its sequence (zeros past its ends); padding_start defaults to -(filter_size // 2).
    Filter [filter_size * D, num_filters], then a bias [num_filters] and act."""
    layer = "sequence_conv"
    check_variable(input, "input", layer)
    check_dtype(input, "input", ("float32", "float64"), layer)
    num_filters = check_int(num_filters, "num_filters", layer, minimum=1)
    filter_size = check_int(filter_size, "filter_size", layer, minimum=1)
    if filter_stride != 1:
        raise ValueError(f"{layer}: argument 'filter_stride' must be 1 (Paddle supports only 1), got {filter_stride!r}")
    if padding_start is None:
        padding_start = -int(filter_size // 2)
    helper = LayerHelper(layer, name)
    w = helper.create_parameter(param_attr, [filter_size * input.shape[1], num_filters], input.dtype)
    pre_bias = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="sequence_conv", inputs={"X": [input], "Filter": [w]}, outputs={"Out": [pre_bias]},
                     attrs={"contextStride": int(filter_stride), "contextStart": int(padding_start),
                            "contextLength": filter_size})
    b = helper.create_parameter(bias_attr, [num_filters], input.dtype, is_bias=True)
    if b is None:
        return helper.append_activation(pre_bias, act)
    pre_act = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="elementwise_add", inputs={"X": [pre_bias], "Y": [b]}, outputs={"Out": [pre_act]},
                     attrs={"axis": 1})
    return helper.append_activation(pre_act, act)


def sequence_unpad(x, length, name=None):
    """The first length[i] rows of each padded row x[i] ([N, max_len, ...]), as one LoD level-1
    tensor [sum(length), ...] (Paddle 1.8 API docs, fluid.layers.sequence_unpad)."""
    layer = "sequence_unpad"
    check_variable(x, "x", layer)
    check_variable(length, "length", layer)
    check_dtype(x, "x", ("float32", "float64", "int32", "int64"), layer)
    check_dtype(length, "length", ("int64",), layer)
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(x.dtype)
    length.stop_gradient = True
    helper.append_op(type="sequence_unpad", inputs={"X": [x], "Length": [length]}, outputs={"Out": [out]})
    return out


def sequence_expand_as(x, y, name=None):
    """Row i of x repeated as many times as y's sequence i has rows; the result has y's LoD
    (Paddle 1.8 API docs, fluid.layers.sequence_expand_as)."""
    layer = "sequence_expand_as"
    check_variable(x, "x", layer)
    check_variable(y, "y", layer)
    check_dtype(x, "x", ("float32", "float64", "int32", "int64"), layer)
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="sequence_expand_as", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]})
    return out


def sequence_reshape(input, new_dim):
    """Each sequence's values re-cut into rows of new_dim, the LoD scaled to match (Paddle 1.8
    API docs, fluid.layers.sequence_reshape)."""
    layer = "sequence_reshape"
    check_variable(input, "input", layer)
    check_dtype(input, "input", ("float32", "float64", "int32", "int64"), layer)
    new_dim = check_int(new_dim, "new_dim", layer, minimum=1)
    helper = LayerHelper(layer)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="sequence_reshape", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"new_dim": new_dim})
    return out

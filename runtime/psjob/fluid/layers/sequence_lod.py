"""Sequence layers over LoD tensors (variable-length inputs such as the id
lists of a CTR slot)."""
from __future__ import annotations

from psjob.fluid.framework import Variable
from psjob.fluid.framework import convert_dtype as _convert_dtype
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import FLOATS, check_choice, check_dtype, check_int, check_variable

__all__ = ["sequence_pool", "dynamic_gru", "dynamic_lstm", "dynamic_lstmp", "lstm", "sequence_conv", "sequence_unpad", "sequence_expand_as",
           "sequence_reshape", "sequence_softmax", "sequence_first_step", "sequence_last_step",
           "sequence_concat", "sequence_slice", "sequence_enumerate", "sequence_pad", "sequence_expand",
           "sequence_scatter", "sequence_reverse", "sequence_mask", "lod_reset", "lod_append"]

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


def dynamic_lstm(input, size, h_0=None, c_0=None, param_attr=None, bias_attr=None, use_peepholes=True,
                 is_reverse=False, gate_activation="sigmoid", cell_activation="tanh", candidate_activation="tanh",
                 dtype="float32", name=None):
    """An LSTM over every sequence of a LoD level-1 input [T, size] (the projected input, an fc
    of width size = 4 * D in front): (hidden, cell), each [T, D] with the input's LoD (Paddle 1.8
    API docs, fluid.layers.dynamic_lstm). Weight [D, 4D], bias [1, 7D] with use_peepholes (the
    gate bias, then w_ic, w_fc, w_oc), else [1, 4D]; h_0 / c_0 [num_seqs, D] are the initial
    states (zeros when None). See psjob.fluid.ops.lstm_ops."""
    layer = "dynamic_lstm"
    check_variable(input, "input", layer)
    check_dtype(input, "input", ("float32", "float64"), layer)
    size = check_int(size, "size", layer, minimum=4)
    if size % 4:
        raise ValueError(f"{layer}: size must be 4 * the hidden size, got {size}")
    if bias_attr is False:
        raise ValueError(f"{layer}: bias_attr must not be False (Paddle's lstm needs its bias)")
    for arg, act in (("gate_activation", gate_activation), ("cell_activation", cell_activation),
                     ("candidate_activation", candidate_activation)):
        check_choice(act, arg, GRU_ACTIVATIONS, layer)
    d = size // 4
    inputs = {"Input": [input]}
    for arg, state, slot in (("h_0", h_0, "H0"), ("c_0", c_0, "C0")):
        if state is None:
            continue
        if not isinstance(state, Variable):
            raise TypeError(f"{layer}: argument {arg!r} must be a fluid Variable or None, got {type(state).__name__}")
        check_dtype(state, arg, ("float32", "float64"), layer)
        if state.shape[-1] not in (-1, d):
            raise ValueError(f"{layer}: {arg} {state.name}{list(state.shape)} must be [num_seqs, {d}]")
        inputs[slot] = [state]
    helper = LayerHelper("lstm", name)
    weight = helper.create_parameter(param_attr, [d, 4 * d], dtype)
    bias = helper.create_parameter(bias_attr, [1, (7 if use_peepholes else 4) * d], dtype, is_bias=True)
    inputs.update(Weight=[weight], Bias=[bias])
    hidden, cell = (helper.create_variable_for_type_inference(dtype) for _ in range(2))
    scratch = {slot: [helper.create_variable_for_type_inference(dtype, stop_gradient=True)]
               for slot in ("BatchGate", "BatchCellPreAct")}
    helper.append_op(type="lstm", inputs=inputs, outputs=dict(Hidden=[hidden], Cell=[cell], **scratch),
                     attrs={"use_peepholes": bool(use_peepholes), "is_reverse": bool(is_reverse),
                            "gate_activation": gate_activation, "cell_activation": cell_activation,
                            "candidate_activation": candidate_activation})
    return hidden, cell


def dynamic_lstmp(input, size, proj_size, param_attr=None, bias_attr=None, use_peepholes=True, is_reverse=False,  # noqa: A002
                  gate_activation="sigmoid", cell_activation="tanh", candidate_activation="tanh",
                  proj_activation="tanh", dtype="float32", name=None, h_0=None, c_0=None, cell_clip=None,
                  proj_clip=None):
    """dynamic_lstm with a projection of the hidden state (Paddle 1.8 API docs,
    fluid.layers.dynamic_lstmp): r = proj_activation(h @ P) [T, proj_size] is fed back instead
    of h. Weight [proj_size, size], projection weight P [size / 4, proj_size] (both from
    param_attr), bias as dynamic_lstm's; h_0 [num_seqs, proj_size] and c_0 [num_seqs, size / 4]
    the initial projection and cell. Returns (projection, cell). See psjob.fluid.ops.lstm_ops."""
    layer = "dynamic_lstmp"
    check_variable(input, "input", layer)
    check_dtype(input, "input", ("float32", "float64"), layer)
    size = check_int(size, "size", layer, minimum=4)
    proj_size = check_int(proj_size, "proj_size", layer, minimum=1)
    if size % 4:
        raise ValueError(f"{layer}: size must be 4 * the hidden size, got {size}")
    if bias_attr is False:
        raise ValueError(f"{layer}: bias_attr must not be False")
    for arg, act in (("gate_activation", gate_activation), ("cell_activation", cell_activation),
                     ("candidate_activation", candidate_activation), ("proj_activation", proj_activation)):
        check_choice(act, arg, GRU_ACTIVATIONS, layer)
    for arg, clip in (("cell_clip", cell_clip), ("proj_clip", proj_clip)):
        if clip is not None and clip < 0:
            raise ValueError(f"{layer}: {arg} must not be negative, got {clip}")
    d = size // 4
    inputs = {"Input": [input]}
    for arg, state, slot, width in (("h_0", h_0, "H0", proj_size), ("c_0", c_0, "C0", d)):
        if state is None:
            continue
        check_variable(state, arg, layer)
        check_dtype(state, arg, ("float32", "float64"), layer)
        if state.shape[-1] not in (-1, width):
            raise ValueError(f"{layer}: {arg} {state.name}{list(state.shape)} must be [num_seqs, {width}]")
        inputs[slot] = [state]
    helper = LayerHelper("lstmp", name)
    weight = helper.create_parameter(param_attr, [proj_size, 4 * d], dtype)
    proj_weight = helper.create_parameter(param_attr, [d, proj_size], dtype)
    bias = helper.create_parameter(bias_attr, [1, (7 if use_peepholes else 4) * d], dtype, is_bias=True)
    inputs.update(Weight=[weight], ProjWeight=[proj_weight], Bias=[bias])
    projection, cell = (helper.create_variable_for_type_inference(dtype) for _ in range(2))
    helper.create_variable_for_type_inference(dtype)  # Paddle 1.8's ordered_proj0, never used: names as Paddle's
    scratch = {slot: [helper.create_variable_for_type_inference(dtype, stop_gradient=True)]
               for slot in ("BatchHidden", "BatchGate", "BatchCellPreAct")}
    helper.append_op(type="lstmp", inputs=inputs, outputs=dict(Projection=[projection], Cell=[cell], **scratch),
                     attrs={"use_peepholes": bool(use_peepholes), "is_reverse": bool(is_reverse),
                            "gate_activation": gate_activation, "cell_activation": cell_activation,
                            "candidate_activation": candidate_activation, "proj_activation": proj_activation,
                            "cell_clip": float(cell_clip or 0.0), "proj_clip": float(proj_clip or 0.0)})
    return projection, cell


def lstm(input, init_h, init_c, max_len, hidden_size, num_layers, dropout_prob=0.0, is_bidirec=False,  # noqa: A002
         is_test=False, name=None, default_initializer=None, seed=-1):
    """Fluid 1.8's cuDNN LSTM (the cudnn_lstm op, one flat weight parameter): the program builds
    as Paddle's, but it does not run: Paddle 1.8 has only a cuDNN kernel (its CPU build stops
    with 'CPU is not support for this kernel now') and psjob has none. Returns (out, last_h,
    last_c)."""
    layer = "lstm"
    for arg, v in (("input", input), ("init_h", init_h), ("init_c", init_c)):
        check_variable(v, arg, layer)
    hidden_size = check_int(hidden_size, "hidden_size", layer, minimum=1)
    num_layers = check_int(num_layers, "num_layers", layer, minimum=1)
    input_size = int(input.shape[-1])
    dirs = 2 if is_bidirec else 1
    weight_size = 0
    for i in range(num_layers):
        in_w = input_size if i == 0 else hidden_size * dirs
        weight_size += dirs * ((in_w + hidden_size) * hidden_size * 4 + hidden_size * 8)
    helper = LayerHelper("cudnn_lstm", name)
    weight = helper.create_parameter(None, [weight_size], input.dtype, default_initializer=default_initializer)
    out, last_h, last_c = (helper.create_variable_for_type_inference(input.dtype) for _ in range(3))
    # Paddle's op also reads a persistable RAW Cache (cuDNN's state); psjob names it, nothing reads it
    helper.block().create_var(persistable=True, type="RAW", stop_gradient=True)
    helper.append_op(type="cudnn_lstm", inputs={"Input": [input], "InitH": [init_h], "InitC": [init_c],
                                                "W": [weight]},
                     outputs={"Out": [out], "last_h": [last_h], "last_c": [last_c]},
                     attrs={"max_len": int(max_len), "is_bidirec": bool(is_bidirec), "input_size": input_size,
                            "hidden_size": hidden_size, "num_layers": num_layers, "is_test": bool(is_test),
                            "dropout_prob": float(dropout_prob), "seed": int(seed)})
    return out, last_h, last_c


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


# -- the rest of Fluid 1.8's sequence_lod layers (ops in psjob.fluid.ops.sequence_layer_ops) ---

_SEQ_DTYPES = ("float32", "float64", "int32", "int64")


def _one_op(layer, op_type, inputs, attrs=None, dtype=None, out_slot="Out", name=None):
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={out_slot: [out]}, attrs=attrs or {})
    return out


def sequence_softmax(input, use_cudnn=False, name=None):
    """A softmax over the rows of each sequence of a LoD input [T, 1] (or [T]); the result keeps
    the LoD (Paddle 1.8 API docs, fluid.layers.sequence_softmax)."""
    check_variable(input, "input", "sequence_softmax")
    check_dtype(input, "input", ("float32", "float64"), "sequence_softmax")
    return _one_op("sequence_softmax", "sequence_softmax", {"X": [input]}, {"use_cudnn": bool(use_cudnn)},
                   input.dtype, name=name)


def sequence_first_step(input):
    """The first row of each sequence: sequence_pool with pool_type 'first'."""
    return sequence_pool(input, "first")


def sequence_last_step(input):
    """The last row of each sequence: sequence_pool with pool_type 'last'."""
    return sequence_pool(input, "last")


def sequence_concat(input, name=None):
    """Sequence i of the result: sequence i of input[0], then of input[1], ... (Paddle 1.8 API
    docs, fluid.layers.sequence_concat). Every input needs the same number of sequences."""
    if not isinstance(input, (list, tuple)) or not input:
        raise TypeError(f"sequence_concat: argument 'input' must be a non-empty list of Variables, got {input!r}")
    for i, x in enumerate(input):
        check_variable(x, f"input[{i}]", "sequence_concat")
    return _one_op("sequence_concat", "sequence_concat", {"X": list(input)}, dtype=input[0].dtype, name=name)


def sequence_slice(input, offset, length, name=None):
    """Rows offset[i] .. offset[i] + length[i] - 1 of each sequence i (offset and length: int64
    [N, 1]); one sequence each in the result (Paddle 1.8 API docs, fluid.layers.sequence_slice)."""
    layer = "sequence_slice"
    for arg, v in (("input", input), ("offset", offset), ("length", length)):
        check_variable(v, arg, layer)
    check_dtype(offset, "offset", ("int32", "int64"), layer)
    check_dtype(length, "length", ("int32", "int64"), layer)
    offset.stop_gradient = length.stop_gradient = True
    return _one_op(layer, layer, {"X": [input], "Offset": [offset], "Length": [length]}, dtype=input.dtype,
                   name=name)


def sequence_enumerate(input, win_size, pad_value=0, name=None):
    """Row t of int ids [T, 1] becomes [ids[t], ..., ids[t + win_size - 1]] within its sequence,
    pad_value past its end (Paddle 1.8 API docs, fluid.layers.sequence_enumerate)."""
    layer = "sequence_enumerate"
    check_variable(input, "input", layer)
    check_dtype(input, "input", ("int32", "int64"), layer)
    win_size = check_int(win_size, "win_size", layer, minimum=1)
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type=layer, inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"win_size": win_size, "pad_value": check_int(pad_value, "pad_value", layer)})
    return out


def sequence_pad(x, pad_value, maxlen=None, name=None):
    """(Out [N, maxlen, ...], Length [N] int64): each sequence padded with pad_value (a Variable of
    one value or one row) to maxlen rows (None: the longest sequence) (Paddle 1.8 API docs,
    fluid.layers.sequence_pad)."""
    layer = "sequence_pad"
    check_variable(x, "x", layer)
    check_variable(pad_value, "pad_value", layer)
    check_dtype(x, "x", _SEQ_DTYPES, layer)
    maxlen = -1 if maxlen is None else check_int(maxlen, "maxlen", layer, minimum=1)
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(x.dtype)
    length = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    pad_value.stop_gradient = True
    helper.append_op(type=layer, inputs={"X": [x], "PadValue": [pad_value]},
                     outputs={"Out": [out], "Length": [length]}, attrs={"padded_length": maxlen})
    return out, length


def sequence_expand(x, y, ref_level=-1, name=None):
    """Sequence i of x (row i when x has no LoD) repeated as many times as sequence i of y's LoD
    level ref_level (-1: the last) has elements (Paddle 1.8 API docs, fluid.layers.sequence_expand)."""
    layer = "sequence_expand"
    check_variable(x, "x", layer)
    check_variable(y, "y", layer)
    check_dtype(x, "x", _SEQ_DTYPES, layer)
    ref_level = check_int(ref_level, "ref_level", layer, minimum=-1)
    return _one_op(layer, layer, {"X": [x], "Y": [y]}, {"ref_level": ref_level}, x.dtype, name=name)


def sequence_scatter(input, index, updates, name=None):
    """A copy of input [N, D] with updates[j] added at input[i, index[j]] for every j of sequence i
    of index (Paddle 1.8 API docs, fluid.layers.sequence_scatter)."""
    layer = "sequence_scatter"
    for arg, v in (("input", input), ("index", index), ("updates", updates)):
        check_variable(v, arg, layer)
    check_dtype(index, "index", ("int32", "int64"), layer)
    index.stop_gradient = True
    return _one_op(layer, layer, {"X": [input], "Ids": [index], "Updates": [updates]}, dtype=input.dtype,
                   name=name)


def sequence_reverse(x, name=None):
    """Each sequence's rows in reverse order; the LoD kept (Paddle 1.8 API docs,
    fluid.layers.sequence_reverse)."""
    check_variable(x, "x", "sequence_reverse")
    check_dtype(x, "x", _SEQ_DTYPES + ("uint8",), "sequence_reverse")
    return _one_op("sequence_reverse", "sequence_reverse", {"X": [x]}, dtype=x.dtype, out_slot="Y", name=name)


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """x.shape + [maxlen]: element j of a row 1 where j < that row's length in x; maxlen an int,
    a one-element int Variable, or None (max(x)) (Paddle 1.8 API docs, fluid.layers.sequence_mask)."""
    layer = "sequence_mask"
    check_variable(x, "x", layer)
    dtype = _convert_dtype(dtype)
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    inputs, attrs = {"X": [x]}, {"out_dtype": dtype, "maxlen": -1}
    if isinstance(maxlen, Variable):
        inputs["MaxLenTensor"] = [maxlen]
    elif maxlen is not None:
        attrs["maxlen"] = check_int(maxlen, "maxlen", layer, minimum=0)
    helper.append_op(type=layer, inputs=inputs, outputs={"Y": [out]}, attrs=attrs)
    return out


def lod_reset(x, y=None, target_lod=None):
    """x's data with a new LoD: y's LoD when y has one, else y's values as offsets, else
    target_lod (offsets) (Paddle 1.8 API docs, fluid.layers.lod_reset)."""
    layer = "lod_reset"
    check_variable(x, "x", layer)
    inputs, attrs = {"X": [x]}, {}
    if y is not None:
        check_variable(y, "y", layer)
        y.stop_gradient = True
        inputs["Y"] = [y]
    elif target_lod is not None:
        if not isinstance(target_lod, (list, tuple)) or not all(isinstance(v, int) for v in target_lod):
            raise TypeError(f"{layer}: argument 'target_lod' must be a list of ints, got {target_lod!r}")
        attrs["target_lod"] = [int(v) for v in target_lod]
    else:
        raise ValueError(f"{layer}: give y or target_lod")
    return _one_op(layer, layer, inputs, attrs, x.dtype)


def lod_append(x, level):
    """x with `level` (a list of offsets, or a Variable holding them or carrying a LoD) pushed
    after its LoD levels (Paddle 1.8 API docs, fluid.layers.lod_append)."""
    layer = "lod_append"
    check_variable(x, "x", layer)
    inputs, attrs = {"X": [x]}, {"append": True}
    if isinstance(level, Variable):
        level.stop_gradient = True
        inputs["Y"] = [level]
    elif isinstance(level, (list, tuple)) and all(isinstance(v, int) for v in level):
        attrs["target_lod"] = [int(v) for v in level]
    else:
        raise TypeError(f"{layer}: argument 'level' must be a list of ints or a Variable, got {level!r}")
    return _one_op(layer, "lod_reset", inputs, attrs, x.dtype)

"""Neural-network layers: each builds ops (and parameters) in the default programs."""
from __future__ import annotations

from psjob.fluid.framework import GraphError, Variable
from psjob.fluid.framework import convert_dtype as _convert_dtype
from psjob.fluid.initializer import ConstantInitializer as _Constant
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import FLOATS as _FLOATS
from psjob.fluid.layers._checks import check_choice as _check_choice
from psjob.fluid.layers._checks import check_dtype as _check_dtype
from psjob.fluid.layers._checks import check_int as _check_int
from psjob.fluid.layers._checks import check_int_list as _check_int_list
from psjob.fluid.layers._checks import check_variable as _check_variable

# Paddle 1.8 defines these in fluid/layers/nn.py: scripts reach them as
# `paddle.fluid.layers.nn.reduce_max` and the like.
from psjob.fluid.layers.manip import (  # noqa: F401
    _bounds,
    expand,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
    reshape,
    split,
    squeeze,
    transpose,
    unsqueeze,
)
from psjob.fluid.layers.manip import concat as _concat
from psjob.fluid.layers.manip import reshape as _reshape
from psjob.fluid.layers.tensor import assign as _assign
from psjob.fluid.param_attr import ParamAttr as _ParamAttr


def _check_var(x, what):
    if not isinstance(x, Variable):
        raise TypeError(f"{what} must be a fluid Variable, got {type(x).__name__}")


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None,
       is_test=False):
    """Fully connected: act(sum_i input_i @ W_i + b). Several inputs get one W each."""
    helper = LayerHelper("fc", name)
    inputs = input if isinstance(input, (list, tuple)) else [input]
    param_attrs = param_attr if isinstance(param_attr, (list, tuple)) else [param_attr] * len(inputs)
    mul_outs = []
    for x, pattr in zip(inputs, param_attrs):
        _check_var(x, "fc input")
        in_features = 1
        for d in x.shape[num_flatten_dims:]:
            if d < 0:
                raise GraphError(f"fc: input {x.name}{list(x.shape)} needs known feature dimensions")
            in_features *= d
        w = helper.create_parameter(pattr, [in_features, size], x.dtype)
        out = helper.create_variable_for_type_inference(x.dtype)
        helper.append_op(type="mul", inputs={"X": [x], "Y": [w]}, outputs={"Out": [out]},
                         attrs={"x_num_col_dims": num_flatten_dims, "y_num_col_dims": 1})
        mul_outs.append(out)
    if len(mul_outs) == 1:
        pre_bias = mul_outs[0]
    else:
        pre_bias = helper.create_variable_for_type_inference(inputs[0].dtype)
        helper.append_op(type="sum", inputs={"X": mul_outs}, outputs={"Out": [pre_bias]})
    b = helper.create_parameter(bias_attr, [size], inputs[0].dtype, is_bias=True)
    if b is None:
        pre_act = pre_bias
    else:
        pre_act = helper.create_variable_for_type_inference(inputs[0].dtype)
        helper.append_op(type="elementwise_add", inputs={"X": [pre_bias], "Y": [b]},
                         outputs={"Out": [pre_act]}, attrs={"axis": num_flatten_dims})
    return helper.append_activation(pre_act, act)


def mean(x, name=None):
    _check_var(x, "mean input")
    helper = LayerHelper("mean", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="mean", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def _unary(op_type):
    def layer(x, name=None):
        _check_var(x, f"{op_type} input")
        helper = LayerHelper(op_type, name)
        out = helper.create_variable_for_type_inference(x.dtype)
        helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]})
        return out
    layer.__name__ = op_type
    layer.__doc__ = f"{op_type} activation."
    return layer


relu = _unary("relu")
sigmoid = _unary("sigmoid")
tanh = _unary("tanh")


def softmax(input, use_cudnn=False, name=None, axis=-1):
    """exp(x) / sum(exp(x)) along axis (the last by default; Paddle's softmax op attribute)."""
    _check_var(input, "softmax input")
    axis = _check_int(axis, "axis", "softmax")
    if not -len(input.shape) <= axis < max(len(input.shape), 1):
        raise ValueError(f"softmax: axis {axis} is out of range for {input.name}{list(input.shape)}")
    helper = LayerHelper("softmax", name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="softmax", inputs={"X": [input]}, outputs={"Out": [out]}, attrs={"axis": axis})
    return out


def _elementwise(op_type):
    """Fluid's elementwise_*: y's dimensions line up with x's from `axis` (-1: the
    trailing ones), then sizes of 1 broadcast in either operand (as Paddle >= 1.8)."""
    def layer(x, y, axis=-1, act=None, name=None):
        _check_var(x, f"{op_type} X")
        _check_var(y, f"{op_type} Y")
        helper = LayerHelper(op_type, name)
        out = helper.create_variable_for_type_inference(x.dtype)
        helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                         attrs={"axis": axis})
        return helper.append_activation(out, act)
    layer.__name__ = op_type
    return layer


elementwise_add = _elementwise("elementwise_add")
elementwise_sub = _elementwise("elementwise_sub")
elementwise_mul = _elementwise("elementwise_mul")
elementwise_div = _elementwise("elementwise_div")
elementwise_max = _elementwise("elementwise_max")
elementwise_min = _elementwise("elementwise_min")
elementwise_pow = _elementwise("elementwise_pow")
elementwise_floordiv = _elementwise("elementwise_floordiv")
elementwise_mod = _elementwise("elementwise_mod")


def square_error_cost(input, label):
    """(input - label)^2, element-wise: an elementwise_sub then a square op, as Fluid builds it
    (and so named: square_error_cost_N.tmp_0, the difference, and .tmp_1, the result)."""
    _check_var(input, "square_error_cost input")
    _check_var(label, "square_error_cost label")
    helper = LayerHelper("square_error_cost")
    diff = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="elementwise_sub", inputs={"X": [input], "Y": [label]}, outputs={"Out": [diff]},
                     attrs={"axis": -1})
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="square", inputs={"X": [diff]}, outputs={"Out": [out]})
    return out


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    """scale * x + bias (or scale * (x + bias)); scale may be a one-element float tensor (Fluid
    1.8's ScaleTensor), read when the op runs."""
    _check_variable(x, "x", "scale")
    inputs = {"X": [x]}
    attrs = {"bias": float(bias), "bias_after_scale": bias_after_scale}
    if isinstance(scale, Variable):
        inputs["ScaleTensor"] = [scale]
    else:
        attrs["scale"] = float(scale)
    helper = LayerHelper("scale", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="scale", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return helper.append_activation(out, act)


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None,
              param_attr=None, dtype="float32"):
    """Rows of a [vocab, dim] table for int64 ids [N, 1]; the output keeps the ids' LoD.

    With is_sparse the table's gradient is a SelectedRows of the looked-up rows;
    is_distributed marks the table for the transpiler's distributed lookup table.
    padding_idx (negative counts from the end) reads as zeros and is never updated.
    """
    layer = "embedding"
    _check_variable(input, "input", layer)
    _check_dtype(input, "input", ("int64",), layer, " (ids are int64)")
    if not isinstance(size, (list, tuple)) or len(size) != 2:
        raise TypeError(f"{layer}: argument 'size' must be [vocab_size, embedding_dim], got {size!r}")
    vocab = _check_int(size[0], "size[0]", layer, minimum=1)
    dim = _check_int(size[1], "size[1]", layer, minimum=1)
    if input.shape and input.shape[-1] != 1:
        raise ValueError(f"{layer}: argument 'input' {input.name}{list(input.shape)} must end in a "
                         "dimension of 1 (declare ids with shape=[1])")
    if padding_idx is None:
        padding_idx = -1
    else:
        padding_idx = _check_int(padding_idx, "padding_idx", layer)
        if not -vocab <= padding_idx < vocab:
            raise ValueError(f"{layer}: argument 'padding_idx' {padding_idx} is outside [-{vocab}, {vocab})")
        padding_idx = padding_idx + vocab if padding_idx < 0 else padding_idx
    try:
        dtype = _convert_dtype(dtype)
    except GraphError:
        raise TypeError(f"{layer}: argument 'dtype' must be a float dtype, got {dtype!r}") from None
    _check_choice(dtype, "dtype", _FLOATS, layer)
    helper = LayerHelper(layer)
    w = helper.create_parameter(param_attr, [vocab, dim], dtype)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="lookup_table", inputs={"Ids": [input], "W": [w]}, outputs={"Out": [out]},
                     attrs={"is_sparse": bool(is_sparse), "is_distributed": bool(is_distributed),
                            # Fluid 1.x: a sparse, non-distributed table is prefetched
                            # from the pservers once transpiled.
                            "remote_prefetch": bool(is_sparse and not is_distributed),
                            "padding_idx": padding_idx})
    return out


def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
               bias_attr=None, data_layout="NCHW", in_place=False, name=None, moving_mean_name=None,
               moving_variance_name=None, do_model_average_for_mean_and_var=True,
               fuse_with_relu=False, use_global_stats=False):
    """Normalize per channel with batch statistics (training) or the moving
    mean/variance (is_test, use_global_stats); the moving statistics are
    non-trainable persistable parameters updated with `momentum`."""
    layer = "batch_norm"
    _check_variable(input, "input", layer)
    _check_dtype(input, "input", _FLOATS, layer)
    _check_choice(data_layout, "data_layout", ("NCHW", "NHWC"), layer)
    if len(input.shape) < 2:
        raise ValueError(f"{layer}: argument 'input' {input.name}{list(input.shape)} needs at least "
                         "2 dimensions [N, C, ...]")
    if not 0.0 <= float(momentum) <= 1.0:
        raise ValueError(f"{layer}: argument 'momentum' must lie in [0, 1], got {momentum}")
    if float(epsilon) <= 0:
        raise ValueError(f"{layer}: argument 'epsilon' must be positive, got {epsilon}")
    channels = input.shape[-1 if (data_layout == "NHWC" and len(input.shape) > 2) else 1]
    if channels <= 0:
        raise ValueError(f"{layer}: the channel dimension of {input.name}{list(input.shape)} must be known")
    helper = LayerHelper(layer, name)
    dtype = input.dtype
    scale = helper.create_parameter(param_attr, [channels], dtype,
                                    default_initializer=_Constant(1.0))
    bias = helper.create_parameter(bias_attr, [channels], dtype, is_bias=True)
    mean = helper.create_parameter(
        _ParamAttr(name=moving_mean_name, initializer=_Constant(0.0), trainable=False,
                  do_model_average=do_model_average_for_mean_and_var), [channels], dtype)
    variance = helper.create_parameter(
        _ParamAttr(name=moving_variance_name, initializer=_Constant(1.0), trainable=False,
                  do_model_average=do_model_average_for_mean_and_var), [channels], dtype)
    saved_mean = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    saved_var = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    # in_place is a memory hint in Fluid; writing Y over X would hand the
    # gradient op Y where it needs X, so the output is always a new variable.
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(
        type="batch_norm",
        inputs={"X": [input], "Scale": [scale], "Bias": [bias], "Mean": [mean], "Variance": [variance]},
        outputs={"Y": [out], "MeanOut": [mean], "VarianceOut": [variance],
                 "SavedMean": [saved_mean], "SavedVariance": [saved_var]},
        attrs={"momentum": float(momentum), "epsilon": float(epsilon), "is_test": bool(is_test),
               "data_layout": data_layout, "fuse_with_relu": bool(fuse_with_relu),
               "use_global_stats": bool(use_global_stats)})
    return helper.append_activation(out, act)


def dropout(x, dropout_prob, is_test=False, seed=None, name=None,
            dropout_implementation="downgrade_in_infer"):
    """Zero each element with probability dropout_prob while training.

    downgrade_in_infer: train x*mask, infer x*(1-p). upscale_in_train: train
    x*mask/(1-p), infer x. A seed fixes the mask (the same mask every run).
    """
    layer = "dropout"
    _check_variable(x, "x", layer)
    _check_dtype(x, "x", _FLOATS, layer)
    if isinstance(dropout_prob, bool) or not isinstance(dropout_prob, (int, float)) \
            or not 0.0 <= float(dropout_prob) <= 1.0:
        raise ValueError(f"{layer}: argument 'dropout_prob' must be a number in [0, 1], got {dropout_prob!r}")
    _check_choice(dropout_implementation, "dropout_implementation",
                 ("downgrade_in_infer", "upscale_in_train"), layer)
    if seed is not None:
        seed = _check_int(seed, "seed", layer)
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(x.dtype)
    mask = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op(type="dropout", inputs={"X": [x]}, outputs={"Out": [out], "Mask": [mask]},
                     attrs={"dropout_prob": float(dropout_prob), "is_test": bool(is_test),
                            "fix_seed": seed is not None, "seed": seed or 0,
                            "dropout_implementation": dropout_implementation})
    return out


def topk(input, k, name=None):
    """The k largest entries of the last dimension and their indices (int64). k may be a
    one-element int tensor (Fluid 1.8's K input), read when the op runs; that dimension of
    the outputs is then -1 until it runs."""
    layer = "topk"
    _check_variable(input, "input", layer)
    inputs, attrs = {"X": [input]}, {}
    if isinstance(k, Variable):
        if k.dtype not in ("int32", "int64"):
            raise TypeError(f"{layer}: argument 'k' {k.name} must be an int32/int64 tensor, got {k.dtype}")
        inputs["K"] = [k]
    else:
        k = _check_int(k, "k", layer, minimum=1)
        if input.shape and 0 <= input.shape[-1] < k:
            raise ValueError(f"{layer}: argument 'k' ({k}) exceeds the last dimension of "
                             f"{input.name}{list(input.shape)}")
        attrs["k"] = k
    helper = LayerHelper("top_k", name)
    values = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    indices = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(type="top_k", inputs=inputs, outputs={"Out": [values], "Indices": [indices]}, attrs=attrs)
    return values, indices


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    """alpha * op(x) @ op(y), op transposing the last two dimensions where asked;
    leading (batch) dimensions broadcast. Both inputs need at least 2 dimensions."""
    layer = "matmul"
    _check_variable(x, "x", layer)
    _check_variable(y, "y", layer)
    _check_dtype(x, "x", _FLOATS, layer)
    if y.dtype != x.dtype:
        raise TypeError(f"{layer}: x {x.name} is {x.dtype} but y {y.name} is {y.dtype}")
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="matmul", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"transpose_X": bool(transpose_x), "transpose_Y": bool(transpose_y),
                            "alpha": float(alpha)})
    return out


# -- Fluid 1.x layers of PaddlePaddle/models' PS examples (simnet, CTR) ----------------------

def cos_sim(X, Y):
    """The cosine similarity of each row of X with the same row of Y (or Y's one row): [N, 1]."""
    _check_variable(X, "X", "cos_sim")
    _check_variable(Y, "Y", "cos_sim")
    _check_dtype(X, "X", _FLOATS, "cos_sim")
    helper = LayerHelper("cos_sim")
    out = helper.create_variable_for_type_inference(X.dtype)
    x_norm = helper.create_variable_for_type_inference(X.dtype)
    y_norm = helper.create_variable_for_type_inference(X.dtype)
    helper.append_op(type="cos_sim", inputs={"X": [X], "Y": [Y]},
                     outputs={"Out": [out], "XNorm": [x_norm], "YNorm": [y_norm]})
    return out


def clip(x, min, max, name=None):  # noqa: A002 (Fluid's names)
    """x limited to [min, max]; the gradient passes where min < x < max."""
    _check_variable(x, "x", "clip")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise ValueError(f"clip: min ({lo}) exceeds max ({hi})")
    helper = LayerHelper("clip", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="clip", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"min": lo, "max": hi})
    return out


def slice(input, axes, starts, ends):  # noqa: A001 (Fluid's name)
    """input[starts:ends] along each of axes (negative indices count from the end, as in Python).
    starts and ends may hold one-element int tensors or be 1-D int tensors, read when the op
    runs (Fluid 1.8's StartsTensorList / StartsTensor, the same for ends)."""
    _check_variable(input, "input", "slice")
    axes = _check_int_list(axes, "axes", "slice")
    inputs = {"Input": [input]}
    helper = LayerHelper("slice")
    starts, ends = (_bounds(v, k, "slice", inputs, len(axes), helper) for v, k in ((starts, "starts"), (ends, "ends")))
    attrs = {"axes": axes, "starts": starts, "ends": ends}
    if len(inputs) > 1:  # Paddle 1.8's infer_flags: -1 for a bound read at run time
        attrs["infer_flags"] = [-1] * len(axes)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="slice", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def flatten(x, axis=1, name=None):
    """x as a matrix: [prod(x.shape[:axis]), prod(x.shape[axis:])] (axis 0: [1, size])."""
    _check_variable(x, "x", "flatten")
    rank = len(x.shape)
    axis = _check_int(axis, "axis", "flatten")
    if not 0 <= axis <= rank:
        raise ValueError(f"flatten: axis must lie in [0, {rank}] for {x.name}{list(x.shape)}, got {axis}")
    head, tail = list(x.shape[:axis]), list(x.shape[axis:])
    if all(d >= 0 for d in head):
        shape = [int(_prod(head)), -1 if tail else 1]
    elif all(d >= 0 for d in tail):
        shape = [-1, int(_prod(tail))]
    else:
        raise ValueError(f"flatten: {x.name}{list(x.shape)} has unknown sizes on both sides of axis {axis}")
    return _reshape(x, shape, name=name)


def _prod(dims):
    out = 1
    for d in dims:
        out *= int(d)
    return out


def _conv_pair(value, what, minimum):
    values = [value, value] if isinstance(value, int) else list(value)
    if len(values) != 2 or not all(isinstance(v, int) and v >= minimum for v in values):
        raise ValueError(f"conv2d: argument '{what}' must be an int >= {minimum} or a pair of them, got {value!r}")
    return [int(v) for v in values]


def _channel_bias_and_act(helper, out, bias_attr, num_filters, act):
    """A convolution's output plus its per-channel bias [num_filters] (axis 1, NCHW) unless
    bias_attr is False, then its activation."""
    if bias_attr is not False:
        b = helper.create_parameter(bias_attr, [num_filters], out.dtype, is_bias=True)
        biased = helper.create_variable_for_type_inference(out.dtype)
        helper.append_op(type="elementwise_add", inputs={"X": [out], "Y": [b]}, outputs={"Out": [biased]},
                         attrs={"axis": 1})
        out = biased
    return helper.append_activation(out, act)


def _conv_input(input, data_format, layout, groups, layer):  # noqa: A002
    """(channels, groups) of a Fluid conv layer's input: a Variable in `layout` (NCHW, NCDHW) whose
    known channel count the groups divide."""
    _check_variable(input, "input", layer)
    if data_format != layout or len(input.shape) != len(layout):
        raise ValueError(f"{layer}: input must be a {len(layout)}-D {layout} tensor, got "
                         f"{input.name}{list(input.shape)} ({data_format})")
    channels = input.shape[1]
    groups = 1 if groups is None else _check_int(groups, "groups", layer, minimum=1)
    if channels < 1 or channels % groups:
        raise ValueError(f"{layer}: the input's {channels} channels must be known and divisible by groups {groups}")
    return channels, groups


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,  # noqa: A002
           param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None, data_format="NCHW"):
    """Fluid 1.8's fluid.layers.conv2d on NCHW input: a filter [num_filters, C/groups, kh, kw]
    made here (default Normal(0, sqrt(2 / (kh * kw * C))), as Fluid's), a bias [num_filters]
    added on the channel axis unless bias_attr is False, then `act`. padding: an int or
    [pad_h, pad_w]. use_cudnn has no effect."""
    from psjob.fluid.initializer import NormalInitializer
    layer = "conv2d"
    channels, groups = _conv_input(input, data_format, "NCHW", groups, layer)
    kernel = _conv_pair(filter_size, "filter_size", 1)
    num_filters = _check_int(num_filters, "num_filters", layer, minimum=1)
    helper = LayerHelper(layer, name=name)
    std = (2.0 / (kernel[0] * kernel[1] * channels)) ** 0.5
    w = helper.create_parameter(param_attr, [num_filters, channels // groups] + kernel, input.dtype,
                                default_initializer=NormalInitializer(0.0, std))
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="conv2d", inputs={"Input": [input], "Filter": [w]}, outputs={"Output": [out]},
                     attrs={"strides": _conv_pair(stride, "stride", 1), "paddings": _conv_pair(padding, "padding", 0),
                            "dilations": _conv_pair(dilation, "dilation", 1), "groups": groups,
                            "padding_algorithm": "EXPLICIT", "data_format": "NCHW"})
    return _channel_bias_and_act(helper, out, bias_attr, num_filters, act)


# -- activations with attributes (Paddle 1.8 API docs, fluid.layers.*; ops in activation_ops.py) --

def _act_layer(op_type, x, attrs, name=None):
    _check_variable(x, "x", op_type)
    _check_dtype(x, "x", _FLOATS, op_type)
    helper = LayerHelper(op_type, name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs=attrs)
    return out


def leaky_relu(x, alpha=0.02, name=None):
    """x where x > 0, else alpha * x."""
    return _act_layer("leaky_relu", x, {"alpha": float(alpha)}, name)


def elu(x, alpha=1.0, name=None):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return _act_layer("elu", x, {"alpha": float(alpha)}, name)


def selu(x, scale=None, alpha=None, name=None):
    """scale * (x where x > 0, else alpha * (exp(x) - 1)), by default the self-normalizing constants."""
    attrs = {}
    if scale is not None:
        attrs["scale"] = float(scale)
    if alpha is not None:
        attrs["alpha"] = float(alpha)
    return _act_layer("selu", x, attrs, name)


def relu6(x, threshold=6.0, name=None):
    """min(max(x, 0), threshold)."""
    return _act_layer("relu6", x, {"threshold": float(threshold)}, name)


def gelu(x, approximate=False):
    """x * Phi(x) (approximate: the tanh form)."""
    return _act_layer("gelu", x, {"approximate": bool(approximate)})


def swish(x, beta=1.0, name=None):
    """x * sigmoid(x). Paddle 1.8's fluid.layers.swish hands beta to the op as attribute 'slope',
    which the swish op does not read (it reads 'beta', default 1): beta has no effect there, and
    none here, so that a Fluid model computes what it computed under Paddle 1.8."""
    return _act_layer("swish", x, {"slope": float(beta)}, name)


def hard_swish(x, threshold=6.0, scale=6.0, offset=3.0, name=None):
    """x * min(max(x + offset, 0), threshold) / scale."""
    return _act_layer("hard_swish", x, {"threshold": float(threshold), "scale": float(scale),
                                        "offset": float(offset)}, name)


def hard_sigmoid(x, slope=0.2, offset=0.5, name=None):
    """clip(slope * x + offset, 0, 1)."""
    return _act_layer("hard_sigmoid", x, {"slope": float(slope), "offset": float(offset)}, name)


def softplus(x, name=None):
    """log(1 + exp(x))."""
    return _act_layer("softplus", x, {"beta": 1.0, "threshold": 20.0}, name)


def logsigmoid(x, name=None):
    """log(sigmoid(x))."""
    return _act_layer("logsigmoid", x, {}, name)


def tanh_shrink(x, name=None):
    """x - tanh(x)."""
    return _act_layer("tanh_shrink", x, {}, name)


def hard_shrink(x, threshold=None):
    """x where |x| > threshold (0.5 when None), else 0."""
    return _act_layer("hard_shrink", x, {"threshold": 0.5 if threshold is None else float(threshold)})


def softshrink(x, alpha=None):
    """x - alpha above alpha, x + alpha below -alpha, else 0 (alpha 0.5 when None; Paddle's lambda)."""
    return _act_layer("softshrink", x, {"lambda": 0.5 if alpha is None else float(alpha)})


def thresholded_relu(x, threshold=None):
    """x where x > threshold (1.0 when None), else 0."""
    return _act_layer("thresholded_relu", x, {"threshold": 1.0 if threshold is None else float(threshold)})


def brelu(x, t_min=0.0, t_max=24.0, name=None):
    """clip(x, t_min, t_max)."""
    return _act_layer("brelu", x, {"t_min": float(t_min), "t_max": float(t_max)}, name)


def soft_relu(x, threshold=40.0, name=None):
    """log(1 + exp(clip(x, -threshold, threshold)))."""
    return _act_layer("soft_relu", x, {"threshold": float(threshold)}, name)


def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    """scale_b * tanh(scale_a * x)."""
    return _act_layer("stanh", x, {"scale_a": float(scale_a), "scale_b": float(scale_b)}, name)


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-05, param_attr=None,
               bias_attr=None, act=None, name=None):
    """Normalize over the dimensions from begin_norm_axis on, then a learned scale (ones) and
    shift (zeros) of prod(those dimensions) elements (Paddle 1.8 API docs, fluid.layers.layer_norm)."""
    layer = "layer_norm"
    _check_variable(input, "input", layer)
    _check_dtype(input, "input", _FLOATS, layer)
    nd = len(input.shape)
    begin = _check_int(begin_norm_axis, "begin_norm_axis", layer)
    if not 0 < begin < nd:
        raise ValueError(f"{layer}: argument 'begin_norm_axis' must lie in [1, {nd}) for "
                         f"{input.name}{list(input.shape)}, got {begin}")
    width = _prod(input.shape[begin:])
    if width <= 0:
        raise ValueError(f"{layer}: the normalized dimensions of {input.name}{list(input.shape)} must be known")
    helper = LayerHelper(layer, name)
    inputs = {"X": [input]}
    if scale:
        inputs["Scale"] = [helper.create_parameter(param_attr, [width], input.dtype,
                                                   default_initializer=_Constant(1.0))]
    if shift:
        inputs["Bias"] = [helper.create_parameter(bias_attr, [width], input.dtype, is_bias=True)]
    out = helper.create_variable_for_type_inference(input.dtype)
    mean = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    variance = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type=layer, inputs=inputs, outputs={"Y": [out], "Mean": [mean], "Variance": [variance]},
                     attrs={"epsilon": float(epsilon), "begin_norm_axis": begin})
    return helper.append_activation(out, act)


def pool2d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0, global_pooling=False,
           use_cudnn=True, ceil_mode=False, name=None, exclusive=True, data_format="NCHW"):
    """Max or average pooling of an NCHW input (Paddle 1.8 API docs, fluid.layers.pool2d);
    pool_padding an int, a pair, four values, or 'SAME' / 'VALID'."""
    return _fluid_pool("pool2d", input, 2, pool_size, pool_type, pool_stride, pool_padding, global_pooling,
                       use_cudnn, ceil_mode, name, exclusive, data_format)


def _fluid_pool(layer, input, n, pool_size, pool_type, pool_stride, pool_padding, global_pooling,  # noqa: A002
                use_cudnn, ceil_mode, name, exclusive, data_format):
    """fluid.layers.pool2d / pool3d over n spatial axes: the pool2d / pool3d op, with Fluid 1.8's
    whole-window count for an inclusive average (fluid1_inclusive_count)."""
    layout = "NCHW" if n == 2 else "NCDHW"
    _check_variable(input, "input", layer)
    _check_dtype(input, "input", _FLOATS, layer)
    _check_choice(pool_type, "pool_type", ("max", "avg"), layer)
    if data_format != layout:
        raise ValueError(f"{layer}: only data_format '{layout}' is supported, got {data_format!r}")
    if len(input.shape) != n + 2:
        raise ValueError(f"{layer}: argument 'input' {input.name}{list(input.shape)} must be {n + 2}-D ({layout})")
    if not global_pooling and pool_size == -1:
        raise ValueError(f"{layer}: give pool_size unless global_pooling is True")
    spatial = _conv_pair if n == 2 else (lambda v, what, least: _conv_triple(v, what, least, layer))
    ksize = [1] * n if pool_size == -1 else spatial(pool_size, "pool_size", 1)
    strides = spatial(pool_stride, "pool_stride", 1)
    algorithm = "EXPLICIT"
    if isinstance(pool_padding, str):
        algorithm = _check_choice(pool_padding.upper(), "pool_padding", ("SAME", "VALID"), layer)
        paddings = [0] * n
    else:
        paddings = _check_int_list(pool_padding, "pool_padding", layer)
        paddings = paddings * n if len(paddings) == 1 else paddings
        if len(paddings) not in (n, 2 * n):
            raise ValueError(f"{layer}: argument 'pool_padding' must hold 1, {n} or {2 * n} values, "
                             f"got {pool_padding!r}")
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type=layer, inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"pooling_type": pool_type, "ksize": ksize, "strides": strides, "paddings": paddings,
                            "padding_algorithm": algorithm, "global_pooling": bool(global_pooling),
                            "ceil_mode": bool(ceil_mode), "exclusive": bool(exclusive),
                            "use_cudnn": bool(use_cudnn), "data_format": data_format,
                            "fluid1_inclusive_count": True})
    return out


def pad(x, paddings, pad_value=0.0, name=None):
    """x padded with pad_value: paddings holds [before, after] for every dimension in turn
    (Paddle 1.8 API docs, fluid.layers.pad)."""
    layer = "pad"
    _check_variable(x, "x", layer)
    paddings = _check_int_list(paddings, "paddings", layer)
    if len(paddings) != 2 * len(x.shape) or any(p < 0 for p in paddings):
        raise ValueError(f"{layer}: argument 'paddings' must hold two non-negative values per dimension of "
                         f"{x.name}{list(x.shape)}, got {paddings}")
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type=layer, inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"paddings": paddings, "pad_value": float(pad_value)})
    return out


def pad2d(input, paddings=[0, 0, 0, 0], mode="constant", pad_value=0.0, data_format="NCHW", name=None):  # noqa: B006 (Fluid's default)
    """A 4-D input padded by paddings [top, bottom, left, right] in mode 'constant' (pad_value),
    'reflect' or 'edge' (Paddle 1.8 API docs, fluid.layers.pad2d)."""
    layer = "pad2d"
    _check_variable(input, "input", layer)
    paddings = _check_int_list(paddings, "paddings", layer)
    _check_choice(mode, "mode", ("constant", "reflect", "edge"), layer)
    _check_choice(data_format, "data_format", ("NCHW", "NHWC"), layer)
    if len(input.shape) != 4 or len(paddings) != 4 or min(paddings) < 0:
        raise ValueError(f"{layer}: input {input.name}{list(input.shape)} must be 4-D and paddings four values >= 0, "
                         f"got {paddings}")
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type=layer, inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"paddings": paddings, "mode": mode, "pad_value": float(pad_value),
                            "data_format": data_format})
    return out


def pad_constant_like(x, y, pad_value=0.0, name=None):
    """y padded at the end of every dimension with pad_value to x's shape (Paddle 1.8 API docs,
    fluid.layers.pad_constant_like)."""
    layer = "pad_constant_like"
    _check_variable(x, "x", layer)
    _check_variable(y, "y", layer)
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(y.dtype)
    helper.append_op(type=layer, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"pad_value": float(pad_value)})
    return out


def crop(x, shape=None, offsets=None, name=None):
    """The block of x at offsets (zeros when None) of `shape`: a list, or a Variable whose shape
    is taken (Paddle 1.8 API docs, fluid.layers.crop)."""
    layer = "crop"
    _check_variable(x, "x", layer)
    inputs, attrs = {"X": [x]}, {}
    if isinstance(shape, Variable):
        inputs["Y"] = [shape]
    elif shape is not None:
        attrs["shape"] = _check_int_list(shape, "shape", layer)
    else:
        raise ValueError(f"{layer}: give shape (a list or a Variable)")
    attrs["offsets"] = [0] * len(x.shape) if offsets is None else _check_int_list(offsets, "offsets", layer)
    if len(attrs["offsets"]) != len(x.shape) or ("shape" in attrs and len(attrs["shape"]) != len(x.shape)):
        raise ValueError(f"{layer}: shape and offsets need one value per dimension of {x.name}{list(x.shape)}")
    helper = LayerHelper(layer, name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type=layer, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def continuous_value_model(input, cvm, use_cvm=True):
    """CTR embeddings whose first two columns are show and click (Paddle 1.8 API docs,
    fluid.layers.continuous_value_model): use_cvm keeps them as log(show + 1) and
    log(click + 1) - log(show + 1), else drops them; cvm [N, 2] is the show and click the
    gradient carries back to those columns."""
    layer = "continuous_value_model"
    _check_variable(input, "input", layer)
    _check_variable(cvm, "cvm", layer)
    _check_dtype(input, "input", ("float32", "float64"), layer)
    helper = LayerHelper("cvm")
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="cvm", inputs={"X": [input], "CVM": [cvm]}, outputs={"Y": [out]},
                     attrs={"use_cvm": bool(use_cvm)})
    return out


def data_norm(input, act=None, epsilon=1e-05, param_attr=None, data_layout="NCHW", in_place=False,  # noqa: A002
              name=None, moving_mean_name=None, moving_variance_name=None,
              do_model_average_for_mean_and_var=True, slot_dim=-1, sync_stats=False,
              summary_decay_rate=0.9999999, enable_scale_and_shift=False):
    """Normalize a [N, C] batch by running statistics kept in three parameters of [C],
    <name>.batch_size, <name>.batch_sum and <name>.batch_square_sum (name defaults to 'dn', as
    in Paddle), whose gradients are the batch's statistics (the data_norm op,
    psjob/fluid/ops/data_norm_ops.py). param_attr, a dict, sets their starting values
    ('batch_size' 1e4, 'batch_sum' 0, 'batch_square' 1e4 and, with enable_scale_and_shift, the
    learned 'scale_w' 1 and 'bias' 0). slot_dim > 0: slots of that many columns led by a show
    count; a slot not shown in a row outputs 0 there (Paddle 3.0 API docs,
    paddle.static.nn.data_norm; Paddle 1.8's fluid.layers.data_norm).

    in_place writes a new variable all the same; moving_mean_name, moving_variance_name,
    do_model_average_for_mean_and_var and sync_stats (multi-GPU) have no effect here, as on
    Paddle's CPU."""
    layer = "data_norm"
    _check_variable(input, "input", layer)
    _check_dtype(input, "input", ("float32", "float64"), layer)
    if len(input.shape) != 2:
        raise ValueError(f"{layer}: argument 'input' {input.name}{list(input.shape)} must be 2-D [N, C] "
                         "(Paddle's data_norm op normalizes rows of features)")
    _check_choice(data_layout, "data_layout", ("NCHW", "NHWC"), layer)
    channels = input.shape[1]
    if channels < 1:
        raise ValueError(f"{layer}: the column count of {input.name}{list(input.shape)} must be known")
    if not 0.0 <= float(epsilon) <= 1e-3:
        raise ValueError(f"{layer}: epsilon must lie in [0, 0.001] (as Paddle's), got {epsilon}")
    slot_dim = _check_int(slot_dim, "slot_dim", layer)
    if slot_dim > 0 and channels % slot_dim:
        raise ValueError(f"{layer}: {input.name}{list(input.shape)} has {channels} columns, not a whole "
                         f"number of slots of slot_dim {slot_dim}")
    if param_attr is not None and not isinstance(param_attr, dict):
        raise TypeError(f"{layer}: param_attr must be a dict of starting values ('batch_size', 'batch_sum', "
                        f"'batch_square', 'scale_w', 'bias') or None, got {type(param_attr).__name__}")
    starts = {"batch_size": 1e4, "batch_sum": 0.0, "batch_square": 1e4, "scale_w": 1.0, "bias": 0.0}
    starts.update(param_attr or {})
    prefix = name if name is not None else "dn"
    helper = LayerHelper(layer, name)

    def stat(suffix, key):
        return helper.create_parameter(_ParamAttr(name=f"{prefix}.{suffix}", initializer=_Constant(float(starts[key])),
                                                  trainable=True), [channels], input.dtype)

    inputs = {}
    if enable_scale_and_shift:
        inputs["scale_w"], inputs["bias"] = [stat("scale_w", "scale_w")], [stat("bias", "bias")]
    inputs.update({"X": [input], "BatchSize": [stat("batch_size", "batch_size")],
                   "BatchSum": [stat("batch_sum", "batch_sum")],
                   "BatchSquareSum": [stat("batch_square_sum", "batch_square")]})
    attrs = {"epsilon": float(epsilon), "data_layout": data_layout, "sync_stats": bool(sync_stats),
             "summary_decay_rate": float(summary_decay_rate)}
    if slot_dim > 0:
        attrs["slot_dim"] = slot_dim
    if enable_scale_and_shift:
        attrs["enable_scale_and_shift"] = True
    out = helper.create_variable_for_type_inference(input.dtype)
    means = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    scales = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type=layer, inputs=inputs, outputs={"Y": [out], "Means": [means], "Scales": [scales]},
                     attrs=attrs)
    return helper.append_activation(out, act)


def image_resize(input, out_shape=None, scale=None, name=None, resample="BILINEAR", actual_shape=None,
                 align_corners=True, align_mode=1, data_format="NCHW"):
    """Resize the H, W of a 4-D input to out_shape [out_h, out_w] or by scale (Paddle 1.8 API docs,
    fluid.layers.image_resize): resample 'BILINEAR' or 'NEAREST', Paddle's bilinear_interp /
    nearest_interp ops. out_shape and scale held in Variables (actual_shape) are refused."""
    layer = "image_resize"
    _check_variable(input, "input", layer)
    resample = str(resample).upper()
    _check_choice(resample, "resample", ("BILINEAR", "NEAREST"), layer)
    _check_choice(data_format, "data_format", ("NCHW", "NHWC"), layer)
    if len(input.shape) != 4:
        raise ValueError(f"{layer}: input {input.name}{list(input.shape)} must be 4-D")
    if actual_shape is not None or isinstance(out_shape, Variable) or isinstance(scale, Variable):
        raise ValueError(f"{layer}: sizes held in Variables (out_shape, scale, actual_shape) are not supported by psjob")
    attrs = {"out_h": -1, "out_w": -1, "scale": 0.0, "interp_method": resample.lower(),
             "align_corners": bool(align_corners), "align_mode": int(align_mode), "data_layout": "NCHW"}
    if out_shape is not None:
        sizes = _check_int_list(out_shape, "out_shape", layer)
        if len(sizes) != 2 or min(sizes) < 1:
            raise ValueError(f"{layer}: out_shape must be two positive ints [out_h, out_w], got {out_shape!r}")
        attrs["out_h"], attrs["out_w"] = sizes
    elif scale is not None and float(scale) > 0:
        attrs["scale"] = float(scale)
    else:
        raise ValueError(f"{layer}: give out_shape or a positive scale")
    if data_format == "NHWC":
        input = transpose(input, [0, 3, 1, 2])
    op_type = "bilinear_interp" if resample == "BILINEAR" else "nearest_interp"
    helper = LayerHelper(op_type, name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type=op_type, inputs={"X": [input]}, outputs={"Out": [out]}, attrs=attrs)
    return transpose(out, [0, 2, 3, 1]) if data_format == "NHWC" else out


def resize_bilinear(input, out_shape=None, scale=None, name=None, actual_shape=None, align_corners=True,
                    align_mode=1, data_format="NCHW"):
    """image_resize with resample 'BILINEAR'."""
    return image_resize(input, out_shape, scale, name, "BILINEAR", actual_shape, align_corners, align_mode,
                        data_format)


def resize_nearest(input, out_shape=None, scale=None, name=None, actual_shape=None, align_corners=True,
                   data_format="NCHW"):
    """image_resize with resample 'NEAREST'."""
    return image_resize(input, out_shape, scale, name, "NEAREST", actual_shape, align_corners, 1, data_format)


def conv2d_transpose(input, num_filters, output_size=None, filter_size=None, padding=0, stride=1, dilation=1,  # noqa: A002
                     groups=None, param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None,
                     data_format="NCHW"):
    """Fluid 1.8's fluid.layers.conv2d_transpose on NCHW input: Paddle's conv2d_transpose op with a
    filter [C, num_filters / groups, kh, kw] made here (Fluid's default Xavier), filter_size derived
    from output_size when None, a bias [num_filters] on the channel axis unless bias_attr is False,
    then `act`. padding an int or [pad_h, pad_w]; use_cudnn has no effect."""
    layer = "conv2d_transpose"
    _check_variable(input, "input", layer)
    if data_format != "NCHW" or len(input.shape) != 4 or input.shape[1] < 1:
        raise ValueError(f"{layer}: input must be a 4-D NCHW tensor with known channels, got "
                         f"{input.name}{list(input.shape)} ({data_format})")
    groups = 1 if groups is None else _check_int(groups, "groups", layer, minimum=1)
    num_filters = _check_int(num_filters, "num_filters", layer, minimum=1)
    channels = input.shape[1]
    if channels % groups or num_filters % groups:
        raise ValueError(f"{layer}: groups {groups} must divide the {channels} input channels and num_filters")
    strides, pads, dilations = (_conv_pair(stride, "stride", 1), _conv_pair(padding, "padding", 0),
                                _conv_pair(dilation, "dilation", 1))
    if filter_size is None:
        if output_size is None:
            raise ValueError(f"{layer}: give filter_size or output_size")
        size = _conv_pair(output_size, "output_size", 1)
        if any(d < 0 for d in input.shape[2:]):
            raise ValueError(f"{layer}: deriving filter_size from output_size needs the input's H and W")
        # Fluid's formula: k = (out - (in - 1) * stride + 2 * pad - 1) // dilation + 1.
        kernel = [(size[i] - (input.shape[2 + i] - 1) * strides[i] + 2 * pads[i] - 1) // dilations[i] + 1
                  for i in range(2)]
        if min(kernel) < 1:
            raise ValueError(f"{layer}: output_size {size} is smaller than the input allows")
    else:
        kernel = _conv_pair(filter_size, "filter_size", 1)
    helper = LayerHelper(layer, name=name)
    w = helper.create_parameter(param_attr, [channels, num_filters // groups] + kernel, input.dtype)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type=layer, inputs={"Input": [input], "Filter": [w]}, outputs={"Output": [out]},
                     attrs={"strides": strides, "paddings": pads, "dilations": dilations, "groups": groups,
                            "output_padding": [0, 0], "output_size": [], "padding_algorithm": "EXPLICIT",
                            "data_format": "NCHW"})
    return _channel_bias_and_act(helper, out, bias_attr, num_filters, act)


def gru_unit(input, hidden, size, param_attr=None, bias_attr=None, activation="tanh", gate_activation="sigmoid",
             origin_mode=False):
    """One GRU step (Paddle 1.8 API docs, fluid.layers.gru_unit): input [N, size] is the projected
    input (x_u, x_r, x_c; size = 3 * D), hidden [N, D] the previous state. Returns
    (updated_hidden [N, D], reset_hidden_pre r * h [N, D], gate [N, 3D]: u, r, c after their
    activations). Weight [D, 3D] is read as Paddle's kernel reads its memory (the first 2*D*D
    values the gate weight [D, 2D], the last D*D the candidate weight [D, D], as dynamic_gru's),
    bias [1, 3D]. Built from reshape/slice/matmul ops, whose gradients give its own (from updated_hidden only, as Paddle's). Paddle 1.8
    checks `activation` and `gate_activation` but always runs tanh and sigmoid; so does psjob."""
    layer = "gru_unit"
    _check_variable(input, "input", layer)
    _check_variable(hidden, "hidden", layer)
    _check_dtype(input, "input", ("float32", "float64"), layer)
    _check_dtype(hidden, "hidden", ("float32", "float64"), layer)
    size = _check_int(size, "size", layer, minimum=3)
    for arg, act in (("activation", activation), ("gate_activation", gate_activation)):
        _check_choice(act, arg, ("identity", "sigmoid", "tanh", "relu"), layer)
    d = size // 3
    if size % 3 or (input.shape[-1] >= 0 and input.shape[-1] != size) or hidden.shape[-1] not in (-1, d):
        raise ValueError(f"{layer}: size {size} must be 3 * D with input {input.name}{list(input.shape)} "
                         f"[N, 3 * D] and hidden {hidden.name}{list(hidden.shape)} [N, D]")
    helper = LayerHelper(layer)
    weight = helper.create_parameter(param_attr, [d, 3 * d], input.dtype)
    bias = helper.create_parameter(bias_attr, [1, 3 * d], input.dtype, is_bias=True)
    x = input if bias is None else elementwise_add(input, bias)
    flat = _reshape(weight, [3 * d * d])
    w_gate = _reshape(slice(flat, [0], [0], [2 * d * d]), [d, 2 * d])
    w_cand = _reshape(slice(flat, [0], [2 * d * d], [3 * d * d]), [d, d])
    ur = sigmoid(elementwise_add(slice(x, [1], [0], [2 * d]), matmul(hidden, w_gate)))
    u, r = slice(ur, [1], [0], [d]), slice(ur, [1], [d], [2 * d])
    reset_hidden_pre = elementwise_mul(r, hidden)
    c = tanh(elementwise_add(slice(x, [1], [2 * d], [3 * d]), matmul(reset_hidden_pre, w_cand)))
    if origin_mode:  # h = u * h_prev + (1 - u) * c
        updated = elementwise_add(c, elementwise_mul(u, elementwise_sub(hidden, c)))
    else:  # h = (1 - u) * h_prev + u * c
        updated = elementwise_add(hidden, elementwise_mul(u, elementwise_sub(c, hidden)))
    # Paddle's Gate and ResetHiddenPrev are intermediate outputs: its gradient flows from Hidden
    # only, so the copies returned here stop gradients.
    gate = _concat([u, r, c], axis=1)
    reset_out = _assign(reset_hidden_pre)
    gate.stop_gradient = reset_out.stop_gradient = True
    return updated, reset_out, gate


def _var_list(value, arg):
    if value is None:
        return []
    items = [value] if isinstance(value, Variable) else list(value) if isinstance(value, (list, tuple)) else None
    if items is None or not all(isinstance(v, Variable) for v in items):
        raise TypeError(f"py_func: argument {arg!r} must be a Variable, a list of Variables or None, got {value!r}")
    return items


def py_func(func, x, out, backward_func=None, skip_vars_in_backward_input=None):
    """Run a Python function as an op (Paddle 1.8 API docs, fluid.layers.py_func): func gets x's
    LoDTensors and returns out's values; out are variables the caller created with their
    shapes and dtypes (block.create_var). backward_func, when given, gets the forward inputs,
    outputs and output gradients (less skip_vars_in_backward_input) and returns the inputs'
    gradients; without it no gradient flows through. See psjob.fluid.ops.py_func_ops."""
    from psjob.fluid.ops import py_func_ops
    xs, outs = _var_list(x, "x"), _var_list(out, "out")
    for v in outs:
        if len(v.shape) == 0:
            raise ValueError(f"py_func: output {v.name} has no shape: create it with its shape and dtype")
    fwd_id = py_func_ops.register_callable(func)
    bwd_id = -1 if backward_func is None else py_func_ops.register_callable(backward_func)
    skip = []
    if backward_func is not None and skip_vars_in_backward_input is not None:
        known = {v.name for v in xs + outs}
        for v in _var_list(skip_vars_in_backward_input, "skip_vars_in_backward_input"):
            if v.name not in known:
                raise ValueError(f"py_func: skip_vars_in_backward_input: {v.name} is not a forward input or output")
            skip.append(v.name)
    if backward_func is None:
        # Paddle makes no gradient op, so the backward pass stops here (its inputs' producers
        # get no gradient either); stopping the outputs' gradients does the same in psjob.
        for v in outs:
            v.stop_gradient = True
    LayerHelper("py_func").append_op(type="py_func", inputs={"X": xs}, outputs={"Out": outs},
                                     attrs={"forward_callable_id": fwd_id, "backward_callable_id": bwd_id,
                                            "backward_skip_vars": sorted(set(skip))})
    return out


def _conv_triple(value, what, minimum, layer):
    values = [value] * 3 if isinstance(value, int) else list(value)
    if len(values) != 3 or not all(isinstance(v, int) and v >= minimum for v in values):
        raise ValueError(f"{layer}: argument '{what}' must be an int >= {minimum} or three of them, got {value!r}")
    return [int(v) for v in values]


def conv3d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,  # noqa: A002
           param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None, data_format="NCDHW"):
    """Fluid 1.8's fluid.layers.conv3d on NCDHW input: a filter [num_filters, C/groups, kd, kh, kw]
    made here (default Normal(0, sqrt(2 / (kd * kh * kw * C))), as Fluid's), a bias [num_filters]
    added on the channel axis unless bias_attr is False, then `act`. padding: an int or
    [pad_d, pad_h, pad_w]. use_cudnn has no effect (the conv3d op: psjob.fluid.ops.conv3d_ops)."""
    from psjob.fluid.initializer import NormalInitializer
    layer = "conv3d"
    channels, groups = _conv_input(input, data_format, "NCDHW", groups, layer)
    kernel = _conv_triple(filter_size, "filter_size", 1, layer)
    num_filters = _check_int(num_filters, "num_filters", layer, minimum=1)
    helper = LayerHelper(layer, name=name)
    std = (2.0 / (kernel[0] * kernel[1] * kernel[2] * channels)) ** 0.5
    w = helper.create_parameter(param_attr, [num_filters, channels // groups] + kernel, input.dtype,
                                default_initializer=NormalInitializer(0.0, std))
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type=layer, inputs={"Input": [input], "Filter": [w]}, outputs={"Output": [out]},
                     attrs={"strides": _conv_triple(stride, "stride", 1, layer),
                            "paddings": _conv_triple(padding, "padding", 0, layer),
                            "dilations": _conv_triple(dilation, "dilation", 1, layer), "groups": groups,
                            "padding_algorithm": "EXPLICIT", "data_format": "NCDHW"})
    return _channel_bias_and_act(helper, out, bias_attr, num_filters, act)


def pool3d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0, global_pooling=False,
           use_cudnn=True, ceil_mode=False, name=None, exclusive=True, data_format="NCDHW"):
    """Max or average pooling of an NCDHW input (Paddle 1.8 API docs, fluid.layers.pool3d);
    pool_padding an int, three or six values, or 'SAME' / 'VALID'."""
    return _fluid_pool("pool3d", input, 3, pool_size, pool_type, pool_stride, pool_padding, global_pooling,
                       use_cudnn, ceil_mode, name, exclusive, data_format)

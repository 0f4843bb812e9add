"""Neural-network layers: each builds ops (and parameters) in the default programs."""
from __future__ import annotations

from ..framework import GraphError, Variable
from ..layer_helper import LayerHelper


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
    return _unary("softmax")(input, name)


def _elementwise(op_type):
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


def square_error_cost(input, label):
    """(input - label)^2, element-wise."""
    _check_var(input, "square_error_cost input")
    _check_var(label, "square_error_cost label")
    diff = elementwise_sub(input, label)
    return elementwise_mul(diff, diff)


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    helper = LayerHelper("scale", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="scale", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"scale": float(scale), "bias": float(bias), "bias_after_scale": bias_after_scale})
    return helper.append_activation(out, act)

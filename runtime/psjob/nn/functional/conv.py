"""paddle.nn.functional.conv2d in static mode: one `conv2d` op (fluid/ops/conv_ops.py),
plus the bias added along the channel axis; conv1d is conv2d over a height of 1, as
Paddle builds it (unsqueeze, conv2d, squeeze). Arguments as Paddle's: `stride`,
`dilation` an int or a pair; `padding` an int, [h, w], [top, bottom, left, right],
Paddle's per-dimension pairs ([[0, 0], [0, 0], [top, bottom], [left, right]] for NCHW)
or 'same' / 'valid'; `data_format` 'NCHW' or 'NHWC' (transposed around the op)."""
from __future__ import annotations

import numbers

from psjob.fluid import layers as _layers
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_variable

__all__ = ["conv1d", "conv2d"]


def _pair(value, what):
    values = [value, value] if isinstance(value, numbers.Integral) else list(value)
    if len(values) != 2 or not all(isinstance(v, numbers.Integral) and v >= 1 for v in values):
        raise ValueError(f"conv2d: {what} must be a positive int or a pair of them, got {value!r}")
    return [int(v) for v in values]


def conv_padding(padding, channel_last):
    """(paddings, padding_algorithm) from Paddle's padding forms (its _update_padding_nd)."""
    if isinstance(padding, str):
        algorithm = padding.upper()
        if algorithm not in ("SAME", "VALID"):
            raise ValueError(f"conv2d: unknown padding {padding!r}; it can only be 'SAME' or 'VALID'")
        return [0, 0], algorithm
    if isinstance(padding, numbers.Integral):
        pads = [int(padding)] * 2
    elif len(padding) == 4 and all(isinstance(p, (list, tuple)) for p in padding):
        spatial = padding[1:3] if channel_last else padding[2:]
        other = [padding[0], padding[3]] if channel_last else padding[:2]
        if any(list(p) != [0, 0] for p in other):
            raise ValueError(f"conv2d: non-zero padding {padding} in the batch or channel dimensions")
        pads = [int(v) for pair in spatial for v in pair]
    elif len(padding) in (2, 4) and all(isinstance(p, numbers.Integral) for p in padding):
        pads = [int(p) for p in padding]
    else:
        raise ValueError(f"conv2d: invalid padding {padding!r}")
    if min(pads) < 0:
        raise ValueError(f"conv2d: padding must be >= 0, got {padding!r}")
    return pads, "EXPLICIT"


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCHW", name=None):
    """x [N, C, H, W] (or NHWC) with weight [O, C/groups, KH, KW]; bias [O] or None."""
    check_variable(x, "x", "conv2d")
    check_variable(weight, "weight", "conv2d")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"conv2d: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"conv2d: groups must be a positive int, got {groups!r}")
    channel_last = data_format == "NHWC"
    paddings, algorithm = conv_padding(padding, channel_last)
    if channel_last:
        x = _layers.transpose(x, [0, 3, 1, 2])
    helper = LayerHelper("conv2d", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="conv2d", inputs={"Input": [x], "Filter": [weight]}, outputs={"Output": [out]},
                     attrs={"strides": _pair(stride, "stride"), "paddings": paddings,
                            "dilations": _pair(dilation, "dilation"), "groups": int(groups),
                            "padding_algorithm": algorithm, "data_format": "NCHW"})
    if bias is not None:
        check_variable(bias, "bias", "conv2d")
        out = _layers.elementwise_add(out, bias, axis=1)
    return _layers.transpose(out, [0, 2, 3, 1]) if channel_last else out


def _one(value, what):
    values = [value] if isinstance(value, numbers.Integral) else list(value)
    if len(values) != 1:
        raise ValueError(f"conv1d: {what} must be an int or a list of one, got {value!r}")
    return [1] + values


def _padding_1d(padding, channel_last):
    """Paddle's 1-D padding forms as conv2d paddings with no padding along the added height."""
    if isinstance(padding, (str, numbers.Integral)):
        return padding if isinstance(padding, str) else [0, int(padding)]
    padding = list(padding)
    if len(padding) == 3 and all(isinstance(p, (list, tuple)) for p in padding):
        at = 1 if channel_last else 2  # the per-dimension form: height goes before the length
        return padding[:at] + [[0, 0]] + padding[at:]
    if len(padding) == 1:
        return [0, int(padding[0])]
    if len(padding) == 2 and all(isinstance(p, numbers.Integral) for p in padding):
        return [0, 0] + [int(p) for p in padding]
    raise ValueError(f"conv1d: invalid padding {padding!r}")


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCL", name=None):
    """x [N, C, L] (or NLC) with weight [O, C/groups, K]; bias [O] or None (Paddle's
    paddle.nn.functional.conv1d)."""
    check_variable(x, "x", "conv1d")
    check_variable(weight, "weight", "conv1d")
    if data_format not in ("NCL", "NLC"):
        raise ValueError(f"conv1d: data_format must be 'NCL' or 'NLC', got {data_format!r}")
    if len(x.shape) != 3 or len(weight.shape) != 3:
        raise ValueError(f"conv1d: x {x.name}{list(x.shape)} and weight {weight.name}{list(weight.shape)} "
                         "must be 3-D")
    channel_last = data_format == "NLC"
    axis = 1 if channel_last else 2
    out = conv2d(_layers.unsqueeze(x, [axis]), _layers.unsqueeze(weight, [2]), bias, _one(stride, "stride"),
                 _padding_1d(padding, channel_last), _one(dilation, "dilation"), groups,
                 "NHWC" if channel_last else "NCHW", name)
    return _layers.squeeze(out, [axis])

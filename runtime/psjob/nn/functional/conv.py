"""paddle.nn.functional.conv2d in static mode: one `conv2d` op (fluid/ops/conv_ops.py),
plus the bias added along the channel axis. Arguments as Paddle's: `stride`,
`dilation` an int or a pair; `padding` an int, [h, w], [top, bottom, left, right],
Paddle's per-dimension pairs ([[0, 0], [0, 0], [top, bottom], [left, right]] for NCHW)
or 'same' / 'valid'; `data_format` 'NCHW' or 'NHWC' (transposed around the op).

conv1d is conv2d over a height of 1, as Paddle builds it (paddle.nn.functional.conv1d):
x [N, C, L] (NCL) or [N, L, C] (NLC) and weight [O, C/groups, K] get a unit height, the
`conv2d` op runs with stride, dilation and padding [1, s], [1, d], [0, p], and the height
is squeezed away."""
from __future__ import annotations

import numbers

from psjob.fluid import layers as _layers
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_variable

__all__ = ["conv2d", "conv1d", "conv2d_transpose", "conv3d"]


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


def _conv1d_padding(padding):
    """conv2d's padding (zero on the unit height) from conv1d's: an int, [p], [left, right],
    or 'same' / 'valid'."""
    if isinstance(padding, str):
        return padding
    pads = [padding] if isinstance(padding, numbers.Integral) else list(padding)
    if len(pads) not in (1, 2) or not all(isinstance(p, numbers.Integral) for p in pads):
        raise ValueError(f"conv1d: padding must be an int, [p], [left, right], 'same' or 'valid', "
                         f"got {padding!r}")
    return [0, 0] + ([pads[0]] * 2 if len(pads) == 1 else pads)


def _single(value, what):
    values = [value] if isinstance(value, numbers.Integral) else list(value)
    if len(values) != 1:
        raise ValueError(f"conv1d: {what} must be an int or a list of one, got {value!r}")
    return [1, values[0]]


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCL", name=None):
    """x [N, C, L] (or NLC) with weight [O, C/groups, K]; bias [O] or None."""
    check_variable(x, "x", "conv1d")
    check_variable(weight, "weight", "conv1d")
    if data_format not in ("NCL", "NLC"):
        raise ValueError(f"conv1d: data_format must be 'NCL' or 'NLC', got {data_format!r}")
    if len(x.shape) != 3 or len(weight.shape) != 3:
        raise ValueError(f"conv1d: x {x.name}{list(x.shape)} and weight {weight.name}"
                         f"{list(weight.shape)} must be 3-D")
    channel_last = data_format == "NLC"
    unit = 1 if channel_last else 2
    out = conv2d(_layers.unsqueeze(x, [unit]), _layers.unsqueeze(weight, [2]), bias,
                 _single(stride, "stride"), _conv1d_padding(padding), _single(dilation, "dilation"),
                 groups, "NHWC" if channel_last else "NCHW", name)
    return _layers.squeeze(out, [unit])


def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     data_format="NCHW", output_size=None, name=None):
    """The transposed convolution: x [N, C, H, W] (or NHWC), weight [C, O/groups, KH, KW]; output
    (H - 1) * stride - pad_top - pad_bottom + dilation * (KH - 1) + 1 + output_padding (output_size,
    when given, picks output_padding). Paddle's conv2d_transpose op; padding 'VALID' is no padding,
    'SAME' the padding a SAME conv2d of x would take (dilation taken as 1), as Paddle's."""
    fn = "conv2d_transpose"
    check_variable(x, "x", fn)
    check_variable(weight, "weight", fn)
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"{fn}: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if len(x.shape) != 4 or len(weight.shape) != 4:
        raise ValueError(f"{fn}: x {x.name}{list(x.shape)} and weight {weight.name}{list(weight.shape)} must be 4-D")
    channel_last = data_format == "NHWC"
    paddings, algorithm = conv_padding(padding, channel_last)
    strides, dilations = _pair(stride, "stride"), _pair(dilation, "dilation")
    extra = [output_padding] * 2 if isinstance(output_padding, numbers.Integral) else list(output_padding)
    if len(extra) != 2 or not all(isinstance(v, numbers.Integral) and v >= 0 for v in extra):
        raise ValueError(f"{fn}: output_padding must be an int >= 0 or a pair of them, got {output_padding!r}")
    extra = [int(v) for v in extra]
    if channel_last:
        x = _layers.transpose(x, [0, 3, 1, 2])
    if output_size is not None:
        size = _pair(output_size, "output_size")
        pads4 = [paddings[0], paddings[0], paddings[1], paddings[1]] if len(paddings) == 2 else paddings
        dil = dilations
        if algorithm == "SAME":  # the op's padding (fluid/ops/conv_ops.py), the dilation taken as 1
            dil, pads4 = [1, 1], []
            for n_in, k, st in zip(x.shape[2:], weight.shape[2:], strides):
                total = max((-(-n_in // st) - 1) * st + k - n_in, 0) if n_in >= 0 else 0
                pads4 += [total // 2, total - total // 2]
        for i in range(2):
            base = ((x.shape[2 + i] - 1) * strides[i] - pads4[2 * i] - pads4[2 * i + 1]
                    + dil[i] * (weight.shape[2 + i] - 1) + 1)
            if x.shape[2 + i] >= 0 and not 0 <= size[i] - base < max(strides[i], dil[i]):
                raise ValueError(f"{fn}: output_size {size} is not reachable from x {list(x.shape)} "
                                 f"(dimension {i}: {base} to {base + max(strides[i], dil[i]) - 1})")
            extra[i] = size[i] - base if x.shape[2 + i] >= 0 else 0
    helper = LayerHelper(fn, name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type=fn, inputs={"Input": [x], "Filter": [weight]}, outputs={"Output": [out]},
                     attrs={"strides": strides, "paddings": paddings, "dilations": dilations, "groups": int(groups),
                            "output_padding": extra, "output_size": [], "padding_algorithm": algorithm,
                            "data_format": "NCHW"})
    if bias is not None:
        check_variable(bias, "bias", fn)
        out = _layers.elementwise_add(out, bias, axis=1)
    return _layers.transpose(out, [0, 2, 3, 1]) if channel_last else out


def _triple(value, what, fn):
    values = [value] * 3 if isinstance(value, numbers.Integral) else list(value)
    if len(values) != 3 or not all(isinstance(v, numbers.Integral) and v >= 1 for v in values):
        raise ValueError(f"{fn}: {what} must be a positive int or three of them, got {value!r}")
    return [int(v) for v in values]


def conv3d_padding(padding, channel_last, fn="conv3d"):
    """(paddings, padding_algorithm) from Paddle's 3-D padding forms: an int, [d, h, w],
    [front, back, top, bottom, left, right], per-dimension pairs, or 'same' / 'valid'."""
    if isinstance(padding, str):
        algorithm = padding.upper()
        if algorithm not in ("SAME", "VALID"):
            raise ValueError(f"{fn}: unknown padding {padding!r}; it can only be 'SAME' or 'VALID'")
        return [0, 0, 0], algorithm
    if isinstance(padding, numbers.Integral):
        pads = [int(padding)] * 3
    elif len(padding) == 5 and all(isinstance(p, (list, tuple)) for p in padding):
        spatial = padding[1:4] if channel_last else padding[2:]
        other = [padding[0], padding[4]] if channel_last else padding[:2]
        if any(list(p) != [0, 0] for p in other):
            raise ValueError(f"{fn}: non-zero padding {padding} in the batch or channel dimensions")
        pads = [int(v) for pair in spatial for v in pair]
    elif len(padding) in (3, 6) and all(isinstance(p, numbers.Integral) for p in padding):
        pads = [int(p) for p in padding]
    else:
        raise ValueError(f"{fn}: invalid padding {padding!r}")
    if min(pads) < 0:
        raise ValueError(f"{fn}: padding must be >= 0, got {padding!r}")
    return pads, "EXPLICIT"


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCDHW", name=None):
    """x [N, C, D, H, W] (or NDHWC) with weight [O, C/groups, KD, KH, KW]; bias [O] or None: one
    `conv3d` op (fluid/ops/conv3d_ops.py), the bias added along the channels."""
    fn = "conv3d"
    check_variable(x, "x", fn)
    check_variable(weight, "weight", fn)
    if data_format not in ("NCDHW", "NDHWC"):
        raise ValueError(f"{fn}: data_format must be 'NCDHW' or 'NDHWC', got {data_format!r}")
    if len(x.shape) != 5 or len(weight.shape) != 5:
        raise ValueError(f"{fn}: x {x.name}{list(x.shape)} and weight {weight.name}{list(weight.shape)} must be 5-D")
    if not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"{fn}: groups must be a positive int, got {groups!r}")
    channel_last = data_format == "NDHWC"
    paddings, algorithm = conv3d_padding(padding, channel_last)
    if channel_last:
        x = _layers.transpose(x, [0, 4, 1, 2, 3])
    helper = LayerHelper(fn, name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type=fn, inputs={"Input": [x], "Filter": [weight]}, outputs={"Output": [out]},
                     attrs={"strides": _triple(stride, "stride", fn), "paddings": paddings,
                            "dilations": _triple(dilation, "dilation", fn), "groups": int(groups),
                            "padding_algorithm": algorithm, "data_format": "NCDHW"})
    if bias is not None:
        check_variable(bias, "bias", fn)
        out = _layers.elementwise_add(out, bias, axis=1)
    return _layers.transpose(out, [0, 2, 3, 4, 1]) if channel_last else out

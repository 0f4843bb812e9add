"""paddle.nn.functional.max_pool2d / avg_pool2d in static mode: one `pool2d` op
(fluid/ops/pool_ops.py); max_pool1d is max_pool2d over a height of 1, as Paddle builds it. Arguments as Paddle's: `kernel_size`, `stride` an int or a pair
(stride None is the kernel size), `padding` as conv2d's (an int, a pair, four ints,
'SAME' / 'VALID'), `data_format` 'NCHW' or 'NHWC' (transposed around the op)."""
from __future__ import annotations

import numbers

from psjob.fluid import layers as _layers
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_variable
from psjob.nn.functional.conv import _triple, conv3d_padding, conv_padding

__all__ = ["max_pool1d", "max_pool2d", "avg_pool2d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "max_pool3d", "avg_pool3d"]


def _pair(value, what, fn):
    values = [value, value] if isinstance(value, numbers.Integral) else list(value)
    if len(values) != 2 or not all(isinstance(v, numbers.Integral) and v >= 1 for v in values):
        raise ValueError(f"{fn}: {what} must be a positive int or a pair of them, got {value!r}")
    return [int(v) for v in values]


def _pool2d(x, kind, kernel_size, stride, padding, ceil_mode, exclusive, data_format, name):
    fn = f"{kind}_pool2d"
    check_variable(x, "x", fn)
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"{fn}: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if len(x.shape) != 4:
        raise ValueError(f"{fn}: x {x.name}{list(x.shape)} must be 4-D")
    ksize = _pair(kernel_size, "kernel_size", fn)
    strides = ksize if stride is None else _pair(stride, "stride", fn)
    channel_last = data_format == "NHWC"
    paddings, algorithm = conv_padding(padding, channel_last)
    if channel_last:
        x = _layers.transpose(x, [0, 3, 1, 2])
    helper = LayerHelper("pool2d", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="pool2d", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"pooling_type": kind, "ksize": ksize, "strides": strides, "paddings": paddings,
                            "padding_algorithm": algorithm, "global_pooling": False,
                            "ceil_mode": bool(ceil_mode), "exclusive": bool(exclusive), "data_format": "NCHW"})
    return _layers.transpose(out, [0, 2, 3, 1]) if channel_last else out


def max_pool2d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCHW",
               name=None):
    if return_mask:
        raise ValueError("max_pool2d: return_mask=True is not supported by psjob")
    return _pool2d(x, "max", kernel_size, stride, padding, ceil_mode, True, data_format, name)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCHW", name=None):
    if divisor_override is not None:
        raise ValueError("avg_pool2d: divisor_override is not supported by psjob")
    return _pool2d(x, "avg", kernel_size, stride, padding, ceil_mode, exclusive, data_format, name)


def _one(value, what):
    values = [value] if isinstance(value, numbers.Integral) else list(value)
    if len(values) != 1:
        raise ValueError(f"max_pool1d: {what} must be an int or a list of one, got {value!r}")
    return [1, values[0]]


def _padding_1d(padding):
    """conv1d's padding forms (an int, [p], [left, right], 'SAME'/'VALID') as max_pool2d's,
    the unit height padded by nothing."""
    if isinstance(padding, str):
        return padding
    pads = [padding] if isinstance(padding, numbers.Integral) else list(padding)
    if len(pads) == 1:
        return [0, pads[0]]
    if len(pads) == 2:
        return [0, 0, pads[0], pads[1]]
    raise ValueError(f"max_pool1d: padding must be an int, [p], [left, right], 'SAME' or 'VALID', got {padding!r}")


def max_pool1d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCL",
               name=None):
    """x [N, C, L] (or NLC): the maximum of each window along L, its gradient to the window's
    first maximum as Paddle's (textcnn's padded positions tie)."""
    check_variable(x, "x", "max_pool1d")
    if data_format not in ("NCL", "NLC"):
        raise ValueError(f"max_pool1d: data_format must be 'NCL' or 'NLC', got {data_format!r}")
    if len(x.shape) != 3:
        raise ValueError(f"max_pool1d: x {x.name}{list(x.shape)} must be 3-D")
    unit = 1 if data_format == "NLC" else 2
    out = max_pool2d(_layers.unsqueeze(x, [unit]), _one(kernel_size, "kernel_size"),
                     None if stride is None else _one(stride, "stride"), _padding_1d(padding), return_mask,
                     ceil_mode, "NHWC" if data_format == "NLC" else "NCHW", name)
    return _layers.squeeze(out, [unit])


def avg_pool1d(x, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None):
    """x [N, C, L]: the average of each window along L (avg_pool2d over a height of 1, as Paddle)."""
    check_variable(x, "x", "avg_pool1d")
    if len(x.shape) != 3:
        raise ValueError(f"avg_pool1d: x {x.name}{list(x.shape)} must be 3-D [N, C, L]")
    out = avg_pool2d(_layers.unsqueeze(x, [2]), _one(kernel_size, "kernel_size"),
                     None if stride is None else _one(stride, "stride"), _padding_1d(padding), ceil_mode,
                     exclusive, None, "NCHW", name)
    return _layers.squeeze(out, [2])


def _adaptive(x, kind, output_size, fn, name):
    helper = LayerHelper("pool2d", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="pool2d", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"pooling_type": kind, "ksize": output_size, "adaptive": True, "strides": [1, 1],
                            "paddings": [0, 0], "global_pooling": False, "exclusive": True,
                            "data_format": "NCHW"})
    return out


def _output_size(value, x, dims, fn):
    values = [value] * dims if isinstance(value, numbers.Integral) or value is None else list(value)
    spatial = list(x.shape[-dims:])
    values = [spatial[i] if v is None else v for i, v in enumerate(values)]
    if len(values) != dims or not all(isinstance(v, numbers.Integral) and v >= 1 for v in values):
        raise ValueError(f"{fn}: output_size must be a positive int or {dims} of them, got {value!r}")
    return [int(v) for v in values]


def adaptive_avg_pool2d(x, output_size, data_format="NCHW", name=None):
    """x [N, C, H, W]: output (i, j) averages rows [floor(i * H / oh), ceil((i + 1) * H / oh)) and
    likewise columns (Paddle's adaptive pool2d)."""
    fn = "adaptive_avg_pool2d"
    check_variable(x, "x", fn)
    if len(x.shape) != 4 or data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"{fn}: x {x.name}{list(x.shape)} must be 4-D, data_format 'NCHW' or 'NHWC'")
    if data_format == "NHWC":
        x = _layers.transpose(x, [0, 3, 1, 2])
    out = _adaptive(x, "avg", _output_size(output_size, x, 2, fn), fn, name)
    return _layers.transpose(out, [0, 2, 3, 1]) if data_format == "NHWC" else out


def _adaptive_1d(x, kind, output_size, fn, name):
    check_variable(x, "x", fn)
    if len(x.shape) != 3:
        raise ValueError(f"{fn}: x {x.name}{list(x.shape)} must be 3-D [N, C, L]")
    size = _output_size(output_size, x, 1, fn)
    return _layers.squeeze(_adaptive(_layers.unsqueeze(x, [2]), kind, [1] + size, fn, name), [2])


def adaptive_avg_pool1d(x, output_size, name=None):
    """x [N, C, L]: output i averages [floor(i * L / out), ceil((i + 1) * L / out))."""
    return _adaptive_1d(x, "avg", output_size, "adaptive_avg_pool1d", name)


def adaptive_max_pool1d(x, output_size, return_mask=False, name=None):
    """x [N, C, L]: output i is the maximum of [floor(i * L / out), ceil((i + 1) * L / out))."""
    if return_mask:
        raise ValueError("adaptive_max_pool1d: return_mask=True is not supported by psjob")
    return _adaptive_1d(x, "max", output_size, "adaptive_max_pool1d", name)


def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    """x [N, C, H, W]: the maximum of each adaptive window."""
    fn = "adaptive_max_pool2d"
    check_variable(x, "x", fn)
    if return_mask:
        raise ValueError(f"{fn}: return_mask=True is not supported by psjob")
    if len(x.shape) != 4:
        raise ValueError(f"{fn}: x {x.name}{list(x.shape)} must be 4-D")
    return _adaptive(x, "max", _output_size(output_size, x, 2, fn), fn, name)


def _pool3d(x, kind, kernel_size, stride, padding, ceil_mode, exclusive, data_format, name):
    """One `pool3d` op (fluid/ops/conv3d_ops.py) over x [N, C, D, H, W] (or NDHWC)."""
    fn = f"{kind}_pool3d"
    check_variable(x, "x", fn)
    if data_format not in ("NCDHW", "NDHWC"):
        raise ValueError(f"{fn}: data_format must be 'NCDHW' or 'NDHWC', got {data_format!r}")
    if len(x.shape) != 5:
        raise ValueError(f"{fn}: x {x.name}{list(x.shape)} must be 5-D")
    ksize = _triple(kernel_size, "kernel_size", fn)
    strides = ksize if stride is None else _triple(stride, "stride", fn)
    channel_last = data_format == "NDHWC"
    paddings, algorithm = conv3d_padding(padding, channel_last, fn)
    if channel_last:
        x = _layers.transpose(x, [0, 4, 1, 2, 3])
    helper = LayerHelper("pool3d", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="pool3d", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"pooling_type": kind, "ksize": ksize, "strides": strides, "paddings": paddings,
                            "padding_algorithm": algorithm, "global_pooling": False, "adaptive": False,
                            "ceil_mode": bool(ceil_mode), "exclusive": bool(exclusive), "data_format": "NCDHW"})
    return _layers.transpose(out, [0, 2, 3, 4, 1]) if channel_last else out


def max_pool3d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCDHW",
               name=None):
    """The maximum of each window (stride None: the kernel size); its gradient to the window's
    first maximum, as Paddle's."""
    if return_mask:
        raise ValueError("max_pool3d: return_mask=True is not supported by psjob")
    return _pool3d(x, "max", kernel_size, stride, padding, ceil_mode, True, data_format, name)


def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCDHW", name=None):
    """The average of each window (exclusive: over its unpadded elements only)."""
    if divisor_override is not None:
        raise ValueError("avg_pool3d: divisor_override is not supported by psjob")
    return _pool3d(x, "avg", kernel_size, stride, padding, ceil_mode, exclusive, data_format, name)

"""paddle.nn.functional: pad, bilinear, unfold, batch_norm, dropout2d, interpolate
(nearest, bilinear) (Paddle 2.x
API docs, paddle.nn.functional.*), each built from ops with registered gradients."""
from __future__ import annotations

import numbers

import numpy as np

from psjob import tensor as _t
from psjob.fluid import layers as _layers
from psjob.fluid.framework import Variable
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_int_list, check_variable

__all__ = ["pad", "bilinear", "unfold", "batch_norm", "dropout2d", "interpolate", "upsample", "alpha_dropout",
           "group_norm", "instance_norm"]


def pad(x, pad, mode="constant", value=0.0, data_format="NCHW", name=None):  # noqa: A002 (Paddle's names)
    """As Paddle's F.pad: pad holding a (before, after) pair for every dimension of x in order
    (mode 'constant'), Paddle's `pad` op; otherwise x is 3-, 4- or 5-D and pad holds pairs for
    its spatial dimensions from the last one back ([left, right, top, bottom, front, back]),
    Paddle's `pad3d` op over x unsqueezed to 5-D, in mode 'constant', 'reflect', 'replicate'
    or 'circular'."""
    check_variable(x, "x", "pad")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    pads = check_int_list(pad, "pad", "pad")
    nd = len(x.shape)
    if mode == "constant" and len(pads) == 2 * nd:
        return _layers.pad(x, pads, float(value), name)
    if nd not in (3, 4, 5) or len(pads) != 2 * (nd - 2):
        raise ValueError(f"pad: pad {pads} must hold 2 values per dimension of {x.name}{list(x.shape)} (mode "
                         f"'constant'), or 2 per spatial dimension of a 3-, 4- or 5-D x")
    if data_format not in ("NCL", "NLC", "NCHW", "NHWC", "NCDHW", "NDHWC"):
        raise ValueError(f"pad: unknown data_format {data_format!r}")
    # Only where the channels are matters, as in Paddle (a 3-D x with the default 'NCHW' is NCL).
    channel_last = data_format in ("NLC", "NHWC", "NDHWC")
    unsqueezed = {3: [1, 2] if channel_last else [2, 3], 4: [1] if channel_last else [2], 5: []}[nd]
    pads = pads + [0] * (6 - len(pads))
    if unsqueezed:
        x = _layers.unsqueeze(x, unsqueezed)
    helper = LayerHelper("pad3d", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="pad3d", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"paddings": pads, "mode": mode, "value": float(value),
                            "data_format": "NDHWC" if channel_last else "NCDHW"})
    return _layers.squeeze(out, unsqueezed) if unsqueezed else out


def bilinear(x1, x2, weight, bias=None, name=None):
    """out[n, o] = x1[n] @ weight[o] @ x2[n] + bias[o]; weight [out, in1, in2], bias [1, out]."""
    for arg, v in (("x1", x1), ("x2", x2), ("weight", weight)):
        check_variable(v, arg, "bilinear")
    out_f, in1, in2 = (int(d) for d in weight.shape)
    if x1.shape[-1] not in (in1, -1) or x2.shape[-1] not in (in2, -1):
        raise ValueError(f"bilinear: x1 {list(x1.shape)} and x2 {list(x2.shape)} must end in {in1} and {in2} "
                         f"(weight {list(weight.shape)})")
    w = _layers.reshape(_layers.transpose(weight, [1, 0, 2]), [in1, out_f * in2])
    left = _layers.reshape(_layers.matmul(x1, w), [-1, out_f, in2])
    out = _layers.reduce_sum(_layers.elementwise_mul(left, _layers.unsqueeze(x2, [1])), dim=2)
    if bias is None:
        return out
    return _layers.elementwise_add(out, _layers.reshape(bias, [-1]))


def _four(value, what, fn):
    values = [value] * 2 if isinstance(value, numbers.Integral) else list(value)
    if len(values) not in (2, 4) or not all(isinstance(v, numbers.Integral) for v in values):
        raise ValueError(f"{fn}: {what} must be an int or a list of 2 (or for paddings 4), got {value!r}")
    return [int(v) for v in values]


def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """im2col: x [N, C, H, W] to [N, C * kh * kw, L], column l holding the window at output position
    l (row-major), its rows ordered (channel, kernel row, kernel column) as Paddle's unfold."""
    fn = "unfold"
    check_variable(x, "x", fn)
    if len(x.shape) != 4 or any(d < 0 for d in x.shape[1:]):
        raise ValueError(f"{fn}: x {x.name}{list(x.shape)} must be 4-D [N, C, H, W] with C, H, W known")
    kh, kw = _four(kernel_sizes, "kernel_sizes", fn)[:2]
    sh, sw = _four(strides, "strides", fn)[:2]
    dh, dw = _four(dilations, "dilations", fn)[:2]
    p = _four(paddings, "paddings", fn)
    top, left, bottom, right = (p[0], p[1], p[0], p[1]) if len(p) == 2 else p
    c, h, w = (int(d) for d in x.shape[1:])
    if top or bottom or left or right:
        x = _layers.pad(x, [0, 0, 0, 0, top, bottom, left, right])
        h, w = h + top + bottom, w + left + right
    oh, ow = (h - (dh * (kh - 1) + 1)) // sh + 1, (w - (dw * (kw - 1) + 1)) // sw + 1
    if oh < 1 or ow < 1:
        raise ValueError(f"{fn}: the kernel {[kh, kw]} (dilations {[dh, dw]}) does not fit x {list(x.shape)}")
    cols = []
    for i in range(kh):
        for j in range(kw):
            cols.append(x[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw])
    stacked = _t.stack(cols, axis=2)  # [N, C, kh * kw, oh, ow]
    return _layers.reshape(stacked, [-1, c * kh * kw, oh * ow])


def batch_norm(x, running_mean, running_var, weight, bias, training=False, momentum=0.9, epsilon=1e-05,
               data_format="NCHW", use_global_stats=None, name=None):
    """Paddle's batch_norm op over given statistics and affine parameters: batch statistics while
    training (the running ones updated with momentum), the running ones otherwise."""
    for arg, v in (("x", x), ("running_mean", running_mean), ("running_var", running_var)):
        check_variable(v, arg, "batch_norm")
    layout = "NHWC" if data_format in ("NHWC", "NLC", "NDHWC") else "NCHW"
    helper = LayerHelper("batch_norm", name)
    dtype = x.dtype
    saved_mean = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    saved_var = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    out = helper.create_variable_for_type_inference(dtype)
    global_stats = (not training) if use_global_stats is None else bool(use_global_stats)
    helper.append_op(
        type="batch_norm",
        inputs={"X": [x], "Scale": [weight], "Bias": [bias], "Mean": [running_mean], "Variance": [running_var]},
        outputs={"Y": [out], "MeanOut": [running_mean], "VarianceOut": [running_var],
                 "SavedMean": [saved_mean], "SavedVariance": [saved_var]},
        attrs={"momentum": float(momentum), "epsilon": float(epsilon), "is_test": not training,
               "data_layout": layout, "use_global_stats": global_stats})
    return out


def dropout2d(x, p=0.5, training=True, data_format="NCHW", name=None):
    """Zero whole channels of x [N, C, H, W] with probability p while training, the rest scaled
    by 1 / (1 - p); x itself when not training."""
    check_variable(x, "x", "dropout2d")
    if len(x.shape) != 4:
        raise ValueError(f"dropout2d: x {x.name}{list(x.shape)} must be 4-D")
    if not 0 <= float(p) <= 1:
        raise ValueError(f"dropout2d: p must lie in [0, 1], got {p}")
    if not training or float(p) == 0:
        return x
    if float(p) == 1:
        return _t.zeros_like(x)
    # Paddle's dropout op over ones shaped like the per-(sample, channel) mean: a [N, C, 1, 1]
    # (or [N, 1, 1, C]) mask already scaled by 1 / (1 - p), for a batch size known only at run time.
    axes = [1, 2] if data_format == "NHWC" else [2, 3]
    ones = _t.ones_like(_layers.reduce_mean(x, dim=axes, keep_dim=True))
    ones.stop_gradient = True
    mask = _layers.dropout(ones, float(p), dropout_implementation="upscale_in_train")
    return _layers.elementwise_mul(x, mask)


def _size_inputs(size, fn):
    """size's runtime inputs, as Paddle builds them: a Variable is OutSize; a list holding
    Variables is SizeTensor (ints become one-element int32 constants; the attributes keep the
    ints and -1 for the Variables)."""
    if isinstance(size, Variable):
        if size.dtype not in ("int32", "int64"):
            raise TypeError(f"{fn}: a size tensor must be int32 or int64, got {size.name} of {size.dtype}")
        size.stop_gradient = True
        return {"OutSize": [size]}, [-1, -1]
    if not isinstance(size, (list, tuple)) or len(size) != 2:
        raise ValueError(f"{fn}: size must hold two entries [out_h, out_w], got {size!r}")
    if not any(isinstance(d, Variable) for d in size):
        sizes = check_int_list(list(size), "size", fn)
        if min(sizes) < 1:
            raise ValueError(f"{fn}: size must hold two positive ints [out_h, out_w], got {size!r}")
        return {}, sizes
    tensors, attrs = [], []
    for i, d in enumerate(size):
        if isinstance(d, Variable):
            if d.dtype not in ("int32", "int64"):
                raise TypeError(f"{fn}: size[{i}] must be an int32/int64 tensor, got {d.name} of {d.dtype}")
            d.stop_gradient = True
            tensors.append(d)
            attrs.append(-1)
        else:
            v = check_int_list([d], f"size[{i}]", fn)[0]
            if v < 1:
                raise ValueError(f"{fn}: size[{i}] must be positive, got {d!r}")
            tensors.append(_layers.fill_constant([1], "int32", v, force_cpu=True))
            attrs.append(v)
    return {"SizeTensor": tensors}, attrs


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                data_format="NCHW", name=None):
    """Resize the H, W of a 4-D x by `size` ([out_h, out_w] of ints or one-element int tensors, or
    an int tensor [2]) or `scale_factor` (a number, a pair, or a float tensor of one or two):
    Paddle's nearest_interp_v2 / bilinear_interp_v2 ops, with OutSize / SizeTensor / Scale
    inputs for the tensors. Other modes are refused."""
    fn = "interpolate"
    check_variable(x, "x", fn)
    mode = str(mode).lower()
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"{fn}: mode {mode!r} is not supported by psjob (only 'nearest' and 'bilinear')")
    if len(x.shape) != 4 or data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"{fn}: x {x.name}{list(x.shape)} must be 4-D, data_format 'NCHW' or 'NHWC'")
    if mode == "nearest" and align_corners:
        raise ValueError(f"{fn}: align_corners is only valid for 'bilinear' mode (as Paddle)")
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{fn}: give exactly one of size and scale_factor")
    attrs = {"out_d": -1, "out_h": -1, "out_w": -1, "scale": [], "interp_method": mode,
             "align_corners": bool(align_corners), "align_mode": int(align_mode), "data_layout": "NCHW"}
    inputs = {}
    if size is not None:
        inputs, (attrs["out_h"], attrs["out_w"]) = _size_inputs(size, fn)
    elif isinstance(scale_factor, Variable):
        if scale_factor.dtype not in ("float32", "float64"):
            raise TypeError(f"{fn}: a scale_factor tensor must be float32/float64, got {scale_factor.dtype}")
        scale_factor.stop_gradient = True
        inputs = {"Scale": [scale_factor]}
    else:
        scales = [scale_factor] * 2 if isinstance(scale_factor, numbers.Real) else list(scale_factor)
        if len(scales) != 2 or min(float(s) for s in scales) <= 0:
            raise ValueError(f"{fn}: scale_factor must be a positive number or two of them, got {scale_factor!r}")
        attrs["scale"] = [float(s) for s in scales]
    if data_format == "NHWC":
        x = _layers.transpose(x, [0, 3, 1, 2])
    helper = LayerHelper(f"{mode}_interp_v2", name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type=f"{mode}_interp_v2", inputs=dict(X=[x], **inputs), outputs={"Out": [out]}, attrs=attrs)
    return _layers.transpose(out, [0, 2, 3, 1]) if data_format == "NHWC" else out


upsample = interpolate


def alpha_dropout(x, p=0.5, training=True, name=None):
    """SELU-preserving dropout (Klambauer et al.): dropped elements set to -alpha * scale, then
    a * y + b keeps the mean and variance, as Paddle's alpha_dropout; x itself when not training."""
    check_variable(x, "x", "alpha_dropout")
    if not 0 <= float(p) <= 1:
        raise ValueError(f"alpha_dropout: p must lie in [0, 1], got {p}")
    if not training or float(p) == 0:
        return x
    alpha_p = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
    p = float(p)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    ones = _t.ones_like(x)
    ones.stop_gradient = True
    keep = _layers.dropout(ones, p, dropout_implementation="downgrade_in_infer")  # 1 kept, 0 dropped
    y = _t.add(_t.multiply(x, keep), _t.scale(keep, -alpha_p, bias=alpha_p))
    return _t.scale(y, a, bias=b)


def group_norm(x, num_groups, epsilon=1e-05, weight=None, bias=None, data_format="NCHW", name=None):
    """x [N, C, ...]: each sample's num_groups runs of channels normalized over their elements,
    then weight [C] and bias [C] per channel (built from reductions, with gradients)."""
    check_variable(x, "x", "group_norm")
    if data_format not in ("NCHW", "NCL", "NC", "NCDHW"):
        raise ValueError(f"group_norm: only channel-first data_format is supported, got {data_format!r}")
    shape = list(x.shape)
    if len(shape) < 2 or any(d < 0 for d in shape[1:]) or shape[1] % int(num_groups):
        raise ValueError(f"group_norm: {x.name}{shape} needs known dimensions after the batch and channels "
                         f"divisible by num_groups {num_groups}")
    g = _layers.reshape(x, [-1, int(num_groups), int(np.prod(shape[1:])) // int(num_groups)])
    centered = _t.subtract(g, _layers.reduce_mean(g, dim=[2], keep_dim=True))
    var = _layers.reduce_mean(_t.square(centered), dim=[2], keep_dim=True)
    normed = _layers.reshape(_t.divide(centered, _t.sqrt(_t.scale(var, 1.0, bias=float(epsilon)))), [-1] + shape[1:])
    if weight is not None:
        normed = _layers.elementwise_mul(normed, weight, axis=1)
    if bias is not None:
        normed = _layers.elementwise_add(normed, bias, axis=1)
    return normed


def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.9, eps=1e-05, data_format="NCHW", name=None):
    """Each channel of each sample normalized over its elements, then weight and bias per channel
    (group_norm with one group per channel). As Paddle's static instance_norm op, which has no
    running statistics: running_mean, running_var, use_input_stats and momentum are accepted and
    have no effect (the statistics are always the input's), and weight and bias apply only when
    both are given."""
    check_variable(x, "x", "instance_norm")
    if data_format not in ("NCHW", "NCL", "NCDHW"):
        raise ValueError(f"instance_norm: only channel-first data_format is supported, got {data_format!r}")
    if len(x.shape) < 3 or x.shape[1] < 1:
        raise ValueError(f"instance_norm: x {x.name}{list(x.shape)} must be [N, C, ...] with C known")
    if weight is None or bias is None:  # Paddle's `if weight and bias`: one alone is dropped
        weight = bias = None
    return group_norm(x, int(x.shape[1]), eps, weight, bias, "NCHW")

"""`nearest_interp_v2` and `bilinear_interp_v2`: resizing NCHW inputs, as Paddle 2.x's ops behind
paddle.nn.functional.interpolate / paddle.nn.Upsample, with their gradients; `nearest_interp` and
`bilinear_interp` are Fluid 1.8's (fluid.layers.resize_nearest / resize_bilinear / image_resize):
`scale` one number, and the ratio always from the sizes.

Attributes as Paddle's: `out_h`, `out_w` (or `scale` [sh, sw], output = floor(in * scale)),
`align_corners`, `align_mode` (bilinear: 0 maps output i to input (i + 0.5) * ratio - 0.5, 1 to
i * ratio), `data_layout` 'NCHW'. Ratio = in / out (1 / scale when a scale is given); with
align_corners, (in - 1) / (out - 1) and nearest rounds. Each output axis is a linear map of the
input axis: a [out, in] matrix of interpolation weights, so Out = A_h X A_w^T and the gradient
is A_h^T dOut A_w.

The v2 ops also take the size at run time, in Paddle's order of precedence: `SizeTensor` (one
one-element int tensor per output dimension; the ratio then comes from the sizes), else the
`Scale` tensor ([1] or [2] floats, replacing the attribute; output = int(in * scale)), then
`OutSize` (an int tensor [out_h, out_w]) overriding the size a scale gave (the ratio stays
1 / scale).
"""
from __future__ import annotations

import math

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import in_var, register_op, set_out, simple_grad


def _out_size(attrs, in_hw):
    out = [int(attrs.get("out_h", -1)), int(attrs.get("out_w", -1))]
    raw = attrs.get("scale")
    scale = [float(raw)] if isinstance(raw, (int, float)) else [float(s) for s in (raw or [])]
    if len(scale) == 1:
        scale = scale * 2
    if scale and min(scale) > 0:
        out = [int(math.floor(d * s)) if d >= 0 else -1 for d, s in zip(in_hw, scale)]
    return out, scale


def _interp_shape(op):
    x = in_var(op, "X")
    if len(x.shape) != 4:
        raise GraphError(f"{op.type}: X {x.name}{list(x.shape)} must be 4-D (NCHW)")
    if op.attr("data_layout", "NCHW") != "NCHW":
        raise GraphError(f"{op.type}: only data_layout 'NCHW' is supported (the layer transposes NHWC)")
    out, _ = _out_size(op.attrs, x.shape[2:])
    if op.input("SizeTensor"):
        out = [int(op.attr("out_h", -1)), int(op.attr("out_w", -1))]
    elif op.input("OutSize") or op.input("Scale"):
        out = [-1, -1]
    elif any(d == 0 or d < -1 for d in out) or (all(d < 0 for d in out) and not _out_size(op.attrs, [1, 1])[1]):
        raise GraphError(f"{op.type}: give out_h/out_w or a positive scale (got {out})")
    set_out(op, "Out", list(x.shape[:2]) + out, x.dtype)


def _matrix(kind, n_in, n_out, scale, align_corners, align_mode):
    """[n_out, n_in] interpolation weights along one axis."""
    if align_corners:
        ratio = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale > 0 else n_in / n_out
    a = np.zeros((n_out, n_in))
    i = np.arange(n_out)
    if kind == "nearest":
        src = (ratio * i + 0.5).astype(np.int64) if align_corners else (ratio * i).astype(np.int64)
        a[i, np.minimum(src, n_in - 1)] = 1.0
        return a
    half_pixel = align_mode == 0 and not align_corners
    src = (i + 0.5) * ratio - 0.5 if half_pixel else i * ratio
    src = np.maximum(src, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = src - lo
    np.add.at(a, (i, lo), 1.0 - frac)
    np.add.at(a, (i, hi), frac)
    return a


def _host(ctx, arr):
    return np.asarray(arr if ctx.xp is np else ctx.xp.asnumpy(arr)).reshape(-1)


def _runtime_size(ctx, x, out, scale):
    """The v2 op's (output size, scale) with its SizeTensor / Scale / OutSize inputs applied."""
    if ctx.has_input("SizeTensor"):
        return [int(_host(ctx, t)[0]) for t in ctx.input_list("SizeTensor")], []
    if ctx.has_input("Scale"):
        scale = [float(v) for v in _host(ctx, ctx.input("Scale"))]
        scale = (scale * 2)[:2] if len(scale) == 1 else scale[:2]
        if len(scale) != 2 or min(scale) <= 0:
            raise ValueError(f"{ctx.op_type}: the Scale tensor must hold one or two positive numbers, got {scale}")
        out = [int(d * s) for d, s in zip(x.shape[2:], scale)]
    if ctx.has_input("OutSize"):
        size = _host(ctx, ctx.input("OutSize"))
        if size.size != 2:
            raise ValueError(f"{ctx.op_type}: the OutSize tensor must hold [out_h, out_w], got {size.tolist()}")
        out = [int(v) for v in size]
    return out, scale


def _matrices(ctx, x):
    kind = "nearest" if ctx.op_type.startswith("nearest") else "bilinear"
    out, scale = _out_size(ctx.attrs, x.shape[2:])
    if "_v2" in ctx.op_type:
        out, scale = _runtime_size(ctx, x, out, scale)
        if min(out) < 1:
            raise ValueError(f"{ctx.op_type}: the output size must be positive, got {out}")
    # v1 (Fluid 1.8) takes the ratio from the sizes even when a scale set them; v2 from 1 / scale.
    scale = scale if scale and "_v2" in ctx.op_type else [0.0, 0.0]
    align, mode = bool(ctx.attr("align_corners", False)), int(ctx.attr("align_mode", 1))
    mats = [_matrix(kind, x.shape[2 + k], out[k], scale[k], align, mode) for k in range(2)]
    return [m.astype(x.dtype) if ctx.xp is np else ctx.xp.asarray(m, dtype=x.dtype) for m in mats]


def _register(op_type):
    def kernel(ctx):
        x = ctx.input("X")
        a_h, a_w = _matrices(ctx, x)
        ctx.set_output("Out", ctx.xp.einsum("ph,nchw,qw->ncpq", a_h, x, a_w))

    def grad_kernel(ctx):
        x, dout = ctx.input("X"), ctx.input("Out@GRAD")
        a_h, a_w = _matrices(ctx, x)
        ctx.set_output("X@GRAD", ctx.xp.einsum("ph,ncpq,qw->nchw", a_h, dout, a_w))

    sizes = ("OutSize", "SizeTensor", "Scale")
    register_op(op_type, infer_shape=_interp_shape, no_grad_inputs=sizes,
                grad=simple_grad(op_type + "_grad", inputs=("X",) + sizes, grad_of=("X",)))(kernel)
    register_op(op_type + "_grad")(grad_kernel)


_register("nearest_interp_v2")
_register("bilinear_interp_v2")
_register("nearest_interp")  # Fluid 1.8's resize_nearest / image_resize
_register("bilinear_interp")  # Fluid 1.8's resize_bilinear

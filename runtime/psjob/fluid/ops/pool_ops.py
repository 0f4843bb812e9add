"""`pool2d`: max or average pooling over the last two dimensions of an NCHW input
(Paddle's pool2d op, behind paddle.nn.functional.max_pool2d / avg_pool2d).

Attributes as Paddle's: `pooling_type` 'max' or 'avg', `ksize`, `strides`, `paddings`
([h, w] or [top, bottom, left, right]), `padding_algorithm` 'EXPLICIT', 'VALID' (no
padding) or 'SAME' (out = ceil(in / stride), the padding split with the odd one after),
`global_pooling`, `adaptive` (ksize is the output size; output i pools input
[floor(i * in / out), ceil((i + 1) * in / out))), `exclusive` (an average over the window's unpadded elements only; otherwise over the window
clipped to the padded input, as Paddle 3.0, or the whole window, as Fluid 1.8, whose layers set
psjob's `fluid1_inclusive_count`),
`ceil_mode`. Padded elements never win a max. As Paddle's max-pool gradient, the whole
gradient of a window goes to its first maximum (row-major order).
"""
from __future__ import annotations

import math

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import in_var, register_op, set_out, simple_grad


def _geometry(in_hw, attrs):
    """(ksize, strides, [top, bottom, left, right], out_hw) for input spatial dims in_hw."""
    if attrs.get("global_pooling", False):
        return list(in_hw), [1, 1], [0, 0, 0, 0], [1, 1]
    if attrs.get("adaptive", False):
        out_hw = [int(k) for k in attrs["ksize"]]
        return out_hw, [1, 1], [0, 0, 0, 0], out_hw
    ksize, strides = [int(k) for k in attrs["ksize"]], [int(s) for s in attrs.get("strides", [1, 1])]
    algorithm = attrs.get("padding_algorithm", "EXPLICIT")
    pads = [int(p) for p in attrs.get("paddings", [0, 0])]
    if algorithm == "VALID":
        pads = [0, 0, 0, 0]
    elif algorithm == "SAME":
        pads = []
        for size, k, s in zip(in_hw, ksize, strides):
            total = max((math.ceil(size / s) - 1) * s + k - size, 0) if size >= 0 else 0
            pads += [total // 2, total - total // 2]
    elif len(pads) == 2:
        pads = [pads[0], pads[0], pads[1], pads[1]]
    ceil = attrs.get("ceil_mode", False)
    out = []
    for i, (size, k, s) in enumerate(zip(in_hw, ksize, strides)):
        if size < 0:
            out.append(-1)
            continue
        span = size + pads[2 * i] + pads[2 * i + 1] - k
        out.append((span + s - 1) // s + 1 if ceil else span // s + 1)
    return ksize, strides, pads, out


def _pool_shape(op):
    x = in_var(op, "X")
    if len(x.shape) != 4:
        raise GraphError(f"pool2d: X {x.name}{list(x.shape)} must be 4-D (NCHW)")
    if op.attr("pooling_type", "max") not in ("max", "avg"):
        raise GraphError(f"pool2d: pooling_type must be 'max' or 'avg', got {op.attr('pooling_type')!r}")
    _, _, _, out = _geometry(x.shape[2:], op.attrs)
    if any(d == 0 or d < -1 for d in out):
        raise GraphError(f"pool2d: window {op.attr('ksize')} leaves no output for X {x.name}{list(x.shape)}")
    set_out(op, "Out", list(x.shape[:2]) + out, x.dtype)


def _windows(x, attrs):
    """Yield (i, j, h0, h1, w0, w1): output position and its window clipped to x."""
    ksize, strides, pads, out = _geometry(x.shape[2:], attrs)
    height, width = x.shape[2:]
    fluid1 = bool(attrs.get("fluid1_inclusive_count", False))
    if attrs.get("adaptive", False):
        yield from _adaptive_windows(height, width, out)
        return
    for i in range(out[0]):
        h0 = i * strides[0] - pads[0]
        for j in range(out[1]):
            w0 = j * strides[1] - pads[2]
            # The inclusive count: Paddle 3.0's is the window clipped to the padded input (ceil_mode's
            # last window can run past it); Fluid 1.8's layers (psjob's `fluid1_inclusive_count`
            # attribute) count the whole window.
            full = ksize[0] * ksize[1] if fluid1 else \
                (min(h0 + ksize[0], height + pads[1]) - h0) * (min(w0 + ksize[1], width + pads[3]) - w0)
            yield (i, j, max(h0, 0), min(h0 + ksize[0], height), max(w0, 0), min(w0 + ksize[1], width), full)


def _adaptive_windows(height, width, out):
    """Paddle's adaptive pooling: output i covers [floor(i * in / out), ceil((i + 1) * in / out))."""
    for i in range(out[0]):
        h0, h1 = (i * height) // out[0], -((-(i + 1) * height) // out[0])
        for j in range(out[1]):
            w0, w1 = (j * width) // out[1], -((-(j + 1) * width) // out[1])
            yield i, j, h0, h1, w0, w1, (h1 - h0) * (w1 - w0)


@register_op("pool2d", infer_shape=_pool_shape, grad=simple_grad("pool2d_grad", keep_outputs=True))
def pool2d(ctx):
    xp, x = ctx.xp, ctx.input("X")
    _, _, _, out_hw = _geometry(x.shape[2:], ctx.attrs)
    out = xp.empty(x.shape[:2] + tuple(out_hw), dtype=x.dtype)
    is_max, exclusive = ctx.attr("pooling_type", "max") == "max", ctx.attr("exclusive", True)
    for i, j, h0, h1, w0, w1, full in _windows(x, ctx.attrs):
        window = x[:, :, h0:h1, w0:w1]
        if is_max:
            out[:, :, i, j] = window.max(axis=(2, 3))
        else:
            count = (h1 - h0) * (w1 - w0) if exclusive else full
            out[:, :, i, j] = window.sum(axis=(2, 3)) / count
    ctx.set_output("Out", out)


@register_op("pool2d_grad")
def pool2d_grad(ctx):
    xp, x, dout = ctx.xp, ctx.input("X"), ctx.input("Out@GRAD")
    dx = xp.zeros_like(x)
    is_max, exclusive = ctx.attr("pooling_type", "max") == "max", ctx.attr("exclusive", True)
    n, c = x.shape[:2]
    for i, j, h0, h1, w0, w1, full in _windows(x, ctx.attrs):
        g = dout[:, :, i, j]
        if is_max:
            window = x[:, :, h0:h1, w0:w1].reshape(n, c, -1)
            first = window.argmax(axis=2)  # the first maximum, as Paddle's loop finds it
            rows, cols = divmod(first, w1 - w0)
            nn, cc = xp.meshgrid(xp.arange(n), xp.arange(c), indexing="ij")
            xp.add.at(dx, (nn, cc, h0 + rows, w0 + cols), g)
        else:
            count = (h1 - h0) * (w1 - w0) if exclusive else full
            dx[:, :, h0:h1, w0:w1] += (g / count)[:, :, None, None]
    ctx.set_output("X@GRAD", dx)
